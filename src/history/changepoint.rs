//! Change points of a p50 series: where the level moved, and by how much.
//!
//! Method: PELT, "Pruned Exact Linear Time" (R. Killick, P. Fearnhead, I. A. Eckley,
//! "Optimal detection of changepoints with a linear computational cost", JASA 107(500),
//! 2012), which finds the segmentation minimising the sum of segment costs plus a penalty
//! per change point exactly, as optimal partitioning (Jackson et al. 2005) does, but prunes
//! candidate split points that can never be optimal again.
//!
//! - Data: the natural log of each run's p50, so a change is a ratio (+3% is the same step
//!   at 10 µs and at 1 ms).
//! - Cost: a change in mean of a normal law with known variance, the log p50 scaled by a
//!   robust noise estimate σ̂: the segment's sum of squared deviations from its mean
//!   divided by σ̂² (twice the negative log-likelihood up to a constant). σ̂ is the median
//!   absolute deviation of the first differences × 1.4826 / √2, which level shifts barely
//!   move (each is one difference out of many), floored at [`Params::min_sigma`].
//! - Penalty: [`Params::penalty_factor`] × ln n per change point, for n runs: 4 ln n, a
//!   step stricter than the modified BIC of Zhang & Siegmund (2007), 3 ln n for a change
//!   in mean (the default penalty of R's `changepoint::cpt.mean`), and BIC's 2 ln n. On
//!   simulated flat series of 60 runs with 1% noise, 3 ln n cut 4% of them and 4 ln n 1%,
//!   while finding a 3% step as often (docs/HISTORY.md has the table).
//! - A level must last [`Params::min_segment`] runs, so one odd run is not a level.
//! - Each level is reported as the median p50 of its runs (an outlier in a segment does not
//!   move it). Change points whose levels differ by less than [`Params::min_effect`] are
//!   dropped, the smallest first, and the levels around them merged: a real but tiny move
//!   is not worth a maintainer's attention, and noise is not reported.
//!
//! Cost: O(n) expected when change points keep coming (PELT's pruning), O(n²) at worst
//! (no change at all: 10 000 flat runs take about 50 ms in a release build); at most
//! [`Params::max_points`] newest runs are analysed.

use std::collections::VecDeque;

/// Parameters of [`detect`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Params {
    /// The penalty per change point is this × ln n.
    pub penalty_factor: f64,
    /// Fewest runs in a level.
    pub min_segment: usize,
    /// Smallest relative move of the level reported (0.01 = 1%).
    pub min_effect: f64,
    /// Smallest noise sd (on the log scale) assumed, so a series of identical values has
    /// a finite cost.
    pub min_sigma: f64,
    /// Most runs analysed (the newest).
    pub max_points: usize,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            penalty_factor: 4.0,
            min_segment: 3,
            min_effect: 0.01,
            min_sigma: 1e-4,
            max_points: 10_000,
        }
    }
}

/// A place where the level of a series moved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ChangePoint {
    /// Index of the first value of the new level.
    pub index: usize,
    /// Median of the level before and of the level from `index` on.
    pub before: f64,
    pub after: f64,
}

/// The median of `values` (NaN-free); 0 when empty.
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Robust noise sd of a series with level shifts: MAD of the first differences, scaled to
/// a normal sd (× 1.4826) and divided by √2 (a difference of two values has twice the
/// variance of one).
pub(crate) fn noise_sd(x: &[f64]) -> f64 {
    let d: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
    if d.is_empty() {
        return 0.0;
    }
    let m = median(&d);
    let abs: Vec<f64> = d.iter().map(|v| (v - m).abs()).collect();
    1.4826 * median(&abs) / std::f64::consts::SQRT_2
}

/// PELT for a change in mean of `z` with unit variance: the starts of the segments after
/// the first (ascending) of the segmentation minimising Σ cost + `penalty` × changes, every
/// segment at least `min_segment` long.
///
/// Pruning with a minimum segment length: a candidate τ beaten at time t (F(τ) + C(τ, t) >
/// F(t)) can never be optimal at any T where t itself may start the last segment, that is
/// T ≥ t + min_segment; it is dropped then, not before.
pub(crate) fn pelt(z: &[f64], penalty: f64, min_segment: usize) -> Vec<usize> {
    let n = z.len();
    let m = min_segment.max(1);
    if n < m {
        return Vec::new();
    }
    let mut s1 = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for (i, &v) in z.iter().enumerate() {
        s1[i + 1] = s1[i] + v;
        s2[i + 1] = s2[i] + v * v;
    }
    let cost = |a: usize, b: usize| {
        let len = (b - a) as f64;
        let s = s1[b] - s1[a];
        ((s2[b] - s2[a]) - s * s / len).max(0.0)
    };
    let mut f = vec![f64::INFINITY; n + 1];
    let mut last = vec![0usize; n + 1];
    f[0] = -penalty;
    let mut candidates: Vec<usize> = Vec::new();
    let mut pending: VecDeque<(usize, Vec<usize>)> = VecDeque::new();
    for t in m..=n {
        while pending.front().is_some_and(|(at, _)| at + m <= t) {
            if let Some((_, beaten)) = pending.pop_front() {
                candidates.retain(|c| !beaten.contains(c));
            }
        }
        let new = t - m;
        if f[new].is_finite() {
            candidates.push(new);
        }
        let mut best = f64::INFINITY;
        let mut arg = 0;
        for &tau in &candidates {
            let v = f[tau] + cost(tau, t) + penalty;
            if v < best {
                best = v;
                arg = tau;
            }
        }
        f[t] = best;
        last[t] = arg;
        if best.is_finite() {
            let beaten: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&tau| f[tau] + cost(tau, t) > best)
                .collect();
            if !beaten.is_empty() {
                pending.push_back((t, beaten));
            }
        }
    }
    let mut cps = Vec::new();
    let mut t = n;
    while t > 0 {
        let tau = last[t];
        if tau > 0 {
            cps.push(tau);
        }
        if tau >= t {
            break;
        }
        t = tau;
    }
    cps.reverse();
    cps
}

/// The change points of a series of positive values (p50s in run order), as described in
/// the module docs. A series holding a value that is not positive and finite has none.
pub(crate) fn detect(values: &[f64], params: &Params) -> Vec<ChangePoint> {
    if values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return Vec::new();
    }
    let offset = values.len().saturating_sub(params.max_points.max(1));
    let v = &values[offset..];
    let n = v.len();
    let m = params.min_segment.max(1);
    if n < 2 * m {
        return Vec::new();
    }
    let logs: Vec<f64> = v.iter().map(|x| x.ln()).collect();
    let sigma = noise_sd(&logs).max(params.min_sigma);
    let mean = logs.iter().sum::<f64>() / n as f64;
    let z: Vec<f64> = logs.iter().map(|l| (l - mean) / sigma).collect();
    let penalty = params.penalty_factor * (n as f64).ln();
    let mut cps = pelt(&z, penalty, m);
    loop {
        let levels = segment_medians(v, &cps);
        let smallest = levels
            .windows(2)
            .enumerate()
            .map(|(i, w)| (i, (w[1] / w[0] - 1.0).abs()))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match smallest {
            Some((i, effect)) if effect < params.min_effect => {
                cps.remove(i);
            }
            _ => {
                return cps
                    .iter()
                    .zip(levels.windows(2))
                    .map(|(&index, w)| ChangePoint {
                        index: index + offset,
                        before: w[0],
                        after: w[1],
                    })
                    .collect();
            }
        }
    }
}

/// The median of each segment of `v` cut at `cps` (ascending starts).
fn segment_medians(v: &[f64], cps: &[usize]) -> Vec<f64> {
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(cps.iter().copied())
        .chain(std::iter::once(v.len()))
        .collect();
    bounds.windows(2).map(|w| median(&v[w[0]..w[1]])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, Normal};

    /// A series of `n` p50s around 100 µs with relative noise `sd`, and the level
    /// multiplied by `1 + step` from each `(index, step)` on.
    fn series(n: usize, sd: f64, steps: &[(usize, f64)], seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let noise = Normal::new(0.0, sd).unwrap();
        (0..n)
            .map(|i| {
                let level: f64 = steps
                    .iter()
                    .filter(|(at, _)| i >= *at)
                    .map(|(_, s)| 1.0 + s)
                    .product();
                100.0 * level * (1.0 + noise.sample(&mut rng))
            })
            .collect()
    }

    /// Brute force: the exact optimal partitioning, no pruning.
    fn optimal_partitioning(z: &[f64], penalty: f64, m: usize) -> Vec<usize> {
        let n = z.len();
        let cost = |a: usize, b: usize| {
            let s = &z[a..b];
            let mean = s.iter().sum::<f64>() / s.len() as f64;
            s.iter().map(|v| (v - mean).powi(2)).sum::<f64>()
        };
        let mut f = vec![f64::INFINITY; n + 1];
        let mut last = vec![0; n + 1];
        f[0] = -penalty;
        for t in m..=n {
            for tau in (0..=t - m).filter(|&tau| tau == 0 || tau >= m) {
                let v = f[tau] + cost(tau, t) + penalty;
                if v < f[t] {
                    f[t] = v;
                    last[t] = tau;
                }
            }
        }
        let mut cps = Vec::new();
        let mut t = n;
        while t > 0 {
            if last[t] > 0 {
                cps.push(last[t]);
            }
            t = last[t];
        }
        cps.reverse();
        cps
    }

    #[test]
    fn pelt_matches_optimal_partitioning() {
        for seed in 0..40 {
            let x = series(60, 0.01, &[(20, 0.02), (41, -0.015)], seed);
            let z: Vec<f64> = x.iter().map(|v| v.ln() / 0.01).collect();
            for m in [1, 2, 3, 5] {
                for pen in [2.0, 8.0, 20.0] {
                    assert_eq!(
                        pelt(&z, pen, m),
                        optimal_partitioning(&z, pen, m),
                        "seed {seed} m {m} pen {pen}"
                    );
                }
            }
        }
    }

    #[test]
    fn known_steps_are_found_within_one_commit() {
        let p = Params::default();
        for seed in 0..100 {
            let x = series(60, 0.003, &[(20, 0.03), (40, -0.05)], seed);
            let cps = detect(&x, &p);
            assert_eq!(cps.len(), 2, "seed {seed}: {cps:?}");
            assert!(cps[0].index.abs_diff(20) <= 1, "seed {seed}: {cps:?}");
            assert!(cps[1].index.abs_diff(40) <= 1, "seed {seed}: {cps:?}");
            let up = cps[0].after / cps[0].before - 1.0;
            let down = cps[1].after / cps[1].before - 1.0;
            assert!((up - 0.03).abs() < 0.005, "seed {seed}: {up}");
            assert!((down - (-0.05)).abs() < 0.005, "seed {seed}: {down}");
        }
    }

    #[test]
    fn a_step_at_a_min_segment_from_either_end_is_found() {
        let p = Params::default();
        for seed in 0..20 {
            let x = series(30, 0.003, &[(3, 0.04)], seed);
            let cps = detect(&x, &p);
            assert_eq!(cps.len(), 1, "seed {seed}: {cps:?}");
            assert_eq!(cps[0].index, 3, "seed {seed}: {cps:?}");
            let x = series(30, 0.003, &[(27, -0.04)], seed);
            assert_eq!(
                detect(&x, &p).iter().map(|c| c.index).collect::<Vec<_>>(),
                [27]
            );
        }
    }

    #[test]
    fn flat_noisy_series_have_no_change_points() {
        let p = Params::default();
        for seed in 0..500 {
            for (n, sd) in [(60, 0.003), (200, 0.003), (25, 0.003)] {
                let x = series(n, sd, &[], seed);
                let cps = detect(&x, &p);
                assert!(cps.is_empty(), "seed {seed} n {n} sd {sd}: {cps:?}");
            }
        }
    }

    #[test]
    fn the_penalty_alone_keeps_noise_quiet() {
        // No minimum effect: noise of 1% must still not cut flat series, but for a rare
        // seed (the penalty bounds false alarms, it does not exclude them). With MBIC's
        // 3 ln n, 18 of these 500 are cut.
        let p = Params {
            min_effect: 0.0,
            ..Params::default()
        };
        let mut false_alarms = 0;
        for seed in 0..500 {
            let x = series(60, 0.01, &[], seed);
            false_alarms += usize::from(!detect(&x, &p).is_empty());
        }
        assert!(false_alarms <= 10, "{false_alarms} of 500 flat series cut");
    }

    #[test]
    fn single_odd_runs_are_not_levels() {
        let p = Params::default();
        for seed in 0..100 {
            let mut x = series(60, 0.003, &[], seed);
            x[10] *= 1.08;
            x[30] *= 0.93;
            x[31] *= 1.06;
            x[50] *= 1.2;
            let cps = detect(&x, &p);
            assert!(cps.is_empty(), "seed {seed}: {cps:?}");
        }
    }

    #[test]
    fn small_moves_are_below_the_minimum_effect() {
        let p = Params::default();
        for seed in 0..50 {
            let x = series(60, 0.001, &[(30, 0.005)], seed);
            assert!(detect(&x, &p).is_empty(), "seed {seed}");
            let strict = Params {
                min_effect: 0.002,
                ..p
            };
            let cps = detect(&x, &strict);
            assert_eq!(cps.len(), 1, "seed {seed}: {cps:?}");
            assert!(cps[0].index.abs_diff(30) <= 1, "seed {seed}: {cps:?}");
        }
    }

    #[test]
    fn degenerate_inputs_have_no_change_points_and_never_panic() {
        let p = Params::default();
        assert!(detect(&[], &p).is_empty());
        assert!(detect(&[1.0], &p).is_empty());
        assert!(detect(&[1.0; 100], &p).is_empty());
        assert!(detect(&[1.0, f64::NAN, 2.0, 2.0, 2.0, 2.0, 2.0], &p).is_empty());
        assert!(detect(&[1.0, -1.0, 1.0, 1.0, 1.0, 1.0], &p).is_empty());
        assert!(detect(&[1e-300, 1e300, 1e-300, 1e300, 1e-300, 1e300, 1.0], &p).len() <= 2);
        // Exact values with one step: found despite a zero noise estimate.
        let mut x = vec![10.0; 20];
        x.extend([11.0; 20]);
        let cps = detect(&x, &p);
        assert_eq!(cps.len(), 1);
        assert_eq!(
            (cps[0].index, cps[0].before, cps[0].after),
            (20, 10.0, 11.0)
        );
        // Only the newest `max_points` are analysed; indices stay those of the input.
        let small = Params {
            max_points: 30,
            ..p
        };
        let mut x = vec![10.0; 10];
        x.extend([12.0; 20]);
        x.extend([13.0; 15]);
        let cps = detect(&x, &small);
        assert_eq!(cps.iter().map(|c| c.index).collect::<Vec<_>>(), [30]);
    }
}
