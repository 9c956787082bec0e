//! `ci-gate bisect` through the binary on the simulated GPU (`CI_GATE_SIMULATE`): a git
//! repository in a temporary directory whose commits' `attention.cu` say what their
//! simulated kernels do (`// ci-gate-sim: factor=1.06`, `parity-fail=*`).

use crate::common::stderr_text;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::bin;

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

/// A subject no terminal, log or Markdown renderer may take as anything but text.
const HOSTILE: &str = "\u{1b}[31mkernels: faster\u{1b}]8;;http://x\u{7}link\r::error::pwned **bold** <img src=x> ../../etc";

struct Repo {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// Commit ids, in order: GOOD first.
    commits: Vec<String>,
}

impl Repo {
    /// GOOD with `good` kernels, then one commit per `(attention.cu, subject)`.
    fn new(good: &str, history: &[(&str, &str)]) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("kernels")).unwrap();
        std::fs::write(dir.path().join("sim.yaml"), CONFIG).unwrap();
        for f in ["reference.cu", "util.cu"] {
            std::fs::copy(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("kernels")
                    .join(f),
                root.join("kernels").join(f),
            )
            .unwrap();
        }
        let mut repo = Repo {
            _dir: dir,
            root,
            commits: Vec::new(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.commit(good, "good");
        for (source, subject) in history {
            repo.commit(source, subject);
        }
        repo
    }

    fn git(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .current_dir(&self.root)
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
        assert!(out.status.success(), "{}", stderr_text(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn commit(&mut self, source: &str, subject: &str) {
        std::fs::write(self.root.join("kernels/attention.cu"), source).unwrap();
        self.git(&["add", "."]);
        self.git(&["commit", "-q", "--allow-empty", "-m", subject]);
        self.commits.push(self.git(&["rev-parse", "HEAD"]));
    }

    fn config(&self) -> PathBuf {
        self.root.parent().unwrap().join("sim.yaml")
    }

    fn out(&self) -> PathBuf {
        self.root.parent().unwrap().join("bisect.json")
    }

    fn bisect(&self, good: &str, bad: &str, more: &[&str]) -> std::process::Output {
        bin()
            .env("CI_GATE_SIMULATE", "3")
            .current_dir(&self.root)
            .arg("bisect")
            .arg(good)
            .arg(bad)
            .arg("--config")
            .arg(self.config())
            .arg("--kernels")
            .arg(self.root.join("kernels"))
            .arg("--out")
            .arg(self.out())
            .args(more)
            .output()
            .unwrap()
    }

    fn report(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.out()).unwrap()).unwrap()
    }
}

fn sim(directive: &str, tag: &str) -> String {
    format!("// {tag}\n// ci-gate-sim: {directive}\n")
}

/// GOOD, then 8 commits: a README-like edit, a revert to GOOD's exact kernels (reused,
/// not measured), a kernel that fails parity (skipped), a harmless edit, the 6% slowdown
/// under a hostile subject, and two more edits keeping it.
fn history() -> Repo {
    let good = sim("factor=1.0", "good");
    Repo::new(
        &good,
        &[
            (&sim("factor=1.0", "c1"), "c1: comments"),
            (&sim("factor=1.0", "c1"), "c2: docs only"),
            (&good, "c3: revert c1"),
            (&sim("factor=1.0 parity-fail=*", "c4"), "c4: broken tiling"),
            (&sim("factor=1.0", "c5"), "c5: rename"),
            (&sim("factor=1.06", "c6"), HOSTILE),
            (&sim("factor=1.06", "c7"), "c7: more"),
            (&sim("factor=1.06", "c8"), "c8: bad"),
        ],
    )
}

fn text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr_text(&out.stderr),
    )
}

#[test]
fn bisect_finds_the_culprit_around_a_skipped_commit_and_escapes_its_subject() {
    let repo = history();
    let c = &repo.commits;
    let out = repo.bisect(&c[0], &c[8], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let r = repo.report();
    assert_eq!(r["outcome"], "culprit", "{r}");
    assert_eq!(r["culprit"]["commit"], c[6].as_str(), "{stdout}");
    assert_eq!(r["confirmed"], true);
    // The path: BAD, the skipped c4, the revert reused from GOOD, c5, c6; then confirm.
    let steps: Vec<(String, String)> = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["commit"]["commit"].as_str().unwrap().to_owned(),
                s["call"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let want = [
        (&c[8], "slower"),
        (&c[4], "skipped"),
        (&c[3], "not slower"),
        (&c[5], "not slower"),
        (&c[6], "slower"),
        (&c[6], "slower"),
    ];
    assert_eq!(steps.len(), want.len(), "{stdout}");
    for ((got, call), (commit, want_call)) in steps.iter().zip(want) {
        assert_eq!((got, call.as_str()), (commit, want_call), "{stdout}");
    }
    let skipped = &r["steps"][1];
    assert!(
        skipped["why"].as_str().unwrap().contains("parity"),
        "{skipped}"
    );
    assert!(
        r["steps"][2]["reused_from"]
            .as_str()
            .unwrap()
            .starts_with("GOOD"),
        "{r}"
    );
    assert_eq!(r["steps"][2]["shapes"].as_array().unwrap().len(), 0);
    assert_eq!(
        r["steps"].as_array().unwrap().last().unwrap()["role"],
        "confirm"
    );
    // Each measured step names per shape Δ and its interval.
    let short6 = &c[6][..12];
    assert!(stdout.contains(&format!("Culprit: {short6}")), "{stdout}");
    assert!(stdout.contains("Δ round p50 +"), "{stdout}");
    assert!(stdout.contains("% CI, Yuen t"), "{stdout}");
    assert!(stdout.contains("skipped: "), "{stdout}");
    assert!(stdout.contains("byte-identical to GOOD"), "{stdout}");
    assert!(stdout.contains("Error control:"), "{stdout}");
    assert!(stdout.contains("union bound"), "{stdout}");
    // The hostile subject: shown, escaped, never a control sequence or a line of its own.
    for s in [&stdout, &stderr] {
        assert!(!s.contains('\u{1b}') && !s.contains('\u{7}') && !s.contains('\r'));
        assert!(s.lines().all(|l| !l.trim_start().starts_with("::")), "{s}");
    }
    assert!(stdout.contains(r"\u{1b}[31mkernels: faster"), "{stdout}");
    // JSON keeps it as one clean line.
    let subject = r["culprit"]["subject"].as_str().unwrap();
    assert!(!subject.chars().any(char::is_control), "{subject:?}");
    assert!(subject.contains("::error::pwned"), "{subject:?}");
}

#[test]
fn bisect_refuses_what_it_cannot_decide_with_exit_2() {
    let repo = history();
    let c = &repo.commits;
    // BAD not slower than GOOD: nothing to bisect.
    let out = repo.bisect(&c[0], &c[5], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("is not slower than GOOD"), "{stderr}");
    assert!(stdout.contains("nothing to bisect"), "{stdout}");
    assert_eq!(repo.report()["outcome"], "bad-not-slower");
    // A shape the config does not have, named.
    let out = repo.bisect(&c[0], &c[8], &["--shape", "b9h9s9d64_f16"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("b9h9s9d64_f16"), "{stderr}");
    // GOOD after BAD: not an ancestor.
    let out = repo.bisect(&c[6], &c[2], &[]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("is not an ancestor of BAD"), "{stderr}");
    // A revision that names nothing, and one that looks like an option.
    let out = repo.bisect("no-such-branch", &c[8], &[]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("GOOD \"no-such-branch\": no such commit"),
        "{stderr}"
    );
    let out = repo.bisect(&c[0], "--output=/tmp/x", &[]);
    assert_eq!(out.status.code(), Some(2));
    // BAD's kernels broken: it cannot be judged.
    let out = repo.bisect(&c[0], &c[4], &[]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("could not be judged"), "{stderr}");
}

#[test]
fn bisect_a_culprit_its_first_parent_does_not_confirm_is_exit_2() {
    // A creep: +2% (the margin) then +3.5%: BAD is slower than GOOD, its parent is not, but
    // BAD against its parent is only +1.5%, under the margin.
    let repo = Repo::new(
        &sim("factor=1.0", "good"),
        &[
            (&sim("factor=1.02", "c1"), "c1: creep"),
            (&sim("factor=1.035", "c2"), "c2: more creep"),
        ],
    );
    let c = &repo.commits;
    let out = repo.bisect(&c[0], &c[2], &["--format", "json"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("was not confirmed"), "{stderr}");
    let r: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(r["outcome"], "culprit");
    assert_eq!(r["culprit"]["commit"], c[2].as_str());
    assert_eq!(r["confirmed"], false);
}

/// `ci-gate local` in `repo` on its working-tree kernels, simulation `seed`.
fn local(repo: &Repo, args: &[&str], seed: &str) -> std::process::Output {
    let baselines = repo.root.parent().unwrap().join("baselines");
    std::fs::create_dir_all(&baselines).unwrap();
    bin()
        .env("CI_GATE_SIMULATE", seed)
        .env_remove("GITHUB_SHA")
        .current_dir(&repo.root)
        .arg("local")
        .arg("--config")
        .arg("configs/sim.yaml")
        .arg("--baselines")
        .arg(&baselines)
        .arg("--kernels")
        .arg(repo.root.join("kernels"))
        .args(["--no-peers", "--no-profile", "--out"])
        .arg(repo.out())
        .args(args)
        .output()
        .unwrap()
}

/// A push to the default branch whose drift is traced to the code prints the bisect
/// command, and that command, run as printed, names the commit that crept.
#[test]
fn bisect_the_command_a_code_drift_prints_finds_the_commit() {
    let good = sim("factor=1.0", "good");
    let mut repo = Repo::new(&good, &[]);
    // The config lives in the repository, where the printed command looks for it.
    std::fs::create_dir_all(repo.root.join("configs")).unwrap();
    std::fs::write(repo.root.join("configs/sim.yaml"), CONFIG).unwrap();
    repo.commit(&good, "configs");
    // The baseline of GOOD's kernels, from five processes.
    let mut record = bin();
    record
        .current_dir(&repo.root)
        .args(["baseline", "update", "--reason", "first", "--config"])
        .arg("configs/sim.yaml")
        .arg("--baselines")
        .arg(repo.root.parent().unwrap().join("baselines"));
    for p in 1..=5 {
        let out = local(&repo, &["--no-base", "--no-compare"], &p.to_string());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
        let f = repo.root.parent().unwrap().join(format!("process{p}.json"));
        std::fs::copy(repo.out(), &f).unwrap();
        record.arg("--from").arg(f);
    }
    let rec = record.output().unwrap();
    assert!(rec.status.success(), "{}", text(&rec).1);
    // Then three merges, the second 5% slower.
    repo.commit(&sim("factor=1.0", "m1"), "m1: tidy");
    repo.commit(&sim("factor=1.05", "m2"), "m2: the slow one");
    repo.commit(&sim("factor=1.05", "m3"), "m3: after");
    // The push: A/B against an identical copy shows nothing, the stored baseline the creep.
    let same = repo.root.parent().unwrap().join("same");
    std::fs::create_dir_all(&same).unwrap();
    std::fs::write(same.join("attention.cu"), sim("factor=1.05", "m3")).unwrap();
    let out = local(
        &repo,
        &[
            "--base-kernels",
            same.to_str().unwrap(),
            "--ab-always",
            "--fail-on-drift",
            "--shape",
            "b2h8s512d64_f16",
        ],
        "6",
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("code crept"), "{stdout}");
    let c = &repo.commits;
    let printed = format!(
        "ci-gate bisect {} {} --shape b2h8s512d64_f16 --config configs/sim.yaml",
        &c[1][..12],
        &c[4][..12]
    );
    let flat = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(&printed), "{printed}\n{stdout}");
    // The PR comment's Markdown says the same, as code.
    let out = local(
        &repo,
        &[
            "--base-kernels",
            same.to_str().unwrap(),
            "--ab-always",
            "--fail-on-drift",
            "--shape",
            "b2h8s512d64_f16",
            "--format",
            "markdown",
        ],
        "6",
    );
    let (markdown, _) = text(&out);
    assert!(markdown.contains("ci-gate bisect"), "{markdown}");
    assert!(
        markdown.contains(&c[1][..12]) && markdown.contains(&c[4][..12]),
        "{markdown}"
    );
    // Run it as printed.
    let args: Vec<&str> = printed.split(' ').skip(1).collect();
    let out = bin()
        .env("CI_GATE_SIMULATE", "4")
        .current_dir(&repo.root)
        .args(&args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let r: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(r["culprit"]["commit"], c[3].as_str(), "{r}");
    assert_eq!(r["culprit"]["subject"], "m2: the slow one");
}
