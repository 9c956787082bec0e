//! The results phase: a GPU shared with another process judged ([`judge_shared`]), the
//! verdicts settled (decided again where a drift was traced, energy windows measured, or the
//! GPU shared), what the clocks did said where it could bias a comparison
//! ([`clock_warnings`]), and the results file assembled.

use chrono::Utc;

use super::session::Session;
use super::shape::unbalanced;
use super::sharing::ProcessWatch;
use super::stored::Stored;
use crate::backend::{Facts, Side};
use crate::config::ShapeParams;
use crate::gpu::env::throttled;
use crate::resources::{KernelResources, ResourceSide};
use crate::results::{
    ConfigInfo, Environment, ResultsFile, SCHEMA_VERSION, ShapeResult, current_git_commit,
};

/// The results file of the run. `changed`: the drift or energy phase changed what decides a
/// shape, so the verdicts are decided again (as they are where the GPU was shared).
pub(super) fn results(
    mut s: Session,
    backend: &dyn Facts,
    changed: bool,
) -> anyhow::Result<ResultsFile> {
    s.sample_processes(backend);
    let shared = s.watch.shared();
    if shared {
        judge_shared(&s.watch, &mut s.shapes, &s.stored, &mut s.notes);
    }
    if changed || shared {
        s.evaluate()?;
    }
    s.warnings.extend(s.watch.warning());
    s.timing.other_processes = s.watch.others();
    s.timing.processes_unknown = s.watch.unknown();
    s.bar.finish_and_clear();
    s.timing.total_s = s.started.elapsed().as_secs_f64();
    let kernel_resources = kernel_resources(&s, backend);
    let config = &s.run.config;
    let clock = clock_warnings(
        &s.shapes,
        &s.env,
        config.measure.samples_per_round,
        &mut s.notes,
    );
    s.warnings.extend(clock);
    let peers = s.peer_session.as_mut().and_then(|p| {
        let runtime = p.runtime.clone()?;
        Some(crate::peers::PeersInfo {
            runtime: Some(runtime),
            method: Some(crate::peers::PeerMethod::new(
                config.measure.sample_ms,
                config.measure.duty_cycle,
            )),
            launches: std::mem::take(&mut p.launches),
        })
    });
    Ok(ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: current_git_commit(),
        created_at: Utc::now(),
        environment: Some(s.env),
        config: ConfigInfo::of(config),
        method: Some(crate::method::Method::current()),
        kernel_source_hash: Some(s.sides.cand_hash),
        gate: config.gate.clone(),
        baseline: s.stored.reference,
        shapes: s.shapes,
        passed: s.passed,
        warnings: s.warnings,
        notes: s.notes,
        error: None,
        base: s.sides.base_info,
        fail_on_drift: s.run.request.fail_on_drift,
        profiling: None,
        shard: None,
        peers,
        probes: s.probes,
        timing: Some(s.timing),
        energy: s.energy,
        kernel_resources,
    })
}

/// What the compiler gave the kernels that ran: the base's (without a base, what the stored
/// baseline recorded, for the report to compare the candidate's with), then the candidate's.
fn kernel_resources(s: &Session, backend: &dyn Facts) -> Vec<KernelResources> {
    let launched: Vec<ShapeParams> = s.shapes.iter().map(|r| r.params).collect();
    let mut out = Vec::new();
    if s.sides.base_hash.is_some() {
        out.extend(backend.kernel_resources(Side::Base, &launched));
    } else if let Some(b) = s.stored.file.as_ref() {
        out.extend(b.kernel_resources.iter().map(|k| KernelResources {
            side: ResourceSide::Baseline,
            ..k.clone()
        }));
    }
    out.extend(backend.kernel_resources(Side::Candidate, &launched));
    out
}

/// A run another process shared the GPU with (`sharing::ProcessWatch`): the comparison with
/// the stored baseline is not judged (the verdicts are decided again without it, with a
/// note); a shape whose only reference is the stored baseline (no A/B) then has no verdict,
/// an `error` that says why — never a pass that nothing judged.
fn judge_shared(
    watch: &ProcessWatch,
    shapes: &mut [ShapeResult],
    stored: &Stored,
    notes: &mut Vec<String>,
) {
    if stored.file.is_none() {
        return;
    }
    let mut any = false;
    for s in shapes.iter_mut() {
        // Only where the stored baseline would have judged it (one of another method judges
        // nothing either way).
        if !stored.judges(&s.params) {
            continue;
        }
        any = true;
        if s.only_stored_could_judge() {
            s.error = Some(watch.unjudged_error());
        }
    }
    if any {
        notes.extend(watch.stored_note());
    }
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
