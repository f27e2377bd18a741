//! Line charts drawn as inline SVG markup: plot frame, grid, tick labels,
//! legend, lines (or rings marking points of other lines) and their hover
//! targets.
//!
//! The charts know nothing about latency or requests: callers hand over
//! axes and series already in display units. Every number written into the
//! markup goes through [`coord`], so a degenerate input (an empty series, a
//! zero-width domain) can distort a chart but never produce invalid SVG.

use std::fmt::Write;

use super::axis::Axis;
use super::fmt::{coord, escape};

/// Size of every chart's coordinate system; the page scales it to fit.
const WIDTH: f64 = 880.0;
const HEIGHT: f64 = 340.0;
/// Room around the plot area for tick labels, axis titles and the legend.
const LEFT: f64 = 72.0;
/// Wide enough for a right-hand axis' labels; every chart keeps it, so that
/// charts stacked on the page share one plot width and their time axes
/// line up.
const RIGHT: f64 = 72.0;
const TOP: f64 = 44.0;
/// Between two rows of the legend, when it wraps.
const LEGEND_ROW: f64 = 17.0;
const BOTTOM: f64 = 56.0;
/// Above this many points a series gets no hover targets: they would add
/// megabytes to the page for points a pointer cannot single out anyway.
const MAX_HOVER_POINTS: usize = 600;
/// Up to this many points a series is drawn with visible dots as well, so
/// that short runs (one interval, a handful of percentiles) still show.
const MAX_DOTTED_POINTS: usize = 40;
/// Radius of a ring series' marks: clear of the dot it surrounds.
const RING: u32 = 7;

/// A point of a series, with the text shown when the pointer rests on it.
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub tip: String,
}

/// One line of a chart: runs of connected points (a gap between runs marks
/// where there is no value, e.g. an interval without completions).
pub struct Series {
    pub label: String,
    pub color: &'static str,
    pub dashed: bool,
    /// Plotted against the chart's right-hand axis rather than its left.
    pub on_right: bool,
    /// Drawn as a ring around each point, without a line: marks points of
    /// other series (a step that failed) rather than a curve of its own.
    pub rings: bool,
    pub runs: Vec<Vec<Point>>,
}

impl Series {
    fn len(&self) -> usize {
        self.runs.iter().map(Vec::len).sum()
    }
}

/// A line chart: a horizontal axis, a left axis and optionally a right one
/// (for a series whose scale would flatten it on the left one), a legend,
/// its series, and a note shown in the plot when there is nothing to draw.
pub struct Chart {
    pub label: String,
    pub x: Axis,
    pub y: Axis,
    pub y_right: Option<Axis>,
    pub series: Vec<Series>,
    pub empty_note: String,
}

impl Chart {
    /// The chart as an `<svg>` element that scales with its container.
    pub fn to_svg(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}">"#,
            coord(WIDTH),
            coord(HEIGHT),
            escape(&self.label)
        );
        self.grid(&mut out);
        self.right_axis(&mut out);
        self.axis_titles(&mut out);
        self.legend(&mut out);
        if self.series.iter().all(|s| s.len() == 0) {
            self.note(&mut out);
        }
        for s in &self.series {
            self.line(&mut out, s);
        }
        out.push_str("</svg>");
        out
    }

    /// Right edge of the plot area.
    fn right(&self) -> f64 {
        WIDTH - RIGHT
    }

    fn px(&self, x: f64) -> f64 {
        LEFT + self.x.fraction(x) * (self.right() - LEFT)
    }

    fn py(&self, axis: &Axis, y: f64) -> f64 {
        HEIGHT - BOTTOM - axis.fraction(y) * (HEIGHT - TOP - BOTTOM)
    }

    /// The axis a series is plotted against.
    fn axis_of(&self, s: &Series) -> &Axis {
        match (&self.y_right, s.on_right) {
            (Some(axis), true) => axis,
            _ => &self.y,
        }
    }

    /// Color of the right axis' labels: that of its series, so that which
    /// line it measures needs no explaining.
    fn right_color(&self) -> &'static str {
        self.series
            .iter()
            .find(|s| s.on_right)
            .map_or("currentColor", |s| s.color)
    }

    /// Grid lines with their tick labels, then the axis lines on top.
    fn grid(&self, out: &mut String) {
        let (top, bottom) = (TOP, HEIGHT - BOTTOM);
        let (left, right) = (LEFT, self.right());
        for (v, label) in &self.y.ticks {
            let y = coord(self.py(&self.y, *v));
            let _ = write!(
                out,
                r#"<line class="grid" x1="{l}" y1="{y}" x2="{r}" y2="{y}"/><text class="tick" x="{tx}" y="{y}" dy="0.32em" text-anchor="end">{}</text>"#,
                escape(label),
                l = coord(left),
                r = coord(right),
                tx = coord(left - 8.0),
            );
        }
        for (v, label) in &self.x.ticks {
            let x = coord(self.px(*v));
            let _ = write!(
                out,
                r#"<line class="grid" x1="{x}" y1="{t}" x2="{x}" y2="{b}"/><text class="tick" x="{x}" y="{ty}" text-anchor="middle">{}</text>"#,
                escape(label),
                t = coord(top),
                b = coord(bottom),
                ty = coord(bottom + 18.0),
            );
        }
        let _ = write!(
            out,
            r#"<path class="axis" d="M{l} {t}V{b}H{r}"/>"#,
            l = coord(left),
            t = coord(top),
            b = coord(bottom),
            r = coord(right),
        );
    }

    /// The right axis, if any: its line and labels, without grid lines (the
    /// left axis' grid already divides the plot).
    fn right_axis(&self, out: &mut String) {
        let Some(axis) = &self.y_right else { return };
        let x = self.right();
        let color = self.right_color();
        let _ = write!(
            out,
            r#"<path class="axis" d="M{x} {t}V{b}"/>"#,
            x = coord(x),
            t = coord(TOP),
            b = coord(HEIGHT - BOTTOM)
        );
        for (v, label) in &axis.ticks {
            let _ = write!(
                out,
                r#"<text class="tick" x="{}" y="{}" dy="0.32em" style="fill:{color}">{}</text>"#,
                coord(x + 8.0),
                coord(self.py(axis, *v)),
                escape(label)
            );
        }
        let _ = write!(
            out,
            r#"<text class="title" transform="translate({} {}) rotate(90)" text-anchor="middle" style="fill:{color}">{}</text>"#,
            coord(WIDTH - 16.0),
            coord((TOP + HEIGHT - BOTTOM) / 2.0),
            escape(&axis.title)
        );
    }

    fn axis_titles(&self, out: &mut String) {
        let mid_x = (LEFT + self.right()) / 2.0;
        let mid_y = (TOP + HEIGHT - BOTTOM) / 2.0;
        let _ = write!(
            out,
            r#"<text class="title" x="{}" y="{}" text-anchor="middle">{}</text>"#,
            coord(mid_x),
            coord(HEIGHT - 12.0),
            escape(&self.x.title)
        );
        let _ = write!(
            out,
            r#"<text class="title" transform="translate(18 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
            coord(mid_y),
            escape(&self.y.title)
        );
    }

    /// One swatch and label per series, in a row above the plot. Widths
    /// are estimated from the label length: exact enough for a legend, and
    /// it keeps the chart free of script.
    fn legend(&self, out: &mut String) {
        // Entries run left to right and wrap before the chart's right
        // edge; the rows stack upwards from just above the plot.
        let width = |s: &Series| 28.0 + 7.0 * s.label.chars().count() as f64 + 24.0;
        let mut rows: Vec<Vec<&Series>> = vec![Vec::new()];
        let mut used = 0.0;
        for s in &self.series {
            let row = rows.last_mut().expect("one row at least");
            if !row.is_empty() && LEFT + used + width(s) > WIDTH {
                rows.push(Vec::new());
                used = 0.0;
            }
            rows.last_mut().expect("just pushed").push(s);
            used += width(s);
        }
        let n = rows.len();
        for (r, row) in rows.into_iter().enumerate() {
            let y = TOP - 20.0 - LEGEND_ROW * (n - 1 - r) as f64;
            self.legend_row(out, &row, y);
        }
    }

    fn legend_row(&self, out: &mut String, row: &[&Series], y: f64) {
        let mut x = LEFT;
        for s in row {
            if s.rings {
                let _ = write!(
                    out,
                    r#"<circle class="ring" cx="{}" cy="{}" r="{RING}" stroke="{}"/>"#,
                    coord(x + 11.0),
                    coord(y),
                    s.color
                );
            } else {
                let _ = write!(
                    out,
                    r#"<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="{c}" stroke-width="2.5"{d}/>"#,
                    x0 = coord(x),
                    x1 = coord(x + 22.0),
                    y = coord(y),
                    c = s.color,
                    d = dash(s.dashed),
                );
            }
            let _ = write!(
                out,
                r#"<text class="legend" x="{}" y="{}" dy="0.32em">{}</text>"#,
                coord(x + 28.0),
                coord(y),
                escape(&s.label)
            );
            x += 28.0 + 7.0 * s.label.chars().count() as f64 + 24.0;
        }
    }

    fn note(&self, out: &mut String) {
        let _ = write!(
            out,
            r#"<text class="note" x="{}" y="{}" text-anchor="middle">{}</text>"#,
            coord((LEFT + self.right()) / 2.0),
            coord((TOP + HEIGHT - BOTTOM) / 2.0),
            escape(&self.empty_note)
        );
    }

    /// A series' path, its dots when it is short, and its hover targets.
    fn line(&self, out: &mut String, s: &Series) {
        let axis = self.axis_of(s);
        if s.rings {
            for p in s.runs.iter().flatten() {
                self.ring(out, s, axis, p);
            }
            return;
        }
        let mut d = String::new();
        for run in &s.runs {
            for (i, p) in run.iter().enumerate() {
                let cmd = if i == 0 { 'M' } else { 'L' };
                let _ = write!(
                    d,
                    "{cmd}{} {}",
                    coord(self.px(p.x)),
                    coord(self.py(axis, p.y))
                );
            }
        }
        let _ = write!(
            out,
            r#"<path class="series" d="{d}" stroke="{}"{}/>"#,
            s.color,
            dash(s.dashed)
        );
        let n = s.len();
        if n > MAX_HOVER_POINTS {
            return;
        }
        for p in s.runs.iter().flatten() {
            self.dot(out, s, axis, p, n);
        }
    }

    /// A point's hover target: a dot that shows when the pointer is on it
    /// (and always, for short series and lone points), titled with its tip.
    fn dot(&self, out: &mut String, s: &Series, axis: &Axis, p: &Point, n: usize) {
        let class = if n <= MAX_DOTTED_POINTS {
            "dot shown"
        } else {
            "dot"
        };
        let _ = write!(
            out,
            r#"<circle class="{class}" cx="{}" cy="{}" r="4" fill="{}"><title>{}</title></circle>"#,
            coord(self.px(p.x)),
            coord(self.py(axis, p.y)),
            s.color,
            escape(&p.tip)
        );
    }

    /// A ring around a point of another series, titled with its tip.
    fn ring(&self, out: &mut String, s: &Series, axis: &Axis, p: &Point) {
        let _ = write!(
            out,
            r#"<circle class="ring" cx="{}" cy="{}" r="{RING}" stroke="{}"><title>{}</title></circle>"#,
            coord(self.px(p.x)),
            coord(self.py(axis, p.y)),
            s.color,
            escape(&p.tip)
        );
    }
}

fn dash(dashed: bool) -> &'static str {
    if dashed {
        r#" stroke-dasharray="7 4""#
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(labels: &[&str]) -> Chart {
        Chart {
            label: "t".into(),
            x: Axis::exact(1.0, 4, "x"),
            y: Axis::from_zero(1.0, 4, "y"),
            y_right: None,
            series: labels
                .iter()
                .map(|l| Series {
                    label: l.to_string(),
                    color: "#000",
                    dashed: false,
                    on_right: false,
                    rings: false,
                    runs: Vec::new(),
                })
                .collect(),
            empty_note: "none".into(),
        }
    }

    /// The rows the legend's labels sit on, top to bottom.
    fn legend_rows(svg: &str) -> Vec<String> {
        let mut ys: Vec<String> = svg
            .split(r#"<text class="legend" "#)
            .skip(1)
            .map(|t| t.split('"').nth(3).expect("x=\"..\" y=\"..\"").to_string())
            .collect();
        ys.dedup();
        ys
    }

    /// A legend wider than the chart wraps onto a second row above the
    /// first instead of running off the edge; a short one stays on one.
    #[test]
    fn a_long_legend_wraps_and_stays_inside_the_chart() {
        let short = chart(&["p50", "p99"]).to_svg();
        assert_eq!(legend_rows(&short).len(), 1);
        let long = chart(&[
            "corrected (from intended send)",
            "uncorrected (from actual send)",
            "with unfinished (lower bounds)",
            "time to first byte",
            "first event",
        ])
        .to_svg();
        let rows = legend_rows(&long);
        assert_eq!(rows.len(), 2, "{long}");
        assert!(rows.iter().all(|y| y.parse::<f64>().unwrap() > 0.0));
    }
}
