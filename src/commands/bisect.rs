//! `ci-gate bisect GOOD BAD`: the first commit on BAD's first-parent path after GOOD whose
//! kernels are slower than GOOD's by more than the config's margin on the named shapes.
//!
//! Each step is an A/B of one commit's kernels (read with git, as `local --base REF` reads
//! a base) against GOOD's, in one process, through the gate's own pipeline and rule: a step
//! is "slower" when any named shape's verdict is `regression`. The search ([`search`]) is a
//! pure function over a [`Judge`], so the same logic runs on the GPU and in a seeded
//! simulation (the tests below measure its false-blame rate). Commits whose kernels do not
//! build or fail parity are skipped and the search goes around them, as `git bisect skip`
//! does; a commit whose `attention.cu` is byte-identical to one already judged reuses that
//! call. The culprit is confirmed by one more A/B against its first parent.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::cli::{BisectArgs, BisectFormat};
use crate::comparison::Comparison;
use crate::config::{Config, ShapeParams};
use crate::kernel::KernelDir;
use crate::outcome::Outcome;
use crate::report::pct;
use crate::results::ResultsFile;
use crate::run::git::{self, BaseKernels};
use crate::run::{BackendChoice, Run, RunRequest};
use crate::text::{clip_text, quote, short_commit, terminal_text};
use crate::verdict::Verdict;

/// What one step concluded about one commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Call {
    /// A named shape is a `regression` against GOOD.
    Slower,
    /// No named shape is.
    NotSlower,
    /// It could not be judged (kernels that do not build, fail parity, or an error): why.
    Skipped(String),
}

impl Call {
    fn label(&self) -> &'static str {
        match self {
            Call::Slower => "slower",
            Call::NotSlower => "not slower",
            Call::Skipped(_) => "skipped",
        }
    }
}

/// Judges the commits of a first-parent path (index 0 the oldest after GOOD, the last BAD).
pub(crate) trait Judge {
    /// Commit `index` against GOOD. Called at most once per index.
    fn judge(&mut self, index: usize) -> Call;
    /// Commit `index` against its first parent (GOOD for index 0): `Slower` confirms it.
    fn confirm(&mut self, index: usize) -> Call;
}

/// What a bisection found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// BAD is not slower than GOOD: nothing to bisect.
    BadNotSlower,
    /// BAD could not be judged.
    BadSkipped(String),
    /// The first slower commit, and what the A/B against its first parent said (`Slower`:
    /// confirmed).
    Culprit { index: usize, confirmation: Call },
    /// Skipped commits hide which of these (oldest first; the last was judged slower) is
    /// the first slower one.
    Ambiguous(Vec<usize>),
}

/// Binary search of the first slower commit among `n` (BAD, index `n - 1`, is judged
/// first); skipped commits are stepped around by judging the nearest untested commit to
/// the middle instead. At most `n` judgements; about ⌈log2(n + 1)⌉ without skips.
pub(crate) fn search(n: usize, judge: &mut dyn Judge) -> Found {
    if n == 0 {
        return Found::BadNotSlower;
    }
    match judge.judge(n - 1) {
        Call::Slower => {}
        Call::NotSlower => return Found::BadNotSlower,
        Call::Skipped(why) => return Found::BadSkipped(why),
    }
    // Positions: 0 is GOOD, p is commit index p − 1. `good` is known not slower, `bad`
    // known slower; the first slower commit lies in (good, bad].
    let (mut good, mut bad) = (0usize, n);
    let mut skipped: BTreeSet<usize> = BTreeSet::new();
    loop {
        let mid = (good + bad) / 2;
        let next = (good + 1..bad)
            .filter(|p| !skipped.contains(p))
            .min_by_key(|&p| (p.abs_diff(mid), p));
        let Some(p) = next else {
            let hidden: Vec<usize> = skipped
                .range(good + 1..bad)
                .map(|p| p - 1)
                .chain(std::iter::once(bad - 1))
                .collect();
            if hidden.len() > 1 {
                return Found::Ambiguous(hidden);
            }
            let index = bad - 1;
            return Found::Culprit {
                index,
                confirmation: judge.confirm(index),
            };
        };
        match judge.judge(p - 1) {
            Call::Slower => bad = p,
            Call::NotSlower => good = p,
            Call::Skipped(_) => {
                skipped.insert(p);
            }
        }
    }
}

/// The call of a run's named shapes: skipped where any could not be measured or failed
/// parity (or the run has an error), else slower where any is a `regression`.
pub(crate) fn classify(results: &ResultsFile) -> (Call, Vec<ShapeStep>) {
    let shapes: Vec<ShapeStep> = results.shapes.iter().map(ShapeStep::of).collect();
    if let Some(e) = &results.error {
        return (Call::Skipped(clip_text(&terminal_text(e), 300)), shapes);
    }
    let broken = results.shapes.iter().find_map(|s| {
        let why = s.error.as_deref().or(s.integrity.as_deref());
        match (s.verdict, why) {
            (_, Some(w)) => Some(format!("{}: {}", s.name, w)),
            (Verdict::Error | Verdict::ParityFail, None) => {
                Some(format!("{}: {}", s.name, s.verdict))
            }
            _ => None,
        }
    });
    if let Some(why) = broken {
        return (Call::Skipped(clip_text(&terminal_text(&why), 300)), shapes);
    }
    if results.shapes.is_empty() {
        return (Call::Skipped("no shape was measured".into()), shapes);
    }
    let slower = results
        .shapes
        .iter()
        .any(|s| s.verdict == Verdict::Regression);
    (
        if slower {
            Call::Slower
        } else {
            Call::NotSlower
        },
        shapes,
    )
}

/// One named shape in one step.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ShapeStep {
    pub shape: String,
    pub verdict: Verdict,
    /// The A/B comparison (candidate / base); absent where none ran.
    pub ab: Option<Comparison>,
}

impl ShapeStep {
    fn of(s: &crate::results::ShapeResult) -> ShapeStep {
        ShapeStep {
            shape: s.name.clone(),
            verdict: s.verdict,
            ab: s.ab.clone(),
        }
    }

    /// `b2h8s512d64_f16: Δ round p50 +6.01% [+5.20%, +6.85%] (90% CI, Yuen t, 8 pairs): regression`
    fn line(&self) -> String {
        let figures = match &self.ab {
            Some(c) => format!(
                "{} {} [{}, {}] ({:.0}% CI, {}, {} {})",
                c.method.ratio_label(),
                pct(c.ratio),
                pct(c.ci_low),
                pct(c.ci_high),
                c.confidence * 100.0,
                c.method.interval_label(),
                c.n_cand,
                c.method.units()
            ),
            None => "no A/B".to_owned(),
        };
        format!("{}: {figures}: {}", self.shape, self.verdict)
    }
}

/// A commit as the report shows it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct CommitInfo {
    pub commit: String,
    pub short: String,
    /// Its subject as git has it, made safe for one line (controls and escapes removed).
    pub subject: String,
    #[serde(skip)]
    raw_subject: String,
}

impl CommitInfo {
    fn read(commit: &str) -> CommitInfo {
        let raw = git::subject(commit);
        CommitInfo {
            commit: commit.to_owned(),
            short: short_commit(commit),
            subject: clip_text(&terminal_text(&raw), 300),
            raw_subject: raw,
        }
    }

    /// `0123456789ab "subject"` with every character that is not plainly printable written
    /// as an escape.
    fn shown(&self) -> String {
        format!("{} {}", self.short, quote(&self.raw_subject))
    }
}

/// What a step was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Role {
    /// BAD against GOOD, first.
    Bad,
    /// A commit of the search against GOOD.
    Step,
    /// The culprit against its first parent.
    Confirm,
}

/// One step of the report.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StepReport {
    pub role: Role,
    pub commit: CommitInfo,
    /// What it was measured against (GOOD, or the culprit's first parent).
    pub against: String,
    pub call: String,
    /// Why it was skipped.
    pub why: Option<String>,
    /// The commit whose call it reused (its kernels are byte-identical), not measured.
    pub reused_from: Option<String>,
    pub shapes: Vec<ShapeStep>,
    pub wall_s: f64,
}

/// Measures one A/B for the real judge: `cand`'s kernels against `base`'s.
type Measure<'a> = dyn FnMut(&BaseKernels, &Path) -> Result<ResultsFile> + 'a;

/// The judge of the command: each commit's kernels exported with git and measured A/B
/// against GOOD's through the pipeline.
struct PipelineJudge<'a> {
    commits: Vec<CommitInfo>,
    good: &'a BaseKernels,
    good_short: String,
    kernels_dir: PathBuf,
    tmp: tempfile::TempDir,
    measure: Box<Measure<'a>>,
    /// attention.cu hash → (call, short commit it was judged at).
    seen: HashMap<String, (Call, String)>,
    steps: Vec<StepReport>,
    progress: bool,
}

impl PipelineJudge<'_> {
    /// Exports commit `index`'s kernels; with the hash of its attention.cu.
    fn export(&self, commit: &str, label: &str) -> Result<(BaseKernels, String)> {
        let dir = self.tmp.path().join(commit);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let k = git::export_kernels(commit, label, &self.kernels_dir, &dir)?;
        let hash = KernelDir::new(&dir)
            .read_timed()
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .hash;
        Ok((k, hash))
    }

    /// A step of the report (the caller adds what it measured, then pushes it).
    fn step(role: Role, commit: CommitInfo, against: String, call: &Call) -> StepReport {
        StepReport {
            role,
            commit,
            against,
            call: call.label().to_owned(),
            why: match call {
                Call::Skipped(w) => Some(w.clone()),
                _ => None,
            },
            reused_from: None,
            shapes: Vec::new(),
            wall_s: 0.0,
        }
    }

    fn say(&self, what: String) {
        if self.progress {
            eprintln!("ci-gate: bisect: {}", terminal_text(&what));
        }
    }
}

impl Judge for PipelineJudge<'_> {
    fn judge(&mut self, index: usize) -> Call {
        let started = Instant::now();
        let role = if index + 1 == self.commits.len() {
            Role::Bad
        } else {
            Role::Step
        };
        let Some(info) = self.commits.get(index).cloned() else {
            return Call::Skipped(format!("no commit {index} on the path"));
        };
        let against = self.good_short.clone();
        let exported = self.export(&info.commit, &info.short);
        let (kernels, hash) = match exported {
            Ok(x) => x,
            Err(e) => {
                let call = Call::Skipped(clip_text(&terminal_text(&format!("{e:#}")), 300));
                let mut step = Self::step(role, info, against, &call);
                step.wall_s = started.elapsed().as_secs_f64();
                self.steps.push(step);
                return call;
            }
        };
        if let Some((call, from)) = self.seen.get(&hash).cloned() {
            let mut step = Self::step(role, info, against, &call);
            step.reused_from = Some(from);
            self.steps.push(step);
            return call;
        }
        self.say(format!("measuring {} against GOOD {}", info.short, against));
        let (call, shapes) = match (self.measure)(self.good, &kernels.dir) {
            Ok(r) => classify(&r),
            Err(e) => (
                Call::Skipped(clip_text(&terminal_text(&format!("{e:#}")), 300)),
                Vec::new(),
            ),
        };
        self.seen.insert(hash, (call.clone(), info.short.clone()));
        let mut step = Self::step(role, info, against, &call);
        step.shapes = shapes;
        step.wall_s = started.elapsed().as_secs_f64();
        self.steps.push(step);
        call
    }

    fn confirm(&mut self, index: usize) -> Call {
        let started = Instant::now();
        let Some(info) = self.commits.get(index).cloned() else {
            return Call::Skipped(format!("no commit {index} on the path"));
        };
        let parent = match index.checked_sub(1) {
            Some(p) => match self.commits.get(p).cloned() {
                Some(parent) => self
                    .export(&parent.commit, &parent.short)
                    .map(|k| (k.0, parent.short)),
                None => Err(anyhow::anyhow!("no commit {p} on the path")),
            },
            None => Ok((self.good.clone(), self.good_short.clone())),
        };
        let (call, shapes, against) = match parent {
            Err(e) => (
                Call::Skipped(clip_text(&terminal_text(&format!("{e:#}")), 300)),
                Vec::new(),
                String::new(),
            ),
            Ok((base, against)) => {
                self.say(format!(
                    "confirming {} against its first parent {against}",
                    info.short
                ));
                let measured = self
                    .export(&info.commit, &info.short)
                    .and_then(|(k, _)| (self.measure)(&base, &k.dir));
                let (call, shapes) = match measured {
                    Ok(r) => classify(&r),
                    Err(e) => (
                        Call::Skipped(clip_text(&terminal_text(&format!("{e:#}")), 300)),
                        Vec::new(),
                    ),
                };
                (call, shapes, against)
            }
        };
        let mut step = Self::step(Role::Confirm, info, against, &call);
        step.shapes = shapes;
        step.wall_s = started.elapsed().as_secs_f64();
        self.steps.push(step);
        call
    }
}

/// The JSON report (`--format json`, `--out`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct BisectReport {
    pub good: CommitInfo,
    pub bad: CommitInfo,
    pub config: String,
    pub shapes: Vec<String>,
    /// gate.max_p50_regression and gate.alpha.
    pub margin: f64,
    pub alpha: f64,
    /// Commits on the first-parent path after GOOD, BAD included.
    pub commits: usize,
    pub steps: Vec<StepReport>,
    /// `culprit`, `bad-not-slower`, `bad-skipped`, `ambiguous`.
    pub outcome: String,
    pub culprit: Option<CommitInfo>,
    /// Whether the A/B of the culprit against its first parent showed a regression.
    pub confirmed: Option<bool>,
    /// The commits among which the first slower one hides, when skips leave it open.
    pub candidates: Vec<CommitInfo>,
    /// Steps against GOOD (BAD's included; reused calls included, not measured).
    pub judged: usize,
    pub measured: usize,
    pub skipped: usize,
    pub wall_s: f64,
    pub error_control: String,
}

/// The footer: what each step's test controls and what that gives the whole search.
pub(crate) fn error_control(alpha: f64, margin: f64, shapes: usize, steps: usize) -> String {
    let k = steps.max(1);
    let w = crate::stats::STAGE1_ALPHA_SHARE;
    let level = crate::report::level_text;
    format!(
        "Error control: each step is the gate's one-sided margin test per shape, in its two planned looks (alpha = {alpha}, split {w:.1}/{:.1} between them: \"slower\" when the lower bound of Δ is above +{:.1}% at {} confidence after the first look, {} after the second). A false \"slower\" at a commit whose kernels are as fast as GOOD's has probability at most alpha per shape (much less at a true ratio of 1, since the test is against 1 + m); a missed slowdown has probability 1 − power (the \"Detectable\" slowdown of `ci-gate local` is caught with 80% power). Over the k = {k} steps (about ⌈log2(n + 1)⌉ for n commits), P(wrong culprit) ≤ the sum of the step errors ≤ k·(shapes·alpha + 1 − power) = {k}·({shapes}·{alpha} + 1 − power) by the union bound; the confirming A/B of the culprit against its first parent is one more check.",
        1.0 - w,
        margin * 100.0,
        level(1.0 - w * alpha),
        level(1.0 - (1.0 - w) * alpha),
    )
}

/// The terminal text of a report.
fn render_text(r: &BisectReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "ci-gate bisect: {} commits after GOOD {} up to BAD {} (first-parent path)\n",
        r.commits,
        r.good.shown(),
        r.bad.shown()
    ));
    out.push_str(&format!(
        "A step is \"slower\" when any of {} is a regression against GOOD's kernels (more than {:.1}% slower with confidence; config {}).\n\n",
        r.shapes.join(", "),
        r.margin * 100.0,
        terminal_text(&r.config)
    ));
    render_steps(r, &mut out);
    out.push('\n');
    out.push_str(&outcome_line(r));
    out.push_str(&format!(
        "{} steps against GOOD ({} measured, {} reused, {} skipped){} in {:.1} s.\n",
        r.judged,
        r.measured,
        r.judged.saturating_sub(r.measured),
        r.skipped,
        if r.confirmed.is_some() {
            " and the confirmation"
        } else {
            ""
        },
        r.wall_s
    ));
    out.push_str(&crate::report::wrap_lines(
        std::slice::from_ref(&r.error_control),
        Some(100),
    ));
    out
}

/// One line per step (which commit, against what, the call and why), each shape's line under it.
fn render_steps(r: &BisectReport, out: &mut String) {
    let mut n = 0;
    for s in &r.steps {
        let head = match s.role {
            Role::Bad => "BAD".to_owned(),
            Role::Step => {
                n += 1;
                format!("step {n}")
            }
            Role::Confirm => "confirm".to_owned(),
        };
        let against = match s.role {
            Role::Confirm => format!(" against its first parent {}", s.against),
            _ => String::new(),
        };
        let call = match (s.role, s.call.as_str()) {
            (Role::Confirm, "slower") => "confirmed (slower than its first parent)".to_owned(),
            (Role::Confirm, "not slower") => "not confirmed".to_owned(),
            (_, c) => c.to_owned(),
        };
        let why = match (&s.why, &s.reused_from) {
            (Some(w), _) => format!(": {}", terminal_text(w)),
            (None, Some(from)) => format!(
                " (attention.cu byte-identical to {}'s: its call reused, not measured)",
                terminal_text(from)
            ),
            _ => String::new(),
        };
        out.push_str(&format!(
            "{head:<8}{}{against}: {call}{why}\n",
            s.commit.shown()
        ));
        for shape in &s.shapes {
            out.push_str(&format!("          {}\n", terminal_text(&shape.line())));
        }
    }
}

/// What the bisection found: the culprit (confirmed or not), nothing to bisect, or the
/// commits skipped ones hide it among.
fn outcome_line(r: &BisectReport) -> String {
    let mut out = String::new();
    match r.outcome.as_str() {
        "culprit" => {
            if let Some(c) = &r.culprit {
                out.push_str(&format!(
                    "Culprit: {}, the first commit slower than GOOD by more than {:.1}%{}.\n",
                    c.shown(),
                    r.margin * 100.0,
                    if r.confirmed == Some(true) {
                        ", confirmed against its first parent"
                    } else {
                        "; NOT confirmed: the A/B against its first parent shows no regression"
                    }
                ));
            }
        }
        "bad-not-slower" => out.push_str(&format!(
            "BAD {} is not slower than GOOD by more than {:.1}% on these shapes: nothing to bisect.\n",
            r.bad.short,
            r.margin * 100.0
        )),
        "bad-skipped" => out.push_str(&format!(
            "BAD {} could not be judged: nothing to bisect.\n",
            r.bad.short
        )),
        _ => {
            let shown: Vec<String> = r.candidates.iter().map(CommitInfo::shown).collect();
            out.push_str(&format!(
                "Skipped commits hide the first slower commit: it is one of {}.\n",
                shown.join(", ")
            ));
        }
    }
    out
}

/// Resolves a revision the user gave for `which` (GOOD or BAD) to a full commit id.
fn resolve(which: &str, rev: &str) -> Result<String> {
    let commit = git::resolve(rev)
        .with_context(|| format!("{which} {}: no such commit in this repository", quote(rev)))?;
    if !git::is_full_commit(&commit) {
        bail!("{which} {}: git named no commit id for it", quote(rev));
    }
    Ok(commit)
}

pub(crate) fn run_bisect(args: &BisectArgs) -> Result<Outcome> {
    if let Some(out) = &args.out {
        crate::files::check_writable(out)?;
    }
    let started = Instant::now();
    let (config, shapes): (Config, Vec<ShapeParams>) =
        crate::config::load_selected(&args.config, &args.shapes)?;
    let good = resolve("GOOD", &args.good)?;
    let bad = resolve("BAD", &args.bad)?;
    let path = first_parent_path(&good, &bad)?;
    let tmp = tempfile::Builder::new()
        .prefix("ci-gate-bisect-")
        .tempdir()
        .context("cannot create a temporary directory for the kernels of the commits")?;
    let (good_kernels, good_hash) = export_good(&good, &args.kernels, tmp.path())?;
    crate::run::pipeline::on_hang(
        crate::run::pipeline::NoVerdict::config(&config),
        crate::run::pipeline::HangOut::Save(None),
    );
    let device = BackendChoice::from_env()?;
    // The GPU's lock, taken once for the whole search: no other ci-gate run measures between
    // its steps, each of which measures under it.
    let gpu = crate::run::sharing::GpuHold::take(device)?;
    let gpu = &gpu;
    let names: Vec<String> = shapes.iter().map(ShapeParams::name).collect();
    let commits: Vec<CommitInfo> = path.iter().map(|c| CommitInfo::read(c)).collect();
    let measure_config = config.clone();
    let measure_shapes = args.shapes.clone();
    let mut seen = HashMap::new();
    seen.insert(
        good_hash,
        (Call::NotSlower, format!("GOOD {}", short_commit(&good))),
    );
    let mut judge = PipelineJudge {
        commits: commits.clone(),
        good: &good_kernels,
        good_short: short_commit(&good),
        kernels_dir: args.kernels.clone(),
        tmp,
        measure: Box::new(move |base: &BaseKernels, cand: &Path| {
            step(
                measure_config.clone(),
                measure_shapes.clone(),
                base.clone(),
                cand.to_path_buf(),
                device,
            )?
            .measure(gpu)
        }),
        seen,
        steps: Vec::new(),
        progress: args.format == BisectFormat::Table,
    };
    let found = search(commits.len(), &mut judge);
    let steps = std::mem::take(&mut judge.steps);
    let bad_info = commits
        .last()
        .cloned()
        .unwrap_or_else(|| CommitInfo::read(&bad));
    let report = BisectReport::new(
        &found,
        steps,
        &commits,
        (CommitInfo::read(&good), bad_info.clone()),
        args,
        &config,
        names,
        started,
    );
    match args.format {
        BisectFormat::Table => print!("{}", render_text(&report)),
        BisectFormat::Json => {
            let mut text = serde_json::to_string_pretty(&report)?;
            text.push('\n');
            print!("{text}");
        }
    }
    if let Some(out) = &args.out {
        crate::files::write_json(out, &report)
            .with_context(|| "the bisect report could not be saved")?;
    }
    outcome(found, &report, &commits, &bad_info, &good, &config)
}

/// The commits on BAD's first-parent path after GOOD, oldest first: GOOD must be an
/// ancestor of BAD, on that path, and another commit.
fn first_parent_path(good: &str, bad: &str) -> Result<Vec<String>> {
    if good == bad {
        bail!(
            "GOOD and BAD are the same commit {}: nothing to bisect",
            short_commit(good)
        );
    }
    if !git::is_ancestor(good, bad) {
        bail!(
            "GOOD {} is not an ancestor of BAD {}: bisect needs GOOD on BAD's first-parent history",
            short_commit(good),
            short_commit(bad)
        );
    }
    let path = git::first_parent_path(good, bad).with_context(|| {
        format!(
            "cannot list the commits from GOOD {} to BAD {} with git",
            short_commit(good),
            short_commit(bad)
        )
    })?;
    match path.first() {
        Some(first) if git::first_parent(first).as_deref() == Some(good) => Ok(path),
        _ => bail!(
            "GOOD {} is not on BAD {}'s first-parent history (it was merged from a side branch): pass a commit of that history as GOOD",
            short_commit(good),
            short_commit(bad)
        ),
    }
}

/// GOOD's kernels, read with git into `dir/good`, with the hash of its attention.cu.
fn export_good(good: &str, kernels: &Path, dir: &Path) -> Result<(BaseKernels, String)> {
    let good_dir = dir.join("good");
    std::fs::create_dir_all(&good_dir)
        .with_context(|| format!("cannot create {}", good_dir.display()))?;
    let k = git::export_kernels(
        good,
        &format!("GOOD {}", short_commit(good)),
        kernels,
        &good_dir,
    )?;
    let hash = KernelDir::new(&good_dir)
        .read_timed()
        .map_err(|e| anyhow::anyhow!("GOOD {}: {e}", short_commit(good)))?
        .hash;
    Ok((k, hash))
}

impl BisectReport {
    /// The report of a search: its steps, what it found, and what each step's test
    /// controls.
    #[allow(clippy::too_many_arguments)]
    fn new(
        found: &Found,
        steps: Vec<StepReport>,
        commits: &[CommitInfo],
        (good, bad): (CommitInfo, CommitInfo),
        args: &BisectArgs,
        config: &Config,
        names: Vec<String>,
        started: Instant,
    ) -> BisectReport {
        let against_good: Vec<&StepReport> =
            steps.iter().filter(|s| s.role != Role::Confirm).collect();
        let judged = against_good.len();
        let measured = against_good
            .iter()
            .filter(|s| s.reused_from.is_none())
            .count();
        let skipped = against_good.iter().filter(|s| s.why.is_some()).count();
        let (outcome, culprit, confirmed, candidates) = match found {
            Found::BadNotSlower => ("bad-not-slower", None, None, Vec::new()),
            Found::BadSkipped(_) => ("bad-skipped", None, None, Vec::new()),
            Found::Culprit {
                index,
                confirmation,
            } => (
                "culprit",
                commits.get(*index).cloned(),
                Some(*confirmation == Call::Slower),
                Vec::new(),
            ),
            Found::Ambiguous(list) => (
                "ambiguous",
                None,
                None,
                list.iter()
                    .filter_map(|&i| commits.get(i).cloned())
                    .collect(),
            ),
        };
        let shapes = names.len();
        BisectReport {
            good,
            bad,
            config: args.config.display().to_string(),
            shapes: names,
            margin: config.gate.max_p50_regression,
            alpha: config.gate.alpha,
            commits: commits.len(),
            steps,
            outcome: outcome.to_owned(),
            culprit,
            confirmed,
            candidates,
            judged,
            measured,
            skipped,
            wall_s: started.elapsed().as_secs_f64(),
            error_control: error_control(
                config.gate.alpha,
                config.gate.max_p50_regression,
                shapes,
                judged,
            ),
        }
    }
}

/// The command's outcome: a confirmed culprit passes; anything else is no answer (exit 2),
/// said in one sentence.
fn outcome(
    found: Found,
    report: &BisectReport,
    commits: &[CommitInfo],
    bad: &CommitInfo,
    good: &str,
    config: &Config,
) -> Result<Outcome> {
    let m = config.gate.max_p50_regression * 100.0;
    match found {
        Found::Culprit { confirmation, .. } => match (confirmation, report.culprit.clone()) {
            (Call::Slower, Some(_)) => Ok(Outcome::Pass),
            (Call::Skipped(why), Some(c)) => bail!(
                "the culprit {} was not confirmed: its A/B against its first parent could not be measured ({})",
                c.short,
                why
            ),
            (_, c) => bail!(
                "the culprit {} was not confirmed: its A/B against its first parent shows no regression above {m:.1}% on the named shapes",
                c.map(|c| c.short).unwrap_or_default()
            ),
        },
        Found::BadNotSlower => bail!(
            "BAD {} is not slower than GOOD {} by more than {m:.1}% on the named shapes: nothing to bisect",
            bad.short,
            short_commit(good)
        ),
        Found::BadSkipped(why) => bail!(
            "BAD {} could not be judged against GOOD {} ({why}): nothing to bisect",
            bad.short,
            short_commit(good)
        ),
        Found::Ambiguous(list) => bail!(
            "skipped commits hide the first slower commit: it is one of {}",
            list.iter()
                .filter_map(|&i| commits.get(i).map(|c| c.short.clone()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// One bisect step: `cand`'s kernels against `base`'s in one process, parity on, under the
/// gate's own two-stage design; no stored baseline, no peers, no energy windows (a step asks
/// one question: slower or not). `shapes`: the names judged (all of the config's when empty).
pub(super) fn step(
    config: Config,
    shapes: Vec<String>,
    base: BaseKernels,
    cand: PathBuf,
    device: BackendChoice,
) -> Result<Run> {
    let paths = crate::run::RunPaths {
        config: config.path.clone(),
        kernels: cand,
        baselines: PathBuf::new(),
    };
    let request = RunRequest {
        shapes,
        base: Some(base),
        compare: false,
        peers: false,
        trace_drift: false,
        ..RunRequest::gate(paths)
    };
    Run::with_config(request, config, device)
}

#[cfg(test)]
mod tests;
