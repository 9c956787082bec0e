//! `ci-gate local`: the whole pipeline on this machine's GPU, a report on stdout.

use anyhow::{Context, Result, bail};

use super::Outcome;
use super::git::resolve_base;
use super::pipeline::{load_config, on_hang};
use super::request::RunRequest;
use crate::cli::LocalArgs;
use crate::report::{Format, Report, render};

pub fn run_local(args: &LocalArgs) -> Result<Outcome> {
    let (config, _) = load_config(&args.config.config, &args.shapes)?;
    if let Some(f) = args.inject
        && !(f > 0.0 && f < 1.0)
    {
        bail!("--inject {f}: the slowdown must be a fraction between 0 and 1");
    }
    super::profile::check_args(&args.profile)?;
    super::profile::check_request(&args.profile, &config)?;
    let devices = match &args.sharding.devices {
        Some(list) => Some(super::devices::parse_devices(list)?),
        None => None,
    };
    let base = resolve_base(&args.base, &args.config.kernels, true)?;
    // Said first, on stderr (stdout stays the report): what the candidate is measured against.
    match (&base.kernels, &base.note) {
        (Some(k), _) => eprintln!("ci-gate: base kernels from {}", k.source),
        (None, Some(note)) => eprintln!("ci-gate: {note}"),
        (None, None) => {}
    }
    let request = RunRequest {
        config: args.config.config.clone(),
        kernels: args.config.kernels.clone(),
        baselines: args.config.baselines.clone(),
        shapes: args.shapes.clone(),
        shard: args.sharding.shard,
        base: base.kernels.clone(),
        ab_always: args.ab_always,
        compare: !args.no_compare,
        parity: !args.no_parity,
        peers: !args.no_peers,
        rounds: args.rounds,
        inject: args.inject,
        fail_on_drift: args.base.fail_on_drift,
        trace_drift: true,
        progress: args.format == Format::Table,
    };
    let mut results = match &devices {
        Some(devices) => super::devices::run_on_devices(devices, &request)?,
        None => {
            on_hang(&config, args.out.clone());
            request.measure_here()?
        }
    };
    results.notes.extend(base.note.clone());
    super::profile::profile_after(
        &mut results,
        &args.profile,
        &args.config.config,
        &args.config.kernels,
        base.kernels.as_ref(),
    );
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
