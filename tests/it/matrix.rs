//! The truth matrix: every protocol (the rows of `common::matrix`:
//! HTTP/1.1, h2c, h2, HTTP/3, gRPC) against every behaviour of a server
//! that tests a load generator's honesty: fewer streams than `-m`,
//! requests that time out, resets, GOAWAY, a stop and restart, nothing
//! listening, a refused certificate, a refused client certificate, a
//! connection limit.
//!
//! Each cell checks what the issue of truth asks: the books balance (every
//! due request in exactly one bucket); every request that went on the wire
//! has exactly one send lag, and no latency is larger than a send lag plus
//! an uncorrected latency can make it (so no time hides between the two);
//! the server's own count agrees with metron's; and the words of the
//! report, or its one-line error, name the cause. Behaviours, not speed:
//! the bounds on latency are multiples of the server's own delay.

use std::sync::Arc;
use std::time::Duration;

use metron::engine::Outcome;
use metron::serve::{
    BadCert, Beyond, Fault, FaultPlan, Http2, Http3, Pick, ServeConfig, ServerStats,
};

use crate::common::files::schema_errors;
use crate::common::matrix::matrix;
use crate::common::tls::Pki;
use crate::common::*;

/// HTTP/2's INTERNAL_ERROR and HTTP/3's H3_INTERNAL_ERROR: resets that
/// lose the request (not a refusal, which would send it again).
const H2_INTERNAL_ERROR: u32 = 0x2;
const H3_INTERNAL_ERROR: u64 = 0x102;

/// What every run must show, whatever the server did.
fn truthful(o: &Outcome, text: &str) {
    let c = &o.stats.counters;
    assert!(c.balanced(), "the books do not balance: {c:?}\n{text}");
    // Every request that went on the wire has one send lag: those that
    // ended (answered or lost) and those still in flight, and any that
    // the server turned away unprocessed and that the run's end then
    // found waiting to go again (counted never sent, its send lag kept).
    let went = c.completed + c.errors.lost_requests() + c.in_flight;
    let lags = o.stats.send_lag.len();
    assert!(
        went <= lags && lags <= went + c.http2.retried,
        "send lags: {lags} for {went} requests that went: {c:?}\n{text}"
    );
    // Each latency is its send lag plus its uncorrected latency, so none
    // exceeds the largest of each added up (2 µs for the timer's
    // resolution, and HdrHistogram's 3 digits).
    if c.completed > 0 {
        let (corrected, lag, uncorrected) = (
            o.stats.latency.max(),
            o.stats.send_lag.max(),
            o.stats.uncorrected.max(),
        );
        let bound = (lag + uncorrected) as f64 * 1.002 + 2.0;
        assert!(
            corrected as f64 <= bound,
            "latency max {corrected} us > send lag max {lag} + uncorrected max {uncorrected}\n{text}"
        );
    }
}

/// The server's count of responses it chose to send agrees with metron's:
/// every completed response was sent, and a response metron did not see
/// complete was to a request it lost or still had in flight.
fn counts_agree(o: &Outcome, answered: u64, text: &str) {
    let c = &o.stats.counters;
    let upper = c.completed + c.in_flight + c.errors.lost_requests();
    assert!(
        c.completed <= answered && answered <= upper,
        "the server answered {answered}; metron completed {} ({c:?})\n{text}",
        c.completed
    );
}

/// A target whose every response takes `delay`.
fn delayed(delay: Duration) -> ServeConfig {
    ServeConfig {
        delay,
        ..ServeConfig::default()
    }
}

matrix! {
    /// A server that grants 5 streams on a connection, fewer than -m's
    /// 100, answering in 20 ms. At 1000 requests/s on 10 connections (50
    /// streams, twice what the rate needs) every request goes out on its
    /// own time: the session offers only the streams the server has
    /// granted, so none waits inside it for a grant while counted as sent.
    fn fewer_streams_than_m(row) in [h2c, h2, http3, grpc] {
        let _g = serial();
        let srv = row.server(row.with_streams(5, delayed(Duration::from_millis(20))));
        let (o, text) = row.bench(&srv, &["-t1", "-c10", "-R1000", "-d3s"]);
        truthful(&o, &text);
        counts_agree(&o, srv.stats().responses_total(), &text);
        assert!(text.contains("up to 5 streams each: the server's limit"), "{text}");
        // 5 times the server's delay; a request held for a stream the
        // server had not granted waited hundreds of milliseconds.
        let p99 = o.stats.latency.value_at_quantile(0.99);
        assert!(p99 < 100_000, "p99 {p99} us for a server that answers in 20 ms\n{text}");
        assert_eq!(o.stats.counters.errors.lost_requests(), 0, "{text}");
    }
}

matrix! {
    /// Every response takes 1 s and metron gives up after 250 ms: every
    /// request sent times out, its stream (or, over HTTP/1.1, its
    /// connection) is given back, and the next requests go out on time:
    /// none is left never sent, and the report says timeout.
    fn timeouts_give_every_stream_back(row) {
        let _g = serial();
        let srv = row.server(delayed(Duration::from_secs(1)));
        let flags = ["-t1", "-c40", "-R40", "-d2s", "--timeout", "250ms"];
        let (o, text) = row.bench(&srv, &flags);
        truthful(&o, &text);
        let c = &o.stats.counters;
        assert_eq!(c.completed, 0, "{text}");
        assert_eq!(c.never_sent, 0, "{text}");
        assert!(c.errors.timeout >= c.due - c.in_flight - 1, "{c:?}\n{text}");
        assert!(text.contains("timeout"), "{text}");
        // The server read every request that timed out.
        assert!(srv.stats().requests() >= c.errors.timeout, "{c:?}");
    }
}

matrix! {
    /// The server resets every 5th request (the connection over
    /// HTTP/1.1, the stream otherwise): each reset is one request lost as
    /// reset, as many as the server says it reset, and the rest complete.
    fn resets_are_counted_as_the_server_made_them(row) {
        let _g = serial();
        let pick = Some(Pick::Every(5));
        let cfg = match row {
            Row::Http1 => ServeConfig {
                fault: Some(FaultPlan::every(Fault::Reset, 5)),
                ..ServeConfig::default()
            },
            Row::Http3 => ServeConfig {
                http3: Some(Http3 {
                    reset: pick,
                    reset_code: Some(H3_INTERNAL_ERROR),
                    ..Http3::default()
                }),
                ..ServeConfig::default()
            },
            _ => ServeConfig {
                http2: Some(Http2 {
                    reset: pick,
                    reset_code: Some(H2_INTERNAL_ERROR),
                    ..Http2::default()
                }),
                ..ServeConfig::default()
            },
        };
        let srv = row.server(cfg);
        let (o, text) = row.bench(&srv, &["-t1", "-c4", "-R200", "-d2s"]);
        truthful(&o, &text);
        let stats = srv.stats();
        let reset = match row {
            Row::Http1 => stats.faults(),
            Row::Http3 => stats.h3_resets(),
            _ => stats.h2_resets(),
        };
        let c = &o.stats.counters;
        assert!(reset > 0, "{text}");
        // A connection reset before it answered anything is counted apart
        // (closed before answering), and a reset still on its way when
        // the run ended was of a request in flight.
        let counted = c.read_causes.reset + c.read_causes.closed_unanswered;
        assert!(counted <= reset && reset <= counted + c.in_flight, "{reset} reset: {c:?}\n{text}");
        assert_eq!(c.connections.server_accepted, None, "no connection limit: {c:?}\n{text}");
        counts_agree(&o, stats.responses_total(), &text);
        assert!(text.contains("reset"), "{text}");
    }
}

matrix! {
    /// The server retires each connection after 10 requests (HTTP/2's
    /// and HTTP/3's GOAWAY, HTTP/1.1's `Connection: close`): nothing is
    /// lost, requests it never processed go out again, and every reopen
    /// is counted as a retirement.
    fn goaway_loses_nothing_and_counts_each_reopen(row) {
        let _g = serial();
        let cfg = match row {
            Row::Http1 => ServeConfig {
                close_every: Some(10),
                ..ServeConfig::default()
            },
            Row::Http3 => ServeConfig {
                http3: Some(Http3 {
                    goaway_after: Some(10),
                    ..Http3::default()
                }),
                ..ServeConfig::default()
            },
            _ => ServeConfig {
                http2: Some(Http2 {
                    goaway_after: Some(10),
                    ..Http2::default()
                }),
                ..ServeConfig::default()
            },
        };
        let srv = row.server(cfg);
        let (o, text) = row.bench(&srv, &["-t1", "-c4", "-R200", "-d2s"]);
        truthful(&o, &text);
        counts_agree(&o, srv.stats().responses_total(), &text);
        let c = &o.stats.counters;
        assert_eq!(c.errors.lost_requests() + c.never_sent, 0, "{c:?}\n{text}");
        // 400 requests, 10 to a connection: about 40 retirements.
        assert!(c.reopens.retired >= 30, "{c:?}\n{text}");
        assert_eq!(c.reconnects, c.reopens.retired, "{c:?}\n{text}");
    }
}

matrix! {
    /// The server stops 0.5 s into a 3 s run and starts again on the same
    /// port 0.6 s later: the connects it refused meanwhile are counted by
    /// cause, every connection reopened after it closed or reset them is
    /// counted, and the run goes on once it is back.
    fn a_stop_counts_refused_connects_and_every_reopen(row) {
        let _g = serial();
        let cfg = row.config(ServeConfig::default());
        let first = server(cfg.clone());
        let addr = first.addr();
        let first_stats: Arc<ServerStats> = first.stats();
        let restarted = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            first.shutdown();
            std::thread::sleep(Duration::from_millis(600));
            server(ServeConfig { listen: addr, ..cfg })
        });
        // A stand-in with the same address, for the URL.
        let (o, text) = {
            let args = row.args_to(addr, &["-t1", "-c4", "-R100", "-d3s"]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            bench(&args)
        };
        let second = restarted.join().unwrap();
        truthful(&o, &text);
        let c = &o.stats.counters;
        assert!(c.connect_causes.refused > 0, "{c:?}\n{text}");
        // The 4 connections open at the stop were each reopened once.
        assert!(c.reconnects >= 4, "{c:?}\n{text}");
        let reopened: u64 = c.reopens.named().iter().map(|(_, n)| n).sum();
        assert_eq!(reopened, c.reconnects, "{c:?}\n{text}");
        assert!(c.completed > c.due / 2, "{c:?}\n{text}");
        assert!(text.contains("refused"), "{text}");
        let answered = first_stats.responses_total() + second.stats().responses_total();
        counts_agree(&o, answered, &text);
    }
}

matrix! {
    /// The server stops 0.5 s into a 2 s run at 500 requests/s under -c
    /// auto and never comes back: the pool does not grow a connection for
    /// every request that waits (each would only be refused), and the
    /// report names the refused connects.
    fn a_pool_that_may_grow_stops_growing_when_connects_are_refused(row) {
        let _g = serial();
        let srv = server(row.config(ServeConfig::default()));
        let addr = srv.addr();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            srv.shutdown();
        });
        let (o, text) = {
            let one = row.one_stream();
            let args = row.args_to(addr, &[one, &["-t1", "-c", "auto", "-R500", "-d2s"]].concat());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            bench(&args)
        };
        stopper.join().unwrap();
        truthful(&o, &text);
        let c = &o.stats.counters;
        assert!(c.connect_causes.refused > 0, "{c:?}\n{text}");
        // Some 750 requests waited for a connection after the stop.
        assert!(c.never_sent > 500, "{c:?}\n{text}");
        assert!(c.connections.peak <= 32, "{c:?}\n{text}");
        assert!(text.contains("connect refused"), "{text}");
    }
}

matrix! {
    /// Nothing listens at the URL's port: one line says so, with the fix,
    /// and the run does not start.
    fn nothing_listening_is_one_line(row) {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let args = row.args_to(port, &["-t1", "-c1", "-d1s"]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = crate::common::tls::refusal(&args);
        assert!(!err.contains('\n'), "{err}");
        let named = match row {
            Row::Http3 => "nothing listens on UDP port",
            _ => "is the server running?",
        };
        assert!(err.contains(named), "{err}");
    }
}

matrix! {
    /// A server certificate no authority here vouches for: refused before
    /// the run, in one line naming --cacert and -k.
    fn an_untrusted_certificate_is_one_line(row) in [h2, http3] {
        let srv = row.server(ServeConfig {
            tls: Some(BadCert::Untrusted),
            ..ServeConfig::default()
        });
        let args = row.args(&srv, &["-t1", "-c1", "-d1s"], false);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = crate::common::tls::refusal(&args);
        assert!(!err.contains('\n'), "{err}");
        assert!(err.contains("--cacert") && err.contains("-k"), "{err}");
    }
}

matrix! {
    /// A server that requires a client certificate: without one, and with
    /// one from an authority it does not trust, the run is refused in one
    /// line that names --cert, as over every protocol.
    fn a_refused_client_certificate_is_one_line(row) in [h2, http3] {
        let pki = Pki::new();
        let srv = row.tls_server(&pki, Some(&pki.ca)).expect("a TLS row");
        let url = row.args(&srv, &[], false).pop().unwrap();
        let proto: &[&str] = match row {
            Row::Http3 => &["--http3"],
            _ => &["--http2"],
        };
        let base = [proto, &["-t1", "-c1", "-d1s", "--cacert", &pki.ca]].concat();
        let none = crate::common::tls::refusal(&[&base[..], &[&url]].concat());
        assert!(none.contains("requires a client certificate") && none.contains("--cert"), "{none}");
        let stranger = [&base[..], &["--cert", &pki.stranger_cert, "--key", &pki.stranger_key, &url]].concat();
        let refused = crate::common::tls::refusal(&stranger);
        assert!(refused.contains("refused the client certificate of --cert"), "{refused}");
        for err in [none, refused] {
            assert!(!err.contains('\n'), "{err}");
        }
        // With the right one, the run completes.
        let good = [&base[..], &["-R20", "--cert", &pki.client_cert, "--key", &pki.client_key, &url]].concat();
        let (o, text) = bench(&good);
        truthful(&o, &text);
        assert_eq!(o.stats.counters.completed, 20, "{text}");
    }
}

matrix! {
    /// A server that serves 4 connections at once and turns the others
    /// away (closed unanswered, or the QUIC handshake refused), answering
    /// in 50 ms, under -c auto at 200 requests/s (10 connections' worth):
    /// the pool stops near the 4 that worked instead of growing without
    /// end, and the report says the server accepted about 4.
    fn the_pool_stops_at_the_servers_connection_limit(row) {
        let _g = serial();
        let srv = row.server(ServeConfig {
            max_connections: Some(4),
            ..delayed(Duration::from_millis(50))
        });
        let one = row.one_stream();
        let flags = [one, &["-t1", "-c", "auto", "-R200", "-d3s"]].concat();
        let (o, text) = row.bench(&srv, &flags);
        truthful(&o, &text);
        counts_agree(&o, srv.stats().responses_total(), &text);
        let pool = o.stats.counters.connections;
        assert_eq!(pool.server_accepted, Some(4), "{pool:?}\n{text}");
        assert!(pool.peak <= 12, "{pool:?}\n{text}");
        assert!(srv.stats().turned_away() > 0);
        assert!(text.contains("the server accepted about 4 connections"), "{text}");
        assert!(text.contains("--max-connections 4"), "{text}");
    }
}

matrix! {
    /// A server that takes 8 connections and closes the rest as they
    /// open, under -c12 at 20 requests/s, which keep one or two of them
    /// busy: its limit is the 8 whose handshakes it completed, not the
    /// few a slow rate has answering.
    fn the_limit_counts_the_connections_the_server_took(row) in [h2, http3] {
        let _g = serial();
        let srv = row.server(ServeConfig {
            max_connections: Some(8),
            ..delayed(Duration::from_millis(10))
        });
        let one = row.one_stream();
        let flags = [one, &["-t1", "-c12", "-R20", "-d2s"]].concat();
        let (o, text) = row.bench(&srv, &flags);
        truthful(&o, &text);
        counts_agree(&o, srv.stats().responses_total(), &text);
        let pool = o.stats.counters.connections;
        assert_eq!(pool.server_accepted, Some(8), "{pool:?}\n{text}");
        assert!(text.contains("the server accepted about 8 of the 12 connections"), "{text}");
    }
}

matrix! {
    /// A server that serves 4 connections at once and leaves the others
    /// waiting, unread, as a listen backlog does (their TLS or QUIC
    /// handshake, or the server's HTTP/2 SETTINGS, never answered),
    /// answering in 50 ms, under -c auto at 200 requests/s: the pool
    /// stops instead of growing without end, a handshake left waiting
    /// fails as a connect that timed out, and the report says the server
    /// accepted about 4.
    fn the_pool_stops_at_a_server_that_leaves_connections_waiting(row) {
        let _g = serial();
        let srv = row.server(ServeConfig {
            max_connections: Some(4),
            beyond_limit: Beyond::Hold,
            ..delayed(Duration::from_millis(50))
        });
        let one = row.one_stream();
        let flags = [one, &["-t1", "-c", "auto", "-R200", "-d3s", "--timeout", "1s"]].concat();
        let (o, text) = row.bench(&srv, &flags);
        truthful(&o, &text);
        counts_agree(&o, srv.stats().responses_total(), &text);
        let c = &o.stats.counters;
        assert_eq!(c.connections.server_accepted, Some(4), "{c:?}\n{text}");
        // Each new connection is seen waiting after 250 ms at the least,
        // while one opens every 5 ms: some 50 at most.
        assert!(c.connections.peak <= 64, "{c:?}\n{text}");
        assert!(text.contains("the server accepted about 4 connections"), "{text}");
        // Over plain HTTP/1.1 the connection opens and its request waits
        // unanswered; elsewhere the opening itself waits.
        match row {
            Row::Http1 => assert!(c.timeout_unanswered > 0, "{c:?}\n{text}"),
            _ => assert!(c.connect_causes.timeout > 0, "{c:?}\n{text}"),
        }
    }
}

matrix! {
    /// A server with no connection limit that leaves every 20th request
    /// unanswered: new connections open while those requests wait out
    /// --timeout, and now and then a new connection's first request is
    /// one of them. That is no connection limit: the pool grows as the
    /// rate needs, and the report names no limit.
    fn requests_left_unanswered_are_no_connection_limit(row) in [http1, h2c, http3] {
        let _g = serial();
        let srv = row.server(ServeConfig {
            fault: Some(FaultPlan::every(Fault::NeverAnswer, 20)),
            ..delayed(Duration::from_millis(20))
        });
        let one = row.one_stream();
        let flags = [one, &["-t1", "-c2", "--max-connections", "200", "-R1000", "-d3s", "--timeout", "500ms"]].concat();
        let (o, text) = row.bench(&srv, &flags);
        truthful(&o, &text);
        let c = &o.stats.counters;
        assert_eq!(c.connections.server_accepted, None, "{c:?}\n{text}");
        assert_eq!(c.timeout_unanswered, 0, "{c:?}\n{text}");
        assert!(c.never_sent < c.due / 100, "{c:?}\n{text}");
        assert!(!text.contains("the server accepted about"), "{text}");
    }
}

matrix! {
    /// A request the protocol cannot carry (CONNECT opens a tunnel) ends
    /// the run in one line that names the protocol and the flag the user
    /// typed for it.
    fn a_request_the_protocol_cannot_carry_names_its_flag(row) in [h2c, h2, http3] {
        let _g = serial();
        let srv = row.server(ServeConfig::default());
        let dir = TempDir::new("unfit");
        let script = dir.file("connect.lua", "wrk.method = \"CONNECT\"\n");
        let args = row.args(&srv, &["-t1", "-c1", "-d1s", "-s", &script], true);
        let o = metron(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let err = stderr(&o);
        let (name, flag) = match row {
            Row::Http3 => ("HTTP/3", "--http3"),
            _ => ("HTTP/2", "--http2"),
        };
        assert!(err.contains(&format!("cannot be sent over {name}: CONNECT")), "{err}");
        assert!(err.trim_end().ends_with(&format!("or drop {flag}")), "{err}");
        assert_ne!(o.status.code(), Some(0));
    }
}

matrix! {
    /// The JSON document of a run in every protocol follows the published
    /// schema (docs/result.schema.json), names the protocol spoken and
    /// the one offered, and the arrival process of rate mode.
    fn the_document_follows_its_schema(row) {
        let _g = serial();
        let srv = row.server(ServeConfig::default());
        let flags = ["-t1", "-c2", "-R200", "-d1s", "--arrival", "poisson", "--seed", "3", "--json", "-"];
        let o = metron(&row.args(&srv, &flags, true).iter().map(String::as_str).collect::<Vec<_>>());
        assert!(o.status.success(), "{}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON document");
        let errors = schema_errors(&doc);
        assert!(errors.is_empty(), "{errors:#?}");
        let (spoken, offered) = match row {
            Row::Http1 => ("HTTP/1.1", serde_json::json!(["HTTP/1.1"])),
            Row::Http3 => ("HTTP/3", serde_json::json!(["HTTP/3"])),
            _ => ("HTTP/2", serde_json::json!(["HTTP/2"])),
        };
        assert_eq!(doc["protocol"], spoken);
        assert_eq!(doc["config"]["offered"], offered);
        assert_eq!(doc["config"]["arrival"], "poisson");
        assert_eq!(doc["config"]["arrival_seed"], 3);
        assert!(doc["counters"]["completed"].as_u64() > Some(0), "{doc}");
    }
}
