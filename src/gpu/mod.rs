//! The GPU side (cudarc): NVRTC compilation with a cache, parity against the reference
//! kernel, timing, and the NVML fingerprint. All `unsafe` is in [`raw`].

pub(crate) mod buffers;
pub mod compile;
pub mod cubin;
pub(crate) mod cuda_backend;
pub mod device;
pub(crate) mod diagnostics;
mod energy_windows;
pub(crate) mod entries;
pub(crate) mod env;
pub(crate) mod error;
pub mod integrity;
pub(crate) mod lexcheck;
pub mod lock;
pub mod measure;
pub mod mixture;
pub mod parity;
pub(crate) mod ptxas;
// The one module allowed `unsafe`: the CUDA driver's C interface.
#[allow(unsafe_code)]
mod raw;
pub mod sandbox;
mod secret;
pub(crate) mod watchdog;

pub use compile::{Arch, KernelSource};
pub use device::Gpu;
pub use error::GpuError;

/// Whether a CUDA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    raw::driver_present()
}

/// Writes out what the C library holds in its stdout buffer: the CUDA driver prints kernels'
/// `printf` output through it, so where it is left buffered it could appear only at exit.
pub(crate) fn flush_kernel_output() {
    raw::flush_c_stdio();
}

/// Whether NVRTC can be loaded on this machine.
pub fn nvrtc_present() -> bool {
    raw::nvrtc_present()
}
