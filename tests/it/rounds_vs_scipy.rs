//! Cross-checks the round-level margin tests of `ci_gate::stats` (`src/stats/margin.rs`)
//! against numpy / scipy.
//!
//! The reference numbers live in `tests/vectors/round_vectors.json`, written by
//! `tests/vectors/make_round_vectors.py` (see its header for how to re-run it, the library
//! versions used and exactly how each number was computed). Run with `--nocapture` to see
//! the largest difference found for each quantity.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ci_gate::stats::{
    MarginTest, ProcessSpread, Rounds, paired_margin_test_trimmed, process_spread_trimmed,
    round_medians, unpaired_margin_test_trimmed,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct Vectors {
    meta: Meta,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Meta {
    numpy: String,
    scipy: String,
    confidence: f64,
    alpha: f64,
    power: f64,
    min_process_sd: f64,
    /// How many cases (and tests of each kind) the generator wrote.
    cases: usize,
    paired: usize,
    unpaired: usize,
    process_spread: usize,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    margin: f64,
    base: Vec<Vec<f64>>,
    cand: Vec<Vec<f64>>,
    base_medians: Vec<f64>,
    cand_medians: Vec<f64>,
    paired: Option<Expected>,
    unpaired: Vec<Expected>,
    process_spread: Option<Spread>,
}

/// One margin test as scipy / numpy computed it. `df: None` means infinite.
#[derive(Deserialize)]
struct Expected {
    /// Unpaired only: "welch" or "spread".
    kind: Option<String>,
    /// Unpaired only: rounds per baseline process ([] = one process).
    #[serde(default)]
    process_rounds: Vec<usize>,
    /// Unpaired only: the assumed process spread (df `None` = infinite).
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
    process_rounds: Vec<usize>,
    floored: bool,
    sd: f64,
    df: f64,
}

fn vectors() -> Vectors {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/round_vectors.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let v: Vectors = serde_json::from_str(&text).expect("round_vectors.json does not parse");
    assert!(v.meta.scipy.starts_with("1."), "scipy {}", v.meta.scipy);
    assert!(!v.meta.numpy.is_empty());
    v
}

fn rounds(r: &[Vec<f64>]) -> Rounds {
    Rounds::new(r.to_vec()).expect("valid rounds")
}

/// Largest differences seen per quantity (with the case they came from), and every failed
/// check, so that one run reports all failures and the worst differences, not just the first.
#[derive(Default)]
struct Worst(BTreeMap<&'static str, (f64, String)>, Vec<String>);

impl Worst {
    fn note(&mut self, quantity: &'static str, diff: f64, what: &str) {
        let e = self.0.entry(quantity).or_insert((0.0, String::new()));
        if e.1.is_empty() || diff > e.0 {
            *e = (diff, what.to_string());
        }
    }

    #[track_caller]
    fn check(&mut self, ok: bool, message: impl FnOnce() -> String) {
        if !ok {
            self.1.push(message());
        }
    }

    /// Prints the largest differences.
    fn print(&self, title: &str) {
        eprintln!("{title}: largest differences from scipy/numpy");
        for (q, (d, what)) in &self.0 {
            eprintln!("  {q:28} {d:.3e}  ({what})");
        }
    }

    /// Fails listing every failed check.
    #[track_caller]
    fn assert_ok(&self, title: &str) {
        assert!(
            self.1.is_empty(),
            "{title}: {} failed checks:\n{}",
            self.1.len(),
            self.1.join("\n")
        );
    }

    /// Prints the largest differences, then fails listing every failed check.
    #[track_caller]
    fn finish(&self, title: &str) {
        self.print(title);
        self.assert_ok(title);
    }
}

fn rel(got: f64, want: f64) -> f64 {
    if got == want {
        0.0
    } else {
        ((got - want) / want).abs()
    }
}

/// Relative tolerance (exact equality also passes, e.g. for 0 or infinity).
#[track_caller]
fn check_rel(w: &mut Worst, quantity: &'static str, what: &str, got: f64, want: f64, tol: f64) {
    let d = rel(got, want);
    w.note(quantity, d, what);
    w.check(got == want || d <= tol, || {
        format!("{what} {quantity}: got {got:e}, want {want:e} (rel. diff {d:e}, tol {tol:e})")
    });
}

/// Absolute tolerance.
#[track_caller]
fn check_abs(w: &mut Worst, quantity: &'static str, what: &str, got: f64, want: f64, tol: f64) {
    let d = (got - want).abs();
    w.note(quantity, d, what);
    w.check(got == want || d <= tol, || {
        format!("{what} {quantity}: got {got:e}, want {want:e} (abs. diff {d:e}, tol {tol:e})")
    });
}

/// A p-value: within 1e-9 absolute or 1e-7 relative, whichever is looser.
#[track_caller]
fn check_p(w: &mut Worst, quantity: &'static str, what: &str, got: f64, want: f64) {
    let (a, r) = ((got - want).abs(), rel(got, want));
    w.note(quantity, a, what);
    if want >= 1e-9 {
        w.note("p (relative, p >= 1e-9)", r, what);
    }
    w.check(
        (0.0..=1.0).contains(&got) && (a <= 1e-9 || r <= 1e-7),
        || {
            format!(
                "{what} {quantity}: got {got:e}, want {want:e} (abs. diff {a:e}, rel. diff {r:e})"
            )
        },
    );
}

/// `margin.rs` replaces the t law by the normal law from this many degrees of freedom on.
const DF_NORMAL: f64 = 1e7;

/// Every output of a `MarginTest` against scipy's numbers.
///
/// The "stable_*" cases drive the Satterthwaite df to 3e5 .. 1.1e7 (an assumed process spread
/// with infinite df dominating the variance), where a t quantile is hard to compute: a failure
/// of "interval", "bound" or "detectable" there (with estimate, se, df and p all matching)
/// points at the t quantile used by `MarginTest::{interval, lower_bound, upper_bound,
/// detectable}`, not at the test's formula.
fn check_test(w: &mut Worst, what: &str, v: &Vectors, m: f64, got: &MarginTest, want: &Expected) {
    assert_eq!(got.margin, m, "{what} margin");
    // From df = 1e7 on, margin.rs uses the normal law by design, where scipy keeps the t law.
    // The quantile then differs by about z (z² + 1) / (4 df) (2.37 / df at z = 1.96), so the
    // log-scale ends move by that times se. Measured on stable_30_rounds_drift0.0025_sd0.01
    // (df 1.1e7, se 0.0141): 3.03e-9 relative on the interval, 1.95e-9 on the one-sided
    // bounds, 2.54e-9 absolute on detectable. Allowed for: 3 se / df, only where df >= 1e7.
    let normal_law = match want.df {
        Some(df) if df >= DF_NORMAL => 3.0 * want.se / df,
        _ => 0.0,
    };
    check_rel(w, "estimate", what, got.estimate, want.estimate, 1e-10);
    check_rel(w, "se", what, got.se, want.se, 1e-10);
    match want.df {
        Some(df) => check_rel(w, "df", what, got.df, df, 1e-10),
        None => assert!(got.df.is_infinite(), "{what} df: got {}, want inf", got.df),
    }
    check_p(w, "p_slower (absolute)", what, got.p_slower, want.p_slower);
    check_p(w, "p_faster (absolute)", what, got.p_faster, want.p_faster);
    let ci = got.interval(v.meta.confidence);
    let tol = 1e-9 + normal_law;
    check_rel(w, "interval", what, ci.low, want.interval95[0], tol);
    check_rel(w, "interval", what, ci.high, want.interval95[1], tol);
    check_rel(
        w,
        "bound",
        what,
        got.lower_bound(v.meta.alpha),
        want.lower_bound05,
        tol,
    );
    check_rel(
        w,
        "bound",
        what,
        got.upper_bound(v.meta.alpha),
        want.upper_bound05,
        tol,
    );
    check_abs(
        w,
        "detectable (absolute)",
        what,
        got.detectable(v.meta.alpha, v.meta.power),
        want.detectable,
        tol,
    );
}

#[test]
fn vectors_cover_the_required_cases() {
    let v = vectors();
    // The counts the generator wrote, so that a truncated or empty file cannot pass.
    assert_eq!(v.cases.len(), v.meta.cases);
    assert!(v.meta.cases >= 30, "{} cases", v.meta.cases);
    let paired = v.cases.iter().filter(|c| c.paired.is_some()).count();
    let unpaired: usize = v.cases.iter().map(|c| c.unpaired.len()).sum();
    let spreads = v
        .cases
        .iter()
        .filter(|c| c.process_spread.is_some())
        .count();
    assert_eq!(paired, v.meta.paired);
    assert_eq!(unpaired, v.meta.unpaired);
    assert_eq!(spreads, v.meta.process_spread);
    let kind = |k: &str| {
        v.cases
            .iter()
            .flat_map(|c| &c.unpaired)
            .filter(|u| u.kind.as_deref() == Some(k))
            .count()
    };
    assert!(paired >= 15, "{paired} paired tests");
    assert!(kind("welch") >= 25, "{} Welch tests", kind("welch"));
    assert!(kind("spread") >= 40, "{} spread tests", kind("spread"));
    assert!(spreads >= 8, "{spreads} process_spread cases");
    let infinite_df = v
        .cases
        .iter()
        .flat_map(|c| &c.unpaired)
        .filter(|u| u.df.is_none())
        .count();
    assert!(infinite_df >= 2, "{infinite_df} tests on the normal law");
    let rounds_per_side = v.cases.iter().flat_map(|c| [c.base.len(), c.cand.len()]);
    assert_eq!(rounds_per_side.clone().min(), Some(2));
    assert_eq!(rounds_per_side.max(), Some(40));
    let per_round = v
        .cases
        .iter()
        .flat_map(|c| c.base.iter().chain(&c.cand))
        .map(Vec::len);
    assert_eq!(per_round.clone().min(), Some(1));
    assert_eq!(per_round.max(), Some(50));
}

#[test]
fn round_medians_match_numpy() {
    let mut w = Worst::default();
    let mut checked = 0;
    for c in vectors().cases {
        for (side, data, want) in [
            ("base", &c.base, &c.base_medians),
            ("cand", &c.cand, &c.cand_medians),
        ] {
            let got = round_medians(&rounds(data));
            assert_eq!(got.len(), want.len(), "{} {side} round count", c.name);
            for (i, (&g, &m)) in got.iter().zip(want).enumerate() {
                // Same arithmetic as numpy; 1e-15 only covers serde_json's float parser,
                // which is not correctly rounded for 17-digit references.
                check_rel(
                    &mut w,
                    "median",
                    &format!("{} {side} round {i}", c.name),
                    g,
                    m,
                    1e-15,
                );
                checked += 1;
            }
        }
    }
    w.finish(&format!("round medians ({checked})"));
}

#[test]
fn paired_margin_test_matches_scipy_ttest_1samp() {
    let v = vectors();
    let mut w = Worst::default();
    let mut checked = 0;
    for c in &v.cases {
        let (base, cand) = (rounds(&c.base), rounds(&c.cand));
        let Some(want) = &c.paired else {
            if base.round_count() != cand.round_count() {
                assert!(
                    paired_margin_test_trimmed(&base, &cand, c.margin, 0.0).is_err(),
                    "{}",
                    c.name
                );
            }
            continue;
        };
        let what = format!("{} paired", c.name);
        let got = paired_margin_test_trimmed(&base, &cand, c.margin, 0.0)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            (got.n_base, got.n_cand),
            (c.base.len(), c.cand.len()),
            "{what} n"
        );
        check_test(&mut w, &what, &v, c.margin, &got, want);
        checked += 1;
    }
    w.finish(&format!("paired margin tests ({checked})"));
    assert_eq!(checked, v.meta.paired);
}

#[test]
fn unpaired_margin_test_matches_scipy_and_the_documented_formula() {
    let v = vectors();
    let mut welch = Worst::default();
    let mut spread = Worst::default();
    let mut checked = 0;
    for c in &v.cases {
        let (base, cand) = (rounds(&c.base), rounds(&c.cand));
        for (i, want) in c.unpaired.iter().enumerate() {
            let kind = want.kind.as_deref().expect("unpaired tests have a kind");
            let sd = want.spread_sd.expect("unpaired tests have a spread");
            let s = ProcessSpread {
                sd,
                df: want.spread_df.unwrap_or(f64::INFINITY),
            };
            let what = format!(
                "{} unpaired #{i} ({kind}, processes {:?}, spread sd {} df {})",
                c.name, want.process_rounds, s.sd, s.df
            );
            if kind == "welch" {
                assert_eq!(
                    (s, want.process_rounds.len()),
                    (ProcessSpread::NONE, 0),
                    "{what}"
                );
            }
            let got =
                unpaired_margin_test_trimmed(&base, &want.process_rounds, &cand, s, c.margin, 0.0)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(
                (got.n_base, got.n_cand),
                (c.base.len(), c.cand.len()),
                "{what} n"
            );
            let w = if kind == "welch" {
                &mut welch
            } else {
                &mut spread
            };
            check_test(w, &what, &v, c.margin, &got, want);
            checked += 1;
        }
    }
    let titles = [
        "unpaired, Welch (ttest_ind, equal_var=False)",
        "unpaired, with a process spread (numpy, by hand)",
    ];
    welch.print(titles[0]);
    spread.print(titles[1]);
    welch.assert_ok(titles[0]);
    spread.assert_ok(titles[1]);
    assert_eq!(checked, v.meta.unpaired);
}

#[test]
fn process_spread_matches_numpy() {
    let v = vectors();
    let mut w = Worst::default();
    let mut checked = 0;
    let mut floored = 0;
    for c in &v.cases {
        let Some(want) = &c.process_spread else {
            continue;
        };
        let what = format!("{} process_spread {:?}", c.name, want.process_rounds);
        let got = process_spread_trimmed(&rounds(&c.base), &want.process_rounds, 0.0)
            .unwrap_or_else(|| panic!("{what}: None"));
        assert_eq!(got.df, want.df, "{what} df");
        if want.floored {
            assert_eq!(got.sd, v.meta.min_process_sd, "{what}: should be floored");
            floored += 1;
        } else {
            check_rel(&mut w, "sd", &what, got.sd, want.sd, 1e-10);
        }
        checked += 1;
    }
    w.finish(&format!("process_spread ({checked}, {floored} floored)"));
    assert_eq!(checked, v.meta.process_spread);
    assert!(
        floored >= 1 && floored < checked,
        "{floored} of {checked} floored"
    );
}
