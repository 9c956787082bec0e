//! The leaderboard (`--leaderboard FILE`): every accepted candidate, in the order accepted,
//! each with its source (so that a later evaluator can measure against it), defines,
//! commit, the figures of the measurement that found it and of its confirmations, the GPU,
//! the method and the config. Each entry was accepted against the one before it (the base
//! for the first), so the last entry is the best.
//!
//! The file is the loop owner's, but read as untrusted: every string is held to its
//! character set, every hash is checked against the text it names, and a file that fails
//! any check is an error naming the file and key, never replaced. It is written atomically
//! (a crash leaves the old file or the new one).
//!
//! Cost: reading and writing are linear in the file (bounded by [`MAX_BYTES`]); an entry
//! holds its source (the shipped kernel is ~50 KB).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::protocol::{Confirmation, GpuLine, ReferenceLine, ShapeLine, is_valid_id};
use super::source::{KernelText, TooLarge};
use crate::method::Method;
use crate::results::ConfigInfo;

/// The version of the file format.
pub const LEADERBOARD_VERSION: u32 = 1;

/// The largest leaderboard file read (about 1000 entries of the shipped kernel's size).
pub const MAX_BYTES: u64 = 64 << 20;

/// A leaderboard file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Leaderboard {
    pub schema_version: u32,
    pub entries: Vec<Entry>,
}

/// One accepted candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// 1 for the first accepted.
    pub rank: u32,
    pub id: String,
    pub source_sha256: String,
    pub kernel_sha256: String,
    pub defines: Vec<String>,
    pub commit: Option<String>,
    pub accepted_at: DateTime<Utc>,
    /// What it was accepted against (the previous best, or the base).
    pub against: ReferenceLine,
    /// The measurement that found it (against the reference of that run).
    pub shapes: Vec<ShapeLine>,
    /// The confirming measurements against `against`, hot and cold cache.
    pub confirmations: Vec<Confirmation>,
    pub gpu: GpuLine,
    pub method: Method,
    pub config: ConfigInfo,
    /// The source as submitted (its defines apart).
    pub source: String,
}

/// A leaderboard file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LeaderboardError {
    #[error("cannot read the leaderboard {path}: {cause}")]
    Read {
        path: PathBuf,
        cause: crate::files::FileError,
    },
    #[error("the leaderboard {path} is not valid at {key}: {why} (it is left as it is)")]
    Invalid {
        path: PathBuf,
        key: String,
        why: String,
    },
    #[error("cannot write the leaderboard {path}: {cause}")]
    Write {
        path: PathBuf,
        cause: crate::files::FileError,
    },
}

impl Leaderboard {
    /// Reads `path`; an absent file is an empty leaderboard (written on the first
    /// acceptance).
    pub fn load(path: &Path) -> Result<Leaderboard, LeaderboardError> {
        if std::fs::symlink_metadata(path).is_err() {
            return Ok(Leaderboard {
                schema_version: LEADERBOARD_VERSION,
                entries: Vec::new(),
            });
        }
        let bytes = crate::files::read_bounded(path, MAX_BYTES).map_err(|cause| {
            LeaderboardError::Read {
                path: path.to_owned(),
                cause,
            }
        })?;
        Leaderboard::parse(&bytes, path)
    }

    /// Parses and checks a leaderboard's bytes (`path` names it in errors).
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Leaderboard, LeaderboardError> {
        let invalid = |key: &str, why: String| LeaderboardError::Invalid {
            path: path.to_owned(),
            key: key.to_owned(),
            why: crate::text::terminal_text(&why),
        };
        let text = std::str::from_utf8(bytes).map_err(|_| invalid(".", "not UTF-8".into()))?;
        if crate::files::json_too_deep(text, 16) {
            return Err(invalid(".", "nested more than 16 deep".into()));
        }
        let board: Leaderboard = serde_json::from_str(text).map_err(|e| {
            let key = crate::files::json_key::<Leaderboard>(text).unwrap_or_else(|| ".".into());
            invalid(&key, e.to_string())
        })?;
        if board.schema_version != LEADERBOARD_VERSION {
            return Err(invalid(
                "schema_version",
                format!(
                    "version {} (this ci-gate reads {LEADERBOARD_VERSION})",
                    board.schema_version
                ),
            ));
        }
        for (i, e) in board.entries.iter().enumerate() {
            e.check(i).map_err(|(key, why)| invalid(&key, why))?;
        }
        Ok(board)
    }

    /// Writes the file atomically.
    pub fn save(&self, path: &Path) -> Result<(), LeaderboardError> {
        crate::files::write_json(path, self).map_err(|cause| LeaderboardError::Write {
            path: path.to_owned(),
            cause,
        })
    }

    /// The best entry: the last accepted.
    pub fn best(&self) -> Option<&Entry> {
        self.entries.last()
    }
}

fn hex64(v: &str) -> bool {
    v.len() == 64
        && v.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Entry {
    /// The entry's text as compiled (its source with its defines).
    pub(crate) fn kernel_text(&self) -> Result<KernelText, TooLarge> {
        KernelText::new(self.source.clone(), &self.defines)
    }

    /// Checks entry `i` (its rank, strings and hashes); the error is (key, why).
    fn check(&self, i: usize) -> Result<(), (String, String)> {
        let key = |k: &str| format!("entries[{i}].{k}");
        let fail = |k: &str, why: String| Err((key(k), why));
        if self.rank as usize != i + 1 {
            return fail("rank", format!("{} where {} follows", self.rank, i + 1));
        }
        if !is_valid_id(&self.id) {
            return fail(
                "id",
                format!("{} is not an id", crate::text::quote(&self.id)),
            );
        }
        for d in &self.defines {
            if let Some(why) = crate::config::define_error(d) {
                return fail("defines", format!("{} {why}", crate::text::quote(d)));
            }
        }
        if let Some(c) = &self.commit {
            crate::validate::commit(c).map_err(|why| (key("commit"), why.to_string()))?;
        }
        for (k, v) in [
            ("source_sha256", &self.source_sha256),
            ("kernel_sha256", &self.kernel_sha256),
            ("against.kernel_sha256", &self.against.kernel_sha256),
        ] {
            if !hex64(v) {
                return fail(k, "not a SHA-256 in lowercase hex".into());
            }
        }
        let text = self
            .kernel_text()
            .map_err(|why| (key("source"), why.to_string()))?;
        if text.source_sha256 != self.source_sha256 || text.kernel_sha256 != self.kernel_sha256 {
            return fail(
                "source",
                "its SHA-256 (with its defines) is not the one recorded".into(),
            );
        }
        if !Method::is_valid_fingerprint(&self.method.fingerprint) {
            return fail("method.fingerprint", "not a method fingerprint".into());
        }
        for (k, v) in [
            ("gpu.name", &self.gpu.name),
            ("gpu.slug", &self.gpu.slug),
            ("config.name", &self.config.name),
        ] {
            crate::validate::label(v, 128, false).map_err(|why| (key(k), why.to_string()))?;
        }
        if let Some(id) = &self.against.id
            && !is_valid_id(id)
        {
            return fail("against.id", "not an id".into());
        }
        let figures = self
            .shapes
            .iter()
            .chain(self.confirmations.iter().flat_map(|c| &c.shapes));
        for s in figures {
            crate::validate::label(&s.name, 128, false)
                .map_err(|why| (key("shapes"), why.to_string()))?;
            let numbers = [s.ratio, s.interval.map(|x| x.low)];
            if numbers.iter().flatten().any(|x| !x.is_finite() || *x < 0.0) {
                return fail(
                    "shapes",
                    format!("{}: a ratio that is not a number", s.name),
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::protocol::ReferenceKind;

    pub(crate) fn entry(rank: u32, source: &str, defines: &[&str]) -> Entry {
        let defines: Vec<String> = defines.iter().map(|d| d.to_string()).collect();
        let t = KernelText::new(source.into(), &defines).unwrap();
        Entry {
            rank,
            id: format!("c{rank}"),
            source_sha256: t.source_sha256,
            kernel_sha256: t.kernel_sha256,
            defines,
            commit: None,
            accepted_at: Utc::now(),
            against: ReferenceLine {
                kind: ReferenceKind::Base,
                id: None,
                kernel_sha256: "0".repeat(64),
            },
            shapes: Vec::new(),
            confirmations: Vec::new(),
            gpu: GpuLine {
                name: "Simulated GPU".into(),
                slug: "simulated-gpu".into(),
                uuid: None,
                device: 0,
                simulated: true,
            },
            method: Method::current(),
            config: ConfigInfo {
                name: "eval".into(),
                path: "configs/eval.yaml".into(),
                hash: "0".repeat(64),
                defines: Vec::new(),
            },
            source: source.into(),
        }
    }

    #[test]
    fn a_leaderboard_round_trips_and_its_best_is_the_last_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("board.json");
        let empty = Leaderboard::load(&path).unwrap();
        assert!(empty.entries.is_empty() && empty.best().is_none());
        let board = Leaderboard {
            schema_version: LEADERBOARD_VERSION,
            entries: vec![entry(1, "int a;", &[]), entry(2, "int a;", &["BN=64"])],
        };
        board.save(&path).unwrap();
        let back = Leaderboard::load(&path).unwrap();
        assert_eq!(back, board);
        assert_eq!(back.best().unwrap().id, "c2");
        assert!(
            back.best()
                .unwrap()
                .kernel_text()
                .unwrap()
                .text
                .contains("#define BN 64")
        );
    }

    #[test]
    fn a_tampered_leaderboard_is_refused_by_key_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("board.json");
        let mut board = Leaderboard {
            schema_version: LEADERBOARD_VERSION,
            entries: vec![entry(1, "int a;", &[])],
        };
        board.entries[0].source = "int b;".into();
        board.save(&path).unwrap();
        let before = std::fs::read(&path).unwrap();
        let e = Leaderboard::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("board.json") && e.contains("entries[0].source"),
            "{e}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
        for (change, key) in [
            (r#""rank": 1"#, r#""rank": 3"#),
            (r#""id": "c1""#, r#""id": "c 1""#),
            (r#""defines": []"#, r#""defines": ["-arch=sm_80"]"#),
        ] {
            let good = Leaderboard {
                schema_version: LEADERBOARD_VERSION,
                entries: vec![entry(1, "int a;", &[])],
            };
            good.save(&path).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.contains(change), "{change} not in {text}");
            std::fs::write(&path, text.replacen(change, key, 1)).unwrap();
            let e = Leaderboard::load(&path);
            assert!(e.is_err(), "{key} was accepted");
        }
        std::fs::write(&path, b"{\"schema_version\": 2, \"entries\": []}").unwrap();
        let e = Leaderboard::load(&path).unwrap_err().to_string();
        assert!(e.contains("version 2"), "{e}");
        std::fs::write(&path, b"{\"schema_version\": 1, \"entries\": [], \"x\": 1}").unwrap();
        let e = Leaderboard::load(&path).unwrap_err().to_string();
        assert!(e.contains("unknown field"), "{e}");
    }

    #[test]
    fn an_entry_whose_define_names_a_file_is_refused() {
        // Its hashes agree with its source and defines: only the define rule can refuse it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("board.json");
        let board = Leaderboard {
            schema_version: LEADERBOARD_VERSION,
            entries: vec![entry(1, "int a;", &["H=__has_include"])],
        };
        board.save(&path).unwrap();
        let e = Leaderboard::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("entries[0].defines") && e.contains("names `__has_include`"),
            "{e}"
        );
    }
}
