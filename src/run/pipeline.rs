//! The measuring pipeline of one [`Run`], in its phases ([`pipeline`] calls them in this
//! order, each with what it reads, handing on what it returns; what every phase shares, the
//! process watch, the progress bar, the warnings and notes and the timing, is the `session`):
//!
//! 1. **setup** ([`setup`], here): a reading of the GPU's processes (under the GPU's lock, which
//!    the caller holds), the PyTorch worker started beside the compiling, the backend opened;
//!    returns the environment, the two sides, the stored baseline (`stored`) and the device's
//!    speed limit and secret;
//! 2. **parity** (`parity::probes`): the candidate on random shapes it cannot predict; returns
//!    the probes;
//! 3. **first stages** (`stages::first_stages`): every shape's first stage (pairs of rounds, or
//!    the candidate alone), each shape's parity checked first (`parity::shape`); returns the
//!    shapes measured, then the peers' rounds (`stages::peers`; returns the peers' worker);
//! 4. **second stage** (`decide::open_shapes`, `stages::second_stages`): an interim look plans
//!    which shapes the first stage leaves open, and those are measured up to the design's
//!    largest number of rounds;
//! 5. **drift** (`decide::drifting`, `drift::trace`): a second interim look finds the shapes
//!    that would be a drift, traced with the baseline commit's kernels;
//! 6. **energy** (`energy::measure`): energy windows after everything timed; the end of the
//!    measuring, which returns the shapes' results;
//! 7. **verdicts** (`decide::verdicts`): a GPU shared with another process judged, then the one
//!    decision of every shape's verdict, on all the phases measured (the interim looks decide
//!    copies, to plan, and are never verdicts);
//! 8. **results** (`assemble`): the results file assembled.
//!
//! After the pipeline, `profile` profiles regressions with ncu and `publish` (or `local`'s
//! report) publishes the results.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;

use super::assemble::Products;
use super::peer::{PeerSession, PendingPeers};
use super::request::Run;
use super::session::{Log, Session, Sides};
use super::sharing::{GpuHold, ProcessWatch};
use super::stages::Measuring;
use super::stored::Stored;
use crate::backend::{Backend, Prepare};
use crate::config::Config;
use crate::results::{BaseInfo, Environment, GpuProcess, ResultsFile, RunTiming};
use crate::shard::ShardInfo;

/// What [`Run::measure`] settles before the backend is open.
#[derive(Default)]
pub(super) struct Prelude {
    /// Seconds spent waiting for the GPU's lock.
    lock_wait_s: f64,
    /// The GPU's processes before this process opened a context there.
    processes_before: Option<Result<Vec<GpuProcess>, crate::backend::ProcessesUnlisted>>,
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

/// The phases, in order (see the module docs): each one's products are the next ones'
/// arguments.
fn pipeline(
    run: &Run,
    backend: &mut dyn Backend,
    started: Instant,
    prelude: Prelude,
) -> Result<ResultsFile> {
    let Setup {
        session: mut s,
        mut env,
        sides,
        stored,
        peak_tflops,
        run_key,
        pending_peers,
    } = setup(run, backend, started, prelude)?;
    let probes = super::parity::probes(&mut s, backend, run_key);
    let m = Measuring {
        ab: sides.ab,
        design: run.design(),
        stored: &stored,
        peak_tflops,
    };
    let measuring = Instant::now();
    let mut measured = super::stages::first_stages(&mut s, backend, &m, &probes)?;
    let peer_session = super::stages::peers(&mut s, backend, pending_peers, &mut measured);
    let open = super::decide::open_shapes(&s, &stored, &measured.shapes)?;
    super::stages::second_stages(&mut s, backend, &m, &mut measured, &open)?;
    s.measured(measuring);
    let drifting = super::decide::drifting(&s, &stored, &measured.shapes)?;
    let tracing = Instant::now();
    super::drift::trace(&mut s, backend, &stored, &mut measured.shapes, &drifting)?;
    s.timing.drift_s = tracing.elapsed().as_secs_f64();
    s.record_phase_times(backend);
    env.state_after = backend.state();
    let (mut shapes, energy) = super::energy::measure(&mut s, backend, measured);
    let passed = super::decide::verdicts(&mut s, backend, &stored, &mut shapes)?;
    let products = Products {
        env,
        sides,
        stored,
        probes,
        shapes,
        passed,
        energy,
        peer_session,
    };
    Ok(super::assemble::results(s, backend, started, products))
}

/// What the setup settles for the phases after it.
struct Setup<'r> {
    /// What every phase shares.
    session: Session<'r>,
    /// The machine, as read at the setup (its state after is read when the timing ends).
    env: Environment,
    sides: Sides,
    stored: Stored,
    /// The device's peak dense tensor throughput, TFLOP/s (the speed limit).
    peak_tflops: f64,
    /// This run's secret (`backend::DeviceFacts::run_key`): it seeds the random shapes.
    run_key: u64,
    /// The PyTorch worker, started beside the compiling, waited for after the first stages.
    pending_peers: Option<PendingPeers>,
}

/// The setup phase: the environment, the two sides' kernels (A/B runs when their timed
/// kernels differ, or always where the request says so), the stored baseline; the injection
/// calibrated and the clocks spun up.
fn setup<'r>(
    run: &'r Run,
    backend: &mut dyn Backend,
    started: Instant,
    prelude: Prelude,
) -> Result<Setup<'r>> {
    let device = backend.device();
    let mut watch = ProcessWatch::new(prelude.processes_before);
    // The peer worker started beside the setup is this run's own on the GPU.
    if let Some(p) = &prelude.peers {
        watch.add_ours(p.pid());
    }
    let mut log = Log::default();
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
        log.notes.push(format!(
            "the timed kernel (attention.cu) is byte-identical in the base ({}) and the candidate: no A/B was measured, the stored baseline decides",
            b.source
        ));
    }
    let stored = super::stored::load(run, &device.environment, ab, &mut log.warnings)?;
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
        log.notes.push(format!(
            "the base's parity on the configured shapes was not checked again: {checked}"
        ));
    }
    if !run.request.peers && !run.config.peers.is_empty() {
        log.notes
            .push("peers left out (--no-peers): no \"Against PyTorch\" table".into());
    }
    Ok(Setup {
        session: Session::new(run, watch, log, timing),
        env: device.environment,
        sides: Sides {
            cand_hash,
            base_hash,
            ab,
            base_info,
        },
        stored,
        peak_tflops: device.peak_dense_tflops,
        run_key: device.run_key,
        pending_peers: prelude.peers,
    })
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
