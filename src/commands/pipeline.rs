//! The measuring pipeline shared by `local`, `ci`, `baseline update` and `selftest`:
//! compile, check parity, measure, compare with the baseline, measure more where the first
//! verdict is inconclusive, and assemble the results file.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Result;
use chrono::Utc;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::baseline::{BaselineFile, BaselineStore};
use crate::config::{Config, ShapeParams};
use crate::evaluate::evaluate;
use crate::gpu::Gpu;
use crate::gpu::env::{environment, throttled};
use crate::gpu::measure::{
    Injection, Measurement, RoundsPolicy, calibrate_spin, extend, measure, spin_up,
};
use crate::gpu::parity::check_parity;
use crate::results::{
    BaselineRef, ConfigInfo, Environment, MeasurementInfo, ResultsFile, SCHEMA_VERSION,
    ShapeResult, current_git_commit,
};
use crate::stats::Sample;
use crate::verdict::Verdict;

/// What to compare a run with.
pub enum Against {
    /// The stored baseline of this GPU and config.
    Store(BaselineStore),
    /// A results file standing in for the baseline (selftest).
    Results(Box<ResultsFile>),
    /// Nothing: every shape reads `no-baseline`.
    Nothing,
}

/// Everything a run needs.
pub struct RunPlan {
    pub config: Config,
    pub shapes: Vec<ShapeParams>,
    pub kernels: PathBuf,
    pub against: Against,
    pub parity: bool,
    pub rounds: Option<u32>,
    /// Injected slowdown as a fraction of the baseline p50 (selftest only; needs a baseline).
    pub inject: Option<f64>,
    pub progress: bool,
}

/// GPU time spent at the start of a process to bring the clocks up before measuring.
const SPIN_UP_MS: f64 = 300.0;

/// Passes of extra rounds for shapes whose first verdict is inconclusive.
const INCONCLUSIVE_PASSES: u32 = 2;

/// Runs the pipeline. Errors are things that prevent any verdict (no GPU, kernels that do
/// not compile, an unreadable baseline); a shape that fails is recorded in its result.
pub fn run(plan: RunPlan) -> Result<ResultsFile> {
    let gpu = Gpu::open(&plan.kernels)?;
    let monitor = &gpu.monitor;
    let mut env = environment(&gpu.info, monitor);
    let mut warnings = Vec::new();

    let (baseline, baseline_ref): (Option<BaselineLike>, Option<BaselineRef>) = match &plan.against
    {
        Against::Nothing => (None, None),
        Against::Store(store) => {
            let path = store.path(&env.gpu_slug, &plan.config.name);
            match store.load(&env.gpu_slug, &env.gpu_name, &plan.config.name)? {
                None => {
                    warnings.push(format!(
                        "no baseline for {} and config {} at {}: every shape reads no-baseline",
                        env.gpu_name,
                        plan.config.name,
                        path.display()
                    ));
                    (None, None)
                }
                Some(b) => {
                    warnings.extend(version_warnings(&b.environment, &env));
                    let r = BaselineRef {
                        path: path.display().to_string(),
                        commit: b.provenance.commit.clone(),
                        recorded_at: b.provenance.recorded_at,
                    };
                    (Some(BaselineLike::Stored(Box::new(b))), Some(r))
                }
            }
        }
        Against::Results(r) => (Some(BaselineLike::Results(r.clone())), None),
    };

    let injection = match plan.inject {
        Some(f) => Some((f, calibrate_spin(&gpu)?)),
        None => None,
    };
    let policy = plan
        .rounds
        .map_or(RoundsPolicy::Adaptive, RoundsPolicy::Exactly);
    if let Some(first) = plan.shapes.first() {
        spin_up(&gpu, first, SPIN_UP_MS)?;
    }
    let bar = progress_bar(plan.progress, plan.shapes.len());
    let mut shapes = Vec::with_capacity(plan.shapes.len());
    let mut measurements: Vec<Option<(Measurement, Option<Injection>)>> = Vec::new();
    let mut throttle_seen: Vec<String> = Vec::new();
    for (i, params) in plan.shapes.iter().enumerate() {
        let name = params.name();
        bar.set_message(name.clone());
        let seed = plan.config.parity.seed.wrapping_add(i as u64);
        let mut result = ShapeResult {
            name: name.clone(),
            params: *params,
            verdict: Verdict::Error,
            error: None,
            samples_us: Vec::new(),
            summary: None,
            tflops: None,
            parity: None,
            comparison: None,
            measurement: None,
        };
        if plan.parity {
            match check_parity(
                &gpu,
                params,
                plan.config.parity.tolerance(params.dtype),
                seed,
            ) {
                Ok(p) => result.parity = Some(p),
                Err(e) => result.error = Some(e.to_string()),
            }
        }
        let inj = match (injection, &baseline) {
            (Some((fraction, calibration)), Some(b)) => b
                .p50(params, plan.config.measure.cache)
                .map(|p50| Injection {
                    us_per_launch: fraction * p50,
                    calibration,
                }),
            _ => None,
        };
        let mut kept = None;
        if result.error.is_none() {
            match measure(&gpu, params, &plan.config.measure, policy, inj, seed) {
                Ok(m) => {
                    fill_from_measurement(&mut result, &m, plan.config.measure.cache, 0);
                    kept = Some((m, inj));
                }
                Err(e) => result.error = Some(e.to_string()),
            }
        }
        if let Some(state) = monitor.state() {
            throttle_seen.extend(throttled(&state.throttle_reasons));
        }
        measurements.push(kept);
        shapes.push(result);
        bar.inc(1);
    }

    let cache = plan.config.measure.cache;
    let baseline_of = |s: &ShapeResult| baseline.as_ref().and_then(|b| b.samples(&s.params, cache));
    let mut passed = evaluate(&mut shapes, baseline_of, &plan.config.gate)?;
    // Inconclusive: the point estimate is past the threshold but the evidence is not
    // conclusive; measure more before settling on a warning.
    if plan.rounds.is_none() {
        for _ in 0..INCONCLUSIVE_PASSES {
            let pending: Vec<usize> = (0..shapes.len())
                .filter(|&i| {
                    shapes[i].verdict == Verdict::Inconclusive && measurements[i].is_some()
                })
                .collect();
            if pending.is_empty() {
                break;
            }
            for i in pending {
                bar.set_message(format!("{} (inconclusive: measuring more)", shapes[i].name));
                let params = shapes[i].params;
                let seed = plan.config.parity.seed.wrapping_add(1000 + i as u64);
                let Some((m, inj)) = measurements[i].as_mut() else {
                    continue;
                };
                let extra = plan.config.measure.min_rounds;
                match extend(&gpu, &params, &plan.config.measure, *inj, seed, m, extra) {
                    Ok(()) => {
                        let before = shapes[i].measurement.as_ref().map_or(0, |x| x.extra_rounds);
                        fill_from_measurement(&mut shapes[i], m, cache, before + extra);
                    }
                    Err(e) => shapes[i].error = Some(e.to_string()),
                }
            }
            passed = evaluate(&mut shapes, baseline_of, &plan.config.gate)?;
        }
    }
    bar.finish_and_clear();

    env.state_after = monitor.state();
    if let Some(after) = &env.state_after {
        throttle_seen.extend(throttled(&after.throttle_reasons));
    }
    let moved: Vec<String> = shapes
        .iter()
        .filter_map(|s| {
            let (lo, hi) = s.measurement.as_ref()?.sm_clock_mhz?;
            (lo != hi).then(|| format!("{} ({lo}-{hi} MHz)", s.name))
        })
        .collect();
    if !moved.is_empty() {
        warnings.push(format!(
            "the SM clock changed while measuring {}: those timings carry the change",
            moved.join(", ")
        ));
    }
    throttle_seen.sort();
    throttle_seen.dedup();
    if !throttle_seen.is_empty() {
        warnings.push(format!(
            "the GPU's clocks were throttled during the run ({}): timings may be slower than usual",
            throttle_seen.join(", ")
        ));
    }
    Ok(ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: current_git_commit(),
        created_at: Utc::now(),
        environment: Some(env),
        config: config_info(&plan.config),
        kernel_source_hash: Some(gpu.kernel_source_hash.clone()),
        gate: plan.config.gate.clone(),
        baseline: baseline_ref,
        shapes,
        passed,
        warnings,
        error: None,
    })
}

pub fn config_info(config: &Config) -> ConfigInfo {
    ConfigInfo {
        name: config.name.clone(),
        path: config.path.display().to_string(),
        hash: config.hash.clone(),
    }
}

fn fill_from_measurement(
    result: &mut ShapeResult,
    m: &Measurement,
    cache: crate::config::CacheMode,
    extra_rounds: u32,
) {
    result.samples_us = m.rounds.clone();
    let pooled: Vec<f64> = m.rounds.iter().flatten().copied().collect();
    match Sample::new(pooled) {
        Ok(s) => {
            let summary = s.summary();
            result.tflops = Some(result.params.flops() / (summary.p50 * 1e-6) / 1e12);
            result.summary = Some(summary);
        }
        Err(e) => result.error = Some(format!("its timings are unusable: {e}")),
    }
    result.measurement = Some(MeasurementInfo {
        cache,
        launches_per_sample: m.launches_per_sample,
        rounds: m.rounds.len() as u32,
        extra_rounds,
        working_set_bytes: m.working_set_bytes,
        wall_s: m.wall_s,
        sm_clock_mhz: m
            .sm_clock_mhz
            .iter()
            .min()
            .zip(m.sm_clock_mhz.iter().max())
            .map(|(lo, hi)| (*lo, *hi)),
    });
}

/// A stored baseline or a results file used as one.
enum BaselineLike {
    Stored(Box<BaselineFile>),
    Results(Box<ResultsFile>),
}

impl BaselineLike {
    fn samples(
        &self,
        params: &ShapeParams,
        cache: crate::config::CacheMode,
    ) -> Option<Vec<Vec<f64>>> {
        match self {
            BaselineLike::Stored(b) => b.shape(params, cache).map(|s| s.samples_us.clone()),
            BaselineLike::Results(r) => r
                .shapes
                .iter()
                .find(|s| {
                    &s.params == params
                        && s.error.is_none()
                        && s.measurement.as_ref().is_some_and(|m| m.cache == cache)
                })
                .map(|s| s.samples_us.clone()),
        }
    }

    fn p50(&self, params: &ShapeParams, cache: crate::config::CacheMode) -> Option<f64> {
        let samples = self.samples(params, cache)?;
        Sample::new(samples.into_iter().flatten().collect())
            .ok()
            .map(|s| s.median())
    }
}

/// Warnings for a baseline recorded under another driver or CUDA version: still the same GPU
/// model, so still compared, but a reader should know.
fn version_warnings(old: &Environment, env: &Environment) -> Vec<String> {
    let mut w = Vec::new();
    if old.driver_version != env.driver_version {
        w.push(format!(
            "the baseline was recorded with driver {}, this run uses {}",
            old.driver_version.as_deref().unwrap_or("?"),
            env.driver_version.as_deref().unwrap_or("?")
        ));
    }
    if old.cuda_driver_version != env.cuda_driver_version {
        w.push(format!(
            "the baseline was recorded with CUDA {}, this run uses {}",
            old.cuda_driver_version.as_deref().unwrap_or("?"),
            env.cuda_driver_version.as_deref().unwrap_or("?")
        ));
    }
    w
}

fn progress_bar(enabled: bool, len: usize) -> ProgressBar {
    // Only on a terminal: logs and pipes get no control sequences.
    if !enabled || !std::io::stdout().is_terminal() || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
    {
        bar.set_style(style);
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// Loads the config and selects shapes, naming the file on errors.
pub fn load_config(
    path: &std::path::Path,
    shapes: &[String],
) -> Result<(Config, Vec<ShapeParams>)> {
    let config = Config::load(path)?;
    let selected = config.select_shapes(shapes)?;
    Ok((config, selected))
}

/// A results file for a run that could not reach a verdict (what `ci` writes on exit 2).
pub fn failed_run(config: Option<&Config>, error: &anyhow::Error) -> ResultsFile {
    ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: current_git_commit(),
        created_at: Utc::now(),
        environment: None,
        config: config.map(config_info).unwrap_or(ConfigInfo {
            name: "unknown".into(),
            path: String::new(),
            hash: String::new(),
        }),
        kernel_source_hash: None,
        gate: config.map(|c| c.gate.clone()).unwrap_or_default(),
        baseline: None,
        shapes: Vec::new(),
        passed: false,
        warnings: Vec::new(),
        error: Some(format!("{error:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(driver: &str, cuda: &str) -> Environment {
        Environment {
            gpu_name: "NVIDIA H200".into(),
            gpu_slug: "nvidia-h200".into(),
            gpu_uuid: None,
            compute_capability: "9.0".into(),
            sm_count: None,
            l2_bytes: None,
            driver_version: Some(driver.into()),
            cuda_driver_version: Some(cuda.into()),
            nvrtc_version: None,
            state_before: None,
            state_after: None,
        }
    }

    #[test]
    fn driver_and_cuda_changes_are_warnings() {
        assert!(version_warnings(&env("580.1", "13.0"), &env("580.1", "13.0")).is_empty());
        let w = version_warnings(&env("570.9", "12.8"), &env("580.1", "13.0"));
        assert_eq!(w.len(), 2);
        assert!(w[0].contains("driver 570.9, this run uses 580.1"), "{w:?}");
        assert!(w[1].contains("CUDA 12.8, this run uses 13.0"), "{w:?}");
    }
}
