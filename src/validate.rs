//! Checks of untrusted input. Every results and baseline file is treated as hostile: each
//! file type checks every value read from one ([`Untrusted`], implemented beside the type and
//! called by `files::parse_versioned_json` for every file it reads) with the [`Checker`]
//! here, which names the file, the key and the shape of anything it refuses.
//!
//! - Names that form paths or identify things (config names, GPU slugs, shape names, commits,
//!   hashes) must have their exact form; anything else is an error naming the file, the key
//!   and the shape.
//! - Labels (GPU name, driver versions, paths recorded in the file) are single-line printable
//!   text of bounded length.
//! - Free text (errors, warnings, the baseline `reason`) is bounded in length and, once
//!   loaded, has its control, bidirectional and zero-width characters replaced
//!   (`text::clean_text`), so nothing downstream (terminal table, Markdown) ever sees them.
//! - Counts (shapes, rounds, samples, warnings) are bounded, and every time is one a
//!   measurement can give ([`time`]: 1 ps to about 11.6 days).
//!
//! Knows only `text` and `stats`: the file types import it, never the other way round.

use std::collections::HashSet;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::{self, EnumAccess, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::stats::Summary;
use crate::text::is_line_break;
/// Text helpers of [`crate::text`], also under this path for the callers that still name
/// them here (`run::peer`, `github`, `report::markdown`).
pub(crate) use crate::text::{clip_text, is_hidden, quote, terminal_text};

/// Longest config name or GPU slug (each names a file or directory).
pub(crate) const MAX_NAME_LEN: usize = 128;
/// Shortest and longest commit id (abbreviated SHA-1 up to full SHA-256), in hex digits.
pub(crate) const MIN_COMMIT_LEN: usize = 7;
pub(crate) const MAX_COMMIT_LEN: usize = 64;
/// Longest content hash (SHA-256 is 64 hex digits).
pub(crate) const MAX_HASH_LEN: usize = 128;
/// Longest short label: versions, UUIDs, throttle reasons, compute capability.
pub(crate) const MAX_SHORT_LABEL_LEN: usize = 128;
/// Longest GPU name or path recorded in a file.
pub(crate) const MAX_LABEL_LEN: usize = 1024;
/// Longest `reason` of a baseline.
pub(crate) const MAX_REASON_LEN: usize = 4096;
/// Longest warning.
pub(crate) const MAX_WARNING_LEN: usize = 16 * 1024;
/// Longest error text (a compiler log can be long).
pub(crate) const MAX_ERROR_LEN: usize = 256 * 1024;
/// Most shapes in a config, a results file or a baseline.
pub const MAX_SHAPES: usize = 1000;
/// Most rounds of one shape (config rounds plus the extra rounds of inconclusive shapes).
pub(crate) const MAX_ROUNDS: usize = 1000;
/// Most samples in one round.
pub(crate) const MAX_SAMPLES_PER_ROUND: usize = 10_000;
/// Most samples of one shape, all rounds together.
pub(crate) const MAX_SAMPLES_PER_SHAPE: usize = 1_000_000;
/// Most warnings in a results file.
pub(crate) const MAX_WARNINGS: usize = 10_000;
/// Shortest and longest time in µs a file may hold: 1 ps (below a clock cycle of any
/// processor) and 10^12 µs (about 11.6 days). Within them every ratio of two times stays
/// within 10^±18, its percentage and a sum of a shape's million samples within 10^20, so no
/// statistic or label leaves f64's range (a file of 1e308 µs read as "+inf%" where the
/// ratio computed was 9.5e306).
pub const MIN_TIME_US: f64 = 1e-6;
pub const MAX_TIME_US: f64 = 1e12;
/// Most throttle reasons in one GPU state.
pub(crate) const MAX_THROTTLE_REASONS: usize = 64;

/// A file whose content was refused; the message names the file, the key and the shape.
#[derive(Debug, thiserror::Error)]
#[error("{}: {key}{}: {message}", path.display(), shape.as_deref().map(|s| format!(" of shape {s}")).unwrap_or_default())]
pub struct Rejected {
    pub path: PathBuf,
    /// The offending key, e.g. `shapes[2].samples_us[0][3]`.
    pub key: String,
    /// The shape it belongs to (its canonical name), if any.
    pub shape: Option<String>,
    /// What is wrong; attacker text appears only through [`quote`].
    pub message: String,
}

/// A file type read from disk that must be checked before use.
pub trait Untrusted {
    /// Checks every value; `path` names the file in the error.
    fn check(&self, path: &Path) -> Result<(), Rejected>;
    /// Replaces control, bidirectional and zero-width characters in free text (see
    /// [`clean_text`]); called after a successful [`Untrusted::check`].
    fn neutralise(&mut self);
}

/// Collects the location of a problem while a file is walked: the file and, inside a shape,
/// the shape's name.
pub(crate) struct Checker<'a> {
    path: &'a Path,
    shape: Option<String>,
}

/// The outcome of one check.
pub(crate) type Check = Result<(), Rejected>;

impl<'a> Checker<'a> {
    /// A checker for the file at `path`, inside the shape named `shape` if any.
    pub(crate) fn at(path: &'a Path, shape: Option<String>) -> Checker<'a> {
        Checker { path, shape }
    }

    /// A refusal at `key`; `message` is anything shown as one clause (a `String`, or an
    /// [`Invalid`] from the single-value checks).
    pub(crate) fn fail(&self, key: &str, message: impl fmt::Display) -> Rejected {
        Rejected {
            path: self.path.to_owned(),
            key: key.to_owned(),
            shape: self.shape.clone(),
            message: message.to_string(),
        }
    }

    pub(crate) fn name(&self, key: &str, value: &str) -> Check {
        path_component(value).map_err(|m| self.fail(key, m))
    }

    pub(crate) fn commit(&self, key: &str, value: &str) -> Check {
        commit(value).map_err(|m| self.fail(key, m))
    }

    pub(crate) fn hash(&self, key: &str, value: &str, allow_empty: bool) -> Check {
        if value.is_empty() && allow_empty {
            return Ok(());
        }
        if value.is_empty()
            || value.len() > MAX_HASH_LEN
            || !value.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(self.fail(
                key,
                format!(
                    "{} is not a hex digest (1 to {MAX_HASH_LEN} hex digits)",
                    quote(value)
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn label(&self, key: &str, value: &str, max: usize, allow_empty: bool) -> Check {
        label(value, max, allow_empty).map_err(|m| self.fail(key, m))
    }

    pub(crate) fn text(&self, key: &str, value: &str, max: usize) -> Check {
        if value.len() > max {
            return Err(self.fail(
                key,
                format!("{} bytes of text, more than the {max} allowed", value.len()),
            ));
        }
        Ok(())
    }

    pub(crate) fn count(&self, key: &str, n: usize, max: usize, what: &str) -> Check {
        if n > max {
            return Err(self.fail(key, format!("{n} {what}, more than the {max} allowed")));
        }
        Ok(())
    }

    pub(crate) fn finite(&self, key: &str, v: f64) -> Check {
        if !v.is_finite() {
            return Err(self.fail(key, format!("{v} is not a finite number")));
        }
        Ok(())
    }

    /// A time in µs ([`time`]).
    pub(crate) fn time(&self, key: &str, v: f64) -> Check {
        time(v).map_err(|m| self.fail(key, m))
    }

    /// A quantity that is not a time (an energy in mJ): positive and finite.
    pub(crate) fn positive(&self, key: &str, v: f64) -> Check {
        if !(v.is_finite() && v > 0.0) {
            return Err(self.fail(key, format!("{v} is not a positive finite number")));
        }
        Ok(())
    }

    /// Rounds of samples: bounded, no empty round, every value a [`time`].
    pub(crate) fn samples(&self, key: &str, rounds: &[Vec<f64>]) -> Check {
        self.count(key, rounds.len(), MAX_ROUNDS, "rounds")?;
        let mut total = 0usize;
        for (r, round) in rounds.iter().enumerate() {
            let rk = format!("{key}[{r}]");
            if round.is_empty() {
                return Err(self.fail(&rk, "is an empty round; every round holds samples"));
            }
            self.count(&rk, round.len(), MAX_SAMPLES_PER_ROUND, "samples")?;
            total += round.len();
            for (i, &v) in round.iter().enumerate() {
                self.time(&format!("{rk}[{i}]"), v)?;
            }
        }
        self.count(key, total, MAX_SAMPLES_PER_SHAPE, "samples in all")
    }

    /// A summary of samples: its order statistics and mean are [`time`]s, its spread 0 to
    /// [`MAX_TIME_US`].
    pub(crate) fn summary(&self, key: &str, s: &Summary) -> Check {
        for (k, v) in [
            ("p50", s.p50),
            ("p90", s.p90),
            ("mean", s.mean),
            ("min", s.min),
            ("max", s.max),
        ] {
            self.time(&format!("{key}.{k}"), v)?;
        }
        if !(0.0..=MAX_TIME_US).contains(&s.stdev) {
            return Err(self.fail(
                &format!("{key}.stdev"),
                format!(
                    "{} is not a spread of times (0 to {MAX_TIME_US:e} µs)",
                    number(s.stdev)
                ),
            ));
        }
        Ok(())
    }

    /// A shape's recorded name is the canonical name of its parameters, `expected`.
    pub(crate) fn shape_name(&self, key: &str, name: &str, expected: &str) -> Check {
        if name != expected {
            return Err(self.fail(
                key,
                format!(
                    "{} is not the name of the shape's parameters ({expected})",
                    quote(name)
                ),
            ));
        }
        Ok(())
    }

    /// `item` (a shape's identity) was not seen before in this file.
    pub(crate) fn unique<T: Eq + Hash>(&self, seen: &mut HashSet<T>, key: &str, item: T) -> Check {
        if !seen.insert(item) {
            return Err(self.fail(
                key,
                "appears twice (same parameters and cache mode)".to_owned(),
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Single values

/// Why a single value was refused: one clause, without the key or the file (a
/// [`Checker`] adds those, as do `config`'s and `baseline`'s own errors). Typed so that
/// callers can tell a name that cannot be a path from a label that is merely too long,
/// while every caller that only shows it keeps the same sentence.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Invalid {
    #[error(
        "{} must be 1 to {MAX_NAME_LEN} letters, digits, '-', '_' or '.', not starting with '.' (it names the baseline file)",
        quote(name)
    )]
    ConfigName { name: String },
    #[error(
        "{} cannot be a file name: only 1 to {MAX_NAME_LEN} letters, digits, '-', '_' or '.', not starting with '.'",
        quote(name)
    )]
    PathComponent { name: String },
    #[error(
        "{} is not a time: µs must be finite and from {MIN_TIME_US:e} (1 ps) to {MAX_TIME_US:e} (about 11.6 days)",
        number(*value)
    )]
    Time { value: f64 },
    #[error(
        "{} is not a commit id ({MIN_COMMIT_LEN} to {MAX_COMMIT_LEN} hex digits)",
        quote(value)
    )]
    Commit { value: String },
    #[error("is empty")]
    EmptyLabel,
    #[error("{len} bytes, more than the {max} allowed")]
    LabelTooLong { len: usize, max: usize },
    #[error("{} contains the control character U+{:04X}", quote(value), *character as u32)]
    HiddenCharacter { value: String, character: char },
}

/// A config name: letters, digits, '-', '_', '.', not starting with '.', 1 to
/// [`MAX_NAME_LEN`] characters (it names the baseline file).
pub fn config_name(name: &str) -> Result<(), Invalid> {
    path_component(name).map_err(|_| Invalid::ConfigName {
        name: name.to_owned(),
    })
}

/// A single file or directory name that cannot leave its directory: 1 to [`MAX_NAME_LEN`]
/// ASCII letters, digits, '-', '_' or '.', not starting with '.' (so never `.` or `..`,
/// never absolute, never a separator).
pub(crate) fn path_component(name: &str) -> Result<(), Invalid> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(Invalid::PathComponent {
            name: name.to_owned(),
        })
    }
}

/// `v` as a reader would write it: plain where that is short, in exponent form where plain
/// would run to hundreds of digits (1e308, 1e-300).
pub(crate) fn number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e16).contains(&v.abs()) {
        v.to_string()
    } else {
        format!("{v:e}")
    }
}

/// A time in µs: finite, from [`MIN_TIME_US`] to [`MAX_TIME_US`] (so positive).
pub fn time(v: f64) -> Result<(), Invalid> {
    if (MIN_TIME_US..=MAX_TIME_US).contains(&v) {
        Ok(())
    } else {
        Err(Invalid::Time { value: v })
    }
}

/// A commit id: [`MIN_COMMIT_LEN`] to [`MAX_COMMIT_LEN`] hex digits.
pub fn commit(value: &str) -> Result<(), Invalid> {
    let ok = (MIN_COMMIT_LEN..=MAX_COMMIT_LEN).contains(&value.len())
        && value.bytes().all(|b| b.is_ascii_hexdigit());
    if ok {
        Ok(())
    } else {
        Err(Invalid::Commit {
            value: value.to_owned(),
        })
    }
}

/// Single-line printable text of at most `max` bytes, with no control, bidirectional or
/// zero-width characters.
pub(crate) fn label(value: &str, max: usize, allow_empty: bool) -> Result<(), Invalid> {
    if value.is_empty() && !allow_empty {
        return Err(Invalid::EmptyLabel);
    }
    if value.len() > max {
        return Err(Invalid::LabelTooLong {
            len: value.len(),
            max,
        });
    }
    if let Some(character) = value.chars().find(|&c| is_hidden(c) || is_line_break(c)) {
        return Err(Invalid::HiddenCharacter {
            value: value.to_owned(),
            character,
        });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Values checked while they are read

/// Reads a `T` and turns it into a `U` with `check` (which says what is wrong) inside the
/// reading of the value itself, so that the deserializer reports a refused value where it
/// stands: serde_yaml with its path and line (`gate.alpha: must be ... at line 3 column
/// 10`), serde_json with its line (and `files` the path, from serde_path_to_error). For
/// `#[serde(deserialize_with)]` and the `Deserialize` of checked types; a check run after
/// `T::deserialize` returned (as `#[serde(try_from)]` does) would be reported at the
/// enclosing collection instead.
pub(crate) fn checked<'de, D, T, U, M>(
    d: D,
    check: impl FnOnce(T) -> Result<U, M>,
) -> Result<U, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
    M: fmt::Display,
{
    d.deserialize_any(Within {
        check,
        read: PhantomData::<T>,
    })
}

/// As [`checked`], for text: the value is read as a string whatever it looks like (`name: 2024`
/// is the name "2024"), as serde_yaml reads a `String`.
pub(crate) fn checked_text<'de, D, U, M>(
    d: D,
    check: impl FnOnce(String) -> Result<U, M>,
) -> Result<U, D::Error>
where
    D: Deserializer<'de>,
    M: fmt::Display,
{
    d.deserialize_string(Within {
        check,
        read: PhantomData::<String>,
    })
}

/// The visitor of [`checked`]: whatever the value is, `T` reads it and `check` judges it.
struct Within<T, F> {
    check: F,
    read: PhantomData<T>,
}

impl<'de, T, U, M, F> Within<T, F>
where
    T: Deserialize<'de>,
    F: FnOnce(T) -> Result<U, M>,
    M: fmt::Display,
{
    fn finish<E: de::Error>(self, read: Result<T, E>) -> Result<U, E> {
        (self.check)(read?).map_err(E::custom)
    }
}

impl<'de, T, U, M, F> Visitor<'de> for Within<T, F>
where
    T: Deserialize<'de>,
    F: FnOnce(T) -> Result<U, M>,
    M: fmt::Display,
{
    type Value = U;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<U, E> {
        self.finish(T::deserialize(v.into_deserializer()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<U, E> {
        self.finish(T::deserialize(v.into_deserializer()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<U, E> {
        self.finish(T::deserialize(v.into_deserializer()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<U, E> {
        self.finish(T::deserialize(v.into_deserializer()))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<U, E> {
        self.finish(T::deserialize(v.into_deserializer()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<U, E> {
        self.finish(T::deserialize(v.into_deserializer()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<U, E> {
        self.finish(T::deserialize(v.into_deserializer()))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<U, E> {
        self.finish(T::deserialize(de::value::BytesDeserializer::new(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<U, E> {
        self.finish(T::deserialize(().into_deserializer()))
    }

    fn visit_none<E: de::Error>(self) -> Result<U, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<U, D::Error> {
        self.finish(T::deserialize(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<U, D::Error> {
        self.finish(T::deserialize(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<U, A::Error> {
        self.finish(T::deserialize(de::value::SeqAccessDeserializer::new(seq)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<U, A::Error> {
        self.finish(T::deserialize(de::value::MapAccessDeserializer::new(map)))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<U, A::Error> {
        self.finish(T::deserialize(de::value::EnumAccessDeserializer::new(data)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_are_hex_of_bounded_length() {
        assert!(commit("0123abc").is_ok());
        assert!(commit(&"f".repeat(64)).is_ok());
        assert!(commit("ABCDEF0").is_ok());
        for bad in [
            "",
            "012345",
            "0123abg",
            &"f".repeat(65),
            "éééééééé",
            "0123abc\n",
        ] {
            assert!(commit(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn path_components_cannot_leave_their_directory() {
        for ok in ["pr", "nightly-2", "a.b_c", "nvidia-h200"] {
            assert!(path_component(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "/etc",
            "a/b",
            "a\\b",
            ".hidden",
            "a b",
            "C:x",
            "é",
            &"a".repeat(MAX_NAME_LEN + 1),
        ] {
            assert!(path_component(bad).is_err(), "{bad:?}");
        }
        assert!(
            config_name("x/y")
                .unwrap_err()
                .to_string()
                .contains("letters, digits")
        );
    }

    #[test]
    fn a_summarys_figures_are_times_and_its_spread_one_of_times() {
        let ok = Summary {
            n: 3,
            p50: 10.0,
            p90: 11.0,
            mean: 10.2,
            min: 9.5,
            max: 11.2,
            stdev: 0.4,
        };
        let path = Path::new("r.json");
        let c = Checker::at(path, Some("b1h8s512d64_f16".into()));
        assert!(c.summary("shapes[0].summary", &ok).is_ok());
        assert!(c.summary("s", &Summary { stdev: 0.0, ..ok }).is_ok());
        for (bad, key) in [
            (Summary { p50: 1e308, ..ok }, "s.p50"),
            (Summary { min: 1e-300, ..ok }, "s.min"),
            (
                Summary {
                    mean: f64::NAN,
                    ..ok
                },
                "s.mean",
            ),
            (Summary { stdev: -0.1, ..ok }, "s.stdev"),
            (Summary { stdev: 1e300, ..ok }, "s.stdev"),
            (
                Summary {
                    stdev: f64::INFINITY,
                    ..ok
                },
                "s.stdev",
            ),
        ] {
            let e = c.summary("s", &bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!("{key} of shape b1h8s512d64_f16: ")),
                "{e}"
            );
        }
    }

    #[test]
    fn a_time_is_one_a_measurement_can_give() {
        for ok in [MIN_TIME_US, 0.5, 14.35, 1648.0, MAX_TIME_US] {
            assert!(time(ok).is_ok(), "{ok}");
        }
        for bad in [
            0.0,
            -0.0,
            -3.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            1e-300,
            9.9e-7,
            1.01e12,
            1e308,
            f64::MAX,
        ] {
            assert!(time(bad).is_err(), "{bad}");
        }
        assert_eq!(
            time(-3.5).unwrap_err().to_string().split(' ').next(),
            Some("-3.5")
        );
        assert_eq!(
            time(1e-300).unwrap_err().to_string().split(' ').next(),
            Some("1e-300")
        );
        assert_eq!(
            time(f64::NAN).unwrap_err().to_string().split(' ').next(),
            Some("NaN")
        );
        assert_eq!(
            time(1e308).unwrap_err().to_string(),
            "1e308 is not a time: µs must be finite and from 1e-6 (1 ps) to 1e12 (about 11.6 days)"
        );
    }

    #[test]
    fn labels_are_one_printable_line() {
        assert!(label("NVIDIA H200", 64, false).is_ok());
        assert!(label("", 64, true).is_ok());
        assert!(label("", 64, false).is_err());
        assert!(label("a\nb", 64, false).is_err());
        assert!(label("a\u{202E}b", 64, false).is_err());
        assert!(label("a\u{1b}[31m", 64, false).is_err());
        assert!(label(&"x".repeat(65), 64, false).is_err());
    }
}
