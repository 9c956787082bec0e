//! One measuring run as data: what `local`, `ci`, `selftest` and `baseline update` ask of the
//! pipeline, and what a child process (`--devices`, selftest's trials, a baseline's
//! processes) is given — as a JSON file, read back by the hidden `run-request` command —
//! instead of a command line rebuilt flag by flag.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::pipeline::{AbMode, Against, BaseKernels, RunPlan, load_config, on_hang, run};
use crate::baseline::BaselineStore;
use crate::child_env::{Child, restrict};
use crate::config::{Config, ShapeParams};
use crate::outcome::Outcome;
use crate::results::ResultsFile;
use crate::shard::{ShardInfo, ShardSpec};
use crate::verdict::Policy;

/// Everything one measuring run needs. Paths are as the parent saw them (children run in
/// the parent's directory).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    pub config: PathBuf,
    /// The candidate's kernels.
    pub kernels: PathBuf,
    pub baselines: PathBuf,
    /// Shapes by name; empty for all of the config's.
    pub shapes: Vec<String>,
    /// Only this shard of the shapes.
    pub shard: Option<ShardSpec>,
    /// The base kernels of an A/B run, resolved by the parent.
    pub base: Option<BaseKernels>,
    /// Measure A/B even when the two `attention.cu` are byte-identical (selftest's A/A).
    pub ab_always: bool,
    /// Compare with the stored baseline.
    pub compare: bool,
    pub parity: bool,
    pub peers: bool,
    /// Exactly this many rounds (pairs) for every shape.
    pub rounds: Option<u32>,
    /// A slowdown injected into the candidate, as a fraction of its reference's p50.
    pub inject: Option<f64>,
    pub fail_on_drift: bool,
    /// Trace a drift with the baseline commit's kernels (read with git).
    pub trace_drift: bool,
    /// Draw a progress bar (on a terminal only).
    pub progress: bool,
    /// Measure energy per call (`measure.energy_rounds` windows per side after the timed
    /// pairs): `baseline update` and `--energy`; a pull request's verdict does not wait for
    /// a figure that is not part of it.
    #[serde(default)]
    pub energy: bool,
}

impl RunRequest {
    /// The config and this request's shapes of it (its shard's, with `shard`).
    pub fn shapes(&self) -> Result<(Config, Vec<ShapeParams>, Option<ShardInfo>)> {
        let (config, shapes) = load_config(&self.config, &self.shapes)?;
        match self.shard {
            Some(spec) => {
                let (mine, info) = shard_of(&config, &shapes, spec)?;
                Ok((config, mine, Some(info)))
            }
            None => Ok((config, shapes, None)),
        }
    }

    /// The pipeline's plan for `shapes` of `config`.
    pub fn plan(&self, config: Config, shapes: Vec<ShapeParams>) -> RunPlan {
        RunPlan {
            config,
            shapes,
            kernels: self.kernels.clone(),
            base: self.base.clone(),
            ab: if self.ab_always {
                AbMode::Always
            } else {
                AbMode::WhenDifferent
            },
            against: if self.compare {
                Against::Store(BaselineStore::new(&self.baselines))
            } else {
                Against::Nothing
            },
            parity: self.parity,
            peers: self.peers,
            rounds: self.rounds,
            inject: self.inject,
            policy: Policy {
                fail_on_drift: self.fail_on_drift,
            },
            trace_drift: self.trace_drift,
            progress: self.progress,
            // Energy windows where asked, and only where kernels are checked and timed as
            // they are (not selftest, which measures the gate with parity off and slowdowns
            // injected).
            energy: self.energy && self.parity && self.inject.is_none(),
        }
    }

    /// Measures in this process: the pipeline on this request's shapes, with the shard it is
    /// recorded. (What a hung GPU does is the caller's: `pipeline::on_hang`, or `ci`'s own.)
    pub fn measure_here(&self) -> Result<ResultsFile> {
        let (config, shapes, shard) = self.shapes()?;
        let mut results = run(self.plan(config, shapes))?;
        if let Some(info) = shard {
            results.notes.push(shard_note(&info, results.shapes.len()));
            results.shard = Some(info);
        }
        Ok(results)
    }

    /// A child process that measures this request (as `shard`, when given), writing its
    /// results to `out`: `ci-gate run-request --request FILE --out OUT`, with the environment
    /// of a GPU child. The request file is written next to `out`.
    pub fn child(&self, out: &Path, shard: Option<ShardSpec>) -> Result<Command> {
        let request = RunRequest {
            shard: shard.or(self.shard),
            progress: false,
            ..self.clone()
        };
        let file = out.with_extension("request.json");
        crate::files::write_json(&file, &request)
            .with_context(|| format!("cannot write the run request {}", file.display()))?;
        let exe = std::env::current_exe().context("cannot find the ci-gate executable")?;
        let mut cmd = Command::new(&exe);
        restrict(&mut cmd, Child::Gpu);
        static CHILDREN: AtomicU64 = AtomicU64::new(0);
        let k = CHILDREN.fetch_add(1, Ordering::Relaxed);
        if let Some(seed) = crate::sim::simulated_child_seed(k)? {
            cmd.env(crate::sim::SIMULATE_ENV, seed);
        }
        cmd.arg("run-request")
            .arg("--request")
            .arg(&file)
            .arg("--out")
            .arg(out);
        Ok(cmd)
    }

    /// Runs [`RunRequest::child`] to the end and loads its results. A child that could not
    /// reach a verdict (exit 2, or killed) is an error quoting its stderr.
    pub fn run_child(&self, out: &Path) -> Result<ResultsFile> {
        let mut cmd = self.child(out, None)?;
        let exe = PathBuf::from(cmd.get_program());
        let output = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .with_context(|| format!("cannot start {}", exe.display()))?;
        if output.status.code() == Some(2) || output.status.code().is_none() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            bail!(
                "a measuring process failed ({}): {}",
                output.status,
                stderr.trim()
            );
        }
        ResultsFile::load(out).map_err(Into::into)
    }
}

/// The hidden `run-request` command: a child's run, from the request file its parent
/// wrote; the results go to `out` (also without a verdict, when the GPU hangs).
pub fn run_request(request: &Path, out: &Path) -> Result<Outcome> {
    let text = crate::files::read_bounded(request, 1 << 20)
        .with_context(|| format!("cannot read the run request {}", request.display()))?;
    let req: RunRequest = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a run request", request.display()))?;
    let (config, _) = load_config(&req.config, &req.shapes)?;
    on_hang(&config, Some(out.to_owned()));
    let results = req.measure_here()?;
    results
        .save(out)
        .with_context(|| "the results were measured but could not be saved")?;
    Ok(Outcome::from_passed(results.passed()))
}

/// The shapes of `--shard K/N` among `shapes` (the run's, after `--shape`), with what its
/// results file records for `merge`. A shard left without shapes is an error: fewer shards.
pub fn shard_of(
    config: &crate::config::Config,
    shapes: &[crate::config::ShapeParams],
    spec: crate::shard::ShardSpec,
) -> Result<(Vec<crate::config::ShapeParams>, crate::shard::ShardInfo)> {
    let mine = crate::shard::select(config, shapes, spec);
    if mine.is_empty() {
        bail!(
            "shard {spec} holds none of the run's {} shapes: use fewer shards",
            shapes.len()
        );
    }
    let info = crate::shard::ShardInfo {
        index: spec.index,
        count: spec.count,
        run_shapes: shapes.iter().map(|s| s.name()).collect(),
    };
    Ok((mine, info))
}

/// The note a shard's results carry.
pub fn shard_note(info: &crate::shard::ShardInfo, measured: usize) -> String {
    format!(
        "shard {}/{}: {measured} of the run's {} shapes; its verdicts are provisional: `ci-gate merge` decides over all shards",
        info.index,
        info.count,
        info.run_shapes.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_travels_as_json_and_refuses_unknown_fields() {
        let r = RunRequest {
            config: "configs/pr.yaml".into(),
            kernels: "kernels".into(),
            baselines: "baselines".into(),
            shapes: vec!["b1h8s512d64_f16".into()],
            shard: None,
            base: Some(BaseKernels {
                dir: "/tmp/base".into(),
                source: "merge-base 0123".into(),
                commit: Some("0123".into()),
            }),
            ab_always: true,
            compare: false,
            parity: false,
            peers: false,
            rounds: Some(24),
            inject: Some(0.03),
            fail_on_drift: false,
            trace_drift: true,
            progress: true,
            energy: false,
        };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<RunRequest>(&json).unwrap(), r);
        let extra = json.replacen('{', "{\"sneaky\": 1, ", 1);
        assert!(serde_json::from_str::<RunRequest>(&extra).is_err());
        let plan = r.plan(
            crate::config::Config::parse(
                "shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, causal: false, dtype: float16}\n",
                Path::new("x.yaml"),
            )
            .unwrap(),
            Vec::new(),
        );
        assert_eq!(plan.ab, AbMode::Always);
        assert!(matches!(plan.against, Against::Nothing));
        assert_eq!((plan.rounds, plan.inject), (Some(24), Some(0.03)));
    }
}
