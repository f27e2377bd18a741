//! `metron serve --http3` end to end: a real server on a loopback port and
//! the HTTP/3 library's own client over QUIC.
//!
//! Each test starts its own server on an OS-chosen port, presenting a
//! certificate the test made and its client trusts. Every wait is bounded
//! ([`common::LIMIT`]); timing tests assert lower bounds only, since a busy
//! machine may be late but never early.

use std::future::poll_fn;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use h3::client::SendRequest;
use h3::error::{Code, StreamError};
use http::{Method, Request};
use metron_serve::{
    parse_h3_code, Capacity, Http3, Llm, Pick, Probability, ServeConfig, Server, Sse,
    H3_REQUEST_REJECTED,
};
use quinn::crypto::rustls::QuicClientConfig;

#[allow(dead_code)]
mod common;
use common::{body_size, bounded, request_at, xs, Fetch, Got};

/// A server with `cfg`, HTTP/3 as `http3` says, and a certificate the
/// returned roots trust.
fn h3_with(http3: Http3, cfg: ServeConfig) -> (Server, rustls::RootCertStore) {
    let cert = common::cert("h3");
    let server = common::start_with(
        &cert,
        ServeConfig {
            http3: Some(http3),
            ..cfg
        },
    );
    (server, cert.roots)
}

fn h3(cfg: ServeConfig) -> (Server, rustls::RootCertStore) {
    h3_with(Http3::default(), cfg)
}

/// An HTTP/3 client: QUIC's connection (to see how it closed) and the
/// HTTP/3 library's request handle, its connection driven by a task.
struct Client {
    quic: quinn::Connection,
    send: SendRequest<h3_quinn::OpenStreams, Bytes>,
    _endpoint: quinn::Endpoint,
}

async fn connect(server: &Server, roots: &rustls::RootCertStore) -> Client {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots.clone())
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = QuicClientConfig::try_from(tls).unwrap();
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(quic)));
    let connecting = endpoint.connect(server.addr(), "localhost").unwrap();
    let quic = bounded(connecting).await.expect("QUIC handshake");
    let (mut driver, send) = bounded(h3::client::new(h3_quinn::Connection::new(quic.clone())))
        .await
        .expect("HTTP/3 settings");
    tokio::spawn(async move { poll_fn(|cx| driver.poll_close(cx)).await });
    Client {
        quic,
        send,
        _endpoint: endpoint,
    }
}

fn request(method: Method, path: &str) -> Request<()> {
    request_at("https://localhost", method, path)
}

fn get(path: &str) -> Request<()> {
    request(Method::GET, path)
}

/// Sends `req` with `body` and reads the whole response.
async fn send(
    client: &mut SendRequest<h3_quinn::OpenStreams, Bytes>,
    req: Request<()>,
    body: &'static [u8],
) -> Result<Got, StreamError> {
    bounded(async {
        let mut stream = client.send_request(req).await?;
        if !body.is_empty() {
            stream.send_data(Bytes::from_static(body)).await?;
        }
        stream.finish().await?;
        let head = stream.recv_response().await?;
        let mut bytes = Vec::new();
        while let Some(mut data) = stream.recv_data().await? {
            while data.has_remaining() {
                let chunk = data.chunk();
                bytes.extend_from_slice(chunk);
                let n = chunk.len();
                data.advance(n);
            }
        }
        let trailers = stream.recv_trailers().await?;
        Ok(Got {
            status: head.status(),
            headers: head.headers().clone(),
            body: bytes,
            trailers,
        })
    })
    .await
}

async fn fetch(client: &mut Client, req: Request<()>) -> Result<Got, StreamError> {
    send(&mut client.send, req, b"").await
}

impl common::GetBody for Client {
    async fn get_body(&mut self, path: &str) -> Vec<u8> {
        fetch(self, get(path)).await.unwrap().body
    }
}

impl common::Fetch for Client {
    async fn get_with(&mut self, path: &str, fields: &[(&str, &str)]) -> Got {
        let req = common::get_with_fields("https://localhost", path, fields);
        fetch(self, req).await.unwrap()
    }
}

/// The code a stream was reset with, if it was.
fn reset_code(err: &StreamError) -> Option<Code> {
    match err {
        StreamError::RemoteTerminate { code, .. } => Some(*code),
        _ => None,
    }
}

/// The code the server closed the connection with, once it has.
async fn closed_with(client: &Client) -> Option<u64> {
    match bounded(client.quic.closed()).await {
        quinn::ConnectionError::ApplicationClosed(close) => Some(close.error_code.into_inner()),
        _ => None,
    }
}

#[tokio::test]
async fn serves_the_routes_and_counts_each_request() {
    let (server, roots) = h3(body_size(5));
    let mut client = connect(&server, &roots).await;
    let got = fetch(&mut client, get("/")).await.unwrap();
    assert_eq!(got.status, 200);
    assert_eq!(got.body, xs(5));
    assert_eq!(got.headers["content-length"], "5");
    assert_eq!(got.headers["content-type"], "text/plain");
    let got = fetch(&mut client, get("/status/503")).await.unwrap();
    assert_eq!((got.status.as_u16(), got.body), (503, xs(5)));
    let got = fetch(&mut client, get("/bytes/20000")).await.unwrap();
    assert_eq!(got.body, xs(20000));
    let got = fetch(&mut client, get("/chunked")).await.unwrap();
    assert_eq!(got.body, xs(5));
    let trailers = got.trailers.expect("trailers");
    assert_eq!(trailers["x-body-bytes"], "5");
    let got = fetch(&mut client, request(Method::HEAD, "/"))
        .await
        .unwrap();
    assert_eq!((got.status.as_u16(), got.body.len()), (200, 0));
    assert_eq!(got.headers["content-length"], "5");
    let got = fetch(&mut client, get("/status/abc")).await.unwrap();
    assert_eq!(
        (got.status.as_u16(), got.body),
        (400, b"bad request\n".to_vec())
    );
    // Faults HTTP/3 has no form of are bad routes, as over HTTP/2.
    let got = fetch(&mut client, get("/fault/bad-chunk")).await.unwrap();
    assert_eq!(got.status, 400);

    let stats = server.stats();
    assert_eq!(stats.requests(), 7);
    assert_eq!(stats.responses(200), 4);
    assert_eq!(stats.responses(503), 1);
    assert_eq!(stats.responses(400), 2);
    assert_eq!(stats.h3_connections(), 1);
    assert_eq!(stats.h3_streams(), 7);
    assert_eq!(stats.connections(), 1);
    assert_eq!(stats.h2_streams(), 0);
}

#[tokio::test]
async fn login_gives_a_token_that_private_takes_back() {
    let (server, roots) = h3(body_size(3));
    let mut client = connect(&server, &roots).await;
    let token = common::login_then_private(&mut client, 3).await;
    let cookie = format!("metron_token={token}");
    let split = [("cookie", "theme=dark"), ("cookie", cookie.as_str())];
    let got = client.get_with("/private", &split).await;
    assert_eq!((got.status.as_u16(), got.body), (200, xs(3)));
    let stats = server.stats();
    assert_eq!((stats.responses(200), stats.responses(401)), (4, 4));
}

#[tokio::test]
async fn request_bodies_are_read_and_recorded() {
    let (server, roots) = h3(ServeConfig {
        record: 4,
        ..ServeConfig::default()
    });
    let mut client = connect(&server, &roots).await;
    let got = send(&mut client.send, request(Method::POST, "/up?x=1"), b"hello")
        .await
        .unwrap();
    assert_eq!(got.status, 200);
    let stats = server.stats();
    let recorded = stats.recorded();
    assert_eq!(recorded.len(), 1);
    let one = &recorded[0];
    assert_eq!(
        (one.method.as_str(), one.path.as_str(), one.version),
        ("POST", "/up?x=1", 3)
    );
    assert_eq!(one.body, b"hello");
    assert_eq!(stats.path_count("/up"), 1);
    assert_eq!(stats.bytes_received(), 5);
}

#[tokio::test]
async fn tcp_and_udp_share_the_port() {
    let (server, roots) = h3(body_size(2));
    // HTTPS over TCP at the same address still answers in HTTP/1.1.
    let got = common::http1_get(&mut common::tls_connect(&server, &roots, &[]).await).await;
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"), "{got:?}");
    let mut client = connect(&server, &roots).await;
    assert_eq!(fetch(&mut client, get("/")).await.unwrap().body, xs(2));
    let stats = server.stats();
    assert_eq!((stats.connections(), stats.h3_connections()), (2, 1));
}

#[tokio::test]
async fn delay_holds_each_response_back() {
    let (server, roots) = h3(ServeConfig {
        delay: Duration::from_millis(150),
        ..ServeConfig::default()
    });
    let mut client = connect(&server, &roots).await;
    let start = Instant::now();
    assert_eq!(fetch(&mut client, get("/")).await.unwrap().status, 200);
    assert!(start.elapsed() >= Duration::from_millis(150));
    let start = Instant::now();
    assert_eq!(
        fetch(&mut client, get("/delay/100")).await.unwrap().status,
        200
    );
    assert!(start.elapsed() >= Duration::from_millis(250));
}

#[tokio::test]
async fn nothing_is_answered_during_a_stall() {
    let (server, roots) = h3(common::stalled());
    let mut client = connect(&server, &roots).await;
    common::nothing_is_answered_during_the_stall(&server, &mut client).await;
}

#[tokio::test]
async fn capacity_queues_http3_requests_too() {
    let (server, roots) = h3(ServeConfig {
        capacity: Some(Capacity::new(10.0).unwrap()),
        ..ServeConfig::default()
    });
    let client = connect(&server, &roots).await;
    let start = Instant::now();
    let tasks: Vec<_> = (0..3)
        .map(|_| {
            let mut requests = client.send.clone();
            tokio::spawn(async move { send(&mut requests, get("/"), b"").await.map(|g| g.status) })
        })
        .collect();
    for task in tasks {
        assert_eq!(bounded(task).await.unwrap().unwrap(), 200);
    }
    // Services 100 ms apart: the third ends at least 200 ms after the first.
    assert!(start.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn sse_events_come_when_due() {
    let sse = Sse {
        events: 3,
        first: Duration::from_millis(50),
        gap: Duration::from_millis(50),
    };
    let (server, roots) = h3(ServeConfig {
        sse: Some(sse),
        ..ServeConfig::default()
    });
    let mut client = connect(&server, &roots).await;
    let start = Instant::now();
    let got = fetch(&mut client, get("/")).await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(150));
    assert_eq!(got.headers["content-type"], "text/event-stream");
    let body = String::from_utf8(got.body).unwrap();
    assert_eq!(
        body,
        "id: 1\ndata: event 1\n\nid: 2\ndata: event 2\n\ndata: [DONE]\n\n"
    );
    assert_eq!(server.stats().sse_events(), 3);
}

#[tokio::test]
async fn llm_streams_a_completion_token_by_token() {
    let (ttft, tpot) = (Duration::from_millis(60), Duration::from_millis(20));
    let (server, roots) = h3(ServeConfig {
        llm: Some(Llm {
            ttft,
            tpot,
            max_tokens: 16,
        }),
        ..ServeConfig::default()
    });
    let mut client = connect(&server, &roots).await;
    const BODY: &[u8] = br#"{"max_tokens":4,"stream":true,"stream_options":{"include_usage":true},
        "messages":[{"role":"user","content":"a b c"}]}"#;
    let start = Instant::now();
    let req = request(Method::POST, "/v1/chat/completions");
    let got = send(&mut client.send, req, BODY).await.unwrap();
    assert!(start.elapsed() >= ttft + tpot * 3, "{:?}", start.elapsed());
    assert_eq!(got.headers["content-type"], "text/event-stream");
    let body = String::from_utf8(got.body).unwrap();
    let events: Vec<&str> = body.split_terminator("\n\n").collect();
    assert_eq!(events.len(), 6, "four tokens, usage, [DONE]: {body}");
    assert_eq!(events[5], "data: [DONE]");
    let usage: serde_json::Value = serde_json::from_str(&events[4][6..]).unwrap();
    assert_eq!(usage["usage"]["prompt_tokens"], 3);
    assert_eq!(usage["usage"]["completion_tokens"], 4);
    let stats = server.stats();
    assert_eq!((stats.completions(), stats.completion_tokens()), (1, 4));
    assert_eq!(stats.prompt_tokens(), 3);
    let bad = send(
        &mut client.send,
        request(Method::POST, "/v1/completions"),
        b"{",
    )
    .await
    .unwrap();
    assert_eq!(bad.status, 400);
}

#[tokio::test]
async fn goaway_after_n_requests_answers_those_and_refuses_the_rest() {
    let http3 = Http3 {
        goaway_after: Some(3),
        ..Http3::default()
    };
    let (server, roots) = h3_with(http3, ServeConfig::default());
    let client = connect(&server, &roots).await;
    // Six requests at once: all are sent before the GOAWAY can arrive.
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let mut requests = client.send.clone();
            tokio::spawn(async move { send(&mut requests, get("/delay/50"), b"").await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(bounded(task).await.unwrap());
    }
    let answered = outcomes.iter().filter(|got| got.is_ok()).count();
    assert_eq!(answered, 3, "{outcomes:?}");
    for refused in outcomes.iter().filter_map(|got| got.as_ref().err()) {
        let code = reset_code(refused);
        let gone = matches!(refused, StreamError::RemoteClosing { .. });
        assert!(
            gone || code == Some(Code::H3_REQUEST_REJECTED),
            "{refused:?}"
        );
    }
    // The server closes once they are answered, as politely as it can.
    assert_eq!(closed_with(&client).await, Some(0x100));
    let stats = server.stats();
    assert_eq!(stats.requests(), 3);
    assert_eq!(stats.h3_streams(), 3);
    assert_eq!(stats.h3_goaways(), 1);
}

#[tokio::test]
async fn close_every_goes_away_after_the_nth_response() {
    let (server, roots) = h3(ServeConfig {
        close_every: Some(2),
        ..ServeConfig::default()
    });
    let mut client = connect(&server, &roots).await;
    for _ in 0..2 {
        assert_eq!(fetch(&mut client, get("/")).await.unwrap().status, 200);
    }
    assert_eq!(closed_with(&client).await, Some(0x100));
    assert!(fetch(&mut client, get("/")).await.is_err());
    assert_eq!(server.stats().h3_goaways(), 1);
}

#[tokio::test]
async fn a_share_of_streams_is_reset_the_same_way_every_time() {
    let run = |p: f64, code: Option<u64>| async move {
        let http3 = Http3 {
            reset: Some(Pick::Chance {
                p: Probability::new(p).unwrap(),
                seed: 7,
            }),
            reset_code: code,
            ..Http3::default()
        };
        let (server, roots) = h3_with(http3, ServeConfig::default());
        let mut client = connect(&server, &roots).await;
        let want = Code::from(code.unwrap_or(H3_REQUEST_REJECTED));
        let mut outcomes = Vec::new();
        for _ in 0..20 {
            match fetch(&mut client, get("/")).await {
                Ok(got) => outcomes.push(got.status == 200),
                Err(e) => {
                    assert_eq!(reset_code(&e), Some(want), "{e:?}");
                    outcomes.push(false);
                }
            }
        }
        let resets = outcomes.iter().filter(|ok| !**ok).count() as u64;
        assert_eq!(server.stats().h3_resets(), resets);
        assert_eq!(server.stats().responses_total(), 20 - resets);
        outcomes
    };
    let first = run(0.5, None).await;
    assert_eq!(first, run(0.5, None).await);
    assert!(first.contains(&true) && first.contains(&false), "{first:?}");
    let internal = parse_h3_code("internal_error").unwrap();
    assert!(!run(1.0, Some(internal)).await.contains(&true));
}

#[tokio::test]
async fn max_streams_caps_what_is_in_flight() {
    let http3 = Http3 {
        max_streams: 2,
        ..Http3::default()
    };
    let (server, roots) = h3_with(http3, ServeConfig::default());
    let client = connect(&server, &roots).await;
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let mut requests = client.send.clone();
            tokio::spawn(async move { send(&mut requests, get("/delay/100"), b"").await })
        })
        .collect();
    for task in tasks {
        assert_eq!(bounded(task).await.unwrap().unwrap().status, 200);
    }
    let stats = server.stats();
    assert_eq!(stats.requests(), 5);
    assert_eq!(stats.h3_max_streams_per_connection(), 2);
}

#[tokio::test]
async fn connection_faults_close_with_their_codes() {
    let cases = [
        ("/fault/close-before-head", 0x100),
        ("/fault/reset", 0x102),
        ("/fault/garbage", 0x106),
        ("/fault/bad-status-line", 0x101),
    ];
    for (path, code) in cases {
        let (server, roots) = h3(ServeConfig::default());
        let mut client = connect(&server, &roots).await;
        assert!(fetch(&mut client, get(path)).await.is_err(), "{path}");
        assert_eq!(closed_with(&client).await, Some(code), "{path}");
        assert_eq!(server.stats().faults(), 1);
    }
}

#[tokio::test]
async fn short_body_and_huge_head_are_stream_faults() {
    let (server, roots) = h3(body_size(10));
    let mut client = connect(&server, &roots).await;
    let got = fetch(&mut client, get("/fault/short-body")).await.unwrap();
    assert_eq!(
        (got.headers["content-length"].as_bytes(), got.body.len()),
        (&b"10"[..], 9)
    );
    // The client's header limit refuses a mebibyte of head; the stream
    // fails, the connection goes on.
    let _ = fetch(&mut client, get("/fault/huge-head")).await;
    assert_eq!(fetch(&mut client, get("/")).await.unwrap().body, xs(10));
}

#[test]
fn http3_needs_tls() {
    let err = Server::start(ServeConfig {
        http3: Some(Http3::default()),
        ..ServeConfig::default()
    })
    .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    let msg = err.to_string();
    assert!(msg.starts_with("--http3 needs TLS"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
}
