//! Timing, as the design's measurements on an H200 shaped it:
//! - warm-up before any sample is kept;
//! - launches batched in a CUDA graph so one sample (one replay) is long enough to swamp
//!   launch jitter; a sample is the replay's time divided by its launches;
//! - several rounds, each with freshly allocated buffers behind a random-sized spacer, so
//!   placement and run-to-run drift show up in the samples instead of hiding between runs;
//! - hot cache (one buffer set) or cold cache (sets rotated so the working set exceeds L2);
//! - A/B: the base and the candidate measured in pairs of rounds whose order a seeded coin
//!   draws, the two rounds' samples alternating (ABBA ...) so drift and clock swings hit both
//!   sides alike; how many pairs is the pipeline's planned design.

use std::time::{Duration, Instant};

use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaEvent, CudaGraph, CudaSlice};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::buffers::{Inputs, Operands, check_shape, launch_on, launch_with, random_inputs};
use super::device::{Gpu, Kernel};
use super::error::{DriverContext, GpuError};
use super::integrity::{
    HashParts, KvRefs, LaunchSecrets, OutputSlots, hash_parts, refill_inputs, slot_budget_bytes,
};
use super::raw;
use crate::config::{CacheMode, MeasureSettings, ShapeParams, Tolerance};
use crate::results::PairOrder;

/// The spin kernel's cost model: one launch inside a graph takes `overhead_us + cycles · us_per_cycle`.
#[derive(Clone, Copy, Debug)]
pub struct SpinCalibration {
    pub overhead_us: f64,
    pub us_per_cycle: f64,
}

/// A slowdown added on purpose (selftest): spin kernels spread through each sample's graph
/// adding `us_per_launch` per attention launch on average.
#[derive(Clone, Copy, Debug)]
pub struct Injection {
    pub us_per_launch: f64,
    pub calibration: SpinCalibration,
}

/// What is measured: one shape on one GPU, with the config's measurement settings and the
/// parity tolerance every timed launch's output is checked against.
#[derive(Clone, Copy)]
pub struct Bench<'a> {
    pub gpu: &'a Gpu,
    pub shape: &'a ShapeParams,
    pub settings: &'a MeasureSettings,
    pub tolerance: Tolerance,
}

pub use crate::backend::Measurement;

/// Bytes one launch reads and writes: Q, K, V in 16 bits, the output in 32.
fn bytes_per_set(shape: &ShapeParams) -> u64 {
    shape.elements() as u64 * (3 * 2 + 4)
}

/// Buffer sets to rotate through: for hot cache two where both fit in three quarters of L2
/// (so that no launch reads the K/V its predecessor read, and both stay warm), else one; for
/// cold cache enough that the working set is at least 3× L2, so each launch finds its inputs
/// evicted.
pub(crate) fn sets_for(
    gpu: &Gpu,
    shape: &ShapeParams,
    cache: CacheMode,
) -> Result<usize, GpuError> {
    match cache {
        CacheMode::Hot => Ok(if 2 * bytes_per_set(shape) <= gpu.info.l2_bytes / 4 * 3 {
            2
        } else {
            1
        }),
        CacheMode::Cold => {
            let per = bytes_per_set(shape);
            let sets = (3 * gpu.info.l2_bytes).div_ceil(per).max(2);
            let total = sets * per;
            let (free, _) = gpu
                .ctx
                .mem_get_info()
                .during(|| "reading free device memory".into())?;
            if total > free as u64 / 2 {
                return Err(GpuError::Shape {
                    shape: shape.name(),
                    why: format!(
                        "a cold-cache working set of {total} bytes does not fit in half the free device memory"
                    ),
                });
            }
            if total <= gpu.info.l2_bytes {
                return Err(GpuError::Shape {
                    shape: shape.name(),
                    why: format!(
                        "cold-cache working set {total} bytes does not exceed L2 ({} bytes)",
                        gpu.info.l2_bytes
                    ),
                });
            }
            Ok(sets as usize)
        }
    }
}

fn timing_event(gpu: &Gpu) -> Result<CudaEvent, GpuError> {
    gpu.ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .during(|| "creating a timing event".into())
}

pub use crate::backend::PhaseTimes;

static PHASES: std::sync::Mutex<PhaseTimes> = std::sync::Mutex::new(PhaseTimes {
    references_s: 0.0,
    preparing_s: 0.0,
    sampling_s: 0.0,
    finishing_s: 0.0,
});

fn add_phase(since: Instant, f: impl FnOnce(&mut PhaseTimes) -> &mut f64) {
    let mut p = PHASES.lock().unwrap_or_else(|e| e.into_inner());
    *f(&mut p) += since.elapsed().as_secs_f64();
}

/// The phase times so far in this process.
pub(crate) fn phase_times() -> PhaseTimes {
    *PHASES.lock().unwrap_or_else(|e| e.into_inner())
}

/// SM cycles of the spin that precedes each sample (~50 µs at 2 GHz): long enough for the
/// host to enqueue the replay behind it.
const LEAD_CYCLES: i64 = 100_000;

/// The seeds of the input sets of round `round` (fresh inputs every round), mixed with the
/// run's secret key so a kernel cannot know its inputs in advance.
fn round_seeds(gpu: &Gpu, seed: u64, round: u64, sets: usize) -> Vec<u64> {
    (0..sets as u64)
        .map(|i| seed.wrapping_add(round * 1_000 + i) ^ gpu.run_key.0)
        .collect()
}

/// The reference's own keys and values of round `round`: fresh input sets of its own seeds
/// (the cache mode's sets of them), which the sides' inputs are filled from too.
fn round_kv(b: &Bench<'_>, seed: u64, round: u64) -> Result<KvRefs, GpuError> {
    let sets = sets_for(b.gpu, b.shape, b.settings.cache)?;
    KvRefs::new(
        b.gpu,
        b.shape,
        round_seeds(b.gpu, seed, round, sets),
        b.gpu.run_key,
    )
}

/// Measures `rounds` rounds of one shape with the device's own attention kernel (each round
/// on fresh buffers).
pub fn measure(
    b: &Bench<'_>,
    rounds: u32,
    injection: Option<Injection>,
    seed: u64,
) -> Result<Measurement, GpuError> {
    let mut side = AbSide::new(b.gpu.kernels.attention(b.shape)?, injection, "candidate");
    extend(b, &mut side, seed, &mut Held::default(), rounds)?;
    Ok(side.m)
}

/// Adds `rounds` more rounds of `side`'s kernel to its measurement (with the same launches
/// per sample); each round's reference outputs are computed for it.
pub fn extend(
    b: &Bench<'_>,
    side: &mut AbSide<'_>,
    seed: u64,
    held: &mut Held,
    rounds: u32,
) -> Result<(), GpuError> {
    check_shape(b.shape)?;
    let start = Instant::now();
    for _ in 0..rounds {
        let round = side.m.rounds.len() as u64;
        let t = Instant::now();
        let mut kv = round_kv(b, seed, round)?;
        add_phase(t, |p| &mut p.references_s);
        let t = Instant::now();
        let mut prepared = prepare_round(b, side, &kv, seed)?;
        add_phase(t, |p| &mut p.preparing_s);
        side.m.sm_clock_mhz.extend(b.gpu.monitor.sm_clock_mhz());
        for _ in 0..b.settings.samples_per_round {
            let t = Instant::now();
            take_sample(b, side.kernel, side.label, &mut prepared, &mut kv)?;
            add_phase(t, |p| &mut p.sampling_s);
        }
        side.m.sm_clock_mhz.extend(b.gpu.monitor.sm_clock_mhz());
        let t = Instant::now();
        finish_round(b, side, prepared, held)?;
        add_phase(t, |p| &mut p.finishing_s);
    }
    side.m.wall_s += start.elapsed().as_secs_f64();
    Ok(())
}

/// One side of an A/B run: its kernel, its injected slowdown (selftest), its name in
/// messages ("base" or "candidate") and its rounds.
pub struct AbSide<'a> {
    pub kernel: &'a Kernel,
    pub injection: Option<Injection>,
    pub label: &'static str,
    pub m: Measurement,
}

impl<'a> AbSide<'a> {
    pub fn new(
        kernel: &'a Kernel,
        injection: Option<Injection>,
        label: &'static str,
    ) -> AbSide<'a> {
        AbSide {
            kernel,
            injection,
            label,
            m: Measurement::empty(),
        }
    }
}

/// Measures `pairs` more pairs of rounds of two sides: per pair a coin from `coin` decides
/// whether the base (`sides[0]`) or the candidate (`sides[1]`) goes first. Both rounds of a
/// pair are prepared (fresh buffers filled with the same values for both sides, warm-up,
/// graph; the same launches per sample, set by the first round measured), then their
/// samples alternate, first-drawn side first, then in mirrored order (ABBA ABBA ...), each
/// followed by the duty cycle's idle time. The two rounds of a pair thus span the same
/// stretch of time: a clock that moves under the power cap moves both alike, where whole
/// rounds one after the other (~80 ms each) landed on different clocks and the pair's ratio
/// carried the swing (docs/PERF.md, 2026-11-22 evening). Every timed launch of both sides is
/// checked against one reference output per input set. Appends each pair's order to `orders`.
pub fn measure_pairs(
    b: &Bench<'_>,
    sides: &mut [AbSide<'_>; 2],
    coin: &mut ChaCha8Rng,
    seed: u64,
    held: &mut Held,
    orders: &mut Vec<PairOrder>,
    pairs: u32,
) -> Result<(), GpuError> {
    check_shape(b.shape)?;
    for _ in 0..pairs {
        let order = if coin.random::<bool>() {
            PairOrder::BaseFirst
        } else {
            PairOrder::CandFirst
        };
        let sequence = match order {
            PairOrder::BaseFirst => [0, 1],
            PairOrder::CandFirst => [1, 0],
        };
        let start = Instant::now();
        let round = sides[1].m.rounds.len() as u64;
        let t = Instant::now();
        let mut kv = round_kv(b, seed, round)?;
        add_phase(t, |p| &mut p.references_s);
        let mut prepared: [Option<PreparedRound>; 2] = [None, None];
        for i in sequence {
            let launches = sides[0]
                .m
                .launches_per_sample
                .max(sides[1].m.launches_per_sample);
            let side = &mut sides[i];
            side.m.launches_per_sample = launches;
            let t = Instant::now();
            prepared[i] = Some(prepare_round(b, side, &kv, seed)?);
            add_phase(t, |p| &mut p.preparing_s);
        }
        let [Some(mut base_round), Some(mut cand_round)] = prepared else {
            return Err(GpuError::Internal(format!(
                "a pair of rounds on shape {} was not prepared",
                b.shape
            )));
        };
        let clocks = b.gpu.monitor.sm_clock_mhz();
        for side in sides.iter_mut() {
            side.m.sm_clock_mhz.extend(clocks.iter().copied());
        }
        for k in 0..b.settings.samples_per_round {
            let mirrored = k % 2 == 1;
            for slot in 0..2 {
                // Which side this slot samples: the pair's order, mirrored every other time.
                let i = sequence[if mirrored { 1 - slot } else { slot }];
                let round = if i == 0 {
                    &mut base_round
                } else {
                    &mut cand_round
                };
                let t = Instant::now();
                take_sample(b, sides[i].kernel, sides[i].label, round, &mut kv)?;
                add_phase(t, |p| &mut p.sampling_s);
            }
        }
        let clocks = b.gpu.monitor.sm_clock_mhz();
        for side in sides.iter_mut() {
            side.m.sm_clock_mhz.extend(clocks.iter().copied());
        }
        let half = start.elapsed().as_secs_f64() / 2.0;
        let t = Instant::now();
        for (side, round) in sides.iter_mut().zip([base_round, cand_round]) {
            finish_round(b, side, round, held)?;
            side.m.wall_s += half;
        }
        add_phase(t, |p| &mut p.finishing_s);
        orders.push(order);
    }
    Ok(())
}

/// Buffers of earlier rounds, kept allocated so that each new round lands on memory the
/// process has not used yet: freed memory goes back to the allocator's pool and would be
/// handed out again, which made every round of a process share one physical placement and
/// left the placement effect (~0.5% on an H200) between processes instead of in the samples.
///
/// A kernel can reach them (they are memory of the context), so they are not a place it may
/// keep anything: each round is hashed when it is kept, and every later round verifies that
/// every held round still hashes so ([`Held::verify`]).
#[derive(Default)]
pub struct Held {
    rounds: std::collections::VecDeque<HeldRound>,
    bytes: u64,
}

/// One round's buffers, held, with the hash they must keep.
struct HeldRound {
    spacer: CudaSlice<f32>,
    inputs: Vec<Inputs>,
    slots: OutputSlots,
    secrets: LaunchSecrets,
    bytes: u64,
    hash: u64,
}

impl HeldRound {
    fn hash(&self, gpu: &Gpu) -> Result<u64, GpuError> {
        let parts = HashParts {
            u16s: self
                .inputs
                .iter()
                .flat_map(|s| [s.q.as_view(), s.k.as_view(), s.v.as_view()])
                .chain([self.secrets.pool()])
                .collect(),
            u32s: vec![self.spacer.as_view(), self.slots.region()],
        };
        hash_parts(
            gpu,
            &parts,
            gpu.run_key.0 ^ 0x4e1d_0b0f_fe25_0000,
            "held buffers",
        )
    }
}

impl Held {
    /// Keeps a round's buffers (hashed now), dropping the oldest rounds beyond `cap` bytes.
    fn keep(&mut self, gpu: &Gpu, round: PreparedRound, cap: u64) -> Result<(), GpuError> {
        let bytes = round.spacer.len() as u64 * 4
            + round.inputs.len() as u64 * 3 * 2 * round.input_elements()
            + round.slots.bytes()
            + round.secrets.bytes();
        let mut held = HeldRound {
            spacer: round.spacer,
            inputs: round.inputs,
            slots: round.slots,
            secrets: round.secrets,
            bytes,
            hash: 0,
        };
        held.hash = held.hash(gpu)?;
        self.rounds.push_back(held);
        self.bytes += bytes;
        while self.bytes > cap && self.rounds.len() > 1 {
            if let Some(dropped) = self.rounds.pop_front() {
                self.bytes -= dropped.bytes;
            }
        }
        Ok(())
    }

    /// Whether every held round still holds what it held when it was kept.
    fn verify(&self, gpu: &Gpu) -> Result<bool, GpuError> {
        for round in &self.rounds {
            if round.hash(gpu)? != round.hash {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// A round made ready to sample: its buffers (fresh, behind a spacer), its CUDA graph of
/// `launches_per_sample` launches, each with its own q and scale into its own output slot
/// (already replayed once), its timing events and the samples taken so far.
struct PreparedRound {
    graph: CudaGraph,
    events: Vec<(CudaEvent, CudaEvent)>,
    launches: u32,
    values: Vec<f64>,
    /// Zeros allocated before the round's buffers (to move them to new addresses); they
    /// must still be zeros after the round.
    spacer: CudaSlice<f32>,
    inputs: Vec<Inputs>,
    slots: OutputSlots,
    secrets: LaunchSecrets,
    /// Bytes of the timed kernel's constant data found changed, summed over the checks of the
    /// round.
    constant_writes: CudaSlice<u64>,
    /// The keyed hashes of the side's K/V and of the reference's copies after every sample,
    /// summed: equal when the side's inputs held what the reference computed from.
    kv_sums: CudaSlice<u64>,
    /// The GPU time one sample is expected to take (from the warm-up), for its deadline.
    expected: Duration,
    /// Samples across which the SM clock moved.
    clock_events: u32,
}

impl PreparedRound {
    /// Elements of one tensor of an input set (its Q, K and V are the same size).
    fn input_elements(&self) -> u64 {
        self.inputs.first().map_or(0, |i| i.k.len() as u64)
    }
}

/// Queues the check of the timed kernel's constant data, counting changed bytes into
/// `writes`.
fn guard_constants(
    gpu: &Gpu,
    kernel: &Kernel,
    writes: &mut CudaSlice<u64>,
) -> Result<(), GpuError> {
    match &kernel.constants {
        Some(guard) => guard.check(gpu, writes),
        None => Ok(()),
    }
}

/// Launches per sample of `shape` that fit the device memory a round may take: one output
/// slot (fp32, plus its largest gap) and one q (16-bit) per launch.
fn launches_that_fit(gpu: &Gpu, shape: &ShapeParams) -> Result<u64, GpuError> {
    let per_launch = shape.elements() as u64 * (4 + 2) + 64 * 1024;
    Ok((slot_budget_bytes(gpu)? / per_launch).max(1))
}

/// Warms the GPU up for a round of `kernel`: direct launches in growing batches until
/// `warmup_ms` has passed on the GPU, into a scratch output (not timed, not checked); the last
/// batch gives the per-launch estimate (ms) that sizes the graph. Only the first round of a
/// side (`previous`: no estimate yet) warms up for `warmup_ms`; a later round finds the GPU
/// warm, keeps the estimate, and the first replay of its graph (untimed) warms its new
/// buffers. `(e0, e1)`: the timing events of the batches (the caller's, which outlive the
/// round's preparation).
fn warm_up(
    b: &Bench<'_>,
    label: &'static str,
    kernel: &Kernel,
    previous: Option<f64>,
    inputs: &[Inputs],
    (e0, e1): (&CudaEvent, &CudaEvent),
) -> Result<f64, GpuError> {
    let (gpu, shape, settings) = (b.gpu, b.shape, b.settings);
    let n_sets = inputs.len().max(1);
    let mut spent_ms = 0.0f64;
    let mut batch = 1u32;
    let mut per_launch_ms = f64::MAX;
    let mut next = 0usize;
    let what = |phase: &str| {
        format!(
            "kernel {} of the {} on shape {shape} ({phase})",
            kernel.name, label
        )
    };
    // Only the first round warms up for warmup_ms and sizes the graph; a later round finds the
    // GPU warm, and the first replay of its graph (below, untimed) warms its new buffers.
    let warmup_ms = match previous {
        None => settings.warmup_ms,
        Some(ms) => {
            per_launch_ms = ms;
            0.0
        }
    };
    let mut scratch = None;
    while spent_ms < warmup_ms {
        let scratch = match &mut scratch {
            Some(s) => s,
            None => scratch.insert(
                raw::alloc_filled(
                    &gpu.stream,
                    &gpu.kernels.fill_u32,
                    shape.elements(),
                    super::buffers::POISON,
                )
                .during(|| format!("allocating the warm-up output of {shape}"))?,
            ),
        };
        e0.record(&gpu.stream)
            .during(|| "recording a timing event".into())?;
        for _ in 0..batch {
            launch_on(
                gpu,
                kernel,
                shape,
                &inputs[next % n_sets],
                scratch.slice_mut(..),
            )?;
            next += 1;
        }
        e1.record(&gpu.stream)
            .during(|| "recording a timing event".into())?;
        let expected = (per_launch_ms < f64::MAX)
            .then(|| Duration::from_secs_f64(per_launch_ms * f64::from(batch) / 1000.0));
        gpu.sync(expected, || what("warm-up"))?;
        let ms = f64::from(
            e0.elapsed_ms(e1)
                .during(|| "reading a timing event".into())?,
        );
        charge(b, label, ms, || what("warm-up"))?;
        spent_ms += ms;
        per_launch_ms = ms / f64::from(batch);
        batch = (batch * 2).min(256);
    }
    drop(scratch);
    Ok(per_launch_ms)
}

/// Spin kernels for an injected slowdown of `launches` launches: about one per 5 µs of added
/// time, spread evenly; (a spin after every this many launches, its cycles).
fn spin_plan(inj: Injection, launches: u32) -> (u32, i64) {
    let total_us = inj.us_per_launch * f64::from(launches);
    let count = ((total_us / 5.0).floor() as u32).clamp(1, launches);
    let every = launches.div_ceil(count);
    let count = launches / every;
    let each_us = total_us / f64::from(count.max(1));
    let cycles = ((each_us - inj.calibration.overhead_us) / inj.calibration.us_per_cycle).max(0.0);
    (every, cycles as i64)
}

/// Captures a round's CUDA graph: `launches` launches of `kernel`, each with its own secret
/// q and scale into its own output slot, cycling through the input sets, with the injected
/// spins; the capture is ended whatever a launch did.
#[allow(clippy::too_many_arguments)]
fn capture_graph(
    gpu: &Gpu,
    kernel: &Kernel,
    shape: &ShapeParams,
    inputs: &[Inputs],
    secrets: &LaunchSecrets,
    slots: &mut OutputSlots,
    launches: u32,
    spins: Option<(u32, i64)>,
) -> Result<CudaGraph, GpuError> {
    let n_sets = inputs.len().max(1);

    gpu.stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .during(|| "starting a CUDA graph capture".into())?;
    let captured = (|| -> Result<(), GpuError> {
        for i in 0..launches as usize {
            let set = &inputs[i % n_sets];
            let operands = Operands {
                q: secrets.q(i),
                k: set.k.as_view(),
                v: set.v.as_view(),
                scale: secrets.scale(i),
            };
            launch_with(gpu, kernel, shape, operands, slots.slot(i))?;
            if let Some((every, cycles)) = spins
                && (i as u32 + 1) % every == 0
            {
                raw::launch_spin(&gpu.stream, &gpu.kernels.spin, cycles)
                    .during(|| "capturing the injected spin".into())?;
            }
        }
        Ok(())
    })();
    let graph = gpu
        .stream
        .end_capture(CUgraphInstantiate_flags(0))
        .during(|| {
            format!(
                "capturing {launches} launches of {} on shape {shape}",
                kernel.name
            )
        });
    captured?;
    let graph = graph?.ok_or_else(|| {
        GpuError::Internal(format!("the CUDA graph for shape {shape} came back empty"))
    })?;
    Ok(graph)
}

/// Allocates a round's buffers (inputs filled from `kv`'s seeds), warms up, sizes and
/// captures its graph (the first round of `side` sets the launches per sample, capped so
/// that one output slot and one q per launch fit) and records the round's address.
fn prepare_round(
    b: &Bench<'_>,
    side: &mut AbSide<'_>,
    kv: &KvRefs,
    seed: u64,
) -> Result<PreparedRound, GpuError> {
    let (gpu, shape, settings) = (b.gpu, b.shape, b.settings);
    let kernel = side.kernel;
    let m = &mut side.m;
    let round = m.rounds.len() as u64;
    let mut rng = gpu
        .run_key
        .rng(seed ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ kernel_salt(side.label));
    // A random-sized spacer, allocated first, moves this round's buffers to new addresses.
    let spacer_words = 64 * rng.random_range(1..=65_536usize);
    let spacer = raw::alloc_zeros::<f32>(&gpu.stream, spacer_words)
        .during(|| "allocating the address spacer".into())?;
    let inputs: Vec<Inputs> = kv
        .seeds
        .iter()
        .map(|&s| random_inputs(gpu, shape, s))
        .collect::<Result<_, _>>()?;
    let n_sets = inputs.len().max(1);
    m.working_set_bytes = n_sets as u64 * bytes_per_set(shape);

    let what = |phase: &str| {
        format!(
            "kernel {} of the {} on shape {shape} ({phase})",
            kernel.name, side.label
        )
    };
    // Warm-up: direct launches in growing batches, timed with these two events.
    let (e0, e1) = (timing_event(gpu)?, timing_event(gpu)?);
    let per_launch_ms = warm_up(b, side.label, kernel, m.per_launch_ms, &inputs, (&e0, &e1))?;
    m.per_launch_ms = Some(per_launch_ms);
    if m.launches_per_sample == 0 {
        let l = (settings.sample_ms / per_launch_ms.max(1e-6)).round();
        let fit = launches_that_fit(gpu, shape)?;
        m.launches_per_sample = l.clamp(1.0, 20_000.0).min(fit as f64) as u32;
    }
    let launches = m.launches_per_sample;
    let secrets = LaunchSecrets::new(gpu, shape, launches, &mut rng)?;
    m.round_addresses.push(secrets.address(gpu));
    let mut slots = OutputSlots::new(gpu, shape, launches, settings.samples_per_round, &mut rng)?;

    let spins = side.injection.map(|inj| spin_plan(inj, launches));
    let graph = capture_graph(
        gpu, kernel, shape, &inputs, &secrets, &mut slots, launches, spins,
    )?;
    graph
        .upload()
        .during(|| "uploading the CUDA graph".into())?;
    graph
        .launch()
        .during(|| format!("replaying the graph of shape {shape}"))?;
    let expected = Duration::from_secs_f64(per_launch_ms * f64::from(launches) / 1000.0);
    let constant_writes = raw::alloc_zeros::<u64>(&gpu.stream, 1)
        .during(|| "allocating the constant-data check".into())?;
    let kv_sums =
        raw::alloc_zeros::<u64>(&gpu.stream, 2).during(|| "allocating the input check".into())?;
    let samples = settings.samples_per_round as usize;
    let events: Vec<(CudaEvent, CudaEvent)> = (0..samples)
        .map(|_| Ok((timing_event(gpu)?, timing_event(gpu)?)))
        .collect::<Result<_, GpuError>>()?;
    let mut prepared = PreparedRound {
        graph,
        events,
        launches,
        values: Vec::with_capacity(samples),
        spacer,
        inputs,
        slots,
        secrets,
        constant_writes,
        kv_sums,
        expected,
        clock_events: 0,
    };
    // What the warm-up and the first replay wrote there counts too.
    guard_constants(gpu, kernel, &mut prepared.constant_writes)?;
    gpu.sync(Some(expected), || what("first replay"))?;
    charge(b, side.label, expected.as_secs_f64() * 1000.0, || {
        what("first replay")
    })?;
    Ok(prepared)
}

/// Charges `ms` of GPU time of the `side` kernel on the bench's shape to the run's budget.
fn charge(
    b: &Bench<'_>,
    side: &'static str,
    ms: f64,
    what: impl FnOnce() -> String,
) -> Result<(), GpuError> {
    b.gpu.charge(b.shape, side, ms / 1000.0, what)
}

/// A different placement stream for each side of a pair.
fn kernel_salt(label: &str) -> u64 {
    label.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// One sample: a new q for every launch and every output slot poisoned, then a replay of the
/// round's graph bracketed by its own events, then (untimed) the reference of every launch
/// for its own q and scale, every slot compared with it on the device, and the kernel's
/// constant data verified. A short spin launched first keeps the stream busy
/// while the host enqueues the replay, so no submission latency is timed. After it the GPU
/// idles long enough that it is busy only `duty_cycle` of the time: on an H200, back-to-back
/// replays of a heavy kernel reached the power cap after ~1 s and its clocks then swung by
/// several percent (docs/PERF.md), while short bursts with idle gaps stayed at full clock and
/// repeated to within 0.1% across processes. The idle time is counted from the sample's
/// start (its q and poisoning), so the host's work between samples (the checks, the clock
/// readings, the sync) is part of it instead of being added to it: a sample's period is its
/// timed length over `duty_cycle`.
fn take_sample(
    b: &Bench<'_>,
    kernel: &Kernel,
    label: &'static str,
    round: &mut PreparedRound,
    kv: &mut KvRefs,
) -> Result<(), GpuError> {
    let (gpu, shape, settings) = (b.gpu, b.shape, b.settings);
    let sample = round.values.len();
    let Some((start, end)) = round.events.get(sample) else {
        return Err(GpuError::Internal(format!(
            "more samples than the {} of a round on shape {shape}",
            round.events.len()
        )));
    };
    let began = std::time::Instant::now();
    round.secrets.refill(gpu)?;
    let kv_key = round.secrets.kv_key();
    refill_inputs(gpu, shape, &kv.seeds, &mut round.inputs, kv_key)?;
    round.slots.poison(gpu)?;
    let clock_before = gpu.monitor.sm_clock_mhz();
    raw::launch_spin(&gpu.stream, &gpu.kernels.spin, LEAD_CYCLES)
        .during(|| "launching the lead-in spin".into())?;
    start
        .record(&gpu.stream)
        .during(|| "recording a timing event".into())?;
    round
        .graph
        .launch()
        .during(|| format!("replaying the graph of shape {shape}"))?;
    end.record(&gpu.stream)
        .during(|| "recording a timing event".into())?;
    let checked = Checked {
        inputs: &round.inputs,
        secrets: &mut round.secrets,
        slots: &mut round.slots,
        kv_sums: &mut round.kv_sums,
        constant_writes: &mut round.constant_writes,
    };
    check_replay(gpu, kernel, checked, kv, kv_key, sample)?;
    let what = || {
        format!(
            "kernel {} of the {label} on shape {shape} (a timed sample)",
            kernel.name
        )
    };
    gpu.sync(Some(round.expected), what)?;
    // A clock that moved across the sample (read before its launch and after it ended, not
    // after the idle time): an event this sample may carry.
    let clock_after = gpu.monitor.sm_clock_mhz();
    if let (Some(a), Some(b)) = (clock_before, clock_after)
        && a != b
    {
        round.clock_events += 1;
    }
    let ms = f64::from(
        start
            .elapsed_ms(end)
            .during(|| "reading a timing event".into())?,
    );
    round.values.push(ms * 1000.0 / f64::from(round.launches));
    charge(b, label, ms, what)?;
    if settings.duty_cycle < 1.0 {
        let period = Duration::from_secs_f64(ms / settings.duty_cycle / 1000.0);
        if let Some(idle) = period.checked_sub(began.elapsed()) {
            std::thread::sleep(idle);
        }
    }
    Ok(())
}

/// Queues the checks of a replay (untimed, after it): the reference's copies of K and V
/// filled for this sample, both sides' K/V hashed, every launch's reference computed for its
/// own q and scale, every slot compared with it, the constant data compared with its image.
fn check_replay(
    gpu: &Gpu,
    kernel: &Kernel,
    round: Checked<'_>,
    kv: &mut KvRefs,
    kv_key: u64,
    sample: usize,
) -> Result<(), GpuError> {
    kv.fill_for(gpu, kv_key)?;
    kv.hash_both(gpu, round.inputs, round.kv_sums)?;
    round.secrets.reference(gpu, kv)?;
    round.slots.check(gpu, round.secrets, sample)?;
    guard_constants(gpu, kernel, round.constant_writes)
}

/// The parts of a prepared round a replay's checks use (borrowed apart from its events).
struct Checked<'a> {
    inputs: &'a [Inputs],
    secrets: &'a mut LaunchSecrets,
    slots: &'a mut OutputSlots,
    kv_sums: &'a mut CudaSlice<u64>,
    constant_writes: &'a mut CudaSlice<u64>,
}

impl PreparedRound {
    fn checked(&mut self) -> Checked<'_> {
        Checked {
            inputs: &self.inputs,
            secrets: &mut self.secrets,
            slots: &mut self.slots,
            kv_sums: &mut self.kv_sums,
            constant_writes: &mut self.constant_writes,
        }
    }
}

/// Checks the round (every timed output against its launch's reference, the gaps, the
/// inputs, the spacer, the constant data, the held buffers of earlier rounds), then stores
/// its samples and keeps its buffers allocated (see [`Held`]).
fn finish_round(
    b: &Bench<'_>,
    side: &mut AbSide<'_>,
    round: PreparedRound,
    held: &mut Held,
) -> Result<(), GpuError> {
    let gpu = b.gpu;
    let name = &side.kernel.name;
    let round_no = side.m.rounds.len() + 1;
    let fail = |why: String| {
        Err(GpuError::Integrity(format!(
            "{why} (round {round_no}, shape {})",
            b.shape
        )))
    };
    let outcome = round.slots.outcome(gpu, b.tolerance, round.values.len())?;
    if let Some(why) = outcome.failure(side.label, name) {
        return fail(why);
    }
    if !inputs_held(gpu, &round)? {
        return fail(format!(
            "the {} kernel {name} changed its inputs (k or v) while it was timed",
            side.label
        ));
    }
    let constant_writes =
        gpu.read_back(&round.constant_writes, || "the constant-data check".into())?[0];
    if constant_writes > 0 {
        return fail(format!(
            "the {} kernel {name} wrote {constant_writes} bytes of its module's __constant__ data while it was timed: state that survives a launch is refused",
            side.label
        ));
    }
    if !spacer_untouched(gpu, &round.spacer)? {
        return fail(format!(
            "the {} kernel {name} wrote to memory outside its output (the address spacer below its buffers) while it was timed",
            side.label
        ));
    }
    if !held.verify(gpu)? {
        return fail(format!(
            "the {} kernel {name} wrote to buffers of an earlier round while it was timed",
            side.label
        ));
    }
    let m = &mut side.m;
    m.checked_launches += outcome.checked_launches;
    if let Some(w) = outcome.worst
        && m.worst_timed
            .as_ref()
            .is_none_or(|old| w.max_abs > old.max_abs)
    {
        m.worst_timed = Some(w);
    }
    m.clock_events.push(round.clock_events);
    m.rounds.push(round.values.clone());
    // Hold at most a quarter of the free memory (and 4 GiB) across rounds: every round
    // verifies all of it.
    let (free, _) = gpu
        .ctx
        .mem_get_info()
        .during(|| "reading free device memory".into())?;
    let cap = (free as u64 / 4).min(4 << 30);
    held.keep(gpu, round, cap)
}

/// Whether the side's K/V held, after every sample of the round, what the reference computed
/// from (their hash sums agree).
fn inputs_held(gpu: &Gpu, round: &PreparedRound) -> Result<bool, GpuError> {
    let sums = gpu.read_back(&round.kv_sums, || "the input check".into())?;
    Ok(sums.first() == sums.get(1))
}

/// Whether the spacer still holds only zeros.
fn spacer_untouched(gpu: &Gpu, spacer: &CudaSlice<f32>) -> Result<bool, GpuError> {
    let spans = [(0u64, spacer.len() as u64)];
    let offsets = gpu
        .stream
        .clone_htod(&[0u64])
        .during(|| "uploading the spacer check".into())?;
    let lens = gpu
        .stream
        .clone_htod(&[spacer.len() as u64])
        .during(|| "uploading the spacer check".into())?;
    let mut written =
        raw::alloc_zeros::<u64>(&gpu.stream, 1).during(|| "allocating the spacer check".into())?;
    raw::launch_check_fill(
        &gpu.stream,
        &gpu.kernels.check_fill,
        spacer,
        &offsets,
        &lens,
        &spans,
        0,
        &mut written,
    )
    .during(|| "checking the address spacer".into())?;
    Ok(gpu.read_back(&written, || "the spacer check".into())?[0] == 0)
}

/// Measures the spin kernel alone at two lengths and fits its per-launch cost.
pub(crate) fn calibrate_spin(gpu: &Gpu) -> Result<SpinCalibration, GpuError> {
    let time = |cycles: i64| -> Result<f64, GpuError> {
        const LAUNCHES: u32 = 20;
        gpu.stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .during(|| "starting a CUDA graph capture".into())?;
        let captured = (0..LAUNCHES)
            .try_for_each(|_| raw::launch_spin(&gpu.stream, &gpu.kernels.spin, cycles));
        let graph = gpu
            .stream
            .end_capture(CUgraphInstantiate_flags(0))
            .during(|| "capturing spin kernels".into());
        captured.during(|| "capturing spin kernels".into())?;
        let graph =
            graph?.ok_or_else(|| GpuError::Internal("the spin graph came back empty".into()))?;
        graph
            .launch()
            .during(|| "replaying the spin graph".into())?;
        let (a, b) = (timing_event(gpu)?, timing_event(gpu)?);
        let mut best = Vec::new();
        for _ in 0..7 {
            a.record(&gpu.stream)
                .during(|| "recording a timing event".into())?;
            graph
                .launch()
                .during(|| "replaying the spin graph".into())?;
            b.record(&gpu.stream)
                .during(|| "recording a timing event".into())?;
            gpu.sync(None, || "kernel spin_cycles".into())?;
            best.push(
                f64::from(
                    a.elapsed_ms(&b)
                        .during(|| "reading a timing event".into())?,
                ) * 1000.0
                    / f64::from(LAUNCHES),
            );
        }
        best.sort_by(f64::total_cmp);
        Ok(best[best.len() / 2])
    };
    let (c1, c2) = (1_000i64, 200_000i64);
    let (t1, t2) = (time(c1)?, time(c2)?);
    let us_per_cycle = (t2 - t1) / (c2 - c1) as f64;
    if us_per_cycle.is_nan() || us_per_cycle <= 0.0 {
        return Err(GpuError::Internal(format!(
            "spin calibration failed: {c1} cycles took {t1:.3} µs and {c2} took {t2:.3} µs"
        )));
    }
    Ok(SpinCalibration {
        overhead_us: (t1 - c1 as f64 * us_per_cycle).max(0.0),
        us_per_cycle,
    })
}

/// Runs `shape`'s kernel for about `ms` milliseconds so the GPU leaves its idle clocks
/// before the first sample of a process is taken (an idle H200 sits at a few hundred MHz).
pub(crate) fn spin_up(
    gpu: &Gpu,
    shape: &ShapeParams,
    label: &str,
    ms: f64,
) -> Result<(), GpuError> {
    check_shape(shape)?;
    let kernel = gpu.kernels.attention(shape)?;
    let inputs = random_inputs(gpu, shape, 1)?;
    let mut out = super::buffers::poisoned_output(gpu, shape)?;
    let start = Instant::now();
    while start.elapsed().as_secs_f64() * 1000.0 < ms {
        for _ in 0..8 {
            launch_on(gpu, kernel, shape, &inputs, out.slice_mut(..))?;
        }
        gpu.sync(None, || {
            format!(
                "kernel {} of the {label} on shape {shape} (spin-up)",
                kernel.name
            )
        })?;
    }
    Ok(())
}

/// Energy windows of a shape's sides after its timed rounds (see `crate::energy`): `rounds`
/// times, fresh buffers and a graph for every side, prepared like a timed round (never
/// timed or kept as one), then one window per side, the order alternating by round. Every
/// replay in a window is poisoned and checked like a timed sample, and the reference
/// outputs and inputs are checked after it, so a kernel that does less work when it is
/// replayed back to back fails parity instead of looking frugal. Appends each side's
/// windows to its measurement. `Ok(Some(why))` when NVML cannot measure energy here.
pub(crate) fn measure_energy(
    b: &Bench<'_>,
    sides: &mut [AbSide<'_>],
    seed: u64,
    rounds: u32,
    updates: u32,
) -> Result<Option<String>, GpuError> {
    check_shape(b.shape)?;
    let Some(reader) = b.gpu.monitor.energy_reader() else {
        return Ok(Some("NVML is not available".into()));
    };
    let source = if reader.energy_mj().is_some() {
        crate::energy::EnergySource::Counter
    } else if !reader.power_samples(0).is_empty() {
        crate::energy::EnergySource::PowerSamples
    } else {
        return Ok(Some(
            "NVML reports neither an energy counter nor power samples for this GPU".into(),
        ));
    };
    for r in 0..rounds {
        // Seeds apart from the timed rounds', so no window reuses a timed round's inputs.
        let index = 1_000_000 + u64::from(r);
        let mut kv = round_kv(b, seed, index)?;
        let order: Vec<usize> = if r % 2 == 0 {
            (0..sides.len()).collect()
        } else {
            (0..sides.len()).rev().collect()
        };
        for i in order {
            let side = &mut sides[i];
            let mut round = prepare_round(b, side, &kv, seed ^ index)?;
            // Not a timed round: its address is not one of the rounds'.
            side.m.round_addresses.pop();
            let window = energy_window(
                b,
                side.kernel,
                &mut round,
                &mut kv,
                &reader,
                source,
                updates,
            );
            let outcome = round.slots.outcome(b.gpu, b.tolerance, 1)?;
            if let Some(why) = outcome.failure(side.label, &side.kernel.name) {
                return Err(GpuError::Integrity(format!(
                    "{why} (an energy window, shape {})",
                    b.shape
                )));
            }
            if !inputs_held(b.gpu, &round)? {
                return Err(GpuError::Integrity(format!(
                    "the {} kernel {} changed its inputs (k or v) in an energy window (shape {})",
                    side.label, side.kernel.name, b.shape
                )));
            }
            let constant_writes = b
                .gpu
                .read_back(&round.constant_writes, || "the constant-data check".into())?[0];
            if constant_writes > 0 {
                return Err(GpuError::Integrity(format!(
                    "the {} kernel {} wrote {constant_writes} bytes of its module's __constant__ data in an energy window (shape {})",
                    side.label, side.kernel.name, b.shape
                )));
            }
            side.m.energy.extend(window?);
        }
    }
    Ok(None)
}

/// Replays in flight at once in an energy window: the GPU never waits for the host.
const ENERGY_DEPTH: usize = 4;

/// The share of an energy window's replays whose outputs are checked, drawn with the run's
/// secret key: every replay is poisoned first and none can tell whether it will be checked,
/// so a kernel that skips the work on a fraction f of n replays escapes with probability
/// (1 − 1/4)^(f·n) — nil at the hundreds of replays of a window — while the checks' own GPU
/// time (which would dilute the kernel's power) falls to a quarter.
const ENERGY_CHECK_ONE_IN: u32 = 4;

/// Counter moves seen by the polling thread: (bracket start s, bracket end s, value mJ),
/// from the start of the read that still saw the old value to the end of the read that saw
/// the new one.
type Moves = std::sync::Mutex<Vec<(f64, f64, u64)>>;

/// Of the counter moves, the pair at least `updates` moves apart whose span is known best:
/// the smallest (half-bracket + half-bracket) / span. Returns (first, last) indices.
fn best_span(moves: &[(f64, f64, u64)], updates: usize) -> Option<(usize, usize)> {
    let mid = |m: &(f64, f64, u64)| (m.0 + m.1) / 2.0;
    let half = |m: &(f64, f64, u64)| (m.1 - m.0) / 2.0;
    let mut best: Option<(f64, usize, usize)> = None;
    for i in 0..moves.len() {
        for j in i + updates.max(1)..moves.len() {
            let span = mid(&moves[j]) - mid(&moves[i]);
            if span <= 0.0 {
                continue;
            }
            let r = (half(&moves[i]) + half(&moves[j])) / span;
            if best.is_none_or(|b| r < b.0) {
                best = Some((r, i, j));
            }
        }
    }
    best.map(|(_, i, j)| (i, j))
}

/// One replay of an energy window, enqueued between its two timing events: a new q for
/// every launch of every replay, as in a timed sample (back to back, no replay computes
/// what another did, so none is worth less energy than it shows), the inputs refilled, the
/// outputs poisoned; one in [`ENERGY_CHECK_ONE_IN`], drawn from `checks`, checked after.
fn enqueue_replay(
    b: &Bench<'_>,
    kernel: &Kernel,
    round: &mut PreparedRound,
    kv: &mut KvRefs,
    checks: &mut ChaCha8Rng,
) -> Result<(CudaEvent, CudaEvent), GpuError> {
    let (gpu, shape) = (b.gpu, b.shape);
    let (start, end) = (timing_event(gpu)?, timing_event(gpu)?);
    round.secrets.refill(gpu)?;
    let kv_key = round.secrets.kv_key();
    refill_inputs(gpu, shape, &kv.seeds, &mut round.inputs, kv_key)?;
    round.slots.poison(gpu)?;
    start
        .record(&gpu.stream)
        .during(|| "recording a timing event".into())?;
    round
        .graph
        .launch()
        .during(|| format!("replaying the graph of shape {shape} (energy window)"))?;
    end.record(&gpu.stream)
        .during(|| "recording a timing event".into())?;
    if checks.random_range(0..ENERGY_CHECK_ONE_IN) == 0 {
        check_replay(gpu, kernel, round.checked(), kv, kv_key, 0)?;
    }
    Ok((start, end))
}

/// Whether an energy window has what it needs: for the counter, `updates` moves after its
/// first and a best span between two moves timed to within a third of
/// [`crate::energy::MAX_RESOLUTION`]; for power samples, `updates` tenths of a second (and
/// 50 ms for the power to settle).
fn window_done(
    source: crate::energy::EnergySource,
    moves: &Moves,
    updates: u32,
    elapsed: Duration,
) -> bool {
    use crate::energy::{EnergySource, MAX_RESOLUTION};
    let updates_n = updates as usize;
    match source {
        EnergySource::Counter => {
            let m = moves.lock().unwrap_or_else(|e| e.into_inner());
            m.len() > updates_n
                && best_span(&m, updates_n).is_some_and(|(i, j)| {
                    let (a, z) = (m[i], m[j]);
                    let span = (z.0 + z.1 - a.0 - a.1) / 2.0;
                    ((a.1 - a.0) + (z.1 - z.0)) / 2.0 / span <= MAX_RESOLUTION / 3.0
                })
        }
        EnergySource::PowerSamples => elapsed.as_secs_f64() >= 0.1 * f64::from(updates) + 0.05,
    }
}

/// The energy window's counter thread: reads back to back until `stop`, each move bracketed
/// by two reads (2–5 ms each on an H100), never by the GPU feeding the window.
fn read_counter(
    reader: &super::env::EnergyReader<'_>,
    began: Instant,
    moves: &Moves,
    stop: &std::sync::atomic::AtomicBool,
) {
    let mut last: Option<(f64, u64)> = None;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let from = began.elapsed().as_secs_f64();
        let Some(value) = reader.energy_mj() else {
            break;
        };
        let to = began.elapsed().as_secs_f64();
        if let Some((prev_from, prev)) = last
            && value != prev
        {
            let mut m = moves.lock().unwrap_or_else(|e| e.into_inner());
            if m.len() < 1000 {
                m.push((prev_from, to, value));
            }
        }
        last = Some((from, value));
    }
}

/// What an energy window measured of its replays: one call's mean time, the calls, their
/// share of the GPU's busy time, the window's wall time and when it began.
struct Measured {
    call_ms: f64,
    calls: u64,
    replay_fraction: f64,
    window_s: f64,
    wall_start_us: u64,
}

impl Measured {
    /// The window's round: the board's energy between the best-timed pair of counter moves,
    /// or the mean of NVML's power samples inside the window (from 50 ms in).
    fn reading(
        &self,
        source: crate::energy::EnergySource,
        moves: &[(f64, f64, u64)],
        updates_n: usize,
        reader: &super::env::EnergyReader<'_>,
    ) -> crate::energy::EnergyRound {
        use crate::energy::{EnergyRound, EnergySource};
        let Measured {
            call_ms,
            calls,
            replay_fraction,
            window_s,
            wall_start_us,
        } = *self;
        match source {
            EnergySource::Counter => match best_span(moves, updates_n) {
                Some((i, j)) => {
                    let (a, z) = (moves[i], moves[j]);
                    let span_ms = (z.0 + z.1 - a.0 - a.1) / 2.0 * 1000.0;
                    let span_mj = z.2.saturating_sub(a.2) as f64;
                    EnergyRound {
                        source,
                        power_w: span_mj / span_ms,
                        call_ms,
                        calls,
                        span_ms,
                        span_mj,
                        updates: (j - i + 1) as u32,
                        read_ms: ((a.1 - a.0) + (z.1 - z.0)) / 2.0 * 1000.0,
                        replay_fraction,
                    }
                }
                None => EnergyRound {
                    source,
                    power_w: 0.0,
                    call_ms,
                    calls,
                    span_ms: window_s * 1000.0,
                    span_mj: 0.0,
                    updates: moves.len() as u32,
                    read_ms: 0.0,
                    replay_fraction,
                },
            },
            EnergySource::PowerSamples => {
                // Samples from 50 ms into the window (the power settling) to its end.
                let from = wall_start_us + 50_000;
                let to = wall_start_us + (window_s * 1e6) as u64;
                let inside: Vec<f64> = reader
                    .power_samples(from)
                    .into_iter()
                    .filter(|(t, _)| (from..=to).contains(t))
                    .map(|(_, mw)| mw / 1000.0)
                    .collect();
                let power_w = if inside.is_empty() {
                    0.0
                } else {
                    inside.iter().sum::<f64>() / inside.len() as f64
                };
                let span_ms = (to - from) as f64 / 1000.0;
                EnergyRound {
                    source,
                    power_w,
                    call_ms,
                    calls,
                    span_ms,
                    span_mj: power_w * span_ms,
                    updates: inside.len() as u32,
                    read_ms: 0.0,
                    replay_fraction,
                }
            }
        }
    }
}

/// One energy window: `round`'s graph replayed back to back (each replay poisoned first, a
/// secret quarter of them checked after) while a thread of its own reads the counter in a
/// loop, until the counter has moved `updates` times after its first move and the best span
/// between two moves is timed to within a third of [`crate::energy::MAX_RESOLUTION`] (or
/// the deadline passes; for power samples, `updates` tenths of a second). A window that sees
/// too few moves still returns its reading, which `crate::energy` then declines to use and
/// says why.
fn energy_window(
    b: &Bench<'_>,
    kernel: &Kernel,
    round: &mut PreparedRound,
    kv: &mut KvRefs,
    reader: &super::env::EnergyReader<'_>,
    source: crate::energy::EnergySource,
    updates: u32,
) -> Result<Option<crate::energy::EnergyRound>, GpuError> {
    use crate::energy::EnergySource;
    use std::sync::atomic::{AtomicBool, Ordering};
    let gpu = b.gpu;
    let shape = b.shape;
    let updates_n = updates as usize;
    // The counter moves every ~100 ms on the GPUs measured; no window runs past 0.4 s per
    // update asked plus one second.
    let deadline = Duration::from_secs_f64(1.0 + 0.4 * f64::from(updates));
    let mut checks = gpu.run_key.rng(round.launches as u64 ^ 0x0e4e_c4ec_0001);
    let window_start = timing_event(gpu)?;
    let window_end = timing_event(gpu)?;
    window_start
        .record(&gpu.stream)
        .during(|| "recording a timing event".into())?;
    let mut in_flight: std::collections::VecDeque<(CudaEvent, CudaEvent)> =
        std::collections::VecDeque::new();
    let mut replay_ms = 0.0f64;
    let mut replays = 0u64;
    let mut enqueue = |round: &mut PreparedRound| enqueue_replay(b, kernel, round, kv, &mut checks);
    let began = Instant::now();
    let wall_start_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    let moves: Moves = std::sync::Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let done = |elapsed: Duration| window_done(source, &moves, updates, elapsed);
    let fed = std::thread::scope(|scope| -> Result<(), GpuError> {
        if source == EnergySource::Counter {
            scope.spawn(|| read_counter(reader, began, &moves, &stop));
        }
        let fed = (|| {
            loop {
                if in_flight.len() < ENERGY_DEPTH {
                    in_flight.push_back(enqueue(round)?);
                    continue;
                }
                if in_flight.front().is_some_and(|(_, end)| end.is_complete()) {
                    if let Some((start, end)) = in_flight.pop_front() {
                        replay_ms += f64::from(
                            start
                                .elapsed_ms(&end)
                                .during(|| "reading a timing event".into())?,
                        );
                        replays += 1;
                    }
                    continue;
                }
                let elapsed = began.elapsed();
                if done(elapsed) || elapsed > deadline {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        })();
        stop.store(true, Ordering::Relaxed);
        fed
    });
    let window_s = began.elapsed().as_secs_f64();
    window_end
        .record(&gpu.stream)
        .during(|| "recording a timing event".into())?;
    let expected =
        Duration::from_secs_f64(round.expected.as_secs_f64() * (ENERGY_DEPTH as f64 + 1.0) + 0.1);
    gpu.sync(Some(expected), || {
        format!("kernel {} on shape {shape} (an energy window)", kernel.name)
    })?;
    fed?;
    for (start, end) in in_flight.drain(..) {
        replay_ms += f64::from(
            start
                .elapsed_ms(&end)
                .during(|| "reading a timing event".into())?,
        );
        replays += 1;
    }
    let busy_ms = f64::from(
        window_start
            .elapsed_ms(&window_end)
            .during(|| "reading a timing event".into())?,
    );
    let calls = replays * u64::from(round.launches);
    if calls == 0 || busy_ms <= 0.0 {
        return Ok(None);
    }
    let call_ms = replay_ms / calls as f64;
    let replay_fraction = (replay_ms / busy_ms).min(1.0);
    let moves = moves.into_inner().unwrap_or_else(|e| e.into_inner());
    let measured = Measured {
        call_ms,
        calls,
        replay_fraction,
        window_s,
        wall_start_us,
    };
    let reading = measured.reading(source, &moves, updates_n, reader);
    Ok(Some(reading))
}

#[cfg(test)]
mod tests {
    use super::best_span;

    #[test]
    fn the_span_is_between_the_best_timed_moves_at_least_updates_apart() {
        // Moves every 100 ms; the second is bracketed loosely (40 ms), the rest to 6 ms.
        let m = [
            (0.097, 0.103, 10),
            (0.180, 0.220, 20),
            (0.297, 0.303, 30),
            (0.397, 0.403, 40),
            (0.497, 0.503, 50),
        ];
        // Three apart: (0, 3) and (1, 4) span 300 ms; (0, 3) is timed to 6 ms, (1, 4) to
        // 23 ms; four apart, (0, 4) spans 400 ms at 6 ms: the best.
        assert_eq!(best_span(&m, 3), Some((0, 4)));
        assert_eq!(best_span(&m[..4], 3), Some((0, 3)));
        assert_eq!(best_span(&m[..3], 3), None, "two moves apart are not three");
        assert_eq!(best_span(&[], 1), None);
    }
}
