//! NVRTC in a child process that has nothing of the runner to read.
//!
//! A kernel source is attacker text, and the compiler is a large program that reads files
//! when the text asks (`#include`, `#embed`, `__has_include`). So the compiler runs in a
//! child: the ci-gate executable itself, re-run with the hidden `nvrtc-sandbox` subcommand.
//!
//! - The parent sends the source, its NVRTC name and the options on stdin and reads the
//!   CUBIN or the log back from stdout (length-prefixed frames, below). The child's stderr is
//!   drained and never shown: what a crashing compiler prints there is not ours to publish.
//! - The child gets an empty environment but `LD_LIBRARY_PATH`, set to the one directory NVRTC
//!   was loaded from in the parent (found in /proc/self/maps), and a fresh empty temporary
//!   directory as its working directory.
//! - The child limits itself before it reads the request (address space, CPU time, no core
//!   file, few descriptors), closes every descriptor it inherited but the three standard
//!   ones, and moves its stdout aside so that nothing but the answer reaches the parent.
//! - It loads NVRTC and NVRTC's builtins library (`libnvrtc-builtins.so.MAJOR.MINOR`, which
//!   NVRTC would otherwise load while compiling, with libstdc++ from the system's library
//!   directories), then applies a Landlock ruleset that handles every file-system right the
//!   kernel's Landlock ABI has (and, where it has them, TCP and the scopes: abstract sockets,
//!   signals), and allows nothing: with both libraries loaded NVRTC 13 reads no file at all
//!   (found by trying: without the preload it fails with "failed to open
//!   libnvrtc-builtins.so.13.5"; with it, every shipped kernel compiles for sm_89, sm_90 and
//!   sm_90a under a ruleset with no rule). Only where the builtins library is not found under
//!   that name is reading (files, directories, executing) allowed beneath NVRTC's own
//!   directory, for NVRTC to load it from there.
//! - Then it installs a seccomp-BPF filter (`no_new_privs` set) that allows the few system
//!   calls NVRTC makes, which stay within the process, and refuses the rest with EPERM: no
//!   socket of any kind, no signal to another process, no other process's memory, no program,
//!   no namespace, no change to a file's mode, owner or times (see [`seccomp_filters`]). It
//!   confines on every kernel what Landlock confines only on recent ones (TCP from ABI 4,
//!   signals and abstract sockets from ABI 6) or on none (UDP and named UNIX sockets before
//!   ABI 9 and 10, file metadata).
//! - Then it compiles: no file of the runner, nor its environment (/proc/self/environ is a
//!   file), can be opened, and nothing outside the process can be reached.
//! - The parent kills the child past a wall-clock deadline.
//!
//! The sandbox fails closed. It holds on any Linux kernel with Landlock (ABI 1, Linux 5.13, or
//! later) and seccomp filters; where Landlock is missing or not enabled, restricts nothing,
//! or the seccomp filter cannot be installed (see [`enforcement_gap`]), the child compiles
//! nothing and answers with a refusal that names [`ALLOW_UNCONFINED_ENV`]. That variable is the
//! runner owner's decision, read from the runner's own environment by the parent (never from
//! anything a pull request sends) and passed in the request: with it set to `1`, the child
//! compiles as confined as the kernel allows, says so in its answer, and the parent prints a
//! warning once per process. The lexical check (`lexcheck`) has then still refused every
//! include form, and the compiler still sees an empty environment and an empty working
//! directory.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use wait_timeout::ChildExt;

use crate::ffi::{self, Compiled, Limit};

/// The hidden subcommand the child runs (see `cli::Command::NvrtcSandbox`).
pub(crate) const SUBCOMMAND: &str = "nvrtc-sandbox";

/// Wall-clock limit of one compile. The shipped attention.cu takes 11 s of CPU time for
/// sm_90a on the build machine and 20 s on an H200 host (NVRTC 13.0; 2 s for sm_89), spread
/// over up to [`super::compile::MAX_COMPILE_THREADS`] threads.
pub const TIMEOUT: Duration = Duration::from_secs(120);
/// CPU-time limit of the child (seconds), summed over its threads.
const CPU_SECONDS: u64 = 120;
/// Address-space limit of the child: NVRTC needs about 150 MB for the shipped kernels.
const ADDRESS_SPACE: u64 = 8 << 30;
/// Descriptors the child may hold (NVRTC opens a handful).
const FILES: u64 = 64;

/// Largest request the child reads: the source is at most 1 MiB (`KernelSource::read`).
const MAX_REQUEST: u64 = 4 << 20;
/// Largest answer the parent reads: the shipped kernels' CUBINs are under 200 KB.
const MAX_ANSWER: u64 = 256 << 20;

const REQUEST_MAGIC: &[u8] = b"ci-gate nvrtc request 2\n";
const ANSWER_MAGIC: &[u8] = b"ci-gate nvrtc answer 2\n";

/// The variable by which a runner's owner lets NVRTC compile untrusted source where the
/// sandbox cannot confine it: `1` allows, anything else (or nothing) refuses. It belongs in
/// the runner's own environment file (a self-hosted runner's `.env`), never in a workflow;
/// in GitHub Actions it is read from there only (`runner_settings`): docs/MEASURING.md,
/// "Compiling reads nothing".
pub const ALLOW_UNCONFINED_ENV: &str = crate::runner_settings::ALLOW_UNCONFINED_NVRTC;

/// Whether the runner's owner allows compiling without the full sandbox
/// ([`ALLOW_UNCONFINED_ENV`] is exactly `1`; in GitHub Actions in the runner's own
/// environment file, never a workflow's: `runner_settings`).
pub(crate) fn unconfined_allowed() -> bool {
    crate::runner_settings::get(ALLOW_UNCONFINED_ENV).is_some_and(|v| v == "1")
}

/// The sentence (after `FILE (TARGET): `) that refuses a compile the sandbox cannot confine:
/// `why` says what is missing; it names the opt-out.
pub(crate) fn refusal(why: &str) -> String {
    format!(
        "not compiled, because the sandbox cannot confine NVRTC here: {why}; a runner's owner who accepts that risk sets {ALLOW_UNCONFINED_ENV}=1 in the runner's own environment (docs/MEASURING.md, \"Compiling reads nothing\")"
    )
}

/// What the child compiles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The name NVRTC gives the source in its diagnostics.
    pub name: String,
    pub source: String,
    pub options: Vec<String>,
    /// Compile even where the sandbox does not hold ([`unconfined_allowed`] in the parent);
    /// false: such a compile is refused.
    pub allow_unconfined: bool,
}

/// How a compile ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The CUBIN and the compiler's log (untrusted: the source writes into it), cut after
    /// [`super::ptxas::MAX_LOG_BYTES`] + 1 bytes so that a longer one is seen to be longer.
    Cubin { cubin: Vec<u8>, log: String },
    /// The source does not compile: NVRTC's raw log (untrusted; see `diagnostics`).
    Failed(String),
    /// NVRTC could not run (not loadable in the child, an API error): one sentence.
    Error(String),
}

/// The child's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub outcome: Outcome,
    /// Why the compiler ran without the full sandbox, when it did.
    pub unconfined: Option<String>,
}

// ---- Frames: a magic line, then fields, each a little-endian u64 length and its bytes. ----

fn put_field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn take_field<'a>(input: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (len, rest) = input.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    if len > rest.len() {
        return None;
    }
    let (field, rest) = rest.split_at(len);
    *input = rest;
    Some(field)
}

fn take_text(input: &mut &[u8]) -> Option<String> {
    String::from_utf8(take_field(input)?.to_vec()).ok()
}

impl Request {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = REQUEST_MAGIC.to_vec();
        put_field(&mut out, self.name.as_bytes());
        put_field(&mut out, self.source.as_bytes());
        put_field(&mut out, self.options.join("\0").as_bytes());
        put_field(&mut out, if self.allow_unconfined { b"1" } else { b"" });
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Request> {
        let mut rest = bytes.strip_prefix(REQUEST_MAGIC)?;
        let name = take_text(&mut rest)?;
        let source = take_text(&mut rest)?;
        let options = take_text(&mut rest)?;
        let allow_unconfined = match take_field(&mut rest)? {
            b"1" => true,
            b"" => false,
            _ => return None,
        };
        if !rest.is_empty() {
            return None;
        }
        let options = if options.is_empty() {
            Vec::new()
        } else {
            options.split('\0').map(str::to_owned).collect()
        };
        Some(Request {
            name,
            source,
            options,
            allow_unconfined,
        })
    }
}

impl Answer {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = ANSWER_MAGIC.to_vec();
        let (tag, payload): (u8, &[u8]) = match &self.outcome {
            Outcome::Cubin { cubin, .. } => (b'C', cubin),
            Outcome::Failed(log) => (b'L', log.as_bytes()),
            Outcome::Error(e) => (b'E', e.as_bytes()),
        };
        out.push(tag);
        put_field(&mut out, payload);
        if let Outcome::Cubin { log, .. } = &self.outcome {
            let log = log.as_bytes();
            put_field(
                &mut out,
                &log[..log.len().min(super::ptxas::MAX_LOG_BYTES + 1)],
            );
        }
        put_field(
            &mut out,
            self.unconfined.as_deref().unwrap_or_default().as_bytes(),
        );
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Answer> {
        let rest = bytes.strip_prefix(ANSWER_MAGIC)?;
        let (&tag, mut rest) = rest.split_first()?;
        let payload = take_field(&mut rest)?;
        let log = if tag == b'C' {
            take_field(&mut rest)?
        } else {
            &[]
        };
        let unconfined = take_text(&mut rest)?;
        if !rest.is_empty() {
            return None;
        }
        // The log is the compiler's text about attacker text: kept even where it is not UTF-8.
        let outcome = match tag {
            b'C' => Outcome::Cubin {
                cubin: payload.to_vec(),
                log: String::from_utf8_lossy(log).into_owned(),
            },
            b'L' => Outcome::Failed(String::from_utf8_lossy(payload).into_owned()),
            b'E' => Outcome::Error(String::from_utf8_lossy(payload).into_owned()),
            _ => return None,
        };
        Some(Answer {
            outcome,
            unconfined: (!unconfined.is_empty()).then_some(unconfined),
        })
    }
}

// ---- The parent. ----

static EXECUTABLE: OnceLock<PathBuf> = OnceLock::new();

/// Makes `path` (a ci-gate executable) the program the sandboxed compiles run, instead of
/// this process's own executable. For test binaries, which are not ci-gate: integration
/// tests pass `env!("CARGO_BIN_EXE_ci-gate")`. The first call wins.
pub fn use_compiler_executable(path: impl Into<PathBuf>) {
    let _ = EXECUTABLE.set(path.into());
}

/// The ci-gate executable that runs the sandboxed compiles.
pub(crate) fn compiler_executable() -> std::io::Result<PathBuf> {
    match EXECUTABLE.get() {
        Some(p) => Ok(p.clone()),
        None => std::env::current_exe(),
    }
}

/// Loads NVRTC in this process (as compiling does) and returns the directory it was loaded
/// from, read from /proc/self/maps: where the sandboxed child finds it. None where NVRTC
/// cannot be loaded.
pub fn nvrtc_library_dir() -> Option<PathBuf> {
    if !ffi::load_nvrtc() {
        return None;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    library_dir_in_maps(&maps)
}

fn library_dir_in_maps(maps: &str) -> Option<PathBuf> {
    maps.lines()
        .filter_map(|line| line.find('/').map(|at| Path::new(&line[at..])))
        .find(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libnvrtc.so"))
        })
        .and_then(|path| path.parent().map(Path::to_owned))
}

/// Why a sandboxed compile gave no answer: the end of a sentence that names the file.
#[derive(Debug)]
pub enum Failure {
    Start(std::io::Error),
    TimedOut(Duration),
    /// It ended without a readable answer: its exit status and how many bytes of stderr it
    /// wrote (never shown).
    NoAnswer {
        status: ExitStatus,
        stderr_bytes: u64,
    },
    Wait(std::io::Error),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Start(e) => write!(f, "the sandboxed NVRTC process could not start: {e}"),
            Failure::TimedOut(t) => write!(
                f,
                "NVRTC did not finish within {} s and its process was killed",
                t.as_secs()
            ),
            Failure::NoAnswer {
                status,
                stderr_bytes,
            } => write!(
                f,
                "the sandboxed NVRTC process ended without an answer ({status}; past its {} GiB memory or {CPU_SECONDS} s CPU limit?), its {stderr_bytes} bytes of stderr withheld",
                ADDRESS_SPACE >> 30
            ),
            Failure::Wait(e) => write!(f, "waiting for the sandboxed NVRTC process failed: {e}"),
        }
    }
}

/// Compiles `request` in a sandboxed child run from `exe`, which finds libnvrtc in
/// `library_dir` (and may read nothing else), killed past `timeout`.
pub fn compile(
    exe: &Path,
    request: &Request,
    library_dir: &Path,
    timeout: Duration,
) -> Result<Answer, Failure> {
    let env = [(OsString::from("LD_LIBRARY_PATH"), library_dir.into())];
    let out = run_child(exe, &[SUBCOMMAND], &env, request.encode(), timeout)?;
    match Answer::decode(&out.stdout) {
        Some(answer) if out.status.success() => Ok(answer),
        _ => Err(Failure::NoAnswer {
            status: out.status,
            stderr_bytes: out.stderr_bytes,
        }),
    }
}

/// What a child left.
pub(crate) struct ChildOutput {
    pub status: ExitStatus,
    /// At most [`MAX_ANSWER`] bytes (an answer past it is no answer).
    pub stdout: Vec<u8>,
    pub stderr_bytes: u64,
}

/// Runs `exe args` with only `env`, in a fresh empty directory, `input` on its stdin; kills it
/// past `timeout`.
pub(crate) fn run_child(
    exe: &Path,
    args: &[&str],
    env: &[(OsString, OsString)],
    input: Vec<u8>,
    timeout: Duration,
) -> Result<ChildOutput, Failure> {
    let cwd = tempfile::Builder::new()
        .prefix("ci-gate-nvrtc-")
        .tempdir()
        .map_err(Failure::Start)?;
    let mut child = Command::new(exe)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(Failure::Start)?;
    // Feed and drain in threads: a source larger than a pipe's buffer and a CUBIN larger than
    // another would otherwise block each other.
    let stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            // A child that stops reading (it died) is reported by its exit, not here.
            let _ = stdin.write_all(&input);
        }
    });
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(out) = stdout {
            let mut out = out;
            let _ = out.by_ref().take(MAX_ANSWER + 1).read_to_end(&mut kept);
            // Past the limit: keep draining so that the child is not blocked on a full pipe.
            let _ = std::io::copy(&mut out, &mut std::io::sink());
        }
        kept
    });
    let stderr = child.stderr.take();
    let drain = std::thread::spawn(move || match stderr {
        Some(mut err) => std::io::copy(&mut err, &mut std::io::sink()).unwrap_or(0),
        None => 0,
    });
    let waited = child.wait_timeout(timeout);
    let status = match waited {
        Ok(Some(status)) => Ok(status),
        Ok(None) => Err(Failure::TimedOut(timeout)),
        Err(e) => Err(Failure::Wait(e)),
    };
    if status.is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = writer.join();
    let stdout = reader.join().unwrap_or_default();
    let stderr_bytes = drain.join().unwrap_or(0);
    let status = status?;
    if stdout.len() as u64 > MAX_ANSWER {
        return Ok(ChildOutput {
            status,
            stdout: Vec::new(),
            stderr_bytes,
        });
    }
    Ok(ChildOutput {
        status,
        stdout,
        stderr_bytes,
    })
}

// ---- The child. ----

/// The `nvrtc-sandbox` subcommand: reads one request on stdin, writes one answer on stdout.
/// Returns false when no answer could be written.
pub(crate) fn serve() -> bool {
    ffi::close_inherited_descriptors();
    let Ok(mut answer_out) = ffi::take_stdout() else {
        return false;
    };
    let answer = match limit_self() {
        Err(e) => error_answer(format!("the NVRTC process could not limit itself: {e}")),
        Ok(()) => {
            let mut bytes = Vec::new();
            match std::io::stdin()
                .take(MAX_REQUEST)
                .read_to_end(&mut bytes)
                .ok()
                .and_then(|_| Request::decode(&bytes))
            {
                None => error_answer("the NVRTC process got no readable request".into()),
                Some(request) => compile_confined(&request),
            }
        }
    };
    answer_out.write_all(&answer.encode()).is_ok() && answer_out.flush().is_ok()
}

fn error_answer(why: String) -> Answer {
    Answer {
        outcome: Outcome::Error(why),
        unconfined: None,
    }
}

fn limit_self() -> std::io::Result<()> {
    ffi::set_limit(Limit::Core, 0)?;
    ffi::set_limit(Limit::AddressSpace, ADDRESS_SPACE)?;
    ffi::set_limit(Limit::CpuSeconds, CPU_SECONDS)?;
    ffi::set_limit(Limit::Files, FILES)
}

fn compile_confined(request: &Request) -> Answer {
    if !ffi::load_nvrtc() {
        return error_answer(
            "NVRTC (libnvrtc.so) could not be loaded in the sandboxed process".into(),
        );
    }
    let Some(dir) = nvrtc_library_dir() else {
        return error_answer("the sandboxed process could not find where libnvrtc is".into());
    };
    let readable = match preload_builtins(&dir) {
        Ok(true) => None,
        Ok(false) => Some(dir.as_path()),
        Err(why) => return error_answer(why),
    };
    // Landlock and seccomp confine the calling thread and the threads it starts later: a
    // thread that loading a library had started would stay free. None does today (NVRTC
    // 13.5); should a later one, fail closed rather than compile half-confined.
    let threads = std::fs::read_dir("/proc/self/task").map_or(0, |t| t.count());
    if threads != 1 {
        return error_answer(format!(
            "the NVRTC process has {threads} threads before it is confined, so the sandbox would not hold"
        ));
    }
    let unconfined = match confine(readable) {
        Ok(u) => u,
        Err(why) => return error_answer(why),
    };
    // Fail closed: nothing of the untrusted source reaches NVRTC unconfined unless the
    // runner's owner said so.
    if let Some(why) = &unconfined
        && !request.allow_unconfined
    {
        return Answer {
            outcome: Outcome::Error(refusal(why)),
            unconfined,
        };
    }
    let outcome = match ffi::nvrtc_compile(&request.source, &request.name, &request.options) {
        Ok(Compiled::Cubin { cubin, log }) => Outcome::Cubin { cubin, log },
        Ok(Compiled::Failed(log)) => Outcome::Failed(log),
        Err(e) => Outcome::Error(e),
    };
    Answer {
        outcome,
        unconfined,
    }
}

/// Loads `libnvrtc-builtins.so.MAJOR.MINOR` from NVRTC's directory now, with the system
/// libraries it needs (libstdc++), which the sandbox would not let it open later. False when
/// there is no file of that name (NVRTC then loads its builtins itself, from `dir`).
fn preload_builtins(dir: &Path) -> Result<bool, String> {
    let Some((major, minor)) = ffi::nvrtc_version() else {
        return Err("NVRTC did not report its version in the sandboxed process".into());
    };
    let path = dir.join(format!("libnvrtc-builtins.so.{major}.{minor}"));
    if !path.is_file() {
        return Ok(false);
    }
    ffi::preload_library(&path)
        .map(|()| true)
        .map_err(|why| format!("NVRTC's builtins library could not be loaded: {why}"))
}

/// Confines the calling thread, and the threads it starts later, for good: the Landlock
/// ruleset (nothing may be opened, but for reading beneath `readable` when given), then the
/// seccomp filter ([`seccomp_filters`]). `Ok(Some(why))` where either does not hold
/// ([`enforcement_gap`]); `Err` where the ruleset could not even be built.
fn confine(readable: Option<&Path>) -> Result<Option<String>, String> {
    use landlock::{
        Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
        Scope,
    };
    // Best effort (the crate's default): a kernel of an older ABI handles every right it
    // knows and drops the rest; what that leaves is judged from the status.
    let abi = RULESET_ABI;
    let fail = |e: &dyn std::fmt::Display| format!("the Landlock sandbox could not be set up: {e}");
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
        .and_then(|r| r.scope(Scope::from_all(abi)))
        .and_then(|r| r.create())
        .map_err(|e| fail(&e))?;
    if let Some(dir) = readable {
        let fd = PathFd::new(dir).map_err(|e| fail(&e))?;
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, AccessFs::from_read(abi)))
            .map_err(|e| fail(&e))?;
    }
    let status = ruleset.restrict_self().map_err(|e| fail(&e))?;
    // Installed whatever Landlock did: a compile the runner's owner allows without Landlock
    // still runs under it.
    let seccomp = install_seccomp();
    Ok(enforcement_gap(
        &status.ruleset,
        status.landlock,
        status.no_new_privs,
        seccomp.err().as_deref(),
    ))
}

/// The Landlock ABI whose rights the ruleset asks for: the newest the `landlock` crate knows
/// (10), so that every file-system right of the running kernel's ABI is handled; a kernel of
/// an older ABI enforces the rights it has.
const RULESET_ABI: landlock::ABI = landlock::ABI::V10;

/// Why the sandbox does not hold, or None where it does.
///
/// It holds where Landlock is available at any ABI (1, Linux 5.13, or later), restricted this
/// process with `no_new_privs` set, and the seccomp filter is installed (`seccomp` is None;
/// Some says why it is not). The ruleset is built best effort from [`RULESET_ABI`], so on a
/// kernel of ABI n it handles every file-system right of ABI n and allows none of them: reading,
/// writing, executing, creating and removing files (ABI 1), linking and renaming across
/// directories (2), truncating (3), device ioctls (5), connecting to named UNIX sockets (9).
/// The crate reports that as `PartiallyEnforced` below ABI 10, and it is what this kernel can
/// do for files, so it counts as enforced; only `NotEnforced` (nothing restricted) does not.
///
/// What older ABIs cannot confine, the seccomp filter does on every kernel: network access of
/// any kind (Landlock has TCP from ABI 4 and nothing for UDP or UNIX sockets before ABI 9 and
/// 10), signals and abstract sockets (the scopes, ABI 6), and what no Landlock ABI confines
/// (changing a file's mode, owner, times or extended attributes, other processes' memory,
/// new namespaces, the kernel's keyrings, BPF, io_uring); see [`seccomp_filters`]. The TCP
/// rights and the scopes are still asked for where the kernel has them.
fn enforcement_gap(
    ruleset: &landlock::RulesetStatus,
    landlock: landlock::LandlockStatus,
    no_new_privs: bool,
    seccomp: Option<&str>,
) -> Option<String> {
    use landlock::{LandlockStatus, RulesetStatus};
    let landlock_gap = match (ruleset, landlock) {
        (_, LandlockStatus::NotImplemented) => Some("this Linux kernel has no Landlock".into()),
        (_, LandlockStatus::NotEnabled) => Some(
            "this Linux kernel has Landlock but does not enable it (the lsm= boot parameter)"
                .into(),
        ),
        (RulesetStatus::NotEnforced, _) => {
            Some("Landlock did not enforce the sandbox's ruleset".into())
        }
        (RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced, _) if !no_new_privs => {
            Some("the NVRTC process could not set no_new_privs".into())
        }
        (RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced, _) => None,
    };
    let seccomp_gap =
        seccomp.map(|why| format!("the sandbox's seccomp filter could not be installed ({why})"));
    match (landlock_gap, seccomp_gap) {
        (None, None) => None,
        (Some(gap), None) | (None, Some(gap)) => Some(gap),
        (Some(landlock), Some(seccomp)) => Some(format!("{landlock}, and {seccomp}")),
    }
}

// ---- The seccomp filter of the NVRTC process. ----

/// Installs [`seccomp_filters`] on the calling thread (the threads it starts later inherit
/// them, and nothing can remove them); `no_new_privs` is set first. Err says why not.
fn install_seccomp() -> Result<(), String> {
    for filter in seccomp_filters(std::process::id())? {
        seccompiler::apply_filter(&filter).map_err(|e| match e {
            seccompiler::Error::Prctl(e) => format!("no_new_privs could not be set: {e}"),
            seccompiler::Error::Seccomp(e) => format!("the kernel refused it: {e}"),
            e => e.to_string(),
        })?;
    }
    Ok(())
}

/// The seccomp-BPF filters of the NVRTC process whose id is `pid`, for this architecture.
///
/// Default deny, because what NVRTC needs is small and known. Measured with `strace -f`, after
/// the filter was installed, on `ci-gate compile` (every shipped kernel for sm_89, sm_90 and
/// sm_90a) with NVRTC 13.5 and 12.9, and on the NVRTC tests (107 sandboxed compiles: sources
/// that do not compile, that ask for files, planted bugs), NVRTC and this program made only
/// `brk mmap munmap openat stat close lseek write fcntl futex gettid getpid rt_sigaction
/// clock_gettime getcwd sysinfo prlimit64 sigaltstack exit_group`, and none was refused
/// (`openat` of `libcuda.so.1`, `/etc/ld.so.cache` and `/etc/localtime`, and `stat` of files
/// in its empty working directory, fail by Landlock or for want of the file). The allow-list
/// ([`ALLOWED`] and the calls with conditions below) is that, plus what the C library and
/// threads may need and that stays within this process (memory, futexes, thread start and
/// exit, its own signals and limits, clocks, entropy), so that a later NVRTC or another C
/// library still compiles. Every other call fails with EPERM:
/// not a kill, because a compiler that probes a harmless call on another system should get an
/// error it can handle, and the call does not happen either way. Among them, on purpose
/// ([`DENIED`]): every socket call (the network, the cloud metadata service, host daemons'
/// UNIX sockets, named or abstract), signals to other processes (`kill` and `tgkill` only for
/// this process, `kill(0, …)` would reach the runner's process group), `pidfd_*`, `ptrace`,
/// `process_vm_*`, new processes and programs (`clone` only for threads, `execve`),
/// namespaces and mounts, `bpf`, `perf_event_open`, `io_uring_*`, `userfaultfd`, keyrings,
/// SysV and POSIX IPC, file handles (`open_by_handle_at`), changing a file's mode, owner,
/// times or extended attributes (no Landlock ABI confines those), `ioctl` and `prctl`.
///
/// Three answers are not EPERM: `clone3` fails with ENOSYS, because its flags are out of a
/// filter's reach and the C library then starts threads with `clone`, whose flags are
/// checked; a call of another architecture (`int 0x80` on x86-64) and, on x86-64, of the x32
/// ABI (numbers with bit 30 set) kill the process, because nothing but injected code makes
/// them, and a filter written for this architecture's numbers cannot judge them.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn seccomp_filters(pid: u32) -> Result<Vec<seccompiler::BpfProgram>, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let fail = |e: &dyn std::fmt::Display| format!("it could not be built: {e}");
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| fail(&e))?;
    let pid = u64::from(pid);
    // One condition on argument `arg`: its low 32 bits (a pid_t) equal `value`.
    let int_is = |arg: u8, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(|e| fail(&e))
    };
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        ALLOWED.iter().map(|&(nr, _)| (nr, Vec::new())).collect();
    // Its own signals only (abort and raise): not 0 or -1 (a process group, every process).
    rules.insert(libc::SYS_kill, vec![int_is(0, pid)?]);
    rules.insert(libc::SYS_tgkill, vec![int_is(0, pid)?]);
    // Its own limits and affinity only (NVRTC raises its stack limit): pid 0 is the caller.
    for nr in [libc::SYS_prlimit64, libc::SYS_sched_getaffinity] {
        rules.insert(nr, vec![int_is(0, 0)?, int_is(0, pid)?]);
    }
    // Threads, not processes, and no new namespace.
    let namespaces = (libc::CLONE_NEWNS
        | libc::CLONE_NEWCGROUP
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUSER
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWNET) as u64;
    let thread = libc::CLONE_THREAD as u64;
    let clone = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::MaskedEq(thread | namespaces),
        thread,
    )
    .and_then(|c| SeccompRule::new(vec![c]))
    .map_err(|e| fail(&e))?;
    rules.insert(libc::SYS_clone, vec![clone]);
    // Passes this filter, so that the ENOSYS of the filter before it is the answer.
    rules.insert(libc::SYS_clone3, Vec::new());
    let allow = SeccompFilter::new(
        rules,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
        arch,
    )
    .and_then(seccompiler::BpfProgram::try_from)
    .map_err(|e| fail(&e))?;
    let clone3 = SeccompFilter::new(
        [(libc::SYS_clone3, Vec::new())].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .and_then(seccompiler::BpfProgram::try_from)
    .map_err(|e| fail(&e))?;
    // The allow-list goes last: it refuses the prctl and seccomp calls that installing a
    // filter makes. Of the filters' answers the kernel takes the strictest (a kill over an
    // error over allowing).
    let mut filters = vec![clone3];
    if cfg!(target_arch = "x86_64") {
        filters.push(x32_filter());
    }
    filters.push(allow);
    Ok(filters)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn seccomp_filters(_pid: u32) -> Result<Vec<seccompiler::BpfProgram>, String> {
    Err(format!(
        "ci-gate has no seccomp filter for {}",
        std::env::consts::ARCH
    ))
}

/// Kills the process on a system call of the x32 ABI (an x86-64 number with bit 30 set),
/// which the allow-list's numbers do not describe. The other filter checks the architecture.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn x32_filter() -> seccompiler::BpfProgram {
    let insn = |code: u32, jt: u8, jf: u8, k: u32| seccompiler::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    vec![
        // The system call number: offset 0 of struct seccomp_data.
        insn(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        insn(
            libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
            0,
            1,
            X32_SYSCALL_BIT,
        ),
        insn(
            libc::BPF_RET | libc::BPF_K,
            0,
            0,
            libc::SECCOMP_RET_KILL_PROCESS,
        ),
        insn(libc::BPF_RET | libc::BPF_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

/// `__X32_SYSCALL_BIT` of asm/unistd.h.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// The system calls allowed without conditions, with why.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const ALLOWED: &[(i64, &str)] = &[
    // Memory of this process.
    (libc::SYS_brk, "malloc"),
    (libc::SYS_mmap, "malloc, loading a library"),
    (libc::SYS_munmap, "free"),
    (libc::SYS_mremap, "realloc of a large block"),
    (
        libc::SYS_mprotect,
        "thread stacks' guard pages, loading a library",
    ),
    (libc::SYS_madvise, "free of a thread's arena, thread exit"),
    // Descriptors: what may be opened is Landlock's to decide (nothing, or NVRTC's own
    // directory where its builtins library is loaded late); the process holds three pipes.
    (
        libc::SYS_openat,
        "NVRTC tries libcuda.so.1 and the loader's cache (Landlock denies)",
    ),
    (libc::SYS_close, "closing a descriptor"),
    (libc::SYS_read, "reading the request, a library"),
    (libc::SYS_pread64, "loading a library"),
    (libc::SYS_write, "the answer, a crash message on stderr"),
    (libc::SYS_readv, "stdio"),
    (libc::SYS_writev, "stdio"),
    (libc::SYS_lseek, "stdio's position on stderr"),
    (libc::SYS_fcntl, "a descriptor's flags"),
    (libc::SYS_dup, "a descriptor copy"),
    (libc::SYS_dup3, "a descriptor copy"),
    // Metadata by path: Landlock does not confine it at any ABI, and NVRTC looks for files in
    // its working directory (empty). What a file's metadata tells is the one thing of the
    // runner's files the compiler can still learn.
    (libc::SYS_fstat, "a descriptor's metadata"),
    (libc::SYS_newfstatat, "stat, fstat"),
    (libc::SYS_statx, "stat"),
    (libc::SYS_getcwd, "NVRTC's working directory"),
    // Threads of this process (NVRTC 13.5 starts none) and their synchronisation.
    (libc::SYS_futex, "locks"),
    (libc::SYS_set_robust_list, "thread start"),
    (libc::SYS_rseq, "thread start"),
    (libc::SYS_set_tid_address, "thread start"),
    (libc::SYS_sched_yield, "spin locks"),
    (libc::SYS_gettid, "NVRTC's locks"),
    (libc::SYS_getpid, "raise, abort"),
    (libc::SYS_exit, "thread exit"),
    (libc::SYS_exit_group, "process exit"),
    (
        libc::SYS_restart_syscall,
        "a sleep or wait interrupted by a signal",
    ),
    // Signal handling within this process (`kill` and `tgkill` have conditions).
    (libc::SYS_rt_sigaction, "signal handlers"),
    (libc::SYS_rt_sigprocmask, "signal masks"),
    (libc::SYS_rt_sigreturn, "return from a handler"),
    (libc::SYS_sigaltstack, "Rust's stack-overflow handler"),
    // Clocks, sleeping, entropy, and facts about this process and the machine.
    (libc::SYS_clock_gettime, "NVRTC's timers"),
    (libc::SYS_clock_getres, "clocks"),
    (libc::SYS_gettimeofday, "clocks"),
    (libc::SYS_nanosleep, "sleeping"),
    (libc::SYS_clock_nanosleep, "sleeping"),
    (
        libc::SYS_getrandom,
        "hash seeds, the C library's arc4random",
    ),
    (libc::SYS_getrusage, "this process's CPU time"),
    (
        libc::SYS_sysinfo,
        "NVRTC sizes itself to the machine's memory",
    ),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_open, "as openat"),
    #[cfg(target_arch = "x86_64")]
    (
        libc::SYS_stat,
        "NVRTC looks for files in its working directory",
    ),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_lstat, "as stat"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_dup2, "as dup3"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_time, "clocks"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_getrlimit, "its own limits"),
];

/// System calls that reach outside the process and that the filter refuses (EPERM), with
/// why; none is in [`ALLOWED`] (a test checks), and `kill`, `tgkill`, `prlimit64` and `clone`
/// are allowed only for this process and its threads. The filter is default deny: this list
/// is what the tests hold the allow-list to.
#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
const DENIED: &[(i64, &str)] = &[
    (libc::SYS_socket, "the network, host daemons' UNIX sockets"),
    (
        libc::SYS_socketpair,
        "sockets it does not need, to pass descriptors",
    ),
    (libc::SYS_connect, "the network"),
    (libc::SYS_bind, "listening on the runner's network"),
    (libc::SYS_listen, "listening on the runner's network"),
    (libc::SYS_accept, "listening on the runner's network"),
    (libc::SYS_accept4, "listening on the runner's network"),
    (libc::SYS_sendto, "the network"),
    (libc::SYS_sendmsg, "the network, passing descriptors"),
    (libc::SYS_sendmmsg, "the network"),
    (libc::SYS_recvfrom, "the network"),
    (libc::SYS_recvmsg, "the network, receiving descriptors"),
    (libc::SYS_recvmmsg, "the network"),
    (libc::SYS_tkill, "signalling a thread of another process"),
    (libc::SYS_rt_sigqueueinfo, "signalling another process"),
    (libc::SYS_rt_tgsigqueueinfo, "signalling another process"),
    (libc::SYS_pidfd_open, "another process"),
    (libc::SYS_pidfd_send_signal, "signalling another process"),
    (libc::SYS_pidfd_getfd, "another process's descriptors"),
    (libc::SYS_ptrace, "another process"),
    (libc::SYS_process_vm_readv, "another process's memory"),
    (libc::SYS_process_vm_writev, "another process's memory"),
    (libc::SYS_process_madvise, "another process's memory"),
    (libc::SYS_kcmp, "another process's resources"),
    (libc::SYS_execve, "running a program"),
    (libc::SYS_execveat, "running a program"),
    (
        libc::SYS_clone3,
        "a process (ENOSYS: threads are started with clone)",
    ),
    (libc::SYS_unshare, "new namespaces"),
    (libc::SYS_setns, "other namespaces"),
    (libc::SYS_mount, "mounts"),
    (libc::SYS_umount2, "mounts"),
    (libc::SYS_pivot_root, "mounts"),
    (libc::SYS_chroot, "mounts"),
    (libc::SYS_open_tree, "mounts"),
    (libc::SYS_move_mount, "mounts"),
    (libc::SYS_fsopen, "mounts"),
    (libc::SYS_fsmount, "mounts"),
    (libc::SYS_fspick, "mounts"),
    (
        libc::SYS_keyctl,
        "the kernel's keyrings: the session's keys",
    ),
    (libc::SYS_add_key, "the kernel's keyrings"),
    (
        libc::SYS_request_key,
        "the kernel's keyrings, upcalls to user space",
    ),
    (libc::SYS_bpf, "the kernel's BPF"),
    (
        libc::SYS_perf_event_open,
        "the kernel's and other processes' events",
    ),
    (
        libc::SYS_io_uring_setup,
        "io_uring, which bypasses this filter",
    ),
    (libc::SYS_io_uring_enter, "io_uring"),
    (libc::SYS_io_uring_register, "io_uring"),
    (libc::SYS_userfaultfd, "stalling the kernel on a page fault"),
    (
        libc::SYS_open_by_handle_at,
        "opening a file by handle, around paths",
    ),
    (libc::SYS_name_to_handle_at, "file handles"),
    (libc::SYS_openat2, "not needed (Landlock confines it)"),
    (libc::SYS_memfd_create, "not needed"),
    (
        libc::SYS_fchmod,
        "a file's mode (no Landlock ABI confines it)",
    ),
    (
        libc::SYS_fchmodat,
        "a file's mode (no Landlock ABI confines it)",
    ),
    (libc::SYS_fchown, "a file's owner"),
    (libc::SYS_fchownat, "a file's owner"),
    (
        libc::SYS_utimensat,
        "a file's times (no Landlock ABI confines them)",
    ),
    (
        libc::SYS_setxattr,
        "extended attributes (no Landlock ABI confines them)",
    ),
    (libc::SYS_lsetxattr, "extended attributes"),
    (libc::SYS_fsetxattr, "extended attributes"),
    (libc::SYS_removexattr, "extended attributes"),
    (
        libc::SYS_truncate,
        "emptying a file (Landlock only from ABI 3)",
    ),
    (
        libc::SYS_ftruncate,
        "emptying a file (Landlock only from ABI 3)",
    ),
    (
        libc::SYS_ioctl,
        "a terminal's input (TIOCSTI), devices (Landlock only from ABI 5)",
    ),
    (
        libc::SYS_prctl,
        "letting another process trace this one (PR_SET_PTRACER)",
    ),
    (libc::SYS_msgget, "SysV IPC, shared with the runner"),
    (libc::SYS_semget, "SysV IPC, shared with the runner"),
    (libc::SYS_shmget, "SysV IPC, shared with the runner"),
    (
        libc::SYS_mq_open,
        "POSIX message queues, shared with the runner",
    ),
    (libc::SYS_fanotify_init, "watching the runner's files"),
    (libc::SYS_inotify_init1, "watching the runner's files"),
    (libc::SYS_finit_module, "kernel modules"),
    (libc::SYS_init_module, "kernel modules"),
    (libc::SYS_kexec_load, "the kernel"),
    (libc::SYS_reboot, "the machine"),
    (libc::SYS_setpriority, "other processes' priority"),
    (libc::SYS_sched_setaffinity, "other processes' CPUs"),
    (libc::SYS_ioprio_set, "other processes' I/O priority"),
    (libc::SYS_setuid, "identity"),
    (libc::SYS_setgid, "identity"),
    (libc::SYS_capset, "privileges"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_fork, "a process"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_vfork, "a process"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_chmod, "a file's mode"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_chown, "a file's owner"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_lchown, "a file's owner"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_utimes, "a file's times"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_utime, "a file's times"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let r = Request {
            name: "attention.cu".into(),
            source: "extern \"C\" __global__ void k() {}\n\0x".into(),
            options: vec!["--gpu-architecture=sm_89".into(), "--std=c++17".into()],
            allow_unconfined: false,
        };
        assert_eq!(Request::decode(&r.encode()), Some(r.clone()));
        let none = Request {
            options: vec![],
            allow_unconfined: true,
            ..r.clone()
        };
        assert_eq!(Request::decode(&none.encode()), Some(none));
        // The owner's permission is one of two values; anything else is no request.
        let mut other = r.encode();
        other.truncate(other.len() - 8);
        other.extend_from_slice(&1u64.to_le_bytes());
        other.push(b'y');
        assert_eq!(Request::decode(&other), None);
        let mut trailing = r.encode();
        trailing.push(0);
        assert_eq!(Request::decode(&trailing), None);
        for outcome in [
            Outcome::Cubin {
                cubin: b"\x7fELF\0\x01".to_vec(),
                log: "ptxas info    : Used 1 registers".into(),
            },
            Outcome::Failed("attention.cu(1): error: x".into()),
            Outcome::Error("why".into()),
        ] {
            for unconfined in [None, Some("no Landlock".to_string())] {
                let a = Answer {
                    outcome: outcome.clone(),
                    unconfined,
                };
                assert_eq!(Answer::decode(&a.encode()), Some(a));
            }
        }
    }

    /// Landlock at any ABI with no_new_privs, and the seccomp filter, confine; every other
    /// status names what is missing.
    #[test]
    fn landlock_at_any_abi_with_the_seccomp_filter_confines() {
        use landlock::{ABI, LandlockStatus, RulesetStatus};
        let available = |abi| LandlockStatus::Available {
            effective_abi: abi,
            kernel_abi: None,
        };
        // Ubuntu 22.04's 5.15 (ABI 1), 24.04's 6.8 (ABI 4), 6.12 (ABI 6), and on.
        for abi in [
            ABI::V1,
            ABI::V2,
            ABI::V3,
            ABI::V4,
            ABI::V5,
            ABI::V6,
            ABI::V7,
        ] {
            assert_eq!(
                enforcement_gap(
                    &RulesetStatus::PartiallyEnforced,
                    available(abi),
                    true,
                    None
                ),
                None,
                "{abi}"
            );
        }
        assert_eq!(
            enforcement_gap(
                &RulesetStatus::FullyEnforced,
                available(ABI::V10),
                true,
                None
            ),
            None
        );
        let gap = |r: RulesetStatus, l, nnp, seccomp| {
            enforcement_gap(&r, l, nnp, seccomp).expect("a gap")
        };
        assert_eq!(
            gap(
                RulesetStatus::NotEnforced,
                LandlockStatus::NotImplemented,
                true,
                None
            ),
            "this Linux kernel has no Landlock"
        );
        assert_eq!(
            gap(
                RulesetStatus::NotEnforced,
                LandlockStatus::NotEnabled,
                true,
                None
            ),
            "this Linux kernel has Landlock but does not enable it (the lsm= boot parameter)"
        );
        assert_eq!(
            gap(RulesetStatus::NotEnforced, available(ABI::V4), true, None),
            "Landlock did not enforce the sandbox's ruleset"
        );
        for ruleset in [
            RulesetStatus::FullyEnforced,
            RulesetStatus::PartiallyEnforced,
        ] {
            assert_eq!(
                gap(ruleset, available(ABI::V4), false, None),
                "the NVRTC process could not set no_new_privs"
            );
        }
        // Landlock alone does not confine: no filter, no compile.
        for ruleset in [
            RulesetStatus::FullyEnforced,
            RulesetStatus::PartiallyEnforced,
        ] {
            assert_eq!(
                gap(
                    ruleset,
                    available(ABI::V6),
                    true,
                    Some("the kernel refused it: Invalid argument (os error 22)")
                ),
                "the sandbox's seccomp filter could not be installed (the kernel refused it: Invalid argument (os error 22))"
            );
        }
        assert_eq!(
            gap(
                RulesetStatus::NotEnforced,
                LandlockStatus::NotImplemented,
                true,
                Some("why")
            ),
            "this Linux kernel has no Landlock, and the sandbox's seccomp filter could not be installed (why)"
        );
    }

    /// The refusal names the opt-out, and the opt-out reaches the children that compile.
    #[test]
    fn the_refusal_names_the_opt_out_that_reaches_the_compiling_children() {
        let sentence = refusal("this Linux kernel has no Landlock");
        assert_eq!(
            sentence,
            "not compiled, because the sandbox cannot confine NVRTC here: this Linux kernel has no Landlock; a runner's owner who accepts that risk sets CI_GATE_ALLOW_UNCONFINED_NVRTC=1 in the runner's own environment (docs/MEASURING.md, \"Compiling reads nothing\")"
        );
        // The opt-out reaches the children that compile (a `--devices` run's).
        assert!(crate::child_env::passes(
            ALLOW_UNCONFINED_ENV,
            crate::child_env::Child::Gpu
        ));
    }

    /// The allow-list has nothing of the deny list, and everything NVRTC was seen to call
    /// (see `seccomp_filters`), so that the shipped kernels compile under it.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn the_filter_allows_what_nvrtc_needs_and_nothing_that_reaches_outside() {
        let allowed: std::collections::BTreeSet<i64> = ALLOWED.iter().map(|&(nr, _)| nr).collect();
        assert_eq!(allowed.len(), ALLOWED.len(), "a call listed twice");
        let conditional = [
            libc::SYS_kill,
            libc::SYS_tgkill,
            libc::SYS_prlimit64,
            libc::SYS_sched_getaffinity,
            libc::SYS_clone,
        ];
        for &(nr, why) in DENIED {
            assert!(
                !allowed.contains(&nr),
                "system call {nr} ({why}) is allowed"
            );
        }
        for nr in conditional {
            assert!(
                !allowed.contains(&nr),
                "{nr} is allowed without its condition"
            );
        }
        let mut measured = vec![
            libc::SYS_brk,
            libc::SYS_mmap,
            libc::SYS_munmap,
            libc::SYS_openat,
            libc::SYS_newfstatat,
            libc::SYS_close,
            libc::SYS_lseek,
            libc::SYS_write,
            libc::SYS_futex,
            libc::SYS_gettid,
            libc::SYS_getpid,
            libc::SYS_clock_gettime,
            libc::SYS_getcwd,
            libc::SYS_sysinfo,
            libc::SYS_sigaltstack,
            libc::SYS_exit_group,
        ];
        #[cfg(target_arch = "x86_64")]
        measured.push(libc::SYS_stat);
        for nr in measured {
            assert!(allowed.contains(&nr), "system call {nr} is not allowed");
        }
        let filters = seccomp_filters(4321).expect("the filters build");
        assert_eq!(
            filters.len(),
            if cfg!(target_arch = "x86_64") { 3 } else { 2 }
        );
        // The allow-list is installed last (it refuses installing another filter).
        let last = filters.last().expect("filters");
        assert!(last.len() > 2 * ALLOWED.len(), "{}", last.len());
        assert_eq!(x32_filter().len(), 4);
    }

    /// What the probe is told: "confined" (confine, then probe), "seccomp" (the seccomp
    /// filter alone, as on a kernel whose Landlock confines files only) or "control".
    const PROBE_ENV: &str = "CI_GATE_TEST_SANDBOX_PROBE";
    /// A file of the runner's that the probe tries to open and to change.
    const PROBE_FILE_ENV: &str = "CI_GATE_TEST_SANDBOX_PROBE_FILE";

    fn outcome<T>(r: &std::io::Result<T>) -> String {
        match r {
            Ok(_) => "allowed".into(),
            Err(e) => match e.raw_os_error() {
                Some(libc::EPERM) => "EPERM".into(),
                Some(libc::EACCES) => "EACCES".into(),
                Some(libc::ENOSYS) => "ENOSYS".into(),
                _ => e.to_string(),
            },
        }
    }

    /// Run only by [`the_sandbox_reaches_nothing_outside_the_process`], in a process of its
    /// own: applies [`confine`] (the very function the NVRTC process applies) to its thread,
    /// then tries what a subverted compiler would, and prints what each attempt gave.
    #[test]
    #[ignore = "run by the_sandbox_reaches_nothing_outside_the_process in a process of its own"]
    fn sandbox_probe() {
        use std::os::unix::fs::PermissionsExt;
        let Some(mode) = std::env::var_os(PROBE_ENV) else {
            return;
        };
        let file = PathBuf::from(std::env::var_os(PROBE_FILE_ENV).expect("the probe's file"));
        ffi::set_limit(Limit::Core, 0).expect("no core file");
        let me = std::process::id() as i32;
        let parent = std::os::unix::process::parent_id() as i32;
        // After libtest's "test NAME ... ", so that each report is a line of its own.
        println!();
        if mode == "confined" {
            println!("gap: {:?}", confine(None));
        } else if mode == "seccomp" {
            println!("seccomp: {:?}", install_seccomp());
        }
        let udp = || std::net::UdpSocket::bind("127.0.0.1:0").map(drop);
        let probes = [
            ("socket(AF_INET)", udp()),
            (
                "socket(AF_UNIX)",
                std::os::unix::net::UnixDatagram::unbound().map(drop),
            ),
            (
                "socketpair",
                std::os::unix::net::UnixStream::pair().map(drop),
            ),
            ("kill(parent, 0)", ffi::send_signal(parent, 0)),
            ("kill(0, 0)", ffi::send_signal(0, 0)),
            ("kill(-1, 0)", ffi::send_signal(-1, 0)),
            ("kill(self, 0)", ffi::send_signal(me, 0)),
            ("open", std::fs::File::open(&file).map(drop)),
            (
                "chmod",
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)),
            ),
            (
                "spawn",
                std::process::Command::new("/bin/true").status().map(drop),
            ),
            ("unshare", ffi::unshare_nothing()),
            ("process_vm_readv(self)", ffi::read_no_memory_of(me)),
            (
                "a thread's socket(AF_INET)",
                std::thread::spawn(udp).join().expect("a thread"),
            ),
        ];
        for (name, result) in &probes {
            println!("probe {name}: {}", outcome(result));
        }
        #[cfg(target_arch = "x86_64")]
        {
            println!("x32 next");
            println!("x32 getpid: {}", outcome(&ffi::x32_getpid()));
        }
    }

    /// The confined process can reach nothing outside itself: no socket (the network, UNIX
    /// sockets), no signal to another process or group, no file of the runner's to open or
    /// change, no program, no namespace, no other memory, in threads it starts too; it may
    /// signal itself; an x32 system call kills it. The same probes unconfined all succeed, so
    /// what refuses them is the sandbox.
    #[test]
    fn the_sandbox_reaches_nothing_outside_the_process() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("runner's file");
        std::fs::write(&file, "secret").unwrap();
        let run = |mode: &str| {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
            let out = Command::new(std::env::current_exe().unwrap())
                .args([
                    "kernel::sandbox::tests::sandbox_probe",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(PROBE_ENV, mode)
                .env(PROBE_FILE_ENV, &file)
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let probes: std::collections::BTreeMap<String, String> = text
                .lines()
                .filter_map(|l| l.strip_prefix("probe "))
                .filter_map(|l| l.split_once(": "))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (out.status, text, probes)
        };
        let names = [
            "socket(AF_INET)",
            "socket(AF_UNIX)",
            "socketpair",
            "kill(parent, 0)",
            "kill(0, 0)",
            "kill(-1, 0)",
            "kill(self, 0)",
            "open",
            "chmod",
            "spawn",
            "unshare",
            "process_vm_readv(self)",
            "a thread's socket(AF_INET)",
        ];

        let (status, text, probes) = run("control");
        assert!(status.success(), "{status}\n{text}");
        for name in names {
            assert_eq!(
                probes.get(name).map(String::as_str),
                Some("allowed"),
                "unconfined, {name} must work for the confined run to mean anything\n{text}"
            );
        }
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o666
        );

        // The filter alone refuses all but opening the file (Landlock's part): what it
        // adds to Landlock on every kernel, whatever Landlock's ABI.
        let (status, text, probes) = run("seccomp");
        assert!(text.contains("seccomp: Ok(())"), "{text}");
        check_confined(status, &text, &probes, "allowed");
        let (status, text, probes) = run("confined");
        assert!(text.contains("gap: Ok(None)"), "{text}");
        check_confined(status, &text, &probes, "EACCES");
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600,
            "the mode is unchanged"
        );
    }

    /// What a confined probe must report, opening the file answered `open`.
    fn check_confined(
        status: ExitStatus,
        text: &str,
        probes: &std::collections::BTreeMap<String, String>,
        open: &str,
    ) {
        use std::os::unix::process::ExitStatusExt;
        let expected = [
            ("socket(AF_INET)", "EPERM"),
            ("socket(AF_UNIX)", "EPERM"),
            ("socketpair", "EPERM"),
            ("kill(parent, 0)", "EPERM"),
            ("kill(0, 0)", "EPERM"),
            ("kill(-1, 0)", "EPERM"),
            ("kill(self, 0)", "allowed"),
            ("open", open),
            ("chmod", "EPERM"),
            ("spawn", "EPERM"),
            ("unshare", "EPERM"),
            ("process_vm_readv(self)", "EPERM"),
            ("a thread's socket(AF_INET)", "EPERM"),
        ];
        for (name, outcome) in expected {
            assert_eq!(
                probes.get(name).map(String::as_str),
                Some(outcome),
                "{name}\n{text}"
            );
        }
        assert_eq!(probes.len(), expected.len(), "{text}");
        if cfg!(target_arch = "x86_64") {
            assert!(
                text.contains("x32 next") && !text.contains("x32 getpid"),
                "{text}"
            );
            assert_eq!(status.signal(), Some(libc::SIGSYS), "{status}\n{text}");
        } else {
            assert!(status.success(), "{status}\n{text}");
        }
    }

    #[test]
    fn damaged_frames_are_no_answer() {
        let a = Answer {
            outcome: Outcome::Cubin {
                cubin: vec![1; 100],
                log: "log".into(),
            },
            unconfined: None,
        }
        .encode();
        for cut in 0..a.len() {
            assert_eq!(Answer::decode(&a[..cut]), None, "{cut}");
        }
        let mut longer = a.clone();
        longer.push(0);
        assert_eq!(Answer::decode(&longer), None);
        let mut huge = ANSWER_MAGIC.to_vec();
        huge.push(b'C');
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(Answer::decode(&huge), None);
        let mut tag = a.clone();
        tag[ANSWER_MAGIC.len()] = b'X';
        assert_eq!(Answer::decode(&tag), None);
        assert_eq!(Request::decode(b"garbage"), None);
    }

    #[test]
    fn the_library_directory_comes_from_the_maps() {
        let maps = "7f00-7f01 r--p 00000000 00:2a 123 /usr/lib/x86_64-linux-gnu/libc.so.6\n\
                    7f02-7f03 r-xp 00000000 00:2a 456 /opt/my venv/nvidia/cu13/lib/libnvrtc-builtins.so.13.5\n\
                    7f04-7f05 r-xp 00000000 00:2a 789 /opt/my venv/nvidia/cu13/lib/libnvrtc.so.13\n\
                    7ffd-7ffe rw-p 00000000 00:00 0 [stack]\n";
        assert_eq!(
            library_dir_in_maps(maps),
            Some(PathBuf::from("/opt/my venv/nvidia/cu13/lib"))
        );
        assert_eq!(
            library_dir_in_maps("7ffd-7ffe rw-p 0 00:00 0 [stack]\n"),
            None
        );
    }

    #[test]
    fn a_child_past_its_deadline_is_killed() {
        let t = std::time::Instant::now();
        let r = run_child(
            Path::new("/bin/sleep"),
            &["30"],
            &[],
            Vec::new(),
            Duration::from_millis(300),
        );
        assert!(matches!(r, Err(Failure::TimedOut(_))), "{:?}", r.err());
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }

    #[test]
    fn a_child_gets_only_the_environment_it_is_given_and_an_empty_directory() {
        let out = run_child(
            Path::new("/bin/sh"),
            &["-c", "env; echo ==; ls -A; echo ==; pwd"],
            &[("ONLY".into(), "this".into())],
            Vec::new(),
            Duration::from_secs(30),
        )
        .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let parts: Vec<&str> = text.split("==\n").collect();
        assert_eq!(parts.len(), 3, "{text}");
        assert!(parts[0].contains("ONLY=this"), "{text}");
        // None of this process's variables (cargo sets several for tests) reached the child;
        // the shell adds its own few.
        for (k, v) in std::env::vars() {
            if !["PWD", "OLDPWD", "SHLVL", "_"].contains(&k.as_str()) {
                assert!(
                    !parts[0].contains(&format!("{k}={v}")),
                    "{k} leaked: {text}"
                );
            }
        }
        assert_eq!(parts[1], "", "the working directory is empty");
        let pwd = parts[2].trim();
        assert!(pwd.contains("ci-gate-nvrtc-"), "{text}");
        assert!(
            !Path::new(pwd).exists(),
            "the directory is removed afterwards"
        );
    }
}
