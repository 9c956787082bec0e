//! The terminal table (comfy-table). Colour only on a terminal, and never when NO_COLOR is set.

use std::io::IsTerminal;

use comfy_table::{Cell, CellAlignment, Color, ContentArrangement, Table, presets};

use super::{Cells, Exporter, Report, headers};
use crate::verdict::Verdict;

pub struct TableExporter {
    color: bool,
}

impl TableExporter {
    /// Colour when stdout is a terminal and NO_COLOR is unset or empty (no-color.org).
    pub fn for_stdout() -> TableExporter {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        TableExporter {
            color: std::io::stdout().is_terminal() && !no_color,
        }
    }

    pub fn plain() -> TableExporter {
        TableExporter { color: false }
    }
}

fn verdict_color(v: Verdict, policy: crate::verdict::Policy) -> Color {
    if v.fails(policy) {
        Color::Red
    } else if v.warns() {
        Color::Yellow
    } else {
        Color::Green
    }
}

impl Exporter for TableExporter {
    fn render(&self, report: &Report) -> String {
        let mut table = Table::new();
        table.load_style(presets::UTF8_FULL_CONDENSED);
        if self.color {
            table.set_content_arrangement(ContentArrangement::Dynamic);
        } else {
            table.force_no_tty();
        }
        table.set_header(headers(report));
        for row in &report.rows {
            let c = Cells::of(row);
            let mut verdict = Cell::new(c.verdict);
            if self.color {
                verdict = verdict.fg(verdict_color(row.verdict, report.policy));
            }
            let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
            table.add_row(vec![
                Cell::new(&row.shape),
                right(c.base),
                right(c.cand),
                right(c.ab),
                Cell::new(c.ci),
                right(c.stored),
                Cell::new(c.cliff),
                right(c.p),
                Cell::new(c.parity),
                verdict,
                right(c.detectable),
            ]);
        }
        let mut out = table.to_string();
        out.push('\n');
        for row in &report.rows {
            if let Some(e) = &row.error {
                out.push_str(&format!("error: {}: {e}\n", row.shape));
            }
        }
        for w in &report.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        for n in &report.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        if report
            .rows
            .iter()
            .any(|r| r.stored.as_ref().is_some_and(|c| c.process_sd_assumed))
        {
            out.push_str(super::ASSUMED_SPREAD_NOTE);
            out.push('\n');
        }
        if let Some(e) = &report.error {
            out.push_str(&format!("error: {e}\n"));
        }
        out.push_str(&format!("ci-gate: {}\n", report.headline()));
        out
    }
}
