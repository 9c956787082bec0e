//! Markdown: the PR comment body and the job summary. Starts with a hidden marker so the
//! comment can be found again; every piece of untrusted text is escaped.

use std::fmt::Write;

use super::{Cells, Exporter, Report, headers};
use crate::verdict::Verdict;

/// Hidden marker that identifies ci-gate's PR comment.
pub const MARKER: &str = "<!-- ci-gate:perf-report -->";

pub struct MarkdownExporter;

/// Escapes text for a Markdown table cell or paragraph: HTML-significant characters become
/// entities, Markdown punctuation is backslash-escaped, `@` cannot mention anyone, and line
/// breaks become spaces.
pub fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '@' => out.push_str("&#64;"),
            '\r' | '\n' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '#' | '!' | '|' | '~' | '{' | '}' => {
                out.push('\\');
                out.push(ch);
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
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
    } else if report.rows.iter().any(|r| r.verdict.warns()) || !report.warnings.is_empty() {
        "⚠️"
    } else {
        "✅"
    }
}

impl Exporter for MarkdownExporter {
    fn render(&self, report: &Report) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "{MARKER}");
        let config = report
            .config_name
            .as_deref()
            .map(|c| format!(" · config `{}`", c.replace('`', "'")))
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "### {} ci-gate: {}{config}\n",
            icon(report),
            escape_markdown(&report.headline())
        );
        let flagged: Vec<String> = report
            .rows
            .iter()
            .filter(|r| r.verdict.fails(report.policy))
            .map(|r| {
                let why = match (&r.error, r.primary(), &r.stored) {
                    (Some(e), _, _) => escape_markdown(e),
                    (None, Some(c), _) if r.verdict == Verdict::Regression => {
                        format!("p50 {} slower ({})", super::pct(c.ratio), c.reference)
                    }
                    (None, _, Some(c)) if r.verdict == Verdict::Drift => {
                        format!(
                            "{} slower than the stored baseline while A/B shows no change",
                            super::pct(c.ratio)
                        )
                    }
                    _ => r.verdict.to_string(),
                };
                format!("- **{}** — {why}", escape_markdown(&r.shape))
            })
            .collect();
        if !flagged.is_empty() {
            let _ = writeln!(md, "{}\n", flagged.join("\n"));
        }

        let h = headers(&report.gate);
        let _ = writeln!(md, "| {} |", h.join(" | "));
        let _ = writeln!(md, "|---|--:|--:|--:|---|--:|---|--:|---|---|--:|");
        for row in &report.rows {
            let c = Cells::of(row);
            let verdict = if row.verdict.fails(report.policy) {
                format!("**{}**", c.verdict)
            } else {
                c.verdict.clone()
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                escape_markdown(&row.shape),
                c.base,
                c.cand,
                c.ab,
                c.ci,
                c.stored,
                c.cliff,
                c.p,
                c.parity,
                verdict,
                c.detectable
            );
        }
        md.push('\n');

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
            let _ = writeln!(md, "    title \"Δp50 per shape (%), gate at +{m:.1}%\"");
            let _ = writeln!(md, "    x-axis [{}]", labels.join(", "));
            let _ = writeln!(md, "    y-axis \"Δp50 %\" {lo} --> {hi}");
            let _ = writeln!(md, "    bar [{}]", values.join(", "));
            let _ = writeln!(md, "```\n");
        }

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
        for w in &report.warnings {
            let _ = writeln!(md, "> ⚠️ {}", escape_markdown(w));
        }
        for n in &report.notes {
            let _ = writeln!(md, "> ℹ️ {}", escape_markdown(n));
        }
        if report
            .rows
            .iter()
            .any(|r| r.stored.as_ref().is_some_and(|c| c.process_sd_assumed))
        {
            let _ = writeln!(md, "> {}", escape_markdown(super::ASSUMED_SPREAD_NOTE));
        }
        if let Some(e) = &report.error {
            let _ = writeln!(
                md,
                "> ❌ **The gate could not reach a verdict:** {}",
                escape_markdown(e)
            );
        }
        if report.rows.iter().any(|r| r.error.is_some())
            || !report.warnings.is_empty()
            || !report.notes.is_empty()
            || report.error.is_some()
        {
            md.push('\n');
        }

        let _ = writeln!(
            md,
            "<sub>A/B Δp50 = candidate/base − 1, both measured in this run in pairs of rounds; \"vs stored\" = candidate/stored baseline − 1. Fails on a p50 regression above {:.1}% (one-sided bound above it, Holm-adjusted margin p < {}, Cliff's δ of round medians at least {}) or any parity loss. \"Detectable\" is the slowdown this run catches with 80% power.</sub>\n",
            report.gate.max_p50_regression * 100.0,
            report.gate.alpha,
            report.gate.min_effect
        );

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
                            .map_or("no commit", |c| &c[..c.len().min(12)]),
                        b.recorded_at.format("%Y-%m-%d")
                    ),
                );
            }
            let _ = writeln!(md, "\n</details>\n");
        }

        let mut footer = Vec::new();
        if let Some(url) = &report.run_url {
            footer.push(format!(
                "[workflow run]({})",
                url.replace(['(', ')', ' '], "")
            ));
        }
        if let Some(c) = &report.commit {
            footer.push(format!(
                "commit `{}`",
                escape_markdown(&c[..c.len().min(12)]).replace('`', "")
            ));
        }
        footer.push(format!("ci-gate {}", env!("CARGO_PKG_VERSION")));
        let _ = writeln!(md, "<sub>{}</sub>", footer.join(" · "));
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_neutralises_markup() {
        let e = escape_markdown("a|b <script>@alice [x](http://e) `c`\n# h");
        assert!(!e.contains("<script>"));
        assert!(!e.contains('\n'));
        assert!(e.contains("\\|"));
        assert!(e.contains("&#64;alice"));
        assert!(e.contains("\\[x\\]\\(http://e\\)"));
        assert_eq!(escape_markdown("plain text 12"), "plain text 12");
    }

    #[test]
    fn mermaid_labels_are_restricted() {
        assert_eq!(mermaid_label("b1\"]; evil"), "b1____evil");
    }
}
