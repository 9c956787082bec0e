//! The whole pipeline without a GPU, through the binary: `CI_GATE_SIMULATE` puts the
//! simulated backend (src/backend/sim.rs) under `local`, `ci` and `baseline update`, and each
//! kernel directory says in its `attention.cu` what its simulated kernel does
//! (`// ci-gate-sim: factor=1.05 parity-fail=causal hang=... error=... skip=... clock=...`). The
//! stages, the statistics, the integrity and speed checks, drift tracing, the reports, the
//! GitHub Actions publishing and the exit codes all run as on a GPU.

use crate::common::stderr_text;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{bin, rounded, sim_kernels};

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
  - {batch: 2, heads: 16, seq_len: 2048, head_dim: 128, causal: true, dtype: bfloat16}
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

    /// A kernels directory whose simulated kernel follows `directive`.
    fn kernels(&self, name: &str, directive: &str) -> PathBuf {
        sim_kernels(self.dir.path(), name, directive)
    }

    fn local(&self, base: &Path, cand: &Path) -> assert_cmd::Command {
        let mut c = bin();
        c.env("CI_GATE_SIMULATE", "1")
            .current_dir(self.dir.path())
            .arg("local")
            .arg("--config")
            .arg(self.path("sim.yaml"))
            .arg("--baselines")
            .arg(self.path("baselines"))
            .arg("--base-kernels")
            .arg(base)
            .arg("--kernels")
            .arg(cand)
            .args(["--no-peers", "--no-profile", "--out"])
            .arg(self.path("results.json"));
        c
    }

    /// `ci-gate local --no-base` of `kernels` against the stored baseline, 200 columns wide.
    fn stored_only(&self, kernels: &Path) -> assert_cmd::Command {
        let mut c = bin();
        c.env("CI_GATE_SIMULATE", "1")
            .env("COLUMNS", "200")
            .current_dir(self.dir.path())
            .args(["local", "--no-base", "--config"])
            .arg(self.path("sim.yaml"))
            .arg("--baselines")
            .arg(self.path("baselines"))
            .arg("--kernels")
            .arg(kernels)
            .args(["--no-peers", "--no-profile"]);
        c
    }

    /// `baseline update --from` the last run's results.json, which must succeed.
    fn record_last_run(&self, reason: &str) {
        let rec = bin()
            .current_dir(self.dir.path())
            .args(["baseline", "update", "--reason", reason, "--config"])
            .arg(self.path("sim.yaml"))
            .arg("--baselines")
            .arg(self.path("baselines"))
            .arg("--from")
            .arg(self.path("results.json"))
            .output()
            .unwrap();
        assert!(rec.status.success(), "{}", stderr_text(&rec.stderr));
    }

    fn results(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.path("results.json")).unwrap()).unwrap()
    }
}

fn verdicts(r: &Value) -> Vec<String> {
    r["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["verdict"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_aa_run_passes_and_says_where_the_time_went() {
    let s = Sim::new();
    let (a, b) = (s.kernels("a", "factor=1.0"), s.kernels("b", "factor=1.0"));
    let out = s.local(&a, &b).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_text(&out.stderr));
    let r = s.results();
    assert!(
        verdicts(&r)
            .iter()
            .all(|v| v == "pass" || v == "no-baseline"),
        "{r}"
    );
    assert_eq!(r["environment"]["gpu_name"], "Simulated GPU");
    // Random shapes were checked, every timed launch was, and the time is accounted for.
    assert_eq!(r["probes"].as_array().unwrap().len(), 6);
    assert!(
        r["shapes"][0]["measurement"]["checked_launches"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(r["timing"]["total_s"].as_f64().unwrap() >= 0.0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PASS"), "{text}");
    // The PR comment's details say where the time went.
    let md = s
        .local(&a, &b)
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("<details><summary>Where the time went: ")
            && md.contains("| measuring both sides (checks included) | "),
        "{md}"
    );
}

/// `[8 rounds × 10 samples]` for the samples of a results file in a snapshot: their numbers
/// are in the summaries and comparisons beside them.
fn rounds_of_samples(value: &Value) -> Value {
    let rounds = value.as_array().map_or(&[][..], Vec::as_slice);
    let mut sizes: Vec<usize> = rounds
        .iter()
        .map(|r| r.as_array().map_or(0, Vec::len))
        .collect();
    sizes.dedup();
    match sizes[..] {
        [n] => format!("[{} rounds × {n} samples]", rounds.len()),
        _ => format!("[{} rounds of {sizes:?} samples]", rounds.len()),
    }
    .into()
}

/// The results file (`--out`) of an A/B run, whole: its keys, the verdicts, the statistics,
/// the probes and the warnings. Redacted: what differs from run to run (when it was
/// written, the phases' wall times), from build to build (the tool's version and the
/// method's fingerprint) and from
/// place to place (the commit of the working directory); paths are relative to the run's
/// directory. The samples are summarised by their shape.
#[test]
fn the_results_file_of_an_ab_run() {
    let s = Sim::new();
    s.kernels("a", "factor=1.0");
    s.kernels("b", "factor=1.05");
    let out = bin()
        .env("CI_GATE_SIMULATE", "1")
        .env_remove("GITHUB_SHA")
        .current_dir(s.dir.path())
        .args(["local", "--config", "sim.yaml", "--baselines", "baselines"])
        .args([
            "--base-kernels",
            "a",
            "--kernels",
            "b",
            "--no-peers",
            "--no-profile",
        ])
        .args(["--out", "results.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_text(&out.stderr));
    // Redacted by hand (insta's redactions would bring a parser generator into the build).
    let mut v = rounded(s.results());
    v["created_at"] = "[created_at]".into();
    v["tool_version"] = "[tool_version]".into();
    v["git_commit"] = "[git_commit]".into();
    // The method's fingerprint follows the harness kernels' text (src/method.rs).
    v["method"]["fingerprint"] = "[fingerprint]".into();
    // The values, not the keys.
    for t in v["timing"].as_object_mut().unwrap().values_mut() {
        if t.as_f64().is_some() {
            *t = "[seconds]".into();
        }
        for s in t.as_object_mut().into_iter().flat_map(|o| o.values_mut()) {
            *s = "[seconds]".into();
        }
    }
    for shape in v["shapes"].as_array_mut().unwrap() {
        for key in ["samples_us", "base_samples_us"] {
            shape[key] = rounds_of_samples(&shape[key]);
        }
    }
    insta::assert_json_snapshot!("results_file", v);
}

#[test]
fn a_slowdown_is_a_regression_and_its_mirror_an_improvement() {
    let s = Sim::new();
    let (a, b) = (s.kernels("a", "factor=1.0"), s.kernels("b", "factor=1.05"));
    let out = s.local(&a, &b).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_text(&out.stderr));
    assert!(verdicts(&s.results()).iter().all(|v| v == "regression"));
    let out = s.local(&b, &a).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_text(&out.stderr));
    assert!(verdicts(&s.results()).iter().all(|v| v == "improvement"));
}

#[test]
fn a_change_near_the_margin_takes_the_second_stage() {
    let s = Sim::new();
    let (a, b) = (s.kernels("a", "factor=1.0"), s.kernels("b", "factor=1.02"));
    s.local(&a, &b).output().unwrap();
    let r = s.results();
    let rounds: Vec<u64> = r["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["measurement"]["rounds"].as_u64().unwrap())
        .collect();
    // Exactly at the margin the first look cannot exclude a regression: all 24 pairs.
    assert!(rounds.contains(&24), "{rounds:?}");
    assert!(rounds.iter().all(|&n| n == 8 || n == 24), "{rounds:?}");
    assert!(
        verdicts(&r).iter().all(|v| v != "improvement"),
        "{:?}",
        verdicts(&r)
    );
}

#[test]
fn faults_of_the_kernel_end_in_parity_fail_error_or_exit_2() {
    let s = Sim::new();
    let a = s.kernels("a", "factor=1.0");
    // A parity loss on the causal shapes only.
    let b = s.kernels("parity", "parity-fail=causal");
    assert_eq!(s.local(&a, &b).output().unwrap().status.code(), Some(1));
    let v = verdicts(&s.results());
    assert_eq!(v, ["pass", "parity-fail", "parity-fail"], "{v:?}");
    // Timed launches that skip work: an integrity failure naming the side.
    let b = s.kernels("skip", "skip=*");
    assert_eq!(s.local(&a, &b).output().unwrap().status.code(), Some(1));
    let r = s.results();
    assert!(verdicts(&r).iter().all(|v| v == "parity-fail"));
    assert!(
        r["shapes"][0]["integrity"]
            .as_str()
            .unwrap()
            .contains("the candidate kernel skipped work"),
        "{r}"
    );
    // A CUDA error on the d128 shapes: the random d128 shape meets it first, so the d128
    // shape fails (parity-fail, quoting the error); the others are still measured.
    let b = s.kernels("error", "error=d128");
    assert_eq!(s.local(&a, &b).output().unwrap().status.code(), Some(1));
    let r = s.results();
    assert_eq!(verdicts(&r), ["pass", "pass", "parity-fail"]);
    assert!(
        r["shapes"][2]["integrity"]
            .as_str()
            .unwrap()
            .contains("CUDA_ERROR"),
        "{r}"
    );
    // Four times faster than the base: refused as unproven.
    let b = s.kernels("fast", "factor=0.25");
    assert_eq!(s.local(&a, &b).output().unwrap().status.code(), Some(1));
    let r = s.results();
    assert!(verdicts(&r).iter().all(|v| v == "error"), "{r}");
    assert!(
        r["shapes"][0]["error"]
            .as_str()
            .unwrap()
            .contains("gate.max_speedup"),
        "{r}"
    );
    // 40% of every sample taken out of the candidate's event records (its start moved later:
    // a forged improvement) while the host's clock saw the whole sample: no time of it is
    // believed, and the results say what each side's samples left unwitnessed.
    let b = s.kernels("forge", "forge=*");
    assert_eq!(s.local(&a, &b).output().unwrap().status.code(), Some(1));
    let r = s.results();
    assert!(verdicts(&r).iter().all(|v| v == "error"), "{r}");
    for shape in r["shapes"].as_array().unwrap() {
        let why = shape["error"].as_str().unwrap();
        assert!(
            why.starts_with("the host's clock saw")
                && why.contains(
                    "more of the candidate's timed samples than their events did, beyond the base's"
                ),
            "{why}"
        );
        let u = &shape["measurement"]["unwitnessed"];
        let (cand, base) = (
            u["candidate_us"].as_f64().unwrap(),
            u["base_us"].as_f64().unwrap(),
        );
        assert!(
            base < 60.0 && cand - base > u["limit_us"].as_f64().unwrap(),
            "{u}"
        );
    }
}

/// Two ways to keep a forgery out of medians over all samples: take the time out of the
/// record in one round of three only (the gate's estimate, a trimmed mean over pairs of
/// rounds, still moves: here it hides a 5% slowdown), or hide it from the lead-in test with
/// an end event signalled early (the host then waits for the checks instead). Both are
/// errors where the witness's limit is not its floor (below).
#[test]
fn a_forgery_in_some_rounds_or_hidden_by_an_early_end_is_an_error() {
    let s = Sim::new();
    let a = s.kernels("a", "factor=1.0");
    // The simulated samples are 100 launches, far shorter than the 2 ms a GPU's are: only
    // the d128 shape's (11 ms) are long enough that the limit is its share (0.5%), not its
    // floor (10 µs, 3–5% of the others'), so only it is asserted on.
    let d128 = |r: &Value| {
        r["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "b2h16s2048d128_causal_bf16")
            .cloned()
            .unwrap()
    };
    let slow = s.kernels("slow", "factor=1.05");
    s.local(&a, &slow).output().unwrap();
    assert_eq!(d128(&s.results())["verdict"], "regression");
    let hidden = s.kernels(
        "hidden",
        "factor=1.05 forge=* forge-rounds=3 forge-share=0.15",
    );
    assert_eq!(
        s.local(&a, &hidden).output().unwrap().status.code(),
        Some(1)
    );
    let shape = d128(&s.results());
    assert_eq!(shape["verdict"], "error", "{shape}");
    let why = shape["error"].as_str().unwrap();
    assert!(
        why.starts_with("the host's clock saw")
            && why.contains("a 20%-trimmed mean, over ")
            && why.contains("more of the candidate's timed samples"),
        "{why}"
    );
    let u = &shape["measurement"]["unwitnessed"];
    let num = |k: &str| u[k].as_f64().unwrap();
    // The medians over all samples are a few µs apart: two rounds in three are honest.
    assert!(
        num("candidate_us") - num("base_us") < num("limit_us"),
        "{u}"
    );
    assert!(num("shift_us") > num("limit_us"), "{u}");

    let early = s.kernels("early", "forge=* forge-early=1");
    assert_eq!(s.local(&a, &early).output().unwrap().status.code(), Some(1));
    let r = s.results();
    assert!(verdicts(&r).iter().all(|v| v == "error"), "{r}");
    for shape in r["shapes"].as_array().unwrap() {
        let why = shape["error"].as_str().unwrap();
        assert!(
            why.starts_with("from the lead-in to the end of the checks, the host's clock saw"),
            "{why}"
        );
        let u = &shape["measurement"]["unwitnessed"];
        let num = |k: &str| u[k].as_f64().unwrap();
        assert!(num("shift_us").abs() < num("limit_us"), "{u}");
        assert!(
            num("through_checks_shift_us") > 2.0 * num("limit_us"),
            "{u}"
        );
    }

    // The witness switched off: the slowdown forged in one round of three passes.
    std::fs::write(
        s.path("sim.yaml"),
        CONFIG.replace("seed: 7}", "seed: 7, witness: false}"),
    )
    .unwrap();
    s.local(&a, &hidden).output().unwrap();
    let shape = d128(&s.results());
    assert_eq!(shape["verdict"], "pass", "{shape}");
}

#[test]
fn a_run_without_a_base_judges_the_witness_against_the_control() {
    let s = Sim::new();
    let (a, a2) = (s.kernels("a", "factor=1.0"), s.kernels("a2", "factor=1.0"));
    let out = s.local(&a, &a2).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_text(&out.stderr));
    s.record_last_run("witness");
    let alone = |k: &Path| {
        let out = s
            .stored_only(k)
            .arg("--out")
            .arg(s.path("results.json"))
            .output()
            .unwrap();
        (out.status.code(), s.results())
    };
    // Honest, alone: the stored baseline decides; the control's unwitnessed time is recorded
    // beside the candidate's, and they agree.
    let (code, r) = alone(&a);
    assert_eq!(code, Some(0), "{r}");
    for shape in r["shapes"].as_array().unwrap() {
        let u = &shape["measurement"]["unwitnessed"];
        assert_eq!(
            (u["control_us"].as_f64(), u["base_us"].as_f64()),
            (Some(57.0), None),
            "{u}"
        );
        // And through the checks: the control's span through its work after the end event,
        // the candidate's through its checks, and their shift (what confirms the first test).
        assert_eq!(
            (
                u["control_through_checks_us"].as_f64(),
                u["candidate_through_checks_us"].as_f64(),
                u["through_checks_shift_us"].as_f64(),
            ),
            (Some(61.0), Some(61.0), Some(0.0)),
            "{u}"
        );
    }
    // The harness's own unwitnessed time moving over the run (3 µs more a round, ~70 µs by
    // the last round): each round is judged against the control taken right after it, so
    // an honest kernel passes, where a control taken once before the shapes made every
    // shape an error; a forgery on top of the move is still found.
    let (code, r) = alone(&s.kernels("drift", "factor=1.0 witness-drift=3"));
    assert_eq!(code, Some(0), "{r}");
    assert!(verdicts(&r).iter().all(|v| v == "pass"), "{r}");
    let (code, r) = alone(&s.kernels("drift-forge", "forge=* witness-drift=3"));
    assert_eq!(code, Some(1), "{r}");
    assert!(verdicts(&r).iter().all(|v| v == "error"), "{r}");
    // What was judged is said: alone the time through the checks confirms the first test
    // and is not judged alone.
    let alone_note = "measured without a base: the host's clock judged each against the harness's own spin up to the end event, confirmed through the end of the checks; the time through the checks was not judged alone";
    let notes = r["notes"].to_string();
    assert!(
        notes.contains(&format!("3 shape(s) {alone_note}")),
        "{notes}"
    );
    // And the note is true: a forgery hidden by an early end, which an A/B's test through the
    // checks finds (`a_forgery_in_some_rounds_or_hidden_by_an_early_end_is_an_error`), is not
    // caught alone (the stored baseline reads it as the improvement it forged).
    let (code, r) = alone(&s.kernels("early", "forge=* forge-early=1"));
    assert_eq!(code, Some(0), "{r}");
    assert!(verdicts(&r).iter().all(|v| v == "improvement"), "{r}");
    assert!(r["notes"].to_string().contains(alone_note), "{r}");
    // 40% of every sample taken out of the record, alone: an improvement against the
    // stored baseline but for the control, so every shape is an error.
    let (code, r) = alone(&s.kernels("forge", "forge=*"));
    assert_eq!(code, Some(1), "{r}");
    assert!(verdicts(&r).iter().all(|v| v == "error"), "{r}");
    let why = r["shapes"][0]["error"].as_str().unwrap();
    assert!(
        why.contains("more of the candidate's timed samples than their events did, against the harness's own spin"),
        "{why}"
    );
}

/// `gate.witness: false`, the maintainers' switch: the witness is recorded, not judged, and
/// a note says so; the discrepancy is still in the results for anyone to read.
#[test]
fn the_witness_switched_off_is_recorded_and_says_so() {
    let s = Sim::new();
    std::fs::write(
        s.path("sim.yaml"),
        CONFIG.replace("seed: 7}", "seed: 7, witness: false}"),
    )
    .unwrap();
    let (a, f) = (s.kernels("a", "factor=1.0"), s.kernels("forge", "forge=*"));
    let out = s.local(&a, &f).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_text(&out.stderr));
    let r = s.results();
    assert_eq!(r["gate"]["witness"], false, "{r}");
    assert!(
        r["notes"].to_string().contains(
            "the host's clock as the witness of the samples is recorded, not judged: the config sets gate.witness: false"
        ),
        "{r}"
    );
    for shape in r["shapes"].as_array().unwrap() {
        assert!(shape["error"].is_null(), "{shape}");
        let u = &shape["measurement"]["unwitnessed"];
        let (c, b) = (
            u["candidate_us"].as_f64().unwrap(),
            u["base_us"].as_f64().unwrap(),
        );
        assert!(c - b > u["limit_us"].as_f64().unwrap(), "{u}");
    }
}

#[test]
fn a_hung_kernel_ends_the_run_with_exit_2_and_a_results_file_naming_it() {
    let s = Sim::new();
    let a = s.kernels("a", "factor=1.0");
    let b = s.kernels("hang", "hang=causal");
    let out = s.local(&a, &b).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = stderr_text(&out.stderr);
    assert!(stderr.contains("did not finish within 15 s"), "{stderr}");
    // It hangs on the first causal shape it is launched on: a random parity shape, before
    // anything is timed.
    let r = s.results();
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("of the candidate on shape b") && error.contains("_causal_f16"),
        "{error}"
    );
    assert_eq!(r["passed"], false);
}

#[test]
fn a_kernel_that_is_slow_but_finishes_ends_the_run_when_the_gpu_budget_is_spent() {
    let s = Sim::new();
    let a = s.kernels("a", "factor=1.0");
    // About 0.1 s a launch: its first round alone is far past the config's automatic budget
    // (3 shapes: 4 × 2.9 s planned + 30 s).
    let b = s.kernels("slow", "factor=20000");
    let out = s.local(&a, &b).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = stderr_text(&out.stderr);
    assert!(stderr.contains("measure.gpu_budget_s: 42 s"), "{stderr}");
    let r = s.results();
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("spent on shape b2h8s512d64_f16, by the candidate kernel")
            && error.contains("raise measure.gpu_budget_s if the time is real"),
        "{error}"
    );
    assert_eq!(r["passed"], false);
    assert!(r["shapes"].as_array().unwrap().is_empty());
}

/// In GitHub Actions the simulated GPU is refused (`sim::simulation_seed`): a simulated
/// kernel's times are what its own `ci-gate-sim` line says, so its verdict would be the pull
/// request's. `ci` still publishes: exit 2, a results file and outputs that say why, the
/// annotation after workflow commands resumed. (The simulated verdicts and hangs published
/// in Actions that this test used to show are reached on a GPU only; outside Actions they are
/// the tests above, and `merge --ci` publishes a verdict in Actions in
/// `cli_simulation_refused.rs`.)
#[test]
fn ci_in_actions_refuses_the_simulated_gpu_and_publishes_why() {
    let s = Sim::new();
    let (a, b) = (s.kernels("a", "factor=1.0"), s.kernels("b", "factor=0.80"));
    let (outputs, summary) = (s.path("outputs"), s.path("summary.md"));
    let out = bin()
        .env("CI_GATE_SIMULATE", "1")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .current_dir(s.dir.path())
        .arg("ci")
        .arg("--config")
        .arg(s.path("sim.yaml"))
        .arg("--baselines")
        .arg(s.path("baselines"))
        .arg("--base-kernels")
        .arg(&a)
        .arg("--kernels")
        .arg(&b)
        .args(["--no-peers", "--out"])
        .arg(s.path("results.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = stderr_text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    let why = "CI_GATE_SIMULATE is set in GitHub Actions (GITHUB_ACTIONS is set), but the simulated GPU is a test device whose times the kernels' own `ci-gate-sim` lines decide, never a verdict on a runner: unset CI_GATE_SIMULATE";
    assert!(stderr.contains(why), "{stderr}");
    let annotation = stdout
        .find("::error title=ci-gate%3A no verdict::")
        .expect("annotated");
    if let Some(token) = stdout
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("::stop-commands::"))
    {
        let resumed = stdout.find(&format!("::{token}::")).expect("resumed");
        assert!(resumed < annotation, "{stdout}");
    }
    assert!(
        stdout[annotation..].contains("unset CI_GATE_SIMULATE"),
        "{stdout}"
    );
    let r = s.results();
    assert!(r["error"].as_str().unwrap().contains(why), "{r}");
    assert_eq!(r["passed"], false);
    assert!(r["shapes"].as_array().is_none_or(|s| s.is_empty()), "{r}");
    let outputs = std::fs::read_to_string(&outputs).unwrap();
    assert!(outputs.contains("\nerror\n"), "{outputs}");
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(summary.contains("could not reach a verdict"), "{summary}");
}

/// A git repository with one commit of kernels, for a stored baseline whose commit exists.
fn repo_with_kernels(s: &Sim, directive: &str) -> PathBuf {
    let repo = s.path("repo");
    std::fs::create_dir_all(repo.join("kernels")).unwrap();
    std::fs::write(
        repo.join("kernels/attention.cu"),
        format!("// ci-gate-sim: {directive}\n"),
    )
    .unwrap();
    // The harness travels with the kernels (a base is built from all three files).
    for f in ["reference.cu", "util.cu"] {
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("kernels")
                .join(f),
            repo.join("kernels").join(f),
        )
        .unwrap();
    }
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .current_dir(&repo)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(ok.status.success(), "{}", stderr_text(&ok.stderr));
        String::from_utf8_lossy(&ok.stdout).trim().to_owned()
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "kernels"]);
    repo
}

/// `ci-gate local` in `repo` on its kernels, against the baselines in `s`, as simulation
/// `seed` (each seed its own process shift), without GitHub's environment.
fn local_in_repo(s: &Sim, repo: &Path, args: &[&str], seed: &str) -> std::process::Output {
    bin()
        .env("CI_GATE_SIMULATE", seed)
        .env_remove("GITHUB_SHA")
        .current_dir(repo)
        .arg("local")
        .arg("--config")
        .arg(s.path("sim.yaml"))
        .arg("--baselines")
        .arg(s.path("baselines"))
        .arg("--kernels")
        .arg(repo.join("kernels"))
        .args(["--no-peers", "--no-profile", "--out"])
        .arg(s.path("results.json"))
        .args(args)
        .output()
        .unwrap()
}

/// Records the baseline of `repo`'s working-tree kernels from five processes (five
/// simulation seeds, each its own process shift), so that its spread is known.
fn record_baseline_in_repo(s: &Sim, repo: &Path, reason: &str) {
    let mut rec = bin();
    rec.current_dir(repo)
        .args(["baseline", "update", "--reason", reason, "--config"])
        .arg(s.path("sim.yaml"))
        .arg("--baselines")
        .arg(s.path("baselines"));
    for p in 1..=5 {
        let out = local_in_repo(s, repo, &["--no-base", "--no-compare"], &p.to_string());
        assert_eq!(out.status.code(), Some(0), "{}", stderr_text(&out.stderr));
        let f = s.path(&format!("process{p}.json"));
        std::fs::copy(s.path("results.json"), &f).unwrap();
        rec.arg("--from").arg(f);
    }
    let rec = rec.output().unwrap();
    assert!(rec.status.success(), "{}", stderr_text(&rec.stderr));
}

/// The working tree's kernels become `directive`; the run compares them A/B with an
/// identical copy (nothing to see) and with the stored baseline (the drift), failing on it.
fn creep_to(s: &Sim, repo: &Path, directive: &str) -> (Option<i32>, Value) {
    std::fs::write(
        repo.join("kernels/attention.cu"),
        format!("// ci-gate-sim: {directive}\n"),
    )
    .unwrap();
    let same = s.kernels("same", directive);
    let out = local_in_repo(
        s,
        repo,
        &[
            "--base-kernels",
            same.to_str().unwrap(),
            "--ab-always",
            "--fail-on-drift",
        ],
        "6",
    );
    (out.status.code(), s.results())
}

#[test]
fn a_drift_is_traced_to_the_code_with_the_baseline_commits_kernels() {
    let s = Sim::new();
    let repo = repo_with_kernels(&s, "factor=1.0");
    record_baseline_in_repo(&s, &repo, "first");
    // The working tree creeps 5% slower; A/B against an identical copy shows nothing, the
    // stored baseline shows the creep, and the baseline commit's kernels say who moved.
    let (code, r) = creep_to(&s, &repo, "factor=1.05");
    assert_eq!(code, Some(1), "{r}");
    for shape in r["shapes"].as_array().unwrap() {
        assert_eq!(shape["verdict"], "drift", "{shape}");
        assert_eq!(shape["drift"]["cause"], "code", "{shape}");
    }
}

/// A baseline recorded from uncommitted kernels names a commit whose kernels it never
/// measured: a drift is then not traced against that commit's kernels (they would say
/// nothing about the baseline), and the report says why, naming both hashes.
#[test]
fn a_drift_is_not_traced_to_a_commit_whose_kernels_the_baseline_did_not_measure() {
    let s = Sim::new();
    let repo = repo_with_kernels(&s, "factor=1.0");
    // Recorded from a working tree whose kernels differ from the commit's (uncommitted).
    std::fs::write(
        repo.join("kernels/attention.cu"),
        "// ci-gate-sim: factor=0.9\n",
    )
    .unwrap();
    record_baseline_in_repo(&s, &repo, "dirty");
    // The working tree then creeps 5% slower than what the baseline measured.
    let (code, r) = creep_to(&s, &repo, "factor=0.945");
    assert_eq!(code, Some(1), "{r}");
    for shape in r["shapes"].as_array().unwrap() {
        assert_eq!(shape["verdict"], "drift", "{shape}");
        assert!(shape["drift"].is_null(), "traced all the same: {shape}");
    }
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("the drift was not traced")
            && notes.contains("other than the one the baseline measured")
            && notes.contains("uncommitted kernels"),
        "{notes}"
    );
}

/// The selftest through its child processes (each a `run-request` with its own simulated
/// process shift): A/A stays quiet, a 3% slowdown is caught, the injected slowdown too, and
/// a baseline recorded from fresh processes passes fresh processes compared with it alone.
#[test]
fn selftest_runs_its_trials_in_fresh_processes_and_calibrates() {
    let s = Sim::new();
    let k = s.kernels("k", "factor=1.0");
    let out = bin()
        .env("CI_GATE_SIMULATE", "3")
        .current_dir(s.dir.path())
        .arg("selftest")
        .arg("--config")
        .arg(s.path("sim.yaml"))
        .arg("--kernels")
        .arg(&k)
        .args(["--trials", "4", "--stored-trials", "2", "--format", "json"])
        .args(["--scale", "1.03", "--out"])
        .arg(s.path("selftest.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_text(&out.stderr));
    let r: Value =
        serde_json::from_slice(&std::fs::read(s.path("selftest.json")).unwrap()).unwrap();
    assert_eq!(r["gpu"], "Simulated GPU", "{r}");
    let conditions = r["conditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 2, "{r}");
    assert_eq!(
        (
            conditions[0]["scale"].as_f64(),
            conditions[0]["flagged"].as_u64()
        ),
        (Some(1.0), Some(0)),
        "{r}"
    );
    assert_eq!(conditions[0]["comparisons"], 12, "{r}");
    assert_eq!(
        conditions[1]["flagged"], 12,
        "a 3% slowdown is caught in every trial: {r}"
    );
    assert_eq!(r["injected"]["caught"], 3, "{r}");
    assert_eq!(r["stored_false_alarms"], 0, "{r}");
    // The A/A trials calibrate the witness: every shape witnessed, none judged, and the
    // largest shift against its limit (the simulated host's lead-in is the same on both
    // sides: 0 µs).
    let w = &r["witness"];
    assert_eq!(
        (w["witnessed"].as_u64(), w["judged"].as_u64()),
        (Some(12), Some(0)),
        "{r}"
    );
    for largest in [&w["largest"], &w["largest_through_checks"]] {
        assert_eq!(largest["share_of_limit"], 0.0, "{r}");
        assert!(largest["limit_us"].as_f64().unwrap() >= 10.0, "{r}");
    }
    // Every trial was its own measuring process.
    let stderr = stderr_text(&out.stderr);
    assert_eq!(stderr.matches("A/A pairs").count(), 4, "{stderr}");
}

/// `--devices`: one `run-request` child per device, each a shard, merged into one verdict.
#[test]
fn devices_fan_out_one_shard_per_device_and_merge() {
    let s = Sim::new();
    let (a, b) = (s.kernels("a", "factor=1.0"), s.kernels("b", "factor=1.05"));
    let out = s.local(&a, &b).args(["--devices", "0,1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_text(&out.stderr));
    let r = s.results();
    assert_eq!(verdicts(&r), ["regression"; 3], "{r}");
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("measured on devices 0, 1 at once"),
        "{notes}"
    );
    assert!(r["shard"].is_null(), "the merged run is whole: {r}");
}

#[test]
fn a_pair_the_clock_hit_on_one_side_is_measured_again_within_its_budget() {
    // The candidate's kernel sees the SM clock move (and runs 5% slow) in a quarter of its
    // rounds; the base never does. The rule fixed in advance measures such a pair again, at
    // most a quarter of the design's pairs (24 / 4 = 6) per shape, and records each one.
    let s = Sim::new();
    let (a, b) = (
        s.kernels("a", "factor=1.0"),
        s.kernels("b", "factor=1.0 clock=*"),
    );
    let out = s.local(&a, &b).output().unwrap();
    let stderr = stderr_text(&out.stderr);
    let r = s.results();
    let mut remeasured = 0;
    for shape in r["shapes"].as_array().unwrap() {
        let name = shape["name"].as_str().unwrap();
        let pairs = shape["remeasured"].as_array().unwrap();
        assert!(
            pairs.len() <= 6,
            "{name}: {} pairs re-measured",
            pairs.len()
        );
        for p in pairs {
            assert_eq!(p["base_clock_events"], 0, "{name}: {p}");
            assert_eq!(p["cand_clock_events"], 5, "{name}: {p}");
        }
        // Every pair that was kept is balanced, unless the budget ran out first.
        let cand = shape["clock_events"][1].as_array().unwrap();
        let kept_clocked = cand.iter().filter(|e| e.as_u64() != Some(0)).count();
        if pairs.len() < 6 {
            assert_eq!(kept_clocked, 0, "{name}: {shape}");
        }
        remeasured += pairs.len();
    }
    assert!(remeasured > 0, "no pair was measured again: {r}");
    // The report says what was measured again and why (notes wrap at the terminal's width).
    let text = String::from_utf8_lossy(&out.stdout);
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words(&text).contains(
            "pair(s) measured again because the SM clock moved across more samples of one side (0 base vs 5 candidate"
        ),
        "{text}\n{stderr}"
    );
    // A/A with the throttled rounds measured again: nothing is flagged.
    assert_ne!(out.status.code(), Some(1), "{text}");
}

/// Energy per call (src/energy.rs) through the binary: each side's millijoules per call
/// from its windows, the candidate over the base, a figure withheld with its reason where the
/// simulated counter cannot resolve a shape, in the table, the Markdown and the JSON; and
/// never a part of the verdict (the same verdicts with energy switched off).
#[test]
fn energy_per_call_is_reported_per_side_withheld_where_unresolved_and_never_decides() {
    let s = Sim::new();
    let a = s.kernels("a", "factor=1.0");
    let b = s.kernels("b", "factor=1.05 power=1.2 energy-coarse=s2048");
    let out = s.local(&a, &b).arg("--energy").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_text(&out.stderr));
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    let r = s.results();
    let with_energy = verdicts(&r);
    assert!(
        r["energy"]["rounds"] == 3 && r["energy"]["updates"] == 3,
        "{}",
        r["energy"]
    );
    // 400 W × 1.2 for 1.05× the time: 1.26× the base's energy per call, within the noise.
    let e = &r["shapes"][0]["energy"];
    let mean = |side: &str| e[side]["mj_per_call"]["mean"].as_f64().unwrap();
    let ratio = mean("candidate") / mean("base");
    assert!((ratio / 1.26 - 1.0).abs() < 0.03, "ratio {ratio}");
    assert_eq!(e["candidate"]["rounds"].as_array().unwrap().len(), 3);
    let lo = e["candidate"]["mj_per_call"]["lo"].as_f64().unwrap();
    let hi = e["candidate"]["mj_per_call"]["hi"].as_f64().unwrap();
    assert!(lo < mean("candidate") && mean("candidate") < hi);
    // The d128 shape's candidate windows are too coarse: no figure, and why.
    let coarse = &r["shapes"][2]["energy"]["candidate"];
    assert!(coarse["mj_per_call"].is_null(), "{coarse}");
    let why = coarse["withheld"].as_str().unwrap();
    assert!(
        why.contains("0 of 3 windows usable") && why.contains("resolves"),
        "{why}"
    );
    assert!(table.contains("Energy per call"), "{table}");
    assert!(table.contains("n/a ¹"), "{table}");
    assert!(
        table.contains("¹ b2h16s2048d128_causal_bf16 (candidate): 0 of 3 windows usable"),
        "{table}"
    );
    let md = s
        .local(&a, &b)
        .args(["--energy", "--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout).to_string();
    assert!(md.contains("<details><summary>Energy per call"), "{md}");
    assert!(
        md.contains("| Shape | base mJ/call | cand mJ/call | cand/base | TFLOP/s/W |"),
        "{md}"
    );

    let json = s
        .local(&a, &b)
        .args(["--energy", "--format", "json"])
        .output()
        .unwrap();
    let rows: Value = serde_json::from_slice(&json.stdout).unwrap();
    let r0 = rows[0]["energy"]["cand_over_base"].as_f64().unwrap();
    assert!((r0 / 1.26 - 1.0).abs() < 0.03, "{}", rows[0]["energy"]);
    assert!(rows[2]["energy"]["candidate"]["mj_per_call"].is_null());
    assert!(
        rows[2]["energy"]["candidate"]["withheld"]
            .as_str()
            .unwrap()
            .contains("windows usable"),
        "{}",
        rows[2]["energy"]
    );

    // Not asked for (a pull request's run): no windows, no table, the same verdicts.
    let out = s.local(&a, &b).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r = s.results();
    assert!(r.get("energy").is_none() && r["shapes"][0].get("energy").is_none());
    assert_eq!(verdicts(&r), with_energy);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Energy per call"));

    // Off in the config (energy_rounds: 0): asked for, still none.
    std::fs::write(
        s.path("sim.yaml"),
        CONFIG.replace("max_rounds: 24}", "max_rounds: 24, energy_rounds: 0}"),
    )
    .unwrap();
    let out = s.local(&a, &b).arg("--energy").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_text(&out.stderr));
    let r = s.results();
    assert!(r.get("energy").is_none() && r["shapes"][0].get("energy").is_none());
    assert_eq!(verdicts(&r), with_energy);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Energy per call"));
}

/// Issue 23: the kernels whose compiler resources moved get a row in the terminal table and
/// the PR comment, and the results file holds both sides' figures; identical kernels get
/// one line and no row. Without a base, the candidate is compared with the stored baseline's.
#[test]
fn compiler_resources_that_moved_are_shown_and_identical_ones_are_not() {
    let s = Sim::new();
    let a = s.kernels("a", "factor=1.0");
    let same = s.kernels("same", "factor=1.0");
    let b = s.kernels("b", "factor=1.0 regs=168 spill=64");
    // A table row of the kernel whose registers went from 128 to 168 (cells are padded).
    let has_row = |table: &str| {
        table
            .lines()
            .any(|l| l.contains("attention_fwd_f16_d64 ") && l.contains("┆ 128 → 168 ┆"))
    };

    let out = s.local(&a, &b).env("COLUMNS", "200").output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{table}");
    assert!(
        table.contains("Compiler resources (vs base: before → after):"),
        "{table}"
    );
    assert!(has_row(&table), "{table}");
    assert!(table.contains("0/0 → 64/64"), "{table}");
    let r = s.results();
    let figures: Vec<(String, String, u64)> = r["kernel_resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["side"].as_str().unwrap().to_owned(),
                k["kernel"].as_str().unwrap().to_owned(),
                k["registers"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(figures.contains(&("base".into(), "attention_fwd_f16_d64".into(), 128)));
    assert!(figures.contains(&("candidate".into(), "attention_fwd_bf16_d128".into(), 168)));

    let out = s
        .local(&a, &b)
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("**Compiler resources** (vs base: before → after)"),
        "{md}"
    );
    assert!(
        md.contains("| attention_fwd_f16_d64 | 128 → 168 | 0/0 → 64/64 | 0 → 64 |"),
        "{md}"
    );

    let out = s.local(&a, &same).env("COLUMNS", "200").output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("Compiler resources: unchanged vs base (2 kernels)."),
        "{table}"
    );
    assert!(!table.contains("→"), "{table}");
    let out = s
        .local(&a, &same)
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(!md.contains("**Compiler resources**"), "{md}");

    // Recorded with the candidate's figures (128 registers: the last run's); a run without a
    // base compares with them.
    s.record_last_run("resources");
    let shown = bin()
        .args(["baseline", "show", "--baselines"])
        .arg(s.path("baselines"))
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("Compiler resources recorded:"), "{shown}");
    assert!(
        shown.lines().any(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            cells.first() == Some(&"attention_fwd_f16_d64") && cells.get(1) == Some(&"128")
        }),
        "{shown}"
    );
    let out = s.stored_only(&b).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("Compiler resources (vs stored baseline: before → after):"),
        "{}{table}",
        stderr_text(&out.stderr)
    );
    assert!(has_row(&table), "{table}");
}

/// Each shape's launch (the entry and its grid) is in the results, base and candidate, and
/// `baseline update` stores the candidate's; a run compared with the stored baseline says
/// where the same shape now launches otherwise (here the kernel's rows per CTA changed: a
/// warning where the stored comparison decides the verdict), and nothing where it launches
/// as stored. `compare` of two results files says the same.
#[test]
fn a_shape_launched_otherwise_than_the_stored_run_is_named() {
    let s = Sim::new();
    let a = s.kernels("a", "factor=1.0");
    let half = s.kernels("half", "factor=1.0 rows=64");
    let out = s.local(&a, &a).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_text(&out.stderr));
    let r = s.results();
    let d64 = &r["shapes"][0];
    assert_eq!(d64["name"], "b2h8s512d64_f16");
    for side in ["launch", "base_launch"] {
        assert_eq!(d64[side]["kernel"], "attention_fwd_f16_d64", "{d64:#}");
        assert_eq!(d64[side]["grid"], serde_json::json!([4, 16, 1]), "{d64:#}");
    }
    std::fs::copy(s.path("results.json"), s.path("before.json")).unwrap();
    s.record_last_run("launches");
    let stored: Value =
        serde_json::from_slice(&std::fs::read(s.path("baselines/simulated-gpu/sim.json")).unwrap())
            .unwrap();
    assert_eq!(
        stored["shapes"][0]["launch"]["grid"],
        serde_json::json!([4, 16, 1])
    );

    let run_stored = |kernels: &Path| {
        s.stored_only(kernels)
            .arg("--out")
            .arg(s.path("results.json"))
            .output()
            .unwrap()
    };
    let expected = "b2h8s512d64_f16: launched as attention_fwd_f16_d64 with grid 8 × 16 where the stored run launched attention_fwd_f16_d64 with grid 4 × 16: the comparison with it times the launch as well as the code";
    let out = run_stored(&half);
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_text(&out.stderr));
    assert!(
        table.contains(
            "warning: b2h8s512d64_f16: launched as attention_fwd_f16_d64 with grid 8 × 16"
        ),
        "{table}"
    );
    let r = s.results();
    let warnings: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(warnings.contains(&expected), "{warnings:?}");
    assert_eq!(
        r["shapes"][0]["stored_launch"]["grid"],
        serde_json::json!([4, 16, 1])
    );
    assert_eq!(
        r["shapes"][0]["launch"]["grid"],
        serde_json::json!([8, 16, 1])
    );
    // the d128 shape: 2048 rows make 16 CTAs of 128 rows and 32 of 64
    assert!(
        warnings.iter().any(|w| w.starts_with(
            "b2h16s2048d128_causal_bf16: launched as attention_fwd_bf16_d128 with grid 32 × 32"
        )),
        "{warnings:?}"
    );

    let out = run_stored(&a);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(!table.contains("launched as"), "{table}");

    // compare: CAND (64 rows) against BASE (128), the same note as a warning
    std::fs::copy(s.path("results.json"), s.path("same.json")).unwrap();
    let out = run_stored(&half);
    assert!(out.status.code().is_some(), "{}", stderr_text(&out.stderr));
    let cmp = bin()
        .env("COLUMNS", "200")
        .args(["compare"])
        .arg(s.path("before.json"))
        .arg(s.path("results.json"))
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&cmp.stdout);
    assert!(
        shown.contains("b2h8s512d64_f16: launched as attention_fwd_f16_d64 with grid 8 × 16 where the stored run launched"),
        "{shown}{}",
        stderr_text(&cmp.stderr)
    );
    let cmp = bin()
        .env("COLUMNS", "200")
        .args(["compare"])
        .arg(s.path("before.json"))
        .arg(s.path("same.json"))
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&cmp.stdout).contains("launched as"));
}
