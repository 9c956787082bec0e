//! `ci-gate kernel-run` (hidden): compiles one kernel set and launches its attention kernel
//! once per shape on fresh inputs, then the reference kernel. This is the program
//! compute-sanitizer and ncu run: a process of its own, so that every finding or profile
//! belongs to one kernel set and one shape.

use anyhow::Result;

use super::Outcome;
use super::pipeline::load_config;
use crate::cli::KernelRunArgs;
use crate::gpu::Gpu;
use crate::gpu::parity::run_once;

pub fn run_kernels(args: &KernelRunArgs) -> Result<Outcome> {
    let (config, shapes) = load_config(&args.config, &args.shapes)?;
    let gpu = Gpu::open_with(&args.harness, &config.compile.defines)?;
    let set = gpu.load_attention_with(&args.kernels, &config.compile.defines)?;
    if args.compile_only {
        return Ok(Outcome::Pass);
    }
    for shape in &shapes {
        run_once(
            &gpu,
            set.get(shape)?,
            shape,
            config.parity.seed,
            !args.no_reference,
        )?;
    }
    Ok(Outcome::Pass)
}
