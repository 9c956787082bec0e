//! `ci-gate sanitize`: every kernel of a set under compute-sanitizer's memcheck, racecheck,
//! initcheck and synccheck, one process per tool and shape (so that each finding names its
//! kernel and its shape), a few at a time. Exit 0 clean, 1 on any finding, 2 when a tool gave
//! no answer (missing, timed out, or the program failed with nothing found).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::child_env::{Child, restrict};
use crate::cli::SanitizeArgs;
use crate::github::actions::append_step_summary;
use crate::kernel::compile::LINEINFO_ENV;
use crate::kernel::{KernelDir, REFERENCE_FILE, UTIL_FILE};
use crate::outcome::Outcome;
use crate::report::{Format, escape_markdown, fitted_table, stdout_width};
use crate::run::tool::{self, KernelRun};
use crate::sanitize::{Exit, SanitizeOutcome, SanitizeReport, Tool, ToolRun};

/// Findings printed in full per run (the rest are counted).
const SHOWN_PER_RUN: usize = 3;

/// The program's bound on one wait for the GPU under a sanitizer, seconds (at most the run's
/// `--timeout-s`). The config's `measure.max_wait_s` (15 s by default) is for kernels at full
/// speed: under racecheck one launch of [1,66,257] d128 took longer than that (H200,
/// 2026-12-02), a whole run of it 39 s. Since `_long_noncausal`'s shapes joined
/// configs/sanitize.yaml, racecheck of three of them runs 125-155 s beside the others (four
/// jobs, H200, 2026-12-04), and one wait took longer than the 150 s this bound was: twice
/// the slowest run measured. A hanging kernel still ends here, not at the run's limit, so
/// that `--jobs` runs of one cannot hold the GPU for `--timeout-s` each.
const SANITIZER_WAIT_S: u64 = 300;

/// [`SANITIZER_WAIT_S`], or the run's `--timeout-s` where that is shorter.
fn program_wait_s(args: &SanitizeArgs) -> u64 {
    args.timeout_s.min(SANITIZER_WAIT_S)
}

pub(crate) fn run_sanitize(args: &SanitizeArgs) -> Result<Outcome> {
    if let Some(out) = &args.out {
        crate::files::check_writable(out)?;
    }
    let started = Instant::now();
    let set = KernelSet::of(args)?;
    // Its kernels run on the GPU for minutes: one ci-gate run per GPU at a time (`sharing`).
    let _gpu = crate::run::sharing::GpuHold::take(crate::run::BackendChoice::from_env()?)?;
    let tools: Vec<Tool> = if args.tools.is_empty() {
        Tool::ALL.to_vec()
    } else {
        Tool::ALL
            .into_iter()
            .filter(|t| args.tools.contains(t))
            .collect()
    };
    set.compile(args)?;
    if let Some(dir) = &args.logs {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the log directory {}", dir.display()))?;
    }
    let jobs: Vec<(Tool, String)> = tools
        .iter()
        .flat_map(|&t| set.shapes.iter().map(move |n| (t, n.clone())))
        .collect();
    let report = SanitizeReport {
        kernels: args.kernels.display().to_string(),
        kernel_source_hash: Some(set.attention_hash.clone()),
        config: args.config.display().to_string(),
        sanitizer_version: tool::version(&set.sanitizer),
        gpu: gpu_name(),
        runs: run_all(args, &set, &jobs)?,
        seconds: started.elapsed().as_secs_f64(),
    };
    if let Some(out) = &args.out {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(out, json + "\n")
            .with_context(|| format!("cannot write the report to {}", out.display()))?;
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Markdown => print!("{}", markdown(&report)),
        _ => print!("{}", table(&report)),
    }
    if let Some(path) = crate::github::GithubEnv::from_env().step_summary {
        append_step_summary(&path, &markdown(&report))
            .with_context(|| format!("cannot write the job summary {}", path.display()))?;
    }
    match report.outcome() {
        SanitizeOutcome::Clean => Ok(Outcome::Pass),
        SanitizeOutcome::Findings => Ok(Outcome::Fail),
        SanitizeOutcome::Incomplete => bail!(
            "compute-sanitizer gave no answer for {} of {} runs (see the report above): no verdict",
            report.runs.iter().filter(|r| r.failure.is_some()).count(),
            report.runs.len()
        ),
    }
}

/// What a sanitize run checks: the shapes (by name), the harness that runs with the kernels,
/// the hash of their attention.cu, and the compute-sanitizer found.
struct KernelSet {
    shapes: Vec<String>,
    harness: PathBuf,
    attention_hash: String,
    sanitizer: PathBuf,
}

impl KernelSet {
    /// Checks the arguments (the config and its shapes, the kernels and harness, the tool, a
    /// driver) before anything runs.
    fn of(args: &SanitizeArgs) -> Result<KernelSet> {
        // Outside a repository (find_defaults found no configs/sanitize.yaml above): name
        // the flags that say where things are, as `local` does.
        if args.config == Path::new(crate::cli::DEFAULT_SANITIZE_CONFIG) && !args.config.is_file() {
            bail!(
                "no {} here or in any parent directory: run ci-gate sanitize inside your repository, or pass --config FILE (e.g. your repository's {}) and --kernels DIR (the directory of attention.cu; --harness DIR if its reference.cu and util.cu are elsewhere)",
                crate::cli::DEFAULT_SANITIZE_CONFIG,
                crate::cli::DEFAULT_SANITIZE_CONFIG
            );
        }
        let (config, shapes) = crate::config::load_selected(&args.config, &args.shapes)?;
        let shapes = match args.shard {
            Some(spec) => crate::shard::of_run(&config, &shapes, spec)?.0,
            None => shapes,
        };
        let harness = args.harness.clone().unwrap_or_else(|| args.kernels.clone());
        let attention = KernelDir::new(&args.kernels).read_timed()?;
        for f in [REFERENCE_FILE, UTIL_FILE] {
            if !harness.join(f).is_file() {
                bail!(
                    "{}: no {f} (the harness that runs with the kernels; pass --harness DIR)",
                    harness.display()
                );
            }
        }
        let Some(sanitizer) = tool::find("compute-sanitizer", args.sanitizer.as_deref())? else {
            bail!(
                "compute-sanitizer not found on the PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin: install the CUDA toolkit or pass --sanitizer PATH"
            );
        };
        if !crate::gpu::driver_present() {
            bail!(
                "no NVIDIA driver found (libcuda.so could not be loaded): sanitize needs a CUDA GPU"
            );
        }
        Ok(KernelSet {
            shapes: shapes.iter().map(|s| s.name()).collect(),
            harness,
            attention_hash: attention.hash,
            sanitizer,
        })
    }

    /// Compiles once outside the tools (with line info, as the runs will): the runs then
    /// read the NVRTC cache, and a set that does not compile is an error here, not 4×N of
    /// them.
    fn compile(&self, args: &SanitizeArgs) -> Result<()> {
        let compile = KernelRun {
            config: &args.config,
            kernels: &args.kernels,
            harness: &self.harness,
            shapes: &self.shapes,
            no_reference: false,
            max_wait_s: Some(program_wait_s(args)),
        };
        let mut argv = compile.args()?;
        argv.push("--compile-only".into());
        let mut cmd = Command::new(&argv[0]);
        restrict(&mut cmd, Child::Gpu)
            .args(&argv[1..])
            .env(LINEINFO_ENV, "1");
        let ran = tool::run_bounded(cmd, Duration::from_secs(args.timeout_s))?;
        if !ran.success() {
            bail!(
                "the kernels in {} could not be compiled and loaded: {}",
                args.kernels.display(),
                ran.last_line()
            );
        }
        Ok(())
    }
}

/// Every (tool, shape) run, `--jobs` at a time, in the order of `jobs`; the first error of
/// any ends the command.
fn run_all(args: &SanitizeArgs, set: &KernelSet, jobs: &[(Tool, String)]) -> Result<Vec<ToolRun>> {
    let next = AtomicUsize::new(0);
    let runs: Mutex<Vec<(usize, ToolRun)>> = Mutex::new(Vec::new());
    let first_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let workers = (args.jobs as usize).min(jobs.len()).max(1);
    let show_progress =
        args.format == Format::Table && std::io::IsTerminal::is_terminal(&std::io::stderr());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((t, shape)) = jobs.get(i) else { break };
                    match run_one(args, &set.sanitizer, &set.harness, *t, shape) {
                        Ok(r) => {
                            if show_progress {
                                eprintln!(
                                    "ci-gate: {t} {shape}: {} ({:.1} s)",
                                    status_word(&r),
                                    r.seconds
                                );
                            }
                            runs.lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .push((i, r));
                        }
                        Err(e) => {
                            first_error
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .get_or_insert(e);
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = first_error
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
    {
        return Err(e);
    }
    let mut runs = runs.into_inner().unwrap_or_else(PoisonError::into_inner);
    runs.sort_by_key(|(i, _)| *i);
    Ok(runs.into_iter().map(|(_, r)| r).collect())
}

fn status_word(r: &ToolRun) -> String {
    if r.errors > 0 {
        format!("{} error{}", r.errors, if r.errors == 1 { "" } else { "s" })
    } else if r.failure.is_some() {
        "no answer".into()
    } else {
        "clean".into()
    }
}

/// One tool on one shape, in a process of its own.
fn run_one(
    args: &SanitizeArgs,
    sanitizer: &Path,
    harness: &Path,
    t: Tool,
    shape: &str,
) -> Result<ToolRun> {
    let dir = tempfile::Builder::new()
        .prefix("ci-gate-sanitize-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let log_path = dir.path().join("sanitizer.log");
    let shapes = [shape.to_owned()];
    let program = KernelRun {
        config: &args.config,
        kernels: &args.kernels,
        harness,
        shapes: &shapes,
        no_reference: false,
        max_wait_s: Some(program_wait_s(args)),
    }
    .args()?;
    let mut cmd = Command::new(sanitizer);
    restrict(&mut cmd, Child::Gpu)
        .args(["--tool", t.name()])
        .arg("--log-file")
        .arg(&log_path)
        .args(["--print-limit", "100"])
        .args(&program)
        .env(LINEINFO_ENV, "1");
    let ran = tool::run_bounded(cmd, Duration::from_secs(args.timeout_s))?;
    let text = crate::files::read_bounded(&log_path, 64 * 1024 * 1024)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if let Some(logs) = &args.logs {
        // Shape names are validated config names (letters, digits, '_'): a plain file name.
        let keep: PathBuf = logs.join(format!("{}-{shape}.log", t.name()));
        std::fs::write(&keep, &text).with_context(|| format!("cannot write {}", keep.display()))?;
    }
    let exit = if ran.timed_out() {
        Exit::TimedOut(args.timeout_s)
    } else if ran.success() {
        Exit::Success
    } else {
        Exit::Failed(format!(
            "{}: {}",
            ran.status.map(|s| s.to_string()).unwrap_or_default(),
            ran.last_line()
        ))
    };
    let launched = super::worker::launched(&ran.output);
    let run = ToolRun::judge(t, shape, &text, exit, ran.seconds, &launched);
    Ok(run)
}

/// The name of the GPU the runs use (device 0 as CUDA numbers them, like the runs).
fn gpu_name() -> Option<String> {
    let (_, _, info) = crate::gpu::device::open_device().ok()?;
    Some(crate::text::clip_text(
        &crate::text::terminal_text(&info.name),
        120,
    ))
}

fn headline(report: &SanitizeReport) -> String {
    let tools = {
        let mut t: Vec<&str> = report.runs.iter().map(|r| r.tool.name()).collect();
        t.dedup();
        t.join(", ")
    };
    let shapes = {
        let mut s: Vec<&str> = report.runs.iter().map(|r| r.shape.as_str()).collect();
        s.sort();
        s.dedup();
        s.len()
    };
    let verdict = match report.outcome() {
        SanitizeOutcome::Clean => "clean".to_string(),
        SanitizeOutcome::Findings => {
            // The counts are read from the tool's log, which the kernel under test can print
            // into: saturating, never an overflow.
            let n = report
                .runs
                .iter()
                .fold(0u64, |sum, r| sum.saturating_add(r.errors));
            format!("{n} finding{}", if n == 1 { "" } else { "s" })
        }
        SanitizeOutcome::Incomplete => "incomplete".to_string(),
    };
    format!(
        "{verdict}: {tools} on {shapes} shape{} of {} in {:.0} s",
        if shapes == 1 { "" } else { "s" },
        report.kernels,
        report.seconds
    )
}

/// The terminal report: one line per tool and shape, then each finding.
pub(crate) fn table(report: &SanitizeReport) -> String {
    let rows: Vec<Vec<String>> = report
        .runs
        .iter()
        .map(|r| {
            vec![
                r.tool.to_string(),
                r.shape.clone(),
                status_word(r),
                r.kernels().join(", "),
                format!("{:.1}", r.seconds),
            ]
        })
        .collect();
    let mut out = String::new();
    out.push_str(&format!(
        "ci-gate sanitize: {}\n",
        crate::text::terminal_text(&headline(report))
    ));
    if let Some(v) = &report.sanitizer_version {
        out.push_str(&format!(
            "compute-sanitizer {}{}\n",
            crate::text::terminal_text(v),
            report
                .gpu
                .as_ref()
                .map(|g| format!(" on {}", crate::text::terminal_text(g)))
                .unwrap_or_default()
        ));
    }
    let header: Vec<String> = ["tool", "shape", "result", "kernels", "s"]
        .map(String::from)
        .to_vec();
    let t = fitted_table(
        &header,
        &rows,
        &[0, 1, 2, 3, 4],
        3,
        &[4],
        Some(stdout_width()),
        "in the JSON report",
    );
    out.push_str(&t);
    out.push('\n');
    for r in &report.runs {
        for f in r.findings.iter().take(SHOWN_PER_RUN) {
            out.push_str(&format!(
                "{} {} {}{}{}: {}\n",
                r.tool,
                r.shape,
                f.kernel.as_deref().unwrap_or("(host API)"),
                f.function
                    .as_deref()
                    .filter(|func| Some(*func) != f.kernel.as_deref())
                    .map(|func| format!(" in {func}"))
                    .unwrap_or_default(),
                f.location
                    .as_deref()
                    .map(|l| format!(" at {l}"))
                    .unwrap_or_default(),
                f.message
            ));
            for d in &f.details {
                out.push_str(&format!("    {d}\n"));
            }
        }
        if r.findings.len() > SHOWN_PER_RUN {
            out.push_str(&format!(
                "{} {}: {} more\n",
                r.tool,
                r.shape,
                r.findings.len() - SHOWN_PER_RUN
            ));
        }
        if let Some(why) = &r.failure {
            out.push_str(&format!("{} {}: no answer: {why}\n", r.tool, r.shape));
        }
    }
    out
}

/// The job summary: a headline, one row per run with a problem, the findings collapsed.
pub(crate) fn markdown(report: &SanitizeReport) -> String {
    let mut out = format!(
        "### ci-gate sanitize: {}\n\n",
        escape_markdown(&headline(report))
    );
    let problems: Vec<&ToolRun> = report
        .runs
        .iter()
        .filter(|r| r.errors > 0 || r.failure.is_some())
        .collect();
    if problems.is_empty() {
        out.push_str(&format!("{} runs, no findings.\n", report.runs.len()));
        return out;
    }
    out.push_str("| tool | shape | result | kernels | first finding |\n|---|---|---|---|---|\n");
    for r in &problems {
        let first = r
            .findings
            .first()
            .map(|f| {
                format!(
                    "{}{}",
                    f.message,
                    f.location
                        .as_deref()
                        .map(|l| format!(" at {l}"))
                        .unwrap_or_default()
                )
            })
            .or_else(|| r.failure.clone())
            .unwrap_or_default();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.tool,
            escape_markdown(&r.shape),
            status_word(r),
            escape_markdown(&r.kernels().join(", ")),
            escape_markdown(&crate::text::clip_text(&first, 300))
        ));
    }
    out.push_str("\n<details><summary>Findings</summary>\n\n");
    for r in &problems {
        for f in r.findings.iter().take(SHOWN_PER_RUN) {
            out.push_str(&format!(
                "- {} {} {}: {}\n",
                r.tool,
                escape_markdown(&r.shape),
                escape_markdown(f.kernel.as_deref().unwrap_or("(host API)")),
                escape_markdown(
                    &[f.message.clone()]
                        .into_iter()
                        .chain(f.details.clone())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            ));
        }
    }
    out.push_str("\n</details>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn wait_of(argv: &[&str]) -> u64 {
        match Cli::parse_from(argv).command {
            Command::Sanitize(a) => program_wait_s(&a),
            _ => unreachable!("the argv is a sanitize command"),
        }
    }

    /// Under a sanitizer the program waits up to 300 s for the GPU by default (racecheck of a
    /// `_long_noncausal` shape once took longer than 150 s, H200, 2026-12-04), and never
    /// longer than the run's own limit.
    #[test]
    fn the_wait_under_a_sanitizer_is_300_s_or_the_run_limit() {
        assert_eq!(wait_of(&["ci-gate", "sanitize"]), 300);
        assert_eq!(
            wait_of(&["ci-gate", "sanitize", "--timeout-s", "1000"]),
            300
        );
        assert_eq!(wait_of(&["ci-gate", "sanitize", "--timeout-s", "120"]), 120);
    }
}
