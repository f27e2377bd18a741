//! What the HTTP/2 and HTTP/3 end-to-end tests share: the bound on every
//! wait, a certificate of the test's own, requests, the whole response a
//! client read, and HTTP/1.1 over TLS on the same port.

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, Method, Request, StatusCode};
use metron_serve::{ServeConfig, Server, StallPlan};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest any one step of a test may take.
pub const LIMIT: Duration = Duration::from_secs(10);

pub fn body_size(n: u64) -> ServeConfig {
    ServeConfig {
        body_size: n,
        ..ServeConfig::default()
    }
}

/// `fut`, which must finish within [`LIMIT`].
pub async fn bounded<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(LIMIT, fut)
        .await
        .expect("finished in time")
}

/// A request for `path` at `base` (scheme and authority).
pub fn request_at(base: &str, method: Method, path: &str) -> Request<()> {
    Request::builder()
        .method(method)
        .uri(format!("{base}{path}"))
        .body(())
        .unwrap()
}

/// A whole response.
#[derive(Debug)]
pub struct Got {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    pub trailers: Option<HeaderMap>,
}

pub fn xs(n: usize) -> Vec<u8> {
    vec![b'x'; n]
}

/// A certificate for `localhost` in PEM files, and the roots that trust it.
pub struct Cert {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub roots: rustls::RootCertStore,
}

/// Makes a certificate in files of this test's own (`what` names the
/// folder's test binary), which the server reads as it starts.
pub fn cert(what: &str) -> Cert {
    static MADE: AtomicU64 = AtomicU64::new(0);
    let n = MADE.fetch_add(1, Relaxed);
    let dir = std::env::temp_dir().join(format!("metron-serve-{what}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.key_pair.serialize_pem()).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certified.cert.der().clone()).unwrap();
    Cert { cert, key, roots }
}

/// Starts `cfg` with the certificate `cert` made, then removes its files.
pub fn start_with(cert: &Cert, cfg: ServeConfig) -> Server {
    let server = Server::start(ServeConfig {
        tls_cert: Some(cert.cert.clone()),
        tls_key: Some(cert.key.clone()),
        ..cfg
    })
    .expect("server starts");
    if let Some(dir) = cert.cert.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
    server
}

/// A TLS client that trusts `roots` and offers `alpn`.
pub fn tls_client(roots: &rustls::RootCertStore, alpn: &[&[u8]]) -> tokio_rustls::TlsConnector {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots.clone())
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// A TLS connection to `server` as `localhost`, offering `alpn`.
pub async fn tls_connect(
    server: &Server,
    roots: &rustls::RootCertStore,
    alpn: &[&[u8]],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tcp = TcpStream::connect(server.addr()).await.unwrap();
    bounded(tls_client(roots, alpn).connect(name, tcp))
        .await
        .unwrap()
}

/// One HTTP/1.1 GET on `stream`, asking the server to close: all it read
/// until the close.
pub async fn http1_get(stream: &mut tokio_rustls::client::TlsStream<TcpStream>) -> Vec<u8> {
    stream
        .write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let _ = bounded(stream.read_to_end(&mut got)).await;
    got
}

/// A client of either protocol, as the tests that need only bodies use it.
pub trait GetBody {
    /// The body of the answer to a GET of `path`, which must come.
    async fn get_body(&mut self, path: &str) -> Vec<u8>;
}

/// A server stalled from 600 ms after its start for 500 ms, with 3-byte
/// bodies.
pub fn stalled() -> ServeConfig {
    let stall = StallPlan::once(Duration::from_millis(600), Duration::from_millis(500)).unwrap();
    ServeConfig {
        stall: Some(stall),
        ..body_size(3)
    }
}

/// On a [`stalled`] server: a request before the stall is answered before
/// it, and one sent during it is answered no sooner than its end.
pub async fn nothing_is_answered_during_the_stall(server: &Server, client: &mut impl GetBody) {
    assert_eq!(client.get_body("/").await, xs(3));
    let since_start = server.started_at().elapsed();
    assert!(
        since_start < Duration::from_millis(600),
        "answered before the stall"
    );
    tokio::time::sleep_until((server.started_at() + Duration::from_millis(650)).into()).await;
    assert_eq!(client.get_body("/").await, xs(3));
    let answered = server.started_at().elapsed();
    assert!(answered >= Duration::from_millis(1100), "{answered:?}");
}

/// A client of any protocol, as the login tests use it.
pub trait Fetch {
    /// The whole answer to a GET of `path` with these header `fields`
    /// (a name given twice is sent twice).
    async fn get_with(&mut self, path: &str, fields: &[(&str, &str)]) -> Got;
}

/// A GET of `path` at `base` with these header `fields`, in order.
pub fn get_with_fields(base: &str, path: &str, fields: &[(&str, &str)]) -> Request<()> {
    let mut req = request_at(base, Method::GET, path);
    for (name, value) in fields {
        let name = http::HeaderName::from_bytes(name.as_bytes()).unwrap();
        let value = http::HeaderValue::from_str(value).unwrap();
        req.headers_mut().append(name, value);
    }
    req
}

/// `/login` hands out a token, in a JSON body and a cookie, that
/// `/private` takes back as a bearer token or as that cookie, giving the
/// default response (`body` bytes); without a token, or with a forged
/// one, `/private` is a 401 naming the bearer scheme. Returns the token.
pub async fn login_then_private(client: &mut impl Fetch, body: usize) -> String {
    let got = client.get_with("/login", &[]).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.headers["content-type"], "application/json");
    let json = String::from_utf8(got.body).unwrap();
    assert_eq!(got.headers["content-length"], json.len().to_string());
    let token = json
        .strip_prefix("{\"token\":\"")
        .and_then(|rest| rest.strip_suffix("\"}"))
        .unwrap_or_else(|| panic!("not a token: {json}"))
        .to_string();
    let cookie = format!("metron_token={token}; Path=/");
    assert_eq!(got.headers["set-cookie"], cookie.as_str());

    let bearer = format!("Bearer {token}");
    let got = client
        .get_with("/private/a?b", &[("authorization", &bearer)])
        .await;
    assert_eq!((got.status.as_u16(), got.body), (200, xs(body)));
    let cookie = format!("theme=dark; metron_token={token}");
    let got = client.get_with("/private", &[("cookie", &cookie)]).await;
    assert_eq!((got.status.as_u16(), got.body), (200, xs(body)));

    let forged = match token.strip_suffix('0') {
        Some(rest) => format!("{rest}1"),
        None => format!("{}0", &token[..token.len() - 1]),
    };
    let forged_bearer = format!("Bearer {forged}");
    let forged_cookie = format!("metron_token={forged}");
    let basic = format!("Basic {token}");
    for fields in [
        &[][..],
        &[("authorization", forged_bearer.as_str())],
        &[("cookie", forged_cookie.as_str())],
        &[("authorization", basic.as_str())],
    ] {
        let got = client.get_with("/private/x", fields).await;
        assert_eq!(got.status, 401, "{fields:?}");
        assert_eq!(got.headers["www-authenticate"], "Bearer", "{fields:?}");
        assert_eq!(got.body, b"unauthorized\n", "{fields:?}");
    }
    token
}
