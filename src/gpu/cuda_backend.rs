//! The GPU behind [`Measure`] and [`Facts`]: a [`Gpu`] with the base's kernels (the harness
//! and its `attention.cu`), the candidate's `attention.cu`, and on demand a third; the shapes
//! being measured keep their held buffers here. A call measures into a copy of the engine's
//! measurement so far (the code in `measure` continues from it: the round's number, the
//! launches per sample, the last warm-up) and returns what it added.

use std::path::Path;
use std::time::Duration;

use super::device::{AttentionSet, Gpu, Kernel};
use super::energy_windows::measure_energy;
use super::error::GpuError;
use super::measure::{
    AbSide, Bench, CONTROL_DUTY_CYCLE, Control, Held, Injection, SpinCalibration, calibrate_spin,
    extend, measure_pairs, phase_times, sets_for, spin_up,
};
use super::parity::{ParityReferences, check_parity_with};
use crate::backend::shapes::{ShapeSlot, ShapeSlots};
use crate::backend::{
    DeviceFacts, Energy, Facts, Measure, Measurement, Pair, PhaseTimes, Prepare, Round,
    ShapeHandle, Side,
};
use crate::config::{MeasureSettings, ShapeParams, Tolerance};
use crate::kernel::{KernelDir, KernelRoles};
use crate::resources::KernelResources;
use crate::results::{GpuState, Parity};

/// What the GPU keeps of a shape besides its measurements.
struct CudaShape {
    /// The slowdown injected into the last side.
    injection: Option<Injection>,
    /// Seeds the shape's inputs.
    seed: u64,
    /// Buffers held between rounds.
    held: Held,
}

/// The GPU: the harness and base kernels in `gpu`, the candidate's when it differs, a third
/// set when one is loaded.
pub(crate) struct CudaBackend {
    gpu: Gpu,
    candidate: Option<AttentionSet>,
    other: Option<AttentionSet>,
    calibration: Option<SpinCalibration>,
    shapes: ShapeSlots<CudaShape>,
    /// How long the base's parity check of each shape took: the candidate's kernel on that
    /// shape is then given 20 times as long (at least 5 s, at most `measure.max_wait_s`)
    /// before it counts as hung.
    parity_times: std::collections::HashMap<ShapeParams, Duration>,
    /// The last parity check's reference output, for the other side of the same shape.
    parity_references: ParityReferences,
    /// The witness's control (its graph and events), built at the first round of a side
    /// alone and sampled after each.
    control: Option<Control>,
}

impl CudaBackend {
    /// Opens device 0 with the harness (its reference and utility kernels) and the
    /// `attention.cu` of `kernels.with_harness` (the base) and, where the candidate is another
    /// directory, that directory's `attention.cu` as the candidate; all compiled in parallel,
    /// with `defines`. Every wait for the GPU is bounded by `max_wait`, and the timed kernels
    /// may take `gpu_budget_s` seconds of GPU time in all (`measure.gpu_budget_s`).
    pub fn open(
        kernels: &KernelRoles,
        defines: &[String],
        max_wait: Duration,
        gpu_budget_s: f64,
    ) -> Result<CudaBackend, GpuError> {
        let harness = kernels.with_harness.path();
        let candidate = kernels.candidate.as_ref().map(KernelDir::path);
        let others: Vec<&Path> = candidate.into_iter().collect();
        let t = std::time::Instant::now();
        let (mut gpu, mut loaded) = Gpu::open_compiling(harness, defines, &others)?;
        crate::backend::spans::add("setup.open", t);
        gpu.max_wait = max_wait;
        gpu.budget = std::sync::Mutex::new(crate::backend::GpuBudget::new(gpu_budget_s));
        let candidate = loaded.pop();
        Ok(CudaBackend {
            gpu,
            candidate,
            other: None,
            calibration: None,
            shapes: ShapeSlots::default(),
            parity_times: std::collections::HashMap::new(),
            parity_references: ParityReferences::default(),
            control: None,
        })
    }

    fn set(&self, side: Side) -> Option<&AttentionSet> {
        match side {
            Side::Base => Some(&self.gpu.kernels.attention),
            Side::Candidate => Some(
                self.candidate
                    .as_ref()
                    .unwrap_or(&self.gpu.kernels.attention),
            ),
            Side::Other => self.other.as_ref(),
        }
    }

    /// Charges `spent` (wall time of a check that ran `side`'s kernel on `shape`, an upper
    /// bound of its GPU time) to the run's GPU budget.
    fn charge(
        &self,
        shape: &ShapeParams,
        side: Side,
        spent: Duration,
        phase: &str,
    ) -> Result<(), GpuError> {
        self.gpu
            .charge(shape, side.label(), spent.as_secs_f64(), || {
                format!("the {} kernel on shape {shape} ({phase})", side.label())
            })
    }

    fn kernel(&self, side: Side, shape: &ShapeParams) -> Result<&Kernel, GpuError> {
        self.set(side)
            .ok_or(GpuError::NotLoaded { side: side.label() })?
            .get(shape)
    }
}

impl Facts for CudaBackend {
    fn device(&self) -> DeviceFacts {
        DeviceFacts {
            environment: super::env::environment(&self.gpu.info, &self.gpu.monitor),
            peak_dense_tflops: self.gpu.peak_dense_tflops(),
            run_key: self.gpu.run_key.0,
            base_hash: self.set(Side::Base).map(|s| s.source_hash.clone()),
            candidate_hash: self.set(Side::Candidate).map(|s| s.source_hash.clone()),
        }
    }

    fn state(&self) -> Option<GpuState> {
        self.gpu.monitor.state()
    }

    fn gpu_processes(
        &self,
    ) -> Result<Vec<crate::results::GpuProcess>, crate::backend::ProcessesUnlisted> {
        Ok(self
            .gpu
            .monitor
            .compute_processes()?
            .into_iter()
            .map(|(pid, bytes)| crate::results::GpuProcess {
                pid,
                name: None,
                used_mib: bytes.map(|b| b.div_ceil(1 << 20)),
            })
            .collect())
    }

    fn input_sets(
        &self,
        shape: &ShapeParams,
        settings: &MeasureSettings,
    ) -> Result<usize, GpuError> {
        sets_for(&self.gpu, shape, settings.cache)
    }

    fn phase_times(&self) -> PhaseTimes {
        phase_times()
    }

    fn kernel_resources(&self, side: Side, shapes: &[ShapeParams]) -> Vec<KernelResources> {
        match (self.set(side), crate::backend::resource_side(side)) {
            (Some(set), Some(recorded)) => set.kernel_resources(recorded, shapes),
            _ => Vec::new(),
        }
    }

    fn launch(&self, side: Side, shape: &ShapeParams) -> Option<crate::launch::Launch> {
        self.set(side)?.launch(shape)
    }
}

/// The round a call added to a copy of the engine's measurement `before`.
fn added(before: &Measurement, after: &Measurement) -> Result<Round, GpuError> {
    after
        .round_since(before)
        .ok_or(GpuError::Misuse("a round was measured but not recorded"))
}

impl Measure for CudaBackend {
    fn prepare(&mut self, prepare: Prepare<'_>) -> Result<(), GpuError> {
        if prepare.calibrate_injection {
            self.calibration = Some(calibrate_spin(&self.gpu)?);
        }
        let Some((shape, ms)) = prepare.spin_up else {
            return Ok(());
        };
        // The harness directory's attention.cu: the base's with a base, else the candidate's.
        let side = if self.candidate.is_some() {
            Side::Base
        } else {
            Side::Candidate
        };
        let started = std::time::Instant::now();
        let r = crate::backend::spans::time("setup.spin_up", || {
            spin_up(&self.gpu, shape, side.label(), ms)
        });
        self.charge(shape, side, started.elapsed(), "spin-up")?;
        r
    }

    fn parity(
        &mut self,
        side: Side,
        shape: &ShapeParams,
        tolerance: Tolerance,
        seed: u64,
    ) -> Result<Parity, GpuError> {
        let mut references = std::mem::take(&mut self.parity_references);
        let kernel = self.kernel(side, shape)?;
        let expected = match side {
            Side::Base => None,
            Side::Candidate | Side::Other => self.parity_times.get(shape).copied(),
        };
        let started = std::time::Instant::now();
        let parity = check_parity_with(
            &self.gpu,
            kernel,
            side.label(),
            shape,
            (tolerance, seed, expected),
            &mut references,
        );
        self.parity_references = references;
        if side == Side::Base && parity.is_ok() {
            self.parity_times.insert(*shape, started.elapsed());
        }
        self.charge(shape, side, started.elapsed(), "parity")?;
        parity
    }

    fn load_other(&mut self, dir: &KernelDir, defines: &[String]) -> Result<(), GpuError> {
        self.other = Some(self.gpu.load_attention_with(dir.path(), defines)?);
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
            self.kernel(*side, shape)?;
        }
        let injection = match (inject_us, self.calibration) {
            (Some(us), Some(calibration)) => Some(Injection {
                us_per_launch: us,
                calibration,
            }),
            (Some(_), None) => {
                return Err(GpuError::Misuse(
                    "an injected slowdown needs calibrate_injection first",
                ));
            }
            (None, _) => None,
        };
        let state = CudaShape {
            injection,
            seed,
            held: Held::default(),
        };
        Ok(self.shapes.begin(ShapeSlot::new(
            *shape, sides, settings, tolerance, coin_seed, state,
        )))
    }

    fn pair(&mut self, shape: &ShapeHandle, so_far: &[Measurement]) -> Result<Pair, GpuError> {
        let mut s = self.shapes.take(shape, "a pair")?;
        let result = (|| {
            let ([first, second], [m0, m1]) = (s.sides.as_slice(), so_far) else {
                return Err(GpuError::Misuse(
                    "a pair needs two sides (begin() was given one)",
                ));
            };
            let bench = Bench {
                gpu: &self.gpu,
                shape: &s.params,
                settings: &s.settings,
                tolerance: s.tolerance,
            };
            let mut pair = [
                AbSide {
                    m: m0.clone(),
                    ..AbSide::new(self.kernel(*first, &s.params)?, None, first.label())
                },
                AbSide {
                    m: m1.clone(),
                    ..AbSide::new(
                        self.kernel(*second, &s.params)?,
                        s.state.injection,
                        second.label(),
                    )
                },
            ];
            let mut orders = Vec::with_capacity(1);
            measure_pairs(
                &bench,
                &mut pair,
                &mut s.coin,
                s.state.seed,
                &mut s.state.held,
                &mut orders,
                1,
            )?;
            let order = orders
                .last()
                .copied()
                .ok_or(GpuError::Misuse("a pair was measured but not recorded"))?;
            let [a, b] = pair;
            Ok(Pair {
                order,
                rounds: [added(m0, &a.m)?, added(m1, &b.m)?],
            })
        })();
        self.shapes.put(shape, s);
        result
    }

    fn round(&mut self, shape: &ShapeHandle, so_far: &[Measurement]) -> Result<Round, GpuError> {
        let mut s = self.shapes.take(shape, "a round")?;
        let result = (|| {
            let (Some(side), Some(m)) = (s.sides.last(), so_far.last()) else {
                return Err(GpuError::Misuse("a shape without sides"));
            };
            let bench = Bench {
                gpu: &self.gpu,
                shape: &s.params,
                settings: &s.settings,
                tolerance: s.tolerance,
            };
            let mut one = AbSide {
                m: m.clone(),
                ..AbSide::new(
                    self.kernel(*side, &s.params)?,
                    s.state.injection,
                    side.label(),
                )
            };
            extend(&bench, &mut one, s.state.seed, &mut s.state.held, 1)?;
            added(m, &one.m)
        })();
        self.shapes.put(shape, s);
        result
    }

    fn control(
        &mut self,
        settings: &MeasureSettings,
        samples: usize,
    ) -> Result<Option<Round>, GpuError> {
        crate::backend::spans::time("round.witness_control", || {
            let control = match self.control.take() {
                Some(c) if c.fits(settings) => c,
                _ => Control::new(&self.gpu, settings)?,
            };
            let round = control.round(&self.gpu, CONTROL_DUTY_CYCLE, samples);
            self.control = Some(control);
            round
        })
        .map(Some)
    }

    fn energy(
        &mut self,
        shape: &ShapeHandle,
        so_far: &[Measurement],
        rounds: u32,
        updates: u32,
    ) -> Result<Energy, GpuError> {
        let s = self.shapes.take(shape, "energy")?;
        let result = (|| {
            if s.sides.len() != so_far.len() {
                return Err(GpuError::Misuse(
                    "energy needs what every side measured so far",
                ));
            }
            let bench = Bench {
                gpu: &self.gpu,
                shape: &s.params,
                settings: &s.settings,
                tolerance: s.tolerance,
            };
            let mut sides = s
                .sides
                .iter()
                .zip(so_far)
                .map(|(side, m)| {
                    // The kernel's own energy: no injected slowdown.
                    Ok(AbSide {
                        m: m.clone(),
                        ..AbSide::new(self.kernel(*side, &s.params)?, None, side.label())
                    })
                })
                .collect::<Result<Vec<_>, GpuError>>()?;
            if let Some(why) = measure_energy(&bench, &mut sides, s.state.seed, rounds, updates)? {
                return Ok(Energy::Unavailable(why));
            }
            Ok(Energy::Windows(
                sides
                    .into_iter()
                    .zip(so_far)
                    .map(|(side, before)| {
                        side.m
                            .energy
                            .get(before.energy.len()..)
                            .unwrap_or_default()
                            .to_vec()
                    })
                    .collect(),
            ))
        })();
        self.shapes.put(shape, s);
        result
    }

    fn end(&mut self, shape: ShapeHandle) {
        self.shapes.end(shape);
    }
}
