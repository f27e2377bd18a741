//! One connection's life: connecting, the TLS handshake, writing a batch,
//! reading its responses, keep-alive, the script's `delay()`, back-off and
//! reopening.
//!
//! The connection makes its own transitions and tells the worker what
//! happened; the worker owns what is shared (the poller, the slots, the
//! statistics, the script) and acts on it. Every step that depends on the
//! time is handed it as `now`, and the socket sits behind [`Io`], so the
//! whole state machine is tested below against a mock, without sockets.
//!
//! The protocol is a session above the transport: [`Http1`] matches each
//! response to its request and decides what a byte stream may hold. An
//! HTTP/2 session would take its place, matching responses by stream id,
//! accepting bytes with no request in flight (the server's SETTINGS), and
//! putting what the protocol itself must send (SETTINGS acks,
//! WINDOW_UPDATE, PING replies) in the connection's control output, which
//! goes out ahead of any request bytes.

use std::collections::VecDeque;
use std::io;
use std::rc::Rc;

use crate::clock::Nanos;
use crate::http::h2::{self, Event, H2Request, Http2, OpenError};
use crate::http::response::{Done, Feed, ResponseParser};
use crate::stats::{Loss, Stamp};

use super::transport::Transport;

/// What a connection needs of its socket: plain TCP or TLS in the
/// worker ([`Transport`]), a mock in the tests.
pub trait Io {
    /// After the first writable event: `Ok` when the connect succeeded.
    fn finish_connect(&mut self) -> io::Result<()>;
    /// True while a TLS handshake is still under way.
    fn handshaking(&self) -> bool;
    /// Reads plaintext; `Ok(0)` is the end of the stream.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    fn write(&mut self, buf: &[u8]) -> io::Result<usize>;
    /// Pushes what the transport buffered (TLS records).
    fn flush(&mut self) -> io::Result<()>;
    /// A short read means the socket is drained (not so for TLS, which
    /// may hold decrypted records back).
    fn is_plain(&self) -> bool;
}

impl Io for Transport {
    fn finish_connect(&mut self) -> io::Result<()> {
        Transport::finish_connect(self)
    }
    fn handshaking(&self) -> bool {
        Transport::handshaking(self)
    }
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Transport::read(self, buf)
    }
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Transport::write(self, buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Transport::flush(self)
    }
    fn is_plain(&self) -> bool {
        Transport::is_plain(self)
    }
}

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// No socket; opened again at `reopen_at`.
    Down { reopen_at: Nanos },
    /// TCP connect under way since `since`.
    Connecting { since: Nanos },
    /// TCP up, TLS handshake under way (the attempt began at `since`).
    Handshaking { since: Nanos },
    /// Open with nothing to send: its slot is free.
    Idle,
    /// A batch is being written or awaited.
    Busy,
    /// Waiting out the script's `delay()` until `until`.
    Resting { until: Nanos },
}

/// A request that has been written (or is being written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// Its times and whether it is measured, for the statistics.
    pub stamp: Stamp,
    /// A HEAD request: its response has no body.
    pub head: bool,
    /// Its stream on the connection, by which its response finds it.
    /// HTTP/1.1 numbers requests in the order they are written.
    pub stream: u32,
}

/// An HTTP/2 request in flight: what the statistics need, and the request
/// itself, to go out again on another connection when the server never
/// processed it (it was above a GOAWAY's last stream id).
#[derive(Clone, Debug)]
pub struct H2InFlight {
    pub req: InFlight,
    pub request: Rc<H2Request>,
}

/// Where the bytes of a connection's current batch are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Out {
    /// Bytes the worker holds for every connection, named by a number it
    /// gives (a request's index in the requests file; 0 for the one
    /// static batch).
    Shared(u32),
    /// The connection's own buffer (a script's `request()` fills it).
    Own,
}

/// What a connect or handshake step came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connect {
    /// Still under way.
    Pending,
    /// Open and idle: it can take requests.
    Ready,
    /// It failed; close it and count a connect error.
    Failed,
}

/// What a read from the socket gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// `n` bytes; `drained`: nothing more is waiting (a short read on a
    /// plain socket), so only a new readiness event brings more.
    Bytes { n: usize, drained: bool },
    /// Nothing to read now (or no socket).
    Blocked,
    /// The peer closed the stream.
    Eof,
    /// A socket error: the requests on it are lost.
    Failed,
}

/// What the session made of received bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// All `consumed` bytes belong to a response still under way.
    Partial { consumed: usize },
    /// A response ended after `consumed` bytes: the request it answers,
    /// already off the connection, and how it ended. The worker records
    /// it, may run the script on it, then calls [`Conn::responded`].
    Response {
        consumed: usize,
        req: InFlight,
        done: Done,
    },
    /// The session will not take these bytes and the stream cannot be
    /// trusted: for HTTP/1.1, bytes with no request in flight. Reopen.
    Refused,
    /// Not a valid response: the requests on the connection are lost.
    Malformed,
}

/// How a connection goes on after a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// More requests are in flight; the next response is awaited.
    Next,
    /// Nothing in flight: it is idle and can take requests.
    Free,
    /// The server closes it: reopen (requests still in flight are lost).
    Close,
}

/// What the end of the stream meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eof {
    /// It ended a response delimited by the close; reopen afterwards.
    Response(InFlight, Done),
    /// A clean close between responses: reopen.
    Clean,
    /// It cut a response short: the requests in flight are lost.
    Broken,
}

/// What a connection's periodic check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    Nothing,
    /// Closed, and due to reopen at the given time.
    ReopenAt(Nanos),
    /// Closed, and due to reopen now.
    Reopen,
    /// The connect or handshake took longer than the timeout.
    ConnectTimedOut,
    /// Its oldest request is older than the timeout: its requests are lost.
    Expired,
}

/// A closed connection hands back its socket (to deregister) and when it
/// should be reopened.
pub struct Closed<T> {
    pub io: Option<T>,
    pub reopen_at: Nanos,
}

/// Longest wait between two attempts to reopen a failing connection.
const MAX_BACKOFF: Nanos = 1_000_000_000;

pub struct Conn<T = Transport> {
    state: State,
    /// The peer it connects to (an index into the worker's peers).
    peer: usize,
    io: Option<T>,
    session: Http1,
    /// HTTP/2's settings when the peer speaks it; its session then lives
    /// in `h2` from the moment the socket is up.
    h2_settings: Option<h2::Settings>,
    h2: Option<Box<Http2<H2InFlight>>>,
    out: Output,
    /// Responses completed on the current socket.
    served: u64,
    /// Consecutive attempts that ended before any response.
    failures: u32,
}

/// A connection's output.
struct Output {
    /// Bytes the protocol itself must send, ahead of any request bytes
    /// (HTTP/2's SETTINGS acks, WINDOW_UPDATE, PING replies); HTTP/1.1
    /// never has any.
    control: Vec<u8>,
    control_written: usize,
    /// Where the current batch's bytes are.
    batch: Out,
    /// The batch, when the connection builds its own.
    own: Vec<u8>,
    /// Bytes of the current batch written so far.
    written: usize,
}

impl<T: Io> Conn<T> {
    /// A closed connection to peer `peer`, due to open at once.
    /// `capture`: keep each response's head and body for the script.
    pub fn new(max_head: usize, capture: bool, peer: usize) -> Conn<T> {
        Conn {
            state: State::Down { reopen_at: 0 },
            peer,
            io: None,
            session: Http1::new(max_head, capture),
            h2_settings: None,
            h2: None,
            out: Output {
                control: Vec::new(),
                control_written: 0,
                batch: Out::Shared(0),
                own: Vec::new(),
                written: 0,
            },
            served: 0,
            failures: 0,
        }
    }

    /// A connection that speaks HTTP/2 with `settings`.
    pub fn new_h2(max_head: usize, capture: bool, peer: usize, settings: h2::Settings) -> Conn<T> {
        Conn {
            h2_settings: Some(settings),
            ..Conn::new(max_head, capture, peer)
        }
    }

    pub fn peer(&self) -> usize {
        self.peer
    }

    /// It speaks HTTP/2: several requests at once, each on a stream.
    pub fn is_h2(&self) -> bool {
        self.h2_settings.is_some()
    }

    /// Streams that may be opened now (HTTP/2).
    pub fn free_streams(&self) -> u32 {
        match (&self.h2, self.is_open()) {
            // None before the server's SETTINGS give its stream limit.
            (Some(s), true) if s.settled() => s.free_streams(),
            _ => 0,
        }
    }

    /// Opens a stream for `req` (HTTP/2); its frames join the output.
    pub fn open_stream(&mut self, request: &Rc<H2Request>, stamp: Stamp) -> Result<(), OpenError> {
        let Some(session) = self.h2.as_mut() else {
            return Err(OpenError::Closed);
        };
        let tag = H2InFlight {
            req: InFlight {
                stamp,
                head: request.is_head(),
                stream: 0,
            },
            request: Rc::clone(request),
        };
        session.open(request, tag)?;
        session.take_output(&mut self.out.control);
        self.state = State::Busy;
        Ok(())
    }

    /// What became of the HTTP/2 streams after the last bytes received.
    pub fn next_event(&mut self) -> Option<Event<H2InFlight>> {
        let event = self.h2.as_mut()?.next_event();
        if let Some(Event::Response { .. }) = event {
            self.served += 1;
        }
        event
    }

    /// An HTTP/2 stream ended: the connection is idle once none is left.
    pub fn stream_done(&mut self) {
        if self.state == State::Busy && self.in_flight().next().is_none() {
            self.state = State::Idle;
        }
    }

    /// HTTP/2: gives up the streams written more than `timeout` before
    /// `now`, appending them to `gone`; each is reset with CANCEL, and the
    /// connection's other streams go on.
    pub fn expire_streams(&mut self, now: Nanos, timeout: Nanos, gone: &mut Vec<H2InFlight>) {
        let Some(session) = self.h2.as_mut() else {
            return;
        };
        let expired = |t: &H2InFlight| now.saturating_sub(t.req.stamp.sent()) > timeout;
        if session.cancel(expired, gone) > 0 {
            session.take_output(&mut self.out.control);
        }
    }

    /// The HTTP/2 session will take no new stream (GOAWAY, or a
    /// connection error): the connection is done once nothing is in flight.
    pub fn is_finished(&self) -> bool {
        self.h2.as_ref().is_some_and(|s| s.is_closed())
    }

    /// HTTP/2: connected, but the server's SETTINGS (and so its stream
    /// limit) have not come yet; no stream is opened until they do.
    pub fn awaits_settings(&self) -> bool {
        self.is_open()
            && self
                .h2
                .as_ref()
                .is_some_and(|s| !s.settled() && !s.is_closed())
    }

    /// TCP connect or TLS handshake under way.
    pub fn is_connecting(&self) -> bool {
        matches!(
            self.state,
            State::Connecting { .. } | State::Handshaking { .. }
        )
    }

    /// Open for requests and responses: idle, busy or resting.
    pub fn is_open(&self) -> bool {
        matches!(
            self.state,
            State::Idle | State::Busy | State::Resting { .. }
        )
    }

    pub fn is_idle(&self) -> bool {
        self.state == State::Idle
    }

    /// Held by the script's `delay()`.
    pub fn is_resting(&self) -> bool {
        matches!(self.state, State::Resting { .. })
    }

    /// The requests written and not yet answered (for HTTP/1.1 oldest
    /// first).
    pub fn in_flight(&self) -> impl Iterator<Item = &InFlight> {
        let h2 = self.h2.iter().flat_map(|s| s.in_flight().map(|t| &t.req));
        self.session.in_flight.iter().chain(h2)
    }

    /// A new attempt: the connect on `io` has started (the caller
    /// registered its socket).
    pub fn open(&mut self, io: T, now: Nanos) {
        self.io = Some(io);
        self.state = State::Connecting { since: now };
        self.served = 0;
        self.out.written = 0;
    }

    /// A new attempt could not even start a connect: it stays closed and
    /// backs off. Returns when to try again.
    pub fn open_failed(&mut self, now: Nanos) -> Nanos {
        // A failed attempt served nothing, whatever the last socket did, so
        // that attempts failing at once back off instead of spinning.
        self.served = 0;
        self.close(now).reopen_at
    }

    /// The socket reported readiness while connecting: finishes the TCP
    /// connect, then drives the TLS handshake (reading into `scratch`).
    pub fn on_connect_event(&mut self, scratch: &mut [u8]) -> Connect {
        let Some(io) = self.io.as_mut() else {
            return Connect::Pending;
        };
        match self.state {
            State::Connecting { since } => match io.finish_connect() {
                Ok(()) if io.handshaking() => {
                    self.state = State::Handshaking { since };
                    Connect::Pending
                }
                Ok(()) => self.ready(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Connect::Pending,
                Err(_) => Connect::Failed,
            },
            State::Handshaking { .. } => match io.read(scratch) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if io.handshaking() {
                        Connect::Pending
                    } else {
                        self.ready()
                    }
                }
                // Application data or EOF before the handshake finished.
                Ok(_) | Err(_) if io.handshaking() => Connect::Failed,
                Ok(n) => self.ready_with(&scratch[..n]),
                Err(_) => self.ready(),
            },
            _ => Connect::Pending,
        }
    }

    fn ready(&mut self) -> Connect {
        self.state = State::Idle;
        if let Some(settings) = &self.h2_settings {
            // The preface and SETTINGS go out first.
            let mut session = Box::new(Http2::new(*settings));
            session.take_output(&mut self.out.control);
            self.h2 = Some(session);
        }
        Connect::Ready
    }

    /// Ready, with the first bytes the server sent. A TLS 1.3 server may
    /// send data along with its last handshake flight, before our own
    /// Finished: an HTTP/2 server's SETTINGS often come that way, and the
    /// session must see them first. An HTTP/1.1 server has nothing to say
    /// before a request, so there they are dropped.
    fn ready_with(&mut self, early: &[u8]) -> Connect {
        let ready = self.ready();
        if let Some(session) = self.h2.as_mut() {
            session.receive(early);
            session.take_output(&mut self.out.control);
        }
        ready
    }

    /// Rests the connection until `until` (the script's `delay()`).
    pub fn rest(&mut self, until: Nanos) {
        self.state = State::Resting { until };
    }

    /// The rest that ends at `until` is over: true if the connection was
    /// still resting for it (and is now idle). A connection closed while
    /// resting leaves the worker's wake-up stale.
    pub fn wake(&mut self, until: Nanos) -> bool {
        if self.state != (State::Resting { until }) {
            return false;
        }
        self.state = State::Idle;
        true
    }

    /// The buffer a batch of the connection's own is built in.
    pub fn own_batch(&mut self) -> &mut Vec<u8> {
        &mut self.out.own
    }

    /// Adds a request of the batch about to be written.
    pub fn push(&mut self, stamp: Stamp, head: bool) {
        self.session.push(stamp, head);
    }

    /// Starts writing the batch whose requests were just pushed.
    pub fn start_batch(&mut self, batch: Out) {
        self.out.batch = batch;
        self.out.written = 0;
        self.state = State::Busy;
    }

    /// Where the current batch's bytes are.
    pub fn out(&self) -> Out {
        self.out.batch
    }

    /// Writes what is pending until the socket would block: control bytes
    /// first, then the current batch (`shared` when it is
    /// [`Out::Shared`]). An error loses the requests on the connection.
    pub fn on_writable(&mut self, shared: &[u8]) -> Result<(), Loss> {
        let Some(io) = self.io.as_mut() else {
            return Ok(());
        };
        let o = &mut self.out;
        if !o.control.is_empty() {
            if !write_all(io, &o.control, &mut o.control_written)? {
                return Ok(());
            }
            o.control.clear();
            o.control_written = 0;
        }
        // HTTP/2's requests are frames in the control output.
        if self.state != State::Busy || self.h2.is_some() {
            return Ok(());
        }
        let bytes = match o.batch {
            Out::Own => &o.own[..],
            Out::Shared(_) => shared,
        };
        if write_all(io, bytes, &mut o.written)? {
            io.flush().map_err(|_| Loss::Write)?;
        }
        Ok(())
    }

    /// Reads from the socket into `buf`.
    pub fn read(&mut self, buf: &mut [u8]) -> Read {
        let Some(io) = self.io.as_mut() else {
            return Read::Blocked;
        };
        loop {
            return match io.read(buf) {
                Ok(0) => Read::Eof,
                Ok(n) => Read::Bytes {
                    n,
                    drained: n < buf.len() && io.is_plain(),
                },
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Read::Blocked,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => Read::Failed,
            };
        }
    }

    /// Hands received bytes to the session; called again with what is
    /// left after each [`Received::Response`].
    pub fn receive(&mut self, bytes: &[u8]) -> Received {
        if let Some(session) = self.h2.as_mut() {
            // Streams' news come out of `next_event`.
            session.receive(bytes);
            session.take_output(&mut self.out.control);
            return Received::Partial {
                consumed: bytes.len(),
            };
        }
        let received = self.session.receive(bytes);
        if let Received::Response { .. } = received {
            self.served += 1;
        }
        received
    }

    /// Fields of the last response, when capture is on (for the script).
    pub fn response_headers(&self) -> Box<dyn Iterator<Item = (&str, &[u8])> + '_> {
        match &self.h2 {
            Some(s) => Box::new(s.headers()),
            None => Box::new(self.session.parser.headers()),
        }
    }

    /// Body of the last response, when capture is on (for the script).
    pub fn response_body(&self) -> &[u8] {
        match &self.h2 {
            Some(s) => s.body(),
            None => self.session.parser.body(),
        }
    }

    /// The worker is done with the last response (`keep_alive`: the
    /// server keeps the connection open after it).
    pub fn responded(&mut self, keep_alive: bool) -> After {
        if !keep_alive {
            return After::Close;
        }
        if self.session.next() {
            return After::Next;
        }
        self.state = State::Idle;
        After::Free
    }

    /// The peer closed the stream.
    pub fn on_eof(&mut self) -> Eof {
        if let Some(session) = self.h2.as_mut() {
            // Whatever is still in flight is lost.
            return match session.eof() {
                0 => Eof::Clean,
                _ => Eof::Broken,
            };
        }
        let eof = self.session.eof();
        if let Eof::Response(..) = eof {
            self.served += 1;
        }
        eof
    }

    /// Checks the timeouts and the reopen time against `now`.
    pub fn on_timer(&self, now: Nanos, timeout: Nanos) -> Check {
        match self.state {
            State::Busy => {
                let oldest = self
                    .in_flight()
                    .map(|r| r.stamp.sent())
                    .min()
                    .map_or(now, |sent| sent.min(now));
                if now - oldest > timeout {
                    Check::Expired
                } else {
                    Check::Nothing
                }
            }
            // A connect that hangs is a connect error, not a request error.
            State::Connecting { since } | State::Handshaking { since } => {
                if now - since.min(now) > timeout {
                    Check::ConnectTimedOut
                } else {
                    Check::Nothing
                }
            }
            State::Down { reopen_at } if reopen_at <= now => Check::Reopen,
            State::Down { reopen_at } => Check::ReopenAt(reopen_at),
            State::Idle | State::Resting { .. } => Check::Nothing,
        }
    }

    /// Drops the socket and everything in flight on it (the caller counts
    /// what was lost first). An attempt that served nothing backs off
    /// exponentially, so a server that refuses or hangs up at once is not
    /// hammered in a busy loop; one that served reopens at once.
    pub fn close(&mut self, now: Nanos) -> Closed<T> {
        let io = self.io.take();
        self.session.clear();
        self.h2 = None;
        self.out.written = 0;
        self.out.control.clear();
        self.out.control_written = 0;
        let reopen_at = if self.served == 0 {
            self.failures = self.failures.saturating_add(1);
            let backoff = 1_000_000u64 << self.failures.min(10);
            now + backoff.min(MAX_BACKOFF)
        } else {
            self.failures = 0;
            now
        };
        self.state = State::Down { reopen_at };
        Closed { io, reopen_at }
    }
}

/// Writes `bytes[*at..]` until done (`Ok(true)`) or the socket would block
/// (`Ok(false)`), moving `at` along.
fn write_all<T: Io>(io: &mut T, bytes: &[u8], at: &mut usize) -> Result<bool, Loss> {
    while *at < bytes.len() {
        match io.write(&bytes[*at..]) {
            Ok(n) => *at += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Loss::Write),
        }
    }
    Ok(true)
}

/// HTTP/1.1 over one connection: requests pipelined in order, each
/// response the answer to the oldest request not yet answered.
struct Http1 {
    /// Requests written and not yet answered, oldest first.
    in_flight: VecDeque<InFlight>,
    parser: ResponseParser,
    /// The stream number the next request gets.
    next_stream: u32,
}

impl Http1 {
    fn new(max_head: usize, capture: bool) -> Http1 {
        let mut parser = ResponseParser::new(max_head);
        parser.set_capture(capture);
        Http1 {
            // One request at a time unless a script pipelines a batch: the
            // queue grows to the largest batch once and stays there. (With
            // 16 up front, 10,000 connections held 6 MB of empty room.)
            in_flight: VecDeque::with_capacity(1),
            parser,
            next_stream: 0,
        }
    }

    fn push(&mut self, stamp: Stamp, head: bool) {
        if self.in_flight.is_empty() {
            self.parser.start(head);
        }
        self.in_flight.push_back(InFlight {
            stamp,
            head,
            stream: self.next_stream,
        });
        self.next_stream = self.next_stream.wrapping_add(1);
    }

    fn receive(&mut self, bytes: &[u8]) -> Received {
        if self.in_flight.is_empty() {
            // Bytes nobody asked for: the stream cannot be trusted.
            return Received::Refused;
        }
        match self.parser.feed(bytes) {
            Ok(Feed::Partial { consumed }) => Received::Partial { consumed },
            Ok(Feed::Done { consumed, done }) => Received::Response {
                consumed,
                req: self.answered(),
                done,
            },
            Err(_) => Received::Malformed,
        }
    }

    /// The oldest request, answered.
    fn answered(&mut self) -> InFlight {
        self.in_flight
            .pop_front()
            .expect("a response implies a request")
    }

    /// Readies the parser for the next response; false if none is awaited.
    fn next(&mut self) -> bool {
        match self.in_flight.front() {
            Some(next) => {
                self.parser.start(next.head);
                true
            }
            None => false,
        }
    }

    fn eof(&mut self) -> Eof {
        match self.parser.eof() {
            Ok(Some(done)) => Eof::Response(self.answered(), done),
            Ok(None) if self.in_flight.is_empty() => Eof::Clean,
            Ok(None) | Err(_) => Eof::Broken,
        }
    }

    fn clear(&mut self) {
        self.in_flight.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{Recorder, Window};
    use std::time::Duration;

    const TIMEOUT: Nanos = 2_000_000_000;

    /// A socket without a socket: reads come from a script of results,
    /// writes land in a vector, up to `room` bytes before it would block.
    #[derive(Default)]
    struct Mock {
        reads: VecDeque<io::Result<Vec<u8>>>,
        written: Vec<u8>,
        room: usize,
        connect_error: Option<io::ErrorKind>,
        tls: bool,
        handshaking: bool,
    }

    impl Mock {
        fn plain() -> Mock {
            Mock {
                room: usize::MAX,
                ..Mock::default()
            }
        }
    }

    fn would_block() -> io::Error {
        io::ErrorKind::WouldBlock.into()
    }

    impl Io for Mock {
        fn finish_connect(&mut self) -> io::Result<()> {
            self.connect_error.map_or(Ok(()), |k| Err(k.into()))
        }
        fn handshaking(&self) -> bool {
            self.handshaking
        }
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let bytes = self.reads.pop_front().unwrap_or(Err(would_block()))?;
            buf[..bytes.len()].copy_from_slice(&bytes);
            Ok(bytes.len())
        }
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(self.room);
            if n == 0 {
                return Err(would_block());
            }
            self.room -= n;
            self.written.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn is_plain(&self) -> bool {
            !self.tls
        }
    }

    fn conn() -> Conn<Mock> {
        Conn::new(1024, true, 0)
    }

    /// A connection that is open and idle on a plain mock socket.
    fn open_conn() -> Conn<Mock> {
        let mut c = conn();
        c.open(Mock::plain(), 0);
        assert_eq!(c.on_connect_event(&mut [0; 64]), Connect::Ready);
        c
    }

    /// An open connection writing a batch of requests with these stamps.
    fn sending(stamps: &[Stamp]) -> Conn<Mock> {
        let mut c = open_conn();
        for &s in stamps {
            c.push(s, false);
        }
        c.start_batch(Out::Shared(0));
        c
    }

    fn io(c: &mut Conn<Mock>) -> &mut Mock {
        c.io.as_mut().expect("open")
    }

    /// Stamps as the statistics give them, sent at `sent`.
    fn stamp(sent: Nanos) -> Stamp {
        let mut r = Recorder::new(Duration::from_secs(1), 0, None);
        r.begin(Window::ALL, false);
        r.sent(sent, sent, None)
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
    const GET: &[u8] = b"GET / HTTP/1.1\r\n\r\n";

    #[test]
    fn a_plain_connect_makes_it_idle() {
        let mut c = conn();
        assert!(!c.is_open() && !c.is_connecting());
        c.open(Mock::plain(), 5);
        assert!(c.is_connecting());
        assert_eq!(c.on_connect_event(&mut [0; 64]), Connect::Ready);
        assert!(c.is_idle() && c.is_open());
    }

    #[test]
    fn tls_is_ready_only_once_the_handshake_is_over() {
        let mut c = conn();
        let mock = Mock {
            tls: true,
            handshaking: true,
            ..Mock::plain()
        };
        c.open(mock, 0);
        let mut scratch = [0; 64];
        assert_eq!(c.on_connect_event(&mut scratch), Connect::Pending);
        assert_eq!(c.state, State::Handshaking { since: 0 });
        // Handshake records come and go; still under way.
        assert_eq!(c.on_connect_event(&mut scratch), Connect::Pending);
        io(&mut c).handshaking = false;
        assert_eq!(c.on_connect_event(&mut scratch), Connect::Ready);
        assert!(c.is_idle());
    }

    /// The server's SETTINGS, decrypted with the end of the handshake,
    /// reach the HTTP/2 session: it acknowledges them.
    #[test]
    fn data_that_ends_the_handshake_reaches_the_http2_session() {
        let mut c: Conn<Mock> = Conn::new_h2(1024, false, 0, h2::Settings::default());
        let mut mock = Mock {
            tls: true,
            handshaking: true,
            ..Mock::plain()
        };
        // An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
        mock.reads.push_back(Ok(vec![0, 0, 0, 4, 0, 0, 0, 0, 0]));
        c.open(mock, 0);
        let mut scratch = [0; 64];
        assert_eq!(c.on_connect_event(&mut scratch), Connect::Pending);
        io(&mut c).handshaking = false;
        assert_eq!(c.on_connect_event(&mut scratch), Connect::Ready);
        // After the preface, frames: 9-byte headers (length, type, flags,
        // stream), each followed by its payload.
        let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        let frames = &c.out.control[preface.len()..];
        let (mut at, mut acked) = (0, false);
        while at + 9 <= frames.len() {
            let len = u32::from_be_bytes([0, frames[at], frames[at + 1], frames[at + 2]]);
            acked |= frames[at + 3] == 4 && frames[at + 4] == 1;
            at += 9 + len as usize;
        }
        assert!(acked, "no SETTINGS ack in {:?}", c.out.control);
    }

    #[test]
    fn a_refused_connect_or_handshake_fails() {
        let mut c = conn();
        let refused = Mock {
            connect_error: Some(io::ErrorKind::ConnectionRefused),
            ..Mock::plain()
        };
        c.open(refused, 0);
        assert_eq!(c.on_connect_event(&mut [0; 64]), Connect::Failed);
        let mut c = conn();
        let mut closed = Mock {
            tls: true,
            handshaking: true,
            ..Mock::plain()
        };
        closed.reads.push_back(Ok(Vec::new()));
        c.open(closed, 0);
        assert_eq!(c.on_connect_event(&mut [0; 64]), Connect::Pending);
        assert_eq!(c.on_connect_event(&mut [0; 64]), Connect::Failed);
    }

    #[test]
    fn a_connect_that_hangs_times_out() {
        let mut c = conn();
        c.open(Mock::plain(), 100);
        assert_eq!(c.on_timer(100 + TIMEOUT, TIMEOUT), Check::Nothing);
        assert_eq!(c.on_timer(101 + TIMEOUT, TIMEOUT), Check::ConnectTimedOut);
    }

    #[test]
    fn a_batch_is_written_across_short_writes_and_answered_in_order() {
        let mut c = open_conn();
        io(&mut c).room = 10;
        let (a, b) = (stamp(1), stamp(2));
        c.push(a, false);
        c.push(b, true);
        c.start_batch(Out::Shared(0));
        let batch = [GET, b"HEAD / HTTP/1.1\r\n\r\n"].concat();
        assert_eq!(c.on_writable(&batch), Ok(()));
        assert_eq!(io(&mut c).written, &batch[..10]);
        io(&mut c).room = usize::MAX;
        assert_eq!(c.on_writable(&batch), Ok(()));
        assert_eq!(io(&mut c).written, batch);
        // Both responses in one read: each finds its request, in order;
        // the second answers HEAD, so its Content-Length has no body.
        let head_reply = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n";
        let bytes = [OK, head_reply].concat();
        let Received::Response {
            consumed,
            req,
            done,
        } = c.receive(&bytes)
        else {
            panic!("a response");
        };
        assert_eq!((consumed, req.stamp, req.stream), (OK.len(), a, 0));
        assert_eq!((done.status, done.body_bytes), (200, 2));
        assert_eq!(c.response_body(), b"hi");
        assert_eq!(c.responded(true), After::Next);
        let Received::Response { req, done, .. } = c.receive(&bytes[consumed..]) else {
            panic!("a response");
        };
        assert_eq!((req.stamp, req.stream, req.head), (b, 1, true));
        assert_eq!(done.body_bytes, 0);
        assert_eq!(c.responded(true), After::Free);
        assert!(c.is_idle());
        assert_eq!(c.in_flight().count(), 0);
    }

    #[test]
    fn a_batch_of_its_own_is_written_from_its_buffer() {
        let mut c = open_conn();
        c.own_batch().extend_from_slice(GET);
        c.push(stamp(0), false);
        c.start_batch(Out::Own);
        assert_eq!(c.out(), Out::Own);
        assert_eq!(c.on_writable(b"not these"), Ok(()));
        assert_eq!(io(&mut c).written, GET);
    }

    #[test]
    fn control_bytes_go_out_before_request_bytes_even_when_idle() {
        let mut c = open_conn();
        c.out.control.extend_from_slice(b"CTL");
        io(&mut c).room = 2;
        assert_eq!(c.on_writable(GET), Ok(()));
        io(&mut c).room = usize::MAX;
        // Idle: the control bytes go, and nothing else.
        assert_eq!(c.on_writable(GET), Ok(()));
        assert_eq!(io(&mut c).written, b"CTL");
        c.push(stamp(0), false);
        c.start_batch(Out::Shared(0));
        assert_eq!(c.on_writable(GET), Ok(()));
        assert_eq!(io(&mut c).written, [b"CTL", GET].concat());
    }

    #[test]
    fn a_write_error_loses_the_batch() {
        struct Broken;
        impl Io for Broken {
            fn finish_connect(&mut self) -> io::Result<()> {
                Ok(())
            }
            fn handshaking(&self) -> bool {
                false
            }
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::ErrorKind::ConnectionReset.into())
            }
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
            fn is_plain(&self) -> bool {
                true
            }
        }
        let mut c: Conn<Broken> = Conn::new(1024, false, 0);
        c.open(Broken, 0);
        assert_eq!(c.on_connect_event(&mut [0; 8]), Connect::Ready);
        c.push(stamp(0), false);
        c.start_batch(Out::Shared(0));
        assert_eq!(c.on_writable(GET), Err(Loss::Write));
        assert_eq!(c.read(&mut [0; 8]), Read::Failed);
    }

    #[test]
    fn reads_say_when_a_plain_socket_is_drained() {
        let mut c = open_conn();
        io(&mut c)
            .reads
            .extend([Ok(vec![1; 8]), Ok(vec![2; 3]), Ok(Vec::new())]);
        let mut buf = [0; 8];
        assert_eq!(
            c.read(&mut buf),
            Read::Bytes {
                n: 8,
                drained: false
            }
        );
        assert_eq!(
            c.read(&mut buf),
            Read::Bytes {
                n: 3,
                drained: true
            }
        );
        assert_eq!(c.read(&mut buf), Read::Eof);
        assert_eq!(c.read(&mut buf), Read::Blocked);
    }

    #[test]
    fn http1_refuses_bytes_with_nothing_in_flight() {
        let mut c = open_conn();
        assert_eq!(c.receive(OK), Received::Refused);
    }

    #[test]
    fn a_malformed_response_loses_the_requests() {
        let mut c = sending(&[stamp(0)]);
        assert_eq!(c.receive(b"SMTP ready\r\n\r\n"), Received::Malformed);
    }

    #[test]
    fn a_response_split_across_reads_completes_on_its_last_byte() {
        let mut c = sending(&[stamp(0)]);
        assert_eq!(c.receive(&OK[..5]), Received::Partial { consumed: 5 });
        assert!(matches!(c.receive(&OK[5..]), Received::Response { .. }));
    }

    #[test]
    fn a_server_that_closes_after_a_response_is_reopened() {
        let mut c = sending(&[stamp(0), stamp(0)]);
        let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        let Received::Response { done, .. } = c.receive(close) else {
            panic!("a response");
        };
        assert_eq!(c.responded(done.keep_alive), After::Close);
        // The one pipelined behind it is still in flight, to be lost.
        assert_eq!(c.in_flight().count(), 1);
    }

    #[test]
    fn the_end_of_the_stream_ends_a_response_or_loses_one() {
        let mut c = open_conn();
        assert_eq!(c.on_eof(), Eof::Clean);
        c.push(stamp(0), false);
        c.start_batch(Out::Shared(0));
        assert_eq!(c.on_eof(), Eof::Broken);
        let mut c = sending(&[stamp(3)]);
        let until_close = b"HTTP/1.0 200 OK\r\n\r\nbody";
        assert_eq!(
            c.receive(until_close),
            Received::Partial {
                consumed: until_close.len()
            }
        );
        let Eof::Response(req, done) = c.on_eof() else {
            panic!("a response");
        };
        assert_eq!((req.stamp, done.body_bytes), (stamp(3), 4));
        assert_eq!(c.served, 1);
    }

    #[test]
    fn requests_older_than_the_timeout_expire() {
        let c = sending(&[stamp(50)]);
        assert_eq!(c.on_timer(50 + TIMEOUT, TIMEOUT), Check::Nothing);
        assert_eq!(c.on_timer(51 + TIMEOUT, TIMEOUT), Check::Expired);
        // A connection whose clock reads earlier than the send never
        // expires on that account.
        assert_eq!(c.on_timer(10, TIMEOUT), Check::Nothing);
    }

    #[test]
    fn a_delay_is_not_a_back_off() {
        let mut c = open_conn();
        c.rest(500);
        assert!(c.is_open() && !c.is_idle());
        // The timer check leaves a resting connection alone: only its own
        // wake-up ends the rest.
        assert_eq!(c.on_timer(1_000, TIMEOUT), Check::Nothing);
        assert!(!c.wake(400));
        assert!(c.wake(500));
        assert!(c.is_idle());
        // A closed connection's reopen time is its own, and a stale wake-up
        // for a rest it no longer takes does nothing.
        c.rest(900);
        let closed = c.close(600);
        assert!(closed.io.is_some());
        assert!(!c.wake(900));
        assert_eq!(c.on_timer(600, TIMEOUT), Check::ReopenAt(2_000_600));
        assert_eq!(c.on_timer(2_000_600, TIMEOUT), Check::Reopen);
    }

    #[test]
    fn failing_attempts_back_off_up_to_a_second() {
        let mut c = conn();
        assert_eq!(c.close(0).reopen_at, 2_000_000);
        assert_eq!(c.close(0).reopen_at, 4_000_000);
        for _ in 0..20 {
            let _ = c.close(0);
        }
        assert_eq!(c.close(0).reopen_at, MAX_BACKOFF);
    }

    #[test]
    fn a_connection_that_served_reopens_at_once() {
        let mut c = conn();
        let _ = c.close(0);
        c.served = 3;
        assert_eq!(c.close(50).reopen_at, 50);
        assert_eq!(c.failures, 0);
    }

    #[test]
    fn an_attempt_that_cannot_start_backs_off_even_after_a_served_socket() {
        let mut c = sending(&[stamp(0)]);
        assert!(matches!(c.receive(OK), Received::Response { .. }));
        assert_eq!(c.close(10).reopen_at, 10);
        // Reopening fails before a socket exists: not at once again.
        assert_eq!(c.open_failed(10), 2_000_010);
        assert_eq!(c.open_failed(10), 4_000_010);
    }
}
