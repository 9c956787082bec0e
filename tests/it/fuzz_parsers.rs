//! Property-based fuzzing (proptest) of every parser that reads untrusted input: sample
//! files, results files, baseline files, configs, the GitHub event payload, and the
//! evaluator's candidate lines (with the bounded line reader before them) and leaderboards,
//! and the kernel source's lexical check (`attention.cu` comes from the pull request).
//! Each target gets arbitrary bytes, arbitrary strings and structured mutations of a valid
//! file; none may panic, and whatever a parser accepts must satisfy the invariants the rest
//! of ci-gate relies on (positive finite samples, names that cannot leave a directory,
//! bounded settings, escaped rendering).
//!
//! Cases per target: `CI_GATE_FUZZ_CASES` (default 1000). Seed: fixed by default
//! ([`DEFAULT_SEED`]), so `cargo test` in CI is deterministic; `CI_GATE_FUZZ_RANDOM=1` draws
//! a new one (the nightly workflow does), `CI_GATE_FUZZ_SEED=N` replays one. The seed is
//! printed, and named in a failure. Each target prints its executions and time:
//! `cargo test --release --test it fuzz_parsers:: -- --nocapture` (or without `--release`).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;
use sha2::Digest;

use ci_gate::baseline::{BaselineFile, BaselineStore};
use ci_gate::config::Config as GateConfig;
use ci_gate::eval::leaderboard::Leaderboard;
use ci_gate::eval::protocol::{self, Input, MAX_ID_BYTES};
use ci_gate::files::parse_versioned_json;
use ci_gate::kernel::lexcheck;
use ci_gate::report::{Exporter, MarkdownExporter, Report, TableExporter};
use ci_gate::results::{ResultsFile, SCHEMA_VERSION};
use ci_gate::samples::{MAX_SAMPLE_VALUES, parse_sample_file};
use ci_gate::text;
use ci_gate::validate::{self, Untrusted};

fn cases() -> u32 {
    std::env::var("CI_GATE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// The seed of every run that asks for no other.
const DEFAULT_SEED: u64 = 20;

/// The seed of this process: `CI_GATE_FUZZ_SEED`, else a new one where
/// `CI_GATE_FUZZ_RANDOM` is set (and not 0), else [`DEFAULT_SEED`]. Drawn once, printed once.
fn seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        let fixed = std::env::var("CI_GATE_FUZZ_SEED").ok().map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("CI_GATE_FUZZ_SEED={v:?} is not a u64"))
        });
        let random =
            std::env::var_os("CI_GATE_FUZZ_RANDOM").is_some_and(|v| !v.is_empty() && v != "0");
        let seed = fixed.unwrap_or_else(|| {
            if random {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            } else {
                DEFAULT_SEED
            }
        });
        let how = match (fixed, random) {
            (Some(_), _) => "from CI_GATE_FUZZ_SEED",
            (None, true) => "random (CI_GATE_FUZZ_RANDOM)",
            (None, false) => "fixed (CI_GATE_FUZZ_RANDOM=1 draws one)",
        };
        println!("fuzz seed: CI_GATE_FUZZ_SEED={seed}, {how}");
        seed
    })
}

fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes
}

/// Runs `test` on `cases()` values of `strategy`; a panic or a failed assertion is a failure
/// (proptest catches it, shrinks the input and reports it). Prints executions and time.
fn fuzz<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value) -> bool)
where
    S::Value: std::fmt::Debug,
{
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..Config::default()
    };
    let seed = seed();
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed)),
    );
    let executions = AtomicU64::new(0);
    let accepted = AtomicU64::new(0);
    let start = Instant::now();
    let result = runner.run(&strategy, |value| {
        executions.fetch_add(1, Ordering::Relaxed);
        if test(value) {
            accepted.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    });
    println!(
        "fuzz {name}: {} executions ({} accepted), {} panics, {:.2} s",
        executions.load(Ordering::Relaxed),
        accepted.load(Ordering::Relaxed),
        if result.is_ok() { "0" } else { "some" },
        start.elapsed().as_secs_f64()
    );
    if let Err(e) = result {
        panic!("fuzz {name} (replay: CI_GATE_FUZZ_SEED={seed}): {e}");
    }
}

// ---------------------------------------------------------------------------------------
// Inputs

/// Strings made to hurt: escapes, bidi controls, paths, markup, huge and odd numbers.
const NASTY: &[&str] = &[
    "",
    " ",
    "\n",
    "\r\n",
    "\t",
    "\u{0}",
    "\u{1b}[31m",
    "\u{1b}]8;;https://evil.example\u{7}",
    "\u{202e}",
    "\u{2066}",
    "\u{200b}",
    "\u{feff}",
    "\u{9b}",
    "é",
    "😀",
    "€€€€€€€€€€€€€",
    "../",
    "..",
    ".",
    "/",
    "/etc/passwd",
    "C:\\x",
    "@alice",
    "&#64;",
    "＠",
    "<details>",
    "https://evil.example",
    "www.x",
    "`",
    "|",
    "[",
    "]",
    "{",
    "}",
    "#",
    "- ",
    ": ",
    "&a",
    "*a",
    "!!binary",
    "0",
    "-1",
    "1e999",
    "NaN",
    "inf",
    "4294967295",
    "18446744073709551616",
    "0x10",
    "9.1",
    "0123456789abcdef0123456789abcdef01234567",
    "b1h8s512d64_f16",
    "nvidia-h200",
    "pr",
    "float16",
    "hot",
    "pass",
    "error",
];

fn nasty_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(NASTY).prop_map(str::to_owned),
        2 => any::<String>(),
        1 => prop::collection::vec(prop::sample::select(NASTY), 0..6).prop_map(|v| v.concat()),
        1 => (prop::sample::select(NASTY), 1usize..300).prop_map(|(s, n)| s.repeat(n)),
    ]
}

/// Arbitrary bytes, read as the parsers read files (lossy UTF-8 here; the file readers
/// refuse invalid UTF-8 before parsing).
fn bytes_as_text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<u8>(), 0..512)
        .prop_map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn text_input() -> impl Strategy<Value = String> {
    prop_oneof![bytes_as_text(), any::<String>(), nasty_string()]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(vec![0.0, -0.0, -1.0, 1e-300, 1e300, 4294967295.0, 0.5])
            .prop_map(Value::from),
        nasty_string().prop_map(Value::String),
        Just(Value::Array(Vec::new())),
        Just(Value::Object(Default::default())),
        (1usize..60).prop_map(|depth| {
            (0..depth).fold(Value::from(1), |inner, _| Value::Array(vec![inner]))
        }),
    ]
}

/// One change to a JSON document: at the `at`-th node (pre-order, modulo the node count).
#[derive(Clone, Debug)]
enum Mutation {
    Replace(usize, Value),
    Remove(usize),
    Duplicate(usize),
    Rename(usize, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), json_leaf()).prop_map(|(at, v)| Mutation::Replace(at, v)),
        2 => any::<usize>().prop_map(Mutation::Remove),
        1 => any::<usize>().prop_map(Mutation::Duplicate),
        1 => (any::<usize>(), nasty_string()).prop_map(|(at, k)| Mutation::Rename(at, k)),
    ]
}

fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count_nodes).sum(),
        Value::Object(o) => o.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// The `n`-th node in pre-order; its parent's container is changed for Remove/Duplicate/
/// Rename, the node itself for Replace.
fn apply(doc: &mut Value, m: &Mutation) {
    fn visit(v: &mut Value, n: &mut usize, m: &Mutation) -> bool {
        let target = match m {
            Mutation::Replace(at, _)
            | Mutation::Remove(at)
            | Mutation::Duplicate(at)
            | Mutation::Rename(at, _) => *at,
        };
        if *n == target
            && let Mutation::Replace(_, new) = m
        {
            *v = new.clone();
            return true;
        }
        *n += 1;
        match v {
            Value::Array(items) => {
                for i in 0..items.len() {
                    if *n == target {
                        match m {
                            Mutation::Remove(_) => {
                                items.remove(i);
                                return true;
                            }
                            Mutation::Duplicate(_) => {
                                let copy = items[i].clone();
                                items.insert(i, copy);
                                return true;
                            }
                            _ => {}
                        }
                    }
                    if visit(&mut items[i], n, m) {
                        return true;
                    }
                }
            }
            Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    if *n == target {
                        match m {
                            Mutation::Remove(_) => {
                                map.remove(&k);
                                return true;
                            }
                            Mutation::Rename(_, new) => {
                                if let Some(v) = map.remove(&k) {
                                    map.insert(new.clone(), v);
                                }
                                return true;
                            }
                            Mutation::Duplicate(_) => {
                                if let Some(v) = map.get(&k).cloned() {
                                    map.insert(format!("{k}_"), v);
                                }
                                return true;
                            }
                            _ => {}
                        }
                    }
                    if let Some(child) = map.get_mut(&k)
                        && visit(child, n, m)
                    {
                        return true;
                    }
                }
            }
            _ => {}
        }
        false
    }
    let total = count_nodes(doc).max(1);
    let m = match m {
        Mutation::Replace(at, v) => Mutation::Replace(at % total, v.clone()),
        Mutation::Remove(at) => Mutation::Remove(at % total),
        Mutation::Duplicate(at) => Mutation::Duplicate(at % total),
        Mutation::Rename(at, k) => Mutation::Rename(at % total, k.clone()),
    };
    let mut n = 0;
    visit(doc, &mut n, &m);
}

/// A valid document, mutated 1 to 4 times (mostly once), then maybe cut short.
fn mutated_json(template: &'static str) -> impl Strategy<Value = String> {
    let mutations = prop_oneof![
        3 => prop::collection::vec(mutation(), 1..2),
        1 => prop::collection::vec(mutation(), 1..5),
    ];
    (mutations, prop::option::weighted(0.1, any::<usize>())).prop_map(move |(mutations, cut)| {
        let mut doc: Value = serde_json::from_str(template).unwrap();
        for m in &mutations {
            apply(&mut doc, m);
        }
        let text = serde_json::to_string_pretty(&doc).unwrap();
        match cut {
            Some(at) => {
                let mut at = at % (text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text[..at].to_owned()
            }
            None => text,
        }
    })
}

/// A text edit: at a char position (modulo), delete up to `len` chars and insert text.
fn edited_text(template: &'static str) -> impl Strategy<Value = String> {
    prop::collection::vec((any::<usize>(), 0usize..12, nasty_string()), 1..6).prop_map(
        move |edits| {
            let mut chars: Vec<char> = template.chars().collect();
            for (at, len, insert) in edits {
                let at = at % (chars.len() + 1);
                let end = (at + len).min(chars.len());
                chars.splice(at..end, insert.chars());
            }
            chars.into_iter().collect()
        },
    )
}

const RESULTS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/hostile/results-ok.json"
));
const BASELINE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/hostile/baselines-reason-escapes/nvidia-h200/pr.json"
));
const CONFIG: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/configs/pr.yaml"));
/// A leaderboard of two entries, the second with a commit, a shape and a confirmation
/// (`Leaderboard::parse` checks every hash against the source it names).
const LEADERBOARD: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/leaderboard-v1.json"
));
/// A candidate line of `ci-gate eval` with every key.
const CANDIDATE: &str = r#"{"id":"c1:try/2","source":"extern \"C\" __global__ void k() {}","defines":["BN=64","CG_X"],"commit":"0123456789ABCDEF0123456789abcdef01234567"}"#;

/// The PR config as JSON text, which is YAML too (flow style): structured mutations of it
/// exercise the YAML parser and every setting's check.
fn config_as_json() -> &'static str {
    let value: Value = serde_yaml::from_str(CONFIG).unwrap();
    Box::leak(serde_json::to_string(&value).unwrap().into_boxed_str())
}

// ---------------------------------------------------------------------------------------
// Invariants of what a parser accepts

fn assert_rendering_is_safe(r: &ResultsFile) {
    let report = Report::from_results(r);
    let md = MarkdownExporter.render(&report);
    for c in md.chars() {
        assert!(
            !(c == '\r'
                || c == '\u{1b}'
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)),
            "U+{:04X} in the comment",
            c as u32
        );
    }
    let table = TableExporter::plain().render(&report);
    for line in table.lines() {
        assert!(
            !line.starts_with("::"),
            "workflow command in the table: {line}"
        );
        assert!(!line.contains('\u{1b}'), "escape in the table: {line:?}");
    }
}

fn check_results(text: &str) -> bool {
    let path = Path::new("fuzz/results.json");
    let Ok(r) = parse_versioned_json::<ResultsFile>(text, path, SCHEMA_VERSION) else {
        return false;
    };
    r.check(path)
        .expect("an accepted file passes its own checks");
    assert!(r.shapes.len() <= validate::MAX_SHAPES);
    for s in &r.shapes {
        assert_eq!(s.name, s.params.name());
        assert!(
            s.samples_us
                .iter()
                .flatten()
                .all(|v| v.is_finite() && *v > 0.0)
        );
        assert!(s.samples_us.iter().all(|round| !round.is_empty()));
    }
    if let Some(c) = &r.git_commit {
        assert!(validate::commit(c).is_ok());
    }
    assert!(validate::config_name(&r.config.name).is_ok());
    assert!(r.gate.bootstrap_resamples <= 200_000);
    for w in r.warnings.iter().chain(r.error.iter()) {
        assert!(!w.chars().any(text::is_hidden), "{w:?}");
    }
    assert_rendering_is_safe(&r);
    true
}

fn check_baseline(text: &str) -> bool {
    let path = Path::new("fuzz/nvidia-h200/pr.json");
    let Ok(b) = parse_versioned_json::<BaselineFile>(text, path, SCHEMA_VERSION) else {
        return false;
    };
    b.check(path)
        .expect("an accepted file passes its own checks");
    assert_eq!(
        b.gpu_slug,
        ci_gate::results::gpu_slug(&b.environment.gpu_name)
    );
    let store = BaselineStore::new("fuzz-root");
    let p = store
        .checked_path(&b.gpu_slug, &b.config.name)
        .expect("an accepted file names a path inside the store");
    assert!(p.starts_with("fuzz-root"));
    for s in &b.shapes {
        assert_eq!(s.name, s.params.name());
        assert!(s.samples_us.iter().flatten().count() >= 2);
        assert!(
            s.samples_us
                .iter()
                .flatten()
                .all(|v| v.is_finite() && *v > 0.0)
        );
    }
    assert!(!b.provenance.reason.chars().any(text::is_hidden));
    let _ = text::terminal_text(&b.provenance.reason);
    let _ = text::short_commit(b.provenance.commit.as_deref().unwrap_or(""));
    true
}

fn check_config(text: &str) -> bool {
    let Ok(c) = GateConfig::parse(text, Path::new("fuzz/config.yaml")) else {
        return false;
    };
    assert!(validate::config_name(&c.name).is_ok());
    assert!(!c.shapes.is_empty() && c.shapes.len() <= 1000);
    assert!((100..=200_000).contains(&c.gate.bootstrap_resamples));
    assert!(c.measure.min_rounds >= 2 && c.measure.max_rounds <= 200);
    assert!(c.measure.min_rounds <= c.measure.max_rounds);
    assert!(c.measure.samples_per_round <= 1000);
    assert!(c.measure.warmup_ms <= 10_000.0 && c.measure.sample_ms <= 1000.0);
    assert!(c.gpu_budget_s() <= 86_400.0);
    for s in &c.shapes {
        assert!(s.batch <= 1024 && s.heads <= 1024 && s.seq_len <= 131_072);
        assert!(s.elements() <= 1 << 31);
    }
    true
}

/// What `compare` reads of a sample file (`parse_sample_file`): rounds of positive finite
/// values, at least two in all and at most the bound, every round holding a value; a file
/// "of values" (no round of several) holds one value per round, and the statistics need two
/// units either way.
fn check_samples(text: &str) -> bool {
    match parse_sample_file(text, Path::new("fuzz.txt")) {
        Ok(f) => {
            let values: Vec<f64> = f.rounds.concat();
            assert!((2..=MAX_SAMPLE_VALUES).contains(&values.len()));
            assert!(values.iter().all(|x| x.is_finite() && *x > 0.0));
            assert!(f.rounds.len() >= 2 && f.rounds.iter().all(|r| !r.is_empty()));
            assert_eq!(f.has_rounds, f.rounds.iter().any(|r| r.len() > 1));
            true
        }
        Err(e) => {
            let m = e.to_string();
            assert!(m.starts_with("fuzz.txt"), "{m}");
            assert!(!m.contains('\n') && !m.contains('\u{1b}'), "{m:?}");
            false
        }
    }
}

/// Text the evaluator writes or shows: one line, no escape, no hidden or bidi character.
fn assert_one_safe_line(m: &str) {
    assert!(
        !m.chars().any(|c| c.is_control() || text::is_hidden(c)),
        "{m:?}"
    );
}

/// What the evaluator reads of a candidate line (`protocol::parse_line`): an id of its
/// character set, at most 16 defines of the config's rule with no name twice, a commit of
/// 40 lowercase hex digits, a path without NUL or a source within the bound; a refusal
/// keeps only a valid id and says why on one safe line.
fn check_candidate_line(bytes: &[u8]) -> bool {
    match protocol::parse_line(bytes) {
        Ok(None) => {
            assert!(std::str::from_utf8(bytes).is_ok_and(|t| t.trim().is_empty()));
            false
        }
        Ok(Some(c)) => {
            assert!(protocol::is_valid_id(&c.id) && c.id.len() <= MAX_ID_BYTES);
            assert!(c.defines.len() <= 16);
            let mut names: Vec<&str> = c
                .defines
                .iter()
                .map(|d| d.split_once('=').map_or(d.as_str(), |(n, _)| n))
                .collect();
            for d in &c.defines {
                assert!(!d.is_empty() && !d.starts_with('-'), "{d:?}");
                assert!(
                    d.chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || "_=.+-".contains(ch)),
                    "{d:?}"
                );
            }
            names.sort_unstable();
            let n = names.len();
            names.dedup();
            assert_eq!(names.len(), n, "a define named twice: {:?}", c.defines);
            if let Some(commit) = &c.commit {
                assert!(validate::commit(commit).is_ok());
                assert_eq!(commit, &commit.to_ascii_lowercase());
            }
            match &c.input {
                Input::Source(src) => assert!(src.len() <= 1 << 20),
                Input::Path(p) => {
                    let p = p.to_string_lossy();
                    assert!(!p.is_empty() && p.len() <= 4096 && !p.contains('\0'));
                }
            }
            true
        }
        Err(r) => {
            if let Some(id) = &r.id {
                assert!(protocol::is_valid_id(id), "{id:?}");
            }
            assert!(!r.reason.is_empty());
            assert_one_safe_line(&r.reason);
            false
        }
    }
}

/// `protocol::read_line_bounded` over `input` with lines of at most `max` bytes, against
/// the input split at its line breaks: each line as it was but for one final carriage
/// return, or its length alone where it is longer than `max`; then the end.
fn check_line_reader(input: &[u8], max: usize) -> bool {
    let mut expected: Vec<Result<Vec<u8>, usize>> = input
        .split(|&b| b == b'\n')
        .map(|raw| {
            if raw.len() > max {
                Err(raw.len())
            } else {
                Ok(raw.strip_suffix(b"\r").unwrap_or(raw).to_vec())
            }
        })
        .collect();
    if input.is_empty() || input.last() == Some(&b'\n') {
        expected.pop(); // nothing after the last break
    }
    let mut reader = std::io::BufReader::with_capacity(7, input);
    let mut got = Vec::new();
    while let Some(line) = protocol::read_line_bounded(&mut reader, max).expect("reading a slice") {
        got.push(line);
        assert!(got.len() <= input.len() + 1, "the reader does not end");
    }
    assert_eq!(got, expected, "{input:?} max {max}");
    got.iter().all(Result::is_ok)
}

/// A leaderboard `Leaderboard::parse` accepts: ranks 1, 2, …, every id of its rule, every
/// source the one its SHA-256 names; a refusal names the file, and is safe as printed.
fn check_leaderboard(text: &str) -> bool {
    let path = Path::new("fuzz/board.json");
    match Leaderboard::parse(text.as_bytes(), path) {
        Ok(b) => {
            for (i, e) in b.entries.iter().enumerate() {
                assert_eq!(e.rank as usize, i + 1);
                assert!(protocol::is_valid_id(&e.id));
                let digest = sha2::Sha256::digest(e.source.as_bytes());
                let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                assert_eq!(hex, e.source_sha256);
                assert!(e.defines.len() <= 16);
            }
            if let Some(best) = b.best() {
                assert_eq!(best.rank as usize, b.entries.len());
            }
            true
        }
        Err(e) => {
            // The key and serde's message hold the file's own text; what reaches the
            // terminal goes through `error_message`, as every error of ci-gate does.
            let m = e.to_string();
            assert!(m.contains("fuzz/board.json"), "{m}");
            for line in text::error_message(&m).lines() {
                assert_one_safe_line(line);
                assert!(!line.starts_with("::"), "{line}");
            }
            false
        }
    }
}

fn check_event(text: &str) -> bool {
    match ci_gate::github::pr_number_from_event_text(text, Path::new("event.json")) {
        Ok(Some(n)) => {
            assert!(n > 0);
            true
        }
        Ok(None) => true,
        Err(e) => {
            let m = e.to_string();
            assert!(m.contains("event.json") && !m.contains('\n'), "{m:?}");
            false
        }
    }
}

// ---------------------------------------------------------------------------------------
// Targets

#[test]
fn fuzz_sample_files() {
    let lines = prop::collection::vec(
        prop_oneof![
            1 => nasty_string(),
            1 => any::<f64>().prop_map(|v| v.to_string()),
            20 => (0.001f64..1e6).prop_map(|v| format!("{v}")),
            2 => (0.001f64..1e6).prop_map(|v| format!("  {v:e}\t")),
            2 => Just("# comment".to_owned()),
            2 => Just(String::new()),
        ],
        0..40,
    )
    .prop_map(|l| l.join("\n"));
    fuzz("sample files", prop_oneof![text_input(), lines], |t| {
        check_samples(&t)
    });
}

/// A results file of an A/B run (both sides' rounds, each shape's A/B comparison and the
/// verdict they give), so that mutations reach the A/B's recomputation too.
fn results_with_ab() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let mut r = crate::common::results("NVIDIA H200", &[1.0, 1.05, 0.9], 11);
        let base = crate::common::results("NVIDIA H200", &[1.0, 1.0, 1.0], 12);
        for (s, b) in r.shapes.iter_mut().zip(&base.shapes) {
            s.base_samples_us = b.samples_us.clone();
        }
        let gate = r.gate.clone();
        ci_gate::evaluate::evaluate(
            &mut r.shapes,
            |_| None,
            &gate,
            ci_gate::verdict::Policy::default(),
        )
        .expect("an A/B without a baseline");
        serde_json::to_string(&r).expect("serializable")
    })
}

#[test]
fn fuzz_results_files() {
    fuzz(
        "results files",
        prop_oneof![
            1 => text_input(),
            3 => mutated_json(RESULTS),
            2 => mutated_json(results_with_ab()),
            1 => edited_text(RESULTS),
        ],
        |t| check_results(&t),
    );
}

#[test]
fn fuzz_baseline_files() {
    fuzz(
        "baseline files",
        prop_oneof![1 => text_input(), 4 => mutated_json(BASELINE), 1 => edited_text(BASELINE)],
        |t| check_baseline(&t),
    );
}

#[test]
fn fuzz_configs() {
    fuzz(
        "configs",
        prop_oneof![
            1 => text_input(),
            2 => edited_text(CONFIG),
            3 => mutated_json(config_as_json()),
        ],
        |t| check_config(&t),
    );
}

#[test]
fn fuzz_event_payloads() {
    const EVENT: &str = r#"{"action":"opened","number":7,"pull_request":{"number":7,"head":{"ref":"x"}},"issue":{"number":8}}"#;
    fuzz(
        "event payloads",
        prop_oneof![1 => text_input(), 3 => mutated_json(EVENT), 1 => edited_text(EVENT)],
        |t| check_event(&t),
    );
}

#[test]
fn fuzz_eval_candidate_lines() {
    fuzz(
        "eval candidate lines",
        prop_oneof![
            1 => prop::collection::vec(any::<u8>(), 0..256),
            1 => text_input().prop_map(String::into_bytes),
            4 => mutated_json(CANDIDATE).prop_map(String::into_bytes),
            1 => edited_text(CANDIDATE).prop_map(String::into_bytes),
        ],
        |b| check_candidate_line(&b),
    );
}

#[test]
fn fuzz_eval_line_reader() {
    let input = prop::collection::vec(prop_oneof![4 => any::<u8>(), 1 => Just(b'\n')], 0..300);
    fuzz("eval line reader", (input, 0usize..40), |(input, max)| {
        check_line_reader(&input, max)
    });
}

#[test]
fn fuzz_leaderboards() {
    fuzz(
        "leaderboards",
        prop_oneof![
            1 => text_input(),
            4 => mutated_json(LEADERBOARD),
            1 => edited_text(LEADERBOARD),
        ],
        |t| check_leaderboard(&t),
    );
}

/// The shipped kernel.
const KERNEL: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/attention.cu"));

/// The lexical check's template: the shipped kernel's opening comment and its entry points
/// (macros with line splices and `##`, `#if` groups, `#ifdef`), about a fifth of the file,
/// so that a case costs a fifth (the check reads the source 16 ways).
fn kernel_template() -> &'static str {
    static TEMPLATE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let head = KERNEL.find("\nnamespace cg_attn {").expect("the kernel's namespace");
        let entries = KERNEL
            .find("\n// ---------------------------------------------------------------- extern \"C\" entry points")
            .expect("the kernel's entry points");
        format!("{}{}", &KERNEL[..head + 1], &KERNEL[entries + 1..])
    })
}

/// Lines that reach for a file or hide from the check, each refused wherever it starts a
/// line of code, and how many lines after its first the refused construct stands.
const REFUSED_LINES: &[(&str, u32)] = &[
    ("#include <cuda_fp16.h>\n", 0),
    ("#  include \"/proc/self/environ\"\n", 0),
    ("%:include <x>\n", 0),
    ("%:  include_next <x>\n", 0),
    ("??=include <x>\n", 0),
    ("#\\\ninclude <x>\n", 0),
    ("#/* a comment */include <x>\n", 0),
    ("#embed \"/etc/passwd\"\n", 0),
    ("#import <x>\n", 0),
    ("# 33 \"x.cu\"\n", 0),
    ("#if __has_include(<x>)\n#endif\n", 0),
    ("#ifdef __has_embed\n#endif\n", 0),
    ("#define CG_FUZZ_P(x) x\nint CG_FUZZ_P(include);\n", 1),
    (
        "#define CG_FUZZ_CAT(a, b) a##b\n#if CG_FUZZ_CAT(1, 2)\n#endif\n",
        1,
    ),
    (
        "#define CG_FUZZ_CAT(a, b) a##b\n#define CG_FUZZ_USE CG_FUZZ_CAT(1, 2)\n#elif CG_FUZZ_USE\n",
        2,
    ),
    ("int a\\u0069nclude;\n", 0),
    ("int \u{e9} = 0;\n", 0),
];

/// Lines that name a file only in a comment or a literal, or use allowed directives: never
/// refused.
const HARMLESS_LINES: &[&str] = &[
    "\n",
    "// #include <x> in a comment\n",
    "/* include, embed, __has_include */\n",
    "static const char* cg_fuzz_s = \"#include <x>\";\n",
    "#pragma unroll\n",
    "#define CG_FUZZ_OK 1\n",
    "#if 0\n#endif\n",
    "#if defined(CG_FUZZ_OK) && CG_FUZZ_OK > 0\n#endif\n",
];

/// Where a line may be inserted into the kernel and start a line of code: after a line that
/// does not end in a splice, before any block comment or raw string (which could hold it).
fn code_line_starts(text: &str) -> Vec<(usize, u32)> {
    let limit = [text.find("/*"), text.find("R\"")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(text.len());
    let mut starts = vec![(0, 1)];
    let mut line = 1;
    for (i, _) in text.match_indices('\n') {
        line += 1;
        if i < limit && !text[..i].ends_with('\\') {
            starts.push((i + 1, line));
        }
    }
    starts
}

/// The lexical check of `text` as `attention.cu`: no panic; a refusal is one safe line that
/// names the file and a line; `expect` (a line, or `None` for "accepted") is what it must
/// find where the input is an insertion into the shipped kernel.
fn check_kernel_source(text: &str, expect: Option<Option<u32>>) -> bool {
    match (lexcheck::check_no_file_access(text, "attention.cu"), expect) {
        (Ok(()), None | Some(None)) => true,
        (Ok(()), Some(Some(line))) => panic!("accepted, where line {line} reaches for a file"),
        (Err(e), expect) => {
            let m = e.to_string();
            assert_one_safe_line(&m);
            let at: u32 = m
                .strip_prefix("attention.cu:")
                .and_then(|rest| rest.split(':').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{m:?} names no line of attention.cu"));
            match expect {
                None => {}
                Some(None) => panic!("a harmless insertion refused: {m}"),
                Some(Some(line)) => assert_eq!(at, line, "{m}"),
            }
            false
        }
    }
}

#[test]
fn fuzz_kernel_sources() {
    let template = kernel_template();
    let starts = code_line_starts(template);
    assert!(starts.len() > 200, "{} places to insert", starts.len());
    let insertion = |lines: BoxedStrategy<(&'static str, u32)>| {
        let starts = starts.clone();
        (
            0..starts.len(),
            lines,
            prop::sample::select(&["", " ", "\t"][..]),
        )
            .prop_map(move |(k, (line, after), indent)| {
                let (at, n) = starts[k];
                let text = format!("{}{indent}{line}{}", &template[..at], &template[at..]);
                (text, Some(Some(n + after)))
            })
    };
    let harmless = prop::sample::select(HARMLESS_LINES).prop_map(|l| (l, 0));
    let arbitrary = prop_oneof![text_input(), edited_text(template),].prop_map(|t| (t, None));
    let accepted_insertion = insertion(harmless.boxed()).prop_map(|(t, _)| (t, Some(None)));
    let refused_insertion = insertion(prop::sample::select(REFUSED_LINES).boxed());
    fuzz(
        "kernel sources",
        prop_oneof![1 => arbitrary, 2 => refused_insertion, 1 => accepted_insertion],
        |(text, expect)| check_kernel_source(&text, expect),
    );
}

#[test]
fn the_templates_are_accepted() {
    // Otherwise the mutations would only ever explore the error paths.
    let p = Path::new("t");
    assert!(parse_versioned_json::<ResultsFile>(RESULTS, p, SCHEMA_VERSION).is_ok());
    let ab = parse_versioned_json::<ResultsFile>(results_with_ab(), p, SCHEMA_VERSION)
        .expect("the A/B template");
    assert!(ab.check(p).is_ok() && ab.shapes.iter().all(|s| s.ab.is_some()));
    assert!(parse_versioned_json::<BaselineFile>(BASELINE, p, SCHEMA_VERSION).is_ok());
    assert!(GateConfig::parse(CONFIG, p).is_ok());
    assert!(lexcheck::check_no_file_access(KERNEL, "attention.cu").is_ok());
    assert!(lexcheck::check_no_file_access(kernel_template(), "attention.cu").is_ok());
    let board = Leaderboard::parse(LEADERBOARD.as_bytes(), p).expect("the leaderboard fixture");
    assert_eq!(board.entries.len(), 2);
    assert_eq!(board.entries[1].confirmations.len(), 1);
    let c = protocol::parse_line(CANDIDATE.as_bytes())
        .expect("the candidate template")
        .expect("not blank");
    assert_eq!((c.id.as_str(), c.defines.len()), ("c1:try/2", 2));
    assert!(c.commit.is_some());
    assert_eq!(
        ci_gate::github::pr_number_from_event_text(r#"{"pull_request":{"number":7}}"#, p).unwrap(),
        Some(7)
    );
}
