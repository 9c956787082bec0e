//! Device buffers of one launch: the inputs (Q, K, V from a seed), poisoned outputs, and the
//! launch of an attention kernel on them (the ABI of kernels/README.md).

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};

use super::device::Gpu;
use super::error::{DriverContext, GpuError};
use crate::config::ShapeParams;
use crate::ffi::{self, AttentionArgs};

/// A quiet NaN with a payload no arithmetic produces: an element that still holds it was
/// never written. Used where nothing is compared (tools, tests); parity and every timed
/// launch use a pattern drawn at random each time instead (gpu::integrity::poison_pattern),
/// so a kernel cannot tell a checked launch by looking for this one.
pub const POISON: u32 = 0xFFC0_1DEA;

/// Q, K, V of one shape on the device.
pub(crate) struct Inputs {
    pub q: CudaSlice<u16>,
    pub k: CudaSlice<u16>,
    pub v: CudaSlice<u16>,
}

/// Checks that the launch grid of `shape` fits the device's limits.
pub(crate) fn check_shape(shape: &ShapeParams) -> Result<(), GpuError> {
    if shape.batch as u64 * shape.heads as u64 > 65_535 {
        return Err(GpuError::Shape {
            shape: shape.name(),
            why: format!(
                "batch × heads = {} exceeds the 65535 blocks a grid's y dimension holds",
                shape.batch as u64 * shape.heads as u64
            ),
        });
    }
    Ok(())
}

/// One of the three inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tensor {
    Q,
    K,
    V,
}

/// The seed `fill_input_*` fills `tensor` of the input set of `seed` from (one stream of
/// values per tensor): the sides' inputs and the reference's own copies use this one rule.
pub(crate) fn input_seed(seed: u64, tensor: Tensor) -> u64 {
    let salt = match tensor {
        Tensor::Q => 0,
        Tensor::K => 1,
        Tensor::V => 2,
    };
    seed.wrapping_mul(3).wrapping_add(salt)
}

impl Tensor {
    /// Its role in the input mixture (kernels/util.cu).
    pub(crate) fn role(self) -> super::mixture::Role {
        match self {
            Tensor::Q => super::mixture::Role::Q,
            Tensor::K => super::mixture::Role::K,
            Tensor::V => super::mixture::Role::V,
        }
    }

    /// How `fill_input_*` lays this tensor of `shape` out.
    pub(crate) fn layout(self, shape: &ShapeParams) -> ffi::InputLayout {
        ffi::InputLayout {
            role: self.role() as i32,
            seq_len: shape.seq_len,
            head_dim: shape.head_dim,
        }
    }
}

/// Q, K, V from `seed` (one stream of values per tensor), each drawn from the input mixture
/// (kernels/util.cu, "The input mixture": a class of its own per (batch, head) slice).
pub(crate) fn random_inputs(gpu: &Gpu, shape: &ShapeParams, seed: u64) -> Result<Inputs, GpuError> {
    let n = shape.elements();
    let fill = gpu.kernels.fill_input(shape.dtype);
    let make = |tensor: Tensor| -> Result<CudaSlice<u16>, GpuError> {
        ffi::alloc_input(
            &gpu.stream,
            fill,
            n,
            input_seed(seed, tensor),
            tensor.layout(shape),
        )
        .during(|| format!("allocating and filling inputs of {shape}"))
    };
    Ok(Inputs {
        q: make(Tensor::Q)?,
        k: make(Tensor::K)?,
        v: make(Tensor::V)?,
    })
}

/// The scales s_V of the V slices of the input set of `seed`, one per (batch, head): what a
/// parity error on that slice is measured in (gpu::mixture).
pub(crate) fn v_scales(shape: &ShapeParams, seed: u64) -> Vec<f32> {
    super::mixture::v_scales(
        input_seed(seed, Tensor::V),
        (shape.batch * shape.heads) as usize,
    )
}

/// A softmax scale for one launch: 1/√head_dim times a factor in [0.8, 1.25], log-uniform,
/// drawn from `rng`. Every launch the gate makes -- timed, parity, probes, warm-up, spin-up,
/// sanitize and ncu -- draws its scale this way, so that none can tell from its scale
/// whether it is timed, checked or watched by a tool (issue 36).
pub(crate) fn draw_scale(shape: &ShapeParams, rng: &mut impl rand::Rng) -> f32 {
    use rand::RngExt;
    shape.scale() * rng.random_range(0.8f32.ln()..=1.25f32.ln()).exp()
}

/// An output buffer poisoned with [`POISON`].
pub(crate) fn poisoned_output(gpu: &Gpu, shape: &ShapeParams) -> Result<CudaSlice<f32>, GpuError> {
    poisoned_with(gpu, shape, POISON)
}

pub(crate) fn poisoned_with(
    gpu: &Gpu,
    shape: &ShapeParams,
    poison: u32,
) -> Result<CudaSlice<f32>, GpuError> {
    ffi::alloc_filled(&gpu.stream, &gpu.kernels.fill_u32, shape.elements(), poison)
        .during(|| format!("allocating the output of {shape}"))
}

/// Queues one attention kernel on `inputs` into `out` (the launch contract of
/// kernels/README.md) with softmax scale `scale` ([`draw_scale`]), naming kernel and shape
/// on failure.
pub(crate) fn launch_on(
    gpu: &Gpu,
    kernel: &super::device::Kernel,
    shape: &ShapeParams,
    inputs: &Inputs,
    out: CudaViewMut<'_, f32>,
    scale: f32,
) -> Result<(), GpuError> {
    let operands = Operands {
        q: inputs.q.as_view(),
        k: inputs.k.as_view(),
        v: inputs.v.as_view(),
        scale,
    };
    launch_with(gpu, kernel, shape, operands, out)
}

/// What one launch computes on: its q, k and v and its softmax scale.
pub(crate) struct Operands<'a> {
    pub q: CudaView<'a, u16>,
    pub k: CudaView<'a, u16>,
    pub v: CudaView<'a, u16>,
    pub scale: f32,
}

/// Queues one attention kernel on `operands` into `out`, naming kernel and shape on failure.
pub(crate) fn launch_with(
    gpu: &Gpu,
    kernel: &super::device::Kernel,
    shape: &ShapeParams,
    operands: Operands<'_>,
    out: CudaViewMut<'_, f32>,
) -> Result<(), GpuError> {
    ffi::launch_attention(
        &gpu.stream,
        &kernel.func,
        kernel.config(shape),
        AttentionArgs {
            q: operands.q,
            k: operands.k,
            v: operands.v,
            out,
            seq_len: shape.seq_len as i32,
            head_dim: shape.head_dim as i32,
            scale: operands.scale,
            causal: i32::from(shape.causal),
            tma: kernel.tma,
        },
    )
    .during(|| format!("launching {} on shape {shape}", kernel.name))
}
