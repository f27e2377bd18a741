//! The exact bytes each fault writes in place of a response.
//!
//! Fixed bytes (garbage, a malformed status line, a bad chunk size, a head
//! over 1 MiB) or a good response cut short or trickled, written through
//! the response [`Encoder`] a bounded amount at a time. Which fault and
//! when is `fault`'s; the response a healthy server would send is
//! `reply`'s; this module depends on both, and neither on it.

use std::sync::OnceLock;

use super::fault::Fault;
use super::reply::{Body, Encoder, Response};
use super::sse::stream_len;

/// What `garbage` writes: binary and text that no HTTP parser accepts.
pub(crate) const GARBAGE: &[u8] = b"\x00\x17\xfe\xff not HTTP \x01\x02\x03\r\n\r\n";
/// What `bad-status-line` writes: the code has letters O, not zeros.
pub(crate) const BAD_STATUS_LINE: &[u8] = b"HTTP/1.1 2OO OK\r\n\
    Content-Type: text/plain\r\nContent-Length: 0\r\n\r\n";
/// What `bad-chunk` writes: a chunk size of `zz`.
pub(crate) const BAD_CHUNK: &[u8] = b"HTTP/1.1 200 OK\r\n\
    Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n\
    zz\r\nxx\r\n0\r\n\r\n";
/// Padding fields of the `huge-head` response: so many, of so many bytes
/// each (`X-Pad: ` and CRLF included), 1 MiB in all. Few and long, so
/// that a client allowing a large head (`--max-head 2m`) can accept it.
pub(crate) const HUGE_FIELDS: usize = 16;
const HUGE_FIELD_LEN: usize = 64 * 1024;
/// Bytes of each padding field's value: the field less `X-Pad: ` and CRLF.
pub(crate) const HUGE_PAD_LEN: usize = HUGE_FIELD_LEN - 9;
/// The smallest body a body fault works on, so that it has a middle.
const MIN_FAULT_BODY: u64 = 2;

/// The `huge-head` response: a valid 200 with an empty body and a head
/// over 1 MiB, built once.
pub(crate) fn huge_head() -> &'static [u8] {
    static BYTES: OnceLock<Box<[u8]>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n".to_vec();
        for _ in 0..HUGE_FIELDS {
            out.extend_from_slice(b"X-Pad: ");
            out.resize(out.len() + HUGE_PAD_LEN, b'p');
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"Content-Length: 0\r\nConnection: close\r\n\r\n");
        out.into_boxed_slice()
    })
}

/// The bytes a fault writes, a bounded amount at a time like an
/// [`Encoder`], so that a cut-off body of any length streams through the
/// connection's output buffer.
#[derive(Debug)]
pub(crate) enum FaultBytes {
    /// Nothing at all.
    Nothing,
    /// Fixed bytes, from this position on.
    Fixed(&'static [u8], usize),
    /// The first `left` bytes of a response.
    Cut { encoder: Encoder, left: u64 },
    /// A whole response.
    Whole(Encoder),
}

impl FaultBytes {
    /// What `fault` writes in place of `base`, the response a healthy
    /// server would have sent.
    pub(crate) fn new(fault: Fault, base: Response) -> FaultBytes {
        match fault {
            Fault::CloseBeforeHead | Fault::Reset | Fault::NeverAnswer => FaultBytes::Nothing,
            Fault::Garbage => FaultBytes::Fixed(GARBAGE, 0),
            Fault::BadStatusLine => FaultBytes::Fixed(BAD_STATUS_LINE, 0),
            Fault::BadChunk => FaultBytes::Fixed(BAD_CHUNK, 0),
            Fault::HugeHead => FaultBytes::Fixed(huge_head(), 0),
            Fault::CloseMidHead => cut(base, base.head_len() / 2),
            Fault::CloseMidBody => match with_body(base) {
                Some(full) => cut(full, full.head_len() + payload_len(&full) / 2),
                None => cut(base, base.head_len() / 2),
            },
            Fault::ShortBody => match with_body(base) {
                Some(full) => {
                    let len = payload_len(&full);
                    // Set text announces its length already, and keeps it.
                    let announced = match full.body {
                        Body::Token(_) | Body::Denied => full,
                        _ => Response {
                            body: Body::Length(len),
                            ..full
                        },
                    };
                    cut(announced, announced.head_len() + len - 1)
                }
                None => cut(base, base.head_len() - 1),
            },
            Fault::Trickle => FaultBytes::Whole(Encoder::new(base)),
        }
    }

    /// Appends to `out` until it holds at least `limit` bytes or the
    /// fault's bytes are all out; returns whether they are.
    pub(crate) fn fill(&mut self, out: &mut Vec<u8>, limit: usize) -> bool {
        match self {
            FaultBytes::Nothing => true,
            FaultBytes::Fixed(bytes, pos) => {
                let room = limit.saturating_sub(out.len()).max(1);
                let end = bytes.len().min(pos.saturating_add(room));
                out.extend_from_slice(&bytes[*pos..end]);
                *pos = end;
                *pos == bytes.len()
            }
            FaultBytes::Cut { encoder, left } => {
                let start = out.len();
                let room = limit.saturating_sub(start) as u64;
                let want = (*left).min(room.max(1));
                let done = encoder.fill(out, start + want as usize);
                let took = ((out.len() - start) as u64).min(*left);
                out.truncate(start + took as usize);
                *left -= took;
                *left == 0 || done
            }
            FaultBytes::Whole(encoder) => encoder.fill(out, limit),
        }
    }

    /// All of it at once, for tests.
    #[cfg(test)]
    pub(crate) fn into_bytes(mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while !self.fill(&mut out, usize::MAX) {}
        out
    }
}

fn cut(response: Response, bytes: u64) -> FaultBytes {
    FaultBytes::Cut {
        encoder: Encoder::new(response),
        left: bytes,
    }
}

/// `base` with a body a body fault can cut: at least [`MIN_FAULT_BODY`]
/// bytes, with an end the client can recognise (a length or chunks).
/// `None` for a response that may not have a body (HEAD, 204, 304): body
/// bytes there would not be read as a body at all, so body faults cut such
/// a response's head instead.
fn with_body(base: Response) -> Option<Response> {
    let body = match base.body {
        _ if base.head_only => return None,
        Body::Empty => return None,
        // Set text is never shorter than two bytes: its middle is cut.
        Body::Chunked { .. } | Body::Token(_) | Body::Denied => base.body,
        // Faults spoil the plain body (see `route`), never an event stream;
        // were they handed one, they would cut a body of its length.
        Body::Length(_) | Body::UntilClose(_) | Body::Events { .. } => {
            Body::Length(payload_len(&base).max(MIN_FAULT_BODY))
        }
    };
    Some(Response { body, ..base })
}

/// The body length that HTTP/2's body faults announce and cut: the body
/// of `base`, or [`MIN_FAULT_BODY`] bytes if that is shorter. HTTP/2 puts
/// a body in DATA frames, which no client reads as anything else, so even
/// a response that may not have one gets one to spoil.
pub(crate) fn fault_body_len(base: &Response) -> u64 {
    payload_len(base).max(MIN_FAULT_BODY)
}

/// The body's payload length (chunk framing not counted).
fn payload_len(response: &Response) -> u64 {
    match response.body {
        Body::Empty => 0,
        Body::Length(n) | Body::UntilClose(n) | Body::Chunked { len: n, .. } => n,
        Body::Events { sse, .. } => stream_len(sse.events),
        Body::Token(_) | Body::Denied => response.body.text_len().unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::After;
    use crate::reply::Connection;

    fn base(body: Body) -> Response {
        Response {
            status: 200,
            body,
            connection: Connection::Omit,
            head_only: false,
        }
    }

    fn bytes(fault: Fault, body: Body) -> String {
        String::from_utf8_lossy(&FaultBytes::new(fault, base(body)).into_bytes()).into_owned()
    }

    const HEAD_200: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n";

    #[test]
    fn silent_faults_write_nothing() {
        for fault in [Fault::CloseBeforeHead, Fault::Reset, Fault::NeverAnswer] {
            assert_eq!(bytes(fault, Body::Length(5)), "", "{fault}");
        }
    }

    #[test]
    fn fixed_faults_write_their_constants() {
        let garbage = FaultBytes::new(Fault::Garbage, base(Body::Length(5))).into_bytes();
        assert_eq!(garbage, b"\x00\x17\xfe\xff not HTTP \x01\x02\x03\r\n\r\n");
        assert_eq!(
            bytes(Fault::BadStatusLine, Body::Length(5)),
            "HTTP/1.1 2OO OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n"
        );
        assert_eq!(
            bytes(Fault::BadChunk, Body::Length(5)),
            format!("{HEAD_200}Transfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n0\r\n\r\n")
        );
    }

    #[test]
    fn the_huge_head_is_a_valid_mebibyte_of_fields() {
        let head = bytes(Fault::HugeHead, Body::Length(5));
        assert!(head.len() > 1 << 20, "{}", head.len());
        let (fields, rest) = head.split_once("\r\n\r\n").unwrap();
        assert_eq!(rest, "", "no body");
        let mut lines = fields.split("\r\n");
        assert_eq!(lines.next(), Some("HTTP/1.1 200 OK"));
        assert_eq!(lines.next(), Some("Content-Type: text/plain"));
        let pad = format!("X-Pad: {}", "p".repeat(HUGE_PAD_LEN));
        for _ in 0..HUGE_FIELDS {
            assert!(lines.next() == Some(pad.as_str()));
        }
        let tail: Vec<_> = lines.collect();
        assert_eq!(tail, ["Content-Length: 0", "Connection: close"]);
        let mut parsed = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut parsed);
        let done = response.parse(head.as_bytes()).unwrap();
        assert_eq!(done, httparse::Status::Complete(head.len()));
    }

    #[test]
    fn close_mid_head_writes_half_the_head() {
        // The head is 64 bytes: 32 go out.
        let want = "HTTP/1.1 200 OK\r\nContent-Type: t";
        assert_eq!(bytes(Fault::CloseMidHead, Body::Length(0)), want);
        assert_eq!(base(Body::Length(0)).head_len(), 64);
    }

    #[test]
    fn close_mid_body_writes_the_head_and_half_the_body() {
        let length = format!("{HEAD_200}Content-Length: 10\r\n\r\nxxxxx");
        assert_eq!(bytes(Fault::CloseMidBody, Body::Length(10)), length);
        // An empty body grows to two bytes so that there is a middle.
        let empty = format!("{HEAD_200}Content-Length: 2\r\n\r\nx");
        assert_eq!(bytes(Fault::CloseMidBody, Body::Length(0)), empty);
        assert_eq!(bytes(Fault::CloseMidBody, Body::UntilClose(0)), empty);
        // Chunked: the first half of the payload's count of wire bytes.
        let chunked = Body::Chunked {
            len: 9,
            trailer: false,
        };
        let want = format!("{HEAD_200}Transfer-Encoding: chunked\r\n\r\n3\r\nx");
        assert_eq!(bytes(Fault::CloseMidBody, chunked), want);
    }

    #[test]
    fn short_body_writes_one_byte_less_than_it_announces() {
        let want = format!("{HEAD_200}Content-Length: 4\r\n\r\nxxx");
        assert_eq!(bytes(Fault::ShortBody, Body::Length(4)), want);
        let chunked = Body::Chunked {
            len: 4,
            trailer: true,
        };
        assert_eq!(bytes(Fault::ShortBody, chunked), want);
        let small = format!("{HEAD_200}Content-Length: 2\r\n\r\nx");
        assert_eq!(bytes(Fault::ShortBody, Body::Length(0)), small);
    }

    #[test]
    fn body_faults_cut_set_text_and_keep_it() {
        let head = "HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\n\
            WWW-Authenticate: Bearer\r\nContent-Length: 13\r\n\r\n";
        let denied = |fault| {
            let base = Response {
                status: 401,
                ..base(Body::Denied)
            };
            String::from_utf8(FaultBytes::new(fault, base).into_bytes()).unwrap()
        };
        assert_eq!(denied(Fault::ShortBody), format!("{head}unauthorized"));
        assert_eq!(denied(Fault::CloseMidBody), format!("{head}unauth"));
    }

    #[test]
    fn body_faults_cut_the_head_of_a_response_without_a_body() {
        let no_content = Response {
            status: 204,
            ..base(Body::Empty)
        };
        let head = Response {
            head_only: true,
            ..base(Body::Length(9))
        };
        let cut = |fault, response| {
            String::from_utf8(FaultBytes::new(fault, response).into_bytes()).unwrap()
        };
        // "HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\n\r\n": 53 bytes.
        assert_eq!(
            cut(Fault::CloseMidBody, no_content),
            "HTTP/1.1 204 No Content\r\nC"
        );
        assert_eq!(
            cut(Fault::ShortBody, no_content),
            "HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\n\r"
        );
        let head_bytes = format!("{HEAD_200}Content-Length: 9\r\n\r\n");
        assert_eq!(cut(Fault::CloseMidBody, head), head_bytes[..32]);
        assert_eq!(
            cut(Fault::ShortBody, head),
            head_bytes[..head_bytes.len() - 1]
        );
    }

    #[test]
    fn trickle_writes_the_whole_response() {
        let body = Body::Length(3);
        assert_eq!(
            bytes(Fault::Trickle, body),
            format!("{HEAD_200}Content-Length: 3\r\n\r\nxxx")
        );
    }

    #[test]
    fn long_cuts_stream_in_bounded_pieces() {
        let body = Body::Length(1_000_000);
        let whole = FaultBytes::new(Fault::CloseMidBody, base(body)).into_bytes();
        let mut piecewise = FaultBytes::new(Fault::CloseMidBody, base(body));
        let (mut sent, mut out) = (Vec::new(), Vec::new());
        while !piecewise.fill(&mut out, 4096) {
            assert!(out.len() <= 4096 + 64, "{}", out.len());
            sent.append(&mut out);
        }
        sent.append(&mut out);
        assert_eq!(sent, whole);
        assert_eq!(whole.len() as u64, base(body).head_len() + 500_000);
        let mut fixed = FaultBytes::new(Fault::HugeHead, base(body));
        let mut pieces = 0;
        out.clear();
        while !fixed.fill(&mut out, 64 * 1024) {
            out.clear();
            pieces += 1;
        }
        assert_eq!(pieces, 16);
    }

    #[test]
    fn only_broken_streams_end_the_connection() {
        let keep = base(Body::Length(1));
        let close = Response {
            connection: Connection::Close,
            ..keep
        };
        assert_eq!(Fault::Trickle.after(keep.closes()), After::KeepOpen);
        assert_eq!(Fault::Trickle.after(close.closes()), After::Close);
        assert_eq!(Fault::Reset.after(keep.closes()), After::Reset);
        assert_eq!(Fault::NeverAnswer.after(keep.closes()), After::Hold);
        for fault in [
            Fault::CloseBeforeHead,
            Fault::CloseMidHead,
            Fault::CloseMidBody,
            Fault::Garbage,
            Fault::HugeHead,
            Fault::BadStatusLine,
            Fault::BadChunk,
            Fault::ShortBody,
        ] {
            assert_eq!(fault.after(keep.closes()), After::Close, "{fault}");
        }
    }
}
