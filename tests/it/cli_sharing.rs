//! Whether a run had the GPU to itself, through the binary on the simulated GPU: ci-gate's
//! runs on one GPU wait for each other (`gpu::lock`, keyed by the GPU's UUID: the simulated
//! GPU's is made from its seed), saying so once on stderr, and give up after the wait bound
//! (exit 2); another process on the GPU (`// ci-gate-sim: others=…`, as NVML would list it)
//! is named in the results and a warning, and the comparison with the stored baseline is not
//! judged beside it (`run::sharing`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{private_lock_dir, sim_kernels, stderr};

/// The ci-gate binary as `common::bin` sets it up, as a std `Command` (to spawn two at once).
fn ci_gate() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ci-gate"));
    c.env("NO_COLOR", "1")
        .env_remove("COLUMNS")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_SHA")
        .env("CI_GATE_LOCK_DIR", private_lock_dir());
    c
}

const CONFIG: &str = "\
name: sim
gate: {max_p50_regression: 0.02, alpha: 0.05, seed: 7}
parity:
  seed: 11
  float16: {max_abs: 1.0e-2, rel_l2: 1.0e-3}
  bfloat16: {max_abs: 6.0e-2, rel_l2: 8.0e-3}
measure: {cache: hot, samples_per_round: 10, min_rounds: 8, max_rounds: 24}
shapes:
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: false, dtype: float16}
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: true, dtype: float16}
";

struct Sim {
    dir: tempfile::TempDir,
}

impl Sim {
    fn new() -> Sim {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sim.yaml"), CONFIG).unwrap();
        std::fs::create_dir(dir.path().join("baselines")).unwrap();
        Sim { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn kernels(&self, name: &str, directive: &str) -> PathBuf {
        sim_kernels(self.dir.path(), name, directive)
    }

    /// `ci-gate local` of `cand` against `base` (or alone), simulation `seed`, results to
    /// `out`.
    fn local(&self, base: Option<&Path>, cand: &Path, seed: &str, out: &str) -> Command {
        let mut c = ci_gate();
        c.env("CI_GATE_SIMULATE", seed)
            .current_dir(self.dir.path())
            .args(["local", "--config", "sim.yaml", "--baselines", "baselines"])
            .arg("--kernels")
            .arg(cand)
            .args(["--no-peers", "--no-profile", "--format", "json", "--out"])
            .arg(self.path(out));
        match base {
            Some(b) => c.arg("--base-kernels").arg(b),
            None => c.arg("--no-base"),
        };
        c
    }

    fn results(&self, out: &str) -> Value {
        serde_json::from_slice(&std::fs::read(self.path(out)).unwrap()).unwrap()
    }

    /// Records the stored baseline of `kernels` from three simulated processes.
    fn record(&self, kernels: &Path) {
        let mut rec = ci_gate();
        rec.current_dir(self.dir.path())
            .args([
                "baseline", "update", "--reason", "first", "--config", "sim.yaml",
            ])
            .args(["--baselines", "baselines"]);
        for p in 1..=3 {
            let name = format!("process{p}.json");
            let out = self
                .local(None, kernels, &p.to_string(), &name)
                .arg("--no-compare")
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            rec.arg("--from").arg(self.path(&name));
        }
        let out = rec.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

fn waiting_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("ci-gate: waiting for GPU"))
        .collect()
}

/// Waits until the lock file of `uuid` in `dir` names `pid` as its holder.
fn wait_until_held(dir: &Path, uuid: &str, pid: u32, first: &mut Child) {
    let file = dir.join(format!("{uuid}.lock"));
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if std::fs::read_to_string(&file).is_ok_and(|t| t.starts_with(&format!("pid {pid}\n"))) {
            return;
        }
        if let Some(status) = first.try_wait().unwrap() {
            panic!("the first run ended ({status}) before it was seen holding the lock");
        }
        assert!(Instant::now() < until, "the first run never took the lock");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Two simulated runs on one simulated GPU (same seed, same lock directory) started one
/// right after the other: the second waits for the first, says so once naming the first's
/// pid, then runs; both pass, and the second records its wait.
#[test]
fn two_runs_on_one_gpu_take_turns_and_the_second_says_it_waits() {
    let s = Sim::new();
    // 8 pairs × 2 shapes × 2 rounds of 25 ms: the first holds the GPU for about 0.8 s.
    let a = s.kernels("a", "factor=1.0 wall=25");
    let b = s.kernels("b", "factor=1.0 wall=25");
    let locks = private_lock_dir();
    let uuid = ci_gate::sim::gpu_uuid(1);
    let spawn = |out: &str| {
        s.local(Some(&a), &b, "1", out)
            .env("CI_GATE_LOCK_DIR", &locks)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut first = spawn("first.json");
    wait_until_held(&locks, &uuid, first.id(), &mut first);
    let second = spawn("second.json");
    let (first_pid, first) = (first.id(), first.wait_with_output().unwrap());
    let second = second.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert!(
        waiting_lines(&stderr(&first)).is_empty(),
        "{}",
        stderr(&first)
    );
    let said = stderr(&second);
    let lines = waiting_lines(&said);
    assert_eq!(lines.len(), 1, "said once: {said}");
    assert!(
        lines[0].starts_with(&format!(
            "ci-gate: waiting for GPU {uuid} (held by pid {first_pid} since 20"
        )) && lines[0].ends_with(" UTC)"),
        "{}",
        lines[0]
    );
    let waited = s.results("second.json")["timing"]["lock_wait_s"]
        .as_f64()
        .unwrap();
    assert!(waited > 0.05, "the second run waited {waited} s");
    let r = s.results("first.json");
    assert!(r["timing"]["lock_wait_s"].as_f64().unwrap() < waited);
    assert_eq!(
        r["environment"]["gpu_uuid"], uuid,
        "the simulated GPU's UUID is the lock's key"
    );
}

/// A GPU held longer than the wait bound: no verdict (exit 2), one sentence naming the GPU,
/// the holder and the wait, in the results file too.
#[test]
fn a_gpu_held_past_the_wait_bound_ends_the_run_without_a_verdict() {
    let s = Sim::new();
    let a = s.kernels("a", "factor=1.0");
    let locks = private_lock_dir();
    let uuid = ci_gate::sim::gpu_uuid(1);
    // Held by this test process, as another ci-gate run would hold it.
    let held = ci_gate::gpu::lock::acquire(&uuid, &locks, Duration::ZERO, &mut |_| {}).unwrap();
    let out = s
        .local(Some(&a), &a, "1", "results.json")
        .env("CI_GATE_LOCK_DIR", &locks)
        .env("CI_GATE_LOCK_WAIT_S", "0.4")
        .output()
        .unwrap();
    drop(held);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    let me = std::process::id();
    assert_eq!(waiting_lines(&said).len(), 1, "{said}");
    let sentence = format!("GPU {uuid} is still held by pid {me} since ");
    assert!(
        said.contains(&sentence) && said.contains("after waiting 0.4 s"),
        "{said}"
    );
    let r = s.results("results.json");
    assert!(
        r["error"].as_str().unwrap().contains(&sentence),
        "{}",
        r["error"]
    );
    assert_eq!(r["passed"], false);
}

/// Another process on the GPU from the start, in an A/B run with a stored baseline: named in
/// the results and a warning; the stored comparison is not judged (a note says why), the A/B
/// still decides.
#[test]
fn another_process_is_named_and_the_stored_comparison_is_not_judged() {
    let s = Sim::new();
    let a = s.kernels("a", "factor=1.0");
    s.record(&a);
    // Control: alone on the GPU, the stored baseline is compared with.
    let b = s.kernels("b", "factor=1.0");
    let out = s.local(Some(&a), &b, "9", "alone.json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let alone = s.results("alone.json");
    assert!(alone["timing"].get("other_processes").is_none(), "{alone}");
    assert!(
        alone["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| !x["stored"].is_null())
    );

    let shared = s.kernels("shared", "factor=1.0 others=*");
    let out = s
        .local(Some(&a), &shared, "9", "shared.json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = s.results("shared.json");
    assert_eq!(
        r["timing"]["other_processes"],
        serde_json::json!([{"pid": 4200000, "name": "sim-neighbour", "used_mib": 2048}])
    );
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains(
            "another process shared the GPU with this run: sim-neighbour (pid 4200000, 2048 MiB); its work slowed the timings by an unknown amount"
        ),
        "{warnings}"
    );
    let notes = r["notes"].to_string();
    assert!(
        notes.contains(
            "the comparison with the stored baseline is not judged: another process (sim-neighbour, pid 4200000) used the GPU during this run"
        ) && notes.contains(
            "the host's clock as the witness of the samples is not judged: another process (sim-neighbour, pid 4200000) used the GPU during this run"
        ),
        "{notes}"
    );
    for shape in r["shapes"].as_array().unwrap() {
        assert!(shape["stored"].is_null(), "{shape}");
        assert!(!shape["ab"].is_null(), "{shape}");
        assert_eq!(shape["verdict"], "pass", "{shape}");
        assert_eq!(shape["decided_by"], "ab", "{shape}");
    }
}

/// Without an A/B the stored baseline is the only reference: beside another process the
/// shapes it would have judged have no verdict (never a pass nothing judged); a process that
/// appears only once a later shape has begun is seen between shapes.
#[test]
fn without_ab_a_shared_run_has_no_verdict_where_the_stored_baseline_would_decide() {
    let s = Sim::new();
    let a = s.kernels("a", "factor=1.0 others=causal");
    s.record(&s.kernels("plain", "factor=1.0"));
    let out = s.local(None, &a, "9", "results.json").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = s.results("results.json");
    assert_eq!(r["timing"]["other_processes"][0]["pid"], 4200000, "{r}");
    for shape in r["shapes"].as_array().unwrap() {
        assert_eq!(shape["verdict"], "error", "{shape}");
        assert!(
            shape["error"].as_str().unwrap().starts_with(
                "the stored baseline is this shape's only reference and another process (sim-neighbour, pid 4200000) used the GPU during this run, so it has no verdict"
            ),
            "{shape}"
        );
    }
}
