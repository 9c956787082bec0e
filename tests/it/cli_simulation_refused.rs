//! A simulated GPU is a test device, never a verdict on a runner: a simulated kernel's times
//! are what its own `// ci-gate-sim: factor=…` line says. So `CI_GATE_SIMULATE` is refused in
//! GitHub Actions (`sim::simulation_seed`), by every command that would measure or
//! merge, and `merge` refuses shards measured on the simulated GPU unless it simulates
//! itself (as the tests do).

use std::path::{Path, PathBuf};

use crate::common::{bin, results, sim_kernels, stderr};
use ci_gate::config::Config;
use ci_gate::results::ResultsFile;
use ci_gate::shard::ShardInfo;

const SIM_CONFIG: &str = "\
name: sim
gate: {max_p50_regression: 0.02, alpha: 0.05, seed: 7}
measure: {cache: hot, samples_per_round: 10, min_rounds: 8, max_rounds: 8}
shapes:
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: false, dtype: float16}
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: true, dtype: float16}
";

/// The refusal, as every command says it.
const REFUSED: &str = "CI_GATE_SIMULATE is set in GitHub Actions (GITHUB_ACTIONS is set), but the simulated GPU is a test device whose times the kernels' own `ci-gate-sim` lines decide, never a verdict on a runner: unset CI_GATE_SIMULATE";

struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sim.yaml"), SIM_CONFIG).unwrap();
        std::fs::create_dir(dir.path().join("baselines")).unwrap();
        for (name, directive) in [("base", "factor=1.0"), ("cand", "factor=0.80")] {
            sim_kernels(dir.path(), name, directive);
        }
        Scratch { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `ci-gate local` of the candidate (20% faster, says its own line) against the base.
    fn local(&self, out: &str) -> assert_cmd::Command {
        let mut c = bin();
        c.current_dir(self.dir.path())
            .arg("local")
            .arg("--config")
            .arg(self.path("sim.yaml"))
            .arg("--baselines")
            .arg(self.path("baselines"))
            .arg("--base-kernels")
            .arg(self.path("base"))
            .arg("--kernels")
            .arg(self.path("cand"))
            .args(["--no-peers", "--no-profile", "--format", "json", "--out"])
            .arg(self.path(out));
        c
    }

    fn merge(&self, shards: &[PathBuf]) -> assert_cmd::Command {
        let mut c = bin();
        c.current_dir(self.dir.path())
            .arg("merge")
            .args(shards)
            .arg("--config")
            .arg(self.path("sim.yaml"))
            .arg("--baselines")
            .arg(self.path("baselines"));
        c
    }

    /// Two shards of a simulated run, measured outside Actions.
    fn simulated_shards(&self) -> Vec<PathBuf> {
        (1..=2)
            .map(|k| {
                let name = format!("shard{k}.json");
                let out = self
                    .local(&name)
                    .env("CI_GATE_SIMULATE", "5")
                    .args(["--shard", &format!("{k}/2")])
                    .output()
                    .unwrap();
                assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
                self.path(&name)
            })
            .collect()
    }
}

/// Every command that measures refuses, whatever value GitHub Actions' variable has: `local`,
/// `local --devices` (before any child starts), and `merge` when it would
/// simulate.
#[test]
fn the_simulation_is_refused_in_github_actions() {
    let s = Scratch::new();
    let shards = s.simulated_shards();
    for actions in ["true", "1", ""] {
        let runs: Vec<(&str, std::process::Output)> = vec![
            (
                "local",
                s.local("r.json")
                    .env("CI_GATE_SIMULATE", "1")
                    .env("GITHUB_ACTIONS", actions)
                    .output()
                    .unwrap(),
            ),
            (
                "local --devices",
                s.local("r.json")
                    .env("CI_GATE_SIMULATE", "1")
                    .env("GITHUB_ACTIONS", actions)
                    .args(["--devices", "0,1"])
                    .output()
                    .unwrap(),
            ),
            (
                "merge",
                s.merge(&shards)
                    .env("CI_GATE_SIMULATE", "1")
                    .env("GITHUB_ACTIONS", actions)
                    .output()
                    .unwrap(),
            ),
        ];
        for (what, out) in runs {
            assert_eq!(out.status.code(), Some(2), "{what} {actions:?}");
            let err = stderr(&out);
            assert!(err.contains(REFUSED), "{what} {actions:?}: {err}");
            assert!(
                !String::from_utf8_lossy(&out.stdout).contains("\"verdict\""),
                "{what} {actions:?}: a verdict was printed"
            );
        }
    }
    // Outside Actions the same local run simulates (and its own line makes it an improvement).
    let out = s
        .local("r.json")
        .env("CI_GATE_SIMULATE", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `merge` takes no shard measured on the simulated GPU unless it simulates too: not in a
/// plain merge, not in `merge --ci` (which still writes a results file that says why).
#[test]
fn merge_refuses_simulated_shards_unless_it_simulates() {
    let s = Scratch::new();
    let shards = s.simulated_shards();
    let out = s.merge(&shards).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "shard 1/2 ({}) was measured on the simulated GPU (CI_GATE_SIMULATE), a test device whose times the kernels' own `ci-gate-sim` lines decide: merge joins only shards measured on a GPU",
            shards[0].display()
        )),
        "{err}"
    );
    // In Actions, with --ci: exit 2, and the results file the comment job reads says why.
    let merged = s.path("merged.json");
    let outputs = s.path("outputs");
    let out = s
        .merge(&shards)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", &outputs)
        .env_remove("GITHUB_STEP_SUMMARY")
        .arg("--ci")
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let failed = ResultsFile::load(&merged).unwrap();
    assert!(!failed.passed);
    assert!(
        failed
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("was measured on the simulated GPU"),
        "{:?}",
        failed.error
    );
    let outputs = std::fs::read_to_string(&outputs).unwrap();
    assert!(outputs.contains("\nerror\n"), "{outputs}");
    // Under the simulation itself (the tests), the same shards merge into a verdict.
    let out = s
        .merge(&shards)
        .env("CI_GATE_SIMULATE", "1")
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let merged = ResultsFile::load(&merged).unwrap();
    assert!(merged.error.is_none() && merged.passed);
    assert_eq!(merged.shapes.len(), 2);
}

/// The config of `common::shapes()`, one stage of 8 rounds (what `common::results` has).
const GPU_CONFIG: &str = "\
name: pr
measure:
  min_rounds: 8
  max_rounds: 8
shapes:
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: false, dtype: float16}
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: true, dtype: float16}
  - {batch: 2, heads: 16, seq_len: 2048, head_dim: 128, causal: true, dtype: bfloat16}
";

/// Shards measured on a GPU merge in GitHub Actions (no simulation involved): the verdict
/// is published as `ci` publishes it, a regression annotated after the table, the outputs
/// and the job summary written.
#[test]
fn merge_in_actions_publishes_the_verdict_of_gpu_shards() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pr.yaml");
    std::fs::write(&config, GPU_CONFIG).unwrap();
    let hash = Config::load(&config).unwrap().hash;
    std::fs::create_dir(dir.path().join("baselines")).unwrap();
    // The candidate +3% on the second shape: a regression.
    let mut whole = results("NVIDIA L4", &[1.0, 1.03, 1.0], 7);
    let base = results("NVIDIA L4", &[1.0, 1.0, 1.0], 8);
    for (c, b) in whole.shapes.iter_mut().zip(&base.shapes) {
        c.base_samples_us = b.samples_us.clone();
    }
    whole.config.hash = hash;
    let names: Vec<String> = whole.shapes.iter().map(|s| s.name.clone()).collect();
    let shards: Vec<PathBuf> = [&[0usize, 2][..], &[1][..]]
        .iter()
        .enumerate()
        .map(|(k, idx)| {
            let mut r = whole.clone();
            r.shapes = idx.iter().map(|&i| whole.shapes[i].clone()).collect();
            r.shard = Some(ShardInfo {
                index: k as u32 + 1,
                count: 2,
                run_shapes: names.clone(),
            });
            let p = dir.path().join(format!("shard{}.json", k + 1));
            r.save(&p).unwrap();
            p
        })
        .collect();
    let (outputs, summary, merged) = (
        dir.path().join("outputs"),
        dir.path().join("summary.md"),
        dir.path().join("merged.json"),
    );
    let out = bin()
        .current_dir(dir.path())
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .arg("merge")
        .args(&shards)
        .arg("--config")
        .arg(&config)
        .arg("--baselines")
        .arg(dir.path().join("baselines"))
        .arg("--ci")
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", stderr(&out));
    let regression = format!("::error title=ci-gate%3A regression in {}::", names[1]);
    assert!(stdout.contains(&regression), "{stdout}");
    let outputs = std::fs::read_to_string(&outputs).unwrap();
    assert!(
        outputs.contains("\nfail\n") && outputs.contains("regressions"),
        "{outputs}"
    );
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(summary.contains("regression"), "{summary}");
    assert!(!ResultsFile::load(&merged).unwrap().passed);
    assert!(Path::new(&merged).is_file());
}
