//! The results file (`--out`): everything one run measured and concluded.

use std::collections::HashSet;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

// The planned design and a drift's cause are part of the file; they are defined where they
// are used (`comparison`, `verdict`), which know nothing of the file.
pub use crate::comparison::StageDesign;
use crate::comparison::{Comparison, Reference};
use crate::config::{CacheMode, GateSettings, ShapeParams, Tolerance};
use crate::files::{self, FileError};
use crate::method::Method;
use crate::stats::Summary;
use crate::text::{self, quote};
use crate::validate::{
    self, Check, Checker, MAX_ERROR_LEN, MAX_LABEL_LEN, MAX_ROUNDS, MAX_SHAPES,
    MAX_SHORT_LABEL_LEN, MAX_THROTTLE_REASONS, MAX_WARNING_LEN, MAX_WARNINGS, Untrusted,
};
pub use crate::verdict::DriftCause;
use crate::verdict::{Policy, Verdict};

/// Most other GPU processes a results file may list.
pub(crate) const MAX_PROCESSES: usize = 64;

/// Schema of results and baseline files this build writes. Version 1 files (before A/B and
/// between-process spreads) still load: every field added since has a default.
pub const SCHEMA_VERSION: u32 = 2;

/// One reading of the GPU's state (NVML).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuState {
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_w: Option<f64>,
    /// Active clock throttle reasons, by name; empty when none (idle is not counted).
    pub throttle_reasons: Vec<String>,
}

/// The machine a run measured on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub gpu_name: String,
    /// Directory name of this GPU model's baselines, e.g. `nvidia-h200`.
    pub gpu_slug: String,
    pub gpu_uuid: Option<String>,
    /// e.g. "9.0".
    pub compute_capability: String,
    pub sm_count: Option<u32>,
    pub l2_bytes: Option<u64>,
    pub driver_version: Option<String>,
    /// CUDA version the driver supports, e.g. "13.0".
    pub cuda_driver_version: Option<String>,
    pub nvrtc_version: Option<String>,
    pub state_before: Option<GpuState>,
    pub state_after: Option<GpuState>,
}

impl Environment {
    /// Throttle reasons seen before or after the run (deduplicated).
    pub(crate) fn throttle_reasons(&self) -> Vec<String> {
        let mut all: Vec<String> = [&self.state_before, &self.state_after]
            .into_iter()
            .flatten()
            .flat_map(|s| s.throttle_reasons.iter().cloned())
            .collect();
        all.sort();
        all.dedup();
        all
    }
}

/// The directory-safe slug of a GPU name: `NVIDIA H200` → `nvidia-h200`.
pub fn gpu_slug(gpu_name: &str) -> String {
    let mut slug = String::new();
    for c in gpu_name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    while slug.ends_with('-') {
        slug.pop();
    }
    if slug.is_empty() {
        "unknown-gpu".into()
    } else {
        slug
    }
}

/// Output error against the reference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parity {
    pub max_abs: f64,
    pub rel_l2: f64,
    /// The largest, over (batch, head) slices, of ‖out − ref‖ / ‖ref − uniform‖, where
    /// `uniform` is what attention with equal weights gives (each row's mean of the V rows
    /// it sees): the error in units of the part of the output that depends on q. A kernel
    /// that returns something cheaper than attention which is close to it on some inputs (a
    /// mean of V, a linear function of q) is off by about that whole part (0.29 and more
    /// on the input mixture), an honest one by rounding (docs/MEASURING.md, "Errors in the
    /// output's own scale"). `None` where not computed: the rows checked in timed launches,
    /// an output whose rows all see fewer than 32 keys, results of a ci-gate before
    /// 2026-12-08.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub centered: Option<f64>,
    /// Elements that were NaN or ±Inf (other than the poison pattern).
    pub nan_or_inf: u64,
    /// Elements still holding the poison pattern: never written by the kernel.
    pub unwritten: u64,
    pub tolerance: Tolerance,
    pub seed: u64,
}

impl Parity {
    pub fn passed(&self) -> bool {
        self.nan_or_inf == 0
            && self.unwritten == 0
            && self.max_abs <= self.tolerance.max_abs
            && self.rel_l2 <= self.tolerance.rel_l2
            && self.centered_passed()
    }

    /// Whether the centered error is within its tolerance: true where either was not
    /// computed or set (a NaN fails).
    pub fn centered_passed(&self) -> bool {
        match (self.centered, self.tolerance.centered) {
            (Some(c), Some(t)) => c <= t,
            _ => true,
        }
    }

    /// ", centered L2 … (tolerance …)" where the centered error was computed, for the
    /// sentences that name each figure; "" elsewhere.
    pub fn centered_phrase(&self) -> String {
        match (self.centered, self.tolerance.centered) {
            (Some(c), Some(t)) => format!(", centered L2 {c:.2e} (tolerance {t:.1e})"),
            (Some(c), None) => format!(", centered L2 {c:.2e}"),
            _ => String::new(),
        }
    }
}

/// How a shape was measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasurementInfo {
    pub cache: CacheMode,
    /// Kernel launches in one CUDA-graph replay; one sample is the replay's time / this.
    pub launches_per_sample: u32,
    pub rounds: u32,
    /// Rounds added because the first verdict was inconclusive.
    pub extra_rounds: u32,
    /// Bytes the launches of one sample touch (cold cache: checked to exceed L2).
    pub working_set_bytes: u64,
    pub wall_s: f64,
    /// Lowest and highest SM clock (MHz) read around the rounds' samples, when NVML works.
    #[serde(default)]
    pub sm_clock_mhz: Option<(u32, u32)>,
    /// The planned design: rounds (or pairs) of the first stage and at most in all. `None`
    /// (files of earlier versions, plain sample files) is one stage of all the rounds.
    #[serde(default)]
    pub design: Option<StageDesign>,
    /// Timed launches of the candidate whose output was compared with the reference (every
    /// launch of every sample: gpu::integrity); 0 in files of earlier versions.
    #[serde(default)]
    pub checked_launches: u64,
    /// Each side's median unwitnessed time per sample, where the device witnesses its
    /// samples (`crate::witness`); `None` in files of earlier versions and for devices that
    /// do not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwitnessed: Option<Unwitnessed>,
}

/// What the host's clock saw of a shape's samples beyond the events' span
/// (`crate::witness`): medians over every sample of a side, in µs, and the largest
/// difference between the sides that is not judged. (`Default`: all zero and none, a start
/// for records built in tests.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Unwitnessed {
    pub candidate_us: f64,
    /// The base's, in A/B.
    #[serde(default)]
    pub base_us: Option<f64>,
    /// The witness's control's, in a run with one side (`crate::witness::record`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_us: Option<f64>,
    /// The candidate's median unwitnessed time from the lead-in to the end of a sample's
    /// checks, the checks' own time by their events taken out
    /// (`crate::witness::SideWitness::through_checks_us`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_through_checks_us: Option<f64>,
    /// The base's, in A/B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_through_checks_us: Option<f64>,
    /// The control's, in a run with one side: through the work it queues after its end
    /// event in place of checks (`crate::gpu::measure::CONTROL_TRAILING_CYCLES`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_through_checks_us: Option<f64>,
    /// The candidate's median unwitnessed time from the lead-in to the end of the tail after
    /// the checks (`crate::witness::SideWitness::through_tail_us`), in A/B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_through_tail_us: Option<f64>,
    /// The base's, in A/B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_through_tail_us: Option<f64>,
    /// What is judged (`crate::witness::judge_recorded`): how far the candidate's rounds'
    /// median unwitnessed times lie beyond the base's (pair by pair) or the control's, µs, a
    /// 20%-trimmed mean over `units` pairs or rounds; `None` where too few.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shift_us: Option<f64>,
    /// The same through the checks (a side alone: against the control's span through its
    /// work after the end event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_checks_shift_us: Option<f64>,
    /// The same through the tail after the checks, in A/B: recorded, not judged (the judged
    /// shifts above already hold the tail: each sample's least span from its own wake-up on,
    /// `crate::witness::RoundWitness`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_tail_shift_us: Option<f64>,
    /// The pairs (A/B) or rounds the shifts are over.
    #[serde(default)]
    pub units: u64,
    /// The candidate's median sample (the events' span of one replay), µs.
    pub sample_us: f64,
    /// `crate::witness::through_checks_limit_us` of the candidate's samples, where the shift
    /// through the checks is judged (A/B).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_checks_limit_us: Option<f64>,
    /// `crate::witness::limit_us` of the candidate's samples (a side alone may differ from
    /// the control by `crate::witness::ALONE_FACTOR` times it, by
    /// `crate::witness::ALONE_LONGER_FACTOR` times it below the control).
    pub limit_us: f64,
    /// The fewest samples any of the medians is over.
    pub samples: u64,
}

/// The order of one A/B pair of rounds, drawn by a seeded coin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PairOrder {
    /// Base round first, then the candidate's.
    #[serde(rename = "AB")]
    BaseFirst,
    /// Candidate round first.
    #[serde(rename = "BA")]
    CandFirst,
}

/// The third side of a drift: the stored baseline's commit's kernels, measured now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DriftCheck {
    pub commit: String,
    /// Per-launch µs of the baseline commit's kernels, by round (paired with the candidate's
    /// rounds `cand_samples_us`).
    pub samples_us: Vec<Vec<f64>>,
    pub cand_samples_us: Vec<Vec<f64>>,
    /// Candidate / baseline-commit kernels, paired in this run.
    pub cand_vs_commit: Option<crate::comparison::Comparison>,
    /// Baseline-commit kernels now / their stored numbers.
    pub commit_vs_stored: Option<crate::comparison::Comparison>,
    pub cause: DriftCause,
}

/// Everything known about one shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapeResult {
    pub name: String,
    pub params: ShapeParams,
    pub verdict: Verdict,
    /// Why it could not be measured, when `verdict` is `error`.
    pub error: Option<String>,
    /// The candidate's per-launch times in µs, by round.
    pub samples_us: Vec<Vec<f64>>,
    /// A/B: the base kernels' per-launch times in µs, by round; round i of each side is pair
    /// i. Empty when no A/B ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_samples_us: Vec<Vec<f64>>,
    /// A/B: the order each pair was measured in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pair_order: Vec<PairOrder>,
    /// The candidate's summary (pooled values).
    pub summary: Option<Summary>,
    /// A/B: the base side's summary.
    #[serde(default)]
    pub base_summary: Option<Summary>,
    /// Achieved TFLOP/s at the p50.
    pub tflops: Option<f64>,
    pub parity: Option<Parity>,
    /// A/B: the base kernels' parity (a base that fails parity is an error).
    #[serde(default)]
    pub base_parity: Option<Parity>,
    /// A/B: candidate against the base kernels, same process, paired rounds.
    #[serde(default)]
    pub ab: Option<Comparison>,
    /// Candidate against the stored baseline (`comparison` in files of earlier versions).
    #[serde(default, alias = "comparison")]
    pub stored: Option<Comparison>,
    /// Which reference decided the verdict, when one did.
    #[serde(default)]
    pub decided_by: Option<Reference>,
    /// The stored baseline holds this shape but was measured by another method than the
    /// candidate (`crate::method`), so it was not compared: the shape reads `other-method`
    /// where no A/B decides. Set by [`crate::evaluate::evaluate`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stored_other_method: bool,
    /// A drift traced with the baseline commit's kernels.
    #[serde(default)]
    pub drift: Option<DriftCheck>,
    pub measurement: Option<MeasurementInfo>,
    /// Nsight Compute figures, base against candidate, when this shape was profiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::ShapeProfile>,
    /// The config's peers measured on this shape, interleaved with the kernel's rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<crate::peers::PeerResult>,
    /// The peers' p50s stored with this shape's baseline (to say whether the gap moved).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stored_peers: Vec<crate::peers::StoredPeer>,
    /// The energy per call stored with this shape's baseline (measured by `baseline update`
    /// and the nightly run), shown where this run measured none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_energy: Option<crate::energy::SideEnergy>,
    /// Why the kernel under test is known not to have done the checked work every time (it
    /// changed its inputs, left a timed output unwritten or wrong, wrote outside its output,
    /// or failed parity on a random shape of this kind): a parity failure, naming the side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
    /// A/B: pairs measured again because a clock change hit one side's samples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remeasured: Vec<RemeasuredPair>,
    /// A/B: per side (base, candidate), per kept pair, the samples across which the SM clock
    /// moved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clock_events: Vec<Vec<u32>>,
    /// Energy per call of each side (src/energy.rs): reported, never part of the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<crate::energy::ShapeEnergy>,
    /// How the host launched the candidate's kernel on this shape (`crate::launch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<crate::launch::Launch>,
    /// A/B: how it launched the base's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_launch: Option<crate::launch::Launch>,
    /// How the stored baseline's run launched this shape, where it recorded that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_launch: Option<crate::launch::Launch>,
}

/// A pair of rounds dropped and measured again: the SM clock moved across more samples of
/// one side than the pairing cancels (`pipeline::unbalanced`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RemeasuredPair {
    /// Which pair (1-based) it would have been.
    pub pair: u32,
    pub base_clock_events: u32,
    pub cand_clock_events: u32,
}

impl ShapeResult {
    /// The A/B comparison of the shape's base rounds (`base_samples_us`) with the candidate's
    /// `cand` rounds under `gate` and the shape's planned design: what
    /// [`crate::evaluate::evaluate`] records as `ab`, and what a file's `ab` is checked
    /// against. Cost: O(N log N) for N values.
    pub(crate) fn paired_comparison(
        &self,
        cand: &crate::stats::Rounds,
        gate: &GateSettings,
    ) -> Result<Comparison, crate::stats::StatsError> {
        let design = self.measurement.as_ref().and_then(|m| m.design);
        crate::stats::Rounds::new(self.base_samples_us.clone())
            .and_then(|base| Comparison::paired(&base, cand, design, gate))
    }

    /// What the shape's results record of the host's clock's witness (`crate::witness`), if
    /// anything.
    pub fn unwitnessed(&self) -> Option<&Unwitnessed> {
        self.measurement.as_ref()?.unwitnessed.as_ref()
    }

    /// A shape with nothing measured yet (verdict `error` until evaluated).
    pub fn new(params: ShapeParams) -> ShapeResult {
        ShapeResult {
            name: params.name(),
            params,
            verdict: Verdict::Error,
            error: None,
            samples_us: Vec::new(),
            base_samples_us: Vec::new(),
            pair_order: Vec::new(),
            summary: None,
            base_summary: None,
            tflops: None,
            parity: None,
            base_parity: None,
            ab: None,
            stored: None,
            decided_by: None,
            stored_other_method: false,
            drift: None,
            measurement: None,
            profile: None,
            peers: Vec::new(),
            stored_peers: Vec::new(),
            stored_energy: None,
            integrity: None,
            remeasured: Vec::new(),
            clock_events: Vec::new(),
            energy: None,
            launch: None,
            base_launch: None,
            stored_launch: None,
        }
    }

    /// Whether the stored baseline would be this shape's only reference: it has no A/B rounds,
    /// and neither an error nor an integrity failure has ended it already.
    pub(crate) fn only_stored_could_judge(&self) -> bool {
        self.base_samples_us.is_empty() && self.error.is_none() && self.integrity.is_none()
    }

    /// Whether the candidate kept parity: its parity check passed and no integrity check
    /// failed. `None` when parity was not checked and nothing failed (offline compare).
    pub(crate) fn parity_passed(&self) -> Option<bool> {
        if self.integrity.is_some() {
            return Some(false);
        }
        self.parity.as_ref().map(|p| p.passed())
    }

    /// The comparison that decides: A/B when it ran, else the stored baseline.
    pub(crate) fn primary(&self) -> Option<&Comparison> {
        self.ab.as_ref().or(self.stored.as_ref())
    }

    /// Whether this shape fails the check under `policy`: its verdict fails
    /// ([`Policy::fails`]: a drift traced to the runner does not), or the kernel failed an
    /// integrity check, whatever the verdict says.
    pub(crate) fn fails(&self, policy: Policy) -> bool {
        self.integrity.is_some() || policy.fails(self.verdict, self.drift.as_ref().map(|d| d.cause))
    }
}

/// Whether a run passes the check: nothing kept it from a verdict (`error`), it has shapes,
/// and none of them fails under `policy` ([`ShapeResult::fails`]). The one function that
/// decides "passed": the exit code of `local`, `ci`, `compare` and `merge`, the results
/// file's `passed`, the `verdict` step output and every report's headline come from it.
pub fn passed(error: Option<&str>, shapes: &[ShapeResult], policy: Policy) -> bool {
    error.is_none() && !shapes.is_empty() && !shapes.iter().any(|s| s.fails(policy))
}

/// Config identity recorded in results and baselines: its name, where it was read, the
/// hash of its content and the compile defines it gave the timed kernels (part of its
/// content, recorded on their own so that a message can name them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigInfo {
    pub name: String,
    pub path: String,
    pub hash: String,
    /// `compile.defines`; empty where there are none, and in files of earlier versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defines: Vec<String>,
}

impl ConfigInfo {
    /// What a results file records of `config`.
    pub(crate) fn of(config: &crate::config::Config) -> ConfigInfo {
        ConfigInfo {
            name: config.name.clone(),
            path: config.path.display().to_string(),
            hash: config.hash.clone(),
            defines: config.compile.defines.clone(),
        }
    }

    /// Whether `self` and `other` are one config: the same name, content hash and compile
    /// defines (where the path it was read from may differ).
    pub(crate) fn same_config(&self, other: &ConfigInfo) -> bool {
        self.name == other.name && self.hash == other.hash && self.defines == other.defines
    }

    /// `config "pr" (hash 0123456789ab…, defines CG_ADA_TILES)`, for messages: every part
    /// was checked on reading (a plain name, hex, defines of identifier characters).
    pub(crate) fn describe(&self) -> String {
        let hash = if self.hash.is_empty() {
            "no hash".to_owned()
        } else {
            format!("hash {}…", self.hash.chars().take(12).collect::<String>())
        };
        let defines = if self.defines.is_empty() {
            "no compile defines".to_owned()
        } else {
            format!("defines {}", self.defines.join(" "))
        };
        format!("config {} ({hash}, {defines})", quote(&self.name))
    }
}

/// A config's path for a command a message suggests: `configs/NAME.yaml` out of the path a
/// run read (in CI under a checkout directory, e.g. `base/configs/pr.yaml`), else the path
/// as it was read (a local run's own), else `configs/<name>.yaml`.
pub(crate) fn repo_config_path(read_from: &str, name: &str) -> String {
    match read_from.rfind("configs/") {
        Some(i) => read_from[i..].to_owned(),
        None if !read_from.is_empty() => read_from.to_owned(),
        None => format!("configs/{name}.yaml"),
    }
}

/// The baseline a run was compared with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineRef {
    pub path: String,
    pub commit: Option<String>,
    pub recorded_at: DateTime<Utc>,
    /// The method it was measured by (`None`: it names none, or the results file was
    /// written before ci-gate recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
}

/// A results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    pub schema_version: u32,
    pub tool_version: String,
    pub git_commit: Option<String>,
    pub created_at: DateTime<Utc>,
    pub environment: Option<Environment>,
    pub config: ConfigInfo,
    /// What measured the times (`crate::method`); `None` in files written before ci-gate
    /// named its method, which are then of a method known to be the same as no other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
    pub kernel_source_hash: Option<String>,
    pub gate: GateSettings,
    pub baseline: Option<BaselineRef>,
    pub shapes: Vec<ShapeResult>,
    /// What the run that wrote the file concluded ([`passed`] at the time). ci-gate never
    /// reads it back: [`ResultsFile::passed`] recomputes it from what the file holds.
    pub passed: bool,
    pub warnings: Vec<String>,
    /// Information that is not a warning (how the base was chosen, an A/B skipped).
    #[serde(default)]
    pub notes: Vec<String>,
    /// What prevented a verdict for the whole run (no GPU, a config error...), if anything.
    #[serde(default)]
    pub error: Option<String>,
    /// The base the candidate was measured against (A/B), when one was.
    #[serde(default)]
    pub base: Option<BaseInfo>,
    /// Whether a `drift` fails this run (pushes to the default branch).
    #[serde(default)]
    pub fail_on_drift: bool,
    /// How profiling went, when any shape was to be profiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiling: Option<crate::profile::ProfilingInfo>,
    /// Which shard of a sharded run this file holds (`--shard K/N`); `None` for a whole run.
    /// Its verdicts are provisional: `ci-gate merge` decides over all shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::shard::ShardInfo>,
    /// The peers' runtime, when the config lists peers and they ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peers: Option<crate::peers::PeersInfo>,
    /// Parity on random shapes the kernel could not predict (drawn from the run's secret).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<ProbeResult>,
    /// Where the run's time went (measuring runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<RunTiming>,
    /// How energy was measured in this run (the counter's update interval and read time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<crate::energy::EnergyInfo>,
    /// What the compiler gave each kernel the run launched, base and candidate (issue 23).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_resources: Vec<crate::resources::KernelResources>,
}

/// Wall-clock seconds of a measuring run, by phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunTiming {
    /// Opening the GPU, compiling and loading both kernel sets, the clocks' spin-up.
    pub setup_s: f64,
    /// Parity of the candidate (and base) on the random shapes.
    pub probes_s: f64,
    /// Parity of both sides on the configured shapes.
    pub parity_s: f64,
    /// Measuring the kernels (both stages, every check of the timed launches included).
    pub measure_s: f64,
    /// Measuring the config's peers (PyTorch), interleaved with the kernels' rounds.
    pub peers_s: f64,
    /// Tracing drifts with the baseline commit's kernels.
    pub drift_s: f64,
    /// The whole pipeline, from opening the GPU to the verdict.
    pub total_s: f64,
    /// Of the measuring (both sides, the timed checks included): making the reference
    /// outputs, preparing rounds (buffers, warm-up, graphs), taking the samples (their idle
    /// time included) and finishing rounds (reading the checks back, hashing the inputs).
    #[serde(default)]
    pub references_s: f64,
    #[serde(default)]
    pub preparing_s: f64,
    #[serde(default)]
    pub sampling_s: f64,
    #[serde(default)]
    pub finishing_s: f64,
    /// Finer than the phases (`backend::spans`): opening the device, the spin-up, the parts
    /// of a parity check, of preparing and of finishing a round; seconds by span name.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub detail_s: std::collections::BTreeMap<String, f64>,
    /// The energy windows after everything timed (src/energy.rs).
    #[serde(default)]
    pub energy_s: f64,
    /// Waiting for this GPU's lock before anything else (another ci-gate run held it:
    /// `gpu::lock`); not part of `total_s`.
    #[serde(default)]
    pub lock_wait_s: f64,
    /// Of `peers_s`: waiting for the PyTorch worker to be ready (its import and warm-up, which
    /// run beside the setup; what the setup did not cover).
    #[serde(default)]
    pub peers_start_s: f64,
    /// Compute processes other than this run's own (it and its PyTorch worker) that NVML saw
    /// on the GPU during the run (at its start, between shapes, at its end): their work slowed
    /// the timings by an unknown amount, so the comparison with the stored baseline is not
    /// judged (`run::assemble`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_processes: Vec<GpuProcess>,
    /// Why the GPU's processes could not be listed, where they could not (no NVML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes_unknown: Option<String>,
}

/// A compute process on the GPU, as NVML listed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuProcess {
    /// Its pid as the driver knows it (in a container, possibly the host's).
    pub pid: u32,
    /// Its name (`/proc/PID/comm`), where this process can see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// GPU memory it held, MiB, where NVML says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_mib: Option<u64>,
}

impl GpuProcess {
    /// "python3 (pid 1234, 2048 MiB)"; without a name "pid 1234 (2048 MiB)".
    pub(crate) fn describe(&self) -> String {
        let mem = self.used_mib.map(|m| format!("{m} MiB"));
        match (&self.name, mem) {
            (Some(n), Some(m)) => format!("{} (pid {}, {m})", text::terminal_text(n), self.pid),
            (Some(n), None) => format!("{} (pid {})", text::terminal_text(n), self.pid),
            (None, Some(m)) => format!("pid {} ({m})", self.pid),
            (None, None) => format!("pid {}", self.pid),
        }
    }
}

impl RunTiming {
    /// Every figure a finite, non-negative number of seconds.
    pub(crate) fn is_valid(&self) -> bool {
        [
            self.setup_s,
            self.probes_s,
            self.parity_s,
            self.measure_s,
            self.peers_s,
            self.drift_s,
            self.total_s,
            self.references_s,
            self.preparing_s,
            self.sampling_s,
            self.finishing_s,
            self.energy_s,
            self.lock_wait_s,
            self.peers_start_s,
        ]
        .iter()
        .chain(self.detail_s.values())
        .all(|v| v.is_finite() && *v >= 0.0)
            && self.detail_s.len() <= 64
            && self.detail_s.keys().all(|k| valid_span_name(k))
    }
}

/// Whether `name` may be a span's name in `timing.detail_s`: 1 to 40 of `a-z 0-9 _ .` (a
/// results file from a pull request's run is read as hostile, and `ci-gate eval` echoes
/// these names).
pub(crate) fn valid_span_name(name: &str) -> bool {
    (1..=40).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.')
}

/// Parity of both sides on one random shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub name: String,
    pub params: ShapeParams,
    /// The seed its inputs were drawn from.
    pub seed: u64,
    /// The candidate's parity (absent when it could not run: see `error`).
    pub parity: Option<Parity>,
    #[serde(default)]
    pub base_parity: Option<Parity>,
    /// Why the candidate could not be checked on it (a CUDA error, an integrity failure).
    #[serde(default)]
    pub error: Option<String>,
}

/// The base side of an A/B run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaseInfo {
    /// A git commit, or the directory the base kernels came from.
    pub source: String,
    pub commit: Option<String>,
    pub kernel_source_hash: String,
    /// False when the timed kernel was byte-identical to the candidate's, so no A/B ran.
    pub measured: bool,
}

impl ResultsFile {
    /// A results file for a run that could not reach a verdict (what `ci` writes on exit
    /// 2): `error` says why; the config, when it was read, names the run.
    pub(crate) fn failed(config: Option<&crate::config::Config>, error: String) -> ResultsFile {
        ResultsFile {
            schema_version: SCHEMA_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: current_git_commit(),
            created_at: Utc::now(),
            environment: None,
            config: config.map(ConfigInfo::of).unwrap_or(ConfigInfo {
                name: "unknown".into(),
                path: String::new(),
                hash: String::new(),
                defines: Vec::new(),
            }),
            method: Some(Method::current()),
            kernel_source_hash: None,
            gate: config.map(|c| c.gate.clone()).unwrap_or_default(),
            baseline: None,
            shapes: Vec::new(),
            passed: false,
            warnings: Vec::new(),
            notes: Vec::new(),
            error: Some(error),
            base: None,
            fail_on_drift: false,
            profiling: None,
            shard: None,
            peers: None,
            probes: Vec::new(),
            timing: None,
            energy: None,
            kernel_resources: Vec::new(),
        }
    }

    /// The drift policy the run was judged under.
    pub(crate) fn policy(&self) -> Policy {
        Policy {
            fail_on_drift: self.fail_on_drift,
        }
    }

    /// Whether the run this file holds passes ([`passed`] of its content, never its own
    /// `passed` field: fail closed).
    pub fn passed(&self) -> bool {
        passed(self.error.as_deref(), &self.shapes, self.policy())
    }

    /// Reads a results file ([`ResultsFile::parse`]).
    pub fn load(path: &Path) -> Result<ResultsFile, FileError> {
        let bytes = files::read_bounded(path, files::MAX_JSON_BYTES)?;
        let text = String::from_utf8(bytes).map_err(|_| FileError::Invalid {
            path: path.to_owned(),
            message: "not UTF-8 text".into(),
        })?;
        ResultsFile::parse(&text, path)
    }

    /// Parses and checks a results file's text (`files::parse_versioned_json`); a file of
    /// another kind that ci-gate writes (a baseline, a selftest report, a history) is named
    /// for what it is, with the command that takes it, rather than by the field it lacks.
    pub fn parse(text: &str, path: &Path) -> Result<ResultsFile, FileError> {
        files::parse_versioned_json(text, path, SCHEMA_VERSION).map_err(|e| match e {
            FileError::Invalid { .. } | FileError::Rejected(_) => match files::other_kind(text) {
                Some(kind) => FileError::OtherKind {
                    path: path.to_owned(),
                    kind,
                },
                None => e,
            },
            e => e,
        })
    }

    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        files::write_json(path, self)
    }
}

/// The commit of the working tree: $GITHUB_SHA in Actions, else `git rev-parse HEAD`. Asked
/// once per process (a run does not change the commit it runs at; simulated runs by the
/// thousand would otherwise start git each time).
pub(crate) fn current_git_commit() -> Option<String> {
    static COMMIT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    COMMIT.get_or_init(git_commit_now).clone()
}

fn git_commit_now() -> Option<String> {
    if let Ok(sha) = std::env::var("GITHUB_SHA")
        && !sha.trim().is_empty()
    {
        return Some(sha.trim().to_owned());
    }
    let mut git = std::process::Command::new("git");
    let out = crate::child_env::restrict(&mut git, crate::child_env::Child::Git)
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

// ---------------------------------------------------------------------------------------
// Checks of a results file read from disk (see `validate`)

impl ConfigInfo {
    /// Checks a config's identity as a file records it.
    pub(crate) fn check(&self, c: &Checker) -> Check {
        validate::config_name(&self.name).map_err(|m| c.fail("config.name", m))?;
        c.label("config.path", &self.path, MAX_LABEL_LEN, true)?;
        c.hash("config.hash", &self.hash, true)?;
        c.count("config.defines", self.defines.len(), MAX_DEFINES, "defines")?;
        for (i, d) in self.defines.iter().enumerate() {
            if !is_define(d) {
                return Err(c.fail(
                    &format!("config.defines[{i}]"),
                    format!("{} is not NAME or NAME=VALUE", quote(d)),
                ));
            }
        }
        Ok(())
    }
}

/// Most compile defines a file may record (a config allows 16).
const MAX_DEFINES: usize = 64;

/// A compile define as a file may record it: `NAME` or `NAME=VALUE` of at most 64 letters,
/// digits and `_` (the name) and `_ . + -` (the value), as `compile.defines` allows.
fn is_define(d: &str) -> bool {
    let (name, value) = d.split_once('=').unwrap_or((d, ""));
    let ident = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && !s.starts_with(|c: char| c.is_ascii_digit())
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    ident(name)
        && value.len() <= 64
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+' | b'-'))
}

/// Checks a method a file records, under `key`: a well-formed fingerprint of its version
/// (`m<version>-<12 hex>`), so that it can be shown and compared.
pub(crate) fn check_method(c: &Checker, key: &str, m: &Method) -> Check {
    let fp = &m.fingerprint;
    if !Method::is_valid_fingerprint(fp) || !fp.starts_with(&format!("m{}-", m.version)) {
        return Err(c.fail(
            &format!("{key}.fingerprint"),
            format!(
                "{} is not the fingerprint of a method of version {} (m{}-<12 hex digits>)",
                quote(fp),
                m.version,
                m.version
            ),
        ));
    }
    Ok(())
}

impl Environment {
    /// Checks the machine a file records, under `key`.
    pub(crate) fn check(&self, c: &Checker, key: &str) -> Check {
        c.label(
            &format!("{key}.gpu_name"),
            &self.gpu_name,
            MAX_LABEL_LEN,
            false,
        )?;
        let slug_key = format!("{key}.gpu_slug");
        c.name(&slug_key, &self.gpu_slug)?;
        let expected = gpu_slug(&self.gpu_name);
        if self.gpu_slug != expected {
            return Err(c.fail(
                &slug_key,
                format!(
                    "the file records GPU {}, whose slug is {}, not {}",
                    quote(&self.gpu_name),
                    quote(&expected),
                    quote(&self.gpu_slug)
                ),
            ));
        }
        if let Some(u) = &self.gpu_uuid {
            c.label(&format!("{key}.gpu_uuid"), u, MAX_SHORT_LABEL_LEN, false)?;
        }
        let cc = &self.compute_capability;
        if cc.is_empty() || cc.len() > 16 || !cc.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(c.fail(
                &format!("{key}.compute_capability"),
                format!("{} is not a compute capability such as 9.0", quote(cc)),
            ));
        }
        for (k, v) in [
            ("driver_version", &self.driver_version),
            ("cuda_driver_version", &self.cuda_driver_version),
            ("nvrtc_version", &self.nvrtc_version),
        ] {
            if let Some(v) = v {
                c.label(&format!("{key}.{k}"), v, MAX_SHORT_LABEL_LEN, false)?;
            }
        }
        for (k, state) in [
            ("state_before", &self.state_before),
            ("state_after", &self.state_after),
        ] {
            if let Some(s) = state {
                s.check(c, &format!("{key}.{k}"))?;
            }
        }
        Ok(())
    }
}

impl GpuState {
    fn check(&self, c: &Checker, key: &str) -> Check {
        let k = format!("{key}.throttle_reasons");
        c.count(
            &k,
            self.throttle_reasons.len(),
            MAX_THROTTLE_REASONS,
            "throttle reasons",
        )?;
        for (i, r) in self.throttle_reasons.iter().enumerate() {
            c.label(&format!("{k}[{i}]"), r, MAX_SHORT_LABEL_LEN, false)?;
        }
        if let Some(p) = self.power_w {
            c.finite(&format!("{key}.power_w"), p)?;
        }
        Ok(())
    }
}

impl BaselineRef {
    fn check(&self, c: &Checker) -> Check {
        c.label("baseline.path", &self.path, MAX_LABEL_LEN, false)?;
        if let Some(commit) = &self.commit {
            c.commit("baseline.commit", commit)?;
        }
        if let Some(m) = &self.method {
            check_method(c, "baseline.method", m)?;
        }
        Ok(())
    }
}

/// Peers' p50s kept with a baseline: at most one per peer, positive and finite.
pub(crate) fn check_stored_peers(
    c: &Checker,
    key: &str,
    peers: &[crate::peers::StoredPeer],
) -> Check {
    if peers.len() > crate::peers::Peer::ALL.len() {
        return Err(c.fail(key, "more peers than there are"));
    }
    for (j, p) in peers.iter().enumerate() {
        c.time(&format!("{key}[{j}].p50_us"), p.p50_us)?;
    }
    Ok(())
}

/// One side's energy windows (src/energy.rs): bounded in number, every figure a finite,
/// non-negative number. Reports recompute the summaries from these.
pub(crate) fn check_side_energy(c: &Checker, key: &str, e: &crate::energy::SideEnergy) -> Check {
    c.count(
        &format!("{key}.rounds"),
        e.rounds.len(),
        MAX_ROUNDS,
        "energy windows",
    )?;
    // The most each figure can be: 100 kW on one board, a time of `validate::MAX_TIME_US`,
    // the energy of both for that long. A figure is 0 or at least 10^-6 of its unit, like a
    // time: a window of 1e-300 mJ made its counter's resolution a 300-digit percentage.
    const MAX_POWER_W: f64 = 1e5;
    const MAX_MS: f64 = crate::validate::MAX_TIME_US / 1e3;
    const MAX_MJ: f64 = MAX_POWER_W * MAX_MS;
    for (j, r) in e.rounds.iter().enumerate() {
        let figures = [
            ("power_w", r.power_w, MAX_POWER_W),
            ("call_ms", r.call_ms, MAX_MS),
            ("span_ms", r.span_ms, MAX_MS),
            ("span_mj", r.span_mj, MAX_MJ),
            ("read_ms", r.read_ms, MAX_MS),
            ("replay_fraction", r.replay_fraction, 1.0),
        ]
        .into_iter()
        .chain(r.timed_call_ms.map(|t| ("timed_call_ms", t, MAX_MS)));
        for (name, v, max) in figures {
            if !(v == 0.0 || (crate::validate::MIN_TIME_US..=max).contains(&v)) {
                return Err(c.fail(
                    &format!("{key}.rounds[{j}].{name}"),
                    format!(
                        "{} is not 0 or a number from {:e} to {max:e}",
                        crate::validate::number(v),
                        crate::validate::MIN_TIME_US
                    ),
                ));
            }
        }
    }
    if let Some(w) = &e.withheld {
        c.text(&format!("{key}.withheld"), w, MAX_ERROR_LEN)?;
    }
    Ok(())
}

/// A shape's A/B comparison is what [`Comparison::paired`] gives of the shape's own rounds
/// (`base_samples_us`, `samples_us`) under the file's gate and planned design, as
/// [`crate::evaluate::evaluate`] computed it: its estimate, interval, bounds and p-values are
/// never figures of their own. Without this a file could show, and decide on, a Δ its rounds
/// do not give (an A/A's comparison and its `pass` pasted over rounds 10% slower rendered
/// "PASS" in the comment before the forty-seventh session). The stored comparison is not
/// recomputed: the baseline's rounds are not in the file. Cost: O(N log N) for N values.
fn check_ab(path: &Path, i: usize, s: &ShapeResult, gate: &GateSettings) -> Check {
    let Some(ab) = &s.ab else {
        return Ok(());
    };
    let c = Checker::at(path, Some(s.params.name()));
    let key = format!("shapes[{i}].ab");
    let want = crate::stats::Rounds::new(s.samples_us.clone())
        .and_then(|cand| s.paired_comparison(&cand, gate))
        .map_err(|e| {
            c.fail(
                &key,
                format!(
                    "the shape's A/B rounds give no comparison ({e}): an A/B is computed from them"
                ),
            )
        })?;
    if ab.reference != want.reference || ab.method != want.method {
        return Err(c.fail(
            &format!("{key}.method"),
            "not the paired rounds' comparison that an A/B is",
        ));
    }
    if ab.n_base != want.n_base || ab.n_cand != want.n_cand || ab.stage != want.stage {
        return Err(c.fail(
            &key,
            format!(
                "{} and {} values at stage {} where the rounds give {} and {} at stage {}",
                ab.n_base, ab.n_cand, ab.stage, want.n_base, want.n_cand, want.stage
            ),
        ));
    }
    same_figures(
        &c,
        &key,
        &[
            ("p50_base", ab.p50_base, want.p50_base),
            ("p50_cand", ab.p50_cand, want.p50_cand),
            ("ratio", ab.ratio, want.ratio),
            ("ci_low", ab.ci_low, want.ci_low),
            ("ci_high", ab.ci_high, want.ci_high),
            ("lower_bound", ab.lower_bound, want.lower_bound),
            ("upper_bound", ab.upper_bound, want.upper_bound),
            ("margin_p", ab.margin_p, want.margin_p),
            ("margin_p_faster", ab.margin_p_faster, want.margin_p_faster),
        ],
        |_| "what the shape's A/B rounds give".into(),
    )
}

/// Each (name, figure as written, figure as computed) agrees ([`same_figure`]); the first that
/// does not is refused at `key.name`, "<written> is not <what(name)> (<computed>)".
fn same_figures(
    c: &Checker,
    key: &str,
    figures: &[(&str, f64, f64)],
    what: impl Fn(&str) -> String,
) -> Check {
    for &(name, got, computed) in figures {
        if !same_figure(got, computed) {
            return Err(c.fail(
                &format!("{key}.{name}"),
                format!(
                    "{} is not {} ({})",
                    crate::validate::number(got),
                    what(name),
                    crate::validate::number(computed)
                ),
            ));
        }
    }
    Ok(())
}

/// A shape's verdict and deciding reference are what the one rule ([`crate::verdict::decide`])
/// gives of the shape's own record under the file's gate: its error, parity and integrity,
/// and the comparisons it holds. A verdict is computed, never a figure of its own: before
/// 2026-12-07 a `regression` edited to `pass` read as a pass in the comment. (Of a run that
/// reached no verdict, `error`, the shapes' verdicts are not checked.)
fn check_verdict(path: &Path, i: usize, s: &ShapeResult, gate: &GateSettings) -> Check {
    let d = crate::verdict::decide(
        gate,
        &crate::verdict::Evidence {
            measured: s.error.is_none(),
            parity_passed: s.parity_passed(),
            ab: s.ab.as_ref(),
            stored: s.stored.as_ref(),
            stored_other_method: s.stored_other_method,
        },
    );
    if d.verdict == s.verdict && d.decided_by == s.decided_by {
        return Ok(());
    }
    let by = |r: Option<Reference>| match r {
        Some(Reference::Ab) => "A/B",
        Some(Reference::Stored) => "the stored baseline",
        None => "no reference",
    };
    Err(Checker::at(path, Some(s.params.name())).fail(
        &format!("shapes[{i}].verdict"),
        format!(
            "`{}` decided by {} is not what the shape's own record gives under the file's gate (`{}` decided by {}): a verdict is computed from the comparisons, parity and errors it records",
            s.verdict,
            by(s.decided_by),
            d.verdict,
            by(d.decided_by)
        ),
    ))
}

/// Two computations of one figure agree: equal to within a relative 1e-9 (a file written by
/// another build of the same code may round its last bits otherwise).
fn same_figure(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// A summary is what its samples give ([`crate::stats::Sample::summary`] of all the rounds'
/// values), never figures of its own: the comment shows its p50 and `history` records it, so
/// a file whose summary said 5 µs over samples of 10 showed and kept 5 before 2026-12-07.
/// Cost: a sort of the shape's values.
pub(crate) fn summary_of(c: &Checker, key: &str, sum: &Summary, rounds: &[Vec<f64>]) -> Check {
    let values: Vec<f64> = rounds.iter().flatten().copied().collect();
    let Ok(sample) = crate::stats::Sample::new(values) else {
        return Err(c.fail(
            key,
            format!(
                "a summary of {} values: a summary needs at least 2 in its samples",
                rounds.iter().map(Vec::len).sum::<usize>()
            ),
        ));
    };
    let want = sample.summary();
    if sum.n != want.n {
        return Err(c.fail(
            &format!("{key}.n"),
            format!("{} where the samples hold {}", sum.n, want.n),
        ));
    }
    same_figures(
        c,
        key,
        &[
            ("p50", sum.p50, want.p50),
            ("p90", sum.p90, want.p90),
            ("mean", sum.mean, want.mean),
            ("min", sum.min, want.min),
            ("max", sum.max, want.max),
            ("stdev", sum.stdev, want.stdev),
        ],
        |name| format!("the {name} of the shape's samples"),
    )
}

/// A TFLOP/s figure is the shape's FLOPs over its p50 ([`ShapeParams::tflops`]), the one
/// formula every writer uses, never a figure of its own.
pub(crate) fn tflops_of(c: &Checker, key: &str, t: f64, params: &ShapeParams, p50: f64) -> Check {
    let of_p50 = params.tflops(p50);
    if same_figure(t, of_p50) {
        return Ok(());
    }
    Err(c.fail(
        key,
        format!(
            "{} is not the shape's FLOPs over its p50 ({})",
            crate::validate::number(t),
            crate::validate::number(of_p50)
        ),
    ))
}

/// The shape's parity records are figures a check gives (its errors 0 or more), and its
/// verdict agrees with them: a candidate whose own record says it failed (its parity above
/// the recorded tolerance, NaN/Inf or unwritten elements, an integrity check) reads
/// `parity-fail` or `error`, never a verdict that passes or a time that judges. Before
/// 2026-12-07 a file whose verdict said `pass` over a failed parity record rendered as a
/// passing comment with "FAIL" in its parity column.
fn check_own_failure(c: &Checker, key: &str, s: &ShapeResult) -> Check {
    for (field, p) in [("parity", &s.parity), ("base_parity", &s.base_parity)] {
        let Some(p) = p else { continue };
        for (name, v) in [
            ("max_abs", p.max_abs),
            ("rel_l2", p.rel_l2),
            ("centered", p.centered.unwrap_or(0.0)),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(c.fail(
                    &format!("{key}.{field}.{name}"),
                    format!(
                        "{} is no error a parity check gives (0 or more)",
                        crate::validate::number(v)
                    ),
                ));
            }
        }
    }
    let failed = if s.integrity.is_some() {
        Some("integrity check (`integrity`)")
    } else if s.parity.as_ref().is_some_and(|p| !p.passed()) {
        Some(
            "parity check (`parity`: an error above its tolerance, or NaN/Inf or unwritten elements)",
        )
    } else {
        None
    };
    match failed {
        Some(what) if !matches!(s.verdict, Verdict::ParityFail | Verdict::Error) => {
            Err(c.fail(
                &format!("{key}.verdict"),
                format!(
                    "`{}` contradicts the shape's own failed {what}: a candidate that failed it reads `parity-fail` or `error`",
                    s.verdict
                ),
            ))
        }
        _ => Ok(()),
    }
}

fn check_shape_result(path: &Path, i: usize, s: &ShapeResult) -> Check {
    let c = Checker::at(path, Some(s.params.name()));
    let key = format!("shapes[{i}]");
    c.shape_name(&format!("{key}.name"), &s.name, &s.params.name())?;
    if let Some(e) = &s.error {
        c.text(&format!("{key}.error"), e, MAX_ERROR_LEN)?;
    }
    if let Some(e) = &s.integrity {
        c.text(&format!("{key}.integrity"), e, MAX_ERROR_LEN)?;
    }
    c.count(
        &format!("{key}.remeasured"),
        s.remeasured.len(),
        MAX_ROUNDS,
        "re-measured pairs",
    )?;
    if s.clock_events.len() > 2 || s.clock_events.iter().any(|e| e.len() > MAX_ROUNDS) {
        return Err(c.fail(
            &format!("{key}.clock_events"),
            "two sides of at most the rounds' count are expected",
        ));
    }
    c.samples(&format!("{key}.samples_us"), &s.samples_us)?;
    check_own_failure(&c, &key, s)?;
    for (field, l) in [
        ("launch", &s.launch),
        ("base_launch", &s.base_launch),
        ("stored_launch", &s.stored_launch),
    ] {
        if let Some(l) = l {
            crate::launch::check_launch(&c, &format!("{key}.{field}"), l)?;
        }
    }
    check_stored_peers(&c, &format!("{key}.stored_peers"), &s.stored_peers)?;
    if let Some(e) = &s.energy {
        check_side_energy(&c, &format!("{key}.energy.candidate"), &e.candidate)?;
        if let Some(b) = &e.base {
            check_side_energy(&c, &format!("{key}.energy.base"), b)?;
        }
    }
    if let Some(e) = &s.stored_energy {
        check_side_energy(&c, &format!("{key}.stored_energy"), e)?;
    }
    check_peer_results(&c, &key, &s.peers)?;
    if let Some(p) = &s.profile {
        p.check()
            .map_err(|m| c.fail(&format!("{key}.profile"), m))?;
    }
    check_base_rounds(&c, &key, s)?;
    if let Some(d) = &s.drift {
        c.label(
            &format!("{key}.drift.commit"),
            &d.commit,
            MAX_LABEL_LEN,
            false,
        )?;
        c.samples(&format!("{key}.drift.samples_us"), &d.samples_us)?;
        c.samples(&format!("{key}.drift.cand_samples_us"), &d.cand_samples_us)?;
    }
    if let Some(sum) = &s.summary {
        c.summary(&format!("{key}.summary"), sum)?;
        summary_of(&c, &format!("{key}.summary"), sum, &s.samples_us)?;
    }
    if let Some(sum) = &s.base_summary {
        c.summary(&format!("{key}.base_summary"), sum)?;
        summary_of(&c, &format!("{key}.base_summary"), sum, &s.base_samples_us)?;
    }
    if let Some(t) = s.tflops {
        c.finite(&format!("{key}.tflops"), t)?;
        if let Some(sum) = &s.summary {
            tflops_of(&c, &format!("{key}.tflops"), t, &s.params, sum.p50)?;
        }
    }
    if let Some(m) = &s.measurement {
        c.count(
            &format!("{key}.measurement.rounds"),
            m.rounds as usize,
            MAX_ROUNDS,
            "rounds",
        )?;
        c.finite(&format!("{key}.measurement.wall_s"), m.wall_s)?;
        if let Some(u) = &m.unwitnessed {
            u.check(&c, &format!("{key}.measurement.unwitnessed"))?;
        }
    }
    Ok(())
}

impl Unwitnessed {
    /// Every time it records is a finite number (a results file may be hostile: a NaN or an
    /// infinity would pass every comparison the witness makes).
    fn check(&self, c: &Checker, key: &str) -> Check {
        c.finite(&format!("{key}.candidate_us"), self.candidate_us)?;
        c.finite(&format!("{key}.sample_us"), self.sample_us)?;
        c.finite(&format!("{key}.limit_us"), self.limit_us)?;
        for (name, v) in [
            ("base_us", self.base_us),
            ("control_us", self.control_us),
            (
                "candidate_through_checks_us",
                self.candidate_through_checks_us,
            ),
            ("base_through_checks_us", self.base_through_checks_us),
            ("control_through_checks_us", self.control_through_checks_us),
            ("candidate_through_tail_us", self.candidate_through_tail_us),
            ("base_through_tail_us", self.base_through_tail_us),
            ("through_tail_shift_us", self.through_tail_shift_us),
            ("shift_us", self.shift_us),
            ("through_checks_shift_us", self.through_checks_shift_us),
            ("through_checks_limit_us", self.through_checks_limit_us),
        ] {
            if let Some(v) = v {
                c.finite(&format!("{key}.{name}"), v)?;
            }
        }
        Ok(())
    }
}

/// A shape's peer results: no more peers than there are, each one's samples, p50, error text
/// and backend valid.
fn check_peer_results(c: &Checker, key: &str, peers: &[crate::peers::PeerResult]) -> Check {
    if peers.len() > crate::peers::Peer::ALL.len() {
        return Err(c.fail(&format!("{key}.peers"), "more peers than there are"));
    }
    for (j, p) in peers.iter().enumerate() {
        let pk = format!("{key}.peers[{j}]");
        if !p.samples_us.is_empty() {
            c.samples(&format!("{pk}.samples_us"), &p.samples_us)?;
        }
        if let Some(v) = p.p50_us {
            c.time(&format!("{pk}.p50_us"), v)?;
        }
        peer_p50_of(c, &format!("{pk}.p50_us"), p)?;
        if let Some(e) = &p.error {
            c.text(&format!("{pk}.error"), e, MAX_WARNING_LEN)?;
        }
        if let Some(b) = &p.backend
            && !crate::peers::BACKENDS.contains(&b.as_str())
        {
            return Err(c.fail(
                &format!("{pk}.backend"),
                "must be one of cudnn, flash, efficient, math",
            ));
        }
    }
    Ok(())
}

/// A peer's p50 is the median of its samples, as the run computes it
/// ([`crate::peers::PeerResult::p50_of_samples`]: none below 2 samples), never a figure of its
/// own: the report's "×" columns divide the kernel's p50 by it, so a file whose cuDNN p50
/// said 10 times its samples showed the kernel at a tenth of cuDNN's time (before the
/// forty-seventh session). Cost: a sort of the peer's values.
fn peer_p50_of(c: &Checker, key: &str, p: &crate::peers::PeerResult) -> Check {
    let n: usize = p.samples_us.iter().map(Vec::len).sum();
    match (p.p50_us, p.p50_of_samples()) {
        (Some(v), Some(m)) if !same_figure(v, m) => Err(c.fail(
            key,
            format!(
                "{} is not the median of the peer's samples ({})",
                crate::validate::number(v),
                crate::validate::number(m)
            ),
        )),
        (Some(_), None) => Err(c.fail(
            key,
            format!("a p50 over {n} samples: a peer's p50 is the median of at least 2"),
        )),
        (None, Some(_)) => Err(c.fail(
            key,
            format!("no p50 over {n} samples: a peer's p50 is the median of its samples"),
        )),
        _ => Ok(()),
    }
}

/// A shape's A/B rounds: the base's rounds valid and one for each candidate round (they come
/// in pairs), and one order per pair where the orders are recorded.
fn check_base_rounds(c: &Checker, key: &str, s: &ShapeResult) -> Check {
    if !s.base_samples_us.is_empty() {
        let bk = format!("{key}.base_samples_us");
        c.samples(&bk, &s.base_samples_us)?;
        if s.base_samples_us.len() != s.samples_us.len() {
            return Err(c.fail(
                &bk,
                format!(
                    "{} base rounds for {} candidate rounds: A/B rounds come in pairs",
                    s.base_samples_us.len(),
                    s.samples_us.len()
                ),
            ));
        }
    }
    if !s.pair_order.is_empty() && s.pair_order.len() != s.base_samples_us.len() {
        return Err(c.fail(
            &format!("{key}.pair_order"),
            "one order per A/B pair is expected",
        ));
    }
    Ok(())
}

/// The timing of a results file: finite, non-negative figures; the other processes named.
fn check_timing(c: &Checker, t: &RunTiming) -> Check {
    if !t.is_valid() {
        return Err(c.fail(
            "timing",
            "every figure must be a finite, non-negative time, and detail_s at most 64 spans named with a-z, 0-9, _ and .",
        ));
    }
    c.count(
        "timing.other_processes",
        t.other_processes.len(),
        MAX_PROCESSES,
        "processes",
    )?;
    for (i, p) in t.other_processes.iter().enumerate() {
        if let Some(n) = &p.name {
            c.label(
                &format!("timing.other_processes[{i}].name"),
                n,
                MAX_SHORT_LABEL_LEN,
                false,
            )?;
        }
    }
    if let Some(why) = &t.processes_unknown {
        c.text("timing.processes_unknown", why, MAX_WARNING_LEN)?;
    }
    Ok(())
}

/// The peers of a results file: their runtime, method and launch counts.
fn check_peers(c: &Checker, p: &crate::peers::PeersInfo) -> Check {
    if let Some(r) = &p.runtime {
        c.label("peers.runtime", r, MAX_SHORT_LABEL_LEN, false)?;
    }
    if let Some(m) = &p.method {
        c.text("peers.method.note", &m.note, MAX_WARNING_LEN)?;
        for (k, v) in [("sample_ms", m.sample_ms), ("duty_cycle", m.duty_cycle)] {
            c.finite(&format!("peers.method.{k}"), v)?;
        }
    }
    c.count(
        "peers.launches",
        p.launches.len(),
        MAX_SHAPES * crate::peers::Peer::ALL.len(),
        "peer launch counts",
    )?;
    for (i, l) in p.launches.iter().enumerate() {
        c.name(&format!("peers.launches[{i}].shape"), &l.shape)?;
    }
    Ok(())
}

/// The shard of a results file: K/N with 1 ≤ K ≤ N ≤ the most shards, and the run's shapes.
fn check_shard(c: &Checker, sh: &crate::shard::ShardInfo) -> Check {
    if sh.count == 0 || sh.count > crate::shard::MAX_SHARDS || sh.index == 0 || sh.index > sh.count
    {
        return Err(c.fail(
            "shard",
            format!(
                "shard {}/{} is not K/N with 1 ≤ K ≤ N ≤ {}",
                sh.index,
                sh.count,
                crate::shard::MAX_SHARDS
            ),
        ));
    }
    c.count(
        "shard.run_shapes",
        sh.run_shapes.len(),
        MAX_SHAPES,
        "shapes",
    )?;
    for (i, n) in sh.run_shapes.iter().enumerate() {
        c.name(&format!("shard.run_shapes[{i}]"), n)?;
    }
    Ok(())
}

/// The profiling of a results file: its labels and a finite, non-negative time.
fn check_profiling(c: &Checker, p: &crate::profile::ProfilingInfo) -> Check {
    if let Some(v) = &p.ncu_version {
        c.label("profiling.ncu_version", v, MAX_SHORT_LABEL_LEN, true)?;
    }
    if let Some(d) = &p.dir {
        c.label("profiling.dir", d, MAX_LABEL_LEN, false)?;
    }
    if !(p.seconds.is_finite() && p.seconds >= 0.0 && p.budget_s.is_finite()) {
        return Err(c.fail("profiling.seconds", "must be a finite, non-negative time"));
    }
    Ok(())
}

impl Untrusted for ResultsFile {
    fn check(&self, path: &Path) -> Check {
        let c = Checker::at(path, None);
        c.label(
            "tool_version",
            &self.tool_version,
            MAX_SHORT_LABEL_LEN,
            false,
        )?;
        if let Some(commit) = &self.git_commit {
            c.commit("git_commit", commit)?;
        }
        self.config.check(&c)?;
        if let Some(m) = &self.method {
            check_method(&c, "method", m)?;
        }
        if let Some(h) = &self.kernel_source_hash {
            c.hash("kernel_source_hash", h, false)?;
        }
        if let Some(env) = &self.environment {
            env.check(&c, "environment")?;
        }
        if let Some(b) = &self.baseline {
            b.check(&c)?;
        }
        if let Some(b) = &self.base {
            c.label("base.source", &b.source, MAX_LABEL_LEN, false)?;
            if let Some(commit) = &b.commit {
                c.commit("base.commit", commit)?;
            }
            c.hash("base.kernel_source_hash", &b.kernel_source_hash, false)?;
        }
        c.count("notes", self.notes.len(), MAX_WARNINGS, "notes")?;
        for (i, n) in self.notes.iter().enumerate() {
            c.text(&format!("notes[{i}]"), n, MAX_WARNING_LEN)?;
        }
        c.count("shapes", self.shapes.len(), MAX_SHAPES, "shapes")?;
        let mut seen = HashSet::new();
        for (i, s) in self.shapes.iter().enumerate() {
            check_shape_result(path, i, s)?;
            Checker::at(path, Some(s.params.name())).unique(
                &mut seen,
                &format!("shapes[{i}]"),
                (s.params, s.measurement.as_ref().map(|m| m.cache)),
            )?;
        }
        if self.error.is_none() {
            for (i, s) in self.shapes.iter().enumerate() {
                check_ab(path, i, s, &self.gate)?;
                check_verdict(path, i, s, &self.gate)?;
            }
        }
        c.count("warnings", self.warnings.len(), MAX_WARNINGS, "warnings")?;
        for (i, w) in self.warnings.iter().enumerate() {
            c.text(&format!("warnings[{i}]"), w, MAX_WARNING_LEN)?;
        }
        if let Some(e) = &self.error {
            c.text("error", e, MAX_ERROR_LEN)?;
        }
        if let Some(t) = &self.timing {
            check_timing(&c, t)?;
        }
        c.count("probes", self.probes.len(), MAX_SHAPES, "random shapes")?;
        for (i, p) in self.probes.iter().enumerate() {
            let key = format!("probes[{i}]");
            c.shape_name(&format!("{key}.name"), &p.name, &p.params.name())?;
            if let Some(e) = &p.error {
                c.text(&format!("{key}.error"), e, MAX_ERROR_LEN)?;
            }
        }
        if let Some(p) = &self.peers {
            check_peers(&c, p)?;
        }
        if let Some(sh) = &self.shard {
            check_shard(&c, sh)?;
        }
        if let Some(p) = &self.profiling {
            check_profiling(&c, p)?;
        }
        crate::resources::check_resources(&c, "kernel_resources", &self.kernel_resources)
    }

    fn neutralise(&mut self) {
        for s in &mut self.shapes {
            if let Some(e) = &mut s.error {
                *e = text::clean_text(e);
            }
            if let Some(e) = &mut s.integrity {
                *e = text::clean_text(e);
            }
            for e in s.peers.iter_mut().filter_map(|p| p.error.as_mut()) {
                *e = text::clean_text(e);
            }
        }
        for w in self.warnings.iter_mut().chain(self.notes.iter_mut()) {
            *w = text::clean_text(w);
        }
        if let Some(e) = &mut self.error {
            *e = text::clean_text(e);
        }
        if let Some(w) = self
            .timing
            .as_mut()
            .and_then(|t| t.processes_unknown.as_mut())
        {
            *w = text::clean_text(w);
        }
        if let Some(m) = self.peers.as_mut().and_then(|p| p.method.as_mut()) {
            m.note = text::clean_text(&m.note);
        }
        for e in self.probes.iter_mut().filter_map(|p| p.error.as_mut()) {
            *e = text::clean_text(e);
        }
        crate::resources::neutralise_resources(&mut self.kernel_resources);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_detail_is_checked_as_hostile() {
        let mut t = RunTiming::default();
        t.detail_s.insert("parity.compare".into(), 0.25);
        assert!(t.is_valid());
        for bad in ["", "Parity", "a b", "x\u{1b}[2J", &"a".repeat(41)] {
            let mut u = RunTiming::default();
            u.detail_s.insert(bad.to_owned(), 0.1);
            assert!(!u.is_valid(), "{bad:?}");
        }
        t.detail_s.insert("setup.open".into(), f64::NAN);
        assert!(!t.is_valid());
        let mut many = RunTiming::default();
        for i in 0..65 {
            many.detail_s.insert(format!("s{i}"), 0.0);
        }
        assert!(!many.is_valid());
    }

    #[test]
    fn every_launch_of_a_shape_is_checked_as_hostile() {
        let params = ShapeParams {
            batch: 2,
            heads: 8,
            seq_len: 512,
            head_dim: 64,
            causal: false,
            dtype: crate::config::Dtype::Float16,
        };
        let path = Path::new("results.json");
        let mut s = ShapeResult::new(params);
        s.launch = Some(crate::launch::sample("attention_fwd_f16_d64", 4));
        s.base_launch = s.launch.clone();
        s.stored_launch = s.launch.clone();
        assert!(check_shape_result(path, 0, &s).is_ok());
        for field in ["launch", "base_launch", "stored_launch"] {
            let mut bad = s.clone();
            let l = match field {
                "launch" => &mut bad.launch,
                "base_launch" => &mut bad.base_launch,
                _ => &mut bad.stored_launch,
            };
            l.as_mut().unwrap().kernel = "../x".into();
            let e = check_shape_result(path, 0, &bad).unwrap_err().to_string();
            assert!(e.contains(&format!("shapes[0].{field}.kernel")), "{e}");
        }
    }

    #[test]
    fn unwitnessed_times_are_checked_as_hostile() {
        let params = ShapeParams::new(2, 8, 512, 64, false, crate::config::Dtype::Float16);
        let path = Path::new("results.json");
        let mut s = ShapeResult::new(params);
        s.measurement = Some(MeasurementInfo {
            cache: crate::config::CacheMode::Hot,
            launches_per_sample: 100,
            rounds: 8,
            extra_rounds: 0,
            working_set_bytes: 1 << 20,
            wall_s: 0.2,
            sm_clock_mhz: None,
            design: None,
            checked_launches: 8000,
            unwitnessed: Some(Unwitnessed {
                candidate_us: 57.0,
                base_us: Some(56.0),
                control_us: Some(55.0),
                candidate_through_checks_us: Some(357.0),
                base_through_checks_us: Some(357.0),
                control_through_checks_us: Some(356.0),
                candidate_through_tail_us: Some(360.0),
                base_through_tail_us: Some(360.0),
                through_tail_shift_us: Some(0.5),
                shift_us: Some(1.0),
                through_checks_shift_us: Some(0.5),
                units: 8,
                sample_us: 2000.0,
                limit_us: 10.0,
                through_checks_limit_us: Some(60.0),
                samples: 80,
            }),
        });
        assert!(check_shape_result(path, 0, &s).is_ok());
        for (key, value) in [
            ("candidate_us", f64::NAN),
            ("base_us", f64::INFINITY),
            ("control_us", f64::NAN),
            ("candidate_through_checks_us", f64::NAN),
            ("base_through_checks_us", f64::INFINITY),
            ("control_through_checks_us", f64::NAN),
            ("candidate_through_tail_us", f64::INFINITY),
            ("base_through_tail_us", f64::NAN),
            ("through_tail_shift_us", f64::NEG_INFINITY),
            ("shift_us", f64::NAN),
            ("through_checks_shift_us", f64::NEG_INFINITY),
            ("through_checks_limit_us", f64::NAN),
            ("sample_us", f64::INFINITY),
            ("limit_us", f64::NEG_INFINITY),
        ] {
            let mut bad = s.clone();
            let u = bad
                .measurement
                .as_mut()
                .unwrap()
                .unwitnessed
                .as_mut()
                .unwrap();
            match key {
                "candidate_us" => u.candidate_us = value,
                "base_us" => u.base_us = Some(value),
                "control_us" => u.control_us = Some(value),
                "candidate_through_checks_us" => u.candidate_through_checks_us = Some(value),
                "base_through_checks_us" => u.base_through_checks_us = Some(value),
                "control_through_checks_us" => u.control_through_checks_us = Some(value),
                "candidate_through_tail_us" => u.candidate_through_tail_us = Some(value),
                "base_through_tail_us" => u.base_through_tail_us = Some(value),
                "through_tail_shift_us" => u.through_tail_shift_us = Some(value),
                "shift_us" => u.shift_us = Some(value),
                "through_checks_shift_us" => u.through_checks_shift_us = Some(value),
                "through_checks_limit_us" => u.through_checks_limit_us = Some(value),
                "sample_us" => u.sample_us = value,
                _ => u.limit_us = value,
            }
            let e = check_shape_result(path, 0, &bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!("shapes[0].measurement.unwitnessed.{key}")),
                "{e}"
            );
        }
    }

    #[test]
    fn slugs() {
        assert_eq!(gpu_slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(gpu_slug("NVIDIA L4"), "nvidia-l4");
        assert_eq!(gpu_slug(" NVIDIA H100 80GB HBM3 "), "nvidia-h100-80gb-hbm3");
        assert_eq!(gpu_slug("../../etc"), "etc");
        assert_eq!(gpu_slug("///"), "unknown-gpu");
    }

    #[test]
    fn parity_passes_only_clean_and_within_tolerance() {
        let mut p = Parity {
            max_abs: 1e-3,
            rel_l2: 1e-4,
            centered: None,
            nan_or_inf: 0,
            unwritten: 0,
            tolerance: Tolerance {
                max_abs: 1e-2,
                rel_l2: 1e-3,
                centered: None,
            },
            seed: 1,
        };
        assert!(p.passed());
        p.unwritten = 1;
        assert!(!p.passed());
        p.unwritten = 0;
        p.nan_or_inf = 3;
        assert!(!p.passed());
        p.nan_or_inf = 0;
        p.rel_l2 = 2e-3;
        assert!(!p.passed());
    }
}
