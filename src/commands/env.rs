//! `ci-gate env`: the GPU, driver, CUDA and clock fingerprint.

use anyhow::Result;

use crate::cli::EnvArgs;
use crate::gpu::device::open_device;
use crate::gpu::env::{Monitor, environment};
use crate::outcome::Outcome;

/// The CUDA driver API version the binary's bindings were built for (build.rs), as the
/// driver reports versions: 1000 × major + 10 × minor.
fn built_cuda_api() -> i32 {
    env!("CI_GATE_CUDA_API").parse().unwrap_or(13040)
}

/// Whether a driver of CUDA version `driver` can run bindings built for `built` (both as
/// 1000 × major + 10 × minor): the same major version or a newer one. Err: one sentence on
/// what to install.
pub(crate) fn driver_check(driver: i32, built: i32) -> Result<String, String> {
    let show = |v: i32| format!("{}.{}", v / 1000, (v % 1000) / 10);
    let branch = |major: i32| match major {
        12 => "R525 or newer (R570 for CUDA 12.8)",
        13 => "R580 or newer",
        _ => "one that supports it",
    };
    if driver / 1000 >= built / 1000 {
        Ok(format!(
            "ok: CUDA {} here, the binary needs {}.0 or newer",
            show(driver),
            built / 1000
        ))
    } else {
        Err(format!(
            "this driver supports CUDA {}, but this ci-gate binary is built for the CUDA {} driver API: install an NVIDIA driver of branch {} (CUDA {}.0), or build ci-gate with CUDARC_CUDA_VERSION={}080 for this driver",
            show(driver),
            built / 1000,
            branch(built / 1000),
            built / 1000,
            driver / 1000
        ))
    }
}

pub(crate) fn run_env(args: &EnvArgs) -> Result<Outcome> {
    let opened = open_device();
    let (_ctx, _stream, info) = match opened {
        Ok(o) => o,
        Err(e) => {
            if args.json {
                // A machine without a usable GPU still answers in JSON, saying why.
                let answer = serde_json::json!({ "gpu": null, "error": e.to_string() });
                println!("{}", serde_json::to_string_pretty(&answer)?);
            }
            return Err(e.into());
        }
    };
    let monitor = Monitor::new(&info.uuid);
    let env = environment(&info, &monitor);
    let driver = driver_check(info.driver_cuda_version, built_cuda_api());
    if args.json {
        let mut value = serde_json::to_value(&env)?;
        value["driver_check"] = match &driver {
            Ok(ok) => serde_json::json!({ "ok": true, "message": ok }),
            Err(why) => serde_json::json!({ "ok": false, "message": why }),
        };
        println!("{}", serde_json::to_string_pretty(&value)?);
        return match driver {
            Ok(_) => Ok(Outcome::Pass),
            Err(why) => Err(anyhow::anyhow!("{why}")),
        };
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
    match driver {
        Ok(ok) => {
            println!("{:<width$}  {ok}", "Driver check");
            Ok(Outcome::Pass)
        }
        Err(why) => Err(anyhow::anyhow!("{why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::driver_check;

    #[test]
    fn the_driver_must_support_the_api_the_binary_is_built_for() {
        assert!(driver_check(13000, 13040).is_ok());
        assert!(driver_check(13020, 13000).is_ok());
        let e = driver_check(12040, 13040).unwrap_err();
        assert!(e.contains("supports CUDA 12.4"), "{e}");
        assert!(e.contains("branch R580 or newer (CUDA 13.0)"), "{e}");
        assert!(e.contains("CUDARC_CUDA_VERSION=12080"), "{e}");
        assert!(driver_check(12080, 12080).is_ok());
    }
}
