//! Responses: what the server sends for one request, and the exact bytes.
//!
//! [`Reply`] is the behaviour chosen for a request: a valid response,
//! prebuilt or composed, a 400, or a fault (close mid-head, garbage,
//! trickled bytes, RST: see `fault`) in place of the response a healthy
//! server would send. The connection loop matches on it rather than on a
//! status code.
//!
//! Bytes come from an [`Encoder`] that appends the response to a buffer a
//! bounded amount at a time, so a body of any length streams through the
//! connection's reusable output buffer. The same encoder builds the
//! prebuilt [`Canned`] responses, so both paths produce identical bytes.
//! Heads are fixed (no `Date`, no `Server`) so tests can assert every byte.
//!
//! An event stream (`--sse`, `--llm`) is written by the connection from its
//! head ([`write_events_head`]) and its feed (`sse`), each event when it
//! is due; the encoder writes a whole `--sse` stream only for the canned
//! forms' sake and the tests'. An `--llm` answer's JSON follows its own
//! head ([`write_json_head`]).

use std::io::Write;

use super::config::Sse;
use super::fault::{After, Fault};
use super::sse;
use super::token::{Token, COOKIE_NAME};

/// The byte every generated body is made of.
pub(crate) const FILL: u8 = b'x';
/// The trailer field the `/chunked` route sends (and announces).
pub(crate) const TRAILER_NAME: &str = "X-Body-Bytes";
/// Largest data chunk of a chunked body.
const MAX_CHUNK: u64 = 16 * 1024;
/// Largest default response worth prebuilding; bigger ones are streamed.
const CANNED_MAX: u64 = 64 * 1024;

/// The interim response to `Expect: 100-continue`.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
/// The answer to a request that cannot be parsed; the connection closes.
pub(crate) const BAD_REQUEST: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
    Content-Type: text/plain\r\nContent-Length: 12\r\nConnection: close\r\n\r\nbad request\n";
/// The body of [`BAD_REQUEST`], which HTTP/2 sends in a DATA frame.
pub(crate) const BAD_REQUEST_BODY: &[u8] = b"bad request\n";
/// The answer to a request head longer than `request::MAX_HEAD`, naming
/// the limit; the connection closes.
pub(crate) const HEAD_TOO_LARGE: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
    Content-Type: text/plain\r\nContent-Length: 110\r\nConnection: close\r\n\r\n\
    the request head is over 64 KiB (65536 bytes), the most this server reads: \
    shorten its query or header fields\n";
/// The body of the 401 `/private` answers without a valid token.
pub(crate) const DENIED_BODY: &[u8] = b"unauthorized\n";
/// The challenge that 401 carries: a 401 must name a scheme (RFC 9110
/// section 15.5.2), and tokens go back as bearer tokens.
pub(crate) const DENIED_CHALLENGE: &str = "Bearer";

/// What the server does for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The default response, prebuilt at start (HTTP/1.1 only).
    Canned { head_only: bool, close: bool },
    /// A response composed for this request.
    Send(Response),
    /// [`BAD_REQUEST`], then close: the request made no sense.
    BadRequest,
    /// [`HEAD_TOO_LARGE`], then close: the head went past the limit.
    HeadTooLarge,
    /// A fault instead of the response `base` (the one a healthy server
    /// would have sent, which some faults cut short or trickle).
    Fault { fault: Fault, base: Response },
}

impl Reply {
    pub(crate) fn status(&self) -> u16 {
        match self {
            Reply::Canned { .. } => 200,
            Reply::Send(response) => response.status,
            Reply::BadRequest | Reply::HeadTooLarge => 400,
            Reply::Fault { base, .. } => base.status,
        }
    }

    /// Whether the connection closes once this reply is written.
    pub(crate) fn closes(&self) -> bool {
        match self {
            Reply::Canned { close, .. } => *close,
            Reply::Send(response) => response.closes(),
            Reply::BadRequest | Reply::HeadTooLarge => true,
            Reply::Fault { fault, base } => fault.after(base.closes()) != After::KeepOpen,
        }
    }
}

/// A well-formed response, described rather than spelled out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Response {
    pub status: u16,
    pub body: Body,
    pub connection: Connection,
    /// A HEAD request: every header as for GET, no body bytes.
    pub head_only: bool,
}

/// How the body is framed, and how long it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Body {
    /// No body and no length header (204, 304).
    Empty,
    Length(u64),
    Chunked {
        len: u64,
        trailer: bool,
    },
    /// Delimited by closing the connection: no length header at all.
    UntilClose(u64),
    /// A stream of server-sent events, each written when it is due: one
    /// chunk per event, or on HTTP/1.0 (no chunks) delimited by closing
    /// the connection.
    Events {
        sse: Sse,
        chunked: bool,
    },
    /// `/login`'s JSON body holding this token, with a Content-Length, and
    /// the same token in a cookie.
    Token(Token),
    /// [`DENIED_BODY`] with a Content-Length and the challenge
    /// ([`DENIED_CHALLENGE`]) of a 401.
    Denied,
}

impl Body {
    /// Whether the body ends only when the connection does.
    pub(crate) fn until_close(&self) -> bool {
        matches!(
            self,
            Body::UntilClose(_) | Body::Events { chunked: false, .. }
        )
    }

    /// Appends the whole body of a route that answers with set text
    /// rather than generated bytes (`/login`, `/private`'s 401); nothing
    /// for the others.
    pub(crate) fn write_text(&self, out: &mut Vec<u8>) {
        match self {
            Body::Token(token) => token.write_json(out),
            Body::Denied => out.extend_from_slice(DENIED_BODY),
            _ => {}
        }
    }

    /// Length of the body's set text (see [`Body::write_text`]).
    pub(crate) fn text_len(&self) -> Option<u64> {
        match self {
            Body::Token(token) => Some(token.json_len()),
            Body::Denied => Some(DENIED_BODY.len() as u64),
            _ => None,
        }
    }
}

/// What the `Connection` header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Connection {
    /// Nothing: HTTP/1.1 connections persist by default.
    Omit,
    /// `keep-alive`, which an HTTP/1.0 client needs to hear.
    KeepAlive,
    Close,
}

/// The default response in its four HTTP/1.1 forms, built once at start.
#[derive(Debug)]
pub(crate) struct Canned {
    /// Indexed by [`Canned::slot`].
    forms: [Box<[u8]>; 4],
}

impl Canned {
    /// Prebuilds `body` as the default 200, unless it is too big to be
    /// worth holding (then every response is streamed instead).
    pub(crate) fn build(body: Body) -> Option<Canned> {
        let len = match body {
            Body::Length(n) | Body::Chunked { len: n, .. } => n,
            // An event stream takes its time; it cannot be written at once.
            // Set text is not the default response.
            Body::Empty
            | Body::UntilClose(_)
            | Body::Events { .. }
            | Body::Token(_)
            | Body::Denied => return None,
        };
        if len > CANNED_MAX {
            return None;
        }
        let form = |slot: usize| {
            let head_only = slot & 1 != 0;
            let connection = [Connection::Omit, Connection::Close][slot >> 1];
            let response = Response {
                status: 200,
                body,
                connection,
                head_only,
            };
            response.to_bytes().into_boxed_slice()
        };
        Some(Canned {
            forms: [form(0), form(1), form(2), form(3)],
        })
    }

    pub(crate) fn get(&self, head_only: bool, close: bool) -> &[u8] {
        &self.forms[Canned::slot(head_only, close)]
    }

    fn slot(head_only: bool, close: bool) -> usize {
        usize::from(head_only) | usize::from(close) << 1
    }
}

impl Response {
    /// The whole response, for canned forms and tests.
    pub(crate) fn to_bytes(self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut encoder = Encoder::new(self);
        while !encoder.fill(&mut out, usize::MAX) {}
        out
    }

    /// Whether the connection closes after it.
    pub(crate) fn closes(&self) -> bool {
        self.connection == Connection::Close
    }

    /// Length of its head in bytes.
    pub(crate) fn head_len(&self) -> u64 {
        let mut head = Vec::with_capacity(128);
        self.write_head(&mut head);
        head.len() as u64
    }

    /// Appends the head (status line, fields and the empty line).
    pub(crate) fn write_head(&self, out: &mut Vec<u8>) {
        let content_type = match self.body {
            Body::Events { chunked, .. } => {
                return write_events_head(out, self.status, chunked, self.connection);
            }
            Body::Token(_) => "application/json",
            _ => "text/plain",
        };
        write_status(out, self.status, content_type);
        match self.body {
            Body::Length(n) => {
                let _ = write!(out, "Content-Length: {n}\r\n");
            }
            Body::Token(token) => {
                let (text, n) = (token.text(), token.json_len());
                let _ = write!(
                    out,
                    "Set-Cookie: {COOKIE_NAME}={}; Path=/\r\nContent-Length: {n}\r\n",
                    text.as_str()
                );
            }
            Body::Denied => {
                let n = DENIED_BODY.len();
                let _ = write!(
                    out,
                    "WWW-Authenticate: {DENIED_CHALLENGE}\r\nContent-Length: {n}\r\n"
                );
            }
            Body::Chunked { trailer, .. } => {
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
                if trailer {
                    let _ = write!(out, "Trailer: {TRAILER_NAME}\r\n");
                }
            }
            Body::Empty | Body::UntilClose(_) | Body::Events { .. } => {}
        }
        end_head(out, self.connection);
    }
}

/// Appends the head of an event stream (`--sse`, `--llm`): its events
/// follow in chunks, or when not `chunked` (HTTP/1.0) until the
/// connection's end.
pub(crate) fn write_events_head(
    out: &mut Vec<u8>,
    status: u16,
    chunked: bool,
    connection: Connection,
) {
    // The cache header keeps a proxy from holding the stream back.
    write_status(out, status, "text/event-stream\r\nCache-Control: no-cache");
    if chunked {
        out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
    }
    end_head(out, connection);
}

/// Appends the head of a JSON body of `len` bytes (an `--llm` answer),
/// which the caller writes after it; `allow` names the methods a 405
/// allows.
pub(crate) fn write_json_head(
    out: &mut Vec<u8>,
    status: u16,
    len: usize,
    allow: Option<&str>,
    connection: Connection,
) {
    write_status(out, status, "application/json");
    let _ = write!(out, "Content-Length: {len}\r\n");
    if let Some(methods) = allow {
        let _ = write!(out, "Allow: {methods}\r\n");
    }
    end_head(out, connection);
}

/// Appends the status line and the content type.
fn write_status(out: &mut Vec<u8>, status: u16, content_type: &str) {
    let reason = reason(status);
    // Writing to a Vec cannot fail.
    let _ = write!(
        out,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
    );
}

/// Appends what the `Connection` header says, and the empty line.
fn end_head(out: &mut Vec<u8>, connection: Connection) {
    out.extend_from_slice(match connection {
        Connection::Omit => b"",
        Connection::KeepAlive => b"Connection: keep-alive\r\n",
        Connection::Close => b"Connection: close\r\n",
    });
    out.extend_from_slice(b"\r\n");
}

/// Writes one response into a buffer, a bounded amount per call.
#[derive(Debug)]
pub(crate) struct Encoder {
    response: Response,
    phase: Phase,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Head,
    /// Raw body bytes still to write (Content-Length or until-close).
    Plain(u64),
    /// Chunked body bytes still to write, before the last chunk.
    Chunks(u64),
    /// The number of the next event to write.
    Events(u64),
    /// Set text ([`Body::write_text`]), written whole.
    Text,
    Done,
}

impl Encoder {
    pub(crate) fn new(response: Response) -> Encoder {
        Encoder {
            response,
            phase: Phase::Head,
        }
    }

    /// Appends to `out` until it holds at least `limit` bytes or the
    /// response is complete; returns whether it is complete. The head and
    /// each chunk go in whole, so `out` may pass `limit` by one chunk.
    pub(crate) fn fill(&mut self, out: &mut Vec<u8>, limit: usize) -> bool {
        while self.phase != Phase::Done && out.len() < limit {
            self.phase = self.step(out, limit);
        }
        self.phase == Phase::Done
    }

    fn step(&self, out: &mut Vec<u8>, limit: usize) -> Phase {
        match self.phase {
            Phase::Head => {
                self.response.write_head(out);
                self.body_phase()
            }
            Phase::Plain(left) => {
                let room = (limit - out.len()) as u64;
                let n = left.min(room);
                fill(out, n);
                next_plain(left - n)
            }
            Phase::Chunks(left) => self.chunk(out, left),
            Phase::Events(i) => self.event(out, i),
            Phase::Text => {
                self.response.body.write_text(out);
                Phase::Done
            }
            Phase::Done => Phase::Done,
        }
    }

    fn body_phase(&self) -> Phase {
        if self.response.head_only {
            return Phase::Done;
        }
        match self.response.body {
            Body::Empty => Phase::Done,
            Body::Length(n) | Body::UntilClose(n) => next_plain(n),
            Body::Chunked { len, .. } => Phase::Chunks(len),
            Body::Events { .. } => Phase::Events(1),
            Body::Token(_) | Body::Denied => Phase::Text,
        }
    }

    /// Writes event `i`, in its chunk if the stream is chunked, and after
    /// the last event the end of the body (as the connection writes them
    /// when each is due).
    fn event(&self, out: &mut Vec<u8>, i: u64) -> Phase {
        let Body::Events { sse, chunked } = self.response.body else {
            return Phase::Done;
        };
        if i <= sse.events {
            sse::frame(out, &sse, i, chunked);
        }
        if i < sse.events {
            return Phase::Events(i + 1);
        }
        sse::end(out, chunked);
        Phase::Done
    }

    /// Writes the next chunk, or the last chunk and trailer when none is left.
    fn chunk(&self, out: &mut Vec<u8>, left: u64) -> Phase {
        let Body::Chunked { len, trailer } = self.response.body else {
            return Phase::Done;
        };
        if left == 0 {
            out.extend_from_slice(b"0\r\n");
            if trailer {
                let _ = write!(out, "{TRAILER_NAME}: {len}\r\n");
            }
            out.extend_from_slice(b"\r\n");
            return Phase::Done;
        }
        let size = left.min(chunk_size(len));
        let _ = write!(out, "{size:x}\r\n");
        fill(out, size);
        out.extend_from_slice(b"\r\n");
        Phase::Chunks(left - size)
    }
}

fn next_plain(left: u64) -> Phase {
    match left {
        0 => Phase::Done,
        n => Phase::Plain(n),
    }
}

/// Chunks of a third of the body (rounded up), so that any body of three
/// bytes or more arrives in at least three chunks, but none over
/// [`MAX_CHUNK`] so that large bodies exercise many chunk boundaries.
pub(crate) fn chunk_size(len: u64) -> u64 {
    len.div_ceil(3).clamp(1, MAX_CHUNK)
}

/// Appends `n` body bytes (at most the buffer's limit, so `n` fits memory).
fn fill(out: &mut Vec<u8>, n: u64) {
    out.resize(out.len() + n as usize, FILL);
}

/// Reason phrases for the common codes; others get their class's name.
fn reason(status: u16) -> &'static str {
    let class = match status / 100 {
        2 => "Success",
        3 => "Redirection",
        4 => "Client Error",
        5 => "Server Error",
        _ => "Unknown",
    };
    known_reason(status).unwrap_or(class)
}

fn known_reason(status: u16) -> Option<&'static str> {
    Some(match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, body: Body) -> Response {
        Response {
            status,
            body,
            connection: Connection::Omit,
            head_only: false,
        }
    }

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn length_framed_bytes() {
        let bytes = response(200, Body::Length(3)).to_bytes();
        let want = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nxxx";
        assert_eq!(text(bytes), want);
    }

    #[test]
    fn chunked_bytes_with_trailer() {
        let body = Body::Chunked {
            len: 7,
            trailer: true,
        };
        let want = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\
            Transfer-Encoding: chunked\r\nTrailer: X-Body-Bytes\r\n\r\n\
            3\r\nxxx\r\n3\r\nxxx\r\n1\r\nx\r\n0\r\nX-Body-Bytes: 7\r\n\r\n";
        assert_eq!(text(response(200, body).to_bytes()), want);
    }

    #[test]
    fn empty_and_close_delimited_bodies_have_no_length() {
        let mut no_content = response(204, Body::Empty);
        no_content.connection = Connection::KeepAlive;
        let want = "HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\n\
            Connection: keep-alive\r\n\r\n";
        assert_eq!(text(no_content.to_bytes()), want);
        let mut eof = response(599, Body::UntilClose(2));
        eof.connection = Connection::Close;
        let want = "HTTP/1.1 599 Server Error\r\nContent-Type: text/plain\r\n\
            Connection: close\r\n\r\nxx";
        assert_eq!(text(eof.to_bytes()), want);
    }

    #[test]
    fn head_only_stops_after_the_head() {
        let mut head = response(
            200,
            Body::Chunked {
                len: 9,
                trailer: false,
            },
        );
        head.head_only = true;
        let want = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\
            Transfer-Encoding: chunked\r\n\r\n";
        assert_eq!(text(head.to_bytes()), want);
    }

    fn events(chunked: bool) -> Response {
        let sse = Sse {
            events: 2,
            first: std::time::Duration::ZERO,
            gap: std::time::Duration::from_millis(50),
        };
        response(200, Body::Events { sse, chunked })
    }

    #[test]
    fn an_event_stream_is_one_chunk_per_event() {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
            Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
        let first = "15\r\nid: 1\ndata: event 1\n\n\r\n";
        let last = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
        let response = events(true);
        let mut alone = Vec::new();
        response.write_head(&mut alone);
        assert_eq!(text(alone), head);
        assert_eq!(text(response.to_bytes()), [head, first, last].concat());
    }

    #[test]
    fn json_heads_announce_their_length() {
        let mut out = Vec::new();
        write_json_head(&mut out, 405, 12, Some("POST"), Connection::Omit);
        let want = "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\n\
            Content-Length: 12\r\nAllow: POST\r\n\r\n";
        assert_eq!(text(out), want);
        let mut out = Vec::new();
        write_json_head(&mut out, 200, 0, None, Connection::KeepAlive);
        let want = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
            Content-Length: 0\r\nConnection: keep-alive\r\n\r\n";
        assert_eq!(text(out), want);
    }

    #[test]
    fn an_unchunked_event_stream_ends_with_the_connection() {
        let mut old = events(false);
        old.connection = Connection::Close;
        let want = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
            Cache-Control: no-cache\r\nConnection: close\r\n\r\n\
            id: 1\ndata: event 1\n\ndata: [DONE]\n\n";
        assert_eq!(text(old.to_bytes()), want);
        let mut head = events(true);
        head.head_only = true;
        let out = head.to_bytes();
        assert!(text(out).ends_with("Transfer-Encoding: chunked\r\n\r\n"));
    }

    #[test]
    fn login_and_denied_bytes() {
        let token = crate::token::Tokens::default().mint();
        let t = token.to_string();
        let json = format!("{{\"token\":\"{t}\"}}");
        let want = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
             Set-Cookie: metron_token={t}; Path=/\r\nContent-Length: {}\r\n\r\n{json}",
            json.len()
        );
        assert_eq!(text(response(200, Body::Token(token)).to_bytes()), want);
        let want = "HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\n\
            WWW-Authenticate: Bearer\r\nContent-Length: 13\r\n\r\nunauthorized\n";
        assert_eq!(text(response(401, Body::Denied).to_bytes()), want);
        let mut head = response(401, Body::Denied);
        head.head_only = true;
        assert!(text(head.to_bytes()).ends_with("Content-Length: 13\r\n\r\n"));
    }

    #[test]
    fn chunks_are_at_least_three_and_bounded() {
        assert_eq!(chunk_size(1), 1);
        assert_eq!(chunk_size(3), 1);
        assert_eq!(chunk_size(10), 4);
        assert_eq!(chunk_size(1 << 30), MAX_CHUNK);
        let body = Body::Chunked {
            len: 100_000,
            trailer: false,
        };
        let bytes = text(response(200, body).to_bytes());
        let (_, chunks) = bytes.split_once("\r\n\r\n").unwrap();
        assert_eq!(chunks.matches(FILL as char).count(), 100_000);
        assert_eq!(chunks.matches("4000\r\n").count(), 6);
    }

    #[test]
    fn encoding_in_bounded_steps_gives_the_same_bytes() {
        let body = Body::Length(1_000_000);
        let whole = response(200, body).to_bytes();
        let mut encoder = Encoder::new(response(200, body));
        let (mut sent, mut out) = (Vec::new(), Vec::new());
        while !encoder.fill(&mut out, 4096) {
            assert!(out.len() <= 4096);
            sent.append(&mut out);
        }
        sent.append(&mut out);
        assert_eq!(sent, whole);
    }

    #[test]
    fn canned_forms_match_composed_ones() {
        let body = Body::Length(5);
        let canned = Canned::build(body).unwrap();
        for (head_only, close) in [(false, false), (true, false), (false, true), (true, true)] {
            let connection = if close {
                Connection::Close
            } else {
                Connection::Omit
            };
            let composed = Response {
                status: 200,
                body,
                connection,
                head_only,
            };
            assert_eq!(canned.get(head_only, close), composed.to_bytes());
        }
        assert!(Canned::build(Body::Length(CANNED_MAX + 1)).is_none());
    }

    #[test]
    fn bad_request_bytes_are_consistent() {
        let text = std::str::from_utf8(BAD_REQUEST).unwrap();
        let (_, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(text.contains(&format!("Content-Length: {}\r\n", body.len())));
        assert_eq!(body.as_bytes(), BAD_REQUEST_BODY);
        let text = std::str::from_utf8(HEAD_TOO_LARGE).unwrap();
        let (_, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(text.contains(&format!("Content-Length: {}\r\n", body.len())));
        let limit = crate::request::MAX_HEAD;
        assert!(body.contains(&format!("({limit} bytes)")), "{body}");
        assert_eq!(body.lines().count(), 1, "{body}");
    }
}
