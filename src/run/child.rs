//! Fresh measuring processes: a run measured in a child process of its own (with its own CUDA
//! context, allocations and clock history, as separate CI jobs would be), given its request
//! as a JSON file and read back by the hidden `run-request` command ([`run_request`]).
//! `--devices` runs one per GPU, `baseline update` records its between-process spread from
//! them, and `selftest` runs its trials in them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, bail};

use super::request::{Run, RunRequest};
use crate::child_env::{Child, restrict};
use crate::outcome::Outcome;
use crate::results::ResultsFile;
use crate::shard::ShardSpec;

impl Run {
    /// A child process that measures this run's request (as `shard`, when given), writing
    /// its results to `out`: `ci-gate run-request --request FILE --out OUT`, with the
    /// environment of a GPU child and this run's device. The request file is written next to
    /// `out`.
    pub(crate) fn child(&self, out: &Path, shard: Option<ShardSpec>) -> Result<Command> {
        let request = RunRequest {
            shard: shard.or(self.request.shard),
            progress: false,
            ..self.request.clone()
        };
        let file = out.with_extension("request.json");
        crate::files::write_json(&file, &request)
            .with_context(|| format!("cannot write the run request {}", file.display()))?;
        let exe = std::env::current_exe().context("cannot find the ci-gate executable")?;
        let mut cmd = Command::new(&exe);
        restrict(&mut cmd, Child::Gpu);
        static CHILDREN: AtomicU64 = AtomicU64::new(0);
        self.backend
            .pass_to_child(&mut cmd, CHILDREN.fetch_add(1, Ordering::Relaxed));
        cmd.arg("run-request")
            .arg("--request")
            .arg(&file)
            .arg("--out")
            .arg(out);
        Ok(cmd)
    }

    /// Runs [`Run::child`] to the end and loads its results. A child that could not reach a
    /// verdict (exit 2, or killed) is an error quoting its stderr.
    pub(crate) fn run_child(&self, out: &Path) -> Result<ResultsFile> {
        let mut cmd = self.child(out, None)?;
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
}

/// The hidden `run-request` command: a child's run, from the request file its parent
/// wrote; the results go to `out` (also without a verdict, when the GPU hangs).
pub(crate) fn run_request(request: &Path, out: &Path) -> Result<Outcome> {
    let text = crate::files::read_bounded(request, 1 << 20)
        .with_context(|| format!("cannot read the run request {}", request.display()))?;
    let req: RunRequest = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a run request", request.display()))?;
    let run = Run::resolve(req)?;
    super::pipeline::on_hang(
        super::pipeline::NoVerdict::config(&run.config),
        super::pipeline::HangOut::Save(Some(out.to_owned())),
    );
    let results = run.measure_here()?;
    results
        .save(out)
        .with_context(|| "the results were measured but could not be saved")?;
    Ok(Outcome::from_passed(results.passed()))
}

/// A temporary directory for children's results files.
pub(crate) fn scratch(prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context("cannot create a temporary directory")
}

/// `dir/name`.
pub(crate) fn file_in(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

/// Records a baseline into `store` from results files, in a `baseline update` child,
/// without printing (selftest's stored-baseline path).
pub(crate) fn record_quietly(config: &Path, store: &Path, from: &[PathBuf]) -> Result<()> {
    let exe = std::env::current_exe().context("cannot find the ci-gate executable")?;
    let mut cmd = Command::new(exe);
    restrict(&mut cmd, Child::Gpu)
        .args([
            "baseline", "update", "--reason", "selftest", "--force", "--config",
        ])
        .arg(config)
        .arg("--baselines")
        .arg(store);
    for f in from {
        cmd.arg("--from").arg(f);
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .context("cannot start ci-gate baseline update")?;
    if !out.status.success() {
        bail!(
            "recording the selftest baseline failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
