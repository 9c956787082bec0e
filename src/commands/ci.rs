//! `ci-gate ci`: the pipeline for GitHub Actions. Writes the results file (also when no
//! verdict could be reached), the job summary, one annotation per failing shape, and step
//! outputs. Exit codes as everywhere: 0 pass, 1 fail, 2 no verdict. It measures as `local`
//! does (one [`RunRequest`], one `prepare`); only the publishing differs.

use anyhow::Result;

use crate::cli::CiArgs;
use crate::config::Config;
use crate::outcome::Outcome;
use crate::run::pipeline::failed_run;
use crate::run::prepare::prepare;
use crate::run::publish::publish;
use crate::run::untrusted::SuspendedCommands;
use crate::run::{BackendChoice, Run, RunRequest};
use crate::shard::ShardInfo;

use super::requests::with_flags;

pub(crate) fn run_ci(args: &CiArgs) -> Result<Outcome> {
    crate::files::check_writable(&args.out)?;
    // The pull request's gate: parity, the stored baseline, the peers unless `--no-peers`, a
    // drift traced with git.
    let request = with_flags(
        RunRequest {
            shard: args.sharding.shard,
            fail_on_drift: args.base.fail_on_drift,
            ..RunRequest::gate(&args.config)
        },
        &args.run,
    );
    // Known as early as possible, so that a results file without a verdict still names the
    // config and the shard (merge then says which shard failed, and why).
    let mut config: Option<Config> = None;
    let mut shard: Option<ShardInfo> = None;
    let measured = crate::config::load_selected(&request.config, &[])
        .map_err(anyhow::Error::from)
        .and_then(|(c, _)| {
            let (shapes, info) = Run::select(&request, &c)?;
            config = Some(c.clone());
            shard = info.clone();
            Ok(Run {
                request,
                config: c,
                shapes,
                shard: info,
                backend: BackendChoice::from_env()?,
            })
        })
        .and_then(|run| {
            prepare(
                run,
                &(&args.base).into(),
                (&args.profile).into(),
                args.sharding.devices.as_deref(),
                false,
            )
        })
        .and_then(|prepared| {
            // The GPU section, the only code that compiles or launches the pull request's
            // kernels. Their `printf` reaches this process's stdout, so workflow commands are
            // suspended around it; they resume once every GPU context is gone, before the
            // results are published.
            let gpu = prepared.lock_gpu()?;
            let suspended = SuspendedCommands::begin()?;
            on_hang(args, config.as_ref(), shard.clone());
            let measured = prepared.measure(&gpu);
            suspended.end();
            drop(gpu);
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
    crate::backend::hang::set_handler(Box::new(move |message| {
        let error = anyhow::anyhow!("{message}");
        let mut failed = failed_run(config.as_ref(), &error);
        failed.shard = shard.clone();
        failed.fail_on_drift = fail_on_drift;
        crate::run::untrusted::resume_now();
        if let Err(e) = publish(failed, &out, Some(error)) {
            eprintln!("{}", crate::text::error_message(&format!("{e:#}")));
        }
    }));
}
