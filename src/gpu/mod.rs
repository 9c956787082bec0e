//! The GPU side (cudarc): NVRTC compilation with a cache, parity against the reference
//! kernel, timing, and the NVML fingerprint. All `unsafe` is in [`raw`].

pub mod compile;
pub mod device;
pub mod env;
pub mod error;
pub mod measure;
pub mod parity;
mod raw;

pub use compile::{Arch, KernelSource};
pub use device::Gpu;
pub use error::GpuError;
