//! The results files of a sharded run joined into one (`ci-gate merge`, and `--devices`,
//! whose children are shards). The shards must be
//! one run: the same config, commit, kernels (both sides), GPU model and stored baseline,
//! every shard of N exactly once, every shape exactly once. The comparisons are then made
//! again over all shapes, so the verdict is the whole run's, not a shard's.
//!
//! A shard file is data written where the pull request's kernels ran: merge takes only its
//! measurements. The rules come from the base commit ([`Rules`]): the gate settings, parity
//! tolerances, two-stage design, shapes and cache mode from its config (whose hash every
//! shard must record), the stored baseline from its store (wherever it holds one for a
//! shape, whatever the shard says), and the drift policy from merge's own flag.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::baseline::{BaselineStore, other_method_sentence};
use crate::comparison::{StageDesign, StoredSide};
use crate::config::{Config, ShapeParams};
use crate::evaluate::evaluate;
use crate::method::Method;
use crate::results::{BaselineRef, ResultsFile};
use crate::shard::ShardInfo;
use crate::verdict::Policy;

/// What a merge judges by: everything that decides a verdict, none of it from a shard file.
pub(crate) struct Rules<'a> {
    /// The config the shards must have run (its hash is checked against each shard's).
    pub config: &'a Config,
    /// The run's shapes: the config's, or the `--shape` selection of a `--devices` run.
    pub shapes: &'a [ShapeParams],
    /// The stored baselines of the base commit.
    pub baselines: &'a Path,
    pub fail_on_drift: bool,
}

/// Checks that `shards` are the whole of one run of `rules.config` and joins them, comparing
/// again over all shapes under `rules`.
pub fn merge(shards: Vec<(PathBuf, ResultsFile)>, rules: &Rules) -> Result<ResultsFile> {
    // A shard that failed says why before anything else is checked of it.
    for (p, r) in &shards {
        if let Some(e) = &r.error {
            bail!("{} reached no verdict: {e}", label(p, r));
        }
    }
    for (p, r) in &shards {
        if r.config.hash != rules.config.hash {
            bail!(
                "{} ran a config with hash {}, not {} ({}): merge judges only shards of the base commit's config",
                label(p, r),
                crate::text::clip_text(&crate::text::terminal_text(&r.config.hash), 80),
                rules.config.hash,
                rules.config.path.display()
            );
        }
    }
    let shared = shared_shapes(&shards);
    let joined = join(shards)?;
    reevaluate(joined, rules, &shared)
}

/// The shapes of the shards that another process shared the GPU with. The run that measured
/// them did not judge their comparison with the stored baseline (`run::assemble`): the other
/// process slowed them by an unknown amount. Merge keeps that, shard by shard, rather than
/// comparing them with the stored baseline after all.
fn shared_shapes(shards: &[(PathBuf, ResultsFile)]) -> BTreeSet<String> {
    shards
        .iter()
        .filter(|(_, r)| {
            r.timing
                .as_ref()
                .is_some_and(|t| !t.other_processes.is_empty())
        })
        .flat_map(|(_, r)| r.shapes.iter().map(|s| s.name.clone()))
        .collect()
}

/// Names a shard file in messages: `shard 2/4 (path)`.
pub(crate) fn label(path: &Path, r: &ResultsFile) -> String {
    match &r.shard {
        Some(s) => format!("shard {}/{} ({})", s.index, s.count, path.display()),
        None => path.display().to_string(),
    }
}

/// The checks and the join, without comparing: pure.
pub fn join(shards: Vec<(PathBuf, ResultsFile)>) -> Result<ResultsFile> {
    let info = one_run(&shards)?;
    Ok(joined(shards, &info))
}

/// The shard information of `shards` when they are the whole of one run: every shard
/// reached a verdict, they agree in everything that makes them comparable, and every shard
/// and every shape of the run is there exactly once.
fn one_run(shards: &[(PathBuf, ResultsFile)]) -> Result<ShardInfo> {
    if shards.is_empty() {
        bail!("no results files to merge");
    }
    let mut infos = Vec::with_capacity(shards.len());
    for (p, r) in shards {
        let Some(info) = &r.shard else {
            bail!(
                "{}: not a shard (it has no shard information): merge joins the results of `--shard K/N` runs",
                p.display()
            );
        };
        if let Some(e) = &r.error {
            bail!("{} reached no verdict: {e}", label(p, r));
        }
        infos.push(info);
    }
    let info = infos[0].clone();
    same_run(shards)?;
    // Every shard exactly once.
    let mut by_index: BTreeMap<u32, &Path> = BTreeMap::new();
    for ((p, _), shard) in shards.iter().zip(&infos) {
        let k = shard.index;
        if let Some(other) = by_index.insert(k, p) {
            bail!(
                "shard {k}/{} is given twice: {} and {}",
                info.count,
                other.display(),
                p.display()
            );
        }
    }
    let missing: Vec<String> = (1..=info.count)
        .filter(|k| !by_index.contains_key(k))
        .map(|k| format!("{k}/{}", info.count))
        .collect();
    if !missing.is_empty() {
        bail!("shards missing: {}", missing.join(", "));
    }

    // Every shape exactly once, and only the run's.
    let mut seen: HashMap<String, &Path> = HashMap::new();
    for (p, r) in shards {
        for s in &r.shapes {
            if let Some(other) = seen.insert(s.name.clone(), p) {
                bail!(
                    "shape {} is in two shards: {} and {}",
                    s.name,
                    other.display(),
                    p.display()
                );
            }
            if !info.run_shapes.contains(&s.name) {
                bail!(
                    "{} has shape {}, which is not one of the run's",
                    label(p, r),
                    s.name
                );
            }
        }
    }
    let absent: Vec<&str> = info
        .run_shapes
        .iter()
        .filter(|n| !seen.contains_key(*n))
        .map(String::as_str)
        .collect();
    if !absent.is_empty() {
        bail!(
            "{} of the run's {} shapes are in no shard: {}",
            absent.len(),
            info.run_shapes.len(),
            absent.join(", ")
        );
    }

    Ok(info)
}

/// Refuses shards that differ in anything that makes them comparable: their number, the
/// config, the commit, both sides' kernels, the GPU model, the stored baseline, the run's
/// shapes. The gate settings and the drift policy are not compared: merge takes neither
/// from a shard (see `reevaluate`).
fn same_run(shards: &[(PathBuf, ResultsFile)]) -> Result<()> {
    let Some((first_path, first)) = shards.first() else {
        return Ok(());
    };
    // One run: everything that makes shards comparable must agree.
    let same = |what: &str, f: &dyn Fn(&ResultsFile) -> String| -> Result<()> {
        let want = f(first);
        for (p, r) in &shards[1..] {
            let got = f(r);
            if got != want {
                bail!(
                    "{} and {} are not shards of one run: they differ in {what} ({want} against {got})",
                    label(first_path, first),
                    label(p, r)
                );
            }
        }
        Ok(())
    };
    same("the number of shards", &|r| {
        r.shard.as_ref().map(|s| s.count).unwrap_or(0).to_string()
    })?;
    same("the config", &|r| r.config.describe())?;
    same("the method", &|r| Method::describe(r.method.as_ref()))?;
    same("the commit", &|r| {
        r.git_commit.clone().unwrap_or_else(|| "none".into())
    })?;
    same("the candidate kernels", &|r| {
        r.kernel_source_hash
            .clone()
            .unwrap_or_else(|| "none".into())
    })?;
    same("the base kernels", &|r| {
        r.base
            .as_ref()
            .map(|b| format!("{} (measured: {})", b.kernel_source_hash, b.measured))
            .unwrap_or_else(|| "none".into())
    })?;
    same("the GPU model", &|r| {
        r.environment
            .as_ref()
            .map(|e| e.gpu_slug.clone())
            .unwrap_or_else(|| "unknown".into())
    })?;
    same("the stored baseline", &|r| {
        r.baseline
            .as_ref()
            .map(|b| format!("{} at {:?}", b.path, b.commit))
            .unwrap_or_else(|| "none".into())
    })?;
    same("the run's shapes", &|r| {
        r.shard
            .as_ref()
            .map(|s| s.run_shapes.join(","))
            .unwrap_or_default()
    })?;

    Ok(())
}

/// The join of shards of one run: the run's order of shapes, every warning, note and
/// kernel's resources once, the profiling time summed, the latest time and the last
/// shard's clocks after.
fn joined(shards: Vec<(PathBuf, ResultsFile)>, info: &ShardInfo) -> ResultsFile {
    let count = shards.len();
    let mut shards = shards;
    shards.sort_by_key(|(_, r)| r.shard.as_ref().map(|s| s.index));
    let mut merged = shards[0].1.clone();
    let mut all_shapes = Vec::new();
    let mut profiling_s = 0.0;
    let mut uuids = Vec::new();
    for (_, r) in &shards {
        all_shapes.extend(r.shapes.iter().cloned());
        for w in &r.warnings {
            if !merged.warnings.contains(w) {
                merged.warnings.push(w.clone());
            }
        }
        for n in &r.notes {
            if !merged.notes.contains(n) {
                merged.notes.push(n.clone());
            }
        }
        // Each shard records the kernels its shapes launched: the run launched them all.
        for k in &r.kernel_resources {
            if !merged
                .kernel_resources
                .iter()
                .any(|m| m.side == k.side && m.kernel == k.kernel)
            {
                merged.kernel_resources.push(k.clone());
            }
        }
        if let Some(p) = &r.profiling {
            profiling_s += p.seconds;
        }
        // Every process any shard saw beside it (the first shard's timing is the merged one).
        if let (Some(t), Some(m)) = (&r.timing, merged.timing.as_mut()) {
            for p in &t.other_processes {
                if m.other_processes.len() < crate::results::MAX_PROCESSES
                    && !m.other_processes.iter().any(|o| o.pid == p.pid)
                {
                    m.other_processes.push(p.clone());
                }
            }
        }
        if let Some(u) = r.environment.as_ref().and_then(|e| e.gpu_uuid.clone())
            && !uuids.contains(&u)
        {
            uuids.push(u);
        }
        if r.created_at > merged.created_at {
            merged.created_at = r.created_at;
        }
    }
    if let (Some(env), Some(last)) = (
        merged.environment.as_mut(),
        shards.last().and_then(|(_, r)| r.environment.as_ref()),
    ) {
        env.state_after = last.state_after.clone();
    }
    if let Some(p) = merged.profiling.as_mut() {
        p.seconds = profiling_s;
    }
    let order: HashMap<&str, usize> = info
        .run_shapes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    all_shapes.sort_by_key(|s| order.get(s.name.as_str()).copied());
    merged.shapes = all_shapes;
    merged.shard = None;
    merged.notes.push(format!(
        "merged from {count} shards measured on {} GPU{}: the verdict is over all {} shapes",
        uuids.len().max(1),
        if uuids.len() > 1 { "s" } else { "" },
        info.run_shapes.len()
    ));
    merged
}

/// Compares every shape again, over the whole run, under `rules`, then the verdict. From
/// the shards only their measurements are used, and whether another process shared their GPU
/// (`shared`: those shapes are not compared with the stored baseline).
fn reevaluate(
    mut merged: ResultsFile,
    rules: &Rules,
    shared: &BTreeSet<String>,
) -> Result<ResultsFile> {
    check_shapes(&merged, rules)?;
    let Some(env) = merged.environment.clone() else {
        bail!("the shards record no GPU, so no stored baseline can be chosen for them");
    };
    let stored = stored_baseline(&mut merged, rules, &env)?;
    let config = rules.config;
    let cache = config.measure.cache;
    apply_config(&mut merged, config)?;
    // A stored baseline of another method than the shards' is no reference (the shards
    // agree in their method: `same_run`); the one sentence that says so, once.
    let other_method = stored
        .as_ref()
        .is_some_and(|b| !b.measured_by(merged.method.as_ref()));
    if let (Some(b), Some(reference)) = (&stored, merged.baseline.as_mut()) {
        reference.method = b.method.clone();
    }
    if let (true, Some(b), Some(reference)) = (other_method, &stored, &merged.baseline) {
        let sentence = other_method_sentence(
            &reference.path,
            b.method.as_ref(),
            merged.method.as_ref(),
            &crate::results::repo_config_path(&config.path.display().to_string(), &config.name),
            merged.base.as_ref().is_some_and(|b| b.measured),
        );
        if !merged.warnings.contains(&sentence) {
            merged.warnings.push(sentence);
        }
    }
    let stored_shape =
        |s: &crate::results::ShapeResult| stored.as_ref().and_then(|b| b.shape(&s.params, cache));
    // A shared shape whose only reference is the stored baseline has no verdict (never a pass
    // nothing judged), as in the run that measured it.
    for s in merged.shapes.iter_mut() {
        if shared.contains(&s.name)
            && s.only_stored_could_judge()
            && stored_shape(s).is_some()
            && !other_method
        {
            s.error = Some(
                "the stored baseline is this shape's only reference and another process shared the GPU with its shard, so it has no verdict: run it again when the GPU is free".into(),
            );
        }
    }
    let stored_of = |s: &crate::results::ShapeResult| -> Option<StoredSide> {
        if shared.contains(&s.name) {
            return None;
        }
        stored_shape(s).map(|x| StoredSide {
            other_method,
            ..x.stored_side()
        })
    };
    let policy = Policy {
        fail_on_drift: rules.fail_on_drift,
    };
    merged.gate = config.gate.clone();
    merged.fail_on_drift = rules.fail_on_drift;
    let gate = merged.gate.clone();
    merged.passed = evaluate(&mut merged.shapes, stored_of, &gate, policy)?;
    Ok(merged)
}

/// The shards' shapes must be exactly the rules' shapes, each with the parameters its name
/// says.
fn check_shapes(merged: &ResultsFile, rules: &Rules) -> Result<()> {
    let config = rules.config;
    // The run's shapes are the rules' shapes, each with the parameters its name says.
    let expected: BTreeMap<String, ShapeParams> =
        rules.shapes.iter().map(|s| (s.name(), *s)).collect();
    let claimed: BTreeSet<&str> = merged.shapes.iter().map(|s| s.name.as_str()).collect();
    let missing: Vec<&str> = expected
        .keys()
        .map(String::as_str)
        .filter(|n| !claimed.contains(n))
        .collect();
    if !missing.is_empty() {
        bail!(
            "the shards hold {} of the {} shapes of {}: {} missing",
            claimed.len(),
            expected.len(),
            config.path.display(),
            missing.join(", ")
        );
    }
    for s in &merged.shapes {
        match expected.get(&s.name) {
            Some(p) if *p == s.params => {}
            Some(_) => bail!(
                "the shards' shape {} has other parameters than in {}",
                s.name,
                config.path.display()
            ),
            None => bail!(
                "the shards hold shape {}, which is not in {}",
                s.name,
                config.path.display()
            ),
        }
    }
    Ok(())
}

/// The stored baseline the run is compared with: the base commit's store decides whether
/// one exists (a shard that claims none cannot hide one, and one it claims must be the
/// store's).
fn stored_baseline(
    merged: &mut ResultsFile,
    rules: &Rules,
    env: &crate::results::Environment,
) -> Result<Option<crate::baseline::BaselineFile>> {
    let config = rules.config;
    let store = BaselineStore::new(rules.baselines);
    let stored = store.load(&env.gpu_slug, &env.gpu_name, &config.name)?;
    match (&stored, &merged.baseline) {
        (None, Some(reference)) => bail!(
            "the shards compared with the stored baseline {} (commit {}), which is not in {}: pass --baselines DIR of the commit the shards ran",
            reference.path,
            reference.commit.as_deref().unwrap_or("unknown"),
            rules.baselines.display()
        ),
        (Some(b), Some(reference))
            if b.provenance.commit != reference.commit
                || b.provenance.recorded_at != reference.recorded_at =>
        {
            bail!(
                "the stored baseline in {} (recorded {} at commit {}) is not the one the shards compared with (recorded {} at commit {})",
                rules.baselines.display(),
                b.provenance.recorded_at,
                b.provenance.commit.as_deref().unwrap_or("unknown"),
                reference.recorded_at,
                reference.commit.as_deref().unwrap_or("unknown")
            );
        }
        (Some(b), None) => {
            let path = store.path(&env.gpu_slug, &config.name);
            merged.warnings.push(format!(
                "the shards compared with no stored baseline, but {} holds one: merge compares with it",
                path.display()
            ));
            merged.baseline = Some(BaselineRef {
                path: path.display().to_string(),
                commit: b.provenance.commit.clone(),
                recorded_at: b.provenance.recorded_at,
                method: b.method.clone(),
            });
        }
        _ => {}
    }
    Ok(stored)
}

/// The config's rules on every shape, whatever the shards recorded (parity tolerances,
/// design, cache mode), and an error on a shape whose shard lacks what `ci` always records
/// of a measured shape, or whose base fails parity under those tolerances.
fn apply_config(merged: &mut ResultsFile, config: &Config) -> Result<()> {
    let design = StageDesign {
        stage1: config.measure.min_rounds,
        max: config.measure.max_rounds,
    };
    let cache = config.measure.cache;
    // "Not measured" is only true of a base whose timed kernel is the candidate's own.
    if let Some(b) = &merged.base
        && !b.measured
        && merged.kernel_source_hash.as_deref() != Some(b.kernel_source_hash.as_str())
    {
        bail!(
            "the shards say no A/B was measured, but their base and candidate kernels differ: a base that differs is always measured"
        );
    }
    let ab_measured = merged.base.as_ref().is_some_and(|b| b.measured);
    for s in merged.shapes.iter_mut() {
        let tolerance = config.parity.tolerance(s.params.dtype);
        for p in [s.parity.as_mut(), s.base_parity.as_mut()]
            .into_iter()
            .flatten()
        {
            p.tolerance = tolerance;
        }
        if let Some(m) = s.measurement.as_mut() {
            m.design = Some(design);
            m.cache = cache;
        }
        if s.error.is_some() {
            continue;
        }
        // What `ci` always records for a measured shape; a shard without it hides something.
        let lacking = if s.measurement.is_none() {
            Some("how it was measured")
        } else if s.parity.is_none() {
            Some("its parity check")
        } else if ab_measured && s.base_parity.is_none() {
            Some("the base kernels' parity check")
        } else if ab_measured && s.base_samples_us.is_empty() {
            Some("the base kernels' rounds")
        } else {
            None
        };
        if let Some(what) = lacking {
            s.error = Some(format!("the shard records no {what} for this shape"));
        } else if s.base_parity.as_ref().is_some_and(|p| !p.passed()) {
            s.error = Some(
                "the base kernels fail parity on this shape under the config's tolerances, so the A/B comparison has no valid reference".into(),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::ShardInfo;

    fn shard_file(
        k: u32,
        n: u32,
        shapes: Vec<crate::results::ShapeResult>,
        all: &[String],
    ) -> ResultsFile {
        let mut r = ResultsFile::failed(None, "x".into());
        r.error = None;
        r.shapes = shapes;
        r.shard = Some(ShardInfo {
            index: k,
            count: n,
            run_shapes: all.to_vec(),
        });
        r
    }

    fn shape(seq_len: u32) -> crate::results::ShapeResult {
        crate::results::ShapeResult::new(crate::config::ShapeParams {
            batch: 1,
            heads: 1,
            seq_len,
            head_dim: 64,
            causal: false,
            dtype: crate::config::Dtype::Float16,
        })
    }

    fn names(lens: &[u32]) -> Vec<String> {
        lens.iter().map(|&l| shape(l).name).collect()
    }

    #[test]
    fn shards_join_in_the_runs_order() {
        let all = names(&[1, 2, 3]);
        let a = shard_file(1, 2, vec![shape(3), shape(1)], &all);
        let b = shard_file(2, 2, vec![shape(2)], &all);
        let m = join(vec![("b.json".into(), b), ("a.json".into(), a)]).unwrap();
        let got: Vec<&str> = m.shapes.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(got, all.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(m.shard.is_none());
        assert!(m.notes.iter().any(|n| n.contains("merged from 2 shards")));
    }

    #[test]
    fn what_is_not_one_run_is_refused_by_name() {
        let all = names(&[1, 2, 3]);
        let err = |files: Vec<(&str, ResultsFile)>| {
            join(
                files
                    .into_iter()
                    .map(|(p, r)| (PathBuf::from(p), r))
                    .collect(),
            )
            .unwrap_err()
            .to_string()
        };
        // A shape in no shard.
        let e = err(vec![
            ("a", shard_file(1, 2, vec![shape(1)], &all)),
            ("b", shard_file(2, 2, vec![shape(2)], &all)),
        ]);
        assert!(
            e.contains("b1h1s3d64_f16") && e.contains("in no shard"),
            "{e}"
        );
        // A shape twice.
        let e = err(vec![
            ("a", shard_file(1, 2, vec![shape(1), shape(2)], &all)),
            ("b", shard_file(2, 2, vec![shape(2), shape(3)], &all)),
        ]);
        assert!(e.contains("b1h1s2d64_f16 is in two shards"), "{e}");
        // A shard missing, and one given twice.
        let e = err(vec![("a", shard_file(1, 3, vec![shape(1)], &all))]);
        assert!(e.contains("shards missing: 2/3, 3/3"), "{e}");
        let e = err(vec![
            ("a", shard_file(1, 2, vec![shape(1)], &all)),
            ("b", shard_file(1, 2, vec![shape(2)], &all)),
        ]);
        assert!(e.contains("shard 1/2 is given twice: a and b"), "{e}");
        // Another commit, config, kernel or GPU.
        let mut other = shard_file(2, 2, vec![shape(2), shape(3)], &all);
        other.git_commit = Some("1".repeat(40));
        let e = err(vec![
            ("a", shard_file(1, 2, vec![shape(1)], &all)),
            ("b", other),
        ]);
        assert!(e.contains("differ in the commit"), "{e}");
        let mut other = shard_file(2, 2, vec![shape(2), shape(3)], &all);
        other.kernel_source_hash = Some("ab".repeat(32));
        let e = err(vec![
            ("a", shard_file(1, 2, vec![shape(1)], &all)),
            ("b", other),
        ]);
        assert!(e.contains("differ in the candidate kernels"), "{e}");
        let mut other = shard_file(2, 2, vec![shape(2), shape(3)], &all);
        other.config.hash = "cd".repeat(32);
        let e = err(vec![
            ("a", shard_file(1, 2, vec![shape(1)], &all)),
            ("b", other),
        ]);
        assert!(e.contains("differ in the config"), "{e}");
        // Not a shard, and a shard without a verdict.
        let mut whole = shard_file(1, 1, vec![shape(1)], &all);
        whole.shard = None;
        let e = err(vec![("w.json", whole)]);
        assert!(e.contains("w.json: not a shard"), "{e}");
        let mut failed = shard_file(1, 1, vec![], &all);
        failed.error = Some("no GPU".into());
        let e = err(vec![("f.json", failed)]);
        assert!(
            e.contains("shard 1/1 (f.json) reached no verdict: no GPU"),
            "{e}"
        );
    }
}
