//! Energy windows (`--energy`, `baseline update`): after a shape's timed pairs, each side's
//! CUDA graph replayed back to back while a thread of its own reads NVML's energy counter
//! (see `crate::energy` for what is made of the readings). The replays are prepared and
//! checked by the same code as timed samples (`super::measure`): every replay poisoned and
//! its launch parameters set again, a secret quarter of them checked, the words of each
//! check copied to host memory before the next replay runs, and every GPU second charged
//! to the run's budget as measured.

use std::time::{Duration, Instant};

use cudarc::driver::CudaEvent;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::buffers::check_shape;
use super::device::Kernel;
use super::error::{DriverContext, GpuError};
use super::integrity::{CheckLayout, KvRefs};
use super::measure::{
    AbSide, Bench, PreparedRound, charge, event_ms, fits_within, prepare_round, queue_checks,
    queue_replay, replay_between, round_findings, round_kv, timing_event, witnessed_ms,
};

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
    // Each side's p50 per call over its timed samples, which the host's clock witnessed: no
    // window's call can read shorter than that back to back.
    let timed_call_ms: Vec<Option<f64>> = sides
        .iter()
        .map(|side| {
            let timed: Vec<f64> = side.m.rounds.iter().flatten().copied().collect();
            crate::stats::median(&timed).map(|us| us / 1000.0)
        })
        .collect();
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
            let checks = window_checks(side.m.launches_per_sample);
            let mut round = prepare_round(b, side, &mut kv, seed ^ index, checks)?;
            // Not a timed round: its address is not one of the rounds'.
            side.m.round_addresses.pop();
            let window = energy_window(
                b,
                (side.kernel, side.label),
                &mut round,
                &mut kv,
                &reader,
                source,
                updates,
            )?
            .map(|r| crate::energy::EnergyRound {
                timed_call_ms: timed_call_ms.get(i).copied().flatten(),
                ..r
            });
            let findings = round_findings(b, &round)?;
            if let Some(why) = findings.failure(side.label, &side.kernel.name) {
                return Err(GpuError::Integrity(format!(
                    "{why} (an energy window, shape {})",
                    b.shape
                )));
            }
            side.m.energy.extend(window);
        }
    }
    Ok(None)
}

/// The check words an energy window may copy out: 64 MiB of host memory (8 Mi words) at
/// most, between 16 and 1024 checked replays; a window that has used them all ends there
/// (its reading is then judged like any other: too few counter moves and it is not used).
fn window_checks(launches: u32) -> usize {
    let per = CheckLayout {
        launches: launches.max(1) as usize,
    }
    .len();
    ((8usize << 20) / per).clamp(16, 1024)
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

/// One replay of an energy window, enqueued between its two timing events: prepared as a
/// timed sample's (a new q for every launch of every replay: back to back, no replay
/// computes what another did, so none is worth less energy than it shows; the inputs
/// refilled, the outputs poisoned, the launch parameters set again); one in
/// [`ENERGY_CHECK_ONE_IN`], drawn from `checks`, checked after, its words copied out before
/// the next replay runs.
fn enqueue_replay(
    b: &Bench<'_>,
    kernel: &Kernel,
    round: &mut PreparedRound,
    kv: &mut KvRefs,
    checks: &mut ChaCha8Rng,
) -> Result<(CudaEvent, CudaEvent), GpuError> {
    let (gpu, shape) = (b.gpu, b.shape);
    let (start, end) = (timing_event(gpu)?, timing_event(gpu)?);
    let kv_key = queue_replay(gpu, shape, round, kv)?;
    replay_between(gpu, shape, round, (&start, &end), " (energy window)")?;
    if checks.random_range(0..ENERGY_CHECK_ONE_IN) == 0 {
        queue_checks(gpu, kernel, round, kv, kv_key)?;
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
                        timed_call_ms: None,
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
                    timed_call_ms: None,
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
                    timed_call_ms: None,
                }
            }
        }
    }
}

/// An energy window's replays enqueued and not yet timed (each a pair of events around it),
/// and what the timed ones took.
#[derive(Default)]
struct InFlight {
    queue: std::collections::VecDeque<(CudaEvent, CudaEvent)>,
    /// The GPU time of the replays retired, in ms.
    ms: f64,
    replays: u64,
}

impl InFlight {
    /// Times the oldest replay if it has finished; whether it had.
    fn retire_front(&mut self) -> Result<bool, GpuError> {
        if !self.queue.front().is_some_and(|(_, end)| end.is_complete()) {
            return Ok(false);
        }
        if let Some((start, end)) = self.queue.pop_front() {
            self.ms += event_ms(&start, &end)?;
            self.replays += 1;
        }
        Ok(true)
    }

    /// Times every replay left (after the stream has been waited for).
    fn retire_all(&mut self) -> Result<(), GpuError> {
        for (start, end) in self.queue.drain(..) {
            self.ms += event_ms(&start, &end)?;
            self.replays += 1;
        }
        Ok(())
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
    (kernel, label): (&Kernel, &'static str),
    round: &mut PreparedRound,
    kv: &mut KvRefs,
    reader: &super::env::EnergyReader<'_>,
    source: crate::energy::EnergySource,
    updates: u32,
) -> Result<Option<crate::energy::EnergyRound>, GpuError> {
    use crate::energy::EnergySource;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (gpu, shape) = (b.gpu, b.shape);
    let updates_n = updates as usize;
    // The counter moves every ~100 ms on the GPUs measured; no window runs past 0.4 s per
    // update asked plus one second.
    let deadline = Duration::from_secs_f64(1.0 + 0.4 * f64::from(updates));
    let mut checks = gpu.run_key.rng(round.launches as u64 ^ 0x0e4e_c4ec_0001);
    let window = (timing_event(gpu)?, timing_event(gpu)?);
    let (window_start, window_end) = (&window.0, &window.1);
    let queued = Instant::now();
    window_start
        .record(&gpu.stream)
        .during(|| "recording a timing event".into())?;
    let mut in_flight = InFlight::default();
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
                // A replay is enqueued only while its check, if drawn, has room to be kept.
                if round.check_room() == 0 {
                    return Ok(());
                }
                if in_flight.queue.len() < ENERGY_DEPTH {
                    in_flight.queue.push_back(enqueue(round)?);
                    continue;
                }
                if in_flight.retire_front()? {
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
    let what = || format!("kernel {} on shape {shape} (an energy window)", kernel.name);
    gpu.sync(Some(expected), what)?;
    let host = queued.elapsed();
    fed?;
    in_flight.retire_all()?;
    let InFlight {
        ms: replay_ms,
        replays,
        ..
    } = in_flight;
    let busy_ms = window_spans(b, label, (window_start, window_end), host, replay_ms, what)?;
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

/// An energy window's span (its two events), checked with its replays' against what the
/// host waited: the window within the host's span, the replays within the window (all are
/// events, which the kernel under test can rewrite); what the host waited is charged.
/// Returns the window's span, in ms.
fn window_spans(
    b: &Bench<'_>,
    label: &'static str,
    (start, end): (&CudaEvent, &CudaEvent),
    host: Duration,
    replay_ms: f64,
    what: impl Fn() -> String,
) -> Result<f64, GpuError> {
    let busy_ms = witnessed_ms(start, end, host, &what)?;
    if !fits_within(replay_ms, busy_ms) {
        return Err(GpuError::Integrity(format!(
            "the replays of {} read {replay_ms:.3} ms in all, longer than the {busy_ms:.3} ms window that holds them: a timing record was rewritten while the kernel ran",
            what()
        )));
    }
    charge(b, label, host.as_secs_f64() * 1e3, what)?;
    Ok(busy_ms)
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
