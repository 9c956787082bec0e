//! `ci-gate env`, the runner's pre-flight, through the binary and without a GPU: one line per
//! check whatever fails; without NVRTC its line fails, naming what to install, and the command
//! exits 2; with NVRTC (CI sets CI_GATE_REQUIRE_NVRTC=1, so there these tests run) its line and
//! the sandbox's pass; where the sandbox cannot be enforced its line fails unless the runner's
//! owner opted out (then a warning).

use std::process::{Command, Output};

use crate::common::{bin, require_nvrtc, stderr_text};
use ci_gate::kernel::sandbox::ALLOW_UNCONFINED_ENV;

/// The checks `env` prints, in order.
const CHECKS: [&str; 5] = ["NVIDIA driver", "GPU", "NVRTC", "NVRTC sandbox", "NVML"];

/// The pre-flight's lines of `stdout`, as (status, check name, message), in order.
fn checks(stdout: &str) -> Vec<(String, String, String)> {
    stdout
        .lines()
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let (status, rest) = l.split_once("  ").unwrap();
            let rest = rest.trim_start();
            let name = CHECKS
                .iter()
                .filter(|n| rest.starts_with(&format!("{n}  ")))
                .max_by_key(|n| n.len())
                .unwrap_or_else(|| panic!("not a check line: {l:?}"));
            let message = rest[name.len()..].trim_start().to_owned();
            (status.trim().to_owned(), name.to_string(), message)
        })
        .collect()
}

/// The line of check `name`: (status, message).
fn check<'a>(lines: &'a [(String, String, String)], name: &str) -> (&'a str, &'a str) {
    let (status, _, message) = lines
        .iter()
        .find(|(_, n, _)| n == name)
        .unwrap_or_else(|| panic!("no line {name}: {lines:?}"));
    (status, message)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr_text(&out.stderr),
    )
}

/// `ci-gate env` as the runner's owner would run it (the opt-out removed).
fn env_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ci-gate"));
    cmd.arg("env")
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_ACTIONS")
        .env_remove(ALLOW_UNCONFINED_ENV);
    cmd
}

#[test]
#[cfg_attr(
    ci_gate_system_nvrtc,
    ignore = "NVRTC is installed system-wide here; this test checks the path without it"
)]
fn without_nvrtc_env_fails_naming_it_and_prints_every_check() {
    let out = bin()
        .arg("env")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    let lines = checks(&stdout);
    let names: Vec<&str> = lines.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(names, CHECKS, "{stdout}");
    let (status, message) = check(&lines, "NVRTC");
    assert_eq!(status, "FAIL", "{stdout}");
    assert!(message.starts_with("not found (libnvrtc.so"), "{message}");
    assert!(message.contains(": install NVRTC 1"), "{message}");
    assert!(message.contains("LD_LIBRARY_PATH"), "{message}");
    // The sandbox confines NVRTC: not tried without it.
    assert_eq!(check(&lines, "NVRTC sandbox").0, "skip", "{stdout}");
    assert!(
        stderr.starts_with("error: this runner cannot produce a verdict ("),
        "{stderr}"
    );
    assert!(stderr.contains("NVRTC: not found"), "{stderr}");
    // The same in JSON.
    let out = bin()
        .args(["env", "--json"])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    let nvrtc = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "NVRTC")
        .unwrap();
    assert_eq!(nvrtc["status"], "fail", "{v:#}");
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn with_nvrtc_its_line_and_the_sandbox_s_pass() {
    require_nvrtc();
    let out = env_command().output().unwrap();
    let (stdout, stderr) = text(&out);
    let lines = checks(&stdout);
    let (status, message) = check(&lines, "NVRTC");
    assert_eq!(status, "ok", "{stdout}");
    assert!(
        message.contains("; this ci-gate needs NVRTC 1"),
        "{message}"
    );
    let (status, message) = check(&lines, "NVRTC sandbox");
    assert_eq!(status, "ok", "{stdout}");
    assert!(message.contains("compiled confined"), "{message}");
    if ci_gate::gpu::driver_present() {
        return;
    }
    // No driver here: that check fails, the GPU is not opened, and the command fails for
    // that alone.
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert_eq!(check(&lines, "NVIDIA driver").0, "FAIL", "{stdout}");
    assert!(
        check(&lines, "NVIDIA driver")
            .1
            .contains("no NVIDIA driver found"),
        "{stdout}"
    );
    assert_eq!(check(&lines, "GPU").0, "skip", "{stdout}");
    assert!(
        stderr.contains("(1 of 5 checks failed): NVIDIA driver: no NVIDIA driver found"),
        "{stderr}"
    );
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn where_the_sandbox_cannot_hold_its_line_fails_unless_the_owner_opted_out() {
    use crate::nvrtc_fail_closed::without_landlock;
    require_nvrtc();
    // This kernel's Landlock calls fail as on a kernel without Landlock (ENOSYS).
    let mut cmd = env_command();
    without_landlock(&mut cmd, libc::ENOSYS);
    let out = cmd.output().unwrap();
    let (stdout, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let lines = checks(&stdout);
    assert_eq!(check(&lines, "NVRTC").0, "ok", "{stdout}");
    let (status, message) = check(&lines, "NVRTC sandbox");
    assert_eq!(status, "FAIL", "{stdout}");
    assert!(
        message.starts_with("cannot be enforced here (this Linux kernel has no Landlock)"),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "set {ALLOW_UNCONFINED_ENV}=1 in the runner's own environment"
        )),
        "{message}"
    );
    assert!(stderr.contains("NVRTC sandbox"), "{stderr}");
    // The owner's opt-out: a warning, not a failure.
    let mut cmd = env_command();
    cmd.env(ALLOW_UNCONFINED_ENV, "1");
    without_landlock(&mut cmd, libc::ENOSYS);
    let out = cmd.output().unwrap();
    let (stdout, stderr) = text(&out);
    let lines = checks(&stdout);
    let (status, message) = check(&lines, "NVRTC sandbox");
    assert_eq!(status, "warn", "{stdout}");
    assert!(message.contains("less confined"), "{message}");
    assert!(!stderr.contains("NVRTC sandbox"), "{stderr}");
}
