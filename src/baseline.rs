//! Stored baselines: `baselines/<gpu-slug>/<config-name>.json`, one file per GPU model and
//! config, with provenance. Written atomically; a corrupt file is an error that names it and
//! is never silently replaced.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::comparison::StoredSide;
use crate::config::{CacheMode, ShapeParams};
use crate::files::{self, FileError};
use crate::method::Method;
use crate::results::{
    ConfigInfo, Environment, Parity, SCHEMA_VERSION, check_method, check_stored_peers,
};
use crate::stats::{ProcessSpread, Summary};
use crate::text::{self, quote};
use crate::validate::{
    self, Check, Checker, MAX_REASON_LEN, MAX_SHAPES, MAX_SHORT_LABEL_LEN, Untrusted,
};

/// A name shown in a message: characters that could not be in a file name become `_`.
fn display_component(name: &str) -> String {
    if validate::path_component(name).is_ok() {
        return name.to_owned();
    }
    let mut shown: String = name
        .chars()
        .take(validate::MAX_NAME_LEN)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if shown.is_empty() || shown.starts_with('.') {
        shown.insert(0, '_');
    }
    shown
}

/// Why a baseline was recorded, and what it replaced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub commit: Option<String>,
    pub recorded_at: DateTime<Utc>,
    pub reason: String,
    /// Commit of the baseline this one replaced, if any.
    pub previous_commit: Option<String>,
    pub previous_recorded_at: Option<DateTime<Utc>>,
    pub tool_version: String,
    /// Recorded with `--force` over the refusal checks.
    pub forced: bool,
}

/// One shape's stored timings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineShape {
    pub name: String,
    pub params: ShapeParams,
    pub cache: CacheMode,
    /// Per-launch times in µs, by round (rounds from fresh state, so run-to-run spread is in them).
    pub samples_us: Vec<Vec<f64>>,
    pub summary: Summary,
    pub tflops: Option<f64>,
    pub parity: Option<Parity>,
    /// How many consecutive rounds of `samples_us` each measuring process contributed; empty
    /// in files of earlier versions (one process).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub process_rounds: Vec<usize>,
    /// The between-process spread of the log p50 estimated from those processes
    /// (`stats::process_spread`); `None` when fewer than 2 processes were recorded.
    #[serde(default)]
    pub process_spread: Option<ProcessSpread>,
    /// The config's peers measured with it (median over the recording processes), µs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<crate::peers::StoredPeer>,
    /// Energy per call over every recording process's windows (src/energy.rs); absent in
    /// files of earlier versions and where no energy was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<crate::energy::SideEnergy>,
    /// How the host launched the recorded kernel on this shape (`crate::launch`); absent in
    /// files of earlier versions, and where the recording processes did not agree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<crate::launch::Launch>,
}

impl BaselineShape {
    /// This shape as a reference for the unpaired comparison.
    pub fn stored_side(&self) -> StoredSide {
        StoredSide::recorded(
            self.samples_us.clone(),
            self.process_rounds.clone(),
            self.process_spread,
        )
    }
}

/// A baseline file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineFile {
    pub schema_version: u32,
    pub gpu_slug: String,
    pub config: ConfigInfo,
    pub provenance: Provenance,
    /// What measured the stored times (`crate::method`): the method of the results it was
    /// recorded from. `None` in files recorded before ci-gate named its method: a run then
    /// compares with it no shape (verdict `other-method`) until it is recorded again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
    pub environment: Environment,
    pub kernel_source_hash: Option<String>,
    pub shapes: Vec<BaselineShape>,
    /// The recorded kernels' compiler resources (issue 23): what a run without a base
    /// compares the candidate's with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_resources: Vec<crate::resources::KernelResources>,
}

impl BaselineFile {
    /// The stored shape with exactly these parameters and cache mode. A shape whose
    /// parameters changed is a different shape: it is never compared with the old numbers.
    pub(crate) fn shape(&self, params: &ShapeParams, cache: CacheMode) -> Option<&BaselineShape> {
        self.shapes
            .iter()
            .find(|s| &s.params == params && s.cache == cache)
    }

    /// Whether this baseline's times are of `method` (the candidate's): otherwise it is no
    /// reference for them ([`Method::same`]: a baseline that names no method matches none).
    pub(crate) fn measured_by(&self, method: Option<&Method>) -> bool {
        Method::same(self.method.as_ref(), method)
    }
}

/// The one sentence said of a stored baseline (at `path`) whose method is not the run's:
/// both methods, that it judges nothing (and what decides instead: the A/B, where `ab`), and
/// the command that records it again (with the run's config, `config_path`).
pub(crate) fn other_method_sentence(
    path: &str,
    stored: Option<&Method>,
    run: Option<&Method>,
    config_path: &str,
    ab: bool,
) -> String {
    format!(
        "the stored baseline {path} was measured by method {} and this run by {}: times of two methods are not comparable, so it judges no shape ({}); record it again with this ci-gate: `ci-gate baseline update --config {config_path} --reason \"measuring method {}\"`",
        Method::describe(stored),
        Method::describe(run),
        if ab {
            "A/B alone decides"
        } else {
            "every shape it holds reads other-method"
        },
        Method::describe(run),
    )
}

/// A baseline that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error(
        "{path} records GPU {found:?}, not {expected:?}: a run is never compared with another GPU's baseline"
    )]
    OtherGpu {
        path: PathBuf,
        found: String,
        expected: String,
    },
    #[error("{path} is for config {found:?}, not {expected:?}")]
    OtherConfig {
        path: PathBuf,
        found: String,
        expected: String,
    },
    #[error("{key} {reason}, so no baseline path under {root} is built from it")]
    UnsafeName {
        root: PathBuf,
        key: &'static str,
        reason: validate::Invalid,
    },
    #[error(
        "{path} would not be inside the baselines directory {root}; nothing was read or written"
    )]
    OutsideRoot { root: PathBuf, path: PathBuf },
}

/// The `baselines/` directory.
#[derive(Clone, Debug)]
pub struct BaselineStore {
    root: PathBuf,
}

impl BaselineStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        BaselineStore { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the baseline of this GPU model and config lives (for messages: a name that
    /// could leave the directory is shown with its unsafe characters replaced; reading and
    /// writing go through [`BaselineStore::checked_path`], which refuses it).
    pub fn path(&self, gpu_slug: &str, config_name: &str) -> PathBuf {
        self.root
            .join(display_component(gpu_slug))
            .join(format!("{}.json", display_component(config_name)))
    }

    /// [`BaselineStore::path`], after checking that the slug and config name are plain names
    /// (no separators, no `..`, not absolute) and that the result stays inside the root,
    /// also through a symbolic link of the GPU directory.
    pub fn checked_path(
        &self,
        gpu_slug: &str,
        config_name: &str,
    ) -> Result<PathBuf, BaselineError> {
        let unsafe_name = |key, reason| BaselineError::UnsafeName {
            root: self.root.clone(),
            key,
            reason,
        };
        validate::path_component(gpu_slug).map_err(|m| unsafe_name("gpu_slug", m))?;
        validate::path_component(config_name).map_err(|m| unsafe_name("config.name", m))?;
        // Two plain names (no separator, no `..`, not absolute: `path_component`) make a path
        // of exactly two normal components under the root; only a link can lead outside.
        let path = self.root.join(gpu_slug).join(format!("{config_name}.json"));
        let outside = || BaselineError::OutsideRoot {
            root: self.root.clone(),
            path: path.clone(),
        };
        // A GPU directory that is a link to elsewhere is not inside the root.
        let dir = self.root.join(gpu_slug);
        if let (Ok(root), Ok(real_dir)) = (self.root.canonicalize(), dir.canonicalize())
            && !real_dir.starts_with(&root)
        {
            return Err(outside());
        }
        Ok(path)
    }

    /// Loads the baseline for this GPU and config; `Ok(None)` when none is stored.
    /// A file that exists but cannot be read, parsed, or belongs to another GPU or config is
    /// an error naming it.
    pub fn load(
        &self,
        gpu_slug: &str,
        gpu_name: &str,
        config_name: &str,
    ) -> Result<Option<BaselineFile>, BaselineError> {
        let path = self.checked_path(gpu_slug, config_name)?;
        if !path.exists() {
            return Ok(None);
        }
        // Read and checked (`Untrusted`): its slug is its GPU name's and its environment's.
        let file: BaselineFile = files::read_versioned_json(&path, SCHEMA_VERSION)?;
        // Then it is in the directory of its GPU: `path` is under `gpu_slug`'s.
        if file.gpu_slug != gpu_slug || file.environment.gpu_name != gpu_name {
            return Err(BaselineError::OtherGpu {
                path,
                found: file.environment.gpu_name,
                expected: gpu_name.to_owned(),
            });
        }
        if file.config.name != config_name {
            return Err(BaselineError::OtherConfig {
                path,
                found: file.config.name,
                expected: config_name.to_owned(),
            });
        }
        Ok(Some(file))
    }

    /// Writes a baseline atomically into its GPU's directory, after checking it as a read
    /// would (a file ci-gate would refuse to load is never written) and that its path stays
    /// inside the root.
    pub fn save(&self, file: &BaselineFile) -> Result<PathBuf, BaselineError> {
        let path = self.checked_path(&file.gpu_slug, &file.config.name)?;
        file.check(&path).map_err(FileError::from)?;
        files::write_json(&path, file)?;
        Ok(path)
    }

    /// A file must record the GPU its directory is named after (a file found by [`Self::list`];
    /// [`Self::load`] reads only the file of the directory it asks for).
    fn check_slug(path: &Path, file: &BaselineFile) -> Result<(), BaselineError> {
        let dir = path
            .parent()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if file.gpu_slug != dir || crate::results::gpu_slug(&file.environment.gpu_name) != dir {
            return Err(BaselineError::OtherGpu {
                path: path.to_owned(),
                found: file.environment.gpu_name.clone(),
                expected: format!("the GPU of directory {dir}"),
            });
        }
        Ok(())
    }

    /// Every stored baseline file (optionally of one GPU), each loaded or with its error.
    pub(crate) fn list(
        &self,
        gpu_slug: Option<&str>,
    ) -> std::io::Result<Vec<(PathBuf, Result<BaselineFile, BaselineError>)>> {
        let mut out = Vec::new();
        if !self.root.exists() {
            return Ok(out);
        }
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&self.root)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .filter(|p| gpu_slug.is_none_or(|s| p.file_name().is_some_and(|n| n == s)))
            .collect();
        dirs.sort();
        for dir in dirs {
            let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            paths.sort();
            for p in paths {
                let loaded = files::read_versioned_json(&p, SCHEMA_VERSION)
                    .map_err(BaselineError::from)
                    .and_then(|f: BaselineFile| Self::check_slug(&p, &f).map(|()| f));
                out.push((p, loaded));
            }
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------------------------------
// Checks of a baseline file read from disk (see `validate`)

fn check_baseline_shape(path: &Path, i: usize, s: &BaselineShape) -> Check {
    let c = Checker::at(path, Some(s.params.name()));
    let key = format!("shapes[{i}]");
    c.shape_name(&format!("{key}.name"), &s.name, &s.params.name())?;
    let sk = format!("{key}.samples_us");
    c.samples(&sk, &s.samples_us)?;
    check_stored_peers(&c, &format!("{key}.peers"), &s.peers)?;
    if let Some(e) = &s.energy {
        crate::results::check_side_energy(&c, &format!("{key}.energy"), e)?;
    }
    if let Some(l) = &s.launch {
        crate::launch::check_launch(&c, &format!("{key}.launch"), l)?;
    }
    if s.samples_us.iter().map(Vec::len).sum::<usize>() < 2 {
        return Err(c.fail(
            &sk,
            "fewer than 2 samples: a baseline shape needs samples to compare with",
        ));
    }
    // The summary and TFLOP/s are what the samples give (as in a results file): `baseline
    // update` writes them so, and a reader of the file (a dashboard, a person) takes them as
    // the record's figures.
    c.summary(&format!("{key}.summary"), &s.summary)?;
    crate::results::summary_of(&c, &format!("{key}.summary"), &s.summary, &s.samples_us)?;
    if let Some(t) = s.tflops {
        c.finite(&format!("{key}.tflops"), t)?;
        crate::results::tflops_of(&c, &format!("{key}.tflops"), t, &s.params, s.summary.p50)?;
    }
    if !s.process_rounds.is_empty()
        && !crate::stats::is_process_split(&s.process_rounds, s.samples_us.len())
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
        let c = Checker::at(path, None);
        c.name("gpu_slug", &self.gpu_slug)?;
        self.environment.check(&c, "environment")?;
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
        self.config.check(&c)?;
        if let Some(m) = &self.method {
            check_method(&c, "method", m)?;
        }
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
            Checker::at(path, Some(s.params.name())).unique(
                &mut seen,
                &format!("shapes[{i}]"),
                (s.params, Some(s.cache)),
            )?;
        }
        crate::resources::check_resources(&c, "kernel_resources", &self.kernel_resources)
    }

    fn neutralise(&mut self) {
        self.provenance.reason = text::clean_text(&self.provenance.reason);
        crate::resources::neutralise_resources(&mut self.kernel_resources);
    }
}
