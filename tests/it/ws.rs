//! WebSocket (`ws://`, `wss://`) against Python's `websockets`, a server
//! nobody on this project wrote (tests/ws/echo_server.py): the server's
//! own count of messages against metron's ledger, the closes it chose
//! counted by name, a restart mid-run, a stop of its process in the
//! corrected percentiles, TLS with its certificate refused and trusted,
//! and the one-line errors of an upgrade the server will not take.
//!
//! metron runs as its binary with `--json`; the tests read the document.
//! Every check is of ground truth (what the server counted, what the
//! stop's arithmetic says), never of speed. Assertions on the exact
//! wording of text are marked `wording:`.

use std::time::Duration;

use crate::common::document::{
    assert_counted_by_server, assert_ledger, counter, histogram, lost, run,
};
use crate::common::files::{read_json, schema_errors, write};
use crate::common::nginx;
use crate::common::servers;
use crate::common::websockets::WebSockets;
use crate::common::*;

/// `counters.ws_closes[code]`, 0 when absent.
fn closes(doc: &serde_json::Value, code: &str) -> u64 {
    doc["counters"]["ws_closes"][code].as_u64().unwrap_or(0)
}

/// 1200 messages to `srv`'s `/echo` over 4 connections, with `flags`:
/// nothing lost, and the server's own count of messages received and
/// sent is metron's completed count (and any in flight at the end); each
/// connection (the run's four and the pre-flight's upgrade) ended with
/// metron's `1000 normal`.
fn echoes_reconcile(srv: &WebSockets, flags: &[&str]) -> (serde_json::Value, String) {
    let url = srv.url("/echo");
    let load = ["-t2", "-c4", "-R400", "-d3s"];
    let (doc, text) = run(&[&load[..], flags, &[url.as_str()]].concat());
    let counts = srv.counts();
    assert_ledger(&doc);
    assert_eq!(lost(&doc), 0, "{text}");
    assert_eq!(counter(&doc, "due"), 1200, "{text}");
    assert_counted_by_server(&doc, "received", counts.received);
    assert_counted_by_server(&doc, "sent", counts.sent);
    assert_eq!(counts.connections, 5, "{counts:?}");
    assert!(counts.closes.iter().all(|c| c == "1000"), "{counts:?}");
    (doc, text)
}

/// Every echo metron completed is one the server sent, and the server
/// received no other message: its own count is the ledger's. Each
/// connection (and the pre-flight's) ended with metron's `1000 normal`,
/// and the document follows its published schema.
#[test]
fn the_servers_count_of_messages_is_metrons() {
    let _g = serial();
    let Some(srv) = WebSockets::start(None) else {
        return;
    };
    let (doc, text) = echoes_reconcile(&srv, &["--data", "ping"]);
    assert_eq!(doc["protocol"], "WebSocket");
    let errors = schema_errors(&doc);
    assert!(errors.is_empty(), "{errors:#?}");
    // wording: the banner and the protocol line say WebSocket; a message
    // has no status of its own to count.
    assert!(
        text.contains("(WebSocket, one message in flight each)")
            && text.contains("Protocol: WebSocket"),
        "{text}"
    );
    assert!(!text.contains("Status codes"), "{text}");
}

/// The server closes each connection after its third echo with `1001
/// going away`: metron counts every close by its code, as many as the
/// server sent, reopens each connection, and loses no message.
#[test]
fn closes_the_server_chose_are_counted_by_name() {
    let _g = serial();
    let Some(srv) = WebSockets::start(None) else {
        return;
    };
    let (doc, text) = run(&["-t1", "-c2", "-R200", "-d2s", &srv.url("/close")]);
    let counts = srv.counts();
    assert_ledger(&doc);
    assert_eq!(lost(&doc), 0, "{text}");
    let by_server = counts.closes.iter().filter(|c| *c == "1001").count() as u64;
    assert!(by_server >= 100, "{counts:?}");
    assert_eq!(closes(&doc, "1001"), by_server, "{text}");
    assert_counted_by_server(&doc, "sent", counts.sent);
    assert_eq!(counter(&doc, "reconnects"), by_server, "{text}");
    // wording: the report names the code.
    assert!(
        text.contains(&format!(
            "Closes by the server: 1001 going away {by_server}"
        )),
        "{text}"
    );
}

/// The server is restarted one second into the run (SIGTERM: it closes
/// its connections with 1001 and stops; up again 300 ms later on the same
/// port). Every message metron sent is in the ledger: answered, lost, in
/// flight or never sent; every echo the server sent in either life was
/// completed or still in flight at the end; and the server received no
/// message metron does not count.
#[test]
fn a_server_restart_mid_run_loses_nothing_from_the_ledger() {
    let _g = serial();
    let Some(mut srv) = WebSockets::start(None) else {
        return;
    };
    let url = srv.url("/echo");
    let (doc, text) = std::thread::scope(|s| {
        let run = s.spawn(|| run(&["-t1", "-c4", "-R300", "-d4s", "--timeout", "2s", &url]));
        std::thread::sleep(Duration::from_millis(1500));
        srv.restart(Duration::from_millis(300));
        run.join().unwrap()
    });
    let counts = srv.counts();
    assert_ledger(&doc);
    let completed = counter(&doc, "completed");
    assert_counted_by_server(&doc, "sent", counts.sent);
    assert!(
        (completed..=completed + lost(&doc) + counter(&doc, "in_flight"))
            .contains(&counts.received),
        "the server received {}: {text}",
        counts.received
    );
    assert!(closes(&doc, "1001") >= 4, "{text}");
    assert!(counter(&doc, "reconnects") >= 4, "{text}");
    assert!(completed > 900, "{text}");
}

/// Python's process stopped (SIGSTOP) for one second at 2000 messages a
/// second over 10 connections: every message due in the stop waits from
/// when it was due. The S·R messages due meanwhile spread evenly over
/// [0, S], so over a window of D seconds the corrected p99 is S − 0.01·D
/// and p99.9 is S − 0.001·D; each is held to 5% of that arithmetic.
/// Uncorrected latency, timed from when each message actually left, sees
/// only the 10 in flight: its p99 is far lower.
#[test]
fn a_stopped_server_shows_in_the_corrected_percentiles() {
    let _g = serial();
    let Some(srv) = WebSockets::start(None) else {
        return;
    };
    let url = srv.url("/echo");
    let ((doc, text), stop) = std::thread::scope(|s| {
        let pause = s.spawn(|| {
            std::thread::sleep(Duration::from_millis(3000));
            srv.pause(Duration::from_secs(1))
        });
        let load = ["-t1", "-c10", "-R2000", "-d10s", "--timeout", "5s"];
        let run = run(&[&load[..], &[url.as_str()]].concat());
        (run, pause.join().unwrap())
    });
    let counts = srv.counts();
    assert_ledger(&doc);
    assert_eq!(lost(&doc), 0, "{text}");
    assert_counted_by_server(&doc, "sent", counts.sent);
    let window = doc["window_s"].as_f64().expect("window_s");
    let s_us = stop.as_micros() as f64;
    let latency = histogram(&doc["histograms"]["corrected"]);
    let uncorrected = histogram(&doc["histograms"]["uncorrected"]);
    for q in [0.99, 0.999] {
        let want = s_us - (1.0 - q) * window * 1e6;
        let got = latency.value_at_quantile(q) as f64;
        assert!(
            (got - want).abs() <= 0.05 * want,
            "p{}: {got:.0} us, the arithmetic says {want:.0} us (stopped {stop:?})\n{text}",
            q * 100.0
        );
    }
    let sent = uncorrected.value_at_quantile(0.99) as f64;
    assert!(sent * 10.0 < s_us, "uncorrected p99: {sent:.0} us\n{text}");
}

/// wss:// with a self-signed certificate: refused in one line naming the
/// certificate and `--cacert`; trusted with `--cacert`, the messages go
/// and come back over TLS.
#[test]
fn wss_refuses_an_unknown_certificate_and_trusts_cacert() {
    let _g = serial();
    if !servers::openssl_ready() {
        return;
    }
    let dir = servers::fresh_dir("wss");
    let (cert, key) = servers::self_signed(&dir, "ws", "localhost", "IP:127.0.0.1");
    let Some(srv) = WebSockets::start(Some((cert.clone(), key))) else {
        return;
    };
    let url = srv.url("/echo");
    let refused = metron(&["-t1", "-c1", "-d1s", &url]);
    let err = one_line_error(&refused);
    // wording: the certificate and the flag that fixes it.
    assert!(
        err.contains("certificate") && err.contains("--cacert"),
        "{err}"
    );
    let cacert = cert.display().to_string();
    let (doc, text) = run(&["-t1", "-c2", "-R100", "-d2s", "--cacert", &cacert, &url]);
    let counts = srv.counts();
    assert_ledger(&doc);
    assert_eq!(lost(&doc) + counter(&doc, "never_sent"), 0, "{text}");
    assert_counted_by_server(&doc, "sent", counts.sent);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An upgrade the server will not take is one line before the run,
/// naming what it said and the fix: Python's 403, and an HTTP server
/// (the built-in target) answering 200 to what it takes for a GET.
#[test]
fn an_upgrade_the_server_refuses_is_one_line_naming_what_it_said() {
    let _g = serial();
    let Some(srv) = WebSockets::start(None) else {
        return;
    };
    let err = one_line_error(&metron(&["-t1", "-c1", "-d1s", &srv.url("/forbidden")]));
    // wording: the status, and what to add.
    assert!(
        err.contains("did not take the WebSocket upgrade")
            && err.contains("403 Forbidden")
            && err.contains("-H"),
        "{err}"
    );
    // wss:// to a server without TLS is told to drop the s.
    let tls_to_plain = srv.url("/echo").replacen("ws://", "wss://", 1);
    let err = one_line_error(&metron(&["-t1", "-c1", "-d1s", &tls_to_plain]));
    assert!(err.contains("a plain server wants ws://"), "{err}");
    let http = server(Default::default());
    let ws_url = url(&http, "/").replacen("http://", "ws://", 1);
    let err = one_line_error(&metron(&["-t1", "-c1", "-d1s", &ws_url]));
    assert!(
        err.contains("200") && err.contains("not a WebSocket endpoint"),
        "{err}"
    );
}

/// Flags of other protocols are refused with a ws:// URL, and
/// `--ws-binary` without one, each in one line naming the fix.
#[test]
fn flags_that_do_not_apply_are_refused() {
    let dir = servers::fresh_dir("ws-flags");
    let not_text = format!("@{}", write(&dir, "bytes.bin", &[0xff, 0xfe, 0x00]));
    let line = |url: &str| format!("{{\"url\": \"{url}\", \"body\": \"x\"}}\n");
    let http_file = write(
        &dir,
        "http.jsonl",
        line("http://127.0.0.1:9/echo").as_bytes(),
    );
    let ws_file = write(&dir, "ws.jsonl", line("ws://127.0.0.1:9/echo").as_bytes());
    for (args, words) in [
        (
            &["--requests", &http_file, "ws://127.0.0.1:9/"][..],
            "the file sends to http://127.0.0.1:9, but the URL is ws://: a run speaks \
             WebSocket or HTTP, not both; write the file's URLs as ws:// or wss://",
        ),
        (
            &["-k", "ws://127.0.0.1:9/"][..],
            "-k only applies to wss:// hosts, and this run has none; drop -k, or load a URL \
             that begins wss://",
        ),
        (
            &["--ws-deflate", "https://127.0.0.1:9/"][..],
            "write the URL as wss://host:port/path, or drop --ws-deflate",
        ),
        (
            &["-H", "Upgrade: websocket", "wss://127.0.0.1:9/"][..],
            "drop it for a wss:// URL",
        ),
        (
            &["--requests", &ws_file, "http://127.0.0.1:9/"][..],
            "give a ws:// or wss:// URL on the command line",
        ),
        (
            &["--http2", "ws://127.0.0.1:9/"][..],
            "--http2 does not apply to a ws:// URL",
        ),
        (
            &["-m", "4", "wss://127.0.0.1:9/"][..],
            "-m does not apply to a wss:// URL",
        ),
        (&["--sse", "ws://127.0.0.1:9/"][..], "--sse does not apply"),
        (
            &["--ws-binary", "http://127.0.0.1:9/"][..],
            "--ws-binary applies to ws:// and wss:// URLs only",
        ),
        (
            &["--ws", "push", "http://127.0.0.1:9/"][..],
            "--ws applies to ws:// and wss:// URLs only",
        ),
        (
            &["--ws-ping", "1s", "https://127.0.0.1:9/"][..],
            "--ws-ping applies to ws:// and wss:// URLs only",
        ),
        (
            &["--ws-ping", "0", "ws://127.0.0.1:9/"][..],
            "give a period such as --ws-ping 5s",
        ),
        (
            &["--ws-ping", "1us", "ws://127.0.0.1:9/"][..],
            "--ws-ping below 10ms",
        ),
        (
            &["--data", "@/nonexistent/m.bin", "ws://127.0.0.1:9/"][..],
            "no such file",
        ),
        (
            &["-H", "Content-Length: 5", "ws://127.0.0.1:9/"][..],
            "-H Content-Length: a message's frame carries its length",
        ),
        (
            &[
                "-H",
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                "ws://127.0.0.1:9/",
            ][..],
            "-H Sec-WebSocket-Key: each connection's upgrade makes a fresh key",
        ),
        (
            &["-H", "connection: close", "ws://127.0.0.1:9/"][..],
            "-H connection: the upgrade writes its own (Connection: Upgrade)",
        ),
        (
            &["-H", "Sec-WebSocket-Extensions: x", "ws://127.0.0.1:9/"][..],
            "permessage-deflate, is offered with --ws-deflate",
        ),
        (
            &["--ws-match", "id", "--ws", "push", "ws://127.0.0.1:9/"][..],
            "a push has no answers to match",
        ),
        (
            &["--ws-match", "a..b", "ws://127.0.0.1:9/"][..],
            "a dotted path such as params.id",
        ),
        (
            &[
                "--ws-match",
                "id",
                "--data",
                "{\"idx\": 1}",
                "ws://127.0.0.1:9/",
            ][..],
            "the message sent (--data) is not JSON with a field id",
        ),
        (
            &["--ws-match", "id", "ws://127.0.0.1:9/"][..],
            "the message sent (hello, as no --data was given) is not JSON with a field id",
        ),
        (
            &["--ws-deflate", "http://127.0.0.1:9/"][..],
            "--ws-deflate applies to ws:// and wss:// URLs only",
        ),
        (
            &["--data", &not_text, "ws://127.0.0.1:9/"][..],
            "add --ws-binary",
        ),
    ] {
        let err = one_line_error(&metron(&[&["-d1s"][..], args].concat()));
        assert!(err.contains(words), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// nginx in front of Python's server, proxying the upgrade over plain
/// TCP and TLS (its own certificate, trusted with `--cacert`), as
/// WebSocket is usually deployed. Every echo the backend sent came back
/// through nginx and was completed; nginx's access log holds one `101`
/// per connection metron opened (the run's and the pre-flight's), and no
/// other line.
#[test]
fn through_nginx_every_message_reaches_the_backend_and_back() {
    let _g = serial();
    let Some(nginx) = servers::tool("nginx", "nginx") else {
        return;
    };
    let Some(backend) = WebSockets::start(None) else {
        return;
    };
    let dir = servers::fresh_dir("nginx-ws");
    nginx::write_certificate(&dir);
    let upstream = backend.port;
    let (process, [plain, tls]) = servers::start(
        dir,
        |dir, [plain, tls]| {
            let d = dir.display();
            let conf = format!(
                "{}
  map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}
  server {{
    listen 127.0.0.1:{plain};
    listen 127.0.0.1:{tls} ssl;
    ssl_certificate {d}/cert.pem;
    ssl_certificate_key {d}/key.pem;
    location / {{
      proxy_pass http://127.0.0.1:{upstream};
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_read_timeout 60s;
    }}
  }}
}}
",
                nginx::preamble(dir, nginx::LOG_FORMAT)
            );
            std::fs::write(dir.join("nginx.conf"), conf).unwrap();
            nginx::command(&nginx, dir)
        },
        nginx::last_line,
    );
    let cacert = process.dir.join("cert.pem").display().to_string();
    let ws = format!("ws://127.0.0.1:{plain}/echo");
    let wss = format!("wss://127.0.0.1:{tls}/echo");
    let (plain_doc, text) = run(&["-t1", "-c3", "-R300", "-d2s", &ws]);
    assert_ledger(&plain_doc);
    let (tls_doc, tls_text) = run(&["-t1", "-c3", "-R300", "-d2s", "--cacert", &cacert, &wss]);
    assert_ledger(&tls_doc);
    let counts = backend.counts();
    let completed = counter(&plain_doc, "completed") + counter(&tls_doc, "completed");
    // An echo still on its way at the end (-d does not wait for it) may
    // or may not have reached the backend, or left it.
    let in_flight = counter(&plain_doc, "in_flight") + counter(&tls_doc, "in_flight");
    assert_eq!(lost(&plain_doc) + lost(&tls_doc), 0, "{text}\n{tls_text}");
    assert_eq!(completed + in_flight, 1200, "{text}\n{tls_text}");
    assert!(in_flight <= 2, "{text}\n{tls_text}");
    for n in [counts.received, counts.sent] {
        assert!(
            (completed..=completed + in_flight).contains(&n),
            "{counts:?} for {completed} completed, {in_flight} in flight"
        );
    }
    let log = servers::settled_log(&process.dir.join("access.log"));
    let lines: Vec<nginx::Logged> = log.lines().map(nginx::Logged::parse).collect();
    assert_eq!(lines.len(), 8, "{log}");
    assert!(
        lines.iter().all(|l| l.status == 101 && l.uri == "/echo"),
        "{log}"
    );
}

/// gorilla/websocket, Go's usual WebSocket library, in the shape of its
/// own echo example (tests/ws/gorilla): its count of messages received
/// and sent is metron's completed count, and every connection (the
/// run's four and the pre-flight's) ended with metron's `1000 normal`.
#[test]
fn gorillas_count_of_messages_is_metrons() {
    let _g = serial();
    let Some(srv) = WebSockets::gorilla() else {
        return;
    };
    echoes_reconcile(&srv, &["--ws-binary"]);
}

/// `--ws push` against Python's `/push`, which sends its N messages on a
/// timetable from the upgrade: the first FIRST ms after it, then one
/// every GAP ms. A subscription outlasts the run, so each connection's
/// first message is timed from its upgrade: the median first message is
/// FIRST and the median gap GAP, each to 2 ms (Python's own timer is in
/// both). The server received one subscribe message per connection and
/// sent what metron counted (and what was on its way as the run ended);
/// the document follows its schema.
#[test]
fn pushed_messages_are_timed_on_the_servers_timetable() {
    let _g = serial();
    let Some(srv) = WebSockets::start(None) else {
        return;
    };
    let url = srv.url("/push?events=150&first=50&gap=20");
    let load = ["-t1", "-c4", "-d2s", "--timeout", "5s", "--ws", "push"];
    let (doc, text) = run(&[&load[..], &["--data", "subscribe", &url]].concat());
    let counts = srv.counts();
    // The saved document says what the run was, and its report again
    // names the conversation as the run's did.
    assert_eq!(doc["config"]["ws"], serde_json::json!({"shape": "push"}));
    let dir = servers::fresh_dir("ws-push");
    let json = write(&dir, "push.json", doc.to_string().as_bytes());
    let again = metron(&["report", &json]);
    assert!(again.status.success(), "{}", stderr(&again));
    let banner = "WebSocket, one subscription each, its messages pushed";
    assert!(stdout(&again).contains(banner), "{}", stdout(&again));
    // Merged with an echo's document, it is named as a mix.
    let mut echo = doc.clone();
    echo["config"]["ws"]["shape"] = "echo".into();
    let echo = write(&dir, "echo.json", echo.to_string().as_bytes());
    let merged = metron(&["merge", &json, &echo]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    let err = stderr(&merged);
    for said in [
        "echo.json was a WebSocket echo but ",
        "push.json a WebSocket push",
    ] {
        assert!(err.contains(said), "{err}");
    }
    // Of one shape but other settings, too.
    let mut deflated = doc.clone();
    deflated["config"]["ws"]["deflate"] = true.into();
    let deflated = write(&dir, "deflated.json", deflated.to_string().as_bytes());
    let merged = metron(&["merge", &json, &deflated]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    for said in [
        "deflated.json's WebSocket push ran with --ws-deflate but ",
        "push.json's with none of --ws-binary",
    ] {
        assert!(stderr(&merged).contains(said), "{}", stderr(&merged));
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert_ledger(&doc);
    assert_eq!(schema_errors(&doc), Vec::<String>::new());
    let events = &doc["events"];
    assert_eq!(events["kind"], "websocket", "{text}");
    assert_eq!(counter(&doc, "in_flight"), 4, "{text}");
    // A message the server sent as the run ended may not have reached
    // metron: at most one a connection, 20 ms apart.
    let seen = events["count"].as_u64().unwrap();
    assert!(
        (seen..=seen + 4).contains(&counts.sent),
        "{counts:?}: {seen} seen"
    );
    // Each of the four, and not the pre-flight's upgrade.
    assert_eq!(counts.received, 4, "{counts:?}");
    let first = histogram(&events["first_histogram"]).value_at_quantile(0.5) as f64;
    let gap = histogram(&events["gap_histogram"]).value_at_quantile(0.5) as f64;
    // The server's timetable starts as it takes the upgrade, and the
    // closed loop's subscription when metron opens it, just after: on a
    // busy machine that is a few milliseconds later, and the first
    // message seems that much earlier.
    assert!(
        (45_000.0..=52_000.0).contains(&first),
        "first {first} us\n{text}"
    );
    assert!((gap - 20_000.0).abs() <= 2_000.0, "gap {gap} us\n{text}");
    // wording:
    assert!(text.contains("one subscription each"), "{text}");
}

/// Subscriptions the server ends: a normal close completes one, with its
/// messages counted; any other close loses it (read: closed), and the
/// code is counted by name. Python's process stopped (SIGSTOP) for one
/// second shows as a gap of that second. The server sent every message
/// metron counted, and the ledger holds.
#[test]
fn a_push_ends_by_the_servers_close_and_a_stop_shows_in_its_gaps() {
    let _g = serial();
    let Some(srv) = WebSockets::start(None) else {
        return;
    };
    let normal = srv.url("/push?events=5&first=10&gap=30");
    let (doc, text) = run(&["-t1", "-c2", "-d1s", "--ws", "push", &normal]);
    assert_ledger(&doc);
    let completed = counter(&doc, "completed");
    assert!(completed >= 4, "{text}");
    assert_eq!(lost(&doc), 0, "{text}");
    assert_eq!(doc["events"]["completed_events"], completed * 5, "{text}");
    assert_eq!(closes(&doc, "1000"), completed, "{text}");
    // Every subscription lost: metron exits 5, with all it measured.
    let cut = srv.url("/push?events=3&first=10&gap=30&close=1011");
    let dir = servers::fresh_dir("ws-push-cut");
    let json = dir.join("run.json").display().to_string();
    let out = metron(&["-t1", "-c2", "-d1s", "--ws", "push", "--json", &json, &cut]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(5), "{}\n{text}", stderr(&out));
    assert!(
        stderr(&out).contains("no subscription completed"),
        "{}",
        stderr(&out)
    );
    let doc = read_json(std::path::Path::new(&json));
    assert_ledger(&doc);
    assert_eq!(counter(&doc, "completed"), 0, "{text}");
    assert!(lost(&doc) >= 4, "{text}");
    assert_eq!(closes(&doc, "1011"), lost(&doc), "{text}");
    assert!(text.contains("1011 internal error"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
    let long = srv.url("/push?events=200&first=10&gap=10");
    let ((doc, text), stop) = std::thread::scope(|s| {
        let pause = s.spawn(|| {
            std::thread::sleep(Duration::from_millis(800));
            srv.pause(Duration::from_secs(1))
        });
        let run = run(&[
            "-t1",
            "-c2",
            "-d3s",
            "--timeout",
            "5s",
            "--ws",
            "push",
            &long,
        ]);
        (run, pause.join().unwrap())
    });
    let counts = srv.counts();
    assert_ledger(&doc);
    let gap = histogram(&doc["events"]["gap_histogram"]);
    assert!(
        gap.max() as f64 >= 0.9 * stop.as_micros() as f64,
        "gap max {} us, stopped {stop:?}\n{text}",
        gap.max()
    );
    // The server may have sent more as metron left.
    let events = doc["events"]["count"].as_u64().unwrap();
    assert!(counts.sent >= events, "{counts:?}\n{text}");
}

/// Upgrades the server refuses during the run (the pre-flight's was
/// taken) are counted by the status it answered, not as connections
/// turned away unanswered; a run in which every one was refused exits 5.
#[test]
fn upgrades_refused_during_the_run_are_counted_by_status() {
    let _g = serial();
    let Some(srv) = WebSockets::start(None) else {
        return;
    };
    let dir = servers::fresh_dir("ws-refused");
    let json = dir.join("run.json").display().to_string();
    let url = srv.url("/once");
    let out = metron(&["-t1", "-c2", "-R20", "-d1s", "--json", &json, &url]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(5), "{}\n{text}", stderr(&out));
    assert!(
        stderr(&out).contains("no message completed (upgrades refused "),
        "{}",
        stderr(&out)
    );
    let doc = read_json(std::path::Path::new(&json));
    assert_ledger(&doc);
    let refused = doc["counters"]["ws_refused"]["429"].as_u64().unwrap_or(0);
    assert!(refused >= 2, "{text}");
    assert!(
        text.contains(&format!("Upgrades refused by the server: 429 {refused} ")),
        "{text}"
    );
    assert!(!text.contains("Connections turned away"), "{text}");
    let errors = schema_errors(&doc);
    assert!(errors.is_empty(), "{errors:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--ws-ping`: pings go beside the messages on every connection, the
/// server's pongs are read and are no answer: the server's count of
/// messages is still the ledger's. A script's `message(data, binary)`
/// reads every message received, echoes and pushes alike.
#[test]
fn pings_are_no_messages_and_a_script_reads_every_message() {
    let _g = serial();
    let Some(srv) = WebSockets::start(None) else {
        return;
    };
    let dir = servers::fresh_dir("ws-message");
    let script = write(
        &dir,
        "count.lua",
        br#"
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) seen, texts = 0, 0 end
function message(data, binary)
  seen = seen + 1
  if not binary and data:sub(1, 5) == "event" or data == "hello" then texts = texts + 1 end
end
function done(summary, latency, requests)
  local seen, texts = 0, 0
  for _, t in ipairs(threads) do seen = seen + t:get("seen"); texts = texts + t:get("texts") end
  io.write(string.format("seen %d texts %d\n", seen, texts))
end
"#,
    );
    let echo = srv.url("/echo");
    let flags = [
        "-t2",
        "-c4",
        "-R200",
        "-d2s",
        "--ws-ping",
        "50ms",
        "-s",
        &script,
    ];
    let (doc, text) = run(&[&flags[..], &[echo.as_str()]].concat());
    let counts = srv.counts();
    assert_ledger(&doc);
    assert_counted_by_server(&doc, "received", counts.received);
    assert_counted_by_server(&doc, "sent", counts.sent);
    let completed = counter(&doc, "completed");
    // Four connections, a ping every 50 ms for about 2 s each.
    let pings = counter(&doc, "ws_pings");
    assert!((100..=200).contains(&pings), "{pings} pings\n{text}");
    assert!(
        text.contains(&format!("seen {completed} texts {completed}")),
        "{text}"
    );
    let push = srv.url("/push?events=4&first=10&gap=10");
    let (doc, text) = run(&["-t1", "-c2", "-d1s", "--ws", "push", "-s", &script, &push]);
    let count = doc["events"]["count"].as_u64().unwrap();
    assert!(count >= 8, "{text}");
    assert!(
        text.contains(&format!("seen {count} texts {count}")),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--ws-deflate` against a server that agrees (Python's, with its
/// library's defaults: a 12-bit window of its own): every message goes
/// compressed and the server reads it (its count is the ledger's, every
/// connection closed normally), every answer comes compressed and a
/// script reads it inflated, and the bytes read are the compressed ones.
#[test]
fn messages_go_compressed_where_the_server_agrees() {
    let _g = serial();
    let Some(srv) = WebSockets::start(None) else {
        return;
    };
    let dir = servers::fresh_dir("ws-deflate");
    let message = "a message that compresses well. ".repeat(32);
    let data = format!("@{}", write(&dir, "message.txt", message.as_bytes()));
    let script = write(
        &dir,
        "check.lua",
        br#"
local threads = {}
local want = string.rep("a message that compresses well. ", 32)
function setup(thread) table.insert(threads, thread) end
function init(args) same, other = 0, 0 end
function message(data, binary)
  if data == want then same = same + 1 else other = other + 1 end
end
function done(summary, latency, requests)
  local same, other = 0, 0
  for _, t in ipairs(threads) do same = same + t:get("same"); other = other + t:get("other") end
  io.write(string.format("same %d other %d\n", same, other))
end
"#,
    );
    let (doc, text) = echoes_reconcile(&srv, &["--ws-deflate", "--data", &data, "-s", &script]);
    let counts = srv.counts();
    // The run's four connections and the pre-flight's agreed.
    assert_eq!(counts.deflated, 5, "{counts:?}");
    assert_eq!(counter(&doc, "ws_deflate_agreed"), 4, "{text}");
    assert_eq!(counter(&doc, "ws_deflate_declined"), 0, "{text}");
    let completed = counter(&doc, "completed");
    assert!(
        text.contains(&format!("same {completed} other 0")),
        "{text}"
    );
    // 1024 bytes a message as sent; far fewer read.
    let read = counter(&doc, "bytes");
    assert!(
        read < completed * 200,
        "{read} bytes for {completed}\n{text}"
    );
    assert_eq!(
        doc["config"]["ws"],
        serde_json::json!({"shape": "echo", "deflate": true})
    );
    // wording: the report says how many connections compressed.
    assert!(
        text.contains("Compressed (permessage-deflate): 4 of 4 connections opened"),
        "{text}"
    );
    let errors = schema_errors(&doc);
    assert!(errors.is_empty(), "{errors:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--ws-match`: Python's server sends a message of its own before each
/// echo (`/chatter`, as a room relaying others' messages does). Matched by
/// the field `id`, each echo answers its message and the chatter is
/// counted as unasked, one per message, and a script's `message()` reads
/// it too; the server's counts are the ledger's. Matched by order, the
/// chatter would be taken for answers.
#[test]
fn answers_matched_by_a_field_pass_over_other_messages() {
    let _g = serial();
    let Some(srv) = WebSockets::start(None) else {
        return;
    };
    let dir = servers::fresh_dir("ws-match");
    let script = write(
        &dir,
        "chatter.lua",
        br#"
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) seen, chatter = 0, 0 end
function message(data, binary)
  seen = seen + 1
  if data:find('"chatter"', 1, true) then chatter = chatter + 1 end
end
function done(summary, latency, requests)
  local seen, chatter = 0, 0
  for _, t in ipairs(threads) do seen = seen + t:get("seen"); chatter = chatter + t:get("chatter") end
  io.write(string.format("seen %d chatter %d\n", seen, chatter))
end
"#,
    );
    let url = srv.url("/chatter");
    let flags = [
        "-t2",
        "-c4",
        "-R400",
        "-d3s",
        "--ws-match",
        "order.id",
        "--data",
        r#"{"order": {"id": 7}, "qty": 5}"#,
        "-s",
        &script,
    ];
    let (doc, text) = run(&[&flags[..], &[url.as_str()]].concat());
    let counts = srv.counts();
    assert_ledger(&doc);
    assert_eq!(lost(&doc), 0, "{text}");
    let completed = counter(&doc, "completed");
    let in_flight = counter(&doc, "in_flight");
    assert_eq!(completed + in_flight, 1200, "{text}");
    // The pre-flight sent no message; every other message was a run's,
    // chatter and echo (those in flight at the end may have had either,
    // or neither, by then).
    assert_counted_by_server(&doc, "received", counts.received);
    let chatter = counter(&doc, "ws_unasked");
    assert!(
        (completed..=completed + in_flight).contains(&chatter),
        "{text}"
    );
    assert!(
        (completed + chatter..=2 * (completed + in_flight)).contains(&counts.sent),
        "{counts:?}"
    );
    assert!(
        text.contains(&format!("seen {} chatter {chatter}", completed + chatter)),
        "{text}"
    );
    let errors = schema_errors(&doc);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        doc["config"]["ws"],
        serde_json::json!({"shape": "echo", "match": "order.id"})
    );
    // A requests file's message without the field can be matched to no
    // answer: the run ends in one line naming it, not in timeouts.
    let lines = "{\"path\": \"/chatter\", \"body\": \"{\\\"order\\\": {\\\"id\\\": 1}}\"}\n\
                 {\"path\": \"/chatter\", \"body\": \"{\\\"qty\\\": 2}\"}\n";
    let file = write(&dir, "messages.jsonl", lines.as_bytes());
    let out = metron(&[
        "-t1",
        "-c1",
        "-R10",
        "-d2s",
        "--ws-match",
        "order.id",
        "--requests",
        &file,
        &url,
    ]);
    let err = one_line_error(&out);
    assert!(
        err.contains("a message without the field order.id (or not JSON) cannot be matched")
            && err.contains("answer: '{\"qty\": 2}'")
            && err.contains("drop --ws-match order.id"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
