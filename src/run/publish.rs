//! What `ci` and `merge --ci` leave in GitHub Actions: the results file (also when no verdict
//! could be reached), the report on stdout, the job summary, one annotation per failing
//! shape, and step outputs.

use anyhow::{Context, Result};

use crate::github::GithubEnv;
use crate::github::actions::{Level, annotation, append_step_summary, write_outputs};
use crate::outcome::Outcome;
use crate::report::{Exporter, MarkdownExporter, Report, TableExporter, pct};
use crate::results::ResultsFile;
use crate::text::clip_text;
use crate::validate::{MAX_ERROR_LEN, Untrusted};
use crate::verdict::Verdict;

/// What `ci` (and `merge --ci`) leave in GitHub Actions: the results file (also when no
/// verdict could be reached), the report on stdout, the job summary, one annotation per
/// failing shape, and step outputs. A shard's verdicts are provisional (`merge` decides, and
/// annotates), but its exit code is its provisional verdict — 1 on a failing shape, 2
/// without a verdict — so that no job is green on a regression; its `verdict` output is
/// `shard`.
pub(crate) fn publish(
    mut results: ResultsFile,
    out: &std::path::Path,
    failure: Option<anyhow::Error>,
) -> Result<Outcome> {
    let gh = GithubEnv::from_env();
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
        .save(out)
        .with_context(|| format!("cannot save the results to {}", out.display()))?;
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
    let annotate = crate::github::actions::in_actions();
    if annotate {
        annotate_failures(&results);
    }
    if let Some(path) = &gh.output {
        write_step_outputs(path, &results, out, failure.is_some())?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(Outcome::from_passed(results.passed())),
    }
}

/// One annotation per failing shape, then the warnings and the run's error (workflow
/// commands: only in GitHub Actions; elsewhere the table and the error on stderr say the
/// same). A shard's verdicts are provisional: the merged run annotates its shapes.
fn annotate_failures(results: &ResultsFile) {
    let policy = results.policy();
    if results.shard.is_none() {
        for shape in results.shapes.iter().filter(|s| s.fails(policy)) {
            println!(
                "{}",
                annotation(
                    Level::Error,
                    &format!("ci-gate: {} in {}", shape.verdict, shape.name),
                    &failure_message(shape)
                )
            );
        }
    }
    for w in &results.warnings {
        println!("{}", annotation(Level::Warning, "ci-gate", w));
    }
    if let Some(e) = &results.error {
        println!("{}", annotation(Level::Error, "ci-gate: no verdict", e));
    }
}

/// Why a shape fails, in one line: its error, its parity figures, or the comparison that
/// decided it (the stored one for a drift).
fn failure_message(shape: &crate::results::ShapeResult) -> String {
    match (&shape.error, shape.primary(), &shape.parity) {
        (Some(e), _, _) => e.clone(),
        (None, _, Some(p)) if shape.verdict == Verdict::ParityFail => format!(
            "parity lost: rel L2 {:.2e} (tolerance {:.1e}), max abs {:.2e} (tolerance {:.1e}){}, {} unwritten, {} NaN/Inf",
            p.rel_l2,
            p.tolerance.rel_l2,
            p.max_abs,
            p.tolerance.max_abs,
            p.centered_phrase(),
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
    }
}

/// The step outputs: the verdict (`error` without one, `shard` for a shard), the count of
/// each verdict, and the results file.
fn write_step_outputs(
    path: &std::path::Path,
    results: &ResultsFile,
    out: &std::path::Path,
    failed: bool,
) -> Result<()> {
    let count = |v: Verdict| {
        results
            .shapes
            .iter()
            .filter(|s| s.verdict == v)
            .count()
            .to_string()
    };
    let verdict = if failed {
        "error"
    } else if results.shard.is_some() {
        "shard"
    } else if results.passed() {
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
            ("results", out.display().to_string()),
        ],
    )
    .with_context(|| format!("cannot write the step outputs {}", path.display()))
}
