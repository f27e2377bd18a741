//! The load generator over HTTP/2 against the built-in target's h2c:
//! the books balance, requests really share connections, and the flags
//! that choose the protocol refuse what cannot work.

use crate::common::h2::*;
use crate::common::*;
use metron::serve::{Http2, ServeConfig};

/// The closed loop keeps -m streams busy on each of -c connections: the
/// server sees no more than -c connections (and the pre-flight's) and
/// more than -c requests at once, and every due request is accounted for.
#[test]
fn the_closed_loop_multiplexes_streams() {
    let _g = serial();
    // Each response takes 20 ms, so streams overlap on the server.
    let srv = h2_server(20);
    let u = url(&srv, "/");
    let (o, _) = bench(&["--http2", "-t1", "-c2", "-m8", "-d1s", &u]);
    assert_balanced(&o);
    let c = o.stats.counters;
    // 16 streams answered every 20 ms: about 800 a second.
    assert!(c.completed > 300, "{c:?}");
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
    let stats = srv.stats();
    // Two, and the pre-flight's check that the server speaks h2c.
    assert!(
        stats.h2_connections() <= 3,
        "{} connections",
        stats.h2_connections()
    );
    assert!(
        stats.h2_max_streams_in_flight() > 8,
        "at most {} streams at once",
        stats.h2_max_streams_in_flight()
    );
    assert!(stats.h2_max_streams_per_connection() <= 8);
}

/// Rate mode over HTTP/2 keeps the schedule: every due request is sent
/// and answered.
#[test]
fn rate_mode_keeps_its_schedule() {
    let _g = serial();
    let srv = h2_server(0);
    let u = url(&srv, "/");
    let (o, _) = bench(&["--http2", "-t1", "-c2", "-R1000", "-d2s", &u]);
    assert_balanced(&o);
    let c = o.stats.counters;
    assert_eq!(c.due, 2000, "{c:?}");
    assert!(c.completed + 2 >= c.due, "{c:?}");
}

/// Asking an HTTP/1.1 server for h2c is refused before the run, in one
/// line; -m and --alpn refuse runs they would not change.
#[test]
fn protocol_flags_refuse_what_cannot_work() {
    let _g = serial();
    let h1 = server(ServeConfig::default());
    let u = url(&h1, "/");
    let o = metron(&["--http2", "-d1s", &u]);
    let err = one_line_error(&o);
    assert!(
        err.contains("does not speak HTTP/2 with prior knowledge"),
        "{err}"
    );
    let o = metron(&["-m", "5", "-d1s", &u]);
    assert!(one_line_error(&o).contains("-m only sets HTTP/2's and HTTP/3's streams"));
    let o = metron(&["--alpn", "h2", "-d1s", &u]);
    assert!(one_line_error(&o).contains("--alpn only applies to https://"));
}

/// A stream past --timeout is given up on its own: reset, counted as a
/// timeout, while the connection and its other streams go on (over
/// HTTP/1.1 the whole connection would be closed).
#[test]
fn a_stream_past_the_timeout_is_reset_alone() {
    let _g = serial();
    // Every 10th stream is held open and never answered.
    let srv = server(ServeConfig {
        http2: Some(Http2::default()),
        fault: Some(metron::serve::FaultPlan::every(
            metron::serve::Fault::NeverAnswer,
            10,
        )),
        ..ServeConfig::default()
    });
    let u = url(&srv, "/");
    let (o, _) = bench(&[
        "--http2",
        "-t1",
        "-c2",
        "-m20",
        "-R500",
        "--timeout",
        "300ms",
        "-d2s",
        &u,
    ]);
    assert_balanced(&o);
    let c = o.stats.counters;
    assert_eq!(c.due, 1000, "{c:?}");
    // One in ten never answered: given up after 300 ms, or in flight at
    // the end when due in its last 300 ms.
    assert_eq!(c.errors.timeout + c.in_flight, 100, "{c:?}");
    assert!(c.errors.timeout >= 80, "{c:?}");
    assert_eq!(c.errors.read + c.errors.write, 0, "{c:?}");
    assert_eq!(c.completed, 900, "{c:?}");
    // No connection was closed for it: the pre-flight's and the run's two.
    assert_eq!(c.reconnects, 0, "{c:?}");
    assert!(srv.stats().h2_connections() <= 3);
}
