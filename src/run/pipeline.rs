//! The measuring pipeline shared by `local`, `ci`, `baseline update` and `selftest`:
//! compile both kernel sets, check parity of both, measure base and candidate in pairs of
//! rounds (or the candidate alone), compare with the references in a planned two-stage
//! design, trace a drift with the baseline commit's kernels, and assemble the results file.

use std::io::IsTerminal;
use std::path::PathBuf;

pub use super::git::BaseKernels;
use super::peer::{PeerSession, PendingPeers};
use super::sharing::ProcessWatch;
use crate::backend::{Backend, Measurement, ShapeId, Side};
use crate::baseline::{BaselineFile, BaselineStore};
use crate::comparison::{Comparison, StoredSide, shape_seed};
use crate::config::{CacheMode, Config, ShapeParams};
use crate::evaluate::{evaluate, needs_second_look};
use crate::gpu::GpuError;
use crate::gpu::env::throttled;
use crate::resources::{KernelResources, ResourceSide};
use crate::results::{
    BaseInfo, BaselineRef, ConfigInfo, DriftCause, DriftCheck, Environment, MeasurementInfo,
    ProbeResult, ResultsFile, SCHEMA_VERSION, ShapeResult, StageDesign, current_git_commit,
};
use crate::stats::{Rounds, Sample};
use crate::verdict::{Policy, Verdict};
use anyhow::{Result, bail};
use chrono::Utc;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What to compare a run with besides its base.
pub enum Against {
    /// The stored baseline of this GPU and config.
    Store(BaselineStore),
    /// Nothing stored (selftest, baseline recording).
    Nothing,
}

/// Whether A/B runs when the two timed kernels are byte-identical.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbMode {
    /// Skip it (the stored baseline decides).
    WhenDifferent,
    /// Run it anyway (selftest's A/A).
    Always,
}

/// Everything a run needs.
pub struct RunPlan {
    pub config: Config,
    pub shapes: Vec<ShapeParams>,
    /// The candidate's kernels.
    pub kernels: PathBuf,
    pub base: Option<BaseKernels>,
    pub ab: AbMode,
    pub against: Against,
    pub parity: bool,
    /// Measure the config's peers (`local --no-peers` and selftest leave them out).
    pub peers: bool,
    /// Exactly this many rounds (pairs) for every shape: one stage, no second look.
    pub rounds: Option<u32>,
    /// Injected slowdown of the candidate as a fraction of the reference's p50 (selftest).
    pub inject: Option<f64>,
    pub policy: Policy,
    /// Trace a drift by reading the stored baseline's commit's kernels with git (third side).
    pub trace_drift: bool,
    pub progress: bool,
    /// Measure energy per call after the timed pairs (`measure.energy_rounds` windows).
    pub energy: bool,
}

/// One shape's measurement in progress: the backend holds its measurements; this holds the
/// peers and the re-measuring.
struct ShapeRun {
    id: ShapeId,
    /// Two sides in pairs (A/B, or the baseline commit's kernels against the candidate's),
    /// or the candidate alone.
    ab: bool,
    seed: u64,
    /// The config's peers on this shape: a few rounds after every shape's first stage
    /// ([`ShapeRun::peer_rounds`]).
    peers: Vec<crate::peers::PeerResult>,
    /// Seconds spent measuring the peers.
    peer_s: f64,
    /// Pairs measured again because a clock change hit one side's samples (the rule of
    /// [`unbalanced`]), and how many more it may take.
    remeasured: Vec<crate::results::RemeasuredPair>,
    remeasure_budget: u32,
}

/// A pair is measured again when the SM clock moved across this many more samples of one
/// side than of the other (at least 2, and 30% of a round's samples): pairs alternate their
/// samples so that clock swings hit both sides alike, and this is the case where they did
/// not. The rule is fixed before anything is measured, looks only at clock readings (never at
/// the times), and treats both sides alike, so it cannot favour either.
fn unbalanced(base_events: u32, cand_events: u32, samples_per_round: u32) -> bool {
    let limit = 2u32.max((f64::from(samples_per_round) * 0.3).ceil() as u32);
    base_events.abs_diff(cand_events) >= limit
}

/// Pairs a shape may measure again under [`unbalanced`]: a quarter of the design's pairs,
/// at least 2.
fn remeasure_budget(design: StageDesign) -> u32 {
    (design.max / 4).max(2)
}

impl ShapeRun {
    /// Measures `n` more rounds (pairs, in A/B).
    fn more(&mut self, backend: &mut dyn Backend, config: &Config, n: u32) -> Result<(), GpuError> {
        for _ in 0..n {
            self.one(backend, config)?;
        }
        Ok(())
    }

    /// The peers' rounds of this shape ([`crate::peers::PEER_ROUNDS`] of every peer, one
    /// after another), after every shape's first stage: the worker, started beside the
    /// setup, has had the whole first stage to import PyTorch and build its plans, so no one
    /// waits for it; then the worker frees the shape.
    fn peer_rounds(
        &mut self,
        backend: &dyn Backend,
        params: &ShapeParams,
        config: &Config,
        peers: &mut PeerSession,
        notes: &mut Vec<String>,
    ) -> Result<(), GpuError> {
        if self.peers.is_empty() {
            return Ok(());
        }
        let sets = backend.input_sets(params, &config.measure)?;
        let t = std::time::Instant::now();
        for _ in 0..crate::peers::PEER_ROUNDS {
            peers.round(
                &mut self.peers,
                params,
                &config.measure,
                sets,
                self.seed,
                notes,
            );
        }
        peers.release(notes);
        self.peer_s += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// One round (one pair, in A/B); a pair the clock hit on one side is measured again.
    fn one(&mut self, backend: &mut dyn Backend, config: &Config) -> Result<(), GpuError> {
        if !self.ab {
            return backend.round(self.id);
        }
        loop {
            backend.pair(self.id)?;
            let events = |i: usize| {
                backend
                    .measurement(self.id, i)
                    .clock_events
                    .last()
                    .copied()
                    .unwrap_or(0)
            };
            let (eb, ec) = (events(0), events(1));
            if self.remeasure_budget == 0 || !unbalanced(eb, ec, config.measure.samples_per_round) {
                return Ok(());
            }
            backend.drop_last(self.id);
            self.remeasure_budget -= 1;
            self.remeasured.push(crate::results::RemeasuredPair {
                pair: backend.measurement(self.id, 1).rounds.len() as u32 + 1,
                base_clock_events: eb,
                cand_clock_events: ec,
            });
        }
    }

    fn cand<'b>(&self, backend: &'b dyn Backend) -> &'b Measurement {
        backend.measurement(self.id, usize::from(self.ab))
    }

    fn base<'b>(&self, backend: &'b dyn Backend) -> Option<&'b Measurement> {
        self.ab.then(|| backend.measurement(self.id, 0))
    }
}

/// Opens the measuring backend of a plan: the GPU, or the simulation when
/// `CI_GATE_SIMULATE` is set (tests and CI), never in GitHub Actions
/// (`sim::simulation_seed`).
fn open_backend(plan: &RunPlan) -> Result<Box<dyn Backend>> {
    // With a base, the harness (reference and utility kernels) is the base's: trusted code
    // checks the candidate, never the candidate's own reference.
    let harness = plan.base.as_ref().map_or(&plan.kernels, |b| &b.dir);
    let candidate = plan.base.as_ref().map(|_| plan.kernels.as_path());
    let budget_s = plan.config.gpu_budget_s();
    let max_wait = std::time::Duration::from_secs_f64(plan.config.measure.max_wait_s);
    if let Some(seed) = crate::sim::simulation_seed()? {
        return Ok(Box::new(
            crate::sim::SimBackend::open(seed, harness, candidate)?
                .with_budget(budget_s)
                .with_max_wait(max_wait),
        ));
    }
    Ok(Box::new(crate::gpu::cuda_backend::CudaBackend::open(
        harness,
        candidate,
        &plan.config.compile.defines,
        max_wait,
        budget_s,
    )?))
}

/// Runs the pipeline. Errors are things that prevent any verdict (no GPU, kernels that do
/// not compile, an unreadable baseline, a GPU another ci-gate run held too long); a shape that
/// fails is recorded in its result.
///
/// First the GPU's lock (`commands::sharing`: one ci-gate run per GPU at a time) and a
/// reading of the GPU's processes before this process has a context there; then the PyTorch
/// worker is started, so that its import and warm-up run beside the compiling.
pub fn run(plan: RunPlan) -> Result<ResultsFile> {
    let lock = super::sharing::lock_gpu()?;
    let before = super::sharing::processes_before(lock.as_ref().map(|l| l.key()));
    let started = std::time::Instant::now();
    let peers = if plan.peers {
        PeerSession::prestart(&plan.config.peers, &plan.shapes)
    } else {
        None
    };
    let mut backend = open_backend(&plan)?;
    let prelude = Prelude {
        lock_wait_s: lock.as_ref().map_or(0.0, |l| l.waited().as_secs_f64()),
        processes_before: before,
        peers,
    };
    let results = run_inner(plan, backend.as_mut(), started, prelude);
    drop(backend);
    drop(lock);
    results
}

/// What [`run`] settles before the backend is open.
#[derive(Default)]
struct Prelude {
    /// Seconds spent waiting for the GPU's lock.
    lock_wait_s: f64,
    /// The GPU's processes before this process opened a context there.
    processes_before: Option<Result<Vec<crate::results::GpuProcess>, String>>,
    /// The PyTorch worker, started.
    peers: Option<PendingPeers>,
}

/// [`run`] on a backend already open (`started`: when opening it began, for the timing),
/// without the GPU's lock (tests, and callers that hold it).
pub fn run_with(
    plan: RunPlan,
    backend: &mut dyn Backend,
    started: std::time::Instant,
) -> Result<ResultsFile> {
    run_inner(plan, backend, started, Prelude::default())
}

fn run_inner(
    plan: RunPlan,
    backend: &mut dyn Backend,
    started: std::time::Instant,
    prelude: Prelude,
) -> Result<ResultsFile> {
    let mut env = backend.environment();
    let mut watch = ProcessWatch::new(prelude.processes_before);
    let shared = std::cell::Cell::new(false);
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let config = &plan.config;
    let cache = config.measure.cache;
    let cand_hash = backend.source_hash(Side::Candidate).unwrap_or_default();
    let base_hash = plan
        .base
        .as_ref()
        .and_then(|_| backend.source_hash(Side::Base));

    let identical = base_hash.as_deref() == Some(cand_hash.as_str());
    let ab_on = base_hash.is_some() && (!identical || plan.ab == AbMode::Always);
    let base_info = plan.base.as_ref().map(|b| BaseInfo {
        source: b.source.clone(),
        commit: b.commit.clone(),
        kernel_source_hash: base_hash.clone().unwrap_or_default(),
        measured: ab_on,
    });
    if let Some(b) = &plan.base
        && !ab_on
    {
        notes.push(format!(
            "the timed kernel (attention.cu) is byte-identical in the base ({}) and the candidate: no A/B was measured, the stored baseline decides",
            b.source
        ));
    }

    let (stored, baseline_ref) = load_stored(&plan, &env, ab_on, &mut warnings)?;

    let design = match plan.rounds {
        Some(n) => StageDesign { stage1: n, max: n },
        None => StageDesign {
            stage1: config.measure.min_rounds,
            max: config.measure.max_rounds,
        },
    };
    if plan.inject.is_some() {
        backend.calibrate_injection()?;
    }
    if let Some(first) = plan.shapes.first() {
        backend.spin_up(first)?;
    }
    let mut timing = crate::results::RunTiming {
        setup_s: started.elapsed().as_secs_f64(),
        lock_wait_s: prelude.lock_wait_s,
        ..Default::default()
    };
    if !plan.peers && !config.peers.is_empty() {
        notes.push("peers left out (--no-peers): no \"Against PyTorch\" table".into());
    }
    // Parity on random shapes the kernel cannot predict, before anything is timed: a
    // candidate that is right only on the configured shapes fails every shape of that kind.
    let t = std::time::Instant::now();
    let probes = if plan.parity {
        run_probes(backend, config, &plan.shapes)
    } else {
        Vec::new()
    };
    timing.probes_s = t.elapsed().as_secs_f64();
    let measuring = std::time::Instant::now();
    let peak_tflops = backend.peak_dense_tflops();
    // The peer worker started beside the setup; it is waited for only after the first stage.
    let pending_peers = prelude.peers.inspect(|p| watch.add_ours(p.pid()));
    watch.sample(backend);
    shared.set(watch.shared());
    let bar = progress_bar(plan.progress, plan.shapes.len());
    let mut shapes: Vec<ShapeResult> = Vec::with_capacity(plan.shapes.len());
    let mut runs: Vec<Option<ShapeRun>> = Vec::with_capacity(plan.shapes.len());
    for (i, params) in plan.shapes.iter().enumerate() {
        bar.set_message(params.name());
        let mut result = ShapeResult::new(*params);
        let seed = config.parity.seed.wrapping_add(i as u64);
        if let Some(why) = probe_failure(&probes, params) {
            result.integrity = Some(why);
            shapes.push(result);
            runs.push(None);
            bar.inc(1);
            continue;
        }
        let tol = config.parity.tolerance(params.dtype);
        let run = (|| -> Result<ShapeRun, Failure> {
            if plan.parity {
                let t = std::time::Instant::now();
                // The base first: how long its check took bounds the candidate's wait.
                if ab_on {
                    let p = backend.parity(Side::Base, params, tol, seed)?;
                    let failed = !p.passed();
                    let summary = format!("rel L2 {:.2e}, max abs {:.2e}", p.rel_l2, p.max_abs);
                    result.base_parity = Some(p);
                    if failed {
                        return Err(Failure::Error(format!(
                            "the base kernels ({}) fail parity on this shape ({summary}), so the A/B comparison has no valid reference",
                            plan.base.as_ref().map_or("?", |b| b.source.as_str())
                        )));
                    }
                }
                let p = backend.parity(Side::Candidate, params, tol, seed)?;
                result.parity = Some(p);
                timing.parity_s += t.elapsed().as_secs_f64();
            }
            let inject_us = match plan.inject {
                Some(fraction) => {
                    let reference_p50 = if ab_on {
                        // One round of the base, not kept, sizes the slowdown.
                        let id = backend.begin(
                            params,
                            &[Side::Base],
                            &config.measure,
                            tol,
                            None,
                            0,
                            seed,
                        )?;
                        let r = backend.round(id);
                        let p50 = median_of(&backend.measurement(id, 0).rounds);
                        backend.end(id);
                        r?;
                        p50
                    } else {
                        stored_p50(stored.as_ref(), params, cache)
                    };
                    reference_p50.map(|p50| fraction * p50)
                }
                None => None,
            };
            let sides: &[Side] = if ab_on {
                &[Side::Base, Side::Candidate]
            } else {
                &[Side::Candidate]
            };
            let id = backend.begin(
                params,
                sides,
                &config.measure,
                tol,
                inject_us,
                shape_seed(config.gate.seed, &params.name()),
                seed,
            )?;
            let mut run = ShapeRun {
                id,
                ab: ab_on,
                seed,
                peer_s: 0.0,
                peers: Vec::new(),
                remeasured: Vec::new(),
                remeasure_budget: remeasure_budget(design),
            };
            run.more(backend, config, design.stage1)?;
            Ok(run)
        })();
        match run {
            Ok(run) => {
                fill(&mut result, &run, backend, cache, design);
                let reference_p50 = match run.base(backend) {
                    Some(b) => median_of(&b.rounds),
                    None => stored_p50(stored.as_ref(), params, cache),
                };
                result.error = result
                    .error
                    .take()
                    .or_else(|| speed_limit(&result, reference_p50, peak_tflops, gate_of(config)));
                if result.error.is_some() {
                    backend.end(run.id);
                }
                runs.push(result.error.is_none().then_some(run));
            }
            Err(e) => {
                e.record(&mut result)?;
                runs.push(None);
            }
        }
        shapes.push(result);
        bar.inc(1);
        watch.sample(backend);
        shared.set(watch.shared());
    }

    // The peers, after every shape's first stage (their rounds never decide anything).
    let t = std::time::Instant::now();
    let mut peer_session = match pending_peers {
        Some(pending) => pending.finish(&mut notes),
        None => PeerSession::start(
            if plan.peers { &config.peers } else { &[] },
            &plan.shapes,
            &mut notes,
        ),
    };
    timing.peers_start_s = t.elapsed().as_secs_f64();
    watch.add_ours(peer_session.pid());
    for (run, result) in runs.iter_mut().zip(shapes.iter_mut()) {
        let Some(run) = run.as_mut() else { continue };
        run.peers = peer_session.results();
        bar.set_message(format!("{} (peers)", result.name));
        let params = result.params;
        if let Err(e) = run.peer_rounds(backend, &params, config, &mut peer_session, &mut notes) {
            notes.push(format!("{}: the peers were not measured: {e}", result.name));
        }
        result.peers = run.peers.clone();
    }
    watch.sample(backend);
    shared.set(watch.shared());

    // Where another process shared the GPU, the stored baseline is not compared with: its
    // timings were slowed by an unknown amount that nothing measured beside them cancels.
    let stored_of = |s: &ShapeResult| -> Option<StoredSide> {
        if shared.get() {
            return None;
        }
        stored
            .as_ref()
            .and_then(|b| b.shape(&s.params, cache).map(|x| x.stored_side()))
    };
    let gate = &config.gate;
    evaluate(&mut shapes, stored_of, gate, plan.policy)?;
    // The planned second look: more pairs where the first could not settle it.
    if design.two_stage() {
        let pending: Vec<usize> = (0..shapes.len())
            .filter(|&i| runs[i].is_some() && needs_second_look(&shapes[i], gate))
            .collect();
        for i in pending {
            bar.set_message(format!("{} (second stage)", shapes[i].name));
            let params = shapes[i].params;
            if let Some(run) = runs[i].as_mut() {
                match run.more(backend, config, design.max - design.stage1) {
                    Ok(()) => {
                        fill(&mut shapes[i], run, backend, cache, design);
                        let reference_p50 = match run.base(backend) {
                            Some(b) => median_of(&b.rounds),
                            None => stored_p50(stored.as_ref(), &params, cache),
                        };
                        shapes[i].error =
                            speed_limit(&shapes[i], reference_p50, peak_tflops, gate_of(config));
                    }
                    Err(e) => Failure::from(e).record(&mut shapes[i])?,
                }
            }
            watch.sample(backend);
            shared.set(watch.shared());
        }
    }
    let mut passed = evaluate(&mut shapes, stored_of, gate, plan.policy)?;
    timing.peers_s = timing.peers_start_s + runs.iter().flatten().map(|r| r.peer_s).sum::<f64>();
    timing.measure_s =
        (measuring.elapsed().as_secs_f64() - timing.parity_s - timing.peers_s).max(0.0);
    let tracing = std::time::Instant::now();

    // A drift, traced with the baseline commit's kernels measured alongside the candidate.
    let drifting: Vec<usize> = (0..shapes.len())
        .filter(|&i| shapes[i].verdict == Verdict::Drift)
        .collect();
    if !drifting.is_empty() {
        let commit = stored.as_ref().and_then(|b| b.provenance.commit.clone());
        let measured = stored
            .as_ref()
            .and_then(|b| b.kernel_source_hash.as_deref());
        let old = match (&commit, plan.trace_drift) {
            (Some(c), true) => drift_kernels(c, &plan.kernels, measured),
            _ => Err(anyhow::anyhow!("tracing was not asked for")),
        };
        match old {
            Err(e) => notes.push(format!(
                "the drift was not traced to the runner or the code: {e:#}"
            )),
            Ok((old, _tmp)) => {
                let old = &old;
                backend.load_other(&old.dir, &config.compile.defines)?;
                for i in drifting {
                    bar.set_message(format!("{} (tracing the drift)", shapes[i].name));
                    let check =
                        trace_drift(backend, config, old, stored.as_ref(), &shapes[i], design);
                    match check {
                        Ok(c) => shapes[i].drift = Some(c),
                        Err(e) if matches!(e.downcast_ref(), Some(GpuError::Budget(_))) => {
                            return Err(e);
                        }
                        Err(e) => warnings.push(format!(
                            "{}: the drift could not be traced: {e}",
                            shapes[i].name
                        )),
                    }
                }
                passed = evaluate(&mut shapes, stored_of, gate, plan.policy)?;
            }
        }
    }
    timing.drift_s = tracing.elapsed().as_secs_f64();
    let phases = backend.phase_times();
    timing.references_s = phases.references_s;
    timing.preparing_s = phases.preparing_s;
    timing.sampling_s = phases.sampling_s;
    timing.finishing_s = phases.finishing_s;

    // The peers' stored p50s, so the report can say whether the gap moved.
    if let Some(b) = stored.as_ref() {
        for s in shapes.iter_mut() {
            if let Some(x) = b.shape(&s.params, cache) {
                s.stored_peers = x.peers.clone();
                s.stored_energy = x.energy.clone();
            }
        }
    }
    env.state_after = backend.state();
    // Energy last: its windows run back to back at full power (on an H100, at the power
    // cap), so nothing timed comes after them and the clocks "after" are the timed part's.
    let t = std::time::Instant::now();
    let energy = measure_energy(&plan, backend, &runs, &mut shapes, &bar, &mut notes);
    for run in runs.iter().flatten() {
        backend.end(run.id);
    }
    if energy.is_some() {
        // A side that failed the checks in an energy window fails parity.
        passed = evaluate(&mut shapes, stored_of, gate, plan.policy)?;
    }
    timing.energy_s = t.elapsed().as_secs_f64();
    watch.sample(backend);
    if watch.shared() {
        shared.set(true);
        judge_shared(&watch, &mut shapes, stored.as_ref(), cache, &mut notes);
        passed = evaluate(&mut shapes, stored_of, gate, plan.policy)?;
    }
    warnings.extend(watch.warning());
    timing.other_processes = watch.others();
    timing.processes_unknown = watch.unknown();
    bar.finish_and_clear();
    timing.total_s = started.elapsed().as_secs_f64();
    let launched: Vec<ShapeParams> = shapes.iter().map(|s| s.params).collect();
    let mut kernel_resources = Vec::new();
    if base_hash.is_some() {
        kernel_resources.extend(backend.kernel_resources(Side::Base, &launched));
    } else if let Some(b) = stored.as_ref() {
        // No base: the report compares the candidate's with what the baseline recorded.
        kernel_resources.extend(b.kernel_resources.iter().map(|k| KernelResources {
            side: ResourceSide::Baseline,
            ..k.clone()
        }));
    }
    kernel_resources.extend(backend.kernel_resources(Side::Candidate, &launched));
    warnings.extend(clock_warnings(
        &shapes,
        &env,
        config.measure.samples_per_round,
        &mut notes,
    ));
    Ok(ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: current_git_commit(),
        created_at: Utc::now(),
        environment: Some(env),
        config: ConfigInfo::of(config),
        kernel_source_hash: Some(cand_hash),
        gate: config.gate.clone(),
        baseline: baseline_ref,
        shapes,
        passed,
        warnings,
        notes,
        error: None,
        base: base_info,
        fail_on_drift: plan.policy.fail_on_drift,
        profiling: None,
        shard: None,
        peers: peer_session
            .runtime
            .clone()
            .map(|runtime| crate::peers::PeersInfo {
                runtime: Some(runtime),
                method: Some(crate::peers::PeerMethod::new(
                    config.measure.sample_ms,
                    config.measure.duty_cycle,
                )),
                launches: std::mem::take(&mut peer_session.launches),
            }),
        probes,
        timing: Some(timing),
        energy,
        kernel_resources,
    })
}

/// A run another process shared the GPU with (`sharing::ProcessWatch`): the comparison with
/// the stored baseline is not judged (the caller evaluates again without it, with a note); a
/// shape whose only reference is the stored baseline (no A/B) then has no verdict, an
/// `error` that says why — never a pass that nothing judged.
fn judge_shared(
    watch: &ProcessWatch,
    shapes: &mut [ShapeResult],
    stored: Option<&BaselineFile>,
    cache: CacheMode,
    notes: &mut Vec<String>,
) {
    let Some(b) = stored else { return };
    let mut any = false;
    for s in shapes.iter_mut() {
        if b.shape(&s.params, cache).is_none() {
            continue;
        }
        any = true;
        if s.base_samples_us.is_empty() && s.error.is_none() && s.integrity.is_none() {
            s.error = Some(watch.unjudged_error());
        }
    }
    if any {
        notes.extend(watch.stored_note());
    }
}

/// Energy windows of every measured shape after its timed pairs (src/energy.rs), when the
/// plan asks for them and the config has `measure.energy_rounds`. A side whose replays fail
/// the checks in a window fails parity on that shape, as in a timed sample; any other
/// error, or a GPU that cannot read energy, leaves the figures out with a note: energy never
/// prevents or decides a verdict.
fn measure_energy(
    plan: &RunPlan,
    backend: &mut dyn Backend,
    runs: &[Option<ShapeRun>],
    shapes: &mut [ShapeResult],
    bar: &ProgressBar,
    notes: &mut Vec<String>,
) -> Option<crate::energy::EnergyInfo> {
    use crate::energy::{EnergyInfo, ShapeEnergy, SideEnergy};
    let m = &plan.config.measure;
    if !plan.energy || m.energy_rounds == 0 {
        return None;
    }
    let mut info = EnergyInfo {
        rounds: m.energy_rounds,
        updates: m.energy_updates,
        ..EnergyInfo::default()
    };
    let confidence = plan.config.gate.confidence;
    for (run, result) in runs.iter().zip(shapes.iter_mut()) {
        let Some(run) = run else { continue };
        bar.set_message(format!("{} (energy)", result.name));
        match backend.energy(run.id, m.energy_rounds, m.energy_updates) {
            Ok(Some(why)) => {
                notes.push(format!("energy per call not measured: {why}"));
                info.unavailable = Some(why);
                return Some(info);
            }
            Ok(None) => {}
            Err(GpuError::Integrity(why)) => {
                result.integrity = Some(why);
                continue;
            }
            Err(e) => {
                notes.push(format!(
                    "{}: energy per call not measured: {e}",
                    result.name
                ));
                continue;
            }
        }
        let flops = result.params.flops();
        let side = |m: &Measurement| SideEnergy::from_rounds(m.energy.clone(), flops, confidence);
        result.energy = Some(ShapeEnergy {
            candidate: side(run.cand(backend)),
            base: run.base(backend).map(side),
        });
    }
    let rounds: Vec<&crate::energy::EnergyRound> = shapes
        .iter()
        .filter_map(|s| s.energy.as_ref())
        .flat_map(|e| {
            e.candidate
                .rounds
                .iter()
                .chain(e.base.iter().flat_map(|b| &b.rounds))
        })
        .collect();
    info.source = rounds.first().map(|r| r.source);
    let per_update: Vec<f64> = rounds
        .iter()
        .filter(|r| r.updates >= 2)
        .map(|r| r.span_ms / f64::from(r.updates - 1))
        .collect();
    info.update_ms = crate::stats::median(&per_update);
    let brackets: Vec<f64> = rounds.iter().map(|r| r.read_ms).collect();
    info.read_ms = crate::stats::median(&brackets);
    Some(info)
}

/// Why a shape has no measurement: an error (it could not be measured), an integrity
/// failure (the kernel did not do the checked work every time: a parity failure), or the
/// run's GPU-time budget spent (which ends the whole run: exit 2).
enum Failure {
    Error(String),
    Integrity(String),
    Budget(String),
}

impl From<GpuError> for Failure {
    fn from(e: GpuError) -> Failure {
        match e {
            GpuError::Integrity(why) => Failure::Integrity(why),
            GpuError::Budget(why) => Failure::Budget(why),
            other => Failure::Error(other.to_string()),
        }
    }
}

impl Failure {
    /// Records the failure on its shape; a spent budget ends the run instead.
    fn record(self, result: &mut ShapeResult) -> Result<()> {
        match self {
            Failure::Error(e) => result.error = Some(e),
            Failure::Integrity(why) => result.integrity = Some(why),
            Failure::Budget(why) => bail!("{why}"),
        }
        Ok(())
    }
}

fn gate_of(config: &Config) -> f64 {
    config.gate.max_speedup
}

/// A candidate time that cannot be real: its fastest sample would beat the GPU's peak dense
/// tensor throughput, or it is more than `max_speedup` times faster than its reference (the
/// base's p50 in A/B, else the stored baseline's). Either is an `error` that says why: an
/// optimisation loop rewarded by these numbers must not be rewarded for skipping work the
/// checks missed.
fn speed_limit(
    result: &ShapeResult,
    reference_p50: Option<f64>,
    peak_tflops: f64,
    max_speedup: f64,
) -> Option<String> {
    let fastest = result
        .samples_us
        .iter()
        .flatten()
        .copied()
        .filter(|t| t.is_finite())
        .fold(f64::INFINITY, f64::min);
    if fastest <= 0.0 {
        return Some(format!(
            "a timed sample of the candidate took {fastest} µs: a time that is not positive cannot be measured"
        ));
    }
    let at_fastest = result.params.flops() / (fastest * 1e-6) / 1e12;
    if fastest.is_finite() && at_fastest > peak_tflops {
        return Some(format!(
            "the candidate's fastest sample ({fastest:.3} µs) would be {at_fastest:.0} TFLOP/s, above this GPU's peak dense tensor throughput ({peak_tflops:.0} TFLOP/s): the timed launches cannot have done the work"
        ));
    }
    let p50 = result.summary.as_ref()?.p50;
    let reference = reference_p50?;
    if p50 > 0.0 && reference / p50 > max_speedup {
        return Some(format!(
            "the candidate measured {:.1}× faster than its reference ({reference:.3} → {p50:.3} µs), more than gate.max_speedup ({max_speedup}×): a speed-up this large is refused as unproven; if it is real, raise gate.max_speedup in the config",
            reference / p50
        ));
    }
    None
}

/// The random shapes parity also runs on: for every (dtype, head_dim, causal) among the
/// shapes measured, one with an odd seq_len and one with any seq_len the config does not
/// list, up to 64 past the longest configured one, batch 1–2, heads 1–4. Drawn from the
/// run's OS-random key (recorded with each probe's seed), so a kernel cannot predict them.
fn probe_shapes(shapes: &[ShapeParams], key: u64) -> Vec<ShapeParams> {
    use rand::RngExt;
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(key ^ 0x009b_0be5);
    let mut kinds: Vec<(crate::config::Dtype, u32, bool)> = shapes
        .iter()
        .map(|s| (s.dtype, s.head_dim, s.causal))
        .collect();
    kinds.sort_by_key(|k| (k.0, k.1, k.2));
    kinds.dedup();
    let listed: std::collections::BTreeSet<u32> = shapes.iter().map(|s| s.seq_len).collect();
    let mut out = Vec::new();
    for (dtype, head_dim, causal) in kinds {
        let longest = shapes
            .iter()
            .filter(|s| (s.dtype, s.head_dim, s.causal) == (dtype, head_dim, causal))
            .map(|s| s.seq_len)
            .max()
            .unwrap_or(512);
        for odd in [true, false] {
            let seq_len = loop {
                let n = rng.random_range(1..=longest + 64);
                if (!odd || n % 2 == 1) && !listed.contains(&n) {
                    break n;
                }
            };
            out.push(ShapeParams {
                batch: rng.random_range(1..=2),
                heads: rng.random_range(1..=4),
                seq_len,
                head_dim,
                causal,
                dtype,
            });
        }
    }
    out
}

/// Parity of the candidate on the random shapes (gpu::parity::check_parity). The base is
/// the kernel already merged: it is checked on the configured shapes, where the A/B needs it
/// right, and not here (half the cost).
fn run_probes(
    backend: &mut dyn Backend,
    config: &Config,
    shapes: &[ShapeParams],
) -> Vec<ProbeResult> {
    let key = backend.run_key();
    probe_shapes(shapes, key)
        .into_iter()
        .enumerate()
        .map(|(i, params)| {
            let seed = key.rotate_left(17) ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
            let tol = config.parity.tolerance(params.dtype);
            let mut probe = ProbeResult {
                name: params.name(),
                params,
                seed,
                parity: None,
                base_parity: None,
                error: None,
            };
            match backend.parity(Side::Candidate, &params, tol, seed) {
                Ok(p) => probe.parity = Some(p),
                Err(e) => probe.error = Some(e.to_string()),
            }
            probe
        })
        .collect()
}

/// Why `shape` fails through a random shape of its kind, if the candidate failed one.
fn probe_failure(probes: &[ProbeResult], shape: &ShapeParams) -> Option<String> {
    probes
        .iter()
        .filter(|p| {
            (p.params.dtype, p.params.head_dim, p.params.causal)
                == (shape.dtype, shape.head_dim, shape.causal)
        })
        .find_map(|p| {
            let why = match (&p.error, &p.parity) {
                (Some(e), _) => e.clone(),
                (None, Some(par)) if !par.passed() => format!(
                    "rel L2 {:.2e}, max abs {:.2e}, {} unwritten, {} NaN/Inf",
                    par.rel_l2, par.max_abs, par.unwritten, par.nan_or_inf
                ),
                _ => return None,
            };
            Some(format!(
                "the candidate fails parity on the random shape {} of the same kind, which the gate adds to every run ({why}; probe seed {})",
                p.name, p.seed
            ))
        })
}

/// The kernels of the stored baseline's commit, read with git into a temporary directory.
/// The kernels of the stored baseline's commit, read with git, for tracing a drift: only when
/// they are the kernels the baseline measured. A baseline recorded from a working tree with
/// uncommitted kernels names a commit whose `attention.cu` is another one (its
/// `kernel_source_hash` says which was measured); timing that commit's kernels would trace
/// the drift against kernels the baseline never ran, so it is refused and said.
fn drift_kernels(
    commit: &str,
    kernels: &std::path::Path,
    measured_hash: Option<&str>,
) -> Result<(BaseKernels, tempfile::TempDir)> {
    let Some(full) = super::git::resolve(commit) else {
        bail!("the stored baseline's commit {commit} is not in this repository");
    };
    let tmp = tempfile::Builder::new()
        .prefix("ci-gate-drift-")
        .tempdir()?;
    let short = full.chars().take(12).collect::<String>();
    let label = format!("the baseline's commit {short}");
    let k = super::git::export_kernels(&full, &label, kernels, tmp.path())?;
    if let Some(measured) = measured_hash {
        let at_commit = crate::gpu::KernelSource::read(&k.dir.join("attention.cu"))?.hash;
        if at_commit != measured {
            bail!(
                "the stored baseline's commit {short} holds an attention.cu (SHA-256 {}…) other than the one the baseline measured ({}…): it was recorded from uncommitted kernels",
                at_commit.chars().take(12).collect::<String>(),
                measured.chars().take(12).collect::<String>()
            );
        }
    }
    Ok((k, tmp))
}

/// Loads the stored baseline (if asked) and says what a reader needs to know about it.
fn load_stored(
    plan: &RunPlan,
    env: &Environment,
    ab_on: bool,
    warnings: &mut Vec<String>,
) -> Result<(Option<BaselineFile>, Option<BaselineRef>)> {
    let Against::Store(store) = &plan.against else {
        return Ok((None, None));
    };
    let config = &plan.config;
    let path = store.path(&env.gpu_slug, &config.name);
    let Some(b) = store.load(&env.gpu_slug, &env.gpu_name, &config.name)? else {
        warnings.push(format!(
            "no stored baseline for {} and config {} at {}{}",
            env.gpu_name,
            config.name,
            path.display(),
            if ab_on {
                ": A/B alone decides"
            } else {
                ": every shape reads no-baseline"
            }
        ));
        return Ok((None, None));
    };
    let cache = config.measure.cache;
    if !plan.shapes.iter().any(|s| b.shape(s, cache).is_some()) {
        let what = format!(
            "the stored baseline {} matches none of the shapes measured (parameters and {cache} cache)",
            path.display()
        );
        if !ab_on {
            bail!("{what}, and no A/B ran: nothing can decide");
        }
        warnings.push(format!("{what}: A/B alone decides"));
    }
    warnings.extend(version_warnings(&b.environment, env));
    let r = BaselineRef {
        path: path.display().to_string(),
        commit: b.provenance.commit.clone(),
        recorded_at: b.provenance.recorded_at,
    };
    Ok((Some(b), Some(r)))
}

fn median_of(rounds: &[Vec<f64>]) -> Option<f64> {
    Sample::new(rounds.iter().flatten().copied().collect())
        .ok()
        .map(|s| s.median())
}

fn stored_p50(
    stored: Option<&BaselineFile>,
    params: &ShapeParams,
    cache: CacheMode,
) -> Option<f64> {
    median_of(&stored?.shape(params, cache)?.samples_us)
}

/// Measures the baseline commit's kernels against the candidate (paired, this process) and
/// against their stored numbers, and says which moved: the code (the candidate is slower
/// than the old kernels measured alongside it) or the runner (the old kernels are now
/// slower than their stored numbers).
fn trace_drift(
    backend: &mut dyn Backend,
    config: &Config,
    old: &BaseKernels,
    stored: Option<&BaselineFile>,
    shape: &ShapeResult,
    design: StageDesign,
) -> Result<DriftCheck> {
    let params = &shape.params;
    let seed = config.parity.seed ^ 0xd41f7;
    let id = backend.begin(
        params,
        &[Side::Other, Side::Candidate],
        &config.measure,
        config.parity.tolerance(params.dtype),
        None,
        shape_seed(config.gate.seed ^ 0xd41f7, &shape.name),
        seed,
    )?;
    let mut run = ShapeRun {
        id,
        ab: true,
        seed,
        peers: Vec::new(),
        peer_s: 0.0,
        remeasured: Vec::new(),
        remeasure_budget: remeasure_budget(design),
    };
    let measured = run.more(backend, config, design.stage1);
    let old_samples = backend.measurement(id, 0).rounds.clone();
    let cand_samples = backend.measurement(id, 1).rounds.clone();
    backend.end(id);
    measured?;
    let old_rounds = Rounds::new(old_samples.clone())?;
    let cand_rounds = Rounds::new(cand_samples.clone())?;
    let gate = &config.gate;
    let cand_vs_commit = Comparison::paired(&old_rounds, &cand_rounds, None, gate)?;
    let commit_vs_stored = match stored.and_then(|b| b.shape(params, config.measure.cache)) {
        Some(s) => Some(Comparison::unpaired(
            &s.stored_side(),
            &old_rounds,
            None,
            gate,
        )?),
        None => None,
    };
    // The code crept when the gate's own rule says the candidate is slower than the
    // baseline commit's kernels measured beside it; the runner moved when those kernels are
    // now slower than their stored numbers by the same rule.
    let cause = if crate::verdict::slower_with_confidence(gate, &cand_vs_commit) {
        DriftCause::Code
    } else if commit_vs_stored
        .as_ref()
        .is_some_and(|c| crate::verdict::slower_with_confidence(gate, c))
    {
        DriftCause::Runner
    } else {
        DriftCause::Unclear
    };
    Ok(DriftCheck {
        commit: old.commit.clone().unwrap_or_else(|| old.source.clone()),
        samples_us: old_samples,
        cand_samples_us: cand_samples,
        cand_vs_commit: Some(cand_vs_commit),
        commit_vs_stored,
        cause,
    })
}

/// Copies what a shape's sides measured into its result.
fn fill(
    result: &mut ShapeResult,
    run: &ShapeRun,
    backend: &dyn Backend,
    cache: CacheMode,
    design: StageDesign,
) {
    result.peers = run.peers.clone();
    result.remeasured = run.remeasured.clone();
    let sides: Vec<&Measurement> = run
        .base(backend)
        .into_iter()
        .chain([run.cand(backend)])
        .collect();
    if run.ab {
        result.clock_events = sides.iter().map(|m| m.clock_events.clone()).collect();
    }
    let cand = run.cand(backend);
    result.samples_us = cand.rounds.clone();
    match median_of(&cand.rounds)
        .and(Sample::new(cand.rounds.iter().flatten().copied().collect()).ok())
    {
        Some(s) => {
            let summary = s.summary();
            result.tflops = Some(result.params.flops() / (summary.p50 * 1e-6) / 1e12);
            result.summary = Some(summary);
        }
        None => result.error = Some("its timings are unusable: fewer than 2 values".into()),
    }
    if let Some(base) = run.base(backend) {
        result.base_samples_us = base.rounds.clone();
        result.pair_order = backend.orders(run.id).to_vec();
        result.base_summary = Sample::new(base.rounds.iter().flatten().copied().collect())
            .ok()
            .map(|s| s.summary());
    }
    let clocks: Vec<u32> = sides
        .iter()
        .flat_map(|m| m.sm_clock_mhz.iter().copied())
        .collect();
    let rounds = cand.rounds.len() as u32;
    result.measurement = Some(MeasurementInfo {
        cache,
        launches_per_sample: cand.launches_per_sample,
        rounds,
        extra_rounds: rounds.saturating_sub(design.stage1),
        working_set_bytes: cand.working_set_bytes,
        wall_s: sides.iter().map(|m| m.wall_s).sum(),
        sm_clock_mhz: clocks
            .iter()
            .min()
            .zip(clocks.iter().max())
            .map(|(lo, hi)| (*lo, *hi)),
        design: Some(design),
        checked_launches: cand.checked_launches,
    });
}

/// What the clocks did, said only where it could bias a comparison: pairs measured again
/// because a clock change hit one side (a note, with the figures), pairs still unbalanced
/// when the budget ran out (a warning: the A/B may carry it), and throttling around a run
/// with no A/B to cancel it (a warning). Clock changes that hit both sides of the pairs alike
/// — nearly every long shape under the power cap — are not news and say nothing.
fn clock_warnings(
    shapes: &[ShapeResult],
    env: &Environment,
    samples_per_round: u32,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let mut warnings = Vec::new();
    for s in shapes {
        if !s.remeasured.is_empty() {
            let figures: Vec<String> = s
                .remeasured
                .iter()
                .map(|r| {
                    format!(
                        "{} base vs {} candidate",
                        r.base_clock_events, r.cand_clock_events
                    )
                })
                .collect();
            notes.push(format!(
                "{}: {} pair(s) measured again because the SM clock moved across more samples of one side ({} samples)",
                s.name,
                s.remeasured.len(),
                figures.join("; ")
            ));
        }
        if let [base, cand] = s.clock_events.as_slice() {
            let left: Vec<String> = base
                .iter()
                .zip(cand)
                .enumerate()
                .filter(|(_, (b, c))| unbalanced(**b, **c, samples_per_round))
                .map(|(i, (b, c))| format!("pair {}: {b} base vs {c} candidate samples", i + 1))
                .collect();
            if !left.is_empty() {
                warnings.push(format!(
                    "{}: the SM clock moved across more samples of one side in {} pair(s) after the re-measuring budget ran out ({}): its A/B may carry the change",
                    s.name,
                    left.len(),
                    left.join("; ")
                ));
            }
        }
    }
    let throttle: Vec<String> = [&env.state_before, &env.state_after]
        .into_iter()
        .flatten()
        .flat_map(|s| throttled(&s.throttle_reasons))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !throttle.is_empty() {
        let unpaired: Vec<&str> = shapes
            .iter()
            .filter(|s| s.ab.is_none() && s.stored.is_some())
            .map(|s| s.name.as_str())
            .collect();
        let reasons = throttle.join(", ");
        if unpaired.is_empty() {
            notes.push(format!(
                "the GPU's clocks were held down at the start or end of the run ({reasons}); A/B pairs alternate their samples, so both sides saw it alike"
            ));
        } else {
            warnings.push(format!(
                "the GPU's clocks were held down during the run ({reasons}) and {} compared with the stored baseline alone, which nothing measured beside it cancels: those timings may be slower than usual",
                unpaired.join(", ")
            ));
        }
    }
    warnings
}

/// Warnings for a baseline recorded under another driver or CUDA version: still the same GPU
/// model, so still compared, but a reader should know.
fn version_warnings(old: &Environment, env: &Environment) -> Vec<String> {
    let mut w = Vec::new();
    if old.driver_version != env.driver_version {
        w.push(format!(
            "the baseline was recorded with driver {}, this run uses {}",
            old.driver_version.as_deref().unwrap_or("?"),
            env.driver_version.as_deref().unwrap_or("?")
        ));
    }
    if old.cuda_driver_version != env.cuda_driver_version {
        w.push(format!(
            "the baseline was recorded with CUDA {}, this run uses {}",
            old.cuda_driver_version.as_deref().unwrap_or("?"),
            env.cuda_driver_version.as_deref().unwrap_or("?")
        ));
    }
    w
}

fn progress_bar(enabled: bool, len: usize) -> ProgressBar {
    // Only on a terminal: logs and pipes get no control sequences.
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

/// Loads the config and selects shapes, naming the file on errors.
pub fn load_config(
    path: &std::path::Path,
    shapes: &[String],
) -> Result<(Config, Vec<ShapeParams>)> {
    let config = match Config::load(path) {
        Err(crate::config::ConfigError::Read { cause, .. })
            if cause.kind() == std::io::ErrorKind::NotFound
                && path == std::path::Path::new(crate::cli::DEFAULT_CONFIG) =>
        {
            bail!(
                "no {} here or in any parent directory: run ci-gate inside your repository, or pass --config FILE (with --baselines DIR and --kernels DIR)",
                crate::cli::DEFAULT_CONFIG
            )
        }
        other => other?,
    };
    let selected = config.select_shapes(shapes)?;
    Ok((config, selected))
}

/// Installs what a hung GPU does to this process (gpu::watchdog): the message on stderr
/// and, with `out`, a results file without a verdict whose error names the shape and side;
/// the watchdog then ends the process with exit code 2.
pub fn on_hang(config: &Config, out: Option<PathBuf>) {
    let config = config.clone();
    crate::gpu::watchdog::set_hang_handler(Box::new(move |message| {
        eprintln!("error: {message}");
        if let Some(out) = &out {
            let r = failed_run(Some(&config), &anyhow::anyhow!("{message}"));
            if let Err(e) = r.save(out) {
                eprintln!(
                    "error: the results could not be saved to {}: {e}",
                    out.display()
                );
            }
        }
    }));
}

/// A results file for a run that could not reach a verdict (what `ci` writes on exit 2).
pub fn failed_run(config: Option<&Config>, error: &anyhow::Error) -> ResultsFile {
    ResultsFile::failed(config, format!("{error:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(driver: &str, cuda: &str) -> Environment {
        Environment {
            gpu_name: "NVIDIA H200".into(),
            gpu_slug: "nvidia-h200".into(),
            gpu_uuid: None,
            compute_capability: "9.0".into(),
            sm_count: None,
            l2_bytes: None,
            driver_version: Some(driver.into()),
            cuda_driver_version: Some(cuda.into()),
            nvrtc_version: None,
            state_before: None,
            state_after: None,
        }
    }

    #[test]
    fn driver_and_cuda_changes_are_warnings() {
        assert!(version_warnings(&env("580.1", "13.0"), &env("580.1", "13.0")).is_empty());
        let w = version_warnings(&env("570.9", "12.8"), &env("580.1", "13.0"));
        assert_eq!(w.len(), 2);
        assert!(w[0].contains("driver 570.9, this run uses 580.1"), "{w:?}");
        assert!(w[1].contains("CUDA 12.8, this run uses 13.0"), "{w:?}");
    }
}

#[cfg(test)]
mod integrity_tests {
    use super::*;
    use crate::config::Dtype;

    fn measured(params: ShapeParams, samples: Vec<Vec<f64>>) -> ShapeResult {
        let mut r = ShapeResult::new(params);
        r.summary = Sample::new(samples.iter().flatten().copied().collect())
            .ok()
            .map(|s| s.summary());
        r.samples_us = samples;
        r
    }

    #[test]
    fn a_time_no_gpu_can_reach_is_an_error_not_an_improvement() {
        // b2h16s4096d128: 275 GFLOP. The shipped gate read 2.3 µs for it (120 PFLOP/s).
        let p = ShapeParams::new(2, 16, 4096, 128, false, Dtype::Float16);
        let peak = 2600.0; // TFLOP/s, an H200-like bound
        let fake = measured(p, vec![vec![2.3, 2.4], vec![2.3, 2.5]]);
        let why = speed_limit(&fake, Some(577.0), peak, 3.0).expect("refused");
        assert!(why.contains("peak dense tensor throughput"), "{why}");
        // A real time of the shipped kernel passes, against the same base.
        let real = measured(p, vec![vec![495.0, 497.0], vec![496.0, 498.0]]);
        assert_eq!(speed_limit(&real, Some(497.0), peak, 3.0), None);
    }

    #[test]
    fn more_than_max_speedup_faster_than_the_reference_is_an_error() {
        let p = ShapeParams::new(1, 8, 512, 64, false, Dtype::Float16);
        let r = measured(p, vec![vec![2.0, 2.1], vec![2.0, 2.1]]);
        let why = speed_limit(&r, Some(6.5), 1e9, 3.0).expect("refused");
        assert!(
            why.contains("3.2× faster") && why.contains("gate.max_speedup"),
            "{why}"
        );
        // Just under the limit passes; a raised limit lets a real rewrite through.
        assert_eq!(speed_limit(&r, Some(6.0), 1e9, 3.0), None);
        assert_eq!(speed_limit(&r, Some(6.5), 1e9, 4.0), None);
        // Without a reference only the peak applies.
        assert_eq!(speed_limit(&r, None, 1e9, 3.0), None);
        // A time that is not positive is never a measurement.
        let zero = measured(p, vec![vec![0.0, 2.0], vec![2.0, 2.1]]);
        assert!(speed_limit(&zero, None, 1e9, 3.0).is_some());
    }

    #[test]
    fn random_shapes_cover_every_kind_with_unlisted_seq_lens() {
        let shapes = [
            ShapeParams::new(4, 16, 512, 64, false, Dtype::Float16),
            ShapeParams::new(4, 16, 2048, 64, true, Dtype::Float16),
            ShapeParams::new(2, 16, 4096, 128, true, Dtype::Bfloat16),
        ];
        let a = probe_shapes(&shapes, 1);
        assert_eq!(a.len(), 6, "two per kind: {a:?}");
        for kind in &shapes {
            let of_kind: Vec<_> = a
                .iter()
                .filter(|p| {
                    (p.dtype, p.head_dim, p.causal) == (kind.dtype, kind.head_dim, kind.causal)
                })
                .collect();
            assert_eq!(of_kind.len(), 2);
            assert!(of_kind.iter().any(|p| p.seq_len % 2 == 1), "{of_kind:?}");
            assert!(of_kind.iter().all(|p| p.seq_len <= kind.seq_len + 64));
        }
        assert!(
            a.iter()
                .all(|p| shapes.iter().all(|s| s.seq_len != p.seq_len))
        );
        // A different run key draws different shapes.
        assert_ne!(a, probe_shapes(&shapes, 2));
    }

    #[test]
    fn a_failed_random_shape_fails_every_shape_of_its_kind_only() {
        let kind = ShapeParams::new(1, 1, 77, 64, true, Dtype::Float16);
        let bad = ProbeResult {
            name: kind.name(),
            params: kind,
            seed: 9,
            parity: None,
            base_parity: None,
            error: Some("the candidate kernel attention_fwd_f16_d64 changed its inputs".into()),
        };
        let same = ShapeParams::new(4, 16, 2048, 64, true, Dtype::Float16);
        let other = ShapeParams::new(4, 16, 2048, 64, false, Dtype::Float16);
        let why = probe_failure(std::slice::from_ref(&bad), &same).expect("fails");
        assert!(why.contains("b1h1s77d64_causal_f16") && why.contains("changed its inputs"));
        assert_eq!(probe_failure(&[bad], &other), None);
    }
}
