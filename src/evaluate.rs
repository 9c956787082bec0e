//! Turns measured shapes into verdicts: compare each with its references (A/B rounds in the
//! shape itself, the stored baseline through `stored_of`), then apply the one rule in
//! [`crate::verdict::decide`], per shape (no correction across the shapes of a run: each
//! shape's verdict depends on its own data only) — [`evaluate`]; and the planned two-stage
//! design before it, [`open_shapes`]: the one place that decides which shapes get a second
//! look, for the pipeline, `selftest` and the calibration tests alike, from an
//! [`interim_look`] (a plan of what to measure, never a verdict).

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
            match shape.paired_comparison(&cand, gate) {
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

/// An interim look at `shapes`: what [`evaluate`] would decide of them now, decided on a
/// copy (the shapes themselves keep nothing of it). It plans what to measure next (the
/// second stage: [`open_shapes`]; the drifts the pipeline traces) and is never a verdict:
/// the verdicts are the one [`evaluate`] after everything is measured.
///
/// Cost: one [`evaluate`], and a copy of the shapes.
pub(crate) fn interim_look(
    shapes: &[ShapeResult],
    stored_of: impl FnMut(&ShapeResult) -> Option<StoredSide>,
    gate: &GateSettings,
) -> Result<Vec<ShapeResult>, BadBaseline> {
    let mut look = shapes.to_vec();
    evaluate(&mut look, stored_of, gate, Policy::default())?;
    Ok(look)
}

/// The shapes (their indices in `shapes`, in order) that the planned second stage measures
/// up to the design's largest number of rounds: none where the design has one stage, else
/// each shape whose first look ([`interim_look`]) leaves it open ([`needs_second_look`]).
/// The one rule of when a shape gets its second look, for the pipeline, `selftest` and the
/// calibration tests alike; each then decides once ([`evaluate`]) on what it measured. The
/// second look's alpha was set aside in advance (`stats::STAGE1_ALPHA_SHARE`), so measuring
/// more where the first look is open keeps every shape's error rate at most alpha.
///
/// Cost: one [`evaluate`] where the design has two stages.
pub fn open_shapes(
    shapes: &[ShapeResult],
    design: StageDesign,
    gate: &GateSettings,
    stored_of: impl FnMut(&ShapeResult) -> Option<StoredSide>,
) -> Result<Vec<usize>, BadBaseline> {
    if !design.two_stage() {
        return Ok(Vec::new());
    }
    Ok(interim_look(shapes, stored_of, gate)?
        .iter()
        .enumerate()
        .filter(|(_, shape)| needs_second_look(shape, gate))
        .map(|(i, _)| i)
        .collect())
}

/// Says, for every shape compared with a stored run (`stored` present), whether that run
/// launched it otherwise: a warning where the stored comparison decided the shape's verdict
/// (it then rests on a time that includes the launch), a note elsewhere. Pushes onto
/// `warnings` and `notes`. O(shapes).
pub fn launch_findings(
    shapes: &[ShapeResult],
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    for s in shapes.iter().filter(|s| s.stored.is_some()) {
        if let Some(m) = crate::launch::launched_differently(
            &s.name,
            s.launch.as_ref(),
            s.stored_launch.as_ref(),
        ) {
            if s.decided_by == Some(crate::comparison::Reference::Stored) {
                warnings.push(m);
            } else {
                notes.push(m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};

    use super::*;
    use crate::config::{Dtype, ShapeParams};

    /// A/B rounds of one shape, `pairs` pairs of 10 values, the candidate `scale` times the
    /// base.
    fn shape(seed: u64, pairs: usize, scale: f64) -> ShapeResult {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let noise = Normal::new(100.0, 0.5).unwrap();
        let mut round =
            |k: f64| -> Vec<f64> { (0..10).map(|_| k * noise.sample(&mut rng)).collect() };
        let mut s = ShapeResult::new(ShapeParams::new(1, 8, 512, 64, false, Dtype::Float16));
        s.base_samples_us = (0..pairs).map(|_| round(1.0)).collect();
        s.samples_us = (0..pairs).map(|_| round(scale)).collect();
        s
    }

    #[test]
    fn an_interim_look_plans_on_a_copy_and_decides_nothing() {
        let gate = GateSettings::default();
        let shapes = vec![shape(1, 8, 1.0), shape(2, 8, 1.3)];
        let before = shapes.clone();
        let look = interim_look(&shapes, |_| None, &gate).unwrap();
        assert_eq!(shapes, before, "the shapes keep nothing of the look");
        assert!(look.iter().all(|s| s.ab.is_some()));
        assert_eq!(look[1].verdict, Verdict::Regression);
        // The verdict is the one evaluate's, the same as the look's on the same data.
        let mut decided = shapes;
        evaluate(&mut decided, |_| None, &gate, Policy::default()).unwrap();
        assert_eq!(decided, look);
    }

    #[test]
    fn only_a_two_stage_design_opens_shapes() {
        let gate = GateSettings::default();
        // A change near the margin: the first look can neither settle nor exclude it.
        let shapes = vec![shape(3, 8, 1.0), shape(4, 8, 1.02), shape(5, 8, 1.5)];
        let two = StageDesign { stage1: 8, max: 24 };
        let open = open_shapes(&shapes, two, &gate, |_| None).unwrap();
        assert_eq!(open, [1], "open: {open:?}");
        let one = StageDesign { stage1: 8, max: 8 };
        assert!(
            open_shapes(&shapes, one, &gate, |_| None)
                .unwrap()
                .is_empty()
        );
    }
}
