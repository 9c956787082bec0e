//! Validated measurement containers: [`Sample`] (one set of values) and [`Rounds`] (values
//! measured in several rounds), plus the descriptive [`Summary`].

use serde::{Deserialize, Serialize};

use super::StatsError;
use super::quantile::{mean, median_sorted, quantile_sorted, stdev};

/// A set of at least 2 finite values (no NaN, no ±inf), checked once at construction so
/// that every statistic downstream can assume clean data.
///
/// The values are kept in their original order and also sorted ascending (the sort is paid
/// once, in [`Sample::new`]); order statistics are then O(1).
#[derive(Clone, Debug)]
pub struct Sample {
    values: Vec<f64>,
    sorted: Vec<f64>,
}

impl Sample {
    /// Validates `values` and sorts a copy of them.
    ///
    /// Errors: [`StatsError::TooFew`] for fewer than 2 values, [`StatsError::NonFinite`]
    /// naming the first NaN/infinite value and its index.
    ///
    /// Cost: O(n log n) time (one sort), O(n) extra memory.
    pub fn new(values: Vec<f64>) -> Result<Sample, StatsError> {
        if values.len() < 2 {
            return Err(StatsError::TooFew { n: values.len() });
        }
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(StatsError::NonFinite { index, value });
        }
        let mut sorted = values.clone();
        sorted.sort_unstable_by(f64::total_cmp);
        Ok(Sample { values, sorted })
    }

    /// The values in their original order. Cost: O(1).
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The values in ascending order. Cost: O(1) (sorted at construction).
    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }

    /// Number of values (always ≥ 2, so there is no `is_empty`). Cost: O(1).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Median exactly as `numpy.median`: the middle order statistic for odd `n`, the mean
    /// `(a + b) / 2` of the two middle ones for even `n`. Cost: O(1).
    pub fn median(&self) -> f64 {
        median_sorted(&self.sorted)
    }

    /// Quantile with numpy's default method (`numpy.quantile(x, q)`, method `"linear"`,
    /// Hyndman & Fan type 7): linear interpolation at virtual index `(n − 1)·q` of the
    /// sorted values. `q` outside `[0, 1]` is clamped to it; a NaN `q` returns NaN.
    /// Cost: O(1).
    pub fn quantile(&self, q: f64) -> f64 {
        quantile_sorted(&self.sorted, q)
    }

    /// Arithmetic mean (compensated summation). Cost: O(n).
    pub(crate) fn mean(&self) -> f64 {
        mean(&self.values)
    }

    /// Minimum value. Cost: O(1).
    pub fn min(&self) -> f64 {
        self.sorted[0]
    }

    /// Maximum value. Cost: O(1).
    pub fn max(&self) -> f64 {
        self.sorted[self.sorted.len() - 1]
    }

    /// All descriptive statistics at once: `n`, median (`p50`), 0.9-quantile (`p90`, numpy
    /// `"linear"`), mean, min, max and the `ddof = 1` standard deviation. Cost: O(n).
    pub fn summary(&self) -> Summary {
        let mean = self.mean();
        Summary {
            n: self.len(),
            p50: self.median(),
            p90: self.quantile(0.9),
            mean,
            min: self.min(),
            max: self.max(),
            stdev: stdev(&self.values, mean),
        }
    }
}

/// Descriptive statistics of a [`Sample`], as produced by [`Sample::summary`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Median (numpy.median).
    pub p50: f64,
    /// 0.9-quantile (numpy.quantile, method "linear").
    pub p90: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sample standard deviation, `ddof = 1`.
    pub stdev: f64,
}

/// A measurement taken in rounds (each round with fresh buffers, so that round-to-round
/// drift is visible). Every round holds at least 1 value, all rounds together at least 2,
/// and every value is finite — checked once at construction.
///
/// The pooled values of all rounds are kept as a ready-made [`Sample`].
#[derive(Clone, Debug)]
pub struct Rounds {
    rounds: Vec<Vec<f64>>,
    pooled: Sample,
}

impl Rounds {
    /// Validates the rounds and pools them.
    ///
    /// Errors, checked in this order: [`StatsError::EmptyRound`] for the first empty
    /// round, [`StatsError::NonFiniteInRound`] for the first NaN/infinite value (with its
    /// round and index inside the round), [`StatsError::TooFew`] when there are fewer than
    /// 2 values in total (including no rounds at all).
    ///
    /// Cost: O(N log N) time and O(N) extra memory for N values in total (pooling + sort).
    pub fn new(rounds: Vec<Vec<f64>>) -> Result<Rounds, StatsError> {
        for (r, round) in rounds.iter().enumerate() {
            if round.is_empty() {
                return Err(StatsError::EmptyRound { round: r });
            }
            if let Some((index, &value)) = round.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(StatsError::NonFiniteInRound {
                    round: r,
                    index,
                    value,
                });
            }
        }
        let pooled: Vec<f64> = rounds.iter().flatten().copied().collect();
        let pooled = Sample::new(pooled)?;
        Ok(Rounds { rounds, pooled })
    }

    /// A measurement of a single round holding all of `sample`'s values. Cannot fail.
    /// Cost: O(n) (one copy of the values).
    pub fn single(sample: Sample) -> Rounds {
        Rounds {
            rounds: vec![sample.values().to_vec()],
            pooled: sample,
        }
    }

    /// The rounds, in input order, each with its values in input order. Cost: O(1).
    pub fn rounds(&self) -> &[Vec<f64>] {
        &self.rounds
    }

    /// Number of rounds (≥ 1). Cost: O(1).
    pub fn round_count(&self) -> usize {
        self.rounds.len()
    }

    /// All values of all rounds, as one sample (concatenated in round order). Cost: O(1).
    pub fn pooled(&self) -> &Sample {
        &self.pooled
    }

    /// The rounds, given back (validated). Cost: O(1).
    pub(crate) fn into_rounds(self) -> Vec<Vec<f64>> {
        self.rounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_rejects_too_few() {
        assert_eq!(
            Sample::new(vec![]).unwrap_err(),
            StatsError::TooFew { n: 0 }
        );
        assert_eq!(
            Sample::new(vec![1.0]).unwrap_err(),
            StatsError::TooFew { n: 1 }
        );
        assert!(Sample::new(vec![1.0, 2.0]).is_ok());
    }

    #[test]
    fn sample_rejects_non_finite_naming_the_index() {
        match Sample::new(vec![1.0, 2.0, f64::NAN, 4.0]).unwrap_err() {
            StatsError::NonFinite { index, value } => {
                assert_eq!(index, 2);
                assert!(value.is_nan());
            }
            e => panic!("wrong error {e:?}"),
        }
        assert_eq!(
            Sample::new(vec![1.0, f64::INFINITY]).unwrap_err(),
            StatsError::NonFinite {
                index: 1,
                value: f64::INFINITY
            }
        );
        assert_eq!(
            Sample::new(vec![f64::NEG_INFINITY, 0.0, 3.0]).unwrap_err(),
            StatsError::NonFinite {
                index: 0,
                value: f64::NEG_INFINITY
            }
        );
        let msg = Sample::new(vec![0.0, 1.0, 2.0, f64::NAN])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("index 3"), "{msg}");
    }

    #[test]
    fn sample_keeps_order_and_sorts() {
        let s = Sample::new(vec![3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!(s.values(), &[3.0, 1.0, 2.0, 10.0]);
        assert_eq!(s.sorted(), &[1.0, 2.0, 3.0, 10.0]);
        assert_eq!(s.len(), 4);
        assert_eq!(s.median(), 2.5);
        assert_eq!(s.min(), 1.0);
        assert_eq!(s.max(), 10.0);
    }

    #[test]
    fn summary_fields() {
        let s = Sample::new(vec![5.0, 1.0, 4.0, 2.0, 3.0]).unwrap();
        let sum = s.summary();
        assert_eq!(sum.n, 5);
        assert_eq!(sum.p50, 3.0);
        assert!((sum.p90 - 4.6).abs() < 1e-12);
        assert_eq!(sum.mean, 3.0);
        assert_eq!(sum.min, 1.0);
        assert_eq!(sum.max, 5.0);
        assert!((sum.stdev - 2.5_f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn rounds_reject_empty_round() {
        assert_eq!(
            Rounds::new(vec![vec![1.0, 2.0], vec![], vec![3.0]]).unwrap_err(),
            StatsError::EmptyRound { round: 1 }
        );
    }

    #[test]
    fn rounds_reject_too_few_and_non_finite() {
        assert_eq!(
            Rounds::new(vec![]).unwrap_err(),
            StatsError::TooFew { n: 0 }
        );
        assert_eq!(
            Rounds::new(vec![vec![1.0]]).unwrap_err(),
            StatsError::TooFew { n: 1 }
        );
        assert_eq!(
            Rounds::new(vec![vec![1.0], vec![2.0, f64::INFINITY]]).unwrap_err(),
            StatsError::NonFiniteInRound {
                round: 1,
                index: 1,
                value: f64::INFINITY
            }
        );
        // Two rounds of one value each are enough.
        let r = Rounds::new(vec![vec![1.0], vec![2.0]]).unwrap();
        assert_eq!(r.round_count(), 2);
        assert_eq!(r.pooled().values(), &[1.0, 2.0]);
    }

    #[test]
    fn rounds_pool_in_order_and_single_wraps() {
        let r = Rounds::new(vec![vec![3.0, 1.0], vec![2.0]]).unwrap();
        assert_eq!(r.pooled().values(), &[3.0, 1.0, 2.0]);
        assert_eq!(r.pooled().median(), 2.0);
        assert_eq!(r.rounds(), &[vec![3.0, 1.0], vec![2.0]]);

        let s = Sample::new(vec![4.0, 5.0, 6.0]).unwrap();
        let single = Rounds::single(s);
        assert_eq!(single.round_count(), 1);
        assert_eq!(single.rounds(), &[vec![4.0, 5.0, 6.0]]);
        assert_eq!(single.pooled().median(), 5.0);
    }
}
