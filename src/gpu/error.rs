//! The GPU side's use of the backend's error ([`GpuError`], defined in `crate::gpu_error`):
//! CUDA driver errors with a description of the kernel, shape or step.

use cudarc::driver::DriverError;

pub use crate::gpu_error::GpuError;

/// Attaches a description (kernel, shape, step) to a CUDA driver error.
pub(crate) trait DriverContext<T> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T, GpuError>;
}

impl<T> DriverContext<T> for Result<T, DriverError> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T, GpuError> {
        self.map_err(|cause| GpuError::Driver {
            what: what(),
            cause,
        })
    }
}
