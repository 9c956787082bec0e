//! The results phase: what the clocks did said where it could bias a comparison
//! ([`clock_warnings`]), the stored figures the report compares with, what the compiler gave
//! the kernels, and the results file assembled from what the phases produced ([`Products`]).

use std::time::Instant;

use chrono::Utc;

use super::peer::PeerSession;
use super::session::{Session, Sides};
use super::shape::unbalanced;
use super::stored::Stored;
use crate::backend::{Facts, Side};
use crate::config::{Config, ShapeParams};
use crate::energy::EnergyInfo;
use crate::gpu::env::throttled;
use crate::resources::{KernelResources, ResourceSide};
use crate::results::{
    ConfigInfo, Environment, ProbeResult, ResultsFile, SCHEMA_VERSION, ShapeResult,
    current_git_commit,
};

/// What the phases produced, for the results file.
pub(super) struct Products {
    /// The machine: read at the setup, its state after the timed part.
    pub env: Environment,
    pub sides: Sides,
    pub stored: Stored,
    /// Parity on random shapes.
    pub probes: Vec<ProbeResult>,
    /// The shapes' results, their verdicts decided (`decide::verdicts`).
    pub shapes: Vec<ShapeResult>,
    /// Whether the shapes pass.
    pub passed: bool,
    /// Energy windows, where measured.
    pub energy: Option<EnergyInfo>,
    /// The peers' worker, still running (it ends with the results).
    pub peer_session: PeerSession,
}

/// The results file of the run (`started`: when opening the backend began): the process
/// watch's findings and the clocks' warnings added to the log, the timing ended.
pub(super) fn results(
    mut s: Session,
    backend: &dyn Facts,
    started: Instant,
    p: Products,
) -> ResultsFile {
    let Products {
        env,
        sides,
        stored,
        probes,
        mut shapes,
        passed,
        energy,
        peer_session: mut worker,
    } = p;
    s.log.warnings.extend(s.watch.warning());
    s.timing.other_processes = s.watch.others();
    s.timing.processes_unknown = s.watch.unknown();
    s.bar.finish_and_clear();
    s.timing.total_s = started.elapsed().as_secs_f64();
    copy_stored_figures(&mut shapes, &stored);
    record_launches(&mut shapes, &sides, backend);
    crate::evaluate::launch_findings(&shapes, &mut s.log.warnings, &mut s.log.notes);
    let kernel_resources = kernel_resources(&shapes, &sides, &stored, backend);
    let config = &s.run.config;
    let clock = clock_warnings(
        &shapes,
        &env,
        config.measure.samples_per_round,
        &mut s.log.notes,
    );
    s.log.warnings.extend(clock);
    let peers = peers_info(&mut worker, config);
    ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: current_git_commit(),
        created_at: Utc::now(),
        environment: Some(env),
        config: ConfigInfo::of(config),
        method: Some(crate::method::Method::current()),
        kernel_source_hash: Some(sides.cand_hash),
        gate: config.gate.clone(),
        baseline: stored.reference,
        shapes,
        passed,
        warnings: s.log.warnings,
        notes: s.log.notes,
        error: None,
        base: sides.base_info,
        fail_on_drift: s.run.request.fail_on_drift,
        profiling: None,
        shard: None,
        peers,
        probes,
        timing: Some(s.timing),
        energy,
        kernel_resources,
    }
}

/// The peers' and energy's stored figures, so the report can say whether they moved.
fn copy_stored_figures(shapes: &mut [ShapeResult], stored: &Stored) {
    for s in shapes.iter_mut() {
        if let Some(x) = stored.shape(&s.params) {
            s.stored_peers = x.peers.clone();
            s.stored_energy = x.energy.clone();
            s.stored_launch = x.launch.clone();
        }
    }
}

/// How each shape was launched: the candidate's kernels, and the base's where an A/B ran.
fn record_launches(shapes: &mut [ShapeResult], sides: &Sides, backend: &dyn Facts) {
    for s in shapes.iter_mut() {
        s.launch = backend.launch(Side::Candidate, &s.params);
        if sides.base_hash.is_some() {
            s.base_launch = backend.launch(Side::Base, &s.params);
        }
    }
}

/// What the results record of the peers' worker: its runtime, the method, the calls per
/// sample of each peer on each shape; none where no worker answered.
fn peers_info(worker: &mut PeerSession, config: &Config) -> Option<crate::peers::PeersInfo> {
    let runtime = worker.runtime.clone()?;
    Some(crate::peers::PeersInfo {
        runtime: Some(runtime),
        method: Some(crate::peers::PeerMethod::new(
            config.measure.sample_ms,
            config.measure.duty_cycle,
        )),
        launches: std::mem::take(&mut worker.launches),
    })
}

/// What the compiler gave the kernels that ran: the base's (without a base, what the stored
/// baseline recorded, for the report to compare the candidate's with), then the candidate's.
fn kernel_resources(
    shapes: &[ShapeResult],
    sides: &Sides,
    stored: &Stored,
    backend: &dyn Facts,
) -> Vec<KernelResources> {
    let launched: Vec<ShapeParams> = shapes.iter().map(|r| r.params).collect();
    let mut out = Vec::new();
    if sides.base_hash.is_some() {
        out.extend(backend.kernel_resources(Side::Base, &launched));
    } else if let Some(b) = stored.file.as_ref() {
        out.extend(b.kernel_resources.iter().map(|k| KernelResources {
            side: ResourceSide::Baseline,
            ..k.clone()
        }));
    }
    out.extend(backend.kernel_resources(Side::Candidate, &launched));
    out
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
    warnings.extend(throttle_warning(shapes, env, notes));
    warnings
}

/// Throttling around the run: a note where every shape was measured in A/B pairs (both sides
/// saw it alike), a warning naming the shapes compared with the stored baseline alone.
fn throttle_warning(
    shapes: &[ShapeResult],
    env: &Environment,
    notes: &mut Vec<String>,
) -> Option<String> {
    let throttle: Vec<String> = [&env.state_before, &env.state_after]
        .into_iter()
        .flatten()
        .flat_map(|s| throttled(&s.throttle_reasons))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if throttle.is_empty() {
        return None;
    }
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
        return None;
    }
    Some(format!(
        "the GPU's clocks were held down during the run ({reasons}) and {} compared with the stored baseline alone, which nothing measured beside it cancels: those timings may be slower than usual",
        unpaired.join(", ")
    ))
}
