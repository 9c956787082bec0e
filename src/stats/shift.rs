//! The Hodges–Lehmann shift between two samples of i.i.d. values on the log scale, with the
//! exact Mann–Whitney confidence bounds that go with it (Hollander & Wolfe, *Nonparametric
//! Statistical Methods*, §4.3).
//!
//! With `x_i = ln base_i` (n_b values) and `y_j = ln cand_j` (n_c values), the `N = n_b·n_c`
//! pairwise differences `D_ij = y_j − x_i`, sorted `D₍₁₎ ≤ … ≤ D₍N₎`:
//!
//! * the estimate is `median(D)` (numpy's median): the shift by which the candidate's log
//!   values sit above the base's — `exp` of it is a ratio of times, the p50 ratio only when
//!   the whole distribution moves by one factor;
//! * `U(θ) = #{D_ij > θ}` is the Mann–Whitney U of `y − θ` against `x` (for values without
//!   ties); under "the candidate is the base shifted by θ" it follows the exact null law of
//!   U for sizes (n_c, n_b). With `c` the least count with `P(U ≥ c) ≤ a`, the test of
//!   "shift ≤ θ" rejects exactly when `U(θ) ≥ c`, that is when `D₍N−c+1₎ > θ`: the one-sided
//!   lower bound at level `1 − a` is `D₍N−c+1₎`, the upper bound `D₍c₎`. No such `c` exists
//!   when even `P(U = N) = 1/C(n_b + n_c, n_b)` exceeds `a`: then there is no bound.
//!
//! The p-value of "shift ≤ θ" is `P(U ≥ #{D > θ})` (ties with θ count as not above), so it
//! is at most `a` exactly when the lower bound at `1 − a` lies above θ. For values without
//! ties it is `scipy.stats.mannwhitneyu(y − θ, x, alternative="greater", method="exact")`.

use super::{Sample, StatsError};

/// Most pairwise differences [`LogShift`] builds (a million values a side would be 10¹²).
pub(crate) const MAX_SHIFT_PAIRS: usize = 250_000;

/// Two samples' pairwise log differences and the exact null law of U: see the module docs.
#[derive(Clone, Debug)]
pub struct LogShift {
    /// The pairwise differences `ln cand_j − ln base_i`, ascending.
    diffs: Vec<f64>,
    /// `upper[c] = P(U ≥ c)` under the null, c = 0..=N.
    upper: Vec<f64>,
}

impl LogShift {
    /// The pairwise log differences of `cand` against `base` and the exact null law of U.
    ///
    /// Errors: [`StatsError::NotPositive`] for a value ≤ 0 (round = its index in the base,
    /// then the candidate), [`StatsError::TooManyPairs`] beyond [`MAX_SHIFT_PAIRS`].
    ///
    /// Cost: O(N log N) for the N = n_b·n_c differences, plus O(min(n_b, n_c) · N) for the
    /// null law; O(N) memory.
    pub fn new(base: &Sample, cand: &Sample) -> Result<LogShift, StatsError> {
        let (nb, nc) = (base.len(), cand.len());
        let pairs = nb.saturating_mul(nc);
        if pairs > MAX_SHIFT_PAIRS {
            return Err(StatsError::TooManyPairs {
                n: pairs,
                max: MAX_SHIFT_PAIRS,
            });
        }
        let logs = |s: &Sample, offset: usize| -> Result<Vec<f64>, StatsError> {
            s.sorted()
                .iter()
                .map(|&v| {
                    if v > 0.0 {
                        Ok(v.ln())
                    } else {
                        let i = s.values().iter().position(|&w| w == v).unwrap_or(0);
                        Err(StatsError::NotPositive {
                            round: offset + i,
                            value: v,
                        })
                    }
                })
                .collect()
        };
        let x = logs(base, 0)?;
        let y = logs(cand, nb)?;
        let mut diffs = Vec::with_capacity(pairs);
        for yj in &y {
            diffs.extend(x.iter().map(|xi| yj - xi));
        }
        diffs.sort_unstable_by(f64::total_cmp);
        Ok(LogShift {
            diffs,
            upper: upper_tails(nb.min(nc), nb.max(nc)),
        })
    }

    /// The Hodges–Lehmann estimate of the log shift: numpy's median of the differences.
    /// Cost: O(1).
    pub fn estimate(&self) -> f64 {
        let d = &self.diffs;
        let n = d.len();
        if n % 2 == 1 {
            d[n / 2]
        } else {
            (d[n / 2 - 1] + d[n / 2]) / 2.0
        }
    }

    /// The least count `c ≥ 1` with `P(U ≥ c) ≤ a`; `None` when there is none.
    fn critical(&self, a: f64) -> Option<usize> {
        (1..self.upper.len()).find(|&c| self.upper[c] <= a)
    }

    /// One-sided lower bound of the log shift at level `1 − a`: `D₍N−c+1₎`; `None` when the
    /// samples are too small for that level. Cost: O(N).
    pub fn lower_bound(&self, a: f64) -> Option<f64> {
        let c = self.critical(a)?;
        self.diffs.get(self.diffs.len() - c).copied()
    }

    /// One-sided upper bound of the log shift at level `1 − a`: `D₍c₎`; `None` when the
    /// samples are too small for that level. Cost: O(N).
    pub fn upper_bound(&self, a: f64) -> Option<f64> {
        let c = self.critical(a)?;
        self.diffs.get(c - 1).copied()
    }

    /// The exact p-value of "log shift ≤ θ" against "> θ": `P(U ≥ #{D > θ})`.
    /// Cost: O(log N).
    pub fn p_greater(&self, theta: f64) -> f64 {
        let above = self.diffs.len() - self.diffs.partition_point(|&d| d <= theta);
        self.upper.get(above).copied().unwrap_or(0.0)
    }

    /// The exact p-value of "log shift ≥ θ" against "< θ": `P(U ≥ #{D < θ})`.
    /// Cost: O(log N).
    pub fn p_less(&self, theta: f64) -> f64 {
        let below = self.diffs.partition_point(|&d| d < theta);
        self.upper.get(below).copied().unwrap_or(0.0)
    }
}

/// `P(U ≥ c)` for c = 0..=m·big under the null of the Mann–Whitney U for sizes `m ≤ big`
/// without ties: the coefficients of the Gaussian binomial `∏_{i=1..m} (1 − q^{big+i}) /
/// (1 − q^i)` (as `mann_whitney::u_counts`), rescaled after every factor so that no count
/// overflows, then summed from the top. O(m · m·big) time, O(m·big) memory.
fn upper_tails(m: usize, big: usize) -> Vec<f64> {
    let total = m * big;
    let mut c = vec![0.0_f64; total + 1];
    c[0] = 1.0;
    for i in 1..=m {
        let a = big + i;
        // Degrees above i·big are still zero: (1 − q^a) only moves mass beyond them.
        let top = (i * big).min(total);
        if a <= top {
            for u in (a..=top).rev() {
                c[u] -= c[u - a];
            }
        }
        for u in i..=top {
            c[u] += c[u - i];
        }
        let sum: f64 = c[..=top].iter().sum();
        if sum > 0.0 {
            c[..=top].iter_mut().for_each(|v| *v /= sum);
        }
    }
    // By symmetry P(U = u) = P(U = total − u); sum the upper tail from the short side so
    // that small tails have no cancellation.
    let mut upper = vec![0.0_f64; total + 2];
    for u in (0..=total).rev() {
        upper[u] = upper[u + 1] + c[total - u].max(0.0);
    }
    upper.truncate(total + 1);
    let norm = upper[0];
    if norm > 0.0 {
        upper.iter_mut().for_each(|v| *v = (*v / norm).min(1.0));
    }
    upper
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[f64]) -> Sample {
        Sample::new(v.to_vec()).unwrap()
    }

    #[test]
    fn the_null_law_matches_enumeration() {
        // m = 3, big = 4: the Gaussian binomial [7 choose 3]_q has the coefficients 1, 1, 2,
        // 3, 4, 4, 5, 4, 4, 3, 2, 1, 1 (35 arrangements): P(U ≥ 12) = 1/35, P(U ≥ 11) = 2/35,
        // P(U ≥ 10) = 4/35.
        let u = upper_tails(3, 4);
        assert_eq!(u.len(), 13);
        assert!((u[0] - 1.0).abs() < 1e-15);
        assert!((u[12] - 1.0 / 35.0).abs() < 1e-15, "{u:?}");
        assert!((u[11] - 2.0 / 35.0).abs() < 1e-15, "{u:?}");
        assert!((u[10] - 4.0 / 35.0).abs() < 1e-15, "{u:?}");
        // Symmetric about m·big/2 = 6: P(U ≥ 7) = P(U ≤ 5) = 1 − P(U ≥ 6).
        assert!((u[7] - (1.0 - u[6])).abs() < 1e-15, "{u:?}");
    }

    #[test]
    fn the_bound_is_an_order_statistic_consistent_with_the_p_value() {
        // cand = base × 1.10, 6 values a side: the estimate is ln 1.1.
        let base = [10.0, 10.2, 9.9, 10.1, 10.05, 9.95];
        let cand: Vec<f64> = base.iter().map(|v| v * 1.1).collect();
        let t = LogShift::new(&s(&base), &s(&cand)).unwrap();
        assert!(
            (t.estimate() - 1.1f64.ln()).abs() < 1e-12,
            "{}",
            t.estimate()
        );
        for a in [0.01, 0.025, 0.05, 0.1] {
            let lb = t.lower_bound(a).unwrap();
            let ub = t.upper_bound(a).unwrap();
            assert!(lb <= t.estimate() && t.estimate() <= ub);
            // Rejecting "shift ≤ θ" at a is θ below the bound, on either side of it.
            for theta in [lb - 1e-9, lb, lb + 1e-9, 0.05, 0.09] {
                assert_eq!(t.p_greater(theta) <= a, lb > theta, "a={a} θ={theta}");
            }
            for theta in [ub - 1e-9, ub, ub + 1e-9, 0.12] {
                assert_eq!(t.p_less(theta) <= a, ub < theta, "a={a} θ={theta}");
            }
        }
    }

    #[test]
    fn too_few_values_have_no_bound_and_too_many_pairs_are_refused() {
        // 2 against 2: P(U = 4) = 1/6 > 0.05.
        let t = LogShift::new(&s(&[1.0, 2.0]), &s(&[3.0, 4.0])).unwrap();
        assert_eq!(t.lower_bound(0.05), None);
        assert_eq!(t.upper_bound(0.05), None);
        assert!(t.lower_bound(0.2).is_some());
        let big = s(&vec![1.0; 1000]);
        let other = s(&vec![2.0; 300]);
        assert_eq!(
            LogShift::new(&big, &other).unwrap_err(),
            StatsError::TooManyPairs {
                n: 300_000,
                max: MAX_SHIFT_PAIRS
            }
        );
        assert!(matches!(
            LogShift::new(&s(&[1.0, 0.0]), &s(&[1.0, 2.0])),
            Err(StatsError::NotPositive { round: 1, .. })
        ));
    }

    #[test]
    fn large_sizes_do_not_overflow() {
        let u = upper_tails(29, 8000);
        assert!(u.iter().all(|p| p.is_finite() && (0.0..=1.0).contains(p)));
        // Symmetric about m·big/2.
        let half = 29 * 8000 / 2;
        assert!((u[half + 1] - (1.0 - u[half])).abs() < 1e-9);
    }
}
