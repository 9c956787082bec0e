//! NVRTC compilation of `kernels/*.cu` for one architecture, with a cache keyed by the
//! source's hash, the architecture, the options and the NVRTC version: in memory for the
//! process, and on disk (`$CI_GATE_CACHE_DIR`, else `$XDG_CACHE_HOME/ci-gate`, else
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
        })
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
    pub fn sm(&self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }
}

/// The NVRTC options every kernel is compiled with, besides the architecture.
const OPTIONS: &[&str] = &["--std=c++17"];

fn options(arch: Arch) -> Vec<String> {
    let mut o = vec![format!("--gpu-architecture={}", arch.sm())];
    o.extend(OPTIONS.iter().map(|s| s.to_string()));
    o
}

fn disk_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("CI_GATE_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("ci-gate"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/ci-gate"))
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
    let opts = options(arch);
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
                arch: arch.sm(),
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
    if !raw::nvrtc_present() {
        return Err(GpuError::NoNvrtc);
    }
    match raw::nvrtc_compile(&source.text, &source.file_name(), &options(arch)) {
        Ok(Compiled::Cubin(c)) => Ok(c),
        Ok(Compiled::Failed(log)) => Err(GpuError::Compile {
            file: source.path.display().to_string(),
            arch: arch.sm(),
            log,
        }),
        Err(e) => Err(GpuError::Invalid(e)),
    }
}
