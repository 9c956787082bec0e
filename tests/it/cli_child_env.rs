//! Children of ci-gate get an allow-listed environment: a token in ci-gate's own
//! environment (as every Actions job has) never reaches them. Shown with a `git` of our own
//! on the PATH that writes down what it was given: `local --base REF` asks git for the
//! base's kernels before it needs a GPU.

use std::os::unix::fs::PermissionsExt;

use crate::common::bin;

#[test]
fn a_child_never_sees_a_token_of_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let bin_dir = dir.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let seen = dir.path().join("seen");
    let git = bin_dir.join("git");
    // Not the environment: the fake's output path is written into it, as a child cannot be
    // told anything through a variable it is not given.
    std::fs::write(
        &git,
        format!("#!/bin/sh\nenv >> '{}'\nexit 1\n", seen.display()),
    )
    .unwrap();
    std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let secrets = [
        ("GITHUB_TOKEN", "ghs_parent_secret_1"),
        ("GH_TOKEN", "ghs_parent_secret_2"),
        ("ACTIONS_RUNTIME_TOKEN", "parent_secret_3"),
        ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "parent_secret_4"),
        ("GIT_CONFIG_VALUE_0", "AUTHORIZATION: basic parent_secret_5"),
        ("CI_GATE_TOKEN", "parent_secret_6"),
    ];
    let mut cmd = bin();
    cmd.current_dir(dir.path())
        .env("PATH", &path)
        .env("CI_GATE_MARKER", "passed-on")
        .env_remove("GITHUB_SHA")
        .args(["local", "--base", "HEAD", "--config"])
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/pr.yaml"))
        .arg("--kernels")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels"));
    for (k, v) in secrets {
        cmd.env(k, v);
    }
    cmd.assert().code(2);
    let seen = std::fs::read_to_string(&seen).expect("ci-gate ran git");
    assert!(seen.contains(&format!("PATH={path}\n")), "{seen}");
    assert!(
        !seen.contains("CI_GATE_MARKER"),
        "git is no GPU child: {seen}"
    );
    for (name, value) in secrets {
        assert!(!seen.contains(name), "{name} reached git: {seen}");
        assert!(!seen.contains(value), "{name}'s value reached git: {seen}");
    }
}
