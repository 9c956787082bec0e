//! The parity phase: before anything is timed, the candidate on random shapes it cannot
//! predict ([`probes`]); then, before each shape's first stage, both sides on that shape
//! ([`shape`]). A candidate that is right only on the configured shapes fails every shape of
//! the kind of a random shape it fails ([`probe_failure`]).

use std::time::Instant;

use super::session::Session;
use super::shape::Failure;
use crate::backend::{Measure, Side};
use crate::config::{Config, ShapeParams, Tolerance};
use crate::results::{ProbeResult, ShapeResult};

/// Parity on the random shapes, where the run checks parity (`run_key`: the run's secret,
/// which draws them).
pub(super) fn probes(s: &mut Session, backend: &mut dyn Measure, run_key: u64) -> Vec<ProbeResult> {
    let t = Instant::now();
    let run = s.run;
    let probes = if run.request.parity {
        run_probes(backend, run_key, &run.config, &run.shapes)
    } else {
        Vec::new()
    };
    s.timing.probes_s = t.elapsed().as_secs_f64();
    probes
}

/// Parity of a shape before its first stage, where the run checks parity: the base first
/// (in A/B, `ab`, unless the request says where it was checked already; how long its check
/// took bounds the candidate's wait), whose failure leaves the A/B without a valid
/// reference (an error), then the candidate.
pub(super) fn shape(
    s: &mut Session,
    backend: &mut dyn Measure,
    ab: bool,
    result: &mut ShapeResult,
    tolerance: Tolerance,
    seed: u64,
) -> Result<(), Failure> {
    if !s.run.request.parity {
        return Ok(());
    }
    let params = result.params;
    let t = Instant::now();
    if ab && s.run.request.base_parity_checked.is_none() {
        let p = backend.parity(Side::Base, &params, tolerance, seed)?;
        let failed = !p.passed();
        let summary = format!(
            "rel L2 {:.2e}, max abs {:.2e}{}",
            p.rel_l2,
            p.max_abs,
            p.centered_phrase()
        );
        result.base_parity = Some(p);
        if failed {
            return Err(Failure::Error(format!(
                "the base kernels ({}) fail parity on this shape ({summary}), so the A/B comparison has no valid reference",
                s.run
                    .request
                    .base
                    .as_ref()
                    .map_or("?", |b| b.source.as_str())
            )));
        }
    }
    result.parity = Some(backend.parity(Side::Candidate, &params, tolerance, seed)?);
    s.timing.parity_s += t.elapsed().as_secs_f64();
    Ok(())
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
    backend: &mut dyn Measure,
    key: u64,
    config: &Config,
    shapes: &[ShapeParams],
) -> Vec<ProbeResult> {
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
pub(super) fn probe_failure(probes: &[ProbeResult], shape: &ShapeParams) -> Option<String> {
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
                    "rel L2 {:.2e}, max abs {:.2e}{}, {} unwritten, {} NaN/Inf",
                    par.rel_l2,
                    par.max_abs,
                    par.centered_phrase(),
                    par.unwritten,
                    par.nan_or_inf
                ),
                _ => return None,
            };
            Some(format!(
                "the candidate fails parity on the random shape {} of the same kind, which the gate adds to every run ({why}; probe seed {})",
                p.name, p.seed
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Dtype;

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
