//! The measuring process of one candidate: `ci-gate eval-worker` (hidden), a fresh process
//! and CUDA context per candidate, so that a crash, a hang, a fault or corrupted memory ends
//! with it and the next candidate is measured as if it never ran.
//!
//! The evaluator's worker; `commands::worker` is `kernel-run`, the process compute-sanitizer
//! and ncu run.
//!
//! - In the child ([`serve`]): the run's request from the file its parent wrote, with the
//!   cache mode of a confirming measurement, through the gate's own pipeline
//!   (`Run::measure_here`: the GPU's lock, the candidate and the reference loaded from the
//!   compile cache, parity on random shapes and on every shape of both sides, the A/B pairs
//!   under the planned design with every per-launch check, the speed limits, the GPU-time
//!   budget and the watchdog); the results file goes to `--out`, also without a verdict (a
//!   hang, an error). [`describe`] reports the device's facts for compiling ahead.
//! - In the evaluator ([`Spawner::run`]): the child started in its own process group with the
//!   environment of a GPU child (`child_env`), its stdout (where kernel `printf` lands)
//!   discarded, its stderr kept in a file, killed with its group past a deadline; its results
//!   file read back as any results file (checked as untrusted).

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use wait_timeout::ChildExt;

use crate::child_env::{Child, restrict};
use crate::config::CacheMode;
use crate::outcome::Outcome;
use crate::results::ResultsFile;
use crate::run::{BackendChoice, Run, RunRequest};

/// What the evaluator asks of one measuring process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkerRequest {
    pub run: RunRequest,
    /// `measure.cache` for this measurement (a confirmation's), else the config's.
    pub cache: Option<CacheMode>,
    /// The SHA-256 of the config the evaluator loaded: a config changed since is refused.
    pub config_hash: String,
}

/// The hidden `eval-worker` command: measures `request` and writes the results to `out`.
pub(crate) fn serve(request: &Path, out: &Path) -> Result<Outcome> {
    let text = crate::files::read_bounded(request, 1 << 20)
        .with_context(|| format!("cannot read the request {}", request.display()))?;
    let req: WorkerRequest = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not an eval-worker request", request.display()))?;
    let (mut config, _) = crate::config::load_selected(&req.run.config, &[])?;
    if config.hash != req.config_hash {
        bail!(
            "the config {} changed while the evaluator ran (its SHA-256 is not the one the evaluator loaded)",
            req.run.config.display()
        );
    }
    if let Some(cache) = req.cache {
        config.measure.cache = cache;
    }
    let run = Run::with_config(req.run, config, BackendChoice::from_env()?)?;
    crate::run::pipeline::on_hang(
        crate::run::pipeline::NoVerdict::config(&run.config),
        crate::run::pipeline::HangOut::Save(Some(out.to_owned())),
    );
    match run.measure_here() {
        Ok(results) => {
            results
                .save(out)
                .context("the results were measured but could not be saved")?;
            Ok(Outcome::Pass)
        }
        Err(e) => {
            let _ = crate::run::pipeline::failed_run(Some(&run.config), &e).save(out);
            Err(e)
        }
    }
}

/// A device's facts for compiling ahead: its architecture and shared-memory limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeviceFacts {
    pub name: String,
    pub uuid: String,
    pub major: u32,
    pub minor: u32,
    pub max_smem_optin: u32,
}

/// The hidden `eval-worker --describe`: device 0's facts (after `CUDA_VISIBLE_DEVICES`) to
/// `out`. It opens a context, and nothing runs on it.
pub(crate) fn describe(out: &Path) -> Result<Outcome> {
    let (_ctx, _stream, info) = crate::gpu::device::open_device()?;
    let facts = DeviceFacts {
        name: info.name,
        uuid: info.uuid,
        major: info.arch.major,
        minor: info.arch.minor,
        max_smem_optin: info.max_smem_optin,
    };
    crate::files::write_json(out, &facts)?;
    Ok(Outcome::Pass)
}

/// How a measuring process ended: its results file (checked), or why there is none.
#[derive(Debug)]
pub(crate) struct Finished {
    pub results: Result<ResultsFile, NoResults>,
    /// Start to exit, seconds.
    pub wall_s: f64,
}

/// Why a measuring process left no results file to judge (the candidate's line says it).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoResults {
    /// The evaluator could not write the process's request.
    #[error("cannot write the request: {0}")]
    Request(String),
    /// The process could not be started or waited for.
    #[error("{0}")]
    Spawn(String),
    #[error(
        "the measuring process did not finish within {0:.0} s (eval.timeout_s) and was killed with its children"
    )]
    TimedOut(f64),
    #[error("its results file is not valid: {0}")]
    Invalid(String),
    #[error("the measuring process ended ({status}) without a results file: {last_line}")]
    NoFile { status: String, last_line: String },
}

/// Starts measuring processes: this executable, the run's device (a simulated one gets a
/// seed of its own per process), one device of this host.
pub(crate) struct Spawner {
    pub backend: BackendChoice,
    /// Set `CUDA_VISIBLE_DEVICES` to the device (with `--devices`); else the child sees what
    /// this process sees.
    pub pin_devices: bool,
    started: AtomicU64,
}

/// The tail of a process's stderr kept for a message.
const STDERR_KEPT: u64 = 64 * 1024;

impl Spawner {
    pub fn new(backend: BackendChoice, pin_devices: bool) -> Spawner {
        Spawner {
            backend,
            pin_devices,
            started: AtomicU64::new(0),
        }
    }

    /// Runs `ci-gate eval-worker ARGS` on `device`, with its stderr in `dir/stderr`, killed
    /// with its process group after `limit`; `out` is where it writes (`None`: nothing
    /// expected but its exit).
    pub fn run(
        &self,
        args: &[OsString],
        dir: &Path,
        out: &Path,
        device: u32,
        limit: Duration,
    ) -> Finished {
        let started = Instant::now();
        let ended = self.spawn_and_wait(args, dir, device, limit);
        let wall_s = started.elapsed().as_secs_f64();
        let results = match ended {
            Err(e) => Err(NoResults::Spawn(format!("{e:#}"))),
            Ok(Ended::TimedOut) => Err(NoResults::TimedOut(limit.as_secs_f64())),
            Ok(Ended::Exited(status)) => match ResultsFile::load(out) {
                Ok(r) => Ok(r),
                Err(e) if out.exists() => Err(NoResults::Invalid(e.to_string())),
                Err(_) => Err(NoResults::NoFile {
                    status: status.to_string(),
                    last_line: last_line(&dir.join("stderr")),
                }),
            },
        };
        Finished { results, wall_s }
    }

    /// Runs `ci-gate eval-worker ARGS` on `device` to its end (at most `limit`): an error
    /// unless it exits 0, with the last line of its stderr.
    pub fn wait(&self, args: &[OsString], dir: &Path, device: u32, limit: Duration) -> Result<()> {
        match self.spawn_and_wait(args, dir, device, limit)? {
            Ended::Exited(s) if s.success() => Ok(()),
            Ended::Exited(s) => bail!("{s}: {}", last_line(&dir.join("stderr"))),
            Ended::TimedOut => bail!("no answer within {:.0} s", limit.as_secs_f64()),
        }
    }

    fn spawn_and_wait(
        &self,
        args: &[OsString],
        dir: &Path,
        device: u32,
        limit: Duration,
    ) -> Result<Ended> {
        let exe = std::env::current_exe().context("cannot find the ci-gate executable")?;
        let stderr = std::fs::File::create(dir.join("stderr"))
            .with_context(|| format!("cannot create a file in {}", dir.display()))?;
        let mut cmd = Command::new(&exe);
        restrict(&mut cmd, Child::Gpu);
        self.backend
            .pass_to_child(&mut cmd, self.started.fetch_add(1, Ordering::Relaxed));
        if self.pin_devices {
            cmd.env("CUDA_VISIBLE_DEVICES", device.to_string());
        }
        use std::os::unix::process::CommandExt;
        let mut child = cmd
            .arg("eval-worker")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {}", exe.display()))?;
        match child.wait_timeout(limit)? {
            Some(status) => Ok(Ended::Exited(status)),
            None => {
                crate::run::tool::kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                Ok(Ended::TimedOut)
            }
        }
    }
}

enum Ended {
    Exited(std::process::ExitStatus),
    TimedOut,
}

/// The last non-empty line of a file's tail, cleaned for a message.
fn last_line(path: &Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut bytes = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let len = f.seek(SeekFrom::End(0)).unwrap_or(0);
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(STDERR_KEPT)));
        let _ = f.take(STDERR_KEPT).read_to_end(&mut bytes);
    }
    let text = String::from_utf8_lossy(&bytes);
    let line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(no message)");
    crate::text::clip_text(&crate::text::error_line(line), 1000)
}

/// The arguments of a measuring run: `--request FILE --out FILE`.
pub(crate) fn measure_args(request: &Path, out: &Path) -> Vec<OsString> {
    vec![
        "--request".into(),
        request.as_os_str().to_owned(),
        "--out".into(),
        out.as_os_str().to_owned(),
    ]
}

/// The arguments of `--describe --out FILE`.
pub(crate) fn describe_args(out: &Path) -> Vec<OsString> {
    vec![
        "--describe".into(),
        "--out".into(),
        out.as_os_str().to_owned(),
    ]
}

/// Reads a `--describe` answer.
pub(crate) fn read_facts(path: &Path) -> Result<DeviceFacts> {
    let bytes = crate::files::read_bounded(path, 64 * 1024)?;
    let facts: DeviceFacts = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a device description", path.display()))?;
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_travels_as_json_and_refuses_unknown_fields() {
        let req = WorkerRequest {
            run: RunRequest::gate(&crate::cli::ConfigArgs {
                config: "c.yaml".into(),
                kernels: "k".into(),
                baselines: "b".into(),
            }),
            cache: Some(CacheMode::Cold),
            config_hash: "0".repeat(64),
        };
        let json = serde_json::to_string(&req).unwrap();
        assert_eq!(serde_json::from_str::<WorkerRequest>(&json).unwrap(), req);
        let extra = json.replacen('{', "{\"x\": 1, ", 1);
        assert!(serde_json::from_str::<WorkerRequest>(&extra).is_err());
    }

    #[test]
    fn the_last_line_of_a_stderr_file_is_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("stderr");
        std::fs::write(&p, "first\nerror: the GPU \u{1b}[2Jhung\n\n").unwrap();
        assert_eq!(last_line(&p), "the GPU hung");
        assert_eq!(last_line(&dir.path().join("none")), "(no message)");
    }
}
