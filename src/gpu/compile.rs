//! NVRTC compilation of `kernels/*.cu` for one architecture, with a cache keyed by the
//! source's hash, the architecture, the options and the NVRTC version: in memory for the
//! process, and on disk (`$CI_GATE_CACHE_DIR`; in GitHub Actions `$RUNNER_TEMP/ci-gate-nvrtc`,
//! which lives only as long as the job; else `$XDG_CACHE_HOME/ci-gate`, else
//! `~/.cache/ci-gate`) across processes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::error::GpuError;
use super::raw::{self, Compiled};

/// A kernel source file, read once.
#[derive(Clone, Debug)]
pub struct KernelSource {
    pub path: PathBuf,
    pub text: String,
    /// SHA-256 of `text`.
    pub hash: String,
    /// Preprocessor definitions it is compiled with (`-DNAME` / `-DNAME=VALUE`), from the
    /// config's `compile.defines`; part of the cache key like every option.
    pub defines: Vec<String>,
}

impl KernelSource {
    pub fn read(path: &Path) -> Result<KernelSource, GpuError> {
        let text = std::fs::read_to_string(path).map_err(|cause| GpuError::Source {
            path: path.to_owned(),
            cause,
        })?;
        Ok(KernelSource {
            path: path.to_owned(),
            hash: hex::encode(Sha256::digest(text.as_bytes())),
            text,
            defines: Vec::new(),
        })
    }

    /// The same source compiled with these definitions.
    pub fn with_defines(mut self, defines: &[String]) -> KernelSource {
        self.defines = defines.to_vec();
        self
    }

    fn file_name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "kernel.cu".into())
    }
}

/// A compute capability such as 8.9 (`sm_89`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
}

impl Arch {
    /// The compute capability as a name: `sm_89`, `sm_90`.
    pub fn sm(&self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }

    /// What NVRTC compiles for: the compute capability, plus its architecture-specific
    /// features where the kernels have a path for them. On 9.0 (H100, H200) that is
    /// `sm_90a`, which has wgmma; such a cubin loads only on 9.0, which is where it is used.
    pub fn target(&self) -> String {
        if (self.major, self.minor) == (9, 0) {
            "sm_90a".into()
        } else {
            self.sm()
        }
    }
}

/// The NVRTC options every kernel is compiled with, besides the architecture.
const OPTIONS: &[&str] = &["--std=c++17"];

/// Set (to anything) by `ci-gate sanitize` for its workers: kernels are compiled with line
/// information, so that compute-sanitizer's findings name the source line. It is part of the
/// cache key like every option.
pub const LINEINFO_ENV: &str = "CI_GATE_NVRTC_LINEINFO";

fn options(target: &str, defines: &[String]) -> Vec<String> {
    let mut o = vec![format!("--gpu-architecture={target}")];
    o.extend(OPTIONS.iter().map(|s| s.to_string()));
    o.extend(defines.iter().map(|d| format!("-D{d}")));
    if std::env::var_os(LINEINFO_ENV).is_some_and(|v| !v.is_empty()) {
        o.push("--generate-line-info".into());
    }
    o
}

fn disk_dir() -> Option<PathBuf> {
    disk_dir_from(|name| std::env::var_os(name).filter(|v| !v.is_empty()))
}

/// Where compiled kernels are cached, from these environment variables:
/// `$CI_GATE_CACHE_DIR`; else, in GitHub Actions (`GITHUB_ACTIONS=true`), the job's own
/// `$RUNNER_TEMP/ci-gate-nvrtc` (emptied after every job, so a CUBIN planted by one pull
/// request's job is never loaded by a later job), or no disk cache without `RUNNER_TEMP`;
/// else `$XDG_CACHE_HOME/ci-gate`, else `~/.cache/ci-gate`.
fn disk_dir_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    if let Some(d) = var("CI_GATE_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if var("GITHUB_ACTIONS").is_some_and(|v| v == "true") {
        return var("RUNNER_TEMP").map(|t| PathBuf::from(t).join("ci-gate-nvrtc"));
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("ci-gate"));
    }
    var("HOME").map(|h| PathBuf::from(h).join(".cache/ci-gate"))
}

fn memory() -> &'static Mutex<HashMap<String, Arc<Vec<u8>>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Vec<u8>>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Compiles `source` to a CUBIN for `arch`, from the cache when possible.
pub fn compile(source: &KernelSource, arch: Arch) -> Result<Arc<Vec<u8>>, GpuError> {
    if !raw::nvrtc_present() {
        return Err(GpuError::NoNvrtc);
    }
    let opts = options(&arch.target(), &source.defines);
    let (major, minor) = raw::nvrtc_version().unwrap_or((0, 0));
    let key = hex::encode(Sha256::digest(
        format!("{}\n{}\n{major}.{minor}", source.hash, opts.join(" ")).as_bytes(),
    ));
    if let Some(hit) = memory().lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(hit);
    }
    let disk = disk_dir().map(|d| d.join(format!("{key}.cubin")));
    if let Some(path) = &disk
        && let Ok(bytes) = std::fs::read(path)
        && bytes.starts_with(b"\x7fELF")
    {
        let bytes = Arc::new(bytes);
        if let Ok(mut m) = memory().lock() {
            m.insert(key, bytes.clone());
        }
        return Ok(bytes);
    }
    let name = source.file_name();
    let cubin = match raw::nvrtc_compile(&source.text, &name, &opts) {
        Ok(Compiled::Cubin(c)) => Arc::new(c),
        Ok(Compiled::Failed(log)) => {
            return Err(GpuError::Compile {
                file: source.path.display().to_string(),
                arch: arch.target(),
                log,
            });
        }
        Err(e) => return Err(GpuError::Invalid(e)),
    };
    if let Some(path) = &disk {
        // A cache that cannot be written only costs time next run.
        let _ = crate::files::write_atomic(path, &cubin);
    }
    if let Ok(mut m) = memory().lock() {
        m.insert(key, cubin.clone());
    }
    Ok(cubin)
}

/// Compiles without any cache: what CI uses to prove the kernels build for an architecture.
pub fn compile_uncached(source: &KernelSource, arch: Arch) -> Result<Vec<u8>, GpuError> {
    compile_uncached_for(source, &arch.target())
}

/// [`compile_uncached`] for an NVRTC target named outright (`sm_90`, `sm_90a`), so CI can
/// prove both the portable and the architecture-specific builds of one compute capability.
pub fn compile_uncached_for(source: &KernelSource, target: &str) -> Result<Vec<u8>, GpuError> {
    if !raw::nvrtc_present() {
        return Err(GpuError::NoNvrtc);
    }
    match raw::nvrtc_compile(
        &source.text,
        &source.file_name(),
        &options(target, &source.defines),
    ) {
        Ok(Compiled::Cubin(c)) => Ok(c),
        Ok(Compiled::Failed(log)) => Err(GpuError::Compile {
            file: source.path.display().to_string(),
            arch: target.to_string(),
            log,
        }),
        Err(e) => Err(GpuError::Invalid(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    fn dir(vars: &[(&str, &str)]) -> Option<PathBuf> {
        let map: HashMap<&str, OsString> = vars.iter().map(|(k, v)| (*k, (*v).into())).collect();
        disk_dir_from(|k| map.get(k).cloned())
    }

    #[test]
    fn in_actions_the_cache_lives_in_the_jobs_temporary_directory() {
        let home = ("HOME", "/home/runner");
        assert_eq!(
            dir(&[home, ("GITHUB_ACTIONS", "true"), ("RUNNER_TEMP", "/tmp/rt")]),
            Some(PathBuf::from("/tmp/rt/ci-gate-nvrtc"))
        );
        // Never the persistent home cache in Actions, even without RUNNER_TEMP.
        assert_eq!(dir(&[home, ("GITHUB_ACTIONS", "true")]), None);
        assert_eq!(
            dir(&[home, ("GITHUB_ACTIONS", "true"), ("XDG_CACHE_HOME", "/x")]),
            None
        );
        // An explicit directory wins everywhere.
        assert_eq!(
            dir(&[
                home,
                ("GITHUB_ACTIONS", "true"),
                ("RUNNER_TEMP", "/tmp/rt"),
                ("CI_GATE_CACHE_DIR", "/c")
            ]),
            Some(PathBuf::from("/c"))
        );
        // Outside Actions: XDG, then HOME.
        assert_eq!(
            dir(&[home, ("XDG_CACHE_HOME", "/x")]),
            Some(PathBuf::from("/x/ci-gate"))
        );
        assert_eq!(
            dir(&[home]),
            Some(PathBuf::from("/home/runner/.cache/ci-gate"))
        );
        assert_eq!(
            dir(&[home, ("GITHUB_ACTIONS", "false")]),
            Some(PathBuf::from("/home/runner/.cache/ci-gate"))
        );
    }
}
