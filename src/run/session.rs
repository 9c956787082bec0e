//! A run in progress: what the pipeline's phases share ([`Session`]), from the setup to the
//! results file.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::peer::{PeerSession, PendingPeers};
use super::request::Run;
use super::shape::ShapeRun;
use super::sharing::ProcessWatch;
use super::stored::Stored;
use crate::backend::{DeviceFacts, Facts};
use crate::comparison::{StageDesign, StoredSide};
use crate::results::{BaseInfo, Environment, ProbeResult, RunTiming, ShapeResult};

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

/// What the phases of one run share.
pub(super) struct Session<'r> {
    pub run: &'r Run,
    /// When opening the backend began.
    pub started: Instant,
    pub env: Environment,
    /// Other processes on the GPU.
    pub watch: ProcessWatch,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
    pub timing: RunTiming,
    /// The stored baseline, when the run compares with one.
    pub stored: Stored,
    pub sides: Sides,
    pub design: StageDesign,
    /// The device's peak dense tensor throughput, TFLOP/s (the speed limit).
    pub peak_tflops: f64,
    /// This run's secret (`backend::DeviceFacts::run_key`): it seeds the random shapes.
    pub run_key: u64,
    pub bar: ProgressBar,
    /// Parity on random shapes.
    pub probes: Vec<ProbeResult>,
    /// The shapes' results, in the run's order.
    pub shapes: Vec<ShapeResult>,
    /// Each shape's measurement in progress (`None`: it could not be measured).
    pub runs: Vec<Option<ShapeRun>>,
    /// The PyTorch worker, started in the setup and waited for after the first stages.
    pub pending_peers: Option<PendingPeers>,
    /// The peers' worker, once waited for (it runs to the end of the run).
    pub peer_session: Option<PeerSession>,
    /// Energy windows, where measured.
    pub energy: Option<crate::energy::EnergyInfo>,
    /// Whether the shapes pass, as last decided.
    pub passed: bool,
}

impl<'r> Session<'r> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        run: &'r Run,
        started: Instant,
        device: DeviceFacts,
        watch: ProcessWatch,
        warnings: Vec<String>,
        notes: Vec<String>,
        timing: RunTiming,
        stored: Stored,
        sides: Sides,
        pending_peers: Option<PendingPeers>,
    ) -> Session<'r> {
        Session {
            run,
            started,
            env: device.environment,
            watch,
            warnings,
            notes,
            timing,
            stored,
            sides,
            design: run.design(),
            peak_tflops: device.peak_dense_tflops,
            run_key: device.run_key,
            bar: ProgressBar::hidden(),
            probes: Vec::new(),
            shapes: Vec::with_capacity(run.shapes.len()),
            runs: Vec::with_capacity(run.shapes.len()),
            pending_peers,
            peer_session: None,
            energy: None,
            passed: false,
        }
    }

    /// Reads the GPU's processes now (between shapes and phases).
    pub(crate) fn sample_processes(&mut self, backend: &dyn Facts) {
        self.watch.sample(backend);
    }

    /// Decides every shape again on what it holds now ([`crate::evaluate::evaluate`]).
    pub fn evaluate(&mut self) -> anyhow::Result<()> {
        let (stored, shared) = (&self.stored, self.watch.shared());
        self.passed = crate::evaluate::evaluate(
            &mut self.shapes,
            |s| stored_side(stored, shared, s),
            &self.run.config.gate,
            self.run.policy(),
        )?;
        Ok(())
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

    /// The peers' and energy's stored figures, so the report can say whether they moved.
    pub(crate) fn copy_stored_figures(&mut self) {
        for s in self.shapes.iter_mut() {
            if let Some(x) = self.stored.shape(&s.params) {
                s.stored_peers = x.peers.clone();
                s.stored_energy = x.energy.clone();
            }
        }
    }
}

/// The stored side of a shape for its comparison: none where the run shares the GPU with
/// another process (`shared`: its timings were slowed by an unknown amount that nothing
/// measured beside them cancels).
pub(super) fn stored_side(stored: &Stored, shared: bool, s: &ShapeResult) -> Option<StoredSide> {
    if shared {
        return None;
    }
    stored.side(&s.params)
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
