//! The command line (clap derive).

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use crate::report::Format;

/// A performance regression gate for CUDA kernels: builds the candidate kernel and the one it
/// replaces, checks both against a reference, times them interleaved on this GPU, and
/// compares the candidate with that base and with the stored baseline of this GPU model.
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
    /// Build both kernel sets, check parity, measure them interleaved and compare (A/B and the
    /// stored baseline), on this machine's GPU.
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
    /// The runner's pre-flight: one line per check (the NVIDIA driver and its CUDA version,
    /// the GPU, NVRTC of the version this binary needs, the NVRTC sandbox, NVML), then the
    /// GPU, driver, CUDA and clock fingerprint. Exit 0 when no check fails, else 2 naming
    /// what to install.
    Env(EnvArgs),
    /// Join the results files of a sharded run (`--shard K/N`) into one: one verdict over every
    /// shape, one report and one results file for `comment`. No GPU.
    Merge(MergeArgs),
    /// Run the kernels under compute-sanitizer (memcheck, racecheck, initcheck, synccheck)
    /// over shapes that reach every code path; exit 1 on any finding, 2 if a tool could not
    /// run.
    Sanitize(SanitizeArgs),
    /// Internal: compile a kernel set and launch it once per shape (what `sanitize` runs under
    /// compute-sanitizer and `--profile` under ncu).
    #[command(hide = true)]
    KernelRun(KernelRunArgs),
    /// Compile the kernels with NVRTC, without a GPU: attention.cu (refused if it could read a
    /// file or keep state on the GPU) and the harness's reference.cu and util.cu, for each
    /// architecture; one line per file and architecture. Exit 0 when all compile, else 2.
    Compile(CompileArgs),
    /// Internal: the sandboxed NVRTC process every compile runs in (one request on stdin, one
    /// answer on stdout).
    #[command(hide = true, name = "nvrtc-sandbox")]
    NvrtcSandbox,
    /// Internal: one measuring run from a request file its parent wrote (`--devices`,
    /// selftest's trials, a baseline's processes); the results go to `--out`.
    #[command(hide = true, name = "run-request")]
    RunRequest(RunRequestArgs),
    /// Per-shape p50 over the default branch's runs: the best time, the change points and a
    /// chart. `history append` adds a run's results to the history. No GPU.
    History(HistoryArgs),
    /// Find the first commit on BAD's first-parent history after GOOD whose kernels are more
    /// than gate.max_p50_regression slower than GOOD's: a binary search, each step an A/B of
    /// that commit's kernels against GOOD's on this GPU under the gate's own rule. Exit 0
    /// when a culprit is found and confirmed against its first parent, else 2.
    Bisect(BisectArgs),
    /// An evaluator for optimisation loops: candidates as JSON lines on stdin (an id, an
    /// attention.cu path or its source, defines), one JSON line per candidate on stdout (its
    /// verdict faster, same, slower, parity-fail, refused or error, and per shape the ratio to
    /// the reference with its bounds, p50s, TFLOP/s and parity; docs/EVAL.md). Every check of
    /// the gate, each candidate in a fresh process; a leaderboard under the seeds' rule. Exit
    /// 0 when no candidate ended in `error`, 1 when one did, 2 when the evaluator could not
    /// run.
    Eval(EvalArgs),
    /// Internal: one candidate's measuring process (or `--describe`: the device's facts).
    #[command(hide = true, name = "eval-worker")]
    EvalWorker(EvalWorkerArgs),
}

/// What `ci-gate eval` measures candidates against.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Against {
    /// The base kernels (`--base-kernels`).
    Base,
    /// The leaderboard's best (the base while it is empty); each accepted candidate becomes
    /// the reference of the next.
    Best,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Config whose shapes, gate, measurement and `eval` settings are used (default:
    /// configs/pr.yaml of the repository; configs/eval.yaml is sized for loops).
    #[arg(long, short, default_value = DEFAULT_CONFIG, value_name = "FILE")]
    pub config: PathBuf,
    /// Directory whose attention.cu is the base (default: kernels/ of the repository).
    #[arg(long, default_value = DEFAULT_KERNELS, value_name = "DIR")]
    pub base_kernels: PathBuf,
    /// Measure only this shape of the config (repeatable).
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    /// The reference: `base`, or `best` (the leaderboard's best; needs --leaderboard).
    /// Default: best with --leaderboard, else base.
    #[arg(long, value_enum, value_name = "base|best")]
    pub against: Option<Against>,
    /// Keep accepted candidates here (JSON; created when absent): a candidate that meets the
    /// config's `eval` rule against the current best, and again in two confirming
    /// measurements in fresh processes (hot and cold cache), is appended.
    #[arg(long, value_name = "FILE")]
    pub leaderboard: Option<PathBuf>,
    /// One measuring worker per GPU of this host, one queue: device indices (0,1,3) or `all`.
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,
    /// Candidates compiled at once, ahead of the GPU (default: the CPU cores less one, at
    /// most 8).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: Option<u32>,
    /// Compile ahead for this NVRTC target (e.g. sm_90a) instead of each device's own; with
    /// the simulated GPU, compile real sources with NVRTC as a GPU host would.
    #[arg(long, value_name = "SM", value_parser = parse_target)]
    pub arch: Option<String>,
}

impl EvalArgs {
    /// [`find_defaults`] from `configs/pr.yaml`: the config and the base kernels.
    pub(crate) fn find_defaults(&mut self, start: &Path) {
        find_defaults(
            start,
            DEFAULT_CONFIG,
            &mut [
                (&mut self.config, DEFAULT_CONFIG),
                (&mut self.base_kernels, DEFAULT_KERNELS),
            ],
        );
    }
}

/// The hidden `eval-worker` command's arguments.
#[derive(Debug, Args)]
pub struct EvalWorkerArgs {
    /// The request the evaluator wrote.
    #[arg(long, value_name = "FILE", required_unless_present = "describe")]
    pub request: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Write the device's facts (architecture, shared memory) instead of measuring.
    #[arg(long)]
    pub describe: bool,
}

/// The hidden `run-request` command's arguments.
#[derive(Debug, Args)]
pub struct RunRequestArgs {
    #[arg(long, value_name = "FILE")]
    pub request: PathBuf,
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// Where the config and baselines are.
#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// Config file with shapes, thresholds and measurement settings (default: configs/pr.yaml
    /// of the repository this is run in, from any of its subdirectories).
    #[arg(long, short, default_value = DEFAULT_CONFIG, value_name = "FILE")]
    pub config: PathBuf,
    /// Directory of stored baselines (default: baselines/ of the repository).
    #[arg(long, default_value = DEFAULT_BASELINES, value_name = "DIR")]
    pub baselines: PathBuf,
    /// Directory of the candidate's kernel sources (default: kernels/ of the repository).
    #[arg(long, default_value = DEFAULT_KERNELS, value_name = "DIR")]
    pub kernels: PathBuf,
}

/// Splitting a run over GPUs or runners.
#[derive(Debug, Clone, Args)]
pub struct ShardArgs {
    /// Measure only shard K of N of the config's shapes (a deterministic split balanced by
    /// expected time); `ci-gate merge` joins the shards' results and decides over all of them.
    #[arg(long, value_name = "K/N", conflicts_with = "devices")]
    pub shard: Option<crate::shard::ShardSpec>,
    /// Run one shard per GPU of this machine, in parallel processes, and merge them: a list of
    /// device indices (0,1,2) or `all`.
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,
}

/// Nsight Compute profiles of `local` and `ci`.
#[derive(Debug, Clone, Args)]
pub struct ProfileArgs {
    /// Also profile this shape (repeatable); every shape with a `regression` verdict is
    /// profiled anyway. One launch of the base and of the candidate kernel, with ncu.
    #[arg(long = "profile", value_name = "SHAPE")]
    pub profile: Vec<String>,
    /// Also profile the N shapes with the largest candidate p50.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub profile_slowest: u32,
    /// Never profile, not even regressions.
    #[arg(long, conflicts_with_all = ["profile", "profile_slowest"])]
    pub no_profile: bool,
    /// Where the .ncu-rep files go.
    #[arg(long, default_value = "ci-gate-profiles", value_name = "DIR")]
    pub profile_dir: PathBuf,
    /// Wall-time limit of all profiling in one run, seconds; shapes past it are noted, not
    /// profiled.
    #[arg(long, default_value_t = 300, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=36_000))]
    pub profile_budget_s: u64,
    /// The ncu executable (default: ncu on the PATH, else in $CUDA_HOME/bin or
    /// /usr/local/cuda/bin).
    #[arg(long, value_name = "PATH")]
    pub ncu: Option<PathBuf>,
}

/// The run options `local` and `ci` share (a new one of both goes here, and into
/// `commands::requests::with_flags`).
#[derive(Debug, Clone, Args)]
pub struct RunFlags {
    /// Leave out the config's peers (PyTorch's scaled_dot_product_attention): no "Against
    /// PyTorch" table, a shorter run.
    #[arg(long)]
    pub no_peers: bool,
    /// Also measure energy per call (measure.energy_rounds windows per side after the timed
    /// pairs; about 2.5 s per shape on an H100). Never part of the verdict: off by default
    /// (a pull request's verdict does not wait for it), on in `baseline update`, whose
    /// stored figures the report shows, and on the nightly run.
    #[arg(long)]
    pub energy: bool,
}

/// Where the base kernels of an A/B run come from.
#[derive(Debug, Clone, Args)]
pub struct BaseArgs {
    /// Base kernels from this git revision (read with git; the working tree is untouched).
    /// Default for `local`: the merge-base of HEAD with the default branch.
    #[arg(long, value_name = "REF", conflicts_with_all = ["base_kernels", "no_base"])]
    pub base: Option<String>,
    /// Base kernels from this directory (its attention.cu, reference.cu and util.cu).
    #[arg(long, value_name = "DIR", conflicts_with = "no_base")]
    pub base_kernels: Option<PathBuf>,
    /// No A/B: measure the candidate alone; the stored baseline decides.
    #[arg(long)]
    pub no_base: bool,
    /// A `drift` fails the run (pushes to the default branch; on pull requests it warns).
    #[arg(long)]
    pub fail_on_drift: bool,
}

/// The defaults of [`ConfigArgs`], relative to the repository root.
pub(crate) use crate::config::DEFAULT_CONFIG;
pub(crate) const DEFAULT_BASELINES: &str = "baselines";
pub(crate) const DEFAULT_KERNELS: &str = "kernels";

/// Finds default paths from the repository root, so that the commands work from any
/// subdirectory. The first of `paths` (each with its default) says where the root is: when
/// it was not given and its default is not here, the nearest parent directory that has the
/// file `marker` becomes the root of every path still at its default. Paths the user gave
/// are kept as they are. Outside a repository the defaults stay, and the error that follows
/// names what to pass.
fn find_defaults(start: &Path, marker: &str, paths: &mut [(&mut PathBuf, &str)]) {
    let at_default = |p: &Path, d: &str| p == Path::new(d);
    match paths.first() {
        Some((anchor, default)) if at_default(anchor, default) => {
            if start.join(default).exists() {
                return;
            }
        }
        _ => return,
    }
    let Some(root) = start
        .ancestors()
        .skip(1)
        .find(|dir| dir.join(marker).is_file())
    else {
        return;
    };
    for (path, default) in paths.iter_mut() {
        if at_default(path, default) {
            **path = root.join(*default);
        }
    }
}

impl ConfigArgs {
    /// [`find_defaults`] from `configs/pr.yaml`: the config, baselines and kernels.
    pub(crate) fn find_defaults(&mut self, start: &Path) {
        find_defaults(
            start,
            DEFAULT_CONFIG,
            &mut [
                (&mut self.config, DEFAULT_CONFIG),
                (&mut self.baselines, DEFAULT_BASELINES),
                (&mut self.kernels, DEFAULT_KERNELS),
            ],
        );
    }
}

#[derive(Debug, Args)]
pub struct LocalArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub base: BaseArgs,
    /// Measure only this shape (repeatable), by its name as in the report, e.g. b2h8s512d64_f16.
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    #[command(flatten)]
    pub profile: ProfileArgs,
    #[command(flatten)]
    pub sharding: ShardArgs,
    /// Report format on stdout: a terminal table, the JSON numbers, the Markdown of the PR
    /// comment, or an export for Bencher (bmf) or github-action-benchmark.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Show every column of the table (by default it fits the terminal, 80 columns at least).
    #[arg(long)]
    pub wide: bool,
    /// Also write the results file here (JSON).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Exactly N rounds (pairs, in A/B) for every shape, in one stage, instead of the
    /// config's planned two-stage design.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=200))]
    pub rounds: Option<u32>,
    /// Measure A/B even when the two timed kernels are byte-identical (selftest's A/A).
    #[arg(long, hide = true)]
    pub ab_always: bool,
    /// Compare with no stored baseline (selftest, baseline recording).
    #[arg(long, hide = true)]
    pub no_compare: bool,
    /// Skip the parity check (selftest, which only measures timing).
    #[arg(long, hide = true)]
    pub no_parity: bool,
    #[command(flatten)]
    pub run: RunFlags,
    /// Slow the candidate down by this fraction of the reference's p50 (selftest).
    #[arg(long, value_name = "FRACTION", hide = true)]
    pub inject: Option<f64>,
}

#[derive(Debug, Args)]
pub struct CiArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub base: BaseArgs,
    #[command(flatten)]
    pub profile: ProfileArgs,
    #[command(flatten)]
    pub sharding: ShardArgs,
    /// Where to write the results file.
    #[arg(long, default_value = "ci-gate-results.json", value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub run: RunFlags,
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
    /// Record from these results files (repeatable: each a separate measuring process, so
    /// their spread is recorded) instead of measuring now. No GPU needed.
    #[arg(long, value_name = "RESULTS.json")]
    pub from: Vec<PathBuf>,
    /// Measure in this many fresh processes (without --from). The spread between processes
    /// that later comparisons with this baseline carry is estimated from them: from 5 or more
    /// it is used as estimated (at least 0.2%), from 2 to 4 as at least 0.3%, from 1 the 1.0%
    /// default is assumed.
    #[arg(long, value_name = "N", default_value_t = crate::comparison::MIN_PROCESSES as u32, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub processes: u32,
    /// Why the baseline changes (recorded in its provenance).
    #[arg(long)]
    pub reason: String,
    /// Record even if a shape fails parity or is slower than the current baseline.
    #[arg(long)]
    pub force: bool,
}

impl BaselineShowArgs {
    /// [`find_defaults`] of `--baselines` alone, rooted where `configs/pr.yaml` is.
    pub(crate) fn find_defaults(&mut self, start: &Path) {
        find_defaults(
            start,
            DEFAULT_CONFIG,
            &mut [(&mut self.baselines, DEFAULT_BASELINES)],
        );
    }
}

#[derive(Debug, Args)]
pub struct BaselineShowArgs {
    /// Show every column of the table (by default it fits the terminal, 80 columns at least).
    #[arg(long)]
    pub wide: bool,
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
    /// Report format: a terminal table, the JSON numbers, the Markdown of the PR comment, or an
    /// export for Bencher (bmf) or github-action-benchmark.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Show every column of the table (by default it fits the terminal, 80 columns at least).
    #[arg(long)]
    pub wide: bool,
    /// Round i of BASE and round i of CAND were measured as one interleaved pair (same
    /// process): a paired test on the log ratios of their medians.
    #[arg(long)]
    pub paired: bool,
    /// Unpaired only: the spread (sd of the log p50, e.g. 0.004) between the processes that
    /// measured BASE and CAND, added to the interval; 0 when both came from one process.
    /// Default: the conservative 0.01 (1%), as for any two separate processes; the output
    /// says so.
    #[arg(long, value_name = "FRACTION", conflicts_with = "paired")]
    pub process_sd: Option<f64>,
    /// Take the gate thresholds from this config (default: the candidate results file's, or
    /// the built-in defaults for sample files).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SelftestArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// A/A trials: each a fresh measuring process, every shape at the design's largest
    /// number of pairs (10 trials × the PR config's 13 shapes = 130 comparisons per
    /// condition in under 10 minutes: 556 s on an H100).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub trials: u32,
    /// Candidate-time factors the rule is also applied at, on the same A/A pairs
    /// (repeatable: 1.02 = +2%, the margin: at most about 5% may be flagged; +2.5% and +3%:
    /// at least 95%).
    #[arg(long = "scale", default_values_t = [1.02, 1.025, 1.03], value_name = "FACTOR")]
    pub scale: Vec<f64>,
    /// A real slowdown injected into the candidate's graphs (spin kernels) in one more run,
    /// to prove detection end to end: a fraction of the base's p50.
    #[arg(long, default_value = "0.03", value_name = "FRACTION")]
    pub inject: Option<f64>,
    /// Fresh processes compared with a stored baseline alone (recorded from 5 processes
    /// first); 0 leaves the stored-baseline path out.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub stored_trials: u32,
    /// Only this shape (repeatable).
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    /// Only shard K of N of the shapes (the split of `local --shard`).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<crate::shard::ShardSpec>,
    /// Report format: a terminal table, JSON, or Markdown.
    #[arg(long, value_enum, default_value_t = SelftestFormat::Table)]
    pub format: SelftestFormat,
    /// Show every column of the table (by default it fits the terminal, 80 columns at least).
    #[arg(long)]
    pub wide: bool,
    /// Also write the selftest report here (JSON).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// The formats of a selftest report (not the exports of a gate run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SelftestFormat {
    Table,
    Json,
    Markdown,
}

/// The default config of `sanitize`, relative to the repository root.
pub(crate) const DEFAULT_SANITIZE_CONFIG: &str = "configs/sanitize.yaml";

#[derive(Debug, Args)]
pub struct SanitizeArgs {
    /// Config whose shapes are run (default: configs/sanitize.yaml of the repository, shapes
    /// chosen to reach every code path; timing settings are not used).
    #[arg(long, short, default_value = DEFAULT_SANITIZE_CONFIG, value_name = "FILE")]
    pub config: PathBuf,
    /// Directory whose attention.cu is checked (default: kernels/ of the repository).
    #[arg(long, default_value = DEFAULT_KERNELS, value_name = "DIR")]
    pub kernels: PathBuf,
    /// Directory of the reference.cu and util.cu that run with it, also checked (default:
    /// the --kernels directory).
    #[arg(long, value_name = "DIR")]
    pub harness: Option<PathBuf>,
    /// Only this shape of the config (repeatable).
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    /// Only shard K of N of the shapes (the split of `local --shard`).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<crate::shard::ShardSpec>,
    /// Only this tool (repeatable; default: all four).
    #[arg(long = "tool", value_enum, value_name = "TOOL")]
    pub tools: Vec<crate::sanitize::Tool>,
    /// Runs at once (each a process on the GPU).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    /// Wall-time limit of one tool on one shape, seconds (past it: no answer, exit 2). Under
    /// the sanitizer the program waits up to 300 s (or this limit, if shorter) for the GPU,
    /// not the config's measure.max_wait_s.
    #[arg(long, default_value_t = 600, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=36_000))]
    pub timeout_s: u64,
    /// Report format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write the report here (JSON).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Keep compute-sanitizer's logs in this directory (`TOOL-SHAPE.log`).
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
    /// The compute-sanitizer executable (default: on the PATH, else in $CUDA_HOME/bin or
    /// /usr/local/cuda/bin).
    #[arg(long, value_name = "PATH")]
    pub sanitizer: Option<PathBuf>,
}

impl SanitizeArgs {
    /// [`find_defaults`] from `configs/sanitize.yaml`: that config and the kernels.
    pub(crate) fn find_defaults(&mut self, start: &Path) {
        find_defaults(
            start,
            DEFAULT_SANITIZE_CONFIG,
            &mut [
                (&mut self.config, DEFAULT_SANITIZE_CONFIG),
                (&mut self.kernels, DEFAULT_KERNELS),
            ],
        );
    }
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' results files, one per shard, any order.
    #[arg(value_name = "RESULTS", required = true)]
    pub results: Vec<PathBuf>,
    /// The config the shards ran, from the base commit: the gate settings, parity
    /// tolerances, design and shapes come from it, never from the shard files (which only
    /// supply measurements); every shard must record this file's hash.
    #[arg(long, short, value_name = "FILE", required = true)]
    pub config: PathBuf,
    /// Directory of stored baselines of the base commit (default: baselines/ of the
    /// repository): wherever it holds a baseline for a shape, merge compares with it, whatever
    /// the shards say.
    #[arg(long, default_value = DEFAULT_BASELINES, value_name = "DIR")]
    pub baselines: PathBuf,
    /// A drift against the stored baseline fails the run (pushes to the default branch); the
    /// shards' own setting is ignored.
    #[arg(long)]
    pub fail_on_drift: bool,
    /// Where to write the merged results file.
    #[arg(long, value_name = "FILE", required_if_eq("ci", "true"))]
    pub out: Option<PathBuf>,
    /// In GitHub Actions, as `ci` does: the job summary, annotations and step outputs, and a
    /// results file for `comment` also when the shards cannot be merged (exit 2).
    #[arg(long)]
    pub ci: bool,
    /// Report format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Show every column of the table (by default it fits the terminal, 80 columns at least).
    #[arg(long)]
    pub wide: bool,
}

impl MergeArgs {
    /// [`find_defaults`] of `--baselines` alone, rooted where `configs/pr.yaml` is.
    pub(crate) fn find_defaults(&mut self, start: &Path) {
        find_defaults(
            start,
            DEFAULT_CONFIG,
            &mut [(&mut self.baselines, DEFAULT_BASELINES)],
        );
    }
}

#[derive(Debug, Args)]
pub struct KernelRunArgs {
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The attention.cu launched.
    #[arg(long, value_name = "DIR")]
    pub kernels: PathBuf,
    /// reference.cu and util.cu.
    #[arg(long, value_name = "DIR")]
    pub harness: PathBuf,
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    /// Launch only the attention kernel (no reference after it).
    #[arg(long)]
    pub no_reference: bool,
    /// Compile only (fills the NVRTC cache), launch nothing.
    #[arg(long)]
    pub compile_only: bool,
    /// The longest wait for the GPU, seconds (default: the config's measure.max_wait_s).
    /// `sanitize` and the profiler pass a longer one: under their tools a launch takes
    /// tens of times longer.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=36_000))]
    pub max_wait_s: Option<u64>,
}

/// The NVRTC targets `compile` checks by default: the L4, portable Hopper (the mma.sync
/// kernels) and Hopper with wgmma (what the gate compiles for on compute capability 9.0).
pub(crate) const DEFAULT_COMPILE_TARGETS: [&str; 3] = ["sm_89", "sm_90", "sm_90a"];

#[derive(Debug, Args)]
pub struct CompileArgs {
    /// Directory whose attention.cu is compiled (default: kernels/ of the repository).
    #[arg(long, default_value = DEFAULT_KERNELS, value_name = "DIR")]
    pub kernels: PathBuf,
    /// Compile attention.cu as the gate does for this config (its compile.defines).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Directory of the reference.cu and util.cu compiled with it (default: the --kernels
    /// directory where it has them, else the copies built into ci-gate, which the gate runs).
    #[arg(long, value_name = "DIR")]
    pub harness: Option<PathBuf>,
    /// NVRTC target (repeatable), e.g. sm_89, sm_90a (default: sm_89, sm_90 and sm_90a).
    #[arg(long = "arch", value_name = "SM", value_parser = parse_target)]
    pub archs: Vec<String>,
}

impl CompileArgs {
    /// [`find_defaults`] of the kernels alone, rooted where `configs/pr.yaml` is.
    pub(crate) fn find_defaults(&mut self, start: &Path) {
        find_defaults(
            start,
            DEFAULT_CONFIG,
            &mut [(&mut self.kernels, DEFAULT_KERNELS)],
        );
    }

    /// The targets asked for, or the defaults.
    pub(crate) fn targets(&self) -> Vec<String> {
        if self.archs.is_empty() {
            DEFAULT_COMPILE_TARGETS.map(String::from).to_vec()
        } else {
            self.archs.clone()
        }
    }
}

/// `sm_` and two or three digits, optionally `a` or `f` (architecture- or family-specific).
fn parse_target(s: &str) -> Result<String, String> {
    let digits = s
        .strip_prefix("sm_")
        .map(|r| r.strip_suffix(['a', 'f']).unwrap_or(r));
    match digits {
        Some(d) if (2..=3).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()) => {
            if d.parse::<u32>().is_ok_and(|n| n < 80) {
                return Err(format!(
                    "{s} is older than the sm_80 the kernels need: they use bf16 conversions, mma.sync, ldmatrix and cp.async (an L4 is sm_89, an H100 or H200 sm_90a)"
                ));
            }
            Ok(s.to_owned())
        }
        _ => Err(format!(
            "{} is not an NVRTC CUBIN target such as sm_89, sm_90 or sm_90a",
            crate::text::quote(s)
        )),
    }
}

#[derive(Debug, Args)]
pub struct EnvArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BisectArgs {
    /// The last commit known to be fast enough (any git revision: sha, branch, tag).
    #[arg(value_name = "GOOD")]
    pub good: String,
    /// A later commit that is slower; GOOD must be on its first-parent history.
    #[arg(value_name = "BAD")]
    pub bad: String,
    /// Judge only this shape (repeatable), by its name as in the report; default: every
    /// shape of the config. A step is "slower" when any of them is a regression.
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    /// Config whose shapes, gate margin and alpha, and measurement settings are used
    /// (default: configs/pr.yaml of the repository).
    #[arg(long, short, default_value = DEFAULT_CONFIG, value_name = "FILE")]
    pub config: PathBuf,
    /// The kernels directory; its path in the repository says where each commit's kernels
    /// are read from with git (default: kernels/ of the repository).
    #[arg(long, default_value = DEFAULT_KERNELS, value_name = "DIR")]
    pub kernels: PathBuf,
    /// Report format on stdout: terminal text or JSON.
    #[arg(long, value_enum, default_value_t = BisectFormat::Table)]
    pub format: BisectFormat,
    /// Also write the report here (JSON).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

impl BisectArgs {
    /// [`find_defaults`] from `configs/pr.yaml`: the config and the kernels.
    pub(crate) fn find_defaults(&mut self, start: &Path) {
        find_defaults(
            start,
            DEFAULT_CONFIG,
            &mut [
                (&mut self.config, DEFAULT_CONFIG),
                (&mut self.kernels, DEFAULT_KERNELS),
            ],
        );
    }
}

/// The formats of a bisect report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BisectFormat {
    Table,
    Json,
}

/// Default history file (JSON Lines, docs/HISTORY.md).
pub(crate) const DEFAULT_HISTORY: &str = "history.jsonl";

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, flatten_help = true)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub command: Option<HistoryCommand>,
    #[command(flatten)]
    pub show: HistoryShowArgs,
}

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Append the shapes of a results file to the history (runs on the default branch).
    ///
    /// Earlier lines are never rewritten; a history with a malformed line is refused; a run
    /// already there (same commit, config and GPU) is not appended twice.
    Append(HistoryAppendArgs),
}

#[derive(Debug, Args)]
pub struct HistoryShowArgs {
    /// The history file (JSON Lines).
    #[arg(long, default_value = DEFAULT_HISTORY, value_name = "FILE")]
    pub history: PathBuf,
    /// Only this shape (repeatable), by its name as in the report.
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    /// Only runs from this date (YYYY-MM-DD, UTC) or RFC 3339 time on.
    #[arg(long, value_name = "DATE", value_parser = crate::history::parse_since)]
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// A terminal table, the JSON series, or an SVG chart (one panel per series).
    #[arg(long, value_enum, default_value_t = HistoryFormat::Table)]
    pub format: HistoryFormat,
    /// Show every column of the table (by default it fits the terminal, 80 columns at least).
    #[arg(long)]
    pub wide: bool,
}

#[derive(Debug, Args)]
pub struct HistoryAppendArgs {
    /// Results file of a run on the default branch (written by `ci-gate ci`).
    #[arg(long, value_name = "RESULTS.json")]
    pub results: PathBuf,
    /// The history file to append to (created when absent).
    #[arg(long, default_value = DEFAULT_HISTORY, value_name = "FILE")]
    pub history: PathBuf,
}

/// Output formats of `history`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HistoryFormat {
    Table,
    Json,
    Svg,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_found_from_the_repository_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["configs", "baselines", "kernels", "sub/deeper"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join(DEFAULT_CONFIG), "").unwrap();
        std::fs::write(root.join(DEFAULT_SANITIZE_CONFIG), "").unwrap();
        let here = root.join("sub/deeper");

        let mut c = Cli::parse_from(["ci-gate", "local", "--kernels", "mine"]);
        let Command::Local(a) = &mut c.command else {
            unreachable!()
        };
        a.config.find_defaults(&here);
        assert_eq!(a.config.config, root.join(DEFAULT_CONFIG));
        assert_eq!(a.config.baselines, root.join(DEFAULT_BASELINES));
        // What the user gave is kept.
        assert_eq!(a.config.kernels, Path::new("mine"));

        let mut c = Cli::parse_from(["ci-gate", "sanitize"]);
        let Command::Sanitize(a) = &mut c.command else {
            unreachable!()
        };
        a.find_defaults(&here);
        assert_eq!(a.config, root.join(DEFAULT_SANITIZE_CONFIG));
        assert_eq!(a.kernels, root.join(DEFAULT_KERNELS));

        let mut c = Cli::parse_from(["ci-gate", "compile"]);
        let Command::Compile(a) = &mut c.command else {
            unreachable!()
        };
        a.find_defaults(&here);
        assert_eq!(a.kernels, root.join(DEFAULT_KERNELS));

        let mut c = Cli::parse_from(["ci-gate", "baseline", "show"]);
        let Command::Baseline(BaselineCommand::Show(a)) = &mut c.command else {
            unreachable!()
        };
        a.find_defaults(&here);
        assert_eq!(a.baselines, root.join(DEFAULT_BASELINES));
        // At the root, and outside any repository, the defaults stay as they are.
        let mut c = Cli::parse_from(["ci-gate", "baseline", "show"]);
        let Command::Baseline(BaselineCommand::Show(a)) = &mut c.command else {
            unreachable!()
        };
        a.find_defaults(root);
        assert_eq!(a.baselines, Path::new(DEFAULT_BASELINES));
        let outside = tempfile::tempdir().unwrap();
        a.find_defaults(outside.path());
        assert_eq!(a.baselines, Path::new(DEFAULT_BASELINES));
    }
}
