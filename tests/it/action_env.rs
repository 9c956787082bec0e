//! action.yml's "Run the gate" step (id: gate) passes ci-gate none of ci-gate's variables
//! that select test behaviour, whatever the runner's environment holds: the step's script
//! runs here under bash with a fake ci-gate that writes down its environment and arguments,
//! for every command, with `CI_GATE_SIMULATE` and the test suite's variables set as a
//! runner's `.env` could set them. The runner's settings (the NVRTC cache, the peer's
//! Python, the owner's leave to compile unconfined) arrive as the job has them, for ci-gate
//! to judge (in GitHub Actions it takes them from the runner's own `.env` only:
//! `runner_settings`), and the step sets none of them itself; the comment's author arrives.

use crate::common::stderr_text;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// ci-gate's variables a runner's environment might hold, and whether ci-gate gets them.
const SEEN: &[(&str, bool)] = &[
    ("CI_GATE_SIMULATE", false),
    ("CI_GATE_NVRTC_LINEINFO", false),
    ("CI_GATE_FUZZ_CASES", false),
    ("CI_GATE_FUZZ_SEED", false),
    ("CI_GATE_FUZZ_RANDOM", false),
    ("CI_GATE_CALIBRATION", false),
    ("CI_GATE_CALIBRATION_RUNS", false),
    ("CI_GATE_CANARY", false),
    ("CI_GATE_GOLDEN_DIR", false),
    ("CI_GATE_VARIANTS", false),
    ("CI_GATE_SHARDS", false),
    ("CI_GATE_REQUIRE_NVRTC", false),
    ("CI_GATE_SOMETHING_NEW", false),
    ("CI_GATE_CACHE_DIR", true),
    ("CI_GATE_PYTHON", true),
    ("CI_GATE_ALLOW_UNCONFINED_NVRTC", true),
    ("CI_GATE_COMMENT_AUTHOR", true),
];

fn gate_step() -> serde_yaml::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml");
    let action: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let steps = action["runs"]["steps"].as_sequence().unwrap();
    let gate: Vec<&serde_yaml::Value> = steps
        .iter()
        .filter(|s| s["id"].as_str() == Some("gate"))
        .collect();
    assert_eq!(gate.len(), 1, "action.yml has one step with id: gate");
    assert_eq!(gate[0]["shell"].as_str(), Some("bash"));
    gate[0].clone()
}

#[test]
fn the_gate_step_passes_only_the_runner_settings_of_ci_gate() {
    let step = gate_step();
    let script = step["run"].as_str().expect("a run: script");
    let dir = tempfile::tempdir().unwrap();
    let temp = dir.path().join("runner-temp");
    std::fs::create_dir(&temp).unwrap();
    let log = dir.path().join("seen.log");
    let fake = dir.path().join("ci-gate");
    // The log's path is written into the fake, not passed in a variable it might not get.
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n{{ echo \"args=$*\"; env | grep '^CI_GATE_' | sort; echo end; }} >> '{}'\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script_path = dir.path().join("gate.sh");
    std::fs::write(&script_path, script).unwrap();

    // The step's own env: what the runner computes from `${{ }}`, supplied here.
    let values: BTreeMap<&str, String> = [
        ("CI_GATE_BIN", fake.display().to_string()),
        ("GITHUB_TOKEN", String::new()),
        ("PR", String::new()),
        ("CONFIG", "configs/pr.yaml".into()),
        ("BASELINES", "baselines".into()),
        ("KERNELS", "kernels".into()),
        ("BASE_KERNELS", "base/kernels".into()),
        ("OUT", temp.join("results.json").display().to_string()),
        ("FAIL_ON_DRIFT", "false".into()),
        ("ENERGY", "false".into()),
        ("REASON", "why".into()),
        ("PROFILE_DIR", temp.join("profiles").display().to_string()),
        ("PROFILE_SLOWEST", "0".into()),
        ("SHARD", String::new()),
    ]
    .into_iter()
    .collect();
    let env = step["env"].as_mapping().expect("the step's env:");
    for key in env.keys() {
        let key = key.as_str().unwrap();
        // A value the action set would be a workflow's in ci-gate's eyes, and ignored.
        assert!(
            !key.starts_with("CI_GATE_") || key == "CI_GATE_BIN",
            "the gate step sets {key}: ci-gate's runner settings come from the runner's .env only"
        );
        assert!(
            key == "COMMAND" || values.contains_key(key),
            "the gate step's env: has {key}, which this test does not supply"
        );
    }

    for command in ["ci", "baseline-update", "sanitize", "comment"] {
        let _ = std::fs::remove_file(&log);
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script_path)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUNNER_TEMP", &temp)
            .env("COMMAND", command)
            .envs(&values);
        for (name, _) in SEEN {
            cmd.env(name, format!("runner-{name}"));
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{command}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            stderr_text(&out.stderr)
        );
        let seen = std::fs::read_to_string(&log).expect("the step ran ci-gate");
        assert_eq!(seen.matches("args=").count(), 1, "{command}: {seen}");
        let first = seen.lines().next().unwrap();
        let expected = match command {
            "baseline-update" => "args=baseline update",
            other => &format!("args={other}"),
        };
        assert!(first.starts_with(expected), "{command}: {first}");
        for (name, passes) in SEEN {
            let line = format!("\n{name}=runner-{name}\n");
            assert_eq!(
                seen.contains(&line),
                *passes,
                "{command}: {name} {} ci-gate:\n{seen}",
                if *passes { "does not reach" } else { "reaches" }
            );
        }
        assert!(!seen.contains("CI_GATE_BIN="), "{command}: {seen}");
    }
}
