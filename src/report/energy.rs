//! The "Energy per call" table: per shape, each side's millijoules per call with its interval
//! over rounds, the candidate over the base, and TFLOP/s per watt. Recomputed here from the
//! windows the results file holds (never its stored summaries), and never part of a verdict.
//!
//! The report's section of energy; the figures are `crate::energy`, measured by the phase
//! `run::energy`.

use super::Report;
use crate::energy::{RoundEstimate, ShapeEnergy, SideEnergy};

/// The table's title, with how the figures were read.
pub(crate) fn title(report: &Report) -> String {
    if report.energy_from_baseline {
        return String::from(
            "Energy per call of the stored baseline (measured by `baseline update` or the nightly run, not by this run: NVML board energy over back-to-back replays; mean [95% t interval over the recording's windows]; not part of the verdict)",
        );
    }
    let mut t = String::from(
        "Energy per call (NVML board energy over back-to-back replays; mean [95% t interval over this run's windows, not the spread between runs]; not part of the verdict)",
    );
    if let Some(info) = &report.energy_info
        && let (Some(u), Some(r)) = (info.update_ms, info.read_ms)
    {
        t.push_str(&format!(
            "; the counter moved every {u:.0} ms, each move timed to within {r:.1} ms"
        ));
    }
    t
}

/// Three significant figures.
fn sig(v: f64) -> String {
    if !v.is_finite() {
        return "?".into();
    }
    let digits = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else if v.abs() >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$}")
}

fn estimate(e: &RoundEstimate) -> String {
    format!("{} [{}, {}]", sig(e.mean), sig(e.lo), sig(e.hi))
}

fn side_cell(s: &SideEnergy) -> String {
    match &s.mj_per_call {
        Some(e) => estimate(e),
        None => "n/a ¹".into(),
    }
}

/// Header, rows and the reasons behind every "n/a" (one line each, naming shape and side).
pub(crate) fn energy_rows(report: &Report) -> (Vec<String>, Vec<Vec<String>>, Vec<String>) {
    if report.energy.is_empty() {
        return (Vec::new(), Vec::new(), Vec::new());
    }
    let ab = report.energy.iter().any(|(_, e)| e.base.is_some());
    let mut header = vec!["Shape".to_string()];
    if ab {
        header.push("base mJ/call".into());
    }
    header.push(if ab { "cand mJ/call" } else { "mJ/call" }.into());
    if ab {
        header.push("cand/base".into());
    }
    header.push("TFLOP/s/W".into());
    let mut rows = Vec::new();
    let mut why = Vec::new();
    for (shape, e) in &report.energy {
        let mut row = vec![shape.clone()];
        if ab {
            row.push(e.base.as_ref().map_or("—".into(), side_cell));
        }
        row.push(side_cell(&e.candidate));
        if ab {
            row.push(e.ratio().map_or("—".into(), |r| format!("{r:.3}")));
        }
        row.push(
            e.candidate
                .tflops_per_watt
                .as_ref()
                .map_or("n/a".into(), estimate),
        );
        rows.push(row);
        for (label, side) in [("candidate", Some(&e.candidate)), ("base", e.base.as_ref())] {
            if let Some(reason) = side.and_then(|s| s.withheld.as_ref()) {
                why.push(format!("¹ {shape} ({label}): {reason}"));
            }
        }
    }
    (header, rows, why)
}

/// Each shape's energy recomputed from its windows (the results file's own summaries are
/// not trusted), with the config's confidence.
pub(crate) fn recomputed(
    shapes: &[crate::results::ShapeResult],
    confidence: f64,
) -> Vec<(String, ShapeEnergy)> {
    let measured: Vec<(String, ShapeEnergy)> = shapes
        .iter()
        .filter_map(|s| {
            let e = s.energy.as_ref()?;
            let flops = s.params.flops();
            let side =
                |x: &SideEnergy| SideEnergy::from_rounds(x.rounds.clone(), flops, confidence);
            Some((
                s.name.clone(),
                ShapeEnergy {
                    candidate: side(&e.candidate),
                    base: e.base.as_ref().map(side),
                },
            ))
        })
        .collect();
    if !measured.is_empty() {
        return measured;
    }
    // None measured in this run (a pull request's): the stored baseline's figures.
    stored(shapes, confidence)
}

/// The energy per call the stored baseline holds for each shape (recomputed from its
/// windows), as the candidate's side: what a run that measured none shows, labelled so.
pub(crate) fn stored(
    shapes: &[crate::results::ShapeResult],
    confidence: f64,
) -> Vec<(String, ShapeEnergy)> {
    shapes
        .iter()
        .filter_map(|s| {
            let e = s.stored_energy.as_ref()?;
            let flops = s.params.flops();
            Some((
                s.name.clone(),
                ShapeEnergy {
                    candidate: SideEnergy::from_rounds(e.rounds.clone(), flops, confidence),
                    base: None,
                },
            ))
        })
        .collect()
}
