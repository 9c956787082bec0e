//! The noise model of simulated timings, one for the simulated GPU ([`super::SimBackend`])
//! and the calibration of the gate (`tests/it/calibration.rs`): both draw their rounds from
//! [`Noise`], so the calibration measures the rule on the noise the simulation produces.
//!
//! Every sd is of the log time. A process measures with a shift of its own (sd
//! `process_sd`; it cancels in A/B pairs and is what a stored baseline's between-process
//! spread carries); within the process a random walk drifts (sd `drift_sd` per pair, shared
//! by the two rounds of a pair), and each pair may share a fresh level (`pair_sd`); each
//! round has a heavy-tailed shift of its own (Student t with `round_df` degrees of freedom,
//! scaled to sd `round_sd`) and is throttled, 3–8% slower, with probability `throttled`;
//! within a round the samples are Student t with `within_df` degrees of freedom scaled to sd
//! `within_sd`, and a share `outliers` of them 5–30% slow. An infinite `df` is the normal
//! law.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal, StudentT};

/// The noise of simulated timings; every sd is of the log time (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseModel {
    /// Shared by everything one process measures (cancels in A/B pairs).
    pub process_sd: f64,
    /// A random walk within the process, per pair (shared by the two rounds of a pair).
    pub drift_sd: f64,
    /// A level shared by the two rounds of a pair, drawn afresh for each pair.
    pub pair_sd: f64,
    /// Each round's own shift: Student t with `round_df` degrees of freedom.
    pub round_sd: f64,
    pub round_df: f64,
    /// Within a round: Student t with `within_df` degrees of freedom.
    pub within_sd: f64,
    pub within_df: f64,
    /// Share of samples 5–30% slow.
    pub outliers: f64,
    /// Share of rounds (per side) 3–8% slow.
    pub throttled: f64,
}

impl NoiseModel {
    /// The model of issue 19: what the simulated GPU measures with, and the first model of
    /// `tests/it/calibration.rs`.
    pub const ISSUE: NoiseModel = NoiseModel {
        process_sd: 0.003,
        drift_sd: 0.001,
        pair_sd: 0.0,
        round_sd: 0.002,
        round_df: 3.0,
        within_sd: 0.01,
        within_df: 5.0,
        outliers: 0.02,
        throttled: 0.02,
    };
}

/// The fewest degrees of freedom of a finite t law the model draws from (its variance is
/// finite above 2).
const MIN_DF: f64 = 2.5;

/// A seeded stream of [`NoiseModel`] draws, with the state of its random walk.
pub struct Noise {
    rng: ChaCha8Rng,
    normal: Normal<f64>,
    round_t: StudentT<f64>,
    within_t: StudentT<f64>,
    model: NoiseModel,
    /// The random walk's position (log scale).
    drift: f64,
}

impl Noise {
    /// A stream seeded by `seed`, its walk at 0.
    pub fn new(seed: u64, model: NoiseModel) -> Noise {
        // An infinite df is the normal law (no t variate is drawn for it).
        let t = |df: f64| {
            StudentT::new(if df.is_finite() { df.max(MIN_DF) } else { 1.0 })
                .expect("positive degrees of freedom")
        };
        Noise {
            rng: ChaCha8Rng::seed_from_u64(seed),
            normal: Normal::new(0.0, 1.0).expect("a standard normal"),
            round_t: t(model.round_df),
            within_t: t(model.within_df),
            model,
            drift: 0.0,
        }
    }

    /// The model it draws from.
    pub fn model(&self) -> NoiseModel {
        self.model
    }

    /// A standard normal variate.
    pub fn z(&mut self) -> f64 {
        self.normal.sample(&mut self.rng)
    }

    /// A uniform variate in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.rng.random::<f64>()
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.rng.random::<f64>() < p
    }

    /// A uniform index in `range`.
    pub fn index(&mut self, range: std::ops::Range<usize>) -> usize {
        self.rng.random_range(range)
    }

    /// A t variate (of the round or the within-round law) scaled to unit variance.
    fn unit_t(&mut self, round: bool) -> f64 {
        let (t, df) = if round {
            (&self.round_t, self.model.round_df)
        } else {
            (&self.within_t, self.model.within_df)
        };
        if df.is_infinite() {
            return self.normal.sample(&mut self.rng);
        }
        let df = df.max(MIN_DF);
        t.sample(&mut self.rng) * ((df - 2.0) / df).sqrt()
    }

    /// The shift shared by the two rounds of the next pair: the walk one step on, plus a
    /// fresh pair level.
    pub fn pair_shift(&mut self) -> f64 {
        self.drift += self.model.drift_sd * self.z();
        let pair = self.model.pair_sd * self.z();
        self.drift + pair
    }

    /// The shift of the next round measured alone: the walk one step on.
    pub(crate) fn round_shift(&mut self) -> f64 {
        self.drift += self.model.drift_sd * self.z();
        self.drift
    }

    /// One round of `samples` values (at least one) around `level` (log µs): the round's
    /// own heavy-tailed shift, throttled with the model's probability or where `throttle`
    /// forces it, then its samples with their outliers.
    pub fn round(&mut self, level: f64, samples: usize, throttle: bool) -> Vec<f64> {
        let m = self.model;
        let mut level = level + m.round_sd * self.unit_t(true);
        if throttle || self.rng.random::<f64>() < m.throttled {
            level += (0.03 + 0.05 * self.rng.random::<f64>()).ln_1p();
        }
        (0..samples.max(1))
            .map(|_| {
                let mut x = level + m.within_sd * self.unit_t(false);
                if self.rng.random::<f64>() < m.outliers {
                    x += (0.05 + 0.25 * self.rng.random::<f64>()).ln_1p();
                }
                x.exp()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_has_the_model_s_spread_and_the_same_seed_the_same_values() {
        let mut a = Noise::new(7, NoiseModel::ISSUE);
        let r = a.round(10f64.ln(), 2000, false);
        assert_eq!(r.len(), 2000);
        let logs: Vec<f64> = r.iter().map(|x| x.ln()).collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        assert!((mean - 10f64.ln()).abs() < 0.02, "{mean}");
        let mut b = Noise::new(7, NoiseModel::ISSUE);
        assert_eq!(b.round(10f64.ln(), 2000, false), r);
        // A forced throttle moves the whole round 3–8% up.
        let calm = NoiseModel {
            round_sd: 0.0,
            within_sd: 0.0,
            outliers: 0.0,
            throttled: 0.0,
            ..NoiseModel::ISSUE
        };
        let t = Noise::new(1, calm).round(0.0, 3, true);
        assert!(t.iter().all(|x| (1.03..=1.08).contains(x)), "{t:?}");
        // The normal law where df is infinite.
        let normal = NoiseModel {
            round_df: f64::INFINITY,
            within_df: f64::INFINITY,
            ..NoiseModel::ISSUE
        };
        assert!(
            Noise::new(3, normal)
                .round(0.0, 10, false)
                .iter()
                .all(|x| x.is_finite())
        );
    }
}
