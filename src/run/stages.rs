//! The stages phase: every shape's first stage, in the run's order (its parity checked
//! first: `parity::shape`), then the peers' rounds; and what each stage ends with
//! ([`finish`]): the measurements copied into the shape's result, and a time no GPU can reach
//! refused. The second stage is measured where the decide phase asks (`decide`).

use std::time::Instant;

use anyhow::Result;

use super::peer::PeerSession;
use super::session::{Session, progress_bar};
use super::shape::{Failure, ShapeRun};
use super::stored::{Stored, median_of};
use crate::backend::{Backend, Facts, GpuError, Measure, Measurement, Side};
use crate::comparison::shape_seed;
use crate::config::{CacheMode, Config, ShapeParams, Tolerance};
use crate::results::{MeasurementInfo, ShapeResult, StageDesign};
use crate::stats::Sample;

/// Every shape's first stage, in order: a shape whose kind failed a random shape fails
/// parity without being measured; the others are checked (`parity::shape`), begun on the
/// backend and measured for the design's first stage. The GPU's processes are read before
/// the first shape and after each one measured.
pub(super) fn first_stages(s: &mut Session, backend: &mut dyn Backend) -> Result<()> {
    // The peer worker started beside the setup; it is waited for only after the first stage.
    if let Some(p) = &s.pending_peers {
        s.watch.add_ours(p.pid());
    }
    s.sample_processes(backend);
    let run = s.run;
    s.bar = progress_bar(run.request.progress, run.shapes.len());
    for (i, params) in run.shapes.iter().enumerate() {
        s.bar.set_message(params.name());
        let mut result = ShapeResult::new(*params);
        if let Some(why) = super::parity::probe_failure(&s.probes, params) {
            result.integrity = Some(why);
            s.shapes.push(result);
            s.runs.push(None);
            s.bar.inc(1);
            continue;
        }
        let seed = run.config.parity.seed.wrapping_add(i as u64);
        match first_stage(s, backend, &mut result, seed) {
            Ok(shape) => {
                Finishing::of(s).finish(&mut result, &shape);
                if result.error.is_some() {
                    shape.end(backend);
                    s.runs.push(None);
                } else {
                    s.runs.push(Some(shape));
                }
            }
            Err(e) => {
                e.record(&mut result)?;
                s.runs.push(None);
            }
        }
        s.shapes.push(result);
        s.bar.inc(1);
        s.sample_processes(backend);
    }
    Ok(())
}

/// One shape's first stage: its parity, the injected slowdown sized (selftest), the shape
/// begun on the backend with its sides, and the design's first-stage rounds.
fn first_stage(
    s: &mut Session,
    backend: &mut dyn Backend,
    result: &mut ShapeResult,
    seed: u64,
) -> Result<ShapeRun, Failure> {
    let params = result.params;
    let config = &s.run.config;
    let tolerance = config.parity.tolerance(params.dtype);
    super::parity::shape(s, backend, result, tolerance, seed)?;
    let config = &s.run.config;
    let inject_us = match s.run.request.inject {
        Some(fraction) => {
            injected_reference(s, backend, &params, tolerance, seed)?.map(|p50| fraction * p50)
        }
        None => None,
    };
    let ab = s.sides.ab;
    let sides: &[Side] = if ab {
        &[Side::Base, Side::Candidate]
    } else {
        &[Side::Candidate]
    };
    let handle = backend.begin(
        &params,
        sides,
        &config.measure,
        tolerance,
        inject_us,
        shape_seed(config.gate.seed, &params.name()),
        seed,
    )?;
    let mut run = ShapeRun::new(handle, ab, seed, s.design);
    run.more(backend, config, s.design.stage1)?;
    Ok(run)
}

/// The p50 an injected slowdown is a fraction of: one round of the base, not kept, in A/B;
/// else the stored baseline's.
fn injected_reference(
    s: &Session,
    backend: &mut dyn Measure,
    params: &ShapeParams,
    tolerance: Tolerance,
    seed: u64,
) -> Result<Option<f64>, GpuError> {
    if !s.sides.ab {
        return Ok(s.stored.p50(params));
    }
    let config = &s.run.config;
    let handle = backend.begin(
        params,
        &[Side::Base],
        &config.measure,
        tolerance,
        None,
        0,
        seed,
    )?;
    let mut run = ShapeRun::new(handle, false, seed, s.design);
    let r = run.more(backend, config, 1);
    let base = run.end(backend);
    r?;
    Ok(base.first().and_then(|m| median_of(&m.rounds)))
}

/// What ends every measured stage of a shape ([`Finishing::finish`]), from the run.
pub(super) struct Finishing<'a> {
    pub config: &'a Config,
    pub design: StageDesign,
    pub stored: &'a Stored,
    /// The device's peak dense tensor throughput, TFLOP/s.
    pub peak_tflops: f64,
}

impl<'a> Finishing<'a> {
    pub(crate) fn of(s: &'a Session) -> Finishing<'a> {
        Finishing {
            config: &s.run.config,
            design: s.design,
            stored: &s.stored,
            peak_tflops: s.peak_tflops,
        }
    }

    /// The shape's measurements copied into its result, and an error where the candidate's
    /// time cannot be real ([`speed_limit`], against the base's p50 in A/B, else the stored
    /// baseline's), unless it already has one.
    pub fn finish(&self, result: &mut ShapeResult, run: &ShapeRun) {
        fill(result, run, self.config.measure.cache, self.design);
        let reference_p50 = match run.base() {
            Some(b) => median_of(&b.rounds),
            None => self.stored.p50(&result.params),
        };
        let max_speedup = self.config.gate.max_speedup;
        result.error = result
            .error
            .take()
            .or_else(|| speed_limit(result, reference_p50, self.peak_tflops, max_speedup));
    }
}

/// The peers, after every shape's first stage (their rounds never decide anything): the
/// worker started in the setup is waited for (or started now), and each measured shape gets
/// its peers' rounds.
pub(super) fn peers(s: &mut Session, backend: &dyn Facts) {
    let t = Instant::now();
    let run = s.run;
    let mut session = match s.pending_peers.take() {
        Some(pending) => pending.finish(&mut s.notes),
        None => PeerSession::start(
            if run.request.peers {
                &run.config.peers
            } else {
                &[]
            },
            &run.shapes,
            &mut s.notes,
        ),
    };
    s.timing.peers_start_s = t.elapsed().as_secs_f64();
    s.watch.add_ours(session.pid());
    for (shape, result) in s.runs.iter_mut().zip(s.shapes.iter_mut()) {
        let Some(shape) = shape.as_mut() else {
            continue;
        };
        result.peers = session.results();
        s.bar.set_message(format!("{} (peers)", result.name));
        let params = result.params;
        if let Err(e) = shape.peer_rounds(
            backend,
            &params,
            &run.config,
            &mut session,
            &mut result.peers,
            &mut s.notes,
        ) {
            s.notes
                .push(format!("{}: the peers were not measured: {e}", result.name));
        }
    }
    s.timing.peers_s = t.elapsed().as_secs_f64();
    s.peer_session = Some(session);
    s.sample_processes(backend);
}

/// Copies what a shape's sides measured into its result.
fn fill(result: &mut ShapeResult, run: &ShapeRun, cache: CacheMode, design: StageDesign) {
    result.remeasured = run.remeasured.clone();
    let sides: Vec<&Measurement> = run.base().into_iter().chain([run.cand()]).collect();
    if run.ab {
        result.clock_events = sides.iter().map(|m| m.clock_events.clone()).collect();
    }
    let cand = run.cand();
    result.samples_us = cand.rounds.clone();
    match Sample::new(cand.rounds.iter().flatten().copied().collect()).ok() {
        Some(s) => {
            let summary = s.summary();
            result.tflops = Some(result.params.flops() / (summary.p50 * 1e-6) / 1e12);
            result.summary = Some(summary);
        }
        None => result.error = Some("its timings are unusable: fewer than 2 values".into()),
    }
    if let Some(base) = run.base() {
        result.base_samples_us = base.rounds.clone();
        result.pair_order = run.orders.clone();
        result.base_summary = Sample::new(base.rounds.iter().flatten().copied().collect())
            .ok()
            .map(|s| s.summary());
    }
    let clocks: Vec<u32> = sides
        .iter()
        .flat_map(|m| m.sm_clock_mhz.iter().copied())
        .collect();
    let rounds = cand.rounds.len() as u32;
    result.measurement = Some(MeasurementInfo {
        cache,
        launches_per_sample: cand.launches_per_sample,
        rounds,
        extra_rounds: rounds.saturating_sub(design.stage1),
        working_set_bytes: cand.working_set_bytes,
        wall_s: sides.iter().map(|m| m.wall_s).sum(),
        sm_clock_mhz: clocks
            .iter()
            .min()
            .zip(clocks.iter().max())
            .map(|(lo, hi)| (*lo, *hi)),
        design: Some(design),
        checked_launches: cand.checked_launches,
    });
}

/// A candidate time that cannot be real: its fastest sample would beat the GPU's peak dense
/// tensor throughput, or it is more than `max_speedup` times faster than its reference (the
/// base's p50 in A/B, else the stored baseline's). Either is an `error` that says why: an
/// optimisation loop rewarded by these numbers must not be rewarded for skipping work the
/// checks missed.
fn speed_limit(
    result: &ShapeResult,
    reference_p50: Option<f64>,
    peak_tflops: f64,
    max_speedup: f64,
) -> Option<String> {
    let fastest = result
        .samples_us
        .iter()
        .flatten()
        .copied()
        .filter(|t| t.is_finite())
        .fold(f64::INFINITY, f64::min);
    if fastest <= 0.0 {
        return Some(format!(
            "a timed sample of the candidate took {fastest} µs: a time that is not positive cannot be measured"
        ));
    }
    let at_fastest = result.params.flops() / (fastest * 1e-6) / 1e12;
    if fastest.is_finite() && at_fastest > peak_tflops {
        return Some(format!(
            "the candidate's fastest sample ({fastest:.3} µs) would be {at_fastest:.0} TFLOP/s, above this GPU's peak dense tensor throughput ({peak_tflops:.0} TFLOP/s): the timed launches cannot have done the work"
        ));
    }
    let p50 = result.summary.as_ref()?.p50;
    let reference = reference_p50?;
    if p50 > 0.0 && reference / p50 > max_speedup {
        return Some(format!(
            "the candidate measured {:.1}× faster than its reference ({reference:.3} → {p50:.3} µs), more than gate.max_speedup ({max_speedup}×): a speed-up this large is refused as unproven; if it is real, raise gate.max_speedup in the config",
            reference / p50
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Dtype;

    fn measured(params: ShapeParams, samples: Vec<Vec<f64>>) -> ShapeResult {
        let mut r = ShapeResult::new(params);
        r.summary = Sample::new(samples.iter().flatten().copied().collect())
            .ok()
            .map(|s| s.summary());
        r.samples_us = samples;
        r
    }

    #[test]
    fn a_time_no_gpu_can_reach_is_an_error_not_an_improvement() {
        // b2h16s4096d128: 275 GFLOP. The shipped gate read 2.3 µs for it (120 PFLOP/s).
        let p = ShapeParams::new(2, 16, 4096, 128, false, Dtype::Float16);
        let peak = 2600.0; // TFLOP/s, an H200-like bound
        let fake = measured(p, vec![vec![2.3, 2.4], vec![2.3, 2.5]]);
        let why = speed_limit(&fake, Some(577.0), peak, 3.0).expect("refused");
        assert!(why.contains("peak dense tensor throughput"), "{why}");
        // A real time of the shipped kernel passes, against the same base.
        let real = measured(p, vec![vec![495.0, 497.0], vec![496.0, 498.0]]);
        assert_eq!(speed_limit(&real, Some(497.0), peak, 3.0), None);
    }

    #[test]
    fn more_than_max_speedup_faster_than_the_reference_is_an_error() {
        let p = ShapeParams::new(1, 8, 512, 64, false, Dtype::Float16);
        let r = measured(p, vec![vec![2.0, 2.1], vec![2.0, 2.1]]);
        let why = speed_limit(&r, Some(6.5), 1e9, 3.0).expect("refused");
        assert!(
            why.contains("3.2× faster") && why.contains("gate.max_speedup"),
            "{why}"
        );
        // Just under the limit passes; a raised limit lets a real rewrite through.
        assert_eq!(speed_limit(&r, Some(6.0), 1e9, 3.0), None);
        assert_eq!(speed_limit(&r, Some(6.5), 1e9, 4.0), None);
        // Without a reference only the peak applies.
        assert_eq!(speed_limit(&r, None, 1e9, 3.0), None);
        // A time that is not positive is never a measurement.
        let zero = measured(p, vec![vec![0.0, 2.0], vec![2.0, 2.1]]);
        assert!(speed_limit(&zero, None, 1e9, 3.0).is_some());
    }
}
