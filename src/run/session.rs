//! What every phase of a run shares ([`Session`]: the run, the GPU's other processes, the
//! progress bar, what the run says beside its verdicts, the timing), and the run's two sides
//! ([`Sides`]). Each phase's products are its return values, handed on by
//! `pipeline::pipeline`; only what many phases add to lives here.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::request::Run;
use super::sharing::ProcessWatch;
use crate::backend::Facts;
use crate::results::{BaseInfo, RunTiming};

/// The two sides of a run: the candidate's kernel hash, the base's (with a base), and
/// whether they are measured in pairs (A/B).
pub(super) struct Sides {
    pub cand_hash: String,
    pub base_hash: Option<String>,
    /// A/B runs: a base, and a timed kernel that differs from the candidate's (or A/B asked
    /// for regardless).
    pub ab: bool,
    pub base_info: Option<BaseInfo>,
}

/// What the run says beside its verdicts: the results file's warnings and notes, in the
/// order said.
#[derive(Default)]
pub(super) struct Log {
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

/// What every phase of one run shares.
pub(super) struct Session<'r> {
    pub run: &'r Run,
    /// Other processes on the GPU, read between shapes and phases.
    pub watch: ProcessWatch,
    pub bar: ProgressBar,
    pub log: Log,
    /// Where the time went, each phase adding its own.
    pub timing: RunTiming,
}

impl<'r> Session<'r> {
    /// The session of `run`, from the setup's process watch, log and timing; the progress bar
    /// is shown from the first stages on.
    pub fn new(run: &'r Run, watch: ProcessWatch, log: Log, timing: RunTiming) -> Session<'r> {
        Session {
            run,
            watch,
            bar: ProgressBar::hidden(),
            log,
            timing,
        }
    }

    /// Reads the GPU's processes now (between shapes and phases).
    pub(crate) fn sample_processes(&mut self, backend: &dyn Facts) {
        self.watch.sample(backend);
    }

    /// Ends the measuring's timing (both stages and the peers; `measuring`: when the first
    /// stage began), net of the parity checks and the peers (`stages::peers` timed them).
    pub(crate) fn measured(&mut self, measuring: Instant) {
        let t = &mut self.timing;
        t.measure_s = (measuring.elapsed().as_secs_f64() - t.parity_s - t.peers_s).max(0.0);
    }

    /// Where the backend's measuring time went, into the timing.
    pub(crate) fn record_phase_times(&mut self, backend: &dyn Facts) {
        let phases = backend.phase_times();
        self.timing.references_s = phases.references_s;
        self.timing.preparing_s = phases.preparing_s;
        self.timing.sampling_s = phases.sampling_s;
        self.timing.finishing_s = phases.finishing_s;
        self.timing.detail_s = crate::backend::spans::all();
    }
}

/// The run's progress bar: only on a terminal (logs and pipes get no control sequences).
pub(super) fn progress_bar(enabled: bool, len: usize) -> ProgressBar {
    if !enabled || !std::io::stdout().is_terminal() || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
    {
        bar.set_style(style);
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}
