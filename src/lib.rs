//! ci-gate: a performance regression gate for CUDA kernels.
//!
//! Dependencies point one way: `stats`, `verdict`, `baseline`, `results` and `report` know
//! nothing of `gpu`, `cli` or `github`.

pub mod config;
pub mod github;
pub mod stats;
