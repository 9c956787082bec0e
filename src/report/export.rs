//! Exports for dashboards users may already run: Bencher's metric format (BMF) and the JSON
//! that github-action-benchmark reads with `tool: customSmallerIsBetter`. One entry per shape
//! that has a candidate p50; shapes that could not be measured are left out (the verdict,
//! not a dashboard, is where they show).

use serde_json::{Map, Value, json};

use super::{Exporter, Report, Row, pct};
use crate::comparison::Reference;

/// The candidate's rounds' median range, in µs, of a row.
fn range(row: &Row) -> Option<(f64, f64)> {
    row.p50_range
}

/// Bencher Metric Format: `{shape: {"latency": {value, lower_value, upper_value}}}` in
/// nanoseconds (Bencher's built-in latency measure), plus `"tflops"` where known. The bounds
/// are the lowest and highest round median of the candidate.
pub(crate) struct BmfExporter;

impl Exporter for BmfExporter {
    fn render(&self, report: &Report) -> String {
        let mut out = Map::new();
        for row in &report.rows {
            let Some(p50) = row.p50_cand.filter(|_| row.error.is_none()) else {
                continue;
            };
            let mut latency = Map::new();
            latency.insert("value".into(), json!(p50 * 1e3));
            if let Some((lo, hi)) = range(row) {
                latency.insert("lower_value".into(), json!(lo * 1e3));
                latency.insert("upper_value".into(), json!(hi * 1e3));
            }
            let mut measures = Map::new();
            measures.insert("latency".into(), Value::Object(latency));
            if let Some(t) = row.tflops {
                measures.insert("tflops".into(), json!({ "value": t }));
            }
            out.insert(row.shape.clone(), Value::Object(measures));
        }
        let mut s = serde_json::to_string_pretty(&Value::Object(out)).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// github-action-benchmark's `customSmallerIsBetter`: `[{name, unit: "us", value, range,
/// extra}]`, with the range of the candidate's round medians and the verdict in `extra`.
pub(crate) struct BenchmarkActionExporter;

impl Exporter for BenchmarkActionExporter {
    fn render(&self, report: &Report) -> String {
        let entries: Vec<Value> = report
            .rows
            .iter()
            .filter(|row| row.error.is_none())
            .filter_map(|row| {
                let p50 = row.p50_cand?;
                let spread = range(row).map(|(lo, hi)| (hi - lo) / 2.0);
                let mut extra = format!("verdict: {}", row.verdict);
                if let Some(c) = row.primary() {
                    let against = match c.reference {
                        Reference::Ab => "A/B",
                        Reference::Stored => report.stored_label,
                    };
                    extra.push_str(&format!(
                        "; {} {} ({against})",
                        c.method.ratio_label(),
                        pct(c.ratio)
                    ));
                }
                let mut e = json!({
                    "name": row.shape,
                    "unit": "us",
                    "value": p50,
                    "extra": extra,
                });
                if let Some(r) = spread {
                    e["range"] = json!(format!("± {r:.3}"));
                }
                Some(e)
            })
            .collect();
        let mut s = serde_json::to_string_pretty(&Value::Array(entries)).unwrap_or_default();
        s.push('\n');
        s
    }
}
