//! Page-level tests: a hand-built document with every field filled, and
//! degenerate ones, rendered and checked for self-containment, escaping,
//! both latency curves, and numbers that are never `NaN` or infinite.

use crate::report::json::{
    Document, EncodedHistograms, Endpoint, LatencySummaries, Point, RunConfig, Series, Summary,
    ThreadSummary, PERCENTILES, SCHEMA,
};
use crate::stats::{Counters, Errors};

use super::{charts, render};

const REQUESTS: u64 = 100_000;

/// Spectrum percentiles the way the report's tables step: five ticks per
/// halving of the distance to 100%, then 100% itself.
fn spectrum_percentiles() -> Vec<f64> {
    let mut ps = Vec::new();
    for half in 0..12 {
        let rest = 100.0 * 0.5f64.powi(half);
        for tick in 0..5 {
            ps.push(100.0 - rest + f64::from(tick) * rest / 10.0);
        }
    }
    ps.push(100.0);
    ps
}

/// A summary whose value at percentile `p` is `value(p)`.
fn summary(value: impl Fn(f64) -> u64) -> Summary {
    let spectrum = spectrum_percentiles()
        .into_iter()
        .map(|p| (p, value(p), (REQUESTS as f64 * p / 100.0).round() as u64))
        .collect();
    Summary {
        count: REQUESTS,
        min: value(0.0),
        max: value(100.0),
        mean: value(50.0) as f64 * 1.2,
        stdev: value(90.0) as f64 * 0.8,
        percentiles: PERCENTILES.iter().map(|&p| (p, value(p))).collect(),
        spectrum,
    }
}

/// Uncorrected: a modest tail. Corrected: the same plus the wait behind a
/// stall, which only the top few percent of requests saw.
fn uncorrected_us(p: f64) -> u64 {
    let rest = (1.0 - p / 100.0).max(1e-5);
    (900.0 * rest.powf(-0.3)) as u64
}

fn corrected_us(p: f64) -> u64 {
    let stalled = ((p - 95.0) / 5.0).clamp(0.0, 1.0);
    uncorrected_us(p) + (stalled.powf(0.5) * 180_000.0) as u64
}

fn series_point(i: u64) -> Point {
    let stall = i == 6;
    Point {
        t: i as f64,
        completed: 10_000 - if stall { 2_500 } else { i * 30 },
        errors: if stall { 40 } else { i % 3 },
        p50: 1_100 + i * 20,
        p90: 2_000 + i * 50,
        p99: if stall { 150_000 } else { 3_500 + i * 300 },
        p999: if stall { 175_000 } else { 6_000 + i * 500 },
        p9999: if stall { 180_000 } else { 8_000 + i * 600 },
        max: if stall { 181_000 } else { 9_000 + i * 700 },
        unfinished: 0,
        p99_with_unfinished: if stall { 150_000 } else { 3_500 + i * 300 },
    }
}

/// HTTP/2's own counts: a few streams reset, one GOAWAY, requests sent
/// again.
fn http2_counts() -> crate::stats::Http2Counts {
    let mut h = crate::stats::Http2Counts::default();
    for _ in 0..15 {
        h.resets.count(7);
    }
    h.goaway.count(0);
    h.retried = 9;
    h
}

/// A document with every field set to something plausible: a 10 s rate
/// run with a stall at 6 s.
pub fn sample() -> Document {
    let counters = Counters {
        due: REQUESTS,
        completed: REQUESTS - 60,
        bytes: REQUESTS * 812,
        errors: Errors {
            connect: 3,
            read: 20,
            write: 5,
            status: 12,
            timeout: 25,
        },
        in_flight: 8,
        never_sent: 2,
        reconnects: 4,
        queued: 2_310,
        saturated: 0,
        at_end: Default::default(),
        http2: http2_counts(),
    };
    Document {
        schema: SCHEMA,
        metron_version: "0.1.0".into(),
        config: RunConfig {
            url: "http://127.0.0.1:8080/api/items?page=2&sort=name".into(),
            threads: 2,
            connections: 64,
            duration_s: 12.0,
            warmup_s: 2.0,
            timeout_s: 2.0,
            rate: Some(10_000.0),
            script: Some("scripts/post <json>.lua".into()),
            headers: vec!["Accept: application/json".into(), "X-Trace: a&b".into()],
            requests: None,
            max_streams: Some(100),
            arrival: None,
            arrival_seed: None,
            rate_profile: Vec::new(),
        },
        protocol: Some("HTTP/2".into()),
        window_s: 10.0,
        window_start_ms: None,
        interrupted: false,
        interruption: None,
        counters,
        rate_window_s: Some(10.0),
        requests_per_sec: (REQUESTS - 60) as f64 / 10.0,
        bytes_per_sec: (REQUESTS * 812) as f64 / 10.0,
        cpu_s: 6.42,
        latency: LatencySummaries {
            corrected: summary(corrected_us),
            uncorrected: summary(uncorrected_us),
            send_lag: summary(|p| (corrected_us(p) - uncorrected_us(p)) + 15),
            with_unfinished: None,
        },
        series: Series {
            interval_s: 1.0,
            points: (0..10).map(series_point).collect(),
        },
        threads: vec![
            ThreadSummary {
                completed: 50_010,
                cpu_s: 3.3,
                series_step_s: 0.01,
                series: vec![50; 10],
            },
            ThreadSummary {
                completed: 49_930,
                cpu_s: 3.12,
                series_step_s: 0.01,
                series: vec![50; 10],
            },
        ],
        histograms: EncodedHistograms {
            corrected: String::new(),
            uncorrected: String::new(),
            send_lag: String::new(),
            req_per_sec: String::new(),
            unfinished: None,
        },
        endpoints: vec![Endpoint {
            name: "GET /<items>".into(),
            completed: 1_000,
            errors: 3,
            latency: summary(corrected_us),
            histogram: String::new(),
        }],
        phases: Vec::new(),
        slo: None,
    }
}

/// The checks every rendered page must pass, whatever its document.
fn assert_clean(doc: &Document, html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"), "no doctype");
    let url = super::fmt::escape(&doc.config.url);
    let rest = html.replace(&url, "");
    assert!(
        !rest.contains("http://") && !rest.contains("https://"),
        "a link other than the target"
    );
    assert!(
        !html.contains("<script src") && !html.contains("<link"),
        "an external resource"
    );
    assert!(!html.contains("NaN"), "NaN in the page");
    assert!(
        !html.to_lowercase().contains("inf"),
        "an infinity in the page"
    );
    assert_eq!(html.matches("<svg").count(), 3);
    assert_eq!(html.matches("</svg>").count(), 3);
    assert_eq!(
        html.matches("<table").count(),
        html.matches("</table>").count()
    );
}

#[test]
fn sample_page_is_complete_and_self_contained() {
    let doc = sample();
    let html = render(&doc);
    assert_clean(&doc, &html);
    for text in [
        "Configuration",
        "Latency by percentile",
        "Over time",
        "Accounting",
        "Threads",
        "Send lag",
    ] {
        assert!(html.contains(text), "missing {text}");
    }
    assert!(html.contains("10,000 requests/s (open loop)"));
    assert!(html.contains("<code>X-Trace: a&amp;b</code>"));
    assert!(html.contains("scripts/post &lt;json&gt;.lua"));
}

#[test]
fn document_strings_are_escaped() {
    let mut doc = sample();
    doc.config.url = r#"http://h/<b>&"x""#.into();
    let html = render(&doc);
    assert!(html.contains("http://h/&lt;b&gt;&amp;&quot;x&quot;"));
    assert!(!html.contains("<b>"));
    assert!(html.contains("<code>GET /&lt;items&gt;</code>"));
    assert_clean(&doc, &html);
}

#[test]
fn both_latency_curves_are_drawn() {
    let doc = sample();
    let svg = charts::spectrum(&doc).to_svg();
    let paths: Vec<&str> = svg.split("<path class=\"series\" d=\"").skip(1).collect();
    assert_eq!(paths.len(), 2);
    for p in paths {
        assert!(
            p.starts_with('M') && p.matches('L').count() > 30,
            "short path: {p}"
        );
    }
    assert!(svg.contains("corrected (from intended send)"));
    assert!(svg.contains("uncorrected (from actual send)"));
}

#[test]
fn the_maximum_sits_on_the_right_edge() {
    let chart = charts::spectrum(&sample());
    for s in &chart.series {
        let last = s.runs[0].last().unwrap();
        assert_eq!(last.x, chart.x.max);
        assert!(last.y > 0.0);
    }
    assert_eq!(chart.x.ticks.last().unwrap().1, "99.99%");
}

#[test]
fn throughput_mode_says_what_the_curves_measure() {
    let mut doc = sample();
    doc.config.rate = None;
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains("throughput mode (closed loop)"));
    assert!(html.contains("send → response"));
    assert!(!html.contains("corrected (from intended send)"));
}

fn empty_summary() -> Summary {
    Summary {
        count: 0,
        min: 0,
        max: 0,
        mean: 0.0,
        stdev: 0.0,
        percentiles: PERCENTILES.iter().map(|&p| (p, 0)).collect(),
        spectrum: Vec::new(),
    }
}

/// The sample as if no request had completed.
fn no_requests() -> Document {
    let mut doc = sample();
    doc.counters = Counters::default();
    doc.requests_per_sec = 0.0;
    doc.bytes_per_sec = 0.0;
    doc.latency = LatencySummaries {
        corrected: empty_summary(),
        uncorrected: empty_summary(),
        send_lag: empty_summary(),
        with_unfinished: None,
    };
    for p in &mut doc.series.points {
        *p = Point {
            t: p.t,
            completed: 0,
            errors: 0,
            p50: 0,
            p90: 0,
            p99: 0,
            p999: 0,
            p9999: 0,
            max: 0,
            unfinished: 0,
            p99_with_unfinished: 0,
        };
    }
    doc.threads.iter_mut().for_each(|t| t.completed = 0);
    doc
}

/// Requests left unfinished: the page warns, the cards show the
/// conservative figures, the table gains their column and both charts
/// their curve.
#[test]
fn unfinished_requests_show_at_their_lower_bounds() {
    let mut doc = sample();
    assert!(doc.with_unfinished().is_none());
    let mut conservative = summary(|p| corrected_us(p) * 3);
    conservative.count = doc.latency.corrected.count + 35;
    doc.latency.with_unfinished = Some(conservative);
    doc.series.points[9].unfinished = 35;
    doc.series.points[9].p99_with_unfinished = 2_000_000;
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains("35 requests did not complete"), "no warning");
    assert!(html.contains("with 35 unfinished at lower bounds"), "cards");
    assert!(
        html.contains(super::charts::WITH_UNFINISHED),
        "table or spectrum"
    );
    assert!(html.contains("p99 with unfinished"), "over time");
}

#[test]
fn a_run_without_requests_renders() {
    let doc = no_requests();
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains("No completed requests"));
    assert!(html.contains("no latencies to list"));
    assert!(html.contains("No interval completed a request"));
}

#[test]
fn one_interval_and_equal_latencies_render() {
    let mut doc = sample();
    doc.series.points.truncate(1);
    let flat = summary(|_| 500);
    doc.latency.corrected = flat.clone();
    doc.latency.uncorrected = flat;
    let p = &mut doc.series.points[0];
    (p.p50, p.p90, p.p99, p.p999, p.max) = (500, 500, 500, 500, 500);
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(
        html.contains("class=\"dot shown\""),
        "a lone point must show"
    );
}

#[test]
fn unusable_numbers_never_reach_the_page() {
    let mut doc = sample();
    doc.window_s = 0.0;
    doc.series = Series {
        interval_s: 0.0,
        points: Vec::new(),
    };
    doc.requests_per_sec = f64::NAN;
    doc.bytes_per_sec = f64::INFINITY;
    doc.cpu_s = f64::NAN;
    doc.config.duration_s = f64::NEG_INFINITY;
    doc.latency.corrected.mean = f64::NAN;
    doc.latency.corrected.spectrum = vec![(f64::NAN, 10, 1), (100.0, 20, 2)];
    doc.threads.clear();
    doc.interrupted = true;
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains("interrupted"));
}

/// Writes sample pages for a look in a browser (rate mode, throughput
/// mode, no requests) into a directory:
/// `METRON_HTML_SAMPLES=DIR cargo test -- --ignored write_sample_pages`.
#[test]
#[ignore]
fn write_sample_pages() {
    let dir = std::path::PathBuf::from(
        std::env::var("METRON_HTML_SAMPLES").unwrap_or_else(|_| ".".into()),
    );
    // Without a schedule the two measures are the same.
    let mut closed = sample();
    closed.config.rate = None;
    closed.latency.uncorrected = closed.latency.corrected.clone();
    for (name, doc) in [
        ("rate", sample()),
        ("throughput", closed),
        ("empty", no_requests()),
    ] {
        std::fs::write(dir.join(format!("{name}.html")), render(&doc)).expect("writable directory");
    }
}

/// A last interval that the window's end cut short: its rate is over the
/// time it lasted, not the whole interval length, so the curve does not dip
/// at the end of a run that is not a whole number of intervals.
#[test]
fn a_last_interval_cut_short_shows_its_true_rate() {
    let mut doc = sample();
    let step = doc.series.interval_s;
    let (t, completed) = {
        let last = doc.series.points.last().unwrap();
        (last.t, last.completed)
    };
    doc.window_s = t + step / 2.0;
    let chart = charts::throughput_over_time(&doc);
    let end = chart.series[0].runs[0].last().unwrap();
    assert_eq!(end.y, completed as f64 / (step / 2.0));
    assert_eq!(end.x, t + step / 4.0);
}
