//! The stages phase: every shape's first stage, in the run's order (its parity checked
//! first: `parity::shape`), then the peers' rounds; the second stage of the shapes the
//! first look leaves open (`decide::open_shapes`); and what each stage ends with
//! ([`Measuring::finish`]): the measurements copied into the shape's result, and a time no
//! GPU can reach refused.

use std::time::Instant;

use anyhow::Result;

use super::peer::{PeerSession, PendingPeers};
use super::session::{Session, progress_bar};
use super::shape::{Failure, ShapeRun};
use super::stored::{Stored, median_of};
use crate::backend::{Backend, Facts, GpuError, Measure, Measurement, Side};
use crate::comparison::shape_seed;
use crate::config::{CacheMode, Config, ShapeParams, Tolerance};
use crate::results::{MeasurementInfo, ProbeResult, ShapeResult, StageDesign};
use crate::stats::Sample;
use crate::witness::SideWitness;

/// What measuring the shapes reads and never changes: the sides, the stage design, the
/// stored baseline, the device's speed limit.
pub(super) struct Measuring<'a> {
    /// Both sides in pairs (A/B), else the candidate alone.
    pub ab: bool,
    pub design: StageDesign,
    pub stored: &'a Stored,
    /// The device's peak dense tensor throughput, TFLOP/s.
    pub peak_tflops: f64,
}

/// The shapes as measured so far: their results, in the run's order, and each one's
/// measurement in progress beside it (`None`: it could not be measured, or its measuring
/// ended in an error).
pub(super) struct Measured {
    pub shapes: Vec<ShapeResult>,
    pub runs: Vec<Option<ShapeRun>>,
}

/// Every shape's first stage, in order: a shape whose kind failed a random shape (`probes`)
/// fails parity without being measured; the others are checked (`parity::shape`), begun on
/// the backend and measured for the design's first stage. The GPU's processes are read
/// before the first shape and after each one measured.
pub(super) fn first_stages(
    s: &mut Session,
    backend: &mut dyn Backend,
    m: &Measuring,
    probes: &[ProbeResult],
) -> Result<Measured> {
    s.sample_processes(backend);
    let run = s.run;
    s.bar = progress_bar(run.request.progress, run.shapes.len());
    let mut measured = Measured {
        shapes: Vec::with_capacity(run.shapes.len()),
        runs: Vec::with_capacity(run.shapes.len()),
    };
    for (i, params) in run.shapes.iter().enumerate() {
        s.bar.set_message(params.name());
        let mut result = ShapeResult::new(*params);
        if let Some(why) = super::parity::probe_failure(probes, params) {
            result.integrity = Some(why);
            measured.shapes.push(result);
            measured.runs.push(None);
            s.bar.inc(1);
            continue;
        }
        let seed = run.config.parity.seed.wrapping_add(i as u64);
        match first_stage(s, backend, m, &mut result, seed) {
            Ok(shape) => {
                m.finish(&run.config, &mut result, &shape);
                if result.error.is_some() {
                    shape.end(backend);
                    measured.runs.push(None);
                } else {
                    measured.runs.push(Some(shape));
                }
            }
            Err(e) => {
                e.record(&mut result)?;
                measured.runs.push(None);
            }
        }
        measured.shapes.push(result);
        s.bar.inc(1);
        s.sample_processes(backend);
    }
    Ok(measured)
}

/// One shape's first stage: its parity, the injected slowdown sized (selftest), the shape
/// begun on the backend with its sides, and the design's first-stage rounds.
fn first_stage(
    s: &mut Session,
    backend: &mut dyn Backend,
    m: &Measuring,
    result: &mut ShapeResult,
    seed: u64,
) -> Result<ShapeRun, Failure> {
    let params = result.params;
    let run = s.run;
    let config = &run.config;
    let tolerance = config.parity.tolerance(params.dtype);
    super::parity::shape(s, backend, m.ab, result, tolerance, seed)?;
    let inject_us = match run.request.inject {
        Some(fraction) => injected_reference(backend, config, m, &params, tolerance, seed)?
            .map(|p50| fraction * p50),
        None => None,
    };
    let sides: &[Side] = if m.ab {
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
    let mut shape = ShapeRun::new(handle, m.ab, seed, m.design);
    shape.more(backend, config, m.design.stage1)?;
    Ok(shape)
}

/// The p50 an injected slowdown is a fraction of: one round of the base, not kept, in A/B;
/// else the stored baseline's.
fn injected_reference(
    backend: &mut dyn Measure,
    config: &Config,
    m: &Measuring,
    params: &ShapeParams,
    tolerance: Tolerance,
    seed: u64,
) -> Result<Option<f64>, GpuError> {
    if !m.ab {
        return Ok(m.stored.p50(params));
    }
    let handle = backend.begin(
        params,
        &[Side::Base],
        &config.measure,
        tolerance,
        None,
        0,
        seed,
    )?;
    let mut run = ShapeRun::new(handle, false, seed, m.design);
    let r = run.more(backend, config, 1);
    let base = run.end(backend);
    r?;
    Ok(base.first().and_then(|m| median_of(&m.rounds)))
}

impl Measuring<'_> {
    /// Ends a measured stage of a shape: its measurements copied into its result, and an
    /// error where the candidate's time cannot be real ([`speed_limit`], against the base's
    /// p50 in A/B, else the stored baseline's), unless it already has one.
    pub fn finish(&self, config: &Config, result: &mut ShapeResult, run: &ShapeRun) {
        fill(result, run, config.measure.cache, self.design);
        let reference_p50 = match run.base() {
            Some(b) => median_of(&b.rounds),
            None => self.stored.p50(&result.params),
        };
        let max_speedup = config.gate.max_speedup;
        result.error = result
            .error
            .take()
            .or_else(|| speed_limit(result, reference_p50, self.peak_tflops, max_speedup));
    }
}

/// The peers, after every shape's first stage (their rounds never decide anything): the
/// worker started in the setup (`pending`) is waited for (or started now), and each
/// measured shape gets its peers' rounds. Returns the worker, which runs to the end of the
/// run (the results record what it measured with).
pub(super) fn peers(
    s: &mut Session,
    backend: &dyn Facts,
    pending: Option<PendingPeers>,
    measured: &mut Measured,
) -> PeerSession {
    let t = Instant::now();
    let run = s.run;
    let notes = &mut s.log.notes;
    let mut session = match pending {
        Some(pending) => pending.finish(notes),
        None => PeerSession::start(
            if run.request.peers {
                &run.config.peers
            } else {
                &[]
            },
            &run.shapes,
            notes,
        ),
    };
    s.timing.peers_start_s = t.elapsed().as_secs_f64();
    s.watch.add_ours(session.pid());
    for (shape, result) in measured.runs.iter_mut().zip(measured.shapes.iter_mut()) {
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
            &mut s.log.notes,
        ) {
            s.log
                .notes
                .push(format!("{}: the peers were not measured: {e}", result.name));
        }
    }
    s.timing.peers_s = t.elapsed().as_secs_f64();
    s.sample_processes(backend);
    session
}

/// The design's second stage (up to its largest number of rounds) of each shape in `open`
/// (`decide::open_shapes`), in order; the GPU's processes are read after each one.
pub(super) fn second_stages(
    s: &mut Session,
    backend: &mut dyn Backend,
    m: &Measuring,
    measured: &mut Measured,
    open: &[usize],
) -> Result<()> {
    let run = s.run;
    let config = &run.config;
    let rounds = m.design.max.saturating_sub(m.design.stage1);
    let shapes = measured.shapes.iter_mut().zip(measured.runs.iter_mut());
    for (_, (result, shape)) in shapes.enumerate().filter(|(i, _)| open.contains(i)) {
        s.bar.set_message(format!("{} (second stage)", result.name));
        if let Some(shape) = shape {
            match shape.more(backend, config, rounds) {
                Ok(()) => m.finish(config, result, shape),
                Err(e) => Failure::from(e).record(result)?,
            }
        }
        s.sample_processes(backend);
    }
    Ok(())
}

/// A side's unwitnessed time over its samples (`crate::witness`); `None` where the device
/// does not witness them.
fn side_witness(m: &Measurement) -> Option<SideWitness> {
    SideWitness::of(
        &m.rounds,
        &m.unwitnessed_us,
        &m.after_end_us,
        &m.after_checks_us,
        m.launches_per_sample,
    )
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
            result.tflops = Some(result.params.tflops(summary.p50));
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
        unwitnessed: side_witness(cand).map(|c| {
            let base = run.base().and_then(side_witness);
            let control = run.control().and_then(side_witness);
            crate::witness::record(&c, base.as_ref(), control.as_ref())
        }),
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
    let at_fastest = result.params.tflops(fastest);
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
