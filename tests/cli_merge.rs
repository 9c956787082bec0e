//! `ci-gate merge` through the binary: shards of one A/B run join into the verdict of the
//! whole run (each shape decided on its own data), and what is not one run is refused, by name.

mod common;

use std::path::{Path, PathBuf};

use ci_gate::evaluate::evaluate;
use ci_gate::results::ResultsFile;
use ci_gate::shard::ShardInfo;
use ci_gate::verdict::Policy;
use common::{bin, results};
use predicates::prelude::*;

/// An A/B run of three shapes: the candidate 0%, +3% and +2.5% slower than the base.
fn whole_run() -> ResultsFile {
    let mut cand = results("NVIDIA H200", &[1.0, 1.03, 1.025], 7);
    let base = results("NVIDIA H200", &[1.0, 1.0, 1.0], 8);
    for (c, b) in cand.shapes.iter_mut().zip(&base.shapes) {
        c.base_samples_us = b.samples_us.clone();
    }
    cand
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
    let dir = tempfile::tempdir().unwrap();
    let whole = whole_run();
    let paths = save_shards(dir.path(), &whole, &[&[0, 2], &[1]]);
    let out = dir.path().join("merged.json");
    bin()
        .arg("merge")
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
    let dir = tempfile::tempdir().unwrap();
    let whole = whole_run();
    let paths = save_shards(dir.path(), &whole, &[&[0], &[1]]);
    bin()
        .arg("merge")
        .args(&paths)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("in no shard"))
        .stderr(predicate::str::contains(&whole.shapes[2].name));
    bin()
        .arg("merge")
        .arg(&paths[0])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("shards missing: 2/2"));
    // Another GPU model in one shard.
    let mut other = ResultsFile::load(&paths[1]).unwrap();
    let env = other.environment.as_mut().unwrap();
    env.gpu_name = "NVIDIA H100 80GB HBM3".into();
    env.gpu_slug = "nvidia-h100-80gb-hbm3".into();
    let odd = dir.path().join("h100.json");
    other.save(&odd).unwrap();
    bin()
        .arg("merge")
        .arg(&paths[0])
        .arg(&odd)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("differ in the GPU model"));
    // A whole run is not a shard; --ci still writes a results file that says why.
    let whole_path = dir.path().join("whole.json");
    whole.save(&whole_path).unwrap();
    let out = dir.path().join("merged.json");
    bin()
        .arg("merge")
        .arg(&whole_path)
        .arg("--ci")
        .arg("--out")
        .arg(&out)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_OUTPUT")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a shard"));
    let failed = ResultsFile::load(&out).unwrap();
    assert!(failed.error.unwrap().contains("not a shard"));
}
