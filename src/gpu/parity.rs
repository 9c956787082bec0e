//! Parity: the kernel's output on fresh random inputs against the fp32 reference kernel,
//! with the output poisoned first so that unwritten elements are caught. The reference
//! computes from its own copies of the inputs, made after the kernel ran, and the kernel's
//! inputs must be unchanged by its launch (gpu::integrity).

use std::time::Instant;

use cudarc::driver::CudaSlice;

pub use super::buffers::POISON;
use super::buffers::{
    Inputs, check_shape, draw_scale, launch_on, poisoned_output, poisoned_with, random_inputs,
    v_scales,
};
use super::device::Gpu;
use super::error::{DriverContext, GpuError};
use crate::backend::spans;
use crate::config::{ShapeParams, Tolerance};
use crate::results::Parity;

/// Runs one attention kernel into `out` with softmax scale `scale` and waits for it, naming
/// kernel and shape on failure.
pub(crate) fn run_kernel(
    gpu: &Gpu,
    kernel: &super::device::Kernel,
    shape: &ShapeParams,
    inputs: &Inputs,
    out: &mut CudaSlice<f32>,
    scale: f32,
) -> Result<(), GpuError> {
    launch_on(gpu, kernel, shape, inputs, out.slice_mut(..), scale)?;
    gpu.sync(None, || format!("kernel {} on shape {shape}", kernel.name))
}

/// The reference output of the last parity check, kept (in host memory, out of every
/// launch's reach) for the other side of the same shape: the base and the candidate are
/// checked on the same inputs (the shape's seed) at the same scale, so one fp32 reference
/// over every row serves both, and the second side pays only its own launch and the
/// comparison. Keyed by everything the reference depends on: the shape, the seed, the scale
/// and the run's key.
#[derive(Default)]
pub struct ParityReferences {
    last: Option<(ShapeParams, u64, u32, super::integrity::RefSet)>,
}

/// Compares `kernel` (the `side` kernel, "base" or "candidate", for this shape) with the
/// harness's reference kernel on fresh inputs from `seed`, drawn from the input mixture, at
/// a softmax scale drawn as a timed launch's is: the kernel runs first into an output
/// poisoned with a pattern drawn for this check; then the reference's own copies of the
/// inputs are made and it runs on them; the kernel's inputs must still hash as the
/// reference's copies did (else [`GpuError::Integrity`], naming the side). `max_abs` is the
/// largest |out − ref| over s_V of the element's V slice.
pub fn check_parity(
    gpu: &Gpu,
    kernel: &super::device::Kernel,
    side: &str,
    shape: &ShapeParams,
    tolerance: Tolerance,
    seed: u64,
    expected: Option<std::time::Duration>,
) -> Result<Parity, GpuError> {
    check_parity_with(
        gpu,
        kernel,
        side,
        shape,
        (tolerance, seed, expected),
        &mut ParityReferences::default(),
    )
}

/// [`check_parity`], with the reference taken from `references` where the last check there
/// was of the same shape, seed and scale (the other side of the shape), and left there for
/// the next.
pub(crate) fn check_parity_with(
    gpu: &Gpu,
    kernel: &super::device::Kernel,
    side: &str,
    shape: &ShapeParams,
    (tolerance, seed, expected): (Tolerance, u64, Option<std::time::Duration>),
    references: &mut ParityReferences,
) -> Result<Parity, GpuError> {
    check_shape(shape)?;
    let mut rng = gpu.run_key.rng(seed ^ 0x9a71_7e5e);
    let poison = super::integrity::poison_pattern(&mut rng);
    let scale = draw_scale(shape, &mut rng);
    let t = Instant::now();
    let inputs = random_inputs(gpu, shape, seed)?;
    let mut out = poisoned_with(gpu, shape, poison)?;
    spans::add("parity.inputs", t);
    let t = Instant::now();
    launch_on(gpu, kernel, shape, &inputs, out.slice_mut(..), scale)?;
    gpu.sync(expected, || {
        format!(
            "kernel {} of the {side} on shape {shape} (parity)",
            kernel.name
        )
    })?;
    spans::add("parity.launch", t);
    // Only now, after the kernel finished: the reference's inputs and output (or those the
    // other side's check made from the same seed, before this kernel existed on the device).
    let refs = match references.last.take() {
        Some((s, sd, sc, refs)) if s == *shape && sd == seed && sc == scale.to_bits() => refs,
        _ => spans::time("parity.reference", || {
            super::integrity::RefSet::new(gpu, shape, seed, gpu.run_key, scale)
        })?,
    };
    let t = Instant::now();
    if !refs.inputs_unchanged(gpu, &inputs)? {
        return Err(GpuError::Integrity(format!(
            "the {side} kernel {} changed its inputs (q, k or v) on shape {shape}",
            kernel.name
        )));
    }
    let got = gpu.read_back(&out, || format!("the output of {shape}"))?;
    spans::add("parity.read_back", t);
    let scales = OutputScales {
        per_slice: v_scales(shape, seed),
        slice_len: shape.seq_len as usize * shape.head_dim as usize,
        uniform: &refs.uniform,
    };
    let parity = spans::time("parity.compare", || {
        compare_outputs_with(&got, &refs.refs, tolerance, seed, poison, &scales)
    });
    references.last = Some((*shape, seed, scale.to_bits(), refs));
    Ok(parity)
}

/// Runs `kernel` once on fresh inputs from `seed` and, with `with_reference`, the harness's
/// reference kernel after it, waiting for each: what `ci-gate sanitize` runs under
/// compute-sanitizer and `--profile` under ncu. Nothing is compared. The inputs come from
/// the input mixture and the scale is drawn as a timed launch's is, so that a kernel cannot
/// tell a tool's launch from a timed one.
pub(crate) fn run_once(
    gpu: &Gpu,
    kernel: &super::device::Kernel,
    shape: &ShapeParams,
    seed: u64,
    with_reference: bool,
) -> Result<(), GpuError> {
    if with_reference {
        run_with_reference(gpu, kernel, shape, seed)?;
        return Ok(());
    }
    check_shape(shape)?;
    let inputs = random_inputs(gpu, shape, seed)?;
    let mut out = poisoned_output(gpu, shape)?;
    run_kernel(
        gpu,
        kernel,
        shape,
        &inputs,
        &mut out,
        tool_scale(shape, seed),
    )
}

/// The scale of a tool's launch of `shape` on inputs from `seed` (drawn as a timed
/// launch's; the same for the kernel and the reference after it).
fn tool_scale(shape: &ShapeParams, seed: u64) -> f32 {
    use rand::SeedableRng;
    draw_scale(
        shape,
        &mut rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x7001_5ca1),
    )
}

/// Runs `kernel`, then the harness's reference kernel, on the same fresh inputs from `seed`,
/// each into a poisoned output, waiting for each: (kernel's output, reference's output).
fn run_with_reference(
    gpu: &Gpu,
    kernel: &super::device::Kernel,
    shape: &ShapeParams,
    seed: u64,
) -> Result<(CudaSlice<f32>, CudaSlice<f32>), GpuError> {
    check_shape(shape)?;
    let inputs = random_inputs(gpu, shape, seed)?;
    let scale = tool_scale(shape, seed);
    let mut out = poisoned_output(gpu, shape)?;
    run_kernel(gpu, kernel, shape, &inputs, &mut out, scale)?;
    // Only now: while the kernel runs, nothing may be allocated right after its output.
    // compute-sanitizer sees only accesses outside every live allocation, so a write past
    // the end of `out` that landed in `reference` went unreported (the planted bug in
    // tests/sanitize/oob showed it).
    let mut reference = poisoned_output(gpu, shape)?;
    run_kernel(
        gpu,
        gpu.kernels.reference(shape.dtype)?,
        shape,
        &inputs,
        &mut reference,
        scale,
    )?;
    Ok((out, reference))
}

/// One tensor of `shape` filled on the device from the input mixture (`fill_input_*`, the
/// fill every launch's inputs come from) with `seed`, read back as bits: the GPU tests hold
/// it against the host's mirror (gpu::mixture).
pub fn mixture_on_device(
    gpu: &Gpu,
    shape: &ShapeParams,
    role: super::mixture::Role,
    seed: u64,
) -> Result<Vec<u16>, GpuError> {
    check_shape(shape)?;
    let layout = crate::ffi::InputLayout {
        role: role as i32,
        seq_len: shape.seq_len,
        head_dim: shape.head_dim,
    };
    let buf = crate::ffi::alloc_input(
        &gpu.stream,
        gpu.kernels.fill_input(shape.dtype),
        shape.elements(),
        seed,
        layout,
    )
    .during(|| format!("filling a {role:?} of {shape} from the input mixture"))?;
    gpu.read_back(&buf, || format!("a {role:?} of {shape}"))
}

/// Which attention kernel to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The kernel under the gate (kernels/attention.cu).
    Fast,
    /// The fp32 reference (kernels/reference.cu), one row per CTA.
    Reference,
    /// The same reference tiled over every row (what parity checks against).
    TiledReference,
}

/// Runs one attention kernel on inputs given as 16-bit patterns on the host and returns its
/// fp32 output, poisoned first (tests use this with the golden files and random inputs).
pub fn attention_on_host(
    gpu: &Gpu,
    which: Which,
    shape: &ShapeParams,
    q: &[u16],
    k: &[u16],
    v: &[u16],
) -> Result<Vec<f32>, GpuError> {
    check_shape(shape)?;
    let n = shape.elements();
    if q.len() != n || k.len() != n || v.len() != n {
        return Err(GpuError::Internal(format!(
            "shape {shape} needs {n} elements per input, got {}, {} and {}",
            q.len(),
            k.len(),
            v.len()
        )));
    }
    let upload = |x: &[u16]| {
        gpu.stream
            .clone_htod(x)
            .during(|| format!("copying inputs of {shape}"))
    };
    let inputs = Inputs {
        q: upload(q)?,
        k: upload(k)?,
        v: upload(v)?,
    };
    let mut out = poisoned_output(gpu, shape)?;
    let kernel = match which {
        Which::Fast => gpu.kernels.attention(shape)?,
        Which::Reference => gpu.kernels.reference(shape.dtype)?,
        Which::TiledReference => gpu.kernels.reference_full(shape.dtype)?,
    };
    // The golden files (PyTorch) were made with the default scale, 1/√head_dim.
    run_kernel(gpu, kernel, shape, &inputs, &mut out, shape.scale())?;
    gpu.read_back(&out, || format!("the output of {shape}"))
}

/// What errors are measured in: s_V of each (batch, head) slice of the output, whose
/// elements come `slice_len` at a time (seq_len · head_dim), and the output of uniform
/// attention on the same V (`reference::uniform_attention`, the output's layout), which
/// the centered error is measured from; empty: no centered error.
pub(crate) struct OutputScales<'a> {
    pub per_slice: Vec<f32>,
    pub slice_len: usize,
    pub uniform: &'a [f32],
}

impl OutputScales<'_> {
    /// Every slice in units of 1, no centered error.
    #[cfg(test)]
    pub(crate) fn unit() -> OutputScales<'static> {
        OutputScales {
            per_slice: Vec::new(),
            slice_len: usize::MAX,
            uniform: &[],
        }
    }

    /// The scale of V slice `slice` (1 past the listed ones).
    fn of_slice(&self, slice: usize) -> f64 {
        self.per_slice.get(slice).map_or(1.0, |&s| f64::from(s))
    }
}

/// Error metrics of `got` against `want` (host side, float64 accumulation): `max_abs` is
/// the largest |got − want| / s_V of the element's V slice (`scales`), the relative L2 error
/// is over all elements. Non-finite and unwritten elements (holding `poison`, [`POISON`] for
/// a parity check's output) are counted, and left out of the error norms so those stay
/// numbers.
///
/// Cost: one pass over both outputs, V slice by V slice (one division per slice, not per
/// element), split over up to 8 threads for outputs past 4 Mi elements: the long shapes'
/// outputs are 8–17 Mi elements, and the comparison ran on one core for 90 ms each.
pub(crate) fn compare_outputs_with(
    got: &[f32],
    want: &[f32],
    tolerance: Tolerance,
    seed: u64,
    poison: u32,
    scales: &OutputScales,
) -> Parity {
    let slice_len = scales.slice_len.max(1);
    let n = got.len().min(want.len());
    let slices = n.div_ceil(slice_len).max(1);
    let threads = if n < (4 << 20) {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |p| p.get())
            .min(8)
            .min(slices)
    };
    let per_thread = slices.div_ceil(threads);
    let part = |first: usize| {
        let mut e = ErrorSums::default();
        for slice in first..(first + per_thread).min(slices) {
            let range = slice * slice_len..((slice + 1) * slice_len).min(n);
            e.add_slice(
                &got[range.clone()],
                &want[range.clone()],
                scales.uniform.get(range),
                poison,
                scales.of_slice(slice),
            );
        }
        e
    };
    let mut sums = if threads == 1 {
        part(0)
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| scope.spawn(move || part(t * per_thread)))
                .collect();
            handles
                .into_iter()
                .fold(ErrorSums::default(), |acc, h| match h.join() {
                    Ok(e) => acc.merge(e),
                    Err(p) => std::panic::resume_unwind(p),
                })
        })
    };
    sums.unwritten += want.len().abs_diff(got.len()) as u64;
    Parity {
        max_abs: sums.max_abs,
        rel_l2: if sums.ref2 > 0.0 {
            (sums.diff2 / sums.ref2).sqrt()
        } else {
            sums.diff2.sqrt()
        },
        // None where no slice had rows enough to measure it in: nothing was computed.
        centered: (sums.centered_slices > 0).then_some(sums.centered),
        nan_or_inf: sums.nan_or_inf,
        unwritten: sums.unwritten,
        tolerance,
        seed,
    }
}

/// What [`compare_outputs_with`] sums over a part of the output.
#[derive(Default)]
struct ErrorSums {
    unwritten: u64,
    nan_or_inf: u64,
    max_abs: f64,
    diff2: f64,
    ref2: f64,
    /// The largest slice's ‖got − want‖ / ‖want − uniform‖ so far, and how many slices had
    /// a part that depends on q to measure it in.
    centered: f64,
    centered_slices: u64,
}

impl ErrorSums {
    /// Adds one V slice (or a part of one), whose errors are measured in `scale`, and, with
    /// `uniform` (the slice of uniform attention's output), its centered error.
    fn add_slice(
        &mut self,
        got: &[f32],
        want: &[f32],
        uniform: Option<&[f32]>,
        poison: u32,
        scale: f64,
    ) {
        let mut largest = 0f64;
        let (mut diff2, mut ref2) = (0f64, 0f64);
        // Over the elements of rows that see enough keys (uniform is NaN elsewhere).
        let (mut centered_diff2, mut signal2) = (0f64, 0f64);
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            if g.to_bits() == poison {
                self.unwritten += 1;
                continue;
            }
            if !g.is_finite() {
                self.nan_or_inf += 1;
                continue;
            }
            let d = f64::from(g) - f64::from(w);
            largest = largest.max(d.abs());
            diff2 += d * d;
            ref2 += f64::from(w) * f64::from(w);
            if let Some(&u) = uniform.and_then(|u| u.get(i))
                && u.is_finite()
            {
                let s = f64::from(w) - f64::from(u);
                signal2 += s * s;
                centered_diff2 += d * d;
            }
        }
        // Dividing the largest error by the slice's positive scale is the largest quotient.
        self.max_abs = self.max_abs.max(largest / scale);
        self.diff2 += diff2;
        self.ref2 += ref2;
        // A slice whose reference is uniform attention to the last bits (one key a row, a
        // single row) has no part that depends on q to measure in: it is judged by the
        // other figures alone. An error there is still an error (max_abs, rel_l2).
        if signal2 > 1e-12 * ref2 && signal2 > 0.0 {
            self.centered = self.centered.max((centered_diff2 / signal2).sqrt());
            self.centered_slices += 1;
        }
    }

    fn merge(self, o: ErrorSums) -> ErrorSums {
        ErrorSums {
            unwritten: self.unwritten + o.unwritten,
            nan_or_inf: self.nan_or_inf + o.nan_or_inf,
            max_abs: self.max_abs.max(o.max_abs),
            diff2: self.diff2 + o.diff2,
            ref2: self.ref2 + o.ref2,
            centered: self.centered.max(o.centered),
            centered_slices: self.centered_slices + o.centered_slices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poison_is_counted_apart_from_nan() {
        let tol = Tolerance {
            max_abs: 1e-2,
            rel_l2: 1e-3,
            centered: None,
        };
        let want = [1.0f32, 2.0, 3.0, 4.0];
        let got = [1.0f32, f32::from_bits(POISON), f32::NAN, 4.5];
        let unit = OutputScales::unit();
        let p = compare_outputs_with(&got, &want, tol, 7, POISON, &unit);
        assert_eq!((p.unwritten, p.nan_or_inf), (1, 1));
        assert_eq!(p.max_abs, 0.5);
        assert!(!p.passed());
        assert!(f32::from_bits(POISON).is_nan());
        let p = compare_outputs_with(&want, &want, tol, 7, POISON, &unit);
        assert!(p.passed() && p.rel_l2 == 0.0);
    }

    #[test]
    fn the_largest_error_is_measured_in_its_v_slices_scale() {
        let tol = Tolerance {
            max_abs: 1e-2,
            rel_l2: 1e-1,
            centered: None,
        };
        // Two slices of two elements: V of scale 1, then V of scale 10.
        let scales = OutputScales {
            per_slice: vec![1.0, 10.0],
            slice_len: 2,
            uniform: &[],
        };
        let want = [1.0f32, 1.0, 10.0, 10.0];
        // 0.05 off on the second slice is 0.005 of its scale: within 1e-2.
        let got = [1.0f32, 1.0, 10.05, 10.0];
        let p = compare_outputs_with(&got, &want, tol, 1, POISON, &scales);
        assert!((p.max_abs - 0.005).abs() < 1e-6, "{}", p.max_abs);
        assert!(p.passed());
        // The same 0.05 on the first slice is 5% of its scale: a failure.
        let got = [1.05f32, 1.0, 10.0, 10.0];
        let p = compare_outputs_with(&got, &want, tol, 1, POISON, &scales);
        assert!((p.max_abs - 0.05).abs() < 1e-6, "{}", p.max_abs);
        assert!(!p.passed());
    }

    /// The centered error is the error over the part of the output that depends on q: an
    /// output that ignores q (here the mean the reference sits on, as a kernel that
    /// recognised near-ties would return) is off by all of that part, however small it is
    /// next to the output, and fails; max_abs and rel_l2 alone pass it.
    #[test]
    fn an_output_that_ignores_q_fails_by_the_centered_error_alone() {
        let tol = Tolerance {
            max_abs: 1e-2,
            rel_l2: 1e-3,
            centered: Some(2e-2),
        };
        // One slice of 64 rows × 2 channels on a mean of 5, the rows 1e-3 apart.
        let (rows, d) = (64usize, 2usize);
        let want: Vec<f32> = (0..rows * d)
            .map(|i| 5.0 + 1e-3 * ((i / d) as f32 - 32.0) / 32.0)
            .collect();
        let uniform = vec![5.0f32; rows * d];
        let scales = OutputScales {
            per_slice: vec![1.0],
            slice_len: rows * d,
            uniform: &uniform,
        };
        let ignores_q = vec![5.0f32; rows * d];
        let p = compare_outputs_with(&ignores_q, &want, tol, 1, POISON, &scales);
        assert!(p.max_abs <= tol.max_abs && p.rel_l2 <= tol.rel_l2, "{p:?}");
        let c = p.centered.expect("computed");
        assert!((c - 1.0).abs() < 1e-3, "{c}");
        assert!(!p.passed() && !p.centered_passed());
        // Rounding-sized errors on the same rows pass: 1% of the part that depends on q.
        let honest: Vec<f32> = want
            .iter()
            .zip(&uniform)
            .map(|(w, u)| w + 0.01 * (w - u))
            .collect();
        let p = compare_outputs_with(&honest, &want, tol, 1, POISON, &scales);
        assert!(p.passed(), "{p:?}");
        // Rows too short to count (uniform attention left NaN): nothing is measured, and
        // the figure says so.
        let unmeasured = vec![f32::NAN; rows * d];
        let short = OutputScales {
            per_slice: vec![1.0],
            slice_len: rows * d,
            uniform: &unmeasured,
        };
        let p = compare_outputs_with(&ignores_q, &want, tol, 1, POISON, &short);
        assert_eq!(p.centered, None);
        // Without a uniform baseline nothing is centered, and the same output passes.
        let p = compare_outputs_with(&ignores_q, &want, tol, 1, POISON, &OutputScales::unit());
        assert_eq!(p.centered, None);
        assert!(p.passed());
    }

    /// Rounds to fp16's 11 significant bits (normal range), as P is before P V.
    fn round_fp16(x: f64) -> f64 {
        if x == 0.0 {
            return 0.0;
        }
        let q = 2f64.powi(x.abs().log2().floor() as i32 - 10);
        (x / q).round() * q
    }

    /// Attention on one [s, d] slice with each weight rounded to fp16 before P V and the sum
    /// from the unrounded weights (a kernel's l): an honest kernel's rounding.
    fn honest_fp16_p(
        q: &[f64],
        k: &[f64],
        v: &[f64],
        (s, d): (usize, usize),
        scale: f64,
        causal: bool,
    ) -> Vec<f32> {
        let mut out = vec![0f32; s * d];
        for i in 0..s {
            let seen = if causal { i + 1 } else { s };
            let sc: Vec<f64> = (0..seen)
                .map(|j| scale * (0..d).map(|c| q[i * d + c] * k[j * d + c]).sum::<f64>())
                .collect();
            let m = sc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let w: Vec<f64> = sc.iter().map(|x| (x - m).exp()).collect();
            let l: f64 = w.iter().sum();
            for c in 0..d {
                let o: f64 = (0..seen).map(|j| round_fp16(w[j]) * v[j * d + c]).sum();
                out[i * d + c] = (o / l) as f32;
            }
        }
        out
    }

    /// Each row's mean of the V rows it sees, every row (uniform attention, q unread).
    fn prefix_means(v: &[f64], (s, d): (usize, usize), causal: bool) -> Vec<f32> {
        (0..s * d)
            .map(|i| {
                let seen = if causal { i / d + 1 } else { s };
                ((0..seen).map(|j| v[j * d + i % d]).sum::<f64>() / seen as f64) as f32
            })
            .collect()
    }

    /// Attention linearised in q around uniform attention, non-causal: v̄ + scale · q M with
    /// the one d × d matrix M = (K − k̄)ᵀ (V − v̄) / s.
    fn linearised(q: &[f64], k: &[f64], v: &[f64], (s, d): (usize, usize), scale: f64) -> Vec<f32> {
        let mean = |t: &[f64], c: usize| (0..s).map(|j| t[j * d + c]).sum::<f64>() / s as f64;
        let kb: Vec<f64> = (0..d).map(|c| mean(k, c)).collect();
        let vb: Vec<f64> = (0..d).map(|c| mean(v, c)).collect();
        let mut mtx = vec![0f64; d * d];
        for j in 0..s {
            for a in 0..d {
                for b in 0..d {
                    mtx[a * d + b] += (k[j * d + a] - kb[a]) * (v[j * d + b] - vb[b]) / s as f64;
                }
            }
        }
        (0..s * d)
            .map(|i| {
                let (row, b) = (i / d, i % d);
                let qm: f64 = (0..d).map(|a| q[row * d + a] * mtx[a * d + b]).sum();
                (vb[b] + scale * qm) as f32
            })
            .collect()
    }

    /// On the input mixture as the device fills it (the host's mirror), every cheaper
    /// function that a class could make close to attention (uniform attention; attention
    /// linearised in q; V's first row, a sink that took all the weight) fails parity under
    /// the default tolerance on every key class, and attention with P rounded to fp16 (an
    /// honest kernel's rounding) passes. `bench/mixture_study.py --check` holds the same on
    /// every class combination and longer rows.
    #[test]
    fn no_cheaper_function_passes_parity_on_any_key_class_of_the_mixture() {
        use crate::gpu::mixture::{Role, class, fill_key, head_hash, value};
        use crate::reference::{Problem, attention, uniform_attention};
        let (s, d) = (256usize, 64usize);
        let tol = crate::config::ParitySettings::default().tolerance(crate::config::Dtype::Float16);
        let mut checked = 0;
        for kc in 0..4 {
            for (qc, vc) in [(0, 0), (3, 1), (1, 2)] {
                for causal in [false, true] {
                    // A seed whose slice 0 draws these classes.
                    let seed_for = |role: Role, want: usize| {
                        (1u64..)
                            .find(|&sd| class(role, head_hash(fill_key(sd), role, 0)) == want)
                            .unwrap()
                    };
                    let draw = |role: Role, c: usize| -> Vec<f64> {
                        let key = fill_key(seed_for(role, c));
                        (0..(s * d) as u64)
                            .map(|i| {
                                let x = value(key, role, i, s as u32, d as u32);
                                f64::from(round_fp16(f64::from(x)) as f32)
                            })
                            .collect()
                    };
                    let (q, k, v) = (draw(Role::Q, qc), draw(Role::K, kc), draw(Role::V, vc));
                    let scale = 1.0 / (d as f64).sqrt();
                    let p = Problem {
                        batch_heads: 1,
                        seq_len: s,
                        head_dim: d,
                        scale,
                        causal,
                    };
                    let want: Vec<f32> =
                        attention(&q, &k, &v, p).iter().map(|&x| x as f32).collect();
                    let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
                    let unif = uniform_attention(&v32, s, d, causal);
                    let s_v = crate::gpu::mixture::v_scale(fill_key(seed_for(Role::V, vc)), 0);
                    let scales = OutputScales {
                        per_slice: vec![s_v],
                        slice_len: s * d,
                        uniform: &unif,
                    };
                    let judge =
                        |got: &[f32]| compare_outputs_with(got, &want, tol, 1, POISON, &scales);
                    let what = format!("k class {kc}, q {qc}, v {vc}, causal {causal}");
                    let honest = honest_fp16_p(&q, &k, &v, (s, d), scale, causal);
                    let h = judge(&honest);
                    assert!(h.passed(), "honest fails on {what}: {h:?}");
                    // Uniform attention itself: ignores q.
                    let mean = prefix_means(&v, (s, d), causal);
                    let r = judge(&mean);
                    assert!(!r.passed(), "uniform attention passes on {what}: {r:?}");
                    // V's first row everywhere.
                    let first: Vec<f32> = (0..s * d).map(|i| v[i % d] as f32).collect();
                    let r = judge(&first);
                    assert!(!r.passed(), "V's first row passes on {what}: {r:?}");
                    // Linear in q around uniform attention (non-causal: one D × D matrix).
                    if !causal {
                        let lin = linearised(&q, &k, &v, (s, d), scale);
                        let r = judge(&lin);
                        assert!(!r.passed(), "linearised attention passes on {what}: {r:?}");
                    }
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 24);
    }

    /// The threaded comparison of a long output (past 4 Mi elements, ragged last slice,
    /// findings in several threads' parts) against the plain per-element definition.
    #[test]
    fn a_long_output_is_compared_as_element_by_element() {
        let tol = Tolerance {
            max_abs: 1e-2,
            rel_l2: 1e-3,
            centered: None,
        };
        let (n, slice_len) = (5_000_003usize, 300_007usize);
        let slices = n.div_ceil(slice_len);
        let scales = OutputScales {
            per_slice: (0..slices).map(|i| 1.0 + i as f32 * 0.5).collect(),
            slice_len,
            uniform: &[],
        };
        let want: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1013) as f32 * 1e-2).collect();
        let mut got: Vec<f32> = want
            .iter()
            .enumerate()
            .map(|(i, w)| w + ((i % 17) as f32 - 8.0) * 1e-5)
            .collect();
        for i in [3, 1_200_000, 4_999_999] {
            got[i] = f32::from_bits(POISON);
        }
        for i in [17, 2_500_000] {
            got[i] = f32::INFINITY;
        }
        got[3_700_001] += 0.25;
        let (mut max_abs, mut diff2, mut ref2) = (0f64, 0f64, 0f64);
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            if g.to_bits() == POISON || !g.is_finite() {
                continue;
            }
            let d = f64::from(g) - f64::from(w);
            max_abs = max_abs.max(d.abs() / f64::from(scales.per_slice[i / slice_len]));
            diff2 += d * d;
            ref2 += f64::from(w) * f64::from(w);
        }
        let p = compare_outputs_with(&got, &want, tol, 3, POISON, &scales);
        assert_eq!((p.unwritten, p.nan_or_inf), (3, 2));
        assert_eq!(p.max_abs, max_abs);
        let rel = (diff2 / ref2).sqrt();
        assert!(
            (p.rel_l2 - rel).abs() <= 1e-9 * rel,
            "{} vs {rel}",
            p.rel_l2
        );
        // A shorter output: the missing elements count as unwritten.
        let p = compare_outputs_with(&got[..n - 10], &want, tol, 3, POISON, &scales);
        assert_eq!(p.unwritten, 3 - 1 + 10);
    }
}
