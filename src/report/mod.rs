//! Reports of a run: the terminal table, the Markdown PR comment body and JSON, all rendered
//! from one [`Report`] view by an [`Exporter`].

mod energy;
mod export;
mod json;
mod markdown;
mod table;

pub(crate) use export::{BenchmarkActionExporter, BmfExporter};
pub(crate) use json::JsonExporter;
pub use markdown::MarkdownExporter;
pub(crate) use markdown::{MARKER, escape_markdown};
pub use table::TableExporter;
pub(crate) use table::{fitted_table, fitted_table_keep, name_row, stdout_width, wrap_lines};

use crate::comparison::{Comparison, Method, Reference, SpreadSource};
use crate::config::GateSettings;
use crate::results::{
    BaseInfo, BaselineRef, Environment, Parity, ResultsFile, ShapeResult, passed,
};
use crate::verdict::{DriftCause, Policy, Verdict};

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

/// `report` in `format`, as every command prints it: the table fitted to stdout (every
/// column with `wide`), or an exporter's text. The one place a format is dispatched.
pub fn render(report: &Report, format: Format, wide: bool) -> String {
    match format {
        Format::Table => TableExporter::for_stdout(wide).render(report),
        Format::Json => JsonExporter.render(report),
        Format::Markdown => MarkdownExporter.render(report),
        Format::Bmf => BmfExporter.render(report),
        Format::BenchmarkAction => BenchmarkActionExporter.render(report),
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
    /// The stored baseline holds the shape but was measured by another method: not
    /// compared (`ShapeResult::stored_other_method`).
    pub stored_other_method: bool,
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
    /// A/B only: the pooled p50 ratio (all candidate values over all base values) and, for
    /// [`POOLED_MIN_PAIRS`] or more pairs, its pairs-resampled bootstrap interval.
    pub pooled: Option<Pooled>,
}

/// The pooled p50 ratio of an A/B shape, beside the paired test's ratio of round medians.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pooled {
    /// p50 of all candidate values / p50 of all base values.
    pub ratio: f64,
    /// Its pairs-resampled percentile bootstrap interval at the gate's confidence.
    pub interval: Option<crate::stats::Interval>,
}

/// Fewest A/B pairs for which the report shows a bootstrap interval of the pooled p50 ratio
/// (below it a bootstrap under-covers; the trimmed test's interval is the one to read).
pub(crate) const POOLED_MIN_PAIRS: usize = 16;

/// The pooled p50 ratio of a shape's A/B rounds and, from [`POOLED_MIN_PAIRS`] pairs, its
/// pairs bootstrap (`gate.bootstrap_resamples` resamples at most, seeded by the gate's seed
/// and the shape's name; see `stats::pooled_p50_pairs_bootstrap` for its cost bound).
fn pooled(s: &ShapeResult, gate: &GateSettings) -> Option<Pooled> {
    // The A/B comparison's p50s are the pooled medians of the two sides.
    let ab = s.ab.as_ref()?;
    let pairs = s.samples_us.len();
    let values: usize = s
        .samples_us
        .iter()
        .chain(&s.base_samples_us)
        .map(Vec::len)
        .sum();
    // Only where the bootstrap could afford its resamples (see its cost bound): a million
    // pairs of one value each are not copied for nothing.
    let affordable = (values as f64) * f64::from(crate::stats::PAIRS_BOOTSTRAP_MIN_RESAMPLES)
        <= crate::stats::PAIRS_BOOTSTRAP_BUDGET;
    let interval = (pairs >= POOLED_MIN_PAIRS && pairs == s.base_samples_us.len() && affordable)
        .then(|| {
            let base = crate::stats::Rounds::new(s.base_samples_us.clone()).ok()?;
            let cand = crate::stats::Rounds::new(s.samples_us.clone()).ok()?;
            crate::stats::pooled_p50_pairs_bootstrap(
                &base,
                &cand,
                gate.bootstrap_resamples,
                crate::comparison::shape_seed(gate.seed, &s.name),
            )
            .ok()
            .flatten()
            .map(|d| d.interval(gate.confidence))
        })
        .flatten();
    Some(Pooled {
        ratio: ab.p50_ratio(),
        interval,
    })
}

impl Row {
    /// The row of one shape; `gate` seeds and sizes the pooled p50 bootstrap.
    pub(crate) fn of(s: &ShapeResult, gate: &GateSettings) -> Row {
        // Files of earlier versions did not record the level of their bounds.
        let design = s.measurement.as_ref().and_then(|m| m.design);
        let level = |c: &Comparison| c.clone().with_recorded_level(design, gate.alpha);
        Row {
            shape: s.name.clone(),
            p50_cand: s.summary.as_ref().map(|x| x.p50),
            tflops: s.tflops,
            ab: s.ab.as_ref().map(level),
            stored: s.stored.as_ref().map(level),
            decided_by: s.decided_by,
            stored_other_method: s.stored_other_method,
            drift_cause: s.drift.as_ref().map(|d| d.cause),
            parity: s.parity.clone(),
            verdict: s.verdict,
            error: s.error.clone().or_else(|| s.integrity.clone()),
            p50_range: {
                let m: Vec<f64> = s
                    .samples_us
                    .iter()
                    .filter_map(|r| crate::stats::median(r))
                    .collect();
                let lo = m.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = m.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
            },
            profile: s.profile.clone(),
            peers: s.peers.clone(),
            stored_peers: s.stored_peers.clone(),
            pooled: pooled(s, gate),
        }
    }

    /// Whether this row fails the check under `policy` (a drift traced to the runner does
    /// not).
    pub(crate) fn fails(&self, policy: Policy) -> bool {
        policy.fails(self.verdict, self.drift_cause)
    }

    /// The comparison that decides: A/B when it ran, else the stored baseline.
    pub(crate) fn primary(&self) -> Option<&Comparison> {
        self.ab.as_ref().or(self.stored.as_ref())
    }

    /// The comparison that decided this row's verdict (A/B when it ran, the stored baseline
    /// for a drift or where no A/B ran), and the other one.
    pub(crate) fn deciding(&self) -> (Option<&Comparison>, Option<&Comparison>) {
        match self.decided_by {
            Some(Reference::Stored) => (self.stored.as_ref(), self.ab.as_ref()),
            Some(Reference::Ab) => (self.ab.as_ref(), self.stored.as_ref()),
            None => (self.primary(), None),
        }
    }
}

/// Which one-sided bound of a comparison decided a verdict: the lower one (the test of "more
/// than m slower") for a regression, a drift, and wherever the estimate is a slowdown; the
/// upper one (the test of "more than m faster") for an improvement and wherever the
/// estimate is a speed-up.
pub(crate) fn lower_side(c: &Comparison, verdict: Verdict) -> bool {
    match verdict {
        Verdict::Regression | Verdict::Drift => true,
        Verdict::Improvement => false,
        _ => c.ratio >= 1.0,
    }
}

/// A bound or interval end as a ratio: `None` where there is none (the values are too few
/// for its level, recorded as 0 or a non-finite number).
pub(crate) fn finite_bound(v: f64) -> Option<f64> {
    (v.is_finite() && v > 0.0).then_some(v)
}

/// The bound that decided: whether it is the lower one ([`lower_side`]), and its value where
/// there is one.
pub(crate) fn deciding_bound(c: &Comparison, verdict: Verdict) -> (bool, Option<f64>) {
    let lower = lower_side(c, verdict);
    let value = if lower { c.lower_bound } else { c.upper_bound };
    (lower, finite_bound(value))
}

/// The bound that decided (see [`lower_side`]) with its side and level: `≥ +2.31% (95.5%)`
/// (the ratio is at least 1.0231 with one-sided confidence 95.5%), `≤ -4.10% (99.5%)`;
/// `none at 95% (too few values)` where the values are too few for a bound at that level.
pub(crate) fn bound_text(c: &Comparison, verdict: Verdict) -> String {
    let (lower, value) = deciding_bound(c, verdict);
    let level = c
        .bound_level
        .map_or_else(|| "level not recorded".to_owned(), level_text);
    let Some(value) = value else {
        return format!("none at {level} (too few values)");
    };
    format!("{} {} ({level})", if lower { "≥" } else { "≤" }, pct(value))
}

/// The bound that decided as a phrase for prose: `one-sided 95.5% bound ≥ +2.31%`, or `no
/// one-sided bound at 95% (too few values)`.
pub(crate) fn bound_phrase(c: &Comparison, verdict: Verdict) -> String {
    let (lower, value) = deciding_bound(c, verdict);
    let level = c.bound_level.map(level_text);
    let Some(value) = value else {
        return format!(
            "no one-sided bound at {} (too few values)",
            level.as_deref().unwrap_or("its level")
        );
    };
    format!(
        "one-sided {}bound {} {}",
        level.map(|l| format!("{l} ")).unwrap_or_default(),
        if lower { "≥" } else { "≤" },
        pct(value)
    )
}

/// A one-sided confidence level as a percentage: 0.955 → "95.5%", 0.95 → "95%".
pub(crate) fn level_text(level: f64) -> String {
    let p = level * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// What a report shows.
#[derive(Clone, Debug)]
pub struct Report {
    pub config_name: Option<String>,
    /// The config file the run read, as recorded (for the commands the comment suggests).
    pub config_path: Option<String>,
    pub rows: Vec<Row>,
    pub passed: bool,
    pub gate: GateSettings,
    pub environment: Option<Environment>,
    pub baseline: Option<BaselineRef>,
    /// The method that measured the run (`crate::method`), where it is known.
    pub method: Option<crate::method::Method>,
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
    /// Energy per call by shape, recomputed from the windows (src/report/energy.rs).
    pub energy: Vec<(String, crate::energy::ShapeEnergy)>,
    pub energy_info: Option<crate::energy::EnergyInfo>,
    /// The energy figures are the stored baseline's (this run measured none).
    pub energy_from_baseline: bool,
    /// The kernels whose compiler resources moved (issue 23), when there is a reference.
    pub resources: Option<crate::resources::ResourceSection>,
    /// How the peers were timed and what differs from the kernel's timing (a footnote of the
    /// "Against PyTorch" table).
    pub peer_note: Option<String>,
    /// Where the run's time went.
    pub timing: Option<crate::results::RunTiming>,
}

impl Report {
    pub fn from_results(results: &ResultsFile) -> Report {
        Report {
            config_name: Some(results.config.name.clone()),
            config_path: Some(results.config.path.clone()),
            rows: results
                .shapes
                .iter()
                .map(|s| Row::of(s, &results.gate))
                .collect(),
            // Never the file's own `passed`: recomputed from what it holds (fail closed).
            passed: results.passed(),
            gate: results.gate.clone(),
            environment: results.environment.clone(),
            baseline: results.baseline.clone(),
            method: results.method.clone(),
            commit: results.git_commit.clone(),
            run_url: None,
            warnings: results.warnings.clone(),
            notes: results.notes.clone(),
            error: results.error.clone(),
            base: results.base.clone(),
            policy: results.policy(),
            stored_label: "stored baseline",
            profiling: results.profiling.clone(),
            energy: energy::recomputed(&results.shapes, results.gate.confidence),
            energy_info: results.energy.clone(),
            energy_from_baseline: !results.shapes.iter().any(|s| s.energy.is_some())
                && results.shapes.iter().any(|s| s.stored_energy.is_some()),
            resources: crate::resources::ResourceSection::of(&results.kernel_resources),
            peer_note: results
                .peers
                .as_ref()
                .and_then(|p| p.method.as_ref())
                .map(|m| m.note.clone()),
            timing: results.timing.clone(),
        }
    }

    /// A report of shapes that are not part of a results file (offline compare), judged
    /// under the default policy.
    pub(crate) fn from_shapes(shapes: &[ShapeResult], gate: GateSettings) -> Report {
        Report {
            config_name: None,
            config_path: None,
            rows: shapes.iter().map(|s| Row::of(s, &gate)).collect(),
            passed: passed(None, shapes, Policy::default()),
            gate,
            environment: None,
            baseline: None,
            method: None,
            commit: None,
            run_url: None,
            warnings: Vec::new(),
            notes: Vec::new(),
            error: None,
            base: None,
            policy: Policy::default(),
            stored_label: "stored baseline",
            profiling: None,
            energy: Vec::new(),
            energy_from_baseline: false,
            peer_note: None,
            timing: None,
            energy_info: None,
            resources: None,
        }
    }

    /// The warnings a reader must act on: all but the informational ones
    /// ([`is_informational`]).
    pub(crate) fn actionable_warnings(&self) -> Vec<&String> {
        self.warnings
            .iter()
            .filter(|w| !is_informational(w))
            .collect()
    }

    /// The config as a repository path for suggested commands: `configs/NAME.yaml` out of
    /// the recorded path (which in CI is under a checkout directory, e.g.
    /// `base/configs/pr.yaml`), else `configs/<config name>.yaml`.
    pub(crate) fn config_path(&self) -> String {
        if let Some(p) = &self.config_path
            && let Some(i) = p.rfind("configs/")
        {
            return p[i..].to_owned();
        }
        format!(
            "configs/{}.yaml",
            self.config_name.as_deref().unwrap_or("pr")
        )
    }

    /// The `ci-gate bisect` command that finds the commit between the stored baseline's
    /// commit and this run's that made `shape` slower; `None` where either commit is unknown
    /// or not a commit id ([`bisect_command`]).
    pub(crate) fn bisect_command(&self, shape: &str) -> Option<String> {
        let good = self.baseline.as_ref()?.commit.as_deref()?;
        let bad = self.commit.as_deref()?;
        bisect_command(good, bad, &[shape], &self.config_path())
    }

    /// The peers any row measured, in their order.
    pub(crate) fn peers(&self) -> Vec<crate::peers::Peer> {
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
    pub(crate) fn peer_rows(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let peers = self.peers();
        if peers.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let mut header = vec!["Shape".to_string(), "ours µs".to_string()];
        for p in &peers {
            header.push(format!("{} µs", p.label()));
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
                    // PyTorch's default SDPA says which backend it chose on this shape.
                    let chose = found
                        .filter(|x| x.peer == crate::peers::Peer::TorchSdpa)
                        .and_then(|x| x.backend.as_deref())
                        .map(|b| format!(" ({b})"))
                        .unwrap_or_default();
                    row.push(
                        found
                            .and_then(|x| x.p50_us)
                            .map(|v| format!("{v:.2}{chose}"))
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
    pub(crate) fn profiled(&self) -> impl Iterator<Item = (&str, &crate::profile::ShapeProfile)> {
        self.rows
            .iter()
            .filter_map(|r| Some((r.shape.as_str(), r.profile.as_ref()?)))
    }

    /// "Profiled 2 shapes with ncu 2025.3 in 14 s (budget 300 s); reports in DIR".
    pub(crate) fn profiling_line(&self) -> Option<String> {
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
    pub(crate) fn deciders(&self) -> String {
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
    pub(crate) fn counts(&self) -> Vec<(Verdict, usize)> {
        use Verdict::*;
        [
            Error,
            ParityFail,
            Regression,
            Drift,
            Inconclusive,
            OtherMethod,
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
    pub(crate) fn headline(&self) -> String {
        if self.error.is_some() || self.rows.is_empty() {
            return "ERROR: no verdict could be reached".into();
        }
        let status = if !self.passed {
            "FAIL"
        } else if self.rows.iter().any(|r| r.verdict.warns())
            || !self.actionable_warnings().is_empty()
            || !findings(self).0.is_empty()
        {
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

/// Whether a warning of a run is information rather than something to act on: the SM
/// clock moving while a shape was measured happens on most runs of a boosting GPU (the
/// paired design cancels it), so it is shown as a note, not a ⚠️, and makes no "PASS with
/// warnings".
pub(crate) fn is_informational(warning: &str) -> bool {
    warning.starts_with("the SM clock changed while measuring") || warning == ANOTHER_CARD_NOTE
}

/// What a run says where its stored baseline was recorded on another card of this GPU model
/// (`run::stored`): information, not a warning, since a pool of runners of one model is how
/// many repositories run, and the A/B is not affected.
pub(crate) const ANOTHER_CARD_NOTE: &str = "the stored baseline was recorded on another card of this GPU model: cards of one model differ by a few percent, so a shape's difference from it can be the card's (an A/B, both sides on this card, is not affected)";

/// What this report's comparisons found that a reader must know, beyond the table: each a
/// line (warnings first, then notes), computed from the rows alone.
pub(crate) fn findings(report: &Report) -> (Vec<String>, Vec<String>) {
    let (mut warnings, mut notes) = (Vec::new(), Vec::new());
    let reference = |c: &Comparison| match c.reference {
        Reference::Ab => "A/B".to_owned(),
        Reference::Stored => report.stored_label.to_owned(),
    };
    for row in &report.rows {
        for c in [&row.ab, &row.stored].into_iter().flatten() {
            if c.p50_outside_interval() {
                warnings.push(format!(
                    "{}: the pooled p50 moved {} ({}), outside the {:.0}% interval of {} [{}, {}]: the distribution inside the rounds changed shape, so {} is not the p50 change",
                    row.shape,
                    pct(c.p50_ratio()),
                    reference(c),
                    c.confidence * 100.0,
                    c.method.ratio_label(),
                    pct(c.ci_low),
                    pct(c.ci_high),
                    c.method.ratio_label()
                ));
            }
        }
        if row.verdict == Verdict::Drift
            && row.drift_cause == Some(DriftCause::Code)
            && let Some(cmd) = report.bisect_command(&row.shape)
        {
            warnings.push(format!(
                "{}: drift traced to the code (slower than the stored baseline's own kernels measured now): find the commit that crept with `{cmd}`",
                row.shape
            ));
        }
        if row.verdict == Verdict::Drift && row.drift_cause == Some(DriftCause::Runner) {
            warnings.push(format!(
                "{}: drift traced to the runner (the stored baseline's own kernels are as slow now): the baseline is stale, which fails nothing; re-record it on this runner with `ci-gate baseline update --reason \"runner moved\"`",
                row.shape
            ));
        }
    }
    let sources = |want: SpreadSource| {
        report.rows.iter().any(|r| {
            r.stored
                .as_ref()
                .is_some_and(|c| c.process_sd_source == Some(want))
        })
    };
    let default_sd = crate::stats::ProcessSpread::ASSUMED.sd * 100.0;
    if sources(SpreadSource::Assumed) {
        // The smallest change the assumed spread lets the rule flag, even with no sampling
        // noise at all (it differs with the look's level and the method).
        let floors: Vec<f64> = report
            .rows
            .iter()
            .filter_map(|r| r.stored.as_ref())
            .filter(|c| c.process_sd_source == Some(SpreadSource::Assumed))
            .filter_map(|c| c.min_flaggable)
            .collect();
        let lo = floors.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = floors.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let floor = if !lo.is_finite() {
            String::new()
        } else if hi - lo < 0.0005 {
            format!(
                "; with it, a change must exceed about {} to be flagged, even with no noise in the values at all",
                pct(1.0 + lo)
            )
        } else {
            format!(
                "; with it, a change must exceed {} to {} (by shape) to be flagged, even with no noise in the values at all",
                pct(1.0 + lo),
                pct(1.0 + hi)
            )
        };
        notes.push(if report.stored_label == "stored baseline" {
            format!(
                "the stored baseline records no spread between processes (recorded before ci-gate measured it, or from one process): the conservative default {default_sd:.1}% was assumed{floor}; re-record it with `ci-gate baseline update` ({} processes)",
                crate::comparison::MIN_PROCESSES
            )
        } else {
            format!(
                "BASE and CAND are taken as measured in separate processes: the conservative default spread between processes, {default_sd:.1}% (sd of the log p50), was added{floor}; --process-sd F states the true one (0 if both came from one process)"
            )
        });
    }
    if sources(SpreadSource::FewProcesses) {
        notes.push(format!(
            "the stored baseline's spread between processes was estimated from fewer than {} processes, so at least {:.1}% is used; re-record it with `ci-gate baseline update` ({} processes) for a sharper comparison",
            crate::comparison::MIN_PROCESSES,
            crate::comparison::FEW_PROCESSES_FLOOR * 100.0,
            crate::comparison::MIN_PROCESSES
        ));
    }
    (warnings, notes)
}

/// `ci-gate bisect GOOD BAD --shape NAME... --config FILE`, the command that finds the
/// commit between `good` and `bad` that made the shapes slower. `None` unless both commits
/// are hex commit ids (`validate::commit`) and every shape name and the config path are
/// plain (ASCII letters, digits, `_`, `-`, `.`, `/`, not starting with `-`): text read from
/// files is never pasted into a command line a reader may run. `None` too where the two
/// commits are one (the change is not committed: nothing to bisect).
pub(crate) fn bisect_command(
    good: &str,
    bad: &str,
    shapes: &[&str],
    config: &str,
) -> Option<String> {
    crate::validate::commit(good).ok()?;
    crate::validate::commit(bad).ok()?;
    if good.eq_ignore_ascii_case(bad) {
        return None;
    }
    let plain = |s: &str| {
        !s.is_empty()
            && !s.starts_with('-')
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
    };
    if !shapes.iter().all(|s| plain(s)) || !plain(config) {
        return None;
    }
    let mut cmd = format!(
        "ci-gate bisect {} {}",
        crate::text::short_commit(good),
        crate::text::short_commit(bad)
    );
    for s in shapes {
        cmd.push_str(&format!(" --shape {s}"));
    }
    cmd.push_str(&format!(" --config {config}"));
    Some(cmd)
}

/// Δ of a ratio as a signed percentage: 1.0312 → "+3.12%".
pub(crate) fn pct(ratio: f64) -> String {
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

/// The columns of the table and the Markdown, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Col {
    Shape,
    BaseP50,
    CandP50,
    /// The deciding comparison's ratio ([`Method::ratio_label`]).
    Delta,
    /// The one-sided bound that decided, with its level ([`bound_text`]).
    Bound,
    /// The two-sided interval of the estimate: a description, not the decision.
    Interval,
    /// A/B: the pooled p50 ratio and its pairs bootstrap interval.
    Pooled,
    /// The stored baseline's ratio, beside the A/B one.
    Stored,
    Cliff,
    MarginP,
    Parity,
    Verdict,
    Detectable,
}

impl Col {
    /// Left-aligned columns (text); the others are numbers, right-aligned.
    pub(crate) fn left(self) -> bool {
        matches!(
            self,
            Col::Shape
                | Col::Bound
                | Col::Interval
                | Col::Pooled
                | Col::Cliff
                | Col::Parity
                | Col::Verdict
        )
    }

    /// How useful a column is when the width runs out (0 = most).
    pub(crate) fn priority(self) -> usize {
        match self {
            Col::Shape => 0,
            Col::Verdict => 1,
            Col::Delta => 2,
            Col::Bound => 3,
            Col::Stored => 4,
            Col::Pooled => 5,
            Col::CandP50 => 6,
            Col::Detectable => 7,
            Col::Interval => 8,
            Col::BaseP50 => 9,
            Col::Cliff => 10,
            Col::MarginP => 11,
            Col::Parity => 12,
        }
    }
}

/// The method every deciding comparison of the report used, if they agree (for the titles).
fn shared_method(report: &Report) -> Option<Method> {
    let mut methods = report
        .rows
        .iter()
        .filter_map(|r| r.primary().map(|c| c.method));
    let first = methods.next()?;
    methods.all(|m| m == first).then_some(first)
}

/// The columns this report shows, with their titles: the pooled p50 only where an A/B ran,
/// the stored ratio only where it is not already the deciding one.
pub(crate) fn columns(report: &Report) -> Vec<(Col, String)> {
    let gate = &report.gate;
    let method = shared_method(report).unwrap_or(Method::PairedRounds);
    let units = if method == Method::MedianBootstrap {
        "values"
    } else {
        "round p50s"
    };
    let m = gate.max_p50_regression * 100.0;
    let mut cols = vec![
        (Col::Shape, "Shape".to_owned()),
        (Col::BaseP50, "Base p50 µs".to_owned()),
        (Col::CandP50, "Cand p50 µs".to_owned()),
        (Col::Delta, method.ratio_label().to_owned()),
        (Col::Bound, "One-sided bound".to_owned()),
        (
            Col::Interval,
            format!(
                "{:.0}% CI ({}, description)",
                gate.confidence * 100.0,
                method.interval_label()
            ),
        ),
    ];
    if report.rows.iter().any(|r| r.pooled.is_some()) {
        // The bracket names the interval shown in it: none under POOLED_MIN_PAIRS pairs.
        let with_interval = report
            .rows
            .iter()
            .any(|r| r.pooled.as_ref().is_some_and(|p| p.interval.is_some()));
        let title = if with_interval {
            "Δ pooled p50 [pairs bootstrap]"
        } else {
            "Δ pooled p50"
        };
        cols.push((Col::Pooled, title.to_owned()));
    }
    if report
        .rows
        .iter()
        .any(|r| r.ab.is_some() && r.stored.is_some())
    {
        cols.push((
            Col::Stored,
            format!(
                "{} vs {}",
                Method::UnpairedRounds.ratio_label(),
                if report.stored_label == "stored baseline" {
                    "stored"
                } else {
                    report.stored_label
                }
            ),
        ));
    }
    cols.extend([
        (Col::Cliff, format!("Cliff's δ ({units})")),
        (Col::MarginP, format!("Margin p (±{m:.1}%)")),
        (Col::Parity, "Parity rel L2 / max abs/s_V".to_owned()),
        (Col::Verdict, "Verdict".to_owned()),
        (Col::Detectable, "Detectable (80%)".to_owned()),
    ]);
    cols
}

/// The text of one cell.
pub(crate) fn cell(col: Col, row: &Row) -> String {
    let dash = || "—".to_owned();
    let c = row.primary();
    match col {
        Col::Shape => row.shape.clone(),
        Col::BaseP50 => c.map(|c| micros(c.p50_base)).unwrap_or_else(dash),
        Col::CandP50 => c
            .map(|c| c.p50_cand)
            .or(row.p50_cand)
            .map(micros)
            .unwrap_or_else(dash),
        Col::Delta => c.map(|c| pct(c.ratio)).unwrap_or_else(dash),
        Col::Bound => match row.deciding() {
            // A drift is decided by the stored baseline while Δ shows A/B: say whose bound.
            (Some(d), _) if row.primary().is_some_and(|p| p.reference != d.reference) => {
                format!("stored {}", bound_text(d, row.verdict))
            }
            (Some(d), _) => bound_text(d, row.verdict),
            (None, _) => dash(),
        },
        Col::Interval => c.map(interval_text).unwrap_or_else(dash),
        Col::Pooled => match row.pooled {
            Some(Pooled {
                ratio,
                interval: Some(i),
            }) => format!("{} [{}, {}]", pct(ratio), pct(i.low), pct(i.high)),
            Some(Pooled { ratio, .. }) => pct(ratio),
            None => dash(),
        },
        Col::Stored => row
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
        Col::Cliff => c
            .map(|c| format!("{:+.2} {}", c.cliffs_delta, c.cliffs_magnitude))
            .unwrap_or_else(dash),
        // The margin p of the direction the estimate points to.
        Col::MarginP => c
            .map(|c| {
                pvalue(if c.ratio >= 1.0 {
                    c.margin_p
                } else {
                    c.margin_p_faster
                })
            })
            .unwrap_or_else(dash),
        Col::Parity => match &row.parity {
            None => dash(),
            Some(p) if p.unwritten > 0 => format!("FAIL: {} unwritten", p.unwritten),
            Some(p) if p.nan_or_inf > 0 => format!("FAIL: {} NaN/Inf", p.nan_or_inf),
            Some(p) if !p.centered_passed() => {
                format!("FAIL: centered {:.1e}", p.centered.unwrap_or(f64::NAN))
            }
            Some(p) => format!(
                "{}{:.1e} / {:.1e}",
                if p.passed() { "" } else { "FAIL: " },
                p.rel_l2,
                p.max_abs
            ),
        },
        Col::Verdict => match row.drift_cause {
            Some(cause) if row.verdict == Verdict::Drift => format!("drift ({cause})"),
            _ => row.verdict.to_string(),
        },
        Col::Detectable => c
            .map(|c| {
                if c.min_detectable.is_finite() {
                    format!("{:.1}%", c.min_detectable * 100.0)
                } else {
                    "none".to_owned()
                }
            })
            .unwrap_or_else(dash),
    }
}

/// A two-sided description interval, `[+0.05%, +5.65%]`; an end the values are too few for
/// reads "none".
pub(crate) fn interval_text(c: &Comparison) -> String {
    let end = |v: f64| finite_bound(v).map_or_else(|| "none".to_owned(), pct);
    format!("[{}, {}]", end(c.ci_low), end(c.ci_high))
}

/// The line under the terminal table that says what "One-sided bound" is: the bound the
/// rule compared with ±m, at the one-sided confidence its look spent (in parentheses); the
/// split of alpha between two looks is explained where a row was decided at one of them.
pub(crate) fn bound_line(report: &Report) -> Option<String> {
    let deciding: Vec<&Comparison> = report.rows.iter().filter_map(|r| r.deciding().0).collect();
    if deciding.is_empty() {
        return None;
    }
    let (a, w) = (report.gate.alpha, crate::stats::STAGE1_ALPHA_SHARE);
    let m = report.gate.max_p50_regression * 100.0;
    let one_look = deciding
        .iter()
        .all(|c| c.bound_level.is_some_and(|l| (l - (1.0 - a)).abs() < 1e-12));
    let levels = if one_look {
        format!(
            "{}: all of alpha {} at one look",
            level_text(1.0 - a),
            level_text(a)
        )
    } else {
        format!(
            "alpha {} split {w:.1}/{:.1} between the two planned looks: {} after the first, {} after the second",
            level_text(a),
            1.0 - w,
            level_text(1.0 - w * a),
            level_text(1.0 - (1.0 - w) * a)
        )
    };
    Some(format!(
        "One-sided bound: what the rule compared with ±{m:.1}%, at the confidence in parentheses ({levels}). The {:.0}% CI (--wide) is a description, not the decision.",
        report.gate.confidence * 100.0
    ))
}

/// The line under every table: alpha is per shape, and what that means for the N shapes of
/// this report (those with a comparison): at most alpha of the shapes exactly m slower are
/// flagged each, so among N of them at least one is flagged in up to `1 − (1 − alpha)^N` of
/// runs. `None` without a compared shape.
pub(crate) fn alpha_line(report: &Report) -> Option<String> {
    let n = report.rows.iter().filter(|r| r.primary().is_some()).count();
    if n == 0 {
        return None;
    }
    let (a, m) = (report.gate.alpha, report.gate.max_p50_regression * 100.0);
    let any = 1.0 - (1.0 - a).powi(i32::try_from(n).unwrap_or(i32::MAX));
    Some(if n == 1 {
        format!(
            "Alpha {:.0}% is per shape: a shape exactly {m:.1}% slower is flagged at most {:.0}% of the time; an unchanged one, {m:.1}% inside the margin, almost never.",
            a * 100.0,
            a * 100.0
        )
    } else {
        format!(
            "Alpha {:.0}% is per shape, not per run: a shape exactly {m:.1}% slower is flagged at most {:.0}% of the time, so if {} were exactly {m:.1}% slower, up to {:.0}% of runs would flag at least one (1 − {:.2}^{n}); an unchanged shape, {m:.1}% inside the margin, almost never is.",
            a * 100.0,
            a * 100.0,
            if n == 2 {
                "both shapes".to_owned()
            } else {
                format!("all {n} shapes")
            },
            any * 100.0,
            1.0 - a
        )
    })
}

/// One sentence per method the report's deciding comparisons used: what Δ and its interval
/// are, and the rule (shown under the Markdown table and by `--wide` tables' readers in the
/// README).
pub(crate) fn legend(report: &Report) -> String {
    let gate = &report.gate;
    let m = gate.max_p50_regression * 100.0;
    let mut methods: Vec<Method> = report
        .rows
        .iter()
        .flat_map(|r| [&r.ab, &r.stored])
        .flatten()
        .map(|c| c.method)
        .collect();
    methods.sort_by_key(|m| m.to_string());
    methods.dedup();
    let described: Vec<String> = methods
        .iter()
        .map(|m| {
            let name = match m {
                Method::PairedRounds => format!("{} (A/B)", m.ratio_label()),
                Method::UnpairedRounds | Method::MedianBootstrap | Method::HodgesLehmann => {
                    format!(
                        "{} vs {}",
                        m.ratio_label(),
                        if report.stored_label == "stored baseline" {
                            "stored"
                        } else {
                            report.stored_label
                        }
                    )
                }
                Method::Earlier => m.ratio_label().to_owned(),
            };
            format!("{name}: {}", m.describe())
        })
        .collect();
    let a = gate.alpha;
    let w = crate::stats::STAGE1_ALPHA_SHARE;
    let mut text = format!(
        "{}A shape fails on a slowdown above {m:.1}%: the one-sided lower bound of the deciding reference (A/B when it ran, else the {}) above +{m:.1}%, per shape, or on any parity loss; an improvement is the upper bound below -{m:.1}%. The bound (\"One-sided bound\") is at the one-sided confidence its look spent, in parentheses: alpha {} split {w:.1}/{:.1} between the two looks of the planned design, {} after the first look and {} after the second; {} where there is one look. The two-sided {:.0}% CI describes the estimate from the last look's units alone; it is not the decision.",
        if described.is_empty() {
            String::new()
        } else {
            format!("{}. ", described.join("; "))
        },
        report.stored_label,
        level_text(a),
        1.0 - w,
        level_text(1.0 - w * a),
        level_text(1.0 - (1.0 - w) * a),
        level_text(1.0 - a),
        gate.confidence * 100.0,
    );
    if report.rows.iter().any(|r| r.pooled.is_some()) {
        text.push_str(&format!(
            " Δ pooled p50 = p50 of all candidate values / p50 of all base values − 1, with a pairs-resampled bootstrap interval from {POOLED_MIN_PAIRS} pairs."
        ));
    }
    text.push_str(
        " Cliff's δ and Mann-Whitney U (JSON) compare the round medians (the values, for files without rounds) unpaired; they are reported, not part of the rule. \"Detectable\" is the slowdown this rule catches with 80% power at this run's spread.",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::{bisect_command, bound_text, lower_side};
    use crate::comparison::{Comparison, Method, Reference};
    use crate::config::GateSettings;
    use crate::stats::Magnitude;
    use crate::verdict::{Evidence, Verdict, decide};

    fn comparison(ratio: f64, lower: f64, upper: f64) -> Comparison {
        Comparison {
            reference: Reference::Ab,
            method: Method::PairedRounds,
            n_base: 8,
            n_cand: 8,
            p50_base: 100.0,
            p50_cand: 100.0 * ratio,
            ratio,
            ci_low: lower * 0.999,
            ci_high: upper * 1.001,
            confidence: 0.95,
            lower_bound: lower,
            upper_bound: upper,
            bound_level: Some(0.96),
            se: Some(0.001),
            df: Some(7.0),
            margin_p: 0.5,
            margin_p_faster: 0.5,
            stage: 2,
            cliffs_delta: 0.0,
            cliffs_magnitude: Magnitude::of(0.0),
            mwu_u: 32.0,
            mwu_p: 0.5,
            mwu_p_faster: 0.5,
            min_detectable: 0.023,
            process_sd: None,
            process_sd_source: None,
            process_sd_assumed: false,
            min_flaggable: None,
        }
    }

    #[test]
    fn the_bound_shown_is_the_one_the_rule_compared() {
        let gate = GateSettings::default();
        let m = gate.max_p50_regression;
        let mut seen = std::collections::HashSet::new();
        for ratio in [0.95, 0.975, 0.99, 1.0, 1.01, 1.025, 1.05] {
            for width in [0.001, 0.01, 0.03] {
                let c = comparison(ratio, ratio * (1.0 - width), ratio * (1.0 + width));
                let verdict = decide(
                    &gate,
                    &Evidence {
                        measured: true,
                        parity_passed: Some(true),
                        ab: Some(&c),
                        stored: None,
                        stored_other_method: false,
                    },
                )
                .verdict;
                seen.insert(verdict);
                let text = bound_text(&c, verdict);
                let value = if lower_side(&c, verdict) {
                    c.lower_bound
                } else {
                    c.upper_bound
                };
                assert!(text.ends_with("(96%)"), "{text}");
                assert!(text.contains(&super::pct(value)), "{text}");
                match verdict {
                    Verdict::Regression => {
                        assert!(text.starts_with('≥') && value > 1.0 + m, "{text}")
                    }
                    Verdict::Improvement => {
                        assert!(text.starts_with('≤') && value < 1.0 - m, "{text}")
                    }
                    // Neither test cleared the margin, and the bound shown says so.
                    _ if text.starts_with('≥') => assert!(value <= 1.0 + m, "{text}"),
                    _ => assert!(value >= 1.0 - m, "{text}"),
                }
            }
        }
        for v in [
            Verdict::Regression,
            Verdict::Improvement,
            Verdict::Inconclusive,
            Verdict::Pass,
        ] {
            assert!(seen.contains(&v), "{v} not exercised: {seen:?}");
        }
        // No bound at its level: said.
        let mut c = comparison(1.05, 0.0, f64::INFINITY);
        c.bound_level = Some(0.95);
        assert_eq!(
            bound_text(&c, Verdict::Inconclusive),
            "none at 95% (too few values)"
        );
        c.bound_level = None;
        c.lower_bound = 1.01;
        assert_eq!(
            bound_text(&c, Verdict::Inconclusive),
            "≥ +1.00% (level not recorded)"
        );
    }

    #[test]
    fn bisect_command_shows_only_hex_commits_and_plain_names() {
        let (a, b) = ("0123456789abcdef", "fedcba9876543210");
        assert_eq!(
            bisect_command(a, b, &["b2h8s512d64_f16"], "configs/pr.yaml").as_deref(),
            Some(
                "ci-gate bisect 0123456789ab fedcba987654 --shape b2h8s512d64_f16 --config configs/pr.yaml"
            )
        );
        // Not commits, one commit twice, names that could be options or shell.
        assert_eq!(bisect_command("HEAD~1", b, &["x"], "c.yaml"), None);
        assert_eq!(bisect_command(a, "$(rm -rf ~)", &["x"], "c.yaml"), None);
        assert_eq!(bisect_command(a, a, &["x"], "c.yaml"), None);
        assert_eq!(bisect_command(a, b, &["--out=/etc/x"], "c.yaml"), None);
        assert_eq!(bisect_command(a, b, &["x; rm"], "c.yaml"), None);
        assert_eq!(bisect_command(a, b, &["x"], "c.yaml\n::error::x"), None);
        assert_eq!(bisect_command(a, b, &["x\u{1b}[31m"], "c.yaml"), None);
    }
}
