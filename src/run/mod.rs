//! The engine: one measuring run from its description to its published results.

pub(crate) mod child;
pub(crate) mod devices;
pub(crate) mod git;
pub(crate) mod peer;
pub mod pipeline;
pub(crate) mod prepare;
pub(crate) mod profile;
pub(crate) mod publish;
pub(crate) mod request;
pub mod sharing;
pub(crate) mod tool;
pub(crate) mod untrusted;
