//! `ci-gate selftest`: measures the gate itself on this runner, as the pull-request gate
//! runs: each trial is one fresh process per condition, measuring A/B with the same kernels
//! on both sides — A/A, and the candidate slowed down on purpose by +m (the margin: at most
//! 5% may be flagged), +2.5% and +3% (at least 95% must be) — then the stored-baseline path:
//! a baseline recorded from separate processes, and fresh processes compared with it alone.
//! A shape that fails an A/A or stored comparison is a false alarm; a regression with the
//! slowdown is a catch.

use std::time::Instant;

use anyhow::{Result, bail};
use serde::Serialize;

use super::Outcome;
use super::child::{self, LocalChild};
use super::pipeline::load_config;
use crate::cli::{SelftestArgs, SelftestFormat};
use crate::report::{escape_markdown, fitted_table, stdout_width};
use crate::results::ResultsFile;
use crate::stats::Sample;
use crate::verdict::{Policy, Verdict};

/// One trial of one shape: its verdict and ratio against the deciding reference.
type Trial = (Verdict, Option<f64>);

#[derive(Debug, Serialize)]
struct Detection {
    fraction: f64,
    caught: u32,
    /// Median over trials of the measured p50 ratio − 1 with the injection.
    measured_slowdown: Option<f64>,
}

#[derive(Debug, Serialize)]
struct ShapeReport {
    shape: String,
    trials: u32,
    false_alarms: u32,
    aa_inconclusive: u32,
    /// Median over trials of the A/A p50 ratio − 1.
    aa_median_delta: Option<f64>,
    /// Largest |A/A p50 ratio − 1| over trials.
    aa_max_abs_delta: Option<f64>,
    detections: Vec<Detection>,
    stored_trials: u32,
    stored_false_alarms: u32,
    /// Largest |ratio − 1| against the stored baseline over the fresh processes.
    stored_max_abs_delta: Option<f64>,
}

#[derive(Debug, Serialize)]
struct SelftestReport {
    config: String,
    gpu: Option<String>,
    trials: u32,
    /// Comparisons per condition (trials × shapes).
    comparisons: u32,
    false_alarm_rate: f64,
    detection_rates: Vec<(f64, f64)>,
    stored_trials: u32,
    stored_false_alarm_rate: Option<f64>,
    shapes: Vec<ShapeReport>,
    wall_s: f64,
}

fn median(v: &[f64]) -> Option<f64> {
    match v.len() {
        0 => None,
        1 => Some(v[0]),
        _ => Sample::new(v.to_vec()).ok().map(|s| s.median()),
    }
}

fn deltas(trials: &[Trial]) -> Vec<f64> {
    trials
        .iter()
        .filter_map(|(_, r)| r.map(|x| x - 1.0))
        .collect()
}

pub fn run_selftest(args: &SelftestArgs) -> Result<Outcome> {
    if args.trials == 0 {
        bail!("--trials must be at least 1");
    }
    for &f in &args.inject {
        if !(f > 0.0 && f < 1.0) {
            bail!("--inject {f}: the slowdown must be a fraction between 0 and 1");
        }
    }
    let (config, shapes) = load_config(&args.config.config, &args.shapes)?;
    let shapes = match args.shard {
        Some(spec) => super::devices::shard_of(&config, &shapes, spec)?.0,
        None => shapes,
    };
    let names: Vec<String> = shapes.iter().map(|s| s.name()).collect();
    let dir = child::scratch("ci-gate-selftest-")?;
    let empty_store = dir.path().join("no-baselines");
    let kernels = args.config.kernels.display().to_string();
    let start = Instant::now();
    let n_shapes = shapes.len();
    // [shape][trial] for A/A; [shape][injection][trial] with a slowdown.
    let mut aa: Vec<Vec<Trial>> = vec![Vec::new(); n_shapes];
    let mut inj: Vec<Vec<Vec<Trial>>> = vec![vec![Vec::new(); args.inject.len()]; n_shapes];
    let mut gpu = None;
    let ab = |extra: &[String]| {
        let mut e = vec![
            "--base-kernels".to_owned(),
            kernels.clone(),
            "--ab-always".into(),
            "--no-compare".into(),
            "--no-parity".into(),
            // The peers would only lengthen every trial: selftest measures the gate itself.
            "--no-peers".into(),
        ];
        e.extend_from_slice(extra);
        LocalChild {
            config: &args.config.config,
            kernels: &args.config.kernels,
            baselines: &empty_store,
            shapes: &names,
            extra: e,
        }
    };
    for trial in 1..=args.trials {
        let t0 = Instant::now();
        let a = ab(&[]).run(&child::file_in(&dir, &format!("trial{trial}-aa.json")))?;
        gpu = a.environment.as_ref().map(|e| e.gpu_name.clone());
        collect(&a, &names, &mut aa)?;
        let mut line = format!(
            "trial {trial}/{}: A/A {} false alarm(s)",
            args.trials,
            count_failing(&a)
        );
        for (k, &f) in args.inject.iter().enumerate() {
            let out = child::file_in(&dir, &format!("trial{trial}-inject{k}.json"));
            let r = ab(&["--inject".into(), f.to_string()]).run(&out)?;
            let mut per_shape: Vec<Vec<Trial>> = vec![Vec::new(); n_shapes];
            collect(&r, &names, &mut per_shape)?;
            for (s, v) in per_shape.into_iter().enumerate() {
                inj[s][k].extend(v);
            }
            let caught = r
                .shapes
                .iter()
                .filter(|s| s.verdict == Verdict::Regression)
                .count();
            line.push_str(&format!(", +{}%: {caught}/{n_shapes} caught", f * 100.0));
        }
        eprintln!("{line} ({:.0} s)", t0.elapsed().as_secs_f64());
    }

    // The stored-baseline path: record from separate processes, compare fresh ones with it.
    let mut stored: Vec<Vec<Trial>> = vec![Vec::new(); n_shapes];
    if args.stored_trials > 0 {
        let t0 = Instant::now();
        let store = dir.path().join("baselines");
        let alone = |out: &str, store: &std::path::Path, compare: bool| -> Result<ResultsFile> {
            let mut extra = vec![
                "--no-base".to_owned(),
                "--no-parity".into(),
                "--no-peers".into(),
            ];
            if !compare {
                extra.push("--no-compare".into());
            }
            LocalChild {
                config: &args.config.config,
                kernels: &args.config.kernels,
                baselines: store,
                shapes: &names,
                extra,
            }
            .run(&child::file_in(&dir, out))
        };
        let mut from = Vec::new();
        for p in 1..=super::baseline::DEFAULT_PROCESSES {
            let name = format!("record{p}.json");
            alone(&name, &store, false)?;
            from.push(child::file_in(&dir, &name));
        }
        super::baseline::record_quietly(&args.config.config, &store, &from)?;
        for t in 1..=args.stored_trials {
            let r = alone(&format!("stored{t}.json"), &store, true)?;
            let mut per_shape: Vec<Vec<Trial>> = vec![Vec::new(); n_shapes];
            collect(&r, &names, &mut per_shape)?;
            for (s, v) in per_shape.into_iter().enumerate() {
                stored[s].extend(v);
            }
        }
        eprintln!(
            "stored baseline: {} fresh processes against a baseline of {} ({:.0} s)",
            args.stored_trials,
            super::baseline::DEFAULT_PROCESSES,
            t0.elapsed().as_secs_f64()
        );
    }

    let policy = Policy::default();
    let mut reports = Vec::new();
    for (s, name) in names.iter().enumerate() {
        let aa_deltas = deltas(&aa[s]);
        reports.push(ShapeReport {
            shape: name.clone(),
            trials: args.trials,
            false_alarms: aa[s].iter().filter(|(v, _)| v.fails(policy)).count() as u32,
            aa_inconclusive: aa[s]
                .iter()
                .filter(|(v, _)| *v == Verdict::Inconclusive)
                .count() as u32,
            aa_median_delta: median(&aa_deltas),
            aa_max_abs_delta: aa_deltas.iter().map(|x| x.abs()).reduce(f64::max),
            detections: args
                .inject
                .iter()
                .enumerate()
                .map(|(k, &fraction)| Detection {
                    fraction,
                    caught: inj[s][k]
                        .iter()
                        .filter(|(v, _)| *v == Verdict::Regression)
                        .count() as u32,
                    measured_slowdown: median(&deltas(&inj[s][k])),
                })
                .collect(),
            stored_trials: args.stored_trials,
            stored_false_alarms: stored[s].iter().filter(|(v, _)| v.fails(policy)).count() as u32,
            stored_max_abs_delta: deltas(&stored[s]).iter().map(|x| x.abs()).reduce(f64::max),
        });
    }
    let total = f64::from(args.trials) * n_shapes as f64;
    let report = SelftestReport {
        config: config.name.clone(),
        gpu,
        trials: args.trials,
        comparisons: total as u32,
        false_alarm_rate: reports
            .iter()
            .map(|r| f64::from(r.false_alarms))
            .sum::<f64>()
            / total,
        detection_rates: args
            .inject
            .iter()
            .enumerate()
            .map(|(k, &f)| {
                (
                    f,
                    reports
                        .iter()
                        .map(|r| f64::from(r.detections[k].caught))
                        .sum::<f64>()
                        / total,
                )
            })
            .collect(),
        stored_trials: args.stored_trials,
        stored_false_alarm_rate: (args.stored_trials > 0).then(|| {
            reports
                .iter()
                .map(|r| f64::from(r.stored_false_alarms))
                .sum::<f64>()
                / (f64::from(args.stored_trials) * n_shapes as f64)
        }),
        shapes: reports,
        wall_s: start.elapsed().as_secs_f64(),
    };
    if let Some(out) = &args.out {
        crate::files::write_json(out, &report)?;
    }
    match args.format {
        SelftestFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        SelftestFormat::Table => print!("{}", render(&report, false, args.wide)),
        SelftestFormat::Markdown => print!("{}", render(&report, true, true)),
    }
    Ok(Outcome::from_passed(report.shapes.iter().all(|s| {
        s.false_alarms == 0 && s.stored_false_alarms == 0
    })))
}

fn count_failing(r: &ResultsFile) -> usize {
    r.shapes
        .iter()
        .filter(|s| s.verdict.fails(Policy::default()))
        .count()
}

fn collect(r: &ResultsFile, names: &[String], into: &mut [Vec<Trial>]) -> Result<()> {
    for (i, name) in names.iter().enumerate() {
        let Some(s) = r.shapes.iter().find(|s| &s.name == name) else {
            bail!("shape {name} is missing from a measuring run");
        };
        into[i].push((s.verdict, s.primary().map(|c| c.ratio)));
    }
    Ok(())
}

fn render(r: &SelftestReport, markdown: bool, wide: bool) -> String {
    let pct = |x: Option<f64>| x.map_or("—".into(), |v| format!("{:+.2}%", v * 100.0));
    let mut header = vec![
        "Shape".to_owned(),
        "A/A false alarms".into(),
        "A/A inconclusive".into(),
        "A/A median Δ".into(),
        "A/A max |Δ|".into(),
    ];
    for (f, _) in &r.detection_rates {
        header.push(format!("caught at +{}%", f * 100.0));
        header.push(format!("measured Δ at +{}%", f * 100.0));
    }
    if r.stored_trials > 0 {
        header.push("stored false alarms".into());
        header.push("stored max |Δ|".into());
    }
    let rows: Vec<Vec<String>> = r
        .shapes
        .iter()
        .map(|s| {
            let mut row = vec![
                if markdown {
                    escape_markdown(&s.shape)
                } else {
                    s.shape.clone()
                },
                format!("{}/{}", s.false_alarms, s.trials),
                format!("{}/{}", s.aa_inconclusive, s.trials),
                pct(s.aa_median_delta),
                pct(s.aa_max_abs_delta),
            ];
            for d in &s.detections {
                row.push(format!("{}/{}", d.caught, s.trials));
                row.push(pct(d.measured_slowdown));
            }
            if r.stored_trials > 0 {
                row.push(format!("{}/{}", s.stored_false_alarms, s.stored_trials));
                row.push(pct(s.stored_max_abs_delta));
            }
            row
        })
        .collect();
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
        // Shape, then the false alarms and catches, then the measured Δs.
        let n = header.len();
        let mut priority = vec![0, 1];
        priority.extend((0..r.detection_rates.len()).map(|k| 5 + 2 * k));
        if r.stored_trials > 0 {
            priority.push(n - 2);
        }
        priority.extend([3, 4, 2]);
        priority.extend((0..r.detection_rates.len()).map(|k| 6 + 2 * k));
        if r.stored_trials > 0 {
            priority.push(n - 1);
        }
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
    out.push_str(&format!(
        "selftest on {} ({} trials × {} shapes, config {}): A/A false alarms {:.1}%",
        r.gpu.as_deref().unwrap_or("unknown GPU"),
        r.trials,
        r.shapes.len(),
        r.config,
        r.false_alarm_rate * 100.0
    ));
    for (f, rate) in &r.detection_rates {
        out.push_str(&format!(
            ", flagged at +{}%: {:.1}%",
            f * 100.0,
            rate * 100.0
        ));
    }
    if let Some(rate) = r.stored_false_alarm_rate {
        out.push_str(&format!(
            ", stored-baseline false alarms {:.1}%",
            rate * 100.0
        ));
    }
    out.push_str(&format!(" ({:.0} s)\n", r.wall_s));
    out
}
