//! Page-level tests: a hand-built document with every field filled, and
//! degenerate ones, rendered and checked for self-containment, escaping,
//! both latency curves, and numbers that are never `NaN` or infinite.

use crate::http::{Protocol, Spoken};
use crate::report::json::{
    Document, EncodedHistograms, Endpoint, LatencySummaries, PhaseSummary, Point, ProfilePhase,
    RunConfig, Series, Summary, ThreadSummary, PERCENTILES, SCHEMA,
};
use crate::report::sweep::{SweepConfig, SweepDocument, SweepStep, SWEEP_SCHEMA};
use crate::schedule::Arrival;
use crate::stats::{Counters, Errors};
use crate::verdict::{SloReport, SloRow, Verdict};

use super::{charts, render, render_sweep};

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
        min: Some(value(0.0)),
        max: Some(value(100.0)),
        mean: Some(value(50.0) as f64 * 1.2),
        stdev: Some(value(90.0) as f64 * 0.8),
        percentiles: PERCENTILES.iter().map(|&p| (p, Some(value(p)))).collect(),
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
        p50: Some(1_100 + i * 20),
        p90: Some(2_000 + i * 50),
        p99: Some(if stall { 150_000 } else { 3_500 + i * 300 }),
        p999: Some(if stall { 175_000 } else { 6_000 + i * 500 }),
        p9999: Some(if stall { 180_000 } else { 8_000 + i * 600 }),
        max: Some(if stall { 181_000 } else { 9_000 + i * 700 }),
        unfinished: 0,
        p99_with_unfinished: Some(if stall { 150_000 } else { 3_500 + i * 300 }),
        ..Point::empty(i as f64)
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
        reopens: crate::stats::Reopens {
            closed: 3,
            reset: 1,
            ..Default::default()
        },
        timeout_unanswered: 0,
        queued: 2_310,
        saturated: 0,
        missed_at_start: 0,
        at_end: Default::default(),
        http2: http2_counts(),
        read_causes: crate::stats::ReadCauses {
            reset: 12,
            closed: 8,
            ..Default::default()
        },
        connect_causes: crate::stats::ConnectCauses {
            refused: 3,
            ..Default::default()
        },
        waits: crate::stats::Waits {
            busy: 2_300,
            down: 10,
            server_limit: 0,
        },
        connections: crate::stats::Pool {
            initial: 64,
            peak: 64,
            opened_on_demand: 0,
            server_accepted: None,
        },
        status_codes: {
            let mut s = crate::stats::StatusCodes::default();
            for _ in 0..3 {
                s.count(200);
            }
            s.count(503);
            s
        },
        quic: Default::default(),
        grpc: Default::default(),
        ws_closes: Default::default(),
        ws_refused: Default::default(),
        ws_unasked: 0,
        ws_pings: 0,
        ws_deflate_agreed: 0,
        ws_deflate_declined: 0,
        failed_checks: 0,
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
            llm: None,
            max_streams: Some(100),
            arrival: None,
            arrival_seed: None,
            rate_profile: Vec::new(),
            shard: None,
            start_at_s: None,
            grpc: None,
            zero_rtt: false,
            ws: None,
            offered: Vec::new(),
        },
        protocol: Some(Spoken::of([Protocol::Http2])),
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
            ttfb: None,
            connect: None,
            tls_handshake: None,
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
            ..EncodedHistograms::default()
        },
        endpoints: vec![Endpoint {
            name: "GET /<items>".into(),
            completed: 1_000,
            errors: 3,
            latency: summary(corrected_us),
            histogram: String::new(),
            uncorrected: None,
            uncorrected_histogram: None,
            unfinished_histogram: None,
            status_codes: Default::default(),
        }],
        phases: Vec::new(),
        visits: None,
        events: None,
        llm: None,
        slo: None,
        start_offset_s: None,
        instances: Vec::new(),
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
    // A rate profile adds its chart to the three every page has.
    let charts = 3 + usize::from(!doc.config.rate_profile.is_empty());
    assert_eq!(html.matches("<svg").count(), charts);
    assert_eq!(html.matches("</svg>").count(), charts);
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
    assert!(html.contains("Status 503"), "responses by status code");
    assert!(
        html.contains("reset 12, closed early 8"),
        "read errors by cause"
    );
}

#[test]
fn quic_rows_show_0rtt_only_when_some_connection_sent_it() {
    let mut doc = sample();
    doc.counters.quic.packets_sent = 1_200;
    doc.counters.quic.packets_lost = 12;
    let html = render(&doc);
    assert!(html.contains("QUIC packets lost (sent again)"));
    assert!(!html.contains("0-RTT"));
    doc.counters.quic.zero_rtt_offered = 8;
    doc.counters.quic.zero_rtt = 6;
    let html = render(&doc);
    assert!(html.contains("QUIC connections with 0-RTT accepted"));
    assert!(html.contains("75.0% of 8 that sent it"), "{html}");
    assert_clean(&doc, &html);
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
        min: None,
        max: None,
        mean: None,
        stdev: None,
        percentiles: PERCENTILES.iter().map(|&p| (p, None)).collect(),
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
        ttfb: None,
        connect: None,
        tls_handshake: None,
    };
    for p in &mut doc.series.points {
        *p = Point::empty(p.t);
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
    doc.series.points[9].p99_with_unfinished = Some(2_000_000);
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains("35 requests did not complete"), "no warning");
    assert!(html.contains("with 35 unfinished at lower bounds"), "cards");
    assert!(
        html.contains(super::fmt::WITH_UNFINISHED),
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
    (p.p50, p.p90, p.p99, p.p999, p.max) = (Some(500), Some(500), Some(500), Some(500), Some(500));
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
    doc.latency.corrected.mean = Some(f64::NAN);
    doc.latency.corrected.spectrum = vec![(f64::NAN, 10, 1), (100.0, 20, 2)];
    doc.threads.clear();
    doc.interrupted = true;
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains("interrupted"));
}

/// Writes sample pages for a look in a browser (rate mode, throughput
/// mode, no requests, a rate profile judged by an SLO, a sweep) into a
/// directory:
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
    let mut judged = profiled();
    judged.slo = Some(slo(
        Verdict::NotMet,
        None,
        vec![
            slo_row("p99<10ms", 182_250.0, "us", false),
            slo_row("errors<0.1%", 0.00062, "share", true),
        ],
    ));
    for (name, doc) in [
        ("rate", sample()),
        ("throughput", closed),
        ("empty", no_requests()),
        ("profile", judged),
    ] {
        std::fs::write(dir.join(format!("{name}.html")), render(&doc)).expect("writable directory");
    }
    std::fs::write(dir.join("sweep.html"), render_sweep(&sweep_sample()))
        .expect("writable directory");
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

/// A profile phase as `lib` describes it: times from the run's start,
/// warm-up included.
fn profile_phase(label: &str, start_s: f64, length_s: f64, from: f64, to: f64) -> ProfilePhase {
    ProfilePhase {
        label: label.into(),
        start_s,
        length_s,
        from,
        to,
    }
}

/// A phase's figures, its window share given from the window's start.
fn phase(label: &str, start_s: f64, length_s: f64, due: u64) -> PhaseSummary {
    PhaseSummary {
        label: label.into(),
        start_s,
        length_s,
        due,
        completed: due.saturating_sub(10),
        errors: 3,
        latency: summary(corrected_us),
        histogram: String::new(),
        unfinished: String::new(),
    }
}

/// The sample under a profile: a ramp through the 2 s warm-up, a hold,
/// a ramp down, with Poisson arrivals.
fn profiled() -> Document {
    let mut doc = sample();
    doc.config.rate = Some(3_500.0);
    doc.config.arrival = Some(Arrival::Poisson);
    doc.config.arrival_seed = Some(42);
    doc.config.rate_profile = vec![
        profile_phase("0-4k:4s", 0.0, 4.0, 0.0, 4_000.0),
        profile_phase("4k:4s", 4.0, 4.0, 4_000.0, 4_000.0),
        profile_phase("4k-2k:4s", 8.0, 4.0, 4_000.0, 2_000.0),
    ];
    doc.phases = vec![
        phase("0-4k:4s", 0.0, 2.0, 6_000),
        phase("4k:4s", 2.0, 4.0, 16_000),
        phase("4k-2k:4s", 6.0, 4.0, 12_000),
    ];
    doc
}

/// A profile of more phases than are broken out says why the page has
/// no table for them.
#[test]
fn a_profile_of_too_many_phases_says_its_table_is_left_out() {
    let mut doc = profiled();
    doc.phases.clear();
    let n = crate::stats::phase::MAX_PHASES + 1;
    doc.config.rate_profile = (0..n)
        .map(|i| profile_phase("1k:1s", i as f64, 1.0, 1_000.0, 1_000.0))
        .collect();
    let html = render(&doc);
    assert!(
        html.contains(&format!("No table per phase: the profile has {n} phases")),
        "no word of the missing table"
    );
    doc.config.rate_profile.truncate(3);
    assert!(!render(&doc).contains("No table per phase"));
}

/// The intended line follows the profile in the window's time: the ramp
/// cut by the warm-up starts at its rate 2 s in.
#[test]
fn the_intended_rate_follows_the_profile_after_the_warmup() {
    let doc = profiled();
    let chart = charts::intended_rate(&doc);
    let intended: Vec<(f64, f64)> = chart.series[0].runs[0].iter().map(|p| (p.x, p.y)).collect();
    assert_eq!(
        intended,
        [
            (0.0, 2_000.0),
            (2.0, 4_000.0),
            (2.0, 4_000.0),
            (6.0, 4_000.0),
            (6.0, 4_000.0),
            (10.0, 2_000.0)
        ]
    );
    // Achieved: each interval's completions per second, at its middle.
    let achieved = &chart.series[1].runs[0];
    assert_eq!(achieved.len(), doc.series.points.len());
    assert_eq!((achieved[0].x, achieved[0].y), (0.5, 10_000.0));
    let svg = chart.to_svg();
    assert!(svg.contains(">intended</text>") && svg.contains(">achieved (completed/s)</text>"));
}

/// A profile that ends before the window does: the intended rate drops
/// to 0 for the rest of it.
#[test]
fn the_intended_rate_is_zero_after_the_profile() {
    let mut doc = profiled();
    doc.config.rate_profile = vec![profile_phase("3k:6s", 0.0, 6.0, 3_000.0, 3_000.0)];
    let chart = charts::intended_rate(&doc);
    let intended: Vec<(f64, f64)> = chart.series[0].runs[0].iter().map(|p| (p.x, p.y)).collect();
    assert_eq!(
        intended,
        [(0.0, 3_000.0), (4.0, 3_000.0), (4.0, 0.0), (10.0, 0.0)]
    );
}

#[test]
fn a_rate_profile_gets_its_chart_and_phase_table() {
    let mut doc = profiled();
    // A phase entirely in the warm-up has no share of the window.
    doc.phases.insert(0, phase("1k:1s", 0.0, 0.0, 0));
    let html = render(&doc);
    assert_clean(&doc, &html);
    for text in [
        "<h2>Rate profile</h2>",
        "aria-label=\"Intended and achieved rate\"",
        "rate profile: 3,500 requests/s on average (open loop)",
        "Poisson (seed 42)",
        "<code>0-4k:4s</code>, <code>4k:4s</code>, <code>4k-2k:4s</code>",
        "following a rate profile of 3,500 requests/s on average, Poisson arrivals",
    ] {
        assert!(html.contains(text), "missing {text}");
    }
    // label, start, length, intended, achieved, errors, p50, p99, p99.9
    let p50 = super::fmt::latency_us(corrected_us(50.0));
    let hold = format!(
        "<tr><th scope=\"row\"><code>4k:4s</code></th><td>2 s</td><td>4 s</td>\
         <td>4,000</td><td>3,998</td><td>3</td><td>{p50}</td>"
    );
    assert!(html.contains(&hold), "no row for the hold");
    let warmup =
        "<tr><th scope=\"row\"><code>1k:1s</code></th><td>0 s</td><td>0 s</td><td>–</td><td>–</td>";
    assert!(html.contains(warmup), "no row for the warm-up phase");
    let order = [
        "<h2>Over time</h2>",
        "<h2>Rate profile</h2>",
        "<h2>Accounting",
    ];
    let at: Vec<usize> = order.iter().map(|h| html.find(h).unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "sections out of order");
}

#[test]
fn phases_without_a_profile_still_get_their_table() {
    let mut doc = sample();
    doc.phases = vec![phase("a", 0.0, 5.0, 100), phase("b", 5.0, 5.0, 100)];
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains("<table class=\"numbers phases\">"));
    assert!(!html.contains("Intended and achieved rate"));
}

fn slo_row(term: &str, value: f64, unit: &str, met: bool) -> SloRow {
    SloRow {
        term: term.into(),
        value: Some(value),
        unit: unit.into(),
        met,
    }
}

fn slo(verdict: Verdict, reason: Option<&str>, rows: Vec<SloRow>) -> SloReport {
    SloReport {
        spec: rows
            .iter()
            .map(|r| r.term.as_str())
            .collect::<Vec<_>>()
            .join(","),
        verdict,
        reason: reason.map(Into::into),
        exit_status: verdict.exit_status(),
        rows,
    }
}

#[test]
fn the_slo_table_lists_each_term_and_the_verdict() {
    let mut doc = sample();
    doc.slo = Some(slo(
        Verdict::NotMet,
        None,
        vec![
            slo_row("p99<10ms", 182_250.0, "us", false),
            slo_row("errors<0.1%", 0.00062, "share", true),
            slo_row("rate>=99%", 0.9994, "share", true),
        ],
    ));
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains("<h2>SLO</h2>"));
    assert!(html.contains(
        "<p class=\"verdict failed\">Objective <code>p99&lt;10ms,errors&lt;0.1%,rate&gt;=99%</code>: \
         <strong>not met (p99&lt;10ms)</strong></p>"
    ));
    for row in [
        "<tr><th scope=\"row\"><code>p99&lt;10ms</code></th><td>182.25 ms</td><td>NOT MET</td></tr>",
        "<tr><th scope=\"row\"><code>errors&lt;0.1%</code></th><td>0.06%</td><td>met</td></tr>",
        "<tr><th scope=\"row\"><code>rate&gt;=99%</code></th><td>99.94%</td><td>met</td></tr>",
    ] {
        assert!(html.contains(row), "missing {row}");
    }
    assert!(html.find("<h2>Results</h2>") < html.find("<h2>SLO</h2>"));
    assert!(html.find("<h2>SLO</h2>") < html.find("<h2>Latency by percentile</h2>"));
}

#[test]
fn an_inconclusive_verdict_says_why() {
    let mut doc = sample();
    doc.slo = Some(slo(
        Verdict::Inconclusive,
        Some("send lag p99 1.27ms is above the 1.11ms allowed <free connections>"),
        vec![slo_row("p99<50ms", 2_889.0, "us", true)],
    ));
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains(
        "<strong>inconclusive: send lag p99 1.27ms is above the 1.11ms allowed &lt;free connections&gt;</strong>"
    ));
    assert!(html.contains("class=\"verdict unsure\""));
    assert!(html.contains("<td>2.89 ms</td><td>met</td>"));
    doc.slo = Some(slo(
        Verdict::Met,
        None,
        vec![slo_row("max<1s", f64::NAN, "us", true)],
    ));
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains("class=\"verdict met\""));
    assert!(html.contains("<td>–</td><td>met</td>"));
}

fn step(rate: f64, p99: u64, verdict: Verdict, reason: Option<&str>) -> SweepStep {
    let met = verdict == Verdict::Met;
    SweepStep {
        rate,
        achieved: if met { rate * 0.999 } else { rate * 0.9 },
        p50: Some(p99 / 3),
        p99: Some(p99),
        p999: Some(p99 + p99 / 10),
        max: Some(p99 * 2),
        errors: if met { 0 } else { 17 },
        due: (rate * 3.0) as u64,
        send_lag_p99: Some(if reason.is_some() { 1_830 } else { 45 }),
        slo: slo(
            verdict,
            reason,
            vec![slo_row("p99<20ms", p99 as f64, "us", p99 < 20_000)],
        ),
        corrected: String::new(),
        unfinished: String::new(),
        visits: None,
    }
}

/// A sweep as `metron sweep` runs it: doubling, a failure, bisection, and a
/// last step the generator could not keep.
fn sweep_sample() -> SweepDocument {
    let mut run = sample().config;
    run.rate = Some(500.0);
    run.arrival = Some(Arrival::Constant);
    run.script = None;
    run.headers = Vec::new();
    run.max_streams = None;
    SweepDocument {
        schema: SWEEP_SCHEMA,
        kind: "sweep".into(),
        metron_version: "0.1.0".into(),
        config: SweepConfig {
            slo: "p99<20ms".into(),
            from: 500.0,
            to: 16_000.0,
            resolution: 0.02,
            step_duration_s: 20.0,
            cooldown_s: 2.0,
            run,
        },
        steps: vec![
            step(500.0, 2_081, Verdict::Met, None),
            step(1_000.0, 2_530, Verdict::Met, None),
            step(2_000.0, 190_340, Verdict::NotMet, None),
            step(1_500.0, 2_110, Verdict::Met, None),
            step(1_750.0, 4_110, Verdict::Met, None),
            step(
                1_875.0,
                15_010,
                Verdict::Inconclusive,
                Some("the generator itself sent late <cpu>"),
            ),
        ],
        highest: Some(1_750.0),
        conclusion: "the generator, not the server, is the limit at 1.88k requests/s: \
                     the generator itself sent late <cpu>; highest rate meeting the SLO \
                     before it: 1.75k requests/s"
            .into(),
        interrupted: false,
    }
}

/// The checks every sweep page must pass: self-contained, one chart,
/// balanced tables, no unusable number.
fn assert_clean_sweep(doc: &SweepDocument, html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"), "no doctype");
    assert!(
        html.contains("<style>") && html.contains(".verdict.met"),
        "no style"
    );
    let url = super::fmt::escape(&doc.config.run.url);
    let rest = html.replace(&url, "");
    assert!(
        !rest.contains("http://") && !rest.contains("https://"),
        "a link other than the target"
    );
    assert!(
        !html.contains("<script") && !html.contains("<link") && !html.contains("<img"),
        "an external resource or a script"
    );
    assert!(!html.contains("NaN"), "NaN in the page");
    assert!(
        !html.to_lowercase().contains("inf"),
        "an infinity in the page"
    );
    assert_eq!(html.matches("<svg").count(), 1);
    assert_eq!(html.matches("</svg>").count(), 1);
    assert_eq!(
        html.matches("<table").count(),
        html.matches("</table>").count()
    );
}

#[test]
fn an_interrupted_sweep_says_so() {
    let mut doc = sweep_sample();
    let said = "This sweep was interrupted";
    assert!(!render_sweep(&doc).contains(said));
    doc.interrupted = true;
    let html = render_sweep(&doc);
    assert_clean_sweep(&doc, &html);
    assert!(html.contains(said), "{html}");
}

#[test]
fn the_sweep_page_is_complete_and_self_contained() {
    let doc = sweep_sample();
    let html = render_sweep(&doc);
    assert_clean_sweep(&doc, &html);
    for text in [
        "<title>metron sweep: http://127.0.0.1:8080/api/items?page=2&amp;sort=name</title>",
        "<h1>metron sweep</h1>",
        "SLO <code>p99&lt;20ms</code>, 6 steps from 500 to 16,000 requests/s",
        "<h2>Configuration</h2>",
        "<th scope=\"row\">Resolution</th><td>2% of the rate that met the SLO</td>",
        "<th scope=\"row\">Step duration</th><td>20 s (2 s warm-up included)</td>",
        "<th scope=\"row\">Cooldown</th><td>2 s</td>",
        "<th scope=\"row\">Threads</th><td>2</td>",
        "<th scope=\"row\">Connections</th><td>64</td>",
        "<th scope=\"row\">Arrivals</th><td>evenly spaced (constant)</td>",
        "aria-label=\"Latency against offered rate\"",
        "<h2>Steps</h2>",
        "Generated by metron 0.1.0 from a schema 1 sweep document.",
    ] {
        assert!(html.contains(text), "missing {text}");
    }
    // The conclusion, escaped, as a sentence, styled by how the sweep ended.
    assert!(html.contains(
        "<p class=\"verdict unsure\"><strong>The generator, not the server, is the limit at \
         1.88k requests/s: the generator itself sent late &lt;cpu&gt;;"
    ));
    // One row per step in the order they ran, failures marked.
    assert_eq!(html.matches("<tr class=\"failed\">").count(), 1);
    assert_eq!(html.matches("<tr class=\"unsure\">").count(), 1);
    assert!(html.contains(
        "<tr class=\"failed\"><th scope=\"row\">3</th><td>2,000</td><td>1,800</td>\
         <td>63.45 ms</td><td>190.34 ms</td><td>209.37 ms</td><td>380.68 ms</td><td>17</td>\
         <td>45 µs</td><td>not met (p99&lt;20ms)</td></tr>"
    ));
    assert!(html.contains(
        "<td>1.83 ms</td><td>inconclusive: the generator itself sent late &lt;cpu&gt;</td>"
    ));
    assert!(html.contains(
        "<tr><th scope=\"row\">1</th><td>500</td><td>500</td><td>693 µs</td><td>2.08 ms</td>"
    ));
}

/// The knee: one line per percentile over the steps sorted by rate, the
/// failed and inconclusive steps circled on each.
#[test]
fn the_knee_chart_plots_percentiles_against_the_rate() {
    let doc = sweep_sample();
    let chart = charts::knee(&doc);
    let labels: Vec<&str> = chart.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        ["p50", "p99", "p99.9", "max", "SLO not met", "inconclusive"]
    );
    let rates: Vec<f64> = chart.series[1].runs[0].iter().map(|p| p.x).collect();
    assert_eq!(rates, [500.0, 1_000.0, 1_500.0, 1_750.0, 1_875.0, 2_000.0]);
    let p99: Vec<f64> = chart.series[1].runs[0].iter().map(|p| p.y).collect();
    assert_eq!(p99[5], 190_340f64.log10());
    assert_eq!(chart.series[4].runs.len(), 4, "one ring per line");
    assert!(chart.series[4]
        .runs
        .iter()
        .flatten()
        .all(|p| p.x == 2_000.0));
    assert!(chart.series[5]
        .runs
        .iter()
        .flatten()
        .all(|p| p.x == 1_875.0));
    let tip = &chart.series[1].runs[0][5].tip;
    assert_eq!(tip, "2,000 requests/s offered: p99 190.34 ms (not met)");
    let ticks: Vec<&str> = chart.y.ticks.iter().map(|t| t.1.as_str()).collect();
    assert_eq!(ticks, ["0.1", "1", "10", "100", "1000"]);
    assert_eq!(chart.y.title, "latency (ms, log scale)");
    let svg = chart.to_svg();
    assert_eq!(svg.matches("<circle class=\"ring\"").count(), 8 + 2);
    for name in ["p50", "p99", "p99.9", "max", "SLO not met", "inconclusive"] {
        assert!(
            svg.contains(&format!(">{name}</text>")),
            "no legend for {name}"
        );
    }
    let html = render_sweep(&doc);
    assert!(html.contains(&svg));
    assert!(html.contains("Circled points"));
}

/// A sweep where every step met the SLO draws no rings and says nothing
/// of them.
#[test]
fn a_sweep_that_met_everywhere_has_no_rings() {
    let mut doc = sweep_sample();
    doc.steps.retain(|s| s.slo.verdict == Verdict::Met);
    doc.highest = Some(1_750.0);
    doc.conclusion = "highest rate meeting the SLO: 1.75k requests/s".into();
    let html = render_sweep(&doc);
    assert_clean_sweep(&doc, &html);
    assert!(!html.contains("class=\"ring\""));
    assert!(!html.contains("Circled points"));
    assert!(html.contains("<p class=\"verdict met\"><strong>Highest rate meeting the SLO"));
    assert!(!html.contains("<tr class="));
}

#[test]
fn a_sweep_without_measurements_renders() {
    let mut doc = sweep_sample();
    doc.steps.clear();
    doc.highest = None;
    doc.conclusion = "interrupted before any rate met the SLO".into();
    let html = render_sweep(&doc);
    assert_clean_sweep(&doc, &html);
    assert!(html.contains("No step measured a latency"));
    assert!(html.contains("No step ran."));
    assert!(html.contains("<p class=\"verdict failed\">"));
    // A step that measured nothing: dashes, and a gap in every line.
    let mut doc = sweep_sample();
    let s = &mut doc.steps[2];
    (s.p50, s.p99, s.p999, s.max) = (None, None, None, None);
    s.rate = f64::NAN;
    doc.steps[3].achieved = f64::INFINITY;
    doc.config.resolution = f64::NAN;
    let html = render_sweep(&doc);
    assert_clean_sweep(&doc, &html);
    let chart = charts::knee(&doc);
    assert_eq!(chart.series[0].runs[0].len(), 5);
}

/// A WebSocket echo's document.
fn websocket_echo() -> Document {
    let mut doc = sample();
    doc.protocol = Some(Spoken::of([Protocol::WebSocket]));
    doc.config.max_streams = None;
    doc.counters.status_codes = Default::default();
    for _ in 0..3 {
        doc.counters.status_codes.count(101);
    }
    doc
}

/// A WebSocket echo's page counts messages, and lists no 101 per
/// message, as the text report does not.
#[test]
fn websocket_pages_count_messages() {
    let doc = websocket_echo();
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains("Messages/s"), "{html}");
    assert!(html.contains("10,000 messages/s (open loop)"), "{html}");
    assert!(!html.contains("Status 101"), "{html}");
}

/// The server's closes and the pings sent, where the text report shows
/// them.
#[test]
fn websocket_pages_show_closes_and_pings() {
    let mut doc = websocket_echo();
    doc.counters.ws_closes.count(1000);
    doc.counters.ws_closes.count(1001);
    doc.counters.ws_pings = 7;
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(html.contains("Closes by the server"), "{html}");
    assert!(html.contains("1000 normal 1, 1001 going away 1"), "{html}");
    assert!(
        html.contains("<th scope=\"row\">Pings sent</th><td>7</td>"),
        "{html}"
    );
    assert!(!html.contains("Messages unasked") && !html.contains("permessage"));
}

/// Unasked messages and compression, where the text report shows them.
#[test]
fn websocket_pages_show_unasked_messages_and_compression() {
    let mut doc = websocket_echo();
    doc.counters.ws_unasked = 4;
    doc.counters.ws_deflate_agreed = 2;
    doc.counters.ws_deflate_declined = 1;
    let html = render(&doc);
    assert_clean(&doc, &html);
    assert!(
        html.contains("<th scope=\"row\">Messages unasked</th><td>4</td>"),
        "{html}"
    );
    assert!(
        html.contains("<th scope=\"row\">Compressed (permessage-deflate)</th><td>2</td><td>of 3 connections opened</td>"),
        "{html}"
    );
}
