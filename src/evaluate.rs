//! Turns measured shapes into verdicts: compare each with its baseline, Holm-correct the
//! run's p-values, then apply the one rule in [`crate::verdict::decide`].

use crate::comparison::{Comparison, apply_holm, shape_seed};
use crate::config::GateSettings;
use crate::results::ShapeResult;
use crate::stats::{Rounds, StatsError};
use crate::verdict::{Evidence, decide, gate_passes};

/// A baseline sample that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("baseline samples of shape {shape} are unusable: {cause}")]
pub struct BadBaseline {
    pub shape: String,
    pub cause: StatsError,
}

/// Fills `comparison` and `verdict` of every shape; returns whether the gate passes.
/// `baseline_of` gives the stored rounds for a shape, or `None` when there is none.
pub fn evaluate(
    shapes: &mut [ShapeResult],
    mut baseline_of: impl FnMut(&ShapeResult) -> Option<Vec<Vec<f64>>>,
    gate: &GateSettings,
) -> Result<bool, BadBaseline> {
    for shape in shapes.iter_mut() {
        shape.comparison = None;
        if shape.error.is_some() {
            continue;
        }
        let Some(base) = baseline_of(shape) else {
            continue;
        };
        let base = Rounds::new(base).map_err(|cause| BadBaseline {
            shape: shape.name.clone(),
            cause,
        })?;
        match Rounds::new(shape.samples_us.clone()) {
            Ok(cand) => {
                let seed = shape_seed(gate.seed, &shape.name);
                match Comparison::of(&base, &cand, gate, seed) {
                    Ok(c) => shape.comparison = Some(c),
                    Err(e) => shape.error = Some(format!("it could not be compared: {e}")),
                }
            }
            Err(e) => shape.error = Some(format!("its samples cannot be compared: {e}")),
        }
    }
    apply_holm(shapes.iter_mut().filter_map(|s| s.comparison.as_mut()));
    for shape in shapes.iter_mut() {
        shape.verdict = decide(
            gate,
            &Evidence {
                measured: shape.error.is_none(),
                parity_passed: shape.parity.as_ref().map(|p| p.passed()),
                comparison: shape.comparison.as_ref(),
            },
        );
    }
    Ok(gate_passes(shapes.iter().map(|s| s.verdict)))
}
