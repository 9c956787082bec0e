//! ci-gate: a performance regression gate for CUDA kernels.
//!
//! Dependencies point one way, and no modules import each other in a circle
//! (`.ci/module-cycles.py` checks it in CI): `stats`, `verdict`, `comparison`, `evaluate`,
//! `energy`, `baseline`, `results`, `resources`, `report`, `profile`, `peers`, `sanitize`,
//! `history`, `shard` and `validate` know nothing of `gpu`, `cli`, `commands` or `github`; `text` (showing untrusted
//! text), `yaml` (the depth of YAML text) and `child_env` (what a started process may see of
//! the environment) know nothing of the crate at all. Modules the integration tests do not
//! use are `pub(crate)`, so the compiler reports what is dead.
//!
//! `unsafe` is denied everywhere but in `gpu::raw`, the bindings to the CUDA driver.

#![deny(unsafe_code)]

pub mod backend;
pub mod baseline;
pub(crate) mod child_env;
pub mod cli;
pub mod commands;
pub mod comparison;
pub mod config;
pub(crate) mod energy;
pub mod evaluate;
pub mod files;
pub mod github;
pub mod gpu;
pub(crate) mod history;
pub(crate) mod outcome;
pub(crate) mod peers;
pub(crate) mod profile;
pub mod reference;
pub mod report;
pub mod resources;
pub mod results;
pub mod run;
pub mod samples;
pub(crate) mod sanitize;
pub mod shard;
pub mod sim;
pub mod stats;
pub mod text;
pub mod validate;
pub mod verdict;
pub(crate) mod yaml;
