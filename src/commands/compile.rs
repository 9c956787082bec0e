//! `ci-gate compile`: compiles a kernel set with NVRTC, without a GPU, exactly as the gate
//! does before it measures: attention.cu through every defence against hostile kernels
//! (source reading, the lexical include check, the sandboxed compiler, the CUBIN policy), and
//! the harness's reference.cu and util.cu through the same reading, check and sandbox.

use std::path::PathBuf;

use anyhow::{Result, bail};

use super::Outcome;
use crate::cli::CompileArgs;
use crate::gpu::compile::compile_uncached_module_for;
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
                Ok((bytes, resources)) => {
                    println!("{shown} {target}: ok ({bytes} bytes of CUBIN)");
                    for line in resources {
                        println!("  {}", terminal_text(&line));
                    }
                }
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

/// One compile of one file; the timed kernel's CUBIN also passes the policy, and its
/// entries' resources are described (all that is known without a GPU: not CTAs per SM).
fn compile_one(
    source: &KernelSource,
    target: &str,
    timed: bool,
) -> Result<(usize, Vec<String>), GpuError> {
    let (cubin, log) = compile_uncached_module_for(source, target)?;
    let mut lines = Vec::new();
    if timed {
        check_untrusted_cubin(&cubin, &source.path.display().to_string())?;
        lines = resource_lines(&cubin, &log, &source.path.display().to_string());
    }
    Ok((cubin.len(), lines))
}

/// One line per entry: registers, spills (`?` where unknown, then why), stack frame, static
/// shared memory and, from its `NAME_launch` constant, threads per block and dynamic shared
/// memory: every figure of a report but CTAs per SM, which needs the GPU's driver.
fn resource_lines(cubin: &[u8], log: &str, file: &str) -> Vec<String> {
    match crate::gpu::ptxas::static_resources(cubin, log) {
        Err(why) => vec![format!("{file}: its resources cannot be read: {why}")],
        Ok(all) => all
            .iter()
            .map(|r| {
                let spill = |v: Option<u64>| v.map_or_else(|| "?".into(), |v| v.to_string());
                let mut line = format!(
                    "{}: {} registers, spill stores/loads {}/{} bytes, stack frame {} bytes, static smem {} bytes",
                    r.kernel.name,
                    r.kernel.registers,
                    spill(r.spill_store_bytes),
                    spill(r.spill_load_bytes),
                    r.kernel.stack_frame_bytes,
                    r.kernel.static_smem_bytes
                );
                if let Some([_, threads, dynamic]) =
                    crate::gpu::cubin::launch_constant(cubin, &r.kernel.name)
                {
                    line.push_str(&format!(
                        ", {threads} threads per block, dynamic smem {dynamic} bytes"
                    ));
                }
                if let Some(note) = &r.note {
                    line.push_str(&format!(" ({note})"));
                }
                line
            })
            .collect(),
    }
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
