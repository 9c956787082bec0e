//! `ci-gate history` end to end: appending results files run after run, then the table,
//! JSON and SVG of the history.

use crate::common::{stderr_has, stderr_text};
use std::path::{Path, PathBuf};

use crate::common::{bin, results, write};
use chrono::{Duration, TimeZone, Utc};
use predicates::prelude::PredicateBooleanExt;

const SHAPE: &str = "b2h8s512d64_f16";
const OTHER: &str = "b2h8s512d64_causal_f16";
/// Run (from 0) where the first shape becomes 5% slower.
const STEP_AT: usize = 10;
const RUNS: usize = 24;

fn commit(run: usize) -> String {
    format!("{:040x}", run + 1)
}

/// Appends one results file per run to `dir/history.jsonl`: the first shape 5% slower from
/// run [`STEP_AT`] on, the others flat.
fn build_history(dir: &Path) -> PathBuf {
    let history = dir.join("history.jsonl");
    for run in 0..RUNS {
        let step = if run >= STEP_AT { 1.05 } else { 1.0 };
        let mut r = results("NVIDIA H200", &[step, 1.0, 1.3], run as u64);
        r.git_commit = Some(commit(run));
        r.created_at =
            Utc.with_ymd_and_hms(2026, 1, 1, 6, 0, 0).unwrap() + Duration::days(run as i64);
        let path = dir.join(format!("results-{run}.json"));
        write(&path, &r);
        bin()
            .args(["history", "append", "--results"])
            .arg(&path)
            .arg("--history")
            .arg(&history)
            .assert()
            .success()
            .stdout(predicates::str::contains("appended 3 shapes"));
    }
    history
}

fn history_json(history: &Path, args: &[&str]) -> serde_json::Value {
    let out = bin()
        .args(["history", "--format", "json", "--history"])
        .arg(history)
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn json_has_the_series_best_and_the_change_point() {
    let dir = tempfile::tempdir().unwrap();
    let history = build_history(dir.path());
    let v = history_json(&history, &[]);
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 3, "{v}");
    let first = &series[0];
    assert_eq!(first["shape"], SHAPE);
    assert_eq!(first["gpu_slug"], "nvidia-h200");
    assert_eq!(first["points"].as_array().unwrap().len(), RUNS);
    let changes = first["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{first}");
    assert_eq!(changes[0]["commit"], commit(STEP_AT));
    assert_eq!(changes[0]["index"], STEP_AT);
    let pct = changes[0]["change_pct"].as_f64().unwrap();
    assert!((pct - 5.0).abs() < 1.0, "{pct}");
    // The best run is before the step.
    let best = first["best"]["index"].as_u64().unwrap() as usize;
    assert!(best < STEP_AT, "{best}");
    assert_eq!(first["best"]["commit"], commit(best));
    // The slowdown comes with the command that finds its commit between the two runs.
    let bisect = first["bisect"].as_array().unwrap();
    assert_eq!(bisect.len(), 1, "{first}");
    let want = format!(
        "ci-gate bisect {} {} --shape {SHAPE} --config configs/",
        &commit(STEP_AT - 1)[..12],
        &commit(STEP_AT)[..12]
    );
    assert!(bisect[0].as_str().unwrap().starts_with(&want), "{bisect:?}");
    // The flat shapes have no change point.
    for s in &series[1..] {
        assert_eq!(s["changes"].as_array().unwrap().len(), 0, "{s}");
        assert_eq!(s["bisect"].as_array().unwrap().len(), 0, "{s}");
    }
    assert_eq!(v["method"]["name"], "PELT");
}

#[test]
fn shape_and_since_filters() {
    let dir = tempfile::tempdir().unwrap();
    let history = build_history(dir.path());
    let v = history_json(&history, &["--shape", OTHER]);
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 1);
    assert_eq!(series[0]["shape"], OTHER);
    // Run i is on 2026-01-01 + i days.
    let v = history_json(&history, &["--shape", SHAPE, "--since", "2026-01-15"]);
    let points = v["series"][0]["points"].as_array().unwrap();
    assert_eq!(points.len(), RUNS - 14);
    assert_eq!(points[0]["commit"], commit(14));
    // Unknown shapes, bad dates and an empty selection are errors (exit 2).
    bin()
        .args(["history", "--shape", "b1h1s1d1_f16", "--history"])
        .arg(&history)
        .assert()
        .code(2)
        .stderr(stderr_has("no shape \"b1h1s1d1_f16\""));
    bin()
        .args(["history", "--since", "last week", "--history"])
        .arg(&history)
        .assert()
        .code(2);
    bin()
        .args(["history", "--since", "2030-01-01", "--history"])
        .arg(&history)
        .assert()
        .code(2)
        .stderr(stderr_has("no runs since"));
}

#[test]
fn table_fits_80_columns_and_names_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let history = build_history(dir.path());
    let out = bin()
        .args(["history", "--history"])
        .arg(&history)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "{line}\n{text}");
    }
    assert!(text.contains(SHAPE) && text.contains(OTHER), "{text}");
    assert!(text.contains(&commit(STEP_AT)[..12]), "{text}");
    assert!(text.contains("+5."), "{text}");
    assert!(text.contains("PELT"), "{text}");
    assert!(
        text.contains("Find the commit that made it slower: ci-gate bisect"),
        "{text}"
    );
}

#[test]
fn svg_is_a_chart_naming_the_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let history = build_history(dir.path());
    let out = bin()
        .args(["history", "--format", "svg", "--history"])
        .arg(&history)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let svg = String::from_utf8(out).unwrap();
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{}",
        &svg[..svg.len().min(200)]
    );
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains(SHAPE) && svg.contains(OTHER));
    assert!(svg.contains("+5."), "the change point is labelled");
}

#[test]
fn appending_a_run_twice_is_a_no_op_and_a_bad_history_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("h.jsonl");
    let mut r = results("NVIDIA H200", &[1.0, 1.0, 1.0], 1);
    r.git_commit = Some(commit(1));
    let path = dir.path().join("r.json");
    write(&path, &r);
    let append = || {
        let mut c = bin();
        c.args(["history", "append", "--results"])
            .arg(&path)
            .arg("--history")
            .arg(&history);
        c
    };
    append().assert().success();
    let before = std::fs::read(&history).unwrap();
    append().assert().success().stdout(
        predicates::str::contains("already holds").and(predicates::str::contains("line 1")),
    );
    assert_eq!(std::fs::read(&history).unwrap(), before);
    // A malformed line: refused, naming the file and line; nothing written.
    let mut text = before.clone();
    text.extend_from_slice(b"{\"schema_version\": 1, \"commit\": \"xyz\"}\n");
    std::fs::write(&history, &text).unwrap();
    r.git_commit = Some(commit(2));
    write(&path, &r);
    append().assert().code(2).stderr(stderr_has("h.jsonl:4: "));
    assert_eq!(std::fs::read(&history).unwrap(), text);
    bin()
        .args(["history", "--history"])
        .arg(&history)
        .assert()
        .code(2)
        .stderr(stderr_has("h.jsonl:4: "));
    // A results file without a commit cannot be appended.
    r.git_commit = None;
    write(&path, &r);
    append().assert().code(2).stderr(stderr_has("git commit"));
    // A missing history is an error for reading (not for appending).
    bin()
        .args(["history", "--history"])
        .arg(dir.path().join("absent.jsonl"))
        .assert()
        .code(2)
        .stderr(stderr_has("absent.jsonl"));
}

/// Two GPUs and two configs of one shape: at 80 columns the GPU and the config still show,
/// so no two rows look the same (issue 21); with one GPU and one config a line names them.
#[test]
fn table_at_80_columns_keeps_gpu_and_config_where_they_differ() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.jsonl");
    for (i, (gpu, config)) in [
        ("NVIDIA H200", "pr"),
        ("NVIDIA L4", "pr"),
        ("NVIDIA H200", "nightly"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = results(gpu, &[1.0, 1.0, 1.3], i as u64);
        r.config.name = config.into();
        r.git_commit = Some(commit(i));
        let path = dir.path().join(format!("r{i}.json"));
        write(&path, &r);
        bin()
            .args(["history", "append", "--results"])
            .arg(&path)
            .arg("--history")
            .arg(&history)
            .assert()
            .success();
    }
    let out = bin()
        .args(["history", "--history"])
        .arg(&history)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    let rows: Vec<&str> = out.lines().filter(|l| l.contains(SHAPE)).collect();
    assert_eq!(rows.len(), 3, "{out}");
    for line in out.lines() {
        assert!(line.chars().count() <= 80, "{line}");
    }
    let mut unique = rows.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 3, "rows look the same: {out}");
    assert!(
        out.contains("nvidia-l4") && out.contains("nightly"),
        "{out}"
    );

    // One GPU and one config: they may be left out, and a line says which they are.
    let other = tempfile::tempdir().unwrap();
    let one = build_history(other.path());
    let out = bin()
        .args(["history", "--history"])
        .arg(&one)
        .env("COLUMNS", "80")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("nvidia-h200") || out.contains("Every series: GPU nvidia-h200"),
        "{out}"
    );
}

/// A results file given as the history: the error says to `history append` it.
#[test]
fn a_results_file_as_history_suggests_history_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    write(&path, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    bin()
        .args(["history", "--history"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(stderr_has("is a results file, not a history"))
        .stderr(stderr_has(format!(
            "ci-gate history append --results {}",
            path.display()
        )));
}

/// Without a history here, `history` says where the workflow keeps it (`history.jsonl`, the
/// name the perf-gate workflow and the docs use, is the default).
#[test]
fn a_missing_history_says_where_the_workflow_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::common::bin()
        .current_dir(dir.path())
        .arg("history")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = stderr_text(&out.stderr);
    assert!(
        stderr.contains("no history file history.jsonl: the perf-gate workflow keeps it on the branch perf-history")
            && stderr.contains("--history FILE"),
        "{stderr}"
    );
}

/// The history of one shape whose runs changed method at [`STEP_AT`] (a ci-gate upgrade)
/// and moved 5% there: `step_with_method` says whether the 5% came with the method change.
fn history_across_a_method_change(dir: &Path, step_at: usize) -> PathBuf {
    let history = dir.join("history.jsonl");
    for run in 0..RUNS {
        let step = if run >= step_at { 1.05 } else { 1.0 };
        let mut r = results("NVIDIA H200", &[step], run as u64);
        r.git_commit = Some(commit(run));
        r.created_at =
            Utc.with_ymd_and_hms(2026, 1, 1, 6, 0, 0).unwrap() + Duration::days(run as i64);
        let path = dir.join(format!("results-{run}.json"));
        write(&path, &r);
        let fingerprint = if run >= STEP_AT {
            "m3-fedcba987654"
        } else {
            "m2-0123456789ab"
        };
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let version: u32 = fingerprint[1..2].parse().unwrap();
        v["method"] = serde_json::json!({"version": version, "fingerprint": fingerprint});
        std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
        bin()
            .args(["history", "append", "--results"])
            .arg(&path)
            .arg("--history")
            .arg(&history)
            .assert()
            .success();
    }
    history
}

/// A method change (issue 37) is marked where it happened and is never a change point of
/// the kernel: the levels are found within each method's runs only.
#[test]
fn a_method_change_is_marked_and_never_a_change_point() {
    let dir = tempfile::tempdir().unwrap();
    let history = history_across_a_method_change(dir.path(), STEP_AT);
    let v = history_json(&history, &[]);
    let s = &v["series"][0];
    assert_eq!(s["changes"].as_array().unwrap().len(), 0, "{s}");
    assert_eq!(s["bisect"].as_array().unwrap().len(), 0, "{s}");
    let marks = s["method_changes"].as_array().unwrap();
    assert_eq!(marks.len(), 1, "{s}");
    assert_eq!(marks[0]["index"], STEP_AT);
    assert_eq!(marks[0]["commit"], commit(STEP_AT));
    assert_eq!(marks[0]["from"], "m2-0123456789ab");
    assert_eq!(marks[0]["to"], "m3-fedcba987654");
    assert_eq!(s["points"][0]["method"], "m2-0123456789ab");
    let out = bin()
        .args(["history", "--history"])
        .arg(&history)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("No change points."), "{text}");
    assert!(flat.contains("method changed"), "{text}");
    assert!(flat.contains(&commit(STEP_AT)[..12]), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "{line}\n{text}");
    }
    // A step within one method's runs is still found (here 5 runs after the change).
    let dir = tempfile::tempdir().unwrap();
    let history = history_across_a_method_change(dir.path(), STEP_AT + 5);
    let v = history_json(&history, &[]);
    let changes = v["series"][0]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{v}");
    assert_eq!(changes[0]["commit"], commit(STEP_AT + 5));
}

/// A shape whose candidate failed parity (its outputs wrong, timed anyway as `local` does)
/// or an integrity check is no point of the kernel's history: not appended, with a note
/// naming it. Before 2026-12-07 its time was appended as the kernel's, where a wrong and
/// faster commit would have read as the best time and a change point.
#[test]
fn a_shape_that_failed_parity_or_an_integrity_check_is_not_appended() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("h.jsonl");
    let mut r = results("NVIDIA H200", &[0.7, 0.7, 1.0], 1);
    r.git_commit = Some(commit(1));
    r.shapes[0].parity.as_mut().unwrap().max_abs = 0.5;
    r.shapes[0].verdict = ci_gate::verdict::Verdict::ParityFail;
    r.shapes[1].integrity = Some("1000 elements unwritten in its timed launches".into());
    r.shapes[1].verdict = ci_gate::verdict::Verdict::ParityFail;
    let path = dir.path().join("r.json");
    write(&path, &r);
    let out = bin()
        .args(["history", "append", "--results"])
        .arg(&path)
        .arg("--history")
        .arg(&history)
        .assert()
        .success()
        .stdout(predicates::str::contains("appended 1 shape"))
        .get_output()
        .clone();
    let err = stderr_text(&out.stderr);
    for s in [SHAPE, OTHER] {
        assert!(
            err.contains(&format!("shape {s} failed parity or an integrity check")),
            "{err}"
        );
    }
    let text = std::fs::read_to_string(&history).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(!text.contains(SHAPE) && !text.contains(OTHER), "{text}");
}
