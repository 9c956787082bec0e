//! `ci-gate baseline show|update`.

use anyhow::{Result, bail};
use chrono::Utc;

use super::Outcome;
use super::pipeline::{self, Against, RunPlan, load_config};
use crate::baseline::{BaselineFile, BaselineShape, BaselineStore, Provenance};
use crate::cli::{BaselineShowArgs, BaselineUpdateArgs};
use crate::evaluate::evaluate;
use crate::results::{ResultsFile, SCHEMA_VERSION};
use crate::validate::{error_line, short_commit, terminal_text};
use crate::verdict::Verdict;

pub fn show(args: &BaselineShowArgs) -> Result<Outcome> {
    let store = BaselineStore::new(&args.baselines);
    let files = store.list(args.gpu.as_deref())?;
    if files.is_empty() {
        println!(
            "no baselines stored under {}{}",
            store.root().display(),
            args.gpu
                .as_deref()
                .map(|g| format!(" for {g}"))
                .unwrap_or_default()
        );
        return Ok(Outcome::Pass);
    }
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header([
        "File", "GPU", "Config", "Shapes", "Commit", "Recorded", "Reason",
    ]);
    let mut bad = Vec::new();
    for (path, loaded) in files {
        match loaded {
            Ok(b) => {
                // Everything from the file goes through terminal_text: no escape sequence,
                // control or bidirectional character reaches the terminal.
                table.add_row(
                    [
                        path.display().to_string(),
                        b.environment.gpu_name.clone(),
                        b.config.name.clone(),
                        b.shapes.len().to_string(),
                        b.provenance
                            .commit
                            .as_deref()
                            .map_or("—".into(), short_commit),
                        b.provenance
                            .recorded_at
                            .format("%Y-%m-%d %H:%M UTC")
                            .to_string(),
                        format!(
                            "{}{}",
                            b.provenance.reason,
                            if b.provenance.forced { " (forced)" } else { "" }
                        ),
                    ]
                    .map(|cell| terminal_text(&cell)),
                );
            }
            Err(e) => bad.push(e),
        }
    }
    println!("{table}");
    if bad.is_empty() {
        return Ok(Outcome::Pass);
    }
    let first = bad.remove(0);
    for e in &bad {
        eprintln!("error: {}", error_line(&e.to_string()));
    }
    Err(first.into())
}

/// Records new baselines for this GPU (from a fresh run, or from a results file).
///
/// Refuses, exit 1, naming the shapes, when a shape fails parity or would be recorded more
/// than the gate's threshold slower than the stored baseline; `--force` records anyway.
/// Shapes that could not be measured have nothing to record and always refuse.
pub fn update(args: &BaselineUpdateArgs) -> Result<Outcome> {
    let reason = args.reason.trim();
    if reason.is_empty() {
        bail!(
            "--reason is empty: say why the baseline changes (it is kept in the file's provenance)"
        );
    }
    let store = BaselineStore::new(&args.config.baselines);
    let mut results = match &args.from {
        Some(path) => ResultsFile::load(path)?,
        None => {
            let (config, shapes) = load_config(&args.config.config, &[])?;
            pipeline::run(RunPlan {
                config,
                shapes,
                kernels: args.config.kernels.clone(),
                against: Against::Nothing,
                parity: true,
                rounds: None,
                inject: None,
                progress: true,
            })?
        }
    };
    let source = args
        .from
        .as_ref()
        .map_or_else(|| "this run".to_owned(), |p| p.display().to_string());
    if let Some(e) = &results.error {
        bail!("{source} did not reach a verdict ({e}); nothing to record");
    }
    let Some(env) = results.environment.clone() else {
        bail!("{source} has no environment: cannot tell which GPU it was measured on");
    };
    // A corrupt or foreign baseline stops here, before anything is written.
    let previous = store.load(&env.gpu_slug, &env.gpu_name, &results.config.name)?;

    let errors: Vec<String> = results
        .shapes
        .iter()
        .filter(|s| s.error.is_some() || s.samples_us.is_empty())
        .map(|s| s.name.clone())
        .collect();
    if !errors.is_empty() {
        eprintln!(
            "refusing to record: {} could not be measured in {source}, so there is nothing to record for {}",
            errors.join(", "),
            if errors.len() == 1 { "it" } else { "them" }
        );
        return Ok(Outcome::Fail);
    }
    let parity_failures: Vec<String> = results
        .shapes
        .iter()
        .filter(|s| s.parity.as_ref().is_some_and(|p| !p.passed()))
        .map(|s| s.name.clone())
        .collect();
    let gate = results.gate.clone();
    let slower: Vec<String> = match &previous {
        None => Vec::new(),
        Some(prev) => {
            evaluate(
                &mut results.shapes,
                |s| {
                    let cache = s.measurement.as_ref().map(|m| m.cache)?;
                    prev.shape(&s.params, cache).map(|b| b.samples_us.clone())
                },
                &gate,
            )?;
            results
                .shapes
                .iter()
                .filter_map(|s| {
                    let c = s.comparison.as_ref()?;
                    (s.verdict == Verdict::Regression || c.ratio > 1.0 + gate.max_p50_regression)
                        .then(|| format!("{} ({:+.2}%)", s.name, (c.ratio - 1.0) * 100.0))
                })
                .collect()
        }
    };
    let mut refusals = Vec::new();
    if !parity_failures.is_empty() {
        refusals.push(format!("{} fail parity", parity_failures.join(", ")));
    }
    if !slower.is_empty() {
        refusals.push(format!(
            "{} would be recorded more than {:.1}% slower than the stored baseline",
            slower.join(", "),
            gate.max_p50_regression * 100.0
        ));
    }
    if !refusals.is_empty() && !args.force {
        eprintln!(
            "refusing to record: {}; pass --force to record anyway",
            refusals.join("; and ")
        );
        return Ok(Outcome::Fail);
    }
    for r in &refusals {
        eprintln!("warning: recording with --force although {r}");
    }

    let mut shapes = Vec::with_capacity(results.shapes.len());
    for s in &results.shapes {
        let (Some(summary), Some(m)) = (&s.summary, &s.measurement) else {
            bail!(
                "{source}: shape {} has samples but no summary or measurement record",
                s.name
            );
        };
        shapes.push(BaselineShape {
            name: s.name.clone(),
            params: s.params,
            cache: m.cache,
            samples_us: s.samples_us.clone(),
            summary: summary.clone(),
            tflops: s.tflops,
            parity: s.parity.clone(),
        });
    }
    let file = BaselineFile {
        schema_version: SCHEMA_VERSION,
        gpu_slug: env.gpu_slug.clone(),
        config: results.config.clone(),
        provenance: Provenance {
            commit: results.git_commit.clone(),
            recorded_at: Utc::now(),
            reason: reason.to_owned(),
            previous_commit: previous.as_ref().and_then(|p| p.provenance.commit.clone()),
            previous_recorded_at: previous.as_ref().map(|p| p.provenance.recorded_at),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            forced: args.force && !refusals.is_empty(),
        },
        environment: env,
        kernel_source_hash: results.kernel_source_hash.clone(),
        shapes,
    };
    let path = store.save(&file)?;
    println!(
        "recorded {} shape{} for {} in {}",
        file.shapes.len(),
        if file.shapes.len() == 1 { "" } else { "s" },
        file.environment.gpu_name,
        path.display()
    );
    Ok(Outcome::Pass)
}
