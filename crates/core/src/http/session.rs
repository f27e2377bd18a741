//! The seam between the engine and a protocol: a [`Session`] is one
//! connection's protocol state machine, with no I/O and no clock of its own.
//!
//! The engine's connection owns the socket and the time. It hands the
//! session what arrived ([`Session::handle`], [`Session::handle_eof`]),
//! writes what the session asks to send ([`Session::transmit`]), wakes it
//! at the deadline it names ([`Session::poll_timeout`]), and opens a
//! request on it whenever it has a free stream ([`Session::free_streams`]).
//! What became of the requests comes out as [`Event`]s. HTTP/1.1 is a
//! session with one stream (a script's pipelined batch aside), HTTP/2 one
//! with `-m`; a protocol over datagrams hands in and takes out one datagram
//! per call.
//!
//! Every request given to [`Session::open`] comes out exactly once: as an
//! [`Event::Response`], [`Event::Lost`] or [`Event::Unprocessed`], or, when
//! the connection ends under it, through [`Session::drain`]. The engine
//! counts each one from that, so the ledger balances whatever the protocol.

use std::any::Any;
use std::cell::OnceCell;

use bytes::Bytes;

use crate::clock::Nanos;

pub use super::capture::Captured;
use super::tokens::Answer;
use super::version::Protocol;

/// One connection's protocol session; `T` is what the engine tags each
/// request with, and gets back with its outcome.
///
/// Its methods fall in four groups, in this order below: **handle** (what
/// the engine hands in: requests, bytes, the peer's end, a failed write,
/// a passed deadline, expiry, the connection's end), **poll** (what
/// comes out: events, the next deadline, a captured response),
/// **transmit** (the bytes to write, and how many were), and **state**
/// (readiness, free streams, retirement, what is in flight, and
/// [`Session::info`], the one value for what only some protocols know).
pub trait Session<T> {
    // Handle.

    /// Opens `request` (queues its bytes for [`Session::transmit`]). A
    /// request it cannot take is handed back with the reason.
    fn open(&mut self, request: &Request, tag: T, now: Nanos) -> Result<(), (OpenError, T)>;

    /// Bytes received (over a datagram transport: one datagram).
    fn handle(&mut self, bytes: &[u8], now: Nanos);

    /// The peer closed its side of the stream.
    fn handle_eof(&mut self, now: Nanos);

    /// The transport broke while writing: what was not written never will
    /// be. A request none of whose bytes left (or, where a request is
    /// framed, whose head did not leave whole) cannot have been seen by
    /// the server: it comes out as [`Event::Unprocessed`]. One cut off
    /// part way is lost as [`Failure::Write`]. Those sent whole stay in
    /// flight: what the server sent before it stopped is still read, and
    /// nothing more is sent or opened.
    fn handle_write_error(&mut self, now: Nanos);

    /// Its deadline ([`Session::poll_timeout`]) passed.
    fn handle_timeout(&mut self, _now: Nanos) {}

    /// Gives up the requests for which `expired` is true at `now`,
    /// appending their tags to `gone`. A protocol that can cancel one
    /// request (HTTP/2's RST_STREAM) does so and goes on; one that cannot
    /// gives up every request and finishes.
    fn expire(&mut self, expired: &mut dyn FnMut(&T) -> bool, gone: &mut Vec<T>, now: Nanos);

    /// Takes every request still in flight (the connection is closing).
    fn drain(&mut self, into: &mut Vec<T>);

    // Poll.

    /// The next outcome, oldest first.
    fn poll_event(&mut self) -> Option<Event<T>>;

    /// When the session next needs [`Session::handle_timeout`], if ever.
    fn poll_timeout(&self) -> Option<Nanos> {
        None
    }

    /// The fields and body of the last response an [`Event::Response`]
    /// reported, when capture is on; valid until the next `poll_event`.
    fn captured(&self) -> &Captured;

    // Transmit.

    /// Bytes to write next (over a datagram transport: one datagram, see
    /// [`Session::transmit_segmented`] for more); empty when there are
    /// none. [`Session::transmitted`] says how many were written.
    fn transmit(&mut self, now: Nanos) -> &[u8];

    /// Over a datagram transport: [`Session::transmit`]'s bytes and, when
    /// they are several datagrams of one size (the last may be shorter),
    /// that size, so that they go out in one system call (GSO).
    fn transmit_segmented(&mut self, now: Nanos) -> (&[u8], Option<usize>) {
        (self.transmit(now), None)
    }

    /// The first `n` bytes of the last [`Session::transmit`] were written.
    fn transmitted(&mut self, n: usize);

    /// The run is over and the connection is dropped: tell the server,
    /// where closing the socket would not (a datagram protocol has no
    /// FIN, and a server holds a connection nobody closed until its idle
    /// timeout, counted against its limit). What it sends goes out with
    /// the next transmit.
    fn leave(&mut self, _now: Nanos) {}

    // State.

    /// The session finished its opening (HTTP/2: the server's SETTINGS
    /// came) and its capacity is known. Nothing is opened before.
    fn is_ready(&self) -> bool;

    /// The first bytes of a response came on it, whether or not one
    /// completed: a close after that ends a conversation part way, where
    /// a close before any turns the connection away.
    fn has_heard(&self) -> bool;

    /// Requests it can take now: 0 until ready, while full, and once
    /// retired.
    fn free_streams(&self) -> u32;

    /// Why it will never take another request, once that is so (see
    /// [`Retirement`]). The engine replaces it at once and lets it finish
    /// what is in flight on the side; it stops counting against `-c`.
    fn retirement(&self) -> Option<Retirement>;

    /// It will never take another request.
    fn is_retired(&self) -> bool {
        self.retirement().is_some()
    }

    /// Nothing more can come of it: the engine closes the connection and
    /// counts whatever [`Session::drain`] hands back as lost.
    fn is_finished(&self) -> bool;

    /// Requests opened and not yet given back.
    fn in_flight(&self) -> usize;

    /// Calls `each` on every request in flight, with when the last event
    /// of its response came when its response is an event stream that
    /// has begun (`--sse`).
    fn for_each_in_flight(&self, each: &mut dyn FnMut(&T, Option<Nanos>));

    /// The server, not `-m`, is what keeps it from taking more requests
    /// now: its stream limit is below `-m`, or (HTTP/3) the stream credit
    /// it has granted so far is used up. A request that waits for a stream
    /// then waits on the server.
    fn held_by_server(&self) -> bool {
        false
    }

    /// It has words to write before its socket closes, even as it fails
    /// (WebSocket's close, answering the server's or naming a protocol
    /// error): the engine gives them one write.
    fn has_last_words(&self) -> bool {
        false
    }

    /// What it knows of itself that only some protocols have: a
    /// handshake of its own, the server's stream limit, packets.
    fn info(&self) -> Info {
        Info {
            handshake_complete: self.is_ready(),
            ..Info::default()
        }
    }
}

/// What a session tells of itself beyond its requests, in one value
/// whatever the protocol: what one does not have stays at its default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Info {
    /// Its own handshake (QUIC's) is complete: the connection's connect
    /// time runs to here. It may have been ready before (0-RTT); a
    /// session without a handshake of its own has one once it is ready.
    pub handshake_complete: bool,
    /// The streams the server grants on the connection at once, once it
    /// said (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS, HTTP/3's initial
    /// stream credit), for the pre-flight and the banner.
    pub server_limit: Option<u32>,
    /// A protocol over datagrams: its packets so far, by its own count.
    pub packets: Option<Packets>,
    /// WebSocket: the close code the server sent, once it did (1005: it
    /// sent a close without one).
    pub close_code: Option<u16>,
    /// WebSocket: what became of messages beyond requests and answers.
    pub messages: Option<Messages>,
    /// WebSocket: the server refused the upgrade, with this status (0:
    /// with an answer that is no valid upgrade's).
    pub refused: Option<u16>,
}

/// What a WebSocket session counted of messages that answer no request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Messages {
    /// Whole messages that came with nothing awaiting them (echo: with
    /// no message unanswered; a push holds its early ones for its
    /// subscription).
    pub unasked: u64,
    /// Pings sent (`--ws-ping`).
    pub pings: u64,
    /// The last whole message read was binary (for a script's
    /// `message(data, binary)`).
    pub binary_read: bool,
    /// `--ws-deflate`, once upgraded: whether the server agreed to
    /// permessage-deflate (`None`: not offered, or not upgraded).
    pub deflate: Option<bool>,
}

/// Why a session takes no new request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retirement {
    /// The server said so: HTTP/2's and HTTP/3's GOAWAY, HTTP/1.1's
    /// `Connection: close`.
    Asked,
    /// HTTP/3: nothing in flight, and the server granted no stream for
    /// long after the last one ended (it keeps cancelled streams open).
    Starved,
    /// The connection is closing, broke, or used up its stream ids.
    Ended,
}

/// One request inside a pipelined buffer (found by
/// [`super::h1::request::metas_into`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestMeta {
    /// Bytes of this request, head and body.
    pub len: usize,
    /// It is a HEAD request, so its response has no body.
    pub head: bool,
}

/// What a protocol over datagrams (QUIC) counted of its packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packets {
    pub sent: u64,
    /// Declared lost by its loss detection (and sent again).
    pub lost: u64,
    /// The server accepted early (0-RTT) data.
    pub zero_rtt: bool,
    /// Early (0-RTT) data was sent (`--0rtt`, a resumed session).
    pub zero_rtt_offered: bool,
}

/// What became of a request, or of the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<T> {
    /// Its response arrived in full. `first_byte`: when the first byte of
    /// its head came; `bytes`: head and body as on the wire; `tokens`: a
    /// completion stream's tally (`--llm`); `events`: the
    /// events its body carried (`--sse`; 0 otherwise); `grpc_status`:
    /// the `grpc-status` its head or trailers carried, whatever the run
    /// (the call layer above the sessions, `--grpc`, makes a call's
    /// status of it).
    Response {
        tag: T,
        status: u16,
        bytes: u64,
        first_byte: Nanos,
        events: u64,
        tokens: Option<Box<Answer>>,
        grpc_status: Option<u8>,
    },
    /// An event of its response's stream came, at `at` (`--sse`, a
    /// WebSocket push): `previous` is when the event before it came
    /// (`None`: this is the first); `data` its data, when a script asked for it, and
    /// whether that is binary (a WebSocket binary message) rather than
    /// text. The response goes on.
    Message {
        tag: T,
        at: Nanos,
        previous: Option<Nanos>,
        data: Option<Bytes>,
        binary: bool,
    },
    /// A whole WebSocket message came that no message awaited (an echo
    /// server that speaks first, or sends others' messages beside the
    /// answers), with its data when a script reads messages. It is no
    /// request's, so it only goes to the script's `message()`.
    Unasked { data: Bytes, binary: bool },
    /// It ended without a response.
    Lost { tag: T, why: Failure },
    /// The server never processed it (above a GOAWAY's last stream id, or
    /// refused with REFUSED_STREAM): it may be sent again elsewhere.
    Unprocessed { tag: T },
    /// The server will take no new stream on this connection (HTTP/2's
    /// GOAWAY, with its error code).
    GoAway { code: u32 },
    /// The connection failed for `why`: every request still in flight is
    /// lost (the engine drains them), and the connection closes.
    Failed { why: Failure },
}

impl<T> Event<T> {
    /// The response to `tag`, complete at `now`: its `status`, the
    /// `bytes` its stream took on the wire, when its first byte came (a
    /// response none of whose bytes were timed counts `now`), the
    /// `events` its body carried (and, of a completion stream, its
    /// tally), and the `grpc-status` it carried.
    pub fn answered(
        tag: T,
        status: u16,
        bytes: u64,
        first_byte: Option<Nanos>,
        now: Nanos,
        (events, tokens): (u64, Option<Box<Answer>>),
        grpc_status: Option<u8>,
    ) -> Event<T> {
        Event::Response {
            tag,
            status,
            bytes,
            first_byte: first_byte.unwrap_or(now),
            events,
            tokens,
            grpc_status,
        }
    }
}

/// Why a request or a connection ended without a response. The engine
/// counts each under wrk's read, write or timeout, and by this cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The server reset the connection, or (HTTP/2) the stream, with this
    /// code (`None`: a TCP reset).
    Reset(Option<u32>),
    /// The server closed the connection before the response ended.
    Closed,
    /// Nothing listens at the server's address any more: over UDP, the
    /// host's "port unreachable".
    Refused,
    /// A response head larger than `--max-head`.
    HeadTooLarge,
    /// A body larger than a script may read whole (16 MiB), kept for its
    /// `response()` or a flow's step.
    BodyTooLarge,
    /// Bytes that are not a valid response.
    Malformed,
    /// The server broke the protocol on the connection (an HTTP/2
    /// connection error).
    Protocol,
    /// The server answered in another protocol than the session's (HTTP/2
    /// frames to an HTTP/1.1 request): it speaks only that one.
    OtherProtocol,
    /// TLS failed on an open connection.
    Tls,
    /// The request could not be written.
    Write,
    /// It was outstanding longer than `--timeout`.
    Timeout,
}

/// Why a request was not opened.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("no stream is free on this connection: wait for a response before opening another")]
    Full,
    #[error("this connection takes no new requests: open another connection")]
    Retired,
    /// The request cannot be carried: by `protocol` at all, or as a flag
    /// asks (`fix` then says what to do of the flag: `drop --ws-match id`,
    /// `add --ws-binary`).
    #[error("{why}")]
    Rejected {
        protocol: Protocol,
        why: String,
        fix: Option<String>,
    },
}

/// One request, in the HTTP/1.1 form that wrk's Lua API builds, shared by
/// every send of it. A protocol that frames requests otherwise converts it
/// on first use and keeps the conversion here ([`Request::framed`]), so a
/// request sent a million times is converted once.
pub struct Request {
    wire: Bytes,
    head: bool,
    framed: OnceCell<Box<dyn Any>>,
}

impl Request {
    /// `wire` holds exactly one HTTP/1.x request.
    pub fn new(wire: Bytes, head: bool) -> Request {
        Request {
            wire,
            head,
            framed: OnceCell::new(),
        }
    }

    /// The requests of `bytes`, as [`super::h1::request::metas_into`] split
    /// them, each a slice of the same buffer.
    pub fn split(bytes: &Bytes, metas: &[RequestMeta]) -> Vec<Request> {
        let mut at = 0;
        metas
            .iter()
            .map(|m| {
                let wire = bytes.slice(at..at + m.len);
                at += m.len;
                Request::new(wire, m.head)
            })
            .collect()
    }

    /// Its bytes as HTTP/1.1 sends them.
    pub fn wire(&self) -> &[u8] {
        &self.wire
    }

    /// A HEAD request: its response has no body.
    pub fn is_head(&self) -> bool {
        self.head
    }

    /// Its form for a protocol that frames it (built by `convert` on first
    /// use, then kept). A request goes to one host, so one protocol.
    pub fn framed<F: Any>(&self, convert: impl FnOnce(&[u8]) -> F) -> &F {
        let framed = self.framed.get_or_init(|| Box::new(convert(&self.wire)));
        framed
            .downcast_ref::<F>()
            .expect("a request is framed by one protocol only")
    }

    /// Its form for `protocol` ([`Request::framed`] of `convert`'s
    /// result), or the refusal a session answers `open` with when the
    /// request cannot take that form.
    pub fn framed_for<F: Any>(
        &self,
        protocol: Protocol,
        convert: impl FnOnce(&[u8]) -> Result<F, String>,
    ) -> Result<&F, OpenError> {
        self.framed(convert)
            .as_ref()
            .map_err(|why| OpenError::Rejected {
                protocol,
                why: why.clone(),
                fix: None,
            })
    }
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("wire", &String::from_utf8_lossy(&self.wire))
            .field("head", &self.head)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_framed_once_and_kept() {
        let r = Request::new(Bytes::from_static(b"GET / HTTP/1.1\r\n\r\n"), false);
        let mut calls = 0;
        let first = *r.framed(|w| {
            calls += 1;
            w.len()
        });
        let again = *r.framed(|_| {
            calls += 1;
            0usize
        });
        assert_eq!((first, again, calls), (18, 18, 1));
        assert!(!r.is_head());
    }
}
