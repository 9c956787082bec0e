//! External CUDA tools (compute-sanitizer, ncu): finding them, and running one with a time
//! limit. A tool runs in its own process group so that a timeout also ends the program it
//! launched.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use wait_timeout::ChildExt;

use crate::child_env::{Child, restrict};

/// Finds `name`: `explicit` when given (it must exist), else on the PATH, else in
/// `$CUDA_HOME/bin` or `/usr/local/cuda/bin`. `None` when it is nowhere.
pub fn find(name: &str, explicit: Option<&Path>) -> Result<Option<PathBuf>> {
    if let Some(p) = explicit {
        if !p.is_file() {
            bail!("{}: no such file (the {name} executable)", p.display());
        }
        return Ok(Some(p.to_owned()));
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("CUDA_HOME").filter(|h| !h.is_empty()) {
        dirs.push(PathBuf::from(home).join("bin"));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    Ok(dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file()))
}

/// The last non-empty line of `tool --version` (e.g. "Version 2025.3.1"), if it answers.
pub(crate) fn version(tool: &Path) -> Option<String> {
    let out = restrict(&mut Command::new(tool), Child::Gpu)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| crate::text::clip_text(&crate::text::terminal_text(l), 120))
}

/// How a bounded run ended.
pub(crate) struct Ran {
    /// `None` when it was killed at the time limit.
    pub status: Option<ExitStatus>,
    pub seconds: f64,
    /// Its output (stdout and stderr together), at most the last 8 MiB (ncu's raw CSV page
    /// of one launch has hundreds of columns).
    pub output: String,
}

impl Ran {
    pub(crate) fn timed_out(&self) -> bool {
        self.status.is_none()
    }

    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// The output's last non-empty line, cleaned for a terminal, for error messages.
    pub(crate) fn last_line(&self) -> String {
        let line = self
            .output
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("(no output)");
        crate::text::clip_text(&crate::text::terminal_text(line), 400)
    }
}

const OUTPUT_KEPT: u64 = 8 * 1024 * 1024;

/// Runs `cmd` with stdin closed and stdout and stderr to a temporary file, killing its
/// whole process group after `limit`.
pub(crate) fn run_bounded(mut cmd: Command, limit: Duration) -> Result<Ran> {
    let log = tempfile::tempfile().context("cannot create a temporary file")?;
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log.try_clone()?)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    let status = match child.wait_timeout(limit)? {
        Some(s) => Some(s),
        None => {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    };
    Ok(Ran {
        status,
        seconds: started.elapsed().as_secs_f64(),
        output: tail(log),
    })
}

/// Ends a process group by its leader's id (the tool and the program it launched).
pub(crate) fn kill_group(pid: u32) {
    let _ = restrict(&mut Command::new("kill"), Child::Plain)
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn tail(mut f: File) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let len = f.seek(SeekFrom::End(0)).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(OUTPUT_KEPT)));
    let mut bytes = Vec::new();
    let _ = f.take(OUTPUT_KEPT).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The command line of `ci-gate kernel-run` for one kernel set.
pub(crate) struct KernelRun<'a> {
    pub config: &'a Path,
    pub kernels: &'a Path,
    pub harness: &'a Path,
    pub shapes: &'a [String],
    pub no_reference: bool,
    /// `--max-wait-s`: the program's bound on one wait for the GPU (None: the config's).
    pub max_wait_s: Option<u64>,
}

impl KernelRun<'_> {
    /// The arguments after the executable.
    pub fn args(&self) -> Result<Vec<std::ffi::OsString>> {
        let exe = std::env::current_exe().context("cannot find the ci-gate executable")?;
        let mut a: Vec<std::ffi::OsString> = vec![exe.into(), "kernel-run".into()];
        a.extend(["--config".into(), self.config.as_os_str().to_owned()]);
        a.extend(["--kernels".into(), self.kernels.as_os_str().to_owned()]);
        a.extend(["--harness".into(), self.harness.as_os_str().to_owned()]);
        for s in self.shapes {
            a.extend(["--shape".into(), s.into()]);
        }
        if self.no_reference {
            a.push("--no-reference".into());
        }
        if let Some(s) = self.max_wait_s {
            a.extend(["--max-wait-s".into(), s.to_string().into()]);
        }
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_past_its_limit_is_killed_with_its_children() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo started; sleep 30 & sleep 30"]);
        let ran = run_bounded(cmd, Duration::from_millis(300)).unwrap();
        assert!(ran.timed_out());
        assert!(ran.seconds < 10.0, "{}", ran.seconds);
        assert_eq!(ran.last_line(), "started");
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo one; echo two >&2; exit 3"]);
        let ran = run_bounded(cmd, Duration::from_secs(30)).unwrap();
        assert_eq!(ran.status.and_then(|s| s.code()), Some(3));
        assert!(ran.output.contains("one") && ran.output.contains("two"));
    }

    #[test]
    fn the_kernel_run_line_carries_the_wait_bound_only_when_given() {
        let shapes = ["b1h2s3d64_f16".to_owned()];
        let run = |max_wait_s| {
            KernelRun {
                config: Path::new("c.yaml"),
                kernels: Path::new("k"),
                harness: Path::new("h"),
                shapes: &shapes,
                no_reference: true,
                max_wait_s,
            }
            .args()
            .unwrap()
            .into_iter()
            .skip(1) // the executable
            .map(|a| a.into_string().unwrap())
            .collect::<Vec<_>>()
        };
        let base = "kernel-run --config c.yaml --kernels k --harness h --shape b1h2s3d64_f16 \
                    --no-reference";
        assert_eq!(run(None).join(" "), base);
        assert_eq!(run(Some(600)).join(" "), format!("{base} --max-wait-s 600"));
    }

    #[test]
    fn an_explicit_tool_must_exist() {
        assert!(find("ncu", Some(Path::new("/nonexistent/ncu"))).is_err());
        assert_eq!(
            find("sh", Some(Path::new("/bin/sh"))).unwrap(),
            Some(PathBuf::from("/bin/sh"))
        );
        assert_eq!(find("no-such-tool-ci-gate", None).unwrap(), None);
    }
}
