//! The stored baseline a run compares with ([`Stored`]): loaded in the setup, where the run
//! asks for it, with what a reader needs to know about it.

use anyhow::{Result, bail};

use super::request::Run;
use crate::baseline::{BaselineFile, BaselineShape, other_method_sentence};
use crate::comparison::StoredSide;
use crate::config::{CacheMode, ShapeParams};
use crate::method::Method;
use crate::results::{BaselineRef, Environment, repo_config_path};
use crate::stats::Sample;

/// The stored baseline of a run (none where it compares with none, or none is stored).
pub(super) struct Stored {
    pub file: Option<BaselineFile>,
    /// What the results record of it.
    pub reference: Option<BaselineRef>,
    /// The run's cache mode: a stored shape is the same shape only in the same mode.
    pub cache: CacheMode,
    /// It was measured by another method than this run's (`crate::method`): it is then no
    /// reference, and the shapes it holds read `other-method` where no A/B decides.
    pub other_method: bool,
}

impl Stored {
    /// The stored shape with these parameters (in the run's cache mode).
    pub(crate) fn shape(&self, params: &ShapeParams) -> Option<&BaselineShape> {
        self.file.as_ref()?.shape(params, self.cache)
    }

    /// That shape as the reference of an unpaired comparison (marked where it is of another
    /// method: `evaluate` then does not compare it).
    pub(crate) fn side(&self, params: &ShapeParams) -> Option<StoredSide> {
        self.shape(params).map(|s| StoredSide {
            other_method: self.other_method,
            ..s.stored_side()
        })
    }

    /// Whether it would judge this shape: it holds it, measured by this run's method.
    pub(crate) fn judges(&self, params: &ShapeParams) -> bool {
        !self.other_method && self.shape(params).is_some()
    }

    /// Its p50 (the reference of an injected slowdown, and of the speed limit, without A/B).
    pub(crate) fn p50(&self, params: &ShapeParams) -> Option<f64> {
        median_of(&self.shape(params)?.samples_us)
    }
}

/// The median of every value of `rounds`; `None` for fewer than two or non-finite ones.
pub(super) fn median_of(rounds: &[Vec<f64>]) -> Option<f64> {
    Sample::new(rounds.iter().flatten().copied().collect())
        .ok()
        .map(|s| s.median())
}

/// Loads the stored baseline (if the run asks for it) and says what a reader needs to know
/// about it: none stored, none of the shapes in it (an error where no A/B runs either: then
/// nothing can decide), another driver or CUDA version.
pub(super) fn load(
    run: &Run,
    env: &Environment,
    ab: bool,
    warnings: &mut Vec<String>,
) -> Result<Stored> {
    let config = &run.config;
    let cache = config.measure.cache;
    let none = Stored {
        file: None,
        reference: None,
        cache,
        other_method: false,
    };
    let Some(store) = run.store() else {
        return Ok(none);
    };
    let path = store.path(&env.gpu_slug, &config.name);
    let Some(b) = store.load(&env.gpu_slug, &env.gpu_name, &config.name)? else {
        warnings.push(format!(
            "no stored baseline for {} and config {} at {}{}",
            env.gpu_name,
            config.name,
            path.display(),
            if ab {
                ": A/B alone decides"
            } else {
                ": every shape reads no-baseline"
            }
        ));
        return Ok(none);
    };
    if !run.shapes.iter().any(|s| b.shape(s, cache).is_some()) {
        let what = format!(
            "the stored baseline {} matches none of the shapes measured (parameters and {cache} cache)",
            path.display()
        );
        if !ab {
            bail!("{what}, and no A/B ran: nothing can decide");
        }
        warnings.push(format!("{what}: A/B alone decides"));
    }
    let method = Method::current();
    let other_method = !b.measured_by(Some(&method));
    if other_method {
        warnings.push(other_method_sentence(
            &path.display().to_string(),
            b.method.as_ref(),
            Some(&method),
            &repo_config_path(&config.path.display().to_string(), &config.name),
            ab,
        ));
    } else {
        warnings.extend(environment_warnings(&b.environment, env));
    }
    let reference = BaselineRef {
        path: path.display().to_string(),
        commit: b.provenance.commit.clone(),
        recorded_at: b.provenance.recorded_at,
        method: b.method.clone(),
    };
    Ok(Stored {
        file: Some(b),
        reference: Some(reference),
        cache,
        other_method,
    })
}

/// Warnings for a baseline recorded under another driver or CUDA version, and the note (a
/// warning `report::is_informational` shows as information) for one recorded on another
/// card of the model: still the same GPU model, so still compared, but a reader should know.
/// Cards of one model differ by a few percent (two H200s 2.2% apart on one shape,
/// docs/PERF.md, 2026-12-05), which a comparison with the stored baseline cannot tell from
/// the kernels; an A/B, both sides on this card, is not affected. The UUIDs are not shown:
/// the results file holds them, a pull request's comment need not.
fn environment_warnings(old: &Environment, env: &Environment) -> Vec<String> {
    let mut w = Vec::new();
    if let (Some(stored), Some(this)) = (&old.gpu_uuid, &env.gpu_uuid)
        && stored != this
    {
        w.push(crate::report::ANOTHER_CARD_NOTE.to_owned());
    }
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
    fn a_baseline_of_another_card_of_the_model_is_a_note() {
        let card = |uuid: Option<&str>| Environment {
            gpu_uuid: uuid.map(str::to_owned),
            ..env("580.1", "13.0")
        };
        let (a, b) = (Some("GPU-aaaa"), Some("GPU-bbbb"));
        assert!(environment_warnings(&card(a), &card(a)).is_empty());
        assert!(environment_warnings(&card(None), &card(b)).is_empty());
        let w = environment_warnings(&card(a), &card(b));
        assert_eq!(w, [crate::report::ANOTHER_CARD_NOTE]);
        assert!(crate::report::is_informational(&w[0]));
        assert!(!w[0].contains("GPU-"), "{w:?}");
    }

    #[test]
    fn driver_and_cuda_changes_are_warnings() {
        assert!(environment_warnings(&env("580.1", "13.0"), &env("580.1", "13.0")).is_empty());
        let w = environment_warnings(&env("570.9", "12.8"), &env("580.1", "13.0"));
        assert_eq!(w.len(), 2);
        assert!(w[0].contains("driver 570.9, this run uses 580.1"), "{w:?}");
        assert!(w[1].contains("CUDA 12.8, this run uses 13.0"), "{w:?}");
    }
}
