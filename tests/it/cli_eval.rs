//! `ci-gate eval` through the binary on the simulated GPU (`CI_GATE_SIMULATE`): the protocol
//! (one line per input line, every verdict), bad inputs (one line each, the evaluator goes
//! on, the exit status says whether a candidate errored), attacks followed by honest
//! candidates in one stream (each in a fresh measuring process: the next is measured as if
//! the attack never ran), the leaderboard under the seeds' rule with its confirmations,
//! `--devices`, the measuring process's deadline, and every line written checked against
//! `docs/eval-v1.schema.json` (python's jsonschema).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{bin, stderr};

const CONFIG: &str = "\
name: sim-eval
gate: {max_p50_regression: 0.02, alpha: 0.05, seed: 7}
parity:
  seed: 11
measure: {cache: hot, samples_per_round: 10, min_rounds: 6, max_rounds: 16, max_wait_s: 2}
eval: {min_speedup: 0.03, min_shapes: 2, timeout_s: 60}
shapes:
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: false, dtype: float16}
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: true, dtype: float16}
  - {batch: 2, heads: 16, seq_len: 2048, head_dim: 128, causal: true, dtype: bfloat16}
";

/// A directory with the config and a base kernel of factor 1.
struct Eval {
    dir: tempfile::TempDir,
}

/// A simulated kernel's source: a first line that makes it unique, then its directive.
fn sim(name: &str, directive: &str) -> String {
    format!("// {name}\n// ci-gate-sim: {directive}\n")
}

/// A candidate line with an inline source.
fn candidate(id: &str, directive: &str) -> String {
    json!({"id": id, "source": sim(id, directive)}).to_string()
}

struct Ran {
    code: Option<i32>,
    lines: Vec<Value>,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn by_id(&self, id: &str) -> &Value {
        self.lines
            .iter()
            .find(|l| l["id"] == id)
            .unwrap_or_else(|| panic!("no line for {id}: {}", self.stdout))
    }

    fn verdict(&self, id: &str) -> &str {
        self.by_id(id)["verdict"].as_str().unwrap()
    }
}

impl Eval {
    fn new() -> Eval {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("eval.yaml"), CONFIG).unwrap();
        std::fs::create_dir(dir.path().join("base")).unwrap();
        std::fs::write(
            dir.path().join("base/attention.cu"),
            sim("base", "factor=1.0"),
        )
        .unwrap();
        Eval { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn config(&self, text: &str) {
        std::fs::write(self.path("eval.yaml"), text).unwrap();
    }

    fn run(&self, input: &str, extra: &[&str]) -> Ran {
        let mut cmd = bin();
        cmd.env("CI_GATE_SIMULATE", "3")
            .current_dir(self.dir.path())
            .args(["eval", "--config", "eval.yaml"]);
        if !extra.contains(&"--base-kernels") {
            cmd.args(["--base-kernels", "base"]);
        }
        let out = cmd
            .args(extra)
            .write_stdin(input.to_owned())
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout.clone()).unwrap();
        let lines: Vec<Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        check_schema(&lines);
        Ran {
            code: out.status.code(),
            lines,
            stdout,
            stderr: stderr(&out),
        }
    }
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Checks every line against docs/eval-v1.schema.json with python's jsonschema, where
/// python3 has it (`.ci/run` installs it, and there the check must run:
/// CI_GATE_REQUIRE_PYTHON).
fn check_schema(lines: &[Value]) {
    let ok = Command::new("python3")
        .args(["-c", "import jsonschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI_GATE_REQUIRE_PYTHON").is_none(),
            "CI_GATE_REQUIRE_PYTHON is set and python3 on PATH cannot import jsonschema"
        );
        eprintln!("SKIPPED the schema check: no python3 with jsonschema here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lines.jsonl");
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&file, text.join("\n")).unwrap();
    let script = "\
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
bad = 0
for n, line in enumerate(open(sys.argv[2]), 1):
    for e in v.iter_errors(json.loads(line)):
        bad += 1
        print(f'line {n}: {e.json_path}: {e.message[:300]}')
sys.exit(1 if bad else 0)
";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(repo("docs/eval-v1.schema.json"))
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lines that do not follow docs/eval-v1.schema.json:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_verdict_comes_back_as_one_line_with_its_figures() {
    let e = Eval::new();
    let input = [
        candidate("same", "factor=1.0"),
        candidate("fast", "factor=0.9"),
        candidate("slow", "factor=1.1"),
        candidate("wrong", "parity-fail=causal"),
    ]
    .join("\n");
    let r = e.run(&input, &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.lines.len(), 4, "{}", r.stdout);
    assert_eq!(r.verdict("same"), "same");
    assert_eq!(r.verdict("fast"), "faster");
    assert_eq!(r.verdict("slow"), "slower");
    assert_eq!(r.verdict("wrong"), "parity-fail");
    let fast = r.by_id("fast");
    assert_eq!(fast["line"], 2);
    assert_eq!(fast["reference"]["kind"], "base");
    assert_eq!(fast["gpu"]["simulated"], true);
    let shapes = fast["shapes"].as_array().unwrap();
    assert_eq!(shapes.len(), 3);
    for s in shapes {
        let ratio = s["ratio"].as_f64().unwrap();
        assert!((0.87..0.93).contains(&ratio), "{s}");
        let (low, high) = (
            s["interval"]["low"].as_f64().unwrap(),
            s["interval"]["high"].as_f64().unwrap(),
        );
        assert!(low <= ratio && ratio <= high && high < 0.97, "{s}");
        assert!(s["win"].as_bool().unwrap());
        let p50 = &s["p50_us"];
        let measured = p50["candidate"].as_f64().unwrap() / p50["reference"].as_f64().unwrap();
        assert!((0.87..0.93).contains(&measured), "{s}");
        assert!(
            s["tflops"]["candidate"].as_f64().unwrap() > s["tflops"]["reference"].as_f64().unwrap()
        );
        assert!(s["parity"]["candidate"]["rel_l2"].as_f64().unwrap() < 1e-3);
    }
    // The seeds' rule holds on the initial measurement; without a leaderboard nothing is
    // confirmed or accepted.
    let a = &fast["acceptance"];
    assert_eq!(a["meets_rule"], true, "{a}");
    assert_eq!(a["accepted"], Value::Null);
    assert_eq!(a["confirmations"].as_array().unwrap().len(), 0);
    assert!(fast["probes"]["checked"].as_u64().unwrap() > 0);
    assert_eq!(fast["resources"][0]["side"], "candidate");
    let t = &fast["timing"];
    assert!(t["measure_s"].as_f64().unwrap() > 0.0);
    assert!(t["total_s"].as_f64().unwrap() >= t["measure_s"].as_f64().unwrap());
    assert!(t["run"]["total_s"].as_f64().is_some());
    assert_eq!(r.by_id("same")["acceptance"]["meets_rule"], false);
    assert!(
        r.by_id("slow")["reason"]
            .as_str()
            .unwrap()
            .starts_with("slower than the reference by more than 2.0% with confidence on "),
        "{}",
        r.stdout
    );
    assert!(r.stderr.contains("ci-gate eval: 4 line(s)"), "{}", r.stderr);
}

#[test]
fn the_reference_is_checked_once_and_its_parity_shown_on_every_line() {
    let e = Eval::new();
    let input: Vec<String> = (1..=5)
        .map(|i| candidate(&format!("c{i}"), "factor=1.0"))
        .collect();
    let r = e.run(&input.join("\n"), &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let mut reused = 0;
    for l in &r.lines {
        for s in l["shapes"].as_array().unwrap() {
            let p = &s["parity"];
            assert!(p["reference"]["rel_l2"].is_number(), "{l}");
            let Some(from) = p["reference_from_line"].as_u64() else {
                continue;
            };
            // The line that checked it did so itself, and showed the same figures.
            reused += 1;
            assert_ne!(Some(from), l["line"].as_u64(), "{l}");
            let checker = r.lines.iter().find(|o| o["line"] == from).unwrap();
            let there = checker["shapes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["name"] == s["name"])
                .unwrap();
            assert_eq!(there["parity"]["reference_from_line"], Value::Null);
            assert_eq!(there["parity"]["reference"], p["reference"]);
        }
    }
    // The first measurement checks it; the other four find it checked (3 shapes each).
    assert_eq!(reused, 4 * 3, "{}", r.stdout);
}

#[test]
fn attacks_end_alone_and_the_honest_candidates_after_them_are_measured_as_if_they_never_ran() {
    let e = Eval::new();
    let stream = [
        candidate("hang", "hang=*"),
        candidate("honest-1", "factor=1.0"),
        candidate("fault", "error=*"),
        candidate("honest-2", "factor=0.9"),
        candidate("skip-work", "skip=*"),
        candidate("honest-3", "factor=1.0"),
        candidate("wrong", "parity-fail=*"),
        candidate("honest-4", "factor=1.1"),
        candidate("forge", "forge=*"),
        candidate("honest-5", "factor=1.0"),
    ]
    .join("\n");
    let r = e.run(&stream, &[]);
    // Errors happened: exit 1, and every line came back.
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.lines.len(), 10, "{}", r.stdout);
    assert_eq!(r.verdict("hang"), "error");
    assert!(
        r.by_id("hang")["reason"]
            .as_str()
            .unwrap()
            .contains("did not finish within 2 s"),
        "{}",
        r.stdout
    );
    // A fault on a random shape fails that kind's parity; either way it is never a speed.
    assert!(["error", "parity-fail"].contains(&r.verdict("fault")));
    assert_eq!(r.verdict("skip-work"), "parity-fail");
    assert!(
        r.by_id("skip-work")["reason"]
            .as_str()
            .unwrap()
            .contains("skipped work")
    );
    assert_eq!(r.verdict("wrong"), "parity-fail");
    // A kernel that takes time out of its own event record (40% of each sample, an
    // improvement by the events alone) is an error: the host's clock saw the whole sample.
    assert_eq!(r.verdict("forge"), "error", "{}", r.stdout);
    assert!(
        r.by_id("forge")["reason"]
            .as_str()
            .unwrap()
            .contains("host's clock"),
        "{}",
        r.stdout
    );
    assert_eq!(r.verdict("honest-5"), "same");
    assert_eq!(r.verdict("honest-1"), "same");
    assert_eq!(r.verdict("honest-2"), "faster");
    assert_eq!(r.verdict("honest-3"), "same");
    assert_eq!(r.verdict("honest-4"), "slower");
    for id in ["honest-1", "honest-2", "honest-3", "honest-4", "honest-5"] {
        let l = r.by_id(id);
        assert_eq!(l["probes"]["failed"].as_array().unwrap().len(), 0, "{l}");
        assert_eq!(l["shapes"].as_array().unwrap().len(), 3, "{l}");
    }
    // Each candidate had a process of its own: the simulated GPU of each measuring process
    // has its own seed, hence its own UUID.
    let uuids: std::collections::BTreeSet<&str> = r
        .lines
        .iter()
        .filter_map(|l| l["gpu"]["uuid"].as_str())
        .collect();
    assert!(uuids.len() >= 7, "{uuids:?}");
}

#[test]
fn bad_inputs_get_one_line_each_and_the_evaluator_goes_on() {
    let e = Eval::new();
    std::fs::write(e.path("real.cu"), sim("real", "factor=1.0")).unwrap();
    let big = "/".repeat((1 << 20) + 1);
    let lines = [
        "{not json".to_owned(),
        json!({"id": "unknown-key", "path": "real.cu", "tile": 64}).to_string(),
        json!({"id": "missing", "path": "no/such/attention.cu"}).to_string(),
        json!({"id": "oversized", "source": big}).to_string(),
        json!({"id": "base-again", "path": "base/attention.cu"}).to_string(),
        json!({"id": "bad-define", "path": "real.cu", "defines": ["X=$(id)"]}).to_string(),
        json!({"id": "bad\u{1b}id", "path": "real.cu"}).to_string(),
        json!({"id": "include", "source": "\n#include \"/proc/self/environ\"\n"}).to_string(),
        String::new(),
        json!({"id": "ok", "path": "real.cu"}).to_string(),
        json!({"id": "ok", "path": "real.cu"}).to_string(),
        "x".repeat((8 << 20) + 10),
        json!({"id": "last", "source": sim("last", "factor=1.0")}).to_string(),
        // A define is written into the source ahead of it, so the lexical check reads it
        // too: a file-reaching identifier cannot come in as a define's value.
        json!({"id": "define-has-include", "path": "real.cu", "defines": ["H=__has_include"]})
            .to_string(),
    ];
    let r = e.run(&lines.join("\n"), &[]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    // One line per non-blank input line.
    assert_eq!(r.lines.len(), lines.len() - 1, "{}", r.stdout);
    let at = |n: u64| r.lines.iter().find(|l| l["line"] == n).unwrap();
    assert_eq!(
        (at(1)["id"].clone(), at(1)["verdict"].clone()),
        (Value::Null, json!("error"))
    );
    assert!(at(1)["reason"].as_str().unwrap().contains("not JSON"));
    assert!(
        r.by_id("unknown-key")["reason"]
            .as_str()
            .unwrap()
            .contains("unknown key \"tile\"")
    );
    assert_eq!(r.verdict("missing"), "error");
    assert!(
        r.by_id("missing")["reason"]
            .as_str()
            .unwrap()
            .contains("no/such/attention.cu")
    );
    assert_eq!(r.verdict("oversized"), "refused");
    assert_eq!(r.verdict("base-again"), "refused");
    assert!(
        r.by_id("base-again")["reason"]
            .as_str()
            .unwrap()
            .contains("identical to the base kernels")
    );
    assert_eq!(r.verdict("bad-define"), "error");
    assert_eq!(at(7)["id"], Value::Null);
    assert!(
        at(7)["reason"].as_str().unwrap().contains("\\u{1b}"),
        "{}",
        at(7)
    );
    assert!(!r.stdout.contains('\u{1b}'));
    assert_eq!(r.verdict("include"), "refused");
    assert!(
        r.by_id("include")["reason"]
            .as_str()
            .unwrap()
            .contains("attention.cu:2: #include is refused")
    );
    assert_eq!(at(10)["verdict"], "same");
    assert_eq!(at(11)["verdict"], "error");
    assert!(
        at(11)["reason"]
            .as_str()
            .unwrap()
            .contains("already used on line 10")
    );
    assert!(
        at(12)["reason"]
            .as_str()
            .unwrap()
            .contains("longer than the 8388608")
    );
    assert_eq!(r.verdict("last"), "same");
    assert_eq!(r.verdict("define-has-include"), "refused");
    assert!(
        r.by_id("define-has-include")["reason"]
            .as_str()
            .unwrap()
            .contains("defines[0] \"H=__has_include\" names `__has_include`, which no kernel may"),
        "{}",
        r.by_id("define-has-include")
    );

    // Without any error the exit status is 0, refusals included.
    let r = e.run(
        &[
            json!({"id": "base-again", "path": "base/attention.cu"}).to_string(),
            candidate("fine", "factor=1.0"),
        ]
        .join("\n"),
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.lines.len(), 2);
}

#[test]
fn defines_reach_the_candidate_alone_and_are_part_of_its_kernel_hash() {
    let e = Eval::new();
    let base = std::fs::read_to_string(e.path("base/attention.cu")).unwrap();
    let input = [
        json!({"id": "with-defines", "source": base, "defines": ["BN=64", "FAST"]}).to_string(),
        json!({"id": "other-defines", "source": base, "defines": ["BN=128"]}).to_string(),
    ]
    .join("\n");
    let r = e.run(&input, &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let a = r.by_id("with-defines");
    let b = r.by_id("other-defines");
    // The same source, measured (not refused as the base) because its defines differ.
    assert_eq!(a["source_sha256"], b["source_sha256"]);
    assert_ne!(a["kernel_sha256"], b["kernel_sha256"]);
    assert_eq!(a["defines"], json!(["BN=64", "FAST"]));
    assert_eq!(a["verdict"], "same");
}

#[test]
fn a_hung_measuring_process_is_killed_at_the_deadline() {
    let e = Eval::new();
    e.config(&CONFIG.replace("timeout_s: 60", "timeout_s: 4"));
    let r = e.run(
        &[
            candidate("slow-wall", "wall=10000"),
            candidate("next", "factor=1.0"),
        ]
        .join("\n"),
        &[],
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.verdict("slow-wall"), "error");
    assert!(
        r.by_id("slow-wall")["reason"]
            .as_str()
            .unwrap()
            .contains("did not finish within 4 s (eval.timeout_s) and was killed"),
        "{}",
        r.stdout
    );
    assert_eq!(r.verdict("next"), "same");
}

#[test]
fn the_leaderboard_accepts_confirmed_wins_and_the_best_becomes_the_reference() {
    let e = Eval::new();
    let input = [
        json!({"id": "win-1", "source": sim("w1", "factor=0.9"), "commit": "0123456789abcdef0123456789abcdef01234567"}).to_string(),
        candidate("not-enough", "factor=0.88"),
        candidate("win-2", "factor=0.8"),
        candidate("plain", "factor=1.0"),
    ]
    .join("\n");
    let r = e.run(&input, &["--leaderboard", "board.json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let w1 = &r.by_id("win-1")["acceptance"];
    assert_eq!(
        (w1["accepted"].clone(), w1["rank"].clone()),
        (json!(true), json!(1)),
        "{w1}"
    );
    let caches: Vec<&str> = w1["confirmations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cache"].as_str().unwrap())
        .collect();
    assert_eq!(caches, ["hot", "cold"]);
    assert!(r.by_id("win-1")["timing"]["confirm_s"].as_f64().unwrap() > 0.0);
    // After win-1, the reference is win-1: 0.88 of the base is only 2% faster than it.
    assert_eq!(r.by_id("not-enough")["reference"]["id"], "win-1");
    assert_eq!(r.by_id("not-enough")["acceptance"]["accepted"], false);
    assert_eq!(r.by_id("win-2")["acceptance"]["rank"], 2);
    assert_eq!(r.by_id("plain")["verdict"], "slower");
    let board: Value =
        serde_json::from_slice(&std::fs::read(e.path("board.json")).unwrap()).unwrap();
    let entries = board["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(
        entries[0]["commit"],
        "0123456789abcdef0123456789abcdef01234567"
    );
    assert_eq!(entries[0]["against"]["kind"], "base");
    assert_eq!(entries[1]["against"]["id"], "win-1");
    assert_eq!(entries[1]["gpu"]["simulated"], true);
    assert_eq!(entries[1]["confirmations"].as_array().unwrap().len(), 2);

    // A later evaluator starts from the best; `--against base` measures against the base,
    // but a win is confirmed against the best before it is accepted.
    let again = candidate("win-3", "factor=0.85");
    let r = e.run(&again, &["--leaderboard", "board.json"]);
    assert_eq!(r.by_id("win-3")["reference"]["id"], "win-2");
    assert_eq!(r.verdict("win-3"), "slower");
    let r = e.run(
        &again,
        &["--leaderboard", "board.json", "--against", "base"],
    );
    let l = r.by_id("win-3");
    assert_eq!(
        (l["reference"]["kind"].clone(), l["verdict"].clone()),
        (json!("base"), json!("faster"))
    );
    let a = &l["acceptance"];
    assert_eq!(
        (a["meets_rule"].clone(), a["accepted"].clone()),
        (json!(true), json!(false)),
        "{a}"
    );
    assert_eq!(a["confirmations"][0]["against"], "best win-2");
    assert!(
        a["why"]
            .as_str()
            .unwrap()
            .contains("not confirmed in a fresh process (hot cache, against best win-2)"),
        "{a}"
    );

    // A tampered leaderboard stops the evaluator before anything runs, and is left alone.
    let text = std::fs::read_to_string(e.path("board.json")).unwrap();
    let tampered = text.replacen("factor=0.8", "factor=0.1", 1);
    std::fs::write(e.path("board.json"), &tampered).unwrap();
    let r = e.run(&again, &["--leaderboard", "board.json"]);
    assert_eq!(r.code, Some(2));
    assert!(r.lines.is_empty());
    assert!(
        r.stderr.contains("board.json") && r.stderr.contains("entries[1].source"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(e.path("board.json")).unwrap(),
        tampered
    );
}

#[test]
fn devices_share_one_queue() {
    let e = Eval::new();
    let input: Vec<String> = (0..6)
        .map(|i| candidate(&format!("c{i}"), "factor=1.0 wall=10"))
        .collect();
    let r = e.run(&input.join("\n"), &["--devices", "0,1"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.lines.len(), 6);
    let devices: std::collections::BTreeSet<u64> = r
        .lines
        .iter()
        .map(|l| l["gpu"]["device"].as_u64().unwrap())
        .collect();
    assert_eq!(devices, [0, 1].into(), "{}", r.stdout);
}

#[test]
fn the_evaluator_refuses_to_start_on_what_it_cannot_use() {
    let e = Eval::new();
    let r = e.run("", &["--against", "best"]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("--against best needs --leaderboard FILE"),
        "{}",
        r.stderr
    );
    let r = e.run("", &["--base-kernels", "nowhere"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("nowhere/attention.cu"), "{}", r.stderr);
    let r = e.run(
        "",
        &["--shape", "b2h8s512d64_f16", "--leaderboard", "b.json"],
    );
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("eval.min_shapes is 2 but 1 shape(s)"),
        "{}",
        r.stderr
    );
    let r = e.run("", &["--devices", "all"]);
    assert_eq!(r.code, Some(2));
    // Nothing to read is no error.
    let r = e.run("", &[]);
    assert_eq!((r.code, r.lines.len()), (Some(0), 0), "{}", r.stderr);
}
