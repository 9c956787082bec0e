//! Plain sample files: one time per line, in microseconds; lines starting with `#` are
//! comments. Blank lines separate rounds (values measured together, e.g. on one set of
//! buffers; several blank lines in a row are one separator); a file without blank lines
//! between values holds one value per round, each an independent unit. So one stray blank
//! line makes a file of values a file of two rounds: `compare` states which kind each file
//! was read as and refuses a file of rounds against one of values. Every rejected value is an error naming the file and line (a sample file
//! has no keys: its lines are its values), with text from the file shown as `validate`'s
//! checks show it ([`quote`]).

use std::path::{Path, PathBuf};

use crate::text::quote;
use crate::validate;

/// A sample file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SampleFileError {
    #[error("{path}:{line}: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
}

/// Most values a sample file may hold: a million values compare in well under a second
/// (docs/PERF.md), and the limit keeps a hostile file from costing more.
pub const MAX_SAMPLE_VALUES: usize = 1_000_000;

fn too_many(path: &Path, line: usize) -> SampleFileError {
    SampleFileError::Line {
        path: path.to_owned(),
        line,
        message: format!(
            "more than {MAX_SAMPLE_VALUES} samples; a sample file holds at most that many"
        ),
    }
}

/// A parsed sample file: its rounds, and whether the file marked any (blank lines between
/// values). A file without rounds holds i.i.d. values, one per round here.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleFile {
    pub rounds: Vec<Vec<f64>>,
    /// The file separates rounds with blank lines.
    pub has_rounds: bool,
}

/// Parses sample text (see the module docs); `path` names it in errors. At least two values
/// are required. Cost: O(n) for n values.
pub fn parse_sample_file(text: &str, path: &Path) -> Result<SampleFile, SampleFileError> {
    let rounds = parse_sample_rounds(text, path)?;
    // Values of a file without rounds come back one per round; a file with rounds has at
    // least one round of several values or several blank-line separated blocks — and a
    // file of single-value blocks is i.i.d. values too.
    let has_rounds = rounds.iter().any(|r| r.len() > 1);
    Ok(SampleFile { rounds, has_rounds })
}

/// Parses sample text into rounds (see the module docs); `path` names it in errors. At
/// least two rounds are required, since rounds are the units the statistics work on.
pub(crate) fn parse_sample_rounds(
    text: &str,
    path: &Path,
) -> Result<Vec<Vec<f64>>, SampleFileError> {
    let mut rounds: Vec<Vec<f64>> = vec![Vec::new()];
    let mut values = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            if rounds.last().is_some_and(|r| !r.is_empty()) {
                rounds.push(Vec::new());
            }
            continue;
        }
        if values == MAX_SAMPLE_VALUES {
            return Err(too_many(path, i + 1));
        }
        let v = parse_value(line, path, i + 1)?;
        values += 1;
        if let Some(r) = rounds.last_mut() {
            r.push(v);
        }
    }
    rounds.retain(|r| !r.is_empty());
    match (values, rounds.len()) {
        (0, _) => Err(SampleFileError::File {
            path: path.to_owned(),
            message: "no samples (the file is empty)".into(),
        }),
        (1, _) => Err(SampleFileError::File {
            path: path.to_owned(),
            message: "only one sample; at least 2 are needed to compare".into(),
        }),
        // One block: every value is its own unit.
        (_, 1) => Ok(rounds.concat().into_iter().map(|v| vec![v]).collect()),
        _ => Ok(rounds),
    }
}

fn parse_value(line: &str, path: &Path, line_no: usize) -> Result<f64, SampleFileError> {
    let at = |message: String| SampleFileError::Line {
        path: path.to_owned(),
        line: line_no,
        message,
    };
    // Text from the file is shown only through `quote`; a line that parsed as a number is
    // plain ASCII.
    let v: f64 = line.parse().map_err(|_| {
        at(format!(
            "{} is not a number (one time in µs per line)",
            quote(line)
        ))
    })?;
    if !v.is_finite() {
        return Err(at(format!("{line} is not a finite time")));
    }
    if v <= 0.0 {
        return Err(at(format!("{line} is not a positive time")));
    }
    // The range every file's times are held to: beyond it a ratio or a percentage leaves
    // f64's range and a table would print what was not computed.
    validate::time(v).map_err(|e| at(e.to_string()))?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values of a sample file, in order.
    fn parse(t: &str) -> Result<Vec<f64>, String> {
        parse_sample_file(t, Path::new("base.txt"))
            .map(|f| f.rounds.concat())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn reads_values_skipping_comments_and_blanks() {
        assert_eq!(
            parse("# µs\n9.1\n\n 9.3 \n1e1\n").unwrap(),
            vec![9.1, 9.3, 10.0]
        );
        let f = parse_sample_file("# µs\n9.1\n\n 9.3 \n1e1\n", Path::new("b")).unwrap();
        assert_eq!(f.rounds, vec![vec![9.1], vec![9.3, 10.0]]);
        assert!(f.has_rounds);
    }

    #[test]
    fn the_number_of_values_is_bounded() {
        let ok = "1.5\n".repeat(MAX_SAMPLE_VALUES);
        assert_eq!(parse(&ok).unwrap().len(), MAX_SAMPLE_VALUES);
        let e = parse(&format!("{ok}# a comment\n\n2.5\n")).unwrap_err();
        assert!(
            e.starts_with(&format!("base.txt:{}: more than", MAX_SAMPLE_VALUES + 3)),
            "{e}"
        );
        let p = Path::new("r.txt");
        let e = parse_sample_rounds(&format!("{ok}\n2.5\n"), p)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("r.txt:{}: more than", MAX_SAMPLE_VALUES + 2)),
            "{e}"
        );
    }

    #[test]
    fn blank_lines_separate_rounds() {
        let p = Path::new("s.txt");
        assert_eq!(
            parse_sample_rounds("1\n2\n\n\n3\n# c\n4\n\n5\n\n", p).unwrap(),
            vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0]]
        );
        // One block: one value per round.
        assert_eq!(
            parse_sample_rounds("\n1\n2\n3\n\n", p).unwrap(),
            vec![vec![1.0], vec![2.0], vec![3.0]]
        );
        assert!(parse_sample_rounds("\n\n7\n\n", p).is_err());
        let e = parse_sample_rounds("1\n\n2\nx\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s.txt:4:"), "{e}");
    }

    #[test]
    fn files_with_and_without_rounds() {
        let p = Path::new("s.txt");
        let f = parse_sample_file("1\n2\n\n3\n4\n", p).unwrap();
        assert!(f.has_rounds);
        assert_eq!(f.rounds, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
        let f = parse_sample_file("1\n2\n3\n", p).unwrap();
        assert!(!f.has_rounds);
        assert_eq!(f.rounds, vec![vec![1.0], vec![2.0], vec![3.0]]);
        // Blocks of one value each are i.i.d. values as well.
        assert!(!parse_sample_file("1\n\n2\n\n3\n", p).unwrap().has_rounds);
        // One stray blank line in a file of values makes two rounds, and any number of blank
        // lines in a row is one separator: `compare` says which kind each file was read as,
        // and refuses to compare a file of rounds with one of values.
        for text in ["1\n2\n3\n\n4\n5\n6\n", "1\n2\n3\n\n\n\n4\n5\n6\n\n"] {
            let f = parse_sample_file(text, p).unwrap();
            assert!(f.has_rounds, "{text:?}");
            assert_eq!(f.rounds, vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]]);
        }
    }

    #[test]
    fn rejects_bad_values_with_file_and_line() {
        for (text, want) in [
            ("", "base.txt: no samples"),
            ("# only a comment\n", "base.txt: no samples"),
            ("9.1\n", "base.txt: only one sample"),
            ("9.1\nabc\n", "base.txt:2: \"abc\" is not a number"),
            ("9.1\nNaN\n", "base.txt:2: NaN is not a finite time"),
            ("inf\n9.1\n", "base.txt:1: inf is not a finite time"),
            ("9.1\n\n-3\n", "base.txt:3: -3 is not a positive time"),
            ("9.1\n0\n", "base.txt:2: 0 is not a positive time"),
            (
                "1e308\n9.1\n",
                "base.txt:1: 1e308 is not a time: µs must be finite and from 1e-6",
            ),
            ("9.1\n1e-300\n", "base.txt:2: 1e-300 is not a time"),
            ("9.1 9.2\n1\n", "base.txt:1:"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }
}
