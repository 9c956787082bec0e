//! The performance history: one JSON line per (run, shape), appended by runs on the default
//! branch, read back as per-shape series of p50 over commits, with the best time ever and
//! the change points where the level moved ([`changepoint`]). The format is documented in
//! docs/HISTORY.md.
//!
//! - Append-only: [`append`] writes new lines at the end and never rewrites earlier ones. It
//!   refuses a history with a malformed line (naming the file and the line) rather than
//!   dropping it, and appending the same run (commit, config and GPU) twice is a no-op.
//! - Every history file read is untrusted: its size is bounded, each line is parsed on its
//!   own with a bounded length and depth, and every value is checked (commits are hex,
//!   names are file-name safe, times are finite and positive). Errors name the file and
//!   the line.
//!
//! Pure: no GPU, command line or GitHub code.

pub(crate) mod changepoint;
mod chart;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

pub(crate) use chart::render_svg;

use crate::config::CacheMode;
use crate::files::{self, FileError};
use crate::results::{ResultsFile, ShapeResult};
use crate::stats::{Rounds, round_medians, t_quantile};
use crate::text::{quote, short_commit};
use crate::validate::{self, Checker, Rejected, Untrusted};

/// Schema of the history records this build writes and reads.
pub(crate) const HISTORY_SCHEMA_VERSION: u32 = 1;
/// Largest history file ci-gate reads (and grows by appending); prune it past this.
pub(crate) const MAX_HISTORY_BYTES: u64 = 256 * 1024 * 1024;
/// Longest line of a history file (a record is a few hundred bytes).
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024;
/// Deepest nesting of one record (it nests 2 deep).
pub(crate) const MAX_LINE_DEPTH: usize = 8;
/// Most peers in one record.
pub(crate) const MAX_PEERS: usize = 64;
/// Confidence of a record's interval.
pub(crate) const INTERVAL_CONFIDENCE: f64 = 0.95;

/// An interval of a run's p50, µs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Span {
    pub low: f64,
    pub high: f64,
}

/// One line of the history: one shape of one run on the default branch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    pub schema_version: u32,
    /// The commit measured (full id as the run recorded it).
    pub commit: String,
    /// When the run measured (the results file's `created_at`).
    pub time: DateTime<Utc>,
    /// GPU name as NVML reports it, and its slug (e.g. `nvidia-h200`).
    pub gpu: String,
    pub gpu_slug: String,
    /// Config name and the hash of its content.
    pub config: String,
    #[serde(default)]
    pub config_hash: String,
    /// Shape name, e.g. `b2h8s512d64_causal_f16`.
    pub shape: String,
    /// Cache mode it was measured with (absent when the run did not record it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheMode>,
    /// The candidate's p50 per launch (pooled median of all its samples), µs.
    pub p50_us: f64,
    /// 95% interval of the run's level (see [`run_interval`]), µs; absent with fewer than 2
    /// rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_us: Option<Span>,
    /// Rounds the p50 pools.
    #[serde(default)]
    pub rounds: u32,
    /// Other implementations measured in the same run, by name: their p50 in µs. Empty until
    /// results files carry peers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub peers: BTreeMap<String, f64>,
    /// The ci-gate version that measured.
    #[serde(default)]
    pub tool_version: String,
    /// The candidate's energy per call (mean over its windows) and its 95% t interval, mJ
    /// (src/energy.rs); absent where none was measured or the counter could not resolve it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mj_per_call: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mj_interval: Option<Span>,
    /// The fingerprint of the method that measured it (`crate::method`); absent in records
    /// of runs before ci-gate named its method. Runs of two methods are never one level:
    /// change points are found within the runs of one method only ([`trends`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// A history file that cannot be read, or a results file that cannot be appended.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HistoryError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{}:{line}: {message}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: {message}", path.display())]
    Input { path: PathBuf, message: String },
}

/// A record and the line (from 1) it was read from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub line: usize,
    pub record: Record,
}

/// A history file, read and checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct History {
    pub entries: Vec<Entry>,
}

impl Untrusted for Record {
    /// Checks every value, as every file ci-gate reads is checked ([`validate::Checker`]):
    /// the error names the key; the caller adds the line.
    fn check(&self, path: &Path) -> Result<(), Rejected> {
        let c = Checker::at(path, None);
        if self.schema_version == 0 || self.schema_version > HISTORY_SCHEMA_VERSION {
            return Err(c.fail(
                "schema_version",
                format!(
                    "{} is not a history schema this ci-gate reads (1 to {HISTORY_SCHEMA_VERSION}); upgrade ci-gate",
                    self.schema_version
                ),
            ));
        }
        c.commit("commit", &self.commit)?;
        c.label("gpu", &self.gpu, validate::MAX_LABEL_LEN, false)?;
        c.name("gpu_slug", &self.gpu_slug)?;
        let expected = crate::results::gpu_slug(&self.gpu);
        if self.gpu_slug != expected {
            return Err(c.fail(
                "gpu_slug",
                format!(
                    "{} is not the slug of GPU {} ({})",
                    quote(&self.gpu_slug),
                    quote(&self.gpu),
                    quote(&expected)
                ),
            ));
        }
        validate::config_name(&self.config).map_err(|m| c.fail("config", m))?;
        c.hash("config_hash", &self.config_hash, true)?;
        c.name("shape", &self.shape)?;
        c.time("p50_us", self.p50_us)?;
        if let Some(s) = self.interval_us {
            c.time("interval_us.low", s.low)?;
            c.time("interval_us.high", s.high)?;
            if s.low > s.high {
                return Err(c.fail(
                    "interval_us",
                    format!("low {} is above high {}", s.low, s.high),
                ));
            }
        }
        c.count(
            "rounds",
            self.rounds as usize,
            validate::MAX_ROUNDS,
            "rounds",
        )?;
        if let Some(mj) = self.mj_per_call {
            c.positive("mj_per_call", mj)?;
        }
        if let Some(s) = self.mj_interval {
            c.positive("mj_interval.low", s.low.max(f64::MIN_POSITIVE))?;
            c.positive("mj_interval.high", s.high)?;
            if s.low > s.high || !s.low.is_finite() {
                return Err(c.fail(
                    "mj_interval",
                    format!("low {} is above high {}", s.low, s.high),
                ));
            }
        }
        if let Some(m) = &self.method
            && !crate::method::Method::is_valid_fingerprint(m)
        {
            return Err(c.fail(
                "method",
                format!(
                    "{} is not a method fingerprint (m<version>-<12 hex digits>)",
                    quote(m)
                ),
            ));
        }
        c.count("peers", self.peers.len(), MAX_PEERS, "peers")?;
        for (name, &t) in &self.peers {
            c.name("peers", name)?;
            c.time(&format!("peers.{name}"), t)?;
        }
        c.label(
            "tool_version",
            &self.tool_version,
            validate::MAX_SHORT_LABEL_LEN,
            true,
        )
    }

    /// Nothing to neutralise: a record holds no free text.
    fn neutralise(&mut self) {}
}

impl Record {
    /// The run this record belongs to: the same commit, config and GPU is the same run.
    fn run_key(&self) -> (&str, &str, &str) {
        (&self.commit, &self.config, &self.gpu_slug)
    }
}

/// A refused record as the message of an error that names the file and line already.
fn refusal(r: Rejected) -> String {
    format!("{}: {}", r.key, r.message)
}

/// A serde_json message for a line of the history: the key it is about, and the column
/// rather than " at line 1 column C" (a record is one line).
fn json_message(text: &str, e: &serde_json::Error) -> String {
    let message = e.to_string();
    let cut = message.rfind(" at line ").unwrap_or(message.len());
    let key = files::json_key::<Record>(text)
        .map(|k| format!("{k}: "))
        .unwrap_or_default();
    format!("{key}{} (column {})", &message[..cut], e.column())
}

/// Parses one line of the history at `path`: bounded length and depth, a known schema
/// version, checked values.
fn parse_line(text: &str, path: &Path) -> Result<Record, String> {
    if text.len() > MAX_LINE_BYTES {
        return Err(format!(
            "{} bytes on one line, more than the {MAX_LINE_BYTES} a record may have",
            text.len()
        ));
    }
    if files::json_too_deep(text, MAX_LINE_DEPTH) {
        return Err(format!(
            "nests arrays and objects more than {MAX_LINE_DEPTH} deep"
        ));
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| json_message(text, &e))?;
    if !value.is_object() {
        return Err("is not a JSON object (one record per line)".into());
    }
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        None => return Err("missing or non-integer `schema_version`".into()),
        Some(v) if v > u64::from(HISTORY_SCHEMA_VERSION) => {
            return Err(format!(
                "schema_version {v} is newer than this ci-gate reads ({HISTORY_SCHEMA_VERSION}); upgrade ci-gate"
            ));
        }
        Some(_) => {}
    }
    let record: Record = serde_json::from_str(text).map_err(|e| json_message(text, &e))?;
    record.check(path).map_err(refusal)?;
    Ok(record)
}

impl History {
    /// Parses the text of a history file; `path` names it in errors. Lines holding only
    /// whitespace are skipped; any other line that is not a valid record is an error naming
    /// it.
    pub fn parse(text: &str, path: &Path) -> Result<History, HistoryError> {
        let mut entries = Vec::new();
        for (i, line) in text.split('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.trim().is_empty() {
                continue;
            }
            let record = parse_line(line, path).map_err(|message| HistoryError::Line {
                path: path.to_owned(),
                line: i + 1,
                message,
            })?;
            entries.push(Entry {
                line: i + 1,
                record,
            });
        }
        Ok(History { entries })
    }

    /// Reads and checks a history file (at most [`MAX_HISTORY_BYTES`]).
    pub fn load(path: &Path) -> Result<History, HistoryError> {
        let bytes = files::read_bounded(path, MAX_HISTORY_BYTES)?;
        History::parse(&utf8(bytes, path)?, path)
    }
}

/// The bytes as text, or an error naming the line of the first invalid byte.
fn utf8(bytes: Vec<u8>, path: &Path) -> Result<String, HistoryError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count();
        HistoryError::Line {
            path: path.to_owned(),
            line,
            message: "not UTF-8 text".into(),
        }
    })
}

/// The interval a record stores: a Student-t interval (n − 1 degrees of freedom, 95%) of
/// the mean of the log round medians, exponentiated: `exp(mean ± t·sd/√n)` over the n round
/// medians. It reflects the spread between rounds of the one run (not between processes
/// or runners), and centres on the geometric mean of the round medians, which lies close to
/// but need not equal the pooled p50. `None` with fewer than 2 rounds.
pub(crate) fn run_interval(samples_us: &[Vec<f64>]) -> Option<Span> {
    let rounds = Rounds::new(samples_us.to_vec()).ok()?;
    let logs: Vec<f64> = round_medians(&rounds)
        .into_iter()
        .map(|m| if m > 0.0 { m.ln() } else { f64::NAN })
        .collect();
    let n = logs.len();
    if n < 2 || logs.iter().any(|l| !l.is_finite()) {
        return None;
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let se = (var / n as f64).sqrt();
    let t = t_quantile(0.5 + INTERVAL_CONFIDENCE / 2.0, (n - 1) as f64);
    let span = Span {
        low: (mean - t * se).exp(),
        high: (mean + t * se).exp(),
    };
    (validate::time(span.low).is_ok() && validate::time(span.high).is_ok() && span.low <= span.high)
        .then_some(span)
}

/// The records of one results file: one per shape measured (shapes that errored or have no
/// summary are left out, each with a note saying so). A run that reached no verdict, or one
/// without a commit or a GPU, cannot be appended.
pub(crate) fn records_from_results(
    results: &ResultsFile,
    path: &Path,
) -> Result<(Vec<Record>, Vec<String>), HistoryError> {
    let input = |message: String| HistoryError::Input {
        path: path.to_owned(),
        message,
    };
    if let Some(e) = &results.error {
        return Err(input(format!(
            "records a run that reached no verdict ({}); nothing to append",
            e.lines().next().unwrap_or_default()
        )));
    }
    let commit = results
        .git_commit
        .as_deref()
        .ok_or_else(|| input("records no git commit; a history record needs one".into()))?;
    let env = results.environment.as_ref().ok_or_else(|| {
        input("records no GPU environment; a history record needs the GPU".into())
    })?;
    let mut records = Vec::new();
    let mut notes = Vec::new();
    for s in &results.shapes {
        // A candidate that failed parity or an integrity check was timed doing something
        // other than the attention: its time is no point of the kernel's history.
        if s.parity_passed() == Some(false) {
            notes.push(format!(
                "shape {} failed parity or an integrity check in this run; its time is not the kernel's, not appended",
                s.name
            ));
            continue;
        }
        match record_of(s, results, commit, env) {
            Some(r) => records.push(r),
            None => notes.push(format!(
                "shape {} was not measured in this run; not appended",
                s.name
            )),
        }
    }
    if records.is_empty() {
        return Err(input("holds no measured shape; nothing to append".into()));
    }
    for r in &records {
        r.check(path)
            .map_err(|m| input(format!("shape {}: {}", r.shape, refusal(m))))?;
    }
    Ok((records, notes))
}

fn record_of(
    s: &ShapeResult,
    results: &ResultsFile,
    commit: &str,
    env: &crate::results::Environment,
) -> Option<Record> {
    if s.error.is_some() || s.verdict == crate::verdict::Verdict::Error {
        return None;
    }
    let summary = s.summary.as_ref()?;
    // Recomputed from the windows, as the report does: a results file's summaries are not
    // trusted.
    let energy = s.energy.as_ref().and_then(|e| {
        crate::energy::SideEnergy::from_rounds(
            e.candidate.rounds.clone(),
            s.params.flops(),
            results.gate.confidence,
        )
        .mj_per_call
    });
    Some(Record {
        schema_version: HISTORY_SCHEMA_VERSION,
        commit: commit.to_owned(),
        time: results.created_at,
        gpu: env.gpu_name.clone(),
        gpu_slug: env.gpu_slug.clone(),
        config: results.config.name.clone(),
        config_hash: results.config.hash.clone(),
        shape: s.name.clone(),
        cache: s.measurement.as_ref().map(|m| m.cache),
        p50_us: summary.p50,
        interval_us: run_interval(&s.samples_us),
        rounds: u32::try_from(s.samples_us.len()).unwrap_or(u32::MAX),
        peers: BTreeMap::new(),
        tool_version: results.tool_version.clone(),
        mj_per_call: energy.map(|e| e.mean),
        mj_interval: energy.map(|e| Span {
            low: e.lo,
            high: e.hi,
        }),
        method: results.method.as_ref().map(|m| m.fingerprint.clone()),
    })
}

/// What [`append`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Appended {
    /// This many lines were appended.
    Lines(usize),
    /// The history already holds this run (same commit, config and GPU), from this line:
    /// nothing was written.
    AlreadyThere { line: usize },
}

/// Appends `records` (of one run) to the history at `path`, creating it if absent. The
/// existing file is read and checked first: a malformed line refuses the append (naming the
/// line) and nothing is written. Earlier lines are never rewritten; if the last line lacks
/// its newline, one is added before the new lines. A run the history already holds (same
/// commit, config and GPU) is not appended again.
pub(crate) fn append(path: &Path, records: &[Record]) -> Result<Appended, HistoryError> {
    let existing = match files::read_bounded(path, MAX_HISTORY_BYTES) {
        Ok(bytes) => utf8(bytes, path)?,
        Err(FileError::Read { cause, .. }) if cause.kind() == std::io::ErrorKind::NotFound => {
            String::new()
        }
        Err(e) => return Err(e.into()),
    };
    let history = History::parse(&existing, path)?;
    let Some(first) = records.first() else {
        return Ok(Appended::Lines(0));
    };
    if let Some(r) = records.iter().find(|r| r.run_key() != first.run_key()) {
        return Err(HistoryError::Input {
            path: path.to_owned(),
            message: format!(
                "records of two runs ({} and {}) in one append",
                short_commit(&first.commit),
                short_commit(&r.commit)
            ),
        });
    }
    if let Some(e) = history
        .entries
        .iter()
        .find(|e| e.record.run_key() == first.run_key())
    {
        return Ok(Appended::AlreadyThere { line: e.line });
    }
    let mut text = String::new();
    if !existing.is_empty() && !existing.ends_with('\n') {
        text.push('\n');
    }
    for r in records {
        r.check(path).map_err(|m| HistoryError::Input {
            path: path.to_owned(),
            message: format!("shape {}: {}", r.shape, refusal(m)),
        })?;
        let line = serde_json::to_string(r).map_err(|e| HistoryError::Input {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        text.push_str(&line);
        text.push('\n');
    }
    if (existing.len() + text.len()) as u64 > MAX_HISTORY_BYTES {
        return Err(HistoryError::Input {
            path: path.to_owned(),
            message: format!(
                "would grow past the {MAX_HISTORY_BYTES} bytes ci-gate reads; prune old lines first (docs/HISTORY.md)"
            ),
        });
    }
    let write_err = |cause| FileError::Write {
        path: path.to_owned(),
        cause,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(write_err)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(write_err)?;
    file.write_all(text.as_bytes()).map_err(write_err)?;
    file.sync_all().map_err(write_err)?;
    Ok(Appended::Lines(records.len()))
}

/// A `--since` that is neither a date nor an RFC 3339 time: a type of its own, so that a
/// caller acts on the kind rather than on a sentence (clap, which calls [`parse_since`] as
/// a value parser, shows the sentence).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} is not a date (YYYY-MM-DD) or an RFC 3339 time", quote(text))]
pub(crate) struct NotATime {
    pub text: String,
}

/// `--since`: a date (`2026-01-31`, midnight UTC) or an RFC 3339 time.
pub(crate) fn parse_since(text: &str) -> Result<DateTime<Utc>, NotATime> {
    let t = text.trim();
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d")
        && let Some(dt) = d.and_hms_opt(0, 0, 0)
    {
        return Ok(dt.and_utc());
    }
    DateTime::parse_from_rfc3339(t)
        .map(|d| d.with_timezone(&Utc))
        .map_err(|_| NotATime {
            text: text.to_owned(),
        })
}

/// Which records a report covers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    /// Only these shapes (all when empty).
    pub shapes: Vec<String>,
    /// Only runs at or after this time.
    pub since: Option<DateTime<Utc>>,
}

impl Filter {
    fn keeps(&self, r: &Record) -> bool {
        (self.shapes.is_empty() || self.shapes.contains(&r.shape))
            && self.since.is_none_or(|t| r.time >= t)
    }
}

/// What makes a series: the same shape, GPU model, config and cache mode.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub(crate) struct SeriesKey {
    pub shape: String,
    pub gpu_slug: String,
    pub config: String,
    pub cache: Option<CacheMode>,
}

impl SeriesKey {
    /// `shape` and, for a cold-cache series, ` (cold)`.
    pub(crate) fn label(&self) -> String {
        match self.cache {
            Some(CacheMode::Cold) => format!("{} (cold)", self.shape),
            _ => self.shape.clone(),
        }
    }
}

/// One run of a series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Point {
    pub commit: String,
    pub time: DateTime<Utc>,
    pub p50_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_us: Option<Span>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub peers: BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mj_per_call: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mj_interval: Option<Span>,
    /// The fingerprint of the method that measured it; `null` where the record names none.
    pub method: Option<String>,
    /// Line of the history file it came from.
    pub line: usize,
}

/// A shape's p50 over the runs of the default branch, in the order they were appended.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Series {
    #[serde(flatten)]
    pub key: SeriesKey,
    /// The GPU's name, as the newest run recorded it.
    pub gpu: String,
    pub points: Vec<Point>,
}

impl Series {
    /// Index of the run with the lowest p50 (the earliest of equals).
    pub(crate) fn best_index(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, p) in self.points.iter().enumerate() {
            if best.is_none_or(|b| p.p50_us < self.points[b].p50_us) {
                best = Some(i);
            }
        }
        best
    }
}

/// The series of the records `filter` keeps, in the order their first record appears in
/// the file; each series' points in file (append) order.
pub(crate) fn series(history: &History, filter: &Filter) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    let mut index: HashMap<SeriesKey, usize> = HashMap::new();
    for e in &history.entries {
        let r = &e.record;
        if !filter.keeps(r) {
            continue;
        }
        let key = SeriesKey {
            shape: r.shape.clone(),
            gpu_slug: r.gpu_slug.clone(),
            config: r.config.clone(),
            cache: r.cache,
        };
        let i = *index.entry(key.clone()).or_insert_with(|| {
            out.push(Series {
                key,
                gpu: r.gpu.clone(),
                points: Vec::new(),
            });
            out.len() - 1
        });
        out[i].gpu = r.gpu.clone();
        out[i].points.push(Point {
            commit: r.commit.clone(),
            time: r.time,
            p50_us: r.p50_us,
            interval_us: r.interval_us,
            peers: r.peers.clone(),
            mj_per_call: r.mj_per_call,
            mj_interval: r.mj_interval,
            method: r.method.clone(),
            line: e.line,
        });
    }
    out
}

/// A change point of a series, located at a commit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct LevelShift {
    /// Index of the first point of the new level.
    pub index: usize,
    /// The commit where the level moved (first commit of the new level).
    pub commit: String,
    pub time: DateTime<Utc>,
    /// Median p50 of the level before and after, µs.
    pub before_us: f64,
    pub after_us: f64,
    /// `after / before − 1`, in percent.
    pub change_pct: f64,
}

/// Where the measuring method changed between two consecutive runs of a series (a
/// ci-gate upgrade that changed what a time means): marked, and never a change point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct MethodChange {
    /// Index of the first run of the new method.
    pub index: usize,
    /// Its commit and time.
    pub commit: String,
    pub time: DateTime<Utc>,
    /// The methods before and after, as shown (`crate::method::Method::describe`).
    pub from: String,
    pub to: String,
}

/// A series with its best run, its change points and where its method changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Trend {
    #[serde(flatten)]
    pub series: Series,
    /// Index of the best run.
    pub best: usize,
    pub changes: Vec<LevelShift>,
    pub method_changes: Vec<MethodChange>,
}

/// The method changes of `points`: every run whose recorded method differs from the run
/// before it. Records that name no method read as one method, unknown: a change among
/// them cannot be seen, and the first named method after them is a change.
fn method_changes(points: &[Point]) -> Vec<MethodChange> {
    // Fingerprints were checked on reading (`Record::check`).
    let shown = |m: &Option<String>| {
        m.clone()
            .unwrap_or_else(|| crate::method::UNKNOWN.to_owned())
    };
    points
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0].method != w[1].method)
        .map(|(i, w)| MethodChange {
            index: i + 1,
            commit: w[1].commit.clone(),
            time: w[1].time,
            from: shown(&w[0].method),
            to: shown(&w[1].method),
        })
        .collect()
}

/// Analyses each series: its best run, where its method changed, and its change points
/// ([`changepoint::detect`] with `params`) found within the runs of each method separately,
/// so that a method change is never reported as a change of the kernel (a step that came
/// with an upgrade of ci-gate is no level of the code). As before the methods were told
/// apart, only the newest `params.max_points` runs are analysed (which bounds the cost: the
/// pieces together are at most that long). Series without points are left out.
pub(crate) fn trends(series: Vec<Series>, params: &changepoint::Params) -> Vec<Trend> {
    series
        .into_iter()
        .filter_map(|s| {
            let best = s.best_index()?;
            let method_changes = method_changes(&s.points);
            let newest = s.points.len().saturating_sub(params.max_points.max(1));
            let bounds: Vec<usize> = std::iter::once(newest)
                .chain(
                    method_changes
                        .iter()
                        .map(|m| m.index)
                        .filter(|&i| i > newest),
                )
                .chain(std::iter::once(s.points.len()))
                .collect();
            let changes = bounds
                .windows(2)
                .flat_map(|w| {
                    let values: Vec<f64> = s.points[w[0]..w[1]].iter().map(|p| p.p50_us).collect();
                    changepoint::detect(&values, params)
                        .into_iter()
                        .map(move |c| (w[0] + c.index, c))
                })
                .filter_map(|(index, c)| {
                    let p = s.points.get(index)?;
                    Some(LevelShift {
                        index,
                        commit: p.commit.clone(),
                        time: p.time,
                        before_us: c.before,
                        after_us: c.after,
                        change_pct: (c.after / c.before - 1.0) * 100.0,
                    })
                })
                .collect();
            Some(Trend {
                series: s,
                best,
                changes,
                method_changes,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
