//! What the gate reads of a kernel directory: [`KernelDir`] owns its file names (the timed
//! kernel, `attention.cu`, is the only file ever read from one; the harness, `reference.cu`
//! and `util.cu`, is built into the binary), [`KernelRoles`] says which directory is loaded
//! with the harness and which is the candidate, and [`KernelSource`] is one source read as
//! untrusted input, once.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::gpu_error::GpuError;

/// The timed kernel's file in a kernel directory: the one file the gate reads from a
/// directory of kernels (a pull request's, a base commit's, a candidate's).
pub const TIMED_FILE: &str = "attention.cu";

/// The harness's files, as the binary carries them (trusted: never read from a kernel
/// directory), named so in messages: the reference kernels, and the utility kernels that
/// fill, poison and check.
pub(crate) const REFERENCE_FILE: &str = "reference.cu";
pub(crate) const UTIL_FILE: &str = "util.cu";

/// A directory of kernels: where its timed kernel ([`TIMED_FILE`]) is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelDir {
    path: PathBuf,
}

impl KernelDir {
    pub fn new(path: impl Into<PathBuf>) -> KernelDir {
        KernelDir { path: path.into() }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its timed kernel's file, `DIR/attention.cu`.
    pub fn timed(&self) -> PathBuf {
        self.path.join(TIMED_FILE)
    }

    /// Its timed kernel, read as untrusted input ([`KernelSource::read`]).
    pub fn read_timed(&self) -> Result<KernelSource, GpuError> {
        KernelSource::read(&self.timed())
    }
}

/// The kernel directories a measuring backend opens, by role. The directory loaded with the
/// harness is the base's in an A/B run (trusted code, the harness of the base's ci-gate,
/// checks the candidate, never the candidate's own reference), else the candidate's; the
/// candidate's is another directory only in A/B.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRoles {
    /// Loaded first, beside the harness: its `attention.cu` is the base side (and, without a
    /// base, the candidate side too).
    pub with_harness: KernelDir,
    /// The candidate's directory, where it is another one (A/B).
    pub candidate: Option<KernelDir>,
}

impl KernelRoles {
    /// The roles of a run of the candidate's `kernels` against `base`'s (A/B), or alone.
    pub fn new(kernels: &Path, base: Option<&Path>) -> KernelRoles {
        match base {
            Some(base) => KernelRoles {
                with_harness: KernelDir::new(base),
                candidate: Some(KernelDir::new(kernels)),
            },
            None => KernelRoles {
                with_harness: KernelDir::new(kernels),
                candidate: None,
            },
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
