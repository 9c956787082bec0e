//! The SVG chart of `ci-gate history --format svg` (plotters, SVG backend only: text is
//! written as `<text>` elements for the viewer to render, so no font is read).
//!
//! One panel per series, stacked: the p50 of each run (blue line and dots) with its
//! interval (light blue bars), the level of each segment between change points and method
//! changes (red), a grey line with the change in % at each change point, a purple line
//! "method changed" where the measuring method changed (never a change point), and the
//! best run ringed in green.
//! The x axis is the runs in append order, labelled with short commits; the y axis is µs.
//! Where runs measured energy, each run's millijoules per call (orange, with its interval)
//! is drawn against a second y axis on the right.

use plotters::coord::types::{RangedCoordf64, RangedCoordi32};
use plotters::prelude::*;

use super::Trend;

/// Width of the chart and height of one panel, pixels.
const WIDTH: u32 = 960;
const PANEL_HEIGHT: u32 = 300;
/// Most runs drawn per series (the newest).
pub(crate) const MAX_CHART_POINTS: usize = 5_000;
/// Most series (panels) in one chart.
pub(crate) const MAX_CHART_SERIES: usize = 100;

const P50: RGBColor = RGBColor(31, 119, 180);
const INTERVAL: RGBColor = RGBColor(158, 202, 225);
const LEVEL: RGBColor = RGBColor(214, 39, 40);
const CHANGE: RGBColor = RGBColor(127, 127, 127);
const BEST: RGBColor = RGBColor(44, 160, 44);
const ENERGY: RGBColor = RGBColor(255, 127, 14);
const ENERGY_INTERVAL: RGBColor = RGBColor(253, 208, 162);
const METHOD: RGBColor = RGBColor(148, 103, 189);

/// Why no chart was drawn. Typed so that `commands::history` could tell a selection too
/// large (the user picks fewer shapes) from a drawing failure; both are shown as they are.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChartError {
    #[error(
        "{series} series, more than the {MAX_CHART_SERIES} one chart draws; pick shapes with --shape"
    )]
    TooManySeries { series: usize },
    /// plotters' own error, as its text (its error types are generic over the backend).
    #[error("{0}")]
    Draw(String),
}

/// The chart of `trends` as an SVG document.
pub(crate) fn render_svg(trends: &[Trend]) -> Result<String, ChartError> {
    if trends.len() > MAX_CHART_SERIES {
        return Err(ChartError::TooManySeries {
            series: trends.len(),
        });
    }
    let draw = |e: &dyn std::fmt::Display| ChartError::Draw(e.to_string());
    let mut svg = String::new();
    let panels = u32::try_from(trends.len().max(1)).unwrap_or(u32::MAX);
    let height = PANEL_HEIGHT.saturating_mul(panels);
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw(&e))?;
        let areas = root.split_evenly((trends.len().max(1), 1));
        for (trend, area) in trends.iter().zip(areas) {
            panel(trend, &area).map_err(|e| draw(&e))?;
        }
        root.present().map_err(|e| draw(&e))?;
    }
    Ok(svg)
}

/// µs with 4 significant digits.
fn us(v: f64) -> String {
    let digits = if v >= 1000.0 {
        0
    } else if v >= 100.0 {
        1
    } else if v >= 10.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$}")
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The p50 axis of a panel: every p50 and interval, padded; `None` without a finite value.
fn p50_range(points: &[super::Point]) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for p in points {
        let (a, b) = p
            .interval_us
            .map_or((p.p50_us, p.p50_us), |i| (i.low, i.high));
        lo = lo.min(a.min(p.p50_us));
        hi = hi.max(b.max(p.p50_us));
    }
    if !(lo.is_finite() && hi.is_finite()) {
        return None;
    }
    let pad = ((hi - lo) * 0.08).max(hi * 0.005);
    Some(((lo - pad).max(0.0), hi + pad))
}

/// The energy axis (mJ per call, on the right), where runs measured it.
fn energy_range(points: &[super::Point]) -> Option<(f64, f64)> {
    let (mut elo, mut ehi) = (f64::INFINITY, f64::NEG_INFINITY);
    for p in points {
        if let Some(mj) = p.mj_per_call {
            let (a, b) = p.mj_interval.map_or((mj, mj), |i| (i.low, i.high));
            elo = elo.min(a.min(mj));
            ehi = ehi.max(b.max(mj));
        }
    }
    (elo.is_finite() && ehi.is_finite()).then(|| {
        let pad = ((ehi - elo) * 0.08).max(ehi.abs() * 0.005).max(1e-9);
        ((elo - pad).max(0.0), ehi + pad)
    })
}

/// The levels between change points and method changes, as (first point, last point,
/// level): the median p50 of the runs from each boundary (or the start) to the next (or
/// the end). `boundaries`: the first index of each new level among the `points` shown;
/// none, no levels.
fn levels(points: &[super::Point], boundaries: &[usize]) -> Vec<(usize, usize, f64)> {
    if boundaries.is_empty() {
        return Vec::new();
    }
    let mut cuts: Vec<usize> = std::iter::once(0)
        .chain(boundaries.iter().copied())
        .chain(std::iter::once(points.len()))
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .filter(|w| w[0] < w[1])
        .filter_map(|w| {
            let v: Vec<f64> = points[w[0]..w[1]].iter().map(|p| p.p50_us).collect();
            Some((w[0], w[1] - 1, crate::stats::median(&v)?))
        })
        .collect()
}

/// The primary coordinates of a panel: runs by index, µs.
type Panel<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordi32, RangedCoordf64>>;

/// What a panel marks on its runs (`points`, the newest, after `skip` older ones): the level
/// of each segment between change points and method changes (red), each change point (a grey
/// line and its change in %), and each method change (a purple line, "method changed"; never
/// a change point). `(lo, hi)`: the panel's µs range.
fn marks(
    chart: &mut Panel<'_, '_>,
    trend: &Trend,
    skip: usize,
    points: &[super::Point],
    (lo, hi): (f64, f64),
) -> Result<(), Box<dyn std::error::Error>> {
    let xy = |i: usize, v: f64| (i32::try_from(i).unwrap_or(i32::MAX), v);
    let changes: Vec<_> = trend
        .changes
        .iter()
        .filter(|c| c.index >= skip)
        .map(|c| (c.index - skip, c))
        .collect();
    let methods: Vec<usize> = trend
        .method_changes
        .iter()
        .filter(|m| m.index >= skip)
        .map(|m| m.index - skip)
        .collect();
    let boundaries: Vec<usize> = changes
        .iter()
        .map(|(i, _)| *i)
        .chain(methods.clone())
        .collect();
    for (start, end, level) in levels(points, &boundaries) {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![xy(start, level), xy(end, level)],
            LEVEL.stroke_width(2),
        )))?;
    }
    for (i, c) in &changes {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![xy(*i, lo), xy(*i, hi)],
            CHANGE.stroke_width(1),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            format!("{:+.1}%", c.change_pct),
            xy(*i, hi),
            ("sans-serif", 14).into_font().color(&LEVEL),
        )))?;
    }
    for i in &methods {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![xy(*i, lo), xy(*i, hi)],
            METHOD.stroke_width(2),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            "method changed",
            xy(*i, lo + (hi - lo) * 0.05),
            ("sans-serif", 13).into_font().color(&METHOD),
        )))?;
    }
    Ok(())
}

fn panel(trend: &Trend, area: &Area<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let s = &trend.series;
    let skip = s.points.len().saturating_sub(MAX_CHART_POINTS);
    let points = &s.points[skip..];
    let n = i32::try_from(points.len()).unwrap_or(i32::MAX);
    let Some((lo, hi)) = p50_range(points) else {
        return Ok(());
    };
    let cache = match s.key.cache {
        Some(c) => format!(" · {c} cache"),
        None => String::new(),
    };
    let caption = format!(
        "{} · {} · config {}{cache}",
        s.key.shape, s.key.gpu_slug, s.key.config
    );
    let label = |x: &i32| -> String {
        usize::try_from(*x)
            .ok()
            .and_then(|i| points.get(i))
            .map(|p| p.commit.chars().take(7).collect())
            .unwrap_or_default()
    };
    let y_label = |y: &f64| us(*y);
    // Energy per call, where runs measured it: its own range, on the right.
    let energy_range = energy_range(points);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .right_y_label_area_size(if energy_range.is_some() { 64 } else { 0 })
        .build_cartesian_2d(-1..n.max(1), lo..hi)?
        .set_secondary_coord(-1..n.max(1), {
            let (a, b) = energy_range.unwrap_or((0.0, 1.0));
            a..b
        });
    chart
        .configure_mesh()
        .x_labels(10)
        .y_labels(6)
        .x_label_formatter(&label)
        .y_label_formatter(&y_label)
        .x_desc("commit (oldest → newest)")
        .y_desc("p50 µs")
        .max_light_lines(2)
        .draw()?;
    let xy = |i: usize, v: f64| (i32::try_from(i).unwrap_or(i32::MAX), v);
    chart.draw_series(points.iter().enumerate().filter_map(|(i, p)| {
        p.interval_us
            .map(|iv| PathElement::new(vec![xy(i, iv.low), xy(i, iv.high)], INTERVAL))
    }))?;
    chart.draw_series(LineSeries::new(
        points.iter().enumerate().map(|(i, p)| xy(i, p.p50_us)),
        P50.stroke_width(2),
    ))?;
    chart.draw_series(
        points
            .iter()
            .enumerate()
            .map(|(i, p)| Circle::new(xy(i, p.p50_us), 3, P50.filled())),
    )?;
    marks(&mut chart, trend, skip, points, (lo, hi))?;
    if energy_range.is_some() {
        chart
            .configure_secondary_axes()
            .y_labels(6)
            .y_label_formatter(&|y: &f64| format!("{y:.3}"))
            .y_desc("mJ per call (orange)")
            .draw()?;
        chart.draw_secondary_series(points.iter().enumerate().filter_map(|(i, p)| {
            p.mj_interval
                .filter(|_| p.mj_per_call.is_some())
                .map(|iv| PathElement::new(vec![xy(i, iv.low), xy(i, iv.high)], ENERGY_INTERVAL))
        }))?;
        chart.draw_secondary_series(points.iter().enumerate().filter_map(|(i, p)| {
            p.mj_per_call
                .map(|mj| Circle::new(xy(i, mj), 3, ENERGY.filled()))
        }))?;
    }
    if let Some(i) = trend.best.checked_sub(skip)
        && let Some(p) = points.get(i)
    {
        chart.draw_series(std::iter::once(Circle::new(
            xy(i, p.p50_us),
            7,
            BEST.stroke_width(2),
        )))?;
    }
    Ok(())
}
