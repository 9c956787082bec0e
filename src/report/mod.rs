//! Reports of a run: the terminal table, the Markdown PR comment body and JSON, all rendered
//! from one [`Report`] view by an [`Exporter`].

mod json;
mod markdown;
mod table;

pub use json::JsonExporter;
pub use markdown::{MARKER, MarkdownExporter, escape_markdown};
pub use table::TableExporter;

use crate::comparison::Comparison;
use crate::config::GateSettings;
use crate::results::{BaselineRef, Environment, Parity, ResultsFile};
use crate::verdict::Verdict;

/// Output formats of `local`, `compare` and friends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Markdown,
}

/// Renders a report in one format.
pub trait Exporter {
    fn render(&self, report: &Report) -> String;
}

/// One line of the report: one shape.
#[derive(Clone, Debug)]
pub struct Row {
    pub shape: String,
    /// Candidate p50 in µs, also when there is no baseline.
    pub p50_cand: Option<f64>,
    pub tflops: Option<f64>,
    pub comparison: Option<Comparison>,
    pub parity: Option<Parity>,
    pub verdict: Verdict,
    pub error: Option<String>,
}

/// What a report shows.
#[derive(Clone, Debug)]
pub struct Report {
    pub config_name: Option<String>,
    pub rows: Vec<Row>,
    pub passed: bool,
    pub gate: GateSettings,
    pub environment: Option<Environment>,
    pub baseline: Option<BaselineRef>,
    pub commit: Option<String>,
    pub run_url: Option<String>,
    pub warnings: Vec<String>,
    /// What kept the whole run from a verdict, if anything.
    pub error: Option<String>,
}

impl Report {
    pub fn from_results(results: &ResultsFile) -> Report {
        Report {
            config_name: Some(results.config.name.clone()),
            rows: results
                .shapes
                .iter()
                .map(|s| Row {
                    shape: s.name.clone(),
                    p50_cand: s.summary.as_ref().map(|x| x.p50),
                    tflops: s.tflops,
                    comparison: s.comparison.clone(),
                    parity: s.parity.clone(),
                    verdict: s.verdict,
                    error: s.error.clone(),
                })
                .collect(),
            passed: results.passed,
            gate: results.gate.clone(),
            environment: results.environment.clone(),
            baseline: results.baseline.clone(),
            commit: results.git_commit.clone(),
            run_url: None,
            warnings: results.warnings.clone(),
            error: results.error.clone(),
        }
    }

    /// Counts of each verdict, worst first, leaving out zeros.
    pub fn counts(&self) -> Vec<(Verdict, usize)> {
        use Verdict::*;
        [
            Error,
            ParityFail,
            Regression,
            Inconclusive,
            NoBaseline,
            Improvement,
            Pass,
        ]
        .into_iter()
        .map(|v| (v, self.rows.iter().filter(|r| r.verdict == v).count()))
        .filter(|(_, n)| *n > 0)
        .collect()
    }

    /// The one-line verdict, e.g. `FAIL: 1 regression, 13 pass (14 shapes)`.
    pub fn headline(&self) -> String {
        if self.error.is_some() {
            return "ERROR: no verdict could be reached".into();
        }
        let status = if !self.passed {
            "FAIL"
        } else if self.rows.iter().any(|r| r.verdict.warns()) || !self.warnings.is_empty() {
            "PASS with warnings"
        } else {
            "PASS"
        };
        let counts: Vec<String> = self
            .counts()
            .iter()
            .map(|(v, n)| format!("{n} {v}"))
            .collect();
        format!(
            "{status}: {} ({} shape{})",
            counts.join(", "),
            self.rows.len(),
            if self.rows.len() == 1 { "" } else { "s" }
        )
    }
}

/// Δ of a ratio as a signed percentage: 1.0312 → "+3.12%".
pub fn pct(ratio: f64) -> String {
    format!("{:+.2}%", (ratio - 1.0) * 100.0)
}

/// A time in µs with 4 significant figures' worth of decimals.
pub(crate) fn micros(us: f64) -> String {
    if us >= 1000.0 {
        format!("{us:.1}")
    } else if us >= 100.0 {
        format!("{us:.2}")
    } else {
        format!("{us:.3}")
    }
}

/// A p-value: 3 significant figures, scientific below 1e-3.
pub(crate) fn pvalue(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// The cells every format shows, as text.
pub(crate) struct Cells {
    pub base: String,
    pub cand: String,
    pub delta: String,
    pub ci: String,
    pub cliff: String,
    pub p: String,
    pub parity: String,
    pub detectable: String,
}

impl Cells {
    pub fn of(row: &Row) -> Cells {
        let dash = || "—".to_owned();
        let c = row.comparison.as_ref();
        Cells {
            base: c.map(|c| micros(c.p50_base)).unwrap_or_else(dash),
            cand: c
                .map(|c| c.p50_cand)
                .or(row.p50_cand)
                .map(micros)
                .unwrap_or_else(dash),
            delta: c.map(|c| pct(c.ratio)).unwrap_or_else(dash),
            ci: c
                .map(|c| format!("[{}, {}]", pct(c.ci_low), pct(c.ci_high)))
                .unwrap_or_else(dash),
            cliff: c
                .map(|c| format!("{:+.2} {}", c.cliffs_delta, c.cliffs_magnitude))
                .unwrap_or_else(dash),
            // The p of the direction the estimate points to.
            p: c.map(|c| {
                pvalue(if c.ratio >= 1.0 {
                    c.mwu_p_holm
                } else {
                    c.mwu_p_faster_holm
                })
            })
            .unwrap_or_else(dash),
            parity: match &row.parity {
                None => dash(),
                Some(p) if p.unwritten > 0 => format!("FAIL: {} unwritten", p.unwritten),
                Some(p) if p.nan_or_inf > 0 => format!("FAIL: {} NaN/Inf", p.nan_or_inf),
                Some(p) => format!(
                    "{}{:.1e} / {:.1e}",
                    if p.passed() { "" } else { "FAIL: " },
                    p.rel_l2,
                    p.max_abs
                ),
            },
            detectable: c
                .map(|c| format!("{:.1}%", c.min_detectable * 100.0))
                .unwrap_or_else(dash),
        }
    }
}

/// The column titles, shared by the table and Markdown.
pub(crate) fn headers(gate: &GateSettings) -> [String; 10] {
    [
        "Shape".into(),
        "Base p50 µs".into(),
        "Cand p50 µs".into(),
        "Δp50".into(),
        format!("{:.0}% CI", gate.confidence * 100.0),
        "Cliff's δ".into(),
        "MWU p (Holm)".into(),
        "Parity rel L2 / max abs".into(),
        "Verdict".into(),
        "Detectable".into(),
    ]
}
