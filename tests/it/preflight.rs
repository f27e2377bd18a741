//! The pre-flight against servers that cannot take the run as it was
//! asked for: one that allows no HTTP/2 stream (the built-in target with
//! `--h2-max-streams 0`, over h2c and TLS), one that speaks HTTP/2 only
//! (nghttpd, cleartext and TLS) asked for HTTP/1.1, one that speaks
//! HTTP/1.1 only asked for h2 by `--alpn`. Each is one line before the
//! run, naming the flag the user gave; and the server's stream limit
//! reaches the prepared run.

use std::time::{Duration, Instant};

use clap::Parser;
use metron::cli::config::Config;
use metron::cli::BenchArgs;
use metron::engine::setup::Protocol;
use metron::engine::Stop;
use metron::serve::{BadCert, Http2, ServeConfig, Server};

use crate::common::servers::{self, Nghttpd};
use crate::common::*;

/// The built-in target over HTTP/2, allowing `max_streams` streams, over
/// TLS (self-signed) or h2c; and the arguments that reach it.
fn h2_server(max_streams: u32, tls: bool) -> (Server, Vec<String>) {
    let srv = server(ServeConfig {
        http2: Some(Http2 {
            max_streams: Some(max_streams),
            ..Http2::default()
        }),
        tls: tls.then_some(BadCert::Untrusted),
        ..ServeConfig::default()
    });
    let mut args = vec!["--http2".to_string()];
    if tls {
        args.push("-k".into());
    }
    args.push(format!("{}/", srv.url()));
    (srv, args)
}

/// Regression: against a server whose SETTINGS allow 0 streams the run
/// lasted its whole duration, sent nothing, and blamed the generator.
#[test]
fn a_server_that_allows_no_streams_is_refused_before_the_run() {
    for tls in [false, true] {
        let (srv, args) = h2_server(0, tls);
        let mut argv = vec!["-t1", "-c2", "-d10s"];
        argv.extend(args.iter().map(String::as_str));
        let began = Instant::now();
        let out = metron(&argv);
        // The banner waits for the pre-flight: a run that cannot start
        // prints its error alone.
        assert_eq!(stdout(&out), "", "tls {tls}");
        let err = one_line_error(&out);
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "tls {tls}: the run went on"
        );
        assert_eq!(
            err,
            format!(
                "metron: the server at {} allows no HTTP/2 streams (its \
                 SETTINGS_MAX_CONCURRENT_STREAMS is 0), so no request could be sent; raise its \
                 limit, or drop --http2 to load it over HTTP/1.1 if it speaks that too\n",
                srv.addr()
            ),
            "tls {tls}"
        );
    }
}

/// The server's SETTINGS_MAX_CONCURRENT_STREAMS, read by the pre-flight,
/// is in the prepared run for the banner: `-m 500` against a server that
/// allows 128 keeps 128.
#[test]
fn the_servers_stream_limit_reaches_the_prepared_run() {
    for tls in [false, true] {
        let (_srv, args) = h2_server(128, tls);
        let mut argv = vec!["metron", "-t1", "-c1", "-d1s", "-m", "500"];
        argv.extend(args.iter().map(String::as_str));
        let cfg = Config::from_args(&BenchArgs::try_parse_from(&argv).unwrap()).unwrap();
        let prepared = metron::engine::prepare(&cfg.run, &Stop::new(), None).unwrap();
        let host = prepared.hosts()[0];
        assert_eq!(
            (host.protocol, host.server_limit, host.streams),
            (Protocol::Http2, Some(128), Some(128)),
            "tls {tls}"
        );
    }
    // The banner, printed after the pre-flight, says so.
    let (_srv, args) = h2_server(128, false);
    let mut argv = vec!["-t1", "-c1", "-d1s", "-R10", "-m", "500"];
    argv.extend(args.iter().map(String::as_str));
    let out = stdout(&metron(&argv));
    assert!(
        out.contains(
            "  1 threads and 1 connections (HTTP/2, up to 128 streams each: the server's \
             limit, below -m 500)\n"
        ),
        "{out}"
    );
}

/// Regression: HTTP/1.1 to nghttpd (HTTP/2 only) made 0 requests and 100
/// read errors and exited 0. nghttpd sends its SETTINGS as soon as it
/// accepts (cleartext), or closes a TLS connection whose ALPN chose no h2:
/// the pre-flight hears either without sending a request, and says what
/// to add. With --http2 the same servers are loaded.
#[test]
fn http1_to_an_http2_only_server_says_to_add_http2() {
    if !servers::openssl_ready() {
        return;
    }
    let dir = TempDir::new("preflight-h2only");
    let (cert, key) = servers::self_signed(
        dir.path(),
        "server",
        "localhost",
        "DNS:localhost,IP:127.0.0.1",
    );
    let Some(clear) = Nghttpd::start(None) else {
        return;
    };
    let Some(secure) = Nghttpd::start(Some((&cert, &key))) else {
        return;
    };
    let cacert = cert.to_str().unwrap();
    let h2c = format!("http://127.0.0.1:{}/", clear.port);
    let h2 = format!("https://127.0.0.1:{}/", secure.port);
    let cases: [(&[&str], &str, &str); 3] = [
        (&[], &h2c, "add --http2"),
        (&["--cacert", cacert], &h2, "add --http2"),
        (
            &["--cacert", cacert, "--alpn", "http/1.1"],
            &h2,
            "use --http2 instead of --alpn http/1.1",
        ),
    ];
    for (args, u, fix) in cases {
        let mut argv = vec!["-t1", "-c2", "-d5s"];
        argv.extend_from_slice(args);
        argv.push(u);
        let err = one_line_error(&metron(&argv));
        let addr = u
            .trim_start_matches("http://")
            .trim_start_matches("https://");
        let want = format!(
            "metron: the server at {} speaks HTTP/2 only: {fix}\n",
            addr.trim_end_matches('/')
        );
        assert_eq!(err, want, "{argv:?}");
    }

    let _g = serial();
    for args in [
        vec!["--http2", &h2c],
        vec!["--http2", "--cacert", cacert, &h2],
    ] {
        let mut argv = vec!["-t1", "-c2", "-R50", "-d1s"];
        argv.extend_from_slice(&args);
        let (o, _) = bench(&argv);
        assert_balanced(&o);
        let c = &o.stats.counters;
        assert_eq!(
            (c.completed, c.errors.lost_requests()),
            (50, 0),
            "{args:?}: {c:?}"
        );
    }
}

/// Regression: `--alpn h2` against an HTTP/1.1-only server said "drop
/// --http2", a flag not given; the error names the flag that was.
#[test]
fn a_refused_offer_names_the_flag_given() {
    let srv = server(ServeConfig {
        tls: Some(BadCert::Untrusted),
        ..ServeConfig::default()
    });
    let u = format!("{}/", srv.url());
    for flag in [&["--alpn", "h2"][..], &["--http2"][..]] {
        let mut argv = vec!["-t1", "-c1", "-d1s", "-k"];
        argv.extend_from_slice(flag);
        argv.push(&u);
        let err = one_line_error(&metron(&argv));
        let given = flag.join(" ");
        assert_eq!(
            err,
            format!(
                "metron: the server at {} did not choose h2 by ALPN (it chose none); it may not \
                 speak HTTP/2 over TLS: drop {given}, or offer both with --alpn h2,http/1.1\n",
                srv.addr()
            )
        );
    }
}

/// Regression: `--grpc` against an HTTP/1.1-only server said "drop
/// --http2", a flag not given, and over TLS "offer both with --alpn
/// h2,http/1.1", which `--grpc` refuses. gRPC has no HTTP/1.1 to fall back
/// to: the error says the server does not speak HTTP/2 and that gRPC needs
/// it. The same for a server that allows no stream.
#[test]
fn grpc_to_a_server_without_http2_says_grpc_needs_it() {
    let proto = crate::common::grpcio::PROTO;
    let grpc = ["--grpc", "greet.Greeter/SayHello", "--proto", proto];
    let plain = server(ServeConfig::default());
    let secure = server(ServeConfig {
        tls: Some(BadCert::Untrusted),
        ..ServeConfig::default()
    });
    let (no_streams, _) = h2_server(0, false);
    let needs =
        "gRPC runs over HTTP/2 only: check that the URL names a gRPC server's host and port";
    let cases = [
        (
            format!("{}/", plain.url()),
            format!(
                "the server at {} does not speak HTTP/2 with prior knowledge (h2c): it answered \
                 in HTTP/1; {needs} (an https:// URL for one that takes TLS)",
                plain.addr()
            ),
        ),
        (
            format!("{}/", secure.url()),
            format!(
                "the server at {} did not choose h2 by ALPN (it chose none); it does not speak \
                 HTTP/2 over TLS, and {needs}",
                secure.addr()
            ),
        ),
        (
            format!("{}/", no_streams.url()),
            format!(
                "the server at {} allows no HTTP/2 streams (its SETTINGS_MAX_CONCURRENT_STREAMS \
                 is 0), so no request could be sent; raise its limit (gRPC runs over HTTP/2 \
                 only)",
                no_streams.addr()
            ),
        ),
    ];
    for (u, want) in cases {
        for extra in [&[][..], &["--http2"][..]] {
            let mut argv = vec!["-t1", "-c1", "-d1s"];
            if u.starts_with("https") {
                argv.push("-k");
            }
            argv.extend_from_slice(&grpc);
            argv.extend_from_slice(extra);
            argv.push(&u);
            let err = one_line_error(&metron(&argv));
            assert_eq!(err, format!("metron: {want}\n"), "{argv:?}");
            assert!(!err.contains("--alpn") && !err.contains("drop"), "{err}");
        }
    }
}
