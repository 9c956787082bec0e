//! `ci-gate sanitize` and `--profile` through the binary where they cannot run: every way of
//! not running is exit 2 with a message that names what is missing (no GPU here).

use crate::common::stderr_has;
use crate::common::{bin, require_no_cuda_driver};
use predicates::prelude::*;

fn root() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn sanitize_without_compute_sanitizer_is_exit_2_and_says_so() {
    bin()
        .current_dir(root())
        .args(["sanitize"])
        .env("PATH", "/nonexistent")
        .env("CUDA_HOME", "/nonexistent")
        .assert()
        .code(2)
        .stderr(stderr_has("compute-sanitizer not found"))
        .stderr(stderr_has("--sanitizer PATH"));
    bin()
        .current_dir(root())
        .args(["sanitize", "--sanitizer", "/nonexistent/compute-sanitizer"])
        .assert()
        .code(2)
        .stderr(stderr_has("/nonexistent/compute-sanitizer: no such file"));
}

#[test]
#[cfg_attr(
    ci_gate_cuda_driver,
    ignore = "a CUDA driver is installed here; this test checks the path without a GPU"
)]
fn sanitize_without_a_gpu_is_exit_2_and_says_so() {
    // A stand-in executable for the tool: the GPU check comes before anything runs.
    let fake = if std::path::Path::new("/bin/true").is_file() {
        "/bin/true"
    } else {
        "/usr/bin/true"
    };
    require_no_cuda_driver();
    bin()
        .current_dir(root())
        .args(["sanitize", "--sanitizer", fake])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(stderr_has("sanitize needs a CUDA GPU"));
}

#[test]
fn sanitize_names_an_unknown_shape_and_a_missing_kernel() {
    bin()
        .current_dir(root())
        .args(["sanitize", "--shape", "b1h1s1d64_f32"])
        .assert()
        .code(2)
        .stderr(stderr_has("b1h1s1d64_f32"))
        .stderr(stderr_has("b1h2s77d64_causal_f16"));
    let empty = tempfile::tempdir().unwrap();
    bin()
        .current_dir(root())
        .args(["sanitize", "--kernels"])
        .arg(empty.path())
        .assert()
        .code(2)
        .stderr(stderr_has("attention.cu"));
    // Planted-bug kernels come without a harness: it must be named.
    bin()
        .current_dir(root())
        .args(["sanitize", "--kernels", "tests/sanitize/oob"])
        .assert()
        .code(2)
        .stderr(stderr_has("--harness"));
}

#[test]
fn the_default_sanitize_config_is_found_from_a_subdirectory() {
    bin()
        .current_dir(root().join("tests"))
        .args(["sanitize", "--shape", "nope"])
        .assert()
        .code(2)
        .stderr(stderr_has("sanitize.yaml"));
}

#[test]
fn an_unknown_profile_shape_is_refused_before_anything_runs() {
    bin()
        .current_dir(root())
        .args(["local", "--no-base", "--profile", "b9h9s9d64_f16"])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(stderr_has("--profile"))
        .stderr(stderr_has("b9h9s9d64_f16"));
    bin()
        .current_dir(root())
        .args(["ci", "--no-base", "--ncu", "/nonexistent/ncu", "--out"])
        .arg(std::env::temp_dir().join("ci-gate-cli-tools-results.json"))
        .assert()
        .code(2)
        .stderr(stderr_has("--ncu /nonexistent/ncu: no such file"));
}

#[test]
fn shard_and_device_mistakes_are_refused_before_anything_runs() {
    let config = ci_gate::config::Config::load(&root().join("configs/pr.yaml")).unwrap();
    // More shards than the run can fill: a shard with no shapes is an error, not an empty run.
    let n = config.shapes.len() as u32 + 1;
    let empty = (1..=n)
        .find(|&k| {
            ci_gate::shard::select(
                &config,
                &config.shapes,
                ci_gate::shard::ShardSpec { index: k, count: n },
            )
            .is_empty()
        })
        .expect("with more shards than shapes, one is empty");
    bin()
        .current_dir(root())
        .args(["local", "--no-base", "--shard", &format!("{empty}/{n}")])
        .assert()
        .code(2)
        .stderr(stderr_has("holds none of the run's"));
    bin()
        .current_dir(root())
        .args(["local", "--no-base", "--shard", "3/2"])
        .assert()
        .code(2)
        .stderr(stderr_has("is not a shard"));
    bin()
        .current_dir(root())
        .args(["local", "--no-base", "--devices", "0,0"])
        .assert()
        .code(2)
        .stderr(stderr_has("device 0 is named twice"));
    bin()
        .current_dir(root())
        .args(["local", "--shard", "1/2", "--devices", "0,1"])
        .assert()
        .code(2)
        .stderr(stderr_has("cannot be used with"));
}

/// Outside a repository `sanitize` names the flags to pass (issue 21), before it looks for
/// compute-sanitizer or a GPU.
#[test]
fn sanitize_outside_a_repository_names_the_flags_to_pass() {
    let dir = tempfile::tempdir().unwrap();
    bin()
        .current_dir(dir.path())
        .args(["sanitize"])
        .assert()
        .code(2)
        .stderr(stderr_has(
            "no configs/sanitize.yaml here or in any parent directory",
        ))
        .stderr(stderr_has("--config FILE"))
        .stderr(stderr_has("--kernels DIR"));
}

/// `selftest --help` offers the formats selftest has: table, json and markdown (issue 21).
#[test]
fn selftest_help_lists_only_its_formats() {
    let out = bin().args(["selftest", "--help"]).assert().success();
    let help = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(help.contains("table") && help.contains("json") && help.contains("markdown"));
    assert!(
        !help.contains("bmf") && !help.contains("benchmark-action"),
        "{help}"
    );
    bin()
        .args(["selftest", "--format", "bmf"])
        .assert()
        .code(2)
        .stderr(stderr_has("invalid value 'bmf'"));
}
