//! Every attack of tests/adversarial/ through `ci-gate local` on a real GPU:
//! `cargo test --test it -- --ignored --nocapture adversarial_gpu::` on a CUDA machine
//! (`CI_GATE_BIN` names the ci-gate binary when the test runs somewhere other than where it
//! was built). Each attack must end in `error`, `parity-fail` or exit 2 — never `pass`,
//! `improvement` or even `regression` (a verdict on its timings would mean its timings were
//! believed) — and some in a particular way ([`expectation`]: refused at compile, caught by
//! the per-launch output checks, ended by the deadline or by the GPU-time budget, naming the
//! shape and the side). The honest controls (the plain kernel the attacks are grafted onto,
//! the whole kernels of gpu/honest/, and the shipped kernels against themselves) must not.

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

fn shipped_text() -> String {
    std::fs::read_to_string(root().join("kernels/attention.cu")).unwrap()
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

/// What the gate must do with one kernel of tests/adversarial/gpu/.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// An honest control: every shape passes parity (a slow kernel reads as a regression),
    /// and the run is not exit 2.
    Honest,
    /// Fails closed ([`failed_closed`]).
    Closed,
    /// Fails closed on the checks of its outputs: exit 1, every shape `parity-fail` or
    /// `error`, at least one `parity-fail` (not a crash, not a refusal).
    ParityFail,
    /// Refused before any launch: exit 2, no shape measured, the message naming one of
    /// these words.
    Refused(&'static [&'static str]),
    /// Hung: exit 2 within [`HANG_WALL`], naming a causal shape and the candidate side.
    Hang,
    /// Slow but finishing: exit 2 within [`BUDGET_WALL`] by the run's GPU-time budget,
    /// naming a shape and the candidate side.
    Budget,
    /// Slow but finishing: exit 2 within [`BUDGET_WALL`] by the budget or by the deadline of
    /// one wait (where the fast base sized the sample graph), naming a shape and the
    /// candidate side.
    BudgetOrDeadline,
    /// A kernel whose numerics hold only on some inputs (the shipped kernel, patched; a
    /// cheaper function on one input class): the run fails (exit 1 or 2) with at least one
    /// shape `parity-fail`, and no shape reads `improvement` (a shape where the flaw is within
    /// tolerance may pass: its output is as right as the config asks).
    PrecisionFail,
}

/// A hung launch ends its wait within 15 s (the config's max_wait_s is 10 s); the rest is
/// the process's setup (device, compiles, the parity launches before the hung one).
const HANG_WALL: Duration = Duration::from_secs(60);
/// slow_ticking spends the config's 30 s budget in a dozen samples; its parity launches and
/// the duty cycle's idle time come on top: 81 s in all on an H200 (2026-11-27). slow_finishing
/// ends sooner (45 s) where the base sized its graph, by the deadline of its first replay.
const BUDGET_WALL: Duration = Duration::from_secs(200);

fn expectation(name: &str) -> Expect {
    // Refused by the module check, before any launch: the attacks `ci-gate compile` refuses
    // (tests/it/adversarial.rs, one table for both tests).
    if let Some((_, words)) = crate::adversarial::MUST_BE_REFUSED
        .iter()
        .find(|(n, _)| *n == name)
    {
        return Expect::Refused(words);
    }
    match name {
        "none" => Expect::Honest,
        "hang" => Expect::Hang,
        "slow_finishing" | "slow_parity" => Expect::BudgetOrDeadline,
        "slow_ticking" => Expect::Budget,
        // No way past the per-launch q and scale: the copy or the cached scores are wrong.
        "smem_stash" | "neighbour_scan" | "qk_reuse_scale" | "const_bank_padding" => {
            Expect::ParityFail
        }
        // Skips the work on every launch whose scale is not exactly 1/sqrt(head_dim): every
        // launch now, parity's included.
        "watched_by_scale" => Expect::ParityFail,
        // The shipped kernel with a precision flaw (tests/adversarial/gpu/shipped/), and a
        // cheaper function returned on the slices of one input class: wrong wherever a
        // parity check holds such a slice (the centered error), right elsewhere.
        n if n.starts_with("shipped/") || n == "uniform_on_flat" => Expect::PrecisionFail,
        // A wrong copy, the constant bank (its whole sections, compared after every sample)
        // or the spacer found changed, or a refusal: whichever comes first. The red team's
        // `cvta.const` stash (const_bank_stash) is among these: the gate verifies the banks
        // instead of refusing one instruction (there are other routes to the bank).
        _ => Expect::Closed,
    }
}

/// Everything the run said: the results file's error, every shape's error or integrity
/// failure, and stderr.
fn all_text(o: &Outcome) -> String {
    let mut t = String::new();
    if let Some(r) = &o.results {
        if let Some(e) = r["error"].as_str() {
            t.push_str(e);
            t.push('\n');
        }
        for (name, verdict, why) in verdicts(r) {
            t.push_str(&format!("{name} {verdict}: {why}\n"));
        }
    }
    t.push_str(&o.stderr);
    t
}

/// The shape names (`b2h4s256d64_causal_f16`) in `text`.
fn shape_names(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let digits = |mut i: usize| {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i > start).then_some(i)
    };
    let mut found = Vec::new();
    for start in 0..b.len() {
        let mut i = start;
        let mut ok = true;
        for letter in [b'b', b'h', b's', b'd'] {
            match (b.get(i) == Some(&letter)).then(|| digits(i + 1)).flatten() {
                Some(next) => i = next,
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if ok && (start == 0 || !b[start - 1].is_ascii_alphanumeric()) {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            found.push(text[start..i].to_owned());
        }
    }
    found
}

/// Why `o` is not what `expect` asks, or `None`.
fn unmet(expect: Expect, o: &Outcome) -> Option<String> {
    let text = all_text(o);
    let lower = text.to_lowercase();
    let shapes = shape_names(&text);
    let why = match expect {
        Expect::Honest => {
            let ok = o.code != Some(2)
                && o.results.as_ref().is_some_and(|r| {
                    let v = verdicts(r);
                    !v.is_empty() && v.iter().all(|(_, v, _)| v != "parity-fail" && v != "error")
                });
            (!ok).then_some("an honest kernel did not pass parity on every shape")
        }
        Expect::Closed => (!failed_closed(o)).then_some("its timings were believed"),
        Expect::ParityFail => {
            let ok = o.code == Some(1)
                && failed_closed(o)
                && o.results
                    .as_ref()
                    .is_some_and(|r| verdicts(r).iter().any(|(_, v, _)| v == "parity-fail"));
            (!ok).then_some("not a parity failure on every shape (exit 1)")
        }
        Expect::Refused(words) => {
            let measured = o
                .results
                .as_ref()
                .is_some_and(|r| verdicts(r).iter().any(|(_, v, _)| v != "error" && v != "?"));
            let ok = o.code == Some(2) && !measured && words.iter().any(|w| lower.contains(w));
            (!ok).then_some("not refused before any launch, naming what it refused")
        }
        Expect::Hang => {
            let ok = o.code == Some(2)
                && o.wall <= HANG_WALL
                && text.contains("candidate")
                && shapes.iter().any(|s| s.contains("_causal"));
            (!ok).then_some(
                "the hang was not ended in time, naming the causal shape and the candidate",
            )
        }
        Expect::Budget => {
            let ok = o.code == Some(2)
                && o.wall <= BUDGET_WALL
                && lower.contains("budget")
                && text.contains("candidate")
                && !shapes.is_empty();
            (!ok).then_some(
                "not ended by the GPU-time budget in time, naming the shape and the candidate",
            )
        }
        Expect::PrecisionFail => {
            let ok = matches!(o.code, Some(1) | Some(2))
                && o.results.as_ref().is_some_and(|r| {
                    let v = verdicts(r);
                    v.iter().any(|(_, v, _)| v == "parity-fail")
                        && !v.iter().any(|(_, v, _)| v == "improvement")
                });
            (!ok).then_some("not a parity failure, or an improvement believed")
        }
        Expect::BudgetOrDeadline => {
            let ok = o.code == Some(2)
                && o.wall <= BUDGET_WALL
                && (lower.contains("budget") || lower.contains("did not finish within"))
                && text.contains("candidate")
                && !shapes.is_empty();
            (!ok).then_some(
                "not ended by the budget or a deadline in time, naming the shape and the candidate",
            )
        }
    };
    why.map(|w| format!("{w} (expected {expect:?})"))
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

    // CI_GATE_ATTACKS=a,b runs those attacks only (a device call that re-runs a few).
    let only: Option<Vec<String>> = std::env::var("CI_GATE_ATTACKS")
        .ok()
        .map(|v| v.split(',').map(str::to_owned).collect());
    let mut attacks: Vec<PathBuf> = std::fs::read_dir(adv.join("gpu/attacks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            only.as_ref().is_none_or(|o| {
                o.iter()
                    .any(|n| p.file_stem().is_some_and(|s| s.to_string_lossy() == *n))
            })
        })
        .collect();
    attacks.sort();
    for path in attacks {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let attack = std::fs::read_to_string(&path).unwrap();
        let dir = kernels_dir(tmp.path(), &name, &format!("{attack}\n{template}"));
        let o = gate(&dir, &config);
        lines.push(said(&name, &o));
        if let Some(why) = unmet(expectation(&name), &o) {
            wrong.push(format!("{why}: {} (stdout {})", said(&name, &o), o.stdout));
        }
        if name == "printf_commands"
            && (o.stdout.contains("::error") || o.stdout.contains("::stop-commands"))
        {
            wrong.push(format!("kernel output reached stdout: {}", o.stdout));
        }
    }

    // The honest controls that are whole kernels (shared memory, the scale argument): they
    // pass parity, so that the defences are shown not to hit honest kernels.
    let mut honest: Vec<PathBuf> = std::fs::read_dir(adv.join("gpu/honest"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    honest.sort();
    for path in honest.into_iter().filter(|_| only.is_none()) {
        let name = format!("honest-{}", path.file_stem().unwrap().to_string_lossy());
        let source = std::fs::read_to_string(&path).unwrap();
        let o = gate(&kernels_dir(tmp.path(), &name, &source), &config);
        lines.push(said(&name, &o));
        if let Some(why) = unmet(Expect::Honest, &o) {
            wrong.push(format!("{why}: {}", said(&name, &o)));
        }
    }

    // The shipped kernel with a precision flaw that holds on N(0,1) inputs only, under a
    // config of real shapes (long rows included), and the shipped kernel itself under it.
    let precision = adv.join("gpu/precision.yaml");
    let mut shipped = crate::adversarial::shipped_attacks();
    shipped.retain(|(name, _)| {
        only.as_ref()
            .is_none_or(|o| o.iter().any(|n| name.trim_start_matches("shipped/") == n))
    });
    if only.is_none() {
        let aa = gate(
            &kernels_dir(
                tmp.path(),
                "shipped-precision-aa",
                &format!(
                    "{shipped_src}\n// a comment\n",
                    shipped_src = shipped_text()
                ),
            ),
            &precision,
        );
        lines.push(said(
            "shipped kernels, precision config, comment-only change",
            &aa,
        ));
        if aa.code != Some(0) {
            wrong.push(format!("A/A under precision.yaml: {}", said("a/a", &aa)));
        }
    }
    for (name, source) in shipped {
        let o = gate(
            &kernels_dir(tmp.path(), &name.replace('/', "-"), &source),
            &precision,
        );
        lines.push(said(&name, &o));
        if let Some(why) = unmet(expectation(&name), &o) {
            wrong.push(format!("{why}: {}", said(&name, &o)));
        }
    }

    // The compile-side attacks (whole attention.cu files) through the same command.
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&adv)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("attention.cu").is_file())
        .collect();
    dirs.sort();
    for d in dirs.into_iter().filter(|_| only.is_none()) {
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

/// The expectations above, on outcomes shaped as the gate reports them (the messages are the
/// ones an H200 printed on 2026-11-27): each passes what it should and catches what it should.
#[test]
fn expectations_accept_what_they_should_and_nothing_else() {
    let outcome = |code: i32, secs: u64, error: Option<&str>, shapes: &[(&str, &str)]| Outcome {
        code: Some(code),
        stdout: String::new(),
        stderr: error.map(|e| format!("error: {e}\n")).unwrap_or_default(),
        results: Some(serde_json::json!({
            "error": error,
            "shapes": shapes
                .iter()
                .map(|(name, verdict)| serde_json::json!({"name": name, "verdict": verdict}))
                .collect::<Vec<_>>(),
        })),
        wall: Duration::from_secs(secs),
    };
    let shapes = |verdicts: [&'static str; 3]| -> Vec<(&'static str, &'static str)> {
        [
            "b2h4s256d64_f16",
            "b2h4s256d64_causal_f16",
            "b1h4s256d128_causal_bf16",
        ]
        .into_iter()
        .zip(verdicts)
        .collect()
    };
    let parity_fail = outcome(1, 5, None, &shapes(["parity-fail"; 3]));
    let one_believed = outcome(
        1,
        5,
        None,
        &shapes(["parity-fail", "regression", "parity-fail"]),
    );
    let slow = outcome(1, 26, None, &shapes(["regression"; 3]));
    let hang = "kernel attention_fwd_f16_d64 of the candidate on shape b2h2s17d64_causal_f16 (parity) did not finish within 10 s (a kernel that never returns, or one too slow to wait for), so the run ends here without a verdict";
    let budget = "the run's GPU-time budget (measure.gpu_budget_s: 30 s of timed kernel work) is spent on shape b2h4s256d64_f16, by the candidate kernel (the candidate 28.4 s, the base 0.3 s in all; last: kernel attention_fwd_f16_d64 of the candidate on shape b2h4s256d64_f16 (a timed sample))";
    let deadline = "kernel attention_fwd_f16_d64 of the candidate on shape b2h4s256d64_f16 (first replay) did not finish within 10 s (a kernel that never returns, or one too slow to wait for)";
    let refused = "attention.cu: the kernel module converts the address of a __constant__ variable to a generic one (cvta.const), which is refused";

    assert_eq!(unmet(Expect::ParityFail, &parity_fail), None);
    assert!(unmet(Expect::ParityFail, &one_believed).is_some());
    assert!(unmet(Expect::ParityFail, &slow).is_some());
    assert!(unmet(Expect::ParityFail, &outcome(2, 5, Some(deadline), &[])).is_some());
    assert_eq!(unmet(Expect::Closed, &parity_fail), None);
    assert_eq!(
        unmet(Expect::Closed, &outcome(2, 5, Some(deadline), &[])),
        None
    );
    assert!(unmet(Expect::Closed, &one_believed).is_some());
    assert!(unmet(Expect::Closed, &slow).is_some());
    assert!(
        unmet(
            Expect::Closed,
            &outcome(0, 5, None, &shapes(["improvement"; 3]))
        )
        .is_some()
    );

    assert_eq!(unmet(Expect::Honest, &slow), None);
    assert!(unmet(Expect::Honest, &one_believed).is_some());
    assert!(unmet(Expect::Honest, &outcome(2, 5, Some(deadline), &[])).is_some());

    assert_eq!(unmet(Expect::Hang, &outcome(2, 12, Some(hang), &[])), None);
    assert!(unmet(Expect::Hang, &outcome(2, 61, Some(hang), &[])).is_some());
    assert!(unmet(Expect::Hang, &outcome(2, 12, Some(deadline), &[])).is_some());

    assert_eq!(
        unmet(Expect::Budget, &outcome(2, 81, Some(budget), &[])),
        None
    );
    assert!(unmet(Expect::Budget, &outcome(2, 201, Some(budget), &[])).is_some());
    assert!(unmet(Expect::Budget, &outcome(2, 45, Some(deadline), &[])).is_some());
    assert_eq!(
        unmet(
            Expect::BudgetOrDeadline,
            &outcome(2, 45, Some(deadline), &[])
        ),
        None
    );
    assert_eq!(
        unmet(Expect::BudgetOrDeadline, &outcome(2, 81, Some(budget), &[])),
        None
    );
    assert!(unmet(Expect::BudgetOrDeadline, &slow).is_some());

    let words: &'static [&'static str] = &["cvta", "constant"];
    assert_eq!(
        unmet(Expect::Refused(words), &outcome(2, 3, Some(refused), &[])),
        None
    );
    assert!(unmet(Expect::Refused(words), &parity_fail).is_some());
    assert!(
        unmet(
            Expect::Refused(words),
            &outcome(2, 3, Some("no GPU: the driver reports no devices"), &[])
        )
        .is_some()
    );

    assert_eq!(shape_names(hang), vec!["b2h2s17d64_causal_f16".to_string()]);
    assert!(shape_names("no shape here, nor hbs1d2 or b1h2s3").is_empty());
}
