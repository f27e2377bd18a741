//! The load-generating engine: worker threads, each with its own event
//! loop, connections and statistics, started together on one schedule and
//! merged when they finish.
//!
//! A run goes through three stages, each a type: [`prepare`] loads the
//! script, checks the servers and connects every worker ([`Prepared`]);
//! [`Prepared::start`] starts them all on one clock ([`Running`]);
//! [`Running::collect`] waits for them and merges what they measured into
//! an [`Outcome`]. The script's `done()` is left to whoever collects, after
//! the report.
//!
//! Layout: [`setup`] is what the engine is asked to run; [`prepare`] is the
//! first stage, and `preflight` its check of each server (reaching it and
//! explaining what the transport saw, with `trust` deciding which
//! certificates pass and `tls_words` saying why one did not; what the
//! server must say is its protocol's, in `http::preflight`); [`worker`]
//! runs one thread's loop, driving `pool` (the connections), `source`
//! (when and which requests go) and `hooks` (the script's); [`slots`] is
//! what a due request waits for; [`conn`] is a connection's life and its
//! protocol session; [`transport`] hides plain TCP vs TLS; [`timer`]
//! gives the loop microsecond wake-ups. The engine names no protocol: it
//! asks a session, or `http`, what it needs to know of one.

mod capacity;
pub mod conn;
mod hooks;
pub mod limits;
mod poller;
mod pool;
mod preflight;
mod prepare;
pub mod progress;
pub mod setup;
mod share;
pub mod slots;
mod source;
pub mod timer;
mod tls_words;
pub mod transport;
mod trust;
pub mod visits;
pub mod worker;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use mio::Waker;

use crate::clock::{self, nanos, Nanos};
use crate::http::RequestError;
use crate::http::Spoken;
use crate::replay::RequestSet;
use crate::schedule::{Load, Plan};
use crate::script::{MainScript, ScriptError};
use crate::stats::{
    interval, History, Interruption, IntervalStats, Phases, Row, RunStats, StopCause,
};

pub use prepare::{has_flow, prepare};
pub use setup::{Replay, Setup};
use worker::Window;

/// Ends a run early (Ctrl-C, SIGTERM, an error): wakes every worker.
#[derive(Default)]
pub struct Stop {
    stopped: AtomicBool,
    /// When and why it was first triggered.
    first: Mutex<Option<(Nanos, StopCause)>>,
    wakers: Mutex<Vec<Arc<Waker>>>,
    /// Workers have started: a stop from then on ends the run with a
    /// report. Before (loading scripts, the pre-flight's blocking checks)
    /// there is nothing to report.
    begun: AtomicBool,
    /// See [`Stop::closing`].
    closing: AtomicBool,
}

impl Stop {
    pub fn new() -> Arc<Stop> {
        Arc::new(Stop::default())
    }

    /// Asks every worker to stop now, for `cause`; the report covers what
    /// ran. Only the first trigger's time and cause are kept.
    pub fn trigger(&self, cause: StopCause) {
        self.first
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert((clock::now(), cause));
        self.stopped.store(true, Ordering::SeqCst);
        for w in self.wakers.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = w.wake();
        }
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Workers are about to start (see [`Stop::has_begun`]).
    pub fn begin(&self) {
        self.begun.store(true, Ordering::SeqCst);
    }

    pub fn has_begun(&self) -> bool {
        self.begun.load(Ordering::SeqCst)
    }

    /// The report is out and the script's `done()` runs (`true`) or has
    /// returned: meanwhile Ctrl-C and SIGTERM exit at once, as nothing is
    /// left to stop and a `done()` that never returns would otherwise
    /// keep the process.
    pub fn closing(&self, on: bool) {
        self.closing.store(on, Ordering::SeqCst);
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// When and why the run was stopped, if it was.
    pub fn stopped(&self) -> Option<(Nanos, StopCause)> {
        *self.first.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn register(&self, waker: Arc<Waker>) {
        self.wakers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(waker.clone());
        // A trigger that came before the registration must not be lost.
        if self.is_stopped() {
            let _ = waker.wake();
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot connect to {addr}: {why}; is the server running? check the host and port in the URL")]
    Connect { addr: SocketAddr, why: io::Error },
    #[error("the TLS certificate of {host} was rejected: {why}; {hint}")]
    Certificate {
        host: String,
        why: String,
        hint: String,
    },
    #[error(
        "the server at {addr} requires a client certificate ({why}); pass --cert FILE --key FILE"
    )]
    ClientCertRequired { addr: SocketAddr, why: String },
    #[error("the server at {addr} refused the client certificate of --cert {cert} ({why}); use a certificate issued by an authority the server trusts")]
    ClientCertRefused {
        addr: SocketAddr,
        cert: String,
        why: String,
    },
    #[error("TLS handshake with {addr} failed: {why}; does the server speak TLS on that port? (a plain server wants {plain})")]
    Tls {
        addr: SocketAddr,
        why: String,
        /// The URL's scheme without TLS: `http://` or `ws://`.
        plain: &'static str,
    },
    #[error("TLS handshake with {addr} failed: {why} (its error log says why); check its certificate and TLS settings for the name {host}")]
    TlsRefused {
        addr: SocketAddr,
        why: String,
        host: String,
    },
    #[error("the TLS handshake with {addr} timed out: no answer within {after:?} (--timeout); does the server speak TLS on that port? check the URL, or raise --timeout for a slow server")]
    TlsTimeout { addr: SocketAddr, after: Duration },
    #[error("the server at {addr} did not choose {offered} by ALPN{chose}; {advice}")]
    Alpn {
        addr: SocketAddr,
        offered: String,
        chose: String,
        advice: String,
    },
    /// The server does not serve the protocol asked for there: `why` in
    /// the protocol's own words, with the fix.
    #[error("{why}")]
    Unserved { addr: SocketAddr, why: String },
    /// A request the host's protocol cannot carry; `why` names it, and
    /// `flag` is the flag that chose the protocol.
    #[error("{why}; change the request (the script's request(), the requests file) or {fix}")]
    Unfit { why: String, fix: String },
    #[error("'{0}' is not a valid TLS server name")]
    ServerName(String),
    #[error("worker thread {thread} failed: {why}")]
    Worker { thread: usize, why: io::Error },
    #[error("worker thread {0} panicked")]
    Panic(usize),
    /// A worker still busy long after the run ended: in practice a script
    /// whose Lua never returns, which nothing can interrupt.
    /// `which` names them: "worker thread 1 was", "worker threads 0 and
    /// 1 were".
    #[error("{which} still busy {after:?} after the run ended, so their figures are lost and no report is made: a script never returned (a Lua loop that never ends, in flow(), request(), response() or a hook they call?); make every loop end")]
    Stuck { which: String, after: Duration },
    #[error("{flag} {connections} needs about {needed} open files but this process may open {limit}; raise the limit (ulimit -n {needed}, or LimitNOFILE= for a service) or lower {flag}")]
    OpenFiles {
        /// The flag that asked for them: `-c`, or `--max-connections`.
        flag: &'static str,
        connections: usize,
        needed: u64,
        limit: u64,
    },
    #[error("-c {connections} opens {to_one} connections to {addr}, but the system has only {available} local ports ({lo}-{hi}) for connections to one address; lower -c, or widen the range (sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\")")]
    LocalPorts {
        connections: usize,
        to_one: usize,
        addr: SocketAddr,
        available: u64,
        lo: u16,
        hi: u16,
    },
    #[error("{0}")]
    Script(#[from] ScriptError),
    /// A flow (`flow(visit)`) with what it cannot go with.
    #[error("{0}")]
    Flow(String),
    #[error("the request built from the URL, -H and a script's wrk.method, wrk.path, wrk.headers and wrk.body is refused: {0}; fix those fields")]
    BadStaticRequest(RequestError),
}

/// What a finished run hands back.
pub struct Outcome {
    pub stats: RunStats,
    /// The address the connections went to.
    pub addr: SocketAddr,
    /// Wall-clock time of the run's start (for logs and time series).
    pub started_at: SystemTime,
    /// What stopped the run early, if it was an error (a script's): the
    /// statistics still cover what ran.
    pub failure: Option<EngineError>,
    /// The protocols the hosts spoke.
    pub protocol: Spoken,
    /// With `--start-at`: how far behind its zero the run began.
    pub start: Option<LateStart>,
}

/// What a worker thread returns, or nothing when it never started.
type WorkerResult = io::Result<Option<worker::Finished>>;

/// A worker thread, and the channel that starts it (or, given `None`,
/// lets it go without running).
struct Spawned {
    handle: JoinHandle<WorkerResult>,
    start: mpsc::Sender<Option<(Plan, Window, Phases)>>,
}

/// A run ready to start (from [`prepare`]): every worker is connected and
/// waits. Dropping it lets the workers go without a request sent.
pub struct Prepared {
    /// The script's main state: whoever collects the run takes it and
    /// calls `done()` once the report is out.
    pub script: Option<MainScript>,
    /// Each host, as its pre-flight found it.
    hosts: Vec<Host>,
    workers: Vec<Spawned>,
    load: Load,
    warmup: Duration,
    duration: Duration,
    /// `--start-at`: the wall-clock instant of the schedule's zero.
    start_at: Option<SystemTime>,
    /// Length of the recorded intervals: rates are never computed over
    /// less (see [`RunStats::floor_rates_at`]).
    interval: Duration,
    ends: Ends,
}

/// What collecting a run needs besides its threads, passed from stage to
/// stage unchanged.
struct Ends {
    /// Closes once every worker thread has exited.
    done: mpsc::Receiver<()>,
    board: Option<Arc<progress::Board>>,
    stop: Arc<Stop>,
    addr: SocketAddr,
    /// The protocols the hosts speak.
    protocol: Spoken,
    /// The requests file, when statistics are kept per endpoint.
    endpoints: Option<Arc<RequestSet>>,
    /// A flow's step names, by index.
    steps: Option<Arc<crate::script::StepNames>>,
}

/// A host of a prepared run as its pre-flight found it: what the banner
/// can say of it before the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Host {
    /// Where its connections go.
    pub addr: SocketAddr,
    /// What it speaks: chosen by ALPN over TLS, asked for otherwise.
    pub protocol: setup::Protocol,
    /// The streams the server grants on a connection at once, when it
    /// said (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS, HTTP/3's initial
    /// stream credit).
    pub server_limit: Option<u32>,
    /// The most streams the run keeps on each connection to it, `-m`
    /// lowered to the server's limit; `None` where a connection carries
    /// one request at a time.
    pub streams: Option<u32>,
}

impl Host {
    fn of(peer: &share::Peer, max_streams: u32) -> Host {
        let streams = peer.protocol.multiplexes().then(|| {
            peer.server_limit
                .map_or(max_streams, |l| l.min(max_streams))
        });
        Host {
            addr: peer.addr,
            protocol: peer.protocol,
            server_limit: peer.server_limit,
            streams,
        }
    }
}

impl Prepared {
    /// Each host of the run (the URL's, or every one of a requests file,
    /// in its order), as its pre-flight found it: for a banner that says
    /// "up to 128 streams" when the server capped `-m 500` at 128.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The schedule counts visits (the script defines `flow(visit)`),
    /// not requests.
    pub fn runs_visits(&self) -> bool {
        self.ends.steps.is_some()
    }

    /// Starts every worker on one clock. The run's time zero is now, or
    /// the `--start-at` instant: waited for when it is ahead (a stop cuts
    /// the wait short); when it has passed, the run keeps that zero and
    /// the requests due before now are passed over, to be counted as
    /// never sent, so a late instance still sends its part of one
    /// schedule and its ledger shows what it missed.
    pub fn start(self) -> Running {
        let (t0, started_at) = match self.start_at {
            None => (clock::now(), SystemTime::now()),
            Some(at) => (wait_for(at, &self.ends.stop), at),
        };
        let begun = clock::now();
        let window = Window {
            measure_from: t0 + nanos(self.warmup),
            end: t0 + nanos(self.duration),
        };
        if let Some(board) = &self.ends.board {
            board.start(window.measure_from, window.end);
        }
        let threads = self.workers.len();
        let phases = self
            .load
            .profile()
            .map_or_else(Phases::default, |p| Phases::new(t0, p.starts()));
        let mut handles = Vec::with_capacity(threads);
        // Requests due a moment before the start are sent late, as any
        // late request is (their send lag shows it); older ones are missed.
        let missed_until = begun.saturating_sub(nanos(LATE_GRACE)).max(t0);
        for (j, w) in self.workers.into_iter().enumerate() {
            let mut plan = self.load.plan(t0, j, threads);
            if missed_until > t0 {
                plan.skip_until(missed_until);
            }
            let _ = w.start.send(Some((plan, window, phases.clone())));
            handles.push(w.handle);
        }
        let measured = self.duration.saturating_sub(self.warmup);
        let start = self.start_at.map(|_| LateStart {
            late: Duration::from_nanos(begun.saturating_sub(t0)),
            missed: self.load.intended_in(0, missed_until - t0),
        });
        Running {
            handles,
            t0,
            started_at,
            start,
            window,
            rate_floor: self.interval.min(measured),
            interval: self.interval,
            ends: self.ends,
        }
    }
}

/// How late after `--start-at` a run may begin and still send every
/// request of its schedule: a scheduling hiccup, not a missed start.
pub const LATE_GRACE: Duration = Duration::from_millis(10);

/// How long before `--start-at` the connections are opened: enough to
/// connect thousands, not so long that a server closes them as idle.
pub const CONNECT_AHEAD: Duration = Duration::from_secs(10);

/// The schedule's zero on the monotonic clock for the wall-clock instant
/// `at`, once it has come (or at once, when it has passed or the run is
/// stopped meanwhile).
pub fn wait_for(at: SystemTime, stop: &Stop) -> Nanos {
    let (wall, now) = (SystemTime::now(), clock::now());
    let t0 = match at.duration_since(wall) {
        Ok(ahead) => now.saturating_add(nanos(ahead)),
        Err(behind) => now.saturating_sub(nanos(behind.duration())),
    };
    // Short sleeps, so that Ctrl-C is not kept waiting.
    const NAP: Duration = Duration::from_millis(50);
    loop {
        let now = clock::now();
        if now >= t0 || stop.is_stopped() {
            return t0;
        }
        std::thread::sleep(Duration::from_nanos(t0 - now).min(NAP));
    }
}

/// How a run with `--start-at` began, against its zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LateStart {
    /// From the zero to the moment the workers were started: the sleep's
    /// overshoot when on time, more when the instance came late.
    pub late: Duration,
    /// This instance's requests due more than [`LATE_GRACE`] before that
    /// moment: passed over, and counted as never sent where they fall in
    /// the measured window.
    pub missed: u64,
}

/// A run under way (from [`Prepared::start`]).
pub struct Running {
    handles: Vec<JoinHandle<WorkerResult>>,
    t0: Nanos,
    started_at: SystemTime,
    start: Option<LateStart>,
    window: Window,
    rate_floor: Duration,
    /// Length of the recorded intervals.
    interval: Duration,
    ends: Ends,
}

/// What the main thread is told while it waits for the workers.
pub trait Watch {
    /// Whether [`Watch::tick`] is wanted.
    fn ticks(&self) -> bool;
    /// About once a second: the totals so far and the time since the start.
    fn tick(&mut self, totals: progress::Totals, at: Duration);
    /// The interval length of per-thread rows, if they are wanted.
    fn rows_every(&self) -> Option<Duration>;
    /// Rows of intervals that have closed, by interval then thread, each
    /// once: a few times a second during the run, and the rest (the last
    /// interval, cut short, included) as it ends.
    fn rows(&mut self, rows: &[Row]);
    /// Whether whole intervals are wanted as they close.
    fn intervals_wanted(&self) -> bool {
        false
    }
    /// A flow's step names, by index as the intervals' endpoints have
    /// them: a list that grows as visits take new steps. Before the
    /// window starts.
    fn steps(&mut self, _names: &Arc<crate::script::StepNames>) {}
    /// The measured window starts at `at` (wall clock); before any
    /// interval.
    fn window_starts(&mut self, _at: SystemTime) {}
    /// Intervals of the statistics (`--interval`), merged over the
    /// threads, in order and each once: as they close during the run, and
    /// the rest (the last, cut short, included) as it ends.
    fn intervals(&mut self, _intervals: &[IntervalStats]) {}
}

impl Running {
    /// Waits for every worker to finish (telling `watch` how it goes
    /// meanwhile, when the run was prepared for one), joins them and merges
    /// what they measured.
    pub fn collect(self, mut watch: Option<&mut dyn Watch>) -> Result<Outcome, EngineError> {
        let ends = self.ends;
        // The intervals are taken from the workers as they close, so that
        // neither they nor this thread hold a long run's every interval.
        let mut history = History::new(self.interval);
        if let (Some(watch), Some(board)) = (watch.as_deref_mut(), ends.board.as_ref()) {
            let warmup = self.window.measure_from.saturating_sub(self.t0);
            if let Some(names) = &ends.steps {
                watch.steps(names);
            }
            watch.window_starts(self.started_at + Duration::from_nanos(warmup));
            follow(watch, board, &ends, self.window.end, self.t0, &mut history);
        }
        let busy = wait_for_workers(&self.handles, &ends.done, &ends.stop, self.window.end);
        if !busy.is_empty() {
            return Err(EngineError::Stuck {
                which: busy_words(&busy),
                after: END_GRACE,
            });
        }
        let mut threads = Vec::with_capacity(self.handles.len());
        // The worker index of each of `threads`.
        let mut indices = Vec::with_capacity(self.handles.len());
        let mut failed = None;
        let mut failure = None;
        let mut last_end = None::<Nanos>;
        for (j, h) in self.handles.into_iter().enumerate() {
            match h.join() {
                Ok(Ok(Some(done))) => {
                    threads.push(done.stats);
                    indices.push(j);
                    failure = failure.or(done.failure);
                    last_end = Some(last_end.map_or(done.ended, |e| e.max(done.ended)));
                }
                Ok(Ok(None)) => {}
                Ok(Err(why)) => failed = failed.or(Some(EngineError::Worker { thread: j, why })),
                Err(_) => failed = failed.or(Some(EngineError::Panic(j))),
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        let window = self.window;
        // A stop ends the run when it comes; without one, the run ends when
        // its last thread does: at the window's end, or earlier when every
        // script called `thread:stop()`.
        let (stopped_at, cause) = match ends.stop.stopped() {
            Some((at, cause)) => (at.min(window.end), cause),
            None => (last_end.unwrap_or(window.end), StopCause::ScriptStop),
        };
        let measured = Duration::from_nanos(stopped_at.saturating_sub(window.measure_from));
        // The intervals not taken yet: those the workers handed over as
        // they ended, the window's last (cut short, with the responses read
        // as the run stopped), or all of them when no one watched the run.
        if let Some(board) = ends.board.as_ref() {
            board.take_intervals(&mut |iv| closed(iv, &mut history, watch.as_deref_mut()));
            for (&j, t) in indices.iter().zip(threads.iter_mut()) {
                t.intervals.give_back(board.take_parts(j));
            }
        }
        if let (Some(watch), Some(board)) = (watch.as_deref_mut(), ends.board.as_ref()) {
            let rest = board.finish(&threads, measured);
            if !rest.is_empty() {
                watch.rows(&rest);
            }
        }
        let taken = ends.board.as_ref().map_or(0, |b| b.intervals_taken());
        let recorders: Vec<_> = threads.iter().map(|t| &t.intervals).collect();
        for iv in interval::merged_from(&recorders, measured, taken) {
            closed(&iv, &mut history, watch.as_deref_mut());
        }
        drop(recorders);
        let mut stats = RunStats::merge(threads, measured);
        stats.history = history;
        stats.floor_rates_at(self.rate_floor);
        if stopped_at < window.end {
            stats.interruption = Some(Interruption {
                cause,
                after: Duration::from_nanos(stopped_at.saturating_sub(self.t0)),
            });
        }
        if let Some(set) = &ends.endpoints {
            stats.name_endpoints(set.endpoints());
        }
        if let Some(steps) = &ends.steps {
            stats.name_endpoints(&steps.all());
        }
        Ok(Outcome {
            stats,
            addr: ends.addr,
            started_at: self.started_at,
            failure,
            protocol: ends.protocol,
            start: self.start,
        })
    }
}

/// How long after the run's end (the window's, or a stop's) a worker may
/// still be busy: ending takes it well under a second, even with every
/// connection to close; longer means it is stuck in its script.
const END_GRACE: Duration = Duration::from_secs(5);

/// When waiting for the workers stops: [`END_GRACE`] after the run's end,
/// which a stop brings forward.
fn give_up_at(stop: &Stop, end: Nanos) -> Nanos {
    let ended = stop.stopped().map_or(end, |(at, _)| at.min(end));
    ended + nanos(END_GRACE)
}

/// Waits, bounded, for every worker to end (`done` closes once they all
/// have); the workers still busy when the wait gives up are returned, and
/// left to the process's exit.
fn wait_for_workers(
    handles: &[JoinHandle<WorkerResult>],
    done: &mpsc::Receiver<()>,
    stop: &Stop,
    end: Nanos,
) -> Vec<usize> {
    loop {
        let left = give_up_at(stop, end).saturating_sub(clock::now());
        match done.recv_timeout(Duration::from_nanos(left)) {
            Err(mpsc::RecvTimeoutError::Disconnected) => return Vec::new(),
            Ok(()) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let busy = (0..handles.len()).filter(|&j| !handles[j].is_finished());
                return busy.collect();
            }
        }
    }
}

/// "worker thread 1 was", "worker threads 0, 2 and 3 were".
fn busy_words(busy: &[usize]) -> String {
    let list: Vec<String> = busy.iter().map(usize::to_string).collect();
    match list.as_slice() {
        [one] => format!("worker thread {one} was"),
        [first @ .., last] => format!("worker threads {} and {last} were", first.join(", ")),
        [] => "no worker thread was".to_string(),
    }
}

/// How often the main thread looks at the board when rows or intervals
/// are wanted: as often as the workers publish.
const ROWS_POLL: Duration = Duration::from_nanos(progress::PUBLISH_EVERY);
const TICK_EVERY: Duration = Duration::from_secs(1);

/// An interval every thread has closed, merged: kept for the reports and
/// told to `watch` when it wants intervals.
fn closed<'w>(iv: &IntervalStats, history: &mut History, watch: Option<&mut (dyn Watch + 'w)>) {
    history.push(iv);
    if let Some(watch) = watch.filter(|w| w.intervals_wanted()) {
        watch.intervals(std::slice::from_ref(iv));
    }
}

/// Tells `watch` what the workers publish until they have all exited.
fn follow(
    watch: &mut dyn Watch,
    board: &progress::Board,
    ends: &Ends,
    end: Nanos,
    t0: Nanos,
    history: &mut History,
) {
    let poll = if watch.rows_every().is_some() || watch.intervals_wanted() {
        ROWS_POLL
    } else {
        TICK_EVERY
    };
    let mut next_tick = t0 + nanos(TICK_EVERY);
    while let Err(mpsc::RecvTimeoutError::Timeout) = ends.done.recv_timeout(poll) {
        if clock::now() >= give_up_at(&ends.stop, end) {
            return;
        }
        let rows = board.take_rows();
        if !rows.is_empty() {
            watch.rows(&rows);
        }
        board.take_intervals(&mut |iv| closed(iv, history, Some(&mut *watch)));
        let now = clock::now();
        if watch.ticks() && now >= next_tick {
            watch.tick(board.totals(), Duration::from_nanos(now - t0));
            // On the second, as far as the polls allow.
            next_tick = (next_tick + nanos(TICK_EVERY)).max(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use setup::Protocol;

    #[test]
    fn busy_threads_are_named_in_a_sentence() {
        assert_eq!(busy_words(&[1]), "worker thread 1 was");
        assert_eq!(busy_words(&[0, 1]), "worker threads 0 and 1 were");
        assert_eq!(busy_words(&[0, 2, 3]), "worker threads 0, 2 and 3 were");
    }

    fn peer(protocol: Protocol, server_limit: Option<u32>) -> share::Peer {
        share::Peer {
            addr: "127.0.0.1:8080".parse().unwrap(),
            tls: None,
            protocol,
            authority: "127.0.0.1:8080".into(),
            server_limit,
            websocket: None,
        }
    }

    /// The banner's streams: -m, lowered to the server's limit, over the
    /// protocols that multiplex.
    #[test]
    fn a_hosts_streams_are_m_within_the_servers_limit() {
        let streams = |p, limit, m| Host::of(&peer(p, limit), m).streams;
        assert_eq!(streams(Protocol::Http2, Some(128), 500), Some(128));
        assert_eq!(streams(Protocol::Http3, Some(5), 100), Some(5));
        assert_eq!(streams(Protocol::Http2, Some(128), 100), Some(100));
        assert_eq!(streams(Protocol::Http2, None, 500), Some(500));
        assert_eq!(streams(Protocol::Http1, None, 100), None);
    }
}
