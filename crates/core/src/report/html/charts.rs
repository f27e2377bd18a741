//! The report's charts, built from the document: latency by percentile,
//! latency over time, throughput over time, the intended and achieved rate
//! of a rate profile, and a sweep's knee (latency against offered rate).
//!
//! This is where document units (µs, counts per interval, percentiles in
//! 0–100) become display units and chart coordinates; the drawing itself is
//! [`super::svg`]'s.

use crate::report::json::{Document, Point as SeriesPoint, Summary};
use crate::report::sweep::{SweepDocument, SweepStep};
use crate::verdict::Verdict;

use super::axis::Axis;
use super::fmt::{count, curve_labels, latency_us, real, trim, WITH_UNFINISHED};
use super::svg::{Chart, Point, Series};

const BLUE: &str = "#2563a8";
const ORANGE: &str = "#d9731a";
const PURPLE: &str = "#7d4fa1";
const GREEN: &str = "#2f8a4c";
const RED: &str = "#c33b32";
const GREY: &str = "#6b7280";
const AMBER: &str = "#b7791f";

/// Labels of the percentile axis, one per decade of 1 / (1 - p): position
/// `k` is the percentile 100 × (1 - 10^-k).
const DECADE_LABELS: [&str; 8] = [
    "0%",
    "90%",
    "99%",
    "99.9%",
    "99.99%",
    "99.999%",
    "99.9999%",
    "99.99999%",
];
/// The percentile axis shows at least 0%–99%, so that a short spectrum
/// still reads as one, and at most the decades it has labels for.
const MIN_DECADES: f64 = 2.0;
const MAX_DECADES: f64 = (DECADE_LABELS.len() - 1) as f64;

/// Picks one figure out of a series point.
type Pick = fn(&SeriesPoint) -> u64;
/// Picks one latency figure out of a series point, if it was measured.
type LatencyPick = fn(&SeriesPoint) -> Option<u64>;

/// A latency unit for an axis: milliseconds, or seconds once values reach
/// ten thousand milliseconds (where millisecond labels stop reading well).
struct LatencyUnit {
    per_us: f64,
    name: &'static str,
}

impl LatencyUnit {
    fn for_max(max_us: u64) -> LatencyUnit {
        if max_us >= 10_000_000 {
            LatencyUnit {
                per_us: 1e-6,
                name: "s",
            }
        } else {
            LatencyUnit {
                per_us: 1e-3,
                name: "ms",
            }
        }
    }

    fn of(&self, us: u64) -> f64 {
        us as f64 * self.per_us
    }

    fn text(&self, us: u64) -> String {
        format!("{} {}", trim(self.of(us), 3), self.name)
    }
}

/// Where a percentile sits on the log axis: log10(1 / (1 - p)). The 100th
/// percentile has no finite position and gets `None`.
fn decade_position(percentile: f64) -> Option<f64> {
    let rest = 1.0 - percentile / 100.0;
    (rest > 0.0 && rest.is_finite()).then(|| -rest.log10())
}

/// The percentile axis: whole decades, up to the first one that leaves room
/// after the last finite point for the maximum, which sits on the right
/// edge.
fn percentile_axis(spectra: &[&Summary]) -> Axis {
    let last = spectra
        .iter()
        .flat_map(|s| s.spectrum.iter())
        .filter_map(|&(p, _, _)| decade_position(p))
        .fold(0.0, f64::max);
    let decades = (last + 0.2).ceil().clamp(MIN_DECADES, MAX_DECADES);
    let ticks = (0..=decades as usize)
        .map(|k| (k as f64, DECADE_LABELS[k].to_string()))
        .collect();
    Axis {
        min: 0.0,
        max: decades,
        ticks,
        title: "percentile".to_string(),
    }
}

/// One spectrum as a series: each `[percentile, value, count]` point at its
/// decade position, the 100th percentile at the axis' right edge.
fn spectrum_series(
    s: &Summary,
    axis: &Axis,
    unit: &LatencyUnit,
    style: (&str, &'static str, bool),
) -> Series {
    let (label, color, dashed) = style;
    let run = s
        .spectrum
        .iter()
        .map(|&(p, us, n)| Point {
            x: decade_position(p).unwrap_or(axis.max).min(axis.max),
            y: unit.of(us),
            tip: format!(
                "{label}: {}% at {} ({} requests)",
                trim(p, 5),
                unit.text(us),
                count(n)
            ),
        })
        .collect();
    Series {
        label: label.to_string(),
        color,
        dashed,
        on_right: false,
        rings: false,
        runs: vec![run],
    }
}

/// The classic HdrHistogram plot of both latency spectra.
pub fn spectrum<'a>(doc: &'a Document) -> Chart {
    let (corrected, uncorrected) = (&doc.latency.corrected, &doc.latency.uncorrected);
    // The phases, when measured: the first byte, and with --sse the
    // first event, each from the intended send time as latency is.
    let measured = |s: Option<&'a Summary>| s.filter(|s| s.count > 0);
    let ttfb = measured(doc.latency.ttfb.as_ref().map(|t| &t.corrected));
    let first_event = measured(doc.events.as_ref().map(|e| &e.first));
    let mut spectra = vec![corrected, uncorrected];
    spectra.extend(doc.with_unfinished());
    spectra.extend(ttfb);
    spectra.extend(first_event);
    let max_us = spectra
        .iter()
        .flat_map(|s| &s.spectrum)
        .map(|p| p.1)
        .max()
        .unwrap_or(0);
    let unit = LatencyUnit::for_max(max_us);
    let x = percentile_axis(&spectra);
    let (c_label, u_label) = curve_labels(doc);
    let mut series = vec![
        spectrum_series(corrected, &x, &unit, (c_label, BLUE, false)),
        spectrum_series(uncorrected, &x, &unit, (u_label, ORANGE, true)),
    ];
    if let Some(w) = doc.with_unfinished() {
        series.push(spectrum_series(w, &x, &unit, (WITH_UNFINISHED, RED, true)));
    }
    if let Some(t) = ttfb {
        series.push(spectrum_series(
            t,
            &x,
            &unit,
            ("time to first byte", GREEN, true),
        ));
    }
    if let Some(f) = first_event {
        let label = format!("first {}", doc.event_noun());
        series.push(spectrum_series(f, &x, &unit, (&label, PURPLE, true)));
    }
    Chart {
        label: "Latency by percentile".to_string(),
        x,
        y: Axis::from_zero(unit.of(max_us), 6, &format!("latency ({})", unit.name)),
        y_right: None,
        series,
        empty_note: "No completed requests: nothing to plot".to_string(),
    }
}

/// The time axis of the series charts: the run's intervals end to end.
fn time_axis(doc: &Document) -> Axis {
    let step = interval(doc);
    let end = doc
        .series
        .points
        .iter()
        .map(|p| p.t + step)
        .fold(0.0, f64::max);
    let end = if end > 0.0 { end } else { doc.window_s };
    Axis::exact(end, 8, "time (s)")
}

/// The series' interval length, or one second if the document's is unusable
/// (so that per-second rates stay finite).
fn interval(doc: &Document) -> f64 {
    let s = doc.series.interval_s;
    if s.is_finite() && s > 0.0 {
        s
    } else {
        1.0
    }
}

/// How long an interval lasted: the interval length, less for a last one
/// that the window's end cut short.
fn span(doc: &Document, p: &SeriesPoint) -> f64 {
    let left = doc.window_s - p.t;
    if left > 0.0 {
        interval(doc).min(left)
    } else {
        interval(doc)
    }
}

/// The middle of an interval, where its figures are drawn.
fn middle(doc: &Document, p: &SeriesPoint) -> f64 {
    p.t + span(doc, p) / 2.0
}

/// A latency figure per interval, with gaps at intervals that recorded
/// none (their figures are `None`: not measured).
fn latency_runs(
    doc: &Document,
    unit: &LatencyUnit,
    name: &str,
    pick: LatencyPick,
) -> Vec<Vec<Point>> {
    let mut runs: Vec<Vec<Point>> = vec![Vec::new()];
    for p in &doc.series.points {
        let Some(us) = pick(p) else {
            runs.push(Vec::new());
            continue;
        };
        let x = middle(doc, p);
        let tip = format!("{} s: {name} {}", trim(p.t, 3), unit.text(us));
        runs.last_mut().expect("never empty").push(Point {
            x,
            y: unit.of(us),
            tip,
        });
    }
    runs.retain(|r| !r.is_empty());
    runs
}

/// Latency p50, p99 and maximum per interval.
pub fn latency_over_time(doc: &Document) -> Chart {
    let max_us = doc
        .series
        .points
        .iter()
        .filter_map(|p| {
            [
                p.p99,
                p.p50,
                p.p99_with_unfinished,
                p.first_event_p99,
                p.event_gap_p99,
                p.tpot_p99,
            ]
            .into_iter()
            .fold(p.max, Option::max)
        })
        .max()
        .unwrap_or(0);
    let unit = LatencyUnit::for_max(max_us);
    let mut lines: Vec<(&str, &'static str, bool, LatencyPick)> = vec![
        ("p50", BLUE, false, |p| p.p50),
        ("p99", ORANGE, false, |p| p.p99),
        ("max", PURPLE, false, |p| p.max),
    ];
    if doc.series.points.iter().any(|p| p.unfinished > 0) {
        lines.push(("p99 with unfinished", RED, true, |p| p.p99_with_unfinished));
    }
    // The phases per interval, where the document has them: the first
    // byte, and with --sse the first event and the gaps (with --llm, the
    // first token and the gaps between tokens, and the time per token).
    let mut phases: Vec<(&str, &'static str, LatencyPick)> = vec![
        ("first byte p99", GREEN, |p| p.ttfb_p99),
        ("first event p99", GREY, |p| p.first_event_p99),
        ("event gap p99", AMBER, |p| p.event_gap_p99),
    ];
    if doc.llm.is_some() {
        phases[1].0 = "TTFT p99";
        phases[2].0 = "gap between tokens p99";
        phases.push(("TPOT p99", PURPLE, |p| p.tpot_p99));
    }
    for (name, color, pick) in phases {
        if doc.series.points.iter().any(|p| pick(p).is_some()) {
            lines.push((name, color, true, pick));
        }
    }
    let series = lines
        .into_iter()
        .map(|(name, color, dashed, pick)| Series {
            label: name.to_string(),
            color,
            dashed,
            on_right: false,
            rings: false,
            runs: latency_runs(doc, &unit, name, pick),
        })
        .collect();
    Chart {
        label: "Latency over time".to_string(),
        x: time_axis(doc),
        y: Axis::from_zero(unit.of(max_us), 6, &format!("latency ({})", unit.name)),
        y_right: None,
        series,
        empty_note: "No interval completed a request".to_string(),
    }
}

/// A per-second rate per interval, as one unbroken run.
fn rate_run(doc: &Document, name: &str, pick: Pick) -> Vec<Point> {
    doc.series
        .points
        .iter()
        .map(|p| {
            let y = pick(p) as f64 / span(doc, p);
            let tip = format!("{} s: {} {name}/s", trim(p.t, 3), real(y));
            Point {
                x: middle(doc, p),
                y,
                tip,
            }
        })
        .collect()
}

/// Completions and errors per second, per interval. Errors get their own
/// axis on the right: on the completions' scale a few errors per second
/// would be a flat line on the floor.
pub fn throughput_over_time(doc: &Document) -> Chart {
    let completed = rate_run(doc, "completed", |p| p.completed);
    let errors = rate_run(doc, "errors", |p| p.errors);
    let top = |run: &[Point]| run.iter().map(|p| p.y).fold(0.0, f64::max);
    let y = Axis::from_zero(top(&completed), 6, "completed per second");
    let y_right = Axis::from_zero(top(&errors), 6, "errors per second");
    let series = vec![
        Series {
            label: "completed/s".to_string(),
            color: GREEN,
            dashed: false,
            on_right: false,
            rings: false,
            runs: vec![completed],
        },
        Series {
            label: "errors/s (right axis)".to_string(),
            color: RED,
            dashed: false,
            on_right: true,
            rings: false,
            runs: vec![errors],
        },
    ];
    Chart {
        label: "Throughput over time".to_string(),
        x: time_axis(doc),
        y,
        y_right: Some(y_right),
        series,
        empty_note: "No intervals recorded".to_string(),
    }
}

/// The rate the profile asked for over the measured window: a point at
/// each end of each phase (a ramp is linear in between, a step between
/// phases is a vertical jump), clipped to `[0, end]`, and 0 after the
/// profile's end. Profile times count from the run's start, warm-up
/// included, the window's from its own start: they are shifted by the
/// warm-up.
fn intended_run(doc: &Document, end: f64) -> Vec<Point> {
    let shift = doc.config.warmup_s;
    let shift = if shift.is_finite() { shift } else { 0.0 };
    let mut run = Vec::new();
    let mut push = |t: f64, rate: f64, label: &str| {
        run.push(Point {
            x: t,
            y: rate,
            tip: format!("{} s: intended {}/s ({label})", trim(t, 3), real(rate)),
        })
    };
    let mut profile_end = f64::NEG_INFINITY;
    for ph in &doc.config.rate_profile {
        let (a, b) = (ph.start_s - shift, ph.start_s + ph.length_s - shift);
        if !(a.is_finite() && b.is_finite() && b > a) {
            continue;
        }
        profile_end = profile_end.max(b);
        if b <= 0.0 || a >= end {
            continue;
        }
        let at = |t: f64| ph.from + (ph.to - ph.from) * (t - a) / (b - a);
        let (from, to) = (a.max(0.0), b.min(end));
        push(from, at(from), &ph.label);
        push(to, at(to), &ph.label);
    }
    if profile_end.is_finite() && profile_end < end {
        let from = profile_end.max(0.0);
        push(from, 0.0, "after the profile");
        push(end, 0.0, "after the profile");
    }
    run
}

/// The rate a profile intended, and the rate achieved per interval.
pub fn intended_rate(doc: &Document) -> Chart {
    let x = time_axis(doc);
    let intended = intended_run(doc, x.max);
    let achieved = rate_run(doc, "completed", |p| p.completed);
    let top = intended
        .iter()
        .chain(&achieved)
        .map(|p| p.y)
        .fold(0.0, f64::max);
    let series = vec![
        Series {
            label: "intended".to_string(),
            color: BLUE,
            dashed: true,
            on_right: false,
            rings: false,
            runs: vec![intended],
        },
        Series {
            label: "achieved (completed/s)".to_string(),
            color: GREEN,
            dashed: false,
            on_right: false,
            rings: false,
            runs: vec![achieved],
        },
    ];
    Chart {
        label: "Intended and achieved rate".to_string(),
        x,
        y: Axis::from_zero(top, 6, "requests per second"),
        y_right: None,
        series,
        empty_note: "No profile or intervals to plot".to_string(),
    }
}

/// Picks one latency figure out of a sweep step.
type StepPick = fn(&SweepStep) -> Option<u64>;

/// The knee's latency lines: corrected latency with unfinished requests at
/// their lower bounds, per step.
const KNEE_LINES: [(&str, &str, bool, StepPick); 4] = [
    ("p50", BLUE, false, |s| s.p50),
    ("p99", ORANGE, false, |s| s.p99),
    ("p99.9", PURPLE, false, |s| s.p999),
    ("max", GREY, true, |s| s.max),
];

/// A latency axis in decades, for values from `low` to `high` µs (both
/// at least 1): positions are log10(µs), ticks at each power of ten, and at
/// 2 and 5 times it when the range is two decades or less, labelled in
/// `unit` as the linear axes are.
fn log_latency_axis(low: u64, high: u64) -> Axis {
    let unit = LatencyUnit::for_max(high);
    let lo = (low.max(1) as f64).log10().floor();
    let hi = (high.max(1) as f64).log10().ceil().max(lo + 1.0);
    let mut ticks = Vec::new();
    let fine = hi - lo <= 2.0;
    for k in lo as i32..=hi as i32 {
        for m in [1.0, 2.0, 5.0] {
            let us = m * 10f64.powi(k);
            let at = us.log10();
            if (m == 1.0 || fine) && at <= hi + 1e-9 {
                ticks.push((at, trim(us * unit.per_us, 3)));
            }
        }
    }
    Axis {
        min: lo,
        max: hi,
        ticks,
        title: format!("latency ({}, log scale)", unit.name),
    }
}

/// The sweep's knee: each latency percentile against the rate offered,
/// steps sorted by rate, on a log scale so that p50 and the maximum both
/// read. Steps that did not meet the SLO, or were inconclusive, are
/// circled on every line.
pub fn knee(doc: &SweepDocument) -> Chart {
    let mut steps: Vec<&SweepStep> = doc.steps.iter().filter(|s| s.rate.is_finite()).collect();
    steps.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let values = || {
        steps
            .iter()
            .flat_map(|s| KNEE_LINES.iter().filter_map(move |l| (l.3)(s)))
    };
    let y = log_latency_axis(values().min().unwrap_or(1), values().max().unwrap_or(1));
    let x = Axis::from_zero(
        steps.iter().map(|s| s.rate).fold(0.0, f64::max),
        8,
        &format!("offered rate ({}/s)", doc.rates_count()),
    );
    let point = |s: &SweepStep, name: &str, v: u64| Point {
        x: s.rate,
        y: (v as f64).log10(),
        tip: format!(
            "{} {}/s offered: {name} {} ({})",
            real(s.rate),
            doc.rates_count(),
            latency_us(v),
            s.slo.verdict
        ),
    };
    let mut series: Vec<Series> = KNEE_LINES
        .iter()
        .map(|&(name, color, dashed, pick)| {
            // A step without latencies (nothing measured) is a gap.
            let mut runs: Vec<Vec<Point>> = vec![Vec::new()];
            for s in &steps {
                match pick(s) {
                    None => runs.push(Vec::new()),
                    Some(v) => runs
                        .last_mut()
                        .expect("never empty")
                        .push(point(s, name, v)),
                }
            }
            runs.retain(|r| !r.is_empty());
            Series {
                label: name.to_string(),
                color,
                dashed,
                on_right: false,
                rings: false,
                runs,
            }
        })
        .collect();
    for (outcome, label, color) in [
        (Verdict::NotMet, "SLO not met", RED),
        (Verdict::Inconclusive, "inconclusive", AMBER),
    ] {
        let marked: Vec<Vec<Point>> = steps
            .iter()
            .filter(|s| s.slo.verdict == outcome)
            .flat_map(|s| {
                KNEE_LINES
                    .iter()
                    .filter_map(|l| (l.3)(s).map(|v| vec![point(s, l.0, v)]))
            })
            .collect();
        if !marked.is_empty() {
            series.push(Series {
                label: label.to_string(),
                color,
                dashed: false,
                on_right: false,
                rings: true,
                runs: marked,
            });
        }
    }
    Chart {
        label: "Latency against offered rate".to_string(),
        x,
        y,
        y_right: None,
        series,
        empty_note: "No step measured a latency".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decades_follow_the_log_scale() {
        assert_eq!(decade_position(0.0), Some(0.0));
        assert!((decade_position(99.0).unwrap() - 2.0).abs() < 1e-9);
        assert!((decade_position(99.99).unwrap() - 4.0).abs() < 1e-9);
        assert_eq!(decade_position(100.0), None);
    }

    #[test]
    fn log_axes_tick_round_latencies() {
        let a = log_latency_axis(1_800, 190_000);
        assert_eq!((a.min, a.max), (3.0, 6.0));
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1", "10", "100", "1000"]);
        assert_eq!(a.title, "latency (ms, log scale)");
        let fine = log_latency_axis(200, 900);
        let labels: Vec<&str> = fine.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0.1", "0.2", "0.5", "1"]);
        let long = log_latency_axis(900_000, 12_000_000);
        let labels: Vec<&str> = long.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0.1", "1", "10", "100"]);
        assert_eq!(long.title, "latency (s, log scale)");
        assert_eq!(log_latency_axis(0, 0).max, 1.0);
    }

    #[test]
    fn seconds_take_over_from_ten_thousand_milliseconds() {
        assert_eq!(LatencyUnit::for_max(9_999_999).name, "ms");
        assert_eq!(LatencyUnit::for_max(10_000_000).name, "s");
    }
}
