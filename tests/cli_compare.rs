//! `ci-gate compare` end to end: the binary on sample files and results files.

mod common;

use std::path::Path;

use common::{bin, results, write};
use predicates::prelude::*;

fn write_samples(
    dir: &Path,
    name: &str,
    values: impl IntoIterator<Item = f64>,
) -> std::path::PathBuf {
    let p = dir.join(name);
    let text: Vec<String> = values.into_iter().map(|v| format!("{v}")).collect();
    std::fs::write(&p, text.join("\n") + "\n").unwrap();
    p
}

/// Deterministic "timings": a smooth spread of values around `center`.
fn spread(center: f64, n: usize, rel: f64, phase: f64) -> Vec<f64> {
    (0..n)
        .map(|i| center * (1.0 + rel * ((i as f64 * 0.7 + phase).sin())))
        .collect()
}

#[test]
fn sample_files_regression_table_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_samples(dir.path(), "base.txt", spread(9.0, 60, 0.004, 0.0));
    let c = write_samples(dir.path(), "cand.txt", spread(9.45, 60, 0.004, 1.0));
    let out = bin()
        .args(["compare"])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    insta::assert_snapshot!("compare_regression_table", String::from_utf8(out).unwrap());
}

#[test]
fn sample_files_json_has_the_design_fields() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_samples(dir.path(), "base.txt", spread(9.0, 40, 0.004, 0.0));
    let c = write_samples(dir.path(), "cand.txt", spread(9.01, 40, 0.004, 0.5));
    let out = bin()
        .args(["compare", "--format", "json"])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    for k in [
        "n_base",
        "n_cand",
        "p50_base",
        "p50_cand",
        "ratio",
        "ci_low",
        "ci_high",
        "cliffs_delta",
        "mwu_u",
        "mwu_p",
    ] {
        assert!(v[k].is_number(), "{k} missing or not a number: {v}");
    }
    assert_eq!(v["n_base"], 40);
    assert_eq!(v["verdict"], "pass");
    assert!(v["ci_low"].as_f64().unwrap() <= v["ratio"].as_f64().unwrap());
    assert!(v["ratio"].as_f64().unwrap() <= v["ci_high"].as_f64().unwrap());
}

#[test]
fn improvement_passes_and_markdown_carries_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_samples(dir.path(), "base.txt", spread(9.0, 60, 0.004, 0.0));
    let c = write_samples(dir.path(), "cand.txt", spread(8.5, 60, 0.004, 1.0));
    bin()
        .args(["compare", "--format", "markdown"])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(0)
        .stdout(predicate::str::starts_with("<!-- ci-gate:perf-report -->"))
        .stdout(predicate::str::contains("| improvement |"))
        .stdout(predicate::str::contains("xychart-beta"));
}

#[test]
fn bad_sample_files_exit_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_samples(dir.path(), "good.txt", spread(9.0, 10, 0.01, 0.0));
    let cases: &[(&str, &str, &str)] = &[
        ("empty.txt", "", "empty.txt: no samples"),
        ("one.txt", "9.1\n", "one.txt: only one sample"),
        (
            "word.txt",
            "9.1\nfast\n",
            "word.txt:2: \"fast\" is not a number",
        ),
        (
            "nan.txt",
            "9.1\nNaN\n",
            "nan.txt:2: NaN is not a finite time",
        ),
        (
            "inf.txt",
            "inf\n9.1\n",
            "inf.txt:1: inf is not a finite time",
        ),
        (
            "neg.txt",
            "9.1\n-1\n",
            "neg.txt:2: -1 is not a positive time",
        ),
        (
            "zero.txt",
            "0\n9.1\n",
            "zero.txt:1: 0 is not a positive time",
        ),
    ];
    for (name, text, want) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        bin()
            .arg("compare")
            .arg(&good)
            .arg(&p)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(*want))
            .stderr(predicate::str::contains("panicked").not());
    }
    bin()
        .arg("compare")
        .arg(&good)
        .arg(dir.path().join("missing.txt"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.txt"));
}

#[test]
fn results_files_compare_by_shape() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let cand = dir.path().join("cand.json");
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    // Shape 2 is 6% slower; the others are unchanged.
    write(&cand, &results("NVIDIA H200", &[1.0, 1.06, 1.0], 2));
    let out = bin()
        .args(["compare", "--format", "json"])
        .arg(&base)
        .arg(&cand)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let verdicts: Vec<&str> = rows
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["pass", "regression", "pass"]);
    assert_eq!(rows[1]["shape"], "b2h8s512d64_causal_f16");
    assert!(rows[1]["mwu_p_holm"].as_f64().unwrap() >= rows[1]["mwu_p"].as_f64().unwrap());
}

#[test]
fn results_from_another_gpu_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let cand = dir.path().join("cand.json");
    write(&base, &results("NVIDIA L4", &[1.0, 1.0, 1.0], 1));
    write(&cand, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 2));
    bin()
        .arg("compare")
        .arg(&base)
        .arg(&cand)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("different GPU models"));
}

#[test]
fn mixed_kinds_and_bad_json_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    let samples = write_samples(dir.path(), "s.txt", spread(9.0, 10, 0.01, 0.0));
    bin()
        .arg("compare")
        .arg(&base)
        .arg(&samples)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not the same kind of file"));
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"schema_version\": 1, \"shapes\": [").unwrap();
    bin()
        .arg("compare")
        .arg(&base)
        .arg(&broken)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "broken.json is not valid ci-gate JSON",
        ));
    let newer = dir.path().join("newer.json");
    std::fs::write(&newer, "{\"schema_version\": 99}").unwrap();
    bin()
        .arg("compare")
        .arg(&base)
        .arg(&newer)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("newer.json has schema_version 99"));
}
