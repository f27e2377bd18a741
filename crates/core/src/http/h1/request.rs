//! Requests: their parts (method, path, headers, body), the HTTP/1.1 bytes
//! encoded from them, and splitting a user-supplied buffer of pipelined
//! requests into whole requests.
//!
//! A request is built as [`Parts`] and encoded once, before the run, into a
//! [`Batch`] that is then sent many times; the parts are what another
//! encoding (HTTP/2 frames) would start from. A script's `request()`
//! returns raw bytes instead (wrk's API): those are split once per batch
//! by [`heads_into`], which allocates nothing. Splitting tells a
//! connection how many responses a buffer asks for and which of them
//! answer HEAD (and so carry no body), and it rejects a buffer that would
//! leave the server waiting for bytes that never come, which would
//! otherwise show up as a stalled run. Body framing follows the same rules
//! as responses (shared field helpers).

use super::chunked::ChunkedDecoder;
use super::response::FieldSummary;
pub use crate::http::session::RequestMeta;

/// Generous, since these requests come from the user, not from a peer.
pub const MAX_REQUEST_HEADERS: usize = 100;

/// An HTTP token (RFC 9110 §5.6.2): what methods and header names are.
/// Says what is wrong otherwise.
pub fn check_token(s: &str) -> Result<(), String> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if s.is_empty() {
        return Err("empty".to_string());
    }
    match s.chars().find(|&c| !ok(c)) {
        Some(c) => Err(format!("{s:?} has {c:?}, which HTTP does not allow there")),
        None => Ok(()),
    }
}

/// A header value as it may go on the wire (RFC 9110 §5.5): no control
/// characters but tabs. A line break would end the header early and start
/// another one of the value's choosing.
pub fn check_header_value(v: &str) -> Result<(), String> {
    match v.chars().find(|&c| c.is_ascii_control() && c != '\t') {
        Some(c) => Err(format!(
            "its value has {c:?}: no line breaks or other control characters"
        )),
        None => Ok(()),
    }
}

/// Why a buffer is not a sequence of whole requests. `index` is 1-based.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("no request bytes: expected at least one HTTP/1.x request")]
    Empty,
    #[error("request {index} is not an HTTP request: {reason}")]
    NotHttp {
        index: usize,
        reason: httparse::Error,
    },
    #[error("request {index} is incomplete: expected the head to end with an empty line")]
    IncompleteHead { index: usize },
    #[error("request {index} is incomplete: expected {missing} more body bytes")]
    IncompleteBody { index: usize, missing: u64 },
    #[error(
        "request {index} is incomplete: expected the chunked body to end with a zero-size chunk"
    )]
    IncompleteChunked { index: usize },
    #[error(
        "request {index} has an invalid Content-Length: expected one non-negative decimal integer"
    )]
    BadContentLength { index: usize },
    #[error("request {index} has a malformed chunked body: expected hex size, CRLF, data, CRLF")]
    BadChunk { index: usize },
    #[error("request {index} has a Transfer-Encoding that does not end in chunked, so its length is unknown")]
    UnframedBody { index: usize },
}

/// One request as its parts, before any encoding.
#[derive(Clone, Copy, Debug)]
pub struct Parts<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub headers: &'a [(String, String)],
    pub body: Option<&'a [u8]>,
}

impl Parts<'_> {
    /// Its HTTP/1.1 bytes: `METHOD PATH HTTP/1.1`, a `Host` field unless
    /// `headers` has one, the given fields in order, a `Content-Length`
    /// field when a body is given and `headers` has none, an empty line,
    /// then the body.
    ///
    /// `Host` goes first because RFC 9110 §7.2 asks user agents to send it
    /// as the first field. Names and values are written as given: they come
    /// from the user's own configuration, not from a peer.
    pub fn http1(&self, host: &str) -> Vec<u8> {
        let Parts {
            method,
            path,
            headers,
            body,
        } = *self;
        let has = |wanted: &str| {
            headers
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case(wanted))
        };
        let body_len = body.map(<[u8]>::len).unwrap_or_default();
        let mut out = Vec::with_capacity(64 + path.len() + host.len() + body_len);
        push_all(&mut out, &[method, " ", path, " HTTP/1.1\r\n"]);
        if !has("host") {
            push_all(&mut out, &["Host: ", host, "\r\n"]);
        }
        for (name, value) in headers {
            push_all(&mut out, &[name, ": ", value, "\r\n"]);
        }
        if body.is_some() && !has("content-length") {
            push_all(
                &mut out,
                &["Content-Length: ", &body_len.to_string(), "\r\n"],
            );
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body.unwrap_or_default());
        out
    }
}

/// The HTTP/1.1 bytes of one request given by its parts (see
/// [`Parts::http1`]): what `wrk.format` and the requests file build.
pub fn format(
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
    host: &str,
) -> Vec<u8> {
    Parts {
        method,
        path,
        headers,
        body,
    }
    .http1(host)
}

/// Requests encoded once and written as one buffer many times (pipelined
/// when there are several), with which of them are HEAD requests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    bytes: Box<[u8]>,
    heads: Box<[bool]>,
}

impl Batch {
    /// One request, encoded from its parts. Its framing is checked once,
    /// here: `headers` may carry a Content-Length or Transfer-Encoding
    /// that disagrees with the body.
    pub fn encode(parts: &Parts, host: &str) -> Result<Batch, RequestError> {
        Batch::parse(parts.http1(host))
    }

    /// Requests given as bytes (a script's static request), split once.
    pub fn parse(bytes: Vec<u8>) -> Result<Batch, RequestError> {
        let mut heads = Vec::new();
        heads_into(&bytes, &mut heads)?;
        Ok(Batch {
            bytes: bytes.into_boxed_slice(),
            heads: heads.into_boxed_slice(),
        })
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether each request of the batch, in order, is a HEAD request.
    pub fn heads(&self) -> &[bool] {
        &self.heads
    }
}

fn push_all(out: &mut Vec<u8>, parts: &[&str]) {
    for part in parts {
        out.extend_from_slice(part.as_bytes());
    }
}

/// Splits `bytes` into the whole HTTP/1.x requests it holds, in order.
///
/// Blank lines after the last request are folded into it: servers ignore
/// them, and a script that ends its buffer with an extra CRLF should not
/// fail for it. Blank lines before a request count as part of that request.
pub fn split_requests(bytes: &[u8]) -> Result<Vec<RequestMeta>, RequestError> {
    let mut requests = Vec::new();
    split(bytes, |request| requests.push(request))?;
    Ok(requests)
}

/// [`split_requests`] for the hot path: sets `heads` (cleared first, its
/// memory kept) to whether each request of `bytes` is a HEAD request, and
/// allocates nothing once `heads` has grown to the batch's size.
pub fn heads_into(bytes: &[u8], heads: &mut Vec<bool>) -> Result<(), RequestError> {
    heads.clear();
    split(bytes, |request| heads.push(request.head))
}

/// [`split_requests`] into `metas` (cleared first, its memory kept).
pub fn metas_into(bytes: &[u8], metas: &mut Vec<RequestMeta>) -> Result<(), RequestError> {
    metas.clear();
    split(bytes, |request| metas.push(request))
}

/// Hands each whole request of `bytes` to `each`, in order; the last one
/// with any trailing blank lines folded in.
fn split(bytes: &[u8], mut each: impl FnMut(RequestMeta)) -> Result<(), RequestError> {
    if is_blank(bytes) {
        return Err(RequestError::Empty);
    }
    let mut at = 0;
    let mut index = 1;
    while at < bytes.len() {
        let mut request = measure(&bytes[at..], index)?;
        at += request.len;
        let rest = &bytes[at..];
        if !rest.is_empty() && is_blank(rest) {
            request.len += rest.len();
            at = bytes.len();
        }
        each(request);
        index += 1;
    }
    Ok(())
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| matches!(b, b'\r' | b'\n'))
}

/// Measures the request at the start of `bytes`.
fn measure(bytes: &[u8], index: usize) -> Result<RequestMeta, RequestError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_REQUEST_HEADERS];
    let mut request = httparse::Request::new(&mut fields);
    let head_len = match request.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Err(RequestError::IncompleteHead { index }),
        Err(reason) => return Err(RequestError::NotHttp { index, reason }),
    };
    let summary = FieldSummary::scan(request.headers);
    let body_len = body_len(&summary, &bytes[head_len..], index)?;
    Ok(RequestMeta {
        len: head_len + body_len,
        head: request.method == Some("HEAD"),
    })
}

/// Request framing (RFC 9112 §6.3): chunked, else Content-Length, else none.
fn body_len(summary: &FieldSummary, body: &[u8], index: usize) -> Result<usize, RequestError> {
    if summary.transfer_encoding {
        if !summary.chunked {
            return Err(RequestError::UnframedBody { index });
        }
        return chunked_len(body, index);
    }
    let length = summary
        .content_length()
        .map_err(|_| RequestError::BadContentLength { index })?
        .unwrap_or(0);
    match usize::try_from(length) {
        Ok(length) if length <= body.len() => Ok(length),
        _ => Err(RequestError::IncompleteBody {
            index,
            missing: length - body.len() as u64,
        }),
    }
}

fn chunked_len(body: &[u8], index: usize) -> Result<usize, RequestError> {
    let mut decoder = ChunkedDecoder::new();
    match decoder.decode(body, None) {
        Ok((len, true)) => Ok(len),
        Ok((_, false)) => Err(RequestError::IncompleteChunked { index }),
        Err(_) => Err(RequestError::BadChunk { index }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn parts<'a>(method: &'a str, headers: &'a [(String, String)]) -> Parts<'a> {
        Parts {
            method,
            path: "/x",
            headers,
            body: None,
        }
    }

    fn meta(len: usize, head: bool) -> RequestMeta {
        RequestMeta { len, head }
    }

    #[test]
    fn format_adds_host() {
        let bytes = format("GET", "/", &[], None, "localhost:8080");
        assert_eq!(bytes, b"GET / HTTP/1.1\r\nHost: localhost:8080\r\n\r\n");
    }

    #[test]
    fn format_adds_host_and_content_length_around_given_fields() {
        let headers = fields(&[("Content-Type", "text/plain"), ("X-Id", "7")]);
        let bytes = format("POST", "/submit?a=1", &headers, Some(b"hi"), "127.0.0.1");
        assert_eq!(
            bytes,
            b"POST /submit?a=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n\
              X-Id: 7\r\nContent-Length: 2\r\n\r\nhi"
        );
    }

    #[test]
    fn format_respects_given_host_and_content_length() {
        let headers = fields(&[("content-length", "2"), ("HOST", "other:81")]);
        let bytes = format("PUT", "/x", &headers, Some(b"ok"), "ignored");
        assert_eq!(
            bytes,
            b"PUT /x HTTP/1.1\r\ncontent-length: 2\r\nHOST: other:81\r\n\r\nok"
        );
    }

    #[test]
    fn format_with_empty_body_sends_zero_length() {
        let bytes = format("POST", "/", &[], Some(b""), "h");
        assert_eq!(
            bytes,
            b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
        );
    }

    #[test]
    fn a_batch_encodes_its_parts_once_and_knows_its_heads() {
        let headers = fields(&[("X-Id", "7")]);
        let batch = Batch::encode(&parts("HEAD", &headers), "h").unwrap();
        assert_eq!(batch.bytes(), format("HEAD", "/x", &headers, None, "h"));
        assert_eq!(batch.heads(), [true]);
        let framed = fields(&[("Content-Length", "5")]);
        assert_eq!(
            Batch::encode(&parts("GET", &framed), "h"),
            Err(RequestError::IncompleteBody {
                index: 1,
                missing: 5
            })
        );
    }

    #[test]
    fn heads_into_reuses_its_vector_and_agrees_with_splitting() {
        let bytes = b"HEAD / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n\r\n";
        let mut heads = Vec::with_capacity(4);
        heads.push(false);
        let at = heads.as_ptr();
        heads_into(bytes, &mut heads).unwrap();
        assert_eq!(heads, [true, false]);
        assert_eq!(heads.as_ptr(), at, "no new allocation");
        let split: Vec<bool> = split_requests(bytes)
            .unwrap()
            .iter()
            .map(|r| r.head)
            .collect();
        assert_eq!(heads, split);
        assert_eq!(heads_into(b"\r\n", &mut heads), Err(RequestError::Empty));
        let parsed = Batch::parse(bytes.to_vec()).unwrap();
        assert_eq!(parsed.heads(), [true, false]);
    }

    #[test]
    fn formatted_requests_split_back() {
        let mut bytes = format("POST", "/", &[], Some(b"abc"), "h");
        let first = bytes.len();
        bytes.extend(format("HEAD", "/", &[], None, "h"));
        let second = bytes.len() - first;
        assert_eq!(
            split_requests(&bytes),
            Ok(vec![meta(first, false), meta(second, true)])
        );
    }

    #[test]
    fn splits_three_pipelined_gets() {
        let bytes = b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n\
                      GET /bb HTTP/1.1\r\nHost: h\r\n\r\n\
                      GET /ccc HTTP/1.1\r\nHost: h\r\n\r\n";
        assert_eq!(
            split_requests(bytes),
            Ok(vec![meta(28, false), meta(29, false), meta(30, false)])
        );
    }

    #[test]
    fn splits_post_with_body_then_get() {
        let bytes =
            b"POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n";
        assert_eq!(
            split_requests(bytes),
            Ok(vec![meta(53, false), meta(18, false)])
        );
    }

    #[test]
    fn splits_chunked_request_body() {
        let bytes = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
                      HEAD / HTTP/1.1\r\n\r\n";
        assert_eq!(
            split_requests(bytes),
            Ok(vec![meta(60, false), meta(19, true)])
        );
    }

    #[test]
    fn detects_head_requests() {
        let bytes = b"HEAD / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\nHEAD /x HTTP/1.0\r\n\r\n";
        assert_eq!(
            split_requests(bytes),
            Ok(vec![meta(19, true), meta(18, false), meta(20, true)])
        );
    }

    #[test]
    fn folds_trailing_blank_lines_into_last_request() {
        let bytes = b"GET / HTTP/1.1\r\n\r\n\r\n\r\n";
        assert_eq!(split_requests(bytes), Ok(vec![meta(22, false)]));
    }

    #[test]
    fn rejects_empty_input() {
        assert_eq!(split_requests(b""), Err(RequestError::Empty));
        assert_eq!(split_requests(b"\r\n"), Err(RequestError::Empty));
        assert_eq!(
            RequestError::Empty.to_string(),
            "no request bytes: expected at least one HTTP/1.x request"
        );
    }

    #[test]
    fn rejects_incomplete_body() {
        let bytes = b"GET / HTTP/1.1\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc";
        let error = split_requests(bytes).unwrap_err();
        assert_eq!(
            error,
            RequestError::IncompleteBody {
                index: 2,
                missing: 7
            }
        );
        assert_eq!(
            error.to_string(),
            "request 2 is incomplete: expected 7 more body bytes"
        );
    }

    #[test]
    fn rejects_incomplete_head() {
        let error = split_requests(b"GET / HTTP/1.1\r\nHost: h\r\n").unwrap_err();
        assert_eq!(error, RequestError::IncompleteHead { index: 1 });
        assert_eq!(
            error.to_string(),
            "request 1 is incomplete: expected the head to end with an empty line"
        );
    }

    #[test]
    fn rejects_incomplete_chunked_body() {
        let bytes = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n";
        assert_eq!(
            split_requests(bytes),
            Err(RequestError::IncompleteChunked { index: 1 })
        );
    }

    #[test]
    fn rejects_non_http() {
        let error = split_requests(b"hello world\r\n\r\n").unwrap_err();
        assert!(
            matches!(error, RequestError::NotHttp { index: 1, .. }),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .starts_with("request 1 is not an HTTP request: "),
            "{error}"
        );
    }

    #[test]
    fn rejects_bad_framing() {
        let conflict = b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab";
        assert_eq!(
            split_requests(conflict),
            Err(RequestError::BadContentLength { index: 1 })
        );
        let unframed = b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nab";
        assert_eq!(
            split_requests(unframed),
            Err(RequestError::UnframedBody { index: 1 })
        );
        let bad_chunk = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n";
        assert_eq!(
            split_requests(bad_chunk),
            Err(RequestError::BadChunk { index: 1 })
        );
    }

    #[test]
    fn header_parts_are_checked_as_http_allows() {
        assert_eq!(check_token("X-Trace_1"), Ok(()));
        assert!(check_token("").unwrap_err().contains("empty"));
        assert!(check_token("X Y").unwrap_err().contains("' '"));
        assert!(check_token("X:Y").unwrap_err().contains("':'"));
        assert_eq!(check_header_value("Bearer a.b\tc é"), Ok(()));
        for bad in ["a\r\nEvil: 1", "a\rb", "a\nb", "a\u{7f}b", "a\0b"] {
            let why = check_header_value(bad).unwrap_err();
            assert!(why.contains("control characters"), "{bad:?}: {why}");
        }
    }
}
