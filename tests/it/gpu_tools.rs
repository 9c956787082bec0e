//! compute-sanitizer and Nsight Compute through the binary, on a real GPU:
//! `cargo test --test it -- --ignored gpu_tools::` on a CUDA machine with the CUDA toolkit's
//! compute-sanitizer and ncu. `CI_GATE_BIN` names the ci-gate binary when the test runs
//! somewhere other than where it was built.

use crate::common::stderr_text;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The repository: where this was built, or (carried to another machine) the current
/// directory.
fn root() -> PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR"));
    if built.join("kernels").is_dir() {
        built.to_owned()
    } else {
        PathBuf::from(".")
    }
}

fn ci_gate() -> Command {
    let bin = std::env::var_os("CI_GATE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ci-gate")));
    let mut cmd = Command::new(bin);
    cmd.current_dir(root());
    cmd
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); stderr: {}",
            stderr_text(&out.stderr)
        )
    })
}

/// Each planted bug is found by its tool, and the finding names the kernel and the shape.
#[test]
#[ignore = "needs a CUDA GPU and compute-sanitizer"]
fn planted_bugs_are_found_naming_the_kernel_and_the_shape() {
    let cases = [
        (
            "oob",
            "memcheck",
            "b1h2s77d64_causal_f16",
            "attention_fwd_f16_d64",
        ),
        (
            "race",
            "racecheck",
            "b1h2s300d64_causal_bf16",
            "attention_fwd_bf16_d64",
        ),
        (
            "misaligned",
            "memcheck",
            "b1h1s129d128_causal_f16",
            "attention_fwd_f16_d128",
        ),
    ];
    for (plant, tool, shape, kernel) in cases {
        let out = ci_gate()
            .args(["sanitize", "--harness", "kernels", "--format", "json"])
            .args(["--kernels", &format!("tests/sanitize/{plant}")])
            .args(["--tool", tool, "--shape", shape])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{plant}: {}",
            stderr_text(&out.stderr)
        );
        let report = json_of(&out);
        let run = &report["runs"][0];
        assert_eq!(run["tool"], tool, "{plant}");
        assert_eq!(run["shape"], shape, "{plant}");
        assert!(run["errors"].as_u64().unwrap() > 0, "{plant}: {run}");
        let named = run["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kernel"] == kernel);
        assert!(named, "{plant}: no finding names {kernel}: {run}");
    }
}

/// The shipped kernels, and the harness, give no finding on any tool or shape.
#[test]
#[ignore = "needs a CUDA GPU and compute-sanitizer"]
fn shipped_kernels_are_clean_under_every_tool() {
    let out = ci_gate()
        .args(["sanitize", "--format", "json"])
        .output()
        .unwrap();
    let report = json_of(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{report:#}",
        stderr_text(&out.stderr)
    );
    let runs = report["runs"].as_array().unwrap();
    let shapes = ci_gate::config::Config::load(&root().join("configs/sanitize.yaml"))
        .unwrap()
        .shapes
        .len();
    assert_eq!(
        runs.len(),
        4 * shapes,
        "four tools on the {shapes} shapes of configs/sanitize.yaml"
    );
    assert!(
        runs.iter()
            .all(|r| r["errors"] == 0 && r["failure"].is_null())
    );
}

/// `--profile` gives base and candidate figures from ncu and keeps the .ncu-rep files; the
/// launch the results file records for each side names the kernel ncu saw run.
#[test]
#[ignore = "needs a CUDA GPU and ncu"]
fn a_profiled_shape_has_figures_for_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let shape = "b2h8s512d64_f16";
    let out = ci_gate()
        .args([
            "local",
            "--base-kernels",
            "kernels",
            "--ab-always",
            "--no-compare",
        ])
        .args([
            "--rounds",
            "2",
            "--shape",
            shape,
            "--profile",
            shape,
            "--format",
            "json",
        ])
        .arg("--profile-dir")
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("results.json"))
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        stderr_text(&out.stderr)
    );
    let rows = json_of(&out);
    let profile = &rows[0]["profile"];
    assert_eq!(profile["reason"], "requested", "{rows:#}");
    // The kernel launched (kernels/README.md, "Small grids, long sequences"): `NAME_small`
    // where NAME's one-tile grid, ceil(512 / rows_per_block) x 2 x 8 CTAs, has fewer CTAs than
    // the device has SMs, else NAME. rows_per_block is 64 for the wgmma d64 kernel (compute
    // capability 9.0: 128 CTAs) and 128 for the mma.sync ones (64 CTAs); both come with
    // `NAME_small`. (An H100 or H200 has 132 SMs: `_small` either way; an L4 58.)
    let env = json_of(&ci_gate().args(["env", "--json"]).output().unwrap());
    let rows_per_block: u64 = if env["compute_capability"] == "9.0" {
        64
    } else {
        128
    };
    let ctas = 512_u64.div_ceil(rows_per_block) * 2 * 8;
    let sms = env["sm_count"]
        .as_u64()
        .unwrap_or_else(|| panic!("env --json has no sm_count: {env:#}"));
    let expected = if ctas < sms {
        "attention_fwd_f16_d64_small"
    } else {
        "attention_fwd_f16_d64"
    };
    for side in ["base", "candidate"] {
        let p = &profile[side];
        assert_eq!(p["kernel"], expected, "{side}: {profile:#}");
        for figure in [
            "duration_us",
            "registers_per_thread",
            "achieved_occupancy_pct",
        ] {
            assert!(
                p[figure].as_f64().unwrap_or(0.0) > 0.0,
                "{side} {figure}: {p:#}"
            );
        }
        let file = p["report_file"].as_str().unwrap();
        assert!(dir.path().join(file).is_file(), "{file} missing");
    }
    let results: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("results.json")).unwrap()).unwrap();
    let recorded = &results["shapes"][0];
    for (field, side) in [("launch", "candidate"), ("base_launch", "base")] {
        assert_eq!(
            recorded[field]["kernel"], profile[side]["kernel"],
            "{field}: {recorded:#}"
        );
        // grid.y is batch · heads; grid.x as the host sized it
        assert_eq!(recorded[field]["grid"][1], 16, "{field}: {recorded:#}");
    }
}

/// The config's peers run with the kernel unless `--no-peers`, which leaves a note instead.
#[test]
#[ignore = "needs a CUDA GPU (and PyTorch for the peers)"]
fn peers_are_measured_unless_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let results = |extra: &[&str]| {
        let out = dir.path().join("results.json");
        let run = ci_gate()
            .args(["local", "--no-base", "--no-compare", "--rounds", "2"])
            .args(["--shape", "b1h8s512d64_f16", "--format", "json", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        assert!(
            matches!(run.status.code(), Some(0 | 1)),
            "{}",
            stderr_text(&run.stderr)
        );
        let text = std::fs::read_to_string(&out).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()
    };
    let with = results(&[]);
    let notes = with["notes"].to_string();
    assert!(
        !notes.contains("peer"),
        "the peers were left out (this test needs PyTorch beside the GPU): {notes}"
    );
    let peers = with["shapes"][0]["peers"].as_array().unwrap();
    assert_eq!(
        peers.len(),
        2,
        "torch-sdpa-cudnn and torch-sdpa-flash: {peers:#?}"
    );
    let without = results(&["--no-peers"]);
    assert!(
        without["shapes"][0]["peers"]
            .as_array()
            .is_none_or(|p| p.is_empty()),
        "{without:#}"
    );
    assert!(
        without["notes"].to_string().contains("--no-peers"),
        "{}",
        without["notes"]
    );
}
