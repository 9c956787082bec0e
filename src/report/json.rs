//! JSON: one object per compared shape with the design's fields (all numbers), plus the
//! verdict as a string.

use serde_json::{Value, json};

use super::{Exporter, Report, Row};

pub struct JsonExporter {
    /// Print the single row as one object instead of an array (plain sample files).
    pub single: bool,
}

fn row_json(row: &Row) -> Value {
    let c = row.comparison.as_ref();
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
        "seed": c.map(|c| c.seed),
        "tflops": row.tflops,
        "parity": row.parity,
        "verdict": row.verdict,
        "error": row.error,
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
