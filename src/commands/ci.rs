//! `ci-gate ci`: the pipeline for GitHub Actions. Writes the results file (also when no
//! verdict could be reached), the job summary, one annotation per failing shape, and step
//! outputs. Exit codes as everywhere: 0 pass, 1 fail, 2 no verdict.

use anyhow::Result;

use super::Outcome;
use super::git::{ResolvedBase, resolve_base};
use super::pipeline::{failed_run, load_config};
use super::publish::publish;
use super::request::RunRequest;
use super::untrusted::SuspendedCommands;
use crate::cli::CiArgs;
use crate::config::Config;
use crate::results::ResultsFile;
use crate::shard::ShardInfo;

/// What `run_ci` settles before the GPU section: nothing here compiles or launches anything.
struct Prepared {
    request: RunRequest,
    devices: Option<Vec<u32>>,
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
        // results are published.
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

/// Loads the config, checks the request, finds the shard and resolves the base: the run as a
/// [`RunRequest`] (the pull request's gate: parity, the stored baseline, the peers unless
/// `--no-peers`, a drift traced with git).
fn prepare(
    args: &CiArgs,
    config: &mut Option<Config>,
    shard: &mut Option<ShardInfo>,
) -> Result<Prepared> {
    let (c, _) = load_config(&args.config.config, &[])?;
    *config = Some(c.clone());
    super::profile::check_args(&args.profile)?;
    super::profile::check_request(&args.profile, &c)?;
    let devices = match &args.sharding.devices {
        Some(list) => Some(super::devices::parse_devices(list)?),
        None => None,
    };
    let mut request = RunRequest {
        config: args.config.config.clone(),
        kernels: args.config.kernels.clone(),
        baselines: args.config.baselines.clone(),
        shapes: Vec::new(),
        shard: args.sharding.shard,
        base: None,
        ab_always: false,
        compare: true,
        parity: true,
        peers: !args.no_peers,
        rounds: None,
        inject: None,
        fail_on_drift: args.base.fail_on_drift,
        trace_drift: true,
        progress: false,
    };
    // A shard without shapes is refused here, before anything is built.
    *shard = request.shapes()?.2;
    let base = resolve_base(&args.base, &args.config.kernels, false)?;
    request.base = base.kernels.clone();
    Ok(Prepared {
        request,
        devices,
        base,
    })
}

/// The GPU work: measure (here or in one child per device), then profile.
fn measure(args: &CiArgs, p: Prepared) -> Result<ResultsFile> {
    let Prepared {
        request,
        devices,
        base,
    } = p;
    let mut r = match &devices {
        Some(devices) => super::devices::run_on_devices(devices, &request)?,
        None => request.measure_here()?,
    };
    r.notes.extend(base.note.clone());
    super::profile::profile_after(
        &mut r,
        &args.profile,
        &args.config.config,
        &args.config.kernels,
        base.kernels.as_ref(),
    );
    Ok(r)
}
