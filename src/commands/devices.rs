//! `--devices`: one shard per GPU of this machine, each a `ci-gate local --shard K/N` process
//! that sees only its GPU (`CUDA_VISIBLE_DEVICES`), all at once; their results are merged
//! (`commands::merge`), so the verdict is over the whole run.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result, bail};

use super::child::LocalChild;
use super::merge::{Rules, merge};
use crate::results::ResultsFile;
use crate::shard::MAX_SHARDS;

/// The GPUs named by `--devices`: `all`, or indices such as `0,1,3`.
pub fn parse_devices(list: &str) -> Result<Vec<u32>> {
    if list.trim() == "all" {
        let n = crate::gpu::device::device_count()?;
        if n == 0 {
            bail!("--devices all: the driver reports no GPU");
        }
        return Ok((0..n.min(MAX_SHARDS)).collect());
    }
    let mut out = Vec::new();
    for part in list.split(',') {
        let d: u32 = part.trim().parse().map_err(|_| {
            anyhow::anyhow!("--devices {list:?}: write device indices such as 0,1 or `all`")
        })?;
        if out.contains(&d) {
            bail!("--devices {list:?}: device {d} is named twice");
        }
        out.push(d);
    }
    if out.is_empty() || out.len() > MAX_SHARDS as usize {
        bail!("--devices {list:?}: name 1 to {MAX_SHARDS} devices");
    }
    Ok(out)
}

/// What each device's `local` process runs.
pub struct Fanout<'a> {
    pub config: &'a Path,
    pub kernels: &'a Path,
    pub baselines: &'a Path,
    /// `--base-kernels DIR` (resolved once, by the parent), else `--no-base`.
    pub base: Option<&'a Path>,
    pub shapes: &'a [String],
    /// Further arguments for every child (`--rounds`, `--fail-on-drift`, …).
    pub extra: Vec<String>,
}

/// Runs one shard per device at once and merges their results.
pub fn run_on_devices(devices: &[u32], f: &Fanout) -> Result<ResultsFile> {
    let dir = tempfile::Builder::new()
        .prefix("ci-gate-devices-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let n = devices.len();
    let mut children = Vec::new();
    for (i, dev) in devices.iter().enumerate() {
        let out: PathBuf = dir.path().join(format!("shard-{}.json", i + 1));
        let err = std::fs::File::create(dir.path().join(format!("shard-{}.err", i + 1)))?;
        let mut extra = vec![
            "--shard".to_string(),
            format!("{}/{n}", i + 1),
            "--no-profile".into(),
        ];
        match f.base {
            Some(b) => extra.extend(["--base-kernels".into(), b.display().to_string()]),
            None => extra.push("--no-base".into()),
        }
        extra.extend(f.extra.iter().cloned());
        let mut cmd = LocalChild {
            config: f.config,
            kernels: f.kernels,
            baselines: f.baselines,
            shapes: f.shapes,
            extra,
        }
        .command(&out)?;
        cmd.env("CUDA_VISIBLE_DEVICES", dev.to_string());
        let exe = PathBuf::from(cmd.get_program());
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .with_context(|| format!("cannot start {}", exe.display()))?;
        children.push((i + 1, *dev, out, child));
    }
    let mut shards = Vec::new();
    let mut failures = Vec::new();
    for (k, dev, out, mut child) in children {
        let status = child.wait()?;
        if status.code() == Some(2) || status.code().is_none() {
            let stderr = std::fs::read_to_string(dir.path().join(format!("shard-{k}.err")))
                .unwrap_or_default();
            let last = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("(no message)");
            failures.push(format!(
                "shard {k}/{n} on device {dev} ({status}): {}",
                crate::text::terminal_text(last)
            ));
            continue;
        }
        shards.push((out.clone(), ResultsFile::load(&out)?));
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    // The children are this process's own, but their files are judged as any shard's: by
    // the config and store they were given, and this run's drift policy.
    let (config, shapes) = super::pipeline::load_config(f.config, f.shapes)?;
    let mut merged = merge(
        shards,
        &Rules {
            config: &config,
            shapes: &shapes,
            baselines: f.baselines,
            fail_on_drift: f.extra.iter().any(|a| a == "--fail-on-drift"),
        },
    )?;
    merged.notes.push(format!(
        "measured on devices {} at once, one shard each",
        devices
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(merged)
}

/// `--shard` and `--devices` of a command line, applied to the run's shapes: the devices to
/// fan out to, this process's shapes, and the shard it is.
pub struct Split {
    pub devices: Option<Vec<u32>>,
    pub shapes: Vec<crate::config::ShapeParams>,
    pub shard: Option<crate::shard::ShardInfo>,
}

impl Split {
    pub fn of(
        args: &crate::cli::ShardArgs,
        config: &crate::config::Config,
        shapes: Vec<crate::config::ShapeParams>,
    ) -> Result<Split> {
        let devices = match &args.devices {
            Some(list) => Some(parse_devices(list)?),
            None => None,
        };
        let (shapes, shard) = match args.shard {
            Some(spec) => {
                let (mine, info) = shard_of(config, &shapes, spec)?;
                (mine, Some(info))
            }
            None => (shapes, None),
        };
        Ok(Split {
            devices,
            shapes,
            shard,
        })
    }
}

/// The shapes of `--shard K/N` among `shapes` (the run's, after `--shape`), with what its
/// results file records for `merge`. A shard left without shapes is an error: fewer shards.
pub fn shard_of(
    config: &crate::config::Config,
    shapes: &[crate::config::ShapeParams],
    spec: crate::shard::ShardSpec,
) -> Result<(Vec<crate::config::ShapeParams>, crate::shard::ShardInfo)> {
    let mine = crate::shard::select(config, shapes, spec);
    if mine.is_empty() {
        bail!(
            "shard {spec} holds none of the run's {} shapes: use fewer shards",
            shapes.len()
        );
    }
    let info = crate::shard::ShardInfo {
        index: spec.index,
        count: spec.count,
        run_shapes: shapes.iter().map(|s| s.name()).collect(),
    };
    Ok((mine, info))
}

/// The note a shard's results carry.
pub fn shard_note(info: &crate::shard::ShardInfo, measured: usize) -> String {
    format!(
        "shard {}/{}: {measured} of the run's {} shapes; its verdicts are provisional: `ci-gate merge` decides over all shards",
        info.index,
        info.count,
        info.run_shapes.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_lists() {
        assert_eq!(parse_devices("0,1, 3").unwrap(), [0, 1, 3]);
        assert!(
            parse_devices("0,0")
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
        assert!(parse_devices("gpu0").is_err());
        assert!(parse_devices("").is_err());
    }
}
