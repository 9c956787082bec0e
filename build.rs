//! Tells the tests which prerequisites this machine lacks, so that `cargo test` lists a test
//! that cannot run here as `ignored, <reason>` instead of passing silently:
//! `ci_gate_no_nvrtc` where no libnvrtc is found (unless CI_GATE_REQUIRE_NVRTC is set, as
//! .ci/run does: then the NVRTC tests run and fail loudly), `ci_gate_no_golden` where
//! ../shared/golden (or $CI_GATE_GOLDEN_DIR) holds no cases.json.

use std::path::{Path, PathBuf};

fn nvrtc_found() -> bool {
    let mut dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    dirs.extend(
        [
            "/usr/local/cuda/lib64",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/local/lib",
        ]
        .map(PathBuf::from),
    );
    dirs.iter().any(|d| {
        std::fs::read_dir(d).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with("libnvrtc.so"))
            })
        })
    })
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(ci_gate_no_nvrtc)");
    println!("cargo::rustc-check-cfg=cfg(ci_gate_no_golden)");
    println!("cargo::rerun-if-changed=build.rs");
    for var in [
        "LD_LIBRARY_PATH",
        "CI_GATE_REQUIRE_NVRTC",
        "CI_GATE_GOLDEN_DIR",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    if std::env::var_os("CI_GATE_REQUIRE_NVRTC").is_none() && !nvrtc_found() {
        println!("cargo::rustc-cfg=ci_gate_no_nvrtc");
    }
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let golden = std::env::var_os("CI_GATE_GOLDEN_DIR")
        .map(PathBuf::from)
        .or_else(|| manifest.map(|m| m.join("../shared/golden")));
    let cases = golden.map(|g| g.join("cases.json"));
    match cases.as_deref().filter(|c| Path::is_file(c)) {
        Some(c) => println!("cargo::rerun-if-changed={}", c.display()),
        None => println!("cargo::rustc-cfg=ci_gate_no_golden"),
    }
}
