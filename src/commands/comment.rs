//! `ci-gate comment --from RESULTS.json`: posts the PR comment or updates the one posted
//! before. The verdict is printed whatever happens to the post.

use anyhow::{Context, Result, anyhow};

use crate::cli::CommentArgs;
use crate::github::actions::append_step_summary;
use crate::github::{CommentOutcome, GithubEnv, post_or_update_comment};
use crate::outcome::Outcome;
use crate::report::{Exporter, MarkdownExporter, Report};
use crate::results::ResultsFile;
use crate::text::terminal_text;

pub(crate) fn run_comment(args: &CommentArgs) -> Result<Outcome> {
    let results = ResultsFile::load(&args.from)?;
    let gh = GithubEnv::from_env();
    let mut report = Report::from_results(&results);
    report.run_url = gh.run_url();
    let body = MarkdownExporter.render(&report);
    println!("ci-gate: {}", report.headline());

    // The report is on disk before anything can fail (the event file, the repository, the
    // network): a failure below leaves it there, and says so.
    write_fallback(&args.fallback, &body)?;
    let outcome = match post(args, &gh, &body) {
        Ok(outcome) => outcome,
        Err(e) => {
            let summary = gh
                .step_summary
                .as_ref()
                .is_some_and(|path| append_step_summary(path, &body).is_ok());
            return Err(e.context(format!(
                "posting the PR comment failed (the verdict above stands); the report is in {}{}",
                args.fallback.display(),
                if summary { " and the job summary" } else { "" }
            )));
        }
    };
    // The link and the reason carry text from GitHub's answers: one line, no controls.
    match outcome {
        CommentOutcome::Created { url, .. } => {
            println!("posted the PR comment: {}", terminal_text(&url))
        }
        CommentOutcome::Updated { url, .. } => {
            println!("updated the PR comment: {}", terminal_text(&url))
        }
        CommentOutcome::WrittenToFile { reason, .. } => {
            println!("did not post the comment: {}", terminal_text(&reason));
            // On a fork's pull request the job summary is where a reader finds the report.
            if let Some(summary) = &gh.step_summary {
                append_step_summary(summary, &body).with_context(|| {
                    format!("cannot write the job summary {}", summary.display())
                })?;
                println!("the report is in the job summary");
            }
        }
    }
    // Fail closed: a results file that holds no verdict is never a pass.
    if let Some(e) = &results.error {
        return Err(anyhow!(
            "{} records a run that reached no verdict: {}",
            args.from.display(),
            terminal_text(e.lines().next().unwrap_or_default())
        ));
    }
    if results.shapes.is_empty() {
        return Err(anyhow!(
            "{} holds no shapes, so there is no verdict",
            args.from.display()
        ));
    }
    Ok(Outcome::Pass)
}

/// The pull request's number, then the post (or, without a token, the file).
fn post(args: &CommentArgs, gh: &GithubEnv, body: &str) -> Result<CommentOutcome> {
    let pr = match args.pr {
        Some(n) => Some(n),
        None => gh.pr_number()?,
    };
    Ok(match (pr, gh.token.is_some()) {
        (Some(pr), _) => post_or_update_comment(gh, pr, body, &args.fallback)?,
        // Without a token nothing is posted anyway: write the body, no PR number needed.
        (None, false) => post_or_update_comment(gh, 0, body, &args.fallback)?,
        (None, true) => {
            return Err(anyhow!(
                "no pull request number: pass --pr N, or run on a pull_request event ($GITHUB_EVENT_PATH)"
            ));
        }
    })
}

/// The body, as the file a reader opens when nothing was posted.
fn write_fallback(path: &std::path::Path, body: &str) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create the directory of {}", path.display()))?;
    }
    std::fs::write(path, body)
        .with_context(|| format!("cannot write the comment body to {}", path.display()))
}
