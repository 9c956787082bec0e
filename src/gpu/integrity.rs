//! Proof that the timed launches did the work, against a kernel written to fool the gate.
//!
//! - **No launch's work is worth anything to another launch** ([`LaunchSecrets`]): every
//!   timed launch reads a q of its own, refilled from a new secret key before every sample,
//!   and gets a softmax scale of its own, so no launch of the run computes what another did.
//!   A kernel can keep state where no check looks (a `__constant__` bank written through a
//!   generic address, uninitialised shared memory, allocation slack, other buffers of the
//!   context); with this, a copied output, a cached intermediate or a remembered pointer is
//!   simply wrong, wherever it was kept. Closing each stash as well (the constant data
//!   verified around every sample, the spacer and held buffers verified) is
//!   defence in depth, not the defence.
//! - **References** are computed by the harness's reference kernel after the sample, from
//!   the reference's own copies of K and V ([`KvRefs`]) and q values regenerated from the
//!   sample's key, never from memory the kernel under test could write; the copies' hash is
//!   checked after the round. Parity's full reference ([`RefSet`]) is made likewise, after
//!   the kernel ran.
//! - **Inputs** of each side are hashed when they are filled and again after every round: a
//!   kernel that writes to them fails.
//! - **Output slots** ([`OutputSlots`]): every launch of a sample's graph writes its own
//!   output, in one region at a random place with random poisoned gaps around it, all
//!   poisoned with a random NaN pattern before every sample (outside the timed region);
//!   after every sample each slot is compared on the device with its own launch's reference
//!   ([`ROWS_PER_LAUNCH`] secret rows of every head) and every gap must still hold the
//!   poison. A launch that skips work leaves poison or a wrong value, and a write outside
//!   `out` lands in a gap.
//!
//! Keys, poison patterns and rows come from the OS's random numbers each run ([`RunKey`]),
//! so a kernel cannot precompute them. The cost, all outside the timed region: per sample a
//! fill of every launch's q, the reference of 4 rows per head per launch, a poison fill and a
//! compare of every slot; per round the hashes of the inputs and of the held buffers.

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DevicePtr};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::buffers::{Inputs, random_inputs};
use super::device::Gpu;
use super::error::{DriverContext, GpuError};
pub use super::secret::RunKey;
use crate::config::{ShapeParams, Tolerance};
use crate::ffi;
use crate::results::Parity;

/// A random quiet-NaN bit pattern that arithmetic does not produce (not the canonical NaNs
/// 0x7fffffff, 0x7fc00000 or their negatives): what an unwritten output element holds.
pub(crate) fn poison_pattern(rng: &mut impl Rng) -> u32 {
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
    let mut acc = ffi::alloc_zeros::<u64>(&gpu.stream, 1).during(|| "allocating a hash".into())?;
    let hash = &gpu.kernels.hash_u16;
    for (i, set) in sets.iter().enumerate() {
        for (t, buf) in [&set.q, &set.k, &set.v].into_iter().enumerate() {
            let salt = key ^ ((i as u64) << 8 | t as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
            ffi::launch_hash(
                &gpu.stream,
                hash,
                &buf.as_view(),
                salt,
                &mut acc.slice_mut(..),
            )
            .during(|| format!("hashing {what}"))?;
        }
    }
    Ok(gpu.read_back(&acc, || format!("hashing {what}"))?[0])
}

/// One keyed hash of 16- and 32-bit buffers, summed (each with a salt of its own).
pub(crate) struct HashParts<'a> {
    pub u16s: Vec<CudaView<'a, u16>>,
    pub u32s: Vec<CudaView<'a, f32>>,
}

/// The keyed hash of `parts` (queued, then read back): what a set of buffers must still
/// hash to when nothing wrote them.
pub(crate) fn hash_parts(
    gpu: &Gpu,
    parts: &HashParts<'_>,
    key: u64,
    what: &str,
) -> Result<u64, GpuError> {
    let mut acc = ffi::alloc_zeros::<u64>(&gpu.stream, 1).during(|| "allocating a hash".into())?;
    let salt = |i: usize| key ^ (i as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
    for (i, buf) in parts.u16s.iter().enumerate() {
        ffi::launch_hash(
            &gpu.stream,
            &gpu.kernels.hash_u16,
            buf,
            salt(i),
            &mut acc.slice_mut(..),
        )
        .during(|| format!("hashing {what}"))?;
    }
    for (i, buf) in parts.u32s.iter().enumerate() {
        let i = i + parts.u16s.len();
        ffi::launch_hash(
            &gpu.stream,
            &gpu.kernels.hash_u32,
            buf,
            salt(i),
            &mut acc.slice_mut(..),
        )
        .during(|| format!("hashing {what}"))?;
    }
    Ok(gpu.read_back(&acc, || format!("hashing {what}"))?[0])
}

/// The reference output of one input set on every row (parity), made from the reference's
/// own copies of the inputs (dropped once used), with the hash the side's inputs must still
/// have after its launch. The output is held in host memory only (read back once, the device
/// copy freed): no launch can address it, so it may serve a later check of the same inputs.
pub(crate) struct RefSet {
    /// [batch·heads, seq_len, head_dim]: exactly the layout of the output.
    pub refs: Vec<f32>,
    /// Uniform attention on the same V, in the same layout
    /// (`reference::uniform_attention`): what the centered error is measured from.
    pub uniform: Vec<f32>,
    input_hash: u64,
    key: u64,
}

impl RefSet {
    /// Fills the reference's own inputs from `seed`, hashes them, runs the reference kernel
    /// on every row with softmax scale `scale` (the one the checked launch had), and checks
    /// that it wrote every element with a finite value.
    pub fn new(
        gpu: &Gpu,
        shape: &ShapeParams,
        seed: u64,
        key: RunKey,
        scale: f32,
    ) -> Result<RefSet, GpuError> {
        let key = key.0 ^ 0x005e_ed0f_1e7e_5e75;
        let reference = gpu.kernels.reference_full(shape.dtype)?;
        let mut refs = ffi::alloc_filled(
            &gpu.stream,
            &gpu.kernels.fill_u32,
            shape.elements(),
            super::buffers::POISON,
        )
        .during(|| format!("allocating the reference outputs of {shape}"))?;
        let inputs = random_inputs(gpu, shape, seed)?;
        let input_hash = hash_inputs(
            gpu,
            std::slice::from_ref(&inputs),
            key,
            "the reference's inputs",
        )?;
        super::buffers::launch_on(gpu, reference, shape, &inputs, refs.slice_mut(..), scale)?;
        gpu.sync(None, || {
            format!("the reference kernel {} on shape {shape}", reference.name)
        })?;
        let host = gpu.read_back(&refs, || format!("the reference outputs of {shape}"))?;
        let bad = host.iter().filter(|x| !x.is_finite()).count();
        if bad > 0 {
            return Err(GpuError::Internal(format!(
                "the reference kernel left {bad} of {} elements unwritten or non-finite on shape {shape}",
                host.len()
            )));
        }
        // V as the kernels read it (rounded to the dtype), from the reference's own copy.
        let v = gpu.read_back(&inputs.v, || format!("the reference's V of {shape}"))?;
        let decode = match shape.dtype {
            crate::config::Dtype::Float16 => crate::reference::f16_to_f32,
            crate::config::Dtype::Bfloat16 => crate::reference::bf16_to_f32,
        };
        let v: Vec<f32> = v.into_iter().map(decode).collect();
        let uniform = crate::reference::uniform_attention(
            &v,
            shape.seq_len as usize,
            shape.head_dim as usize,
            shape.causal,
        );
        Ok(RefSet {
            refs: host,
            uniform,
            input_hash,
            key,
        })
    }

    /// Whether `inputs` (the side's, filled from the same seed) still hold exactly the
    /// values they were filled with.
    pub(crate) fn inputs_unchanged(&self, gpu: &Gpu, inputs: &Inputs) -> Result<bool, GpuError> {
        let h = hash_inputs(
            gpu,
            std::slice::from_ref(inputs),
            self.key,
            "a side's inputs",
        )?;
        Ok(h == self.input_hash)
    }
}

/// Rows of each timed launch's output compared with the reference for that launch, in every
/// sample: the last row (the tail tile) and three drawn at random (secret, new for every
/// launch and sample), in every (batch, head). A copied or skipped launch is wrong on all of
/// them; a kernel right on a fraction f of rows passes one launch with probability
/// f^(4·batch·heads), so never across a round's hundreds of launches.
pub const ROWS_PER_LAUNCH: usize = 4;

/// The keys and values of a round: `sets` input sets (two in hot cache where they fit in L2,
/// so that no launch reads the K/V its predecessor read; the cold-cache rotation otherwise),
/// whose values are filled again before every sample from that sample's secret key, in
/// place (the same memory stays warm: hot cache means the same K/V memory, not the same
/// values) — so nothing derived from K or V in one sample is valid in the next. The
/// reference's own copies are filled from the same key only after the sample, so the kernel
/// under test never runs while they exist with its values; after every sample the keyed hash
/// of the side's K/V and of the reference's copies are added to two sums, which must be
/// equal at the end of the round (the side's inputs unchanged by its launches).
pub struct KvRefs {
    /// The seeds the input sets were first filled from (the round's).
    pub seeds: Vec<u64>,
    k: CudaSlice<u16>,
    v: CudaSlice<u16>,
    per_set: usize,
    shape: ShapeParams,
    key: u64,
}

/// The seed of input set `set` of a round whose sets were first filled from `seeds`, for
/// the sample whose K/V key is `kv_key` (0: the round's first fill).
pub(crate) fn sample_seed(seeds: &[u64], set: usize, kv_key: u64) -> u64 {
    let base = seeds.get(set).copied().unwrap_or(0);
    if kv_key == 0 {
        base
    } else {
        base ^ kv_key.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17)
    }
}

/// Fills the K and V of `sets` (a side's inputs) from the seeds of the sample with K/V key
/// `kv_key` (queued).
pub(crate) fn refill_inputs(
    gpu: &Gpu,
    shape: &ShapeParams,
    seeds: &[u64],
    sets: &mut [Inputs],
    kv_key: u64,
) -> Result<(), GpuError> {
    for (i, set) in sets.iter_mut().enumerate() {
        let seed = sample_seed(seeds, i, kv_key);
        let (k, v) = (&mut set.k.slice_mut(..), &mut set.v.slice_mut(..));
        fill_kv(gpu, shape, seed, k, v, "the keys and values")?;
    }
    Ok(())
}

/// Fills a set's K and V with the values of input seed `seed` (queued): one function for the
/// timed inputs and the reference's copies, so that both hold the same values.
fn fill_kv<'a>(
    gpu: &Gpu,
    shape: &ShapeParams,
    seed: u64,
    k: &mut CudaViewMut<'a, u16>,
    v: &mut CudaViewMut<'a, u16>,
    what: &str,
) -> Result<(), GpuError> {
    let fill = gpu.kernels.fill_input(shape.dtype);
    for (buf, tensor) in [
        (k, super::buffers::Tensor::K),
        (v, super::buffers::Tensor::V),
    ] {
        ffi::launch_fill_input(
            &gpu.stream,
            fill,
            buf,
            super::buffers::input_seed(seed, tensor),
            tensor.layout(shape),
        )
        .during(|| format!("filling {what} of {shape}"))?;
    }
    Ok(())
}

impl KvRefs {
    /// The reference's copies of the K and V of the sets of `seeds`, zeros until they are
    /// filled after a replay ([`KvRefs::fill_for`]): no kernel under test runs while they
    /// hold the values it computes with.
    pub fn new(
        gpu: &Gpu,
        shape: &ShapeParams,
        seeds: Vec<u64>,
        key: RunKey,
    ) -> Result<KvRefs, GpuError> {
        let per_set = shape.elements();
        let total = per_set
            .checked_mul(seeds.len())
            .ok_or_else(|| GpuError::Shape {
                shape: shape.name(),
                why: "the input sets are too large".into(),
            })?;
        let alloc = || {
            ffi::alloc_zeros::<u16>(&gpu.stream, total)
                .during(|| format!("allocating the reference's inputs of {shape}"))
        };
        Ok(KvRefs {
            seeds,
            k: alloc()?,
            v: alloc()?,
            per_set,
            shape: *shape,
            key: key.0 ^ 0x0c0f_fee0_4b5e_7a11,
        })
    }

    /// The scales s_V of every (set, batch·head) V slice of the sample with K/V key `kv_key`,
    /// set by set: what the check of a launch that read set s measures its error in.
    pub(crate) fn v_scales(&self, kv_key: u64) -> Vec<f32> {
        (0..self.seeds.len())
            .flat_map(|i| {
                super::buffers::v_scales(&self.shape, sample_seed(&self.seeds, i, kv_key))
            })
            .collect()
    }

    /// Fills the reference's copies with the values of the sample whose K/V key is `kv_key`
    /// (queued; after that sample).
    pub fn fill_for(&mut self, gpu: &Gpu, kv_key: u64) -> Result<(), GpuError> {
        for i in 0..self.seeds.len() {
            let seed = sample_seed(&self.seeds, i, kv_key);
            let range = i * self.per_set..(i + 1) * self.per_set;
            let k = &mut self.k.slice_mut(range.clone());
            let v = &mut self.v.slice_mut(range);
            fill_kv(gpu, &self.shape, seed, k, v, "the reference's inputs")?;
        }
        Ok(())
    }

    fn set_views(&self, i: usize) -> [CudaView<'_, u16>; 2] {
        let range = i * self.per_set..(i + 1) * self.per_set;
        [self.k.slice(range.clone()), self.v.slice(range)]
    }

    /// Host copies of the reference's keys and values (every set, back to back).
    pub fn host_kv(&self, gpu: &Gpu) -> Result<(Vec<u16>, Vec<u16>), GpuError> {
        Ok((
            gpu.read_back(&self.k, || "the reference's keys".into())?,
            gpu.read_back(&self.v, || "the reference's values".into())?,
        ))
    }

    /// Queues the keyed hash of `sets` (a side's inputs) into `side[0]` and of the
    /// reference's copies into `own[0]` (both zeroed by the caller after the replay): equal
    /// words mean the side's K and V held, after the replay, exactly what the reference
    /// computed from.
    pub(crate) fn hash_both(
        &self,
        gpu: &Gpu,
        sets: &[Inputs],
        side: &mut CudaViewMut<'_, u64>,
        own: &mut CudaViewMut<'_, u64>,
    ) -> Result<(), GpuError> {
        if sets.len() != self.seeds.len() || side.is_empty() || own.is_empty() {
            return Err(GpuError::Internal(format!(
                "{} input sets for {} seeds",
                sets.len(),
                self.seeds.len()
            )));
        }
        let salt =
            |i: usize, t: u64| self.key ^ ((i as u64) << 8 | t).wrapping_mul(0x2545_f491_4f6c_dd1d);
        let hash = &gpu.kernels.hash_u16;
        for (i, set) in sets.iter().enumerate() {
            let [rk, rv] = self.set_views(i);
            for (t, (theirs, ours)) in [(s_view(&set.k), rk), (s_view(&set.v), rv)]
                .into_iter()
                .enumerate()
            {
                let key = salt(i, t as u64);
                ffi::launch_hash(&gpu.stream, hash, &theirs, key, side)
                    .during(|| "hashing a side's inputs".into())?;
                ffi::launch_hash(&gpu.stream, hash, &ours, key, own)
                    .during(|| "hashing the reference's inputs".into())?;
            }
        }
        Ok(())
    }
}

fn s_view(buf: &CudaSlice<u16>) -> CudaView<'_, u16> {
    buf.as_view()
}

/// Host copies of a [`LaunchSecrets`] ([`LaunchSecrets::inspect`]).
#[derive(Clone, Debug)]
pub struct LaunchInspection {
    /// Elements of one launch's q.
    pub n: usize,
    /// Every launch's q, back to back.
    pub pool: Vec<u16>,
    pub scales: Vec<f32>,
    /// [launches, ROWS_PER_LAUNCH].
    pub rows: Vec<i32>,
    /// [launches, batch·heads, ROWS_PER_LAUNCH, head_dim].
    pub refs: Vec<f32>,
}

/// What makes every timed launch of a round's graph compute a function no other launch of
/// the run computes: a q of its own (launch i reads slice i of one pool, which is filled
/// again from a new secret key before every sample, so no two launches of a sample, nor
/// launch i in two samples, see the same q) and a softmax scale of its own (0.8–1.25 ×
/// 1/√head_dim, drawn for each launch of the round). K and V stay the memory of the round's
/// input sets: hot cache means the same K/V warm. After every sample the reference of every
/// launch is computed for its own q and scale on [`ROWS_PER_LAUNCH`] secret rows per (batch,
/// head), from the reference's own copies ([`KvRefs`]) and q values regenerated from the key
/// (never read from the pool the kernel could write).
///
/// Cost per sample: one fill of the pool (launches × q), the reference of launches ×
/// batch·heads × 4 rows (a 4/seq_len part of the timed FLOPs, in fp32), all outside the timed
/// region.
pub struct LaunchSecrets {
    pool: CudaSlice<u16>,
    /// Elements of one launch's q (batch·heads·seq_len·head_dim).
    n: usize,
    scales: Vec<f32>,
    d_scales: CudaSlice<f32>,
    rows: CudaSlice<i32>,
    qrows: CudaSlice<f32>,
    refs: CudaSlice<f32>,
    geometry: ffi::LaunchGeometry,
    shape: ShapeParams,
    keys: ChaCha8Rng,
    /// The q key, row key and K/V key of the sample now prepared.
    current: (u64, u64, u64),
}

impl LaunchSecrets {
    /// A pool for `launches` launches of `shape`, filled once, and their scales, drawn (as
    /// every later key) from `rng` (the run's secret).
    pub fn new(
        gpu: &Gpu,
        shape: &ShapeParams,
        launches: u32,
        rng: &mut ChaCha8Rng,
    ) -> Result<LaunchSecrets, GpuError> {
        let n = shape.elements();
        let launches = launches.max(1) as usize;
        let geometry = ffi::LaunchGeometry {
            launches,
            heads: (shape.batch * shape.heads) as usize,
            seq_len: shape.seq_len as usize,
            head_dim: shape.head_dim as usize,
            nrows: ROWS_PER_LAUNCH,
        };
        let too_large = || GpuError::Shape {
            shape: shape.name(),
            why: "the per-launch inputs are too large".into(),
        };
        let total = n.checked_mul(launches).ok_or_else(too_large)?;
        let compact = geometry.compact().ok_or_else(too_large)?;
        let scales: Vec<f32> = (0..launches)
            .map(|_| super::buffers::draw_scale(shape, rng))
            .collect();
        let alloc_f32 = |len: usize| {
            ffi::alloc_zeros::<f32>(&gpu.stream, len)
                .during(|| format!("allocating the per-launch references of {shape}"))
        };
        let mut secrets = LaunchSecrets {
            pool: ffi::alloc_zeros::<u16>(&gpu.stream, total)
                .during(|| format!("allocating the q of {launches} launches of {shape}"))?,
            n,
            d_scales: gpu
                .stream
                .clone_htod(&scales)
                .during(|| format!("uploading the launch scales of {shape}"))?,
            scales,
            rows: ffi::alloc_zeros::<i32>(&gpu.stream, launches * ROWS_PER_LAUNCH)
                .during(|| format!("allocating the compared rows of {shape}"))?,
            qrows: alloc_f32(compact)?,
            refs: alloc_f32(compact)?,
            geometry,
            shape: *shape,
            keys: ChaCha8Rng::from_rng(rng),
            current: (0, 0, 0),
        };
        secrets.refill(gpu)?;
        Ok(secrets)
    }

    /// Launch i's q (a slice of the pool).
    pub(crate) fn q(&self, i: usize) -> CudaView<'_, u16> {
        let i = i % self.geometry.launches;
        self.pool.slice(i * self.n..(i + 1) * self.n)
    }

    /// Launch i's softmax scale.
    pub fn scale(&self, i: usize) -> f32 {
        self.scales[i % self.scales.len()]
    }

    /// Device address of the pool (the report's proof that rounds used fresh memory).
    pub(crate) fn address(&self, gpu: &Gpu) -> u64 {
        let (ptr, _sync) = self.pool.device_ptr(&gpu.stream);
        ptr
    }

    /// The pool, for the hash of the buffers held after the round.
    pub(crate) fn pool(&self) -> CudaView<'_, u16> {
        self.pool.as_view()
    }

    pub fn bytes(&self) -> u64 {
        self.pool.len() as u64 * 2
    }

    /// Host copies of what the pool, the scales and the last computed reference hold (for
    /// the GPU tests: every launch's reference is checked against float64 on the host).
    pub fn inspect(&self, gpu: &Gpu) -> Result<LaunchInspection, GpuError> {
        Ok(LaunchInspection {
            n: self.n,
            pool: gpu.read_back(&self.pool, || "the q pool".into())?,
            scales: self.scales.clone(),
            rows: gpu.read_back(&self.rows, || "the compared rows".into())?,
            refs: gpu.read_back(&self.refs, || "the per-launch references".into())?,
        })
    }

    /// The K/V key of the sample now prepared: the values of the round's K and V for it
    /// ([`refill_inputs`], [`KvRefs::fill_for`]); never 0 (the round's first fill).
    pub fn kv_key(&self) -> u64 {
        self.current.2
    }

    /// Queues a new q for every launch: new secret keys (q, rows, K/V), the pool filled from
    /// them.
    pub fn refill(&mut self, gpu: &Gpu) -> Result<(), GpuError> {
        self.current = (
            self.keys.random(),
            self.keys.random(),
            self.keys.random::<u64>() | 1,
        );
        let shape = self.shape;
        ffi::launch_fill_q_pool(
            &gpu.stream,
            gpu.kernels.fill_q_pool(shape.dtype),
            &mut self.pool,
            self.n,
            self.geometry.launches,
            self.current.0,
            super::buffers::Tensor::Q.layout(&shape),
        )
        .during(|| format!("filling the q of every launch of {shape}"))
    }

    /// Queues the reference of every launch for the q now in the pool (after the sample
    /// that read it): its compared rows, their q values regenerated from the key, and the
    /// reference kernel on them with each launch's scale and `kv`'s own keys and values
    /// (launch i on set i mod sets). The scales are uploaded from host memory first: the
    /// device copy is memory the timed kernel could reach, so it is written after it ran.
    pub fn reference(&mut self, gpu: &Gpu, kv: &KvRefs) -> Result<(), GpuError> {
        let shape = self.shape;
        let (key, row_key, _) = self.current;
        if self.d_scales.len() != self.scales.len() {
            return Err(GpuError::Internal(format!(
                "{} launch scales for {} on the device",
                self.scales.len(),
                self.d_scales.len()
            )));
        }
        gpu.stream
            .memcpy_htod(&self.scales, &mut self.d_scales)
            .during(|| format!("uploading the launch scales of {shape}"))?;
        ffi::launch_launch_rows(
            &gpu.stream,
            gpu.kernels.launch_rows(shape.dtype),
            self.geometry,
            key,
            row_key,
            &mut self.rows,
            &mut self.qrows,
        )
        .during(|| format!("drawing the compared rows of {shape}"))?;
        let reference = gpu.kernels.reference_launches(shape.dtype)?;
        ffi::launch_reference_launches(
            &gpu.stream,
            &reference.func,
            reference.threads,
            self.geometry,
            ffi::LaunchReference {
                qrows: &self.qrows,
                k: &kv.k,
                v: &kv.v,
                sets: kv.seeds.len(),
                scales: &self.d_scales,
                rows: &self.rows,
                causal: shape.causal,
                out: &mut self.refs,
            },
        )
        .during(|| format!("launching {} on shape {shape}", reference.name))
    }
}

/// Words per slot result on the device (CgCheck in kernels/util.cu).
const CHECK_WORDS: usize = 5;

/// Where the checks of one replay write their words, in one device buffer that is zeroed
/// right after the replay (nothing a kernel left there counts) and copied to host memory
/// right after the checks (nothing a later replay writes there counts): [`CHECK_WORDS`] per
/// launch's slot, then one word each for the gap words written, the constant bytes changed,
/// the side's K/V hash, the reference's K/V hash, the round's set-q hash and the spacer
/// words written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CheckLayout {
    pub launches: usize,
}

impl CheckLayout {
    const EXTRA: usize = 6;

    /// Words in all.
    pub(crate) fn len(self) -> usize {
        self.launches * CHECK_WORDS + Self::EXTRA
    }

    pub(crate) fn slots(self) -> std::ops::Range<usize> {
        0..self.launches * CHECK_WORDS
    }

    fn word(self, i: usize) -> std::ops::Range<usize> {
        let at = self.launches * CHECK_WORDS + i;
        at..at + 1
    }

    pub(crate) fn gaps(self) -> std::ops::Range<usize> {
        self.word(0)
    }
    pub(crate) fn constants(self) -> std::ops::Range<usize> {
        self.word(1)
    }
    pub(crate) fn kv_side(self) -> std::ops::Range<usize> {
        self.word(2)
    }
    pub(crate) fn kv_reference(self) -> std::ops::Range<usize> {
        self.word(3)
    }
    pub(crate) fn set_q(self) -> std::ops::Range<usize> {
        self.word(4)
    }
    pub(crate) fn spacer(self) -> std::ops::Range<usize> {
        self.word(5)
    }
}

/// The output slots of one side's round: one per launch of its sample graph.
pub(crate) struct OutputSlots {
    region: CudaSlice<f32>,
    /// Element offset of each launch's slot in `region`, by launch index.
    slot_offsets: Vec<u64>,
    ref_offsets: Vec<u64>,
    /// The device copies of the tables above and of the gaps': written from the host copies
    /// before every check (the timed kernel could have rewritten them).
    d_slot_offsets: CudaSlice<u64>,
    d_ref_offsets: CudaSlice<u64>,
    /// The poisoned gaps around the slots: (offset, length) in elements.
    gaps: Vec<(u64, u64)>,
    gap_offsets: Vec<u64>,
    gap_lens: Vec<u64>,
    d_gap_offsets: CudaSlice<u64>,
    d_gap_lens: CudaSlice<u64>,
    elements: usize,
    seq_len: usize,
    head_dim: usize,
    /// This round's poison pattern.
    poison: u32,
}

/// The most device memory one side's output slots may take: launches per sample are capped
/// so that the slots fit (a shorter sample, never a slot shared by two launches).
pub(crate) fn slot_budget_bytes(gpu: &Gpu) -> Result<u64, GpuError> {
    let (free, _) = gpu
        .ctx
        .mem_get_info()
        .during(|| "reading free device memory".into())?;
    Ok((free as u64 / 8).min(2 << 30))
}

/// Uploads `host` into `dev` (same length), queued on the stream.
fn upload_into<T: cudarc::driver::DeviceRepr>(
    gpu: &Gpu,
    host: &[T],
    dev: &mut CudaSlice<T>,
    what: &str,
) -> Result<(), GpuError> {
    if host.len() != dev.len() {
        return Err(GpuError::Internal(format!(
            "{what}: {} host entries for {} on the device",
            host.len(),
            dev.len()
        )));
    }
    gpu.stream
        .memcpy_htod(host, dev)
        .during(|| format!("uploading {what}"))
}

impl OutputSlots {
    /// Slots for `launches` launches of `shape`, each compared after every replay with its
    /// own reference rows ([`LaunchSecrets`]: launch i's at i · batch·heads·
    /// [`ROWS_PER_LAUNCH`]·head_dim), placed by `rng`.
    pub fn new(
        gpu: &Gpu,
        shape: &ShapeParams,
        launches: u32,
        rng: &mut ChaCha8Rng,
    ) -> Result<OutputSlots, GpuError> {
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
        let total = usize::try_from(at).map_err(|_| GpuError::Shape {
            shape: shape.name(),
            why: "the output slots are too large".into(),
        })?;
        let per_launch =
            (shape.batch * shape.heads) as u64 * ROWS_PER_LAUNCH as u64 * u64::from(shape.head_dim);
        let ref_offsets: Vec<u64> = (0..launches as u64).map(|i| i * per_launch).collect();
        let upload = |v: &[u64]| {
            gpu.stream
                .clone_htod(v)
                .during(|| format!("uploading the output slot table of {shape}"))
        };
        let poison = poison_pattern(rng);
        let region = ffi::alloc_filled(&gpu.stream, &gpu.kernels.fill_u32, total, poison)
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
            region,
            slot_offsets,
            ref_offsets,
            gaps,
            gap_offsets,
            gap_lens,
            elements: n as usize,
            poison,
        })
    }

    pub(crate) fn launches(&self) -> usize {
        self.slot_offsets.len()
    }

    pub fn bytes(&self) -> u64 {
        self.region.len() as u64 * 4
    }

    /// The region as 32-bit words (its hash, held after the round).
    pub(crate) fn region(&self) -> CudaView<'_, f32> {
        self.region.as_view()
    }

    /// The output of launch `i` (its slot).
    pub(crate) fn slot(&mut self, i: usize) -> cudarc::driver::CudaViewMut<'_, f32> {
        let start = self.slot_offsets[i % self.slot_offsets.len()] as usize;
        self.region.slice_mut(start..start + self.elements)
    }

    /// Poisons every slot and gap again (queued on the stream, before a sample).
    pub(crate) fn poison(&mut self, gpu: &Gpu) -> Result<(), GpuError> {
        ffi::launch_fill_u32(
            &gpu.stream,
            &gpu.kernels.fill_u32,
            &mut self.region,
            self.poison,
        )
        .during(|| "poisoning the output slots".into())
    }

    /// Queues the check of every slot against its launch's reference in `secrets` (which
    /// must have computed this replay's, [`LaunchSecrets::reference`]) and of every gap, into
    /// `words` (laid out by `layout`, zeroed after the replay); then poisons the reference
    /// rows, so that no later launch can find them. Every table the checks read is uploaded
    /// from host memory first. `v_scales`: s_V of every (input set, batch·head) slice of this
    /// replay ([`KvRefs::v_scales`]).
    pub fn check(
        &mut self,
        gpu: &Gpu,
        secrets: &mut LaunchSecrets,
        v_scales: &[f32],
        words: &mut CudaSlice<u64>,
        layout: CheckLayout,
    ) -> Result<(), GpuError> {
        let slots = self.launches();
        if secrets.geometry.launches != slots
            || layout.launches != slots
            || words.len() != layout.len()
        {
            return Err(GpuError::Internal(format!(
                "{slots} output slots, {} launches' references and {} launches' check words",
                secrets.geometry.launches, layout.launches
            )));
        }
        let heads = secrets.geometry.heads;
        if heads == 0 || v_scales.is_empty() || !v_scales.len().is_multiple_of(heads) {
            return Err(GpuError::Internal(format!(
                "{} V scales for {heads} slices per set",
                v_scales.len()
            )));
        }
        upload_into(
            gpu,
            &self.slot_offsets,
            &mut self.d_slot_offsets,
            "the slot table",
        )?;
        upload_into(
            gpu,
            &self.ref_offsets,
            &mut self.d_ref_offsets,
            "the slot table",
        )?;
        upload_into(
            gpu,
            &self.gap_offsets,
            &mut self.d_gap_offsets,
            "the gap table",
        )?;
        upload_into(gpu, &self.gap_lens, &mut self.d_gap_lens, "the gap table")?;
        let d_scales = gpu
            .stream
            .clone_htod(v_scales)
            .during(|| "uploading the V scales".into())?;
        let table = ffi::SlotTable {
            region: &self.region,
            slot_offsets: &self.d_slot_offsets,
            ref_offsets: &self.d_ref_offsets,
            refs: &secrets.refs,
            rows: &secrets.rows,
            nrows: ROWS_PER_LAUNCH,
            seq_len: self.seq_len,
            head_dim: self.head_dim,
            elements: self.elements,
            host_slot_offsets: &self.slot_offsets,
            host_ref_offsets: &self.ref_offsets,
            v_scales: &d_scales,
            sets: v_scales.len() / heads,
        };
        ffi::launch_check_outputs(
            &gpu.stream,
            &gpu.kernels.check_outputs,
            &table,
            self.poison,
            &mut words.slice_mut(layout.slots()),
        )
        .during(|| "checking the timed outputs".into())?;
        ffi::launch_fill_u32(
            &gpu.stream,
            &gpu.kernels.fill_u32,
            &mut secrets.refs,
            self.poison,
        )
        .during(|| "poisoning the reference rows".into())?;
        ffi::launch_check_fill(
            &gpu.stream,
            &gpu.kernels.check_fill,
            &self.region,
            &self.d_gap_offsets,
            &self.d_gap_lens,
            &self.gaps,
            self.poison,
            &mut words.slice_mut(layout.gaps()),
        )
        .during(|| "checking the gaps between the timed outputs".into())
    }
}

/// One launch's check words (`CgCheck`) as a parity figure. The largest error is read at its
/// full 64-bit width: a word above 32 bits was never written by `check_outputs` (which
/// stores a float's bits), so it counts as a failed launch, never as a small error.
fn launch_parity(chunk: &[u64], tolerance: Tolerance) -> Parity {
    let diff2 = f64::from_bits(chunk[3]);
    let ref2 = f64::from_bits(chunk[4]);
    let max_abs = match u32::try_from(chunk[2]) {
        Ok(bits) => f64::from(f32::from_bits(bits)),
        Err(_) => f64::INFINITY,
    };
    Parity {
        max_abs,
        rel_l2: if ref2 > 0.0 {
            (diff2 / ref2).sqrt()
        } else {
            diff2.sqrt()
        },
        // The rows a timed launch checks judge copying and skipped work, not precision:
        // the centered error needs whole slices (parity, every shape and probe).
        centered: None,
        nan_or_inf: chunk[1],
        unwritten: chunk[0],
        tolerance,
        seed: 0,
    }
}

/// What the checks of the replays of a round found, summed over the replays read so far.
#[derive(Clone, Debug, Default)]
pub(crate) struct RoundFindings {
    pub slots: SlotOutcome,
    /// Replays whose side's K/V did not hash as the reference's copies did.
    pub inputs_changed: u64,
    /// Bytes of the timed kernel's constant data found changed.
    pub constant_bytes: u64,
    /// Replays after which the round's own input sets' q no longer hashed as when filled.
    pub set_q_changed: u64,
    /// Words of the address spacer found non-zero.
    pub spacer_words: u64,
    /// Replays read.
    pub replays: u64,
}

impl RoundFindings {
    /// Adds one replay's words (`layout`), checked against `tolerance`; `set_q_hash`: what
    /// the round's set-q hashed to when it was filled.
    pub(crate) fn add(
        &mut self,
        words: &[u64],
        layout: CheckLayout,
        tolerance: Tolerance,
        set_q_hash: u64,
    ) -> Result<(), GpuError> {
        if words.len() != layout.len() {
            return Err(GpuError::Internal(format!(
                "{} check words for a layout of {}",
                words.len(),
                layout.len()
            )));
        }
        let one = |r: std::ops::Range<usize>| words[r.start];
        for chunk in words[layout.slots()].chunks_exact(CHECK_WORDS) {
            self.slots.add(launch_parity(chunk, tolerance));
        }
        self.slots.gap_words_written = self
            .slots
            .gap_words_written
            .saturating_add(one(layout.gaps()));
        self.constant_bytes = self.constant_bytes.saturating_add(one(layout.constants()));
        if one(layout.kv_side()) != one(layout.kv_reference()) {
            self.inputs_changed += 1;
        }
        if one(layout.set_q()) != set_q_hash {
            self.set_q_changed += 1;
        }
        self.spacer_words = self.spacer_words.saturating_add(one(layout.spacer()));
        self.replays += 1;
        Ok(())
    }

    /// One sentence on what failed, naming the side and kernel, or `None` when every checked
    /// launch matched its reference and nothing else was written.
    pub(crate) fn failure(&self, side: &str, kernel: &str) -> Option<String> {
        if let Some(why) = self.slots.failure(side, kernel) {
            return Some(why);
        }
        if self.inputs_changed > 0 {
            return Some(format!(
                "the {side} kernel {kernel} changed its inputs (k or v) while it was timed"
            ));
        }
        if self.constant_bytes > 0 {
            return Some(format!(
                "the {side} kernel {kernel} wrote {} bytes of its module's __constant__ data while it was timed: state that survives a launch is refused",
                self.constant_bytes
            ));
        }
        if self.spacer_words > 0 {
            return Some(format!(
                "the {side} kernel {kernel} wrote to memory outside its output (the address spacer below its buffers) while it was timed"
            ));
        }
        if self.set_q_changed > 0 {
            return Some(format!(
                "the {side} kernel {kernel} wrote to its round's own input buffer (the warm-up's q) while it was timed"
            ));
        }
        None
    }
}

/// What the output checks of one round found.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlotOutcome {
    pub worst: Option<Parity>,
    pub failed_launches: u64,
    pub checked_launches: u64,
    pub gap_words_written: u64,
}

impl SlotOutcome {
    /// Counts one checked launch, keeping the worst (a failure before a pass, then the most
    /// unwritten and non-finite elements, then the largest error).
    fn add(&mut self, p: Parity) {
        self.checked_launches += 1;
        if !p.passed() {
            self.failed_launches += 1;
        }
        let worse = match &self.worst {
            None => true,
            Some(w) => {
                (w.passed() && !p.passed())
                    || (w.passed() == p.passed()
                        && (p.unwritten + p.nan_or_inf, p.max_abs)
                            > (w.unwritten + w.nan_or_inf, w.max_abs))
            }
        };
        if worse {
            self.worst = Some(p);
        }
    }

    /// One sentence on what failed, naming the side and kernel, or `None` when every timed
    /// launch matched the reference and nothing was written outside the slots.
    pub(crate) fn failure(&self, side: &str, kernel: &str) -> Option<String> {
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
            "{} of the {side} kernel {kernel}'s {} timed launches did not reproduce the reference (worst: {} unwritten, {} NaN/Inf, max abs/s_V {:.2e}, rel L2 {:.2e}): the timed work is not the checked work",
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

    fn tol() -> Tolerance {
        Tolerance {
            max_abs: 1e-2,
            rel_l2: 1e-3,
            centered: None,
        }
    }

    /// One replay's words for `launches` launches that all matched (error 1e-3 of s_V),
    /// with the given K/V and set-q hashes.
    fn clean_words(layout: CheckLayout, kv: (u64, u64), set_q: u64) -> Vec<u64> {
        let mut w = vec![0u64; layout.len()];
        for chunk in w[layout.slots()].chunks_exact_mut(CHECK_WORDS) {
            chunk[2] = u64::from(1e-3f32.to_bits());
            chunk[3] = 1e-8f64.to_bits();
            chunk[4] = 1.0f64.to_bits();
        }
        w[layout.kv_side().start] = kv.0;
        w[layout.kv_reference().start] = kv.1;
        w[layout.set_q().start] = set_q;
        w
    }

    #[test]
    fn a_clean_replay_passes_and_each_finding_fails_it() {
        let layout = CheckLayout { launches: 3 };
        let mut f = RoundFindings::default();
        f.add(&clean_words(layout, (7, 7), 9), layout, tol(), 9)
            .unwrap();
        assert_eq!(f.failure("candidate", "k"), None);
        assert_eq!((f.replays, f.slots.checked_launches), (1, 3));

        // The side's K/V hashed apart from the reference's copies.
        let mut f = RoundFindings::default();
        f.add(&clean_words(layout, (7, 8), 9), layout, tol(), 9)
            .unwrap();
        assert!(
            f.failure("candidate", "k")
                .unwrap()
                .contains("changed its inputs")
        );
        // The round's own q written.
        let mut f = RoundFindings::default();
        f.add(&clean_words(layout, (7, 7), 10), layout, tol(), 9)
            .unwrap();
        assert!(f.failure("candidate", "k").unwrap().contains("warm-up's q"));
        // Constant bytes, spacer words, gap words.
        for (word, what) in [
            (layout.constants(), "__constant__"),
            (layout.spacer(), "spacer"),
            (layout.gaps(), "outside its output"),
        ] {
            let mut w = clean_words(layout, (7, 7), 9);
            w[word.start] = 3;
            let mut f = RoundFindings::default();
            f.add(&w, layout, tol(), 9).unwrap();
            assert!(
                f.failure("candidate", "k").unwrap().contains(what),
                "{what}"
            );
        }
        // Words of another layout are refused, never read past.
        let mut f = RoundFindings::default();
        assert!(f.add(&[0u64; 4], layout, tol(), 9).is_err());
    }

    #[test]
    fn the_largest_error_is_read_at_its_full_width() {
        // A pre-set high word (a kernel that wrote the accumulator before the check) must not
        // read as a small error: the word is not a float's bits, so the launch fails.
        let layout = CheckLayout { launches: 2 };
        let mut w = clean_words(layout, (1, 1), 2);
        w[2] = 1u64 << 32;
        let mut f = RoundFindings::default();
        f.add(&w, layout, tol(), 2).unwrap();
        assert_eq!(f.slots.failed_launches, 1);
        assert!(
            f.failure("candidate", "k")
                .unwrap()
                .contains("1 of the candidate")
        );
        // A NaN sum fails too (NaN compares false with every bound).
        let mut w = clean_words(layout, (1, 1), 2);
        w[CHECK_WORDS + 3] = f64::NAN.to_bits();
        let mut f = RoundFindings::default();
        f.add(&w, layout, tol(), 2).unwrap();
        assert_eq!(f.slots.failed_launches, 1);
    }

    #[test]
    fn run_keys_differ_between_runs() {
        assert_ne!(RunKey::from_os().0, RunKey::from_os().0);
    }
}
