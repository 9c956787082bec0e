//! The comparison of one shape's candidate with one reference — the base kernels measured in
//! the same process (A/B, paired rounds) or the stored baseline (other processes) — on the
//! independent units, rounds. These are the numbers the verdict rule reads. Holm correction
//! across the shapes of one run lives here too.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::config::GateSettings;
use crate::results::StageDesign;
use crate::stats::{
    self, Alternative, Magnitude, MarginTest, ProcessSpread, Rounds, STAGE1_ALPHA_SHARE, Sample,
    StatsError, cliffs_delta, mann_whitney_u, paired_margin_test, round_medians, two_stage_p,
    unpaired_margin_test,
};

/// The power at which "Detectable" is stated.
pub const DETECTABLE_POWER: f64 = 0.8;

/// What a candidate is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reference {
    /// The base kernels, measured in the same process in pairs of rounds.
    Ab,
    /// The stored baseline of this GPU model.
    Stored,
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reference::Ab => "A/B",
            Reference::Stored => "stored baseline",
        })
    }
}

/// A stored reference: its rounds and how they split into measuring processes.
#[derive(Clone, Debug)]
pub struct StoredSide {
    pub rounds: Vec<Vec<f64>>,
    /// Rounds per process, in order; empty when unknown (one process).
    pub process_rounds: Vec<usize>,
    /// The recorded between-process spread; `None` when the file does not record one.
    pub spread: Option<ProcessSpread>,
}

/// Candidate vs one reference for one shape. Ratios are candidate / reference (> 1 =
/// slower). Every test works on round medians.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub reference: Reference,
    /// Rounds of the reference and of the candidate (pairs: equal).
    pub n_base: usize,
    pub n_cand: usize,
    /// Medians of all values of each side (shown; the tests use round medians).
    pub p50_base: f64,
    pub p50_cand: f64,
    /// Estimated p50 ratio: exp of the mean log ratio of round medians.
    pub ratio: f64,
    /// Two-sided Student-t interval of `ratio` at `confidence` (all rounds).
    pub ci_low: f64,
    pub ci_high: f64,
    pub confidence: f64,
    /// One-sided lower / upper confidence bounds of `ratio` at the level the deciding look
    /// spends (alpha, or its share at that stage of a two-stage design).
    pub lower_bound: f64,
    pub upper_bound: f64,
    /// Standard error of the log ratio, and the degrees of freedom of its t law.
    pub se: f64,
    pub df: f64,
    /// Margin p-values of the design (H0: ratio ≤ 1 + m, resp. ≥ 1 − m), before and after
    /// Holm across the shapes of the run.
    pub margin_p: f64,
    pub margin_p_faster: f64,
    pub margin_p_holm: f64,
    pub margin_p_faster_holm: f64,
    /// Which look decided: 1, or 2 when a second stage ran.
    pub stage: u32,
    /// Cliff's delta of the candidate's round medians against the reference's; positive =
    /// candidate slower.
    pub cliffs_delta: f64,
    pub cliffs_magnitude: Magnitude,
    /// Mann-Whitney U of the candidate's round medians against the reference's, and its
    /// one-sided p-values (reported; the verdict uses the margin test), raw and Holm-adjusted.
    pub mwu_u: f64,
    pub mwu_p: f64,
    pub mwu_p_faster: f64,
    pub mwu_p_holm: f64,
    pub mwu_p_faster_holm: f64,
    /// The slowdown (fraction) this run would have flagged with 80% power.
    pub min_detectable: f64,
    /// Stored only: the between-process sd added to the interval, and whether it was
    /// assumed (the baseline records none) rather than measured.
    #[serde(default)]
    pub process_sd: Option<f64>,
    #[serde(default)]
    pub process_sd_assumed: bool,
}

/// The one-sided level a look spends: all of alpha in a one-stage design; `w·α` at the
/// first and `(1 − w)·α` at the second look of a two-stage one.
fn look_level(alpha: f64, design: Option<StageDesign>, stage: u32) -> f64 {
    match design {
        Some(d) if d.two_stage() => {
            if stage == 1 {
                STAGE1_ALPHA_SHARE * alpha
            } else {
                (1.0 - STAGE1_ALPHA_SHARE) * alpha
            }
        }
        _ => alpha,
    }
}

fn pooled_median(rounds: &Rounds) -> f64 {
    rounds.pooled().median()
}

/// The slowdown the planned A/B design catches with 80% power at this run's pair spread:
/// a shape near the margin always gets the second look, so the power is that of its last
/// look — all `max` units, at that look's level — with the standard error scaled from the
/// units measured to `max` (`se·√(n/max)`). One-stage designs: the last look as measured.
fn design_detectable(last: &MarginTest, design: Option<StageDesign>, alpha: f64) -> f64 {
    match design {
        Some(d) if d.two_stage() => {
            let n = last.n_cand.max(1) as f64;
            let projected = MarginTest {
                se: last.se * (n / f64::from(d.max)).sqrt(),
                df: last.df.max(f64::from(d.max) - 1.0),
                ..*last
            };
            projected.detectable(look_level(alpha, design, 2), DETECTABLE_POWER)
        }
        _ => last.detectable(alpha, DETECTABLE_POWER),
    }
}

/// The first `n` rounds.
fn first(rounds: &Rounds, n: usize) -> Result<Rounds, StatsError> {
    Rounds::new(rounds.rounds()[..n.min(rounds.round_count())].to_vec())
}

impl Comparison {
    /// Builds the comparison from margin tests at each look: `tests[0]` on the first stage's
    /// rounds, `tests[1]` (if the second stage ran) on all of them.
    fn from_tests(
        reference: Reference,
        base: &Rounds,
        cand: &Rounds,
        looks: &[MarginTest],
        design: Option<StageDesign>,
        gate: &GateSettings,
    ) -> Comparison {
        let last = looks[looks.len() - 1];
        let stage = looks.len() as u32;
        let two = design.is_some_and(|d| d.two_stage());
        let (margin_p, margin_p_faster) = if two {
            (
                two_stage_p(
                    looks[0].p_slower,
                    looks.get(1).map(|t| t.p_slower),
                    STAGE1_ALPHA_SHARE,
                ),
                two_stage_p(
                    looks[0].p_faster,
                    looks.get(1).map(|t| t.p_faster),
                    STAGE1_ALPHA_SHARE,
                ),
            )
        } else {
            (last.p_slower, last.p_faster)
        };
        let level = look_level(gate.alpha, design, stage);
        let ci = last.interval(gate.confidence);
        let (bm, cm) = (round_medians(base), round_medians(cand));
        // Round medians of a valid Rounds are finite and there are ≥ 2 of each.
        let (bs, cs) = (Sample::new(bm).ok(), Sample::new(cm).ok());
        let (delta, slower, faster) = match (&bs, &cs) {
            (Some(b), Some(c)) => (
                cliffs_delta(c, b),
                Some(mann_whitney_u(c, b, Alternative::Greater)),
                Some(mann_whitney_u(c, b, Alternative::Less)),
            ),
            _ => (0.0, None, None),
        };
        Comparison {
            reference,
            n_base: base.round_count(),
            n_cand: cand.round_count(),
            p50_base: pooled_median(base),
            p50_cand: pooled_median(cand),
            ratio: last.ratio(),
            ci_low: ci.low,
            ci_high: ci.high,
            confidence: gate.confidence,
            lower_bound: last.lower_bound(level),
            upper_bound: last.upper_bound(level),
            se: last.se,
            df: last.df,
            margin_p,
            margin_p_faster,
            margin_p_holm: margin_p,
            margin_p_faster_holm: margin_p_faster,
            stage,
            cliffs_delta: delta,
            cliffs_magnitude: Magnitude::of(delta),
            mwu_u: slower.map_or(f64::NAN, |m| m.u),
            mwu_p: slower.map_or(1.0, |m| m.p),
            mwu_p_faster: faster.map_or(1.0, |m| m.p),
            mwu_p_holm: slower.map_or(1.0, |m| m.p),
            mwu_p_faster_holm: faster.map_or(1.0, |m| m.p),
            min_detectable: if reference == Reference::Ab {
                design_detectable(&last, design, gate.alpha)
            } else {
                // The spread between processes does not shrink with more rounds.
                last.detectable(level, DETECTABLE_POWER)
            },
            process_sd: None,
            process_sd_assumed: false,
        }
    }

    /// A/B: round i of `base` and of `cand` are pair i. With a two-stage `design`, the first
    /// look uses the first `stage1` pairs and, if more pairs were measured, the second all.
    /// Cost: O(N log N) for N values in all.
    pub fn paired(
        base: &Rounds,
        cand: &Rounds,
        design: Option<StageDesign>,
        gate: &GateSettings,
    ) -> Result<Comparison, StatsError> {
        let m = gate.max_p50_regression;
        let looks = staged(cand.round_count(), design, |n| {
            paired_margin_test(&first(base, n)?, &first(cand, n)?, m)
        })?;
        Ok(Comparison::from_tests(
            Reference::Ab,
            base,
            cand,
            &looks,
            design,
            gate,
        ))
    }

    /// Against a stored baseline measured in other processes: the baseline's
    /// between-process spread (or [`ProcessSpread::ASSUMED`] where it records none) is
    /// added to the interval. Cost: O(N log N) for N values in all.
    pub fn unpaired(
        stored: &StoredSide,
        cand: &Rounds,
        design: Option<StageDesign>,
        gate: &GateSettings,
    ) -> Result<Comparison, StatsError> {
        let base = Rounds::new(stored.rounds.clone())?;
        let spread = stored.spread.unwrap_or(ProcessSpread::ASSUMED);
        let m = gate.max_p50_regression;
        let looks = staged(cand.round_count(), design, |n| {
            unpaired_margin_test(&base, &stored.process_rounds, &first(cand, n)?, spread, m)
        })?;
        let mut c = Comparison::from_tests(Reference::Stored, &base, cand, &looks, design, gate);
        c.process_sd = Some(spread.sd);
        c.process_sd_assumed = stored.spread.is_none();
        Ok(c)
    }
}

/// The looks of a design over `n` measured rounds: one on the first `stage1`, and one on all
/// `n` when the second stage ran (`n > stage1`).
fn staged(
    n: usize,
    design: Option<StageDesign>,
    test: impl Fn(usize) -> Result<MarginTest, StatsError>,
) -> Result<Vec<MarginTest>, StatsError> {
    match design {
        Some(d) if d.two_stage() && (d.stage1 as usize) < n => {
            Ok(vec![test(d.stage1 as usize)?, test(n)?])
        }
        _ => Ok(vec![test(n)?]),
    }
}

/// Holm-corrects the margin and Mann-Whitney p-values of all comparisons of one kind in a
/// run, each direction as its own family.
pub fn apply_holm<'a>(comparisons: impl IntoIterator<Item = &'a mut Comparison>) {
    let mut all: Vec<&mut Comparison> = comparisons.into_iter().collect();
    let adjust = |all: &[&mut Comparison], f: fn(&Comparison) -> f64| {
        stats::holm(&all.iter().map(|c| f(c)).collect::<Vec<_>>())
    };
    let slower = adjust(&all, |c| c.margin_p);
    let faster = adjust(&all, |c| c.margin_p_faster);
    let mwu_slower = adjust(&all, |c| c.mwu_p);
    let mwu_faster = adjust(&all, |c| c.mwu_p_faster);
    for (i, c) in all.iter_mut().enumerate() {
        c.margin_p_holm = slower[i];
        c.margin_p_faster_holm = faster[i];
        c.mwu_p_holm = mwu_slower[i];
        c.mwu_p_faster_holm = mwu_faster[i];
    }
}

/// A per-shape seed derived from the run's seed and the shape's name, so each shape's
/// random choices (pair orders) are reproducible on their own and independent of the others.
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
