//! Cross-checks the gate's trimmed-mean (Yuen) margin tests and its bootstraps
//! (`src/stats/margin.rs`, `src/stats/bootstrap.rs`) against numpy / scipy.
//!
//! The reference numbers live in `tests/vectors/trimmed_vectors.json`, written by
//! `tests/vectors/make_trimmed_vectors.py` (see its header for how to re-run it and exactly
//! how each number was computed: the one-sample test also through
//! `scipy.stats.ttest_ind(..., trim=γ)`, Yuen–Welch through scipy, the process-spread
//! variants by hand from the documented formula, the pairs bootstrap with the same resampling
//! indices, the bootstrap of the ratio of medians by numpy's naive resampling).

use std::path::PathBuf;

use ci_gate::stats::{
    MarginTest, ProcessSpread, RatioDistribution, Rounds, Sample, paired_margin_test_trimmed,
    pooled_p50_ratio_of_pairs, process_spread_trimmed, ratio_of_medians,
    ratio_of_medians_bootstrap, round_medians, trimmed, unpaired_margin_test_trimmed,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct Vectors {
    meta: Meta,
    paired: Vec<PairedCase>,
    unpaired: Vec<UnpairedCase>,
    pairs_bootstrap: Vec<PairsCase>,
    median_bootstrap: Vec<MedianCase>,
}

#[derive(Deserialize)]
struct Meta {
    scipy: String,
    confidence: f64,
    alpha: f64,
    power: f64,
    min_process_sd: f64,
    paired_tests: usize,
    unpaired_tests: usize,
    process_spreads: usize,
    pairs_bootstraps: usize,
    median_bootstraps: usize,
}

#[derive(Deserialize)]
struct PairedCase {
    name: String,
    margin: f64,
    base: Vec<Vec<f64>>,
    cand: Vec<Vec<f64>>,
    tests: Vec<Expected>,
}

#[derive(Deserialize)]
struct UnpairedCase {
    name: String,
    margin: f64,
    base: Vec<Vec<f64>>,
    cand: Vec<Vec<f64>>,
    tests: Vec<Expected>,
    process_spread: Vec<Spread>,
}

#[derive(Deserialize)]
struct Summary {
    n: usize,
    g: usize,
    h: usize,
    mean: f64,
    winsorized_var: f64,
    se2: f64,
}

#[derive(Deserialize)]
struct Expected {
    trim: f64,
    /// Paired only: the summary of the pair log ratios.
    summary: Option<Summary>,
    /// Unpaired only.
    kind: Option<String>,
    #[serde(default)]
    process_rounds: Vec<usize>,
    spread_sd: Option<f64>,
    spread_df: Option<f64>,
    estimate: f64,
    se: f64,
    df: Option<f64>,
    p_slower: f64,
    p_faster: f64,
    interval95: [f64; 2],
    lower_bound05: f64,
    upper_bound05: f64,
    detectable: f64,
}

#[derive(Deserialize)]
struct Spread {
    trim: f64,
    process_rounds: Vec<usize>,
    floored: bool,
    sd: f64,
    df: f64,
}

#[derive(Deserialize)]
struct PairsCase {
    name: String,
    base: Vec<Vec<f64>>,
    cand: Vec<Vec<f64>>,
    indices: Vec<Vec<usize>>,
    ratios: Vec<f64>,
    low: f64,
    high: f64,
    lower05: f64,
    upper05: f64,
    pooled: f64,
}

#[derive(Deserialize)]
struct MedianCase {
    name: String,
    base: Vec<f64>,
    cand: Vec<f64>,
    process_sd: f64,
    resamples: u32,
    point: f64,
    low: f64,
    high: f64,
    lower05: f64,
    upper05: f64,
    spread: f64,
}

fn vectors() -> Vectors {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/trimmed_vectors.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let v: Vectors = serde_json::from_str(&text).expect("trimmed_vectors.json does not parse");
    assert!(v.meta.scipy.starts_with("1."), "scipy {}", v.meta.scipy);
    v
}

fn rounds(r: &[Vec<f64>]) -> Rounds {
    Rounds::new(r.to_vec()).expect("valid rounds")
}

/// Every failed check, so one run reports them all; and the largest difference seen.
#[derive(Default)]
struct Checks {
    failed: Vec<String>,
    worst: f64,
    checked: usize,
}

impl Checks {
    /// Relative difference within `tol` (exact equality also passes).
    fn rel(&mut self, what: &str, got: f64, want: f64, tol: f64) {
        let d = if got == want {
            0.0
        } else {
            ((got - want) / want).abs()
        };
        self.worst = self.worst.max(d);
        self.checked += 1;
        // A NaN difference fails too.
        if d.is_nan() || d > tol {
            self.failed.push(format!(
                "{what}: got {got:e}, want {want:e} (rel {d:e}, tol {tol:e})"
            ));
        }
    }

    /// A p-value: within 1e-9 absolute or 1e-7 relative.
    fn p(&mut self, what: &str, got: f64, want: f64) {
        let (a, r) = ((got - want).abs(), ((got - want) / want).abs());
        self.checked += 1;
        if !((0.0..=1.0).contains(&got) && (a <= 1e-9 || r <= 1e-7)) {
            self.failed
                .push(format!("{what}: got {got:e}, want {want:e}"));
        }
    }

    #[track_caller]
    fn finish(&self, title: &str) {
        eprintln!(
            "{title}: {} checks, largest relative difference {:.2e}",
            self.checked, self.worst
        );
        assert!(
            self.failed.is_empty(),
            "{title}: {} failed:\n{}",
            self.failed.len(),
            self.failed.join("\n")
        );
    }
}

fn check_test(c: &mut Checks, what: &str, v: &Meta, got: &MarginTest, want: &Expected) {
    c.rel(
        &format!("{what} estimate"),
        got.estimate,
        want.estimate,
        1e-10,
    );
    c.rel(&format!("{what} se"), got.se, want.se, 1e-10);
    match want.df {
        Some(df) => c.rel(&format!("{what} df"), got.df, df, 1e-10),
        None => assert!(got.df.is_infinite(), "{what} df {}", got.df),
    }
    c.p(&format!("{what} p_slower"), got.p_slower, want.p_slower);
    c.p(&format!("{what} p_faster"), got.p_faster, want.p_faster);
    let ci = got.interval(v.confidence);
    c.rel(
        &format!("{what} interval low"),
        ci.low,
        want.interval95[0],
        1e-9,
    );
    c.rel(
        &format!("{what} interval high"),
        ci.high,
        want.interval95[1],
        1e-9,
    );
    c.rel(
        &format!("{what} lower bound"),
        got.lower_bound(v.alpha),
        want.lower_bound05,
        1e-9,
    );
    c.rel(
        &format!("{what} upper bound"),
        got.upper_bound(v.alpha),
        want.upper_bound05,
        1e-9,
    );
    let d = got.detectable(v.alpha, v.power);
    c.checked += 1;
    if (d - want.detectable).abs() > 1e-9 {
        c.failed.push(format!(
            "{what} detectable: got {d:e}, want {:e}",
            want.detectable
        ));
    }
}

#[test]
fn vectors_cover_the_required_cases() {
    let v = vectors();
    let paired: usize = v.paired.iter().map(|c| c.tests.len()).sum();
    let unpaired: usize = v.unpaired.iter().map(|c| c.tests.len()).sum();
    let spreads: usize = v.unpaired.iter().map(|c| c.process_spread.len()).sum();
    assert_eq!(paired, v.meta.paired_tests);
    assert_eq!(unpaired, v.meta.unpaired_tests);
    assert_eq!(spreads, v.meta.process_spreads);
    assert_eq!(v.pairs_bootstrap.len(), v.meta.pairs_bootstraps);
    assert_eq!(v.median_bootstrap.len(), v.meta.median_bootstraps);
    assert!(
        paired >= 40 && unpaired >= 90 && spreads >= 15,
        "{paired} {unpaired} {spreads}"
    );
    // Trimming that drops nothing (g = 0) and that drops several from each end.
    let gs: Vec<usize> = v
        .paired
        .iter()
        .flat_map(|c| {
            c.tests
                .iter()
                .filter_map(|t| t.summary.as_ref().map(|s| s.g))
        })
        .collect();
    assert!(gs.contains(&0) && gs.iter().any(|g| *g >= 6), "{gs:?}");
    assert!(v.meta.min_process_sd > 0.0);
}

#[test]
fn yuen_one_sample_matches_scipy() {
    let v = vectors();
    let mut c = Checks::default();
    for case in &v.paired {
        let (base, cand) = (rounds(&case.base), rounds(&case.cand));
        let d: Vec<f64> = round_medians(&cand)
            .iter()
            .zip(round_medians(&base))
            .map(|(c, b)| c.ln() - b.ln())
            .collect();
        for want in &case.tests {
            let what = format!("{} trim {}", case.name, want.trim);
            let s = want.summary.as_ref().expect("paired tests have a summary");
            let t = trimmed(&d, want.trim).unwrap_or_else(|| panic!("{what}: no summary"));
            assert_eq!((t.n, t.g, t.h), (s.n, s.g, s.h), "{what}");
            c.rel(&format!("{what} trimmed mean"), t.mean, s.mean, 1e-12);
            c.rel(
                &format!("{what} winsorized var"),
                t.winsorized_var,
                s.winsorized_var,
                1e-10,
            );
            c.rel(&format!("{what} se²"), t.se2, s.se2, 1e-10);
            let got = paired_margin_test_trimmed(&base, &cand, case.margin, want.trim)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            check_test(&mut c, &what, &v.meta, &got, want);
        }
    }
    c.finish("Yuen one-sample (paired)");
}

#[test]
fn yuen_welch_and_the_spread_variants_match_scipy_and_the_formula() {
    let v = vectors();
    let mut c = Checks::default();
    let mut kinds = (0, 0);
    for case in &v.unpaired {
        let (base, cand) = (rounds(&case.base), rounds(&case.cand));
        for want in &case.tests {
            let kind = want.kind.as_deref().expect("unpaired tests have a kind");
            let spread = ProcessSpread {
                sd: want.spread_sd.expect("a spread"),
                df: want.spread_df.unwrap_or(f64::INFINITY),
            };
            let what = format!(
                "{} {kind} trim {} processes {:?} sd {} df {}",
                case.name, want.trim, want.process_rounds, spread.sd, spread.df
            );
            match kind {
                "yuen-welch" => kinds.0 += 1,
                _ => kinds.1 += 1,
            }
            let got = unpaired_margin_test_trimmed(
                &base,
                &want.process_rounds,
                &cand,
                spread,
                case.margin,
                want.trim,
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
            check_test(&mut c, &what, &v.meta, &got, want);
        }
        for want in &case.process_spread {
            let what = format!("{} process spread trim {}", case.name, want.trim);
            let got = process_spread_trimmed(&base, &want.process_rounds, want.trim)
                .unwrap_or_else(|| panic!("{what}: none"));
            assert_eq!(got.df, want.df, "{what}");
            if want.floored {
                assert_eq!(got.sd, v.meta.min_process_sd, "{what}");
            } else {
                c.rel(&what, got.sd, want.sd, 1e-9);
            }
        }
    }
    assert!(kinds.0 >= 12 && kinds.1 >= 60, "{kinds:?}");
    c.finish("Yuen–Welch and spread variants (unpaired)");
}

#[test]
fn the_pairs_bootstrap_of_the_pooled_p50_matches_numpy_index_for_index() {
    let v = vectors();
    let mut c = Checks::default();
    for case in &v.pairs_bootstrap {
        let (base, cand) = (rounds(&case.base), rounds(&case.cand));
        let all: Vec<usize> = (0..base.round_count()).collect();
        c.rel(
            &format!("{} pooled", case.name),
            pooled_p50_ratio_of_pairs(&base, &cand, &all).unwrap(),
            case.pooled,
            1e-15,
        );
        let ratios: Vec<f64> = case
            .indices
            .iter()
            .map(|idx| pooled_p50_ratio_of_pairs(&base, &cand, idx).unwrap())
            .collect();
        for (i, (got, want)) in ratios.iter().zip(&case.ratios).enumerate() {
            c.rel(&format!("{} resample {i}", case.name), *got, *want, 1e-15);
        }
        let dist = RatioDistribution::from_ratios(ratios).unwrap();
        let ci = dist.interval(0.95);
        c.rel(&format!("{} low", case.name), ci.low, case.low, 1e-15);
        c.rel(&format!("{} high", case.name), ci.high, case.high, 1e-15);
        c.rel(
            &format!("{} lower05", case.name),
            dist.lower_bound(0.05),
            case.lower05,
            1e-15,
        );
        c.rel(
            &format!("{} upper05", case.name),
            dist.upper_bound(0.05),
            case.upper05,
            1e-15,
        );
    }
    c.finish("pairs bootstrap of the pooled p50 (same indices)");
}

#[test]
fn the_bootstrap_of_the_ratio_of_medians_agrees_with_numpy_within_its_noise() {
    let v = vectors();
    let mut c = Checks::default();
    for case in &v.median_bootstrap {
        let single = |x: &[f64]| Rounds::single(Sample::new(x.to_vec()).unwrap());
        let (base, cand) = (single(&case.base), single(&case.cand));
        c.rel(
            &format!("{} point", case.name),
            ratio_of_medians(&base, &cand),
            case.point,
            1e-15,
        );
        let dist = ratio_of_medians_bootstrap(
            &base,
            &cand,
            case.resamples,
            0xC1_6A7E,
            case.process_sd * std::f64::consts::SQRT_2,
        )
        .unwrap();
        // The two draw differently (exact Beta order statistics and ChaCha8 here, naive
        // resampling there): allow three times the spread between numpy's own seeds.
        let tol = 3.0 * case.spread + 1e-4;
        let ci = dist.interval(0.95);
        c.rel(&format!("{} low", case.name), ci.low, case.low, tol);
        c.rel(&format!("{} high", case.name), ci.high, case.high, tol);
        c.rel(
            &format!("{} lower05", case.name),
            dist.lower_bound(0.05),
            case.lower05,
            tol,
        );
        c.rel(
            &format!("{} upper05", case.name),
            dist.upper_bound(0.05),
            case.upper05,
            tol,
        );
    }
    c.finish("bootstrap of the ratio of medians (Monte-Carlo tolerance)");
}
