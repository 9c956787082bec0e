//! The prepare phase of `local` and `ci`: what they settle before the GPU section (the run
//! resolved, the request's options checked, the base resolved, the devices of `--devices`),
//! and the GPU work they share: the measuring (here, or one child per device) and the
//! profiles. The two commands differ only in how they publish.

use anyhow::{Result, bail};

use super::git::{BaseChoice, ResolvedBase, resolve_base};
use super::profile::ProfileRequest;
use super::request::Run;
use super::sharing::GpuHold;
use crate::results::ResultsFile;

/// A run ready to measure: the run with its base resolved, the GPUs to fan out to, the
/// base (whose temporary checkout lives as long as this), and the profiles asked for.
/// Nothing here compiles or launches anything.
pub(crate) struct PreparedRun {
    pub run: Run,
    devices: Option<Vec<u32>>,
    base: ResolvedBase,
    profile: ProfileRequest,
}

/// Checks `run`'s request (`--inject`, `--profile`, `--devices`) and resolves its base from
/// `base` (`merge_base_by_default`: `local`'s default).
pub(crate) fn prepare(
    mut run: Run,
    base: &BaseChoice,
    profile: ProfileRequest,
    devices: Option<&str>,
    merge_base_by_default: bool,
) -> Result<PreparedRun> {
    if let Some(f) = run.request.inject
        && !(f > 0.0 && f < 1.0)
    {
        bail!("--inject {f}: the slowdown must be a fraction between 0 and 1");
    }
    super::profile::check_args(&profile)?;
    super::profile::check_request(&profile, &run.config)?;
    let devices = match devices {
        Some(list) => Some(super::devices::parse_devices(list)?),
        None => None,
    };
    let base = resolve_base(base, &run.request.kernels, merge_base_by_default)?;
    run.request.base = base.kernels.clone();
    Ok(PreparedRun {
        run,
        devices,
        base,
        profile,
    })
}

impl PreparedRun {
    /// What the candidate is measured against, for a line before the run: the base's source,
    /// or why there is none.
    pub(crate) fn base_line(&self) -> Option<String> {
        match (&self.base.kernels, &self.base.note) {
            (Some(k), _) => Some(format!("base kernels from {}", k.source)),
            (None, note) => note.clone(),
        }
    }

    /// Whether the measuring happens in this process (no `--devices`): then a hung GPU is
    /// this process's to report.
    pub(crate) fn measures_here(&self) -> bool {
        self.devices.is_none()
    }

    /// One ci-gate run per GPU at a time (`sharing`): the lock of this run's GPU, taken once,
    /// to be held through the measuring and the profiles ([`PreparedRun::measure`]). Empty
    /// with `--devices` (each child takes its own GPU's) or where the backend has no GPU.
    pub(crate) fn lock_gpu(&self) -> Result<GpuHold> {
        if self.measures_here() {
            GpuHold::take(self.run.backend)
        } else {
            Ok(GpuHold::none())
        }
    }

    /// The GPU work, under `gpu` (from [`PreparedRun::lock_gpu`]): measure (here, or one
    /// child per device), then profile (`profile`).
    pub(crate) fn measure(&self, gpu: &GpuHold) -> Result<ResultsFile> {
        let run = &self.run;
        let mut results = match &self.devices {
            Some(devices) => super::devices::run_on_devices(devices, run)?,
            None => run.measure(gpu)?,
        };
        results.notes.extend(self.base.note.clone());
        super::profile::profile_after(
            &mut results,
            &self.profile,
            &run.request.config,
            &run.request.kernels,
            self.base.kernels.as_ref(),
        );
        Ok(results)
    }
}
