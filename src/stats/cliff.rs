//! Cliff's delta, a rank-based effect size, and its conventional magnitude labels.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Sample;

/// Cliff's delta of `cand` against `base`:
/// `(#{(c, b) : c > b} − #{(c, b) : c < b}) / (n_c · n_b)` over all pairs, in `[−1, 1]`.
/// Positive means the candidate tends to be larger (slower); ties count as neither.
///
/// Method: both samples are already sorted (see [`Sample::sorted`]), so one merge-like
/// sweep over the candidate's values with two monotone pointers into the baseline counts,
/// for each `c`, the baseline values `< c` and `≤ c`. Counts are exact integers.
///
/// Cost: O(n_c + n_b) time (plus the O(n log n) sorts paid when the samples were built),
/// O(1) memory — not O(n_c · n_b).
pub fn cliffs_delta(cand: &Sample, base: &Sample) -> f64 {
    let c = cand.sorted();
    let b = base.sorted();
    let mut below = 0usize; // #b < current c
    let mut below_or_eq = 0usize; // #b <= current c
    let mut greater: u128 = 0; // pairs with c > b
    let mut less: u128 = 0; // pairs with c < b
    for &x in c {
        while below < b.len() && b[below] < x {
            below += 1;
        }
        if below_or_eq < below {
            below_or_eq = below;
        }
        while below_or_eq < b.len() && b[below_or_eq] <= x {
            below_or_eq += 1;
        }
        greater += below as u128;
        less += (b.len() - below_or_eq) as u128;
    }
    let net = (greater as i128 - less as i128) as f64;
    net / (c.len() as f64 * b.len() as f64)
}

/// Cliff's delta magnitude labels (Romano et al. 2006):
/// negligible < 0.147 ≤ small < 0.33 ≤ medium < 0.474 ≤ large.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Magnitude {
    /// |delta| < 0.147
    Negligible,
    /// 0.147 ≤ |delta| < 0.33
    Small,
    /// 0.33 ≤ |delta| < 0.474
    Medium,
    /// |delta| ≥ 0.474
    Large,
}

impl Magnitude {
    /// The label of |delta|. Cost: O(1).
    pub(crate) fn of(delta: f64) -> Magnitude {
        let d = delta.abs();
        if d < 0.147 {
            Magnitude::Negligible
        } else if d < 0.33 {
            Magnitude::Small
        } else if d < 0.474 {
            Magnitude::Medium
        } else {
            Magnitude::Large
        }
    }
}

impl fmt::Display for Magnitude {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Magnitude::Negligible => "negligible",
            Magnitude::Small => "small",
            Magnitude::Medium => "medium",
            Magnitude::Large => "large",
        })
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use super::*;

    fn s(v: &[f64]) -> Sample {
        Sample::new(v.to_vec()).unwrap()
    }

    fn brute(c: &[f64], b: &[f64]) -> f64 {
        let mut net = 0i64;
        for &x in c {
            for &y in b {
                net += match x.partial_cmp(&y).unwrap() {
                    Ordering::Greater => 1,
                    Ordering::Less => -1,
                    Ordering::Equal => 0,
                };
            }
        }
        net as f64 / (c.len() * b.len()) as f64
    }

    #[test]
    fn extremes_and_ties() {
        assert_eq!(cliffs_delta(&s(&[5.0, 6.0]), &s(&[1.0, 2.0, 3.0])), 1.0);
        assert_eq!(cliffs_delta(&s(&[1.0, 2.0, 3.0]), &s(&[5.0, 6.0])), -1.0);
        assert_eq!(cliffs_delta(&s(&[2.0, 2.0]), &s(&[2.0, 2.0, 2.0])), 0.0);
        // c = [1, 2, 3], b = [2, 2]: pairs (1,2)×2 less, (2,2)×2 tie, (3,2)×2 greater.
        assert_eq!(cliffs_delta(&s(&[3.0, 1.0, 2.0]), &s(&[2.0, 2.0])), 0.0);
        // c = [2, 3], b = [1, 2, 2, 4]: gt = 1 + 3 = 4, lt = 1 + 1 = 2 → 2 / 8.
        assert_eq!(
            cliffs_delta(&s(&[3.0, 2.0]), &s(&[4.0, 2.0, 1.0, 2.0])),
            0.25
        );
    }

    #[test]
    fn matches_brute_force_on_tied_data() {
        // Deterministic pseudo-random integers with many ties.
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % 7) as f64
        };
        for (n, m) in [(2, 2), (3, 9), (17, 5), (40, 41)] {
            let c: Vec<f64> = (0..n).map(|_| next()).collect();
            let b: Vec<f64> = (0..m)
                .map(|_| next() + 0.5 * (next() - 3.0).signum())
                .collect();
            let d = cliffs_delta(&s(&c), &s(&b));
            assert_eq!(d, brute(&c, &b), "n={n} m={m}");
        }
    }

    #[test]
    fn magnitude_thresholds_and_labels() {
        assert_eq!(Magnitude::of(0.0), Magnitude::Negligible);
        assert_eq!(Magnitude::of(-0.146), Magnitude::Negligible);
        assert_eq!(Magnitude::of(0.147), Magnitude::Small);
        assert_eq!(Magnitude::of(-0.329), Magnitude::Small);
        assert_eq!(Magnitude::of(0.33), Magnitude::Medium);
        assert_eq!(Magnitude::of(0.473), Magnitude::Medium);
        assert_eq!(Magnitude::of(-0.474), Magnitude::Large);
        assert_eq!(Magnitude::of(1.0), Magnitude::Large);
        assert_eq!(Magnitude::Medium.to_string(), "medium");
        assert_eq!(Magnitude::Negligible.to_string(), "negligible");
        assert_eq!(
            serde_json::to_string(&Magnitude::Large).unwrap(),
            "\"large\""
        );
        assert_eq!(
            serde_json::from_str::<Magnitude>("\"small\"").unwrap(),
            Magnitude::Small
        );
    }
}
