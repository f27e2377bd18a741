//! `metron serve --http3` end to end: a real server on a loopback port and
//! the HTTP/3 library's own client over QUIC.
//!
//! Each test starts its own server on an OS-chosen port, presenting a
//! certificate the test made and its client trusts. Every wait is bounded
//! ([`LIMIT`]); timing tests assert lower bounds only, since a busy
//! machine may be late but never early.

use std::future::{poll_fn, Future};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use h3::client::SendRequest;
use h3::error::{Code, StreamError};
use http::{HeaderMap, Method, Request, StatusCode};
use metron_serve::{
    parse_h3_code, Capacity, Http3, Pick, Probability, ServeConfig, Server, Sse, StallPlan,
    H3_REQUEST_REJECTED,
};
use quinn::crypto::rustls::QuicClientConfig;

/// The longest any one step of a test may take.
const LIMIT: Duration = Duration::from_secs(10);

/// A certificate for `localhost` in PEM files, and the roots that trust it.
struct Cert {
    cert: PathBuf,
    key: PathBuf,
    roots: rustls::RootCertStore,
}

/// Makes a certificate in files of this test's own.
fn cert() -> Cert {
    static MADE: AtomicU64 = AtomicU64::new(0);
    let n = MADE.fetch_add(1, Relaxed);
    let dir = std::env::temp_dir().join(format!("metron-serve-h3-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.key_pair.serialize_pem()).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certified.cert.der().clone()).unwrap();
    Cert { cert, key, roots }
}

/// A server with `cfg`, HTTP/3 as `http3` says, and a certificate the
/// returned roots trust.
fn h3_with(http3: Http3, cfg: ServeConfig) -> (Server, rustls::RootCertStore) {
    let Cert { cert, key, roots } = cert();
    let server = Server::start(ServeConfig {
        http3: Some(http3),
        tls_cert: Some(cert.clone()),
        tls_key: Some(key),
        ..cfg
    })
    .expect("server starts");
    if let Some(dir) = cert.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
    (server, roots)
}

fn h3(cfg: ServeConfig) -> (Server, rustls::RootCertStore) {
    h3_with(Http3::default(), cfg)
}

fn body_size(n: u64) -> ServeConfig {
    ServeConfig {
        body_size: n,
        ..ServeConfig::default()
    }
}

/// `fut`, which must finish within [`LIMIT`].
async fn bounded<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(LIMIT, fut)
        .await
        .expect("finished in time")
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
    Request::builder()
        .method(method)
        .uri(format!("https://localhost{path}"))
        .body(())
        .unwrap()
}

fn get(path: &str) -> Request<()> {
    request(Method::GET, path)
}

/// A whole response.
#[derive(Debug)]
struct Got {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
    trailers: Option<HeaderMap>,
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

fn xs(n: usize) -> Vec<u8> {
    vec![b'x'; n]
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
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots.clone())
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls));
    let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut stream = bounded(connector.connect(name, tcp)).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream
        .write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let _ = bounded(stream.read_to_end(&mut got)).await;
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
    let stall = StallPlan::once(Duration::from_millis(600), Duration::from_millis(500)).unwrap();
    let (server, roots) = h3(ServeConfig {
        stall: Some(stall),
        ..body_size(3)
    });
    let mut client = connect(&server, &roots).await;
    let before = fetch(&mut client, get("/")).await.unwrap();
    assert_eq!(before.body, xs(3));
    let since_start = server.started_at().elapsed();
    assert!(
        since_start < Duration::from_millis(600),
        "answered before the stall"
    );
    tokio::time::sleep_until((server.started_at() + Duration::from_millis(650)).into()).await;
    let during = fetch(&mut client, get("/")).await.unwrap();
    let answered = server.started_at().elapsed();
    assert_eq!(during.body, xs(3));
    assert!(answered >= Duration::from_millis(1100), "{answered:?}");
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
