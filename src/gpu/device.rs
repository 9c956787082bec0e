//! The GPU: context, stream, the compiled kernels (module cache) and device facts.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig};
use cudarc::nvrtc::Ptx;

use super::error::{DriverContext, GpuError};
use crate::config::{Dtype, ShapeParams};
use crate::ffi;
use crate::kernel::compile::{Arch, compile, compile_module};
use crate::kernel::ptxas::StaticResources;
use crate::kernel::{KernelDir, KernelSource};
use crate::resources::{KernelResources, ResourceSide};

pub use super::env::DeviceInfo;

/// A kernel function with its launch contract (`NAME_launch` in the source).
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    pub func: CudaFunction,
    pub rows_per_block: u32,
    pub threads: u32,
    pub smem_bytes: u32,
    /// Takes the q, k, v TMA tensor maps after its eight arguments (`NAME_tma`,
    /// kernels/README.md).
    pub tma: bool,
    /// `NAME_fill` = {CTAs per SM, most tiles per CTA}: the grid is sized so that one wave
    /// of CTAs covers it, each doing several tiles of rows_per_block rows ([`grid_x`]).
    pub fill: Option<(u32, u32)>,
    /// `NAME_fill_or_one` = {1}: the host also weighs one tile a CTA against the fill grid
    /// and launches it where its busiest SM costs less ([`launch_grid_x`]).
    pub fill_or_one: bool,
    /// `NAME_tiles_at_once`: tiles of rows_per_block rows one CTA computes at the same time
    /// (1 where the source does not say).
    pub tiles_at_once: u32,
    /// CTAs of it an SM holds at once, as the driver computes it for its block and shared
    /// memory (cuOccupancyMaxActiveBlocksPerMultiprocessor), at least 1.
    pub ctas_per_sm: u32,
    /// SMs of the device (for `fill`).
    pub sm_count: u32,
    /// The `__constant__` data of its module, verified after the warm-up and after every sample
    /// (none for the harness's kernels).
    pub constants: Option<Arc<ConstantGuard>>,
}

/// The `__constant__` data of a timed kernel's module, as loaded: a kernel can write it
/// through a generic address (PTX `cvta.const`, or an address it found) and a later launch
/// would read what an earlier one left there. So after the warm-up and after every replay
/// of a round, `check_bytes` (kernels/util.cu) compares every byte of every `__constant__`
/// symbol with this image and counts the ones that differ: a round with any is an
/// integrity failure (the shape fails parity), and so is every later round of that module,
/// whose data stays changed.
///
/// The image and the addresses are kept in host memory (read back once, at load, before any
/// kernel of the module ran) and uploaded again for every check, after the launches it
/// checks: a copy on the device could be rewritten by the kernel it guards (issue 36).
pub struct ConstantGuard {
    /// The symbols, in order (for messages).
    pub symbols: Vec<String>,
    host_addrs: Vec<u64>,
    host_offsets: Vec<u64>,
    host_image: Vec<u8>,
}

impl std::fmt::Debug for ConstantGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConstantGuard")
            .field("symbols", &self.symbols)
            .field("bytes", &self.host_offsets.last())
            .finish()
    }
}

impl ConstantGuard {
    /// Takes the image of every `__constant__` section of `cubin` (loaded as `module`) as it
    /// is on the device now, before any of its kernels ran: whole sections, padding between
    /// symbols included, each found from one of its symbols (`cubin::constant_sections`),
    /// copied on the device by `copy` (`copy_bytes`). `None` where the module has none.
    fn new(
        module: &Arc<CudaModule>,
        stream: &Arc<CudaStream>,
        copy: &CudaFunction,
        cubin: &[u8],
        src: &KernelSource,
    ) -> Result<Option<ConstantGuard>, GpuError> {
        use cudarc::driver::DevicePtr;
        let sections = crate::kernel::cubin::constant_sections(cubin).map_err(|why| {
            GpuError::Refused(format!(
                "{}: its compiled module cannot be checked, so it is refused: {why}",
                src.path.display()
            ))
        })?;
        if sections.is_empty() {
            return Ok(None);
        }
        let mut addrs = Vec::with_capacity(sections.len());
        let mut host_offsets = vec![0u64];
        for section in &sections {
            let global = module
                .get_global(&section.symbol, stream)
                .during(|| format!("finding {} in {}", section.symbol, src.path.display()))?;
            let (ptr, _record) = global.device_ptr(stream);
            let base = ptr.checked_sub(section.symbol_offset).ok_or_else(|| {
                GpuError::Kernel(format!(
                    "{}: the driver placed {} below its section's start",
                    src.path.display(),
                    section.symbol
                ))
            })?;
            addrs.push(base);
            let end = host_offsets.last().copied().unwrap_or(0) + section.size;
            host_offsets.push(end);
        }
        let upload = |what: &str| format!("uploading the {what} of {}", src.path.display());
        let d_addrs = stream
            .clone_htod(&addrs)
            .during(|| upload("constant addresses"))?;
        let d_offsets = stream
            .clone_htod(&host_offsets)
            .during(|| upload("constant offsets"))?;
        let total = host_offsets.last().copied().unwrap_or(0) as usize;
        let mut image =
            ffi::alloc_zeros::<u8>(stream, total).during(|| upload("constant image"))?;
        ffi::launch_copy_bytes(
            stream,
            copy,
            &d_addrs,
            &d_offsets,
            &host_offsets,
            &mut image,
        )
        .during(|| format!("copying the constant data of {}", src.path.display()))?;
        // The snapshot leaves the device now, before any kernel of the module has run.
        let host_image = stream
            .clone_dtoh(&image)
            .during(|| format!("reading the constant data of {}", src.path.display()))?;
        stream
            .synchronize()
            .during(|| format!("reading the constant data of {}", src.path.display()))?;
        Ok(Some(ConstantGuard {
            symbols: sections.into_iter().map(|s| s.symbol).collect(),
            host_addrs: addrs,
            host_offsets,
            host_image,
        }))
    }

    /// Queues the comparison of every byte (differing bytes counted into `mismatches[0]`),
    /// with the image, the addresses and the offsets uploaded from host memory first.
    pub(crate) fn check(
        &self,
        gpu: &Gpu,
        mismatches: &mut cudarc::driver::CudaViewMut<'_, u64>,
    ) -> Result<(), GpuError> {
        let what = || "uploading the constant-data check".to_string();
        let addrs = gpu.stream.clone_htod(&self.host_addrs).during(what)?;
        let offsets = gpu.stream.clone_htod(&self.host_offsets).during(what)?;
        let image = gpu.stream.clone_htod(&self.host_image).during(what)?;
        ffi::launch_check_bytes(
            &gpu.stream,
            &gpu.kernels.check_bytes,
            &addrs,
            &offsets,
            &self.host_offsets,
            &image,
            mismatches,
        )
        .during(|| "checking the timed kernel's constant memory".into())
    }
}

impl Kernel {
    /// What [`pick_form`] weighs of it.
    pub(crate) fn form_geometry(&self) -> FormGeometry {
        FormGeometry {
            rows: self.rows_per_block,
            fill: self.fill,
            fill_or_one: self.fill_or_one,
            tiles_at_once: self.tiles_at_once,
            ctas_per_sm: self.ctas_per_sm,
        }
    }

    /// grid = (x, batch·heads) with x from [`launch_grid_x`], per kernels/README.md.
    pub fn config(&self, shape: &ShapeParams) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (
                launch_grid_x(shape, self.form_geometry(), self.sm_count),
                shape.batch * shape.heads,
                1,
            ),
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: self.smem_bytes,
        }
    }
}

/// grid.x of a launch (kernels/README.md, "Launch contract"): the tiles of rows_per_block
/// rows, ⌈seq_len / rows⌉; for a kernel with `NAME_fill` = {per_sm, max}, k tiles per CTA
/// and ⌈tiles / k⌉ CTAs, with k = ⌈tiles · batch · heads / (per_sm · SMs)⌉ clamped to
/// 1..=max: as few CTAs as one wave at per_sm CTAs per SM, each doing at most max tiles. The
/// kernel finds k again as ⌈tiles / gridDim.x⌉.
pub(crate) fn grid_x(
    shape: &ShapeParams,
    rows: u32,
    fill: Option<(u32, u32)>,
    sm_count: u32,
) -> u32 {
    let tiles = shape.seq_len.div_ceil(rows.max(1));
    let Some((per_sm, max)) = fill else {
        return tiles;
    };
    let all = u64::from(tiles)
        .saturating_mul(u64::from(shape.batch))
        .saturating_mul(u64::from(shape.heads));
    let slots = (u64::from(per_sm) * u64::from(sm_count)).max(1);
    let k = all.div_ceil(slots).clamp(1, u64::from(max.max(1)));
    // k ≤ max ≤ u32::MAX, so the division stays within u32
    tiles.div_ceil(k as u32)
}

/// grid.x as the host launches `form` (kernels/README.md, "Filling the GPU"): [`grid_x`],
/// except for a non-causal launch whose one-wave grid overfills the wave. [`grid_x`] rounds
/// each (batch, head)'s CTAs up, so where batch · heads does not divide the wave's slots
/// (per_sm · SMs) the grid can hold more CTAs than the slots, and the busiest SMs then run a
/// second round of CTAs alone: [6,16,512] on the sm_90a d64 even split is 192 CTAs of four
/// units for 132 SMs, 28.4 µs on an H200 where [8,16,512] takes 23.8 (docs/KERNEL_LOG.md,
/// eleventh session). Then the grid of ⌊slots / (batch · heads)⌋ CTAs per (batch, head),
/// each taking more tiles (at most max), is launched instead when the busiest SM's cost
/// ([`busiest_sm_cost`], a pass costing the form's own rows more) says it is cheaper; a tie
/// keeps [`grid_x`]. Causal launches keep [`grid_x`]: the cost counts rows, not the causal
/// triangle's uneven tiles, which the kernels deal over the CTAs [`grid_x`] gives.
///
/// Last, a form that declares `NAME_fill_or_one` = {1} gets one tile a CTA (⌈seq_len / rows⌉
/// CTAs a head) instead of that grid where, non-causal, one tile a CTA costs its busiest SM
/// strictly less: the per-head rounding of a fill grid on a GPU whose wave holds fewer CTAs
/// than batch · heads · ⌈tiles / max⌉ leaves its busiest SM a round of several tiles more
/// (the L4 path's d64 NAME on an L4's 58 SMs: [8,16,512] at two tiles a CTA, six tiles in
/// a row where one a CTA runs five), while on 132 SMs the two tie on the grids where the
/// fill gains (docs/KERNEL_LOG.md, 2026-12-07). Only where the form asks: as a rule for
/// every fill form it would move thousands of the sm_90a forms' grids that nothing has
/// timed (same entry). O(1).
pub(crate) fn launch_grid_x(shape: &ShapeParams, form: FormGeometry, sm_count: u32) -> u32 {
    let x = fill_grid_x(shape, form, sm_count);
    if !form.fill_or_one || form.fill.is_none() || shape.causal {
        return x;
    }
    let one = shape.seq_len.div_ceil(form.rows.max(1));
    let pass_rows = u64::from(form.rows.max(1));
    let cost = |x| cost_of_grid(shape, form, x, pass_rows, sm_count);
    if one != x && cost(one) < cost(x) {
        one
    } else {
        x
    }
}

/// [`launch_grid_x`] before its last step (`NAME_fill_or_one`). O(1).
fn fill_grid_x(shape: &ShapeParams, form: FormGeometry, sm_count: u32) -> u32 {
    let x = grid_x(shape, form.rows, form.fill, sm_count);
    let Some((per_sm, max)) = form.fill else {
        return x;
    };
    let heads = u64::from(shape.batch) * u64::from(shape.heads);
    let slots = u64::from(per_sm) * u64::from(sm_count);
    if shape.causal || heads == 0 || u64::from(x).saturating_mul(heads) <= slots {
        return x;
    }
    let Ok(fewer) = u32::try_from(slots / heads) else {
        return x;
    };
    if fewer == 0 {
        return x;
    }
    let tiles = shape.seq_len.div_ceil(form.rows.max(1));
    let k = tiles.div_ceil(fewer);
    if k > max {
        return x;
    }
    let capped = tiles.div_ceil(k.max(1));
    let pass_rows = u64::from(form.rows.max(1));
    let cost = |x| cost_of_grid(shape, form, x, pass_rows, sm_count);
    if cost(capped) < cost(x) { capped } else { x }
}

/// The attention kernels of one `attention.cu` (one side of an A/B run).
pub struct AttentionSet {
    kernels: HashMap<(Dtype, u32), Kernel>,
    /// The optional small-grid variants (`NAME_small`), by the same key.
    small: HashMap<(Dtype, u32), Kernel>,
    /// The optional long-sequence variants (`NAME_long`) with the shortest seq_len they take
    /// (`NAME_long_from`), by the same key.
    long: HashMap<(Dtype, u32), (Kernel, u32)>,
    /// The optional long-sequence variants for non-causal launches only
    /// (`NAME_long_noncausal`, from `NAME_long_noncausal_from`, up to the optional
    /// `NAME_long_noncausal_to`), by the same key.
    long_noncausal: HashMap<(Dtype, u32), (Kernel, SeqLens)>,
    /// The optional short-sequence variants for non-causal launches only
    /// (`NAME_short_noncausal`, up to `NAME_short_noncausal_to`), by the same key.
    short_noncausal: HashMap<(Dtype, u32), (Kernel, u32)>,
    /// The optional form for causal launches on NAME's tile, its units dealt by cost
    /// (`NAME_causal`), by the same key.
    causal: HashMap<(Dtype, u32), Kernel>,
    /// SMs of the device: a grid of fewer CTAs than this launches `NAME_small`, and the
    /// busiest-SM costs of [`pick_form`] are counted on it.
    sm_count: u32,
    /// SHA-256 of the `attention.cu` they came from.
    pub source_hash: String,
    /// What the module records of each entry, or why it could not be read.
    resources: Result<Vec<StaticResources>, String>,
    _module: Arc<CudaModule>,
}

/// Which of a kernel's forms runs a shape (kernels/README.md, "Small grids, long sequences").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    Main,
    Small,
    Long,
    LongNonCausal,
    ShortNonCausal,
    Causal,
}

/// One form as the host sizes and weighs its launch: `NAME_launch`'s rows_per_block,
/// `NAME_fill`, `NAME_tiles_at_once` and the driver's CTAs per SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FormGeometry {
    pub rows: u32,
    pub fill: Option<(u32, u32)>,
    pub fill_or_one: bool,
    pub tiles_at_once: u32,
    pub ctas_per_sm: u32,
}

/// The seq_lens a `NAME_long_noncausal` takes, both ends included: from its
/// `NAME_long_noncausal_from` up to its optional `NAME_long_noncausal_to` (`u32::MAX` where it
/// has none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SeqLens {
    pub from: u32,
    pub to: u32,
}

impl SeqLens {
    /// From `from` on, no end.
    #[cfg(test)]
    pub(crate) fn from(from: u32) -> SeqLens {
        SeqLens { from, to: u32::MAX }
    }

    pub(crate) fn contains(self, seq_len: u32) -> bool {
        (self.from..=self.to).contains(&seq_len)
    }
}

/// The forms a source has for one (dtype, head_dim): NAME always, the others optional, each
/// long form with the shortest seq_len it takes (`NAME_long_from`; `NAME_long_noncausal_from`,
/// with an optional longest, [`SeqLens`]), the short one with the longest
/// (`NAME_short_noncausal_to`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Forms {
    pub main: FormGeometry,
    pub small: Option<FormGeometry>,
    pub long: Option<(FormGeometry, u32)>,
    pub long_noncausal: Option<(FormGeometry, SeqLens)>,
    pub short_noncausal: Option<(FormGeometry, u32)>,
    pub causal: Option<FormGeometry>,
}

impl Forms {
    /// The geometry of `form` (NAME's where the source lacks that form).
    pub(crate) fn geometry(&self, form: Form) -> FormGeometry {
        let optional = match form {
            Form::Main => None,
            Form::Small => self.small,
            Form::Long => self.long.map(|(g, _)| g),
            Form::LongNonCausal => self.long_noncausal.map(|(g, _)| g),
            Form::ShortNonCausal => self.short_noncausal.map(|(g, _)| g),
            Form::Causal => self.causal,
        };
        optional.unwrap_or(self.main)
    }
}

/// What a pass over the keys of `NAME_short_noncausal` costs beyond its rows, in NAME's
/// rows_per_block: 3/2, where every other form's pass costs one. Its steps are 64 keys
/// without INTRA (NAME's are 128 keys, S_j issued with P_{j-1} V_{j-1}), so a pass over the
/// same keys is longer; fitted on the 26 non-causal d64 shapes measured on an H200 with it
/// as NAME (docs/KERNEL_LOG.md, 2026-12-04, eighteenth session), where 1 would have sent
/// [8,16,512] to it, 7.0% slower than the even split, and 2 would have kept [4,16,512] off it
/// (2.7% faster). And where its busiest SM runs a second round that is not full (more CTAs
/// than it holds at once, not a multiple), one such pass more: the last CTAs of a grid run
/// their 64-key steps with too few others on the SM to hide each one's latency. Without it
/// [5,16,512] (a full round and one lone CTA: 512 rows against NAME's 576) went to it and
/// was 1.5% slower; with it, [6,16,512] and [10,16,256] still take it (11.8% and 22.2%
/// faster, their second rounds of two and one CTAs) and [12,16,256] does not (14.2% faster
/// with it: a win missed, not a loss).
const SHORT_PASS: (u64, u64) = (3, 2);

/// Whether the busiest SM under `form` on its launched grid runs more CTAs than it holds at
/// once and not a whole number of rounds of them (a last round not full). O(1).
fn partial_second_round(shape: &ShapeParams, form: FormGeometry, sm_count: u32) -> bool {
    let c = ctas_on_busiest_sm(shape, launch_grid_x(shape, form, sm_count), sm_count);
    let p = u64::from(form.ctas_per_sm.max(1));
    c > p && !c.is_multiple_of(p)
}

/// The CTAs the busiest SM gets of a grid of `x` · batch · heads: ⌈CTAs / SMs⌉. O(1).
fn ctas_on_busiest_sm(shape: &ShapeParams, x: u32, sm_count: u32) -> u64 {
    u64::from(x.max(1))
        .saturating_mul(u64::from(shape.batch))
        .saturating_mul(u64::from(shape.heads))
        .div_ceil(u64::from(sm_count.max(1)))
}

/// The busiest SM's work when `form` runs `shape`, in rows, with `pass_rows` more for every
/// pass over the keys: its grid is [`launch_grid_x`] · batch · heads CTAs of k = ⌈tiles / grid.x⌉
/// tiles each; the busiest SM gets c = ⌈CTAs / SMs⌉ of them and holds `ctas_per_sm` (p) at
/// once, so it runs ⌊c / p⌋ rounds of p CTAs and one of c mod p; in a round of r CTAs each
/// takes its k tiles `tiles_at_once` (a) at a time, ⌊k / a⌋ passes of r · a tiles and one of
/// r · (k mod a). A pass costs the rows it computes plus `pass_rows`: what a pass costs
/// beyond its rows (loading every K/V tile, the softmax chain's latency) does not shrink with
/// fewer rows. A model of the tail, not of speed. O(1).
pub(crate) fn busiest_sm_cost(
    shape: &ShapeParams,
    form: FormGeometry,
    pass_rows: u64,
    sm_count: u32,
) -> u64 {
    let x = launch_grid_x(shape, form, sm_count);
    cost_of_grid(shape, form, x, pass_rows, sm_count)
}

/// [`busiest_sm_cost`] of `form` on a grid of `x` · batch · heads CTAs.
fn cost_of_grid(
    shape: &ShapeParams,
    form: FormGeometry,
    x: u32,
    pass_rows: u64,
    sm_count: u32,
) -> u64 {
    let rows = form.rows.max(1);
    let tiles = u64::from(shape.seq_len.div_ceil(rows));
    let c = ctas_on_busiest_sm(shape, x, sm_count);
    let x = u64::from(x.max(1));
    let p = u64::from(form.ctas_per_sm.max(1));
    let a = u64::from(form.tiles_at_once.max(1));
    let k = tiles.div_ceil(x);
    let rows = u64::from(rows);
    let pass = |tiles_now: u64| tiles_now.saturating_mul(rows).saturating_add(pass_rows);
    let round = |r: u64| {
        let partial = if k % a > 0 { pass(r * (k % a)) } else { 0 };
        (k / a).saturating_mul(pass(r * a)).saturating_add(partial)
    };
    let last = if !c.is_multiple_of(p) {
        round(c % p)
    } else {
        0
    };
    (c / p).saturating_mul(round(p)).saturating_add(last)
}

/// The host's choice among `NAME`, `NAME_small`, `NAME_long`, `NAME_long_noncausal`,
/// `NAME_short_noncausal` and `NAME_causal`, as kernels/README.md states it. First the form for any mask:
/// `NAME_long` when the source has one and seq_len is at least its `NAME_long_from`; else
/// `NAME_small` when the source has one and `NAME`'s grid, ⌈seq_len / rows⌉ · batch · heads
/// CTAs, has fewer CTAs than the GPU has SMs; else `NAME`. Then, for a non-causal launch on
/// `NAME`, `NAME_small` instead where its tile has fewer rows than NAME's and its busiest SM
/// costs strictly less ([`busiest_sm_cost`], a pass costing NAME's rows more than its rows):
/// the L4's d64 pair, 64 rows three a SM against 128 two a SM, where NAME's grid leaves its
/// busiest SM a round of CTAs more (or a last one alone) than the smaller tile's does (on an
/// L4's 58 SMs the PR's b2h8s512d64 and b4h16s512d64). Then, for a non-causal launch with seq_len at least
/// `NAME_long_noncausal_from` (and at most its optional `NAME_long_noncausal_to`),
/// `NAME_long_noncausal` instead when its busiest SM costs less
/// than that form's ([`busiest_sm_cost`], a pass costing NAME's rows_per_block more than
/// its rows) and runs no last round of its CTAs that is not full; a tie keeps the form for
/// any mask, unless both have the same geometry (rows,
/// fill, tiles at once, CTAs per SM): then the model has nothing to weigh and
/// `NAME_long_noncausal_from` alone decides (the sm_90a d128 pair: the same grid, the
/// narrowed 192-key tiles in a function of their own so that ptxas allocates NAME's registers
/// as before). Last, for a non-causal launch with seq_len at most
/// `NAME_short_noncausal_to`, `NAME_short_noncausal` when its busiest SM costs strictly less
/// than the form picked so far, its pass costing 1.5 NAME tiles beyond its rows and a last
/// round of its CTAs that is not full one such pass more ([`SHORT_PASS`]). A causal launch
/// instead keeps the form for any mask, except that NAME gives way to `NAME_causal` where the
/// source has it: the same tiles and grid with the units dealt by cost, the heaviest row tiles
/// first across the grid and, on a grid of one wave, paired with the lightest on an SM
/// (kernels/attention.cu, `deal_causal_by_cost`; the kernel tells the two apart by the SM
/// count it reads), an entry of its own so that NAME's code stays as it was.
///
/// Why the busiest SM and not a bound on NAME's grid: the forms differ in how many rows an
/// SM computes at once (the sm_90a d64 one: three 64-row warpgroups in one CTA per SM, where
/// `NAME_long` and NAME run two CTAs of one), so which one finishes first depends on how
/// each grid rounds onto the SMs; a bound of four NAME CTAs per SM sent [2,8,1536] to
/// `NAME_long`, 34.6% slower (docs/KERNEL_LOG.md, seventh session). Why a pass costs one
/// tile's rows more than its rows: on an H200 the pass of three 64-row units took about 1.35×
/// as long as NAME's pass of two CTAs, and one CTA's pass alone about 0.72×; so a pass is
/// part latency, part rows. A model, and it misses: set before the shapes it was then checked
/// on, it chose the faster form on 28 of the 29 non-causal d64 shapes of 2026-12-02/-03 it
/// was drawn from ([3,32,1024]: it keeps NAME, the even split 9.2% faster) and on 10 of 14
/// it had not seen; the other four cost 1.2–2.0%, and 12.4% at [6,12,1920], where both forms
/// leave a second round on a few SMs and the costs tie (docs/KERNEL_LOG.md, eighth session).
/// The L4's d128 form (two CTAs of 4 warps where NAME runs one of 8) under the same rule: on
/// a grid of at most one CTA per SM both cost a pass of one tile and NAME keeps it
/// ([1,16,1000] took 34% longer on the other, sixth session); with an odd number of them on
/// the busiest SM (more than one) its last CTA runs alone and NAME is faster: 15.8% and 18.5%
/// at [12,16,256] and [8,16,319] (three, twenty-fifth session), 10.9% at [20,16,256] (five,
/// twenty-ninth session, where the cost alone had the split form's busiest SM 10% cheaper:
/// two of its CTAs at once took 1.95 NAME CTAs' time, not the model's 1.5). So a last round
/// not full keeps NAME outright; with two or four the split form wins ([16,16,256], four:
/// 2.7–3.3% faster than NAME). No form with one CTA per SM (the sm_90a ones) ever leaves a
/// round not full, so no Hopper choice depends on it.
///
/// `NAME_small` by cost: measured on an H100 with both forms forced (`bench/small_l4.py`,
/// docs/KERNEL_LOG.md, 2026-12-06, fortieth session), on 56 SMs (a green context, the nearest
/// to an L4's 58 a partition gives) the twelve grids it moves were 0.7–14.8% faster (the model's
/// margins of 6.25, 10 and 16.7% gave 0.7–1.0, 7.6–9.1 and 11.9–14.8%), and the fifteen it
/// keeps on NAME 2.2–25.1% slower on NAME_small; on 132 SMs nine of the ten it moves were
/// 1.2–11.8% faster and one 1.2% slower (b5h16s512d64: 56 of NAME's SMs at its busiest
/// count, 112 of NAME_small's), the five it keeps 19.4–38.7% slower on NAME_small; the gate's
/// own A/B of six it moves there, b5h16s512d64 among them: six improvements, 2.1–11.7%. Where
/// the two tiles have the same rows (the sm_90a set) the rule is not taken: the forms differ
/// there in what a pass costs, which this model does not weigh.
pub(crate) fn pick_form(shape: &ShapeParams, forms: &Forms, sm_count: u32) -> Form {
    let main_ctas = u64::from(shape.seq_len.div_ceil(forms.main.rows.max(1)))
        .saturating_mul(u64::from(shape.batch))
        .saturating_mul(u64::from(shape.heads));
    let mut form = match (forms.long, forms.small) {
        (Some((_, from)), _) if shape.seq_len >= from => Form::Long,
        (_, Some(_)) if main_ctas < u64::from(sm_count) => Form::Small,
        _ => Form::Main,
    };
    let pass_rows = u64::from(forms.main.rows.max(1));
    // NAME_short_noncausal pays for a last round of its CTAs that is not full: one of its
    // passes more (lone CTAs at the end of a grid have nothing to hide their latency).
    let cost = |form: Form| {
        let geometry = forms.geometry(form);
        if form != Form::ShortNonCausal {
            return busiest_sm_cost(shape, geometry, pass_rows, sm_count);
        }
        let pass = pass_rows.saturating_mul(SHORT_PASS.0) / SHORT_PASS.1;
        let tail = if partial_second_round(shape, geometry, sm_count) {
            pass
        } else {
            0
        };
        busiest_sm_cost(shape, geometry, pass, sm_count).saturating_add(tail)
    };
    if shape.causal {
        return match forms.causal {
            Some(_) if form == Form::Main => Form::Causal,
            _ => form,
        };
    }
    // NAME_small where its smaller tile rounds onto the SMs better (see above).
    if let Some(small) = forms.small
        && form == Form::Main
        && small.rows < forms.main.rows
        && cost(Form::Small) < cost(Form::Main)
    {
        form = Form::Small;
    }
    if let Some((noncausal, lens)) = forms.long_noncausal {
        // NAME_long_noncausal never where a last round of its CTAs is not full (see above).
        let cheaper = noncausal == forms.geometry(form)
            || (!partial_second_round(shape, noncausal, sm_count)
                && cost(Form::LongNonCausal) < cost(form));
        if lens.contains(shape.seq_len) && cheaper {
            form = Form::LongNonCausal;
        }
    }
    if let Some((_, to)) = forms.short_noncausal
        && shape.seq_len <= to
        && cost(Form::ShortNonCausal) < cost(form)
    {
        form = Form::ShortNonCausal;
    }
    form
}

impl AttentionSet {
    /// The kernel that runs `shape` ([`pick_form`]).
    pub fn get(&self, shape: &ShapeParams) -> Result<&Kernel, GpuError> {
        let key = (shape.dtype, shape.head_dim);
        let main = self.kernels.get(&key).ok_or_else(|| {
            GpuError::Unsupported(format!(
                "no attention kernel for {} head_dim {}",
                shape.dtype, shape.head_dim
            ))
        })?;
        let long = self.long.get(&key);
        let long_noncausal = self.long_noncausal.get(&key);
        let short_noncausal = self.short_noncausal.get(&key);
        let small = self.small.get(&key);
        let causal = self.causal.get(&key);
        let with_bound = |(kernel, bound): &(Kernel, u32)| (kernel.form_geometry(), *bound);
        let forms = Forms {
            main: main.form_geometry(),
            small: small.map(Kernel::form_geometry),
            long: long.map(with_bound),
            long_noncausal: long_noncausal.map(|(kernel, lens)| (kernel.form_geometry(), *lens)),
            short_noncausal: short_noncausal.map(with_bound),
            causal: causal.map(Kernel::form_geometry),
        };
        let form = pick_form(shape, &forms, self.sm_count);
        Ok(match form {
            Form::ShortNonCausal => short_noncausal.map(|(kernel, _)| kernel),
            Form::LongNonCausal => long_noncausal.map(|(kernel, _)| kernel),
            Form::Long => long.map(|(kernel, _)| kernel),
            Form::Small => small,
            Form::Causal => causal,
            Form::Main => None,
        }
        .unwrap_or(main))
    }

    /// How `shape` is launched: the kernel [`AttentionSet::get`] picks and its
    /// [`Kernel::config`]; `None` where no kernel runs it.
    pub fn launch(&self, shape: &ShapeParams) -> Option<crate::launch::Launch> {
        let kernel = self.get(shape).ok()?;
        let c = kernel.config(shape);
        Some(crate::launch::Launch {
            kernel: kernel.name.clone(),
            grid: [c.grid_dim.0, c.grid_dim.1, c.grid_dim.2],
            threads_per_block: c.block_dim.0,
            dynamic_smem_bytes: c.shared_mem_bytes,
        })
    }

    /// What the compiler gave the kernels that run `shapes` (the module's figures, ptxas's
    /// spills) and what their launches ask of an SM (the driver's occupancy for the launch's
    /// block and dynamic shared memory). A kernel the module has no figures for is left out.
    pub fn kernel_resources(
        &self,
        side: ResourceSide,
        shapes: &[ShapeParams],
    ) -> Vec<KernelResources> {
        let Ok(figures) = &self.resources else {
            return Vec::new();
        };
        let mut out: Vec<KernelResources> = Vec::new();
        for kernel in shapes.iter().filter_map(|s| self.get(s).ok()) {
            if out.iter().any(|k| k.kernel == kernel.name) {
                continue;
            }
            let Some(f) = figures.iter().find(|f| f.kernel.name == kernel.name) else {
                continue;
            };
            let mut notes: Vec<String> = f.note.iter().cloned().collect();
            // The driver reads the same module: a disagreement means the figures are wrong.
            if let Ok(regs) = kernel
                .func
                .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)
                && u32::try_from(regs).ok() != Some(f.kernel.registers)
            {
                notes.push(format!(
                    "the driver reports {regs} registers for {}, the module {}",
                    kernel.name, f.kernel.registers
                ));
            }
            out.push(KernelResources {
                side,
                kernel: kernel.name.clone(),
                registers: f.kernel.registers,
                spill_store_bytes: f.spill_store_bytes,
                spill_load_bytes: f.spill_load_bytes,
                stack_frame_bytes: f.kernel.stack_frame_bytes,
                static_smem_bytes: f.kernel.static_smem_bytes,
                dynamic_smem_bytes: u64::from(kernel.smem_bytes),
                threads_per_block: kernel.threads,
                // The driver's figure, read once at load ([`ctas_per_sm`]).
                max_ctas_per_sm: Some(kernel.ctas_per_sm),
                note: (!notes.is_empty()).then(|| notes.join("; ")),
            });
        }
        out
    }
}

/// Everything compiled from one `kernels/` directory: the timed attention kernels and the
/// harness (reference and utility kernels).
pub struct Kernels {
    pub attention: AttentionSet,
    reference: HashMap<Dtype, Kernel>,
    /// The same reference tiled over every row (`attention_ref_full_*`): what parity checks
    /// against.
    reference_full: HashMap<Dtype, Kernel>,
    /// The reference of every timed launch of a sample (`attention_ref_launches_*`).
    reference_launches: HashMap<Dtype, Kernel>,
    /// Inputs drawn from the input mixture (`fill_input_*`).
    fill_input: HashMap<Dtype, CudaFunction>,
    /// Every timed launch's own q (`fill_q_pool_*`) and its compared rows (`launch_rows_*`).
    fill_q_pool: HashMap<Dtype, CudaFunction>,
    launch_rows: HashMap<Dtype, CudaFunction>,
    /// The timed kernels' constant data, snapshotted when loaded (`copy_bytes`) and verified
    /// (`check_bytes`).
    pub copy_bytes: CudaFunction,
    pub check_bytes: CudaFunction,
    pub fill_u32: CudaFunction,
    pub spin: CudaFunction,
    /// The integrity checks (kernels/util.cu): keyed hashes of 16- and 32-bit buffers, the
    /// comparison of every output slot with its reference, the poisoned-gap check.
    pub hash_u16: CudaFunction,
    pub hash_u32: CudaFunction,
    pub check_outputs: CudaFunction,
    pub check_fill: CudaFunction,
    _modules: Vec<Arc<CudaModule>>,
}

impl Kernels {
    pub fn attention(&self, shape: &ShapeParams) -> Result<&Kernel, GpuError> {
        self.attention.get(shape)
    }

    pub fn reference(&self, dtype: Dtype) -> Result<&Kernel, GpuError> {
        self.reference
            .get(&dtype)
            .ok_or_else(|| GpuError::Unsupported(format!("no reference kernel for {dtype}")))
    }

    pub fn reference_full(&self, dtype: Dtype) -> Result<&Kernel, GpuError> {
        self.reference_full
            .get(&dtype)
            .ok_or_else(|| GpuError::Unsupported(format!("no tiled reference kernel for {dtype}")))
    }

    pub(crate) fn reference_launches(&self, dtype: Dtype) -> Result<&Kernel, GpuError> {
        self.reference_launches.get(&dtype).ok_or_else(|| {
            GpuError::Unsupported(format!("no per-launch reference kernel for {dtype}"))
        })
    }

    pub(crate) fn fill_input(&self, dtype: Dtype) -> &CudaFunction {
        &self.fill_input[&dtype]
    }

    pub(crate) fn fill_q_pool(&self, dtype: Dtype) -> &CudaFunction {
        &self.fill_q_pool[&dtype]
    }

    pub(crate) fn launch_rows(&self, dtype: Dtype) -> &CudaFunction {
        &self.launch_rows[&dtype]
    }
}

/// An open GPU with its kernels loaded.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub info: DeviceInfo,
    pub kernels: Kernels,
    /// SHA-256 of kernels/attention.cu, the kernel under the gate.
    pub kernel_source_hash: String,
    /// NVML, for clock readings while measuring.
    pub monitor: super::env::Monitor,
    /// This run's secrets (hash keys, poison patterns, slot placements), from the OS.
    pub run_key: super::secret::RunKey,
    /// The longest any wait for the GPU may take (the config's `measure.max_wait_s`).
    pub max_wait: Duration,
    /// The GPU time the timed kernels may still take (the config's `measure.gpu_budget_s`).
    pub budget: std::sync::Mutex<crate::backend::GpuBudget>,
}

pub(crate) fn uuid_string(bytes: &[std::ffi::c_char; 16]) -> String {
    let b: Vec<u8> = bytes.iter().map(|&c| c as u8).collect();
    let h = hex::encode(b);
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// How many CUDA devices this process sees (after `CUDA_VISIBLE_DEVICES`).
pub(crate) fn device_count() -> Result<u32, GpuError> {
    if !ffi::driver_present() {
        return Err(GpuError::NoDriver);
    }
    let n = CudaContext::device_count().map_err(|e| GpuError::NoDevice(e.to_string()))?;
    Ok(n.max(0) as u32)
}

/// Opens device 0: context, stream and device facts, without compiling anything.
pub(crate) fn open_device() -> Result<(Arc<CudaContext>, Arc<CudaStream>, DeviceInfo), GpuError> {
    if !ffi::driver_present() {
        return Err(GpuError::NoDriver);
    }
    let count = CudaContext::device_count().map_err(|e| GpuError::NoDevice(e.to_string()))?;
    if count < 1 {
        return Err(GpuError::NoDevice("the driver reports no devices".into()));
    }
    let ctx = CudaContext::new(0).map_err(|e| GpuError::NoDevice(e.to_string()))?;
    ffi::disable_event_tracking(&ctx);
    let stream = ctx.new_stream().during(|| "creating a stream".into())?;
    let attr = |a: CUdevice_attribute| {
        ctx.attribute(a)
            .during(|| format!("reading device attribute {a:?}"))
    };
    let (major, minor) = ctx
        .compute_capability()
        .during(|| "reading the compute capability".into())?;
    let info = DeviceInfo {
        name: ctx.name().during(|| "reading the device name".into())?,
        uuid: uuid_string(
            &ctx.uuid()
                .during(|| "reading the device UUID".into())?
                .bytes,
        ),
        arch: Arch {
            major: major as u32,
            minor: minor as u32,
        },
        sm_count: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        l2_bytes: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
        max_smem_optin: attr(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )? as u32,
        driver_cuda_version: ffi::driver_cuda_version()
            .during(|| "reading the driver version".into())?,
        nvrtc_version: if ffi::nvrtc_present() {
            ffi::nvrtc_version().unwrap_or((0, 0))
        } else {
            (0, 0)
        },
    };
    Ok((ctx, stream, info))
}

/// Reads a kernel's launch contract (`NAME_launch`) and checks it against the device.
fn load_kernel(
    m: &Arc<CudaModule>,
    stream: &Arc<CudaStream>,
    info: &DeviceInfo,
    src: &KernelSource,
    name: &str,
) -> Result<Kernel, GpuError> {
    let func = m
        .load_function(name)
        .during(|| format!("kernel {name} in {}", src.path.display()))?;
    let values = ffi::read_launch_constant(m, stream, &format!("{name}_launch"))
        .during(|| format!("reading {name}_launch in {}", src.path.display()))?;
    let [rows, threads, smem] =
        crate::kernel::entries::launch(name, values, info.max_smem_optin)
            .map_err(|why| GpuError::Kernel(format!("{}: {why}", src.path.display())))?;
    if smem > 48 * 1024 {
        func.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            smem as i32,
        )
        .during(|| format!("allowing {smem} bytes of shared memory for {name}"))?;
    }
    // After the shared-memory attribute: the driver's count depends on it.
    let ctas_per_sm = ctas_per_sm(&func, name, threads, smem, src)?;
    Ok(Kernel {
        name: name.to_owned(),
        func,
        rows_per_block: rows,
        threads,
        smem_bytes: smem,
        tma: false,
        fill: None,
        fill_or_one: false,
        tiles_at_once: 1,
        ctas_per_sm,
        sm_count: info.sm_count,
        constants: None,
    })
}

/// CTAs of a kernel one SM holds at once, as the driver computes it for the launch's block and
/// dynamic shared memory; a kernel no SM can hold is refused here, naming it.
fn ctas_per_sm(
    func: &CudaFunction,
    name: &str,
    threads: u32,
    smem: u32,
    src: &KernelSource,
) -> Result<u32, GpuError> {
    let ctas = func
        .occupancy_max_active_blocks_per_multiprocessor(threads, smem as usize, None)
        .during(|| format!("CTAs per SM of {name} in {}", src.path.display()))?;
    if ctas == 0 {
        return Err(GpuError::Kernel(format!(
            "{}: no SM can hold one CTA of {name} ({threads} threads, {smem} bytes of dynamic shared memory)",
            src.path.display()
        )));
    }
    Ok(ctas)
}

/// The `N` ints of a timed kernel's optional `__constant__` symbol, or None when the module
/// has no such symbol: looked up in the cubin's symbols first, not by asking the driver for
/// one that may not exist (compute-sanitizer counts that failed call as an error).
fn optional_ints<const N: usize>(
    cubin: &[u8],
    m: &Arc<CudaModule>,
    stream: &Arc<CudaStream>,
    src: &KernelSource,
    symbol: &str,
) -> Result<Option<[i32; N]>, GpuError> {
    if !has_symbol(cubin, symbol) {
        return Ok(None);
    }
    let what = || format!("reading {symbol} in {}", src.path.display());
    let values = ffi::read_i32_constant(m, stream, symbol, N).during(what)?;
    <[i32; N]>::try_from(values)
        .map(Some)
        .map_err(|_| GpuError::Kernel(format!("{}: {symbol} is not {N} ints", src.path.display())))
}

/// A launch constant the host refuses ([`crate::kernel::entries`]), after the source's path.
fn refused(src: &KernelSource, why: crate::kernel::entries::EntryError) -> GpuError {
    GpuError::Kernel(format!("{}: {why}", src.path.display()))
}

/// A timed kernel's optional launch constants (kernels/README.md), each refused outside its
/// range: `NAME_tma` (whether it takes the q, k, v tensor maps), `NAME_tiles_at_once`
/// (1..=64), `NAME_fill` = {CTAs per SM, most tiles per CTA} (1..=32, 1..=64) and
/// `NAME_fill_or_one` (0 or 1, only beside a `NAME_fill`).
fn with_optional_constants(
    mut kernel: Kernel,
    cubin: &[u8],
    m: &Arc<CudaModule>,
    stream: &Arc<CudaStream>,
    src: &KernelSource,
) -> Result<Kernel, GpuError> {
    use crate::kernel::entries;
    let name = kernel.name.clone();
    let read = |suffix: &str| format!("{name}_{suffix}");
    if let Some([layout]) = optional_ints(cubin, m, stream, src, &read("tma"))? {
        entries::tma(&name, layout).map_err(|why| refused(src, why))?;
        kernel.tma = true;
    }
    if let Some([tiles]) = optional_ints(cubin, m, stream, src, &read("tiles_at_once"))? {
        kernel.tiles_at_once =
            entries::tiles_at_once(&name, tiles).map_err(|why| refused(src, why))?;
    }
    if let Some(v) = optional_ints(cubin, m, stream, src, &read("fill"))? {
        kernel.fill = Some(entries::fill(&name, v).map_err(|why| refused(src, why))?);
    }
    if let Some([value]) = optional_ints(cubin, m, stream, src, &read("fill_or_one"))? {
        kernel.fill_or_one = entries::fill_or_one(&name, value, kernel.fill.is_some())
            .map_err(|why| refused(src, why))?;
    }
    Ok(kernel)
}

/// The seq_len bound of an optional form ([`crate::kernel::entries::Bound`]):
/// `NAME_long_from` of a `NAME_long` (or `NAME_long_noncausal_from` of a
/// `NAME_long_noncausal`), the shortest seq_len it takes, or `NAME_short_noncausal_to`, the
/// longest; at least 1. A form without it is refused: the host would have to guess.
fn form_bound(
    cubin: &[u8],
    m: &Arc<CudaModule>,
    stream: &Arc<CudaStream>,
    src: &KernelSource,
    form_name: &str,
    bound: crate::kernel::entries::Bound,
) -> Result<u32, GpuError> {
    let symbol = format!("{form_name}_{}", bound.suffix());
    let Some([value]) = optional_ints(cubin, m, stream, src, &symbol)? else {
        return Err(GpuError::Kernel(format!(
            "{} has {form_name} but no {symbol}: the {} seq_len it takes (kernels/README.md)",
            src.path.display(),
            bound.which()
        )));
    };
    crate::kernel::entries::form_bound(form_name, bound, value).map_err(|why| refused(src, why))
}

impl Gpu {
    /// Charges `seconds` of the `side` kernel's GPU time on `shape` to the run's budget
    /// ([`crate::backend::GpuBudget`]): an error naming the side that spent the most once it
    /// is spent. A poisoned lock is still the budget (it only adds up numbers).
    pub(crate) fn charge(
        &self,
        shape: &ShapeParams,
        side: &'static str,
        seconds: f64,
        what: impl FnOnce() -> String,
    ) -> Result<(), GpuError> {
        self.budget
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .charge(shape, side, seconds, what)
    }

    /// How long a wait for work expected to take `expected` may last before the GPU counts
    /// as hung: 20× the expectation and at least 5 s, never more than [`Gpu::max_wait`]
    /// (the whole of it when nothing is known).
    pub(crate) fn wait_limit(&self, expected: Option<Duration>) -> Duration {
        match expected {
            Some(e) => e
                .saturating_mul(20)
                .max(Duration::from_secs(5))
                .min(self.max_wait),
            None => self.max_wait,
        }
    }

    /// Waits for everything queued on the stream, under a deadline (gpu::watchdog): a hung
    /// kernel ends the process with exit code 2 through the command's hang handler.
    pub fn sync(
        &self,
        expected: Option<Duration>,
        what: impl FnOnce() -> String,
    ) -> Result<(), GpuError> {
        let described = what();
        super::watchdog::guarded(
            self.wait_limit(expected),
            || described.clone(),
            || self.stream.synchronize(),
        )
        .during(|| described.clone())
    }

    /// Waits for `event` (recorded on the stream), under the deadline of work expected to
    /// take `expected`; returns the host's time when the wait saw it complete.
    pub(crate) fn wait_event(
        &self,
        event: &cudarc::driver::CudaEvent,
        expected: Option<Duration>,
        what: impl FnOnce() -> String,
    ) -> Result<std::time::Instant, GpuError> {
        let described = what();
        super::watchdog::guarded(
            self.wait_limit(expected),
            || described.clone(),
            || event.synchronize().map(|()| std::time::Instant::now()),
        )
        .during(|| described.clone())
    }

    /// Copies a device buffer to the host (which waits for the stream), under a deadline.
    pub(crate) fn read_back<T: cudarc::driver::DeviceRepr + Default + Clone>(
        &self,
        buf: &cudarc::driver::CudaSlice<T>,
        what: impl FnOnce() -> String,
    ) -> Result<Vec<T>, GpuError> {
        let described = what();
        super::watchdog::guarded(
            self.max_wait,
            || format!("reading back {described}"),
            || self.stream.clone_dtoh(buf),
        )
        .during(|| format!("reading back {described}"))
    }

    /// An upper bound on this GPU's dense fp16/bf16 tensor throughput, in TFLOP/s: SMs ×
    /// the highest SM clock NVML reports (3 GHz if it reports none) × the dense tensor FLOPs
    /// per clock of an SM of the newest architecture of this major version (1024 before
    /// Ampere, 2048 for 8.x (A100), 4096 for 9.x (H100/H200), 8192 from 10.x). Generous on
    /// purpose (an L4, 8.9, peaks at half its bound): it only has to expose times no kernel
    /// can reach, never flag a real one.
    pub(crate) fn peak_dense_tflops(&self) -> f64 {
        let per_clock = match self.info.arch.major {
            0..=7 => 1024.0,
            8 => 2048.0,
            9 => 4096.0,
            _ => 8192.0,
        };
        let mhz = self.monitor.max_sm_clock_mhz().unwrap_or(3000).max(1);
        f64::from(self.info.sm_count) * f64::from(mhz) * 1e6 * per_clock / 1e12
    }

    /// Opens device 0 and compiles the kernels in `kernels_dir` for it: the harness
    /// (reference, utilities) and its attention kernels.
    pub fn open(kernels_dir: &Path) -> Result<Gpu, GpuError> {
        Gpu::open_with(kernels_dir, &[])
    }

    /// [`Gpu::open`], with the attention kernels compiled with `defines` (the config's
    /// `compile.defines`; the harness never gets them).
    pub(crate) fn open_with(kernels_dir: &Path, defines: &[String]) -> Result<Gpu, GpuError> {
        Gpu::open_compiling(kernels_dir, defines, &[]).map(|(gpu, _)| gpu)
    }

    /// [`Gpu::open_with`], with the `attention.cu` of each of `others` (the other side of an
    /// A/B run) loaded too, in their order. Each source is read once; all are compiled in
    /// parallel first, besides the harness's two: each compile is a process of its own
    /// (kernel::sandbox), so four take the time of the longest. A source that cannot be read
    /// or compiled fails, with its error, where it is loaded.
    pub(crate) fn open_compiling(
        kernels_dir: &Path,
        defines: &[String],
        others: &[&Path],
    ) -> Result<(Gpu, Vec<AttentionSet>), GpuError> {
        let (ctx, stream, info) = open_device()?;
        if !ffi::nvrtc_present() {
            return Err(GpuError::NoNvrtc);
        }
        let reference_src = harness_source(Harness::Reference);
        let util_src = harness_source(Harness::Util);
        let read = |dir: &Path| {
            KernelDir::new(dir)
                .read_timed()
                .map(|src| src.with_defines(defines))
        };
        let first = read(kernels_dir);
        let other_sources: Vec<Result<KernelSource, GpuError>> =
            others.iter().map(|dir| read(dir)).collect();
        let mut sources: Vec<&KernelSource> = vec![&reference_src, &util_src];
        sources.extend(std::iter::once(&first).chain(&other_sources).flatten());
        std::thread::scope(|scope| {
            for src in &sources {
                scope.spawn(move || {
                    let _ = compile(src, info.arch);
                });
            }
        });
        let reference_mod = load_module(&ctx, &info, &reference_src)?;
        let util_mod = load_module(&ctx, &info, &util_src)?;
        let copy_bytes = harness_function(&util_mod, &util_src, "copy_bytes")?;
        let attention = load_attention(&ctx, &stream, &info, &copy_bytes, first?)?;
        let kernels = harness_kernels(
            (&stream, &info),
            (reference_mod, &reference_src),
            (util_mod, &util_src),
            attention,
            copy_bytes,
        )?;
        let monitor = super::env::Monitor::new(&info.uuid);
        let gpu = Gpu {
            monitor,
            run_key: super::secret::RunKey::from_os(),
            max_wait: Duration::from_secs(15),
            budget: std::sync::Mutex::new(crate::backend::GpuBudget::new(f64::INFINITY)),
            kernel_source_hash: kernels.attention.source_hash.clone(),
            ctx,
            stream,
            info,
            kernels,
        };
        let sets = other_sources
            .into_iter()
            .map(|src| gpu.load_attention_source(src?))
            .collect::<Result<Vec<_>, GpuError>>()?;
        Ok((gpu, sets))
    }

    /// Compiles and loads another `attention.cu` (the other side of an A/B run) on this
    /// device, next to the kernels already loaded.
    pub fn load_attention(&self, kernels_dir: &Path) -> Result<AttentionSet, GpuError> {
        self.load_attention_with(kernels_dir, &[])
    }

    /// [`Gpu::load_attention`] compiled with `defines`.
    pub(crate) fn load_attention_with(
        &self,
        kernels_dir: &Path,
        defines: &[String],
    ) -> Result<AttentionSet, GpuError> {
        let src = KernelDir::new(kernels_dir)
            .read_timed()?
            .with_defines(defines);
        self.load_attention_source(src)
    }

    /// Compiles and loads an `attention.cu` already read.
    fn load_attention_source(&self, src: KernelSource) -> Result<AttentionSet, GpuError> {
        load_attention(
            &self.ctx,
            &self.stream,
            &self.info,
            &self.kernels.copy_bytes,
            src,
        )
    }
}

pub use crate::kernel::cubin::has_symbol;

/// The harness's kernels, from its two modules (the reference's and the utilities'), with
/// `attention`, the kernels under test, beside them.
fn harness_kernels(
    (stream, info): (&Arc<CudaStream>, &DeviceInfo),
    (reference_mod, reference_src): (Arc<CudaModule>, &KernelSource),
    (util_mod, util_src): (Arc<CudaModule>, &KernelSource),
    attention: AttentionSet,
    copy_bytes: CudaFunction,
) -> Result<Kernels, GpuError> {
    let mut reference = HashMap::new();
    let mut reference_full = HashMap::new();
    let mut reference_launches = HashMap::new();
    let mut fill_input = HashMap::new();
    let mut fill_q_pool = HashMap::new();
    let mut launch_rows = HashMap::new();
    for dtype in [Dtype::Float16, Dtype::Bfloat16] {
        let name = format!("attention_ref_{}", dtype.short());
        reference.insert(
            dtype,
            load_kernel(&reference_mod, stream, info, reference_src, &name)?,
        );
        let name = format!("attention_ref_full_{}", dtype.short());
        reference_full.insert(
            dtype,
            load_kernel(&reference_mod, stream, info, reference_src, &name)?,
        );
        let name = format!("attention_ref_launches_{}", dtype.short());
        reference_launches.insert(
            dtype,
            load_kernel(&reference_mod, stream, info, reference_src, &name)?,
        );
        let name = format!("fill_input_{}", dtype.short());
        fill_input.insert(dtype, harness_function(&util_mod, util_src, &name)?);
        let name = format!("fill_q_pool_{}", dtype.short());
        fill_q_pool.insert(dtype, harness_function(&util_mod, util_src, &name)?);
        let name = format!("launch_rows_{}", dtype.short());
        launch_rows.insert(dtype, harness_function(&util_mod, util_src, &name)?);
    }
    Ok(Kernels {
        attention,
        reference,
        reference_full,
        reference_launches,
        fill_input,
        fill_q_pool,
        launch_rows,
        copy_bytes,
        check_bytes: harness_function(&util_mod, util_src, "check_bytes")?,
        fill_u32: harness_function(&util_mod, util_src, "fill_u32")?,
        spin: harness_function(&util_mod, util_src, "spin_cycles")?,
        hash_u16: harness_function(&util_mod, util_src, "hash_u16")?,
        hash_u32: harness_function(&util_mod, util_src, "hash_u32")?,
        check_outputs: harness_function(&util_mod, util_src, "check_outputs")?,
        check_fill: harness_function(&util_mod, util_src, "check_fill")?,
        _modules: vec![reference_mod, util_mod],
    })
}

/// A harness kernel by name, its error naming the source.
fn harness_function(
    m: &Arc<CudaModule>,
    src: &KernelSource,
    name: &str,
) -> Result<CudaFunction, GpuError> {
    m.load_function(name)
        .during(|| format!("kernel {name} in {}", src.path.display()))
}

/// The harness's two sources, which the binary carries: trusted code checks the kernel under
/// test, and the host code and the harness kernels it launches always match (a base commit
/// of any age, read with git, brings only its `attention.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Harness {
    Reference,
    Util,
}

pub(crate) fn harness_source(which: Harness) -> KernelSource {
    match which {
        Harness::Reference => KernelSource::embedded(
            "ci-gate/kernels/reference.cu",
            include_str!("../../kernels/reference.cu"),
        ),
        Harness::Util => KernelSource::embedded(
            "ci-gate/kernels/util.cu",
            include_str!("../../kernels/util.cu"),
        ),
    }
}

fn load_module(
    ctx: &Arc<CudaContext>,
    info: &DeviceInfo,
    src: &KernelSource,
) -> Result<Arc<CudaModule>, GpuError> {
    let cubin = compile(src, info.arch)?;
    ctx.load_module(Ptx::from_binary(cubin.as_ref().clone()))
        .during(|| format!("loading {} for {}", src.path.display(), info.arch.target()))
}

fn load_attention(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    info: &DeviceInfo,
    copy_bytes: &CudaFunction,
    src: KernelSource,
) -> Result<AttentionSet, GpuError> {
    // The module check comes before the driver sees the module: writable device memory,
    // malloc, printf or assert in the timed kernel are refused, not loaded.
    let compiled = compile_module(&src, info.arch)?;
    let cubin = compiled.cubin.clone();
    crate::kernel::cubin::check_untrusted_cubin(&cubin, &src.path.display().to_string())?;
    let resources = crate::kernel::ptxas::static_resources(&cubin, &compiled.log)
        .map_err(|why| format!("{}: {why}", src.path.display()));
    let module = load_module(ctx, info, &src)?;
    let constants = ConstantGuard::new(&module, stream, copy_bytes, &cubin, &src)?.map(Arc::new);
    // An entry as it is launched: its constant banks guarded, its TMA maps and its grid fill
    // read from the module.
    let entry = |name: &str| -> Result<Kernel, GpuError> {
        let mut kernel = load_kernel(&module, stream, info, &src, name)?;
        kernel.constants = constants.clone();
        with_optional_constants(kernel, &cubin, &module, stream, &src)
    };
    let mut kernels = HashMap::new();
    let mut small = HashMap::new();
    let mut long = HashMap::new();
    let mut long_noncausal = HashMap::new();
    let mut short_noncausal = HashMap::new();
    let mut causal = HashMap::new();
    for dtype in [Dtype::Float16, Dtype::Bfloat16] {
        for d in crate::config::SUPPORTED_HEAD_DIMS {
            let name = crate::kernel::entries::main_entry(dtype, d);
            kernels.insert((dtype, d), entry(&name)?);
            // Optional: a source without it runs NAME on every grid. Looked up in the
            // cubin's symbols, not by asking the driver for a function that may not exist
            // (compute-sanitizer counts that failed call as an error).
            let small_name = format!("{name}_small");
            if has_symbol(&cubin, &small_name) {
                small.insert((dtype, d), entry(&small_name)?);
            }
            let causal_name = format!("{name}_causal");
            if has_symbol(&cubin, &causal_name) {
                causal.insert((dtype, d), entry(&causal_name)?);
            }
            // Optional too: NAME_long with NAME_long_from, the shortest seq_len it takes, and
            // NAME_long_noncausal with its NAME_long_noncausal_from; NAME_short_noncausal with
            // NAME_short_noncausal_to, the longest.
            // NAME_long_noncausal may also say the longest (NAME_long_noncausal_to).
            use crate::kernel::entries::BoundedForm;
            for kind in BoundedForm::ALL {
                let (form_name, bound) = (format!("{name}_{}", kind.suffix()), kind.bound());
                if !has_symbol(&cubin, &form_name) {
                    continue;
                }
                let kernel = entry(&form_name)?;
                let value = form_bound(&cubin, &module, stream, &src, &form_name, bound)?;
                match kind {
                    BoundedForm::Long => {
                        long.insert((dtype, d), (kernel, value));
                    }
                    BoundedForm::LongNonCausal => {
                        let to_symbol = format!("{form_name}_to");
                        let to = optional_ints(&cubin, &module, stream, &src, &to_symbol)?;
                        let to =
                            crate::kernel::entries::upper_bound(&form_name, value, to.map(|[v]| v))
                                .map_err(|why| refused(&src, why))?;
                        long_noncausal.insert((dtype, d), (kernel, SeqLens { from: value, to }));
                    }
                    BoundedForm::ShortNonCausal => {
                        short_noncausal.insert((dtype, d), (kernel, value));
                    }
                }
            }
        }
    }
    Ok(AttentionSet {
        kernels,
        small,
        long,
        long_noncausal,
        short_noncausal,
        causal,
        sm_count: info.sm_count,
        source_hash: src.hash,
        resources,
        _module: module,
    })
}

#[cfg(test)]
mod tests {
    use super::has_symbol;

    #[test]
    fn symbols_are_matched_whole() {
        let strtab = b"\x7fELF...\0attention_fwd_f16_d64\0attention_fwd_f16_d64_small_launch\0";
        assert!(has_symbol(strtab, "attention_fwd_f16_d64"));
        assert!(!has_symbol(strtab, "attention_fwd_f16_d64_small"));
        assert!(has_symbol(strtab, "attention_fwd_f16_d64_small_launch"));
        assert!(!has_symbol(strtab, "fwd_f16_d64"));
        assert!(!has_symbol(b"", "x"));
    }

    #[test]
    fn a_fill_kernel_gets_one_wave_of_ctas_with_several_tiles_each() {
        use super::grid_x;
        use crate::config::{Dtype, ShapeParams};
        let shape = |b, h, s| ShapeParams::new(b, h, s, 64, false, Dtype::Float16);
        // without NAME_fill: one tile each
        assert_eq!(grid_x(&shape(8, 16, 512), 64, None, 132), 8);
        // {2, 4} on 132 SMs (264 places): [1,8,512] 64 tiles -> 1 each
        assert_eq!(grid_x(&shape(1, 8, 512), 64, Some((2, 4)), 132), 8);
        // [4,16,512]: 512 tiles -> 2 each, 4 CTAs per (batch, head) = 256 in all
        assert_eq!(grid_x(&shape(4, 16, 512), 64, Some((2, 4)), 132), 4);
        // [8,16,512]: 1024 tiles -> 4 each (3.9 rounded up), 2 per (batch, head)
        assert_eq!(grid_x(&shape(8, 16, 512), 64, Some((2, 4)), 132), 2);
        // [4,16,2048]: 2048 tiles would want 8 each: at most 4
        assert_eq!(grid_x(&shape(4, 16, 2048), 64, Some((2, 4)), 132), 8);
        // a tail: 9 tiles at 4 each -> 3 CTAs (the kernel then does 3 each)
        assert_eq!(grid_x(&shape(64, 16, 576), 64, Some((2, 4)), 132), 3);
        // degenerate inputs stay positive
        assert_eq!(grid_x(&shape(1, 1, 1), 64, Some((1, 1)), 0), 1);
        assert_eq!(grid_x(&shape(1, 1, 1), 0, None, 132), 1);
    }

    /// The sm_90a d64 forms as kernels/attention.cu declares them and the driver holds them:
    /// NAME {64 rows, fill {2, 4}, 2 CTAs per SM}, NAME_small {64, one tile, 2 per SM},
    /// NAME_long {64, fill {2, 8}} from 1536, NAME_long_noncausal {64, fill {1, 64}, 3 tiles
    /// at once, 1 per SM} from 512; without NAME_short_noncausal ([`hopper_d64_short`]).
    fn hopper_d64() -> super::Forms {
        use super::{FormGeometry, Forms};
        let g = |rows, fill, tiles_at_once, ctas_per_sm| FormGeometry {
            rows,
            fill,
            fill_or_one: false,
            tiles_at_once,
            ctas_per_sm,
        };
        Forms {
            main: g(64, Some((2, 4)), 1, 2),
            small: Some(g(64, None, 1, 2)),
            long: Some((g(64, Some((2, 8)), 1, 2), 1536)),
            long_noncausal: Some((g(64, Some((1, 64)), 3, 1), super::SeqLens::from(512))),
            short_noncausal: None,
            causal: None,
        }
    }

    /// [`hopper_d64`] with NAME_short_noncausal {64 rows, one tile, 4 CTAs per SM} up to 640.
    fn hopper_d64_short() -> super::Forms {
        let short = super::FormGeometry {
            rows: 64,
            fill: None,
            fill_or_one: false,
            tiles_at_once: 1,
            ctas_per_sm: 4,
        };
        super::Forms {
            short_noncausal: Some((short, 640)),
            ..hopper_d64()
        }
    }

    /// The L4's d64 forms as kernels/attention.cu declares them (the mma.sync kernel): NAME
    /// {128 rows, one tile, 2 CTAs per SM}, NAME_small {64 rows, 3 per SM} and
    /// NAME_causal, NAME's tile in another order of units.
    fn ada_d64() -> super::Forms {
        use super::{FormGeometry, Forms};
        let g = |rows, ctas_per_sm| FormGeometry {
            rows,
            fill: None,
            fill_or_one: false,
            tiles_at_once: 1,
            ctas_per_sm,
        };
        Forms {
            main: g(128, 2),
            small: Some(g(64, 3)),
            long: None,
            long_noncausal: None,
            short_noncausal: None,
            causal: Some(g(128, 2)),
        }
    }

    /// NAME_small for a non-causal grid of NAME's whose busiest SM it makes cheaper, where its
    /// tile has fewer rows than NAME's (the L4's d64 set: 64 rows three a SM against 128 two
    /// a SM): on an L4's 58 SMs the PR's b2h8s512d64 (NAME 2 CTAs on the busiest SM, 384;
    /// NAME_small 3, 320) and b4h16s512d64 (5 against 9: 1024, 960) take it, b8h16s512d64 and
    /// b4h16s2048d64 keep NAME; on 132 SMs b3h16s512d64 (192 CTAs: 384 against 320) takes it
    /// and b4h16s512d64 keeps NAME. Measured on an H100, both forms forced
    /// (`bench/small_l4.py`, 2026-12-06): every grid it moves 0.7–14.8% faster on 56 SMs;
    /// on 132 up to 11.8% faster, one 1.2% slower ([`pick_form`]). Never a causal launch,
    /// and never where NAME_small's tile is NAME's (the sm_90a set, whose forms its own rules
    /// weigh).
    #[test]
    fn noncausal_grids_take_name_small_where_its_busiest_sm_costs_less() {
        use super::{Form, pick_form};
        use crate::config::{Dtype, ShapeParams};
        let ada = ada_d64();
        let shape = |b, h, s, causal| ShapeParams::new(b, h, s, 64, causal, Dtype::Float16);
        // ((batch, heads, seq_len, causal), SMs, the form)
        let cases = [
            ((2, 8, 512, false), 58, Form::Small),
            ((4, 16, 512, false), 58, Form::Small),
            ((2, 16, 512, false), 58, Form::Small),
            ((8, 16, 512, false), 58, Form::Main),
            ((4, 16, 2048, false), 58, Form::Main),
            ((2, 8, 512, true), 58, Form::Causal),
            ((4, 16, 512, true), 58, Form::Causal),
            ((3, 16, 512, false), 132, Form::Small),
            ((2, 12, 1024, false), 132, Form::Small),
            ((4, 16, 512, false), 132, Form::Main),
            ((5, 12, 512, false), 132, Form::Main),
            ((8, 16, 512, false), 132, Form::Main),
            ((3, 16, 512, true), 132, Form::Causal),
            // fewer CTAs than SMs: NAME_small as before, causal or not
            ((1, 8, 512, false), 58, Form::Small),
            ((1, 8, 512, true), 58, Form::Small),
        ];
        for ((b, h, s, causal), sms, want) in cases {
            assert_eq!(
                pick_form(&shape(b, h, s, causal), &ada, sms),
                want,
                "[{b},{h},{s}] causal {causal} on {sms} SMs"
            );
        }
        // The sm_90a sets: NAME_small's tile is NAME's (64 rows), so no grid of as many NAME
        // CTAs as SMs takes it, with or without NAME_short_noncausal.
        for forms in [hopper_d64(), hopper_d64_short()] {
            for b in [1u32, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32] {
                for h in [8u32, 12, 16, 32, 60] {
                    for s in [
                        128u32, 256, 384, 512, 640, 768, 1000, 1024, 1536, 2048, 4096,
                    ] {
                        let at = shape(b, h, s, false);
                        let ctas = s.div_ceil(forms.main.rows) * b * h;
                        if ctas >= 132 {
                            assert_ne!(pick_form(&at, &forms, 132), Form::Small, "[{b},{h},{s}]");
                        }
                    }
                }
            }
        }
        // Without NAME_small the rule has nothing to take.
        let without = super::Forms { small: None, ..ada };
        assert_eq!(
            pick_form(&shape(2, 8, 512, false), &without, 58),
            Form::Main
        );
    }

    /// NAME_causal: every causal launch the host would give NAME, on 132 SMs (an H100 SXM, an
    /// H200) and on 58 (an L4), grids of one wave and of several alike (the kernel deals
    /// them); never a non-causal launch or one that takes NAME_small, and never without the
    /// entry.
    #[test]
    fn causal_launches_on_name_take_name_causal() {
        use super::{Form, Forms, pick_form};
        use crate::config::{Dtype, ShapeParams};
        let forms = ada_d64();
        let shape = |b, h, s, causal| ShapeParams::new(b, h, s, 64, causal, Dtype::Float16);
        // ((batch, heads, seq_len, causal), SMs, the form)
        let cases = [
            // 4 row tiles x 64 = 256 CTAs for 264 places: one wave
            ((4, 16, 512, true), 132, Form::Causal),
            ((4, 16, 512, false), 132, Form::Main),
            // 512 CTAs: two waves; 16 x 64 = 1024: four
            ((8, 16, 512, true), 132, Form::Causal),
            ((8, 16, 512, false), 132, Form::Main),
            ((4, 16, 2048, true), 132, Form::Causal),
            // 133 CTAs; 132, one a SM (NAME_small takes fewer than 132)
            ((1, 133, 128, true), 132, Form::Causal),
            ((1, 132, 128, true), 132, Form::Causal),
            ((1, 131, 128, true), 132, Form::Small),
            // an odd tail: 3 row tiles (257 keys) x 64 = 192 CTAs
            ((4, 16, 257, true), 132, Form::Causal),
            // the L4: 58 SMs, 116 places; the PR's [4,16,512] is 256 CTAs there
            ((1, 16, 512, true), 58, Form::Causal),
            ((4, 16, 512, true), 58, Form::Causal),
            ((1, 14, 512, true), 58, Form::Small),
            ((1, 14, 512, false), 58, Form::Small),
        ];
        for ((b, h, s, causal), sms, want) in cases {
            assert_eq!(
                pick_form(&shape(b, h, s, causal), &forms, sms),
                want,
                "[{b},{h},{s}] causal {causal} on {sms} SMs"
            );
        }
        // Without the entry NAME runs them.
        let without = Forms {
            causal: None,
            ..forms
        };
        for (b, h, s) in [(4, 16, 512), (8, 16, 512)] {
            assert_eq!(pick_form(&shape(b, h, s, true), &without, 132), Form::Main);
        }
    }

    #[test]
    fn the_busiest_sm_cost_follows_each_forms_grid() {
        use super::busiest_sm_cost;
        use crate::config::{Dtype, ShapeParams};
        let forms = hopper_d64();
        let (long, _) = forms.long.unwrap_or_else(|| unreachable!());
        let (even, _) = forms.long_noncausal.unwrap_or_else(|| unreachable!());
        let shape = |b, h, s| ShapeParams::new(b, h, s, 64, false, Dtype::Float16);
        // (shape, NAME_long_noncausal's, NAME's, NAME_long's), in rows, a pass 64 rows more,
        // on 132 SMs.
        // [8,16,512]: 8 units a CTA, 128 CTAs, one per SM: two passes of three units and one
        // of two, 2 · (192 + 64) + (128 + 64) = 704; NAME: 256 CTAs of 4 tiles, the busiest
        // SM's two at once, 4 · (128 + 64) = 768.
        // [3,16,1024]: one wave would be 144 CTAs of the even split for 132 SMs (two on the
        // busiest, one after the other, 6 units each: 2 · 2 · 256 = 1024), so the host
        // launches 96 of 8 units, one per SM: 2 · 256 + 192 = 704; NAME: 288 CTAs of 3 tiles
        // would leave three on the busiest SM (a round of two, 3 · 192, then one alone,
        // 3 · 128: 960), so 192 of 4 tiles, two per SM at once: 4 · 192 = 768
        // (launch_grid_x).
        let cases = [
            ((8, 16, 512), 704, 768, 768),
            ((4, 16, 512), 384, 384, 384),
            ((3, 16, 1024), 704, 768, 768),
            ((2, 8, 1536), 256, 384, 384),
            ((1, 16, 2048), 384, 384, 384),
            ((16, 16, 1024), 2816, 3072, 3072),
        ];
        for ((b, h, s), want_even, want_main, want_long) in cases {
            let got =
                [even, forms.main, long].map(|f| busiest_sm_cost(&shape(b, h, s), f, 64, 132));
            assert_eq!(got, [want_even, want_main, want_long], "[{b},{h},{s}]");
        }
        // Degenerate geometry from hostile constants stays finite: seven CTAs of one row on
        // the one SM a zero count becomes, one at a time, a row and a pass each.
        let zero = super::FormGeometry {
            rows: 0,
            fill: Some((1, 1)),
            fill_or_one: false,
            tiles_at_once: 0,
            ctas_per_sm: 0,
        };
        assert_eq!(busiest_sm_cost(&shape(1, 1, 7), zero, 64, 0), 7 * 65);
        let huge = super::FormGeometry {
            rows: u32::MAX,
            fill: None,
            fill_or_one: false,
            tiles_at_once: 64,
            ctas_per_sm: 1,
        };
        assert!(busiest_sm_cost(&shape(u32::MAX, u32::MAX, u32::MAX), huge, u64::MAX, 1) > 0);
    }

    #[test]
    fn a_non_causal_grid_that_overfills_the_wave_is_cut_to_one_wave_when_that_costs_less() {
        use super::{grid_x, launch_grid_x};
        use crate::config::{Dtype, ShapeParams};
        let forms = hopper_d64();
        let (even, _) = forms.long_noncausal.unwrap_or_else(|| unreachable!());
        let (long, _) = forms.long.unwrap_or_else(|| unreachable!());
        let shape = |b, h, s, causal| ShapeParams::new(b, h, s, 64, causal, Dtype::Float16);
        // (shape, form, grid_x's x, the launched x)
        let cases = [
            // [6,16,512], the even split: 2 per (batch, head) = 192 CTAs for 132 SMs; one
            // wave is 1 each (96 CTAs of 8 units)
            ((6, 16, 512, false), even, 2, 1),
            // causal launches keep grid_x's grid (the cost counts no triangle)
            ((6, 16, 512, true), even, 2, 2),
            // NAME at [3,16,1024]: 6 per (batch, head) = 288 CTAs for 264 places; 5 would
            // fit, at 4 tiles each that is 4 CTAs
            ((3, 16, 1024, false), forms.main, 6, 4),
            // NAME_long at [5,12,1920]: 60 · 5 = 300 CTAs for 264 places; 4 of 8 tiles each
            ((5, 12, 1920, false), long, 5, 4),
            // [4,16,512] fits one wave already
            ((4, 16, 512, false), forms.main, 4, 4),
            // [12,16,1280]: 192 (batch, head)s for 132 places: no grid of whole heads fits
            ((12, 16, 1280, false), even, 1, 1),
            // [64,16,576]: more (batch, head)s than places: as grid_x
            ((64, 16, 576, false), forms.main, 3, 3),
            // [6,8,4096] NAME: the cut grid would need 16 tiles a CTA, past its 4
            ((6, 8, 4096, false), forms.main, 16, 16),
            // [3,32,768] even split: 2 → 1 is a tie (1024 rows either way): kept
            ((3, 32, 768, false), even, 2, 2),
        ];
        for ((b, h, s, causal), form, want_x, want_launched) in cases {
            let sh = shape(b, h, s, causal);
            assert_eq!(
                grid_x(&sh, form.rows, form.fill, 132),
                want_x,
                "grid_x [{b},{h},{s}]"
            );
            assert_eq!(
                launch_grid_x(&sh, form, 132),
                want_launched,
                "[{b},{h},{s}] causal {causal}"
            );
        }
        // without NAME_fill, and from hostile constants, nothing changes or panics
        assert_eq!(
            launch_grid_x(
                &shape(6, 16, 512, false),
                forms.small.unwrap_or_else(|| unreachable!()),
                132
            ),
            8
        );
        let zero = super::FormGeometry {
            rows: 0,
            fill: Some((1, 1)),
            fill_or_one: false,
            tiles_at_once: 0,
            ctas_per_sm: 0,
        };
        assert_eq!(launch_grid_x(&shape(3, 1, 7, false), zero, 0), 7);
        assert!(launch_grid_x(&shape(u32::MAX, u32::MAX, u32::MAX, false), even, u32::MAX) > 0);
    }

    /// `NAME_fill_or_one`: the L4 path's d64 NAME as a fill form (128 rows, two CTAs a SM,
    /// at most two tiles a CTA) keeps its fill grid where one tile a CTA costs as much (every
    /// grid it gained on, 132 SMs) and gets one tile a CTA where the fill grid's per-head
    /// rounding costs its busiest SM a round more (an L4's 58 SMs); never on a causal launch;
    /// and on any shape and SM count the grid is the fill grid or one tile a CTA, never
    /// costlier than the fill grid by the model. The cases are tests/vectors/launch_grid.json,
    /// which bench/grid_rule.py's port of the rule must also give.
    #[test]
    fn a_fill_form_that_asks_gets_one_tile_a_cta_where_the_fill_grid_costs_more() {
        use super::{FormGeometry, cost_of_grid, launch_grid_x};
        use crate::config::{Dtype, ShapeParams};
        let fill = FormGeometry {
            rows: 128,
            fill: Some((2, 2)),
            fill_or_one: true,
            tiles_at_once: 1,
            ctas_per_sm: 2,
        };
        let without = FormGeometry {
            fill_or_one: false,
            ..fill
        };
        let shape = |b, h, s, causal| ShapeParams::new(b, h, s, 64, causal, Dtype::Float16);
        // The vectors bench/grid_rule.py's port is checked against (its --self-test in CI):
        // the L4 path's fill form with and without NAME_fill_or_one on 132, 58 and 56 SMs,
        // and the sm_90a forms' one-wave cut
        let vectors: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/vectors/launch_grid.json"))
                .unwrap_or_else(|e| panic!("tests/vectors/launch_grid.json: {e}"));
        let cases = vectors["cases"].as_array().cloned().unwrap_or_default();
        assert!(cases.len() >= 20, "{} cases", cases.len());
        let int = |c: &serde_json::Value, key: &str| {
            c[key]
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or_else(|| panic!("{key} in {c}"))
        };
        for c in &cases {
            let form = FormGeometry {
                rows: int(c, "rows"),
                fill: c["fill"].as_array().map(|f| {
                    let at = |i: usize| f[i].as_u64().and_then(|v| u32::try_from(v).ok());
                    (at(0).unwrap_or(0), at(1).unwrap_or(0))
                }),
                fill_or_one: c["fill_or_one"].as_bool() == Some(true),
                tiles_at_once: 1,
                ctas_per_sm: int(c, "ctas_per_sm"),
            };
            let sh = shape(
                int(c, "batch"),
                int(c, "heads"),
                int(c, "seq_len"),
                c["causal"].as_bool() == Some(true),
            );
            assert_eq!(launch_grid_x(&sh, form, int(c, "sms")), int(c, "x"), "{c}");
        }
        // the pairs of the L4 path's form: with NAME_fill_or_one it never launches a grid
        // its model says is costlier, and differs only where the other grid is one tile a CTA
        for b in 1..=16 {
            for h in [1, 2, 8, 12, 16, 32] {
                for s in (64..=4096).step_by(64) {
                    for sms in [58, 66, 114, 132] {
                        let sh = shape(b, h, s, false);
                        let (x, fill_x) = (
                            launch_grid_x(&sh, fill, sms),
                            launch_grid_x(&sh, without, sms),
                        );
                        assert!(x == fill_x || x == s.div_ceil(128), "[{b},{h},{s}] {sms}");
                        let cost = |x| cost_of_grid(&sh, fill, x, 128, sms);
                        assert!(cost(x) <= cost(fill_x), "[{b},{h},{s}] {sms}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_sanitize_config_reaches_a_cut_grid_on_132_sms() -> Result<(), crate::config::ConfigError>
    {
        use super::{Form, grid_x, launch_grid_x, pick_form};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/sanitize.yaml");
        let config = crate::config::Config::load(&path)?;
        let forms = hopper_d64_short();
        assert!(
            config.shapes.iter().any(|shape| shape.head_dim == 64
                && pick_form(shape, &forms, 132) == Form::ShortNonCausal),
            "no d64 shape of configs/sanitize.yaml runs NAME_short_noncausal on 132 SMs"
        );
        let cut = config
            .shapes
            .iter()
            .filter(|shape| shape.head_dim == 64)
            .any(|shape| {
                let form = forms.geometry(pick_form(shape, &forms, 132));
                launch_grid_x(shape, form, 132) != grid_x(shape, form.rows, form.fill, 132)
            });
        assert!(
            cut,
            "no d64 shape of configs/sanitize.yaml has its grid cut to one wave"
        );
        Ok(())
    }

    /// Each case's form as `pick_form` chooses it on 132 SMs (f16, `head_dim`); `label`
    /// names the forms in a failure.
    type PickCase = ((u32, u32, u32, bool), super::Form);
    fn assert_picks(forms: &super::Forms, head_dim: u32, label: &str, cases: &[PickCase]) {
        use crate::config::{Dtype, ShapeParams};
        for &((b, h, s, causal), want) in cases {
            let shape = ShapeParams::new(b, h, s, head_dim, causal, Dtype::Float16);
            assert_eq!(
                super::pick_form(&shape, forms, 132),
                want,
                "{label} [{b},{h},{s}] causal {causal}"
            );
        }
    }

    #[test]
    fn the_host_picks_long_noncausal_by_cost_then_long_then_small_then_main() {
        use super::Form;
        let hopper = hopper_d64();
        // The d64 shapes measured on an H200 (docs/KERNEL_LOG.md, seventh and eighth
        // sessions): the even split where its busiest SM costs less, the other form where
        // the costs tie or the other's is lower.
        let measured = [
            ((8, 16, 512, false), Form::LongNonCausal),
            ((4, 16, 1024, false), Form::LongNonCausal),
            ((2, 8, 1536, false), Form::LongNonCausal),
            ((2, 16, 1536, false), Form::LongNonCausal),
            ((4, 16, 2048, false), Form::LongNonCausal),
            ((1, 8, 16384, false), Form::LongNonCausal),
            ((4, 16, 512, false), Form::Main),
            ((4, 8, 1024, false), Form::Main),
            ((1, 16, 2048, false), Form::Long),
            ((1, 8, 2048, false), Form::Long),
            ((1, 4, 4096, false), Form::Long),
            // fewer passes but a second round of its CTAs on some SMs: [3,16,1024] and
            // [12,16,1280] (the even split was 4.5% and 11.3% slower), [6,16,512] (7.5%
            // faster) and [16,16,1024] (10.7% faster); [3,16,1024]'s even split now launches
            // one wave of 96 CTAs instead of 144 (launch_grid_x), NAME 192 instead of 288,
            // and the even split's 704 is the lower cost
            ((3, 16, 1024, false), Form::LongNonCausal),
            ((12, 16, 1280, false), Form::Main),
            ((6, 16, 512, false), Form::LongNonCausal),
            ((16, 16, 1024, false), Form::LongNonCausal),
            ((3, 16, 1536, false), Form::Long),
            // [3,16,1601]: the even split was 4.45% faster than NAME_long on grids that both
            // overfilled the wave (144 and 288 CTAs); cut to one wave (96 and 240) both
            // cost 1152 and the tie keeps NAME_long
            ((3, 16, 1601, false), Form::Long),
            // causal launches never take it; below its 512 keys neither
            ((8, 16, 512, true), Form::Main),
            ((4, 16, 2048, true), Form::Long),
            ((8, 16, 511, false), Form::Main),
            // NAME's one-tile grid under 132 CTAs: NAME_small (one pass; a tie)
            ((1, 8, 512, false), Form::Small),
            ((1, 8, 512, true), Form::Small),
        ];
        assert_picks(&hopper, 64, "hopper d64", &measured);
    }

    #[test]
    fn the_l4_d128_takes_its_split_form_from_256_to_319_keys_once_name_needs_a_second_cta() {
        use super::{Form, FormGeometry, Forms, SeqLens};
        // The L4's d128 forms: NAME {128 rows, one CTA per SM} (the mbarrier ring, 64-key
        // tiles), NAME_long_noncausal {128, two per SM} (the split 128 x 32 tile) from 256 to
        // 319 keys: there, once NAME's grid needs a second CTA on some SM; from 320 keys
        // NAME is as fast or faster (docs/KERNEL_LOG.md, twenty-fifth session).
        let one_tile = |ctas_per_sm| FormGeometry {
            rows: 128,
            fill: None,
            fill_or_one: false,
            tiles_at_once: 1,
            ctas_per_sm,
        };
        let ada = Forms {
            main: one_tile(1),
            small: None,
            long: None,
            long_noncausal: Some((one_tile(2), SeqLens { from: 256, to: 319 })),
            short_noncausal: None,
            causal: None,
        };
        let ada_cases = [
            ((16, 16, 256, false), Form::LongNonCausal),
            ((16, 16, 256, true), Form::Main),
            // three or five CTAs on the busiest SM: the split form's last runs alone (NAME
            // 15.8%, 18.5% and 10.9% faster; at five the cost alone would take the split form)
            ((12, 16, 256, false), Form::Main),
            ((8, 16, 319, false), Form::Main),
            ((20, 16, 256, false), Form::Main),
            // six: three full rounds of two
            ((24, 16, 256, false), Form::LongNonCausal),
            ((10, 16, 300, false), Form::LongNonCausal),
            ((8, 16, 320, false), Form::Main),
            ((8, 16, 384, false), Form::Main),
            ((8, 16, 448, false), Form::Main),
            ((2, 16, 4096, false), Form::Main),
            ((2, 16, 4096, true), Form::Main),
            ((8, 16, 255, false), Form::Main),
            ((1, 16, 1000, false), Form::Main),
            ((1, 132, 256, false), Form::LongNonCausal),
            ((1, 66, 256, false), Form::Main),
            ((1, 1, 255, false), Form::Main),
        ];
        assert_picks(&ada, 128, "ada", &ada_cases);
        // Without its _to the form has no end (the sixth to twenty-fourth sessions' rule).
        let open_ended = Forms {
            long_noncausal: Some((one_tile(2), SeqLens::from(256))),
            ..ada
        };
        let open_cases = [
            ((2, 16, 4096, false), Form::LongNonCausal),
            ((1, 1, 133 * 128, false), Form::LongNonCausal),
            ((1, 1, 132 * 128, false), Form::Main),
        ];
        assert_picks(&open_ended, 128, "ada, no _to", &open_cases);
    }

    #[test]
    fn without_the_long_forms_small_grids_take_name_small() {
        use super::{Form, FormGeometry, Forms, pick_form};
        use crate::config::{Dtype, ShapeParams};
        let hopper = hopper_d64();
        // Without the long forms: the small-grid rule on NAME's one-tile grid (132 CTAs is
        // not fewer than 132 SMs), and a zero row count from a hostile launch constant
        // does not divide by zero.
        let plain = Forms {
            long: None,
            long_noncausal: None,
            ..hopper
        };
        let no_small = Forms {
            small: None,
            ..plain
        };
        let zero_rows = Forms {
            main: FormGeometry {
                rows: 0,
                ..hopper.main
            },
            ..plain
        };
        let shape = |b, h, s| ShapeParams::new(b, h, s, 64, false, Dtype::Float16);
        assert_eq!(pick_form(&shape(1, 1, 132 * 64), &plain, 132), Form::Main);
        assert_eq!(pick_form(&shape(1, 1, 131 * 64), &plain, 132), Form::Small);
        assert_eq!(
            pick_form(&shape(1, 1, 131 * 64), &no_small, 132),
            Form::Main
        );
        assert_eq!(pick_form(&shape(1, 1, 7), &zero_rows, 132), Form::Small);
        // NAME_long takes either mask from its seq_len on, ahead of the small-grid rule.
        let long_only = Forms {
            long_noncausal: None,
            ..hopper
        };
        assert_eq!(pick_form(&shape(1, 1, 1536), &long_only, 132), Form::Long);
        assert_eq!(pick_form(&shape(1, 1, 1535), &long_only, 132), Form::Small);
    }

    /// The sm_90a d128 pair: NAME_long_noncausal on NAME's own grid (other key tiles). The
    /// costs always tie, so its from alone decides, for non-causal launches only; a tie of
    /// different geometries still keeps NAME (the d64 test above: [4,16,512]).
    #[test]
    fn the_host_takes_a_same_geometry_long_noncausal_by_its_from_alone() {
        use super::{Form, FormGeometry, Forms};
        let sub_tiled = FormGeometry {
            rows: 256,
            fill: None,
            fill_or_one: false,
            tiles_at_once: 1,
            ctas_per_sm: 1,
        };
        let hopper_d128 = Forms {
            main: sub_tiled,
            small: None,
            long: None,
            long_noncausal: Some((sub_tiled, super::SeqLens::from(1408))),
            short_noncausal: None,
            causal: None,
        };
        let cases = [
            ((2, 16, 4096, false), Form::LongNonCausal),
            ((2, 16, 4096, true), Form::Main),
            ((1, 1, 1408, false), Form::LongNonCausal),
            ((8, 16, 1407, false), Form::Main),
            ((8, 16, 512, false), Form::Main),
        ];
        assert_picks(&hopper_d128, 128, "hopper d128", &cases);
    }

    /// NAME_short_noncausal on the 26 non-causal d64 shapes measured with it as NAME on an
    /// H200 (docs/KERNEL_LOG.md, 2026-12-04, eighteenth session; Δ against the form main's
    /// rule picks): taken on six of the seven where it was faster (b3h16s640d64 by 0.8%; not
    /// [16,16,512], a tie), never where it was slower, never for a causal launch, never past
    /// its 640 keys.
    #[test]
    fn the_host_takes_short_noncausal_where_its_busiest_sm_costs_less() {
        use super::Form;
        use crate::config::{Dtype, ShapeParams};
        let f16 = |b, h, s| ShapeParams::new(b, h, s, 64, false, Dtype::Float16);
        let short = hopper_d64_short();
        let cases = [
            ((4, 16, 512, false), Form::ShortNonCausal), // −2.71% against NAME
            ((2, 32, 512, false), Form::ShortNonCausal), // −2.37%
            ((8, 16, 256, false), Form::ShortNonCausal), // −4.12%
            ((6, 8, 512, false), Form::ShortNonCausal),  // −14.45%
            ((6, 16, 512, false), Form::ShortNonCausal), // −11.97% against the even split
            ((3, 16, 640, false), Form::ShortNonCausal), // −0.83% against NAME
            // the costs tie (1408 and 704 rows): the even split kept, −1.54% and +6.99%
            ((16, 16, 512, false), Form::LongNonCausal),
            ((8, 16, 512, false), Form::LongNonCausal),
            // past 640 keys (+6.47%, +11.83%, +1.16%, +1.12%, +22.50% with it)
            ((2, 16, 768, false), Form::LongNonCausal),
            ((4, 16, 768, false), Form::LongNonCausal),
            ((2, 16, 1024, false), Form::Main),
            ((4, 8, 1024, false), Form::Main),
            ((2, 16, 1280, false), Form::LongNonCausal),
            // causal launches (+6.8 … +28.3% with it)
            ((4, 16, 512, true), Form::Main),
            ((8, 16, 512, true), Form::Main),
            ((2, 16, 1024, true), Form::Main),
            // NAME_small's grids: its one pass (128 rows) under the short form's (160)
            ((1, 8, 512, false), Form::Small),
            ((2, 8, 512, false), Form::Small),
        ];
        assert_picks(&short, 64, "hopper d64 with short", &cases);
        // Shapes the pass cost was not drawn from, measured with it (second call of the
        // eighteenth session, bench/issue40_device.sh short_check_config; Δ against main's
        // form): taken where one round holds all its CTAs (−14.7%, −14.6%, −8.4%) or a
        // second round has two or more (−22.2% at [10,16,256]: one, NAME's grid overfilled);
        // not after a full round with one lone CTA ([5,16,512]: +1.5% with it) nor where the
        // second round costs its tie ([12,16,256]: −14.2% missed).
        let unseen = [
            ((4, 16, 384, false), Form::ShortNonCausal),
            ((3, 16, 512, false), Form::ShortNonCausal),
            ((6, 8, 513, false), Form::ShortNonCausal),
            ((10, 16, 256, false), Form::ShortNonCausal),
            ((5, 16, 512, false), Form::Main),
            ((12, 16, 256, false), Form::Main),
            // the even split's one pass of three units (256) under its 288 and 352
            ((2, 16, 640, false), Form::LongNonCausal),
            ((1, 32, 640, false), Form::LongNonCausal),
            // NAME's three passes of two (576) under its 4 + 2 CTAs and a partial round
            ((8, 16, 384, false), Form::Main),
        ];
        assert_picks(&short, 64, "hopper d64 with short, unseen", &unseen);
        // A second round not full costs one more pass: [5,16,512] is 640 CTAs, five on the
        // busiest SM (4 + 1): 352 + 160 + 96 = 608 against NAME's 576.
        let b5 = f16(5, 16, 512);
        let (g, _) = short.short_noncausal.unwrap_or_else(|| unreachable!());
        assert!(super::partial_second_round(&b5, g, 132));
        assert!(!super::partial_second_round(&b5, g, 160));
        // hostile geometry and shapes (one-row tiles of u32::MAX rows on u32::MAX heads, no
        // SM) stay finite: no overflow, no division by zero
        let one_row = super::FormGeometry {
            rows: 1,
            fill: None,
            fill_or_one: false,
            tiles_at_once: 1,
            ctas_per_sm: 0,
        };
        let huge = f16(u32::MAX, u32::MAX, u32::MAX);
        // (a saturated count of CTAs held one at a time: whole rounds)
        assert!(!super::partial_second_round(&huge, one_row, 0));
        assert!(super::busiest_sm_cost(&huge, one_row, 96, 0) > 0);
        let hostile = super::Forms {
            short_noncausal: Some((one_row, u32::MAX)),
            ..short
        };
        assert_ne!(super::pick_form(&huge, &hostile, 0), Form::Small);
        // Without it every shape keeps main's choice.
        let without = hopper_d64();
        for &((b, h, s, causal), _) in &cases {
            let shape = ShapeParams::new(b, h, s, 64, causal, Dtype::Float16);
            assert_ne!(
                super::pick_form(&shape, &without, 132),
                Form::ShortNonCausal
            );
        }
        // Its pass costs 1.5 NAME tiles: at [4,16,512] 4 · 64 + 96 = 352 against NAME's
        // two passes of two, 2 · (128 + 64) = 384.
        let shape = f16(4, 16, 512);
        assert_eq!(super::busiest_sm_cost(&shape, g, 96, 132), 352);
        assert_eq!(super::busiest_sm_cost(&shape, short.main, 64, 132), 384);
    }

    /// The host's form rule and grid sizing on any shape and any launch constants a hostile
    /// source could declare (each already through kernels/entries.rs's ranges or not): no
    /// panic, no overflow, a grid of at least one CTA. Run in CI's debug build, where an
    /// overflowing multiply panics.
    #[test]
    fn the_form_rule_never_panics_on_hostile_shapes_or_constants() {
        use super::{FormGeometry, Forms, busiest_sm_cost, launch_grid_x, pick_form};
        use crate::config::{Dtype, ShapeParams};
        use proptest::prelude::*;
        let geometry = (
            any::<u32>(),
            proptest::option::of((any::<u32>(), any::<u32>())),
            any::<bool>(),
            any::<u32>(),
            any::<u32>(),
        )
            .prop_map(|(rows, fill, fill_or_one, tiles_at_once, ctas_per_sm)| {
                FormGeometry {
                    rows,
                    fill,
                    fill_or_one,
                    tiles_at_once,
                    ctas_per_sm,
                }
            });
        let forms = (
            geometry.clone(),
            proptest::option::of(geometry.clone()),
            proptest::option::of((geometry.clone(), any::<u32>())),
            proptest::option::of((geometry.clone(), any::<u32>(), any::<u32>())),
            proptest::option::of((geometry.clone(), any::<u32>())),
            proptest::option::of(geometry),
        )
            .prop_map(
                |(main, small, long, long_noncausal, short_noncausal, causal)| Forms {
                    main,
                    small,
                    long,
                    long_noncausal: long_noncausal
                        .map(|(g, from, to)| (g, super::SeqLens { from, to })),
                    short_noncausal,
                    causal,
                },
            );
        let shape = (any::<u32>(), any::<u32>(), any::<u32>(), any::<bool>())
            .prop_map(|(b, h, s, causal)| ShapeParams::new(b, h, s, 64, causal, Dtype::Float16));
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 4000,
            ..ProptestConfig::default()
        });
        runner
            .run(&(shape, forms, any::<u32>()), |(shape, forms, sms)| {
                let form = pick_form(&shape, &forms, sms);
                let g = forms.geometry(form);
                prop_assert!(launch_grid_x(&shape, g, sms) >= 1);
                let _ = busiest_sm_cost(&shape, g, u64::MAX, sms);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
