//! What of an NVRTC log may be published. The log of untrusted code is untrusted text, and it
//! can hold more than the compiler's own words: echoed source lines, notes, and (were the
//! compiler ever to read one) lines of other files. So only diagnostics of the compiled source
//! itself are kept, as `NAME:LINE:COL: SEVERITY: MESSAGE` with the message cleaned of control
//! characters and capped; everything else is withheld.

use crate::text::terminal_text;

/// Diagnostics published per compile; the rest are counted.
const MAX_KEPT: usize = 20;
/// Characters of one message.
const MAX_MESSAGE: usize = 300;

/// The severities NVRTC writes (`attention.cu(3): error: …`, `… warning #1105-D: …`).
const SEVERITIES: &[&str] = &[
    "catastrophic error",
    "fatal error",
    "internal error",
    "error",
    "warning",
    "remark",
];

/// The publishable part of an NVRTC log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Diagnostics {
    /// `NAME:LINE:COL: SEVERITY: MESSAGE` (COL when NVRTC drew a caret), in log order.
    pub kept: Vec<String>,
    /// Diagnostics of the source past [`MAX_KEPT`].
    pub more: usize,
}

impl Diagnostics {
    /// The kept lines, one per line, or one sentence saying that nothing could be shown.
    pub fn text(&self, name: &str) -> String {
        if self.kept.is_empty() {
            return format!(
                "NVRTC's messages are withheld: none of them is a diagnostic of {name} itself"
            );
        }
        let mut out = self.kept.join("\n");
        if self.more > 0 {
            out.push_str(&format!(
                "\n({} more diagnostics of {name} not shown)",
                self.more
            ));
        }
        out
    }
}

/// The diagnostics of `name` in `log` (NVRTC's program log for a source it was given under
/// that name).
pub(crate) fn filter_log(log: &str, name: &str) -> Diagnostics {
    let lines: Vec<&str> = log.lines().collect();
    let mut out = Diagnostics::default();
    for (i, line) in lines.iter().enumerate() {
        let Some((line_no, severity, message)) = parse_header(line, name) else {
            continue;
        };
        if out.kept.len() == MAX_KEPT {
            out.more += 1;
            continue;
        }
        // NVRTC echoes the source line (indented by two spaces) and draws a caret under the
        // column on the next line; the echo itself is never published.
        let column = lines
            .get(i + 2)
            .filter(|_| lines.get(i + 1).is_some_and(|echo| echo.starts_with("  ")))
            .and_then(|caret| caret_column(caret));
        let at = match column {
            Some(c) => format!("{name}:{line_no}:{c}"),
            None => format!("{name}:{line_no}"),
        };
        out.kept
            .push(format!("{at}: {severity}: {}", clean_message(message)));
    }
    out
}

/// `NAME(LINE): SEVERITY[ #CODE]: MESSAGE` for exactly `name`.
fn parse_header<'a>(line: &'a str, name: &str) -> Option<(u32, &'static str, &'a str)> {
    let rest = line.strip_prefix(name)?.strip_prefix('(')?;
    let close = rest.find(')')?;
    let line_no: u32 = rest[..close].parse().ok()?;
    let rest = rest[close + 1..].strip_prefix(": ")?;
    let severity = SEVERITIES.iter().find(|s| rest.starts_with(**s))?;
    let mut rest = &rest[severity.len()..];
    if let Some(code) = rest.strip_prefix(" #") {
        let end = code.find(':')?;
        if !code[..end]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return None;
        }
        rest = &code[end..];
    }
    let message = rest.strip_prefix(": ")?;
    Some((line_no, severity, message))
}

/// The 1-based column of a caret line: two spaces of indent, then the source's own white
/// space up to the caret.
fn caret_column(caret: &str) -> Option<usize> {
    let body = caret.strip_prefix("  ")?;
    let pos = body.chars().position(|c| c == '^')?;
    let (before, after) = body.split_at(body.char_indices().nth(pos)?.0);
    (before.chars().all(|c| c == ' ' || c == '\t') && after.trim_end() == "^").then_some(pos + 1)
}

/// A message as one line of plain text: no control or invisible characters (terminal
/// escapes included), at most [`MAX_MESSAGE`] characters, and never starting with `::` (a
/// GitHub workflow command, should the line ever be printed on its own).
fn clean_message(message: &str) -> String {
    let text = terminal_text(message);
    let text = text.trim();
    let mut out: String = text.chars().take(MAX_MESSAGE).collect();
    if text.chars().nth(MAX_MESSAGE).is_some() {
        out.push('…');
    }
    if out.starts_with("::") {
        out.insert(0, ' ');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log as NVRTC 13.5 writes it (captured from the wheel), with a `#line` into another
    /// file and an echoed line that holds that file's "content".
    const LOG: &str = "attention.cu(2): error: identifier \"undefined_thing\" is undefined\n      int x = undefined_thing + 1;\n              ^\n\nattention.cu(3): error: expression must have arithmetic or unscoped enum type\n  \t  o[0] = \"str\" * 2;\n  \t         ^\n\nattention.cu(4): warning #1105-D: #warning directive: \"::error title=x::pwned\"\n  #warning \"::error title=x::pwned\"\n   ^\n\nRemark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n\nother.h(1): error: this declaration has no storage class or type specifier\n  SECRET=canary-1234\n  ^\n\n3 errors detected in the compilation of \"attention.cu\".\n";

    #[test]
    fn only_the_sources_own_diagnostics_are_kept() {
        let d = filter_log(LOG, "attention.cu");
        assert_eq!(
            d.kept,
            [
                "attention.cu:2:13: error: identifier \"undefined_thing\" is undefined",
                "attention.cu:3:11: error: expression must have arithmetic or unscoped enum type",
                "attention.cu:4:2: warning: #warning directive: \"::error title=x::pwned\"",
            ]
        );
        let text = d.text("attention.cu");
        for withheld in ["canary", "other.h", "SECRET", "Remark", "detected", "int x"] {
            assert!(!text.contains(withheld), "{withheld}: {text}");
        }
    }

    #[test]
    fn another_files_lines_are_dropped_even_with_a_similar_name() {
        let log = "/proc/self/environ(1): error: x\n  HOME=/root\n  ^\nattention.cu.h(1): error: y\nxattention.cu(1): error: z\n attention.cu(1): error: w\nattention.cu(x): error: v\n";
        let d = filter_log(log, "attention.cu");
        assert!(d.kept.is_empty(), "{d:?}");
        assert_eq!(
            d.text("attention.cu"),
            "NVRTC's messages are withheld: none of them is a diagnostic of attention.cu itself"
        );
    }

    #[test]
    fn messages_are_one_clean_capped_line() {
        let log = format!(
            "attention.cu(7): error: ::error title=x::pwned\x1b[31m\u{202e}\r{}\n",
            "a".repeat(1000)
        );
        let d = filter_log(&log, "attention.cu");
        assert_eq!(d.kept.len(), 1);
        let line = &d.kept[0];
        assert!(
            line.starts_with("attention.cu:7: error:  ::error"),
            "{line}"
        );
        assert!(
            !line.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{line:?}"
        );
        assert!(line.chars().count() < MAX_MESSAGE + 40, "{}", line.len());
        assert!(line.ends_with('…'));
        // A message that would start a line with `::` is shifted.
        assert_eq!(clean_message("::stop-commands::x"), " ::stop-commands::x");
    }

    #[test]
    fn many_diagnostics_are_counted_past_the_cap() {
        let log = "attention.cu(1): error: e\n".repeat(MAX_KEPT + 5);
        let d = filter_log(&log, "attention.cu");
        assert_eq!((d.kept.len(), d.more), (MAX_KEPT, 5));
        assert!(
            d.text("attention.cu")
                .ends_with("(5 more diagnostics of attention.cu not shown)")
        );
    }

    #[test]
    fn catastrophic_errors_and_codes_parse() {
        let log = "attention.cu(1): catastrophic error: cannot open source file \"x\"\n  #include \"x\"\n             ^\n";
        assert_eq!(
            filter_log(log, "attention.cu").kept,
            ["attention.cu:1:12: catastrophic error: cannot open source file \"x\""]
        );
        assert_eq!(
            parse_header("attention.cu(1): warning #bad code: x", "attention.cu"),
            None
        );
    }
}
