//! The engine against every response shape and connection event the
//! built-in target can produce: body framings, closes, statuses, timeouts.

use crate::common::*;
use metron::serve::ServeConfig;

#[test]
fn content_length_and_chunked_bodies_complete() {
    let _g = serial();
    for (cfg, path) in [
        (
            ServeConfig {
                body_size: 1000,
                ..ServeConfig::default()
            },
            "/",
        ),
        (
            ServeConfig {
                body_size: 5000,
                ..ServeConfig::default()
            },
            "/chunked",
        ),
        (
            ServeConfig {
                body_size: 100,
                chunked: true,
                ..ServeConfig::default()
            },
            "/",
        ),
    ] {
        let (o, _, received) = run_path(cfg, path, &[]);
        let c = o.stats.counters;
        assert_eq!(c.completed, 200, "{path}: {c:?}");
        assert_eq!(c.errors.lost_requests(), 0, "{path}");
        assert_eq!(c.reconnects, 0, "{path}: keep-alive must hold");
        assert_eq!(received, 200);
    }
}

#[test]
fn bodies_delimited_by_close_complete_and_reconnect() {
    let _g = serial();
    let (o, _, _) = run_path(
        ServeConfig {
            body_size: 300,
            ..ServeConfig::default()
        },
        "/eof",
        &[],
    );
    let c = o.stats.counters;
    assert_eq!(c.completed, 200, "{c:?}");
    assert_eq!(c.errors.lost_requests(), 0);
    assert_eq!(c.reconnects, 200);
    assert!(c.bytes > 200 * 300);
}

#[test]
fn connection_close_header_reconnects_without_errors() {
    let _g = serial();
    let (o, _, _) = run_path(ServeConfig::default(), "/close", &[]);
    let c = o.stats.counters;
    assert_eq!(
        (c.completed, c.reconnects, c.errors.lost_requests()),
        (200, 200, 0),
        "{c:?}"
    );
}

#[test]
fn no_content_responses_have_no_body() {
    let _g = serial();
    let (o, _, _) = run_path(
        ServeConfig {
            body_size: 10,
            ..ServeConfig::default()
        },
        "/status/204",
        &[],
    );
    let c = o.stats.counters;
    assert_eq!(
        (c.completed, c.reconnects, c.errors.lost_requests()),
        (200, 0, 0),
        "{c:?}"
    );
}

#[test]
fn error_statuses_are_counted_and_reported() {
    let _g = serial();
    let (o, text, _) = run_path(ServeConfig::default(), "/status/500", &[]);
    let c = o.stats.counters;
    assert_eq!((c.completed, c.errors.status), (200, 200), "{c:?}");
    assert!(text.contains("  Non-2xx or 3xx responses: 200\n"), "{text}");
    assert!(!text.contains("Socket errors"), "{text}");
}

#[test]
fn slow_responses_time_out_and_recycle_their_connection() {
    let _g = serial();
    // Every response takes 300 ms; with --timeout 100ms each request is
    // abandoned, counted once, and its connection reopened.
    let srv = server(ServeConfig::default());
    let u = url(&srv, "/delay/300");
    let (o, text) = bench(&["-t1", "-c2", "-R10", "-d1s", "--timeout", "100ms", &u]);
    assert_balanced(&o);
    let c = o.stats.counters;
    assert_eq!(c.completed, 0, "{c:?}");
    assert!(c.errors.timeout >= 8, "{c:?}");
    assert!(
        text.contains("Socket errors: connect 0, read 0, write 0, timeout"),
        "{text}"
    );
}

/// A server that closes after every response: the requests still
/// complete, every close is counted as a reconnect, and the generator does
/// not spin (wrk2 burns a core here).
#[test]
fn server_closing_every_connection_costs_little_cpu() {
    let _g = serial();
    let srv = server(ServeConfig {
        close_every: Some(1),
        ..ServeConfig::default()
    });
    let u = url(&srv, "/");
    let (o, _) = bench(&["-t1", "-c4", "-R500", "-d2s", &u]);
    assert_balanced(&o);
    let c = o.stats.counters;
    assert!(c.completed >= 995, "{c:?}");
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
    assert!(c.reconnects >= c.completed - 4, "{c:?}");
    let cpu = o.stats.cpu().as_secs_f64();
    let wall = o.stats.window.as_secs_f64();
    assert!(
        cpu < 0.5 * wall,
        "worker used {cpu:.2}s of CPU in {wall:.2}s"
    );
}

/// Throughput mode: a closed loop, every connection busy all the time.
#[test]
fn closed_loop_keeps_every_connection_busy() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let u = url(&srv, "/");
    let (o, text) = bench(&["-t2", "-c4", "-d1s", &u]);
    assert_balanced(&o);
    let c = o.stats.counters;
    assert!(c.completed > 1000, "{c:?}");
    assert!(c.in_flight <= 4);
    assert_eq!(c.never_sent, 0);
    assert!(text.contains("Requests/sec:"), "{text}");
}

#[test]
fn a_refused_connection_is_one_clear_error() {
    let _g = serial();
    // Bind, learn a free port, close it: nothing listens there now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let u = format!("http://127.0.0.1:{port}/");
    let err = try_bench(&["-t1", "-c1", "-d1s", &u])
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{err}"
    );
    assert!(err.contains("refused"), "{err}");
    assert!(!err.contains('\n'));
}

/// Regression: a response and the server's close that arrive together are
/// reported by one edge of the poller; reading stopped at the response (a
/// short read) and the close was never seen, so the request hung. A raw
/// server that writes its answer and closes at once makes them arrive
/// together.
#[test]
fn response_and_close_arriving_together_complete() {
    use std::io::{Read, Write};
    let _g = serial();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        for stream in listener.incoming().take(150) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 1024];
            let mut head = Vec::new();
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close");
        }
    });
    let u = format!("http://{addr}/");
    let (o, _) = bench(&["-t1", "-c1", "-R100", "-d1s", "--timeout", "300ms", &u]);
    assert_balanced(&o);
    let c = o.stats.counters;
    assert_eq!((c.completed, c.errors.timeout), (100, 0), "{c:?}");
    drop(server);
}

/// A response head beyond --max-head is a read error (the connection is
/// dropped, nothing is buffered beyond the limit); the default allows it.
#[test]
fn response_heads_beyond_the_limit_are_read_errors() {
    use std::io::{Read, Write};
    let _g = serial();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let big = format!(
            "HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 2\r\n\r\nok",
            "a".repeat(2000)
        );
        for stream in listener.incoming().take(200) {
            let Ok(mut s) = stream else { continue };
            let big = big.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                // One answer per request head received, until the client leaves.
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(big.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let u = format!("http://{addr}/");
    let (o, _) = bench(&["-t1", "-c1", "-R20", "-d1s", &u]);
    assert_eq!(
        (o.stats.counters.completed, o.stats.counters.errors.read),
        (20, 0)
    );
    let (o, text) = bench(&["-t1", "-c1", "-R20", "-d1s", "--max-head", "1k", &u]);
    assert_balanced(&o);
    let c = o.stats.counters;
    // Every answer is refused. A connection that never serves reopens with
    // a growing back-off (no busy loop), so some requests stay queued; the
    // accounting above still places each one.
    assert_eq!(c.completed, 0, "{c:?}");
    assert!(c.errors.read >= 5, "{c:?}");
    assert!(
        text.contains(&format!(
            "Socket errors: connect 0, read {},",
            c.errors.read
        )),
        "{text}"
    );
}
