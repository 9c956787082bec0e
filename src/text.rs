//! Text from files, tools and kernels made safe to show: on a terminal, in a CI log, in an
//! error message. A leaf: it knows nothing of the rest of the crate, so every module can use
//! it (`validate` checks values with it; reports, commands and GitHub code print with it).
//! Markdown escaping lives in `report::markdown::escape_markdown`.

/// The first 12 characters of a commit id, for display. Never panics, whatever the input
/// (it counts characters, not bytes).
pub fn short_commit(commit: &str) -> String {
    commit.chars().take(12).collect()
}

// ---------------------------------------------------------------------------------------
// Characters and sanitisers

/// Characters that break a line, in any renderer.
pub(crate) fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Characters that are invisible or change how other text displays: C0 and C1 controls,
/// DEL, bidirectional marks, embeddings, overrides and isolates, zero-width characters,
/// invisible fillers, variation selectors and tag characters. Line breaks and tabs are
/// controls too: callers that keep them handle them first.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c as u32,
            0x00AD          // soft hyphen
            | 0x034F        // combining grapheme joiner
            | 0x061C        // Arabic letter mark
            | 0x115F | 0x1160 | 0x3164 | 0xFFA0 // Hangul fillers
            | 0x17B4 | 0x17B5
            | 0x180B..=0x180F // Mongolian selectors and vowel separator
            | 0x200B..=0x200F // zero-width space/non-joiner/joiner, LRM, RLM
            | 0x2028..=0x202E // line/paragraph separators, LRE, RLE, PDF, LRO, RLO
            | 0x2060..=0x206F // word joiner, invisible operators, LRI, RLI, FSI, PDI, ...
            | 0xFE00..=0xFE0F // variation selectors
            | 0xFEFF        // zero-width no-break space (BOM)
            | 0xFFF0..=0xFFFB // interlinear annotation controls
            | 0x1D173..=0x1D17A // musical formatting controls
            | 0xE0000..=0xE0FFF // tags, variation selectors supplement
        )
}

/// Free text made safe to keep: line breaks and tabs become spaces, every other hidden
/// character ([`is_hidden`]) is dropped, escape sequences with it.
pub(crate) fn clean_text(text: &str) -> String {
    terminal_text(text)
}

/// Text safe to print on a terminal and in a CI log, on one line: ANSI escape sequences
/// (CSI, OSC, and two-character ones) are removed whole, line breaks and tabs become
/// spaces, and every other control, bidirectional or zero-width character is dropped. A
/// newline in attacker text can therefore never start a line of its own (such as a
/// `::workflow-command`).
pub fn terminal_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1B}' => match chars.peek() {
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars);
                }
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\u{9B}' => skip_csi(&mut chars),
            '\u{9D}' | '\u{90}' | '\u{98}' | '\u{9E}' | '\u{9F}' => skip_string(&mut chars),
            '\t' => out.push(' '),
            c if is_line_break(c) => out.push(' '),
            c if is_hidden(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Skips the rest of a CSI sequence: parameter and intermediate bytes, then one final byte.
/// A character that cannot belong to the sequence ends it and is kept.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        if ('\u{20}'..='\u{3F}').contains(&c) {
            chars.next();
            continue;
        }
        if ('\u{40}'..='\u{7E}').contains(&c) {
            chars.next();
        }
        return;
    }
}

/// Skips a control string (OSC, DCS, ...) up to BEL, ST (ESC \ or C1 ST); a line break
/// ends it too (and is kept), so an unterminated string cannot hide the lines after it.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        if is_line_break(c) {
            return;
        }
        chars.next();
        match c {
            '\u{07}' | '\u{9C}' => return,
            '\u{1B}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

/// `text` cut to at most `max` bytes (at a character boundary; just the note when `max` is
/// smaller than it), saying how much was cut: for a writer to keep free text within the
/// bounds a reader checks (e.g. `validate::MAX_ERROR_LEN` for a compiler log).
pub(crate) fn clip_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let note = format!(" … ({} bytes cut)", text.len());
    let mut cut = max.saturating_sub(note.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{note}", &text[..cut])
}

/// An error for one line of a terminal or CI log: [`terminal_text`], without a leading
/// `error:` of its own (the caller prints one), cut to a bounded length.
pub fn error_line(message: &str) -> String {
    let mut line = terminal_text(message);
    loop {
        let trimmed = line.trim_start();
        match trimmed.get(..6) {
            Some(p) if p.eq_ignore_ascii_case("error:") => line = trimmed[6..].to_owned(),
            _ => break,
        }
    }
    let line = line.trim().to_owned();
    const MAX: usize = 64 * 1024;
    if line.len() <= MAX {
        return line;
    }
    let mut cut = MAX;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes cut)", &line[..cut], line.len() - cut)
}

/// Columns that every line of an error message fits in ([`error_message`]).
pub const ERROR_WIDTH: usize = 80;

/// Widest word of an error message: one that fits on its first line, after `error: `.
const MAX_ERROR_WORD: usize = ERROR_WIDTH - "error: ".len();

/// An error as printed: `error: ` and [`error_line`]'s text, wrapped (textwrap) to lines of at
/// most [`ERROR_WIDTH`] columns, the lines after the first indented by two spaces. Lines break
/// at spaces, never at a hyphen; a word wider than a line (a long path) is cut. No line but
/// the first begins with `:`, so that attacker text in the message cannot start a line that
/// is a GitHub workflow command (one that begins, after spaces, with `::`): a space before a
/// colon is no break, and a long word is not cut before one. A line that ends inside a cut
/// word ends with `\`: joined to the next line without it and without a space, and every
/// other line joined with one space, the lines give the message again. Cost: linear in the
/// message.
pub fn error_message(message: &str) -> String {
    let options = textwrap::Options::new(ERROR_WIDTH)
        .initial_indent("error: ")
        .subsequent_indent("  ")
        .break_words(false)
        .word_separator(textwrap::WordSeparator::Custom(error_words))
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::fill(&error_line(message), options)
}

/// The words of an error message for textwrap: runs of text with the spaces after them, split
/// at spaces that are not followed by a colon (see [`error_message`]), a word wider than
/// [`MAX_ERROR_WORD`] cut into pieces ([`push_error_word`]).
fn error_words(line: &str) -> Box<dyn Iterator<Item = textwrap::core::Word<'_>> + '_> {
    let mut words = Vec::new();
    let (mut start, mut at) = (0, 0);
    let bytes = line.as_bytes();
    while at < bytes.len() {
        if bytes[at] != b' ' {
            at += 1;
            continue;
        }
        let mut end = at;
        while end < bytes.len() && bytes[end] == b' ' {
            end += 1;
        }
        if end < bytes.len() && bytes[end] != b':' {
            push_error_word(&mut words, &line[start..end]);
            start = end;
        }
        at = end;
    }
    if start < line.len() {
        push_error_word(&mut words, &line[start..]);
    }
    Box::new(words.into_iter())
}

/// `word` (with the spaces after it) as textwrap words: itself, or where it is wider than
/// [`MAX_ERROR_WORD`], pieces of at most one column less, none of which begins with a colon or
/// with spaces and a colon (but where the rest is colons alone: a line `::::` names no
/// command). Each piece but the last ends its line with a `\` where the line breaks after it
/// (its textwrap penalty), so that a reader, or a test, joins it to the next without a space.
fn push_error_word<'a>(words: &mut Vec<textwrap::core::Word<'a>>, word: &'a str) {
    use textwrap::core::{Word, display_width};
    let mut rest = word;
    while display_width(rest.trim_end_matches(' ')) > MAX_ERROR_WORD {
        let (mut fits, mut width) = (0, 0);
        for (i, c) in rest.char_indices() {
            width += display_width(&rest[i..i + c.len_utf8()]);
            if width > MAX_ERROR_WORD - 1 {
                break;
            }
            fits = i + c.len_utf8();
        }
        let starts_a_command = |cut: usize| rest[cut..].trim_start_matches(' ').starts_with(':');
        let mut cut = fits;
        while cut > 0 && starts_a_command(cut) {
            cut = rest[..cut].char_indices().next_back().map_or(0, |(i, _)| i);
        }
        if cut == 0 {
            // Colons (and spaces) alone up to the width, or one character wider than it.
            cut = fits.max(rest.chars().next().map_or(rest.len(), char::len_utf8));
        }
        let mut piece = Word::from(&rest[..cut]);
        piece.penalty = "\\";
        words.push(piece);
        rest = &rest[cut..];
    }
    if !rest.is_empty() {
        words.push(Word::from(rest));
    }
}

/// Attacker text for an error message: at most 60 characters, in double quotes, with every
/// character that is not plainly printable written as `\u{…}`.
pub(crate) fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    let mut chars = text.chars();
    for c in chars.by_ref().take(60) {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c == ' ' || c.is_ascii_graphic() => out.push(c),
            c if !c.is_ascii() && c.is_alphanumeric() && !is_hidden(c) => out.push(c),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    out.push('"');
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of an error message and its text again: the lines after the first without
    /// their indent, joined by a space, or where a line ends with `\\` (a cut word) without it
    /// and without a space.
    fn unwrapped(printed: &str) -> (Vec<&str>, String) {
        let lines: Vec<&str> = printed.lines().collect();
        let mut text = lines[0].strip_prefix("error: ").unwrap().to_owned();
        for line in &lines[1..] {
            if text.ends_with('\\') {
                text.pop();
            } else {
                text.push(' ');
            }
            text.push_str(line.strip_prefix("  ").unwrap());
        }
        (lines, text)
    }

    #[test]
    fn an_error_message_fits_80_columns_with_its_text_intact() {
        assert_eq!(error_message("error: short"), "error: short");
        let long = "config configs/pr.yaml: gate: unknown field `max_p50_regresion`, expected one of `max_p50_regression`, `alpha`, `confidence`, `bootstrap_resamples`, `seed`, `max_speedup` at line 12 column 3; a-hyphenated-word-that-stays-whole";
        let printed = error_message(long);
        let (lines, text) = unwrapped(&printed);
        assert!(lines.len() >= 3, "{printed}");
        assert!(
            lines.iter().all(|l| l.chars().count() <= ERROR_WIDTH),
            "{printed}"
        );
        assert_eq!(text, long);
        assert!(
            printed.contains("a-hyphenated-word-that-stays-whole"),
            "{printed}"
        );
        // A word wider than a line is cut, each cut marked by a `\` at the end of its line;
        // nothing is lost. A long first word (a file name) is cut on the first line too.
        for path in [
            format!(
                "cannot read /{}/results.json: gone",
                "very-long-directory".repeat(9)
            ),
            format!(
                "/work/{}/tests/hostile/pr.json: provenance.commit: \"x\" is not a commit",
                "checkout".repeat(6)
            ),
        ] {
            let printed = error_message(&path);
            let (lines, text) = unwrapped(&printed);
            assert!(
                lines.iter().all(|l| l.chars().count() <= ERROR_WIDTH),
                "{printed}"
            );
            assert!(lines.iter().any(|l| l.ends_with('\\')), "{printed}");
            assert_eq!(text, path);
        }
        // Wide characters count as two columns.
        let wide = "界".repeat(100);
        let printed = error_message(&wide);
        assert!(
            printed
                .lines()
                .all(|l| textwrap::core::display_width(l) <= ERROR_WIDTH),
            "{printed}"
        );
        assert_eq!(unwrapped(&printed).1, wide);
    }

    #[test]
    fn no_continuation_line_of_an_error_can_be_a_workflow_command() {
        for n in 0..200 {
            for message in [
                format!(
                    "{}::error::pwned and more text after it",
                    "ab ".repeat(n / 3)
                ),
                format!("{} ::error::pwned", "ab ".repeat(n / 3)),
                format!("{}  ::warning::x", "y".repeat(n)),
                format!("{}::add-mask::x{}", "y".repeat(n), ":".repeat(n % 7)),
                format!("{} {}", "z".repeat(n % 80), ":".repeat(n)),
            ] {
                let printed = error_message(&message);
                for (i, line) in printed.lines().enumerate() {
                    assert!(line.chars().count() <= ERROR_WIDTH, "{printed}");
                    let starts = line.trim_start();
                    // Colons alone (the last case; the `\` marks a cut) name no command.
                    let colons_only = starts.trim_end_matches('\\').chars().all(|c| c == ':');
                    assert!(
                        i == 0 || !starts.starts_with(':') || colons_only,
                        "line {i} of {message:?}:\n{printed}"
                    );
                }
            }
        }
    }

    #[test]
    fn short_commit_counts_characters() {
        assert_eq!(
            short_commit("0123456789abcdef0123"),
            "0123456789ab".to_owned()
        );
        assert_eq!(short_commit("abc"), "abc");
        assert_eq!(short_commit(""), "");
        // 12 bytes would split the third 'é'... and a byte slice would panic.
        assert_eq!(short_commit(&"é".repeat(20)), "é".repeat(12));
        assert_eq!(short_commit("😀a😀b"), "😀a😀b");
    }

    #[test]
    fn terminal_text_strips_escapes_controls_and_bidi() {
        assert_eq!(terminal_text("\u{1b}[2J\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(
            terminal_text("\u{1b}]8;;https://evil.example\u{7}link\u{1b}]8;;\u{1b}\\"),
            "link"
        );
        assert_eq!(terminal_text("\u{1b}]0;title\u{7}x"), "x");
        assert_eq!(terminal_text("a\r\nb\tc"), "a  b c");
        assert_eq!(terminal_text("x\n::error::pwned"), "x ::error::pwned");
        assert_eq!(
            terminal_text("\u{202E}evil\u{202C}\u{2066}\u{200B}"),
            "evil"
        );
        assert_eq!(terminal_text("\u{9b}31mc1\u{7f}\u{0}"), "c1");
        assert_eq!(terminal_text("plain µs ✓"), "plain µs ✓");
        // An unfinished sequence at the end swallows nothing else and never panics.
        assert_eq!(terminal_text("ok\u{1b}"), "ok");
        assert_eq!(terminal_text("ok\u{1b}["), "ok");
        assert_eq!(terminal_text("\u{1b}]unterminated\nline"), " line");
        assert_eq!(terminal_text("\u{1b}[31\nx"), " x");
    }

    #[test]
    fn error_lines_are_single_without_a_doubled_prefix() {
        assert_eq!(error_line("error: error: x\ny"), "x y");
        assert_eq!(error_line("Error:  boom"), "boom");
        assert_eq!(error_line("errors: 3"), "errors: 3");
        let long = "é".repeat(100_000);
        let line = error_line(&long);
        assert!(line.len() < 70 * 1024 && line.ends_with("bytes cut)"));
    }

    #[test]
    fn clip_text_stays_within_the_bound() {
        assert_eq!(clip_text("short", 10), "short");
        let long = "é".repeat(1000);
        for max in [30, 31, 100, 1999] {
            let c = clip_text(&long, max);
            assert!(c.len() <= max, "{max}: {}", c.len());
            assert!(c.ends_with(" … (2000 bytes cut)"), "{c}");
        }
        assert!(clip_text(&long, 3).len() <= 3 + " … (2000 bytes cut)".len());
    }

    #[test]
    fn quote_shows_hidden_characters() {
        assert_eq!(quote("a\nb"), "\"a\\u{a}b\"");
        assert_eq!(quote("x\u{202e}y"), "\"x\\u{202e}y\"");
        assert_eq!(quote("\u{1b}[31m"), "\"\\u{1b}[31m\"");
        assert_eq!(quote("µs é"), "\"µs é\"");
        assert!(quote(&"a".repeat(100)).ends_with("\"…"));
    }
}
