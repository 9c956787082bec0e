//! Calibration of the gate by seeded simulation: the decision path the pipeline runs (the
//! planned two-stage design of `evaluate::open_shapes`, and the one rule in
//! `verdict::decide`) on timings drawn from the simulated GPU's own noise model
//! (`ci_gate::sim::noise`, issue 19's model and issue 30's):
//!
//! * a process shift shared by everything one process measures (sd 0.3%; cancels in A/B
//!   pairs; it is what a stored baseline must carry as its between-process spread);
//! * a slow drift within the process (a random walk, sd 0.1% per pair, shared by the two
//!   rounds of a pair);
//! * a round shift per round (fresh buffers, placement, clock state): heavy-tailed, Student t
//!   with 3 degrees of freedom scaled to an sd of 0.2%;
//! * 2% of rounds per side throttled: the whole round 3–8% slower;
//! * within-round noise: Student t with 5 degrees of freedom (heavy tails) scaled to an sd of
//!   1%, and 2% of samples outliers 5–30% slow; 10 samples a round;
//! * conditions with exactly one bad round: one throttled base round in the first stage, or
//!   one throttled candidate round in each stage.
//!
//! The design is the PR config's: 8 pairs, up to 24 for shapes the first look does not
//! settle; 13 shapes per run, one of them changed.
//!
//! Requirements (docs/DECIDING.md, "Calibration"; issue 19): A/A ≤ 0.1% of shapes flagged; a true
//! +2.0% ≤ 5% (≤ 10% with one throttled candidate round per stage); +2.5% ≥ 95% per shape;
//! +3% ≥ 99% (also with one throttled base round); "Detectable" within 0.2 points of the
//! simulated 80%-power change. Plus the stored-baseline path and i.i.d. sample files.
//!
//! CI runs reduced counts (a few seconds each in a debug build). The counts of the tables in
//! docs/PERF.md: `CI_GATE_CALIBRATION=full cargo test --release --test it -- --include-ignored
//! --nocapture calibration::` (the ignored tests print the tables that chose the rule and
//! the number of baseline processes; they also run, at reduced counts, with
//! `--include-ignored` alone).

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use std::path::{Path, PathBuf};

use ci_gate::backend::shapes::{ShapeSlot, ShapeSlots};
use ci_gate::backend::{
    DeviceFacts, Energy, Facts, GpuError, Measure, Measurement, Pair, PhaseTimes, Prepare, Round,
    ShapeHandle, Side,
};
use ci_gate::cli::ConfigArgs;
use ci_gate::comparison::{StageDesign, StoredSide};
use ci_gate::config::{CacheMode, Dtype, GateSettings, ShapeParams};
use ci_gate::config::{Config, MeasureSettings, Tolerance};
use ci_gate::evaluate::{evaluate, open_shapes};
use ci_gate::kernel::KernelDir;
use ci_gate::results::{Environment, GpuState, PairOrder};
use ci_gate::results::{MeasurementInfo, ShapeResult};
use ci_gate::run::{BackendChoice, BaseKernels, Run, RunRequest};
use ci_gate::sim::noise::{Noise, NoiseModel};
use ci_gate::stats::{
    self, MarginTest, ProcessSpread, Rounds, SETTLED_LEVEL, STAGE1_ALPHA_SHARE, Sample, TRIM,
    cliffs_delta, paired_margin_test_trimmed, process_spread, round_medians, two_stage_p,
};
use ci_gate::verdict::{Policy, Verdict};

/// Full counts (the tables of docs/PERF.md) or the reduced counts CI runs.
fn full() -> bool {
    std::env::var("CI_GATE_CALIBRATION").is_ok_and(|v| v == "full")
}

/// `reduced` runs in CI, `full` with `CI_GATE_CALIBRATION=full`; `CI_GATE_CALIBRATION_RUNS`
/// overrides both (for exploring).
fn count(reduced: usize, full_count: usize) -> usize {
    if let Some(n) = std::env::var("CI_GATE_CALIBRATION_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    if full() { full_count } else { reduced }
}

const SHAPES: usize = 13;
/// The PR config's design as shipped (`configs/pr.yaml`: `min_rounds` 8, `max_rounds` 28:
/// the design issue 30's power requirement needs).
const DESIGN: StageDesign = StageDesign { stage1: 8, max: 28 };

/// The same design: the tables of issue 30 are of it.
const PROPOSED: StageDesign = DESIGN;

/// A noise model and the design its runs are measured with.
#[derive(Clone, Copy, Debug)]
struct Setting {
    model: Model,
    design: StageDesign,
}

/// The noise model (`ci_gate::sim::noise`, the simulated GPU's); all sds are of the log
/// time.
type Model = NoiseModel;

/// Samples a round.
const SAMPLES: usize = 10;

/// Issue 19's model: what the simulated GPU measures with.
const ISSUE: Model = NoiseModel::ISSUE;

/// Issue 19's model with the PR config's design as shipped.
const ISSUE_19: Setting = Setting {
    model: ISSUE,
    design: DESIGN,
};

/// Issue 30's model with the design it needs.
const AUDIT_30: Setting = Setting {
    model: AUDIT,
    design: PROPOSED,
};

/// Issue 30's model: what its audit measured +2.5% power under (94.2% [93.5, 94.7] with the
/// design of 8 → 24 pairs). Per pair a normal log-ratio term of sd 0.3% (each side's round
/// shift normal with sd 0.3%/√2); within-sample noise normal with sd 1%; 2% of samples
/// ×1.05–1.30; 2% of rounds per side ×1.03–1.08; 10 samples a round. The process shift
/// and the drift are issue 19's (both cancel in pairs).
const AUDIT: Model = Model {
    round_sd: 0.003 * std::f64::consts::FRAC_1_SQRT_2,
    round_df: f64::INFINITY,
    within_df: f64::INFINITY,
    ..ISSUE
};

/// Rounds forced to be throttled, besides the model's random ones.
#[derive(Clone, Copy, Debug, Default)]
struct Forced {
    /// One base round in the first stage.
    base_in_stage1: bool,
    /// One candidate round in each stage.
    cand_per_stage: bool,
}

/// One shape's A/B pairs, drawn as the design asks for them from the shape's own seeded
/// stream, so that every rule sees the same data whichever pairs it asks for first.
struct AbShape {
    noise: Noise,
    /// The planned design its pairs are drawn for.
    design: StageDesign,
    change: f64,
    center: f64,
    process: f64,
    /// Pairs whose base (resp. candidate) round is forced to be throttled.
    base_bad: Option<usize>,
    cand_bad: Option<(usize, usize)>,
    base: Vec<Vec<f64>>,
    cand: Vec<Vec<f64>>,
}

impl AbShape {
    fn new(
        seed: u64,
        model: Model,
        change: f64,
        center: f64,
        forced: Forced,
        design: StageDesign,
    ) -> AbShape {
        let mut noise = Noise::new(seed, model);
        let (s1, max) = (design.stage1 as usize, design.max as usize);
        let process = model.process_sd * noise.z();
        let base_bad = forced.base_in_stage1.then(|| noise.index(0..s1));
        let cand_bad = forced
            .cand_per_stage
            .then(|| (noise.index(0..s1), noise.index(s1..max)));
        AbShape {
            noise,
            design,
            change,
            center,
            process,
            base_bad,
            cand_bad,
            base: Vec::new(),
            cand: Vec::new(),
        }
    }

    /// Draws pairs until there are `n`.
    fn ensure(&mut self, n: usize) -> &AbShape {
        while self.base.len() < n {
            let i = self.base.len();
            let noise = &mut self.noise;
            let level = self.center.ln() + self.process + noise.pair_shift();
            self.base
                .push(noise.round(level, SAMPLES, self.base_bad == Some(i)));
            let bad = self.cand_bad.is_some_and(|(a, b)| a == i || b == i);
            self.cand
                .push(noise.round(level + self.change.ln_1p(), SAMPLES, bad));
        }
        self
    }
}

fn shape_result(i: usize, design: StageDesign) -> ShapeResult {
    let params = ShapeParams::new(1, 8, 512 + 64 * i as u32, 64, false, Dtype::Float16);
    let mut s = ShapeResult::new(params);
    s.measurement = Some(MeasurementInfo {
        cache: CacheMode::Hot,
        launches_per_sample: 100,
        rounds: 0,
        extra_rounds: 0,
        working_set_bytes: 0,
        wall_s: 0.0,
        sm_clock_mhz: None,
        design: Some(design),
        checked_launches: 0,
        unwitnessed: None,
    });
    s
}

/// What one run of 13 shapes gave under one rule: per shape, flagged as a regression, and
/// whether it got the second stage.
#[derive(Clone, Debug, Default)]
struct Outcome {
    flagged: Vec<bool>,
    second_look: Vec<bool>,
    /// "Detectable" of each shape as the report states it (shipped rule only).
    detectable: Vec<f64>,
}

/// The config of the replayed runs: the default gate, the PR design (8 pairs, up to 24, 10
/// samples a round), one shape per simulated shape.
fn replay_config(shapes: usize, design: StageDesign) -> Config {
    let mut yaml = format!(
        "name: calibration\nmeasure: {{samples_per_round: 10, min_rounds: {}, max_rounds: {}}}\nshapes:\n",
        design.stage1, design.max
    );
    for i in 0..shapes {
        let p = shape_result(i, design).params;
        yaml.push_str(&format!(
            "  - {{batch: {}, heads: {}, seq_len: {}, head_dim: {}, causal: false, dtype: float16}}\n",
            p.batch, p.heads, p.seq_len, p.head_dim
        ));
    }
    Config::parse(&yaml, Path::new("calibration.yaml")).expect("the replay config parses")
}

/// A measuring backend that serves pre-drawn pairs: shape `i` of the config gets the pairs
/// of `shapes[i]`, drawn as the pipeline asks for them.
struct Replay<'a> {
    drawn: &'a mut [AbShape],
    params: Vec<ShapeParams>,
    /// The shapes begun (as the real backends keep their device state), each with the index
    /// of its drawn pairs.
    begun: ShapeSlots<usize>,
}

impl Facts for Replay<'_> {
    fn device(&self) -> DeviceFacts {
        DeviceFacts {
            environment: Environment {
                gpu_name: "Replay".into(),
                gpu_slug: "replay".into(),
                gpu_uuid: None,
                compute_capability: "9.0".into(),
                sm_count: None,
                l2_bytes: None,
                driver_version: None,
                cuda_driver_version: None,
                nvrtc_version: None,
                state_before: None,
                state_after: None,
            },
            peak_dense_tflops: f64::INFINITY,
            run_key: 0,
            base_hash: Some(format!("{:?}", Side::Base)),
            candidate_hash: Some(format!("{:?}", Side::Candidate)),
        }
    }
    fn state(&self) -> Option<GpuState> {
        None
    }
    fn input_sets(&self, _: &ShapeParams, _: &MeasureSettings) -> Result<usize, GpuError> {
        Ok(1)
    }
    fn phase_times(&self) -> PhaseTimes {
        PhaseTimes::default()
    }
}

/// One replayed round: the drawn samples, nothing else measured.
fn replayed(values: Vec<f64>) -> Round {
    Round::of_samples(values, 100, Vec::new())
}

impl Measure for Replay<'_> {
    fn prepare(&mut self, _: Prepare<'_>) -> Result<(), GpuError> {
        Ok(())
    }
    fn parity(
        &mut self,
        _: Side,
        _: &ShapeParams,
        _: Tolerance,
        _: u64,
    ) -> Result<ci_gate::results::Parity, GpuError> {
        Err(GpuError::Misuse("the replay measures no parity"))
    }
    fn load_other(&mut self, _: &KernelDir, _: &[String]) -> Result<(), GpuError> {
        Err(GpuError::Misuse("the replay has no third kernel set"))
    }
    fn begin(
        &mut self,
        shape: &ShapeParams,
        sides: &[Side],
        settings: &MeasureSettings,
        tolerance: Tolerance,
        _: Option<f64>,
        coin_seed: u64,
        _: u64,
    ) -> Result<ShapeHandle, GpuError> {
        let i = self
            .params
            .iter()
            .position(|p| p == shape)
            .ok_or_else(|| GpuError::Unsupported(format!("no drawn shape {shape}")))?;
        Ok(self.begun.begin(ShapeSlot::new(
            *shape, sides, settings, tolerance, coin_seed, i,
        )))
    }
    fn pair(&mut self, shape: &ShapeHandle, so_far: &[Measurement]) -> Result<Pair, GpuError> {
        let slot = self.begun.live(shape, "a pair")?;
        let n = so_far.get(1).map_or(0, |m| m.rounds.len());
        let s = self.drawn[slot.state].ensure(n + 1);
        let (base, cand) = (s.base[n].clone(), s.cand[n].clone());
        Ok(Pair {
            order: PairOrder::BaseFirst,
            rounds: [replayed(base), replayed(cand)],
        })
    }
    fn round(&mut self, _: &ShapeHandle, _: &[Measurement]) -> Result<Round, GpuError> {
        Err(GpuError::Misuse("the replay measures pairs"))
    }
    fn control(&mut self, _: &MeasureSettings, _: usize) -> Result<Option<Round>, GpuError> {
        Ok(None)
    }
    fn energy(
        &mut self,
        _: &ShapeHandle,
        _: &[Measurement],
        _: u32,
        _: u32,
    ) -> Result<Energy, GpuError> {
        Ok(Energy::Unavailable(
            "replayed timings carry no energy".into(),
        ))
    }
    fn end(&mut self, shape: ShapeHandle) {
        self.begun.end(shape);
    }
}

/// The gate as it runs: the real pipeline (`Run::measure_with`: the first stage, then
/// `evaluate::open_shapes` — a first look, the second stage where `needs_second_look` asks,
/// then `evaluate`, the one rule) on the [`Replay`] backend, which serves these shapes'
/// pre-drawn pairs as the pipeline asks.
fn shipped(shapes: &mut [AbShape], gate: &GateSettings) -> Outcome {
    assert_eq!(
        *gate,
        GateSettings::default(),
        "the replay config has the default gate"
    );
    let design = shapes[0].design;
    let config = replay_config(SHAPES, design);
    let params = config.shapes.clone();
    assert_eq!(params.len(), shapes.len());
    // A/A-style pairs of both sides always, nothing stored, nothing but the timings.
    let request = RunRequest {
        base: Some(BaseKernels {
            dir: PathBuf::from("."),
            source: "replay".into(),
            commit: None,
        }),
        ab_always: true,
        compare: false,
        parity: false,
        peers: false,
        trace_drift: false,
        ..RunRequest::gate(&ConfigArgs {
            config: PathBuf::from("calibration.yaml"),
            kernels: PathBuf::from("."),
            baselines: PathBuf::from("."),
        })
    };
    // The device is the replay below, not the GPU the run would open.
    let run = Run::with_config(request, config, BackendChoice::Gpu).expect("the replay's run");
    let mut replay = Replay {
        drawn: shapes,
        params,
        begun: ShapeSlots::default(),
    };
    let results = run
        .measure_with(&mut replay, std::time::Instant::now())
        .expect("a replayed run");
    Outcome {
        flagged: results
            .shapes
            .iter()
            .map(|s| s.verdict == Verdict::Regression)
            .collect(),
        second_look: results
            .shapes
            .iter()
            .map(|s| {
                s.measurement
                    .as_ref()
                    .is_some_and(|m| m.rounds > design.stage1)
            })
            .collect(),
        detectable: results
            .shapes
            .iter()
            .map(|s| s.ab.as_ref().map_or(f64::NAN, |c| c.min_detectable))
            .collect(),
    }
}

/// A candidate rule for the table that chose the shipped one: the trimming of the paired
/// test, Holm across the shapes of a run, and Cliff's δ of the round medians ≥ small, each
/// on or off; the share of alpha spent at the first look, and the level of the first look's
/// bounds that stop a shape there. It follows the pipeline's design (alpha split between
/// the looks, a second look where a one-sided bound of the first still reaches past ±m) at
/// the level of `stats`; [`SHIPPED`] is the shipped rule, and `the_table_rules_replay_the_
/// shipped_one` checks that it gives the same verdicts as `evaluate` on the same data.
#[derive(Clone, Copy, Debug)]
struct Rule {
    name: &'static str,
    trim: f64,
    holm: bool,
    cliff: bool,
    /// Share of alpha spent at the first look.
    split: f64,
    /// One-sided level of the first look's bounds that must both lie inside ±m for a shape
    /// to stop there; `None`: the first look's own level (`split · alpha`).
    stop: Option<f64>,
}

/// Issue 19's rules: alpha split 0.2/0.8, stopping on the first look's own bounds.
const fn before(name: &'static str, trim: f64, holm: bool, cliff: bool) -> Rule {
    Rule {
        name,
        trim,
        holm,
        cliff,
        split: 0.2,
        stop: None,
    }
}

/// The shipped rule: Yuen's 20%-trimmed test, alpha split as `stats` says, stopping after
/// the first look where its bounds at `stats::SETTLED_LEVEL` lie inside ±m.
const SHIPPED: Rule = Rule {
    name: "Yuen 20% trimmed (shipped)",
    trim: TRIM,
    holm: false,
    cliff: false,
    split: STAGE1_ALPHA_SHARE,
    stop: Some(SETTLED_LEVEL),
};

const RULES: [Rule; 7] = [
    before("Student t (before issue 19)", 0.0, false, false),
    before(
        "Student t + Holm + Cliff's δ ≥ small (the old rule)",
        0.0,
        true,
        true,
    ),
    before("Yuen 10% trimmed", 0.1, false, false),
    SHIPPED,
    before("Yuen 25% trimmed", 0.25, false, false),
    before("Yuen 20% + Holm over 13 shapes", 0.2, true, false),
    before("Yuen 20% + Cliff's δ ≥ small", 0.2, false, true),
];

/// One look of a rule at the first `n` pairs of a shape.
struct Look {
    test: MarginTest,
    cliff: f64,
}

fn look(shape: &mut AbShape, n: usize, trim: f64, m: f64) -> Look {
    let shape = shape.ensure(n);
    let base = Rounds::new(shape.base[..n].to_vec()).unwrap();
    let cand = Rounds::new(shape.cand[..n].to_vec()).unwrap();
    let test = paired_margin_test_trimmed(&base, &cand, m, trim).unwrap();
    let (b, c) = (
        Sample::new(round_medians(&base)).unwrap(),
        Sample::new(round_medians(&cand)).unwrap(),
    );
    Look {
        test,
        cliff: cliffs_delta(&c, &b),
    }
}

/// The verdicts of `rule` over the shapes of one run: per shape (regression, improvement).
fn rule_verdicts(rule: Rule, looks: &[Vec<Look>], gate: &GateSettings) -> Vec<(bool, bool)> {
    let (m, alpha, w) = (gate.max_p50_regression, gate.alpha, rule.split);
    let level = |stage: usize| {
        if stage == 1 {
            w * alpha
        } else {
            (1.0 - w) * alpha
        }
    };
    let p = |l: &[Look], slower: bool| {
        let pick = |t: &MarginTest| if slower { t.p_slower } else { t.p_faster };
        two_stage_p(pick(&l[0].test), l.get(1).map(|x| pick(&x.test)), w)
    };
    let adjust = |slower: bool| {
        let raw: Vec<f64> = looks.iter().map(|l| p(l, slower)).collect();
        if rule.holm { stats::holm(&raw) } else { raw }
    };
    let (slow_p, fast_p) = (adjust(true), adjust(false));
    looks
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let last = &l[l.len() - 1];
            let a = level(l.len());
            let effect = |sign: f64| !rule.cliff || sign * last.cliff >= 0.147;
            (
                last.test.lower_bound(a) > 1.0 + m && slow_p[i] < alpha && effect(1.0),
                last.test.upper_bound(a) < 1.0 - m && fast_p[i] < alpha && effect(-1.0),
            )
        })
        .collect()
}

/// The run under `rule`: the first look for every shape, a second where neither bound
/// settles it, the verdicts.
fn replay(rule: Rule, shapes: &mut [AbShape], gate: &GateSettings) -> Outcome {
    let design = shapes[0].design;
    let (m, s1, max) = (
        gate.max_p50_regression,
        design.stage1 as usize,
        design.max as usize,
    );
    let mut looks: Vec<Vec<Look>> = shapes
        .iter_mut()
        .map(|s| vec![look(s, s1, rule.trim, m)])
        .collect();
    let first = rule_verdicts(rule, &looks, gate);
    let a1 = rule.stop.unwrap_or(rule.split * gate.alpha);
    for (i, l) in looks.iter_mut().enumerate() {
        let (slow, fast) = first[i];
        let t = &l[0].test;
        if !slow && !fast && (t.upper_bound(a1) >= 1.0 + m || t.lower_bound(a1) <= 1.0 - m) {
            l.push(look(&mut shapes[i], max, rule.trim, m));
        }
    }
    let verdicts = rule_verdicts(rule, &looks, gate);
    Outcome {
        flagged: verdicts.iter().map(|v| v.0).collect(),
        second_look: looks.iter().map(|l| l.len() == 2).collect(),
        detectable: Vec::new(),
    }
}

/// Counts over runs of 13 shapes: changed shapes flagged, unchanged shapes flagged.
#[derive(Clone, Copy, Debug, Default)]
struct Rates {
    changed: usize,
    flagged: usize,
    unchanged: usize,
    false_alarms: usize,
    second_looks: usize,
    second_looks_unchanged: usize,
}

impl Rates {
    /// Adds a run whose first `changed` shapes were changed.
    fn add(&mut self, o: &Outcome, changed: usize) {
        for (i, f) in o.flagged.iter().enumerate() {
            if i < changed {
                self.changed += 1;
                self.flagged += usize::from(*f);
                self.second_looks += usize::from(o.second_look[i]);
            } else {
                self.unchanged += 1;
                self.false_alarms += usize::from(*f);
                self.second_looks_unchanged += usize::from(o.second_look[i]);
            }
        }
    }
    fn power(&self) -> f64 {
        self.flagged as f64 / self.changed as f64
    }
}

/// A run of 13 shapes, the first `changed` of them changed by `change` (with `forced` bad
/// rounds), each with its own seed drawn from `master`.
fn draw_run(
    master: &mut ChaCha8Rng,
    setting: Setting,
    change: f64,
    forced: Forced,
    changed: usize,
) -> Vec<AbShape> {
    (0..SHAPES)
        .map(|i| {
            let (c, f) = if i < changed {
                (change, forced)
            } else {
                (0.0, Forced::default())
            };
            AbShape::new(
                master.random(),
                setting.model,
                c,
                10.0 * (1.0 + i as f64),
                f,
                setting.design,
            )
        })
        .collect()
}

/// How many shapes of a run are changed: one, as issue 19 asks, with full counts; all 13 on
/// the reduced path of CI, where the rule being per shape makes each shape's verdict depend
/// on its own data only (`tests/it/cli_merge.rs` checks that a shape alone gets the numbers
/// it gets among others), so 13 changed shapes are 13 independent comparisons.
fn changed_per_run() -> usize {
    if full() { 1 } else { SHAPES }
}

/// The shipped rule through `evaluate` over `runs` runs; also every reported "Detectable" of
/// the changed shapes.
fn shipped_rates(
    setting: Setting,
    change: f64,
    forced: Forced,
    runs: usize,
    seed: u64,
) -> (Rates, Vec<f64>) {
    let gate = GateSettings::default();
    let mut master = ChaCha8Rng::seed_from_u64(seed);
    let changed = if change == 0.0 { 0 } else { changed_per_run() };
    let mut rates = Rates::default();
    let mut detectable = Vec::new();
    for _ in 0..runs {
        let mut shapes = draw_run(&mut master, setting, change, forced, changed);
        let o = shipped(&mut shapes, &gate);
        detectable.extend(o.detectable.iter().take(changed.max(1)).copied());
        rates.add(&o, changed);
    }
    (rates, detectable)
}

/// Whether `k` of `n` is consistent, at the 1% level (one-sided, exact binomial), with a
/// true rate of at most `p` (`at_most`) or at least `p`.
fn consistent(k: usize, n: usize, p: f64, at_most: bool) -> bool {
    use statrs::distribution::{Binomial, DiscreteCDF};
    let law = Binomial::new(p, n as u64).unwrap();
    let tail = if at_most {
        // P(X ≥ k)
        if k == 0 { 1.0 } else { law.sf(k as u64 - 1) }
    } else {
        law.cdf(k as u64)
    };
    tail >= 0.01
}

/// A fraction as a percentage: 0.0123 → "1.23%" (a ratio 1.0123 reads "+1.23%" through
/// `pct(r - 1)`; rates and changes here are fractions).
fn pct(x: f64) -> String {
    format!("{:.2}%", 100.0 * x)
}

/// The rate of `k` of `n` with its exact 95% (Clopper–Pearson) interval, for the logs.
fn rate(k: usize, n: usize) -> String {
    use statrs::distribution::{Beta, ContinuousCDF};
    let lo = if k == 0 {
        0.0
    } else {
        Beta::new(k as f64, (n - k + 1) as f64)
            .unwrap()
            .inverse_cdf(0.025)
    };
    let hi = if k == n {
        1.0
    } else {
        Beta::new((k + 1) as f64, (n - k) as f64)
            .unwrap()
            .inverse_cdf(0.975)
    };
    format!(
        "{k} / {n} = {} [{}, {}]",
        pct(k as f64 / n as f64),
        pct(lo),
        pct(hi)
    )
}

/// One condition of the requirements: the shipped rule at `change` (with `forced` bad
/// rounds), the changed shapes' flag rate consistent with at most (or at least) `target`.
fn requirement(
    setting: Setting,
    name: &str,
    change: f64,
    forced: Forced,
    target: f64,
    at_most: bool,
    seed: u64,
) {
    let runs = count(100, 4000);
    let (r, _) = shipped_rates(setting, change, forced, runs, seed);
    eprintln!(
        "{name}: {} flagged (requirement {} {}); second look {}; unchanged shapes flagged {} / {}",
        rate(r.flagged, r.changed),
        if at_most { "≤" } else { "≥" },
        pct(target),
        pct(r.second_looks as f64 / r.changed as f64),
        r.false_alarms,
        r.unchanged
    );
    assert!(
        consistent(r.flagged, r.changed, target, at_most),
        "{name}: {r:?}"
    );
    assert!(
        consistent(r.false_alarms, r.unchanged, 0.001, true),
        "{name}: {r:?}"
    );
}

const CAND_BAD: Forced = Forced {
    cand_per_stage: true,
    base_in_stage1: false,
};
const BASE_BAD: Forced = Forced {
    cand_per_stage: false,
    base_in_stage1: true,
};

#[test]
fn aa_flags_at_most_a_tenth_of_a_percent() {
    let runs = count(250, 4000);
    let (r, _) = shipped_rates(ISSUE_19, 0.0, Forced::default(), runs, 1);
    eprintln!("A/A: {} shapes flagged", rate(r.false_alarms, r.unchanged));
    // 3,250 comparisons, none flagged: below 0.1% at 95% confidence.
    assert!(
        consistent(r.false_alarms, r.unchanged, 0.001, true),
        "{r:?}"
    );
    assert!(r.unchanged >= 3000 && r.false_alarms == 0, "{r:?}");
}

#[test]
fn a_true_change_of_the_margin_is_flagged_at_most_5_percent() {
    requirement(ISSUE_19, "+2.0%", 0.02, Forced::default(), 0.05, true, 2);
    requirement(
        ISSUE_19,
        "+2.0%, one throttled candidate round per stage",
        0.02,
        CAND_BAD,
        0.10,
        true,
        3,
    );
}

#[test]
fn a_true_change_of_2_5_percent_is_flagged_at_least_95_percent() {
    requirement(ISSUE_19, "+2.5%", 0.025, Forced::default(), 0.95, false, 4);
}

#[test]
fn a_true_change_of_3_percent_is_flagged_at_least_99_percent() {
    requirement(ISSUE_19, "+3.0%", 0.03, Forced::default(), 0.99, false, 5);
    requirement(
        ISSUE_19,
        "+3.0%, one throttled base round",
        0.03,
        BASE_BAD,
        0.99,
        false,
        6,
    );
}

/// Issue 30's calibration table: its noise model ([`AUDIT`]) with the design it needs (8 →
/// 28 pairs), through the pipeline as it runs (`shipped`). Prints the table of
/// docs/DECIDING.md and asserts every requirement: no unchanged shape flagged in at least
/// 10,000, a true +2.0% flagged at most 5% (10% with one throttled candidate round per
/// stage), +2.5% at least 95%, +3% at least 99% (also with one throttled base round); each
/// with an exact binomial test at the 1% level.
#[test]
fn issue_30_calibration_table() {
    let runs = count(60, 10_000);
    let aa_runs = count(770, 10_000);
    let conditions: [(&str, f64, Forced, f64, bool); 7] = [
        ("A/A", 0.0, Forced::default(), 0.0, true),
        ("+2.0%", 0.02, Forced::default(), 0.05, true),
        (
            "+2.0%, one throttled candidate round per stage",
            0.02,
            CAND_BAD,
            0.10,
            true,
        ),
        ("+2.5%", 0.025, Forced::default(), 0.95, false),
        ("+3.0%", 0.03, Forced::default(), 0.99, false),
        (
            "+3.0%, one throttled base round",
            0.03,
            BASE_BAD,
            0.99,
            false,
        ),
        ("+4.0%", 0.04, Forced::default(), 0.99, false),
    ];
    let mut table = vec![
        format!(
            "issue 30's noise model, design {} → {} pairs, {SHAPES} shapes a run ({} changed), seeds 30001–30007",
            AUDIT_30.design.stage1,
            AUDIT_30.design.max,
            if full() { "one" } else { "all" }
        ),
        "| condition | changed shapes flagged [exact 95% interval] | requirement | second look | unchanged shapes flagged |".into(),
        "|---|---|---|---|---|".into(),
    ];
    let mut failed = Vec::new();
    for (k, (name, change, forced, target, at_most)) in conditions.into_iter().enumerate() {
        let n = if change == 0.0 { aa_runs } else { runs };
        let (r, _) = shipped_rates(AUDIT_30, change, forced, n, 30_001 + k as u64);
        let (k_flagged, n_shapes) = if change == 0.0 {
            (r.false_alarms, r.unchanged)
        } else {
            (r.flagged, r.changed)
        };
        let ok = if change == 0.0 {
            k_flagged == 0 && n_shapes >= 10_000
        } else {
            consistent(k_flagged, n_shapes, target, at_most)
        };
        if !ok || !consistent(r.false_alarms, r.unchanged, 0.001, true) {
            failed.push(name);
        }
        table.push(format!(
            "| {name} | {} | {} | {} | {} |",
            rate(k_flagged, n_shapes),
            if change == 0.0 {
                "none of ≥ 10,000".to_owned()
            } else {
                format!("{} {}", if at_most { "≤" } else { "≥" }, pct(target))
            },
            if change == 0.0 {
                pct(r.second_looks_unchanged as f64 / r.unchanged as f64)
            } else {
                pct(r.second_looks as f64 / r.changed as f64)
            },
            if r.unchanged == 0 {
                "—".to_owned()
            } else {
                format!("{} / {}", r.false_alarms, r.unchanged)
            }
        ));
    }
    eprintln!("\n{}", table.join("\n"));
    assert!(failed.is_empty(), "requirements not met: {failed:?}");
}

/// The change at which `power(change)` crosses `target`, by linear interpolation on a grid.
fn crossing(grid: &[(f64, f64)], target: f64) -> Option<f64> {
    grid.windows(2).find_map(|w| {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        (y0 < target && y1 >= target).then(|| x0 + (x1 - x0) * (target - y0) / (y1 - y0))
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    Sample::new(v).map_or(f64::NAN, |s| s.median())
}

#[test]
fn detectable_is_the_change_caught_with_80_percent_power() {
    // Issue 19's model with the shipped design, issue 30's with the design it needs.
    let runs = count(25, 3000);
    for (name, setting, seed) in [("issue 19", ISSUE_19, 100), ("issue 30", AUDIT_30, 200)] {
        let mut grid = Vec::new();
        let mut stated = Vec::new();
        for (k, change) in [0.022, 0.023, 0.024, 0.025, 0.026].into_iter().enumerate() {
            let (r, d) = shipped_rates(setting, change, Forced::default(), runs, seed + k as u64);
            grid.push((change, r.power()));
            stated.extend(d);
        }
        let simulated = crossing(&grid, 0.8).expect("80% power is crossed on the grid");
        let reported = median(stated);
        eprintln!(
            "{name}: power by change ({} comparisons each): {}\n80% power at {} simulated; \"Detectable\" median {}",
            runs * changed_per_run(),
            grid.iter()
                .map(|(c, p)| format!("{}: {}", pct(*c), pct(*p)))
                .collect::<Vec<_>>()
                .join(", "),
            pct(simulated),
            pct(reported)
        );
        assert!(
            (reported - simulated).abs() <= 0.002,
            "{name}: Detectable {reported} vs simulated {simulated}"
        );
    }
}

#[test]
fn the_table_rules_replay_the_shipped_one() {
    // The stats-level replay of the table, with the shipped rule's settings, gives the same
    // verdict as `evaluate` on every shape of the same data: the table measures the rule the
    // pipeline applies.
    // Both designs (8 → 24 and 8 → 28) and both noise models.
    let gate = GateSettings::default();
    assert_eq!(
        (SHIPPED.trim, SHIPPED.holm, SHIPPED.cliff),
        (0.2, false, false)
    );
    let mut master = ChaCha8Rng::seed_from_u64(7);
    let mut flagged = 0;
    for (k, change) in [0.0, 0.02, 0.025, 0.03]
        .into_iter()
        .cycle()
        .take(count(24, 200))
        .enumerate()
    {
        let forced = Forced {
            cand_per_stage: k % 3 == 1,
            base_in_stage1: k % 5 == 2,
        };
        let setting = if k % 2 == 0 { ISSUE_19 } else { AUDIT_30 };
        let mut shapes = draw_run(&mut master, setting, change, forced, SHAPES);
        let o = shipped(&mut shapes, &gate);
        let r = replay(SHIPPED, &mut shapes, &gate);
        assert_eq!(
            (&o.flagged, &o.second_look),
            (&r.flagged, &r.second_look),
            "run {k}, change {change}"
        );
        flagged += o.flagged.iter().filter(|f| **f).count();
    }
    assert!(
        flagged > 20,
        "the check must see regressions too: {flagged}"
    );
}

#[test]
fn a_second_look_without_a_split_alpha_would_not_be_calibrated() {
    // The same data at a true +2.0% judged as if each look were a fresh one-stage test at
    // full alpha (the old "measure more when inconclusive" loop): flagged when either look
    // flags. The rate rises above the planned design's: the split is doing work.
    let gate = GateSettings::default();
    let (m, a) = (gate.max_p50_regression, gate.alpha);
    let mut master = ChaCha8Rng::seed_from_u64(21);
    let (mut planned, mut peeking, mut n) = (0usize, 0usize, 0usize);
    for _ in 0..count(40, 1000) {
        let mut shapes = draw_run(&mut master, ISSUE_19, 0.02, Forced::default(), SHAPES);
        let o = shipped(&mut shapes, &gate);
        for (i, s) in shapes.iter_mut().enumerate() {
            let flag = |s: &mut AbShape, pairs: usize| {
                look(s, pairs, TRIM, m).test.lower_bound(a) > 1.0 + m
            };
            let first = flag(s, DESIGN.stage1 as usize);
            let second = o.second_look[i] && flag(s, DESIGN.max as usize);
            planned += usize::from(o.flagged[i]);
            peeking += usize::from(first || second);
            n += 1;
        }
    }
    eprintln!(
        "+2.0%: planned two-stage {}, peeking at full alpha {}",
        rate(planned, n),
        rate(peeking, n)
    );
    assert!(consistent(planned, n, 0.05, true), "{planned} / {n}");
    assert!(!consistent(peeking, n, 0.05, true), "{peeking} / {n}");
}

/// The designs of issue 30's table: how many pairs the second look goes to, and how alpha
/// is split between the looks.
const SPLITS: [(&str, f64, Option<f64>); 4] = [
    ("0.2/0.8 (shipped)", STAGE1_ALPHA_SHARE, Some(SETTLED_LEVEL)),
    ("0.1/0.9", 0.1, Some(SETTLED_LEVEL)),
    ("0.05/0.95", 0.05, Some(SETTLED_LEVEL)),
    // No first look at all: every shape measured to the last pair and tested once at the
    // full alpha — the most any split of this test can reach at that many pairs.
    ("one look at all pairs (no split)", 1e-9, Some(1e-9)),
];

#[test]
#[ignore = "prints the table that chose the design (issue 30); CI_GATE_CALIBRATION=full for its counts"]
fn table_of_designs() {
    let gate = GateSettings::default();
    let runs = count(100, 10_000);
    let cand_bad = Forced {
        cand_per_stage: true,
        ..Forced::default()
    };
    let base_bad = Forced {
        base_in_stage1: true,
        ..Forced::default()
    };
    let conditions: [(&str, f64, Forced); 6] = [
        ("A/A", 0.0, Forced::default()),
        ("+2.0%", 0.02, Forced::default()),
        ("+2.0%, 1 throttled cand round/stage", 0.02, cand_bad),
        ("+2.5%", 0.025, Forced::default()),
        ("+3.0%", 0.03, Forced::default()),
        ("+3.0%, 1 throttled base round", 0.03, base_bad),
    ];
    eprintln!(
        "\n{runs} runs of {SHAPES} shapes per cell, one shape changed, seeds 3000+; Yuen 20% trimmed; flagged (second looks of the changed shape)"
    );
    let names: Vec<&str> = conditions.iter().map(|c| c.0).collect();
    eprintln!(
        "| model | pairs | alpha split | {} | unchanged shapes flagged (second looks) |",
        names.join(" | ")
    );
    eprintln!("|---|---|---{}|---|", "|---".repeat(names.len()));
    let mut seed = 3000;
    for (model_name, model) in [("issue 30", AUDIT), ("issue 19", ISSUE)] {
        for max in [24, 28, 32] {
            let design = StageDesign { stage1: 8, max };
            let setting = Setting { model, design };
            let mut rows: Vec<Vec<String>> = SPLITS.iter().map(|_| Vec::new()).collect();
            let mut unchanged = vec![Rates::default(); SPLITS.len()];
            for (_, change, forced) in conditions {
                seed += 1;
                let mut master = ChaCha8Rng::seed_from_u64(seed);
                let mut rates = vec![Rates::default(); SPLITS.len()];
                for _ in 0..runs {
                    let mut shapes = draw_run(&mut master, setting, change, forced, 1);
                    for (i, (_, split, stop)) in SPLITS.iter().enumerate() {
                        let rule = Rule {
                            split: *split,
                            stop: *stop,
                            ..SHIPPED
                        };
                        let o = replay(rule, &mut shapes, &gate);
                        rates[i].add(&o, 1);
                    }
                }
                for (i, r) in rates.iter().enumerate() {
                    unchanged[i].unchanged += r.unchanged;
                    unchanged[i].false_alarms += r.false_alarms;
                    unchanged[i].second_looks_unchanged += r.second_looks_unchanged;
                    rows[i].push(format!(
                        "{} ({})",
                        pct(r.power()),
                        pct(r.second_looks as f64 / r.changed as f64)
                    ));
                }
            }
            for (i, row) in rows.iter().enumerate() {
                let u = unchanged[i];
                eprintln!(
                    "| {model_name} | 8 → {max} | {} | {} | {} / {} ({}) |",
                    SPLITS[i].0,
                    row.join(" | "),
                    u.false_alarms,
                    u.unchanged,
                    pct(u.second_looks_unchanged as f64 / u.unchanged as f64)
                );
            }
        }
    }
}

#[test]
#[ignore = "prints the table that chose the rule; CI_GATE_CALIBRATION=full for its counts"]
fn table_of_candidate_rules() {
    let gate = GateSettings::default();
    let runs = count(100, 30_000);
    let cand_bad = Forced {
        cand_per_stage: true,
        ..Forced::default()
    };
    let base_bad = Forced {
        base_in_stage1: true,
        ..Forced::default()
    };
    // A runner whose clock swings from pair to pair, both rounds of a pair alike (the power
    // cap swung heavy shapes by up to 15% back to back, docs/PERF.md): pairing cancels it,
    // unpaired statistics of the round medians (Cliff's δ) see it.
    let swinging = |sd: f64| Model {
        pair_sd: sd,
        ..ISSUE
    };
    let conditions: [(&str, f64, Forced, Model); 8] = [
        ("A/A", 0.0, Forced::default(), ISSUE),
        ("+2.0%", 0.02, Forced::default(), ISSUE),
        ("+2.0%, 1 throttled cand round/stage", 0.02, cand_bad, ISSUE),
        ("+2.5%", 0.025, Forced::default(), ISSUE),
        ("+3.0%", 0.03, Forced::default(), ISSUE),
        ("+3.0%, 1 throttled base round", 0.03, base_bad, ISSUE),
        (
            "+3.0%, pairs swing 5% (sd)",
            0.03,
            Forced::default(),
            swinging(0.05),
        ),
        (
            "+3.0%, pairs swing 15% (sd)",
            0.03,
            Forced::default(),
            swinging(0.15),
        ),
    ];
    let mut rows: Vec<Vec<String>> = RULES.iter().map(|r| vec![r.name.to_owned()]).collect();
    let mut unchanged = vec![(0usize, 0usize); RULES.len()];
    for (c, (_, change, forced, model)) in conditions.iter().enumerate() {
        let mut master = ChaCha8Rng::seed_from_u64(1000 + c as u64);
        let mut rates = vec![Rates::default(); RULES.len()];
        for _ in 0..runs {
            let setting = Setting {
                model: *model,
                design: DESIGN,
            };
            let mut shapes = draw_run(&mut master, setting, *change, *forced, 1);
            for (i, rule) in RULES.iter().enumerate() {
                let o = replay(*rule, &mut shapes, &gate);
                rates[i].add(&o, 1);
            }
        }
        for (i, r) in rates.iter().enumerate() {
            unchanged[i].0 += r.false_alarms;
            unchanged[i].1 += r.unchanged;
            rows[i].push(if c == 0 {
                format!("{} / {}", r.flagged, r.changed)
            } else {
                pct(r.power())
            });
        }
    }
    eprintln!(
        "\n{runs} runs of {SHAPES} shapes per condition, one shape changed, seeds 1000–1007, the issue's noise model, 8 → 24 pairs"
    );
    let names: Vec<&str> = conditions.iter().map(|c| c.0).collect();
    eprintln!(
        "| rule | changed shape {} | unchanged shapes flagged |",
        names.join(" | ")
    );
    eprintln!("|---{}|---|", "|---".repeat(names.len()));
    for (i, row) in rows.iter().enumerate() {
        eprintln!(
            "| {} | {} / {} |",
            row.join(" | "),
            unchanged[i].0,
            unchanged[i].1
        );
    }
}

// ---------------------------------------------------------------------------------------
// The stored-baseline path.

/// A stored baseline recorded from `processes` processes of `rounds` rounds each, and a
/// fresh candidate process of `DESIGN.max` rounds changed by `change`.
struct StoredCase {
    stored: StoredSide,
    cand: Vec<Vec<f64>>,
}

impl StoredCase {
    fn draw(noise: &mut Noise, processes: usize, change: f64) -> StoredCase {
        let center = 10f64.ln();
        let mut all = Vec::new();
        for _ in 0..processes {
            let shift = noise.model().process_sd * noise.z();
            for _ in 0..8 {
                all.push(noise.round(center + shift, SAMPLES, false));
            }
        }
        let process_rounds = vec![8; processes];
        let spread = process_spread(&Rounds::new(all.clone()).unwrap(), &process_rounds);
        let shift = noise.model().process_sd * noise.z();
        let cand = (0..DESIGN.max)
            .map(|_| noise.round(center + change.ln_1p() + shift, SAMPLES, false))
            .collect();
        StoredCase {
            stored: StoredSide::recorded(all, process_rounds, spread),
            cand,
        }
    }

    /// The gate as the pipeline runs it with the stored baseline deciding alone (no A/B):
    /// the planned two-stage design (`evaluate::open_shapes`) on the first 8 rounds, all of
    /// them where the first look leaves it open, then the one decision (`evaluate`).
    /// Flagged, and the "Detectable" stated.
    fn shipped(&self, gate: &GateSettings) -> (bool, f64) {
        let stored = |_: &ShapeResult| Some(self.stored.clone());
        let mut s = shape_result(0, DESIGN);
        s.samples_us = self.cand[..DESIGN.stage1 as usize].to_vec();
        if !open_shapes(std::slice::from_ref(&s), DESIGN, gate, stored)
            .unwrap()
            .is_empty()
        {
            s.samples_us = self.cand.clone();
        }
        let mut v = [s];
        evaluate(&mut v, stored, gate, Policy::default()).unwrap();
        (
            v[0].verdict == Verdict::Regression,
            v[0].stored.as_ref().map_or(f64::NAN, |c| c.min_detectable),
        )
    }

    /// The same design at the level of `stats`, with the spread `spread` (for the table of
    /// spread rules); `the_stored_table_replays_the_shipped_rule` checks it against
    /// `shipped`.
    fn replay(&self, spread: ProcessSpread, gate: &GateSettings) -> (bool, f64) {
        let (m, alpha, w) = (gate.max_p50_regression, gate.alpha, STAGE1_ALPHA_SHARE);
        let base = Rounds::new(self.stored.rounds.clone()).unwrap();
        let test = |n: usize| {
            let cand = Rounds::new(self.cand[..n].to_vec()).unwrap();
            stats::unpaired_margin_test(&base, &self.stored.process_rounds, &cand, spread, m)
                .unwrap()
        };
        let first = test(DESIGN.stage1 as usize);
        let a1 = w * alpha;
        if first.lower_bound(a1) > 1.0 + m {
            return (true, first.detectable(a1, 0.8));
        }
        if first.upper_bound(a1) < 1.0 - m
            || (first.upper_bound(a1) < 1.0 + m && first.lower_bound(a1) > 1.0 - m)
        {
            return (false, first.detectable(a1, 0.8));
        }
        let last = test(DESIGN.max as usize);
        let a2 = (1.0 - w) * alpha;
        (last.lower_bound(a2) > 1.0 + m, last.detectable(a2, 0.8))
    }
}

/// How a comparison takes the baseline's spread between processes, for the table that chose
/// how many processes a baseline is recorded from and how its estimate is used.
#[derive(Clone, Copy, Debug)]
enum SpreadRule {
    /// The estimate from the baseline's processes, with its k − 1 degrees of freedom.
    Estimated,
    /// The larger of the estimate and a floor (df k − 1).
    AtLeast(f64),
    /// A fixed value, as if known (infinite df): an assumed default.
    Fixed(f64),
}

impl SpreadRule {
    fn apply(self, estimate: Option<ProcessSpread>) -> ProcessSpread {
        let e = estimate.unwrap_or(ProcessSpread::ASSUMED);
        match self {
            SpreadRule::Estimated => e,
            SpreadRule::AtLeast(sd) => ProcessSpread {
                sd: e.sd.max(sd),
                df: e.df,
            },
            SpreadRule::Fixed(sd) => ProcessSpread {
                sd,
                df: f64::INFINITY,
            },
        }
    }

    fn name(self) -> String {
        match self {
            SpreadRule::Estimated => "estimate".into(),
            SpreadRule::AtLeast(sd) => format!("max(estimate, {})", pct(sd)),
            SpreadRule::Fixed(sd) => format!("assumed {}", pct(sd)),
        }
    }
}

#[test]
fn the_stored_baseline_path_carries_the_process_spread() {
    // The issue's noise model, a baseline of 5 processes (what `baseline update` records).
    let gate = GateSettings::default();
    let trials = count(300, 4000);
    let rate = |change: f64, seed: u64| {
        let mut noise = Noise::new(seed, ISSUE);
        (0..trials)
            .filter(|_| StoredCase::draw(&mut noise, 5, change).shipped(&gate).0)
            .count()
    };
    let (aa, at_margin) = (rate(0.0, 31), rate(0.02, 32));
    eprintln!(
        "stored baseline of 5 processes: A/A {}, +2.0% {}",
        rate_text(aa, trials),
        rate_text(at_margin, trials)
    );
    assert!(consistent(aa, trials, 0.001, true), "{aa}");
    assert!(consistent(at_margin, trials, 0.05, true), "{at_margin}");
    // Without the spread (the old interval) the same design at +2.0% is flagged far more
    // often than 5%.
    let mut noise = Noise::new(33, ISSUE);
    let naive = (0..trials)
        .filter(|_| {
            let case = StoredCase::draw(&mut noise, 5, 0.02);
            case.replay(ProcessSpread::NONE, &gate).0
        })
        .count();
    eprintln!(
        "the same at +2.0% without the spread: {}",
        rate_text(naive, trials)
    );
    assert!(!consistent(naive, trials, 0.05, true), "{naive}");
}

#[test]
fn the_stored_table_replays_the_shipped_rule() {
    // With 5 processes the shipped comparison takes max(estimate, 0.2%): the stats-level
    // replay with that rule gives the same verdict as `evaluate` on the same data.
    let gate = GateSettings::default();
    let mut noise = Noise::new(41, ISSUE);
    let mut flagged = 0;
    for k in 0..count(60, 400) {
        let change = [0.0, 0.02, 0.03, 0.04][k % 4];
        let case = StoredCase::draw(&mut noise, 5, change);
        let spread = SpreadRule::AtLeast(0.002).apply(case.stored.spread);
        let (a, b) = (case.shipped(&gate), case.replay(spread, &gate));
        assert_eq!(a.0, b.0, "case {k}");
        assert!((a.1 - b.1).abs() < 1e-12, "case {k}: {a:?} {b:?}");
        flagged += usize::from(a.0);
    }
    assert!(flagged > 5, "{flagged}");
}

/// `k` of `n` as a rate with its 95% interval.
fn rate_text(k: usize, n: usize) -> String {
    rate(k, n)
}

#[test]
#[ignore = "prints the table that chose the baseline's processes; CI_GATE_CALIBRATION=full for its counts"]
fn table_of_baseline_processes() {
    let gate = GateSettings::default();
    let trials = count(100, 4000);
    eprintln!(
        "\n{trials} trials per cell: a baseline of k processes × 8 rounds, a fresh candidate process of 8 → 24 rounds, the stored baseline deciding; the issue's noise model with the process sd of the row; seeds from 5001"
    );
    eprintln!(
        "| process sd | k | spread taken as | A/A | +2.0% | +3.0% | +4.0% | Detectable (median) |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|");
    let mut seed = 5000;
    for process_sd in [0.001, 0.003, 0.005, 0.009] {
        let model = Model {
            process_sd,
            ..ISSUE
        };
        let mut rows: Vec<(String, SpreadRule)> = Vec::new();
        for k in [3, 5, 8] {
            for rule in [
                SpreadRule::Estimated,
                SpreadRule::AtLeast(0.002),
                SpreadRule::AtLeast(0.003),
            ] {
                rows.push((k.to_string(), rule));
            }
        }
        for sd in [0.005, 0.01] {
            rows.push(("—".into(), SpreadRule::Fixed(sd)));
        }
        for (k, rule) in rows {
            let processes = k.parse().unwrap_or(5);
            let mut cells = Vec::new();
            let mut detectable = Vec::new();
            for change in [0.0, 0.02, 0.03, 0.04] {
                seed += 1;
                let mut noise = Noise::new(seed, model);
                let mut flagged = 0;
                for _ in 0..trials {
                    let case = StoredCase::draw(&mut noise, processes, change);
                    let (f, d) = case.replay(rule.apply(case.stored.spread), &gate);
                    flagged += usize::from(f);
                    if change == 0.0 {
                        detectable.push(d);
                    }
                }
                cells.push(pct(flagged as f64 / trials as f64));
            }
            eprintln!(
                "| {} | {k} | {} | {} | {} |",
                pct(process_sd),
                rule.name(),
                cells.join(" | "),
                pct(median(detectable))
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Sample files of i.i.d. values (no rounds): the p50 ratio with the bootstrap.

/// `n` i.i.d. values: a lognormal bulk (sd 1%) around `center`, and a share `tail` of slow
/// values 5–30% above it.
fn iid_values(noise: &mut Noise, n: usize, center: f64, tail: f64) -> Vec<Vec<f64>> {
    (0..n)
        .map(|_| {
            let mut x = center * (0.01 * noise.z()).exp();
            if noise.chance(tail) {
                x *= 1.0 + noise.uniform(0.05, 0.30);
            }
            vec![x]
        })
        .collect()
}

/// How often `compare BASE CAND` of two files of 500 i.i.d. values flags a regression, the
/// candidate's bulk scaled by `bulk` and its tail share `tail` (the base's is 10%), with
/// the spread between the files' processes given as `process_sd`.
fn iid_flag_rate(bulk: f64, tail: f64, process_sd: f64, trials: usize, seed: u64) -> usize {
    // 2,000 resamples (gate.bootstrap_resamples) keep this fast in a debug build.
    let gate = GateSettings {
        bootstrap_resamples: 2000,
        ..GateSettings::default()
    };
    let mut noise = Noise::new(seed, ISSUE);
    (0..trials)
        .filter(|_| {
            let base = iid_values(&mut noise, 500, 10.0, 0.10);
            let cand = iid_values(&mut noise, 500, 10.0 * bulk, tail);
            let stored = StoredSide {
                given_sd: Some(process_sd),
                values: true,
                ..StoredSide::recorded(base, Vec::new(), None)
            };
            let mut s = ShapeResult::new(ShapeParams::new(1, 1, 1, 64, false, Dtype::Float16));
            s.samples_us = cand;
            let mut v = [s];
            evaluate(&mut v, |_| Some(stored.clone()), &gate, Policy::default()).unwrap();
            assert_eq!(
                v[0].stored.as_ref().unwrap().method,
                ci_gate::comparison::Method::MedianBootstrap
            );
            v[0].verdict == Verdict::Regression
        })
        .count()
}

#[test]
fn iid_files_are_judged_on_their_p50() {
    let trials = count(150, 2000);
    // The tail grows from 10% to 29% of the values: the p50 moves +0.4%, the mean +3%.
    let tail_only = iid_flag_rate(1.0, 0.29, 0.0, trials, 51);
    // The bulk 3% slower, the slow tail gone: the p50 moves +2.8%.
    let bulk = iid_flag_rate(1.03, 0.0, 0.0, trials, 52);
    // The same with the conservative default spread between two processes (1%): an
    // honest "not confidently above +2%".
    let bulk_default = iid_flag_rate(1.03, 0.0, ProcessSpread::ASSUMED.sd, trials, 53);
    eprintln!(
        "i.i.d. files of 500 values, the two from one process: tail-only change (p50 +0.4%) {}; bulk +3% without the tail (p50 +2.8%) {}; the latter with the default 1% spread between processes {}",
        rate(tail_only, trials),
        rate(bulk, trials),
        rate(bulk_default, trials)
    );
    assert!(consistent(tail_only, trials, 0.05, true), "{tail_only}");
    assert!(consistent(bulk, trials, 0.80, false), "{bulk}");
    assert!(bulk_default < bulk, "{bulk_default} vs {bulk}");
}

/// How often `compare BASE CAND` of two files of `n` i.i.d. values (fewer than 30: the
/// Hodges–Lehmann path) flags a regression: the base with a slow tail of 10%, the
/// candidate's values all scaled by `scale` with a slow tail of `tail`, both from one
/// process unless `process_sd` says otherwise.
fn small_iid_flag_rate(
    n: usize,
    scale: f64,
    tail: f64,
    process_sd: f64,
    trials: usize,
    seed: u64,
) -> usize {
    let gate = GateSettings::default();
    let mut noise = Noise::new(seed, ISSUE);
    (0..trials)
        .filter(|_| {
            let base = iid_values(&mut noise, n, 10.0, 0.10);
            let cand = iid_values(&mut noise, n, 10.0 * scale, tail);
            let stored = StoredSide {
                given_sd: Some(process_sd),
                values: true,
                ..StoredSide::recorded(base, Vec::new(), None)
            };
            let mut s = ShapeResult::new(ShapeParams::new(1, 1, 1, 64, false, Dtype::Float16));
            s.samples_us = cand;
            let mut v = [s];
            evaluate(&mut v, |_| Some(stored.clone()), &gate, Policy::default()).unwrap();
            assert_eq!(
                v[0].stored.as_ref().unwrap().method,
                ci_gate::comparison::Method::HodgesLehmann
            );
            v[0].verdict == Verdict::Regression
        })
        .count()
}

#[test]
fn small_iid_files_are_judged_by_the_shift_at_its_level() {
    // Issue 30: fewer than 30 values a side, the Hodges–Lehmann shift with its exact
    // Mann–Whitney bound. Its level is exact for a shift: a true +2.0% (every value × 1.02)
    // is flagged at most 5% of the time, a true +0% never; a tail-only change (the slow
    // share 10% → 30%: the p50 moves about +0.5%) is not read as a regression; a +6% shift
    // is caught; the default 1% spread between processes makes +4% not confidently above.
    let trials = count(400, 4000);
    let aa = small_iid_flag_rate(20, 1.0, 0.10, 0.0, trials, 61);
    let at_margin = small_iid_flag_rate(20, 1.02, 0.10, 0.0, trials, 62);
    let tail_only = small_iid_flag_rate(20, 1.0, 0.30, 0.0, trials, 63);
    let shift6 = small_iid_flag_rate(20, 1.06, 0.10, 0.0, trials, 64);
    let shift4_default = small_iid_flag_rate(20, 1.04, 0.10, ProcessSpread::ASSUMED.sd, trials, 65);
    eprintln!(
        "i.i.d. files of 20 values, Hodges–Lehmann with the exact bound: A/A {}; +2.0% shift {}; tail-only (10% → 30% slow) {}; +6% shift {}; +4% shift with the default 1% spread {}",
        rate(aa, trials),
        rate(at_margin, trials),
        rate(tail_only, trials),
        rate(shift6, trials),
        rate(shift4_default, trials)
    );
    assert_eq!(aa, 0);
    assert!(consistent(at_margin, trials, 0.05, true), "{at_margin}");
    assert!(consistent(tail_only, trials, 0.05, true), "{tail_only}");
    assert!(consistent(shift6, trials, 0.95, false), "{shift6}");
    assert!(
        consistent(shift4_default, trials, 0.05, true),
        "{shift4_default}"
    );
}
