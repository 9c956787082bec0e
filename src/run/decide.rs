//! The decisions of a run: two interim looks that plan what to measure, and the one decision
//! that gives the verdicts.
//!
//! - [`open_shapes`], after the first stages: the shapes the planned second stage measures
//!   more (`crate::evaluate::open_shapes`, the rule `selftest` and the calibration share);
//! - [`drifting`], after the second stage: the shapes whose verdict would be a drift, for the
//!   drift phase to trace;
//! - [`verdicts`], after everything measured: the GPU's processes read a last time, a GPU
//!   shared with another process judged ([`judge_shared`]), the host's clock's witness of
//!   the samples judged where it was not shared ([`judge_witness`]), and every shape decided
//!   (`crate::evaluate::evaluate`) on all it holds (both stages, a drift traced, the energy
//!   windows' checks). The looks decide copies of the shapes; these verdicts are the only
//!   ones the results hold.
//!
//! Every decision compares with the stored baseline except where the GPU was seen shared
//! with another process by then ([`stored_side`]).

use anyhow::Result;

use super::session::Session;
use super::sharing::ProcessWatch;
use super::stored::Stored;
use crate::backend::Facts;
use crate::comparison::StoredSide;
use crate::results::ShapeResult;
use crate::verdict::Verdict;

/// The shapes whose first look leaves them open, to be measured up to the design's largest
/// number of rounds (none where the design has one stage).
pub(super) fn open_shapes(
    s: &Session,
    stored: &Stored,
    shapes: &[ShapeResult],
) -> Result<Vec<usize>> {
    let shared = s.watch.shared();
    Ok(crate::evaluate::open_shapes(
        shapes,
        s.run.design(),
        &s.run.config.gate,
        |shape| stored_side(stored, shared, shape),
    )?)
}

/// The shapes whose verdict on what both stages measured would be a drift (an A/B that
/// shows no change, slower than the stored baseline): the drift phase traces them.
pub(super) fn drifting(s: &Session, stored: &Stored, shapes: &[ShapeResult]) -> Result<Vec<usize>> {
    let shared = s.watch.shared();
    let look = crate::evaluate::interim_look(
        shapes,
        |shape| stored_side(stored, shared, shape),
        &s.run.config.gate,
    )?;
    Ok(look
        .iter()
        .enumerate()
        .filter(|(_, shape)| shape.verdict == Verdict::Drift)
        .map(|(i, _)| i)
        .collect())
}

/// The one decision of the run: the GPU's processes read a last time; where another process
/// shared the GPU, the stored baseline's comparisons are not judged ([`judge_shared`]); then
/// every shape's verdict ([`crate::evaluate::evaluate`]). Returns whether the shapes pass
/// under the run's policy.
pub(super) fn verdicts(
    s: &mut Session,
    backend: &dyn Facts,
    stored: &Stored,
    shapes: &mut [ShapeResult],
) -> Result<bool> {
    s.sample_processes(backend);
    let shared = s.watch.shared();
    if shared {
        judge_shared(&s.watch, shapes, stored, &mut s.log.notes);
    }
    judge_witness(&s.watch, &s.run.config.gate, shapes, &mut s.log.notes);
    Ok(crate::evaluate::evaluate(
        shapes,
        |shape| stored_side(stored, shared, shape),
        &s.run.config.gate,
        s.run.policy(),
    )?)
}

/// The host's clock as the witness of every shape's samples (`crate::witness`): a shape
/// still without an error or integrity failure whose recorded unwitnessed times disagree
/// gets the witness's error. Not judged where another process shared the GPU (its work can
/// fall between a sample's lead-in and its events on either side), nor where the config
/// says so (`gate.witness: false`): a note says which.
fn judge_witness(
    watch: &ProcessWatch,
    gate: &crate::config::GateSettings,
    shapes: &mut [ShapeResult],
    notes: &mut Vec<String>,
) {
    let off = (!gate.witness).then(|| {
        "the host's clock as the witness of the samples is recorded, not judged: the config sets gate.witness: false".to_string()
    });
    if let Some(note) = off.or_else(|| watch.witness_note()) {
        if shapes.iter().any(|s| s.unwitnessed().is_some()) {
            notes.push(note);
        }
        return;
    }
    let judged = shapes
        .iter_mut()
        .filter(|s| s.error.is_none() && s.integrity.is_none());
    for s in judged {
        if let Some(why) = s.unwitnessed().and_then(crate::witness::judge_recorded) {
            s.error = Some(why);
        }
    }
    // A label says what was computed: alone, the first of a pair's two tests is judged
    // against the control and confirmed through the checks; the second is not judged alone
    // (the control's span is through the harness's own work, not the same checks).
    let alone = shapes
        .iter()
        .filter_map(ShapeResult::unwitnessed)
        .filter(|u| u.base_us.is_none() && u.control_us.is_some())
        .count();
    if alone > 0 {
        notes.push(format!(
            "{alone} shape(s) measured without a base: the host's clock judged each against the harness's own spin up to the end event, confirmed through the end of the checks; the time through the checks was not judged alone, so a kernel that also signals its end early is not caught here (an A/B judges both: docs/MEASURING.md, \"The host's clock witnesses every sample\")"
        ));
    }
}

/// The stored side of a shape for its comparison: none where the run shares the GPU with
/// another process (`shared`: its timings were slowed by an unknown amount that nothing
/// measured beside them cancels).
fn stored_side(stored: &Stored, shared: bool, s: &ShapeResult) -> Option<StoredSide> {
    if shared {
        return None;
    }
    stored.side(&s.params)
}

/// A run another process shared the GPU with (`sharing::ProcessWatch`): the comparison with
/// the stored baseline is not judged (the verdicts are decided without it, with a note); a
/// shape whose only reference is the stored baseline (no A/B) then has no verdict, an
/// `error` that says why — never a pass that nothing judged.
fn judge_shared(
    watch: &ProcessWatch,
    shapes: &mut [ShapeResult],
    stored: &Stored,
    notes: &mut Vec<String>,
) {
    if stored.file.is_none() {
        return;
    }
    let mut any = false;
    for s in shapes.iter_mut() {
        // Only where the stored baseline would have judged it (one of another method judges
        // nothing either way).
        if !stored.judges(&s.params) {
            continue;
        }
        any = true;
        if s.only_stored_could_judge() {
            s.error = Some(watch.unjudged_error());
        }
    }
    if any {
        notes.extend(watch.stored_note());
    }
}
