//! NVRTC compilation of a kernel source for one architecture, with a cache keyed by the
//! source's hash, the architecture, the options and the NVRTC version: in memory for the
//! process, and on disk (`$CI_GATE_CACHE_DIR`; in GitHub Actions `$RUNNER_TEMP/ci-gate-nvrtc`,
//! which lives only as long as the job; else `$XDG_CACHE_HOME/ci-gate`, else
//! `~/.cache/ci-gate`) across processes.
//!
//! A kernel source is attacker text (docs: "The kernel is an adversary"). It is read without
//! following links and bounded ([`KernelSource::read`], `source`), refused if it has any
//! include form (`lexcheck`), compiled in a sandboxed child process that can read nothing of
//! the runner (`sandbox`), and only its own diagnostics are published (`diagnostics`).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::sandbox::{self, Outcome, Request};
use super::source::KernelSource;
use super::{diagnostics, lexcheck};
use crate::ffi;
use crate::gpu_error::GpuError;

/// A compute capability such as 8.9 (`sm_89`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
}

impl Arch {
    /// The compute capability as a name: `sm_89`, `sm_90`.
    pub(crate) fn sm(&self) -> String {
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
/// `--ptxas-options=-v` makes ptxas report each entry's spills in the program log (the
/// CUBIN records none); it does not change the code.
const OPTIONS: &[&str] = &["--std=c++17", "--ptxas-options=-v"];

/// Set (to anything) by `ci-gate sanitize` for its workers: kernels are compiled with line
/// information, so that compute-sanitizer's findings name the source line. It is part of the
/// cache key like every option.
pub(crate) const LINEINFO_ENV: &str = "CI_GATE_NVRTC_LINEINFO";

/// The most threads one NVRTC program is compiled on (`--split-compile`). NVRTC compiles the
/// entries of a program apart and in parallel with it. The shipped attention.cu comes out
/// with the same code (every section but the notes, the symbol tables and the
/// `__constant__` data byte for byte), the same symbols holding the same data (NVRTC 13.5
/// orders the `__constant__` variables otherwise; the host reads them by name) and the same
/// ptxas report as from one thread (`tests/it/nvrtc.rs`, NVRTC 13.0 and 13.5). Each thread
/// adds about 75 MB of address space to the sandboxed child, whose limit is
/// 8 GiB: so a bound, not NVRTC's "all cores" (`0`), which on a 128-core host would pass it.
pub const MAX_COMPILE_THREADS: usize = 8;

/// How many threads NVRTC `major.minor` compiles one program on, given `cores`
/// ([`std::thread::available_parallelism`]): up to [`MAX_COMPILE_THREADS`] from NVRTC 13,
/// where split compilation was measured to change no code; one before it (NVRTC 12.4's
/// code generator rejects the option with a warning in the log).
pub(crate) fn compile_threads(nvrtc: (i32, i32), cores: usize) -> usize {
    if nvrtc.0 >= 13 {
        cores.clamp(1, MAX_COMPILE_THREADS)
    } else {
        1
    }
}

/// The cores this process may run on (1 where that cannot be read).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn options(target: &str, defines: &[String], threads: usize) -> Vec<String> {
    let mut o = vec![format!("--gpu-architecture={target}")];
    o.extend(OPTIONS.iter().map(|s| s.to_string()));
    if threads > 1 {
        o.push(format!("--split-compile={threads}"));
    }
    o.extend(defines.iter().map(|d| format!("-D{d}")));
    if std::env::var_os(LINEINFO_ENV).is_some_and(|v| !v.is_empty()) {
        o.push("--generate-line-info".into());
    }
    o
}

fn disk_dir() -> Option<PathBuf> {
    disk_dir_from(|name| match name {
        // The runner's setting: in GitHub Actions from the runner's own file only.
        crate::runner_settings::CACHE_DIR => crate::runner_settings::get(name),
        _ => std::env::var_os(name).filter(|v| !v.is_empty()),
    })
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

/// A compiled module: the CUBIN and the compiler's log of it (ptxas's report, with what the
/// source wrote into it: untrusted, see `ptxas`).
#[derive(Clone, Debug)]
pub(crate) struct CompiledModule {
    pub cubin: Arc<Vec<u8>>,
    pub log: Arc<str>,
}

fn memory() -> &'static Mutex<HashMap<String, CompiledModule>> {
    static CACHE: OnceLock<Mutex<HashMap<String, CompiledModule>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The cache key of `source` compiled for `target` by NVRTC `nvrtc`: the SHA-256 of the
/// source's hash, the options and the version. The options are those of one thread: how many
/// threads compile a program changes no code (`tests/it/nvrtc.rs`), and two processes of one
/// run (the evaluator's compilers and its measuring process) may see different core counts.
fn cache_key(source: &KernelSource, target: &str, nvrtc: (i32, i32)) -> String {
    let (major, minor) = nvrtc;
    let opts = options(target, &source.defines, 1);
    hex::encode(Sha256::digest(
        format!("{}\n{}\n{major}.{minor}", source.hash, opts.join(" ")).as_bytes(),
    ))
}

/// Compiles `source` to a CUBIN for `arch`, from the cache when possible.
pub fn compile(source: &KernelSource, arch: Arch) -> Result<Arc<Vec<u8>>, GpuError> {
    compile_module(source, arch).map(|m| m.cubin)
}

/// Reads a cached log, bounded: one past the bound is kept so that it reads as too long.
fn read_cached_log(path: &Path) -> Option<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(super::ptxas::MAX_LOG_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// [`compile`], with the compiler's log: the cache keeps the log beside the CUBIN
/// (`KEY.cubin`, `KEY.log`), so that a cached module still has its spills.
pub(crate) fn compile_module(
    source: &KernelSource,
    arch: Arch,
) -> Result<CompiledModule, GpuError> {
    // Before the cache too: whether a source is refused never depends on what was cached.
    lexcheck::check_no_file_access(&source.text, &source.path.display().to_string())?;
    if !ffi::nvrtc_present() {
        return Err(GpuError::NoNvrtc);
    }
    let nvrtc = ffi::nvrtc_version().unwrap_or((0, 0));
    let key = cache_key(source, &arch.target(), nvrtc);
    if let Some(hit) = memory().lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(hit);
    }
    let disk = disk_dir().map(|d| (d.join(format!("{key}.cubin")), d.join(format!("{key}.log"))));
    if let Some((cubin_path, log_path)) = &disk
        && let Ok(bytes) = std::fs::read(cubin_path)
        && bytes.starts_with(b"\x7fELF")
        && let Some(log) = read_cached_log(log_path)
    {
        let module = CompiledModule {
            cubin: Arc::new(bytes),
            log: log.into(),
        };
        if let Ok(mut m) = memory().lock() {
            m.insert(key, module.clone());
        }
        return Ok(module);
    }
    let threads = compile_threads(nvrtc, cores());
    let opts = options(&arch.target(), &source.defines, threads);
    let (cubin, log) = compile_checked(source, &arch.target(), &opts)?;
    let module = CompiledModule {
        cubin: Arc::new(cubin),
        log: log.into(),
    };
    if let Some((cubin_path, log_path)) = &disk {
        // A cache that cannot be written only costs time next run. The log first: a CUBIN
        // without its log is not a hit.
        if crate::files::write_atomic(log_path, module.log.as_bytes()).is_ok() {
            let _ = crate::files::write_atomic(cubin_path, &module.cubin);
        }
    }
    if let Ok(mut m) = memory().lock() {
        m.insert(key, module.clone());
    }
    Ok(module)
}

/// Compiles without any cache, for an NVRTC target named outright (`sm_90`, `sm_90a`): what
/// CI uses to prove both the portable and the architecture-specific builds of one compute
/// capability.
pub fn compile_uncached_for(source: &KernelSource, target: &str) -> Result<Vec<u8>, GpuError> {
    compile_uncached_module_for(source, target).map(|(cubin, _)| cubin)
}

/// [`compile_uncached_for`], with the compiler's log.
pub fn compile_uncached_module_for(
    source: &KernelSource,
    target: &str,
) -> Result<(Vec<u8>, String), GpuError> {
    // nvrtc_version needs the library loaded.
    if !ffi::nvrtc_present() {
        return Err(GpuError::NoNvrtc);
    }
    let threads = compile_threads(ffi::nvrtc_version().unwrap_or((0, 0)), cores());
    compile_uncached_module_on(source, target, threads)
}

/// [`compile_uncached_module_for`] on `threads` threads (`--split-compile`; one: without the
/// option), whatever the NVRTC: how CI proves that splitting changes no code.
pub fn compile_uncached_module_on(
    source: &KernelSource,
    target: &str,
    threads: usize,
) -> Result<(Vec<u8>, String), GpuError> {
    if !ffi::nvrtc_present() {
        return Err(GpuError::NoNvrtc);
    }
    compile_checked(source, target, &options(target, &source.defines, threads))
}

/// The one way a source reaches NVRTC: the lexical check, then the sandboxed child, then the
/// log filtered down to the source's own diagnostics.
fn compile_checked(
    source: &KernelSource,
    target: &str,
    options: &[String],
) -> Result<(Vec<u8>, String), GpuError> {
    let file = source.path.display().to_string();
    lexcheck::check_no_file_access(&source.text, &file)?;
    if !ffi::load_nvrtc() {
        return Err(GpuError::NoNvrtc);
    }
    let sandbox_failed = |why: String| GpuError::Sandbox(format!("{file} ({target}): {why}"));
    let library_dir = sandbox::nvrtc_library_dir().ok_or_else(|| {
        sandbox_failed("the directory libnvrtc was loaded from is not in /proc/self/maps".into())
    })?;
    let exe = sandbox::compiler_executable()
        .map_err(|e| sandbox_failed(format!("the ci-gate executable cannot be found: {e}")))?;
    let name = source.nvrtc_name();
    let request = Request {
        name: name.clone(),
        source: source.text.clone(),
        options: options.to_vec(),
        allow_unconfined: sandbox::unconfined_allowed(),
    };
    let answer = sandbox::compile(&exe, &request, &library_dir, sandbox::TIMEOUT)
        .map_err(|f| sandbox_failed(f.to_string()))?;
    if let Some(why) = &answer.unconfined {
        if !request.allow_unconfined {
            // The child refuses by itself, before NVRTC sees the source (its answer is the
            // refusal); anything else it made unconfined without leave is not used.
            return Err(sandbox_failed(match answer.outcome {
                Outcome::Error(refused) => refused,
                _ => format!(
                    "the sandboxed NVRTC process compiled unconfined ({why}) though {} does not allow it, so its output is not used",
                    sandbox::ALLOW_UNCONFINED_ENV
                ),
            }));
        }
        warn_unconfined_once(why);
    }
    match answer.outcome {
        Outcome::Cubin { cubin, log } if cubin.starts_with(b"\x7fELF") => Ok((cubin, log)),
        Outcome::Cubin { .. } => Err(sandbox_failed("NVRTC's output is not a CUBIN".into())),
        Outcome::Failed(log) => Err(GpuError::Compile {
            file,
            arch: target.to_string(),
            log: diagnostics::filter_log(&log, &name).text(&name),
        }),
        Outcome::Error(why) => Err(sandbox_failed(why)),
    }
}

/// Tells once per process that NVRTC ran without the full sandbox, as the runner's owner
/// allowed ([`sandbox::ALLOW_UNCONFINED_ENV`]).
fn warn_unconfined_once(why: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "warning: NVRTC compiles untrusted kernel source without the full sandbox, because {why}, as {}=1 in this runner's environment allows (what of the sandbox could be set up, the lexical check of includes and the empty environment still apply)",
            sandbox::ALLOW_UNCONFINED_ENV
        );
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
    fn nvrtc_13_compiles_on_up_to_eight_threads_and_older_nvrtc_on_one() {
        assert_eq!(compile_threads((13, 0), 16), 8);
        assert_eq!(compile_threads((13, 5), 128), 8);
        assert_eq!(compile_threads((13, 0), 4), 4);
        assert_eq!(compile_threads((13, 0), 1), 1);
        assert_eq!(compile_threads((13, 0), 0), 1);
        assert_eq!(compile_threads((12, 9), 16), 1);
        assert_eq!(compile_threads((0, 0), 16), 1);
        let split = |threads| {
            options("sm_90a", &["X=1".into()], threads)
                .into_iter()
                .filter(|o| o.starts_with("--split-compile"))
                .collect::<Vec<_>>()
        };
        assert_eq!(split(8), ["--split-compile=8"]);
        assert!(split(1).is_empty());
        // The cache key is that of one thread's options (no thread count in it); the
        // source's defines are in it.
        let source = KernelSource::embedded("k.cu", "int a;\n");
        let key = cache_key(&source, "sm_90a", (13, 0));
        let one = options("sm_90a", &[], 1).join(" ");
        let expected = format!("{}\n{one}\n13.0", source.hash);
        assert_eq!(key, hex::encode(Sha256::digest(expected.as_bytes())));
        let defined = source.clone().with_defines(&["X=1".into()]);
        assert_ne!(cache_key(&defined, "sm_90a", (13, 0)), key);
        assert_ne!(cache_key(&source, "sm_90a", (13, 5)), key);
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
