//! `ci-gate local`: the whole pipeline on this machine's GPU, a report on stdout.

use anyhow::{Context, Result};

use crate::cli::LocalArgs;
use crate::outcome::Outcome;
use crate::report::{Format, Report, render};
use crate::run::pipeline::{HangOut, NoVerdict, failed_run, on_hang};
use crate::run::prepare::prepare;
use crate::run::{Run, RunRequest};

use super::requests::with_flags;

pub(crate) fn run_local(args: &LocalArgs) -> Result<Outcome> {
    // Before anything is measured: a results file that could not be written loses the run.
    if let Some(out) = &args.out {
        crate::files::check_writable(out)?;
    }
    let request = with_flags(
        RunRequest {
            shapes: args.shapes.clone(),
            shard: args.sharding.shard,
            ab_always: args.ab_always,
            compare: !args.no_compare,
            parity: !args.no_parity,
            rounds: args.rounds,
            inject: args.inject,
            fail_on_drift: args.base.fail_on_drift,
            progress: args.format == Format::Table,
            ..RunRequest::gate(&args.config)
        },
        &args.run,
    );
    let prepared = prepare(
        Run::resolve(request)?,
        &(&args.base).into(),
        (&args.profile).into(),
        args.sharding.devices.as_deref(),
        true,
    )?;
    // Said first, on stderr (stdout stays the report): what the candidate is measured against.
    if let Some(line) = prepared.base_line() {
        eprintln!("ci-gate: {line}");
    }
    let run = &prepared.run;
    if prepared.measures_here() {
        on_hang(
            NoVerdict::config(&run.config),
            HangOut::Save(args.out.clone()),
        );
    }
    let measured = prepared.lock_gpu().and_then(|gpu| prepared.measure(&gpu));
    let results = match measured {
        Ok(results) => results,
        Err(e) => {
            // No verdict (exit 2): the results file says why, as `ci` writes it.
            if let Some(out) = &args.out
                && let Err(save) =
                    failed_run(prepared.measures_here().then_some(&run.config), &e).save(out)
            {
                eprintln!(
                    "{}",
                    crate::text::error_message(&format!(
                        "the results could not be saved to {}: {save:#}",
                        out.display()
                    ))
                );
            }
            return Err(e);
        }
    };
    if let Some(out) = &args.out {
        results
            .save(out)
            .with_context(|| "the results were measured but could not be saved")?;
    }
    let report = Report::from_results(&results);
    let text = render(&report, args.format, args.wide);
    print!("{text}");
    Ok(Outcome::from_passed(results.passed()))
}
