//! One connection's life: connecting, the TLS handshake, moving bytes
//! between its socket and its protocol session, back-off and reopening.
//!
//! The connection owns the socket (behind [`Io`]) and a [`Session`] made
//! for each attempt; it never asks which protocol the session speaks. It
//! writes what the session asks to send, reads what comes and hands it
//! over, and says what its socket did; the worker acts on the session's
//! events and owns what is shared (the poller, the slots, the statistics,
//! the script). Every step that depends on the time is handed it as
//! `now`, so the whole state machine is tested below against a mock
//! socket, without sockets or clocks.

use std::io;
use std::rc::Rc;

use mio::Interest;

use crate::clock::Nanos;
use crate::http::{Failure, Request, Retirement, Session};
use crate::stats::{ConnectCause, Loss, ReadCause, Reopen, Stamp};

use super::transport::{self, Inbox, Transport};
use super::visits::VisitTag;

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
    /// Datagrams, whose session makes its own handshake (QUIC): the
    /// connection is open once its session is ready, not its socket.
    fn carries_datagrams(&self) -> bool {
        false
    }
    /// Writes `buf`; over datagrams, as datagrams of `segment` bytes each
    /// when it is given.
    fn write_segmented(&mut self, buf: &[u8], segment: Option<usize>) -> io::Result<usize> {
        let _ = segment;
        self.write(buf)
    }
    /// Over datagrams: reads what is waiting into `inbox`; the number of
    /// reads it took in.
    fn read_datagrams(&mut self, inbox: &mut Inbox) -> io::Result<usize> {
        let _ = inbox;
        Err(io::ErrorKind::Unsupported.into())
    }
    /// The socket, to register with the poller again (none in the tests).
    fn source(&mut self) -> Option<&mut dyn mio::event::Source> {
        None
    }
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
    fn carries_datagrams(&self) -> bool {
        matches!(self, Transport::Datagrams(_))
    }
    fn write_segmented(&mut self, buf: &[u8], segment: Option<usize>) -> io::Result<usize> {
        Transport::write_segmented(self, buf, segment)
    }
    fn read_datagrams(&mut self, inbox: &mut Inbox) -> io::Result<usize> {
        Transport::read_datagrams(self, inbox)
    }
    fn source(&mut self) -> Option<&mut dyn mio::event::Source> {
        Some(self.socket())
    }
}

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// No socket; opened again at `reopen_at`.
    Down { reopen_at: Nanos },
    /// TCP connect under way since `since`.
    Connecting { since: Nanos },
    /// TCP up at `connected`, TLS handshake under way (the attempt began
    /// at `since`).
    Handshaking { since: Nanos, connected: Nanos },
    /// Open: its session carries requests.
    Open,
}

/// What the engine tags each request with: what the statistics need, and
/// the request itself, to go out again on another connection when the
/// server never processed it.
#[derive(Clone, Debug)]
pub struct InFlight {
    pub stamp: Stamp,
    pub request: Rc<Request>,
    /// How many times it went out (more than once when the server never
    /// processed it the first time).
    pub sends: u8,
    /// The visit it is a step of, in a flow.
    pub visit: Option<VisitTag>,
}

impl InFlight {
    /// A request about to go out for the first time (a step of `visit`).
    pub fn new(stamp: Stamp, request: Rc<Request>, visit: Option<VisitTag>) -> InFlight {
        InFlight {
            stamp,
            request,
            sends: 0,
            visit,
        }
    }
}

/// What a connect or handshake step came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connect {
    /// Still under way.
    Pending,
    /// Open: its session starts. `None` when the session makes its own
    /// handshake, timed once it is done ([`Conn::handshake_done`]).
    Ready(Option<Setup>),
    /// It failed; close it and count a connect error.
    Failed(ConnectCause),
}

/// How long a connection took to open, as its events showed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// From the start of the connect to the TCP connection.
    pub connect: Nanos,
    /// From the TCP connection to the end of the TLS handshake, over TLS.
    pub tls: Option<Nanos>,
}

/// What a read from the socket gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// `n` bytes; `drained`: nothing more is waiting (a short read on a
    /// plain socket), so only a new readiness event brings more.
    Bytes { n: usize, drained: bool },
    /// Datagrams, in the inbox; `drained` as for bytes.
    Datagrams { drained: bool },
    /// Nothing to read now (or no socket).
    Blocked,
    /// The peer closed the stream.
    Eof,
    /// A socket error: the requests on it are lost.
    Failed(ReadFailure),
}

/// The socket broke while writing: the connection is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Broken;

/// How reading a socket failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadFailure {
    Reset,
    /// Over UDP: the host answered "port unreachable".
    Refused,
    Tls,
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
    /// A request on it is older than the timeout.
    Expired,
}

/// Why a connection last went down, for the report's account of the
/// connections that were down at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WentDown {
    /// An attempt to connect (or a TLS handshake) failed.
    Connect(ConnectCause),
    /// An open connection ended with a read error.
    Read(ReadCause),
}

/// How a connection's end is counted, decided from what it saw and why
/// its session ended.
#[derive(Debug, PartialEq, Eq)]
pub struct Ending {
    /// Its own handshake (QUIC's) never completed: a failed connect, by
    /// this cause, not counted yet.
    pub connect_failed: Option<ConnectCause>,
    /// Closed or reset before answering anything: the server turned it
    /// away (a server past its connection limit does this to every
    /// connection beyond it), and its requests are lost to that.
    pub unanswered: bool,
    /// Why it went down, for the account of connections down at the end,
    /// when nothing was noted before.
    pub down: Option<ReadCause>,
    /// What it is reopened for, when it had opened.
    pub reopen: Option<Reopen>,
}

impl Conn {
    /// How this connection's end is counted when its session ended
    /// (`failed` for the given cause, or finished).
    pub fn ending(&self, failed: Option<Failure>) -> Ending {
        let handshaking = self.is_handshaking();
        let counted = matches!(self.went_down(), Some(WentDown::Connect(_)));
        let connect_failed = (handshaking && !counted).then(|| handshake_cause(failed));
        let retirement = self.session().and_then(|s| s.retirement());
        // Not turned away: a connection closed for want of stream credit
        // (the server took it), a handshake that failed (a connect error,
        // counted by its cause), or a port that nothing listens on any
        // more (the server stopped).
        // A refused upgrade was answered, with its status. An opening that
        // metron gave up (a WebSocket upgrade or HTTP/2's SETTINGS past
        // --timeout) is a connect error, counted by its cause already.
        let refused = self.session().is_some_and(|s| s.info().refused.is_some());
        let unanswered = self.answered_nothing()
            && !refused
            && !handshaking
            && !counted
            && retirement != Some(Retirement::Starved)
            && matches!(
                failed.unwrap_or(Failure::Closed),
                Failure::Closed | Failure::Reset(None)
            );
        let down = match (unanswered, failed.map(loss)) {
            _ if self.went_down().is_some() || connect_failed.is_some() => None,
            (true, _) => Some(ReadCause::ClosedUnanswered),
            (false, Some(Loss::Read(cause))) => Some(cause),
            _ => None,
        };
        let opened = self.is_open() && !handshaking && !counted;
        let reopen = opened.then_some(match failed {
            _ if unanswered || refused => Reopen::TurnedAway,
            // It closes as the server said it would (after the last
            // response), or it starved for stream credit.
            None | Some(Failure::Closed) => match retirement {
                Some(Retirement::Asked) => Reopen::Retired,
                Some(Retirement::Starved) => Reopen::Starved,
                _ => Reopen::Closed,
            },
            // Nothing listens on the port any more: the server went away.
            Some(Failure::Refused) => Reopen::Closed,
            Some(Failure::Reset(_)) => Reopen::Reset,
            Some(Failure::Timeout) => Reopen::Timeout,
            Some(_) => Reopen::Failed,
        });
        Ending {
            connect_failed,
            unanswered,
            down,
            reopen,
        }
    }
}

/// What a failure costs a request, as wrk counts it, and why.
pub fn loss(why: Failure) -> Loss {
    match why {
        Failure::Reset(_) => Loss::Read(ReadCause::Reset),
        Failure::Refused => Loss::Read(ReadCause::PortClosed),
        Failure::Closed => Loss::Read(ReadCause::Closed),
        Failure::HeadTooLarge => Loss::Read(ReadCause::HeadTooLarge),
        Failure::BodyTooLarge => Loss::Read(ReadCause::BodyTooLarge),
        Failure::Malformed | Failure::Protocol => Loss::Read(ReadCause::Malformed),
        Failure::OtherProtocol => Loss::Read(ReadCause::OtherProtocol),
        Failure::Tls => Loss::Read(ReadCause::Tls),
        Failure::Write => Loss::Write,
        Failure::Timeout => Loss::Timeout,
    }
}

/// Why a connection whose own handshake (QUIC's) never completed failed
/// to open, from how its session ended (`None`: it went quiet and QUIC's
/// idle timeout ended it).
fn handshake_cause(failed: Option<Failure>) -> ConnectCause {
    match failed {
        Some(Failure::Refused) => ConnectCause::Refused,
        Some(Failure::Timeout) | None => ConnectCause::Timeout,
        Some(Failure::Tls) => ConnectCause::Tls,
        Some(Failure::Reset(_) | Failure::Closed) => ConnectCause::Reset,
        Some(_) => ConnectCause::Other,
    }
}

/// A closed connection hands back its socket (to deregister) and when it
/// should be reopened.
pub struct Closed<T> {
    pub io: Option<T>,
    pub reopen_at: Nanos,
}

/// Longest wait between two attempts to reopen a failing connection.
const MAX_BACKOFF: Nanos = 1_000_000_000;

pub type BoxedSession = Box<dyn Session<InFlight>>;

pub struct Conn<T = Transport> {
    state: State,
    /// The peer it connects to (an index into the worker's peers).
    peer: usize,
    io: Option<T>,
    session: Option<BoxedSession>,
    /// Responses completed on the current socket.
    served: u64,
    /// The server showed it took the current socket (see [`Conn::take`]).
    taken: bool,
    /// Consecutive attempts that ended before any response.
    failures: u32,
    /// Why it last went down, until it opens again.
    went_down: Option<WentDown>,
    /// When the attempt whose session is still making its own handshake
    /// (QUIC) started.
    handshaking_since: Option<Nanos>,
    /// A request on the current attempt timed out (see [`Conn::timed_out`]).
    timed_out: bool,
    /// When the current attempt began.
    attempt_at: Nanos,
    /// The poller reports its socket's room to write (see
    /// [`Conn::watch_writes`]).
    writes_watched: bool,
    /// The last write would have blocked: what is left waits for room.
    send_blocked: bool,
}

impl<T: Io> Conn<T> {
    /// A closed connection to peer `peer`, due to open at once.
    pub fn new(peer: usize) -> Conn<T> {
        Conn {
            state: State::Down { reopen_at: 0 },
            peer,
            io: None,
            session: None,
            served: 0,
            taken: false,
            failures: 0,
            went_down: None,
            handshaking_since: None,
            timed_out: false,
            attempt_at: 0,
            writes_watched: false,
            send_blocked: false,
        }
    }

    /// Why it last went down, while it has not opened since.
    pub fn went_down(&self) -> Option<WentDown> {
        self.went_down
    }

    /// It went down (or failed to come up) for `why`.
    pub fn note_down(&mut self, why: WentDown) {
        self.went_down = Some(why);
    }

    pub fn peer(&self) -> usize {
        self.peer
    }

    /// TCP connect or TLS handshake under way.
    pub fn is_connecting(&self) -> bool {
        matches!(
            self.state,
            State::Connecting { .. } | State::Handshaking { .. }
        )
    }

    /// Open: requests and responses move.
    pub fn is_open(&self) -> bool {
        self.state == State::Open
    }

    /// Its socket is open, and its session is still making a handshake of
    /// its own (QUIC's): until that completes, the connection is
    /// connecting.
    pub fn is_handshaking(&self) -> bool {
        self.is_open() && self.handshaking_since.is_some()
    }

    /// Open, with a session that takes requests (or will, once it has
    /// finished its opening).
    pub fn is_ready(&self) -> bool {
        self.is_open() && self.session.as_ref().is_some_and(|s| s.is_ready())
    }

    /// Its session, while it has one (from the start of an attempt to the
    /// close).
    pub fn session(&self) -> Option<&dyn Session<InFlight>> {
        self.session.as_deref()
    }

    pub fn session_mut(&mut self) -> Option<&mut (dyn Session<InFlight> + 'static)> {
        self.session.as_deref_mut()
    }

    /// Streams it can take now (0 unless open and ready).
    pub fn free_streams(&self) -> u32 {
        match (&self.session, self.state) {
            (Some(s), State::Open) => s.free_streams(),
            _ => 0,
        }
    }

    /// Requests opened on it and not yet given back.
    pub fn in_flight(&self) -> usize {
        self.session.as_ref().map_or(0, |s| s.in_flight())
    }

    /// A response completed on it: it served, so a close reopens at once.
    /// True for its first.
    pub fn served(&mut self) -> bool {
        self.served += 1;
        self.served == 1
    }

    /// The server showed it took this socket: its TLS or QUIC handshake
    /// completed, or a response came. True the first time.
    pub fn take(&mut self) -> bool {
        !std::mem::replace(&mut self.taken, true)
    }

    /// Open, and the server showed it took it.
    pub fn is_taken(&self) -> bool {
        self.is_open() && self.taken
    }

    /// Open, and a response has completed on it.
    pub fn has_answered(&self) -> bool {
        self.is_open() && self.served > 0
    }

    /// When the current attempt began, while it has not finished opening:
    /// its TCP connect, its TLS handshake, or its session's own opening
    /// (QUIC's handshake, the server's HTTP/2 SETTINGS) is still under way.
    pub fn opening_since(&self) -> Option<Nanos> {
        let opening = match self.state {
            State::Connecting { .. } | State::Handshaking { .. } => true,
            State::Open => {
                self.handshaking_since.is_some()
                    || self.session.as_ref().is_some_and(|s| !s.is_ready())
            }
            State::Down { .. } => false,
        };
        opening.then_some(self.attempt_at)
    }

    /// When the current (or last) attempt began.
    pub fn attempt_at(&self) -> Nanos {
        self.attempt_at
    }

    /// When the oldest request in flight on it was sent, if any is.
    pub fn oldest_sent(&self) -> Option<Nanos> {
        let mut oldest = None;
        if let Some(s) = &self.session {
            s.for_each_in_flight(&mut |t, _| {
                let sent = t.stamp.sent();
                oldest = Some(oldest.map_or(sent, |o: Nanos| o.min(sent)));
            });
        }
        oldest
    }

    /// Open, and no response has begun on it yet (none completed, and
    /// none of whose bytes came): a close now is the server turning the
    /// connection away, not ending a conversation part way.
    pub fn answered_nothing(&self) -> bool {
        self.is_open() && self.served == 0 && !self.session.as_ref().is_some_and(|s| s.has_heard())
    }

    /// A new attempt: the connect on `io` has started (the caller
    /// registered its socket), with a new `session`.
    pub fn open(&mut self, io: T, session: BoxedSession, now: Nanos) {
        self.io = Some(io);
        self.session = Some(session);
        self.state = State::Connecting { since: now };
        self.served = 0;
        self.taken = false;
        self.handshaking_since = None;
        self.attempt_at = now;
        // Registered for both, as every new socket is: the first writable
        // event says the connect is done.
        self.writes_watched = true;
        self.send_blocked = false;
    }

    /// Registers its socket with `registry` again when what the poller
    /// should report on it changed (see [`Conn::write_interest`]).
    pub fn watch_writes(&mut self, registry: &mio::Registry, token: mio::Token) {
        if let Some(interest) = self.write_interest() {
            if let Some(socket) = self.io.as_mut().and_then(Io::source) {
                let _ = registry.reregister(socket, token, interest);
            }
        }
    }

    /// What the poller should report on its socket from now on, when that
    /// changed. A
    /// stream socket is watched all along: the kernel raises its writable
    /// edge only after a write that blocked. A datagram socket raises one
    /// each time the peer takes a datagram and frees room, a wake-up per
    /// datagram for nothing: it is watched only while connecting and while
    /// a send would block.
    fn write_interest(&mut self) -> Option<Interest> {
        if !self.io.as_ref()?.carries_datagrams() {
            return None;
        }
        let wanted = self.state != State::Open || self.send_blocked;
        if wanted == self.writes_watched {
            return None;
        }
        self.writes_watched = wanted;
        Some(if wanted {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        })
    }

    /// A new attempt could not even start a connect: it stays closed and
    /// backs off. Returns when to try again.
    pub fn open_failed(&mut self, now: Nanos) -> Nanos {
        // A failed attempt served nothing, whatever the last socket did, so
        // that attempts failing at once back off instead of spinning.
        self.served = 0;
        self.taken = false;
        self.close(now).reopen_at
    }

    /// The socket reported readiness while connecting: finishes the TCP
    /// connect, then drives the TLS handshake (reading into `scratch`).
    pub fn on_connect_event(&mut self, scratch: &mut [u8], now: Nanos) -> Connect {
        let Some(io) = self.io.as_mut() else {
            return Connect::Pending;
        };
        match self.state {
            State::Connecting { since } => match io.finish_connect() {
                Ok(()) if io.handshaking() => {
                    self.state = State::Handshaking {
                        since,
                        connected: now,
                    };
                    Connect::Pending
                }
                Ok(()) => self.ready(&[], now, now - since, None),
                // A readiness event that came before the connect finished
                // (a stale one, for a socket this token named before).
                Err(e) if transport::still_connecting(&e) => Connect::Pending,
                Err(e) => Connect::Failed(transport::connect_cause(&e)),
            },
            State::Handshaking { since, connected } => match io.read(scratch) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if io.handshaking() {
                        Connect::Pending
                    } else {
                        self.ready(&[], now, connected - since, Some(now - connected))
                    }
                }
                // The server closed during the handshake.
                Ok(0) => Connect::Failed(ConnectCause::Reset),
                Err(e) if io.handshaking() => Connect::Failed(transport::connect_cause(&e)),
                Ok(_) if io.handshaking() => Connect::Failed(ConnectCause::Tls),
                Ok(n) => self.ready(&scratch[..n], now, connected - since, Some(now - connected)),
                Err(_) => self.ready(&[], now, connected - since, Some(now - connected)),
            },
            _ => Connect::Pending,
        }
    }

    /// Open, with the first bytes the server sent. A TLS 1.3 server may
    /// send data along with its last handshake flight, before our own
    /// Finished: a server's first frames often come that way, and the
    /// session must see them first.
    fn ready(&mut self, early: &[u8], now: Nanos, connect: Nanos, tls: Option<Nanos>) -> Connect {
        self.state = State::Open;
        self.went_down = None;
        if let Some(session) = self.session.as_mut() {
            if !early.is_empty() {
                session.handle(early, now);
            }
        }
        if self.io.as_ref().is_some_and(Io::carries_datagrams) {
            self.handshaking_since = Some(now - connect);
            return Connect::Ready(None);
        }
        Connect::Ready(Some(Setup { connect, tls }))
    }

    /// How long the session's own handshake (QUIC's) took, once, when it
    /// has just become ready. `now` is read only then: every response
    /// passes here, and a TCP connection never needs it.
    pub fn handshake_done(&mut self, now: impl FnOnce() -> Nanos) -> Option<Nanos> {
        let since = self.handshaking_since?;
        if !self
            .session
            .as_ref()
            .is_some_and(|s| s.info().handshake_complete)
        {
            return None;
        }
        self.handshaking_since = None;
        Some(now().saturating_sub(since))
    }

    /// Writes what the session has to send until it has no more or the
    /// socket would block.
    /// The run is over: the session says goodbye where its transport
    /// needs it said (see `Session::leave`), in one last write.
    pub fn leave(&mut self, now: Nanos) {
        if let (Some(session), State::Open) = (&mut self.session, self.state) {
            session.leave(now);
            let _ = self.on_writable(now);
        }
    }

    /// The session ends: what it must still say before the socket
    /// closes gets one write, if the socket takes it.
    pub fn last_words(&mut self, now: Nanos) {
        if self.session.as_ref().is_some_and(|s| s.has_last_words()) {
            let _ = self.on_writable(now);
        }
    }

    pub fn on_writable(&mut self, now: Nanos) -> Result<(), Broken> {
        let (Some(io), Some(session), State::Open) = (&mut self.io, &mut self.session, self.state)
        else {
            return Ok(());
        };
        let mut wrote = false;
        self.send_blocked = false;
        loop {
            let (bytes, segment) = session.transmit_segmented(now);
            if bytes.is_empty() {
                break;
            }
            match io.write_segmented(bytes, segment) {
                Ok(0) => return Err(Broken),
                Ok(n) => {
                    session.transmitted(n);
                    wrote = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.send_blocked = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(Broken),
            }
        }
        if wrote {
            io.flush().map_err(|_| Broken)?;
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
                Err(e) if transport::rustls_error(&e).is_some() => Read::Failed(ReadFailure::Tls),
                Err(_) => Read::Failed(ReadFailure::Reset),
            };
        }
    }

    /// Reads the datagrams waiting on the socket into `inbox`.
    pub fn read_datagrams(&mut self, inbox: &mut Inbox) -> Read {
        let Some(io) = self.io.as_mut() else {
            return Read::Blocked;
        };
        loop {
            return match io.read_datagrams(inbox) {
                Ok(_) => Read::Datagrams {
                    drained: !inbox.is_full(),
                },
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Read::Blocked,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    Read::Failed(ReadFailure::Refused)
                }
                Err(_) => Read::Failed(ReadFailure::Reset),
            };
        }
    }

    /// The socket carries datagrams: read with [`Conn::read_datagrams`].
    pub fn carries_datagrams(&self) -> bool {
        self.io.as_ref().is_some_and(Io::carries_datagrams)
    }

    /// Checks the timeouts and the reopen time against `now`.
    pub fn on_timer(&self, now: Nanos, timeout: Nanos) -> Check {
        match self.state {
            // A session's own opening that hangs (QUIC's handshake, a
            // server that never sends its HTTP/2 SETTINGS) is a connect
            // that hangs.
            State::Open
                if self
                    .opening_since()
                    .is_some_and(|t| now - t.min(now) > timeout) =>
            {
                Check::ConnectTimedOut
            }
            State::Open => {
                let mut oldest = now;
                if let Some(s) = &self.session {
                    s.for_each_in_flight(&mut |t, _| oldest = oldest.min(t.stamp.sent()));
                }
                if now - oldest > timeout {
                    Check::Expired
                } else {
                    Check::Nothing
                }
            }
            // A connect that hangs is a connect error, not a request error.
            State::Connecting { since } | State::Handshaking { since, .. } => {
                if now - since.min(now) > timeout {
                    Check::ConnectTimedOut
                } else {
                    Check::Nothing
                }
            }
            State::Down { reopen_at } if reopen_at <= now => Check::Reopen,
            State::Down { reopen_at } => Check::ReopenAt(reopen_at),
        }
    }

    /// A request on it outlived `--timeout`: it is closing because metron
    /// gave up waiting, which took the timeout already, not because the
    /// server refused it.
    pub fn timed_out(&mut self) {
        self.timed_out = true;
    }

    /// Drops the socket and the session (the caller drained what was in
    /// flight first). An attempt that served nothing backs off
    /// exponentially, so a server that refuses or hangs up at once is not
    /// hammered in a busy loop; one that served, or waited out a timeout,
    /// reopens at once.
    pub fn close(&mut self, now: Nanos) -> Closed<T> {
        let io = self.io.take();
        self.session = None;
        let refused = self.served == 0 && !std::mem::take(&mut self.timed_out);
        let reopen_at = if refused {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::h1::Http1;
    use crate::http::Event;
    use crate::stats::{Recorder, Window};
    use bytes::Bytes;
    use std::collections::VecDeque;
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
        broken: bool,
        datagrams: bool,
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
            if self.broken {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
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
        fn carries_datagrams(&self) -> bool {
            self.datagrams
        }
    }

    fn h1() -> BoxedSession {
        Box::new(Http1::new(1024, false))
    }

    /// A connection that is open on a plain mock socket.
    fn open_conn() -> Conn<Mock> {
        let mut c = Conn::new(0);
        c.open(Mock::plain(), h1(), 0);
        assert!(matches!(
            c.on_connect_event(&mut [0; 64], 0),
            Connect::Ready(_)
        ));
        c
    }

    fn io(c: &mut Conn<Mock>) -> &mut Mock {
        c.io.as_mut().expect("open")
    }

    /// A request tag as the statistics give it, sent at `sent`.
    fn tag(sent: Nanos) -> InFlight {
        let mut r = Recorder::new(Duration::from_secs(1), 0, None);
        r.begin(Window::ALL, false);
        InFlight {
            stamp: r.sent(sent, sent, None),
            request: Rc::new(get()),
            sends: 1,
            visit: None,
        }
    }

    const GET: &[u8] = b"GET / HTTP/1.1\r\n\r\n";

    fn get() -> Request {
        Request::new(Bytes::from_static(GET), false)
    }

    fn send(c: &mut Conn<Mock>, sent: Nanos) {
        let t = tag(sent);
        let r = Rc::clone(&t.request);
        assert!(c.session_mut().unwrap().open(&r, t, sent).is_ok());
    }

    /// Every datagram the peer takes frees room and would wake the worker:
    /// a datagram socket is watched for room to write only while it
    /// connects and while a send would block. A stream socket, whose
    /// kernel reports room only after a write blocked, is watched all
    /// along.
    #[test]
    fn a_datagram_socket_is_watched_for_room_only_while_it_needs_it() {
        let datagrams = Mock {
            datagrams: true,
            ..Mock::plain()
        };
        let mut c = Conn::new(0);
        c.open(datagrams, h1(), 0);
        assert_eq!(c.write_interest(), None, "registered for both");
        assert!(matches!(
            c.on_connect_event(&mut [0; 64], 0),
            Connect::Ready(_)
        ));
        assert_eq!(c.write_interest(), Some(Interest::READABLE));
        assert_eq!(c.write_interest(), None);
        io(&mut c).room = 0;
        send(&mut c, 1);
        assert_eq!(c.on_writable(1), Ok(()));
        let both = Interest::READABLE | Interest::WRITABLE;
        assert_eq!(c.write_interest(), Some(both));
        io(&mut c).room = usize::MAX;
        assert_eq!(c.on_writable(2), Ok(()));
        assert_eq!(io(&mut c).written, GET);
        assert_eq!(c.write_interest(), Some(Interest::READABLE));

        let mut stream = open_conn();
        io(&mut stream).room = 0;
        send(&mut stream, 1);
        assert_eq!(stream.on_writable(1), Ok(()));
        assert_eq!(stream.write_interest(), None);
    }

    #[test]
    fn every_failure_is_counted_where_wrk_counts_it() {
        assert_eq!(loss(Failure::Reset(Some(8))), Loss::Read(ReadCause::Reset));
        assert_eq!(loss(Failure::Protocol), Loss::Read(ReadCause::Malformed));
        assert_eq!(
            loss(Failure::OtherProtocol),
            Loss::Read(ReadCause::OtherProtocol)
        );
        assert_eq!(loss(Failure::Write), Loss::Write);
        assert_eq!(loss(Failure::Timeout), Loss::Timeout);
    }
    #[test]
    fn a_plain_connect_opens_it() {
        let mut c: Conn<Mock> = Conn::new(0);
        assert!(!c.is_open() && !c.is_connecting());
        c.open(Mock::plain(), h1(), 5);
        assert!(c.is_connecting() && !c.is_ready());
        assert_eq!(c.free_streams(), 0, "nothing goes out before it is open");
        let plain = Setup {
            connect: 2,
            tls: None,
        };
        assert_eq!(
            c.on_connect_event(&mut [0; 64], 7),
            Connect::Ready(Some(plain))
        );
        assert!(c.is_open() && c.is_ready());
        assert_eq!(c.free_streams(), 1);
    }

    #[test]
    fn tls_is_ready_only_once_the_handshake_is_over() {
        let mut c = Conn::new(0);
        let mock = Mock {
            tls: true,
            handshaking: true,
            ..Mock::plain()
        };
        c.open(mock, h1(), 0);
        let mut scratch = [0; 64];
        assert_eq!(c.on_connect_event(&mut scratch, 3), Connect::Pending);
        let connected = State::Handshaking {
            since: 0,
            connected: 3,
        };
        assert_eq!(c.state, connected);
        // Handshake records come and go; still under way.
        assert_eq!(c.on_connect_event(&mut scratch, 5), Connect::Pending);
        io(&mut c).handshaking = false;
        let setup = Setup {
            connect: 3,
            tls: Some(7),
        };
        assert_eq!(
            c.on_connect_event(&mut scratch, 10),
            Connect::Ready(Some(setup))
        );
        assert!(c.is_open());
    }

    /// The server's first bytes, decrypted with the end of the handshake,
    /// reach the session: an HTTP/2 server's SETTINGS make it ready.
    #[test]
    fn data_that_ends_the_handshake_reaches_the_session() {
        let mut c: Conn<Mock> = Conn::new(0);
        let mut mock = Mock {
            tls: true,
            handshaking: true,
            ..Mock::plain()
        };
        // An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
        mock.reads.push_back(Ok(vec![0, 0, 0, 4, 0, 0, 0, 0, 0]));
        let session = Box::new(crate::http::h2::Http2::new(Default::default()));
        c.open(mock, session, 0);
        let mut scratch = [0; 64];
        assert_eq!(c.on_connect_event(&mut scratch, 0), Connect::Pending);
        io(&mut c).handshaking = false;
        assert!(matches!(
            c.on_connect_event(&mut scratch, 0),
            Connect::Ready(_)
        ));
        assert!(c.is_ready());
    }

    #[test]
    fn a_refused_connect_or_handshake_fails_with_its_cause() {
        let mut c = Conn::new(0);
        let refused = Mock {
            connect_error: Some(io::ErrorKind::ConnectionRefused),
            ..Mock::plain()
        };
        c.open(refused, h1(), 0);
        assert_eq!(
            c.on_connect_event(&mut [0; 64], 0),
            Connect::Failed(ConnectCause::Refused)
        );
        // A stale readiness event before the connect finished is no failure.
        let mut c = Conn::new(0);
        let early = Mock {
            connect_error: Some(io::ErrorKind::NotConnected),
            ..Mock::plain()
        };
        c.open(early, h1(), 0);
        assert_eq!(c.on_connect_event(&mut [0; 64], 0), Connect::Pending);
        let mut c = Conn::new(0);
        let mut closed = Mock {
            tls: true,
            handshaking: true,
            ..Mock::plain()
        };
        closed.reads.push_back(Ok(Vec::new()));
        c.open(closed, h1(), 0);
        assert_eq!(c.on_connect_event(&mut [0; 64], 0), Connect::Pending);
        assert_eq!(
            c.on_connect_event(&mut [0; 64], 0),
            Connect::Failed(ConnectCause::Reset)
        );
    }

    #[test]
    fn a_connect_that_hangs_times_out() {
        let mut c = Conn::new(0);
        c.open(Mock::plain(), h1(), 100);
        assert_eq!(c.on_timer(100 + TIMEOUT, TIMEOUT), Check::Nothing);
        assert_eq!(c.on_timer(101 + TIMEOUT, TIMEOUT), Check::ConnectTimedOut);
    }

    #[test]
    fn the_sessions_bytes_go_out_across_short_writes() {
        let mut c = open_conn();
        io(&mut c).room = 10;
        send(&mut c, 1);
        send(&mut c, 2);
        let batch = [GET, GET].concat();
        assert_eq!(c.on_writable(0), Ok(()));
        assert_eq!(io(&mut c).written, &batch[..10]);
        io(&mut c).room = usize::MAX;
        assert_eq!(c.on_writable(0), Ok(()));
        assert_eq!(io(&mut c).written, batch);
        assert_eq!(c.in_flight(), 2);
    }

    #[test]
    fn a_write_error_is_reported() {
        let mut c = open_conn();
        send(&mut c, 0);
        io(&mut c).broken = true;
        assert_eq!(c.on_writable(0), Err(Broken));
    }

    #[test]
    fn reads_say_when_a_plain_socket_is_drained_and_how_it_failed() {
        let mut c = open_conn();
        io(&mut c).reads.extend([
            Ok(vec![1; 8]),
            Ok(vec![2; 3]),
            Ok(Vec::new()),
            Err(io::ErrorKind::ConnectionReset.into()),
        ]);
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
        assert_eq!(c.read(&mut buf), Read::Failed(ReadFailure::Reset));
        assert_eq!(c.read(&mut buf), Read::Blocked);
    }

    #[test]
    fn bytes_read_reach_the_session() {
        let mut c = open_conn();
        send(&mut c, 0);
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        c.session_mut().unwrap().handle(ok, 7);
        let event = c.session_mut().unwrap().poll_event();
        assert!(
            matches!(
                event,
                Some(Event::Response {
                    status: 200,
                    first_byte: 7,
                    ..
                })
            ),
            "{event:?}"
        );
    }

    #[test]
    fn requests_older_than_the_timeout_expire() {
        let mut c = open_conn();
        send(&mut c, 50);
        assert_eq!(c.on_timer(50 + TIMEOUT, TIMEOUT), Check::Nothing);
        assert_eq!(c.on_timer(51 + TIMEOUT, TIMEOUT), Check::Expired);
        // A connection whose clock reads earlier than the send never
        // expires on that account.
        assert_eq!(c.on_timer(10, TIMEOUT), Check::Nothing);
    }

    #[test]
    fn failing_attempts_back_off_up_to_a_second() {
        let mut c: Conn<Mock> = Conn::new(0);
        assert_eq!(c.close(0).reopen_at, 2_000_000);
        assert_eq!(c.close(0).reopen_at, 4_000_000);
        for _ in 0..20 {
            let _ = c.close(0);
        }
        assert_eq!(c.close(0).reopen_at, MAX_BACKOFF);
        assert_eq!(
            c.on_timer(MAX_BACKOFF - 1, TIMEOUT),
            Check::ReopenAt(MAX_BACKOFF)
        );
        assert_eq!(c.on_timer(MAX_BACKOFF, TIMEOUT), Check::Reopen);
    }

    #[test]
    fn a_connection_that_served_reopens_at_once() {
        let mut c = open_conn();
        c.served();
        let closed = c.close(50);
        assert!(closed.io.is_some());
        assert_eq!(closed.reopen_at, 50);
        assert_eq!(c.failures, 0);
        assert!(c.session().is_none(), "its session went with it");
    }

    /// What tells a connection turned away from one closed midway: only
    /// an open one that completed no response answered nothing, and a
    /// reopened one starts over.
    #[test]
    fn a_connection_answered_nothing_until_a_response_completes_on_it() {
        let mut c: Conn<Mock> = Conn::new(0);
        assert!(!c.answered_nothing(), "not open yet");
        c.open(Mock::plain(), h1(), 0);
        assert!(!c.answered_nothing(), "still connecting");
        assert!(matches!(
            c.on_connect_event(&mut [0; 64], 0),
            Connect::Ready(_)
        ));
        assert!(c.answered_nothing());
        c.served();
        assert!(!c.answered_nothing());
        let _ = c.close(10);
        c.open(Mock::plain(), h1(), 10);
        assert!(matches!(
            c.on_connect_event(&mut [0; 64], 10),
            Connect::Ready(_)
        ));
        assert!(c.answered_nothing(), "a new socket has answered nothing");
    }

    #[test]
    fn an_attempt_that_cannot_start_backs_off_even_after_a_served_socket() {
        let mut c = open_conn();
        c.served();
        assert_eq!(c.close(10).reopen_at, 10);
        // Reopening fails before a socket exists: not at once again.
        assert_eq!(c.open_failed(10), 2_000_010);
        assert_eq!(c.open_failed(10), 4_000_010);
    }
}
