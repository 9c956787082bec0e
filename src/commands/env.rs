//! `ci-gate env`: the GPU, driver, CUDA and clock fingerprint.

use anyhow::Result;

use super::Outcome;
use crate::cli::EnvArgs;
use crate::gpu::device::open_device;
use crate::gpu::env::{Monitor, environment};

pub fn run_env(args: &EnvArgs) -> Result<Outcome> {
    let (_ctx, _stream, info) = open_device()?;
    let monitor = Monitor::new(&info.uuid);
    let env = environment(&info, &monitor);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&env)?);
        return Ok(Outcome::Pass);
    }
    let unknown = || "unknown".to_owned();
    let mut rows: Vec<(&str, String)> = vec![
        ("GPU", env.gpu_name.clone()),
        ("Baseline directory", format!("baselines/{}", env.gpu_slug)),
        ("UUID", env.gpu_uuid.clone().unwrap_or_else(unknown)),
        (
            "Compute capability",
            format!(
                "{} (sm_{})",
                env.compute_capability,
                env.compute_capability.replace('.', "")
            ),
        ),
        (
            "Multiprocessors",
            env.sm_count.map_or_else(unknown, |v| v.to_string()),
        ),
        (
            "L2 cache",
            env.l2_bytes
                .map_or_else(unknown, |v| format!("{} MiB", v / (1 << 20))),
        ),
        (
            "Driver",
            env.driver_version
                .clone()
                .unwrap_or_else(|| "unknown (NVML unavailable)".into()),
        ),
        (
            "CUDA (driver)",
            env.cuda_driver_version.clone().unwrap_or_else(unknown),
        ),
        (
            "NVRTC",
            env.nvrtc_version
                .clone()
                .filter(|v| v != "0.0")
                .unwrap_or_else(|| "not found".into()),
        ),
    ];
    match &env.state_before {
        Some(s) => {
            let or = |v: Option<String>| v.unwrap_or_else(unknown);
            rows.push(("SM clock", or(s.sm_clock_mhz.map(|v| format!("{v} MHz")))));
            rows.push((
                "Memory clock",
                or(s.mem_clock_mhz.map(|v| format!("{v} MHz"))),
            ));
            rows.push((
                "Temperature",
                or(s.temperature_c.map(|v| format!("{v} °C"))),
            ));
            rows.push(("Power", or(s.power_w.map(|v| format!("{v:.1} W")))));
            rows.push((
                "Throttle reasons",
                if s.throttle_reasons.is_empty() {
                    "none".into()
                } else {
                    s.throttle_reasons.join(", ")
                },
            ));
        }
        None => rows.push(("Clocks", "unavailable (NVML could not be loaded)".into())),
    }
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    for (k, v) in rows {
        println!("{k:<width$}  {v}");
    }
    Ok(Outcome::Pass)
}
