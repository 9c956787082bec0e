//! The evaluator's threads, one queue from stdin to stdout:
//!
//! 1. the **reader** (this thread): reads a line, checks it (`protocol`), reads its source,
//!    refuses a candidate identical to the base or the reference, writes its text into a
//!    directory of the evaluator's own (`c<N>/attention.cu`: never a path made from its
//!    strings) and queues it;
//! 2. **compilers** (`--jobs`): compile each candidate ahead (`source::Precompile`, NVRTC in
//!    its sandbox into the compile cache), on the CPU while the GPUs measure others; a
//!    refusal or a compile error is its line at once;
//! 3. **device workers** (one per GPU of `--devices`, one shared queue): measure each
//!    candidate in a fresh process against the reference (`worker`), judge it (`judge`),
//!    confirm a candidate that meets the rule (hot and cold cache, fresh processes, against
//!    the current best) and accept it into the leaderboard;
//! 4. the **writer**: one JSON line per candidate, in the order they finish (match them by
//!    `id`, or `line`), flushed as each is written.
//!
//! The queues are bounded (twice the compilers, twice the GPUs), so a fast producer waits
//! rather than filling memory. The evaluator's own failures (its input or output broken, a
//! leaderboard that cannot be written) stop it: exit 2 after the lines already due.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use anyhow::Result;

use super::judge::{judge, run_line, warnings};
use super::leaderboard::Entry;
use super::protocol::{
    Acceptance, Candidate, Confirmation, EvalLine, GpuLine, Input, MAX_LINE_BYTES,
    MAX_REASON_CHARS, Rejected, Verdict, parse_line, read_line_bounded,
};
use super::source::KernelText;
use super::startup::{Board, Reference, Settings, start};
use super::worker::{Finished, WorkerRequest, measure_args};
use crate::backend::GpuError;
use crate::cli::{Against, EvalArgs};
use crate::config::CacheMode;
use crate::kernel::KernelSource;
use crate::outcome::Outcome;
use crate::run::RunRequest;

/// A candidate on its way through the queues.
struct Job {
    line: u64,
    id: String,
    commit: Option<String>,
    text: KernelText,
    /// Its directory in the evaluator's scratch space.
    dir: PathBuf,
    received: Instant,
    compiled: Instant,
    timing: super::protocol::Timing,
}

/// A reference's parity on every shape, from the first measurement against it that checked
/// it and found it right: what later measurements against the same reference (its
/// `kernel_sha256`) show instead of checking it again.
struct ReferenceParity {
    /// The input line whose measurement checked it.
    line: u64,
    shapes: HashMap<String, crate::results::Parity>,
}

/// What the threads share.
struct Shared<'a> {
    settings: &'a Settings,
    board: Mutex<Board>,
    /// References checked already, by `kernel_sha256`.
    reference_parity: Mutex<HashMap<String, ReferenceParity>>,
    /// Confirmations and acceptances one at a time, against the best of their moment.
    confirming: Mutex<()>,
    /// The evaluator's own failure, which ends it with exit 2.
    fatal: Mutex<Option<String>>,
    stop: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared<'_> {
    fn fail(&self, why: String) {
        lock(&self.fatal).get_or_insert(why);
        self.stop.store(true, Ordering::SeqCst);
    }

    fn stopping(&self) -> Option<String> {
        self.stop.load(Ordering::SeqCst).then(|| {
            format!(
                "not evaluated: the evaluator stopped ({})",
                lock(&self.fatal).clone().unwrap_or_default()
            )
        })
    }
}

fn clean(text: &str) -> String {
    crate::text::clip_text(&crate::text::terminal_text(text), MAX_REASON_CHARS)
}

impl Job {
    /// Its line with a verdict and nothing measured.
    fn line(&self, verdict: Verdict, reason: &str) -> EvalLine {
        let mut l = EvalLine::unmeasured(Some(self.id.clone()), self.line, verdict, reason);
        l.source_sha256 = Some(self.text.source_sha256.clone());
        l.kernel_sha256 = Some(self.text.kernel_sha256.clone());
        l.defines = self.text.defines.clone();
        l.commit = self.commit.clone();
        l.timing = self.timing.clone();
        l.timing.total_s = self.received.elapsed().as_secs_f64();
        l
    }
}

/// Counts of the lines written.
#[derive(Default)]
struct Tally {
    by_verdict: HashMap<Verdict, u64>,
    lines: u64,
    measured: u64,
}

/// `ci-gate eval`: reads candidates from `input` to its end, writes one line each to
/// `output`. Exit 0 when no line is an `error`, 1 when one is; an `Err` (exit 2) when the
/// evaluator could not start or stopped (see the module docs).
pub(crate) fn serve<R: BufRead, W: Write + Send>(
    args: &EvalArgs,
    input: R,
    output: W,
) -> Result<Outcome> {
    let (settings, board) = start(args)?;
    let shared = Shared {
        settings: &settings,
        board: Mutex::new(board),
        reference_parity: Mutex::new(HashMap::new()),
        confirming: Mutex::new(()),
        fatal: Mutex::new(None),
        stop: AtomicBool::new(false),
    };
    let started = Instant::now();
    let (out_tx, out_rx) = sync_channel::<EvalLine>(64);
    let (compile_tx, compile_rx) = sync_channel::<Job>(settings.jobs * 2);
    let (measure_tx, measure_rx) = sync_channel::<Job>(settings.devices.len() * 2);
    let (compile_rx, measure_rx) = (Mutex::new(compile_rx), Mutex::new(measure_rx));
    let (shared_ref, compile_ref, measure_ref) = (&shared, &compile_rx, &measure_rx);
    let tally = std::thread::scope(|scope| {
        let writer = scope.spawn(move || write_lines(out_rx, output, shared_ref));
        for _ in 0..settings.jobs {
            let (tx, out) = (measure_tx.clone(), out_tx.clone());
            scope.spawn(move || compile_loop(shared_ref, compile_ref, tx, out));
        }
        drop(measure_tx);
        for &device in &settings.devices {
            let out = out_tx.clone();
            scope.spawn(move || device_loop(shared_ref, device, measure_ref, out));
        }
        read_loop(shared_ref, input, compile_tx, out_tx);
        writer.join()
    });
    let tally = tally.unwrap_or_else(|_| {
        shared.fail("the writer thread panicked".into());
        Tally::default()
    });
    summary(&tally, started.elapsed().as_secs_f64());
    if let Some(why) = lock(&shared.fatal).take() {
        anyhow::bail!("{why}");
    }
    let errors = tally.by_verdict.get(&Verdict::Error).copied().unwrap_or(0);
    Ok(Outcome::from_passed(errors == 0))
}

/// One line on stderr: the lines by verdict, and candidates measured per minute.
fn summary(tally: &Tally, seconds: f64) {
    let mut counts: Vec<(Verdict, u64)> = tally.by_verdict.iter().map(|(v, n)| (*v, *n)).collect();
    counts.sort_by_key(|(v, _)| v.as_str());
    let counts: Vec<String> = counts
        .iter()
        .map(|(v, n)| format!("{n} {}", v.as_str()))
        .collect();
    eprintln!(
        "ci-gate eval: {} line(s) ({}) in {seconds:.1} s; {} measured, {:.1} a minute",
        tally.lines,
        counts.join(", "),
        tally.measured,
        if seconds > 0.0 {
            tally.measured as f64 * 60.0 / seconds
        } else {
            0.0
        }
    );
}

fn write_lines<W: Write>(rx: Receiver<EvalLine>, output: W, shared: &Shared) -> Tally {
    let mut out = std::io::BufWriter::new(output);
    let mut tally = Tally::default();
    for line in rx {
        let text = match serde_json::to_string(&line) {
            Ok(t) => t,
            Err(e) => {
                shared.fail(format!("a line could not be written as JSON: {e}"));
                continue;
            }
        };
        let written = out
            .write_all(text.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            shared.fail(format!("cannot write to the output: {e}"));
            continue;
        }
        tally.lines += 1;
        if line.timing.measure_s > 0.0 {
            tally.measured += 1;
        }
        *tally.by_verdict.entry(line.verdict).or_default() += 1;
    }
    tally
}

/// The reader (see the module docs).
fn read_loop<R: BufRead>(
    shared: &Shared,
    mut input: R,
    compile: SyncSender<Job>,
    out: SyncSender<EvalLine>,
) {
    let mut number = 0u64;
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut seq = 0u64;
    while !shared.stop.load(Ordering::SeqCst) {
        let read = match read_line_bounded(&mut input, MAX_LINE_BYTES) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                shared.fail(format!("cannot read the input: {e}"));
                break;
            }
        };
        number += 1;
        let received = Instant::now();
        let parsed = match read {
            Err(n) => Err(Rejected {
                id: None,
                verdict: Verdict::Error,
                reason: format!("the line is {n} bytes, longer than the {MAX_LINE_BYTES} read"),
            }),
            Ok(bytes) => parse_line(&bytes),
        };
        let candidate = match parsed {
            Ok(None) => continue,
            Ok(Some(c)) => c,
            Err(r) => {
                let _ = out.send(EvalLine::unmeasured(r.id, number, r.verdict, &r.reason));
                continue;
            }
        };
        if let Some(first) = seen.get(&candidate.id) {
            let why = format!("id {} was already used on line {first}", candidate.id);
            let _ = out.send(EvalLine::unmeasured(
                Some(candidate.id),
                number,
                Verdict::Error,
                &why,
            ));
            continue;
        }
        seen.insert(candidate.id.clone(), number);
        match prepare(shared, candidate, number, seq, received) {
            Ok(job) => {
                seq += 1;
                if compile.send(job).is_err() {
                    break;
                }
            }
            Err(line) => {
                let _ = out.send(*line);
            }
        }
    }
}

/// A checked candidate made a job: its source read, its text made and written to its
/// directory; refused where it is identical to the base or the reference.
fn prepare(
    shared: &Shared,
    c: Candidate,
    line: u64,
    seq: u64,
    received: Instant,
) -> Result<Job, Box<EvalLine>> {
    let unmeasured = |verdict, reason: &str| {
        let mut l = EvalLine::unmeasured(Some(c.id.clone()), line, verdict, reason);
        l.defines = c.defines.clone();
        l.commit = c.commit.clone();
        Box::new(l)
    };
    let source = match &c.input {
        Input::Source(s) => s.clone(),
        Input::Path(p) => match KernelSource::read(p) {
            Ok(s) => s.text,
            Err(e @ GpuError::Refused(_)) => {
                return Err(unmeasured(Verdict::Refused, &e.to_string()));
            }
            Err(e) => return Err(unmeasured(Verdict::Error, &e.to_string())),
        },
    };
    let text = KernelText::new(source, &c.defines)
        .map_err(|why| unmeasured(Verdict::Refused, &why.to_string()))?;
    let mut job = Job {
        line,
        id: c.id,
        commit: c.commit,
        text,
        dir: shared.settings.scratch.path().join(format!("c{seq}")),
        received,
        compiled: received,
        timing: Default::default(),
    };
    let identical = {
        let board = lock(&shared.board);
        identical_to(&job.text, &board.base, &board.reference)
    };
    if let Some(why) = identical {
        return Err(Box::new(job.line(Verdict::Refused, &why)));
    }
    if let Err(e) = job.text.write(&job.dir) {
        job.timing = Default::default();
        let why = format!("cannot write {}: {e}", job.dir.display());
        return Err(Box::new(job.line(Verdict::Error, &why)));
    }
    Ok(job)
}

/// Why a candidate is not measured against `reference` (or `base`): it is the same text.
fn identical_to(text: &KernelText, base: &Reference, reference: &Reference) -> Option<String> {
    [base, reference]
        .into_iter()
        .find(|r| r.text.kernel_sha256 == text.kernel_sha256)
        .map(|r| {
            format!(
                "identical to the {} (kernel SHA-256 {}): nothing to measure",
                if r.kind == super::protocol::ReferenceKind::Base {
                    "base kernels".to_owned()
                } else {
                    r.label()
                },
                crate::text::short_commit(&r.text.kernel_sha256)
            )
        })
}

/// A compiler (see the module docs).
fn compile_loop(
    shared: &Shared,
    jobs: &Mutex<Receiver<Job>>,
    measure: SyncSender<Job>,
    out: SyncSender<EvalLine>,
) {
    loop {
        let Ok(mut job) = lock(jobs).recv() else {
            break;
        };
        job.timing.queued_s = job.received.elapsed().as_secs_f64();
        if let Some(why) = shared.stopping() {
            let _ = out.send(job.line(Verdict::Error, &why));
            let _ = std::fs::remove_dir_all(&job.dir);
            continue;
        }
        let t = Instant::now();
        let checked = shared.settings.precompile.check(&job.text, &job.dir);
        job.timing.compile_s = t.elapsed().as_secs_f64();
        match checked {
            Ok(_) => {
                job.compiled = Instant::now();
                if let Err(back) = measure.send(job) {
                    let _ = std::fs::remove_dir_all(&back.0.dir);
                    break;
                }
            }
            Err(e) => {
                if matches!(e, GpuError::NoNvrtc) {
                    shared.fail(e.to_string());
                }
                let verdict = match e {
                    GpuError::Refused(_) => Verdict::Refused,
                    _ => Verdict::Error,
                };
                let _ = out.send(job.line(verdict, &e.to_string()));
                let _ = std::fs::remove_dir_all(&job.dir);
            }
        }
    }
}

/// A device worker (see the module docs).
fn device_loop(
    shared: &Shared,
    device: u32,
    jobs: &Mutex<Receiver<Job>>,
    out: SyncSender<EvalLine>,
) {
    loop {
        let Ok(mut job) = lock(jobs).recv() else {
            break;
        };
        job.timing.waiting_s = job.compiled.elapsed().as_secs_f64();
        let line = match shared.stopping() {
            Some(why) => job.line(Verdict::Error, &why),
            None => {
                let reference = lock(&shared.board).reference.clone();
                match identical_to(&job.text, &reference, &reference) {
                    Some(why) => job.line(Verdict::Refused, &why),
                    None => evaluate(shared, &mut job, &reference, device),
                }
            }
        };
        let _ = out.send(line);
        let _ = std::fs::remove_dir_all(&job.dir);
    }
}

/// Measures `job` against `reference` on `device`, judges it, and confirms and accepts it
/// where it meets the rule and there is a leaderboard.
fn evaluate(shared: &Shared, job: &mut Job, reference: &Reference, device: u32) -> EvalLine {
    let mut reference = reference.clone();
    let mut finished = measure(shared, job, &reference, device, None, "run");
    job.timing.measure_s = finished.wall_s;
    // A best accepted while this measurement ran (on another GPU of `--devices`): measured
    // again against it, since a candidate is judged against the reference of its moment.
    // Accepted wins are rare, so this is too.
    for again in 1..=3 {
        let now = lock(&shared.board).reference.clone();
        if now.text.kernel_sha256 == reference.text.kernel_sha256 {
            break;
        }
        reference = now;
        finished = measure(
            shared,
            job,
            &reference,
            device,
            None,
            &format!("run-{again}"),
        );
        job.timing.measure_s += finished.wall_s;
    }
    let reference = &reference;
    let mut line = measured_line(shared, job, reference, &finished, device);
    let meets = line.acceptance.as_ref().is_some_and(|a| a.meets_rule);
    if meets && shared.settings.leaderboard.is_some() {
        confirm(shared, job, device, &mut line);
    }
    line.timing.total_s = job.received.elapsed().as_secs_f64();
    line
}

/// One measuring process of `job` against `reference` (with `cache` for a confirmation), its
/// files in `job.dir/name`.
fn measure(
    shared: &Shared,
    job: &Job,
    reference: &Reference,
    device: u32,
    cache: Option<CacheMode>,
    name: &str,
) -> Finished {
    let s = shared.settings;
    let dir = job.dir.join(name);
    let request_path = dir.join("request.json");
    let out = dir.join("results.json");
    let checked = lock(&shared.reference_parity)
        .get(&reference.text.kernel_sha256)
        .map(|c| {
            format!(
                "the evaluator checked this reference ({}) on every shape once, when it measured line {}",
                reference.label(),
                c.line
            )
        });
    let request = WorkerRequest {
        run: RunRequest {
            shapes: s.names.clone(),
            base: Some(reference.base_kernels()),
            compare: false,
            peers: false,
            trace_drift: false,
            base_parity_checked: checked,
            ..RunRequest::gate(&crate::cli::ConfigArgs {
                config: s.config_path.clone(),
                kernels: job.dir.clone(),
                baselines: s.scratch.path().join("no-baselines"),
            })
        },
        cache,
        config_hash: s.config.hash.clone(),
    };
    let written = std::fs::create_dir_all(&dir)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            crate::files::write_json(&request_path, &request).map_err(|e| e.to_string())
        });
    if let Err(why) = written {
        return Finished {
            results: Err(super::worker::NoResults::Request(why)),
            wall_s: 0.0,
        };
    }
    let finished = s.spawner.run(
        &measure_args(&request_path, &out),
        &dir,
        &out,
        device,
        s.timeout,
    );
    if let Ok(results) = &finished.results {
        keep_reference_parity(shared, reference, job.line, results);
    }
    finished
}

/// Keeps the reference's parity from `results` where they checked it on every shape of the
/// evaluator and it passed everywhere (the first such measurement against it).
fn keep_reference_parity(
    shared: &Shared,
    reference: &Reference,
    line: u64,
    results: &crate::results::ResultsFile,
) {
    let s = shared.settings;
    if results.config.hash != s.config.hash {
        return;
    }
    let shapes: HashMap<String, crate::results::Parity> = results
        .shapes
        .iter()
        .filter_map(|r| {
            let p = r.base_parity.as_ref().filter(|p| p.passed())?;
            Some((r.name.clone(), p.clone()))
        })
        .collect();
    if s.names.iter().all(|n| shapes.contains_key(n)) {
        lock(&shared.reference_parity)
            .entry(reference.text.kernel_sha256.clone())
            .or_insert(ReferenceParity { line, shapes });
    }
}

/// Shows the reference's parity from the evaluator's one check of it, on shapes whose
/// measurement did not check it again.
fn show_reference_parity(
    shared: &Shared,
    reference: &Reference,
    shapes: &mut [super::protocol::ShapeLine],
) {
    let kept = lock(&shared.reference_parity);
    let Some(checked) = kept.get(&reference.text.kernel_sha256) else {
        return;
    };
    for shape in shapes.iter_mut() {
        if let Some(p) = shape.parity.as_mut()
            && p.reference.is_none()
        {
            p.reference = checked.shapes.get(&shape.name).cloned();
            p.reference_from_line = p.reference.as_ref().map(|_| checked.line);
        }
    }
}

/// The line of a measured candidate (before any confirmation).
fn measured_line(
    shared: &Shared,
    job: &Job,
    reference: &Reference,
    finished: &Finished,
    device: u32,
) -> EvalLine {
    let s = shared.settings;
    let mut line = job.line(Verdict::Error, "");
    line.reference = Some(reference.line());
    let results = match &finished.results {
        Err(why) => {
            line.reason = clean(&why.to_string());
            return line;
        }
        Ok(r) if r.config.hash != s.config.hash => {
            line.reason = "the measuring process ran another config than the evaluator's".into();
            return line;
        }
        Ok(r) => r,
    };
    let j = judge(results, &s.names, &s.rule);
    line.verdict = j.verdict;
    line.reason = j.reason;
    line.shapes = j.shapes;
    show_reference_parity(shared, reference, &mut line.shapes);
    line.probes = Some(j.probes);
    line.resources = results
        .kernel_resources
        .iter()
        .filter(|r| r.side == crate::resources::ResourceSide::Candidate)
        .cloned()
        .collect();
    line.warnings = warnings(results);
    line.timing.run = run_line(results);
    line.gpu = results.environment.as_ref().map(|env| GpuLine {
        name: clean(&env.gpu_name),
        slug: clean(&env.gpu_slug),
        uuid: env.gpu_uuid.as_deref().map(clean),
        device,
        simulated: crate::sim::is_simulated(env),
    });
    line.acceptance = Some(Acceptance {
        rule: s.rule.line(),
        meets_rule: j.meets_rule,
        wins: j.wins,
        why: j.why,
        confirmations: Vec::new(),
        accepted: s.leaderboard.as_ref().map(|_| false),
        rank: None,
    });
    line
}

/// A confirming measurement's summary.
fn confirmation(
    shared: &Shared,
    finished: &Finished,
    cache: CacheMode,
    against: &Reference,
) -> Confirmation {
    let s = shared.settings;
    let mut c = Confirmation {
        cache,
        verdict: Verdict::Error,
        meets_rule: false,
        wins: Vec::new(),
        why: String::new(),
        against: against.label(),
        measure_s: finished.wall_s,
        shapes: Vec::new(),
    };
    match &finished.results {
        Err(why) => c.why = clean(&why.to_string()),
        Ok(r) if r.config.hash != s.config.hash => {
            c.why = "the measuring process ran another config than the evaluator's".into();
        }
        Ok(r) => {
            let j = judge(r, &s.names, &s.rule);
            c.verdict = j.verdict;
            c.meets_rule = j.meets_rule;
            c.wins = j.wins;
            c.why = j.why;
            c.shapes = j.shapes;
            show_reference_parity(shared, against, &mut c.shapes);
        }
    }
    c
}

/// The confirming measurements of a candidate that met the rule: fresh processes against
/// the current best, hot cache then cold; accepted into the leaderboard when both meet the
/// rule too.
fn confirm(shared: &Shared, job: &Job, device: u32, line: &mut EvalLine) {
    let started = Instant::now();
    let _turn = lock(&shared.confirming);
    let best = lock(&shared.board).best.clone();
    let mut confirmations = Vec::new();
    for (name, cache) in [
        ("confirm-hot", CacheMode::Hot),
        ("confirm-cold", CacheMode::Cold),
    ] {
        let finished = measure(shared, job, &best, device, Some(cache), name);
        let c = confirmation(shared, &finished, cache, &best);
        let held = c.meets_rule;
        confirmations.push(c);
        if !held {
            break;
        }
    }
    line.timing.confirm_s = started.elapsed().as_secs_f64();
    let confirmed = confirmations.len() == 2 && confirmations.iter().all(|c| c.meets_rule);
    let Some(acceptance) = line.acceptance.as_mut() else {
        return;
    };
    acceptance.confirmations = confirmations;
    if !confirmed {
        let failed = acceptance.confirmations.iter().find(|c| !c.meets_rule);
        if let Some(c) = failed {
            acceptance.why = format!(
                "{}; not confirmed in a fresh process ({} cache, against {}): {}",
                acceptance.why, c.cache, c.against, c.why
            );
        }
        return;
    }
    match accept(shared, job, line, &best) {
        Ok(rank) => {
            if let Some(a) = line.acceptance.as_mut() {
                a.accepted = Some(true);
                a.rank = Some(rank);
            }
        }
        Err(e) => {
            let why = format!("{e:#}");
            if let Some(a) = line.acceptance.as_mut() {
                a.why = format!("{}; not accepted: {}", a.why, clean(&why));
            }
            shared.fail(why);
        }
    }
}

/// Appends `job` to the leaderboard (written atomically) and makes it the best (and the
/// reference, with `--against best`); its rank.
fn accept(shared: &Shared, job: &Job, line: &EvalLine, best: &Reference) -> Result<u32> {
    let s = shared.settings;
    let (Some(path), Some(gpu), Some(acceptance)) = (&s.leaderboard, &line.gpu, &line.acceptance)
    else {
        anyhow::bail!("a candidate without a leaderboard, GPU or rule cannot be accepted");
    };
    let mut board = lock(&shared.board);
    let new_best = board.add_reference(
        s,
        super::protocol::ReferenceKind::Best,
        Some(job.id.clone()),
        job.commit.clone(),
        job.text.clone(),
    )?;
    let Some(leaderboard) = board.leaderboard.as_mut() else {
        anyhow::bail!("no leaderboard is loaded");
    };
    let rank = leaderboard.entries.len() as u32 + 1;
    leaderboard.entries.push(Entry {
        rank,
        id: job.id.clone(),
        source_sha256: job.text.source_sha256.clone(),
        kernel_sha256: job.text.kernel_sha256.clone(),
        defines: job.text.defines.clone(),
        commit: job.commit.clone(),
        accepted_at: chrono::Utc::now(),
        against: best.line(),
        shapes: line.shapes.clone(),
        confirmations: acceptance.confirmations.clone(),
        gpu: gpu.clone(),
        method: line.method.clone(),
        config: crate::results::ConfigInfo::of(&s.config),
        source: job.text.source.clone(),
    });
    if let Err(e) = leaderboard.save(path) {
        leaderboard.entries.pop();
        return Err(e.into());
    }
    board.best = new_best.clone();
    if s.against == Against::Best {
        board.reference = new_best;
    }
    Ok(rank)
}
