//! The energy phase: energy windows of every measured shape after everything timed
//! (`crate::energy`), where the run asks for them. Last of the measuring: the windows run back
//! to back at full power (on an H100, at the power cap), so nothing timed comes after them
//! and the clocks "after" are the timed part's.

use std::time::Instant;

use super::session::Session;
use super::stages::Measured;
use crate::backend::{GpuError, Measure, Measurement};
use crate::energy::{EnergyInfo, EnergyRound, ShapeEnergy, SideEnergy};
use crate::results::ShapeResult;

/// Measures the energy windows (where asked), then ends every shape still measured: the
/// end of the measuring. Returns the shapes' results (a side whose replays failed the checks
/// in a window fails parity on that shape) and the windows, where measured.
pub(super) fn measure(
    s: &mut Session,
    backend: &mut dyn Measure,
    mut measured: Measured,
) -> (Vec<ShapeResult>, Option<EnergyInfo>) {
    let t = Instant::now();
    let energy = windows(s, backend, &mut measured);
    for run in measured.runs.into_iter().flatten() {
        run.end(backend);
    }
    s.timing.energy_s = t.elapsed().as_secs_f64();
    (measured.shapes, energy)
}

/// Energy windows of every measured shape after its timed pairs, when the run asks for them
/// and the config has `measure.energy_rounds`. A side whose replays fail the checks in a
/// window fails parity on that shape, as in a timed sample; any other error, or a GPU that
/// cannot read energy, leaves the figures out with a note: energy never prevents or decides
/// a verdict.
fn windows(
    s: &mut Session,
    backend: &mut dyn Measure,
    measured: &mut Measured,
) -> Option<EnergyInfo> {
    let run = s.run;
    let m = &run.config.measure;
    if !run.energy() || m.energy_rounds == 0 {
        return None;
    }
    let mut info = EnergyInfo {
        rounds: m.energy_rounds,
        updates: m.energy_updates,
        ..EnergyInfo::default()
    };
    let confidence = run.config.gate.confidence;
    for (shape, result) in measured.runs.iter_mut().zip(measured.shapes.iter_mut()) {
        let Some(shape) = shape else { continue };
        s.bar.set_message(format!("{} (energy)", result.name));
        match shape.energy(backend, m.energy_rounds, m.energy_updates) {
            Ok(Some(why)) => {
                s.log
                    .notes
                    .push(format!("energy per call not measured: {why}"));
                info.unavailable = Some(why);
                return Some(info);
            }
            Ok(None) => {}
            Err(GpuError::Integrity(why)) => {
                result.integrity = Some(why);
                continue;
            }
            Err(e) => {
                s.log.notes.push(format!(
                    "{}: energy per call not measured: {e}",
                    result.name
                ));
                continue;
            }
        }
        let flops = result.params.flops();
        let side = |m: &Measurement| SideEnergy::from_rounds(m.energy.clone(), flops, confidence);
        result.energy = Some(ShapeEnergy {
            candidate: side(shape.cand()),
            base: shape.base().map(side),
        });
    }
    let rounds: Vec<&EnergyRound> = measured
        .shapes
        .iter()
        .filter_map(|s| s.energy.as_ref())
        .flat_map(|e| {
            e.candidate
                .rounds
                .iter()
                .chain(e.base.iter().flat_map(|b| &b.rounds))
        })
        .collect();
    info.source = rounds.first().map(|r| r.source);
    let per_update: Vec<f64> = rounds
        .iter()
        .filter(|r| r.updates >= 2)
        .map(|r| r.span_ms / f64::from(r.updates - 1))
        .collect();
    info.update_ms = crate::stats::median(&per_update);
    let brackets: Vec<f64> = rounds.iter().map(|r| r.read_ms).collect();
    info.read_ms = crate::stats::median(&brackets);
    Some(info)
}
