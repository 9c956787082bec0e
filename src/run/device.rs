//! Which device measures a run: [`BackendChoice`], a value of the resolved run. The GPU, or
//! the seeded simulation (`crate::sim`), which only `CI_GATE_SIMULATE` selects and
//! `sim::simulation_seed` refuses in GitHub Actions: a simulated kernel's times are what its
//! own source says, so it is a test device, never a verdict on a runner.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Result;

use super::git::BaseKernels;
use crate::backend::Backend;
use crate::config::Config;
use crate::kernel::KernelRoles;

/// The device a run measures with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// The GPU this process sees (device 0), through cudarc.
    Gpu,
    /// The simulated GPU of this seed (tests and CI).
    Simulated { seed: u64 },
}

impl BackendChoice {
    /// This process's device: the simulation where `CI_GATE_SIMULATE` asks for it, else the
    /// GPU; an error in GitHub Actions when the simulation is asked for
    /// (`sim::simulation_seed`, the one place that reads the variable).
    pub(crate) fn from_env() -> Result<BackendChoice> {
        Ok(match crate::sim::simulation_seed()? {
            Some(seed) => BackendChoice::Simulated { seed },
            None => BackendChoice::Gpu,
        })
    }

    /// Opens the device for a run of the candidate's `kernels` (against `base`'s, in A/B):
    /// compiles and loads them (with a base, the harness — reference and utility kernels —
    /// is the base's: trusted code checks the candidate, never the candidate's own
    /// reference), with `config`'s compile defines, GPU-time budget and longest wait.
    pub fn open(
        self,
        kernels: &Path,
        base: Option<&BaseKernels>,
        config: &Config,
    ) -> Result<Box<dyn Backend>> {
        let roles = KernelRoles::new(kernels, base.map(|b| b.dir.as_path()));
        let budget_s = config.gpu_budget_s();
        let max_wait = Duration::from_secs_f64(config.measure.max_wait_s);
        Ok(match self {
            BackendChoice::Simulated { seed } => Box::new(
                crate::sim::SimBackend::open(seed, &roles)?
                    .with_budget(budget_s)
                    .with_max_wait(max_wait),
            ),
            BackendChoice::Gpu => Box::new(crate::gpu::cuda_backend::CudaBackend::open(
                &roles,
                &config.compile.defines,
                max_wait,
                budget_s,
            )?),
        })
    }

    /// Whether it is the simulated GPU.
    pub(crate) fn simulated(self) -> bool {
        matches!(self, BackendChoice::Simulated { .. })
    }

    /// The key of the device's lock (`gpu::lock`): the simulated GPU's UUID (runs with one
    /// seed share a GPU), or device 0's; `None` where there is no GPU to lock.
    pub(crate) fn gpu_key(self) -> Option<String> {
        match self {
            BackendChoice::Simulated { seed } => Some(crate::sim::gpu_uuid(seed)),
            BackendChoice::Gpu => crate::gpu::lock::device0_uuid(),
        }
    }

    /// Gives the `k`-th child process of this one its device: the GPU it inherits, or a
    /// simulation of its own seed (a fresh process on a GPU has its own clock history and
    /// allocations, hence its own process shift), reproducibly. No child inherits
    /// `CI_GATE_SIMULATE` (`child_env`): it is given explicitly here, and the child resolves
    /// its own choice from it, refused in GitHub Actions as any.
    pub(crate) fn pass_to_child(self, cmd: &mut Command, k: u64) {
        if let BackendChoice::Simulated { seed } = self {
            let child = seed.wrapping_mul(1_000_003).wrapping_add(k + 1);
            cmd.env(crate::sim::SIMULATE_ENV, child.to_string());
        }
    }
}
