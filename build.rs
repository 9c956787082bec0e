//! Tells the tests which prerequisites this machine lacks, so that `cargo test` lists a test
//! that cannot run here as `ignored, <reason>` instead of passing silently (and a test run
//! anyway, with `--ignored`, fails where its prerequisite is missing):
//! `ci_gate_no_nvrtc` where no libnvrtc is found (unless CI_GATE_REQUIRE_NVRTC is set, as
//! .ci/run does: then the NVRTC tests run and fail loudly), `ci_gate_no_golden` where
//! tests/golden (or $CI_GATE_GOLDEN_DIR) holds no cases.json, and for the tests of the
//! no-GPU path: `ci_gate_cuda_driver` where a CUDA driver library (libcuda) is found,
//! `ci_gate_system_nvrtc` where libnvrtc is found without LD_LIBRARY_PATH.

use std::path::{Path, PathBuf};

/// Where the dynamic loader looks: LD_LIBRARY_PATH (when `with_env`) and the usual system
/// directories.
fn library_dirs(with_env: bool) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match std::env::var_os("LD_LIBRARY_PATH") {
        Some(v) if with_env => std::env::split_paths(&v).collect(),
        _ => Vec::new(),
    };
    dirs.extend(
        [
            "/usr/local/cuda/lib64",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/local/lib",
            "/usr/lib/wsl/lib",
        ]
        .map(PathBuf::from),
    );
    dirs
}

/// Whether a library whose file name starts with `prefix` (e.g. `libnvrtc.so`) is in one of
/// `dirs` or in the loader's cache (`ldconfig -p`, which knows the directories of
/// /etc/ld.so.conf).
fn library_found(prefix: &str, dirs: &[PathBuf]) -> bool {
    let in_dirs = dirs.iter().any(|d| {
        std::fs::read_dir(d).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with(prefix))
            })
        })
    });
    in_dirs
        || ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
            .iter()
            .any(|ldconfig| {
                std::process::Command::new(ldconfig)
                    .arg("-p")
                    .output()
                    .is_ok_and(|out| {
                        String::from_utf8_lossy(&out.stdout)
                            .lines()
                            .any(|l| l.trim_start().starts_with(prefix))
                    })
            })
}

/// The CUDA driver API version the bindings are built for, as cudarc chooses it (its own
/// build script: $CUDARC_CUDA_VERSION, else `nvcc --version`, else the newest it supports,
/// 13040): `ci-gate env` says what driver that needs.
fn cuda_api_version() -> String {
    if let Ok(v) = std::env::var("CUDARC_CUDA_VERSION") {
        return v;
    }
    let nvcc = std::process::Command::new("nvcc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    nvcc.and_then(|text| {
        let release = text.split("release ").nth(1)?;
        let version = release.split(',').next()?;
        let (major, minor) = version.split_once('.')?;
        Some(format!(
            "{}{:02}0",
            major.trim().parse::<u32>().ok()?,
            minor.trim().parse::<u32>().ok()?
        ))
    })
    .unwrap_or_else(|| "13040".into())
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(ci_gate_no_nvrtc)");
    println!("cargo::rustc-check-cfg=cfg(ci_gate_no_golden)");
    println!("cargo::rustc-check-cfg=cfg(ci_gate_cuda_driver)");
    println!("cargo::rustc-check-cfg=cfg(ci_gate_system_nvrtc)");
    println!("cargo::rerun-if-changed=build.rs");
    for var in [
        "LD_LIBRARY_PATH",
        "CI_GATE_REQUIRE_NVRTC",
        "CI_GATE_GOLDEN_DIR",
        "CUDARC_CUDA_VERSION",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rustc-env=CI_GATE_CUDA_API={}", cuda_api_version());
    if std::env::var_os("CI_GATE_REQUIRE_NVRTC").is_none()
        && !library_found("libnvrtc.so", &library_dirs(true))
    {
        println!("cargo::rustc-cfg=ci_gate_no_nvrtc");
    }
    if library_found("libnvrtc.so", &library_dirs(false)) {
        println!("cargo::rustc-cfg=ci_gate_system_nvrtc");
    }
    if library_found("libcuda.so", &library_dirs(true)) {
        println!("cargo::rustc-cfg=ci_gate_cuda_driver");
    }
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let golden = std::env::var_os("CI_GATE_GOLDEN_DIR")
        .map(PathBuf::from)
        .or_else(|| manifest.map(|m| m.join("tests/golden")));
    let cases = golden.map(|g| g.join("cases.json"));
    match cases.as_deref().filter(|c| Path::is_file(c)) {
        Some(c) => println!("cargo::rerun-if-changed={}", c.display()),
        None => println!("cargo::rustc-cfg=ci_gate_no_golden"),
    }
}
