//! In GitHub Actions the runner owner's leave to compile unconfined
//! (`CI_GATE_ALLOW_UNCONFINED_NVRTC=1`) counts only from the self-hosted runner's own
//! environment file, never from the job's environment that a workflow's `env:` sets
//! (docs/RUNNER.md, "Runner settings"). Shown through the binary where the sandbox cannot
//! hold (Landlock made to fail by a seccomp filter, as in `nvrtc_fail_closed`):
//!
//! - `ci-gate compile` runs under a stand-in runner: a copy of `sh` installed as
//!   `RUNNER/bin/Runner.Worker`, which starts ci-gate as its child, so that ci-gate finds it
//!   among its ancestors and reads `RUNNER/.env` (or finds none there);
//! - a workflow's value, with no runner file or a runner file without it, is ignored with one
//!   warning and nothing is compiled; the runner file's value allows it; a runner file that
//!   others could have written is not used.
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::require_nvrtc;
use crate::nvrtc_fail_closed::{kernels, without_landlock};
use ci_gate::kernel::sandbox::ALLOW_UNCONFINED_ENV;

/// What the refusal says for each of the three files (Landlock missing: ENOSYS).
const WHY: &str = "this Linux kernel has no Landlock";

/// The warning of a compile the owner allowed where the sandbox does not hold.
const UNCONFINED: &str = "warning: NVRTC compiles untrusted kernel source without the full sandbox";

/// A runner installed in `DIR/actions-runner`: its `bin/Runner.Worker` is a copy of `sh`
/// (a copy, not a link: the walk reads the executable's own path from /proc).
fn stand_in_runner(dir: &Path) -> PathBuf {
    let root = dir.join("actions-runner");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    let worker = root.join("bin/Runner.Worker");
    std::fs::copy("/bin/sh", &worker).expect("a copy of /bin/sh");
    std::fs::set_permissions(&worker, std::fs::Permissions::from_mode(0o755)).unwrap();
    root
}

/// `ci-gate compile --arch sm_89 --kernels DIR/kernels` with `GITHUB_ACTIONS=true`, Landlock
/// failing, the job's environment holding `env` (the opt-out removed unless given), started
/// by `runner`'s worker when given (and then its child, not exec'd: `; exit`), else directly.
fn compile_in_actions(dir: &Path, runner: Option<&Path>, env: &[(&str, &str)]) -> Output {
    let ci_gate = env!("CARGO_BIN_EXE_ci-gate");
    let mut cmd = match runner {
        Some(root) => {
            let mut c = Command::new(root.join("bin/Runner.Worker"));
            c.args(["-c", "\"$@\"; exit $?", "Runner.Worker", ci_gate]);
            c
        }
        None => Command::new(ci_gate),
    };
    cmd.args(["compile", "--arch", "sm_89", "--kernels"])
        .arg(dir.join("kernels"))
        .env("NO_COLOR", "1")
        .env("GITHUB_ACTIONS", "true")
        .env_remove(ALLOW_UNCONFINED_ENV)
        .env_remove("CI_GATE_PYTHON")
        .env_remove("CI_GATE_CACHE_DIR")
        .env_remove("RUNNER_TEMP");
    for (k, v) in env {
        cmd.env(k, v);
    }
    without_landlock(&mut cmd, libc::ENOSYS);
    cmd.output()
        .expect("ci-gate compile under the seccomp filter")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Nothing compiled: exit 2, the refusal naming the opt-out for each file, no unconfined
/// compile.
fn assert_refused(dir: &Path, out: &Output, label: &str) {
    let (stdout, stderr) = text(out);
    assert_eq!(out.status.code(), Some(2), "{label}\n{stdout}\n{stderr}");
    for file in ["attention.cu", "reference.cu", "util.cu"] {
        let path = dir.join("kernels").join(file);
        let line = format!(
            "{} sm_89: {} (sm_89): not compiled, because the sandbox cannot confine NVRTC here: {WHY}; a runner's owner who accepts that risk sets CI_GATE_ALLOW_UNCONFINED_NVRTC=1 in the runner's own environment (docs/MEASURING.md, \"Compiling reads nothing\")",
            path.display(),
            path.display()
        );
        assert!(
            stdout.lines().any(|l| l == line),
            "{label}: no line\n{line}\nin\n{stdout}"
        );
    }
    assert!(!stdout.contains("bytes of CUBIN"), "{label}\n{stdout}");
    assert!(!stderr.contains(UNCONFINED), "{label}\n{stderr}");
}

/// Compiled, as the owner allowed: exit 0, three CUBINs, the unconfined warning.
fn assert_compiled(out: &Output, label: &str) {
    let (stdout, stderr) = text(out);
    assert_eq!(out.status.code(), Some(0), "{label}\n{stdout}\n{stderr}");
    assert_eq!(
        stdout.matches("bytes of CUBIN").count(),
        3,
        "{label}\n{stdout}"
    );
    assert_eq!(
        stderr.lines().filter(|l| l.starts_with(UNCONFINED)).count(),
        1,
        "{label}\n{stderr}"
    );
}

/// The lines of stderr that say a runner setting was ignored.
fn ignored_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("in this job's environment"))
        .collect()
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn a_workflow_cannot_allow_unconfined_nvrtc() {
    require_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("kernels")).unwrap();
    kernels(&dir.path().join("kernels"));
    let runner = stand_in_runner(dir.path());
    let workflow = [(ALLOW_UNCONFINED_ENV, "1")];

    // Under a runner that has no .env file: the workflow's value is ignored, said once.
    let out = compile_in_actions(dir.path(), Some(&runner), &workflow);
    assert_refused(dir.path(), &out, "runner without .env");
    let (_, stderr) = text(&out);
    let env_file = runner.join(".env");
    assert_eq!(
        ignored_lines(&stderr),
        [format!(
            "warning: CI_GATE_ALLOW_UNCONFINED_NVRTC in this job's environment is ignored: in GitHub Actions ci-gate takes it from the runner's environment file only, and this value is not the file's (a workflow's env: or $GITHUB_ENV set it, or the file changed after the runner started); the runner's environment file {} does not exist (docs/RUNNER.md, \"Runner settings\")",
            env_file.display()
        )],
        "{stderr}"
    );

    // A runner file with other settings but not this one: the same.
    std::fs::write(
        &env_file,
        "LANG=C.UTF-8\nCI_GATE_PYTHON=/opt/py/bin/python\n",
    )
    .unwrap();
    std::fs::set_permissions(&env_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = compile_in_actions(dir.path(), Some(&runner), &workflow);
    assert_refused(dir.path(), &out, "runner .env without the key");
    let (_, stderr) = text(&out);
    assert_eq!(ignored_lines(&stderr).len(), 1, "{stderr}");
    assert!(
        ignored_lines(&stderr)[0].ends_with(&format!(
            "the runner's environment file is {} (docs/RUNNER.md, \"Runner settings\")",
            env_file.display()
        )),
        "{stderr}"
    );

    // No runner among the ancestors (a job container; or ci-gate started outside a runner
    // with GITHUB_ACTIONS=true): still refused. (Where this suite itself runs inside a real
    // Actions job, that runner's file is read instead, and it does not allow this either.)
    let out = compile_in_actions(dir.path(), None, &workflow);
    assert_refused(dir.path(), &out, "no runner");
    let (_, stderr) = text(&out);
    assert_eq!(ignored_lines(&stderr).len(), 1, "{stderr}");
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn the_runner_file_allows_unconfined_nvrtc() {
    require_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("kernels")).unwrap();
    kernels(&dir.path().join("kernels"));
    let runner = stand_in_runner(dir.path());
    let env_file = runner.join(".env");
    std::fs::write(
        &env_file,
        "LANG=C.UTF-8\r\nCI_GATE_ALLOW_UNCONFINED_NVRTC=1\r\n",
    )
    .unwrap();
    std::fs::set_permissions(&env_file, std::fs::Permissions::from_mode(0o644)).unwrap();

    // The runner loads its file into every job, so the job's environment has the same value;
    // a step may also have unset it. Either way the file decides, silently.
    for env in [&[(ALLOW_UNCONFINED_ENV, "1")][..], &[]] {
        let out = compile_in_actions(dir.path(), Some(&runner), env);
        assert_compiled(&out, &format!("{env:?}"));
        let (_, stderr) = text(&out);
        assert_eq!(ignored_lines(&stderr), Vec::<&str>::new(), "{stderr}");
    }
    // A workflow that sets another value does not switch it off either: the file decides,
    // and the workflow's value is named as ignored.
    let out = compile_in_actions(dir.path(), Some(&runner), &[(ALLOW_UNCONFINED_ENV, "0")]);
    assert_compiled(&out, "workflow 0");
    let (_, stderr) = text(&out);
    assert_eq!(ignored_lines(&stderr).len(), 1, "{stderr}");

    // A file others could have written is not used, and says so (once).
    std::fs::set_permissions(&env_file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = compile_in_actions(dir.path(), Some(&runner), &[(ALLOW_UNCONFINED_ENV, "1")]);
    assert_refused(dir.path(), &out, "group- and world-writable .env");
    let (_, stderr) = text(&out);
    let lines = ignored_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains(&format!(
            "the runner's environment file {} is not used: users other than its owner can write it (mode 666)",
            env_file.display()
        )),
        "{stderr}"
    );
}
