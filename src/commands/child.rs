//! Fresh measuring processes: `ci-gate local` run as a child, each with its own CUDA
//! context, allocations and clock history, as separate CI jobs would be. `baseline update`
//! records its between-process spread from them; `selftest` runs its trials in them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::child_env::{Child, restrict};
use crate::results::ResultsFile;

/// What a child `local` run measures.
pub struct LocalChild<'a> {
    pub config: &'a Path,
    pub kernels: &'a Path,
    pub baselines: &'a Path,
    pub shapes: &'a [String],
    /// Further arguments (`--base-kernels`, `--inject`, …).
    pub extra: Vec<String>,
}

impl LocalChild<'_> {
    /// Runs the child, writing its results to `out`, and loads them. A child that could not
    /// reach a verdict (exit 2, or killed) is an error quoting its stderr.
    pub fn run(&self, out: &Path) -> Result<ResultsFile> {
        let mut cmd = self.command(out)?;
        let exe = PathBuf::from(cmd.get_program());
        let output = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .with_context(|| format!("cannot start {}", exe.display()))?;
        if output.status.code() == Some(2) || output.status.code().is_none() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            bail!(
                "a measuring process failed ({}): {}",
                output.status,
                stderr.trim()
            );
        }
        ResultsFile::load(out).map_err(Into::into)
    }

    /// The command line of the child, writing its results (JSON) to `out`.
    pub fn command(&self, out: &Path) -> Result<Command> {
        let exe = std::env::current_exe().context("cannot find the ci-gate executable")?;
        let mut cmd = Command::new(&exe);
        restrict(&mut cmd, Child::Gpu);
        cmd.arg("local")
            .arg("--config")
            .arg(self.config)
            .arg("--kernels")
            .arg(self.kernels)
            .arg("--baselines")
            .arg(self.baselines)
            .args(["--format", "json", "--out"])
            .arg(out)
            .args(&self.extra);
        for s in self.shapes {
            cmd.args(["--shape", s]);
        }
        Ok(cmd)
    }
}

/// A temporary directory for children's results files.
pub fn scratch(prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context("cannot create a temporary directory")
}

/// `dir/name`.
pub fn file_in(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}
