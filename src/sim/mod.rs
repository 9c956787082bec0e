//! A simulated GPU, so that every path from the command line to the exit code runs in CI:
//! kernels whose times follow a seeded noise model, and faults a test can ask for.
//!
//! `CI_GATE_SIMULATE=SEED ci-gate local ...` measures with it. What a simulated kernel set
//! does is written in its `attention.cu`, on a line of its own:
//!
//! ```text
//! // ci-gate-sim: factor=1.03 parity-fail=causal hang=b2h16 error=d128 skip=s4096
//! ```
//!
//! `factor` multiplies its times (1 by default); each fault applies to the shapes whose name
//! contains its value (`*` for all): `parity-fail` (its output is far from the reference),
//! `hang` (its kernel never returns: the watchdog's hang path, exit 2), `error` (a CUDA
//! error), `skip` (its timed launches skip work: an integrity failure), `forge` (its timed
//! samples' event records are shortened by [`FORGED_SHARE`] of a sample, the time the host's
//! clock saw left as it was: `crate::witness`; `forge-share=S` takes S instead,
//! `forge-rounds=N` forges only every N-th of its rounds, `forge-early=E` hides the share E of what it takes by an end event signalled
//! early, so that the host sees it only in its wait for the checks), `clock` (a quarter
//! of its rounds see the SM clock move during half their samples and run 5% slow: the
//! pipeline's re-measure rule for pairs the clock hit on one side). `regs` and `spill` set
//! what its kernels report of the compiler (registers, 128 by default; spilled bytes stored
//! and loaded, 0 by default), so that a test can make the sides' resources differ; `rows`
//! the rows per CTA of its launches (grid.x = ⌈seq_len / rows⌉, 128 by default), so that a
//! test can make a shape launch otherwise than a stored run did (`crate::launch`). `others`
//! makes another compute process appear on the simulated GPU (as NVML would list it) once a
//! shape it applies to has begun (`*`: from the start), and `wall=MS` makes each simulated
//! round take that many milliseconds of wall time (two runs then overlap, for the GPU lock's
//! tests). `witness-drift=US` (on the candidate) moves the harness's own unwitnessed time, the
//! lead-in and wake-up of every sample (a kernel's and the witness's control's), by US µs more
//! with each round measured in the process, as a host's may move over a run
//! (`crate::witness`). The simulated GPU's UUID is made from the seed ([`gpu_uuid`]), so runs
//! with the same seed share a GPU and its lock. The noise model ([`noise`], shared with the
//! calibration of the gate in `tests/it/calibration.rs`) is issue 19's
//! ([`NoiseModel::ISSUE`]): a process shift, a drift within the process, heavy-tailed round
//! shifts, throttled rounds, heavy-tailed samples with outliers.
//!
//! Nothing of it ever measures a real kernel: its GPU is named "Simulated GPU" ([`GPU_NAME`],
//! how `merge` tells a simulated shard), and it is refused in GitHub Actions
//! ([`simulation_seed`]).

use std::time::Duration;

pub mod noise;

use rand::RngExt;

use crate::backend::shapes::{ShapeSlot, ShapeSlots};
use crate::backend::{
    DeviceFacts, Energy, Facts, GpuError, Measure, Measurement, Pair, PhaseTimes, Prepare, Round,
    ShapeHandle, Side,
};
use crate::config::{MeasureSettings, ShapeParams, Tolerance};
use crate::kernel::{KernelDir, KernelRoles};
use crate::resources::KernelResources;
use crate::results::{Environment, GpuState, PairOrder, Parity};
pub use noise::{Noise, NoiseModel};

/// The name of the simulated GPU in a results file's environment (its slug:
/// `simulated-gpu`).
pub(crate) const GPU_NAME: &str = "Simulated GPU";

/// The share of each timed sample a `forge` kernel takes out of its event record.
pub(crate) const FORGED_SHARE: f64 = 0.4;

/// What a simulated `attention.cu` does.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SimKernel {
    pub hash: String,
    pub factor: f64,
    pub parity_fail: Option<String>,
    pub hang: Option<String>,
    pub error: Option<String>,
    pub skip: Option<String>,
    /// Shapes whose timed samples' records are shortened ([`FORGED_SHARE`]).
    pub forge: Option<String>,
    /// The share of each forged sample taken out of its record ([`FORGED_SHARE`] by default).
    pub forge_share: f64,
    /// Of a `forge` side's rounds, every this many-th is forged (the first, then every
    /// n-th; 1 by default: all).
    pub forge_rounds: u32,
    /// The share of the time a forged sample takes out of its record that an end event
    /// signalled early hides from the host until the checks (0 by default).
    pub forge_early: f64,
    pub clock: Option<String>,
    /// Multiplies the simulated board power in energy windows (1 by default).
    pub power: f64,
    /// Shapes whose energy windows the simulated counter cannot resolve (withheld figures).
    pub energy_coarse: Option<String>,
    /// Registers per thread its kernels report.
    pub regs: u32,
    /// Bytes spilled (stored and loaded) its kernels report.
    pub spill: u64,
    /// Another process appears on the GPU once a shape this applies to has begun.
    pub others: Option<String>,
    /// Wall-clock milliseconds each simulated round takes.
    pub wall_ms: u64,
    /// µs the harness's unwitnessed time moves with each round of the process (0 by
    /// default; read from the candidate).
    pub witness_drift: f64,
    /// Rows per CTA of its launches (grid.x = ⌈seq_len / rows⌉; 128 by default).
    pub rows: u32,
}

/// A `// ci-gate-sim:` directive that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SimDirectiveError {
    #[error("ci-gate-sim: {word:?} is not key=value")]
    NotKeyValue { word: String },
    #[error("ci-gate-sim: {key} {value:?} is not {expected}")]
    BadValue {
        key: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("ci-gate-sim: unknown key {key:?}")]
    UnknownKey { key: String },
}

impl SimKernel {
    /// Reads the `// ci-gate-sim:` line of a source (none: a plain kernel of factor 1).
    pub fn parse(text: &str, hash: &str) -> Result<SimKernel, SimDirectiveError> {
        let mut k = SimKernel {
            hash: hash.to_owned(),
            factor: 1.0,
            parity_fail: None,
            hang: None,
            error: None,
            skip: None,
            forge: None,
            forge_share: FORGED_SHARE,
            forge_rounds: 1,
            forge_early: 0.0,
            clock: None,
            power: 1.0,
            energy_coarse: None,
            regs: 128,
            spill: 0,
            others: None,
            wall_ms: 0,
            rows: 128,
            witness_drift: 0.0,
        };
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("// ci-gate-sim:") else {
                continue;
            };
            for word in rest.split_whitespace() {
                let Some((key, value)) = word.split_once('=') else {
                    return Err(SimDirectiveError::NotKeyValue {
                        word: word.to_owned(),
                    });
                };
                k.set(key, value)?;
            }
        }
        Ok(k)
    }

    /// Sets one `key=value` of a directive.
    fn set(&mut self, key: &str, value: &str) -> Result<(), SimDirectiveError> {
        /// `value` parsed as a `T` that `ok` accepts, else a `BadValue` naming `key`.
        fn number<T: std::str::FromStr>(
            key: &'static str,
            value: &str,
            ok: impl Fn(&T) -> bool,
            expected: &'static str,
        ) -> Result<T, SimDirectiveError> {
            value
                .parse::<T>()
                .ok()
                .filter(|v| ok(v))
                .ok_or_else(|| SimDirectiveError::BadValue {
                    key,
                    value: value.to_owned(),
                    expected,
                })
        }
        let positive = |f: &f64| f.is_finite() && *f > 0.0;
        let fault = Some(value.to_owned());
        match key {
            "factor" => self.factor = number("factor", value, positive, "a positive number")?,
            "power" => self.power = number("power", value, positive, "a positive number")?,
            "energy-coarse" => self.energy_coarse = fault,
            "parity-fail" => self.parity_fail = fault,
            "hang" => self.hang = fault,
            "error" => self.error = fault,
            "skip" => self.skip = fault,
            "forge" => self.forge = fault,
            "forge-share" => {
                let share = |f: &f64| *f > 0.0 && *f < 1.0;
                self.forge_share = number("forge-share", value, share, "a share between 0 and 1")?;
            }
            "forge-rounds" => {
                let n = |n: &u32| (1..=1000).contains(n);
                self.forge_rounds = number("forge-rounds", value, n, "1..=1000")?;
            }
            "forge-early" => {
                let share = |e: &f64| (0.0..=1.0).contains(e);
                self.forge_early = number("forge-early", value, share, "a share from 0 to 1")?;
            }
            "clock" => self.clock = fault,
            "regs" => self.regs = number("regs", value, |r| (1..=255).contains(r), "1..=255")?,
            "spill" => {
                self.spill = number("spill", value, |s| *s <= 1 << 20, "0..=1048576")?;
            }
            "others" => self.others = fault,
            "rows" => self.rows = number("rows", value, |r| (1..=1024).contains(r), "1..=1024")?,
            "witness-drift" => {
                let us = |d: &f64| d.is_finite() && d.abs() <= 1000.0;
                self.witness_drift = number("witness-drift", value, us, "µs from -1000 to 1000")?;
            }
            "wall" => {
                self.wall_ms = number("wall", value, |ms| *ms <= 10_000, "0..=10000")?;
            }
            _ => {
                return Err(SimDirectiveError::UnknownKey {
                    key: key.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// The `attention.cu` of `dir`, read and checked as the gate reads every kernel source
    /// (`kernel::source`, `kernel::lexcheck`), then its directives.
    fn read(dir: &KernelDir) -> Result<SimKernel, GpuError> {
        let src = dir.read_timed()?;
        let file = src.path.display().to_string();
        crate::kernel::lexcheck::check_no_file_access(&src.text, &file)?;
        SimKernel::parse(&src.text, &src.hash).map_err(|e| GpuError::Kernel(format!("{file}: {e}")))
    }

    fn hits(fault: &Option<String>, shape: &ShapeParams) -> bool {
        fault
            .as_deref()
            .is_some_and(|f| f == "*" || shape.name().contains(f))
    }

    /// Whether this kernel forges round `round` (0-based, of its side) of `shape`.
    fn forges(&self, shape: &ShapeParams, round: u32) -> bool {
        Self::hits(&self.forge, shape) && round.is_multiple_of(self.forge_rounds.max(1))
    }
}

/// The time a simulated kernel of factor 1 takes on `shape`, µs: its FLOPs at 300 TFLOP/s
/// (at least 2 µs).
fn base_us(shape: &ShapeParams) -> f64 {
    (shape.flops() / 300e12 * 1e6).max(2.0)
}

/// What the simulation keeps of a shape besides its measurements.
struct SimShape {
    /// The slowdown injected into the last side, µs per launch.
    inject_us: Option<f64>,
    /// The shape's own stream of the noise model.
    noise: Noise,
    /// Rounds each side has measured so far (which a `forge-rounds` side forges).
    rounds: [u32; 2],
}

/// The simulated GPU.
pub(crate) struct SimBackend {
    key: u64,
    model: NoiseModel,
    process_shift: f64,
    base: Option<SimKernel>,
    candidate: SimKernel,
    other: Option<SimKernel>,
    calibrated: bool,
    shapes: ShapeSlots<SimShape>,
    next_address: u64,
    /// The run's GPU-time budget, charged with the simulated samples' time.
    budget: crate::backend::GpuBudget,
    /// How long a simulated hang is waited for (`measure.max_wait_s`).
    max_wait: Duration,
    /// Every shape begun so far (for `others`).
    begun: Vec<ShapeParams>,
    /// Rounds measured so far in the process, of every shape and side (`witness-drift`).
    rounds_measured: u32,
}

/// Simulated launches per sample.
const LAUNCHES: u32 = 100;

/// Whether `env` is the simulated GPU's (what [`SimBackend`] records, and no real GPU's
/// name: NVML's names are the vendor's, e.g. "NVIDIA L4").
pub(crate) fn is_simulated(env: &Environment) -> bool {
    env.gpu_name.trim() == GPU_NAME || env.gpu_slug == crate::results::gpu_slug(GPU_NAME)
}

/// The environment variable that selects the simulated backend: its value seeds it
/// ("1" or any number). Tests and CI only.
pub(crate) const SIMULATE_ENV: &str = "CI_GATE_SIMULATE";

/// Set by GitHub Actions in every job, on hosted and self-hosted runners alike.
const GITHUB_ACTIONS_ENV: &str = "GITHUB_ACTIONS";

/// The one decision on the simulated GPU: its seed where [`SIMULATE_ENV`] selects it, None
/// where it does not (the GPU measures), an error where it is set on a runner. Everything
/// that reads [`SIMULATE_ENV`] asks here (a run once, through `run::BackendChoice::from_env`).
///
/// A simulated kernel's times are whatever its own `// ci-gate-sim: factor=…` line says, so
/// a simulated run on a runner would be a verdict written by the pull request. GitHub sets
/// `GITHUB_ACTIONS=true` in every job; the simulation is refused wherever the variable is
/// present, whatever its value (an empty or odd value included): only GitHub has a reason to
/// set it, a value other than GitHub's is an edit of the runner's environment, and a test
/// or a developer's machine that simulates simply does not have it (the integration tests
/// remove it from their commands).
pub fn simulation_seed() -> Result<Option<u64>, SimulationRefused> {
    simulation_seed_from(|name| std::env::var_os(name))
}

/// The simulated GPU asked for in GitHub Actions: refused, whatever else the run asks.
#[derive(Debug, thiserror::Error)]
#[error(
    "{SIMULATE_ENV} is set in GitHub Actions ({GITHUB_ACTIONS_ENV} is set), but the simulated GPU is a test device whose times the kernels' own `ci-gate-sim` lines decide, never a verdict on a runner: unset {SIMULATE_ENV}"
)]
pub struct SimulationRefused;

/// [`simulation_seed`] with the environment given (tests).
pub(crate) fn simulation_seed_from(
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<Option<u64>, SimulationRefused> {
    let Some(seed) = var(SIMULATE_ENV) else {
        return Ok(None);
    };
    if var(GITHUB_ACTIONS_ENV).is_some() {
        return Err(SimulationRefused);
    }
    Ok(Some(
        seed.to_string_lossy().trim().parse::<u64>().unwrap_or(1),
    ))
}

/// The simulated GPU's UUID for a seed: runs with the same seed are on the same simulated GPU
/// (and wait for each other's lock, `gpu::lock`).
pub fn gpu_uuid(seed: u64) -> String {
    format!(
        "GPU-5133d000-0000-4000-8000-{:012x}",
        seed & 0xffff_ffff_ffff
    )
}

/// The pid the simulated other process has (above Linux's largest pid, so no real process
/// has it).
pub(crate) const OTHER_PID: u32 = 4_200_000;

/// What the host's clock sees of a simulated round's samples beyond the events, µs, per
/// sample (`values`, per-launch µs): up to the end event a lead-in and wake-up of `lead_in`
/// plus 0–4 µs; after the end 2–6 µs of wake-up beyond the checks' own time, and as much after
/// the checks (the tail). A kernel that forges the round takes `share` of each sample out of
/// its record: the part `early` of it hidden by an early end shows after the end event, the
/// rest up to it; nothing after the checks (the span through the tail holds what the span
/// through the checks does).
fn witness_waits(
    values: &[f64],
    lead_in: f64,
    share: f64,
    early: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let taken = |v: f64| v * f64::from(LAUNCHES) * share / (1.0 - share);
    let wake = |i: usize| (i % 5) as f64;
    let unwitnessed = values.iter().enumerate();
    (
        unwitnessed
            .clone()
            .map(|(i, v)| lead_in + wake(i) + (1.0 - early) * taken(*v))
            .collect(),
        unwitnessed
            .map(|(i, v)| 2.0 + wake(i) + early * taken(*v))
            .collect(),
        (0..values.len()).map(|i| 2.0 + wake(i)).collect(),
    )
}

impl SimBackend {
    /// A simulated GPU seeded by `seed`, with kernel sets of the given behaviour.
    pub fn new(
        seed: u64,
        model: NoiseModel,
        base: Option<SimKernel>,
        candidate: SimKernel,
    ) -> SimBackend {
        let mut noise = Noise::new(seed ^ 0x5eed, model);
        let process_shift = model.process_sd * noise.z();
        SimBackend {
            key: seed,
            model,
            process_shift,
            base,
            candidate,
            other: None,
            calibrated: false,
            shapes: ShapeSlots::default(),
            next_address: 0x7f00_0000_0000,
            budget: crate::backend::GpuBudget::new(f64::INFINITY),
            max_wait: Duration::from_secs(15),
            begun: Vec::new(),
            rounds_measured: 0,
        }
    }

    /// The same simulation waiting `max_wait` for a hung kernel (`measure.max_wait_s`).
    pub(crate) fn with_max_wait(mut self, max_wait: Duration) -> SimBackend {
        self.max_wait = max_wait;
        self
    }

    /// The same simulation with a GPU-time budget of `seconds` (`measure.gpu_budget_s`).
    pub(crate) fn with_budget(mut self, seconds: f64) -> SimBackend {
        self.budget = crate::backend::GpuBudget::new(seconds);
        self
    }

    /// Opens the simulation for the `attention.cu` of each directory of `kernels` (the base
    /// and the candidate in A/B, else the candidate alone), read as the gate reads kernel
    /// sources.
    pub fn open(seed: u64, kernels: &KernelRoles) -> Result<SimBackend, GpuError> {
        let first = SimKernel::read(&kernels.with_harness)?;
        let (base, cand) = match &kernels.candidate {
            Some(dir) => (Some(first), SimKernel::read(dir)?),
            None => (None, first),
        };
        Ok(SimBackend::new(seed, NoiseModel::ISSUE, base, cand))
    }

    fn kernel(&self, side: Side) -> Result<&SimKernel, GpuError> {
        match side {
            Side::Base => self.base.as_ref().or(Some(&self.candidate)),
            Side::Candidate => Some(&self.candidate),
            Side::Other => self.other.as_ref(),
        }
        .ok_or(GpuError::NotLoaded { side: side.label() })
    }

    /// The faults of a launch of `side` on `shape`: a hang ends the process (the watchdog's
    /// path), an error is a CUDA error, a skip an integrity failure.
    fn launch(&self, side: Side, shape: &ShapeParams, what: &str) -> Result<(), GpuError> {
        let k = self.kernel(side)?;
        if SimKernel::hits(&k.hang, shape) {
            crate::backend::hang::end_simulated(
                &format!(
                    "kernel attention_fwd of the {} on shape {shape} ({what})",
                    side.label()
                ),
                self.max_wait,
            );
        }
        if SimKernel::hits(&k.error, shape) {
            return Err(GpuError::Simulated(format!(
                "kernel attention_fwd of the {} on shape {shape}: CUDA_ERROR_ILLEGAL_ADDRESS (simulated)",
                side.label()
            )));
        }
        Ok(())
    }

    /// The harness's lead-in and wake-up now, µs: 55, moved by the candidate's
    /// `witness-drift` for every round measured so far.
    fn lead_in_us(&self) -> f64 {
        55.0 + self.candidate.witness_drift * f64::from(self.rounds_measured)
    }

    /// One round of side `index` of shape `shape` at `level` (its log time).
    fn round_of(
        &mut self,
        shape: &ShapeHandle,
        index: usize,
        level: f64,
    ) -> Result<Round, GpuError> {
        let address = self.next_address;
        self.next_address += 0x10_0000;
        self.rounds_measured = self.rounds_measured.saturating_add(1);
        let lead_in = self.lead_in_us();
        let s = self.shapes.live(shape, "a round")?;
        let samples = s.settings.samples_per_round;
        let side = s.sides[index];
        // `Self::kernel` by field (`s` holds `self.shapes`); `level` has already refused an
        // `Other` side with no kernel.
        let kernel = match side {
            Side::Base => self.base.as_ref().unwrap_or(&self.candidate),
            Side::Candidate => &self.candidate,
            Side::Other => self.other.as_ref().unwrap_or(&self.candidate),
        };
        // A clock event on this side's kernel: a quarter of its rounds, drawn from the
        // shape's own coin (seeded), see the clock move during half their samples.
        let clocked = SimKernel::hits(&kernel.clock, &s.params) && s.coin.random::<f64>() < 0.25;
        let level = if clocked {
            level + 0.05f64.ln_1p()
        } else {
            level
        };
        let values = s.state.noise.round(level, samples as usize, false);
        let tolerance = s.tolerance;
        let wall_ms = kernel.wall_ms;
        if wall_ms > 0 {
            std::thread::sleep(Duration::from_millis(wall_ms));
        }
        let gpu_s = values.iter().sum::<f64>() * f64::from(LAUNCHES) / 1e6;
        let params = s.params;
        self.budget.charge(&params, side.label(), gpu_s, || {
            format!(
                "kernel attention_fwd of the {} on shape {params} (a simulated round)",
                side.label()
            )
        })?;
        // What the host's clock sees beyond the events ([`witness_waits`]), with the share
        // of each sample taken out of its record where the kernel forges this round.
        let round_no = s.state.rounds.get(index).copied().unwrap_or(0);
        let forged = kernel.forges(&s.params, round_no);
        if let Some(n) = s.state.rounds.get_mut(index) {
            *n += 1;
        }
        let share = if forged { kernel.forge_share } else { 0.0 };
        let (unwitnessed_us, after_end_us, after_checks_us) =
            witness_waits(&values, lead_in, share, kernel.forge_early);
        let (sm_clock_mhz, clock_events) = if clocked {
            (vec![1980, 1755], samples.div_ceil(2))
        } else {
            (vec![1980, 1980], 0)
        };
        Ok(Round {
            values,
            launches_per_sample: LAUNCHES,
            working_set_bytes: params.elements() as u64 * 10,
            addresses: vec![address],
            sm_clock_mhz,
            clock_events,
            wall_s: 0.01,
            checked_launches: u64::from(samples) * u64::from(LAUNCHES),
            worst_timed: Some(Parity {
                max_abs: 1e-4,
                rel_l2: 1e-4,
                centered: None,
                nan_or_inf: 0,
                unwritten: 0,
                tolerance,
                seed: 0,
            }),
            per_launch_ms: None,
            unwitnessed_us,
            after_end_us,
            after_checks_us,
        })
    }

    /// The simulated machine, its state now as the run's "before".
    pub(crate) fn environment(&self) -> Environment {
        Environment {
            gpu_name: GPU_NAME.into(),
            gpu_slug: crate::results::gpu_slug(GPU_NAME),
            gpu_uuid: Some(gpu_uuid(self.key)),
            compute_capability: "9.0".into(),
            sm_count: Some(132),
            l2_bytes: Some(60 << 20),
            driver_version: Some("simulated".into()),
            cuda_driver_version: Some("13.0".into()),
            nvrtc_version: None,
            state_before: self.state(),
            state_after: None,
        }
    }

    /// The log time of a side's round on this shape, before the round's own noise.
    fn level(&self, shape: &ShapeHandle, index: usize, shared: f64) -> Result<f64, GpuError> {
        let s = self
            .shapes
            .get(shape)
            .ok_or(GpuError::Ended { what: "a round" })?;
        let side = s.sides[index];
        let k = self.kernel(side)?;
        if SimKernel::hits(&k.skip, &s.params) {
            return Err(GpuError::Integrity(format!(
                "the {} kernel skipped work in its timed launches (simulated): 1000 elements unwritten (shape {})",
                side.label(),
                s.params
            )));
        }
        let mut us = base_us(&s.params) * k.factor;
        if k.forges(&s.params, s.state.rounds.get(index).copied().unwrap_or(0)) {
            us *= 1.0 - k.forge_share;
        }
        if index + 1 == s.sides.len()
            && let Some(extra) = s.state.inject_us
        {
            us += extra;
        }
        Ok(us.ln() + self.process_shift + shared)
    }
}

impl Facts for SimBackend {
    fn device(&self) -> DeviceFacts {
        DeviceFacts {
            environment: self.environment(),
            // The simulated kernels run at 300 TFLOP/s; a factor below 1/8 is impossible.
            peak_dense_tflops: 2400.0,
            run_key: self.key,
            base_hash: self.kernel(Side::Base).ok().map(|k| k.hash.clone()),
            candidate_hash: Some(self.candidate.hash.clone()),
        }
    }

    fn state(&self) -> Option<GpuState> {
        Some(GpuState {
            sm_clock_mhz: Some(1980),
            mem_clock_mhz: Some(3201),
            temperature_c: Some(40),
            power_w: Some(300.0),
            throttle_reasons: Vec::new(),
        })
    }

    /// This process (as NVML lists a process with a context, in the same pid namespace) and,
    /// where a kernel's `others` applies, another process.
    fn gpu_processes(
        &self,
    ) -> Result<Vec<crate::results::GpuProcess>, crate::backend::ProcessesUnlisted> {
        let mut list = vec![crate::results::GpuProcess {
            pid: std::process::id(),
            name: None,
            used_mib: Some(1024),
        }];
        let others = [self.base.as_ref(), Some(&self.candidate)]
            .into_iter()
            .flatten()
            .filter_map(|k| k.others.as_ref())
            .any(|f| f == "*" || self.begun.iter().any(|s| s.name().contains(f.as_str())));
        if others {
            list.push(crate::results::GpuProcess {
                pid: OTHER_PID,
                name: Some("sim-neighbour".into()),
                used_mib: Some(2048),
            });
        }
        Ok(list)
    }

    fn launch(&self, side: Side, shape: &ShapeParams) -> Option<crate::launch::Launch> {
        let k = self.kernel(side).ok()?;
        Some(crate::launch::Launch {
            kernel: format!("attention_fwd_{}_d{}", shape.dtype.short(), shape.head_dim),
            grid: [shape.seq_len.div_ceil(k.rows), shape.batch * shape.heads, 1],
            threads_per_block: 128,
            dynamic_smem_bytes: 32768,
        })
    }

    fn kernel_resources(&self, side: Side, shapes: &[ShapeParams]) -> Vec<KernelResources> {
        let (Ok(k), Some(side)) = (self.kernel(side), crate::backend::resource_side(side)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = shapes
            .iter()
            .map(|s| format!("attention_fwd_{}_d{}", s.dtype.short(), s.head_dim))
            .collect();
        names.sort();
        names.dedup();
        // An L4-like SM: 64 Ki registers, 100 KiB of shared memory, 128 threads per CTA.
        let threads = 128u32;
        let smem = 32768u64;
        let by_regs = 65536 / (k.regs * threads).max(1);
        let ctas = by_regs.min((100 * 1024 / smem) as u32);
        names
            .into_iter()
            .map(|kernel| KernelResources {
                side,
                kernel,
                registers: k.regs,
                spill_store_bytes: Some(k.spill),
                spill_load_bytes: Some(k.spill),
                stack_frame_bytes: k.spill,
                static_smem_bytes: 0,
                dynamic_smem_bytes: smem,
                threads_per_block: threads,
                max_ctas_per_sm: Some(ctas),
                note: None,
            })
            .collect()
    }

    fn input_sets(&self, _: &ShapeParams, _: &MeasureSettings) -> Result<usize, GpuError> {
        Ok(1)
    }

    fn phase_times(&self) -> PhaseTimes {
        PhaseTimes::default()
    }
}

impl Measure for SimBackend {
    fn prepare(&mut self, prepare: Prepare<'_>) -> Result<(), GpuError> {
        if prepare.calibrate_injection {
            self.calibrated = true;
        }
        Ok(())
    }

    fn parity(
        &mut self,
        side: Side,
        shape: &ShapeParams,
        tolerance: Tolerance,
        seed: u64,
    ) -> Result<Parity, GpuError> {
        self.launch(side, shape, "parity")?;
        let bad = SimKernel::hits(&self.kernel(side)?.parity_fail, shape);
        Ok(Parity {
            max_abs: if bad { 0.5 } else { tolerance.max_abs * 0.01 },
            rel_l2: if bad { 0.3 } else { tolerance.rel_l2 * 0.1 },
            centered: tolerance.centered.map(|t| if bad { 0.9 } else { t * 0.1 }),
            nan_or_inf: 0,
            unwritten: 0,
            tolerance,
            seed,
        })
    }

    fn load_other(&mut self, dir: &KernelDir, _: &[String]) -> Result<(), GpuError> {
        self.other = Some(SimKernel::read(dir)?);
        Ok(())
    }

    fn begin(
        &mut self,
        shape: &ShapeParams,
        sides: &[Side],
        settings: &MeasureSettings,
        tolerance: Tolerance,
        inject_us: Option<f64>,
        coin_seed: u64,
        seed: u64,
    ) -> Result<ShapeHandle, GpuError> {
        for side in sides {
            self.launch(*side, shape, "warm-up")?;
        }
        if inject_us.is_some() && !self.calibrated {
            return Err(GpuError::Misuse(
                "an injected slowdown needs calibrate_injection first",
            ));
        }
        self.begun.push(*shape);
        let state = SimShape {
            inject_us,
            noise: Noise::new(seed ^ self.key.rotate_left(7), self.model),
            rounds: [0; 2],
        };
        Ok(self.shapes.begin(ShapeSlot::new(
            *shape, sides, settings, tolerance, coin_seed, state,
        )))
    }

    fn pair(&mut self, shape: &ShapeHandle, _: &[Measurement]) -> Result<Pair, GpuError> {
        let (order, shared) = {
            let s = self.shapes.live(shape, "a pair")?;
            if s.sides.len() != 2 {
                return Err(GpuError::Misuse(
                    "a pair needs two sides (begin() was given one)",
                ));
            }
            let order = if s.coin.random::<bool>() {
                PairOrder::BaseFirst
            } else {
                PairOrder::CandFirst
            };
            (order, s.state.noise.pair_shift())
        };
        let levels = [self.level(shape, 0, shared)?, self.level(shape, 1, shared)?];
        let rounds = [
            self.round_of(shape, 0, levels[0])?,
            self.round_of(shape, 1, levels[1])?,
        ];
        Ok(Pair { order, rounds })
    }

    fn round(&mut self, shape: &ShapeHandle, _: &[Measurement]) -> Result<Round, GpuError> {
        let (index, shared) = {
            let s = self.shapes.live(shape, "a round")?;
            (s.sides.len() - 1, s.state.noise.round_shift())
        };
        let level = self.level(shape, index, shared)?;
        self.round_of(shape, index, level)
    }

    fn control(
        &mut self,
        settings: &MeasureSettings,
        samples: usize,
    ) -> Result<Option<Round>, GpuError> {
        // The harness's spin, one sample of `sample_ms` per value, its lead-in and wake-ups
        // (up to the end event and after the work that follows it) as every simulated
        // kernel's at this point of the process (`round_of`), never forged.
        let lead_in = self.lead_in_us();
        Ok(Some(Round {
            after_end_us: (0..samples).map(|i| 2.0 + (i % 5) as f64).collect(),
            ..Round::of_samples(
                vec![settings.sample_ms * 1000.0 / f64::from(LAUNCHES); samples],
                LAUNCHES,
                (0..samples).map(|i| lead_in + (i % 5) as f64).collect(),
            )
        }))
    }

    fn energy(
        &mut self,
        shape: &ShapeHandle,
        _: &[Measurement],
        rounds: u32,
        updates: u32,
    ) -> Result<Energy, GpuError> {
        let kernels: Vec<SimKernel> = {
            let s = self
                .shapes
                .get(shape)
                .ok_or(GpuError::Ended { what: "energy" })?;
            s.sides
                .iter()
                .map(|side| self.kernel(*side).cloned())
                .collect::<Result<_, _>>()?
        };
        let s = self.shapes.live(shape, "energy")?;
        let mut windows = vec![Vec::new(); kernels.len()];
        for _ in 0..rounds {
            for (i, k) in kernels.iter().enumerate() {
                if SimKernel::hits(&k.skip, &s.params) {
                    return Err(GpuError::Integrity(format!(
                        "the {} kernel skipped work in an energy window (simulated) (shape {})",
                        s.sides[i].label(),
                        s.params
                    )));
                }
                // A 400 W board (times the kernel's `power`) with 1% noise per window; the
                // counter moves every 100 ms and a read brackets a move to 2 ms (20 ms where
                // the directive makes it coarse).
                let power_w = 400.0 * k.power * (0.01 * s.state.noise.z()).exp();
                let call_ms =
                    base_us(&s.params) * k.factor / 1000.0 * (0.002 * s.state.noise.z()).exp();
                let span_ms = 100.0 * f64::from(updates);
                let replay_ms = call_ms * f64::from(LAUNCHES);
                windows[i].push(crate::energy::EnergyRound {
                    source: crate::energy::EnergySource::Counter,
                    power_w,
                    call_ms,
                    calls: (span_ms / replay_ms).ceil() as u64 * u64::from(LAUNCHES),
                    span_ms,
                    span_mj: power_w * span_ms,
                    updates: updates + 1,
                    read_ms: if SimKernel::hits(&k.energy_coarse, &s.params) {
                        20.0
                    } else {
                        2.0
                    },
                    replay_fraction: replay_ms / (replay_ms + 0.06),
                    timed_call_ms: None,
                });
            }
        }
        Ok(Energy::Windows(windows))
    }

    fn end(&mut self, shape: ShapeHandle) {
        self.shapes.end(shape);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Dtype;

    #[test]
    fn directives_say_what_a_simulated_kernel_does() {
        let k = SimKernel::parse(
            "// x\n// ci-gate-sim: factor=1.03 parity-fail=causal hang=b2h16\n",
            "h",
        )
        .unwrap();
        assert_eq!(k.factor, 1.03);
        let causal = ShapeParams::new(1, 8, 512, 64, true, Dtype::Float16);
        let plain = ShapeParams::new(1, 8, 512, 64, false, Dtype::Float16);
        assert!(SimKernel::hits(&k.parity_fail, &causal));
        assert!(!SimKernel::hits(&k.parity_fail, &plain));
        assert_eq!(SimKernel::parse("int x;", "h").unwrap().factor, 1.0);
        assert!(SimKernel::parse("// ci-gate-sim: factor=-1", "h").is_err());
        assert!(SimKernel::parse("// ci-gate-sim: speed=2", "h").is_err());
    }

    #[test]
    fn a_factor_shows_in_the_pairs_and_the_same_seed_gives_the_same_times() {
        let shape = ShapeParams::new(4, 16, 512, 64, false, Dtype::Float16);
        let slow = SimKernel::parse("// ci-gate-sim: factor=1.10", "b").unwrap();
        let plain = SimKernel::parse("", "a").unwrap();
        let run = || {
            let mut b = SimBackend::new(3, NoiseModel::ISSUE, Some(plain.clone()), slow.clone());
            let tol = Tolerance {
                max_abs: 1e-2,
                rel_l2: 1e-3,
                centered: None,
            };
            let shape = b
                .begin(
                    &shape,
                    &[Side::Base, Side::Candidate],
                    &MeasureSettings::default(),
                    tol,
                    None,
                    1,
                    2,
                )
                .unwrap();
            let mut sides = vec![Measurement::empty(), Measurement::empty()];
            let mut orders = Vec::new();
            for _ in 0..8 {
                let pair = b.pair(&shape, &sides).unwrap();
                orders.push(pair.order);
                for (m, round) in sides.iter_mut().zip(pair.rounds) {
                    m.push(round);
                }
            }
            let med = |i: usize| {
                let mut v: Vec<f64> = sides[i].rounds.concat();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            (med(0), med(1), orders.len())
        };
        let (base, cand, orders) = run();
        assert_eq!(orders, 8);
        let ratio = cand / base;
        assert!((1.07..1.13).contains(&ratio), "{ratio}");
        assert_eq!(run(), (base, cand, orders));
    }
}

#[cfg(test)]
mod selection_tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    fn seed(vars: &[(&str, &str)]) -> Result<Option<u64>, SimulationRefused> {
        let map: HashMap<&str, OsString> = vars.iter().map(|(k, v)| (*k, (*v).into())).collect();
        simulation_seed_from(|k| map.get(k).cloned())
    }

    #[test]
    fn the_simulation_is_refused_wherever_github_actions_is_set() {
        assert_eq!(seed(&[]).unwrap(), None);
        assert_eq!(seed(&[("GITHUB_ACTIONS", "true")]).unwrap(), None);
        assert_eq!(seed(&[("CI_GATE_SIMULATE", "7")]).unwrap(), Some(7));
        assert_eq!(seed(&[("CI_GATE_SIMULATE", " 7 ")]).unwrap(), Some(7));
        assert_eq!(seed(&[("CI_GATE_SIMULATE", "yes")]).unwrap(), Some(1));
        for value in ["true", "false", "", "1"] {
            let e = seed(&[("CI_GATE_SIMULATE", "1"), ("GITHUB_ACTIONS", value)])
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                "CI_GATE_SIMULATE is set in GitHub Actions (GITHUB_ACTIONS is set), but the simulated GPU is a test device whose times the kernels' own `ci-gate-sim` lines decide, never a verdict on a runner: unset CI_GATE_SIMULATE",
                "{value:?}"
            );
        }
    }

    #[test]
    fn the_simulated_gpu_is_told_by_its_name_or_slug() {
        let kernel = SimKernel::parse("// ci-gate-sim: factor=1\n", "00").unwrap();
        let backend = SimBackend::new(1, NoiseModel::ISSUE, None, kernel);
        assert!(is_simulated(&backend.environment()));
        let mut env = Environment {
            gpu_name: GPU_NAME.into(),
            gpu_slug: "simulated-gpu".into(),
            gpu_uuid: None,
            compute_capability: "9.0".into(),
            sm_count: None,
            l2_bytes: None,
            driver_version: None,
            cuda_driver_version: None,
            nvrtc_version: None,
            state_before: None,
            state_after: None,
        };
        assert!(is_simulated(&env));
        env.gpu_name = "NVIDIA H200".into();
        assert!(is_simulated(&env), "the slug alone");
        env.gpu_slug = crate::results::gpu_slug("NVIDIA H200");
        assert!(!is_simulated(&env));
        env.gpu_name = GPU_NAME.into();
        assert!(is_simulated(&env), "the name alone");
    }
}
