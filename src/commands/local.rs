//! `ci-gate local`: the whole pipeline on this machine's GPU, a report on stdout.

use anyhow::{Context, Result};

use super::Outcome;
use super::pipeline::{Against, RunPlan, load_config, run};
use crate::baseline::BaselineStore;
use crate::cli::LocalArgs;
use crate::report::{Exporter, Format, JsonExporter, MarkdownExporter, Report, TableExporter};
use crate::results::ResultsFile;

pub fn run_local(args: &LocalArgs) -> Result<Outcome> {
    let (config, shapes) = load_config(&args.config.config, &args.shapes)?;
    if args.inject.is_some() && args.against.is_none() {
        anyhow::bail!("--inject needs --against: the slowdown is a fraction of that run's p50");
    }
    if let Some(f) = args.inject
        && !(f > 0.0 && f < 1.0)
    {
        anyhow::bail!("--inject {f}: the slowdown must be a fraction between 0 and 1");
    }
    let against = match (&args.against, args.no_compare) {
        (Some(path), _) => Against::Results(Box::new(ResultsFile::load(path)?)),
        (None, true) => Against::Nothing,
        (None, false) => Against::Store(BaselineStore::new(&args.config.baselines)),
    };
    let results = run(RunPlan {
        config,
        shapes,
        kernels: args.config.kernels.clone(),
        against,
        parity: !args.no_parity,
        rounds: args.rounds,
        inject: args.inject,
        progress: args.format == Format::Table,
    })?;
    if let Some(out) = &args.out {
        results
            .save(out)
            .with_context(|| "the results were measured but could not be saved")?;
    }
    let report = Report::from_results(&results);
    let text = match args.format {
        Format::Table => TableExporter::for_stdout().render(&report),
        Format::Markdown => MarkdownExporter.render(&report),
        Format::Json => JsonExporter { single: false }.render(&report),
    };
    print!("{text}");
    Ok(Outcome::from_passed(results.passed))
}
