//! Turns measured shapes into verdicts: compare each with its references (A/B rounds in the
//! shape itself, the stored baseline through `stored_of`), then apply the one rule in
//! [`crate::verdict::decide`], per shape (no correction across the shapes of a run: each
//! shape's verdict depends on its own data only) — [`evaluate`]; and the planned two-stage
//! design around it, [`decide_planned`]: the one place that decides when a shape gets its
//! second look, for the pipeline, `selftest` and the calibration tests alike.

use crate::comparison::{Comparison, StageDesign, StoredSide};
use crate::config::GateSettings;
use crate::results::{ShapeResult, passed};
use crate::stats::{Rounds, SETTLED_LEVEL, StatsError};
use crate::verdict::{Evidence, Policy, Verdict, decide};

/// A baseline sample that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("baseline samples of shape {shape} are unusable: {cause}")]
pub struct BadBaseline {
    pub shape: String,
    pub cause: StatsError,
}

/// Fills `ab`, `stored`, `stored_other_method`, `verdict` and `decided_by` of every shape;
/// returns whether the shapes pass under `policy` ([`passed`]; a drift traced to the
/// runner, `shape.drift`, does not fail).
/// `stored_of` gives the stored baseline of a shape, or `None`; one measured by another
/// method (`StoredSide::other_method`) is not compared, and marks the shape.
///
/// Cost: per shape, O(N log N) for its N values (plus the bootstrap's resamples for sample
/// files of i.i.d. values).
pub fn evaluate(
    shapes: &mut [ShapeResult],
    mut stored_of: impl FnMut(&ShapeResult) -> Option<StoredSide>,
    gate: &GateSettings,
    policy: Policy,
) -> Result<bool, BadBaseline> {
    for shape in shapes.iter_mut() {
        shape.ab = None;
        shape.stored = None;
        shape.decided_by = None;
        shape.stored_other_method = false;
        // Nothing to compare: it could not be measured, or it already failed an integrity
        // check (which decide() turns into parity-fail).
        if shape.error.is_some() || shape.integrity.is_some() {
            continue;
        }
        let mut stored = stored_of(shape);
        // A stored baseline of another method is never compared: the shape is marked, and
        // the rule reads it (`verdict::decide`).
        if stored.as_ref().is_some_and(|s| s.other_method) {
            shape.stored_other_method = true;
            stored = None;
        }
        let cand = match Rounds::new(shape.samples_us.clone()) {
            Ok(c) => c,
            Err(e) => {
                shape.error = Some(format!("its samples cannot be compared: {e}"));
                continue;
            }
        };
        let design = shape.measurement.as_ref().and_then(|m| m.design);
        if !shape.base_samples_us.is_empty() {
            let paired = Rounds::new(shape.base_samples_us.clone())
                .and_then(|base| Comparison::paired(&base, &cand, design, gate));
            match paired {
                Ok(c) => shape.ab = Some(c),
                Err(e) => {
                    shape.error = Some(format!("its A/B rounds cannot be compared: {e}"));
                    continue;
                }
            }
        }
        if let Some(side) = stored {
            match Comparison::unpaired(&side, &cand, design, gate) {
                Ok(c) => shape.stored = Some(c),
                // The candidate's own rounds were fine above, so the stored side is at fault.
                Err(cause) => {
                    return Err(BadBaseline {
                        shape: shape.name.clone(),
                        cause,
                    });
                }
            }
        }
    }
    for shape in shapes.iter_mut() {
        let d = decide(
            gate,
            &Evidence {
                measured: shape.error.is_none(),
                parity_passed: shape.parity_passed(),
                ab: shape.ab.as_ref(),
                stored: shape.stored.as_ref(),
                stored_other_method: shape.stored_other_method,
            },
        );
        shape.verdict = d.verdict;
        shape.decided_by = d.decided_by;
    }
    Ok(passed(None, shapes, policy))
}

/// Whether the planned second look should measure this shape more: its first look neither
/// settled a regression or an improvement nor excluded one (a one-sided bound of the
/// deciding comparison at `1 − stats::SETTLED_LEVEL`, 99%, still reaches past ±m). Shapes
/// clearly inside the margin, and those already decided, stop; the second look's alpha was
/// set aside in advance either way, and stopping without a verdict spends none.
pub(crate) fn needs_second_look(shape: &ShapeResult, gate: &GateSettings) -> bool {
    if shape.error.is_some() || matches!(shape.verdict, Verdict::Regression | Verdict::Improvement)
    {
        return false;
    }
    let m = gate.max_p50_regression;
    shape.primary().is_some_and(|c| {
        let (low, high) = c
            .bounds_at(SETTLED_LEVEL)
            .unwrap_or((c.lower_bound, c.upper_bound));
        high >= 1.0 + m || low <= 1.0 - m
    })
}

/// The planned two-stage decision over `shapes` (their first stage measured): every shape
/// judged ([`evaluate`]); where the design has a second stage, `second_stage(i, shape)`
/// measures each shape whose first look leaves it open ([`needs_second_look`]) up to the
/// design's largest number of rounds; every shape judged again. Returns whether the shapes
/// pass under `policy`. The second look's alpha was set aside in advance
/// (`stats::STAGE1_ALPHA_SHARE`), so measuring more where the first look is open keeps every
/// shape's error rate at most alpha.
///
/// Cost: two [`evaluate`]s, and what `second_stage` costs.
pub fn decide_planned<E: From<BadBaseline>>(
    shapes: &mut [ShapeResult],
    design: StageDesign,
    gate: &GateSettings,
    policy: Policy,
    mut stored_of: impl FnMut(&ShapeResult) -> Option<StoredSide>,
    mut second_stage: impl FnMut(usize, &mut ShapeResult) -> Result<(), E>,
) -> Result<bool, E> {
    evaluate(shapes, &mut stored_of, gate, policy)?;
    if design.two_stage() {
        for (i, shape) in shapes.iter_mut().enumerate() {
            if needs_second_look(shape, gate) {
                second_stage(i, shape)?;
            }
        }
    }
    Ok(evaluate(shapes, stored_of, gate, policy)?)
}
