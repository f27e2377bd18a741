//! HTTP/2 (RFC 9113) as a client [`Session`] of the load generator's own,
//! doing only what a load generator needs, on the path of every request.
//!
//! Frames are parsed where they lie in the read buffer (only a frame cut
//! off by the end of a read is copied, to wait for its rest). A request's
//! header block is encoded once per distinct request ([`Framed`], cached on
//! the request) and written as it is on every connection; response header
//! blocks go through HPACK decoding (the dynamic table must follow the
//! server), but only `:status` and `content-length` are looked at unless a
//! script reads responses. DATA is counted, not copied, unless a script
//! reads bodies. Receive windows are large and given back in batches, so
//! flow control costs a WINDOW_UPDATE per several megabytes. Everything
//! the session writes collects in one buffer, which the connection writes
//! with one call per loop turn for all its streams.
//!
//! Errors follow RFC 9113 §5.4: a stream error resets that stream and
//! loses its request, the connection goes on; a connection error sends
//! GOAWAY and fails the connection. A GOAWAY from the server retires the
//! session: streams above its last stream id come out as
//! [`Event::Unprocessed`] (never processed, so safe to send again), the
//! rest finish, and no new stream opens. RST_STREAM with REFUSED_STREAM is
//! unprocessed too.

mod frame;
pub mod greeting;
pub mod preflight;
mod request;
mod streams;

use std::collections::VecDeque;

use metron_hpack::Decoder;

use crate::clock::Nanos;

use super::outbox::Outbox;
use super::section::Section;
use super::session::{Captured, Event, Failure, Info, OpenError, Request, Retirement, Session};
use super::sse::EventReading;
use super::version::Protocol;
use frame::*;
use streams::{Phase, Stream, Streams};

pub use frame::REFUSED_STREAM;
pub use request::Framed;

/// Streams open at once on one connection unless told otherwise (`-m`'s
/// default, as h2load's).
pub const DEFAULT_MAX_STREAMS: u32 = 100;
/// Receive windows (per stream and for the connection) unless told
/// otherwise: large, so that a load generator never holds a fast server
/// back on flow control.
pub const DEFAULT_WINDOW: u32 = 16 << 20;
/// The largest response head (decoded fields, as HTTP/2 counts them)
/// accepted unless told otherwise, as for HTTP/1.1.
pub const DEFAULT_MAX_HEADER_LIST: u32 = 64 * 1024;
/// The largest stream id a client may open.
const MAX_STREAM_ID: u32 = (1 << 31) - 1;
/// The most a captured body may hold; beyond it the response is lost, as
/// for HTTP/1.1.
const MAX_CAPTURE: usize = crate::http::capture::DEFAULT_MAX_CAPTURE;

/// How the session talks to the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Streams open at once (`-m`); the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS lowers it. At least 1.
    pub max_streams: u32,
    /// Our receive window, per stream and for the connection.
    pub window: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: the largest response head accepted.
    pub max_header_list: u32,
    /// Keep each response's fields and body for a script.
    pub capture: bool,
    /// `--sse`: read each response body as an event stream.
    pub reading: EventReading,
    /// `:scheme` ("http" or "https").
    pub scheme: &'static str,
    /// `:authority` of a request that names no Host.
    pub authority: String,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            max_streams: DEFAULT_MAX_STREAMS,
            window: DEFAULT_WINDOW,
            max_header_list: DEFAULT_MAX_HEADER_LIST,
            capture: false,
            reading: EventReading::Off,
            scheme: "http",
            authority: "localhost".to_string(),
        }
    }
}

/// What the server's SETTINGS said (or the protocol's defaults before).
#[derive(Clone, Copy, Debug)]
struct Server {
    max_streams: u32,
    initial_window: u32,
    max_frame: u32,
}

/// A header block under way: HEADERS without END_HEADERS, waiting for its
/// CONTINUATION frames.
#[derive(Clone, Copy, Debug)]
struct Continued {
    stream: u32,
    end_stream: bool,
    /// Bytes of its frames so far, headers included.
    wire: u64,
}

/// One HTTP/2 connection's client session; `T` tags each request.
pub struct Http2<T> {
    settings: Settings,
    server: Server,
    /// The first bytes of a response came, whether or not it completed:
    /// a close after that ends a conversation, not a turning away.
    heard: bool,
    /// The server's SETTINGS came: its limits are known.
    settled: bool,
    /// Bytes to write, and bytes sent over the connection's life.
    out: Outbox,
    /// The start of a frame cut off by the end of the last read.
    input: Vec<u8>,
    decoder: Decoder,
    streams: Streams<T>,
    events: VecDeque<Event<T>>,
    /// The captures of the responses in `events`, in order (capture only).
    captures: VecDeque<Box<Captured>>,
    /// The capture of the last response returned by `poll_event`.
    last: Captured,
    /// Captures ready for the next streams: boxed, they move between the
    /// streams, the events and here without being copied or reallocated.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Captured>>,
    /// Connection-level send window (request bodies).
    send_window: i64,
    /// DATA received on the connection and not yet given back.
    unacked: u32,
    next_id: u32,
    continued: Option<Continued>,
    block: Vec<u8>,
    /// The lowest last stream id of the server's GOAWAYs.
    goaway: Option<u32>,
    /// A connection error, or the end of the stream: nothing more is read
    /// or opened.
    failed: bool,
    /// A write failed: nothing more is sent or opened.
    unwritable: bool,
    /// Streams whose body waits for send window, by id.
    blocked: Vec<u32>,
    /// The most a captured body may hold; beyond it the response is
    /// lost, as for HTTP/1.1.
    max_capture: usize,
}

impl<T: Clone> Http2<T> {
    /// A session whose preface, SETTINGS and connection window are ready
    /// to be written.
    pub fn new(settings: Settings) -> Http2<T> {
        let settings = Settings {
            max_streams: settings.max_streams.max(1),
            // The connection's window can only grow from its initial size.
            window: settings.window.clamp(INITIAL_WINDOW, MAX_WINDOW),
            ..settings
        };
        let mut out = Outbox::with_capacity(4096);
        out.buf().extend_from_slice(PREFACE);
        put_settings(
            out.buf(),
            &[
                (SETTINGS_ENABLE_PUSH, 0),
                (SETTINGS_INITIAL_WINDOW_SIZE, settings.window),
                (SETTINGS_MAX_HEADER_LIST_SIZE, settings.max_header_list),
            ],
        );
        if settings.window > INITIAL_WINDOW {
            put_window_update(out.buf(), 0, settings.window - INITIAL_WINDOW);
        }
        Http2 {
            heard: false,
            server: Server {
                // Unbounded until the server says otherwise; nothing opens
                // before it has.
                max_streams: u32::MAX,
                initial_window: INITIAL_WINDOW,
                max_frame: MIN_MAX_FRAME,
            },
            settled: false,
            out,
            input: Vec::new(),
            decoder: Decoder::new(metron_hpack::DEFAULT_TABLE_SIZE),
            streams: Streams::new(settings.max_streams as usize),
            events: VecDeque::new(),
            captures: VecDeque::new(),
            last: Captured::default(),
            spare: Vec::new(),
            send_window: i64::from(INITIAL_WINDOW),
            unacked: 0,
            next_id: 1,
            continued: None,
            block: Vec::new(),
            goaway: None,
            failed: false,
            unwritable: false,
            blocked: Vec::new(),
            max_capture: MAX_CAPTURE,
            settings,
        }
    }

    /// Handles every whole frame at the start of `bytes`; returns the
    /// bytes used (the rest is the start of a frame yet to come).
    fn frames(&mut self, bytes: &[u8], now: Nanos) -> usize {
        let mut at = 0;
        while !self.failed {
            let rest = &bytes[at..];
            if !self.settled && rest.starts_with(b"HTTP/") {
                // An HTTP/1 server answering the preface.
                self.fail(Failure::Malformed);
                break;
            }
            let Some(head) = Head::parse(rest) else {
                break;
            };
            if head.len > MIN_MAX_FRAME as usize {
                self.connection_error(FRAME_SIZE_ERROR);
                break;
            }
            let Some(payload) = rest.get(HEADER_LEN..HEADER_LEN + head.len) else {
                break;
            };
            self.frame(head, payload, now);
            at += HEADER_LEN + head.len;
        }
        at
    }

    fn frame(&mut self, h: Head, payload: &[u8], now: Nanos) {
        if !self.settled && h.kind != SETTINGS {
            // The server's preface is a SETTINGS frame (§3.4).
            return self.connection_error(PROTOCOL_ERROR);
        }
        if let Some(c) = self.continued {
            if h.kind != CONTINUATION || h.stream != c.stream {
                return self.connection_error(PROTOCOL_ERROR);
            }
        }
        match h.kind {
            DATA => self.on_data(h, payload, now),
            HEADERS => self.on_headers(h, payload, now),
            CONTINUATION => self.on_continuation(h, payload, now),
            RST_STREAM => self.on_rst_stream(h, payload),
            SETTINGS => self.on_settings(h, payload),
            PING => self.on_ping(h, payload),
            GOAWAY => self.on_goaway(h, payload),
            WINDOW_UPDATE => self.on_window_update(h, payload),
            // Pushes were refused in our SETTINGS (§8.4).
            PUSH_PROMISE => self.connection_error(PROTOCOL_ERROR),
            PRIORITY if h.stream == 0 => self.connection_error(PROTOCOL_ERROR),
            PRIORITY if payload.len() != 5 => self.connection_error(FRAME_SIZE_ERROR),
            // PRIORITY is advice for servers; unknown types are ignored (§4.1).
            _ => {}
        }
    }

    fn on_data(&mut self, h: Head, payload: &[u8], now: Nanos) {
        if h.stream == 0 {
            return self.connection_error(PROTOCOL_ERROR);
        }
        // The whole payload, padding included, counts against the windows.
        let len = payload.len() as u32;
        self.unacked += len;
        if self.unacked >= self.settings.window / 2 {
            put_window_update(self.out.buf(), 0, self.unacked);
            self.unacked = 0;
        }
        let Some(data) = unpad(&h, payload) else {
            return self.connection_error(PROTOCOL_ERROR);
        };
        let Some(slot) = self.streams.find(h.stream) else {
            return self.unknown_stream(h.stream);
        };
        let stream = self.streams.get_mut(slot);
        if stream.phase == Phase::Head {
            return self.stream_error(slot, PROTOCOL_ERROR, Failure::Malformed);
        }
        stream.wire += (HEADER_LEN + payload.len()) as u64;
        stream.first_byte.get_or_insert(now);
        self.heard = true;
        stream.data += data.len() as u64;
        if let Some(c) = stream.captured.as_mut() {
            if !c.push_body(data, self.max_capture) {
                return self.stream_error(slot, CANCEL, Failure::BodyTooLarge);
            }
        }
        if let Some(events) = stream.events.as_mut() {
            events.read(data, &stream.tag, now, &mut self.events);
        }
        if h.has(END_STREAM) {
            return self.end(slot, now);
        }
        stream.unacked += len;
        if stream.unacked >= self.settings.window / 2 {
            put_window_update(self.out.buf(), h.stream, stream.unacked);
            stream.unacked = 0;
        }
    }

    fn on_headers(&mut self, h: Head, payload: &[u8], now: Nanos) {
        if h.stream == 0 {
            return self.connection_error(PROTOCOL_ERROR);
        }
        let Some(fragment) = unpad(&h, payload) else {
            return self.connection_error(PROTOCOL_ERROR);
        };
        let wire = (HEADER_LEN + payload.len()) as u64;
        if h.has(END_HEADERS) {
            return self.on_block(h.stream, fragment, h.has(END_STREAM), wire, now);
        }
        self.block.clear();
        self.block.extend_from_slice(fragment);
        self.continued = Some(Continued {
            stream: h.stream,
            end_stream: h.has(END_STREAM),
            wire,
        });
    }

    fn on_continuation(&mut self, h: Head, payload: &[u8], now: Nanos) {
        let Some(mut c) = self.continued.take() else {
            return self.connection_error(PROTOCOL_ERROR);
        };
        c.wire += (HEADER_LEN + payload.len()) as u64;
        self.block.extend_from_slice(payload);
        // A block may not grow without bound while it waits for its end:
        // past twice the limit it was asked for, the head is too large.
        // The block cannot be skipped (it may change the decoder's table),
        // so the connection ends, with that cause.
        if self.block.len() > 2 * self.settings.max_header_list as usize + 4096 {
            if !self.failed {
                put_goaway(self.out.buf(), 0, ENHANCE_YOUR_CALM);
                self.fail(Failure::HeadTooLarge);
            }
            return;
        }
        if !h.has(END_HEADERS) {
            self.continued = Some(c);
            return;
        }
        let block = std::mem::take(&mut self.block);
        self.on_block(c.stream, &block, c.end_stream, c.wire, now);
        self.block = block;
    }

    /// A whole header block arrived on `id`: a response head (interim or
    /// final), or trailers.
    fn on_block(&mut self, id: u32, block: &[u8], end_stream: bool, wire: u64, now: Nanos) {
        let slot = self.streams.find(id);
        if slot.is_none() && id >= self.next_id {
            // The server cannot open streams, and pushes were refused.
            return self.connection_error(PROTOCOL_ERROR);
        }
        let mut head = Section::default();
        let mut capture = slot.and_then(|s| {
            let stream = self.streams.get_mut(s);
            let trailers = stream.phase == Phase::Body;
            let captured = stream.captured.as_deref_mut()?;
            // A head replaces an interim head's fields; trailers add to
            // the head's.
            if !trailers {
                captured.clear_fields();
            }
            Some(captured)
        });
        // Every block is decoded, even for a stream already given up: the
        // dynamic table must follow the server's.
        let decoded = self.decoder.decode(block, &mut |name, value| {
            head.see(name, value);
            if let Some(c) = capture.as_deref_mut() {
                if !name.starts_with(b":") {
                    c.push_field(std::str::from_utf8(name).unwrap_or_default(), value);
                }
            }
        });
        if decoded.is_err() {
            return self.connection_error(COMPRESSION_ERROR);
        }
        let Some(slot) = slot else {
            return;
        };
        let stream = self.streams.get_mut(slot);
        stream.wire += wire;
        stream.first_byte.get_or_insert(now);
        self.heard = true;
        if head.list_size > self.settings.max_header_list as u64 {
            return self.stream_error(slot, CANCEL, Failure::HeadTooLarge);
        }
        if head.malformed {
            return self.stream_error(slot, PROTOCOL_ERROR, Failure::Malformed);
        }
        match (stream.phase, head.status) {
            // Trailers: they end the stream and carry no pseudo-field.
            (Phase::Body, None) if end_stream => {
                stream.grpc_status = head.grpc_status.or(stream.grpc_status);
                self.end(slot, now)
            }
            (Phase::Body, _) => self.stream_error(slot, PROTOCOL_ERROR, Failure::Malformed),
            (Phase::Head, None) => self.stream_error(slot, PROTOCOL_ERROR, Failure::Malformed),
            // Interim (1xx) heads are counted and skipped (§8.1).
            (Phase::Head, Some(status)) if (100..200).contains(&status) && status != 101 => {
                if end_stream {
                    self.stream_error(slot, PROTOCOL_ERROR, Failure::Malformed);
                }
            }
            (Phase::Head, Some(status)) => {
                stream.status = status;
                stream.length = head.length;
                stream.phase = Phase::Body;
                // A call that failed at once answers with its status in
                // the head alone (trailers-only).
                stream.grpc_status = head.grpc_status;
                if end_stream {
                    self.end(slot, now);
                }
            }
        }
    }

    /// The stream ended (END_STREAM): its response is complete, unless its
    /// body disagrees with its Content-Length (§8.1.1).
    fn end(&mut self, slot: usize, now: Nanos) {
        let stream = self.streams.get_mut(slot);
        let bodiless = stream.head || matches!(stream.status, 204 | 304);
        if !bodiless && stream.length.is_some_and(|l| l != stream.data) {
            return self.stream_error(slot, PROTOCOL_ERROR, Failure::Malformed);
        }
        if stream.body.is_some() {
            // The server answered before the whole request body went out:
            // the rest is not wanted (§8.1).
            put_rst_stream(self.out.buf(), stream.id, NO_ERROR);
        }
        let s = self.streams.remove(slot);
        if let Some(captured) = s.captured {
            self.captures.push_back(captured);
        }
        let events = s.events.map_or((0, None), |e| e.finish());
        let answered = Event::answered(
            s.tag,
            s.status,
            s.wire,
            s.first_byte,
            now,
            events,
            s.grpc_status,
        );
        self.events.push_back(answered);
    }

    fn on_rst_stream(&mut self, h: Head, payload: &[u8]) {
        if h.stream == 0 {
            return self.connection_error(PROTOCOL_ERROR);
        }
        if payload.len() != 4 {
            return self.connection_error(FRAME_SIZE_ERROR);
        }
        let Some(slot) = self.streams.find(h.stream) else {
            return self.unknown_stream(h.stream);
        };
        let code = be_u32(payload);
        let s = self.remove(slot);
        self.events.push_back(if code == REFUSED_STREAM {
            Event::Unprocessed { tag: s.tag }
        } else {
            Event::Lost {
                tag: s.tag,
                why: Failure::Reset(Some(code)),
            }
        });
    }

    fn on_settings(&mut self, h: Head, payload: &[u8]) {
        if h.stream != 0 {
            return self.connection_error(PROTOCOL_ERROR);
        }
        if h.has(ACK) {
            if !payload.is_empty() {
                self.connection_error(FRAME_SIZE_ERROR);
            }
            return;
        }
        if payload.len() % 6 != 0 {
            return self.connection_error(FRAME_SIZE_ERROR);
        }
        for entry in payload.chunks_exact(6) {
            let value = be_u32(&entry[2..]);
            match u16::from_be_bytes([entry[0], entry[1]]) {
                SETTINGS_MAX_CONCURRENT_STREAMS => self.server.max_streams = value,
                SETTINGS_INITIAL_WINDOW_SIZE if value > MAX_WINDOW => {
                    return self.connection_error(FLOW_CONTROL_ERROR)
                }
                SETTINGS_INITIAL_WINDOW_SIZE => {
                    let delta = i64::from(value) - i64::from(self.server.initial_window);
                    self.streams.for_each_mut(|s| s.send_window += delta);
                    self.server.initial_window = value;
                }
                SETTINGS_MAX_FRAME_SIZE if !(MIN_MAX_FRAME..=MAX_MAX_FRAME).contains(&value) => {
                    return self.connection_error(PROTOCOL_ERROR)
                }
                SETTINGS_MAX_FRAME_SIZE => self.server.max_frame = value,
                SETTINGS_ENABLE_PUSH if value > 1 => return self.connection_error(PROTOCOL_ERROR),
                // The header table size bounds an encoder that indexes;
                // ours never adds to the server's table.
                _ => {}
            }
        }
        put_settings_ack(self.out.buf());
        self.settled = true;
        self.send_blocked();
    }

    fn on_ping(&mut self, h: Head, payload: &[u8]) {
        if h.stream != 0 {
            return self.connection_error(PROTOCOL_ERROR);
        }
        if payload.len() != 8 {
            return self.connection_error(FRAME_SIZE_ERROR);
        }
        if !h.has(ACK) {
            put_ping_ack(self.out.buf(), payload);
        }
    }

    fn on_goaway(&mut self, h: Head, payload: &[u8]) {
        if h.stream != 0 {
            return self.connection_error(PROTOCOL_ERROR);
        }
        if payload.len() < 8 {
            return self.connection_error(FRAME_SIZE_ERROR);
        }
        let last = be_u32(payload) & MAX_STREAM_ID;
        let code = be_u32(&payload[4..]);
        // A graceful shutdown sends two: the first retires the connection
        // (and is the one counted), the second names the last stream.
        if self.goaway.is_none() {
            self.events.push_back(Event::GoAway { code });
        }
        let last = self.goaway.map_or(last, |g| g.min(last));
        self.goaway = Some(last);
        // Streams above it were never processed (§6.8).
        for slot in self.streams.slots_where(|s| s.id > last) {
            let s = self.remove(slot);
            self.events.push_back(Event::Unprocessed { tag: s.tag });
        }
    }

    fn on_window_update(&mut self, h: Head, payload: &[u8]) {
        if payload.len() != 4 {
            return self.connection_error(FRAME_SIZE_ERROR);
        }
        let increment = i64::from(be_u32(payload) & MAX_WINDOW);
        if h.stream == 0 {
            if increment == 0 {
                return self.connection_error(PROTOCOL_ERROR);
            }
            self.send_window += increment;
            if self.send_window > i64::from(MAX_WINDOW) {
                return self.connection_error(FLOW_CONTROL_ERROR);
            }
        } else {
            let Some(slot) = self.streams.find(h.stream) else {
                return self.unknown_stream(h.stream);
            };
            if increment == 0 {
                return self.stream_error(slot, PROTOCOL_ERROR, Failure::Malformed);
            }
            let stream = self.streams.get_mut(slot);
            stream.send_window += increment;
            if stream.send_window > i64::from(MAX_WINDOW) {
                return self.stream_error(slot, FLOW_CONTROL_ERROR, Failure::Malformed);
            }
        }
        self.send_blocked();
    }

    /// A frame for a stream not open: one we gave up or finished may still
    /// see frames in flight; one never opened is an error (§5.1).
    fn unknown_stream(&mut self, id: u32) {
        if id >= self.next_id {
            self.connection_error(PROTOCOL_ERROR);
        }
    }

    /// Sends as much of `slot`'s body as the windows allow; it waits among
    /// the blocked streams for the rest.
    fn send_body(&mut self, slot: usize) {
        let max_frame = self.server.max_frame as i64;
        let stream = self.streams.get_mut(slot);
        let Some((body, sent)) = stream.body.as_mut() else {
            return;
        };
        while *sent < body.len() {
            let room = self.send_window.min(stream.send_window).min(max_frame);
            if room <= 0 {
                if !self.blocked.contains(&stream.id) {
                    self.blocked.push(stream.id);
                }
                return;
            }
            let n = (body.len() - *sent).min(room as usize);
            let last = *sent + n == body.len();
            put_data(self.out.buf(), stream.id, &body[*sent..*sent + n], last);
            stream.end = self.out.end();
            *sent += n;
            self.send_window -= n as i64;
            stream.send_window -= n as i64;
        }
        stream.body = None;
    }

    /// Bodies that waited for window go on, as far as it now allows.
    fn send_blocked(&mut self) {
        if self.blocked.is_empty() {
            return;
        }
        for id in std::mem::take(&mut self.blocked) {
            if let Some(slot) = self.streams.find(id) {
                self.send_body(slot);
            }
        }
    }

    /// Removes a stream, its capture going back to the spares.
    fn remove(&mut self, slot: usize) -> Stream<T> {
        let mut s = self.streams.remove(slot);
        if let Some(mut c) = s.captured.take() {
            c.clear();
            self.spare.push(c);
        }
        s
    }

    /// Resets the stream in `slot` with `code`: its request is lost.
    fn stream_error(&mut self, slot: usize, code: u32, why: Failure) {
        let s = self.remove(slot);
        put_rst_stream(self.out.buf(), s.id, code);
        self.events.push_back(Event::Lost { tag: s.tag, why });
    }

    /// The server broke the protocol: GOAWAY with `code`, and the
    /// connection fails.
    fn connection_error(&mut self, code: u32) {
        if !self.failed {
            put_goaway(self.out.buf(), 0, code);
            self.fail(Failure::Protocol);
        }
    }

    /// Nothing more is read or opened. The engine hears of it when
    /// requests are lost with it, or when the server broke the protocol
    /// (counted even before any stream opened).
    fn fail(&mut self, why: Failure) {
        if !self.failed {
            self.failed = true;
            self.continued = None;
            if self.streams.open() > 0 || why == Failure::Protocol {
                self.events.push_back(Event::Failed { why });
            }
        }
    }
}

impl<T: Clone> Session<T> for Http2<T> {
    fn is_ready(&self) -> bool {
        self.settled
    }

    fn has_heard(&self) -> bool {
        self.heard
    }

    fn free_streams(&self) -> u32 {
        if !self.settled || self.is_retired() {
            return 0;
        }
        let limit = self.settings.max_streams.min(self.server.max_streams);
        limit.saturating_sub(self.streams.open())
    }

    fn retirement(&self) -> Option<Retirement> {
        if self.goaway.is_some() {
            Some(Retirement::Asked)
        } else if self.failed || self.unwritable || self.next_id > MAX_STREAM_ID {
            Some(Retirement::Ended)
        } else {
            None
        }
    }

    fn is_finished(&self) -> bool {
        self.events.is_empty() && (self.failed || (self.is_retired() && self.streams.open() == 0))
    }

    fn open(&mut self, request: &Request, tag: T, _now: Nanos) -> Result<(), (OpenError, T)> {
        if self.is_retired() {
            return Err((OpenError::Retired, tag));
        }
        if self.free_streams() == 0 {
            return Err((OpenError::Full, tag));
        }
        let (scheme, authority) = (self.settings.scheme, &self.settings.authority);
        let convert = |wire: &[u8]| Framed::from_http1(wire, scheme, authority);
        let framed = match request.framed_for(Protocol::Http2, convert) {
            Ok(framed) => framed,
            Err(e) => return Err((e, tag)),
        };
        let id = self.next_id;
        self.next_id += 2;
        let bodiless = framed.body.is_empty();
        put_headers(
            self.out.buf(),
            id,
            &framed.block,
            bodiless,
            self.server.max_frame as usize,
        );
        let head_end = self.out.end();
        let captured = self
            .settings
            .capture
            .then(|| self.spare.pop().unwrap_or_default());
        let slot = self.streams.insert(Stream {
            tag,
            id,
            head: framed.head,
            phase: Phase::Head,
            status: 0,
            grpc_status: None,
            length: None,
            data: 0,
            wire: 0,
            first_byte: None,
            unacked: 0,
            send_window: i64::from(self.server.initial_window),
            body: (!bodiless).then(|| (framed.body.clone(), 0)),
            captured,
            events: self.settings.reading.reader(),
            head_end,
            end: head_end,
        });
        self.send_body(slot);
        Ok(())
    }

    fn handle(&mut self, bytes: &[u8], now: Nanos) {
        if self.failed {
            return;
        }
        if self.input.is_empty() {
            let used = self.frames(bytes, now);
            if !self.failed {
                self.input.extend_from_slice(&bytes[used..]);
            }
            return;
        }
        let mut input = std::mem::take(&mut self.input);
        input.extend_from_slice(bytes);
        let used = self.frames(&input, now);
        if !self.failed {
            input.drain(..used);
            self.input = input;
        }
    }

    fn handle_eof(&mut self, _now: Nanos) {
        // Streams above a GOAWAY came out unprocessed; the rest are lost.
        self.fail(Failure::Closed);
    }

    fn poll_event(&mut self) -> Option<Event<T>> {
        let event = self.events.pop_front()?;
        if let Event::Response { .. } = event {
            if let Some(mut c) = self.captures.pop_front() {
                std::mem::swap(&mut *c, &mut self.last);
                c.clear();
                self.spare.push(c);
            }
        }
        Some(event)
    }

    fn transmit(&mut self, _now: Nanos) -> &[u8] {
        self.out.pending()
    }

    fn transmitted(&mut self, n: usize) {
        self.out.advance(n);
    }

    fn handle_write_error(&mut self, _now: Nanos) {
        let sent = self.out.sent();
        for slot in self
            .streams
            .slots_where(|s| s.end > sent || s.body.is_some())
        {
            let s = self.remove(slot);
            self.events.push_back(if s.head_end > sent {
                Event::Unprocessed { tag: s.tag }
            } else {
                Event::Lost {
                    tag: s.tag,
                    why: Failure::Write,
                }
            });
        }
        // What the server sent before it stopped (its GOAWAY) may still be
        // read; nothing more goes out.
        self.unwritable = true;
        self.out.discard();
    }

    fn in_flight(&self) -> usize {
        self.streams.open() as usize
    }

    fn for_each_in_flight(&self, each: &mut dyn FnMut(&T, Option<Nanos>)) {
        self.streams
            .for_each(|s| each(&s.tag, s.events.as_ref().and_then(|e| e.last())));
    }

    /// Resets each expired stream with CANCEL; the connection goes on.
    fn expire(&mut self, expired: &mut dyn FnMut(&T) -> bool, gone: &mut Vec<T>, _now: Nanos) {
        for slot in self.streams.slots_where(|s| expired(&s.tag)) {
            let s = self.remove(slot);
            put_rst_stream(self.out.buf(), s.id, CANCEL);
            gone.push(s.tag);
        }
    }

    fn drain(&mut self, into: &mut Vec<T>) {
        self.failed = true;
        for slot in self.streams.slots_where(|_| true) {
            into.push(self.remove(slot).tag);
        }
    }

    fn captured(&self) -> &Captured {
        &self.last
    }

    fn info(&self) -> Info {
        Info {
            handshake_complete: self.is_ready(),
            server_limit: self.settled.then_some(self.server.max_streams),
            ..Info::default()
        }
    }

    fn held_by_server(&self) -> bool {
        self.settled && self.server.max_streams < self.settings.max_streams
    }
}

#[cfg(test)]
mod tests;
