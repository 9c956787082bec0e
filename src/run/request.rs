//! The run, described once. [`RunRequest`] is what a command asks of the engine — `local`,
//! `ci`, `selftest`, `baseline update` and `bisect` build one, and a child process
//! (`--devices`, selftest's trials, a baseline's processes) is given one as a JSON file,
//! read back by the hidden `run-request` command. [`Run`] is a request resolved, once: its
//! config loaded, its shapes selected (and sharded), and the device that measures it chosen
//! ([`BackendChoice`]). Every phase of the pipeline reads the run; nothing re-reads the
//! config or the environment.
//!
//! The engine takes no command-line types: a command converts its options into these plain
//! values (`commands::requests`), so that what the engine is asked does not depend on how
//! clap spells it, and a child's request is only data.
//!
//! A new run option is a field here (with its default in [`RunRequest::gate`], and its flag
//! mapped in `commands::requests::with_flags` when `local` and `ci` both offer it,
//! `cli::RunFlags`), read by the phase it changes.

use std::path::PathBuf;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::device::BackendChoice;
pub use super::git::BaseKernels;
use crate::baseline::BaselineStore;
use crate::comparison::StageDesign;
use crate::config::{Config, ShapeParams};
use crate::shard::{ShardInfo, ShardSpec};
use crate::verdict::Policy;

/// Where a run's files are: the config, the candidate's kernels and the stored baselines.
#[derive(Clone, Debug, PartialEq)]
pub struct RunPaths {
    pub config: PathBuf,
    pub kernels: PathBuf,
    pub baselines: PathBuf,
}

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
    /// Measure the config's peers (`--no-peers`, selftest and bisect leave them out).
    pub peers: bool,
    /// Exactly this many rounds (pairs) for every shape: one stage, no second look.
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
    /// Where the base's parity on the configured shapes was already checked, so that this
    /// run checks the candidate's only: `ci-gate eval` checks its reference once (the first
    /// measurement against it) and says so here for the rest. `None`: both sides, as the
    /// gate does. The base's every timed launch is still checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_parity_checked: Option<String>,
}

impl RunRequest {
    /// The pull request's gate on the config, kernels and baselines of `paths` (what `ci`
    /// runs): parity, the stored baseline, the peers, a drift traced with git, the config's
    /// planned two-stage design; every shape, no base yet (the caller resolves it), nothing
    /// injected, no energy windows. Every other request is this one with what differs.
    pub fn gate(paths: impl Into<RunPaths>) -> RunRequest {
        let RunPaths {
            config,
            kernels,
            baselines,
        } = paths.into();
        RunRequest {
            config,
            kernels,
            baselines,
            shapes: Vec::new(),
            shard: None,
            base: None,
            ab_always: false,
            compare: true,
            parity: true,
            peers: true,
            rounds: None,
            inject: None,
            fail_on_drift: false,
            trace_drift: true,
            progress: false,
            energy: false,
            base_parity_checked: None,
        }
    }
}

/// A request [`Run::resolve`] could not resolve: why, and its config and shard where only
/// the device could not be chosen. `ci` records them in its results file without a verdict
/// (`merge` then says which shard failed, and why); to everyone else this is the error it
/// wraps, shown as that error is.
#[derive(Debug)]
pub(crate) struct Unresolved {
    pub error: anyhow::Error,
    /// The config and the shard, where they were resolved (boxed: an error stays small).
    pub resolved: Option<Box<(Config, Option<ShardInfo>)>>,
}

impl From<anyhow::Error> for Unresolved {
    fn from(error: anyhow::Error) -> Unresolved {
        Unresolved {
            error,
            resolved: None,
        }
    }
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.error, f)
    }
}

/// The wrapped error's causes are this one's, so that `{:#}` reads as the error alone.
impl std::error::Error for Unresolved {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// A request resolved: the config loaded (once), the run's shapes (after `--shape` and its
/// shard), and the device that measures it.
#[derive(Clone, Debug)]
pub struct Run {
    pub request: RunRequest,
    pub config: Config,
    /// The shapes this run measures.
    pub shapes: Vec<ShapeParams>,
    /// What the results record of the shard, when the request names one.
    pub shard: Option<ShardInfo>,
    pub backend: BackendChoice,
}

impl Run {
    /// Resolves `request`, the one way every command's run is made: loads its config
    /// (naming the file on errors), selects and shards its shapes, and takes the measuring
    /// device from this process's environment ([`BackendChoice::from_env`]: the simulation is
    /// refused in GitHub Actions). The device comes last, so that a refused one still leaves
    /// the config and the shard for a results file without a verdict ([`Unresolved`]).
    pub(crate) fn resolve(request: RunRequest) -> Result<Run, Unresolved> {
        let (config, _) = crate::config::load_selected(&request.config, &[])
            .map_err(|e| Unresolved::from(anyhow::Error::from(e)))?;
        let (shapes, shard) = Run::select(&request, &config)?;
        let backend = match BackendChoice::from_env() {
            Ok(backend) => backend,
            Err(e) => {
                return Err(Unresolved {
                    error: e,
                    resolved: Some(Box::new((config, shard))),
                });
            }
        };
        Ok(Run {
            request,
            config,
            shapes,
            shard,
            backend,
        })
    }

    /// [`Run::resolve`] with the config already loaded and the device chosen (tests, and
    /// bisect's steps, which share one config).
    pub fn with_config(request: RunRequest, config: Config, backend: BackendChoice) -> Result<Run> {
        let (shapes, shard) = Run::select(&request, &config)?;
        Ok(Run {
            request,
            config,
            shapes,
            shard,
            backend,
        })
    }

    /// The shapes `request` measures of `config` (its `--shape` names, then its shard), and
    /// what the results record of the shard.
    pub fn select(
        request: &RunRequest,
        config: &Config,
    ) -> Result<(Vec<ShapeParams>, Option<ShardInfo>)> {
        let selected = config.select_shapes(&request.shapes)?;
        Ok(match request.shard {
            Some(spec) => {
                let (mine, info) = crate::shard::of_run(config, &selected, spec)?;
                (mine, Some(info))
            }
            None => (selected, None),
        })
    }

    /// The same run with `request` changed by `change` (its shapes and shard stay as they
    /// were resolved).
    pub(crate) fn with(&self, change: impl FnOnce(&mut RunRequest)) -> Run {
        let mut run = self.clone();
        change(&mut run.request);
        run
    }

    /// The shapes' names, in order.
    pub(crate) fn shape_names(&self) -> Vec<String> {
        self.shapes.iter().map(ShapeParams::name).collect()
    }

    /// The stages every shape is measured in: exactly `rounds` in one stage when the request
    /// fixes them, else the config's planned two-stage design.
    pub(crate) fn design(&self) -> StageDesign {
        match self.request.rounds {
            Some(n) => StageDesign { stage1: n, max: n },
            None => StageDesign {
                stage1: self.config.measure.min_rounds,
                max: self.config.measure.max_rounds,
            },
        }
    }

    /// Which verdicts fail the run.
    pub(crate) fn policy(&self) -> Policy {
        Policy {
            fail_on_drift: self.request.fail_on_drift,
        }
    }

    /// The stored baselines to compare with, when the request asks for them.
    pub fn store(&self) -> Option<BaselineStore> {
        self.request
            .compare
            .then(|| BaselineStore::new(&self.request.baselines))
    }

    /// Whether energy windows are measured: where asked, and only where kernels are checked
    /// and timed as they are (not selftest, which measures the gate with parity off and
    /// slowdowns injected).
    pub(crate) fn energy(&self) -> bool {
        self.request.energy && self.request.parity && self.request.inject.is_none()
    }

    /// The shard's note in its results: its verdicts are provisional.
    pub(crate) fn shard_note(&self, measured: usize) -> Option<String> {
        self.shard
            .as_ref()
            .map(|info| crate::shard::note(info, measured))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn request() -> RunRequest {
        RunRequest {
            shapes: vec!["b1h8s512d64_f16".into()],
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
            progress: true,
            ..RunRequest::gate(RunPaths {
                config: "configs/pr.yaml".into(),
                kernels: "kernels".into(),
                baselines: "baselines".into(),
            })
        }
    }

    #[test]
    fn a_request_travels_as_json_and_refuses_unknown_fields() {
        let r = request();
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<RunRequest>(&json).unwrap(), r);
        let extra = json.replacen('{', "{\"sneaky\": 1, ", 1);
        assert!(serde_json::from_str::<RunRequest>(&extra).is_err());
    }

    #[test]
    fn an_unresolved_request_reads_as_the_error_it_wraps() {
        let inner = anyhow::anyhow!("the cause").context("the error");
        let shown = format!("{inner:#}");
        let wrapped = anyhow::Error::from(Unresolved::from(inner));
        assert_eq!(format!("{wrapped:#}"), shown);
        assert_eq!(format!("{wrapped}"), "the error");
    }

    #[test]
    fn a_resolved_run_says_what_its_phases_read() {
        let config = Config::parse(
            "shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, causal: false, dtype: float16}\n  - {batch: 1, heads: 8, seq_len: 1024, head_dim: 64, causal: false, dtype: float16}\n",
            Path::new("x.yaml"),
        )
        .unwrap();
        let run = Run::with_config(request(), config.clone(), BackendChoice::Gpu).unwrap();
        assert_eq!(run.shape_names(), ["b1h8s512d64_f16"]);
        assert_eq!(
            run.design(),
            StageDesign {
                stage1: 24,
                max: 24
            }
        );
        assert!(run.store().is_none() && !run.energy());
        let energy = RunRequest {
            energy: true,
            parity: true,
            inject: None,
            ..request()
        };
        assert!(
            Run::with_config(energy, config.clone(), BackendChoice::Gpu)
                .unwrap()
                .energy()
        );
        let unknown = RunRequest {
            shapes: vec!["nope".into()],
            ..request()
        };
        assert!(Run::with_config(unknown, config, BackendChoice::Gpu).is_err());
    }
}
