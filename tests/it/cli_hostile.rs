//! Hostile input through the binary: every file under tests/hostile/ (made by
//! tests/hostile/make_hostile.py) is valid except for the one attack its name says. Each
//! case must end in a clean exit 2 naming the file, key and shape, or in a safe rendering;
//! never a panic, a write outside `--baselines`, raw markup in the comment, a control
//! character on the terminal, a second line that could be a workflow command, or the token.

use crate::common::stderr_text;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{bin, without_version};
use crate::github_common::*;
use assert_cmd::assert::Assert;
use predicates::prelude::*;

fn hostile(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hostile")
        .join(name)
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/examples")
        .join(name)
}

fn stdout(a: &Assert) -> String {
    String::from_utf8(a.get_output().stdout.clone()).unwrap()
}

fn stderr(a: &Assert) -> String {
    stderr_text(&a.get_output().stderr)
}

/// No panic, and stderr is one error message that attacker text cannot break out of: its
/// first line starts `error: `, every other line continues it (wrapped at 80 columns,
/// indented) and none begins with `:` (a line of its own, such as a workflow command, cannot
/// start). Returns the message on one line.
fn assert_clean_error(a: &Assert) -> String {
    let raw = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(!raw.contains("panicked"), "{raw}");
    let lines: Vec<&str> = raw.trim_end().lines().collect();
    assert!(
        lines[0].starts_with("error: ") && !lines[0].starts_with("error: error:"),
        "{raw}"
    );
    for line in &lines {
        assert!(line.chars().count() <= 80, "wider than 80 columns: {raw:?}");
    }
    for line in &lines[1..] {
        assert!(
            line.starts_with("  ") && !line.trim_start().starts_with(':'),
            "a line of its own: {raw:?}"
        );
    }
    assert_terminal_safe(&raw);
    let err = stderr(a);
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "more than one message: {err:?}"
    );
    err
}

/// Nothing that drives a terminal or a CI log: no escape or other control character but
/// newlines, no bidirectional or zero-width character, no line that is a workflow command.
fn assert_terminal_safe(text: &str) {
    for c in text.chars() {
        assert!(
            c == '\n' || !ci_gate::text::is_hidden(c),
            "U+{:04X} in {text:?}",
            c as u32
        );
    }
    for line in text.lines() {
        assert!(
            !line.trim_start().starts_with("::"),
            "workflow command: {line:?}"
        );
    }
}

/// Every file under `dir`, relative to it.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_owned());
            }
        }
    }
    out.sort();
    out
}

fn copy_dir(from: &Path, to: &Path) {
    for rel in tree(from) {
        let dest = to.join(&rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(from.join(&rel), dest).unwrap();
    }
}

/// A copy of the hostile baseline store under `dir`: its directory, its H200 `pr.json` and
/// that file parsed, for a test to change and write back.
fn hostile_store(dir: &Path) -> (PathBuf, PathBuf, serde_json::Value) {
    let store = dir.join("baselines");
    copy_dir(&hostile("baselines-reason-escapes"), &store);
    let file = store.join("nvidia-h200/pr.json");
    let raw = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    (store, file, raw)
}

/// `baseline show` of a store it must refuse: exit 2, a clean error, which it returns.
fn show_refused(store: &Path) -> String {
    let a = bin()
        .args(["baseline", "show", "--baselines"])
        .arg(store)
        .assert()
        .code(2);
    assert_clean_error(&a)
}

fn update(baselines: &Path, from: &Path) -> Assert {
    // A copy of the file (of the same name), with the config it says it was measured with,
    // where it can be read at all (`common::measured_with`).
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(from.file_name().unwrap());
    std::fs::copy(from, &copy).unwrap();
    let mut cmd = bin();
    cmd.args(["baseline", "update", "--reason", "hostile", "--baselines"])
        .arg(baselines)
        .arg("--from")
        .arg(&copy);
    if let Some(config) = crate::common::measured_with(&copy, dir.path()) {
        cmd.arg("--config").arg(config);
    }
    cmd.assert()
}

/// `comment` without a token: the body goes to `fallback.md` and `summary.md` in `dir`. No
/// run link (whose parts a GitHub Actions job would set), so the body is the same anywhere.
fn comment_without_token(from: &Path, dir: &Path) -> Assert {
    bin()
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITHUB_SERVER_URL")
        .env_remove("GITHUB_REPOSITORY")
        .env_remove("GITHUB_RUN_ID")
        .env("GITHUB_STEP_SUMMARY", dir.join("summary.md"))
        .args(["comment", "--fallback"])
        .arg(dir.join("fallback.md"))
        .arg("--from")
        .arg(from)
        .assert()
}

fn comment_with_token(server_url: &str, token: &str, from: &Path, dir: &Path) -> Assert {
    let mut c = bin();
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .env("GITHUB_API_URL", server_url)
        .env("GITHUB_REPOSITORY", format!("{OWNER}/{REPO}"))
        .env("GITHUB_TOKEN", token)
        .env("GITHUB_STEP_SUMMARY", dir.join("summary.md"))
        .args(["comment", "--pr", "17", "--fallback"])
        .arg(dir.join("fallback.md"))
        .arg("--from")
        .arg(from);
    c.assert()
}

#[test]
fn multibyte_commits_are_refused_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let from = hostile("results-multibyte-commit.json");
    // The comment job: exit 2 naming the file and the key; nothing rendered or posted.
    let a = comment_without_token(&from, dir.path()).code(2);
    let err = assert_clean_error(&a);
    assert!(
        err.contains("results-multibyte-commit.json: git_commit:")
            && err.contains("not a commit id"),
        "{err}"
    );
    assert!(!dir.path().join("fallback.md").exists());
    let a = bin()
        .args(["compare", "--format", "markdown"])
        .arg(hostile("results-ok.json"))
        .arg(&from)
        .assert()
        .code(2);
    assert_clean_error(&a);

    // A stored baseline with a multibyte provenance.commit: show and update name it.
    let err = show_refused(&hostile("baselines-multibyte-commit"));
    assert!(
        err.contains("nvidia-h200/pr.json: provenance.commit:"),
        "{err}"
    );
    let store = dir.path().join("baselines");
    copy_dir(&hostile("baselines-multibyte-commit"), &store);
    let file = store.join("nvidia-h200/pr.json");
    let before = std::fs::read(&file).unwrap();
    let a = update(&store, &hostile("results-ok.json")).code(2);
    let err = assert_clean_error(&a);
    assert!(err.contains("provenance.commit"), "{err}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the corrupt file is kept"
    );
}

#[test]
fn slugs_and_config_names_from_a_file_never_leave_the_baselines_directory() {
    let absolute = Path::new("/tmp/ci-gate-escaped");
    let _ = std::fs::remove_dir_all(absolute);
    for (name, key) in [
        ("results-slug-traversal.json", "environment.gpu_slug"),
        ("results-slug-absolute.json", "environment.gpu_slug"),
        ("results-gpu-name-traversal.json", "environment.gpu_slug"),
        ("results-config-traversal.json", "config.name"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("a/b/baselines");
        std::fs::create_dir_all(&store).unwrap();
        let a = update(&store, &hostile(name)).code(2);
        let err = assert_clean_error(&a);
        assert!(err.contains(&format!("{name}: {key}:")), "{name}: {err}");
        assert!(
            tree(dir.path()).is_empty(),
            "{name}: wrote {:?}",
            tree(dir.path())
        );
        assert!(!absolute.exists(), "{name}: wrote {}", absolute.display());
    }
}

#[test]
fn a_linked_gpu_directory_is_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("baselines");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, store.join("nvidia-h200")).unwrap();
    let a = update(&store, &hostile("results-ok.json")).code(2);
    let err = assert_clean_error(&a);
    assert!(
        err.contains("would not be inside the baselines directory"),
        "{err}"
    );
    assert!(tree(&outside).is_empty());
}

#[test]
fn the_store_refuses_unsafe_names_itself() {
    use ci_gate::baseline::{BaselineError, BaselineStore};
    let dir = tempfile::tempdir().unwrap();
    let store = BaselineStore::new(dir.path().join("b"));
    for (slug, config) in [
        ("../x", "pr"),
        ("/abs", "pr"),
        ("a/b", "pr"),
        ("..", "pr"),
        ("nvidia-h200", "../pr"),
        ("nvidia-h200", ".hidden"),
        ("nvidia-h200", "a\\b"),
    ] {
        let e = store.checked_path(slug, config).unwrap_err();
        assert!(
            matches!(e, BaselineError::UnsafeName { .. }),
            "{slug} {config}: {e}"
        );
        // The display path never leaves the root either.
        let shown = store.path(slug, config);
        let rel = shown.strip_prefix(store.root()).unwrap();
        assert_eq!(rel.components().count(), 2, "{}", shown.display());
        assert!(
            rel.components()
                .all(|c| matches!(c, std::path::Component::Normal(_))),
            "{}",
            shown.display()
        );
        assert!(store.load(slug, "NVIDIA H200", config).is_err());
    }
}

/// Raw pieces of the attacks (tests/hostile/make_hostile.py, MARKDOWN_ATTACK and
/// TERMINAL_ATTACK) that must not survive into Markdown.
const RAW_MARKUP: &[&str] = &[
    "<details><summary>all good",
    "<summary>all good",
    "<img src=x>",
    "@alice",
    "@octo",
    "&#64;octo",
    "＠bob",
    "https://evil",
    "http://evil",
    "www.evil",
    "](https",
    "\u{202e}",
    "\u{2066}",
    "### ✅",
    "fixes #1",
    "::error::pwned",
];

fn assert_markdown_safe(body: &str) {
    for raw in RAW_MARKUP {
        assert!(!body.contains(raw), "{raw:?} survived in:\n{body}");
    }
    assert!(!body.contains('\u{1b}') && !body.contains('\r'), "{body}");
}

#[test]
fn markdown_attacks_in_free_text_are_escaped_in_the_comment() {
    let dir = tempfile::tempdir().unwrap();
    let from = hostile("results-free-text-attacks.json");
    comment_without_token(&from, dir.path())
        .code(0)
        .stdout(predicate::str::contains("did not post the comment"));
    let body = std::fs::read_to_string(dir.path().join("fallback.md")).unwrap();
    assert_markdown_safe(&body);
    // The text is still there, shown as text (`&#64;&#8203;alice`, `red link`...).
    insta::assert_snapshot!("comment_of_free_text_attacks", without_version(&body));
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert_markdown_safe(&summary);

    // The same through the API: the posted body is as safe.
    let server = FakeGithub::start();
    comment_with_token(&server.url(), ACTIONS_TOKEN, &from, dir.path()).code(0);
    let posted = server.comments(17);
    assert_eq!(posted.len(), 1);
    assert_markdown_safe(&posted[0].body);

    // And `compare --format markdown`: it prints only what the comparison found, so none
    // of the file's free text reaches it (below its own heading, whose ✅ is ci-gate's).
    let a = bin()
        .args(["compare", "--format", "markdown"])
        .arg(hostile("results-ok.json"))
        .arg(&from)
        .assert()
        .code(0);
    let out = stdout(&a);
    insta::assert_snapshot!(
        "compare_markdown_of_free_text_attacks",
        without_version(&out)
    );
    let below: String = out.lines().skip(2).collect::<Vec<_>>().join("\n");
    assert_markdown_safe(&below);
    assert!(!out.contains("red link") && !out.contains("alice"), "{out}");
}

#[test]
fn a_markdown_attack_in_the_config_name_is_refused_before_anything_is_posted() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeGithub::start();
    let from = hostile("results-config-markdown.json");
    let a = comment_with_token(&server.url(), ACTIONS_TOKEN, &from, dir.path()).code(2);
    let err = assert_clean_error(&a);
    assert!(
        err.contains("results-config-markdown.json: config.name:")
            && err.contains("letters, digits"),
        "{err}"
    );
    assert!(server.requests().is_empty(), "{:?}", server.request_lines());
    assert!(!dir.path().join("fallback.md").exists());
    assert!(!dir.path().join("summary.md").exists());
}

/// `compare` of a results file whose first shape carries a stored energy of one `round`
/// (which must be refused: exit 2), and its error.
fn compare_with_stored_energy_round(round: serde_json::Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    let r = crate::common::results("NVIDIA H200", &[1.0, 1.0, 1.0], 3);
    let mut raw = serde_json::to_value(&r).unwrap();
    raw["shapes"][0]["stored_energy"] = serde_json::json!({
        "rounds": [round],
        "mj_per_call": null,
        "tflops_per_watt": null
    });
    std::fs::write(&path, raw.to_string()).unwrap();
    let a = bin().arg("compare").arg(&path).arg(&path).assert().code(2);
    assert_clean_error(&a)
}

/// The stored baseline's energy a results file carries (`stored_energy`) is checked as the
/// run's own energy is: a negative power is refused by key when the file is read.
#[test]
fn a_stored_energy_with_a_negative_power_is_refused_by_key() {
    let err = compare_with_stored_energy_round(serde_json::json!({
        "source": "counter", "power_w": -1.0, "call_ms": 0.1, "calls": 10,
        "span_ms": 1.0, "span_mj": 1.0, "updates": 2, "read_ms": 0.01,
        "replay_fraction": 0.9
    }));
    assert!(
        err.contains("shapes[0].stored_energy.rounds[0].power_w"),
        "{err}"
    );
}

/// An energy round's timed p50 per call (`timed_call_ms`, what the window's calls are held
/// to) is checked too: a negative one is refused by key.
#[test]
fn an_energy_rounds_negative_timed_call_is_refused_by_key() {
    let err = compare_with_stored_energy_round(serde_json::json!({
        "source": "counter", "power_w": 300.0, "call_ms": 0.1, "calls": 10,
        "span_ms": 1.0, "span_mj": 1.0, "updates": 2, "read_ms": 0.01,
        "replay_fraction": 0.9, "timed_call_ms": -0.1
    }));
    assert!(
        err.contains("shapes[0].stored_energy.rounds[0].timed_call_ms"),
        "{err}"
    );
}

/// Energy figures no board gives (a window of 1e-300 mJ, 1e308 W) are refused by key: the
/// first made the counter's resolution a 300-digit percentage in the comment.
#[test]
fn energy_figures_out_of_range_are_refused_by_key() {
    for (name, value, shown) in [
        (
            "span_mj",
            1e-300,
            "1e-300 is not 0 or a number from 1e-6 to 1e14",
        ),
        (
            "power_w",
            1e308,
            "1e308 is not 0 or a number from 1e-6 to 1e5",
        ),
        (
            "timed_call_ms",
            2e9,
            "2000000000 is not 0 or a number from 1e-6 to 1e9",
        ),
    ] {
        let mut round = serde_json::json!({
            "source": "counter", "power_w": 300.0, "call_ms": 0.1, "calls": 10,
            "span_ms": 1.0, "span_mj": 1.0, "updates": 2, "read_ms": 0.01,
            "replay_fraction": 0.9, "timed_call_ms": 0.1
        });
        round[name] = serde_json::json!(value);
        let err = compare_with_stored_energy_round(round);
        assert!(
            err.contains(&format!(
                "shapes[0].stored_energy.rounds[0].{name} of shape b2h8s512d64_f16: {shown}"
            )),
            "{err}"
        );
    }
}

/// Rounds per process whose sum overflows (and, wrapped, would equal the rounds recorded)
/// are refused when the baseline is read, naming the key: never a panic in the statistics.
#[test]
fn rounds_per_process_that_overflow_are_refused_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let (store, file, mut raw) = hostile_store(dir.path());
    let rounds = raw["shapes"][0]["samples_us"].as_array().unwrap().len() as u64;
    // u64::MAX + (rounds + 1) wraps to `rounds`.
    raw["shapes"][0]["process_rounds"] = serde_json::json!([u64::MAX, rounds + 1]);
    std::fs::write(&file, raw.to_string()).unwrap();
    let err = show_refused(&store);
    assert!(
        err.contains("shapes[0].process_rounds") && err.contains("add up to the rounds"),
        "{err}"
    );
}

/// A stored shape's summary and TFLOP/s are what its samples give, as a results file's are:
/// a file whose p50 or TFLOP/s says otherwise is refused where it is read, naming the key
/// (before 2026-12-07 both were only checked to be finite, and `baseline show` listed the
/// file).
#[test]
fn stored_figures_that_the_samples_do_not_give_are_refused_by_key() {
    let dir = tempfile::tempdir().unwrap();
    for (key, field, factor, says) in [
        (
            "shapes[0].summary.p50",
            "p50",
            0.5,
            "is not the p50 of the shape's samples",
        ),
        (
            "shapes[0].summary.min",
            "min",
            1.0001,
            "is not the min of the shape's samples",
        ),
        (
            "shapes[0].tflops",
            "tflops",
            2.0,
            "is not the shape's FLOPs over its p50",
        ),
    ] {
        let (store, file, mut raw) = hostile_store(&dir.path().join(field));
        let shape = &mut raw["shapes"][0];
        let slot = if field == "tflops" {
            &mut shape["tflops"]
        } else {
            &mut shape["summary"][field]
        };
        let was = slot.as_f64().expect("a recorded figure");
        *slot = (was * factor).into();
        std::fs::write(&file, raw.to_string()).unwrap();
        let err = show_refused(&store);
        assert!(err.contains(key) && err.contains(says), "{key}: {err}");
        assert!(err.contains("nvidia-h200/pr.json"), "{err}");
    }
}

/// A peer's p50 is the median of its samples: the comment's "×" columns divide the kernel's
/// p50 by it, so a results file whose cuDNN p50 is ten times its samples would show the
/// kernel at a tenth of cuDNN's time. Such a file, one with a p50 and too few samples, or
/// samples and no p50, is refused (exit 2, naming the key); the honest entry passes.
#[test]
fn a_peer_p50_that_its_samples_do_not_give_exits_2_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let ok: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(hostile("results-ok.json")).unwrap())
            .unwrap();
    let samples = serde_json::json!([[10.0, 10.5, 11.0], [10.2, 10.4]]);
    for (case, samples, p50, code, says) in [
        ("honest", samples.clone(), serde_json::json!(10.4), 0, ""),
        (
            "tenfold",
            samples.clone(),
            serde_json::json!(104.0),
            2,
            "104 is not the median of the peer's samples (10.4)",
        ),
        (
            "one-sample",
            serde_json::json!([[10.0]]),
            serde_json::json!(10.0),
            2,
            "a p50 over 1 samples",
        ),
        (
            "no-p50",
            samples.clone(),
            serde_json::Value::Null,
            2,
            "no p50 over 5 samples",
        ),
    ] {
        let mut r = ok.clone();
        r["shapes"][0]["peers"] = serde_json::json!([{
            "peer": "torch-sdpa-cudnn",
            "samples_us": samples,
            "p50_us": p50,
            "error": null,
            "backend": "cudnn",
        }]);
        let file = dir.path().join(format!("{case}.json"));
        std::fs::write(&file, r.to_string()).unwrap();
        let a = bin()
            .arg("compare")
            .arg(hostile("results-ok.json"))
            .arg(&file)
            .assert()
            .code(code);
        if code == 2 {
            let err = assert_clean_error(&a);
            assert!(
                err.contains("shapes[0].peers[0].p50_us") && err.contains(says),
                "{case}: {err}"
            );
        }
    }
}

#[test]
fn escape_sequences_in_a_reason_are_stripped_in_baseline_show() {
    let a = bin()
        .args(["baseline", "show", "--wide", "--baselines"])
        .arg(hostile("baselines-reason-escapes"))
        .assert()
        .code(0);
    let out = stdout(&a);
    assert_terminal_safe(&out);
    assert!(out.contains("red link  ::error::pwned evil"), "{out}");
    assert!(
        !out.contains("31m") && !out.contains("evil.example"),
        "{out}"
    );
    // The file does hold the escapes: the test would catch a regression.
    let raw: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(hostile("baselines-reason-escapes/nvidia-h200/pr.json")).unwrap(),
    )
    .unwrap();
    let reason = raw["provenance"]["reason"].as_str().unwrap();
    assert!(reason.contains('\u{1b}') && reason.contains('\u{202e}') && reason.contains('\n'));
}

#[test]
fn free_text_escapes_never_reach_the_compare_table() {
    let a = bin()
        .arg("compare")
        .arg(hostile("results-ok.json"))
        .arg(hostile("results-free-text-attacks.json"))
        .assert()
        .code(0);
    let out = stdout(&a);
    assert_terminal_safe(&out);
    // The candidate file's own warnings are not this comparison's: not printed at all.
    assert!(!out.contains("red link") && !out.contains("pwned"), "{out}");
    assert!(out.contains("ci-gate: PASS"), "{out}");
}

fn assert_fast(start: Instant, limit: Duration) {
    assert!(start.elapsed() < limit, "took {:?}", start.elapsed());
}

#[test]
fn huge_bootstrap_resamples_exit_2_fast() {
    let start = Instant::now();
    let a = bin()
        .args(["compare", "--config"])
        .arg(hostile("config-huge-resamples.yaml"))
        .arg(example("base.txt"))
        .arg(example("cand.txt"))
        .assert()
        .code(2);
    assert_fast(start, Duration::from_secs(2));
    let err = assert_clean_error(&a);
    assert!(
        err.contains("config-huge-resamples.yaml")
            && err.contains(
                "gate.bootstrap_resamples: 4294967295 is too large: at most 200000 at line 3"
            ),
        "{err}"
    );
    // The same setting inside a results file.
    let start = Instant::now();
    let a = bin()
        .arg("compare")
        .arg(hostile("results-ok.json"))
        .arg(hostile("results-huge-resamples.json"))
        .assert()
        .code(2);
    assert_fast(start, Duration::from_secs(2));
    let err = assert_clean_error(&a);
    assert!(
        err.contains("results-huge-resamples.json") && err.contains("at most 200000"),
        "{err}"
    );
}

#[test]
fn deep_yaml_and_json_exit_2_in_under_a_second() {
    let start = Instant::now();
    let a = bin()
        .args(["compare", "--config"])
        .arg(hostile("config-deep.yaml"))
        .arg(example("base.txt"))
        .arg(example("cand.txt"))
        .assert()
        .code(2);
    assert_fast(start, Duration::from_secs(1));
    let err = assert_clean_error(&a);
    assert!(
        err.contains("config-deep.yaml") && err.contains("nest more than 32 levels deep at line 2"),
        "{err}"
    );
    let start = Instant::now();
    let a = bin()
        .arg("compare")
        .arg(hostile("results-ok.json"))
        .arg(hostile("results-deep.json"))
        .assert()
        .code(2);
    assert_fast(start, Duration::from_secs(1));
    let err = assert_clean_error(&a);
    assert!(
        err.contains("results-deep.json nests arrays and objects more than 32 deep"),
        "{err}"
    );
}

#[test]
fn an_http_api_url_is_refused_before_the_token_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let from = hostile("results-ok.json");
    // A listener that would receive the request if one were made.
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    for url in [
        "http://api.github.example".to_owned(),
        format!("http://0.0.0.0:{port}"),
        format!("http://127.0.0.1.nip.io:{port}"),
    ] {
        let a = comment_with_token(&url, ACTIONS_TOKEN, &from, dir.path()).code(2);
        let err = assert_clean_error(&a);
        assert!(
            err.contains("GITHUB_API_URL is") && err.contains("only sent over https"),
            "{url}: {err}"
        );
        assert!(!err.contains(ACTIONS_TOKEN) && !stdout(&a).contains(ACTIONS_TOKEN));
        assert!(listener.accept().is_err(), "{url}: a connection was made");
    }
    // Loopback over http is allowed (a local test server), by address or as localhost.
    let server = FakeGithub::start();
    let port = server.url().rsplit(':').next().unwrap().to_owned();
    comment_with_token(
        &format!("http://localhost:{port}"),
        ACTIONS_TOKEN,
        &from,
        dir.path(),
    )
    .code(0)
    .stdout(predicate::str::contains("posted the PR comment"));
}

#[test]
fn the_token_is_scrubbed_from_api_error_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let from = hostile("results-ok.json");
    let comments = format!("/repos/{OWNER}/{REPO}/issues/17/comments");

    // An error answer that echoes the token in its message.
    let server = FakeGithub::start();
    server.inject(
        Fault::new("POST", &comments, 422)
            .message(&format!(
                "Validation failed for Bearer {ACTIONS_TOKEN}\n::error::x"
            ))
            .always(),
    );
    let a = comment_with_token(&server.url(), ACTIONS_TOKEN, &from, dir.path()).code(2);
    let err = assert_clean_error(&a);
    assert!(err.contains("422") && err.contains("Bearer ***"), "{err}");
    assert!(!err.contains(ACTIONS_TOKEN) && !stdout(&a).contains(ACTIONS_TOKEN));

    // A success answer that cannot be read, quoting the token where a number belongs.
    let server = FakeGithub::start();
    server.inject(
        Fault::new("POST", &comments, 201)
            .raw_body(&format!("{{\"id\": \"{ACTIONS_TOKEN}\"}}"))
            .always(),
    );
    let a = comment_with_token(&server.url(), ACTIONS_TOKEN, &from, dir.path()).code(2);
    let err = assert_clean_error(&a);
    assert!(
        err.contains("could not be read") && err.contains("***"),
        "{err}"
    );
    assert!(!err.contains(ACTIONS_TOKEN) && !stdout(&a).contains(ACTIONS_TOKEN));

    // A link that echoes the token is not printed with it.
    let server = FakeGithub::start();
    server.inject(
        Fault::new("POST", &comments, 201)
            .raw_body(&format!(
                "{{\"id\": 5, \"html_url\": \"https://x/?t={ACTIONS_TOKEN}\\n::error::x\"}}"
            ))
            .always(),
    );
    let a = comment_with_token(&server.url(), ACTIONS_TOKEN, &from, dir.path()).code(0);
    let out = stdout(&a);
    assert!(
        out.contains("posted the PR comment: https://x/?t=***"),
        "{out}"
    );
    assert!(!out.contains(ACTIONS_TOKEN));
    assert_terminal_safe(&out);
}

#[test]
fn zero_negative_out_of_range_and_empty_samples_exit_2_naming_the_shape() {
    let dir = tempfile::tempdir().unwrap();
    for (name, what) in [
        (
            "results-zero-sample.json",
            "samples_us[2][4] of shape b2h8s512d64_causal_f16: 0 is not a time",
        ),
        (
            "results-negative-sample.json",
            "samples_us[2][4] of shape b2h8s512d64_causal_f16: -3.5 is not a time",
        ),
        (
            "results-huge-sample.json",
            "samples_us[2][4] of shape b2h8s512d64_causal_f16: 1e308 is not a time",
        ),
        (
            "results-tiny-sample.json",
            "samples_us[2][4] of shape b2h8s512d64_causal_f16: 1e-300 is not a time",
        ),
        (
            "results-huge-summary.json",
            "summary.p50 of shape b2h8s512d64_causal_f16: 1e308 is not a time",
        ),
        (
            "results-empty-round.json",
            "samples_us[3] of shape b2h8s512d64_causal_f16: is an empty round",
        ),
    ] {
        let from = hostile(name);
        let a = bin()
            .arg("compare")
            .arg(hostile("results-ok.json"))
            .arg(&from)
            .assert()
            .code(2);
        let err = assert_clean_error(&a);
        assert!(err.contains(&format!("{name}: shapes[1].{what}")), "{err}");
        // As the base side too.
        bin()
            .arg("compare")
            .arg(&from)
            .arg(hostile("results-ok.json"))
            .assert()
            .code(2);
        // Never recorded as a baseline.
        let store = dir.path().join("baselines");
        let a = update(&store, &from).code(2);
        assert!(stderr(&a).contains(what), "{}", stderr(&a));
        assert!(!store.exists() || tree(&store).is_empty());
        // Never turned into a comment.
        comment_without_token(&from, dir.path()).code(2);
    }
}

/// Figures a file's own record contradicts: a verdict that passes over the shape's failed
/// parity record, a parity error below 0, a summary that is not its samples' (the comment
/// showed its p50 and `history` kept it), TFLOP/s that are not the FLOPs over that p50, a
/// verdict its comparisons do not give. Exit
/// 2 naming the key, as BASE or CAND, never a baseline or a comment. Before 2026-12-07 each
/// compared (exit 0); the first one's comment read "PASS" with "FAIL" in its parity column.
#[test]
fn figures_that_the_files_own_record_contradicts_exit_2_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (name, what) in [
        (
            "results-pass-over-failed-parity.json",
            "verdict of shape b2h8s512d64_causal_f16: `no-baseline` contradicts the shape's own failed parity check",
        ),
        (
            "results-negative-parity-error.json",
            "parity.rel_l2 of shape b2h8s512d64_causal_f16: -1 is no error a parity check gives",
        ),
        (
            "results-summary-not-of-its-samples.json",
            "summary.p50 of shape b2h8s512d64_causal_f16: 5 is not the p50 of the shape's samples (14.1)",
        ),
        (
            "results-tflops-not-of-its-p50.json",
            "tflops of shape b2h8s512d64_causal_f16: 900 is not the shape's FLOPs over its p50",
        ),
        (
            "results-verdict-not-of-its-record.json",
            "verdict of shape b2h8s512d64_causal_f16: `improvement` decided by no reference is not what the shape's own record gives",
        ),
    ] {
        let from = hostile(name);
        for (base, cand) in [
            (hostile("results-ok.json"), from.clone()),
            (from.clone(), hostile("results-ok.json")),
        ] {
            let a = bin().arg("compare").arg(base).arg(cand).assert().code(2);
            let err = assert_clean_error(&a);
            assert!(err.contains(&format!("{name}: shapes[1].{what}")), "{err}");
        }
        let store = dir.path().join("baselines");
        let a = update(&store, &from).code(2);
        assert!(stderr(&a).contains(what), "{}", stderr(&a));
        assert!(!store.exists() || tree(&store).is_empty());
        let a = comment_without_token(&from, dir.path()).code(2);
        assert!(stderr(&a).contains(what), "{}", stderr(&a));
        assert!(!dir.path().join("fallback.md").exists());
    }
}

#[test]
fn a_shape_name_must_be_the_name_of_its_parameters() {
    let a = bin()
        .arg("compare")
        .arg(hostile("results-ok.json"))
        .arg(hostile("results-shape-name-mismatch.json"))
        .assert()
        .code(2);
    let err = assert_clean_error(&a);
    assert!(
        err.contains(
            "shapes[0].name of shape b1h8s512d64_f16: \"b1h8s512d64_f16\\u{a}::error::x\""
        ),
        "{err}"
    );
}

#[test]
fn newlines_in_error_text_cannot_start_a_workflow_command() {
    let dir = tempfile::tempdir().unwrap();
    let a = bin()
        .arg("compare")
        .arg(hostile("results-ok.json"))
        .arg(hostile("results-newline-in-verdict.json"))
        .assert()
        .code(2);
    let err = assert_clean_error(&a);
    assert!(err.contains("unknown variant"), "{err}");
    let a = comment_without_token(&hostile("results-newline-in-verdict.json"), dir.path()).code(2);
    assert_clean_error(&a);
    // A config value with a newline (serde quotes unknown values raw).
    let config = dir.path().join("newline.yaml");
    std::fs::write(
        &config,
        "shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, dtype: \"f16\\n::error::pwned\\u001b[2J\"}\n",
    )
    .unwrap();
    let a = bin()
        .args(["compare", "--config"])
        .arg(&config)
        .arg(example("base.txt"))
        .arg(example("cand.txt"))
        .assert()
        .code(2);
    let err = assert_clean_error(&a);
    assert!(
        err.contains("newline.yaml") && err.contains("dtype"),
        "{err}"
    );
}

#[test]
fn the_job_summary_stays_under_githubs_limit() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(hostile("results-ok.json")).unwrap();
    let mut r: serde_json::Value = serde_json::from_str(&text).unwrap();
    let warning = format!("clock changed: {}", "x".repeat(1000));
    r["warnings"] = serde_json::Value::Array(vec![warning.into(); 3000]);
    let from = dir.path().join("many-warnings.json");
    std::fs::write(&from, serde_json::to_string(&r).unwrap()).unwrap();
    comment_without_token(&from, dir.path()).code(0);
    let body = std::fs::read_to_string(dir.path().join("fallback.md")).unwrap();
    assert!(
        body.len() > 2 * 1024 * 1024,
        "the fallback file keeps the full report"
    );
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(summary.len() <= 1024 * 1024, "{}", summary.len());
    assert!(summary.starts_with("<!-- ci-gate:perf-report -->"));
    assert!(
        summary
            .trim_end()
            .ends_with("the full report is in the results artifact."),
        "{}",
        &summary[summary.len() - 200..]
    );
}

/// A launch read from a baseline or a results file (`crate::launch`) that is no kernel name
/// or no CUDA grid is refused, exit 2, naming the key: it is never shown.
#[test]
fn a_hostile_launch_is_refused_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let (store, file, mut raw) = hostile_store(dir.path());
    raw["shapes"][0]["launch"] = serde_json::json!({
        "kernel": "\u{1b}[31m../x", "grid": [4, 16, 1],
        "threads_per_block": 256, "dynamic_smem_bytes": 1024
    });
    std::fs::write(&file, raw.to_string()).unwrap();
    let err = show_refused(&store);
    assert!(err.contains("shapes[0].launch.kernel"), "{err}");

    let mut results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(hostile("results-ok.json")).unwrap())
            .unwrap();
    results["shapes"][0]["launch"] = serde_json::json!({
        "kernel": "attention_fwd_f16_d64", "grid": [0, 16, 1],
        "threads_per_block": 256, "dynamic_smem_bytes": 1024
    });
    let cand = dir.path().join("cand.json");
    std::fs::write(&cand, results.to_string()).unwrap();
    let a = bin()
        .arg("compare")
        .arg(hostile("results-ok.json"))
        .arg(&cand)
        .assert()
        .code(2);
    let err = assert_clean_error(&a);
    assert!(err.contains("shapes[0].launch.grid"), "{err}");
}

/// The results of an A/B run whose candidate is 10% slower on each of its three shapes (a
/// `regression` each, decided by A/B), and its gate.
fn slower_ab_run() -> (ci_gate::results::ResultsFile, ci_gate::config::GateSettings) {
    use ci_gate::verdict::{Policy, Verdict};
    let mut r = crate::common::results("NVIDIA H200", &[1.1, 1.1, 1.1], 3);
    let base = crate::common::results("NVIDIA H200", &[1.0, 1.0, 1.0], 4);
    for (s, b) in r.shapes.iter_mut().zip(&base.shapes) {
        s.base_samples_us = b.samples_us.clone();
    }
    let gate = r.gate.clone();
    ci_gate::evaluate::evaluate(&mut r.shapes, |_| None, &gate, Policy::default()).unwrap();
    assert!(r.shapes.iter().all(|s| s.verdict == Verdict::Regression));
    (r, gate)
}

/// An A/B edited in a file along with its verdict: a run whose rounds say 10% slower given
/// the comparison of an A/A (and the `pass` that comparison decides). The verdict agrees with
/// the comparison, so only recomputing the comparison from the shape's own rounds refuses it
/// (exit 2, naming the first figure that differs); before the forty-seventh session the
/// comment read "PASS" over it and exited 0.
#[test]
fn an_ab_that_the_shapes_own_rounds_do_not_give_exits_2() {
    use ci_gate::verdict::{Policy, Verdict};
    let dir = tempfile::tempdir().unwrap();
    let (mut r, gate) = slower_ab_run();
    let path = dir.path().join("ab.json");
    crate::common::write(&path, &r);
    comment_without_token(&path, dir.path()).code(0);
    std::fs::remove_file(dir.path().join("fallback.md")).unwrap();
    // The same base against itself: an A/A's comparison and verdict.
    let mut aa = r.clone();
    for s in &mut aa.shapes {
        s.samples_us = s.base_samples_us.clone();
    }
    ci_gate::evaluate::evaluate(&mut aa.shapes, |_| None, &gate, Policy::default()).unwrap();
    assert_eq!(aa.shapes[0].verdict, Verdict::Pass);
    r.shapes[0].ab = aa.shapes[0].ab.clone();
    r.shapes[0].verdict = aa.shapes[0].verdict;
    r.shapes[0].decided_by = aa.shapes[0].decided_by;
    crate::common::write(&path, &r);
    let a = comment_without_token(&path, dir.path()).code(2);
    assert!(!dir.path().join("fallback.md").exists());
    let err = stderr(&a);
    assert!(
        err.contains("ab.json: shapes[0].ab.p50_cand of shape b2h8s512d64_f16:")
            && err.contains("is not what the shape's A/B rounds give"),
        "{err}"
    );
    // One figure alone: the ratio of the run's own comparison, 10% slower made 1% slower.
    r.shapes[0].ab = None;
    ci_gate::evaluate::evaluate(&mut r.shapes, |_| None, &gate, Policy::default()).unwrap();
    if let Some(ab) = r.shapes[0].ab.as_mut() {
        ab.ratio = 1.01;
    }
    crate::common::write(&path, &r);
    let a = bin()
        .arg("compare")
        .arg(hostile("results-ok.json"))
        .arg(&path)
        .assert()
        .code(2);
    let err = assert_clean_error(&a);
    assert!(
        err.contains("shapes[0].ab.ratio")
            && err.contains("1.01 is not what the shape's A/B rounds give"),
        "{err}"
    );
}

/// A verdict edited in a file: a run's `regression` (its A/B in the file says 10% slower)
/// made `pass`. The verdict is what the one rule gives of the shape's own record under the
/// file's gate, so the edit is refused wherever the file is read (exit 2, naming the key);
/// before 2026-12-07 the comment read "PASS" over the edited shape and exited 0.
#[test]
fn a_verdict_that_the_shapes_own_comparisons_do_not_give_exits_2() {
    use ci_gate::verdict::Verdict;
    let dir = tempfile::tempdir().unwrap();
    let (mut r, _) = slower_ab_run();
    let path = dir.path().join("edited.json");
    crate::common::write(&path, &r);
    // The comment posts whatever the verdict (its job is the comment, not the check).
    comment_without_token(&path, dir.path()).code(0);
    let body = std::fs::read_to_string(dir.path().join("fallback.md")).unwrap();
    assert!(body.contains("FAIL: 3 regression"), "{body}");
    std::fs::remove_file(dir.path().join("fallback.md")).unwrap();
    r.shapes[0].verdict = Verdict::Pass;
    crate::common::write(&path, &r);
    let a = comment_without_token(&path, dir.path()).code(2);
    assert!(!dir.path().join("fallback.md").exists());
    let err = stderr(&a);
    assert!(
        err.contains("edited.json: shapes[0].verdict of shape b2h8s512d64_f16: `pass` decided by A/B is not what the shape's own record gives under the file's gate (`regression` decided by A/B)"),
        "{err}"
    );
    let a = bin()
        .arg("compare")
        .arg(hostile("results-ok.json"))
        .arg(&path)
        .assert()
        .code(2);
    assert!(assert_clean_error(&a).contains("shapes[0].verdict"));
}
