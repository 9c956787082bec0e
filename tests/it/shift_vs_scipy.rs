//! Cross-checks the Hodges–Lehmann shift and its exact Mann–Whitney bounds
//! (`src/stats/shift.rs`, the decision for sample files of fewer than 30 i.i.d. values a
//! side), and the exact interval of a binomial proportion (`src/stats/binomial.rs`, how
//! `selftest` reports its rates), against numpy / scipy.
//!
//! The reference numbers live in `tests/vectors/shift_vectors.json`, written by
//! `tests/vectors/make_shift_vectors.py` (see its header: the estimate is numpy's median of
//! the pairwise log differences, the p-values `scipy.stats.mannwhitneyu(..., method="exact")`
//! of the candidate's log values less θ against the base's, and the bounds found by
//! inverting scipy's exact test at every gap between differences, not from the formula the
//! Rust code uses).

use std::collections::BTreeMap;
use std::path::PathBuf;

use ci_gate::stats::{LogShift, Sample, binomial_interval};
use serde::Deserialize;

#[derive(Deserialize)]
struct Vectors {
    meta: Meta,
    cases: Vec<Case>,
    binomial: Vec<Binomial>,
}

#[derive(Deserialize)]
struct Binomial {
    k: u64,
    n: u64,
    low: f64,
    high: f64,
}

#[derive(Deserialize)]
struct Meta {
    scipy: String,
    levels: Vec<f64>,
    cases: usize,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    base: Vec<f64>,
    cand: Vec<f64>,
    estimate: f64,
    thetas: Vec<f64>,
    p_greater: Vec<f64>,
    p_less: Vec<f64>,
    lower: BTreeMap<String, Option<f64>>,
    upper: BTreeMap<String, Option<f64>>,
}

fn vectors() -> Vectors {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/shift_vectors.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs().max(1e-300)
}

#[test]
fn the_hodges_lehmann_shift_and_its_exact_bounds_match_scipy() {
    let v = vectors();
    assert_eq!(v.cases.len(), v.meta.cases);
    assert_eq!(v.meta.levels, [0.005, 0.01, 0.025, 0.05, 0.1]);
    let (mut checks, mut bounds, mut none) = (0, 0, 0);
    for c in &v.cases {
        let t = LogShift::new(
            &Sample::new(c.base.clone()).unwrap(),
            &Sample::new(c.cand.clone()).unwrap(),
        )
        .unwrap();
        assert!(
            close(t.estimate(), c.estimate, 1e-12),
            "{}: estimate",
            c.name
        );
        for (i, &theta) in c.thetas.iter().enumerate() {
            // Exact p-values: scipy sums the same law in another order.
            assert!(
                close(t.p_greater(theta), c.p_greater[i], 1e-9),
                "{}: p_greater({theta}) {} vs {}",
                c.name,
                t.p_greater(theta),
                c.p_greater[i]
            );
            assert!(
                close(t.p_less(theta), c.p_less[i], 1e-9),
                "{}: p_less({theta}) {} vs {}",
                c.name,
                t.p_less(theta),
                c.p_less[i]
            );
            checks += 2;
        }
        for &a in &v.meta.levels {
            let key = a.to_string();
            // The bounds are differences of the same logs: equal to the last bit or nearly.
            for (got, want, side) in [
                (t.lower_bound(a), c.lower[&key], "lower"),
                (t.upper_bound(a), c.upper[&key], "upper"),
            ] {
                match (got, want) {
                    (Some(g), Some(w)) => {
                        assert!(
                            (g - w).abs() < 1e-12,
                            "{}: {side} at {a}: {g} vs {w}",
                            c.name
                        );
                        bounds += 1;
                    }
                    (None, None) => none += 1,
                    _ => panic!("{}: {side} at {a}: {got:?} vs {want:?}", c.name),
                }
                checks += 1;
            }
        }
    }
    eprintln!(
        "{checks} checks against scipy {} ({bounds} bounds, {none} levels too small a sample has no bound for)",
        v.meta.scipy
    );
    assert!(bounds > 150 && none > 5, "{bounds} {none}");
}

#[test]
fn exact_binomial_intervals_match_scipy() {
    let v = vectors();
    assert!(v.binomial.len() >= 10);
    for b in &v.binomial {
        let i = binomial_interval(b.k, b.n, 0.95).unwrap();
        assert!(
            (i.low - b.low).abs() < 1e-9,
            "{}/{}: {} vs {}",
            b.k,
            b.n,
            i.low,
            b.low
        );
        assert!(
            (i.high - b.high).abs() < 1e-9,
            "{}/{}: {} vs {}",
            b.k,
            b.n,
            i.high,
            b.high
        );
    }
}
