//! ci-gate: a performance regression gate for CUDA kernels.
//!
//! Layers, from the top (a module imports only from layers below its own, and no modules
//! import each other in a circle: `.ci/module-cycles.py`):
//!
//! 1. `main` and `commands` (one module per subcommand, and the dispatcher);
//! 2. `run`, the engine: a run described and resolved once (`run::RunRequest`, `run::Run`),
//!    the pipeline's phases, child processes, profiling and publishing; and `eval`, the
//!    evaluator for optimisation loops, which drives the engine (one measuring process per
//!    candidate) and which `run` never imports;
//! 3. `cli` (the command line's types: `commands` converts them into the engine's own request
//!    types, so `run` never imports it; `eval` reads its options from it), the
//!    measuring devices `gpu` (cudarc) and `sim` (the seeded simulation, and its noise
//!    model), both implementing `backend::Measure` (what runs kernels) and `backend::Facts`
//!    (what is only read), together `backend::Backend`, and `github` (the API and Actions);
//! 4. `kernel`, the kernel-source boundary both devices use: a kernel directory and its
//!    files (`kernel::KernelDir`, `kernel::KernelRoles`), a source read as untrusted input,
//!    the lexical check, NVRTC in a sandbox with its cache, the CUBIN policy, the entry
//!    points;
//! 5. `backend` (the measuring interface, its error and the devices' per-shape state; the
//!    measurements themselves are the engine's, `run::shape`), `evaluate`
//!    (verdicts, and the planned two-stage decision), `report`, `history`, `profile`,
//!    `sanitize`, `peers`, `shard` (shards and their merge), `baseline`, `results`,
//!    `resources`, `energy`, `comparison`, `verdict`, `config`, `samples`, `files`,
//!    `validate`, `witness`, `stats`: none of them knows `gpu`, `sim`, `run`, `cli`, `commands` or
//!    `github`;
//! 6. `gpu_error` (the measuring backend's error, which `backend` re-exports and `kernel`
//!    returns), `ffi` (every `unsafe` call of the crate: the CUDA driver's and NVRTC's C interfaces
//!    through cudarc, and the sandboxed compiler's process calls; used by `gpu` and `kernel`),
//!    `method` (what decides what a time means: the harness kernels' text and the
//!    scheme's version), `outcome` (a command's exit), `text` (showing untrusted text), `yaml` (the depth of
//!    YAML text) and `runner_settings` (the runner owner's settings, from the runner's own
//!    environment file in GitHub Actions) know nothing of the crate at all; `child_env` (what
//!    a started process may see of the environment) knows only `runner_settings`.
//!
//! Items the binary and the integration tests do not use are `pub(crate)`, so the compiler
//! reports what is dead.
//!
//! `unsafe` is denied everywhere but in `ffi`.

#![deny(unsafe_code)]

pub mod backend;
pub mod baseline;
pub(crate) mod child_env;
pub mod cli;
pub mod commands;
pub mod comparison;
pub mod config;
pub(crate) mod energy;
pub mod eval;
pub mod evaluate;
// The one module allowed `unsafe`: the C interfaces of the CUDA driver and NVRTC, and the
// process calls of the sandboxed compiler (`kernel::sandbox`).
#[allow(unsafe_code)]
pub(crate) mod ffi;
pub mod files;
pub mod github;
pub mod gpu;
pub mod gpu_error;
pub(crate) mod history;
pub mod kernel;
pub mod launch;
pub mod method;
pub(crate) mod outcome;
pub(crate) mod peers;
pub(crate) mod profile;
pub mod reference;
pub mod report;
pub mod resources;
pub mod results;
pub mod run;
pub(crate) mod runner_settings;
pub mod samples;
pub(crate) mod sanitize;
pub mod shard;
pub mod sim;
pub mod stats;
pub mod text;
pub mod validate;
pub mod verdict;
pub mod witness;
pub(crate) mod yaml;
