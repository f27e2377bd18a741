//! `/login` and `/private` end to end over HTTP/1.1, plain and over TLS:
//! a real server on a loopback port, and a small HTTP/1.1 client that
//! reads each response by its Content-Length on one kept-alive connection.
//! (HTTP/2 and HTTP/3 run the same checks in their own files.)
//!
//! Each test starts its own server on an OS-chosen port; every wait is
//! bounded ([`common::LIMIT`]).

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use metron_serve::{Fault, FaultPlan, ServeConfig, Server};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

#[allow(dead_code)]
mod common;
use common::{body_size, bounded, Fetch, Got};

/// An HTTP/1.1 client on `stream`, which it keeps alive.
struct Http1<S> {
    stream: S,
    buf: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Http1<S> {
    fn new(stream: S) -> Http1<S> {
        Http1 {
            stream,
            buf: Vec::new(),
        }
    }

    /// Sends `request` and returns the response's bytes, head and body, as
    /// they came.
    async fn exchange(&mut self, request: &str) -> Vec<u8> {
        self.stream.write_all(request.as_bytes()).await.unwrap();
        let head_only = request.starts_with("HEAD ");
        bounded(async {
            loop {
                if let Some(len) = response_len(&self.buf, head_only) {
                    return self.buf.drain(..len).collect();
                }
                let n = self.stream.read_buf(&mut self.buf).await.unwrap();
                assert!(n > 0, "closed mid-response: {:?}", self.buf);
            }
        })
        .await
    }
}

/// The length of the whole response at the front of `buf`, once it is
/// all there (a head, and unless it answers a HEAD request a body of its
/// Content-Length).
fn response_len(buf: &[u8], head_only: bool) -> Option<usize> {
    let mut fields = [httparse::EMPTY_HEADER; 16];
    let mut response = httparse::Response::new(&mut fields);
    let httparse::Status::Complete(head) = response.parse(buf).unwrap() else {
        return None;
    };
    let length = response
        .headers
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case("content-length") && !head_only)
        .map_or(0, |f| {
            std::str::from_utf8(f.value).unwrap().parse().unwrap()
        });
    (buf.len() >= head + length).then_some(head + length)
}

/// A whole response, parsed.
fn parse(bytes: &[u8]) -> Got {
    let mut fields = [httparse::EMPTY_HEADER; 16];
    let mut response = httparse::Response::new(&mut fields);
    let httparse::Status::Complete(head) = response.parse(bytes).unwrap() else {
        panic!("a partial response")
    };
    let mut headers = HeaderMap::new();
    for field in response.headers.iter() {
        let name = HeaderName::from_bytes(field.name.as_bytes()).unwrap();
        headers.append(name, HeaderValue::from_bytes(field.value).unwrap());
    }
    Got {
        status: StatusCode::from_u16(response.code.unwrap()).unwrap(),
        headers,
        body: bytes[head..].to_vec(),
        trailers: None,
    }
}

fn request(method: &str, path: &str, fields: &[(&str, &str)]) -> String {
    let fields: String = fields
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    format!("{method} {path} HTTP/1.1\r\nHost: t\r\n{fields}\r\n")
}

impl<S: AsyncRead + AsyncWrite + Unpin> Fetch for Http1<S> {
    async fn get_with(&mut self, path: &str, fields: &[(&str, &str)]) -> Got {
        parse(&self.exchange(&request("GET", path, fields)).await)
    }
}

async fn connect(server: &Server) -> Http1<TcpStream> {
    Http1::new(TcpStream::connect(server.addr()).await.unwrap())
}

#[tokio::test]
async fn login_gives_a_token_that_private_takes_back() {
    let server = Server::start(body_size(3)).unwrap();
    let mut client = connect(&server).await;
    let token = common::login_then_private(&mut client, 3).await;
    // Any connection takes the token: nothing is kept per connection.
    let mut other = connect(&server).await;
    let bearer = format!("Bearer {token}");
    let got = other
        .get_with("/private", &[("authorization", &bearer)])
        .await;
    assert_eq!(got.status, 200);
    let stats = server.stats();
    assert_eq!(stats.responses(200), 4);
    assert_eq!(stats.responses(401), 4);
    assert_eq!(stats.connections(), 2);
}

#[tokio::test]
async fn the_bytes_of_login_and_private() {
    let server = Server::start(body_size(2)).unwrap();
    let mut client = connect(&server).await;
    let login = client.exchange(&request("POST", "/login", &[])).await;
    let json = parse(&login).body;
    let json = String::from_utf8(json).unwrap();
    let token = &json[10..json.len() - 2];
    let want = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
         Set-Cookie: metron_token={token}; Path=/\r\nContent-Length: {}\r\n\r\n\
         {{\"token\":\"{token}\"}}",
        json.len()
    );
    assert_eq!(String::from_utf8(login).unwrap(), want);
    let head = client.exchange(&request("HEAD", "/login", &[])).await;
    let head = String::from_utf8(head).unwrap();
    assert!(head.ends_with(&format!("Content-Length: {}\r\n\r\n", json.len())));

    // With a token, exactly what any other path gives.
    let plain = client.exchange(&request("GET", "/", &[])).await;
    let cookie = format!("metron_token={token}");
    let private = request("GET", "/private/x", &[("Cookie", &cookie)]);
    assert_eq!(client.exchange(&private).await, plain);
    let denied = client.exchange(&request("GET", "/private", &[])).await;
    let want = "HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\n\
        WWW-Authenticate: Bearer\r\nContent-Length: 13\r\n\r\nunauthorized\n";
    assert_eq!(String::from_utf8(denied).unwrap(), want);
    // The 401 keeps the connection.
    assert_eq!(client.exchange(&private).await, plain);
}

#[tokio::test]
async fn private_meets_the_faults_any_path_does() {
    let server = Server::start(ServeConfig {
        fault: Some(FaultPlan::every(Fault::ShortBody, 1)),
        ..body_size(4)
    })
    .unwrap();
    let mut tcp = TcpStream::connect(server.addr()).await.unwrap();
    tcp.write_all(request("GET", "/private", &[]).as_bytes())
        .await
        .unwrap();
    let mut got = Vec::new();
    let _ = bounded(tcp.read_to_end(&mut got)).await;
    let want = "HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\n\
        WWW-Authenticate: Bearer\r\nContent-Length: 13\r\n\r\nunauthorized";
    assert_eq!(String::from_utf8(got).unwrap(), want);
}

#[tokio::test]
async fn login_and_private_over_tls() {
    let cert = common::cert("login");
    let server = common::start_with(&cert, body_size(3));
    let stream = common::tls_connect(&server, &cert.roots, &[b"http/1.1"]).await;
    let mut client = Http1::new(stream);
    common::login_then_private(&mut client, 3).await;
}
