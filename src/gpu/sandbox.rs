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
//!   directories), then applies a Landlock ruleset that handles every file-system right, all
//!   TCP and the scopes (abstract sockets, signals), and allows nothing: with both libraries
//!   loaded NVRTC 13 reads no file at all (found by trying: without the preload it fails with
//!   "failed to open libnvrtc-builtins.so.13.5"; with it, every shipped kernel compiles for
//!   sm_89, sm_90 and sm_90a under a ruleset with no rule). Only where the builtins library
//!   is not found under that name is reading (files, directories, executing) allowed beneath
//!   NVRTC's own directory, for NVRTC to load it from there. Then it compiles: no file of the
//!   runner, nor its environment (/proc/self/environ is a file), can be opened.
//! - The parent kills the child past a wall-clock deadline.
//!
//! The sandbox fails closed. Where Landlock cannot enforce the whole ruleset (a Linux kernel
//! without Landlock, with Landlock not enabled, or with an ABI older than 6: see [`confine`]
//! for why each part matters), the child compiles nothing and answers with a refusal that
//! names [`ALLOW_UNCONFINED_ENV`]. That variable is the runner owner's decision, read from
//! the runner's own environment by the parent (never from anything a pull request sends) and
//! passed in the request: with it set to `1`, the child compiles as confined as the kernel
//! allows, says so in its answer, and the parent prints a warning once per process. The
//! lexical check (`lexcheck`) has then still refused every include form, and the compiler
//! still sees an empty environment and an empty working directory.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use wait_timeout::ChildExt;

use super::raw::{self, Compiled, Limit};

/// The hidden subcommand the child runs (see `cli::Command::NvrtcSandbox`).
pub(crate) const SUBCOMMAND: &str = "nvrtc-sandbox";

/// Wall-clock limit of one compile. The shipped attention.cu compiles in under 2 s.
pub const TIMEOUT: Duration = Duration::from_secs(120);
/// CPU-time limit of the child (seconds).
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
/// the runner's own environment (a self-hosted runner's `.env` file or service), not in a
/// workflow: README, "Compiling reads nothing".
pub const ALLOW_UNCONFINED_ENV: &str = "CI_GATE_ALLOW_UNCONFINED_NVRTC";

/// Whether this process's environment allows compiling without the full sandbox
/// ([`ALLOW_UNCONFINED_ENV`] is exactly `1`).
pub fn unconfined_allowed() -> bool {
    std::env::var_os(ALLOW_UNCONFINED_ENV).is_some_and(|v| v == "1")
}

/// The sentence (after `FILE (TARGET): `) that refuses a compile the sandbox cannot confine:
/// `why` says what is missing; it names the opt-out.
pub fn refusal(why: &str) -> String {
    format!(
        "not compiled, because the sandbox cannot confine NVRTC here: {why}; a runner's owner who accepts that risk sets {ALLOW_UNCONFINED_ENV}=1 in the runner's own environment (README, \"Compiling reads nothing\")"
    )
}

/// What the child compiles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The name NVRTC gives the source in its diagnostics.
    pub name: String,
    pub source: String,
    pub options: Vec<String>,
    /// Compile even where Landlock cannot enforce the whole ruleset ([`unconfined_allowed`]
    /// in the parent); false: such a compile is refused.
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
    /// Why the compiler ran without the Landlock confinement, when it did.
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
    if !raw::load_nvrtc() {
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
pub struct ChildOutput {
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
pub fn serve() -> bool {
    raw::close_inherited_descriptors();
    let Ok(mut answer_out) = raw::take_stdout() else {
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
    raw::set_limit(Limit::Core, 0)?;
    raw::set_limit(Limit::AddressSpace, ADDRESS_SPACE)?;
    raw::set_limit(Limit::CpuSeconds, CPU_SECONDS)?;
    raw::set_limit(Limit::Files, FILES)
}

fn compile_confined(request: &Request) -> Answer {
    if !raw::load_nvrtc() {
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
    // Landlock confines the calling thread and the threads it starts later: a thread that
    // loading a library had started would stay free. None does today (NVRTC 13.5); should a
    // later one, fail closed rather than compile half-confined.
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
    let outcome = match raw::nvrtc_compile(&request.source, &request.name, &request.options) {
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
    let Some((major, minor)) = raw::nvrtc_version() else {
        return Err("NVRTC did not report its version in the sandboxed process".into());
    };
    let path = dir.join(format!("libnvrtc-builtins.so.{major}.{minor}"));
    if !path.is_file() {
        return Ok(false);
    }
    raw::preload_library(&path)
        .map(|()| true)
        .map_err(|why| format!("NVRTC's builtins library could not be loaded: {why}"))
}

/// Applies the Landlock ruleset: nothing may be opened, but for reading beneath `readable`
/// when given. `Ok(Some(why))` where the kernel cannot enforce all of it ([`enforcement_gap`]).
fn confine(readable: Option<&Path>) -> Result<Option<String>, String> {
    use landlock::{
        Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
        Scope,
    };
    // Best effort (the crate's default) while building, so that an older kernel gets every
    // right it knows; what it could not enforce is then judged from the status.
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
    Ok(enforcement_gap(
        &status.ruleset,
        status.landlock,
        status.no_new_privs,
    ))
}

/// The Landlock ABI whose rights the ruleset handles: 6 (Linux 6.12).
const RULESET_ABI: landlock::ABI = landlock::ABI::V6;

/// Why the ruleset of [`RULESET_ABI`] does not hold in full, or None where it does.
///
/// "Fully enforced" is the crate's `RulesetStatus::FullyEnforced` for the whole ruleset,
/// with `no_new_privs` set. `PartiallyEnforced` fails closed too, because every part an older
/// kernel lacks matters to a compiler that the untrusted text might subvert (a crafted source
/// that corrupts NVRTC's memory runs whatever it likes in this process):
/// - ABI 1 handles reading, writing, executing, creating and removing files; without it the
///   runner's files are open (and ABI 2's "refer" only relaxes what ABI 1 always forbids).
/// - ABI 3 adds truncating: without it any file the runner's user may write can be emptied.
/// - ABI 4 adds TCP connect and bind: without it the runner's network is reachable, a cloud
///   metadata service with the machine's credentials included.
/// - ABI 5 adds ioctl on device files: the child holds none (three pipes) and can open none,
///   so this part alone would not matter; but no kernel lacks it without lacking ABI 6 too.
/// - ABI 6 adds the scopes: without them the child can signal the runner's processes and
///   connect to abstract UNIX sockets, where host daemons listen (container runtimes among
///   them).
///
/// So a ruleset of ABI 6 partially enforced always misses a part that matters.
fn enforcement_gap(
    ruleset: &landlock::RulesetStatus,
    landlock: landlock::LandlockStatus,
    no_new_privs: bool,
) -> Option<String> {
    use landlock::{LandlockStatus, RulesetStatus};
    match (ruleset, landlock) {
        (RulesetStatus::FullyEnforced, _) if no_new_privs => None,
        (RulesetStatus::FullyEnforced, _) => {
            Some("the NVRTC process could not set no_new_privs".into())
        }
        (_, LandlockStatus::NotImplemented) => Some("this Linux kernel has no Landlock".into()),
        (_, LandlockStatus::NotEnabled) => Some(
            "this Linux kernel has Landlock but does not enable it (the lsm= boot parameter)"
                .into(),
        ),
        (RulesetStatus::PartiallyEnforced, LandlockStatus::Available { effective_abi, .. }) => {
            Some(format!(
                "this Linux kernel's Landlock is ABI {effective_abi}, and confining files, TCP, signals and abstract sockets together needs ABI {RULESET_ABI} (Linux 6.12)"
            ))
        }
        (RulesetStatus::NotEnforced, _) => {
            Some("Landlock did not enforce the sandbox's ruleset".into())
        }
    }
}

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

    /// Only the whole ruleset with no_new_privs confines; every other status names what is
    /// missing, and the refusal names the opt-out.
    #[test]
    fn only_a_fully_enforced_ruleset_compiles() {
        use landlock::{ABI, LandlockStatus, RulesetStatus};
        let available = |abi| LandlockStatus::Available {
            effective_abi: abi,
            kernel_abi: None,
        };
        assert_eq!(
            enforcement_gap(&RulesetStatus::FullyEnforced, available(ABI::V6), true),
            None
        );
        assert_eq!(
            enforcement_gap(&RulesetStatus::FullyEnforced, available(ABI::V7), true),
            None
        );
        let gap = |r: RulesetStatus, l, nnp| enforcement_gap(&r, l, nnp).expect("a gap");
        assert_eq!(
            gap(
                RulesetStatus::NotEnforced,
                LandlockStatus::NotImplemented,
                true
            ),
            "this Linux kernel has no Landlock"
        );
        assert!(
            gap(RulesetStatus::NotEnforced, LandlockStatus::NotEnabled, true)
                .contains("does not enable it")
        );
        for abi in [ABI::V1, ABI::V3, ABI::V4, ABI::V5] {
            let why = gap(RulesetStatus::PartiallyEnforced, available(abi), true);
            assert!(
                why.contains(&format!("Landlock is ABI {abi},"))
                    && why.contains("needs ABI 6 (Linux 6.12)"),
                "{why}"
            );
        }
        assert!(
            gap(RulesetStatus::FullyEnforced, available(ABI::V6), false).contains("no_new_privs")
        );
        let sentence = refusal("this Linux kernel has no Landlock");
        assert_eq!(
            sentence,
            "not compiled, because the sandbox cannot confine NVRTC here: this Linux kernel has no Landlock; a runner's owner who accepts that risk sets CI_GATE_ALLOW_UNCONFINED_NVRTC=1 in the runner's own environment (README, \"Compiling reads nothing\")"
        );
        // The opt-out reaches the children that compile (a `--devices` run's).
        assert!(crate::child_env::passes(
            ALLOW_UNCONFINED_ENV,
            crate::child_env::Child::Gpu
        ));
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
