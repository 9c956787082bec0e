//! Order statistics and moments on plain slices, written to reproduce numpy's results.
//!
//! These are the building blocks of [`Sample`](super::Sample); they assume the caller has
//! already checked that the slice is non-empty and finite.

/// Median of an ascending slice, as `numpy.median` computes it: the middle value for odd
/// `n`, `(a + b) / 2` of the two middle values for even `n`.
///
/// Cost: O(1). `sorted` must be non-empty and ascending.
pub(crate) fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    debug_assert!(n > 0);
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Quantile of an ascending slice with numpy's default method `"linear"` (Hyndman & Fan
/// type 7): virtual index `h = (n − 1)·q`, then linear interpolation between `x[⌊h⌋]` and
/// `x[⌊h⌋ + 1]`, with numpy's two-sided lerp (`a + (b − a)·g` for `g < 0.5`, else
/// `b − (b − a)·(1 − g)`), so results match numpy bit for bit in the usual cases.
///
/// `q` is clamped to `[0, 1]`; a NaN `q` gives NaN. Cost: O(1). `sorted` must be
/// non-empty and ascending.
pub(crate) fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    debug_assert!(n > 0);
    if q.is_nan() {
        return f64::NAN;
    }
    let q = q.clamp(0.0, 1.0);
    let h = (n - 1) as f64 * q;
    if h >= (n - 1) as f64 {
        return sorted[n - 1];
    }
    let lo = h.floor();
    let gamma = h - lo;
    // `h` lies in [0, n − 1), so `lo` is a valid index and `lo + 1 ≤ n − 1`.
    let i = lo as usize;
    let (a, b) = (sorted[i], sorted[i + 1]);
    let diff = b - a;
    if gamma >= 0.5 {
        b - diff * (1.0 - gamma)
    } else {
        a + diff * gamma
    }
}

/// Sum with Neumaier's compensation (error independent of `n` to first order), which keeps
/// the mean within an ulp or two of numpy's pairwise sum. Cost: O(n).
fn compensated_sum(values: impl Iterator<Item = f64>) -> f64 {
    let mut sum = 0.0_f64;
    let mut comp = 0.0_f64;
    for v in values {
        let t = sum + v;
        if sum.abs() >= v.abs() {
            comp += (sum - t) + v;
        } else {
            comp += (v - t) + sum;
        }
        sum = t;
    }
    sum + comp
}

/// Arithmetic mean (compensated sum / n). Cost: O(n). `values` must be non-empty.
pub(crate) fn mean(values: &[f64]) -> f64 {
    debug_assert!(!values.is_empty());
    compensated_sum(values.iter().copied()) / values.len() as f64
}

/// Sample standard deviation with `ddof = 1` (`numpy.std(x, ddof=1)`), two-pass: squared
/// deviations from `mean`, compensated sum, divided by `n − 1`. Cost: O(n).
/// `values` must hold at least 2 values.
pub(crate) fn stdev(values: &[f64], mean: f64) -> f64 {
    debug_assert!(values.len() >= 2);
    let ss = compensated_sum(values.iter().map(|&v| {
        let d = v - mean;
        d * d
    }));
    (ss / (values.len() - 1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median_sorted(&[1.0, 2.0, 10.0]), 2.0);
        assert_eq!(median_sorted(&[1.0, 2.0, 3.0, 10.0]), 2.5);
        assert_eq!(median_sorted(&[4.0]), 4.0);
    }

    #[test]
    fn quantile_linear_matches_hand_computation() {
        let x = [1.0, 2.0, 4.0, 8.0, 16.0];
        // h = 4 · 0.9 = 3.6 → 8 + 0.6 · 8 = 12.8 (numpy: b − diff·(1 − g) = 16 − 8·0.4).
        assert!((quantile_sorted(&x, 0.9) - 12.8).abs() < 1e-12);
        // h = 4 · 0.1 = 0.4 → 1 + 0.4 · 1.
        assert!((quantile_sorted(&x, 0.1) - 1.4).abs() < 1e-12);
        assert_eq!(quantile_sorted(&x, 0.0), 1.0);
        assert_eq!(quantile_sorted(&x, 1.0), 16.0);
        assert_eq!(quantile_sorted(&x, 0.5), 4.0);
        // Clamped.
        assert_eq!(quantile_sorted(&x, -3.0), 1.0);
        assert_eq!(quantile_sorted(&x, 7.0), 16.0);
        assert!(quantile_sorted(&x, f64::NAN).is_nan());
    }

    #[test]
    fn mean_and_stdev() {
        let x = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let m = mean(&x);
        assert_eq!(m, 5.0);
        // Sum of squared deviations is 32; 32 / 7.
        assert!((stdev(&x, m) - (32.0_f64 / 7.0).sqrt()).abs() < 1e-15);
    }

    #[test]
    fn compensated_sum_survives_cancellation() {
        // A naive left-to-right sum returns 0 here.
        let v = [1e16, 1.0, -1e16];
        assert_eq!(compensated_sum(v.iter().copied()), 1.0);
    }
}
