//! `ci-gate selftest`: measures the gate itself on this runner. Each trial records a
//! baseline, measures again (A/A) and again with a calibrated slowdown injected, each in a
//! fresh process, exactly as CI compares a pull request with a stored baseline. A shape
//! that fails an A/A comparison is a false alarm; one that fails with the slowdown is caught.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::Outcome;
use super::pipeline::load_config;
use crate::cli::SelftestArgs;
use crate::report::{Format, escape_markdown};
use crate::results::ResultsFile;
use crate::stats::Sample;
use crate::verdict::Verdict;

/// One trial of one shape: its verdict and p50 ratio.
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
}

#[derive(Debug, Serialize)]
struct SelftestReport {
    config: String,
    gpu: Option<String>,
    trials: u32,
    false_alarm_rate: f64,
    detection_rates: Vec<(f64, f64)>,
    shapes: Vec<ShapeReport>,
    wall_s: f64,
}

fn child(exe: &Path, args: &SelftestArgs, out: &Path, extra: &[String]) -> Result<ResultsFile> {
    let mut cmd = Command::new(exe);
    cmd.arg("local")
        .arg("--config")
        .arg(&args.config.config)
        .arg("--kernels")
        .arg(&args.config.kernels)
        .args(["--format", "json", "--no-parity", "--out"])
        .arg(out)
        .args(extra);
    for s in &args.shapes {
        cmd.args(["--shape", s]);
    }
    let output = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    if output.status.code() == Some(2) || output.status.code().is_none() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        bail!(
            "a measuring run failed ({}): {}",
            output.status,
            stderr.trim()
        );
    }
    ResultsFile::load(out).map_err(Into::into)
}

fn median(v: &[f64]) -> Option<f64> {
    match v.len() {
        0 => None,
        1 => Some(v[0]),
        _ => Sample::new(v.to_vec()).ok().map(|s| s.median()),
    }
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
    let exe = std::env::current_exe().context("cannot find the ci-gate executable")?;
    let dir = tempfile::Builder::new()
        .prefix("ci-gate-selftest-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let start = Instant::now();
    let n_shapes = shapes.len();
    // [shape][trial] verdicts and ratios.
    let mut aa: Vec<Vec<Trial>> = vec![Vec::new(); n_shapes];
    let mut inj: Vec<Vec<Vec<Trial>>> = vec![vec![Vec::new(); args.inject.len()]; n_shapes];
    let mut gpu = None;
    for trial in 1..=args.trials {
        let t0 = Instant::now();
        let path = |tag: &str| -> PathBuf { dir.path().join(format!("trial{trial}-{tag}.json")) };
        let base_path = path("base");
        let base = child(&exe, args, &base_path, &["--no-compare".into()])?;
        gpu = base.environment.as_ref().map(|e| e.gpu_name.clone());
        let against = vec!["--against".to_owned(), base_path.display().to_string()];
        let a = child(&exe, args, &path("aa"), &against)?;
        collect(&a, &shapes, &mut aa)?;
        let mut line = format!(
            "trial {trial}/{}: A/A {} false alarm(s)",
            args.trials,
            a.shapes.iter().filter(|s| s.verdict.fails_gate()).count()
        );
        for (k, &f) in args.inject.iter().enumerate() {
            let mut extra = against.clone();
            extra.extend(["--inject".to_owned(), f.to_string()]);
            let r = child(&exe, args, &path(&format!("inject{k}")), &extra)?;
            let mut per_shape: Vec<Vec<Trial>> = vec![Vec::new(); n_shapes];
            collect(&r, &shapes, &mut per_shape)?;
            for (s, v) in per_shape.into_iter().enumerate() {
                inj[s][k].extend(v);
            }
            let caught = r
                .shapes
                .iter()
                .filter(|s| s.verdict == Verdict::Regression)
                .count();
            line.push_str(&format!(", +{:.0}%: {caught}/{n_shapes} caught", f * 100.0));
        }
        eprintln!("{line} ({:.0} s)", t0.elapsed().as_secs_f64());
    }

    let mut reports = Vec::new();
    for (s, params) in shapes.iter().enumerate() {
        let ratios: Vec<f64> = aa[s]
            .iter()
            .filter_map(|(_, r)| r.map(|x| x - 1.0))
            .collect();
        reports.push(ShapeReport {
            shape: params.name(),
            trials: args.trials,
            false_alarms: aa[s].iter().filter(|(v, _)| v.fails_gate()).count() as u32,
            aa_inconclusive: aa[s]
                .iter()
                .filter(|(v, _)| *v == Verdict::Inconclusive)
                .count() as u32,
            aa_median_delta: median(&ratios),
            aa_max_abs_delta: ratios.iter().map(|x| x.abs()).reduce(f64::max),
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
                    measured_slowdown: median(
                        &inj[s][k]
                            .iter()
                            .filter_map(|(_, r)| r.map(|x| x - 1.0))
                            .collect::<Vec<_>>(),
                    ),
                })
                .collect(),
        });
    }
    let total = f64::from(args.trials) * n_shapes as f64;
    let report = SelftestReport {
        config: config.name.clone(),
        gpu,
        trials: args.trials,
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
        shapes: reports,
        wall_s: start.elapsed().as_secs_f64(),
    };
    if let Some(out) = &args.out {
        crate::files::write_json(out, &report)?;
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Table => print!("{}", render(&report, false)),
        Format::Markdown => print!("{}", render(&report, true)),
    }
    Ok(Outcome::from_passed(
        report.shapes.iter().all(|s| s.false_alarms == 0),
    ))
}

fn collect(
    r: &ResultsFile,
    shapes: &[crate::config::ShapeParams],
    into: &mut [Vec<Trial>],
) -> Result<()> {
    for (i, params) in shapes.iter().enumerate() {
        let s = r
            .shapes
            .iter()
            .find(|s| &s.params == params)
            .with_context(|| format!("shape {params} is missing from a measuring run"))?;
        into[i].push((s.verdict, s.comparison.as_ref().map(|c| c.ratio)));
    }
    Ok(())
}

fn render(r: &SelftestReport, markdown: bool) -> String {
    let pct = |x: Option<f64>| x.map_or("—".into(), |v| format!("{:+.2}%", v * 100.0));
    let mut header = vec![
        "Shape".to_owned(),
        "A/A false alarms".into(),
        "A/A inconclusive".into(),
        "A/A median Δ".into(),
        "A/A max |Δ|".into(),
    ];
    for (f, _) in &r.detection_rates {
        header.push(format!("caught at +{:.0}%", f * 100.0));
        header.push(format!("measured Δ at +{:.0}%", f * 100.0));
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
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
        t.set_header(header);
        for row in rows {
            t.add_row(row);
        }
        out.push_str(&format!("{t}\n"));
    }
    out.push_str(&format!(
        "selftest on {} ({} trials, config {}): false alarms {:.1}%",
        r.gpu.as_deref().unwrap_or("unknown GPU"),
        r.trials,
        r.config,
        r.false_alarm_rate * 100.0
    ));
    for (f, rate) in &r.detection_rates {
        out.push_str(&format!(
            ", caught at +{:.0}%: {:.1}%",
            f * 100.0,
            rate * 100.0
        ));
    }
    out.push_str(&format!(" ({:.0} s)\n", r.wall_s));
    out
}
