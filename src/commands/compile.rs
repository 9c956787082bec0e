//! `ci-gate compile`: compiles a kernel set with NVRTC, without a GPU, exactly as the gate
//! does before it measures: attention.cu through every defence against hostile kernels
//! (source reading, the lexical include check, the sandboxed compiler, the CUBIN policy), and
//! the harness's reference.cu and util.cu through the same reading, check and sandbox.

use std::path::PathBuf;

use anyhow::{Result, bail};

use super::Outcome;
use crate::cli::CompileArgs;
use crate::gpu::compile::compile_uncached_for;
use crate::gpu::cubin::check_untrusted_cubin;
use crate::gpu::{GpuError, KernelSource};
use crate::text::terminal_text;

pub fn run_compile(args: &CompileArgs) -> Result<Outcome> {
    if !crate::gpu::nvrtc_present() {
        return Err(GpuError::NoNvrtc.into());
    }
    let harness = args.harness.as_ref().unwrap_or(&args.kernels);
    let files: [(PathBuf, bool); 3] = [
        (args.kernels.join("attention.cu"), true),
        (harness.join("reference.cu"), false),
        (harness.join("util.cu"), false),
    ];
    let targets = args.targets();
    let mut failed = Vec::new();
    for (path, timed) in &files {
        let shown = terminal_text(&path.display().to_string());
        let source = KernelSource::read(path);
        for target in &targets {
            match source
                .as_ref()
                .map_err(clone_error)
                .and_then(|s| compile_one(s, target, *timed))
            {
                Ok(bytes) => println!("{shown} {target}: ok ({bytes} bytes of CUBIN)"),
                Err(e) => {
                    print_failure(&shown, target, &e);
                    failed.push(format!("{shown} for {target}"));
                }
            }
        }
    }
    if failed.is_empty() {
        return Ok(Outcome::Pass);
    }
    bail!(
        "{} of {} compiles failed or were refused: {}",
        failed.len(),
        files.len() * targets.len(),
        failed.join(", ")
    )
}

/// One compile of one file; the timed kernel's CUBIN also passes the policy.
fn compile_one(source: &KernelSource, target: &str, timed: bool) -> Result<usize, GpuError> {
    let cubin = compile_uncached_for(source, target)?;
    if timed {
        check_untrusted_cubin(&cubin, &source.path.display().to_string())?;
    }
    Ok(cubin.len())
}

/// A read error again for each target (GpuError holds an io::Error, which is not Clone).
fn clone_error(e: &GpuError) -> GpuError {
    GpuError::Invalid(e.to_string())
}

/// `FILE TARGET: SENTENCE`, then the kept diagnostics, each indented on its own line (every
/// line starts with the file or with spaces: never a workflow command).
fn print_failure(shown: &str, target: &str, e: &GpuError) {
    let text = e.to_string();
    let mut lines = text.lines();
    println!(
        "{shown} {target}: {}",
        terminal_text(lines.next().unwrap_or_default())
    );
    for line in lines {
        println!("  {}", terminal_text(line));
    }
}
