//! Plain sample files: one time per line, in microseconds. Blank lines and lines starting
//! with `#` are skipped. Every rejected value is an error naming the file and line.

use std::path::{Path, PathBuf};

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

/// Most values a sample file may hold (the statistics' cost grows with it).
pub const MAX_SAMPLE_VALUES: usize = 100_000;

/// Parses sample text; `path` names it in errors. At least two values are required, at most
/// [`MAX_SAMPLE_VALUES`].
pub fn parse_samples(text: &str, path: &Path) -> Result<Vec<f64>, SampleFileError> {
    let mut values = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |message: String| SampleFileError::Line {
            path: path.to_owned(),
            line: i + 1,
            message,
        };
        if values.len() == MAX_SAMPLE_VALUES {
            return Err(at(format!(
                "more than {MAX_SAMPLE_VALUES} samples; a sample file holds at most that many"
            )));
        }
        let shown: String = line.chars().take(40).collect();
        let v: f64 = line.parse().map_err(|_| {
            at(format!(
                "{shown:?} is not a number (one time in µs per line)"
            ))
        })?;
        if !v.is_finite() {
            return Err(at(format!("{shown} is not a finite time")));
        }
        if v <= 0.0 {
            return Err(at(format!("{shown} is not a positive time")));
        }
        values.push(v);
    }
    match values.len() {
        0 => Err(SampleFileError::File {
            path: path.to_owned(),
            message: "no samples (the file is empty)".into(),
        }),
        1 => Err(SampleFileError::File {
            path: path.to_owned(),
            message: "only one sample; at least 2 are needed to compare".into(),
        }),
        _ => Ok(values),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Vec<f64>, String> {
        parse_samples(t, Path::new("base.txt")).map_err(|e| e.to_string())
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
    }

    #[test]
    fn reads_values_skipping_comments_and_blanks() {
        assert_eq!(
            parse("# µs\n9.1\n\n 9.3 \n1e1\n").unwrap(),
            vec![9.1, 9.3, 10.0]
        );
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
            ("9.1 9.2\n1\n", "base.txt:1:"),
            (
                "1\n1\n\u{1b}[2J\n",
                "base.txt:3: \"\\u{1b}[2J\" is not a number",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }
}
