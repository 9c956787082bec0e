//! One shape's measurement in progress ([`ShapeRun`]): its rounds or pairs, a pair the clock
//! hit on one side measured again ([`unbalanced`]), its peers' rounds; and why a shape has no
//! measurement ([`Failure`]). The engine's bookkeeping of a shape lives here, not in the
//! backend: each side's [`Measurement`], each pair's order, a pair dropped to be measured
//! again; the backend returns what each call measured and holds only the device's state,
//! behind the [`ShapeHandle`] kept here.

use anyhow::{Result, bail};

use super::peer::PeerSession;
use crate::backend::{Energy, Facts, GpuError, Measure, Measurement, ShapeHandle};
use crate::config::{Config, ShapeParams};
use crate::results::PairOrder;
use crate::results::{RemeasuredPair, ShapeResult, StageDesign};

/// One shape's measurement in progress: what each side measured, the order of each pair, the
/// re-measuring; the backend's handle of the shape's device state.
pub(super) struct ShapeRun {
    handle: ShapeHandle,
    /// Two sides in pairs (A/B, or the baseline commit's kernels against the candidate's),
    /// or the candidate alone.
    pub ab: bool,
    /// What each side measured so far, in the order the shape was begun with.
    sides: Vec<Measurement>,
    /// The witness's control of a side alone: [`crate::witness::CONTROL_SAMPLES_PER_ROUND`]
    /// samples of the harness's spin right after each of its rounds (none in A/B, where each
    /// side is judged against the other; none where the device does not witness).
    control: Measurement,
    /// The order of each pair kept.
    pub orders: Vec<PairOrder>,
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
    /// A shape begun on the backend (`ab`: two sides in pairs, else one), with its
    /// re-measuring budget: a quarter of the design's pairs, at least 2.
    pub fn new(handle: ShapeHandle, ab: bool, seed: u64, design: StageDesign) -> ShapeRun {
        ShapeRun {
            handle,
            ab,
            sides: vec![Measurement::empty(); if ab { 2 } else { 1 }],
            control: Measurement::empty(),
            orders: Vec::new(),
            seed,
            remeasured: Vec::new(),
            remeasure_budget: (design.max / 4).max(2),
        }
    }

    /// Measures `n` more rounds (pairs, in A/B).
    pub(crate) fn more(
        &mut self,
        backend: &mut dyn Measure,
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
        backend: &dyn Facts,
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

    /// One round (one pair, in A/B); a pair the clock hit on one side is measured again. A
    /// side alone's round is followed by the witness's control, so that the two are sampled
    /// in the same stretch of time, as the sides of a pair are: the harness's unwitnessed
    /// time moves over a run (on an H100, 2026-12-05, a control taken once before the shapes
    /// lay up to 15 µs from the shapes' rounds, docs/PERF.md), and what is judged is the
    /// difference.
    fn one(&mut self, backend: &mut dyn Measure, config: &Config) -> Result<(), GpuError> {
        if !self.ab {
            let round = backend.round(&self.handle, &self.sides)?;
            if let Some(m) = self.sides.last_mut() {
                m.push(round);
            }
            let samples = crate::witness::CONTROL_SAMPLES_PER_ROUND;
            if let Some(control) = backend.control(&config.measure, samples)? {
                self.control.push(control);
            }
            return Ok(());
        }
        loop {
            let pair = backend.pair(&self.handle, &self.sides)?;
            let [base, cand] = pair.rounds;
            let (eb, ec) = (base.clock_events, cand.clock_events);
            self.sides[0].push(base);
            self.sides[1].push(cand);
            self.orders.push(pair.order);
            if self.remeasure_budget == 0 || !unbalanced(eb, ec, config.measure.samples_per_round) {
                return Ok(());
            }
            self.drop_last();
            self.remeasure_budget -= 1;
            self.remeasured.push(RemeasuredPair {
                pair: self.sides[1].rounds.len() as u32 + 1,
                base_clock_events: eb,
                cand_clock_events: ec,
            });
        }
    }

    /// Forgets the last pair (its rounds of both sides, its order), to measure it again.
    fn drop_last(&mut self) {
        for m in &mut self.sides {
            m.drop_last();
        }
        self.orders.pop();
    }

    /// `rounds` energy windows of every side (after the timed rounds), appended to each
    /// side's measurement. `Ok(Some(why))`: the device cannot measure energy at all.
    pub(crate) fn energy(
        &mut self,
        backend: &mut dyn Measure,
        rounds: u32,
        updates: u32,
    ) -> Result<Option<String>, GpuError> {
        match backend.energy(&self.handle, &self.sides, rounds, updates)? {
            Energy::Unavailable(why) => Ok(Some(why)),
            Energy::Windows(windows) => {
                for (m, w) in self.sides.iter_mut().zip(windows) {
                    m.energy.extend(w);
                }
                Ok(None)
            }
        }
    }

    /// The candidate's measurement (the last side).
    pub(crate) fn cand(&self) -> &Measurement {
        &self.sides[usize::from(self.ab)]
    }

    /// The base's (or the baseline commit's), in A/B.
    pub(crate) fn base(&self) -> Option<&Measurement> {
        self.ab.then(|| &self.sides[0])
    }

    /// The witness's control, round by round beside a side alone's rounds; `None` in A/B or
    /// where the device does not witness.
    pub(crate) fn control(&self) -> Option<&Measurement> {
        (!self.ab && !self.control.rounds.is_empty()).then_some(&self.control)
    }

    /// Ends the shape on the backend (its held buffers released); what each side measured.
    pub(crate) fn end(self, backend: &mut dyn Measure) -> Vec<Measurement> {
        backend.end(self.handle);
        self.sides
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
