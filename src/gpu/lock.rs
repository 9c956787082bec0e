//! One measuring ci-gate process per GPU at a time. Two runs on one GPU slow each other down
//! without either noticing (issue 30: a comparison with the stored baseline moved from −6.4%
//! to +6.9%), so every process that launches work on a GPU — `local`, `ci`, each `--devices`
//! child, each measuring process of `selftest` and `baseline update`, `bisect`, `sanitize` —
//! first takes this lock for its GPU and holds it to its end.
//!
//! The lock is an exclusive `flock(2)` on `<dir>/<GPU UUID>.lock`, where `<dir>` is
//! `/tmp/ci-gate-locks-<uid>` (one per user: `/tmp` is shared by every job and session of the
//! machine, whatever their environment; `$CI_GATE_LOCK_DIR` overrides it for tests). The
//! directory is created 0700 where it is absent, and refused where it is a link, another
//! user's, or open to others; the file is opened without following links. A lock ends with
//! its process, however that ends (a crash or `kill -9` included), so a stale file never
//! blocks anyone. Runs of another user, and anything that is not ci-gate, are not held off by
//! it: NVML's list of the GPU's processes ([`super::env::Monitor::compute_processes`]) names
//! them in the run's report instead.
//!
//! While waiting, one line on stderr names the GPU and the holder: "ci-gate: waiting for GPU
//! GPU-… (held by pid N since 2026-11-27 10:04:05 UTC)". After [`DEFAULT_WAIT`] (30 minutes;
//! `$CI_GATE_LOCK_WAIT_S` for tests) the run ends without a verdict (exit 2), saying so.
//!
//! The lock is keyed by a string (the UUID of the GPU, or of the simulated GPU), so all of it
//! runs without one. It is taken once per run (`run::sharing::GpuHold`, held by whoever owns
//! the run's GPU work; the pipeline is handed it, `bisect` holds it across its steps) and is
//! not re-entrant: `flock` belongs to an open file, so a second [`acquire`] in a process that
//! holds the lock waits like any other process, and a run that took its GPU twice would wait
//! for itself until the bound.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::ffi;

/// Overrides where the locks live (tests; like every test setting, not passed to children
/// and unset by action.yml).
pub(crate) const LOCK_DIR_ENV: &str = "CI_GATE_LOCK_DIR";
/// Overrides how long a run waits for its GPU, in seconds (tests).
pub(crate) const LOCK_WAIT_ENV: &str = "CI_GATE_LOCK_WAIT_S";
/// How long a run waits for another run's lock before it gives up: a PR gate takes under a
/// minute and a nightly run a few; past this the holder is stuck, or the queue is.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(30 * 60);
/// How often a waiting run tries again: often enough that `ci-gate eval`'s next measuring
/// process, started while the current one measures, takes the GPU within a few ms of its
/// release (a try is one `flock` and a read of a few bytes).
const POLL: Duration = Duration::from_millis(10);

/// The directory of the locks: `$CI_GATE_LOCK_DIR`, else `/tmp/ci-gate-locks-<uid>`.
pub(crate) fn lock_dir() -> PathBuf {
    match std::env::var_os(LOCK_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(format!("/tmp/ci-gate-locks-{}", ffi::effective_uid())),
    }
}

/// How long to wait for a GPU: `$CI_GATE_LOCK_WAIT_S` where it is a number of seconds, else
/// [`DEFAULT_WAIT`].
pub(crate) fn wait_bound() -> Duration {
    std::env::var(LOCK_WAIT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9)
        .map_or(DEFAULT_WAIT, Duration::from_secs_f64)
}

/// The UUID of this process's CUDA device 0 (the GPU it measures on, after
/// `CUDA_VISIBLE_DEVICES`), read from the driver without creating a context; `None` without a
/// driver or a device (opening the GPU then fails with the reason).
pub(crate) fn device0_uuid() -> Option<String> {
    use cudarc::driver::result;
    if !ffi::driver_present() {
        return None;
    }
    result::init().ok()?;
    let device = result::device::get(0).ok()?;
    let uuid = result::device::get_uuid(device).ok()?;
    Some(super::device::uuid_string(&uuid.bytes))
}

/// A GPU held by this process; released when this drops (or the process ends).
pub struct GpuLock {
    /// The locked file: the lock lives as long as this descriptor.
    _file: File,
    key: String,
    path: PathBuf,
    waited: Duration,
}

impl GpuLock {
    /// The GPU's key (its UUID).
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// How long this process waited for it.
    pub(crate) fn waited(&self) -> Duration {
        self.waited
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Takes the lock of GPU `key` in `dir`, waiting at most `wait` for another process that
/// holds it; `on_wait` gets the waiting line, once, when there is a wait. An error is one
/// sentence: the directory or file that cannot be used, or the wait that ran out.
pub fn acquire(
    key: &str,
    dir: &Path,
    wait: Duration,
    on_wait: &mut dyn FnMut(&str),
) -> Result<GpuLock> {
    let path = dir.join(file_name(key));
    ensure_private_dir(dir)?;
    let file = open_lock_file(&path)?;
    let started = Instant::now();
    let mut said = false;
    loop {
        let taken = ffi::try_flock_exclusive(&file)
            .map_err(|e| anyhow::anyhow!("cannot lock {}: {e}", path.display()))?;
        if taken {
            break;
        }
        let holder = Holder::read(&file);
        if !said {
            on_wait(&waiting_line(key, &holder));
            said = true;
        }
        let waited = started.elapsed();
        if waited >= wait {
            bail!(
                "GPU {} is still held by {} after waiting {}: another ci-gate run measures on it, and timings taken beside it would be wrong, so this run ends without a verdict (run it again when the GPU is free)",
                shown_key(key),
                holder.who(),
                duration_text(waited)
            );
        }
        std::thread::sleep(POLL.min(wait - waited).max(Duration::from_millis(1)));
    }
    let waited = started.elapsed();
    // Who holds it, for the next process that waits: written after taking the lock, so a
    // reader sees either this or an empty file (never another holder's line as ours).
    let line = format!(
        "pid {}\nsince {}\n",
        std::process::id(),
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let written = file
        .set_len(0)
        .and_then(|()| file.write_all_at(line.as_bytes(), 0));
    if let Err(e) = written {
        bail!("cannot write to the GPU lock file {}: {e}", path.display());
    }
    Ok(GpuLock {
        _file: file,
        key: key.to_owned(),
        path,
        waited,
    })
}

/// The lock file's name: the key itself where it is a plain name (a UUID is), else a hash of
/// it, so no key can name a path.
fn file_name(key: &str) -> String {
    let plain = !key.is_empty()
        && key.len() <= 100
        && !key.starts_with('.')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if plain {
        format!("{key}.lock")
    } else {
        use sha2::Digest;
        let h = hex::encode(sha2::Sha256::digest(key.as_bytes()));
        format!("gpu-{}.lock", &h[..24])
    }
}

/// The key as shown: a plain name as it is, anything else quoted and escaped.
fn shown_key(key: &str) -> String {
    if file_name(key) == format!("{key}.lock") {
        key.to_owned()
    } else {
        crate::text::quote(key)
    }
}

/// Creates `dir` (0700) where it is absent; refuses one that is a link, not a directory,
/// another user's, or open to group or others.
fn ensure_private_dir(dir: &Path) -> Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => bail!(
            "cannot create the GPU lock directory {}: {e}",
            dir.display()
        ),
    }
    let m = std::fs::symlink_metadata(dir).map_err(|e| {
        anyhow::anyhow!("cannot read the GPU lock directory {}: {e}", dir.display())
    })?;
    if m.file_type().is_symlink() || !m.is_dir() {
        bail!(
            "the GPU lock directory {} is not a directory (a link or a file is there, which ci-gate does not follow): remove it",
            dir.display()
        );
    }
    let me = ffi::effective_uid();
    if m.uid() != me {
        bail!(
            "the GPU lock directory {} belongs to uid {}, not to this user (uid {me}): remove it, or set {LOCK_DIR_ENV}",
            dir.display(),
            m.uid()
        );
    }
    if m.mode() & 0o077 != 0 {
        bail!(
            "the GPU lock directory {} is open to other users (mode {:o}): make it private (chmod 700)",
            dir.display(),
            m.mode() & 0o7777
        );
    }
    Ok(())
}

/// Opens (creating, 0600) the lock file without following a link, and checks that it is a
/// regular file of this user.
fn open_lock_file(path: &Path) -> Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot open the GPU lock file {}: {e}", path.display()))?;
    let m = file
        .metadata()
        .map_err(|e| anyhow::anyhow!("cannot read the GPU lock file {}: {e}", path.display()))?;
    if !m.is_file() || m.uid() != ffi::effective_uid() {
        bail!(
            "the GPU lock file {} is not a regular file of this user: remove it",
            path.display()
        );
    }
    Ok(file)
}

/// What the holder wrote into the lock file: its pid and when it took the lock.
#[derive(Debug, Default, PartialEq)]
struct Holder {
    pid: Option<u32>,
    since: Option<chrono::DateTime<chrono::Utc>>,
}

impl Holder {
    /// Reads at most 256 bytes; anything that does not parse is left out.
    fn read(file: &File) -> Holder {
        let mut buf = [0u8; 256];
        let n = file.read_at(&mut buf, 0).unwrap_or(0);
        Holder::parse(&String::from_utf8_lossy(&buf[..n]))
    }

    fn parse(text: &str) -> Holder {
        let mut h = Holder::default();
        for line in text.lines() {
            if let Some(p) = line.strip_prefix("pid ") {
                h.pid = p.trim().parse().ok().filter(|p| *p > 0);
            } else if let Some(t) = line.strip_prefix("since ") {
                h.since = chrono::DateTime::parse_from_rfc3339(t.trim())
                    .ok()
                    .map(|t| t.with_timezone(&chrono::Utc));
            }
        }
        h
    }

    /// "pid 123 (since 2026-11-27 10:04:05 UTC)", or what is known of it.
    fn who(&self) -> String {
        let since = self
            .since
            .map(|t| format!(" since {}", t.format("%Y-%m-%d %H:%M:%S UTC")))
            .unwrap_or_default();
        match self.pid {
            Some(pid) => format!("pid {pid}{since}"),
            None => format!("another ci-gate process{since}"),
        }
    }
}

/// The line said once while waiting.
fn waiting_line(key: &str, holder: &Holder) -> String {
    format!(
        "ci-gate: waiting for GPU {} (held by {})",
        shown_key(key),
        holder.who()
    )
}

fn duration_text(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 120.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{s:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private_tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn a_second_holder_waits_says_so_once_and_gives_up_at_the_bound() {
        let tmp = private_tmp();
        let dir = tmp.path().join("locks");
        let key = "GPU-5133d000-0000-4000-8000-00000000abcd";
        let first = acquire(key, &dir, Duration::ZERO, &mut |_| panic!("no wait")).unwrap();
        assert_eq!(first.path(), dir.join(format!("{key}.lock")));
        let text = std::fs::read_to_string(first.path()).unwrap();
        assert!(
            text.starts_with(&format!("pid {}\nsince ", std::process::id())),
            "{text}"
        );
        // Not re-entrant: a second take in this process waits as another process's would,
        // saying so once, and gives up at the bound.
        let mut lines = Vec::new();
        let e = match acquire(key, &dir, Duration::ZERO, &mut |l| lines.push(l.to_owned())) {
            Ok(_) => panic!("the lock is held"),
            Err(e) => e.to_string(),
        };
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with(&format!(
                "ci-gate: waiting for GPU {key} (held by pid {} since 20",
                std::process::id()
            )) && lines[0].ends_with(" UTC)"),
            "{lines:?}"
        );
        assert!(e.contains("is still held by pid"), "{e}");
        // Another open file description (as another process has) cannot take it either.
        let file = open_lock_file(first.path()).unwrap();
        assert!(!ffi::try_flock_exclusive(&file).unwrap(), "held");
        assert_eq!(Holder::read(&file).pid, Some(std::process::id()));
        drop(first);
        assert!(ffi::try_flock_exclusive(&file).unwrap(), "released");
    }

    #[test]
    fn the_wait_ends_with_a_sentence_naming_the_gpu_and_the_holder() {
        let tmp = private_tmp();
        let dir = tmp.path().join("locks");
        ensure_private_dir(&dir).unwrap();
        let key = "GPU-aaaa";
        // Another holder: a plain flock on the file.
        let path = dir.join(file_name(key));
        let other = open_lock_file(&path).unwrap();
        assert!(ffi::try_flock_exclusive(&other).unwrap());
        other
            .write_all_at(b"pid 4242\nsince 2026-11-27T10:04:05Z\n", 0)
            .unwrap();
        let mut lines = Vec::new();
        let e = match acquire(key, &dir, Duration::from_millis(300), &mut |l| {
            lines.push(l.to_owned())
        }) {
            Ok(_) => panic!("the lock is held"),
            Err(e) => e.to_string(),
        };
        assert_eq!(
            lines,
            ["ci-gate: waiting for GPU GPU-aaaa (held by pid 4242 since 2026-11-27 10:04:05 UTC)"]
        );
        assert!(
            e.starts_with(
                "GPU GPU-aaaa is still held by pid 4242 since 2026-11-27 10:04:05 UTC after waiting 0."
            ) && e.contains("without a verdict"),
            "{e}"
        );
        // Released by its holder: taken at once.
        drop(other);
        let l = acquire(key, &dir, Duration::ZERO, &mut |_| panic!("no wait")).unwrap();
        assert!(l.waited() < Duration::from_secs(5));
    }

    #[cfg(unix)]
    #[test]
    fn links_foreign_or_open_directories_and_odd_keys_are_refused_or_hashed() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = private_tmp();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = acquire("GPU-x", &link, Duration::ZERO, &mut |_| {})
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("is not a directory") && e.contains("link"),
            "{e}"
        );
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = acquire("GPU-x", &open, Duration::ZERO, &mut |_| {})
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("open to other users (mode 755)"), "{e}");
        // A planted link in place of the lock file is not followed.
        let dir = tmp.path().join("locks");
        ensure_private_dir(&dir).unwrap();
        std::os::unix::fs::symlink(real.join("target"), dir.join("GPU-y.lock")).unwrap();
        let e = acquire("GPU-y", &dir, Duration::ZERO, &mut |_| {})
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("cannot open the GPU lock file"), "{e}");
        assert!(!real.join("target").exists());
        // A key that is not a plain name never forms a path.
        assert_eq!(file_name("GPU-1234-ab"), "GPU-1234-ab.lock");
        for odd in ["../x", "", ".hidden", "a/b", "a\nb"] {
            let n = file_name(odd);
            assert!(
                n.starts_with("gpu-") && n.ends_with(".lock") && !n.contains('/'),
                "{n}"
            );
        }
    }

    #[test]
    fn holder_lines_parse_or_are_left_out() {
        assert_eq!(Holder::parse("").who(), "another ci-gate process");
        assert_eq!(Holder::parse("pid 12\n").who(), "pid 12");
        assert_eq!(Holder::parse("pid x\nsince nonsense\n"), Holder::default());
        assert_eq!(
            Holder::parse("pid 7\nsince 2026-01-02T03:04:05+01:00\n").who(),
            "pid 7 since 2026-01-02 02:04:05 UTC"
        );
    }
}
