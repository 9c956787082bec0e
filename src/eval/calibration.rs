//! The evaluator's error rates by seeded simulation: the gate's own pipeline
//! (`Run::measure_with`: parity, the A/B pairs under the planned two-stage design,
//! `evaluate::open_shapes`) on the simulated GPU (`sim::SimBackend`, its noise model),
//! each measurement a "process" of its own seed, then [`judge`] (the candidate's verdict and
//! the seeds' rule) — and for acceptance, the two confirming measurements, each a fresh seed.
//!
//! What it estimates, per candidate of 4 shapes all changed by the same factor: the share
//! called `faster`, the share meeting the rule once, and the share accepted (the rule in the
//! first measurement and in both confirmations). The costly error is a false `faster` or a
//! false acceptance: a candidate rewarded for a speed-up it does not have.
//!
//! CI runs reduced counts (`eval::calibration::` in `cargo test --lib`); the tables of
//! docs/EVAL.md come from
//! `CI_GATE_CALIBRATION=full cargo test --release --lib eval::calibration -- --include-ignored --nocapture`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::judge::{Rule, judge};
use super::protocol::Verdict;
use crate::cli::ConfigArgs;
use crate::config::Config;
use crate::run::{BackendChoice, BaseKernels, Run, RunRequest};
use crate::sim::{NoiseModel, SimBackend, SimKernel};

/// The design of `configs/eval.yaml` (and its measuring settings): what is calibrated.
const EVAL_CONFIG: &str = include_str!("../../configs/eval.yaml");

/// Issue 30's audit model (`tests/it/calibration.rs`, `AUDIT`): a normal pair term of 0.3%,
/// normal within-round noise; otherwise issue 19's.
const AUDIT: NoiseModel = NoiseModel {
    round_sd: 0.003 * std::f64::consts::FRAC_1_SQRT_2,
    round_df: f64::INFINITY,
    within_df: f64::INFINITY,
    ..NoiseModel::ISSUE
};

fn full() -> bool {
    std::env::var("CI_GATE_CALIBRATION").is_ok_and(|v| v == "full")
}

fn config() -> Config {
    Config::parse(EVAL_CONFIG, Path::new("configs/eval.yaml")).expect("configs/eval.yaml")
}

/// One measurement of a candidate `factor` times the reference's time, in a simulated
/// process of seed `seed`.
fn measure(config: &Config, model: NoiseModel, factor: f64, seed: u64) -> (Verdict, bool) {
    let base = SimKernel::parse("", "base").expect("a plain kernel");
    let cand =
        SimKernel::parse(&format!("// ci-gate-sim: factor={factor}"), "cand").expect("a factor");
    let mut backend = SimBackend::new(seed, model, Some(base), cand);
    let request = RunRequest {
        base: Some(BaseKernels {
            dir: PathBuf::from("."),
            source: "simulated".into(),
            commit: None,
        }),
        compare: false,
        peers: false,
        trace_drift: false,
        ..RunRequest::gate(&ConfigArgs {
            config: PathBuf::from("configs/eval.yaml"),
            kernels: PathBuf::from("."),
            baselines: PathBuf::from("."),
        })
    };
    let run = Run::with_config(request, config.clone(), BackendChoice::Simulated { seed })
        .expect("the calibration's run");
    let results = run
        .measure_with(&mut backend, Instant::now())
        .expect("a simulated run");
    let names: Vec<String> = config.shapes.iter().map(|s| s.name()).collect();
    let j = judge(&results, &names, &Rule::of(config));
    (j.verdict, j.meets_rule)
}

/// Shares over `trials` candidates: called faster, meeting the rule once, accepted.
#[derive(Debug, Default)]
struct Rates {
    trials: usize,
    faster: usize,
    slower: usize,
    meets: usize,
    accepted: usize,
}

impl Rates {
    fn share(n: usize, of: usize) -> f64 {
        n as f64 / of.max(1) as f64
    }
}

fn rates(model: NoiseModel, factor: f64, trials: usize, seed: u64) -> Rates {
    let config = config();
    let mut r = Rates {
        trials,
        ..Rates::default()
    };
    for t in 0..trials as u64 {
        let s = seed.wrapping_mul(1_000_003).wrapping_add(3 * t);
        let (verdict, meets) = measure(&config, model, factor, s);
        r.faster += usize::from(verdict == Verdict::Faster);
        r.slower += usize::from(verdict == Verdict::Slower);
        if meets {
            r.meets += 1;
            let confirmed = (1..=2).all(|k| measure(&config, model, factor, s + k).1);
            r.accepted += usize::from(confirmed);
        }
    }
    r
}

/// The exact one-sided 95% upper bound of a binomial share (the upper end of the two-sided
/// 90% Clopper–Pearson interval), for "at most".
fn upper95(k: usize, n: usize) -> f64 {
    crate::stats::binomial_interval(k as u64, n as u64, 0.90).map_or(1.0, |i| i.high)
}

#[test]
fn a_candidate_no_faster_than_its_reference_is_never_called_faster_or_accepted() {
    let trials = if full() { 2000 } else { 40 };
    let r = rates(NoiseModel::ISSUE, 1.0, trials, 1);
    assert_eq!(r.accepted, 0, "{r:?}");
    assert!(Rates::share(r.faster, r.trials) <= 0.05, "{r:?}");
    assert!(Rates::share(r.slower, r.trials) <= 0.05, "{r:?}");
}

#[test]
fn a_clear_win_is_accepted() {
    let trials = if full() { 1000 } else { 20 };
    let r = rates(NoiseModel::ISSUE, 0.95, trials, 2);
    assert!(Rates::share(r.accepted, r.trials) >= 0.9, "{r:?}");
    assert_eq!(r.faster, r.trials, "{r:?}");
}

/// The tables of docs/EVAL.md, "Error rates".
#[test]
#[ignore = "prints the calibration tables (CI_GATE_CALIBRATION=full for their counts)"]
fn print_the_calibration_tables() {
    let trials = if full() { 2000 } else { 30 };
    println!(
        "| model | candidate ÷ reference (all 4 shapes) | trials | `faster` | meets the rule once | accepted (3 measurements) | accepted, 95% upper bound |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (name, model) in [("issue 19", NoiseModel::ISSUE), ("issue 30 audit", AUDIT)] {
        for (i, factor) in [1.0, 0.98, 0.975, 0.97, 0.965, 0.96, 0.95]
            .into_iter()
            .enumerate()
        {
            let r = rates(model, factor, trials, 100 + i as u64);
            println!(
                "| {name} | {factor} | {} | {:.2}% | {:.2}% | {:.2}% | {:.2}% |",
                r.trials,
                100.0 * Rates::share(r.faster, r.trials),
                100.0 * Rates::share(r.meets, r.trials),
                100.0 * Rates::share(r.accepted, r.trials),
                100.0 * upper95(r.accepted, r.trials)
            );
        }
    }
}
