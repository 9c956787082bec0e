use std::path::Path;

use chrono::{Duration, TimeZone, Utc};

use super::*;
use crate::config::{Dtype, GateSettings, ShapeParams};
use crate::results::{ConfigInfo, Environment, MeasurementInfo, SCHEMA_VERSION};
use crate::stats::Sample;
use crate::verdict::Verdict;

fn commit(i: usize) -> String {
    format!("{i:040x}")
}

fn record(i: usize, shape: &str, p50: f64) -> Record {
    Record {
        schema_version: HISTORY_SCHEMA_VERSION,
        commit: commit(i),
        time: Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap() + Duration::days(i as i64),
        gpu: "NVIDIA H200".into(),
        gpu_slug: "nvidia-h200".into(),
        config: "pr".into(),
        config_hash: "ab".repeat(32),
        shape: shape.into(),
        cache: Some(CacheMode::Hot),
        p50_us: p50,
        interval_us: Some(Span {
            low: p50 * 0.99,
            high: p50 * 1.01,
        }),
        rounds: 8,
        peers: BTreeMap::new(),
        tool_version: "0.1.0".into(),
        mj_per_call: None,
        mj_interval: None,
        method: Some("m3-0123456789ab".into()),
    }
}

fn line(r: &Record) -> String {
    serde_json::to_string(r).unwrap()
}

fn history_of(records: &[Record]) -> History {
    let text: String = records.iter().map(|r| line(r) + "\n").collect();
    History::parse(&text, Path::new("h.jsonl")).unwrap()
}

fn results(commit: Option<&str>, shapes: &[(ShapeParams, Option<f64>)]) -> ResultsFile {
    let shapes = shapes
        .iter()
        .map(|&(params, p50)| {
            let mut s = ShapeResult::new(params);
            if let Some(p50) = p50 {
                s.samples_us = (0..4)
                    .map(|r| (0..5).map(|i| p50 + (r + i) as f64 * 0.01).collect())
                    .collect();
                s.summary = Some(
                    Sample::new(s.samples_us.iter().flatten().copied().collect())
                        .unwrap()
                        .summary(),
                );
                s.verdict = Verdict::NoBaseline;
                s.measurement = Some(MeasurementInfo {
                    cache: CacheMode::Cold,
                    launches_per_sample: 1,
                    rounds: 4,
                    extra_rounds: 0,
                    working_set_bytes: 1,
                    wall_s: 0.1,
                    sm_clock_mhz: None,
                    design: None,
                    checked_launches: 0,
                    unwitnessed: None,
                });
            } else {
                s.error = Some("compile error".into());
            }
            s
        })
        .collect();
    ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool_version: "0.1.0".into(),
        git_commit: commit.map(str::to_owned),
        created_at: Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap(),
        environment: Some(Environment {
            gpu_name: "NVIDIA H200".into(),
            gpu_slug: "nvidia-h200".into(),
            gpu_uuid: None,
            compute_capability: "9.0".into(),
            sm_count: None,
            l2_bytes: None,
            driver_version: None,
            cuda_driver_version: None,
            nvrtc_version: None,
            state_before: None,
            state_after: None,
        }),
        config: ConfigInfo {
            name: "pr".into(),
            path: "configs/pr.yaml".into(),
            hash: "0".repeat(64),
            defines: Vec::new(),
        },
        method: Some(crate::method::Method::current()),
        kernel_source_hash: None,
        gate: GateSettings::default(),
        baseline: None,
        shapes,
        passed: true,
        warnings: Vec::new(),
        notes: Vec::new(),
        error: None,
        base: None,
        fail_on_drift: false,
        profiling: None,
        shard: None,
        peers: None,
        probes: Vec::new(),
        timing: None,
        energy: None,
        kernel_resources: Vec::new(),
    }
}

fn shape(seq: u32) -> ShapeParams {
    ShapeParams::new(2, 8, seq, 64, false, Dtype::Float16)
}

#[test]
fn records_round_trip_through_a_line() {
    let mut r = record(1, "b2h8s512d64_f16", 123.25);
    r.peers.insert("flash-attn-2".into(), 99.5);
    let text = line(&r);
    assert!(!text.contains('\n'));
    let h = History::parse(&(text.clone() + "\n"), Path::new("h.jsonl")).unwrap();
    assert_eq!(h.entries, vec![Entry { line: 1, record: r }]);
    // Absent optional fields are left out of the line, and read back as absent.
    let mut bare = record(2, "b2h8s512d64_f16", 1.0);
    bare.interval_us = None;
    bare.cache = None;
    let text = line(&bare);
    for key in ["peers", "interval_us", "cache"] {
        assert!(!text.contains(key), "{text}");
    }
    let h = History::parse(&text, Path::new("h.jsonl")).unwrap();
    assert_eq!(h.entries[0].record, bare);
}

#[test]
fn blank_lines_and_crlf_are_accepted_and_lines_are_counted() {
    let a = record(1, "x", 1.0);
    let b = record(2, "x", 2.0);
    let text = format!("\n{}\r\n   \n{}", line(&a), line(&b));
    let h = History::parse(&text, Path::new("h.jsonl")).unwrap();
    assert_eq!(h.entries.iter().map(|e| e.line).collect::<Vec<_>>(), [2, 4]);
}

#[test]
fn malformed_lines_are_refused_naming_file_and_line() {
    let good = line(&record(1, "x", 1.0));
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
        f(&mut v);
        v.to_string()
    };
    let cases: Vec<(String, &str)> = vec![
        ("{\"schema_version\": 1, ".into(), "EOF"),
        ("[1, 2]".into(), "not a JSON object"),
        ("garbage".into(), "expected"),
        (edit(&|v| v["schema_version"] = 7.into()), "newer"),
        (
            edit(&|v| {
                v.as_object_mut().unwrap().remove("schema_version");
            }),
            "schema_version",
        ),
        (edit(&|v| v["schema_version"] = 0.into()), "schema_version"),
        (edit(&|v| v["commit"] = "main".into()), "commit"),
        (edit(&|v| v["p50_us"] = (-1.0).into()), "p50_us"),
        (edit(&|v| v["p50_us"] = "fast".into()), "invalid type"),
        (edit(&|v| v["gpu_slug"] = "nvidia-h100".into()), "gpu_slug"),
        (edit(&|v| v["gpu"] = "NVIDIA\u{1b}[2J H200".into()), "gpu"),
        (edit(&|v| v["shape"] = "../x".into()), "shape"),
        (edit(&|v| v["config"] = "a/b".into()), "config"),
        (
            edit(&|v| v["interval_us"] = serde_json::json!({"low": 2.0, "high": 1.0})),
            "interval_us",
        ),
        (
            edit(&|v| v["peers"] = serde_json::json!({"x y": 1.0})),
            "peers",
        ),
        (
            edit(&|v| v["peers"] = serde_json::json!({"cutlass": 0.0})),
            "peers.cutlass",
        ),
        (edit(&|v| v["rounds"] = 100_000.into()), "rounds"),
        (format!("{}{}", "[".repeat(50), "]".repeat(50)), "deep"),
        (
            format!(
                "{{\"schema_version\": 1, \"pad\": \"{}\"}}",
                "x".repeat(70_000)
            ),
            "bytes on one line",
        ),
    ];
    for (bad, want) in cases {
        let text = format!("{good}\n\n{bad}\n{good}\n");
        let e = History::parse(&text, Path::new("hist.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("hist.jsonl:3: "), "{e}");
        assert!(e.contains(want), "{want}: {e}");
    }
}

#[test]
fn a_file_that_is_not_utf8_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h.jsonl");
    let good = line(&record(1, "x", 1.0));
    let mut bytes = format!("{good}\n{good}\n").into_bytes();
    bytes.extend([b'{', 0xff, b'}', b'\n']);
    std::fs::write(&p, bytes).unwrap();
    let e = History::load(&p).unwrap_err().to_string();
    assert!(e.ends_with("h.jsonl:3: not UTF-8 text"), "{e}");
    let e = append(&p, &[record(5, "x", 1.0)]).unwrap_err().to_string();
    assert!(e.ends_with("h.jsonl:3: not UTF-8 text"), "{e}");
}

#[test]
fn append_creates_then_only_adds_lines() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sub/history.jsonl");
    let run1 = [record(1, "a", 10.0), record(1, "b", 20.0)];
    assert_eq!(append(&p, &run1).unwrap(), Appended::Lines(2));
    let before = std::fs::read(&p).unwrap();
    let run2 = [record(2, "a", 10.5), record(2, "b", 19.0)];
    assert_eq!(append(&p, &run2).unwrap(), Appended::Lines(2));
    let after = std::fs::read(&p).unwrap();
    assert!(after.starts_with(&before), "earlier lines were rewritten");
    let h = History::load(&p).unwrap();
    let got: Vec<Record> = h.entries.iter().map(|e| e.record.clone()).collect();
    assert_eq!(got, [run1.to_vec(), run2.to_vec()].concat());
    assert_eq!(std::str::from_utf8(&after).unwrap().lines().count(), 4);
}

#[test]
fn the_same_run_twice_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("history.jsonl");
    append(&p, &[record(1, "a", 10.0)]).unwrap();
    append(&p, &[record(2, "a", 10.0), record(2, "b", 10.0)]).unwrap();
    let before = std::fs::read(&p).unwrap();
    // Same commit, config and GPU, other numbers: the first stays, nothing is written.
    let again = [record(2, "a", 11.0), record(2, "b", 12.0)];
    assert_eq!(
        append(&p, &again).unwrap(),
        Appended::AlreadyThere { line: 2 }
    );
    assert_eq!(std::fs::read(&p).unwrap(), before);
    // Another config, or another GPU, of the same commit is another run.
    let mut other = record(2, "a", 11.0);
    other.config = "nightly".into();
    assert_eq!(append(&p, &[other]).unwrap(), Appended::Lines(1));
    let mut other = record(2, "a", 11.0);
    other.gpu = "NVIDIA H100 80GB HBM3".into();
    other.gpu_slug = "nvidia-h100-80gb-hbm3".into();
    assert_eq!(append(&p, &[other]).unwrap(), Appended::Lines(1));
    // Records of two runs are never appended in one go.
    let e = append(&p, &[record(7, "a", 1.0), record(8, "a", 1.0)]).unwrap_err();
    assert!(e.to_string().contains("two runs"), "{e}");
}

#[test]
fn append_refuses_a_malformed_history_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("history.jsonl");
    let text = format!(
        "{}\n{{\"schema_version\": 1, \"commit\": \"trunc",
        line(&record(1, "a", 1.0))
    );
    std::fs::write(&p, &text).unwrap();
    let e = append(&p, &[record(2, "a", 1.0)]).unwrap_err().to_string();
    assert!(e.contains("history.jsonl:2: "), "{e}");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
}

#[test]
fn a_last_line_without_its_newline_gets_one_before_the_new_lines() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("history.jsonl");
    let first = line(&record(1, "a", 1.0));
    std::fs::write(&p, &first).unwrap();
    append(&p, &[record(2, "a", 1.0)]).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.starts_with(&format!("{first}\n")), "{text}");
    assert_eq!(History::load(&p).unwrap().entries.len(), 2);
}

#[test]
fn since_accepts_dates_and_rfc3339() {
    assert_eq!(
        parse_since("2026-01-05").unwrap(),
        Utc.with_ymd_and_hms(2026, 1, 5, 0, 0, 0).unwrap()
    );
    assert_eq!(
        parse_since("2026-01-05T10:00:00+02:00").unwrap(),
        Utc.with_ymd_and_hms(2026, 1, 5, 8, 0, 0).unwrap()
    );
    for bad in ["", "yesterday", "2026-13-01", "2026-01-05T25:00:00Z"] {
        assert!(parse_since(bad).is_err(), "{bad}");
    }
}

#[test]
fn filters_keep_the_shapes_and_the_runs_since() {
    let h = history_of(&[
        record(1, "a", 1.0),
        record(1, "b", 2.0),
        record(2, "a", 1.1),
        record(2, "b", 2.1),
        record(3, "a", 1.2),
        record(3, "b", 2.2),
    ]);
    let all = series(&h, &Filter::default());
    assert_eq!(
        all.iter().map(|s| s.key.shape.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert!(all.iter().all(|s| s.points.len() == 3));
    let only_b = series(
        &h,
        &Filter {
            shapes: vec!["b".into()],
            since: None,
        },
    );
    assert_eq!(only_b.len(), 1);
    assert_eq!(
        only_b[0]
            .points
            .iter()
            .map(|p| p.p50_us)
            .collect::<Vec<_>>(),
        [2.0, 2.1, 2.2]
    );
    // Record i is on 2026-01-01 + i days, at noon.
    let since = series(
        &h,
        &Filter {
            shapes: vec!["a".into()],
            since: Some(parse_since("2026-01-03").unwrap()),
        },
    );
    assert_eq!(
        since[0]
            .points
            .iter()
            .map(|p| p.commit.clone())
            .collect::<Vec<_>>(),
        [commit(2), commit(3)]
    );
    let none = series(
        &h,
        &Filter {
            shapes: vec![],
            since: Some(parse_since("2027-01-01").unwrap()),
        },
    );
    assert!(none.is_empty());
}

#[test]
fn series_are_split_by_gpu_config_and_cache() {
    let mut cold = record(1, "a", 5.0);
    cold.cache = Some(CacheMode::Cold);
    let mut h100 = record(1, "a", 7.0);
    h100.gpu = "NVIDIA H100".into();
    h100.gpu_slug = "nvidia-h100".into();
    let mut nightly = record(1, "a", 6.0);
    nightly.config = "nightly".into();
    let h = history_of(&[
        record(1, "a", 4.0),
        cold,
        h100,
        nightly,
        record(2, "a", 3.0),
    ]);
    let s = series(&h, &Filter::default());
    assert_eq!(s.len(), 4);
    assert_eq!(s[0].points.len(), 2);
    assert_eq!(s[1].key.label(), "a (cold)");
    assert_eq!(s[2].gpu, "NVIDIA H100");
    assert_eq!(s[3].key.config, "nightly");
}

#[test]
fn the_best_run_is_the_lowest_p50_earliest_first() {
    let h = history_of(&[
        record(1, "a", 10.0),
        record(2, "a", 9.0),
        record(3, "a", 9.5),
        record(4, "a", 9.0),
    ]);
    let s = &series(&h, &Filter::default())[0];
    assert_eq!(s.best_index(), Some(1));
    assert_eq!(s.points[1].commit, commit(2));
}

#[test]
fn trends_name_the_commit_where_the_level_moved() {
    let records: Vec<Record> = (0..30)
        .map(|i| {
            let wobble = 1.0 + 0.002 * ((i * 7 % 5) as f64 - 2.0);
            let level = if i >= 12 { 103.0 } else { 100.0 };
            record(i, "a", level * wobble)
        })
        .collect();
    let t = trends(
        series(&history_of(&records), &Filter::default()),
        &changepoint::Params::default(),
    );
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].changes.len(), 1, "{:?}", t[0].changes);
    let c = &t[0].changes[0];
    assert_eq!((c.index, c.commit.clone()), (12, commit(12)));
    assert!((c.change_pct - 3.0).abs() < 0.5, "{c:?}");
    assert!((c.before_us - 100.0).abs() < 0.5 && (c.after_us - 103.0).abs() < 0.5);
}

#[test]
fn run_intervals_come_from_the_round_medians() {
    // Round medians 99, 100, 101, 102: mean of logs ≈ ln 100.5, sd ≈ 1.29%.
    let rounds: Vec<Vec<f64>> = [99.0, 100.0, 101.0, 102.0]
        .iter()
        .map(|&m| vec![m - 1.0, m, m + 1.0])
        .collect();
    let s = run_interval(&rounds).unwrap();
    let logs: Vec<f64> = [99.0f64, 100.0, 101.0, 102.0]
        .iter()
        .map(|v| v.ln())
        .collect();
    let mean = logs.iter().sum::<f64>() / 4.0;
    let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
    // t(0.975, 3) = 3.182446305284263 (scipy.stats.t.ppf).
    let half = 3.182446305284263 * sd / 2.0;
    assert!((s.low - (mean - half).exp()).abs() < 1e-9, "{s:?}");
    assert!((s.high - (mean + half).exp()).abs() < 1e-9, "{s:?}");
    assert!(run_interval(&[vec![1.0, 2.0]]).is_none());
    assert!(run_interval(&[]).is_none());
    assert!(run_interval(&[vec![1.0], vec![f64::NAN]]).is_none());
}

#[test]
fn results_become_records_of_the_measured_shapes() {
    let r = results(
        Some("0123456789abcdef0123456789abcdef01234567"),
        &[(shape(512), Some(100.0)), (shape(1024), None)],
    );
    let (records, notes) = records_from_results(&r, Path::new("r.json")).unwrap();
    assert_eq!(records.len(), 1);
    let rec = &records[0];
    assert_eq!(rec.shape, "b2h8s512d64_f16");
    assert_eq!(rec.commit, "0123456789abcdef0123456789abcdef01234567");
    assert_eq!(rec.cache, Some(CacheMode::Cold));
    assert_eq!(rec.p50_us, r.shapes[0].summary.as_ref().unwrap().p50);
    assert_eq!(rec.rounds, 4);
    assert!(rec.interval_us.is_some() && rec.peers.is_empty());
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("b2h8s1024d64_f16"), "{notes:?}");

    let e = records_from_results(
        &results(None, &[(shape(512), Some(1.0))]),
        Path::new("r.json"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("r.json: ") && e.contains("commit"), "{e}");
    let mut failed = results(Some("abcdef0"), &[(shape(512), Some(1.0))]);
    failed.error = Some("no GPU".into());
    let e = records_from_results(&failed, Path::new("r.json"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no verdict"), "{e}");
    let e = records_from_results(
        &results(Some("abcdef0"), &[(shape(512), None)]),
        Path::new("r.json"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no measured shape"), "{e}");
}

#[test]
fn the_chart_is_an_svg_with_a_panel_per_series() {
    let h = history_of(&[
        record(1, "b2h8s512d64_f16", 10.0),
        record(1, "b2h8s1024d64_f16", 20.0),
        record(2, "b2h8s512d64_f16", 10.1),
    ]);
    let t = trends(
        series(&h, &Filter::default()),
        &changepoint::Params::default(),
    );
    let svg = render_svg(&t).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("b2h8s512d64_f16") && svg.contains("b2h8s1024d64_f16"));
    // One run, or runs all equal, still draw.
    let one = trends(
        series(&history_of(&[record(1, "a", 10.0)]), &Filter::default()),
        &changepoint::Params::default(),
    );
    assert!(render_svg(&one).unwrap().contains("<svg"));
}

#[test]
fn energy_per_call_is_charted_on_a_second_axis_where_runs_measured_it() {
    let with_energy = |i: usize, mj: f64| Record {
        mj_per_call: Some(mj),
        mj_interval: Some(Span {
            low: mj * 0.99,
            high: mj * 1.01,
        }),
        ..record(i, "b2h8s512d64_f16", 10.0)
    };
    let h = history_of(&[
        with_energy(1, 2.5),
        with_energy(2, 2.6),
        record(3, "b2h8s512d64_f16", 10.0),
    ]);
    let s = series(&h, &Filter::default());
    assert_eq!(s[0].points[0].mj_per_call, Some(2.5));
    assert_eq!(s[0].points[2].mj_per_call, None);
    let t = trends(s, &changepoint::Params::default());
    let svg = render_svg(&t).unwrap();
    assert!(svg.contains("mJ per call (orange)"), "no energy axis");
    // Runs without energy: no second axis.
    let plain = trends(
        series(
            &history_of(&[record(1, "a", 10.0), record(2, "a", 10.0)]),
            &Filter::default(),
        ),
        &changepoint::Params::default(),
    );
    assert!(!render_svg(&plain).unwrap().contains("mJ per call"));
    // A record's energy is checked like its times.
    let bad = Record {
        mj_per_call: Some(-1.0),
        ..record(1, "a", 10.0)
    };
    let line = serde_json::to_string(&bad).unwrap_or_default();
    assert!(History::parse(&line, Path::new("h.jsonl")).is_err());
}

mod fuzz {
    use proptest::prelude::*;

    use super::*;

    fn mutated_line() -> impl Strategy<Value = String> {
        let good = line(&record(1, "b2h8s512d64_f16", 12.5));
        (0..good.len(), any::<char>(), 0usize..4).prop_map(move |(at, c, how)| {
            let mut s = good.clone();
            let at = (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
            match how {
                0 => s.insert(at, c),
                1 => s.truncate(at),
                2 => {
                    s.remove(at.min(s.len().saturating_sub(1)));
                }
                _ => s.replace_range(at..at, "\n"),
            }
            s
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn parsing_never_panics_and_keeps_only_valid_records(text in ".{0,400}") {
            if let Ok(h) = History::parse(&text, Path::new("h.jsonl")) {
                for e in h.entries {
                    prop_assert!(e.record.check(Path::new("h.jsonl")).is_ok());
                }
            }
        }

        #[test]
        fn mutated_records_are_valid_or_refused_with_a_line(text in mutated_line()) {
            match History::parse(&text, Path::new("h.jsonl")) {
                Ok(h) => for e in h.entries {
                    prop_assert!(e.record.check(Path::new("h.jsonl")).is_ok());
                },
                Err(e) => prop_assert!(e.to_string().starts_with("h.jsonl:"), "{}", e),
            }
        }

        #[test]
        fn change_points_never_panic_and_stay_in_range(
            values in prop_oneof![
                proptest::collection::vec(1e-3f64..1e6, 0..80),
                proptest::collection::vec(99.0f64..101.0, 0..80),
                proptest::collection::vec(any::<f64>(), 0..80),
            ]
        ) {
            let cps = changepoint::detect(&values, &changepoint::Params::default());
            let mut last = 0;
            for c in cps {
                prop_assert!(c.index > last && c.index < values.len());
                last = c.index;
            }
        }
    }
}
