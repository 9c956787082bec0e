//! The exact (Clopper–Pearson) interval of a binomial proportion: how a count of flagged
//! comparisons is reported (`selftest`, the calibration tables), as
//! `scipy.stats.binomtest(k, n).proportion_ci(confidence, method="exact")`.

use statrs::distribution::{Beta, ContinuousCDF};

use super::Interval;

/// The two-sided Clopper–Pearson interval at `confidence` of `k` successes in `n` trials:
/// `[Beta(k, n − k + 1).ppf(α/2), Beta(k + 1, n − k).ppf(1 − α/2)]`, 0 when `k = 0`, 1
/// when `k = n`. `None` for `n = 0`, `k > n` or a confidence outside (0, 1).
/// Cost: O(1) (two Beta quantiles).
pub fn binomial_interval(k: u64, n: u64, confidence: f64) -> Option<Interval> {
    if n == 0 || k > n || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let a = (1.0 - confidence) / 2.0;
    let (kf, nf) = (k as f64, n as f64);
    let low = if k == 0 {
        0.0
    } else {
        Beta::new(kf, nf - kf + 1.0).ok()?.inverse_cdf(a)
    };
    let high = if k == n {
        1.0
    } else {
        Beta::new(kf + 1.0, nf - kf).ok()?.inverse_cdf(1.0 - a)
    };
    Some(Interval { low, high })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_scipy_exact_intervals() {
        // scipy 1.17.1: binomtest(k, n).proportion_ci(0.95, method="exact").
        for (k, n, lo, hi) in [
            (0, 130, 0.0, 0.027977178415451706),
            (5, 130, 0.012604362344749643, 0.08747357306994376),
            (127, 130, 0.9340410250001392, 0.9952154636756136),
            (130, 130, 0.9720228215845483, 1.0),
            (473, 10000, 0.04322176461980587, 0.05164439853149369),
            (9634, 10000, 0.9595321300128934, 0.966994866099004),
            (1, 2, 0.01257911709367899, 0.987420882906321),
        ] {
            let i = binomial_interval(k, n, 0.95).unwrap();
            assert!((i.low - lo).abs() < 1e-9, "{k}/{n}: {} vs {lo}", i.low);
            assert!((i.high - hi).abs() < 1e-9, "{k}/{n}: {} vs {hi}", i.high);
        }
        assert!(binomial_interval(1, 0, 0.95).is_none());
        assert!(binomial_interval(3, 2, 0.95).is_none());
        assert!(binomial_interval(1, 2, 1.0).is_none());
    }
}
