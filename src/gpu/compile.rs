//! NVRTC compilation of `kernels/*.cu` for one architecture, with a cache keyed by the
//! source's hash, the architecture, the options and the NVRTC version: in memory for the
//! process, and on disk (`$CI_GATE_CACHE_DIR`; in GitHub Actions `$RUNNER_TEMP/ci-gate-nvrtc`,
//! which lives only as long as the job; else `$XDG_CACHE_HOME/ci-gate`, else
//! `~/.cache/ci-gate`) across processes.
//!
//! A kernel source is attacker text (docs: "The kernel is an adversary"). It is read without
//! following links and bounded ([`KernelSource::read`]), refused if it has any include form
//! (`lexcheck`), compiled in a sandboxed child process that can read nothing of the runner
//! (`sandbox`), and only its own diagnostics are published (`diagnostics`).

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::error::GpuError;
use super::sandbox::{self, Outcome, Request};
use super::{diagnostics, lexcheck, raw};

/// The largest kernel source read (the shipped attention.cu is 50 KB).
pub(crate) const MAX_SOURCE_BYTES: u64 = 1 << 20;

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
    /// Reads a kernel source as untrusted input: the file itself, never what a symbolic link
    /// points to (a link to /proc/self/environ or to /dev/zero), in a directory that is not a
    /// link itself; a regular file (checked on the opened descriptor) of at most 1 MiB (never
    /// more is read), in UTF-8. Each refusal is one sentence naming the file.
    pub fn read(path: &Path) -> Result<KernelSource, GpuError> {
        let refused =
            |why: String| GpuError::Refused(format!("{} is refused: {why}", path.display()));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(refused(format!(
                "its directory {} is a symbolic link (kernel sources are read without following links)",
                dir.display()
            )));
        }
        // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|cause| {
                if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                    refused(
                        "it is a symbolic link (kernel sources are read without following links)"
                            .into(),
                    )
                } else {
                    GpuError::Source {
                        path: path.to_owned(),
                        cause,
                    }
                }
            })?;
        let meta = file.metadata().map_err(|cause| GpuError::Source {
            path: path.to_owned(),
            cause,
        })?;
        if !meta.is_file() {
            return Err(refused(format!(
                "it is not a regular file but {}",
                file_kind(&meta.file_type())
            )));
        }
        let too_big = || refused(format!("it is larger than {} KiB", MAX_SOURCE_BYTES >> 10));
        if meta.len() > MAX_SOURCE_BYTES {
            return Err(too_big());
        }
        let mut bytes = Vec::new();
        file.take(MAX_SOURCE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|cause| GpuError::Source {
                path: path.to_owned(),
                cause,
            })?;
        if bytes.len() as u64 > MAX_SOURCE_BYTES {
            return Err(too_big());
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            refused(format!(
                "it is not UTF-8 text (byte {} is not)",
                e.utf8_error().valid_up_to()
            ))
        })?;
        Ok(KernelSource {
            path: path.to_owned(),
            hash: hex::encode(Sha256::digest(text.as_bytes())),
            text,
            defines: Vec::new(),
        })
    }

    /// A source the binary carries (the harness: trusted, built in, never read from a
    /// kernel directory), named by `path` in messages.
    pub(crate) fn embedded(path: &str, text: &str) -> KernelSource {
        KernelSource {
            path: PathBuf::from(path),
            hash: hex::encode(Sha256::digest(text.as_bytes())),
            text: text.to_owned(),
            defines: Vec::new(),
        }
    }

    /// The same source compiled with these definitions.
    pub(crate) fn with_defines(mut self, defines: &[String]) -> KernelSource {
        self.defines = defines.to_vec();
        self
    }

    /// The name NVRTC compiles it under, and the only file name its published diagnostics
    /// may carry: the file's own name where it is a plain one (`attention.cu`), else
    /// `kernel.cu`.
    pub(crate) fn nvrtc_name(&self) -> String {
        self.path
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| {
                n.len() <= 64
                    && !n.starts_with('.')
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            })
            .unwrap_or("kernel.cu")
            .to_owned()
    }
}

fn file_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
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
    if !raw::nvrtc_present() {
        return Err(GpuError::NoNvrtc);
    }
    compile_checked(source, target, &options(target, &source.defines))
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
    if !raw::load_nvrtc() {
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

    fn refusal(path: &std::path::Path) -> String {
        match KernelSource::read(path) {
            Err(GpuError::Refused(why)) => why,
            other => panic!("{}: {other:?}", path.display()),
        }
    }

    #[test]
    fn a_regular_utf8_file_of_at_most_one_mebibyte_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("attention.cu");
        let text = "/".repeat(MAX_SOURCE_BYTES as usize);
        std::fs::write(&path, &text).unwrap();
        let s = KernelSource::read(&path).unwrap();
        assert_eq!(s.text, text);
        assert_eq!(s.hash, hex::encode(Sha256::digest(text.as_bytes())));
        std::fs::write(&path, format!("{text}/")).unwrap();
        assert_eq!(
            refusal(&path),
            format!("{} is refused: it is larger than 1024 KiB", path.display())
        );
    }

    #[test]
    fn links_and_special_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "x").unwrap();
        let link = dir.path().join("attention.cu");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        assert!(refusal(&link).ends_with(
            "is refused: it is a symbolic link (kernel sources are read without following links)"
        ));
        let zero = dir.path().join("zero.cu");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(refusal(&zero).contains("it is a symbolic link"));
        assert!(
            refusal(Path::new("/dev/zero"))
                .ends_with("it is not a regular file but a character device")
        );
        assert!(refusal(dir.path()).ends_with("it is not a regular file but a directory"));
        let fifo = dir.path().join("fifo.cu");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert!(refusal(&fifo).ends_with("it is not a regular file but a FIFO"));
        let latin1 = dir.path().join("latin1.cu");
        std::fs::write(&latin1, b"int a; // \xe9t\xe9\n").unwrap();
        assert!(refusal(&latin1).ends_with("it is not UTF-8 text (byte 10 is not)"));
        match KernelSource::read(&dir.path().join("missing.cu")) {
            Err(e @ GpuError::Source { .. }) => assert!(e.to_string().contains("missing.cu")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_directory_that_is_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("attention.cu"), "int a;\n").unwrap();
        let linked = dir.path().join("kernels");
        std::os::unix::fs::symlink(&real, &linked).unwrap();
        assert!(KernelSource::read(&real.join("attention.cu")).is_ok());
        let why = refusal(&linked.join("attention.cu"));
        assert!(
            why.contains(&format!(
                "its directory {} is a symbolic link",
                linked.display()
            )),
            "{why}"
        );
    }

    #[test]
    fn nvrtc_names_are_plain_file_names() {
        let name = |p: &str| {
            KernelSource {
                path: PathBuf::from(p),
                text: String::new(),
                hash: String::new(),
                defines: Vec::new(),
            }
            .nvrtc_name()
        };
        assert_eq!(name("kernels/attention.cu"), "attention.cu");
        assert_eq!(name("/x/reference.cu"), "reference.cu");
        for odd in [
            "k/a b.cu",
            "k/a(1).cu",
            "k/.hidden.cu",
            "k/\u{202e}uc.cu",
            "/",
        ] {
            assert_eq!(name(odd), "kernel.cu", "{odd}");
        }
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
