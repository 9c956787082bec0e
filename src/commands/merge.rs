//! `ci-gate merge`: the results files of a sharded run joined into one under the base
//! commit's rules (`shard::merge`), reported, and in GitHub Actions published as `ci`
//! publishes a run. A shard measured on the simulated GPU is no measurement: it is refused
//! unless merge itself runs under the simulation (tests).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use crate::cli::MergeArgs;
use crate::outcome::Outcome;
use crate::report::{Report, render};
use crate::results::ResultsFile;
use crate::shard::merge::{Rules, label, merge};

pub(crate) fn run_merge(args: &MergeArgs) -> Result<Outcome> {
    if let Some(out) = &args.out {
        crate::files::check_writable(out)?;
    }
    let mut config = None;
    let merged = (|| -> Result<ResultsFile> {
        let (c, shapes) = crate::config::load_selected(&args.config, &[])?;
        let c = config.insert(c);
        let simulating = crate::run::BackendChoice::from_env()?.simulated();
        let mut shards = Vec::new();
        for path in &args.results {
            let r = ResultsFile::load(path)?;
            shards.push((path.clone(), r));
        }
        refuse_simulated(&shards, simulating)?;
        merge(
            shards,
            &Rules {
                config: c,
                shapes: &shapes,
                baselines: &args.baselines,
                fail_on_drift: args.fail_on_drift,
            },
        )
    })();
    if args.ci {
        let Some(out) = args.out.as_deref() else {
            bail!("--ci needs --out FILE: the merged results file the comment job reads");
        };
        return match merged {
            Ok(m) => crate::run::publish::publish(m, out, None),
            Err(e) => {
                let mut failed = crate::run::pipeline::failed_run(config.as_ref(), &e);
                failed.fail_on_drift = args.fail_on_drift;
                crate::run::publish::publish(failed, out, Some(e))
            }
        };
    }
    let merged = merged?;
    if let Some(out) = &args.out {
        merged
            .save(out)
            .with_context(|| format!("cannot save the merged results to {}", out.display()))?;
    }
    let report = Report::from_results(&merged);
    let text = render(&report, args.format, args.wide);
    print!("{text}");
    Ok(Outcome::from_passed(merged.passed()))
}

/// Refuses a shard measured on the simulated GPU, whose times its kernels' own `ci-gate-sim`
/// lines decide, unless this merge simulates too (`CI_GATE_SIMULATE`, where
/// `sim::simulation_seed` allows it: tests, never GitHub Actions). A `--devices` run
/// merges its own children, which simulate exactly when it does, so only the command asks.
fn refuse_simulated(shards: &[(PathBuf, ResultsFile)], simulating: bool) -> Result<()> {
    if simulating {
        return Ok(());
    }
    for (p, r) in shards {
        if r.environment.as_ref().is_some_and(crate::sim::is_simulated) {
            bail!(
                "{} was measured on the simulated GPU (CI_GATE_SIMULATE), a test device whose times the kernels' own `ci-gate-sim` lines decide: merge joins only shards measured on a GPU",
                label(p, r)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::ShardInfo;

    fn shard_file(k: u32, seq_len: u32) -> (PathBuf, ResultsFile) {
        let mut r = ResultsFile::failed(None, "x".into());
        r.error = None;
        let shape = crate::results::ShapeResult::new(crate::config::ShapeParams::new(
            1,
            1,
            seq_len,
            64,
            false,
            crate::config::Dtype::Float16,
        ));
        r.shapes = vec![shape];
        r.shard = Some(ShardInfo {
            index: k,
            count: 2,
            run_shapes: vec![],
        });
        (PathBuf::from(if k == 1 { "b.json" } else { "a.json" }), r)
    }

    #[test]
    fn a_simulated_shard_is_refused_unless_merge_simulates() {
        let (sim_path, mut sim) = shard_file(1, 1);
        let kernel = crate::sim::SimKernel::parse("// ci-gate-sim: factor=0.8\n", "00").unwrap();
        let backend = crate::sim::SimBackend::new(1, crate::sim::NoiseModel::ISSUE, None, kernel);
        sim.environment = Some(backend.environment());
        let (real_path, mut real) = shard_file(2, 2);
        let mut gpu = sim.environment.clone().unwrap();
        gpu.gpu_name = "NVIDIA L4".into();
        gpu.gpu_slug = "nvidia-l4".into();
        real.environment = Some(gpu);
        let shards = vec![(real_path, real), (sim_path, sim)];
        let e = refuse_simulated(&shards, false).unwrap_err().to_string();
        assert_eq!(
            e,
            "shard 1/2 (b.json) was measured on the simulated GPU (CI_GATE_SIMULATE), a test device whose times the kernels' own `ci-gate-sim` lines decide: merge joins only shards measured on a GPU"
        );
        refuse_simulated(&shards, true).unwrap();
        refuse_simulated(&shards[..1], false).unwrap();
    }
}
