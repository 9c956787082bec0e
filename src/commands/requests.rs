//! The command line, as the engine is asked: `cli`'s clap structs converted into `run`'s plain
//! request types, here on the commands' side, so that the engine (`src/run/`) never imports
//! `cli` and a child's request is only data.

use crate::cli::{BaseArgs, ConfigArgs, ProfileArgs, RunFlags};
use crate::run::RunPaths;
use crate::run::RunRequest;
use crate::run::git::BaseChoice;
use crate::run::profile::ProfileRequest;

impl From<&ConfigArgs> for RunPaths {
    fn from(a: &ConfigArgs) -> RunPaths {
        RunPaths {
            config: a.config.clone(),
            kernels: a.kernels.clone(),
            baselines: a.baselines.clone(),
        }
    }
}

/// `--no-base`, `--base-kernels`, `--base` (clap lets at most one through; were there more,
/// the first of these would win).
impl From<&BaseArgs> for BaseChoice {
    fn from(a: &BaseArgs) -> BaseChoice {
        if a.no_base {
            BaseChoice::NoBase
        } else if let Some(dir) = &a.base_kernels {
            BaseChoice::Dir(dir.clone())
        } else if let Some(rev) = &a.base {
            BaseChoice::Rev(rev.clone())
        } else {
            BaseChoice::Default
        }
    }
}

impl From<&ProfileArgs> for ProfileRequest {
    fn from(a: &ProfileArgs) -> ProfileRequest {
        ProfileRequest {
            profile: a.profile.clone(),
            profile_slowest: a.profile_slowest,
            no_profile: a.no_profile,
            profile_dir: a.profile_dir.clone(),
            profile_budget_s: a.profile_budget_s,
            ncu: a.ncu.clone(),
        }
    }
}

/// `request` with the run flags `local` and `ci` share (`cli::RunFlags`).
pub(super) fn with_flags(request: RunRequest, flags: &RunFlags) -> RunRequest {
    RunRequest {
        peers: request.peers && !flags.no_peers,
        energy: request.energy || flags.energy,
        ..request
    }
}
