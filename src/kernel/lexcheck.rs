//! A lexical refusal of every way a kernel source can name a file, applied before NVRTC sees
//! the source. It is defence in depth: NVRTC also runs in a sandbox with nothing to read
//! (`sandbox`), but where that sandbox is weaker (a kernel without Landlock) this check alone
//! keeps `#include "/proc/self/environ"` out of the compiler.
//!
//! The source is read as the preprocessor reads it: translation phases 1 and 2 (trigraphs,
//! line splices), then preprocessing tokens with comments and string and character literals
//! (raw strings included) set aside. Where compilers disagree on those phases (trigraphs are
//! gone from C++17 but some front ends still replace them; a backslash followed by spaces
//! splices lines for GCC but not for the standard; a lone carriage return ends a line for
//! some; a front end may not see raw strings in a skipped `#if 0` group) the source is read
//! every way, and it is refused if any reading finds a refused construct. So an attacker
//! cannot hide a directive where this reader sees a comment and the compiler sees code.
//!
//! Refused: any `#` directive that is not define, undef, if, ifdef, ifndef, elif, else,
//! endif, pragma, line, error or warning (so `#include`, `#include_next`, `#embed`,
//! `#import`, in any spelling: `%:`, `??=`, split by splices or comments); the identifiers
//! `include`, `include_next`, `embed`, `import`, `__has_include*` and `__has_embed*` anywhere
//! outside literals and comments; a macro that pastes tokens (`##`, directly or through
//! another macro) used in an `#if` or `#elif` condition, where a pasted `__has_include`
//! would look for a file (a directive itself can never be made by a macro); and characters
//! no kernel needs outside comments and literals that could hide an identifier (a backslash
//! that is not a line splice, i.e. a universal character name; non-ASCII; NUL).

use std::collections::{HashMap, HashSet};

use crate::gpu_error::GpuError;

/// The directives a kernel may use; none of them reads a file.
const ALLOWED_DIRECTIVES: &[&str] = &[
    "define", "undef", "if", "ifdef", "ifndef", "elif", "else", "endif", "pragma", "line", "error",
    "warning",
];

/// Identifiers that name or test a file in some dialect. Refused anywhere in code, so that
/// no macro can carry them into a place where they would act.
const FILE_IDENTIFIERS: &[&str] = &[
    "include",
    "include_next",
    "embed",
    "import",
    "__has_include",
    "__has_include_next",
    "__has_embed",
];

/// Prefixes refused as well (`__has_include__` was GCC's internal spelling).
const FILE_PREFIXES: &[&str] = &["__has_include", "__has_embed"];

const README: &str = "(kernels/README.md)";

/// Refuses `text` (the source of `file`) when it has any construct that could make the
/// compiler read a file: one sentence naming the file, the line and the construct.
pub fn check_no_file_access(text: &str, file: &str) -> Result<(), GpuError> {
    match find_refused(text) {
        Some(f) => Err(GpuError::Refused(f.sentence(file))),
        None => Ok(()),
    }
}

/// What was refused, where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Finding {
    /// 1-based physical line of the source.
    pub line: u32,
    pub kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A directive that reads a file, as written (`#include`, `%:include`, `??=include`).
    FileDirective(String),
    /// An identifier that reads or tests a file (`` `__has_include` ``).
    FileIdentifier(String),
    /// A directive outside the allow-list, as written.
    Directive(String),
    /// A pasting macro used in an `#if`/`#elif` condition.
    PastingInCondition(String),
    Backslash,
    NonAscii,
    Nul,
}

impl Finding {
    /// The earlier line first; on one line, a construct that reads a file before anything
    /// else (its message is the one that explains the refusal).
    fn precedes(&self, other: &Finding) -> bool {
        let rank = |f: &Finding| {
            let class = match f.kind {
                Kind::FileDirective(_) => 0,
                Kind::FileIdentifier(_) => 1,
                _ => 2,
            };
            (f.line, class)
        };
        rank(self) < rank(other)
    }

    fn sentence(&self, file: &str) -> String {
        let at = format!("{file}:{}", self.line);
        match &self.kind {
            Kind::FileDirective(what) | Kind::FileIdentifier(what) => format!(
                "{at}: {what} is refused: the kernels are compiled without access to any file {README}"
            ),
            Kind::Directive(what) => format!(
                "{at}: {what} is refused: the only directives allowed are #define, #undef, #if, #ifdef, #ifndef, #elif, #else, #endif, #pragma, #line, #error and #warning {README}"
            ),
            Kind::PastingInCondition(name) => format!(
                "{at}: the macro `{name}` pastes tokens (##) and is refused in an #if or #elif condition, where a pasted __has_include or __has_embed would look for a file {README}"
            ),
            Kind::Backslash => format!(
                "{at}: a backslash outside comments and literals is refused unless it ends its line (a line splice): no universal character names in code {README}"
            ),
            Kind::NonAscii => format!(
                "{at}: a non-ASCII character outside comments and literals is refused {README}"
            ),
            Kind::Nul => format!("{at}: a NUL byte is refused {README}"),
        }
    }
}

/// One way of reading the translation phases where compilers differ.
#[derive(Clone, Copy, Debug)]
struct Reading {
    trigraphs: bool,
    /// A backslash followed by spaces or tabs, then the end of the line, splices (GCC).
    splice_after_spaces: bool,
    /// A carriage return alone ends a line.
    lone_cr_ends_line: bool,
    /// `R"delim( … )delim"` is one literal.
    raw_strings: bool,
}

fn readings() -> impl Iterator<Item = Reading> {
    (0u8..16).map(|bits| Reading {
        trigraphs: bits & 1 != 0,
        splice_after_spaces: bits & 2 != 0,
        lone_cr_ends_line: bits & 4 != 0,
        raw_strings: bits & 8 != 0,
    })
}

/// The refused construct on the earliest line under any reading, if any.
pub(crate) fn find_refused(text: &str) -> Option<Finding> {
    let bytes = text.as_bytes();
    // A UTF-8 byte order mark is not part of the text.
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if let Some(at) = body.iter().position(|&b| b == 0) {
        let line = 1 + body[..at].iter().filter(|&&b| b == b'\n').count() as u32;
        return Some(Finding {
            line,
            kind: Kind::Nul,
        });
    }
    let mut best: Option<Finding> = None;
    for reading in readings() {
        if let Some(f) = check_reading(body, reading)
            && best.as_ref().is_none_or(|b| f.precedes(b))
        {
            best = Some(f);
        }
    }
    best
}

/// A character after translation phases 1 and 2, with where it came from.
#[derive(Clone, Copy, Debug)]
struct Ch {
    b: u8,
    /// 1-based physical line.
    line: u32,
    /// Byte offset in the original text (raw strings are read there: phases 1 and 2 are
    /// reverted inside them).
    off: usize,
}

fn trigraph(c: u8) -> Option<u8> {
    Some(match c {
        b'=' => b'#',
        b'/' => b'\\',
        b'\'' => b'^',
        b'(' => b'[',
        b')' => b']',
        b'!' => b'|',
        b'<' => b'{',
        b'>' => b'}',
        b'-' => b'~',
        _ => return None,
    })
}

fn is_hspace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | 0x0b | 0x0c)
}

/// Phases 1 (line ends, trigraphs) and 2 (splices).
fn translate(src: &[u8], r: Reading) -> Vec<Ch> {
    let mut p1 = Vec::with_capacity(src.len());
    let mut line = 1u32;
    let mut i = 0;
    while i < src.len() {
        let b = src[i];
        let off = i;
        if b == b'\r' {
            if src.get(i + 1) == Some(&b'\n') {
                p1.push(Ch {
                    b: b'\n',
                    line,
                    off,
                });
                line += 1;
                i += 2;
            } else if r.lone_cr_ends_line {
                p1.push(Ch {
                    b: b'\n',
                    line,
                    off,
                });
                line += 1;
                i += 1;
            } else {
                p1.push(Ch { b: b' ', line, off });
                i += 1;
            }
            continue;
        }
        if b == b'\n' {
            p1.push(Ch { b, line, off });
            line += 1;
            i += 1;
            continue;
        }
        if r.trigraphs
            && b == b'?'
            && src.get(i + 1) == Some(&b'?')
            && let Some(t) = src.get(i + 2).copied().and_then(trigraph)
        {
            p1.push(Ch { b: t, line, off });
            i += 3;
            continue;
        }
        p1.push(Ch { b, line, off });
        i += 1;
    }
    let mut out = Vec::with_capacity(p1.len());
    let mut j = 0;
    while j < p1.len() {
        if p1[j].b == b'\\' {
            let mut k = j + 1;
            if r.splice_after_spaces {
                while k < p1.len() && is_hspace(p1[k].b) {
                    k += 1;
                }
            }
            if k < p1.len() && p1[k].b == b'\n' {
                j = k + 1;
                continue;
            }
        }
        out.push(p1[j]);
        j += 1;
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `#` as written: `#`, `%:` or `??=`.
    Hash(&'static str),
    HashHash,
    Number,
    Literal,
    LParen,
    RParen,
    Punct,
    Newline,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: u32,
    /// First token of its line (after white space and comments; a comment that spans lines
    /// counts as a line end, as some preprocessors read it).
    first: bool,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Encoding prefixes of string and character literals; those ending in R start raw strings.
const LITERAL_PREFIXES: &[&str] = &["L", "u", "U", "u8", "R", "LR", "uR", "UR", "u8R"];

/// The end of the block comment that starts at `i`; a line it spans makes the next token the
/// first of its line.
fn skip_block_comment(c: &[Ch], mut i: usize, first: &mut bool) -> usize {
    let at = |i: usize| c.get(i).map(|ch| ch.b);
    i += 2;
    loop {
        match at(i) {
            None => return i,
            Some(b'*') if at(i + 1) == Some(b'/') => return i + 2,
            Some(b'\n') => {
                *first = true;
                i += 1;
            }
            Some(_) => i += 1,
        }
    }
}

/// The identifier that starts at `i`, or the literal it prefixes (`u8"…"`, `R"(…)"`): where
/// it ends, and the token.
fn identifier(c: &[Ch], src: &[u8], mut i: usize, r: Reading) -> (usize, Tok) {
    let start = i;
    while i < c.len() && is_ident_char(c[i].b) {
        i += 1;
    }
    let name: String = c[start..i].iter().map(|ch| ch.b as char).collect();
    match c.get(i).map(|ch| ch.b) {
        Some(q @ (b'"' | b'\'')) if LITERAL_PREFIXES.contains(&name.as_str()) => {
            let end = if q == b'"' && name.ends_with('R') && r.raw_strings {
                skip_raw_string(c, src, i)
            } else {
                skip_literal(c, i)
            };
            (end, Tok::Literal)
        }
        _ => (i, Tok::Ident(name)),
    }
}

/// The `#` (or its trigraph `??=`) or `##` that starts at `i`: where it ends, and the token.
fn hash(c: &[Ch], src: &[u8], i: usize) -> (usize, Tok) {
    let spelling = if src.get(c[i].off) == Some(&b'?') {
        "??="
    } else {
        "#"
    };
    if c.get(i + 1).map(|ch| ch.b) == Some(b'#') {
        (i + 2, Tok::HashHash)
    } else {
        (i + 1, Tok::Hash(spelling))
    }
}

/// The digraph `%:` (`#`) or `%:%:` (`##`) that starts at `i`: where it ends, and the token.
fn hash_digraph(c: &[Ch], i: usize) -> (usize, Tok) {
    let at = |i: usize| c.get(i).map(|ch| ch.b);
    if at(i + 2) == Some(b'%') && at(i + 3) == Some(b':') {
        (i + 4, Tok::HashHash)
    } else {
        (i + 2, Tok::Hash("%:"))
    }
}

/// Splits `c` into preprocessing tokens, or the first character no kernel needs in code.
fn tokenize(c: &[Ch], src: &[u8], r: Reading) -> Result<Vec<Token>, Finding> {
    let mut toks = Vec::new();
    let mut first = true;
    let mut i = 0;
    let at = |i: usize| c.get(i).map(|ch| ch.b);
    while i < c.len() {
        let b = c[i].b;
        let line = c[i].line;
        let push = |tok: Tok, toks: &mut Vec<Token>, first: &mut bool| {
            toks.push(Token {
                tok,
                line,
                first: *first,
            });
            *first = false;
        };
        match b {
            b'\n' => {
                toks.push(Token {
                    tok: Tok::Newline,
                    line,
                    first: false,
                });
                first = true;
                i += 1;
            }
            b' ' | b'\t' | 0x0b | 0x0c => i += 1,
            b'/' if at(i + 1) == Some(b'/') => {
                while i < c.len() && c[i].b != b'\n' {
                    i += 1;
                }
            }
            b'/' if at(i + 1) == Some(b'*') => i = skip_block_comment(c, i, &mut first),
            b'"' | b'\'' => {
                i = skip_literal(c, i);
                push(Tok::Literal, &mut toks, &mut first);
            }
            b'0'..=b'9' => {
                i = skip_number(c, i);
                push(Tok::Number, &mut toks, &mut first);
            }
            b'.' if at(i + 1).is_some_and(|d| d.is_ascii_digit()) => {
                i = skip_number(c, i);
                push(Tok::Number, &mut toks, &mut first);
            }
            _ if is_ident_start(b) => {
                let tok;
                (i, tok) = identifier(c, src, i, r);
                push(tok, &mut toks, &mut first);
            }
            b'#' => {
                let tok;
                (i, tok) = hash(c, src, i);
                push(tok, &mut toks, &mut first);
            }
            b'%' if at(i + 1) == Some(b':') => {
                let tok;
                (i, tok) = hash_digraph(c, i);
                push(tok, &mut toks, &mut first);
            }
            // `<%` and `<:` are digraphs of `{` and `[`: read as one token so that their `%`
            // or `:` never starts a `%:`.
            b'<' if matches!(at(i + 1), Some(b'%' | b':')) => {
                i += 2;
                push(Tok::Punct, &mut toks, &mut first);
            }
            b'(' => {
                i += 1;
                push(Tok::LParen, &mut toks, &mut first);
            }
            b')' => {
                i += 1;
                push(Tok::RParen, &mut toks, &mut first);
            }
            b'\\' | 0 | 0x80..=0xff => {
                return Err(Finding {
                    line,
                    kind: refused_character(b),
                });
            }
            _ => {
                i += 1;
                push(Tok::Punct, &mut toks, &mut first);
            }
        }
    }
    Ok(toks)
}

/// Why `b`, one of the characters [`tokenize`] refuses in code, is refused: a backslash left
/// after line splicing, a NUL, or a byte outside ASCII.
fn refused_character(b: u8) -> Kind {
    match b {
        b'\\' => Kind::Backslash,
        0 => Kind::Nul,
        _ => Kind::NonAscii,
    }
}

/// Past an ordinary string or character literal starting at `i` (its quote). An unterminated
/// one ends at the end of its line, as compilers read it.
fn skip_literal(c: &[Ch], i: usize) -> usize {
    let quote = c[i].b;
    let mut j = i + 1;
    while j < c.len() {
        match c[j].b {
            b'\n' => return j,
            b'\\' => j += 2,
            q if q == quote => return j + 1,
            _ => j += 1,
        }
    }
    c.len()
}

/// Past a preprocessing number (C++17: digit separators, exponent signs).
fn skip_number(c: &[Ch], mut i: usize) -> usize {
    i += 1;
    while i < c.len() {
        let b = c[i].b;
        // An exponent sign, or a digit separator before a digit or letter: two characters.
        let pair = (matches!(b, b'e' | b'E' | b'p' | b'P')
            && c.get(i + 1).is_some_and(|n| matches!(n.b, b'+' | b'-')))
            || (b == b'\'' && c.get(i + 1).is_some_and(|n| is_ident_char(n.b)));
        if pair {
            i += 2;
        } else if is_ident_char(b) || b == b'.' {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// Past a raw string whose opening quote is `c[i]`, read in the original text (phases 1 and
/// 2 are reverted inside it). A delimiter that is not one falls back to an ordinary string.
fn skip_raw_string(c: &[Ch], src: &[u8], i: usize) -> usize {
    let open = c[i].off + 1;
    let mut d = open;
    while d < src.len() && d - open <= 16 {
        match src[d] {
            b'(' => break,
            b')' | b'\\' | b'"' | b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => {
                return skip_literal(c, i);
            }
            _ => d += 1,
        }
    }
    if d >= src.len() || src[d] != b'(' {
        return skip_literal(c, i);
    }
    let delim = &src[open..d];
    let mut end = src.len();
    let mut k = d + 1;
    while k < src.len() {
        if src[k] == b')'
            && src[k + 1..].starts_with(delim)
            && src.get(k + 1 + delim.len()) == Some(&b'"')
        {
            end = k + delim.len() + 2;
            break;
        }
        k += 1;
    }
    // Resume at the first translated character at or after the end in the original text.
    i + c[i..].partition_point(|ch| ch.off < end)
}

/// Whether `identifier` names or tests a file in some dialect: refused anywhere in a
/// kernel's code, and in a define.
fn names_a_file(identifier: &str) -> bool {
    FILE_IDENTIFIERS.contains(&identifier)
        || FILE_PREFIXES.iter().any(|p| identifier.starts_with(p))
}

/// What of `#define NAME VALUE` (`NAME`, or `NAME=VALUE`, already of the define rule's
/// characters) the check would refuse in a kernel, shown (`` `__has_include` ``): a
/// define is text before the source (`ci-gate eval`) or `-D` (the config), and neither may
/// bring in what the source may not hold.
pub(crate) fn refused_in_define(define: &str) -> Option<String> {
    let (name, value) = define.split_once('=').unwrap_or((define, "1"));
    find_refused(&format!("#define {name} {value}\n")).map(|f| match f.kind {
        Kind::FileIdentifier(what) | Kind::FileDirective(what) | Kind::Directive(what) => what,
        _ => f.sentence("the define"),
    })
}

/// The first refused construct of one reading.
fn check_reading(src: &[u8], r: Reading) -> Option<Finding> {
    let chars = translate(src, r);
    let toks = match tokenize(&chars, src, r) {
        Ok(t) => t,
        Err(f) => return Some(f),
    };
    let mut found: Option<Finding> = None;
    let mut note = |f: Finding| {
        if found.as_ref().is_none_or(|b| f.precedes(b)) {
            found = Some(f);
        }
    };
    let mut macros = Macros::default();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        if let (Tok::Hash(spelling), true) = (&t.tok, t.first) {
            let line_end = toks[i..]
                .iter()
                .position(|t| t.tok == Tok::Newline)
                .map_or(toks.len(), |p| i + p);
            check_directive(
                t.line,
                spelling,
                // line_end > i: toks[i] is the `#`, not the newline
                toks.get(i + 1..line_end).unwrap_or_default(),
                &mut macros,
                &mut note,
            );
            i = line_end;
            continue;
        }
        check_identifiers(std::slice::from_ref(t), &mut note);
        i += 1;
    }
    // Every macro that pastes, or names one that does (any depth), is refused in conditions.
    let pasting = macros.pasting();
    for (name, line) in macros.conditions {
        if pasting.contains(&name) {
            note(Finding {
                line,
                kind: Kind::PastingInCondition(shown(&name)),
            });
        }
    }
    found
}

/// What one reading's directives say of its macros, for the check that no `#if` or `#elif`
/// condition uses a macro that pastes tokens.
#[derive(Default)]
struct Macros {
    /// Macros whose definition pastes (`##`).
    pastes: HashSet<String>,
    /// For each identifier, the macros whose bodies name it.
    named_by: HashMap<String, Vec<String>>,
    /// Identifiers of #if / #elif conditions (outside `defined`), with their line.
    conditions: Vec<(String, u32)>,
}

impl Macros {
    /// The macros that paste, or name one that does, at any depth.
    fn pasting(&self) -> HashSet<String> {
        let mut pasting: HashSet<String> = self.pastes.clone();
        let mut work: Vec<String> = self.pastes.iter().cloned().collect();
        while let Some(m) = work.pop() {
            for user in self.named_by.get(&m).into_iter().flatten() {
                if pasting.insert(user.clone()) {
                    work.push(user.clone());
                }
            }
        }
        pasting
    }
}

/// One directive: `spelling` (`#`, `%:` or `??=`) at the start of `line`, `rest` the tokens
/// after it up to the end of its line. An allowed directive adds to `macros` and has its
/// identifiers checked; any other is noted as refused.
fn check_directive(
    line: u32,
    spelling: &str,
    rest: &[Token],
    macros: &mut Macros,
    note: &mut impl FnMut(Finding),
) {
    match rest.first().map(|t| &t.tok) {
        None => {}
        Some(Tok::Ident(name)) if ALLOWED_DIRECTIVES.contains(&name.as_str()) => {
            let after_name = rest.get(1..).unwrap_or_default();
            match name.as_str() {
                "define" => {
                    if let Some(Tok::Ident(macro_name)) = rest.get(1).map(|t| &t.tok) {
                        for t in rest.iter().skip(2) {
                            match &t.tok {
                                Tok::HashHash => {
                                    macros.pastes.insert(macro_name.clone());
                                }
                                Tok::Ident(id) => macros
                                    .named_by
                                    .entry(id.clone())
                                    .or_default()
                                    .push(macro_name.clone()),
                                _ => {}
                            }
                        }
                    }
                }
                "if" | "elif" => macros.conditions.extend(condition_identifiers(after_name)),
                _ => {}
            }
            check_identifiers(after_name, note);
        }
        Some(Tok::Ident(name)) => {
            let what = format!("{spelling}{}", shown(name));
            note(Finding {
                line,
                kind: if names_a_file(name) {
                    Kind::FileDirective(what)
                } else {
                    Kind::Directive(what)
                },
            });
        }
        Some(Tok::Number) => note(Finding {
            line,
            kind: Kind::Directive(format!("a line marker ({spelling} and a number)")),
        }),
        Some(_) => note(Finding {
            line,
            kind: Kind::Directive(format!("{spelling} followed by punctuation")),
        }),
    }
}

/// Identifiers of an `#if` condition, leaving out the operands of `defined`.
fn condition_identifiers(toks: &[Token]) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if let Tok::Ident(name) = &toks[i].tok {
            if name == "defined" {
                match toks.get(i + 1).map(|t| &t.tok) {
                    Some(Tok::Ident(_)) => i += 2,
                    Some(Tok::LParen) => i += 3,
                    _ => i += 1,
                }
                continue;
            }
            out.push((name.clone(), toks[i].line));
        }
        i += 1;
    }
    out
}

fn check_identifiers(toks: &[Token], note: &mut impl FnMut(Finding)) {
    for t in toks {
        if let Tok::Ident(name) = &t.tok
            && names_a_file(name)
        {
            note(Finding {
                line: t.line,
                kind: Kind::FileIdentifier(format!("`{}`", shown(name))),
            });
        }
    }
}

/// An identifier of the source for a message: ASCII word characters only (the tokenizer
/// guarantees it), at most 40 of them.
fn shown(name: &str) -> String {
    if name.len() <= 40 {
        name.to_owned()
    } else {
        format!("{}…", &name[..40])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(src: &str) -> Finding {
        find_refused(src).unwrap_or_else(|| panic!("not refused: {src:?}"))
    }

    fn file(src: &str) -> (u32, String) {
        match refused(src) {
            Finding {
                line,
                kind: Kind::FileDirective(what) | Kind::FileIdentifier(what),
            } => (line, what),
            other => panic!("{src:?}: {other:?}"),
        }
    }

    fn shipped(name: &str) -> String {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("kernels")
                .join(name),
        )
        .unwrap()
    }

    #[test]
    fn the_shipped_kernels_pass() {
        for f in ["attention.cu", "reference.cu", "util.cu"] {
            assert_eq!(find_refused(&shipped(f)), None, "{f}");
        }
        for plant in ["oob", "race", "misaligned"] {
            let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/sanitize")
                .join(plant)
                .join("attention.cu");
            assert_eq!(
                find_refused(&std::fs::read_to_string(p).unwrap()),
                None,
                "{plant}"
            );
        }
    }

    #[test]
    fn every_include_form_is_refused() {
        let cases: &[(&str, u32, &str)] = &[
            ("#include \"x.h\"\n", 1, "#include"),
            ("int a;\n  #  include <x>\n", 2, "#include"),
            ("#include_next <x>\n", 1, "#include_next"),
            ("%:include \"x\"\n", 1, "%:include"),
            ("??=include \"x\"\n", 1, "??=include"),
            ("#inc\\\nlude \"x\"\n", 1, "#include"),
            ("#\\\ninclude \"x\"\n", 1, "#include"),
            ("#inc\\  \nlude \"x\"\n", 1, "#include"),
            ("#inc??/\nlude \"x\"\n", 1, "#include"),
            ("/* c */ # /* c */ include \"x\"\n", 1, "#include"),
            ("#embed \"x\"\n", 1, "#embed"),
            ("#import \"x\"\n", 1, "#import"),
            (
                "#define P \"/proc/self/environ\"\n#include P\n",
                2,
                "#include",
            ),
            ("\u{FEFF}#include \"x\"\n", 1, "#include"),
        ];
        for (src, line, what) in cases {
            assert_eq!(file(src), (*line, what.to_string()), "{src:?}");
        }
    }

    #[test]
    fn file_identifiers_are_refused_anywhere() {
        for (src, what) in [
            ("#if __has_include(\"x\")\n#endif\n", "`__has_include`"),
            (
                "#if __has_include_next(<x>)\n#endif\n",
                "`__has_include_next`",
            ),
            ("#if __has_embed(\"x\")\n#endif\n", "`__has_embed`"),
            (
                "#if defined(__has_include__)\n#endif\n",
                "`__has_include__`",
            ),
            ("#define I include\n", "`include`"),
            ("#define E(x) x##embed\n", "`embed`"),
            ("import \"x\";\n", "`import`"),
            ("int x = include;\n", "`include`"),
        ] {
            assert_eq!(file(src).1, what, "{src:?}");
        }
    }

    #[test]
    fn a_pasting_macro_is_refused_in_conditions() {
        let src = "#define CAT(a, b) a##b\n#define H CAT(__has_inc, lude)\n#if H(\"/etc/passwd\")\n#endif\n";
        assert_eq!(
            refused(src),
            Finding {
                line: 3,
                kind: Kind::PastingInCondition("H".into())
            }
        );
        let direct = "#define CAT(a, b) a %:%: b\n#if CAT(__has_inc, lude)(\"x\")\n#endif\n";
        assert_eq!(refused(direct).kind, Kind::PastingInCondition("CAT".into()));
        // `defined` of a pasting macro is fine, and so is pasting outside conditions.
        let fine =
            "#define CAT(a, b) a##b\n#if defined(CAT) && defined CAT\nint CAT(x, y);\n#endif\n";
        assert_eq!(find_refused(fine), None);
    }

    #[test]
    fn other_directives_are_refused() {
        for (src, what) in [
            ("#assert x(y)\n", "#assert"),
            ("#ident \"x\"\n", "#ident"),
            ("# 12 \"x.h\"\n", "a line marker (# and a number)"),
            ("#elifdef X\n", "#elifdef"),
        ] {
            match refused(src).kind {
                Kind::Directive(w) => assert_eq!(w, what, "{src:?}"),
                other => panic!("{src:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn comments_and_literals_are_not_code() {
        for src in [
            "// #include \"x\"\nint a;\n",
            "/* #include \"x\"\n #include \"y\" */ int a;\n",
            "const char* s = \"#include <x> include __has_include\";\n",
            "char c = '#'; char d = '\\'';\n",
            "const char* r = R\"x(\nplain text\n)x\";\n",
            "const char* e = \"\\\" #include\";\n",
            "int big = 1'000'000;\n",
            "#define S(x) #x\n#define T(a, b) a ## b\n",
            "#\n#pragma unroll\n#error don't\n",
            "float f = 1.5e+3f; double g = .5;\n",
            "int a; /* x */ # define Y 1\n",
        ] {
            assert_eq!(find_refused(src), None, "{src:?}");
        }
    }

    #[test]
    fn a_directive_hidden_from_one_reading_is_refused() {
        // A trigraph splice that ends a comment's line in one reading and not in the other.
        assert_eq!(file("// x ??/\n#include \"x\"\n").1, "#include");
        // A raw string a compiler may not see (in a skipped group) hides nothing.
        assert_eq!(
            file("#if 0\nR\"x(\n#endif\n#include \"x\"\n)x\"\n#endif\n").1,
            "#include"
        );
        // A spaced backslash that splices a comment for GCC only.
        assert_eq!(file("// x \\ \n#include \"x\"\n").1, "#include");
        // Directives inside macro arguments.
        assert_eq!(file("F(a,\n#include \"x\"\n)\n").1, "#include");
        // A block comment ending on a later line leaves the # first on its line.
        assert_eq!(file("int a; /*\n*/ #include \"x\"\n").1, "#include");
    }

    #[test]
    fn characters_that_could_hide_an_identifier_are_refused() {
        assert_eq!(refused("int \\u0069nclude;\n").kind, Kind::Backslash);
        // A lone carriage return ends a line for some readers.
        assert_eq!(file("// c\r#include \"x\"\n"), (2, "#include".into()));
        assert_eq!(refused("int x\\ \n;\n").kind, Kind::Backslash);
        assert_eq!(refused("int \u{0131}nclude;\n").kind, Kind::NonAscii);
        assert_eq!(
            refused("int a;\nint b\0;\n"),
            Finding {
                line: 2,
                kind: Kind::Nul
            }
        );
        // In comments and literals they are text.
        assert_eq!(
            find_refused("// µs \\u0069\nconst char* s = \"µ\\u0069\";\n"),
            None
        );
    }

    #[test]
    fn the_sentence_names_file_line_and_construct() {
        let e = check_no_file_access(
            "int a;\n\n#include \"/proc/self/environ\"\n",
            "kernels/attention.cu",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "kernels/attention.cu:3: #include is refused: the kernels are compiled without access to any file (kernels/README.md)"
        );
    }

    #[test]
    fn hostile_inputs_end_quickly() {
        // Many unterminated raw strings and comments: linear, not quadratic. The sizes keep a
        // linear scan at a few seconds of a debug build on a loaded 2-core machine, where a
        // quadratic one would take hours (the bound is wall time, shared with other builds).
        let src = "R\"x(".repeat(50_000);
        let t = std::time::Instant::now();
        let _ = find_refused(&src);
        let _ = find_refused(&"/*".repeat(50_000));
        // A long chain of macros, each naming the one before, the first pasting.
        let mut src = String::from("#define M0 a##b\n");
        for k in 1..5_000 {
            src.push_str(&format!("#define M{k} M{}\n", k - 1));
        }
        src.push_str("#if M4999\n#endif\n");
        assert_eq!(
            find_refused(&src).map(|f| f.kind),
            Some(Kind::PastingInCondition("M4999".into()))
        );
        assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
    }
}
