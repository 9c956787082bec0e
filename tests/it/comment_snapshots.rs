//! The PR comment as a reviewer reads it (insta snapshots of the Markdown): the verdict in
//! the second column, the figure that decided each row named by its reference, one next step
//! per kind of non-pass verdict, ⚠️ only for warnings to act on, figures readable as plain
//! text, and no empty table when there is no verdict.
//!
//! `cargo insta review` (or INSTA_UPDATE=always) after an intended change of the comment. The
//! footer's version is redacted (`common::without_version`).

use crate::common;

use chrono::{TimeZone, Utc};
use ci_gate::comparison::StoredSide;
use ci_gate::config::{Dtype, ShapeParams};
use ci_gate::evaluate::evaluate;
use ci_gate::report::{Exporter, MarkdownExporter, Report};
use ci_gate::results::{BaselineRef, DriftCause, DriftCheck, ResultsFile, ShapeResult};
use ci_gate::stats::ProcessSpread;
use ci_gate::verdict::{Policy, Verdict};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn shape(params: ShapeParams, rng: &mut ChaCha8Rng, cand: f64, base: f64) -> ShapeResult {
    let mut s = common::results("NVIDIA H200", &[1.0], 1).shapes.remove(0);
    s.name = params.name();
    s.params = params;
    s.samples_us = common::rounds(rng, 100.0 * cand, 0.004, 8, 10);
    s.base_samples_us = common::rounds(rng, 100.0 * base, 0.004, 8, 10);
    s
}

/// An A/B run of seven shapes against a stored baseline at 100 µs: pass, drift (the runner
/// moved), regression, improvement, inconclusive, parity-fail and error.
fn mixed_run() -> ResultsFile {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let p = |b, h, s, d, causal| ShapeParams::new(b, h, s, d, causal, Dtype::Float16);
    let mut shapes = vec![
        shape(p(1, 8, 512, 64, false), &mut rng, 1.0, 1.0),
        shape(p(1, 8, 512, 64, true), &mut rng, 1.045, 1.045),
        shape(p(1, 8, 1024, 64, false), &mut rng, 1.06, 1.0),
        shape(p(1, 8, 1024, 64, true), &mut rng, 0.94, 1.0),
        shape(p(1, 8, 2048, 64, false), &mut rng, 1.021, 1.0),
        shape(p(1, 8, 2048, 64, true), &mut rng, 1.0, 1.0),
        shape(p(1, 8, 4096, 64, false), &mut rng, 1.0, 1.0),
    ];
    // The inconclusive one: a noisy shape around the margin.
    shapes[4].samples_us = common::rounds(&mut rng, 101.0, 0.12, 8, 10);
    shapes[5].parity.as_mut().unwrap().rel_l2 = 3.2e-2;
    shapes[5].parity.as_mut().unwrap().unwritten = 64;
    shapes[6].error = Some(
        "kernels/attention.cu(212): error: identifier \"tile_k\" is undefined (NVRTC, sm_90a)"
            .into(),
    );
    shapes[6].samples_us.clear();
    shapes[6].base_samples_us.clear();
    let mut stored_rng = ChaCha8Rng::seed_from_u64(7);
    let stored: Vec<Vec<Vec<f64>>> = (0..shapes.len())
        .map(|_| common::rounds(&mut stored_rng, 100.0, 0.004, 15, 10))
        .collect();
    let names: Vec<String> = shapes.iter().map(|s| s.name.clone()).collect();
    let gate = ci_gate::config::GateSettings::default();
    evaluate(
        &mut shapes,
        |s| {
            let i = names.iter().position(|n| *n == s.name)?;
            Some(StoredSide::recorded(
                stored[i].clone(),
                vec![3; 5],
                Some(ProcessSpread { sd: 0.003, df: 4.0 }),
            ))
        },
        &gate,
        Policy::default(),
    )
    .unwrap();
    // The drift was traced: the baseline's own kernels are as slow now.
    shapes[1].drift = Some(DriftCheck {
        commit: "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2".into(),
        samples_us: Vec::new(),
        cand_samples_us: Vec::new(),
        cand_vs_commit: None,
        commit_vs_stored: None,
        cause: DriftCause::Runner,
    });
    let mut r = common::results("NVIDIA H200", &[1.0], 1);
    r.config.path = "base/configs/pr.yaml".into();
    r.passed = false;
    r.shapes = shapes;
    r.baseline = Some(BaselineRef {
        path: "base/baselines/nvidia-h200/pr.json".into(),
        commit: Some("a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2".into()),
        recorded_at: Utc.with_ymd_and_hms(2026, 11, 2, 9, 30, 0).unwrap(),
        method: r.method.clone(),
    });
    r.warnings = vec![
        "the SM clock changed while measuring b1h8s512d64_f16 (1965-1980 MHz): those timings carry the change".into(),
        "the baseline was recorded with driver 575.57.08, this run uses 580.159.04".into(),
    ];
    r
}

fn render(r: &ResultsFile) -> String {
    let mut report = Report::from_results(r);
    report.run_url = Some("https://github.com/octo/gpu-kernels/actions/runs/4242".into());
    MarkdownExporter.render(&report)
}

#[test]
fn a_mixed_run_reads_in_ten_seconds() {
    let r = mixed_run();
    let verdicts: Vec<Verdict> = r.shapes.iter().map(|s| s.verdict).collect();
    assert_eq!(
        verdicts,
        [
            Verdict::Pass,
            Verdict::Drift,
            Verdict::Regression,
            Verdict::Improvement,
            Verdict::Inconclusive,
            Verdict::ParityFail,
            Verdict::Error
        ]
    );
    let md = render(&r);
    // Verdict second; the drift row names the stored figure that decided it.
    assert!(md.contains("| Shape | Verdict | Deciding Δ |"), "{md}");
    let drift_row = md
        .lines()
        .find(|l| l.starts_with("| b1h8s512d64_causal_f16 |"))
        .unwrap();
    assert!(
        drift_row.contains("| drift (runner moved) | stored +"),
        "{drift_row}"
    );
    // Every non-pass verdict has its next step.
    for step in [
        "**drift (runner moved)** on",
        "**regression** on",
        "**improvement** on",
        "**inconclusive** on",
        "**parity-fail** on",
        "**error** on",
    ] {
        assert!(md.contains(step), "{step}: {md}");
    }
    // ⚠️ for the driver change, not for the clock that moved (a note).
    assert!(
        md.contains("> ⚠️ the baseline was recorded with driver"),
        "{md}"
    );
    assert!(md.contains("> ℹ️ the SM clock changed"), "{md}");
    assert!(!md.contains("&#46;"), "{md}");
    insta::assert_snapshot!(common::without_version(&md));
}

#[test]
fn a_run_without_a_verdict_has_no_empty_table() {
    let mut r = common::results("NVIDIA H200", &[1.0], 1);
    r.shapes.clear();
    r.passed = false;
    r.error = Some("no NVIDIA driver found (libcuda.so could not be loaded)".into());
    let md = render(&r);
    assert!(!md.contains("| Shape"), "{md}");
    assert!(!md.contains("All figures"), "{md}");
    insta::assert_snapshot!(common::without_version(&md));
}

#[test]
fn a_clean_pass_is_one_line_and_a_table() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut shapes = vec![shape(
        ShapeParams::new(2, 16, 2048, 128, true, Dtype::Bfloat16),
        &mut rng,
        1.0,
        1.0,
    )];
    let gate = ci_gate::config::GateSettings::default();
    evaluate(&mut shapes, |_| None, &gate, Policy::default()).unwrap();
    assert_eq!(shapes[0].verdict, Verdict::Pass);
    let mut r = common::results("NVIDIA H200", &[1.0], 1);
    r.shapes = shapes;
    let md = render(&r);
    assert!(md.contains("### ✅ ci-gate: PASS: 1 pass"), "{md}");
    insta::assert_snapshot!(common::without_version(&md));
}
