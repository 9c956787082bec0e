//! Nsight Compute profiles for `local` and `ci`: after the verdicts, every shape with a
//! `regression` (and those asked for) is profiled with ncu, one launch of the base and one of
//! the candidate attention kernel, each in a `ci-gate kernel-run` process of its own. The
//! figures go into the results file and the report; the `.ncu-rep` files into
//! `--profile-dir`. Without ncu, or without access to the GPU's counters, the run gets one
//! note and the gate is unaffected. All profiling shares one time budget.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::tool::{self, KernelRun};
use crate::child_env::{Child, restrict};
use crate::config::Config;
use crate::profile::{
    EXTRA_METRICS, KernelProfile, ProfileReason, ProfilingInfo, SECTIONS, ShapeProfile,
    parse_raw_csv,
};
use crate::results::ResultsFile;
use crate::verdict::Verdict;

/// What a run's profiling is asked for (`local`'s and `ci`'s `--profile…` options, and
/// `--ncu`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ProfileRequest {
    /// Shapes profiled as well as every regression (`--profile`).
    pub profile: Vec<String>,
    /// Also the shapes with the largest candidate p50, this many (`--profile-slowest`).
    pub profile_slowest: u32,
    /// Nothing profiled, not even regressions (`--no-profile`).
    pub no_profile: bool,
    /// Where the `.ncu-rep` files go.
    pub profile_dir: PathBuf,
    /// The wall-time limit of all profiling in one run, seconds.
    pub profile_budget_s: u64,
    /// The ncu executable, where the command names one (else it is looked for).
    pub ncu: Option<PathBuf>,
}

/// The kernels each side of a run used, for profiling it again.
pub(crate) struct Sides<'a> {
    pub config: &'a Path,
    pub candidate: &'a Path,
    /// The base's kernels when A/B was measured; also the harness then.
    pub base: Option<&'a Path>,
}

/// Checks `--profile` names against the config before anything is measured.
pub(crate) fn check_request(args: &ProfileRequest, config: &Config) -> Result<()> {
    config
        .select_shapes(&args.profile)
        .map(|_| ())
        .context("--profile")
}

/// Which shapes to profile, and why: regressions, then `--profile`, then the slowest.
fn targets(results: &ResultsFile, args: &ProfileRequest) -> Vec<(String, ProfileReason)> {
    if args.no_profile {
        return Vec::new();
    }
    let mut out: Vec<(String, ProfileReason)> = Vec::new();
    let mut add = |name: &str, why| {
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.to_owned(), why));
        }
    };
    for s in &results.shapes {
        if s.verdict == Verdict::Regression {
            add(&s.name, ProfileReason::Regression);
        }
    }
    for name in &args.profile {
        if results.shapes.iter().any(|s| &s.name == name) {
            add(name, ProfileReason::Requested);
        }
    }
    let mut by_time: Vec<(&str, f64)> = results
        .shapes
        .iter()
        .filter_map(|s| Some((s.name.as_str(), s.summary.as_ref()?.p50)))
        .collect();
    by_time.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (name, _) in by_time.into_iter().take(args.profile_slowest as usize) {
        add(name, ProfileReason::Slowest);
    }
    out
}

/// After a run of `local` or `ci`: profiles what `args` and the verdicts ask for, with the
/// base's kernels when A/B was measured. Nothing here fails the run: a problem is a note.
pub(crate) fn profile_after(
    results: &mut ResultsFile,
    args: &ProfileRequest,
    config: &Path,
    candidate: &Path,
    base: Option<&super::git::BaseKernels>,
) {
    let measured = results.base.as_ref().is_some_and(|b| b.measured);
    let sides = Sides {
        config,
        candidate,
        base: base.filter(|_| measured).map(|k| k.dir.as_path()),
    };
    if let Err(e) = profile_run(results, args, &sides) {
        results.notes.push(format!("profiling failed: {e:#}"));
    }
}

/// Profiles what `args` and the verdicts ask for and records it in `results`.
pub(crate) fn profile_run(
    results: &mut ResultsFile,
    args: &ProfileRequest,
    sides: &Sides,
) -> Result<()> {
    let targets = targets(results, args);
    if targets.is_empty() {
        return Ok(());
    }
    let ncu = tool::find("ncu", args.ncu.as_deref())?;
    profile_with(results, args, sides, &targets, ncu)
}

/// [`profile_run`] of `targets` with ncu found (or not).
fn profile_with(
    results: &mut ResultsFile,
    args: &ProfileRequest,
    sides: &Sides,
    targets: &[(String, ProfileReason)],
    ncu: Option<std::path::PathBuf>,
) -> Result<()> {
    let Some(ncu) = ncu else {
        results.notes.push(format!(
            "ncu (Nsight Compute) was not found on the PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin: {} shape{} not profiled ({}); pass --ncu PATH to profile",
            targets.len(),
            if targets.len() == 1 { "" } else { "s" },
            targets
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return Ok(());
    };
    std::fs::create_dir_all(&args.profile_dir).with_context(|| {
        format!(
            "cannot create the profile directory {}",
            args.profile_dir.display()
        )
    })?;
    let started = Instant::now();
    let budget = Duration::from_secs(args.profile_budget_s);
    let mut skipped = Vec::new();
    let mut blocked: Option<String> = None;
    for (name, reason) in targets {
        let left = budget.saturating_sub(started.elapsed());
        if left.is_zero() || blocked.is_some() {
            skipped.push(name.clone());
            continue;
        }
        let mut profile = ShapeProfile {
            reason: *reason,
            base: None,
            candidate: None,
            error: None,
        };
        let harness = sides.base.unwrap_or(sides.candidate);
        let mut plan: Vec<(&str, &Path)> = Vec::new();
        if let Some(b) = sides.base {
            plan.push(("base", b));
        }
        plan.push(("candidate", sides.candidate));
        for (side, kernels) in plan {
            let left = budget.saturating_sub(started.elapsed());
            let outcome = if left.is_zero() {
                Err(ProfileError::BudgetSpent(args.profile_budget_s))
            } else {
                profile_one(&ncu, args, sides.config, kernels, harness, name, side, left)
            };
            match outcome {
                Ok(p) => match side {
                    "base" => profile.base = Some(p),
                    _ => profile.candidate = Some(p),
                },
                Err(e) => {
                    if matches!(e, ProfileError::CountersBlocked) {
                        blocked = Some(
                            "ncu may not read this GPU's performance counters (ERR_NVGPUCTRPERM): allow it for non-admin users (NVreg_RestrictProfilingToAdminUsers=0) on the runner".into(),
                        );
                    }
                    let msg = format!("{side}: {e}");
                    profile.error = Some(match profile.error.take() {
                        Some(prev) => format!("{prev}; {msg}"),
                        None => msg,
                    });
                }
            }
        }
        if let Some(s) = results.shapes.iter_mut().find(|s| &s.name == name) {
            s.profile = Some(profile);
        }
    }
    if let Some(why) = blocked {
        results.notes.push(why);
    }
    if !skipped.is_empty() {
        results.notes.push(format!(
            "the profiling budget ({} s, --profile-budget-s) ran out before {}",
            args.profile_budget_s,
            skipped.join(", ")
        ));
    }
    results.profiling = Some(ProfilingInfo {
        ncu_version: tool::version(&ncu),
        seconds: started.elapsed().as_secs_f64(),
        budget_s: args.profile_budget_s as f64,
        dir: Some(args.profile_dir.display().to_string()),
    });
    Ok(())
}

/// Why one side of one shape was not profiled. A GPU whose counters ncu may not read
/// ([`ProfileError::CountersBlocked`]) stops the profiling of the run; the rest is said on
/// the shape.
#[derive(Debug, thiserror::Error)]
enum ProfileError {
    #[error("the profiling budget ({0} s) ran out")]
    BudgetSpent(u64),
    #[error("ncu timed out after {0:.0} s")]
    TimedOut(f64),
    /// ncu may not read this GPU's performance counters.
    #[error("ncu failed (ERR_NVGPUCTRPERM)")]
    CountersBlocked,
    /// ncu failed otherwise: the last line it printed.
    #[error("ncu failed ({0})")]
    Failed(String),
    #[error("ncu --import failed ({0})")]
    Import(String),
    /// ncu could not be started, or its raw page not read.
    #[error("{0}")]
    Tool(String),
    /// ncu's raw page has no profile of the kernel.
    #[error(transparent)]
    RawCsv(#[from] crate::profile::RawCsvError),
}

/// One side of one shape: ncu on a `kernel-run` process, then its raw page read back.
#[allow(clippy::too_many_arguments)]
fn profile_one(
    ncu: &Path,
    args: &ProfileRequest,
    config: &Path,
    kernels: &Path,
    harness: &Path,
    shape: &str,
    side: &str,
    limit: Duration,
) -> Result<KernelProfile, ProfileError> {
    // The shape name is a validated config name and `side` a constant: a plain file name.
    let stem = format!("{shape}-{side}");
    let rep = args.profile_dir.join(format!("{stem}.ncu-rep"));
    let shapes = [shape.to_owned()];
    let program = KernelRun {
        config,
        kernels,
        harness,
        shapes: &shapes,
        no_reference: true,
        // ncu replays each kernel; its run's own limit bounds the program's waits
        max_wait_s: Some(limit.as_secs().max(1)),
    }
    .args()
    .map_err(|e| ProfileError::Tool(e.to_string()))?;
    let mut cmd = Command::new(ncu);
    restrict(&mut cmd, Child::Gpu);
    // --clock-control none: the GPU's clocks as the gate measured them (and never changed).
    cmd.args([
        "--clock-control",
        "none",
        "--kernel-name",
        "regex:^attention_fwd_",
        "--launch-count",
        "1",
    ]);
    for s in SECTIONS {
        cmd.args(["--section", s]);
    }
    cmd.args(["--metrics", &EXTRA_METRICS.join(",")])
        .arg("--export")
        .arg(args.profile_dir.join(&stem))
        .arg("--force-overwrite")
        .args(&program);
    let ran = tool::run_bounded(cmd, limit).map_err(|e| ProfileError::Tool(e.to_string()))?;
    if ran.timed_out() {
        return Err(ProfileError::TimedOut(ran.seconds));
    }
    if !ran.success() || !rep.is_file() {
        return Err(if ran.output.contains("ERR_NVGPUCTRPERM") {
            ProfileError::CountersBlocked
        } else {
            ProfileError::Failed(ran.last_line())
        });
    }
    let mut cmd = Command::new(ncu);
    restrict(&mut cmd, Child::Gpu)
        .arg("--import")
        .arg(&rep)
        .args(["--csv", "--page", "raw", "--print-units", "base"]);
    let ran = tool::run_bounded(cmd, Duration::from_secs(120))
        .map_err(|e| ProfileError::Tool(e.to_string()))?;
    if !ran.success() {
        return Err(ProfileError::Import(ran.last_line()));
    }
    // ncu's own messages (`==PROF==`, warnings) may share the output: the CSV's lines are
    // the quoted ones.
    let csv: Vec<&str> = ran.output.lines().filter(|l| l.starts_with('"')).collect();
    let mut p = parse_raw_csv(&csv.join("\n"), "attention_fwd_")?;
    p.report_file = Some(format!("{stem}.ncu-rep"));
    Ok(p)
}

/// Refuses profile options that make no sense for a run, before it measures.
pub(crate) fn check_args(args: &ProfileRequest) -> Result<()> {
    if let Some(p) = &args.ncu
        && !p.is_file()
    {
        bail!("--ncu {}: no such file", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Dtype, ShapeParams};
    use crate::results::ShapeResult;

    fn args(profile: &[&str], slowest: u32, no_profile: bool) -> ProfileRequest {
        ProfileRequest {
            profile: profile.iter().map(|s| s.to_string()).collect(),
            profile_slowest: slowest,
            no_profile,
            profile_dir: "unused".into(),
            profile_budget_s: 10,
            ncu: None,
        }
    }

    fn results() -> ResultsFile {
        let shape = |seq_len: u32, p50: f64, verdict: Verdict| {
            let params = ShapeParams {
                batch: 1,
                heads: 8,
                seq_len,
                head_dim: 64,
                causal: false,
                dtype: Dtype::Float16,
            };
            let mut s = ShapeResult::new(params);
            s.verdict = verdict;
            s.summary = crate::stats::Sample::new(vec![p50, p50, p50])
                .ok()
                .map(|x| x.summary());
            s
        };
        let mut r = crate::run::pipeline::failed_run(None, &anyhow::anyhow!("x"));
        r.error = None;
        r.shapes = vec![
            shape(128, 10.0, Verdict::Pass),
            shape(256, 30.0, Verdict::Regression),
            shape(512, 50.0, Verdict::Pass),
        ];
        r
    }

    #[test]
    fn regressions_first_then_requested_then_slowest_without_repeats() {
        let r = results();
        let t = targets(&r, &args(&["b1h8s128d64_f16"], 2, false));
        let names: Vec<(&str, ProfileReason)> =
            t.iter().map(|(n, why)| (n.as_str(), *why)).collect();
        assert_eq!(
            names,
            [
                ("b1h8s256d64_f16", ProfileReason::Regression),
                ("b1h8s128d64_f16", ProfileReason::Requested),
                ("b1h8s512d64_f16", ProfileReason::Slowest),
            ]
        );
        assert!(targets(&r, &args(&[], 0, true)).is_empty());
    }

    #[test]
    fn without_ncu_one_note_and_no_failure() {
        let mut r = results();
        let sides = Sides {
            config: Path::new("c.yaml"),
            candidate: Path::new("k"),
            base: None,
        };
        let a = args(&[], 0, false);
        let t = targets(&r, &a);
        profile_with(&mut r, &a, &sides, &t, None).unwrap();
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(r.notes[0].contains("ncu") && r.notes[0].contains("b1h8s256d64_f16"));
        assert!(r.shapes.iter().all(|s| s.profile.is_none()));
        assert!(r.profiling.is_none());
        assert_eq!(r.shapes[1].verdict, Verdict::Regression);
    }
}
