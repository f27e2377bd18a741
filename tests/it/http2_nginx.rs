//! The load generator over HTTP/2 against a real server: nginx, started by
//! each test on 127.0.0.1 with ports, files and logs of its own, speaking
//! h2c (prior knowledge) on one port and h2 by ALPN over TLS on another.
//! nginx's access log is the server's own account of the run: which
//! connection each request came on, when it began and ended, and what it
//! was.
//!
//! nginx must be installed with its http_v2 module, as Debian's is
//! (`apt-get install nginx`). Without it these tests say so and pass,
//! except under CI (`.ci/run` installs it), where they fail.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::nginx::*;
use crate::common::*;
use metron::serve::ServeConfig;

/// Closed loop and rate mode over h2c: every request accounted for, none
/// lost, and nginx's log agrees with metron's counts.
#[test]
fn h2c_closed_loop_and_rate_mode_are_clean() {
    let _g = serial();
    let Some(ngx) = Nginx::start(Options::default()) else {
        return;
    };
    let u = ngx.h2c_url("/");
    let (o, _) = bench(&["--http2", "-t1", "-c2", "-m10", "-d1s", &u]);
    assert_clean(&o);
    assert_log_matches(&o, &ngx.access_log(), 20);

    let Some(ngx) = Nginx::start(Options::default()) else {
        return;
    };
    let u = ngx.h2c_url("/");
    let (o, _) = bench(&["--http2", "-t1", "-c2", "-R500", "-d2s", &u]);
    assert_clean(&o);
    let c = &o.stats.counters;
    assert_eq!(c.due, 1000, "{c:?}");
    assert_eq!(c.completed + c.in_flight, c.due, "{c:?}");
    assert_log_matches(&o, &ngx.access_log(), 200);
}

/// The closed loop multiplexes: nginx sees no more than -c connections,
/// and while each response waits 20 ms for the upstream it has more
/// requests at once than there are connections, several on one
/// connection.
#[test]
fn requests_share_connections_at_once() {
    let _g = serial();
    let upstream = server(ServeConfig {
        delay: Duration::from_millis(20),
        ..ServeConfig::default()
    });
    let Some(ngx) = Nginx::start(Options {
        upstream: Some(upstream.addr()),
        ..Options::default()
    }) else {
        return;
    };
    let u = ngx.h2c_url("/slow");
    let (o, _) = bench(&["--http2", "-t1", "-c2", "-m8", "-d1s", &u]);
    assert_clean(&o);
    let log = ngx.access_log();
    assert_log_matches(&o, &log, 16);
    // The pre-flight's connection sends no request, so it is not logged.
    let conns = per_connection(&log);
    assert!(conns.len() <= 2, "{conns:?}");
    let all: Vec<&Logged> = log.iter().collect();
    let together = most_at_once(&all);
    assert!(
        together > 2,
        "nginx never had more requests at once than -c 2: {together}"
    );
    let on_one = conns
        .keys()
        .map(|&c| most_at_once(&log.iter().filter(|l| l.connection == c).collect::<Vec<_>>()))
        .max()
        .unwrap_or(0);
    assert!(on_one > 1, "no connection carried two requests at once");
    // 16 streams, each answered in about 20 ms.
    assert!(o.stats.counters.completed > 200, "{:?}", o.stats.counters);
}

/// Over TLS: --http2 gets h2 by ALPN, --alpn h2,http/1.1 lets the server
/// choose (and the JSON says what it chose), and --http2 against a port
/// without HTTP/2 is one line that says so.
#[test]
fn tls_negotiates_http2_by_alpn() {
    let _g = serial();
    let Some(ngx) = Nginx::start(Options::default()) else {
        return;
    };
    let ca = ngx.cacert();
    let u = ngx.tls_url("/");
    let (o, _) = bench(&["--http2", "--cacert", &ca, "-t1", "-c2", "-m10", "-d1s", &u]);
    assert_clean(&o);
    assert_eq!(o.protocol.to_string(), "HTTP/2");
    assert_log_matches(&o, &ngx.access_log(), 20);

    assert_eq!(
        json_protocol(&["--alpn", "h2,http/1.1", "--cacert", &ca], &u),
        "HTTP/2"
    );
    let h1 = ngx.tls_h1_url("/");
    assert_eq!(
        json_protocol(&["--alpn", "h2,http/1.1", "--cacert", &ca], &h1),
        "HTTP/1.1"
    );

    let err = one_line_error(&metron(&["--http2", "--cacert", &ca, "-d1s", &h1]));
    assert!(err.contains("did not choose h2 by ALPN"), "{err}");
    assert!(err.contains("no_application_protocol"), "{err}");
}

/// nginx closes a connection with GOAWAY after keepalive_requests streams;
/// requests sent past its last stream are sent again on a new connection,
/// not lost, and the books still balance.
#[test]
fn goaway_after_keepalive_requests_loses_nothing() {
    let _g = serial();
    let Some(ngx) = Nginx::start(Options {
        keepalive_requests: Some(200),
        ..Options::default()
    }) else {
        return;
    };
    let u = ngx.h2c_url("/");
    let (o, _) = bench(&["--http2", "-t1", "-c2", "-m50", "-d2s", &u]);
    assert_clean(&o);
    let h2 = &o.stats.counters.http2;
    // nginx's GOAWAY after keepalive_requests is a graceful one.
    assert!(h2.goaway.total() > 0, "{h2:?}");
    assert_eq!(h2.goaway.get(0), h2.goaway.total(), "{h2:?}");
    assert_eq!(h2.connection_errors, 0, "{h2:?}");
    let log = ngx.access_log();
    assert_log_matches(&o, &log, 100);
    let conns = per_connection(&log);
    assert!(
        conns.len() > 2,
        "nginx never closed a connection: {conns:?}"
    );
    assert!(conns.values().all(|&n| n <= 200), "{conns:?}");
}

/// A Lua script's requests go out as HTTP/2 streams: post.lua's method,
/// body and header, and counter.lua's path per request.
#[test]
fn scripts_shape_http2_requests() {
    let _g = serial();
    let Some(log) = scripted_run("post.lua", "/submit") else {
        return;
    };
    let body = r#"{"name":"metron","n":1}"#.len() as u64;
    for l in &log {
        let request = (l.method.as_str(), l.uri.as_str(), l.content_length);
        assert_eq!(request, ("POST", "/submit", Some(body)), "{l:?}");
    }

    let Some(log) = scripted_run("counter.lua", "/") else {
        return;
    };
    let paths: BTreeSet<&str> = log.iter().map(|l| l.uri.as_str()).collect();
    assert_eq!(paths.len(), log.len(), "a path repeated");
    let expected: BTreeSet<String> = (0..log.len()).map(|i| format!("/item/{i}")).collect();
    let expected: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    assert_eq!(paths, expected);
}
