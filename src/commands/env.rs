//! `ci-gate env`: the runner's pre-flight, then the GPU, driver, CUDA and clock fingerprint.
//!
//! One line per check, `ok`, `warn`, `skip` or `FAIL`, with what was found and, on a failure,
//! what to install: the NVIDIA driver and the CUDA version it supports (at least the major
//! version this binary's driver bindings are built for), the GPU, NVRTC (of exactly that
//! major version), the NVRTC sandbox (enforceable here, unless the runner's owner opted out),
//! and NVML. A check whose prerequisite failed is `skip`ped, saying which; every line is
//! printed whatever failed. Exit 0 when no check fails; else 2, "this runner cannot produce a
//! verdict", with the failures named on stderr.

use anyhow::Result;
use serde::Serialize;

use crate::cli::EnvArgs;
use crate::gpu::device::open_device;
use crate::gpu::env::{
    DeviceInfo, DriverVersionError, Monitor, NvrtcFound, SandboxProbe, driver_cuda_version,
    environment, nvrtc_found, probe_sandbox,
};
use crate::kernel::sandbox::{ALLOW_UNCONFINED_ENV, unconfined_allowed};
use crate::outcome::Outcome;

/// The CUDA driver API version the binary's bindings were built for (build.rs, as cudarc
/// chose it), as the driver reports versions: 1000 × major + 10 × minor.
fn built_cuda_api() -> i32 {
    env!("CI_GATE_CUDA_API").parse().unwrap_or(13040)
}

/// How one check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Ok,
    /// Passes, with a risk or a loss the line names.
    Warn,
    /// Not tried: a check it needs failed.
    Skip,
    Fail,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Skip => "skip",
            Status::Fail => "FAIL",
        }
    }
}

/// One line of the pre-flight.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    pub name: &'static str,
    pub status: Status,
    /// What was found; on `FAIL`, also what to install or set.
    pub message: String,
}

impl Check {
    fn new(name: &'static str, status: Status, message: impl Into<String>) -> Check {
        Check {
            name,
            status,
            message: message.into(),
        }
    }
}

/// `13040` as `13.4`.
fn show(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The NVIDIA driver branch that brings CUDA `major`.
fn driver_branch(major: i32) -> &'static str {
    match major {
        12 => "R525 or newer (R570 for CUDA 12.8)",
        13 => "R580 or newer",
        _ => "one that supports it",
    }
}

/// What to install for NVRTC of this major version.
fn nvrtc_install(major: i32) -> String {
    let wheel = match major {
        13 => "`pip install \"nvidia-cuda-nvrtc==13.*\"`".to_owned(),
        m => format!("`pip install nvidia-cuda-nvrtc-cu{m}`"),
    };
    format!(
        "install NVRTC {major} (libnvrtc.so.{major}): the CUDA {major} toolkit, or {wheel} in a virtual environment the runner's user cannot write, with its lib directory on LD_LIBRARY_PATH (docs/RUNNER.md, \"One L4 runner\")"
    )
}

/// The driver line: its CUDA version `driver` (Err: why there is none) against the `built`
/// API version. A driver of the same major version or a newer one runs the bindings.
pub(crate) fn driver_check(
    driver: &Result<i32, DriverVersionError>,
    built: i32,
    release: Option<&str>,
) -> Check {
    let major = built / 1000;
    let install = format!(
        "install the NVIDIA driver, branch {} (CUDA {major}.0)",
        driver_branch(major)
    );
    let found = |v: i32| match release {
        Some(r) => format!("{r}, CUDA {}", show(v)),
        None => format!("CUDA {}", show(v)),
    };
    match driver {
        Err(why) => Check::new("NVIDIA driver", Status::Fail, format!("{why}: {install}")),
        Ok(v) if v / 1000 >= major => Check::new(
            "NVIDIA driver",
            Status::Ok,
            format!("{}; this ci-gate needs CUDA {major}.0 or newer", found(*v)),
        ),
        Ok(v) => Check::new(
            "NVIDIA driver",
            Status::Fail,
            format!(
                "{}, but this ci-gate is built for the CUDA {major} driver API: {install}, or build ci-gate with CUDARC_CUDA_VERSION={}080 for this driver",
                found(*v),
                v / 1000
            ),
        ),
    }
}

/// The NVRTC line: what the loader found, against the major version of the `built` API, and
/// on how many threads of this machine's `cores` it compiles one kernel file.
pub(crate) fn nvrtc_check(found: Option<&NvrtcFound>, built: i32, cores: usize) -> Check {
    let major = built / 1000;
    let Some(found) = found else {
        return Check::new(
            "NVRTC",
            Status::Fail,
            format!(
                "not found (libnvrtc.so, libnvrtc.so.{major} on the loader path): {}",
                nvrtc_install(major)
            ),
        );
    };
    let from = found
        .dir
        .as_ref()
        .map_or_else(String::new, |d| format!(" from {}", d.display()));
    match found.version {
        None => Check::new(
            "NVRTC",
            Status::Fail,
            format!(
                "libnvrtc{from} loads but does not report its version: {}",
                nvrtc_install(major)
            ),
        ),
        Some((m, n)) if m == major => {
            let threads = crate::kernel::compile::compile_threads((m, n), cores);
            Check::new(
                "NVRTC",
                Status::Ok,
                format!(
                    "{m}.{n}{from}, compiling a kernel file on {threads} thread{} of {cores}; this ci-gate needs NVRTC {major}",
                    if threads == 1 { "" } else { "s" }
                ),
            )
        }
        Some((m, n)) => Check::new(
            "NVRTC",
            Status::Fail,
            format!(
                "{m}.{n}{from}, but this ci-gate is built for CUDA {major} and needs NVRTC {major}: {}, or build ci-gate with CUDARC_CUDA_VERSION={m}080 for NVRTC {m}",
                nvrtc_install(major)
            ),
        ),
    }
}

/// The sandbox line: the probe's answer (None: not tried, NVRTC failed its check) and
/// whether the runner's owner allows compiling where it cannot be enforced.
pub(crate) fn sandbox_check(probe: Option<&SandboxProbe>, allowed: bool) -> Check {
    const NAME: &str = "NVRTC sandbox";
    match probe {
        None => Check::new(
            NAME,
            Status::Skip,
            "not tried: it confines NVRTC, whose check failed",
        ),
        Some(SandboxProbe::Confined) => Check::new(
            NAME,
            Status::Ok,
            "Landlock and the seccomp filter hold: a test kernel compiled confined",
        ),
        Some(SandboxProbe::NotEnforceable(why)) if allowed => Check::new(
            NAME,
            Status::Warn,
            format!(
                "cannot be enforced here ({why}); kernels compile less confined, as {ALLOW_UNCONFINED_ENV}=1 in this environment allows"
            ),
        ),
        Some(SandboxProbe::NotEnforceable(why)) => Check::new(
            NAME,
            Status::Fail,
            format!(
                "cannot be enforced here ({why}), so no kernel would compile: run the runner on Linux 5.13 or later with Landlock enabled, and seccomp (Ubuntu 22.04 and 24.04 have both), or, accepting the risk, set {ALLOW_UNCONFINED_ENV}=1 in the runner's own environment (docs/MEASURING.md, \"Compiling reads nothing\")"
            ),
        ),
        Some(SandboxProbe::Failed(why)) => Check::new(
            NAME,
            Status::Fail,
            format!("the test compile failed: {why}"),
        ),
    }
}

/// What the pre-flight found: its checks, and the device where one opened.
struct Preflight {
    checks: Vec<Check>,
    device: Option<DeviceInfo>,
}

/// Runs every check (each whose prerequisite passed), in the order they are printed.
fn preflight() -> Preflight {
    let built = built_cuda_api();
    let driver = driver_cuda_version();
    // NVML's driver release (e.g. 580.95.05): read only where libcuda loads, since NVML
    // comes with the driver.
    let release = driver
        .as_ref()
        .ok()
        .and_then(|_| Monitor::new("").driver_version());
    let driver_line = driver_check(&driver, built, release.as_deref());
    let mut device = None;
    let gpu_line = if driver_line.status == Status::Ok {
        match open_device() {
            Ok((_ctx, _stream, info)) => {
                let line = Check::new(
                    "GPU",
                    Status::Ok,
                    format!(
                        "{}, compute capability {}.{} (sm_{}{}), {} SMs",
                        info.name,
                        info.arch.major,
                        info.arch.minor,
                        info.arch.major,
                        info.arch.minor,
                        info.sm_count
                    ),
                );
                device = Some(info);
                line
            }
            Err(e) => Check::new("GPU", Status::Fail, e.to_string()),
        }
    } else {
        // With too old a driver the bindings may call a function it lacks: not opened.
        Check::new("GPU", Status::Skip, "not opened: the driver check failed")
    };
    let nvrtc = nvrtc_found();
    let nvrtc_line = nvrtc_check(nvrtc.as_ref(), built, crate::kernel::compile::cores());
    let probe = (nvrtc_line.status == Status::Ok).then(probe_sandbox);
    let sandbox_line = sandbox_check(probe.as_ref(), unconfined_allowed());
    let nvml_line = match &device {
        None => Check::new("NVML", Status::Skip, "not read: no GPU opened"),
        Some(info) if Monitor::new(&info.uuid).state().is_some() => Check::new(
            "NVML",
            Status::Ok,
            "clocks, temperature, power and throttle reasons are readable",
        ),
        Some(_) => Check::new(
            "NVML",
            Status::Warn,
            "unavailable (libnvidia-ml.so.1, part of the driver): clocks, temperature and throttling are not recorded, and other processes on the GPU cannot be seen",
        ),
    };
    Preflight {
        checks: vec![driver_line, gpu_line, nvrtc_line, sandbox_line, nvml_line],
        device,
    }
}

/// The error of a failed pre-flight: every failed check, named with what to install.
fn failure(checks: &[Check]) -> Option<anyhow::Error> {
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| format!("{}: {}", c.name, c.message))
        .collect();
    (!failed.is_empty()).then(|| {
        anyhow::anyhow!(
            "this runner cannot produce a verdict ({} of {} checks failed): {}",
            failed.len(),
            checks.len(),
            failed.join("; ")
        )
    })
}

pub(crate) fn run_env(args: &EnvArgs) -> Result<Outcome> {
    let Preflight { checks, device } = preflight();
    let env = device.as_ref().map(|info| {
        let monitor = Monitor::new(&info.uuid);
        environment(info, &monitor)
    });
    let failed = failure(&checks);
    if args.json {
        // The fingerprint's fields at the top level where a GPU opened (as before the
        // checks), with the checks beside them; else `gpu: null` and the error.
        let mut value = match &env {
            Some(env) => serde_json::to_value(env)?,
            None => serde_json::json!({ "gpu": null }),
        };
        value["checks"] = serde_json::to_value(&checks)?;
        value["ok"] = serde_json::Value::Bool(failed.is_none());
        if let Some(e) = &failed {
            value["error"] = serde_json::Value::String(e.to_string());
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print_checks(&checks);
        if let Some(env) = &env {
            println!();
            print_fingerprint(env);
        }
    }
    match failed {
        None => Ok(Outcome::Pass),
        Some(e) => Err(e),
    }
}

fn print_checks(checks: &[Check]) {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in checks {
        println!(
            "{:<4}  {:<width$}  {}",
            c.status.label(),
            c.name,
            crate::text::terminal_text(&c.message)
        );
    }
}

fn print_fingerprint(env: &crate::results::Environment) {
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
        println!("{k:<width$}  {}", crate::text::terminal_text(&v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_driver_must_support_the_api_the_binary_is_built_for() {
        assert_eq!(driver_check(&Ok(13000), 13040, None).status, Status::Ok);
        assert_eq!(driver_check(&Ok(13020), 13000, None).status, Status::Ok);
        let ok = driver_check(&Ok(13000), 13040, Some("580.95.05"));
        assert_eq!(
            ok.message,
            "580.95.05, CUDA 13.0; this ci-gate needs CUDA 13.0 or newer"
        );
        let e = driver_check(&Ok(12040), 13040, None);
        assert_eq!(e.status, Status::Fail);
        assert!(e.message.contains("CUDA 12.4, but"), "{e:?}");
        assert!(
            e.message.contains("branch R580 or newer (CUDA 13.0)"),
            "{e:?}"
        );
        assert!(e.message.contains("CUDARC_CUDA_VERSION=12080"), "{e:?}");
        assert_eq!(driver_check(&Ok(12080), 12080, None).status, Status::Ok);
        let none = driver_check(&Err(DriverVersionError::NoDriver), 13040, None);
        assert_eq!(none.status, Status::Fail);
        assert_eq!(
            none.message,
            "no NVIDIA driver found (libcuda.so could not be loaded): install the NVIDIA driver, branch R580 or newer (CUDA 13.0)"
        );
    }

    #[test]
    fn nvrtc_must_be_found_and_of_the_binary_s_major_version() {
        let found = |version| NvrtcFound {
            version,
            dir: Some(PathBuf::from("/opt/nvrtc/lib")),
        };
        let ok = nvrtc_check(Some(&found(Some((13, 5)))), 13040, 16);
        assert_eq!(ok.status, Status::Ok);
        assert_eq!(
            ok.message,
            "13.5 from /opt/nvrtc/lib, compiling a kernel file on 8 threads of 16; this ci-gate needs NVRTC 13"
        );
        // NVRTC 12 compiles on one thread, whatever the cores.
        assert!(
            nvrtc_check(Some(&found(Some((12, 8)))), 12080, 16)
                .message
                .contains("on 1 thread of 16;")
        );
        let older = nvrtc_check(Some(&found(Some((12, 9)))), 13040, 4);
        assert_eq!(older.status, Status::Fail);
        assert!(
            older.message.starts_with("12.9 from /opt/nvrtc/lib, but"),
            "{older:?}"
        );
        assert!(
            older.message.contains("needs NVRTC 13: install NVRTC 13"),
            "{older:?}"
        );
        assert!(
            older.message.contains("CUDARC_CUDA_VERSION=12080"),
            "{older:?}"
        );
        // Built for CUDA 12, NVRTC 13 is another major version too.
        assert_eq!(
            nvrtc_check(Some(&found(Some((13, 0)))), 12080, 4).status,
            Status::Fail
        );
        let twelve = nvrtc_check(Some(&found(Some((12, 8)))), 12080, 4);
        assert_eq!(twelve.status, Status::Ok);
        let missing = nvrtc_check(None, 13040, 4);
        assert_eq!(missing.status, Status::Fail);
        assert!(missing.message.starts_with("not found"), "{missing:?}");
        assert!(
            missing
                .message
                .contains("pip install \"nvidia-cuda-nvrtc==13.*\""),
            "{missing:?}"
        );
        assert!(
            nvrtc_check(None, 12080, 4)
                .message
                .contains("pip install nvidia-cuda-nvrtc-cu12"),
        );
        assert_eq!(
            nvrtc_check(Some(&found(None)), 13040, 4).status,
            Status::Fail
        );
    }

    #[test]
    fn the_sandbox_must_hold_unless_the_owner_opted_out() {
        let gap = SandboxProbe::NotEnforceable("this Linux kernel has no Landlock".into());
        assert_eq!(
            sandbox_check(Some(&SandboxProbe::Confined), false).status,
            Status::Ok
        );
        assert_eq!(
            sandbox_check(Some(&SandboxProbe::Confined), true).status,
            Status::Ok
        );
        let refused = sandbox_check(Some(&gap), false);
        assert_eq!(refused.status, Status::Fail);
        assert!(refused.message.contains("no Landlock"), "{refused:?}");
        assert!(
            refused.message.contains("CI_GATE_ALLOW_UNCONFINED_NVRTC=1"),
            "{refused:?}"
        );
        let allowed = sandbox_check(Some(&gap), true);
        assert_eq!(allowed.status, Status::Warn);
        assert!(allowed.message.contains("less confined"), "{allowed:?}");
        // A probe that failed is a failure, whatever the opt-out says.
        assert_eq!(
            sandbox_check(Some(&SandboxProbe::Failed("crashed".into())), true).status,
            Status::Fail
        );
        assert_eq!(sandbox_check(None, false).status, Status::Skip);
    }

    #[test]
    fn a_failed_check_fails_the_preflight_and_is_named() {
        let ok = Check::new("A", Status::Ok, "fine");
        let warn = Check::new("B", Status::Warn, "risky");
        let skip = Check::new("C", Status::Skip, "not tried");
        assert!(failure(&[ok.clone(), warn.clone(), skip.clone()]).is_none());
        let fail = Check::new("NVRTC", Status::Fail, "not found: install it");
        let e = failure(&[ok, fail, warn, skip]).unwrap().to_string();
        assert_eq!(
            e,
            "this runner cannot produce a verdict (1 of 4 checks failed): NVRTC: not found: install it"
        );
    }
}
