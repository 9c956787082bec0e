//! A candidate's verdict from its measuring process's results file ([`judge`]), and the seeds'
//! acceptance rule ([`Rule`]).
//!
//! Nothing here decides a shape: each shape's verdict is the gate's own (`verdict::decide`
//! under the planned two-stage design, `evaluate::open_shapes`, run by the measuring
//! process at the margin m = `gate.max_p50_regression`). The candidate's verdict is read from
//! them, in the gate's order: `error` if any shape could not be measured, `parity-fail` if
//! any failed parity (its own shapes, random shapes, or the per-launch checks), `slower` if
//! any is a `regression`, `faster` if any is an `improvement`, else `same`. A shape is a
//! *win* under the same rule at the margin `eval.min_speedup`
//! (`verdict::faster_with_confidence`: its one-sided upper bound below 1 − min_speedup).
//!
//! Cost: linear in the shapes.

use crate::comparison::Comparison;
use crate::config::{Config, GateSettings};
use crate::results::{ResultsFile, ShapeResult};
use crate::text::{clip_text, terminal_text};
use crate::verdict::{Verdict as ShapeVerdict, faster_with_confidence};

use super::protocol::{
    Interval, MAX_REASON_CHARS, ParityLine, ProbesLine, RuleLine, RunLine, ShapeLine, SidesLine,
    Verdict,
};

/// The seeds' acceptance rule: at least `min_shapes` wins at `min_speedup`, no shape's ratio
/// above 1 + `margin`, parity everywhere.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rule {
    /// The gate's margin m (`gate.max_p50_regression`): `slower` and the largest slowdown
    /// a shape of an accepted candidate may show.
    pub margin: f64,
    pub min_speedup: f64,
    pub min_shapes: u32,
    /// The gate's settings, for the rule at the margin `min_speedup`.
    gate: GateSettings,
}

impl Rule {
    pub fn of(config: &Config) -> Rule {
        Rule {
            margin: config.gate.max_p50_regression,
            min_speedup: config.eval.min_speedup,
            min_shapes: config.eval.min_shapes,
            gate: config.gate.clone(),
        }
    }

    pub fn line(&self) -> RuleLine {
        RuleLine {
            min_speedup: self.min_speedup,
            min_shapes: self.min_shapes,
            max_regression: self.margin,
        }
    }

    /// A win: faster than the reference by more than `min_speedup`, with confidence (the
    /// gate's rule at that margin).
    pub fn win(&self, c: &Comparison) -> bool {
        let at = GateSettings {
            max_p50_regression: self.min_speedup,
            ..self.gate.clone()
        };
        faster_with_confidence(&at, c)
    }
}

/// What a measuring process's results say of a candidate.
#[derive(Clone, Debug)]
pub(crate) struct Judgement {
    pub verdict: Verdict,
    pub reason: String,
    pub shapes: Vec<ShapeLine>,
    pub probes: ProbesLine,
    /// Whether this measurement meets the acceptance rule, its wins, and why.
    pub meets_rule: bool,
    pub wins: Vec<String>,
    pub why: String,
}

/// One line of text from a results file, safe to write.
fn clean(text: &str) -> String {
    clip_text(&terminal_text(text), MAX_REASON_CHARS)
}

/// `+2.4%` for a ratio of 1.024.
fn percent(ratio: f64) -> String {
    format!("{:+.1}%", (ratio - 1.0) * 100.0)
}

fn shape_line(s: &ShapeResult, rule: &Rule) -> ShapeLine {
    let ab = s.ab.as_ref();
    let base_p50 = s.base_summary.as_ref().map(|x| x.p50);
    let tflops = |p50: f64| s.params.tflops(p50);
    ShapeLine {
        name: s.name.clone(),
        verdict: s.verdict.as_str().to_owned(),
        error: s.error.as_deref().or(s.integrity.as_deref()).map(clean),
        ratio: ab.map(|c| c.ratio),
        interval: ab.map(|c| Interval {
            low: c.lower_bound,
            high: c.upper_bound.is_finite().then_some(c.upper_bound),
            one_sided_level: c.bound_level,
        }),
        pairs: s.measurement.as_ref().map(|m| m.rounds),
        p50_us: s.summary.as_ref().map(|c| SidesLine {
            reference: base_p50,
            candidate: Some(c.p50),
        }),
        tflops: s.summary.as_ref().map(|_| SidesLine {
            reference: base_p50.map(tflops),
            candidate: s.tflops,
        }),
        parity: (s.parity.is_some() || s.base_parity.is_some()).then(|| ParityLine {
            reference: s.base_parity.clone(),
            candidate: s.parity.clone(),
            reference_from_line: None,
        }),
        win: ab.is_some_and(|c| rule.win(c)),
    }
}

fn probes_line(results: &ResultsFile) -> ProbesLine {
    ProbesLine {
        checked: results.probes.len(),
        failed: results
            .probes
            .iter()
            .filter_map(|p| match (&p.error, &p.parity) {
                (Some(e), _) => Some(format!("{}: {}", p.name, clean(e))),
                (None, Some(q)) if !q.passed() => Some(format!(
                    "{}: rel L2 {:.2e}, max abs {:.2e}{}, {} NaN/Inf, {} unwritten",
                    p.name,
                    q.rel_l2,
                    q.max_abs,
                    q.centered_phrase(),
                    q.nan_or_inf,
                    q.unwritten
                )),
                (None, None) => Some(format!("{}: not checked", p.name)),
                _ => None,
            })
            .collect(),
    }
}

/// Why a shape failed parity, in one phrase.
fn parity_failure(s: &ShapeResult) -> String {
    match (&s.integrity, &s.parity) {
        (Some(i), _) => clean(i),
        (None, Some(p)) => format!(
            "rel L2 {:.2e} (tolerance {:.1e}), max abs {:.2e} (tolerance {:.1e}){}, {} NaN/Inf, {} unwritten",
            p.rel_l2,
            p.tolerance.rel_l2,
            p.max_abs,
            p.tolerance.max_abs,
            p.centered_phrase(),
            p.nan_or_inf,
            p.unwritten
        ),
        (None, None) => "failed".into(),
    }
}

/// `error` or `parity-fail` and why, where the results say either (the gate's order: any
/// shape not measured, then any parity failure, on its shapes or on random ones).
fn failure_of(
    results: &ResultsFile,
    expected: &[String],
    probes: &ProbesLine,
) -> Option<(Verdict, String)> {
    if let Some(e) = &results.error {
        return Some((Verdict::Error, clean(e)));
    }
    let names: Vec<&str> = results.shapes.iter().map(|s| s.name.as_str()).collect();
    if names != expected {
        let why = format!(
            "the measuring process returned the shapes [{}], not the {} asked for",
            clean(&names.join(", ")),
            expected.len()
        );
        return Some((Verdict::Error, why));
    }
    if let Some(s) = results.shapes.iter().find(|s| s.error.is_some()) {
        let why = clean(s.error.as_deref().unwrap_or_default());
        return Some((Verdict::Error, format!("{}: {why}", s.name)));
    }
    let failed = |s: &&ShapeResult| s.parity_passed() == Some(false);
    if let Some(s) = results.shapes.iter().find(failed) {
        let why = format!("parity fails on {}: {}", s.name, parity_failure(s));
        return Some((Verdict::ParityFail, why));
    }
    if let Some(first) = probes.failed.first() {
        let why = format!("parity fails on a random shape: {first}");
        return Some((Verdict::ParityFail, why));
    }
    let unjudged = |s: &&ShapeResult| s.parity.is_none() || s.ab.is_none();
    if let Some(s) = results.shapes.iter().find(unjudged) {
        let what = if s.parity.is_none() {
            "parity"
        } else {
            "A/B comparison"
        };
        return Some((
            Verdict::Error,
            format!("{}: no {what} was measured", s.name),
        ));
    }
    None
}

/// The candidate's verdict and one sentence, from the shapes' own (see the module docs).
fn verdict_of(
    results: &ResultsFile,
    expected: &[String],
    probes: &ProbesLine,
) -> (Verdict, String) {
    if let Some(failed) = failure_of(results, expected, probes) {
        return failed;
    }
    let named = |v: ShapeVerdict| -> Vec<String> {
        let ratio = |s: &ShapeResult| percent(s.ab.as_ref().map_or(1.0, |c| c.ratio));
        results
            .shapes
            .iter()
            .filter(|s| s.verdict == v)
            .map(|s| format!("{} ({})", s.name, ratio(s)))
            .collect()
    };
    let m = format!("{:.1}%", results.gate.max_p50_regression * 100.0);
    let slower = named(ShapeVerdict::Regression);
    if !slower.is_empty() {
        let why = format!(
            "slower than the reference by more than {m} with confidence on {}",
            slower.join(", ")
        );
        return (Verdict::Slower, why);
    }
    let faster = named(ShapeVerdict::Improvement);
    if !faster.is_empty() {
        let why = format!(
            "faster than the reference by more than {m} with confidence on {}, slower on none",
            faster.join(", ")
        );
        return (Verdict::Faster, why);
    }
    let ratios = results
        .shapes
        .iter()
        .filter_map(|s| s.ab.as_ref().map(|c| c.ratio));
    let (lo, hi) = ratios.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), r| {
        (a.min(r), b.max(r))
    });
    let why = format!(
        "no shape is more than {m} faster or slower with confidence (ratios {} to {})",
        percent(lo),
        percent(hi)
    );
    (Verdict::Same, why)
}

/// The acceptance rule on one measurement: (meets, wins, why).
fn rule_of(verdict: Verdict, shapes: &[ShapeLine], rule: &Rule) -> (bool, Vec<String>, String) {
    let wins: Vec<String> = shapes
        .iter()
        .filter(|s| s.win)
        .map(|s| s.name.clone())
        .collect();
    if matches!(
        verdict,
        Verdict::Error | Verdict::ParityFail | Verdict::Refused
    ) {
        return (
            false,
            wins,
            format!("the measurement is {}", verdict.as_str()),
        );
    }
    let limit = 1.0 + rule.margin;
    if let Some(s) = shapes.iter().find(|s| s.ratio.is_none_or(|r| r > limit)) {
        return (
            false,
            wins,
            format!(
                "{} is {}, past the {} regression margin",
                s.name,
                s.ratio.map_or("unmeasured".into(), percent),
                percent(limit)
            ),
        );
    }
    let speedup = format!("{:.1}%", rule.min_speedup * 100.0);
    let listed = if wins.is_empty() {
        String::new()
    } else {
        format!(" ({})", wins.join(", "))
    };
    if (wins.len() as u32) < rule.min_shapes {
        return (
            false,
            wins.clone(),
            format!(
                "faster by more than {speedup} with confidence on {} shape(s){listed}, fewer than the {} required",
                wins.len(),
                rule.min_shapes
            ),
        );
    }
    (
        true,
        wins.clone(),
        format!(
            "faster by more than {speedup} with confidence on {} shape(s){listed}, at least {}, parity everywhere and no shape past {}",
            wins.len(),
            rule.min_shapes,
            percent(limit)
        ),
    )
}

/// Judges a candidate from its measuring process's `results` (already loaded and checked as
/// any results file), whose shapes must be `expected`, in order.
pub(crate) fn judge(results: &ResultsFile, expected: &[String], rule: &Rule) -> Judgement {
    let shapes: Vec<ShapeLine> = results.shapes.iter().map(|s| shape_line(s, rule)).collect();
    let probes = probes_line(results);
    let (verdict, reason) = verdict_of(results, expected, &probes);
    let (meets_rule, wins, why) = rule_of(verdict, &shapes, rule);
    Judgement {
        verdict,
        reason,
        shapes,
        probes,
        meets_rule,
        wins,
        why,
    }
}

/// The measuring process's own breakdown of its time.
pub(crate) fn run_line(results: &ResultsFile) -> Option<RunLine> {
    results.timing.as_ref().map(|t| RunLine {
        setup_s: t.setup_s,
        lock_wait_s: t.lock_wait_s,
        probes_s: t.probes_s,
        parity_s: t.parity_s,
        measure_s: t.measure_s,
        total_s: t.total_s,
        references_s: t.references_s,
        preparing_s: t.preparing_s,
        sampling_s: t.sampling_s,
        finishing_s: t.finishing_s,
        detail_s: t.detail_s.clone(),
    })
}

/// The results file's warnings and notes a reader of the line should see, cleaned.
pub(crate) fn warnings(results: &ResultsFile) -> Vec<String> {
    results.warnings.iter().map(|w| clean(w)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::StageDesign;
    use crate::config::{Dtype, ShapeParams, Tolerance};
    use crate::results::Parity;

    fn config() -> Config {
        Config::parse(
            "shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, dtype: f16}\n  - {batch: 1, heads: 8, seq_len: 1024, head_dim: 64, dtype: f16}\n",
            std::path::Path::new("e.yaml"),
        )
        .unwrap()
    }

    fn parity(bad: bool) -> Parity {
        Parity {
            max_abs: if bad { 0.5 } else { 1e-4 },
            rel_l2: 1e-5,
            centered: None,
            nan_or_inf: 0,
            unwritten: 0,
            tolerance: Tolerance {
                max_abs: 1e-2,
                rel_l2: 1e-3,
                centered: None,
            },
            seed: 1,
        }
    }

    /// A results file whose shapes have A/B pairs around `factors` (tight, 16 pairs), decided
    /// by the gate's own `evaluate`.
    fn results(factors: &[f64]) -> (ResultsFile, Vec<String>) {
        let c = config();
        let mut shapes = Vec::new();
        for (p, f) in c.shapes.iter().zip(factors) {
            let mut s = ShapeResult::new(*p);
            let pairs = 16;
            s.base_samples_us = (0..pairs)
                .map(|i| {
                    (0..10)
                        .map(|j| 100.0 + 0.01 * ((i * 7 + j * 3) % 11) as f64)
                        .collect()
                })
                .collect();
            s.samples_us = s
                .base_samples_us
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let wobble = 1.0 + 0.002 * (((i * 5) % 7) as f64 - 3.0) / 3.0;
                    r.iter().map(|x| x * f * wobble).collect()
                })
                .collect();
            s.summary = crate::stats::Sample::new(s.samples_us.concat())
                .ok()
                .map(|x| x.summary());
            s.base_summary = crate::stats::Sample::new(s.base_samples_us.concat())
                .ok()
                .map(|x| x.summary());
            s.parity = Some(parity(false));
            s.base_parity = Some(parity(false));
            s.measurement = Some(crate::results::MeasurementInfo {
                cache: crate::config::CacheMode::Hot,
                launches_per_sample: 10,
                rounds: pairs,
                extra_rounds: 0,
                working_set_bytes: 0,
                wall_s: 0.0,
                sm_clock_mhz: None,
                design: Some(StageDesign {
                    stage1: 16,
                    max: 16,
                }),
                checked_launches: 0,
                unwitnessed: None,
            });
            shapes.push(s);
        }
        crate::evaluate::evaluate(&mut shapes, |_| None, &c.gate, Default::default()).unwrap();
        let names = shapes.iter().map(|s| s.name.clone()).collect();
        let mut r = ResultsFile::failed(Some(&c), String::new());
        r.error = None;
        r.shapes = shapes;
        (r, names)
    }

    #[test]
    fn the_candidate_s_verdict_is_read_from_the_gate_s_shape_verdicts() {
        let rule = Rule::of(&config());
        let (r, names) = results(&[0.95, 0.96]);
        let j = judge(&r, &names, &rule);
        assert_eq!(j.verdict, Verdict::Faster, "{}", j.reason);
        assert!(j.meets_rule, "{}", j.why);
        assert_eq!(j.wins.len(), 2);
        assert!(j.shapes.iter().all(|s| s.verdict == "improvement"));
        // One win is not enough for the rule; the verdict is still `faster`.
        let (r, names) = results(&[0.95, 1.0]);
        let j = judge(&r, &names, &rule);
        assert_eq!(j.verdict, Verdict::Faster);
        assert!(
            !j.meets_rule && j.why.contains("fewer than the 2 required"),
            "{}",
            j.why
        );
        // 2.5% faster is an improvement at the 2% margin, but no win at 3%.
        let (r, names) = results(&[0.975, 0.975]);
        let j = judge(&r, &names, &rule);
        assert_eq!((j.verdict, j.wins.len()), (Verdict::Faster, 0));
        let (r, names) = results(&[0.95, 1.05]);
        let j = judge(&r, &names, &rule);
        assert_eq!(j.verdict, Verdict::Slower, "{}", j.reason);
        assert!(
            j.reason.contains("b1h8s1024d64_f16 (+5.0%)"),
            "{}",
            j.reason
        );
        assert!(!j.meets_rule && j.why.contains("past the +2.0% regression margin"));
        let (r, names) = results(&[1.0, 1.0]);
        let j = judge(&r, &names, &rule);
        assert_eq!(j.verdict, Verdict::Same, "{}", j.reason);
        assert!(
            j.reason
                .starts_with("no shape is more than 2.0% faster or slower"),
            "{}",
            j.reason
        );
    }

    #[test]
    fn errors_and_parity_come_first_and_fail_the_rule() {
        let rule = Rule::of(&config());
        let (mut r, names) = results(&[0.9, 0.9]);
        r.shapes[1].parity = Some(parity(true));
        crate::evaluate::evaluate(&mut r.shapes, |_| None, &config().gate, Default::default())
            .unwrap();
        let j = judge(&r, &names, &rule);
        assert_eq!(j.verdict, Verdict::ParityFail);
        assert!(
            j.reason.starts_with("parity fails on b1h8s1024d64_f16: "),
            "{}",
            j.reason
        );
        assert!(!j.meets_rule);
        r.shapes[0].error = Some("CUDA_ERROR_ILLEGAL_ADDRESS\u{1b}[2J".into());
        let j = judge(&r, &names, &rule);
        assert_eq!(j.verdict, Verdict::Error);
        assert_eq!(j.reason, "b1h8s512d64_f16: CUDA_ERROR_ILLEGAL_ADDRESS");
        r.error = Some("the GPU hung".into());
        assert_eq!(judge(&r, &names, &rule).reason, "the GPU hung");
        // Fail closed: shapes other than those asked for.
        let (r, _) = results(&[0.9, 0.9]);
        let j = judge(&r, &["b1h8s512d64_f16".into()], &rule);
        assert_eq!(j.verdict, Verdict::Error);
        assert!(j.reason.contains("not the 1 asked for"), "{}", j.reason);
        // A shape without parity measured is no verdict.
        let (mut r, names) = results(&[0.9, 0.9]);
        r.shapes[0].parity = None;
        let j = judge(&r, &names, &rule);
        assert_eq!(j.verdict, Verdict::Error);
        assert!(j.reason.contains("no parity was measured"), "{}", j.reason);
        let _ = ShapeParams::new(1, 1, 1, 64, false, Dtype::Float16);
    }
}
