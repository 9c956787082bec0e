//! `ci-gate compare BASE CAND`: offline comparison of two results files or two sample files.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::Outcome;
use crate::cli::CompareArgs;
use crate::comparison::StoredSide;
use crate::config::{Config, Dtype, GateSettings, ShapeParams};
use crate::evaluate::evaluate;
use crate::report::{Exporter, Format, JsonExporter, Report, TableExporter};
use crate::results::{ResultsFile, ShapeResult};
use crate::samples::parse_sample_rounds;
use crate::stats::{ProcessSpread, Rounds, StatsError};
use crate::verdict::Policy;

enum Input {
    Results(Box<ResultsFile>),
    Samples(Vec<Vec<f64>>),
}

fn read_input(path: &Path) -> Result<Input> {
    let bytes = crate::files::read_bounded(path, crate::files::MAX_JSON_BYTES)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))?;
    if text.trim_start().starts_with('{') {
        let results: ResultsFile =
            crate::files::parse_versioned_json(&text, path, crate::results::SCHEMA_VERSION)?;
        if let Some(e) = &results.error {
            bail!(
                "{} records a run that reached no verdict ({}); there is nothing to compare",
                path.display(),
                e.lines().next().unwrap_or_default()
            );
        }
        if results.shapes.is_empty() {
            bail!(
                "{} holds no shapes; there is nothing to compare",
                path.display()
            );
        }
        Ok(Input::Results(Box::new(results)))
    } else {
        Ok(Input::Samples(parse_sample_rounds(&text, path)?))
    }
}

fn gate_for(args: &CompareArgs, from_results: Option<&GateSettings>) -> Result<GateSettings> {
    Ok(match (&args.config, from_results) {
        (Some(path), _) => Config::load(path)?.gate,
        (None, Some(g)) => g.clone(),
        (None, None) => GateSettings::default(),
    })
}

pub fn run(args: &CompareArgs) -> Result<Outcome> {
    if let Some(sd) = args.process_sd
        && !(sd.is_finite() && (0.0..0.5).contains(&sd))
    {
        bail!("--process-sd {sd}: a spread between processes must be a fraction in [0, 0.5)");
    }
    let base = read_input(&args.base)?;
    let cand = read_input(&args.cand)?;
    let report = match (base, cand) {
        (Input::Samples(b), Input::Samples(c)) => {
            let gate = gate_for(args, None)?;
            compare_samples(b, c, args, gate)?
        }
        (Input::Results(b), Input::Results(c)) => {
            let gate = gate_for(args, Some(&c.gate))?;
            compare_results(&b, *c, args, gate)?
        }
        _ => bail!(
            "{} and {} are not the same kind of file: compare two results files or two sample files",
            args.base.display(),
            args.cand.display()
        ),
    };
    let mut report = report;
    report.stored_label = "BASE";
    let single = report.rows.len() == 1 && report.config_name.is_none();
    let out = match args.format {
        Format::Table => TableExporter::for_stdout(args.wide).render(&report),
        Format::Json => JsonExporter { single }.render(&report),
        other => other
            .exporter()
            .map(|e| e.render(&report))
            .unwrap_or_default(),
    };
    print!("{out}");
    Ok(Outcome::from_passed(report.passed))
}

/// The stored-style reference for an unpaired comparison of two files: what `--process-sd`
/// says, else `default`.
fn reference(
    rounds: Vec<Vec<f64>>,
    args: &CompareArgs,
    default: Option<ProcessSpread>,
) -> StoredSide {
    StoredSide {
        rounds,
        process_rounds: Vec::new(),
        spread: args
            .process_sd
            .map(|sd| ProcessSpread {
                sd,
                df: f64::INFINITY,
            })
            .or(default),
    }
}

fn compare_samples(
    base: Vec<Vec<f64>>,
    cand: Vec<Vec<f64>>,
    args: &CompareArgs,
    gate: GateSettings,
) -> Result<Report> {
    let shape = args
        .cand
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "samples".into());
    let mut result = ShapeResult::new(ShapeParams::new(1, 1, 1, 64, false, Dtype::Float16));
    result.name = shape;
    let named = |e: StatsError, path: &Path| anyhow::anyhow!("{}: {e}", path.display());
    Rounds::new(base.clone()).map_err(|e| named(e, &args.base))?;
    let c = Rounds::new(cand.clone()).map_err(|e| named(e, &args.cand))?;
    result.summary = Some(c.pooled().summary());
    result.samples_us = cand;
    if args.paired {
        if base.len() != result.samples_us.len() {
            bail!(
                "--paired: {} has {} rounds and {} has {}; pairs need as many of each",
                args.base.display(),
                base.len(),
                args.cand.display(),
                result.samples_us.len()
            );
        }
        result.base_samples_us = base.clone();
    }
    let stored = (!args.paired).then(|| reference(base, args, Some(ProcessSpread::NONE)));
    let mut shapes = vec![result];
    let passed = evaluate(&mut shapes, |_| stored.clone(), &gate, Policy::default())
        .with_context(|| format!("in {}", args.base.display()))?;
    let mut report = Report::from_shapes(&shapes, gate, passed);
    if !args.paired && args.process_sd.is_none() {
        report.notes.push(
            "the rounds of BASE and CAND are taken as exchangeable units; if the two files come from separate processes, --process-sd adds the spread between them".into(),
        );
    }
    Ok(report)
}

fn compare_results(
    base: &ResultsFile,
    mut cand: ResultsFile,
    args: &CompareArgs,
    gate: GateSettings,
) -> Result<Report> {
    if let (Some(b), Some(c)) = (&base.environment, &cand.environment)
        && b.gpu_slug != c.gpu_slug
    {
        bail!(
            "{} was measured on {} and {} on {}: results from different GPU models are never compared",
            args.base.display(),
            b.gpu_name,
            args.cand.display(),
            c.gpu_name
        );
    }
    let matching = |shape: &ShapeResult| {
        let cache = shape.measurement.as_ref().map(|m| m.cache);
        base.shapes.iter().find(|b| {
            b.params == shape.params
                && b.error.is_none()
                && b.measurement.as_ref().map(|m| m.cache) == cache
        })
    };
    if !cand.shapes.iter().any(|s| matching(s).is_some()) {
        bail!(
            "{} and {} share no measured shape (same parameters and cache mode): nothing can be compared",
            args.base.display(),
            args.cand.display()
        );
    }
    let mut warnings = Vec::new();
    if args.paired {
        for shape in cand.shapes.iter_mut() {
            let Some(b) = matching(shape) else {
                warnings.push(format!("{}: not in {}", shape.name, args.base.display()));
                continue;
            };
            if b.samples_us.len() != shape.samples_us.len() {
                bail!(
                    "--paired: shape {} has {} rounds in {} and {} in {}; pairs need as many of each",
                    shape.name,
                    b.samples_us.len(),
                    args.base.display(),
                    shape.samples_us.len(),
                    args.cand.display()
                );
            }
            shape.base_samples_us = b.samples_us.clone();
            shape.pair_order.clear();
        }
    }
    let passed = evaluate(
        &mut cand.shapes,
        |shape| {
            if args.paired {
                return None;
            }
            let found = matching(shape);
            if found.is_none() {
                warnings.push(format!("{}: not in {}", shape.name, args.base.display()));
            }
            // Two results files are two processes: without --process-sd the spread between
            // them is assumed (conservatively), as for a baseline that records none.
            found.map(|b| reference(b.samples_us.clone(), args, None))
        },
        &gate,
        Policy::default(),
    )
    .with_context(|| format!("in {}", args.base.display()))?;
    cand.gate = gate;
    cand.passed = passed;
    cand.warnings.extend(warnings);
    Ok(Report::from_results(&cand))
}
