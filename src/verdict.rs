//! The gate's rule: one function, [`decide`], in one place.
//!
//! The question is "is it more than m slower, with confidence?", not "is it different?".

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::comparison::Comparison;
use crate::config::GateSettings;

/// What the gate concluded about one shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// It could not be measured (compile failure, CUDA error, timeout).
    Error,
    /// NaN/Inf in the output, an element left unwritten, or error above tolerance.
    ParityFail,
    /// Nothing stored for this GPU and shape: a warning, not a failure.
    NoBaseline,
    /// Slower than the threshold, with confidence.
    Regression,
    /// Faster than the threshold, with confidence.
    Improvement,
    /// The point estimate is past the threshold but the evidence is not conclusive.
    Inconclusive,
    Pass,
}

impl Verdict {
    /// Whether this verdict fails the check.
    pub fn fails_gate(self) -> bool {
        matches!(
            self,
            Verdict::Error | Verdict::ParityFail | Verdict::Regression
        )
    }

    /// Whether this verdict is worth a warning (it passes, but a reader should look).
    pub fn warns(self) -> bool {
        matches!(self, Verdict::NoBaseline | Verdict::Inconclusive)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Error => "error",
            Verdict::ParityFail => "parity-fail",
            Verdict::NoBaseline => "no-baseline",
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Pass => "pass",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is known about one shape when the verdict is taken.
#[derive(Clone, Copy, Debug)]
pub struct Evidence<'a> {
    /// False when the shape could not be measured.
    pub measured: bool,
    /// `Some(false)` when parity failed; `None` when parity was not checked (offline compare).
    pub parity_passed: Option<bool>,
    /// `None` when there is no baseline for this GPU and shape.
    pub comparison: Option<&'a Comparison>,
}

/// The design's rule, in its order (m = `gate.max_p50_regression`):
/// error, parity-fail, no-baseline, regression (ci_low > 1+m, Holm-adjusted p < alpha,
/// Cliff's delta at least `gate.min_effect` and positive), improvement (the mirror image),
/// inconclusive (point estimate past ±m without the evidence above), pass.
pub fn decide(gate: &GateSettings, e: &Evidence) -> Verdict {
    if !e.measured {
        return Verdict::Error;
    }
    if e.parity_passed == Some(false) {
        return Verdict::ParityFail;
    }
    let Some(c) = e.comparison else {
        return Verdict::NoBaseline;
    };
    let m = gate.max_p50_regression;
    let big_enough = c.cliffs_magnitude >= gate.min_effect;
    if c.ci_low > 1.0 + m && c.mwu_p_holm < gate.alpha && c.cliffs_delta > 0.0 && big_enough {
        return Verdict::Regression;
    }
    if c.ci_high < 1.0 - m && c.mwu_p_faster_holm < gate.alpha && c.cliffs_delta < 0.0 && big_enough
    {
        return Verdict::Improvement;
    }
    if c.ratio > 1.0 + m || c.ratio < 1.0 - m {
        return Verdict::Inconclusive;
    }
    Verdict::Pass
}

/// Whether a run with these verdicts passes the check.
pub fn gate_passes(verdicts: impl IntoIterator<Item = Verdict>) -> bool {
    !verdicts.into_iter().any(Verdict::fails_gate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Magnitude;

    fn comparison(ratio: f64, ci: (f64, f64), p_slow: f64, p_fast: f64, delta: f64) -> Comparison {
        Comparison {
            n_base: 50,
            n_cand: 50,
            p50_base: 100.0,
            p50_cand: 100.0 * ratio,
            ratio,
            ci_low: ci.0,
            ci_high: ci.1,
            confidence: 0.95,
            cliffs_delta: delta,
            cliffs_magnitude: Magnitude::of(delta),
            mwu_u: 0.0,
            mwu_p: p_slow,
            mwu_p_faster: p_fast,
            mwu_p_holm: p_slow,
            mwu_p_faster_holm: p_fast,
            min_detectable: 0.03,
            resamples: 1000,
            seed: 1,
        }
    }

    fn with(c: &Comparison) -> Evidence<'_> {
        Evidence {
            measured: true,
            parity_passed: Some(true),
            comparison: Some(c),
        }
    }

    fn gate() -> GateSettings {
        GateSettings::default()
    }

    #[test]
    fn error_comes_first() {
        let c = comparison(1.5, (1.4, 1.6), 1e-9, 1.0, 1.0);
        let e = Evidence {
            measured: false,
            parity_passed: Some(false),
            comparison: Some(&c),
        };
        assert_eq!(decide(&gate(), &e), Verdict::Error);
    }

    #[test]
    fn parity_fail_beats_timing() {
        let c = comparison(0.5, (0.4, 0.6), 1.0, 1e-9, -1.0);
        let e = Evidence {
            parity_passed: Some(false),
            ..with(&c)
        };
        assert_eq!(decide(&gate(), &e), Verdict::ParityFail);
    }

    #[test]
    fn no_comparison_is_no_baseline() {
        let e = Evidence {
            measured: true,
            parity_passed: Some(true),
            comparison: None,
        };
        assert_eq!(decide(&gate(), &e), Verdict::NoBaseline);
        // Offline compare has no parity: still decided on timing.
        let c = comparison(1.0, (0.99, 1.01), 0.5, 0.5, 0.0);
        let e = Evidence {
            parity_passed: None,
            ..with(&c)
        };
        assert_eq!(decide(&gate(), &e), Verdict::Pass);
    }

    #[test]
    fn regression_needs_all_three_tests() {
        let g = gate();
        let c = comparison(1.05, (1.03, 1.07), 0.001, 0.999, 0.6);
        assert_eq!(decide(&g, &with(&c)), Verdict::Regression);
        // Interval reaches below 1 + m: not confident it is past the threshold.
        let c = comparison(1.05, (1.01, 1.07), 0.001, 0.999, 0.6);
        assert_eq!(decide(&g, &with(&c)), Verdict::Inconclusive);
        // p not significant after Holm.
        let c = comparison(1.05, (1.03, 1.07), 0.2, 0.8, 0.6);
        assert_eq!(decide(&g, &with(&c)), Verdict::Inconclusive);
        // Effect negligible.
        let c = comparison(1.05, (1.03, 1.07), 0.001, 0.999, 0.1);
        assert_eq!(decide(&g, &with(&c)), Verdict::Inconclusive);
    }

    #[test]
    fn improvement_is_the_mirror_image() {
        let g = gate();
        let c = comparison(0.95, (0.93, 0.97), 0.999, 0.001, -0.6);
        assert_eq!(decide(&g, &with(&c)), Verdict::Improvement);
        let c = comparison(0.95, (0.93, 0.99), 0.999, 0.001, -0.6);
        assert_eq!(decide(&g, &with(&c)), Verdict::Inconclusive);
        let c = comparison(0.95, (0.93, 0.97), 0.999, 0.3, -0.6);
        assert_eq!(decide(&g, &with(&c)), Verdict::Inconclusive);
    }

    #[test]
    fn inside_threshold_passes_even_if_significant() {
        // 1% slower with a tight interval and tiny p: real, but under the 2% gate.
        let c = comparison(1.01, (1.005, 1.015), 1e-12, 1.0, 0.9);
        assert_eq!(decide(&gate(), &with(&c)), Verdict::Pass);
    }

    #[test]
    fn threshold_and_effect_come_from_settings() {
        let c = comparison(1.05, (1.03, 1.07), 0.001, 0.999, 0.2);
        let mut g = gate();
        assert_eq!(decide(&g, &with(&c)), Verdict::Regression);
        g.min_effect = Magnitude::Large;
        assert_eq!(decide(&g, &with(&c)), Verdict::Inconclusive);
        g.min_effect = Magnitude::Small;
        g.max_p50_regression = 0.1;
        assert_eq!(decide(&g, &with(&c)), Verdict::Pass);
    }

    #[test]
    fn which_verdicts_fail_the_gate() {
        assert!(gate_passes([
            Verdict::Pass,
            Verdict::NoBaseline,
            Verdict::Improvement,
            Verdict::Inconclusive
        ]));
        for v in [Verdict::Error, Verdict::ParityFail, Verdict::Regression] {
            assert!(!gate_passes([Verdict::Pass, v]), "{v}");
        }
    }
}
