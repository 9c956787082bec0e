//! Shared helpers of the integration tests: synthetic results files and the binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use chrono::{TimeZone, Utc};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use ci_gate::config::{CacheMode, Dtype, GateSettings, ShapeParams, Tolerance};
use ci_gate::results::{
    ConfigInfo, Environment, MeasurementInfo, Parity, ResultsFile, SCHEMA_VERSION, ShapeResult,
};
use ci_gate::stats::Sample;
use ci_gate::verdict::Verdict;

pub fn bin() -> Command {
    let mut c = Command::cargo_bin("ci-gate").unwrap();
    c.env("NO_COLOR", "1").env_remove("COLUMNS");
    c
}

pub fn environment(gpu: &str) -> Environment {
    Environment {
        gpu_name: gpu.into(),
        gpu_slug: ci_gate::results::gpu_slug(gpu),
        gpu_uuid: Some("GPU-00000000-0000-0000-0000-000000000000".into()),
        compute_capability: "9.0".into(),
        sm_count: Some(132),
        l2_bytes: Some(62_914_560),
        driver_version: Some("580.159.04".into()),
        cuda_driver_version: Some("13.0".into()),
        nvrtc_version: Some("13.0".into()),
        state_before: None,
        state_after: None,
    }
}

pub fn shapes() -> Vec<ShapeParams> {
    vec![
        ShapeParams::new(2, 8, 512, 64, false, Dtype::Float16),
        ShapeParams::new(2, 8, 512, 64, true, Dtype::Float16),
        ShapeParams::new(2, 16, 2048, 128, true, Dtype::Bfloat16),
    ]
}

/// Rounds of lognormal-ish timings around `center` µs with `spread` relative noise.
pub fn rounds(
    rng: &mut ChaCha8Rng,
    center: f64,
    spread: f64,
    rounds: usize,
    per: usize,
) -> Vec<Vec<f64>> {
    (0..rounds)
        .map(|_| {
            let drift = 1.0 + spread * (rng.random::<f64>() - 0.5);
            (0..per)
                .map(|_| center * drift * (1.0 + spread * (rng.random::<f64>() - 0.5)))
                .collect()
        })
        .collect()
}

/// A results file with one entry per `factors` (p50 multiplier per shape).
pub fn results(gpu: &str, factors: &[f64], seed: u64) -> ResultsFile {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let shapes: Vec<ShapeResult> = shapes()
        .into_iter()
        .zip(factors)
        .map(|(params, f)| {
            let samples = rounds(&mut rng, 100.0 * f, 0.004, 8, 10);
            let summary = Sample::new(samples.iter().flatten().copied().collect())
                .unwrap()
                .summary();
            ShapeResult {
                verdict: Verdict::NoBaseline,
                samples_us: samples,
                tflops: Some(params.flops() / (summary.p50 * 1e-6) / 1e12),
                summary: Some(summary),
                parity: Some(Parity {
                    max_abs: 1e-3,
                    rel_l2: 2e-4,
                    nan_or_inf: 0,
                    unwritten: 0,
                    tolerance: Tolerance {
                        max_abs: 1e-2,
                        rel_l2: 1e-3,
                    },
                    seed: 1,
                }),
                measurement: Some(MeasurementInfo {
                    cache: CacheMode::Hot,
                    launches_per_sample: 20,
                    rounds: 8,
                    extra_rounds: 0,
                    working_set_bytes: 1 << 20,
                    wall_s: 0.5,
                    sm_clock_mhz: Some((1980, 1980)),
                    design: None,
                    checked_launches: 0,
                }),
                ..ShapeResult::new(params)
            }
        })
        .collect();
    ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool_version: "0.1.0".into(),
        git_commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        created_at: Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap(),
        environment: Some(environment(gpu)),
        config: ConfigInfo {
            name: "pr".into(),
            path: "configs/pr.yaml".into(),
            hash: "0".repeat(64),
        },
        kernel_source_hash: Some("f".repeat(64)),
        gate: GateSettings::default(),
        baseline: None,
        shapes,
        passed: true,
        warnings: vec![],
        notes: vec![],
        error: None,
        base: None,
        fail_on_drift: false,
        profiling: None,
        shard: None,
        peers: None,
        probes: Vec::new(),
        timing: None,
    }
}

pub fn write(path: &Path, r: &ResultsFile) {
    r.save(path).unwrap();
}

/// ../shared/golden (or $CI_GATE_GOLDEN_DIR) when it holds the golden cases.
pub fn golden_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("CI_GATE_GOLDEN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/golden"));
    dir.join("cases.json").exists().then_some(dir)
}

/// A little-endian file of 16-bit values.
pub fn read_u16(path: &Path) -> Vec<u16> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// A little-endian file of f32 values, widened.
pub fn read_f32(path: &Path) -> Vec<f64> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(4)
        .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .collect()
}
