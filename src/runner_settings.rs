//! The runner owner's settings of ci-gate — `CI_GATE_ALLOW_UNCONFINED_NVRTC`, `CI_GATE_PYTHON`
//! and `CI_GATE_CACHE_DIR` — read in one place.
//!
//! They say what the runner may do (compile a pull request's kernel where the NVRTC sandbox
//! cannot hold), which interpreter it runs and where it keeps compiled kernels: decisions of
//! the machine's owner, never of a workflow. In GitHub Actions a workflow controls the job's
//! environment (`env:` at any level, `$GITHUB_ENV`), and for `pull_request` events the
//! workflow file is the pull request's own. So with `GITHUB_ACTIONS=true` (which no workflow
//! can overwrite: GitHub reserves `GITHUB_*`) these three are taken only from the self-hosted
//! runner's own environment file, `<runner>/.env`, which the runner loads when it starts
//! (`Runner.Listener`, `EnvironmentParser`) and which no workflow setting changes:
//!
//! - the runner is found from this process's ancestry: the nearest ancestor (itself included)
//!   whose executable is named `Runner.Worker`, the process that runs the job; its executable
//!   is `<runner>/bin/Runner.Worker` (after a self-update `<runner>/bin.<version>/...`), so the
//!   file is `<runner>/.env`;
//! - the file is opened without following a link, must be a regular file of at most
//!   [`MAX_FILE_BYTES`], belong to root or to the runner's user, and be writable by no one
//!   else; otherwise it is not used at all (and one warning says why);
//! - its `KEY=VALUE` lines are read as the runner reads them (split at the first `=`, nothing
//!   trimmed, an empty value sets nothing, a later line wins) and only these three keys are
//!   taken;
//! - a value of one of them in the environment that differs from the file (or that the file
//!   does not have) is ignored, with one warning line per process naming it.
//!
//! Outside GitHub Actions (a developer's machine) the environment is the owner's, and is used
//! as it is. Everything that reads these settings goes through [`get`], and a child process is
//! given the resolved values ([`resolved_vars`]), never the workflow's.
//!
//! Cost: once per process, on the first read: one `stat` and one `exe` link per ancestor
//! (a handful) and one file of at most 64 KiB.
//!
//! A leaf module: it uses nothing else of the crate.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The runner owner's leave to compile untrusted source where the NVRTC sandbox cannot
/// confine it (`kernel::sandbox`): exactly `1` allows.
pub(crate) const ALLOW_UNCONFINED_NVRTC: &str = "CI_GATE_ALLOW_UNCONFINED_NVRTC";
/// The interpreter of the PyTorch peer worker (`run::peer`).
pub(crate) const PYTHON: &str = "CI_GATE_PYTHON";
/// Where compiled kernels are cached (`kernel::compile`).
pub(crate) const CACHE_DIR: &str = "CI_GATE_CACHE_DIR";
/// Every runner setting.
pub(crate) const NAMES: [&str; 3] = [ALLOW_UNCONFINED_NVRTC, PYTHON, CACHE_DIR];

/// The largest runner environment file read (the runner's own holds a few lines).
pub(crate) const MAX_FILE_BYTES: u64 = 64 << 10;
/// The most ancestors looked at: a job's processes are a few levels below the runner.
const MAX_ANCESTORS: usize = 256;
/// The runner's process that runs a job.
const WORKER: &str = "Runner.Worker";
/// Where the warnings send the reader.
const DOC: &str = "docs/RUNNER.md, \"Runner settings\"";

/// Why no runner environment file is used in GitHub Actions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoRunnerFile {
    /// No ancestor is the runner (a job container, or not a runner at all).
    #[error("cannot be found (no {WORKER} among this process's ancestors)")]
    NoRunner,
    /// The runner has no `.env` file.
    #[error("{} does not exist", shown(path))]
    Missing { path: PathBuf },
    /// The file is there but not used.
    #[error("{} is not used: {why}", shown(path))]
    Refused { path: PathBuf, why: Refusal },
}

/// Why a runner environment file is not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    #[error("it is a symbolic link")]
    Link,
    #[error("it is not a regular file")]
    NotFile,
    #[error("it is larger than {MAX_FILE_BYTES} bytes")]
    TooLarge,
    #[error("users other than its owner can write it (mode {mode:o})")]
    Writable { mode: u32 },
    #[error("it belongs to uid {owner}, neither root nor the runner's user (uid {runner})")]
    Owner { owner: u32, runner: u32 },
    #[error("it holds a NUL byte")]
    Nul,
    #[error("it cannot be read: {message}")]
    Unreadable { message: String },
}

/// The runner found among a process's ancestors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Runner {
    /// The runner's install directory (the parent of `bin/`).
    pub root: PathBuf,
    /// The user the runner runs as (the owner of its `/proc` entry).
    pub uid: u32,
}

/// The runner settings of this process, and what was ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// The values in force, by name (non-empty).
    values: Vec<(&'static str, OsString)>,
    /// One line to print, when something was ignored or a file refused.
    warning: Option<String>,
}

impl Settings {
    fn get(&self, name: &str) -> Option<&OsStr> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_os_str())
    }
}

/// The value of the runner setting `name` (one of [`NAMES`]) for this process: outside GitHub
/// Actions from the environment, in it from the runner's environment file only (see the
/// module's documentation). Unset and empty are alike: `None`. Resolved on the first call;
/// a warning, if any, is printed then, once.
pub(crate) fn get(name: &str) -> Option<OsString> {
    debug_assert!(NAMES.contains(&name), "{name} is not a runner setting");
    settings().get(name).map(OsStr::to_os_string)
}

/// The runner settings in force, as variables for a child process (`child_env`): so that a
/// child sees the values this process uses, not a workflow's.
pub(crate) fn resolved_vars() -> impl Iterator<Item = (OsString, OsString)> {
    settings()
        .values
        .iter()
        .map(|(n, v)| (OsString::from(n), v.clone()))
}

fn settings() -> &'static Settings {
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    SETTINGS.get_or_init(|| {
        let in_actions = std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true");
        let settings = resolve(in_actions, &|name| std::env::var_os(name), || {
            runner_file(Path::new("/proc"), std::process::id())
        });
        if let Some(line) = &settings.warning {
            eprintln!("{line}");
        }
        settings
    })
}

/// A runner file's settings: its path and the values of [`NAMES`] it sets.
type FileValues = (PathBuf, Vec<(&'static str, OsString)>);

/// The settings from the environment `env` and, in GitHub Actions, the runner file that
/// `runner_file` finds and reads (called only there).
pub(crate) fn resolve(
    in_actions: bool,
    env: &dyn Fn(&str) -> Option<OsString>,
    runner_file: impl FnOnce() -> Result<FileValues, NoRunnerFile>,
) -> Settings {
    let from_env = |name: &str| env(name).filter(|v| !v.is_empty());
    if !in_actions {
        let values = NAMES
            .iter()
            .filter_map(|n| from_env(n).map(|v| (*n, v)))
            .collect();
        return Settings {
            values,
            warning: None,
        };
    }
    let file = runner_file();
    let values: Vec<(&'static str, OsString)> = match &file {
        Ok((_, values)) => values.clone(),
        Err(_) => Vec::new(),
    };
    let ignored: Vec<&str> = NAMES
        .iter()
        .copied()
        .filter(|n| {
            from_env(n).is_some_and(|v| {
                values
                    .iter()
                    .find(|(f, _)| f == n)
                    .is_none_or(|(_, fv)| *fv != v)
            })
        })
        .collect();
    Settings {
        values,
        warning: warning(&file, &ignored),
    }
}

/// The one warning line: the names of the environment that were ignored, and why no file
/// was used where one was refused. The values are never shown (a workflow wrote them).
fn warning(file: &Result<FileValues, NoRunnerFile>, ignored: &[&str]) -> Option<String> {
    // What follows "the runner's environment file ".
    let file_is = match file {
        Ok((path, _)) => format!("is {}", shown(path)),
        Err(why) => why.to_string(),
    };
    if ignored.is_empty() {
        // A refused file is worth a line even when nothing was ignored: the owner's settings
        // do not apply. A runner without a file, or no runner, is not.
        return match file {
            Err(NoRunnerFile::Refused { .. }) => Some(format!(
                "warning: the runner's environment file {file_is}, so no runner setting ({}) applies in this job ({DOC})",
                NAMES.join(", ")
            )),
            _ => None,
        };
    }
    let (them, are, values) = if ignored.len() == 1 {
        ("it", "is", "this value is")
    } else {
        ("them", "are", "these values are")
    };
    Some(format!(
        "warning: {} in this job's environment {are} ignored: in GitHub Actions ci-gate takes {them} from the runner's environment file only, and {values} not the file's (a workflow's env: or $GITHUB_ENV set {them}, or the file changed after the runner started); the runner's environment file {file_is} ({DOC})",
        join_names(ignored),
    ))
}

/// `A`, `A and B`, `A, B and C`.
fn join_names(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A path for a message: control characters escaped, so that a line stays one line.
fn shown(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// The runner environment file of the runner among the ancestors of `pid` (under the proc
/// file system at `proc_root`), read ([`read_file`]).
pub(crate) fn runner_file(proc_root: &Path, pid: u32) -> Result<FileValues, NoRunnerFile> {
    let runner = find_runner(proc_root, pid).ok_or(NoRunnerFile::NoRunner)?;
    let path = runner.root.join(".env");
    let values = read_file(&path, runner.uid)?;
    Ok((path, values))
}

/// The nearest process, from `pid` up through its parents, whose executable is named
/// `Runner.Worker`: its install directory and user. Processes whose executable cannot be
/// read (another user's) are passed over; the walk ends at a process without a readable
/// parent, at pid 0, or after [`MAX_ANCESTORS`] steps.
pub(crate) fn find_runner(proc_root: &Path, pid: u32) -> Option<Runner> {
    let mut pid = pid;
    for _ in 0..MAX_ANCESTORS {
        let dir = proc_root.join(pid.to_string());
        if let Ok(exe) = std::fs::read_link(dir.join("exe")) {
            // A replaced executable reads as "PATH (deleted)".
            let name = exe.file_name().map(OsStr::as_bytes).unwrap_or_default();
            let name = name.strip_suffix(b" (deleted)").unwrap_or(name);
            if name == WORKER.as_bytes() {
                let root = exe.parent()?.parent()?.to_path_buf();
                let uid = std::fs::metadata(&dir).ok()?.uid();
                return Some(Runner { root, uid });
            }
        }
        let parent = parent_pid(&dir)?;
        if parent == 0 || parent == pid {
            return None;
        }
        pid = parent;
    }
    None
}

/// The parent's pid from `DIR/stat`: the field after the state, which follows the last `)`
/// (the command name before it may hold anything, `)` included).
fn parent_pid(dir: &Path) -> Option<u32> {
    let mut text = String::new();
    std::fs::File::open(dir.join("stat"))
        .ok()?
        .take(4096)
        .read_to_string(&mut text)
        .ok()?;
    let after = &text[text.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// The runner settings the runner environment file `path` sets, checked as the module's
/// documentation says; `runner_uid` is the runner's user.
pub(crate) fn read_file(
    path: &Path,
    runner_uid: u32,
) -> Result<Vec<(&'static str, OsString)>, NoRunnerFile> {
    let refused = |why| NoRunnerFile::Refused {
        path: path.to_path_buf(),
        why,
    };
    let unreadable = |e: std::io::Error| {
        refused(Refusal::Unreadable {
            message: e.to_string(),
        })
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(NoRunnerFile::Missing {
                path: path.to_path_buf(),
            });
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(refused(Refusal::Link)),
        Err(e) => return Err(unreadable(e)),
    };
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(refused(Refusal::NotFile));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(refused(Refusal::TooLarge));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(refused(Refusal::Writable { mode }));
    }
    if meta.uid() != 0 && meta.uid() != runner_uid {
        return Err(refused(Refusal::Owner {
            owner: meta.uid(),
            runner: runner_uid,
        }));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(refused(Refusal::TooLarge));
    }
    parse(&bytes).map_err(refused)
}

/// The runner settings of an environment file's text, read as the runner reads it: one
/// `KEY=VALUE` per line (LF or CRLF), split at the first `=`, nothing trimmed (so `#KEY=…`
/// and `KEY =…` are other keys), an empty value sets nothing, a later line wins. Other keys
/// are not ci-gate's and are passed over.
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<(&'static str, OsString)>, Refusal> {
    if bytes.contains(&0) {
        return Err(Refusal::Nul);
    }
    let mut values: Vec<(&'static str, OsString)> = Vec::new();
    for line in bytes.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(eq) = line.iter().position(|b| *b == b'=') else {
            continue;
        };
        let (key, value) = (&line[..eq], &line[eq + 1..]);
        let Some(name) = NAMES.iter().find(|n| n.as_bytes() == key) else {
            continue;
        };
        if value.is_empty() {
            continue;
        }
        values.retain(|(n, _)| n != name);
        values.push((name, OsStr::from_bytes(value).to_os_string()));
    }
    Ok(values)
}

#[cfg(test)]
mod tests;
