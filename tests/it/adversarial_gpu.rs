//! Every attack of tests/adversarial/ through `ci-gate local` on a real GPU:
//! `cargo test --test it -- --ignored --nocapture adversarial_gpu::` on a CUDA machine
//! (`CI_GATE_BIN` names the ci-gate binary when the test runs somewhere other than where it
//! was built). Each attack must end in `error`, `parity-fail` or exit 2 — never `pass`,
//! `improvement` or even `regression` (a verdict on its timings would mean its timings were
//! believed) — and the plain kernel the attacks are grafted onto, and the shipped kernels
//! against themselves, must not.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use wait_timeout::ChildExt;

fn root() -> PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR"));
    if built.join("kernels").is_dir() {
        built.to_owned()
    } else {
        PathBuf::from(".")
    }
}

fn bin() -> PathBuf {
    std::env::var_os("CI_GATE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ci-gate")))
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    results: Option<Value>,
    wall: Duration,
}

/// `ci-gate local` of the kernels in `dir` against the shipped kernels, adversarial config.
fn gate(dir: &Path, config: &Path) -> Outcome {
    let out = dir.join("results.json");
    let start = Instant::now();
    let mut child = Command::new(bin())
        .current_dir(root())
        .args([
            "local",
            "--no-peers",
            "--no-compare",
            "--no-profile",
            "--format",
            "json",
        ])
        .arg("--config")
        .arg(config)
        .arg("--base-kernels")
        .arg(root().join("kernels"))
        .arg("--kernels")
        .arg(dir)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ci-gate");
    let (mut so, mut se) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut so, &mut s).ok();
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut se, &mut s).ok();
        s
    });
    let status = match child.wait_timeout(Duration::from_secs(240)).unwrap() {
        Some(s) => s,
        None => {
            child.kill().ok();
            panic!("ci-gate did not end within 240 s on {}", dir.display());
        }
    };
    Outcome {
        code: status.code(),
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        results: std::fs::read(&out)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok()),
        wall: start.elapsed(),
    }
}

fn kernels_dir(tmp: &Path, name: &str, source: &str) -> PathBuf {
    let dir = tmp.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("attention.cu"), source).unwrap();
    for f in ["reference.cu", "util.cu"] {
        std::fs::copy(root().join("kernels").join(f), dir.join(f)).unwrap();
    }
    dir
}

fn verdicts(r: &Value) -> Vec<(String, String, String)> {
    r["shapes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    let why = s["integrity"]
                        .as_str()
                        .or(s["error"].as_str())
                        .unwrap_or("")
                        .to_owned();
                    (
                        s["name"].as_str().unwrap_or("?").to_owned(),
                        s["verdict"].as_str().unwrap_or("?").to_owned(),
                        why,
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One line for the record: what the gate said about an attack.
fn said(name: &str, o: &Outcome) -> String {
    let first = o
        .results
        .as_ref()
        .and_then(|r| {
            r["error"].as_str().map(str::to_owned).or_else(|| {
                verdicts(r)
                    .into_iter()
                    .find(|v| !v.2.is_empty())
                    .map(|v| format!("{} {}: {}", v.0, v.1, v.2))
            })
        })
        .or_else(|| {
            o.stderr
                .lines()
                .find(|l| l.starts_with("error"))
                .map(str::to_owned)
        })
        .unwrap_or_default();
    format!(
        "{name}: exit {:?} in {:.1} s; {}",
        o.code,
        o.wall.as_secs_f64(),
        first.chars().take(400).collect::<String>()
    )
}

/// The attack ended without a believed timing: exit 2, or every shape `parity-fail` or
/// `error`.
fn failed_closed(o: &Outcome) -> bool {
    match o.code {
        Some(2) => true,
        Some(1) => o.results.as_ref().is_some_and(|r| {
            let v = verdicts(r);
            !v.is_empty()
                && v.iter()
                    .all(|(_, verdict, _)| verdict == "parity-fail" || verdict == "error")
        }),
        _ => false,
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_attack_fails_closed_and_honest_kernels_do_not() {
    let tmp = tempfile::tempdir().unwrap();
    let adv = root().join("tests/adversarial");
    let config = adv.join("gpu/config.yaml");
    let template = std::fs::read_to_string(adv.join("gpu/template.cu")).unwrap();
    let mut lines = Vec::new();
    let mut wrong = Vec::new();

    // The shipped kernels against themselves (a comment-only change, so A/B runs): pass.
    let shipped = std::fs::read_to_string(root().join("kernels/attention.cu")).unwrap();
    let aa = gate(
        &kernels_dir(
            tmp.path(),
            "shipped-comment",
            &format!("{shipped}\n// a comment\n"),
        ),
        &config,
    );
    lines.push(said("shipped kernels, comment-only change", &aa));
    if aa.code != Some(0) {
        wrong.push(format!("A/A of the shipped kernels: {}", said("a/a", &aa)));
    }

    let mut attacks: Vec<PathBuf> = std::fs::read_dir(adv.join("gpu/attacks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    attacks.sort();
    for path in attacks {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let attack = std::fs::read_to_string(&path).unwrap();
        let dir = kernels_dir(tmp.path(), &name, &format!("{attack}\n{template}"));
        let o = gate(&dir, &config);
        lines.push(said(&name, &o));
        if name == "none" {
            // The plain kernel is right everywhere (slow: a regression, never parity-fail).
            let ok = o.results.as_ref().is_some_and(|r| {
                verdicts(r)
                    .iter()
                    .all(|(_, v, _)| v != "parity-fail" && v != "error")
            }) && o.code != Some(2);
            if !ok {
                wrong.push(format!(
                    "the plain kernel did not pass parity: {}",
                    said(&name, &o)
                ));
            }
            continue;
        }
        if !failed_closed(&o) {
            wrong.push(format!("{} (stdout {})", said(&name, &o), o.stdout));
        }
        if name == "hang" {
            // Ended by the deadline, with a results file that names the shape and the side.
            let error = o
                .results
                .as_ref()
                .and_then(|r| r["error"].as_str().map(str::to_owned))
                .unwrap_or_default();
            if o.code != Some(2)
                || o.wall > Duration::from_secs(120)
                || !error.contains("candidate")
                || !error.contains("causal")
            {
                wrong.push(format!(
                    "the hang was not ended as it should be: {error:?}, {}",
                    said(&name, &o)
                ));
            }
        }
        if name == "printf_commands"
            && (o.stdout.contains("::error") || o.stdout.contains("::stop-commands"))
        {
            wrong.push(format!("kernel output reached stdout: {}", o.stdout));
        }
    }

    // The compile-side attacks (whole attention.cu files) through the same command.
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&adv)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("attention.cu").is_file())
        .collect();
    dirs.sort();
    for d in dirs {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        let source = std::fs::read_to_string(d.join("attention.cu")).unwrap();
        let o = gate(&kernels_dir(tmp.path(), &name, &source), &config);
        lines.push(said(&name, &o));
        if o.code != Some(2) {
            wrong.push(said(&name, &o));
        }
    }

    for l in &lines {
        println!("{l}");
    }
    assert!(
        wrong.is_empty(),
        "attacks not stopped:\n{}",
        wrong.join("\n")
    );
}
