//! The load generator over HTTP/2 against a server that misbehaves: the
//! HTTP/2 faults of the built-in target (`--h2-reset`, `--h2-max-streams`,
//! `--h2-window`), each counted where it belongs, and hand-written servers
//! that do not speak HTTP/2 properly, each a clear one-line error or
//! counted errors, with no panic, no hang and no spinning. Streams refused
//! and connections gone away are tests/it/streams.rs's, over HTTP/2 and
//! HTTP/3 alike; `huge-head` is tests/it/faults.rs's, in every protocol.

use std::time::{Duration, Instant};

use crate::common::h2::*;
use crate::common::*;
use metron::serve::{Http2, Pick, Probability, ServeConfig};

/// HTTP/2 error codes (RFC 9113 section 7) the tests expect.
const INTERNAL_ERROR: u32 = 0x2;
const REFUSED_STREAM: u32 = 0x7;

// ---------------------------------------------------------------------
// The built-in target's HTTP/2 faults.
// ---------------------------------------------------------------------

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
