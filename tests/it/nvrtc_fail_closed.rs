//! The NVRTC sandbox fails closed: where Landlock cannot confine the compiler, untrusted source
//! is not compiled, unless the runner's owner set `CI_GATE_ALLOW_UNCONFINED_NVRTC=1`.
//!
//! A kernel without Landlock is made here, on any machine: `ci-gate compile` runs under a
//! seccomp filter (inherited by its sandboxed NVRTC child) that answers the three Landlock
//! system calls with ENOSYS (no Landlock in the kernel) or EOPNOTSUPP (built in, not
//! enabled), as such a kernel does. The system call numbers are libc's for this target;
//! the filter's architecture check is written for x86-64 and aarch64, elsewhere the module
//! is not built.
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::require_nvrtc;
use ci_gate::gpu::sandbox::ALLOW_UNCONFINED_ENV;

/// `AUDIT_ARCH_*` of linux/audit.h: what `seccomp_data.arch` holds for this target.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// A classic BPF program: the Landlock system calls of this architecture fail with `errno`,
/// everything else is allowed.
fn landlock_filter(errno: i32) -> Vec<libc::sock_filter> {
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let load = |offset: u32| stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, offset);
    let ret = |k: u32| stmt(libc::BPF_RET | libc::BPF_K, k);
    // struct seccomp_data: the system call number at offset 0, the architecture at 4.
    vec![
        /* 0 */ load(4),
        /* 1 */ jeq(AUDIT_ARCH, 0, 4), // another architecture: allow (6)
        /* 2 */ load(0),
        /* 3 */ jeq(libc::SYS_landlock_create_ruleset as u32, 3, 0), // -> 7
        /* 4 */ jeq(libc::SYS_landlock_add_rule as u32, 2, 0), // -> 7
        /* 5 */ jeq(libc::SYS_landlock_restrict_self as u32, 1, 0), // -> 7
        /* 6 */ ret(libc::SECCOMP_RET_ALLOW),
        /* 7 */ ret(libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA)),
    ]
}

/// Installs [`landlock_filter`] in the child between fork and exec: no_new_privs first (an
/// unprivileged process may install a filter only then), then the filter, which the child's
/// own children (the sandboxed NVRTC process) inherit and cannot remove.
fn without_landlock(cmd: &mut Command, errno: i32) {
    let filter = landlock_filter(errno);
    // SAFETY: the closure runs in the forked child before exec and makes two prctl system
    // calls on memory allocated before the fork (no allocation, no lock).
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as libc::c_ushort,
                filter: filter.as_ptr().cast_mut(),
            };
            let none: libc::c_ulong = 0;
            if libc::prctl(
                libc::PR_SET_NO_NEW_PRIVS,
                1 as libc::c_ulong,
                none,
                none,
                none,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &prog as *const libc::sock_fprog,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Three small kernel files, as `ci-gate compile` wants them, in `dir`: an attention.cu with
/// the four entry points the host loads (empty), and two harness files.
fn kernels(dir: &Path) {
    for name in ["attention", "reference", "util"] {
        let mut text =
            format!("extern \"C\" __global__ void {name}_k(float* o) {{ o[0] = 1.0f; }}\n");
        if name == "attention" {
            for entry in ["f16_d64", "bf16_d64", "f16_d128", "bf16_d128"] {
                text.push_str(&format!(
                    "extern \"C\" __constant__ int attention_fwd_{entry}_launch[3] = {{64, 128, 0}};\n\
                     extern \"C\" __global__ void attention_fwd_{entry}(const unsigned short* q, \
                     const unsigned short* k, const unsigned short* v, float* o, int s, int d, \
                     float sc, int c) {{}}\n"
                ));
            }
        }
        std::fs::write(dir.join(format!("{name}.cu")), text).unwrap();
    }
}

/// `ci-gate compile --kernels DIR --arch sm_89` with the Landlock calls failing with `errno`;
/// the opt-out set to `allow` when given, else removed.
fn compile_without_landlock(dir: &Path, errno: i32, allow: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ci-gate"));
    cmd.env("NO_COLOR", "1")
        .env_remove("GITHUB_ACTIONS")
        .env_remove(ALLOW_UNCONFINED_ENV)
        .env("CI_GATE_CACHE_DIR", dir.join("cache"))
        .args(["compile", "--arch", "sm_89", "--kernels"])
        .arg(dir.join("kernels"));
    if let Some(v) = allow {
        cmd.env(ALLOW_UNCONFINED_ENV, v);
    }
    without_landlock(&mut cmd, errno);
    cmd.output()
        .expect("ci-gate compile under the seccomp filter")
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn without_landlock_nothing_is_compiled_and_the_opt_out_is_named() {
    require_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("kernels")).unwrap();
    kernels(&dir.path().join("kernels"));
    let cases = [
        (libc::ENOSYS, "this Linux kernel has no Landlock"),
        (
            libc::EOPNOTSUPP,
            "this Linux kernel has Landlock but does not enable it (the lsm= boot parameter)",
        ),
    ];
    // Unset, and any value but 1: refused.
    for allow in [None, Some("0"), Some("true"), Some("")] {
        for (errno, why) in cases {
            let out = compile_without_landlock(dir.path(), errno, allow);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{allow:?} {why}\n{stdout}\n{stderr}"
            );
            for file in ["attention.cu", "reference.cu", "util.cu"] {
                let path = dir.path().join("kernels").join(file);
                let line = format!(
                    "{} sm_89: {} (sm_89): not compiled, because the sandbox cannot confine NVRTC here: {why}; a runner's owner who accepts that risk sets CI_GATE_ALLOW_UNCONFINED_NVRTC=1 in the runner's own environment (README, \"Compiling reads nothing\")",
                    path.display(),
                    path.display()
                );
                assert!(
                    stdout.lines().any(|l| l == line),
                    "{allow:?} {file}: no line\n{line}\nin\n{stdout}"
                );
            }
            assert!(!stdout.contains("bytes of CUBIN"), "{stdout}");
            assert!(
                stderr.contains("3 of 3 compiles failed or were refused"),
                "{stderr}"
            );
            assert!(!stderr.contains("warning"), "{stderr}");
            // Nothing compiled is left anywhere: `compile` keeps no cache, and the directory
            // holds only what the test wrote.
            let mut left: Vec<String> = walk(dir.path());
            left.sort();
            assert_eq!(
                left,
                [
                    "kernels/attention.cu",
                    "kernels/reference.cu",
                    "kernels/util.cu"
                ],
                "{allow:?} {why}"
            );
        }
    }
    // The runner's owner accepts the risk: it compiles, and says so.
    for (errno, why) in cases {
        let out = compile_without_landlock(dir.path(), errno, Some("1"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{why}\n{stdout}\n{stderr}");
        for file in ["attention.cu", "reference.cu", "util.cu"] {
            let path = dir.path().join("kernels").join(file);
            let ok = format!("{} sm_89: ok (", path.display());
            assert!(
                stdout
                    .lines()
                    .any(|l| l.starts_with(&ok) && l.ends_with(" bytes of CUBIN)")),
                "{file}: {stdout}"
            );
        }
        let warning = format!(
            "warning: NVRTC compiles untrusted kernel source without the full sandbox, because {why}, as CI_GATE_ALLOW_UNCONFINED_NVRTC=1 in this runner's environment allows (only the lexical check of includes and the empty environment still apply)"
        );
        let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(warnings, [warning.as_str()], "once per process: {stderr}");
    }
}

/// Every file under `root`, relative to it.
fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out
}

/// The filter is what the test above relies on: without it, on this machine, the same
/// command compiles confined (no warning), so the refusal above comes from the filter.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn with_landlock_the_same_compile_is_confined() {
    require_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("kernels")).unwrap();
    kernels(&dir.path().join("kernels"));
    let out = Command::new(env!("CARGO_BIN_EXE_ci-gate"))
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_ACTIONS")
        .env_remove(ALLOW_UNCONFINED_ENV)
        .args(["compile", "--arch", "sm_89", "--kernels"])
        .arg(dir.path().join("kernels"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "Landlock (ABI 6, Linux 6.12) is required where the tests run:\n{stdout}\n{stderr}"
    );
    assert_eq!(stdout.matches("bytes of CUBIN").count(), 3, "{stdout}");
    assert!(!stderr.contains("warning"), "{stderr}");
}
