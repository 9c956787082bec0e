//! The GPU side (cudarc): the device and its kernels (compiled through `crate::kernel`),
//! parity against the reference kernel, timing, energy windows, and the NVML fingerprint.
//! Every `unsafe` call it makes is in `crate::ffi`.

pub(crate) mod buffers;
pub(crate) mod cuda_backend;
pub mod device;
mod energy_windows;
pub(crate) mod env;
pub(crate) mod error;
pub mod integrity;
pub mod lock;
pub mod measure;
pub mod mixture;
pub mod parity;
mod secret;
pub(crate) mod watchdog;

use crate::ffi;

pub use device::Gpu;
pub use error::GpuError;

/// Whether a CUDA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    ffi::driver_present()
}

/// Writes out what the C library holds in its stdout buffer: the CUDA driver prints kernels'
/// `printf` output through it, so where it is left buffered it could appear only at exit.
pub(crate) fn flush_kernel_output() {
    ffi::flush_c_stdio();
}

/// Whether NVRTC can be loaded on this machine.
pub fn nvrtc_present() -> bool {
    ffi::nvrtc_present()
}
