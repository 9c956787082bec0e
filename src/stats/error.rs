//! The one error type of the statistics module.
//!
//! Named `error` as `gpu::error` is: each layer keeps its own error beside its code, so
//! `stats` never imports the backend's (`crate::gpu_error`).

/// Why a [`Sample`](super::Sample), [`Rounds`](super::Rounds) or a statistic could not be
/// built from its inputs.
///
/// Every variant names the offending position or value, so a caller can report *which*
/// measurement was bad without re-scanning the data.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// Fewer than two values in total (a sample of 0 or 1 values has no spread).
    #[error("need at least 2 values, got {n}")]
    TooFew {
        /// How many values there were.
        n: usize,
    },
    /// A value of a [`Sample`](super::Sample) is NaN or infinite.
    #[error("value at index {index} is not finite: {value}")]
    NonFinite {
        /// Position of the value in the input vector.
        index: usize,
        /// The value itself (NaN, +inf or -inf).
        value: f64,
    },
    /// A value of a [`Rounds`](super::Rounds) is NaN or infinite.
    #[error("value at index {index} of round {round} is not finite: {value}")]
    NonFiniteInRound {
        /// Position of the round in the input.
        round: usize,
        /// Position of the value inside that round.
        index: usize,
        /// The value itself (NaN, +inf or -inf).
        value: f64,
    },
    /// A round of a [`Rounds`](super::Rounds) holds no value.
    #[error("round {round} is empty")]
    EmptyRound {
        /// Position of the empty round in the input.
        round: usize,
    },
    /// A confidence level outside the open interval (0, 1) (or NaN).
    #[error("confidence must lie strictly between 0 and 1, got {confidence}")]
    InvalidConfidence {
        /// The rejected confidence level.
        confidence: f64,
    },
    /// A bootstrap asked for zero resamples.
    #[error("the bootstrap needs at least 1 resample")]
    NoResamples,
    /// A paired comparison of sides with different numbers of rounds.
    #[error(
        "a paired comparison needs as many base rounds as candidate rounds, got {base} and {cand}"
    )]
    Unpaired {
        /// Rounds of the base.
        base: usize,
        /// Rounds of the candidate.
        cand: usize,
    },
    /// Fewer than two rounds (or pairs): no spread between independent units.
    #[error("need at least 2 rounds, got {n}")]
    TooFewRounds {
        /// How many rounds there were.
        n: usize,
    },
    /// Two samples whose pairwise differences would be too many to build.
    #[error("{n} pairs of values, more than the {max} an exact Hodges–Lehmann bound builds")]
    TooManyPairs {
        /// Values of one side times values of the other.
        n: usize,
        /// The most that are built.
        max: usize,
    },
    /// A round's median is zero or negative, so it has no logarithm.
    #[error("round {round} has median {value}; times must be positive")]
    NotPositive {
        /// Position of the round.
        round: usize,
        /// Its median.
        value: f64,
    },
}
