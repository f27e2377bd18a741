//! One worker thread: its poller, timer, connections, script and
//! statistics, and the handlers that tie them together.
//!
//! The loop is the same in both modes; the plan decides when requests are
//! due. In rate mode a due request takes a free slot ([`Slots`]: an idle
//! connection with HTTP/1.1), or waits (implicitly: it is simply the next
//! intended time not yet taken) until one frees up, its latency counting
//! from its intended time all the while. In the closed loop a connection
//! sends its next request as soon as it is free. Nothing here allocates per
//! request, locks, or touches memory shared with other threads; the shared
//! stop flag is read only when the main thread wakes this one.
//!
//! Each connection makes its own transitions ([`Conn`]); the handlers
//! ([`Worker::on_connected`], [`Worker::on_writable`],
//! [`Worker::on_readable`], [`Worker::on_timer`]) forward events to it and
//! act on what it reports: a slot freed or taken, a request sent, answered
//! or lost (one [`Recorder`] call each), a socket to register or drop.
//!
//! A script's `request()` may return several requests at once: the batch
//! is pipelined on one connection, goes out when its first request falls
//! due, and takes one slot of the schedule per request. `delay()` rests a
//! connection for that long before its next request, in both modes.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use mio::{Interest, Registry, Token, Waker};

use crate::clock::{self, Nanos};
use crate::http::h2::{self, Event as H2Event, H2Request, OpenError};
use crate::http::request::Batch;
use crate::http::response::Done;
use crate::replay::Cursor;
use crate::schedule::Plan;
use crate::script::ThreadScript;
use crate::stats::{AtEnd, Loss, Phases, Recorder, Stamp, StopCause, ThreadStats};

use super::conn::{After, Check, Conn, Connect, Eof, H2InFlight, InFlight, Out, Read, Received};
use super::poller::{Events, Poller, Ready, WAKE};
use super::setup::Protocol;
use super::slots::{Assigned, Due, Slot, Slots};
use super::transport::{TlsSetup, Transport};
use super::{EngineError, Stop};

pub use crate::stats::Window;

/// Connections a sweep checks between looks at the schedule.
const SWEEP_SLICE: usize = 256;
/// Size of the one read buffer all of a worker's connections share.
const READ_BUF: usize = 64 * 1024;

/// Everything a worker needs, decided before it starts.
pub struct WorkerSetup {
    pub index: usize,
    pub connections: usize,
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
    pub cpu: Option<usize>,
    /// Longest time to wait for the connections to open before the start.
    pub connect_wait: Nanos,
    /// Length of the intervals of the time series and the interval log.
    pub interval: std::time::Duration,
    /// See [`super::Setup::counts_every`].
    pub counts_every: Option<std::time::Duration>,
    /// HTTP/2 streams per connection at most (`-m`).
    pub max_streams: u32,
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

pub struct Worker {
    index: usize,
    poller: Poller,
    stop: Arc<Stop>,
    conns: Vec<Conn>,
    /// HTTP/2: slots each connection has in `slots` (one per free stream).
    offered: Vec<u32>,
    /// HTTP/2: the static request of each peer, converted once.
    h2_static: Vec<Vec<Rc<H2Request>>>,
    /// HTTP/2: per peer, requests the server never processed (above a
    /// GOAWAY's last stream id), or that found no stream after all, oldest
    /// first: they go out again before any new request.
    retries: Vec<VecDeque<H2InFlight>>,
    /// HTTP/2: per connection, when each of its streams resting in the
    /// script's `delay()` comes free.
    stream_rests: Vec<Vec<Nanos>>,
    /// HTTP/2: streams are being opened in a row; one write sends them.
    filling: bool,
    /// What due requests wait for: free slots, per peer.
    slots: Slots,
    /// Connections resting after `delay()`, earliest first.
    resting: BinaryHeap<Reverse<(Nanos, usize)>>,
    peers: Vec<Peer>,
    source: Source,
    script: Option<ThreadScript>,
    /// HEAD flags of the batch the script's `request()` built last (reused,
    /// never reallocated once grown).
    script_heads: Vec<bool>,
    /// The first fatal error (a script's); it stops every worker.
    failure: Option<EngineError>,
    timeout: Nanos,
    buf: Box<[u8]>,
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
    /// One batch, encoded before the run and shared by every connection.
    Static(Batch),
    /// The script's `request()` builds each batch in its connection.
    Script,
    /// The requests file; the cursor picks every request.
    Replay(Cursor),
}

impl Source {
    /// The request of the schedule's next intended time (rate mode).
    fn next_scheduled(&mut self) -> u32 {
        match self {
            Source::Replay(r) => {
                let request = r.peek();
                r.advance();
                request
            }
            _ => 0,
        }
    }

    /// The next request for a connection to `peer` (closed loop).
    fn next_for(&mut self, peer: usize) -> u32 {
        match self {
            Source::Replay(r) => r.next_for_host(peer),
            _ => 0,
        }
    }

    /// The peer a request goes to.
    fn peer_of(&self, request: u32) -> usize {
        match self {
            Source::Replay(r) => r.set().get(request).host as usize,
            _ => 0,
        }
    }

    /// The endpoint a request is counted under, if any.
    fn endpoint(&self, request: u32) -> Option<u16> {
        match self {
            Source::Replay(r) => Some(r.set().get(request).endpoint),
            _ => None,
        }
    }

    /// The shared bytes a connection's batch names.
    fn shared(&self, out: Out) -> &[u8] {
        match (self, out) {
            (Source::Static(batch), _) => batch.bytes(),
            (Source::Replay(r), Out::Shared(request)) => r.set().bytes(request),
            _ => &[],
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
            .is_some_and(ThreadScript::has_response);
        let source = match (setup.replay, &setup.script) {
            (Some(cursor), _) => Source::Replay(cursor),
            (None, Some(script)) if !script.is_static() => Source::Script,
            (None, _) => Source::Static(setup.request),
        };
        let peers = setup.peers.len();
        let settings = h2::Settings {
            max_streams: setup.max_streams,
            max_header_list: u32::try_from(setup.max_head).unwrap_or(u32::MAX),
            capture,
            ..h2::Settings::default()
        };
        let conns = (0..setup.connections)
            .map(|c| {
                let peer = c % peers;
                match setup.peers[peer].protocol {
                    Protocol::Http2 => Conn::new_h2(setup.max_head, capture, peer, settings),
                    Protocol::Http1 => Conn::new(setup.max_head, capture, peer),
                }
            })
            .collect();
        // The static request, converted once for each HTTP/2 host.
        let h2_static = match &source {
            Source::Static(batch) => setup
                .peers
                .iter()
                .map(|p| match p.protocol {
                    Protocol::Http2 => {
                        H2Request::from_http1(batch.bytes(), p.scheme(), &p.authority)
                            .map(|v| v.into_iter().map(Rc::new).collect())
                            .map_err(io::Error::other)
                    }
                    Protocol::Http1 => Ok(Vec::new()),
                })
                .collect::<io::Result<Vec<_>>>()?,
            _ => Vec::new(),
        };
        let sweep_every = (setup.timeout / 10).clamp(1_000_000, 50_000_000);
        let mut w = Worker {
            index: setup.index,
            poller,
            stop,
            offered: vec![0; setup.connections],
            h2_static,
            retries: vec![VecDeque::new(); peers],
            stream_rests: vec![Vec::new(); setup.connections],
            filling: false,
            conns,
            slots: Slots::new(peers, setup.connections),
            resting: BinaryHeap::with_capacity(setup.connections),
            peers: setup.peers,
            source,
            script: setup.script,
            script_heads: Vec::with_capacity(16),
            failure: None,
            timeout: setup.timeout,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            stats: Recorder::new(setup.interval, setup.endpoints, setup.counts_every),
            schedule: Schedule(Plan::Closed),
            next_sweep: 0,
            sweep_every,
            started: false,
            progress: setup.progress,
            next_publish: 0,
        };
        let now = clock::now();
        for i in 0..w.conns.len() {
            w.open(i, now);
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
        // Every open connection takes its first request (or first delay);
        // an HTTP/2 one offers its free streams again.
        self.offered.iter_mut().for_each(|n| *n = 0);
        let mut slots = self.slots.take_free();
        slots.dedup();
        for slot in slots {
            if self.conns[slot.conn].is_h2() && self.offered[slot.conn] > 0 {
                continue;
            }
            self.ready(slot.conn);
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
            self.poller.wait(&mut events, self.next_deadline())?;
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

    /// Before the start: waits until every connection is open or has failed
    /// (or `until`), so that the schedule starts with connections ready.
    fn await_connections(&mut self, until: Nanos) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let now = clock::now();
            // An HTTP/2 connection is ready once the server's SETTINGS
            // came: the run starts with its streams free.
            let pending = self
                .conns
                .iter()
                .any(|c| c.is_connecting() || c.awaits_settings());
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
    fn next_deadline(&self) -> Nanos {
        let mut at = self.stats.window().end.min(self.next_sweep);
        if let Some(Reverse((until, _))) = self.resting.peek() {
            at = at.min(*until);
        }
        if self.slots.any_free() {
            if let Some(due) = self.schedule.next() {
                at = at.min(due);
            }
        }
        at
    }

    /// Whatever falls due by `now` without I/O: timeouts and reopenings
    /// (every sweep), ends of delays, and the schedule's requests.
    fn on_timer(&mut self, now: Nanos) {
        if now >= self.next_sweep {
            self.sweep(now);
        }
        self.wake_rested(now);
        self.dispatch();
    }

    /// Sends every due request that has a free slot to go on.
    fn dispatch(&mut self) {
        let end = self.stats.window().end;
        while self.slots.any_free() && !self.halted() {
            let Some(at) = self.schedule.take_due(clock::now(), end) else {
                return;
            };
            let request = self.source.next_scheduled();
            let peer = self.source.peer_of(request);
            // Without a free slot of its peer, it waits for one.
            if let Some(a) = self.slots.assign(peer, Due { at, request }) {
                self.send_assigned(a);
            }
        }
    }

    fn send_assigned(&mut self, a: Assigned) {
        let i = a.slot.conn;
        if self.conns[i].is_h2() {
            self.offered[i] = self.offered[i].saturating_sub(1);
        }
        if a.waited {
            self.stats.queued(a.due.at);
        }
        self.send(a.slot.conn, a.due.at, a.due.request);
    }

    fn on_event(&mut self, i: usize, ev: &Ready) {
        let Some(conn) = self.conns.get(i) else {
            return;
        };
        if conn.is_connecting() {
            self.on_connected(i);
        } else if conn.is_open() {
            if ev.is_writable() {
                self.on_writable(i);
            }
        } else {
            return;
        }
        // The same edge may also carry bytes or the peer's close (even for
        // a connection that only just finished connecting), and an
        // edge-triggered poller reports it only once.
        let closing = ev.is_read_closed() || ev.is_error();
        if self.conns[i].is_open() && (ev.is_readable() || closing) {
            self.on_readable(i, closing);
        }
    }

    /// The connect (or the TLS handshake) of connection `i` moved on.
    fn on_connected(&mut self, i: usize) {
        match self.conns[i].on_connect_event(&mut self.buf) {
            Connect::Pending => {}
            Connect::Ready => self.ready(i),
            Connect::Failed => self.connect_failed(i),
        }
    }

    /// The connection can take a request: after the script's `delay()`, if
    /// it has one, it becomes available.
    fn ready(&mut self, i: usize) {
        if self.conns[i].is_h2() {
            return self.top_up(i);
        }
        if self.started {
            if let Some(script) = self.script.as_mut().filter(|s| s.has_delay()) {
                match script.delay_ms() {
                    Err(e) => return self.fail(e.into()),
                    Ok(ms) if ms > 0.0 => {
                        let until = clock::now() + (ms * 1e6) as Nanos;
                        self.conns[i].rest(until);
                        self.resting.push(Reverse((until, i)));
                        return;
                    }
                    Ok(_) => {}
                }
            }
        }
        self.available(i);
    }

    /// Sends at once in the closed loop; otherwise the slot takes a request
    /// waiting for its peer or is kept free (the schedule picks it up).
    fn available(&mut self, i: usize) {
        if self.halted() {
            return;
        }
        let now = clock::now();
        let peer = self.conns[i].peer();
        if self.started && !self.schedule.paced() {
            if self.closed_loop_over(now) {
                return;
            }
            let request = self.source.next_for(peer);
            return self.send(i, now, request);
        }
        if let Some(a) = self.slots.release(peer, Slot { conn: i }, now) {
            self.send_assigned(a);
        }
    }

    /// The closed loop sends nothing once its window has ended. A response
    /// handled after the end (later in the same batch of events) frees its
    /// connection or stream, and no new request follows it.
    fn closed_loop_over(&self, now: Nanos) -> bool {
        self.started && !self.schedule.paced() && now >= self.stats.window().end
    }

    /// HTTP/2: every free stream of connection `i` is put to use: first by
    /// requests waiting to go out again, then (after the script's
    /// `delay()`, if it has one) as a slot, or in the closed loop once
    /// started, by a new request at once. Streams opened here go out in
    /// one write.
    fn top_up(&mut self, i: usize) {
        let peer = self.conns[i].peer();
        self.filling = true;
        while self.unclaimed_streams(i) > 0 && !self.halted() {
            if self.closed_loop_over(clock::now()) {
                break;
            }
            if let Some(again) = self.retries[peer].pop_front() {
                let stamp = again.req.stamp.resent(clock::now());
                self.open_h2(i, &again.request, stamp);
                continue;
            }
            match self.stream_delay() {
                Err(e) => {
                    self.filling = false;
                    return self.fail(e);
                }
                Ok(Some(until)) => {
                    self.stream_rests[i].push(until);
                    self.resting.push(Reverse((until, i)));
                }
                Ok(None) => self.offer_stream(i),
            }
        }
        self.filling = false;
        self.on_writable(i);
    }

    /// HTTP/2: streams of connection `i` that are free and neither offered
    /// as slots nor resting.
    fn unclaimed_streams(&self, i: usize) -> u32 {
        let claimed = self.offered[i] as usize + self.stream_rests[i].len();
        let free = self.conns[i].free_streams() as usize;
        free.saturating_sub(claimed) as u32
    }

    /// When a stream that came free may take its next request, if the
    /// script's `delay()` asks it to wait (once the run is on).
    fn stream_delay(&mut self) -> Result<Option<Nanos>, EngineError> {
        if !self.started {
            return Ok(None);
        }
        let Some(script) = self.script.as_mut().filter(|s| s.has_delay()) else {
            return Ok(None);
        };
        let ms = script.delay_ms()?;
        Ok((ms > 0.0).then(|| clock::now() + (ms * 1e6) as Nanos))
    }

    /// HTTP/2: one free stream of connection `i` takes a new request (the
    /// closed loop once started) or becomes a slot for a due one.
    fn offer_stream(&mut self, i: usize) {
        let peer = self.conns[i].peer();
        let now = clock::now();
        if self.started && !self.schedule.paced() {
            let request = self.source.next_for(peer);
            return self.send(i, now, request);
        }
        self.offered[i] += 1;
        if let Some(a) = self.slots.release(peer, Slot { conn: i }, now) {
            self.send_assigned(a);
        }
    }

    /// HTTP/2: requests of `peer` waiting to go out again take free slots
    /// of other connections, if there are any.
    fn resend(&mut self, peer: usize) {
        while !self.retries[peer].is_empty() && !self.halted() {
            let Some(slot) = self.slots.take(peer) else {
                return;
            };
            let i = slot.conn;
            self.offered[i] = self.offered[i].saturating_sub(1);
            let again = self.retries[peer].pop_front().expect("not empty");
            let stamp = again.req.stamp.resent(clock::now());
            self.open_h2(i, &again.request, stamp);
            self.on_writable(i);
        }
    }

    /// HTTP/2: opens a stream for `request` on connection `i`. A request
    /// that finds no stream after all (the server lowered its limit, or
    /// sent GOAWAY) waits to go out again; one the protocol refuses ends
    /// the run, since every request like it would be refused too.
    fn open_h2(&mut self, i: usize, request: &Rc<H2Request>, stamp: Stamp) {
        match self.conns[i].open_stream(request, stamp) {
            Ok(()) => {}
            Err(OpenError::Rejected(why)) => {
                self.stats.lost(stamp, Loss::Write, clock::now());
                self.fail(EngineError::Http2(why));
            }
            Err(OpenError::Full | OpenError::Closed) => {
                let peer = self.conns[i].peer();
                let req = InFlight {
                    stamp,
                    head: request.is_head(),
                    stream: 0,
                };
                self.retries[peer].push_front(H2InFlight {
                    req,
                    request: Rc::clone(request),
                });
            }
        }
    }

    /// Connections whose delay is over become available.
    fn wake_rested(&mut self, now: Nanos) {
        while let Some(&Reverse((until, i))) = self.resting.peek() {
            if until > now {
                return;
            }
            self.resting.pop();
            if self.conns[i].is_h2() {
                self.wake_stream(i, until);
            } else if self.conns[i].wake(until) {
                self.available(i);
            }
        }
    }

    /// HTTP/2: the stream of connection `i` resting until `until` may take
    /// a request (unless the connection closed meanwhile).
    fn wake_stream(&mut self, i: usize, until: Nanos) {
        let rests = &mut self.stream_rests[i];
        if let Some(k) = rests.iter().position(|&u| u == until) {
            rests.swap_remove(k);
            if !self.halted() {
                self.offer_stream(i);
            }
        }
    }

    fn connect_failed(&mut self, i: usize) {
        self.stats.connect_failed(clock::now());
        self.close(i);
    }

    /// Writes a batch whose first request is intended at `intended` on
    /// connection `i`; `request` picks it from the requests file, if any.
    fn send(&mut self, i: usize, intended: Nanos, request: u32) {
        if self.conns[i].is_h2() {
            return self.send_h2(i, intended, request);
        }
        let out = match self.load_batch(i, request) {
            Ok(out) => out,
            Err(e) => return self.fail(e),
        };
        let now = clock::now();
        let endpoint = self.source.endpoint(request);
        let heads: &[bool] = match &self.source {
            Source::Static(batch) => batch.heads(),
            Source::Script => &self.script_heads,
            Source::Replay(r) if r.set().get(request).head => &[true],
            Source::Replay(_) => &[false],
        };
        let conn = &mut self.conns[i];
        for (k, &head) in heads.iter().enumerate() {
            let slot = if k == 0 {
                intended
            } else {
                self.schedule.take_slot(now)
            };
            conn.push(self.stats.sent(slot, now, endpoint), head);
        }
        conn.start_batch(out);
        self.on_writable(i);
    }

    /// HTTP/2: the request (or each request of a script's batch) on a
    /// stream of its own.
    fn send_h2(&mut self, i: usize, intended: Nanos, request: u32) {
        let peer = self.conns[i].peer();
        let converted = match self.h2_requests(i, request) {
            Ok(c) => c,
            Err(e) => return self.fail(e),
        };
        let count = match &converted {
            Some(v) => v.len(),
            None => self.h2_static[peer].len(),
        };
        let now = clock::now();
        let endpoint = self.source.endpoint(request);
        for k in 0..count {
            let req = match &converted {
                Some(v) => Rc::clone(&v[k]),
                None => Rc::clone(&self.h2_static[peer][k]),
            };
            let slot = if k == 0 {
                intended
            } else {
                self.schedule.take_slot(now)
            };
            let stamp = self.stats.sent(slot, now, endpoint);
            self.open_h2(i, &req, stamp);
        }
        // Streams opened together go out in one write.
        if !self.filling {
            self.on_writable(i);
        }
    }

    /// HTTP/2: the requests to send on connection `i`, converted from the
    /// requests file's `request` or from the script's `request()`; `None`
    /// for the static request, converted once before the run.
    fn h2_requests(
        &mut self,
        i: usize,
        request: u32,
    ) -> Result<Option<Vec<Rc<H2Request>>>, EngineError> {
        let peer = &self.peers[self.conns[i].peer()];
        let bytes = match &self.source {
            Source::Static(_) => return Ok(None),
            Source::Replay(r) => r.set().bytes(request),
            Source::Script => {
                let script = self.script.as_mut().expect("a script source has a script");
                script.request_batch(self.conns[i].own_batch(), &mut self.script_heads)?;
                self.conns[i].own_batch()
            }
        };
        H2Request::from_http1(bytes, peer.scheme(), &peer.authority)
            .map(|v| Some(v.into_iter().map(Rc::new).collect()))
            .map_err(|e| EngineError::Http2(e.to_string()))
    }

    /// Readies the next batch of connection `i`: calls the script's
    /// `request()` into the connection's buffer when it builds each one.
    fn load_batch(&mut self, i: usize, request: u32) -> Result<Out, EngineError> {
        match self.source {
            Source::Static(_) => Ok(Out::Shared(0)),
            Source::Replay(_) => Ok(Out::Shared(request)),
            Source::Script => {
                let script = self.script.as_mut().expect("a script source has a script");
                let own = self.conns[i].own_batch();
                script.request_batch(own, &mut self.script_heads)?;
                Ok(Out::Own)
            }
        }
    }

    /// Connection `i` can write: it continues its batch.
    fn on_writable(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        let shared = self.source.shared(conn.out());
        if let Err(why) = conn.on_writable(shared) {
            self.lose(i, why);
        }
    }

    /// Reads until the socket would block, completing responses as they end.
    /// `closing`: the event also reported the peer's close, which the
    /// edge-triggered poller will not report again.
    fn on_readable(&mut self, i: usize, closing: bool) {
        loop {
            let (n, drained) = match self.conns[i].read(&mut self.buf) {
                Read::Bytes { n, drained } => (n, drained),
                Read::Blocked => return,
                Read::Eof => return self.on_eof(i),
                Read::Failed => return self.lose(i, Loss::Read),
            };
            if !self.on_bytes(i, n) {
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

    /// Hands `n` bytes of the read buffer to the connection. Returns false
    /// when the connection was closed meanwhile.
    fn on_bytes(&mut self, i: usize, n: usize) -> bool {
        if self.conns[i].is_h2() {
            self.conns[i].receive(&self.buf[..n]);
            return self.on_h2_events(i);
        }
        let mut at = 0;
        while at < n {
            match self.conns[i].receive(&self.buf[at..n]) {
                Received::Partial { consumed } => at += consumed,
                Received::Response {
                    consumed,
                    req,
                    done,
                } => {
                    at += consumed;
                    if !self.on_response(i, req, done) {
                        return false;
                    }
                }
                Received::Refused => {
                    self.reopen(i);
                    return false;
                }
                Received::Malformed => {
                    self.lose(i, Loss::Read);
                    return false;
                }
            }
        }
        true
    }

    /// HTTP/2: what became of the streams after bytes came in (or after
    /// the server closed the connection). Returns false when the
    /// connection was closed meanwhile.
    fn on_h2_events(&mut self, i: usize) -> bool {
        let peer = self.conns[i].peer();
        let mut again = false;
        while let Some(event) = self.conns[i].next_event() {
            let now = clock::now();
            match event {
                H2Event::Response {
                    tag,
                    status,
                    head_bytes,
                    body_bytes,
                } => {
                    let bytes = head_bytes as u64 + body_bytes;
                    self.stats.completed(tag.req.stamp, status, bytes, now);
                    if let Some(script) = self.script.as_mut().filter(|s| s.has_response()) {
                        let conn = &self.conns[i];
                        let result = script.response(
                            status,
                            &mut conn.response_headers(),
                            conn.response_body(),
                        );
                        if let Err(e) = result {
                            self.fail(e.into());
                            return false;
                        }
                    }
                }
                H2Event::Reset { tag, code } => self.stats.reset(tag.req.stamp, code, now),
                H2Event::StreamError { tag, .. } => self.stats.lost(tag.req.stamp, Loss::Read, now),
                H2Event::Unprocessed { tag } => {
                    // Not an error: it goes out again, ahead of new requests.
                    self.stats.retried(tag.req.stamp);
                    self.retries[peer].push_back(tag);
                    again = true;
                }
                H2Event::GoAway { code } => self.stats.goaway(code, now),
                H2Event::ConnectionError { .. } => {
                    self.stats.connection_error(now);
                    self.lose(i, Loss::Read);
                    self.resend(peer);
                    return false;
                }
            }
            self.conns[i].stream_done();
        }
        if self.conns[i].is_finished() {
            // No new stream goes here: its free slots go away, and it is
            // replaced once its last stream is done.
            self.slots.remove(peer, Slot { conn: i });
            self.offered[i] = 0;
            if again {
                self.resend(peer);
            }
            if self.conns[i].in_flight().next().is_none() {
                self.reopen(i);
                return false;
            }
        } else {
            self.top_up(i);
            if again {
                self.resend(peer);
            }
        }
        self.on_writable(i);
        true
    }

    /// HTTP/2: the streams of connection `i` past the timeout are given up
    /// (reset) and counted as timeouts; the connection and its other
    /// streams go on.
    fn expire_streams(&mut self, i: usize, now: Nanos) {
        let mut gone = Vec::new();
        self.conns[i].expire_streams(now, self.timeout, &mut gone);
        for t in gone {
            self.stats.lost(t.req.stamp, Loss::Timeout, now);
            self.conns[i].stream_done();
        }
        // Their streams are free again (or the connection is replaced).
        self.on_h2_events(i);
    }

    /// The peer closed the stream.
    fn on_eof(&mut self, i: usize) {
        if self.conns[i].is_h2() {
            // Streams the server never processed go out again; the rest
            // in flight are lost.
            self.conns[i].on_eof();
            if self.on_h2_events(i) {
                self.reopen(i);
            }
            return;
        }
        match self.conns[i].on_eof() {
            Eof::Response(req, done) => {
                if self.on_response(i, req, done) {
                    self.reopen(i);
                }
            }
            Eof::Clean => self.reopen(i),
            Eof::Broken => self.lose(i, Loss::Read),
        }
    }

    /// Records a finished response. Returns false when the connection was
    /// closed (or the run halted) as a result.
    fn on_response(&mut self, i: usize, req: InFlight, done: Done) -> bool {
        let bytes = done.head_bytes as u64 + done.body_bytes;
        self.stats
            .completed(req.stamp, done.status, bytes, clock::now());
        if let Some(script) = self.script.as_mut().filter(|s| s.has_response()) {
            let conn = &self.conns[i];
            let result = script.response(
                done.status,
                &mut conn.response_headers(),
                conn.response_body(),
            );
            if let Err(e) = result {
                self.fail(e.into());
                return false;
            }
        }
        match self.conns[i].responded(done.keep_alive) {
            After::Next => true,
            After::Free => {
                self.ready(i);
                true
            }
            After::Close => {
                self.reopen(i);
                false
            }
        }
    }

    /// Counts the connection's in-flight requests as lost and recycles it.
    fn lose(&mut self, i: usize, why: Loss) {
        let now = clock::now();
        for req in self.conns[i].in_flight() {
            self.stats.lost(req.stamp, why, now);
        }
        self.close(i);
    }

    /// The server ended a connection that did its job (or broke its
    /// stream): open a new one. Requests pipelined behind its last response
    /// (sent after a `Connection: close` was on its way, or cut off by the
    /// close) will get no answer on it: they are lost, as read errors.
    fn reopen(&mut self, i: usize) {
        self.stats.reconnected();
        self.lose(i, Loss::Read);
    }

    /// Closes connection `i` and reopens it now or after its back-off.
    fn close(&mut self, i: usize) {
        let now = clock::now();
        let conn = &mut self.conns[i];
        if conn.is_idle() || conn.is_h2() {
            self.slots.remove(conn.peer(), Slot { conn: i });
            self.offered[i] = 0;
            self.stream_rests[i].clear();
        }
        let closed = conn.close(now);
        if let Some(mut t) = closed.io {
            let _ = self.poller.registry().deregister(t.socket());
        }
        if closed.reopen_at <= now {
            self.open(i, closed.reopen_at);
        } else {
            self.next_sweep = self.next_sweep.min(closed.reopen_at);
        }
    }

    /// Starts connection `i`; a failure to even start counts as a connect
    /// error and is retried later.
    fn open(&mut self, i: usize, now: Nanos) {
        let peer = &self.peers[self.conns[i].peer()];
        // As in wrk, a script may move its thread (`wrk.thread.addr = ...`)
        // at any time; every connection opened after that goes there.
        let addr = self.script.as_ref().map_or(peer.addr, |s| s.addr());
        match connect(addr, peer, self.poller.registry(), Token(i)) {
            Ok(transport) => self.conns[i].open(transport, now),
            Err(_) => {
                self.stats.connect_failed(now);
                let at = self.conns[i].open_failed(now);
                self.next_sweep = self.next_sweep.min(at);
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
        for i in 0..self.conns.len() {
            // With thousands of connections a sweep takes milliseconds;
            // requests falling due meanwhile go out along the way.
            if paced && i % SWEEP_SLICE == SWEEP_SLICE - 1 {
                self.dispatch();
            }
            match self.conns[i].on_timer(now, self.timeout) {
                Check::Nothing => {}
                Check::Expired if self.conns[i].is_h2() => self.expire_streams(i, now),
                Check::Expired => self.lose(i, Loss::Timeout),
                Check::ConnectTimedOut => self.connect_failed(i),
                Check::Reopen => self.open(i, now),
                Check::ReopenAt(at) => self.next_sweep = self.next_sweep.min(at),
            }
        }
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
            let in_flight: usize = self.conns.iter().map(|c| c.in_flight().count()).sum();
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
        for (conn, rests) in self.conns.iter().zip(&self.stream_rests) {
            for req in conn.in_flight() {
                self.stats.in_flight_at_end(req.stamp, stop_at);
            }
            if conn.in_flight().next().is_some() {
                at_end.busy += 1;
            } else if conn.is_resting() || !rests.is_empty() {
                at_end.resting += 1;
            } else if !conn.is_open() {
                at_end.down += 1;
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
        // Sent requests were counted as due when they went out; what is
        // still waiting for a slot or on the schedule is due but never sent.
        for due in self.slots.waiting() {
            self.stats.never_sent(due.at, stop_at);
        }
        for again in self.retries.iter().flatten() {
            self.stats.unsent_at_end(again.req.stamp, stop_at);
        }
        let schedule = &mut self.schedule;
        self.stats
            .never_taken(stop_at, |a, b| schedule.count_pending(a, b));
        self.stats
            .missed_at_start(stop_at, |a, b| schedule.count_missed(a, b));
        let calls = self.script.as_ref().map_or(0, ThreadScript::calls);
        self.stats.finish(clock::thread_cpu(), calls)
    }
}

/// Starts a connect to `addr` (`peer`'s, unless the script moved its
/// thread) and registers its socket under `token`.
fn connect(
    addr: SocketAddr,
    peer: &Peer,
    registry: &Registry,
    token: Token,
) -> io::Result<Transport> {
    let mut transport = Transport::connect(addr, peer.tls.as_ref())?;
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
    fn a_static_batch_is_shared_and_a_scripts_is_the_connections_own() {
        let batch = Batch::parse(b"GET / HTTP/1.1\r\n\r\n".to_vec()).unwrap();
        let mut source = Source::Static(batch.clone());
        assert_eq!(source.shared(Out::Shared(0)), batch.bytes());
        assert_eq!(
            (
                source.next_scheduled(),
                source.next_for(0),
                source.peer_of(0)
            ),
            (0, 0, 0)
        );
        assert_eq!(source.endpoint(0), None);
        assert_eq!(Source::Script.shared(Out::Own), b"");
    }
}
