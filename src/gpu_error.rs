//! The measuring backend's error: what any [`crate::backend::Backend`] (the GPU or the
//! simulation) returns, each one sentence that names the kernel, shape or file involved.
//! Callers decide on [`GpuError::Integrity`] (the kernel's fault: a parity failure of the
//! side it names) and [`GpuError::Budget`] (the run ends without a verdict); every other
//! variant is a measuring error, shown as it is. Below both `backend` (which re-exports it)
//! and `kernel` (whose compiling and checks return it), so neither imports the other for it.

use std::path::PathBuf;

use cudarc::driver::DriverError;

#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error(
        "no NVIDIA driver found (libcuda.so could not be loaded): this command needs a CUDA GPU (ci-gate compare works without one)"
    )]
    NoDriver,
    #[error("no CUDA GPU is usable: {0}")]
    NoDevice(String),
    #[error(
        "NVRTC could not be loaded (libnvrtc.so): install the CUDA toolkit, or `pip install nvidia-cuda-nvrtc` and add its lib directory to LD_LIBRARY_PATH"
    )]
    NoNvrtc,
    #[error("cannot read kernel source {path}: {cause}")]
    Source {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{file} does not compile for {arch} with NVRTC:\n{log}")]
    Compile {
        file: String,
        arch: String,
        log: String,
    },
    /// A kernel source or its compiled module refused by a defence against hostile kernels
    /// (a link, an oversized file, an include, writable device memory, …): one sentence
    /// naming the file and the line or symbol.
    #[error("{0}")]
    Refused(String),
    /// The sandboxed NVRTC process failed (could not start, timed out, crashed): one
    /// sentence naming the file.
    #[error("{0}")]
    Sandbox(String),
    #[error("{what}: {cause}")]
    Driver { what: String, cause: DriverError },
    /// A kernel source or module that does not keep the contract of `kernels/README.md`
    /// (its launch constants, entry points, symbols), or a simulated kernel's directives:
    /// one sentence naming the file.
    #[error("{0}")]
    Kernel(String),
    /// The kernel sets have no kernel for a shape (its dtype and head_dim).
    #[error("{0}")]
    Unsupported(String),
    /// A shape this device cannot measure as configured (too large for its grid or memory, a
    /// cold cache that does not exceed its L2).
    #[error("shape {shape}: {why}")]
    Shape { shape: String, why: String },
    /// The gate's own measuring broke an invariant (or its trusted reference kernel
    /// misbehaved): a fault of ci-gate, never of the kernel under test.
    #[error("{0}")]
    Internal(String),
    /// A CUDA error a simulated kernel asks for (`ci-gate-sim: error=…`).
    #[error("{0}")]
    Simulated(String),
    /// A side whose kernels were never loaded ([`crate::backend::Side::Other`] before
    /// `load_other`).
    #[error("no {side} kernels are loaded")]
    NotLoaded { side: &'static str },
    /// A shape asked for after [`crate::backend::Measure::end`] (or never begun).
    #[error("{what} of a shape that was ended")]
    Ended { what: &'static str },
    /// The backend asked for what the way it was begun rules out (a pair of one side, an
    /// injection without its calibration): a fault of the caller, never of the kernel.
    #[error("{0}")]
    Misuse(&'static str),
    /// The kernel under test did not do, every time, the work it was checked to do (it
    /// changed its inputs, skipped or faked timed launches, wrote outside its output): a
    /// parity failure of the side it names, not a measuring error.
    #[error("{0}")]
    Integrity(String),
    /// The run's GPU-time budget (`measure.gpu_budget_s`) is spent: the run ends here
    /// without a verdict (exit 2), naming the shape and the side that spent it.
    #[error("{0}")]
    Budget(String),
}
