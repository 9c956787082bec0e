//! The kernel-source boundary: everything between a kernel directory and a module a device
//! may load, for the GPU (`gpu`) and the simulated GPU (`sim`) alike. A kernel source is
//! attacker text (docs/DESIGN.md, "The kernel is an adversary"), so every way in is here:
//!
//! - [`source`]: a kernel directory and its file names ([`KernelDir`]), which directory is
//!   loaded with the harness and which is the candidate ([`KernelRoles`]), and one source read
//!   as untrusted input ([`KernelSource`]: no links, bounded, UTF-8);
//! - [`lexcheck`]: no include form of any spelling reaches the compiler;
//! - [`sandbox`] and [`compile`]: NVRTC in a confined child process that reads nothing of the
//!   runner, with a cache; [`diagnostics`]: only the source's own diagnostics are published;
//! - [`cubin`] (the module policy: no writable device memory, malloc, printf or assert in the
//!   timed kernel), [`entries`] (the entry points and launch constants the GPU harness
//!   reads) and [`ptxas`] (what the compiler gave each kernel).
//!
//! It does not import `gpu`: the sandboxed compiler's NVRTC and process calls are foreign
//! functions, in `crate::ffi` with every `unsafe` call of the crate.

pub mod compile;
pub mod cubin;
pub(crate) mod diagnostics;
pub(crate) mod entries;
pub mod lexcheck;
pub(crate) mod ptxas;
pub mod sandbox;
pub mod source;

pub use compile::Arch;
pub use source::{KernelDir, KernelRoles, KernelSource, TIMED_FILE};
pub(crate) use source::{REFERENCE_FILE, UTIL_FILE};
