//! `--devices`: one shard per GPU of this machine, each a `run-request` child (the run's
//! request as data, its shard K/N) that sees only its GPU (`CUDA_VISIBLE_DEVICES`), all at
//! once; their results are merged (`shard::merge`), so the verdict is over the whole run.

use std::path::PathBuf;
use std::process::Stdio;

use anyhow::{Context, Result, bail};

use super::request::Run;
use crate::results::ResultsFile;
use crate::shard::merge::{Rules, merge};
use crate::shard::{MAX_SHARDS, ShardSpec};

/// The GPUs named by `--devices`: `all`, or indices such as `0,1,3`.
pub(crate) fn parse_devices(list: &str) -> Result<Vec<u32>> {
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

/// Runs one shard of `request` per device at once (each a `run-request` child that sees only
/// its GPU) and merges their results under the request's config and store.
pub(crate) fn run_on_devices(devices: &[u32], run: &Run) -> Result<ResultsFile> {
    let dir = tempfile::Builder::new()
        .prefix("ci-gate-devices-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let n = devices.len();
    let mut children = Vec::new();
    for (i, dev) in devices.iter().enumerate() {
        let out: PathBuf = dir.path().join(format!("shard-{}.json", i + 1));
        let err = std::fs::File::create(dir.path().join(format!("shard-{}.err", i + 1)))?;
        let spec = ShardSpec {
            index: i as u32 + 1,
            count: n as u32,
        };
        let mut cmd = run.child(&out, Some(spec))?;
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
    let mut merged = merge(
        shards,
        &Rules {
            config: &run.config,
            shapes: &run.shapes,
            baselines: &run.request.baselines,
            fail_on_drift: run.request.fail_on_drift,
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
