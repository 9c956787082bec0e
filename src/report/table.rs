//! The terminal table (comfy-table). Colour only on a terminal, and never when NO_COLOR is set.

use std::io::IsTerminal;

use comfy_table::{Cell, CellAlignment, Color, Table, presets};

use super::{Col, Exporter, Report, alpha_line, bound_line, cell, columns, findings};
use crate::verdict::Verdict;

pub struct TableExporter {
    color: bool,
    /// Columns fit this many characters (those that do not fit are left out, least useful
    /// first); `None` shows every column.
    width: Option<usize>,
}

/// The width a table fits when stdout is no terminal, and the least it fits in any case.
pub(crate) const DEFAULT_WIDTH: usize = 80;

impl TableExporter {
    /// For stdout: colour when it is a terminal and NO_COLOR is unset or empty
    /// (no-color.org); the terminal's width (or `$COLUMNS`, else 80) unless `wide`.
    pub(crate) fn for_stdout(wide: bool) -> TableExporter {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let tty = std::io::stdout().is_terminal();
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .or_else(|| tty.then(|| Table::new().width().map(usize::from)).flatten())
            .unwrap_or(DEFAULT_WIDTH)
            .max(DEFAULT_WIDTH);
        TableExporter {
            color: tty && !no_color,
            width: (!wide).then_some(width),
        }
    }

    /// No colour, every column (CI logs, which have no width).
    pub fn plain() -> TableExporter {
        TableExporter {
            color: false,
            width: None,
        }
    }
}

/// Which columns to show: the most useful first (`priority`, column indices from most to
/// least useful) until the width is spent (`UTF8_FULL_CONDENSED`: 3 characters around each
/// column, 1 more at the end); the first `always` of them show whatever the width. `None`
/// shows every column.
fn fit_columns(
    widths: &[usize],
    priority: &[usize],
    always: usize,
    budget: Option<usize>,
) -> Vec<bool> {
    let mut keep = vec![budget.is_none(); widths.len()];
    let Some(budget) = budget else {
        return keep;
    };
    let mut used = 1;
    for (rank, &i) in priority.iter().enumerate() {
        let Some(&w) = widths.get(i) else { continue };
        if rank < always || used + w + 3 <= budget {
            keep[i] = true;
            used += w + 3;
        }
    }
    keep
}

/// A plain text table of `rows` under `header` that fits `width` (see [`fit_columns`]),
/// with the columns in `right` right-aligned, and a line saying how many were left out and
/// how to see them (`more`). Used by every terminal table of ci-gate.
pub(crate) fn fitted_table(
    header: &[String],
    rows: &[Vec<String>],
    priority: &[usize],
    always: usize,
    right: &[usize],
    width: Option<usize>,
    more: &str,
) -> String {
    fitted_table_keep(header, rows, priority, always, right, width, more).0
}

/// [`fitted_table`], and which columns it kept.
pub(crate) fn fitted_table_keep(
    header: &[String],
    rows: &[Vec<String>],
    priority: &[usize],
    always: usize,
    right: &[usize],
    width: Option<usize>,
    more: &str,
) -> (String, Vec<bool>) {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let keep = fit_columns(&widths, priority, always, width);
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL_CONDENSED);
    table.force_no_tty();
    table.set_header(
        header
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(h, _)| h.clone()),
    );
    for row in rows {
        table.add_row(
            row.iter()
                .enumerate()
                .filter(|(i, _)| keep[*i])
                .map(|(i, text)| {
                    let cell = Cell::new(text);
                    if right.contains(&i) {
                        cell.set_alignment(CellAlignment::Right)
                    } else {
                        cell
                    }
                }),
        );
    }
    let mut out = table.to_string();
    out.push('\n');
    let hidden = keep.iter().filter(|k| !**k).count();
    if hidden > 0 {
        out.push_str(&format!(
            "({hidden} more column{} {more})\n",
            if hidden == 1 { "" } else { "s" }
        ));
    }
    (out, keep)
}

/// One profiled shape: its figures, base against candidate.
fn profile_table(shape: &str, p: &crate::profile::ShapeProfile, width: Option<usize>) -> String {
    let kernel = p
        .candidate
        .as_ref()
        .or(p.base.as_ref())
        .map(|k| format!(" {}", k.kernel))
        .unwrap_or_default();
    let mut out = format!("\nNsight Compute, {shape} ({}){kernel}:\n", p.reason);
    let header: Vec<String> = ["figure", "base", "candidate", "change"]
        .map(String::from)
        .to_vec();
    let rows: Vec<Vec<String>> = p.rows().into_iter().map(|r| r.to_vec()).collect();
    out.push_str(&fitted_table(
        &header,
        &rows,
        &[0, 2, 1, 3],
        2,
        &[1, 2, 3],
        width,
        "with --wide",
    ));
    if let Some(e) = &p.error {
        out.push_str(&format!("profile: {e}\n"));
    }
    out
}

/// Columns of the name cell in the fixed-width kernel tables (`compile`, `baseline show`).
pub(crate) const NAME_CELL: usize = 28;

/// A row of a fixed-width kernel table: two spaces, `name` in a cell of [`NAME_CELL`]
/// columns, then `figures` (already formatted, starting with its separator). A longer name
/// goes on a line of its own with the figures on the next, under an empty cell, so that no
/// line grows past the table's width and no name is cut.
pub(crate) fn name_row(name: &str, figures: &str) -> Vec<String> {
    if name.chars().count() <= NAME_CELL {
        vec![format!("  {name:<NAME_CELL$}{figures}")]
    } else {
        vec![
            format!("  {name}"),
            format!("  {:<NAME_CELL$}{figures}", ""),
        ]
    }
}

/// The width tables fit on stdout: `$COLUMNS`, else the terminal's, else 80, at least 80.
pub(crate) fn stdout_width() -> usize {
    let tty = std::io::stdout().is_terminal();
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .or_else(|| tty.then(|| Table::new().width().map(usize::from)).flatten())
        .unwrap_or(DEFAULT_WIDTH)
        .max(DEFAULT_WIDTH)
}

fn verdict_color(fails: bool, v: Verdict) -> Color {
    if fails {
        Color::Red
    } else if v.warns() {
        Color::Yellow
    } else {
        Color::Green
    }
}

impl Exporter for TableExporter {
    fn render(&self, report: &Report) -> String {
        let mut out = self.verdicts(report);
        // Right under the table: what its bound is, and that alpha is per shape.
        let under: Vec<String> = bound_line(report)
            .into_iter()
            .chain(alpha_line(report))
            .collect();
        out.push_str(&wrap_lines(&under, self.width));
        let mut lines = messages(report);
        self.peers(report, &mut out);
        self.energy(report, &mut out);
        if let Some(r) = &report.resources {
            if r.rows.is_empty() {
                lines.push(r.summary());
            } else {
                self.resources(r, &mut out);
            }
        }
        for (shape, p) in report.profiled() {
            out.push_str(&profile_table(shape, p, self.width));
        }
        lines.extend(report.profiling_line());
        lines.push(format!("ci-gate: {}", report.headline()));
        out.push_str(&wrap_lines(&lines, self.width));
        out
    }
}

impl TableExporter {
    /// The table of verdicts, its columns fitted to the width (the shape, the verdict, Δ and
    /// the bound that decided always show), with how many were left out.
    fn verdicts(&self, report: &Report) -> String {
        let mut table = Table::new();
        table.load_style(presets::UTF8_FULL_CONDENSED);
        table.force_no_tty();
        let cols = columns(report);
        let header: Vec<String> = cols.iter().map(|(_, h)| h.clone()).collect();
        let rows: Vec<(Vec<String>, bool, Verdict)> = report
            .rows
            .iter()
            .map(|row| {
                (
                    cols.iter().map(|(c, _)| cell(*c, row)).collect(),
                    row.fails(report.policy),
                    row.verdict,
                )
            })
            .collect();
        let widths: Vec<usize> = (0..header.len())
            .map(|i| {
                rows.iter()
                    .map(|(r, _, _)| r[i].chars().count())
                    .chain([header[i].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        // Column indices from most to least useful.
        let mut priority: Vec<usize> = (0..cols.len()).collect();
        priority.sort_by_key(|&i| cols[i].0.priority());
        let keep = fit_columns(&widths, &priority, 4, self.width);
        let pick = |v: Vec<String>| -> Vec<String> {
            v.into_iter()
                .zip(&keep)
                .filter_map(|(x, k)| k.then_some(x))
                .collect()
        };
        table.set_header(pick(header));
        for (cells, fails, verdict) in rows {
            let row: Vec<Cell> = cells
                .into_iter()
                .enumerate()
                .filter(|(i, _)| keep[*i])
                .map(|(i, text)| {
                    let col = cols[i].0;
                    let mut cell = Cell::new(text);
                    if !col.left() {
                        cell = cell.set_alignment(CellAlignment::Right);
                    }
                    if col == Col::Verdict && self.color {
                        cell = cell.fg(verdict_color(fails, verdict));
                    }
                    cell
                })
                .collect();
            table.add_row(row);
        }
        let mut out = table.to_string();
        out.push('\n');
        let hidden = keep.iter().filter(|k| !**k).count();
        if hidden > 0 {
            out.push_str(&format!(
                "({hidden} more column{} with --wide or --format json)\n",
                if hidden == 1 { "" } else { "s" }
            ));
        }
        out
    }

    /// The peers' table (against PyTorch), with how they were timed.
    fn peers(&self, report: &Report, out: &mut String) {
        let (peer_header, peer_rows) = report.peer_rows();
        if peer_rows.is_empty() {
            return;
        }
        out.push_str("\nAgainst PyTorch (same run; ×: our p50 / theirs, as timed: see below):\n");
        let priority: Vec<usize> = (0..peer_header.len()).collect();
        let right: Vec<usize> = (1..peer_header.len()).collect();
        out.push_str(&fitted_table(
            &peer_header,
            &peer_rows,
            &priority,
            2,
            &right,
            self.width,
            "with --wide",
        ));
        if let Some(note) = &report.peer_note {
            let width = self.width.unwrap_or(100).max(40);
            for line in textwrap::wrap(&crate::text::terminal_text(note), width - 2) {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }

    /// Energy per call, where measured (or stored).
    fn energy(&self, report: &Report, out: &mut String) {
        let (energy_header, energy_rows, energy_why) = super::energy::energy_rows(report);
        if energy_rows.is_empty() {
            return;
        }
        out.push('\n');
        out.push_str(&wrap_lines(&[super::energy::title(report)], self.width));
        // Shape and the candidate's figure first, then the ratio, the base, TFLOP/s/W.
        let priority: Vec<usize> = if energy_header.len() == 5 {
            vec![0, 2, 3, 1, 4]
        } else {
            (0..energy_header.len()).collect()
        };
        let right: Vec<usize> = (1..energy_header.len()).collect();
        out.push_str(&fitted_table(
            &energy_header,
            &energy_rows,
            &priority,
            2,
            &right,
            self.width,
            "with --wide",
        ));
        out.push_str(&wrap_lines(&energy_why, self.width));
    }

    /// The compiler resources of the kernels that ran, with their legend.
    fn resources(&self, r: &crate::resources::ResourceSection, out: &mut String) {
        out.push_str(&format!("\nCompiler resources {}:\n", r.summary()));
        let rows: Vec<Vec<String>> = r
            .rows
            .iter()
            .map(|row| row.iter().map(|c| crate::text::terminal_text(c)).collect())
            .collect();
        // Registers and CTAs per SM say most of why a kernel's time moved.
        let priority = [0, 1, 7, 2, 3, 5, 4, 6];
        let right: Vec<usize> = (1..r.header.len()).collect();
        out.push_str(&fitted_table(
            &r.header,
            &rows,
            &priority,
            2,
            &right,
            self.width,
            "with --wide",
        ));
        out.push_str(&wrap_lines(
            &[crate::resources::ResourceSection::LEGEND.to_string()],
            self.width,
        ));
    }
}

/// The lines under the tables: each shape's error (an integrity failure is a parity loss,
/// not a measuring error), the warnings a reader must act on, the information, the run's
/// error.
fn messages(report: &Report) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for row in &report.rows {
        if let Some(e) = &row.error {
            let kind = match row.verdict {
                crate::verdict::Verdict::ParityFail => "parity-fail",
                _ => "error",
            };
            lines.push(format!("{kind}: {}: {e}", row.shape));
        }
    }
    let (found_warnings, found_notes) = findings(report);
    lines.extend(
        report
            .actionable_warnings()
            .into_iter()
            .chain(&found_warnings)
            .map(|w| format!("warning: {w}")),
    );
    lines.extend(
        report
            .warnings
            .iter()
            .filter(|w| super::is_informational(w))
            .chain(&report.notes)
            .chain(&found_notes)
            .map(|n| format!("note: {n}")),
    );
    if let Some(e) = &report.error {
        lines.push(format!("error: {e}"));
    }
    lines
}

/// Prose lines for the terminal: each wrapped between words to `width` with continuation
/// lines indented, or as they are without a width. Never at a hyphen inside a word: these
/// lines name files, GPUs and clock ranges (`nvidia-h200/pr.json`, `(1965-1980 MHz)`),
/// which must stay whole to be read or copied; only a word longer than the width is cut.
pub(crate) fn wrap_lines(lines: &[String], width: Option<usize>) -> String {
    let mut out = String::new();
    for line in lines {
        match width {
            Some(w) => {
                let options = textwrap::Options::new(w)
                    .subsequent_indent("  ")
                    .word_splitter(textwrap::WordSplitter::NoHyphenation);
                for part in textwrap::wrap(line, options) {
                    out.push_str(&part);
                    out.push('\n');
                }
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_name_longer_than_its_cell_gets_a_line_of_its_own() {
        use super::name_row;
        assert_eq!(
            name_row("k_d64", " 128"),
            vec![format!("  {:<28} 128", "k_d64")]
        );
        let long = "attention_fwd_bf16_d64_long_noncausal";
        let rows = name_row(long, " 128");
        assert_eq!(rows, vec![format!("  {long}"), format!("  {:<28} 128", "")]);
        // exactly the cell: one line
        assert_eq!(name_row(&"x".repeat(28), " 1").len(), 1);
    }

    use super::{fit_columns, fitted_table, wrap_lines};

    #[test]
    fn prose_never_wraps_at_a_hyphen_inside_a_word() {
        let line = "warning: no stored baseline for NVIDIA H200 and config pr at baselines/nvidia-h200/pr.json: A/B alone decides; the SM clock changed while measuring b1h8s512d64_f16 (1965-1980 MHz)".to_owned();
        for width in 60..=100 {
            let out = wrap_lines(std::slice::from_ref(&line), Some(width));
            assert!(out.contains("nvidia-h200/pr.json"), "{width}: {out}");
            assert!(out.contains("(1965-1980"), "{width}: {out}");
            for l in out.lines() {
                assert!(!l.ends_with('-'), "{width}: {out}");
                assert!(l.chars().count() <= width, "{width}: {out}");
            }
        }
    }

    const PRIORITY: [usize; 11] = [0, 9, 3, 4, 5, 2, 10, 1, 6, 7, 8];

    fn fit(widths: &[usize], budget: Option<usize>) -> Vec<bool> {
        fit_columns(widths, &PRIORITY, 3, budget)
    }

    #[test]
    fn columns_fit_the_width_most_useful_first() {
        let widths = [26, 11, 11, 8, 18, 9, 16, 15, 23, 12, 10];
        assert!(fit(&widths, None).iter().all(|k| *k));
        let keep = fit(&widths, Some(80));
        let total: usize = 1 + widths
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(w, _)| w + 3)
            .sum::<usize>();
        assert!(total <= 80, "{total}");
        // Shape, verdict, Δ and its interval come first; then the stored reference.
        for i in [0, 9, 3, 4] {
            assert!(keep[i], "{i}: {keep:?}");
        }
        assert!(!keep[5] && fit(&widths, Some(100))[5], "{keep:?}");
        assert!(!fit(&widths, Some(160))[8], "parity is the first to go");
        // Too narrow for anything: shape, verdict and Δ still show.
        let keep = fit(&widths, Some(10));
        assert_eq!(keep.iter().filter(|k| **k).count(), 3);
    }

    #[test]
    fn fitted_tables_stay_inside_the_width_and_say_what_they_left_out() {
        let header: Vec<String> = (0..8).map(|i| format!("column {i}")).collect();
        let rows: Vec<Vec<String>> = (0..3)
            .map(|r| (0..8).map(|c| format!("value {r}.{c} ····")).collect())
            .collect();
        let priority: Vec<usize> = (0..8).collect();
        let out = fitted_table(&header, &rows, &priority, 1, &[1], Some(80), "with --wide");
        for line in out.lines() {
            assert!(line.chars().count() <= 80, "{line}");
        }
        assert!(
            out.contains("column 0") && !out.contains("column 7"),
            "{out}"
        );
        assert!(
            out.trim_end().ends_with("more columns with --wide)"),
            "{out}"
        );
        let all = fitted_table(&header, &rows, &priority, 1, &[1], None, "with --wide");
        assert!(
            all.contains("column 7") && !all.contains("more column"),
            "{all}"
        );
    }
}
