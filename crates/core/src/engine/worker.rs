//! One worker thread: its poller, timers, connections, script and
//! statistics, and the handlers that tie them together.
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

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use mio::{Interest, Registry, Token, Waker};

use crate::clock::{self, Nanos};
use crate::http::request::{metas_into, Batch, RequestMeta};
use crate::http::Carrier;
use crate::http::{
    EventReading, Failure, OpenError, Protocol, Request, Retirement, SessionOptions,
};
use crate::replay::Cursor;
use crate::schedule::Plan;
use crate::script::{ScriptError, ThreadScript};
use crate::stats::{
    AtEnd, ConnectCause, EventKind, Loss, Phases, ReadCause, Recorder, Reopen, Reply, StopCause,
    ThreadStats, Wait,
};

use super::capacity::Capacity;
use super::conn::{Check, Conn, Connect, InFlight, Read, ReadFailure, WentDown};
use super::poller::{Events, Poller, Ready, WAKE};
use super::slots::{Assigned, Due, Slot, Slots};
use super::transport::{self, Inbox, TlsSetup, Transport};
use super::{EngineError, Stop};

pub use crate::stats::Window;

/// Connections a sweep checks between looks at the schedule.
const SWEEP_SLICE: usize = 256;
/// Size of the one read buffer all of a worker's connections share.
const READ_BUF: usize = 64 * 1024;
/// How long the reason requests wait for a slot is taken as still true.
const WAIT_CAUSE_FOR: Nanos = 1_000_000;
/// How often one request goes out at most when the server keeps saying it
/// never processed it (refused, or past where the server said it stopped).
const MAX_SENDS: u8 = 8;

/// Everything a worker needs, decided before it starts.
pub struct WorkerSetup {
    pub index: usize,
    /// Connections at the start.
    pub connections: usize,
    /// The most connections this thread may have open: more than
    /// `connections` when they grow on demand.
    pub max_connections: usize,
    /// Where connections go: connection `c` to `peers[c % peers.len()]`.
    pub peers: Vec<Peer>,
    /// The requests, encoded and checked once (unused when a script or a
    /// requests file gives each).
    pub request: Batch,
    /// This thread's script state, if a script was given.
    pub script: Option<ThreadScript>,
    /// This thread's place in the requests file, with `--requests`.
    pub replay: Option<Cursor>,
    /// Endpoints to keep statistics for (0: none).
    pub endpoints: usize,
    pub timeout: Nanos,
    pub max_head: usize,
    /// `--sse`: response bodies are read as event streams.
    pub sse: bool,
    /// Requests are calls (`--grpc`): each response's call status is
    /// read; `Some(true)`: each message of a streamed reply is an event.
    pub calls: Option<bool>,
    /// `--grpc-check`: what every successful call's reply must hold.
    pub check: Option<Arc<metron_grpc::Check>>,
    pub cpu: Option<usize>,
    /// Longest time to wait for the connections to open before the start.
    pub connect_wait: Nanos,
    /// Length of the intervals of the time series and the interval log.
    pub interval: std::time::Duration,
    /// See [`super::Setup::counts_every`].
    pub counts_every: Option<std::time::Duration>,
    /// Streams per connection at most (`-m`), where the protocol has several.
    pub max_streams: u32,
    /// The flag that chose the protocols offered, as typed: what a request
    /// the protocol cannot carry tells the user to drop.
    pub offered_by: Option<String>,
    /// Where this thread publishes its running totals for the progress
    /// line (a few times a second, never per request).
    pub progress: Option<Arc<super::progress::Board>>,
}

/// A server the connections go to.
#[derive(Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    pub tls: Option<TlsSetup>,
    /// What the host speaks: chosen by ALPN over TLS, asked for otherwise.
    pub protocol: Protocol,
    /// Its `Host` (HTTP/2's `:authority` when a request names none).
    pub authority: String,
    /// The most streams the server allows on a connection, as its
    /// pre-flight learned (where the protocol says).
    pub server_limit: Option<u32>,
}

impl Peer {
    fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }
}

/// A connection's place in the worker, and what the worker keeps of its
/// free streams.
struct Place {
    conn: Conn,
    role: Role,
    /// Free streams offered as slots in [`Slots`].
    offered: u32,
    /// Free streams resting in the script's `delay()`.
    resting: u32,
    /// Bumped whenever the place forgets its rests (its connection closed
    /// or was replaced), so that wake-ups queued before are ignored.
    generation: u32,
    /// Its connection has answered nothing while others answered requests
    /// sent after its own: the server has not taken it (its listen
    /// backlog, past its connection limit).
    passed_over: bool,
}

/// What a place holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// One of the connections `-c` asks for: reopened when it closes.
    Active,
    /// Retired by the server (its session said so) and replaced: it finishes what
    /// is in flight, takes nothing new, and is not reopened.
    Draining,
    /// Free for the next connection opened.
    Vacant,
}

pub struct Worker {
    index: usize,
    poller: Poller,
    stop: Arc<Stop>,
    /// The connections, by token.
    places: Vec<Place>,
    vacant: Vec<usize>,
    /// Places holding an active connection (counted against `-c`), at
    /// most `max_active`: more open on demand when requests wait.
    active: usize,
    /// Of them, per peer.
    active_of: Vec<usize>,
    /// Per peer, what the pool learned of the server's connection limit:
    /// it grows no further, and connections beyond it are not reopened.
    capacity: Vec<Capacity>,
    max_active: usize,
    initial: usize,
    peak: usize,
    opened_on_demand: u64,
    /// Per peer, the streams a connection to it takes at once, once one
    /// has said (for growing: how many waiting requests one more serves).
    streams_each: Vec<u32>,
    /// What due requests wait for: free slots, per peer.
    slots: Slots,
    /// Per peer, requests the server never processed (refused, or past
    /// where it said it stopped), or that found no stream after all, oldest
    /// first: they go out again before any new request.
    retries: Vec<VecDeque<InFlight>>,
    /// Rests of the script's `delay()`: (until, place, generation),
    /// earliest first.
    resting: BinaryHeap<Reverse<(Nanos, usize, u32)>>,
    /// Per peer, why its requests last had to wait, and when that was
    /// found.
    waits_seen: Vec<(Nanos, Wait)>,
    /// Requests intended before this were counted by why they waited.
    waits_counted: Nanos,
    /// The schedule's first time at or after `waits_counted` (taken or
    /// not), for that `waits_counted`: an event while requests wait then
    /// costs no look-up in the schedule.
    first_uncounted: (Nanos, Option<Nanos>),
    /// Deadlines sessions asked for: (at, place, generation).
    deadlines: BinaryHeap<Reverse<(Nanos, usize, u32)>>,
    /// Streams are being opened in a row; one write sends them.
    filling: bool,
    peers: Vec<Peer>,
    /// What each peer's sessions open with.
    session_opts: Vec<SessionOptions>,
    source: Source,
    script: Option<ThreadScript>,
    /// `--grpc-check`: replies are kept and checked.
    check: Option<Arc<metron_grpc::Check>>,
    /// The script's last batch, and where each of its requests ends
    /// (reused, never reallocated once grown).
    script_bytes: Vec<u8>,
    script_metas: Vec<RequestMeta>,
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

/// Where a worker's requests come from.
enum Source {
    /// One batch, built before the run and shared by every send.
    Static(Vec<Rc<Request>>),
    /// The script's `request()` builds each batch.
    Script,
    /// The requests file; the cursor picks every request, each built once
    /// (on first use) for this thread.
    Replay {
        cursor: Cursor,
        built: Vec<Option<Rc<Request>>>,
    },
}

impl Source {
    /// The request of the schedule's next intended time (rate mode).
    fn next_scheduled(&mut self) -> u32 {
        match self {
            Source::Replay { cursor, .. } => {
                let request = cursor.peek();
                cursor.advance();
                request
            }
            _ => 0,
        }
    }

    /// The next request for a connection to `peer` (closed loop).
    fn next_for(&mut self, peer: usize) -> u32 {
        match self {
            Source::Replay { cursor, .. } => cursor.next_for_host(peer),
            _ => 0,
        }
    }

    /// The request of the schedule's next intended time, not taken.
    fn upcoming(&self) -> u32 {
        match self {
            Source::Replay { cursor, .. } => cursor.peek(),
            _ => 0,
        }
    }

    /// The peer a request goes to.
    fn peer_of(&self, request: u32) -> usize {
        match self {
            Source::Replay { cursor, .. } => cursor.set().get(request).host as usize,
            _ => 0,
        }
    }

    /// The endpoint a request is counted under, if any.
    fn endpoint(&self, request: u32) -> Option<u16> {
        match self {
            Source::Replay { cursor, .. } => Some(cursor.set().get(request).endpoint),
            _ => None,
        }
    }
}

/// The schedule as the worker sees it; the only code here that looks
/// inside a [`Plan`]. A closed loop has no intended times; rate mode takes
/// them from the plan's arrivals, in order.
struct Schedule(Plan);

impl Schedule {
    fn paced(&self) -> bool {
        matches!(self.0, Plan::Paced(_))
    }

    /// The first intended time at or after `t`, taken or not, in rate
    /// mode.
    fn first_from(&mut self, t: Nanos) -> Option<Nanos> {
        match &mut self.0 {
            Plan::Paced(arrivals) => Some(arrivals.first_from(t)),
            Plan::Closed => None,
        }
    }

    /// The next intended time, in rate mode.
    fn next(&self) -> Option<Nanos> {
        match &self.0 {
            Plan::Paced(arrivals) => Some(arrivals.peek()),
            Plan::Closed => None,
        }
    }

    /// Takes the next intended time if it has come by `now` and falls
    /// before `end`.
    fn take_due(&mut self, now: Nanos, end: Nanos) -> Option<Nanos> {
        let Plan::Paced(arrivals) = &mut self.0 else {
            return None;
        };
        let due = arrivals.peek();
        if due >= end || due > now {
            return None;
        }
        arrivals.advance();
        Some(due)
    }

    /// The intended time of a further request of a batch (`now` in a
    /// closed loop).
    fn take_slot(&mut self, now: Nanos) -> Nanos {
        match &mut self.0 {
            Plan::Paced(arrivals) => {
                let slot = arrivals.peek();
                arrivals.advance();
                slot
            }
            Plan::Closed => now,
        }
    }

    /// Counts the intended times in `[a, b)` passed over at a late start.
    fn count_missed(&mut self, a: Nanos, b: Nanos) -> u64 {
        match &mut self.0 {
            Plan::Paced(arrivals) => arrivals.count_missed(a, b),
            Plan::Closed => 0,
        }
    }

    /// Counts the intended times in `[a, b)` not taken yet: at the end,
    /// those are due and never sent (none in a closed loop).
    fn count_pending(&mut self, a: Nanos, b: Nanos) -> u64 {
        match &mut self.0 {
            Plan::Paced(arrivals) => arrivals.count_pending(a, b),
            Plan::Closed => 0,
        }
    }
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
        let capture = setup
            .script
            .as_ref()
            .is_some_and(ThreadScript::has_response)
            || setup.check.is_some();
        let reading = match (setup.sse, &setup.script) {
            _ if setup.calls == Some(true) => EventReading::Messages,
            (false, _) => EventReading::Off,
            (true, Some(s)) if s.has_event() => EventReading::Data,
            (true, _) => EventReading::Times,
        };
        let source = match (setup.replay, &setup.script) {
            (Some(cursor), _) => {
                let built = vec![None; cursor.set().len()];
                Source::Replay { cursor, built }
            }
            (None, Some(script)) if !script.is_static() => Source::Script,
            (None, _) => Source::Static(static_batch(&setup.request)?),
        };
        let session_opts = setup
            .peers
            .iter()
            .map(|p| SessionOptions {
                max_head: setup.max_head,
                capture,
                reading,
                rpc: setup.calls.is_some(),
                max_streams: setup.max_streams,
                scheme: p.scheme(),
                authority: p.authority.clone(),
                tls: p.tls.as_ref().map(|t| t.config.clone()),
                server_name: p
                    .tls
                    .as_ref()
                    .map_or_else(String::new, |t| t.name.to_str().into_owned()),
            })
            .collect();
        let peers = setup.peers.len();
        let sweep_every = (setup.timeout / 10).clamp(1_000_000, 50_000_000);
        let mut w = Worker {
            index: setup.index,
            poller,
            stop,
            places: Vec::with_capacity(setup.connections),
            vacant: Vec::new(),
            active: 0,
            active_of: vec![0; peers],
            capacity: vec![Capacity::default(); peers],
            max_active: setup.max_connections.max(setup.connections),
            initial: setup.connections,
            peak: setup.connections,
            opened_on_demand: 0,
            streams_each: vec![1; peers],
            slots: Slots::new(peers, setup.connections),
            retries: vec![VecDeque::new(); peers],
            resting: BinaryHeap::with_capacity(setup.connections),
            deadlines: BinaryHeap::new(),
            waits_seen: vec![(0, Wait::Busy); peers],
            waits_counted: 0,
            first_uncounted: (0, None),
            filling: false,
            peers: setup.peers,
            session_opts,
            source,
            script: setup.script,
            check: setup.check,
            script_bytes: Vec::new(),
            script_metas: Vec::with_capacity(4),
            batch: Vec::with_capacity(4),
            drained: Vec::new(),
            failure: None,
            timeout: setup.timeout,
            offered_by: setup.offered_by,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            inbox: None,
            stats: Recorder::new(setup.interval, setup.endpoints, setup.counts_every),
            schedule: Schedule(Plan::Closed),
            next_sweep: 0,
            sweep_every,
            started: false,
            progress: setup.progress,
            next_publish: 0,
        };
        if setup.calls == Some(true) {
            w.stats.read_events(EventKind::Messages);
        } else if setup.sse {
            w.stats.read_events(EventKind::Sse);
        }
        let now = clock::now();
        for c in 0..setup.connections {
            let i = w.add_place(c % peers);
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
        if let Some(script) = self.script.as_mut() {
            script.activate();
        }
        self.schedule = Schedule(plan);
        self.stats.begin(window, self.schedule.paced());
        self.stats.by_phase(phases);
        self.started = true;
        // Every open connection offers its free streams again: in the
        // closed loop each takes its first request, and the script's
        // `delay()` applies from now on.
        let _ = self.slots.take_free();
        for i in 0..self.places.len() {
            self.places[i].offered = 0;
            if self.places[i].role == Role::Active {
                self.top_up(i);
            }
        }
        self.slots.free_before_start();
        let ended = self.event_loop()?;
        if let Some(script) = self.script.as_mut() {
            script.deactivate();
        }
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
            let paced = self.schedule.paced();
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
        self.failure.is_some()
            || self
                .script
                .as_ref()
                .is_some_and(ThreadScript::stop_requested)
    }

    /// Records the first fatal error and stops every worker.
    fn fail(&mut self, e: EngineError) {
        self.failure.get_or_insert(e);
        self.stop.trigger(StopCause::Error);
    }

    /// Before the start: waits until every connection is open and its
    /// session ready (whatever its protocol waits for first), or has failed (or
    /// `until`), so that the schedule starts with its streams free.
    fn await_connections(&mut self, until: Nanos) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let now = clock::now();
            let pending = self.places.iter().any(|p| {
                p.role == Role::Active
                    && (p.conn.is_connecting()
                        || (p.conn.is_open()
                            && p.conn
                                .session()
                                .is_some_and(|s| !s.is_ready() && !s.is_retired())))
            });
            if !pending || now >= until {
                return Ok(());
            }
            self.poller.wait(&mut events, until)?;
            for ev in events.iter() {
                match ev.token() {
                    WAKE => {}
                    Token(c) => self.on_event(c, &ev),
                }
            }
        }
    }

    /// The earliest moment the loop has something to do without I/O.
    fn next_deadline(&mut self) -> Nanos {
        let mut at = self.stats.window().end.min(self.next_sweep);
        for heap in [&self.resting, &self.deadlines] {
            if let Some(Reverse((until, _, _))) = heap.peek() {
                at = at.min(*until);
            }
        }
        if self.slots.any_free() {
            if let Some(due) = self.schedule.next() {
                at = at.min(due);
            }
        } else if self.active < self.max_active {
            // A request falling due with no slot free may open a
            // connection: wake for the first not yet seen waiting.
            if let Some(due) = self.next_uncounted() {
                at = at.min(due);
            }
        }
        at
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
            let Some(at) = self.schedule.take_due(now, end) else {
                return;
            };
            let request = self.source.next_scheduled();
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
                    if at >= self.waits_counted {
                        let why = self.wait_cause(peer, now);
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
        let Some(next) = self.schedule.next().filter(|&t| t <= now && t < end) else {
            return;
        };
        let peer = self.source.peer_of(self.source.upcoming());
        let until = (now + 1).min(end);
        // Requests passed over at a late start lie before `next`, and the
        // first call counts them: `waits_counted` starts at 0.
        if self.next_uncounted().is_some_and(|t| t <= now) {
            let fresh = self
                .schedule
                .count_pending(self.waits_counted.max(next), until);
            if fresh > 0 {
                let why = self.wait_cause(peer, now);
                self.stats.waits_n(next, why, fresh);
            }
            self.waits_counted = until;
        }
        if self.active < self.max_active {
            let pending = self.schedule.count_pending(next, until);
            self.grow(peer, pending as usize);
        }
    }

    /// The first intended time not taken and not yet counted as waiting.
    fn next_uncounted(&mut self) -> Option<Nanos> {
        let from = self.waits_counted;
        if self.first_uncounted.0 != from || self.first_uncounted.1.is_none() {
            self.first_uncounted = (from, self.schedule.first_from(from));
        }
        let first = self.first_uncounted.1?;
        self.schedule.next().map(|next| next.max(first))
    }

    /// Opens another connection to `peer` for its waiting requests (those
    /// in its queue, and `due` more still on the schedule), when the pool
    /// may grow and the connections already opening would not take them
    /// all. It stays open for the rest of the run.
    fn grow(&mut self, peer: usize, due: usize) {
        if self.active >= self.max_active || !self.capacity[peer].allows(self.active_of[peer] + 1) {
            return;
        }
        let opening = self
            .places
            .iter()
            .filter(|p| p.role == Role::Active && p.conn.peer() == peer && !p.conn.is_ready())
            .count();
        let each = self.streams_each[peer].max(1) as usize;
        if self.slots.waiting_for(peer) + due <= opening * each {
            return;
        }
        let i = self.add_place(peer);
        self.opened_on_demand += 1;
        self.peak = self.peak.max(self.active);
        self.open(i);
    }

    /// Why a request of `peer` finds no free slot: some of the peer's
    /// connections are down or opening, or all are open and the server's
    /// stream limit (below `-m`) holds them, or all are simply busy. Looked
    /// up at most once a millisecond: an overloaded run has many requests
    /// waiting, and thousands of connections to look at.
    fn wait_cause(&mut self, peer: usize, now: Nanos) -> Wait {
        let (at, why) = self.waits_seen[peer];
        if now.saturating_sub(at) < WAIT_CAUSE_FOR && at > 0 {
            return why;
        }
        let why = self.find_wait_cause(peer);
        self.waits_seen[peer] = (now, why);
        why
    }

    fn find_wait_cause(&self, peer: usize) -> Wait {
        let mut limited = false;
        for p in &self.places {
            if p.role != Role::Active || p.conn.peer() != peer {
                continue;
            }
            match p
                .conn
                .session()
                .filter(|s| p.conn.is_open() && s.is_ready())
            {
                None => return Wait::Down,
                Some(s) => limited |= s.held_by_server(),
            }
        }
        if limited {
            Wait::ServerLimit
        } else {
            Wait::Busy
        }
    }

    fn send_assigned(&mut self, a: Assigned) {
        let i = a.slot.conn;
        self.places[i].offered = self.places[i].offered.saturating_sub(1);
        if a.waited {
            self.stats.queued(a.due.at);
        }
        self.send(i, Some(a.due.at), a.due.request, None);
    }

    fn on_event(&mut self, i: usize, ev: &Ready) {
        let Some(place) = self.places.get(i).filter(|p| p.role != Role::Vacant) else {
            return;
        };
        if place.conn.is_connecting() {
            self.on_connected(i);
        } else if place.conn.is_open() {
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
        if self.places[i].conn.is_open() && (ev.is_readable() || closing) {
            self.on_readable(i, closing);
        }
    }

    /// The connect (or the TLS handshake) of connection `i` moved on.
    fn on_connected(&mut self, i: usize) {
        match self.places[i]
            .conn
            .on_connect_event(&mut self.buf, clock::now())
        {
            Connect::Pending => {}
            // Its session starts: the preface goes out, and early bytes
            // may already have brought events.
            Connect::Ready(setup) => {
                if let Some(setup) = setup {
                    self.stats.connected(setup.connect, setup.tls);
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
        if self.places[i].conn.carries_datagrams() {
            return self.on_datagrams(i);
        }
        loop {
            let now = clock::now();
            let (n, drained) = match self.places[i].conn.read(&mut self.buf) {
                Read::Bytes { n, drained } => (n, drained),
                Read::Blocked | Read::Datagrams { .. } => return,
                Read::Eof => {
                    if let Some(s) = self.places[i].conn.session_mut() {
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
            if let Some(s) = self.places[i].conn.session_mut() {
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
            let drained = match self.places[i].conn.read_datagrams(&mut inbox) {
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
            if let Some(s) = self.places[i].conn.session_mut() {
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
        let peer = self.places[i].conn.peer();
        let mut failed = failed;
        let mut again = false;
        // A QUIC connection opens when its handshake is done: the time it
        // took stands as its connect (TLS is inside it).
        if let Some(handshake) = self.places[i].conn.handshake_done(clock::now) {
            self.stats.connected(handshake, None);
        }
        // One moment for every event the session holds: each came from
        // bytes or a deadline already handled, so they are all in hand by
        // now (a response no later than this), and a script's `response()`
        // on one does not make the next look slower.
        let now = clock::now();
        loop {
            let Some(event) = self.places[i]
                .conn
                .session_mut()
                .and_then(|s| s.poll_event())
            else {
                break;
            };
            match event {
                crate::http::Event::Response {
                    tag,
                    status,
                    bytes,
                    first_byte,
                    events,
                    rpc,
                } => {
                    let first = self.places[i].conn.served();
                    self.capacity[peer].answered(tag.stamp.sent(), now, first);
                    let checked = self.check_reply(i, rpc);
                    let reply = Reply {
                        status,
                        rpc,
                        checked,
                        bytes,
                        first_byte,
                    };
                    self.stats.completed(tag.stamp, reply, now);
                    self.stats.events_completed(tag.stamp, events);
                    if !self.run_response(i, status) {
                        return false;
                    }
                }
                crate::http::Event::Message {
                    tag,
                    previous,
                    data,
                } => {
                    self.stats.message(tag.stamp, previous, now);
                    if !self.run_event(data.as_deref()) {
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
        let (finished, retired) = match self.places[i].conn.session() {
            Some(s) => (s.is_finished(), s.is_retired()),
            None => (true, true),
        };
        let open = if failed.is_some() || finished {
            self.end(i, failed);
            false
        } else {
            if retired && self.places[i].role == Role::Active {
                self.retire(i);
            } else if self.places[i].role == Role::Active {
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

    /// Whether the reply just recorded on connection `i` holds what
    /// `--grpc-check` asks, when there is a check and the call succeeded
    /// (a failed call is an error already, and has no message to check).
    fn check_reply(&self, i: usize, rpc: Option<u8>) -> Option<bool> {
        let check = self.check.as_ref()?;
        if rpc != Some(metron_grpc::status::OK) {
            return None;
        }
        let session = self.places[i].conn.session()?;
        Some(check.holds(session.captured().body()))
    }

    /// Runs the script's `event()` on an event's data, when it has one.
    /// False when the script failed.
    fn run_event(&mut self, data: Option<&[u8]>) -> bool {
        let (Some(script), Some(data)) = (self.script.as_mut(), data) else {
            return true;
        };
        let result = script.event(data);
        self.script_went_on(result)
    }

    /// Runs the script's `response()` on the response just recorded on
    /// connection `i`, if it has one. False when the script failed.
    fn run_response(&mut self, i: usize, status: u16) -> bool {
        let Some(script) = self.script.as_mut().filter(|s| s.has_response()) else {
            return true;
        };
        let Some(session) = self.places[i].conn.session() else {
            return true;
        };
        let captured = session.captured();
        let result = script.response(status, &mut captured.fields(), captured.body());
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
        let counted = matches!(self.places[i].conn.went_down(), Some(WentDown::Connect(_)));
        let handshaking = self.places[i].conn.is_handshaking();
        if handshaking && !counted {
            let cause = handshake_cause(failed);
            self.count_connect_failure(i, cause, now);
        }
        let mut drained = std::mem::take(&mut self.drained);
        if let Some(s) = self.places[i].conn.session_mut() {
            s.drain(&mut drained);
        }
        let why = failed.unwrap_or(Failure::Closed);
        let retirement = self.places[i].conn.session().and_then(|s| s.retirement());
        // A close or reset before any response on the connection is the
        // server turning it away (a server past its connection limit does
        // this to every connection beyond it): a cause of its own, with
        // another fix than a close mid-conversation. Not so a connection
        // closed for want of stream credit (the server took it), a
        // handshake that failed (a connect error, counted by its cause), or
        // a port that nothing listens on any more (the server stopped).
        let unanswered = self.places[i].conn.answered_nothing()
            && !handshaking
            && retirement != Some(Retirement::Starved)
            && matches!(why, Failure::Closed | Failure::Reset(None));
        let peer = self.places[i].conn.peer();
        if unanswered {
            self.capacity[peer].turned_away();
        }
        for tag in drained.drain(..) {
            if unanswered {
                let cause = Loss::Read(ReadCause::ClosedUnanswered);
                self.stats.lost(tag.stamp, cause, now);
            } else {
                self.lost(tag, why, now);
            }
        }
        self.drained = drained;
        if self.places[i].conn.went_down().is_none() {
            let cause = match (unanswered, failed.map(loss)) {
                (true, _) => Some(ReadCause::ClosedUnanswered),
                (false, Some(Loss::Read(cause))) => Some(cause),
                _ => None,
            };
            if let Some(cause) = cause {
                self.places[i].conn.note_down(WentDown::Read(cause));
            }
        }
        let opened = self.places[i].conn.is_open() && !self.places[i].conn.is_handshaking();
        match failed {
            Some(Failure::Protocol) => self.stats.connection_error(now),
            Some(Failure::Timeout) if opened => self.places[i].conn.timed_out(),
            _ => {}
        }
        let ended = opened.then_some(match failed {
            _ if unanswered => Reopen::TurnedAway,
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
        self.close(i, ended);
    }

    /// The session of connection `i` takes no new request but still has
    /// some in flight (or, granted no stream, has none and gets none): a
    /// new connection takes its place at once, and it finishes on the
    /// side.
    fn retire(&mut self, i: usize) {
        let peer = self.places[i].conn.peer();
        let starved =
            self.places[i].conn.session().and_then(|s| s.retirement()) == Some(Retirement::Starved);
        self.forget_slots(i);
        self.places[i].role = Role::Draining;
        self.active -= 1;
        self.active_of[peer] -= 1;
        self.stats.reopened(if starved {
            Reopen::Starved
        } else {
            Reopen::Retired
        });
        let j = self.add_place(peer);
        self.open(j);
    }

    /// Takes back the free slots of connection `i` and forgets its rests.
    fn forget_slots(&mut self, i: usize) {
        let peer = self.places[i].conn.peer();
        self.slots.remove(peer, Slot { conn: i });
        let place = &mut self.places[i];
        place.offered = 0;
        place.resting = 0;
        place.generation = place.generation.wrapping_add(1);
    }

    /// A place for a new connection to `peer`: a vacant one, or a new one.
    fn add_place(&mut self, peer: usize) -> usize {
        self.active += 1;
        self.active_of[peer] += 1;
        let conn = Conn::new(peer);
        if let Some(i) = self.vacant.pop() {
            let place = &mut self.places[i];
            place.conn = conn;
            place.role = Role::Active;
            place.passed_over = false;
            return i;
        }
        self.places.push(Place {
            conn,
            role: Role::Active,
            offered: 0,
            resting: 0,
            generation: 0,
            passed_over: false,
        });
        self.places.len() - 1
    }

    /// Closes connection `i` (whose session was drained): an active one
    /// reopens now or after its back-off (counted by what `ended` it, when
    /// it had opened), unless it lies beyond the server's connection limit;
    /// a draining one leaves its place.
    fn close(&mut self, i: usize, ended: Option<Reopen>) {
        let now = clock::now();
        let peer = self.places[i].conn.peer();
        let answered = self.places[i].conn.has_answered();
        self.capacity[peer].closed(answered);
        let beyond = !answered && self.beyond_limit(peer);
        self.forget_slots(i);
        if let Some(p) = self.places[i].conn.session().and_then(|s| s.packets()) {
            self.stats.packets(p);
        }
        let closed = self.places[i].conn.close(now);
        if let Some(mut t) = closed.io {
            let _ = self.poller.registry().deregister(t.socket());
        }
        if self.places[i].role == Role::Active && beyond {
            // Past the server's limit: the pool shrinks back to it.
            self.active -= 1;
            self.active_of[peer] -= 1;
            self.places[i].role = Role::Vacant;
            self.vacant.push(i);
        } else if self.places[i].role == Role::Draining {
            self.places[i].role = Role::Vacant;
            self.vacant.push(i);
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

    /// The pool holds more connections to `peer` than the server's limit
    /// found, and more than the run's own share at the start: one that
    /// never got an answer is then not reopened.
    fn beyond_limit(&self, peer: usize) -> bool {
        let initial = self.initial.div_ceil(self.peers.len().max(1));
        let open = self.active_of[peer];
        open > initial && !self.capacity[peer].allows(open)
    }

    /// Starts connection `i`; a failure to even start counts as a connect
    /// error and is retried later. Its connect is timed from here, the
    /// clock read as its socket is made.
    fn open(&mut self, i: usize) {
        let now = clock::now();
        let p = self.places[i].conn.peer();
        let peer = &self.peers[p];
        // As in wrk, a script may move its thread (`wrk.thread.addr = ...`)
        // at any time; every connection opened after that goes there.
        let addr = self.script.as_ref().map_or(peer.addr, |s| s.addr());
        let opened = connect(addr, peer, self.poller.registry(), Token(i)).and_then(|t| {
            let session = peer.protocol.session(&self.session_opts[p], addr, now);
            Ok((t, session.map_err(io::Error::other)?))
        });
        match opened {
            Ok((transport, session)) => {
                self.places[i].conn.open(transport, session, now);
            }
            Err(e) => {
                let cause = transport::connect_cause(&e);
                self.stats.connect_failed(now, cause);
                self.places[i].conn.note_down(WentDown::Connect(cause));
                let at = self.places[i].conn.open_failed(now);
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
        self.places[i].conn.note_down(WentDown::Connect(cause));
        if cause == ConnectCause::Reset {
            let peer = self.places[i].conn.peer();
            self.capacity[peer].turned_away();
        }
    }

    /// Sends at once in the closed loop once the run is on; otherwise puts
    /// every free stream of connection `i` to use: first for requests
    /// waiting to go out again, then (after the script's `delay()`, if it
    /// has one) as a slot for the schedule. Streams opened here go out in
    /// one write.
    fn top_up(&mut self, i: usize) {
        let peer = self.places[i].conn.peer();
        if let Some(s) = self.places[i].conn.session().filter(|s| s.is_ready()) {
            let each = s.free_streams() + s.in_flight() as u32;
            self.streams_each[peer] = self.streams_each[peer].max(each);
        }
        self.filling = true;
        // One reading serves the top-up's requests, which all leave in its
        // one write; a send that runs a script reads again, and says so.
        let mut now = clock::now();
        while self.unclaimed(i) > 0 && !self.halted() {
            if self.closed_loop_over(now) {
                break;
            }
            if let Some(again) = self.retries[peer].pop_front() {
                now = self.send_again(i, again);
                continue;
            }
            match self.slot_delay() {
                Err(e) => {
                    self.filling = false;
                    return self.fail(e);
                }
                Ok(Some(until)) => {
                    let place = &mut self.places[i];
                    place.resting += 1;
                    self.resting.push(Reverse((until, i, place.generation)));
                }
                Ok(None) => now = self.offer(i, now),
            }
        }
        self.filling = false;
        self.flush(i);
    }

    /// Free streams of connection `i` neither offered as slots nor resting.
    fn unclaimed(&self, i: usize) -> u32 {
        let place = &self.places[i];
        let claimed = place.offered + place.resting;
        place.conn.free_streams().saturating_sub(claimed)
    }

    /// When a stream that came free may take its next request, if the
    /// script's `delay()` asks it to wait (once the run is on).
    fn slot_delay(&mut self) -> Result<Option<Nanos>, EngineError> {
        if !self.started {
            return Ok(None);
        }
        let Some(script) = self.script.as_mut().filter(|s| s.has_delay()) else {
            return Ok(None);
        };
        let ms = script.delay_ms()?;
        Ok((ms > 0.0).then(|| clock::now() + (ms * 1e6) as Nanos))
    }

    /// One free stream of connection `i` takes a new request (the closed
    /// loop, once started) or becomes a slot for a due one. `now`: the
    /// clock as the caller last read it. Returns the clock as last read.
    fn offer(&mut self, i: usize, now: Nanos) -> Nanos {
        let peer = self.places[i].conn.peer();
        if self.started && !self.schedule.paced() {
            // The closed loop intends each request for the moment it goes.
            let request = self.source.next_for(peer);
            return self.send(i, None, request, Some(now));
        }
        let now = clock::now();
        self.places[i].offered += 1;
        if let Some(a) = self.slots.release(peer, Slot { conn: i }, now) {
            self.send_assigned(a);
        }
        now
    }

    /// The closed loop sends nothing once its window has ended. A response
    /// handled after the end (later in the same batch of events) frees its
    /// stream, and no new request follows it.
    fn closed_loop_over(&self, now: Nanos) -> bool {
        self.started && !self.schedule.paced() && now >= self.stats.window().end
    }

    /// Requests of `peer` waiting to go out again take free slots of its
    /// connections, if there are any.
    fn resend(&mut self, peer: usize) {
        while !self.retries[peer].is_empty() && !self.halted() {
            let Some(slot) = self.slots.take(peer) else {
                return;
            };
            let i = slot.conn;
            self.places[i].offered = self.places[i].offered.saturating_sub(1);
            let again = self.retries[peer].pop_front().expect("not empty");
            self.send_again(i, again);
            self.flush(i);
        }
    }

    /// Writes a request again on connection `i`: still due at its intended
    /// time, and sent when it first left (returns the clock as read).
    fn send_again(&mut self, i: usize, again: InFlight) -> Nanos {
        let now = clock::now();
        self.open_request(i, again, now);
        now
    }

    /// Opens a request on connection `i` at `now`; it is sent as the
    /// session takes it ([`Recorder::left`]). One that finds no stream
    /// after all (the server lowered its limit, or retired the connection)
    /// waits to go out again, unsent if it never left; one the protocol
    /// refuses ends the run, since every request like it would be refused
    /// too.
    fn open_request(&mut self, i: usize, tag: InFlight, now: Nanos) {
        let peer = self.places[i].conn.peer();
        let request = Rc::clone(&tag.request);
        let (before, sends) = (tag.stamp, tag.sends);
        let Some(session) = self.places[i].conn.session_mut() else {
            self.stats.waits_again(before, now);
            return self.retries[peer].push_front(tag);
        };
        let leaving = InFlight {
            stamp: before.leaving(now),
            sends: sends.saturating_add(1),
            ..tag
        };
        match session.open(&request, leaving, now) {
            Ok(()) => self.stats.left(before, now),
            Err((OpenError::Rejected { protocol, why }, _)) => {
                self.stats.lost(before, Loss::Write, now);
                let flag = self.offered_by.clone();
                let flag = flag.unwrap_or_else(|| format!("the offer of {}", protocol.name()));
                self.fail(EngineError::Unfit { why, flag });
            }
            Err((OpenError::Full | OpenError::Retired, tag)) => {
                self.stats.waits_again(before, now);
                let back = InFlight {
                    stamp: before,
                    sends,
                    ..tag
                };
                self.retries[peer].push_front(back);
            }
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
        let scripted = matches!(self.source, Source::Script);
        if let Err(e) = self.load_batch(request) {
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
            self.open_request(
                i,
                InFlight {
                    stamp,
                    request: req,
                    sends: 0,
                },
                now,
            );
        }
        self.batch = batch;
        // Streams opened together go out in one write.
        if !self.filling {
            self.flush(i);
        }
        now
    }

    /// Puts the next batch in `self.batch`: the static one, the requests
    /// file's `request` (built on first use), or what the script's
    /// `request()` returns.
    fn load_batch(&mut self, request: u32) -> Result<(), EngineError> {
        self.batch.clear();
        match &mut self.source {
            Source::Static(batch) => self.batch.extend(batch.iter().cloned()),
            Source::Replay { cursor, built } => {
                let set = cursor.set();
                let r = built[request as usize].get_or_insert_with(|| {
                    Rc::new(Request::new(set.wire(request), set.get(request).head))
                });
                self.batch.push(Rc::clone(r));
            }
            Source::Script => {
                let script = self.script.as_mut().expect("a script source has a script");
                script.request_batch(&mut self.script_bytes, &mut self.script_metas)?;
                let bytes = Bytes::copy_from_slice(&self.script_bytes);
                let requests = Request::split(&bytes, &self.script_metas);
                self.batch.extend(requests.into_iter().map(Rc::new));
            }
        }
        Ok(())
    }

    /// Writes what connection `i` has to send. Returns false when the
    /// connection closed: its socket broke. Requests that never left go out
    /// again, one cut off is a write error, and what the server said before
    /// it stopped is read first (a retirement naming more requests it never
    /// saw, responses already sent); the rest were sent whole, and are lost
    /// as the close says.
    fn flush(&mut self, i: usize) -> bool {
        if self.places[i].conn.on_writable(clock::now()).is_ok() {
            return true;
        }
        // Requests that never left cannot have been seen: they go again.
        if let Some(s) = self.places[i].conn.session_mut() {
            s.handle_write_error(clock::now());
        }
        if self.places[i].conn.carries_datagrams() {
            self.on_datagrams(i);
        } else {
            while let Read::Bytes { n, .. } = self.places[i].conn.read(&mut self.buf) {
                if let Some(s) = self.places[i].conn.session_mut() {
                    s.handle(&self.buf[..n], clock::now());
                }
            }
        }
        if let Some(s) = self.places[i].conn.session_mut() {
            s.handle_eof(clock::now());
        }
        self.settle(i, None);
        false
    }

    /// Connections whose delay is over take a request.
    fn wake_rested(&mut self, now: Nanos) {
        while let Some(&Reverse((until, i, generation))) = self.resting.peek() {
            if until > now {
                return;
            }
            self.resting.pop();
            let place = &mut self.places[i];
            if place.generation != generation || place.resting == 0 {
                continue;
            }
            place.resting -= 1;
            if !self.halted() && self.unclaimed(i) > 0 {
                self.offer(i, clock::now());
                self.flush(i);
            }
        }
    }

    /// Notes when the session of connection `i` next needs its deadline.
    fn watch_deadline(&mut self, i: usize) {
        let place = &self.places[i];
        if let Some(at) = place.conn.session().and_then(|s| s.poll_timeout()) {
            self.deadlines.push(Reverse((at, i, place.generation)));
        }
    }

    /// Sessions whose deadline passed handle it.
    fn session_deadlines(&mut self, now: Nanos) {
        while let Some(&Reverse((at, i, generation))) = self.deadlines.peek() {
            if at > now {
                return;
            }
            self.deadlines.pop();
            let place = &mut self.places[i];
            if place.generation != generation {
                continue;
            }
            // A deadline moved later since this entry was queued is not
            // due yet; the entry for the new one is queued already.
            let Some(session) = place.conn.session_mut() else {
                continue;
            };
            if session.poll_timeout().is_some_and(|t| t <= now) {
                session.handle_timeout(now);
                self.settle(i, None);
            }
        }
    }

    /// Expires requests outstanding longer than the timeout and reopens
    /// connections whose back-off has passed.
    fn sweep(&mut self, now: Nanos) {
        self.next_sweep = now + self.sweep_every;
        if now >= self.next_publish {
            self.publish(now);
        }
        let paced = self.schedule.paced();
        for i in 0..self.places.len() {
            // With thousands of connections a sweep takes milliseconds;
            // requests falling due meanwhile go out along the way.
            if paced && i % SWEEP_SLICE == SWEEP_SLICE - 1 {
                self.dispatch();
            }
            if self.places[i].role == Role::Vacant {
                continue;
            }
            match self.places[i].conn.on_timer(now, self.timeout) {
                Check::Nothing => self.watch_unanswered(i, now),
                Check::Expired => self.expire(i, now),
                Check::ConnectTimedOut => self.connect_failed(i, ConnectCause::Timeout),
                Check::Reopen => self.open(i),
                Check::ReopenAt(at) => self.next_sweep = self.next_sweep.min(at),
            }
        }
    }

    /// A connection that has answered nothing while others answer requests
    /// sent after its own has not been taken by the server: the server's
    /// limit is found, and its requests, when they time out, are counted
    /// as timed out on a connection the server never answered.
    fn watch_unanswered(&mut self, i: usize, now: Nanos) {
        let place = &self.places[i];
        if place.passed_over || place.role != Role::Active {
            return;
        }
        // Waiting since its oldest request went out, or, still opening
        // (a handshake the server never answers, its listen backlog full),
        // since the attempt began.
        let waiting = match place.conn.opening_since() {
            Some(since) => Some(since),
            None if place.conn.answered_nothing() => place.conn.oldest_sent(),
            None => None,
        };
        let peer = place.conn.peer();
        if waiting.is_some_and(|since| self.capacity[peer].passed_over(since, now)) {
            self.places[i].passed_over = true;
            self.capacity[peer].turned_away();
        }
    }

    /// Gives up the requests of connection `i` older than the timeout.
    /// Where the protocol can cancel one request, the connection and its
    /// other requests go on; otherwise it closes.
    fn expire(&mut self, i: usize, now: Nanos) {
        let timeout = self.timeout;
        let mut gone = std::mem::take(&mut self.drained);
        if let Some(s) = self.places[i].conn.session_mut() {
            s.expire(
                &mut |t: &InFlight| now.saturating_sub(t.stamp.sent()) > timeout,
                &mut gone,
                now,
            );
        }
        // Passed over as the server's limit showed: one connection whose
        // first request the server left unanswered is no limit.
        let peer = self.places[i].conn.peer();
        let passed_over = self.places[i].passed_over && self.capacity[peer].ceiling().is_some();
        for tag in gone.drain(..) {
            self.stats.lost(tag.stamp, Loss::Timeout, now);
            if passed_over {
                self.stats.timed_out_unanswered(tag.stamp);
            }
        }
        self.drained = gone;
        let finished = self.places[i]
            .conn
            .session()
            .is_none_or(|s| s.is_finished());
        self.settle(i, finished.then_some(Failure::Timeout));
    }

    /// Shares this thread's running totals with the progress line.
    fn publish(&mut self, now: Nanos) {
        self.next_publish = now + super::progress::PUBLISH_EVERY;
        if let Some(board) = &self.progress {
            if let Some(below) = board.intervals_below(now) {
                let parts = self.stats.take_closed_intervals(now, below);
                board.publish_intervals(self.index, parts, below);
            }
            board.publish(self.index, self.stats.stats());
            let in_flight: usize = self.places.iter().map(|p| p.conn.in_flight()).sum();
            let window = self.stats.window();
            let from = window.measure_from;
            let queued = self.slots.waiting().filter(|d| d.at >= from).count() as u64;
            let untaken = self.schedule.count_pending(from, now.min(window.end));
            board.publish_outstanding(self.index, in_flight as u64, queued + untaken);
        }
    }

    /// Places every due request of the window in its bucket; those that
    /// did not complete are filed at their age at `stop_at`.
    fn finish(mut self, stop_at: Nanos) -> ThreadStats {
        let mut at_end = AtEnd::default();
        let stats = &mut self.stats;
        for place in self.places.iter().filter(|p| p.role != Role::Vacant) {
            let conn = &place.conn;
            if let Some(s) = conn.session() {
                if let Some(p) = s.packets() {
                    stats.packets(p);
                }
                s.for_each_in_flight(&mut |t, last| {
                    stats.in_flight_at_end(t.stamp, stop_at);
                    stats.streaming_at_end(t.stamp, last, stop_at);
                });
            }
            if place.role == Role::Draining {
                at_end.draining += 1;
            } else if conn.in_flight() > 0 {
                at_end.busy += 1;
            } else if place.resting > 0 {
                at_end.resting += 1;
            } else if conn.is_open()
                && conn.free_streams() == 0
                && conn.session().is_some_and(|s| s.held_by_server())
            {
                at_end.held += 1;
            } else if !conn.is_open() {
                at_end.down += 1;
                match conn.went_down() {
                    Some(WentDown::Connect(c)) => at_end.down_connect.count(c),
                    Some(WentDown::Read(r)) => at_end.down_read.count(r),
                    None => {}
                }
            }
        }
        if self
            .script
            .as_ref()
            .is_some_and(ThreadScript::stop_requested)
        {
            at_end.stopped_threads = 1;
        }
        self.stats.at_end(at_end);
        let limit_found = self.capacity.iter().any(|c| c.ceiling().is_some());
        let accepted = limit_found.then(|| self.capacity.iter().map(Capacity::peak).sum());
        self.stats
            .connections(self.initial, self.peak, self.opened_on_demand, accepted);
        // Sent requests were counted as due when they went out; what is
        // still waiting for a slot or on the schedule is due but never sent.
        for due in self.slots.waiting() {
            self.stats.never_sent(due.at, stop_at);
        }
        for again in self.retries.iter().flatten() {
            self.stats.unsent_at_end(again.stamp, stop_at);
        }
        // Those passed over at a late start are counted apart: their ages
        // are not the server's doing.
        let schedule = &mut self.schedule;
        self.stats.never_taken(stop_at, |a, b| {
            schedule.count_pending(a, b) - schedule.count_missed(a, b)
        });
        self.stats
            .missed_at_start(stop_at, |a, b| schedule.count_missed(a, b));
        let calls = self.script.as_ref().map_or(0, ThreadScript::calls);
        self.stats.finish(clock::thread_cpu(), calls)
    }
}

/// What a failure costs a request, as wrk counts it, and why.
fn loss(why: Failure) -> Loss {
    match why {
        Failure::Reset(_) => Loss::Read(ReadCause::Reset),
        Failure::Refused => Loss::Read(ReadCause::PortClosed),
        Failure::Closed => Loss::Read(ReadCause::Closed),
        Failure::HeadTooLarge => Loss::Read(ReadCause::HeadTooLarge),
        Failure::Malformed | Failure::Protocol => Loss::Read(ReadCause::Malformed),
        Failure::Http2Only => Loss::Read(ReadCause::Http2Only),
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

/// The static request as requests shared by every send.
fn static_batch(batch: &Batch) -> io::Result<Vec<Rc<Request>>> {
    let mut metas = Vec::new();
    metas_into(batch.bytes(), &mut metas).map_err(io::Error::other)?;
    let bytes = Bytes::copy_from_slice(batch.bytes());
    Ok(Request::split(&bytes, &metas)
        .into_iter()
        .map(Rc::new)
        .collect())
}

/// Starts a connect to `addr` (`peer`'s, unless the script moved its
/// thread) and registers its socket under `token`.
fn connect(
    addr: SocketAddr,
    peer: &Peer,
    registry: &Registry,
    token: Token,
) -> io::Result<Transport> {
    let mut transport = match peer.protocol.carrier() {
        Carrier::Stream => Transport::connect(addr, peer.tls.as_ref())?,
        // The session does its own TLS over datagrams.
        Carrier::Datagrams => Transport::datagrams(addr)?,
    };
    let interest = Interest::READABLE | Interest::WRITABLE;
    registry.register(transport.socket(), token, interest)?;
    Ok(transport)
}

fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data and CPU_SET stays within it (cpu was
    // checked against the allowed set when the flags were read).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Load;

    /// 1000 requests a second on one thread from t0 = 0: one every ms.
    fn paced() -> Schedule {
        Schedule(Load::constant(1000.0).plan(0, 0, 1))
    }

    const MS: Nanos = 1_000_000;

    #[test]
    fn a_request_is_taken_once_it_is_due_and_only_inside_the_run() {
        let mut s = paced();
        assert!(s.paced());
        assert_eq!(s.take_due(0, 10 * MS), Some(0));
        // The next one is due at 1 ms: not before, and not at the run's end.
        assert_eq!(s.take_due(MS - 1, 10 * MS), None);
        assert_eq!(s.take_due(MS, MS), None);
        assert_eq!(s.next(), Some(MS));
        assert_eq!(s.take_due(5 * MS, 10 * MS), Some(MS));
        // A batch's further requests take the next times, whenever sent.
        assert_eq!(s.take_slot(0), 2 * MS);
        // Times left in [from, stop): 3..=9 ms.
        assert_eq!(s.count_pending(0, 10 * MS), 7);
    }

    #[test]
    fn a_closed_loop_has_no_intended_times() {
        let mut s = Schedule(Plan::Closed);
        assert!(!s.paced());
        assert_eq!((s.next(), s.take_due(5, 10)), (None, None));
        assert_eq!(s.take_slot(42), 42);
        assert_eq!(s.count_pending(0, 10), 0);
    }

    #[test]
    fn a_static_batch_is_built_once_and_shared_by_every_send() {
        let batch =
            Batch::parse(b"GET /a HTTP/1.1\r\n\r\nHEAD /b HTTP/1.1\r\n\r\n".to_vec()).unwrap();
        let requests = static_batch(&batch).unwrap();
        let wires: Vec<(&[u8], bool)> = requests.iter().map(|r| (r.wire(), r.is_head())).collect();
        assert_eq!(
            wires,
            [
                (&b"GET /a HTTP/1.1\r\n\r\n"[..], false),
                (&b"HEAD /b HTTP/1.1\r\n\r\n"[..], true)
            ]
        );
        let mut source = Source::Static(requests);
        assert_eq!(
            (
                source.next_scheduled(),
                source.next_for(0),
                source.peer_of(0)
            ),
            (0, 0, 0)
        );
        assert_eq!(source.endpoint(0), None);
    }

    #[test]
    fn every_failure_is_counted_where_wrk_counts_it() {
        assert_eq!(loss(Failure::Reset(Some(8))), Loss::Read(ReadCause::Reset));
        assert_eq!(loss(Failure::Protocol), Loss::Read(ReadCause::Malformed));
        assert_eq!(loss(Failure::Http2Only), Loss::Read(ReadCause::Http2Only));
        assert_eq!(loss(Failure::Write), Loss::Write);
        assert_eq!(loss(Failure::Timeout), Loss::Timeout);
    }
}
