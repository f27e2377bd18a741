//! Requests as header fields, for the protocols that send them so (HTTP/2
//! and HTTP/3), converted once from the HTTP/1.1 bytes that wrk's Lua API
//! and the static request produce (`wrk.format`, a script's `request()`),
//! so that every send reuses the converted parts. Each protocol encodes
//! the fields its own way (HPACK, QPACK).
//!
//! The conversion follows RFC 9113 §8.3 (RFC 9114 §4.3 is the same): the
//! method and target become `:method` and `:path`; `Host` becomes
//! `:authority` (an absolute-form target's authority wins, as in
//! HTTP/1.1); the fields forbidden because they belong to one HTTP/1.1
//! connection are dropped (RFC 9113 §8.2.2); names are lowercased. A
//! chunked body is decoded, since these protocols frame the body
//! themselves, and is then given a Content-Length.

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH};
use http::uri::{Authority, PathAndQuery, Scheme, Uri};
use http::Method;

use super::h1::chunked::ChunkedDecoder;
use super::h1::request::{split_requests, RequestError, MAX_REQUEST_HEADERS};
use super::h1::response::FieldSummary;
use super::version::Protocol;

/// Fields that describe one HTTP/1.1 connection, which a request sent as
/// fields must not carry (RFC 9113 §8.2.2); `te` is allowed only as "trailers".
const CONNECTION_FIELDS: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// The largest body one request may carry: the library sends a body in one
/// piece, and a piece must fit in a flow-control window (2^31 - 1).
const MAX_BODY: usize = (1 << 31) - 1;

/// Why bytes could not become requests of `over`. `index` is 1-based.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FromHttp1Error {
    /// The bytes are not whole HTTP/1.x requests.
    #[error(transparent)]
    Framing(#[from] RequestError),
    #[error("request {index} cannot be sent over {}: {reason}", over.name())]
    Unfit {
        over: Protocol,
        index: usize,
        reason: String,
    },
}

/// One request as header fields, built once: its parts are shared, not
/// copied, by every request sent from it.
#[derive(Clone, Debug)]
pub struct FieldRequest {
    method: Method,
    /// Scheme, authority and path: what becomes the pseudo-header fields.
    uri: Uri,
    headers: HeaderMap,
    /// Empty: the HEADERS frame ends the stream.
    body: Bytes,
}

impl FieldRequest {
    /// Converts the HTTP/1.x requests in `bytes` (several in one buffer
    /// become several) for `over`, with `:scheme` set to `scheme` and
    /// `:authority` taken from each request's `Host`, else `authority`.
    pub fn from_http1(
        bytes: &[u8],
        scheme: &str,
        authority: &str,
        over: Protocol,
    ) -> Result<Vec<FieldRequest>, FromHttp1Error> {
        let scheme = match scheme {
            "http" => Scheme::HTTP,
            "https" => Scheme::HTTPS,
            _ => {
                return Err(FromHttp1Error::Unfit {
                    over,
                    index: 1,
                    reason: format!("its scheme {scheme:?} is not http or https"),
                })
            }
        };
        let mut at = 0;
        let mut out = Vec::new();
        for (i, meta) in split_requests(bytes)?.iter().enumerate() {
            let index = i + 1;
            let request = &bytes[at..at + meta.len];
            at += meta.len;
            let converted =
                convert(request, &scheme, authority).map_err(|reason| FromHttp1Error::Unfit {
                    over,
                    index,
                    reason,
                })?;
            out.push(converted);
        }
        Ok(out)
    }

    /// The one HTTP/1.x request in `wire` for `over`; the error says why
    /// it cannot go.
    pub fn one_from_http1(
        wire: &[u8],
        scheme: &str,
        authority: &str,
        over: Protocol,
    ) -> Result<FieldRequest, String> {
        let requests =
            Self::from_http1(wire, scheme, authority, over).map_err(|e| e.to_string())?;
        match <[FieldRequest; 1]>::try_from(requests) {
            Ok([one]) => Ok(one),
            Err(more) => Err(format!("expected one request, found {}", more.len())),
        }
    }

    /// A HEAD request: its response has no body.
    pub fn is_head(&self) -> bool {
        self.method == Method::HEAD
    }

    pub fn method(&self) -> &str {
        self.method.as_str()
    }

    /// The `:path`.
    pub fn path(&self) -> &str {
        self.uri.path_and_query().map_or("/", PathAndQuery::as_str)
    }

    /// The `:authority`.
    pub fn authority(&self) -> &str {
        self.uri.authority().map_or("", Authority::as_str)
    }

    /// The four pseudo-fields and then the regular ones (names
    /// lowercase), in the order they are sent.
    pub fn fields(&self) -> Vec<(&[u8], &[u8])> {
        let mut fields: Vec<(&[u8], &[u8])> = Vec::with_capacity(4 + self.headers.len());
        fields.extend([
            (&b":method"[..], self.method().as_bytes()),
            (b":scheme", self.scheme().as_bytes()),
            (b":authority", self.authority().as_bytes()),
            (b":path", self.path().as_bytes()),
        ]);
        for (name, value) in &self.headers {
            fields.push((name.as_str().as_bytes(), value.as_bytes()));
        }
        fields
    }

    /// The regular fields, names lowercase.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The scheme of its `:scheme`.
    pub fn scheme(&self) -> &str {
        self.uri.scheme_str().unwrap_or("https")
    }
}

/// One whole HTTP/1.x request (as split) as fields; the error says what
/// does not fit.
fn convert(request: &[u8], scheme: &Scheme, authority: &str) -> Result<FieldRequest, String> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_REQUEST_HEADERS];
    let mut parsed = httparse::Request::new(&mut fields);
    // Splitting parsed it already; this cannot fail or be partial.
    let head_len = match parsed.parse(request) {
        Ok(httparse::Status::Complete(len)) => len,
        _ => return Err("its head does not parse".to_string()),
    };
    let method = parsed.method.unwrap_or_default();
    if method.eq_ignore_ascii_case("CONNECT") {
        return Err("CONNECT opens a tunnel, which a benchmark request cannot use".to_string());
    }
    let method = Method::from_bytes(method.as_bytes())
        .map_err(|_| format!("its method {method:?} is not an HTTP token"))?;
    let target = Target::parse(parsed.path.unwrap_or_default())?;
    let summary = FieldSummary::scan(parsed.headers);
    let body = body(&summary, &request[head_len..])?;

    let mut host = None;
    let mut headers = HeaderMap::new();
    for field in parsed.headers.iter() {
        let name = field.name.to_ascii_lowercase();
        if name == "host" {
            host.get_or_insert(field.value);
        } else if keeps(&name, field.value, summary.chunked) {
            headers.append(header_name(&name)?, header_value(&name, field.value)?);
        }
    }
    if summary.chunked {
        headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    }

    let authority = match (target.authority, host) {
        (Some(from_target), _) => from_target,
        (None, Some(host)) => Authority::from_maybe_shared(Bytes::copy_from_slice(host))
            .map_err(|_| format!("its Host {:?} is not host[:port]", lossy(host)))?,
        (None, None) => Authority::from_maybe_shared(Bytes::copy_from_slice(authority.as_bytes()))
            .map_err(|_| format!("the authority {authority:?} is not host[:port]"))?,
    };
    let uri = Uri::builder()
        .scheme(scheme.clone())
        .authority(authority)
        .path_and_query(target.path)
        .build()
        .map_err(|e| format!("its URI does not build: {e}"))?;
    Ok(FieldRequest {
        method,
        uri,
        headers,
        body,
    })
}

/// A request target, as HTTP/2 needs it.
struct Target {
    path: PathAndQuery,
    /// The authority of an absolute-form target (`http://host/path`).
    authority: Option<Authority>,
}

impl Target {
    fn parse(target: &str) -> Result<Target, String> {
        let bad = || {
            format!("its target {target:?} is not a path starting with '/', '*' or an absolute URI")
        };
        if target.starts_with('/') || target == "*" {
            let path = PathAndQuery::from_maybe_shared(Bytes::copy_from_slice(target.as_bytes()))
                .map_err(|_| bad())?;
            return Ok(Target {
                path,
                authority: None,
            });
        }
        let uri: Uri = target.parse().map_err(|_| bad())?;
        let parts = uri.into_parts();
        match (parts.scheme, parts.authority, parts.path_and_query) {
            (Some(_), Some(authority), path) => Ok(Target {
                path: path.unwrap_or_else(|| PathAndQuery::from_static("/")),
                authority: Some(authority),
            }),
            _ => Err(bad()),
        }
    }
}

/// Whether a field (name lowercase) goes into the HTTP/2 request.
fn keeps(name: &str, value: &[u8], chunked: bool) -> bool {
    if CONNECTION_FIELDS.contains(&name) {
        return false;
    }
    match name {
        "te" => value.trim_ascii().eq_ignore_ascii_case(b"trailers"),
        // The decoded body gets its own length.
        "content-length" => !chunked,
        _ => true,
    }
}

fn header_name(name: &str) -> Result<HeaderName, String> {
    HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("its field name {name:?} is not an HTTP token"))
}

fn header_value(name: &str, value: &[u8]) -> Result<HeaderValue, String> {
    let value = if name == "te" { b"trailers" } else { value };
    HeaderValue::from_bytes(value).map_err(|_| {
        format!(
            "its field {name:?} has a value with control characters: {:?}",
            lossy(value)
        )
    })
}

/// The request's body by its HTTP/1.1 framing (splitting checked it):
/// chunked and decoded, else Content-Length bytes, else none.
fn body(summary: &FieldSummary, after_head: &[u8]) -> Result<Bytes, String> {
    let body = if summary.transfer_encoding {
        let mut decoded = Vec::new();
        ChunkedDecoder::new()
            .decode(after_head, Some(&mut decoded))
            .map_err(|e| format!("its chunked body is malformed: {e}"))?;
        decoded
    } else {
        let length = summary
            .content_length()
            .ok()
            .flatten()
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(0)
            .min(after_head.len());
        after_head[..length].to_vec()
    };
    if body.len() > MAX_BODY {
        return Err(format!(
            "its body of {} bytes is larger than the {MAX_BODY} bytes one request may carry",
            body.len()
        ));
    }
    Ok(Bytes::from(body))
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::h1::request::format;

    fn names(request: &FieldRequest) -> Vec<(&str, &[u8])> {
        request
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_bytes()))
            .collect()
    }

    #[test]
    fn wrk_format_requests_convert_one_each() {
        let mut bytes = format("GET", "/a?x=1", &[], None, "example.test:8080");
        bytes.extend(format(
            "POST",
            "/submit",
            &[
                ("Content-Type".to_string(), "text/plain".to_string()),
                ("X-Id".to_string(), "7".to_string()),
            ],
            Some(b"hello"),
            "example.test:8080",
        ));
        bytes.extend(format("HEAD", "/h", &[], None, "example.test:8080"));
        let requests =
            FieldRequest::from_http1(&bytes, "http", "ignored", Protocol::Http2).unwrap();
        assert_eq!(requests.len(), 3);

        let get = &requests[0];
        assert_eq!(
            (get.method(), get.path(), get.authority()),
            ("GET", "/a?x=1", "example.test:8080")
        );
        assert!(get.headers().is_empty(), "Host became :authority");
        assert!(get.body().is_empty() && !get.is_head());

        let post = &requests[1];
        assert_eq!((post.method(), post.path()), ("POST", "/submit"));
        assert_eq!(
            names(post),
            [
                ("content-type", &b"text/plain"[..]),
                ("x-id", b"7"),
                ("content-length", b"5"),
            ]
        );
        assert_eq!(&post.body()[..], b"hello");
        assert!(requests[2].is_head());
        assert_eq!(post.scheme(), "http");
    }

    #[test]
    fn without_host_the_given_authority_is_used() {
        let requests = FieldRequest::from_http1(
            b"GET / HTTP/1.1\r\n\r\n",
            "https",
            "h.test:443",
            Protocol::Http2,
        )
        .unwrap();
        assert_eq!(requests[0].authority(), "h.test:443");
        assert_eq!(requests[0].scheme(), "https");
    }

    #[test]
    fn connection_fields_are_dropped_and_names_lowercased() {
        let bytes = b"GET /x HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, X-Hop\r\n\
                      Keep-Alive: timeout=5\r\nProxy-Connection: close\r\nUpgrade: h2c\r\n\
                      TE: gzip\r\nX-Custom: A B\r\nAccept: */*\r\n\r\n";
        let requests = FieldRequest::from_http1(bytes, "http", "other", Protocol::Http2).unwrap();
        assert_eq!(requests[0].authority(), "h");
        assert_eq!(
            names(&requests[0]),
            [("x-custom", &b"A B"[..]), ("accept", b"*/*")]
        );
        let trailers = b"GET / HTTP/1.1\r\nTE:  Trailers \r\n\r\n";
        let requests = FieldRequest::from_http1(trailers, "http", "h", Protocol::Http2).unwrap();
        assert_eq!(names(&requests[0]), [("te", &b"trailers"[..])]);
    }

    #[test]
    fn a_chunked_body_is_decoded_and_given_a_length() {
        let bytes = b"POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\
                      Content-Length: 99\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n\
                      GET /next HTTP/1.1\r\n\r\n";
        let requests = FieldRequest::from_http1(bytes, "http", "h", Protocol::Http2).unwrap();
        assert_eq!(requests.len(), 2);
        assert_eq!(&requests[0].body()[..], b"abcdefg");
        assert_eq!(names(&requests[0]), [("content-length", &b"7"[..])]);
        assert_eq!(requests[1].path(), "/next");
    }

    #[test]
    fn an_absolute_target_gives_its_authority() {
        let bytes = b"OPTIONS http://a.test:81/p?q HTTP/1.1\r\nHost: b.test\r\n\r\n";
        let requests = FieldRequest::from_http1(bytes, "http", "c", Protocol::Http2).unwrap();
        assert_eq!(
            (requests[0].authority(), requests[0].path()),
            ("a.test:81", "/p?q")
        );
        let star =
            FieldRequest::from_http1(b"OPTIONS * HTTP/1.1\r\n\r\n", "http", "c", Protocol::Http2)
                .unwrap();
        assert_eq!(star[0].path(), "*");
    }

    #[test]
    fn what_cannot_be_http2_is_named() {
        let error = |bytes: &[u8]| {
            FieldRequest::from_http1(bytes, "http", "h", Protocol::Http2)
                .unwrap_err()
                .to_string()
        };
        let connect = error(b"GET / HTTP/1.1\r\n\r\nCONNECT h:443 HTTP/1.1\r\n\r\n");
        assert!(
            connect.starts_with("request 2 cannot be sent over HTTP/2: CONNECT"),
            "{connect}"
        );
        let host = error(b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n");
        assert!(host.contains("Host \"a b\" is not host[:port]"), "{host}");
        let target = error(b"GET x HTTP/1.1\r\n\r\n");
        assert!(target.contains("target \"x\""), "{target}");
        let framing = error(b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\na");
        assert_eq!(
            framing,
            "request 1 is incomplete: expected 2 more body bytes"
        );
        let scheme =
            FieldRequest::from_http1(b"GET / HTTP/1.1\r\n\r\n", "ftp:", "h", Protocol::Http2)
                .unwrap_err();
        assert!(scheme.to_string().contains("scheme"), "{scheme}");
        assert!(!error(b"").contains('\n'));
    }
}
