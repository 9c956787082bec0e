//! `ci-gate ci`: the pipeline for GitHub Actions. Writes the results file (also when no
//! verdict could be reached), the job summary, one annotation per failing shape, and step
//! outputs. Exit codes as everywhere: 0 pass, 1 fail, 2 no verdict.

use anyhow::Result;

use super::Outcome;
use super::git::{ResolvedBase, resolve_base};
use super::pipeline::{AbMode, Against, RunPlan, failed_run, load_config, run};
use super::publish::publish;
use super::untrusted::SuspendedCommands;
use crate::baseline::BaselineStore;
use crate::cli::CiArgs;
use crate::config::{Config, ShapeParams};
use crate::results::ResultsFile;
use crate::shard::ShardInfo;
use crate::verdict::Policy;

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
