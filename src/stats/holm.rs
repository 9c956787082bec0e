//! Holm's step-down correction for multiple comparisons. Not part of the gate's rule (the
//! margin test is per shape); `tests/it/calibration.rs` uses it to show what a correction across
//! the shapes of a run would cost.

/// Holm (1979) step-down adjusted p-values, in the order of the input — the same numbers as
/// `statsmodels.stats.multitest.multipletests(p, method="holm")[1]`.
///
/// Method: sort ascending; the i-th smallest (0-based) of m p-values becomes
/// `p_(i) · (m − i)`; a running maximum makes the result monotone in p; values above 1 are
/// capped at 1; results are put back in input order. Ties get equal adjusted values
/// whatever their order. Rejecting where the adjusted p ≤ α controls the family-wise
/// error rate at α.
///
/// Inputs are meant to be p-values in `[0, 1]`. A NaN input yields NaN at its own position
/// and does not affect the others (it sorts last, as in numpy). Empty in, empty out.
///
/// Cost: O(m log m) time, O(m) memory.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    // NaNs (of either sign) last, then ascending.
    order.sort_by(|&a, &b| {
        p[a].is_nan()
            .cmp(&p[b].is_nan())
            .then(p[a].total_cmp(&p[b]))
    });
    let mut out = vec![f64::NAN; m];
    let mut running = f64::NEG_INFINITY;
    for (rank, &i) in order.iter().enumerate() {
        if p[i].is_nan() {
            continue; // out[i] stays NaN
        }
        let raw = p[i] * (m - rank) as f64;
        if raw > running {
            running = raw;
        }
        out[i] = running.min(1.0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_in_empty_out() {
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn textbook_example() {
        // m = 4: sorted 0.01, 0.02, 0.03, 0.04 → 0.04, 0.06, 0.06, 0.06 (monotone).
        let adj = holm(&[0.03, 0.01, 0.04, 0.02]);
        let want = [0.06, 0.04, 0.06, 0.06];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-15, "{adj:?}");
        }
    }

    #[test]
    fn capped_and_monotone() {
        // Sorted: 0.001·5, 0.1·4, 0.1·3 → 0.4 (running max), 0.5·2 = 1, 0.9·1 → 1.
        let p = [0.5, 0.001, 0.1, 0.9, 0.1];
        let adj = holm(&p);
        assert_eq!(adj[3], 1.0);
        assert_eq!(adj[0], 1.0);
        assert!((adj[1] - 0.005).abs() < 1e-15);
        // Ties get the same adjusted value, the larger of the two raw products.
        assert_eq!(adj[2], adj[4]);
        assert!((adj[2] - 0.4).abs() < 1e-15);
        // Capping: 0.4 · 3 = 1.2 → 1.
        assert_eq!(holm(&[0.4, 0.5, 0.6]), vec![1.0, 1.0, 1.0]);
        for i in 0..p.len() {
            for j in 0..p.len() {
                if p[i] <= p[j] {
                    assert!(adj[i] <= adj[j]);
                }
            }
            assert!(adj[i] >= p[i]);
        }
    }

    #[test]
    fn nan_stays_local() {
        let adj = holm(&[0.01, f64::NAN, 0.02]);
        assert!(adj[1].is_nan());
        // The NaN still counts in m = 3.
        assert!((adj[0] - 0.03).abs() < 1e-15);
        assert!((adj[2] - 0.04).abs() < 1e-15);
    }
}
