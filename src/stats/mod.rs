//! Statistics for comparing two timing samples: a baseline and a candidate.
//!
//! * [`Sample`] / [`Rounds`] — validated inputs (≥ 2 finite values; rounds non-empty),
//!   checked once so nothing downstream needs to re-check or can panic.
//! * [`Sample::median`], [`Sample::quantile`], [`Sample::summary`] — descriptive statistics
//!   reproducing numpy (`median`, `quantile(method="linear")`, `mean`, `std(ddof=1)`).
//! * [`ratio_of_medians_bootstrap`] (and [`ratio_of_medians_ci`]) — seeded percentile
//!   bootstrap of `median(cand) / median(base)`, optionally widened by a between-process
//!   spread; hierarchical (rounds, then values) for multi-round data. The gate's decision for
//!   sample files of i.i.d. values.
//! * [`pooled_p50_pairs_bootstrap`] — pairs-resampled bootstrap of the pooled p50 ratio of
//!   A/B rounds (shown beside the paired test's interval; it decides nothing).
//! * [`mann_whitney_u`] — one-sided Mann–Whitney U test, same `u` and `p` as
//!   `scipy.stats.mannwhitneyu`.
//! * [`LogShift`] — the Hodges–Lehmann shift of two samples on the log scale with its exact
//!   Mann–Whitney bounds: the decision for sample files of fewer than 30 i.i.d. values a
//!   side, where a bootstrap of the median under-covers.
//! * [`cliffs_delta`] and [`Magnitude`] — effect size in O(n + m) on sorted samples.
//! * [`binomial_interval`] — the exact (Clopper–Pearson) interval of a proportion of flagged
//!   comparisons, as scipy's `binomtest(...).proportion_ci(method="exact")`.
//! * [`holm`] — Holm step-down adjustment (not used by the rule; the calibration shows its
//!   cost).
//! * [`paired_margin_test`], [`unpaired_margin_test`], [`process_spread`], [`two_stage_p`] —
//!   the gate's tests, on rounds (the independent units): Yuen's 20%-trimmed-mean t, see
//!   `margin`; [`trimmed`] its building block.
//!
//! `tests/it/stats_vs_scipy.rs`, `tests/it/rounds_vs_scipy.rs` and `tests/it/trimmed_vs_scipy.rs`
//! check all of these against numpy/scipy/statsmodels output stored in `tests/vectors/`
//! (each JSON file is written by the Python script of the same stem there).

#![warn(missing_docs)]

mod binomial;
mod bootstrap;
mod cliff;
mod error;
mod holm;
mod mann_whitney;
mod margin;
mod quantile;
mod sample;
mod shift;

pub use binomial::binomial_interval;
pub use bootstrap::{
    Interval, RatioDistribution, pooled_p50_ratio_of_pairs, ratio_of_medians,
    ratio_of_medians_bootstrap, ratio_of_medians_ci,
};
pub(crate) use bootstrap::{
    PAIRS_BOOTSTRAP_BUDGET, PAIRS_BOOTSTRAP_MIN_RESAMPLES, pooled_p50_pairs_bootstrap,
};
pub use cliff::{Magnitude, cliffs_delta};
pub use error::StatsError;
pub use holm::holm;
pub use mann_whitney::{Alternative, MannWhitney, PMethod, mann_whitney_u};
pub use margin::Trimmed;
pub use margin::{
    MarginTest, ProcessSpread, SETTLED_LEVEL, STAGE1_ALPHA_SHARE, TRIM, median, paired_margin_test,
    paired_margin_test_trimmed, process_spread, process_spread_trimmed, round_medians, trimmed,
    two_stage_p, unpaired_margin_test, unpaired_margin_test_trimmed,
};
pub(crate) use margin::{is_process_split, t_quantile};
pub use sample::{Rounds, Sample, Summary};
pub use shift::LogShift;
pub(crate) use shift::MAX_SHIFT_PAIRS;
