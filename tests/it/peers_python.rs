//! ci-gate's Python side without a GPU or PyTorch: the worker built into the binary
//! (peers/torch_sdpa_worker.py), the independent harness (bench/sdpa_bench.py), the worker's
//! variants (bench/peers_variants.py) and the comparison (bench/peers_compare.py), run against
//! a fake `torch` that models only time (tests/peers/fake_torch, README there). What the
//! device script `bench/peers_agreement_device.sh` runs, end to end: the gate on the simulated
//! GPU with the real worker, the harness, the variants, the comparison.
//!
//! The fake reproduces issue 30's trap — cuDNN's first call of a shape builds its plan inside
//! the old warm-up, which then sized a one-call graph — and the tests show the method now
//! sizes a graph of about 2 ms where the old one sized one call.

use crate::common::stderr_text;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{bin, sim_kernels};

const CONFIG: &str = "\
name: sim
peers: [torch-sdpa-cudnn, torch-sdpa-flash]
parity:
  seed: 11
  float16: {max_abs: 1.0e-2, rel_l2: 1.0e-3}
  bfloat16: {max_abs: 6.0e-2, rel_l2: 8.0e-3}
measure: {cache: hot, sample_ms: 2.0, duty_cycle: 0.25, warmup_ms: 25, samples_per_round: 10, min_rounds: 8, max_rounds: 24}
shapes:
  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, causal: false, dtype: float16}
  - {batch: 2, heads: 16, seq_len: 4096, head_dim: 128, causal: true, dtype: bfloat16}
";

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// python3 with yaml, or why not (the test then says SKIPPED, or fails where
/// CI_GATE_REQUIRE_PYTHON is set, as `.ci/run` sets it: there the test must run).
fn python_ready() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import yaml"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI_GATE_REQUIRE_PYTHON").is_none(),
            "CI_GATE_REQUIRE_PYTHON is set and python3 on PATH cannot import yaml"
        );
        eprintln!("SKIPPED: no python3 with yaml here");
    }
    ok
}

fn python(args: &[&str], dir: &Path) -> String {
    let out = Command::new("python3")
        .args(args)
        .env("PYTHONPATH", repo("tests/peers/fake_torch"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python3 {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr_text(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The element of the JSON array `list` whose `key` is `value` (the test fails without one).
fn find<'a>(list: &'a Value, key: &str, value: &Value) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|x| &x[key] == value)
        .unwrap_or_else(|| panic!("no {key} = {value} in {list}"))
}

fn kernels(dir: &Path, name: &str) -> PathBuf {
    sim_kernels(dir, name, "factor=1.0")
}

#[test]
fn the_gate_the_harness_and_the_variants_agree_on_a_fake_torch_and_the_old_trap_shows() {
    if !python_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("sim.yaml"), CONFIG).unwrap();
    std::fs::create_dir(dir.join("baselines")).unwrap();
    // ci-gate runs its worker as `python -I -u SCRIPT` (isolated: PYTHONPATH is ignored);
    // this interpreter runs the same script without -I, with the fake torch on the path.
    let wrapper = dir.join("python-with-fake-torch");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nfor a; do last=$a; done\nPYTHONDONTWRITEBYTECODE=1 PYTHONPATH='{}' exec python3 -u \"$last\"\n",
            repo("tests/peers/fake_torch").display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (a, b) = (kernels(dir, "a"), kernels(dir, "b"));
    let out = bin()
        .env("CI_GATE_SIMULATE", "1")
        .env("CI_GATE_PYTHON", &wrapper)
        .current_dir(dir)
        .args(["local", "--config", "sim.yaml", "--baselines", "baselines"])
        .arg("--base-kernels")
        .arg(&a)
        .arg("--kernels")
        .arg(&b)
        .args(["--no-profile", "--out", "R.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_text(&out.stderr));
    let r = json(&dir.join("R.json"));
    assert_eq!(r["peers"]["runtime"], "torch 0.0+fake, CUDA 13.0", "{r}");
    // The worker sized ~2 ms graphs: 5 µs calls → about 394 per replay, not 1.
    let launches = r["peers"]["launches"].as_array().unwrap();
    assert_eq!(launches.len(), 4, "{launches:?}");
    for l in launches {
        let n = l["launches"].as_u64().unwrap();
        let shape = find(&r["shapes"], "name", &l["shape"]);
        let us = find(&shape["peers"], "peer", &l["peer"])["p50_us"]
            .as_f64()
            .unwrap();
        let replay_ms = n as f64 * us / 1000.0;
        assert!(
            (1.6..=2.4).contains(&replay_ms),
            "{l}: {n} calls of {us} µs"
        );
    }
    for s in r["shapes"].as_array().unwrap() {
        for p in s["peers"].as_array().unwrap() {
            assert_eq!(p["samples_us"].as_array().unwrap().len(), 3, "{p}");
            assert!(p["error"].is_null(), "{p}");
        }
    }

    python(
        &[
            repo("bench/sdpa_bench.py").to_str().unwrap(),
            "sim.yaml",
            "--backends",
            "flash,cudnn",
            "--out",
            "H.json",
        ],
        dir,
    );
    python(
        &[
            repo("bench/peers_variants.py").to_str().unwrap(),
            "sim.yaml",
            "--out",
            "V.json",
            "--python-args=-u",
            "--worker",
            repo("peers/torch_sdpa_worker.py").to_str().unwrap(),
        ],
        dir,
    );
    let v = json(&dir.join("V.json"));
    let variant = |name: &str, shape: &str, peer: &str| -> Value {
        v["variants"][name]["shapes"][shape][peer].clone()
    };
    for name in [
        "alone",
        "no-lead-in",
        "warmup-sizing",
        "fresh",
        "legacy",
        "qpool",
    ] {
        assert!(
            v["variants"][name]["error"].is_null(),
            "{name}: {}",
            v["variants"][name]
        );
    }
    // The trap of issue 30: the old warm-up sized a one-call graph for cuDNN (its first call
    // of a shape builds its plan), and the per-replay overhead was then in every call.
    let short = "b1h8s512d64_f16";
    assert_eq!(variant("legacy", short, "torch-sdpa-cudnn")["launches"], 1);
    assert_eq!(
        variant("warmup-sizing", short, "torch-sdpa-cudnn")["launches"],
        1
    );
    assert!(
        variant("alone", short, "torch-sdpa-cudnn")["launches"]
            .as_u64()
            .unwrap()
            > 300
    );
    let slow = variant("legacy", short, "torch-sdpa-cudnn")["p50_us"]
        .as_f64()
        .unwrap();
    let right = variant("alone", short, "torch-sdpa-cudnn")["p50_us"]
        .as_f64()
        .unwrap();
    assert!(slow > 1.3 * right, "legacy {slow} µs, now {right} µs");

    let text = python(
        &[
            repo("bench/peers_compare.py").to_str().unwrap(),
            "R.json",
            "H.json",
            "V.json",
            "--wall",
            "1.5",
        ],
        dir,
    );
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("max |diff| 0.") && last.contains("4/4 within ±3%"),
        "{text}"
    );
    assert!(
        text.contains("b2h16s4096d128_causal_bf16       cuDNN"),
        "{text}"
    );

    // bench/like_for_like.py (issue 40): each shape of the gate's run against the harness
    // and against the worker's `qpool`, from the same files; its ratios are those files'.
    python(
        &[
            repo("bench/like_for_like.py").to_str().unwrap(),
            "--ours",
            "sim=R.json",
            "--harness",
            "H.json",
            "--variants",
            "V.json",
            "--out",
            "L.json",
        ],
        dir,
    );
    let l = json(&dir.join("L.json"));
    let l_rows = l["rows"].as_array().unwrap();
    let h = json(&dir.join("H.json"));
    assert_eq!(l_rows.len(), r["shapes"].as_array().unwrap().len(), "{l}");
    for row in l_rows {
        let name = row["shape"].as_str().unwrap();
        let ours = find(&r["shapes"], "name", &row["shape"])["ab"]["p50_cand"]
            .as_f64()
            .unwrap();
        assert_eq!(row["path"], "sim");
        assert!(
            (row["ours_us"].as_f64().unwrap() - ours).abs() < 1e-9,
            "{row}"
        );
        let harness = find(&h["shapes"], "name", &row["shape"]);
        for (label, hkey, peer) in [
            ("cuDNN", "cudnn_us", "torch-sdpa-cudnn"),
            ("FA2", "flash_us", "torch-sdpa-flash"),
        ] {
            let hv = harness[hkey].as_f64().unwrap();
            let qv = variant("qpool", name, peer)["p50_us"].as_f64().unwrap();
            let av = variant("alone", name, peer)["p50_us"].as_f64().unwrap();
            let got = |k: &str| row[label][k].as_f64().unwrap();
            assert!((got("ratio_harness") - ours / hv).abs() < 1e-9, "{row}");
            assert!((got("ratio_qpool") - ours / qv).abs() < 1e-9, "{row}");
            assert!((got("method_cost") - qv / av).abs() < 1e-9, "{row}");
        }
    }
    // Without a `qpool` variant there is nothing to compare alike: it refuses, naming it.
    let out = Command::new("python3")
        .arg(repo("bench/like_for_like.py"))
        .args([
            "--ours",
            "sim=R.json",
            "--harness",
            "H.json",
            "--variants",
            "H.json",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no `qpool` variant"),
        "{}",
        stderr_text(&out.stderr)
    );
}
