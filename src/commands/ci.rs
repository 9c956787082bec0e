//! `ci-gate ci`: the pipeline for GitHub Actions. Writes the results file (also when no
//! verdict could be reached), the job summary, one annotation per failing shape, and step
//! outputs. Exit codes as everywhere: 0 pass, 1 fail, 2 no verdict.

use anyhow::{Context, Result};

use super::Outcome;
use super::local::{ResolvedBase, resolve_base};
use super::pipeline::{AbMode, Against, RunPlan, failed_run, load_config, run};
use super::untrusted::SuspendedCommands;
use crate::baseline::BaselineStore;
use crate::cli::CiArgs;
use crate::config::{Config, ShapeParams};
use crate::github::GithubEnv;
use crate::github::actions::{Level, annotation, append_step_summary, write_outputs};
use crate::report::{Exporter, MarkdownExporter, Report, TableExporter, pct};
use crate::results::ResultsFile;
use crate::shard::ShardInfo;
use crate::validate::{MAX_ERROR_LEN, Untrusted, clip_text};
use crate::verdict::{Policy, Verdict};

/// What `run_ci` settles before the GPU section: nothing here compiles or launches anything.
struct Prepared {
    config: Config,
    shapes: Vec<ShapeParams>,
    devices: Option<Vec<u32>>,
    shard: Option<ShardInfo>,
    base: ResolvedBase,
}

pub fn run_ci(args: &CiArgs) -> Result<Outcome> {
    // Known as early as possible, so that a results file without a verdict still names the
    // config and the shard (merge then says which shard failed, and why).
    let mut config: Option<Config> = None;
    let mut shard: Option<ShardInfo> = None;
    let measured = prepare(args, &mut config, &mut shard).and_then(|prepared| {
        // The GPU section, the only code that compiles or launches the pull request's
        // kernels. Their `printf` reaches this process's stdout, so workflow commands are
        // suspended around it; they resume once every GPU context is gone, before the
        // results are published. (A GPU watchdog belongs around this block too.)
        let suspended = SuspendedCommands::begin()?;
        on_hang(args, config.as_ref(), shard.clone());
        let measured = measure(args, prepared);
        suspended.end();
        measured
    });
    let (results, failure) = match measured {
        Ok(r) => (r, None),
        Err(e) => {
            let mut failed = failed_run(config.as_ref(), &e);
            failed.shard = shard;
            failed.fail_on_drift = args.base.fail_on_drift;
            (failed, Some(e))
        }
    };
    publish(results, &args.out, failure)
}

/// What a hung GPU does to `ci` (gpu::watchdog ends the process with exit 2 right after):
/// workflow commands resume, and the results file, job summary, annotation and step outputs
/// say which shape and side hung, as for any run without a verdict.
fn on_hang(args: &CiArgs, config: Option<&Config>, shard: Option<ShardInfo>) {
    let config = config.cloned();
    let out = args.out.clone();
    let fail_on_drift = args.base.fail_on_drift;
    crate::gpu::watchdog::set_hang_handler(Box::new(move |message| {
        let error = anyhow::anyhow!("{message}");
        let mut failed = failed_run(config.as_ref(), &error);
        failed.shard = shard.clone();
        failed.fail_on_drift = fail_on_drift;
        super::untrusted::resume_now();
        if let Err(e) = publish(failed, &out, Some(error)) {
            eprintln!("error: {e:#}");
        }
    }));
}

/// Loads the config, checks the request, splits the shapes and resolves the base.
fn prepare(
    args: &CiArgs,
    config: &mut Option<Config>,
    shard: &mut Option<ShardInfo>,
) -> Result<Prepared> {
    let (c, shapes) = load_config(&args.config.config, &[])?;
    *config = Some(c.clone());
    super::profile::check_args(&args.profile)?;
    super::profile::check_request(&args.profile, &c)?;
    let super::devices::Split {
        devices,
        shapes,
        shard: split_shard,
    } = super::devices::Split::of(&args.sharding, &c, shapes)?;
    shard.clone_from(&split_shard);
    let base = resolve_base(&args.base, &args.config.kernels, false)?;
    Ok(Prepared {
        config: c,
        shapes,
        devices,
        shard: split_shard,
        base,
    })
}

/// The GPU work: measure (here or in one child per device), then profile.
fn measure(args: &CiArgs, p: Prepared) -> Result<ResultsFile> {
    let Prepared {
        config,
        shapes,
        devices,
        shard,
        base,
    } = p;
    let mut r = match &devices {
        Some(devices) => super::devices::run_on_devices(
            devices,
            &super::devices::Fanout {
                config: &args.config.config,
                kernels: &args.config.kernels,
                baselines: &args.config.baselines,
                base: base.kernels.as_ref().map(|k| k.dir.as_path()),
                shapes: &[],
                extra: [
                    (args.base.fail_on_drift, "--fail-on-drift"),
                    (args.no_peers, "--no-peers"),
                ]
                .into_iter()
                .filter(|(on, _)| *on)
                .map(|(_, flag)| flag.to_owned())
                .collect(),
            },
        )?,
        None => run(RunPlan {
            config,
            shapes,
            kernels: args.config.kernels.clone(),
            base: base.kernels.clone(),
            ab: AbMode::WhenDifferent,
            against: Against::Store(BaselineStore::new(&args.config.baselines)),
            parity: true,
            peers: !args.no_peers,
            rounds: None,
            inject: None,
            policy: Policy {
                fail_on_drift: args.base.fail_on_drift,
            },
            trace_drift: true,
            progress: false,
        })?,
    };
    r.notes.extend(base.note.clone());
    if let Some(info) = shard {
        r.notes
            .push(super::devices::shard_note(&info, r.shapes.len()));
        r.shard = Some(info);
    }
    super::profile::profile_after(
        &mut r,
        &args.profile,
        &args.config.config,
        &args.config.kernels,
        base.kernels.as_ref(),
    );
    Ok(r)
}

/// What `ci` (and `merge --ci`) leave in GitHub Actions: the results file (also when no
/// verdict could be reached), the report on stdout, the job summary, one annotation per
/// failing shape, and step outputs. A shard's verdicts are provisional (`merge` decides, and
/// annotates), but its exit code is its provisional verdict — 1 on a failing shape, 2
/// without a verdict — so that no job is green on a regression; its `verdict` output is
/// `shard`.
pub fn publish(
    mut results: ResultsFile,
    out: &std::path::Path,
    failure: Option<anyhow::Error>,
) -> Result<Outcome> {
    let gh = GithubEnv::from_env();
    let args_out = out;
    // Error texts can be a compiler's log of the pull request's kernels: bounded as a reader
    // checks them, so that the comment job can always load the file.
    for e in results
        .shapes
        .iter_mut()
        .filter_map(|s| s.error.as_mut())
        .chain(results.error.as_mut())
    {
        *e = clip_text(e, MAX_ERROR_LEN);
    }
    // The results file is written even without a verdict, so the comment job can say why.
    results
        .save(args_out)
        .with_context(|| format!("cannot save the results to {}", args_out.display()))?;
    // Error texts can quote the pull request's kernels (a compiler log): on one line, without
    // control characters, before anything is printed to the log.
    results.neutralise();

    let mut report = Report::from_results(&results);
    report.run_url = gh.run_url();
    // Without a verdict the error says it all (once, from main); with one, the table.
    if failure.is_none() {
        print!("{}", TableExporter::plain().render(&report));
    }
    if let Some(path) = &gh.step_summary {
        append_step_summary(path, &MarkdownExporter.render(&report))
            .with_context(|| format!("cannot write the job summary {}", path.display()))?;
    }
    let policy = Policy {
        fail_on_drift: results.fail_on_drift,
    };
    let sharded = results.shard.is_some();
    // Annotations are workflow commands: only in GitHub Actions (elsewhere the table and the
    // error on stderr say the same).
    let annotate = crate::github::actions::in_actions();
    for shape in &results.shapes {
        // A shard's verdicts are provisional: the merged run annotates.
        if !annotate
            || sharded
            || !policy.fails(shape.verdict, shape.drift.as_ref().map(|d| d.cause))
        {
            continue;
        }
        let message = match (&shape.error, shape.primary(), &shape.parity) {
            (Some(e), _, _) => e.clone(),
            (None, _, Some(p)) if shape.verdict == Verdict::ParityFail => format!(
                "parity lost: rel L2 {:.2e} (tolerance {:.1e}), max abs {:.2e} (tolerance {:.1e}), {} unwritten, {} NaN/Inf",
                p.rel_l2,
                p.tolerance.rel_l2,
                p.max_abs,
                p.tolerance.max_abs,
                p.unwritten,
                p.nan_or_inf
            ),
            (None, Some(c), _) => {
                let c = match (shape.verdict, &shape.stored) {
                    (Verdict::Drift, Some(s)) => s,
                    _ => c,
                };
                format!(
                    "{} {} against the {} (p50 {:.3} → {:.3} µs), {:.0}% CI ({}) [{}, {}], one-sided bound {}, margin p {:.1e}",
                    c.method.ratio_label(),
                    pct(c.ratio),
                    c.reference,
                    c.p50_base,
                    c.p50_cand,
                    c.confidence * 100.0,
                    c.method.interval_label(),
                    pct(c.ci_low),
                    pct(c.ci_high),
                    pct(c.lower_bound),
                    c.margin_p
                )
            }
            _ => shape.verdict.to_string(),
        };
        println!(
            "{}",
            annotation(
                Level::Error,
                &format!("ci-gate: {} in {}", shape.verdict, shape.name),
                &message
            )
        );
    }
    if annotate {
        for w in &results.warnings {
            println!("{}", annotation(Level::Warning, "ci-gate", w));
        }
        if let Some(e) = &results.error {
            println!("{}", annotation(Level::Error, "ci-gate: no verdict", e));
        }
    }
    if let Some(path) = &gh.output {
        let count = |v: Verdict| {
            results
                .shapes
                .iter()
                .filter(|s| s.verdict == v)
                .count()
                .to_string()
        };
        let verdict = if failure.is_some() {
            "error"
        } else if sharded {
            "shard"
        } else if results.passed {
            "pass"
        } else {
            "fail"
        };
        write_outputs(
            path,
            &[
                ("verdict", verdict.to_owned()),
                ("regressions", count(Verdict::Regression)),
                ("improvements", count(Verdict::Improvement)),
                ("parity_failures", count(Verdict::ParityFail)),
                ("errors", count(Verdict::Error)),
                ("inconclusive", count(Verdict::Inconclusive)),
                ("drift", count(Verdict::Drift)),
                ("no_baseline", count(Verdict::NoBaseline)),
                ("results", args_out.display().to_string()),
            ],
        )
        .with_context(|| format!("cannot write the step outputs {}", path.display()))?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(Outcome::from_passed(results.passed)),
    }
}
