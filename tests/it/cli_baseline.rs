//! `ci-gate baseline update --from` and `baseline show`, and bad baseline files: no GPU needed.

use crate::common::stderr_has;
use std::path::Path;

use crate::common::{bin, config_matching, measured_with, require_no_cuda_driver, results, write};
use predicates::prelude::*;

fn update(baselines: &Path, from: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    let mut cmd = bin();
    cmd.args([
        "baseline",
        "update",
        "--reason",
        "approved win in #42",
        "--baselines",
    ])
    .arg(baselines)
    .arg("--from")
    .arg(from)
    .args(extra);
    // The config the results were measured with (the check of --from refuses another's).
    if !extra.contains(&"--config")
        && let Some(config) = measured_with(from, from.parent().unwrap())
    {
        cmd.arg("--config").arg(config);
    }
    cmd.assert()
}

/// A shape that could not be measured has nothing to record: the refusal names it and says
/// why (its own error, as the run gave it: one line, escape sequences removed), with or
/// without --force, and nothing is written.
#[test]
fn a_shape_not_measured_is_refused_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("baselines");
    let from = dir.path().join("errored.json");
    let mut r = results("NVIDIA H200", &[1.0, 1.0, 1.0], 1);
    r.shapes[1].error =
        Some("the host's clock saw 25 µs more\n::error::forged\u{1b}[31m red".into());
    r.shapes[1].verdict = ci_gate::verdict::Verdict::Error;
    write(&from, &r);
    for extra in [&[][..], &["--force"][..]] {
        update(&store, &from, extra)
            .code(1)
            .stderr(stderr_has(format!(
                "b2h8s512d64_causal_f16: not measured in {}: the host's clock saw 25 µs more ::error::forged red",
                from.display()
            )))
            .stderr(predicate::str::contains("\n::error").not())
            .stderr(predicate::str::contains("\u{1b}").not());
    }
    assert!(!store.exists(), "nothing recorded");
}

#[test]
fn records_then_refuses_a_slower_baseline_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("baselines");
    let first = dir.path().join("first.json");
    write(&first, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    update(&store, &first, &[])
        .code(0)
        .stdout(predicate::str::contains(
            "recorded 3 shapes for NVIDIA H200",
        ));
    let file = store.join("nvidia-h200/pr.json");
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored["provenance"]["reason"], "approved win in #42");
    assert_eq!(
        stored["shapes"][0]["samples_us"].as_array().unwrap().len(),
        8,
        "all rounds are stored"
    );

    // 6% slower on one shape: refused, exit 1, the shape named, the file untouched.
    let slower = dir.path().join("slower.json");
    let mut r = results("NVIDIA H200", &[1.0, 1.06, 1.0], 2);
    r.git_commit = Some("fedcba9876543210fedcba9876543210fedcba98".into());
    write(&slower, &r);
    let before = std::fs::read(&file).unwrap();
    update(&store, &slower, &[])
        .code(1)
        .stderr(stderr_has("b2h8s512d64_causal_f16 (+5.9"))
        .stderr(stderr_has("--force"));
    assert_eq!(std::fs::read(&file).unwrap(), before);

    update(&store, &slower, &["--force"]).code(0);
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored["provenance"]["forced"], true);
    assert_eq!(
        stored["provenance"]["previous_commit"],
        "0123456789abcdef0123456789abcdef01234567"
    );
    assert_eq!(
        stored["provenance"]["commit"],
        "fedcba9876543210fedcba9876543210fedcba98"
    );

    bin()
        .args(["baseline", "show", "--wide", "--baselines"])
        .arg(&store)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("NVIDIA H200"))
        .stdout(predicate::str::contains("fedcba987654"))
        .stdout(predicate::str::contains("(forced)"));
}

#[test]
fn refuses_parity_failures_naming_the_shape() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("r.json");
    let mut r = results("NVIDIA H200", &[1.0, 1.0, 1.0], 1);
    r.shapes[2].parity.as_mut().unwrap().unwritten = 12;
    // As a run writes it: the failure is the shape's verdict.
    r.shapes[2].verdict = ci_gate::verdict::Verdict::ParityFail;
    write(&from, &r);
    update(&dir.path().join("b"), &from, &[])
        .code(1)
        .stderr(stderr_has("1 shape fails parity"))
        .stderr(stderr_has("b2h16s2048d128_causal_bf16"));
    assert!(!dir.path().join("b/nvidia-h200/pr.json").exists());
}

/// A shape whose kernel failed an integrity check while it was timed (its rounds kept, as an
/// energy window's check leaves them) is never recorded, not even with `--force`: its times
/// are not the attention's. Before 2026-12-07 `--from` recorded it (exit 0).
#[test]
fn refuses_integrity_failures_even_forced_naming_the_shape() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("r.json");
    let mut r = results("NVIDIA H200", &[1.0, 1.0, 1.0], 1);
    r.shapes[1].integrity = Some("the candidate skipped work in an energy window".into());
    r.shapes[1].verdict = ci_gate::verdict::Verdict::ParityFail;
    write(&from, &r);
    for extra in [&[][..], &["--force"][..]] {
        update(&dir.path().join("b"), &from, extra)
            .code(1)
            .stderr(stderr_has("failed an integrity check in"))
            .stderr(stderr_has("b2h8s512d64_causal_f16"))
            .stderr(stderr_has("skipped work in an energy window"));
        assert!(!dir.path().join("b/nvidia-h200/pr.json").exists());
    }
}

#[test]
fn bad_baseline_files_are_errors_naming_the_file_and_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("baselines");
    let from = dir.path().join("r.json");
    write(&from, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    update(&store, &from, &[]).code(0);
    let file = store.join("nvidia-h200/pr.json");
    let good = std::fs::read_to_string(&file).unwrap();
    let other_gpu = good.replace("\"NVIDIA H200\"", "\"NVIDIA L4\"");
    let cases: Vec<(String, &str)> = vec![
        (
            good[..good.len() / 2].to_owned(),
            "is not valid ci-gate JSON",
        ),
        (
            good.replace("\"shapes\"", "\"shapes\" oops"),
            "is not valid ci-gate JSON",
        ),
        (
            good.replacen("\"schema_version\": 2", "\"schema_version\": 3", 1),
            "has schema_version 3, newer",
        ),
        (other_gpu, "records GPU \"NVIDIA L4\""),
        (String::new(), "the file is empty"),
    ];
    for (content, want) in cases {
        std::fs::write(&file, &content).unwrap();
        update(&store, &from, &[])
            .code(2)
            .stderr(stderr_has("nvidia-h200/pr.json"))
            .stderr(stderr_has(want));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            content,
            "{want}: the file was overwritten"
        );
        bin()
            .args(["baseline", "show", "--baselines"])
            .arg(&store)
            .assert()
            .code(2)
            .stderr(stderr_has("nvidia-h200/pr.json"));
    }
}

#[test]
fn never_touches_another_gpus_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("baselines");
    let l4 = dir.path().join("l4.json");
    write(&l4, &results("NVIDIA L4", &[1.0, 1.0, 1.0], 1));
    update(&store, &l4, &[]).code(0);
    let l4_file = store.join("nvidia-l4/pr.json");
    let l4_bytes = std::fs::read(&l4_file).unwrap();
    let h200 = dir.path().join("h200.json");
    write(&h200, &results("NVIDIA H200", &[3.0, 3.0, 3.0], 2));
    update(&store, &h200, &[]).code(0);
    assert_eq!(std::fs::read(&l4_file).unwrap(), l4_bytes);
    assert!(store.join("nvidia-h200/pr.json").exists());
    bin()
        .args(["baseline", "show", "--gpu", "nvidia-l4", "--baselines"])
        .arg(&store)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("NVIDIA L4"))
        .stdout(predicate::str::contains("NVIDIA H200").not());
}

#[test]
fn update_input_errors() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("r.json");
    let mut r = results("NVIDIA H200", &[1.0, 1.0, 1.0], 1);
    write(&from, &r);
    bin()
        .args(["baseline", "update", "--reason", "  ", "--from"])
        .arg(&from)
        .assert()
        .code(2)
        .stderr(stderr_has("--reason is empty"));
    r.environment = None;
    write(&from, &r);
    update(&dir.path().join("b"), &from, &[])
        .code(2)
        .stderr(stderr_has("the GPU it was measured on is unknown"));
}

#[test]
fn show_with_nothing_stored() {
    let dir = tempfile::tempdir().unwrap();
    bin()
        .args(["baseline", "show", "--baselines"])
        .arg(dir.path().join("none"))
        .assert()
        .code(0)
        .stdout(predicate::str::contains("no baselines stored"));
}

#[test]
#[cfg_attr(
    ci_gate_cuda_driver,
    ignore = "a CUDA driver is installed here; this test checks the path without a GPU"
)]
fn gpu_commands_without_a_gpu_say_so_in_one_sentence() {
    require_no_cuda_driver();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for cmd in [vec!["local"], vec!["env"], vec!["ci", "--out"]] {
        let mut c = bin();
        c.current_dir(root).args(&cmd);
        if cmd[0] == "ci" {
            c.arg(tempfile::tempdir().unwrap().path().join("r.json"));
        }
        c.assert()
            .code(2)
            .stderr(stderr_has("no NVIDIA driver found"))
            .stderr(stderr_has("panicked").not());
    }
    // `env --json` still answers in JSON, saying why.
    let out = bin().args(["env", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["gpu"].is_null());
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("no NVIDIA driver found")
    );
}

/// In a directory that is not a git repository, `local` says so (not that a merge-base is
/// missing) before it needs the GPU.
#[test]
#[cfg_attr(
    ci_gate_cuda_driver,
    ignore = "a CUDA driver is installed here; this test checks the path without a GPU"
)]
fn local_outside_git_says_it_is_not_in_a_repository() {
    require_no_cuda_driver();
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir(dir.path().join("configs")).unwrap();
    std::fs::copy(
        root.join("configs/pr.yaml"),
        dir.path().join("configs/pr.yaml"),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("kernels")).unwrap();
    std::fs::copy(
        root.join("kernels/attention.cu"),
        dir.path().join("kernels/attention.cu"),
    )
    .unwrap();
    bin()
        .current_dir(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .arg("local")
        .assert()
        .code(2)
        .stderr(stderr_has(
            "not in a git repository, so there is no base to measure against",
        ))
        .stderr(stderr_has("merge-base").not());
}

#[test]
fn baselines_of_schema_1_load_and_say_their_spread_is_assumed() {
    // The H200 baseline as recorded before spreads were (one process, schema 1).
    let v1 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/baselines-v1");
    bin()
        .args(["baseline", "show", "--wide", "--baselines"])
        .arg(&v1)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("nvidia-h200"))
        .stdout(predicate::str::contains("not recorded"));
    let store = ci_gate::baseline::BaselineStore::new(&v1);
    let file = store
        .load("nvidia-h200", "NVIDIA H200", "pr")
        .unwrap()
        .unwrap();
    assert_eq!(file.schema_version, 1);
    let shape = &file.shapes[0];
    let side = shape.stored_side();
    assert!(side.spread.is_none() && side.process_rounds.is_empty());
    let cand = ci_gate::stats::Rounds::new(shape.samples_us.clone()).unwrap();
    let gate = ci_gate::config::GateSettings::default();
    let c = ci_gate::comparison::Comparison::unpaired(&side, &cand, None, &gate).unwrap();
    assert!(c.process_sd_assumed);
    assert_eq!(
        c.process_sd,
        Some(ci_gate::stats::ProcessSpread::ASSUMED.sd)
    );
    assert!((c.ratio - 1.0).abs() < 1e-12);
}

#[test]
fn several_from_files_record_the_spread_between_processes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("b");
    let mut froms = Vec::new();
    for (i, f) in [1.0, 1.004, 0.997].iter().enumerate() {
        let p = dir.path().join(format!("p{i}.json"));
        write(&p, &results("NVIDIA H200", &[*f, *f, *f], 10 + i as u64));
        froms.push(p);
    }
    let mut cmd = bin();
    cmd.args([
        "baseline",
        "update",
        "--reason",
        "three processes",
        "--baselines",
    ])
    .arg(&store);
    for f in &froms {
        cmd.arg("--from").arg(f);
    }
    for f in &froms {
        measured_with(f, dir.path()).unwrap();
    }
    cmd.arg("--config")
        .arg(config_matching(&froms[0], dir.path()).unwrap());
    let out = cmd.assert().code(0).get_output().clone();
    // The output wraps at 80 columns: read as flowing text.
    let flat = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (stdout, stderr) = (flat(&out.stdout), flat(&out.stderr));
    assert!(stdout.contains("p0.json,"), "{stdout}");
    assert!(stdout.contains("spread between processes"), "{stdout}");
    // Three processes are fewer than the five a usable spread needs: said, with the floor
    // comparisons will use.
    assert!(stderr.contains("fewer than 5 processes"), "{stderr}");
    assert!(stderr.contains("at least 0.3%"), "{stderr}");
    // ... and what that costs: wider intervals, more shapes to the second stage.
    assert!(stderr.contains("to the second stage"), "{stderr}");
    let file = ci_gate::baseline::BaselineStore::new(&store)
        .load("nvidia-h200", "NVIDIA H200", "pr")
        .unwrap()
        .unwrap();
    for s in &file.shapes {
        assert_eq!(s.process_rounds, vec![8, 8, 8]);
        let spread = s.process_spread.unwrap();
        assert_eq!(spread.df, 2.0);
        // Process means 1.0, 1.004, 0.997: an sd of about 0.35%.
        assert!((0.002..0.006).contains(&spread.sd), "{spread:?}");
    }
    // A later update that would drop a stored shape is refused, naming it.
    let mut fewer = results("NVIDIA H200", &[1.0, 1.0, 1.0], 20);
    fewer.shapes.pop();
    let p = dir.path().join("fewer.json");
    write(&p, &fewer);
    update(&store, &p, &[])
        .code(1)
        .stderr(stderr_has("would drop 1 stored shape"))
        .stderr(stderr_has("b2h16s2048d128_causal_bf16"));
}

#[test]
fn from_checks_the_config_and_show_prints_nothing_before_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("b");
    let from = dir.path().join("r.json");
    write(&from, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    let other = dir.path().join("nightly.yaml");
    std::fs::write(
        &other,
        "name: nightly\nshapes:\n  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, dtype: float16}\n",
    )
    .unwrap();
    update(&store, &from, &["--config", other.to_str().unwrap()])
        .code(2)
        .stderr(stderr_has("is of config \"pr\""))
        .stderr(stderr_has("is config \"nightly\""));
    // The same name, other shapes (another repository's config): refused, naming them.
    let three = dir.path().join("pr.yaml");
    std::fs::write(
        &three,
        "name: pr\nshapes:\n  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, dtype: float16}\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, dtype: float16}\n",
    )
    .unwrap();
    update(&store, &from, &["--config", three.to_str().unwrap()])
        .code(2)
        .stderr(stderr_has("holds other shapes than config \"pr\""))
        .stderr(stderr_has(
            "2 not in the config (\"b2h16s2048d128_causal_bf16\", \"b2h8s512d64_causal_f16\")",
        ))
        .stderr(stderr_has("1 of the config missing (\"b1h8s512d64_f16\")"));
    update(&store, &from, &["--config", "/nonexistent/pr.yaml"])
        .code(2)
        .stderr(stderr_has("no such file"));
    assert!(!store.exists(), "nothing may be written");
    update(&store, &from, &[]).code(0);
    std::fs::write(store.join("nvidia-h200/pr.json"), "{").unwrap();
    bin()
        .args(["baseline", "show", "--baselines"])
        .arg(&store)
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty());
}

/// `baseline show` fits 80 columns (its table, the compiler resources and energy under it),
/// and a GPU's name passed to `--gpu` is answered with the slug it takes.
#[test]
fn show_fits_80_columns_and_answers_a_gpu_name_with_its_slug() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("b");
    let from = dir.path().join("r.json");
    write(&from, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    update(&store, &from, &[]).code(0);
    let out = bin()
        .args(["baseline", "show", "--baselines"])
        .arg(&store)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.lines().all(|l| l.chars().count() <= 80), "{stdout}");
    let out = bin()
        .args(["baseline", "show", "--gpu", "NVIDIA L4", "--baselines"])
        .arg(&store)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("for NVIDIA L4 (--gpu takes the slug of a GPU's name: nvidia-l4)"),
        "{stdout}"
    );
}

// ---------------------------------------------------------------------------------------
// The method a baseline was measured by (issue 37)

/// Edits the JSON of the file at `path` with `f` (a file of another ci-gate is only JSON).
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

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn update_records_the_method_of_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("b");
    let from = dir.path().join("r.json");
    write(&from, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    edit(&from, |v| v["method"] = method("m3-0123456789ab"));
    update(&store, &from, &[]).code(0);
    let stored = read_json(&store.join("nvidia-h200/pr.json"));
    assert_eq!(
        stored["method"]["fingerprint"], "m3-0123456789ab",
        "{stored}"
    );
    assert_eq!(stored["method"]["version"], 3, "{stored}");
    // `baseline show` names it.
    bin()
        .args(["baseline", "show", "--wide", "--baselines"])
        .arg(&store)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("m3-0123456789ab"));
}

#[test]
fn from_refuses_results_of_another_method_or_of_none_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("b");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    write(&a, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    write(&b, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 2));
    edit(&a, |v| v["method"] = method("m3-0123456789ab"));
    edit(&b, |v| v["method"] = method("m3-fedcba987654"));
    measured_with(&b, dir.path()).unwrap();
    let config = measured_with(&a, dir.path()).unwrap();
    let two = |first: &Path, second: &Path| {
        bin()
            .args(["baseline", "update", "--reason", "r", "--baselines"])
            .arg(&store)
            .arg("--config")
            .arg(&config)
            .arg("--from")
            .arg(first)
            .arg("--from")
            .arg(second)
            .assert()
    };
    two(&a, &b)
        .code(2)
        .stderr(predicate::str::contains("b.json"))
        .stderr(predicate::str::contains("m3-0123456789ab"))
        .stderr(predicate::str::contains("m3-fedcba987654"));
    // A results file that names no method: a baseline of it would compare with nothing.
    edit(&b, |v| {
        v.as_object_mut().unwrap().remove("method");
    });
    update(&store, &b, &[])
        .code(2)
        .stderr(predicate::str::contains("b.json"))
        .stderr(predicate::str::contains("names no measuring method"));
    assert!(!store.exists(), "nothing may be written");
}

#[test]
fn from_refuses_results_of_another_config_content() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("b");
    let from = dir.path().join("r.json");
    write(&from, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    let config = measured_with(&from, dir.path()).unwrap();
    // The same name and shapes, but the results ran another content of the config.
    edit(&from, |v| v["config"]["hash"] = "ab".repeat(32).into());
    update(&store, &from, &["--config", config.to_str().unwrap()])
        .code(2)
        .stderr(predicate::str::contains("r.json"))
        .stderr(predicate::str::contains("hash"));
    // Or other compile defines.
    write(&from, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    measured_with(&from, dir.path()).unwrap();
    edit(&from, |v| {
        v["config"]["defines"] = serde_json::json!(["CG_ADA_TILES"])
    });
    update(&store, &from, &["--config", config.to_str().unwrap()])
        .code(2)
        .stderr(predicate::str::contains("r.json"))
        .stderr(predicate::str::contains("CG_ADA_TILES"));
    // A selftest report is not a results file.
    let selftest = dir.path().join("selftest.json");
    std::fs::write(
        &selftest,
        r#"{"config": "pr", "gpu": null, "trials": 2, "shapes": [], "pairs": 8, "stage1": 8,
            "conditions": [], "injected": null, "stored_trials": 0, "wall_s": 1.0}"#,
    )
    .unwrap();
    update(&store, &selftest, &["--config", config.to_str().unwrap()])
        .code(2)
        .stderr(predicate::str::contains(
            "selftest.json is a selftest report",
        ));
    assert!(!store.exists(), "nothing may be written");
}

/// Re-recording after the method changed: the old numbers are of another method, so the
/// new ones are not refused as slower than them (a gate upgrade is no kernel change), and
/// the output says so.
#[test]
fn a_recording_of_a_new_method_is_not_compared_with_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("b");
    let old = dir.path().join("old.json");
    write(&old, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    edit(&old, |v| v["method"] = method("m2-0123456789ab"));
    update(&store, &old, &[]).code(0);
    let new = dir.path().join("new.json");
    write(&new, &results("NVIDIA H200", &[1.06, 1.06, 1.06], 2));
    edit(&new, |v| v["method"] = method("m3-fedcba987654"));
    let out = update(&store, &new, &[]).code(0);
    let text = String::from_utf8(out.get_output().stderr.clone()).unwrap()
        + &String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("m2-0123456789ab"), "{flat}");
    assert!(!flat.contains("slower than the stored baseline"), "{flat}");
    let stored = read_json(&store.join("nvidia-h200/pr.json"));
    assert_eq!(stored["method"]["fingerprint"], "m3-fedcba987654");
    assert_eq!(stored["provenance"]["forced"], false);
}

/// `baseline update` fits 80 columns: the shapes are a list, one per line, and the prose
/// wraps (it printed 13 shapes on one line of 429 columns).
#[test]
fn update_output_fits_80_columns() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("b");
    let from = dir.path().join("r.json");
    let mut r = results("NVIDIA H200", &[1.0, 1.0, 1.0], 1);
    let first = r.shapes.clone();
    for batch in 3..8 {
        for s in &first {
            let mut more = s.clone();
            more.params.batch = batch;
            more.name = more.params.name();
            crate::common::resummarize(&mut more);
            r.shapes.push(more);
        }
    }
    r.shapes.truncate(13);
    write(&from, &r);
    let check = |out: &std::process::Output| {
        for stream in [&out.stdout, &out.stderr] {
            let text = String::from_utf8_lossy(stream);
            for line in text.lines() {
                assert!(
                    line.chars().count() <= 80,
                    "{} columns: {line}\n{text}",
                    line.chars().count()
                );
            }
        }
    };
    let out = update(&store, &from, &[]).code(0).get_output().clone();
    check(&out);
    let text = String::from_utf8_lossy(&out.stderr);
    // Every shape named, each on a line of its own.
    for s in &r.shapes {
        assert!(
            text.lines()
                .any(|l| l.trim().trim_start_matches("- ") == s.name),
            "{}: {text}",
            s.name
        );
    }
    // A refusal lists its shapes the same way.
    let mut slower = r.clone();
    for s in slower.shapes.iter_mut() {
        for v in s.samples_us.iter_mut().flatten() {
            *v *= 1.1;
        }
        crate::common::resummarize(s);
    }
    write(&from, &slower);
    let out = update(&store, &from, &[]).code(1).get_output().clone();
    check(&out);
}

/// A directory for the simulated GPU's runs: `sim.yaml` ([`SIM_CONFIG`]), kernels `k/` that
/// time as a factor of 1, and room for the store `baselines/`.
fn sim_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sim.yaml"), SIM_CONFIG).unwrap();
    crate::common::sim_kernels(dir.path(), "k", "factor=1.0");
    dir
}

/// A [`sim_dir`] whose store holds a baseline recorded on the simulated GPU from 2
/// processes, and that baseline's file.
fn sim_recorded() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = sim_dir();
    sim_cmd(
        dir.path(),
        &["baseline", "update", "--reason", "r", "--processes", "2"],
    )
    .assert()
    .code(0);
    let file = dir.path().join("baselines/simulated-gpu/sim.json");
    (dir, file)
}

/// `ci-gate ARGS` on the simulated GPU in `dir` ([`sim_dir`]), with its config, store and
/// kernels.
fn sim_cmd(dir: &Path, args: &[&str]) -> assert_cmd::Command {
    let mut c = bin();
    c.env("CI_GATE_SIMULATE", "1")
        .current_dir(dir)
        .args(args)
        .arg("--config")
        .arg(dir.join("sim.yaml"))
        .arg("--baselines")
        .arg(dir.join("baselines"))
        .arg("--kernels")
        .arg(dir.join("k"));
    c
}

/// The simulated pipeline's config (tests/it/cli_simulated.rs has the same).
const SIM_CONFIG: &str = "\
name: sim
gate: {max_p50_regression: 0.02, alpha: 0.05, seed: 7}
measure: {cache: hot, samples_per_round: 10, min_rounds: 8, max_rounds: 24}
shapes:
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: false, dtype: float16}
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: true, dtype: float16}
";

/// A run compared with a stored baseline of another method (the shipped baselines, recorded
/// before ci-gate named its method, against this ci-gate): the stored comparison is not
/// judged. Without a base every shape reads `other-method` (a warning that passes) where
/// the stored numbers, 10% faster, would read as regressions; with a base the A/B decides
/// and no drift is reported. One sentence names both methods and the command that
/// re-records.
#[test]
fn a_run_against_a_baseline_of_another_method_is_not_judged() {
    let (dir, file) = sim_recorded();
    let sim = |args: &[&str]| sim_cmd(dir.path(), args);
    edit(&file, |v| {
        v.as_object_mut().unwrap().remove("method");
        for s in v["shapes"].as_array_mut().unwrap() {
            for round in s["samples_us"].as_array_mut().unwrap() {
                for x in round.as_array_mut().unwrap() {
                    *x = (x.as_f64().unwrap() * 0.9).into();
                }
            }
            crate::common::resummarize_stored(s);
        }
    });
    let out_file = dir.path().join("r.json");
    let local = |extra: &[&str]| {
        let mut c = sim(&["local", "--no-peers", "--no-profile"]);
        c.args(extra).arg("--out").arg(&out_file);
        c.assert()
    };
    let out = local(&["--no-base"]).code(0).get_output().clone();
    let text = String::from_utf8(out.stdout).unwrap();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let r = read_json(&out_file);
    for s in r["shapes"].as_array().unwrap() {
        assert_eq!(s["verdict"], "other-method", "{s}");
        assert!(s["stored"].is_null(), "{s}");
    }
    let current = r["method"]["fingerprint"].as_str().unwrap().to_owned();
    assert!(flat.contains("2 other-method"), "{flat}");
    assert!(
        flat.contains("unknown (recorded before ci-gate named its method)"),
        "{flat}"
    );
    assert!(flat.contains(&current), "{flat}");
    assert!(flat.contains("ci-gate baseline update"), "{flat}");
    // With a base (kernels that time the same, in another file: A/B runs), the A/B decides:
    // a pass, no drift.
    let base = crate::common::sim_kernels(dir.path(), "base", "factor=1.0");
    let base = base.to_str().unwrap().to_owned();
    local(&["--base-kernels", &base]).code(0);
    let r = read_json(&out_file);
    for s in r["shapes"].as_array().unwrap() {
        assert_eq!(s["verdict"], "pass", "{s}");
        assert!(s["stored"].is_null(), "{s}");
    }
    // The Markdown comment says it too.
    let out = local(&["--base-kernels", &base, "--format", "markdown"])
        .code(0)
        .get_output()
        .clone();
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.contains("unknown (recorded before ci-gate named its method)"),
        "{md}"
    );
}

/// A recording refused as slower than a stored baseline of another card of the model says
/// so, with both cards' UUIDs (two H200s read one shape 2.2% apart, docs/PERF.md,
/// 2026-12-05); of the same card it does not. Results given with --from were measured
/// elsewhere: nothing is said of keeping them.
#[test]
fn a_slower_recording_names_the_other_card_of_the_stored_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("baselines");
    let first = dir.path().join("first.json");
    write(&first, &results("NVIDIA H200", &[1.0, 1.0, 1.0], 1));
    let stored_card = "GPU-11111111-2222-3333-4444-555555555555";
    edit(&first, |v| {
        v["environment"]["gpu_uuid"] = stored_card.into()
    });
    update(&store, &first, &[]).code(0);
    let flat = |out: &std::process::Output| {
        String::from_utf8_lossy(&out.stderr)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let slower = dir.path().join("slower.json");
    for (card, another) in [
        ("GPU-66666666-7777-8888-9999-000000000000", true),
        (stored_card, false),
    ] {
        write(&slower, &results("NVIDIA H200", &[1.0, 1.06, 1.0], 2));
        edit(&slower, |v| v["environment"]["gpu_uuid"] = card.into());
        let out = update(&store, &slower, &[]).code(1).get_output().clone();
        let text = flat(&out);
        assert!(text.contains("b2h8s512d64_causal_f16 (+5.9"), "{text}");
        let named = format!(
            "the stored baseline was measured on another card of this model, {stored_card}; these results on {card}"
        );
        assert_eq!(text.contains(&named), another, "{text}");
        assert!(!text.contains("measurements are kept"), "{text}");
    }
}

/// `baseline update` that measured and was refused keeps its processes' results files and
/// prints the command that records them with --force; run as printed (the reason filled
/// in), it records them without measuring again. The simulated GPU measures; the stored
/// baseline is made 10% faster and another card's, so the new recording is refused.
#[test]
fn a_refused_measurement_is_kept_and_its_printed_command_records_it() {
    let dir = sim_dir();
    let store = dir.path().join("baselines");
    let measure = || {
        sim_cmd(
            dir.path(),
            &["baseline", "update", "--reason", "r", "--processes", "2"],
        )
        .assert()
    };
    measure().code(0);
    let file = store.join("simulated-gpu/sim.json");
    edit(&file, |v| {
        v["environment"]["gpu_uuid"] = "GPU-another-card".into();
        for s in v["shapes"].as_array_mut().unwrap() {
            for round in s["samples_us"].as_array_mut().unwrap() {
                for x in round.as_array_mut().unwrap() {
                    *x = (x.as_f64().unwrap() * 0.9).into();
                }
            }
            crate::common::resummarize_stored(s);
        }
    });
    let before = std::fs::read(&file).unwrap();
    let out = measure().code(1).get_output().clone();
    assert_eq!(std::fs::read(&file).unwrap(), before, "nothing recorded");
    let text = String::from_utf8(out.stderr).unwrap();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("another card of this model, GPU-another-card"),
        "{flat}"
    );
    assert!(flat.contains("the measurements are kept in"), "{flat}");
    // The printed command: from its first line to the one with --force, backslashes and
    // the reason's placeholder left out.
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with("ci-gate baseline update"))
        .collect();
    let end = lines.iter().position(|l| l.starts_with("--force")).unwrap();
    let words: Vec<String> = lines[..end]
        .iter()
        .flat_map(|l| l.trim_end_matches('\\').split_whitespace())
        .map(str::to_owned)
        .collect();
    assert_eq!(words[..3], ["ci-gate", "baseline", "update"], "{text}");
    let from: Vec<&String> = words
        .iter()
        .zip(words.iter().skip(1))
        .filter(|(w, _)| *w == "--from")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(from.len(), 2, "{text}");
    assert!(
        from.iter().all(|p| Path::new(p.as_str()).is_file()),
        "{text}"
    );
    let out = bin()
        .current_dir(dir.path())
        .args(&words[1..])
        .args(["--force", "--reason", "the card, not the kernels"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("measuring process"),
        "measured again"
    );
    let stored = read_json(&file);
    assert_eq!(stored["provenance"]["forced"], true);
    assert_eq!(stored["provenance"]["reason"], "the card, not the kernels");
    assert_ne!(stored["environment"]["gpu_uuid"], "GPU-another-card");
    if let Some(kept) = Path::new(from[0].as_str()).parent() {
        std::fs::remove_dir_all(kept).unwrap();
    }
}

/// A run against a stored baseline recorded on another card of the model says so, as
/// information (no "PASS with warnings", no UUID shown), in the terminal and in the pull
/// request's comment; against one of this card it says nothing of it.
#[test]
fn a_stored_baseline_of_another_card_is_a_note() {
    let (dir, file) = sim_recorded();
    let sim = |args: &[&str]| sim_cmd(dir.path(), args);
    let out_file = dir.path().join("r.json");
    let run = |format: &str| {
        let out = sim(&["local", "--no-base", "--no-peers", "--no-profile"])
            .args(["--format", format])
            .arg("--out")
            .arg(&out_file)
            .assert()
            .code(0)
            .get_output()
            .clone();
        String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    // The simulated GPU of each process is a card of its own (its own seed, its own
    // UUID): the stored baseline is given the card the run reports, then another one.
    let note = "the stored baseline was recorded on another card of this GPU model";
    run("json");
    let this_card = read_json(&out_file)["environment"]["gpu_uuid"].clone();
    edit(&file, |v| v["environment"]["gpu_uuid"] = this_card.clone());
    let text = run("table");
    assert!(!text.contains(note), "{text}");
    edit(&file, |v| {
        v["environment"]["gpu_uuid"] = "GPU-another-card".into()
    });
    let text = run("table");
    assert!(text.contains(note), "{text}");
    assert!(text.contains("PASS:"), "{text}");
    assert!(!text.contains("with warnings"), "{text}");
    assert!(!text.contains("GPU-another-card"), "{text}");
    assert!(!text.contains(this_card.as_str().unwrap()), "{text}");
    let md = run("markdown");
    assert!(md.contains(&format!("ℹ️ {note}")), "{md}");
    assert!(!md.contains("⚠️"), "{md}");
}
