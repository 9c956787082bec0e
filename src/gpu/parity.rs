//! Parity: the kernel's output on fresh random inputs against the fp32 reference kernel,
//! with the output poisoned first so that unwritten elements are caught. The reference
//! computes from its own copies of the inputs, made after the kernel ran, and the kernel's
//! inputs must be unchanged by its launch (gpu::integrity).

use cudarc::driver::CudaSlice;

pub use super::buffers::POISON;
use super::buffers::{
    Inputs, check_shape, launch_on, poisoned_output, poisoned_with, random_inputs,
};
use super::device::Gpu;
use super::error::{DriverContext, GpuError};
use crate::config::{ShapeParams, Tolerance};
use crate::results::Parity;

/// Runs one attention kernel into `out` and waits for it, naming kernel and shape on failure.
pub(crate) fn run_kernel(
    gpu: &Gpu,
    kernel: &super::device::Kernel,
    shape: &ShapeParams,
    inputs: &Inputs,
    out: &mut CudaSlice<f32>,
) -> Result<(), GpuError> {
    launch_on(gpu, kernel, shape, inputs, out.slice_mut(..))?;
    gpu.sync(None, || format!("kernel {} on shape {shape}", kernel.name))
}

/// Compares `kernel` (the `side` kernel, "base" or "candidate", for this shape) with the
/// harness's reference kernel on fresh inputs from `seed`: the kernel runs first into an
/// output poisoned with a pattern drawn for this check; then the reference's own copies of
/// the inputs are made and it runs on them; the kernel's inputs must still hash as the
/// reference's copies did (else [`GpuError::Integrity`], naming the side).
pub fn check_parity(
    gpu: &Gpu,
    kernel: &super::device::Kernel,
    side: &str,
    shape: &ShapeParams,
    tolerance: Tolerance,
    seed: u64,
    expected: Option<std::time::Duration>,
) -> Result<Parity, GpuError> {
    check_shape(shape)?;
    let mut rng = gpu.run_key.rng(seed ^ 0x9a71_7e5e);
    let poison = super::integrity::poison_pattern(&mut rng);
    let inputs = random_inputs(gpu, shape, seed)?;
    let mut out = poisoned_with(gpu, shape, poison)?;
    launch_on(gpu, kernel, shape, &inputs, out.slice_mut(..))?;
    gpu.sync(expected, || {
        format!(
            "kernel {} of the {side} on shape {shape} (parity)",
            kernel.name
        )
    })?;
    // Only now, after the kernel finished: the reference's inputs and output.
    let refs = super::integrity::RefSet::new(gpu, shape, seed, gpu.run_key)?;
    if !refs.inputs_unchanged(gpu, &inputs)? {
        return Err(GpuError::Integrity(format!(
            "the {side} kernel {} changed its inputs (q, k or v) on shape {shape}",
            kernel.name
        )));
    }
    let got = gpu.read_back(&out, || format!("the output of {shape}"))?;
    let want = gpu.read_back(&refs.refs, || format!("the reference output of {shape}"))?;
    Ok(compare_outputs_with(&got, &want, tolerance, seed, poison))
}

/// Runs `kernel` once on fresh inputs from `seed` and, with `with_reference`, the harness's
/// reference kernel after it, waiting for each: what `ci-gate sanitize` runs under
/// compute-sanitizer and `--profile` under ncu. Nothing is compared.
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
    run_kernel(gpu, kernel, shape, &inputs, &mut out)
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
    let mut out = poisoned_output(gpu, shape)?;
    run_kernel(gpu, kernel, shape, &inputs, &mut out)?;
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
    )?;
    Ok((out, reference))
}

/// Which attention kernel to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The kernel under the gate (kernels/attention.cu).
    Fast,
    /// The fp32 reference (kernels/reference.cu).
    Reference,
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
    };
    run_kernel(gpu, kernel, shape, &inputs, &mut out)?;
    gpu.read_back(&out, || format!("the output of {shape}"))
}

/// Error metrics of `got` against `want` (host side, float64 accumulation). Non-finite and
/// unwritten elements (holding `poison`, [`POISON`] for a parity check's output) are counted,
/// and left out of the error norms so those stay numbers.
pub(crate) fn compare_outputs_with(
    got: &[f32],
    want: &[f32],
    tolerance: Tolerance,
    seed: u64,
    poison: u32,
) -> Parity {
    let (mut unwritten, mut nan_or_inf) = (0u64, 0u64);
    let (mut max_abs, mut diff2, mut ref2) = (0f64, 0f64, 0f64);
    if got.len() != want.len() {
        unwritten = want.len().abs_diff(got.len()) as u64;
    }
    for (&g, &w) in got.iter().zip(want) {
        if g.to_bits() == poison {
            unwritten += 1;
            continue;
        }
        if !g.is_finite() {
            nan_or_inf += 1;
            continue;
        }
        let d = f64::from(g) - f64::from(w);
        max_abs = max_abs.max(d.abs());
        diff2 += d * d;
        ref2 += f64::from(w) * f64::from(w);
    }
    Parity {
        max_abs,
        rel_l2: if ref2 > 0.0 {
            (diff2 / ref2).sqrt()
        } else {
            diff2.sqrt()
        },
        nan_or_inf,
        unwritten,
        tolerance,
        seed,
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
        };
        let want = [1.0f32, 2.0, 3.0, 4.0];
        let got = [1.0f32, f32::from_bits(POISON), f32::NAN, 4.5];
        let p = compare_outputs_with(&got, &want, tol, 7, POISON);
        assert_eq!((p.unwritten, p.nan_or_inf), (1, 1));
        assert_eq!(p.max_abs, 0.5);
        assert!(!p.passed());
        assert!(f32::from_bits(POISON).is_nan());
        let p = compare_outputs_with(&want, &want, tol, 7, POISON);
        assert!(p.passed() && p.rel_l2 == 0.0);
    }
}
