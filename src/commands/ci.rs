//! `ci-gate ci`: the pipeline for GitHub Actions. Writes the results file (also when no
//! verdict could be reached), the job summary, one annotation per failing shape, and step
//! outputs. Exit codes as everywhere: 0 pass, 1 fail, 2 no verdict. It measures as `local`
//! does (one [`RunRequest`] resolved by [`Run::resolve`], one `prepare`); only the
//! publishing differs.

use anyhow::Result;

use crate::cli::CiArgs;
use crate::outcome::Outcome;
use crate::results::ResultsFile;
use crate::run::pipeline::{HangOut, NoVerdict, on_hang};
use crate::run::prepare::prepare;
use crate::run::publish::publish;
use crate::run::untrusted::SuspendedCommands;
use crate::run::{Run, RunRequest};

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
    let mut record = NoVerdict {
        fail_on_drift: request.fail_on_drift,
        ..NoVerdict::default()
    };
    match measure(args, request, &mut record) {
        Ok(results) => publish(results, &args.out, None),
        Err(e) => publish(record.results(&e), &args.out, Some(e)),
    }
}

/// Resolves, prepares and measures `request`. `record` learns the config and the shard as
/// soon as they are resolved, so that a results file without a verdict still names them
/// (`merge` then says which shard failed, and why).
fn measure(args: &CiArgs, request: RunRequest, record: &mut NoVerdict) -> Result<ResultsFile> {
    let run = match Run::resolve(request) {
        Ok(run) => run,
        Err(unresolved) => {
            if let Some(resolved) = unresolved.resolved {
                let (config, shard) = *resolved;
                record.config = Some(config);
                record.shard = shard;
            }
            return Err(unresolved.error);
        }
    };
    *record = NoVerdict::of(&run);
    let prepared = prepare(
        run,
        &(&args.base).into(),
        (&args.profile).into(),
        args.sharding.devices.as_deref(),
        false,
    )?;
    // The GPU section, the only code that compiles or launches the pull request's kernels.
    // Their `printf` reaches this process's stdout, so workflow commands are suspended around
    // it; they resume once every GPU context is gone, before the results are published.
    let gpu = prepared.lock_gpu()?;
    let suspended = SuspendedCommands::begin()?;
    on_hang(record.clone(), HangOut::Publish(args.out.clone()));
    let measured = prepared.measure(&gpu);
    suspended.end();
    drop(gpu);
    measured
}
