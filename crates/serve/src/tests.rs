//! End-to-end tests: a real server on a loopback port, plain blocking std
//! clients, and exact bytes on the wire.
//!
//! Each test starts its own server on an OS-chosen port, so they run in
//! parallel. Timing tests assert lower bounds exactly (the server may not
//! answer early) and upper bounds loosely (a busy machine may be late).

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::fault_bytes::GARBAGE;
use super::{
    BadCert, Fault, FaultPlan, Per, Probability, RecordedRequest, ServeConfig, Server, Sse,
    StallPlan,
};

const HEAD_200: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n";
const GET: &str = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

fn serve(cfg: ServeConfig) -> Server {
    Server::start(cfg).expect("server starts")
}

fn body_size(n: u64) -> ServeConfig {
    ServeConfig {
        body_size: n,
        ..ServeConfig::default()
    }
}

fn connect(server: &Server) -> TcpStream {
    let stream = TcpStream::connect(server.addr()).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    stream
}

fn send(stream: &mut TcpStream, bytes: &str) {
    stream.write_all(bytes.as_bytes()).expect("request written");
}

/// Reads exactly as many bytes as `want` has and compares them.
fn expect(stream: &mut TcpStream, want: &str) {
    let mut got = vec![0; want.len()];
    if let Err(e) = stream.read_exact(&mut got) {
        panic!("reading {want:?}: {e}");
    }
    assert_eq!(String::from_utf8_lossy(&got), want);
}

/// The server closed its side: the next read is end-of-file.
fn expect_closed(stream: &mut TcpStream) {
    let mut buf = [0; 256];
    match stream.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => panic!("more bytes: {:?}", String::from_utf8_lossy(&buf[..n])),
        Err(e) => panic!("connection not closed: {e}"),
    }
}

fn ok(body: usize) -> String {
    let body = "x".repeat(body);
    format!("{HEAD_200}Content-Length: {}\r\n\r\n{body}", body.len())
}

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let server = serve(body_size(5));
    let mut client = connect(&server);
    for _ in 0..100 {
        send(&mut client, GET);
        expect(
            &mut client,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nxxxxx",
        );
    }
    let stats = server.stats();
    assert_eq!(stats.requests(), 100);
    assert_eq!(stats.connections(), 1);
    assert_eq!(stats.responses(200), 100);
    assert_eq!(stats.responses_total(), 100);
    assert_eq!(stats.bytes_received(), 100 * GET.len() as u64);
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = serve(body_size(2));
    let mut client = connect(&server);
    send(
        &mut client,
        "GET /status/404 HTTP/1.1\r\n\r\nHEAD / HTTP/1.1\r\n\r\nGET /bytes/3?q HTTP/1.1\r\n\r\n",
    );
    expect(
        &mut client,
        "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nxx\
         HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n\
         HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nxxx",
    );
    send(&mut client, GET);
    expect(&mut client, &ok(2));
    assert_eq!(server.stats().requests(), 4);
}

#[test]
fn head_gets_every_header_and_no_body() {
    let server = serve(ServeConfig {
        body_size: 6,
        chunked: true,
        ..ServeConfig::default()
    });
    let mut client = connect(&server);
    send(&mut client, "HEAD /anything HTTP/1.1\r\n\r\n");
    expect(
        &mut client,
        &format!("{HEAD_200}Transfer-Encoding: chunked\r\n\r\n"),
    );
    // No stray body bytes: the next response starts right after the head.
    send(&mut client, "HEAD /eof HTTP/1.1\r\n\r\n");
    expect(&mut client, &format!("{HEAD_200}Connection: close\r\n\r\n"));
    expect_closed(&mut client);
}

#[test]
fn chunked_route_sends_chunks_and_a_trailer() {
    let server = serve(body_size(10));
    let mut client = connect(&server);
    send(&mut client, "GET /chunked HTTP/1.1\r\n\r\n");
    expect(
        &mut client,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\
         Trailer: X-Body-Bytes\r\n\r\n\
         4\r\nxxxx\r\n4\r\nxxxx\r\n2\r\nxx\r\n0\r\nX-Body-Bytes: 10\r\n\r\n",
    );
    send(&mut client, GET);
    expect(&mut client, &ok(10));
}

#[test]
fn chunked_flag_frames_the_default_response() {
    let server = serve(ServeConfig {
        body_size: 3,
        chunked: true,
        ..ServeConfig::default()
    });
    let mut client = connect(&server);
    for _ in 0..2 {
        send(&mut client, GET);
        expect(
            &mut client,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n\
             1\r\nx\r\n1\r\nx\r\n1\r\nx\r\n0\r\n\r\n",
        );
    }
}

#[test]
fn eof_route_ends_the_body_by_closing() {
    let server = serve(body_size(4));
    let mut client = connect(&server);
    send(&mut client, "GET /eof HTTP/1.1\r\n\r\n");
    let mut all = String::new();
    client.read_to_string(&mut all).expect("read until close");
    let want = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nxxxx";
    assert_eq!(all, want);
}

#[test]
fn close_route_answers_then_closes() {
    let server = serve(body_size(1));
    let mut client = connect(&server);
    send(&mut client, "GET /close HTTP/1.1\r\n\r\n");
    let want = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\
                Connection: close\r\n\r\nx";
    expect(&mut client, want);
    expect_closed(&mut client);
}

#[test]
fn status_route_sets_the_status() {
    let server = serve(body_size(3));
    let mut client = connect(&server);
    send(&mut client, "GET /status/500 HTTP/1.1\r\n\r\n");
    expect(
        &mut client,
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nxxx",
    );
    send(&mut client, "GET /status/503/ignored?x=1 HTTP/1.1\r\n\r\n");
    expect(
        &mut client,
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nxxx",
    );
    let stats = server.stats();
    assert_eq!((stats.responses(500), stats.responses(503)), (1, 1));
}

#[test]
fn no_content_and_not_modified_have_no_body() {
    let server = serve(body_size(3));
    let mut client = connect(&server);
    send(
        &mut client,
        "GET /status/204 HTTP/1.1\r\n\r\nGET /status/304 HTTP/1.1\r\n\r\n",
    );
    send(&mut client, GET);
    expect(
        &mut client,
        &format!(
            "HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\n\r\n\
             HTTP/1.1 304 Not Modified\r\nContent-Type: text/plain\r\n\r\n{}",
            ok(3)
        ),
    );
    assert_eq!(server.stats().responses(204), 1);
}

#[test]
fn close_every_closes_after_the_nth_response() {
    let server = serve(ServeConfig {
        close_every: Some(2),
        ..ServeConfig::default()
    });
    let mut client = connect(&server);
    send(&mut client, GET);
    expect(&mut client, &format!("{HEAD_200}Content-Length: 0\r\n\r\n"));
    // Pipelined extras are ignored once the second response closes.
    send(&mut client, &GET.repeat(3));
    expect(
        &mut client,
        &format!("{HEAD_200}Content-Length: 0\r\nConnection: close\r\n\r\n"),
    );
    expect_closed(&mut client);
    // The count is per connection.
    let mut again = connect(&server);
    send(&mut again, GET);
    expect(&mut again, &ok(0));
    assert_eq!(server.stats().connections(), 2);
}

#[test]
fn a_client_asking_to_close_is_obeyed() {
    let server = serve(body_size(1));
    let mut client = connect(&server);
    send(&mut client, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    expect(
        &mut client,
        &format!("{HEAD_200}Content-Length: 1\r\nConnection: close\r\n\r\nx"),
    );
    expect_closed(&mut client);
}

#[test]
fn http10_closes_unless_kept_alive() {
    let server = serve(ServeConfig {
        body_size: 2,
        chunked: true,
        ..ServeConfig::default()
    });
    let mut client = connect(&server);
    send(
        &mut client,
        "GET /status/200 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    );
    // No chunked coding for HTTP/1.0: the body ends with the connection.
    expect(
        &mut client,
        &format!("{HEAD_200}Connection: close\r\n\r\nxx"),
    );
    expect_closed(&mut client);

    let mut client = connect(&server);
    send(
        &mut client,
        "GET /status/204 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    );
    let kept =
        "HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\nConnection: keep-alive\r\n\r\n";
    expect(&mut client, kept);
    send(&mut client, "GET /status/204 HTTP/1.0\r\n\r\n");
    let closed = "HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";
    expect(&mut client, closed);
    expect_closed(&mut client);
}

#[test]
fn request_bodies_are_recorded() {
    let server = serve(ServeConfig {
        record: 2,
        ..ServeConfig::default()
    });
    let mut client = connect(&server);
    send(
        &mut client,
        "POST /submit?id=7 HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello\
         PUT /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n\
         GET /submit HTTP/1.1\r\n\r\n",
    );
    expect(&mut client, &ok(0).repeat(3));
    let stats = server.stats();
    let post = RecordedRequest {
        method: "POST".into(),
        path: "/submit?id=7".into(),
        version: 1,
        headers: vec![
            ("Host".into(), b"t".to_vec()),
            ("Content-Length".into(), b"5".to_vec()),
        ],
        body: b"hello".to_vec(),
        received: stats.recorded()[0].received,
    };
    let recorded = stats.recorded();
    assert_eq!(recorded.len(), 2, "only the first two are kept");
    assert_eq!(recorded[0], post);
    assert_eq!(
        (recorded[1].method.as_str(), &recorded[1].body[..]),
        ("PUT", &b"abc"[..])
    );
    assert_eq!(stats.path_count("/submit"), 2);
    assert_eq!(stats.path_count("/up"), 1);
    assert_eq!(stats.requests(), 3);
}

#[test]
fn bodies_are_skipped_when_not_recorded() {
    let server = serve(body_size(1));
    let mut client = connect(&server);
    let big = "y".repeat(200_000);
    let request = format!(
        "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n{big}{GET}",
        big.len()
    );
    send(&mut client, &request);
    expect(&mut client, &ok(1).repeat(2));
    let stats = server.stats();
    assert_eq!(stats.requests(), 2);
    assert_eq!(stats.bytes_received(), request.len() as u64);
    assert!(stats.recorded().is_empty());
    assert_eq!(
        stats.path_count("/"),
        0,
        "no per-path counts without inspection"
    );
}

#[test]
fn expect_continue_gets_the_go_ahead() {
    let server = serve(ServeConfig::default());
    let mut client = connect(&server);
    send(
        &mut client,
        "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
    );
    expect(&mut client, "HTTP/1.1 100 Continue\r\n\r\n");
    send(&mut client, "hi");
    expect(&mut client, &ok(0));
}

#[test]
fn garbage_gets_400_and_close() {
    let server = serve(ServeConfig::default());
    let bad = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\
               Connection: close\r\n\r\nbad request\n";
    for garbage in [
        "\x00\x01\x02 nonsense\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: nine\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "GET /status/abc HTTP/1.1\r\n\r\n",
        "GET /delay/-5 HTTP/1.1\r\n\r\n",
    ] {
        let mut client = connect(&server);
        send(&mut client, garbage);
        expect(&mut client, bad);
        expect_closed(&mut client);
    }
    let stats = server.stats();
    assert_eq!(stats.bad_requests(), 3);
    assert_eq!(stats.responses(400), 5);
    assert_eq!(stats.requests(), 2, "bad routes are still requests");
}

#[test]
fn an_endless_head_is_refused() {
    let server = serve(ServeConfig::default());
    let mut client = connect(&server);
    send(&mut client, "GET / HTTP/1.1\r\n");
    let pad = "X-Pad: 0123456789abcdef0123456789abcdef\r\n".repeat(2000);
    // The server may close before taking every byte; that is the point.
    let _ = client.write_all(pad.as_bytes());
    let mut head = [0; 24];
    client
        .read_exact(&mut head)
        .expect("an answer before the close");
    assert_eq!(&head, b"HTTP/1.1 400 Bad Request");
}

#[test]
fn abandoned_connections_do_not_hurt_the_server() {
    let server = serve(body_size(1));
    let half = connect(&server);
    (&half).write_all(b"GET / HTTP/1.1\r\nHo").unwrap();
    drop(half);
    let early = connect(&server);
    early.shutdown(Shutdown::Both).unwrap();
    let mut client = connect(&server);
    send(&mut client, GET);
    expect(&mut client, &ok(1));
}

#[test]
fn a_client_that_half_closes_still_gets_its_answers() {
    let server = serve(body_size(1));
    let mut client = connect(&server);
    send(&mut client, &GET.repeat(2));
    client.shutdown(Shutdown::Write).unwrap();
    expect(&mut client, &ok(1).repeat(2));
    expect_closed(&mut client);
}

#[test]
fn large_bodies_stream_intact() {
    let size = 300_000;
    let server = serve(body_size(size as u64));
    let mut client = connect(&server);
    send(
        &mut client,
        &format!("{GET}GET /bytes/1000001 HTTP/1.1\r\n\r\n"),
    );
    expect(&mut client, &ok(size));
    expect(&mut client, &ok(1_000_001));
    send(
        &mut client,
        "GET /chunked HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    let mut all = Vec::new();
    client.read_to_end(&mut all).unwrap();
    let text = String::from_utf8(all).unwrap();
    let chunk = format!("4000\r\n{}\r\n", "x".repeat(16384));
    let tail = 300_000 - 18 * 16384;
    let want = format!(
        "{HEAD_200}Transfer-Encoding: chunked\r\nTrailer: X-Body-Bytes\r\nConnection: close\r\n\r\n\
         {}{tail:x}\r\n{}\r\n0\r\nX-Body-Bytes: 300000\r\n\r\n",
        chunk.repeat(18),
        "x".repeat(tail),
    );
    assert!(text == want, "chunked body differs");
}

#[test]
fn delays_hold_responses_back() {
    let server = serve(ServeConfig {
        delay: Duration::from_millis(40),
        ..ServeConfig::default()
    });
    let mut client = connect(&server);
    let sent = Instant::now();
    send(&mut client, "GET /delay/60.5 HTTP/1.1\r\n\r\n");
    expect(&mut client, &ok(0));
    let took = sent.elapsed();
    assert!(
        took >= Duration::from_micros(100_500),
        "answered after {took:?}"
    );
    assert!(took < Duration::from_secs(1), "answered after {took:?}");
    let sent = Instant::now();
    send(&mut client, GET);
    expect(&mut client, &ok(0));
    assert!(sent.elapsed() >= Duration::from_millis(40));
}

#[test]
fn nothing_is_written_during_a_stall() {
    let ms = Duration::from_millis;
    let server = serve(ServeConfig {
        stall: Some(StallPlan::once(ms(300), ms(500)).unwrap()),
        ..ServeConfig::default()
    });
    let start = server.started_at();
    let mut client = connect(&server);
    send(&mut client, GET);
    expect(&mut client, &ok(0));
    assert!(start.elapsed() < ms(300), "answered before the stall");

    sleep((start + ms(400)).saturating_duration_since(Instant::now()));
    let mut other = connect(&server);
    send(&mut client, GET);
    send(&mut other, "GET /status/202 HTTP/1.1\r\n\r\n");
    expect(&mut client, &ok(0));
    let answered = start.elapsed();
    assert!(answered >= ms(795), "answered {answered:?} after start");
    assert!(answered < ms(1500), "answered {answered:?} after start");
    expect(
        &mut other,
        "HTTP/1.1 202 Accepted\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n",
    );
    assert!(start.elapsed() >= ms(795));
}

#[test]
fn periodic_stalls_repeat() {
    let ms = Duration::from_millis;
    let server = serve(ServeConfig {
        stall: Some(StallPlan::periodic(ms(200), ms(100), None).unwrap()),
        ..ServeConfig::default()
    });
    let start = server.started_at();
    let mut client = connect(&server);
    for (send_at, not_before) in [(250, 300), (450, 500)] {
        sleep((start + ms(send_at)).saturating_duration_since(Instant::now()));
        send(&mut client, GET);
        expect(&mut client, &ok(0));
        let answered = start.elapsed();
        assert!(answered >= ms(not_before - 5), "answered at {answered:?}");
    }
}

/// A server whose successful responses are `events` events, the first
/// `first` after the head, then `gap` apart.
fn sse(events: u64, first: Duration, gap: Duration) -> ServeConfig {
    ServeConfig {
        sse: Some(Sse { events, first, gap }),
        // Replaced by the events.
        body_size: 5,
        chunked: true,
        ..ServeConfig::default()
    }
}

/// The head of a response, up to and including its empty line.
fn read_head(reader: &mut impl BufRead) -> String {
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        match reader.read_line(&mut head) {
            Ok(0) => panic!("closed after {head:?}"),
            Ok(_) => {}
            Err(e) => panic!("reading the head after {head:?}: {e}"),
        }
    }
    head
}

/// Decodes a chunked body: its bytes, and when each data chunk was read.
fn read_chunks(reader: &mut impl BufRead) -> (Vec<u8>, Vec<Instant>) {
    let (mut body, mut arrivals) = (Vec::new(), Vec::new());
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("chunk size");
        let size = usize::from_str_radix(line.trim_end(), 16).expect("hex size");
        let mut data = vec![0; size + 2];
        reader.read_exact(&mut data).expect("chunk data");
        assert!(data.ends_with(b"\r\n"), "{line:?} {data:?}");
        if size == 0 {
            return (body, arrivals);
        }
        arrivals.push(Instant::now());
        body.extend_from_slice(&data[..size]);
    }
}

/// Three events: two numbered, then the end marker.
const EVENTS: &str = "id: 1\ndata: event 1\n\nid: 2\ndata: event 2\n\ndata: [DONE]\n\n";
const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                        Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";

#[test]
fn sse_events_come_one_chunk_each_when_due() {
    let gap = Duration::from_millis(50);
    let server = serve(sse(3, Duration::ZERO, gap));
    let client = connect(&server);
    let mut reader = BufReader::new(&client);
    let sent = Instant::now();
    (&client).write_all(GET.as_bytes()).unwrap();
    let head = read_head(&mut reader);
    let head_at = Instant::now();
    assert_eq!(head, SSE_HEAD);
    let (body, arrivals) = read_chunks(&mut reader);
    assert_eq!(String::from_utf8_lossy(&body), EVENTS);
    assert_eq!(arrivals.len(), 3, "one chunk per event");
    // The events are timed from the head's write, which comes after the
    // request and before the head is read: from the request the bound is
    // exact, from the head it allows for the test's own thread being slow
    // to note the head's arrival.
    let third = arrivals[2];
    assert!(third - sent >= 2 * gap, "{:?}", third - sent);
    assert!(third - head_at >= gap * 3 / 2, "{:?}", third - head_at);
    assert!(arrivals[1] - head_at >= gap / 2, "not sent with the first");
    assert!(third - sent < Duration::from_secs(1), "{:?}", third - sent);
    assert_eq!(server.stats().sse_events(), 3);
    // The connection stays open; HEAD gets the head alone, and routes that
    // name their own body keep it.
    (&client)
        .write_all(b"HEAD / HTTP/1.1\r\n\r\nGET /bytes/2 HTTP/1.1\r\n\r\n")
        .unwrap();
    assert_eq!(read_head(&mut reader), SSE_HEAD);
    let plain = format!("{HEAD_200}Transfer-Encoding: chunked\r\n\r\n");
    assert_eq!(read_head(&mut reader), plain);
    assert_eq!(read_chunks(&mut reader).0, b"xx");
    let stats = server.stats();
    assert_eq!((stats.sse_events(), stats.responses(200)), (3, 3));
}

#[test]
fn the_head_goes_out_at_once_and_the_first_event_after_sse_first() {
    let first = Duration::from_millis(200);
    let gap = Duration::from_millis(20);
    let server = serve(sse(2, first, gap));
    let client = connect(&server);
    let mut reader = BufReader::new(&client);
    let sent = Instant::now();
    (&client).write_all(GET.as_bytes()).unwrap();
    assert_eq!(read_head(&mut reader), SSE_HEAD);
    let head_at = Instant::now();
    let (body, arrivals) = read_chunks(&mut reader);
    let want = "id: 1\ndata: event 1\n\ndata: [DONE]\n\n";
    assert_eq!(String::from_utf8_lossy(&body), want);
    // Had the head waited for the first event, they would come together.
    // A lower bound only, with room for this thread noting the head late;
    // the gap after it counts from the first event's due time.
    let to_first = arrivals[0] - head_at;
    assert!(
        to_first >= first * 3 / 4,
        "first event {to_first:?} after the head"
    );
    assert!(
        arrivals[1] - sent >= first + gap,
        "{:?}",
        arrivals[1] - sent
    );
    assert_eq!(server.stats().sse_events(), 2);
}

#[test]
fn an_event_due_during_a_stall_waits_for_its_end() {
    let ms = Duration::from_millis;
    // Events due at about 0, 150, 300 and 450 ms; the stall covers the
    // last two, which both go out once it ends at 550 ms.
    let server = serve(ServeConfig {
        stall: Some(StallPlan::once(ms(250), ms(300)).unwrap()),
        ..sse(4, Duration::ZERO, ms(150))
    });
    let start = server.started_at();
    let client = connect(&server);
    let mut reader = BufReader::new(&client);
    (&client).write_all(GET.as_bytes()).unwrap();
    assert_eq!(read_head(&mut reader), SSE_HEAD);
    let (body, arrivals) = read_chunks(&mut reader);
    assert_eq!(arrivals.len(), 4);
    assert!(String::from_utf8_lossy(&body).ends_with("data: [DONE]\n\n"));
    for (i, at) in arrivals.iter().enumerate().skip(2) {
        let since_start = *at - start;
        assert!(since_start >= ms(545), "event {} at {since_start:?}", i + 1);
    }
    assert_eq!(server.stats().sse_events(), 4);
}

#[test]
fn sse_events_end_with_the_connection_for_http10() {
    let server = serve(sse(3, Duration::ZERO, Duration::from_millis(1)));
    let mut client = connect(&server);
    send(&mut client, "GET / HTTP/1.0\r\n\r\n");
    let all = read_until_closed(&mut client);
    let want = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
         Cache-Control: no-cache\r\nConnection: close\r\n\r\n{EVENTS}"
    );
    assert_eq!(String::from_utf8_lossy(&all), want);
    assert_eq!(server.stats().sse_events(), 3);
}

#[test]
fn several_threads_serve_several_connections() {
    let server = serve(ServeConfig {
        threads: 2,
        body_size: 8,
        ..ServeConfig::default()
    });
    let addr = server.addr();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(addr).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(2)))
                    .unwrap();
                for _ in 0..25 {
                    send(&mut stream, GET);
                    expect(&mut stream, &ok(8));
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let stats = server.stats();
    assert_eq!((stats.connections(), stats.requests()), (4, 100));
}

#[test]
fn shutdown_closes_connections_and_the_listener() {
    let server = serve(ServeConfig::default());
    let addr = server.addr();
    let mut client = connect(&server);
    send(&mut client, GET);
    expect(&mut client, &ok(0));
    let stats = server.stats();
    assert_eq!(stats.open_connections(), 1);
    server.shutdown();
    let mut buf = [0; 16];
    match client.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        other => panic!("connection still open: {other:?}"),
    }
    assert_eq!(stats.open_connections(), 0);
    assert!(TcpStream::connect(addr).is_err(), "still listening");
}

#[test]
fn bad_configs_are_refused_at_start() {
    let zero = ServeConfig {
        threads: 0,
        ..ServeConfig::default()
    };
    let err = Server::start(zero).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let taken = serve(ServeConfig::default());
    let clash = ServeConfig {
        listen: taken.addr(),
        ..ServeConfig::default()
    };
    assert_eq!(
        Server::start(clash).unwrap_err().kind(),
        ErrorKind::AddrInUse
    );
}

#[test]
fn starts_and_stops_inside_an_async_context() {
    // Callers may live on a runtime of their own; dropping the server there
    // must not try to drop its runtime inside theirs.
    let outer = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    outer.block_on(async {
        let server = serve(body_size(2));
        let mut client = connect(&server);
        send(&mut client, GET);
        expect(&mut client, &ok(2));
        server.shutdown();
        expect_closed(&mut client);
    });
}

/// Everything the server writes until it closes.
fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    stream.read_to_end(&mut all).expect("the server closes");
    all
}

fn faulty(plan: FaultPlan) -> ServeConfig {
    ServeConfig {
        fault: Some(plan),
        ..body_size(4)
    }
}

#[test]
fn fault_routes_write_their_bytes_then_close() {
    let server = serve(body_size(4));
    let cases: [(&str, &[u8]); 7] = [
        ("close-before-head", b""),
        ("close-mid-head", b"HTTP/1.1 200 OK\r\nContent-Type: t"),
        (
            "close-mid-body",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nxx",
        ),
        ("garbage", b"\x00\x17\xfe\xff not HTTP \x01\x02\x03\r\n\r\n"),
        (
            "bad-status-line",
            b"HTTP/1.1 2OO OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n",
        ),
        (
            "bad-chunk",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n\
              zz\r\nxx\r\n0\r\n\r\n",
        ),
        (
            "short-body",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nxxx",
        ),
    ];
    for (name, want) in cases {
        let mut client = connect(&server);
        send(&mut client, &format!("GET /fault/{name} HTTP/1.1\r\n\r\n"));
        let got = read_until_closed(&mut client);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(want),
            "{name}"
        );
    }
    let stats = server.stats();
    assert_eq!(stats.faults(), 7);
    assert_eq!(stats.responses_total(), 0, "a fault is not a response");
}

#[test]
fn the_huge_head_is_sent_whole() {
    let server = serve(ServeConfig::default());
    let mut client = connect(&server);
    send(&mut client, "GET /fault/huge-head HTTP/1.1\r\n\r\n");
    let got = read_until_closed(&mut client);
    assert!(got.len() > 1 << 20, "{}", got.len());
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Pad: ppp"));
    assert!(got.ends_with(b"pp\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
}

#[test]
fn reset_sends_rst() {
    let server = serve(ServeConfig::default());
    let mut client = connect(&server);
    send(&mut client, "GET /fault/reset HTTP/1.1\r\n\r\n");
    let mut buf = [0; 64];
    match client.read(&mut buf) {
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        other => panic!("expected a reset, got {other:?}"),
    }
}

#[test]
fn never_answer_holds_the_connection_silently_until_the_client_leaves() {
    let server = serve(ServeConfig::default());
    let mut client = connect(&server);
    client
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    send(&mut client, "GET /fault/never-answer HTTP/1.1\r\n\r\n");
    let mut buf = [0; 64];
    let silent = client.read(&mut buf).unwrap_err();
    assert!(
        matches!(silent.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{silent}"
    );
    // Later requests are swallowed too, and the connection stays open.
    send(&mut client, GET);
    assert!(client.read(&mut buf).is_err(), "no answer, no close");
    let stats = server.stats();
    assert_eq!((stats.open_connections(), stats.faults()), (1, 1));
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(2);
    while stats.open_connections() > 0 && Instant::now() < deadline {
        sleep(Duration::from_millis(5));
    }
    assert_eq!(stats.open_connections(), 0, "the server let go");
}

#[test]
fn trickle_writes_one_byte_at_a_time_and_keeps_the_connection() {
    let server = serve(ServeConfig {
        trickle_interval: Duration::from_millis(15),
        ..body_size(2)
    });
    let mut client = connect(&server);
    let started = Instant::now();
    send(&mut client, "GET /fault/trickle HTTP/1.1\r\n\r\n");
    let want = ok(2);
    let mut got = Vec::new();
    let mut reads = 0;
    while got.len() < want.len() {
        let mut buf = [0; 256];
        let n = client.read(&mut buf).expect("a trickled byte");
        assert!(n > 0, "closed early after {got:?}");
        got.extend_from_slice(&buf[..n]);
        reads += 1;
    }
    assert_eq!(String::from_utf8_lossy(&got), want);
    let took = started.elapsed();
    let floor = Duration::from_millis(15) * (want.len() as u32 - 1);
    assert!(took >= floor, "{} bytes in {took:?}", want.len());
    // Bytes come apart, so most reads see one (a slow reader may see two).
    assert!(reads >= want.len() / 2, "{reads} reads");
    send(&mut client, GET);
    expect(&mut client, &ok(2));
}

#[test]
fn a_planned_fault_follows_the_answers_before_it() {
    let server = serve(faulty(FaultPlan::every(Fault::Garbage, 3)));
    let mut client = connect(&server);
    // Three pipelined requests: two answers, then the garbage, then close.
    send(&mut client, &GET.repeat(3));
    let got = read_until_closed(&mut client);
    let mut want = ok(4).repeat(2).into_bytes();
    want.extend_from_slice(GARBAGE);
    assert_eq!(got, want);
    // The count is server-wide: the sixth response is the next fault.
    let mut other = connect(&server);
    send(&mut other, &GET.repeat(2));
    expect(&mut other, &ok(4).repeat(2));
    send(&mut other, GET);
    assert_eq!(read_until_closed(&mut other), GARBAGE);
    assert_eq!(server.stats().faults(), 2);
}

#[test]
fn per_connection_faults_spoil_every_response_on_picked_connections() {
    let plan = FaultPlan {
        per: Per::Connection,
        ..FaultPlan::every(Fault::Trickle, 2)
    };
    let server = serve(ServeConfig {
        trickle_interval: Duration::from_millis(1),
        ..faulty(plan)
    });
    // Connections 2 and 4 are picked; a trickled response is still whole.
    for faults_after in [0, 2, 2, 4] {
        let mut client = connect(&server);
        for _ in 0..2 {
            send(&mut client, GET);
            expect(&mut client, &ok(4));
        }
        assert_eq!(server.stats().faults(), faults_after);
    }
    assert_eq!(server.stats().faults(), 4);
    assert_eq!(server.stats().responses(200), 4);
}

#[test]
fn a_probability_picks_the_same_responses_every_time() {
    let p = Probability::new(0.5).unwrap();
    let run = || {
        let server = serve(faulty(FaultPlan::chance(Fault::CloseBeforeHead, p, 11)));
        (0..16)
            .map(|_| {
                let mut client = connect(&server);
                send(&mut client, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
                read_until_closed(&mut client).is_empty()
            })
            .collect::<Vec<bool>>()
    };
    let first = run();
    assert_eq!(first, run());
    assert!(first.contains(&true) && first.contains(&false), "{first:?}");
}

#[test]
fn tls_serves_with_a_certificate_only_an_insecure_client_accepts() {
    use metron_core::engine::setup::{TlsOptions, Trust};
    use metron_core::engine::transport::{client_config, is_certificate_error};
    use rustls::pki_types::ServerName;
    let server = serve(ServeConfig {
        tls: Some(BadCert::Untrusted),
        ..body_size(3)
    });
    assert_eq!(server.url(), format!("https://{}", server.addr()));
    let name = ServerName::try_from("localhost").unwrap();
    let tls = |insecure: bool| {
        let trust = if insecure {
            Trust::Insecure
        } else {
            Trust::System
        };
        let opts = TlsOptions {
            trust,
            identity: None,
        };
        let http1 = [metron_core::engine::setup::Protocol::Http1];
        let config = client_config(&opts, &http1).config;
        let conn = rustls::ClientConnection::new(config, name.clone()).unwrap();
        rustls::StreamOwned::new(conn, connect(&server))
    };
    let mut verified = tls(false);
    let refused = verified.write_all(GET.as_bytes()).unwrap_err();
    assert!(is_certificate_error(&refused), "{refused}");

    let mut insecure = tls(true);
    insecure
        .write_all(b"GET / HTTP/1.1\r\n\r\nGET /fault/close-mid-body HTTP/1.1\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    // The server closes without close_notify after the cut-off body.
    let _ = insecure.read_to_end(&mut got);
    let want = format!("{}{HEAD_200}Content-Length: 3\r\n\r\nx", ok(3));
    assert_eq!(String::from_utf8_lossy(&got), want);
}

/// Upgrades a connection to `path` of a `--ws` server; panics unless the
/// answer is a `101`. Returns the stream and what came after the head.
fn ws_connect(server: &Server, path: &str) -> (TcpStream, Vec<u8>) {
    let mut stream = connect(server);
    send(
        &mut stream,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ),
    );
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") && got.len() < 4096 {
        stream.read_exact(&mut byte).expect("the answer's head");
        got.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&got);
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    (stream, Vec::new())
}

fn ws_config() -> ServeConfig {
    ServeConfig {
        ws: true,
        ..ServeConfig::default()
    }
}

/// A server shutting down closes an open WebSocket connection with 1001
/// (going away), waits for the client's close, and counts both.
#[test]
fn shutdown_closes_websockets_with_going_away() {
    let server = serve(ws_config());
    let stats = server.stats();
    let (mut stream, mut buf) = ws_connect(&server, "/ws/echo");
    let stopping = std::thread::spawn(move || server.shutdown());
    let mut more = [0u8; 256];
    let frame = (0..100).find_map(|_| {
        if let Ok(Some((frame, _))) = metron_ws::parse(&buf, 1 << 16) {
            return Some((frame.opcode, frame.payload.to_vec()));
        }
        let n = stream.read(&mut more).unwrap_or(0);
        buf.extend_from_slice(&more[..n]);
        None
    });
    assert_eq!(
        frame,
        Some((metron_ws::Opcode::Close, 1001u16.to_be_bytes().to_vec()))
    );
    let mut close = Vec::new();
    let code = 1001u16.to_be_bytes();
    metron_ws::encode(
        &mut close,
        true,
        metron_ws::Opcode::Close,
        &code,
        [1, 2, 3, 4],
    );
    stream.write_all(&close).unwrap();
    stopping.join().unwrap();
    assert_eq!(stats.ws_closes_sent(), [(1001, 1)]);
    assert_eq!(stats.ws_closes_received(), [(1001, 1)]);
}

/// A message counts as sent once it is written whole to the socket: a
/// push to a client that reads nothing until the server is gone counts
/// exactly the messages the client then finds, not those it queued.
#[test]
fn messages_sent_are_those_written() {
    let server = serve(ws_config());
    let stats = server.stats();
    let (mut stream, mut buf) = ws_connect(&server, "/ws/push?events=100000000&gap=0");
    // The server fills the socket's buffers and waits, a batch in hand.
    sleep(Duration::from_millis(300));
    server.shutdown();
    let sent = stats.ws_messages_sent();
    assert!(sent > 0);
    let mut messages = 0u64;
    let mut more = vec![0u8; 64 * 1024];
    // Every byte the server wrote is in the client's buffers by now.
    for _ in 0..1_000_000 {
        while let Ok(Some((_, used))) = metron_ws::parse(&buf, 1 << 16) {
            buf.drain(..used);
            messages += 1;
        }
        match stream.read(&mut more) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&more[..n]),
        }
    }
    assert_eq!(sent, messages);
}

/// The counts `metron serve --ws` ends with say which upgrades were
/// taken and which refused.
#[test]
fn websocket_counts_say_taken_and_refused() {
    let stats = super::ServerStats::new(0);
    stats.ws_upgraded();
    stats.ws_upgraded();
    stats.ws_upgrade_refused();
    assert_eq!(
        super::ws_counts(&stats),
        "metron serve: 2 WebSocket upgrades taken, 1 refused, 0 messages received, \
         0 messages sent; closes sent: none; closes received: none"
    );
}
