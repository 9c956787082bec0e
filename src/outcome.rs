//! How a command that ran to the end came out: [`Outcome`], the exit code 0 or 1 (errors,
//! exit 2, travel as `Err`). Every command returns one; this module imports nothing.

/// How a command that ran to the end came out. Errors (exit 2) travel as `Err`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0.
    Pass,
    /// Exit 1: a regression, a parity loss, or a refused baseline update.
    Fail,
}

impl Outcome {
    pub(crate) fn from_passed(passed: bool) -> Outcome {
        if passed { Outcome::Pass } else { Outcome::Fail }
    }
}
