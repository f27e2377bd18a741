//! `metron serve --http2` end to end: a real server on a loopback port and
//! the HTTP/2 library's own client, over h2c and over TLS with ALPN.
//!
//! Each test starts its own server on an OS-chosen port. Every wait is
//! bounded ([`LIMIT`]); timing tests assert lower bounds exactly and upper
//! bounds loosely, since a busy machine may be late but never early.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use h2::Reason;
use http::{Method, Request};
use metron_serve::{
    Fault, FaultPlan, Http2, Per, Pick, Probability, ServeConfig, Server, Sse, StallPlan,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

#[allow(dead_code)]
mod common;
use common::{body_size, bounded, request_at, xs, Fetch, Got, LIMIT};

fn h2c(cfg: ServeConfig) -> Server {
    h2c_with(Http2::default(), cfg)
}

fn h2c_with(http2: Http2, cfg: ServeConfig) -> Server {
    Server::start(ServeConfig {
        http2: Some(http2),
        ..cfg
    })
    .expect("server starts")
}

/// Waits (bounded) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < LIMIT, "still waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

type Conn = JoinHandle<Result<(), h2::Error>>;

/// An HTTP/2 client on `io`, its connection driven by a task of its own.
async fn client_on<T>(io: T) -> (SendRequest<Bytes>, Conn)
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (client, conn) = bounded(h2::client::handshake(io)).await.expect("handshake");
    (client, tokio::spawn(conn))
}

async fn connect(server: &Server) -> (SendRequest<Bytes>, Conn) {
    let tcp = TcpStream::connect(server.addr()).await.expect("connects");
    client_on(tcp).await
}

fn request(method: Method, path: &str) -> Request<()> {
    request_at("http://127.0.0.1", method, path)
}

fn get(path: &str) -> Request<()> {
    request(Method::GET, path)
}

/// Sends `req` (no body) and reads the whole response.
async fn fetch(client: &mut SendRequest<Bytes>, req: Request<()>) -> Result<Got, h2::Error> {
    bounded(async {
        let mut client = client.clone().ready().await?;
        let (response, _) = client.send_request(req, true)?;
        read(response.await?).await
    })
    .await
}

impl common::GetBody for SendRequest<Bytes> {
    async fn get_body(&mut self, path: &str) -> Vec<u8> {
        fetch(self, get(path)).await.unwrap().body
    }
}

impl common::Fetch for SendRequest<Bytes> {
    async fn get_with(&mut self, path: &str, fields: &[(&str, &str)]) -> Got {
        let req = common::get_with_fields("http://127.0.0.1", path, fields);
        fetch(self, req).await.unwrap()
    }
}

async fn read(response: http::Response<h2::RecvStream>) -> Result<Got, h2::Error> {
    let (parts, mut body) = response.into_parts();
    let mut bytes = Vec::new();
    while let Some(data) = body.data().await {
        let data = data?;
        let _ = body.flow_control().release_capacity(data.len());
        bytes.extend_from_slice(&data);
    }
    let trailers = body.trailers().await?;
    Ok(Got {
        status: parts.status,
        headers: parts.headers,
        body: bytes,
        trailers,
    })
}

#[tokio::test]
async fn h2c_serves_every_route() {
    let server = h2c(ServeConfig {
        record: 8,
        ..body_size(5)
    });
    let (mut client, _conn) = connect(&server).await;
    let got = fetch(&mut client, get("/")).await.unwrap();
    assert_eq!(got.status, 200);
    assert_eq!(got.headers["content-length"], "5");
    assert_eq!(got.headers["content-type"], "text/plain");
    assert_eq!(got.body, xs(5));

    let got = fetch(&mut client, get("/status/503")).await.unwrap();
    assert_eq!((got.status.as_u16(), got.body.len()), (503, 5));
    let got = fetch(&mut client, get("/status/204")).await.unwrap();
    assert_eq!(got.status, 204);
    assert!(got.body.is_empty() && got.headers.get("content-length").is_none());
    let got = fetch(&mut client, request(Method::HEAD, "/"))
        .await
        .unwrap();
    assert_eq!(got.headers["content-length"], "5");
    assert!(got.body.is_empty());
    let got = fetch(&mut client, get("/bytes/100000?q")).await.unwrap();
    assert_eq!(got.body, xs(100_000), "a body over the default window");

    // `/chunked`: no chunked coding in HTTP/2, but the body in pieces and
    // the trailer it announces.
    let got = fetch(&mut client, get("/chunked")).await.unwrap();
    assert_eq!(got.headers["trailer"], "X-Body-Bytes");
    assert_eq!(got.body, xs(5));
    assert_eq!(got.trailers.unwrap()["x-body-bytes"], "5");
    // `/eof`: the body ends with the stream, not with the connection.
    let got = fetch(&mut client, get("/eof")).await.unwrap();
    assert!(got.headers.get("content-length").is_none());
    assert_eq!(got.body, xs(5));

    // A bad route is a 400 on its stream; the connection goes on.
    let got = fetch(&mut client, get("/status/abc")).await.unwrap();
    assert_eq!(
        (got.status.as_u16(), &got.body[..]),
        (400, &b"bad request\n"[..])
    );
    let got = fetch(&mut client, get("/delay/1")).await.unwrap();
    assert_eq!(got.status, 200);

    let stats = server.stats();
    assert_eq!(stats.connections(), 1);
    assert_eq!(stats.h2_connections(), 1);
    assert_eq!(stats.h2_streams(), 9);
    assert_eq!(stats.requests(), 9);
    assert_eq!(stats.responses(200), 6);
    assert_eq!(stats.responses(400), 1);
    assert_eq!(stats.path_count("/bytes/100000"), 1);
    let first = &stats.recorded()[0];
    assert_eq!(
        (first.method.as_str(), first.path.as_str(), first.version),
        ("GET", "/", 2)
    );
}

#[tokio::test]
async fn login_gives_a_token_that_private_takes_back() {
    let server = h2c(body_size(3));
    let (mut client, _conn) = connect(&server).await;
    let token = common::login_then_private(&mut client, 3).await;
    // A client may send each cookie in a field of its own.
    let cookie = format!("metron_token={token}");
    let split = [("cookie", "theme=dark"), ("cookie", cookie.as_str())];
    let got = client.get_with("/private", &split).await;
    assert_eq!((got.status.as_u16(), got.body), (200, xs(3)));
    // Another connection takes it too: nothing is kept per connection.
    let (mut other, _conn) = connect(&server).await;
    let bearer = format!("Bearer {token}");
    let got = other
        .get_with("/private", &[("authorization", &bearer)])
        .await;
    assert_eq!(got.status, 200);
    let stats = server.stats();
    assert_eq!((stats.responses(200), stats.responses(401)), (5, 4));
}

#[tokio::test]
async fn request_bodies_are_read_and_recorded() {
    let server = h2c(ServeConfig {
        record: 1,
        ..ServeConfig::default()
    });
    let (client, _conn) = connect(&server).await;
    let mut client = bounded(client.ready()).await.unwrap();
    let mut req = request(Method::POST, "/status/201?x=1");
    req.headers_mut().insert("x-test", "yes".parse().unwrap());
    let (response, mut body) = client.send_request(req, false).unwrap();
    body.send_data(Bytes::from_static(b"hello "), false)
        .unwrap();
    body.send_data(Bytes::from_static(b"server"), true).unwrap();
    let got = bounded(async { read(response.await?).await })
        .await
        .unwrap();
    assert_eq!(got.status, 201);
    let recorded = &server.stats().recorded()[0];
    assert_eq!(recorded.path, "/status/201?x=1");
    assert_eq!(recorded.header("x-test"), Some(&b"yes"[..]));
    assert_eq!(recorded.body, b"hello server");
    assert!(server.stats().bytes_received() > 12);
}

#[tokio::test]
async fn streams_are_multiplexed_and_counted() {
    let server = h2c(body_size(1));
    let (client, conn) = connect(&server).await;
    // Held streams stay in flight until the client gives up on them.
    let mut held = Vec::new();
    for _ in 0..20 {
        let mut client = bounded(client.clone().ready()).await.unwrap();
        held.push(
            client
                .send_request(get("/fault/never-answer"), true)
                .unwrap(),
        );
    }
    let stats = server.stats();
    until("20 streams in flight", || {
        stats.h2_streams_in_flight() == 20
    })
    .await;
    // Streams on the same connection are still answered meanwhile.
    let (mut other, _other_conn) = connect(&server).await;
    let mut more = Vec::new();
    for _ in 0..5 {
        let mut other = bounded(other.clone().ready()).await.unwrap();
        more.push(
            other
                .send_request(get("/fault/never-answer"), true)
                .unwrap(),
        );
    }
    until("25 streams in flight", || {
        stats.h2_streams_in_flight() == 25
    })
    .await;
    let mut same = client.clone();
    assert_eq!(fetch(&mut same, get("/")).await.unwrap().body, b"x");
    assert_eq!(fetch(&mut other, get("/")).await.unwrap().status, 200);
    assert_eq!(stats.h2_max_streams_per_connection(), 21);
    assert_eq!(stats.h2_max_streams_in_flight(), 26);
    // Resetting the held streams ends them on the server too.
    for (_, mut stream) in held.drain(..).chain(more.drain(..)) {
        stream.send_reset(Reason::CANCEL);
    }
    until("no stream in flight", || stats.h2_streams_in_flight() == 0).await;
    assert_eq!(stats.h2_streams(), 27);
    assert_eq!(stats.connections(), 2);
    assert!(!conn.is_finished(), "the connection lives on");
}

#[tokio::test]
async fn delayed_streams_wait_side_by_side() {
    let server = h2c(ServeConfig {
        delay: Duration::from_millis(200),
        ..ServeConfig::default()
    });
    let (client, _conn) = connect(&server).await;
    let start = Instant::now();
    let mut waiting = Vec::new();
    for _ in 0..10 {
        let mut client = client.clone();
        waiting.push(tokio::spawn(async move {
            fetch(&mut client, get("/delay/100")).await
        }));
    }
    for response in waiting {
        assert_eq!(bounded(response).await.unwrap().unwrap().status, 200);
    }
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
    // One after another they would take 3 s.
    assert!(took < Duration::from_millis(2500), "{took:?}");
}

#[tokio::test]
async fn nothing_is_written_during_a_stall() {
    let server = h2c(common::stalled());
    let (mut client, _conn) = connect(&server).await;
    common::nothing_is_answered_during_the_stall(&server, &mut client).await;
}

#[tokio::test]
async fn close_every_goes_away_after_the_nth_response() {
    let server = h2c(ServeConfig {
        close_every: Some(3),
        ..ServeConfig::default()
    });
    let (mut client, conn) = connect(&server).await;
    for _ in 0..3 {
        assert_eq!(fetch(&mut client, get("/")).await.unwrap().status, 200);
    }
    // The GOAWAY is graceful: no error, and the connection ends.
    bounded(conn).await.unwrap().expect("a graceful close");
    assert!(fetch(&mut client, get("/")).await.is_err());
    let stats = server.stats();
    assert_eq!(stats.h2_goaways(), 1);
    assert_eq!(stats.responses_total(), 3);
    until("the connection closed", || stats.open_connections() == 0).await;

    // `/close` asks for the same on its own.
    let (mut client, conn) = connect(&server).await;
    assert_eq!(fetch(&mut client, get("/close")).await.unwrap().status, 200);
    bounded(conn).await.unwrap().expect("a graceful close");
    assert_eq!(stats.h2_goaways(), 2);
}

#[tokio::test]
async fn goaway_after_n_streams_leaves_later_ones_unprocessed() {
    let http2 = Http2 {
        goaway_after: Some(3),
        ..Http2::default()
    };
    let server = h2c_with(http2, ServeConfig::default());
    let (client, conn) = connect(&server).await;
    // Six streams at once: all are on the wire before the GOAWAY.
    let mut pending = Vec::new();
    for _ in 0..6 {
        let mut client = bounded(client.clone().ready()).await.unwrap();
        let (response, _) = client.send_request(get("/delay/50"), true).unwrap();
        pending.push(response);
    }
    let mut outcomes = Vec::new();
    for response in pending {
        outcomes.push(bounded(response).await);
    }
    let answered: Vec<bool> = outcomes.iter().map(Result::is_ok).collect();
    assert_eq!(
        answered,
        [true, true, true, false, false, false],
        "{outcomes:?}"
    );
    for refused in &outcomes[3..] {
        let err = refused.as_ref().unwrap_err();
        assert!(
            err.is_go_away() && err.reason() == Some(Reason::NO_ERROR),
            "{err:?}"
        );
    }
    bounded(conn).await.unwrap().expect("a graceful close");
    let stats = server.stats();
    assert_eq!(
        stats.h2_streams(),
        3,
        "later streams never reached the server"
    );
    assert_eq!(stats.h2_goaways(), 1);
}

#[tokio::test]
async fn a_share_of_streams_is_reset_the_same_way_every_time() {
    let run = |p: f64| async move {
        let reset = Some(Pick::Chance {
            p: Probability::new(p).unwrap(),
            seed: 7,
        });
        let http2 = Http2 {
            reset,
            ..Http2::default()
        };
        let server = h2c_with(http2, ServeConfig::default());
        let (mut client, _conn) = connect(&server).await;
        let mut outcomes = Vec::new();
        for _ in 0..20 {
            match fetch(&mut client, get("/")).await {
                Ok(got) => outcomes.push(got.status == 200),
                Err(e) => {
                    assert_eq!(e.reason(), Some(Reason::INTERNAL_ERROR), "{e:?}");
                    assert!(e.is_reset() && e.is_remote(), "{e:?}");
                    outcomes.push(false);
                }
            }
        }
        let resets = outcomes.iter().filter(|ok| !**ok).count() as u64;
        assert_eq!(server.stats().h2_resets(), resets);
        assert_eq!(server.stats().responses_total(), 20 - resets);
        outcomes
    };
    let first = run(0.5).await;
    assert_eq!(first, run(0.5).await);
    assert!(first.contains(&true) && first.contains(&false), "{first:?}");
    assert!(!run(1.0).await.contains(&true));
}

#[tokio::test]
async fn max_streams_caps_what_is_in_flight() {
    let http2 = Http2 {
        max_streams: Some(2),
        ..Http2::default()
    };
    let server = h2c_with(http2, ServeConfig::default());
    let (client, _conn) = connect(&server).await;
    // The first answer means the server's SETTINGS have arrived.
    assert_eq!(
        fetch(&mut client.clone(), get("/")).await.unwrap().status,
        200
    );
    // Two slow streams take both slots; a third waits for one of them.
    let mut waiting = Vec::new();
    for path in ["/delay/1000", "/delay/1000", "/"] {
        let mut client = client.clone();
        waiting.push(tokio::spawn(
            async move { fetch(&mut client, get(path)).await },
        ));
    }
    let stats = server.stats();
    until("2 slow streams", || stats.h2_streams_in_flight() == 2).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(stats.h2_streams(), 3, "the third is not opened yet");
    for response in waiting {
        assert_eq!(bounded(response).await.unwrap().unwrap().status, 200);
    }
    assert_eq!(stats.h2_streams(), 4);
    assert_eq!(stats.h2_max_streams_per_connection(), 2);
}

#[tokio::test]
async fn a_tiny_window_makes_uploads_crawl() {
    let http2 = Http2 {
        window: Some(16),
        ..Http2::default()
    };
    let server = h2c_with(
        http2,
        ServeConfig {
            record: 2,
            ..ServeConfig::default()
        },
    );
    let (client, _conn) = connect(&server).await;
    assert_eq!(
        fetch(&mut client.clone(), get("/")).await.unwrap().status,
        200
    );
    let mut client = bounded(client.ready()).await.unwrap();
    let (response, mut body) = client
        .send_request(request(Method::PUT, "/"), false)
        .unwrap();
    let mut sent = 0;
    let mut most = 0;
    while sent < 1000 {
        body.reserve_capacity(1000 - sent);
        let room = bounded(std::future::poll_fn(|cx| body.poll_capacity(cx)))
            .await
            .unwrap()
            .unwrap();
        most = most.max(room);
        let n = room.min(1000 - sent);
        sent += n;
        body.send_data(Bytes::from(vec![b'u'; n]), sent == 1000)
            .unwrap();
    }
    assert!(most <= 16, "granted {most} bytes at once");
    assert_eq!(bounded(response).await.unwrap().status(), 200);
    assert_eq!(server.stats().recorded()[1].body, vec![b'u'; 1000]);
}

fn faulty(fault: Fault) -> ServeConfig {
    ServeConfig {
        fault: Some(FaultPlan::every(fault, 2)),
        ..body_size(10)
    }
}

/// The first response is healthy, the second is `fault`'s.
async fn second_is_faulty(
    fault: Fault,
) -> (Server, SendRequest<Bytes>, Conn, Result<Got, h2::Error>) {
    let server = h2c(faulty(fault));
    let (mut client, conn) = connect(&server).await;
    assert_eq!(fetch(&mut client, get("/")).await.unwrap().body, xs(10));
    let second = fetch(&mut client, get("/")).await;
    (server, client, conn, second)
}

#[tokio::test]
async fn closing_faults_end_the_connection_without_a_goaway() {
    use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
    for fault in [Fault::CloseBeforeHead, Fault::Reset, Fault::Garbage] {
        let (server, _client, conn, second) = second_is_faulty(fault).await;
        // The stream fails with the connection, not by a GOAWAY.
        let err = second.unwrap_err();
        assert!(err.is_io() && !err.is_go_away(), "{fault}: {err:?}");
        let ended = bounded(conn).await.unwrap();
        let kind = err.get_io().map(|e| e.kind());
        match fault {
            // The client sees the connection end under an open stream.
            Fault::CloseBeforeHead => assert_eq!(kind, Some(BrokenPipe), "{err:?}"),
            Fault::Reset => assert_eq!(kind, Some(ConnectionReset), "{err:?}"),
            // The client's framing breaks on the bytes.
            _ => assert!(ended.is_err(), "{fault}: {ended:?}"),
        }
        let stats = server.stats();
        assert_eq!((stats.faults(), stats.h2_goaways()), (1, 0), "{fault}");
        until("the connection closed", || stats.open_connections() == 0).await;
    }
}

#[tokio::test]
async fn close_mid_body_sends_half_the_body_then_closes() {
    let server = h2c(faulty(Fault::CloseMidBody));
    let (mut client, conn) = connect(&server).await;
    fetch(&mut client, get("/")).await.unwrap();
    let mut ready = bounded(client.ready()).await.unwrap();
    let (response, _) = ready.send_request(get("/"), true).unwrap();
    let response = bounded(response).await.unwrap();
    assert_eq!(response.headers()["content-length"], "10");
    let mut body = response.into_body();
    let mut got = Vec::new();
    let end = loop {
        match bounded(body.data()).await {
            Some(Ok(data)) => got.extend_from_slice(&data),
            other => break other,
        }
    };
    assert_eq!(got, xs(5));
    assert!(matches!(end, Some(Err(_))), "cut off, not ended: {end:?}");
    bounded(conn).await.unwrap().expect("closed with no GOAWAY");
    assert_eq!(server.stats().h2_goaways(), 0);
}

#[tokio::test]
async fn bad_status_line_is_a_connection_error() {
    let (server, _client, conn, second) = second_is_faulty(Fault::BadStatusLine).await;
    // The GOAWAY names the faulty stream as processed, so the stream fails
    // only as its connection closes, which the GOAWAY explains.
    assert!(second.is_err());
    let ended = bounded(conn).await.unwrap().unwrap_err();
    assert!(ended.is_go_away() && ended.is_remote(), "{ended:?}");
    assert_eq!(ended.reason(), Some(Reason::PROTOCOL_ERROR), "{ended:?}");
    assert_eq!(server.stats().h2_goaways(), 1);
}

#[tokio::test]
async fn short_body_ends_the_stream_early() {
    let (server, mut client, _conn, second) = second_is_faulty(Fault::ShortBody).await;
    // The client notices the body is shorter than its content-length.
    let err = second.unwrap_err();
    assert_eq!(err.reason(), Some(Reason::PROTOCOL_ERROR), "{err:?}");
    // A stream error: the connection serves on.
    assert_eq!(fetch(&mut client, get("/")).await.unwrap().body, xs(10));
    assert_eq!(server.stats().faults(), 1);
}

#[tokio::test]
async fn huge_head_sends_a_mebibyte_of_headers() {
    let (_server, mut client, _conn, second) = second_is_faulty(Fault::HugeHead).await;
    let got = second.unwrap();
    assert_eq!(got.status, 200);
    let size: usize = got
        .headers
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len() + 32)
        .sum();
    assert!(size > 1 << 20, "{size}");
    assert!(got.body.is_empty());
    assert_eq!(fetch(&mut client, get("/")).await.unwrap().status, 200);
}

#[tokio::test]
async fn trickle_sends_a_byte_per_data_frame() {
    let server = h2c(ServeConfig {
        fault: Some(FaultPlan::every(Fault::Trickle, 1)),
        trickle_interval: Duration::from_millis(30),
        ..body_size(4)
    });
    let (client, _conn) = connect(&server).await;
    let mut ready = bounded(client.clone().ready()).await.unwrap();
    let start = Instant::now();
    let (response, _) = ready.send_request(get("/"), true).unwrap();
    let mut body = bounded(response).await.unwrap().into_body();
    let mut frames = Vec::new();
    while let Some(data) = bounded(body.data()).await {
        frames.push(data.unwrap().len());
    }
    assert_eq!(frames, [1, 1, 1, 1]);
    assert!(
        start.elapsed() >= Duration::from_millis(120),
        "{:?}",
        start.elapsed()
    );
    // The connection goes on.
    assert_eq!(
        fetch(&mut client.clone(), get("/")).await.unwrap().body,
        xs(4)
    );
}

/// Sends GET / on `client` and reads the event stream: its head, when the
/// head was read, and each DATA frame's text with when it was read.
async fn read_events(
    client: &SendRequest<Bytes>,
) -> (http::response::Parts, Instant, Vec<(String, Instant)>) {
    let mut ready = bounded(client.clone().ready()).await.unwrap();
    let (response, _) = ready.send_request(get("/"), true).unwrap();
    let (head, mut body) = bounded(response).await.unwrap().into_parts();
    let head_at = Instant::now();
    let mut frames = Vec::new();
    while let Some(data) = bounded(body.data()).await {
        let data = data.unwrap();
        let _ = body.flow_control().release_capacity(data.len());
        frames.push((String::from_utf8(data.to_vec()).unwrap(), Instant::now()));
    }
    (head, head_at, frames)
}

/// A server whose successful responses are `events` events, the first
/// `first` after the head, then `gap` apart.
fn sse(events: u64, first: Duration, gap: Duration) -> ServeConfig {
    ServeConfig {
        sse: Some(Sse { events, first, gap }),
        ..body_size(4)
    }
}

#[tokio::test]
async fn sse_events_come_one_data_frame_each_when_due() {
    let gap = Duration::from_millis(50);
    let server = h2c(sse(3, Duration::ZERO, gap));
    let (client, _conn) = connect(&server).await;
    let sent = Instant::now();
    let (head, head_at, frames) = read_events(&client).await;
    assert_eq!(head.status, 200);
    assert_eq!(head.headers["content-type"], "text/event-stream");
    assert_eq!(head.headers["cache-control"], "no-cache");
    assert!(head.headers.get("content-length").is_none());
    let events: Vec<_> = frames.iter().map(|(event, _)| event.as_str()).collect();
    let want = [
        "id: 1\ndata: event 1\n\n",
        "id: 2\ndata: event 2\n\n",
        "data: [DONE]\n\n",
    ];
    assert_eq!(events, want, "one DATA frame per event");
    // Exact from the request, which comes before the stream's start; from
    // the head, allowing for this task being slow to note its arrival.
    let third = frames[2].1;
    assert!(third - sent >= 2 * gap, "{:?}", third - sent);
    assert!(third - head_at >= gap * 3 / 2, "{:?}", third - head_at);
    assert!(third - sent < Duration::from_secs(1), "{:?}", third - sent);
    assert_eq!(server.stats().sse_events(), 3);
    // HEAD gets the head alone; a route that names its body keeps it.
    let head_only = fetch(&mut client.clone(), request(Method::HEAD, "/")).await;
    let head_only = head_only.unwrap();
    assert_eq!(head_only.headers["content-type"], "text/event-stream");
    assert!(head_only.body.is_empty());
    let bytes = fetch(&mut client.clone(), get("/bytes/2")).await.unwrap();
    assert_eq!(bytes.body, xs(2));
    assert_eq!(server.stats().sse_events(), 3);
}

#[tokio::test]
async fn the_head_goes_out_at_once_and_the_first_event_after_sse_first() {
    let first = Duration::from_millis(200);
    let gap = Duration::from_millis(20);
    let server = h2c(sse(2, first, gap));
    let (client, _conn) = connect(&server).await;
    let sent = Instant::now();
    let (head, head_at, frames) = read_events(&client).await;
    assert_eq!(head.headers["content-type"], "text/event-stream");
    let events: Vec<_> = frames.iter().map(|(event, _)| event.as_str()).collect();
    assert_eq!(events, ["id: 1\ndata: event 1\n\n", "data: [DONE]\n\n"]);
    // Had HEADERS waited for the first event, they would come together.
    // A lower bound only, with room for this task noting the head late;
    // the gap after it counts from the first event's due time.
    let to_first = frames[0].1 - head_at;
    assert!(
        to_first >= first * 3 / 4,
        "first event {to_first:?} after the head"
    );
    assert!(
        frames[1].1 - sent >= first + gap,
        "{:?}",
        frames[1].1 - sent
    );
    assert_eq!(server.stats().sse_events(), 2);
}

#[tokio::test]
async fn an_event_due_during_a_stall_waits_for_its_end() {
    let ms = Duration::from_millis;
    // Events due at about 0, 150, 300 and 450 ms; the stall covers the
    // last two, which both go out once it ends at 550 ms.
    let server = h2c(ServeConfig {
        stall: Some(StallPlan::once(ms(250), ms(300)).unwrap()),
        ..sse(4, Duration::ZERO, ms(150))
    });
    let start = server.started_at();
    let (client, _conn) = connect(&server).await;
    let (_, _, frames) = read_events(&client).await;
    assert_eq!(frames.len(), 4);
    assert_eq!(frames[3].0, "data: [DONE]\n\n");
    for (i, (_, at)) in frames.iter().enumerate().skip(2) {
        let since_start = *at - start;
        assert!(since_start >= ms(545), "event {} at {since_start:?}", i + 1);
    }
    assert_eq!(server.stats().sse_events(), 4);
}

#[tokio::test]
async fn never_answer_holds_only_its_stream() {
    let server = h2c(ServeConfig {
        fault: Some(FaultPlan::every(Fault::NeverAnswer, 1).per_connection()),
        ..ServeConfig::default()
    });
    let (client, _conn) = connect(&server).await;
    let mut ready = bounded(client.ready()).await.unwrap();
    let (response, _) = ready.send_request(get("/"), true).unwrap();
    let silent = tokio::time::timeout(Duration::from_millis(300), response).await;
    assert!(silent.is_err(), "no answer");
    assert_eq!(server.stats().h2_streams_in_flight(), 1);
    assert_eq!(server.stats().faults(), 1);
}

#[tokio::test]
async fn faults_without_an_http2_form_are_bad_routes() {
    let server = h2c(ServeConfig::default());
    let (mut client, _conn) = connect(&server).await;
    for path in ["/fault/close-mid-head", "/fault/bad-chunk"] {
        let got = fetch(&mut client, get(path)).await.unwrap();
        assert_eq!(got.status, 400, "{path}");
    }
    let refused = Server::start(ServeConfig {
        http2: Some(Http2::default()),
        fault: Some(FaultPlan::every(Fault::BadChunk, 1)),
        ..ServeConfig::default()
    });
    let err = refused.unwrap_err().to_string();
    assert!(
        err.contains("--fault bad-chunk has no HTTP/2 form"),
        "{err}"
    );
}

#[tokio::test]
async fn per_connection_faults_spoil_every_stream_of_picked_connections() {
    let server = h2c(ServeConfig {
        fault: Some(FaultPlan {
            fault: Fault::ShortBody,
            pick: Pick::Every(2),
            per: Per::Connection,
        }),
        ..body_size(4)
    });
    let (mut healthy, _a) = connect(&server).await;
    assert_eq!(fetch(&mut healthy, get("/")).await.unwrap().body, xs(4));
    // Connections are counted as they arrive: the second is picked.
    let (mut spoiled, _b) = connect(&server).await;
    for _ in 0..3 {
        assert_eq!(fetch(&mut healthy, get("/")).await.unwrap().body, xs(4));
        assert!(fetch(&mut spoiled, get("/")).await.is_err());
    }
    assert_eq!(server.stats().faults(), 3);
}

/// Bytes that are not HTTP/2 end the connection: it is closed, not held,
/// and the server serves on.
#[test]
fn http1_and_garbage_on_an_h2c_port_are_turned_away() {
    let server = h2c(ServeConfig::default());
    for wire in [
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        b"\x00\x17\xfe\xff not HTTP at all \x01\x02\x03\r\n\r\n",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\x09\x00\x00\x00\x00\x00garbage",
    ] {
        let mut tcp = std::net::TcpStream::connect(server.addr()).unwrap();
        tcp.set_read_timeout(Some(LIMIT)).unwrap();
        tcp.write_all(wire).unwrap();
        let mut got = Vec::new();
        // The server's SETTINGS and GOAWAY, then the end of the stream (or
        // a reset, if the close raced our unread bytes).
        let _ = tcp.read_to_end(&mut got);
        assert!(got.len() < 1024, "{wire:?}: {got:?}");
    }
    let stats = server.stats();
    let start = Instant::now();
    while stats.open_connections() > 0 {
        assert!(start.elapsed() < LIMIT, "connections left open");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(stats.requests(), 0);
}

#[tokio::test]
async fn tls_offers_h2_and_http1_by_alpn() {
    let cert = common::cert("h2");
    let server = common::start_with(
        &cert,
        ServeConfig {
            http2: Some(Http2::default()),
            ..body_size(2)
        },
    );
    let open = |alpn: &'static [&'static [u8]]| common::tls_connect(&server, &cert.roots, alpn);

    let stream = open(&[b"h2", b"http/1.1"]).await;
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut client, _conn) = client_on(stream).await;
    assert_eq!(fetch(&mut client, get("/")).await.unwrap().body, b"xx");
    assert_eq!(server.stats().h2_connections(), 1);

    // A client that offers only HTTP/1.1, or no ALPN at all, gets HTTP/1.1.
    const HTTP1_ONLY: &[&[u8]] = &[b"http/1.1"];
    for alpn in [HTTP1_ONLY, &[]] {
        let got = common::http1_get(&mut open(alpn).await).await;
        let want = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\
            Connection: close\r\n\r\nxx";
        assert_eq!(String::from_utf8_lossy(&got), want, "{alpn:?}");
    }
    assert_eq!(server.stats().h2_connections(), 1);
    assert_eq!(server.stats().connections(), 3);
}
