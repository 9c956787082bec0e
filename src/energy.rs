//! Energy per call, from NVML's board-energy counter: what one side's kernel costs in
//! millijoules per call and what it delivers in TFLOP/s per watt, with an interval over
//! rounds. Reported and stored, never part of a verdict.
//!
//! The figures themselves; `run::energy` is the phase that measures them and
//! `report::energy` the table that shows them.
//!
//! How it is measured (`gpu::energy_windows::energy_window`): after everything timed, each side of a
//! shape gets `measure.energy_rounds` windows of its own graph replayed back to back (every
//! replay poisoned, a secret quarter of them checked like a timed sample, so a kernel that
//! skips work in a window fails parity). NVML's total-energy counter does not count
//! continuously: on the H100 it moves every ~100 ms (bench/nvml_energy_probe.py,
//! docs/PERF.md), and each read takes 2–5 ms. A reading around a 2 ms sample therefore says
//! nothing, and one around a window is off by up to a whole update at each end. So a thread
//! of its own reads the counter back to back while the window runs, bracketing each move
//! between the read that still saw the old value and the one that saw the new; the window
//! runs until the counter has moved `measure.energy_updates` times after its first move and
//! two moves that far apart span a time known to a third of [`MAX_RESOLUTION`]. The board's
//! mean power is the energy between the best-timed such pair over the time between them.
//! Where the counter is missing, the mean of NVML's power samples inside the window stands
//! in. Energy per call is that power times one call's GPU time in the window's replays
//! (W · ms = mJ): the poisoning and checks between replays are assumed to draw the same
//! power, and a window where they take more than half the GPU time is not used.
//!
//! A round's figure is withheld when it cannot resolve the energy: fewer than two counter
//! moves, or an uncertainty (the reads' timing and the counter's 1 mJ step) above
//! [`MAX_RESOLUTION`] of the window's energy; and when its calls read shorter than
//! [`MIN_CALL_SHARE`] of the side's timed p50 per call (records the kernel rewrote). A
//! side's figure needs two usable rounds.

use serde::{Deserialize, Serialize};

/// The largest uncertainty of one window's energy, as a fraction of it, for its round to be
/// used: past it the counter's resolution, not the kernel, would set the figure.
pub(crate) const MAX_RESOLUTION: f64 = 0.03;

/// The smallest share of a window's GPU time that must be the kernel's own replays.
pub(crate) const MIN_REPLAY_FRACTION: f64 = 0.5;

/// The shortest a window's call may read against the side's timed p50 per call: back to
/// back, a call is no faster than in the timed samples (the clocks, if anything, lower); a
/// window's events read shorter than that are records the kernel rewrote, which the host's
/// clock witnesses for the timed samples (`crate::witness`) but not in a window.
pub(crate) const MIN_CALL_SHARE: f64 = 0.9;

/// Where a window's energy came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnergySource {
    /// `nvmlDeviceGetTotalEnergyConsumption` between two of its moves.
    Counter,
    /// The mean of `nvmlDeviceGetSamples(NVML_TOTAL_POWER_SAMPLES)` inside the window.
    PowerSamples,
}

/// One side's energy window in one round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnergyRound {
    pub source: EnergySource,
    /// Mean board power over the span, W.
    pub power_w: f64,
    /// One call's mean GPU time in the window's replays, ms.
    pub call_ms: f64,
    /// Calls replayed in the window.
    pub calls: u64,
    /// Time between the first and the last counter move used (the window itself for power
    /// samples), ms.
    pub span_ms: f64,
    /// Energy counted over the span, mJ.
    pub span_mj: f64,
    /// Counter moves (or power samples) inside the span.
    pub updates: u32,
    /// The widest bracket of a move's time, ms: from the start of the read before the move
    /// to the end of the read that saw it. Each end of the span is within half of it.
    pub read_ms: f64,
    /// Share of the window's GPU time spent in the kernel's replays (the rest: poisoning
    /// and checking its outputs).
    pub replay_fraction: f64,
    /// The side's p50 per call over its timed samples, ms (their times witnessed by the
    /// host's clock); `None` in files of earlier versions and where none was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_call_ms: Option<f64>,
}

impl EnergyRound {
    /// Millijoules per call: mean power × one call's time.
    pub(crate) fn mj_per_call(&self) -> f64 {
        self.power_w * self.call_ms
    }

    /// The window's relative uncertainty, at worst: both ends' timing (half a bracket each)
    /// over the span, plus the counter's 1 mJ step over the energy counted.
    pub(crate) fn resolution(&self) -> f64 {
        let timing = self.read_ms / self.span_ms.max(f64::MIN_POSITIVE);
        let step = match self.source {
            EnergySource::Counter => 1.0 / self.span_mj.max(f64::MIN_POSITIVE),
            EnergySource::PowerSamples => 0.0,
        };
        timing + step
    }

    /// Why this round's figure cannot be used, if it cannot.
    pub(crate) fn unusable(&self) -> Option<String> {
        let finite = [
            self.power_w,
            self.call_ms,
            self.span_ms,
            self.span_mj,
            self.read_ms,
            self.replay_fraction,
        ]
        .iter()
        .all(|v| v.is_finite() && *v >= 0.0);
        if !finite || self.power_w <= 0.0 || self.call_ms <= 0.0 || self.calls == 0 {
            return Some("the window's readings are not positive numbers".into());
        }
        if self.updates < 2 {
            return Some(format!(
                "the energy counter moved {} time(s) in the window, too few to time it",
                self.updates
            ));
        }
        let r = self.resolution();
        if r > MAX_RESOLUTION {
            return Some(format!(
                "the counter resolves the window's {:.0} mJ to only ±{:.1}% (a move every ~{:.0} ms, each timed to within {:.1} ms)",
                self.span_mj,
                r * 100.0,
                self.span_ms / f64::from(self.updates.saturating_sub(1).max(1)),
                self.read_ms
            ));
        }
        if self.replay_fraction < MIN_REPLAY_FRACTION {
            return Some(format!(
                "the kernel ran only {:.0}% of the window (the output checks the rest), so the board's power is not its own",
                self.replay_fraction * 100.0
            ));
        }
        if let Some(timed) = self.timed_call_ms
            && self.call_ms < MIN_CALL_SHARE * timed
        {
            return Some(format!(
                "the window's calls read {:.1}% shorter than the side's timed samples ({:.4} against {timed:.4} ms a call), which back to back they cannot be: its timing records disagree with the samples the host's clock witnessed",
                (1.0 - self.call_ms / timed) * 100.0,
                self.call_ms
            ));
        }
        None
    }
}

/// A mean over rounds with its two-sided t interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundEstimate {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    /// Rounds it is over.
    pub rounds: u32,
}

impl RoundEstimate {
    /// The mean of `values` (independent rounds) and its `confidence` t interval (Student t
    /// with n − 1 degrees of freedom); None for fewer than two values. O(n).
    pub(crate) fn of(values: &[f64], confidence: f64) -> Option<RoundEstimate> {
        let n = values.len();
        if n < 2 || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let nf = n as f64;
        let mean = values.iter().sum::<f64>() / nf;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (nf - 1.0);
        let q = crate::stats::t_quantile(0.5 + confidence / 2.0, nf - 1.0);
        let half = q * (var / nf).sqrt();
        half.is_finite().then_some(RoundEstimate {
            mean,
            lo: mean - half,
            hi: mean + half,
            rounds: n as u32,
        })
    }
}

/// One side's energy on one shape: its windows and what they say.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SideEnergy {
    pub rounds: Vec<EnergyRound>,
    /// Millijoules per call, over the usable rounds.
    pub mj_per_call: Option<RoundEstimate>,
    /// The shape's FLOPs per call over its energy, TFLOP/s per watt, over the usable rounds.
    pub tflops_per_watt: Option<RoundEstimate>,
    /// Why there is no figure, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
}

impl SideEnergy {
    /// Summarises `rounds` of a shape of `flops` per call with `confidence` intervals.
    pub(crate) fn from_rounds(rounds: Vec<EnergyRound>, flops: f64, confidence: f64) -> SideEnergy {
        let usable: Vec<&EnergyRound> = rounds.iter().filter(|r| r.unusable().is_none()).collect();
        let mj: Vec<f64> = usable.iter().map(|r| r.mj_per_call()).collect();
        let tpw: Vec<f64> = mj.iter().map(|mj| flops / (mj * 1e-3) / 1e12).collect();
        let mj_per_call = RoundEstimate::of(&mj, confidence);
        let withheld = if mj_per_call.is_some() {
            None
        } else if rounds.is_empty() {
            Some("no energy windows were measured".into())
        } else {
            let why = rounds
                .iter()
                .find_map(EnergyRound::unusable)
                .unwrap_or_else(|| "one usable window is not enough for an interval".into());
            Some(format!(
                "{} of {} windows usable: {why}",
                usable.len(),
                rounds.len()
            ))
        };
        SideEnergy {
            mj_per_call,
            tflops_per_watt: mj_per_call.and_then(|_| RoundEstimate::of(&tpw, confidence)),
            withheld,
            rounds,
        }
    }
}

/// Both sides' energy on one shape (the base's only in A/B).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapeEnergy {
    pub candidate: SideEnergy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<SideEnergy>,
}

impl ShapeEnergy {
    /// Candidate's mean energy per call over the base's, when both have a figure.
    pub fn ratio(&self) -> Option<f64> {
        let c = self.candidate.mj_per_call?;
        let b = self.base.as_ref()?.mj_per_call?;
        (b.mean > 0.0).then(|| c.mean / b.mean)
    }
}

/// The energy counter's behaviour as this run saw it, for the report's footnote.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EnergyInfo {
    pub source: Option<EnergySource>,
    /// Median time between counter moves seen in the windows, ms.
    pub update_ms: Option<f64>,
    /// Median NVML read time, ms.
    pub read_ms: Option<f64>,
    /// Windows per side per shape, and counter moves each spans.
    pub rounds: u32,
    pub updates: u32,
    /// Why nothing was measured (no NVML, switched off), when nothing was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(power_w: f64, call_ms: f64) -> EnergyRound {
        EnergyRound {
            source: EnergySource::Counter,
            power_w,
            call_ms,
            calls: 1000,
            span_ms: 200.0,
            span_mj: power_w * 200.0,
            updates: 3,
            read_ms: 1.0,
            replay_fraction: 0.95,
            timed_call_ms: Some(call_ms),
        }
    }

    #[test]
    fn energy_per_call_is_power_times_time_and_the_interval_is_students() {
        let e = SideEnergy::from_rounds(
            vec![round(600.0, 1.0), round(610.0, 1.0), round(620.0, 1.0)],
            1e12,
            0.95,
        );
        let mj = e.mj_per_call.expect("three usable rounds");
        assert!((mj.mean - 610.0).abs() < 1e-9);
        // sd 10, n 3: half-width t(0.975, 2) · 10/√3, t(0.975, 2) = 4.302653 (scipy.stats.t.ppf)
        assert!(((mj.hi - mj.lo) / 2.0 - 24.841_377).abs() < 1e-4, "{mj:?}");
        // 1e12 FLOP in 0.61 J: 1.639 TFLOP/s per W (mean over rounds of per-round values)
        let tpw = e.tflops_per_watt.expect("figure");
        let expect = [600.0, 610.0, 620.0]
            .iter()
            .map(|mj| 1.0 / (mj * 1e-3))
            .sum::<f64>()
            / 3.0;
        assert!((tpw.mean - expect).abs() < 1e-9);
        assert!(e.withheld.is_none());
    }

    #[test]
    fn a_counter_too_coarse_for_the_window_withholds_the_figure_and_says_why() {
        let mut coarse = round(600.0, 1.0);
        coarse.span_ms = 100.0;
        coarse.read_ms = 10.0; // ±10%
        let e = SideEnergy::from_rounds(vec![coarse.clone(), coarse], 1e12, 0.95);
        assert!(e.mj_per_call.is_none());
        let why = e.withheld.expect("a reason");
        assert!(why.contains("0 of 2 windows usable"), "{why}");
        assert!(why.contains("±10.0%"), "{why}");
    }

    #[test]
    fn one_counter_move_or_a_window_dominated_by_checks_is_not_used() {
        let mut once = round(600.0, 1.0);
        once.updates = 1;
        assert!(once.unusable().expect("unusable").contains("moved 1 time"));
        let mut checks = round(600.0, 1.0);
        checks.replay_fraction = 0.3;
        assert!(checks.unusable().expect("unusable").contains("30%"));
        let mut nan = round(600.0, 1.0);
        nan.power_w = f64::NAN;
        assert!(nan.unusable().is_some());
        // Calls that read faster back to back than in the timed samples: records rewritten.
        let mut short = round(600.0, 0.85);
        short.timed_call_ms = Some(1.0);
        let why = short.unusable().expect("unusable");
        assert!(
            why.contains("15.0% shorter than the side's timed samples"),
            "{why}"
        );
        short.call_ms = 0.91;
        assert_eq!(short.unusable(), None);
        short.timed_call_ms = None;
        short.call_ms = 0.5;
        assert_eq!(short.unusable(), None, "a file of an earlier version");
        let e = SideEnergy::from_rounds(vec![round(600.0, 1.0), once], 1e12, 0.95);
        assert!(e.mj_per_call.is_none(), "one usable round has no interval");
        assert!(
            e.withheld
                .expect("why")
                .starts_with("1 of 2 windows usable")
        );
    }

    #[test]
    fn the_ratio_needs_both_sides() {
        let c = SideEnergy::from_rounds(vec![round(500.0, 1.0), round(500.0, 1.0)], 1e12, 0.95);
        let b = SideEnergy::from_rounds(vec![round(400.0, 1.0), round(400.0, 1.0)], 1e12, 0.95);
        let s = ShapeEnergy {
            candidate: c.clone(),
            base: Some(b),
        };
        assert!((s.ratio().expect("ratio") - 1.25).abs() < 1e-12);
        let alone = ShapeEnergy {
            candidate: c,
            base: None,
        };
        assert!(alone.ratio().is_none());
    }
}
