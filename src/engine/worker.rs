//! One worker thread: its poller, timer, connections and statistics.
//!
//! The loop is the same in both modes; the [`Plan`] decides when requests
//! are due. In rate mode a due request goes out on an idle connection, or
//! waits (implicitly: it is simply the next intended time not yet taken)
//! until one frees up, its latency counting from its intended time all the
//! while. Nothing here allocates per request, locks, or touches memory
//! shared with other threads; the shared stop flag is read only when the
//! main thread wakes this one.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use mio::event::Event;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};

use crate::clock::{self, to_us, Nanos};
use crate::http::response::{Done, Feed};
use crate::schedule::Plan;
use crate::stats::ThreadStats;

use super::conn::{Conn, InFlight, State};
use super::timer::{self, Timer};
use super::transport::TlsSetup;
use super::Stop;

const TIMER: Token = Token(usize::MAX - 1);
const WAKE: Token = Token(usize::MAX - 2);
/// Size of the one read buffer all of a worker's connections share.
const READ_BUF: usize = 64 * 1024;

/// Everything a worker needs, decided before it starts.
pub struct WorkerSetup {
    pub index: usize,
    pub connections: usize,
    pub addr: SocketAddr,
    pub tls: Option<TlsSetup>,
    /// The request bytes, built once.
    pub request: Box<[u8]>,
    pub head_request: bool,
    pub timeout: Nanos,
    pub max_head: usize,
    pub cpu: Option<usize>,
    /// Longest time to wait for the connections to open before the start.
    pub connect_wait: Nanos,
}

/// How a worker's run is bounded in time, known once all threads are ready.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// First intended time that is measured (start + warm-up).
    pub measure_from: Nanos,
    /// End of the run.
    pub end: Nanos,
}

/// Why a connection's requests were lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loss {
    Read,
    Write,
    Timeout,
}

pub struct Worker {
    poll: Poll,
    timer: Timer,
    waker: Arc<Waker>,
    conns: Vec<Conn>,
    /// Idle connections, oldest first, so that every connection is used.
    idle: VecDeque<usize>,
    addr: SocketAddr,
    tls: Option<TlsSetup>,
    request: Box<[u8]>,
    head_request: bool,
    timeout: Nanos,
    buf: Box<[u8]>,
    stats: ThreadStats,
    plan: Plan,
    window: Window,
    /// Next time to look for timed-out requests and connections to reopen.
    next_sweep: Nanos,
    sweep_every: Nanos,
    /// Requests sent in the measured window by the closed loop.
    closed_sent: u64,
    /// The schedule has started (connections opened before it wait idle).
    started: bool,
}

impl Worker {
    /// Opens the poller and starts every connection.
    pub fn new(setup: WorkerSetup) -> io::Result<Worker> {
        timer::set_fine_timer_slack();
        if let Some(cpu) = setup.cpu {
            pin_to_cpu(cpu)?;
        }
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        let timer = Timer::new()?;
        poll.registry()
            .register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)?;
        let conns = (0..setup.connections)
            .map(|_| Conn::new(setup.max_head, false))
            .collect();
        let sweep_every = (setup.timeout / 10).clamp(1_000_000, 50_000_000);
        let mut w = Worker {
            poll,
            timer,
            waker,
            conns,
            idle: VecDeque::with_capacity(setup.connections),
            addr: setup.addr,
            tls: setup.tls,
            request: setup.request,
            head_request: setup.head_request,
            timeout: setup.timeout,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            stats: ThreadStats::default(),
            plan: Plan::Closed,
            window: Window {
                measure_from: 0,
                end: u64::MAX,
            },
            next_sweep: 0,
            sweep_every,
            closed_sent: 0,
            started: false,
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

    /// Runs the event loop until the window ends or `stop` is triggered, then
    /// hands back what was measured.
    pub fn run(mut self, plan: Plan, window: Window, stop: &Stop) -> io::Result<ThreadStats> {
        self.plan = plan;
        self.window = window;
        self.started = true;
        if let Plan::Closed = self.plan {
            let now = clock::now();
            while let Some(i) = self.idle.pop_front() {
                self.send(i, now);
            }
        }
        let stop_at = self.event_loop(stop)?;
        Ok(self.finish(stop_at))
    }

    fn event_loop(&mut self, stop: &Stop) -> io::Result<Nanos> {
        let mut events = Events::with_capacity(1024);
        loop {
            let now = clock::now();
            if now >= self.window.end {
                return Ok(self.window.end);
            }
            if now >= self.next_sweep {
                self.sweep(now);
            }
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
                    WAKE if stop.is_stopped() => return Ok(clock::now().min(self.window.end)),
                    WAKE => {}
                    Token(c) => self.on_event(c, ev),
                }
            }
        }
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
        if let Plan::Paced(arrivals) = &self.plan {
            if !self.idle.is_empty() {
                at = at.min(arrivals.peek());
            }
        }
        at
    }

    /// Sends every due request that has an idle connection to go on.
    fn dispatch(&mut self) {
        while !self.idle.is_empty() {
            let Plan::Paced(arrivals) = &mut self.plan else {
                return;
            };
            let due = arrivals.peek();
            if due >= self.window.end || due > clock::now() {
                return;
            }
            arrivals.advance();
            let i = self.idle.pop_front().expect("checked non-empty");
            // A connection that freed up only after the request fell due
            // means the request waited in the queue for it.
            if self.conns[i].idle_since > due && due >= self.window.measure_from {
                self.stats.counters.queued += 1;
            }
            self.send(i, due);
        }
    }

    fn on_event(&mut self, i: usize, ev: &Event) {
        let Some(conn) = self.conns.get(i) else {
            return;
        };
        match conn.state {
            State::Connecting => self.on_connected(i),
            State::Handshaking => self.on_handshake(i),
            State::Idle | State::Busy => {
                if ev.is_writable() {
                    self.on_writable(i);
                }
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    self.on_readable(i);
                }
            }
            State::Down => {}
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

    /// The connection can take a request.
    fn ready(&mut self, i: usize) {
        self.conns[i].state = State::Idle;
        self.conns[i].idle_since = clock::now();
        match self.plan {
            Plan::Closed if self.started => self.send(i, clock::now()),
            _ => self.idle.push_back(i),
        }
    }

    fn connect_failed(&mut self, i: usize) {
        if clock::now() >= self.window.measure_from {
            self.stats.counters.errors.connect += 1;
        }
        self.close(i);
    }

    /// Writes a request intended at `intended` on connection `i`.
    fn send(&mut self, i: usize, intended: Nanos) {
        let now = clock::now();
        let measured = intended >= self.window.measure_from;
        if measured {
            if let Plan::Paced(_) = self.plan {
                let c = &mut self.stats.counters;
                ThreadStats::record(
                    &mut self.stats.send_lag,
                    &mut c.saturated,
                    to_us(now - intended),
                );
            } else {
                self.closed_sent += 1;
            }
        }
        let conn = &mut self.conns[i];
        if conn.in_flight.is_empty() {
            conn.parser.start(self.head_request);
        }
        conn.in_flight.push_back(InFlight {
            intended,
            sent: now,
            measured,
            head: self.head_request,
        });
        conn.state = State::Busy;
        conn.written = 0;
        self.on_writable(i);
    }

    /// Continues writing the current request.
    fn on_writable(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        let Some(t) = conn.transport.as_mut() else {
            return;
        };
        if conn.state != State::Busy {
            return;
        }
        while conn.written < self.request.len() {
            match t.write(&self.request[conn.written..]) {
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
    fn on_readable(&mut self, i: usize) {
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
                self.stats.counters.reconnects += 1;
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
    /// closed as a result.
    fn complete(&mut self, i: usize, done: Done) -> bool {
        let now = clock::now();
        let conn = &mut self.conns[i];
        let req = conn
            .in_flight
            .pop_front()
            .expect("a response implies a request");
        conn.served += 1;
        if req.measured {
            self.record(&req, &done, now);
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

    fn record(&mut self, req: &InFlight, done: &Done, now: Nanos) {
        let s = &mut self.stats;
        let c = &mut s.counters;
        ThreadStats::record(&mut s.latency, &mut c.saturated, to_us(now - req.intended));
        ThreadStats::record(&mut s.uncorrected, &mut c.saturated, to_us(now - req.sent));
        c.completed += 1;
        c.bytes += done.head_bytes as u64 + done.body_bytes;
        if done.status > 399 {
            c.errors.status += 1;
        }
        s.count_completion(std::time::Duration::from_nanos(
            now - self.window.measure_from,
        ));
    }

    /// Counts the connection's in-flight requests as lost and recycles it.
    fn lose(&mut self, i: usize, why: Loss) {
        let lost = self.conns[i].measured_in_flight();
        let e = &mut self.stats.counters.errors;
        match why {
            Loss::Read => e.read += lost,
            Loss::Write => e.write += lost,
            Loss::Timeout => e.timeout += lost,
        }
        self.close(i);
    }

    /// The server ended a connection that did its job: open a new one.
    fn reopen(&mut self, i: usize) {
        self.stats.counters.reconnects += 1;
        self.close(i);
    }

    fn close(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        if let Some(mut t) = conn.transport.take() {
            let _ = self.poll.registry().deregister(t.socket());
        }
        if conn.state == State::Idle {
            self.idle.retain(|&c| c != i);
        }
        conn.close(clock::now());
        let retry_at = conn.retry_at;
        if retry_at <= clock::now() {
            self.open(i, retry_at);
        } else {
            self.next_sweep = self.next_sweep.min(retry_at);
        }
    }

    /// Starts connection `i`; a failure to even start counts as a connect
    /// error and is retried later.
    fn open(&mut self, i: usize, now: Nanos) {
        let conn = &mut self.conns[i];
        let registered = conn.open(self.addr, self.tls.as_ref(), now).and_then(|()| {
            let sock = conn.transport.as_mut().expect("just opened").socket();
            self.poll
                .registry()
                .register(sock, Token(i), Interest::READABLE | Interest::WRITABLE)
        });
        if registered.is_err() {
            self.stats.counters.errors.connect += u64::from(now >= self.window.measure_from);
            conn.transport = None;
            conn.close(now);
            self.next_sweep = self.next_sweep.min(conn.retry_at);
        }
    }

    /// Expires requests outstanding longer than the timeout and reopens
    /// connections whose back-off has passed.
    fn sweep(&mut self, now: Nanos) {
        self.next_sweep = now + self.sweep_every;
        for i in 0..self.conns.len() {
            let conn = &self.conns[i];
            match conn.state {
                State::Busy => {
                    if conn
                        .in_flight
                        .front()
                        .is_some_and(|r| now - r.sent.min(now) > self.timeout)
                    {
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
                State::Idle => {}
            }
        }
    }

    /// Places every due request of the window in its bucket.
    fn finish(mut self, stop_at: Nanos) -> ThreadStats {
        let from = self.window.measure_from;
        let in_flight: u64 = self.conns.iter().map(Conn::measured_in_flight).sum();
        let c = &mut self.stats.counters;
        c.in_flight = in_flight;
        match &self.plan {
            Plan::Paced(arrivals) => {
                c.due = arrivals.count_in(from, stop_at);
                c.never_sent = arrivals.count_pending(from, stop_at);
            }
            Plan::Closed => c.due = self.closed_sent,
        }
        self.stats.cpu = clock::thread_cpu();
        self.stats
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
