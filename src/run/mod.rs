//! The engine: one measuring run, from its description to its published results.
//!
//! - [`request`]: the run described once ([`RunRequest`], also what a child process is
//!   given) and resolved once ([`Run`]: the config loaded, the shapes selected and sharded,
//!   the device chosen — [`BackendChoice`], in [`device`]).
//! - `prepare`: what `local` and `ci` settle before the GPU section (the request checked,
//!   the base resolved with `git`, the devices of `--devices`), and the GPU work they share.
//! - [`pipeline`]: the measuring, phase by phase: setup, `parity`, `stages`, `decide` (the
//!   interim looks that plan what to measure, and the one decision), `drift`, `energy`,
//!   `assemble` (the results file); each phase returns what it produces to the next, what
//!   they all add to is a `session`, the stored baseline `stored`. A phase's file is named after the phase, so `parity`,
//!   `energy` and `profile` repeat the name of the module that does the device work or
//!   holds the figures (`gpu::parity`, `crate::energy`, `crate::profile`): here when and
//!   for which shapes, there how. `device` is which device measures, `gpu::device` the GPU.
//! - `profile`: ncu profiles after the verdicts; `publish`: what `ci` (and `merge --ci`)
//!   leaves in GitHub Actions.
//! - `child` (fresh measuring processes, `run-request`), `devices` (`--devices`), `peer`
//!   (the PyTorch worker), `sharing` (one run per GPU, other processes seen), `tool`
//!   (compute-sanitizer and ncu runs), `untrusted` (workflow commands suspended while
//!   untrusted code runs).

mod assemble;
pub(crate) mod child;
mod decide;
pub(crate) mod device;
pub(crate) mod devices;
mod drift;
mod energy;
pub(crate) mod git;
mod parity;
pub(crate) mod peer;
pub(crate) mod pipeline;
pub(crate) mod prepare;
pub(crate) mod profile;
pub(crate) mod publish;
pub(crate) mod request;
mod session;
mod shape;
pub(crate) mod sharing;
mod stages;
mod stored;
pub(crate) mod tool;
pub(crate) mod untrusted;

pub use device::BackendChoice;
pub use request::{BaseKernels, Run, RunPaths, RunRequest};
