//! `ci-gate eval`: an evaluator for optimisation loops (docs/EVAL.md). Candidates come in as
//! JSON lines (an id, an `attention.cu` path or its source, defines), one JSON line goes out
//! per candidate (`protocol`, schema `docs/eval-v1.schema.json`): its verdict and, per shape,
//! the ratio to the reference with the bounds the rule used, p50s, TFLOP/s, parity, and where
//! its time went.
//!
//! - `protocol`: the input line checked, the output line;
//! - `source`: a candidate's text (its defines before its source) and its compile ahead;
//! - `startup`: the config, devices, base, leaderboard and reference, settled once;
//! - `coordinator`: the reader, the compilers (CPU), one worker per GPU, the writer;
//! - `worker`: one candidate's measuring process (`eval-worker`, the gate's own pipeline in a
//!   fresh process and CUDA context), started and read back;
//! - `judge`: a candidate's verdict from the gate's shape verdicts, and the seeds' rule;
//! - `leaderboard`: the accepted candidates, the best last.
//!
//! In the layers of `lib.rs` it sits with `run` (the engine it drives): it imports `run`,
//! `gpu` and `sim`; nothing below imports it.

#[cfg(test)]
mod calibration;
pub(crate) mod coordinator;
pub mod judge;
pub mod leaderboard;
pub mod protocol;
pub(crate) mod source;
pub(crate) mod startup;
pub(crate) mod worker;

pub(crate) use coordinator::serve;
