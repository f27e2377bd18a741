//! WebSocket against metron's own server, `metron serve --ws`, run as a
//! process: metron's ledger against the counts the server prints when it
//! is stopped, over `ws://` and `wss://`; the closes the server was told
//! to send (`close=CODE&after=N`) counted by name; and `/ws/push` and the
//! echo's protocol duties (fragments, ping, an unmasked frame) read at
//! the frame level by a small client of the test's own, which writes and
//! reads frames with the same crate as both ends (`metron-ws`).
//!
//! The tests in ws.rs hold metron to servers nobody here wrote; these
//! hold the server to what metron and RFC 6455 expect of it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

use metron_ws::Opcode;

use crate::common::document::{
    assert_counted_by_server, assert_ledger, counter, histogram, lost, run,
};
use crate::common::process::{self, serve_on};
use crate::common::*;

/// The loopback ports these tests serve on: the first free one is taken.
const PORTS: std::ops::Range<u16> = 47450..47500;

/// What `metron serve --ws` printed when it was stopped.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    upgrades: u64,
    refused: u64,
    received: u64,
    sent: u64,
    /// `1011 internal error 40, ...`, as printed.
    closes_sent: String,
    closes_received: String,
}

/// `metron serve --ws` with `flags`, as a process.
struct WsServe {
    child: Option<Child>,
    port: u16,
}

impl WsServe {
    fn start(flags: &[&str]) -> WsServe {
        let port = PORTS
            .clone()
            .find(|p| TcpListener::bind(("127.0.0.1", *p)).is_ok())
            .expect("a free port in 47450-47499");
        let addr = format!("127.0.0.1:{port}");
        let (child, _) = serve_on(&addr, &[&["--ws"], flags].concat());
        WsServe {
            child: Some(child),
            port,
        }
    }

    fn url(&self, scheme: &str, path: &str) -> String {
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }

    /// Stops it as Ctrl-C does and reads the counts it printed.
    fn stop(self) -> Counts {
        self.stop_with(libc::SIGINT)
    }

    /// Stops it with `signal` and reads the counts it printed.
    fn stop_with(mut self, signal: libc::c_int) -> Counts {
        let child = self.child.take().expect("started");
        // SAFETY: `kill` only sends a signal to the child this test
        // started, whose id it holds.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        let out = wait_bounded(child, Duration::from_secs(10));
        let text = stdout(&out);
        let line = text
            .lines()
            .find(|l| l.contains("WebSocket upgrades"))
            .unwrap_or_else(|| panic!("no counts printed: {text}"));
        parse_counts(line)
    }
}

impl Drop for WsServe {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            process::stop(child);
        }
    }
}

/// The counts of `metron serve: 5 WebSocket upgrades taken, 0 refused,
/// 1200 messages received, 1200 messages sent; closes sent: ...; closes
/// received: ...`.
fn parse_counts(line: &str) -> Counts {
    let number = |after: &str| -> u64 {
        let before = line.split(after).next().unwrap_or("");
        let word = before.split_whitespace().last().unwrap_or("");
        word.parse()
            .unwrap_or_else(|_| panic!("no count before {after:?}: {line}"))
    };
    let part = |name: &str| -> String {
        let rest = line.split(name).nth(1).unwrap_or("");
        rest.split(';').next().unwrap_or("").trim().to_string()
    };
    Counts {
        upgrades: number(" WebSocket upgrades taken"),
        refused: number(" refused"),
        received: number(" messages received"),
        sent: number(" messages sent"),
        closes_sent: part("closes sent:"),
        closes_received: part("closes received:"),
    }
}

/// `counters.ws_closes[code]`, 0 when absent.
fn closes(doc: &serde_json::Value, code: &str) -> u64 {
    doc["counters"]["ws_closes"][code].as_u64().unwrap_or(0)
}

/// 1200 messages over 4 connections at `url` with `flags`: nothing lost,
/// and the server's own count of messages received and sent is metron's
/// completed count (and any in flight at the end); the run's four
/// connections and the pre-flight's upgrade were the server's five, each
/// closed by metron with 1000.
fn echoes_reconcile(srv: WsServe, url: &str, flags: &[&str]) -> (serde_json::Value, String) {
    let load = ["-t2", "-c4", "-R400", "-d3s", "--data", "ping"];
    let (doc, text) = run(&[&load[..], flags, &[url]].concat());
    let counts = srv.stop();
    assert_ledger(&doc);
    assert_eq!(lost(&doc), 0, "{text}");
    assert_eq!(counter(&doc, "due"), 1200, "{text}");
    assert_eq!(counter(&doc, "never_sent"), 0, "{text}");
    assert_counted_by_server(&doc, "received", counts.received);
    assert_counted_by_server(&doc, "sent", counts.sent);
    assert_eq!(counts.upgrades, 5, "{counts:?}");
    assert_eq!(counts.closes_received, "1000 normal 5", "{counts:?}");
    assert_eq!(counts.closes_sent, "1000 normal 5", "{counts:?}");
    (doc, text)
}

/// Every echo metron completed is one the server counted as sent, and
/// the server received no message metron does not count.
#[test]
fn metrons_ledger_is_the_servers_count_of_messages() {
    let _g = serial();
    let srv = WsServe::start(&[]);
    let url = srv.url("ws", "/ws/echo");
    let (doc, text) = echoes_reconcile(srv, &url, &[]);
    assert_eq!(doc["protocol"], "WebSocket", "{text}");
}

/// The same over TLS: a certificate metron does not know is refused, and
/// `-k` takes it, with the same count on both sides.
#[test]
fn wss_to_metron_serve_reconciles_too() {
    let _g = serial();
    let srv = WsServe::start(&["--tls", "untrusted"]);
    let url = srv.url("wss", "/ws/echo");
    let refused = metron(&["-t1", "-c1", "-d1s", &url]);
    let err = one_line_error(&refused);
    // wording: the certificate and the flag that fixes it.
    assert!(err.contains("certificate"), "{err}");
    // The refused handshake never reached HTTP: no upgrade was counted.
    echoes_reconcile(srv, &url, &["-k"]);
}

/// A server that requires a client certificate refuses a wss:// run in
/// one line naming --cert, as over https://, whether it ends the TLS
/// handshake or (TLS 1.3) the upgrade's answer; with the right one the
/// messages go.
#[test]
fn a_refused_client_certificate_over_wss_is_one_line() {
    let _g = serial();
    let pki = crate::common::tls::Pki::new();
    let srv = WsServe::start(&[
        "--tls-cert",
        &pki.server_cert,
        "--tls-key",
        &pki.server_key,
        "--client-ca",
        &pki.ca,
    ]);
    let url = srv.url("wss", "/ws/echo");
    let base = ["-t1", "-c1", "-d1s", "--cacert", &pki.ca];
    let none = one_line_error(&metron(&[&base[..], &[url.as_str()]].concat()));
    assert!(
        none.contains("requires a client certificate") && none.contains("--cert"),
        "{none}"
    );
    let stranger = [&pki.stranger_cert, &pki.stranger_key];
    let args = ["--cert", stranger[0], "--key", stranger[1], &url];
    let refused = one_line_error(&metron(&[&base[..], &args[..]].concat()));
    assert!(
        refused.contains("refused the client certificate of --cert"),
        "{refused}"
    );
    let good = [
        "-R20",
        "--cert",
        &pki.client_cert,
        "--key",
        &pki.client_key,
        &url,
    ];
    let (doc, text) = run(&[&base[..], &good[..]].concat());
    assert_ledger(&doc);
    assert_eq!(counter(&doc, "completed"), 20, "{text}");
}

/// Told to close each connection after its third echo with 1011, the
/// server's closes are metron's, counted by name in the report and the
/// document; no message is lost, metron reopens each connection.
#[test]
fn closes_the_server_was_told_to_send_are_counted_by_name() {
    let _g = serial();
    let srv = WsServe::start(&[]);
    let url = srv.url("ws", "/ws/echo?close=1011&after=3");
    let (doc, text) = run(&["-t1", "-c2", "-R200", "-d2s", &url]);
    let counts = srv.stop();
    assert_ledger(&doc);
    assert_eq!(lost(&doc), 0, "{text}");
    let by_server = closes(&doc, "1011");
    assert!(by_server >= 100, "{text}");
    assert_eq!(counter(&doc, "reconnects"), by_server, "{text}");
    // Each connection the server closed had its three echoes; the run's
    // last two had fewer when it ended.
    let completed = counter(&doc, "completed");
    assert!(
        (3 * by_server..3 * by_server + 2 * 3).contains(&completed),
        "{text}"
    );
    assert_counted_by_server(&doc, "sent", counts.sent);
    // The server sent one 1011 per connection it closed and heard it back;
    // the run's two last connections (and the pre-flight's) it left to
    // metron, which closed them with 1000.
    let told = format!("1011 internal error {by_server}");
    assert!(counts.closes_sent.contains(&told), "{counts:?}");
    assert!(counts.closes_received.contains(&told), "{counts:?}");
    // wording: the report names the code.
    assert!(
        text.contains(&format!("Closes by the server: {told}")),
        "{text}"
    );
}

/// `--delay 20ms` and `delay=30` hold every echo back 50 ms after its
/// message came, never less; a stall of 500 ms two seconds in holds the
/// echoes due during it until its end, which shows in the corrected
/// maximum; nothing is lost, and the server sent what metron completed.
#[test]
fn delay_and_stall_hold_echoes_back() {
    let _g = serial();
    let stall = ["--stall-at", "2s", "--stall-for", "500ms"];
    let srv = WsServe::start(&[&["--delay", "20ms"], &stall[..]].concat());
    let url = srv.url("ws", "/ws/echo?delay=30");
    let (doc, text) = run(&["-t1", "-c10", "-R100", "-d4s", "--timeout", "5s", &url]);
    let counts = srv.stop();
    assert_ledger(&doc);
    assert_eq!(lost(&doc), 0, "{text}");
    // An echo held back 50 ms may leave the server after metron's run
    // ended with its message in flight.
    assert_counted_by_server(&doc, "sent", counts.sent);
    let uncorrected = histogram(&doc["histograms"]["uncorrected"]);
    let corrected = histogram(&doc["histograms"]["corrected"]);
    assert!(uncorrected.min() >= 50_000, "{text}");
    let p50 = uncorrected.value_at_quantile(0.5);
    assert!((50_000..70_000).contains(&p50), "p50 {p50} us\n{text}");
    assert!(corrected.max() >= 400_000, "the stall: {text}");
}

/// A stall of 1.5 s one second in, past `--timeout 500ms`: each
/// connection whose message outlived the timeout is given up, and the
/// server is told so with `1001 going away`, which it reads once the
/// stall ends and counts among the closes it received, one for each
/// connection metron reopened after a timeout. An upgrade the stall
/// left unanswered past the timeout is a connect that timed out, not a
/// connection the server turned away. The ledger holds.
#[test]
fn a_connection_given_up_at_the_timeout_says_going_away() {
    let _g = serial();
    let srv = WsServe::start(&["--stall-at", "1s", "--stall-for", "1500ms"]);
    let url = srv.url("ws", "/ws/echo");
    let (doc, text) = run(&["-t1", "-c2", "-R20", "-d3s", "--timeout", "500ms", &url]);
    let counts = srv.stop();
    assert_ledger(&doc);
    assert!(counter(&doc, "errors.timeout") >= 2, "{text}");
    let given_up = counter(&doc, "reopens.timeout");
    assert!(given_up >= 2, "{text}");
    assert!(counter(&doc, "connect_causes.timeout") >= 1, "{text}");
    assert_eq!(counter(&doc, "reopens.turned_away"), 0, "{text}");
    let told = format!("1001 going away {given_up}");
    assert!(
        counts.closes_received.contains(&told),
        "{counts:?}, {given_up} given up\n{text}"
    );
}

/// A client of the test's own: an upgrade, then frames written masked and
/// read unmasked with the shared crate.
struct Raw {
    tcp: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    fn connect(port: u16, path: &str) -> (Raw, String) {
        let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        (&tcp).write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(tcp.try_clone().unwrap());
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let buf = reader.buffer().to_vec();
        (Raw { tcp, buf }, head)
    }

    fn send(&mut self, fin: bool, opcode: Opcode, payload: &[u8]) {
        let mut out = Vec::new();
        metron_ws::encode(&mut out, fin, opcode, payload, [1, 2, 3, 4]);
        self.tcp.write_all(&out).unwrap();
    }

    /// The next frame from the server, and when it came; `None` at the
    /// connection's end.
    fn frame(&mut self) -> Option<(Opcode, Vec<u8>, Instant)> {
        for _ in 0..10_000 {
            if let Some((frame, used)) = metron_ws::parse(&self.buf, 1 << 20).unwrap() {
                let got = (frame.opcode, frame.payload.to_vec(), Instant::now());
                self.buf.drain(..used);
                return Some(got);
            }
            let mut more = [0u8; 4096];
            let n = self.tcp.read(&mut more).unwrap_or(0);
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&more[..n]);
        }
        panic!("no whole frame in 10000 reads")
    }
}

/// `/ws/push?events=5&first=100&gap=50`: `event 1` to `event 5`, each on
/// its timetable from the upgrade (100, 150, ... 300 ms), never early and
/// at most 40 ms late; then a close with 1000, which is answered.
#[test]
fn push_sends_its_messages_on_the_timetable_then_closes() {
    let _g = serial();
    let srv = WsServe::start(&[]);
    let asked = Instant::now();
    let (mut raw, head) = Raw::connect(srv.port, "/ws/push?events=5&first=100&gap=50");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(
        head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
        "{head}"
    );
    let upgraded = Instant::now();
    for i in 1..=5u64 {
        let (opcode, payload, came) = raw.frame().expect("a message");
        assert_eq!(opcode, Opcode::Text);
        assert_eq!(String::from_utf8(payload).unwrap(), format!("event {i}"));
        let due = Duration::from_millis(100 + 50 * (i - 1));
        let early = came.duration_since(asked);
        let late = came.duration_since(upgraded);
        assert!(early >= due, "event {i} at {early:?}, due {due:?}");
        assert!(
            late <= due + Duration::from_millis(40),
            "event {i} at {late:?}, due {due:?}"
        );
    }
    let (opcode, payload, _) = raw.frame().expect("a close");
    assert_eq!(
        (opcode, payload),
        (Opcode::Close, 1000u16.to_be_bytes().to_vec())
    );
    raw.send(true, Opcode::Close, &1000u16.to_be_bytes());
    assert!(raw.frame().is_none(), "the server ends the connection");
    let counts = srv.stop();
    assert_eq!((counts.upgrades, counts.sent), (1, 5), "{counts:?}");
    assert_eq!(counts.closes_sent, "1000 normal 1", "{counts:?}");
    assert_eq!(counts.closes_received, "1000 normal 1", "{counts:?}");
}

/// Under -R, a server that pushes from the upgrade on has sent before a
/// subscription's turn comes (each connection reopens as its last
/// subscription ends, and the next is due later): those subscriptions
/// are counted and named, their first messages count as 0, and the
/// messages held for them keep the gaps the server sent them at (20 ms),
/// each timed by the read that brought it.
#[test]
fn a_push_sent_before_its_subscription_is_due_is_named_and_keeps_its_gaps() {
    let _g = serial();
    let srv = WsServe::start(&[]);
    let url = srv.url("ws", "/ws/push?events=10&first=10&gap=20");
    let load = [
        "-t1",
        "-c2",
        "-R4",
        "-d3s",
        "--timeout",
        "5s",
        "--ws",
        "push",
    ];
    let (doc, text) = run(&[&load[..], &[url.as_str()]].concat());
    let counts = srv.stop();
    assert_ledger(&doc);
    let events = &doc["events"];
    // What the server sent is the subscriptions' messages and those held
    // for one the run ended before it opened (a message or one a
    // connection may still have had on its way at the end).
    let seen = events["count"].as_u64().unwrap() + counter(&doc, "ws_unasked");
    assert!(
        (seen..=seen + 2).contains(&counts.sent),
        "{counts:?}: {seen} seen\n{text}"
    );
    let early = events["before_due"].as_u64().expect("counted");
    assert!(early >= 3, "{early}\n{text}");
    let gap = histogram(&events["gap_histogram"]);
    for q in [0.25, 0.5, 0.75] {
        let us = gap.value_at_quantile(q) as f64;
        assert!(
            (us - 20_000.0).abs() <= 5_000.0,
            "gap p{q}: {us} us\n{text}"
        );
    }
    let said = format!("{early} subscriptions found the server's messages already there");
    assert!(text.contains(&said), "{text}");
}

/// A push with every message due at once (a trillion, no gap) to a client
/// that leaves at once: the server goes out a batch at a time, sees the
/// client leave, keeps answering others and stops on Ctrl-C with its
/// counts; it neither spins filling memory nor ignores the signal.
#[test]
fn a_push_with_everything_due_at_once_lets_its_client_leave() {
    let _g = serial();
    let srv = WsServe::start(&[]);
    let (raw, head) = Raw::connect(srv.port, "/ws/push?events=1000000000000&gap=0");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    std::thread::sleep(Duration::from_millis(300));
    drop(raw);
    std::thread::sleep(Duration::from_millis(300));
    let (_other, head) = Raw::connect(srv.port, "/ws/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    let counts = srv.stop();
    assert_eq!(counts.upgrades, 2, "{counts:?}");
    assert!(counts.sent < 1_000_000_000_000, "{counts:?}");
}

/// The echo's duties at the frame level: a fragmented message comes back
/// whole with its opcode, a ping between its fragments gets its pong
/// first, a close is answered with its code; an unmasked frame is closed
/// with 1002; a bad upgrade is a 400 naming why.
#[test]
fn echo_reassembles_answers_pings_and_closes_on_an_unmasked_frame() {
    let _g = serial();
    let srv = WsServe::start(&[]);
    let (mut raw, head) = Raw::connect(srv.port, "/ws/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    raw.send(false, Opcode::Binary, b"Hel");
    raw.send(true, Opcode::Ping, b"are you there");
    raw.send(true, Opcode::Continuation, b"lo");
    let (opcode, payload, _) = raw.frame().unwrap();
    assert_eq!((opcode, payload), (Opcode::Pong, b"are you there".to_vec()));
    let (opcode, payload, _) = raw.frame().unwrap();
    assert_eq!((opcode, payload), (Opcode::Binary, b"Hello".to_vec()));
    let long = vec![b'x'; 70_000];
    raw.send(true, Opcode::Text, &long);
    let (opcode, payload, _) = raw.frame().unwrap();
    assert_eq!((opcode, payload.len()), (Opcode::Text, long.len()));
    raw.send(true, Opcode::Close, &4001u16.to_be_bytes());
    let (opcode, payload, _) = raw.frame().unwrap();
    assert_eq!(
        (opcode, payload),
        (Opcode::Close, 4001u16.to_be_bytes().to_vec())
    );
    assert!(raw.frame().is_none());

    let (mut raw, _) = Raw::connect(srv.port, "/ws/echo");
    let mut unmasked = Vec::new();
    metron_ws::encode_unmasked(&mut unmasked, true, Opcode::Text, b"hi");
    raw.tcp.write_all(&unmasked).unwrap();
    let (opcode, payload, _) = raw.frame().unwrap();
    assert_eq!(
        (opcode, payload),
        (Opcode::Close, 1002u16.to_be_bytes().to_vec())
    );
    drop(raw);

    let mut tcp = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.write_all(b"GET /ws/echo HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    let _ = tcp.read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{answer}"
    );
    // wording: the path and what the request lacked.
    assert!(
        answer.ends_with("/ws/echo serves WebSocket only: the request has no Upgrade: websocket\n"),
        "{answer}"
    );
    let counts = srv.stop();
    assert_eq!(
        (counts.upgrades, counts.received, counts.sent),
        (2, 2, 2),
        "{counts:?}"
    );
    assert_eq!(counts.closes_received, "4001 private 1", "{counts:?}");
    assert_eq!(
        counts.closes_sent, "1002 protocol error 1, 4001 private 1",
        "{counts:?}"
    );
}

/// `delay=100` with messages sent 10 ms apart by a client with Nagle's
/// algorithm on (as most are): each echo comes back 100 ms after its own
/// message was sent, not late behind a delayed acknowledgement of the
/// one before, nor together with it.
#[test]
fn each_echo_leaves_at_its_own_due_time() {
    let _g = serial();
    let srv = WsServe::start(&[]);
    let (mut raw, head) = Raw::connect(srv.port, "/ws/echo?delay=100");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    let mut sent = Vec::new();
    for i in 0..4u8 {
        sent.push(Instant::now());
        raw.send(true, Opcode::Text, &[b'0' + i]);
        std::thread::sleep(Duration::from_millis(10));
    }
    for (i, at) in sent.iter().enumerate() {
        let (opcode, payload, came) = raw.frame().expect("an echo");
        assert_eq!((opcode, payload), (Opcode::Text, vec![b'0' + i as u8]));
        let took = came.duration_since(*at);
        let (due, late) = (Duration::from_millis(100), Duration::from_millis(20));
        assert!(
            (due..due + late).contains(&took),
            "echo {i} after {took:?}, due after {due:?}"
        );
    }
    let counts = srv.stop();
    assert_eq!((counts.received, counts.sent), (4, 4), "{counts:?}");
}

/// What the server answers `request`, up to its close.
fn ask(port: u16, request: &[u8]) -> String {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.write_all(request).unwrap();
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// An upgrade request for `target` in `version` with `host` (if any).
fn upgrade_request(target: &str, version: &str, host: bool) -> Vec<u8> {
    let host = if host { "Host: x\r\n" } else { "" };
    format!(
        "GET {target} {version}\r\n{host}Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .into_bytes()
}

/// Upgrades the server cannot take are 400s whose one line says why: a
/// parameter given twice or past 64 bits, a head past the limit, no Host,
/// HTTP/1.0. Each is counted as refused, none as taken.
#[test]
fn refused_upgrades_say_why_in_one_line() {
    let _g = serial();
    let srv = WsServe::start(&[]);
    let huge = format!("/ws/echo?delay={}", "1".repeat(160 * 1024));
    let max = u64::MAX;
    let cases = [
        (
            upgrade_request("/ws/push?events=3&events=5", "HTTP/1.1", true),
            "events= is given twice (events=3, events=5): give it once".to_string(),
        ),
        (
            upgrade_request("/ws/echo?delay=99999999999999999999", "HTTP/1.1", true),
            format!("delay=99999999999999999999 is more milliseconds than 64 bits hold: pick at most {max}"),
        ),
        (
            upgrade_request("/ws/push?first=99999999999999999999", "HTTP/1.1", true),
            format!("first=99999999999999999999 is more milliseconds than 64 bits hold: pick at most {max}"),
        ),
        (
            upgrade_request("/ws/echo", "HTTP/1.1", false),
            "the request has no Host field, which HTTP/1.1 requires".to_string(),
        ),
        (
            upgrade_request("/ws/echo", "HTTP/1.0", true),
            "a WebSocket upgrade needs HTTP/1.1, not HTTP/1.0".to_string(),
        ),
        (
            upgrade_request(&huge, "HTTP/1.1", true),
            "the request head is over 64 KiB (65536 bytes), the most this server reads: shorten its query or header fields".to_string(),
        ),
    ];
    for (request, why) in &cases {
        let answer = ask(srv.port, request);
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        // wording: one line, naming the parameter or field and the fix.
        assert!(answer.ends_with(&format!("\r\n\r\n{why}\n")), "{answer}");
    }
    let counts = srv.stop();
    // The head too large never got as far as being an upgrade.
    assert_eq!((counts.upgrades, counts.refused), (0, 5), "{counts:?}");
}

/// Stopped with SIGTERM, the server closes an open WebSocket connection
/// with 1001 (going away), hears the client's close, then prints its
/// counts with both.
#[test]
fn sigterm_closes_websockets_with_going_away() {
    let _g = serial();
    let srv = WsServe::start(&[]);
    let (mut raw, head) = Raw::connect(srv.port, "/ws/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    raw.send(true, Opcode::Text, b"hi");
    let (opcode, _, _) = raw.frame().expect("the echo");
    assert_eq!(opcode, Opcode::Text);
    let answered = std::thread::spawn(move || {
        let (opcode, payload, _) = raw.frame().expect("a close");
        raw.send(true, Opcode::Close, &payload);
        (opcode, payload)
    });
    let counts = srv.stop_with(libc::SIGTERM);
    let (opcode, payload) = answered.join().unwrap();
    assert_eq!(
        (opcode, payload),
        (Opcode::Close, 1001u16.to_be_bytes().to_vec())
    );
    assert_eq!(counts.sent, 1, "{counts:?}");
    assert_eq!(counts.closes_sent, "1001 going away 1", "{counts:?}");
    assert_eq!(counts.closes_received, "1001 going away 1", "{counts:?}");
}

/// `--ws-deflate` against a server that does not speak permessage-deflate
/// (metron serve answers the offer without it): the messages go
/// uncompressed, the ledger still reconciles, and a warning says so on
/// every connection, with the fix.
#[test]
fn a_server_that_declines_deflate_is_named_and_messages_go_plain() {
    let _g = serial();
    let srv = WsServe::start(&[]);
    let url = srv.url("ws", "/ws/echo");
    let (doc, text) = echoes_reconcile(srv, &url, &["--ws-deflate"]);
    assert_eq!(counter(&doc, "ws_deflate_declined"), 4, "{text}");
    assert_eq!(counter(&doc, "ws_deflate_agreed"), 0, "{text}");
    // wording: the warning names the count and both fixes.
    assert!(
        text.contains("did not agree to permessage-deflate on 4 of 4 connections")
            && text.contains("drop --ws-deflate"),
        "{text}"
    );
}
