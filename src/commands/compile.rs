//! `ci-gate compile`: compiles a kernel set with NVRTC, without a GPU, exactly as the gate
//! does before it measures: attention.cu through every defence against hostile kernels
//! (source reading, the lexical include check, the sandboxed compiler, the CUBIN policy) and
//! the checks of its entry points and launch constants (`kernel::entries`, the rules the GPU
//! loader applies), and the harness's reference.cu and util.cu through the same reading,
//! check and sandbox. With `--config`, attention.cu is compiled with the config's
//! `compile.defines`, as the gate compiles it for that config.

use anyhow::{Result, bail};

use crate::backend::GpuError;
use crate::cli::CompileArgs;
use crate::kernel::compile::compile_uncached_module_for;
use crate::kernel::cubin::check_untrusted_cubin;
use crate::kernel::{KernelDir, KernelSource, REFERENCE_FILE, UTIL_FILE};
use crate::outcome::Outcome;
use crate::text::terminal_text;

/// One source to compile: where it comes from, and whether it is the timed kernel.
struct Input {
    shown: String,
    source: Result<KernelSource, GpuError>,
    timed: bool,
}

pub(crate) fn run_compile(args: &CompileArgs) -> Result<Outcome> {
    if !crate::gpu::nvrtc_present() {
        return Err(GpuError::NoNvrtc.into());
    }
    let defines = match &args.config {
        Some(path) => crate::config::Config::load(path)?.compile.defines,
        None => Vec::new(),
    };
    let attention = KernelDir::new(&args.kernels).timed();
    let mut inputs = vec![Input {
        shown: terminal_text(&attention.display().to_string()),
        source: KernelSource::read(&attention).map(|s| s.with_defines(&defines)),
        timed: true,
    }];
    for file in [REFERENCE_FILE, UTIL_FILE] {
        match harness_input(args, file) {
            Some(input) => inputs.push(input),
            None => println!(
                "{file}: built into ci-gate (the harness the gate runs; --harness DIR compiles another)"
            ),
        }
    }
    let targets = args.targets();
    let mut failed = Vec::new();
    for input in &inputs {
        for target in &targets {
            // A source that could not be read fails every target, with the same error.
            let compiled = match &input.source {
                Ok(s) => compile_one(s, target, input.timed),
                Err(e) => {
                    print_failure(&input.shown, target, e);
                    failed.push(format!("{} for {target}", input.shown));
                    continue;
                }
            };
            match compiled {
                Ok((bytes, lines)) => {
                    println!("{} {target}: ok ({bytes} bytes of CUBIN)", input.shown);
                    for line in lines {
                        println!("{}", terminal_text(&line));
                    }
                }
                Err(e) => {
                    print_failure(&input.shown, target, &e);
                    failed.push(format!("{} for {target}", input.shown));
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
        inputs.len() * targets.len(),
        failed.join(", ")
    )
}

/// A harness file to compile: from `--harness`, else from the kernel directory where it has
/// one (a developer changing the harness). `None` where neither has it: the gate runs the
/// copy built into this binary, and a kernel repository needs only attention.cu.
fn harness_input(args: &CompileArgs, file: &str) -> Option<Input> {
    let dir = args.harness.as_ref().unwrap_or(&args.kernels);
    let path = dir.join(file);
    (args.harness.is_some() || std::fs::symlink_metadata(&path).is_ok()).then(|| Input {
        shown: terminal_text(&path.display().to_string()),
        source: KernelSource::read(&path),
        timed: false,
    })
}

/// The most dynamic shared memory a block may opt into on a target: what its NAME_launch
/// constants are held to (kernels/README.md).
fn max_smem_optin(target: &str) -> u32 {
    let digits: String = target
        .trim_start_matches("sm_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    match digits.parse::<u32>().unwrap_or(0) {
        80 | 87 => 163 * 1024,
        90 | 100 | 103 => 227 * 1024,
        _ => 99 * 1024,
    }
}

/// One compile of one file; the timed kernel's CUBIN also passes the policy and the entry
/// checks, and its entries' resources are described (all that is known without a GPU: not
/// CTAs per SM).
fn compile_one(
    source: &KernelSource,
    target: &str,
    timed: bool,
) -> Result<(usize, Vec<String>), GpuError> {
    let (cubin, log) = compile_uncached_module_for(source, target)?;
    let mut lines = Vec::new();
    if timed {
        let file = source.path.display().to_string();
        check_untrusted_cubin(&cubin, &file)?;
        let entries = crate::kernel::entries::check_static(&cubin, max_smem_optin(target))
            .map_err(|problems| {
                GpuError::Refused(format!(
                    "{file} is refused for {target}: the gate could not launch it: {}",
                    problems.join("; ")
                ))
            })?;
        lines.push(format!(
            "  entry points and launch constants: ok ({})",
            entries.len()
        ));
        lines.extend(resource_lines(&cubin, &log, &file));
    }
    Ok((cubin.len(), lines))
}

/// A table of the entries' resources, 80 columns wide: registers, spills (`?` where
/// unknown, then why), stack frame, static + dynamic shared memory and threads per block
/// (from `NAME_launch`): every figure of a report but CTAs per SM, which needs the GPU's
/// driver.
fn resource_lines(cubin: &[u8], log: &str, file: &str) -> Vec<String> {
    let all = match crate::kernel::ptxas::static_resources(cubin, log) {
        Err(why) => return vec![format!("  {file}: its resources cannot be read: {why}")],
        Ok(all) => all,
    };
    let mut lines = crate::report::name_row(
        "kernel",
        &format!(
            " {:>4} {:>9} {:>5} {:>13} {:>7}",
            "regs", "spill B", "stack", "smem s+dyn B", "threads"
        ),
    );
    let mut notes = Vec::new();
    for r in &all {
        let spill = |v: Option<u64>| v.map_or_else(|| "?".into(), |v| v.to_string());
        let launch = crate::kernel::cubin::launch_constant(cubin, &r.kernel.name);
        let smem = match launch {
            Some([_, _, dynamic]) => format!("{}+{dynamic}", r.kernel.static_smem_bytes),
            None => format!("{}+?", r.kernel.static_smem_bytes),
        };
        let threads = launch.map_or_else(|| "?".into(), |[_, t, _]| t.to_string());
        lines.extend(crate::report::name_row(
            &r.kernel.name,
            &format!(
                " {:>4} {:>9} {:>5} {:>13} {:>7}",
                r.kernel.registers,
                format!(
                    "{}/{}",
                    spill(r.spill_store_bytes),
                    spill(r.spill_load_bytes)
                ),
                r.kernel.stack_frame_bytes,
                smem,
                threads
            ),
        ));
        if let Some(note) = &r.note {
            notes.push(format!("  {}: {note}", r.kernel.name));
        }
    }
    lines.extend(notes);
    lines
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

#[cfg(test)]
mod tests {
    use super::max_smem_optin;

    #[test]
    fn each_target_has_its_shared_memory_limit() {
        assert_eq!(max_smem_optin("sm_89"), 101_376);
        assert_eq!(max_smem_optin("sm_86"), 101_376);
        assert_eq!(max_smem_optin("sm_80"), 166_912);
        assert_eq!(max_smem_optin("sm_90"), 232_448);
        assert_eq!(max_smem_optin("sm_90a"), 232_448);
        assert_eq!(max_smem_optin("sm_120"), 101_376);
    }
}
