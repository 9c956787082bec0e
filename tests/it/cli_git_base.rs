//! `local` reads its base kernels with git (the merge-base with the default branch, or
//! `--base REF`) before it touches the GPU: without a GPU the base is still resolved, and a
//! bad revision is an error naming it. The working tree is never touched.

use crate::common::stderr_has;
use std::path::Path;
use std::process::Command;

use crate::common::bin;
use predicates::prelude::*;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(ok.status.success(), "git {args:?}: {ok:?}");
}

/// A repository with `main` (the shipped kernels) and a branch `feature` that edits them.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = dir.path();
    std::fs::create_dir_all(d.join("kernels")).unwrap();
    std::fs::create_dir_all(d.join("configs")).unwrap();
    for f in ["attention.cu", "reference.cu", "util.cu"] {
        std::fs::copy(root.join("kernels").join(f), d.join("kernels").join(f)).unwrap();
    }
    std::fs::copy(root.join("configs/pr.yaml"), d.join("configs/pr.yaml")).unwrap();
    git(d, &["init", "-q", "-b", "main"]);
    git(d, &["add", "."]);
    git(d, &["commit", "-qm", "shipped"]);
    git(d, &["checkout", "-qb", "feature"]);
    let mut src = std::fs::read_to_string(d.join("kernels/attention.cu")).unwrap();
    src.push_str("// a change\n");
    std::fs::write(d.join("kernels/attention.cu"), src).unwrap();
    git(d, &["commit", "-qam", "change"]);
    dir
}

#[test]
fn the_base_is_resolved_with_git_before_the_gpu_is_needed() {
    let dir = repo();
    let before = std::fs::read_to_string(dir.path().join("kernels/attention.cu")).unwrap();
    // Default: the merge-base with main, from a subdirectory; then the missing GPU stops it.
    bin()
        .current_dir(dir.path().join("kernels"))
        .env_remove("GITHUB_SHA")
        .args(["local"])
        .assert()
        .code(2)
        .stderr(stderr_has("ci-gate: base kernels from merge-base "))
        .stderr(stderr_has("no NVIDIA driver found"));
    bin()
        .current_dir(dir.path())
        .args(["local", "--base", "main"])
        .assert()
        .code(2)
        .stderr(stderr_has("ci-gate: base kernels from main"))
        .stderr(stderr_has("no NVIDIA driver found"));
    // Outside a repository: no A/B, and it says so.
    let bare = tempfile::tempdir().unwrap();
    bin()
        .current_dir(bare.path())
        .env("GIT_CEILING_DIRECTORIES", bare.path().parent().unwrap())
        .args(["local", "--config"])
        .arg(dir.path().join("configs/pr.yaml"))
        .arg("--kernels")
        .arg(dir.path().join("kernels"))
        .assert()
        .code(2)
        .stderr(stderr_has("not in a git repository"));
    // In a repository with no default branch: no A/B, and it says so.
    let lone = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .current_dir(lone.path())
            .args(args)
            .output()
            .unwrap()
    };
    git(&["init", "-q", "-b", "topic"]);
    bin()
        .current_dir(lone.path())
        .args(["local", "--config"])
        .arg(dir.path().join("configs/pr.yaml"))
        .arg("--kernels")
        .arg(dir.path().join("kernels"))
        .assert()
        .code(2)
        .stderr(stderr_has("no merge-base with a default branch"));
    bin()
        .current_dir(dir.path())
        .args(["local", "--base", "no-such-branch"])
        .assert()
        .code(2)
        .stderr(stderr_has("--base \"no-such-branch\": no such commit"));
    bin()
        .current_dir(dir.path())
        .args(["local", "--base=--output=/tmp/x"])
        .assert()
        .code(2)
        .stderr(stderr_has("is not a git revision").or(stderr_has("no such commit")));
    let after = std::fs::read_to_string(dir.path().join("kernels/attention.cu")).unwrap();
    assert_eq!(before, after, "the working tree was touched");
}
