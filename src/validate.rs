//! Untrusted input. Every results and baseline file is treated as hostile: this module checks
//! each value read from one ([`Untrusted`], called by `files::parse_versioned_json` for every
//! file it reads) and holds the sanitisers for text shown on a terminal.
//!
//! - Names that form paths or identify things (config names, GPU slugs, shape names, commits,
//!   hashes) must have their exact form; anything else is an error naming the file, the key
//!   and the shape.
//! - Labels (GPU name, driver versions, paths recorded in the file) are single-line printable
//!   text of bounded length.
//! - Free text (errors, warnings, the baseline `reason`) is bounded in length and, once
//!   loaded, has its control, bidirectional and zero-width characters replaced, so nothing
//!   downstream (terminal table, Markdown) ever sees them. Markdown escaping itself lives in
//!   `report::markdown::escape_markdown`.
//! - Counts (shapes, rounds, samples, warnings) are bounded, and samples are finite and
//!   positive.
//!
//! Pure: no GPU, command line or GitHub code.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::baseline::{BaselineFile, BaselineShape};
use crate::config::{CacheMode, ShapeParams};
use crate::results::{BaselineRef, ConfigInfo, Environment, GpuState, ResultsFile, ShapeResult};
use crate::stats::Summary;

/// Longest config name or GPU slug (each names a file or directory).
pub const MAX_NAME_LEN: usize = 128;
/// Shortest and longest commit id (abbreviated SHA-1 up to full SHA-256), in hex digits.
pub const MIN_COMMIT_LEN: usize = 7;
pub const MAX_COMMIT_LEN: usize = 64;
/// Longest content hash (SHA-256 is 64 hex digits).
pub const MAX_HASH_LEN: usize = 128;
/// Longest short label: versions, UUIDs, throttle reasons, compute capability.
pub const MAX_SHORT_LABEL_LEN: usize = 128;
/// Longest GPU name or path recorded in a file.
pub const MAX_LABEL_LEN: usize = 1024;
/// Longest `reason` of a baseline.
pub const MAX_REASON_LEN: usize = 4096;
/// Longest warning.
pub const MAX_WARNING_LEN: usize = 16 * 1024;
/// Longest error text (a compiler log can be long).
pub const MAX_ERROR_LEN: usize = 256 * 1024;
/// Most shapes in a config, a results file or a baseline.
pub const MAX_SHAPES: usize = 1000;
/// Most rounds of one shape (config rounds plus the extra rounds of inconclusive shapes).
pub const MAX_ROUNDS: usize = 1000;
/// Most samples in one round.
pub const MAX_SAMPLES_PER_ROUND: usize = 10_000;
/// Most samples of one shape, all rounds together.
pub const MAX_SAMPLES_PER_SHAPE: usize = 1_000_000;
/// Most warnings in a results file.
pub const MAX_WARNINGS: usize = 10_000;
/// Most throttle reasons in one GPU state.
pub const MAX_THROTTLE_REASONS: usize = 64;

/// A file whose content was refused; the message names the file, the key and the shape.
#[derive(Debug, thiserror::Error)]
#[error("{}: {key}{}: {message}", path.display(), shape.as_deref().map(|s| format!(" of shape {s}")).unwrap_or_default())]
pub struct Rejected {
    pub path: PathBuf,
    /// The offending key, e.g. `shapes[2].samples_us[0][3]`.
    pub key: String,
    /// The shape it belongs to (its canonical name), if any.
    pub shape: Option<String>,
    /// What is wrong; attacker text appears only through [`quote`].
    pub message: String,
}

/// A file type read from disk that must be checked before use.
pub trait Untrusted {
    /// Checks every value; `path` names the file in the error.
    fn check(&self, path: &Path) -> Result<(), Rejected>;
    /// Replaces control, bidirectional and zero-width characters in free text (see
    /// [`clean_text`]); called after a successful [`Untrusted::check`].
    fn neutralise(&mut self);
}

/// Collects the location of a problem while a file is walked.
struct Checker<'a> {
    path: &'a Path,
    shape: Option<String>,
}

type Check = Result<(), Rejected>;

impl Checker<'_> {
    fn fail(&self, key: &str, message: impl Into<String>) -> Rejected {
        Rejected {
            path: self.path.to_owned(),
            key: key.to_owned(),
            shape: self.shape.clone(),
            message: message.into(),
        }
    }

    fn name(&self, key: &str, value: &str) -> Check {
        path_component(value).map_err(|m| self.fail(key, m))
    }

    fn commit(&self, key: &str, value: &str) -> Check {
        commit(value).map_err(|m| self.fail(key, m))
    }

    fn hash(&self, key: &str, value: &str, allow_empty: bool) -> Check {
        if value.is_empty() && allow_empty {
            return Ok(());
        }
        if value.is_empty()
            || value.len() > MAX_HASH_LEN
            || !value.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(self.fail(
                key,
                format!(
                    "{} is not a hex digest (1 to {MAX_HASH_LEN} hex digits)",
                    quote(value)
                ),
            ));
        }
        Ok(())
    }

    fn label(&self, key: &str, value: &str, max: usize, allow_empty: bool) -> Check {
        label(value, max, allow_empty).map_err(|m| self.fail(key, m))
    }

    fn text(&self, key: &str, value: &str, max: usize) -> Check {
        if value.len() > max {
            return Err(self.fail(
                key,
                format!("{} bytes of text, more than the {max} allowed", value.len()),
            ));
        }
        Ok(())
    }

    fn count(&self, key: &str, n: usize, max: usize, what: &str) -> Check {
        if n > max {
            return Err(self.fail(key, format!("{n} {what}, more than the {max} allowed")));
        }
        Ok(())
    }

    fn finite(&self, key: &str, v: f64) -> Check {
        if !v.is_finite() {
            return Err(self.fail(key, format!("{v} is not a finite number")));
        }
        Ok(())
    }

    fn config(&self, c: &ConfigInfo) -> Check {
        config_name(&c.name).map_err(|m| self.fail("config.name", m))?;
        self.label("config.path", &c.path, MAX_LABEL_LEN, true)?;
        self.hash("config.hash", &c.hash, true)
    }

    fn environment(&self, key: &str, env: &Environment) -> Check {
        self.label(
            &format!("{key}.gpu_name"),
            &env.gpu_name,
            MAX_LABEL_LEN,
            false,
        )?;
        let slug_key = format!("{key}.gpu_slug");
        self.name(&slug_key, &env.gpu_slug)?;
        let expected = crate::results::gpu_slug(&env.gpu_name);
        if env.gpu_slug != expected {
            return Err(self.fail(
                &slug_key,
                format!(
                    "the file records GPU {}, whose slug is {}, not {}",
                    quote(&env.gpu_name),
                    quote(&expected),
                    quote(&env.gpu_slug)
                ),
            ));
        }
        if let Some(u) = &env.gpu_uuid {
            self.label(&format!("{key}.gpu_uuid"), u, MAX_SHORT_LABEL_LEN, false)?;
        }
        let cc = &env.compute_capability;
        if cc.is_empty() || cc.len() > 16 || !cc.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(self.fail(
                &format!("{key}.compute_capability"),
                format!("{} is not a compute capability such as 9.0", quote(cc)),
            ));
        }
        for (k, v) in [
            ("driver_version", &env.driver_version),
            ("cuda_driver_version", &env.cuda_driver_version),
            ("nvrtc_version", &env.nvrtc_version),
        ] {
            if let Some(v) = v {
                self.label(&format!("{key}.{k}"), v, MAX_SHORT_LABEL_LEN, false)?;
            }
        }
        for (k, state) in [
            ("state_before", &env.state_before),
            ("state_after", &env.state_after),
        ] {
            if let Some(s) = state {
                self.gpu_state(&format!("{key}.{k}"), s)?;
            }
        }
        Ok(())
    }

    fn gpu_state(&self, key: &str, s: &GpuState) -> Check {
        let k = format!("{key}.throttle_reasons");
        self.count(
            &k,
            s.throttle_reasons.len(),
            MAX_THROTTLE_REASONS,
            "throttle reasons",
        )?;
        for (i, r) in s.throttle_reasons.iter().enumerate() {
            self.label(&format!("{k}[{i}]"), r, MAX_SHORT_LABEL_LEN, false)?;
        }
        if let Some(p) = s.power_w {
            self.finite(&format!("{key}.power_w"), p)?;
        }
        Ok(())
    }

    /// Rounds of samples: bounded, no empty round, every value finite and positive.
    fn samples(&self, key: &str, rounds: &[Vec<f64>]) -> Check {
        self.count(key, rounds.len(), MAX_ROUNDS, "rounds")?;
        let mut total = 0usize;
        for (r, round) in rounds.iter().enumerate() {
            let rk = format!("{key}[{r}]");
            if round.is_empty() {
                return Err(self.fail(&rk, "is an empty round; every round holds samples"));
            }
            self.count(&rk, round.len(), MAX_SAMPLES_PER_ROUND, "samples")?;
            total += round.len();
            for (i, &v) in round.iter().enumerate() {
                if !(v.is_finite() && v > 0.0) {
                    return Err(self.fail(
                        &format!("{rk}[{i}]"),
                        format!("{v} is not a time: samples must be positive, finite µs"),
                    ));
                }
            }
        }
        self.count(key, total, MAX_SAMPLES_PER_SHAPE, "samples in all")
    }

    fn summary(&self, key: &str, s: &Summary) -> Check {
        for (k, v) in [
            ("p50", s.p50),
            ("p90", s.p90),
            ("mean", s.mean),
            ("min", s.min),
            ("max", s.max),
            ("stdev", s.stdev),
        ] {
            self.finite(&format!("{key}.{k}"), v)?;
        }
        Ok(())
    }

    fn shape_name(&self, key: &str, name: &str, params: &ShapeParams) -> Check {
        let expected = params.name();
        if name != expected {
            return Err(self.fail(
                key,
                format!(
                    "{} is not the name of the shape's parameters ({expected})",
                    quote(name)
                ),
            ));
        }
        Ok(())
    }

    fn unique(
        &self,
        seen: &mut HashSet<(ShapeParams, Option<CacheMode>)>,
        key: &str,
        params: ShapeParams,
        cache: Option<CacheMode>,
    ) -> Check {
        if !seen.insert((params, cache)) {
            return Err(self.fail(
                key,
                "appears twice (same parameters and cache mode)".to_owned(),
            ));
        }
        Ok(())
    }
}

fn at<'a>(path: &'a Path, shape: Option<String>) -> Checker<'a> {
    Checker { path, shape }
}

/// Peers' p50s kept with a baseline: at most one per peer, positive and finite.
fn check_stored_peers(c: &Checker, key: &str, peers: &[crate::peers::StoredPeer]) -> Check {
    if peers.len() > crate::peers::Peer::ALL.len() {
        return Err(c.fail(key, "more peers than there are"));
    }
    for (j, p) in peers.iter().enumerate() {
        if !(p.p50_us.is_finite() && p.p50_us > 0.0) {
            return Err(c.fail(
                &format!("{key}[{j}].p50_us"),
                format!("{} is not a positive time", p.p50_us),
            ));
        }
    }
    Ok(())
}

fn check_shape_result(path: &Path, i: usize, s: &ShapeResult) -> Check {
    let c = at(path, Some(s.params.name()));
    let key = format!("shapes[{i}]");
    c.shape_name(&format!("{key}.name"), &s.name, &s.params)?;
    if let Some(e) = &s.error {
        c.text(&format!("{key}.error"), e, MAX_ERROR_LEN)?;
    }
    if let Some(e) = &s.integrity {
        c.text(&format!("{key}.integrity"), e, MAX_ERROR_LEN)?;
    }
    c.count(
        &format!("{key}.remeasured"),
        s.remeasured.len(),
        MAX_ROUNDS,
        "re-measured pairs",
    )?;
    if s.clock_events.len() > 2 || s.clock_events.iter().any(|e| e.len() > MAX_ROUNDS) {
        return Err(c.fail(
            &format!("{key}.clock_events"),
            "two sides of at most the rounds' count are expected",
        ));
    }
    c.samples(&format!("{key}.samples_us"), &s.samples_us)?;
    check_stored_peers(&c, &format!("{key}.stored_peers"), &s.stored_peers)?;
    if s.peers.len() > crate::peers::Peer::ALL.len() {
        return Err(c.fail(&format!("{key}.peers"), "more peers than there are"));
    }
    for (j, p) in s.peers.iter().enumerate() {
        let pk = format!("{key}.peers[{j}]");
        if !p.samples_us.is_empty() {
            c.samples(&format!("{pk}.samples_us"), &p.samples_us)?;
        }
        if let Some(v) = p.p50_us
            && !(v.is_finite() && v > 0.0)
        {
            return Err(c.fail(
                &format!("{pk}.p50_us"),
                format!("{v} is not a positive time"),
            ));
        }
        if let Some(e) = &p.error {
            c.text(&format!("{pk}.error"), e, MAX_WARNING_LEN)?;
        }
        if let Some(b) = &p.backend
            && !crate::peers::BACKENDS.contains(&b.as_str())
        {
            return Err(c.fail(
                &format!("{pk}.backend"),
                "must be one of cudnn, flash, efficient, math",
            ));
        }
    }
    if let Some(p) = &s.profile {
        p.check()
            .map_err(|m| c.fail(&format!("{key}.profile"), m))?;
    }
    if !s.base_samples_us.is_empty() {
        let bk = format!("{key}.base_samples_us");
        c.samples(&bk, &s.base_samples_us)?;
        if s.base_samples_us.len() != s.samples_us.len() {
            return Err(c.fail(
                &bk,
                format!(
                    "{} base rounds for {} candidate rounds: A/B rounds come in pairs",
                    s.base_samples_us.len(),
                    s.samples_us.len()
                ),
            ));
        }
    }
    if !s.pair_order.is_empty() && s.pair_order.len() != s.base_samples_us.len() {
        return Err(c.fail(
            &format!("{key}.pair_order"),
            "one order per A/B pair is expected",
        ));
    }
    if let Some(d) = &s.drift {
        c.label(
            &format!("{key}.drift.commit"),
            &d.commit,
            MAX_LABEL_LEN,
            false,
        )?;
        c.samples(&format!("{key}.drift.samples_us"), &d.samples_us)?;
        c.samples(&format!("{key}.drift.cand_samples_us"), &d.cand_samples_us)?;
    }
    if let Some(sum) = &s.summary {
        c.summary(&format!("{key}.summary"), sum)?;
    }
    if let Some(sum) = &s.base_summary {
        c.summary(&format!("{key}.base_summary"), sum)?;
    }
    if let Some(t) = s.tflops {
        c.finite(&format!("{key}.tflops"), t)?;
    }
    if let Some(m) = &s.measurement {
        c.count(
            &format!("{key}.measurement.rounds"),
            m.rounds as usize,
            MAX_ROUNDS,
            "rounds",
        )?;
        c.finite(&format!("{key}.measurement.wall_s"), m.wall_s)?;
    }
    Ok(())
}

fn check_baseline_ref(c: &Checker<'_>, b: &BaselineRef) -> Check {
    c.label("baseline.path", &b.path, MAX_LABEL_LEN, false)?;
    if let Some(commit) = &b.commit {
        c.commit("baseline.commit", commit)?;
    }
    Ok(())
}

impl Untrusted for ResultsFile {
    fn check(&self, path: &Path) -> Check {
        let c = at(path, None);
        c.label(
            "tool_version",
            &self.tool_version,
            MAX_SHORT_LABEL_LEN,
            false,
        )?;
        if let Some(commit) = &self.git_commit {
            c.commit("git_commit", commit)?;
        }
        c.config(&self.config)?;
        if let Some(h) = &self.kernel_source_hash {
            c.hash("kernel_source_hash", h, false)?;
        }
        if let Some(env) = &self.environment {
            c.environment("environment", env)?;
        }
        if let Some(b) = &self.baseline {
            check_baseline_ref(&c, b)?;
        }
        if let Some(b) = &self.base {
            c.label("base.source", &b.source, MAX_LABEL_LEN, false)?;
            if let Some(commit) = &b.commit {
                c.commit("base.commit", commit)?;
            }
            c.hash("base.kernel_source_hash", &b.kernel_source_hash, false)?;
        }
        c.count("notes", self.notes.len(), MAX_WARNINGS, "notes")?;
        for (i, n) in self.notes.iter().enumerate() {
            c.text(&format!("notes[{i}]"), n, MAX_WARNING_LEN)?;
        }
        c.count("shapes", self.shapes.len(), MAX_SHAPES, "shapes")?;
        let mut seen = HashSet::new();
        for (i, s) in self.shapes.iter().enumerate() {
            check_shape_result(path, i, s)?;
            at(path, Some(s.params.name())).unique(
                &mut seen,
                &format!("shapes[{i}]"),
                s.params,
                s.measurement.as_ref().map(|m| m.cache),
            )?;
        }
        c.count("warnings", self.warnings.len(), MAX_WARNINGS, "warnings")?;
        for (i, w) in self.warnings.iter().enumerate() {
            c.text(&format!("warnings[{i}]"), w, MAX_WARNING_LEN)?;
        }
        if let Some(e) = &self.error {
            c.text("error", e, MAX_ERROR_LEN)?;
        }
        if let Some(t) = &self.timing
            && !t.is_valid()
        {
            return Err(c.fail("timing", "every figure must be a finite, non-negative time"));
        }
        c.count("probes", self.probes.len(), MAX_SHAPES, "random shapes")?;
        for (i, p) in self.probes.iter().enumerate() {
            let key = format!("probes[{i}]");
            c.shape_name(&format!("{key}.name"), &p.name, &p.params)?;
            if let Some(e) = &p.error {
                c.text(&format!("{key}.error"), e, MAX_ERROR_LEN)?;
            }
        }
        if let Some(p) = &self.peers
            && let Some(r) = &p.runtime
        {
            c.label("peers.runtime", r, MAX_SHORT_LABEL_LEN, false)?;
        }
        if let Some(sh) = &self.shard {
            if sh.count == 0
                || sh.count > crate::shard::MAX_SHARDS
                || sh.index == 0
                || sh.index > sh.count
            {
                return Err(c.fail(
                    "shard",
                    format!(
                        "shard {}/{} is not K/N with 1 ≤ K ≤ N ≤ {}",
                        sh.index,
                        sh.count,
                        crate::shard::MAX_SHARDS
                    ),
                ));
            }
            c.count(
                "shard.run_shapes",
                sh.run_shapes.len(),
                MAX_SHAPES,
                "shapes",
            )?;
            for (i, n) in sh.run_shapes.iter().enumerate() {
                c.name(&format!("shard.run_shapes[{i}]"), n)?;
            }
        }
        if let Some(p) = &self.profiling {
            if let Some(v) = &p.ncu_version {
                c.label("profiling.ncu_version", v, MAX_SHORT_LABEL_LEN, true)?;
            }
            if let Some(d) = &p.dir {
                c.label("profiling.dir", d, MAX_LABEL_LEN, false)?;
            }
            if !(p.seconds.is_finite() && p.seconds >= 0.0 && p.budget_s.is_finite()) {
                return Err(c.fail("profiling.seconds", "must be a finite, non-negative time"));
            }
        }
        Ok(())
    }

    fn neutralise(&mut self) {
        for s in &mut self.shapes {
            if let Some(e) = &mut s.error {
                *e = clean_text(e);
            }
            if let Some(e) = &mut s.integrity {
                *e = clean_text(e);
            }
            for e in s.peers.iter_mut().filter_map(|p| p.error.as_mut()) {
                *e = clean_text(e);
            }
        }
        for w in self.warnings.iter_mut().chain(self.notes.iter_mut()) {
            *w = clean_text(w);
        }
        if let Some(e) = &mut self.error {
            *e = clean_text(e);
        }
        for e in self.probes.iter_mut().filter_map(|p| p.error.as_mut()) {
            *e = clean_text(e);
        }
    }
}

fn check_baseline_shape(path: &Path, i: usize, s: &BaselineShape) -> Check {
    let c = at(path, Some(s.params.name()));
    let key = format!("shapes[{i}]");
    c.shape_name(&format!("{key}.name"), &s.name, &s.params)?;
    let sk = format!("{key}.samples_us");
    c.samples(&sk, &s.samples_us)?;
    check_stored_peers(&c, &format!("{key}.peers"), &s.peers)?;
    if s.samples_us.iter().map(Vec::len).sum::<usize>() < 2 {
        return Err(c.fail(
            &sk,
            "fewer than 2 samples: a baseline shape needs samples to compare with",
        ));
    }
    c.summary(&format!("{key}.summary"), &s.summary)?;
    if let Some(t) = s.tflops {
        c.finite(&format!("{key}.tflops"), t)?;
    }
    if !s.process_rounds.is_empty()
        && (s.process_rounds.contains(&0)
            || s.process_rounds.iter().sum::<usize>() != s.samples_us.len())
    {
        return Err(c.fail(
            &format!("{key}.process_rounds"),
            "the rounds per process must be positive and add up to the rounds of samples_us",
        ));
    }
    if let Some(p) = s.process_spread
        && !(p.sd.is_finite() && (0.0..0.5).contains(&p.sd) && p.df >= 1.0)
    {
        return Err(c.fail(
            &format!("{key}.process_spread"),
            "a spread between processes is a fraction in [0, 0.5) with at least 1 degree of freedom",
        ));
    }
    Ok(())
}

impl Untrusted for BaselineFile {
    fn check(&self, path: &Path) -> Check {
        let c = at(path, None);
        c.name("gpu_slug", &self.gpu_slug)?;
        c.environment("environment", &self.environment)?;
        if self.gpu_slug != self.environment.gpu_slug {
            return Err(c.fail(
                "gpu_slug",
                format!(
                    "{} differs from environment.gpu_slug {}",
                    quote(&self.gpu_slug),
                    quote(&self.environment.gpu_slug)
                ),
            ));
        }
        c.config(&self.config)?;
        let p = &self.provenance;
        if let Some(commit) = &p.commit {
            c.commit("provenance.commit", commit)?;
        }
        if let Some(commit) = &p.previous_commit {
            c.commit("provenance.previous_commit", commit)?;
        }
        c.text("provenance.reason", &p.reason, MAX_REASON_LEN)?;
        c.label(
            "provenance.tool_version",
            &p.tool_version,
            MAX_SHORT_LABEL_LEN,
            false,
        )?;
        if let Some(h) = &self.kernel_source_hash {
            c.hash("kernel_source_hash", h, false)?;
        }
        c.count("shapes", self.shapes.len(), MAX_SHAPES, "shapes")?;
        let mut seen = HashSet::new();
        for (i, s) in self.shapes.iter().enumerate() {
            check_baseline_shape(path, i, s)?;
            at(path, Some(s.params.name())).unique(
                &mut seen,
                &format!("shapes[{i}]"),
                s.params,
                Some(s.cache),
            )?;
        }
        Ok(())
    }

    fn neutralise(&mut self) {
        self.provenance.reason = clean_text(&self.provenance.reason);
    }
}

// ---------------------------------------------------------------------------------------
// Single values

/// A config name: letters, digits, '-', '_', '.', not starting with '.', 1 to
/// [`MAX_NAME_LEN`] characters (it names the baseline file).
pub fn config_name(name: &str) -> Result<(), String> {
    path_component(name).map_err(|_| {
        format!(
            "{} must be 1 to {MAX_NAME_LEN} letters, digits, '-', '_' or '.', not starting with '.' (it names the baseline file)",
            quote(name)
        )
    })
}

/// A single file or directory name that cannot leave its directory: 1 to [`MAX_NAME_LEN`]
/// ASCII letters, digits, '-', '_' or '.', not starting with '.' (so never `.` or `..`,
/// never absolute, never a separator).
pub fn path_component(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{} cannot be a file name: only 1 to {MAX_NAME_LEN} letters, digits, '-', '_' or '.', not starting with '.'",
            quote(name)
        ))
    }
}

/// A commit id: [`MIN_COMMIT_LEN`] to [`MAX_COMMIT_LEN`] hex digits.
pub fn commit(value: &str) -> Result<(), String> {
    let ok = (MIN_COMMIT_LEN..=MAX_COMMIT_LEN).contains(&value.len())
        && value.bytes().all(|b| b.is_ascii_hexdigit());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{} is not a commit id ({MIN_COMMIT_LEN} to {MAX_COMMIT_LEN} hex digits)",
            quote(value)
        ))
    }
}

/// Single-line printable text of at most `max` bytes, with no control, bidirectional or
/// zero-width characters.
pub fn label(value: &str, max: usize, allow_empty: bool) -> Result<(), String> {
    if value.is_empty() && !allow_empty {
        return Err("is empty".to_owned());
    }
    if value.len() > max {
        return Err(format!(
            "{} bytes, more than the {max} allowed",
            value.len()
        ));
    }
    if let Some(c) = value.chars().find(|&c| is_hidden(c) || is_line_break(c)) {
        return Err(format!(
            "{} contains the control character U+{:04X}",
            quote(value),
            c as u32
        ));
    }
    Ok(())
}

/// The first 12 characters of a commit id, for display. Never panics, whatever the input
/// (it counts characters, not bytes).
pub fn short_commit(commit: &str) -> String {
    commit.chars().take(12).collect()
}

// ---------------------------------------------------------------------------------------
// Characters and sanitisers

/// Characters that break a line, in any renderer.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Characters that are invisible or change how other text displays: C0 and C1 controls,
/// DEL, bidirectional marks, embeddings, overrides and isolates, zero-width characters,
/// invisible fillers, variation selectors and tag characters. Line breaks and tabs are
/// controls too: callers that keep them handle them first.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c as u32,
            0x00AD          // soft hyphen
            | 0x034F        // combining grapheme joiner
            | 0x061C        // Arabic letter mark
            | 0x115F | 0x1160 | 0x3164 | 0xFFA0 // Hangul fillers
            | 0x17B4 | 0x17B5
            | 0x180B..=0x180F // Mongolian selectors and vowel separator
            | 0x200B..=0x200F // zero-width space/non-joiner/joiner, LRM, RLM
            | 0x2028..=0x202E // line/paragraph separators, LRE, RLE, PDF, LRO, RLO
            | 0x2060..=0x206F // word joiner, invisible operators, LRI, RLI, FSI, PDI, ...
            | 0xFE00..=0xFE0F // variation selectors
            | 0xFEFF        // zero-width no-break space (BOM)
            | 0xFFF0..=0xFFFB // interlinear annotation controls
            | 0x1D173..=0x1D17A // musical formatting controls
            | 0xE0000..=0xE0FFF // tags, variation selectors supplement
        )
}

/// Free text made safe to keep: line breaks and tabs become spaces, every other hidden
/// character ([`is_hidden`]) is dropped, escape sequences with it.
pub fn clean_text(text: &str) -> String {
    terminal_text(text)
}

/// Text safe to print on a terminal and in a CI log, on one line: ANSI escape sequences
/// (CSI, OSC, and two-character ones) are removed whole, line breaks and tabs become
/// spaces, and every other control, bidirectional or zero-width character is dropped. A
/// newline in attacker text can therefore never start a line of its own (such as a
/// `::workflow-command`).
pub fn terminal_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1B}' => match chars.peek() {
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars);
                }
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\u{9B}' => skip_csi(&mut chars),
            '\u{9D}' | '\u{90}' | '\u{98}' | '\u{9E}' | '\u{9F}' => skip_string(&mut chars),
            '\t' => out.push(' '),
            c if is_line_break(c) => out.push(' '),
            c if is_hidden(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Skips the rest of a CSI sequence: parameter and intermediate bytes, then one final byte.
/// A character that cannot belong to the sequence ends it and is kept.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        if ('\u{20}'..='\u{3F}').contains(&c) {
            chars.next();
            continue;
        }
        if ('\u{40}'..='\u{7E}').contains(&c) {
            chars.next();
        }
        return;
    }
}

/// Skips a control string (OSC, DCS, ...) up to BEL, ST (ESC \ or C1 ST); a line break
/// ends it too (and is kept), so an unterminated string cannot hide the lines after it.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        if is_line_break(c) {
            return;
        }
        chars.next();
        match c {
            '\u{07}' | '\u{9C}' => return,
            '\u{1B}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

/// `text` cut to at most `max` bytes (at a character boundary; just the note when `max` is
/// smaller than it), saying how much was cut: for a writer to keep free text within the
/// bounds a reader checks (e.g. [`MAX_ERROR_LEN`] for a compiler log).
pub fn clip_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let note = format!(" … ({} bytes cut)", text.len());
    let mut cut = max.saturating_sub(note.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{note}", &text[..cut])
}

/// An error for one line of a terminal or CI log: [`terminal_text`], without a leading
/// `error:` of its own (the caller prints one), cut to a bounded length.
pub fn error_line(message: &str) -> String {
    let mut line = terminal_text(message);
    loop {
        let trimmed = line.trim_start();
        match trimmed.get(..6) {
            Some(p) if p.eq_ignore_ascii_case("error:") => line = trimmed[6..].to_owned(),
            _ => break,
        }
    }
    let line = line.trim().to_owned();
    const MAX: usize = 64 * 1024;
    if line.len() <= MAX {
        return line;
    }
    let mut cut = MAX;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes cut)", &line[..cut], line.len() - cut)
}

/// Attacker text for an error message: at most 60 characters, in double quotes, with every
/// character that is not plainly printable written as `\u{…}`.
pub fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    let mut chars = text.chars();
    for c in chars.by_ref().take(60) {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c == ' ' || c.is_ascii_graphic() => out.push(c),
            c if !c.is_ascii() && c.is_alphanumeric() && !is_hidden(c) => out.push(c),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    out.push('"');
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_commit_counts_characters() {
        assert_eq!(
            short_commit("0123456789abcdef0123"),
            "0123456789ab".to_owned()
        );
        assert_eq!(short_commit("abc"), "abc");
        assert_eq!(short_commit(""), "");
        // 12 bytes would split the third 'é'... and a byte slice would panic.
        assert_eq!(short_commit(&"é".repeat(20)), "é".repeat(12));
        assert_eq!(short_commit("😀a😀b"), "😀a😀b");
    }

    #[test]
    fn commits_are_hex_of_bounded_length() {
        assert!(commit("0123abc").is_ok());
        assert!(commit(&"f".repeat(64)).is_ok());
        assert!(commit("ABCDEF0").is_ok());
        for bad in [
            "",
            "012345",
            "0123abg",
            &"f".repeat(65),
            "éééééééé",
            "0123abc\n",
        ] {
            assert!(commit(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn path_components_cannot_leave_their_directory() {
        for ok in ["pr", "nightly-2", "a.b_c", "nvidia-h200"] {
            assert!(path_component(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "/etc",
            "a/b",
            "a\\b",
            ".hidden",
            "a b",
            "C:x",
            "é",
            &"a".repeat(MAX_NAME_LEN + 1),
        ] {
            assert!(path_component(bad).is_err(), "{bad:?}");
        }
        assert!(config_name("x/y").unwrap_err().contains("letters, digits"));
    }

    #[test]
    fn labels_are_one_printable_line() {
        assert!(label("NVIDIA H200", 64, false).is_ok());
        assert!(label("", 64, true).is_ok());
        assert!(label("", 64, false).is_err());
        assert!(label("a\nb", 64, false).is_err());
        assert!(label("a\u{202E}b", 64, false).is_err());
        assert!(label("a\u{1b}[31m", 64, false).is_err());
        assert!(label(&"x".repeat(65), 64, false).is_err());
    }

    #[test]
    fn terminal_text_strips_escapes_controls_and_bidi() {
        assert_eq!(terminal_text("\u{1b}[2J\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(
            terminal_text("\u{1b}]8;;https://evil.example\u{7}link\u{1b}]8;;\u{1b}\\"),
            "link"
        );
        assert_eq!(terminal_text("\u{1b}]0;title\u{7}x"), "x");
        assert_eq!(terminal_text("a\r\nb\tc"), "a  b c");
        assert_eq!(terminal_text("x\n::error::pwned"), "x ::error::pwned");
        assert_eq!(
            terminal_text("\u{202E}evil\u{202C}\u{2066}\u{200B}"),
            "evil"
        );
        assert_eq!(terminal_text("\u{9b}31mc1\u{7f}\u{0}"), "c1");
        assert_eq!(terminal_text("plain µs ✓"), "plain µs ✓");
        // An unfinished sequence at the end swallows nothing else and never panics.
        assert_eq!(terminal_text("ok\u{1b}"), "ok");
        assert_eq!(terminal_text("ok\u{1b}["), "ok");
        assert_eq!(terminal_text("\u{1b}]unterminated\nline"), " line");
        assert_eq!(terminal_text("\u{1b}[31\nx"), " x");
    }

    #[test]
    fn error_lines_are_single_without_a_doubled_prefix() {
        assert_eq!(error_line("error: error: x\ny"), "x y");
        assert_eq!(error_line("Error:  boom"), "boom");
        assert_eq!(error_line("errors: 3"), "errors: 3");
        let long = "é".repeat(100_000);
        let line = error_line(&long);
        assert!(line.len() < 70 * 1024 && line.ends_with("bytes cut)"));
    }

    #[test]
    fn clip_text_stays_within_the_bound() {
        assert_eq!(clip_text("short", 10), "short");
        let long = "é".repeat(1000);
        for max in [30, 31, 100, 1999] {
            let c = clip_text(&long, max);
            assert!(c.len() <= max, "{max}: {}", c.len());
            assert!(c.ends_with(" … (2000 bytes cut)"), "{c}");
        }
        assert!(clip_text(&long, 3).len() <= 3 + " … (2000 bytes cut)".len());
    }

    #[test]
    fn quote_shows_hidden_characters() {
        assert_eq!(quote("a\nb"), "\"a\\u{a}b\"");
        assert_eq!(quote("x\u{202e}y"), "\"x\\u{202e}y\"");
        assert_eq!(quote("\u{1b}[31m"), "\"\\u{1b}[31m\"");
        assert_eq!(quote("µs é"), "\"µs é\"");
        assert!(quote(&"a".repeat(100)).ends_with("\"…"));
    }
}
