//! The report's tables and figure cards: configuration, headline numbers,
//! percentiles, request accounting, per-phase and per-thread figures.
//!
//! Cells are built as HTML fragments: document strings are escaped where
//! they enter, and everything else is produced by [`super::fmt`].

use std::fmt::Write;

use crate::http::Spoken;
use crate::report::json::{self, Document, Summary};
use crate::schedule::Arrival;
use crate::stats::phase::MAX_PHASES;
use crate::stats::{ByCode, EventKind};

use super::blocks::{card, grid, key_values};
use super::fmt::{
    bytes, count, curve_labels, escape, latency_us, percentile, real, seconds, MISSING,
    WITH_UNFINISHED,
};

/// The run's configuration, as the engine used it.
pub fn configuration(page: &mut String, doc: &Document) {
    let c = &doc.config;
    let mode = match c.load().rate() {
        Some(r) if !c.rate_profile.is_empty() => {
            format!(
                "rate profile: {} {}/s on average (open loop)",
                real(r),
                super::fmt::rate_counts(doc)
            )
        }
        Some(r) => format!(
            "constant rate: {} {}/s (open loop)",
            real(r),
            super::fmt::rate_counts(doc)
        ),
        None => "throughput mode (closed loop)".to_string(),
    };
    let script = c.script.as_deref().map_or_else(
        || "none".to_string(),
        |s| format!("<code>{}</code>", escape(s)),
    );
    let headers = if c.headers.is_empty() {
        "none".to_string()
    } else {
        let lines: Vec<String> = c
            .headers
            .iter()
            .map(|h| format!("<code>{}</code>", escape(h)))
            .collect();
        lines.join("<br>")
    };
    let interrupted = if doc.interrupted {
        "yes: stopped early"
    } else {
        "no"
    };
    let protocol = match (&doc.protocol, c.max_streams) {
        (Some(p), Some(m)) => format!(
            "{} (up to {} streams per connection)",
            escape(&p.to_string()),
            count(u64::from(m))
        ),
        (Some(p), None) => escape(&p.to_string()),
        (None, _) => MISSING.to_string(),
    };
    let mut rows = vec![
        ("Target", format!("<code>{}</code>", escape(&c.url))),
        ("Mode", mode),
    ];
    if !c.rate_profile.is_empty() {
        let phases: Vec<String> = c
            .rate_profile
            .iter()
            .map(|p| format!("<code>{}</code>", escape(&p.label)))
            .collect();
        rows.push(("Rate profile", phases.join(", ")));
    }
    if let Some(a) = &c.arrival {
        rows.push(("Arrivals", arrivals(*a, c.arrival_seed)));
    }
    if let Some(s) = c.shard {
        rows.push((
            "Shard",
            format!(
                "{} of {}: requests {}, {}+{}, … of the schedule",
                s.index, s.count, s.index, s.index, s.count
            ),
        ));
    }
    if let Some(at) = c.start_at_s {
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(at.max(0.0));
        let late = doc
            .start_offset_s
            .map(|s| format!(", began {} after it", latency_us((s * 1e6).round() as u64)))
            .unwrap_or_default();
        rows.push((
            "Start at",
            format!("{}{late}", escape(&crate::units::format_wall(when))),
        ));
    }
    rows.push(("Protocol", protocol));
    if c.zero_rtt {
        rows.push((
            "0-RTT",
            "sent by connections that resume a session (<code>--0rtt</code>)".to_string(),
        ));
    }
    if let Some(method) = &c.grpc {
        rows.push(("gRPC calls of", format!("<code>{}</code>", escape(method))));
    }
    rows.extend([
        ("Threads", count(c.threads as u64)),
        ("Connections", count(c.connections as u64)),
        ("Duration", seconds(c.duration_s)),
        ("Warm-up", seconds(c.warmup_s)),
        ("Measured window", seconds(doc.window_s)),
        ("Timeout", seconds(c.timeout_s)),
        ("Script", script),
        ("Headers", headers),
        ("Interrupted", interrupted.to_string()),
        ("metron version", escape(&doc.metron_version)),
    ]);
    // Two columns of short rows read better than one long, narrow list.
    let (first, second) = rows.split_at(rows.len().div_ceil(2));
    page.push_str("<section>\n<h2>Configuration</h2>\n<div class=\"pair\">");
    key_values(page, "config", first);
    key_values(page, "config", second);
    page.push_str("</div>\n</section>\n");
}

/// How requests were spread in rate mode: evenly, or Poisson arrivals
/// with the seed that repeats them.
pub(super) fn arrivals(arrival: Arrival, seed: Option<u64>) -> String {
    match (arrival, seed) {
        (Arrival::Constant, _) => "evenly spaced (constant)".to_string(),
        (Arrival::Poisson, Some(seed)) => format!("Poisson (seed {seed})"),
        (Arrival::Poisson, None) => "Poisson".to_string(),
    }
}

/// The value at `p` in a summary's percentile list, if it lists it and
/// the summary has values at all.
pub(super) fn at(s: &Summary, p: f64) -> Option<u64> {
    s.at(p)
}

pub(super) fn latency_or_missing(v: Option<u64>) -> String {
    v.map_or_else(|| MISSING.to_string(), latency_us)
}

/// A mean or deviation in µs, rounded to whole microseconds for display.
fn latency_real(us: f64) -> String {
    if us.is_finite() && us >= 0.0 {
        latency_us(us.round() as u64)
    } else {
        MISSING.to_string()
    }
}

/// The figures most readers look for first.
pub fn headline(page: &mut String, doc: &Document) {
    let c = &doc.counters;
    let errors = c.errors.lost_requests() + c.errors.status;
    let error_note = format!(
        "{} lost · {} status · {} connect",
        count(c.errors.lost_requests()),
        count(c.errors.status),
        count(c.errors.connect)
    );
    let unfinished = doc.with_unfinished();
    let lat = unfinished.unwrap_or(&doc.latency.corrected);
    let basis = if doc.config.load().is_open() {
        "corrected"
    } else {
        "send → response"
    };
    // With requests unfinished, the cards show the conservative figures.
    let kind = match unfinished {
        Some(w) => format!(
            "{basis}, with {} unfinished at lower bounds",
            count(w.count - doc.latency.corrected.count)
        ),
        None => basis.to_string(),
    };
    page.push_str("<section>\n<h2>Results</h2>\n<div class=\"cards\">");
    card(
        page,
        &format!("{}/s", super::fmt::counted(doc).title()),
        &real(doc.requests_per_sec),
        "completed per second",
        false,
    );
    card(
        page,
        "Completed",
        &count(c.completed),
        &format!("of {} due", count(c.due)),
        false,
    );
    card(
        page,
        "Transfer",
        &format!("{}/s", bytes(doc.bytes_per_sec)),
        &format!("{} in all", bytes(c.bytes as f64)),
        false,
    );
    card(
        page,
        "Errors",
        &count(errors),
        &error_note,
        errors + c.errors.connect > 0,
    );
    for (name, p) in [("p50", 50.0), ("p99", 99.0), ("p99.9", 99.9)] {
        card(
            page,
            &format!("Latency {name}"),
            &latency_or_missing(at(lat, p)),
            &kind,
            unfinished.is_some(),
        );
    }
    let max = lat.max;
    card(
        page,
        "Latency max",
        &latency_or_missing(max),
        &kind,
        unfinished.is_some(),
    );
    page.push_str("</div>\n</section>\n");
}

/// Corrected and uncorrected latency at the listed percentiles, with mean
/// and deviation.
pub fn percentiles(page: &mut String, doc: &Document) {
    let (c, u) = (&doc.latency.corrected, &doc.latency.uncorrected);
    let unfinished = doc.with_unfinished();
    if c.count == 0 && unfinished.is_none() {
        page.push_str("<p>No request completed, so there are no latencies to list.</p>\n");
        return;
    }
    let extra = |p: f64| unfinished.map(|w| latency_or_missing(at(w, p)));
    let mut rows: Vec<Vec<String>> = json::PERCENTILES
        .iter()
        .map(|&p| {
            let mut row = vec![
                percentile(p),
                latency_or_missing(at(c, p)),
                latency_or_missing(at(u, p)),
            ];
            row.extend(extra(p));
            row
        })
        .collect();
    let real_or_missing = |v: Option<f64>| v.map_or(MISSING.to_string(), latency_real);
    let figures: [(&str, Figure); 2] = [("mean", |s| s.mean), ("stdev", |s| s.stdev)];
    for (name, pick) in figures {
        let mut row = vec![
            name.to_string(),
            real_or_missing(pick(c)),
            real_or_missing(pick(u)),
        ];
        row.extend(unfinished.map(|w| real_or_missing(pick(w))));
        rows.push(row);
    }
    let (cl, ul) = curve_labels(doc);
    let mut head = vec!["percentile", cl, ul];
    if unfinished.is_some() {
        head.push(WITH_UNFINISHED);
    }
    let head: Vec<String> = head.into_iter().map(escape).collect();
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    grid(page, "numbers", &head, &rows);
}

/// Time to first byte, connect and TLS handshake: a row for each phase the
/// run measured (a document older than them has none, and no table).
pub fn timings(page: &mut String, doc: &Document) {
    let l = &doc.latency;
    let ttfb = l.ttfb.as_ref();
    let phases = [
        ("time to first byte", ttfb.map(|t| &t.corrected)),
        (
            "time to first byte, uncorrected",
            ttfb.map(|t| &t.uncorrected),
        ),
        (
            &format!("first {}", doc.event_noun()),
            doc.events.as_ref().map(|e| &e.first),
        ),
        (
            &format!("gap between {}s", doc.event_noun()),
            doc.events.as_ref().map(|e| &e.gap),
        ),
        ("TCP connect", l.connect.as_ref()),
        ("TLS handshake", l.tls_handshake.as_ref()),
    ];
    let rows: Vec<Vec<String>> = phases
        .into_iter()
        .filter_map(|(name, s)| s.filter(|s| s.count > 0).map(|s| (name, s)))
        .map(|(name, s)| phase_row(name, s))
        .collect();
    if rows.is_empty() {
        return;
    }
    page.push_str("<h3>Phases</h3>\n");
    if let Some(e) = &doc.events {
        let per = e
            .per_response
            .map_or_else(|| MISSING.to_string(), |n| format!("{n:.1}"));
        // Server-sent events, or a streamed call's messages.
        let (what, whole) = match e.kind {
            EventKind::Messages => ("Messages of the streamed calls", "call"),
            EventKind::Sse => ("Server-sent events", "response"),
            EventKind::WebSocket => ("Messages the WebSocket server pushed", "subscription"),
        };
        let open = if e.open > 0 {
            format!(
                "; {} of the figures are lower bounds, of {whole}s still streaming at the end",
                e.open
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            page,
            "<p>{what}: {} in all, {per} per completed {whole}{open}.</p>",
            e.count
        );
    }
    grid(
        page,
        "numbers",
        &["phase", "p50", "p90", "p99", "p99.9", "max"],
        &rows,
    );
}

/// A row of a phase's table: its name, p50, p90, p99, p99.9 and max.
pub(super) fn phase_row(name: &str, s: &Summary) -> Vec<String> {
    let mut row = vec![name.to_string()];
    row.extend([50.0, 90.0, 99.0, 99.9].map(|p| latency_or_missing(at(s, p))));
    row.push(latency_or_missing(s.max));
    row
}

/// Picks a figure (mean, deviation) out of a summary.
type Figure = fn(&Summary) -> Option<f64>;

/// `n` as a share of `of`, or a dash when there is nothing to share.
fn share(n: u64, of: u64) -> String {
    if of == 0 {
        MISSING.to_string()
    } else {
        format!("{:.2}%", n as f64 * 100.0 / of as f64)
    }
}

/// Where every due request ended up, and the other counters.
pub fn accounting(page: &mut String, doc: &Document) {
    let c = &doc.counters;
    let e = &c.errors;
    let of_due = |label: &str, n: u64| vec![label.to_string(), count(n), share(n, c.due)];
    let mut rows = vec![
        of_due("Due (intended send time in the window)", c.due),
        of_due("Completed", c.completed),
        of_due("Lost: read error", e.read),
        of_due("Lost: write error", e.write),
        of_due("Lost: timeout", e.timeout),
        of_due("In flight at the end", c.in_flight),
        of_due("Never sent", c.never_sent),
        of_due(
            if c.grpc.total() > 0 {
                "Error status (HTTP ≥ 400 or gRPC not OK, counted as completed)"
            } else {
                "Error status (≥ 400, counted as completed)"
            },
            e.status,
        ),
        of_due("Queued (found no free connection or stream)", c.queued),
        vec![
            "Connect errors (attempts)".into(),
            count(e.connect),
            String::new(),
        ],
        vec![
            "Reconnects".into(),
            count(c.reconnects),
            escape(&c.reopens.to_string()),
        ],
    ];
    if e.read > 0 {
        rows.push(vec![
            "Read errors by cause".into(),
            count(e.read),
            escape(&c.read_causes.to_string()),
        ]);
    }
    // A WebSocket message has no status of its own: each would count
    // the upgrade's 101 again, so none is listed, as in the text report.
    let counted = super::fmt::counted(doc);
    if !counted.websocket() {
        for (code, n) in c.status_codes.named() {
            rows.push(of_due(&format!("Status {code}"), n));
        }
    }
    if c.ws_refused.total() > 0 {
        rows.push(vec![
            "Upgrades refused by the server".into(),
            count(c.ws_refused.total()),
            escape(&c.ws_refused.to_string()),
        ]);
    }
    if c.ws_closes.total() > 0 {
        rows.push(vec![
            "Closes by the server".into(),
            count(c.ws_closes.total()),
            escape(&c.ws_closes.to_string()),
        ]);
    }
    if c.ws_pings > 0 {
        rows.push(vec!["Pings sent".into(), count(c.ws_pings), String::new()]);
    }
    if c.ws_unasked > 0 {
        rows.push(vec![
            "Messages unasked".into(),
            count(c.ws_unasked),
            "sent by the server with no message of ours waiting: in no figure".into(),
        ]);
    }
    let opened = c.ws_deflate_agreed + c.ws_deflate_declined;
    if opened > 0 {
        rows.push(vec![
            "Compressed (permessage-deflate)".into(),
            count(c.ws_deflate_agreed),
            format!("of {} connections opened", count(opened)),
        ]);
    }
    for (name, n) in c.grpc.named() {
        rows.push(of_due(&format!("gRPC status {name}"), n));
    }
    if c.failed_checks > 0 {
        rows.push(of_due(
            "Failed --grpc-check (OK, counted as errors)",
            c.failed_checks,
        ));
    }
    let h2 = &c.http2;
    if h2.any() {
        let by_code = |label: &str, codes: &ByCode| {
            let detail = if codes.total() > 0 {
                escape(&codes.to_string())
            } else {
                String::new()
            };
            vec![label.to_string(), count(codes.total()), detail]
        };
        // Named for the protocol that had the streams (HTTP/2 or HTTP/3).
        let name = doc
            .protocol
            .as_ref()
            .and_then(Spoken::streams_of)
            .unwrap_or("HTTP/2");
        rows.push(by_code(
            &format!("{name} streams reset (also read errors)"),
            &h2.resets,
        ));
        rows.push(by_code(
            &format!("{name} connections retired by GOAWAY"),
            &h2.goaway,
        ));
        rows.push(vec![
            format!("{name} connection errors"),
            count(h2.connection_errors),
            String::new(),
        ]);
        rows.push(of_due(
            &format!("{name} requests sent again (never processed)"),
            h2.retried,
        ));
    }
    let q = &c.quic;
    if q.any() {
        let share = q.packets_lost as f64 * 100.0 / q.packets_sent as f64;
        rows.push(vec![
            "QUIC packets sent".into(),
            count(q.packets_sent),
            String::new(),
        ]);
        rows.push(vec![
            "QUIC packets lost (sent again)".into(),
            count(q.packets_lost),
            format!("{share:.2}% of those sent"),
        ]);
        if q.zero_rtt_offered > 0 {
            let took = q.zero_rtt as f64 * 100.0 / q.zero_rtt_offered as f64;
            rows.push(vec![
                "QUIC connections with 0-RTT accepted".into(),
                count(q.zero_rtt),
                format!("{took:.1}% of {} that sent it", count(q.zero_rtt_offered)),
            ]);
        }
    }
    if c.saturated > 0 {
        rows.push(vec![
            "Latencies above the histogram's range".into(),
            count(c.saturated),
            String::new(),
        ]);
    }
    page.push_str("<section>\n<h2>Accounting and errors</h2>\n");
    if !c.balanced() {
        page.push_str("<p class=\"warn\">The counts do not add up: due ≠ completed + lost + in flight + never sent.</p>\n");
    }
    page.push_str("<div class=\"pair\"><div>");
    grid(
        page,
        "numbers accounting",
        &[counted.many(), "count", "share of due"],
        &rows,
    );
    page.push_str("</div><div>");
    send_lag(page, doc);
    page.push_str("</div></div>\n</section>\n");
}

/// Send lag (intended send time → first byte written): how far the sender
/// fell behind its schedule. Only rate mode has a schedule.
fn send_lag(page: &mut String, doc: &Document) {
    page.push_str("<h3>Send lag</h3>\n");
    if !doc.config.load().is_open() {
        page.push_str("<p>Not applicable in throughput mode: requests follow no schedule.</p>\n");
        return;
    }
    let lag = &doc.latency.send_lag;
    if lag.count == 0 {
        page.push_str("<p>No request was sent in the measured window.</p>\n");
        return;
    }
    let rows: Vec<Vec<String>> = lag
        .percentiles
        .iter()
        .map(|&(p, v)| vec![percentile(p), latency_or_missing(v)])
        .collect();
    page.push_str(
        "<p>Time from each request's intended send time to its first byte written.</p>\n",
    );
    grid(page, "numbers", &["percentile", "send lag"], &rows);
}

/// Completions and CPU time per worker thread.
pub fn threads(page: &mut String, doc: &Document) {
    page.push_str("<section>\n<h2>Threads</h2>\n");
    if doc.threads.is_empty() {
        page.push_str("<p>No per-thread figures in this document.</p>\n</section>\n");
        return;
    }
    let total: u64 = doc.threads.iter().map(|t| t.completed).sum();
    let mut rows: Vec<Vec<String>> = doc
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            vec![
                format!("thread {}", i + 1),
                count(t.completed),
                share(t.completed, total),
                cpu(t.cpu_s),
            ]
        })
        .collect();
    rows.push(vec![
        "all".into(),
        count(total),
        share(total, total),
        cpu(doc.cpu_s),
    ]);
    grid(
        page,
        "numbers threads",
        &["thread", "completed", "share", "CPU time"],
        &rows,
    );
    page.push_str("</section>\n");
}

/// A merged document's instances, a row each: what each was asked for
/// and achieved, its send lag, errors, and how late it started.
pub fn instances(page: &mut String, doc: &Document) {
    if doc.instances.is_empty() {
        return;
    }
    page.push_str("<section>\n<h2>Instances</h2>\n");
    let _ = writeln!(
        page,
        "<p>This report adds up the runs of {} instances exactly (counters and histograms, \
         not averages); each one's own figures are below.</p>",
        doc.instances.len()
    );
    let rows: Vec<Vec<String>> = doc
        .instances
        .iter()
        .map(|i| {
            vec![
                escape(&i.name),
                i.shard.map_or(MISSING.to_string(), |s| {
                    format!("{} of {}", s.index, s.count)
                }),
                i.rate.map_or(MISSING.to_string(), real),
                real(i.requests_per_sec),
                latency_or_missing(i.send_lag_p99_us),
                count(i.errors),
                count(i.never_sent),
                i.start_offset_s.map_or(MISSING.to_string(), |s| {
                    latency_us((s * 1e6).round() as u64)
                }),
            ]
        })
        .collect();
    grid(
        page,
        "numbers instances",
        &[
            "instance",
            "shard",
            "rate asked",
            "achieved",
            "send lag p99",
            "errors",
            "never sent",
            "start offset",
        ],
        &rows,
    );
    page.push_str("</section>\n");
}

/// Per endpoint of a requests file: counts and corrected percentiles.
pub fn endpoints(page: &mut String, doc: &Document) {
    if doc.endpoints.is_empty() {
        return;
    }
    page.push_str("<section>\n<h2>Endpoints</h2>\n");
    page.push_str("<p>Corrected latency of each endpoint of the requests file.</p>\n");
    let rows: Vec<Vec<String>> = doc.endpoints.iter().map(endpoint_row).collect();
    grid(
        page,
        "numbers endpoints",
        &["endpoint", "completed", "errors", "p50", "p99", "p99.9"],
        &rows,
    );
    page.push_str("</section>\n");
}

/// An endpoint's (or a flow step's) name, counts and corrected p50, p99
/// and p99.9.
pub(super) fn endpoint_row(e: &json::Endpoint) -> Vec<String> {
    let mut row = vec![
        format!("<code>{}</code>", escape(&e.name)),
        count(e.completed),
        count(e.errors),
    ];
    for p in [50.0, 99.0, 99.9] {
        row.push(latency_or_missing(at(&e.latency, p)));
    }
    row
}

/// Per phase of a rate profile: the rate intended and achieved, errors,
/// and the latency of the requests intended in it.
pub fn phases(page: &mut String, doc: &Document) {
    if doc.phases.is_empty() {
        // A longer profile is not broken out: say so, rather than leave
        // the table out without a word.
        let n = doc.config.rate_profile.len();
        if n > MAX_PHASES {
            let _ = writeln!(
                page,
                "<p>No table per phase: the profile has {n} phases, more than the \
                 {MAX_PHASES} broken out (each keeps two histograms per thread). The charts \
                 follow the run interval by interval.</p>"
            );
        }
        return;
    }
    page.push_str(
        "<p>Per phase, the requests whose intended time falls in it, wherever their \
         response came. Start and length are the phase's share of the measured window \
         (from its start; a phase within the warm-up has none), the rates are per second \
         of it, and the latency is corrected, with unfinished requests at their lower \
         bounds.</p>\n",
    );
    let rows: Vec<Vec<String>> = doc
        .phases
        .iter()
        .map(|p| {
            let rate = |n: u64| {
                if p.length_s.is_finite() && p.length_s > 0.0 {
                    real(n as f64 / p.length_s)
                } else {
                    MISSING.to_string()
                }
            };
            let mut row = vec![
                format!("<code>{}</code>", escape(&p.label)),
                seconds(p.start_s),
                seconds(p.length_s),
                rate(p.due),
                rate(p.completed),
                count(p.errors),
            ];
            for q in [50.0, 99.0, 99.9] {
                row.push(latency_or_missing(at(&p.latency, q)));
            }
            row
        })
        .collect();
    grid(
        page,
        "numbers phases",
        &[
            "phase",
            "start",
            "length",
            "intended/s",
            "achieved/s",
            "errors",
            "p50",
            "p99",
            "p99.9",
        ],
        &rows,
    );
}

fn cpu(s: f64) -> String {
    if s.is_finite() {
        format!("{s:.3} s")
    } else {
        MISSING.to_string()
    }
}
