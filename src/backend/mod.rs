//! The measuring backend: everything the pipeline asks of a GPU, behind one trait, so that
//! the whole pipeline — stages, statistics, drift tracing, reports, exit codes — also runs
//! without one. Two implementations: the GPU (`gpu::cuda_backend`, cudarc) and a seeded
//! simulation (`crate::sim`; tests and CI, never a verdict on real kernels). A run holds
//! which one measures as a value (`run::BackendChoice`). This module imports neither: the
//! trait, its types, its error ([`GpuError`]) and the bookkeeping both keep of the shapes
//! they measure are the layer below them.
//!
//! The pipeline keeps the decisions (order of work, stages, re-measuring, verdicts); the
//! backend keeps the device: compiled kernels, buffers held between rounds, the launch count
//! of a shape, and the measurements it appends to.

pub(crate) mod error;
pub(crate) mod hang;
pub mod shapes;
pub(crate) mod spans;

use crate::config::{MeasureSettings, ShapeParams, Tolerance};
use crate::kernel::KernelDir;
use crate::resources::{KernelResources, ResourceSide};
use crate::results::{Environment, GpuProcess, GpuState, PairOrder, Parity};
pub use error::GpuError;
pub use shapes::Bookkeeping;

/// Which kernels a measurement is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The base's `attention.cu` (A/B).
    Base,
    /// The candidate's.
    Candidate,
    /// A third set loaded later: the stored baseline's commit's, when a drift is traced.
    Other,
}

impl Side {
    /// Its name in messages: "base", "candidate", "baseline commit's".
    pub(crate) fn label(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::Candidate => "candidate",
            Side::Other => "baseline commit's",
        }
    }
}

/// A shape being measured, as [`Backend::begin`] returned it.
pub type ShapeId = usize;

/// One side's timings of one shape, as the backend appended them round by round.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Per-launch µs, by round.
    pub rounds: Vec<Vec<f64>>,
    pub launches_per_sample: u32,
    pub working_set_bytes: u64,
    /// Device address of Q in each round (shows that rounds used fresh buffers).
    pub round_addresses: Vec<u64>,
    pub wall_s: f64,
    /// SM clock (MHz, NVML) read before and after each round's samples.
    pub sm_clock_mhz: Vec<u32>,
    /// Timed launches whose output was compared with the reference (every one).
    pub checked_launches: u64,
    /// The largest error of any timed launch's output against the reference.
    pub worst_timed: Option<Parity>,
    /// Per round: samples across which the SM clock moved (read before and after each).
    pub clock_events: Vec<u32>,
    /// One launch's time from the first round's warm-up, ms (later rounds warm up with the
    /// first replay of their graph only).
    pub per_launch_ms: Option<f64>,
    /// Energy windows after the timed rounds ([`Backend::energy`]); never timed samples.
    pub energy: Vec<crate::energy::EnergyRound>,
}

impl Measurement {
    /// No rounds yet.
    pub fn empty() -> Measurement {
        Measurement {
            rounds: Vec::new(),
            launches_per_sample: 0,
            working_set_bytes: 0,
            round_addresses: Vec::new(),
            wall_s: 0.0,
            sm_clock_mhz: Vec::new(),
            checked_launches: 0,
            worst_timed: None,
            clock_events: Vec::new(),
            per_launch_ms: None,
            energy: Vec::new(),
        }
    }

    /// Forgets the last round (a pair measured again: [`Backend::drop_last`]).
    pub fn drop_last(&mut self) {
        if self.rounds.pop().is_some() {
            self.clock_events.pop();
            self.round_addresses.pop();
            let keep = self.sm_clock_mhz.len().saturating_sub(2);
            self.sm_clock_mhz.truncate(keep);
        }
    }
}

/// The measurement of a shape that is not (or no longer) being measured: nothing.
pub(crate) fn empty_measurement() -> &'static Measurement {
    static EMPTY: std::sync::OnceLock<Measurement> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Measurement::empty)
}

/// Wall-clock seconds the measuring spent per phase in this process, for the results'
/// `timing`: making the reference outputs, preparing rounds (buffers, warm-up, graph),
/// sampling (the timed replays, their poisoning, checks and idle time), and finishing rounds
/// (reading the checks back, hashing the inputs).
#[derive(Clone, Copy, Debug, Default)]
pub struct PhaseTimes {
    pub references_s: f64,
    pub preparing_s: f64,
    pub sampling_s: f64,
    pub finishing_s: f64,
}

/// What the pipeline asks of a measuring device. Methods that touch the device return
/// [`GpuError`]; a [`GpuError::Integrity`] is the kernel's fault (a parity failure of the
/// side it names), anything else a measuring error.
pub trait Backend {
    /// The machine: GPU, driver, CUDA, NVRTC, clocks now (the run's "before").
    fn environment(&self) -> Environment;
    /// Clocks, temperature, power and throttle reasons now (the run's "after").
    fn state(&self) -> Option<GpuState>;
    /// SHA-256 of the `attention.cu` of a side, when that side is loaded.
    fn source_hash(&self, side: Side) -> Option<String>;
    /// An upper bound on the device's dense fp16 tensor throughput, TFLOP/s.
    fn peak_dense_tflops(&self) -> f64;
    /// This run's secret (hash keys, poison, random shapes), drawn from the OS.
    fn run_key(&self) -> u64;
    /// Buffer sets a cold-cache round rotates through (1 for hot cache).
    fn input_sets(
        &self,
        shape: &ShapeParams,
        settings: &MeasureSettings,
    ) -> Result<usize, GpuError>;
    /// Brings the clocks up before the first sample of the process: `shape`'s kernel for
    /// `ms` of wall time (`measure.spin_up_ms`).
    fn spin_up(&mut self, shape: &ShapeParams, ms: f64) -> Result<(), GpuError>;
    /// Fits the cost of the spin kernel that injects slowdowns (selftest's `--inject`).
    fn calibrate_injection(&mut self) -> Result<(), GpuError>;
    /// One side's output on fresh inputs from `seed` against the reference.
    fn parity(
        &mut self,
        side: Side,
        shape: &ShapeParams,
        tolerance: Tolerance,
        seed: u64,
    ) -> Result<Parity, GpuError>;
    /// Compiles and loads a third `attention.cu` ([`Side::Other`]).
    fn load_other(&mut self, dir: &KernelDir, defines: &[String]) -> Result<(), GpuError>;
    /// Starts measuring `shape`: one side alone, or two in pairs of rounds (`sides[0]`
    /// first in the report: base or other; `sides[1]` the candidate). `inject_us` slows the
    /// last side by that much per launch (after [`Backend::calibrate_injection`]).
    /// `coin_seed` seeds the order of pairs, `seed` the inputs.
    #[allow(clippy::too_many_arguments)]
    fn begin(
        &mut self,
        shape: &ShapeParams,
        sides: &[Side],
        settings: &MeasureSettings,
        tolerance: Tolerance,
        inject_us: Option<f64>,
        coin_seed: u64,
        seed: u64,
    ) -> Result<ShapeId, GpuError>;
    /// One more pair of rounds (two sides), in the order it drew.
    fn pair(&mut self, id: ShapeId) -> Result<PairOrder, GpuError>;
    /// One more round (one side).
    fn round(&mut self, id: ShapeId) -> Result<(), GpuError>;
    /// `rounds` energy windows of each side of a shape, after its timed rounds, each
    /// spanning `updates` moves of the energy counter (src/energy.rs); appended to the
    /// sides' measurements. `Ok(Some(why))`: this device cannot measure energy at all.
    /// A [`GpuError::Integrity`] is a side whose replays in a window failed the checks.
    fn energy(
        &mut self,
        id: ShapeId,
        rounds: u32,
        updates: u32,
    ) -> Result<Option<String>, GpuError>;
    /// The shapes begun, as the backend keeps them (both of ci-gate's in
    /// [`shapes::ShapeSlots`]): what the four methods below read and drop.
    fn shapes(&self) -> &dyn Bookkeeping;
    /// [`Backend::shapes`], to drop from.
    fn shapes_mut(&mut self) -> &mut dyn Bookkeeping;
    /// Forgets the last pair (or round).
    fn drop_last(&mut self, id: ShapeId) {
        self.shapes_mut().drop_last(id);
    }
    /// What side `index` (of those given to `begin`) measured so far.
    fn measurement(&self, id: ShapeId, index: usize) -> &Measurement {
        self.shapes().measurement(id, index)
    }
    /// The order of each pair kept.
    fn orders(&self, id: ShapeId) -> &[PairOrder] {
        self.shapes().orders(id)
    }
    /// Releases the shape's buffers.
    fn end(&mut self, id: ShapeId) {
        self.shapes_mut().end(id);
    }
    /// Where the measuring's time went so far.
    fn phase_times(&self) -> PhaseTimes;
    /// What the compiler gave the kernels of `side` (base or candidate) that run `shapes`,
    /// one entry per kernel; empty where the side is not loaded. Never fails: a figure it
    /// cannot know is `None`, with a note. A backend without compiled kernels (a replay of
    /// recorded timings) has none.
    fn kernel_resources(&self, _side: Side, _shapes: &[ShapeParams]) -> Vec<KernelResources> {
        Vec::new()
    }
    /// The compute processes on this GPU now, as NVML lists them (this process and its
    /// PyTorch worker included: the pipeline tells its own from others'), with a name where
    /// the backend knows one. `Err`: why they cannot be listed (a backend without NVML).
    fn gpu_processes(&self) -> Result<Vec<GpuProcess>, String> {
        Err("this measuring backend cannot list the GPU's processes".into())
    }
}

/// How a side is recorded in the results' kernel resources (the third side is not).
pub(crate) fn resource_side(side: Side) -> Option<ResourceSide> {
    match side {
        Side::Base => Some(ResourceSide::Base),
        Side::Candidate => Some(ResourceSide::Candidate),
        Side::Other => None,
    }
}

/// The GPU time a run may spend on the timed kernels (`measure.gpu_budget_s`), and what each
/// side spent on each shape: every backend charges its warm-ups, first replays and timed
/// samples here, and the first charge past the limit ends the run ([`GpuError::Budget`]).
#[derive(Clone, Debug)]
pub struct GpuBudget {
    limit_s: f64,
    spent_s: f64,
    /// (shape, side label) → seconds.
    by_side: std::collections::HashMap<(String, &'static str), f64>,
}

impl GpuBudget {
    pub fn new(limit_s: f64) -> GpuBudget {
        GpuBudget {
            limit_s,
            spent_s: 0.0,
            by_side: std::collections::HashMap::new(),
        }
    }

    /// Seconds charged so far.
    #[cfg(test)]
    pub(crate) fn spent_s(&self) -> f64 {
        self.spent_s
    }

    /// Charges `seconds` of GPU time of the `side` kernel (`what`: the kernel and phase, for
    /// the message) on `shape`. Past the limit: one sentence naming the shape and the side
    /// that spent the most of it there, with what each side spent.
    pub(crate) fn charge(
        &mut self,
        shape: &ShapeParams,
        side: &'static str,
        seconds: f64,
        what: impl FnOnce() -> String,
    ) -> Result<(), GpuError> {
        let seconds = if seconds.is_finite() {
            seconds.max(0.0)
        } else {
            0.0
        };
        self.spent_s += seconds;
        let name = shape.name();
        *self.by_side.entry((name.clone(), side)).or_insert(0.0) += seconds;
        if self.spent_s <= self.limit_s {
            return Ok(());
        }
        // The side that spent the most in all (not on the shape at hand: a slow candidate's
        // parity checks are charged to random shapes) and the shape it spent the most on.
        let mut by_side: Vec<(&'static str, f64)> = Vec::new();
        for ((_, s), t) in &self.by_side {
            match by_side.iter_mut().find(|(x, _)| x == s) {
                Some(entry) => entry.1 += t,
                None => by_side.push((s, *t)),
            }
        }
        by_side.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        let (worst, _) = by_side.first().copied().unwrap_or((side, seconds));
        let worst_shape = self
            .by_side
            .iter()
            .filter(|((_, s), _)| *s == worst)
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.0.cmp(&a.0.0)))
            .map_or(name, |((shape, _), _)| shape.clone());
        let spent = by_side
            .iter()
            .map(|(side, t)| format!("the {side} {t:.1} s"))
            .collect::<Vec<_>>()
            .join(", ");
        Err(GpuError::Budget(format!(
            "the run's GPU-time budget (measure.gpu_budget_s: {:.0} s of timed kernel work) is spent on shape {worst_shape}, by the {worst} kernel ({spent} in all; last: {}): a kernel this slow cannot be measured within the budget, so the run ends without a verdict; raise measure.gpu_budget_s if the time is real",
            self.limit_s,
            what()
        )))
    }
}

#[cfg(test)]
mod budget_tests {
    use super::GpuBudget;
    use crate::config::{Dtype, ShapeParams};

    #[test]
    fn the_side_that_spent_the_budget_is_named_with_its_worst_shape() {
        let probe = ShapeParams::new(1, 2, 209, 64, true, Dtype::Float16);
        let shape = ShapeParams::new(2, 4, 256, 64, false, Dtype::Float16);
        let mut b = GpuBudget::new(30.0);
        // A candidate slow in its parity checks only, on a random shape; the budget runs
        // out while the base is charged on another shape.
        b.charge(&probe, "candidate", 29.5, || "parity".into())
            .unwrap();
        b.charge(&shape, "base", 0.3, || "parity".into()).unwrap();
        let e = b
            .charge(&shape, "base", 0.3, || "the base kernel (parity)".into())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("spent on shape b1h2s209d64_causal_f16, by the candidate kernel (the candidate 29.5 s, the base 0.6 s in all; last: the base kernel (parity))"),
            "{e}"
        );
        assert!(b.spent_s() > 30.0);
        // Within the budget: no error; non-finite charges count as nothing.
        let mut b = GpuBudget::new(1.0);
        assert!(b.charge(&shape, "base", f64::NAN, String::new).is_ok());
        assert!(b.charge(&shape, "base", 0.9, String::new).is_ok());
    }
}
