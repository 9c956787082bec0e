//! The measuring pipeline of one [`Run`], in its phases:
//!
//! 1. **setup** ([`setup`], here): a reading of the GPU's processes (under the GPU's lock, which
//!    the caller holds), the PyTorch worker started beside the compiling, the backend opened,
//!    the environment, the stored baseline and the stage design;
//! 2. **parity** (`parity`): the candidate on random shapes it cannot predict, then, before
//!    each shape's first stage, both sides on that shape;
//! 3. **stages** (`stages`): every shape's first stage (pairs of rounds, or the candidate
//!    alone), then the peers;
//! 4. **decide** (`decide`): the verdicts under the planned two-stage design
//!    (`evaluate::decide_planned`), measuring the second stage where the first look leaves
//!    a shape open;
//! 5. **drift** (`drift`): a drift traced with the baseline commit's kernels;
//! 6. **energy** (`energy`): energy windows after everything timed;
//! 7. **results** (`assemble`): a GPU shared with another process judged, the verdicts
//!    settled, the results file assembled.
//!
//! After the pipeline, `profile` profiles regressions with ncu and `publish` (or `local`'s
//! report) publishes the results.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;

use super::peer::{PeerSession, PendingPeers};
use super::request::Run;
use super::session::{Session, Sides};
use super::sharing::{GpuHold, ProcessWatch};
use crate::backend::{Backend, Prepare};
use crate::config::Config;
use crate::results::{BaseInfo, GpuProcess, ResultsFile, RunTiming};
use crate::shard::ShardInfo;

/// What [`Run::measure`] settles before the backend is open.
#[derive(Default)]
pub(super) struct Prelude {
    /// Seconds spent waiting for the GPU's lock.
    lock_wait_s: f64,
    /// The GPU's processes before this process opened a context there.
    processes_before: Option<Result<Vec<GpuProcess>, String>>,
    /// The PyTorch worker, started.
    peers: Option<PendingPeers>,
}

impl Run {
    /// Runs the pipeline on this run's device, under `gpu`, the GPU's lock its caller took
    /// for the run (`sharing`: one ci-gate run per GPU at a time; the pipeline never takes
    /// it), and records the shard in the results. Errors are things that prevent any verdict
    /// (no GPU, kernels that do not compile, an unreadable baseline, the GPU-time budget
    /// spent); a shape that fails is recorded in its result.
    ///
    /// First a reading of the GPU's processes before this process has a context there; then
    /// the PyTorch worker is started, so that its import and warm-up run beside the
    /// compiling. What a hung GPU does is the caller's (`on_hang`).
    pub(crate) fn measure(&self, gpu: &GpuHold) -> Result<ResultsFile> {
        let before = crate::backend::spans::time("setup.processes_before", || {
            super::sharing::processes_before(self.backend, gpu.key())
        });
        let started = Instant::now();
        let peers = if self.request.peers {
            PeerSession::prestart(&self.config.peers, &self.shapes)
        } else {
            None
        };
        let mut backend = self.backend.open(
            &self.request.kernels,
            self.request.base.as_ref(),
            &self.config,
        )?;
        let prelude = Prelude {
            lock_wait_s: gpu.waited_s(),
            processes_before: before,
            peers,
        };
        let mut results = pipeline(self, backend.as_mut(), started, prelude)?;
        drop(backend);
        if let Some(note) = self.shard_note(results.shapes.len()) {
            results.notes.push(note);
            results.shard = self.shard.clone();
        }
        Ok(results)
    }

    /// [`Run::measure`] on a backend already open (`started`: when opening it began, for the
    /// timing), without the GPU's lock (tests, and the evaluator's calibration on the
    /// simulated GPU).
    pub fn measure_with(&self, backend: &mut dyn Backend, started: Instant) -> Result<ResultsFile> {
        pipeline(self, backend, started, Prelude::default())
    }

    /// [`Run::measure`] for a process whose GPU work is this one run (a child's
    /// `run-request`, the evaluator's worker): the GPU's lock taken for it, and released
    /// after.
    pub(crate) fn measure_here(&self) -> Result<ResultsFile> {
        self.measure(&GpuHold::take(self.backend)?)
    }
}

/// The phases, in order (see the module docs).
fn pipeline(
    run: &Run,
    backend: &mut dyn Backend,
    started: Instant,
    prelude: Prelude,
) -> Result<ResultsFile> {
    let mut s = setup(run, backend, started, prelude)?;
    super::parity::probes(&mut s, backend);
    let measuring = Instant::now();
    super::stages::first_stages(&mut s, backend)?;
    super::stages::peers(&mut s, backend);
    super::decide::decide(&mut s, backend)?;
    s.measured(measuring);
    let tracing = Instant::now();
    let traced = super::drift::trace(&mut s, backend)?;
    s.timing.drift_s = tracing.elapsed().as_secs_f64();
    s.record_phase_times(backend);
    s.copy_stored_figures();
    s.env.state_after = backend.state();
    let energy = super::energy::measure(&mut s, backend);
    super::assemble::results(s, backend, traced || energy)
}

/// The setup phase: the environment, the two sides' kernels (A/B runs when their timed
/// kernels differ, or always where the request says so), the stored baseline, the stage
/// design; the injection calibrated and the clocks spun up.
fn setup<'r>(
    run: &'r Run,
    backend: &mut dyn Backend,
    started: Instant,
    prelude: Prelude,
) -> Result<Session<'r>> {
    let device = backend.device();
    let watch = ProcessWatch::new(prelude.processes_before);
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let cand_hash = device.candidate_hash.clone().unwrap_or_default();
    let base_hash = run.request.base.as_ref().and(device.base_hash.clone());
    let identical = base_hash.as_deref() == Some(cand_hash.as_str());
    let ab = base_hash.is_some() && (!identical || run.request.ab_always);
    let base_info = run.request.base.as_ref().map(|b| BaseInfo {
        source: b.source.clone(),
        commit: b.commit.clone(),
        kernel_source_hash: base_hash.clone().unwrap_or_default(),
        measured: ab,
    });
    if let Some(b) = &run.request.base
        && !ab
    {
        notes.push(format!(
            "the timed kernel (attention.cu) is byte-identical in the base ({}) and the candidate: no A/B was measured, the stored baseline decides",
            b.source
        ));
    }
    let stored = super::stored::load(run, &device.environment, ab, &mut warnings)?;
    let spin_up_ms = run.config.measure.spin_up_ms;
    backend.prepare(Prepare {
        calibrate_injection: run.request.inject.is_some(),
        spin_up: run
            .shapes
            .first()
            .filter(|_| spin_up_ms > 0.0)
            .map(|first| (first, spin_up_ms)),
    })?;
    let timing = RunTiming {
        setup_s: started.elapsed().as_secs_f64(),
        lock_wait_s: prelude.lock_wait_s,
        ..Default::default()
    };
    if let Some(checked) = &run.request.base_parity_checked
        && ab
        && run.request.parity
    {
        notes.push(format!(
            "the base's parity on the configured shapes was not checked again: {checked}"
        ));
    }
    if !run.request.peers && !run.config.peers.is_empty() {
        notes.push("peers left out (--no-peers): no \"Against PyTorch\" table".into());
    }
    Ok(Session::new(
        run,
        started,
        device,
        watch,
        warnings,
        notes,
        timing,
        stored,
        Sides {
            cand_hash,
            base_hash,
            ab,
            base_info,
        },
        prelude.peers,
    ))
}

/// What a results file without a verdict records of its run: the config and the shard, where
/// they were resolved, and whether a drift fails it.
#[derive(Clone, Debug, Default)]
pub(crate) struct NoVerdict {
    pub config: Option<Config>,
    pub shard: Option<ShardInfo>,
    pub fail_on_drift: bool,
}

impl NoVerdict {
    /// The config alone (what `local`, a child and the evaluator's worker record).
    pub(crate) fn config(config: &Config) -> NoVerdict {
        NoVerdict {
            config: Some(config.clone()),
            ..NoVerdict::default()
        }
    }

    /// All of `run` (what `ci` records: `merge` then says which shard failed, and why).
    pub(crate) fn of(run: &Run) -> NoVerdict {
        NoVerdict {
            config: Some(run.config.clone()),
            shard: run.shard.clone(),
            fail_on_drift: run.request.fail_on_drift,
        }
    }

    /// The results file without a verdict that `error` ended.
    pub(crate) fn results(&self, error: &anyhow::Error) -> ResultsFile {
        let mut failed = failed_run(self.config.as_ref(), error);
        failed.shard = self.shard.clone();
        failed.fail_on_drift = self.fail_on_drift;
        failed
    }
}

/// Where a run without a verdict is told, when its device hangs.
pub(crate) enum HangOut {
    /// The message on stderr, and the results file saved here, where there is one (`local
    /// --out`, a child's, the evaluator's worker's; `bisect` has none).
    Save(Option<PathBuf>),
    /// Published as `ci` publishes any run without a verdict (`publish`): workflow commands
    /// resume, then the results file, job summary, annotation and step outputs say which
    /// shape and side hung.
    Publish(PathBuf),
}

/// Installs the one hang handler (`backend::hang`) for this process's run: a results file
/// without a verdict recording `record`, whose error names the shape and side that hung,
/// told as `out` says; the watchdog then ends the process with exit code 2.
pub(crate) fn on_hang(record: NoVerdict, out: HangOut) {
    crate::backend::hang::set_handler(Box::new(move |message| {
        let error = anyhow::anyhow!("{message}");
        match &out {
            HangOut::Save(file) => {
                eprintln!("{}", crate::text::error_message(message));
                if let Some(file) = file
                    && let Err(e) = record.results(&error).save(file)
                {
                    eprintln!(
                        "{}",
                        crate::text::error_message(&format!(
                            "the results could not be saved to {}: {e}",
                            file.display()
                        ))
                    );
                }
            }
            HangOut::Publish(file) => {
                super::untrusted::resume_now();
                if let Err(e) = super::publish::publish(record.results(&error), file, Some(error)) {
                    eprintln!("{}", crate::text::error_message(&format!("{e:#}")));
                }
            }
        }
    }));
}

/// A results file for a run that could not reach a verdict (what `ci` writes on exit 2).
pub(crate) fn failed_run(config: Option<&Config>, error: &anyhow::Error) -> ResultsFile {
    ResultsFile::failed(config, format!("{error:#}"))
}
