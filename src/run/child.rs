//! Scratch space for fresh measuring processes ([`super::request::RunRequest::run_child`]),
//! each with its own CUDA context, allocations and clock history, as separate CI jobs would
//! be. `baseline update` records its between-process spread from them; `selftest` runs its
//! trials in them.

use std::path::PathBuf;

use anyhow::{Context, Result};

/// A temporary directory for children's results files.
pub fn scratch(prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context("cannot create a temporary directory")
}

/// `dir/name`.
pub fn file_in(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}
