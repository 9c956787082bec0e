//! One shape's measurement in progress ([`ShapeRun`]): its rounds or pairs, a pair the clock
//! hit on one side measured again ([`unbalanced`]), its peers' rounds; and why a shape has no
//! measurement ([`Failure`]).

use anyhow::{Result, bail};

use super::peer::PeerSession;
use crate::backend::{Backend, GpuError, Measurement, ShapeId};
use crate::config::{Config, ShapeParams};
use crate::results::{RemeasuredPair, ShapeResult, StageDesign};

/// One shape's measurement in progress: the backend holds its measurements; this holds the
/// re-measuring.
pub(super) struct ShapeRun {
    pub id: ShapeId,
    /// Two sides in pairs (A/B, or the baseline commit's kernels against the candidate's),
    /// or the candidate alone.
    pub ab: bool,
    seed: u64,
    /// Pairs measured again because a clock change hit one side's samples (the rule of
    /// [`unbalanced`]), and how many more it may take.
    pub remeasured: Vec<RemeasuredPair>,
    remeasure_budget: u32,
}

/// A pair is measured again when the SM clock moved across this many more samples of one
/// side than of the other (at least 2, and 30% of a round's samples): pairs alternate their
/// samples so that clock swings hit both sides alike, and this is the case where they did
/// not. The rule is fixed before anything is measured, looks only at clock readings (never at
/// the times), and treats both sides alike, so it cannot favour either.
pub(super) fn unbalanced(base_events: u32, cand_events: u32, samples_per_round: u32) -> bool {
    let limit = 2u32.max((f64::from(samples_per_round) * 0.3).ceil() as u32);
    base_events.abs_diff(cand_events) >= limit
}

impl ShapeRun {
    /// A shape begun on the backend (`ab`: two sides in pairs), with its re-measuring budget:
    /// a quarter of the design's pairs, at least 2.
    pub fn new(id: ShapeId, ab: bool, seed: u64, design: StageDesign) -> ShapeRun {
        ShapeRun {
            id,
            ab,
            seed,
            remeasured: Vec::new(),
            remeasure_budget: (design.max / 4).max(2),
        }
    }

    /// Measures `n` more rounds (pairs, in A/B).
    pub(crate) fn more(
        &mut self,
        backend: &mut dyn Backend,
        config: &Config,
        n: u32,
    ) -> Result<(), GpuError> {
        for _ in 0..n {
            self.one(backend, config)?;
        }
        Ok(())
    }

    /// The peers' rounds of this shape ([`crate::peers::PEER_ROUNDS`] of every peer, one
    /// after another), after every shape's first stage: the worker, started beside the
    /// setup, has had the whole first stage to import PyTorch and build its plans, so no one
    /// waits for it; then the worker frees the shape.
    /// `results`: one per peer that runs ([`PeerSession::results`]), filled here.
    pub(crate) fn peer_rounds(
        &self,
        backend: &dyn Backend,
        params: &ShapeParams,
        config: &Config,
        peers: &mut PeerSession,
        results: &mut [crate::peers::PeerResult],
        notes: &mut Vec<String>,
    ) -> Result<(), GpuError> {
        if results.is_empty() {
            return Ok(());
        }
        let sets = backend.input_sets(params, &config.measure)?;
        for _ in 0..crate::peers::PEER_ROUNDS {
            peers.round(results, params, &config.measure, sets, self.seed, notes);
        }
        peers.release(notes);
        Ok(())
    }

    /// One round (one pair, in A/B); a pair the clock hit on one side is measured again.
    fn one(&mut self, backend: &mut dyn Backend, config: &Config) -> Result<(), GpuError> {
        if !self.ab {
            return backend.round(self.id);
        }
        loop {
            backend.pair(self.id)?;
            let events = |i: usize| {
                backend
                    .measurement(self.id, i)
                    .clock_events
                    .last()
                    .copied()
                    .unwrap_or(0)
            };
            let (eb, ec) = (events(0), events(1));
            if self.remeasure_budget == 0 || !unbalanced(eb, ec, config.measure.samples_per_round) {
                return Ok(());
            }
            backend.drop_last(self.id);
            self.remeasure_budget -= 1;
            self.remeasured.push(RemeasuredPair {
                pair: backend.measurement(self.id, 1).rounds.len() as u32 + 1,
                base_clock_events: eb,
                cand_clock_events: ec,
            });
        }
    }

    pub(crate) fn cand<'b>(&self, backend: &'b dyn Backend) -> &'b Measurement {
        backend.measurement(self.id, usize::from(self.ab))
    }

    pub(crate) fn base<'b>(&self, backend: &'b dyn Backend) -> Option<&'b Measurement> {
        self.ab.then(|| backend.measurement(self.id, 0))
    }
}

/// Why a shape has no measurement: an error (it could not be measured), an integrity
/// failure (the kernel did not do the checked work every time: a parity failure), or the
/// run's GPU-time budget spent (which ends the whole run: exit 2).
pub(super) enum Failure {
    Error(String),
    Integrity(String),
    Budget(String),
}

impl From<GpuError> for Failure {
    fn from(e: GpuError) -> Failure {
        match e {
            GpuError::Integrity(why) => Failure::Integrity(why),
            GpuError::Budget(why) => Failure::Budget(why),
            other => Failure::Error(other.to_string()),
        }
    }
}

impl Failure {
    /// Records the failure on its shape; a spent budget ends the run instead.
    pub fn record(self, result: &mut ShapeResult) -> Result<()> {
        match self {
            Failure::Error(e) => result.error = Some(e),
            Failure::Integrity(why) => result.integrity = Some(why),
            Failure::Budget(why) => bail!("{why}"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_the_clock_hit_on_one_side_only_is_unbalanced() {
        assert!(!unbalanced(3, 3, 10));
        assert!(!unbalanced(0, 2, 10));
        assert!(unbalanced(0, 3, 10));
        assert!(unbalanced(5, 0, 4), "at least 2 samples");
        assert!(!unbalanced(1, 0, 4));
    }
}
