//! JSON: one object per shape with the design's fields (all numbers), both references'
//! comparisons, and the verdict as a string.

use serde_json::{Value, json};

use super::{Exporter, Report, Row};
use crate::comparison::Comparison;

pub struct JsonExporter {
    /// Print the single row as one object instead of an array (plain sample files).
    pub single: bool,
}

fn comparison_json(c: &Comparison) -> Value {
    json!({
        "reference": c.reference,
        "n_base": c.n_base,
        "n_cand": c.n_cand,
        "p50_base": c.p50_base,
        "p50_cand": c.p50_cand,
        "ratio": c.ratio,
        "ci_low": c.ci_low,
        "ci_high": c.ci_high,
        "confidence": c.confidence,
        "lower_bound": c.lower_bound,
        "upper_bound": c.upper_bound,
        "se_log": c.se,
        "df": c.df,
        "margin_p": c.margin_p,
        "margin_p_holm": c.margin_p_holm,
        "margin_p_faster": c.margin_p_faster,
        "margin_p_faster_holm": c.margin_p_faster_holm,
        "stage": c.stage,
        "cliffs_delta": c.cliffs_delta,
        "cliffs_magnitude": c.cliffs_magnitude,
        "mwu_u": c.mwu_u,
        "mwu_p": c.mwu_p,
        "mwu_p_holm": c.mwu_p_holm,
        "mwu_p_faster": c.mwu_p_faster,
        "mwu_p_faster_holm": c.mwu_p_faster_holm,
        "min_detectable": c.min_detectable,
        "process_sd": c.process_sd,
        "process_sd_assumed": c.process_sd_assumed,
    })
}

/// The fields of earlier versions stay at the top level, filled from the deciding
/// comparison (A/B when it ran, else the stored baseline); `ab` and `stored` hold both.
fn row_json(row: &Row) -> Value {
    let c = row.primary();
    json!({
        "shape": row.shape,
        "n_base": c.map(|c| c.n_base),
        "n_cand": c.map(|c| c.n_cand),
        "p50_base": c.map(|c| c.p50_base),
        "p50_cand": c.map(|c| c.p50_cand).or(row.p50_cand),
        "ratio": c.map(|c| c.ratio),
        "ci_low": c.map(|c| c.ci_low),
        "ci_high": c.map(|c| c.ci_high),
        "confidence": c.map(|c| c.confidence),
        "cliffs_delta": c.map(|c| c.cliffs_delta),
        "cliffs_magnitude": c.map(|c| c.cliffs_magnitude),
        "mwu_u": c.map(|c| c.mwu_u),
        "mwu_p": c.map(|c| c.mwu_p),
        "mwu_p_holm": c.map(|c| c.mwu_p_holm),
        "mwu_p_faster": c.map(|c| c.mwu_p_faster),
        "mwu_p_faster_holm": c.map(|c| c.mwu_p_faster_holm),
        "min_detectable": c.map(|c| c.min_detectable),
        "margin_p_holm": c.map(|c| c.margin_p_holm),
        "lower_bound": c.map(|c| c.lower_bound),
        "ab": row.ab.as_ref().map(comparison_json),
        "stored": row.stored.as_ref().map(comparison_json),
        "decided_by": row.decided_by,
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
    })
}

impl Exporter for JsonExporter {
    fn render(&self, report: &Report) -> String {
        let value = match (self.single, report.rows.as_slice()) {
            (true, [row]) => row_json(row),
            _ => Value::Array(report.rows.iter().map(row_json).collect()),
        };
        let mut s = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "null".into());
        s.push('\n');
        s
    }
}
