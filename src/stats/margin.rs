//! Margin tests on independent units: rounds (one value each: the round's median).
//!
//! Samples inside a round share buffers, placement and a clock state, so they are not
//! independent; rounds are. Every test here therefore reduces a round to its median first and
//! works on the logarithms of those medians, where a slowdown by a factor is a shift.
//!
//! * [`paired_margin_test`] — A/B in one process: round i of the base and round i of the
//!   candidate form a pair (measured back to back, in random order). Per pair the log ratio
//!   `d_i = ln med(cand_i) − ln med(base_i)`; a one-sample Student-t test of the mean of the
//!   `d_i` against the margins `ln(1 + m)` and `ln(1 − m)`. The same numbers as
//!   `scipy.stats.ttest_1samp(d, log1p(m), alternative="greater")`.
//! * [`unpaired_margin_test`] — candidate against a stored baseline measured in other
//!   processes: the difference of mean log round medians, with the between-process spread
//!   of the baseline added to its variance (Satterthwaite degrees of freedom). With a zero
//!   spread it is Welch's test, `scipy.stats.ttest_ind(..., equal_var=False)`.
//! * [`process_spread`] — that between-process spread, estimated from a baseline recorded in
//!   several processes (one-way random-effects ANOVA, method of moments).
//! * [`two_stage_p`] — the p-value of a planned two-stage design whose alpha is split in
//!   advance between the stages (weighted Bonferroni).
//!
//! A margin test asks "is it more than m slower, with confidence?" (H0: ratio ≤ 1 + m), not
//! "is it different?": a true change of exactly +m is flagged at most alpha of the time.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::quantile::{mean, median_sorted, stdev};
use super::{Interval, Rounds, StatsError};

/// Degrees of freedom above which the t law is replaced by the normal law.
const DF_NORMAL: f64 = 1e7;

/// The result of a margin test on the log scale: an estimate of `ln(ratio)`, its standard
/// error and a Student-t law with `df` degrees of freedom.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MarginTest {
    /// Independent units on the candidate side (pairs, for a paired test).
    pub n_cand: usize,
    /// Independent units on the base side (pairs, for a paired test).
    pub n_base: usize,
    /// Estimated `ln(cand / base)`.
    pub estimate: f64,
    /// Standard error of `estimate`.
    pub se: f64,
    /// Degrees of freedom of the t law.
    pub df: f64,
    /// One-sided p of H0 "ratio ≤ 1 + m" against "ratio > 1 + m".
    pub p_slower: f64,
    /// One-sided p of H0 "ratio ≥ 1 − m" against "ratio < 1 − m".
    pub p_faster: f64,
    /// The margin m the p-values were computed for.
    pub margin: f64,
}

/// Degrees of freedom from which [`t_quantile`] uses the Cornish–Fisher expansion: statrs'
/// t quantile loses accuracy there (relative error 3.7e-7 at df 1e3–1e4, 3e-3 at 1e5–1e6,
/// up to 0.95 at 1e7, measured against scipy), while the expansion's error is below 4e-15.
const DF_EXPANSION: f64 = 1000.0;

/// The `q`-quantile of the t law (`scipy.stats.t.ppf(q, df)`). Below [`DF_EXPANSION`]
/// degrees of freedom statrs' inversion; from there the Cornish–Fisher expansion around the
/// normal quantile to 1/ν⁴ (Abramowitz & Stegun 26.7.5); the normal quantile for infinite
/// df. Cost: O(1).
fn t_quantile(q: f64, df: f64) -> f64 {
    if !(q > 0.0 && q < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    let z = Normal::standard().inverse_cdf(q);
    if df.is_infinite() {
        return z;
    }
    if df >= DF_EXPANSION {
        let (z2, v) = (z * z, df);
        let g1 = (z2 + 1.0) * z / 4.0;
        let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
        let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
        let g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0;
        return z + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v);
    }
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |t| t.inverse_cdf(q))
}

/// `P(T > x)` for the t law with `df` degrees of freedom.
fn t_sf(x: f64, df: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if df >= DF_NORMAL || df.is_infinite() {
        return Normal::standard().sf(x);
    }
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |t| t.sf(x))
}

/// One-sided p of "mean > threshold" for an estimate with standard error `se`. A zero
/// standard error (all units equal) decides by the sign alone.
fn p_greater(estimate: f64, threshold: f64, se: f64, df: f64) -> f64 {
    if se > 0.0 {
        t_sf((estimate - threshold) / se, df)
    } else if estimate > threshold {
        0.0
    } else {
        1.0
    }
}

impl MarginTest {
    fn new(n_cand: usize, n_base: usize, estimate: f64, se: f64, df: f64, m: f64) -> MarginTest {
        MarginTest {
            n_cand,
            n_base,
            estimate,
            se,
            df,
            p_slower: p_greater(estimate, m.ln_1p(), se, df),
            p_faster: p_greater(-estimate, -(-m).ln_1p(), se, df),
            margin: m,
        }
    }

    /// The point estimate of the ratio cand / base, `exp(estimate)`. Cost: O(1).
    pub fn ratio(&self) -> f64 {
        self.estimate.exp()
    }

    /// Two-sided interval of the ratio at `confidence`: `exp(estimate ± t·se)`. Cost: O(1).
    pub fn interval(&self, confidence: f64) -> Interval {
        let t = t_quantile((1.0 + confidence) / 2.0, self.df);
        Interval {
            low: (self.estimate - t * self.se).exp(),
            high: (self.estimate + t * self.se).exp(),
        }
    }

    /// One-sided lower confidence bound of the ratio at level `1 − a`. It lies above `1 + m`
    /// exactly when `p_slower < a`. Cost: O(1).
    pub fn lower_bound(&self, a: f64) -> f64 {
        (self.estimate - t_quantile(1.0 - a, self.df) * self.se).exp()
    }

    /// One-sided upper confidence bound of the ratio at level `1 − a`. Cost: O(1).
    pub fn upper_bound(&self, a: f64) -> f64 {
        (self.estimate + t_quantile(1.0 - a, self.df) * self.se).exp()
    }

    /// The slowdown (a fraction, 0.03 = 3%) that a run with this standard error flags with
    /// probability `power` in a one-sided margin test at level `a`:
    /// `exp(ln(1 + m) + (t₁₋ₐ + t_power)·se) − 1`, the usual normal-theory approximation of
    /// the noncentral t power (exact as df → ∞). Cost: O(1).
    pub fn detectable(&self, a: f64, power: f64) -> f64 {
        let shift = (t_quantile(1.0 - a, self.df) + t_quantile(power, self.df)) * self.se;
        (self.margin.ln_1p() + shift).exp() - 1.0
    }
}

/// The numpy median of each round, in order. Cost: O(N log N) for N values in all.
pub fn round_medians(rounds: &Rounds) -> Vec<f64> {
    rounds
        .rounds()
        .iter()
        .map(|r| {
            let mut s = r.clone();
            s.sort_unstable_by(f64::total_cmp);
            median_sorted(&s)
        })
        .collect()
}

fn log_medians(rounds: &Rounds) -> Result<Vec<f64>, StatsError> {
    round_medians(rounds)
        .into_iter()
        .enumerate()
        .map(|(round, m)| {
            if m > 0.0 {
                Ok(m.ln())
            } else {
                Err(StatsError::NotPositive { round, value: m })
            }
        })
        .collect()
}

/// Paired margin test of A/B rounds (see the module docs). `base` and `cand` must hold the
/// same number (≥ 2) of rounds; round i of each form pair i. All round medians must be
/// positive.
///
/// Cost: O(N log N) for N values in all (the round medians), then O(n) for n pairs.
pub fn paired_margin_test(base: &Rounds, cand: &Rounds, m: f64) -> Result<MarginTest, StatsError> {
    if base.round_count() != cand.round_count() {
        return Err(StatsError::Unpaired {
            base: base.round_count(),
            cand: cand.round_count(),
        });
    }
    let n = base.round_count();
    if n < 2 {
        return Err(StatsError::TooFewRounds { n });
    }
    let d: Vec<f64> = log_medians(cand)?
        .iter()
        .zip(log_medians(base)?)
        .map(|(c, b)| c - b)
        .collect();
    let mu = mean(&d);
    let se = stdev(&d, mu) / (n as f64).sqrt();
    Ok(MarginTest::new(n, n, mu, se, (n - 1) as f64, m))
}

/// The spread of a kernel's log p50 between measuring processes, as a standard deviation
/// (0.004 ≈ 0.4%), with the degrees of freedom of its estimate (`f64::INFINITY` when it is
/// an assumed value rather than an estimate).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessSpread {
    /// Standard deviation of the process-level log shift.
    pub sd: f64,
    /// Degrees of freedom of `sd` (processes − 1), or infinity for an assumed value.
    pub df: f64,
}

impl ProcessSpread {
    /// The value assumed where a baseline does not record its spread (files written before
    /// spreads were recorded, or a baseline from one process): 0.5%, above most of the
    /// 0.1–0.9% p50 ranges seen across five processes on an H200 (docs/PERF.md).
    pub const ASSUMED: ProcessSpread = ProcessSpread {
        sd: 0.005,
        df: f64::INFINITY,
    };

    /// No spread at all: the two sides share a process (or the caller vouches that units of
    /// the two sides are exchangeable).
    pub const NONE: ProcessSpread = ProcessSpread {
        sd: 0.0,
        df: f64::INFINITY,
    };
}

/// Smallest between-process sd an estimate is allowed to report: with three processes an
/// estimate of zero is common even where the true spread is not.
pub const MIN_PROCESS_SD: f64 = 0.001;

/// Estimates the between-process spread of a baseline whose rounds came from several
/// processes: `process_rounds[p]` consecutive rounds from process p (in order).
///
/// Method (one-way random effects, method of moments, on log round medians): with process
/// means `x̄_p`, the pooled within-process variance `s_w²` and `r̄` the harmonic mean of the
/// rounds per process, `σ_P² = max(var(x̄_p) − s_w²/r̄, MIN_PROCESS_SD²)`, with `k − 1`
/// degrees of freedom. `None` when there are fewer than 2 processes, the counts do not add
/// up to the rounds, or a process has no round.
///
/// Cost: O(N log N) for N values in all.
pub fn process_spread(rounds: &Rounds, process_rounds: &[usize]) -> Option<ProcessSpread> {
    let k = process_rounds.len();
    if k < 2
        || process_rounds.contains(&0)
        || process_rounds.iter().sum::<usize>() != rounds.round_count()
    {
        return None;
    }
    let logs = log_medians(rounds).ok()?;
    let mut means = Vec::with_capacity(k);
    let mut within_ss = 0.0;
    let mut start = 0;
    for &r in process_rounds {
        let part = &logs[start..start + r];
        let mu = mean(part);
        within_ss += part.iter().map(|x| (x - mu).powi(2)).sum::<f64>();
        means.push(mu);
        start += r;
    }
    let n = rounds.round_count();
    let within_var = if n > k {
        within_ss / (n - k) as f64
    } else {
        0.0
    };
    let harmonic = k as f64 / process_rounds.iter().map(|&r| 1.0 / r as f64).sum::<f64>();
    let between = stdev(&means, mean(&means)).powi(2) - within_var / harmonic;
    Some(ProcessSpread {
        sd: between.max(MIN_PROCESS_SD * MIN_PROCESS_SD).sqrt(),
        df: (k - 1) as f64,
    })
}

/// Unpaired margin test of a candidate (one process) against a baseline measured in
/// `process_rounds.len()` other processes (see the module docs).
///
/// With `k` baseline processes, log round medians `b` (n_b of them) and `c` (n_c), the
/// estimate is `mean(c) − mean(b)` and its variance
/// `s_c²/n_c + s_w²/n_b + σ_P²·(1 + 1/k)`: the candidate's own process shift is one draw of
/// σ_P, the baseline's mean averages k of them. `s_w²` is the baseline's pooled
/// within-process variance (its plain variance when k = 1). Degrees of freedom by
/// Satterthwaite over the three terms (`n_c − 1`, `n_b − k`, `spread.df`). An empty
/// `process_rounds` means one process.
///
/// Cost: O(N log N) for N values in all.
pub fn unpaired_margin_test(
    base: &Rounds,
    process_rounds: &[usize],
    cand: &Rounds,
    spread: ProcessSpread,
    m: f64,
) -> Result<MarginTest, StatsError> {
    let (nb, nc) = (base.round_count(), cand.round_count());
    if nb < 2 || nc < 2 {
        return Err(StatsError::TooFewRounds { n: nb.min(nc) });
    }
    let one = [nb];
    let parts: &[usize] = if process_rounds.is_empty() || process_rounds.iter().sum::<usize>() != nb
    {
        &one
    } else {
        process_rounds
    };
    let k = parts.len();
    let b = log_medians(base)?;
    let c = log_medians(cand)?;
    let (mb, mc) = (mean(&b), mean(&c));
    let mut within_ss = 0.0;
    let mut start = 0;
    for &r in parts {
        let part = &b[start..start + r];
        let mu = mean(part);
        within_ss += part.iter().map(|x| (x - mu).powi(2)).sum::<f64>();
        start += r;
    }
    let df_b = nb.saturating_sub(k).max(1) as f64;
    let var_c = stdev(&c, mc).powi(2) / nc as f64;
    let var_b = within_ss / df_b / nb as f64;
    let var_p = spread.sd.powi(2) * (1.0 + 1.0 / k as f64);
    let var = var_c + var_b + var_p;
    let term = |v: f64, df: f64| if v > 0.0 { v * v / df } else { 0.0 };
    let denom = term(var_c, (nc - 1) as f64) + term(var_b, df_b) + term(var_p, spread.df);
    let df = if denom > 0.0 {
        var * var / denom
    } else {
        f64::INFINITY
    };
    Ok(MarginTest::new(nc, nb, mc - mb, var.sqrt(), df, m))
}

/// The share of alpha a two-stage design spends at its first look.
pub const STAGE1_ALPHA_SHARE: f64 = 0.2;

/// The p-value of a two-stage design that splits alpha in advance: `w·α` at the first look
/// (on the first-stage units alone), `(1 − w)·α` at the second (on all units), so
/// `p = min(p₁/w, p₂/(1 − w), 1)`. `p2 = None` when the second stage was not run (the first
/// look settled it). Rejecting where `p ≤ α` keeps the error rate at most α whatever rule
/// decides to run the second stage (Bonferroni over the two looks).
/// Cost: O(1).
pub fn two_stage_p(p1: f64, p2: Option<f64>, w: f64) -> f64 {
    let first = p1 / w;
    let second = p2.map_or(f64::INFINITY, |p| p / (1.0 - w));
    first.min(second).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(medians: &[f64]) -> Rounds {
        Rounds::new(
            medians
                .iter()
                .map(|&m| vec![m * 0.999, m, m * 1.001])
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn paired_needs_equal_counts_and_two_pairs() {
        let a = rounds(&[1.0, 1.0, 1.0]);
        let b = rounds(&[1.0, 1.0]);
        assert_eq!(
            paired_margin_test(&a, &b, 0.02),
            Err(StatsError::Unpaired { base: 3, cand: 2 })
        );
        let one = Rounds::new(vec![vec![1.0, 2.0]]).unwrap();
        assert_eq!(
            paired_margin_test(&one, &one, 0.02),
            Err(StatsError::TooFewRounds { n: 1 })
        );
    }

    #[test]
    fn paired_estimate_and_bounds() {
        let base = rounds(&[100.0, 101.0, 99.0, 100.5]);
        let cand = rounds(&[103.0, 104.1, 102.0, 103.4]);
        let t = paired_margin_test(&base, &cand, 0.02).unwrap();
        assert!((t.ratio() - 1.03).abs() < 0.002, "{t:?}");
        let ci = t.interval(0.95);
        assert!(ci.low < t.ratio() && t.ratio() < ci.high);
        // The one-sided bound at 1 − a sits above 1 + m exactly when p_slower < a.
        for a in [0.01, 0.05, 0.2] {
            assert_eq!(t.lower_bound(a) > 1.02, t.p_slower < a, "a={a} {t:?}");
        }
        assert!(t.p_faster > 0.99);
        assert!(t.detectable(0.05, 0.8) > 0.02);
    }

    #[test]
    fn zero_spread_decides_by_sign() {
        let base = rounds(&[100.0, 100.0, 100.0]);
        let cand = rounds(&[110.0, 110.0, 110.0]);
        let t = paired_margin_test(&base, &cand, 0.02).unwrap();
        assert_eq!(t.se, 0.0);
        assert_eq!((t.p_slower, t.p_faster), (0.0, 1.0));
        let t = paired_margin_test(&base, &base, 0.02).unwrap();
        assert_eq!((t.p_slower, t.p_faster), (1.0, 1.0));
    }

    #[test]
    fn nonpositive_medians_are_errors() {
        let bad = Rounds::new(vec![vec![0.0, 0.0], vec![1.0, 1.0]]).unwrap();
        let ok = rounds(&[1.0, 1.0]);
        assert_eq!(
            paired_margin_test(&ok, &bad, 0.02),
            Err(StatsError::NotPositive {
                round: 0,
                value: 0.0
            })
        );
    }

    #[test]
    fn spread_of_processes() {
        // Three processes shifted by −1%, 0, +1% with tiny within-process noise.
        let mut medians = Vec::new();
        for shift in [0.99, 1.0, 1.01] {
            for j in 0..5 {
                medians.push(100.0 * shift * (1.0 + 0.0001 * j as f64));
            }
        }
        let r = rounds(&medians);
        let s = process_spread(&r, &[5, 5, 5]).unwrap();
        assert!((s.sd - 0.01).abs() < 0.001, "{s:?}");
        assert_eq!(s.df, 2.0);
        assert!(process_spread(&r, &[15]).is_none());
        assert!(process_spread(&r, &[5, 5]).is_none());
        // No process effect at all: floored at MIN_PROCESS_SD.
        let flat = rounds(&[100.0; 9]);
        assert_eq!(
            process_spread(&flat, &[3, 3, 3]).unwrap().sd,
            MIN_PROCESS_SD
        );
    }

    #[test]
    fn spread_widens_the_unpaired_interval() {
        let base = rounds(&[100.0, 100.2, 99.8, 100.1, 99.9, 100.0]);
        let cand = rounds(&[103.0, 103.2, 102.8, 103.1, 102.9, 103.0]);
        let none = unpaired_margin_test(&base, &[], &cand, ProcessSpread::NONE, 0.02).unwrap();
        let some = unpaired_margin_test(&base, &[], &cand, ProcessSpread::ASSUMED, 0.02).unwrap();
        assert!((none.estimate - some.estimate).abs() < 1e-15);
        assert!(some.se > 3.0 * none.se, "{none:?} {some:?}");
        assert!(
            none.p_slower < 0.001 && some.p_slower > 0.01,
            "{none:?} {some:?}"
        );
    }

    #[test]
    fn t_quantiles_match_scipy_at_every_df() {
        // scipy.stats.t.ppf(0.95, df) for df = 9, 999, 1000, 1e5, 1e7; norm.ppf(0.95).
        for (df, want) in [
            (9.0, 1.833_112_932_656_237),
            (999.0, 1.646_380_345_427_535),
            (1000.0, 1.646_378_817_285_464_3),
            (1e5, 1.644_868_864_784_969_6),
            (1e7, 1.644_853_779_328_401_7),
            (f64::INFINITY, 1.644_853_626_951_472_2),
        ] {
            let got = t_quantile(0.95, df);
            assert!((got - want).abs() < 1e-9, "df {df}: {got} vs {want}");
        }
    }

    #[test]
    fn two_stage_spends_alpha_as_planned() {
        let w = STAGE1_ALPHA_SHARE;
        assert!((two_stage_p(0.005, None, w) - 0.025).abs() < 1e-15);
        assert_eq!(two_stage_p(0.5, None, w), 1.0);
        assert!((two_stage_p(0.5, Some(0.02), w) - 0.025).abs() < 1e-15);
        assert!((two_stage_p(0.001, Some(0.5), w) - 0.005).abs() < 1e-15);
    }
}
