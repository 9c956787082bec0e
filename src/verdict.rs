//! The gate's rule: one function, [`decide`], in one place, and one test of "more than m
//! slower with confidence", [`slower_with_confidence`]; [`Policy::fails`] says which
//! verdicts fail the check (`results::passed` applies it to a run).
//!
//! The question is "is it more than m slower, with confidence?", not "is it different?", and
//! it is asked of two references: the base kernels measured alongside (A/B, the verdict) and
//! the stored baseline (the long view). It is answered per shape by the one-sided bound of
//! the comparison's own method ([`crate::comparison::Method`]): no correction across shapes
//! and no effect-size condition (Cliff's δ and Mann-Whitney U are reported, not used: the
//! calibration in docs/PERF.md shows they add no protection and cost power).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::comparison::{Comparison, Reference};
use crate::config::GateSettings;

/// What the gate concluded about one shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// It could not be measured (compile failure, CUDA error, timeout, a base that fails
    /// parity).
    Error,
    /// NaN/Inf in the output, an element left unwritten, or error above tolerance.
    ParityFail,
    /// More than m slower than the deciding reference, with confidence.
    Regression,
    /// More than m faster than the deciding reference, with confidence.
    Improvement,
    /// A/B shows no change, but the candidate is more than m slower than the stored
    /// baseline with confidence: the runner or the default branch moved.
    Drift,
    /// The point estimate is past ±m but the evidence is not conclusive.
    Inconclusive,
    /// No A/B ran and the stored baseline was measured by another method
    /// (`crate::method`): not comparable, so nothing was judged. A warning, not a failure,
    /// as `no-baseline` is: the run measured fine and no reference could judge it.
    OtherMethod,
    /// Neither reference exists: a warning, not a failure.
    NoBaseline,
    Pass,
}

/// What a drift was traced to, by measuring the stored baseline's own commit's kernels as a
/// third side in the same run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriftCause {
    /// The baseline commit's kernels are as slow as the candidate now: the runner moved
    /// (driver, card, cooling); re-record the baseline.
    Runner,
    /// The candidate is slower than the baseline commit's kernels measured alongside it: the
    /// default branch crept since the baseline was recorded.
    Code,
    /// Neither reading is clear.
    Unclear,
}

impl std::fmt::Display for DriftCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DriftCause::Runner => "runner moved",
            DriftCause::Code => "code crept",
            DriftCause::Unclear => "cause unclear",
        })
    }
}

/// Whether a `drift` fails the run: on pushes to the default branch (creep must not hide),
/// not on pull requests (the pull request did not cause it). A drift traced to the runner
/// (the baseline commit's own kernels are as slow now) never fails: the baseline is stale,
/// and the report says how to re-record it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    pub fail_on_drift: bool,
}

impl Policy {
    /// Whether a shape with this verdict fails the check; `drift` is what a drift was traced
    /// to (`None`: not traced).
    pub(crate) fn fails(self, verdict: Verdict, drift: Option<DriftCause>) -> bool {
        match verdict {
            Verdict::Drift => self.fail_on_drift && drift != Some(DriftCause::Runner),
            v => v.fails(self),
        }
    }
}

impl Verdict {
    /// Whether this verdict fails the check under `policy`, a drift taken as not traced to
    /// the runner (see [`Policy::fails`], which knows).
    pub(crate) fn fails(self, policy: Policy) -> bool {
        match self {
            Verdict::Error | Verdict::ParityFail | Verdict::Regression => true,
            Verdict::Drift => policy.fail_on_drift,
            _ => false,
        }
    }

    /// Whether this verdict is worth a warning (it passes, but a reader should look).
    pub(crate) fn warns(self) -> bool {
        matches!(
            self,
            Verdict::NoBaseline | Verdict::OtherMethod | Verdict::Inconclusive | Verdict::Drift
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Error => "error",
            Verdict::ParityFail => "parity-fail",
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Drift => "drift",
            Verdict::Inconclusive => "inconclusive",
            Verdict::OtherMethod => "other-method",
            Verdict::NoBaseline => "no-baseline",
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
    /// False when the shape could not be measured (either side).
    pub measured: bool,
    /// `Some(false)` when the candidate failed parity; `None` when parity was not checked
    /// (offline compare).
    pub parity_passed: Option<bool>,
    /// Candidate against the base kernels in the same process.
    pub ab: Option<&'a Comparison>,
    /// Candidate against the stored baseline.
    pub stored: Option<&'a Comparison>,
    /// The stored baseline holds the shape but was measured by another method: it is not a
    /// reference (whatever `stored` holds), and without A/B the shape reads `other-method`.
    pub stored_other_method: bool,
}

/// A verdict and the reference that decided it (`None` where no comparison did).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    pub decided_by: Option<Reference>,
}

/// "More than m slower, with confidence": the comparison's one-sided lower bound, at the
/// level its deciding look spends, above 1 + m (m = `gate.max_p50_regression`). For the
/// trimmed tests this is the same as the design's margin p below alpha; for the bootstrap
/// the bound is the alpha-quantile of the resampled ratios. Per shape: no Holm, no
/// effect-size condition (`gate.min_effect` is not read). Used by every caller that asks
/// the question (the verdict, and the tracing of a drift).
pub(crate) fn slower_with_confidence(gate: &GateSettings, c: &Comparison) -> bool {
    c.lower_bound > 1.0 + gate.max_p50_regression
}

/// The mirror image of [`slower_with_confidence`]: the upper bound below 1 − m.
pub(crate) fn faster_with_confidence(gate: &GateSettings, c: &Comparison) -> bool {
    c.upper_bound < 1.0 - gate.max_p50_regression
}

fn past_margin(gate: &GateSettings, c: &Comparison) -> bool {
    let m = gate.max_p50_regression;
    c.ratio > 1.0 + m || c.ratio < 1.0 - m
}

/// The design's rule, in its order (m = `gate.max_p50_regression`):
/// 1. `error`; 2. `parity-fail`;
/// 3. `regression` — the deciding reference (A/B when it ran, else the stored baseline)
///    says more than m slower with confidence; 4. `improvement` — the mirror image;
/// 5. `drift` — A/B ran and shows no change past ±m, but the stored baseline says more than
///    m slower with confidence;
/// 6. `inconclusive` — the deciding reference's estimate is past ±m without that evidence;
/// 7. `other-method` — no A/B, and the stored baseline was measured by another method (it
///    is never a reference: times of two methods are not comparable); `no-baseline` —
///    neither reference exists; 8. `pass`.
pub fn decide(gate: &GateSettings, e: &Evidence) -> Decision {
    let by = |verdict, reference| Decision {
        verdict,
        decided_by: reference,
    };
    if !e.measured {
        return by(Verdict::Error, None);
    }
    if e.parity_passed == Some(false) {
        return by(Verdict::ParityFail, None);
    }
    // A stored baseline of another method is no reference, whatever was computed from it.
    let stored = if e.stored_other_method {
        None
    } else {
        e.stored
    };
    let Some(primary) = e.ab.or(stored) else {
        let nothing = if e.stored_other_method {
            Verdict::OtherMethod
        } else {
            Verdict::NoBaseline
        };
        return by(nothing, None);
    };
    let who = Some(primary.reference);
    if slower_with_confidence(gate, primary) {
        return by(Verdict::Regression, who);
    }
    if faster_with_confidence(gate, primary) {
        return by(Verdict::Improvement, who);
    }
    if let (Some(ab), Some(stored)) = (e.ab, stored)
        && !past_margin(gate, ab)
        && slower_with_confidence(gate, stored)
    {
        return by(Verdict::Drift, Some(Reference::Stored));
    }
    if past_margin(gate, primary) {
        return by(Verdict::Inconclusive, who);
    }
    by(Verdict::Pass, who)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::Method;
    use crate::stats::Magnitude;

    /// A comparison whose interval is `ci` (also the one-sided bounds) and margin p-values
    /// are as given.
    fn cmp(
        reference: Reference,
        ratio: f64,
        ci: (f64, f64),
        p_slow: f64,
        p_fast: f64,
        delta: f64,
    ) -> Comparison {
        Comparison {
            reference,
            method: Method::PairedRounds,
            n_base: 10,
            n_cand: 10,
            p50_base: 100.0,
            p50_cand: 100.0 * ratio,
            ratio,
            ci_low: ci.0,
            ci_high: ci.1,
            confidence: 0.95,
            lower_bound: ci.0,
            upper_bound: ci.1,
            bound_level: Some(0.96),
            se: Some(0.001),
            df: Some(9.0),
            margin_p: p_slow,
            margin_p_faster: p_fast,
            stage: 1,
            cliffs_delta: delta,
            cliffs_magnitude: Magnitude::of(delta),
            mwu_u: 0.0,
            mwu_p: 0.5,
            mwu_p_faster: 0.5,
            min_detectable: 0.03,
            process_sd: None,
            process_sd_source: None,
            process_sd_assumed: false,
            min_flaggable: None,
        }
    }

    fn ab(ratio: f64, ci: (f64, f64), p_slow: f64, p_fast: f64, delta: f64) -> Comparison {
        cmp(Reference::Ab, ratio, ci, p_slow, p_fast, delta)
    }

    fn stored(ratio: f64, ci: (f64, f64), p_slow: f64, p_fast: f64, delta: f64) -> Comparison {
        cmp(Reference::Stored, ratio, ci, p_slow, p_fast, delta)
    }

    fn same() -> Comparison {
        ab(1.0, (0.99, 1.01), 1.0, 1.0, 0.0)
    }

    fn ev<'a>(ab: Option<&'a Comparison>, stored: Option<&'a Comparison>) -> Evidence<'a> {
        Evidence {
            measured: true,
            parity_passed: Some(true),
            ab,
            stored,
            stored_other_method: false,
        }
    }

    fn gate() -> GateSettings {
        GateSettings::default()
    }

    fn v(e: &Evidence) -> Verdict {
        decide(&gate(), e).verdict
    }

    #[test]
    fn error_comes_first() {
        let c = ab(1.5, (1.4, 1.6), 1e-9, 1.0, 1.0);
        let e = Evidence {
            measured: false,
            parity_passed: Some(false),
            ..ev(Some(&c), None)
        };
        assert_eq!(
            decide(&gate(), &e),
            Decision {
                verdict: Verdict::Error,
                decided_by: None
            }
        );
    }

    #[test]
    fn parity_fail_beats_timing() {
        let c = ab(0.5, (0.4, 0.6), 1.0, 1e-9, -1.0);
        let e = Evidence {
            parity_passed: Some(false),
            ..ev(Some(&c), None)
        };
        assert_eq!(v(&e), Verdict::ParityFail);
    }

    #[test]
    fn neither_reference_is_no_baseline() {
        assert_eq!(
            decide(&gate(), &ev(None, None)),
            Decision {
                verdict: Verdict::NoBaseline,
                decided_by: None
            }
        );
        // Offline compare has no parity: still decided on timing.
        let c = same();
        let e = Evidence {
            parity_passed: None,
            ..ev(Some(&c), None)
        };
        assert_eq!(v(&e), Verdict::Pass);
    }

    #[test]
    fn a_stored_baseline_of_another_method_is_no_reference() {
        fn other(e: Evidence<'_>) -> Evidence<'_> {
            Evidence {
                stored_other_method: true,
                ..e
            }
        }
        // Alone: other-method, whatever the stored numbers would have said.
        let slow = stored(1.10, (1.08, 1.12), 0.001, 0.999, 0.9);
        assert_eq!(
            decide(&gate(), &other(ev(None, Some(&slow)))),
            Decision {
                verdict: Verdict::OtherMethod,
                decided_by: None
            }
        );
        assert_eq!(v(&other(ev(None, None))), Verdict::OtherMethod);
        // With A/B, the A/B decides, and no drift is read from the stored numbers.
        let a = same();
        assert_eq!(v(&ev(Some(&a), Some(&slow))), Verdict::Drift);
        assert_eq!(
            decide(&gate(), &other(ev(Some(&a), Some(&slow)))),
            Decision {
                verdict: Verdict::Pass,
                decided_by: Some(Reference::Ab)
            }
        );
        let r = ab(1.05, (1.03, 1.07), 0.001, 0.999, 0.6);
        assert_eq!(v(&other(ev(Some(&r), None))), Verdict::Regression);
        // Errors and parity come first, as ever.
        let e = Evidence {
            parity_passed: Some(false),
            ..other(ev(None, None))
        };
        assert_eq!(v(&e), Verdict::ParityFail);
        // It warns and never fails, under either policy.
        assert!(Verdict::OtherMethod.warns());
        let push = Policy {
            fail_on_drift: true,
        };
        assert!(!Policy::default().fails(Verdict::OtherMethod, None));
        assert!(!push.fails(Verdict::OtherMethod, None));
    }

    #[test]
    fn regression_is_the_lower_bound_above_the_margin_alone() {
        let c = ab(1.05, (1.03, 1.07), 0.001, 0.999, 0.6);
        assert_eq!(
            decide(&gate(), &ev(Some(&c), None)),
            Decision {
                verdict: Verdict::Regression,
                decided_by: Some(Reference::Ab)
            }
        );
        assert!(slower_with_confidence(&gate(), &c));
        // The bound reaches below 1 + m: not confident it is past the margin.
        let c = ab(1.05, (1.01, 1.07), 0.001, 0.999, 0.6);
        assert_eq!(v(&ev(Some(&c), None)), Verdict::Inconclusive);
        // Cliff's delta, Mann-Whitney and the reported p are not part of the rule: a bound
        // above the margin is a regression with a negligible delta too.
        let c = ab(1.05, (1.03, 1.07), 0.2, 0.8, 0.0);
        assert_eq!(v(&ev(Some(&c), None)), Verdict::Regression);
        // Exactly at the margin is not above it.
        let c = ab(1.05, (1.02, 1.07), 0.001, 0.999, 0.6);
        assert_eq!(v(&ev(Some(&c), None)), Verdict::Inconclusive);
    }

    #[test]
    fn improvement_is_the_mirror_image() {
        let c = ab(0.95, (0.93, 0.97), 0.999, 0.001, -0.6);
        assert_eq!(v(&ev(Some(&c), None)), Verdict::Improvement);
        assert!(faster_with_confidence(&gate(), &c));
        let c = ab(0.95, (0.93, 0.99), 0.999, 0.001, -0.6);
        assert_eq!(v(&ev(Some(&c), None)), Verdict::Inconclusive);
        let c = ab(0.95, (0.93, 0.98), 0.999, 0.3, 0.0);
        assert_eq!(v(&ev(Some(&c), None)), Verdict::Inconclusive);
        let c = ab(0.95, (0.93, 0.97), 0.999, 0.3, 0.0);
        assert_eq!(v(&ev(Some(&c), None)), Verdict::Improvement);
    }

    #[test]
    fn ab_decides_over_the_stored_baseline() {
        // A/B says 5% slower; the stored baseline says nothing: a regression by A/B.
        let a = ab(1.05, (1.03, 1.07), 0.001, 0.999, 0.6);
        let s = stored(1.0, (0.98, 1.02), 1.0, 1.0, 0.0);
        assert_eq!(
            decide(&gate(), &ev(Some(&a), Some(&s))),
            Decision {
                verdict: Verdict::Regression,
                decided_by: Some(Reference::Ab)
            }
        );
        // A/B clean, stored says a regression: drift, decided by the stored baseline.
        let a = same();
        let s = stored(1.05, (1.03, 1.07), 0.001, 0.999, 0.6);
        assert_eq!(
            decide(&gate(), &ev(Some(&a), Some(&s))),
            Decision {
                verdict: Verdict::Drift,
                decided_by: Some(Reference::Stored)
            }
        );
        // A/B inconclusive (past the margin without evidence): not a drift.
        let a = ab(1.03, (1.01, 1.05), 0.2, 1.0, 0.6);
        assert_eq!(v(&ev(Some(&a), Some(&s))), Verdict::Inconclusive);
        // The stored baseline only hints: pass.
        let s = stored(1.03, (1.01, 1.05), 0.2, 1.0, 0.6);
        assert_eq!(v(&ev(Some(&same()), Some(&s))), Verdict::Pass);
        // A stored baseline that says faster is no drift either.
        let s = stored(0.95, (0.93, 0.97), 1.0, 0.001, -0.6);
        assert_eq!(v(&ev(Some(&same()), Some(&s))), Verdict::Pass);
    }

    #[test]
    fn without_a_base_the_stored_baseline_decides() {
        let s = stored(1.05, (1.03, 1.07), 0.001, 0.999, 0.6);
        assert_eq!(
            decide(&gate(), &ev(None, Some(&s))),
            Decision {
                verdict: Verdict::Regression,
                decided_by: Some(Reference::Stored)
            }
        );
        let s = stored(1.03, (0.99, 1.07), 0.3, 1.0, 0.6);
        assert_eq!(v(&ev(None, Some(&s))), Verdict::Inconclusive);
        let s = stored(0.95, (0.93, 0.97), 1.0, 0.001, -0.6);
        assert_eq!(v(&ev(None, Some(&s))), Verdict::Improvement);
    }

    #[test]
    fn inside_margin_passes_even_if_significant() {
        // 1% slower with a tight interval and tiny p: real, but under the 2% gate.
        let c = ab(1.01, (1.005, 1.015), 1.0, 1.0, 0.9);
        assert_eq!(
            decide(&gate(), &ev(Some(&c), None)),
            Decision {
                verdict: Verdict::Pass,
                decided_by: Some(Reference::Ab)
            }
        );
    }

    #[test]
    fn the_threshold_comes_from_settings() {
        let c = ab(1.05, (1.03, 1.07), 0.001, 0.999, 0.2);
        let mut g = gate();
        assert_eq!(decide(&g, &ev(Some(&c), None)).verdict, Verdict::Regression);
        g.max_p50_regression = 0.1;
        assert_eq!(decide(&g, &ev(Some(&c), None)).verdict, Verdict::Pass);
    }

    #[test]
    fn which_verdicts_fail_the_gate() {
        let pr = Policy::default();
        let push = Policy {
            fail_on_drift: true,
        };
        for v in [
            Verdict::Pass,
            Verdict::NoBaseline,
            Verdict::Improvement,
            Verdict::Inconclusive,
            Verdict::Drift,
        ] {
            assert!(!pr.fails(v, None), "{v}");
        }
        for v in [Verdict::Error, Verdict::ParityFail, Verdict::Regression] {
            assert!(pr.fails(v, None), "{v}");
            assert!(push.fails(v, None), "{v}");
        }
        assert!(push.fails(Verdict::Drift, None));
        assert!(Verdict::Drift.warns());
        // A drift traced to the runner warns and never fails; creep (or an unclear cause)
        // fails a push.
        assert!(!push.fails(Verdict::Drift, Some(DriftCause::Runner)));
        assert!(push.fails(Verdict::Drift, Some(DriftCause::Code)));
        assert!(push.fails(Verdict::Drift, Some(DriftCause::Unclear)));
        assert!(!pr.fails(Verdict::Drift, Some(DriftCause::Code)));
    }
}
