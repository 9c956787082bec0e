//! `ci-gate kernel-run` (hidden): compiles one kernel set and launches its attention kernel
//! once per shape on fresh inputs, then the reference kernel. This is the program
//! compute-sanitizer and ncu run: a process of its own, so that every finding or profile
//! belongs to one kernel set and one shape.
//!
//! Named `worker` for the process other tools run; the evaluator's measuring process is
//! `eval::worker`.

use std::time::Duration;

use anyhow::Result;

use crate::cli::KernelRunArgs;
use crate::gpu::Gpu;
use crate::gpu::parity::run_once;
use crate::outcome::Outcome;

/// Prefix of the lines naming the kernels a run launches: `LAUNCHED FILE KERNEL`.
pub(crate) const LAUNCHED: &str = "ci-gate kernel-run launched";

/// The (file, kernel) pairs named in a `kernel-run`'s output.
pub(crate) fn launched(output: &str) -> Vec<(&str, &str)> {
    output
        .lines()
        .filter_map(|l| {
            let mut words = l.strip_prefix(LAUNCHED)?.split_whitespace();
            Some((words.next()?, words.next()?))
        })
        .collect()
}

pub(crate) fn run_kernels(args: &KernelRunArgs) -> Result<Outcome> {
    let (config, shapes) = crate::config::load_selected(&args.config, &args.shapes)?;
    let mut gpu = Gpu::open_with(&args.harness, &config.compile.defines)?;
    gpu.max_wait = args.max_wait_s.map_or(
        Duration::from_secs_f64(config.measure.max_wait_s),
        Duration::from_secs,
    );
    let set = gpu.load_attention_with(&args.kernels, &config.compile.defines)?;
    if args.compile_only {
        return Ok(Outcome::Pass);
    }
    for shape in &shapes {
        let kernel = set.get(shape)?;
        // What runs, by source file, for whoever reads this process's output (`sanitize`
        // names a finding's kernel from its file when the tool's log does not).
        println!("{LAUNCHED} attention.cu {}", kernel.name);
        if !args.no_reference {
            println!(
                "{LAUNCHED} reference.cu {}",
                gpu.kernels.reference(shape.dtype)?.name
            );
        }
        println!("{LAUNCHED} util.cu fill_input_{}", shape.dtype.short());
        run_once(&gpu, kernel, shape, config.parity.seed, !args.no_reference)?;
    }
    Ok(Outcome::Pass)
}

#[cfg(test)]
mod tests {
    #[test]
    fn launched_lines_are_read_back() {
        let out = format!(
            "noise\n{0} attention.cu attention_fwd_f16_d64_small\n{0} util.cu fill_input_f16\n{0} bad\n",
            super::LAUNCHED
        );
        assert_eq!(
            super::launched(&out),
            [
                ("attention.cu", "attention_fwd_f16_d64_small"),
                ("util.cu", "fill_input_f16")
            ]
        );
    }
}
