//! Percentile bootstraps of a ratio of medians.
//!
//! * [`ratio_of_medians_bootstrap`] — the user's "bootstrap CIs": `median(cand) /
//!   median(base)` of two sets of i.i.d. values (or of rounds, hierarchically), each side
//!   resampled independently, optionally widened by a between-process spread. The gate
//!   decides on it for sample files without rounds.
//! * [`pooled_p50_pairs_bootstrap`] — the p50 of all values of the resampled A/B pairs,
//!   candidate over base: pairs (both rounds of a pair together) are the resampled units.
//!   Shown beside the paired test's interval for 16 or more pairs; it decides nothing (at
//!   8–10 pairs a bootstrap under-covers).
//!
//! Both return a [`RatioDistribution`]: the sorted resampled ratios, whose quantiles
//! (numpy's `"linear"` method) are the interval ends and one-sided bounds.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Beta, Distribution, Normal, Uniform};

use super::quantile::quantile_sorted;
use super::{Rounds, StatsError};

/// The resampled ratios of a bootstrap, ascending (NaNs, which only non-positive data can
/// produce, last).
#[derive(Clone, Debug, PartialEq)]
pub struct RatioDistribution {
    sorted: Vec<f64>,
}

impl RatioDistribution {
    /// Sorts `ratios` into a distribution. `None` when there are none.
    /// Cost: O(B log B).
    pub fn from_ratios(mut ratios: Vec<f64>) -> Option<RatioDistribution> {
        if ratios.is_empty() {
            return None;
        }
        ratios.sort_unstable_by(|a, b| a.is_nan().cmp(&b.is_nan()).then(a.total_cmp(b)));
        Some(RatioDistribution { sorted: ratios })
    }

    /// The resampled ratios, ascending. Cost: O(1).
    #[cfg(test)]
    pub(crate) fn ratios(&self) -> &[f64] {
        &self.sorted
    }

    /// The `q`-quantile of the resampled ratios (numpy `quantile`, method `"linear"`).
    /// Cost: O(1).
    pub fn quantile(&self, q: f64) -> f64 {
        quantile_sorted(&self.sorted, q)
    }

    /// The two-sided percentile interval at `confidence`: the `(1 − c)/2` and `(1 + c)/2`
    /// quantiles. Cost: O(1).
    pub fn interval(&self, confidence: f64) -> Interval {
        Interval {
            low: self.quantile((1.0 - confidence) / 2.0),
            high: self.quantile((1.0 + confidence) / 2.0),
        }
    }

    /// The one-sided lower bound at level `1 − a`: the `a`-quantile. Cost: O(1).
    pub fn lower_bound(&self, a: f64) -> f64 {
        self.quantile(a)
    }

    /// The one-sided upper bound at level `1 − a`: the `(1 − a)`-quantile. Cost: O(1).
    pub fn upper_bound(&self, a: f64) -> f64 {
        self.quantile(1.0 - a)
    }

    /// The share of resampled ratios at most `x`: the bootstrap p-value of "ratio > x".
    /// Cost: O(log B).
    pub(crate) fn share_at_most(&self, x: f64) -> f64 {
        self.sorted.partition_point(|r| *r <= x) as f64 / self.sorted.len() as f64
    }

    /// The share of resampled ratios at least `x`: the bootstrap p-value of "ratio < x".
    /// Cost: O(log B).
    pub(crate) fn share_at_least(&self, x: f64) -> f64 {
        let below = self.sorted.partition_point(|r| *r < x);
        let nan = self.sorted.iter().rev().take_while(|r| r.is_nan()).count();
        (self.sorted.len() - below - nan) as f64 / self.sorted.len() as f64
    }

    /// A robust standard deviation of the log ratios: half the distance between their
    /// 15.87% and 84.13% quantiles (one normal sd each way). Cost: O(1).
    pub(crate) fn log_sd(&self) -> f64 {
        (self.quantile(0.841_344_746).ln() - self.quantile(0.158_655_254).ln()) / 2.0
    }
}

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
    #[cfg(test)]
    pub(crate) fn width(&self) -> f64 {
        self.high - self.low
    }
}

/// Point estimate matching [`ratio_of_medians_ci`]: `median(cand) / median(base)` of the
/// pooled values (numpy medians). Greater than 1 means the candidate is slower.
/// Cost: O(1).
pub fn ratio_of_medians(base: &Rounds, cand: &Rounds) -> f64 {
    cand.pooled().median() / base.pooled().median()
}

/// Percentile-bootstrap confidence interval of `median(cand) / median(base)`:
/// [`ratio_of_medians_bootstrap`] without a process spread, its two-sided interval.
/// Same errors and cost.
pub fn ratio_of_medians_ci(
    base: &Rounds,
    cand: &Rounds,
    resamples: u32,
    confidence: f64,
    seed: u64,
) -> Result<Interval, StatsError> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(StatsError::InvalidConfidence { confidence });
    }
    Ok(ratio_of_medians_bootstrap(base, cand, resamples, seed, 0.0)?.interval(confidence))
}

/// Percentile bootstrap of `median(cand) / median(base)`.
///
/// Method: `resamples` times, draw a bootstrap median of the baseline and, independently,
/// one of the candidate, and keep their ratio; where `process_log_sd > 0` (the two sides
/// were measured in different processes), the ratio is also multiplied by
/// `exp(process_log_sd · Z)`, Z standard normal: the bootstrap distribution convolved with
/// the between-process spread of the log ratio (`σ_P·√2` for one process a side), which no
/// resampling of values inside one process can show. All randomness comes from one
/// `ChaCha8Rng` seeded with `seed`, so the same inputs and seed always give the same
/// distribution (and without a spread the same draws as before it existed).
///
/// A bootstrap median of one side is drawn in one of two ways:
/// * **One round** (i.i.d. values) — an ordinary bootstrap of its values, done exactly but
///   in O(1): with the n values sorted as x, a resample's k-th smallest value is
///   `x[⌊n·U₍ₖ₎⌋]`, where `U₍ₖ₎ ~ Beta(k, n − k + 1)` is the k-th order statistic of n iid
///   uniforms (index clamped to n − 1). Odd n needs k = (n + 1)/2. Even n needs k = n/2 and
///   k + 1, with `U₍ₖ₊₁₎ = U₍ₖ₎ + (1 − U₍ₖ₎)·B`, `B ~ Beta(1, n − k)` (the least of the
///   n − k uniforms above `U₍ₖ₎`), and the median is their mean, like `numpy.median`. This
///   has the same distribution as resampling n values with replacement and taking their
///   median. Cost: O(1) per resample (2 or 4 Beta draws per pair of sides).
/// * **Several rounds** — hierarchical: draw as many rounds as there are, with replacement;
///   from each drawn round draw as many values as it has, with replacement; pool them and
///   take the numpy median (mean of the two middle values for an even count). This keeps
///   the round-to-round variance in the interval. The values are ranked once up front, so
///   a resample is a histogram over the N sorted positions and its median one cumulative
///   scan. Cost: O(N) per resample for N values in total (O(N log N) once to rank).
///
/// Total cost: O(B · (N_base + N_cand)) for multi-round sides or O(B) for single-round
/// sides (10,000 resamples of two files of a million values: well under a second, most of it
/// the two sorts), plus O(B log B) to sort the B ratios; O(B + N) memory.
///
/// Errors (checked before any work): [`StatsError::NoResamples`] when `resamples == 0`.
/// Never panics for valid [`Rounds`]; a negative or NaN `process_log_sd` counts as 0.
///
/// Ratios are plain IEEE divisions: if a bootstrap median of the baseline can be 0 (data
/// that are not all positive), ratios can be ±∞ or NaN; NaNs are sorted last, so the ends
/// may then be infinite or NaN. Timings are positive, where this cannot happen.
pub fn ratio_of_medians_bootstrap(
    base: &Rounds,
    cand: &Rounds,
    resamples: u32,
    seed: u64,
    process_log_sd: f64,
) -> Result<RatioDistribution, StatsError> {
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut base_side = MedianSampler::new(base);
    let mut cand_side = MedianSampler::new(cand);
    let spread = (process_log_sd > 0.0).then_some(process_log_sd);
    let normal = Normal::new(0.0, 1.0).expect("a unit normal law");
    let mut ratios: Vec<f64> = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        let mb = base_side.draw(&mut rng);
        let mc = cand_side.draw(&mut rng);
        let shift = spread.map_or(1.0, |sd| (sd * normal.sample(&mut rng)).exp());
        ratios.push(mc / mb * shift);
    }
    RatioDistribution::from_ratios(ratios).ok_or(StatsError::NoResamples)
}

/// Most elementary steps (values scanned or compared) [`pooled_p50_pairs_bootstrap`] spends:
/// it uses fewer resamples where the data would cost more, keeping any input under a second.
pub(crate) const PAIRS_BOOTSTRAP_BUDGET: f64 = 5e7;

/// Fewest resamples [`pooled_p50_pairs_bootstrap`] computes an interval from; below this (a
/// very large input) it gives none.
pub(crate) const PAIRS_BOOTSTRAP_MIN_RESAMPLES: u32 = 1000;

/// The pooled p50 ratio of one resample of pairs: `numpy.median` of all values of the
/// candidate rounds of the pairs listed in `pairs` (with repetition), over the same of the
/// base rounds. Indices out of range are skipped; `None` when none is in range or the sides
/// are not paired. Cost: O(N log N) (it ranks the values; the bootstrap ranks them once).
pub fn pooled_p50_ratio_of_pairs(base: &Rounds, cand: &Rounds, pairs: &[usize]) -> Option<f64> {
    if base.round_count() != cand.round_count() {
        return None;
    }
    let (b, c) = (Pooled::new(base), Pooled::new(cand));
    let mut counts = vec![0u32; base.round_count()];
    let mut any = false;
    for &i in pairs {
        if let Some(x) = counts.get_mut(i) {
            *x += 1;
            any = true;
        }
    }
    any.then(|| c.median(&counts) / b.median(&counts))
}

/// Pairs-resampled percentile bootstrap of the pooled p50 ratio of A/B rounds.
///
/// Method: a resample draws as many pairs as there are, with replacement (uniform pair
/// indices from one `ChaCha8Rng` seeded with `seed`); its ratio is
/// [`pooled_p50_ratio_of_pairs`] of those pairs: the numpy median of every value of the
/// drawn candidate rounds (a round drawn twice counts twice) over the same of the base
/// rounds. Pairs are the resampled units because the two rounds of a pair share a clock
/// state and a drift; values inside a round are not resampled (they are not independent).
///
/// Cost: the values are ranked once (O(N log N)); a resample costs O(n) to draw n pair
/// indices plus, per side, the cheaper of a scan of its N sorted values and a selection by
/// binary search over them (O(log N · r · log(N/r)) for the r distinct rounds drawn). The
/// number of resamples is `resamples`, reduced so that the total stays within
/// [`PAIRS_BOOTSTRAP_BUDGET`] steps; `Ok(None)` when fewer than
/// [`PAIRS_BOOTSTRAP_MIN_RESAMPLES`] would fit (only for very large inputs).
///
/// Errors: [`StatsError::NoResamples`] for `resamples == 0`, [`StatsError::Unpaired`] when
/// the sides have different round counts.
pub(crate) fn pooled_p50_pairs_bootstrap(
    base: &Rounds,
    cand: &Rounds,
    resamples: u32,
    seed: u64,
) -> Result<Option<RatioDistribution>, StatsError> {
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    let n = base.round_count();
    if n != cand.round_count() {
        return Err(StatsError::Unpaired {
            base: n,
            cand: cand.round_count(),
        });
    }
    let per_resample = n as f64 + median_cost(base) + median_cost(cand);
    let affordable = (PAIRS_BOOTSTRAP_BUDGET / per_resample).floor();
    let b_eff = f64::from(resamples).min(affordable) as u32;
    if b_eff < PAIRS_BOOTSTRAP_MIN_RESAMPLES.min(resamples) {
        return Ok(None);
    }
    let (b, c) = (Pooled::new(base), Pooled::new(cand));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pick = uniform_below(n);
    let mut counts = vec![0u32; n];
    let mut ratios = Vec::with_capacity(b_eff as usize);
    for _ in 0..b_eff {
        counts.fill(0);
        for _ in 0..n {
            counts[pick.sample(&mut rng)] += 1;
        }
        ratios.push(c.median(&counts) / b.median(&counts));
    }
    Ok(RatioDistribution::from_ratios(ratios))
}

/// Steps of one median of a weighted union of `r` rounds of `n` values in all by binary
/// search: two order statistics, each ⌈log₂ n⌉ probes of r binary searches.
fn search_cost(n: f64, r: f64) -> f64 {
    2.0 * n.log2().max(1.0) * r * (n / r).log2().max(1.0)
}

/// Steps of one median of a side by the cheaper method (a scan of its N sorted values, or the
/// binary-search selection).
fn median_cost(side: &Rounds) -> f64 {
    let n = side.pooled().len() as f64;
    n.min(search_cost(n, side.round_count() as f64))
}

/// One side's values for medians of weighted unions of its rounds.
struct Pooled<'a> {
    /// All values, ascending.
    sorted: &'a [f64],
    /// The round of each value of `sorted`.
    round_of: Vec<usize>,
    /// Each round's values, ascending.
    rounds: Vec<Vec<f64>>,
}

impl<'a> Pooled<'a> {
    fn new(side: &'a Rounds) -> Pooled<'a> {
        let mut tagged: Vec<(f64, usize)> = side
            .rounds()
            .iter()
            .enumerate()
            .flat_map(|(r, v)| v.iter().map(move |&x| (x, r)))
            .collect();
        tagged.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let rounds = side
            .rounds()
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r.sort_unstable_by(f64::total_cmp);
                r
            })
            .collect();
        Pooled {
            sorted: side.pooled().sorted(),
            round_of: tagged.into_iter().map(|(_, r)| r).collect(),
            rounds,
        }
    }

    /// Steps of one median by the binary-search selection.
    fn search_cost(&self) -> f64 {
        search_cost(self.sorted.len() as f64, self.rounds.len() as f64)
    }

    /// `count` ≤ `x` in the union where round r counts `counts[r]` times.
    fn count_at_most(&self, counts: &[u32], x: f64) -> u64 {
        self.rounds
            .iter()
            .zip(counts)
            .filter(|(_, c)| **c > 0)
            .map(|(r, &c)| u64::from(c) * r.partition_point(|v| *v <= x) as u64)
            .sum()
    }

    /// The numpy median of the union of the rounds, round r taken `counts[r]` times
    /// (at least one count is positive).
    fn median(&self, counts: &[u32]) -> f64 {
        let total: u64 = self
            .rounds
            .iter()
            .zip(counts)
            .map(|(r, &c)| u64::from(c) * r.len() as u64)
            .sum();
        if total == 0 {
            return f64::NAN;
        }
        let (lo, hi) = ((total - 1) / 2, total / 2);
        let (a, b) = if (self.sorted.len() as f64) <= self.search_cost() {
            (self.scan(counts, lo), self.scan(counts, hi))
        } else {
            (self.select(counts, lo), self.select(counts, hi))
        };
        if lo == hi { a } else { (a + b) / 2.0 }
    }

    /// The `k`-th smallest (0-based) of the weighted union, by one cumulative scan.
    fn scan(&self, counts: &[u32], k: u64) -> f64 {
        let mut seen = 0u64;
        for (pos, &r) in self.round_of.iter().enumerate() {
            seen += u64::from(counts[r]);
            if seen > k {
                return self.sorted[pos];
            }
        }
        f64::NAN
    }

    /// The `k`-th smallest (0-based) of the weighted union, by binary search over the sorted
    /// values: the first value with more than k of the union at most it.
    fn select(&self, counts: &[u32], k: u64) -> f64 {
        let pos = self
            .sorted
            .partition_point(|&x| self.count_at_most(counts, x) <= k);
        self.sorted.get(pos).copied().unwrap_or(f64::NAN)
    }
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

    /// numpy median of the concatenation of the listed rounds (reference).
    fn pooled_median(rounds: &[Vec<f64>], pairs: &[usize]) -> f64 {
        let mut all: Vec<f64> = pairs.iter().flat_map(|&i| rounds[i].clone()).collect();
        median_in_place(&mut all)
    }

    #[test]
    fn pooled_ratio_of_pairs_is_the_median_of_the_drawn_rounds_both_ways() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut side = |n: usize| -> Vec<Vec<f64>> {
            (0..n)
                .map(|_| {
                    let len = rng.random_range(1..9usize);
                    // Integers: many ties, within and across rounds.
                    (0..len)
                        .map(|_| rng.random_range(1..20u32) as f64)
                        .collect()
                })
                .collect()
        };
        let (b, c) = (side(17), side(17));
        let (base, cand) = (
            Rounds::new(b.clone()).unwrap(),
            Rounds::new(c.clone()).unwrap(),
        );
        let pb = Pooled::new(&base);
        for trial in 0..300 {
            let pairs: Vec<usize> = (0..17).map(|_| rng.random_range(0..17)).collect();
            let want = pooled_median(&c, &pairs) / pooled_median(&b, &pairs);
            assert_eq!(
                pooled_p50_ratio_of_pairs(&base, &cand, &pairs),
                Some(want),
                "trial {trial}"
            );
            // The scan and the binary-search selection agree on every order statistic.
            let mut counts = vec![0u32; 17];
            for &i in &pairs {
                counts[i] += 1;
            }
            let total: u64 = b
                .iter()
                .zip(&counts)
                .map(|(r, &k)| k as u64 * r.len() as u64)
                .sum();
            for k in [0, total / 3, (total - 1) / 2, total / 2, total - 1] {
                assert_eq!(pb.scan(&counts, k), pb.select(&counts, k), "k {k}");
            }
        }
        assert_eq!(pooled_p50_ratio_of_pairs(&base, &cand, &[99]), None);
        let short = Rounds::new(b[..3].to_vec()).unwrap();
        assert_eq!(pooled_p50_ratio_of_pairs(&short, &cand, &[0]), None);
    }

    #[test]
    fn pairs_bootstrap_is_seeded_and_bounded_in_cost() {
        let rounds = |f: f64, salt: u64| -> Rounds {
            Rounds::new(
                (0..20)
                    .map(|i| data(10, 10.0 * f, 0.01, salt + i))
                    .collect(),
            )
            .unwrap()
        };
        let (base, cand) = (rounds(1.0, 1), rounds(1.03, 100));
        let a = pooled_p50_pairs_bootstrap(&base, &cand, 2000, 9)
            .unwrap()
            .unwrap();
        let b = pooled_p50_pairs_bootstrap(&base, &cand, 2000, 9)
            .unwrap()
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.ratios().len(), 2000);
        let ci = a.interval(0.95);
        let point = cand.pooled().median() / base.pooled().median();
        assert!(
            ci.contains(point) && ci.low > 1.0 && ci.high < 1.06,
            "{ci:?} {point}"
        );
        assert!(a.lower_bound(0.05) >= ci.low && a.upper_bound(0.05) <= ci.high);
        assert_eq!(
            pooled_p50_pairs_bootstrap(&base, &cand, 0, 9),
            Err(StatsError::NoResamples)
        );
        let short = Rounds::new(base.rounds()[..5].to_vec()).unwrap();
        assert!(matches!(
            pooled_p50_pairs_bootstrap(&short, &cand, 100, 9),
            Err(StatsError::Unpaired { .. })
        ));
        // A million single-value pairs would cost too much: no interval, quickly.
        let many: Vec<Vec<f64>> = (0..1_000_000).map(|i| vec![1.0 + (i % 7) as f64]).collect();
        let big = Rounds::new(many).unwrap();
        assert_eq!(pooled_p50_pairs_bootstrap(&big, &big, 10_000, 1), Ok(None));
    }

    #[test]
    fn a_process_spread_widens_the_bootstrap_and_bounds_are_its_quantiles() {
        let base = single(data(400, 9.0, 0.01, 1));
        let cand = single(data(400, 9.2, 0.01, 2));
        let plain = ratio_of_medians_bootstrap(&base, &cand, 4000, 5, 0.0).unwrap();
        let spread = ratio_of_medians_bootstrap(&base, &cand, 4000, 5, 0.01).unwrap();
        // Without a spread, the draws are those of `ratio_of_medians_ci`.
        assert_eq!(
            plain.interval(0.9),
            ratio_of_medians_ci(&base, &cand, 4000, 0.9, 5).unwrap()
        );
        assert!(spread.interval(0.95).width() > 3.0 * plain.interval(0.95).width());
        // The spread term of sd 1% dominates: the robust log sd is close to it.
        assert!(
            (spread.log_sd() - 0.01).abs() < 0.002,
            "{}",
            spread.log_sd()
        );
        let lb = plain.lower_bound(0.05);
        assert_eq!(lb, plain.quantile(0.05));
        // The share at most the lower bound is about 5%.
        assert!((plain.share_at_most(lb) - 0.05).abs() < 0.002);
        assert!((plain.share_at_least(plain.upper_bound(0.05)) - 0.05).abs() < 0.002);
        assert_eq!(plain.share_at_most(0.0), 0.0);
        assert_eq!(plain.share_at_least(0.0), 1.0);
        assert!(RatioDistribution::from_ratios(Vec::new()).is_none());
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
