//! `ci-gate history`: per-shape p50 over the default branch's runs, the best time ever and
//! the change points, as a table, JSON or an SVG chart; `ci-gate history append` adds a
//! run's results to the history. No GPU.

use anyhow::{Result, bail};
use serde_json::json;

use crate::cli::{HistoryAppendArgs, HistoryArgs, HistoryCommand, HistoryFormat, HistoryShowArgs};
use crate::history::{
    self, Appended, Filter, History, Trend, changepoint, records_from_results, trends,
};
use crate::outcome::Outcome;
use crate::report::{fitted_table, fitted_table_keep, stdout_width};
use crate::results::ResultsFile;
use crate::text::{quote, short_commit};

pub fn run(args: &HistoryArgs) -> Result<Outcome> {
    match &args.command {
        Some(HistoryCommand::Append(a)) => append(a),
        None => show(&args.show),
    }
}

fn append(args: &HistoryAppendArgs) -> Result<Outcome> {
    let results = ResultsFile::load(&args.results)?;
    let (records, notes) = records_from_results(&results, &args.results)?;
    for n in notes {
        eprintln!("note: {n}");
    }
    let first = &records[0];
    let run = format!(
        "commit {} (config {}, {})",
        short_commit(&first.commit),
        first.config,
        first.gpu_slug
    );
    match history::append(&args.history, &records)? {
        Appended::Lines(n) => println!(
            "ci-gate: appended {n} shape{} of {run} to {}",
            if n == 1 { "" } else { "s" },
            args.history.display()
        ),
        Appended::AlreadyThere { line } => println!(
            "ci-gate: {} already holds {run} (line {line}); nothing appended",
            args.history.display()
        ),
    }
    Ok(Outcome::Pass)
}

fn show(args: &HistoryShowArgs) -> Result<Outcome> {
    let file = match History::load(&args.history) {
        Ok(file) => file,
        // A results file where the history was expected: say what the user meant.
        Err(_) if ResultsFile::load(&args.history).is_ok() => bail!(
            "{} is a results file, not a history (JSON Lines, one shape of one run per line): to add its shapes to a history, run `ci-gate history append --results {} --history {}`, then `ci-gate history --history {}`",
            args.history.display(),
            args.history.display(),
            crate::cli::DEFAULT_HISTORY,
            crate::cli::DEFAULT_HISTORY,
        ),
        // No history here: say where the workflow keeps it.
        Err(_) if !args.history.exists() => bail!(
            "no history file {}: the perf-gate workflow keeps it on the branch perf-history (docs/HISTORY.md); fetch it with `git fetch origin perf-history && git show origin/perf-history:history.jsonl > history.jsonl`, or pass --history FILE",
            args.history.display()
        ),
        Err(e) => return Err(e.into()),
    };
    for name in &args.shapes {
        if !file.entries.iter().any(|e| e.record.shape == *name) {
            let mut known: Vec<&str> = file
                .entries
                .iter()
                .map(|e| e.record.shape.as_str())
                .collect();
            known.sort_unstable();
            known.dedup();
            let shown: Vec<&str> = known.iter().copied().take(20).collect();
            bail!(
                "{}: no shape {} in the history (it holds {}{})",
                args.history.display(),
                quote(name),
                if shown.is_empty() {
                    "no runs".to_owned()
                } else {
                    shown.join(", ")
                },
                if known.len() > shown.len() {
                    ", …"
                } else {
                    ""
                }
            );
        }
    }
    let filter = Filter {
        shapes: args.shapes.clone(),
        since: args.since,
    };
    let selected = history::series(&file, &filter);
    if selected.is_empty() {
        bail!(
            "{}: no runs{}{}",
            args.history.display(),
            if args.shapes.is_empty() {
                String::new()
            } else {
                format!(" of {}", args.shapes.join(", "))
            },
            args.since
                .map(|t| format!(" since {}", t.to_rfc3339()))
                .unwrap_or_default()
        );
    }
    let params = changepoint::Params::default();
    let trends = trends(selected, &params);
    let out = match args.format {
        HistoryFormat::Table => table(&trends, &params, (!args.wide).then(stdout_width)),
        HistoryFormat::Json => {
            let mut text = serde_json::to_string_pretty(&to_json(args, &trends, &params))?;
            text.push('\n');
            text
        }
        HistoryFormat::Svg => history::render_svg(&trends)
            .map_err(|e| anyhow::anyhow!("cannot draw the history chart: {e}"))?,
    };
    print!("{out}");
    Ok(Outcome::Pass)
}

/// µs with 4 significant digits.
fn us(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn method_line(p: &changepoint::Params) -> String {
    format!(
        "Change points: PELT (Killick et al. 2012) on ln p50, normal mean-change cost, \
         penalty {} ln n, levels of at least {} runs, moves under {}% not reported \
         (docs/HISTORY.md).",
        p.penalty_factor,
        p.min_segment,
        p.min_effect * 100.0
    )
}

fn table(trends: &[Trend], params: &changepoint::Params, width: Option<usize>) -> String {
    let (mut out, hidden_same) = series_table(trends, width);
    let changes = changes_table(trends, width);
    let mut lines = Vec::new();
    for cmd in trends.iter().flat_map(bisect_commands) {
        lines.push(format!("Find the commit that made it slower: {cmd}"));
    }
    if !hidden_same.is_empty() {
        lines.push(format!("Every series: {}.", hidden_same.join(", ")));
    }
    lines.extend(method_lines(trends));
    match changes {
        None => lines.push("No change points.".to_owned()),
        Some(t) => {
            out.push('\n');
            out.push_str(&t);
        }
    }
    lines.push(method_line(params));
    out.push_str(&crate::report::wrap_lines(&lines, width));
    out
}

/// What a table says when it hides columns.
const MORE: &str = "with --wide or --format json";

/// One row per series (its runs, latest and best p50, the best's commit, its change points),
/// fitted to `width`; and "column value" for each column every series shares that the fit
/// left out.
fn series_table(trends: &[Trend], width: Option<usize>) -> (String, Vec<String>) {
    let header: Vec<String> = [
        "shape",
        "GPU",
        "runs",
        "latest µs",
        "best µs",
        "best commit",
        "changes",
        "config",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = trends
        .iter()
        .map(|t| {
            let s = &t.series;
            let latest = s.points.last().map(|p| us(p.p50_us)).unwrap_or_default();
            let best = s.points.get(t.best);
            vec![
                s.key.label(),
                s.key.gpu_slug.clone(),
                s.points.len().to_string(),
                latest,
                best.map(|p| us(p.p50_us)).unwrap_or_default(),
                best.map(|p| short_commit(&p.commit)).unwrap_or_default(),
                t.changes.len().to_string(),
                s.key.config.clone(),
            ]
        })
        .collect();
    // GPU (1) and config (7) tell apart series of one shape: where they vary they always
    // show, right after the shape, or two rows would look the same; where every series has
    // the same one they are the first to go, and a line names it.
    let varies = |col: usize| {
        rows.iter()
            .map(|r| r[col].as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            > 1
    };
    let (varying, uniform): (Vec<usize>, Vec<usize>) = [1, 7].into_iter().partition(|&c| varies(c));
    let mut priority = vec![0];
    priority.extend(&varying);
    priority.extend([3, 4, 5, 6, 2]);
    priority.extend(&uniform);
    let (out, kept) = fitted_table_keep(
        &header,
        &rows,
        &priority,
        2 + varying.len(),
        &[2, 3, 4, 6],
        width,
        MORE,
    );
    let hidden_same: Vec<String> = uniform
        .iter()
        .filter(|&&c| !kept[c])
        .filter_map(|&c| Some(format!("{} {}", header[c], rows.first()?[c])))
        .collect();
    (out, hidden_same)
}

/// One row per change point of every series (where the level moved, before, after), fitted
/// to `width`; None where there is none.
fn changes_table(trends: &[Trend], width: Option<usize>) -> Option<String> {
    let changes: Vec<Vec<String>> = trends
        .iter()
        .flat_map(|t| {
            t.changes.iter().map(|c| {
                vec![
                    t.series.key.label(),
                    short_commit(&c.commit),
                    c.time.format("%Y-%m-%d").to_string(),
                    us(c.before_us),
                    us(c.after_us),
                    format!("{:+.1}%", c.change_pct),
                ]
            })
        })
        .collect();
    if changes.is_empty() {
        return None;
    }
    let header: Vec<String> = [
        "shape",
        "level moved at",
        "date",
        "before µs",
        "after µs",
        "change",
    ]
    .map(String::from)
    .to_vec();
    Some(fitted_table(
        &header,
        &changes,
        &[0, 1, 5, 3, 4, 2],
        3,
        &[3, 4, 5],
        width,
        MORE,
    ))
}

/// One line per change of the measuring method (the same change in several series once):
/// where it happened, from what to what, and that no change point is read across it.
fn method_lines(trends: &[Trend]) -> Vec<String> {
    let mut seen: Vec<(&str, &str, &str, usize)> = Vec::new();
    for t in trends {
        for m in &t.method_changes {
            match seen
                .iter_mut()
                .find(|(c, f, to, _)| *c == m.commit && *f == m.from && *to == m.to)
            {
                Some(entry) => entry.3 += 1,
                None => seen.push((&m.commit, &m.from, &m.to, 1)),
            }
        }
    }
    seen.iter()
        .map(|(commit, from, to, n)| {
            let when = trends
                .iter()
                .flat_map(|t| &t.method_changes)
                .find(|m| m.commit == *commit)
                .map(|m| m.time.format(" (%Y-%m-%d)").to_string())
                .unwrap_or_default();
            format!(
                "The measuring method changed at commit {}{when} in {n} series: {from} → {to}. Times of two methods are not comparable: no change point is read across it (docs/HISTORY.md).",
                short_commit(commit),
            )
        })
        .collect()
}

/// For each change point of `t` where the level rose (a slowdown), the `ci-gate bisect`
/// command between the run before it and the run at it (commits checked as hex, names
/// plain; see `report::bisect_command`).
fn bisect_commands(t: &Trend) -> Vec<String> {
    let s = &t.series;
    t.changes
        .iter()
        .filter(|c| c.change_pct > 0.0)
        .filter_map(|c| {
            let before = s.points.get(c.index.checked_sub(1)?)?;
            crate::report::bisect_command(
                &before.commit,
                &c.commit,
                &[s.key.shape.as_str()],
                &format!("configs/{}.yaml", s.key.config),
            )
        })
        .collect()
}

fn to_json(
    args: &HistoryShowArgs,
    trends: &[Trend],
    params: &changepoint::Params,
) -> serde_json::Value {
    let series: Vec<serde_json::Value> = trends
        .iter()
        .map(|t| {
            let s = &t.series;
            let best = s.points.get(t.best);
            json!({
                "shape": s.key.shape,
                "gpu": s.gpu,
                "gpu_slug": s.key.gpu_slug,
                "config": s.key.config,
                "cache": s.key.cache,
                "runs": s.points.len(),
                "points": s.points,
                "best": best.map(|p| json!({
                    "index": t.best,
                    "commit": p.commit,
                    "time": p.time,
                    "p50_us": p.p50_us,
                })),
                "changes": t.changes,
                "method_changes": t.method_changes,
                "bisect": bisect_commands(t),
            })
        })
        .collect();
    json!({
        "history": args.history.display().to_string(),
        "since": args.since,
        "method": {
            "name": "PELT",
            "reference": "Killick, Fearnhead & Eckley (2012), JASA 107(500)",
            "data": "ln p50",
            "cost": "normal mean change, variance from the MAD of first differences",
            "penalty": format!("{} ln n", params.penalty_factor),
            "min_segment": params.min_segment,
            "min_effect": params.min_effect,
            "max_points": params.max_points,
        },
        "series": series,
    })
}
