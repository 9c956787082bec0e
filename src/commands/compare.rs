//! `ci-gate compare BASE CAND`: offline comparison of two results files or two sample files.
//!
//! * Two results files: CAND's candidate against BASE's candidate, shape by shape, unpaired
//!   (two runs are two processes: the spread between processes is added, `--process-sd` or
//!   the conservative default), whatever either file measured against its own base or
//!   stored baseline. Only what this comparison finds is printed: none of CAND's own
//!   warnings, notes, profiles, peers or shard notes. Only like is compared with like
//!   (`comparable`, exit 2 otherwise): one GPU model, one config (name, content hash and
//!   compile defines; `--config`, where given, must be that config), one measuring method
//!   (`crate::method`), and every shape of BASE in CAND. A file of another kind that
//!   ci-gate writes (a baseline, a selftest report, a history) is named as such.
//! * Two sample files: with rounds (blank lines between them), the trimmed test of round
//!   medians; without rounds (i.i.d. values), the p50 ratio with the seeded percentile
//!   bootstrap of the ratio of medians, or, with fewer than 30 values on a side (too few
//!   for that bootstrap), the Hodges–Lehmann shift with its exact Mann–Whitney bound,
//!   under its own name. Both files must be of one kind: a file with blank lines between
//!   values against one without is refused, naming which is which. `--paired` pairs round
//!   i with round i.
//! * `--paired` on two results files is refused: two results files are two measuring
//!   processes (unless they hold the very same run), and rounds of two processes are not
//!   pairs — identical kernels differ between processes by the spread between them.
//!
//! The output has one shape for every input: the table, or a JSON array with one object per
//! shape.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::cli::CompareArgs;
use crate::comparison::{MIN_BOOTSTRAP_VALUES, StoredSide};
use crate::config::{Config, Dtype, GateSettings, ShapeParams};
use crate::evaluate::evaluate;
use crate::method::Method;
use crate::outcome::Outcome;
use crate::report::{Report, render};
use crate::results::{ConfigInfo, ResultsFile, ShapeResult};
use crate::samples::{SampleFile, parse_sample_file};
use crate::stats::{MAX_SHIFT_PAIRS, Rounds, StatsError};
use crate::verdict::Policy;

enum Input {
    Results(Box<ResultsFile>),
    Samples(SampleFile),
}

fn read_input(path: &Path) -> Result<Input> {
    let bytes = crate::files::read_bounded(path, crate::files::MAX_JSON_BYTES)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))?;
    if text.trim_start().starts_with('{') {
        let results = ResultsFile::parse(&text, path)?;
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
        Ok(Input::Samples(parse_sample_file(&text, path)?))
    }
}

/// The gate settings of a comparison of sample files: `--config`'s, else the defaults.
fn gate_for(args: &CompareArgs) -> Result<GateSettings> {
    Ok(match &args.config {
        Some(path) => Config::load(path)?.gate,
        None => GateSettings::default(),
    })
}

pub fn run(args: &CompareArgs) -> Result<Outcome> {
    if let Some(sd) = args.process_sd
        && !(sd.is_finite() && (0.0..0.5).contains(&sd))
    {
        bail!(
            "--process-sd {}: a spread between processes must be a fraction in [0, 0.5)",
            crate::validate::number(sd)
        );
    }
    let base = read_input(&args.base)?;
    let cand = read_input(&args.cand)?;
    let report = match (base, cand) {
        (Input::Samples(b), Input::Samples(c)) => {
            let gate = gate_for(args)?;
            compare_samples(b, c, args, gate)?
        }
        (Input::Results(b), Input::Results(c)) => {
            let config = args.config.as_deref().map(Config::load).transpose()?;
            comparable(&b, &c, args, config.as_ref())?;
            let (mut b, mut c) = (b, c);
            if let Some(config) = &config {
                for s in b.shapes.iter_mut().chain(c.shapes.iter_mut()) {
                    if let Some(p) = s.parity.as_mut() {
                        p.tolerance = config.parity.tolerance(s.params.dtype);
                    }
                }
            }
            let gate = config.map_or_else(|| c.gate.clone(), |c| c.gate);
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
    let out = render(&report, args.format, args.wide);
    print!("{out}");
    Ok(Outcome::from_passed(report.passed))
}

/// The unpaired reference of an offline comparison: BASE's rounds, one process, the spread
/// `--process-sd` gives (else the conservative default, which the report states).
fn reference(rounds: Vec<Vec<f64>>, args: &CompareArgs, values: bool) -> StoredSide {
    StoredSide {
        given_sd: args.process_sd,
        values,
        ..StoredSide::recorded(rounds, Vec::new(), None)
    }
}

fn compare_samples(
    base: SampleFile,
    cand: SampleFile,
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
    // One kind of file each side: blank lines between values make rounds, and mixing a file
    // of rounds with one of i.i.d. values would silently change what is compared.
    if base.has_rounds != cand.has_rounds {
        let (rounds, plain) = if base.has_rounds {
            (&args.base, &args.cand)
        } else {
            (&args.cand, &args.base)
        };
        let n = if base.has_rounds {
            base.rounds.len()
        } else {
            cand.rounds.len()
        };
        bail!(
            "{} separates its values into {n} rounds with blank lines and {} has no rounds (no blank line between values): compare two files of one kind (remove the blank lines, or separate the other file's rounds too)",
            rounds.display(),
            plain.display()
        );
    }
    let values = !base.has_rounds && !cand.has_rounds;
    let (n_base, n_cand) = (base.rounds.len(), cand.rounds.len());
    let small = values && !args.paired && n_base.min(n_cand) < MIN_BOOTSTRAP_VALUES;
    if small && n_base.saturating_mul(n_cand) > MAX_SHIFT_PAIRS {
        bail!(
            "{} has {n_base} values and {} {n_cand}: fewer than {MIN_BOOTSTRAP_VALUES} on a side is too few for the bootstrap of the p50, and the exact Hodges–Lehmann bound used instead builds at most {MAX_SHIFT_PAIRS} pairs of values ({} here); give at least {MIN_BOOTSTRAP_VALUES} values a side",
            args.base.display(),
            args.cand.display(),
            n_base.saturating_mul(n_cand)
        );
    }
    if args.paired && n_base != n_cand {
        bail!(
            "--paired: {} has {n_base} rounds and {} has {n_cand}; pairs need as many of each",
            args.base.display(),
            args.cand.display(),
        );
    }
    // i.i.d. values compared unpaired are held as one round a side (a million values are then
    // one allocation, not a million); paired, value i of each side is pair i.
    let hold = |rounds: Vec<Vec<f64>>| {
        if values && !args.paired {
            vec![rounds.concat()]
        } else {
            rounds
        }
    };
    let (base_rounds, cand_rounds) = (hold(base.rounds), hold(cand.rounds));
    let named = |e: StatsError, path: &Path| anyhow::anyhow!("{}: {e}", path.display());
    let c = Rounds::new(cand_rounds).map_err(|e| named(e, &args.cand))?;
    let b = Rounds::new(base_rounds).map_err(|e| named(e, &args.base))?;
    result.summary = Some(c.pooled().summary());
    result.samples_us = c.into_rounds();
    let stored = if args.paired {
        result.base_samples_us = b.into_rounds();
        None
    } else {
        Some(reference(b.into_rounds(), args, values))
    };
    let mut shapes = vec![result];
    evaluate(&mut shapes, |_| stored.clone(), &gate, Policy::default())
        .with_context(|| format!("in {}", args.base.display()))?;
    let mut report = Report::from_shapes(&shapes, gate);
    report.notes.push(if values {
        format!(
            "BASE and CAND hold {n_base} and {n_cand} values without rounds (no blank line between values): compared as i.i.d. values"
        )
    } else {
        format!(
            "BASE and CAND hold {n_base} and {n_cand} rounds (blocks of values between blank lines): compared on the round medians"
        )
    });
    if args.paired && values {
        report.notes.push(
            "--paired with files without rounds: value i of BASE and value i of CAND form pair i"
                .into(),
        );
    }
    if small {
        report.notes.push(format!(
            "fewer than {MIN_BOOTSTRAP_VALUES} values on a side: too few for a bootstrap of the p50 (it under-covers), so no p50 ratio decides; the Hodges–Lehmann shift (the median of all pairwise log ratios, \"Δ HL shift\") and its exact Mann–Whitney bound decide instead: a shift of the whole distribution, the p50 change only where every quantile moves by one factor"
        ));
    }
    Ok(report)
}

/// Refuses, exit 2, two results files that cannot be compared like with like: from two GPU
/// models, two configs (name, content hash or compile defines; also a `--config` other than
/// the one they ran) or two measuring methods (`crate::method`; a file that names none is
/// of no known method), or where CAND lacks a shape BASE measured (nothing would judge it,
/// and a comparison that judged less than BASE holds must not pass).
fn comparable(
    base: &ResultsFile,
    cand: &ResultsFile,
    args: &CompareArgs,
    config: Option<&Config>,
) -> Result<()> {
    let (b_path, c_path) = (args.base.display(), args.cand.display());
    if let (Some(b), Some(c)) = (&base.environment, &cand.environment)
        && b.gpu_slug != c.gpu_slug
    {
        bail!(
            "{b_path} was measured on {} and {c_path} on {}: results from different GPU models are never compared",
            b.gpu_name,
            c.gpu_name
        );
    }
    if !base.config.same_config(&cand.config) {
        bail!(
            "{b_path} ran {} and {c_path} ran {}: results of two configs are never compared (their shapes, gate, measuring or compile defines may differ); measure both with one config",
            base.config.describe(),
            cand.config.describe()
        );
    }
    if let Some(config) = config {
        let given = ConfigInfo::of(config);
        if !given.same_config(&cand.config) {
            bail!(
                "--config {} is {}, but {b_path} and {c_path} ran {}: pass the config they ran, or leave --config out (the gate settings are then theirs)",
                config.path.display(),
                given.describe(),
                cand.config.describe()
            );
        }
    }
    if !Method::same(base.method.as_ref(), cand.method.as_ref()) {
        bail!(
            "{b_path} was measured by method {} and {c_path} by method {}: times of two measuring methods are not comparable (docs/MEASURING.md, \"The method\"); measure both with one ci-gate, e.g. `ci-gate local --base REF`, which measures both kernel sets side by side",
            Method::describe(base.method.as_ref()),
            Method::describe(cand.method.as_ref())
        );
    }
    let lacking: Vec<&str> = base
        .shapes
        .iter()
        .filter(|b| !cand.shapes.iter().any(|c| same_shape(b, c)))
        .map(|b| b.name.as_str())
        .collect();
    // None in common at all is said by `compare_results` ("share no measured shape").
    if !lacking.is_empty() && lacking.len() < base.shapes.len() {
        bail!(
            "{c_path} lacks {} of the {} shapes of {b_path} ({}): nothing would judge {}, and a comparison of fewer shapes than BASE measured cannot pass; compare runs of the same shapes",
            lacking.len(),
            base.shapes.len(),
            names(&lacking, 10),
            if lacking.len() == 1 { "it" } else { "them" }
        );
    }
    Ok(())
}

/// One shape of two runs: the same parameters and cache mode. A shape its run never timed
/// (it failed before: `failed_on_its_own`) has no cache mode and is the same shape as
/// either.
fn same_shape(a: &ShapeResult, b: &ShapeResult) -> bool {
    let cache = |s: &ShapeResult| s.measurement.as_ref().map(|m| m.cache);
    a.params == b.params && (cache(a) == cache(b) || cache(a).is_none() || cache(b).is_none())
}

/// Whether a file's own record says its candidate failed on this shape: not measured
/// (`error`), an integrity check, or its parity check (under the recorded tolerance, or the
/// config's where `--config` is given). Such a shape's times, if it has any, judge nothing:
/// as CAND its failure is its verdict; as BASE it is no reference.
fn failed_on_its_own(s: &ShapeResult) -> bool {
    s.error.is_some() || s.parity_passed() == Some(false)
}

/// BASE's shape that judges `shape`: the one of the same cache mode first, else one that
/// BASE never timed.
fn counterpart<'a>(base: &'a ResultsFile, shape: &ShapeResult) -> Option<&'a ShapeResult> {
    let cache = |s: &ShapeResult| s.measurement.as_ref().map(|m| m.cache);
    let exact = |b: &&ShapeResult| b.params == shape.params && cache(b) == cache(shape);
    let found = base.shapes.iter().find(exact);
    found.or_else(|| base.shapes.iter().find(|b| same_shape(b, shape)))
}

/// Refuses, exit 2, a comparison with a shape nothing can judge: BASE's times of a shape its
/// own record failed (not measured, an integrity check, its parity) are no reference for a
/// shape of CAND that only they could judge; and files with no shape in common, where
/// CAND's own failures do not decide either.
fn judgeable(base: &ResultsFile, cand: &ResultsFile, args: &CompareArgs) -> Result<()> {
    let unjudged: Vec<&str> = cand
        .shapes
        .iter()
        .filter(|s| !failed_on_its_own(s) && counterpart(base, s).is_some_and(failed_on_its_own))
        .map(|s| s.name.as_str())
        .collect();
    if !unjudged.is_empty() {
        bail!(
            "{}: its candidate has no valid times of {} (not measured there, or failed parity or an integrity check), so nothing can judge {} in {}; compare with a run whose candidate passed on every shape",
            args.base.display(),
            names(&unjudged, 10),
            if unjudged.len() == 1 { "it" } else { "them" },
            args.cand.display()
        );
    }
    let judged = |s: &ShapeResult| {
        failed_on_its_own(s) || counterpart(base, s).is_some_and(|b| !failed_on_its_own(b))
    };
    if !cand.shapes.iter().any(judged) {
        bail!(
            "{} and {} share no measured shape (same parameters and cache mode): nothing can be compared",
            args.base.display(),
            args.cand.display()
        );
    }
    Ok(())
}

/// At most `max` names, then "and N more".
fn names(all: &[&str], max: usize) -> String {
    let shown = all[..all.len().min(max)].join(", ");
    if all.len() > max {
        format!("{shown} and {} more", all.len() - max)
    } else {
        shown
    }
}

fn compare_results(
    base: &ResultsFile,
    cand: ResultsFile,
    args: &CompareArgs,
    gate: GateSettings,
) -> Result<Report> {
    let matching = |shape: &ShapeResult| counterpart(base, shape);
    judgeable(base, &cand, args)?;
    // Only CAND's candidate: what CAND measured against its own base or stored baseline, and
    // what it noted about itself, are no part of this comparison. Its own failures are: a
    // parity or integrity failure its run recorded is a `parity-fail` here too, never a time
    // that reads as an improvement.
    let mut shapes: Vec<ShapeResult> = cand
        .shapes
        .iter()
        .map(|s| ShapeResult {
            name: s.name.clone(),
            params: s.params,
            error: s.error.clone(),
            samples_us: s.samples_us.clone(),
            summary: s.summary.clone(),
            tflops: s.tflops,
            measurement: s.measurement.clone(),
            launch: s.launch.clone(),
            parity: s.parity.clone(),
            integrity: s.integrity.clone(),
            ..ShapeResult::new(s.params)
        })
        .collect();
    // Pairs are rounds measured back to back in one process. Two results files are two
    // processes unless they hold the very same run, which is all the files can prove.
    if args.paired && *base != cand {
        bail!(
            "--paired: {} and {} are two results files, that is two measuring processes (they do not hold the same run), and rounds of two processes are not pairs: identical kernels measured in two processes differ by the spread between processes (0.1–0.9% on an H100/H200, more on an L4), which pairing would read as a change. Drop --paired: the files are then compared unpaired with that spread added. Pairs of one process are each file's own A/B (`ci-gate comment --from FILE`, or its JSON's `ab`)",
            args.base.display(),
            args.cand.display()
        );
    }
    let mut warnings = Vec::new();
    for shape in shapes.iter_mut() {
        if failed_on_its_own(shape) {
            continue;
        }
        let Some(b) = matching(shape) else {
            warnings.push(format!("{}: not in {}", shape.name, args.base.display()));
            continue;
        };
        shape.stored_launch = b.launch.clone();
        if args.paired {
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
        }
    }
    evaluate(
        &mut shapes,
        |shape| {
            (!args.paired && !failed_on_its_own(shape))
                .then(|| matching(shape))
                .flatten()
                .map(|b| reference(b.samples_us.clone(), args, false))
        },
        &gate,
        Policy::default(),
    )
    .with_context(|| format!("in {}", args.base.display()))?;
    let mut report = Report::from_shapes(&shapes, gate);
    report.config_name = Some(cand.config.name.clone());
    report.environment = cand.environment.clone();
    report.commit = cand.git_commit.clone();
    report.warnings = warnings;
    crate::evaluate::launch_findings(&shapes, &mut report.warnings, &mut report.notes);
    Ok(report)
}
