//! Percentile-bootstrap confidence interval of a ratio of medians.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Beta, Distribution, Uniform};

use super::quantile::quantile_sorted;
use super::{Rounds, StatsError};

/// A closed interval `[low, high]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

impl Interval {
    /// Whether `low ≤ x ≤ high`. Cost: O(1).
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }

    /// `high − low`. Cost: O(1).
    pub fn width(&self) -> f64 {
        self.high - self.low
    }
}

/// Point estimate matching [`ratio_of_medians_ci`]: `median(cand) / median(base)` of the
/// pooled values (numpy medians). Greater than 1 means the candidate is slower.
/// Cost: O(1).
pub fn ratio_of_medians(base: &Rounds, cand: &Rounds) -> f64 {
    cand.pooled().median() / base.pooled().median()
}

/// Percentile-bootstrap confidence interval of `median(cand) / median(base)`.
///
/// Method: `resamples` times, draw a bootstrap median of the baseline and, independently,
/// one of the candidate, and keep their ratio; the interval ends are the `(1 − confidence)/2`
/// and `(1 + confidence)/2` quantiles of those ratios (numpy's `"linear"` quantile). All
/// randomness comes from one `ChaCha8Rng` seeded with `seed`, so the same inputs and seed
/// always give the same interval.
///
/// A bootstrap median of one side is drawn in one of two ways:
/// * **One round** — an ordinary bootstrap of its values, done exactly but in O(1): with the
///   n values sorted as x, a resample's k-th smallest value is `x[⌊n·U₍ₖ₎⌋]`, where
///   `U₍ₖ₎ ~ Beta(k, n − k + 1)` is the k-th order statistic of n iid uniforms (index
///   clamped to n − 1). Odd n needs k = (n + 1)/2. Even n needs k = n/2 and k + 1, with
///   `U₍ₖ₊₁₎ = U₍ₖ₎ + (1 − U₍ₖ₎)·B`, `B ~ Beta(1, n − k)` (the least of the n − k uniforms
///   above `U₍ₖ₎`), and the median is their mean, like `numpy.median`. This has the same
///   distribution as resampling n values with replacement and taking their median.
///   Cost: O(1) per resample (2 or 4 Beta draws per pair of sides).
/// * **Several rounds** — hierarchical: draw as many rounds as there are, with replacement;
///   from each drawn round draw as many values as it has, with replacement; pool them and
///   take the numpy median (mean of the two middle values for an even count). This keeps
///   the round-to-round variance in the interval. The values are ranked once up front, so
///   a resample is a histogram over the N sorted positions and its median one cumulative
///   scan. Cost: O(N) per resample for N values in total (O(N log N) once to rank).
///
/// Total cost: O(B · (N_base + N_cand)) for multi-round sides or O(B) for single-round
/// sides, plus O(B log B) to sort the B ratios; O(B + N) memory.
///
/// Errors (checked before any work): [`StatsError::NoResamples`] when `resamples == 0`,
/// [`StatsError::InvalidConfidence`] when `confidence` is not strictly inside (0, 1)
/// (NaN included). Never panics for valid [`Rounds`].
///
/// Ratios are plain IEEE divisions: if a bootstrap median of the baseline can be 0 (data
/// that are not all positive), ratios can be ±∞ or NaN; NaNs are sorted last, so the ends
/// may then be infinite or NaN. Timings are positive, where this cannot happen.
pub fn ratio_of_medians_ci(
    base: &Rounds,
    cand: &Rounds,
    resamples: u32,
    confidence: f64,
    seed: u64,
) -> Result<Interval, StatsError> {
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(StatsError::InvalidConfidence { confidence });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut base_side = MedianSampler::new(base);
    let mut cand_side = MedianSampler::new(cand);
    let mut ratios: Vec<f64> = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        let mb = base_side.draw(&mut rng);
        let mc = cand_side.draw(&mut rng);
        ratios.push(mc / mb);
    }
    ratios.sort_unstable_by(|a, b| a.is_nan().cmp(&b.is_nan()).then(a.total_cmp(b)));
    Ok(Interval {
        low: quantile_sorted(&ratios, (1.0 - confidence) / 2.0),
        high: quantile_sorted(&ratios, (1.0 + confidence) / 2.0),
    })
}

/// Draws bootstrap medians of one side.
enum MedianSampler<'a> {
    Single(OrderStatistic<'a>),
    Multi(Hierarchical<'a>),
}

impl<'a> MedianSampler<'a> {
    fn new(side: &'a Rounds) -> MedianSampler<'a> {
        if side.round_count() == 1 {
            MedianSampler::Single(OrderStatistic::new(side.pooled().sorted()))
        } else {
            MedianSampler::Multi(Hierarchical::new(side))
        }
    }

    fn draw(&mut self, rng: &mut ChaCha8Rng) -> f64 {
        match self {
            MedianSampler::Single(s) => s.draw(rng),
            MedianSampler::Multi(m) => m.draw(rng),
        }
    }
}

/// Median of an ordinary bootstrap resample via Beta-distributed uniform order statistics.
struct OrderStatistic<'a> {
    sorted: &'a [f64],
    /// Law of U₍ₖ₎ (k = lower middle rank, 1-based).
    lower: Beta<f64>,
    /// For even n: law of the gap fraction B with U₍ₖ₊₁₎ = U₍ₖ₎ + (1 − U₍ₖ₎)·B.
    gap: Option<Beta<f64>>,
}

fn beta(a: usize, b: usize) -> Beta<f64> {
    // Both shapes are ≥ 1 by construction, the only failure mode of `Beta::new` is a
    // non-positive shape.
    Beta::new(a as f64, b as f64).expect("Beta shapes are >= 1")
}

impl<'a> OrderStatistic<'a> {
    fn new(sorted: &'a [f64]) -> OrderStatistic<'a> {
        let n = sorted.len(); // ≥ 2 (a Sample)
        if n % 2 == 1 {
            let k = n.div_ceil(2);
            OrderStatistic {
                sorted,
                lower: beta(k, n - k + 1),
                gap: None,
            }
        } else {
            let k = n / 2;
            OrderStatistic {
                sorted,
                lower: beta(k, n - k + 1),
                gap: Some(beta(1, n - k)),
            }
        }
    }

    /// The resample value at uniform position `u`: `x[min(⌊n·u⌋, n − 1)]`.
    fn at(&self, u: f64) -> f64 {
        let n = self.sorted.len();
        // `as` saturates (and maps NaN to 0), so this is always in range.
        let i = ((n as f64) * u) as usize;
        self.sorted[i.min(n - 1)]
    }

    fn draw(&self, rng: &mut ChaCha8Rng) -> f64 {
        let u = self.lower.sample(rng);
        let a = self.at(u);
        match &self.gap {
            None => a,
            Some(gap) => {
                let u_next = u + (1.0 - u) * gap.sample(rng);
                (a + self.at(u_next)) / 2.0
            }
        }
    }
}

/// Median of a two-level (rounds, then values) bootstrap resample.
///
/// Every value is replaced by its position in the sorted pooled values, so a resample is
/// just a histogram over those N positions and its median is found by one cumulative scan
/// — O(N) with no float comparisons, instead of a selection over the drawn values.
struct Hierarchical<'a> {
    /// The pooled values of all rounds, ascending.
    sorted: &'a [f64],
    /// Per round, the position in `sorted` of each of its values.
    ranks: Vec<Vec<usize>>,
    /// Uniform over round indices.
    pick_round: Uniform<usize>,
    /// Per round, uniform over its value indices.
    pick_value: Vec<Uniform<usize>>,
    /// How often each sorted position was drawn in the current resample.
    counts: Vec<u32>,
}

/// Uniform over `0..n`; `n ≥ 1` here (rounds and their values are never empty).
fn uniform_below(n: usize) -> Uniform<usize> {
    Uniform::new(0, n).expect("non-empty range")
}

impl<'a> Hierarchical<'a> {
    fn new(side: &'a Rounds) -> Hierarchical<'a> {
        let rounds = side.rounds();
        let pooled = side.pooled().values(); // rounds concatenated in order
        let mut order: Vec<usize> = (0..pooled.len()).collect();
        order.sort_unstable_by(|&a, &b| pooled[a].total_cmp(&pooled[b]));
        let mut position = vec![0usize; pooled.len()];
        for (pos, &i) in order.iter().enumerate() {
            position[i] = pos;
        }
        let mut start = 0;
        let ranks = rounds
            .iter()
            .map(|r| {
                let ranks = position[start..start + r.len()].to_vec();
                start += r.len();
                ranks
            })
            .collect();
        Hierarchical {
            sorted: side.pooled().sorted(),
            ranks,
            pick_round: uniform_below(rounds.len()),
            pick_value: rounds.iter().map(|r| uniform_below(r.len())).collect(),
            counts: vec![0; pooled.len()],
        }
    }

    fn draw(&mut self, rng: &mut ChaCha8Rng) -> f64 {
        self.counts.fill(0);
        let mut total = 0usize;
        for _ in 0..self.ranks.len() {
            let j = self.pick_round.sample(rng);
            let (ranks, pick) = (&self.ranks[j], &self.pick_value[j]);
            for _ in 0..ranks.len() {
                self.counts[ranks[pick.sample(rng)]] += 1;
            }
            total += ranks.len();
        }
        // 0-based order statistics of the resample that numpy.median averages.
        let (lo, hi) = ((total - 1) / 2, total / 2);
        let mut lo_value = None;
        let mut seen = 0usize;
        for (pos, &c) in self.counts.iter().enumerate() {
            seen += c as usize;
            if lo_value.is_none() && seen > lo {
                lo_value = Some(self.sorted[pos]);
            }
            if seen > hi {
                let hi_value = self.sorted[pos];
                return match lo_value {
                    Some(l) if lo != hi => (l + hi_value) / 2.0,
                    _ => hi_value,
                };
            }
        }
        // Unreachable: the counts sum to `total > hi`.
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use rand::RngExt;

    use super::*;
    use crate::stats::Sample;

    /// numpy median of an unsorted, non-empty slice by selection (reference for the tests).
    fn median_in_place(v: &mut [f64]) -> f64 {
        let n = v.len();
        let (left, &mut upper, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
        if n % 2 == 1 {
            upper
        } else {
            let lower = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (lower + upper) / 2.0
        }
    }

    fn single(v: Vec<f64>) -> Rounds {
        Rounds::single(Sample::new(v).unwrap())
    }

    /// Deterministic, roughly normal data around `center` with relative spread `rel`.
    fn data(n: usize, center: f64, rel: f64, salt: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(salt);
        (0..n)
            .map(|_| {
                let s: f64 = (0..12).map(|_| rng.random::<f64>()).sum::<f64>() - 6.0;
                center * (1.0 + rel * s)
            })
            .collect()
    }

    #[test]
    fn median_in_place_matches_sorted_median() {
        let mut v = vec![5.0, 1.0, 4.0, 2.0];
        assert_eq!(median_in_place(&mut v), 3.0);
        let mut v = vec![5.0, 1.0, 4.0, 2.0, 100.0];
        assert_eq!(median_in_place(&mut v), 4.0);
        let mut v = vec![3.0];
        assert_eq!(median_in_place(&mut v), 3.0);
    }

    #[test]
    fn rejects_bad_parameters() {
        let a = single(vec![1.0, 2.0, 3.0]);
        assert_eq!(
            ratio_of_medians_ci(&a, &a, 0, 0.95, 1),
            Err(StatsError::NoResamples)
        );
        for c in [0.0, 1.0, -0.5, 1.5] {
            assert_eq!(
                ratio_of_medians_ci(&a, &a, 100, c, 1),
                Err(StatsError::InvalidConfidence { confidence: c })
            );
        }
        assert!(matches!(
            ratio_of_medians_ci(&a, &a, 100, f64::NAN, 1),
            Err(StatsError::InvalidConfidence { .. })
        ));
    }

    #[test]
    fn same_seed_same_interval_different_seed_different() {
        let base = single(data(501, 10.0, 0.05, 1));
        let cand = Rounds::new(vec![
            data(30, 10.2, 0.05, 2),
            data(30, 10.4, 0.05, 3),
            data(31, 10.1, 0.05, 4),
        ])
        .unwrap();
        let a = ratio_of_medians_ci(&base, &cand, 2000, 0.95, 42).unwrap();
        let b = ratio_of_medians_ci(&base, &cand, 2000, 0.95, 42).unwrap();
        let c = ratio_of_medians_ci(&base, &cand, 2000, 0.95, 43).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.low < a.high);
    }

    #[test]
    fn interval_contains_point_estimate_and_tracks_confidence() {
        for (nb, nc, shift) in [(400, 401, 1.0), (1000, 600, 1.05), (51, 64, 0.9)] {
            let base = single(data(nb, 9.0, 0.02, nb as u64));
            let cand = single(data(nc, 9.0 * shift, 0.02, nc as u64 + 7));
            let est = ratio_of_medians(&base, &cand);
            let ci95 = ratio_of_medians_ci(&base, &cand, 4000, 0.95, 7).unwrap();
            let ci50 = ratio_of_medians_ci(&base, &cand, 4000, 0.50, 7).unwrap();
            assert!(ci95.contains(est), "{ci95:?} vs {est}");
            assert!(ci95.low < ci50.low && ci50.high < ci95.high);
            // A 2% spread over hundreds of values: the interval is well under 2% wide.
            assert!(ci95.width() < 0.02 * est, "{ci95:?}");
            assert!((est - shift).abs() < 0.01, "{est}");
        }
    }

    #[test]
    fn single_round_shortcut_matches_direct_resampling_in_distribution() {
        // Compare the exact O(1) draw with a naive resample + median on a small, lumpy
        // sample where the two distributions of the bootstrap median are easy to tell apart
        // if the Beta parameters or index mapping were off by one.
        for x in [
            vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0],
            vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0],
        ] {
            let n = x.len();
            let draws = 200_000;
            let os = OrderStatistic::new(&x);
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            let mut fast = std::collections::BTreeMap::<u64, usize>::new();
            for _ in 0..draws {
                *fast.entry(os.draw(&mut rng).to_bits()).or_default() += 1;
            }
            let mut slow = std::collections::BTreeMap::<u64, usize>::new();
            let mut buf = vec![0.0; n];
            for _ in 0..draws {
                for b in buf.iter_mut() {
                    *b = x[rng.random_range(0..n)];
                }
                *slow.entry(median_in_place(&mut buf).to_bits()).or_default() += 1;
            }
            let keys: std::collections::BTreeSet<u64> =
                fast.keys().chain(slow.keys()).copied().collect();
            for k in keys {
                let pf = *fast.get(&k).unwrap_or(&0) as f64 / draws as f64;
                let ps = *slow.get(&k).unwrap_or(&0) as f64 / draws as f64;
                // Binomial sd at 200k draws is ≤ 0.0012; allow ~5 sd of the difference.
                assert!(
                    (pf - ps).abs() < 0.008,
                    "n={n} value={} fast={pf} slow={ps}",
                    f64::from_bits(k)
                );
            }
        }
    }

    #[test]
    fn hierarchical_draw_matches_naive_two_level_resampling_in_distribution() {
        // Uneven rounds, ties across rounds, odd and even resample totals.
        let rounds = vec![
            vec![1.0, 2.0, 2.0],
            vec![4.0],
            vec![2.0, 8.0, 16.0, 3.0],
            vec![5.0, 1.0],
        ];
        let side = Rounds::new(rounds.clone()).unwrap();
        let mut fast_sampler = Hierarchical::new(&side);
        let draws = 200_000;
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut fast = std::collections::BTreeMap::<u64, usize>::new();
        for _ in 0..draws {
            *fast
                .entry(fast_sampler.draw(&mut rng).to_bits())
                .or_default() += 1;
        }
        let mut slow = std::collections::BTreeMap::<u64, usize>::new();
        let mut pooled = Vec::new();
        for _ in 0..draws {
            pooled.clear();
            for _ in 0..rounds.len() {
                let round = &rounds[rng.random_range(0..rounds.len())];
                for _ in 0..round.len() {
                    pooled.push(round[rng.random_range(0..round.len())]);
                }
            }
            *slow
                .entry(median_in_place(&mut pooled).to_bits())
                .or_default() += 1;
        }
        let keys: std::collections::BTreeSet<u64> =
            fast.keys().chain(slow.keys()).copied().collect();
        assert!(
            keys.len() > 10,
            "too few distinct medians to be a useful check"
        );
        for k in keys {
            let pf = *fast.get(&k).unwrap_or(&0) as f64 / draws as f64;
            let ps = *slow.get(&k).unwrap_or(&0) as f64 / draws as f64;
            assert!(
                (pf - ps).abs() < 0.008,
                "value={} fast={pf} slow={ps}",
                f64::from_bits(k)
            );
        }
    }

    #[test]
    fn single_round_interval_matches_exact_bootstrap_distribution() {
        use statrs::distribution::{Binomial, DiscreteCDF};
        // cand = 1, 2, …, n (odd n), base constant: the ratio is the candidate's bootstrap
        // median, whose exact law is P(median ≤ j) = P(Bin(n, j/n) ≥ (n + 1)/2). The
        // interval ends must sit at that law's 2.5 % and 97.5 % quantiles, up to the
        // Monte-Carlo noise of 20,000 resamples (≈ 0.3 of a unit here).
        let n = 1001usize;
        let cand = single((1..=n).map(|j| j as f64).collect());
        let base = single(vec![1.0, 1.0]);
        let k = n.div_ceil(2);
        let cdf = |j: usize| {
            Binomial::new(j as f64 / n as f64, n as u64)
                .unwrap()
                .sf(k as u64 - 1)
        };
        let quantile = |q: f64| (1..=n).find(|&j| cdf(j) >= q).unwrap() as f64;
        let (want_low, want_high) = (quantile(0.025), quantile(0.975));
        // About ±2 sd of the median's position (sd ≈ √n / 2 ≈ 16) around 501.
        assert!((465.0..480.0).contains(&want_low), "{want_low}");
        assert!((522.0..537.0).contains(&want_high), "{want_high}");
        for seed in [1, 2, 3] {
            let ci = ratio_of_medians_ci(&base, &cand, 20_000, 0.95, seed).unwrap();
            assert!(
                (ci.low - want_low).abs() <= 1.5,
                "seed {seed}: {ci:?} vs {want_low}"
            );
            assert!(
                (ci.high - want_high).abs() <= 1.5,
                "seed {seed}: {ci:?} vs {want_high}"
            );
        }
    }

    #[test]
    fn hierarchical_interval_is_wider_than_pooled_when_rounds_drift() {
        // Rounds with strong round-to-round drift: treating the pooled values as one round
        // ignores that drift and gives a much narrower interval.
        let drifts = [0.97, 1.03, 0.98, 1.02, 1.0, 0.96, 1.04, 0.99];
        let rounds: Vec<Vec<f64>> = drifts
            .iter()
            .enumerate()
            .map(|(i, d)| data(40, 10.0 * d, 0.002, 100 + i as u64))
            .collect();
        let hier = Rounds::new(rounds.clone()).unwrap();
        let flat = single(rounds.concat());
        let base = single(data(320, 10.0, 0.002, 99));
        let h = ratio_of_medians_ci(&base, &hier, 3000, 0.95, 11).unwrap();
        let f = ratio_of_medians_ci(&base, &flat, 3000, 0.95, 11).unwrap();
        assert!(h.width() > 2.0 * f.width(), "hier {h:?} flat {f:?}");
    }
}
