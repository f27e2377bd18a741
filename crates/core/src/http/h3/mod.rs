//! HTTP/3 (RFC 9114) as a client [`Session`], over QUIC from quinn-proto:
//! a sans-I/O connection this session drives with the datagrams the
//! engine hands it, the datagrams it asks to send, and the deadlines it
//! names (loss detection, acknowledgements, idle), the engine owning the
//! UDP socket and the clock.
//!
//! The framing and field compression are this module's: each request is a
//! bidirectional stream carrying a HEADERS frame (QPACK, static table
//! only: `qpack`), DATA for a body, and the end of the stream; the
//! response comes back the same way. The client's control stream carries
//! its SETTINGS (no dynamic QPACK table, so no stream ever blocks on
//! another); the server's control stream brings its SETTINGS and GOAWAY.
//! A GOAWAY retires the session: requests at or above its stream id were
//! never processed, as are those the server rejects with
//! H3_REQUEST_REJECTED, and they come out as [`Event::Unprocessed`].
//!
//! What a response asks to send back (QUIC's acknowledgement) waits up to
//! [`ACK_HOLD`] for the next request to carry it, instead of a datagram of
//! its own.
//!
//! With `--0rtt`, a connection that resumes a TLS session whose ticket
//! allows early data is ready at once: its control stream and its first
//! requests go out as 0-RTT, in the handshake's first flight. A server may
//! refuse them, and says so only as the handshake ends; it then processed
//! none of them, and QUIC forgets every stream opened (their ids start
//! again from 0), so the requests come out as [`Event::Unprocessed`], to be
//! sent again on the connection now open, and the control stream opens
//! anew.

mod frame;
pub mod preflight;
mod qpack;
mod quic;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

use bytes::Bytes;
use quinn_proto::{Dir, StreamEvent, StreamId, VarInt};

use crate::clock::Nanos;

use super::fields::FieldRequest;
use super::section::Section;
use super::session::{
    Captured, Event, Failure, Info, OpenError, Packets, Request, Retirement, Session,
};
use super::sse::{EventReading, EventStream};
use super::version::Protocol;
use frame::*;
pub use frame::{code_name, ERROR_CODES};
pub use quic::{QuicFacts, QuicOptions, Refusal};

/// The most a captured body may hold; beyond it the response is lost, as
/// for HTTP/1.1.
const MAX_CAPTURE: usize = crate::http::capture::DEFAULT_MAX_CAPTURE;

/// One request as the session writes it, built once: its HEADERS frame
/// (QPACK, static table only, so the same bytes serve every connection)
/// and its body.
struct Framed {
    headers: Vec<u8>,
    body: Bytes,
    head: bool,
}

impl Framed {
    fn from_http1(wire: &[u8], scheme: &str, authority: &str) -> Result<Framed, String> {
        let r = FieldRequest::one_from_http1(wire, scheme, authority, Protocol::Http3)?;
        let mut section = Vec::new();
        qpack::encode(&r.fields(), &mut section);
        let mut headers = Vec::with_capacity(section.len() + 4);
        put_head(&mut headers, HEADERS, section.len());
        headers.extend_from_slice(&section);
        Ok(Framed {
            headers,
            body: r.body().clone(),
            head: r.is_head(),
        })
    }
}

/// Where a response is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No final head yet.
    Head,
    Body,
}

/// Where the reading of a stream's frames is.
#[derive(Debug)]
enum Reading {
    /// The next frame's header, as far as it came.
    Header(Vec<u8>),
    /// A HEADERS frame's field section, `left` bytes to come.
    Section { left: u64 },
    /// A DATA frame's payload, `left` bytes to come.
    Data { left: u64 },
    /// Another frame's payload, skipped.
    Skip { left: u64 },
}

/// One request in flight.
struct Stream<T> {
    tag: T,
    head: bool,
    phase: Phase,
    status: u16,
    length: Option<u64>,
    /// `grpc-status`, from the head or the trailers, for the call layer.
    grpc_status: Option<u8>,
    data: u64,
    /// Bytes received on it, frame headers included.
    wire: u64,
    first_byte: Option<Nanos>,
    reading: Reading,
    section: Vec<u8>,
    /// Request bytes the QUIC stream has not taken yet, and whether its
    /// end is still to be sent.
    out: Vec<u8>,
    fin: bool,
    captured: Option<Box<Captured>>,
    /// `--sse`: its response body read as an event stream.
    events: Option<Box<EventStream>>,
}

/// A server-opened unidirectional stream.
#[derive(Debug)]
enum Uni {
    /// Its type has not arrived whole.
    Typing(Vec<u8>),
    /// The control stream: its frames, the kind of the one being read,
    /// and whether SETTINGS (which must come first) came.
    Control {
        reading: Reading,
        kind: u64,
        payload: Vec<u8>,
        settled: bool,
    },
    /// QPACK's streams (empty with no dynamic table) and unknown types:
    /// read and dropped.
    Drained,
}

/// The largest control frame payload read (SETTINGS, GOAWAY): anything
/// longer is not a sane server's.
const MAX_CONTROL_FRAME: u64 = 16 * 1024;

/// How long what a response asks to send (its acknowledgement) may wait
/// for the next request on the connection to carry it. QUIC acknowledges
/// every second packet at once by default; with one small response per
/// request that is a datagram, a system call, for every two requests,
/// which at a steady rate mostly falls between requests. Held this long
/// it rides with the next request instead. Far below the 25 ms this
/// client tells the server it may delay an acknowledgement by
/// (`max_ack_delay`), so the server's loss detection never waits on it.
/// Not while a response body is arriving: the server's sending is paced
/// by those acknowledgements.
const ACK_HOLD: Nanos = 1_000_000;

/// The longest a server may delay an acknowledgement (QUIC's default
/// max_ack_delay, which servers keep), after which a stream's credit is
/// due back; see [`Http3::starve_grace`].
const STARVE_ACK_DELAY: Nanos = 25_000_000;

/// One HTTP/3 connection's client session; `T` tags each request.
pub struct Http3<T> {
    quic: quic::Quic,
    /// The first bytes of a response came, whether or not it completed:
    /// a close after that ends a conversation, not a turning away.
    heard: bool,
    max_streams: u32,
    max_field_section: u64,
    capture: bool,
    reading: EventReading,
    scheme: &'static str,
    authority: String,
    /// The handshake completed.
    connected: bool,
    /// Streams may open before the handshake completes, as 0-RTT
    /// (`--0rtt`, a resumed session whose ticket allows early data).
    early: bool,
    control: Option<StreamId>,
    control_out: Vec<u8>,
    streams: HashMap<StreamId, Stream<T>>,
    uni: HashMap<StreamId, Uni>,
    events: VecDeque<Event<T>>,
    captures: VecDeque<Box<Captured>>,
    last: Captured,
    /// The server's GOAWAY: streams at or above this id were never
    /// processed.
    goaway: Option<u64>,
    /// Request streams opened in QUIC ahead of their requests, lowest id
    /// first: as many as `-m` and the server's stream credit allow
    /// together (see [`Http3::reserve`]). Nothing goes on the wire for
    /// one until a request takes it.
    reserved: VecDeque<StreamId>,
    /// The server's credit stopped the last reserve short of `-m`.
    credit_short: bool,
    /// The streams the server grants at once (its transport parameter
    /// initial_max_streams_bidi), once its first flight came.
    granted: Option<u32>,
    /// Streams cancelled (at `--timeout`) since the server last granted
    /// credit: a server that keeps them open holds their credit.
    cancelled: u64,
    /// Since when the session has had nothing in flight and no stream
    /// credit after cancelling streams: only the server's grant can bring
    /// a request back to it.
    starving_since: Option<Nanos>,
    /// The server granted no stream for [`starve_grace`] with nothing in
    /// flight (it keeps the streams of cancelled requests open, say): the
    /// session is retired, so that a new connection takes its place.
    starved: bool,
    /// The connection is closed (or closing): nothing more is opened.
    closed: bool,
    qpack: qpack::Scratch,
    /// QUIC's next deadline, as last asked.
    deadline: Option<Nanos>,
    /// What input asked to send (acknowledgements, mostly) waits until
    /// then for a request to ride with, unless something else goes first
    /// (see [`ACK_HOLD`]).
    hold_until: Option<Nanos>,
    /// Requests or other stream data were written since the last
    /// transmit: they go now, and carry whatever was held.
    fresh: bool,
    /// Why the connection was lost, once it was.
    lost: Option<quinn_proto::ConnectionError>,
}

impl<T: Clone> Http3<T> {
    /// A session that starts its QUIC handshake to `remote` at `now`.
    pub fn new(opts: &QuicOptions, remote: SocketAddr, now: Nanos) -> Result<Http3<T>, String> {
        let mut session = Http3 {
            heard: false,
            quic: quic::Quic::connect(opts, remote, now)?,
            max_streams: opts.max_streams.max(1),
            max_field_section: opts.max_field_section,
            capture: opts.capture,
            reading: opts.reading,
            scheme: "https",
            authority: opts.authority.clone(),
            connected: false,
            early: false,
            control: None,
            control_out: Vec::new(),
            streams: HashMap::new(),
            uni: HashMap::new(),
            events: VecDeque::new(),
            captures: VecDeque::new(),
            last: Captured::default(),
            goaway: None,
            reserved: VecDeque::new(),
            credit_short: false,
            granted: None,
            cancelled: 0,
            starving_since: None,
            starved: false,
            closed: false,
            qpack: qpack::Scratch::default(),
            deadline: None,
            hold_until: None,
            fresh: false,
            lost: None,
        };
        // quinn-proto has 0-RTT keys right after connecting when TLS may
        // send early: the config allows it and a ticket allows it.
        if session.quic.conn().has_0rtt() {
            session.early = true;
            session.open_control();
            session.reserve();
        }
        Ok(session)
    }

    /// What QUIC reports of the connection: handshake, loss, closes.
    pub fn facts(&self) -> QuicFacts {
        self.quic.facts()
    }

    /// Closes the connection (H3_NO_ERROR): what is in flight is
    /// abandoned, and the close goes out with the next transmit.
    pub fn close(&mut self, now: Nanos) {
        self.quic.close(now, H3_NO_ERROR);
        self.closed = true;
        self.fresh = true;
    }

    /// Why the handshake failed, once the connection is lost before the
    /// server confirmed it (for the pre-flight). A server checks a client
    /// certificate after this side's handshake is complete, and refuses it
    /// by closing the connection before it confirms.
    pub fn refusal(&self) -> Option<Refusal> {
        match &self.lost {
            Some(reason) if !self.quic.confirmed() => Some(quic::refusal(reason)),
            _ => None,
        }
    }

    /// The server confirmed the handshake (its HANDSHAKE_DONE came): it
    /// took this side's Finished, and its client certificate if it asked
    /// for one.
    pub fn confirmed(&self) -> bool {
        self.quic.confirmed()
    }

    /// The server answered in QUIC: some datagram it sent was a packet of
    /// this connection.
    pub fn heard_quic(&self) -> bool {
        self.quic.heard()
    }

    /// Acts on everything QUIC has to say after input or a timeout, then
    /// notes its next deadline.
    fn drive(&mut self, now: Nanos) {
        self.events_from_quic(now);
        self.reserve();
        self.watch_credit(now);
        self.deadline = self.quic.poll_timeout();
    }

    /// Notes when the session starts to starve (nothing in flight, no
    /// credit, streams cancelled since the last grant), and retires it once
    /// that has lasted [`starve_grace`]: a server returns a stream's credit
    /// as soon as both its sides are closed, so one that has not after
    /// that long keeps the cancelled streams open (HTTP/2 has no such
    /// state: a reset stream stops counting at once). Streams that ended
    /// with their responses are closed on the server's side already, and
    /// their credit is on its way however long it takes.
    fn watch_credit(&mut self, now: Nanos) {
        let starving = self.is_ready()
            && !self.is_retired()
            && self.cancelled > 0
            && self.credit_short
            && self.reserved.is_empty()
            && self.streams.is_empty();
        if !starving {
            self.starving_since = None;
            return;
        }
        let since = *self.starving_since.get_or_insert(now);
        if now.saturating_sub(since) >= self.starve_grace() {
            self.starved = true;
            self.starving_since = None;
        }
    }

    /// How long a session may go without stream credit and with nothing
    /// in flight before it is taken as starved: an acknowledgement's delay
    /// (the 25 ms QUIC allows) and a few round trips for the grant.
    fn starve_grace(&self) -> Nanos {
        STARVE_ACK_DELAY + 4 * self.quic.rtt()
    }

    /// Opens request streams ahead, so that [`Session::free_streams`] says
    /// exactly how many requests can go on the wire now: up to `-m` in
    /// flight, and as many as the server's stream credit allows. QUIC's
    /// credit is a count of streams that only grows (MAX_STREAMS), and a
    /// server grants more only once its side of a stream has closed, an
    /// acknowledgement or more after the response: counting streams
    /// against a limit would offer streams the server has not granted yet,
    /// and the requests given them would wait in the session unsent.
    fn reserve(&mut self) {
        if !self.is_ready() || self.is_retired() {
            return;
        }
        if self.granted.is_none() {
            self.granted = self.quic.peer_bidi_streams();
        }
        self.credit_short = false;
        while self.streams.len() + self.reserved.len() < self.max_streams as usize {
            match self.quic.conn().streams().open(Dir::Bi) {
                Some(id) => self.reserved.push_back(id),
                None => {
                    self.credit_short = true;
                    break;
                }
            }
        }
    }

    fn events_from_quic(&mut self, now: Nanos) {
        while let Some(event) = self.quic.poll(now) {
            match event {
                quinn_proto::Event::Connected => self.on_connected(),
                quinn_proto::Event::ConnectionLost { reason } => self.on_lost(&reason),
                quinn_proto::Event::Stream(StreamEvent::Readable { id }) => self.read(id, now),
                quinn_proto::Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = self.quic.conn().streams().accept(Dir::Uni) {
                        self.uni.insert(id, Uni::Typing(Vec::new()));
                        self.read(id, now);
                    }
                }
                quinn_proto::Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                    // The server may not open request streams (§6.1).
                    self.fail_with(H3_ID_ERROR, now);
                }
                quinn_proto::Event::Stream(StreamEvent::Writable { id }) => self.write(id),
                // More stream credit: `drive` reserves streams with it.
                quinn_proto::Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => {
                    self.cancelled = 0;
                }
                quinn_proto::Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                    self.on_stopped(id, error_code.into_inner());
                }
                _ => {}
            }
        }
    }

    /// The handshake is done: the control stream opens with SETTINGS,
    /// unless it went out as 0-RTT and the server took it.
    fn on_connected(&mut self) {
        self.connected = true;
        if self.early && !self.quic.conn().accepted_0rtt() {
            self.on_0rtt_rejected();
        }
        if self.control.is_none() {
            self.open_control();
        }
    }

    /// The server refused the early data: it processed none of the
    /// requests sent as 0-RTT, and quinn-proto has dropped every stream
    /// opened (the next ones reuse their ids), the control stream's too.
    /// The requests are handed back to be sent again, oldest first.
    fn on_0rtt_rejected(&mut self) {
        self.control = None;
        self.control_out.clear();
        self.reserved.clear();
        let mut refused: Vec<(StreamId, Stream<T>)> = self.streams.drain().collect();
        refused.sort_by_key(|(id, _)| u64::from(*id));
        for (_, s) in refused {
            self.events.push_back(Event::Unprocessed { tag: s.tag });
        }
    }

    /// Opens the control stream, with SETTINGS first.
    fn open_control(&mut self) {
        let Some(id) = self.quic.conn().streams().open(Dir::Uni) else {
            return;
        };
        self.control = Some(id);
        put_varint(&mut self.control_out, CONTROL_STREAM);
        put_client_settings(&mut self.control_out, self.max_field_section);
        self.write_control();
    }

    fn write_control(&mut self) {
        let Some(id) = self.control else {
            return;
        };
        if let Ok(n) = self.quic.conn().send_stream(id).write(&self.control_out) {
            self.control_out.drain(..n);
            self.fresh |= n > 0;
        }
    }

    /// The connection is gone: what is in flight is lost, for the reason
    /// the close gave.
    fn on_lost(&mut self, reason: &quinn_proto::ConnectionError) {
        self.lost.get_or_insert_with(|| reason.clone());
        if self.closed && self.streams.is_empty() {
            return;
        }
        self.closed = true;
        // A connection lost before its handshake completed failed to open,
        // and says why even with nothing in flight: the engine counts it
        // as a connect error by that cause.
        if !self.streams.is_empty() || !self.connected {
            let why = quic::failure(reason);
            self.events.push_back(Event::Failed { why });
        }
    }

    /// Reads what came on stream `id`.
    fn read(&mut self, id: StreamId, now: Nanos) {
        let mut got: Vec<Bytes> = Vec::new();
        let mut end = End::Open;
        {
            let mut recv = self.quic.conn().recv_stream(id);
            let Ok(mut chunks) = recv.read(true) else {
                return;
            };
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(chunk)) => got.push(chunk.bytes),
                    Ok(None) => {
                        end = End::Finished;
                        break;
                    }
                    Err(quinn_proto::ReadError::Reset(code)) => {
                        end = End::Reset(code.into_inner());
                        break;
                    }
                    Err(_) => break,
                }
            }
            let _ = chunks.finalize();
        }
        if self.streams.contains_key(&id) {
            for bytes in &got {
                self.on_request_bytes(id, bytes, now);
            }
            match end {
                End::Open => {}
                End::Finished => self.on_request_end(id, now),
                End::Reset(code) => self.on_request_reset(id, code),
            }
        } else if self.uni.contains_key(&id) {
            for bytes in &got {
                self.on_uni_bytes(id, bytes, now);
            }
            if end != End::Open && matches!(self.uni.get(&id), Some(Uni::Control { .. })) {
                self.fail_with(H3_CLOSED_CRITICAL_STREAM, now);
            }
        }
    }

    /// Frames of a response, as far as `bytes` carry them.
    fn on_request_bytes(&mut self, id: StreamId, mut bytes: &[u8], now: Nanos) {
        self.heard |= !bytes.is_empty() && self.streams.contains_key(&id);
        while !bytes.is_empty() {
            let Some(s) = self.streams.get_mut(&id) else {
                return;
            };
            s.first_byte.get_or_insert(now);
            match &mut s.reading {
                Reading::Header(partial) => {
                    let (used, head) = frame_header(partial, bytes);
                    s.wire += used as u64;
                    bytes = &bytes[used..];
                    let Some(head) = head else {
                        continue;
                    };
                    s.reading = match head.kind {
                        HEADERS => {
                            if head.len > self.max_field_section {
                                return self.stream_error(
                                    id,
                                    H3_MESSAGE_ERROR,
                                    Failure::HeadTooLarge,
                                );
                            }
                            s.section.clear();
                            Reading::Section { left: head.len }
                        }
                        DATA if s.phase == Phase::Head => {
                            return self.stream_error(id, H3_FRAME_UNEXPECTED, Failure::Malformed)
                        }
                        DATA => Reading::Data { left: head.len },
                        kind if is_http2_only(kind) || kind == SETTINGS || kind == GOAWAY => {
                            return self.fail_with(H3_FRAME_UNEXPECTED, now);
                        }
                        _ => Reading::Skip { left: head.len },
                    };
                    if let Reading::Section { left: 0 } = s.reading {
                        self.on_section(id, now);
                    }
                }
                Reading::Section { left } => {
                    let n = (*left).min(bytes.len() as u64) as usize;
                    s.section.extend_from_slice(&bytes[..n]);
                    s.wire += n as u64;
                    *left -= n as u64;
                    bytes = &bytes[n..];
                    if *left == 0 {
                        self.on_section(id, now);
                    }
                }
                Reading::Data { left } => {
                    let n = (*left).min(bytes.len() as u64) as usize;
                    if let Some(c) = s.captured.as_mut() {
                        if !c.push_body(&bytes[..n], MAX_CAPTURE) {
                            return self.stream_error(
                                id,
                                H3_REQUEST_CANCELLED,
                                Failure::BodyTooLarge,
                            );
                        }
                    }
                    if let Some(events) = s.events.as_mut() {
                        events.read(&bytes[..n], &s.tag, now, &mut self.events);
                    }
                    s.data += n as u64;
                    s.wire += n as u64;
                    *left -= n as u64;
                    bytes = &bytes[n..];
                    if *left == 0 {
                        s.reading = Reading::Header(Vec::new());
                    }
                }
                Reading::Skip { left } => {
                    let n = (*left).min(bytes.len() as u64) as usize;
                    s.wire += n as u64;
                    *left -= n as u64;
                    bytes = &bytes[n..];
                    if *left == 0 {
                        s.reading = Reading::Header(Vec::new());
                    }
                }
            }
        }
    }

    /// A whole field section arrived on request stream `id`: a head
    /// (interim or final) or trailers.
    fn on_section(&mut self, id: StreamId, _now: Nanos) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        s.reading = Reading::Header(Vec::new());
        let trailers = s.phase == Phase::Body;
        let mut section = Section::default();
        let mut capture = s.captured.as_deref_mut();
        if let (Some(c), false) = (capture.as_deref_mut(), trailers) {
            c.clear_fields();
        }
        let decoded = qpack::decode(&s.section, &mut self.qpack, &mut |name, value| {
            section.see(name, value);
            if let (Some(c), false) = (capture.as_deref_mut(), name.starts_with(b":")) {
                c.push_field(std::str::from_utf8(name).unwrap_or_default(), value);
            }
        });
        if decoded.is_err() {
            return self.fail_with(QPACK_DECOMPRESSION_FAILED, 0);
        }
        // Trailers carry no pseudo-field (RFC 9114 §4.3).
        if section.malformed || (trailers && section.status.is_some()) {
            return self.stream_error(id, H3_MESSAGE_ERROR, Failure::Malformed);
        }
        if trailers {
            s.grpc_status = section.grpc_status.or(s.grpc_status);
            return;
        }
        match section.status {
            None => self.stream_error(id, H3_MESSAGE_ERROR, Failure::Malformed),
            // Interim heads are counted and skipped.
            Some(code) if (100..200).contains(&code) => {}
            Some(code) => {
                s.status = code;
                s.length = section.length;
                s.grpc_status = section.grpc_status;
                s.phase = Phase::Body;
            }
        }
    }

    /// The server ended request stream `id`: its response is complete.
    fn on_request_end(&mut self, id: StreamId, now: Nanos) {
        let Some(s) = self.streams.get(&id) else {
            return;
        };
        let complete =
            s.phase == Phase::Body && matches!(&s.reading, Reading::Header(p) if p.is_empty());
        let bodiless = s.head || matches!(s.status, 204 | 304);
        let length_ok = bodiless || s.length.is_none_or_eq(s.data);
        if !complete || !length_ok {
            return self.stream_error(id, H3_MESSAGE_ERROR, Failure::Malformed);
        }
        let s = self.remove(id).expect("checked");
        if let Some(c) = s.captured {
            self.captures.push_back(c);
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

    /// The server reset request stream `id` with `code`.
    fn on_request_reset(&mut self, id: StreamId, code: u64) {
        let Some(s) = self.remove(id) else {
            return;
        };
        self.events.push_back(if code == H3_REQUEST_REJECTED {
            Event::Unprocessed { tag: s.tag }
        } else {
            Event::Lost {
                tag: s.tag,
                why: Failure::Reset(Some(code as u32)),
            }
        });
    }

    /// The server asked us to stop sending on stream `id`.
    fn on_stopped(&mut self, id: StreamId, code: u64) {
        if self.streams.contains_key(&id) && code == H3_REQUEST_REJECTED {
            let _ = self
                .quic
                .conn()
                .recv_stream(id)
                .stop(VarInt::from_u32(H3_REQUEST_CANCELLED as u32));
            self.on_request_reset(id, code);
        }
    }

    /// Bytes of a server-opened unidirectional stream.
    fn on_uni_bytes(&mut self, id: StreamId, mut bytes: &[u8], now: Nanos) {
        while !bytes.is_empty() {
            let Some(uni) = self.uni.get_mut(&id) else {
                return;
            };
            let done = match uni {
                Uni::Typing(partial) => {
                    let (used, kind) = stream_type(partial, bytes);
                    bytes = &bytes[used..];
                    match kind {
                        None => {}
                        Some(CONTROL_STREAM) => {
                            *uni = Uni::Control {
                                reading: Reading::Header(Vec::new()),
                                kind: 0,
                                payload: Vec::new(),
                                settled: false,
                            }
                        }
                        // No MAX_PUSH_ID was sent: a push is an error.
                        Some(PUSH_STREAM) => return self.fail_with(H3_ID_ERROR, now),
                        Some(_) => *uni = Uni::Drained,
                    }
                    None
                }
                Uni::Control {
                    reading,
                    kind,
                    payload,
                    ..
                } => match reading {
                    Reading::Header(partial) => {
                        let (used, head) = frame_header(partial, bytes);
                        bytes = &bytes[used..];
                        match head {
                            None => None,
                            Some(h) if h.len > MAX_CONTROL_FRAME => {
                                return self.fail_with(H3_FRAME_ERROR, now)
                            }
                            Some(h) => {
                                *kind = h.kind;
                                payload.clear();
                                *reading = Reading::Section { left: h.len };
                                (h.len == 0).then(|| (h.kind, std::mem::take(payload)))
                            }
                        }
                    }
                    Reading::Section { left } => {
                        let n = (*left).min(bytes.len() as u64) as usize;
                        payload.extend_from_slice(&bytes[..n]);
                        bytes = &bytes[n..];
                        *left -= n as u64;
                        (*left == 0).then(|| (*kind, std::mem::take(payload)))
                    }
                    Reading::Data { .. } | Reading::Skip { .. } => None,
                },
                Uni::Drained => return,
            };
            if let Some((kind, frame)) = done {
                if let Some(Uni::Control { reading, .. }) = self.uni.get_mut(&id) {
                    *reading = Reading::Header(Vec::new());
                }
                self.on_control_frame(id, kind, &frame, now);
            }
        }
    }

    /// A whole frame on the server's control stream `id`.
    fn on_control_frame(&mut self, id: StreamId, kind: u64, payload: &[u8], now: Nanos) {
        let Some(Uni::Control { settled, .. }) = self.uni.get_mut(&id) else {
            return;
        };
        let first = !*settled;
        *settled = true;
        match kind {
            SETTINGS if !first => self.fail_with(H3_FRAME_UNEXPECTED, now),
            SETTINGS if settings(payload).is_none() => self.fail_with(H3_SETTINGS_ERROR, now),
            SETTINGS => {}
            _ if first => self.fail_with(H3_MISSING_SETTINGS, now),
            DATA | HEADERS | PUSH_PROMISE => self.fail_with(H3_FRAME_UNEXPECTED, now),
            k if is_http2_only(k) => self.fail_with(H3_FRAME_UNEXPECTED, now),
            GOAWAY => match varint(payload) {
                Some((id, _)) => self.on_goaway(id),
                None => self.fail_with(H3_FRAME_ERROR, now),
            },
            // MAX_PUSH_ID, CANCEL_PUSH and unknown frames: nothing to do.
            _ => {}
        }
    }

    /// The server's GOAWAY: requests on streams at or above `id` were never
    /// processed; nothing new opens.
    fn on_goaway(&mut self, id: u64) {
        if self.goaway.is_none() {
            // HTTP/3's GOAWAY carries no error code: it is always the
            // graceful kind, which HTTP/3 names H3_NO_ERROR.
            self.events.push_back(Event::GoAway {
                code: H3_NO_ERROR as u32,
            });
        }
        let last = self.goaway.map_or(id, |g| g.min(id));
        self.goaway = Some(last);
        let above: Vec<StreamId> = self
            .streams
            .keys()
            .copied()
            .filter(|s| u64::from(*s) >= last)
            .collect();
        for sid in above {
            let _ = self
                .quic
                .conn()
                .send_stream(sid)
                .reset(VarInt::from_u32(H3_REQUEST_CANCELLED as u32));
            let _ = self
                .quic
                .conn()
                .recv_stream(sid)
                .stop(VarInt::from_u32(H3_REQUEST_CANCELLED as u32));
            if let Some(s) = self.remove(sid) {
                self.events.push_back(Event::Unprocessed { tag: s.tag });
            }
        }
    }

    /// Writes what stream `id` still has to send.
    fn write(&mut self, id: StreamId) {
        if Some(id) == self.control {
            return self.write_control();
        }
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let mut send = self.quic.conn().send_stream(id);
        if !s.out.is_empty() {
            match send.write(&s.out) {
                Ok(n) => {
                    s.out.drain(..n);
                    self.fresh = true;
                }
                Err(_) => return,
            }
        }
        if s.out.is_empty() && s.fin {
            s.fin = send.finish().is_err();
        }
    }

    fn remove(&mut self, id: StreamId) -> Option<Stream<T>> {
        self.streams.remove(&id)
    }

    /// The response on stream `id` broke the protocol: the stream is
    /// reset with `code` and its request lost.
    fn stream_error(&mut self, id: StreamId, code: u64, why: Failure) {
        let c = VarInt::from_u32(code as u32);
        let _ = self.quic.conn().send_stream(id).reset(c);
        let _ = self.quic.conn().recv_stream(id).stop(c);
        if let Some(s) = self.streams.remove(&id) {
            self.events.push_back(Event::Lost { tag: s.tag, why });
        }
    }

    /// The server broke the protocol: the connection closes with `code`.
    fn fail_with(&mut self, code: u64, now: Nanos) {
        if self.closed {
            return;
        }
        self.quic.close(now, code);
        self.closed = true;
        self.fresh = true;
        self.events.push_back(Event::Failed {
            why: Failure::Protocol,
        });
    }
}

/// How a stream's reading ended, if it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Open,
    Finished,
    Reset(u64),
}

/// Reads as much of a frame header as `bytes` bring, after what
/// `partial` holds: the bytes used, and the header once whole.
fn frame_header(partial: &mut Vec<u8>, bytes: &[u8]) -> (usize, Option<Head>) {
    if partial.is_empty() {
        if let Some(head) = Head::parse(bytes) {
            return (head.size, Some(head));
        }
    }
    // A header is at most 16 bytes: take them one at a time.
    for (i, &b) in bytes.iter().enumerate() {
        partial.push(b);
        if let Some(head) = Head::parse(partial) {
            partial.clear();
            return (i + 1, Some(head));
        }
    }
    (bytes.len(), None)
}

/// Reads a unidirectional stream's type the same way.
fn stream_type(partial: &mut Vec<u8>, bytes: &[u8]) -> (usize, Option<u64>) {
    for (i, &b) in bytes.iter().enumerate() {
        partial.push(b);
        if let Some((kind, _)) = varint(partial) {
            partial.clear();
            return (i + 1, Some(kind));
        }
    }
    (bytes.len(), None)
}

trait EqOrNone {
    fn is_none_or_eq(&self, v: u64) -> bool;
}

impl EqOrNone for Option<u64> {
    fn is_none_or_eq(&self, v: u64) -> bool {
        self.is_none_or(|l| l == v)
    }
}

impl<T: Clone> Session<T> for Http3<T> {
    fn leave(&mut self, now: Nanos) {
        if !self.closed {
            self.close(now);
        }
    }

    fn is_ready(&self) -> bool {
        self.connected || self.early
    }

    fn has_heard(&self) -> bool {
        self.heard
    }

    fn free_streams(&self) -> u32 {
        if !self.is_ready() || self.is_retired() {
            return 0;
        }
        self.reserved.len() as u32
    }

    fn retirement(&self) -> Option<Retirement> {
        if self.goaway.is_some() {
            Some(Retirement::Asked)
        } else if self.starved {
            Some(Retirement::Starved)
        } else if self.closed {
            Some(Retirement::Ended)
        } else {
            None
        }
    }

    fn is_finished(&self) -> bool {
        self.events.is_empty()
            && ((self.closed && self.streams.is_empty())
                || self.quic.is_drained()
                || ((self.goaway.is_some() || self.starved) && self.streams.is_empty()))
    }

    fn open(&mut self, request: &Request, tag: T, _now: Nanos) -> Result<(), (OpenError, T)> {
        if self.is_retired() {
            return Err((OpenError::Retired, tag));
        }
        if self.free_streams() == 0 {
            return Err((OpenError::Full, tag));
        }
        let (scheme, authority) = (self.scheme, &self.authority);
        let convert = |wire: &[u8]| Framed::from_http1(wire, scheme, authority);
        let framed = match request.framed_for(Protocol::Http3, convert) {
            Ok(framed) => framed,
            Err(e) => return Err((e, tag)),
        };
        let Some(id) = self.reserved.pop_front() else {
            return Err((OpenError::Full, tag));
        };
        let mut out = Vec::with_capacity(framed.headers.len() + framed.body.len() + 8);
        out.extend_from_slice(&framed.headers);
        if !framed.body.is_empty() {
            put_head(&mut out, DATA, framed.body.len());
            out.extend_from_slice(&framed.body);
        }
        let captured = self.capture.then(|| Box::new(Captured::default()));
        self.streams.insert(
            id,
            Stream {
                tag,
                head: framed.head,
                phase: Phase::Head,
                status: 0,
                length: None,
                grpc_status: None,
                data: 0,
                wire: 0,
                first_byte: None,
                reading: Reading::Header(Vec::new()),
                section: Vec::new(),
                out,
                fin: true,
                captured,
                events: self.reading.reader(),
            },
        );
        self.write(id);
        Ok(())
    }

    fn handle(&mut self, datagram: &[u8], now: Nanos) {
        // The handshake's own replies are never held.
        let connected = self.connected;
        self.quic.handle(datagram, now);
        self.drive(now);
        if self.hold_until.is_none()
            && connected
            && !self.streams.values().any(|s| s.phase == Phase::Body)
        {
            self.hold_until = Some(now + ACK_HOLD);
        }
    }

    /// A datagram transport has no end of stream.
    fn handle_eof(&mut self, _now: Nanos) {}

    fn poll_event(&mut self) -> Option<Event<T>> {
        let event = self.events.pop_front()?;
        if let Event::Response { .. } = event {
            if let Some(c) = self.captures.pop_front() {
                self.last = *c;
            }
        }
        Some(event)
    }

    fn transmit(&mut self, now: Nanos) -> &[u8] {
        self.transmit_segmented(now).0
    }

    fn transmit_segmented(&mut self, now: Nanos) -> (&[u8], Option<usize>) {
        let held = !self.fresh && self.hold_until.is_some_and(|t| now < t);
        if held && !self.quic.has_pending() {
            return (&[], None);
        }
        self.fresh = false;
        self.hold_until = None;
        // Sending arms QUIC's loss-detection timer.
        self.deadline = self.quic.poll_timeout_after_transmit(now);
        self.quic.transmit(now)
    }

    fn transmitted(&mut self, n: usize) {
        self.quic.transmitted(n);
    }

    fn handle_write_error(&mut self, now: Nanos) {
        // A datagram that could not be sent is a lost packet to QUIC,
        // which sends it again; a socket that fails for good ends in the
        // connection's idle timeout.
        self.quic.transmitted(usize::MAX);
        self.drive(now);
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        // quinn-proto's poll_timeout needs `&mut`; the last one computed is
        // kept by `handle_timeout` and after input.
        let starved_at = self.starving_since.map(|t| t + self.starve_grace());
        [self.deadline, self.hold_until, starved_at]
            .into_iter()
            .flatten()
            .min()
    }

    fn handle_timeout(&mut self, now: Nanos) {
        // What was held goes now, with whatever QUIC's timers add.
        self.hold_until = None;
        self.quic.handle_timeout(now);
        self.drive(now);
    }

    fn in_flight(&self) -> usize {
        self.streams.len()
    }

    fn for_each_in_flight(&self, each: &mut dyn FnMut(&T, Option<Nanos>)) {
        self.streams
            .values()
            .for_each(|s| each(&s.tag, s.events.as_ref().and_then(|e| e.last())));
    }

    /// Cancels each expired request (its stream reset and stopped with
    /// H3_REQUEST_CANCELLED); the connection goes on.
    fn expire(&mut self, expired: &mut dyn FnMut(&T) -> bool, gone: &mut Vec<T>, now: Nanos) {
        let ids: Vec<StreamId> = self
            .streams
            .iter()
            .filter(|(_, s)| expired(&s.tag))
            .map(|(&id, _)| id)
            .collect();
        let code = VarInt::from_u32(H3_REQUEST_CANCELLED as u32);
        for id in ids {
            let _ = self.quic.conn().send_stream(id).reset(code);
            let _ = self.quic.conn().recv_stream(id).stop(code);
            if let Some(s) = self.remove(id) {
                gone.push(s.tag);
                self.cancelled += 1;
            }
        }
        self.reserve();
        self.watch_credit(now);
    }

    fn drain(&mut self, into: &mut Vec<T>) {
        self.closed = true;
        into.extend(self.streams.drain().map(|(_, s)| s.tag));
    }

    fn captured(&self) -> &Captured {
        &self.last
    }

    fn held_by_server(&self) -> bool {
        self.credit_short
    }

    fn info(&self) -> Info {
        let f = self.quic.facts();
        Info {
            handshake_complete: self.connected,
            server_limit: self.granted,
            packets: Some(Packets {
                sent: f.sent_packets,
                lost: f.lost_packets,
                zero_rtt: f.zero_rtt,
                zero_rtt_offered: f.zero_rtt_offered,
            }),
            ..Info::default()
        }
    }
}
