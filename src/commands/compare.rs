//! `ci-gate compare BASE CAND`: offline comparison of two results files or two sample files.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::Outcome;
use crate::cli::CompareArgs;
use crate::comparison::{Comparison, shape_seed};
use crate::config::{Config, GateSettings};
use crate::evaluate::evaluate;
use crate::report::{Exporter, Format, JsonExporter, MarkdownExporter, Report, Row, TableExporter};
use crate::results::ResultsFile;
use crate::samples::parse_samples;
use crate::stats::{Rounds, Sample};
use crate::verdict::{Evidence, decide, gate_passes};

enum Input {
    Results(Box<ResultsFile>),
    Samples(Vec<f64>),
}

fn read_input(path: &Path) -> Result<Input> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))?;
    if text.trim_start().starts_with('{') {
        let results: ResultsFile =
            crate::files::parse_versioned_json(&text, path, crate::results::SCHEMA_VERSION)?;
        Ok(Input::Results(Box::new(results)))
    } else {
        Ok(Input::Samples(parse_samples(&text, path)?))
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
    let base = read_input(&args.base)?;
    let cand = read_input(&args.cand)?;
    let report = match (base, cand) {
        (Input::Samples(b), Input::Samples(c)) => {
            let gate = gate_for(args, None)?;
            compare_samples(b, c, &args.cand, gate)?
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
    let single = report.rows.len() == 1 && report.config_name.is_none();
    let out = match args.format {
        Format::Table => TableExporter::for_stdout().render(&report),
        Format::Markdown => MarkdownExporter.render(&report),
        Format::Json => JsonExporter { single }.render(&report),
    };
    print!("{out}");
    Ok(Outcome::from_passed(report.passed))
}

fn compare_samples(
    base: Vec<f64>,
    cand: Vec<f64>,
    cand_path: &Path,
    gate: GateSettings,
) -> Result<Report> {
    let b = Rounds::single(Sample::new(base)?);
    let c = Rounds::single(Sample::new(cand)?);
    let shape = cand_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "samples".into());
    let comparison = Comparison::of(&b, &c, &gate, shape_seed(gate.seed, &shape))?;
    let verdict = decide(
        &gate,
        &Evidence {
            measured: true,
            parity_passed: None,
            comparison: Some(&comparison),
        },
    );
    Ok(Report {
        config_name: None,
        rows: vec![Row {
            shape,
            p50_cand: Some(comparison.p50_cand),
            tflops: None,
            comparison: Some(comparison),
            parity: None,
            verdict,
            error: None,
        }],
        passed: gate_passes([verdict]),
        gate,
        environment: None,
        baseline: None,
        commit: None,
        run_url: None,
        warnings: Vec::new(),
        error: None,
    })
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
    let mut warnings = Vec::new();
    let passed = evaluate(
        &mut cand.shapes,
        |shape| {
            let cache = shape.measurement.as_ref().map(|m| m.cache);
            let found = base.shapes.iter().find(|b| {
                b.params == shape.params
                    && b.error.is_none()
                    && b.measurement.as_ref().map(|m| m.cache) == cache
            });
            if found.is_none() {
                warnings.push(format!("{}: not in {}", shape.name, args.base.display()));
            }
            found.map(|b| b.samples_us.clone())
        },
        &gate,
    )
    .with_context(|| format!("in {}", args.base.display()))?;
    cand.gate = gate;
    cand.passed = passed;
    cand.warnings.extend(warnings);
    Ok(Report::from_results(&cand))
}
