//! `ci-gate local`: the whole pipeline on this machine's GPU, a report on stdout.

use anyhow::{Context, Result, bail};

use super::Outcome;
use super::git::resolve_base;
use super::pipeline::{AbMode, Against, RunPlan, load_config, run};
use crate::baseline::BaselineStore;
use crate::cli::LocalArgs;
use crate::report::{Format, Report, render};
use crate::verdict::Policy;

/// The arguments every `--devices` child repeats from this command line.
fn child_extra(args: &LocalArgs) -> Vec<String> {
    let mut extra = Vec::new();
    if let Some(n) = args.rounds {
        extra.extend(["--rounds".into(), n.to_string()]);
    }
    if let Some(f) = args.inject {
        extra.extend(["--inject".into(), f.to_string()]);
    }
    for (on, flag) in [
        (args.ab_always, "--ab-always"),
        (args.no_compare, "--no-compare"),
        (args.no_parity, "--no-parity"),
        (args.no_peers, "--no-peers"),
        (args.base.fail_on_drift, "--fail-on-drift"),
    ] {
        if on {
            extra.push(flag.into());
        }
    }
    extra
}

pub fn run_local(args: &LocalArgs) -> Result<Outcome> {
    let (config, shapes) = load_config(&args.config.config, &args.shapes)?;
    if let Some(f) = args.inject
        && !(f > 0.0 && f < 1.0)
    {
        bail!("--inject {f}: the slowdown must be a fraction between 0 and 1");
    }
    super::profile::check_args(&args.profile)?;
    super::profile::check_request(&args.profile, &config)?;
    let super::devices::Split {
        devices,
        shapes,
        shard,
    } = super::devices::Split::of(&args.sharding, &config, shapes)?;
    let base = resolve_base(&args.base, &args.config.kernels, true)?;
    // Said first, on stderr (stdout stays the report): what the candidate is measured against.
    match (&base.kernels, &base.note) {
        (Some(k), _) => eprintln!("ci-gate: base kernels from {}", k.source),
        (None, Some(note)) => eprintln!("ci-gate: {note}"),
        (None, None) => {}
    }
    let against = if args.no_compare {
        Against::Nothing
    } else {
        Against::Store(BaselineStore::new(&args.config.baselines))
    };
    let mut results = match &devices {
        Some(devices) => super::devices::run_on_devices(
            devices,
            &super::devices::Fanout {
                config: &args.config.config,
                kernels: &args.config.kernels,
                baselines: &args.config.baselines,
                base: base.kernels.as_ref().map(|k| k.dir.as_path()),
                shapes: &args.shapes,
                extra: child_extra(args),
            },
        )?,
        None => run(RunPlan {
            config: {
                super::pipeline::on_hang(&config, args.out.clone());
                config
            },
            shapes,
            kernels: args.config.kernels.clone(),
            base: base.kernels.clone(),
            ab: if args.ab_always {
                AbMode::Always
            } else {
                AbMode::WhenDifferent
            },
            against,
            parity: !args.no_parity,
            peers: !args.no_peers,
            rounds: args.rounds,
            inject: args.inject,
            policy: Policy {
                fail_on_drift: args.base.fail_on_drift,
            },
            trace_drift: true,
            progress: args.format == Format::Table,
        })?,
    };
    if let Some(info) = shard {
        results
            .notes
            .push(super::devices::shard_note(&info, results.shapes.len()));
        results.shard = Some(info);
    }
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
