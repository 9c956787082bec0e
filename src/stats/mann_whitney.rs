//! The Mann–Whitney U test (Wilcoxon rank-sum test), one-sided, matching
//! `scipy.stats.mannwhitneyu` with its default `method="auto"` and `use_continuity=True`.

use statrs::distribution::{ContinuousCDF, Normal};

use super::Sample;

/// Direction of the one-sided alternative hypothesis, always stated for the candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alternative {
    /// The candidate is stochastically *greater* than the baseline (for timings: slower).
    Greater,
    /// The candidate is stochastically *less* than the baseline (for timings: faster).
    Less,
}

/// How the p-value of a [`MannWhitney`] result was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PMethod {
    /// The exact null distribution of U (no ties, and the smaller sample has ≤ 8 values).
    Exact,
    /// The normal approximation with tie correction and continuity correction.
    Asymptotic,
}

/// Result of [`mann_whitney_u`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MannWhitney {
    /// U statistic of the *first* sample (the candidate): `R₁ − n₁(n₁ + 1)/2` with `R₁` the
    /// candidate's rank sum in the pooled data (midranks for ties). Range `[0, n₁·n₂]`;
    /// `n₁·n₂/2` is "no difference".
    pub u: f64,
    /// One-sided p-value for the requested [`Alternative`], in `[0, 1]`.
    pub p: f64,
    /// Which null distribution produced `p`.
    pub method: PMethod,
}

/// One-sided Mann–Whitney U test of `cand` against `base`; the same `u` and `p` as
/// `scipy.stats.mannwhitneyu(cand, base, alternative=...)` (scipy 1.17, defaults
/// `use_continuity=True`, `method="auto"`).
///
/// Method:
/// * Ranks of the pooled values, midranks for ties, from one merge of the two sorted
///   samples; `u = U₁` (the candidate's U). The p-value uses `U₁` for
///   [`Alternative::Greater`] and `U₂ = n₁n₂ − U₁` for [`Alternative::Less`], always as an
///   upper tail `P(U ≥ u)`.
/// * **Exact** (scipy's `"auto"` rule): when there are no ties anywhere in the pooled data and
///   `min(n₁, n₂) ≤ 8` (scipy goes asymptotic only when *both* sizes exceed 8). The null
///   distribution of U is the coefficient list of the Gaussian binomial
///   `[n₁+n₂ choose n₁]_q = ∏_{i=1..m} (1 − q^{M+i}) / (1 − q^i)` (m = min size,
///   M = max size), built only up to the degree needed; upper tails are summed from the
///   short side by symmetry, so small p-values have no cancellation.
/// * **Asymptotic** otherwise: `z = (U − n₁n₂/2 − 0.5) / σ` with
///   `σ² = n₁n₂/12 · ((n + 1) − Σ(t³ − t)/(n(n − 1)))` (t = sizes of tie groups),
///   `p = Φ(−z)` (statrs' normal CDF). When every value is equal, σ = 0, z = −∞ and
///   p = 1, as in scipy.
///
/// `p` is clipped to `[0, 1]`. Exact p-values agree with scipy to a few ulps; asymptotic
/// ones to about 1e-10 relative, the accuracy of statrs 0.19's `erfc` (its per-interval
/// constants are truncated to 10 digits; statrs-dev/statrs#412).
///
/// Cost: O(n₁ + n₂) for ranks (the samples are pre-sorted); the exact path adds
/// O(m² · M) time and O(m · M) memory with m ≤ 8.
pub fn mann_whitney_u(cand: &Sample, base: &Sample, alternative: Alternative) -> MannWhitney {
    let n1 = cand.len();
    let n2 = base.len();
    let ranks = rank_sum(cand.sorted(), base.sorted());
    let u1 = ranks.r1 - (n1 as f64) * (n1 as f64 + 1.0) / 2.0;
    let nn = n1 as f64 * n2 as f64;
    let u2 = nn - u1;
    let u = match alternative {
        Alternative::Greater => u1,
        Alternative::Less => u2,
    };

    let exact = (n1 <= 8 || n2 <= 8) && !ranks.ties;
    let (p, method) = if exact {
        // Without ties U is an integer in [0, n1·n2].
        let k = u.round().max(0.0) as usize;
        (exact_upper_tail(k, n1.min(n2), n1.max(n2)), PMethod::Exact)
    } else {
        let mu = nn / 2.0;
        let n = (n1 + n2) as f64;
        let s = (nn / 12.0 * ((n + 1.0) - ranks.tie_term / (n * (n - 1.0)))).sqrt();
        let z = (u - mu - 0.5) / s;
        (Normal::standard().cdf(-z), PMethod::Asymptotic)
    };
    MannWhitney {
        u: u1,
        p: p.clamp(0.0, 1.0),
        method,
    }
}

struct RankSum {
    /// Sum of the (mid)ranks of the first sample in the pooled data.
    r1: f64,
    /// Σ (t³ − t) over groups of tied values.
    tie_term: f64,
    /// Whether any value occurs more than once in the pooled data.
    ties: bool,
}

/// Rank sum of `a` within `a ∪ b` (both ascending), by one merge over groups of equal
/// values. O(|a| + |b|).
fn rank_sum(a: &[f64], b: &[f64]) -> RankSum {
    let (mut i, mut j) = (0usize, 0usize);
    let mut below = 0usize; // values of a ∪ b strictly below the current group
    let mut r1 = 0.0;
    let mut tie_term = 0.0;
    let mut ties = false;
    loop {
        let v = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => break,
        };
        let i0 = i;
        while i < a.len() && a[i] == v {
            i += 1;
        }
        let j0 = j;
        while j < b.len() && b[j] == v {
            j += 1;
        }
        let in_a = i - i0;
        let t = in_a + (j - j0);
        // Ranks below+1 ..= below+t share the midrank below + 1 + (t − 1)/2.
        let midrank = (below + 1) as f64 + (t - 1) as f64 / 2.0;
        r1 += in_a as f64 * midrank;
        let tf = t as f64;
        tie_term += tf * tf * tf - tf;
        ties |= t > 1;
        below += t;
    }
    RankSum { r1, tie_term, ties }
}

/// `P(U ≥ k)` under the null for samples of sizes `m ≤ big` without ties, computed as
/// scipy does: `cdf(m·big − k)` when `k` is in the upper half, else
/// `1 − cdf(k) + pmf(k)`; either way only the lower half of the distribution is built.
fn exact_upper_tail(k: usize, m: usize, big: usize) -> f64 {
    let total_u = m * big;
    if k > total_u {
        return 0.0;
    }
    let kc = total_u - k;
    let counts = u_counts(k.min(kc), m, big);
    let total = binomial(m + big, m);
    if k < kc {
        let cdf: f64 = counts.iter().sum::<f64>() / total;
        1.0 - cdf + counts[k] / total
    } else {
        counts.iter().sum::<f64>() / total
    }
}

/// Number of arrangements with U = 0, 1, …, `max_u` for sample sizes `m` and `big`: the
/// first coefficients of the Gaussian binomial `∏_{i=1..m} (1 − q^{big+i}) / (1 − q^i)`,
/// truncated at degree `max_u` (coefficient u depends only on lower ones).
/// O(m · max_u) time, O(max_u) memory. In f64: exact while the counts stay below 2⁵³.
fn u_counts(max_u: usize, m: usize, big: usize) -> Vec<f64> {
    let mut c = vec![0.0_f64; max_u + 1];
    c[0] = 1.0;
    for i in 1..=m {
        // Multiply by (1 − q^(big + i)), high degrees first so each reads old values.
        let a = big + i;
        if a <= max_u {
            for u in (a..=max_u).rev() {
                c[u] -= c[u - a];
            }
        }
        // Divide by (1 − q^i): c[u] += c[u − i], low degrees first.
        for u in i..=max_u {
            c[u] += c[u - i];
        }
    }
    c
}

/// Binomial coefficient C(n, k) in floating point, as the running product ∏ (n−k+j)/j.
fn binomial(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    let mut acc = 1.0_f64;
    for j in 1..=k {
        acc = acc * (n - k + j) as f64 / j as f64;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[f64]) -> Sample {
        Sample::new(v.to_vec()).unwrap()
    }

    /// Brute force: enumerate all C(n1+n2, n1) label assignments of the ranks 1..n.
    fn brute_upper_tail(k: usize, n1: usize, n2: usize) -> f64 {
        let n = n1 + n2;
        let mut hits = 0u64;
        let mut all = 0u64;
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != n1 {
                continue;
            }
            all += 1;
            let r1: usize = (0..n).filter(|b| mask & (1 << b) != 0).map(|b| b + 1).sum();
            let u = r1 - n1 * (n1 + 1) / 2;
            if u >= k {
                hits += 1;
            }
        }
        hits as f64 / all as f64
    }

    #[test]
    fn exact_distribution_matches_enumeration() {
        for (m, big) in [(2, 2), (3, 5), (4, 4), (2, 9), (5, 8)] {
            for k in 0..=m * big {
                let want = brute_upper_tail(k, m, big);
                let got = exact_upper_tail(k, m, big);
                assert!((got - want).abs() < 1e-14, "m={m} big={big} k={k}");
            }
        }
    }

    #[test]
    fn binomial_values() {
        assert_eq!(binomial(5, 2), 10.0);
        assert_eq!(binomial(16, 8), 12870.0);
        assert_eq!(binomial(7, 0), 1.0);
    }

    #[test]
    fn hand_checked_small_case() {
        // cand = [4, 5, 6] all above base = [1, 2, 3]: U1 = 9, P(U ≥ 9) = 1/20.
        let r = mann_whitney_u(
            &s(&[6.0, 4.0, 5.0]),
            &s(&[1.0, 3.0, 2.0]),
            Alternative::Greater,
        );
        assert_eq!(r.u, 9.0);
        assert_eq!(r.method, PMethod::Exact);
        assert!((r.p - 0.05).abs() < 1e-15);
        let r = mann_whitney_u(
            &s(&[6.0, 4.0, 5.0]),
            &s(&[1.0, 3.0, 2.0]),
            Alternative::Less,
        );
        assert_eq!(r.u, 9.0);
        assert!((r.p - 1.0).abs() < 1e-15);
    }

    #[test]
    fn ties_force_asymptotic_and_midranks() {
        // Pooled [1, 2, 2, 3]: cand = [2, 3] has ranks 2.5 + 4 = 6.5 → U1 = 3.5.
        let r = mann_whitney_u(&s(&[3.0, 2.0]), &s(&[2.0, 1.0]), Alternative::Greater);
        assert_eq!(r.u, 3.5);
        assert_eq!(r.method, PMethod::Asymptotic);
        assert!(r.p > 0.0 && r.p < 0.5);
    }

    #[test]
    fn all_equal_gives_p_one() {
        let a = s(&[7.0; 12]);
        let b = s(&[7.0; 5]);
        for alt in [Alternative::Greater, Alternative::Less] {
            let r = mann_whitney_u(&a, &b, alt);
            assert_eq!(r.u, 30.0);
            assert_eq!(r.p, 1.0);
            assert_eq!(r.method, PMethod::Asymptotic);
        }
    }

    #[test]
    fn greater_and_less_are_mirror_images() {
        let a = s(&[1.5, 3.25, 9.0, 4.0, 11.0, 0.5, 2.0, 8.0, 6.5, 7.25]);
        let b = s(&[2.5, 3.0, 1.0, 5.0, 10.0, 12.0, 0.25, 4.5, 5.5]);
        let g = mann_whitney_u(&a, &b, Alternative::Greater);
        let l = mann_whitney_u(&b, &a, Alternative::Less);
        assert_eq!(g.u + l.u, 90.0);
        assert!((g.p - l.p).abs() < 1e-15);
    }
}
