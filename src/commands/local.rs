//! `ci-gate local`: the whole pipeline on this machine's GPU, a report on stdout.

use anyhow::{Context, Result};

use crate::cli::LocalArgs;
use crate::outcome::Outcome;
use crate::report::{Format, Report, render};
use crate::run::pipeline::{failed_run, load_config, on_hang};
use crate::run::prepare::prepare;
use crate::run::request::RunRequest;

pub fn run_local(args: &LocalArgs) -> Result<Outcome> {
    // Before anything is measured: a results file that could not be written loses the run.
    if let Some(out) = &args.out {
        crate::files::check_writable(out)?;
    }
    let request = RunRequest {
        config: args.config.config.clone(),
        kernels: args.config.kernels.clone(),
        baselines: args.config.baselines.clone(),
        shapes: args.shapes.clone(),
        shard: args.sharding.shard,
        base: None,
        ab_always: args.ab_always,
        compare: !args.no_compare,
        parity: !args.no_parity,
        peers: !args.no_peers,
        rounds: args.rounds,
        inject: args.inject,
        fail_on_drift: args.base.fail_on_drift,
        trace_drift: true,
        progress: args.format == Format::Table,
        energy: args.energy,
    };
    let run = prepare(
        request,
        &args.base,
        &args.profile,
        args.sharding.devices.as_deref(),
        true,
    )?;
    // Said first, on stderr (stdout stays the report): what the candidate is measured against.
    if let Some(line) = run.base_line() {
        eprintln!("ci-gate: {line}");
    }
    let config = if run.measures_here() {
        let (config, _) = load_config(&args.config.config, &args.shapes)?;
        on_hang(&config, args.out.clone());
        Some(config)
    } else {
        None
    };
    // One ci-gate run per GPU at a time (`sharing`): held through the measuring and the
    // profiles; a `--devices` child takes its own GPU's.
    let measured = if run.measures_here() {
        crate::run::sharing::lock_gpu()
    } else {
        Ok(None)
    }
    .and_then(|_gpu| run.measure(&args.profile));
    let results = match measured {
        Ok(results) => results,
        Err(e) => {
            // No verdict (exit 2): the results file says why, as `ci` writes it.
            if let Some(out) = &args.out
                && let Err(save) = failed_run(config.as_ref(), &e).save(out)
            {
                eprintln!(
                    "error: the results could not be saved to {}: {save:#}",
                    out.display()
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
