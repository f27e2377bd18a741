//! The session against the `h2` library's server (an implementation of
//! the protocol written elsewhere) over an in-memory pipe, bytes moved by
//! hand in bounded loops; and against frames written byte by byte where
//! the exact wire matters.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use bytes::Bytes;
use h2::server::{self, SendResponse};
use h2::{Reason, RecvStream};
use http::{HeaderMap, HeaderValue, Response, StatusCode};

use super::frame::{CONTINUATION, DATA, GOAWAY, HEADERS, PING, SETTINGS, WINDOW_UPDATE};
use super::*;

const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
/// `:status: 200` from HPACK's static table.
const STATUS_200: u8 = 0x88;

struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// The server's end of the bytes: what the client wrote, and what the
/// library writes back. Reads that find nothing are pending; the tests
/// poll again after every move.
#[derive(Clone, Default)]
struct Pipe(Arc<Mutex<(Vec<u8>, Vec<u8>)>>);

impl Pipe {
    fn push_input(&self, bytes: &[u8]) {
        self.0.lock().unwrap().0.extend_from_slice(bytes);
    }

    fn take_output(&self) -> Vec<u8> {
        std::mem::take(&mut self.0.lock().unwrap().1)
    }
}

impl tokio::io::AsyncRead for Pipe {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let mut b = self.0.lock().unwrap();
        if b.0.is_empty() {
            return Poll::Pending;
        }
        let n = b.0.len().min(buf.remaining());
        buf.put_slice(&b.0[..n]);
        b.0.drain(..n);
        Poll::Ready(Ok(()))
    }
}

impl tokio::io::AsyncWrite for Pipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.0.lock().unwrap().1.extend_from_slice(bytes);
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// One request as the server got it.
struct Accepted {
    request: http::request::Parts,
    body: RecvStream,
    received: Vec<u8>,
    respond: SendResponse<Bytes>,
}

/// The library's server on the other end of a pipe.
struct Server {
    pipe: Pipe,
    handshake: Option<server::Handshake<Pipe, Bytes>>,
    conn: Option<server::Connection<Pipe, Bytes>>,
    accepted: Vec<Accepted>,
    waker: Waker,
}

impl Server {
    fn new() -> Server {
        Server::with(&server::Builder::new())
    }

    fn with(builder: &server::Builder) -> Server {
        let pipe = Pipe::default();
        Server {
            handshake: Some(builder.handshake(pipe.clone())),
            pipe,
            conn: None,
            accepted: Vec::new(),
            waker: Waker::from(Arc::new(Noop)),
        }
    }

    /// Handshakes, accepts every request that came, reads their bodies.
    fn poll(&mut self) {
        let mut cx = Context::from_waker(&self.waker);
        if let Some(handshake) = self.handshake.as_mut() {
            if let Poll::Ready(conn) = Pin::new(handshake).poll(&mut cx) {
                self.conn = Some(conn.expect("the server handshakes"));
                self.handshake = None;
            }
        }
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        while let Poll::Ready(Some(accepted)) = conn.poll_accept(&mut cx) {
            let (request, respond) = accepted.expect("a request");
            let (request, body) = request.into_parts();
            self.accepted.push(Accepted {
                request,
                body,
                received: Vec::new(),
                respond,
            });
        }
        for a in &mut self.accepted {
            while let Poll::Ready(Some(Ok(data))) = a.body.poll_data(&mut cx) {
                let _ = a.body.flow_control().release_capacity(data.len());
                a.received.extend_from_slice(&data);
            }
        }
        // Flushes what the responses queued.
        let _ = conn.poll_closed(&mut cx);
    }

    fn respond(&mut self, i: usize, status: u16, body: &[u8]) {
        let response = Response::builder().status(status).body(()).unwrap();
        let respond = &mut self.accepted[i].respond;
        let mut stream = respond.send_response(response, body.is_empty()).unwrap();
        if !body.is_empty() {
            stream
                .send_data(Bytes::copy_from_slice(body), true)
                .unwrap();
        }
    }
}

/// Everything the client has to send.
fn output(client: &mut Http2<u32>) -> Vec<u8> {
    let out = client.transmit(0).to_vec();
    client.transmitted(out.len());
    out
}

/// Moves bytes both ways until neither side has more to say.
fn exchange(client: &mut Http2<u32>, server: &mut Server) {
    for _ in 0..1000 {
        server.poll();
        let sent = output(client);
        server.pipe.push_input(&sent);
        server.poll();
        let back = server.pipe.take_output();
        if !back.is_empty() {
            client.handle(&back, 0);
        }
        if sent.is_empty() && back.is_empty() {
            return;
        }
    }
    panic!("the two sides kept talking for 1000 rounds");
}

fn events(client: &mut Http2<u32>) -> Vec<Event<u32>> {
    std::iter::from_fn(|| client.poll_event()).collect()
}

fn connected(settings: Settings, server: &mut Server) -> Http2<u32> {
    let mut client = Http2::new(settings);
    exchange(&mut client, server);
    assert!(client.is_ready());
    client
}

fn request(bytes: &[u8]) -> Request {
    let head = bytes.starts_with(b"HEAD ");
    Request::new(Bytes::copy_from_slice(bytes), head)
}

fn get(path: &str) -> Request {
    request(format!("GET {path} HTTP/1.1\r\nHost: test.local\r\n\r\n").as_bytes())
}

fn open(client: &mut Http2<u32>, r: &Request, tag: u32) {
    assert!(client.open(r, tag, 0).is_ok(), "tag {tag} opens");
}

fn tags(client: &Http2<u32>) -> Vec<u32> {
    let mut tags = Vec::new();
    client.for_each_in_flight(&mut |&t, _| tags.push(t));
    tags.sort_unstable();
    tags
}

/// A frame as written on the wire.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_frame(&mut out, kind, flags, stream, payload);
    out
}

fn put_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// The frames in `bytes` (after the preface, if it starts with one).
fn frames_of(bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut rest = bytes.strip_prefix(frame::PREFACE).unwrap_or(bytes);
    let mut out = Vec::new();
    while rest.len() >= 9 {
        let len = u32::from_be_bytes([0, rest[0], rest[1], rest[2]]) as usize;
        let stream = u32::from_be_bytes([rest[5], rest[6], rest[7], rest[8]]);
        out.push((rest[3], rest[4], stream, rest[9..9 + len].to_vec()));
        rest = &rest[9 + len..];
    }
    out
}

/// A client that got a server's empty SETTINGS, written by hand, with
/// requests for `paths` open (stream ids 1, 3, 5, ...; tags 0, 1, 2, ...).
fn raw_client(settings: Settings, paths: usize) -> Http2<u32> {
    let mut client = Http2::new(settings);
    client.handle(&frame(SETTINGS, 0, 0, &[]), 0);
    for tag in 0..paths {
        open(&mut client, &get("/"), tag as u32);
    }
    output(&mut client);
    client
}

/// The tag, status and bytes of the one event there must be: a response.
fn one_response(client: &mut Http2<u32>) -> (u32, u16, u64) {
    match events(client)[..] {
        [Event::Response {
            tag, status, bytes, ..
        }] => (tag, status, bytes),
        ref other => panic!("expected one response, got {other:?}"),
    }
}

fn response(tag: u32, status: u16, bytes: u64) -> Event<u32> {
    Event::Response {
        tag,
        status,
        bytes,
        first_byte: 0,
        events: 0,
        tokens: None,
        grpc_status: None,
    }
}

#[test]
fn a_get_and_a_post_with_a_body() {
    let mut server = Server::new();
    let mut client = connected(Settings::default(), &mut server);
    let post =
        request(b"POST /form HTTP/1.1\r\nHost: test.local\r\nContent-Length: 5\r\n\r\nhello");
    open(&mut client, &get("/a?b=c"), 1);
    open(&mut client, &post, 2);
    exchange(&mut client, &mut server);

    let got = &server.accepted;
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].request.method, "GET");
    assert_eq!(got[0].request.uri, "http://test.local/a?b=c");
    assert!(got[0].request.headers.is_empty());
    assert_eq!(got[1].request.method, "POST");
    assert_eq!(got[1].request.headers["content-length"], "5");
    assert_eq!(got[1].received, b"hello");

    server.respond(0, 200, b"ok");
    server.respond(1, 201, b"");
    exchange(&mut client, &mut server);
    // HEADERS: 9 + one indexed field; DATA: 9 + 2; 201 is not in the
    // static table: 9 + a literal of 4 bytes (index, length, "201" in
    // two bytes of Huffman code).
    let mut got = events(&mut client);
    got.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(got, [response(1, 200, 10 + 11), response(2, 201, 13)]);
    assert_eq!(client.in_flight(), 0);
    assert_eq!(client.free_streams(), DEFAULT_MAX_STREAMS);
}

#[test]
fn many_streams_answered_out_of_order() {
    let mut server = Server::new();
    let mut client = connected(Settings::default(), &mut server);
    for tag in 0..20 {
        open(&mut client, &get(&format!("/{tag}")), tag);
    }
    assert_eq!(client.free_streams(), DEFAULT_MAX_STREAMS - 20);
    exchange(&mut client, &mut server);
    assert_eq!(server.accepted.len(), 20);
    for i in (0..20).rev() {
        let path = server.accepted[i].request.uri.path().to_string();
        server.respond(i, 200, path.as_bytes());
    }
    exchange(&mut client, &mut server);
    let answered: Vec<u32> = events(&mut client)
        .into_iter()
        .map(|e| match e {
            Event::Response {
                tag, status: 200, ..
            } => tag,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(answered, (0..20).rev().collect::<Vec<_>>());
    assert_eq!(client.free_streams(), DEFAULT_MAX_STREAMS);
}

#[test]
fn a_head_response_has_no_body() {
    let mut server = Server::new();
    let mut client = connected(Settings::default(), &mut server);
    let head = request(b"HEAD /h HTTP/1.1\r\nHost: test.local\r\n\r\n");
    assert!(head.is_head());
    open(&mut client, &head, 7);
    exchange(&mut client, &mut server);
    assert_eq!(server.accepted[0].request.method, "HEAD");
    let response = Response::builder()
        .status(200)
        .header("content-length", "5")
        .body(())
        .unwrap();
    server.accepted[0]
        .respond
        .send_response(response, true)
        .unwrap();
    exchange(&mut client, &mut server);
    let (tag, status, _) = one_response(&mut client);
    assert_eq!((tag, status), (7, 200));
}

#[test]
fn a_large_body_completes_through_flow_control() {
    // A 64 KiB window, and the default, both make the server wait for
    // WINDOW_UPDATE: capacity must be given back as DATA comes.
    for window in [65_535, DEFAULT_WINDOW] {
        let mut server = Server::new();
        let settings = Settings {
            window,
            capture: true,
            ..Settings::default()
        };
        let mut client = connected(settings, &mut server);
        let size = 1 << 20;
        let body: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        open(&mut client, &get("/big"), 1);
        exchange(&mut client, &mut server);
        server.respond(0, 200, &body);
        exchange(&mut client, &mut server);
        let (tag, status, bytes) = one_response(&mut client);
        assert_eq!((tag, status), (1, 200), "window {window}");
        // Frames of at most 16 KiB (fewer bytes when the window is
        // short), each with its 9-byte header; the head is one frame of
        // one indexed field.
        let overhead = bytes - size as u64 - 10;
        assert!(
            overhead % 9 == 0 && overhead / 9 >= 64,
            "window {window}: {bytes}"
        );
        assert_eq!(client.captured().body(), body, "window {window}");
    }
}

#[test]
fn a_large_post_waits_for_the_servers_window() {
    let mut server = Server::new();
    let mut client = connected(Settings::default(), &mut server);
    let body = vec![b'x'; 300_000];
    let mut bytes = format!(
        "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    bytes.extend(&body);
    open(&mut client, &request(&bytes), 1);
    exchange(&mut client, &mut server);
    assert_eq!(server.accepted[0].received.len(), body.len());
    server.respond(0, 204, b"");
    exchange(&mut client, &mut server);
    let (tag, status, _) = one_response(&mut client);
    assert_eq!((tag, status), (1, 204));
}

#[test]
fn interim_responses_are_skipped_and_their_heads_counted() {
    let mut server = Server::new();
    let mut client = connected(Settings::default(), &mut server);
    open(&mut client, &get("/"), 1);
    exchange(&mut client, &mut server);
    let early = Response::builder().status(103).body(()).unwrap();
    server.accepted[0]
        .respond
        .send_informational(early)
        .unwrap();
    exchange(&mut client, &mut server);
    assert_eq!(events(&mut client), []);
    server.respond(0, 200, b"");
    exchange(&mut client, &mut server);
    // Two HEADERS frames: 103 as a 4-byte literal, 200 indexed.
    assert_eq!(events(&mut client), [response(1, 200, 13 + 10)]);
}

#[test]
fn trailers_end_the_response() {
    let mut server = Server::new();
    let settings = Settings {
        capture: true,
        ..Settings::default()
    };
    let mut client = connected(settings, &mut server);
    open(&mut client, &get("/"), 1);
    exchange(&mut client, &mut server);
    let head = Response::builder()
        .status(200)
        .header("X-Kind", "Trailed")
        .body(())
        .unwrap();
    let mut stream = server.accepted[0]
        .respond
        .send_response(head, false)
        .unwrap();
    stream.send_data(Bytes::from_static(b"abc"), false).unwrap();
    exchange(&mut client, &mut server);
    assert_eq!(events(&mut client), [], "no END_STREAM yet");
    let mut trailers = HeaderMap::new();
    trailers.insert("checksum", HeaderValue::from_static("1"));
    stream.send_trailers(trailers).unwrap();
    exchange(&mut client, &mut server);
    let (tag, status, bytes) = one_response(&mut client);
    assert_eq!((tag, status), (1, 200));
    assert!(bytes > 12 + 20, "head, DATA and the trailers: {bytes}");
    assert_eq!(client.captured().body(), b"abc");
    let fields: Vec<(&str, &[u8])> = client.captured().fields().collect();
    assert_eq!(
        fields,
        [("x-kind", &b"Trailed"[..]), ("checksum", &b"1"[..])]
    );
}

/// The `grpc-status` of the one response there must be.
fn one_call(client: &mut Http2<u32>) -> Option<u8> {
    match events(client)[..] {
        [Event::Response { grpc_status, .. }] => grpc_status,
        ref other => panic!("expected one response, got {other:?}"),
    }
}

/// The session reads `grpc-status` wherever it comes, and leaves what
/// its absence stands for to the call layer (`engine::hooks`).
#[test]
fn a_calls_status_comes_from_its_trailers_or_its_head_alone() {
    let mut server = Server::new();
    let settings = Settings {
        reading: EventReading::Messages,
        ..Settings::default()
    };
    let mut client = connected(settings, &mut server);
    for tag in 0..4 {
        open(&mut client, &get("/greet.Greeter/SayHello"), tag);
    }
    exchange(&mut client, &mut server);
    let head = || {
        Response::builder()
            .status(200)
            .header("content-type", "application/grpc")
            .body(())
            .unwrap()
    };
    let trailers = |status: &'static str| {
        let mut t = HeaderMap::new();
        t.insert("grpc-status", HeaderValue::from_static(status));
        t
    };
    // Two messages, then OK in the trailers; each message is an event.
    let mut stream = server.accepted[0]
        .respond
        .send_response(head(), false)
        .unwrap();
    let two = [
        &metron_grpc::frame(b"one")[..],
        &metron_grpc::frame(b"")[..],
    ]
    .concat();
    stream.send_data(Bytes::from(two), false).unwrap();
    stream.send_trailers(trailers("0")).unwrap();
    exchange(&mut client, &mut server);
    let got = events(&mut client);
    let messages = got
        .iter()
        .filter(|e| matches!(e, Event::Message { .. }))
        .count();
    assert_eq!(messages, 2, "{got:?}");
    assert!(
        matches!(
            got.last(),
            Some(Event::Response {
                grpc_status: Some(0),
                events: 2,
                tokens: None,
                ..
            })
        ),
        "{got:?}"
    );
    // Trailers-only: the status in the head, which ends the stream.
    let only = Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .header("grpc-status", "14")
        .body(())
        .unwrap();
    server.accepted[1]
        .respond
        .send_response(only, true)
        .unwrap();
    exchange(&mut client, &mut server);
    assert_eq!(one_call(&mut client), Some(14));
    // A 200 without any status: none read (a call layer counts INTERNAL).
    let mut stream = server.accepted[2]
        .respond
        .send_response(head(), false)
        .unwrap();
    stream.send_data(Bytes::new(), true).unwrap();
    exchange(&mut client, &mut server);
    assert_eq!(one_call(&mut client), None);
    // No gRPC at all (a proxy's 503).
    server.respond(3, 503, b"");
    exchange(&mut client, &mut server);
    assert_eq!(one_call(&mut client), None);
}

#[test]
fn a_reset_stream_gives_its_code_and_a_refused_one_is_unprocessed() {
    let mut server = Server::new();
    let mut client = connected(Settings::default(), &mut server);
    for tag in 0..3 {
        open(&mut client, &get("/"), tag);
    }
    exchange(&mut client, &mut server);
    server.accepted[0]
        .respond
        .send_reset(Reason::INTERNAL_ERROR);
    server.accepted[1]
        .respond
        .send_reset(Reason::REFUSED_STREAM);
    server.respond(2, 200, b"");
    exchange(&mut client, &mut server);
    let mut got = events(&mut client);
    got.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(
        got,
        [
            Event::Lost {
                tag: 0,
                why: Failure::Reset(Some(2))
            },
            response(2, 200, 10),
            Event::Unprocessed { tag: 1 },
        ]
    );
    assert_eq!(client.free_streams(), DEFAULT_MAX_STREAMS);
}

#[test]
fn streams_above_a_goaway_come_out_unprocessed() {
    let mut client = raw_client(Settings::default(), 4);
    assert_eq!(tags(&client), [0, 1, 2, 3]);
    let mut goaway = 3u32.to_be_bytes().to_vec();
    goaway.extend(0u32.to_be_bytes());
    let mut bytes = frame(HEADERS, END_HEADERS | END_STREAM, 1, &[STATUS_200]);
    bytes.extend(frame(GOAWAY, 0, 0, &goaway));
    client.handle(&bytes, 0);
    assert_eq!(
        events(&mut client),
        [
            response(0, 200, 10),
            Event::GoAway { code: 0 },
            Event::Unprocessed { tag: 2 },
            Event::Unprocessed { tag: 3 },
        ]
    );
    // Stream 3 was processed and is still answered; nothing new opens.
    assert_eq!(tags(&client), [1]);
    assert!(client.is_retired() && !client.is_finished());
    assert_eq!(client.free_streams(), 0);
    assert_eq!(
        client.open(&get("/"), 9, 0).map_err(|e| e.0),
        Err(OpenError::Retired)
    );
    client.handle(
        &frame(HEADERS, END_HEADERS | END_STREAM, 3, &[STATUS_200]),
        0,
    );
    assert_eq!(events(&mut client), [response(1, 200, 10)]);
    assert!(client.is_finished(), "nothing left: the connection closes");
}

#[test]
fn the_end_of_the_stream_loses_what_a_goaway_did_not_release() {
    let mut client = raw_client(Settings::default(), 3);
    let mut goaway = 1u32.to_be_bytes().to_vec();
    goaway.extend(0u32.to_be_bytes());
    // The GOAWAY's payload split across reads.
    let bytes = frame(GOAWAY, 0, 0, &goaway);
    client.handle(&bytes[..12], 0);
    assert_eq!(events(&mut client), []);
    client.handle(&bytes[12..], 0);
    let got = events(&mut client);
    assert!(got.contains(&Event::GoAway { code: 0 }), "{got:?}");
    assert_eq!(tags(&client), [0], "stream 1 stays");
    client.handle_eof(0);
    assert_eq!(
        events(&mut client),
        [Event::Failed {
            why: Failure::Closed
        }]
    );
    let mut lost = Vec::new();
    client.drain(&mut lost);
    assert_eq!(lost, [0], "lost, for the connection to count");
    client.handle(
        &frame(HEADERS, END_HEADERS | END_STREAM, 1, &[STATUS_200]),
        0,
    );
    assert_eq!(events(&mut client), [], "nothing is read after the end");
}

#[test]
fn the_servers_stream_limit_caps_free_streams() {
    let mut server = Server::with(server::Builder::new().max_concurrent_streams(3));
    let mut client = connected(
        Settings {
            max_streams: 10,
            ..Settings::default()
        },
        &mut server,
    );
    assert_eq!(client.free_streams(), 3);
    assert_eq!(client.info().server_limit, Some(3));
    for tag in 0..3 {
        open(&mut client, &get("/"), tag);
    }
    assert_eq!(client.free_streams(), 0);
    assert_eq!(
        client.open(&get("/"), 3, 0).map_err(|e| e.0),
        Err(OpenError::Full)
    );
    exchange(&mut client, &mut server);
    server.respond(1, 200, b"");
    exchange(&mut client, &mut server);
    assert_eq!(events(&mut client).len(), 1);
    assert_eq!(client.free_streams(), 1);
    // And -m below the server's limit is the cap.
    let mut server = Server::with(server::Builder::new().max_concurrent_streams(50));
    let client = connected(
        Settings {
            max_streams: 2,
            ..Settings::default()
        },
        &mut server,
    );
    assert_eq!(client.free_streams(), 2);
    let one = Http2::<u32>::new(Settings {
        max_streams: 0,
        ..Settings::default()
    });
    assert_eq!(one.settings.max_streams, 1, "at least one stream");
}

#[test]
fn nothing_opens_before_the_servers_settings_and_a_lower_limit_holds_back() {
    let mut client = Http2::<u32>::new(Settings::default());
    assert!(!client.is_ready());
    assert_eq!(client.free_streams(), 0);
    assert_eq!(
        client.open(&get("/"), 0, 0).map_err(|e| e.0),
        Err(OpenError::Full)
    );
    client.handle(&frame(SETTINGS, 0, 0, &[]), 0);
    assert!(client.is_ready());
    for tag in 0..5 {
        open(&mut client, &get("/"), tag);
    }
    // The server lowers its limit below what is open: nothing new opens
    // until enough have finished.
    client.handle(&frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 2]), 0);
    assert_eq!(client.free_streams(), 0);
    for id in [1, 3, 5] {
        client.handle(
            &frame(HEADERS, END_HEADERS | END_STREAM, id, &[STATUS_200]),
            0,
        );
    }
    assert_eq!(events(&mut client).len(), 3);
    assert_eq!(client.free_streams(), 0, "two still open");
    client.handle(
        &frame(HEADERS, END_HEADERS | END_STREAM, 7, &[STATUS_200]),
        0,
    );
    assert_eq!(client.free_streams(), 1);
}

#[test]
fn continuation_and_padding() {
    let mut client = raw_client(Settings::default(), 1);
    // `:status: 200`, then `content-length: 2` in a CONTINUATION frame
    // (HPACK: literal, name index 28).
    let mut bytes = frame(HEADERS, 0, 1, &[STATUS_200]);
    bytes.extend(frame(
        CONTINUATION,
        END_HEADERS,
        1,
        &[0x0f, 0x0d, 0x01, b'2'],
    ));
    // A padded DATA frame: pad length 3, "hi", three zero bytes.
    bytes.extend(frame(
        DATA,
        END_STREAM | PADDED,
        1,
        &[3, b'h', b'i', 0, 0, 0],
    ));
    for piece in bytes.chunks(5) {
        client.handle(piece, 0);
    }
    assert_eq!(events(&mut client), [response(0, 200, 10 + 13 + 15)]);
}

#[test]
fn settings_and_pings_are_acknowledged() {
    let mut client = Http2::<u32>::new(Settings::default());
    let out = output(&mut client);
    assert!(out.starts_with(frame::PREFACE));
    let ours = frames_of(&out);
    assert_eq!(ours[0].0, SETTINGS, "our SETTINGS follow the preface");
    assert!(
        ours.iter().any(|f| f.0 == WINDOW_UPDATE
            && f.2 == 0
            && f.3 == (DEFAULT_WINDOW - 65_535).to_be_bytes()),
        "the connection window is raised: {ours:?}"
    );
    let mut bytes = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 7]);
    bytes.extend(frame(PING, 0, 0, b"12345678"));
    bytes.extend(frame(WINDOW_UPDATE, 0, 0, &1000u32.to_be_bytes()));
    client.handle(&bytes, 0);
    let replies = frames_of(&output(&mut client));
    assert!(replies.contains(&(SETTINGS, 1, 0, vec![])), "{replies:?}");
    assert!(
        replies.contains(&(PING, 1, 0, b"12345678".to_vec())),
        "{replies:?}"
    );
    assert_eq!(client.free_streams(), 7);
    assert_eq!(events(&mut client), []);
}

#[test]
fn a_malformed_frame_is_a_connection_error() {
    let malformed = [
        // PING must be 8 bytes long.
        frame(PING, 0, 0, b"1234567"),
        // DATA must belong to a stream.
        frame(DATA, 0, 0, b"x"),
        // Not HPACK: an index beyond both tables.
        frame(HEADERS, END_HEADERS, 1, &[0xff, 0xff, 0x7f]),
        // A stream the client never opened.
        frame(HEADERS, END_HEADERS, 9, &[STATUS_200]),
        // Pushes were refused.
        frame(0x5, END_HEADERS, 1, &[0, 0, 0, 2, STATUS_200]),
    ];
    for bad in malformed {
        let mut client = raw_client(Settings::default(), 2);
        client.handle(&bad, 0);
        let got = events(&mut client);
        assert_eq!(
            got,
            [Event::Failed {
                why: Failure::Protocol
            }],
            "{bad:?}"
        );
        let goaway = frames_of(&output(&mut client));
        assert!(goaway.iter().any(|f| f.0 == GOAWAY), "{goaway:?}");
        assert_eq!(tags(&client), [0, 1], "every stream lost");
        assert!(client.is_retired() && client.is_finished());
        assert_eq!(
            client.open(&get("/"), 5, 0).map_err(|e| e.0),
            Err(OpenError::Retired)
        );
        client.handle(
            &frame(HEADERS, END_HEADERS | END_STREAM, 1, &[STATUS_200]),
            0,
        );
        assert_eq!(events(&mut client), []);
    }
}

#[test]
fn a_bad_response_on_one_stream_loses_only_it() {
    let mut client = raw_client(Settings::default(), 2);
    // `content-length: 5`, but 3 bytes of body.
    let mut bytes = frame(
        HEADERS,
        END_HEADERS,
        1,
        &[STATUS_200, 0x0f, 0x0d, 0x01, b'5'],
    );
    bytes.extend(frame(DATA, END_STREAM, 1, b"abc"));
    bytes.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &[STATUS_200]));
    client.handle(&bytes, 0);
    let got = events(&mut client);
    assert_eq!(
        got,
        [
            Event::Lost {
                tag: 0,
                why: Failure::Malformed
            },
            response(1, 200, 10)
        ]
    );
    assert!(!client.is_retired());
    let resets: Vec<_> = frames_of(&output(&mut client))
        .into_iter()
        .filter(|f| f.0 == 0x3)
        .collect();
    assert_eq!(resets.len(), 1);
}

#[test]
fn an_http1_answer_to_the_preface_fails_the_connection() {
    let mut client = Http2::<u32>::new(Settings::default());
    output(&mut client);
    client.handle(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", 0);
    assert!(client.is_finished());
    assert_eq!(events(&mut client), [], "nothing was in flight");
}

#[test]
fn a_partial_frame_waits_and_the_end_loses_it() {
    let mut client = raw_client(Settings::default(), 1);
    // A DATA frame that announces 16 KiB and brings 3 bytes.
    let mut bytes = frame(HEADERS, END_HEADERS, 1, &[STATUS_200]);
    bytes.extend(&frame(DATA, END_STREAM, 1, &[0; 16384])[..12]);
    client.handle(&bytes, 0);
    assert_eq!(events(&mut client), []);
    client.handle_eof(0);
    assert_eq!(
        events(&mut client),
        [Event::Failed {
            why: Failure::Closed
        }]
    );
}

#[test]
fn the_first_byte_is_when_the_head_began() {
    let mut client = raw_client(Settings::default(), 1);
    client.handle(&frame(HEADERS, END_HEADERS, 1, &[STATUS_200]), 40);
    client.handle(&frame(DATA, END_STREAM, 1, b"x"), 90);
    let got = events(&mut client);
    assert!(
        matches!(got[..], [Event::Response { first_byte: 40, .. }]),
        "{got:?}"
    );
}

#[test]
fn capture_keeps_each_responses_fields_and_body_until_the_next_event() {
    let mut server = Server::new();
    let settings = Settings {
        capture: true,
        ..Settings::default()
    };
    let mut client = connected(settings, &mut server);
    open(&mut client, &get("/1"), 1);
    open(&mut client, &get("/2"), 2);
    exchange(&mut client, &mut server);
    for (i, body) in [(0, "one"), (1, "two")] {
        let head = Response::builder()
            .status(StatusCode::OK)
            .header("X-Which", body)
            .body(())
            .unwrap();
        let mut stream = server.accepted[i]
            .respond
            .send_response(head, false)
            .unwrap();
        stream.send_data(Bytes::from(body), true).unwrap();
    }
    exchange(&mut client, &mut server);
    for want in ["one", "two"] {
        assert!(matches!(client.poll_event(), Some(Event::Response { .. })));
        assert_eq!(client.captured().body(), want.as_bytes());
        let fields: Vec<(&str, &[u8])> = client.captured().fields().collect();
        assert_eq!(fields, [("x-which", want.as_bytes())]);
    }
    // Without capture, nothing is kept.
    let mut server = Server::new();
    let mut client = connected(Settings::default(), &mut server);
    open(&mut client, &get("/"), 1);
    exchange(&mut client, &mut server);
    server.respond(0, 200, b"body");
    exchange(&mut client, &mut server);
    assert!(client.poll_event().is_some());
    assert!(client.captured().body().is_empty() && client.captured().fields().next().is_none());
}

#[test]
fn a_captured_body_beyond_the_limit_loses_its_response_only() {
    let mut server = Server::new();
    let settings = Settings {
        capture: true,
        ..Settings::default()
    };
    let mut client = connected(settings, &mut server);
    client.max_capture = 4;
    open(&mut client, &get("/"), 1);
    open(&mut client, &get("/"), 2);
    exchange(&mut client, &mut server);
    server.respond(0, 200, b"four");
    server.respond(1, 200, b"five!");
    exchange(&mut client, &mut server);
    let got = events(&mut client);
    assert!(
        matches!(
            &got[..],
            [
                Event::Response { tag: 1, .. },
                Event::Lost {
                    tag: 2,
                    why: Failure::BodyTooLarge
                }
            ]
        ),
        "{got:?}"
    );
    assert!(tags(&client).is_empty());
    assert!(!client.is_retired());
}

/// A stream given up (past the timeout) is reset with CANCEL on the wire
/// and leaves the others, which are still answered, and frees its place.
#[test]
fn an_expired_stream_is_reset_and_the_others_go_on() {
    let mut client = raw_client(Settings::default(), 3);
    let mut gone = Vec::new();
    client.expire(&mut |&tag| tag == 1, &mut gone, 0);
    assert_eq!(gone, [1]);
    assert_eq!(tags(&client), [0, 2]);
    assert_eq!(client.free_streams(), DEFAULT_MAX_STREAMS - 2);
    let resets: Vec<_> = frames_of(&output(&mut client))
        .into_iter()
        .filter(|f| f.0 == 0x3)
        .collect();
    assert_eq!(resets.len(), 1, "{resets:?}");
    assert_eq!(resets[0].2, 3, "stream 3 carried tag 1");
    assert_eq!(resets[0].3, frame::CANCEL.to_be_bytes());
    // Nothing else is picked, and the rest are answered as usual; a
    // frame for the stream given up is ignored.
    client.expire(&mut |_| false, &mut gone, 0);
    assert_eq!(gone.len(), 1);
    let mut headers = frame(HEADERS, END_HEADERS | END_STREAM, 5, &[STATUS_200]);
    headers.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &[STATUS_200]));
    headers.extend(frame(HEADERS, END_HEADERS | END_STREAM, 1, &[STATUS_200]));
    client.handle(&headers, 0);
    let mut got: Vec<u32> = events(&mut client)
        .into_iter()
        .map(|e| match e {
            Event::Response { tag, .. } => tag,
            other => panic!("{other:?}"),
        })
        .collect();
    got.sort();
    assert_eq!(got, [0, 2]);
}

#[test]
fn a_request_that_cannot_be_http2_is_rejected_with_its_reason() {
    let mut client = raw_client(Settings::default(), 0);
    let connect = request(b"CONNECT h:443 HTTP/1.1\r\n\r\n");
    let Err((OpenError::Rejected { protocol, why, .. }, tag)) = client.open(&connect, 4, 0) else {
        panic!("CONNECT opens no stream");
    };
    assert_eq!((protocol, tag), (crate::http::Protocol::Http2, 4));
    assert!(why.contains("CONNECT"), "{why}");
}

/// Not tests of behaviour: many static GETs through the session, so
/// that the cost per request can be read off a profile of `open`,
/// `transmit`, `handle` and `poll_event` (`cargo test --release --lib
/// h2::tests::cost -- --ignored`; `H2_COST_REQUESTS` sets the count).
fn cost_requests() -> u32 {
    std::env::var("H2_COST_REQUESTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000)
}

/// The least a response can be: one HEADERS frame of one indexed field,
/// written by hand (so nothing but the session runs).
#[test]
#[ignore]
fn cost_of_a_static_get() {
    let count = cost_requests();
    let request = get("/");
    let mut client = raw_client(Settings::default(), 0);
    let mut input = Vec::with_capacity(1 << 16);
    let started = std::time::Instant::now();
    let (mut id, mut answered) = (1, 0);
    while answered < count {
        input.clear();
        for tag in 0..10 {
            open(&mut client, &request, tag);
            put_frame(
                &mut input,
                HEADERS,
                END_HEADERS | END_STREAM,
                id,
                &[STATUS_200],
            );
            id += 2;
        }
        let n = client.transmit(0).len();
        client.transmitted(n);
        client.handle(&input, 0);
        while let Some(event) = client.poll_event() {
            assert!(matches!(event, Event::Response { status: 200, .. }));
            answered += 1;
        }
    }
    let each = started.elapsed() / count;
    println!("{count} static GETs, bare responses: {each:?} each");
}

#[test]
fn a_broken_write_gives_back_the_streams_whose_head_never_left_whole() {
    let mut client = raw_client(Settings::default(), 0);
    for tag in 0..3 {
        open(&mut client, &get("/"), tag);
    }
    // The first HEADERS frame and part of the second went out.
    let out = client.transmit(0).to_vec();
    let first = 9 + frames_of(&out)[0].3.len();
    client.transmitted(first + 4);
    client.handle_write_error(0);
    assert_eq!(
        events(&mut client),
        [Event::Unprocessed { tag: 1 }, Event::Unprocessed { tag: 2 }]
    );
    assert_eq!(tags(&client), [0], "sent whole: the server may have it");
    assert!(client.is_retired() && !client.is_finished());
    assert!(client.transmit(0).is_empty(), "nothing more goes out");
    // The server's GOAWAY, read after the failed write, still counts.
    let mut goaway = 0u32.to_be_bytes().to_vec();
    goaway.extend(0u32.to_be_bytes());
    client.handle(&frame(GOAWAY, 0, 0, &goaway), 0);
    assert_eq!(
        events(&mut client),
        [Event::GoAway { code: 0 }, Event::Unprocessed { tag: 0 }]
    );
    client.handle_eof(0);
    assert!(client.is_finished());
}
