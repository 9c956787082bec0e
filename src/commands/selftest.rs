//! `ci-gate selftest`: the gate's operating curve on this runner, in one device call.
//!
//! Each trial is one fresh measuring process (`local` in a child, as a CI job would be) that
//! measures every shape in A/A — the same kernels on both sides — for the design's largest
//! number of pairs. The gate's own rule (the planned two-stage design: the first stage's
//! pairs, then all of them where the first look does not settle it) is then applied to those
//! very pairs as they are, and again with every candidate time multiplied by exactly 1.02,
//! 1.025 and 1.03 (`--scale`). The test works on log ratios of round medians, so it is
//! scale-equivariant: a scaled A/A is exactly a real slowdown of that size under this
//! runner's real noise, with no injection error (a spin kernel's added time overshot by 45%
//! on one shape). One run with a real injected slowdown (`--inject`, spin kernels in the
//! candidate's graphs) proves detection end to end. Optionally (`--stored-trials`) the
//! stored-baseline path: a baseline recorded from separate processes, and fresh processes
//! compared with it alone.
//!
//! The A/A trials also calibrate the host's clock's witness (`crate::witness`): no record is
//! rewritten in an A/A, so every shift it reads is this runner's honest noise. The largest,
//! as a share of the limit it is judged against, says how much room the limits leave on this
//! host; a shape the witness judged is one of its false alarms, and fails the selftest.

use std::time::Instant;

use anyhow::{Result, bail};
use serde::Serialize;

use crate::cli::{SelftestArgs, SelftestFormat};
use crate::outcome::Outcome;
use crate::report::{escape_markdown, fitted_table, stdout_width};
use crate::results::{ResultsFile, ShapeResult, StageDesign};
use crate::run::child;
use crate::run::{BaseKernels, Run, RunRequest};
use crate::verdict::{Policy, Verdict};

/// What the rule concluded on one condition: per shape, the runs flagged as a regression,
/// the runs that ended inconclusive, and how many pairs were used.
#[derive(Debug, Default, Serialize)]
struct Outcomes {
    flagged: u32,
    inconclusive: u32,
    second_looks: u32,
}

#[derive(Debug, Serialize)]
struct Condition {
    /// The candidate's times multiplied by this (1 = A/A).
    scale: f64,
    /// Per shape, in the order of `SelftestReport::shapes`.
    per_shape: Vec<Outcomes>,
    /// Shape comparisons flagged as a regression, over all.
    flagged: u32,
    comparisons: u32,
}

#[derive(Debug, Serialize)]
struct Injected {
    fraction: f64,
    /// Shapes whose verdict was `regression`.
    caught: u32,
    shapes: u32,
    /// Per shape: the measured round-median ratio − 1 with the injection.
    measured: Vec<Option<f64>>,
}

/// The largest of the witness's shifts in the A/A trials, against its limit.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct LargestShift {
    /// |shift| / limit (the limit of that test: the pair's, or twice it through the checks).
    share_of_limit: f64,
    shift_us: f64,
    limit_us: f64,
    shape: String,
    trial: u32,
}

/// What the host's clock's witness read in the A/A trials, where no record is rewritten.
#[derive(Debug, Default, PartialEq, Serialize)]
struct WitnessCalibration {
    /// A/A shapes whose results record the witness.
    witnessed: u32,
    /// Of those, the shapes it judged: its false alarms.
    judged: u32,
    /// The largest |shift| up to the end event, against the pair's limit.
    largest: Option<LargestShift>,
    /// The largest |shift| through the checks, against twice the limit.
    largest_through_checks: Option<LargestShift>,
}

#[derive(Debug, Serialize)]
struct SelftestReport {
    config: String,
    gpu: Option<String>,
    trials: u32,
    shapes: Vec<String>,
    /// Pairs per trial and shape (the design's largest), and the first stage's.
    pairs: u32,
    stage1: u32,
    /// A/A first, then each scale.
    conditions: Vec<Condition>,
    injected: Option<Injected>,
    witness: WitnessCalibration,
    stored_trials: u32,
    stored_false_alarms: Option<u32>,
    wall_s: f64,
}

pub(crate) fn run_selftest(args: &SelftestArgs) -> Result<Outcome> {
    check_args(args)?;
    let dir = child::scratch("ci-gate-selftest-")?;
    // Every trial: the candidate against itself in a fresh process, with nothing else
    // measured (the peers would only lengthen every trial: selftest measures the gate itself).
    let ab = Run::resolve(RunRequest {
        baselines: dir.path().join("no-baselines"),
        shapes: args.shapes.clone(),
        shard: args.shard,
        base: Some(BaseKernels {
            dir: args.config.kernels.clone(),
            source: format!("{} (A/A)", args.config.kernels.display()),
            commit: None,
        }),
        ab_always: true,
        compare: false,
        parity: false,
        peers: false,
        trace_drift: false,
        ..RunRequest::gate(&args.config)
    })?;
    let names = ab.shape_names();
    // The children measure exactly these shapes, of no shard of their own.
    let ab = ab.with(|r| {
        r.shapes = names.clone();
        r.shard = None;
    });
    let design = ab.design();
    let start = Instant::now();
    let (trials, gpu) = aa_trials(&ab, &dir, args.trials)?;
    let witness = witness_calibration(&trials);
    let scales: Vec<f64> = std::iter::once(1.0)
        .chain(args.scale.iter().copied())
        .collect();
    let conditions = scales
        .into_iter()
        .map(|scale| condition(&trials, scale, design, &ab.config.gate))
        .collect::<Result<Vec<_>>>()?;
    let injected = match args.inject {
        Some(f) => Some(injected(&ab, &dir, f)?),
        None => None,
    };
    let stored_false_alarms = match args.stored_trials {
        0 => None,
        n => Some(stored_path(&ab, &dir, n)?),
    };
    let report = SelftestReport {
        config: ab.config.name.clone(),
        gpu,
        trials: args.trials,
        shapes: names,
        pairs: design.max,
        stage1: design.stage1,
        conditions,
        injected,
        witness,
        stored_trials: args.stored_trials,
        stored_false_alarms,
        wall_s: start.elapsed().as_secs_f64(),
    };
    if let Some(out) = &args.out {
        crate::files::write_json(out, &report)?;
    }
    match args.format {
        SelftestFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        SelftestFormat::Markdown => print!("{}", render(&report, true, true)),
        SelftestFormat::Table => print!("{}", render(&report, false, args.wide)),
    }
    let aa_clean =
        report.conditions.first().is_some_and(|c| c.flagged == 0) && report.witness.judged == 0;
    Ok(Outcome::from_passed(
        aa_clean && report.stored_false_alarms.unwrap_or(0) == 0,
    ))
}

/// Refuses what cannot be a selftest before anything is measured.
fn check_args(args: &SelftestArgs) -> Result<()> {
    if let Some(out) = &args.out {
        crate::files::check_writable(out)?;
    }
    if args.trials == 0 {
        bail!("--trials must be at least 1");
    }
    for &f in &args.scale {
        if !(f > 1.0 && f < 2.0) {
            bail!("--scale {f}: a slowdown factor between 1 and 2 (1.02 = +2%)");
        }
    }
    if let Some(f) = args.inject
        && !(f > 0.0 && f < 1.0)
    {
        bail!("--inject {f}: the slowdown must be a fraction between 0 and 1");
    }
    Ok(())
}

/// A/A at the design's largest number of pairs, one fresh process per trial: every trial's
/// shapes in the run's order, and the GPU they ran on.
fn aa_trials(
    ab: &Run,
    dir: &tempfile::TempDir,
    trials: u32,
) -> Result<(Vec<Vec<ShapeResult>>, Option<String>)> {
    let names = ab.shape_names();
    let design = ab.design();
    let mut out = Vec::new();
    let mut gpu = None;
    for trial in 1..=trials {
        let t0 = Instant::now();
        let r = ab
            .with(|r| r.rounds = Some(design.max))
            .run_child(&child::file_in(dir, &format!("trial{trial}.json")))?;
        gpu = r.environment.as_ref().map(|e| e.gpu_name.clone());
        out.push(in_order(&r, &names)?);
        eprintln!(
            "trial {trial}/{trials}: {} shapes × {} A/A pairs ({:.0} s)",
            names.len(),
            design.max,
            t0.elapsed().as_secs_f64()
        );
    }
    Ok((out, gpu))
}

/// The rule on the trials' pairs with every candidate time multiplied by `scale`.
fn condition(
    trials: &[Vec<ShapeResult>],
    scale: f64,
    design: StageDesign,
    gate: &crate::config::GateSettings,
) -> Result<Condition> {
    let shapes = trials.first().map_or(0, Vec::len);
    let mut per_shape: Vec<Outcomes> = (0..shapes).map(|_| Outcomes::default()).collect();
    for trial in trials {
        for (s, shape) in trial.iter().enumerate() {
            let (verdict, second) = decide_planned(shape, scale, design, gate)?;
            let o = &mut per_shape[s];
            o.flagged += u32::from(verdict == Verdict::Regression);
            o.inconclusive += u32::from(verdict == Verdict::Inconclusive);
            o.second_looks += u32::from(second);
        }
    }
    Ok(Condition {
        scale,
        flagged: per_shape.iter().map(|o| o.flagged).sum(),
        comparisons: (trials.len() * shapes) as u32,
        per_shape,
    })
}

/// One real slowdown of `fraction`, injected in the candidate's graphs, under the normal
/// design.
fn injected(ab: &Run, dir: &tempfile::TempDir, fraction: f64) -> Result<Injected> {
    let r = ab
        .with(|r| r.inject = Some(fraction))
        .run_child(&child::file_in(dir, "injected.json"))?;
    let shapes = in_order(&r, &ab.shape_names())?;
    Ok(Injected {
        fraction,
        caught: shapes
            .iter()
            .filter(|s| s.verdict == Verdict::Regression)
            .count() as u32,
        shapes: shapes.len() as u32,
        measured: shapes
            .iter()
            .map(|s| s.primary().map(|c| c.ratio - 1.0))
            .collect(),
    })
}

/// The shapes of a measuring run in the order of `names`.
fn in_order(r: &ResultsFile, names: &[String]) -> Result<Vec<ShapeResult>> {
    names
        .iter()
        .map(|name| match r.shapes.iter().find(|s| &s.name == name) {
            // The witness's own judgement of an A/A is kept, to be counted as its false
            // alarm ([`witness_calibration`]); its pairs are as measured.
            Some(s) if s.error.is_none() || witness_judged(s) => Ok(s.clone()),
            Some(s) => bail!(
                "shape {name} could not be measured: {}",
                s.error.as_deref().unwrap_or("?")
            ),
            None => bail!("shape {name} is missing from a measuring run"),
        })
        .collect()
}

/// Whether a shape's error is the witness's judgement of what it recorded.
fn witness_judged(s: &ShapeResult) -> bool {
    s.error.is_some() && s.unwitnessed().and_then(crate::witness::judge_recorded) == s.error
}

/// The witness over the A/A trials: the shapes it judged, and its largest shifts against
/// their limits (up to the end event, and through the checks, each against its own).
fn witness_calibration(trials: &[Vec<ShapeResult>]) -> WitnessCalibration {
    let mut w = WitnessCalibration::default();
    let keep = |best: &mut Option<LargestShift>, new: LargestShift| {
        if best
            .as_ref()
            .is_none_or(|b| new.share_of_limit > b.share_of_limit)
        {
            *best = Some(new);
        }
    };
    for (t, trial) in trials.iter().enumerate() {
        for s in trial {
            let Some(u) = s.unwitnessed() else {
                continue;
            };
            w.witnessed += 1;
            w.judged += u32::from(witness_judged(s));
            let largest = |shift: f64, limit_us: f64| LargestShift {
                share_of_limit: shift.abs() / limit_us,
                shift_us: shift,
                limit_us,
                shape: s.name.clone(),
                trial: t as u32 + 1,
            };
            if let Some(shift) = u.shift_us {
                keep(&mut w.largest, largest(shift, u.limit_us));
            }
            if let (Some(shift), Some(limit)) =
                (u.through_checks_shift_us, u.through_checks_limit_us)
            {
                keep(&mut w.largest_through_checks, largest(shift, limit));
            }
        }
    }
    w
}

/// The gate's verdict on an A/A shape whose candidate times are multiplied by `scale`,
/// under the planned design: the first stage's pairs, then all of them when the first look
/// leaves it open (as the pipeline measures more). Also whether the second look was taken.
fn decide_planned(
    shape: &ShapeResult,
    scale: f64,
    design: StageDesign,
    gate: &crate::config::GateSettings,
) -> Result<(Verdict, bool)> {
    let pairs = shape.samples_us.len().min(shape.base_samples_us.len());
    if pairs < design.max as usize {
        bail!(
            "shape {} has {pairs} pairs, fewer than the design's {}",
            shape.name,
            design.max
        );
    }
    let with = |n: usize| -> Result<ShapeResult> {
        let mut s = ShapeResult::new(shape.params);
        s.base_samples_us = shape.base_samples_us[..n].to_vec();
        s.samples_us = shape.samples_us[..n]
            .iter()
            .map(|r| r.iter().map(|x| x * scale).collect())
            .collect();
        s.pair_order = shape.pair_order.iter().take(n).copied().collect();
        let mut m = shape
            .measurement
            .clone()
            .ok_or_else(|| anyhow::anyhow!("shape {} has no measurement", shape.name))?;
        m.rounds = n as u32;
        m.extra_rounds = (n as u32).saturating_sub(design.stage1);
        m.design = Some(design);
        s.measurement = Some(m);
        Ok(s)
    };
    // The gate's own two-stage design: the second look (the rest of the pairs) where the
    // first one leaves the shape open, then the one decision.
    let first = [with(design.stage1 as usize)?];
    let second = !crate::evaluate::open_shapes(&first, design, gate, |_| None)?.is_empty();
    let mut decided = if second {
        [with(design.max as usize)?]
    } else {
        first
    };
    crate::evaluate::evaluate(&mut decided, |_| None, gate, Policy::default())?;
    let [s] = decided;
    Ok((s.verdict, second))
}

/// The stored-baseline path: a baseline recorded from separate processes, then `trials`
/// fresh processes compared with it alone; the shape comparisons that failed.
fn stored_path(ab: &Run, dir: &tempfile::TempDir, trials: u32) -> Result<u32> {
    let store = dir.path().join("baselines");
    let alone = |out: &str, compare: bool| -> Result<ResultsFile> {
        ab.with(|r| {
            r.baselines = store.clone();
            r.base = None;
            r.ab_always = false;
            r.compare = compare;
        })
        .run_child(&child::file_in(dir, out))
    };
    let mut from = Vec::new();
    for p in 1..=crate::comparison::MIN_PROCESSES {
        let name = format!("record{p}.json");
        alone(&name, false)?;
        from.push(child::file_in(dir, &name));
    }
    child::record_quietly(&ab.request.config, &store, &from)?;
    let mut failed = 0;
    for t in 1..=trials {
        let r = alone(&format!("stored{t}.json"), true)?;
        failed += r
            .shapes
            .iter()
            .filter(|s| s.verdict.fails(Policy::default()))
            .count() as u32;
    }
    Ok(failed)
}

fn render(r: &SelftestReport, markdown: bool, wide: bool) -> String {
    let (header, rows) = table(r, markdown);
    let mut out = String::new();
    if markdown {
        out.push_str(&format!(
            "| {} |\n|{}\n",
            header.join(" | "),
            "---|".repeat(header.len())
        ));
        for row in rows {
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
    } else {
        let n = header.len();
        let priority: Vec<usize> = (0..n).collect();
        let right: Vec<usize> = (1..n).collect();
        out.push_str(&fitted_table(
            &header,
            &rows,
            &priority,
            2,
            &right,
            (!wide).then(stdout_width),
            "with --wide or --format json",
        ));
    }
    out.push_str(&summary(r));
    out
}

/// A condition's column title: the A/A rate, or the rate at an injected scale.
fn condition_label(scale: f64) -> String {
    if scale == 1.0 {
        "A/A flagged".to_owned()
    } else {
        format!("×{scale} flagged")
    }
}

/// The table's header and one row per shape: each condition's flagged count, the A/A
/// inconclusive count and, with an injection, the change measured.
fn table(r: &SelftestReport, markdown: bool) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["Shape".to_owned()];
    header.extend(r.conditions.iter().map(|c| condition_label(c.scale)));
    header.push("A/A inconclusive".into());
    if r.injected.is_some() {
        header.push("injected Δ".into());
    }
    let rows: Vec<Vec<String>> = r
        .shapes
        .iter()
        .enumerate()
        .map(|(s, name)| {
            let mut row = vec![if markdown {
                escape_markdown(name)
            } else {
                name.clone()
            }];
            for c in &r.conditions {
                row.push(format!("{}/{}", c.per_shape[s].flagged, r.trials));
            }
            row.push(format!(
                "{}/{}",
                r.conditions
                    .first()
                    .map_or(0, |c| c.per_shape[s].inconclusive),
                r.trials
            ));
            if let Some(inj) = &r.injected {
                row.push(
                    inj.measured
                        .get(s)
                        .copied()
                        .flatten()
                        .map_or("—".into(), |d| format!("{:+.2}%", d * 100.0)),
                );
            }
            row
        })
        .collect();
    (header, rows)
}

/// The line under the table: the run, each condition's rate with its exact interval, the
/// injection caught, the stored baseline's false alarms and the wall time.
fn summary(r: &SelftestReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "selftest on {} ({} trials × {} shapes × {} A/A pairs, config {}; the rule's first look at {} pairs):",
        r.gpu.as_deref().unwrap_or("unknown GPU"),
        r.trials,
        r.shapes.len(),
        r.pairs,
        r.config,
        r.stage1
    ));
    // Each rate with its exact (Clopper–Pearson) 95% interval: a count of 130 says little
    // more than that.
    for c in &r.conditions {
        let interval =
            crate::stats::binomial_interval(u64::from(c.flagged), u64::from(c.comparisons), 0.95)
                .map(|i| format!(" [{:.1}, {:.1}]", i.low * 100.0, i.high * 100.0))
                .unwrap_or_default();
        out.push_str(&format!(
            " {} {}/{} ({:.1}%{interval});",
            condition_label(c.scale),
            c.flagged,
            c.comparisons,
            100.0 * f64::from(c.flagged) / f64::from(c.comparisons.max(1))
        ));
    }
    out.push_str(" (exact 95% intervals; alpha is per shape);");
    if let Some(inj) = &r.injected {
        out.push_str(&format!(
            " injected +{}%: {}/{} caught;",
            inj.fraction * 100.0,
            inj.caught,
            inj.shapes
        ));
    }
    out.push_str(&witness_summary(&r.witness));
    if let Some(f) = r.stored_false_alarms {
        out.push_str(&format!(
            " stored baseline: {f} of {} comparisons failed;",
            r.stored_trials as usize * r.shapes.len()
        ));
    }
    out.push_str(&format!(" {:.0} s\n", r.wall_s));
    out
}

/// The witness's part of the summary line: its false alarms and its largest shifts.
fn witness_summary(w: &WitnessCalibration) -> String {
    if w.witnessed == 0 {
        return " the host's clock's witness: not recorded;".into();
    }
    let shown = |l: &Option<LargestShift>| {
        l.as_ref().map_or("none".into(), |l| {
            format!(
                "{:.1} µs, {:.0}% of its {:.0} µs limit ({}, trial {})",
                l.shift_us.abs(),
                100.0 * l.share_of_limit,
                l.limit_us,
                l.shape,
                l.trial
            )
        })
    };
    format!(
        " the host's clock's witness: {} of {} A/A shapes judged, largest shift {}, through the checks {};",
        w.judged,
        w.witnessed,
        shown(&w.largest),
        shown(&w.largest_through_checks)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CacheMode, Dtype, GateSettings, ShapeParams};
    use crate::results::MeasurementInfo;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};

    /// An A/A shape: 24 pairs of 10 samples of one distribution on both sides.
    fn aa(seed: u64) -> ShapeResult {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let noise = Normal::new(100.0, 0.5).unwrap();
        let mut round = || {
            (0..10)
                .map(|_| noise.sample(&mut rng))
                .collect::<Vec<f64>>()
        };
        let mut s = ShapeResult::new(ShapeParams::new(1, 8, 512, 64, false, Dtype::Float16));
        s.base_samples_us = (0..24).map(|_| round()).collect();
        s.samples_us = (0..24).map(|_| round()).collect();
        s.measurement = Some(MeasurementInfo {
            cache: CacheMode::Hot,
            launches_per_sample: 100,
            rounds: 24,
            extra_rounds: 0,
            working_set_bytes: 0,
            wall_s: 0.0,
            sm_clock_mhz: None,
            design: None,
            checked_launches: 0,
            unwitnessed: None,
        });
        s
    }

    #[test]
    fn scaling_an_aa_shape_is_a_slowdown_the_rule_sees() {
        let gate = GateSettings::default();
        let design = StageDesign { stage1: 8, max: 24 };
        let s = aa(1);
        let (v, _) = decide_planned(&s, 1.0, design, &gate).unwrap();
        assert_ne!(v, Verdict::Regression, "A/A flagged");
        // Far past the margin the first look settles it; at +3% with 0.5% noise too.
        let (v, second) = decide_planned(&s, 1.10, design, &gate).unwrap();
        assert_eq!((v, second), (Verdict::Regression, false));
        assert_eq!(
            decide_planned(&s, 1.03, design, &gate).unwrap().0,
            Verdict::Regression
        );
        // Fewer pairs than the design's largest cannot be replayed.
        let mut short = s.clone();
        short.samples_us.truncate(10);
        assert!(decide_planned(&short, 1.0, design, &gate).is_err());
    }

    #[test]
    fn each_rate_is_reported_with_its_exact_interval() {
        let condition = |scale: f64, flagged: u32| Condition {
            scale,
            per_shape: vec![Outcomes {
                flagged,
                inconclusive: 0,
                second_looks: 0,
            }],
            flagged,
            comparisons: 130,
        };
        let report = SelftestReport {
            config: "pr".into(),
            gpu: Some("NVIDIA H100".into()),
            trials: 130,
            shapes: vec!["b1h8s512d64_f16".into()],
            pairs: 24,
            stage1: 8,
            conditions: vec![condition(1.0, 0), condition(1.02, 5)],
            injected: None,
            witness: WitnessCalibration::default(),
            stored_trials: 0,
            stored_false_alarms: None,
            wall_s: 1.0,
        };
        let out = render(&report, false, true);
        // scipy: binomtest(0, 130) → [0, 2.80%]; binomtest(5, 130) → [1.26%, 8.75%].
        assert!(
            out.contains("A/A flagged 0/130 (0.0% [0.0, 2.8]);"),
            "{out}"
        );
        assert!(
            out.contains("×1.02 flagged 5/130 (3.8% [1.3, 8.7]);"),
            "{out}"
        );
        assert!(
            out.contains("(exact 95% intervals; alpha is per shape)"),
            "{out}"
        );
    }

    #[test]
    fn the_margin_is_flagged_about_alpha_of_the_time_at_most() {
        // At exactly +2% (the margin) the per-shape rule may flag at most about alpha.
        let gate = GateSettings::default();
        let design = StageDesign { stage1: 8, max: 24 };
        let flagged = (0..400)
            .filter(|&i| {
                decide_planned(&aa(100 + i), 1.02, design, &gate).unwrap().0 == Verdict::Regression
            })
            .count();
        assert!(flagged <= 40, "{flagged} of 400 flagged at the margin");
    }

    /// An A/A shape whose results record the witness's shifts (µs; a 2 ms sample, limit 30),
    /// judged as the run's decision judges it.
    fn witnessed(seed: u64, shift: f64, through: f64) -> ShapeResult {
        let mut s = aa(seed);
        let u = crate::results::Unwitnessed {
            candidate_us: 55.0 + shift,
            base_us: Some(55.0),
            candidate_through_checks_us: Some(355.0 + through),
            base_through_checks_us: Some(355.0),
            shift_us: Some(shift),
            through_checks_shift_us: Some(through),
            units: 24,
            sample_us: 2000.0,
            limit_us: 30.0,
            through_checks_limit_us: Some(60.0),
            samples: 240,
            ..crate::results::Unwitnessed::default()
        };
        s.error = crate::witness::judge_recorded(&u);
        s.measurement.as_mut().unwrap().unwitnessed = Some(u);
        s
    }

    #[test]
    fn the_witness_is_calibrated_by_the_aa_trials_and_its_false_alarms_counted() {
        let trials = vec![
            vec![witnessed(1, 3.0, -6.0), witnessed(2, -7.5, 4.0)],
            vec![witnessed(3, 1.0, 24.0), aa(4)],
        ];
        let w = witness_calibration(&trials);
        assert_eq!((w.witnessed, w.judged), (3, 0));
        let largest = w.largest.as_ref().unwrap();
        assert_eq!((largest.shift_us, largest.trial), (-7.5, 1));
        assert_eq!(largest.share_of_limit, 0.25);
        // Through the checks, against twice the limit: 24 µs of 60.
        let through = w.largest_through_checks.as_ref().unwrap();
        assert_eq!((through.share_of_limit, through.trial), (0.4, 2));
        assert_eq!(
            witness_summary(&w),
            " the host's clock's witness: 0 of 3 A/A shapes judged, largest shift 7.5 µs, 25% of its 30 µs limit (b1h8s512d64_f16, trial 1), through the checks 24.0 µs, 40% of its 60 µs limit (b1h8s512d64_f16, trial 2);"
        );
        // A shape the witness judged is kept for the rule's pairs and counted as its false
        // alarm; any other error is not the witness's.
        let judged = witnessed(5, 45.0, 45.0);
        assert!(judged.error.is_some() && witness_judged(&judged));
        let mut other = witnessed(6, 1.0, 1.0);
        other.error = Some("CUDA_ERROR_ILLEGAL_ADDRESS".into());
        assert!(!witness_judged(&other));
        let w = witness_calibration(&[vec![judged, other]]);
        assert_eq!((w.witnessed, w.judged), (2, 1));
        assert_eq!(w.largest.unwrap().share_of_limit, 1.5);
        assert_eq!(
            witness_summary(&WitnessCalibration::default()),
            " the host's clock's witness: not recorded;"
        );
    }
}
