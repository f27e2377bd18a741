//! Connections on demand (`--max-connections`, `-c auto`): against a
//! target whose every response takes 20 ms, 2000 requests a second need
//! about 42 connections at once (Little's law). Ten is too few; with room
//! to grow, the pool opens what the rate needs and never makes a request
//! wait for it, so the latencies are the server's own.

use std::time::Duration;

use crate::common::*;
use metron::serve::{Http2, ServeConfig};

/// The target: every response 20 ms late, over HTTP/1.1 or (h2c) HTTP/2.
fn slow_target(http2: bool) -> metron::serve::Server {
    server(ServeConfig {
        delay: Duration::from_millis(20),
        threads: 2,
        http2: http2.then(Http2::default),
        ..ServeConfig::default()
    })
}

/// Over HTTP/1.1, and over HTTP/2 with one stream per connection (a
/// connection's streams then match HTTP/1.1's one request at a time).
const PROTOCOLS: [(&str, &[&str]); 2] = [("HTTP/1.1", &[]), ("HTTP/2", &["--http2", "-m1"])];

#[test]
fn a_pool_that_may_grow_opens_what_the_rate_needs_and_delays_nothing() {
    let _g = serial();
    for (name, flags) in PROTOCOLS {
        let srv = slow_target(!flags.is_empty());
        let args = [
            flags,
            &["-t2", "-c10", "--max-connections", "200", "-R2000", "-d4s"],
        ]
        .concat();
        let (o, text) = bench_at(&args, &url(&srv, "/"));
        let c = &o.stats.counters;
        assert!(c.balanced(), "{name}: {c:?}");
        // Every request went but one or two due in the run's last moments,
        // still waiting for a connection the pool was opening (or, on a busy
        // machine, for the generator).
        assert!(c.never_sent <= 2, "{name}: {c:?}\n{text}");
        assert_eq!(c.errors.lost_requests(), 0, "{name}: {c:?}");
        // No request waited because every connection was busy: the pool
        // grew ahead of the load.
        assert_eq!(c.waits.busy, 0, "{name}: {c:?}\n{text}");
        let p = &c.connections;
        assert_eq!(p.initial, 10, "{name}: {p:?}");
        assert!((40..=200).contains(&p.peak), "{name}: {p:?}");
        assert_eq!(p.peak, p.initial + p.opened_on_demand, "{name}: {p:?}");
        assert_nothing_waited(&o, 20.0, name, &text);
        assert!(
            text.contains("Connections: 10 at start, peak "),
            "{name}: {text}"
        );
    }
}

#[test]
fn a_fixed_pool_keeps_to_its_size_and_says_what_the_rate_needs() {
    let _g = serial();
    for (name, flags) in PROTOCOLS {
        let srv = slow_target(!flags.is_empty());
        let args = [flags, &["-t2", "-c10", "-R2000", "-d3s"]].concat();
        let (o, text) = bench_at(&args, &url(&srv, "/"));
        let c = &o.stats.counters;
        assert!(c.balanced(), "{name}: {c:?}");
        // Ten connections at 20 ms carry 500 requests a second: most of
        // the 6000 due were never sent, and the rest waited.
        assert!(c.never_sent > 3000, "{name}: {c:?}");
        assert!(c.waits.busy > 1000, "{name}: {c:?}");
        assert_eq!(c.connections.opened_on_demand, 0, "{name}: {c:?}");
        assert_eq!(c.connections.peak, 10, "{name}: {c:?}");
        // The warning says how many the rate needs, from what it saw.
        let needed = connections_named(&text)
            .unwrap_or_else(|| panic!("{name}: no number of connections in:\n{text}"));
        assert!((35..=60).contains(&needed), "{name}: {needed}\n{text}");
    }
}

/// The number in the warning's "about N connections are busy at once".
fn connections_named(text: &str) -> Option<u64> {
    let at = text.find(" connections are busy at once")?;
    text[..at].rsplit(' ').next()?.parse().ok()
}

#[test]
fn growing_needs_rate_mode_and_a_ceiling_above_the_start() {
    for (args, want) in [
        (
            &["-c", "auto", "-d1s"][..],
            "-c auto grows the connections for requests that fall due with every stream busy, which only rate mode has: add -R, or give -c a number",
        ),
        (
            &["--max-connections", "50", "-d1s"],
            "--max-connections grows the connections",
        ),
        (
            &["-c", "20", "--max-connections", "10", "-R100", "-d1s"],
            "--max-connections 10 is below -c 20",
        ),
    ] {
        let out = metron(&[args, &["http://127.0.0.1:1/"]].concat());
        assert!(!out.status.success(), "{args:?}");
        let err = one_line_error(&out);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // A word that is not a count is a usage error (exit status 2).
    let out = metron(&["-c", "lots", "-d1s", "http://127.0.0.1:1/"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("-c takes a number of connections or auto") && err.lines().count() == 1,
        "{err}"
    );
}
