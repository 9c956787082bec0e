//! GitHub Actions workflow commands: annotations, the job summary and step outputs.
//!
//! Everything written here can carry untrusted text (shape names, branch names, messages
//! from a results file), so every value is escaped or fenced so that it cannot start a
//! workflow command or another output of its own.

use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;

/// The severity of an annotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Level {
    Error,
    Warning,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Error => "error",
            Level::Warning => "warning",
        })
    }
}

/// Escape the message part of a workflow command: `%`, `\r` and `\n`.
pub(crate) fn escape_data(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c => out.push(c),
        }
    }
    out
}

/// Escape a property value of a workflow command (`title=`, `file=`): the data escapes plus
/// `:` and `,`, which would otherwise end the property.
pub(crate) fn escape_property(text: &str) -> String {
    // The data escapes bring in no `:` or `,`, so these two can follow them.
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// Whether this process runs in GitHub Actions (`GITHUB_ACTIONS=true`): only there are
/// workflow commands (`::error …`) printed; elsewhere they would be noise in a terminal.
pub(crate) fn in_actions() -> bool {
    std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true")
}

/// The workflow command line for an annotation, e.g. `::error title=T::MSG`; without a title
/// when `title` is empty. Print it on its own line on stdout.
pub(crate) fn annotation(level: Level, title: &str, message: &str) -> String {
    if title.is_empty() {
        format!("::{level}::{}", escape_data(message))
    } else {
        format!(
            "::{level} title={}::{}",
            escape_property(title),
            escape_data(message)
        )
    }
}

/// A fresh token for `::stop-commands::`: 128 bits from the operating system's random
/// number generator, in hex. Code whose output shares the log cannot guess it, so it cannot
/// resume command processing early; a token drawn from a seeded generator could be.
pub(crate) fn stop_token() -> io::Result<String> {
    use rand::TryRng;
    let mut bytes = [0u8; 16];
    rand::rngs::SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| io::Error::other(format!("the operating system gave no random bytes: {e}")))?;
    Ok(hex::encode(bytes))
}

/// The line that suspends workflow-command processing until [`resume_commands`] of the
/// same token: while suspended, GitHub reads no line of the step's output as a command.
pub(crate) fn stop_commands(token: &str) -> String {
    format!("::stop-commands::{token}")
}

/// The line that resumes workflow-command processing after [`stop_commands`].
pub(crate) fn resume_commands(token: &str) -> String {
    format!("::{token}::")
}

/// GitHub's limit on one step's job summary: 1 MiB (a larger summary is not shown at all).
pub(crate) const STEP_SUMMARY_LIMIT: usize = 1024 * 1024;

/// The note that ends a truncated job summary.
pub(crate) const SUMMARY_TRUNCATION_NOTE: &str = "… truncated: GitHub shows at most 1 MiB of job summary per step; the full report is in the results artifact.";

/// Append Markdown to the job summary file (`GITHUB_STEP_SUMMARY`), ending it with a newline.
/// The file stays within [`STEP_SUMMARY_LIMIT`], what it held before included: a longer
/// report is cut on a line boundary and ends with [`SUMMARY_TRUNCATION_NOTE`].
pub(crate) fn append_step_summary(path: &Path, markdown: &str) -> io::Result<()> {
    let existing = match std::fs::metadata(path) {
        Ok(m) => usize::try_from(m.len()).unwrap_or(usize::MAX),
        Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e),
    };
    // One byte for the final newline.
    let budget = STEP_SUMMARY_LIMIT
        .saturating_sub(existing)
        .saturating_sub(1);
    let mut text = super::truncate_with_note(markdown, budget, SUMMARY_TRUNCATION_NOTE);
    if text.is_empty() && !markdown.is_empty() {
        // No room at all: write nothing rather than go over the limit.
        return Ok(());
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(text.as_bytes())
}

/// Whether `name` can be an output name: letters, digits, `_` and `-`.
fn valid_output_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A random delimiter for the `name<<DELIM` form that does not occur in `value`.
fn delimiter_for(value: &str) -> String {
    pick_delimiter(value, rand::random::<u128>)
}

/// The first delimiter built from `next()` that does not occur in `value`.
fn pick_delimiter(value: &str, mut next: impl FnMut() -> u128) -> String {
    loop {
        let delimiter = format!("ghadelimiter_{:032x}", next());
        if !value.contains(&delimiter) {
            return delimiter;
        }
    }
}

/// Append step outputs to the `GITHUB_OUTPUT` file, each in the multi-line-safe form
///
/// ```text
/// name<<ghadelimiter_<random>
/// value
/// ghadelimiter_<random>
/// ```
///
/// with a fresh random delimiter that does not occur in the value, so that no value (whatever
/// its newlines) can end early or set another output. All outputs are written with one write.
/// A name other than letters, digits, `_` and `-` is an `InvalidInput` error and nothing is
/// written.
pub(crate) fn write_outputs(path: &Path, outputs: &[(&str, String)]) -> io::Result<()> {
    let mut text = String::new();
    for (name, value) in outputs {
        if !valid_output_name(name) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "step output name {name:?} must be letters, digits, '_' or '-' and not empty"
                ),
            ));
        }
        let delimiter = delimiter_for(value);
        text.push_str(name);
        text.push_str("<<");
        text.push_str(&delimiter);
        text.push('\n');
        text.push_str(value);
        text.push('\n');
        text.push_str(&delimiter);
        text.push('\n');
    }
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_tokens_are_fresh_128_bit_hex() {
        let a = stop_token().unwrap();
        let b = stop_token().unwrap();
        assert_eq!(a.len(), 32, "{a}");
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
        assert_eq!(stop_commands(&a), format!("::stop-commands::{a}"));
        assert_eq!(resume_commands(&a), format!("::{a}::"));
    }

    #[test]
    fn annotation_levels_and_plain_text() {
        assert_eq!(
            annotation(Level::Error, "Regression", "attn_b1 is 3.1% slower"),
            "::error title=Regression::attn_b1 is 3.1%25 slower"
        );
        assert_eq!(
            annotation(Level::Warning, "", "no baseline"),
            "::warning::no baseline"
        );
    }

    #[test]
    fn annotation_escapes_data_and_properties() {
        let line = annotation(
            Level::Error,
            "shape a:b,c 100%\r\nx",
            "line1\nline2\r\n50% ::warning::x, y: z",
        );
        assert_eq!(
            line,
            "::error title=shape a%3Ab%2Cc 100%25%0D%0Ax::line1%0Aline2%0D%0A50%25 ::warning::x, y: z"
        );
        // One line, whatever the input: an injected newline cannot start a second command.
        assert!(!line.contains('\n') && !line.contains('\r'));
    }

    #[test]
    fn percent_is_escaped_first_so_escapes_are_not_reinterpreted() {
        assert_eq!(escape_data("%0A"), "%250A");
        assert_eq!(escape_property("%3A"), "%253A");
    }

    #[test]
    fn step_summary_appends_with_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.md");
        append_step_summary(&path, "# Perf").unwrap();
        append_step_summary(&path, "| a | b |\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# Perf\n| a | b |\n"
        );
    }

    #[test]
    fn step_summary_stays_under_the_limit_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.md");
        let row = "| b1h8s512d64_f16 | 9.1 | 9.2 | +1.0% |\n";
        let big = format!("# Perf\n{}", row.repeat(2 * STEP_SUMMARY_LIMIT / row.len()));
        append_step_summary(&path, &big).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.len() <= STEP_SUMMARY_LIMIT, "{}", text.len());
        assert!(text.len() > STEP_SUMMARY_LIMIT - 1000, "too much cut");
        assert!(text.ends_with(&format!("{SUMMARY_TRUNCATION_NOTE}\n")));
        assert!(text.starts_with("# Perf\n"));

        // What the file held before counts: the second report gets only what is left.
        let path = dir.path().join("summary2.md");
        std::fs::write(&path, "x".repeat(STEP_SUMMARY_LIMIT - 500)).unwrap();
        append_step_summary(&path, &big).unwrap();
        let len = std::fs::metadata(&path).unwrap().len() as usize;
        assert!(len <= STEP_SUMMARY_LIMIT, "{len}");
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("truncated")
        );

        // A full file gets nothing more.
        let path = dir.path().join("summary3.md");
        std::fs::write(&path, "x".repeat(STEP_SUMMARY_LIMIT)).unwrap();
        append_step_summary(&path, "# more").unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len() as usize,
            STEP_SUMMARY_LIMIT
        );
    }

    /// Parse a GITHUB_OUTPUT file the way the runner does (both forms).
    fn parse_outputs(text: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut lines = text.split('\n');
        while let Some(line) = lines.next() {
            if line.is_empty() {
                continue;
            }
            if let Some((name, delimiter)) = line.split_once("<<") {
                let mut value = Vec::new();
                loop {
                    let l = lines.next().expect("unterminated multi-line output");
                    if l == delimiter {
                        break;
                    }
                    value.push(l);
                }
                out.push((name.to_owned(), value.join("\n")));
            } else {
                let (name, value) = line.split_once('=').expect("name=value");
                out.push((name.to_owned(), value.to_owned()));
            }
        }
        out
    }

    #[test]
    fn outputs_use_heredoc_form_with_random_delimiters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output");
        std::fs::write(&path, "earlier=1\n").unwrap();
        let tricky = "line1\nEOF\nverdict=pass\nghadelimiter_0\n".to_owned();
        write_outputs(
            &path,
            &[
                ("verdict", "fail".to_owned()),
                ("summary", tricky.clone()),
                ("empty", String::new()),
            ],
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "earlier=1");
        let (name, delimiter) = lines[1].split_once("<<").unwrap();
        assert_eq!(name, "verdict");
        assert!(delimiter.starts_with("ghadelimiter_") && delimiter.len() == 13 + 32);
        assert_eq!(lines[2], "fail");
        assert_eq!(lines[3], delimiter);
        assert_eq!(
            parse_outputs(&text),
            vec![
                ("earlier".to_owned(), "1".to_owned()),
                ("verdict".to_owned(), "fail".to_owned()),
                ("summary".to_owned(), tricky),
                ("empty".to_owned(), String::new()),
            ]
        );
        // Fresh delimiter per output.
        let delimiters: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.split_once("<<").map(|(_, d)| d))
            .collect();
        assert_eq!(delimiters.len(), 3);
        assert!(delimiters[0] != delimiters[1] && delimiters[1] != delimiters[2]);
    }

    #[test]
    fn a_delimiter_found_in_the_value_is_replaced() {
        let taken = format!("ghadelimiter_{:032x}", 1u128);
        let value = format!("x\n{taken}\ny");
        let mut candidates = [1u128, 1, 2].into_iter();
        let d = pick_delimiter(&value, || candidates.next().unwrap());
        assert_eq!(d, format!("ghadelimiter_{:032x}", 2u128));
        assert!(!value.contains(&d));
    }

    #[test]
    fn bad_output_names_are_rejected_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output");
        for bad in ["", "a b", "x\ny", "a<<b", "a=b"] {
            let err =
                write_outputs(&path, &[("ok", "1".to_owned()), (bad, "v".to_owned())]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
        assert!(!path.exists());
    }
}
