//! The evaluator's protocol (docs/EVAL.md): a candidate line as it is read and checked
//! ([`parse_line`] → [`Candidate`], or [`Rejected`]), and the one line written for each
//! ([`EvalLine`], schema version [`SCHEMA_VERSION`], `docs/eval-v1.schema.json`).
//!
//! Every input line is untrusted: its id, defines and commit are held to fixed character
//! sets before anything is done with them (an id is echoed, never used to build a path), an
//! unknown key is refused by name (quoted), and a line longer than [`MAX_LINE_BYTES`] is
//! refused without being held whole.
//!
//! Cost: one JSON parse per line, linear in its length.

use std::io::BufRead;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::DefineError;
use crate::kernel::source::MAX_SOURCE_BYTES;
use crate::method::Method;
use crate::resources::KernelResources;
use crate::results::Parity;
use crate::text::{clip_text, quote, terminal_text};

/// The version of the output lines (and of `docs/eval-v1.schema.json`); bumped when a field
/// changes meaning or goes away (new fields may be added within a version).
pub const SCHEMA_VERSION: u32 = 1;

/// The longest input line read (an inline source of 1 MiB, escaped, fits).
pub const MAX_LINE_BYTES: usize = 8 << 20;

/// The longest id.
pub const MAX_ID_BYTES: usize = 128;

/// The longest `path`.
const MAX_PATH_BYTES: usize = 4096;

/// The longest reason written (a compiler's diagnostics are clipped to it).
pub(crate) const MAX_REASON_CHARS: usize = 2000;

/// The keys a candidate line may have.
const KEYS: [&str; 5] = ["id", "source", "path", "defines", "commit"];

/// What the evaluator concluded about one candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Faster than the reference by more than the gate's margin on at least one shape, with
    /// confidence, and slower by more than it on none.
    Faster,
    /// Neither faster nor slower by more than the margin with confidence on any shape.
    Same,
    /// Slower than the reference by more than the margin on at least one shape, with
    /// confidence.
    Slower,
    /// Wrong output on a shape or on a random shape, or timed launches that did not all do
    /// their work.
    ParityFail,
    /// Refused without being measured: a policy of the gate (a source that could read a
    /// file, an oversized source, a module the CUBIN policy refuses) or a candidate
    /// identical to the reference.
    Refused,
    /// Not evaluated: a malformed line, a missing file, a compile error, a crash, a hang, a
    /// CUDA error, a time no GPU can reach, a measuring process that was killed.
    Error,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Same => "same",
            Verdict::Slower => "slower",
            Verdict::ParityFail => "parity-fail",
            Verdict::Refused => "refused",
            Verdict::Error => "error",
        }
    }
}

/// Where a candidate's `attention.cu` comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// The source text itself (`"source"`).
    Source(String),
    /// A file the evaluator reads as the gate reads kernel sources (`"path"`).
    Path(PathBuf),
}

/// A candidate line, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub id: String,
    pub input: Input,
    /// `NAME` or `NAME=VALUE`, as `compile.defines`; the candidate's own, on top of the
    /// config's.
    pub defines: Vec<String>,
    pub commit: Option<String>,
}

/// A line that is no candidate: its verdict (`error`, or `refused` for a source over the
/// size bound or a define that names a file) and why, with the id where one could be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub id: Option<String>,
    pub verdict: Verdict,
    pub reason: String,
}

impl Rejected {
    fn error(id: Option<String>, reason: impl Into<String>) -> Rejected {
        Rejected {
            id,
            verdict: Verdict::Error,
            reason: reason.into(),
        }
    }
}

/// Whether `id` may name a candidate: 1 to [`MAX_ID_BYTES`] ASCII letters, digits and
/// `- _ . : / + = @ #`.
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_BYTES
        && id.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'-' | b'_' | b'.' | b':' | b'/' | b'+' | b'=' | b'@' | b'#'
                )
        })
}

/// Attacker text shown in a reason: quoted, escaped, at most 60 characters.
fn shown(text: &str) -> String {
    quote(text)
}

/// Reads one candidate line: `Ok(None)` for a blank line (skipped), `Ok(Some)` for a
/// candidate, `Err` for anything else, with the id where the line had a valid one.
pub fn parse_line(bytes: &[u8]) -> Result<Option<Candidate>, Rejected> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(Rejected::error(None, "the line is not UTF-8 text"));
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Rejected::error(
            None,
            format!(
                "the line is not JSON (column {}): {}",
                e.column(),
                terminal_text(&e.to_string())
            ),
        )
    })?;
    let Value::Object(map) = value else {
        return Err(Rejected::error(
            None,
            "the line is not a JSON object such as {\"id\": \"c1\", \"path\": \"attention.cu\"}",
        ));
    };
    let id = match map.get("id") {
        Some(Value::String(id)) if is_valid_id(id) => id.clone(),
        Some(Value::String(id)) => {
            return Err(Rejected::error(
                None,
                format!(
                    "id {} is not 1 to {MAX_ID_BYTES} letters, digits or - _ . : / + = @ #",
                    shown(id)
                ),
            ));
        }
        Some(_) => return Err(Rejected::error(None, "id is not a string")),
        None => return Err(Rejected::error(None, "the line has no \"id\"")),
    };
    let fail = |reason: String| Rejected::error(Some(id.clone()), reason);
    if let Some(key) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(fail(format!(
            "unknown key {}: a candidate has id, source or path, defines, commit",
            shown(key)
        )));
    }
    let input = match (map.get("source"), map.get("path")) {
        (Some(_), Some(_)) => {
            return Err(fail("give either \"source\" or \"path\", not both".into()));
        }
        (None, None) => return Err(fail("the line has neither \"source\" nor \"path\"".into())),
        (Some(Value::String(s)), None) => {
            if s.len() as u64 > MAX_SOURCE_BYTES {
                return Err(Rejected {
                    id: Some(id.clone()),
                    verdict: Verdict::Refused,
                    reason: format!(
                        "the source is {} bytes, larger than the {} KiB a kernel source may have",
                        s.len(),
                        MAX_SOURCE_BYTES >> 10
                    ),
                });
            }
            Input::Source(s.clone())
        }
        (None, Some(Value::String(p))) => {
            if p.is_empty() || p.len() > MAX_PATH_BYTES || p.contains('\0') {
                return Err(fail(format!(
                    "path {} is not a file name of 1 to {MAX_PATH_BYTES} bytes",
                    shown(p)
                )));
            }
            Input::Path(PathBuf::from(p))
        }
        (Some(_), None) => return Err(fail("source is not a string".into())),
        (None, Some(_)) => return Err(fail("path is not a string".into())),
    };
    let defines = defines(map.get("defines")).map_err(|(verdict, reason)| Rejected {
        id: Some(id.clone()),
        verdict,
        reason,
    })?;
    let commit = match map.get("commit") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => {
            crate::validate::commit(c).map_err(|why| fail(format!("commit: {why}")))?;
            Some(c.to_ascii_lowercase())
        }
        Some(_) => return Err(fail("commit is not a string".into())),
    };
    Ok(Some(Candidate {
        id,
        input,
        defines,
        commit,
    }))
}

/// `defines`: absent, or a list of at most 16 `NAME`/`NAME=VALUE` (the rule of
/// `compile.defines`), no name twice. A refusal's verdict is `error`, or `refused` for a
/// define that names what no kernel may (`__has_include`, …).
fn defines(value: Option<&Value>) -> Result<Vec<String>, (Verdict, String)> {
    let error = |reason: String| (Verdict::Error, reason);
    let list = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(error("defines is not a list of strings".into())),
    };
    if list.len() > crate::config::MAX_DEFINES {
        return Err(error(format!(
            "{} defines, more than the {} allowed",
            list.len(),
            crate::config::MAX_DEFINES
        )));
    }
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for (i, d) in list.iter().enumerate() {
        let Value::String(d) = d else {
            return Err(error(format!("defines[{i}] is not a string")));
        };
        if let Some(why) = crate::config::define_error(d) {
            let verdict = match why {
                DefineError::Form => Verdict::Error,
                DefineError::NamesAFile(_) => Verdict::Refused,
            };
            return Err((verdict, format!("defines[{i}] {} {why}", shown(d))));
        }
        let name = define_name(d);
        if out.iter().any(|o| define_name(o) == name) {
            return Err(error(format!("defines[{i}]: {name} is defined twice")));
        }
        out.push(d.clone());
    }
    Ok(out)
}

/// The name of a define (`NAME` of `NAME=VALUE`).
pub(crate) fn define_name(define: &str) -> &str {
    define.split_once('=').map_or(define, |(n, _)| n)
}

/// One line of input, read without holding more than `max` bytes of it: `Ok(None)` at the
/// end of the input, `Ok(Some(Err(n)))` for a line longer than `max` (its `n` bytes read and
/// dropped up to its end), `Ok(Some(Ok(bytes)))` otherwise, without the line break.
pub fn read_line_bounded(
    reader: &mut impl BufRead,
    max: usize,
) -> std::io::Result<Option<Result<Vec<u8>, usize>>> {
    let mut line = Vec::new();
    let mut total = 0usize;
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        total = total.saturating_add(chunk.len());
        if total <= max {
            line.extend_from_slice(chunk);
        } else {
            line = Vec::new();
        }
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if total > max {
        return Ok(Some(Err(total)));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(Ok(line)))
}

// ---------------------------------------------------------------------------------------
// The output line

/// The one line written for each candidate (and for each input line that is none).
#[derive(Clone, Debug, Serialize)]
pub struct EvalLine {
    pub schema_version: u32,
    /// The candidate's id; `null` where the line had no valid one.
    pub id: Option<String>,
    /// The input line it answers (1-based), so that a line without an id is found too.
    pub line: u64,
    pub verdict: Verdict,
    /// One sentence: why this verdict (the shapes that decided it, or what went wrong).
    pub reason: String,
    /// SHA-256 of the source as given (`source`, or the file of `path`).
    pub source_sha256: Option<String>,
    /// SHA-256 of the `attention.cu` compiled: the source with the candidate's defines
    /// written before it (the source itself where there are none).
    pub kernel_sha256: Option<String>,
    pub defines: Vec<String>,
    pub commit: Option<String>,
    /// What it was measured against.
    pub reference: Option<ReferenceLine>,
    /// Per shape, in the config's order; empty where nothing was measured.
    pub shapes: Vec<ShapeLine>,
    /// Parity on random shapes the candidate could not predict.
    pub probes: Option<ProbesLine>,
    /// The compiler's resources of the candidate's kernels (every kernel of its module).
    pub resources: Vec<KernelResources>,
    /// The seeds' acceptance rule: whether it holds, and with a leaderboard the confirming
    /// measurements and whether the candidate was accepted.
    pub acceptance: Option<Acceptance>,
    pub timing: Timing,
    /// The measuring method of this binary (`method::Method`): only like is compared.
    pub method: Method,
    /// The GPU that measured it; `null` where nothing was measured.
    pub gpu: Option<GpuLine>,
    /// Notes a reader should see (another process on the GPU, a throttled clock, ...).
    pub warnings: Vec<String>,
}

/// The reference a candidate was measured against.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReferenceLine {
    /// `base` (the base kernels) or `best` (the leaderboard's best).
    pub kind: ReferenceKind,
    /// The leaderboard entry's id, for `best`.
    pub id: Option<String>,
    pub kernel_sha256: String,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ReferenceKind {
    Base,
    Best,
}

/// One shape of a candidate's measurement.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ShapeLine {
    pub name: String,
    /// The gate's own verdict of the shape against the reference (`verdict::Verdict`).
    pub verdict: String,
    /// Why the shape has no measurement, where it has none.
    pub error: Option<String>,
    /// Candidate time / reference time: the estimate the rule tests (for A/B pairs, the
    /// exponentiated trimmed mean of the pairs' log ratios of round medians).
    pub ratio: Option<f64>,
    /// The one-sided bounds of `ratio` the rule compared with its margins.
    pub interval: Option<Interval>,
    /// A/B pairs of rounds measured.
    pub pairs: Option<u32>,
    /// p50 of all timed samples of each side, µs (numpy.median).
    pub p50_us: Option<SidesLine>,
    /// Dense TFLOP/s at each side's p50.
    pub tflops: Option<SidesLine>,
    /// Parity of each side on this shape.
    pub parity: Option<ParityLine>,
    /// Faster than the reference by more than `eval.min_speedup`, with confidence.
    pub win: bool,
}

/// The rule's one-sided bounds: `low` is a lower bound at `one_sided_level`, `high` an upper
/// bound at the same level (so [low, high] covers with 2·level − 1).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Interval {
    pub low: f64,
    /// `null` where the pairs are too few for a bound at that level.
    pub high: Option<f64>,
    pub one_sided_level: Option<f64>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SidesLine {
    pub reference: Option<f64>,
    pub candidate: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ParityLine {
    pub reference: Option<Parity>,
    pub candidate: Option<Parity>,
    /// Where `reference` comes from when this measurement did not check the reference again:
    /// the input line whose measurement did (the evaluator checks a reference once); `None`:
    /// checked in this measurement.
    #[serde(default)]
    pub reference_from_line: Option<u64>,
}

/// Parity on random shapes.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ProbesLine {
    pub checked: usize,
    /// The random shapes that failed, each with why.
    pub failed: Vec<String>,
}

/// The seeds' acceptance rule applied to a candidate.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Acceptance {
    pub rule: RuleLine,
    /// Whether this measurement meets the rule.
    pub meets_rule: bool,
    /// The shapes faster by more than `min_speedup` with confidence.
    pub wins: Vec<String>,
    /// Why it meets the rule or not.
    pub why: String,
    /// The confirming measurements (fresh processes, hot and cold cache), with a
    /// leaderboard, where this one met the rule.
    pub confirmations: Vec<Confirmation>,
    /// Whether it joined the leaderboard; `null` without a leaderboard.
    pub accepted: Option<bool>,
    /// Its place on the leaderboard (1 = the first accepted), when accepted.
    pub rank: Option<u32>,
}

/// The rule's settings (config `eval` and `gate.max_p50_regression`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuleLine {
    pub min_speedup: f64,
    pub min_shapes: u32,
    pub max_regression: f64,
}

/// One confirming measurement.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Confirmation {
    /// `hot` or `cold` (`measure.cache`).
    pub cache: crate::config::CacheMode,
    pub verdict: Verdict,
    pub meets_rule: bool,
    pub wins: Vec<String>,
    pub why: String,
    /// The leaderboard entry (or base) it was measured against.
    pub against: String,
    /// Seconds the measuring process took.
    pub measure_s: f64,
    /// Each shape's ratio and bounds in this measurement.
    pub shapes: Vec<ShapeLine>,
}

/// Where a candidate's time went, seconds.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Timing {
    /// From its line being read to its compile starting (waiting for a compiler).
    pub queued_s: f64,
    /// Its compile (NVRTC in the sandbox, and the CUBIN policy), or its source read and
    /// checked on the simulated GPU.
    pub compile_s: f64,
    /// From compiled to its measuring process starting (waiting for a GPU).
    pub waiting_s: f64,
    /// The measuring process, wall time (start to exit).
    pub measure_s: f64,
    /// The confirming measurements, wall time.
    pub confirm_s: f64,
    /// From its line being read to its line being written.
    pub total_s: f64,
    /// Inside the measuring process (its results file's timing).
    pub run: Option<RunLine>,
}

/// The measuring process's own breakdown (`results::RunTiming`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct RunLine {
    /// Opening the GPU (context, modules from the compile cache, clocks spun up) and the
    /// stored settings, after the lock.
    pub setup_s: f64,
    /// Waiting for this GPU's lock (another ci-gate process on it).
    pub lock_wait_s: f64,
    /// Parity on random shapes.
    pub probes_s: f64,
    /// Parity of both sides on the configured shapes.
    pub parity_s: f64,
    /// Both sides timed (both stages), the per-launch checks included.
    pub measure_s: f64,
    /// The whole run inside the process.
    pub total_s: f64,
    /// Of `measure_s`: making the rounds' reference inputs, preparing rounds (buffers,
    /// warm-up, graph, the first replay), taking the samples (their checks and the duty
    /// cycle's idle time included), finishing rounds (reading the checks back, the held
    /// buffers verified).
    pub references_s: f64,
    pub preparing_s: f64,
    pub sampling_s: f64,
    pub finishing_s: f64,
    /// Finer spans of the process by name (`setup.open`, `setup.spin_up`, `parity.*`,
    /// `round.*`, `sample.*`), seconds; empty on the simulated GPU.
    pub detail_s: std::collections::BTreeMap<String, f64>,
}

/// The GPU that measured a candidate.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GpuLine {
    pub name: String,
    pub slug: String,
    pub uuid: Option<String>,
    /// The device index of this host (`--devices`).
    pub device: u32,
    /// The simulated GPU (tests): its times are what its kernels' own directives say.
    pub simulated: bool,
}

impl EvalLine {
    /// A line for a candidate that was not measured.
    pub(crate) fn unmeasured(
        id: Option<String>,
        line: u64,
        verdict: Verdict,
        reason: &str,
    ) -> EvalLine {
        EvalLine {
            schema_version: SCHEMA_VERSION,
            id,
            line,
            verdict,
            reason: clip_text(&terminal_text(reason), MAX_REASON_CHARS),
            source_sha256: None,
            kernel_sha256: None,
            defines: Vec::new(),
            commit: None,
            reference: None,
            shapes: Vec::new(),
            probes: None,
            resources: Vec::new(),
            acceptance: None,
            timing: Timing::default(),
            method: Method::current(),
            gpu: None,
            warnings: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(line: &str) -> Rejected {
        parse_line(line.as_bytes()).unwrap_err()
    }

    #[test]
    fn a_candidate_line_is_read_with_its_defines_and_commit() {
        let c = parse_line(
            br#"{"id": "c-1", "path": "k/attention.cu", "defines": ["BN=64", "FAST"], "commit": "ABCDEF0"}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.id, "c-1");
        assert_eq!(c.input, Input::Path("k/attention.cu".into()));
        assert_eq!(c.defines, ["BN=64", "FAST"]);
        assert_eq!(c.commit.as_deref(), Some("abcdef0"));
        let c = parse_line(br#"{"id": "x", "source": "int a;"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(c.input, Input::Source("int a;".into()));
        assert!(parse_line(b"   ").unwrap().is_none());
    }

    #[test]
    fn bad_lines_are_errors_that_say_why_and_keep_a_valid_id() {
        let r = rejected("{not json");
        assert_eq!((r.id, r.verdict), (None, Verdict::Error));
        assert!(r.reason.contains("not JSON"), "{}", r.reason);
        assert!(rejected("[1, 2]").reason.contains("not a JSON object"));
        assert!(rejected(r#"{"path": "a"}"#).reason.contains("no \"id\""));
        let r = rejected(r#"{"id": "a\nb", "path": "a"}"#);
        assert_eq!(r.id, None);
        assert!(r.reason.contains("\"a\\u{a}b\""), "{}", r.reason);
        let r = rejected(r#"{"id": "c2", "path": "a", "evil\u001b[31m": 1}"#);
        assert_eq!(r.id.as_deref(), Some("c2"));
        assert!(
            r.reason.starts_with("unknown key \"evil\\u{1b}[31m\""),
            "{}",
            r.reason
        );
        assert!(!r.reason.contains('\u{1b}'));
        for (line, want) in [
            (r#"{"id": "c", "path": "a", "source": "b"}"#, "not both"),
            (r#"{"id": "c"}"#, "neither"),
            (r#"{"id": "c", "source": 3}"#, "source is not a string"),
            (r#"{"id": "c", "path": ""}"#, "path \"\""),
            (
                r#"{"id": "c", "path": "a", "defines": ["X=$(rm)"]}"#,
                "defines[0] \"X=$(rm)\" is not NAME",
            ),
            (
                r#"{"id": "c", "path": "a", "defines": ["X=1", "X=2"]}"#,
                "X is defined twice",
            ),
            (r#"{"id": "c", "path": "a", "defines": "X"}"#, "not a list"),
            (r#"{"id": "c", "path": "a", "commit": "xyz"}"#, "commit:"),
        ] {
            let r = rejected(line);
            assert_eq!(r.verdict, Verdict::Error, "{line}");
            assert_eq!(r.id.as_deref(), Some("c"), "{line}");
            assert!(r.reason.contains(want), "{line}: {}", r.reason);
        }
        let many: Vec<String> = (0..17).map(|i| format!("\"D{i}\"")).collect();
        let r = rejected(&format!(
            r#"{{"id": "c", "path": "a", "defines": [{}]}}"#,
            many.join(",")
        ));
        assert!(r.reason.contains("17 defines"), "{}", r.reason);
        assert_eq!(
            parse_line(b"\xff\xfe").unwrap_err().reason,
            "the line is not UTF-8 text"
        );
    }

    #[test]
    fn an_oversized_source_is_refused() {
        let big = "/".repeat(MAX_SOURCE_BYTES as usize + 1);
        let r = rejected(&serde_json::json!({"id": "big", "source": big}).to_string());
        assert_eq!(
            (r.id.as_deref(), r.verdict),
            (Some("big"), Verdict::Refused)
        );
        assert!(
            r.reason.contains("larger than the 1024 KiB"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn ids_are_a_fixed_character_set() {
        for ok in ["a", "gen3/c17", "x:y-z_1.2+3=4@5#6", &"a".repeat(128)] {
            assert!(is_valid_id(ok), "{ok}");
        }
        for bad in ["", "a b", "a\u{202e}", "é", &"a".repeat(129), "a\"b"] {
            assert!(!is_valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn long_lines_are_dropped_to_their_end_without_being_held() {
        let input = format!("{}\nshort\r\nlast", "x".repeat(100));
        let mut r = std::io::BufReader::with_capacity(7, input.as_bytes());
        assert_eq!(read_line_bounded(&mut r, 50).unwrap(), Some(Err(100)));
        assert_eq!(
            read_line_bounded(&mut r, 50).unwrap(),
            Some(Ok(b"short".to_vec()))
        );
        assert_eq!(
            read_line_bounded(&mut r, 50).unwrap(),
            Some(Ok(b"last".to_vec()))
        );
        assert_eq!(read_line_bounded(&mut r, 50).unwrap(), None);
        let mut empty = std::io::BufReader::new(&b"\n"[..]);
        assert_eq!(read_line_bounded(&mut empty, 5).unwrap(), Some(Ok(vec![])));
    }
}
