//! `--http3` against Caddy, a server nobody here wrote, serving HTTP/3 on
//! its TLS port: the ledger against its access log, the corrected
//! percentiles through a stop of the process, wrk scripts unchanged, loss
//! and delay on the path, and the pre-flight's words for each way a host
//! may not serve HTTP/3. Against the built-in target (`serve --http3`),
//! where faults are easier to make: a stall's exact arithmetic, 0-RTT on
//! the connections that replace those gone away, and the demo (streams
//! refused and connections gone away are tests/it/streams.rs's, over
//! HTTP/2 and HTTP/3 alike).

use std::net::UdpSocket;
use std::time::Duration;

use crate::common::caddy::Caddy;
use crate::common::relay::Relay;
use crate::common::*;
use metron::serve::{BadCert, Http3, ServeConfig, Server};

/// Every request metron completed, and every one still in flight at the
/// end, is in Caddy's log as HTTP/3; nothing else is.
#[test]
fn caddys_log_holds_every_request_metron_sent() {
    let _g = serial();
    let Some(caddy) = Caddy::start() else {
        return;
    };
    let args = ["-t2", "-c4", "-R1000", "-d2s", "--http3", "--cacert"];
    let (o, text) = bench(&[&args[..], &[&caddy.cacert(), &caddy.url("/")]].concat());
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
    assert_eq!(c.never_sent, 0, "{c:?}");
    assert!(text.contains("  Protocol: HTTP/3\n"), "{text}");
    assert!(text.contains("(HTTP/3, up to 100 streams each)"), "{text}");
    // Each connection's QUIC handshake is its connect; TLS is inside it.
    assert_eq!(o.stats.timings.connect.len(), 4);
    assert!(o.stats.timings.tls_handshake.is_empty());
    assert!(c.quic.packets_sent > 0, "{c:?}");
    assert!(text.contains("  QUIC: "), "{text}");
    let log = caddy.access_log();
    assert_server_counted(&o, log.len() as u64);
    assert!(log
        .iter()
        .all(|l| l.proto == "HTTP/3.0" && l.method == "GET" && l.status == 200));
}

/// Caddy's process stopped for a second at 2000 requests/s, on two
/// connections of 10 streams each: the requests due meanwhile wait, from
/// when they were due, for the rest of the stop and for Caddy to work
/// through them after it. The truth is the server's own account: each
/// request carries its place in the schedule in its path (`/item/N`, due
/// N/R after the start) and Caddy logs when it finished it, so no
/// response can reach metron sooner than that log says. metron's p99 and
/// p99.9 are within 5% of it (measured: within 0.1%); the uncorrected
/// figures, from the send, fall far below it, as a client that waits for
/// a free stream before it starts its clock would report.
#[test]
fn a_stopped_server_shows_in_the_corrected_percentiles() {
    let _g = serial();
    let Some(caddy) = Caddy::start() else {
        return;
    };
    let rate = 2000.0;
    let (o, stop) = std::thread::scope(|s| {
        let pause = s.spawn(|| {
            std::thread::sleep(Duration::from_millis(1500));
            caddy.pause(Duration::from_secs(1))
        });
        let args = ["-t1", "-c2", "-m10", "-R2000", "-d5s", "--http3", "-s"];
        let more = [
            &script("counter.lua"),
            "--cacert",
            &caddy.cacert(),
            &caddy.url("/"),
        ];
        let (o, _) = bench(&[&args[..], &more[..]].concat());
        (o, pause.join().unwrap())
    });
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
    let start = o
        .started_at
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let mut truth = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    for l in caddy.access_log() {
        let n: f64 = l.uri.trim_start_matches("/item/").parse().unwrap();
        let due = start + n / rate;
        truth.record(((l.ts - due) * 1e6).max(1.0) as u64).unwrap();
    }
    // The stop is in the truth too: its requests waited at least the rest
    // of it.
    assert!(truth.value_at_quantile(0.999) as f64 >= 0.9 * stop.as_micros() as f64);
    for q in [0.99, 0.999] {
        let floor = truth.value_at_quantile(q) as f64;
        let got = o.stats.latency.value_at_quantile(q) as f64;
        let sent = o.stats.uncorrected.value_at_quantile(q) as f64;
        assert!(
            (got - floor).abs() <= 0.05 * floor,
            "p{}: {got:.0}us, Caddy's log says {floor:.0}us (stopped {stop:?})",
            q * 100.0
        );
        // 20 streams hold 0.2% of the requests: above p99, below p99.9.
        if q == 0.99 {
            assert!(sent < 0.5 * floor, "uncorrected p99: {sent:.0}us");
        }
    }
}

/// A wrk script that POSTs a body and one that builds a new path for
/// every request run over HTTP/3 as written; Caddy logs what they built.
#[test]
fn wrk_scripts_run_unchanged_over_http3() {
    let _g = serial();
    let Some(caddy) = Caddy::start() else {
        return;
    };
    let run = |name: &str| {
        let args = ["-t1", "-c2", "-R200", "-d1s", "--http3", "-s"];
        let (o, _) = bench(
            &[
                &args[..],
                &[&script(name), "--cacert", &caddy.cacert()],
                &[&caddy.url("/")],
            ]
            .concat(),
        );
        assert_balanced(&o);
        assert_eq!(o.stats.counters.errors.lost_requests(), 0);
        o.stats.counters.completed
    };
    let posted = run("post.lua");
    let counted = run("counter.lua");
    let log = caddy.access_log();
    let posts = log.iter().filter(|l| l.method == "POST").count() as u64;
    assert!(
        posts >= posted && posted > 0,
        "{posts} POSTs logged, {posted} completed"
    );
    let items: std::collections::BTreeSet<&str> = log
        .iter()
        .filter(|l| l.uri.starts_with("/item/"))
        .map(|l| l.uri.as_str())
        .collect();
    // Each request got a path of its own: as many paths as requests.
    assert!(
        items.len() as u64 >= counted && counted > 0,
        "{} paths, {counted} completed",
        items.len()
    );
}

/// 10 ms each way and one datagram in 25 dropped: QUIC sends again what
/// was lost, so every request completes, and the latency holds the round
/// trip and the retransmissions.
#[test]
fn loss_and_delay_enter_the_latency_not_the_ledger() {
    let _g = serial();
    let Some(caddy) = Caddy::start() else {
        return;
    };
    let relay = Relay::start(
        ([127, 0, 0, 1], caddy.port).into(),
        Duration::from_millis(10),
        25,
    );
    let url = format!("https://127.0.0.1:{}/", relay.port);
    let args = ["-t1", "-c4", "-R200", "-d3s", "--timeout", "5s", "--http3"];
    // The host Caddy serves, though the datagrams go to the relay.
    let host = format!("Host: 127.0.0.1:{}", caddy.port);
    let more = ["-H", &host, "--cacert", &caddy.cacert(), &url];
    let (o, _) = bench(&[&args[..], &more[..]].concat());
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
    assert!(relay.dropped.load(std::sync::atomic::Ordering::Relaxed) > 0);
    // QUIC's loss detection saw the drops, and sent the packets again.
    assert!(c.quic.packets_lost > 0, "{c:?}");
    // A handshake takes at least a round trip through the relay.
    assert!(o.stats.timings.connect.min() >= 20_000);
    let h = &o.stats.latency;
    // Every request took at least the round trip through the relay.
    assert!(h.min() >= 20_000, "min {}us", h.min());
    // Some waited for a retransmission: at least another round trip.
    assert!(h.max() >= 40_000, "max {}us", h.max());
    // What was in flight at the end may have been dropped, or still on
    // the path: not every one of those reached Caddy.
    assert_server_counted(&o, caddy.access_log().len() as u64);
}

/// The pre-flight names what it found: a UDP port where nothing listens,
/// one that never answers, and a certificate not trusted (with the fix
/// over TCP's words, Caddy answering TLS there too).
#[test]
fn the_preflight_names_why_a_host_serves_no_http3() {
    let Some(caddy) = Caddy::start() else {
        return;
    };
    let closed = UdpSocket::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let cases = [
        (
            format!("https://127.0.0.1:{closed_port}/"),
            vec!["-k"],
            format!("nothing listens on UDP port {closed_port}"),
        ),
        (
            format!("https://127.0.0.1:{silent_port}/"),
            vec!["-k", "--timeout", "500ms"],
            "no QUIC answer".to_string(),
        ),
        (caddy.url("/"), vec![], "--cacert".to_string()),
    ];
    for (url, flags, said) in cases {
        let args = [&["-t1", "-c1", "-d1s", "--http3"][..], &flags, &[&url]].concat();
        let out = metron(&args);
        let err = one_line_error(&out);
        assert!(err.contains(&said), "{args:?}: {err}");
        assert!(
            err.contains("--http3") || said == "--cacert",
            "{args:?}: {err}"
        );
    }
    drop(silent);
    // A name Caddy has no certificate for: it ends the handshake with the
    // alert internal_error, over QUIC and over TCP alike, which is named
    // as the server's refusal (not as a port without TLS or QUIC).
    let port = caddy
        .url("/")
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let url = format!("https://unnamed.test:{port}/");
    let resolve = format!("unnamed.test:{port}:127.0.0.1");
    let ca = caddy.cacert();
    for proto in [&["--http3"][..], &[]] {
        let args = [
            proto,
            &["-t1", "-c1", "-d1s", "--cacert", &ca],
            &["--resolve", &resolve, &url],
        ]
        .concat();
        let err = one_line_error(&metron(&args));
        assert!(err.contains("alert internal_error"), "{args:?}: {err}");
        assert!(err.contains("for the name unnamed.test"), "{args:?}: {err}");
        assert!(
            !err.contains("does the server speak TLS"),
            "{args:?}: {err}"
        );
    }
    // And over plain http:// it is refused before anything is sent.
    let out = metron(&["--http3", "http://127.0.0.1:1/"]);
    assert!(one_line_error(&out).contains("write it as https://"));
}

/// A UDP service that answers, but not in QUIC (here: a line of text for
/// every datagram), is named as such, not as a slow path to wait out.
#[test]
fn the_preflight_names_a_udp_service_that_is_not_quic() {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = sock.local_addr().unwrap().port();
    sock.set_read_timeout(Some(std::time::Duration::from_millis(100)))
        .unwrap();
    let answering = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut answered = 0;
        // Bounded: the run's pre-flight ends within its 500 ms.
        for _ in 0..10 {
            if let Ok((_, from)) = sock.recv_from(&mut buf) {
                let _ = sock.send_to(b"hello from a service that is not QUIC\n", from);
                answered += 1;
            }
        }
        answered
    });
    let url = format!("https://127.0.0.1:{port}/");
    let out = metron(&[
        "-t1",
        "-c1",
        "-d1s",
        "--http3",
        "-k",
        "--timeout",
        "500ms",
        &url,
    ]);
    let err = one_line_error(&out);
    assert!(
        err.contains("but not in QUIC") && err.contains("--http3"),
        "{err}"
    );
    assert!(!err.contains("raise --timeout"), "{err}");
    assert!(answering.join().unwrap() > 0);
}

/// The built-in target over HTTP/3 (`metron serve --http3`), on its
/// certificate of the moment (hence -k).
fn h3_server(cfg: ServeConfig, h3: Http3) -> Server {
    server(ServeConfig {
        http3: Some(h3),
        tls: Some(BadCert::Untrusted),
        ..cfg
    })
}

fn h3_url(srv: &Server) -> String {
    format!("https://{}/", srv.addr())
}

/// A server that never answers, and keeps the stream of every request it
/// was sent, even once metron cancels it at its timeout: it grants no new
/// stream. Each connection, once its 100 streams have timed out and it
/// has had no credit for a while, is replaced by a new one, counted as
/// granted no stream; the requests that waited meanwhile go out on the
/// new connections, so none is left never sent, and the wait is their send
/// lag. (HTTP/2 has no such state: a reset stream stops counting at once.)
#[test]
fn a_server_that_keeps_cancelled_streams_gets_new_connections() {
    let _g = serial();
    let srv = h3_server(ServeConfig::default(), Http3::default());
    let url = format!("https://{}/fault/never-answer", srv.addr());
    let args = [
        "-t1",
        "-c2",
        "-R200",
        "-d3s",
        "--timeout",
        "500ms",
        "--http3",
        "-k",
    ];
    let (o, text) = bench(&[&args[..], &[&url]].concat());
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!(c.completed, 0, "{c:?}\n{text}");
    assert_eq!(c.never_sent, 0, "{c:?}\n{text}");
    assert!(c.reopens.starved >= 2, "{c:?}\n{text}");
    assert!(c.waits.server_limit > 0, "{c:?}\n{text}");
    assert!(text.contains("granted no stream"), "{text}");
    assert!(text.contains("the stream credit it grants"), "{text}");
}

/// `--0rtt` against a server that goes away after 40 requests on each
/// connection: every connection that replaces one resumes its TLS session
/// and sends its first requests as 0-RTT, which the server takes. Nothing
/// is lost or answered twice: the server answered what metron completed,
/// and no more than what it still waited for besides. Without the flag no connection sends
/// early.
#[test]
fn replaced_connections_send_0rtt_and_lose_nothing() {
    let _g = serial();
    let run = |zero_rtt: bool| {
        let srv = h3_server(
            ServeConfig::default(),
            Http3 {
                goaway_after: Some(40),
                ..Http3::default()
            },
        );
        let args = ["-t1", "-c4", "-m8", "-R1000", "-d2s", "--http3", "-k"];
        let flag: &[&str] = if zero_rtt { &["--0rtt"] } else { &[] };
        let (o, text) = bench(&[&args[..], flag, &[&h3_url(&srv)]].concat());
        assert_balanced(&o);
        assert_server_counted(&o, srv.stats().requests());
        let c = o.stats.counters;
        assert_eq!(c.errors.lost_requests(), 0, "{c:?}\n{text}");
        assert!(srv.stats().h3_goaways() > 0, "{c:?}");
        assert_eq!(c.status_codes.get(200), c.completed, "{c:?}");
        (c, text)
    };
    let (c, text) = run(true);
    let q = &c.quic;
    assert!(q.zero_rtt_offered >= 1 && q.zero_rtt >= 1, "{q:?}");
    assert!(q.zero_rtt <= q.zero_rtt_offered, "{q:?}");
    let said = format!(
        "{} of {} connections with 0-RTT accepted\n",
        q.zero_rtt, q.zero_rtt_offered
    );
    assert!(text.contains(&said), "{text}");
    let (c, text) = run(false);
    assert_eq!((c.quic.zero_rtt_offered, c.quic.zero_rtt), (0, 0), "{c:?}");
    assert!(!text.contains("0-RTT"), "{text}");
}

/// 100 KB responses over HTTP/3 from the built-in target: many
/// datagrams each, which arrive in batches (and, where the kernel has
/// GRO, joined). Every byte is counted, once: the bytes read are the
/// responses' bodies and heads, no more, and the server answered what
/// metron completed, and no more than what it still waited for besides.
#[test]
fn large_bodies_arrive_whole_and_counted_once() {
    let _g = serial();
    let body = 100_000u64;
    let srv = h3_server(
        ServeConfig {
            body_size: body,
            ..ServeConfig::default()
        },
        Http3::default(),
    );
    // Rate mode, so that the last requests have long reached the server
    // when the run ends (its count is read as metron exits).
    let args = ["-t1", "-c2", "-m4", "-R300", "-d2s", "--http3", "-k"];
    let (o, text) = bench(&[&args[..], &[&h3_url(&srv)]].concat());
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}\n{text}");
    assert!(c.completed >= 500, "{c:?}");
    assert_eq!(c.status_codes.get(200), c.completed, "{c:?}");
    assert_server_counted(&o, srv.stats().requests());
    // HTTP/3 counts what the response's frames carried: its body, and
    // its head's QPACK block, which is short.
    let per = c.bytes / c.completed;
    assert!(
        (body..body + 200).contains(&per),
        "{per} bytes per response"
    );
}

/// `metron demo --http3` runs over HTTP/3 and says so.
#[test]
fn the_demo_runs_over_http3() {
    let _g = serial();
    let out = metron(&[
        "demo",
        "--http3",
        "-d",
        "3s",
        "--stall-for",
        "0.5s",
        "-R",
        "500",
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("(HTTP/3, up to 100 streams each)"), "{text}");
    assert!(text.contains("  Protocol: HTTP/3\n"), "{text}");
    assert!(
        text.contains("Over HTTP/3 a due request needs only a free stream"),
        "{text}"
    );
}

/// A run's QUIC connections are closed when it ends (QUIC has no FIN):
/// a server that takes 4 connections at most has all 4 free again within
/// a second, not after its idle timeout (30 s), for the next run.
#[test]
fn a_run_closes_its_connections_for_the_next() {
    let _g = serial();
    let srv = h3_server(
        ServeConfig {
            max_connections: Some(4),
            ..ServeConfig::default()
        },
        Http3::default(),
    );
    let url = h3_url(&srv);
    let mut failed = 0;
    for _ in 0..2 {
        let (o, text) = bench(&["-t1", "-c4", "-R200", "-d1s", "--http3", "-k", &url]);
        assert_balanced(&o);
        let c = &o.stats.counters;
        assert_eq!(c.never_sent + c.errors.lost_requests(), 0, "{c:?}\n{text}");
        failed += c.errors.connect;
        // The server saw each close: none of its connections is left open.
        let closed = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            srv.stats().open_connections() == 0
        });
        let open = srv.stats().open_connections();
        assert!(
            closed,
            "{open} connections left open a second after the run"
        );
    }
    // A connection the server turned away was a connect that failed for
    // metron: at most one a run, the moment when a loaded server has not
    // yet read the pre-flight's close as the run's four arrive.
    assert_eq!(srv.stats().turned_away(), failed);
    assert!(failed <= 2, "{failed} connects failed");
}
