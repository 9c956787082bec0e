//! The drift phase: a shape whose A/B shows no change but which is slower than the stored
//! baseline (`drift`) is traced with the kernels of the baseline's own commit, read with git
//! and measured as a third side beside the candidate: the code crept, or the runner moved.

use anyhow::{Result, bail};

use super::git::BaseKernels;
use super::session::Session;
use super::shape::ShapeRun;
use super::stored::Stored;
use crate::backend::{GpuError, Measure, Side};
use crate::baseline::BaselineFile;
use crate::comparison::{Comparison, shape_seed};
use crate::config::Config;
use crate::kernel::KernelDir;
use crate::results::{DriftCause, DriftCheck, ShapeResult, StageDesign};
use crate::stats::{Rounds, StatsError};

/// Why one shape's drift could not be traced: the GPU (a spent budget among them, which ends
/// the run) or the statistics of what it measured.
#[derive(Debug, thiserror::Error)]
pub(super) enum DriftError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Stats(#[from] StatsError),
}

/// Traces each shape of `drifting` (`decide::drifting`), where the run asks for it and the
/// stored baseline's commit is in the repository (else a note says why not): what it finds
/// is the shape's `drift`, which the verdicts then read (a drift traced to the runner does
/// not fail). A spent GPU budget ends the run; any other failure on a shape is a warning.
pub(super) fn trace(
    s: &mut Session,
    backend: &mut dyn Measure,
    stored: &Stored,
    shapes: &mut [ShapeResult],
    drifting: &[usize],
) -> Result<()> {
    if drifting.is_empty() {
        return Ok(());
    }
    let run = s.run;
    let stored = stored.file.as_ref();
    let commit = stored.and_then(|b| b.provenance.commit.clone());
    let measured = stored.and_then(|b| b.kernel_source_hash.as_deref());
    let old = match (&commit, run.request.trace_drift) {
        (Some(c), true) => drift_kernels(c, &run.request.kernels, measured),
        _ => Err(anyhow::anyhow!("tracing was not asked for")),
    };
    let (old, _tmp) = match old {
        Ok(k) => k,
        Err(e) => {
            s.log.notes.push(format!(
                "the drift was not traced to the runner or the code: {e:#}"
            ));
            return Ok(());
        }
    };
    backend.load_other(&KernelDir::new(&old.dir), &run.config.compile.defines)?;
    let design = run.design();
    let shapes = shapes.iter_mut().enumerate();
    for (_, shape) in shapes.filter(|(i, _)| drifting.contains(i)) {
        s.bar
            .set_message(format!("{} (tracing the drift)", shape.name));
        match trace_shape(backend, &run.config, &old, stored, shape, design) {
            Ok(c) => shape.drift = Some(c),
            Err(DriftError::Gpu(GpuError::Budget(why))) => {
                return Err(GpuError::Budget(why).into());
            }
            Err(e) => s.log.warnings.push(format!(
                "{}: the drift could not be traced: {e}",
                shape.name
            )),
        }
    }
    Ok(())
}

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
        let at_commit = KernelDir::new(&k.dir).read_timed()?.hash;
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

/// Measures the baseline commit's kernels against the candidate (paired, this process) and
/// against their stored numbers, and says which moved: the code (the candidate is slower
/// than the old kernels measured alongside it) or the runner (the old kernels are now
/// slower than their stored numbers).
fn trace_shape(
    backend: &mut dyn Measure,
    config: &Config,
    old: &BaseKernels,
    stored: Option<&BaselineFile>,
    shape: &ShapeResult,
    design: StageDesign,
) -> Result<DriftCheck, DriftError> {
    let params = &shape.params;
    let seed = config.parity.seed ^ 0xd41f7;
    let handle = backend.begin(
        params,
        &[Side::Other, Side::Candidate],
        &config.measure,
        config.parity.tolerance(params.dtype),
        None,
        shape_seed(config.gate.seed ^ 0xd41f7, &shape.name),
        seed,
    )?;
    let mut run = ShapeRun::new(handle, true, seed, design);
    let measured = run.more(backend, config, design.stage1);
    let mut sides = run.end(backend).into_iter().map(|m| m.rounds);
    let old_samples = sides.next().unwrap_or_default();
    let cand_samples = sides.next().unwrap_or_default();
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
