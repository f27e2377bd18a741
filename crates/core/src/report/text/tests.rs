use super::*;
use crate::http::Protocol;
use crate::stats::{AtEnd, Errors, ReadCauses, ThreadStats};

const GOLDEN: &str = include_str!("../testdata/golden.txt");

fn render(r: &TextReport) -> String {
    let mut out = Vec::new();
    write_text(&mut out, r).unwrap();
    String::from_utf8(out).unwrap()
}

fn report(stats: &RunStats, rate: Option<f64>) -> TextReport<'_> {
    TextReport {
        url: "http://127.0.0.1:8080/",
        duration: Duration::from_secs(1),
        threads: 2,
        connections: 10,
        load: Load::from_rate(rate),
        latency: true,
        u_latency: true,
        protocol: None,
        profile_phases: 0,
        stats,
        lag_allowance: None,
        ws: None,
    }
}

fn record(h: &mut Histogram<u64>, values: &[(u64, u64)]) {
    for &(v, n) in values {
        h.record_n(v, n).unwrap();
    }
}

/// A thread completing `per_sample` requests in each 100 ms sample of
/// a one-second window.
fn thread_completing_per_sample(per_sample: u64) -> ThreadStats {
    let mut t = ThreadStats::default();
    for sample in 0..10 {
        for i in 0..per_sample {
            t.count_completion((sample * 100 + i) * 1_000_000);
        }
    }
    t
}

/// Figures chosen to be checked by hand, not for realism: latencies
/// of 500 µs ×4, 1 ms ×3, 2.5 ms ×2 and 12.5 ms ×1 (uncorrected:
/// 300 µs ×5, 700 µs ×5), one thread at 50 req/s and one at 100.
fn golden_stats() -> RunStats {
    let mut a = thread_completing_per_sample(5);
    let mut b = thread_completing_per_sample(10);
    record(&mut a.latency, &[(500, 4), (1000, 3)]);
    record(&mut b.latency, &[(2500, 2), (12500, 1)]);
    record(&mut a.uncorrected, &[(300, 5)]);
    record(&mut b.uncorrected, &[(700, 5)]);
    record(&mut a.send_lag, &[(50, 8)]);
    record(&mut b.send_lag, &[(120, 2)]);
    a.counters = Counters {
        due: 160,
        completed: 150,
        bytes: 20_771_635,
        errors: Errors {
            connect: 1,
            read: 2,
            write: 0,
            status: 4,
            timeout: 3,
        },
        in_flight: 4,
        never_sent: 1,
        at_end: AtEnd {
            busy: 4,
            ..AtEnd::default()
        },
        read_causes: ReadCauses {
            reset: 2,
            ..ReadCauses::default()
        },
        ..Counters::default()
    };
    for _ in 0..146 {
        a.counters.status_codes.count(200);
    }
    for _ in 0..4 {
        a.counters.status_codes.count(503);
    }
    // The 3 timeouts at 2 s, the 4 in flight and the 1 never sent at
    // 150 ms and 20 ms.
    record(
        &mut a.unfinished,
        &[(2_000_000, 3), (150_000, 4), (20_000, 1)],
    );
    RunStats::merge(vec![a, b], Duration::from_secs(1))
}

#[test]
fn golden_report() {
    let stats = golden_stats();
    assert!(stats.counters.balanced());
    assert_eq!(render(&report(&stats, Some(200.0))), GOLDEN);
}

#[test]
fn golden_lines_follow_the_rules() {
    let lines: Vec<&str> = GOLDEN.lines().collect();
    // Mean 2250.2 µs, stdev 3494.65 µs, max 12 496 µs, 9 of 10 within.
    assert!(lines.contains(&"    Latency     2.25ms    3.49ms  12.50ms   90.00%"));
    // Samples 50 ×10 and 100 ×10: plain numbers keep a 2-space margin.
    assert!(lines.contains(&"    Req/Sec    75.00     25.00   100.00    100.00%"));
    assert!(lines.contains(&" 90.000%    2.50ms"));
    assert!(lines.contains(&"      12.503     1.000000           10          inf"));
    assert!(lines.contains(&"  150 requests in 1.00s, 19.81MB read"));
    assert!(lines.contains(&"Transfer/sec:     19.81MB"));
}

#[test]
fn an_empty_run_prints_no_nan() {
    let stats = RunStats::merge(vec![ThreadStats::default()], Duration::ZERO);
    let text = render(&report(&stats, None));
    assert!(!text.to_lowercase().contains("nan"), "{text}");
    assert!(!text.contains("inf"), "{text}");
    // Nothing was measured: dashes, not a latency of 0.00us.
    assert!(
        text.contains("    Latency        -         -        -         - \n"),
        "{text}"
    );
    assert!(text.contains("  0 requests in 0.00us, 0.00B read\n"));
    assert!(text.contains("Requests/sec:      0.00\n"));
}

#[test]
fn error_lines_appear_only_when_non_zero() {
    let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
    let text = render(&report(&stats, None));
    assert!(!text.contains("Socket errors"));
    assert!(!text.contains("Non-2xx"));
    assert!(!text.contains("Accounting"));
    stats.counters.errors.timeout = 2;
    stats.counters.due = 2;
    let text = render(&report(&stats, None));
    assert!(text.contains("  Socket errors: connect 0, read 0, write 0, timeout 2\n"));
    assert!(!text.contains("Non-2xx"));
    stats.counters.errors = Errors {
        status: 3,
        ..Errors::default()
    };
    let text = render(&report(&stats, None));
    assert!(!text.contains("Socket errors"));
    assert!(text.contains("  Non-2xx or 3xx responses: 3\n"));
}

#[test]
fn responses_by_status_and_read_errors_by_cause() {
    let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
    let text = render(&report(&stats, None));
    assert!(!text.contains("Status codes") && !text.contains("Read errors"));
    let c = &mut stats.counters;
    for code in [200, 503, 200] {
        c.status_codes.count(code);
    }
    c.errors.read = 3;
    c.read_causes.reset = 2;
    c.read_causes.head_too_large = 1;
    let text = render(&report(&stats, None));
    assert!(text.contains("  Status codes: 200 2, 503 1\n"), "{text}");
    assert!(
        text.contains("  Read errors: reset 2, head too large 1\n"),
        "{text}"
    );
}

#[test]
fn http2_runs_name_the_protocol_and_break_out_its_events() {
    let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
    let text = render(&report(&stats, None));
    assert!(!text.contains("Protocol:"));
    assert!(!text.contains("HTTP/2:"));
    stats.counters.http2.resets.count(7);
    stats.counters.http2.resets.count(7);
    stats.counters.http2.resets.count(8);
    stats.counters.http2.goaway.count(0);
    stats.counters.http2.retried = 4;
    let mut r = report(&stats, None);
    let spoken = Spoken::of([Protocol::Http2]);
    r.protocol = Some(&spoken);
    let text = render(&r);
    assert!(text.contains("  Protocol: HTTP/2\n"), "{text}");
    assert!(
        text.contains(
            "  HTTP/2: 3 streams reset (REFUSED_STREAM 2, CANCEL 1), 1 GOAWAY (NO_ERROR 1), \
             0 connection errors, 4 requests sent again (never processed)\n"
        ),
        "{text}"
    );
}

#[test]
fn the_quic_line_counts_0rtt_of_the_connections_that_sent_it() {
    let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
    assert!(!render(&report(&stats, None)).contains("QUIC:"));
    stats.counters.quic.packets_sent = 400;
    stats.counters.quic.packets_lost = 4;
    let line = "  QUIC: 400 packets sent, 4 lost and sent again (1.00%)";
    let text = render(&report(&stats, None));
    assert!(text.contains(&format!("{line}\n")), "{text}");
    // With --0rtt: of those that sent early, those the server took.
    stats.counters.quic.zero_rtt_offered = 7;
    stats.counters.quic.zero_rtt = 5;
    let text = render(&report(&stats, None));
    let want = format!("{line}, 5 of 7 connections with 0-RTT accepted\n");
    assert!(text.contains(&want), "{text}");
    stats.counters.quic.zero_rtt = 0;
    let text = render(&report(&stats, None));
    let want = format!("{line}, 0 of 7 connections with 0-RTT accepted\n");
    assert!(text.contains(&want), "{text}");
}

/// Regression: replies that failed `--grpc-check` were reported as
/// `Failed calls: 400 (gRPC status not OK)` above `gRPC status: OK
/// 400`. The line names each cause, with its count when both are there.
#[test]
fn failed_calls_name_their_cause() {
    let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
    let c = &mut stats.counters;
    c.completed = 400;
    for _ in 0..400 {
        c.grpc.count(metron_grpc::status::OK);
    }
    c.errors.status = 400;
    c.failed_checks = 400;
    let text = render(&report(&stats, None));
    assert!(
        text.contains("  Failed calls: 400 (OK replies that failed --grpc-check)\n"),
        "{text}"
    );
    let c = &mut stats.counters;
    for _ in 0..10 {
        c.grpc.count(14);
    }
    c.errors.status = 410;
    let text = render(&report(&stats, None));
    assert!(
        text.contains(
            "  Failed calls: 410 (10 with a gRPC status not OK, 400 OK replies that failed \
             --grpc-check)\n"
        ),
        "{text}"
    );
    let c = &mut stats.counters;
    c.failed_checks = 0;
    c.errors.status = 10;
    let text = render(&report(&stats, None));
    assert!(
        text.contains("  Failed calls: 10 (gRPC status not OK)\n"),
        "{text}"
    );
}

/// `--sse` against responses that are not event streams: they are
/// named in a warning, in both modes; a streamed call without a
/// message is not warned of.
#[test]
fn responses_without_events_are_named() {
    let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
    stats.events = Some(EventStats {
        responses: 400,
        without_events: 396,
        ..EventStats::default()
    });
    let want = "  Warning: 396 of 400 completed responses carried no event: they were not event \
                streams (text/event-stream), or ended before their first event, and the \
                first-event figures leave them out; check that the URL serves server-sent \
                events, or drop --sse\n";
    for rate in [None, Some(100.0)] {
        let text = render(&report(&stats, rate));
        assert!(text.contains(want), "{rate:?}: {text}");
    }
    // The lower bounds of the requests still waiting are no first
    // events: dashes, until some event came.
    let e = stats.events.as_mut().unwrap();
    e.open = 4;
    record(&mut e.first, &[(20_000, 4)]);
    let text = render(&report(&stats, None));
    assert!(
        text.contains("  Events: 0.0 per response; first event p50 -, p99 -; gap p50 -"),
        "{text}"
    );
    stats.events.as_mut().unwrap().count = 1;
    let text = render(&report(&stats, None));
    assert!(text.contains("first event p50 20.00ms"), "{text}");
    stats.events.as_mut().unwrap().kind = EventKind::Messages;
    assert!(!render(&report(&stats, None)).contains("carried no"));
    stats.events = Some(EventStats {
        responses: 400,
        ..EventStats::default()
    });
    assert!(!render(&report(&stats, None)).contains("Warning"));
}

#[test]
fn a_connect_error_alone_shows_socket_errors_but_no_accounting() {
    let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
    stats.counters.errors.connect = 1;
    let text = render(&report(&stats, None));
    assert!(text.contains("  Socket errors: connect 1, read 0, write 0, timeout 0\n"));
    assert!(!text.contains("Accounting"));
}

#[test]
fn books_that_do_not_balance_are_shown_and_called_wrong() {
    let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
    stats.counters.due = 3000;
    stats.counters.completed = 2000;
    let text = render(&report(&stats, None));
    assert!(
        text.contains(
            "  Accounting: 3000 due, but 2000 completed + 0 lost (read 0, write 0, timeout 0) \
             + 0 in flight + 0 never sent make 2000: metron lost track of 1000 requests"
        ),
        "{text}"
    );
}

#[test]
fn throughput_mode_says_latency_is_closed_loop() {
    let stats = golden_stats();
    let text = render(&report(&stats, None));
    assert!(text.contains("(closed loop)"));
    assert!(!text.contains("Send lag"));
    // No schedule to keep, so no never-sent or send-lag warning; lost
    // requests are lost in either mode.
    let found = warnings(&report(&stats, None));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("5 of 160 due requests were lost: reset 2"));
}

#[test]
fn latency_blocks_follow_the_flags() {
    let stats = golden_stats();
    let mut r = report(&stats, None);
    r.latency = false;
    r.u_latency = false;
    let text = render(&r);
    assert!(!text.contains("Latency Distribution"));
    assert!(!text.contains(RULE));
    // The unfinished requests are summed up in one line instead.
    assert!(text.contains(
        "  Latency including 8 unfinished requests (lower bounds): p50 2.50ms, p99 2.00s, \
         p99.9 2.00s, max 2.00s\n"
    ));
    r.latency = true;
    let text = render(&r);
    // The corrected block, then the same with the unfinished requests.
    assert_eq!(text.matches("Latency Distribution").count(), 2);
    assert!(!text.contains("Latency including"));
    assert!(!text.contains("Uncorrected"));
}

fn lagging(p99_us: u64, never_sent: u64) -> RunStats {
    let mut t = ThreadStats::default();
    // The 99th of 100 values is the first of the two slow ones.
    record(&mut t.send_lag, &[(10, 98), (p99_us, 2)]);
    t.counters.due = 100;
    t.counters.completed = 100 - never_sent;
    t.counters.never_sent = never_sent;
    RunStats::merge(vec![t], Duration::from_secs(1))
}

#[test]
fn warnings_stay_silent_for_a_run_on_schedule() {
    // 2 threads at 1000 req/s: one send per 2 ms per thread.
    let stats = lagging(1999, 0);
    assert!(warnings(&report(&stats, Some(1000.0))).is_empty());
}

#[test]
fn send_lag_beyond_an_interval_warns() {
    let stats = lagging(2100, 0);
    let found = warnings(&report(&stats, Some(1000.0)));
    assert_eq!(found.len(), 1);
    assert!(
        found[0].starts_with("send lag p99 is 2.10ms, above the 2.00ms allowed"),
        "{}",
        found[0]
    );
    assert!(
        found[0].contains("generator itself sent late"),
        "{}",
        found[0]
    );
    assert!(found[0].contains("-t"));
}

#[test]
fn the_lag_allowance_sets_what_the_warning_allows() {
    let stats = lagging(2100, 0);
    let mut r = report(&stats, Some(1000.0));
    r.lag_allowance = Some(Duration::from_millis(3));
    assert!(warnings(&r).is_empty());
    r.lag_allowance = Some(Duration::from_millis(1));
    let found = warnings(&r);
    assert!(
        found[0].contains("above the 1.00ms allowed"),
        "{}",
        found[0]
    );
}

#[test]
fn send_lag_from_busy_connections_blames_the_queue() {
    let mut stats = lagging(5000, 0);
    stats.counters.queued = 40;
    let found = warnings(&report(&stats, Some(1000.0)));
    assert_eq!(found.len(), 1);
    assert!(
        found[0].contains("40 of the 100 requests sent (40.0%) found all"),
        "{}",
        found[0]
    );
    assert!(found[0].contains("raise -c"), "{}", found[0]);
}

/// Regression: a pool that kept the pace, and found every connection
/// busy only while responses slowed, was told that the rate needs one
/// connection more than it has ("about 101 connections are busy at
/// once" at 96 µs per response on 100 connections at 90k/s).
#[test]
fn busy_connections_in_bursts_are_not_called_too_few() {
    let mut stats = lagging(50_000, 0);
    stats.counters.queued = 5;
    record(&mut stats.uncorrected, &[(20_000, 100)]);
    let found = warnings(&report(&stats, Some(100.0)));
    assert_eq!(found.len(), 1, "{found:?}");
    let w = &found[0];
    assert!(w.contains("The pool kept the pace on the whole"), "{w}");
    assert!(
        w.contains("about 2 requests were in flight on average, on 10 connections"),
        "{w}"
    );
    assert!(!w.contains("raise -c to"), "{w}");
}

/// Regression: against a server gone silent, most due requests are
/// never sent, and the few that were sent queued. Measured against
/// every due request the queue looked negligible, and the warning
/// blamed the generator's CPU.
#[test]
fn a_silent_server_is_blamed_on_the_queue_not_the_generator() {
    let mut t = ThreadStats::default();
    record(&mut t.send_lag, &[(10, 1), (2_000_000, 3)]);
    t.counters.due = 1500;
    t.counters.in_flight = 4;
    t.counters.never_sent = 1496;
    t.counters.queued = 3;
    let stats = RunStats::merge(vec![t], Duration::from_secs(3));
    let found = warnings(&report(&stats, Some(500.0)));
    let lag = found.iter().find(|w| w.starts_with("send lag")).unwrap();
    assert!(lag.contains("3 of the 4 requests sent (75.0%)"), "{lag}");
    assert!(!lag.contains("generator itself"), "{lag}");
}

#[test]
fn send_lag_below_a_millisecond_never_warns() {
    // At 100k req/s the interval is 20 µs, but 1 ms is the floor.
    assert!(warnings(&report(&lagging(999, 0), Some(100_000.0))).is_empty());
    assert_eq!(
        warnings(&report(&lagging(1100, 0), Some(100_000.0))).len(),
        1
    );
}

#[test]
fn requests_never_sent_warn() {
    let stats = lagging(10, 3);
    let found = warnings(&report(&stats, Some(1000.0)));
    assert_eq!(found.len(), 1);
    assert!(
        found[0].starts_with("3 of 100 due requests were never sent"),
        "{}",
        found[0]
    );
    let text = render(&report(&stats, Some(1000.0)));
    assert!(text.contains("\n  Warning: 3 of 100 due requests were never sent"));
}

/// A run against a server that turns connections beyond its limit
/// away: 37 requests lost on new connections, 1 reset on one that had
/// answered, many reopens.
fn turned_away() -> RunStats {
    let mut stats = lagging(10, 0);
    let c = &mut stats.counters;
    c.completed = 62;
    c.errors.read = 38;
    c.read_causes.closed_unanswered = 37;
    c.read_causes.reset = 1;
    c.reconnects = 900;
    stats
}

#[test]
fn requests_lost_warn_with_each_cause_and_its_fix() {
    let stats = turned_away();
    assert!(stats.counters.balanced());
    let found = warnings(&report(&stats, Some(1000.0)));
    assert_eq!(found.len(), 1, "{found:?}");
    let w = &found[0];
    assert!(
        w.starts_with("38 of 100 due requests were lost: closed before answering 37: "),
        "{w}"
    );
    assert!(w.contains("(lower -c, or raise the limit)"), "{w}");
    assert!(w.contains("; reset 1: the server reset the request's stream or its connection"));
    assert!(w.ends_with("; connections were reopened 900 times"), "{w}");
    // Causes that did not occur are not named.
    assert!(!w.contains("closed early") && !w.contains("timeout"), "{w}");
    let text = render(&report(&stats, Some(1000.0)));
    assert!(text.contains("\n  Read errors: closed before answering 37, reset 1\n"));
    assert!(text.contains("\n  Warning: 38 of 100 due requests were lost: "));
}

#[test]
fn a_single_lost_request_warns_in_either_mode() {
    let mut stats = lagging(10, 0);
    stats.counters.due = 1_000_000;
    stats.counters.completed = 999_999;
    stats.counters.errors.timeout = 1;
    for rate in [Some(1000.0), None] {
        let found = warnings(&report(&stats, rate));
        assert_eq!(
            found,
            [
                "1 of 1000000 due requests were lost: timeout 1: no response within \
              --timeout: a stalled server, or raise --timeout"
            ]
        );
    }
}

/// A document from before read errors were broken out by cause.
#[test]
fn read_errors_without_causes_are_still_counted() {
    let mut stats = lagging(10, 0);
    stats.counters.completed = 95;
    stats.counters.errors.read = 3;
    stats.counters.errors.write = 2;
    let found = warnings(&report(&stats, None));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("5 of 100 due requests were lost: read 3; write 2: "),
        "{}",
        found[0]
    );
}

#[test]
fn send_lag_from_reopening_connections_blames_the_server_s_closes() {
    let mut stats = turned_away();
    record(&mut stats.send_lag, &[(5000, 10)]);
    let found = warnings(&report(&stats, Some(1000.0)));
    let lag = found.iter().find(|w| w.starts_with("send lag")).unwrap();
    assert!(
        lag.contains(
            "connections were free, but the generator's time went on reopening connections \
             the server closed (900 times for 100 requests sent)"
        ),
        "{lag}"
    );
    assert!(lag.contains("see the lost requests' causes"), "{lag}");
    assert!(!lag.contains("add threads with -t"), "{lag}");
    // Over WebSocket the same are messages.
    let spoken = Spoken::of([Protocol::WebSocket]);
    let mut r = report(&stats, Some(1000.0));
    r.protocol = Some(&spoken);
    let found = warnings(&r);
    let lag = found.iter().find(|w| w.starts_with("send lag")).unwrap();
    assert!(lag.contains("(900 times for 100 messages sent)"), "{lag}");
    assert!(lag.contains("see the lost messages' causes"), "{lag}");
    // As many reopens as requests: the requests still took the time.
    stats.counters.reconnects = 100;
    let found = warnings(&report(&stats, Some(1000.0)));
    let lag = found.iter().find(|w| w.starts_with("send lag")).unwrap();
    assert!(lag.contains("add threads with -t"), "{lag}");
}

/// A connection down at the end after a reset of its own is not said
/// to have been reset as it opened (a failed connect's hint).
#[test]
fn connections_down_at_the_end_get_the_hint_of_their_own_cause() {
    let mut a = AtEnd::default();
    a.down_read.reset = 1;
    a.down_read.closed_unanswered = 2;
    a.down_connect.reset = 3;
    assert_eq!(
        down_causes(&a, Counted::Requests),
        "connect reset 3: the server reset connections as they opened; \
         closed before answering 2: the server closed new connections unanswered, as one \
         does past its connection limit (lower -c, or raise the limit) or when it fails \
         every request; reset 1: the server reset the request's stream or its connection \
         (its error log may say why)"
    );
}

/// A malformed answer is named by the protocol that was broken: HTTP's,
/// or WebSocket's frames.
#[test]
fn malformed_answers_name_the_protocol_broken() {
    let over_ws = hint("malformed", Counted::Messages).unwrap();
    assert!(over_ws.contains("not valid WebSocket"), "{over_ws}");
    assert!(
        !over_ws.contains("HTTP,") && !over_ws.contains("valid HTTP"),
        "{over_ws}"
    );
    let over_http = hint("malformed", Counted::Requests).unwrap();
    assert!(over_http.contains("not valid HTTP"), "{over_http}");
    assert!(!over_http.contains("WebSocket"), "{over_http}");
}

/// Over WebSocket a message lost to a close or a reset may be a proxy's
/// idle timeout, which --ws-ping keeps connections clear of.
#[test]
fn messages_lost_to_a_close_point_to_ws_ping() {
    for said in ["reset", "closed early"] {
        let said_over_ws = hint(said, Counted::Messages).unwrap();
        assert!(said_over_ws.contains("--ws-ping T"), "{said_over_ws}");
        assert!(!hint(said, Counted::Requests).unwrap().contains("--ws-ping"));
    }
}

/// A body too large for a script to read is named as such, not as the
/// server's malformed answer: the fix is on metron's side.
#[test]
fn a_body_too_large_for_a_script_says_so() {
    let mut t = ThreadStats::default();
    t.counters.due = 5;
    t.counters.errors.read = 5;
    t.counters.read_causes.body_too_large = 5;
    let stats = RunStats::merge(vec![t], Duration::from_secs(1));
    let text = render(&report(&stats, Some(5.0)));
    assert!(text.contains("Read errors: body too large 5"), "{text}");
    assert!(text.contains("at most 16 MiB"), "{text}");
    assert!(!text.contains("not valid HTTP"), "{text}");
}

/// Visits that never started because the server went away: the warning
/// names the connections down and why, not a slow server.
#[test]
fn visits_never_started_are_put_down_to_the_connections_seen_at_the_end() {
    let mut t = ThreadStats::default();
    t.counters.due = 100;
    t.counters.completed = 100;
    t.counters.at_end.down = 10;
    t.counters.at_end.down_connect.refused = 10;
    t.visits = Some(crate::stats::VisitStats {
        started: 50,
        completed: 50,
        never_started: 50,
        ..Default::default()
    });
    let stats = RunStats::merge(vec![t], Duration::from_secs(1));
    let text = render(&report(&stats, Some(100.0)));
    let line = text
        .lines()
        .find(|l| l.contains("never started:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("50 of 100 due visits never started"),
        "{line}"
    );
    assert!(
        line.contains("at the end 10 connections were down (connect refused 10"),
        "{line}"
    );
    assert!(!line.contains("stalled"), "{line}");
}

/// Nothing was sent (a stream limit of 0, Ctrl-C before `--start-at`,
/// a script that failed in its first `request()`): the send lag was
/// not measured, so it prints dashes, not `0.00us`.
#[test]
fn a_run_that_sent_nothing_has_no_send_lag() {
    let mut t = ThreadStats::default();
    t.counters.due = 50;
    t.counters.never_sent = 50;
    let stats = RunStats::merge(vec![t], Duration::from_secs(1));
    let text = render(&report(&stats, Some(50.0)));
    assert!(
        text.contains("\n  Send lag: p50 -, p99 -, max -\n"),
        "{text}"
    );
    assert!(!text.contains(" 0.00us"), "{text}");
}

/// An endpoint with requests in flight and none completed has no
/// latency to show.
#[test]
fn an_endpoint_with_nothing_completed_prints_dashes() {
    let mut stats = golden_stats();
    stats.endpoints = vec![
        EndpointStats {
            name: "GET /slow".to_string(),
            completed: 0,
            errors: 0,
            latency: None,
            ..Default::default()
        },
        EndpointStats {
            name: "GET /empty".to_string(),
            completed: 0,
            errors: 0,
            latency: Some(crate::stats::new_histogram()),
            ..Default::default()
        },
    ];
    let text = render(&report(&stats, Some(200.0)));
    for name in ["GET /slow", "GET /empty"] {
        let row = format!(
            "  {:>10} {:>8} {:>9} {:>9} {:>9}  {name}\n",
            0, 0, "-", "-", "-"
        );
        assert!(text.contains(&row), "{text}");
    }
}

/// Over WebSocket the endpoints' count is of messages (or of
/// subscriptions, whose longer title widens its column).
#[test]
fn endpoints_count_what_the_run_counted() {
    let endpoints = vec![EndpointStats {
        name: "/echo".to_string(),
        completed: 12,
        errors: 1,
        latency: None,
        ..Default::default()
    }];
    for (counted, header) in [
        (Counted::Messages, "    Messages   Errors"),
        (Counted::Subscriptions, "  Subscriptions   Errors"),
    ] {
        let mut out = Vec::new();
        super::results::write_endpoints(&mut out, &endpoints, counted).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].starts_with(header), "{text}");
        // The row's count ends where its title does.
        let title = counted.title();
        let end = lines[1].find(title).unwrap() + title.len();
        assert_eq!(lines[2].find("12").unwrap() + 2, end, "{text}");
    }
}

/// A profile of more phases than are broken out says why its table is
/// missing, rather than dropping it without a word.
#[test]
fn a_profile_of_too_many_phases_says_its_table_is_left_out() {
    let stats = golden_stats();
    let mut r = report(&stats, Some(100.0));
    r.profile_phases = MAX_PHASES + 1;
    let text = render(&r);
    assert!(
        text.contains(&format!(
            "  Phases: no table for a profile of {} phases (at most {MAX_PHASES}, ",
            MAX_PHASES + 1
        )),
        "{text}"
    );
    // A profile the table covers (its phases were filled in) or one
    // of a single phase says nothing of the kind.
    r.profile_phases = MAX_PHASES;
    assert!(!render(&r).contains("Phases:"));
}

/// A phase table's rates follow one rule: 900 is not `0.90k` under an
/// `825.00`.
#[test]
fn phase_rates_move_to_k_at_a_whole_thousand() {
    let mut stats = golden_stats();
    stats.phases = [("825:1s", 825), ("900:1s", 900), ("1200:1s", 1200)]
        .iter()
        .enumerate()
        .map(|(i, &(label, n))| PhaseStats {
            label: label.to_string(),
            start: Duration::from_secs(i as u64),
            length: Duration::from_secs(1),
            due: n,
            completed: n,
            ..PhaseStats::default()
        })
        .collect();
    let text = render(&report(&stats, Some(975.0)));
    assert!(text.contains("   825.00    825.00 "), "{text}");
    assert!(text.contains("   900.00    900.00 "), "{text}");
    assert!(text.contains("     1.20k     1.20k "), "{text}");
    assert!(!text.contains("0.90k"), "{text}");
}

fn instance(name: &str, lag: Option<u64>) -> crate::report::json::Instance {
    crate::report::json::Instance {
        name: name.to_string(),
        shard: Some(crate::report::json::ShardConfig { index: 0, count: 2 }),
        rate: Some(900.0),
        requests_per_sec: 899.5,
        completed: 8995,
        errors: 0,
        never_sent: 0,
        send_lag_p99_us: lag,
        start_offset_s: None,
        window_start_ms: None,
        window_s: 10.0,
    }
}

/// Long instance names (paths) widen their column instead of pushing
/// their rows out of line; an instance that sent nothing has no lag.
#[test]
fn the_instance_table_fits_its_widest_name() {
    let long = "results/run-2026-11-24/node-with-a-long-hostname-07.json";
    let rows = [instance("a.json", Some(120)), instance(long, None)];
    let mut out = Vec::new();
    write_instances(&mut out, &rows).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(lines.len(), 3, "{text}");
    // Every line is as long, and each column ends where the header's does.
    assert!(lines.iter().all(|l| l.len() == lines[0].len()), "{text}");
    let end_of = |l: &str, what: &str| l.find(what).unwrap() + what.len();
    for l in &lines[1..] {
        assert_eq!(end_of(l, " 0/2 "), end_of(lines[0], "shard") + 1, "{text}");
    }
    assert!(lines[1].contains(" 900.00 "), "{text}");
    assert!(lines[1].contains(" 899.50 "), "{text}");
    assert!(lines[1].contains(" 120.00us "), "{text}");
    assert!(lines[2].starts_with(&format!("    {long} ")), "{text}");
    assert!(lines[2].contains(" - "), "{text}");
}

/// An objective judged on a run that measured nothing shows no value,
/// rather than a latency of 0.00us beside its verdict.
#[test]
fn an_slo_term_without_a_value_prints_a_dash() {
    let slo = SloReport {
        spec: "p99<10ms".into(),
        verdict: crate::verdict::Verdict::Inconclusive,
        reason: Some("nothing was measured".into()),
        exit_status: 4,
        rows: vec![crate::verdict::SloRow {
            term: "p99<10ms".into(),
            value: None,
            unit: "us".into(),
            met: false,
        }],
    };
    let mut out = Vec::new();
    write_slo(&mut out, &slo).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("  SLO p99<10ms: -, not measured\n"),
        "{text}"
    );
}

/// `--llm`: streams that failed after their 200 are named, with each
/// count, and a clean run has no such warning.
#[test]
fn streams_gone_wrong_after_their_status_are_named() {
    let mut l = crate::stats::LlmStats {
        responses: 8,
        ..Default::default()
    };
    assert_eq!(warnings::broken_streams_warning(&l), None);
    (l.stream_errors, l.without_done) = (3, 8);
    let w = warnings::broken_streams_warning(&l).expect("a warning");
    assert!(
        w.starts_with(
            "streams went wrong after their 2xx status: of 8, 3 reported an error in the \
             stream, 8 ended without [DONE]; "
        ),
        "{w}"
    );
}

/// Over WebSocket the report counts what was timed: an echo's messages,
/// a push's subscriptions, never requests.
#[test]
fn websocket_runs_count_messages_or_subscriptions() {
    let mut stats = lagging(10, 0);
    stats.counters.completed = 99;
    stats.counters.in_flight = 1;
    record(&mut stats.unfinished, &[(20_000, 1)]);
    let spoken = Spoken::of([Protocol::WebSocket]);
    let mut r = report(&stats, Some(1000.0));
    r.protocol = Some(&spoken);
    let text = render(&r);
    for want in [
        "\n  99 messages in ",
        "\nMessages/sec: ",
        "\n    Msg/Sec ",
        "including 1 unfinished message (lower bounds)",
    ] {
        assert!(text.contains(want), "{want:?} in {text}");
    }
    assert!(!text.contains("request"), "{text}");
    stats.events = Some(EventStats {
        kind: EventKind::WebSocket,
        count: 5,
        ..EventStats::default()
    });
    let mut r = report(&stats, Some(1000.0));
    r.protocol = Some(&spoken);
    let text = render(&r);
    for want in [
        "\n  99 subscriptions in ",
        "\nSubscriptions/sec: ",
        "\n    Sub/Sec ",
        "including 1 unfinished subscription (lower bounds)",
    ] {
        assert!(text.contains(want), "{want:?} in {text}");
    }
    assert!(!text.contains("request"), "{text}");
}

/// Unasked messages are named, with advice that fits what was asked:
/// --ws-match when answers were matched by order, and what a match needs
/// when they were matched by a field.
#[test]
fn unasked_messages_are_named_with_advice_for_the_matching_used() {
    let mut stats = lagging(10, 0);
    stats.counters.completed = 100;
    stats.counters.ws_unasked = 12;
    let spoken = Spoken::of([Protocol::WebSocket]);
    let unasked = |ws: Option<&crate::report::json::WsConfig>| {
        let mut r = report(&stats, None);
        r.protocol = Some(&spoken);
        r.ws = ws;
        let found = warnings(&r);
        found
            .into_iter()
            .find(|w| w.starts_with("12 messages came that answer no message"))
            .expect("named")
    };
    let by_order = unasked(None);
    assert!(by_order.ends_with("use --ws-match, and for a server that only pushes, --ws push"));
    let matched = crate::report::json::WsConfig {
        shape: "echo".into(),
        binary: false,
        deflate: false,
        matching: Some("order.id".into()),
        ping_s: None,
    };
    let by_field = unasked(Some(&matched));
    assert!(
        by_field.ends_with(
            "with --ws-match order.id, an answer answers only a message awaiting whose order.id \
             holds the same value (a number and a string differ: 7 is not \"7\")"
        ),
        "{by_field}"
    );
}

/// Under -R, subscriptions whose server pushed before their turn are
/// named, with what their first-message time then means; the closed
/// loop, where one opens as its upgrade is taken, has no such warning.
#[test]
fn a_push_before_its_subscription_was_due_is_named_under_a_rate() {
    let mut stats = lagging(10, 0);
    stats.counters.completed = 100;
    stats.events = Some(EventStats {
        kind: EventKind::WebSocket,
        count: 50,
        before_due: 7,
        ..EventStats::default()
    });
    let spoken = Spoken::of([Protocol::WebSocket]);
    let mut r = report(&stats, Some(1000.0));
    r.protocol = Some(&spoken);
    let found = warnings(&r);
    assert!(
        found.iter().any(|w| w.starts_with(
            "7 subscriptions found the server's messages already there before they were due: \
             it pushes from the upgrade on"
        ) && w.contains("count as 0 ms; run without -R")
            && !w.contains("--data")),
        "{found:?}"
    );
    let mut r = report(&stats, None);
    r.protocol = Some(&spoken);
    assert!(
        !warnings(&r)
            .iter()
            .any(|w| w.contains("before they were due")),
        "{:?}",
        warnings(&r)
    );
}

/// Connections turned away with nothing lost have no warning to name
/// them in, so they get a line of their own.
#[test]
fn connections_turned_away_show_without_a_lost_request() {
    let mut stats = lagging(10, 0);
    stats.counters.reconnects = 3;
    stats.counters.reopens.turned_away = 3;
    let text = render(&report(&stats, Some(1000.0)));
    assert!(
        text.contains(
            "\n  Connections turned away: 3, closed or reset before anything was answered on \
             them and reopened (no request lost): the server closed new connections unanswered"
        ),
        "{text}"
    );
    assert!(!text.contains("--ws-ping"), "{text}");
    // A lost request's warning names them instead.
    let mut stats = turned_away();
    stats.counters.reopens.turned_away = 3;
    let text = render(&report(&stats, Some(1000.0)));
    assert!(!text.contains("Connections turned away"), "{text}");
}

/// Over WebSocket, a proxy's idle timeout closes quiet connections as a
/// server past its limit does: the hint names --ws-ping too.
#[test]
fn connections_closed_unanswered_over_websocket_name_ws_ping() {
    let spoken = Spoken::of([Protocol::WebSocket]);
    let stats = turned_away();
    let mut r = report(&stats, Some(1000.0));
    r.protocol = Some(&spoken);
    let w = &warnings(&r)[0];
    assert!(
        w.starts_with("38 of 100 due messages were lost: closed before answering 37: "),
        "{w}"
    );
    assert!(
        w.contains(
            "or a proxy closed them idle: --ws-ping T keeps a quiet connection alive through \
             a proxy's idle timeout"
        ),
        "{w}"
    );
}

/// A push's timeout is its subscription outliving --timeout, which
/// bounds each one, not a stalled server.
#[test]
fn a_subscription_past_its_timeout_is_named_so() {
    let spoken = Spoken::of([Protocol::WebSocket]);
    let mut stats = lagging(10, 0);
    stats.counters.completed = 99;
    stats.counters.errors.timeout = 1;
    stats.events = Some(EventStats {
        kind: EventKind::WebSocket,
        count: 5,
        ..EventStats::default()
    });
    let mut r = report(&stats, None);
    r.protocol = Some(&spoken);
    assert_eq!(
        warnings(&r),
        [
            "1 of 100 due subscriptions were lost: timeout 1: the subscription lasted longer \
             than --timeout, which bounds each subscription: raise --timeout to let \
             subscriptions run longer"
        ]
    );
}
