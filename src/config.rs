//! The YAML config: shapes, gate thresholds, parity tolerances and measurement settings.
//!
//! Every key is validated while it is parsed: each value that can be wrong (sizes, head_dim,
//! fractions) is checked as it is read ([`validate::checked`]), and each check that needs
//! several keys (a shape's size, min and max rounds) as its mapping is read, so serde_yaml
//! reports the offending key's path and line (`shapes[3].head_dim: ... at line 12 column
//! 15`), or the mapping's. Results files read the same types, so their values are held to
//! the same bounds.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::validate::{self, checked, checked_text};

pub use crate::stats::Magnitude;

/// A config that could not be loaded; the message names the file and, where known, the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {cause}")]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// The default config is not where the commands look for it.
    #[error(
        "no {DEFAULT_CONFIG} here or in any parent directory: run ci-gate inside your repository, or pass --config FILE (with --baselines DIR and --kernels DIR)"
    )]
    NoRepository,
}

/// The config the commands read by default, relative to the repository root.
pub(crate) const DEFAULT_CONFIG: &str = "configs/pr.yaml";

/// Loads the config at `path` and the shapes named in `shapes` (all when empty), naming the
/// file on errors; the default path missing is [`ConfigError::NoRepository`].
pub(crate) fn load_selected(
    path: &Path,
    shapes: &[String],
) -> Result<(Config, Vec<ShapeParams>), ConfigError> {
    let config = match Config::load(path) {
        Err(ConfigError::Read { cause, .. })
            if cause.kind() == std::io::ErrorKind::NotFound
                && path == Path::new(DEFAULT_CONFIG) =>
        {
            return Err(ConfigError::NoRepository);
        }
        other => other?,
    };
    let selected = config.select_shapes(shapes)?;
    Ok((config, selected))
}

/// Element type of the attention inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    #[serde(alias = "fp16", alias = "f16", alias = "half")]
    Float16,
    #[serde(alias = "bf16")]
    Bfloat16,
}

impl Dtype {
    /// Short name used in shape names and kernel names.
    pub(crate) fn short(self) -> &'static str {
        match self {
            Dtype::Float16 => "f16",
            Dtype::Bfloat16 => "bf16",
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dtype::Float16 => "float16",
            Dtype::Bfloat16 => "bfloat16",
        })
    }
}

/// The head dimensions the kernel supports.
pub(crate) const SUPPORTED_HEAD_DIMS: [u32; 2] = [64, 128];

/// A positive integer of at most `max`.
fn positive_at_most(v: i64, max: u32) -> Result<u32, String> {
    if v < 1 {
        return Err(format!("must be a positive integer, got {v}"));
    }
    match u32::try_from(v) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!("{v} is too large: at most {max}")),
    }
}

/// A positive number of at most `max`.
fn positive_f64_at_most(v: f64, max: f64) -> Result<f64, String> {
    if !(v.is_finite() && v > 0.0) {
        return Err(format!(
            "must be a positive number, got {}",
            validate::number(v)
        ));
    }
    if v > max {
        return Err(format!(
            "{} is too large: at most {max}",
            validate::number(v)
        ));
    }
    Ok(v)
}

/// A number strictly between 0 and 1.
fn fraction<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    checked(d, |v: f64| {
        if v.is_finite() && v > 0.0 && v < 1.0 {
            Ok(v)
        } else {
            Err(format!(
                "must be a number between 0 and 1 (exclusive), got {}",
                validate::number(v)
            ))
        }
    })
}

// The bounded settings, each read and checked by `#[serde(deserialize_with)]`.

fn batch<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    checked(d, |v: i64| positive_at_most(v, limits::MAX_BATCH))
}

fn heads<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    checked(d, |v: i64| positive_at_most(v, limits::MAX_HEADS))
}

fn seq_len<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    checked(d, |v: i64| positive_at_most(v, limits::MAX_SEQ_LEN))
}

fn head_dim<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    checked(d, |v: i64| {
        let d = positive_at_most(v, u32::MAX)?;
        if SUPPORTED_HEAD_DIMS.contains(&d) {
            Ok(d)
        } else {
            Err(format!("{d} is not supported (64 or 128)"))
        }
    })
}

fn bootstrap_resamples<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    checked(d, |v: i64| {
        let n = positive_at_most(v, limits::MAX_BOOTSTRAP_RESAMPLES)?;
        if n < limits::MIN_BOOTSTRAP_RESAMPLES {
            return Err(format!(
                "{n} is too few for a percentile interval; use at least {}",
                limits::MIN_BOOTSTRAP_RESAMPLES
            ));
        }
        Ok(n)
    })
}

fn max_speedup<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    checked(d, |v: f64| {
        if v > 1.0 && v <= limits::MAX_SPEEDUP {
            Ok(v)
        } else {
            Err(format!(
                "must be above 1 and at most {}, got {}",
                limits::MAX_SPEEDUP,
                validate::number(v)
            ))
        }
    })
}

fn tolerance<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    checked(d, |v: f64| positive_f64_at_most(v, limits::MAX_TOLERANCE))
}

fn optional_tolerance<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    tolerance(d).map(Some)
}

fn warmup_ms<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    checked(d, |v: f64| positive_f64_at_most(v, limits::MAX_WARMUP_MS))
}

/// `measure.spin_up_ms`: 0 (no spin-up) to [`limits::MAX_WARMUP_MS`].
fn spin_up_ms<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    checked(d, |v: f64| {
        if !(v.is_finite() && v >= 0.0) {
            Err(format!(
                "must be 0 or a positive number, got {}",
                validate::number(v)
            ))
        } else if v == 0.0 {
            Ok(0.0)
        } else {
            positive_f64_at_most(v, limits::MAX_WARMUP_MS)
        }
    })
}

fn sample_ms<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    checked(d, |v: f64| positive_f64_at_most(v, limits::MAX_SAMPLE_MS))
}

/// `measure.gpu_budget_s`: `auto` (sized from the config, [`Config::gpu_budget_s`]) or a
/// positive number of seconds.
fn gpu_budget_s<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Budget {
        Seconds(f64),
        Word(String),
    }
    checked(d, |v: Budget| match v {
        Budget::Seconds(s) => positive_f64_at_most(s, limits::MAX_GPU_BUDGET_S).map(Some),
        Budget::Word(w) if w == "auto" => Ok(None),
        Budget::Word(w) => Err(format!(
            "must be `auto` or a number of seconds, got {}",
            crate::text::quote(&w)
        )),
    })
}

/// A value read and dropped (a key results files of earlier versions hold).
fn ignored<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| ())
}

/// Keys a config may no longer set (docs/CONFIG.md, "removed key"), which their types still
/// read, to refuse them by name or to load older results files, so that serde lists them
/// among the expected keys.
const REMOVED_KEYS: &[&str] = &["min_effect", "budget_s", "target_ci_half_width"];

/// serde's message for an unknown key, `unknown field `x`, expected one of `a`, `b`, …`,
/// with the [`REMOVED_KEYS`] left out of the expected ones: a typo is not told to use a key
/// that is refused. Any other message is returned as it is.
fn without_removed_keys(message: &str) -> String {
    let Some((head, expected)) = message.split_once(", expected one of ") else {
        return message.to_owned();
    };
    let mut expected = expected.to_owned();
    for key in REMOVED_KEYS {
        let quoted = format!("`{key}`");
        expected = expected
            .replace(&format!("{quoted}, "), "")
            .replace(&format!(", {quoted}"), "");
    }
    format!("{head}, expected one of {expected}")
}

/// The line of the first `key:` under the top-level `section:` of a YAML text, if any: a
/// removed key of a shared type is refused here, so that results files that hold it still
/// load.
fn key_line(text: &str, section: &str, key: &str) -> Option<usize> {
    let value: serde_yaml::Value = serde_yaml::from_str(text).ok()?;
    value.get(section)?.get(key)?;
    let mut in_section = false;
    for (i, line) in text.lines().enumerate() {
        let top = !line.starts_with([' ', '\t']) && !line.trim().is_empty();
        if top {
            in_section = line.trim_start().starts_with(&format!("{section}:"));
            if in_section && line.contains(&format!("{key}:")) {
                return Some(i + 1);
            }
            continue;
        }
        if in_section && line.trim_start().starts_with(&format!("{key}:")) {
            return Some(i + 1);
        }
    }
    Some(0)
}

/// A key that no longer exists: reading it is an error that names what replaced it.
fn removed<'de, D: Deserializer<'de>>(d: D, key: &str, instead: &str) -> Result<(), D::Error> {
    checked(d, |_: serde::de::IgnoredAny| -> Result<(), String> {
        Err(format!("{key} was removed: {instead}"))
    })
}

fn removed_budget_s<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    removed(
        d,
        "budget_s",
        "it was never used; the run's GPU-time budget is measure.gpu_budget_s (`auto` by default)",
    )
}

fn removed_target_ci_half_width<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    removed(
        d,
        "target_ci_half_width",
        "it was never used; how long a shape is measured is measure.min_rounds and measure.max_rounds (the two stages)",
    )
}

fn max_wait_s<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    checked(d, |v: f64| positive_f64_at_most(v, limits::MAX_WAIT_S))
}

fn min_shapes<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    checked(d, |v: i64| positive_at_most(v, limits::MAX_SHAPES as u32))
}

fn eval_timeout_s<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    checked(d, |v: f64| {
        positive_f64_at_most(v, limits::MAX_EVAL_TIMEOUT_S)
    })
}

fn samples_per_round<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    checked(d, |v: i64| {
        positive_at_most(v, limits::MAX_SAMPLES_PER_ROUND)
    })
}

fn min_rounds<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    checked(d, |v: i64| {
        let n = positive_at_most(v, limits::MAX_ROUNDS)?;
        if n < 2 {
            return Err(format!(
                "must be at least 2, so that run-to-run spread is measured, got {n}"
            ));
        }
        Ok(n)
    })
}

fn max_rounds<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    checked(d, |v: i64| positive_at_most(v, limits::MAX_ROUNDS))
}

fn energy_rounds<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    checked(d, |v: i64| {
        if (0..=limits::MAX_ENERGY_ROUNDS).contains(&v) {
            Ok(v as u32)
        } else {
            Err(format!(
                "must be 0 (off) to {}, got {v}",
                limits::MAX_ENERGY_ROUNDS
            ))
        }
    })
}

fn energy_updates<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    checked(d, |v: i64| positive_at_most(v, limits::MAX_ENERGY_UPDATES))
}

fn duty_cycle<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    checked(d, |v: f64| {
        if v > 0.0 && v <= 1.0 {
            Ok(v)
        } else {
            Err(format!("must be in (0, 1], got {}", validate::number(v)))
        }
    })
}

/// The fields of a type whose `Deserialize` checks them together once they are read:
/// deserialized by the derived code (`#[serde(remote = "Self")]`, which unknown keys and
/// each field's own check go through), then checked by the type's `Deserialize` inside the
/// mapping's own reading ([`checked`]), so a refusal is reported at the mapping.
struct Fields<T>(T);

/// Largest config file read, in bytes.
pub(crate) const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Deepest nesting of lists and mappings a config may have (real configs are 4 deep).
pub(crate) const MAX_YAML_DEPTH: usize = 32;

/// Upper limits of the numeric settings, so that no config can ask for unbounded work.
pub(crate) mod limits {
    pub(crate) const MAX_BATCH: u32 = 1024;
    pub(crate) const MAX_HEADS: u32 = 1024;
    pub(crate) const MAX_SEQ_LEN: u32 = 131_072;
    pub(crate) const MIN_BOOTSTRAP_RESAMPLES: u32 = 100;
    pub(crate) const MAX_BOOTSTRAP_RESAMPLES: u32 = 200_000;
    pub(crate) const MAX_ROUNDS: u32 = 200;
    pub(crate) const MAX_SAMPLES_PER_ROUND: u32 = 1000;
    pub(crate) const MAX_WARMUP_MS: f64 = 10_000.0;
    pub(crate) const MAX_SAMPLE_MS: f64 = 1000.0;
    pub(crate) const MAX_GPU_BUDGET_S: f64 = 86_400.0;
    pub(crate) const MAX_WAIT_S: f64 = 3600.0;
    pub(crate) const MAX_SPEEDUP: f64 = 1000.0;
    pub(crate) const MAX_TOLERANCE: f64 = 1.0;
    pub(crate) const MAX_ENERGY_ROUNDS: i64 = 32;
    pub(crate) const MAX_ENERGY_UPDATES: u32 = 20;
    pub(crate) const MAX_EVAL_TIMEOUT_S: f64 = 86_400.0;
    pub const MAX_SHAPES: usize = crate::validate::MAX_SHAPES;
}

/// One attention problem: layout [batch, heads, seq_len, head_dim], scale 1/sqrt(head_dim).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct ShapeParams {
    #[serde(deserialize_with = "batch")]
    pub batch: u32,
    #[serde(deserialize_with = "heads")]
    pub heads: u32,
    #[serde(deserialize_with = "seq_len")]
    pub seq_len: u32,
    #[serde(deserialize_with = "head_dim")]
    pub head_dim: u32,
    #[serde(default)]
    pub causal: bool,
    pub dtype: Dtype,
}

impl Serialize for ShapeParams {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ShapeParams::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for Fields<ShapeParams> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ShapeParams::deserialize(d).map(Fields)
    }
}

impl<'de> Deserialize<'de> for ShapeParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked(d, |Fields(shape): Fields<ShapeParams>| {
            if shape.elements() > MAX_ELEMENTS {
                return Err(format!(
                    "shape {} has {} elements per tensor; at most 2^31 are supported",
                    shape.name(),
                    shape.elements()
                ));
            }
            Ok(shape)
        })
    }
}

/// Largest tensor the kernels index with 32-bit offsets.
const MAX_ELEMENTS: usize = 1 << 31;

impl ShapeParams {
    pub fn new(
        batch: u32,
        heads: u32,
        seq_len: u32,
        head_dim: u32,
        causal: bool,
        dtype: Dtype,
    ) -> Self {
        ShapeParams {
            batch,
            heads,
            seq_len,
            head_dim,
            causal,
            dtype,
        }
    }

    /// The canonical name, e.g. `b2h8s512d64_causal_f16` (the golden files use the same scheme).
    pub fn name(&self) -> String {
        format!(
            "b{}h{}s{}d{}{}_{}",
            self.batch,
            self.heads,
            self.seq_len,
            self.head_dim,
            if self.causal { "_causal" } else { "" },
            self.dtype.short()
        )
    }

    /// Elements in each of Q, K, V and the output.
    pub fn elements(&self) -> usize {
        self.batch as usize * self.heads as usize * self.seq_len as usize * self.head_dim as usize
    }

    /// Floating-point operations of one forward pass: two matrix products of
    /// 2·S·S·D each per (batch, head); causal masking does only the S·(S+1)/2 visible pairs.
    pub fn flops(&self) -> f64 {
        let (b, h, s, d) = (
            self.batch as f64,
            self.heads as f64,
            self.seq_len as f64,
            self.head_dim as f64,
        );
        let pairs = if self.causal {
            s * (s + 1.0) / 2.0
        } else {
            s * s
        };
        4.0 * b * h * pairs * d
    }

    /// TFLOP/s of one forward pass taking `us` µs: [`Self::flops`] over that time. The one
    /// formula for every TFLOP/s a run writes and a results file is checked against.
    pub fn tflops(&self, us: f64) -> f64 {
        self.flops() / (us * 1e-6) / 1e12
    }

    /// The softmax scale the kernel and the references use.
    pub fn scale(&self) -> f32 {
        1.0 / (self.head_dim as f32).sqrt()
    }
}

impl fmt::Display for ShapeParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The gate's thresholds and statistics settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GateSettings {
    /// Largest tolerated p50 slowdown, as a fraction (0.02 = 2%): the margin m.
    #[serde(deserialize_with = "fraction")]
    pub max_p50_regression: f64,
    /// One-sided level of the margin test, per shape (split 0.2/0.8 between the two looks of
    /// the planned design).
    #[serde(deserialize_with = "fraction")]
    pub alpha: f64,
    /// Confidence of the two-sided intervals shown.
    #[serde(deserialize_with = "fraction")]
    pub confidence: f64,
    /// Resamples of the bootstraps: the ratio of medians of sample files without rounds
    /// (which decides there) and the pairs bootstrap of the pooled p50 shown for 16 or more
    /// A/B pairs.
    #[serde(deserialize_with = "bootstrap_resamples")]
    pub bootstrap_resamples: u32,
    /// Removed from configs (Cliff's δ is reported, never part of the rule: calibration
    /// showed it adds no protection and costs power); a config that sets it is refused
    /// ([`Config::parse`]), while results files of earlier versions, which recorded it, load:
    /// here it is read and dropped, and never written.
    #[serde(skip_serializing, deserialize_with = "ignored")]
    pub min_effect: (),
    /// Seed of the bootstraps and of the A/B pair orders; recorded in every results file.
    pub seed: u64,
    /// A candidate more than this many times faster than its reference is an `error`, not
    /// an improvement: such a speed-up is far more often a kernel that skips work the gate
    /// did not see than a real one (raise it for a real rewrite).
    #[serde(deserialize_with = "max_speedup")]
    pub max_speedup: f64,
    /// Whether the host's clock's witness of the samples is judged (`crate::witness`): where
    /// false, it is recorded in the results and a note says that it was not judged. The
    /// maintainers' switch for a runner whose host the witness's limits do not fit.
    pub witness: bool,
}

impl Default for GateSettings {
    fn default() -> Self {
        GateSettings {
            max_p50_regression: 0.02,
            alpha: 0.05,
            confidence: 0.95,
            bootstrap_resamples: 10_000,
            min_effect: (),
            seed: 0xC1_6A7E,
            max_speedup: 2.0,
            witness: true,
        }
    }
}

/// Allowed error of the kernel against the fp32 reference kernel.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    #[serde(deserialize_with = "tolerance")]
    pub max_abs: f64,
    #[serde(deserialize_with = "tolerance")]
    pub rel_l2: f64,
    /// The largest relative L2 error of one (batch, head) slice measured against how far the
    /// reference is from uniform attention (`results::Parity::centered`): what a kernel
    /// must get right of the part of attention that depends on q. `None` in a config: the
    /// dtype's default ([`ParitySettings::tolerance`]); in a results file of a ci-gate
    /// before 2026-12-08: not judged.
    #[serde(
        default,
        deserialize_with = "optional_tolerance",
        skip_serializing_if = "Option::is_none"
    )]
    pub centered: Option<f64>,
}

/// The default `centered` tolerances, float16 and bfloat16 (`python3 bench/mixture_study.py
/// --quick --check`, `--long --check` and `--short-rows 200`, 2026-12-08: an honest fp16-P
/// kernel reaches 9.6e-4 on every class combination and 3.2e-3 on 32- to 257-key rows, a
/// bf16-P one 9.3e-3 and 2.5e-2; the closest a q-independent output or one linear in q
/// comes is 0.29).
pub const CENTERED_TOLERANCE: (f64, f64) = (2e-2, 1e-1);

/// Parity settings: input seed and per-dtype tolerances.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ParitySettings {
    /// Seed of the random inputs; recorded in every results file.
    pub seed: u64,
    pub float16: Tolerance,
    pub bfloat16: Tolerance,
}

impl ParitySettings {
    /// The tolerance of `dtype`, its `centered` bar filled with the dtype's default
    /// ([`CENTERED_TOLERANCE`]) where the config sets none.
    pub fn tolerance(&self, dtype: Dtype) -> Tolerance {
        let (t, centered) = match dtype {
            Dtype::Float16 => (self.float16, CENTERED_TOLERANCE.0),
            Dtype::Bfloat16 => (self.bfloat16, CENTERED_TOLERANCE.1),
        };
        Tolerance {
            centered: Some(t.centered.unwrap_or(centered)),
            ..t
        }
    }
}

impl Default for ParitySettings {
    fn default() -> Self {
        // PyTorch's own GPU kernels land at ~2.7e-4 (fp16) and ~2e-3 (bf16) relative L2
        // from float64 (tests/golden/cases.json, sdpa_gpu_rel_l2_vs_fp64); the bars leave ~4x
        // headroom.
        ParitySettings {
            seed: 20_261_121,
            float16: Tolerance {
                max_abs: 1e-2,
                rel_l2: 1e-3,
                centered: Some(CENTERED_TOLERANCE.0),
            },
            bfloat16: Tolerance {
                max_abs: 6e-2,
                rel_l2: 8e-3,
                centered: Some(CENTERED_TOLERANCE.1),
            },
        }
    }
}

/// Hot cache replays one buffer set; cold cache rotates through sets whose total exceeds L2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    Hot,
    Cold,
}

impl fmt::Display for CacheMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CacheMode::Hot => "hot",
            CacheMode::Cold => "cold",
        })
    }
}

/// How samples are taken.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct MeasureSettings {
    pub cache: CacheMode,
    /// Warm-up time per round before any sample is kept, in milliseconds.
    #[serde(deserialize_with = "warmup_ms")]
    pub warmup_ms: f64,
    /// Wall time, in milliseconds, the run keeps the GPU busy with the first shape's kernel
    /// before anything else, so that the clocks are up before the first check and round. An
    /// evaluator whose measuring processes follow one another on a busy GPU needs little.
    #[serde(deserialize_with = "spin_up_ms")]
    pub spin_up_ms: f64,
    /// Target GPU time of one sample (one CUDA-graph replay of many launches), in milliseconds.
    #[serde(deserialize_with = "sample_ms")]
    pub sample_ms: f64,
    /// Samples taken in each round.
    #[serde(deserialize_with = "samples_per_round")]
    pub samples_per_round: u32,
    /// Rounds (pairs, in A/B) of the first stage of the planned design; each round uses
    /// freshly allocated buffers.
    #[serde(deserialize_with = "min_rounds")]
    pub min_rounds: u32,
    /// Rounds (pairs) at most: shapes the first look does not settle get the rest.
    #[serde(deserialize_with = "max_rounds")]
    pub max_rounds: u32,
    /// Removed (never used since the two-stage design); an error that says so.
    #[serde(deserialize_with = "removed_target_ci_half_width", skip_serializing)]
    pub target_ci_half_width: (),
    /// Removed (never used); an error naming `gpu_budget_s`.
    #[serde(deserialize_with = "removed_budget_s", skip_serializing)]
    pub budget_s: (),
    /// The GPU time, in seconds, a run may spend on the timed kernels (warm-ups, first
    /// replays and timed samples of both sides, every shape): past it the run ends with exit
    /// 2 naming the shape and the side that spent it, so a kernel that is slow but finishes
    /// cannot hold the runner. `None` (`auto`, the default): [`Config::gpu_budget_s`].
    #[serde(
        deserialize_with = "gpu_budget_s",
        skip_serializing_if = "Option::is_none"
    )]
    pub gpu_budget_s: Option<f64>,
    /// Fraction of the sampling time the GPU is busy: after each sample it idles so that
    /// its power controller never pulls the clocks down (1 = samples back to back).
    #[serde(deserialize_with = "duty_cycle")]
    pub duty_cycle: f64,
    /// The longest wait for one batch of GPU work, in seconds: past it (or past a bound
    /// derived from the shape's measured time, when that is shorter) the GPU counts as hung
    /// and the run ends with exit 2 and a results file naming the shape and side.
    #[serde(deserialize_with = "max_wait_s")]
    pub max_wait_s: f64,
    /// Energy windows per side of each shape, after its timed pairs (0: no energy figures).
    /// Energy is reported and stored, never part of a verdict (src/energy.rs).
    #[serde(deserialize_with = "energy_rounds")]
    pub energy_rounds: u32,
    /// Moves of NVML's energy counter each window spans at least, after its first (~100 ms
    /// apart on an H100); a window also runs until its span is timed to 1%.
    #[serde(deserialize_with = "energy_updates")]
    pub energy_updates: u32,
}

impl Default for MeasureSettings {
    fn default() -> Self {
        MeasureSettings {
            cache: CacheMode::Hot,
            warmup_ms: 20.0,
            spin_up_ms: 300.0,
            sample_ms: 2.0,
            samples_per_round: 10,
            min_rounds: 5,
            max_rounds: 20,
            target_ci_half_width: (),
            budget_s: (),
            gpu_budget_s: None,
            duty_cycle: 0.25,
            max_wait_s: 15.0,
            energy_rounds: 3,
            energy_updates: 3,
        }
    }
}

impl Serialize for MeasureSettings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        MeasureSettings::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for Fields<MeasureSettings> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        MeasureSettings::deserialize(d).map(Fields)
    }
}

impl<'de> Deserialize<'de> for MeasureSettings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked(d, |Fields(m): Fields<MeasureSettings>| {
            if m.max_rounds < m.min_rounds {
                return Err(format!(
                    "max_rounds {} is below min_rounds {}",
                    m.max_rounds, m.min_rounds
                ));
            }
            Ok(m)
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    name: Option<Name>,
    #[serde(default)]
    gate: GateSettings,
    #[serde(default)]
    parity: ParitySettings,
    #[serde(default)]
    measure: MeasureSettings,
    #[serde(default)]
    peers: Vec<crate::peers::Peer>,
    #[serde(default)]
    compile: CompileSettings,
    #[serde(default)]
    eval: EvalSettings,
    #[serde(deserialize_with = "shapes")]
    shapes: Vec<ShapeParams>,
}

/// `name:`, which names the baseline file.
#[derive(Debug)]
struct Name(String);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked_text(d, |n| validate::config_name(&n).map(|()| Name(n)))
    }
}

/// `shapes:`: at least one, at most [`limits::MAX_SHAPES`], none twice.
fn shapes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ShapeParams>, D::Error> {
    checked(d, |shapes: Vec<ShapeParams>| {
        if shapes.is_empty() {
            return Err("the list is empty".into());
        }
        if shapes.len() > limits::MAX_SHAPES {
            return Err(format!(
                "{} shapes, more than the {} allowed",
                shapes.len(),
                limits::MAX_SHAPES
            ));
        }
        let mut seen = std::collections::HashMap::new();
        for (i, s) in shapes.iter().enumerate() {
            if let Some(first) = seen.insert(*s, i) {
                return Err(format!(
                    "duplicate shape {} (shapes[{first}] and shapes[{i}])",
                    s.name()
                ));
            }
        }
        Ok(shapes)
    })
}

/// How the timed kernels (attention.cu, both sides of an A/B run) are compiled; the harness
/// is never affected.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompileSettings {
    /// Preprocessor definitions, `NAME` or `NAME=VALUE` (passed to NVRTC as `-D`), e.g.
    /// `CG_ADA_TILES` to run the tiles the L4 runs on another GPU.
    #[serde(deserialize_with = "defines")]
    pub defines: Vec<String>,
}

/// One of `compile.defines`, checked as it is read.
struct Define(String);

impl<'de> Deserialize<'de> for Define {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked_text(d, |d| match define_error(&d) {
            None => Ok(Define(d)),
            Some(why) => Err(format!("{} {why}", crate::text::quote(&d))),
        })
    }
}

/// `compile.defines`: at most [`MAX_DEFINES`], each a [`Define`].
fn defines<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    checked(d, |defines: Vec<Define>| {
        if defines.len() > MAX_DEFINES {
            return Err(format!(
                "{} definitions, more than the {MAX_DEFINES} allowed",
                defines.len()
            ));
        }
        Ok(defines.into_iter().map(|Define(d)| d).collect())
    })
}

/// Most `compile.defines` (and most defines of one `ci-gate eval` candidate).
pub(crate) const MAX_DEFINES: usize = 16;

/// Why a string is not a define: the end of a sentence that names it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DefineError {
    /// Not `NAME` or `NAME=VALUE` of the allowed characters and lengths.
    #[error(
        "is not NAME or NAME=VALUE (a C identifier; a value of letters, digits, '_', '.', '+', '-')"
    )]
    Form,
    /// A name or value the lexical check refuses in a kernel (`` `__has_include` ``, shown).
    #[error(
        "names {0}, which no kernel may: the kernels are compiled without access to any file (kernels/README.md)"
    )]
    NamesAFile(String),
}

/// Why `d` is not a define; `None` for one. A define is `NAME` or `NAME=VALUE`: a C
/// identifier of at most 64 characters, a value of at most 64 letters, digits, '_', '.', '+'
/// or '-' (nothing NVRTC could read as another option), and nothing a kernel's source may
/// not hold (`include`, `__has_include`, … as the name or in the value: the lexical check of
/// `kernel::lexcheck`, which reads the source and never sees a `-D`). The one rule of
/// `compile.defines`, `ci-gate eval`'s candidates and the leaderboard's entries.
pub(crate) fn define_error(d: &str) -> Option<DefineError> {
    if !define_characters(d) {
        return Some(DefineError::Form);
    }
    crate::kernel::lexcheck::refused_in_define(d).map(DefineError::NamesAFile)
}

/// [`define_error`]'s characters and lengths.
fn define_characters(d: &str) -> bool {
    let (name, value) = match d.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (d, None),
    };
    let ident = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let value_ok = value.is_none_or(|v| {
        v.len() <= 64
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+' | b'-'))
    });
    ident && value_ok
}

/// `eval`: the seeds' acceptance rule of `ci-gate eval`'s leaderboard (docs/EVAL.md) and
/// how long one candidate may take. A shape is a *win* when the gate's rule
/// (`verdict::faster_with_confidence`) says it is faster than the reference by more than
/// `min_speedup`, with confidence; a candidate is accepted when at least `min_shapes` shapes
/// are wins, no shape's ratio estimate is above 1 + `gate.max_p50_regression` (the seeds'
/// "> 2% p50 regression", the gate's margin), parity passed everywhere, and all of that
/// holds again in two confirming measurements in fresh processes (hot and cold cache).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvalSettings {
    /// The speed-up a shape must show with confidence to count as a win (0.03 = 3%).
    #[serde(deserialize_with = "fraction")]
    pub min_speedup: f64,
    /// How many shapes must be wins.
    #[serde(deserialize_with = "min_shapes")]
    pub min_shapes: u32,
    /// Seconds one measuring process of a candidate may run before it is killed (the
    /// candidate's line is then an `error`): a backstop behind the run's own GPU-time budget
    /// and waits.
    #[serde(deserialize_with = "eval_timeout_s")]
    pub timeout_s: f64,
}

impl Default for EvalSettings {
    fn default() -> Self {
        EvalSettings {
            min_speedup: 0.03,
            min_shapes: 2,
            timeout_s: 300.0,
        }
    }
}

/// A loaded, validated config.
#[derive(Clone, Debug)]
pub struct Config {
    pub name: String,
    pub path: PathBuf,
    /// SHA-256 of the file's bytes.
    pub hash: String,
    pub gate: GateSettings,
    pub parity: ParitySettings,
    pub measure: MeasureSettings,
    /// Other implementations measured next to the kernel (`peers:`); they never decide.
    pub peers: Vec<crate::peers::Peer>,
    pub compile: CompileSettings,
    /// `ci-gate eval`'s acceptance rule and limits.
    pub eval: EvalSettings,
    pub shapes: Vec<ShapeParams>,
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let bytes = crate::files::read_bounded(path, MAX_CONFIG_BYTES).map_err(|e| match e {
            crate::files::FileError::Read { path, cause } => ConfigError::Read { path, cause },
            _ => ConfigError::Invalid {
                path: path.to_owned(),
                message: format!(
                    "the file is larger than the {MAX_CONFIG_BYTES} bytes a config may have"
                ),
            },
        })?;
        let text = String::from_utf8(bytes).map_err(|_| ConfigError::Invalid {
            path: path.to_owned(),
            message: "not UTF-8 text".into(),
        })?;
        Self::parse(&text, path)
    }

    /// Parses config text; `path` names it in errors and gives the default name.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        if text.trim().is_empty() {
            return Err(invalid(
                "the file is empty; it needs at least `shapes:`".into(),
            ));
        }
        if text.len() as u64 > MAX_CONFIG_BYTES {
            return Err(invalid(format!(
                "the file is larger than the {MAX_CONFIG_BYTES} bytes a config may have"
            )));
        }
        // Checked before parsing: deep nesting costs the YAML parser time out of proportion.
        if let Some(line) = crate::yaml::too_deep(text, MAX_YAML_DEPTH) {
            return Err(invalid(format!(
                "lists and mappings nest more than {MAX_YAML_DEPTH} levels deep at line {line}; a config is 4 levels deep"
            )));
        }
        if let Some(line) = key_line(text, "gate", "min_effect") {
            return Err(invalid(format!(
                "gate.min_effect was removed{}: Cliff's delta is reported for every shape and was never part of the rule after calibration; delete the key (the margin is gate.max_p50_regression)",
                if line > 0 {
                    format!(" (line {line})")
                } else {
                    String::new()
                }
            )));
        }
        // Every key is checked as it is read: serde_yaml names the key by its path and
        // line (text quoted from the file is escaped by the checks themselves).
        let raw: RawConfig = serde_yaml::from_str(text).map_err(|e| {
            invalid(crate::text::terminal_text(&without_removed_keys(
                &e.to_string(),
            )))
        })?;
        let name = match raw.name {
            Some(Name(n)) => n,
            None => {
                let stem = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("config")
                    .to_owned();
                validate::config_name(&stem)
                    .map_err(|m| invalid(format!("name (from the file name): {m}")))?;
                stem
            }
        };
        Ok(Config {
            name,
            path: path.to_owned(),
            hash: hex::encode(Sha256::digest(text.as_bytes())),
            gate: raw.gate,
            parity: raw.parity,
            measure: raw.measure,
            peers: {
                let mut p = raw.peers;
                p.sort();
                p.dedup();
                p
            },
            compile: raw.compile,
            eval: raw.eval,
            shapes: raw.shapes,
        })
    }

    /// The run's GPU-time budget in seconds ([`MeasureSettings::gpu_budget_s`]); `auto` is
    /// sized from the config: 4 × the planned timed GPU time (every shape's `max_rounds`
    /// pairs, two sides, `samples_per_round` samples of `sample_ms`) plus 30 s for warm-ups,
    /// first replays and shapes whose one launch is longer than a sample. The PR config's
    /// plan is 12.5 s, so its budget is 80 s of GPU time: a kernel that spends it has held
    /// the GPU about 5 minutes of wall time (the duty cycle idles 3× each sample's time),
    /// while the shipped kernels spend about 6 s of it.
    pub fn gpu_budget_s(&self) -> f64 {
        self.measure.gpu_budget_s.unwrap_or_else(|| {
            let m = &self.measure;
            let planned_ms = self.shapes.len() as f64
                * f64::from(m.max_rounds)
                * 2.0
                * f64::from(m.samples_per_round)
                * m.sample_ms;
            (4.0 * planned_ms / 1000.0 + 30.0).min(limits::MAX_GPU_BUDGET_S)
        })
    }

    /// The shapes whose names are in `names` (all when empty); an unknown name is an error.
    pub(crate) fn select_shapes(&self, names: &[String]) -> Result<Vec<ShapeParams>, ConfigError> {
        if names.is_empty() {
            return Ok(self.shapes.clone());
        }
        let mut out = Vec::new();
        for n in names {
            match self.shapes.iter().find(|s| &s.name() == n) {
                Some(s) => out.push(*s),
                None => {
                    return Err(ConfigError::Invalid {
                        path: self.path.clone(),
                        message: format!(
                            "no shape named {n:?}; the config has: {}",
                            self.shapes
                                .iter()
                                .map(|s| s.name())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    });
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("configs/t.yaml")).map_err(|e| e.to_string())
    }

    const OK: &str = "shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, causal: true, dtype: float16}\n";

    #[test]
    fn defines_are_identifiers_and_never_options() {
        let c = parse(&format!("compile:\n  defines: [CG_ADA_TILES, N=3]\n{OK}")).unwrap();
        assert_eq!(c.compile.defines, ["CG_ADA_TILES", "N=3"]);
        for bad in ["-arch=sm_80", "A B", "1X", "X=$(rm)", "X=a b", ""] {
            let e = parse(&format!("compile:\n  defines: [\"{bad}\"]\n{OK}")).unwrap_err();
            assert!(e.contains("compile.defines[0]"), "{bad}: {e}");
            assert!(e.contains("is not NAME or NAME=VALUE"), "{bad}: {e}");
        }
        // What the source may not hold, a define may not bring in: a -D never reaches the
        // lexical check.
        for (bad, named) in [
            ("H=__has_include", "`__has_include`"),
            ("include", "`include`"),
            ("X=a.embed", "`embed`"),
            ("X=__has_include_next", "`__has_include_next`"),
            ("import=1", "`import`"),
        ] {
            let e = parse(&format!("compile:\n  defines: [\"{bad}\"]\n{OK}")).unwrap_err();
            assert!(e.contains("compile.defines[0]"), "{bad}: {e}");
            assert!(
                e.contains(&format!("names {named}, which no kernel may")),
                "{bad}: {e}"
            );
        }
        // A pp-number is not an identifier: `1.include` names nothing.
        for ok in ["X=1.include", "INCLUDE_TILES", "X=embedded_", "has_include"] {
            assert_eq!(define_error(ok), None, "{ok}");
        }
        let e = parse(&format!("compile:\n  flags: [x]\n{OK}")).unwrap_err();
        assert!(e.contains("flags"), "{e}");
    }

    #[test]
    fn peers_are_known_names_listed_once() {
        use crate::peers::Peer;
        assert!(parse(OK).unwrap().peers.is_empty());
        let c = parse(&format!(
            "peers: [torch-sdpa-flash, torch-sdpa, torch-sdpa]\n{OK}"
        ))
        .unwrap();
        assert_eq!(c.peers, [Peer::TorchSdpa, Peer::TorchSdpaFlash]);
        let e = parse(&format!("peers: [triton]\n{OK}")).unwrap_err();
        assert!(e.contains("triton") && e.contains("peers"), "{e}");
    }

    #[test]
    fn minimal_config_gets_defaults_and_name_from_file() {
        let c = parse(OK).unwrap();
        assert_eq!(c.name, "t");
        assert_eq!(c.gate.max_p50_regression, 0.02);
        assert_eq!(c.shapes[0].name(), "b1h8s512d64_causal_f16");
        assert_eq!(c.hash.len(), 64);
    }

    #[test]
    fn a_typo_d_gate_key_is_not_told_to_use_the_removed_min_effect() {
        let e = parse("gate:\n  max_p50_regresion: 0.02\nshapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, dtype: float16}\n").unwrap_err();
        assert!(e.contains("unknown field `max_p50_regresion`"), "{e}");
        assert!(e.contains("line 2"), "{e}");
        assert!(
            e.contains("expected one of `max_p50_regression`, `alpha`, `confidence`, `bootstrap_resamples`, `seed`, `max_speedup`, `witness`"),
            "{e}"
        );
        assert!(!e.contains("min_effect"), "{e}");
        // Nor a typo'd measure key to use the removed budget_s or target_ci_half_width.
        let e = parse("measure:\n  min_round: 8\nshapes: []\n").unwrap_err();
        assert!(e.contains("expected one of `cache`"), "{e}");
        assert!(e.contains("`gpu_budget_s`"), "{e}");
        assert!(
            !e.contains("`budget_s`") && !e.contains("target_ci_half_width"),
            "{e}"
        );
        // The removed key itself is still refused by name, and other messages are untouched.
        let e = parse("gate:\n  min_effect: small\nshapes: []\n").unwrap_err();
        assert!(e.contains("gate.min_effect was removed (line 2)"), "{e}");
        assert_eq!(
            without_removed_keys("unknown field `min_effect`, expected `a` or `b`"),
            "unknown field `min_effect`, expected `a` or `b`"
        );
        assert_eq!(
            without_removed_keys(
                "x: unknown field `y`, expected one of `min_effect`, `a`, `b` at line 1"
            ),
            "x: unknown field `y`, expected one of `a`, `b` at line 1"
        );
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let e = parse("shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, dtype: float16, extra: 3}\n").unwrap_err();
        assert!(e.contains("configs/t.yaml"), "{e}");
        assert!(e.contains("extra"), "{e}");
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn bad_values_name_the_key() {
        for (text, key) in [
            (
                "shapes:\n  - batch: 0\n    heads: 8\n    seq_len: 512\n    head_dim: 64\n    dtype: float16\n",
                "shapes[0].batch: must be a positive integer, got 0 at line 2",
            ),
            (
                "parity:\n  float16: {max_abs: 0, rel_l2: 1}\nshapes: []\n",
                "max_abs",
            ),
            ("measure:\n  cache: lukewarm\nshapes: []\n", "lukewarm"),
            (
                "gate:\n  max_p50_regression: 2\nshapes: []\n",
                "max_p50_regression",
            ),
            (
                "shapes:\n  - {batch: 1, heads: -2, seq_len: 512, head_dim: 64, dtype: float16}\n",
                "heads",
            ),
            (
                "shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 96, dtype: float16}\n",
                "head_dim",
            ),
            (
                "shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, dtype: float32}\n",
                "dtype",
            ),
            (
                "shapes:\n  - {batch: one, heads: 8, seq_len: 512, head_dim: 64, dtype: float16}\n",
                "batch",
            ),
            (
                "gate:\n  max_p50_regression: 2\nshapes: []\n",
                "max_p50_regression",
            ),
            ("gate:\n  typo: 1\nshapes: []\n", "typo"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(key), "{key}: {e}");
            assert!(e.contains("configs/t.yaml"), "{e}");
        }
    }

    #[test]
    fn empty_and_duplicate_shapes_are_errors() {
        assert!(parse("").unwrap_err().contains("empty"));
        assert!(parse("shapes: []\n").unwrap_err().contains("empty"));
        let dup = format!(
            "{OK}  - {{batch: 1, heads: 8, seq_len: 512, head_dim: 64, causal: true, dtype: fp16}}\n"
        );
        assert!(
            parse(&dup)
                .unwrap_err()
                .contains("duplicate shape b1h8s512d64_causal_f16")
        );
    }

    #[test]
    fn rounds_must_be_consistent() {
        let e = parse(&format!("measure:\n  min_rounds: 5\n  max_rounds: 3\n{OK}")).unwrap_err();
        assert!(
            e.contains("measure: max_rounds 3 is below min_rounds 5 at line 2"),
            "{e}"
        );
    }

    #[test]
    fn flops_count_visible_pairs() {
        let s = ShapeParams::new(1, 1, 4, 64, false, Dtype::Float16);
        assert_eq!(s.flops(), 4.0 * 16.0 * 64.0);
        let c = ShapeParams::new(1, 1, 4, 64, true, Dtype::Float16);
        assert_eq!(c.flops(), 4.0 * 10.0 * 64.0);
    }

    #[test]
    fn every_numeric_setting_has_an_upper_limit_naming_key_and_line() {
        for (section, want) in [
            (
                "gate:\n  bootstrap_resamples: 4294967295\n",
                "gate.bootstrap_resamples: 4294967295 is too large: at most 200000 at line 2",
            ),
            (
                "gate: {alpha: 0.05, bootstrap_resamples: 50000000}\n",
                "gate.bootstrap_resamples: 50000000 is too large: at most 200000 at line 1",
            ),
            (
                "# c\ngate:\n  alpha: 0.05\n\n  # x\n  bootstrap_resamples: 50000000\n",
                "gate.bootstrap_resamples: 50000000 is too large: at most 200000 at line 6",
            ),
            (
                "measure:\n  min_rounds: 201\n  max_rounds: 300\n",
                "measure.min_rounds: 201 is too large: at most 200 at line 2",
            ),
            (
                "measure:\n  max_rounds: 1000\n",
                "measure.max_rounds: 1000 is too large: at most 200 at line 2",
            ),
            (
                "measure:\n  cache: hot\n  samples_per_round: 1001\n",
                "measure.samples_per_round: 1001 is too large: at most 1000 at line 3",
            ),
            (
                "measure:\n  warmup_ms: 1e9\n",
                "measure.warmup_ms: 1000000000 is too large",
            ),
            (
                "measure:\n  spin_up_ms: -1\n",
                "measure.spin_up_ms: must be 0 or a positive number, got -1",
            ),
            (
                "measure:\n  spin_up_ms: 20000\n",
                "measure.spin_up_ms: 20000 is too large",
            ),
            (
                "measure:\n  sample_ms: 5000\n",
                "measure.sample_ms: 5000 is too large",
            ),
            (
                "measure:\n  gpu_budget_s: 86401\n",
                "measure.gpu_budget_s: 86401 is too large",
            ),
            (
                "measure:\n  gpu_budget_s: soon\n",
                "measure.gpu_budget_s: must be `auto` or a number of seconds",
            ),
            (
                "measure:\n  budget_s: 10\n",
                "measure.budget_s: budget_s was removed: it was never used; the run's GPU-time budget is measure.gpu_budget_s",
            ),
            (
                "measure:\n  target_ci_half_width: 0.002\n",
                "measure.target_ci_half_width: target_ci_half_width was removed",
            ),
            (
                "parity:\n  float16: {max_abs: 5, rel_l2: 0.1}\n",
                "parity.float16.max_abs: 5 is too large",
            ),
            // Shown as written, not as 300 digits.
            (
                "measure:\n  warmup_ms: 1e300\n",
                "measure.warmup_ms: 1e300 is too large",
            ),
            (
                "gate:\n  max_p50_regression: 1e308\n",
                "gate.max_p50_regression: must be a number between 0 and 1 (exclusive), got 1e308",
            ),
        ] {
            let e = parse(&format!("{section}{OK}")).unwrap_err();
            assert!(e.contains(want), "{want}: {e}");
            assert!(e.contains("configs/t.yaml") && e.contains("line "), "{e}");
        }
        for (shape, want) in [
            (
                "batch: 5000, heads: 8, seq_len: 512",
                "shapes[0].batch: 5000 is too large: at most 1024",
            ),
            (
                "batch: 1, heads: 2000, seq_len: 512",
                "shapes[0].heads: 2000 is too large",
            ),
            (
                "batch: 1, heads: 1, seq_len: 1000000",
                "shapes[0].seq_len: 1000000 is too large",
            ),
        ] {
            let e = parse(&format!(
                "shapes:\n  - {{{shape}, head_dim: 64, dtype: float16}}\n"
            ))
            .unwrap_err();
            assert!(e.contains(want) && e.contains("line 2"), "{want}: {e}");
        }
    }

    #[test]
    fn too_many_shapes_names_the_line() {
        let mut text = String::from("# many\nshapes:\n");
        for i in 1..=1001 {
            text.push_str(&format!(
                "  - {{batch: 1, heads: 1, seq_len: {i}, head_dim: 64, dtype: float16}}\n"
            ));
        }
        let e = parse(&text).unwrap_err();
        assert!(
            e.contains("shapes: 1001 shapes, more than the 1000 allowed at line 3"),
            "{e}"
        );
    }

    #[test]
    fn deep_or_large_yaml_is_refused_fast() {
        let n = 100_000;
        let deep = [
            format!("shapes: {}{}\n", "[".repeat(n), "]".repeat(n)),
            format!("shapes: {}{}\n", "{a: ".repeat(n), "}".repeat(n)),
            format!("shapes:\n{}x\n", "- ".repeat(n)),
            format!("name: \"a\"\nshapes:\n  - {}\n", "[".repeat(n)),
        ];
        for text in deep {
            let start = std::time::Instant::now();
            let e = parse(&text).unwrap_err();
            assert!(e.contains("nest more than 32 levels deep at line"), "{e}");
            assert!(start.elapsed().as_secs_f64() < 1.0, "{:?}", start.elapsed());
        }
        // 32 levels are fine as far as depth goes (the shape itself is then wrong).
        let e = parse(&format!("shapes: {}{}\n", "[".repeat(31), "]".repeat(31))).unwrap_err();
        assert!(!e.contains("levels deep"), "{e}");
        let big = format!("{OK}{}", "# padding\n".repeat(120_000));
        let e = parse(&big).unwrap_err();
        assert!(e.contains("larger than the 1048576 bytes"), "{e}");
    }

    #[test]
    fn oversized_config_files_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.yaml");
        std::fs::write(&p, vec![b'#'; 2 << 20]).unwrap();
        let e = Config::load(&p).unwrap_err().to_string();
        assert!(e.contains("big.yaml") && e.contains("larger than"), "{e}");
    }

    #[test]
    fn name_uses_the_shared_character_set() {
        for bad in ["../x", "a/b", ".hidden", "a b", "x`y", "@team"] {
            let e = parse(&format!("name: \"{bad}\"\n{OK}")).unwrap_err();
            assert!(
                e.contains("name: ") && e.contains("letters, digits"),
                "{bad}: {e}"
            );
        }
        let long = "a".repeat(200);
        assert!(parse(&format!("name: {long}\n{OK}")).is_err());
        assert_eq!(
            parse(&format!("name: nightly-2.x\n{OK}")).unwrap().name,
            "nightly-2.x"
        );
        // A name that looks like a number is still text; an empty one takes the file's.
        assert_eq!(parse(&format!("name: 2024\n{OK}")).unwrap().name, "2024");
        assert_eq!(parse(&format!("name: ~\n{OK}")).unwrap().name, "t");
    }

    #[test]
    fn every_error_names_the_key_by_its_path_and_line() {
        for (text, want) in [
            (
                format!("measure:\n  cache: hot\n  duty_cycle: 0\n{OK}"),
                "measure.duty_cycle: must be in (0, 1], got 0 at line 3",
            ),
            (
                "shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, dtype: float16}\n  - batch: 1\n    heads: 8\n    seq_len: 512\n    head_dim: 32\n    dtype: float16\n".into(),
                "shapes[1].head_dim: 32 is not supported (64 or 128) at line 6",
            ),
            (
                "shapes:\n  - {batch: 1024, heads: 1024, seq_len: 8192, head_dim: 128, dtype: bf16}\n".into(),
                "shapes[0]: shape b1024h1024s8192d128_bf16 has 1099511627776 elements per tensor; at most 2^31 are supported at line 2",
            ),
            (
                format!("compile:\n  defines:\n    - A\n    - \"B C\"\n{OK}"),
                "compile.defines[1]: \"B C\" is not NAME or NAME=VALUE",
            ),
            (
                format!("measure:\n  min_rounds: 30\n{OK}"),
                "measure: max_rounds 20 is below min_rounds 30 at line 2",
            ),
        ] {
            let e = parse(&text).unwrap_err();
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    #[test]
    fn select_unknown_shape_lists_the_known_ones() {
        let c = parse(OK).unwrap();
        let e = c.select_shapes(&["nope".into()]).unwrap_err().to_string();
        assert!(e.contains("b1h8s512d64_causal_f16"), "{e}");
    }
}
