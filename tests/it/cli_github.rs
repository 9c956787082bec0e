//! `ci-gate comment` and `ci-gate ci` as GitHub Actions runs them: the binary against a fake
//! GitHub REST API on 127.0.0.1.

use crate::common::{bin, require_no_cuda_driver, results, without_version, write};
use crate::common::{stderr_has, stderr_text};
use crate::github_common::*;
use predicates::prelude::*;

fn comment_cmd(
    server: &FakeGithub,
    token: Option<&str>,
    from: &std::path::Path,
    dir: &std::path::Path,
) -> assert_cmd::Command {
    let mut c = bin();
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .env("GITHUB_API_URL", server.url())
        .env("GITHUB_REPOSITORY", format!("{OWNER}/{REPO}"))
        .env("GITHUB_SERVER_URL", "https://github.com")
        .env("GITHUB_RUN_ID", "4242")
        .env("GITHUB_STEP_SUMMARY", dir.join("summary.md"))
        .args(["comment", "--pr", "17", "--fallback"])
        .arg(dir.join("fallback.md"))
        .arg("--from")
        .arg(from);
    if let Some(t) = token {
        c.env("GITHUB_TOKEN", t);
    }
    c
}

#[test]
fn comment_is_created_then_updated_and_the_token_never_leaks() {
    let server = FakeGithub::start();
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("results.json");
    write(&from, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    // Someone else's comment carrying the marker is never edited.
    let foreign = server.seed_comment(17, "mallory", "<!-- ci-gate:perf-report --> fake report");

    let first = comment_cmd(&server, Some(ACTIONS_TOKEN), &from, dir.path())
        .assert()
        .code(0);
    let out = String::from_utf8(first.get_output().stdout.clone()).unwrap();
    assert!(out.contains("ci-gate: PASS with warnings"), "{out}");
    assert!(out.contains("posted the PR comment"), "{out}");
    let mine: Vec<_> = server
        .comments(17)
        .into_iter()
        .filter(|c| c.login == BOT_LOGIN)
        .collect();
    assert_eq!(mine.len(), 1);
    // The marker first; the run's link from GITHUB_SERVER_URL, _REPOSITORY and _RUN_ID.
    insta::assert_snapshot!("posted_comment", without_version(&mine[0].body));

    write(&from, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 2));
    comment_cmd(&server, Some(ACTIONS_TOKEN), &from, dir.path())
        .assert()
        .code(0)
        .stdout(predicate::str::contains("updated the PR comment"));
    let mine: Vec<_> = server
        .comments(17)
        .into_iter()
        .filter(|c| c.login == BOT_LOGIN)
        .collect();
    assert_eq!(mine.len(), 1, "updated in place, not posted twice");
    assert_eq!(
        server.comment(foreign).unwrap().body,
        "<!-- ci-gate:perf-report --> fake report"
    );

    for r in server.requests() {
        for (name, value) in &r.headers {
            if name != "authorization" {
                assert!(!value.contains(ACTIONS_TOKEN), "token in header {name}");
            }
        }
        assert!(!r.target.contains(ACTIONS_TOKEN) && !r.body.contains(ACTIONS_TOKEN));
    }
    assert!(!out.contains(ACTIONS_TOKEN));
}

#[test]
fn without_a_token_the_body_goes_to_a_file_and_the_summary() {
    let server = FakeGithub::start();
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("results.json");
    let mut r = results("NVIDIA H200", &[1.0, 1.0, 1.0], 1);
    // Free text from the file (a shape name must equal its parameters' name, see
    // tests/it/cli_hostile.rs) is escaped.
    r.warnings.push("evil|<script>@team".into());
    write(&from, &r);
    comment_cmd(&server, None, &from, dir.path())
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "did not post the comment: GITHUB_TOKEN is not set",
        ));
    let body = std::fs::read_to_string(dir.path().join("fallback.md")).unwrap();
    insta::assert_snapshot!("fallback_comment", without_version(&body));
    // Said in the snapshot too; kept as an invariant that no snapshot update may drop.
    assert!(
        !body.contains("<script>")
            && !body.contains("@team")
            && body.contains("evil&#124;&#60;script&#62;&#64;&#8203;team")
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("summary.md"))
            .unwrap()
            .trim(),
        body.trim()
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_read_only_token_writes_the_file_and_still_exits_0() {
    let server = FakeGithub::start();
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("results.json");
    write(&from, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    comment_cmd(&server, Some(READONLY_TOKEN), &from, dir.path())
        .assert()
        .code(0)
        .stdout(predicate::str::contains("did not post the comment"))
        .stdout(predicate::str::contains(READONLY_TOKEN).not());
    assert!(dir.path().join("fallback.md").exists());
}

#[test]
fn an_unreadable_results_file_is_exit_2() {
    let server = FakeGithub::start();
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("results.json");
    std::fs::write(&from, "{ not json").unwrap();
    comment_cmd(&server, Some(ACTIONS_TOKEN), &from, dir.path())
        .assert()
        .code(2)
        .stderr(stderr_has("results.json is not valid ci-gate JSON"));
}

#[test]
#[cfg_attr(
    ci_gate_cuda_driver,
    ignore = "a CUDA driver is installed here; this test checks the path without a GPU"
)]
fn ci_without_a_gpu_fails_closed_with_results_outputs_and_annotation() {
    require_no_cuda_driver();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.json");
    let assert = bin()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", dir.path().join("output"))
        .env("GITHUB_STEP_SUMMARY", dir.path().join("summary.md"))
        .args(["ci", "--out"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(stderr_has("no NVIDIA driver found"));
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    assert!(
        stdout.contains("::error title=ci-gate%3A no verdict::"),
        "{stdout}"
    );
    let saved = ci_gate::results::ResultsFile::load(&out).unwrap();
    assert!(!saved.passed);
    assert!(saved.error.unwrap().contains("no NVIDIA driver found"));
    let outputs = std::fs::read_to_string(dir.path().join("output")).unwrap();
    assert!(
        outputs.contains("verdict<<") && outputs.contains("\nerror\n"),
        "{outputs}"
    );
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(summary.contains("could not reach a verdict"), "{summary}");
}

/// Outside GitHub Actions `ci` prints no workflow commands: the error is on stderr, once,
/// and stdout has no `::error` line (issue 21); `--no-peers` is accepted.
#[test]
#[cfg_attr(
    ci_gate_cuda_driver,
    ignore = "a CUDA driver is installed here; this test checks the path without a GPU"
)]
fn ci_outside_actions_prints_no_workflow_commands() {
    require_no_cuda_driver();
    let dir = tempfile::tempdir().unwrap();
    for extra in [&[][..], &["--no-peers"][..]] {
        let assert = bin()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("GITHUB_OUTPUT")
            .env_remove("GITHUB_STEP_SUMMARY")
            .args(["ci", "--out"])
            .arg(dir.path().join("results.json"))
            .args(extra)
            .assert()
            .code(2)
            .stderr(stderr_has("no NVIDIA driver found"));
        let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
        assert!(!stdout.contains("::"), "{stdout}");
    }
}

/// The stop and resume lines of a run's stdout: `(token, index of the stop line, index of
/// the resume line)`.
fn bracket(stdout: &str) -> Option<(String, usize, usize)> {
    let lines: Vec<&str> = stdout.lines().collect();
    let (start, token) = lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| Some((i, l.strip_prefix("::stop-commands::")?)))?;
    let resume = format!("::{token}::");
    let end = lines.iter().position(|l| *l == resume)?;
    Some((token.to_owned(), start, end))
}

/// In GitHub Actions, `ci` suspends workflow commands before anything untrusted is compiled
/// or launched (the first thing on stdout) with a fresh 128-bit token, and resumes them
/// after the GPU section, before its own annotations; the token appears nowhere else.
#[test]
#[cfg_attr(
    ci_gate_cuda_driver,
    ignore = "a CUDA driver is installed here; this test checks the path without a GPU"
)]
fn ci_suspends_workflow_commands_around_the_gpu_section() {
    require_no_cuda_driver();
    let mut tokens = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("results.json");
        let assert = bin()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", dir.path().join("output"))
            .env("GITHUB_STEP_SUMMARY", dir.path().join("summary.md"))
            .args(["ci", "--out"])
            .arg(&out)
            .assert()
            .code(2);
        let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
        let stderr = stderr_text(&assert.get_output().stderr);
        let (token, start, end) = bracket(&stdout).expect("a stop and a resume line");
        assert_eq!(start, 0, "the stop line comes first: {stdout}");
        assert!(
            token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()),
            "{token}"
        );
        let lines: Vec<&str> = stdout.lines().collect();
        let annotation = lines
            .iter()
            .position(|l| l.starts_with("::error title=ci-gate%3A no verdict::"))
            .expect("the no-verdict annotation");
        assert!(start < end && end < annotation, "{stdout}");
        assert_eq!(stdout.matches(&token).count(), 2, "{stdout}");
        let elsewhere = [
            stderr,
            std::fs::read_to_string(&out).unwrap(),
            std::fs::read_to_string(dir.path().join("output")).unwrap(),
            std::fs::read_to_string(dir.path().join("summary.md")).unwrap(),
        ];
        for text in &elsewhere {
            assert!(!text.contains(&token), "the token leaked: {text}");
        }
        tokens.push(token);
    }
    assert_ne!(tokens[0], tokens[1], "a token is drawn for each run");

    // Outside Actions nothing is suspended.
    let dir = tempfile::tempdir().unwrap();
    let assert = bin()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_OUTPUT")
        .env_remove("GITHUB_STEP_SUMMARY")
        .args(["ci", "--out"])
        .arg(dir.path().join("results.json"))
        .assert()
        .code(2);
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    assert!(!stdout.contains("stop-commands"), "{stdout}");

    // A run refused before the GPU section (no such config) compiles nothing: its
    // annotation is not inside a suspended stretch.
    let assert = bin()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("GITHUB_ACTIONS", "true")
        .env_remove("GITHUB_OUTPUT")
        .env_remove("GITHUB_STEP_SUMMARY")
        .args(["ci", "--config", "no-such-config.yaml", "--out"])
        .arg(dir.path().join("results.json"))
        .assert()
        .code(2);
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    assert!(!stdout.contains("stop-commands"), "{stdout}");
    assert!(
        stdout.contains("::error title=ci-gate%3A no verdict::"),
        "{stdout}"
    );
}

/// `local` (and the other commands that launch kernels in-process) run wholly suspended in
/// Actions: the resume line is the last thing on stdout.
#[test]
#[cfg_attr(
    ci_gate_cuda_driver,
    ignore = "a CUDA driver is installed here; this test checks the path without a GPU"
)]
fn local_in_actions_runs_with_workflow_commands_suspended() {
    require_no_cuda_driver();
    let assert = bin()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("GITHUB_ACTIONS", "true")
        .args(["local", "--no-base"])
        .assert()
        .code(2);
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let (token, start, end) = bracket(&stdout).expect("a stop and a resume line");
    assert_eq!(start, 0, "{stdout}");
    assert_eq!(end, stdout.lines().count() - 1, "{stdout}");
    assert_eq!(stdout.matches(&token).count(), 2, "{stdout}");
}

/// The body is on disk before any request and stays there whatever fails: no pull request
/// number, no repository, the network down (issue 21). The error says where it is; the
/// file is readable as plain text (figures are not escaped).
#[test]
fn the_fallback_file_is_kept_on_any_failure() {
    let server = FakeGithub::start();
    let closed_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", l.local_addr().unwrap().port())
    };
    type Tweak = Box<dyn Fn(&mut assert_cmd::Command)>;
    let cases: [(&str, Tweak); 3] = [
        (
            "no pull request number",
            Box::new(|c: &mut assert_cmd::Command| {
                c.args(["--pr", "0"]);
            }),
        ),
        (
            "GITHUB_REPOSITORY is not set",
            Box::new(|c: &mut assert_cmd::Command| {
                c.env_remove("GITHUB_REPOSITORY");
            }),
        ),
        (
            "connection error",
            Box::new(move |c: &mut assert_cmd::Command| {
                c.env("GITHUB_API_URL", &closed_port);
            }),
        ),
    ];
    for (why, tweak) in cases {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("results.json");
        write(&from, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
        let mut c = comment_cmd(&server, Some(ACTIONS_TOKEN), &from, dir.path());
        tweak(&mut c);
        if why == "no pull request number" {
            // `--pr 0` is refused by the event path; without --pr and without an event
            // there is no number: rebuild the command without --pr.
            c = bin();
            c.env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("GITHUB_API_URL", server.url())
                .env("GITHUB_REPOSITORY", format!("{OWNER}/{REPO}"))
                .env("GITHUB_TOKEN", ACTIONS_TOKEN)
                .env("GITHUB_STEP_SUMMARY", dir.path().join("summary.md"))
                .args(["comment", "--fallback"])
                .arg(dir.path().join("fallback.md"))
                .arg("--from")
                .arg(&from);
        }
        let a = c.assert().code(2);
        let err = stderr_text(&a.get_output().stderr);
        assert!(err.contains(why), "{why}: {err}");
        assert!(err.contains("the report is in"), "{why}: {err}");
        assert!(!err.contains(ACTIONS_TOKEN));
        let body = std::fs::read_to_string(dir.path().join("fallback.md")).unwrap();
        assert!(body.starts_with("<!-- ci-gate:perf-report -->"), "{why}");
        assert!(!body.contains("&#46;"), "escaped digits: {body}");
        let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
        assert_eq!(summary.trim(), body.trim(), "{why}");
    }
}
