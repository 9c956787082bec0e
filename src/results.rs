//! The results file (`--out`): everything one run measured and concluded.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::comparison::{Comparison, Reference};
use crate::config::{CacheMode, GateSettings, ShapeParams, Tolerance};
use crate::files::{self, FileError};
use crate::stats::Summary;
use crate::verdict::Verdict;

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
    pub fn throttle_reasons(&self) -> Vec<String> {
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
}

/// A planned two-stage design: `stage1` rounds (pairs, in A/B) first; shapes the first look
/// does not settle get more, up to `max` in all. Alpha is split between the looks in advance
/// (`stats::two_stage_p`), so looking twice costs no false alarms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageDesign {
    pub stage1: u32,
    pub max: u32,
}

impl StageDesign {
    /// Whether a second look was planned (and so alpha was split).
    pub fn two_stage(&self) -> bool {
        self.max > self.stage1
    }
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

/// What a drift was traced to, by measuring the stored baseline's own commit's kernels as a
/// third side in the same run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriftCause {
    /// The baseline commit's kernels are as slow as the candidate now: the runner moved
    /// (driver, card, cooling); re-record the baseline.
    Runner,
    /// The candidate is slower than the baseline commit's kernels measured alongside it: the
    /// default branch crept since the baseline was recorded.
    Code,
    /// Neither reading is clear.
    Unclear,
}

impl std::fmt::Display for DriftCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DriftCause::Runner => "runner moved",
            DriftCause::Code => "code crept",
            DriftCause::Unclear => "cause unclear",
        })
    }
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
            drift: None,
            measurement: None,
            profile: None,
            peers: Vec::new(),
            stored_peers: Vec::new(),
            integrity: None,
            remeasured: Vec::new(),
            clock_events: Vec::new(),
        }
    }

    /// Whether the candidate kept parity: its parity check passed and no integrity check
    /// failed. `None` when parity was not checked and nothing failed (offline compare).
    pub fn parity_passed(&self) -> Option<bool> {
        if self.integrity.is_some() {
            return Some(false);
        }
        self.parity.as_ref().map(|p| p.passed())
    }

    /// The comparison that decides: A/B when it ran, else the stored baseline.
    pub fn primary(&self) -> Option<&Comparison> {
        self.ab.as_ref().or(self.stored.as_ref())
    }
}

/// Config identity recorded in results and baselines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigInfo {
    pub name: String,
    pub path: String,
    pub hash: String,
}

/// The baseline a run was compared with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineRef {
    pub path: String,
    pub commit: Option<String>,
    pub recorded_at: DateTime<Utc>,
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
    pub kernel_source_hash: Option<String>,
    pub gate: GateSettings,
    pub baseline: Option<BaselineRef>,
    pub shapes: Vec<ShapeResult>,
    /// True when no shape fails the gate and nothing prevented a verdict.
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
}

impl RunTiming {
    /// Every figure a finite, non-negative number of seconds.
    pub fn is_valid(&self) -> bool {
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
        ]
        .iter()
        .all(|v| v.is_finite() && *v >= 0.0)
    }
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
    pub fn load(path: &Path) -> Result<ResultsFile, FileError> {
        files::read_versioned_json(path, SCHEMA_VERSION)
    }

    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        files::write_json(path, self)
    }
}

/// The commit of the working tree: $GITHUB_SHA in Actions, else `git rev-parse HEAD`.
pub fn current_git_commit() -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
            nan_or_inf: 0,
            unwritten: 0,
            tolerance: Tolerance {
                max_abs: 1e-2,
                rel_l2: 1e-3,
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
