//! What the evaluator settles before it reads a candidate ([`start`]): the config and its
//! shapes, the rule, the device and the GPUs (`--devices`), how candidates are compiled
//! ahead (each device's architecture, from a `--describe` process per device), the base and
//! the leaderboard, and the reference (base or best) compiled once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::judge::Rule;
use super::leaderboard::Leaderboard;
use super::protocol::{ReferenceKind, ReferenceLine};
use super::source::{KernelText, Precompile};
use super::worker::{Spawner, describe_args, read_facts};
use crate::cli::{Against, EvalArgs};
use crate::config::Config;
use crate::kernel::{Arch, KernelSource, TIMED_FILE};
use crate::run::{BackendChoice, BaseKernels};

/// What the evaluator runs with, fixed at its start.
pub(crate) struct Settings {
    pub config: Config,
    /// The config's absolute path (the measuring processes read it).
    pub config_path: PathBuf,
    /// The shapes measured, by name, in the config's order.
    pub names: Vec<String>,
    pub rule: Rule,
    pub precompile: Precompile,
    pub spawner: Spawner,
    pub devices: Vec<u32>,
    /// Candidates compiled at once.
    pub jobs: usize,
    /// The evaluator's private directory: candidates' and references' files.
    pub scratch: tempfile::TempDir,
    pub timeout: Duration,
    pub against: Against,
    pub leaderboard: Option<PathBuf>,
}

/// A kernel candidates are measured against: the base, or a leaderboard entry.
#[derive(Clone, Debug)]
pub(crate) struct Reference {
    pub kind: ReferenceKind,
    pub id: Option<String>,
    pub commit: Option<String>,
    pub text: KernelText,
    /// The evaluator's directory holding its attention.cu.
    pub dir: PathBuf,
}

impl Reference {
    pub fn line(&self) -> ReferenceLine {
        ReferenceLine {
            kind: self.kind,
            id: self.id.clone(),
            kernel_sha256: self.text.kernel_sha256.clone(),
        }
    }

    /// How the reference is named in messages and results: `base` or `best ID`.
    pub fn label(&self) -> String {
        match (&self.kind, &self.id) {
            (ReferenceKind::Best, Some(id)) => format!("best {id}"),
            _ => "base".into(),
        }
    }

    /// The base side of a measuring run.
    pub fn base_kernels(&self) -> BaseKernels {
        BaseKernels {
            dir: self.dir.clone(),
            source: format!(
                "{} ({})",
                self.label(),
                crate::text::short_commit(&self.text.kernel_sha256)
            ),
            commit: self.commit.clone(),
        }
    }
}

/// The references and the leaderboard: what changes as candidates are accepted.
pub(crate) struct Board {
    pub base: Reference,
    /// The leaderboard's best, or the base while it is empty.
    pub best: Reference,
    /// What new candidates are measured against (`--against`).
    pub reference: Reference,
    pub leaderboard: Option<Leaderboard>,
    /// References written so far (names their directories).
    written: u32,
}

impl Board {
    /// Writes `text` as a new reference's file and compiles it (a compile-cache hit for an
    /// accepted candidate).
    pub fn add_reference(
        &mut self,
        settings: &Settings,
        kind: ReferenceKind,
        id: Option<String>,
        commit: Option<String>,
        text: KernelText,
    ) -> Result<Reference> {
        self.written += 1;
        new_reference(settings, self.written, kind, id, commit, text)
    }
}

fn new_reference(
    settings: &Settings,
    n: u32,
    kind: ReferenceKind,
    id: Option<String>,
    commit: Option<String>,
    text: KernelText,
) -> Result<Reference> {
    let dir = settings.scratch.path().join(format!("ref-{n}"));
    text.write(&dir)
        .with_context(|| format!("cannot write {}", dir.display()))?;
    let r = Reference {
        kind,
        id,
        commit,
        text,
        dir,
    };
    settings
        .precompile
        .check(&r.text, &r.dir)
        .with_context(|| format!("the reference ({}) cannot be used", r.label()))?;
    Ok(r)
}

/// The GPUs of `--devices` (one worker each), or device 0 of what this process sees; and
/// whether the workers' processes are pinned to theirs.
fn devices(args: &EvalArgs, backend: BackendChoice) -> Result<(Vec<u32>, bool)> {
    match args.devices.as_deref() {
        None => Ok((vec![0], false)),
        Some("all") if backend.simulated() => {
            bail!("--devices all: the simulated GPU has no devices to count; name them (0,1)")
        }
        Some(list) => Ok((crate::run::devices::parse_devices(list)?, true)),
    }
}

/// An NVRTC target as `--arch` names it (`sm_90a` → 9.0).
fn arch_of(target: &str) -> Result<Arch> {
    let digits: String = target
        .trim_start_matches("sm_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let n: u32 = digits
        .parse()
        .with_context(|| format!("--arch {target}: not an sm_NN target"))?;
    let arch = Arch {
        major: n / 10,
        minor: n % 10,
    };
    if arch.target() != target {
        bail!(
            "--arch {target}: the gate compiles for {} on compute capability {}.{}",
            arch.target(),
            arch.major,
            arch.minor
        );
    }
    Ok(arch)
}

/// How candidates are compiled ahead: each device's architecture and shared-memory limit
/// (one `--describe` process per device, which opens a context and runs nothing), or
/// `--arch`'s; on the simulated GPU, the simulation's reading unless `--arch` asks for
/// NVRTC.
fn precompile(
    args: &EvalArgs,
    config: &Config,
    backend: BackendChoice,
    spawner: &Spawner,
    devices: &[u32],
    scratch: &Path,
) -> Result<Precompile> {
    let forced = args.arch.as_deref().map(arch_of).transpose()?;
    if backend.simulated() {
        return Ok(match forced {
            Some(arch) => Precompile::Nvrtc {
                targets: vec![(arch, None)],
                defines: config.compile.defines.clone(),
            },
            None => Precompile::Simulated,
        });
    }
    let mut targets: Vec<(Arch, Option<u32>)> = Vec::new();
    for &d in devices {
        let dir = scratch.join(format!("device-{d}"));
        std::fs::create_dir_all(&dir)?;
        let out = dir.join("facts.json");
        spawner
            .wait(&describe_args(&out), &dir, d, Duration::from_secs(120))
            .with_context(|| format!("cannot open device {d}"))?;
        let facts = read_facts(&out).with_context(|| format!("cannot open device {d}"))?;
        let arch = Arch {
            major: facts.major,
            minor: facts.minor,
        };
        let target = (forced.unwrap_or(arch), Some(facts.max_smem_optin));
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    Ok(Precompile::Nvrtc {
        targets,
        defines: config.compile.defines.clone(),
    })
}

/// The leaderboard of `--leaderboard` (loaded and checked; writable), and the reference kind
/// `--against` asks for.
fn leaderboard(args: &EvalArgs, config: &Config) -> Result<(Option<Leaderboard>, Against)> {
    let against = args.against.unwrap_or(if args.leaderboard.is_some() {
        Against::Best
    } else {
        Against::Base
    });
    let Some(path) = &args.leaderboard else {
        if against == Against::Best {
            bail!("--against best needs --leaderboard FILE (the best is its last entry)");
        }
        return Ok((None, against));
    };
    let board = Leaderboard::load(path)?;
    crate::files::check_writable(path)?;
    let shapes = config.shapes.len() as u32;
    if config.eval.min_shapes > shapes {
        bail!(
            "{}: eval.min_shapes is {} but {shapes} shape(s) are measured, so no candidate could be accepted",
            config.path.display(),
            config.eval.min_shapes
        );
    }
    Ok((Some(board), against))
}

/// Settles everything before the first candidate (see the module docs).
pub(crate) fn start(args: &EvalArgs) -> Result<(Settings, Board)> {
    let (mut config, selected) = crate::config::load_selected(&args.config, &args.shapes)?;
    config.shapes = selected;
    let config_path = std::path::absolute(&args.config)
        .with_context(|| format!("cannot resolve {}", args.config.display()))?;
    let backend = BackendChoice::from_env()?;
    let (devices, pinned) = devices(args, backend)?;
    let (board, against) = leaderboard(args, &config)?;
    let scratch = tempfile::Builder::new()
        .prefix("ci-gate-eval-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let spawner = Spawner::new(backend, pinned);
    let precompile = precompile(args, &config, backend, &spawner, &devices, scratch.path())?;
    let jobs = args.jobs.map_or_else(
        || {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get().saturating_sub(1))
                .clamp(1, 8)
        },
        |j| j as usize,
    );
    let settings = Settings {
        names: config.shapes.iter().map(|s| s.name()).collect(),
        rule: Rule::of(&config),
        timeout: Duration::from_secs_f64(config.eval.timeout_s),
        config,
        config_path,
        precompile,
        spawner,
        devices,
        jobs,
        scratch,
        against,
        leaderboard: args.leaderboard.clone(),
    };
    let base_file = args.base_kernels.join(TIMED_FILE);
    let base_source = KernelSource::read(&base_file)?;
    let base_text =
        KernelText::new(base_source.text, &[]).map_err(|why| anyhow::anyhow!("{why}"))?;
    let base = new_reference(&settings, 0, ReferenceKind::Base, None, None, base_text)?;
    let best = match board.as_ref().and_then(Leaderboard::best) {
        Some(e) => {
            let text = e.kernel_text().map_err(|why| anyhow::anyhow!("{why}"))?;
            let kind = ReferenceKind::Best;
            new_reference(
                &settings,
                1,
                kind,
                Some(e.id.clone()),
                e.commit.clone(),
                text,
            )?
        }
        None => base.clone(),
    };
    let reference = match against {
        Against::Base => base.clone(),
        Against::Best => best.clone(),
    };
    let board = Board {
        base,
        best,
        reference,
        leaderboard: board,
        written: 1,
    };
    Ok((settings, board))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_targets_are_the_gate_s_own() {
        assert_eq!(arch_of("sm_90a").unwrap(), Arch { major: 9, minor: 0 });
        assert_eq!(arch_of("sm_89").unwrap(), Arch { major: 8, minor: 9 });
        let e = arch_of("sm_90").unwrap_err().to_string();
        assert!(
            e.contains("compiles for sm_90a on compute capability 9.0"),
            "{e}"
        );
        assert!(arch_of("sm_89a").is_err());
    }
}
