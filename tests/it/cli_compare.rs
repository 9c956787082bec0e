//! `ci-gate compare` end to end: the binary on sample files and results files.

use crate::common::stderr_has;
use std::path::Path;

use crate::common::{bin, results, rounded, without_version, write};
use ci_gate::verdict::Verdict;
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

/// Runs `ci-gate compare ARGS... BASE CAND`, checks the exit code (when given) and parses
/// stdout as JSON.
fn compare_json(args: &[&str], base: &Path, cand: &Path, code: Option<i32>) -> serde_json::Value {
    let mut cmd = bin();
    cmd.arg("compare").args(args).arg(base).arg(cand);
    let assert = cmd.assert();
    let assert = match code {
        Some(c) => assert.code(c),
        None => assert,
    };
    serde_json::from_slice(&assert.get_output().stdout).unwrap()
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

/// A spread between processes that is no fraction in [0, 0.5) is refused before any file is
/// read, the value shown as given (1e308, not its 309 digits).
#[test]
fn a_process_sd_that_is_no_fraction_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_samples(dir.path(), "base.txt", spread(9.0, 60, 0.004, 0.0));
    for (sd, shown) in [
        ("NaN", "NaN"),
        ("0.5", "0.5"),
        ("1e308", "1e308"),
        ("inf", "inf"),
    ] {
        bin()
            .args(["compare", "--process-sd", sd])
            .arg(&b)
            .arg(&b)
            .assert()
            .code(2)
            .stderr(stderr_has(format!(
                "--process-sd {shown}: a spread between processes must be a fraction"
            )));
    }
}

/// numpy.median of a slice.
fn median(v: &[f64]) -> f64 {
    ci_gate::stats::Sample::new(v.to_vec()).unwrap().median()
}

#[test]
fn sample_files_json_has_the_design_fields() {
    let dir = tempfile::tempdir().unwrap();
    let (bv, cv) = (spread(9.0, 40, 0.004, 0.0), spread(9.01, 40, 0.004, 0.5));
    let b = write_samples(dir.path(), "base.txt", bv.clone());
    let c = write_samples(dir.path(), "cand.txt", cv.clone());
    let all = compare_json(&["--format", "json"], &b, &c, Some(0));
    // One shape: still an array, as for results files.
    let rows = all.as_array().expect("an array for every input");
    assert_eq!(rows.len(), 1);
    let v = &rows[0];
    for k in [
        "n_base",
        "n_cand",
        "p50_base",
        "p50_cand",
        "p50_ratio",
        "ratio",
        "ci_low",
        "ci_high",
        "lower_bound",
        "margin_p",
        "cliffs_delta",
        "mwu_u",
        "mwu_p",
        "min_detectable",
    ] {
        assert!(v[k].is_number(), "{k} missing or not a number: {v}");
    }
    assert_eq!(v["n_base"], 40);
    assert_eq!(v["units"], "values");
    assert_eq!(v["method"], "median-bootstrap");
    assert_eq!(v["ci_method"], "bootstrap");
    assert_eq!(v["cliffs_delta_of"], "values");
    assert_eq!(v["verdict"], "pass");
    // Without rounds, the ratio is the p50 ratio: numpy medians of the two files.
    let want = median(&cv) / median(&bv);
    assert!((v["ratio"].as_f64().unwrap() - want).abs() < 1e-12, "{v}");
    assert_eq!(v["ratio"], v["p50_ratio"]);
    assert!(v["ci_low"].as_f64().unwrap() <= v["ratio"].as_f64().unwrap());
    assert!(v["ratio"].as_f64().unwrap() <= v["ci_high"].as_f64().unwrap());
    // The default spread between processes is stated, in the JSON too.
    assert_eq!(v["stored"]["process_sd"], 0.01);
    assert_eq!(v["stored"]["process_sd_source"], "assumed");
}

#[test]
fn sample_files_say_the_default_spread_and_process_sd_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_samples(dir.path(), "base.txt", spread(9.0, 200, 0.004, 0.0));
    let c = write_samples(dir.path(), "cand.txt", spread(9.27, 200, 0.004, 1.0));
    // +3%, a 1% spread assumed between the two processes: not confidently above +2%.
    let out = bin().arg("compare").arg(&b).arg(&c).assert().code(0);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("conservative default spread"), "{text}");
    assert!(text.contains("1.0%"), "{text}");
    // Both files from one process: --process-sd 0, and +3% is a regression.
    let v = compare_json(&["--format", "json", "--process-sd", "0"], &b, &c, Some(1));
    assert_eq!(v[0]["verdict"], "regression", "{v}");
    assert_eq!(v[0]["stored"]["process_sd_source"], "given");
    assert!(v[0]["lower_bound"].as_f64().unwrap() > 1.02);
}

#[test]
fn sample_files_with_rounds_use_the_trimmed_test_of_round_medians() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_rounds(dir.path(), "base.txt", &drifting_rounds(1.0, 0.0));
    let c = write_rounds(dir.path(), "cand.txt", &drifting_rounds(1.01, 0.3));
    let v = compare_json(&["--format", "json"], &b, &c, Some(0));
    assert_eq!(v[0]["method"], "unpaired-rounds", "{v}");
    assert_eq!(v[0]["units"], "rounds");
    assert_eq!(v[0]["cliffs_delta_of"], "round medians");
    let out = bin()
        .args(["compare", "--wide"])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for title in [
        "Δ round p50",
        "One-sided bound",
        "95% CI (Yuen t, description)",
        "Cliff's δ (round p50s)",
    ] {
        assert!(text.contains(title), "{title}: {text}");
    }
}

#[test]
fn improvement_passes_and_markdown_carries_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_samples(dir.path(), "base.txt", spread(9.0, 60, 0.004, 0.0));
    let c = write_samples(dir.path(), "cand.txt", spread(8.5, 60, 0.004, 1.0));
    let out = bin()
        .args(["compare", "--format", "markdown"])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    // The marker first, the improvement row, the chart (xychart-beta).
    insta::assert_snapshot!(
        "compare_markdown",
        without_version(&String::from_utf8(out).unwrap())
    );
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
            .stderr(stderr_has(*want))
            .stderr(stderr_has("panicked").not());
    }
    bin()
        .arg("compare")
        .arg(&good)
        .arg(dir.path().join("missing.txt"))
        .assert()
        .code(2)
        .stderr(stderr_has("missing.txt"));
}

#[test]
fn results_files_compare_by_shape() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let cand = dir.path().join("cand.json");
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    // Shape 2 is 6% slower; the others are unchanged.
    write(&cand, &results("NVIDIA H200", &[1.0, 1.06, 1.0], 2));
    // Two runs are two processes: with the default 1% spread, +6% is still a regression.
    let v = compare_json(&["--format", "json"], &base, &cand, Some(1));
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let verdicts: Vec<&str> = rows
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["pass", "regression", "pass"]);
    assert_eq!(rows[1]["shape"], "b2h8s512d64_causal_f16");
    assert_eq!(rows[1]["decided_by"], "stored");
    assert_eq!(rows[1]["stored"]["process_sd_source"], "assumed");
    assert!(rows[1]["ab"].is_null());
    // The JSON report whole (`--format json`).
    insta::assert_json_snapshot!("compare_json_report", rounded(v));
}

#[test]
fn results_files_judge_cand_against_base_whatever_cand_measured_inside() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    write(&a, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    // B's kernels are 70% slower than A's on every shape, but B's own A/B (against a base
    // as slow as itself) saw no change; B also carries warnings and notes of its own.
    let mut slow = results("NVIDIA H200", &[1.7, 1.7, 1.7], 2);
    for s in slow.shapes.iter_mut() {
        s.base_samples_us = s.samples_us.clone();
    }
    // B's verdicts as B's run computed them (a file's verdicts must follow from its record).
    ci_gate::evaluate::evaluate(
        &mut slow.shapes,
        |_| None,
        &slow.gate.clone(),
        ci_gate::verdict::Policy::default(),
    )
    .unwrap();
    assert!(slow.shapes.iter().all(|s| s.verdict == Verdict::Pass));
    slow.warnings = vec!["B's own warning: the SM clock changed".into()];
    slow.notes = vec!["B's own note: shard 1/2".into()];
    write(&b, &slow);
    let v = compare_json(&["--format", "json"], &a, &b, Some(1));
    for row in v.as_array().unwrap() {
        assert_eq!(row["verdict"], "regression", "{row}");
        assert!((row["ratio"].as_f64().unwrap() - 1.7).abs() < 0.02, "{row}");
        assert!(
            row["ab"].is_null(),
            "B's own A/B is not this comparison: {row}"
        );
    }
    let out = bin().arg("compare").arg(&a).arg(&b).assert().code(1);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("FAIL: 3 regression"), "{text}");
    assert!(!text.contains("B's own"), "{text}");
    // The same JSON structure as for sample files: an array of objects with the same keys.
    let s1 = write_samples(dir.path(), "s1.txt", spread(9.0, 40, 0.004, 0.0));
    let s2 = write_samples(dir.path(), "s2.txt", spread(9.0, 40, 0.004, 0.3));
    let samples = compare_json(&["--format", "json"], &s1, &s2, Some(0));
    let keys = |v: &serde_json::Value| {
        v.as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<String>>()
    };
    assert_eq!(keys(&v[0]), keys(&samples[0]));
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
        .stderr(stderr_has("different GPU models"));
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
        .stderr(stderr_has("not the same kind of file"));
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"schema_version\": 1, \"shapes\": [").unwrap();
    bin()
        .arg("compare")
        .arg(&base)
        .arg(&broken)
        .assert()
        .code(2)
        .stderr(stderr_has("broken.json is not valid ci-gate JSON"));
    let newer = dir.path().join("newer.json");
    std::fs::write(&newer, "{\"schema_version\": 99}").unwrap();
    bin()
        .arg("compare")
        .arg(&base)
        .arg(&newer)
        .assert()
        .code(2)
        .stderr(stderr_has("newer.json has schema_version 99"));
}

/// A sample file of rounds separated by blank lines.
fn write_rounds(dir: &Path, name: &str, rounds: &[Vec<f64>]) -> std::path::PathBuf {
    let p = dir.join(name);
    let text: Vec<String> = rounds
        .iter()
        .map(|r| r.iter().map(|v| format!("{v}\n")).collect::<String>())
        .collect();
    std::fs::write(&p, text.join("\n")).unwrap();
    p
}

/// Rounds whose medians drift together on both sides (a shared slow drift), the candidate
/// `factor` slower: the case pairing exists for.
fn drifting_rounds(factor: f64, phase: f64) -> Vec<Vec<f64>> {
    (0..12)
        .map(|i| {
            let drift = 1.0 + 0.05 * ((i as f64) * 0.9).sin();
            spread(9.0 * factor * drift, 7, 0.001, phase + i as f64)
        })
        .collect()
}

#[test]
fn paired_rounds_cancel_a_shared_drift() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_rounds(dir.path(), "base.txt", &drifting_rounds(1.0, 0.0));
    let c = write_rounds(dir.path(), "cand.txt", &drifting_rounds(1.03, 0.3));
    // Unpaired, the ±5% drift swamps a 3% change: not a confident regression.
    let v = &compare_json(&["--format", "json"], &b, &c, None)[0];
    assert_ne!(v["verdict"], "regression", "{v}");
    assert_eq!(v["n_base"], 12, "rounds are the units: {v}");
    // Paired, round i with round i: the drift cancels and the 3% shows.
    let v = &compare_json(&["--paired", "--format", "json"], &b, &c, Some(1))[0];
    assert_eq!(v["verdict"], "regression", "{v}");
    assert_eq!(v["decided_by"], "ab");
    assert_eq!(v["method"], "paired-rounds");
    assert_eq!(v["units"], "pairs");
    assert!((v["ratio"].as_f64().unwrap() - 1.03).abs() < 0.002, "{v}");
    assert!(v["ab"]["lower_bound"].as_f64().unwrap() > 1.02, "{v}");
    assert!(v["stored"].is_null());
    // 12 pairs: no pairs bootstrap of the pooled p50 (it needs 16), and the column's title
    // names none.
    assert!(
        v["pooled_p50_ratio"].is_number() && v["pooled_ci_low"].is_null(),
        "{v}"
    );
    let text = paired_wide_table(&b, &c);
    assert!(text.contains("Δ pooled p50"), "{text}");
    assert!(!text.contains("pairs bootstrap"), "{text}");
}

/// `compare --paired --wide` of two round files whose candidate regressed (exit 1): the
/// table as printed.
fn paired_wide_table(b: &Path, c: &Path) -> String {
    let out = bin()
        .args(["compare", "--paired", "--wide"])
        .arg(b)
        .arg(c)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn sixteen_pairs_show_the_pooled_p50_with_its_pairs_bootstrap() {
    let dir = tempfile::tempdir().unwrap();
    let rounds = |factor: f64, phase: f64| -> Vec<Vec<f64>> {
        (0..16)
            .map(|i| spread(9.0 * factor, 9, 0.002, phase + i as f64))
            .collect()
    };
    let b = write_rounds(dir.path(), "base.txt", &rounds(1.0, 0.0));
    let c = write_rounds(dir.path(), "cand.txt", &rounds(1.03, 0.4));
    let v = &compare_json(&["--paired", "--format", "json"], &b, &c, Some(1))[0];
    let (lo, hi, p) = (
        v["pooled_ci_low"].as_f64().unwrap(),
        v["pooled_ci_high"].as_f64().unwrap(),
        v["pooled_p50_ratio"].as_f64().unwrap(),
    );
    assert!(lo <= p && p <= hi && lo > 1.0 && hi < 1.06, "{v}");
    let text = paired_wide_table(&b, &c);
    assert!(text.contains("Δ pooled p50 [pairs bootstrap]"), "{text}");
}

#[test]
fn a_pooled_p50_outside_the_interval_of_round_medians_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    // Round medians spread over ±1% from round to round; the candidate's are 1% above the
    // base's, pair by pair. But the candidate's rounds put their 5 slowest of 11 values 20%
    // above their median (the base's stay within 0.05%): the pooled p50 of all candidate
    // values is then the 55th/56th of the 60 values at or below the round medians, near
    // the highest round median — +1.8%, outside the round-median ratio's interval.
    let level = |i: usize| 9.0 * (1.0 + 0.01 * (i as f64 - 4.5) / 4.5);
    let round = |m: f64, slow: f64| -> Vec<f64> {
        (0..11)
            .map(|k| {
                if k < 6 {
                    m * (1.0 - 0.0001 * (5 - k) as f64)
                } else {
                    m * slow * (1.0 + 0.0001 * (k - 5) as f64)
                }
            })
            .collect()
    };
    let base: Vec<Vec<f64>> = (0..10).map(|i| round(level(i), 1.0)).collect();
    let cand: Vec<Vec<f64>> = (0..10).map(|i| round(level(i) * 1.01, 1.2)).collect();
    let b = write_rounds(dir.path(), "base.txt", &base);
    let c = write_rounds(dir.path(), "cand.txt", &cand);
    let out = bin()
        .args(["compare", "--paired"])
        .arg(&b)
        .arg(&c)
        .assert()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("warning: cand.txt: the pooled p50 moved"),
        "{text}"
    );
    assert!(text.contains("Δ round p50 is not the p50 change"), "{text}");
}

#[test]
fn paired_needs_as_many_rounds_on_each_side() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_rounds(dir.path(), "base.txt", &drifting_rounds(1.0, 0.0)[..5]);
    let c = write_rounds(dir.path(), "cand.txt", &drifting_rounds(1.0, 0.0)[..4]);
    bin()
        .args(["compare", "--paired"])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(2)
        .stderr(stderr_has("base.txt has 5 rounds"))
        .stderr(stderr_has("cand.txt has 4"));
}

#[test]
fn json_has_both_references_and_says_what_each_number_is() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_samples(dir.path(), "base.txt", spread(9.0, 40, 0.004, 0.0));
    let c = write_samples(dir.path(), "cand.txt", spread(9.01, 40, 0.004, 0.5));
    let v = &compare_json(
        &["--format", "json", "--process-sd", "0.004"],
        &b,
        &c,
        Some(0),
    )[0];
    for k in [
        "mwu_p",
        "mwu_p_faster",
        "min_detectable",
        "margin_p",
        "margin_p_faster",
        "lower_bound",
        "upper_bound",
    ] {
        assert!(v[k].is_number(), "{k}: {v}");
    }
    for gone in ["margin_p_holm", "mwu_p_holm"] {
        assert!(v.get(gone).is_none(), "{gone} is gone with Holm: {v}");
    }
    let s = &v["stored"];
    assert_eq!(s["process_sd"], 0.004);
    assert_eq!(s["process_sd_assumed"], false);
    assert!(s["ratio_of"].as_str().unwrap().contains("bootstrap"), "{s}");
    assert!(
        s["mwu_test"]
            .as_str()
            .unwrap()
            .contains("not part of the rule"),
        "{s}"
    );
    for k in ["margin_p", "upper_bound", "stage", "p50_ratio"] {
        assert!(s[k].is_number(), "{k}: {s}");
    }
    // The spread widens the interval: Detectable grows past the margin plus it.
    assert!(v["min_detectable"].as_f64().unwrap() > 0.02 + 0.004);
}

#[test]
fn results_files_that_cannot_decide_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let cand = dir.path().join("cand.json");
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    // No shape in common.
    let mut other = results("NVIDIA H200", &[1.0, 1.0, 1.0], 2);
    for s in other.shapes.iter_mut() {
        s.params.batch += 10;
        s.name = s.params.name();
        crate::common::resummarize(s);
    }
    write(&cand, &other);
    bin()
        .args(["compare"])
        .arg(&base)
        .arg(&cand)
        .assert()
        .code(2)
        .stderr(stderr_has("share no measured shape"))
        .stderr(stderr_has("base.json"))
        .stderr(stderr_has("cand.json"));
    // A run that reached no verdict.
    let mut failed = results("NVIDIA H200", &[1.0, 1.0, 1.0], 2);
    failed.error = Some("no NVIDIA driver found".into());
    write(&cand, &failed);
    bin()
        .args(["compare"])
        .arg(&base)
        .arg(&cand)
        .assert()
        .code(2)
        .stderr(stderr_has("reached no verdict"));
    // A candidate shape that could not be measured fails the check, never passes.
    let mut broken = results("NVIDIA H200", &[1.0, 1.0, 1.0], 2);
    broken.shapes[1].error = Some("CUDA error".into());
    broken.shapes[1].verdict = Verdict::Error;
    write(&cand, &broken);
    bin()
        .args(["compare"])
        .arg(&base)
        .arg(&cand)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("error"));
}

#[test]
fn a_comment_from_a_file_without_a_verdict_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let fallback = dir.path().join("comment.md");
    let mut empty = results("NVIDIA H200", &[1.0, 1.0, 1.0], 1);
    empty.shapes.clear();
    // The file even claims to pass: the claim is never trusted.
    empty.passed = true;
    write(&path, &empty);
    bin()
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITHUB_STEP_SUMMARY")
        .args(["comment", "--from"])
        .arg(&path)
        .arg("--fallback")
        .arg(&fallback)
        .assert()
        .code(2)
        .stdout(predicate::str::contains(
            "ERROR: no verdict could be reached",
        ))
        .stderr(stderr_has("holds no shapes"));
    assert!(
        std::fs::read_to_string(&fallback)
            .unwrap()
            .contains("no verdict could be reached")
    );
}

#[test]
fn exports_for_bencher_and_github_action_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let cand = dir.path().join("cand.json");
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    let mut c = results("NVIDIA H200", &[1.0, 1.06, 1.0], 2);
    c.shapes[2].error = Some("CUDA error".into());
    c.shapes[2].verdict = Verdict::Error;
    write(&cand, &c);
    let v = compare_json(&["--format", "bmf"], &base, &cand, Some(1));
    let m = v.as_object().unwrap();
    // The shape that could not be measured is left out.
    assert_eq!(m.len(), 2, "{v}");
    let lat = &v["b2h8s512d64_causal_f16"]["latency"];
    let p50 = c.shapes[1].summary.as_ref().unwrap().p50;
    assert!(
        (lat["value"].as_f64().unwrap() - p50 * 1e3).abs() < 1e-6,
        "{lat}"
    );
    assert!(lat["lower_value"].as_f64().unwrap() <= lat["value"].as_f64().unwrap());
    assert!(lat["upper_value"].as_f64().unwrap() >= lat["value"].as_f64().unwrap());
    assert!(v["b2h8s512d64_causal_f16"]["tflops"]["value"].is_number());
    insta::assert_json_snapshot!("export_bmf", rounded(v));

    let v = compare_json(&["--format", "benchmark-action"], &base, &cand, Some(1));
    let entries = v.as_array().unwrap();
    assert_eq!(entries.len(), 2, "{v}");
    assert_eq!(entries[1]["name"], "b2h8s512d64_causal_f16");
    assert_eq!(entries[1]["unit"], "us");
    assert!((entries[1]["value"].as_f64().unwrap() - p50).abs() < 1e-9);
    // The verdict, Δ and its reference in `extra`, the spread in `range`.
    insta::assert_json_snapshot!("export_benchmark_action", rounded(v));
}

#[test]
fn paired_results_files_of_two_processes_are_refused_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    // The same kernels measured by two processes whose speeds differ by 2.5%: paired, the
    // difference between processes would read as a regression.
    write(&a, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    write(&b, &results("NVIDIA H200", &[1.025, 1.025, 1.025], 2));
    bin()
        .args(["compare", "--paired"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(2)
        .stdout("")
        .stderr(stderr_has(
            "are two results files, that is two measuring processes",
        ))
        .stderr(stderr_has("rounds of two processes are not pairs"))
        .stderr(stderr_has("Drop --paired"));
    // Unpaired, the same two files are judged with the spread between processes added.
    let v = compare_json(&["--format", "json"], &a, &b, Some(0));
    for row in v.as_array().unwrap() {
        assert_ne!(row["verdict"], "regression", "{row}");
        assert_eq!(row["decided_by"], "stored", "{row}");
    }
    // One run given twice is one process: its rounds pair with themselves.
    let v = compare_json(&["--paired", "--format", "json"], &a, &a, Some(0));
    for row in v.as_array().unwrap() {
        assert_eq!(row["decided_by"], "ab", "{row}");
        assert_eq!(row["ratio"], 1.0, "{row}");
    }
}

#[test]
fn sample_files_of_two_kinds_are_refused_naming_which_has_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let plain = write_samples(dir.path(), "plain.txt", spread(9.0, 40, 0.004, 0.0));
    // The same values with one stray blank line: two rounds.
    let mut text: Vec<String> = spread(9.0, 40, 0.004, 0.3)
        .iter()
        .map(|v| format!("{v}"))
        .collect();
    text.insert(17, String::new());
    let stray = dir.path().join("stray.txt");
    std::fs::write(&stray, text.join("\n") + "\n").unwrap();
    for (base, cand) in [(&plain, &stray), (&stray, &plain)] {
        bin()
            .arg("compare")
            .arg(base)
            .arg(cand)
            .assert()
            .code(2)
            .stdout("")
            .stderr(stderr_has(
                "stray.txt separates its values into 2 rounds with blank lines and",
            ))
            .stderr(stderr_has("plain.txt has no rounds"));
    }
    // Files of one kind say which kind they were read as.
    let out = bin()
        .arg("compare")
        .arg(&plain)
        .arg(&plain)
        .assert()
        .code(0);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("BASE and CAND hold 40 and 40 values without rounds"),
        "{text}"
    );
}

#[test]
fn fewer_than_30_values_a_side_are_judged_by_the_hodges_lehmann_shift_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let base = write_samples(dir.path(), "base.txt", spread(9.0, 20, 0.004, 0.0));
    // The whole distribution 10% slower, both files from one process.
    let slow = write_samples(dir.path(), "slow.txt", spread(9.9, 20, 0.004, 0.7));
    let v = &compare_json(
        &["--format", "json", "--process-sd", "0"],
        &base,
        &slow,
        Some(1),
    )[0];
    assert_eq!(v["method"], "hodges-lehmann", "{v}");
    assert_eq!(v["verdict"], "regression", "{v}");
    assert!((v["ratio"].as_f64().unwrap() - 1.1).abs() < 0.01, "{v}");
    assert!(v["lower_bound"].as_f64().unwrap() > 1.02, "{v}");
    assert_eq!(v["bound_level"], 0.95, "{v}");
    assert!(v["ratio_of"].as_str().unwrap().contains("Hodges"), "{v}");
    let out = bin()
        .args(["compare", "--wide", "--process-sd", "0"])
        .arg(&base)
        .arg(&slow)
        .assert()
        .code(1);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for want in [
        "Δ HL shift",
        "95% CI (exact Mann-Whitney, description)",
        "fewer than 30 values on a side: too few for a bootstrap of the p50",
        "so no p50 ratio decides",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    assert!(
        !text.contains("Δp50") && !text.contains("Δ round p50"),
        "{text}"
    );
    // Only the slow tail grows (25% of values 20% slower instead of none): the p50 moves
    // far less than 2%, and the shift is not confidently above +2% either.
    let mut tail = spread(9.0, 20, 0.004, 0.3);
    for v in tail.iter_mut().step_by(4) {
        *v *= 1.2;
    }
    let tail = write_samples(dir.path(), "tail.txt", tail);
    let v = &compare_json(
        &["--format", "json", "--process-sd", "0"],
        &base,
        &tail,
        None,
    )[0];
    assert_eq!(v["method"], "hodges-lehmann", "{v}");
    assert_ne!(v["verdict"], "regression", "{v}");
    // Two values a side are too few for any bound at 95%: said, and nothing is flagged.
    let two = write_samples(dir.path(), "two.txt", [9.0, 9.1]);
    let ten = write_samples(dir.path(), "ten.txt", [10.0, 10.1]);
    let out = bin()
        .args(["compare", "--wide", "--process-sd", "0"])
        .arg(&two)
        .arg(&ten)
        .assert()
        .code(0);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("none at 95% (too few values)"), "{text}");
    assert!(text.contains("inconclusive"), "{text}");
}

#[test]
fn the_bound_shown_is_the_one_that_decided_and_alpha_is_per_shape() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let cand = dir.path().join("cand.json");
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    write(&cand, &results("NVIDIA H200", &[1.0, 1.06, 1.0], 2));
    let v = compare_json(&["--format", "json"], &base, &cand, Some(1));
    for row in v.as_array().unwrap() {
        let d = &row["deciding_bound"];
        let value = d["value"].as_f64().unwrap();
        assert_eq!(d["level"], row["bound_level"], "{row}");
        match row["verdict"].as_str().unwrap() {
            "regression" => {
                assert_eq!(d["side"], "lower");
                assert!(value > 1.02 && value == row["lower_bound"].as_f64().unwrap());
            }
            // Not a regression: the bound the rule compared did not clear the margin.
            _ if d["side"] == "lower" => assert!(value <= 1.02, "{row}"),
            _ => assert!(value >= 0.98, "{row}"),
        }
    }
    let out = bin().arg("compare").arg(&base).arg(&cand).assert().code(1);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("One-sided bound"), "{text}");
    assert!(
        !text.contains("95% CI (Yuen t"),
        "the description is left out before the bound: {text}"
    );
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Alpha 5% is per shape, not per run: a shape exactly 2.0% slower is flagged at most 5% of the time, so if all 3 shapes were exactly 2.0% slower, up to 14% of runs would flag at least one"),
        "{flat}"
    );
    // The assumed spread's consequence: the smallest change it lets the rule flag.
    assert!(
        flat.contains("a change must exceed about +4.40% to be flagged"),
        "{flat}"
    );
}

// ---------------------------------------------------------------------------------------
// What compare cannot judge is refused, exit 2 (issue 37). Files are edited as JSON: a file
// written by another ci-gate, or by hand, is only JSON.

/// Edits the JSON of the file at `path` with `f`.
fn edit(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

/// A method as a file records it (its version is the fingerprint's).
fn method(fingerprint: &str) -> serde_json::Value {
    let version: u32 = fingerprint[1..2].parse().unwrap();
    serde_json::json!({"version": version, "fingerprint": fingerprint})
}

/// `compare BASE CAND ARGS...`: exit 2, nothing on stdout, no panic; returns stderr.
fn refused(base: &Path, cand: &Path, args: &[&str]) -> String {
    let out = bin()
        .arg("compare")
        .args(args)
        .arg(base)
        .arg(cand)
        .assert()
        .code(2)
        .stdout("")
        .get_output()
        .clone();
    // The message as one text: error lines wrap at 80 columns.
    let err = crate::common::stderr_text(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn cand_without_a_shape_of_base_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand) = (dir.path().join("base.json"), dir.path().join("cand.json"));
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    // CAND is BASE without its last shape: nothing judged it, so it cannot pass.
    write(&cand, &results("NVIDIA H200", &[1.0, 1.0], 2));
    let last = crate::common::shapes()[2].name();
    let err = refused(&base, &cand, &[]);
    assert!(err.contains(&last), "{err}");
    assert!(
        err.contains("cand.json") && err.contains("base.json"),
        "{err}"
    );
    // The other way round (CAND measured a shape BASE did not) is judged: no-baseline.
    let v = compare_json(&["--format", "json"], &cand, &base, Some(0));
    assert_eq!(v[2]["verdict"], "no-baseline", "{v}");
}

#[test]
fn results_of_another_config_are_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand) = (dir.path().join("base.json"), dir.path().join("cand.json"));
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    // Another config: pr-ada compiles the kernel with other defines.
    let mut ada = results("NVIDIA H200", &[1.0, 1.0, 1.0], 2);
    ada.config.name = "pr-ada".into();
    ada.config.path = "configs/pr-ada.yaml".into();
    ada.config.hash = "ab".repeat(32);
    write(&cand, &ada);
    edit(&cand, |v| {
        v["config"]["defines"] = serde_json::json!(["CG_ADA_TILES"])
    });
    let err = refused(&base, &cand, &[]);
    assert!(err.contains("pr-ada") && err.contains("\"pr\""), "{err}");
    assert!(err.contains("CG_ADA_TILES"), "{err}");
    // The same name, another content (the file was edited between the runs).
    write(&cand, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 2));
    edit(&cand, |v| v["config"]["hash"] = "cd".repeat(32).into());
    let err = refused(&base, &cand, &[]);
    assert!(
        err.contains("hash") && err.contains(&"cd".repeat(6)),
        "{err}"
    );
    // The same name and hash, other compile defines.
    write(&cand, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 2));
    edit(&cand, |v| {
        v["config"]["defines"] = serde_json::json!(["CG_ADA_TILES"])
    });
    let err = refused(&base, &cand, &[]);
    assert!(err.contains("CG_ADA_TILES"), "{err}");
}

#[test]
fn a_config_flag_of_another_config_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand) = (dir.path().join("base.json"), dir.path().join("cand.json"));
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    write(&cand, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 2));
    let shapes: String = crate::common::shapes()
        .iter()
        .map(|s| {
            format!(
                "  - {{batch: {}, heads: {}, seq_len: {}, head_dim: {}, causal: {}, dtype: {}}}\n",
                s.batch,
                s.heads,
                s.seq_len,
                s.head_dim,
                s.causal,
                serde_json::to_value(s.dtype).unwrap().as_str().unwrap()
            )
        })
        .collect();
    let nightly = dir.path().join("nightly.yaml");
    std::fs::write(&nightly, format!("name: nightly\nshapes:\n{shapes}")).unwrap();
    let err = refused(&base, &cand, &["--config", nightly.to_str().unwrap()]);
    assert!(err.contains("nightly") && err.contains("\"pr\""), "{err}");
    // Config pr, but not the content the runs read (another margin).
    let edited = dir.path().join("pr.yaml");
    std::fs::write(
        &edited,
        format!("name: pr\ngate: {{max_p50_regression: 0.05}}\nshapes:\n{shapes}"),
    )
    .unwrap();
    let err = refused(&base, &cand, &["--config", edited.to_str().unwrap()]);
    assert!(err.contains("hash"), "{err}");
    // The config the runs read is accepted.
    crate::common::measured_with(&cand, dir.path()).unwrap();
    let same = crate::common::measured_with(&base, dir.path()).unwrap();
    compare_json(
        &["--format", "json", "--config", same.to_str().unwrap()],
        &base,
        &cand,
        Some(0),
    );
}

#[test]
fn results_of_another_method_are_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand) = (dir.path().join("base.json"), dir.path().join("cand.json"));
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    write(&cand, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 2));
    edit(&base, |v| v["method"] = method("m2-0123456789ab"));
    edit(&cand, |v| v["method"] = method("m3-fedcba987654"));
    let err = refused(&base, &cand, &[]);
    assert!(
        err.contains("m2-0123456789ab") && err.contains("m3-fedcba987654"),
        "{err}"
    );
    // A file written before ci-gate named its method is of no known method.
    edit(&cand, |v| {
        v.as_object_mut().unwrap().remove("method");
    });
    let err = refused(&base, &cand, &[]);
    assert!(
        err.contains("unknown (recorded before ci-gate named its method)"),
        "{err}"
    );
    // A fingerprint that is not one is refused on reading, by key, and never shown.
    edit(&cand, |v| {
        v["method"] = method("m3-\u{1b}]8;;https://x\u{7}ab")
    });
    let err = refused(&base, &cand, &[]);
    assert!(err.contains("method.fingerprint"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err}");
}

#[test]
fn a_file_of_another_kind_is_named_with_the_command_that_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand) = (dir.path().join("base.json"), dir.path().join("cand.json"));
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    write(&cand, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 2));
    // A baseline file, recorded from BASE.
    let store = dir.path().join("baselines");
    let config = crate::common::measured_with(&base, dir.path()).unwrap();
    bin()
        .args(["baseline", "update", "--reason", "r", "--baselines"])
        .arg(&store)
        .arg("--from")
        .arg(&base)
        .arg("--config")
        .arg(&config)
        .assert()
        .code(0);
    let baseline = store.join("nvidia-h200/pr.json");
    for (b, c) in [(&baseline, &cand), (&cand, &baseline)] {
        let err = refused(b, c, &[]);
        assert!(err.contains("pr.json is a baseline file"), "{err}");
        assert!(err.contains("ci-gate local --no-base"), "{err}");
    }
    // A history file (JSON Lines), appended from BASE.
    let history = dir.path().join("history.jsonl");
    bin()
        .args(["history", "append", "--results"])
        .arg(&base)
        .arg("--history")
        .arg(&history)
        .assert()
        .code(0);
    let err = refused(&base, &history, &[]);
    assert!(err.contains("history.jsonl is a history file"), "{err}");
    assert!(err.contains("ci-gate history --history"), "{err}");
    // A selftest report.
    let selftest = dir.path().join("selftest.json");
    std::fs::write(
        &selftest,
        r#"{"config": "pr", "gpu": "NVIDIA H200", "trials": 20, "shapes": ["b2h8s512d64_f16"],
            "pairs": 24, "stage1": 8, "conditions": [], "injected": null, "stored_trials": 0,
            "stored_false_alarms": null, "wall_s": 12.5}"#,
    )
    .unwrap();
    let err = refused(&selftest, &cand, &[]);
    assert!(err.contains("selftest.json is a selftest report"), "{err}");
}

/// A candidate whose parity record fails only by the centered error (2026-12-08: an output
/// close to the reference in size but off by the whole part that depends on q, as a kernel
/// returning uniform attention on a near-uniform class would be) is a `parity-fail`, and the
/// table says which figure failed; the same record under a verdict that passes is refused.
#[test]
fn a_parity_record_failing_only_by_the_centered_error_is_a_parity_fail() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand) = (dir.path().join("base.json"), dir.path().join("cand.json"));
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    let mut wrong = results("NVIDIA H200", &[0.8, 1.0, 1.0], 2);
    let recorded = wrong.shapes[0].verdict;
    let p = wrong.shapes[0].parity.as_mut().unwrap();
    assert!(p.max_abs <= p.tolerance.max_abs && p.rel_l2 <= p.tolerance.rel_l2);
    p.tolerance.centered = Some(0.02);
    p.centered = Some(0.9);
    wrong.shapes[0].verdict = Verdict::ParityFail;
    write(&cand, &wrong);
    let v = compare_json(&["--format", "json"], &base, &cand, Some(1));
    assert_eq!(v[0]["verdict"], "parity-fail", "{v}");
    let out = bin()
        .args(["compare", "--wide"])
        .arg(&base)
        .arg(&cand)
        .assert()
        .code(1);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("FAIL: centered 9.0e-1"), "{text}");
    // Within its centered tolerance the same record passes parity: the faster time is read.
    let mut right = wrong.clone();
    let p = right.shapes[0].parity.as_mut().unwrap();
    p.centered = Some(0.01);
    right.shapes[0].verdict = recorded;
    write(&cand, &right);
    let v = compare_json(&["--format", "json"], &base, &cand, Some(0));
    assert_eq!(v[0]["verdict"], "improvement", "{v}");
    // The failing record under the verdict a passing one gives: the file contradicts
    // itself and is refused.
    wrong.shapes[0].verdict = recorded;
    write(&cand, &wrong);
    let err = refused(&base, &cand, &[]);
    assert!(
        err.contains("contradicts the shape's own failed parity check"),
        "{err}"
    );
}

/// A shape its own run failed, recorded as `local` records it: a parity failure on a
/// configured shape (timed anyway), an integrity failure found while timing, or a random
/// shape of its kind failed before it was timed (no measurement, no samples). As CAND each is
/// a `parity-fail` (exit 1), never its time against BASE's; as BASE each is no reference
/// (exit 2, naming the shape). Before 2026-12-07 the first two read as improvements and the
/// run passed (exit 0), and the third was refused as a shape CAND "lacks".
#[test]
fn a_shape_its_own_run_failed_is_a_parity_fail_never_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand) = (dir.path().join("base.json"), dir.path().join("cand.json"));
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    // 30% faster everywhere, and wrong on shape 0 by its own parity record.
    let mut wrong = results("NVIDIA H200", &[0.7, 0.7, 0.7], 2);
    let p = wrong.shapes[0].parity.as_mut().unwrap();
    p.max_abs = 0.5;
    wrong.shapes[0].verdict = Verdict::ParityFail;
    // Shape 1: the output checks of its timed launches failed (its rounds kept).
    wrong.shapes[1].integrity = Some("1000 elements unwritten in its timed launches".into());
    wrong.shapes[1].verdict = Verdict::ParityFail;
    write(&cand, &wrong);
    let v = compare_json(&["--format", "json"], &base, &cand, Some(1));
    let verdicts: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(
        verdicts,
        ["parity-fail", "parity-fail", "improvement"],
        "{v}"
    );
    let out = bin().arg("compare").arg(&base).arg(&cand).assert().code(1);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("FAIL: 2 parity-fail, 1 improvement"),
        "{text}"
    );

    // Shape 2 failed a random shape of its kind, so it was never timed.
    let s = &mut wrong.shapes[2];
    s.integrity = Some("the candidate fails parity on the random shape b1h3s349d64_f16".into());
    s.verdict = Verdict::ParityFail;
    s.samples_us.clear();
    s.summary = None;
    s.measurement = None;
    s.parity = None;
    s.tflops = None;
    write(&cand, &wrong);
    let v = compare_json(&["--format", "json"], &base, &cand, Some(1));
    assert_eq!(v[2]["verdict"], "parity-fail", "{v}");

    // As BASE: no reference for the shapes it failed, which nothing else can judge.
    let err = refused(&cand, &base, &[]);
    for s in &wrong.shapes {
        assert!(err.contains(&s.name), "{err}");
    }
    assert!(
        err.contains("cand.json: its candidate has no valid times of"),
        "{err}"
    );
    // Nor does a shape BASE could not measure (before: CAND's shape read `no-baseline`).
    let mut unmeasured = results("NVIDIA H200", &[1.0, 1.0, 1.0], 1);
    unmeasured.shapes[1].error = Some("CUDA_ERROR_LAUNCH_FAILED".into());
    unmeasured.shapes[1].verdict = Verdict::Error;
    write(&base, &unmeasured);
    write(&cand, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 2));
    let err = refused(&base, &cand, &[]);
    assert!(
        err.contains(&format!(
            "base.json: its candidate has no valid times of {}",
            unmeasured.shapes[1].name
        )),
        "{err}"
    );
}

/// `--config` re-applies the config's parity tolerances to what the files recorded, as
/// `merge` does: a shape whose record passes only under a tolerance of its own (wider than
/// the config's) is a `parity-fail` when the config is given.
#[test]
fn config_tolerances_replace_the_ones_a_file_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand) = (dir.path().join("base.json"), dir.path().join("cand.json"));
    write(&base, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    let mut wide = results("NVIDIA H200", &[1.0, 1.0, 1.0], 2);
    let p = wide.shapes[0].parity.as_mut().unwrap();
    // 0.05 of the slice's scale: above the config's 1e-2, within the recorded 0.1.
    p.max_abs = 0.05;
    p.tolerance.max_abs = 0.1;
    write(&cand, &wide);
    let v = compare_json(&["--format", "json"], &base, &cand, Some(0));
    assert_eq!(v[0]["verdict"], "pass", "{v}");
    crate::common::measured_with(&cand, dir.path()).unwrap();
    let config = crate::common::measured_with(&base, dir.path()).unwrap();
    let v = compare_json(
        &["--format", "json", "--config", config.to_str().unwrap()],
        &base,
        &cand,
        Some(1),
    );
    assert_eq!(v[0]["verdict"], "parity-fail", "{v}");
    assert_eq!(v[1]["verdict"], "pass", "{v}");
}
