//! One worker thread's loop: its poller and the handlers that move bytes
//! between sockets and sessions. The rest has rooms of its own, which the
//! loop drives: the connections ([`Pool`]), when requests are due and
//! which ([`Schedule`], [`Source`]), the script's hooks ([`Hooks`]) and
//! what the thread was given ([`WorkerSetup`]).
//!
//! The loop is the same in both modes; the plan decides when requests are
//! due. In rate mode a due request takes a free slot ([`Slots`]: a free
//! stream of some connection's session), or waits (implicitly: it is
//! simply the next intended time not yet taken) until one frees up, its
//! latency counting from its intended time all the while. In the closed
//! loop a stream sends its next request as soon as it is free. Nothing
//! here allocates per request, locks, or touches memory shared with other
//! threads; the shared stop flag is read only when the main thread wakes
//! this one.
//!
//! The worker never asks which protocol a connection speaks: each
//! connection ([`Conn`]) carries a [`Session`](crate::http::Session) made
//! by its peer's protocol, and the handlers ([`Worker::on_connected`],
//! [`Worker::on_readable`], [`Worker::flush`], [`Worker::on_timer`]) move
//! bytes and act on the session's events: a request answered or lost (one
//! [`Recorder`] call each), a request the server never processed (sent
//! again), streams freed (offered as slots), the session retired (a new
//! connection takes its place at once, and the old one finishes on the
//! side, no longer counted against `-c`) or finished (closed, reopened).
//!
//! A script's `request()` may return several requests at once: the batch
//! goes out on one slot when its first request falls due, and takes one
//! intended time of the schedule per request. `delay()` rests a slot for
//! that long before its next request, in both modes.

use std::collections::VecDeque;
use std::io;
use std::rc::Rc;
use std::sync::Arc;

use mio::{Token, Waker};

use crate::clock::{self, Nanos};
use crate::http::ws::Shape;
use crate::http::{Failure, OpenError, Request, Retirement};
use crate::schedule::Plan;
use crate::script::ScriptError;
use crate::stats::{
    ConnectCause, EventKind, Loss, Phases, ReadCause, Recorder, Reopen, Reply, StopCause,
    ThreadStats,
};

mod flow;
mod timers;

use super::conn::{loss, Connect, InFlight, Read, ReadFailure, WentDown};
use super::hooks::Hooks;
use super::poller::{Deadline, Events, Poller, Ready, WAKE};
use super::pool::{Alarms, Pool, Role};
use super::share::{pin_to_cpu, Peers, SessionShape, WorkerSetup};
use super::slots::{Assigned, Due, Slot, Slots};
use super::source::{Schedule, Source};
use super::transport::{self, Inbox};
use super::visits::Visits;
use super::{EngineError, Stop};

pub use crate::stats::Window;

/// Connections a sweep checks between looks at the schedule.
const SWEEP_SLICE: usize = 256;
/// Size of the one read buffer all of a worker's connections share.
const READ_BUF: usize = 64 * 1024;
/// How often one request goes out at most when the server keeps saying it
/// never processed it (refused, or past where the server said it stopped).
const MAX_SENDS: u8 = 8;

pub struct Worker {
    index: usize,
    poller: Poller,
    stop: Arc<Stop>,
    /// The connections, by token.
    pool: Pool,
    /// What due requests wait for: free slots, per peer.
    slots: Slots,
    /// Per peer, requests the server never processed (refused, or past
    /// where it said it stopped), or that found no stream after all, oldest
    /// first: they go out again before any new request.
    retries: Vec<VecDeque<InFlight>>,
    /// Rests of the script's `delay()`: (until, place, generation),
    /// earliest first.
    resting: Alarms,
    /// Deadlines sessions asked for: (at, place, generation).
    deadlines: Alarms,
    /// Streams are being opened in a row; one write sends them.
    filling: bool,
    peers: Peers,
    source: Source,
    hooks: Hooks,
    /// The batch being sent (reused).
    batch: Vec<Rc<Request>>,
    /// Requests taken from a closing session (reused).
    drained: Vec<InFlight>,
    /// The first fatal error (a script's); it stops every worker.
    failure: Option<EngineError>,
    timeout: Nanos,
    offered_by: Option<String>,
    buf: Box<[u8]>,
    /// Where datagram connections read, made when the first opens.
    inbox: Option<Box<Inbox>>,
    stats: Recorder,
    schedule: Schedule,
    /// Next time to look for timed-out requests and connections to reopen.
    next_sweep: Nanos,
    sweep_every: Nanos,
    /// The schedule has started (connections opened before it wait idle).
    started: bool,
    progress: Option<Arc<super::progress::Board>>,
    next_publish: Nanos,
    /// A flow's visits (the script defines `flow(visit)`).
    visits: Option<Visits>,
    /// A WebSocket run, of this shape: a script's `message()` reads its
    /// messages.
    websocket: Option<Shape>,
}

/// What a worker hands back when its run is over.
pub struct Finished {
    pub stats: ThreadStats,
    /// When it stopped: the window's end, or earlier (a stop, an error,
    /// the script's `thread:stop()`).
    pub ended: Nanos,
    /// The first fatal error it met (a script's).
    pub failure: Option<EngineError>,
}

impl Worker {
    /// Opens the poller and starts every connection.
    pub fn new(setup: WorkerSetup, stop: Arc<Stop>) -> Result<Worker, EngineError> {
        let thread = setup.index;
        Worker::build(setup, stop).map_err(|why| EngineError::Worker { thread, why })
    }

    fn build(setup: WorkerSetup, stop: Arc<Stop>) -> io::Result<Worker> {
        if let Some(cpu) = setup.cpu {
            pin_to_cpu(cpu)?;
        }
        let poller = Poller::new()?;
        let hooks = Hooks::new(setup.script, setup.calls.is_some(), setup.check);
        let capture = hooks.capture();
        let pushes = setup.websocket == Some(Shape::Push);
        let reading = hooks.reading(
            setup.sse || pushes,
            setup.llm.is_some(),
            setup.calls == Some(true),
        );
        let source = Source::new(setup.replay, hooks.script_ref(), &setup.request)?;
        let shape = SessionShape {
            max_head: setup.max_head,
            capture,
            reading,
            max_streams: setup.max_streams,
        };
        let peers = setup.peers.len();
        let sweep_every = (setup.timeout / 10).clamp(1_000_000, 50_000_000);
        let mut w = Worker {
            index: setup.index,
            poller,
            stop,
            pool: Pool::new(peers, setup.connections, setup.max_connections),
            slots: Slots::new(peers, setup.connections),
            retries: vec![VecDeque::new(); peers],
            resting: Alarms::default(),
            deadlines: Alarms::default(),
            filling: false,
            peers: Peers::new(setup.peers, &shape),
            source,
            hooks,
            batch: Vec::with_capacity(4),
            drained: Vec::new(),
            failure: None,
            timeout: setup.timeout,
            offered_by: setup.offered_by,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            inbox: None,
            stats: Recorder::new(setup.interval, setup.endpoints, setup.counts_every),
            schedule: Schedule::new(Plan::Closed),
            next_sweep: 0,
            sweep_every,
            started: false,
            progress: setup.progress,
            next_publish: 0,
            visits: None,
            websocket: setup.websocket,
        };
        if w.hooks.script_ref().is_some_and(|s| s.has_flow()) {
            w.visits = Some(Visits::new(setup.lane, setup.visit_timeout));
            w.stats.by_visits();
        }
        if setup.calls == Some(true) {
            w.stats.read_events(EventKind::Messages);
        } else if pushes {
            w.stats.read_events(EventKind::WebSocket);
        } else if setup.sse || setup.llm.is_some() {
            w.stats.read_events(EventKind::Sse);
        }
        if let Some(goodput) = setup.llm {
            w.stats.read_tokens(goodput);
        }
        // Ctrl-C wakes it from here on, while its connections open too.
        w.stop.register(w.waker());
        let now = clock::now();
        for c in 0..setup.connections {
            let i = w.pool.add(c % peers);
            w.open(i);
        }
        w.await_connections(now + setup.connect_wait)?;
        Ok(w)
    }

    pub fn waker(&self) -> Arc<Waker> {
        self.poller.waker()
    }

    /// Runs the event loop until the window ends, the run is stopped or the
    /// script calls `thread:stop()`; hands back what was measured, when
    /// this thread stopped and the first fatal error, if any.
    pub fn run(mut self, plan: Plan, window: Window, phases: Phases) -> io::Result<Finished> {
        self.hooks.live(true);
        self.schedule = Schedule::new(plan);
        if let Some(v) = self.visits.as_mut().filter(|_| !self.schedule.paced()) {
            // The closed loop: each connection carries one visit at a time.
            v.lanes(self.pool.len(), clock::now());
        }
        self.stats.begin(window, self.paced());
        self.stats.by_phase(phases);
        self.started = true;
        // Every open connection offers its free streams again: in the
        // closed loop each takes its first request, and the script's
        // `delay()` applies from now on.
        let _ = self.slots.take_free();
        for i in 0..self.pool.len() {
            self.pool[i].offered = 0;
            if self.pool[i].role == Role::Active {
                self.top_up(i);
            }
        }
        self.slots.free_before_start();
        let ended = self.event_loop()?;
        self.hooks.live(false);
        let failure = self.failure.take();
        Ok(Finished {
            stats: self.finish(ended),
            ended,
            failure,
        })
    }

    fn event_loop(&mut self) -> io::Result<Nanos> {
        let mut events = Events::with_capacity(1024);
        let end = self.stats.window().end;
        loop {
            let now = clock::now();
            if now >= end {
                return Ok(end);
            }
            if self.halted() {
                return Ok(now);
            }
            self.on_timer(now);
            let deadline = self.next_deadline();
            self.poller.wait(&mut events, deadline)?;
            let paced = self.paced();
            for ev in events.iter() {
                match ev.token() {
                    // Nothing is sent after this moment, so it ends this
                    // thread's window exactly.
                    WAKE if self.stop.is_stopped() => return Ok(clock::now().min(end)),
                    WAKE => {}
                    Token(c) => self.on_event(c, &ev),
                }
                // A long batch of events takes a while to handle: requests
                // that fall due meanwhile go out between events, not after
                // the last one.
                if paced {
                    self.dispatch();
                }
            }
        }
    }

    /// A fatal error happened, or the script asked this thread to stop.
    fn halted(&self) -> bool {
        self.failure.is_some() || self.hooks.stop_requested()
    }

    /// Records the first fatal error and stops every worker.
    fn fail(&mut self, e: EngineError) {
        self.failure.get_or_insert(e);
        self.stop.trigger(StopCause::Error);
    }

    /// Before the start: waits until every connection is open and its
    /// session ready (whatever its protocol waits for first), or has failed (or
    /// `until`, or the run was stopped), so that the schedule starts with
    /// its streams free. Sessions' timers run meanwhile: a QUIC handshake
    /// whose first packet was lost sends it again.
    fn await_connections(&mut self, until: Nanos) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let now = clock::now();
            if !self.pool.opening() || now >= until || self.stop.is_stopped() {
                return Ok(());
            }
            self.session_deadlines(now);
            let soft = self.deadlines.next_standing(&self.pool);
            let deadline = Deadline {
                hard: until,
                soft: soft.unwrap_or(Nanos::MAX),
            };
            self.poller.wait(&mut events, deadline)?;
            for ev in events.iter() {
                match ev.token() {
                    WAKE => {}
                    Token(c) => self.on_event(c, &ev),
                }
            }
        }
    }

    /// The earliest moment the loop has something to do without I/O.
    fn next_deadline(&mut self) -> Deadline {
        let rest = self.resting.next().unwrap_or(Nanos::MAX);
        let mut at = self.stats.window().end.min(rest);
        // A session's timers (QUIC's loss detection, an acknowledgement
        // held back) and the sweep of timeouts may be a little late.
        let session = self.deadlines.next_standing(&self.pool);
        let soft = self.next_sweep.min(session.unwrap_or(Nanos::MAX));
        if self.slots.any_free() {
            if let Some(due) = self.next_due() {
                at = at.min(due);
            }
        } else if self.pool.may_grow() {
            // A request (or a visit's step) falling due with no slot free
            // may open a connection: wake for the first not yet seen
            // waiting.
            let step = self.visits.as_ref().and_then(|v| v.next_uncounted());
            if let Some(due) = self.schedule.next_uncounted().into_iter().chain(step).min() {
                at = at.min(due);
            }
        }
        Deadline { hard: at, soft }
    }

    /// Whatever falls due by `now` without I/O: timeouts and reopenings
    /// (every sweep), sessions' deadlines, ends of delays, and the
    /// schedule's requests.
    fn on_timer(&mut self, now: Nanos) {
        if now >= self.next_sweep {
            self.sweep(now);
        }
        self.session_deadlines(now);
        self.wake_rested(now);
        self.dispatch();
    }

    /// Sends every due request that has a free slot to go on.
    fn dispatch(&mut self) {
        let end = self.stats.window().end;
        while !self.halted() {
            let now = clock::now();
            if !self.slots.any_free() {
                return self.no_free_slot(now, end);
            }
            let Some((at, request)) = self.take_next(now, end) else {
                return;
            };
            let peer = self.source.peer_of(request);
            // Without a free slot of its peer, it waits for one.
            match self.slots.assign(peer, Due { at, request }) {
                Some(a) => {
                    self.send_assigned(a);
                    // The last free slot went: where the pool may grow, one
                    // more connection opens now, so that the next request
                    // finds it open instead of waiting for its connect.
                    if !self.slots.any_free() {
                        self.grow(peer, 1);
                    }
                }
                None => {
                    if self.schedule.uncounted(at) {
                        let why = self.pool.wait_cause(peer, now);
                        self.stats.waits(at, why);
                    }
                    self.grow(peer, 0);
                }
            }
        }
    }

    /// No slot is free: due requests stay on the schedule until one is.
    /// Each is counted once, as it begins to wait, by why it waits; and
    /// the pool grows for them, if it may.
    fn no_free_slot(&mut self, now: Nanos, end: Nanos) {
        self.steps_wait(now);
        let Some(next) = self.schedule.next().filter(|&t| t <= now && t < end) else {
            return;
        };
        let peer = self.source.peer_of(self.source.upcoming());
        let until = (now + 1).min(end);
        if self.schedule.next_uncounted().is_some_and(|t| t <= now) {
            let fresh = self.schedule.count_waiting(next, until);
            if fresh > 0 {
                let why = self.pool.wait_cause(peer, now);
                self.stats.waits_n(next, why, fresh);
            }
        }
        if self.pool.may_grow() {
            let pending = self.schedule.count_pending(next, until);
            self.grow(peer, pending as usize);
        }
    }

    /// Opens another connection to `peer` for its waiting requests, and
    /// `due` more still on the schedule, when the pool may grow and the
    /// connections already opening would not take them all.
    fn grow(&mut self, peer: usize, due: usize) {
        if let Some(i) = self.pool.grow(peer, self.slots.waiting_for(peer), due) {
            self.open(i);
        }
    }

    fn send_assigned(&mut self, a: Assigned) {
        let i = a.slot.conn;
        self.pool[i].offered = self.pool[i].offered.saturating_sub(1);
        if a.waited {
            self.stats.queued(a.due.at);
        }
        self.send(i, Some(a.due.at), a.due.request, None);
    }

    fn on_event(&mut self, i: usize, ev: &Ready) {
        if !self.pool.holds(i) {
            return;
        }
        if self.pool[i].conn.is_connecting() {
            self.on_connected(i);
        } else if self.pool[i].conn.is_open() {
            if ev.is_writable() && !self.flush(i) {
                return;
            }
        } else {
            return;
        }
        // The same edge may also carry bytes or the peer's close (even for
        // a connection that only just finished connecting), and an
        // edge-triggered poller reports it only once.
        let closing = ev.is_read_closed() || ev.is_error();
        if self.pool[i].conn.is_open() && (ev.is_readable() || closing) {
            self.on_readable(i, closing);
        }
    }

    /// The connect (or the TLS handshake) of connection `i` moved on.
    fn on_connected(&mut self, i: usize) {
        let now = clock::now();
        match self.pool[i].conn.on_connect_event(&mut self.buf, now) {
            Connect::Pending => {}
            // Its session starts: the preface goes out, and early bytes
            // may already have brought events.
            Connect::Ready(setup) => {
                if let Some(setup) = setup {
                    self.stats.connected(now, setup.connect, setup.tls);
                    // The server's own code answered the TLS handshake.
                    if let Some(tls) = setup.tls {
                        self.taken(i, Some(setup.connect + tls));
                    }
                }
                self.settle(i, None);
            }
            Connect::Failed(cause) => self.connect_failed(i, cause),
        }
    }

    /// Reads until the socket would block, handing every read to the
    /// session. `closing`: the event also reported the peer's close, which
    /// the edge-triggered poller will not report again.
    fn on_readable(&mut self, i: usize, closing: bool) {
        if self.pool[i].conn.carries_datagrams() {
            return self.on_datagrams(i);
        }
        loop {
            let now = clock::now();
            let (n, drained) = match self.pool[i].conn.read(&mut self.buf) {
                Read::Bytes { n, drained } => (n, drained),
                Read::Blocked | Read::Datagrams { .. } => return,
                Read::Eof => {
                    if let Some(s) = self.pool[i].conn.session_mut() {
                        s.handle_eof(now);
                    }
                    self.settle(i, None);
                    return;
                }
                Read::Failed(f) => {
                    let why = match f {
                        ReadFailure::Reset => Failure::Reset(None),
                        ReadFailure::Refused => Failure::Refused,
                        ReadFailure::Tls => Failure::Tls,
                    };
                    self.settle(i, Some(why));
                    return;
                }
            };
            if let Some(s) = self.pool[i].conn.session_mut() {
                s.handle(&self.buf[..n], now);
            }
            if !self.settle(i, None) {
                return;
            }
            // A short read drained the socket: more data raises a new edge,
            // so asking again would only return WouldBlock (a wasted call).
            // Not when the peer's close came with this edge: no new edge
            // would announce it, so read on until the end of the stream.
            if drained && !closing {
                return;
            }
        }
    }

    /// Reads datagrams until the socket would block, a batch per call,
    /// handing each to the session and acting on what they brought once
    /// per batch.
    fn on_datagrams(&mut self, i: usize) {
        let mut inbox = self.inbox.take().unwrap_or_default();
        loop {
            let now = clock::now();
            let drained = match self.pool[i].conn.read_datagrams(&mut inbox) {
                Read::Datagrams { drained } => drained,
                Read::Failed(why) => {
                    // The host said the port is closed (an ICMP error).
                    let why = match why {
                        ReadFailure::Refused => Failure::Refused,
                        _ => Failure::Reset(None),
                    };
                    self.settle(i, Some(why));
                    break;
                }
                Read::Blocked | Read::Eof | Read::Bytes { .. } => break,
            };
            if let Some(s) = self.pool[i].conn.session_mut() {
                for datagram in inbox.datagrams() {
                    s.handle(datagram, now);
                }
            }
            if !self.settle(i, None) || drained {
                break;
            }
        }
        self.inbox = Some(inbox);
    }

    /// Acts on what the session of connection `i` reported after it took
    /// bytes, a close or a deadline: records its events, then closes the
    /// connection (finished, or `failed` for the given cause), replaces it
    /// (retired) or puts its free streams to use, and writes its output.
    /// Returns false when the connection closed (or the run halted).
    fn settle(&mut self, i: usize, failed: Option<Failure>) -> bool {
        let peer = self.pool[i].conn.peer();
        let mut failed = failed;
        let mut again = false;
        // A QUIC connection opens when its handshake is done: the time it
        // took stands as its connect (TLS is inside it).
        if let Some(handshake) = self.pool[i].conn.handshake_done(clock::now) {
            self.stats.connected(clock::now(), handshake, None);
            self.taken(i, Some(handshake));
        }
        // One moment for every event the session holds: each came from
        // bytes or a deadline already handled, so they are all in hand by
        // now (a response no later than this), and a script's `response()`
        // on one does not make the next look slower.
        let now = clock::now();
        loop {
            let Some(event) = self.pool[i].conn.session_mut().and_then(|s| s.poll_event()) else {
                break;
            };
            match event {
                crate::http::Event::Response {
                    tag,
                    status,
                    bytes,
                    first_byte,
                    events,
                    tokens,
                    grpc_status,
                } => {
                    let first = self.pool[i].conn.served();
                    let opened = first.then(|| self.pool[i].conn.attempt_at());
                    self.pool
                        .capacity(peer)
                        .answered(tag.stamp.sent(), now, opened);
                    if first {
                        self.taken(i, None);
                    }
                    let captured = self.pool[i].conn.session().map(|s| s.captured());
                    let rpc = self.hooks.call_status(status, grpc_status);
                    let checked = self.hooks.check(rpc, captured);
                    let reply = Reply {
                        status,
                        rpc,
                        checked,
                        bytes,
                        first_byte,
                    };
                    self.stats.completed(tag.stamp, reply, now);
                    self.stats.events_completed(tag.stamp, events);
                    if let Some(answer) = tokens {
                        self.stats.tokens_completed(tag.stamp, &answer, status, now);
                    }
                    if !self.run_response(i, status) {
                        return false;
                    }
                    if tag.visit.is_some() {
                        self.visit_answered(i, tag.visit, status, now);
                    }
                }
                crate::http::Event::Message {
                    tag,
                    at,
                    previous,
                    data,
                    binary,
                } => {
                    // When its bytes came: a push's messages held for
                    // their subscription are timed as they came.
                    self.stats.message(tag.stamp, previous, at.min(now));
                    let result = match (self.websocket, data) {
                        (Some(_), Some(data)) => self.hooks.message(&data, binary, true),
                        (_, data) => self.hooks.event(data.as_deref()),
                    };
                    if !self.script_went_on(result) {
                        return false;
                    }
                }
                crate::http::Event::Unasked { data, binary } => {
                    let result = self.hooks.message(&data, binary, false);
                    if !self.script_went_on(result) {
                        return false;
                    }
                }
                crate::http::Event::Lost { tag, why } => self.lost(tag, why, now),
                crate::http::Event::Unprocessed { tag } => {
                    again |= self.unprocessed(peer, tag, now);
                }
                crate::http::Event::GoAway { code } => self.stats.goaway(code, now),
                crate::http::Event::Failed { why } => {
                    failed.get_or_insert(why);
                }
            }
        }
        let (finished, retired) = match self.pool[i].conn.session() {
            Some(s) => (s.is_finished(), s.is_retired()),
            None => (true, true),
        };
        let open = if failed.is_some() || finished {
            self.end(i, failed);
            false
        } else {
            if retired && self.pool[i].role == Role::Active {
                self.retire(i);
            } else if self.pool[i].role == Role::Active {
                self.top_up(i);
            }
            self.flush(i)
        };
        if again {
            self.resend(peer);
        }
        self.watch_deadline(i);
        open && !self.halted()
    }

    /// Runs the script's `response()` on the response just recorded on
    /// connection `i`, if it has one. False when the script failed.
    /// An echo's answer is a message received too: the script's
    /// `message()` reads it after `response()`.
    fn run_response(&mut self, i: usize, status: u16) -> bool {
        let Some(s) = self.pool[i].conn.session() else {
            return true;
        };
        let mut result = self.hooks.response(status, s.captured());
        if result.is_ok() && self.websocket == Some(Shape::Echo) {
            let binary = s.info().messages.is_some_and(|m| m.binary_read);
            result = self.hooks.message(s.captured().body(), binary, false);
        }
        self.script_went_on(result)
    }

    /// Whether a hook of the script returned; its error stops the run.
    fn script_went_on(&mut self, result: Result<(), ScriptError>) -> bool {
        match result {
            Ok(()) => true,
            Err(e) => {
                self.fail(e.into());
                false
            }
        }
    }

    /// A request ended without a response, for `why`.
    fn lost(&mut self, tag: InFlight, why: Failure, now: Nanos) {
        match why {
            Failure::Reset(Some(code)) => self.stats.reset(tag.stamp, code, now),
            _ => self.stats.lost(tag.stamp, loss(why), now),
        }
        if tag.visit.is_some() {
            self.visit_lost(&tag, loss(why), now);
        }
    }

    /// The server never processed `tag`'s request: it goes out again, up
    /// to [`MAX_SENDS`] times in all (a server that refuses it every time
    /// resets it, in effect). True when it waits to go again.
    fn unprocessed(&mut self, peer: usize, tag: InFlight, now: Nanos) -> bool {
        if tag.sends >= MAX_SENDS {
            self.lost(tag, Failure::Reset(None), now);
            return false;
        }
        self.stats.retried(tag.stamp);
        self.stats.waits_again(tag.stamp, now);
        self.retries[peer].push_back(tag);
        true
    }

    /// Connection `i` is done: what is still in flight on it is lost (to
    /// `failed`, or to the server's close), and it closes. One whose own
    /// handshake (QUIC's) never completed failed to connect, by the cause
    /// it met; one that had opened is reopened, counted by what ended it.
    fn end(&mut self, i: usize, failed: Option<Failure>) {
        let now = clock::now();
        let ending = self.pool[i].conn.ending(failed);
        if let Some(cause) = ending.connect_failed {
            self.count_connect_failure(i, cause, now);
        }
        if ending.unanswered {
            let conn = &self.pool[i].conn;
            let (peer, opened, taken) = (conn.peer(), conn.attempt_at(), conn.is_taken());
            self.pool.capacity(peer).turned_away(opened, taken);
        }
        let mut drained = std::mem::take(&mut self.drained);
        if let Some(s) = self.pool[i].conn.session_mut() {
            s.drain(&mut drained);
        }
        let why = failed.unwrap_or(Failure::Closed);
        for tag in drained.drain(..) {
            if ending.unanswered {
                let cause = Loss::Read(ReadCause::ClosedUnanswered);
                self.stats.lost(tag.stamp, cause, now);
                if tag.visit.is_some() {
                    self.visit_lost(&tag, cause, now);
                }
            } else {
                self.lost(tag, why, now);
            }
        }
        self.drained = drained;
        if let Some(cause) = ending.down {
            self.pool[i].conn.note_down(WentDown::Read(cause));
        }
        match failed {
            Some(Failure::Protocol) => self.stats.connection_error(now),
            Some(Failure::Timeout) if ending.reopen.is_some() => self.pool[i].conn.timed_out(),
            _ => {}
        }
        self.pool[i].conn.last_words(now);
        self.close(i, ending.reopen);
    }

    /// The session of connection `i` takes no new request but still has
    /// some in flight (or, granted no stream, has none and gets none): a
    /// new connection takes its place at once, and it finishes on the
    /// side.
    fn retire(&mut self, i: usize) {
        let peer = self.pool[i].conn.peer();
        let starved =
            self.pool[i].conn.session().and_then(|s| s.retirement()) == Some(Retirement::Starved);
        self.forget_slots(i);
        self.pool.drain(i);
        self.stats.reopened(if starved {
            Reopen::Starved
        } else {
            Reopen::Retired
        });
        let j = self.pool.add(peer);
        self.open(j);
    }

    /// Takes back the free slots of connection `i` and forgets its rests.
    fn forget_slots(&mut self, i: usize) {
        let peer = self.pool[i].conn.peer();
        self.slots.remove(peer, Slot { conn: i });
        self.pool[i].forget();
    }

    /// Closes connection `i` (whose session was drained): an active one
    /// reopens now or after its back-off (counted by what `ended` it, when
    /// it had opened), unless it lies beyond the server's connection limit;
    /// a draining one leaves its place.
    fn close(&mut self, i: usize, ended: Option<Reopen>) {
        let now = clock::now();
        let peer = self.pool[i].conn.peer();
        let answered = self.pool[i].conn.has_answered();
        let taken = self.pool[i].conn.is_taken();
        self.pool.capacity(peer).closed(taken);
        let beyond = !answered && self.pool.beyond_limit(peer);
        self.forget_slots(i);
        if let Some(info) = self.pool[i].conn.session().map(|s| s.info()) {
            if let Some(p) = info.packets {
                self.stats.packets(p);
            }
            if let Some(code) = info.close_code {
                self.stats.ws_closed(code);
            }
            if let Some(status) = info.refused {
                self.stats.ws_refused(status);
            }
            if let Some(m) = info.messages {
                self.stats.ws_messages(m);
            }
        }
        let closed = self.pool[i].conn.close(now);
        if let Some(mut t) = closed.io {
            let _ = self.poller.registry().deregister(t.socket());
        }
        // Past the server's limit the pool shrinks back to it; a draining
        // connection leaves its place.
        if self.pool[i].role == Role::Draining || beyond {
            self.pool.vacate(i);
        } else {
            if let Some(why) = ended {
                self.stats.reopened(why);
            }
            if closed.reopen_at <= now {
                self.open(i);
            } else {
                self.next_sweep = self.next_sweep.min(closed.reopen_at);
            }
        }
    }

    /// Starts connection `i`; a failure to even start counts as a connect
    /// error and is retried later. Its connect is timed from here, the
    /// clock read as its socket is made.
    fn open(&mut self, i: usize) {
        let now = clock::now();
        let p = self.pool[i].conn.peer();
        // As in wrk, a script may move its thread (`wrk.thread.addr = ...`)
        // at any time; every connection opened after that goes there.
        let to = |addr| self.hooks.addr(addr);
        let opened = self
            .peers
            .open(p, to, self.poller.registry(), Token(i), now);
        match opened {
            Ok((transport, session)) => {
                self.pool[i].conn.open(transport, session, now);
            }
            Err(e) => {
                let cause = transport::connect_cause(&e);
                self.stats.connect_failed(now, cause);
                self.pool[i].conn.note_down(WentDown::Connect(cause));
                let at = self.pool[i].conn.open_failed(now);
                self.next_sweep = self.next_sweep.min(at);
            }
        }
    }

    fn connect_failed(&mut self, i: usize, cause: ConnectCause) {
        self.count_connect_failure(i, cause, clock::now());
        self.end(i, Some(Failure::Closed));
    }

    /// Counts a failed connect of connection `i` by its cause. A server
    /// that resets or closes a connection as it opens (its TLS or QUIC
    /// handshake) while others answer is past its connection limit, as
    /// one that closes a connection before answering anything on it is.
    fn count_connect_failure(&mut self, i: usize, cause: ConnectCause, now: Nanos) {
        self.stats.connect_failed(now, cause);
        self.pool[i].conn.note_down(WentDown::Connect(cause));
        if cause == ConnectCause::Reset {
            let conn = &self.pool[i].conn;
            let (peer, opened) = (conn.peer(), conn.attempt_at());
            self.pool.capacity(peer).turned_away(opened, false);
        }
    }

    /// The server showed it took connection `i` (its handshake done in
    /// `opening`, or its first response): the pool counts it once.
    fn taken(&mut self, i: usize, opening: Option<Nanos>) {
        if self.pool[i].conn.take() {
            let peer = self.pool[i].conn.peer();
            self.pool.capacity(peer).taken(opening);
        }
    }

    /// Sends at once in the closed loop once the run is on; otherwise puts
    /// every free stream of connection `i` to use: first for requests
    /// waiting to go out again, then (after the script's `delay()`, if it
    /// has one) as a slot for the schedule. Streams opened here go out in
    /// one write.
    fn top_up(&mut self, i: usize) {
        let peer = self.pool[i].conn.peer();
        if let Some(s) = self.pool[i].conn.session().filter(|s| s.is_ready()) {
            let each = s.free_streams() + s.in_flight() as u32;
            self.pool.streams_seen(peer, each);
        }
        self.filling = true;
        // One reading serves the top-up's requests, which all leave in its
        // one write; a send that runs a script reads again, and says so.
        let mut now = clock::now();
        while self.pool[i].unclaimed() > 0 && !self.halted() {
            if self.closed_loop_over(now) {
                break;
            }
            if let Some(again) = self.retries[peer].pop_front() {
                // Still due at its intended time, and sent when it first left.
                now = clock::now();
                self.open_request(i, again, now);
                continue;
            }
            match self.slot_delay() {
                Err(e) => {
                    self.filling = false;
                    return self.fail(e);
                }
                Ok(Some(until)) => {
                    self.pool[i].resting += 1;
                    self.resting.set(until, i, &self.pool[i]);
                }
                Ok(None) => now = self.offer(i, now),
            }
        }
        self.filling = false;
        self.flush(i);
    }

    /// When a stream that came free may take its next request, if the
    /// script's `delay()` asks it to wait (once the run is on).
    fn slot_delay(&mut self) -> Result<Option<Nanos>, EngineError> {
        if !self.started {
            return Ok(None);
        }
        Ok(self.hooks.delay()?)
    }

    /// One free stream of connection `i` takes a new request (the closed
    /// loop, once started) or becomes a slot for a due one. `now`: the
    /// clock as the caller last read it. Returns the clock as last read.
    fn offer(&mut self, i: usize, now: Nanos) -> Nanos {
        let peer = self.pool[i].conn.peer();
        if self.started && !self.paced() {
            // The closed loop intends each request for the moment it goes.
            let request = self.source.next_for(peer);
            return self.send(i, None, request, Some(now));
        }
        let now = clock::now();
        self.pool[i].offered += 1;
        if let Some(a) = self.slots.release(peer, Slot { conn: i }, now) {
            self.send_assigned(a);
        }
        now
    }

    /// The closed loop sends nothing once its window has ended. A response
    /// handled after the end (later in the same batch of events) frees its
    /// stream, and no new request follows it.
    fn closed_loop_over(&self, now: Nanos) -> bool {
        self.started && !self.paced() && now >= self.stats.window().end
    }

    /// Requests of `peer` waiting to go out again take free slots of its
    /// connections, if there are any.
    fn resend(&mut self, peer: usize) {
        while !self.retries[peer].is_empty() && !self.halted() {
            let Some(slot) = self.slots.take(peer) else {
                return;
            };
            let i = slot.conn;
            self.pool[i].offered = self.pool[i].offered.saturating_sub(1);
            let again = self.retries[peer].pop_front().expect("not empty");
            self.open_request(i, again, clock::now());
            self.flush(i);
        }
    }

    /// Opens a request on connection `i` at `now`; it is sent as the
    /// session takes it ([`Recorder::left`]). One that finds no stream
    /// after all (the server lowered its limit, or retired the connection)
    /// waits to go out again, unsent if it never left; one the protocol
    /// refuses ends the run, since every request like it would be refused
    /// too.
    fn open_request(&mut self, i: usize, tag: InFlight, now: Nanos) {
        let peer = self.pool[i].conn.peer();
        let request = Rc::clone(&tag.request);
        let (before, sends) = (tag.stamp, tag.sends);
        let Some(session) = self.pool[i].conn.session_mut() else {
            self.stats.waits_again(before, now);
            return self.retries[peer].push_front(tag);
        };
        let leaving = InFlight {
            stamp: before.leaving(now),
            sends: sends.saturating_add(1),
            ..tag
        };
        let (refused, tag) = match session.open(&request, leaving, now) {
            Ok(()) => return self.stats.left(before, now),
            Err(refused) => refused,
        };
        // Not sent: it waits to go again, as it was.
        self.stats.waits_again(before, now);
        let back = InFlight {
            stamp: before,
            sends,
            ..tag
        };
        self.retries[peer].push_front(back);
        // Refused for good: the run ends, saying why.
        if let OpenError::Rejected { protocol, why, fix } = refused {
            let offer = || match &self.offered_by {
                Some(flag) => format!("drop {flag}"),
                None => format!("drop the offer of {}", protocol.name()),
            };
            let fix = fix.unwrap_or_else(offer);
            self.fail(EngineError::Unfit { why, fix });
        }
    }

    /// Sends the batch whose first request is intended at `intended` (or,
    /// in the closed loop, `None`: as it goes) on connection `i`;
    /// `request` picks it from the requests file, if any. `read`: the
    /// clock as the caller has just read it, when nothing but this send
    /// comes between (a top-up's requests all go out in its one write).
    /// Returns the moment it went.
    fn send(
        &mut self,
        i: usize,
        intended: Option<Nanos>,
        request: u32,
        read: Option<Nanos>,
    ) -> Nanos {
        let scripted = self.source.is_scripted();
        let loaded = self
            .source
            .load(request, self.hooks.script(), &mut self.batch);
        if let Err(e) = loaded {
            self.fail(e);
            return clock::now();
        }
        // A script's `request()` may take a while, and the request goes
        // only after it: then the clock is read again.
        let now = match read {
            Some(t) if !scripted => t,
            _ => clock::now(),
        };
        let intended = intended.unwrap_or(now);
        let endpoint = self.source.endpoint(request);
        let mut batch = std::mem::take(&mut self.batch);
        for (k, req) in batch.drain(..).enumerate() {
            let slot = if k == 0 {
                intended
            } else {
                self.schedule.take_slot(now)
            };
            let stamp = self.stats.due(slot, now, endpoint);
            let visit = self.visit_tag(request);
            self.open_request(i, InFlight::new(stamp, req, visit), now);
        }
        self.batch = batch;
        // Streams opened together go out in one write.
        if !self.filling {
            self.flush(i);
        }
        now
    }

    /// Writes what connection `i` has to send. Returns false when the
    /// connection closed: its socket broke. Requests that never left go out
    /// again, one cut off is a write error, and what the server said before
    /// it stopped is read first (a retirement naming more requests it never
    /// saw, responses already sent); the rest were sent whole, and are lost
    /// as the close says.
    fn flush(&mut self, i: usize) -> bool {
        if self.pool[i].conn.on_writable(clock::now()).is_ok() {
            self.pool[i]
                .conn
                .watch_writes(self.poller.registry(), Token(i));
            // Sending arms timers (QUIC's loss detection).
            self.watch_deadline(i);
            return true;
        }
        // Requests that never left cannot have been seen: they go again.
        if let Some(s) = self.pool[i].conn.session_mut() {
            s.handle_write_error(clock::now());
        }
        if self.pool[i].conn.carries_datagrams() {
            self.on_datagrams(i);
        } else {
            while let Read::Bytes { n, .. } = self.pool[i].conn.read(&mut self.buf) {
                if let Some(s) = self.pool[i].conn.session_mut() {
                    s.handle(&self.buf[..n], clock::now());
                }
            }
        }
        if let Some(s) = self.pool[i].conn.session_mut() {
            s.handle_eof(clock::now());
        }
        self.settle(i, None);
        false
    }

    /// Connections whose delay is over take a request.
    fn wake_rested(&mut self, now: Nanos) {
        while let Some(i) = self.resting.pop_due(now, &self.pool) {
            let place = &mut self.pool[i];
            if place.resting == 0 {
                continue;
            }
            place.resting -= 1;
            if !self.halted() && self.pool[i].unclaimed() > 0 {
                self.offer(i, clock::now());
                self.flush(i);
            }
        }
    }

    /// Places every due request of the window in its bucket; those that
    /// did not complete are filed at their age at `stop_at`.
    fn finish(mut self, stop_at: Nanos) -> ThreadStats {
        let stats = &mut self.stats;
        for place in self.pool.iter().filter(|p| p.role != Role::Vacant) {
            if let Some(s) = place.conn.session() {
                let info = s.info();
                if let Some(p) = info.packets {
                    stats.packets(p);
                }
                // A server's close that came before the run ended counts,
                // whether or not its side of the connection closed by then.
                if let Some(code) = info.close_code {
                    stats.ws_closed(code);
                }
                if let Some(m) = info.messages {
                    stats.ws_messages(m);
                }
                s.for_each_in_flight(&mut |t, last| {
                    stats.in_flight_at_end(t.stamp, stop_at);
                    stats.streaming_at_end(t.stamp, last, stop_at);
                });
            }
        }
        let mut at_end = self.pool.at_end();
        at_end.stopped_threads = u64::from(self.hooks.stop_requested());
        self.stats.at_end(at_end);
        let (initial, peak, on_demand, accepted) = self.pool.sizes();
        self.stats.connections(initial, peak, on_demand, accepted);
        // Sent requests were counted as due when they went out; what is
        // still waiting for a slot or on the schedule is due but never sent.
        for due in self.slots.waiting() {
            self.stats.never_sent(due.at, stop_at);
        }
        for again in self.retries.iter().flatten() {
            self.stats.unsent_at_end(again.stamp, stop_at);
        }
        if self.visits.is_some() {
            // The schedule's times are visits' starts, not requests.
            self.visits_at_end(stop_at);
            return self.leave_and_finish();
        }
        // Those passed over at a late start are counted apart: their ages
        // are not the server's doing.
        let schedule = &mut self.schedule;
        self.stats.never_taken(stop_at, |a, b| {
            schedule.count_pending(a, b) - schedule.count_missed(a, b)
        });
        self.stats
            .missed_at_start(stop_at, |a, b| schedule.count_missed(a, b));
        self.leave_and_finish()
    }

    /// Closes every connection for the next run, and hands back what was
    /// measured.
    fn leave_and_finish(mut self) -> ThreadStats {
        let now = clock::now();
        for i in 0..self.pool.len() {
            self.pool[i].conn.leave(now);
        }
        self.stats.finish(clock::thread_cpu(), self.hooks.calls())
    }
}
