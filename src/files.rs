//! Reading and writing the JSON files ci-gate keeps: atomic writes, and reads that name the
//! file and refuse schema versions this build does not know. Every file read is untrusted:
//! its size and nesting depth are bounded before it is parsed, and its content is checked
//! ([`crate::validate::Untrusted`]) before anyone sees it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::validate::{Rejected, Untrusted};

/// Largest JSON file (results, baseline) ci-gate reads.
pub(crate) const MAX_JSON_BYTES: u64 = 256 * 1024 * 1024;

/// Deepest nesting of arrays and objects in a JSON file (ci-gate's own files nest 6 deep).
pub(crate) const MAX_JSON_DEPTH: usize = 32;

/// A JSON file that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read {path}: {cause}")]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot write {path}: {cause}")]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path} is not valid ci-gate JSON: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error(
        "{path} has schema_version {found}, newer than this ci-gate reads ({supported}); upgrade ci-gate"
    )]
    NewerSchema {
        path: PathBuf,
        found: u64,
        supported: u32,
    },
    #[error("{path} is larger than the {limit} bytes ci-gate reads")]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{path} nests arrays and objects more than {limit} deep")]
    TooDeep { path: PathBuf, limit: usize },
    #[error("{path} is {}, not a results file (what `ci-gate local --out` and `ci-gate ci --out` write): {}", kind.what(), kind.use_instead())]
    OtherKind { path: PathBuf, kind: FileKind },
    #[error(transparent)]
    Rejected(#[from] Rejected),
}

/// The kinds of file ci-gate writes besides results files, told apart by their keys
/// ([`other_kind`]) so that a file given where a results file belongs is named for what it
/// is, with what takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// `baselines/<gpu-slug>/<config>.json`, written by `ci-gate baseline update`.
    Baseline,
    /// The report `ci-gate selftest --out` writes.
    SelftestReport,
    /// A history of the default branch's runs (JSON Lines), `ci-gate history append`.
    History,
}

impl FileKind {
    /// What the file is, as a noun phrase.
    pub fn what(self) -> &'static str {
        match self {
            FileKind::Baseline => {
                "a baseline file (baselines/<gpu>/<config>.json, written by `ci-gate baseline update`)"
            }
            FileKind::SelftestReport => "a selftest report (written by `ci-gate selftest --out`)",
            FileKind::History => {
                "a history file (JSON Lines, one shape of one run per line, written by `ci-gate history append`)"
            }
        }
    }

    /// Which command takes it.
    pub fn use_instead(self) -> &'static str {
        match self {
            FileKind::Baseline => {
                "runs compare with it themselves (`ci-gate local --no-base` judges the kernels against it alone) and `ci-gate baseline show` lists it"
            }
            FileKind::SelftestReport => {
                "it is the record of a selftest, which no command reads back; `ci-gate selftest --format markdown` prints it again as a table"
            }
            FileKind::History => "`ci-gate history --history FILE` reads it",
        }
    }
}

/// The kind of ci-gate file `text` is, where its keys say it is one of [`FileKind`]:
/// `provenance` and `gpu_slug` (a baseline), `conditions` and `trials` (a selftest report),
/// or a first line that is a history record (`commit`, `shape`, `p50_us`). `None` for
/// anything else (a results file, or no ci-gate file). Bounded like every read: the size
/// and depth are checked before anything is parsed, and only the top-level keys are read.
pub(crate) fn other_kind(text: &str) -> Option<FileKind> {
    if text.len() as u64 > MAX_JSON_BYTES || json_too_deep(text, MAX_JSON_DEPTH) {
        return None;
    }
    let has = |v: &serde_json::Value, keys: &[&str]| keys.iter().all(|k| v.get(k).is_some());
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        if !v.is_object() {
            return None;
        }
        if has(&v, &["provenance", "gpu_slug", "shapes"]) {
            return Some(FileKind::Baseline);
        }
        if has(&v, &["conditions", "trials"]) {
            return Some(FileKind::SelftestReport);
        }
        return has(&v, &["commit", "shape", "p50_us"]).then_some(FileKind::History);
    }
    // Not one JSON value: JSON Lines whose first record is a history record.
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    let v: serde_json::Value = serde_json::from_str(first).ok()?;
    has(&v, &["commit", "shape", "p50_us"]).then_some(FileKind::History)
}

/// Reads at most `limit` bytes of `path`; a longer file (or an endless one, such as a
/// device) is an error rather than a huge allocation.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let read_err = |cause| FileError::Read {
        path: path.to_owned(),
        cause,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    if let Ok(meta) = file.metadata()
        && meta.is_file()
        && meta.len() > limit
    {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            limit,
        });
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            limit,
        });
    }
    Ok(bytes)
}

/// Whether JSON text nests arrays and objects deeper than `limit` (strings are skipped, so
/// brackets inside them do not count). Linear, and safe on any input.
pub(crate) fn json_too_deep(text: &str, limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for b in text.bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The path of the value (`shapes[2].samples_us[0]`) at which JSON `text` fails to
/// deserialize as a `T`, as serde_path_to_error tracks it; `None` where it fails at the
/// top or does not fail. Read again only once a read failed, so reading stays as fast as
/// serde_json; serde_json's own error says the line and column.
pub(crate) fn json_key<T: DeserializeOwned>(text: &str) -> Option<String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let e = serde_path_to_error::deserialize::<_, T>(&mut de).err()?;
    let key = e.path().to_string();
    (key != ".").then_some(key)
}

/// Whether a file can be written at `path` later, checked before any work that would be
/// lost if it could not (a run's results): `path` is not a directory, and the nearest
/// directory of it that exists can take a new file (tried with a temporary file, removed at
/// once). Nothing is left behind, and missing directories are not created here (writing
/// creates them).
pub(crate) fn check_writable(path: &Path) -> Result<(), FileError> {
    let err = |cause| FileError::Write {
        path: path.to_owned(),
        cause,
    };
    if path.is_dir() {
        return Err(err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory",
        )));
    }
    let mut dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    while !dir.exists() {
        match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => dir = p.to_owned(),
            _ => {
                dir = PathBuf::from(".");
                break;
            }
        }
    }
    if !dir.is_dir() {
        return Err(err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("{} is not a directory", dir.display()),
        )));
    }
    tempfile::Builder::new()
        .prefix(".ci-gate-write-check")
        .tempfile_in(&dir)
        .map(drop)
        .map_err(|e| {
            err(std::io::Error::new(
                e.kind(),
                format!("{} cannot take a new file ({})", dir.display(), e.kind()),
            ))
        })
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to
/// disk, then renamed over the target. A crash leaves either the old file or the new one.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let err = |cause| FileError::Write {
        path: path.to_owned(),
        cause,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(err)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{file_name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}

/// Serialises `value` as pretty JSON (with a trailing newline) and writes it atomically.
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), FileError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| FileError::Invalid {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// Reads a versioned JSON file: the `schema_version` is checked before the rest is parsed, so
/// a newer file is reported as such rather than as a confusing missing field. At most
/// [`MAX_JSON_BYTES`] are read; the content is checked as [`parse_versioned_json`] does.
pub(crate) fn read_versioned_json<T: DeserializeOwned + Untrusted>(
    path: &Path,
    supported: u32,
) -> Result<T, FileError> {
    let bytes = read_bounded(path, MAX_JSON_BYTES)?;
    let text = String::from_utf8(bytes).map_err(|_| FileError::Invalid {
        path: path.to_owned(),
        message: "not UTF-8 text".into(),
    })?;
    parse_versioned_json(&text, path, supported)
}

/// Parses versioned JSON text; `path` names it in errors. The text's size and nesting depth
/// are bounded before parsing; after parsing, every value is checked
/// ([`Untrusted::check`]) and free text neutralised ([`Untrusted::neutralise`]).
pub fn parse_versioned_json<T: DeserializeOwned + Untrusted>(
    text: &str,
    path: &Path,
    supported: u32,
) -> Result<T, FileError> {
    let invalid = |message: String| FileError::Invalid {
        path: path.to_owned(),
        message,
    };
    if text.trim().is_empty() {
        return Err(invalid("the file is empty".into()));
    }
    if text.len() as u64 > MAX_JSON_BYTES {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            limit: MAX_JSON_BYTES,
        });
    }
    if json_too_deep(text, MAX_JSON_DEPTH) {
        return Err(FileError::TooDeep {
            path: path.to_owned(),
            limit: MAX_JSON_DEPTH,
        });
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        None => return Err(invalid("missing or non-integer `schema_version`".into())),
        Some(found) if found > u64::from(supported) => {
            return Err(FileError::NewerSchema {
                path: path.to_owned(),
                found,
                supported,
            });
        }
        Some(_) => {}
    }
    // Parse from the text, not the Value, so errors carry line and column.
    let mut parsed: T = serde_json::from_str(text).map_err(|e| match json_key::<T>(text) {
        Some(key) => invalid(format!("{key}: {e}")),
        None => invalid(e.to_string()),
    })?;
    parsed.check(path)?;
    parsed.neutralise();
    Ok(parsed)
}

#[cfg(test)]
mod write_check_tests {
    use super::check_writable;

    #[test]
    fn an_unwritable_place_is_refused_and_nothing_is_created() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_writable(&dir.path().join("a/b/out.json")).is_ok());
        assert!(!dir.path().join("a").exists(), "no directory is created");
        assert!(check_writable(dir.path()).is_err(), "a directory");
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(
            check_writable(&file.join("out.json")).is_err(),
            "under a file"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        if !nix_root() {
            use std::os::unix::fs::PermissionsExt;
            let ro = dir.path().join("ro");
            std::fs::create_dir(&ro).unwrap();
            std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).unwrap();
            assert!(check_writable(&ro.join("out.json")).is_err());
        }
    }

    /// root writes anywhere: the permission case means nothing then.
    fn nix_root() -> bool {
        std::fs::metadata("/proc/self")
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
            .unwrap_or(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Doc {
        schema_version: u32,
        x: f64,
    }

    impl Untrusted for Doc {
        fn check(&self, path: &Path) -> Result<(), Rejected> {
            if self.x < 0.0 {
                return Err(Rejected {
                    path: path.to_owned(),
                    key: "x".into(),
                    shape: None,
                    message: "is negative".into(),
                });
            }
            Ok(())
        }
        fn neutralise(&mut self) {
            self.x = self.x.min(1e6);
        }
    }

    #[test]
    fn round_trip_and_no_temp_left() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/doc.json");
        let d = Doc {
            schema_version: 1,
            x: 2.5,
        };
        write_json(&p, &d).unwrap();
        assert_eq!(read_versioned_json::<Doc>(&p, 1).unwrap(), d);
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("doc.json")]);
    }

    #[test]
    fn bad_files_name_the_file() {
        let p = Path::new("baselines/x/pr.json");
        let cases = [
            ("", "empty"),
            ("{\"schema_version\": 1, \"x\": ", "EOF"),
            ("{\"x\": 1}", "schema_version"),
            ("{\"schema_version\": 1, \"x\": \"a\"}", "x: invalid type"),
        ];
        for (text, want) in cases {
            let e = parse_versioned_json::<Doc>(text, p, 1)
                .unwrap_err()
                .to_string();
            assert!(e.contains("baselines/x/pr.json") && e.contains(want), "{e}");
        }
        let e = parse_versioned_json::<Doc>("{\"schema_version\": 7}", p, 1).unwrap_err();
        assert!(matches!(e, FileError::NewerSchema { found: 7, .. }), "{e}");
    }

    #[test]
    fn content_is_checked_and_neutralised() {
        let p = Path::new("d.json");
        let e = parse_versioned_json::<Doc>("{\"schema_version\": 1, \"x\": -1}", p, 1)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "d.json: x: is negative");
        let d: Doc = parse_versioned_json("{\"schema_version\": 1, \"x\": 1e9}", p, 1).unwrap();
        assert_eq!(d.x, 1e6);
    }

    #[test]
    fn other_kinds_are_told_by_their_keys() {
        let baseline = r#"{"schema_version": 2, "gpu_slug": "x", "provenance": {}, "shapes": []}"#;
        assert_eq!(other_kind(baseline), Some(FileKind::Baseline));
        let selftest = r#"{"config": "pr", "trials": 3, "conditions": []}"#;
        assert_eq!(other_kind(selftest), Some(FileKind::SelftestReport));
        let record = r#"{"schema_version": 1, "commit": "abc1234", "shape": "s", "p50_us": 1.0}"#;
        assert_eq!(other_kind(record), Some(FileKind::History));
        assert_eq!(
            other_kind(&format!("{record}\n{record}\n")),
            Some(FileKind::History)
        );
        for other in [
            r#"{"schema_version": 2, "shapes": [], "gate": {}}"#,
            "[1, 2]",
            "",
            "1.0\n2.0\n",
            "{\"commit\": ",
        ] {
            assert_eq!(other_kind(other), None, "{other}");
        }
        // Bounded: a deep text is nothing, read in linear time.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(other_kind(&deep), None);
    }

    #[test]
    fn depth_is_bounded_before_parsing() {
        assert!(!json_too_deep("{\"a\": [[1], {\"b\": [2]}]}", 4));
        assert!(json_too_deep("{\"a\": [[1], {\"b\": [2]}]}", 3));
        assert!(json_too_deep("[[[[1]]]]", 3));
        // Brackets inside strings, escaped quotes included, do not count.
        assert!(!json_too_deep(r#"{"s": "[[[[\"[[[[ \\\\ "}"#, 1));
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let start = std::time::Instant::now();
        let e = parse_versioned_json::<Doc>(&deep, Path::new("deep.json"), 1).unwrap_err();
        assert!(matches!(e, FileError::TooDeep { .. }), "{e}");
        assert!(e.to_string().contains("deep.json"), "{e}");
        assert!(start.elapsed().as_secs_f64() < 1.0);
    }

    #[test]
    fn reads_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.json");
        std::fs::write(&p, vec![b' '; 100]).unwrap();
        assert!(matches!(
            read_bounded(&p, 99),
            Err(FileError::TooLarge { limit: 99, .. })
        ));
        assert_eq!(read_bounded(&p, 100).unwrap().len(), 100);
        // An endless file is cut at the limit, not read forever.
        if Path::new("/dev/zero").exists() {
            let e = read_bounded(Path::new("/dev/zero"), 1 << 20).unwrap_err();
            assert!(e.to_string().contains("/dev/zero"), "{e}");
        }
    }
}
