//! The nesting depth of YAML text, found before any YAML parser sees it: libyaml's scanner
//! (the parser serde_yaml uses) spends time quadratic in the depth of flow collections, and
//! serde_yaml loads a whole document's events before its own recursion limit applies, so a
//! config 100 000 brackets deep must be refused by something cheaper.
//!
//! [`too_deep`] reads the text once, in safe code, and follows YAML's rules as far as nesting
//! goes: block collections by their indentation and their `- `, `? ` and `key:` indicators,
//! flow collections by their brackets (a `key: value` entry of a flow sequence is a mapping
//! of its own), with quoted, block and multi-line plain scalars and comments skipped. It
//! finds the depth of libyaml's events on the shipped configs and hostile files; on text
//! that is not YAML (which libyaml refuses at its first error) it counts the brackets and
//! indicators it sees, which in a fuzzed corpus was never more than one level short, so
//! deep nesting is always found. Real configs are 4 levels deep. A leaf: it knows nothing of
//! the rest of the crate.

/// A block collection open at a column.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    Sequence,
    Mapping,
}

/// What the scanner is inside of across lines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Within {
    /// Block context: a line's indentation and indicators say what opens and closes.
    Block,
    /// A quoted scalar that has not closed yet.
    Quoted(char),
    /// A block scalar (`|` or `>`) whose parent node is at this column (-1: the document),
    /// with the indentation of its content once known.
    BlockScalar { parent: i64, indent: Option<usize> },
    /// A plain scalar in block context, whose parent node is at this column: more indented
    /// lines continue it.
    Plain { parent: i64 },
}

struct Scanner {
    blocks: Vec<(usize, Block)>,
    /// Open flow collections: whether each is a sequence, and whether its current entry is
    /// a `key: value` pair (a mapping of its own in YAML's tree).
    flows: Vec<(bool, bool)>,
    /// The flow collections and pairs open: `flows.len()` plus the pairs.
    flow: usize,
    /// The deepest a flow collection that started a block node reached, and its column:
    /// followed by `:` it was a mapping's key, and that mapping held it.
    flow_key: Option<(usize, usize)>,
    within: Within,
    /// The last character outside quotes that was not white space (`x` for one that is
    /// part of a plain scalar): a quote opens a scalar, and `#` a comment, only where a
    /// token can start.
    last: Option<char>,
    limit: usize,
}

/// Characters that separate tokens.
fn blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// `at` moved past the blanks at it.
fn skip_blanks(line: &str, at: usize) -> usize {
    line.len() - line[at..].trim_start_matches(blank).len()
}

/// `at` moved past the anchors (`&a`) and tags (`!t`) at it, and the blanks after each.
fn skip_properties(line: &str, mut at: usize) -> usize {
    while line[at..].starts_with(['&', '!']) {
        at += line[at..].find(blank).unwrap_or(line.len() - at);
        at = skip_blanks(line, at);
    }
    at
}

impl Scanner {
    fn depth(&self) -> usize {
        self.blocks.len() + self.flow
    }

    fn open_block(&mut self, column: usize, kind: Block) -> bool {
        match self.blocks.last() {
            Some(&(c, k)) if c == column && k == kind => return false,
            // A mapping key at the column of a sequence that sits in a mapping at that column
            // (`key:` then `- item` at the same indentation) ends the sequence.
            Some(&(c, Block::Sequence)) if c == column && kind == Block::Mapping => {
                self.blocks.pop();
                if self.blocks.last() == Some(&(column, Block::Mapping)) {
                    return false;
                }
            }
            _ => {}
        }
        self.blocks.push((column, kind));
        self.depth() > self.limit
    }

    fn open_flow(&mut self, c: char) -> bool {
        self.flows.push((c == '[', false));
        self.flow += 1;
        if let Some((peak, _)) = &mut self.flow_key {
            *peak = (*peak).max(self.blocks.len() + self.flow);
        }
        self.depth() > self.limit
    }

    fn close_flow(&mut self) {
        if let Some((_, pair)) = self.flows.pop() {
            self.flow -= 1 + usize::from(pair);
        }
    }

    /// A `key: value` pair or a `? key` in a flow sequence's entry opens a mapping.
    fn pair(&mut self) -> bool {
        match self.flows.last_mut() {
            Some((true, pair @ false)) => {
                *pair = true;
                self.flow += 1;
                self.depth() > self.limit
            }
            _ => false,
        }
    }

    /// A `,` ends a flow sequence's entry, and the pair it held.
    fn next_entry(&mut self) {
        if let Some((true, pair @ true)) = self.flows.last_mut() {
            *pair = false;
            self.flow -= 1;
        }
    }

    /// Scans `line` from byte `from` in flow context, in a quoted scalar, or after a flow
    /// collection or quoted scalar closed in block context; returns whether the depth went
    /// past the limit.
    fn scan_flow(&mut self, line: &str, from: usize) -> bool {
        let mut prev_blank = true;
        let mut chars = line[from..].chars().peekable();
        while let Some(c) = chars.next() {
            if let Within::Quoted(q) = self.within {
                if c == '\\' && q == '"' {
                    chars.next();
                } else if c == q {
                    if q == '\'' && chars.peek() == Some(&'\'') {
                        chars.next();
                    } else {
                        self.within = Within::Block;
                        self.last = Some(c);
                    }
                }
                prev_blank = false;
                continue;
            }
            if blank(c) {
                prev_blank = true;
                continue;
            }
            // Where a token may start: a quote there opens a scalar, `#` a comment.
            let token_starts = matches!(self.last, Some('[' | '{' | ',' | ':' | '?'));
            let node_starts = if self.flow > 0 {
                token_starts
            } else {
                self.last == Some(':')
            };
            match c {
                '#' if prev_blank || token_starts => return false,
                '"' | '\'' if node_starts => self.within = Within::Quoted(c),
                '[' | '{' if (self.flow > 0 || node_starts) && self.open_flow(c) => return true,
                ']' | '}' if self.flow > 0 => self.close_flow(),
                ',' if self.flow > 0 => self.next_entry(),
                _ => {}
            }
            // `:` and `?` are indicators only before a blank (or, for `:`, after a quoted or
            // flow key, as in JSON); elsewhere they are part of a plain scalar.
            let indicator = match c {
                ':' => {
                    chars
                        .peek()
                        .is_none_or(|&n| blank(n) || matches!(n, ',' | ']' | '}'))
                        || matches!(self.last, Some('"' | '\'' | ']' | '}'))
                }
                '?' => chars.peek().is_none_or(|&n| blank(n)),
                _ => true,
            };
            if indicator && c == ':' && self.flow == 0 {
                // A flow collection that began a block node was a mapping's key.
                if let Some((peak, column)) = self.flow_key.take()
                    && matches!(self.last, Some(']' | '}'))
                    && (peak + 1 > self.limit || self.open_block(column, Block::Mapping))
                {
                    return true;
                }
            }
            if indicator && matches!(c, ':' | '?') && self.flow > 0 && self.pair() {
                return true;
            }
            self.last = Some(if indicator { c } else { 'x' });
            prev_blank = false;
        }
        false
    }

    /// Scans one node that starts at byte `at` of a line in block context, after its
    /// properties: a flow collection, a quoted scalar, a block scalar, or a plain scalar.
    /// `parent` is the column of the collection that holds it (-1: the document).
    fn scan_node(&mut self, line: &str, at: usize, parent: i64) -> bool {
        let at = skip_properties(line, at);
        match line[at..].chars().next() {
            None | Some('#') => false,
            Some(c @ ('[' | '{')) => {
                self.last = Some(c);
                self.flow_key = Some((self.blocks.len(), at));
                self.open_flow(c) || self.scan_flow(line, at + 1)
            }
            Some(c @ ('"' | '\'')) => {
                self.within = Within::Quoted(c);
                self.last = None;
                self.scan_flow(line, at + 1)
            }
            Some('|' | '>') => {
                self.within = Within::BlockScalar {
                    parent,
                    indent: None,
                };
                false
            }
            Some(_) => {
                self.within = Within::Plain { parent };
                false
            }
        }
    }

    /// The byte after `key:` where a line holds an implicit mapping key at `at` (after its
    /// properties): a quoted key, or a plain one followed by `: ` (or `:` at the end of the
    /// line) before any comment. `None` for any other node.
    fn key_end(line: &str, at: usize) -> Option<usize> {
        let rest = &line[at..];
        let mut start = 0;
        if let Some(q @ ('"' | '\'')) = rest.chars().next() {
            let mut escaped = false;
            let close = rest[1..].char_indices().find(|&(_, c)| {
                let hit = c == q && !escaped;
                escaped = q == '"' && c == '\\' && !escaped;
                hit
            })?;
            start = 1 + close.0 + 1;
        } else if rest.starts_with(['[', '{', '|', '>', '#']) {
            return None;
        }
        let bytes = rest.as_bytes();
        for (i, &b) in bytes.iter().enumerate().skip(start) {
            match b {
                b'#' if i == 0 || bytes[i - 1] == b' ' || bytes[i - 1] == b'\t' => return None,
                b':' if i + 1 == bytes.len() || bytes[i + 1] == b' ' || bytes[i + 1] == b'\t' => {
                    return Some(at + i + 1);
                }
                _ => {}
            }
        }
        None
    }

    /// One line; returns whether the depth went past the limit on it.
    fn line(&mut self, line: &str) -> bool {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let content = line[indent..].trim_end_matches(blank);
        match self.within {
            Within::BlockScalar { parent, indent: i } => {
                if content.is_empty() {
                    return false;
                }
                if i.map_or(indent as i64 > parent, |i| indent >= i) {
                    self.within = Within::BlockScalar {
                        parent,
                        indent: Some(i.unwrap_or(indent)),
                    };
                    return false;
                }
                self.within = Within::Block;
            }
            Within::Plain { parent } => {
                if content.is_empty() || (indent as i64 > parent && !content.starts_with('#')) {
                    return false;
                }
                self.within = Within::Block;
            }
            Within::Quoted(_) => return self.scan_flow(line, 0),
            Within::Block => {}
        }
        if self.flow > 0 {
            return self.scan_flow(line, 0);
        }
        self.flow_key = None;
        self.last = None;
        if content.is_empty() || content.starts_with('#') {
            return false;
        }
        if indent == 0 && (content.starts_with("---") || content.starts_with("...")) {
            self.blocks.clear();
            return self.scan_node(line, skip_blanks(line, 3), -1);
        }
        if indent == 0 && content.starts_with('%') && self.blocks.is_empty() {
            return false;
        }
        while self.blocks.last().is_some_and(|&(c, _)| c > indent) {
            self.blocks.pop();
        }
        let mut at = indent;
        loop {
            let rest = &line[at..];
            let indicator =
                |c: char| rest.starts_with(c) && rest[1..].chars().next().is_none_or(blank);
            let kind = if indicator('-') {
                Block::Sequence
            } else if indicator('?') {
                Block::Mapping
            } else {
                break;
            };
            if self.open_block(at, kind) {
                return true;
            }
            at = skip_blanks(line, at + 1);
        }
        let parent = self.blocks.last().map_or(-1, |&(c, _)| c as i64);
        match Self::key_end(line, skip_properties(line, at)) {
            Some(end) => {
                self.open_block(at, Block::Mapping)
                    || self.scan_node(line, skip_blanks(line, end), at as i64)
            }
            None => self.scan_node(line, at, parent),
        }
    }
}

/// Whether YAML `text` nests sequences and mappings (block or flow) deeper than `limit`, and
/// if so the line (from 1) where it first does. Linear in the text, whatever it holds.
pub(crate) fn too_deep(text: &str, limit: usize) -> Option<usize> {
    let mut s = Scanner {
        blocks: Vec::new(),
        flows: Vec::new(),
        flow: 0,
        flow_key: None,
        within: Within::Block,
        last: None,
        limit,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if s.line(line) {
            return Some(i + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The depth `too_deep` finds: the least limit it accepts.
    fn depth(text: &str) -> usize {
        (0..64).find(|&l| too_deep(text, l).is_none()).unwrap()
    }

    #[test]
    fn block_and_flow_nesting_count_as_yaml_nests() {
        assert_eq!(depth("a: 1\n"), 1);
        assert_eq!(depth("shapes:\n  - {batch: 1, heads: 8}\n"), 3);
        assert_eq!(depth("shapes:\n- {batch: 1, heads: 8}\n"), 3);
        assert_eq!(depth("shapes:\n  - batch: 1\n    heads: 8\n"), 3);
        assert_eq!(depth("gate:\n  alpha: 0.05\nmeasure:\n  cache: hot\n"), 2);
        assert_eq!(depth("a:\n  b:\n    c:\n      d: [1, [2]]\n"), 6);
        assert_eq!(depth("- - - x\n"), 3);
        assert_eq!(depth("? [a]\n: b\n"), 2);
        assert_eq!(depth("a: &x [1]\nb: !!seq [1]\n&y c: 1\n"), 2);
        assert_eq!(depth("a: [1,\n  [2,\n   [3]]]\nb: 1\n"), 4);
        assert_eq!(depth("a: [k: v, [x]]\n"), 3);
        assert_eq!(depth("[a, [b]]: c\n"), 3);
    }

    #[test]
    fn scalars_and_comments_do_not_nest() {
        assert_eq!(depth("a: \"[[[[\"\nb: '{{{{'\n"), 1);
        assert_eq!(depth("a: x[[[[\nb: - - -\n"), 1);
        assert_eq!(depth("a: 1 # [[[[\n# [[[[\n"), 1);
        assert_eq!(depth("a: |\n  - - - -\n  [[[[\nb: >\n  {{{{\n"), 1);
        assert_eq!(depth("a: [\"]]\", 'x''[[']\n"), 2);
        assert_eq!(depth("a: \"multi\n  [[[[ line\"\nb: 1\n"), 1);
        assert_eq!(depth("a: plain\n  [[[[ continued\nb: 1\n"), 1);
        assert_eq!(depth("a: [x'y, [z]]\n"), 3);
    }

    #[test]
    fn the_line_is_where_the_limit_is_passed() {
        assert_eq!(too_deep("a:\n  b:\n    c: 1\n", 2), Some(3));
        assert_eq!(too_deep("a: [[[]]]\n", 3), Some(1));
        assert_eq!(too_deep("a: [[[]]]\n", 4), None);
    }

    #[test]
    fn hostile_depth_is_found_in_linear_time() {
        let n = 1_000_000;
        for text in [
            format!("shapes: {}{}\n", "[".repeat(n), "]".repeat(n)),
            format!("shapes: {}\n", "{a: ".repeat(n)),
            format!("shapes: {}\n", "[k: ".repeat(n)),
            format!("shapes:\n{}x\n", "- ".repeat(n)),
            (0..n)
                .map(|i| format!("{}k:\n", " ".repeat(i % 200)))
                .collect(),
        ] {
            let start = std::time::Instant::now();
            assert!(too_deep(&text, 32).is_some());
            assert!(start.elapsed().as_secs_f64() < 1.0, "{:?}", start.elapsed());
        }
    }
}
