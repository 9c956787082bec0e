//! Reports of a run: the terminal table, the Markdown PR comment body and JSON, all rendered
//! from one [`Report`] view by an [`Exporter`].

mod export;
mod json;
mod markdown;
mod table;

pub use export::{BenchmarkActionExporter, BmfExporter};
pub use json::JsonExporter;
pub use markdown::{MARKER, MarkdownExporter, escape_markdown};
pub use table::{TableExporter, fitted_table, stdout_width, wrap_lines};

use crate::comparison::{Comparison, Reference};
use crate::config::GateSettings;
use crate::results::{
    BaseInfo, BaselineRef, DriftCause, Environment, Parity, ResultsFile, ShapeResult,
};
use crate::verdict::{Policy, Verdict, gate_passes};

/// Output formats of `local`, `compare` and friends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Markdown,
    /// Bencher Metric Format (`bencher run --adapter json`).
    Bmf,
    /// github-action-benchmark's `customSmallerIsBetter` JSON.
    BenchmarkAction,
}

impl Format {
    /// The exporter of a format that renders a [`Report`] (all but the table).
    pub fn exporter(self) -> Option<Box<dyn Exporter>> {
        match self {
            Format::Table => None,
            Format::Json => Some(Box::new(JsonExporter { single: false })),
            Format::Markdown => Some(Box::new(MarkdownExporter)),
            Format::Bmf => Some(Box::new(BmfExporter)),
            Format::BenchmarkAction => Some(Box::new(BenchmarkActionExporter)),
        }
    }
}

/// Renders a report in one format.
pub trait Exporter {
    fn render(&self, report: &Report) -> String;
}

/// One line of the report: one shape.
#[derive(Clone, Debug)]
pub struct Row {
    pub shape: String,
    /// Candidate p50 in µs, also when there is no reference.
    pub p50_cand: Option<f64>,
    pub tflops: Option<f64>,
    /// Against the base kernels, same process.
    pub ab: Option<Comparison>,
    /// Against the stored baseline.
    pub stored: Option<Comparison>,
    pub decided_by: Option<Reference>,
    pub drift_cause: Option<DriftCause>,
    pub parity: Option<Parity>,
    pub verdict: Verdict,
    pub error: Option<String>,
    /// Lowest and highest round median of the candidate, µs.
    pub p50_range: Option<(f64, f64)>,
    /// Nsight Compute figures, base against candidate, when the shape was profiled.
    pub profile: Option<crate::profile::ShapeProfile>,
    /// The config's peers on this shape, and their p50s stored with the baseline.
    pub peers: Vec<crate::peers::PeerResult>,
    pub stored_peers: Vec<crate::peers::StoredPeer>,
}

impl Row {
    pub fn of(s: &ShapeResult) -> Row {
        Row {
            shape: s.name.clone(),
            p50_cand: s.summary.as_ref().map(|x| x.p50),
            tflops: s.tflops,
            ab: s.ab.clone(),
            stored: s.stored.clone(),
            decided_by: s.decided_by,
            drift_cause: s.drift.as_ref().map(|d| d.cause),
            parity: s.parity.clone(),
            verdict: s.verdict,
            error: s.error.clone().or_else(|| s.integrity.clone()),
            p50_range: crate::stats::Rounds::new(s.samples_us.clone())
                .ok()
                .map(|r| crate::stats::round_medians(&r))
                .and_then(|m| {
                    let lo = m.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = m.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
                }),
            profile: s.profile.clone(),
            peers: s.peers.clone(),
            stored_peers: s.stored_peers.clone(),
        }
    }

    /// The comparison that decides: A/B when it ran, else the stored baseline.
    pub fn primary(&self) -> Option<&Comparison> {
        self.ab.as_ref().or(self.stored.as_ref())
    }
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
    /// Information that is not a warning (how a reference was chosen, what was skipped).
    pub notes: Vec<String>,
    /// What kept the whole run from a verdict, if anything.
    pub error: Option<String>,
    /// The base of an A/B run.
    pub base: Option<BaseInfo>,
    pub policy: Policy,
    /// What the unpaired reference is called: "stored baseline" in a run, "BASE" in an
    /// offline `compare` of two files.
    pub stored_label: &'static str,
    /// How profiling went, when any shape was to be profiled.
    pub profiling: Option<crate::profile::ProfilingInfo>,
}

impl Report {
    pub fn from_results(results: &ResultsFile) -> Report {
        Report {
            config_name: Some(results.config.name.clone()),
            rows: results.shapes.iter().map(Row::of).collect(),
            // Never the file's own `passed`: recomputed from what it holds (fail closed).
            passed: results.error.is_none()
                && !results.shapes.is_empty()
                && gate_passes(
                    results.shapes.iter().map(|s| s.verdict),
                    Policy {
                        fail_on_drift: results.fail_on_drift,
                    },
                ),
            gate: results.gate.clone(),
            environment: results.environment.clone(),
            baseline: results.baseline.clone(),
            commit: results.git_commit.clone(),
            run_url: None,
            warnings: results.warnings.clone(),
            notes: results.notes.clone(),
            error: results.error.clone(),
            base: results.base.clone(),
            policy: Policy {
                fail_on_drift: results.fail_on_drift,
            },
            stored_label: "stored baseline",
            profiling: results.profiling.clone(),
        }
    }

    /// A report of shapes that are not part of a results file (offline compare of samples).
    pub fn from_shapes(shapes: &[ShapeResult], gate: GateSettings, passed: bool) -> Report {
        Report {
            config_name: None,
            rows: shapes.iter().map(Row::of).collect(),
            passed,
            gate,
            environment: None,
            baseline: None,
            commit: None,
            run_url: None,
            warnings: Vec::new(),
            notes: Vec::new(),
            error: None,
            base: None,
            policy: Policy::default(),
            stored_label: "stored baseline",
            profiling: None,
        }
    }

    /// The peers any row measured, in their order.
    pub fn peers(&self) -> Vec<crate::peers::Peer> {
        let mut all: Vec<crate::peers::Peer> = self
            .rows
            .iter()
            .flat_map(|r| r.peers.iter().map(|p| p.peer))
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// The table of the kernel against its peers: per shape our p50, then per peer its p50
    /// and our p50 / its p50, with the stored ratio when the baseline has one ("was").
    /// Empty when no peer ran.
    pub fn peer_rows(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let peers = self.peers();
        if peers.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let mut header = vec!["Shape".to_string(), "ours µs".to_string()];
        for p in &peers {
            header.push(format!("{} µs", p.column().trim_start_matches("vs ")));
            header.push(p.column().to_string());
        }
        let rows = self
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![
                    r.shape.clone(),
                    r.p50_cand
                        .map(|v| format!("{v:.2}"))
                        .unwrap_or_else(|| "—".into()),
                ];
                for p in &peers {
                    let found = r.peers.iter().find(|x| x.peer == *p);
                    row.push(
                        found
                            .and_then(|x| x.p50_us)
                            .map(|v| format!("{v:.2}"))
                            .unwrap_or_else(|| "—".into()),
                    );
                    let now = found.and_then(|x| x.ratio(r.p50_cand));
                    let was = r
                        .stored
                        .as_ref()
                        .map(|c| c.p50_base)
                        .zip(r.stored_peers.iter().find(|x| x.peer == *p))
                        .map(|(ours, theirs)| ours / theirs.p50_us);
                    row.push(match (now, was) {
                        (Some(_), Some(w)) => format!(
                            "{} (was {})",
                            crate::peers::ratio_text(now),
                            crate::peers::ratio_text(Some(w))
                        ),
                        _ => crate::peers::ratio_text(now),
                    });
                }
                row
            })
            .collect();
        (header, rows)
    }

    /// The profiled rows, in report order.
    pub fn profiled(&self) -> impl Iterator<Item = (&str, &crate::profile::ShapeProfile)> {
        self.rows
            .iter()
            .filter_map(|r| Some((r.shape.as_str(), r.profile.as_ref()?)))
    }

    /// "Profiled 2 shapes with ncu 2025.3 in 14 s (budget 300 s); reports in DIR".
    pub fn profiling_line(&self) -> Option<String> {
        let p = self.profiling.as_ref()?;
        let n = self.profiled().count();
        Some(format!(
            "profiled {n} shape{} with ncu{} in {:.0} s (budget {:.0} s){}",
            if n == 1 { "" } else { "s" },
            p.ncu_version
                .as_deref()
                .map(|v| format!(" ({v})"))
                .unwrap_or_default(),
            p.seconds,
            p.budget_s,
            p.dir
                .as_deref()
                .map(|d| format!("; .ncu-rep files in {d}"))
                .unwrap_or_default()
        ))
    }

    /// Which references decided, for the one-line verdict: "A/B", "stored baseline" or both.
    pub fn deciders(&self) -> String {
        let mut seen: Vec<Reference> = Vec::new();
        for r in &self.rows {
            if let Some(d) = r.decided_by
                && !seen.contains(&d)
            {
                seen.push(d);
            }
        }
        seen.sort_by_key(|r| *r != Reference::Ab);
        seen.iter()
            .map(|r| match r {
                Reference::Ab => r.to_string(),
                Reference::Stored => self.stored_label.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(" and ")
    }

    /// Counts of each verdict, worst first, leaving out zeros.
    pub fn counts(&self) -> Vec<(Verdict, usize)> {
        use Verdict::*;
        [
            Error,
            ParityFail,
            Regression,
            Drift,
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
        if self.error.is_some() || self.rows.is_empty() {
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
        let deciders = self.deciders();
        format!(
            "{status}: {} ({} shape{}){}",
            counts.join(", "),
            self.rows.len(),
            if self.rows.len() == 1 { "" } else { "s" },
            if deciders.is_empty() {
                String::new()
            } else {
                format!("; decided by {deciders}")
            }
        )
    }
}

/// Shown under a report where a stored comparison had to assume the between-process spread.
pub(crate) const ASSUMED_SPREAD_NOTE: &str = "* the stored baseline records no spread between processes (recorded before ci-gate measured it, or from one process): 0.5% was assumed; re-record it with `ci-gate baseline update` (three processes)";

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
    /// Δp50 of the deciding comparison (A/B when it ran).
    pub ab: String,
    pub ci: String,
    pub stored: String,
    pub cliff: String,
    pub p: String,
    pub parity: String,
    pub verdict: String,
    pub detectable: String,
}

impl Cells {
    pub fn of(row: &Row) -> Cells {
        let dash = || "—".to_owned();
        let c = row.primary();
        Cells {
            base: c.map(|c| micros(c.p50_base)).unwrap_or_else(dash),
            cand: c
                .map(|c| c.p50_cand)
                .or(row.p50_cand)
                .map(micros)
                .unwrap_or_else(dash),
            ab: c.map(|c| pct(c.ratio)).unwrap_or_else(dash),
            ci: c
                .map(|c| format!("[{}, {}]", pct(c.ci_low), pct(c.ci_high)))
                .unwrap_or_else(dash),
            stored: row
                .stored
                .as_ref()
                .map(|c| {
                    format!(
                        "{}{}",
                        pct(c.ratio),
                        if c.process_sd_assumed { "*" } else { "" }
                    )
                })
                .unwrap_or_else(dash),
            cliff: c
                .map(|c| format!("{:+.2} {}", c.cliffs_delta, c.cliffs_magnitude))
                .unwrap_or_else(dash),
            // The margin p of the direction the estimate points to.
            p: c.map(|c| {
                pvalue(if c.ratio >= 1.0 {
                    c.margin_p_holm
                } else {
                    c.margin_p_faster_holm
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
            verdict: match row.drift_cause {
                Some(cause) if row.verdict == Verdict::Drift => format!("drift ({cause})"),
                _ => row.verdict.to_string(),
            },
            detectable: c
                .map(|c| format!("{:.1}%", c.min_detectable * 100.0))
                .unwrap_or_else(dash),
        }
    }
}

impl Cells {
    /// The cells in the order of [`headers`], `shape` first.
    pub fn columns(self, shape: String) -> [String; 11] {
        [
            shape,
            self.base,
            self.cand,
            self.ab,
            self.ci,
            self.stored,
            self.cliff,
            self.p,
            self.parity,
            self.verdict,
            self.detectable,
        ]
    }
}

/// The column titles, shared by the table and Markdown.
pub(crate) fn headers(report: &Report) -> [String; 11] {
    let gate = &report.gate;
    [
        "Shape".into(),
        "Base p50 µs".into(),
        "Cand p50 µs".into(),
        "Δp50".into(),
        format!("{:.0}% CI", gate.confidence * 100.0),
        if report.stored_label == "stored baseline" {
            "vs stored".into()
        } else {
            format!("vs {}", report.stored_label)
        },
        "Cliff's δ".into(),
        "Margin p (Holm)".into(),
        "Parity rel L2 / max abs".into(),
        "Verdict".into(),
        "Detectable".into(),
    ]
}
