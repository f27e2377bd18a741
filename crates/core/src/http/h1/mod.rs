//! HTTP/1.1 as a [`Session`]: one request at a time on a connection (a
//! script's batch pipelined), each response the answer to the oldest
//! request not yet answered.
//!
//! The session frames responses with [`ResponseParser`] and decides when
//! the connection is done: after a response without keep-alive, at the
//! server's close, or at bytes that cannot be a response. Requests that
//! cannot be answered then (pipelined behind the last response, or cut
//! off) are drained by the connection and counted as lost.
//!
//! When a script reads responses, each response's fields and body must
//! stay put until the script has seen them, so parsing stops after each
//! response and resumes, from a copy of the rest of the read, at the next
//! [`Session::poll_event`]. Without a script nothing is copied.

pub mod chunked;
pub mod request;
pub mod response;

use std::collections::VecDeque;

use crate::clock::Nanos;

use crate::http::outbox::{after_write_error, Outbox};
use crate::http::session::{Captured, Event, Failure, OpenError, Request, Retirement, Session};
use crate::http::sse::{EventReading, EventStream};
use response::{Done, Feed, ParseError, ResponseParser};

pub struct Http1<T> {
    /// Requests written (or queued to be) and not yet answered, oldest
    /// first: whether each is a HEAD request, and where its bytes begin in
    /// everything the connection was given to send, and how many there are.
    in_flight: VecDeque<(T, bool, u64, u64)>,
    parser: ResponseParser,
    /// The parser awaits `start` for the next response.
    between: bool,
    capture: bool,
    /// Bytes to write, and bytes sent over the connection's life.
    out: Outbox,
    /// Bytes given to send over the connection's life.
    queued: u64,
    events: VecDeque<Event<T>>,
    /// Received bytes not parsed yet (capture only), and when they came.
    pending: Vec<u8>,
    pending_at: Nanos,
    /// When the first byte of the response being parsed came.
    first_byte: Nanos,
    /// The first bytes of a response came, whether or not it completed:
    /// a close after that ends a conversation, not a turning away.
    heard: bool,
    /// `--sse`: how bodies are read, and the event stream of the response
    /// being parsed.
    reading: EventReading,
    stream: Option<Box<EventStream>>,
    /// No new request: the server closes after the last response, or the
    /// connection failed. The connection closes once it is finished.
    finished: bool,
    /// The server said it closes after the last response
    /// (`Connection: close`).
    closing: bool,
    /// A write failed: nothing more is sent or opened, but what the server
    /// sent before it stopped is still read.
    unwritable: bool,
}

impl<T: Clone> Http1<T> {
    /// `max_head`: the largest response head accepted; `capture`: keep each
    /// response's fields and body for a script.
    pub fn new(max_head: usize, capture: bool) -> Http1<T> {
        Http1::reading(max_head, capture, EventReading::Off)
    }

    /// [`Http1::new`], reading each body as `reading` says.
    pub fn reading(max_head: usize, capture: bool, reading: EventReading) -> Http1<T> {
        let mut parser = ResponseParser::new(max_head);
        parser.set_capture(capture);
        parser.set_streaming(reading != EventReading::Off);
        Http1 {
            // One request at a time unless a script pipelines a batch: the
            // queue grows to the largest batch once and stays there.
            in_flight: VecDeque::with_capacity(1),
            parser,
            between: true,
            capture,
            out: Outbox::default(),
            queued: 0,
            events: VecDeque::new(),
            pending: Vec::new(),
            pending_at: 0,
            first_byte: 0,
            heard: false,
            reading,
            stream: None,
            finished: false,
            closing: false,
            unwritable: false,
        }
    }

    /// Parses responses out of `bytes` until they run out, or (capturing)
    /// one response ended; returns the bytes consumed.
    fn parse(&mut self, bytes: &[u8], now: Nanos) -> usize {
        let mut at = 0;
        while at < bytes.len() && !self.finished {
            if self.between {
                let Some(&(_, head, ..)) = self.in_flight.front() else {
                    // Bytes nobody asked for (an idle server's 408, say):
                    // the stream cannot be trusted, and nothing is lost.
                    self.finished = true;
                    return bytes.len();
                };
                self.parser.start(head);
                self.between = false;
                self.stream = self.reading.reader();
            }
            if !self.parser.in_progress() {
                self.first_byte = now;
                self.heard = true;
            }
            let fed = self.parser.feed(&bytes[at..]);
            self.read_events(now);
            match fed {
                Ok(Feed::Partial { consumed }) => at += consumed,
                Ok(Feed::Done { consumed, done }) => {
                    at += consumed;
                    self.respond(done);
                    if self.capture {
                        return at;
                    }
                }
                Err(e) => {
                    let why = if self.first_byte == now && looks_like_http2(&bytes[at..]) {
                        Failure::OtherProtocol
                    } else {
                        failure(e)
                    };
                    self.fail(why);
                    return bytes.len();
                }
            }
        }
        at
    }

    /// The body bytes the parser just decoded, read as events (`--sse`).
    fn read_events(&mut self, now: Nanos) {
        let (Some(stream), Some(body), Some((tag, ..))) = (
            self.stream.as_mut(),
            self.parser.streamed(),
            self.in_flight.front(),
        ) else {
            return;
        };
        if !body.is_empty() {
            stream.read(body, tag, now, &mut self.events);
            body.clear();
        }
    }

    /// A response ended: it answers the oldest request.
    fn respond(&mut self, done: Done) {
        let (events, tokens) = self.stream.take().map_or((0, None), |s| s.finish());
        let (tag, ..) = self
            .in_flight
            .pop_front()
            .expect("a response implies a request");
        self.events.push_back(Event::Response {
            tag,
            status: done.status,
            bytes: done.head_bytes as u64 + done.body_bytes,
            first_byte: self.first_byte,
            events,
            tokens,
            grpc_status: None,
        });
        self.between = true;
        // Requests pipelined behind it get no answer on this connection.
        if !done.keep_alive {
            self.finished = true;
            self.closing = true;
        }
    }

    fn fail(&mut self, why: Failure) {
        self.finished = true;
        if !self.in_flight.is_empty() {
            self.events.push_back(Event::Failed { why });
        }
    }
}

impl<T: Clone> Session<T> for Http1<T> {
    fn is_ready(&self) -> bool {
        true
    }

    fn has_heard(&self) -> bool {
        self.heard
    }

    fn free_streams(&self) -> u32 {
        u32::from(!self.is_retired() && self.in_flight.is_empty())
    }

    fn retirement(&self) -> Option<Retirement> {
        match (self.closing, self.finished || self.unwritable) {
            (true, _) => Some(Retirement::Asked),
            (false, true) => Some(Retirement::Ended),
            (false, false) => None,
        }
    }

    fn is_finished(&self) -> bool {
        self.finished && self.events.is_empty() && self.pending.is_empty()
    }

    fn open(&mut self, request: &Request, tag: T, _now: Nanos) -> Result<(), (OpenError, T)> {
        if self.is_retired() {
            return Err((OpenError::Retired, tag));
        }
        self.out.buf().extend_from_slice(request.wire());
        let len = request.wire().len() as u64;
        self.in_flight
            .push_back((tag, request.is_head(), self.queued, len));
        self.queued += len;
        Ok(())
    }

    fn handle(&mut self, bytes: &[u8], now: Nanos) {
        if !self.pending.is_empty() {
            self.pending.extend_from_slice(bytes);
            return;
        }
        let n = self.parse(bytes, now);
        if n < bytes.len() && !self.finished {
            self.pending.extend_from_slice(&bytes[n..]);
            self.pending_at = now;
        }
    }

    fn handle_eof(&mut self, _now: Nanos) {
        if self.finished {
            return;
        }
        if self.between || self.in_flight.is_empty() {
            // A close between responses: clean if nothing was awaited.
            return self.fail(Failure::Closed);
        }
        match self.parser.eof() {
            // A body delimited by the close.
            Ok(Some(done)) => {
                self.respond(done);
                self.fail(Failure::Closed);
            }
            Ok(None) => self.fail(Failure::Closed),
            Err(e) => self.fail(failure(e)),
        }
    }

    fn poll_event(&mut self) -> Option<Event<T>> {
        if self.events.is_empty() && !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            let n = self.parse(&pending, self.pending_at);
            if n < pending.len() && !self.finished {
                self.pending.extend_from_slice(&pending[n..]);
            }
        }
        self.events.pop_front()
    }

    fn transmit(&mut self, _now: Nanos) -> &[u8] {
        self.out.pending()
    }

    fn transmitted(&mut self, n: usize) {
        self.out.advance(n);
    }

    fn handle_write_error(&mut self, _now: Nanos) {
        self.unwritable = true;
        self.out.discard();
        // Requests are answered in order, so the unsent ones are the last,
        // and the one cut off is just before them.
        after_write_error(
            &mut self.in_flight,
            self.out.sent(),
            |r| (r.2, r.2 + r.3),
            |r| r.0,
            &mut self.events,
        );
    }

    fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    fn for_each_in_flight(&self, each: &mut dyn FnMut(&T, Option<Nanos>)) {
        let last = self.stream.as_ref().and_then(|s| s.last());
        for (i, (t, ..)) in self.in_flight.iter().enumerate() {
            // Only the oldest request's response can have begun.
            each(t, if i == 0 { last } else { None });
        }
    }

    /// HTTP/1.1 cannot cancel one request: when any has expired, every
    /// request on the connection is given up and the connection closes.
    fn expire(&mut self, expired: &mut dyn FnMut(&T) -> bool, gone: &mut Vec<T>, _now: Nanos) {
        if self.in_flight.iter().any(|(t, ..)| expired(t)) {
            self.finished = true;
            gone.extend(self.in_flight.drain(..).map(|(t, ..)| t));
        }
    }

    fn drain(&mut self, into: &mut Vec<T>) {
        self.finished = true;
        self.pending.clear();
        into.extend(self.in_flight.drain(..).map(|(t, ..)| t));
    }

    fn captured(&self) -> &Captured {
        self.parser.captured()
    }
}

/// What a parse error means for the requests it cost.
fn failure(e: ParseError) -> Failure {
    match e {
        ParseError::HeadTooLarge => Failure::HeadTooLarge,
        ParseError::BodyTooLarge => Failure::BodyTooLarge,
        ParseError::UnexpectedEof => Failure::Closed,
        _ => Failure::Malformed,
    }
}

/// Whether `bytes` begin with an HTTP/2 frame on stream 0 that a server
/// sends first (SETTINGS, or GOAWAY): the answer of a server that speaks
/// HTTP/2 only to an HTTP/1.1 request.
fn looks_like_http2(bytes: &[u8]) -> bool {
    const SETTINGS: u8 = 0x4;
    const GOAWAY: u8 = 0x7;
    match bytes {
        [_, _, _, kind, _, s0, s1, s2, s3, ..] => {
            matches!(*kind, SETTINGS | GOAWAY) && [*s0 & 0x7f, *s1, *s2, *s3] == [0; 4]
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
    const GET: &[u8] = b"GET / HTTP/1.1\r\n\r\n";

    fn get() -> Request {
        Request::new(Bytes::from_static(GET), false)
    }

    fn head() -> Request {
        Request::new(Bytes::from_static(b"HEAD / HTTP/1.1\r\n\r\n"), true)
    }

    fn events(s: &mut Http1<u32>) -> Vec<Event<u32>> {
        std::iter::from_fn(|| s.poll_event()).collect()
    }

    fn ok(tag: u32, first_byte: Nanos) -> Event<u32> {
        Event::Response {
            tag,
            status: 200,
            bytes: OK.len() as u64,
            first_byte,
            events: 0,
            tokens: None,
            grpc_status: None,
        }
    }

    /// `--sse` over a chunked body split across reads: each event comes
    /// out as it completes, naming when the one before it came, and the
    /// response counts them; one in flight names its last event's time.
    #[test]
    fn events_of_a_chunked_body_come_out_as_they_arrive() {
        let mut s: Http1<u32> = Http1::reading(1024, false, EventReading::Data);
        s.open(&get(), 1, 0).unwrap();
        let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                     Transfer-Encoding: chunked\r\n\r\n";
        s.handle(head, 5);
        s.handle(b"b\r\ndata: one\n\n\r\n", 10);
        s.handle(b"7\r\ndata: t", 20);
        let mut last = None;
        s.for_each_in_flight(&mut |_, at| last = at);
        assert_eq!(last, Some(10));
        s.handle(b"\r\n4\r\nwo\n\n\r\n0\r\n\r\n", 30);
        let message = |at, previous, data: &'static [u8]| Event::Message {
            tag: 1,
            at,
            previous,
            data: Some(Bytes::from_static(data)),
            binary: false,
        };
        let got = events(&mut s);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0], message(10, None, b"one"));
        assert_eq!(got[1], message(30, Some(10), b"two"));
        assert!(
            matches!(
                got[2],
                Event::Response {
                    events: 2,
                    tokens: None,
                    first_byte: 5,
                    ..
                }
            ),
            "{got:?}"
        );
    }

    #[test]
    fn a_batch_goes_out_whole_and_is_answered_in_order() {
        let mut s = Http1::new(1024, false);
        assert_eq!(s.free_streams(), 1);
        s.open(&get(), 1, 0).unwrap();
        s.open(&head(), 2, 0).unwrap();
        assert_eq!(s.free_streams(), 0);
        let batch = [GET, b"HEAD / HTTP/1.1\r\n\r\n"].concat();
        assert_eq!(s.transmit(0), batch);
        s.transmitted(10);
        assert_eq!(s.transmit(0), &batch[10..]);
        s.transmitted(batch.len() - 10);
        assert_eq!(s.transmit(0), b"");
        // Both responses in one read; the second answers HEAD, so its
        // Content-Length has no body.
        let head_reply = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n";
        s.handle(&[OK, head_reply].concat(), 7);
        let head_event = Event::Response {
            tag: 2,
            status: 200,
            bytes: head_reply.len() as u64,
            first_byte: 7,
            events: 0,
            tokens: None,
            grpc_status: None,
        };
        assert_eq!(events(&mut s), [ok(1, 7), head_event]);
        assert_eq!((s.free_streams(), s.in_flight()), (1, 0));
    }

    #[test]
    fn a_response_split_across_reads_starts_at_its_first_byte() {
        let mut s = Http1::new(1024, false);
        s.open(&get(), 1, 0).unwrap();
        s.handle(&OK[..5], 3);
        assert_eq!(events(&mut s), []);
        s.handle(&OK[5..], 9);
        assert_eq!(events(&mut s), [ok(1, 3)]);
    }

    #[test]
    fn capture_keeps_each_pipelined_response_until_it_was_seen() {
        let mut s = Http1::new(1024, true);
        s.open(&get(), 1, 0).unwrap();
        s.open(&get(), 2, 0).unwrap();
        let second = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX: y\r\n\r\nbye";
        s.handle(&[OK, second].concat(), 1);
        assert!(matches!(
            s.poll_event(),
            Some(Event::Response { tag: 1, .. })
        ));
        assert_eq!(s.captured().body(), b"hi");
        assert!(matches!(
            s.poll_event(),
            Some(Event::Response { tag: 2, .. })
        ));
        assert_eq!(s.captured().body(), b"bye");
        assert_eq!(s.captured().fields().last(), Some(("X", &b"y"[..])));
        assert_eq!(s.poll_event(), None);
    }

    #[test]
    fn a_close_after_a_response_finishes_it_and_loses_what_was_behind() {
        let mut s = Http1::new(1024, false);
        s.open(&get(), 1, 0).unwrap();
        s.open(&get(), 2, 0).unwrap();
        s.handle(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            0,
        );
        assert!(matches!(
            s.poll_event(),
            Some(Event::Response { tag: 1, .. })
        ));
        assert!(s.is_finished() && s.is_retired());
        assert_eq!(s.open(&get(), 3, 0), Err((OpenError::Retired, 3)));
        let mut lost = Vec::new();
        s.drain(&mut lost);
        assert_eq!(lost, [2]);
    }

    #[test]
    fn the_end_of_the_stream_ends_a_response_or_fails_the_requests() {
        let mut s: Http1<u32> = Http1::new(1024, false);
        s.handle_eof(0);
        assert!(s.is_finished());
        assert_eq!(events(&mut s), []);

        let mut s = Http1::new(1024, false);
        s.open(&get(), 1, 0).unwrap();
        s.handle(&OK[..10], 0);
        s.handle_eof(0);
        assert_eq!(
            events(&mut s),
            [Event::Failed {
                why: Failure::Closed
            }]
        );

        let mut s = Http1::new(1024, false);
        s.open(&get(), 1, 0).unwrap();
        s.handle(b"HTTP/1.0 200 OK\r\n\r\nbody", 4);
        s.handle_eof(5);
        let Some(Event::Response { tag, bytes, .. }) = s.poll_event() else {
            panic!("a response delimited by the close");
        };
        assert_eq!((tag, bytes), (1, 23));
        assert!(s.is_finished());
    }

    #[test]
    fn bad_bytes_are_named_by_what_they_are() {
        let cases: [(&[u8], Failure); 3] = [
            (b"SMTP ready\r\n\r\n", Failure::Malformed),
            (
                b"HTTP/1.1 200 OK\r\nX: 0123456789012345678901234567890123456789",
                Failure::HeadTooLarge,
            ),
            // nghttpd's answer to an HTTP/1.1 request: its SETTINGS.
            (
                &[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100],
                Failure::OtherProtocol,
            ),
        ];
        for (bytes, why) in cases {
            let mut s = Http1::new(32, false);
            s.open(&get(), 1, 0).unwrap();
            s.handle(bytes, 0);
            assert_eq!(events(&mut s), [Event::Failed { why }]);
            assert!(s.is_finished());
        }
    }

    #[test]
    fn bytes_with_nothing_in_flight_finish_it_and_lose_nothing() {
        let mut s: Http1<u32> = Http1::new(1024, false);
        s.handle(OK, 0);
        assert!(s.is_finished());
        assert_eq!(events(&mut s), []);
    }

    #[test]
    fn a_broken_write_gives_back_the_requests_none_of_which_left() {
        let mut s = Http1::new(1024, false);
        for tag in 1..=3 {
            s.open(&get(), tag, 0).unwrap();
        }
        // The first request and a byte of the second went out.
        s.transmitted(GET.len() + 1);
        s.handle_write_error(0);
        assert_eq!(
            events(&mut s),
            [
                Event::Lost {
                    tag: 2,
                    why: Failure::Write
                },
                Event::Unprocessed { tag: 3 }
            ]
        );
        assert!(s.is_retired() && !s.is_finished());
        // What the server sent before it stopped is still read.
        s.handle(OK, 5);
        assert_eq!(events(&mut s), [ok(1, 5)]);
        s.handle_eof(6);
        assert_eq!(events(&mut s), []);
        assert!(s.is_finished());
    }

    #[test]
    fn an_expired_request_gives_up_the_connection() {
        let mut s = Http1::new(1024, false);
        s.open(&get(), 5, 0).unwrap();
        s.open(&get(), 6, 0).unwrap();
        let mut gone = Vec::new();
        s.expire(&mut |&t| t == 99, &mut gone, 0);
        assert!(gone.is_empty() && !s.is_finished());
        s.expire(&mut |&t| t == 5, &mut gone, 0);
        assert_eq!(gone, [5, 6]);
        assert!(s.is_finished());
    }
}
