//! The GPU side (cudarc): NVRTC compilation with a cache, parity against the reference
//! kernel, timing, and the NVML fingerprint. All `unsafe` is in [`raw`].

pub mod compile;
pub mod cubin;
pub mod device;
pub mod diagnostics;
pub mod env;
pub mod error;
pub mod lexcheck;
pub mod measure;
pub mod parity;
mod raw;
pub mod sandbox;

pub use compile::{Arch, KernelSource};
pub use device::Gpu;
pub use error::GpuError;

/// Whether a CUDA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    raw::driver_present()
}

/// Whether NVRTC can be loaded on this machine.
pub fn nvrtc_present() -> bool {
    raw::nvrtc_present()
}
