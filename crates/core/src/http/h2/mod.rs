//! HTTP/2 for the load generator: a client session that, like the rest of
//! `http`, does no I/O. The connection hands it received bytes
//! ([`Http2::receive`]) and writes what it asks to send
//! ([`Http2::take_output`]); in between, the session opens streams for
//! requests and reports what became of them as [`Event`]s.
//!
//! The protocol itself (framing, HPACK, flow control, SETTINGS and their
//! acknowledgements, PING replies, CONTINUATION, padding, GOAWAY and
//! RST_STREAM) is the `h2` library's. It is written for an async runtime,
//! and none runs here: the library reads and writes an in-memory pipe
//! (`pipe`), and the session polls its futures by hand whenever bytes come
//! in or requests go out, with wakers that name which stream has news
//! (`wake`). Beside the library, a scan of the frame headers (`frames`)
//! counts each response's bytes and reads GOAWAY's last stream id, which
//! the library does not report.
//!
//! A connection uses it so: [`Http2::new`] once the socket (and TLS) is
//! up, and write what [`Http2::take_output`] gives (the preface); while
//! [`Http2::free_streams`] is above 0, [`Http2::open`] requests, then take
//! the output and write it; after each read, [`Http2::receive`], take every
//! [`Http2::next_event`], and take the output again (acknowledgements,
//! WINDOW_UPDATE); at the end of the stream, [`Http2::eof`]. Once
//! [`Http2::is_closed`] and nothing is in flight, the connection is done.
//!
//! Every request given to [`Http2::open`] comes out exactly once: as a
//! [`Event::Response`], [`Event::Reset`], [`Event::Unprocessed`] or
//! [`Event::StreamError`]; or, after a [`Event::ConnectionError`] or the
//! end of the stream ([`Http2::eof`]), it is left in [`Http2::in_flight`]
//! for the connection to count as lost.
//!
//! `request` converts HTTP/1.1 request bytes (what wrk's Lua API
//! produces) into requests for this session, once.

mod frames;
mod pipe;
mod request;
mod wake;

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::pin::{pin, Pin};
use std::task::{Context, Poll};

use bytes::Bytes;
use h2::client::{Connection, ResponseFuture, SendRequest};
use h2::RecvStream;
use http::HeaderMap;

use super::response::DEFAULT_MAX_CAPTURE;
use frames::{Frames, Seen, CONTINUATION, DATA, HEADERS};
use pipe::Pipe;
use wake::Wakeups;

pub use request::{FromHttp1Error, H2Request};

/// Streams open at once on one connection unless told otherwise.
pub const DEFAULT_MAX_STREAMS: u32 = 100;
/// Receive windows (per stream and for the connection) unless told
/// otherwise: large, so that a load generator never holds a fast server
/// back on flow control.
pub const DEFAULT_WINDOW: u32 = 16 << 20;
/// The largest flow-control window HTTP/2 allows (RFC 9113 §6.9.1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;
/// The largest response head (decoded fields) accepted unless told
/// otherwise, as for HTTP/1.1.
pub const DEFAULT_MAX_HEADER_LIST: u32 = 64 * 1024;
/// Streams assumed allowed before the server's SETTINGS say how many: the
/// protocol's initial limit is unbounded, and this is the library's
/// cautious guess. Streams above the server's real limit wait inside the
/// library until others close, or the server refuses them (a
/// [`Event::Reset`] with REFUSED_STREAM).
const INITIAL_MAX_STREAMS: u32 = 100;
/// Rounds of polling per call: each round polls the connection and the
/// streams it woke; releasing flow control wakes the connection once more.
/// Reaching the bound only defers the rest to the next call.
const MAX_ROUNDS: usize = 16;
/// The library's code for a refused stream, which may be retried.
pub const REFUSED_STREAM: u32 = 0x7;

/// How the session talks to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Streams open at once (`-m`); the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS lowers it. At least 1.
    pub max_streams: u32,
    /// Our receive window, per stream and for the connection (at most
    /// [`MAX_WINDOW`]). Capacity is given back as DATA arrives.
    pub window: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: the largest response head accepted.
    pub max_header_list: u32,
    /// Keep each response's fields and body for the script
    /// ([`Http2::headers`], [`Http2::body`]).
    pub capture: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            max_streams: DEFAULT_MAX_STREAMS,
            window: DEFAULT_WINDOW,
            max_header_list: DEFAULT_MAX_HEADER_LIST,
            capture: false,
        }
    }
}

/// What became of requests, and of the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<R> {
    /// A complete response (END_STREAM seen, trailers included; 1xx
    /// responses before it are skipped). `head_bytes`: the HEADERS and
    /// CONTINUATION frames before the first DATA frame (interim 1xx heads
    /// included); `body_bytes`: the DATA frames (padding included) and any
    /// trailers after them. Both count whole frames, 9-byte frame headers
    /// included, as they came on the wire.
    Response {
        tag: R,
        status: u16,
        head_bytes: usize,
        body_bytes: u64,
    },
    /// The server reset the stream (RST_STREAM) with this error code;
    /// [`REFUSED_STREAM`] means it did not process the request.
    Reset { tag: R, code: u32 },
    /// The stream is above the last stream id of the server's GOAWAY: the
    /// request was never processed and may be sent again elsewhere.
    Unprocessed { tag: R },
    /// The response on this stream broke the protocol (a stream error:
    /// bad fields, a body longer than its Content-Length); this request is
    /// lost, the connection goes on.
    StreamError { tag: R, reason: String },
    /// The server sent GOAWAY: the connection takes no new streams. Comes
    /// before the other events of the same `receive`.
    GoAway { code: u32 },
    /// A protocol error on the connection: it is finished, and every
    /// request still in [`Http2::in_flight`] is lost.
    ConnectionError { reason: String },
}

/// Why a request was not opened.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error(
        "no HTTP/2 stream is free on this connection: wait for a response before opening another"
    )]
    Full,
    #[error("this HTTP/2 connection takes no new streams: open another connection")]
    Closed,
    #[error("the request cannot be sent over HTTP/2: {0}")]
    Rejected(String),
}

/// One HTTP/2 connection's protocol session; `R` tags each request
/// (whatever the connection needs back with its outcome).
pub struct Http2<R> {
    settings: Settings,
    pipe: Pipe,
    /// `None` once the library finished the connection (or never started).
    conn: Option<Connection<Pipe, Bytes>>,
    send: Option<SendRequest<Bytes>>,
    /// Whether the library can take a request now.
    sending: Sending,
    frames: Frames,
    streams: Streams<R>,
    wakeups: Wakeups,
    /// Scratch for the slots woken in a round.
    woken: Vec<usize>,
    events: VecDeque<(Event<R>, Option<Captured>)>,
    /// The fields and body of the last response returned by `next_event`.
    last: Captured,
    /// The lowest last stream id of the server's GOAWAYs.
    goaway: Option<u32>,
    /// A connection-level failure, reported once the streams it woke
    /// were polled.
    broken: Option<String>,
    /// Why the library ended the connection after the server's GOAWAY:
    /// an error only if requests are still in flight then.
    ended: Option<String>,
    /// A connection error was reported, or the stream ended: nothing more
    /// is read or opened.
    dead: bool,
    /// The most a captured body may hold; beyond it the response is
    /// malformed, as for HTTP/1.1.
    max_capture: usize,
}

/// Whether the library takes a new stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sending {
    Ready,
    /// A stream waits for the server's limit to let it open: no more until
    /// it does.
    Busy,
    /// Never again (the connection failed, or its stream ids ran out).
    Closed,
}

impl Sending {
    fn poll(send: &mut SendRequest<Bytes>, cx: &mut Context<'_>) -> Sending {
        match send.poll_ready(cx) {
            Poll::Ready(Ok(())) => Sending::Ready,
            Poll::Pending => Sending::Busy,
            Poll::Ready(Err(_)) => Sending::Closed,
        }
    }
}

/// What capture keeps of one response.
#[derive(Debug, Default)]
struct Captured {
    headers: HeaderMap,
    body: Vec<u8>,
}

/// The streams in flight, in reusable slots.
struct Streams<R> {
    slots: Vec<Option<Stream<R>>>,
    free: Vec<usize>,
    /// Stream id to slot, for the frame scan.
    by_id: HashMap<u32, usize, BuildHasherDefault<IdHasher>>,
    open: u32,
}

/// One request in flight.
struct Stream<R> {
    tag: R,
    id: u32,
    phase: Phase,
    status: u16,
    head_bytes: usize,
    body_bytes: u64,
    /// A DATA frame came: later HEADERS are trailers.
    data_seen: bool,
    captured: Option<Captured>,
}

enum Phase {
    Head(ResponseFuture),
    Body(RecvStream),
}

/// What polling a stream came to.
enum Step {
    Pending,
    Done,
    Failed(h2::Error),
    /// The captured body outgrew the capture limit.
    TooLarge,
}

impl<R> Http2<R> {
    /// A session whose preface and SETTINGS are ready to be written.
    pub fn new(settings: Settings) -> Self {
        let settings = Settings {
            max_streams: settings.max_streams.max(1),
            window: settings.window.clamp(1, MAX_WINDOW),
            ..settings
        };
        let mut session = Http2 {
            settings,
            pipe: Pipe::default(),
            conn: None,
            send: None,
            sending: Sending::Closed,
            max_capture: DEFAULT_MAX_CAPTURE,
            frames: Frames::default(),
            streams: Streams {
                slots: Vec::new(),
                free: Vec::new(),
                by_id: HashMap::default(),
                open: 0,
            },
            wakeups: Wakeups::new(),
            woken: Vec::new(),
            events: VecDeque::new(),
            last: Captured::default(),
            goaway: None,
            broken: None,
            ended: None,
            dead: false,
        };
        session.handshake();
        session
    }

    /// Starts the library's client: it writes the preface into the pipe
    /// at once, since the pipe never blocks, so one poll completes it.
    fn handshake(&mut self) {
        let s = &self.settings;
        let mut builder = h2::client::Builder::new();
        builder
            .initial_window_size(s.window)
            .initial_connection_window_size(s.window.max(65_535))
            .max_header_list_size(s.max_header_list)
            .enable_push(false)
            .initial_max_send_streams(s.max_streams.min(INITIAL_MAX_STREAMS) as usize);
        let handshake = pin!(builder.handshake::<_, Bytes>(self.pipe.clone()));
        let mut cx = Context::from_waker(self.wakeups.conn());
        match handshake.poll(&mut cx) {
            Poll::Ready(Ok((mut send, conn))) => {
                self.sending = Sending::poll(&mut send, &mut cx);
                self.send = Some(send);
                self.conn = Some(conn);
                self.wakeups.conn().wake_by_ref();
            }
            Poll::Ready(Err(e)) => self.fail(format!("HTTP/2 could not start: {e}")),
            Poll::Pending => self.fail("HTTP/2 could not start its handshake".to_string()),
        }
    }

    /// Appends everything the protocol wants written to `out`, in order:
    /// the preface and SETTINGS, requests, acknowledgements, WINDOW_UPDATE.
    pub fn take_output(&mut self, out: &mut Vec<u8>) {
        self.drive();
        self.pipe.take_output(out);
    }

    /// Streams that may be opened now: the lower of `max_streams` and the
    /// server's SETTINGS_MAX_CONCURRENT_STREAMS, less those open; 0 once the
    /// connection takes no new streams.
    pub fn free_streams(&self) -> u32 {
        match &self.send {
            Some(send) if !self.is_closed() && self.sending == Sending::Ready => {
                let server = u32::try_from(send.current_max_send_streams()).unwrap_or(u32::MAX);
                self.settings
                    .max_streams
                    .min(server)
                    .saturating_sub(self.streams.open)
            }
            _ => 0,
        }
    }

    /// The server's SETTINGS arrived: its stream limit is known. Streams
    /// opened before then may exceed it and be refused, so a load
    /// generator opens none until then.
    pub fn settled(&self) -> bool {
        self.frames.settled()
    }

    /// The connection takes no new streams (a GOAWAY, an error, the end of
    /// the stream, stream ids used up): once nothing is in flight, close it
    /// and open another.
    pub fn is_closed(&self) -> bool {
        self.dead || self.sending == Sending::Closed || self.goaway.is_some() || self.conn.is_none()
    }

    /// Opens a stream for `req`: its HEADERS (and DATA) are queued for
    /// [`Http2::take_output`]. `tag` comes back with the outcome.
    pub fn open(&mut self, req: &H2Request, tag: R) -> Result<(), OpenError> {
        if self.free_streams() == 0 {
            return Err(if self.is_closed() {
                OpenError::Closed
            } else {
                OpenError::Full
            });
        }
        let Some(send) = self.send.as_mut() else {
            return Err(OpenError::Closed);
        };
        let body = req.body_bytes();
        let (response, mut stream) = send
            .send_request(req.to_request(), body.is_none())
            .map_err(|e| rejected(&e))?;
        if let Some(body) = body {
            if let Err(e) = stream.send_data(body, true) {
                stream.send_reset(h2::Reason::CANCEL);
                return Err(rejected(&e));
            }
        }
        let id = u32::from(response.stream_id());
        let slot = self.streams.insert(Stream {
            tag,
            id,
            phase: Phase::Head(response),
            status: 0,
            head_bytes: 0,
            body_bytes: 0,
            data_seen: false,
            captured: self.settings.capture.then(Captured::default),
        });
        // Polled once, so the library knows whom to wake for it; the
        // connection writes its frames.
        self.wakeups.stream(slot).wake_by_ref();
        self.wakeups.conn().wake_by_ref();
        let mut cx = Context::from_waker(self.wakeups.conn());
        self.sending = Sending::poll(send, &mut cx);
        Ok(())
    }

    /// Takes bytes received from the server; the events they complete are
    /// then ready ([`Http2::next_event`]), and usually output too (acks,
    /// WINDOW_UPDATE).
    pub fn receive(&mut self, bytes: &[u8]) {
        if self.dead {
            return;
        }
        let mut not_http2 = None;
        let (streams, events, goaway) = (&mut self.streams, &mut self.events, &mut self.goaway);
        self.frames.scan(bytes, |seen| match seen {
            Seen::Frame { kind, stream, len } => streams.count(kind, stream, len),
            Seen::GoAway { last_stream, code } => {
                // A graceful shutdown sends two; the connection was retired
                // once, by the first.
                if goaway.is_none() {
                    events.push_back((Event::GoAway { code }, None));
                }
                *goaway = Some(goaway.map_or(last_stream, |g| g.min(last_stream)));
            }
            Seen::NotHttp2(why) => not_http2 = Some(why),
        });
        if let Some(why) = not_http2 {
            self.fail(why);
            return;
        }
        self.pipe.push_input(bytes);
        self.wakeups.conn().wake_by_ref();
        self.drive();
    }

    /// The next thing that happened, oldest first.
    pub fn next_event(&mut self) -> Option<Event<R>> {
        let (event, captured) = self.events.pop_front()?;
        if let Some(captured) = captured {
            self.last = captured;
        }
        Some(event)
    }

    /// The requests opened and not yet answered, in no particular order.
    pub fn in_flight(&self) -> impl Iterator<Item = &R> {
        self.streams.slots.iter().flatten().map(|s| &s.tag)
    }

    /// Gives up the streams whose tags `expired` picks (requests past the
    /// timeout): each is reset with CANCEL, its tag appended to `out`;
    /// the connection's other streams go on. Returns how many.
    pub fn cancel(&mut self, mut expired: impl FnMut(&R) -> bool, out: &mut Vec<R>) -> usize {
        let before = out.len();
        for slot in 0..self.streams.slots.len() {
            if self.streams.slots[slot]
                .as_ref()
                .is_some_and(|s| expired(&s.tag))
            {
                // Dropping the stream's handles has the library send
                // RST_STREAM(CANCEL) for it, written at the next output.
                out.push(self.streams.remove(slot).tag);
            }
        }
        if out.len() > before {
            self.wakeups.conn().wake_by_ref();
            self.drive();
        }
        out.len() - before
    }

    /// The server closed the connection. Streams above a GOAWAY's last
    /// stream id come out as [`Event::Unprocessed`]; the rest of
    /// [`Http2::in_flight`] is lost. Returns how many were lost.
    pub fn eof(&mut self) -> usize {
        self.pipe.close_input();
        self.dead = true;
        if let Some(last) = self.goaway {
            for slot in 0..self.streams.slots.len() {
                if self.streams.slots[slot]
                    .as_ref()
                    .is_some_and(|s| s.id > last)
                {
                    let s = self.streams.remove(slot);
                    self.events
                        .push_back((Event::Unprocessed { tag: s.tag }, None));
                }
            }
        }
        self.streams.open as usize
    }

    /// The fields of the response last returned by `next_event`, names
    /// lowercase; empty unless capture is on.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.last
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_bytes()))
    }

    /// The body of the response last returned by `next_event`; empty
    /// unless capture is on.
    pub fn body(&self) -> &[u8] {
        &self.last.body
    }

    /// Polls the connection and the streams it wakes until nothing is
    /// woken (at most [`MAX_ROUNDS`] rounds).
    fn drive(&mut self) {
        for _ in 0..MAX_ROUNDS {
            if self.dead {
                return;
            }
            let conn = self.wakeups.take_conn();
            if conn {
                self.poll_conn();
            }
            let mut woken = std::mem::take(&mut self.woken);
            self.wakeups.take_streams(&mut woken);
            let idle = !conn && woken.is_empty();
            for &slot in &woken {
                self.poll_stream(slot);
            }
            self.woken = woken;
            if idle {
                break;
            }
        }
        if let Some(why) = self.broken.take() {
            self.fail(why);
        } else if self.conn.is_none() && self.streams.open > 0 {
            let why = self.ended.take().unwrap_or_else(|| {
                "the HTTP/2 connection ended with requests unanswered".to_string()
            });
            self.fail(why);
        }
    }

    fn poll_conn(&mut self) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        let mut cx = Context::from_waker(self.wakeups.conn());
        match Pin::new(conn).poll(&mut cx) {
            Poll::Pending => {}
            Poll::Ready(result) => {
                self.conn = None;
                self.sending = Sending::Closed;
                match result {
                    // After the server's GOAWAY, with nothing in flight
                    // once the streams it woke are polled, the GOAWAY event
                    // said all there is to say.
                    Ok(()) => {}
                    Err(e) if e.is_go_away() && e.is_remote() => {
                        self.ended = Some(connection_error(&e));
                    }
                    Err(e) => self.broken = Some(connection_error(&e)),
                }
                return;
            }
        }
        if let Some(send) = self.send.as_mut() {
            self.sending = Sending::poll(send, &mut cx);
        }
    }

    fn poll_stream(&mut self, slot: usize) {
        let Some(stream) = self.streams.slots.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let mut cx = Context::from_waker(self.wakeups.stream(slot));
        match stream.poll(&mut cx, self.max_capture) {
            Step::Pending => {}
            Step::Done => {
                let s = self.streams.remove(slot);
                let event = Event::Response {
                    tag: s.tag,
                    status: s.status,
                    head_bytes: s.head_bytes,
                    body_bytes: s.body_bytes,
                };
                self.events.push_back((event, s.captured));
            }
            Step::Failed(e) => self.stream_failed(slot, &e),
            Step::TooLarge => {
                self.broken =
                    Some("expected the captured body to fit within the capture size limit".into());
            }
        }
    }

    /// A stream ended in an error: above the GOAWAY it was never
    /// processed; a reset is the stream's alone; anything else is the
    /// connection failing, reported once for every stream.
    fn stream_failed(&mut self, slot: usize, e: &h2::Error) {
        let Some(id) = self.streams.slots[slot].as_ref().map(|s| s.id) else {
            return;
        };
        let above_goaway = self.goaway.is_some_and(|last| id > last);
        let reset = e.reason().filter(|_| e.is_reset());
        if !above_goaway && reset.is_none() {
            self.broken.get_or_insert_with(|| connection_error(e));
            return;
        }
        let tag = self.streams.remove(slot).tag;
        let event = match reset {
            _ if above_goaway => Event::Unprocessed { tag },
            Some(code) if e.is_remote() => Event::Reset {
                tag,
                code: u32::from(code),
            },
            _ => Event::StreamError {
                tag,
                reason: format!("HTTP/2 {e}"),
            },
        };
        self.events.push_back((event, None));
    }

    /// The connection is finished: what is in flight is lost.
    fn fail(&mut self, reason: String) {
        if !self.dead {
            self.dead = true;
            self.sending = Sending::Closed;
            self.events
                .push_back((Event::ConnectionError { reason }, None));
        }
    }
}

impl<R> Streams<R> {
    fn insert(&mut self, stream: Stream<R>) -> usize {
        let id = stream.id;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(stream);
                slot
            }
            None => {
                self.slots.push(Some(stream));
                self.slots.len() - 1
            }
        };
        self.by_id.insert(id, slot);
        self.open += 1;
        slot
    }

    /// Takes the stream out of `slot`, which must hold one.
    fn remove(&mut self, slot: usize) -> Stream<R> {
        let stream = self.slots[slot].take().expect("a stream in the slot");
        self.by_id.remove(&stream.id);
        self.free.push(slot);
        self.open -= 1;
        stream
    }

    /// Counts a frame of `len` bytes (header included) to its response.
    fn count(&mut self, kind: u8, id: u32, len: u64) {
        if id == 0 || !matches!(kind, DATA | HEADERS | CONTINUATION) {
            return;
        }
        let Some(stream) = self
            .by_id
            .get(&id)
            .and_then(|&slot| self.slots[slot].as_mut())
        else {
            return;
        };
        if kind == DATA {
            stream.data_seen = true;
        }
        if stream.data_seen {
            stream.body_bytes += len;
        } else {
            stream.head_bytes = stream
                .head_bytes
                .saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
        }
    }
}

impl<R> Stream<R> {
    /// Moves the response along as far as what was received allows,
    /// giving back flow-control capacity for every DATA frame.
    fn poll(&mut self, cx: &mut Context<'_>, max_capture: usize) -> Step {
        loop {
            match &mut self.phase {
                Phase::Head(response) => match Pin::new(response).poll(cx) {
                    Poll::Pending => return Step::Pending,
                    Poll::Ready(Err(e)) => return Step::Failed(e),
                    Poll::Ready(Ok(response)) => {
                        self.status = response.status().as_u16();
                        let (parts, body) = response.into_parts();
                        if let Some(captured) = self.captured.as_mut() {
                            captured.headers = parts.headers;
                        }
                        self.phase = Phase::Body(body);
                    }
                },
                Phase::Body(body) => match body.poll_data(cx) {
                    Poll::Pending => return Step::Pending,
                    Poll::Ready(Some(Ok(data))) => {
                        // Cannot fail: the bytes were just received.
                        let _ = body.flow_control().release_capacity(data.len());
                        if let Some(captured) = self.captured.as_mut() {
                            if captured.body.len() + data.len() > max_capture {
                                return Step::TooLarge;
                            }
                            captured.body.extend_from_slice(&data);
                        }
                    }
                    Poll::Ready(Some(Err(e))) => return Step::Failed(e),
                    Poll::Ready(None) => {
                        return match body.poll_trailers(cx) {
                            Poll::Pending => Step::Pending,
                            Poll::Ready(Ok(_)) => Step::Done,
                            Poll::Ready(Err(e)) => Step::Failed(e),
                        }
                    }
                },
            }
        }
    }
}

fn rejected(e: &h2::Error) -> OpenError {
    if e.is_go_away() || e.is_io() {
        OpenError::Closed
    } else {
        OpenError::Rejected(e.to_string())
    }
}

fn connection_error(e: &h2::Error) -> String {
    format!("HTTP/2 {e}")
}

/// Stream ids are small odd numbers handed out in order: spreading them
/// with one multiplication hashes well enough, far cheaper than the
/// default hasher.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests;
