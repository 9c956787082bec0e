//! The NVRTC sandbox fails closed: where Landlock or the seccomp filter cannot confine the
//! compiler, untrusted source is not compiled, unless the runner's owner set
//! `CI_GATE_ALLOW_UNCONFINED_NVRTC=1`; where both hold, at any Landlock ABI, it compiles.
//!
//! Other kernels are made here, on any machine, by a seccomp filter on `ci-gate compile`
//! (inherited by its sandboxed NVRTC child):
//! - without Landlock: the three Landlock system calls fail with ENOSYS (no Landlock in the
//!   kernel) or EOPNOTSUPP (built in, not enabled), as on such a kernel;
//! - without seccomp filters: `seccomp` fails with EINVAL, as on a kernel built without them;
//! - with an older Landlock ABI (Ubuntu 22.04's 5.15 has 1, 24.04's 6.8 has 4): the version
//!   query of `landlock_create_ruleset` is answered with that ABI by this test, through a
//!   seccomp user notification; the ruleset the child then builds for that ABI is really
//!   created and enforced by this machine's kernel.
//!
//! The system call numbers are libc's for this target; the filters' architecture check is
//! written for x86-64 and aarch64, elsewhere the module is not built.
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]

use crate::common::stderr_text;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::require_nvrtc;
use ci_gate::kernel::sandbox::ALLOW_UNCONFINED_ENV;

/// `AUDIT_ARCH_*` of linux/audit.h: what `seccomp_data.arch` holds for this target.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// A classic BPF program: the Landlock system calls of this architecture fail with `errno`,
/// everything else is allowed.
fn landlock_filter(errno: i32) -> Vec<libc::sock_filter> {
    failing_filter(
        [
            libc::SYS_landlock_create_ruleset,
            libc::SYS_landlock_add_rule,
            libc::SYS_landlock_restrict_self,
        ],
        errno,
    )
}

/// A classic BPF program: the three system calls `calls` of this architecture fail with
/// `errno`, everything else is allowed.
fn failing_filter(calls: [libc::c_long; 3], errno: i32) -> Vec<libc::sock_filter> {
    let (load, jeq, ret) = bpf();
    // struct seccomp_data: the system call number at offset 0, the architecture at 4.
    vec![
        /* 0 */ load(4),
        /* 1 */ jeq(AUDIT_ARCH, 0, 4), // another architecture: allow (6)
        /* 2 */ load(0),
        /* 3 */ jeq(calls[0] as u32, 3, 0), // -> 7
        /* 4 */ jeq(calls[1] as u32, 2, 0), // -> 7
        /* 5 */ jeq(calls[2] as u32, 1, 0), // -> 7
        /* 6 */ ret(libc::SECCOMP_RET_ALLOW),
        /* 7 */ ret(libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA)),
    ]
}

/// Installs [`landlock_filter`] in the child between fork and exec: no_new_privs first (an
/// unprivileged process may install a filter only then), then the filter, which the child's
/// own children (the sandboxed NVRTC process) inherit and cannot remove.
pub(crate) fn without_landlock(cmd: &mut Command, errno: i32) {
    with_filter(cmd, landlock_filter(errno));
}

/// Installs `filter` in the child between fork and exec (see [`without_landlock`]).
fn with_filter(cmd: &mut Command, filter: Vec<libc::sock_filter>) {
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
pub(crate) fn kernels(dir: &Path) {
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
    let mut cmd = compile_command(dir, allow);
    without_landlock(&mut cmd, errno);
    cmd.output()
        .expect("ci-gate compile under the seccomp filter")
}

/// `ci-gate compile --kernels DIR/kernels --arch sm_89`, the opt-out set to `allow` when
/// given, else removed.
fn compile_command(dir: &Path, allow: Option<&str>) -> Command {
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
    cmd
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
            let stderr = stderr_text(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{allow:?} {why}\n{stdout}\n{stderr}"
            );
            for file in ["attention.cu", "reference.cu", "util.cu"] {
                let path = dir.path().join("kernels").join(file);
                let line = format!(
                    "{} sm_89: {} (sm_89): not compiled, because the sandbox cannot confine NVRTC here: {why}; a runner's owner who accepts that risk sets CI_GATE_ALLOW_UNCONFINED_NVRTC=1 in the runner's own environment (docs/MEASURING.md, \"Compiling reads nothing\")",
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
        let stderr = stderr_text(&out.stderr);
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
            "warning: NVRTC compiles untrusted kernel source without the full sandbox, because {why}, as CI_GATE_ALLOW_UNCONFINED_NVRTC=1 in this runner's environment allows (what of the sandbox could be set up, the lexical check of includes and the empty environment still apply)"
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
    let stderr = stderr_text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "Landlock (ABI 1, Linux 5.13, or later) and seccomp filters are required where the tests run:\n{stdout}\n{stderr}"
    );
    assert_eq!(stdout.matches("bytes of CUBIN").count(), 3, "{stdout}");
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// Where the seccomp filter cannot be installed (a kernel built without seccomp filters), the
/// sandbox does not hold although Landlock does: refused, naming the opt-out; with it, compiled
/// with the warning.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn without_seccomp_filters_nothing_is_compiled_and_the_opt_out_is_named() {
    require_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("kernels")).unwrap();
    kernels(&dir.path().join("kernels"));
    let why = "the sandbox's seccomp filter could not be installed (the kernel refused it: Invalid argument (os error 22))";
    let run = |allow| {
        let mut cmd = compile_command(dir.path(), allow);
        // `seccomp` fails as where the kernel has none; the child's prctl calls still work.
        with_filter(
            &mut cmd,
            failing_filter(
                [libc::SYS_seccomp, libc::SYS_seccomp, libc::SYS_seccomp],
                libc::EINVAL,
            ),
        );
        let out = cmd
            .output()
            .expect("ci-gate compile under the seccomp filter");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr_text(&out.stderr),
        )
    };
    let (code, stdout, stderr) = run(None);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    for file in ["attention.cu", "reference.cu", "util.cu"] {
        let path = dir.path().join("kernels").join(file);
        let line = format!(
            "{} sm_89: {} (sm_89): not compiled, because the sandbox cannot confine NVRTC here: {why}; a runner's owner who accepts that risk sets CI_GATE_ALLOW_UNCONFINED_NVRTC=1 in the runner's own environment (docs/MEASURING.md, \"Compiling reads nothing\")",
            path.display(),
            path.display()
        );
        assert!(
            stdout.lines().any(|l| l == line),
            "{file}: no line\n{line}\nin\n{stdout}"
        );
    }
    assert!(!stdout.contains("bytes of CUBIN"), "{stdout}");

    let (code, stdout, stderr) = run(Some("1"));
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.matches("bytes of CUBIN").count(), 3, "{stdout}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "once per process: {stderr}");
    assert!(
        warnings[0].starts_with(&format!(
            "warning: NVRTC compiles untrusted kernel source without the full sandbox, because {why}, as CI_GATE_ALLOW_UNCONFINED_NVRTC=1 in this runner's environment allows"
        )),
        "{stderr}"
    );
}

/// What [`on_landlock_abi`] saw of the sandboxed children's Landlock calls.
#[derive(Debug, Default)]
struct LandlockCalls {
    /// Version queries, each answered with the faked ABI.
    queries: usize,
    /// The rulesets created (by the real kernel): handled_access_fs, handled_access_net,
    /// scoped.
    rulesets: Vec<[u64; 3]>,
}

/// Runs `cmd` as on a kernel whose Landlock is ABI `abi`: `landlock_create_ruleset`'s version
/// query is answered `abi` by this thread (a seccomp user notification), every other call of
/// it goes on to this machine's kernel, which creates the ruleset asked for, and the rulesets
/// are recorded (read from the caller's memory).
fn on_landlock_abi(mut cmd: Command, abi: i64) -> (Output, LandlockCalls) {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::FileExt;
    let (load, jeq, ret) = bpf();
    let filter = [
        /* 0 */ load(4),
        /* 1 */ jeq(AUDIT_ARCH, 0, 3), // another architecture: allow (5)
        /* 2 */ load(0),
        /* 3 */ jeq(libc::SYS_landlock_create_ruleset as u32, 0, 1), // -> 4, else 5
        /* 4 */ ret(libc::SECCOMP_RET_USER_NOTIF),
        /* 5 */ ret(libc::SECCOMP_RET_ALLOW),
    ];
    let (tx, rx) = std::sync::mpsc::channel();
    // The filter goes on a thread of its own (no_new_privs and seccomp are per thread), which
    // starts the command: the command inherits it, this thread and the test's others do not.
    let runner = std::thread::spawn(move || {
        let prog = libc::sock_fprog {
            len: filter.len() as libc::c_ushort,
            filter: filter.as_ptr().cast_mut(),
        };
        // SAFETY: prctl and seccomp read the flag and the program (live locals); seccomp
        // returns a new descriptor that nothing else owns.
        let listener = unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                panic!("no_new_privs: {}", std::io::Error::last_os_error());
            }
            let fd = libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                &prog as *const libc::sock_fprog,
            );
            assert!(fd >= 0, "seccomp: {}", std::io::Error::last_os_error());
            OwnedFd::from_raw_fd(fd as i32)
        };
        tx.send(listener).unwrap();
        cmd.output().expect("the command under the seccomp filter")
    });
    let listener = rx.recv().expect("the listener");
    let mut calls = LandlockCalls::default();
    while !runner.is_finished() {
        let mut pfd = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, a live local.
        if unsafe { libc::poll(&mut pfd, 1, 50) } <= 0 || pfd.revents & libc::POLLIN == 0 {
            continue;
        }
        // SAFETY: the kernel wants a zeroed seccomp_notif (plain integers) and fills it.
        let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: RECV writes one seccomp_notif into `req`.
        if unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                &mut req,
            )
        } != 0
        {
            continue; // the caller died in between
        }
        // SAFETY: plain integers, filled below.
        let mut resp: libc::seccomp_notif_resp = unsafe { std::mem::zeroed() };
        resp.id = req.id;
        let [attr, size, flags, ..] = req.data.args;
        if attr == 0 && size == 0 && flags == 1 {
            // LANDLOCK_CREATE_RULESET_VERSION
            calls.queries += 1;
            resp.val = abi;
        } else {
            if attr != 0 {
                let mut bytes = [0u8; 24];
                let n = (size as usize).min(bytes.len());
                let mem = std::fs::File::open(format!("/proc/{}/mem", req.pid))
                    .expect("the caller's memory");
                mem.read_exact_at(&mut bytes[..n], attr)
                    .expect("the ruleset's attributes");
                let word =
                    |i: usize| u64::from_ne_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap());
                calls.rulesets.push([word(0), word(1), word(2)]);
            }
            resp.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32;
        }
        // SAFETY: SEND reads one seccomp_notif_resp from `resp`. A caller that died in
        // between makes it fail, which changes nothing here.
        let _ = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SEND,
                &mut resp,
            )
        };
    }
    (runner.join().expect("the command's thread"), calls)
}

/// The instructions the filters here are made of: load a word of seccomp_data, jump on
/// equality, return.
#[allow(clippy::type_complexity)]
fn bpf() -> (
    fn(u32) -> libc::sock_filter,
    fn(u32, u8, u8) -> libc::sock_filter,
    fn(u32) -> libc::sock_filter,
) {
    (
        |offset| libc::sock_filter {
            code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
            jt: 0,
            jf: 0,
            k: offset,
        },
        |k, jt, jf| libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt,
            jf,
            k,
        },
        |k| libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k,
        },
    )
}

/// On the kernels runners have today — Landlock ABI 1 (Ubuntu 22.04, Linux 5.15) and ABI 4
/// (Ubuntu 24.04, Linux 6.8) — the sandbox holds (Landlock's file-system rights of that ABI,
/// and the seccomp filter for the rest), so the kernels compile confined: no refusal, no
/// warning, without the opt-out. The rulesets the children created are those of that ABI.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn on_landlock_abi_1_and_4_the_sandbox_holds_and_compiles() {
    use landlock::{ABI, Access, AccessFs, AccessNet};
    require_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("kernels")).unwrap();
    kernels(&dir.path().join("kernels"));
    for (abi, landlock) in [(1, ABI::V1), (4, ABI::V4)] {
        let (out, calls) = on_landlock_abi(compile_command(dir.path(), None), abi);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = stderr_text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "ABI {abi}\n{stdout}\n{stderr}");
        assert_eq!(
            stdout.matches("bytes of CUBIN").count(),
            3,
            "ABI {abi}\n{stdout}"
        );
        assert!(!stderr.contains("warning"), "ABI {abi}\n{stderr}");
        // One ruleset per compile, with every file-system right of that ABI (and TCP from
        // ABI 4), no scopes (ABI 6): what such a kernel enforces.
        assert!(calls.queries >= 3, "ABI {abi}: {calls:?}");
        let expected = [
            AccessFs::from_all(landlock).bits(),
            AccessNet::from_all(landlock).bits(),
            0,
        ];
        assert_eq!(calls.rulesets, vec![expected; 3], "ABI {abi}");
    }
}
