//! The load generator over HTTP/2 against a server that misbehaves: the
//! HTTP/2 faults of the built-in target (`--h2-goaway-after`, `--h2-reset`,
//! `--h2-max-streams`, `--h2-window`, and `huge-head` in its HTTP/2 form),
//! each counted where it belongs, and hand-written servers that do not
//! speak HTTP/2 properly, each a clear one-line error or counted errors,
//! with no panic, no hang and no spinning.

use std::time::{Duration, Instant};

use crate::common::h2::*;
use crate::common::*;
use metron::serve::{Fault, FaultPlan, Http2, Pick, Probability, ServeConfig};

/// HTTP/2 error codes (RFC 9113 section 7) the tests expect.
const NO_ERROR: u32 = 0x0;
const INTERNAL_ERROR: u32 = 0x2;
const REFUSED_STREAM: u32 = 0x7;

// ---------------------------------------------------------------------
// The built-in target's HTTP/2 faults.
// ---------------------------------------------------------------------

/// `--h2-reset P --h2-reset-code REFUSED_STREAM`: a stream the server
/// refuses was never processed, so its request goes out again (keeping
/// its intended time) instead of counting as an error: nothing is lost,
/// and each refusal is one request sent again.
#[test]
fn refused_streams_go_out_again() {
    let _g = serial();
    let refuse = Pick::Chance {
        p: Probability::new(0.1).unwrap(),
        seed: 5,
    };
    let srv = h2(
        Http2 {
            reset: Some(refuse),
            reset_code: Some(REFUSED_STREAM),
            ..Http2::default()
        },
        ServeConfig::default(),
    );
    let (o, text) = bench_h2(&["-t1", "-c2", "-R1000", "-d2s"], &url(&srv, "/"));
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert!(!c.errors.any_socket(), "{c:?}\n{text}");
    assert_eq!(c.http2.resets.total(), 0, "{c:?}");
    // About one in ten refused, each sent again (one refused at the very
    // end may still be on its way).
    let refused = srv.stats().h2_resets();
    assert!((100..=400).contains(&refused), "{refused} refused: {c:?}");
    assert!(
        c.http2.retried <= refused && refused <= c.http2.retried + c.in_flight,
        "{refused} refused, {c:?}"
    );
    assert!(c.completed + c.in_flight + c.never_sent == c.due, "{c:?}");
    assert!(text.contains("sent again"), "{text}");
}

/// `--h2-reset P`: each stream the server resets is one read error, and
/// counted by its error code (INTERNAL_ERROR); the others complete.
#[test]
fn reset_streams_are_read_errors_counted_by_code() {
    let _g = serial();
    let p = 0.1;
    let reset = Pick::Chance {
        p: Probability::new(p).unwrap(),
        seed: 11,
    };
    let srv = h2(
        Http2 {
            reset: Some(reset),
            ..Http2::default()
        },
        ServeConfig::default(),
    );
    let (o, text) = bench_h2(&["-t1", "-c2", "-R1000", "-d2s"], &url(&srv, "/"));
    assert_balanced(&o);
    let c = &o.stats.counters;
    let resets = srv.stats().h2_resets();
    // Every reset the client saw is one the server sent; one sent at the
    // very end may still be on its way.
    assert!(
        c.errors.read <= resets && resets <= c.errors.read + c.in_flight,
        "{resets} resets, {c:?}"
    );
    // About one in ten: 200 of 2000, give or take far more than chance.
    let share = c.errors.read as f64 / c.due as f64;
    assert!((p / 2.0..=p * 2.0).contains(&share), "{share:.3}: {c:?}");
    assert_eq!(
        (
            c.errors.connect,
            c.errors.write,
            c.errors.timeout,
            c.reconnects
        ),
        (0, 0, 0, 0),
        "a reset is the stream's alone: {c:?}"
    );
    assert!(
        text.contains(&format!("read {}, write 0", c.errors.read)),
        "{text}"
    );
    // Each reset is also counted by its code: INTERNAL_ERROR, what
    // `--h2-reset` sends (README, `metron serve`).
    let h = &c.http2;
    assert_eq!(h.resets.get(INTERNAL_ERROR), c.errors.read, "{h:?}");
    assert_eq!(h.resets.total(), c.errors.read, "{h:?}");
    assert_eq!(
        (h.goaway.total(), h.connection_errors, h.retried),
        (0, 0, 0),
        "{h:?}"
    );
    assert!(
        text.contains(&format!(
            "HTTP/2: {0} streams reset (INTERNAL_ERROR {0}), 0 GOAWAY",
            c.errors.read
        )),
        "{text}"
    );
}

/// `--h2-goaway-after 20`: each connection goes away after its 20th
/// stream (GOAWAY, NO_ERROR, naming the 20th as the last processed).
/// Requests the client had sent on it above that were never processed:
/// they go out again on another connection, keeping their intended time.
/// No request is lost or answered twice, and the GOAWAYs and the requests
/// sent again are counted.
#[test]
fn goaway_after_n_streams_loses_no_request() {
    let _g = serial();
    // The closed loop opens 30 streams on each new connection at once, so
    // 10 of them are above the GOAWAY; rate mode sends 300 a second on
    // each connection, a stream or two at a time. Each mode has a server
    // of its own: what one mode left in flight at its end is answered
    // after it, and must not be counted in the next.
    for (mode, streams) in [(&["-m30", "-d1s"][..], 2 * 30), (&["-R600", "-d2s"], 0)] {
        let srv = h2(
            Http2 {
                goaway_after: Some(20),
                ..Http2::default()
            },
            ServeConfig {
                delay: Duration::from_millis(5),
                ..ServeConfig::default()
            },
        );
        let u = url(&srv, "/");
        let args = [&["-t1", "-c2"][..], mode].concat();
        let (o, text) = bench_h2(&args, &u);
        assert_balanced(&o);
        let c = &o.stats.counters;
        assert!(!c.errors.any_socket(), "{mode:?}: {c:?}");
        // Requests still waiting to go out again at the end were never
        // sent (again); in the closed loop at most 10 per connection open
        // or still draining then.
        assert!(
            c.never_sent <= (2 + c.at_end.draining) * 10,
            "{mode:?}: {c:?}"
        );
        assert!(c.completed > 100, "{mode:?}: {c:?}");
        if streams == 0 {
            assert_eq!(c.due, 1200, "{c:?}");
        }
        let h = &c.http2;
        // GOAWAY frames, all NO_ERROR. The server retires a connection
        // after 20 streams with two of them, as a graceful shutdown does
        // (RFC 9113 section 6.8): the first says no new streams, the second,
        // a round trip later, names the last one processed. The client
        // counts connections retired, by the first (the last may still be
        // on its way at the end).
        let goaways = h.goaway.get(NO_ERROR);
        assert_eq!(goaways, h.goaway.total(), "{mode:?}: {h:?}");
        let retired = srv.stats().h2_goaways();
        assert!(
            goaways <= retired && retired <= goaways + 2,
            "{mode:?}: {goaways} GOAWAYs, {retired} connections retired"
        );
        // Each retired connection processed exactly 20 streams, each
        // completed or still in flight at the end (a retired connection
        // is replaced at once and finishes on the side, so several may
        // be finishing then); the two open ones processed fewer.
        assert!(
            20 * retired <= c.completed + c.in_flight && c.completed <= 20 * (retired + 2),
            "{mode:?}: {retired} connections retired for {} completed, {} in flight",
            c.completed,
            c.in_flight
        );
        assert_eq!(
            (h.resets.total(), h.connection_errors),
            (0, 0),
            "{mode:?}: {h:?}"
        );
        // In the closed loop each retirement leaves 10 requests to send
        // again, once the server's second GOAWAY names the last stream it
        // processed. A connection whose second GOAWAY had not come by the
        // end (each open one, and each retired one still draining: a
        // replacement may itself be retired before its predecessor's
        // second GOAWAY arrives) holds its 10 in flight instead.
        if streams > 0 {
            let waiting = 2 + c.at_end.draining;
            assert!(
                h.retried + waiting * 10 >= 10 * retired && h.retried <= 10 * retired,
                "{mode:?}: {} sent again, {retired} connections retired, {} draining at the end",
                h.retried,
                c.at_end.draining
            );
        }
        assert!(
            text.contains(" requests sent again (never processed)"),
            "{text}"
        );
        // The server processed each request once: what it answered is what
        // was completed, give or take what was on its way at the end.
        let run = srv.stats().responses_total();
        assert!(
            (c.completed..=c.completed + c.in_flight).contains(&run),
            "{mode:?}: the server answered {run}: {c:?}"
        );
    }
}

/// `--h2-max-streams 4`: however many streams the client may open (-m 100)
/// the server never has more than its limit open on one connection, in
/// either mode, and in rate mode every request is answered.
#[test]
fn the_servers_stream_limit_is_kept() {
    let _g = serial();
    let srv = four_streams();
    let u = url(&srv, "/");
    for mode in [&["-R150", "-d1s"][..], &["-d1s"]] {
        let args = [&["-t1", "-c2", "-m100"][..], mode].concat();
        let (o, _) = bench_h2(&args, &u);
        assert_balanced(&o);
        let c = &o.stats.counters;
        assert!(c.completed > 50, "{mode:?}: {c:?}");
        if mode.len() == 2 {
            assert!(!c.errors.any_socket(), "{mode:?}: {c:?}");
            assert!(!c.http2.any(), "{mode:?}: {:?}", c.http2);
        }
    }
    let most = srv.stats().h2_max_streams_per_connection();
    assert!(
        (2..=4).contains(&most),
        "{most} streams at once on a connection"
    );
}

/// The closed loop opens no stream above the server's limit, so none is
/// refused: no errors at all. The server's SETTINGS reach the client 200 ms
/// after it connects, as over a network with that round trip: the client
/// must not take streams for granted before it knows the limit.
#[test]
fn the_closed_loop_opens_no_stream_the_server_refuses() {
    let _g = serial();
    let srv = four_streams();
    let slow = SlowProxy::start(srv.addr(), Duration::from_millis(200));
    let (o, _) = bench_h2(&["-t1", "-c2", "-m100", "-d1s"], &slow.url());
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!(c.http2.resets.get(REFUSED_STREAM), 0, "{c:?}");
    assert!(!c.errors.any_socket(), "{c:?}");
    assert!(c.completed > 20, "{c:?}");
}

/// `--h2-window 16`: the server lets the client send 16 bytes at a time on
/// each stream and on the connection; 1000-byte POST bodies still arrive
/// whole, every one.
#[test]
fn a_tiny_window_still_carries_every_body() {
    let _g = serial();
    let srv = h2(
        Http2 {
            window: Some(16),
            ..Http2::default()
        },
        ServeConfig {
            record: 1000,
            ..ServeConfig::default()
        },
    );
    let dir = TempDir::new("h2-window");
    let script = dir.file(
        "upload.lua",
        "wrk.method = \"POST\"\nwrk.body = string.rep(\"u\", 1000)\n",
    );
    let (o, _) = bench_h2(
        &["-t1", "-c2", "-R100", "-d1s", "-s", &script],
        &url(&srv, "/"),
    );
    assert_balanced(&o);
    let c = &o.stats.counters;
    // Each body takes dozens of round trips, so the last may still be on
    // its way when the run ends.
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
    assert_eq!(c.completed + c.in_flight, 100, "{c:?}");
    assert!(c.completed >= 90, "{c:?}");
    assert!(!c.http2.any(), "{:?}", c.http2);
    let got = srv.stats().recorded();
    assert!(got.len() as u64 >= c.completed, "{} bodies", got.len());
    assert!(got
        .iter()
        .all(|r| r.method == "POST" && r.body == [b'u'; 1000]));
}

/// `huge-head` over HTTP/2: a valid response whose header block (over
/// 1 MiB) is far past the client's limit (64 KiB). The block cannot be
/// skipped (it may change HPACK's table), so the client ends the whole
/// connection (GOAWAY, ENHANCE_YOUR_CALM) and the requests in flight
/// beside it on that connection are lost with it, each a read error of
/// the cause it met, a head too large (`--max-head`), not a server that
/// broke the protocol; the connection is reopened and the run goes on.
#[test]
fn a_head_past_the_limit_is_a_read_error() {
    let _g = serial();
    let srv = h2(
        Http2::default(),
        ServeConfig {
            fault: Some(FaultPlan::every(Fault::HugeHead, 4)),
            ..ServeConfig::default()
        },
    );
    let (o, _) = bench_h2(&["-t1", "-c4", "-R200", "-d1s"], &url(&srv, "/"));
    assert_balanced(&o);
    let c = &o.stats.counters;
    let faults = srv.stats().faults();
    // Each huge head costs its request, and at 50 requests a second on a
    // connection now and then one more beside it.
    assert!(
        faults <= c.errors.read + c.in_flight && c.errors.read <= 2 * faults,
        "{faults} faults, {c:?}"
    );
    let others = c.errors.connect + c.errors.write + c.errors.timeout + c.errors.status;
    assert_eq!(others, 0, "{c:?}");
    // Each is a head too large, not a broken protocol (the client's own
    // GOAWAY, so none is counted as received).
    assert_eq!(c.read_causes.head_too_large, c.errors.read, "{c:?}");
    let h = &c.http2;
    assert_eq!(h.connection_errors, 0, "{h:?}");
    assert_eq!((h.goaway.total(), h.resets.total()), (0, 0), "{h:?}");
    // The three healthy responses in four mostly complete.
    assert!(c.completed >= c.due / 2, "{c:?}");
}

/// The huge head is valid HTTP/2: with `--max-head 2m` (README: the
/// largest response head accepted) the client reads it whole.
#[test]
fn a_huge_head_completes_when_the_limit_allows_it() {
    let _g = serial();
    let srv = h2(
        Http2::default(),
        ServeConfig {
            fault: Some(FaultPlan::every(Fault::HugeHead, 4)),
            ..ServeConfig::default()
        },
    );
    let args = ["-t1", "-c4", "-R200", "-d1s", "--max-head", "2m"];
    let (o, _) = bench_h2(&args, &url(&srv, "/"));
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
    let huge = srv.stats().faults().saturating_sub(c.in_flight);
    assert!(huge > 0, "{c:?}");
    // Over 1 MiB of 'p's, each 6 bits in HPACK's Huffman code: at least
    // 3/4 MiB on the wire.
    assert!(c.bytes > huge * (3 << 18), "{} bytes, {c:?}", c.bytes);
}

// ---------------------------------------------------------------------
// Hand-written servers that break HTTP/2.
// ---------------------------------------------------------------------

/// An empty SETTINGS frame: what an HTTP/2 server's preface opens with
/// (RFC 9113 section 3.4).
const SETTINGS: &[u8] = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// Answers the HTTP/2 preface in HTTP/1.1, as a server that does not speak
/// h2c does.
const HTTP1_ANSWER: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// A server that answers the preface in HTTP/1.1 is refused before the
/// run, in one line that says so.
#[test]
fn an_http1_answer_to_the_preface_is_one_clear_error() {
    let raw = RawServer::start(HTTP1_ANSWER);
    let start = Instant::now();
    let o = metron_within(&["--http2", "-t1", "-c2", "-d1s", &raw.url()], LIMIT);
    let err = one_line_error(&o);
    assert!(
        err.contains("does not speak HTTP/2 with prior knowledge") && err.contains("HTTP/1"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // Refused at the pre-flight: no run, no second second.
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(raw.accepted(), 1, "only the pre-flight connected");
}

/// Servers that open with a valid SETTINGS frame (so the pre-flight takes
/// them for HTTP/2) and then break the protocol: each connection fails
/// with a connection error, its requests are read errors, and the
/// connections are reopened without spinning.
#[test]
fn malformed_frames_are_counted_errors_without_spinning() {
    let _g = serial();
    let cases: [(&str, &[u8]); 3] = [
        // DATA must belong to a stream (RFC 9113 section 6.1).
        (
            "DATA on stream 0",
            b"\x00\x00\x04\x00\x00\x00\x00\x00\x00oops",
        ),
        // A SETTINGS payload is a multiple of 6 bytes (section 6.5).
        (
            "SETTINGS of 5 bytes",
            b"\x00\x00\x05\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00",
        ),
        // Past the 16 KiB frame size the client allows (section 4.2).
        (
            "a 64 KiB frame",
            b"\x01\x00\x00\x00\x00\x00\x00\x00\x01xxxxxxxx",
        ),
    ];
    for (what, frame) in cases {
        let raw = RawServer::start(&[SETTINGS, frame].concat());
        for mode in [&["-R100"][..], &[]] {
            let args = [&["-t1", "-c2", "-d1s", "--timeout", "500ms"][..], mode].concat();
            let (o, text) = bench_h2(&args, &raw.url());
            assert_balanced(&o);
            let c = &o.stats.counters;
            assert_eq!(c.completed, 0, "{what} {mode:?}: {c:?}");
            // The bad frame comes with the server's SETTINGS, before any
            // stream is opened: what went out is lost, the rest never sent.
            assert_eq!(
                c.errors.read + c.never_sent + c.in_flight,
                c.due,
                "{what} {mode:?}: {c:?}"
            );
            assert_eq!(c.errors.write, 0, "{what} {mode:?}: {c:?}");
            assert!(c.http2.connection_errors > 0, "{what} {mode:?}: {c:?}");
            assert_eq!(c.http2.resets.total(), 0, "{what} {mode:?}: {c:?}");
            assert!(text.contains(" connection errors, "), "{what}: {text}");
            let share = cpu_share(&o);
            assert!(
                share < 0.3,
                "{what} {mode:?}: the worker used {share:.2} of a CPU, {c:?}"
            );
        }
        assert!(
            raw.accepted() < MAX_RAW_CONNECTIONS,
            "{what}: a reconnect storm"
        );
    }
}
