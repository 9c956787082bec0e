//! Markdown: the PR comment body and the job summary. Starts with a hidden marker so the
//! comment can be found again; every piece of untrusted text is escaped.

use std::fmt::Write;

use super::{
    Col, Exporter, Report, Row, alpha_line, bound_phrase, bound_text, cell, columns, findings,
    legend, pct,
};
use crate::comparison::{Comparison, Reference};
use crate::method::Method;
use crate::text::short_commit;
use crate::verdict::Verdict;

/// Hidden marker that identifies ci-gate's PR comment.
pub(crate) const MARKER: &str = "<!-- ci-gate:perf-report -->";

pub struct MarkdownExporter;

/// Zero-width space, as an entity: put after `@` and `#` so that the text GitHub renders
/// can never read as a mention (`@team`) or a reference (`#12`).
const BREAK: &str = "&#8203;";

/// One profiled shape, collapsed: the summary names the shape, why, and the change in
/// duration; inside, every figure base against candidate.
fn profile_details(shape: &str, p: &crate::profile::ShapeProfile) -> String {
    let rows = p.rows();
    let change = rows
        .first()
        .map(|r| r[3].clone())
        .filter(|c| c != "—")
        .map(|c| format!(", duration {}", escape_markdown(&c)))
        .unwrap_or_default();
    let mut md = format!(
        "<details><summary>Nsight Compute: {} ({}){change}</summary>\n\n",
        escape_markdown(shape),
        p.reason,
    );
    let kernel = p
        .candidate
        .as_ref()
        .or(p.base.as_ref())
        .map(|k| k.kernel.as_str());
    if let Some(k) = kernel {
        let _ = writeln!(
            md,
            "Kernel {}, one launch each, clocks as measured.\n",
            escape_markdown(k)
        );
    }
    md.push_str("| figure | base | candidate | change |\n|---|--:|--:|--:|\n");
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            escape_markdown(&r[0]),
            escape_markdown(&r[1]),
            escape_markdown(&r[2]),
            escape_markdown(&r[3])
        );
    }
    if let Some(e) = &p.error {
        let _ = writeln!(md, "\n{}", escape_markdown(e));
    }
    md.push_str("\n</details>\n\n");
    md
}

/// Escapes untrusted text for a Markdown table cell, list item or paragraph, so that nothing
/// in it can mention, link, embed HTML, format, or change the direction of text, while the
/// raw text stays readable (the fallback file is read as plain text: `6.00`, not `6&#46;00`):
///
/// - ASCII punctuation that Markdown or HTML could read as markup becomes a numeric entity
///   (`&#60;` for `<`, `&#124;` for `|`, ...): no tags (`<details>`, `<img>`), no emphasis,
///   code, tables, links, images or math, and no autolink (`https://`, e-mail addresses);
///   what cannot mark anything up stays as it is: `.` `,` `%` `/` `(` `'` `"` `?` anywhere,
///   `+` `-` `)` and `:` unless a space follows (a list marker, a `key: value` needs none),
///   `_` inside a word (GitHub reads no emphasis there), `.` unless it could end an
///   ordered-list number;
/// - `@` (also fullwidth `＠` and small `﹫`) and `#` (also `＃`, `﹟`) are followed by a
///   zero-width space, so that even the rendered text holds no `@name` mention or `#12`
///   reference; so is the `-` of `GH-` (any case), so no `GH-12` reference either; `://` and
///   `www.` get one inside, so no URL survives in the rendered text;
/// - entities in the input stay text (`&#64;` in, `&#38;#64;` out: it shows `&#64;`);
/// - line breaks and tabs become spaces, and control, bidirectional (U+202A–U+202E,
///   U+2066–U+2069, U+200E/F, ...) and zero-width characters are dropped.
pub(crate) fn escape_markdown(text: &str) -> String {
    let chars: Vec<char> = text
        .chars()
        .filter_map(|c| {
            if c == '\t' || c == '\n' || c == '\r' || c == '\u{2028}' || c == '\u{2029}' {
                Some(' ')
            } else if crate::validate::is_hidden(c) {
                None
            } else {
                Some(c)
            }
        })
        .collect();
    let mut out = String::with_capacity(text.len() * 2);
    for (i, &ch) in chars.iter().enumerate() {
        match ch {
            '@' | '#' | '\u{FF20}' | '\u{FE6B}' | '\u{FF03}' | '\u{FE5F}' => {
                let _ = write!(out, "&#{};{BREAK}", ch as u32);
            }
            c if c.is_ascii_punctuation() => {
                let www = c == '.'
                    && i >= 3
                    && chars
                        .get(i - 3..i)
                        .is_some_and(|w| w.iter().all(|c| c.eq_ignore_ascii_case(&'w')));
                if www {
                    out.push_str(BREAK);
                }
                if stays_raw(&chars, i) {
                    out.push(c);
                } else {
                    let _ = write!(out, "&#{};", c as u32);
                }
                if c == ':' && chars.get(i + 1..i + 3) == Some(&['/', '/']) {
                    out.push_str(BREAK);
                }
                // GitHub reads `GH-12` as a reference to issue 12, as it reads `#12`.
                let gh = c == '-'
                    && i >= 2
                    && chars
                        .get(i - 2..i)
                        .is_some_and(|w| w.iter().map(char::to_ascii_lowercase).eq(['g', 'h']));
                if gh {
                    out.push_str(BREAK);
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether the ASCII punctuation at `chars[i]` can stay raw: it marks nothing up where it is
/// (see [`escape_markdown`]).
fn stays_raw(chars: &[char], i: usize) -> bool {
    let next = chars.get(i + 1).copied();
    let prev = i.checked_sub(1).and_then(|j| chars.get(j)).copied();
    let space_after = next.is_none_or(char::is_whitespace);
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    match chars[i] {
        '.' | ',' | '%' | '/' | '(' | '\'' | '"' | '?' => {
            // "1. " or "12) " at the start could begin an ordered list.
            !(chars[i] == '.' && space_after && chars[..i].iter().all(char::is_ascii_digit))
        }
        ')' => !(space_after && chars[..i].iter().all(char::is_ascii_digit)),
        // A list marker is one at the start followed by a space; a rule is a line of them.
        '+' | '-' => {
            let list_marker = space_after && chars[..i].iter().all(|c| c.is_whitespace());
            let rule = chars.iter().all(|&c| c == chars[i] || c == ' ');
            !(list_marker || rule)
        }
        ':' | ';' => space_after,
        '=' => space_after && prev.is_some_and(char::is_whitespace),
        // An interval of figures, `[+0.05%, +5.65%]`: a bracket that opens a number or
        // closes one, and is no link, footnote or reference (`](`, `[^`, `]:`, `][`).
        '[' => next.is_some_and(|c| c == '+' || c == '-' || c.is_ascii_digit()),
        ']' => {
            prev.is_some_and(|c| c == '%' || c.is_ascii_digit())
                && !matches!(next, Some('(' | '[' | ':'))
        }
        '_' => word(prev) && word(next),
        _ => false,
    }
}

/// A label safe inside a quoted Mermaid string: letters, digits, `_`, `-`, `.` only.
fn mermaid_label(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect()
}

fn icon(report: &Report) -> &'static str {
    if !report.passed {
        "❌"
    } else if report.rows.iter().any(|r| r.verdict.warns())
        || !report.actionable_warnings().is_empty()
        || !findings(report).0.is_empty()
    {
        "⚠️"
    } else {
        "✅"
    }
}

/// `A/B +0.31%` or `stored +4.47%`: a comparison's Δ, named by its reference.
fn named_delta(report: &Report, c: &Comparison) -> String {
    let name = match c.reference {
        Reference::Ab => "A/B",
        Reference::Stored if report.stored_label == "stored baseline" => "stored",
        Reference::Stored => report.stored_label,
    };
    format!(
        "{name} {}{}",
        pct(c.ratio),
        if c.process_sd_assumed { "*" } else { "" }
    )
}

/// The verdict as the table shows it (`drift (runner moved)`).
fn verdict_text(row: &Row) -> String {
    cell(Col::Verdict, row)
}

/// At most `max` names, then "and N more".
fn some_names(names: &[&str], max: usize) -> String {
    let shown: Vec<String> = names.iter().take(max).map(|n| escape_markdown(n)).collect();
    if names.len() > max {
        format!("{} and {} more", shown.join(", "), names.len() - max)
    } else {
        shown.join(", ")
    }
}

/// A command for the reader to run, as code.
fn command(text: &str) -> String {
    format!("<code>{}</code>", escape_markdown(text))
}

/// One line per kind of non-pass verdict: which shapes, what decided it, and what to do
/// next. Every text from the file is escaped.
fn next_steps(report: &Report) -> Vec<String> {
    let mut groups: Vec<(String, Vec<&Row>)> = Vec::new();
    for row in report.rows.iter().filter(|r| r.verdict != Verdict::Pass) {
        let key = verdict_text(row);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, rows)) => rows.push(row),
            None => groups.push((key, vec![row])),
        }
    }
    // Worst first, as the headline counts them.
    let order = |v: Verdict| report.counts().iter().position(|(c, _)| *c == v);
    groups.sort_by_key(|(_, rows)| order(rows[0].verdict));
    groups
        .iter()
        .filter_map(|(key, rows)| {
            let names: Vec<&str> = rows.iter().map(|r| r.shape.as_str()).collect();
            let step = next_step(report, rows[0])?;
            Some(format!(
                "- **{}** on {}: {step}",
                escape_markdown(key),
                some_names(&names, 4)
            ))
        })
        .collect()
}

/// What to do next about the shapes of `first`'s kind, from what decided `first`; `None`
/// for a pass.
fn next_step(report: &Report, first: &Row) -> Option<String> {
    let config = report.config_path();
    let (decider, _) = first.deciding();
    // The estimate with the bound that decided, at its level.
    let figures = |c: Option<&Comparison>| {
        c.map(|c| {
            format!(
                "{} ({})",
                named_delta(report, c),
                bound_phrase(c, first.verdict)
            )
        })
    };
    let shape_arg = format!("--shape {}", first.shape);
    Some(match first.verdict {
        Verdict::Drift => drift_step(report, first),
        Verdict::Inconclusive => {
            let (settle, pairs) = decider
                .map(|c| pairs_to_settle(c, report.gate.max_p50_regression))
                .unwrap_or_default();
            format!(
                "{} reaches past the ±{:.1}% margin without settling either way{settle}: measure more pairs on the runner with {}, or re-run the job",
                figures(decider).unwrap_or_else(|| "the interval".into()),
                report.gate.max_p50_regression * 100.0,
                command(&format!("ci-gate local {shape_arg} --rounds {pairs}"))
            )
        }
        Verdict::ParityFail => {
            let detail = match (&first.error, &first.parity) {
                (Some(e), _) => escape_markdown(e),
                (None, Some(p)) => parity_detail(p),
                _ => "the candidate's output differs from the fp32 reference".into(),
            };
            format!(
                "the candidate's output against the fp32 reference: {detail}; reproduce with {} (parity runs before any timing)",
                command(&format!("ci-gate local {shape_arg}"))
            )
        }
        Verdict::Error => format!(
            "{}; fix that and push again ({} checks that the kernels compile, without a GPU)",
            first
                .error
                .as_deref()
                .map(escape_markdown)
                .unwrap_or_else(|| "it could not be measured".into()),
            command("ci-gate compile")
        ),
        Verdict::Regression => format!(
            "{} against the base: see the Nsight Compute figures below, or profile on the runner with {}",
            figures(decider).unwrap_or_else(|| "slower".into()),
            command(&format!(
                "ci-gate local {shape_arg} --profile {}",
                first.shape
            ))
        ),
        Verdict::Improvement => format!(
            "{}: after merging, record the faster kernel as the baseline so later pull requests are measured against it (Actions → baseline-update)",
            figures(decider).unwrap_or_else(|| "faster".into())
        ),
        Verdict::OtherMethod => other_method_step(report),
        Verdict::NoBaseline => format!(
            "no reference: {}; record this GPU's baseline (Actions → baseline-update, or {})",
            if report.base.is_some() {
                "A/B did not run (identical kernels) and there is no stored baseline"
            } else {
                "no base kernels and no stored baseline"
            },
            command(&format!(
                "ci-gate baseline update --config {config} --reason \"first baseline\""
            ))
        ),
        Verdict::Pass => return None,
    })
}

/// What to do about shapes whose stored baseline was measured by another method: nothing
/// judged them (the warning under the table names both methods); record the baseline again
/// with this ci-gate.
fn other_method_step(report: &Report) -> String {
    format!(
        "not compared: the stored baseline was measured by method {}, this run by {} (times of two methods are not comparable); record it again on the runner: Actions → baseline-update → Run workflow, or {}",
        escape_markdown(&Method::describe(
            report.baseline.as_ref().and_then(|b| b.method.as_ref())
        )),
        escape_markdown(&Method::describe(report.method.as_ref())),
        command(&format!(
            "ci-gate baseline update --config {} --reason \"measuring method\"",
            report.config_path()
        ))
    )
}

/// What to do about a drift: what moved (the runner, the code, or either), and how to
/// re-record the baseline or find the commit that crept.
fn drift_step(report: &Report, first: &Row) -> String {
    let config = report.config_path();
    let shape_arg = format!("--shape {}", first.shape);
    let baseline = report
        .baseline
        .as_ref()
        .map(|b| {
            format!(
                "the stored baseline {} (commit {}, recorded {})",
                escape_markdown(&b.path),
                escape_markdown(
                    &b.commit
                        .as_deref()
                        .map_or_else(|| "unknown".to_owned(), short_commit)
                ),
                b.recorded_at.format("%Y-%m-%d")
            )
        })
        .unwrap_or_else(|| "the stored baseline".to_owned());
    let rerecord = format!(
        "re-record it on the runner: Actions → baseline-update → Run workflow, or {}",
        command(&format!(
            "ci-gate baseline update --config {config} --reason \"…\""
        ))
    );
    let interval =
        |c: &Comparison| format!("{} ({})", pct(c.ratio), bound_phrase(c, Verdict::Drift));
    let moved = format!(
        "{baseline} puts the candidate at {} while A/B against the base shows {}",
        first
            .stored
            .as_ref()
            .map(interval)
            .unwrap_or_else(|| "slower".into()),
        first
            .ab
            .as_ref()
            .map(|c| pct(c.ratio))
            .unwrap_or_else(|| "no change".into())
    );
    match first.drift_cause {
        Some(crate::results::DriftCause::Runner) => format!(
            "{moved}; the baseline's own kernels are as slow now, so the runner moved and the baseline is stale: {rerecord}"
        ),
        Some(crate::results::DriftCause::Code) => format!(
            "{moved}; the code is slower than the baseline's kernels measured now, so earlier merges crept: find the commit with {} before re-recording",
            command(
                &report
                    .bisect_command(&first.shape)
                    .unwrap_or_else(|| format!("ci-gate history {shape_arg}"))
            )
        ),
        _ => format!(
            "{moved}: the runner or earlier merges moved; if the runner changed, {rerecord}; else find the commit with {}",
            command(&format!("ci-gate history {shape_arg}"))
        ),
    }
}

/// " (about N pairs would settle it; n ran)" for an inconclusive comparison, and the pairs
/// to ask `--rounds` for: the distance from the estimate to the bound that decided shrinks
/// as one over the square root of the pairs, and it must shrink to the distance between the
/// estimate and the nearer edge of the margin. At least twice the pairs that ran, at most
/// 200 (what `--rounds` takes).
fn pairs_to_settle(c: &Comparison, margin: f64) -> (String, u32) {
    let est = c.ratio.ln();
    let bound = if c.ratio >= 1.0 {
        c.lower_bound
    } else {
        c.upper_bound
    };
    let half = (est - bound.ln()).abs();
    let distance = (est.abs() - (1.0 + margin).ln()).abs();
    let n = c.n_cand.max(2) as f64;
    let at_least = ((2.0 * n) as u32).clamp(2, 200);
    if !(half.is_finite() && distance.is_finite()) || half <= 0.0 {
        return (String::new(), at_least);
    }
    if distance < half / 10.0 {
        return (
            " (the estimate sits on the margin: no practical number of pairs settles it)".into(),
            200,
        );
    }
    let need = (n * (half / distance).powi(2)).ceil();
    if need > 200.0 {
        (
            format!(" (more than 200 pairs would be needed; {n:.0} ran)"),
            200,
        )
    } else {
        (
            format!(" (about {need:.0} pairs would settle it; {n:.0} ran)"),
            (need as u32).max(at_least).min(200),
        )
    }
}

/// Which parity figure is off, against its tolerance.
fn parity_detail(p: &crate::results::Parity) -> String {
    let mut parts = Vec::new();
    if p.unwritten > 0 {
        parts.push(format!("{} output elements never written", p.unwritten));
    }
    if p.nan_or_inf > 0 {
        parts.push(format!("{} NaN or Inf", p.nan_or_inf));
    }
    if p.rel_l2 > p.tolerance.rel_l2 {
        parts.push(format!(
            "relative L2 error {:.2e} above the tolerance {:.1e}",
            p.rel_l2, p.tolerance.rel_l2
        ));
    }
    if p.max_abs > p.tolerance.max_abs {
        parts.push(format!(
            "max abs error over s_V {:.2e} above the tolerance {:.1e}",
            p.max_abs, p.tolerance.max_abs
        ));
    }
    if let (false, Some(c), Some(t)) = (p.centered_passed(), p.centered, p.tolerance.centered) {
        parts.push(format!(
            "centered L2 error {c:.2e} above the tolerance {t:.1e} (the part of the output that depends on q is not computed)"
        ));
    }
    if parts.is_empty() {
        "differs from the fp32 reference".into()
    } else {
        parts.join(", ")
    }
}

/// The short table a reviewer reads: the shape, its verdict, the figure that decided it
/// (named), that figure's interval, the other reference, the candidate's p50 and parity.
/// "Compiler resources": a row per kernel whose figures moved, or one line where none did.
/// A Markdown table of `header` and `rows`, every cell escaped.
fn table_rows(md: &mut String, header: &[String], rows: &[Vec<String>]) {
    let cells = |row: &[String]| {
        row.iter()
            .map(|c| escape_markdown(c))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let _ = writeln!(
        md,
        "| {} |\n|{}",
        cells(header),
        "---|".repeat(header.len())
    );
    for row in rows {
        let _ = writeln!(md, "| {} |", cells(row));
    }
}

/// Where the run's time went (the results' `timing`), folded: what a reviewer waits for.
fn timing_details(t: &crate::results::RunTiming, md: &mut String) {
    let _ = writeln!(
        md,
        "<details><summary>Where the time went: {:.1} s</summary>\n",
        t.total_s
    );
    let _ = writeln!(md, "| phase | s |\n|---|---:|");
    let rows = [
        ("setup (GPU, compiles, spin-up)", t.setup_s),
        ("parity on random shapes", t.probes_s),
        ("parity on the config's shapes", t.parity_s),
        ("measuring both sides (checks included)", t.measure_s),
        ("peers (PyTorch)", t.peers_s),
        ("tracing a drift", t.drift_s),
        ("energy per call", t.energy_s),
        (
            "waiting for the GPU's lock (not in the total)",
            t.lock_wait_s,
        ),
    ];
    for (what, s) in rows {
        if s > 0.0 || what.starts_with("measuring") {
            let _ = writeln!(md, "| {what} | {s:.1} |");
        }
    }
    md.push_str("\n</details>\n\n");
}

fn resources_table(r: &crate::resources::ResourceSection, md: &mut String) {
    if r.rows.is_empty() {
        let _ = writeln!(md, "<sub>{}</sub>\n", escape_markdown(&r.summary()));
        return;
    }
    let _ = writeln!(
        md,
        "**Compiler resources** {}\n",
        escape_markdown(&r.summary())
    );
    table_rows(md, &r.header, &r.rows);
    let _ = writeln!(
        md,
        "\n<sub>{}</sub>\n",
        escape_markdown(crate::resources::ResourceSection::LEGEND)
    );
}

fn summary_table(report: &Report, md: &mut String) {
    let _ = writeln!(
        md,
        "| Shape | Verdict | Deciding Δ | One-sided bound | Other reference | Cand p50 µs | Parity |"
    );
    md.push_str("|---|---|--:|---|--:|--:|---|\n");
    for row in &report.rows {
        let (decider, other) = row.deciding();
        let verdict = escape_markdown(&verdict_text(row));
        let verdict = if row.fails(report.policy) {
            format!("**{verdict}**")
        } else {
            verdict
        };
        let dash = || "—".to_owned();
        let cells = [
            escape_markdown(&row.shape),
            verdict,
            decider
                .map(|c| escape_markdown(&named_delta(report, c)))
                .unwrap_or_else(dash),
            decider
                .map(|c| escape_markdown(&bound_text(c, row.verdict)))
                .unwrap_or_else(dash),
            other
                .map(|c| escape_markdown(&named_delta(report, c)))
                .unwrap_or_else(dash),
            escape_markdown(&cell(Col::CandP50, row)),
            escape_markdown(&cell(Col::Parity, row)),
        ];
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
    md.push('\n');
    if let Some(line) = alpha_line(report) {
        let _ = writeln!(md, "<sub>{}</sub>\n", escape_markdown(&line));
    }
}

/// Every column of the terminal's `--wide` table, Verdict second, collapsed.
fn full_table(report: &Report, md: &mut String) {
    let mut cols = columns(report);
    if let Some(i) = cols.iter().position(|(c, _)| *c == Col::Verdict) {
        let v = cols.remove(i);
        cols.insert(1.min(cols.len()), v);
    }
    md.push_str("<details><summary>All figures</summary>\n\n");
    let titles: Vec<String> = cols.iter().map(|(_, t)| escape_markdown(t)).collect();
    let _ = writeln!(md, "| {} |", titles.join(" | "));
    let aligns: Vec<&str> = cols
        .iter()
        .map(|(c, _)| if c.left() { "---" } else { "--:" })
        .collect();
    let _ = writeln!(md, "|{}|", aligns.join("|"));
    for row in &report.rows {
        let cells: Vec<String> = cols
            .iter()
            .map(|(c, _)| escape_markdown(&cell(*c, row)))
            .collect();
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
    md.push_str("\n</details>\n\n");
}

impl Exporter for MarkdownExporter {
    fn render(&self, report: &Report) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "{MARKER}");
        let config = report
            .config_name
            .as_deref()
            .map(|c| format!(" · config <code>{}</code>", escape_markdown(c)))
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "### {} ci-gate: {}{config}\n",
            icon(report),
            escape_markdown(&report.headline())
        );
        if let Some(e) = &report.error {
            let _ = writeln!(
                md,
                "> ❌ **The gate could not reach a verdict:** {}\n>\n> Next: fix what this names and push again; the job's log has the details, and the check fails until a run reaches a verdict.\n",
                escape_markdown(e)
            );
        }

        let steps = next_steps(report);
        if !steps.is_empty() {
            let _ = writeln!(md, "{}\n", steps.join("\n"));
        }

        // A report without shapes (no verdict) has no table: no empty header.
        if !report.rows.is_empty() {
            summary_table(report, &mut md);
        }
        chart(report, &mut md);
        messages(report, &mut md);
        peers_and_energy(report, &mut md);
        if let Some(r) = &report.resources {
            resources_table(r, &mut md);
        }
        if let Some(t) = &report.timing {
            timing_details(t, &mut md);
        }
        for (shape, p) in report.profiled() {
            md.push_str(&profile_details(shape, p));
        }
        if let Some(line) = report.profiling_line() {
            let _ = writeln!(md, "<sub>{}</sub>\n", escape_markdown(&line));
        }

        if !report.rows.is_empty() {
            full_table(report, &mut md);
        }
        let _ = writeln!(md, "<sub>{}</sub>\n", escape_markdown(&legend(report)));
        environment_details(report, &mut md);
        footer(report, &mut md);
        md
    }
}

/// The Mermaid chart of every compared shape's change, with the gate's margin in range.
fn chart(report: &Report, md: &mut String) {
    let compared: Vec<_> = report
        .rows
        .iter()
        .filter_map(|r| r.primary().map(|c| (r, c)))
        .collect();
    if !compared.is_empty() {
        let labels: Vec<String> = compared
            .iter()
            .map(|(r, _)| format!("\"{}\"", mermaid_label(&r.shape)))
            .collect();
        let values: Vec<String> = compared
            .iter()
            .map(|(_, c)| format!("{:.2}", (c.ratio - 1.0) * 100.0))
            .collect();
        let m = report.gate.max_p50_regression * 100.0;
        let lo = compared
            .iter()
            .map(|(_, c)| (c.ratio - 1.0) * 100.0)
            .fold(-m, f64::min)
            .floor();
        let hi = compared
            .iter()
            .map(|(_, c)| (c.ratio - 1.0) * 100.0)
            .fold(m, f64::max)
            .ceil();
        let _ = writeln!(md, "```mermaid");
        let _ = writeln!(md, "xychart-beta");
        let label = mermaid_label(
            &compared
                .first()
                .map_or("Δp50", |(_, c)| c.method.ratio_label())
                .replace("Δ ", "Δ")
                .replace('Δ', "change of "),
        )
        .replace('_', " ");
        let _ = writeln!(md, "    title \"{label} per shape (%), gate at +{m:.1}%\"");
        let _ = writeln!(md, "    x-axis [{}]", labels.join(", "));
        let _ = writeln!(md, "    y-axis \"{label} %\" {lo} --> {hi}");
        let _ = writeln!(md, "    bar [{}]", values.join(", "));
        let _ = writeln!(md, "```\n");
    }
}

/// Each shape's error, then the warnings a reviewer must act on (⚠️) and the information
/// (ℹ️): a clock that moved, as it does on most runs, is information.
fn messages(report: &Report, md: &mut String) {
    for row in &report.rows {
        if let Some(e) = &row.error {
            let _ = writeln!(
                md,
                "> **error** {}: {}",
                escape_markdown(&row.shape),
                escape_markdown(e)
            );
        }
    }
    let (found_warnings, found_notes) = findings(report);
    let actionable = report.actionable_warnings();
    for w in actionable.iter().copied().chain(found_warnings.iter()) {
        let _ = writeln!(md, "> ⚠️ {}", escape_markdown(w));
    }
    let informational = report
        .warnings
        .iter()
        .filter(|w| super::is_informational(w));
    for n in informational.chain(&report.notes).chain(&found_notes) {
        let _ = writeln!(md, "> ℹ️ {}", escape_markdown(n));
    }
    if report.rows.iter().any(|r| r.error.is_some())
        || !report.warnings.is_empty()
        || !report.notes.is_empty()
        || !found_warnings.is_empty()
        || !found_notes.is_empty()
    {
        md.push('\n');
    }
}

/// The peers' table (against PyTorch) and the energy per call, where measured.
fn peers_and_energy(report: &Report, md: &mut String) {
    let (peer_header, peer_rows) = report.peer_rows();
    if !peer_rows.is_empty() {
        let _ = writeln!(
            md,
            "**Against PyTorch** (same run; ×: our p50 / theirs, as timed: see below; below 1 is faster)\n"
        );
        table_rows(md, &peer_header, &peer_rows);
        md.push('\n');
        if let Some(note) = &report.peer_note {
            let _ = writeln!(md, "<sub>{}</sub>\n", escape_markdown(note));
        }
    }
    let (energy_header, energy_rows, energy_why) = super::energy::energy_rows(report);
    if !energy_rows.is_empty() {
        let _ = writeln!(
            md,
            "<details><summary>{}</summary>\n",
            escape_markdown(&super::energy::title(report))
        );
        table_rows(md, &energy_header, &energy_rows);
        for w in &energy_why {
            let _ = writeln!(md, "\n<sub>{}</sub>", escape_markdown(w));
        }
        md.push_str("\n</details>\n\n");
    }
}

/// The environment's details: GPU, driver, CUDA, NVRTC, clocks before and after,
/// throttling, the stored baseline and the A/B base.
fn environment_details(report: &Report, md: &mut String) {
    if let Some(env) = &report.environment {
        let _ = writeln!(md, "<details><summary>Environment</summary>\n");
        let _ = writeln!(md, "| | |\n|---|---|");
        let mut kv = |k: &str, v: String| {
            let _ = writeln!(md, "| {k} | {} |", escape_markdown(&v));
        };
        kv(
            "GPU",
            format!(
                "{} (sm_{})",
                env.gpu_name,
                env.compute_capability.replace('.', "")
            ),
        );
        if let Some(d) = &env.driver_version {
            kv("Driver", d.clone());
        }
        if let Some(c) = &env.cuda_driver_version {
            kv("CUDA (driver)", c.clone());
        }
        if let Some(n) = &env.nvrtc_version {
            kv("NVRTC", n.clone());
        }
        for (label, state) in [("Before", &env.state_before), ("After", &env.state_after)] {
            if let Some(s) = state {
                kv(
                    label,
                    format!(
                        "SM {} MHz, mem {} MHz, {} °C, {} W",
                        s.sm_clock_mhz.map_or("?".into(), |v| v.to_string()),
                        s.mem_clock_mhz.map_or("?".into(), |v| v.to_string()),
                        s.temperature_c.map_or("?".into(), |v| v.to_string()),
                        s.power_w.map_or("?".into(), |v| format!("{v:.0}")),
                    ),
                );
            }
        }
        let throttle = env.throttle_reasons();
        kv(
            "Throttling",
            if throttle.is_empty() {
                "none".into()
            } else {
                throttle.join(", ")
            },
        );
        if let Some(b) = &report.baseline {
            kv(
                "Baseline",
                format!(
                    "{} ({}, {})",
                    b.path,
                    b.commit
                        .as_deref()
                        .map_or_else(|| "no commit".to_owned(), short_commit),
                    b.recorded_at.format("%Y-%m-%d")
                ),
            );
        }
        if let Some(b) = &report.base {
            kv(
                "A/B base",
                format!(
                    "{}{}",
                    b.commit
                        .as_deref()
                        .map_or_else(|| b.source.clone(), short_commit),
                    if b.measured {
                        ""
                    } else {
                        " (timed kernel identical: not measured)"
                    }
                ),
            );
        }
        let _ = writeln!(md, "\n</details>\n");
    }
}

/// The last line: the workflow run, the commit, ci-gate's version.
fn footer(report: &Report, md: &mut String) {
    let mut footer = Vec::new();
    if let Some(url) = &report.run_url {
        footer.push(format!(
            "[workflow run]({})",
            url.replace(['(', ')', ' '], "")
        ));
    }
    if let Some(c) = &report.commit {
        footer.push(format!(
            "commit <code>{}</code>",
            escape_markdown(&short_commit(c))
        ));
    }
    footer.push(format!("ci-gate {}", env!("CARGO_PKG_VERSION")));
    let _ = writeln!(md, "<sub>{}</sub>", footer.join(" · "));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What GitHub's renderer would make of escaped text: entities decoded, as in the HTML
    /// text nodes that its mention, reference and autolink filters read.
    fn rendered_text(escaped: &str) -> String {
        let mut out = String::new();
        let mut rest = escaped;
        while let Some(i) = rest.find("&#") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 2..];
            match after
                .find(';')
                .and_then(|j| Some((after[..j].parse::<u32>().ok()?, j)))
            {
                Some((code, j)) => {
                    out.push(char::from_u32(code).unwrap());
                    rest = &after[j + 1..];
                }
                None => {
                    out.push_str("&#");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// No raw character that Markdown or HTML could read as markup: the characters that
    /// mark up are entities; the ones kept raw are where they mark nothing up.
    fn assert_inert(e: &str) {
        let chars: Vec<char> = e.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let next = chars.get(i + 1).copied();
            let spaced = next.is_none_or(char::is_whitespace);
            let raw_ok = match c {
                '&' | '#' => true, // our entities (their ';' is checked below)
                '.' | ',' | '%' | '/' | '(' | ')' | '\'' | '"' | '?' => true,
                '+' | '-' => i > 0 || !spaced,
                ':' => spaced,
                // ';' ends our entities, and marks nothing up without a raw '&'.
                ';' => true,
                '=' => spaced && i > 0 && chars[i - 1].is_whitespace(),
                '[' => next.is_some_and(|c| c == '+' || c == '-' || c.is_ascii_digit()),
                ']' => {
                    i > 0
                        && (chars[i - 1] == '%' || chars[i - 1].is_ascii_digit())
                        && !matches!(next, Some('(' | '[' | ':'))
                }
                '_' => {
                    i > 0
                        && chars[i - 1].is_alphanumeric()
                        && next.is_some_and(char::is_alphanumeric)
                }
                c => !c.is_ascii_punctuation(),
            };
            assert!(raw_ok, "raw {c:?} at {i} in {e}");
        }
        assert!(!e.contains('\n') && !e.contains('\r'), "{e}");
        // Every '&' starts one of our numeric entities.
        for (i, _) in e.match_indices('&') {
            let tail = &e[i..];
            let end = tail.find(';').unwrap();
            assert!(
                tail.starts_with("&#") && tail[2..end].parse::<u32>().is_ok(),
                "{tail}"
            );
        }
    }

    /// Numbers, paths and identifiers stay as they are: the fallback file is read raw.
    #[test]
    fn figures_and_names_stay_readable() {
        for plain in [
            "6.00",
            "+4.47%",
            "-0.19%",
            "[+0.05%, +5.65%]",
            "nvidia-h200/pr.json",
            "b1h8s512d64_causal_f16",
            "(1965-1980 MHz)",
            "2026-11-24",
            "note: text",
        ] {
            let e = escape_markdown(plain);
            assert_eq!(e, plain, "{plain}");
        }
        // What could start a list, a rule or a heading where the text starts a line is not.
        assert_eq!(escape_markdown("1. x"), "1&#46; x");
        assert_eq!(escape_markdown("- x"), "&#45; x");
        assert_eq!(escape_markdown("---"), "&#45;&#45;&#45;");
        assert_eq!(escape_markdown("_x_"), "&#95;x&#95;");
        // A bracketed figure is no link.
        assert_eq!(
            escape_markdown("[+1](https://evil.example)"),
            "[+1&#93;(https&#58;&#8203;//evil.example)"
        );
    }

    #[test]
    fn escaping_neutralises_markup() {
        let e = escape_markdown("a|b <script>@alice [x](http://e) `c`\n# h");
        assert!(!e.contains("<script>"));
        assert!(!e.contains('\n'));
        assert!(!e.contains('|'), "a pipe cannot end the table cell: {e}");
        assert!(e.contains("&#64;&#8203;alice"));
        assert!(!e.contains("http://") && !e.contains("](") && !e.contains('['));
        assert_inert(&e);
        assert_eq!(
            rendered_text(&e).replace('\u{200B}', ""),
            "a|b <script>@alice [x](http://e) `c` # h"
        );
        assert_eq!(escape_markdown("plain text 12"), "plain text 12");
    }

    #[test]
    fn nothing_can_mention() {
        for attack in [
            "@alice",
            "cc @octo-org/security please",
            "&#64;alice",
            "&#x40;alice",
            "&commat;alice",
            "\u{FF20}alice",
            "\u{FE6B}alice",
            "a@\u{200B}alice",
            "@\u{202E}alice",
        ] {
            let e = escape_markdown(attack);
            assert_inert(&e);
            let text = rendered_text(&e);
            // After every '@' (any form) comes the zero-width space, never a login.
            for (i, c) in text.char_indices() {
                if matches!(c, '@' | '\u{FF20}' | '\u{FE6B}') {
                    assert!(
                        text[i + c.len_utf8()..].starts_with('\u{200B}'),
                        "{attack:?}: {text:?}"
                    );
                }
            }
            // Entities in the input are shown as text, never decoded into an '@'.
            if attack.starts_with('&') {
                assert!(!text.contains('@'), "{attack:?}: {text:?}");
                assert!(text.starts_with('&'), "{attack:?}: {text:?}");
            }
        }
    }

    #[test]
    fn nothing_can_link_or_reference() {
        for attack in [
            "https://evil.example/x",
            "see http://evil.example",
            "HTTPS://EVIL.EXAMPLE",
            "www.evil.example",
            "WWW.evil.example",
            "mail me: bob@evil.example",
            "[click](https://evil.example)",
            "![img](https://evil.example/p.png)",
            "<https://evil.example>",
            "fixes #12 and GH-3",
            "ftp://evil.example",
        ] {
            let e = escape_markdown(attack);
            assert_inert(&e);
            let lower = e.to_ascii_lowercase();
            for raw in ["://", "www.", "](", "<", "@", "#1"] {
                assert!(!lower.contains(raw), "{attack:?}: {e}");
            }
            let text = rendered_text(&e).to_ascii_lowercase();
            for pattern in ["://", "www.", "#1", "@evil"] {
                assert!(!text.contains(pattern), "{attack:?}: rendered {text:?}");
            }
        }
    }

    /// `#123` and `GH-123` (any case, also fullwidth `＃`) are issue references to GitHub:
    /// in the rendered text a zero-width space separates each from its number.
    #[test]
    fn issue_references_do_not_autolink() {
        for attack in [
            "#123",
            "fixes #123.",
            "GH-123",
            "see gh-123 and Gh-7",
            "owner/repo#123",
            "owner/repo GH-9",
            "\u{FF03}123",
            "x-GH-5",
        ] {
            let e = escape_markdown(attack);
            assert_inert(&e);
            let text = rendered_text(&e).to_ascii_lowercase();
            let bytes: Vec<char> = text.chars().collect();
            for (i, c) in bytes.iter().enumerate() {
                let reference_start = matches!(c, '#' | '\u{FF03}')
                    || (*c == '-' && i >= 2 && bytes[i - 2] == 'g' && bytes[i - 1] == 'h');
                if reference_start {
                    assert_eq!(
                        bytes.get(i + 1),
                        Some(&'\u{200B}'),
                        "{attack:?}: rendered {text:?}"
                    );
                }
            }
            assert!(
                !text.contains("gh-1") && !text.contains("gh-7") && !text.contains("#1"),
                "{attack:?}: rendered {text:?}"
            );
        }
        // Words that merely contain the letters stay as they were.
        assert_eq!(escape_markdown("high"), "high");
    }

    #[test]
    fn nothing_can_embed_html_or_hide_the_table() {
        for attack in [
            "<details><summary>PASS</summary>",
            "<img src=x onerror=alert(1)>",
            "</table><h1>PASS</h1>",
            "<!-- ci-gate:perf-report -->",
            "&lt;details&gt;",
            "\n### ✅ ci-gate: PASS\n",
            "| fake | row |",
            "```\nfenced",
        ] {
            let e = escape_markdown(attack);
            assert_inert(&e);
            assert!(
                !e.contains('<') && !e.contains('>') && !e.contains('`'),
                "{e}"
            );
            // Input entities stay visible text: "&lt;" is shown, not turned into "<".
            assert!(
                !rendered_text(&e).contains("<d") || attack.starts_with('<'),
                "{e}"
            );
        }
        assert_eq!(
            rendered_text(&escape_markdown("&lt;details&gt;")),
            "&lt;details&gt;"
        );
    }

    #[test]
    fn nothing_can_change_direction_or_hide() {
        let bidi = [
            '\u{202A}',
            '\u{202B}',
            '\u{202C}',
            '\u{202D}',
            '\u{202E}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{200E}',
            '\u{200F}',
            '\u{061C}',
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{E0041}',
            '\u{1B}',
            '\u{7}',
            '\u{85}',
            '\u{9B}',
        ];
        for c in bidi {
            let e = escape_markdown(&format!("ab{c}cd"));
            assert_eq!(e, "abcd", "U+{:04X}", c as u32);
        }
        assert_eq!(escape_markdown("a\u{2028}b\tc"), "a b c");
    }

    fn report_named(config: &str) -> Report {
        Report {
            config_name: Some(config.to_owned()),
            config_path: None,
            rows: Vec::new(),
            passed: true,
            gate: crate::config::GateSettings::default(),
            environment: None,
            baseline: None,
            method: None,
            commit: Some("é€😀".repeat(10)),
            run_url: None,
            warnings: vec!["@alice see https://evil.example <img src=x>".into()],
            notes: Vec::new(),
            error: None,
            base: None,
            policy: crate::verdict::Policy::default(),
            stored_label: "stored baseline",
            profiling: None,
            energy: Vec::new(),
            energy_info: None,
            resources: None,
            energy_from_baseline: false,
            peer_note: None,
            timing: None,
        }
    }

    #[test]
    fn the_heading_escapes_the_config_name_and_commits_never_panic() {
        let attack = "pr` ![x](https://evil.example/i.png) <details> @alice \u{202E}";
        let md = MarkdownExporter.render(&report_named(attack));
        let heading = md.lines().nth(1).unwrap();
        assert!(heading.starts_with("### "), "{heading}");
        assert!(
            heading.contains(" · config <code>pr&#96; &#33;&#91;x&#93;"),
            "{heading}"
        );
        assert!(
            !heading.contains("https://") && !heading.contains("<details>"),
            "{heading}"
        );
        assert!(
            !heading.contains('@') && !heading.contains('\u{202E}'),
            "{heading}"
        );
        // The commit is cut by characters (a byte cut would panic on this input).
        assert!(
            md.contains(&format!("commit <code>{}</code>", "é€😀".repeat(4))),
            "{md}"
        );
        assert!(!md.contains("https://evil") && !md.contains("<img"), "{md}");
    }
    #[test]
    fn a_profile_is_collapsed_with_the_duration_change_in_its_summary() {
        use crate::profile::{KernelProfile, ProfileReason, ProfilingInfo, ShapeProfile};
        let side = |us: f64| KernelProfile {
            kernel: "attention_fwd_f16_d64".into(),
            duration_us: Some(us),
            registers_per_thread: Some(244.0),
            ..KernelProfile::default()
        };
        let mut report = report_named("pr");
        let params = crate::config::ShapeParams {
            batch: 1,
            heads: 8,
            seq_len: 512,
            head_dim: 64,
            causal: true,
            dtype: crate::config::Dtype::Float16,
        };
        let mut shape = crate::results::ShapeResult::new(params);
        shape.profile = Some(ShapeProfile {
            reason: ProfileReason::Regression,
            base: Some(side(12.38)),
            candidate: Some(side(12.67)),
            error: None,
        });
        report.rows = vec![super::super::Row::of(&shape, &report.gate)];
        report.profiling = Some(ProfilingInfo {
            ncu_version: Some("Version 2025.3.1.0".into()),
            seconds: 6.2,
            budget_s: 300.0,
            dir: None,
        });
        let md = MarkdownExporter.render(&report);
        assert!(
            md.contains(
                "<details><summary>Nsight Compute: b1h8s512d64_causal_f16 (regression), duration +2.3%</summary>"
            ),
            "{md}"
        );
        assert!(
            md.contains("| duration (µs) | 12.38 | 12.67 | +2.3% |"),
            "{md}"
        );
        assert!(md.contains("profiled 1 shape with ncu"), "{md}");
    }

    #[test]
    fn peers_get_a_table_with_the_stored_gap() {
        use crate::peers::{Peer, PeerResult, StoredPeer};
        let params = crate::config::ShapeParams {
            batch: 1,
            heads: 8,
            seq_len: 512,
            head_dim: 64,
            causal: false,
            dtype: crate::config::Dtype::Float16,
        };
        let mut shape = crate::results::ShapeResult::new(params);
        shape.summary = crate::stats::Sample::new(vec![9.0, 9.0, 9.0])
            .ok()
            .map(|s| s.summary());
        shape.peers = vec![
            PeerResult {
                peer: Peer::TorchSdpa,
                samples_us: vec![vec![10.0]],
                p50_us: Some(10.0),
                error: None,
                backend: Some("cudnn".into()),
            },
            PeerResult {
                peer: Peer::TorchSdpaFlash,
                samples_us: vec![],
                p50_us: None,
                error: Some("no kernel".into()),
                backend: None,
            },
        ];
        shape.stored_peers = vec![StoredPeer {
            peer: Peer::TorchSdpa,
            p50_us: 8.0,
        }];
        let mut report = report_named("pr");
        report.rows = vec![super::super::Row::of(&shape, &report.gate)];
        let md = MarkdownExporter.render(&report);
        assert!(md.contains("**Against PyTorch**"), "{md}");
        assert!(
            md.contains("| SDPA µs | vs SDPA (default) | torch FA2 µs | vs torch FA2 |"),
            "{md}"
        );
        // 9 / 10 now; no stored comparison, so no "was".
        assert!(
            md.contains("| 9.00 | 10.00 (cudnn) | 0.90× | — | — |"),
            "{md}"
        );
        let (_, rows) = report.peer_rows();
        assert_eq!(rows[0][3], "0.90×");
    }

    #[test]
    fn mermaid_labels_are_restricted() {
        assert_eq!(mermaid_label("b1\"]; evil"), "b1____evil");
    }
}
