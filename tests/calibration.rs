//! Calibration of the gate by seeded simulation: the decision path the pipeline runs
//! (`evaluate`, the planned second look through `needs_second_look`, `evaluate` again, and
//! the one rule in `verdict::decide`) on timings drawn from the noise model of issue 19:
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
//! Requirements (DESIGN.md, "Statistics"; issue 19): A/A ≤ 0.1% of shapes flagged; a true
//! +2.0% ≤ 5% (≤ 10% with one throttled candidate round per stage); +2.5% ≥ 95% per shape;
//! +3% ≥ 99% (also with one throttled base round); "Detectable" within 0.2 points of the
//! simulated 80%-power change. Plus the stored-baseline path and i.i.d. sample files.
//!
//! CI runs reduced counts (a few seconds each in a debug build). The counts of the tables in
//! docs/PERF.md: `CI_GATE_CALIBRATION=full cargo test --release --test calibration --
//! --include-ignored --nocapture` (the ignored tests print the tables that chose the rule and
//! the number of baseline processes; they also run, at reduced counts, with
//! `--include-ignored` alone).

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal, StudentT};

use ci_gate::comparison::StoredSide;
use ci_gate::config::{CacheMode, Dtype, GateSettings, ShapeParams};
use ci_gate::evaluate::{evaluate, needs_second_look};
use ci_gate::results::{MeasurementInfo, ShapeResult, StageDesign};
use ci_gate::stats::{
    self, MarginTest, ProcessSpread, Rounds, STAGE1_ALPHA_SHARE, Sample, cliffs_delta,
    paired_margin_test_trimmed, process_spread, round_medians, two_stage_p,
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
const DESIGN: StageDesign = StageDesign { stage1: 8, max: 24 };

/// The noise model (see the module docs); all sds are of the log time.
#[derive(Clone, Copy, Debug)]
struct Model {
    process_sd: f64,
    drift_sd: f64,
    /// A level shared by the two rounds of a pair, drawn afresh for each pair (a clock the
    /// power cap swings, moving both sides of an alternated pair alike); 0 in the issue's
    /// model.
    pair_sd: f64,
    round_sd: f64,
    round_df: f64,
    within_sd: f64,
    within_df: f64,
    outliers: f64,
    throttled: f64,
    samples: usize,
}

const ISSUE: Model = Model {
    process_sd: 0.003,
    drift_sd: 0.001,
    pair_sd: 0.0,
    round_sd: 0.002,
    round_df: 3.0,
    within_sd: 0.01,
    within_df: 5.0,
    outliers: 0.02,
    throttled: 0.02,
    samples: 10,
};

struct Noise {
    rng: ChaCha8Rng,
    normal: Normal<f64>,
    round_t: StudentT<f64>,
    within_t: StudentT<f64>,
    model: Model,
}

impl Noise {
    /// A t variate with `df` degrees of freedom scaled to unit variance.
    fn unit_t(&mut self, heavy: bool) -> f64 {
        let (t, df) = if heavy {
            (&self.round_t, self.model.round_df)
        } else {
            (&self.within_t, self.model.within_df)
        };
        t.sample(&mut self.rng) * ((df - 2.0) / df).sqrt()
    }

    fn new(seed: u64, model: Model) -> Noise {
        Noise {
            rng: ChaCha8Rng::seed_from_u64(seed),
            normal: Normal::new(0.0, 1.0).unwrap(),
            round_t: StudentT::new(model.round_df).unwrap(),
            within_t: StudentT::new(model.within_df).unwrap(),
            model,
        }
    }

    fn z(&mut self) -> f64 {
        self.normal.sample(&mut self.rng)
    }

    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.rng.random::<f64>()
    }

    /// One round around `level` (log scale): its own heavy-tailed shift, throttled with the
    /// model's probability or when `throttle` says so.
    fn round(&mut self, level: f64, throttle: bool) -> Vec<f64> {
        let m = self.model;
        let mut level = level + m.round_sd * self.unit_t(true);
        if throttle || self.rng.random::<f64>() < m.throttled {
            level += self.uniform(0.03, 0.08).ln_1p();
        }
        (0..m.samples)
            .map(|_| {
                let mut x = (level + m.within_sd * self.unit_t(false)).exp();
                if self.rng.random::<f64>() < m.outliers {
                    x *= 1.0 + self.uniform(0.05, 0.30);
                }
                x
            })
            .collect()
    }
}

/// Rounds forced to be throttled, besides the model's random ones.
#[derive(Clone, Copy, Debug, Default)]
struct Forced {
    /// One base round in the first stage.
    base_in_stage1: bool,
    /// One candidate round in each stage.
    cand_per_stage: bool,
}

/// One shape's A/B pairs, all `DESIGN.max` of them drawn up front (the second stage uses
/// them only where the rule asks for it), so every rule sees the same data.
struct AbShape {
    base: Vec<Vec<f64>>,
    cand: Vec<Vec<f64>>,
}

impl AbShape {
    fn draw(noise: &mut Noise, change: f64, center: f64, forced: Forced) -> AbShape {
        let (s1, max) = (DESIGN.stage1 as usize, DESIGN.max as usize);
        let process = noise.model.process_sd * noise.z();
        let pick =
            |noise: &mut Noise, lo: usize, hi: usize| lo + noise.rng.random_range(0..hi - lo);
        let base_bad = forced.base_in_stage1.then(|| pick(noise, 0, s1));
        let cand_bad = forced
            .cand_per_stage
            .then(|| (pick(noise, 0, s1), pick(noise, s1, max)));
        let mut drift = 0.0;
        let (mut base, mut cand) = (Vec::new(), Vec::new());
        for i in 0..max {
            drift += noise.model.drift_sd * noise.z();
            let level = center.ln() + process + drift + noise.model.pair_sd * noise.z();
            base.push(noise.round(level, base_bad == Some(i)));
            let bad = cand_bad.is_some_and(|(a, b)| a == i || b == i);
            cand.push(noise.round(level + change.ln_1p(), bad));
        }
        AbShape { base, cand }
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
    });
    s
}

/// What one run of 13 shapes (shape 0 changed) gave under one rule.
#[derive(Clone, Copy, Debug, Default)]
struct Outcome {
    /// The changed shape was flagged as a regression.
    flagged: bool,
    /// Unchanged shapes flagged as regressions.
    false_alarms: usize,
    /// The changed shape got the second stage.
    second_look: bool,
    /// "Detectable" of the changed shape as the report states it (shipped rule only).
    detectable: f64,
}

/// The gate as the pipeline runs it: `evaluate` on the first stage, more pairs where
/// `needs_second_look` asks, `evaluate` again.
fn shipped(shapes: &[AbShape], gate: &GateSettings) -> Outcome {
    let s1 = DESIGN.stage1 as usize;
    let mut results: Vec<ShapeResult> = (0..shapes.len())
        .map(|i| {
            let mut r = shape_result(i, DESIGN);
            r.samples_us = shapes[i].cand[..s1].to_vec();
            r.base_samples_us = shapes[i].base[..s1].to_vec();
            r
        })
        .collect();
    evaluate(&mut results, |_| None, gate, Policy::default()).unwrap();
    let mut second = false;
    for (i, r) in results.iter_mut().enumerate() {
        if needs_second_look(r, gate) {
            r.samples_us = shapes[i].cand.clone();
            r.base_samples_us = shapes[i].base.clone();
            second |= i == 0;
        }
    }
    evaluate(&mut results, |_| None, gate, Policy::default()).unwrap();
    Outcome {
        flagged: results[0].verdict == Verdict::Regression,
        false_alarms: results[1..]
            .iter()
            .filter(|s| s.verdict == Verdict::Regression)
            .count(),
        second_look: second,
        detectable: results[0]
            .ab
            .as_ref()
            .map_or(f64::NAN, |c| c.min_detectable),
    }
}

/// A candidate rule for the table that chose the shipped one: the trimming of the paired
/// test, Holm across the shapes of a run, and Cliff's δ of the round medians ≥ small, each
/// on or off. It follows the pipeline's design (alpha split 0.2/0.8, a second look where a
/// one-sided bound of the first still reaches past ±m) at the level of `stats`; with
/// `trim: 0.2` and the rest off it is the shipped rule, and `the_table_rules_replay_the_
/// shipped_one` checks that it gives the same verdicts as `evaluate` on the same data.
#[derive(Clone, Copy, Debug)]
struct Rule {
    name: &'static str,
    trim: f64,
    holm: bool,
    cliff: bool,
}

const RULES: [Rule; 7] = [
    Rule {
        name: "Student t (before)",
        trim: 0.0,
        holm: false,
        cliff: false,
    },
    Rule {
        name: "Student t + Holm + Cliff's δ ≥ small (the old rule)",
        trim: 0.0,
        holm: true,
        cliff: true,
    },
    Rule {
        name: "Yuen 10% trimmed",
        trim: 0.1,
        holm: false,
        cliff: false,
    },
    Rule {
        name: "Yuen 20% trimmed (shipped)",
        trim: 0.2,
        holm: false,
        cliff: false,
    },
    Rule {
        name: "Yuen 25% trimmed",
        trim: 0.25,
        holm: false,
        cliff: false,
    },
    Rule {
        name: "Yuen 20% + Holm over 13 shapes",
        trim: 0.2,
        holm: true,
        cliff: false,
    },
    Rule {
        name: "Yuen 20% + Cliff's δ ≥ small",
        trim: 0.2,
        holm: false,
        cliff: true,
    },
];

/// One look of a rule at the first `n` pairs of a shape.
struct Look {
    test: MarginTest,
    cliff: f64,
}

fn look(shape: &AbShape, n: usize, trim: f64, m: f64) -> Look {
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
    let (m, alpha, w) = (gate.max_p50_regression, gate.alpha, STAGE1_ALPHA_SHARE);
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
fn replay(rule: Rule, shapes: &[AbShape], gate: &GateSettings) -> (Outcome, Vec<bool>) {
    let (m, s1, max) = (
        gate.max_p50_regression,
        DESIGN.stage1 as usize,
        DESIGN.max as usize,
    );
    let mut looks: Vec<Vec<Look>> = shapes
        .iter()
        .map(|s| vec![look(s, s1, rule.trim, m)])
        .collect();
    let first = rule_verdicts(rule, &looks, gate);
    let a1 = STAGE1_ALPHA_SHARE * gate.alpha;
    for (i, l) in looks.iter_mut().enumerate() {
        let (slow, fast) = first[i];
        let t = &l[0].test;
        if !slow && !fast && (t.upper_bound(a1) >= 1.0 + m || t.lower_bound(a1) <= 1.0 - m) {
            l.push(look(&shapes[i], max, rule.trim, m));
        }
    }
    let verdicts = rule_verdicts(rule, &looks, gate);
    let flags: Vec<bool> = verdicts.iter().map(|v| v.0).collect();
    (
        Outcome {
            flagged: flags[0],
            false_alarms: flags[1..].iter().filter(|f| **f).count(),
            second_look: looks[0].len() == 2,
            detectable: f64::NAN,
        },
        flags,
    )
}

/// Rates over `runs` runs of 13 shapes, shape 0 changed by `change`.
#[derive(Clone, Copy, Debug, Default)]
struct Rates {
    runs: usize,
    flagged: usize,
    false_alarms: usize,
    second_looks: usize,
}

impl Rates {
    fn add(&mut self, o: Outcome) {
        self.runs += 1;
        self.flagged += usize::from(o.flagged);
        self.false_alarms += o.false_alarms;
        self.second_looks += usize::from(o.second_look);
    }
    fn power(&self) -> f64 {
        self.flagged as f64 / self.runs as f64
    }
}

fn draw_run(noise: &mut Noise, change: f64, forced: Forced) -> Vec<AbShape> {
    (0..SHAPES)
        .map(|i| {
            let (c, f) = if i == 0 {
                (change, forced)
            } else {
                (0.0, Forced::default())
            };
            AbShape::draw(noise, c, 10.0 * (1.0 + i as f64), f)
        })
        .collect()
}

/// The shipped rule through `evaluate` over `runs` runs; also every reported "Detectable" of
/// the changed shape.
fn shipped_rates(change: f64, forced: Forced, runs: usize, seed: u64) -> (Rates, Vec<f64>) {
    let gate = GateSettings::default();
    let mut noise = Noise::new(seed, ISSUE);
    let mut rates = Rates::default();
    let mut detectable = Vec::with_capacity(runs);
    for _ in 0..runs {
        let o = shipped(&draw_run(&mut noise, change, forced), &gate);
        detectable.push(o.detectable);
        rates.add(o);
    }
    (rates, detectable)
}

fn pct(x: f64) -> String {
    format!("{:.2}%", 100.0 * x)
}

#[test]
fn the_shipped_rule_meets_the_requirements_of_issue_19() {
    let runs = count(300, 4000);
    let (aa, _) = shipped_rates(0.0, Forced::default(), runs, 1);
    let (margin, _) = shipped_rates(0.02, Forced::default(), runs, 2);
    let cand_bad = Forced {
        cand_per_stage: true,
        ..Forced::default()
    };
    let (margin_bad, _) = shipped_rates(0.02, cand_bad, runs, 3);
    let (above, _) = shipped_rates(0.025, Forced::default(), runs, 4);
    let (well_above, _) = shipped_rates(0.03, Forced::default(), runs, 5);
    let base_bad = Forced {
        base_in_stage1: true,
        ..Forced::default()
    };
    let (well_above_bad, _) = shipped_rates(0.03, base_bad, runs, 6);
    // Unchanged shapes of every condition count as A/A comparisons.
    let unchanged: usize = [aa, margin, margin_bad, above, well_above, well_above_bad]
        .iter()
        .map(|r| r.false_alarms)
        .sum();
    let aa_total = 6 * runs * (SHAPES - 1) + runs;
    let aa_flagged = unchanged + aa.flagged;
    eprintln!(
        "shipped rule, {runs} runs of {SHAPES} shapes per condition (8 → 24 pairs):\n  A/A {aa_flagged} / {aa_total}\n  +2.0% {} (one throttled candidate round per stage: {})\n  +2.5% {} (second look {})\n  +3.0% {} (one throttled base round: {})",
        pct(margin.power()),
        pct(margin_bad.power()),
        pct(above.power()),
        pct(above.second_looks as f64 / runs as f64),
        pct(well_above.power()),
        pct(well_above_bad.power()),
    );
    assert!(
        (aa_flagged as f64) <= 0.001 * aa_total as f64,
        "A/A: {aa_flagged} of {aa_total}"
    );
    assert!(margin.power() <= 0.05, "{margin:?}");
    assert!(margin_bad.power() <= 0.10, "{margin_bad:?}");
    assert!(above.power() >= 0.95, "{above:?}");
    assert!(well_above.power() >= 0.99, "{well_above:?}");
    assert!(well_above_bad.power() >= 0.99, "{well_above_bad:?}");
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
    let runs = count(200, 3000);
    let mut grid = Vec::new();
    let mut stated = Vec::new();
    for (k, change) in [0.021, 0.022, 0.023, 0.024, 0.025, 0.026, 0.027, 0.028]
        .into_iter()
        .enumerate()
    {
        let (r, d) = shipped_rates(change, Forced::default(), runs, 100 + k as u64);
        grid.push((change, r.power()));
        stated.extend(d);
    }
    let simulated = crossing(&grid, 0.8).expect("80% power is crossed on the grid");
    let reported = median(stated);
    eprintln!(
        "power by change ({runs} runs each): {}\n80% power at {} simulated; \"Detectable\" median {}",
        grid.iter()
            .map(|(c, p)| format!("{}: {}", pct(*c), pct(*p)))
            .collect::<Vec<_>>()
            .join(", "),
        pct(simulated),
        pct(reported)
    );
    assert!(
        (reported - simulated).abs() <= 0.002,
        "Detectable {reported} vs simulated {simulated}"
    );
}

#[test]
fn the_table_rules_replay_the_shipped_one() {
    // The stats-level replay of the table, with the shipped rule's settings, gives the same
    // verdict as `evaluate` on every shape of the same data: the table measures the rule the
    // pipeline applies.
    let gate = GateSettings::default();
    let shipped_rule = RULES[3];
    assert_eq!(
        (shipped_rule.trim, shipped_rule.holm, shipped_rule.cliff),
        (0.2, false, false)
    );
    let mut noise = Noise::new(7, ISSUE);
    let mut flagged = 0;
    for (k, change) in [0.0, 0.02, 0.025, 0.03]
        .into_iter()
        .cycle()
        .take(count(40, 200))
        .enumerate()
    {
        let forced = Forced {
            cand_per_stage: k % 3 == 1,
            base_in_stage1: k % 5 == 2,
        };
        let shapes = draw_run(&mut noise, change, forced);
        let o = shipped(&shapes, &gate);
        let (r, _) = replay(shipped_rule, &shapes, &gate);
        assert_eq!(
            (o.flagged, o.false_alarms, o.second_look),
            (r.flagged, r.false_alarms, r.second_look),
            "run {k}, change {change}"
        );
        flagged += usize::from(o.flagged);
    }
    assert!(flagged > 5, "the check must see regressions too: {flagged}");
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
        let mut noise = Noise::new(1000 + c as u64, *model);
        let mut rates = vec![Rates::default(); RULES.len()];
        for _ in 0..runs {
            let shapes = draw_run(&mut noise, *change, *forced);
            for (i, rule) in RULES.iter().enumerate() {
                let (o, _) = replay(*rule, &shapes, &gate);
                rates[i].add(o);
            }
        }
        for (i, r) in rates.iter().enumerate() {
            unchanged[i].0 += r.false_alarms;
            unchanged[i].1 += r.runs * (SHAPES - 1);
            rows[i].push(if c == 0 {
                format!("{} / {}", r.flagged, r.runs)
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

/// A stored baseline recorded from `processes` processes of `rounds` rounds each.
fn stored_side(noise: &mut Noise, processes: usize, rounds: usize, center: f64) -> StoredSide {
    let mut all = Vec::new();
    for _ in 0..processes {
        let shift = noise.model.process_sd * noise.z();
        for _ in 0..rounds {
            all.push(noise.round(center.ln() + shift, false));
        }
    }
    let process_rounds = vec![rounds; processes];
    let spread = process_spread(&Rounds::new(all.clone()).unwrap(), &process_rounds);
    StoredSide {
        rounds: all,
        process_rounds,
        spread,
    }
}

/// One fresh candidate process of `rounds` rounds against a baseline of `processes`
/// processes, the stored baseline deciding (no A/B): whether it was flagged a regression.
fn stored_flags(
    noise: &mut Noise,
    processes: usize,
    change: f64,
    rounds: usize,
    gate: &GateSettings,
) -> bool {
    let stored = stored_side(noise, processes, 8, 10.0);
    let shift = noise.model.process_sd * noise.z();
    let mut s = shape_result(
        0,
        StageDesign {
            stage1: rounds as u32,
            max: rounds as u32,
        },
    );
    s.samples_us = (0..rounds)
        .map(|_| noise.round(10f64.ln() + change.ln_1p() + shift, false))
        .collect();
    let mut v = [s];
    evaluate(&mut v, |_| Some(stored.clone()), gate, Policy::default()).unwrap();
    v[0].verdict == Verdict::Regression
}

#[test]
fn the_stored_baseline_path_carries_the_process_spread() {
    let gate = GateSettings::default();
    let trials = count(300, 4000);
    let model = Model {
        throttled: 0.0,
        ..ISSUE
    };
    let rate = |processes: usize, change: f64, seed: u64| {
        let mut noise = Noise::new(seed, model);
        (0..trials)
            .filter(|_| stored_flags(&mut noise, processes, change, 24, &gate))
            .count() as f64
            / trials as f64
    };
    let aa = rate(5, 0.0, 31);
    let at_margin = rate(5, 0.02, 32);
    eprintln!(
        "stored baseline of 5 processes: A/A {}, +2.0% {}",
        pct(aa),
        pct(at_margin)
    );
    assert!(aa <= 0.001, "{aa}");
    assert!(at_margin <= 0.05, "{at_margin}");
    // Without the spread (the old interval) the same data at +2.0% is flagged far more often.
    let mut noise = Noise::new(33, model);
    let mut naive = 0usize;
    for _ in 0..trials {
        let mut s = stored_side(&mut noise, 5, 8, 10.0);
        s.spread = Some(ProcessSpread::NONE);
        s.process_rounds.clear();
        let shift = model.process_sd * noise.z();
        let mut c = shape_result(
            0,
            StageDesign {
                stage1: 24,
                max: 24,
            },
        );
        c.samples_us = (0..24)
            .map(|_| noise.round(10f64.ln() + 0.02f64.ln_1p() + shift, false))
            .collect();
        let mut v = [c];
        evaluate(&mut v, |_| Some(s.clone()), &gate, Policy::default()).unwrap();
        naive += usize::from(v[0].verdict == Verdict::Regression);
    }
    let naive = naive as f64 / trials as f64;
    eprintln!("the same at +2.0% without the spread: {}", pct(naive));
    assert!(naive > 0.10, "{naive}");
}

/// How a comparison takes the baseline's spread between processes, for the table that chose
/// how many processes a baseline is recorded from.
#[derive(Clone, Copy, Debug)]
enum SpreadRule {
    /// The estimate from the baseline's processes, with its k − 1 degrees of freedom.
    Estimated,
    /// The larger of the estimate and 0.5% (df k − 1).
    AtLeast(f64),
    /// A fixed value, as if known (infinite df).
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
}

/// A candidate (one fresh process, the design's 8 → 24 rounds) against a baseline of
/// `processes` × 8 rounds, the stored baseline deciding alone: flagged or not.
fn stored_run(
    noise: &mut Noise,
    processes: usize,
    change: f64,
    rule: SpreadRule,
    gate: &GateSettings,
) -> (bool, f64) {
    let mut stored = stored_side(noise, processes, 8, 10.0);
    stored.spread = Some(rule.apply(stored.spread));
    let shift = noise.model.process_sd * noise.z();
    let cand: Vec<Vec<f64>> = (0..DESIGN.max)
        .map(|_| noise.round(10f64.ln() + change.ln_1p() + shift, false))
        .collect();
    let mut s = shape_result(0, DESIGN);
    s.samples_us = cand[..DESIGN.stage1 as usize].to_vec();
    let mut v = [s];
    evaluate(&mut v, |_| Some(stored.clone()), gate, Policy::default()).unwrap();
    if needs_second_look(&v[0], gate) {
        v[0].samples_us = cand;
        evaluate(&mut v, |_| Some(stored.clone()), gate, Policy::default()).unwrap();
    }
    (
        v[0].verdict == Verdict::Regression,
        v[0].stored.as_ref().map_or(f64::NAN, |c| c.min_detectable),
    )
}

#[test]
#[ignore = "prints the table that chose the baseline's processes; CI_GATE_CALIBRATION=full for its counts"]
fn table_of_baseline_processes() {
    let gate = GateSettings::default();
    let trials = count(100, 4000);
    eprintln!(
        "\n{trials} trials per cell: a baseline of k processes × 8 rounds, a fresh candidate process of 8 → 24 rounds, the stored baseline deciding; the issue's noise model with the process sd of the row"
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
        for k in [3, 5, 8] {
            for (name, rule) in [
                ("estimate", SpreadRule::Estimated),
                ("max(estimate, 0.2%)", SpreadRule::AtLeast(0.002)),
                ("max(estimate, 0.3%)", SpreadRule::AtLeast(0.003)),
                ("max(estimate, 0.5%)", SpreadRule::AtLeast(0.005)),
            ] {
                let mut cells = Vec::new();
                let mut detectable = Vec::new();
                for change in [0.0, 0.02, 0.03, 0.04] {
                    seed += 1;
                    let mut noise = Noise::new(seed, model);
                    let mut flagged = 0;
                    for _ in 0..trials {
                        let (f, d) = stored_run(&mut noise, k, change, rule, &gate);
                        flagged += usize::from(f);
                        if change == 0.0 {
                            detectable.push(d);
                        }
                    }
                    cells.push(pct(flagged as f64 / trials as f64));
                }
                eprintln!(
                    "| {} | {k} | {name} | {} | {} |",
                    pct(process_sd),
                    cells.join(" | "),
                    pct(median(detectable))
                );
            }
        }
        let _ = SpreadRule::Fixed(0.0);
    }
}
