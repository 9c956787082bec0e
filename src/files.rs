//! Reading and writing the JSON files ci-gate keeps: atomic writes, and reads that name the
//! file and refuse schema versions this build does not know.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

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
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to
/// disk, then renamed over the target. A crash leaves either the old file or the new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
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
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), FileError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| FileError::Invalid {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// Reads a versioned JSON file: the `schema_version` is checked before the rest is parsed, so
/// a newer file is reported as such rather than as a confusing missing field.
pub fn read_versioned_json<T: DeserializeOwned>(
    path: &Path,
    supported: u32,
) -> Result<T, FileError> {
    let text = std::fs::read_to_string(path).map_err(|cause| FileError::Read {
        path: path.to_owned(),
        cause,
    })?;
    parse_versioned_json(&text, path, supported)
}

/// Parses versioned JSON text; `path` names it in errors.
pub fn parse_versioned_json<T: DeserializeOwned>(
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
    serde_json::from_str(text).map_err(|e| invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Doc {
        schema_version: u32,
        x: f64,
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
            ("{\"schema_version\": 1, \"x\": \"a\"}", "invalid type"),
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
}
