//! Proof that the timed launches did the work, against a kernel written to fool the gate.
//!
//! - **Reference outputs** ([`RefSet`]) are computed by the harness's reference kernel from
//!   its own copies of the inputs, allocated and filled after the kernel under test last
//!   ran, so nothing it wrote can reach them; their hash is checked again after the round.
//! - **Inputs** of each side are hashed when they are filled (from the reference's copies)
//!   and again after every round: a kernel that writes to them fails.
//! - **Output slots** ([`OutputSlots`]): every launch of a sample's graph writes its own
//!   output, in one region at a random place with random poisoned gaps around it, all
//!   poisoned with a random NaN pattern before every sample (outside the timed region);
//!   after every sample each slot is compared on the device with the reference output and
//!   every gap must still hold the poison. A launch that skips work leaves poison, one that
//!   copies earlier work must find where it is, and a write outside `out` lands in a gap.
//!
//! Keys and poison patterns come from the OS's random numbers each run ([`RunKey`]), so a
//! kernel cannot precompute them. The cost is one reference run per round (or pair), two
//! hashes of the inputs, and a poison fill plus a compare of every slot per sample: device
//! bandwidth outside the timed region.

use cudarc::driver::{CudaSlice, DevicePtr};
use rand::{Rng, RngExt};
use rand_chacha::ChaCha8Rng;

use super::buffers::{Inputs, random_inputs};
use super::device::Gpu;
use super::error::{DriverContext, GpuError};
use super::raw;
pub use super::secret::RunKey;
use crate::config::{ShapeParams, Tolerance};
use crate::results::Parity;

/// A random quiet-NaN bit pattern that arithmetic does not produce (not the canonical NaNs
/// 0x7fffffff, 0x7fc00000 or their negatives): what an unwritten output element holds.
pub fn poison_pattern(rng: &mut impl Rng) -> u32 {
    loop {
        let sign = if rng.random::<bool>() { 0x8000_0000 } else { 0 };
        let payload = rng.random::<u32>() & 0x003f_ffff;
        let p = sign | 0x7fc0_0000 | payload;
        if payload != 0 && payload != 0x003f_ffff {
            return p;
        }
    }
}

/// The keyed hash of Q, K and V of each input set (summed; one number).
fn hash_inputs(gpu: &Gpu, sets: &[Inputs], key: u64, what: &str) -> Result<u64, GpuError> {
    let mut acc = raw::alloc_zeros::<u64>(&gpu.stream, 1).during(|| "allocating a hash".into())?;
    let hash = &gpu.kernels.hash_u16;
    for (i, set) in sets.iter().enumerate() {
        for (t, buf) in [&set.q, &set.k, &set.v].into_iter().enumerate() {
            let salt = key ^ ((i as u64) << 8 | t as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
            raw::launch_hash(&gpu.stream, hash, buf, salt, &mut acc)
                .during(|| format!("hashing {what}"))?;
        }
    }
    Ok(gpu.read_back(&acc, || format!("hashing {what}"))?[0])
}

fn hash_f32(gpu: &Gpu, buf: &CudaSlice<f32>, key: u64, what: &str) -> Result<u64, GpuError> {
    let mut acc = raw::alloc_zeros::<u64>(&gpu.stream, 1).during(|| "allocating a hash".into())?;
    raw::launch_hash(&gpu.stream, &gpu.kernels.hash_u32, buf, key, &mut acc)
        .during(|| format!("hashing {what}"))?;
    Ok(gpu.read_back(&acc, || format!("hashing {what}"))?[0])
}

/// Which query rows a [`RefSet`]'s reference computes.
#[derive(Clone, Copy, Debug)]
pub enum Rows {
    /// Every row: the whole output (parity).
    All,
    /// This many rows (at most seq_len) drawn at random, the last row always among them (the
    /// tail tile): what every timed launch is compared on, besides every element being
    /// written and finite. The kernel cannot know them, so it must get every row right.
    Sample(usize),
}

/// Rows of the reference in the timed checks: enough that a kernel wrong on even a few
/// percent of rows is caught in every round with near certainty, at 1/64 of a long shape's
/// full reference.
pub const SAMPLED_ROWS: usize = 64;

/// The reference outputs for the input sets of one round, made from the reference's own
/// copies of the inputs (dropped once used), with the hashes the sides' inputs and these
/// outputs must still have after the round.
pub struct RefSet {
    /// Per input set, back to back: [batch·heads, rows, head_dim] (with [`Rows::All`],
    /// exactly the layout of the output).
    pub refs: CudaSlice<f32>,
    /// The seeds the input sets were filled from.
    pub seeds: Vec<u64>,
    /// The query rows computed, ascending.
    pub rows: Vec<i32>,
    d_rows: CudaSlice<i32>,
    /// Elements of one input set's reference.
    per_set: usize,
    input_hash: u64,
    ref_hash: u64,
    key: u64,
}

/// `count` distinct rows of `0 .. seq_len`, ascending, the last one always included.
fn sample_rows(seq_len: u32, count: usize, rng: &mut impl Rng) -> Vec<i32> {
    let s = seq_len as usize;
    if count >= s {
        return (0..seq_len as i32).collect();
    }
    let mut picked = std::collections::BTreeSet::from([s - 1]);
    while picked.len() < count.max(1) {
        picked.insert(rng.random_range(0..s));
    }
    picked.into_iter().map(|r| r as i32).collect()
}

impl RefSet {
    /// Fills the reference's own inputs from each seed, hashes them, runs the reference
    /// kernel on each (for `rows`, drawn with `rng`), and hashes the outputs. Checks that the
    /// reference wrote every element with a finite value.
    pub fn new(
        gpu: &Gpu,
        shape: &ShapeParams,
        seeds: Vec<u64>,
        key: RunKey,
        rows: Rows,
        rng: &mut impl Rng,
    ) -> Result<RefSet, GpuError> {
        let rows = match rows {
            Rows::All => sample_rows(shape.seq_len, usize::MAX, rng),
            Rows::Sample(k) => sample_rows(shape.seq_len, k, rng),
        };
        let heads = shape.batch * shape.heads;
        let per_set = heads as usize * rows.len() * shape.head_dim as usize;
        let total = per_set.checked_mul(seeds.len()).ok_or_else(|| {
            GpuError::Invalid(format!(
                "shape {shape}: the reference outputs are too large"
            ))
        })?;
        let key = key.0 ^ 0x005e_ed0f_1e7e_5e75;
        let reference = gpu.kernels.reference_rows(shape.dtype)?;
        let d_rows = gpu
            .stream
            .clone_htod(&rows)
            .during(|| format!("uploading the reference rows of {shape}"))?;
        let mut refs = raw::alloc_filled(
            &gpu.stream,
            &gpu.kernels.fill_u32,
            total,
            super::buffers::POISON,
        )
        .during(|| format!("allocating the reference outputs of {shape}"))?;
        let mut input_hash = 0u64;
        for (i, &seed) in seeds.iter().enumerate() {
            let inputs = random_inputs(gpu, shape, seed)?;
            input_hash = input_hash.wrapping_add(hash_inputs(
                gpu,
                std::slice::from_ref(&inputs),
                key ^ i as u64,
                "the reference's inputs",
            )?);
            raw::launch_reference_rows(
                &gpu.stream,
                &reference.func,
                reference.threads,
                raw::ReferenceRows {
                    q: &inputs.q,
                    k: &inputs.k,
                    v: &inputs.v,
                    out: refs.slice_mut(i * per_set..(i + 1) * per_set),
                    seq_len: shape.seq_len as i32,
                    head_dim: shape.head_dim as i32,
                    scale: shape.scale(),
                    causal: i32::from(shape.causal),
                    rows: &d_rows,
                    host_rows: &rows,
                    heads,
                },
            )
            .during(|| format!("launching {} on shape {shape}", reference.name))?;
            gpu.sync(None, || {
                format!("the reference kernel {} on shape {shape}", reference.name)
            })?;
        }
        let host = gpu.read_back(&refs, || format!("the reference outputs of {shape}"))?;
        let bad = host.iter().filter(|x| !x.is_finite()).count();
        if bad > 0 {
            return Err(GpuError::Invalid(format!(
                "the reference kernel left {bad} of {} elements unwritten or non-finite on shape {shape}",
                host.len()
            )));
        }
        let ref_hash = hash_f32(gpu, &refs, key, "the reference outputs")?;
        Ok(RefSet {
            refs,
            seeds,
            rows,
            d_rows,
            per_set,
            input_hash,
            ref_hash,
            key,
        })
    }

    /// Whether `sets` (one side's inputs, filled from [`RefSet::seeds`] in order) still hold
    /// exactly the values they were filled with.
    pub(crate) fn inputs_unchanged(&self, gpu: &Gpu, sets: &[Inputs]) -> Result<bool, GpuError> {
        let mut h = 0u64;
        for (i, set) in sets.iter().enumerate() {
            h = h.wrapping_add(hash_inputs(
                gpu,
                std::slice::from_ref(set),
                self.key ^ i as u64,
                "a side's inputs",
            )?);
        }
        Ok(h == self.input_hash)
    }

    /// Whether the reference outputs still hold what the reference kernel wrote.
    pub fn outputs_unchanged(&self, gpu: &Gpu) -> Result<bool, GpuError> {
        Ok(hash_f32(gpu, &self.refs, self.key, "the reference outputs")? == self.ref_hash)
    }
}

/// Words per slot result on the device (CgCheck in kernels/util.cu).
const CHECK_WORDS: usize = 5;

/// The output slots of one side's round: one per launch of its sample graph.
pub struct OutputSlots {
    region: CudaSlice<f32>,
    /// Element offset of each launch's slot in `region`, by launch index.
    slot_offsets: Vec<u64>,
    ref_offsets: Vec<u64>,
    d_slot_offsets: CudaSlice<u64>,
    d_ref_offsets: CudaSlice<u64>,
    /// The poisoned gaps around the slots: (offset, length) in elements.
    gaps: Vec<(u64, u64)>,
    d_gap_offsets: CudaSlice<u64>,
    d_gap_lens: CudaSlice<u64>,
    elements: usize,
    seq_len: usize,
    head_dim: usize,
    /// This round's poison pattern.
    poison: u32,
    /// CHECK_WORDS per slot per sample.
    results: CudaSlice<u64>,
    samples: usize,
    mismatches: CudaSlice<u64>,
}

/// The most device memory one side's output slots may take: launches per sample are capped
/// so that the slots fit (a shorter sample, never a slot shared by two launches).
pub fn slot_budget_bytes(gpu: &Gpu) -> Result<u64, GpuError> {
    let (free, _) = gpu
        .ctx
        .mem_get_info()
        .during(|| "reading free device memory".into())?;
    Ok((free as u64 / 8).min(2 << 30))
}

impl OutputSlots {
    /// Slots for `launches` launches of `shape` whose inputs rotate through the input sets
    /// of `refs` (launch i uses set i mod sets and is compared with that set's reference),
    /// checked over `samples` samples, placed by `rng`.
    pub fn new(
        gpu: &Gpu,
        shape: &ShapeParams,
        launches: u32,
        refs: &RefSet,
        samples: u32,
        rng: &mut ChaCha8Rng,
    ) -> Result<OutputSlots, GpuError> {
        let input_sets = refs.seeds.len();
        let n = shape.elements() as u64;
        let launches = launches.max(1) as usize;
        // Slots in a random order, each after a random gap of 256 B to 64 KiB (a multiple of
        // 64 elements keeps every slot 256-byte aligned, as cudaMalloc's buffers are), and a
        // gap after the last one too: a launch knows its own slot only.
        let mut order: Vec<usize> = (0..launches).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        let aligned = n.div_ceil(64) * 64;
        let mut slot_offsets = vec![0u64; launches];
        let mut gaps = Vec::with_capacity(launches + 1);
        let mut at = 0u64;
        for &launch in &order {
            let gap = 64 * rng.random_range(1..=256u64);
            gaps.push((at, gap));
            at += gap;
            slot_offsets[launch] = at;
            // The padding to the next 64-element boundary is a gap too.
            if aligned > n {
                gaps.push((at + n, aligned - n));
            }
            at += aligned;
        }
        let tail = 64 * rng.random_range(1..=256u64);
        gaps.push((at, tail));
        at += tail;
        let total = usize::try_from(at).map_err(|_| {
            GpuError::Invalid(format!("shape {shape}: the output slots are too large"))
        })?;
        let ref_offsets: Vec<u64> = (0..launches)
            .map(|i| ((i % input_sets.max(1)) * refs.per_set) as u64)
            .collect();
        let upload = |v: &[u64]| {
            gpu.stream
                .clone_htod(v)
                .during(|| format!("uploading the output slot table of {shape}"))
        };
        let poison = poison_pattern(rng);
        let region = raw::alloc_filled(&gpu.stream, &gpu.kernels.fill_u32, total, poison)
            .during(|| format!("allocating {launches} output slots of {shape}"))?;
        let gap_offsets: Vec<u64> = gaps.iter().map(|g| g.0).collect();
        let gap_lens: Vec<u64> = gaps.iter().map(|g| g.1).collect();
        Ok(OutputSlots {
            d_slot_offsets: upload(&slot_offsets)?,
            d_ref_offsets: upload(&ref_offsets)?,
            d_gap_offsets: upload(&gap_offsets)?,
            d_gap_lens: upload(&gap_lens)?,
            seq_len: shape.seq_len as usize,
            head_dim: shape.head_dim as usize,
            results: raw::alloc_zeros::<u64>(
                &gpu.stream,
                launches * samples.max(1) as usize * CHECK_WORDS,
            )
            .during(|| "allocating the output checks".into())?,
            mismatches: raw::alloc_zeros::<u64>(&gpu.stream, 1)
                .during(|| "allocating the output checks".into())?,
            region,
            slot_offsets,
            ref_offsets,
            gaps,
            elements: n as usize,
            poison,
            samples: samples.max(1) as usize,
        })
    }

    pub fn launches(&self) -> usize {
        self.slot_offsets.len()
    }

    pub fn bytes(&self) -> u64 {
        self.region.len() as u64 * 4
    }

    /// Device address of the region (for the report's proof that rounds used fresh memory).
    pub fn address(&self, gpu: &Gpu) -> u64 {
        let (ptr, _sync) = self.region.device_ptr(&gpu.stream);
        ptr
    }

    /// The output of launch `i` (its slot).
    pub fn slot(&mut self, i: usize) -> cudarc::driver::CudaViewMut<'_, f32> {
        let start = self.slot_offsets[i % self.slot_offsets.len()] as usize;
        self.region.slice_mut(start..start + self.elements)
    }

    /// Poisons every slot and gap again (queued on the stream, before a sample).
    pub fn poison(&mut self, gpu: &Gpu) -> Result<(), GpuError> {
        raw::launch_fill_u32(
            &gpu.stream,
            &gpu.kernels.fill_u32,
            &mut self.region,
            self.poison,
        )
        .during(|| "poisoning the output slots".into())
    }

    /// Queues the check of every slot against `refs` and of every gap, for sample `sample`.
    pub fn check(&mut self, gpu: &Gpu, refs: &RefSet, sample: usize) -> Result<(), GpuError> {
        let slots = self.launches();
        let words = slots * CHECK_WORDS;
        let start = sample.min(self.samples - 1) * words;
        let table = raw::SlotTable {
            region: &self.region,
            slot_offsets: &self.d_slot_offsets,
            ref_offsets: &self.d_ref_offsets,
            refs: &refs.refs,
            rows: &refs.d_rows,
            seq_len: self.seq_len,
            head_dim: self.head_dim,
            elements: self.elements,
            host_slot_offsets: &self.slot_offsets,
            host_ref_offsets: &self.ref_offsets,
            host_rows: &refs.rows,
        };
        raw::launch_check_outputs(
            &gpu.stream,
            &gpu.kernels.check_outputs,
            &table,
            self.poison,
            &mut self.results.slice_mut(start..start + words),
        )
        .during(|| "checking the timed outputs".into())?;
        raw::launch_check_fill(
            &gpu.stream,
            &gpu.kernels.check_fill,
            &self.region,
            &self.d_gap_offsets,
            &self.d_gap_lens,
            &self.gaps,
            self.poison,
            &mut self.mismatches,
        )
        .during(|| "checking the gaps between the timed outputs".into())
    }

    /// Reads the checks of the round back: the worst launch's error against the reference
    /// (largest max-abs error, or any unwritten or non-finite element), the number of
    /// launches checked and the number of gap words that were written.
    pub fn outcome(
        &self,
        gpu: &Gpu,
        tolerance: Tolerance,
        samples_taken: usize,
    ) -> Result<SlotOutcome, GpuError> {
        let words = gpu.read_back(&self.results, || "reading the output checks".into())?;
        let mismatches = gpu.read_back(&self.mismatches, || "reading the gap checks".into())?[0];
        let per_sample = self.launches() * CHECK_WORDS;
        let mut worst: Option<Parity> = None;
        let mut failed = 0u64;
        let mut checked = 0u64;
        for chunk in words
            .chunks_exact(CHECK_WORDS)
            .take(per_sample / CHECK_WORDS * samples_taken.min(self.samples))
        {
            let diff2 = f64::from_bits(chunk[3]);
            let ref2 = f64::from_bits(chunk[4]);
            let p = Parity {
                max_abs: f64::from(f32::from_bits(chunk[2] as u32)),
                rel_l2: if ref2 > 0.0 {
                    (diff2 / ref2).sqrt()
                } else {
                    diff2.sqrt()
                },
                nan_or_inf: chunk[1],
                unwritten: chunk[0],
                tolerance,
                seed: 0,
            };
            checked += 1;
            if !p.passed() {
                failed += 1;
            }
            let worse = match &worst {
                None => true,
                Some(w) => {
                    (w.passed() && !p.passed())
                        || (w.passed() == p.passed()
                            && (p.unwritten + p.nan_or_inf, p.max_abs)
                                > (w.unwritten + w.nan_or_inf, w.max_abs))
                }
            };
            if worse {
                worst = Some(p);
            }
        }
        Ok(SlotOutcome {
            worst,
            failed_launches: failed,
            checked_launches: checked,
            gap_words_written: mismatches,
        })
    }
}

/// What the output checks of one round found.
#[derive(Clone, Debug)]
pub struct SlotOutcome {
    pub worst: Option<Parity>,
    pub failed_launches: u64,
    pub checked_launches: u64,
    pub gap_words_written: u64,
}

impl SlotOutcome {
    /// One sentence on what failed, naming the side and kernel, or `None` when every timed
    /// launch matched the reference and nothing was written outside the slots.
    pub fn failure(&self, side: &str, kernel: &str) -> Option<String> {
        if self.gap_words_written > 0 {
            return Some(format!(
                "the {side} kernel {kernel} wrote {} words outside its output during timed launches",
                self.gap_words_written
            ));
        }
        let w = self.worst.as_ref()?;
        if self.failed_launches == 0 {
            return None;
        }
        Some(format!(
            "{} of the {side} kernel {kernel}'s {} timed launches did not reproduce the reference (worst: {} unwritten, {} NaN/Inf, max abs {:.2e}, rel L2 {:.2e}): the timed work is not the checked work",
            self.failed_launches,
            self.checked_launches,
            w.unwritten,
            w.nan_or_inf,
            w.max_abs,
            w.rel_l2
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn poison_is_a_quiet_nan_no_arithmetic_makes() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let p = poison_pattern(&mut rng);
            assert!(f32::from_bits(p).is_nan());
            assert_ne!(p & 0x7fff_ffff, 0x7fff_ffff);
            assert_ne!(p & 0x7fff_ffff, 0x7fc0_0000);
            seen.insert(p);
        }
        // Different every time: a kernel cannot test for one fixed pattern.
        assert!(seen.len() > 9_900);
    }

    #[test]
    fn sampled_rows_are_distinct_sorted_and_hold_the_last_row() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let rows = sample_rows(4096, 64, &mut rng);
        assert_eq!(rows.len(), 64);
        assert!(rows.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(*rows.last().unwrap(), 4095);
        assert_eq!(sample_rows(37, 64, &mut rng), (0..37).collect::<Vec<_>>());
        assert_eq!(sample_rows(1, 64, &mut rng), vec![0]);
        // A new draw each time: the kernel cannot learn them.
        assert_ne!(sample_rows(4096, 64, &mut rng), rows);
    }

    #[test]
    fn run_keys_differ_between_runs() {
        assert_ne!(RunKey::from_os().0, RunKey::from_os().0);
    }
}
