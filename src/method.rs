//! The measuring method: what decides what a time means, named so that only like is compared
//! with like (asv versions each benchmark by its code and drops results of another version;
//! this is the same idea for the harness).
//!
//! A time from ci-gate depends on the kernel under test and on the harness around it: the
//! harness kernels (`kernels/util.cu`: fills, the input mixture, poison, checks;
//! `kernels/reference.cu`), the launch and input scheme (a q of its own per launch, its own
//! scale, the K/V sets of the cache mode, the rows checked) and the timing scheme (graphs,
//! lead-in spin, events, duty cycle). The first two are hashed from the sources built into
//! this binary; the scheme is [`METHOD_VERSION`], bumped by hand whenever a change to the
//! Rust side changes what a timing means (docs/MEASURING.md, "The method").
//!
//! Cost: one SHA-256 over ~40 KB of source, once per process.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The launch/input/timing scheme's version. Bump it (and say why in docs/PERF.md) when a
/// change makes a time of the same kernel mean something else: what each launch reads,
/// how many launches a sample holds, what is inside the timed region.
///
/// History: 1 — one q per round (before 2026-11-27); 2 — a q and a scale of its own per
/// launch (issue 29); 3 — per-launch inputs from the documented mixture, the first replay
/// checked and the launch parameters re-set before every replay (issue 36).
pub const METHOD_VERSION: u32 = 3;

/// What a file that names no method was measured by, as it is shown.
pub const UNKNOWN: &str = "unknown (recorded before ci-gate named its method)";

/// The harness kernels whose text is part of the method.
const HARNESS: [(&str, &str); 2] = [
    ("util.cu", include_str!("../kernels/util.cu")),
    ("reference.cu", include_str!("../kernels/reference.cu")),
];

/// A method as results and baseline files record it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Method {
    /// [`METHOD_VERSION`] of the binary that measured.
    pub version: u32,
    /// `m<version>-<first 12 hex digits of the SHA-256 of the version and the harness>`.
    pub fingerprint: String,
}

impl Method {
    /// This binary's method.
    pub fn current() -> Method {
        let mut h = Sha256::new();
        h.update(format!("ci-gate method {METHOD_VERSION}\n").as_bytes());
        for (name, text) in HARNESS {
            h.update(format!("{name} {}\n", text.len()).as_bytes());
            h.update(text.as_bytes());
        }
        let digest = hex::encode(h.finalize());
        Method {
            version: METHOD_VERSION,
            fingerprint: format!("m{METHOD_VERSION}-{}", &digest[..12]),
        }
    }

    /// Whether `a` and `b` are one method: both named, and the same. A method a file does not
    /// name (`None`: written before ci-gate named its method) is the same as no other, not
    /// even another unnamed one: nothing shows that two such files were measured alike.
    pub fn same(a: Option<&Method>, b: Option<&Method>) -> bool {
        matches!((a, b), (Some(a), Some(b)) if a == b)
    }

    /// How a method a file records is shown: its fingerprint, or [`UNKNOWN`] where the file
    /// names none. A fingerprint that is not well formed is never shown (files are checked
    /// on reading; this is the last guard).
    pub fn describe(method: Option<&Method>) -> String {
        match method {
            Some(m) if Method::is_valid_fingerprint(&m.fingerprint) => m.fingerprint.clone(),
            Some(_) => "malformed".to_owned(),
            None => UNKNOWN.to_owned(),
        }
    }

    /// Whether `fingerprint` is well formed (`m<digits>-<12 lowercase hex>`): a file's value
    /// is shown only when it is.
    pub fn is_valid_fingerprint(fingerprint: &str) -> bool {
        let Some(rest) = fingerprint.strip_prefix('m') else {
            return false;
        };
        let Some((version, digest)) = rest.split_once('-') else {
            return false;
        };
        !version.is_empty()
            && version.len() <= 6
            && version.bytes().all(|b| b.is_ascii_digit())
            && digest.len() == 12
            && digest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&Method::describe(Some(self)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_method_is_well_formed_and_stable_within_a_build() {
        let m = Method::current();
        assert_eq!(m.version, METHOD_VERSION);
        assert!(Method::is_valid_fingerprint(&m.fingerprint), "{m:?}");
        assert_eq!(m, Method::current());
        assert!(m.fingerprint.starts_with(&format!("m{METHOD_VERSION}-")));
    }

    #[test]
    fn malformed_fingerprints_are_refused() {
        for bad in [
            "",
            "m",
            "m3",
            "m3-",
            "3-0123456789ab",
            "m3-0123456789aB",
            "m3-0123456789abc",
            "mx-0123456789ab",
            "m3-01234567\u{202e}9ab",
            "m1234567-0123456789ab",
        ] {
            assert!(!Method::is_valid_fingerprint(bad), "{bad:?}");
        }
        assert!(Method::is_valid_fingerprint("m2-0123456789ab"));
    }

    #[test]
    fn only_two_named_equal_methods_are_one() {
        let m = |fp: &str| Method {
            version: 3,
            fingerprint: fp.into(),
        };
        let (a, b) = (m("m3-0123456789ab"), m("m3-fedcba987654"));
        assert!(Method::same(Some(&a), Some(&a.clone())));
        assert!(!Method::same(Some(&a), Some(&b)));
        assert!(!Method::same(Some(&a), None));
        assert!(!Method::same(None, Some(&a)));
        assert!(!Method::same(None, None));
        assert_eq!(Method::describe(None), UNKNOWN);
        assert_eq!(a.to_string(), "m3-0123456789ab");
        assert_eq!(m("m3-\u{1b}[31m").to_string(), "malformed");
    }
}
