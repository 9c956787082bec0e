//! JSON: an array with one object per shape, whatever the input (a run, two results files,
//! two sample files): the deciding comparison's numbers at the top level, both references'
//! comparisons in `ab` and `stored`, the verdict as a string, and what each number is
//! (`method`, `ratio_of`, `units`, `ci_method`, `cliffs_delta_of`, `mwu_test`).

use serde_json::{Value, json};

use super::{Exporter, Report, Row, deciding_bound, finite_bound};
use crate::comparison::{Comparison, Method};

pub(crate) struct JsonExporter;

/// What Cliff's δ and Mann-Whitney U of a comparison are computed on.
fn rank_units(c: &Comparison) -> &'static str {
    if c.method == Method::MedianBootstrap {
        "values"
    } else {
        "round medians"
    }
}

fn comparison_json(c: &Comparison) -> Value {
    json!({
        "reference": c.reference,
        "method": c.method,
        "ratio_of": c.method.describe(),
        "units": c.method.units(),
        "n_base": c.n_base,
        "n_cand": c.n_cand,
        "p50_base": c.p50_base,
        "p50_cand": c.p50_cand,
        "p50_ratio": c.p50_ratio(),
        "ratio": c.ratio,
        "ci_low": c.ci_low,
        "ci_high": c.ci_high,
        "confidence": c.confidence,
        "ci_method": c.method.interval_label(),
        "ci_is": CI_IS,
        "lower_bound": finite_bound(c.lower_bound),
        "upper_bound": finite_bound(c.upper_bound),
        "bound_level": c.bound_level,
        "se_log": c.se,
        "df": c.df,
        "margin_p": c.margin_p,
        "margin_p_faster": c.margin_p_faster,
        "stage": c.stage,
        "cliffs_delta": c.cliffs_delta,
        "cliffs_magnitude": c.cliffs_magnitude,
        "cliffs_delta_of": rank_units(c),
        "mwu_u": c.mwu_u,
        "mwu_p": c.mwu_p,
        "mwu_p_faster": c.mwu_p_faster,
        "mwu_test": format!("unpaired Mann-Whitney U of the {}, a test of a difference; not part of the rule", rank_units(c)),
        "min_detectable": c.min_detectable,
        "process_sd": c.process_sd,
        "process_sd_source": c.process_sd_source,
        "process_sd_assumed": c.process_sd_assumed,
        "min_flaggable": c.min_flaggable,
    })
}

/// What `ci_low` / `ci_high` are, beside the bounds that decide.
const CI_IS: &str = "a two-sided description of the estimate from the last look's units alone; the decision is lower_bound > 1 + m (regression) or upper_bound < 1 - m (improvement), one-sided at bound_level";

/// The deciding comparison's fields at the top level (A/B when it ran, else the stored
/// baseline or BASE); `ab` and `stored` hold both.
fn row_json(row: &Row) -> Value {
    let c = row.primary();
    let mut v = json!({
        "shape": row.shape,
        "method": c.map(|c| c.method),
        "ratio_of": c.map(|c| c.method.describe()),
        "units": c.map(|c| c.method.units()),
        "n_base": c.map(|c| c.n_base),
        "n_cand": c.map(|c| c.n_cand),
        "p50_base": c.map(|c| c.p50_base),
        "p50_cand": c.map(|c| c.p50_cand).or(row.p50_cand),
        "p50_ratio": c.map(|c| c.p50_ratio()),
        "ratio": c.map(|c| c.ratio),
        "ci_low": c.map(|c| c.ci_low),
        "ci_high": c.map(|c| c.ci_high),
        "confidence": c.map(|c| c.confidence),
        "ci_method": c.map(|c| c.method.interval_label()),
        "ci_is": c.map(|_| CI_IS),
        "lower_bound": c.and_then(|c| finite_bound(c.lower_bound)),
        "upper_bound": c.and_then(|c| finite_bound(c.upper_bound)),
        "bound_level": c.and_then(|c| c.bound_level),
        "deciding_bound": row.deciding().0.map(|d| {
            let (lower, value) = deciding_bound(d, row.verdict);
            json!({
                "reference": d.reference,
                "side": if lower { "lower" } else { "upper" },
                "value": value,
                "level": d.bound_level,
            })
        }),
        "margin_p": c.map(|c| c.margin_p),
        "margin_p_faster": c.map(|c| c.margin_p_faster),
        "pooled_p50_ratio": row.pooled.map(|p| p.ratio),
        "pooled_ci_low": row.pooled.and_then(|p| p.interval).map(|i| i.low),
        "pooled_ci_high": row.pooled.and_then(|p| p.interval).map(|i| i.high),
    });
    let more = json!({
        "cliffs_delta": c.map(|c| c.cliffs_delta),
        "cliffs_magnitude": c.map(|c| c.cliffs_magnitude),
        "cliffs_delta_of": c.map(rank_units),
        "mwu_u": c.map(|c| c.mwu_u),
        "mwu_p": c.map(|c| c.mwu_p),
        "mwu_p_faster": c.map(|c| c.mwu_p_faster),
        "min_detectable": c.map(|c| c.min_detectable),
        "ab": row.ab.as_ref().map(comparison_json),
        "stored": row.stored.as_ref().map(comparison_json),
        "decided_by": row.decided_by,
        "stored_other_method": row.stored_other_method,
        "drift_cause": row.drift_cause,
        "tflops": row.tflops,
        "parity": row.parity,
        "verdict": row.verdict,
        "error": row.error,
        "profile": row.profile,
        "peers": row.peers.iter().map(|p| json!({
            "peer": p.peer,
            "p50_us": p.p50_us,
            "ratio": p.ratio(row.p50_cand),
            "error": p.error,
        })).collect::<Vec<_>>(),
        "stored_peers": row.stored_peers,
    });
    if let (Value::Object(first), Value::Object(rest)) = (&mut v, more) {
        first.extend(rest);
    }
    v
}

impl Exporter for JsonExporter {
    fn render(&self, report: &Report) -> String {
        let value = Value::Array(
            report
                .rows
                .iter()
                .map(|row| {
                    let mut v = row_json(row);
                    // Energy per call (never part of the verdict), as the table shows it:
                    // recomputed from the windows, with why a figure is withheld.
                    if let Some((_, e)) = report.energy.iter().find(|(name, _)| *name == row.shape)
                        && let Value::Object(o) = &mut v
                    {
                        let side = |s: &crate::energy::SideEnergy| {
                            json!({
                                "mj_per_call": s.mj_per_call,
                                "tflops_per_watt": s.tflops_per_watt,
                                "windows": s.rounds.len(),
                                "withheld": s.withheld,
                            })
                        };
                        o.insert(
                            "energy".into(),
                            json!({
                                "of": "NVML board energy over back-to-back replays, mJ per call and TFLOP/s per W; mean and 95% t interval over this run's windows (not the spread between runs); not part of the verdict",
                                "candidate": side(&e.candidate),
                                "base": e.base.as_ref().map(side),
                                "cand_over_base": e.ratio(),
                            }),
                        );
                    }
                    v
                })
                .collect(),
        );
        let mut s = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "null".into());
        s.push('\n');
        s
    }
}
