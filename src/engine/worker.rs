//! One worker thread: its poller, timer, connections, script and
//! statistics.
//!
//! The loop is the same in both modes; the [`Plan`] decides when requests
//! are due. In rate mode a due request goes out on an idle connection, or
//! waits (implicitly: it is simply the next intended time not yet taken)
//! until one frees up, its latency counting from its intended time all the
//! while. Nothing here allocates per request, locks, or touches memory
//! shared with other threads; the shared stop flag is read only when the
//! main thread wakes this one.
//!
//! With `--requests`, each connection is bound to one host. A due request
//! whose host has no idle connection while other hosts do waits in its
//! host's queue, so that one slow host does not hold back the others; when
//! no connection at all is idle, due requests simply stay on the schedule.
//!
//! A script's `request()` may return several requests at once: the batch
//! is pipelined on one connection, goes out when its first request falls
//! due, and takes one slot of the schedule per request. `delay()` rests a
//! connection for that long before its next request, in both modes.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use mio::event::Event;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};

use crate::clock::{self, Nanos};
use crate::http::request::{heads_into, Batch};
use crate::http::response::{Done, Feed};
use crate::replay::Cursor;
use crate::schedule::Plan;
use crate::script::ThreadScript;
use crate::stats::{Loss, Recorder, ThreadStats};

use super::conn::{Conn, InFlight, State};
use super::timer::{self, Timer};
use super::transport::{TlsSetup, Transport};
use super::{EngineError, Stop};

const TIMER: Token = Token(usize::MAX - 1);
const WAKE: Token = Token(usize::MAX - 2);
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
    /// Where this thread publishes its running totals for the progress
    /// line (a few times a second, never per request).
    pub progress: Option<Arc<super::progress::Board>>,
}

/// A server the connections go to.
#[derive(Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    pub tls: Option<TlsSetup>,
}

pub use crate::stats::Window;

pub struct Worker {
    index: usize,
    poll: Poll,
    timer: Timer,
    waker: Arc<Waker>,
    stop: Arc<Stop>,
    conns: Vec<Conn>,
    /// Idle connections of each peer, oldest first, so that every
    /// connection is used.
    idle: Vec<VecDeque<usize>>,
    /// Idle connections over all peers.
    idle_count: usize,
    /// Due requests (intended time, request) waiting for a connection to
    /// their peer while other peers had idle ones.
    pending: Vec<VecDeque<(Nanos, u32)>>,
    /// Connections resting after `delay()`, earliest first.
    resting: BinaryHeap<Reverse<(Nanos, usize)>>,
    peers: Vec<Peer>,
    /// The static request batch, shared by every connection.
    request: Batch,
    script: Option<ThreadScript>,
    /// A script's `request()` builds every batch.
    dynamic: bool,
    /// The requests file's cursor: it picks every request.
    replay: Option<Cursor>,
    /// HEAD flags of the batch being sent (reused, never reallocated).
    batch: Vec<bool>,
    /// The first fatal error (a script's); it stops every worker.
    failure: Option<EngineError>,
    timeout: Nanos,
    buf: Box<[u8]>,
    stats: Recorder,
    plan: Plan,
    window: Window,
    /// Next time to look for timed-out requests and connections to reopen.
    next_sweep: Nanos,
    sweep_every: Nanos,
    /// The schedule has started (connections opened before it wait idle).
    started: bool,
    progress: Option<Arc<super::progress::Board>>,
    next_publish: Nanos,
}

impl Worker {
    /// Opens the poller and starts every connection.
    pub fn new(setup: WorkerSetup, stop: Arc<Stop>) -> Result<Worker, EngineError> {
        let thread = setup.index;
        Worker::build(setup, stop).map_err(|why| EngineError::Worker { thread, why })
    }

    fn build(setup: WorkerSetup, stop: Arc<Stop>) -> io::Result<Worker> {
        timer::set_fine_timer_slack();
        if let Some(cpu) = setup.cpu {
            pin_to_cpu(cpu)?;
        }
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        let timer = Timer::new()?;
        poll.registry()
            .register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)?;
        let capture = setup
            .script
            .as_ref()
            .is_some_and(ThreadScript::has_response);
        let dynamic = setup.script.as_ref().is_some_and(|s| !s.is_static());
        let hosts = setup.peers.len();
        let conns = (0..setup.connections)
            .map(|c| Conn::new(setup.max_head, capture, c % hosts))
            .collect();
        let sweep_every = (setup.timeout / 10).clamp(1_000_000, 50_000_000);
        let mut w = Worker {
            index: setup.index,
            poll,
            timer,
            waker,
            stop,
            conns,
            idle: vec![VecDeque::with_capacity(setup.connections.div_ceil(hosts)); hosts],
            idle_count: 0,
            pending: vec![VecDeque::new(); hosts],
            resting: BinaryHeap::with_capacity(setup.connections),
            peers: setup.peers,
            request: setup.request,
            script: setup.script,
            dynamic,
            replay: setup.replay,
            batch: Vec::with_capacity(16),
            failure: None,
            timeout: setup.timeout,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            stats: Recorder::new(setup.interval, setup.endpoints),
            plan: Plan::Closed,
            window: Window {
                measure_from: 0,
                end: u64::MAX,
            },
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
        self.waker.clone()
    }

    /// Runs the event loop until the window ends, the run is stopped or the
    /// script calls `thread:stop()`; hands back what was measured and the
    /// first fatal error, if any.
    pub fn run(
        mut self,
        plan: Plan,
        window: Window,
    ) -> io::Result<(ThreadStats, Option<EngineError>)> {
        if let Some(script) = self.script.as_mut() {
            script.activate();
        }
        self.stats.begin(window, matches!(plan, Plan::Paced(_)));
        self.plan = plan;
        self.window = window;
        self.started = true;
        // Every open connection takes its first request (or first delay).
        let idle: Vec<usize> = self.idle.iter_mut().flat_map(|q| q.drain(..)).collect();
        self.idle_count = 0;
        for i in idle {
            self.ready(i);
        }
        let stop_at = self.event_loop()?;
        if let Some(script) = self.script.as_mut() {
            script.deactivate();
        }
        let failure = self.failure.take();
        Ok((self.finish(stop_at), failure))
    }

    fn event_loop(&mut self) -> io::Result<Nanos> {
        let mut events = Events::with_capacity(1024);
        loop {
            let now = clock::now();
            if now >= self.window.end {
                return Ok(self.window.end);
            }
            if self.halted() {
                return Ok(now);
            }
            if now >= self.next_sweep {
                self.sweep(now);
            }
            self.wake_rested(now);
            self.dispatch();
            self.timer.arm(Some(self.next_deadline()))?;
            if let Err(e) = self.poll.poll(&mut events, None) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            for ev in events.iter() {
                match ev.token() {
                    TIMER => self.timer.clear(),
                    // Nothing is sent after this moment, so it ends this
                    // thread's window exactly.
                    WAKE if self.stop.is_stopped() => return Ok(clock::now().min(self.window.end)),
                    WAKE => {}
                    Token(c) => self.on_event(c, ev),
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
        self.stop.trigger();
    }

    /// Before the start: waits until every connection is open or has failed
    /// (or `until`), so that the schedule starts with connections ready.
    fn await_connections(&mut self, until: Nanos) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let now = clock::now();
            let pending = self
                .conns
                .iter()
                .any(|c| matches!(c.state, State::Connecting | State::Handshaking));
            if !pending || now >= until {
                return Ok(());
            }
            self.timer.arm(Some(until))?;
            match self.poll.poll(&mut events, None) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
                Ok(()) => {}
            }
            for ev in events.iter() {
                match ev.token() {
                    TIMER => self.timer.clear(),
                    WAKE => {}
                    Token(c) => self.on_event(c, ev),
                }
            }
        }
    }

    /// The earliest moment the loop has something to do without I/O.
    fn next_deadline(&self) -> Nanos {
        let mut at = self.window.end.min(self.next_sweep);
        if let Some(Reverse((until, _))) = self.resting.peek() {
            at = at.min(*until);
        }
        if let Plan::Paced(arrivals) = &self.plan {
            if self.idle_count > 0 {
                at = at.min(arrivals.peek());
            }
        }
        at
    }

    /// Sends every due request that has an idle connection to go on.
    fn dispatch(&mut self) {
        while self.idle_count > 0 && !self.halted() {
            let Plan::Paced(arrivals) = &mut self.plan else {
                return;
            };
            let due = arrivals.peek();
            if due >= self.window.end || due > clock::now() {
                return;
            }
            arrivals.advance();
            let request = self.replay.as_mut().map_or(0, |r| {
                let request = r.peek();
                r.advance();
                request
            });
            let host = self.host_of(request);
            let Some(i) = self.idle[host].pop_front() else {
                // Other peers have idle connections; this one's wait.
                self.pending[host].push_back((due, request));
                continue;
            };
            self.idle_count -= 1;
            // A connection that freed up only after the request fell due
            // means the request waited in the queue for it.
            if self.conns[i].idle_since > due {
                self.stats.queued(due);
            }
            self.send(i, due, request);
        }
    }

    /// The peer a request goes to.
    fn host_of(&self, request: u32) -> usize {
        self.replay
            .as_ref()
            .map_or(0, |r| r.set().get(request).host as usize)
    }

    fn on_event(&mut self, i: usize, ev: &Event) {
        let Some(conn) = self.conns.get(i) else {
            return;
        };
        match conn.state {
            State::Connecting => self.on_connected(i),
            State::Handshaking => self.on_handshake(i),
            State::Idle | State::Busy | State::Resting => {
                if ev.is_writable() {
                    self.on_writable(i);
                }
            }
            State::Down => return,
        }
        // The same edge may also carry bytes or the peer's close (even for
        // a connection that only just finished connecting), and an
        // edge-triggered poller reports it only once.
        let open = matches!(
            self.conns[i].state,
            State::Idle | State::Busy | State::Resting
        );
        let closing = ev.is_read_closed() || ev.is_error();
        if open && (ev.is_readable() || closing) {
            self.on_readable(i, closing);
        }
    }

    fn on_connected(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        let Some(t) = conn.transport.as_mut() else {
            return;
        };
        match t.finish_connect() {
            Ok(()) if t.handshaking() => conn.state = State::Handshaking,
            Ok(()) => self.ready(i),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => self.connect_failed(i),
        }
    }

    fn on_handshake(&mut self, i: usize) {
        let Some(t) = self.conns[i].transport.as_mut() else {
            return;
        };
        match t.read(&mut self.buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if !t.handshaking() {
                    self.ready(i);
                }
            }
            // Application data or EOF before the handshake finished.
            Ok(_) | Err(_) if t.handshaking() => self.connect_failed(i),
            Ok(_) | Err(_) => self.ready(i),
        }
    }

    /// The connection can take a request: after the script's `delay()`, if
    /// it has one, it becomes available.
    fn ready(&mut self, i: usize) {
        if self.started {
            if let Some(script) = self.script.as_mut().filter(|s| s.has_delay()) {
                match script.delay_ms() {
                    Err(e) => return self.fail(e.into()),
                    Ok(ms) if ms > 0.0 => {
                        let until = clock::now() + (ms * 1e6) as Nanos;
                        let conn = &mut self.conns[i];
                        conn.state = State::Resting;
                        conn.retry_at = until;
                        self.resting.push(Reverse((until, i)));
                        return;
                    }
                    Ok(_) => {}
                }
            }
        }
        self.available(i);
    }

    /// Idle in rate mode (the schedule picks it up); busy at once in the
    /// closed loop.
    fn available(&mut self, i: usize) {
        if self.halted() {
            return;
        }
        let now = clock::now();
        let conn = &mut self.conns[i];
        conn.state = State::Idle;
        conn.idle_since = now;
        let host = conn.host;
        match self.plan {
            Plan::Closed if self.started => {
                let request = self.replay.as_mut().map_or(0, |r| r.next_for_host(host));
                self.send(i, now, request);
            }
            Plan::Paced(_) if self.started && !self.pending[host].is_empty() => {
                let (due, request) = self.pending[host].pop_front().expect("checked non-empty");
                self.stats.queued(due);
                self.send(i, due, request);
            }
            _ => {
                self.idle[host].push_back(i);
                self.idle_count += 1;
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
            // A connection closed while resting leaves a stale entry.
            if self.conns[i].state == State::Resting && self.conns[i].retry_at == until {
                self.available(i);
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
        if let Err(e) = self.load_batch(i, request) {
            return self.fail(e);
        }
        let now = clock::now();
        let was_idle = self.conns[i].in_flight.is_empty();
        let endpoint = self.replay.as_ref().map(|r| r.set().get(request).endpoint);
        for k in 0..self.batch.len() {
            let slot = if k == 0 {
                intended
            } else {
                self.next_slot(now)
            };
            let req = InFlight {
                stamp: self.stats.sent(slot, now, endpoint),
                head: self.batch[k],
            };
            self.conns[i].in_flight.push_back(req);
        }
        let conn = &mut self.conns[i];
        if was_idle {
            let first_is_head = conn.in_flight.front().is_some_and(|r| r.head);
            conn.parser.start(first_is_head);
        }
        conn.state = State::Busy;
        conn.written = 0;
        self.on_writable(i);
    }

    /// Fills `batch` with the HEAD flags of the next batch, calling the
    /// script's `request()` into the connection's buffer when it has one.
    fn load_batch(&mut self, i: usize, request: u32) -> Result<(), EngineError> {
        self.batch.clear();
        if let Some(r) = &self.replay {
            self.batch.push(r.set().get(request).head);
            self.conns[i].current = request;
            return Ok(());
        }
        if !self.dynamic {
            self.batch.extend_from_slice(self.request.heads());
            return Ok(());
        }
        let script = self.script.as_mut().expect("a dynamic batch has a script");
        let conn = &mut self.conns[i];
        script.request(&mut conn.out)?;
        heads_into(&conn.out, &mut self.batch).map_err(|why| EngineError::BadRequest {
            thread: self.index,
            why,
        })
    }

    /// The intended time of the next request of a batch.
    fn next_slot(&mut self, now: Nanos) -> Nanos {
        match &mut self.plan {
            Plan::Paced(arrivals) => {
                let slot = arrivals.peek();
                arrivals.advance();
                slot
            }
            Plan::Closed => now,
        }
    }

    /// Continues writing the current batch.
    fn on_writable(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        let Some(t) = conn.transport.as_mut() else {
            return;
        };
        if conn.state != State::Busy {
            return;
        }
        let bytes: &[u8] = match &self.replay {
            Some(r) => r.set().bytes(conn.current),
            None if self.dynamic => &conn.out,
            None => self.request.bytes(),
        };
        while conn.written < bytes.len() {
            match t.write(&bytes[conn.written..]) {
                Ok(n) => conn.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.lose(i, Loss::Write),
            }
        }
        if t.flush().is_err() {
            self.lose(i, Loss::Write);
        }
    }

    /// Reads until the socket would block, completing responses as they end.
    /// `closing`: the event also reported the peer's close, which the
    /// edge-triggered poller will not report again.
    fn on_readable(&mut self, i: usize, closing: bool) {
        loop {
            let conn = &mut self.conns[i];
            let Some(t) = conn.transport.as_mut() else {
                return;
            };
            let n = match t.read(&mut self.buf) {
                Ok(0) => return self.on_eof(i),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.lose(i, Loss::Read),
            };
            if !self.on_bytes(i, n) {
                return;
            }
            // A short read drained the socket: more data raises a new edge,
            // so asking again would only return WouldBlock (a wasted call).
            // Not when the peer's close came with this edge: no new edge
            // would announce it, so read on until the end of the stream.
            let plain = self.conns[i]
                .transport
                .as_ref()
                .is_some_and(Transport::is_plain);
            if n < self.buf.len() && plain && !closing {
                return;
            }
        }
    }

    /// Feeds `n` bytes of the read buffer to the parser. Returns false when
    /// the connection was closed meanwhile.
    fn on_bytes(&mut self, i: usize, n: usize) -> bool {
        let mut at = 0;
        while at < n {
            let conn = &mut self.conns[i];
            if conn.in_flight.is_empty() {
                // Bytes nobody asked for: the stream cannot be trusted.
                self.stats.reconnected();
                self.close(i);
                return false;
            }
            match conn.parser.feed(&self.buf[at..n]) {
                Ok(Feed::Partial { consumed }) => at += consumed,
                Ok(Feed::Done { consumed, done }) => {
                    at += consumed;
                    if !self.complete(i, done) {
                        return false;
                    }
                }
                Err(_) => {
                    self.lose(i, Loss::Read);
                    return false;
                }
            }
        }
        true
    }

    /// The peer closed the stream.
    fn on_eof(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        match conn.parser.eof() {
            Ok(Some(done)) => {
                if self.complete(i, done) {
                    self.reopen(i);
                }
            }
            Ok(None) if conn.in_flight.is_empty() => self.reopen(i),
            Ok(None) | Err(_) => self.lose(i, Loss::Read),
        }
    }

    /// Records a finished response. Returns false when the connection was
    /// closed (or the run halted) as a result.
    fn complete(&mut self, i: usize, done: Done) -> bool {
        let now = clock::now();
        let conn = &mut self.conns[i];
        let req = conn
            .in_flight
            .pop_front()
            .expect("a response implies a request");
        conn.served += 1;
        let bytes = done.head_bytes as u64 + done.body_bytes;
        self.stats.completed(req.stamp, done.status, bytes, now);
        if let Some(script) = self.script.as_mut().filter(|s| s.has_response()) {
            let parser = &self.conns[i].parser;
            let result = script.response(done.status, &mut parser.headers(), parser.body());
            if let Err(e) = result {
                self.fail(e.into());
                return false;
            }
        }
        if !done.keep_alive {
            self.reopen(i);
            return false;
        }
        let conn = &mut self.conns[i];
        match conn.in_flight.front() {
            Some(next) => conn.parser.start(next.head),
            None => self.ready(i),
        }
        true
    }

    /// Counts the connection's in-flight requests as lost and recycles it.
    fn lose(&mut self, i: usize, why: Loss) {
        let now = clock::now();
        for req in &self.conns[i].in_flight {
            self.stats.lost(req.stamp, why, now);
        }
        self.close(i);
    }

    /// The server ended a connection that did its job: open a new one.
    /// Requests pipelined behind its last response (sent after a
    /// `Connection: close` was on its way, or cut off by the close) will get
    /// no answer on it: they are lost, as read errors.
    fn reopen(&mut self, i: usize) {
        self.stats.reconnected();
        self.lose(i, Loss::Read);
    }

    fn close(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        if let Some(mut t) = conn.transport.take() {
            let _ = self.poll.registry().deregister(t.socket());
        }
        if conn.state == State::Idle {
            let queue = &mut self.idle[conn.host];
            let before = queue.len();
            queue.retain(|&c| c != i);
            self.idle_count -= before - queue.len();
        }
        let now = clock::now();
        conn.close(now);
        let retry_at = conn.retry_at;
        if retry_at <= now {
            self.open(i, retry_at);
        } else {
            self.next_sweep = self.next_sweep.min(retry_at);
        }
    }

    /// Starts connection `i`; a failure to even start counts as a connect
    /// error and is retried later.
    fn open(&mut self, i: usize, now: Nanos) {
        let conn = &mut self.conns[i];
        let peer = &self.peers[conn.host];
        let registered = conn.open(peer.addr, peer.tls.as_ref(), now).and_then(|()| {
            let sock = conn.transport.as_mut().expect("just opened").socket();
            self.poll
                .registry()
                .register(sock, Token(i), Interest::READABLE | Interest::WRITABLE)
        });
        if registered.is_err() {
            self.stats.connect_failed(now);
            conn.transport = None;
            conn.close(now);
            self.next_sweep = self.next_sweep.min(conn.retry_at);
        }
    }

    /// Expires requests outstanding longer than the timeout and reopens
    /// connections whose back-off has passed.
    fn sweep(&mut self, now: Nanos) {
        self.next_sweep = now + self.sweep_every;
        if now >= self.next_publish {
            self.publish(now);
        }
        for i in 0..self.conns.len() {
            let conn = &self.conns[i];
            match conn.state {
                State::Busy => {
                    let oldest = conn.in_flight.front().map_or(now, |r| r.stamp.sent().min(now));
                    if now - oldest > self.timeout {
                        self.lose(i, Loss::Timeout);
                    }
                }
                State::Connecting | State::Handshaking => {
                    // A connect that hangs is a connect error, not a request error.
                    if now - conn.opened_at.min(now) > self.timeout {
                        self.connect_failed(i);
                    }
                }
                State::Down if conn.retry_at <= now => self.open(i, now),
                State::Down => self.next_sweep = self.next_sweep.min(conn.retry_at),
                State::Idle | State::Resting => {}
            }
        }
    }

    /// Shares this thread's running totals with the progress line.
    fn publish(&mut self, now: Nanos) {
        self.next_publish = now + super::progress::PUBLISH_EVERY;
        if let Some(board) = &self.progress {
            board.publish(self.index, self.stats.stats());
        }
    }

    /// Places every due request of the window in its bucket.
    fn finish(mut self, stop_at: Nanos) -> ThreadStats {
        for req in self.conns.iter().flat_map(|c| &c.in_flight) {
            self.stats.in_flight_at_end(req.stamp);
        }
        // Sent requests were counted as due when they went out; what is
        // still waiting on the schedule is due but never sent.
        if let Plan::Paced(arrivals) = &self.plan {
            for &(due, _) in self.pending.iter().flatten() {
                self.stats.never_sent(due);
            }
            let from = self.window.measure_from;
            self.stats
                .never_sent_many(arrivals.count_pending(from, stop_at));
        }
        let calls = self.script.as_ref().map_or(0, ThreadScript::calls);
        self.stats.finish(clock::thread_cpu(), calls)
    }
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
