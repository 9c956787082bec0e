//! The command line (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::report::Format;

/// A performance regression gate for CUDA kernels: builds the kernel, checks its output
/// against a reference, times it on this GPU and compares with the stored baseline.
///
/// Exit codes: 0 the gate passes; 1 it fails (a regression or a parity loss);
/// 2 it could not decide (bad input, no GPU, CUDA error, unreadable baseline).
#[derive(Debug, Parser)]
#[command(
    name = "ci-gate",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build, check parity, measure and compare with the stored baseline, on this machine's GPU.
    Local(LocalArgs),
    /// The same pipeline for CI: results file, job summary, annotations and step outputs.
    Ci(CiArgs),
    /// Post the pull-request comment from a results file, or update the one posted before.
    Comment(CommentArgs),
    /// Record or list stored baselines.
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// Compare two results files, or two plain sample files (one time in µs per line). No GPU.
    Compare(CompareArgs),
    /// Measure the gate itself on this runner: false alarms on A/A runs, detection of an
    /// injected slowdown.
    Selftest(SelftestArgs),
    /// Print the GPU, driver, CUDA and clock fingerprint.
    Env(EnvArgs),
}

/// Where the config and baselines are.
#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// Config file with shapes, thresholds and measurement settings.
    #[arg(long, short, default_value = "configs/pr.yaml", value_name = "FILE")]
    pub config: PathBuf,
    /// Directory of stored baselines.
    #[arg(long, default_value = "baselines", value_name = "DIR")]
    pub baselines: PathBuf,
    /// Directory of the kernel sources.
    #[arg(long, default_value = "kernels", value_name = "DIR")]
    pub kernels: PathBuf,
}

#[derive(Debug, Args)]
pub struct LocalArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Measure only this shape (repeatable), by its name as in the report, e.g. b2h8s512d64_f16.
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    /// Report format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write the results file here (JSON).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Rounds for every shape, overriding the config's adaptive count (min = max = N).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    pub rounds: Option<u32>,
    /// Compare with this results file instead of the stored baseline (used by selftest).
    #[arg(long, value_name = "RESULTS.json", hide = true)]
    pub against: Option<PathBuf>,
    /// Compare with nothing: every shape reads no-baseline (used by selftest).
    #[arg(long, hide = true, conflicts_with = "against")]
    pub no_compare: bool,
    /// Skip the parity check (used by selftest, which only measures timing).
    #[arg(long, hide = true)]
    pub no_parity: bool,
    /// Inject a slowdown of this fraction of the --against p50 (used by selftest).
    #[arg(long, value_name = "FRACTION", hide = true)]
    pub inject: Option<f64>,
}

#[derive(Debug, Args)]
pub struct CiArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Where to write the results file.
    #[arg(long, default_value = "ci-gate-results.json", value_name = "FILE")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct CommentArgs {
    /// Results file written by `ci-gate ci`.
    #[arg(long, value_name = "RESULTS.json")]
    pub from: PathBuf,
    /// Pull request number (default: from $GITHUB_EVENT_PATH).
    #[arg(long)]
    pub pr: Option<u64>,
    /// Where the body goes when it cannot be posted (no token, or a read-only one).
    #[arg(long, default_value = "ci-gate-comment.md", value_name = "FILE")]
    pub fallback: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Record new baselines for this GPU, from a fresh run or a results file.
    Update(BaselineUpdateArgs),
    /// List stored baselines with provenance.
    Show(BaselineShowArgs),
}

#[derive(Debug, Args)]
pub struct BaselineUpdateArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Record from this results file instead of measuring now (no GPU needed).
    #[arg(long, value_name = "RESULTS.json")]
    pub from: Option<PathBuf>,
    /// Why the baseline changes (recorded in its provenance).
    #[arg(long)]
    pub reason: String,
    /// Record even if a shape fails parity or is slower than the current baseline.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct BaselineShowArgs {
    /// Only this GPU's baselines (its slug, e.g. nvidia-h200).
    #[arg(long, value_name = "SLUG")]
    pub gpu: Option<String>,
    /// Directory of stored baselines.
    #[arg(long, default_value = "baselines", value_name = "DIR")]
    pub baselines: PathBuf,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Baseline: a results file, or a plain sample file.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// Candidate: a results file, or a plain sample file.
    #[arg(value_name = "CAND")]
    pub cand: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Take the gate thresholds from this config (default: the candidate results file's, or
    /// the built-in defaults for sample files).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SelftestArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Trials: each records a baseline, then measures A/A and with the injected slowdown.
    #[arg(long, default_value_t = 10)]
    pub trials: u32,
    /// Injected slowdown as a fraction of the kernel's p50 (repeatable: 0.05 = 5%).
    #[arg(long = "inject", default_values_t = [0.05], value_name = "FRACTION")]
    pub inject: Vec<f64>,
    /// Only this shape (repeatable).
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write the selftest report here (JSON).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct EnvArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
