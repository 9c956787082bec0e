//! Device buffers of one launch: the inputs (Q, K, V from a seed), poisoned outputs, and the
//! launch of an attention kernel on them (the ABI of kernels/README.md).

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};

use super::device::Gpu;
use super::error::{DriverContext, GpuError};
use super::raw::{self, AttentionArgs};
use crate::config::ShapeParams;

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

/// The seed `fill_normal_*` fills `tensor` of the input set of `seed` from (one stream of
/// values per tensor): the sides' inputs and the reference's own copies use this one rule.
pub(crate) fn input_seed(seed: u64, tensor: Tensor) -> u64 {
    let salt = match tensor {
        Tensor::Q => 0,
        Tensor::K => 1,
        Tensor::V => 2,
    };
    seed.wrapping_mul(3).wrapping_add(salt)
}

/// Standard-normal Q, K, V from `seed` (one stream of values per tensor).
pub(crate) fn random_inputs(gpu: &Gpu, shape: &ShapeParams, seed: u64) -> Result<Inputs, GpuError> {
    let n = shape.elements();
    let fill = gpu.kernels.fill_normal(shape.dtype);
    let make = |tensor: Tensor| -> Result<CudaSlice<u16>, GpuError> {
        raw::alloc_normal(&gpu.stream, fill, n, input_seed(seed, tensor))
            .during(|| format!("allocating and filling inputs of {shape}"))
    };
    Ok(Inputs {
        q: make(Tensor::Q)?,
        k: make(Tensor::K)?,
        v: make(Tensor::V)?,
    })
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
    raw::alloc_filled(&gpu.stream, &gpu.kernels.fill_u32, shape.elements(), poison)
        .during(|| format!("allocating the output of {shape}"))
}

/// Queues one attention kernel on `inputs` into `out` (the launch contract of
/// kernels/README.md) with the shape's own scale, 1/√head_dim, naming kernel and shape on
/// failure.
pub(crate) fn launch_on(
    gpu: &Gpu,
    kernel: &super::device::Kernel,
    shape: &ShapeParams,
    inputs: &Inputs,
    out: CudaViewMut<'_, f32>,
) -> Result<(), GpuError> {
    let operands = Operands {
        q: inputs.q.as_view(),
        k: inputs.k.as_view(),
        v: inputs.v.as_view(),
        scale: shape.scale(),
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
    raw::launch_attention(
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
