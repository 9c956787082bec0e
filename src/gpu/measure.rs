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
use cudarc::driver::{CudaEvent, CudaSlice};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::buffers::{
    Inputs, Operands, check_shape, draw_scale, launch_on, launch_with, random_inputs,
};
use super::device::{Gpu, Kernel};
use super::error::{DriverContext, GpuError};
use super::integrity::{
    CheckLayout, HashParts, KvRefs, LaunchSecrets, OutputSlots, RoundFindings, hash_parts,
    refill_inputs, slot_budget_bytes,
};
use crate::backend::{Round, spans};
use crate::config::{CacheMode, MeasureSettings, ShapeParams, Tolerance};
use crate::ffi;
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

pub(super) fn timing_event(gpu: &Gpu) -> Result<CudaEvent, GpuError> {
    gpu.ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .during(|| "creating a timing event".into())
}

/// The milliseconds between two recorded timing events, both complete. A span that is not
/// a positive finite number is refused: the events' records are driver memory of the
/// context the kernel under test runs in, and a rewritten one must end in an error, never in
/// a time (nor in a panic where the time becomes a `Duration`).
pub(super) fn event_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f64, GpuError> {
    let ms = start
        .elapsed_ms(end)
        .map(f64::from)
        .during(|| "reading a timing event".into())?;
    positive_span(ms)
}

/// `ms` where it is a positive finite span ([`event_ms`]), else the error that says why.
fn positive_span(ms: f64) -> Result<f64, GpuError> {
    if ms.is_finite() && ms > 0.0 {
        Ok(ms)
    } else {
        Err(GpuError::Integrity(format!(
            "two timing events read {ms} ms apart: a span that is not positive is no measurement, so a timing record was rewritten while the kernel ran (docs/MEASURING.md, \"The host's clock witnesses every sample\")"
        )))
    }
}

/// Whether a span of `ms` fits in the span of `outer_ms` that held it ([`witnessed_ms`], an
/// energy window's replays): at most 0.1% and 5 µs longer (the two clocks' rates, the
/// events' resolution).
pub(super) fn fits_within(ms: f64, outer_ms: f64) -> bool {
    ms <= outer_ms * 1.001 + 0.005
}

/// [`event_ms`] of work the host waited for, checked against the host's own clock: `host` is
/// the span from before the first event was queued to after the second was seen complete,
/// and the GPU cannot have spent longer between the events than that (the slack covers the
/// two clocks' rates and the events' resolution). `what` names the work. Returns the
/// events' span, in ms.
pub(super) fn witnessed_ms(
    start: &CudaEvent,
    end: &CudaEvent,
    host: Duration,
    what: impl FnOnce() -> String,
) -> Result<f64, GpuError> {
    let ms = event_ms(start, end)?;
    if fits_within(ms, host.as_secs_f64() * 1e3) {
        return Ok(ms);
    }
    Err(GpuError::Integrity(format!(
        "the timing events of {} read {ms:.3} ms, longer than the {:.3} ms the host waited for them: a timing record was rewritten while the kernel ran (docs/MEASURING.md, \"The host's clock witnesses every sample\")",
        what(),
        host.as_secs_f64() * 1e3
    )))
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
pub const LEAD_CYCLES: i64 = 100_000;

/// The seeds of the input sets of round `round` (fresh inputs every round), mixed with the
/// run's secret key so a kernel cannot know its inputs in advance.
fn round_seeds(gpu: &Gpu, seed: u64, round: u64, sets: usize) -> Vec<u64> {
    (0..sets as u64)
        .map(|i| seed.wrapping_add(round * 1_000 + i) ^ gpu.run_key.0)
        .collect()
}

/// The reference's own keys and values of round `round`: fresh input sets of its own seeds
/// (the cache mode's sets of them), which the sides' inputs are filled from too.
pub(super) fn round_kv(b: &Bench<'_>, seed: u64, round: u64) -> Result<KvRefs, GpuError> {
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
        let checked = b.settings.samples_per_round as usize + 1;
        let mut prepared = prepare_round(b, side, &mut kv, seed, checked)?;
        add_phase(t, |p| &mut p.preparing_s);
        side.m.sm_clock_mhz.extend(b.gpu.monitor.sm_clock_mhz());
        for _ in 0..b.settings.samples_per_round {
            let t = Instant::now();
            take_sample(b, side, &mut prepared, &mut kv)?;
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
    /// SM cycles of the lead-in spin before each of its samples ([`LEAD_CYCLES`]). A GPU
    /// test lengthens one side's to put time the events do not see into its samples, as a
    /// start record moved later would (`crate::witness`).
    pub lead_in_cycles: i64,
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
            lead_in_cycles: LEAD_CYCLES,
        }
    }
}

/// Measures `pairs` more pairs of rounds of two sides: per pair a coin from `coin` decides
/// whether the base (`sides[0]`) or the candidate (`sides[1]`) goes first. Both rounds of a
/// pair are prepared (fresh buffers filled with the same values for both sides, warm-up,
/// graph; the same launches per sample, set by the first pair's two warm-ups: the more
/// launches of the two, [`settle_launches`]), then their
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
        let t = Instant::now();
        let mut warmed: [Option<WarmedRound>; 2] = [None, None];
        for i in sequence {
            warmed[i] = Some(warm_round(b, &mut sides[i], &kv, seed)?);
        }
        settle_launches(b, sides, &warmed)?;
        let mut prepared: [Option<PreparedRound>; 2] = [None, None];
        for i in sequence {
            let checked = b.settings.samples_per_round as usize + 1;
            if let Some(w) = warmed[i].take() {
                prepared[i] = Some(capture_round(b, &mut sides[i], &mut kv, w, checked)?);
            }
        }
        add_phase(t, |p| &mut p.preparing_s);
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
                take_sample(b, &sides[i], round, &mut kv)?;
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

/// The launches per sample of both sides of a pair, the same for both: once set, kept; the
/// first pair sets them from both sides' warm-ups, to the more launches of the two (the
/// faster side's `sample_ms`). Why not the first side's alone: a side whose warm-up ran slow
/// (a kernel slow on its first launches only) would make every sample of both sides short,
/// and a short sample is one where the host's clock's fixed floor (`crate::witness::
/// FLOOR_US`) is a large share, room for a rewritten record to hide in.
fn settle_launches(
    b: &Bench<'_>,
    sides: &mut [AbSide<'_>; 2],
    warmed: &[Option<WarmedRound>; 2],
) -> Result<(), GpuError> {
    let settled = [&sides[0], &sides[1]].map(|s| s.m.launches_per_sample);
    let mut estimates = Vec::new();
    if settled == [0, 0] {
        for w in warmed.iter().flatten() {
            estimates.push(launches_for(b, w.per_launch_ms)?);
        }
    }
    let launches = pair_launches(settled, &estimates);
    for side in sides.iter_mut() {
        side.m.launches_per_sample = launches;
    }
    Ok(())
}

/// [`settle_launches`]'s rule: the sides' launches per sample where either is set (the
/// more), else the most of the warm-ups' `estimates`.
fn pair_launches(settled: [u32; 2], estimates: &[u32]) -> u32 {
    match settled[0].max(settled[1]) {
        0 => estimates.iter().copied().max().unwrap_or(0),
        set => set,
    }
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
/// (already replayed once, and that replay checked), its timing events and the samples
/// taken so far.
///
/// The checker's state and the rule it follows (docs/MEASURING.md, "Nothing the checker
/// reads was in the kernel's reach"): everything a check or a reference reads is written
/// after the replay it checks, from host memory or by the harness's own kernels from
/// secret keys passed by value (scales, slot and gap tables, the constant image and its
/// addresses, the reference's K/V and q rows, the V scales); every accumulator is zeroed
/// after the replay ([`PreparedRound::words`]) and copied to page-locked host memory right
/// after the checks ([`PreparedRound::host`]), in stream order, before the next replay can
/// run; every replay is checked, the first included; and every kernel node's parameters
/// are set again from the graph's host copy before every replay.
pub(super) struct PreparedRound {
    pub(super) graph: ffi::ReplayGraph,
    events: Vec<(CudaEvent, CudaEvent)>,
    pub(super) launches: u32,
    values: Vec<f64>,
    /// Zeros allocated before the round's buffers (to move them to new addresses); they
    /// must still be zeros after every replay.
    spacer: CudaSlice<f32>,
    inputs: Vec<Inputs>,
    slots: OutputSlots,
    secrets: LaunchSecrets,
    /// The words one replay's checks write (zeroed after every replay).
    words: CudaSlice<u64>,
    layout: CheckLayout,
    /// Every checked replay's words, copied out in stream order; `copied` of them so far.
    host: ffi::HostWords,
    copied: usize,
    /// The keyed hash of the input sets' q when they were filled (the warm-up reads them,
    /// no timed launch does: a kernel may not keep anything there either), and its key.
    set_q_hash: u64,
    set_q_key: u64,
    /// The GPU time one replay is expected to take (from the warm-up), for its deadline.
    pub(super) expected: Duration,
    /// Samples across which the SM clock moved.
    clock_events: u32,
    /// Each sample's unwitnessed µs: the host's span from the lead-in to the end event
    /// less the events' span (`crate::witness`).
    unwitnessed: Vec<f64>,
    /// Each sample's µs from the host's seeing its end event to the end of its checks, less
    /// the checks' own time by their events ([`PreparedRound::checks_events`]).
    after_end: Vec<f64>,
    /// Two events around a sample's checks (and their copy to the host), reused by every
    /// sample: recorded after the replay in stream order, so no kernel under test can write
    /// them, and their span takes the checks' own time (1–3 ms, moving by 10–20 µs between
    /// samples) out of the host's wait for them (`crate::witness`, through the checks).
    checks_events: (CudaEvent, CudaEvent),
    /// Each sample's µs from the host's seeing its checks end to the end of the tail
    /// queued after them ([`WITNESS_TAIL_CYCLES`]), less the tail's own time by its events.
    after_checks: Vec<f64>,
    /// Two events around a sample's tail, reused by every sample, recorded after the checks.
    tail_events: (CudaEvent, CudaEvent),
}

/// SM cycles of the harness's spin queued after every timed sample's checks (~200 µs at
/// 2 GHz), timed by events of its own: the host waits for it after seeing the checks end,
/// so that a sample has a third span, from the lead-in to the end of this tail, which holds
/// the whole of a record's forgery as the span through the checks does but not the host's
/// late wake-up at the end of the checks (the tail is still running then, and its wait gives
/// that time back). `crate::witness` counts a shift through the checks only where this span
/// confirms it: an honest A/B of one kernel on an H100 (2026-12-06, b1h8s512d64) read
/// −20.07 µs through the checks against a limit of 20.02 and −0.14 up to the end event.
/// Cost: ~200 µs of GPU time a sample, inside the duty cycle's idle time.
pub const WITNESS_TAIL_CYCLES: i64 = 400_000;

impl PreparedRound {
    /// Elements of one tensor of an input set (its Q, K and V are the same size).
    fn input_elements(&self) -> u64 {
        self.inputs.first().map_or(0, |i| i.k.len() as u64)
    }

    /// Replays the checks' words can still be copied out for.
    pub(super) fn check_room(&self) -> usize {
        (self.host.len() / self.layout.len()).saturating_sub(self.copied)
    }
}

/// Launches per sample of `shape` that fit the device memory a round may take: one output
/// slot (fp32, plus its largest gap) and one q (16-bit) per launch.
fn launches_that_fit(gpu: &Gpu, shape: &ShapeParams) -> Result<u64, GpuError> {
    let per_launch = shape.elements() as u64 * (4 + 2) + 64 * 1024;
    Ok((slot_budget_bytes(gpu)? / per_launch).max(1))
}

/// What a warm-up runs: the side's label and kernel, the per-launch estimate of an earlier
/// round (none: warm up for `warmup_ms`), the round's input sets and the two timing events
/// of its batches (the caller's, which outlive the round's preparation).
struct WarmUp<'a> {
    label: &'static str,
    kernel: &'a Kernel,
    previous: Option<f64>,
    inputs: &'a [Inputs],
    events: (&'a CudaEvent, &'a CudaEvent),
}

/// Warms the GPU up for a round of `kernel`: direct launches in growing batches until
/// `warmup_ms` has passed on the GPU, into a scratch output (not timed, not checked); the last
/// batch gives the per-launch estimate (ms) that sizes the graph. Only the first round of a
/// side (`previous`: no estimate yet) warms up for `warmup_ms`; a later round finds the GPU
/// warm, keeps the estimate, and the first replay of its graph (untimed) warms its new
/// buffers. Every launch draws its scale as a timed launch does, on inputs drawn from the
/// same mixture.
fn warm_up(b: &Bench<'_>, w: WarmUp<'_>, rng: &mut ChaCha8Rng) -> Result<f64, GpuError> {
    let WarmUp {
        label,
        kernel,
        previous,
        inputs,
        events: (e0, e1),
    } = w;
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
    // The warm-up's length is read from the events, but bounded by the host's clock too: a
    // kernel that rewrote its records could otherwise keep it going for ever.
    let began = Instant::now();
    let host_bound = Duration::from_millis(250) + Duration::from_secs_f64(4.0 * warmup_ms / 1e3);
    while spent_ms < warmup_ms && began.elapsed() < host_bound {
        let scratch = match &mut scratch {
            Some(s) => s,
            None => scratch.insert(
                ffi::alloc_filled(
                    &gpu.stream,
                    &gpu.kernels.fill_u32,
                    shape.elements(),
                    super::buffers::POISON,
                )
                .during(|| format!("allocating the warm-up output of {shape}"))?,
            ),
        };
        let queued = Instant::now();
        e0.record(&gpu.stream)
            .during(|| "recording a timing event".into())?;
        for _ in 0..batch {
            launch_on(
                gpu,
                kernel,
                shape,
                &inputs[next % n_sets],
                scratch.slice_mut(..),
                draw_scale(shape, rng),
            )?;
            next += 1;
        }
        e1.record(&gpu.stream)
            .during(|| "recording a timing event".into())?;
        let expected = (per_launch_ms < f64::MAX)
            .then(|| Duration::from_secs_f64(per_launch_ms * f64::from(batch) / 1000.0));
        gpu.sync(expected, || what("warm-up"))?;
        let host = queued.elapsed();
        let ms = witnessed_ms(e0, e1, host, || what("warm-up"))?;
        charge(b, label, host.as_secs_f64() * 1e3, || what("warm-up"))?;
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
/// spins; the capture is ended whatever a launch did. Returned ready to replay, once it is
/// seen to hold a kernel node for every launch.
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
) -> Result<ffi::ReplayGraph, GpuError> {
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
                && (i as u32 + 1).is_multiple_of(every)
            {
                ffi::launch_spin(&gpu.stream, &gpu.kernels.spin, cycles)
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
    let graph = ffi::ReplayGraph::new(graph, &gpu.stream)
        .during(|| format!("reading the CUDA graph of shape {shape}"))?;
    if graph.kernel_nodes() < launches as usize {
        return Err(GpuError::Internal(format!(
            "the CUDA graph of shape {shape} holds {} kernel nodes for {launches} launches",
            graph.kernel_nodes()
        )));
    }
    Ok(graph)
}

/// The key of the hash the round's set-q must keep.
fn set_q_key(gpu: &Gpu, seed: u64, round: u64, label: &str) -> u64 {
    gpu.run_key.0 ^ 0x5e7a_0001_0000_0000 ^ seed.rotate_left(7) ^ round ^ kernel_salt(label)
}

/// Queues the keyed hash of every input set's q into `out[0]` (zeroed by the caller).
fn hash_set_q(
    gpu: &Gpu,
    inputs: &[Inputs],
    key: u64,
    out: &mut cudarc::driver::CudaViewMut<'_, u64>,
) -> Result<(), GpuError> {
    for (i, set) in inputs.iter().enumerate() {
        ffi::launch_hash(
            &gpu.stream,
            &gpu.kernels.hash_u16,
            &set.q.as_view(),
            key ^ (i as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d),
            out,
        )
        .during(|| "hashing the round's own q".into())?;
    }
    Ok(())
}

/// The launches a sample of `b`'s shape replays for a per-launch estimate of
/// `per_launch_ms`: `sample_ms` of launches, at least one, at most 20,000 and no more than
/// one output slot and one q per launch allow.
fn launches_for(b: &Bench<'_>, per_launch_ms: f64) -> Result<u32, GpuError> {
    let l = (b.settings.sample_ms / per_launch_ms.max(1e-6)).round();
    let fit = launches_that_fit(b.gpu, b.shape)?;
    Ok(l.clamp(1.0, 20_000.0).min(fit as f64) as u32)
}

/// The keyed hash of every input set's q ([`hash_set_q`]), waited for and read back.
fn set_q_hash_now(gpu: &Gpu, inputs: &[Inputs], key: u64) -> Result<u64, GpuError> {
    let mut acc = ffi::alloc_zeros::<u64>(&gpu.stream, 1).during(|| "allocating a hash".into())?;
    hash_set_q(gpu, inputs, key, &mut acc.slice_mut(..))?;
    Ok(gpu.read_back(&acc, || "hashing the round's own q".into())?[0])
}

/// Allocates a round's buffers (inputs filled from `kv`'s seeds), warms up, sizes and
/// captures its graph (the first round of `side` sets the launches per sample, capped so
/// that one output slot and one q per launch fit), records the round's address, and
/// replays the graph once, untimed but checked like every sample and charged as measured.
/// `checked_replays`: how many replays' check words the round can keep (the samples and
/// the first replay, or an energy window's checks). For one side: a pair sizes both of its
/// rounds together ([`measure_pairs`]).
pub(super) fn prepare_round(
    b: &Bench<'_>,
    side: &mut AbSide<'_>,
    kv: &mut KvRefs,
    seed: u64,
    checked_replays: usize,
) -> Result<PreparedRound, GpuError> {
    let warmed = warm_round(b, side, kv, seed)?;
    if side.m.launches_per_sample == 0 {
        side.m.launches_per_sample = launches_for(b, warmed.per_launch_ms)?;
    }
    capture_round(b, side, kv, warmed, checked_replays)
}

/// A round whose buffers are allocated and whose kernel is warmed up: what
/// [`capture_round`] needs, and the warm-up's per-launch estimate (ms).
pub(super) struct WarmedRound {
    rng: ChaCha8Rng,
    spacer: CudaSlice<f32>,
    inputs: Vec<Inputs>,
    set_q_key: u64,
    set_q_hash: u64,
    events: (CudaEvent, CudaEvent),
    pub(super) per_launch_ms: f64,
}

/// The first half of preparing a round: a random-sized spacer, the round's inputs (filled
/// from `kv`'s seeds) and the hash their q must keep, and the warm-up (which sets the side's
/// per-launch estimate).
pub(super) fn warm_round(
    b: &Bench<'_>,
    side: &mut AbSide<'_>,
    kv: &KvRefs,
    seed: u64,
) -> Result<WarmedRound, GpuError> {
    let (gpu, shape) = (b.gpu, b.shape);
    let kernel = side.kernel;
    let m = &mut side.m;
    let round = m.rounds.len() as u64;
    let mut rng = gpu
        .run_key
        .rng(seed ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ kernel_salt(side.label));
    let t = Instant::now();
    // A random-sized spacer, allocated first, moves this round's buffers to new addresses.
    let spacer_words = 64 * rng.random_range(1..=65_536usize);
    let spacer = ffi::alloc_zeros::<f32>(&gpu.stream, spacer_words)
        .during(|| "allocating the address spacer".into())?;
    let inputs: Vec<Inputs> = kv
        .seeds
        .iter()
        .map(|&s| random_inputs(gpu, shape, s))
        .collect::<Result<_, _>>()?;
    let n_sets = inputs.len().max(1);
    m.working_set_bytes = n_sets as u64 * bytes_per_set(shape);
    // What the round's own q must keep hashing to: taken before any launch of the round.
    let set_q_key = set_q_key(gpu, seed, round, side.label);
    let set_q_hash = set_q_hash_now(gpu, &inputs, set_q_key)?;
    spans::add("round.inputs", t);
    let t = Instant::now();

    // Warm-up: direct launches in growing batches, timed with these two events.
    let events = (timing_event(gpu)?, timing_event(gpu)?);
    let warm = WarmUp {
        label: side.label,
        kernel,
        previous: m.per_launch_ms,
        inputs: &inputs,
        events: (&events.0, &events.1),
    };
    let per_launch_ms = warm_up(b, warm, &mut rng)?;
    spans::add("round.warm_up", t);
    m.per_launch_ms = Some(per_launch_ms);
    Ok(WarmedRound {
        rng,
        spacer,
        inputs,
        set_q_key,
        set_q_hash,
        events,
        per_launch_ms,
    })
}

/// The second half of preparing a round, at the side's launches per sample (set): its
/// launch buffers and graph, its address recorded, its events and check words, and its
/// first replay.
pub(super) fn capture_round(
    b: &Bench<'_>,
    side: &mut AbSide<'_>,
    kv: &mut KvRefs,
    warmed: WarmedRound,
    checked_replays: usize,
) -> Result<PreparedRound, GpuError> {
    let (gpu, shape, settings) = (b.gpu, b.shape, b.settings);
    let kernel = side.kernel;
    let WarmedRound {
        mut rng,
        spacer,
        inputs,
        set_q_key,
        set_q_hash,
        events: (e0, e1),
        per_launch_ms,
    } = warmed;
    let launches = side.m.launches_per_sample;
    if launches == 0 {
        return Err(GpuError::Internal(format!(
            "a round of shape {shape} captured before its launches per sample were set"
        )));
    }
    let t = Instant::now();
    let secrets = LaunchSecrets::new(gpu, shape, launches, &mut rng)?;
    side.m.round_addresses.push(secrets.address(gpu));
    let mut slots = OutputSlots::new(gpu, shape, launches, &mut rng)?;
    spans::add("round.launch_buffers", t);
    let t = Instant::now();

    let spins = side.injection.map(|inj| spin_plan(inj, launches));
    let graph = capture_graph(
        gpu, kernel, shape, &inputs, &secrets, &mut slots, launches, spins,
    )?;
    spans::add("round.graph", t);
    let t = Instant::now();
    let expected = Duration::from_secs_f64(per_launch_ms * f64::from(launches) / 1000.0);
    let layout = CheckLayout {
        launches: launches as usize,
    };
    let samples = settings.samples_per_round as usize;
    let events: Vec<(CudaEvent, CudaEvent)> = (0..samples)
        .map(|_| Ok((timing_event(gpu)?, timing_event(gpu)?)))
        .collect::<Result<_, GpuError>>()?;
    let host_len = layout
        .len()
        .checked_mul(checked_replays.max(1))
        .ok_or_else(|| GpuError::Internal("too many check words".into()))?;
    let mut prepared = PreparedRound {
        graph,
        events,
        launches,
        values: Vec::with_capacity(samples),
        spacer,
        inputs,
        slots,
        secrets,
        words: ffi::alloc_zeros::<u64>(&gpu.stream, layout.len())
            .during(|| "allocating the replay checks".into())?,
        layout,
        host: ffi::HostWords::new(&gpu.ctx, host_len)
            .during(|| "allocating the replay checks' host copy".into())?,
        copied: 0,
        set_q_hash,
        set_q_key,
        expected,
        clock_events: 0,
        unwitnessed: Vec::with_capacity(samples),
        after_end: Vec::with_capacity(samples),
        checks_events: (timing_event(gpu)?, timing_event(gpu)?),
        after_checks: Vec::with_capacity(samples),
        tail_events: (timing_event(gpu)?, timing_event(gpu)?),
    };
    spans::add("round.check_buffers", t);
    spans::time("round.first_replay", || {
        first_replay(b, (side.label, kernel), &mut prepared, kv, (&e0, &e1))
    })?;
    Ok(prepared)
}

/// A round's first replay (after its graph is uploaded): untimed, but checked like a sample
/// (it runs on inputs and keys no later replay uses, and what it wrote anywhere is checked
/// now) and charged as measured, from the two events around it.
fn first_replay(
    b: &Bench<'_>,
    (label, kernel): (&'static str, &Kernel),
    prepared: &mut PreparedRound,
    kv: &mut KvRefs,
    (e0, e1): (&CudaEvent, &CudaEvent),
) -> Result<(), GpuError> {
    let (gpu, shape) = (b.gpu, b.shape);
    let what = || {
        format!(
            "kernel {} of the {label} on shape {shape} (first replay)",
            kernel.name
        )
    };
    let kv_key = queue_replay(gpu, shape, prepared, kv)?;
    prepared
        .graph
        .upload()
        .during(|| "uploading the CUDA graph".into())?;
    let queued = Instant::now();
    replay_between(gpu, shape, prepared, (e0, e1), "")?;
    queue_checks(gpu, kernel, prepared, kv, kv_key)?;
    let ended = gpu.wait_event(e1, Some(prepared.expected), what)?;
    gpu.sync(Some(prepared.expected), what)?;
    let host = ended.duration_since(queued);
    witnessed_ms(e0, e1, host, what)?;
    charge(b, label, host.as_secs_f64() * 1e3, what)
}

/// Replays `round`'s graph between the events `start` and `end` on the stream; `context`
/// follows the shape in the error (e.g. " (energy window)").
pub(super) fn replay_between(
    gpu: &Gpu,
    shape: &ShapeParams,
    round: &PreparedRound,
    (start, end): (&CudaEvent, &CudaEvent),
    context: &str,
) -> Result<(), GpuError> {
    start
        .record(&gpu.stream)
        .during(|| "recording a timing event".into())?;
    round
        .graph
        .launch()
        .during(|| format!("replaying the graph of shape {shape}{context}"))?;
    end.record(&gpu.stream)
        .during(|| "recording a timing event".into())
}

/// The idle time that keeps a sample of `ms` begun at `began` to `duty_cycle` of the GPU's
/// time (its period `ms / duty_cycle`), what is left of it now; `None` at a 100% duty cycle
/// or where the sample took the whole period.
fn idle_for_duty_cycle(began: Instant, ms: f64, duty_cycle: f64) -> Option<Duration> {
    if duty_cycle >= 1.0 {
        return None;
    }
    Duration::from_secs_f64(ms / duty_cycle / 1000.0).checked_sub(began.elapsed())
}

/// µs of a span the host's clock saw (`host`) that events timing the GPU's work in it did
/// not (`events_ms`): what the witness records of each span (`crate::witness`).
fn unseen_us(host: Duration, events_ms: f64) -> f64 {
    host.as_secs_f64() * 1e6 - events_ms * 1000.0
}

/// Charges `ms` of GPU time of the `side` kernel on the bench's shape to the run's budget.
pub(super) fn charge(
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

/// Queues what comes before a replay of the round's graph: a new q for every launch (new
/// secret keys), the input sets' K and V refilled for the new K/V key, every output slot
/// poisoned, and every kernel node's parameters set again from the graph's host copy.
/// Returns the replay's K/V key.
pub(super) fn queue_replay(
    gpu: &Gpu,
    shape: &ShapeParams,
    round: &mut PreparedRound,
    kv: &KvRefs,
) -> Result<u64, GpuError> {
    let wait = || gpu.sync(None, || "a diagnostic wait (CI_GATE_SYNC_SPANS)".into());
    spans::gpu_step("sample.q_fill", wait, || round.secrets.refill(gpu))?;
    let kv_key = round.secrets.kv_key();
    spans::gpu_step("sample.kv_fill", wait, || {
        refill_inputs(gpu, shape, &kv.seeds, &mut round.inputs, kv_key)
    })?;
    spans::gpu_step("sample.poison", wait, || round.slots.poison(gpu))?;
    spans::gpu_step("sample.params", wait, || {
        round
            .graph
            .reset_params()
            .during(|| format!("setting the launch parameters of shape {shape}"))
    })?;
    Ok(kv_key)
}

/// Queues the checks of a replay (untimed, after it) and the copy of their words to host
/// memory: the words zeroed; the reference's copies of K and V filled for this replay and
/// both sides' K/V hashed; every launch's reference computed for its own q and scale and
/// every slot compared with it (in units of its V slice's scale); the gaps, the constant
/// data, the round's own q and the spacer verified. Everything these read is written now,
/// after the replay.
pub(super) fn queue_checks(
    gpu: &Gpu,
    kernel: &Kernel,
    round: &mut PreparedRound,
    kv: &mut KvRefs,
    kv_key: u64,
) -> Result<(), GpuError> {
    if round.check_room() == 0 {
        return Err(GpuError::Internal(
            "more checked replays than the round has room for".into(),
        ));
    }
    let layout = round.layout;
    let words = &mut round.words;
    let wait = || gpu.sync(None, || "a diagnostic wait (CI_GATE_SYNC_SPANS)".into());
    gpu.stream
        .memset_zeros(words)
        .during(|| "zeroing the replay checks".into())?;
    spans::gpu_step("check.kv_fill", wait, || kv.fill_for(gpu, kv_key))?;
    spans::gpu_step("check.kv_hash", wait, || {
        let (mut head, mut tail) = words.split_at_mut(layout.kv_reference().start);
        let side = layout.kv_side();
        let mut side = head.slice_mut(side.start..side.end);
        kv.hash_both(gpu, &round.inputs, &mut side, &mut tail.slice_mut(0..1))
    })?;
    spans::gpu_step("check.reference", wait, || round.secrets.reference(gpu, kv))?;
    let v_scales = kv.v_scales(kv_key);
    spans::gpu_step("check.outputs", wait, || {
        round
            .slots
            .check(gpu, &mut round.secrets, &v_scales, words, layout)
    })?;
    if let Some(guard) = &kernel.constants {
        spans::gpu_step("check.constants", wait, || {
            guard.check(gpu, &mut words.slice_mut(layout.constants()))
        })?;
    }
    spans::gpu_step("check.set_q", wait, || {
        hash_set_q(
            gpu,
            &round.inputs,
            round.set_q_key,
            &mut words.slice_mut(layout.set_q()),
        )
    })?;
    spans::gpu_step("check.spacer", wait, || {
        check_spacer(gpu, &round.spacer, &mut words.slice_mut(layout.spacer()))
    })?;
    let at = round.copied * layout.len();
    round
        .host
        .copy_from(&gpu.stream, &words.as_view(), at)
        .during(|| "copying the replay checks to the host".into())?;
    round.copied += 1;
    Ok(())
}

/// Queues the count of the spacer's words that are not zero into `out[0]`.
fn check_spacer(
    gpu: &Gpu,
    spacer: &CudaSlice<f32>,
    out: &mut cudarc::driver::CudaViewMut<'_, u64>,
) -> Result<(), GpuError> {
    let spans = [(0u64, spacer.len() as u64)];
    let what = || "checking the address spacer".to_string();
    let offsets = gpu.stream.clone_htod(&[0u64]).during(what)?;
    let lens = gpu.stream.clone_htod(&[spacer.len() as u64]).during(what)?;
    ffi::launch_check_fill(
        &gpu.stream,
        &gpu.kernels.check_fill,
        spacer,
        &offsets,
        &lens,
        &spans,
        0,
        out,
    )
    .during(what)
}

/// One sample: the replay prepared ([`queue_replay`]) and the graph uploaded, then a replay
/// bracketed by its own events, then (untimed) its checks ([`queue_checks`]). A short spin
/// launched first keeps the stream busy while the host enqueues the replay, so no
/// submission latency is timed. After it the GPU idles long enough that it is busy only
/// `duty_cycle` of the time: on an H200, back-to-back replays of a heavy kernel reached the
/// power cap after ~1 s and its clocks then swung by several percent (docs/PERF.md), while
/// short bursts with idle gaps stayed at full clock and repeated to within 0.1% across
/// processes. The idle time is counted from the sample's start (its q and poisoning), so
/// the host's work between samples (the checks, the clock readings, the sync) is part of it
/// instead of being added to it: a sample's period is its timed length over `duty_cycle`.
fn take_sample(
    b: &Bench<'_>,
    side: &AbSide<'_>,
    round: &mut PreparedRound,
    kv: &mut KvRefs,
) -> Result<(), GpuError> {
    let (gpu, shape, settings) = (b.gpu, b.shape, b.settings);
    let (kernel, label) = (side.kernel, side.label);
    let sample = round.values.len();
    if sample >= round.events.len() {
        return Err(GpuError::Internal(format!(
            "more samples than the {} of a round on shape {shape}",
            round.events.len()
        )));
    }
    let began = std::time::Instant::now();
    let kv_key = spans::time("sample.inputs", || queue_replay(gpu, shape, round, kv))?;
    round
        .graph
        .upload()
        .during(|| "uploading the CUDA graph".into())?;
    let clock_before = gpu.monitor.sm_clock_mhz();
    // The host's clock witnesses the sample (`crate::witness`) from an idle GPU: what was
    // queued before the lead-in (the inputs, the poison: the harness's own work) has
    // finished, so the span it sees is the lead-in, the replay and the wake-up only.
    spans::time("sample.ready", || {
        gpu.sync(None, || {
            format!("the inputs of a timed sample of shape {shape}")
        })
    })?;
    let witnessed_from = std::time::Instant::now();
    ffi::launch_spin(&gpu.stream, &gpu.kernels.spin, side.lead_in_cycles)
        .during(|| "launching the lead-in spin".into())?;
    let (start, end) = &round.events[sample];
    let wait = || gpu.sync(None, || "a diagnostic wait (CI_GATE_SYNC_SPANS)".into());
    spans::gpu_step("sample.replay", wait, || {
        replay_between(gpu, shape, round, (start, end), "")
    })?;
    let checks = || format!("timing the checks of a sample of shape {shape}");
    round.checks_events.0.record(&gpu.stream).during(checks)?;
    queue_checks(gpu, kernel, round, kv, kv_key)?;
    round.checks_events.1.record(&gpu.stream).during(checks)?;
    let tail = || format!("timing the witness's tail after a sample of shape {shape}");
    round.tail_events.0.record(&gpu.stream).during(tail)?;
    ffi::launch_spin(&gpu.stream, &gpu.kernels.spin, WITNESS_TAIL_CYCLES).during(tail)?;
    round.tail_events.1.record(&gpu.stream).during(tail)?;
    let what = || {
        format!(
            "kernel {} of the {label} on shape {shape} (a timed sample)",
            kernel.name
        )
    };
    let end = &round.events[sample].1;
    let ended = spans::time("sample.wait", || {
        gpu.wait_event(end, Some(round.expected), what)
    })?;
    let checked = spans::time("sample.checks", || {
        gpu.wait_event(&round.checks_events.1, Some(round.expected), what)
    })?;
    spans::time("sample.tail", || gpu.sync(Some(round.expected), what))?;
    let after_checks = checked.elapsed();
    let after_end = checked.duration_since(ended);
    // The checks run after the replay, in stream order: an end seen early (its completion
    // written by the kernel) shows as a longer wait for them. Their own time, by events
    // the GPU records after the kernel has ended, is taken out of that wait, so what is
    // left is the host's wake-ups and whatever of the kernel the end event did not hold;
    // likewise the tail's own time out of the wait for it after the checks.
    let checks_ms = event_ms(&round.checks_events.0, &round.checks_events.1)?;
    round.after_end.push(unseen_us(after_end, checks_ms));
    let tail_ms = event_ms(&round.tail_events.0, &round.tail_events.1)?;
    round.after_checks.push(unseen_us(after_checks, tail_ms));
    // A clock that moved across the sample (read before its launch and after it ended, not
    // after the idle time): an event this sample may carry.
    let clock_after = gpu.monitor.sm_clock_mhz();
    if let (Some(a), Some(b)) = (clock_before, clock_after)
        && a != b
    {
        round.clock_events += 1;
    }
    let (start, end) = &round.events[sample];
    let seen = ended.duration_since(witnessed_from);
    let ms = witnessed_ms(start, end, seen, what)?;
    round.values.push(ms * 1000.0 / f64::from(round.launches));
    round.unwitnessed.push(unseen_us(seen, ms));
    // What the host waited for is charged: the events' span is the kernel's to rewrite.
    charge(b, label, seen.as_secs_f64() * 1e3, what)?;
    if let Some(idle) = idle_for_duty_cycle(began, ms, settings.duty_cycle) {
        spans::time("sample.idle", || std::thread::sleep(idle));
    }
    Ok(())
}

/// What the checks of every replay of `round` found (after the stream was synchronized).
pub(super) fn round_findings(
    b: &Bench<'_>,
    round: &PreparedRound,
) -> Result<RoundFindings, GpuError> {
    let words = round
        .host
        .words()
        .during(|| "reading the replay checks".into())?;
    let len = round.layout.len();
    let mut findings = RoundFindings::default();
    for i in 0..round.copied {
        findings.add(
            &words[i * len..(i + 1) * len],
            round.layout,
            b.tolerance,
            round.set_q_hash,
        )?;
    }
    Ok(findings)
}

/// Checks the round (what every replay's checks found: every timed output against its
/// launch's reference, the gaps, the inputs, the spacer, the constant data, the round's own
/// q; then the held buffers of earlier rounds), then stores its samples and keeps its
/// buffers allocated (see [`Held`]).
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
    let findings = spans::time("round.findings", || round_findings(b, &round))?;
    if let Some(why) = findings.failure(side.label, name) {
        return fail(why);
    }
    if !spans::time("round.held_verify", || held.verify(gpu))? {
        return fail(format!(
            "the {} kernel {name} wrote to buffers of an earlier round while it was timed",
            side.label
        ));
    }
    let m = &mut side.m;
    // The first replay's launches are checked but not timed: counted with the rest.
    m.checked_launches += findings.slots.checked_launches;
    if let Some(w) = findings.slots.worst
        && m.worst_timed
            .as_ref()
            .is_none_or(|old| w.max_abs > old.max_abs)
    {
        m.worst_timed = Some(w);
    }
    m.clock_events.push(round.clock_events);
    m.rounds.push(round.values.clone());
    m.unwitnessed_us.push(round.unwitnessed.clone());
    m.after_end_us.push(round.after_end.clone());
    m.after_checks_us.push(round.after_checks.clone());
    // Hold at most a quarter of the free memory (and 4 GiB) across rounds: every round
    // verifies all of it.
    let (free, _) = gpu
        .ctx
        .mem_get_info()
        .during(|| "reading free device memory".into())?;
    let cap = (free as u64 / 4).min(4 << 30);
    spans::time("round.held_keep", || held.keep(gpu, round, cap))
}

/// A CUDA graph of `launches` spin kernels of `cycles` each (the harness's own kernel).
fn spin_graph(
    gpu: &Gpu,
    launches: u32,
    cycles: i64,
) -> Result<cudarc::driver::CudaGraph, GpuError> {
    gpu.stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .during(|| "starting a CUDA graph capture".into())?;
    let captured =
        (0..launches).try_for_each(|_| ffi::launch_spin(&gpu.stream, &gpu.kernels.spin, cycles));
    let graph = gpu
        .stream
        .end_capture(CUgraphInstantiate_flags(0))
        .during(|| "capturing spin kernels".into());
    captured.during(|| "capturing spin kernels".into())?;
    graph?.ok_or_else(|| GpuError::Internal("the spin graph came back empty".into()))
}

/// SM cycles of GPU work before each control sample's wait for an idle GPU (~10 µs).
const CONTROL_BUSY_CYCLES: i64 = 20_000;

/// The duty cycle the control's samples keep: none of the idle time a kernel's samples are
/// followed by. On an H100 (2026-12-05, `gpu::the_control_reads_the_same_without_the_duty_
/// cycles_idle_time`, 8 rounds of two kernels alone) a side's shift against the control
/// sampled at the gate's 25% duty cycle and at 100% was 5.85 against 6.06 µs
/// (b4h16s512d64) and 3.14 against 2.94 µs (b2h16s4096d128), while the control's 5 samples
/// cost 40.5 ms a round at 25% and 13.9 ms at 100%: what a sample's unwitnessed time is does
/// not depend on the idle time after it, and the idle time was most of the control's cost.
pub const CONTROL_DUTY_CYCLE: f64 = 1.0;

/// What a control sample copies of a kernel's sample ([`take_sample`]) besides the GPU work
/// before it, its lead-in and its replay: the steps in which the two still differ, each of
/// them outside the span the events time. A run's control copies one ([`ControlMimic::RUN`],
/// [`Control::round`]): work after the end event, timed by events of its own, where a
/// kernel's sample has its checks, so that the control has a span through that work as a
/// kernel's sample has one through its checks (`crate::witness`: a side alone's first test
/// is confirmed by it). A GPU test (`gpu::which_step_of_a_kernels_sample_the_control_lacks`)
/// samples it with each, to find what keeps a kernel's unwitnessed time 1–8 µs above the
/// control's in every run without a base (73 shape-runs, 2026-12-05) where two kernels of
/// an A/B differ by −1.6 … +1.0 µs (96). None does (H100 and H200, 2026-12-05, docs/PERF.md).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ControlMimic {
    /// Upload the graph before each sample, as a kernel's sample uploads its own.
    pub upload: bool,
    /// Read the SM clock through NVML before the wait for an idle GPU, as a kernel's sample
    /// does (`clock_events`).
    pub read_clock: bool,
    /// SM cycles of spin queued after the end event, where a kernel's sample queues its
    /// checks (1–3 ms of GPU work), between two events of its own; 0: none (the samples then
    /// have no span through it: [`Round::after_end_us`] is empty).
    pub trailing_cycles: i64,
    /// Bytes of device memory zeroed before the wait for an idle GPU, where a kernel's sample
    /// writes its inputs and poisons its outputs (megabytes); 0: none.
    pub before_bytes: usize,
}

impl ControlMimic {
    /// What a run's control copies: [`CONTROL_TRAILING_CYCLES`] of work after the end event.
    pub const RUN: ControlMimic = ControlMimic {
        upload: false,
        read_clock: false,
        trailing_cycles: CONTROL_TRAILING_CYCLES,
        before_bytes: 0,
    };
}

/// SM cycles of spin a run's control queues after each sample's end event (~1 ms at 2 GHz),
/// where a kernel's sample queues its checks (1–3 ms): long enough that a host waking late
/// at the end event finds it still running, so that the span through it holds only the last
/// wake-up, as a kernel's span through its checks does (the late wake-ups seen on H100s,
/// 2026-12-06, were 10–60 µs). Cost: ~5 ms a round of a side alone.
pub const CONTROL_TRAILING_CYCLES: i64 = 2_000_000;

/// The witness's control: a graph of the harness's own spin kernels, about
/// `sample_ms` long, and its two timing events; built once per run and sampled after every
/// round of a side alone ([`Control::round`]).
pub struct Control {
    graph: cudarc::driver::CudaGraph,
    /// Spin launches in the graph.
    launches: u32,
    events: (CudaEvent, CudaEvent),
    /// Around the work after the end event ([`ControlMimic::trailing_cycles`]).
    trailing_events: (CudaEvent, CudaEvent),
    /// The `measure.sample_ms` it was built for.
    sample_ms: f64,
}

impl Control {
    /// Spin launches in the control's graph.
    const LAUNCHES: u32 = 20;

    /// The control's graph of [`Self::LAUNCHES`] spins, about `settings.sample_ms` long in
    /// all at ~2 GHz (longer at a lower clock: only the unwitnessed time is compared).
    pub fn new(gpu: &Gpu, settings: &MeasureSettings) -> Result<Control, GpuError> {
        Control::with_launches(gpu, settings, Self::LAUNCHES)
    }

    /// [`Control::new`] with `launches` spins in its graph (at least 1), about
    /// `settings.sample_ms` long in all: a GPU test's question (does the number of a graph's
    /// nodes move its samples' unwitnessed time?).
    pub fn with_launches(
        gpu: &Gpu,
        settings: &MeasureSettings,
        launches: u32,
    ) -> Result<Control, GpuError> {
        let launches = launches.max(1);
        let cycles = (settings.sample_ms * 1e3 / f64::from(launches) * 2_000.0) as i64;
        Ok(Control {
            graph: spin_graph(gpu, launches, cycles.max(1))?,
            launches,
            events: (timing_event(gpu)?, timing_event(gpu)?),
            trailing_events: (timing_event(gpu)?, timing_event(gpu)?),
            sample_ms: settings.sample_ms,
        })
    }

    /// Whether it was built for these settings' sample length.
    pub fn fits(&self, settings: &MeasureSettings) -> bool {
        self.sample_ms == settings.sample_ms
    }

    /// One round of the control: the graph replayed once, then sampled as [`take_sample`]
    /// samples a kernel under test (the GPU idle, the host's clock read, the lead-in spin,
    /// the events around the replay, the wait for the end event, ~1 ms of work after it in
    /// place of the checks and the wait for that; then idle time to `duty_cycle`,
    /// [`CONTROL_DUTY_CYCLE`] in a run), `samples` times: what a sample's unwitnessed time
    /// is when no kernel under test runs, up to the end event and through the work after
    /// it. Cost: `samples` samples (~19 ms for 5 of 2 ms at a 100% duty cycle), after each
    /// round of a run with one side (`run::shape`).
    pub fn round(&self, gpu: &Gpu, duty_cycle: f64, samples: usize) -> Result<Round, GpuError> {
        self.round_mimicking(gpu, duty_cycle, samples, ControlMimic::RUN)
    }

    /// [`Control::round`] with the steps of a kernel's sample that `mimic` names.
    pub fn round_mimicking(
        &self,
        gpu: &Gpu,
        duty_cycle: f64,
        samples: usize,
        mimic: ControlMimic,
    ) -> Result<Round, GpuError> {
        let (graph, (start, end)) = (&self.graph, &self.events);
        let (trail_from, trail_to) = &self.trailing_events;
        let what = || "the witness's control (the harness's spin kernels)".to_string();
        let mut before = match mimic.before_bytes {
            0 => None,
            n => Some(ffi::alloc_zeros::<u8>(&gpu.stream, n).during(what)?),
        };
        graph.launch().during(what)?;
        let began_all = Instant::now();
        let (mut values, mut unwitnessed, mut after_end) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..samples {
            let began = Instant::now();
            // A kernel's sample keeps the GPU busy right up to its wait for an idle GPU (its
            // inputs and poison, `queue_replay`); so does this short spin, where the control's
            // lead-in would otherwise start from an idle period: on an H100 (2026-12-05) the
            // control's unwitnessed medians lay 3–9 µs above the rounds' beside them without it
            // (28 µs once in 65), 0.5–11 µs below with it (26 shapes).
            ffi::launch_spin(&gpu.stream, &gpu.kernels.spin, CONTROL_BUSY_CYCLES).during(what)?;
            if let Some(buf) = before.as_mut() {
                gpu.stream.memset_zeros(buf).during(what)?;
            }
            if mimic.upload {
                graph.upload().during(what)?;
            }
            if mimic.read_clock {
                let _ = gpu.monitor.sm_clock_mhz();
            }
            gpu.sync(None, what)?;
            let from = Instant::now();
            ffi::launch_spin(&gpu.stream, &gpu.kernels.spin, LEAD_CYCLES).during(what)?;
            start.record(&gpu.stream).during(what)?;
            graph.launch().during(what)?;
            end.record(&gpu.stream).during(what)?;
            if mimic.trailing_cycles > 0 {
                trail_from.record(&gpu.stream).during(what)?;
                ffi::launch_spin(&gpu.stream, &gpu.kernels.spin, mimic.trailing_cycles)
                    .during(what)?;
                trail_to.record(&gpu.stream).during(what)?;
            }
            let ended = gpu.wait_event(end, None, what)?;
            let seen = ended.duration_since(from);
            if mimic.trailing_cycles > 0 {
                // As a kernel's sample's wait for its checks (`take_sample`): the host's
                // wait after the end event less the work's own time by its events.
                gpu.sync(None, what)?;
                let waited = ended.elapsed();
                let trailing_ms = event_ms(trail_from, trail_to)?;
                after_end.push(unseen_us(waited, trailing_ms));
            }
            let ms = witnessed_ms(start, end, seen, what)?;
            values.push(ms * 1000.0 / f64::from(self.launches));
            unwitnessed.push(unseen_us(seen, ms));
            if let Some(idle) = idle_for_duty_cycle(began, ms, duty_cycle) {
                std::thread::sleep(idle);
            }
        }
        Ok(Round {
            wall_s: began_all.elapsed().as_secs_f64(),
            after_end_us: after_end,
            ..Round::of_samples(values, self.launches, unwitnessed)
        })
    }
}

/// Measures the spin kernel alone at two lengths and fits its per-launch cost.
pub(crate) fn calibrate_spin(gpu: &Gpu) -> Result<SpinCalibration, GpuError> {
    let time = |cycles: i64| -> Result<f64, GpuError> {
        const LAUNCHES: u32 = 20;
        let graph = spin_graph(gpu, LAUNCHES, cycles)?;
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
            best.push(event_ms(&a, &b)? * 1000.0 / f64::from(LAUNCHES));
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
    // Inputs and scales as every other launch draws them (from the run's secret).
    let mut rng = gpu.run_key.rng(0x5b1e_0f00 ^ kernel_salt(label));
    let inputs = random_inputs(gpu, shape, rng.random())?;
    let mut out = super::buffers::poisoned_output(gpu, shape)?;
    let start = Instant::now();
    while start.elapsed().as_secs_f64() * 1000.0 < ms {
        for _ in 0..8 {
            let scale = draw_scale(shape, &mut rng);
            launch_on(gpu, kernel, shape, &inputs, out.slice_mut(..), scale)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_samples_the_faster_sides_launches_whichever_warmed_up_first() {
        // A side whose warm-up read ten times slow (13 launches for 2 ms, where the other's
        // gives 133) shortens neither side's samples, first or second.
        assert_eq!(pair_launches([0, 0], &[13, 133]), 133);
        assert_eq!(pair_launches([0, 0], &[133, 13]), 133);
        // Once set, kept: later warm-ups do not move it.
        assert_eq!(pair_launches([133, 133], &[]), 133);
        assert_eq!(pair_launches([0, 120], &[]), 120);
        // Nothing warmed up: nothing set (`capture_round` refuses to capture at 0).
        assert_eq!(pair_launches([0, 0], &[]), 0);
    }

    #[test]
    fn the_idle_time_keeps_the_duty_cycle_and_none_at_a_full_one() {
        let began = Instant::now();
        // 2 ms at 25%: an 8 ms period, less what has passed since `began`.
        let idle = idle_for_duty_cycle(began, 2.0, 0.25).unwrap();
        assert!(
            idle <= Duration::from_millis(8) && idle > Duration::from_millis(7),
            "{idle:?}"
        );
        assert_eq!(idle_for_duty_cycle(began, 2.0, 1.0), None);
        // A sample that already took its whole period waits no more.
        let long_ago = began - Duration::from_millis(50);
        assert_eq!(idle_for_duty_cycle(long_ago, 2.0, 0.25), None);
    }

    #[test]
    fn an_events_span_that_is_not_positive_is_an_integrity_failure_not_a_time() {
        assert_eq!(positive_span(1.25).ok(), Some(1.25));
        for ms in [0.0, -0.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            match positive_span(ms) {
                Err(GpuError::Integrity(why)) => {
                    assert!(why.contains("a timing record was rewritten"), "{why}")
                }
                other => panic!("{ms}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_events_span_fits_in_the_hosts_or_is_refused() {
        let host = 2.1;
        // An honest sample: the events hold the replay, the host also the lead-in and wake.
        assert!(fits_within(2.0, host));
        // The clocks' rates and the events' resolution: 0.1% and 5 µs.
        assert!(fits_within(2.100 * 1.001 + 0.004, host));
        // Longer than the host waited: no GPU can have done that.
        assert!(!fits_within(2.100 * 1.001 + 0.006, host));
        assert!(!fits_within(1e30, host));
        assert!(!fits_within(f64::NAN, host));
    }
}
