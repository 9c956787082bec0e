//! The integration tests, as one binary (`cargo test --test it`): one module per area, so
//! the library and the test dependencies are linked once, not once per file. A module's
//! tests are named after it, e.g. `cli_compare::compare_regression_table`, so
//! `cargo test --test it cli_compare::` runs one module. The tests that need a GPU are
//! `#[ignore]`d (`gpu::`, `adversarial_gpu::`, `gpu_tools::`; docs/TESTING.md).
//!
//! Fixtures, vectors and the other inputs are found from `CARGO_MANIFEST_DIR`; insta keeps
//! the snapshots in `tests/it/snapshots/`, named `it__<module>__<name>.snap`.

// Shared helpers.
mod common;
mod github_common;

// CPU tests.
mod action_env;
mod adversarial;
mod calibration;
mod cli_baseline;
mod cli_bisect;
mod cli_child_env;
mod cli_compare;
mod cli_env;
mod cli_errors;
mod cli_eval;
mod cli_git_base;
mod cli_github;
mod cli_history;
mod cli_hostile;
mod cli_merge;
mod cli_peers;
mod cli_sharing;
mod cli_simulated;
mod cli_simulation_refused;
mod cli_tools;
mod comment_snapshots;
mod config_doc;
mod configs;
mod fuzz_parsers;
mod github_comment;
mod golden;
mod nvrtc;
mod nvrtc_fail_closed;
mod peers_python;
mod rounds_vs_scipy;
mod runner_settings;
mod shift_vs_scipy;
mod stats_vs_scipy;
mod trimmed_vs_scipy;

// GPU tests (ignored without `--ignored`).
mod adversarial_gpu;
mod gpu;
mod gpu_tools;
