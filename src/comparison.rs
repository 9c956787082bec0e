//! The comparison of one shape's candidate timings with its baseline: the numbers the
//! verdict rule reads. Holm correction across the shapes of one run lives here too.

use serde::{Deserialize, Serialize};

use crate::config::GateSettings;
use crate::stats::{
    self, Alternative, Magnitude, Rounds, StatsError, cliffs_delta, mann_whitney_u,
    ratio_of_medians_ci,
};

/// Candidate vs baseline for one shape. Ratios are candidate / baseline (> 1 = slower).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub n_base: usize,
    pub n_cand: usize,
    pub p50_base: f64,
    pub p50_cand: f64,
    /// p50_cand / p50_base.
    pub ratio: f64,
    /// Bootstrap percentile interval of `ratio` at `confidence`.
    pub ci_low: f64,
    pub ci_high: f64,
    pub confidence: f64,
    /// Cliff's delta of candidate vs baseline; positive = candidate slower.
    pub cliffs_delta: f64,
    pub cliffs_magnitude: Magnitude,
    /// Mann-Whitney U of the candidate sample.
    pub mwu_u: f64,
    /// One-sided p, alternative "candidate slower".
    pub mwu_p: f64,
    /// One-sided p, alternative "candidate faster".
    pub mwu_p_faster: f64,
    /// `mwu_p` after Holm correction across the shapes of the run.
    pub mwu_p_holm: f64,
    /// `mwu_p_faster` after Holm correction across the shapes of the run.
    pub mwu_p_faster_holm: f64,
    /// Smallest p50 slowdown (fraction) this run could have flagged: the gate's threshold plus
    /// the half-width of the interval. A "pass" says nothing about changes smaller than this.
    pub min_detectable: f64,
    pub resamples: u32,
    pub seed: u64,
}

impl Comparison {
    /// Compares two measurements. Cost: one bootstrap (see [`ratio_of_medians_ci`]), one
    /// Mann-Whitney U and one Cliff's delta, each O(n log n) in the pooled sample size.
    /// Holm-adjusted p-values start equal to the raw ones; [`apply_holm`] adjusts a run.
    pub fn of(
        base: &Rounds,
        cand: &Rounds,
        gate: &GateSettings,
        seed: u64,
    ) -> Result<Comparison, StatsError> {
        let (b, c) = (base.pooled(), cand.pooled());
        let p50_base = b.median();
        let p50_cand = c.median();
        let ci = ratio_of_medians_ci(base, cand, gate.bootstrap_resamples, gate.confidence, seed)?;
        let slower = mann_whitney_u(c, b, Alternative::Greater);
        let faster = mann_whitney_u(c, b, Alternative::Less);
        let delta = cliffs_delta(c, b);
        Ok(Comparison {
            n_base: b.len(),
            n_cand: c.len(),
            p50_base,
            p50_cand,
            ratio: p50_cand / p50_base,
            ci_low: ci.low,
            ci_high: ci.high,
            confidence: gate.confidence,
            cliffs_delta: delta,
            cliffs_magnitude: Magnitude::of(delta),
            mwu_u: slower.u,
            mwu_p: slower.p,
            mwu_p_faster: faster.p,
            mwu_p_holm: slower.p,
            mwu_p_faster_holm: faster.p,
            min_detectable: gate.max_p50_regression + (ci.high - ci.low) / 2.0,
            resamples: gate.bootstrap_resamples,
            seed,
        })
    }
}

/// Holm-corrects the one-sided p-values of all compared shapes of one run, each direction
/// as its own family.
pub fn apply_holm<'a>(comparisons: impl IntoIterator<Item = &'a mut Comparison>) {
    let mut all: Vec<&mut Comparison> = comparisons.into_iter().collect();
    let slower = stats::holm(&all.iter().map(|c| c.mwu_p).collect::<Vec<_>>());
    let faster = stats::holm(&all.iter().map(|c| c.mwu_p_faster).collect::<Vec<_>>());
    for ((c, s), f) in all.iter_mut().zip(slower).zip(faster) {
        c.mwu_p_holm = s;
        c.mwu_p_faster_holm = f;
    }
}

/// A per-shape seed derived from the run's seed and the shape's name, so each shape's
/// bootstrap is reproducible on its own and independent of the others.
pub fn shape_seed(run_seed: u64, shape: &str) -> u64 {
    // FNV-1a over the name, mixed with the run seed (splitmix64 finaliser).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in shape.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = h ^ run_seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
