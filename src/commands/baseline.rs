//! `ci-gate baseline show|update`.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use chrono::Utc;

use crate::baseline::{BaselineFile, BaselineShape, BaselineStore, Provenance};
use crate::cli::{BaselineShowArgs, BaselineUpdateArgs};
use crate::comparison::Comparison;
use crate::config::{CacheMode, ShapeParams};
use crate::method::Method;
use crate::outcome::Outcome;
use crate::results::{ConfigInfo, ResultsFile, SCHEMA_VERSION};
use crate::run::child;
use crate::run::{Run, RunRequest};
use crate::stats::{ProcessSpread, Rounds, Sample, process_spread};
use crate::text::{error_line, short_commit, terminal_text};

pub(crate) fn show(args: &BaselineShowArgs) -> Result<Outcome> {
    let store = BaselineStore::new(&args.baselines);
    let files = store.list(args.gpu.as_deref())?;
    if files.is_empty() {
        // `--gpu` takes the slug (the directory's name): a GPU's name is answered with it.
        let hint = args
            .gpu
            .as_deref()
            .map(|g| (g, crate::results::gpu_slug(g)))
            .filter(|(g, slug)| g != slug && !slug.is_empty())
            .map(|(_, slug)| format!(" (--gpu takes the slug of a GPU's name: {slug})"))
            .unwrap_or_default();
        println!(
            "no baselines stored under {}{}{hint}",
            store.root().display(),
            args.gpu
                .as_deref()
                .map(|g| format!(" for {}", terminal_text(g)))
                .unwrap_or_default()
        );
        return Ok(Outcome::Pass);
    }
    let mut listing = Listing::default();
    let mut bad = Vec::new();
    for (path, loaded) in files {
        match loaded {
            Ok(b) => listing.add(&path, &b),
            Err(e) => bad.push(e),
        }
    }
    // Nothing is printed before an error: a reader sees the errors, or the whole table.
    if bad.is_empty() {
        listing.print(args.wide);
        return Ok(Outcome::Pass);
    }
    let first = bad.remove(0);
    for e in &bad {
        eprintln!("error: {}", error_line(&e.to_string()));
    }
    Err(first.into())
}

/// What `baseline show` prints of the stored files: a row each, and under the table the
/// compiler resources and energy per call they recorded. Everything from a file goes
/// through `terminal_text`: no escape sequence, control or bidirectional character reaches
/// the terminal.
#[derive(Default)]
struct Listing {
    rows: Vec<Vec<String>>,
    resources: Vec<String>,
    energy: Vec<String>,
}

impl Listing {
    fn add(&mut self, path: &std::path::Path, b: &BaselineFile) {
        let shown = terminal_text(&path.display().to_string());
        let lines: Vec<String> = b
            .shapes
            .iter()
            .filter_map(|s| {
                // Recomputed from the stored windows, as the reports do.
                let e = crate::energy::SideEnergy::from_rounds(
                    s.energy.as_ref()?.rounds.clone(),
                    s.params.flops(),
                    0.95,
                );
                let mj = e.mj_per_call?;
                Some(terminal_text(&format!(
                    "  {:<28} {:>10.4} {:<22} {:>7}",
                    s.name,
                    mj.mean,
                    format!("[{:.4}, {:.4}]", mj.lo, mj.hi),
                    mj.rounds
                )))
            })
            .collect();
        if !lines.is_empty() {
            self.energy.push(shown.clone());
            self.energy.extend(lines);
        }
        if !b.kernel_resources.is_empty() {
            self.resources.push(shown);
            self.resources.extend(
                b.kernel_resources
                    .iter()
                    .flat_map(resource_lines)
                    .map(|l| terminal_text(&l)),
            );
        }
        self.rows.push(
            [
                path.display().to_string(),
                b.environment.gpu_name.clone(),
                b.config.name.clone(),
                b.shapes.len().to_string(),
                b.provenance
                    .commit
                    .as_deref()
                    .map_or("—".into(), short_commit),
                b.provenance.recorded_at.format("%Y-%m-%d").to_string(),
                format!(
                    "{}{}",
                    b.provenance.reason,
                    if b.provenance.forced { " (forced)" } else { "" }
                ),
                spread_range(b),
                Method::describe(b.method.as_ref()),
            ]
            .map(|cell| terminal_text(&cell))
            .to_vec(),
        );
    }

    fn print(&self, wide: bool) {
        let header: Vec<String> = [
            "File",
            "GPU",
            "Config",
            "Shapes",
            "Commit",
            "Recorded",
            "Reason",
            "Spread (processes)",
            "Method",
        ]
        .map(String::from)
        .to_vec();
        // The file, when it was recorded and its spread first; then the rest as the width
        // allows.
        print!(
            "{}",
            crate::report::fitted_table(
                &header,
                &self.rows,
                &[0, 5, 7, 1, 3, 8, 6, 4, 2],
                1,
                &[3],
                (!wide).then(crate::report::stdout_width),
                "with --wide",
            )
        );
        if !self.resources.is_empty() {
            println!("Compiler resources recorded:");
            let header = format!(
                " {:>4} {:>7} {:>5} {:>12} {:>7} {:>4}",
                "regs", "spill B", "stack", "smem s+dyn B", "threads", "CTAs"
            );
            for line in crate::report::name_row("kernel", &header) {
                println!("{line}");
            }
            for line in &self.resources {
                println!("{line}");
            }
        }
        if !self.energy.is_empty() {
            println!(
                "Energy per call recorded, mJ (mean [95% t interval] over the windows of the\nrecording processes together; the spread between processes is not in it):"
            );
            println!(
                "  {:<28} {:>10} {:<22} {:>7}",
                "shape", "mean", "interval", "windows"
            );
            for line in &self.energy {
                println!("{line}");
            }
        }
    }
}

/// One kernel's recorded figures, a row of the table under its file (80 columns; a long
/// name on a line of its own, `report::name_row`).
fn resource_lines(k: &crate::resources::KernelResources) -> Vec<String> {
    let opt = |v: Option<u64>| v.map_or_else(|| "?".to_string(), |v| v.to_string());
    let figures = format!(
        " {:>4} {:>7} {:>5} {:>12} {:>7} {:>4}",
        k.registers,
        format!("{}/{}", opt(k.spill_store_bytes), opt(k.spill_load_bytes)),
        k.stack_frame_bytes,
        format!("{}+{}", k.static_smem_bytes, k.dynamic_smem_bytes),
        k.threads_per_block,
        opt(k.max_ctas_per_sm.map(u64::from)),
    );
    crate::report::name_row(&k.kernel, &figures)
}

/// The range of the between-process spreads a baseline records, or why there is none.
fn spread_range(b: &BaselineFile) -> String {
    let sds: Vec<f64> = b
        .shapes
        .iter()
        .filter_map(|s| s.process_spread.map(|p| p.sd))
        .collect();
    if sds.is_empty() {
        return "not recorded".into();
    }
    let lo = sds.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = sds.iter().copied().fold(0.0, f64::max);
    let k = b
        .shapes
        .iter()
        .map(|s| s.process_rounds.len())
        .max()
        .unwrap_or(0);
    format!("{:.2}–{:.2}% ({k})", lo * 100.0, hi * 100.0)
}

/// Processes `baseline update` measures in when it measures (not `--from`): the number from
/// which a comparison uses the estimated spread between processes with its smaller floor
/// (`comparison::MIN_PROCESSES`; the calibration that chose it is in docs/PERF.md).
const DEFAULT_PROCESSES: u32 = crate::comparison::MIN_PROCESSES as u32;

/// Records new baselines for this GPU, from fresh measuring processes or results files.
///
/// Each shape's rounds from every process are kept with their process boundaries, and the
/// between-process spread of its p50 is estimated from them (`stats::process_spread`), so
/// later comparisons with this baseline carry that spread. Refuses, exit 1, naming the
/// shapes, when a shape fails parity, would be recorded more than the gate's margin slower
/// than the stored baseline, or when the update would drop stored shapes; `--force` records
/// anyway. Shapes that could not be measured have nothing to record and always refuse.
pub(crate) fn update(args: &BaselineUpdateArgs) -> Result<Outcome> {
    let reason = args.reason.trim();
    if reason.is_empty() {
        bail!(
            "--reason is empty: say why the baseline changes (it is kept in the file's provenance)"
        );
    }
    if args.processes < 1 {
        bail!("--processes must be at least 1");
    }
    let store = BaselineStore::new(&args.config.baselines);
    let Gathered {
        runs,
        source,
        measured,
    } = gather(args)?;
    let merged = merge_processes(&runs, &args.from)?;
    let first = &runs[0];
    let Some(env) = first.environment.clone() else {
        bail!("{source}: no environment recorded, so the GPU it was measured on is unknown");
    };
    // A corrupt or foreign baseline stops here, before anything is written.
    let previous = store.load(&env.gpu_slug, &env.gpu_name, &first.config.name)?;
    let unmeasured: Vec<String> = merged
        .iter()
        .filter_map(|m| Some(format!("{}: {}", m.name, m.error.as_ref()?)))
        .collect();
    if !unmeasured.is_empty() {
        tell(
            &format!(
                "refusing to record: {} could not be measured in {source} or failed an integrity check there, so there is nothing to record for {}:",
                count(unmeasured.len()),
                if unmeasured.len() == 1 { "it" } else { "them" }
            ),
            &unmeasured,
        );
        return Ok(Outcome::Fail);
    }
    let method = first.method.clone();
    say_methods(method.as_ref(), previous.as_ref());
    let refusals = refusals(&merged, &runs, previous.as_ref(), &source)?;
    if !refusals.is_empty() && !args.force {
        tell("refusing to record (pass --force to record anyway):", &[]);
        for r in &refusals {
            tell(&format!("- {}", r.why), &r.shapes);
        }
        if let Some(measured) = measured {
            keep_for_force(args, measured);
        }
        return Ok(Outcome::Fail);
    }
    for r in &refusals {
        tell(
            &format!("warning: recording with --force although {}", r.why),
            &r.shapes,
        );
    }
    warn_about_spreads(&merged);
    let provenance = Provenance {
        commit: first.git_commit.clone(),
        recorded_at: Utc::now(),
        reason: reason.to_owned(),
        previous_commit: previous.as_ref().and_then(|p| p.provenance.commit.clone()),
        previous_recorded_at: previous.as_ref().map(|p| p.provenance.recorded_at),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        forced: args.force && !refusals.is_empty(),
    };
    let file = BaselineFile {
        schema_version: SCHEMA_VERSION,
        gpu_slug: env.gpu_slug.clone(),
        config: first.config.clone(),
        provenance,
        method,
        environment: env,
        kernel_source_hash: first.kernel_source_hash.clone(),
        shapes: stored_shapes(merged, first.gate.confidence)?,
        kernel_resources: crate::resources::of_side(
            &first.kernel_resources,
            crate::resources::ResourceSide::Candidate,
        ),
    };
    let path = store.save(&file)?;
    say_recorded(&file, &path, &source);
    Ok(Outcome::Pass)
}

/// The runs a baseline is recorded from, and what they are for messages: `--processes`
/// fresh measuring processes (the candidate alone, every shape, parity, the peers and
/// energy windows — what the reports show of the baseline — compared with nothing), or the
/// `--from` results files, which must be of the config.
/// What `baseline update` records from: the runs, how they are named in messages, and,
/// where it measured them now, the results files it wrote.
struct Gathered {
    runs: Vec<ResultsFile>,
    source: String,
    measured: Option<Measured>,
}

/// The results files of the measuring processes, in a temporary directory removed when
/// this is dropped (kept by [`keep_for_force`] where the recording is refused).
struct Measured {
    dir: tempfile::TempDir,
    files: Vec<PathBuf>,
}

fn gather(args: &BaselineUpdateArgs) -> Result<Gathered> {
    if !args.from.is_empty() {
        let runs = args
            .from
            .iter()
            .map(|p| ResultsFile::load(p).map_err(anyhow::Error::from))
            .collect::<Result<Vec<_>>>()?;
        check_from_matches_config(&args.config.config, &args.from, &runs)?;
        let names: Vec<String> = args.from.iter().map(|p| p.display().to_string()).collect();
        return Ok(Gathered {
            runs,
            source: names.join(", "),
            measured: None,
        });
    }
    let run = Run::resolve(RunRequest {
        compare: false,
        trace_drift: false,
        energy: true,
        ..RunRequest::gate(&args.config)
    })?;
    let names = run.shape_names();
    let run = run.with(|r| r.shapes = names);
    let dir = child::scratch("ci-gate-baseline-")?;
    let (mut runs, mut files) = (Vec::new(), Vec::new());
    for p in 1..=args.processes {
        eprintln!("measuring process {p}/{}", args.processes);
        let file = child::file_in(&dir, &format!("process{p}.json"));
        runs.push(run.run_child(&file)?);
        files.push(file);
    }
    Ok(Gathered {
        runs,
        source: format!("{} measuring processes", args.processes),
        measured: Some(Measured { dir, files }),
    })
}

/// Where a recording that measured is refused, its results files are kept (not removed
/// with their temporary directory) and the command that records them with `--force` is
/// printed: the minutes of GPU time they took are not spent again to override a refusal
/// the reader has judged (a card that differs from the one that recorded the stored
/// baseline, say).
fn keep_for_force(args: &BaselineUpdateArgs, measured: Measured) {
    let Measured { dir, files } = measured;
    let kept = dir.keep();
    // One line a part, continued with backslashes: a shell takes it as pasted, and it fits
    // the terminal as the rest of what `baseline update` says does.
    let word = |p: &std::path::Path| shell_word(&p.display().to_string());
    let mut command = vec![
        "ci-gate baseline update \\".to_owned(),
        format!("  --config {} \\", word(&args.config.config)),
        format!("  --baselines {} \\", word(&args.config.baselines)),
    ];
    command.extend(files.iter().map(|f| format!("  --from {} \\", word(f))));
    command.push("  --force --reason '<why the refusal does not hold>'".to_owned());
    tell(
        &format!(
            "the measurements are kept in {}: to record them as they are, without measuring again, run",
            word(&kept)
        ),
        &command,
    );
}

/// `word` as one word of a POSIX shell command (single-quoted where it holds anything
/// but letters, digits and `_-./:=@%+,`), escape sequences and control characters
/// removed first ([`terminal_text`]).
fn shell_word(word: &str) -> String {
    let word = terminal_text(word);
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// A reason not to record, and the shapes it is about (listed one per line).
struct Refusal {
    why: String,
    shapes: Vec<String>,
}

/// Why the merged shapes should not be recorded (`--force` records anyway): a shape fails
/// parity; another process used the GPU while they were measured; a shape would be
/// recorded more than the gate's margin slower than the stored baseline (only where the
/// stored baseline is of the same method: times of two methods are not comparable); the
/// update would drop stored shapes.
fn refusals(
    merged: &[MergedShape],
    runs: &[ResultsFile],
    previous: Option<&BaselineFile>,
    source: &str,
) -> Result<Vec<Refusal>> {
    let gate = &runs[0].gate;
    let mut refusals = Vec::new();
    let parity_failures: Vec<String> = merged
        .iter()
        .filter(|m| m.parity.as_ref().is_some_and(|p| !p.passed()))
        .map(|m| m.name.clone())
        .collect();
    if !parity_failures.is_empty() {
        refusals.push(Refusal {
            why: format!(
                "{} {} parity:",
                count(parity_failures.len()),
                if parity_failures.len() == 1 {
                    "fails"
                } else {
                    "fail"
                }
            ),
            shapes: parity_failures,
        });
    }
    // A baseline measured while another process used the GPU would hold that process's
    // slowdown as the reference every later run is judged against.
    let shared: Vec<String> = runs
        .iter()
        .filter_map(|r| r.timing.as_ref())
        .flat_map(|t| t.other_processes.iter())
        .map(|p| {
            format!(
                "{} (pid {})",
                terminal_text(p.name.as_deref().unwrap_or("a process")),
                p.pid
            )
        })
        .collect();
    if !shared.is_empty() {
        refusals.push(Refusal {
            why: "another process used the GPU while it was measured:".into(),
            shapes: shared,
        });
    }
    if let Some(prev) = previous {
        if prev.measured_by(runs[0].method.as_ref()) {
            let card = runs[0]
                .environment
                .as_ref()
                .and_then(|e| e.gpu_uuid.as_deref());
            refusals.extend(slower_than_stored(merged, prev, gate, card)?);
        }
        let dropped: Vec<String> = prev
            .shapes
            .iter()
            .filter(|old| {
                !merged
                    .iter()
                    .any(|m| m.params == old.params && m.cache == old.cache)
            })
            .map(|old| old.name.clone())
            .collect();
        if !dropped.is_empty() {
            refusals.push(Refusal {
                why: format!(
                    "the update would drop {} stored shape{} that {source} did not measure:",
                    dropped.len(),
                    if dropped.len() == 1 { "" } else { "s" },
                ),
                shapes: dropped,
            });
        }
    }
    Ok(refusals)
}

/// The refusal of shapes that would be recorded more than the gate's margin slower than
/// the stored baseline, if any. Where the stored baseline names another card of the model
/// than `card` (the new results' GPU UUID), the refusal says so: cards of one model differ
/// by a few percent (two H200s 2.2% apart on one shape, docs/PERF.md, 2026-12-05), and
/// only an A/B of the two kernel sets on this card tells the card from the kernels.
fn slower_than_stored(
    merged: &[MergedShape],
    prev: &BaselineFile,
    gate: &crate::config::GateSettings,
    card: Option<&str>,
) -> Result<Option<Refusal>> {
    let mut slower = Vec::new();
    for m in merged {
        let Some(old) = prev.shape(&m.params, m.cache) else {
            continue;
        };
        let cand = Rounds::new(m.rounds.clone())?;
        let c = Comparison::unpaired(&old.stored_side(), &cand, None, gate)?;
        // Not `verdict::slower_with_confidence`, on purpose: that rule protects a pull
        // request from a false alarm, so it needs the lower bound past the margin. Here
        // the error to avoid is the other one: a baseline recorded slower hides every
        // later regression up to that much, so the estimate past the margin is enough to
        // refuse (`--force` overrides), and a noisy recording errs towards refusing.
        if c.ratio > 1.0 + gate.max_p50_regression {
            slower.push(format!("{} ({})", m.name, crate::report::pct(c.ratio)));
        }
    }
    let stored_card = prev.environment.gpu_uuid.as_deref();
    let another_card = match (stored_card, card) {
        (Some(stored), Some(this)) if stored != this => format!(
            " (the stored baseline was measured on another card of this model, {}; these results on {}: part of the difference can be the card's, which the gate's A/B of the stored baseline's kernels against these on this card tells apart)",
            terminal_text(stored),
            terminal_text(this)
        ),
        _ => String::new(),
    };
    Ok((!slower.is_empty()).then(|| Refusal {
        why: format!(
            "{} would be recorded more than {:.1}% slower than the stored baseline{another_card}:",
            count(slower.len()),
            gate.max_p50_regression * 100.0
        ),
        shapes: slower,
    }))
}

/// "1 shape", "13 shapes".
fn count(n: usize) -> String {
    format!("{n} shape{}", if n == 1 { "" } else { "s" })
}

/// Prints `text` on stderr wrapped to the terminal's width (80 columns at least, the
/// continuation lines indented), then `items` one per line as a list: what `baseline
/// update` says fits 80 columns however many shapes it names.
fn tell(text: &str, items: &[String]) {
    eprint!("{}", wrapped(text));
    for item in items {
        eprintln!("    {item}");
    }
}

/// `text` wrapped as [`tell`] wraps it.
fn wrapped(text: &str) -> String {
    crate::report::wrap_lines(&[text.to_owned()], Some(crate::report::stdout_width()))
}

/// What a reader must know of the methods (`crate::method`): results measured by another
/// method than this ci-gate's make a baseline this ci-gate's runs do not compare with; a
/// stored baseline of another method than the results is replaced without being compared
/// with them (a new method is no kernel change).
fn say_methods(method: Option<&Method>, previous: Option<&BaselineFile>) {
    let current = Method::current();
    if !Method::same(method, Some(&current)) {
        tell(
            &format!(
                "note: the results were measured by method {}, not this ci-gate's {}: runs of this ci-gate will not compare with the baseline (every shape reads other-method) until it is recorded from results of this ci-gate",
                Method::describe(method),
                current
            ),
            &[],
        );
    }
    if let Some(prev) = previous
        && !prev.measured_by(method)
    {
        tell(
            &format!(
                "note: the stored baseline was measured by method {} and these results by {}: times of two methods are not comparable, so the new numbers are not checked against the old ones (the stored shapes must still all be measured)",
                Method::describe(prev.method.as_ref()),
                Method::describe(method)
            ),
            &[],
        );
    }
}

/// Warns where the spread between processes is not recorded (one process) or estimated from
/// fewer than [`DEFAULT_PROCESSES`].
fn warn_about_spreads(merged: &[MergedShape]) {
    let single: Vec<String> = merged
        .iter()
        .filter(|m| m.spread.is_none())
        .map(|m| m.name.clone())
        .collect();
    if !single.is_empty() {
        tell(
            &format!(
                "warning: {} {} measured in one process only: no spread between processes is recorded, and comparisons will assume {:.1}%; record from {DEFAULT_PROCESSES} processes:",
                count(single.len()),
                if single.len() == 1 { "was" } else { "were" },
                crate::stats::ProcessSpread::ASSUMED.sd * 100.0
            ),
            &single,
        );
    }
    let few: Vec<String> = merged
        .iter()
        .filter(|m| m.spread.is_some() && m.process_rounds.len() < crate::comparison::MIN_PROCESSES)
        .map(|m| m.name.clone())
        .collect();
    if !few.is_empty() {
        tell(
            &format!(
                "warning: the spread between processes of {} is estimated from fewer than {DEFAULT_PROCESSES} processes, so comparisons will take it as at least {:.1}% with the few degrees of freedom of that many processes: their intervals are wider, and a run that the baseline alone decides sends more shapes to the second stage (on an H200, 9 to 11 of 13 from 3 processes, none from 5: docs/PERF.md, 2026-12-04); record from {DEFAULT_PROCESSES} processes:",
                count(few.len()),
                crate::comparison::FEW_PROCESSES_FLOOR * 100.0
            ),
            &few,
        );
    }
}

/// The stored shapes of the merged ones: every round with its process boundaries and
/// spread, the summary, the peers' p50s (median over the processes) and the energy windows.
fn stored_shapes(merged: Vec<MergedShape>, confidence: f64) -> Result<Vec<BaselineShape>> {
    let mut shapes = Vec::with_capacity(merged.len());
    for m in merged {
        let summary = Sample::new(m.rounds.iter().flatten().copied().collect())?.summary();
        let energy = (!m.energy.is_empty()).then(|| {
            crate::energy::SideEnergy::from_rounds(m.energy, m.params.flops(), confidence)
        });
        shapes.push(BaselineShape {
            energy,
            launch: m.launch,
            tflops: Some(m.params.tflops(summary.p50)),
            name: m.name,
            params: m.params,
            cache: m.cache,
            samples_us: m.rounds,
            summary,
            parity: m.parity,
            process_rounds: m.process_rounds,
            process_spread: m.spread,
            peers: m
                .peers
                .into_iter()
                .filter_map(|(peer, v)| {
                    Some(crate::peers::StoredPeer {
                        peer,
                        p50_us: Sample::new(v).ok()?.median(),
                    })
                })
                .collect(),
        });
    }
    Ok(shapes)
}

/// The line that says what was recorded where.
fn say_recorded(file: &BaselineFile, path: &std::path::Path, source: &str) {
    let spreads: Vec<f64> = file
        .shapes
        .iter()
        .filter_map(|s| s.process_spread.map(|p| p.sd))
        .collect();
    print!(
        "{}",
        wrapped(&format!(
            "recorded {} shape{} for {} in {}, measured by method {}, from {source}{}",
            file.shapes.len(),
            if file.shapes.len() == 1 { "" } else { "s" },
            terminal_text(&file.environment.gpu_name),
            path.display(),
            Method::describe(file.method.as_ref()),
            if spreads.is_empty() {
                String::new()
            } else {
                format!(
                    "; spread between processes {:.2}%–{:.2}%",
                    spreads.iter().copied().fold(f64::INFINITY, f64::min) * 100.0,
                    spreads.iter().copied().fold(0.0, f64::max) * 100.0
                )
            }
        ))
    );
}

/// One shape's rounds from every process, with their boundaries.
struct MergedShape {
    name: String,
    params: ShapeParams,
    cache: CacheMode,
    rounds: Vec<Vec<f64>>,
    process_rounds: Vec<usize>,
    spread: Option<ProcessSpread>,
    parity: Option<crate::results::Parity>,
    /// Each peer's p50 in each process that measured it.
    peers: std::collections::BTreeMap<crate::peers::Peer, Vec<f64>>,
    /// The candidate's energy windows in every process (src/energy.rs).
    energy: Vec<crate::energy::EnergyRound>,
    /// How every process launched it; `None` where one did not say or they disagree.
    launch: Option<crate::launch::Launch>,
    /// Why it cannot be recorded.
    error: Option<String>,
}

/// With `--from`, the config is not measured with, but the results must be of it: its name
/// and exactly its shapes (the repository's baselines are of its own config), so that another
/// repository's or another config's results are refused before anything is written.
fn check_from_matches_config(
    path: &std::path::Path,
    from: &[PathBuf],
    runs: &[ResultsFile],
) -> Result<()> {
    if !path.is_file() {
        bail!(
            "--config {}: no such file; with --from the config checks that the results are of it (its name and shapes), so pass the config they were measured with",
            path.display()
        );
    }
    let config = crate::config::Config::load(path)?;
    let ours: std::collections::BTreeSet<String> = config.shapes.iter().map(|s| s.name()).collect();
    for (file, r) in from.iter().zip(runs) {
        if r.config.name != config.name {
            bail!(
                "{} is of config {}, but --config {} is config {}: pass the config the results were measured with",
                file.display(),
                crate::text::quote(&r.config.name),
                path.display(),
                crate::text::quote(&config.name)
            );
        }
        let theirs: std::collections::BTreeSet<String> =
            r.shapes.iter().map(|s| s.name.clone()).collect();
        let extra: Vec<&String> = theirs.difference(&ours).collect();
        let missing: Vec<&String> = ours.difference(&theirs).collect();
        if !extra.is_empty() || !missing.is_empty() {
            let list = |v: &[&String]| {
                v.iter()
                    .map(|s| crate::text::quote(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            bail!(
                "{} holds other shapes than config {} ({}): {} not in the config{}{}; record from results of this config",
                file.display(),
                crate::text::quote(&config.name),
                path.display(),
                extra.len(),
                if extra.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", list(&extra))
                },
                if missing.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", and {} of the config missing ({})",
                        missing.len(),
                        list(&missing)
                    )
                }
            );
        }
        let ours = ConfigInfo::of(&config);
        if !ours.same_config(&r.config) {
            bail!(
                "{} ran {}, but --config {} is {}: the config changed since those results were measured (its content hash or compile defines differ); record from results of this config",
                file.display(),
                r.config.describe(),
                path.display(),
                ours.describe()
            );
        }
    }
    Ok(())
}

/// Joins the runs shape by shape. The runs must be of one config, one GPU model and one
/// kernel, each must have reached a verdict and hold shapes; a shape missing from a run, or
/// with an error or empty rounds in any, cannot be recorded.
fn merge_processes(runs: &[ResultsFile], from: &[PathBuf]) -> Result<Vec<MergedShape>> {
    let name = |i: usize| {
        from.get(i).map_or_else(
            || format!("measuring process {}", i + 1),
            |p| p.display().to_string(),
        )
    };
    let Some(first) = runs.first() else {
        bail!("nothing to record");
    };
    check_runs_agree(runs, first, &name)?;
    first
        .shapes
        .iter()
        .map(|s| merge_shape(runs, s, &name))
        .collect()
}

/// Every run reached a verdict, holds shapes, and is of the first run's config, GPU model,
/// method and kernel; `name(i)` names run i in the error.
fn check_runs_agree(
    runs: &[ResultsFile],
    first: &ResultsFile,
    name: &dyn Fn(usize) -> String,
) -> Result<()> {
    for (i, r) in runs.iter().enumerate() {
        if let Some(e) = &r.error {
            bail!(
                "{} did not reach a verdict ({e}); nothing to record",
                name(i)
            );
        }
        if r.shapes.is_empty() {
            bail!("{} holds no shapes; nothing to record", name(i));
        }
        if r.config.name != first.config.name {
            bail!(
                "{} is of config {:?} and {} of {:?}: one baseline is one config",
                name(0),
                first.config.name,
                name(i),
                r.config.name
            );
        }
        let slug = |r: &ResultsFile| r.environment.as_ref().map(|e| e.gpu_slug.clone());
        if slug(r) != slug(first) {
            bail!(
                "{} and {} were measured on different GPU models",
                name(0),
                name(i)
            );
        }
        if r.method.is_none() {
            bail!(
                "{} names no measuring method (a ci-gate before it recorded one wrote it): a baseline recorded from it would be of no known method, which no run compares with; measure again with this ci-gate",
                name(i)
            );
        }
        if !Method::same(r.method.as_ref(), first.method.as_ref()) {
            bail!(
                "{} was measured by method {} and {} by method {}: one baseline is of one method (times of two are not comparable); record from results of one ci-gate",
                name(0),
                Method::describe(first.method.as_ref()),
                name(i),
                Method::describe(r.method.as_ref())
            );
        }
        if r.kernel_source_hash != first.kernel_source_hash {
            bail!(
                "{} and {} measured different kernels (attention.cu hashes differ)",
                name(0),
                name(i)
            );
        }
    }
    Ok(())
}

/// One shape of the first run, its rounds from every run (each run's rounds in turn, the
/// spread between runs), or the reason it cannot be recorded in `error`.
fn merge_shape(
    runs: &[ResultsFile],
    s: &crate::results::ShapeResult,
    name: &dyn Fn(usize) -> String,
) -> Result<MergedShape> {
    let cache = s.measurement.as_ref().map_or(CacheMode::Hot, |m| m.cache);
    let mut m = MergedShape {
        name: s.name.clone(),
        params: s.params,
        cache,
        rounds: Vec::new(),
        process_rounds: Vec::new(),
        spread: None,
        parity: s.parity.clone(),
        peers: Default::default(),
        energy: Vec::new(),
        launch: s.launch.clone(),
        error: None,
    };
    // The first run's reason is kept, the shape's own error with it (text of a results
    // file: one line, escaped, bounded), so that a refusal says why.
    let mut failed = |why: String| {
        m.error.get_or_insert(why);
    };
    for (i, r) in runs.iter().enumerate() {
        let found = r.shapes.iter().find(|x| {
            x.params == s.params && x.measurement.as_ref().map(|mm| mm.cache) == Some(cache)
        });
        match found {
            None => failed(format!("missing from {}", name(i))),
            Some(x) if x.error.is_some() || x.samples_us.is_empty() => failed(match &x.error {
                Some(e) => format!(
                    "not measured in {}: {}",
                    name(i),
                    crate::text::clip_text(&crate::text::terminal_text(e), 600)
                ),
                None => format!("not measured in {}: no samples", name(i)),
            }),
            Some(x) if x.samples_us.iter().any(|r| r.is_empty()) => {
                failed(format!("an empty round in {}", name(i)))
            }
            // Its kernel was caught not doing the attention while it was timed (outputs
            // skipped, a record forged): no time of it is a reference, whatever `--force`.
            Some(crate::results::ShapeResult {
                integrity: Some(why),
                ..
            }) => failed(format!(
                "failed an integrity check in {}: {}",
                name(i),
                crate::text::clip_text(&crate::text::terminal_text(why), 600)
            )),
            Some(x) => {
                if x.parity.as_ref().is_some_and(|p| !p.passed()) {
                    m.parity = x.parity.clone();
                }
                m.process_rounds.push(x.samples_us.len());
                m.rounds.extend(x.samples_us.iter().cloned());
                if x.launch != m.launch {
                    m.launch = None;
                }
                if let Some(e) = &x.energy {
                    m.energy.extend(e.candidate.rounds.iter().cloned());
                }
                for p in &x.peers {
                    if let Some(v) = p.p50_us {
                        m.peers.entry(p.peer).or_default().push(v);
                    }
                }
            }
        }
    }
    if m.error.is_none() {
        let rounds = Rounds::new(m.rounds.clone()).with_context(|| format!("shape {}", m.name))?;
        m.spread = process_spread(&rounds, &m.process_rounds);
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn a_shell_word_is_quoted_only_where_it_needs_to_be() {
        assert_eq!(
            shell_word("/tmp/ci-gate-baseline-x/process1.json"),
            "/tmp/ci-gate-baseline-x/process1.json"
        );
        assert_eq!(shell_word("my configs/pr.yaml"), "'my configs/pr.yaml'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("$(rm -rf ~)"), "'$(rm -rf ~)'");
        assert_eq!(shell_word(""), "''");
        // No escape sequence reaches the terminal, quoted or not.
        assert!(!shell_word("a\u{1b}[31mb").contains('\u{1b}'));
    }
}
