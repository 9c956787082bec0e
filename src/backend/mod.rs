//! The measuring backend: everything the pipeline asks of a GPU, behind two small traits,
//! so that the whole pipeline — stages, statistics, drift tracing, reports, exit codes — also
//! runs without one. Two implementations: the GPU (`gpu::cuda_backend`, cudarc) and a seeded
//! simulation (`crate::sim`; tests and CI, never a verdict on real kernels). A run holds
//! which one measures as a value (`run::BackendChoice`). This module imports neither: the
//! traits, their types, their error ([`GpuError`], from `crate::gpu_error`, which `kernel`
//! returns too) and the device state both keep of the shapes they measure ([`shapes`]) are
//! the layer below them.
//!
//! [`Measure`] is what runs kernels (a shape begun, a pair of rounds, a round, parity,
//! energy, the clocks spun up); [`Facts`] is what is only read (the device, its state now,
//! kernel resources, the GPU's processes, where the time went). [`Backend`] is both, the
//! one bound the pipeline takes.
//!
//! The pipeline keeps the decisions and the bookkeeping (order of work, stages, each side's
//! [`Measurement`] and each pair's order, a pair measured again, verdicts): a backend returns
//! what one call measured ([`Pair`], [`Round`], [`Energy`]) and the engine appends it
//! (`run::shape`). The backend keeps the device: compiled kernels, buffers held between
//! rounds, the coin that orders a shape's pairs, behind the [`ShapeHandle`] the engine holds.

pub(crate) mod hang;
pub mod shapes;
pub(crate) mod spans;

use crate::config::{MeasureSettings, ShapeParams, Tolerance};
pub use crate::gpu_error::GpuError;
use crate::kernel::KernelDir;
use crate::resources::{KernelResources, ResourceSide};
use crate::results::{Environment, GpuProcess, GpuState, PairOrder, Parity};

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

/// A shape begun on a backend ([`Measure::begin`]): the engine holds it while it measures
/// the shape and gives it back to [`Measure::end`]. It names the backend's device state of
/// the shape (held buffers, the coin of its pairs), never a measurement: those are the
/// engine's. Not `Clone`: one holder, ended once.
#[derive(Debug, PartialEq, Eq)]
pub struct ShapeHandle(usize);

impl ShapeHandle {
    /// The handle of the backend's `index`th shape (a backend's own numbering).
    pub fn new(index: usize) -> ShapeHandle {
        ShapeHandle(index)
    }

    /// The backend's number of the shape.
    pub fn index(&self) -> usize {
        self.0
    }
}

/// One side's timings of one shape, as the engine appended them round by round.
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
    /// Energy windows after the timed rounds ([`Measure::energy`]); never timed samples.
    pub energy: Vec<crate::energy::EnergyRound>,
    /// Per round, each sample's unwitnessed µs: what the host's clock saw of the sample
    /// beyond the events' span (`crate::witness`); empty where a device does not witness.
    pub unwitnessed_us: Vec<Vec<f64>>,
    /// Per round, each sample's µs from the host's seeing its end event to the end of its
    /// checks, less the checks' own time by their events (`crate::witness`); empty where a
    /// device does not witness.
    pub after_end_us: Vec<Vec<f64>>,
    /// Per round, each sample's µs from the host's seeing its checks end to the end of the
    /// tail after them, less the tail's own time by its events (`crate::witness`); empty
    /// where a device does not witness.
    pub after_checks_us: Vec<Vec<f64>>,
}

/// One round of one side, as a backend measured it: what [`Measurement::push`] appends.
#[derive(Clone, Debug, PartialEq)]
pub struct Round {
    /// Per-launch µs of each sample.
    pub values: Vec<f64>,
    /// Launches per sample (the same for every round of a shape).
    pub launches_per_sample: u32,
    pub working_set_bytes: u64,
    /// Device address of Q in the round (one).
    pub addresses: Vec<u64>,
    /// SM clock (MHz) read before and after the round's samples, where NVML read it.
    pub sm_clock_mhz: Vec<u32>,
    /// Samples across which the SM clock moved.
    pub clock_events: u32,
    pub wall_s: f64,
    /// Timed launches of the round checked against the reference.
    pub checked_launches: u64,
    /// The largest error of the round's timed launches (or of the side's, where a backend
    /// carries it over): the larger of it and the measurement's is kept.
    pub worst_timed: Option<Parity>,
    /// One launch's time from the round's warm-up, ms, where it warmed up.
    pub per_launch_ms: Option<f64>,
    /// Each sample's unwitnessed µs (`crate::witness`); empty where a device does not
    /// witness.
    pub unwitnessed_us: Vec<f64>,
    /// Each sample's µs from the host's seeing its end event to the end of its checks, less
    /// the checks' own time by their events (`crate::witness`); empty where a device does
    /// not witness.
    pub after_end_us: Vec<f64>,
    /// Each sample's µs from the host's seeing its checks end to the end of the tail after
    /// them, less the tail's own time by its events (`crate::witness`); empty where a device
    /// does not witness.
    pub after_checks_us: Vec<f64>,
}

/// One pair of rounds, as [`Measure::pair`] measured it: the order it drew, and the round
/// of each side, in `begin`'s order.
#[derive(Clone, Debug)]
pub struct Pair {
    pub order: PairOrder,
    pub rounds: [Round; 2],
}

/// What [`Measure::energy`] measured of a shape's sides.
#[derive(Clone, Debug)]
pub enum Energy {
    /// Each side's windows, in `begin`'s order.
    Windows(Vec<Vec<crate::energy::EnergyRound>>),
    /// Why this device cannot measure energy at all.
    Unavailable(String),
}

/// What a backend does once, before the first sample of the process ([`Measure::prepare`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Prepare<'a> {
    /// Fits the cost of the spin kernel that injects slowdowns (selftest's `--inject`).
    pub calibrate_injection: bool,
    /// Brings the clocks up: this shape's kernel for this many ms of wall time
    /// (`measure.spin_up_ms`).
    pub spin_up: Option<(&'a ShapeParams, f64)>,
}

impl Round {
    /// A round of samples and nothing else measured (no buffers, clocks or checks): the
    /// witness's control, a replayed calibration draw.
    pub fn of_samples(
        values: Vec<f64>,
        launches_per_sample: u32,
        unwitnessed_us: Vec<f64>,
    ) -> Round {
        Round {
            values,
            launches_per_sample,
            working_set_bytes: 0,
            addresses: Vec::new(),
            sm_clock_mhz: Vec::new(),
            clock_events: 0,
            wall_s: 0.0,
            checked_launches: 0,
            worst_timed: None,
            per_launch_ms: None,
            unwitnessed_us,
            after_end_us: Vec::new(),
            after_checks_us: Vec::new(),
        }
    }
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
            unwitnessed_us: Vec::new(),
            after_end_us: Vec::new(),
            after_checks_us: Vec::new(),
        }
    }

    /// Appends a round a backend measured: its samples, clocks, address and checks; the
    /// larger worst error of the two kept.
    pub fn push(&mut self, round: Round) {
        self.rounds.push(round.values);
        self.unwitnessed_us.push(round.unwitnessed_us);
        self.after_end_us.push(round.after_end_us);
        self.after_checks_us.push(round.after_checks_us);
        self.launches_per_sample = round.launches_per_sample;
        self.working_set_bytes = round.working_set_bytes;
        self.round_addresses.extend(round.addresses);
        self.sm_clock_mhz.extend(round.sm_clock_mhz);
        self.clock_events.push(round.clock_events);
        self.wall_s += round.wall_s;
        self.checked_launches += round.checked_launches;
        if let Some(w) = round.worst_timed
            && self
                .worst_timed
                .as_ref()
                .is_none_or(|old| w.max_abs > old.max_abs)
        {
            self.worst_timed = Some(w);
        }
        if round.per_launch_ms.is_some() {
            self.per_launch_ms = round.per_launch_ms;
        }
    }

    /// The round that took `before` to `self` (a backend that measures into a copy of the
    /// engine's measurement, the GPU's, returns what its call added). `None` unless exactly
    /// one round was added.
    pub fn round_since(&self, before: &Measurement) -> Option<Round> {
        if self.rounds.len() != before.rounds.len() + 1
            || self.clock_events.len() != before.clock_events.len() + 1
        {
            return None;
        }
        Some(Round {
            values: self.rounds.last()?.clone(),
            launches_per_sample: self.launches_per_sample,
            working_set_bytes: self.working_set_bytes,
            addresses: self
                .round_addresses
                .get(before.round_addresses.len()..)?
                .to_vec(),
            sm_clock_mhz: self.sm_clock_mhz.get(before.sm_clock_mhz.len()..)?.to_vec(),
            clock_events: *self.clock_events.last()?,
            wall_s: self.wall_s - before.wall_s,
            checked_launches: self
                .checked_launches
                .saturating_sub(before.checked_launches),
            worst_timed: self.worst_timed.clone(),
            per_launch_ms: self.per_launch_ms,
            unwitnessed_us: self.unwitnessed_us.last().cloned().unwrap_or_default(),
            after_end_us: self.after_end_us.last().cloned().unwrap_or_default(),
            after_checks_us: self.after_checks_us.last().cloned().unwrap_or_default(),
        })
    }

    /// Forgets the last round (a pair measured again, `run::shape`).
    pub fn drop_last(&mut self) {
        if self.rounds.pop().is_some() {
            self.unwitnessed_us.pop();
            self.after_end_us.pop();
            self.after_checks_us.pop();
            self.clock_events.pop();
            self.round_addresses.pop();
            let keep = self.sm_clock_mhz.len().saturating_sub(2);
            self.sm_clock_mhz.truncate(keep);
        }
    }
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

/// What a device is, read once when a run's setup begins ([`Facts::device`]): none of it
/// changes while the backend is open.
#[derive(Clone, Debug)]
pub struct DeviceFacts {
    /// The machine: GPU, driver, CUDA, NVRTC, clocks now (the run's "before").
    pub environment: Environment,
    /// An upper bound on the device's dense fp16 tensor throughput, TFLOP/s.
    pub peak_dense_tflops: f64,
    /// This run's secret (hash keys, poison, random shapes), drawn from the OS.
    pub run_key: u64,
    /// SHA-256 of the base's `attention.cu` (the harness directory's), when loaded.
    pub base_hash: Option<String>,
    /// SHA-256 of the candidate's `attention.cu`.
    pub candidate_hash: Option<String>,
}

/// What the pipeline reads of a device without running a kernel: kept apart from
/// [`Measure`] so that what measures is small, and so that a phase that only reads (the
/// process watch, the timing, the results) says so in its bound.
pub trait Facts {
    /// The device, its secret and the loaded sides' hashes (read once, at setup).
    fn device(&self) -> DeviceFacts;
    /// Clocks, temperature, power and throttle reasons now (the run's "after").
    fn state(&self) -> Option<GpuState>;
    /// Buffer sets a cold-cache round rotates through (1 for hot cache).
    fn input_sets(
        &self,
        shape: &ShapeParams,
        settings: &MeasureSettings,
    ) -> Result<usize, GpuError>;
    /// Where the measuring's time went so far.
    fn phase_times(&self) -> PhaseTimes;
    /// What the compiler gave the kernels of `side` (base or candidate) that run `shapes`,
    /// one entry per kernel; empty where the side is not loaded. Never fails: a figure it
    /// cannot know is `None`, with a note. A backend without compiled kernels (a replay of
    /// recorded timings) has none.
    fn kernel_resources(&self, _side: Side, _shapes: &[ShapeParams]) -> Vec<KernelResources> {
        Vec::new()
    }
    /// How the host launches `shape` with the kernels of `side`: the entry its form rules
    /// pick and the grid it sizes (`crate::launch`). `None` where the side is not loaded, the
    /// shape has no kernel, or the backend launches none (a replay of recorded timings).
    fn launch(&self, _side: Side, _shape: &ShapeParams) -> Option<crate::launch::Launch> {
        None
    }
    /// The compute processes on this GPU now, as NVML lists them (this process and its
    /// PyTorch worker included: the pipeline tells its own from others'), with a name where
    /// the backend knows one. `Err`: why they cannot be listed (a backend without NVML).
    fn gpu_processes(&self) -> Result<Vec<GpuProcess>, ProcessesUnlisted> {
        Err(ProcessesUnlisted(
            "this measuring backend cannot list the GPU's processes".into(),
        ))
    }
}

/// Why the GPU's compute processes cannot be listed, in words: the run records that it could
/// not tell whether it had the GPU to itself (`run::sharing`), and says why.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ProcessesUnlisted(pub String);

/// What the pipeline asks a device to run. Each call returns what it measured; the engine
/// keeps it (`run::shape`), and gives each side's measurement so far back (`so_far`, in
/// `begin`'s order) for the device to continue from: the round's number seeds its inputs,
/// and the first round sets the launches per sample. A [`GpuError::Integrity`] is the
/// kernel's fault (a parity failure of the side it names), anything else a measuring error.
pub trait Measure {
    /// Once before the first sample of the process: the injection calibrated, then the
    /// clocks spun up, as `prepare` asks.
    fn prepare(&mut self, prepare: Prepare<'_>) -> Result<(), GpuError>;
    /// Compiles and loads a third `attention.cu` ([`Side::Other`]).
    fn load_other(&mut self, dir: &KernelDir, defines: &[String]) -> Result<(), GpuError>;
    /// One side's output on fresh inputs from `seed` against the reference.
    fn parity(
        &mut self,
        side: Side,
        shape: &ShapeParams,
        tolerance: Tolerance,
        seed: u64,
    ) -> Result<Parity, GpuError>;
    /// Starts measuring `shape`: one side alone, or two in pairs of rounds (`sides[0]`
    /// first in the report: base or other; `sides[1]` the candidate). `inject_us` slows the
    /// last side by that much per launch (after [`Prepare::calibrate_injection`]).
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
    ) -> Result<ShapeHandle, GpuError>;
    /// One more pair of rounds (two sides), in the order it drew.
    fn pair(&mut self, shape: &ShapeHandle, so_far: &[Measurement]) -> Result<Pair, GpuError>;
    /// One more round (one side).
    fn round(&mut self, shape: &ShapeHandle, so_far: &[Measurement]) -> Result<Round, GpuError>;
    /// The witness's control (what a side alone is judged against: `crate::witness::record`):
    /// the harness's own spin sampled `samples` times as a kernel's samples are, with no
    /// kernel under test running (each sample's unwitnessed µs); `None` where the device does
    /// not witness its samples. Asked right after each round of a side alone, so that the
    /// control and the round are sampled in the same stretch of time.
    fn control(
        &mut self,
        settings: &MeasureSettings,
        samples: usize,
    ) -> Result<Option<Round>, GpuError>;
    /// `rounds` energy windows of each side of a shape, after its timed rounds, each
    /// spanning `updates` moves of the energy counter (src/energy.rs). A
    /// [`GpuError::Integrity`] is a side whose replays in a window failed the checks.
    fn energy(
        &mut self,
        shape: &ShapeHandle,
        so_far: &[Measurement],
        rounds: u32,
        updates: u32,
    ) -> Result<Energy, GpuError>;
    /// Releases the shape's device state (its held buffers).
    fn end(&mut self, shape: ShapeHandle);
}

/// A measuring device: what runs kernels and what is read of it. Every type that is both
/// is one; the pipeline takes `&mut dyn Backend`.
pub trait Backend: Measure + Facts {}

impl<T: Measure + Facts + ?Sized> Backend for T {}

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

#[cfg(test)]
mod measurement_tests {
    use super::{Measurement, Round};
    use crate::config::Tolerance;
    use crate::results::Parity;

    fn round(values: Vec<f64>, max_abs: f64, events: u32) -> Round {
        Round {
            values,
            launches_per_sample: 40,
            working_set_bytes: 1 << 20,
            addresses: vec![0x7f00 + events as u64],
            sm_clock_mhz: vec![1980, 1755],
            clock_events: events,
            wall_s: 0.25,
            checked_launches: 400,
            worst_timed: Some(Parity {
                max_abs,
                rel_l2: 1e-4,
                centered: None,
                nan_or_inf: 0,
                unwritten: 0,
                tolerance: Tolerance {
                    max_abs: 1e-2,
                    rel_l2: 1e-3,
                    centered: None,
                },
                seed: 0,
            }),
            per_launch_ms: Some(0.1),
            unwitnessed_us: vec![50.0 + f64::from(events); 2],
            after_end_us: vec![300.0 + f64::from(events); 2],
            after_checks_us: vec![4.0 + f64::from(events); 2],
        }
    }

    /// A backend that measures into a copy of the engine's measurement (the GPU's) returns
    /// the round its call added: pushed onto the engine's, it gives the copy back.
    #[test]
    fn a_round_since_a_measurement_pushed_onto_it_gives_the_same_measurement() {
        let mut engine = Measurement::empty();
        engine.push(round(vec![1.0, 2.0], 1e-3, 0));
        let mut copy = engine.clone();
        copy.push(round(vec![3.0, 4.0], 5e-4, 2));
        let added = copy.round_since(&engine).expect("one round added");
        assert_eq!(added.values, vec![3.0, 4.0]);
        assert_eq!(added.clock_events, 2);
        assert_eq!(added.unwitnessed_us, vec![52.0, 52.0]);
        assert_eq!(added.after_end_us, vec![302.0, 302.0]);
        assert_eq!(added.after_checks_us, vec![6.0, 6.0]);
        engine.push(added);
        assert_eq!(format!("{engine:?}"), format!("{copy:?}"));
        // The larger worst error is kept, whichever round had it.
        assert_eq!(engine.worst_timed.as_ref().map(|p| p.max_abs), Some(1e-3));
        // Nothing added, or two rounds: not one round.
        assert!(engine.round_since(&engine.clone()).is_none());
        // Dropping the last round forgets its samples, address, clocks and events.
        engine.drop_last();
        assert_eq!(engine.rounds.len(), 1);
        assert_eq!(
            (engine.round_addresses.len(), engine.sm_clock_mhz.len()),
            (1, 2)
        );
        assert_eq!(engine.unwitnessed_us, vec![vec![50.0, 50.0]]);
        assert_eq!(engine.after_end_us, vec![vec![300.0, 300.0]]);
    }
}
