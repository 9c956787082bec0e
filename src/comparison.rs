//! The comparison of one shape's candidate with one reference — the base kernels measured in
//! the same process (A/B, paired rounds), the stored baseline (other processes), or the BASE
//! file of an offline `compare` — on the independent units. These are the numbers the
//! verdict rule reads; every one says what it is ([`Method`]).
//!
//! * A/B: Yuen's 20%-trimmed-mean t on the pair log ratios of round medians
//!   ([`stats::paired_margin_test`]), in the planned two-stage design.
//! * Stored baseline, results files compared offline: Yuen–Welch on the log round medians
//!   with the between-process spread added ([`stats::unpaired_margin_test`]).
//! * Sample files of i.i.d. values (no rounds): the p50 ratio with the seeded percentile
//!   bootstrap of the ratio of medians ([`stats::ratio_of_medians_bootstrap`]), widened by
//!   the process spread.
//!
//! Each margin p is per shape: no correction across the shapes of a run (the margin already
//! protects unchanged shapes: 0 of 2.9 million unchanged shapes were flagged in the
//! calibration, while Holm over 13 shapes cut the power at +2.5% from 98% to 82%,
//! docs/PERF.md).

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::config::GateSettings;
use crate::stats::{
    Alternative, Magnitude, MarginTest, ProcessSpread, Rounds, STAGE1_ALPHA_SHARE, Sample,
    StatsError, TRIM, cliffs_delta, mann_whitney_u, paired_margin_test, ratio_of_medians_bootstrap,
    round_medians, two_stage_p, unpaired_margin_test,
};

/// The power at which "Detectable" is stated.
pub(crate) const DETECTABLE_POWER: f64 = 0.8;

/// Fewest values a side for the bootstrap of the ratio of medians to decide on a sample file
/// of i.i.d. values; with fewer, each value is taken as a round and the trimmed test
/// decides (a percentile bootstrap of a median under-covers on small samples).
pub(crate) const MIN_BOOTSTRAP_VALUES: usize = 30;

/// A stored spread estimated from at least this many processes is used with a floor of
/// [`SPREAD_FLOOR`]; from fewer, with [`FEW_PROCESSES_FLOOR`]. The calibration that chose it
/// (false alarms at +2.0% at most 5% for a true spread of 0.1–0.9%): docs/PERF.md.
pub(crate) const MIN_PROCESSES: usize = 5;

/// The least between-process sd a spread estimated from [`MIN_PROCESSES`] or more
/// processes is taken as: an estimate from a few processes is often far below the truth.
pub(crate) const SPREAD_FLOOR: f64 = 0.002;

/// The least between-process sd a spread estimated from 2 to 4 processes is taken as.
pub(crate) const FEW_PROCESSES_FLOOR: f64 = 0.003;

/// A planned two-stage design: `stage1` rounds (pairs, in A/B) first; shapes the first look
/// does not settle get more, up to `max` in all. Alpha is split between the looks in advance
/// (`stats::two_stage_p`), so looking twice costs no false alarms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageDesign {
    pub stage1: u32,
    pub max: u32,
}

impl StageDesign {
    /// Whether a second look was planned (and so alpha was split).
    pub(crate) fn two_stage(&self) -> bool {
        self.max > self.stage1
    }
}

/// What a candidate is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reference {
    /// The base kernels, measured in the same process in pairs of rounds.
    Ab,
    /// The stored baseline of this GPU model (or BASE, offline).
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

/// How a comparison was computed: what its `ratio`, interval and units are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Paired rounds (A/B): `ratio` is exp of the 20%-trimmed mean of the pair log ratios of
    /// round medians, tested with Yuen's one-sample t.
    PairedRounds,
    /// Rounds against rounds of other processes: `ratio` is exp of the difference of the
    /// 20%-trimmed means of log round medians, tested with Yuen–Welch plus the process spread.
    UnpairedRounds,
    /// i.i.d. values: `ratio` is the p50 ratio (numpy medians), its interval and bounds the
    /// seeded percentile bootstrap of the ratio of medians.
    MedianBootstrap,
    /// Recorded by an earlier version of ci-gate (Student t of round medians).
    #[default]
    #[serde(other)]
    Earlier,
}

impl Method {
    /// What `ratio` is, for column titles: "Δ round p50" (a ratio of round medians), "Δp50"
    /// (the p50 ratio itself).
    pub(crate) fn ratio_label(self) -> &'static str {
        match self {
            Method::PairedRounds | Method::UnpairedRounds | Method::Earlier => "Δ round p50",
            Method::MedianBootstrap => "Δp50",
        }
    }

    /// The method of the interval, for column titles.
    pub(crate) fn interval_label(self) -> &'static str {
        match self {
            Method::PairedRounds | Method::UnpairedRounds => "Yuen t",
            Method::MedianBootstrap => "bootstrap",
            Method::Earlier => "t",
        }
    }

    /// What the units counted in `n_base` / `n_cand` are.
    pub fn units(self) -> &'static str {
        match self {
            Method::PairedRounds => "pairs",
            Method::UnpairedRounds | Method::Earlier => "rounds",
            Method::MedianBootstrap => "values",
        }
    }

    /// One sentence: what was computed.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Method::PairedRounds => {
                "trimmed mean (20%) of the per-pair log ratios of round medians, Yuen's one-sample t against ln(1 + m)"
            }
            Method::UnpairedRounds => {
                "difference of the trimmed means (20%) of log round medians, Yuen–Welch t with the between-process spread added"
            }
            Method::MedianBootstrap => {
                "ratio of the two medians, seeded percentile bootstrap (values resampled, the between-process spread added)"
            }
            Method::Earlier => "as recorded by an earlier ci-gate (Student t of round medians)",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::PairedRounds => "paired-rounds",
            Method::UnpairedRounds => "unpaired-rounds",
            Method::MedianBootstrap => "median-bootstrap",
            Method::Earlier => "earlier",
        })
    }
}

/// Where the between-process spread of an unpaired comparison came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpreadSource {
    /// Estimated from the baseline's processes (at least [`MIN_PROCESSES`]), floored at
    /// [`SPREAD_FLOOR`].
    Measured,
    /// Estimated from 2 to 4 processes: floored at [`FEW_PROCESSES_FLOOR`].
    FewProcesses,
    /// Not recorded (one process, a file of an earlier version, or two files compared
    /// offline): the conservative default [`ProcessSpread::ASSUMED`].
    Assumed,
    /// Given by the user (`compare --process-sd`).
    Given,
}

/// An unpaired reference: its rounds, how they split into measuring processes, and what is
/// known about the spread between processes.
#[derive(Clone, Debug)]
pub struct StoredSide {
    pub rounds: Vec<Vec<f64>>,
    /// Rounds per process, in order; empty when unknown (one process).
    pub process_rounds: Vec<usize>,
    /// The recorded between-process spread; `None` when none is recorded.
    pub spread: Option<ProcessSpread>,
    /// A spread the user vouches for (`compare --process-sd`), over the recorded one.
    pub given_sd: Option<f64>,
    /// Both sides are i.i.d. values (sample files without rounds), whatever the rounds they
    /// are held in: compared by the bootstrap of the ratio of medians of all their values
    /// (with fewer than [`MIN_BOOTSTRAP_VALUES`] a side, each value a round, by the trimmed
    /// test).
    pub values: bool,
}

impl StoredSide {
    /// A stored baseline's rounds with its recorded processes and spread.
    pub fn recorded(
        rounds: Vec<Vec<f64>>,
        process_rounds: Vec<usize>,
        spread: Option<ProcessSpread>,
    ) -> StoredSide {
        StoredSide {
            rounds,
            process_rounds,
            spread,
            given_sd: None,
            values: false,
        }
    }

    /// The spread the comparison uses and where it came from (see [`SpreadSource`]).
    pub(crate) fn effective_spread(&self) -> (ProcessSpread, SpreadSource) {
        if let Some(sd) = self.given_sd {
            return (
                ProcessSpread {
                    sd,
                    df: f64::INFINITY,
                },
                SpreadSource::Given,
            );
        }
        match self.spread {
            Some(s) if s.df + 1.0 >= MIN_PROCESSES as f64 => (
                ProcessSpread {
                    sd: s.sd.max(SPREAD_FLOOR),
                    df: s.df,
                },
                SpreadSource::Measured,
            ),
            Some(s) => (
                ProcessSpread {
                    sd: s.sd.max(FEW_PROCESSES_FLOOR),
                    df: s.df,
                },
                SpreadSource::FewProcesses,
            ),
            None => (ProcessSpread::ASSUMED, SpreadSource::Assumed),
        }
    }
}

/// Candidate vs one reference for one shape. Ratios are candidate / reference (> 1 =
/// slower).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub reference: Reference,
    /// What was computed (see [`Method`]).
    #[serde(default)]
    pub method: Method,
    /// Units of the reference and of the candidate: pairs (equal), rounds or values.
    pub n_base: usize,
    pub n_cand: usize,
    /// p50 of all values of each side (numpy.median), µs.
    pub p50_base: f64,
    pub p50_cand: f64,
    /// The estimate the rule tests (see [`Method`]): for rounds a ratio of round medians,
    /// for i.i.d. values the p50 ratio.
    pub ratio: f64,
    /// Two-sided interval of `ratio` at `confidence` (the test's, all units).
    pub ci_low: f64,
    pub ci_high: f64,
    pub confidence: f64,
    /// One-sided lower / upper confidence bounds of `ratio` at the level the deciding look
    /// spends (alpha, or its share at that stage of a two-stage design).
    pub lower_bound: f64,
    pub upper_bound: f64,
    /// Standard error of the log ratio and the degrees of freedom of its t law (trimmed
    /// tests; `None` for the bootstrap).
    #[serde(default)]
    pub se: Option<f64>,
    #[serde(default)]
    pub df: Option<f64>,
    /// Per-shape margin p-values of the design (H0: ratio ≤ 1 + m, resp. ≥ 1 − m); for the
    /// bootstrap, the share of resampled ratios at most 1 + m (resp. at least 1 − m).
    pub margin_p: f64,
    pub margin_p_faster: f64,
    /// Which look decided: 1, or 2 when a second stage ran.
    pub stage: u32,
    /// Cliff's delta of the candidate's round medians (values, for i.i.d. files) against the
    /// reference's; positive = candidate slower. Reported; not part of the rule.
    pub cliffs_delta: f64,
    pub cliffs_magnitude: Magnitude,
    /// Mann-Whitney U of the same round medians (values): an unpaired test of a difference
    /// (not of the margin), and its one-sided p-values. Reported; not part of the rule.
    pub mwu_u: f64,
    pub mwu_p: f64,
    pub mwu_p_faster: f64,
    /// The slowdown (fraction) the rule as applied here flags with 80% power.
    pub min_detectable: f64,
    /// Unpaired only: the between-process sd added to the interval and where it came from.
    #[serde(default)]
    pub process_sd: Option<f64>,
    #[serde(default)]
    pub process_sd_source: Option<SpreadSource>,
    /// Whether `process_sd` is the assumed default (no spread recorded or given).
    #[serde(default)]
    pub process_sd_assumed: bool,
}

impl Comparison {
    /// The pooled p50 ratio: `p50_cand / p50_base`. Cost: O(1).
    pub fn p50_ratio(&self) -> f64 {
        self.p50_cand / self.p50_base
    }

    /// Whether the pooled p50 ratio lies outside the test's interval: the distribution inside
    /// the rounds changed shape, so the ratio of round medians is not the p50 change.
    /// Never for the bootstrap, whose ratio is the p50 ratio. Cost: O(1).
    pub(crate) fn p50_outside_interval(&self) -> bool {
        let r = self.p50_ratio();
        self.method != Method::MedianBootstrap
            && r.is_finite()
            && (r < self.ci_low || r > self.ci_high)
    }
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

/// Degrees of freedom of the trimmed test at `n` units: `h − 1`, `h = n − 2⌊TRIM·n⌋`.
fn trimmed_df(n: u32) -> f64 {
    let g = (f64::from(n) * TRIM) as u32;
    f64::from(n.saturating_sub(2 * g).max(2) - 1)
}

/// The slowdown the planned A/B design catches with 80% power at this run's pair spread:
/// a shape near the margin always gets the second look, so the power is that of its last
/// look — all `max` pairs, at that look's level — with the standard error scaled from the
/// pairs measured to `max` (`se·√(n/max)`) and that look's degrees of freedom (`h − 1` of
/// the trimmed test at `max` pairs). One-stage designs: the last look as measured.
fn design_detectable(last: &MarginTest, design: Option<StageDesign>, alpha: f64) -> f64 {
    match design {
        Some(d) if d.two_stage() => {
            let n = last.n_cand.max(1) as f64;
            let projected = MarginTest {
                se: last.se * (n / f64::from(d.max)).sqrt(),
                df: last.df.max(trimmed_df(d.max)),
                ..*last
            };
            projected.detectable(look_level(alpha, design, 2), DETECTABLE_POWER)
        }
        _ => last.detectable(alpha, DETECTABLE_POWER),
    }
}

/// The first `n` rounds (all of them without a copy).
fn first(rounds: &Rounds, n: usize) -> Result<Cow<'_, Rounds>, StatsError> {
    if n >= rounds.round_count() {
        return Ok(Cow::Borrowed(rounds));
    }
    Ok(Cow::Owned(Rounds::new(rounds.rounds()[..n].to_vec())?))
}

/// Cliff's delta and the one-sided Mann-Whitney p-values of the candidate's units against
/// the reference's.
struct RankFigures {
    delta: f64,
    u: f64,
    p_slower: f64,
    p_faster: f64,
}

fn rank_figures(base_units: Vec<f64>, cand_units: Vec<f64>) -> RankFigures {
    match (Sample::new(base_units), Sample::new(cand_units)) {
        (Ok(b), Ok(c)) => {
            let slower = mann_whitney_u(&c, &b, Alternative::Greater);
            RankFigures {
                delta: cliffs_delta(&c, &b),
                u: slower.u,
                p_slower: slower.p,
                p_faster: mann_whitney_u(&c, &b, Alternative::Less).p,
            }
        }
        // Fewer than 2 units a side cannot happen for valid rounds; report nothing.
        _ => RankFigures {
            delta: 0.0,
            u: f64::NAN,
            p_slower: 1.0,
            p_faster: 1.0,
        },
    }
}

impl Comparison {
    /// Builds the comparison from trimmed tests at each look: `tests[0]` on the first stage's
    /// rounds, `tests[1]` (if the second stage ran) on all of them.
    fn from_tests(
        reference: Reference,
        method: Method,
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
        let ranks = rank_figures(round_medians(base), round_medians(cand));
        Comparison {
            reference,
            method,
            n_base: base.round_count(),
            n_cand: cand.round_count(),
            p50_base: base.pooled().median(),
            p50_cand: cand.pooled().median(),
            ratio: last.ratio(),
            ci_low: ci.low,
            ci_high: ci.high,
            confidence: gate.confidence,
            lower_bound: last.lower_bound(level),
            upper_bound: last.upper_bound(level),
            se: Some(last.se),
            df: Some(last.df),
            margin_p,
            margin_p_faster,
            stage,
            cliffs_delta: ranks.delta,
            cliffs_magnitude: Magnitude::of(ranks.delta),
            mwu_u: ranks.u,
            mwu_p: ranks.p_slower,
            mwu_p_faster: ranks.p_faster,
            min_detectable: if reference == Reference::Ab {
                design_detectable(&last, design, gate.alpha)
            } else {
                // The spread between processes does not shrink with more rounds.
                last.detectable(level, DETECTABLE_POWER)
            },
            process_sd: None,
            process_sd_source: None,
            process_sd_assumed: false,
        }
    }

    /// A/B: round i of `base` and of `cand` are pair i; Yuen's trimmed test of the pair log
    /// ratios. With a two-stage `design`, the first look uses the first `stage1` pairs and,
    /// if more pairs were measured, the second all.
    ///
    /// Cost: O(N log N) for N values in all.
    pub fn paired(
        base: &Rounds,
        cand: &Rounds,
        design: Option<StageDesign>,
        gate: &GateSettings,
    ) -> Result<Comparison, StatsError> {
        let m = gate.max_p50_regression;
        let looks = staged(cand.round_count(), design, |n| {
            paired_margin_test(&*first(base, n)?, &*first(cand, n)?, m)
        })?;
        Ok(Comparison::from_tests(
            Reference::Ab,
            Method::PairedRounds,
            base,
            cand,
            &looks,
            design,
            gate,
        ))
    }

    /// Against a reference measured in other processes (the stored baseline, or BASE
    /// offline), with the spread of [`StoredSide::effective_spread`]: Yuen–Welch on the log
    /// round medians; for i.i.d. values of at least [`MIN_BOOTSTRAP_VALUES`] a side, the
    /// bootstrap of the ratio of medians ([`Comparison::values`]).
    ///
    /// Cost: O(N log N) for N values in all, plus `gate.bootstrap_resamples` O(1) resamples
    /// for i.i.d. values.
    pub fn unpaired(
        stored: &StoredSide,
        cand: &Rounds,
        design: Option<StageDesign>,
        gate: &GateSettings,
    ) -> Result<Comparison, StatsError> {
        let base = Rounds::new(stored.rounds.clone())?;
        let (spread, source) = stored.effective_spread();
        let m = gate.max_p50_regression;
        let trimmed = |base: &Rounds, cand: &Rounds, design: Option<StageDesign>| {
            let looks = staged(cand.round_count(), design, |n| {
                unpaired_margin_test(base, &stored.process_rounds, &*first(cand, n)?, spread, m)
            })?;
            Ok::<_, StatsError>(Comparison::from_tests(
                Reference::Stored,
                Method::UnpairedRounds,
                base,
                cand,
                &looks,
                design,
                gate,
            ))
        };
        let (bv, cv) = (base.pooled(), cand.pooled());
        let mut c = if !stored.values {
            trimmed(&base, cand, design)?
        } else if bv.len() >= MIN_BOOTSTRAP_VALUES && cv.len() >= MIN_BOOTSTRAP_VALUES {
            Comparison::values(&base, cand, spread, gate)?
        } else {
            // Too few values for a bootstrap of the median: each value is a round.
            let each = |s: &Sample| Rounds::new(s.values().iter().map(|&v| vec![v]).collect());
            trimmed(&each(bv)?, &each(cv)?, None)?
        };
        c.process_sd = Some(spread.sd);
        c.process_sd_source = Some(source);
        c.process_sd_assumed = source == SpreadSource::Assumed;
        Ok(c)
    }

    /// i.i.d. values against i.i.d. values (each side one process): the p50 ratio
    /// `median(cand)/median(base)`, with the seeded percentile bootstrap of the ratio of
    /// medians (`gate.bootstrap_resamples` resamples, seed `gate.seed`) convolved with the
    /// between-process spread of the log ratio (`spread.sd·√2`). The interval is the
    /// bootstrap's two-sided percentile interval; the bounds its `alpha` and `1 − alpha`
    /// quantiles, on which the rule decides; the margin p-values the share of resampled
    /// ratios at most `1 + m` (at least `1 − m`). "Detectable" uses the robust sd of the
    /// resampled log ratios σ̂: `exp(ln(1 + m) + (z₁₋α + z₀.₈)·σ̂) − 1`.
    ///
    /// Cost: O(N log N) (the sorts of the two sides) plus O(B log B) for B resamples.
    pub fn values(
        base: &Rounds,
        cand: &Rounds,
        spread: ProcessSpread,
        gate: &GateSettings,
    ) -> Result<Comparison, StatsError> {
        let (b, c) = (base.pooled(), cand.pooled());
        let single = |s: &Sample| Rounds::single(s.clone());
        let boot = ratio_of_medians_bootstrap(
            &single(b),
            &single(c),
            gate.bootstrap_resamples,
            gate.seed,
            spread.sd * std::f64::consts::SQRT_2,
        )?;
        let (m, a) = (gate.max_p50_regression, gate.alpha);
        let ci = boot.interval(gate.confidence);
        let normal = statrs::distribution::Normal::standard();
        use statrs::distribution::ContinuousCDF;
        let z = normal.inverse_cdf(1.0 - a) + normal.inverse_cdf(DETECTABLE_POWER);
        let ranks = rank_figures(b.values().to_vec(), c.values().to_vec());
        Ok(Comparison {
            reference: Reference::Stored,
            method: Method::MedianBootstrap,
            n_base: b.len(),
            n_cand: c.len(),
            p50_base: b.median(),
            p50_cand: c.median(),
            ratio: c.median() / b.median(),
            ci_low: ci.low,
            ci_high: ci.high,
            confidence: gate.confidence,
            lower_bound: boot.lower_bound(a),
            upper_bound: boot.upper_bound(a),
            se: None,
            df: None,
            margin_p: boot.share_at_most(1.0 + m),
            margin_p_faster: boot.share_at_least(1.0 - m),
            stage: 1,
            cliffs_delta: ranks.delta,
            cliffs_magnitude: Magnitude::of(ranks.delta),
            mwu_u: ranks.u,
            mwu_p: ranks.p_slower,
            mwu_p_faster: ranks.p_faster,
            min_detectable: (m.ln_1p() + z * boot.log_sd()).exp() - 1.0,
            process_sd: Some(spread.sd),
            process_sd_source: None,
            process_sd_assumed: false,
        })
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

/// A per-shape seed derived from the run's seed and the shape's name, so each shape's
/// random choices (pair orders) are reproducible on their own and independent of the others.
pub(crate) fn shape_seed(run_seed: u64, shape: &str) -> u64 {
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
