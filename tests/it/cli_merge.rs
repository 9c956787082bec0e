//! `ci-gate merge` through the binary: shards of one A/B run join into the verdict of the
//! whole run (each shape decided on its own data), what is not one run is refused, by name,
//! and nothing that decides the verdict is taken from a shard file: the gate, the parity
//! tolerances and the design come from `--config`, the stored baseline from `--baselines`,
//! the drift policy from `--fail-on-drift`.

use crate::common::stderr_has;
use std::path::{Path, PathBuf};

use crate::common::{bin, require_no_cuda_driver, results};
use ci_gate::config::{Config, Tolerance};
use ci_gate::evaluate::evaluate;
use ci_gate::results::{GpuProcess, ResultsFile, RunTiming, passed};
use ci_gate::shard::ShardInfo;
use ci_gate::verdict::{Policy, Verdict};

/// The config of `common::shapes()`, one stage of 8 rounds (what `common::results` has).
const CONFIG: &str = "\
name: pr
measure:
  min_rounds: 8
  max_rounds: 8
shapes:
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: false, dtype: float16}
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: true, dtype: float16}
  - {batch: 2, heads: 16, seq_len: 2048, head_dim: 128, causal: true, dtype: bfloat16}
";

/// A scratch directory with the config and an empty baseline store.
struct Setup {
    dir: tempfile::TempDir,
    config: PathBuf,
    hash: String,
    store: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("pr.yaml");
        std::fs::write(&config, CONFIG).unwrap();
        let hash = Config::load(&config).unwrap().hash;
        let store = dir.path().join("baselines");
        std::fs::create_dir(&store).unwrap();
        Setup {
            dir,
            config,
            hash,
            store,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `ci-gate merge --config CONFIG --baselines STORE`.
    fn merge(&self) -> assert_cmd::Command {
        let mut c = bin();
        c.arg("merge")
            .arg("--config")
            .arg(&self.config)
            .arg("--baselines")
            .arg(&self.store);
        c
    }

    /// Records the store's baseline from a results file of three shapes at `factors` times
    /// 100 µs (no GPU needed).
    fn record(&self, factors: &[f64]) {
        let mut recorded = results("NVIDIA H200", factors, 11);
        recorded.config.hash = self.hash.clone();
        let from = self.path("recorded.json");
        recorded.save(&from).unwrap();
        bin()
            .args(["baseline", "update", "--reason", "test", "--from"])
            .arg(&from)
            .arg("--config")
            .arg(&self.config)
            .arg("--baselines")
            .arg(&self.store)
            .assert()
            .success();
    }

    /// An A/B run of three shapes, the candidate `factors` times the base's p50, measured
    /// with this config.
    fn run(&self, factors: &[f64]) -> ResultsFile {
        let mut cand = results("NVIDIA H200", factors, 7);
        let base = results("NVIDIA H200", &[1.0, 1.0, 1.0], 8);
        for (c, b) in cand.shapes.iter_mut().zip(&base.shapes) {
            c.base_samples_us = b.samples_us.clone();
        }
        cand.config.hash = self.hash.clone();
        cand
    }
}

/// An A/B run of three shapes: the candidate 0%, +3% and +2.5% slower than the base.
fn whole_run(s: &Setup) -> ResultsFile {
    s.run(&[1.0, 1.03, 1.025])
}

fn save_shards(dir: &Path, whole: &ResultsFile, split: &[&[usize]]) -> Vec<PathBuf> {
    let names: Vec<String> = whole.shapes.iter().map(|s| s.name.clone()).collect();
    split
        .iter()
        .enumerate()
        .map(|(k, idx)| {
            let mut r = whole.clone();
            r.shapes = idx.iter().map(|&i| whole.shapes[i].clone()).collect();
            r.shard = Some(ShardInfo {
                index: k as u32 + 1,
                count: split.len() as u32,
                run_shapes: names.clone(),
            });
            let p = dir.join(format!("shard{}.json", k + 1));
            r.save(&p).unwrap();
            p
        })
        .collect()
}

#[test]
fn shards_merge_into_the_verdict_of_the_whole_run() {
    let s = Setup::new();
    let whole = whole_run(&s);
    let paths = save_shards(s.dir.path(), &whole, &[&[0, 2], &[1]]);
    let out = s.path("merged.json");
    s.merge()
        .args(&paths)
        .arg("--out")
        .arg(&out)
        .args(["--format", "json"])
        .assert()
        .code(1); // +3% is a regression
    let merged = ResultsFile::load(&out).unwrap();
    assert!(merged.shard.is_none());

    // The same shapes compared in one piece.
    let mut expected = whole.shapes.clone();
    let gate = whole.gate.clone();
    evaluate(&mut expected, |_| None, &gate, Policy::default()).unwrap();
    assert_eq!(merged.shapes.len(), 3);
    for (m, e) in merged.shapes.iter().zip(&expected) {
        assert_eq!(m.name, e.name);
        assert_eq!(m.verdict, e.verdict, "{}", m.name);
        let (mp, ep) = (m.ab.as_ref().unwrap(), e.ab.as_ref().unwrap());
        // The merged file's samples went through JSON: equal to the last bit or two.
        assert!((mp.margin_p - ep.margin_p).abs() < 1e-12, "{}", m.name);
        assert!(
            (mp.lower_bound - ep.lower_bound).abs() < 1e-12,
            "{}",
            m.name
        );
    }
    // The margin test is per shape (no correction across the shapes of a run): a shape
    // compared alone gets the very numbers it gets in the merged run.
    let mut alone = vec![whole.shapes[1].clone()];
    evaluate(&mut alone, |_| None, &gate, Policy::default()).unwrap();
    let per_shard = alone[0].ab.as_ref().unwrap();
    let over_run = expected[1].ab.as_ref().unwrap();
    assert_eq!(per_shard, over_run);
}

#[test]
fn what_is_not_one_run_is_refused_with_exit_2() {
    let s = Setup::new();
    let whole = whole_run(&s);
    let paths = save_shards(s.dir.path(), &whole, &[&[0], &[1]]);
    s.merge()
        .args(&paths)
        .assert()
        .code(2)
        .stderr(stderr_has("in no shard"))
        .stderr(stderr_has(&whole.shapes[2].name));
    s.merge()
        .arg(&paths[0])
        .assert()
        .code(2)
        .stderr(stderr_has("shards missing: 2/2"));
    // Another GPU model in one shard.
    let mut other = ResultsFile::load(&paths[1]).unwrap();
    let env = other.environment.as_mut().unwrap();
    env.gpu_name = "NVIDIA H100 80GB HBM3".into();
    env.gpu_slug = "nvidia-h100-80gb-hbm3".into();
    let odd = s.path("h100.json");
    other.save(&odd).unwrap();
    s.merge()
        .arg(&paths[0])
        .arg(&odd)
        .assert()
        .code(2)
        .stderr(stderr_has("differ in the GPU model"));
    // A whole run is not a shard; --ci still writes a results file that says why.
    let whole_path = s.path("whole.json");
    whole.save(&whole_path).unwrap();
    let out = s.path("merged.json");
    s.merge()
        .arg(&whole_path)
        .arg("--ci")
        .arg("--out")
        .arg(&out)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_OUTPUT")
        .assert()
        .code(2)
        .stderr(stderr_has("not a shard"));
    let failed = ResultsFile::load(&out).unwrap();
    assert!(failed.error.unwrap().contains("not a shard"));
    // Without --config there are no rules to judge by.
    bin()
        .arg("merge")
        .args(&paths)
        .assert()
        .code(2)
        .stderr(stderr_has("--config"));
}

/// The forgery that used to pass: a shard that records `alpha: 1e-300` (no p-value is ever
/// that small) and parity tolerances of 1.0, for a candidate 100% slower on one shape and
/// with a relative L2 error of 0.99 on another. Judged by the config's rules it fails.
#[test]
fn a_shard_cannot_bring_its_own_gate_or_tolerances() {
    let s = Setup::new();
    let mut forged = s.run(&[2.0, 1.0, 1.0]);
    forged.gate.alpha = 1e-300;
    for shape in &mut forged.shapes {
        let p = shape.parity.as_mut().unwrap();
        p.tolerance = Tolerance {
            max_abs: 1.0,
            rel_l2: 1.0,
            centered: None,
        };
    }
    let p = forged.shapes[1].parity.as_mut().unwrap();
    p.rel_l2 = 0.99;
    p.max_abs = 0.5;
    // On its own terms the forgery works: nothing fails.
    let mut own = forged.shapes.clone();
    evaluate(&mut own, |_| None, &forged.gate, Policy::default()).unwrap();
    assert!(passed(None, &own, Policy::default()));
    assert_eq!(own[0].verdict, Verdict::Inconclusive);

    let paths = save_shards(s.dir.path(), &forged, &[&[0, 1, 2]]);
    let out = s.path("merged.json");
    s.merge()
        .args(&paths)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(1);
    let merged = ResultsFile::load(&out).unwrap();
    let config = Config::load(&s.config).unwrap();
    assert_eq!(merged.gate, config.gate);
    assert_eq!(merged.shapes[0].verdict, Verdict::Regression);
    assert_eq!(merged.shapes[1].verdict, Verdict::ParityFail);
    assert_eq!(merged.shapes[2].verdict, Verdict::Pass);
    for shape in &merged.shapes {
        assert_eq!(
            shape.parity.as_ref().unwrap().tolerance,
            config.parity.tolerance(shape.params.dtype),
            "{}",
            shape.name
        );
    }
    assert!(!merged.passed);
}

#[test]
fn a_shard_of_another_config_is_refused_by_name() {
    let s = Setup::new();
    let whole = whole_run(&s);
    let mut paths = save_shards(s.dir.path(), &whole, &[&[0, 2], &[1]]);
    let mut other = ResultsFile::load(&paths[1]).unwrap();
    other.config.hash = "ab".repeat(32);
    other.save(&paths[1]).unwrap();
    s.merge()
        .args(&paths)
        .assert()
        .code(2)
        .stderr(stderr_has(format!(
            "shard 2/2 ({}) ran a config with hash {}",
            paths[1].display(),
            "ab".repeat(32)
        )))
        .stderr(stderr_has(&s.hash));
    // Both shards of the other config: still refused, the config is the base's, not theirs.
    let mut first = ResultsFile::load(&paths[0]).unwrap();
    first.config.hash = "ab".repeat(32);
    first.save(&paths[0]).unwrap();
    paths.reverse();
    s.merge()
        .args(&paths)
        .assert()
        .code(2)
        .stderr(stderr_has("ran a config with hash"));
}

/// The stored baseline of the base commit decides whenever it has the shape: a shard that
/// says it compared with none cannot hide a 10% slowdown against it.
#[test]
fn a_shard_cannot_hide_the_stored_baseline() {
    let s = Setup::new();
    // Record the base's baseline (from a results file: no GPU needed).
    s.record(&[1.0, 1.0, 1.0]);

    // 10% slower, no A/B, and no stored baseline claimed.
    let mut slower = results("NVIDIA H200", &[1.1, 1.1, 1.1], 12);
    slower.config.hash = s.hash.clone();
    assert!(slower.baseline.is_none());
    let paths = save_shards(s.dir.path(), &slower, &[&[0, 1, 2]]);

    // With an empty store nothing decides: no-baseline, which passes.
    let empty = s.path("empty-store");
    std::fs::create_dir(&empty).unwrap();
    bin()
        .arg("merge")
        .arg("--config")
        .arg(&s.config)
        .arg("--baselines")
        .arg(&empty)
        .args(&paths)
        .assert()
        .success();

    let out = s.path("merged.json");
    s.merge()
        .args(&paths)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(1);
    let merged = ResultsFile::load(&out).unwrap();
    for shape in &merged.shapes {
        assert_eq!(shape.verdict, Verdict::Regression, "{}", shape.name);
        assert!(shape.stored.is_some(), "{}", shape.name);
    }
    assert!(merged.baseline.is_some());
    assert!(
        merged
            .warnings
            .iter()
            .any(|w| w.contains("compared with no stored baseline")),
        "{:?}",
        merged.warnings
    );
}

/// A shard that shared its GPU with another process was not compared with the stored
/// baseline by the run that measured it; merge keeps it so, shard by shard: its A/B still
/// decides, a shape the stored baseline alone would judge has no verdict (a fail), and the
/// other shards are compared with the stored baseline as usual.
#[test]
fn a_shared_shard_is_not_compared_with_the_stored_baseline() {
    let s = Setup::new();
    s.record(&[1.0, 1.0, 1.0]);
    // Both sides 10% slower than the stored baseline, as beside a busy neighbour: against
    // the stored baseline alone every shape would read slower.
    let slowed = |seed| results("NVIDIA H200", &[1.1, 1.1, 1.1], seed);
    let mut r = slowed(7);
    for (c, b) in r.shapes.iter_mut().zip(&slowed(8).shapes) {
        c.base_samples_us = b.samples_us.clone();
    }
    r.config.hash = s.hash.clone();
    let paths = save_shards(s.dir.path(), &r, &[&[0, 2], &[1]]);
    let neighbour = GpuProcess {
        pid: 4200000,
        name: Some("trainer".into()),
        used_mib: Some(2048),
    };
    let mut first = ResultsFile::load(&paths[0]).unwrap();
    first.timing = Some(RunTiming {
        other_processes: vec![neighbour.clone()],
        ..RunTiming::default()
    });
    first.save(&paths[0]).unwrap();

    let out = s.path("merged.json");
    let merged = |paths: &[PathBuf], code: i32| {
        s.merge()
            .args(paths)
            .arg("--fail-on-drift")
            .arg("--out")
            .arg(&out)
            .assert()
            .code(code);
        ResultsFile::load(&out).unwrap()
    };
    // The unshared shard's shape is compared with the stored baseline: a drift (+10% on
    // both sides), which --fail-on-drift fails; the shared shard's shapes are decided by A/B.
    let m = merged(&paths, 1);
    let by_name = |m: &ResultsFile, i: usize| m.shapes[i].clone();
    for i in [0, 2] {
        let shape = by_name(&m, i);
        assert!(shape.stored.is_none(), "{}", shape.name);
        assert_eq!(shape.verdict, Verdict::Pass, "{}", shape.name);
    }
    let unshared = by_name(&m, 1);
    assert!(unshared.stored.is_some(), "{}", unshared.name);
    assert_eq!(unshared.verdict, Verdict::Drift, "{}", unshared.name);
    assert_eq!(
        m.timing.as_ref().unwrap().other_processes,
        vec![neighbour.clone()]
    );

    // Without A/B the stored baseline is the only reference: the shared shard's shapes
    // have no verdict, which fails the run (exit 1, as in the run that measured them) even
    // where every other shape passes (here the unshared one, now as fast as the stored).
    let as_stored = results("NVIDIA H200", &[1.0, 1.0, 1.0], 9);
    for p in &paths {
        let mut shard = ResultsFile::load(p).unwrap();
        for shape in shard.shapes.iter_mut() {
            shape.base_samples_us.clear();
            if shape.name == as_stored.shapes[1].name {
                shape.samples_us = as_stored.shapes[1].samples_us.clone();
                crate::common::resummarize(shape);
            }
        }
        shard.save(p).unwrap();
    }
    let m = merged(&paths, 1);
    for i in [0, 2] {
        let shape = by_name(&m, i);
        assert_eq!(shape.verdict, Verdict::Error, "{}", shape.name);
        assert!(
            shape
                .error
                .as_deref()
                .unwrap()
                .contains("another process shared the GPU with its shard"),
            "{:?}",
            shape.error
        );
    }
    assert_eq!(by_name(&m, 1).verdict, Verdict::Pass);
    assert!(!m.passed);
}

/// The drift policy is merge's own flag: a shard that says a drift fails cannot turn it on,
/// and one that says it does not cannot turn it off.
#[test]
fn the_drift_policy_comes_from_the_flag() {
    let s = Setup::new();
    // The stored baseline 10% faster than both sides of an A/B run that shows no change:
    // a drift on every shape.
    s.record(&[0.9, 0.9, 0.9]);
    let mut r = s.run(&[1.0, 1.0, 1.0]);
    r.fail_on_drift = true;
    let paths = save_shards(s.dir.path(), &r, &[&[0, 1, 2]]);
    let out = s.path("merged.json");
    s.merge()
        .args(&paths)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let merged = ResultsFile::load(&out).unwrap();
    assert!(!merged.fail_on_drift);
    for shape in &merged.shapes {
        assert_eq!(shape.verdict, Verdict::Drift, "{}", shape.name);
    }
    r.fail_on_drift = false;
    let paths = save_shards(s.dir.path(), &r, &[&[0, 1, 2]]);
    s.merge()
        .args(&paths)
        .arg("--fail-on-drift")
        .arg("--out")
        .arg(&out)
        .assert()
        .code(1);
    assert!(ResultsFile::load(&out).unwrap().fail_on_drift);
}

/// A shard that could not measure (here: no GPU) says so in its results file, and merge
/// names it and quotes its error, instead of calling it "not a shard".
#[test]
#[cfg_attr(
    ci_gate_cuda_driver,
    ignore = "a CUDA driver is installed here; this test checks the path without a GPU"
)]
fn a_failed_shard_is_named_with_its_error() {
    require_no_cuda_driver();
    let s = Setup::new();
    let failed = s.path("failed-shard.json");
    bin()
        .arg("ci")
        .arg("--config")
        .arg(&s.config)
        .arg("--baselines")
        .arg(&s.store)
        .arg("--kernels")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels"))
        .args(["--shard", "2/2", "--no-profile", "--out"])
        .arg(&failed)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_OUTPUT")
        .assert()
        .code(2);
    let r = ResultsFile::load(&failed).unwrap();
    assert_eq!(r.shard.as_ref().map(|i| (i.index, i.count)), Some((2, 2)));
    let whole = whole_run(&s);
    let good = save_shards(s.dir.path(), &whole, &[&[0, 2], &[1]]);
    s.merge()
        .arg(&good[0])
        .arg(&failed)
        .assert()
        .code(2)
        .stderr(stderr_has(format!(
            "shard 2/2 ({}) reached no verdict: ",
            failed.display()
        )))
        .stderr(stderr_has("no NVIDIA driver"));
}

/// The terminal notes wrap between words, never at a hyphen inside a file name, GPU slug or
/// clock range (issue 21: `nvidia-⏎h200/pr.json`, `(1965-⏎1980 MHz)`), at 80 columns.
#[test]
fn notes_do_not_wrap_at_hyphens_inside_identifiers() {
    let s = Setup::new();
    let mut whole = whole_run(&s);
    whole.warnings = vec![
        "no stored baseline for NVIDIA H200 and config pr at /tmp/some/where/baselines/nvidia-h200/pr.json: A/B alone decides".into(),
        "the SM clock changed while measuring b2h8s512d64_f16 (1965-1980 MHz), b2h8s512d64_causal_f16 (1950-1980 MHz): those timings carry the change".into(),
    ];
    let paths = save_shards(s.dir.path(), &whole, &[&[0, 2], &[1]]);
    let assert = s.merge().args(&paths).env_remove("COLUMNS").assert();
    let out = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    for whole_word in ["nvidia-h200/pr.json", "(1965-1980", "(1950-1980"] {
        assert!(out.contains(whole_word), "{whole_word}: {out}");
    }
    for line in out.lines() {
        assert!(line.chars().count() <= 80, "{line}");
        assert!(!line.ends_with('-'), "{out}");
    }
}

/// Edits the JSON of the file at `path` with `f` (a file of another ci-gate is only JSON).
fn edit(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

/// Shards measured by two methods are not one run (issue 37).
#[test]
fn shards_of_two_methods_are_refused_naming_both() {
    let s = Setup::new();
    let whole = whole_run(&s);
    let paths = save_shards(s.dir.path(), &whole, &[&[0, 2], &[1]]);
    let method = |fp: &str| serde_json::json!({"version": 3, "fingerprint": fp});
    edit(&paths[0], |v| v["method"] = method("m3-0123456789ab"));
    edit(&paths[1], |v| v["method"] = method("m3-fedcba987654"));
    s.merge()
        .args(&paths)
        .assert()
        .code(2)
        .stderr(stderr_has("differ in the method"))
        .stderr(stderr_has("m3-0123456789ab"))
        .stderr(stderr_has("m3-fedcba987654"));
}

/// A stored baseline measured by another method (here: one written before ci-gate named its
/// method, as the shipped baselines are) is never judged against: without A/B the shapes
/// read `other-method`, a warning that passes, never a regression; with A/B, the A/B
/// decides and no drift is looked for. The warning names both methods and the command that
/// re-records the baseline.
#[test]
fn a_stored_baseline_of_another_method_is_not_judged() {
    let s = Setup::new();
    s.record(&[1.0, 1.0, 1.0]);
    edit(&s.store.join("nvidia-h200/pr.json"), |v| {
        v.as_object_mut().unwrap().remove("method");
    });
    // 10% slower than the stored numbers, no A/B: read against them, a regression.
    let mut slower = results("NVIDIA H200", &[1.1, 1.1, 1.1], 12);
    slower.config.hash = s.hash.clone();
    let paths = save_shards(s.dir.path(), &slower, &[&[0, 1, 2]]);
    let out = s.path("merged.json");
    let assert = s
        .merge()
        .args(&paths)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(0);
    let text = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let merged = ResultsFile::load(&out).unwrap();
    for shape in &merged.shapes {
        assert_eq!(
            serde_json::to_value(shape.verdict).unwrap(),
            "other-method",
            "{}",
            shape.name
        );
        assert!(shape.stored.is_none(), "{}", shape.name);
    }
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("3 other-method"), "{flat}");
    assert!(
        flat.contains("unknown (recorded before ci-gate named its method)"),
        "{flat}"
    );
    assert!(flat.contains("ci-gate baseline update"), "{flat}");
    // With A/B (both sides as fast as each other, 10% slower than the stored numbers: a
    // drift if they were compared), the A/B decides.
    let mut ab = s.run(&[1.1, 1.1, 1.1]);
    let base = results("NVIDIA H200", &[1.1, 1.1, 1.1], 8);
    for (c, b) in ab.shapes.iter_mut().zip(&base.shapes) {
        c.base_samples_us = b.samples_us.clone();
    }
    let paths = save_shards(s.dir.path(), &ab, &[&[0, 1, 2]]);
    s.merge()
        .args(&paths)
        .arg("--fail-on-drift")
        .arg("--out")
        .arg(&out)
        .assert()
        .code(0);
    let merged = ResultsFile::load(&out).unwrap();
    for shape in &merged.shapes {
        assert_eq!(shape.verdict, Verdict::Pass, "{}", shape.name);
        assert!(shape.stored.is_none(), "{}", shape.name);
    }
}

/// A baseline file where shards belong is named as what it is.
#[test]
fn a_baseline_file_is_not_a_shard() {
    let s = Setup::new();
    s.record(&[1.0, 1.0, 1.0]);
    s.merge()
        .arg(s.store.join("nvidia-h200/pr.json"))
        .assert()
        .code(2)
        .stderr(stderr_has("pr.json is a baseline file"));
}
