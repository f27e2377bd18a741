//! WebSocket (RFC 6455) as a [`Session`]: the upgrade, then messages
//! instead of requests.
//!
//! A request opened on the session is one message: its body, sent as one
//! masked text (or binary) frame. In echo mode each message the server
//! sends back answers the oldest message not yet answered, so a message's
//! latency runs from its intended time to its answer, as a request's runs
//! to its response. Pings are answered with pongs; a close from the server
//! is answered with a close and ends the session, its code kept for the
//! report; what was not answered by then is drained as lost.
//!
//! In push mode ([`Shape::Push`]) the request opened on a session is its
//! subscription: its message, if it has one, is sent once, and every
//! message the server sends is an event of it ([`Event::Message`]), timed
//! as a server-sent event is. The server's close ends the subscription:
//! a normal close (`1000`, or none) completes it, with its events counted;
//! any other loses it, as a stream cut short is.
//!
//! - `frame`: frames as a client writes and reads them, from the wire
//!   format's crate (`metron-ws`), which the target server uses too;
//! - `handshake`: the upgrade request and the server's `101` checked;
//! - `deflate`: permessage-deflate, when offered (`--ws-deflate`) and
//!   agreed.

pub use metron_ws as frame;
pub mod deflate;
pub mod handshake;
pub mod preflight;

use std::collections::VecDeque;
use std::sync::Arc;

use crate::clock::Nanos;
use crate::http::capture::Captured;
use crate::http::outbox::{after_write_error, Outbox};
use crate::http::session::{
    Event, Failure, Info, Messages, OpenError, Request, Retirement, Session,
};
use crate::http::version::Protocol;

use deflate::{Codec, Unreadable};
use frame::{FrameError, Opcode};
use handshake::Refusal;
pub use preflight::{dotted, field_of, pointer, same_value, Conversation, Shape};

/// What a message's answer reports as its status: the connection's own,
/// `101 Switching Protocols`, since a message has none.
pub const MESSAGE_STATUS: u16 = 101;

/// What every WebSocket session of a run is opened with.
#[derive(Clone, Debug)]
pub struct WsOptions {
    /// The upgrade's path and fields, and how messages go.
    pub conversation: Arc<Conversation>,
    /// The URL's authority, the upgrade's Host unless a field names one.
    pub authority: String,
    /// The largest message (and the upgrade's largest answer head).
    pub max_message: usize,
    pub max_head: usize,
    /// Messages awaiting their answers on one connection at most (`-m`).
    pub max_in_flight: u32,
    /// Keep each answer for a script's `response()`, as its body, and
    /// hand on each unasked message for its `message()`.
    pub capture: bool,
    /// Hand each pushed message's data on (a script's `message()` or
    /// `event()`).
    pub keep_data: bool,
}

/// The close the server sent: its code (`None`: it gave none) and reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Close {
    pub code: Option<u16>,
    pub reason: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// The upgrade is sent; the `101` has not come whole.
    Upgrading,
    Open,
    /// A close was sent or received: no new message.
    Closing,
    /// Nothing more comes of it.
    Done,
}

/// The most messages given up at `--timeout` under `--ws-match` whose
/// late answers a connection watches for.
const GIVEN_UP_KEPT: usize = 1024;

/// A message on the wire awaiting its answer: its tag, where its frame
/// begins and ends among the bytes the connection was given to send, and
/// (`--ws-match`) the value of its field an answer must hold.
struct Pending<T> {
    tag: T,
    start: u64,
    end: u64,
    key: Option<serde_json::Value>,
}

pub struct WebSocket<T> {
    opts: WsOptions,
    key: String,
    stage: Stage,
    out: Outbox,
    in_flight: VecDeque<Pending<T>>,
    events: VecDeque<Event<T>>,
    /// Bytes read and not yet read as frames (or the upgrade's answer),
    /// and when the last of them came.
    buf: Vec<u8>,
    read_at: Nanos,
    /// Push, while the subscription has not opened: how far `buf` reached
    /// after each read, and when that read came, so that the messages
    /// held for it are timed as they came, each by its own read.
    held_reads: Vec<(usize, Nanos)>,
    /// The fragments of the message being read: its kind, payload, and
    /// whether it is compressed.
    partial: Option<(Opcode, Vec<u8>, bool)>,
    /// When the first frame of the message being read came, and its bytes.
    first_byte: Nanos,
    message_bytes: u64,
    heard: bool,
    /// The server took the upgrade.
    upgraded: bool,
    refusal: Option<Refusal>,
    close: Option<Close>,
    /// We sent a close (answering the server's, or leaving).
    close_sent: bool,
    /// A write failed: nothing more is sent or opened.
    unwritable: bool,
    /// Push: when the subscription's last message came, its messages so
    /// far, the bytes they took and when the first came.
    last_pushed: Option<Nanos>,
    pushed: u64,
    pushed_bytes: u64,
    first_pushed: Option<Nanos>,
    /// Echo: whole messages that came with no message awaiting one.
    unasked: u64,
    /// `--ws-match`: the field values of messages given up at
    /// `--timeout` whose late answers may still come, oldest first (at
    /// most [`GIVEN_UP_KEPT`]). A late answer is theirs, not a later
    /// message's with the same value.
    given_up: VecDeque<serde_json::Value>,
    /// The last whole message read was binary.
    binary_read: bool,
    /// When the next ping goes (`--ws-ping`), once open.
    next_ping: Option<Nanos>,
    pings: u64,
    /// The server closed its side.
    eof: bool,
    captured: Captured,
    /// permessage-deflate, once the server agreed to it.
    deflate: Option<Codec>,
}

impl<T: Clone> WebSocket<T> {
    /// A session that starts by queueing the upgrade request.
    pub fn new(opts: WsOptions) -> WebSocket<T> {
        let key = handshake::new_key();
        let mut out = Outbox::default();
        out.buf().extend(handshake::request(
            &opts.conversation.path,
            &opts.authority,
            &opts.conversation.fields,
            &key,
            opts.conversation.deflate,
        ));
        WebSocket {
            opts,
            key,
            stage: Stage::Upgrading,
            out,
            in_flight: VecDeque::new(),
            events: VecDeque::new(),
            buf: Vec::new(),
            read_at: 0,
            held_reads: Vec::new(),
            partial: None,
            first_byte: 0,
            message_bytes: 0,
            heard: false,
            upgraded: false,
            refusal: None,
            close: None,
            close_sent: false,
            unwritable: false,
            last_pushed: None,
            pushed: 0,
            pushed_bytes: 0,
            first_pushed: None,
            unasked: 0,
            given_up: VecDeque::new(),
            binary_read: false,
            next_ping: None,
            pings: 0,
            eof: false,
            captured: Captured::default(),
            deflate: None,
        }
    }

    /// Why the server did not take the upgrade, once it did not.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.refusal.as_ref()
    }

    /// The close the server sent, once it did.
    pub fn close(&self) -> Option<&Close> {
        self.close.as_ref()
    }

    fn pushes(&self) -> bool {
        self.opts.conversation.shape == Shape::Push
    }

    /// Push: the whole messages held for a subscription that has not
    /// opened (the run may end first). They came, so they are counted,
    /// as unasked, since no subscription has them.
    fn held_messages(&self) -> u64 {
        if !self.holding() {
            return 0;
        }
        let mut at = 0;
        let mut whole = 0;
        while let Ok(Some((f, used))) = if self.deflate.is_some() {
            frame::parse_deflated(&self.buf[at..], self.opts.max_message)
        } else {
            frame::parse(&self.buf[at..], self.opts.max_message)
        } {
            at += used;
            whole += u64::from(f.fin && !f.opcode.is_control());
        }
        whole
    }

    /// Push: the server's first messages (and maybe its close) came
    /// before the subscription opened, often in the same read as the
    /// upgrade's answer. They are the subscription's, so they are held,
    /// unread, until it opens.
    fn holding(&self) -> bool {
        self.pushes() && self.stage == Stage::Open && self.in_flight.is_empty()
    }

    fn mask() -> [u8; 4] {
        fastrand::u32(..).to_ne_bytes()
    }

    fn send_control(&mut self, opcode: Opcode, payload: &[u8]) {
        if !self.unwritable {
            frame::encode(self.out.buf(), true, opcode, payload, Self::mask());
        }
    }

    /// Sends a close with `code` unless one went already; no new message.
    fn send_close(&mut self, code: u16) {
        if !self.close_sent {
            self.close_sent = true;
            self.send_control(Opcode::Close, &code.to_be_bytes());
        }
        if self.stage != Stage::Done {
            self.stage = Stage::Closing;
        }
    }

    /// metron gives up the connection (a message outlived `--timeout`):
    /// what is in flight goes to `gone`, and the server is told with
    /// `1001 going away`, where its socket takes it, rather than left to
    /// find a connection cut without a close.
    fn give_up(&mut self, gone: &mut Vec<T>) {
        self.send_close(1001);
        self.stage = Stage::Done;
        gone.extend(self.in_flight.drain(..).map(|p| p.tag));
    }

    /// The connection cannot go on: what is in flight is lost for `why`.
    fn fail(&mut self, why: Failure) {
        self.stage = Stage::Done;
        if !self.in_flight.is_empty() {
            self.events.push_back(Event::Failed { why });
        }
    }

    /// The server closed the connection and every whole frame it sent
    /// has been read: what is still awaited is lost. A push's messages
    /// that came before its subscription opened wait for it.
    fn closed(&mut self) {
        if self.stage == Stage::Done || self.holding() {
            return;
        }
        self.read(self.read_at);
        if !self.events.is_empty() {
            return;
        }
        if self.stage == Stage::Upgrading && !self.buf.is_empty() {
            self.refusal = Some(Refusal::Malformed);
        }
        self.fail(Failure::Closed);
    }

    /// The server broke the protocol: say so with `code`, then stop.
    fn protocol_error(&mut self, code: u16) {
        self.send_close(code);
        self.fail(Failure::Malformed);
    }

    /// Reads whatever whole frames (or the upgrade's answer) `buf` holds.
    fn read(&mut self, now: Nanos) {
        let mut at = 0;
        if self.stage == Stage::Upgrading {
            let offered = self.opts.conversation.offered();
            match handshake::read_answer(
                &self.buf,
                &self.key,
                offered.as_deref(),
                self.opts.conversation.deflate,
                self.opts.max_head,
            ) {
                Ok(None) => return,
                Ok(Some(taken)) => {
                    at = taken.len;
                    self.deflate = taken.deflate.map(Codec::new);
                    self.stage = Stage::Open;
                    self.upgraded = true;
                    self.next_ping = self
                        .opts
                        .conversation
                        .ping
                        .map(|t| now + t.as_nanos() as Nanos);
                }
                Err(refusal) => {
                    self.refusal = Some(refusal);
                    self.buf.clear();
                    return self.fail(Failure::Malformed);
                }
            }
        }
        while self.stage != Stage::Done && !self.holding() {
            let parsed = if self.deflate.is_some() {
                frame::parse_deflated(&self.buf[at..], self.opts.max_message)
            } else {
                frame::parse(&self.buf[at..], self.opts.max_message)
            };
            let (fin, opcode, compressed, range) = match parsed {
                Ok(None) => break,
                Ok(Some((f, used))) => (
                    f.fin,
                    f.opcode,
                    f.compressed,
                    at + used - f.payload.len()..at + used,
                ),
                Err(FrameError::TooLong { .. }) => {
                    self.protocol_error(1009);
                    break;
                }
                Err(_) => {
                    self.protocol_error(1002);
                    break;
                }
            };
            let frame_bytes = (range.end - at) as u64;
            at = range.end;
            // A frame held for its subscription came with the read that
            // brought its last byte.
            let now = self
                .held_reads
                .iter()
                .find(|(reached, _)| *reached >= at)
                .map_or(now, |&(_, came)| came);
            if !opcode.is_control() {
                self.heard = true;
            }
            // RSV1 marks a message's first frame, never a control's.
            if compressed && (opcode.is_control() || opcode == Opcode::Continuation) {
                self.protocol_error(1002);
                break;
            }
            let payload = self.buf[range].to_vec();
            let answered = self.on_frame(fin, (opcode, compressed), payload, frame_bytes, now);
            // A script reads each answer before the next one replaces it.
            if answered && self.opts.capture {
                break;
            }
        }
        self.buf.drain(..at.min(self.buf.len()));
        if !self.holding() {
            self.held_reads.clear();
        }
    }

    /// Acts on one frame (its kind, and whether the message it begins is
    /// compressed); true when it completed an answer.
    fn on_frame(
        &mut self,
        fin: bool,
        (opcode, compressed): (Opcode, bool),
        payload: Vec<u8>,
        bytes: u64,
        now: Nanos,
    ) -> bool {
        match opcode {
            Opcode::Ping => self.send_control(Opcode::Pong, &payload),
            Opcode::Close => {
                let Some((code, reason)) = frame::close_payload(&payload) else {
                    self.protocol_error(1002);
                    return false;
                };
                self.close = Some(Close {
                    code,
                    reason: reason.to_owned(),
                });
                self.send_close(code.unwrap_or(1000));
                if self.pushes() && matches!(code, None | Some(1000)) {
                    self.subscription_ended(now);
                }
                self.fail(Failure::Closed);
            }
            Opcode::Pong => {}
            Opcode::Text | Opcode::Binary | Opcode::Continuation => {
                let starts = opcode != Opcode::Continuation;
                match (&mut self.partial, starts) {
                    (None, true) => {
                        self.first_byte = now;
                        self.message_bytes = bytes;
                        self.partial = Some((opcode, payload, compressed));
                    }
                    (Some((_, sofar, _)), false) => {
                        self.message_bytes += bytes;
                        if sofar.len() + payload.len() > self.opts.max_message {
                            self.protocol_error(1009);
                            return false;
                        }
                        sofar.extend_from_slice(&payload);
                    }
                    // A continuation of nothing, or a new message inside one.
                    _ => {
                        self.protocol_error(1002);
                        return false;
                    }
                }
                if fin {
                    let (kind, message, compressed) = self.partial.take().expect("set above");
                    let Some(message) = self.inflated(message, compressed) else {
                        return false;
                    };
                    if kind == Opcode::Text && std::str::from_utf8(&message).is_err() {
                        self.protocol_error(1007);
                        return false;
                    }
                    self.binary_read = kind == Opcode::Binary;
                    if self.pushes() {
                        self.push(message, now);
                        return false;
                    }
                    return self.answer(message);
                }
            }
        }
        false
    }

    /// A whole message's payload as sent, inflated if it came compressed;
    /// `None` when it cannot be, and the connection is failed for it.
    fn inflated(&mut self, payload: Vec<u8>, compressed: bool) -> Option<Vec<u8>> {
        let Some(codec) = self.deflate.as_mut().filter(|_| compressed) else {
            return Some(payload);
        };
        match codec.decompress(&payload, self.opts.max_message) {
            Ok(message) => Some(message),
            Err(Unreadable::TooLong) => {
                self.protocol_error(1009);
                None
            }
            Err(Unreadable::Corrupt) => {
                self.protocol_error(1007);
                None
            }
        }
    }

    /// A whole message came: it answers the oldest one awaiting (true),
    /// if any; with `--ws-match`, the oldest whose field holds the same
    /// value as the message's.
    fn answer(&mut self, message: Vec<u8>) -> bool {
        let at = match &self.opts.conversation.matching {
            None => (!self.in_flight.is_empty()).then_some(0),
            Some(field) => preflight::field_of(&message, field).and_then(|value| {
                // A message given up waits for its late answer too, and
                // was sent before any still awaited with the same value.
                if let Some(late) = self.given_up.iter().position(|k| same_value(k, &value)) {
                    self.given_up.remove(late);
                    return None;
                }
                self.in_flight
                    .iter()
                    .position(|p| p.key.as_ref().is_some_and(|k| same_value(k, &value)))
            }),
        };
        let Some(p) = at.and_then(|i| self.in_flight.remove(i)) else {
            // A message nobody awaits: an echo server that speaks first,
            // or one that sends others' messages beside the answers.
            self.unasked += 1;
            if self.opts.capture {
                self.events.push_back(Event::Unasked {
                    data: message.into(),
                    binary: self.binary_read,
                });
            }
            return false;
        };
        if self.opts.capture {
            self.captured.clear();
            self.captured.push_body(&message, self.opts.max_message);
        }
        self.events.push_back(Event::Response {
            tag: p.tag,
            status: MESSAGE_STATUS,
            bytes: self.message_bytes,
            first_byte: self.first_byte,
            events: 0,
            tokens: None,
            grpc_status: None,
        });
        true
    }
}

impl<T: Clone> WebSocket<T> {
    /// A pushed message came whole at `now`: an event of the subscription.
    fn push(&mut self, message: Vec<u8>, now: Nanos) {
        // Held until the subscription opened, so it has one.
        let Some(p) = self.in_flight.front() else {
            return;
        };
        self.pushed += 1;
        self.pushed_bytes += self.message_bytes;
        self.first_pushed.get_or_insert(now);
        let previous = self.last_pushed.replace(now);
        self.events.push_back(Event::Message {
            tag: p.tag.clone(),
            at: now,
            previous,
            data: self.opts.keep_data.then(|| message.into()),
            binary: self.binary_read,
        });
    }

    /// The server closed normally at `now`: the subscription is complete.
    fn subscription_ended(&mut self, now: Nanos) {
        let Some(p) = self.in_flight.pop_front() else {
            return;
        };
        self.events.push_back(Event::Response {
            tag: p.tag,
            status: MESSAGE_STATUS,
            bytes: self.pushed_bytes,
            first_byte: self.first_pushed.unwrap_or(now),
            events: self.pushed,
            tokens: None,
            grpc_status: None,
        });
    }
}

/// The start of `message`, as an error shows it: its first 60
/// characters in single quotes (control characters escaped, so that it
/// stays on one line), or its length when it is not text.
fn preview(message: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(message) else {
        return format!("{} bytes, not text", message.len());
    };
    let mut shown = String::from("'");
    for c in text.chars().take(60) {
        match c {
            '\n' => shown.push_str("\\n"),
            '\r' => shown.push_str("\\r"),
            '\t' => shown.push_str("\\t"),
            c if c.is_control() => shown.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => shown.push(c),
        }
    }
    shown.push('\'');
    if text.chars().count() > 60 {
        shown.push_str("...");
    }
    shown
}

/// A message as the session sends it, made once per request.
struct Framed {
    /// The request's body: the message.
    message: Vec<u8>,
    /// Whether it is UTF-8, as a text message must be.
    utf8: bool,
    /// `--ws-match`: the value of its field, if it is JSON with one.
    key: Option<serde_json::Value>,
}

/// A request's message: the bytes after its head (a Content-Length body,
/// as scripts and --requests files build them; nothing when it has none).
fn message_of(wire: &[u8]) -> Vec<u8> {
    match wire.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(end) => wire[end + 4..].to_vec(),
        None => Vec::new(),
    }
}

impl<T: Clone> Session<T> for WebSocket<T> {
    fn open(&mut self, request: &Request, tag: T, _now: Nanos) -> Result<(), (OpenError, T)> {
        if self.is_retired() {
            return Err((OpenError::Retired, tag));
        }
        if self.free_streams() == 0 {
            return Err((OpenError::Full, tag));
        }
        let matching = self.opts.conversation.matching.as_deref();
        // Framed once per request (one --data is every message's), with
        // whether it is text and its --ws-match value read then.
        let Framed { message, utf8, key } = request.framed(|wire| {
            let message = message_of(wire);
            Framed {
                utf8: std::str::from_utf8(&message).is_ok(),
                key: matching.and_then(|field| preflight::field_of(&message, field)),
                message,
            }
        });
        if message.len() > self.opts.max_message {
            let why = format!(
                "a message of {} bytes, more than a message may ({} MiB)",
                message.len(),
                self.opts.max_message >> 20
            );
            let fix = Some("send a smaller one".to_string());
            let protocol = Protocol::WebSocket;
            return Err((OpenError::Rejected { protocol, why, fix }, tag));
        }
        if let (Some(field), None) = (matching, key) {
            let path = preflight::dotted(field);
            let why = format!(
                "a message without the field {path} (or not JSON) cannot be matched to its \
                 answer: {}",
                preview(message)
            );
            let fix = Some(format!("drop --ws-match {path}"));
            let protocol = Protocol::WebSocket;
            return Err((OpenError::Rejected { protocol, why, fix }, tag));
        }
        if !self.opts.conversation.binary && !*utf8 {
            let why = format!(
                "a text message must be UTF-8, and this one is not: {}",
                preview(message)
            );
            let fix = Some("add --ws-binary to send binary messages".to_string());
            let protocol = Protocol::WebSocket;
            return Err((OpenError::Rejected { protocol, why, fix }, tag));
        }
        let opcode = if self.opts.conversation.binary {
            Opcode::Binary
        } else {
            Opcode::Text
        };
        let start = self.out.end();
        // A subscription without a message of its own says nothing.
        if !(self.pushes() && message.is_empty()) {
            match self.deflate.as_mut().and_then(|c| c.compress(message)) {
                Some(payload) => {
                    frame::encode_compressed(self.out.buf(), opcode, &payload, Self::mask())
                }
                None => frame::encode(self.out.buf(), true, opcode, message, Self::mask()),
            }
        }
        let end = self.out.end();
        self.in_flight.push_back(Pending {
            tag,
            start,
            end,
            key: key.clone(),
        });
        // What a push held for it is its own: read it now.
        if self.pushes() && !self.buf.is_empty() {
            self.read(self.read_at);
        }
        Ok(())
    }

    fn handle(&mut self, bytes: &[u8], now: Nanos) {
        if self.stage == Stage::Done {
            return;
        }
        self.buf.extend_from_slice(bytes);
        self.read_at = now;
        if self.events.is_empty() {
            self.read(now);
        }
        if self.holding() {
            self.held_reads.push((self.buf.len(), now));
        }
    }

    fn handle_eof(&mut self, _now: Nanos) {
        self.eof = true;
        // Answers a script has yet to read are read first (poll_event).
        if self.events.is_empty() {
            self.closed();
        }
    }

    fn handle_write_error(&mut self, _now: Nanos) {
        self.unwritable = true;
        self.out.discard();
        after_write_error(
            &mut self.in_flight,
            self.out.sent(),
            |p| (p.start, p.end),
            |p| p.tag,
            &mut self.events,
        );
    }

    /// Answers match messages by order: one given up would shift every
    /// later answer, so all are given up and the connection closes. Matched
    /// by a field (`--ws-match`), only those expired are given up.
    fn expire(&mut self, expired: &mut dyn FnMut(&T) -> bool, gone: &mut Vec<T>, _now: Nanos) {
        if self.opts.conversation.matching.is_some() {
            let (mut kept, mut late) = (VecDeque::new(), Vec::new());
            for p in self.in_flight.drain(..) {
                if expired(&p.tag) {
                    late.push(p);
                } else {
                    kept.push_back(p);
                }
            }
            // A late answer can be told from another message's only by a
            // value no other message awaiting (or given up) holds: when
            // values repeat (one --data for all), it could answer a later
            // message, so the connection is closed, as by order.
            let repeats = late.iter().enumerate().any(|(i, p)| {
                let Some(k) = &p.key else {
                    return true;
                };
                kept.iter()
                    .chain(&late[i + 1..])
                    .filter_map(|o| o.key.as_ref())
                    .chain(&self.given_up)
                    .any(|o| same_value(o, k))
            });
            self.in_flight = kept;
            if repeats {
                gone.extend(late.into_iter().map(|p| p.tag));
                return self.give_up(gone);
            }
            for p in late {
                if self.given_up.len() == GIVEN_UP_KEPT {
                    self.given_up.pop_front();
                }
                self.given_up.extend(p.key);
                gone.push(p.tag);
            }
            return;
        }
        if self.in_flight.iter().any(|p| expired(&p.tag)) {
            self.give_up(gone);
        }
    }

    fn drain(&mut self, into: &mut Vec<T>) {
        self.stage = Stage::Done;
        into.extend(self.in_flight.drain(..).map(|p| p.tag));
    }

    fn poll_event(&mut self) -> Option<Event<T>> {
        if self.events.is_empty() && !self.buf.is_empty() && self.stage != Stage::Done {
            self.read(self.read_at);
        }
        if self.events.is_empty() && self.eof {
            self.closed();
        }
        self.events.pop_front()
    }

    fn captured(&self) -> &Captured {
        &self.captured
    }

    /// Events a subscription's opening read from what was held are handed
    /// out at once; otherwise the next ping, while open.
    fn poll_timeout(&self) -> Option<Nanos> {
        if !self.events.is_empty() || (self.eof && !self.holding() && self.stage != Stage::Done) {
            return Some(self.read_at);
        }
        self.next_ping.filter(|_| self.stage == Stage::Open)
    }

    /// Its ping is due (`--ws-ping`): it goes, and the next is set.
    fn handle_timeout(&mut self, now: Nanos) {
        let (Some(at), Some(every)) = (self.next_ping, self.opts.conversation.ping) else {
            return;
        };
        if now < at || self.stage != Stage::Open {
            return;
        }
        self.send_control(Opcode::Ping, b"metron");
        self.pings += 1;
        // Late pings are not made up for: the next is a period from now.
        self.next_ping = Some(now + every.as_nanos() as Nanos);
    }

    fn transmit(&mut self, _now: Nanos) -> &[u8] {
        self.out.pending()
    }

    fn transmitted(&mut self, n: usize) {
        self.out.advance(n);
    }

    fn leave(&mut self, _now: Nanos) {
        if self.stage == Stage::Open {
            self.send_close(1000);
        }
    }

    fn is_ready(&self) -> bool {
        self.upgraded
    }

    fn has_heard(&self) -> bool {
        self.heard
    }

    fn info(&self) -> Info {
        Info {
            handshake_complete: self.is_ready(),
            close_code: self.close.as_ref().map(|c| c.code.unwrap_or(1005)),
            refused: self.refusal.as_ref().map(|r| match r {
                Refusal::Status(code, _) if *code != 101 => *code,
                _ => 0,
            }),
            messages: Some(Messages {
                unasked: self.unasked + self.held_messages(),
                pings: self.pings,
                binary_read: self.binary_read,
                deflate: (self.upgraded && self.opts.conversation.deflate)
                    .then_some(self.deflate.is_some()),
            }),
            ..Info::default()
        }
    }

    fn free_streams(&self) -> u32 {
        if self.stage != Stage::Open || self.unwritable {
            return 0;
        }
        self.opts
            .max_in_flight
            .saturating_sub(self.in_flight.len() as u32)
    }

    fn retirement(&self) -> Option<Retirement> {
        match self.stage {
            Stage::Upgrading | Stage::Open if !self.unwritable => None,
            _ if self.close.is_some() => Some(Retirement::Asked),
            _ => Some(Retirement::Ended),
        }
    }

    fn has_last_words(&self) -> bool {
        self.close_sent && !self.unwritable && !self.out.pending().is_empty()
    }

    /// Done, and its last words (a close) are written.
    fn is_finished(&self) -> bool {
        self.stage == Stage::Done
            && self.events.is_empty()
            && (self.unwritable || self.out.pending().is_empty())
    }

    fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// A subscription's last message, as an event stream's last event.
    fn for_each_in_flight(&self, each: &mut dyn FnMut(&T, Option<Nanos>)) {
        let last = self.last_pushed.filter(|_| self.pushes());
        for p in &self.in_flight {
            each(&p.tag, last);
        }
    }
}

#[cfg(test)]
mod tests;
