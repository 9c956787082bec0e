//! Cross-checks `ci_gate::stats` against numpy / scipy / statsmodels.
//!
//! The reference numbers live in `tests/vectors/stats_vectors.json`, written by
//! `tests/vectors/make_vectors.py` (see its header for how to re-run it and the library
//! versions used).

use std::path::PathBuf;

use ci_gate::stats::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct Vectors {
    meta: Meta,
    cases: Vec<Case>,
    holm: Vec<HolmCase>,
}

#[derive(Deserialize)]
struct Meta {
    scipy: String,
    resamples: u32,
    confidence: f64,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    base: Vec<Vec<f64>>,
    cand: Vec<Vec<f64>>,
    base_stats: Described,
    cand_stats: Described,
    mwu_greater: Mwu,
    mwu_less: Mwu,
    mwu_method: String,
    cliffs_delta: f64,
    bootstrap: Option<Boot>,
}

#[derive(Deserialize)]
struct Described {
    n: usize,
    median: f64,
    q90: f64,
    mean: f64,
    std: f64,
}

#[derive(Deserialize)]
struct Mwu {
    u: f64,
    p: f64,
}

#[derive(Deserialize)]
struct Boot {
    resamples: u32,
    confidence: f64,
    rust_seed: u64,
    low: f64,
    high: f64,
    point: f64,
    numpy_spread: f64,
}

#[derive(Deserialize)]
struct HolmCase {
    p: Vec<f64>,
    adjusted: Vec<f64>,
}

fn vectors() -> Vectors {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/stats_vectors.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("stats_vectors.json does not parse")
}

/// |got − want| ≤ tol · |want| (exact equality also passes, e.g. for 0).
fn close(got: f64, want: f64, tol: f64) -> bool {
    got == want || (got - want).abs() <= tol * want.abs()
}

#[track_caller]
fn assert_close(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        close(got, want, tol),
        "{what}: got {got:e}, want {want:e} (rel. diff {:e}, tol {tol:e})",
        ((got - want) / want).abs()
    );
}

fn rounds(r: &[Vec<f64>]) -> Rounds {
    Rounds::new(r.to_vec()).expect("valid rounds")
}

#[test]
fn vectors_cover_the_required_cases() {
    let v = vectors();
    assert!(v.meta.scipy.starts_with("1."), "scipy {}", v.meta.scipy);
    assert!(v.cases.len() >= 20);
    let exact = v.cases.iter().filter(|c| c.mwu_method == "exact").count();
    let multi = v
        .cases
        .iter()
        .filter(|c| c.base.len() > 1 || c.cand.len() > 1)
        .count();
    let boots = v.cases.iter().filter(|c| c.bootstrap.is_some()).count();
    let big = v
        .cases
        .iter()
        .filter(|c| c.bootstrap.is_some() && c.base_stats.n >= 10_000 && c.cand_stats.n >= 10_000)
        .count();
    assert!(exact >= 8, "{exact} exact cases");
    assert!(multi >= 3, "{multi} multi-round cases");
    assert!(boots >= 10, "{boots} bootstrap cases");
    assert!(big >= 1, "no 10k x 10k bootstrap case");
    assert!(v.holm.len() >= 4);
}

#[test]
fn descriptive_statistics_match_numpy() {
    for c in vectors().cases {
        for (side, data, want) in [
            ("base", &c.base, &c.base_stats),
            ("cand", &c.cand, &c.cand_stats),
        ] {
            let s = rounds(data).pooled().clone();
            let what = |stat: &str| format!("{} {side} {stat}", c.name);
            assert_eq!(s.len(), want.n, "{}", what("n"));
            assert_close(&what("median"), s.median(), want.median, 1e-12);
            assert_close(&what("quantile(0.9)"), s.quantile(0.9), want.q90, 1e-12);
            let sum = s.summary();
            assert_eq!(sum.n, want.n);
            assert_eq!(sum.p50, s.median());
            assert_eq!(sum.p90, s.quantile(0.9));
            assert_close(&what("mean"), sum.mean, want.mean, 1e-12);
            // std of constant data is exactly 0 in both.
            assert_close(&what("std"), sum.stdev, want.std, 1e-12);
            assert_eq!(sum.min, s.sorted()[0]);
            assert_eq!(sum.max, *s.sorted().last().unwrap());
        }
    }
}

#[test]
fn mann_whitney_matches_scipy() {
    let mut checked_p = 0;
    let mut worst = 0.0_f64;
    for c in vectors().cases {
        let base = rounds(&c.base).pooled().clone();
        let cand = rounds(&c.cand).pooled().clone();
        for (alt, want) in [
            (Alternative::Greater, &c.mwu_greater),
            (Alternative::Less, &c.mwu_less),
        ] {
            let got = mann_whitney_u(&cand, &base, alt);
            let what = format!("{} {alt:?}", c.name);
            assert_close(&format!("{what} U"), got.u, want.u, 1e-9);
            let method = match got.method {
                PMethod::Exact => "exact",
                PMethod::Asymptotic => "asymptotic",
            };
            assert_eq!(method, c.mwu_method, "{what} method");
            assert!((0.0..=1.0).contains(&got.p), "{what} p = {}", got.p);
            if want.p >= 1e-12 {
                assert_close(&format!("{what} p"), got.p, want.p, 1e-9);
                worst = worst.max(((got.p - want.p) / want.p).abs());
                checked_p += 1;
            } else {
                assert!(
                    got.p < 1e-12,
                    "{what}: p {} should be tiny (scipy {})",
                    got.p,
                    want.p
                );
            }
        }
    }
    eprintln!("mann-whitney: {checked_p} p-values, largest relative difference {worst:e}");
    assert!(checked_p >= 40, "only {checked_p} p-values checked");
}

#[test]
fn cliffs_delta_matches_brute_force() {
    for c in vectors().cases {
        let base = rounds(&c.base).pooled().clone();
        let cand = rounds(&c.cand).pooled().clone();
        let d = cliffs_delta(&cand, &base);
        assert_close(&format!("{} delta", c.name), d, c.cliffs_delta, 1e-9);
        // Antisymmetric.
        assert_eq!(cliffs_delta(&base, &cand), -d, "{}", c.name);
    }
}

#[test]
fn holm_matches_statsmodels() {
    let v = vectors();
    for h in &v.holm {
        let got = holm(&h.p);
        assert_eq!(got.len(), h.adjusted.len());
        for (i, (&g, &w)) in got.iter().zip(&h.adjusted).enumerate() {
            assert!(
                close(g, w, 1e-12),
                "holm({:?})[{i}] = {g}, statsmodels {w}",
                h.p
            );
        }
    }
    assert!(holm(&[]).is_empty());
}

#[test]
fn bootstrap_interval_matches_numpy() {
    let v = vectors();
    let mut checked = 0;
    let mut worst = 0.0_f64;
    for c in &v.cases {
        let Some(b) = &c.bootstrap else { continue };
        assert_eq!(b.resamples, v.meta.resamples);
        assert_eq!(b.confidence, v.meta.confidence);
        // The reference must be stable enough for the 0.2 % tolerance to mean something.
        assert!(
            b.numpy_spread < 1e-3,
            "{}: numpy runs disagree by {}",
            c.name,
            b.numpy_spread
        );

        let base = rounds(&c.base);
        let cand = rounds(&c.cand);
        let point = ratio_of_medians(&base, &cand);
        assert_close(&format!("{} point estimate", c.name), point, b.point, 1e-12);

        let ci = ratio_of_medians_ci(&base, &cand, b.resamples, b.confidence, b.rust_seed)
            .expect("valid parameters");
        let width = b.high - b.low;
        for (end, got, want) in [("low", ci.low, b.low), ("high", ci.high, b.high)] {
            let what = format!(
                "{} {end}: rust {got}, numpy {want} (numpy width {width:e})",
                c.name
            );
            // The required tolerance: 0.2 % relative.
            assert!(close(got, want, 2e-3), "{what}");
            // For narrow intervals (10k values, 0.5 % spread) 0.2 % says little, so also
            // require agreement within a tenth of the interval's width, or within 5 times
            // numpy's own seed-to-seed spread where Monte-Carlo noise is larger than that.
            let tol = (0.1 * width).max(5.0 * b.numpy_spread * want.abs());
            assert!(
                (got - want).abs() <= tol,
                "{what}: off by more than {tol:e}"
            );
            worst = worst.max(((got - want) / want).abs());
        }
        eprintln!(
            "{:32} rust [{:.6}, {:.6}]  numpy [{:.6}, {:.6}]",
            c.name, ci.low, ci.high, b.low, b.high
        );
        checked += 1;
    }
    eprintln!("bootstrap: {checked} cases, largest relative difference of an end {worst:e}");
    assert!(checked >= 10, "only {checked} bootstrap cases checked");
}

/// Timing of the 10k × 10k workload (no assertion on time). Run with
/// `cargo test --release --test it -- --ignored --nocapture stats_vs_scipy::timing`.
#[test]
#[ignore = "timing print only; run in release"]
fn timing_10k_by_10k() {
    let v = vectors();
    let c = v
        .cases
        .iter()
        .find(|c| c.name == "timing_10k_slower_0p5pct")
        .expect("10k case present");
    let base = rounds(&c.base);
    let cand = rounds(&c.cand);
    assert_eq!(base.pooled().len(), 10_000);
    assert_eq!(cand.pooled().len(), 10_000);
    let mut best = [f64::INFINITY; 4];
    for _ in 0..5 {
        let t0 = std::time::Instant::now();
        let ci = ratio_of_medians_ci(&base, &cand, 10_000, 0.95, 1).unwrap();
        let t1 = std::time::Instant::now();
        let mw = mann_whitney_u(cand.pooled(), base.pooled(), Alternative::Greater);
        let t2 = std::time::Instant::now();
        let d = cliffs_delta(cand.pooled(), base.pooled());
        let t3 = std::time::Instant::now();
        std::hint::black_box((ci, mw, d));
        let ms = |a: std::time::Instant, b: std::time::Instant| (b - a).as_secs_f64() * 1e3;
        for (b, t) in best
            .iter_mut()
            .zip([ms(t0, t1), ms(t1, t2), ms(t2, t3), ms(t0, t3)])
        {
            *b = b.min(t);
        }
    }
    // The hierarchical path on the largest multi-round case (50 rounds x 50 values a side).
    let r = v
        .cases
        .iter()
        .find(|c| c.name == "rounds_50x50_vs_50x50")
        .expect("50x50 case present");
    let (rb, rc) = (rounds(&r.base), rounds(&r.cand));
    let t = std::time::Instant::now();
    std::hint::black_box(ratio_of_medians_ci(&rb, &rc, 10_000, 0.95, 1).unwrap());
    let hier = t.elapsed().as_secs_f64() * 1e3;
    // Also the cost of building the samples (validation + sort), which callers pay once.
    let t = std::time::Instant::now();
    let s = Sample::new(c.cand[0].clone()).unwrap();
    let build = t.elapsed().as_secs_f64() * 1e3;
    std::hint::black_box(s);
    eprintln!(
        "10k x 10k, best of 5: bootstrap (10k resamples) {:.2} ms, mann-whitney {:.3} ms, \
         cliff's delta {:.3} ms, total {:.2} ms; Sample::new(10k) {:.3} ms; \
         hierarchical bootstrap 50x50 vs 50x50 rounds (10k resamples) {:.1} ms",
        best[0], best[1], best[2], best[3], build, hier
    );
}
