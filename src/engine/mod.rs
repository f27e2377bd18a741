//! The load-generating engine: worker threads, each with its own event
//! loop, connections and statistics, started together on one schedule and
//! merged when they finish.
//!
//! Layout: [`worker`] runs one thread's loop and handlers; [`conn`] holds a
//! connection's state; [`transport`] hides plain TCP vs TLS; [`timer`] gives
//! the loop microsecond wake-ups.

pub mod conn;
pub mod limits;
pub mod progress;
pub mod timer;
pub mod transport;
pub mod worker;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use mio::Waker;
use rustls::pki_types::ServerName;

use crate::cli::config::Config;
use crate::target::{Scheme, Target};
use crate::clock::{self, nanos, Nanos};
use crate::http::request::{split_requests, RequestError};
use crate::replay::Cursor;
use crate::schedule::Plan;
use crate::script::{MainScript, ScriptError, ScriptTarget, ThreadScript};
use crate::stats::{RunStats, ThreadStats};

use transport::{client_config, is_certificate_error, TlsSetup};
use worker::{Peer, Window, Worker, WorkerSetup};

/// Ends a run early (Ctrl-C, a script's request): wakes every worker.
#[derive(Default)]
pub struct Stop {
    stopped: AtomicBool,
    at: AtomicU64,
    wakers: Mutex<Vec<Arc<Waker>>>,
}

impl Stop {
    pub fn new() -> Arc<Stop> {
        Arc::new(Stop::default())
    }

    /// Asks every worker to stop now; the report covers what ran.
    pub fn trigger(&self) {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            self.at.store(clock::now(), Ordering::SeqCst);
        }
        for w in self.wakers.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = w.wake();
        }
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    fn stopped_at(&self) -> Option<Nanos> {
        self.is_stopped().then(|| self.at.load(Ordering::SeqCst))
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
    #[error("the TLS certificate of {host} was rejected: {why}; pass -k/--insecure to skip verification")]
    Certificate { host: String, why: io::Error },
    #[error("TLS handshake with {addr} failed: {why}; does the server speak TLS on that port? (a plain HTTP server wants http://)")]
    Tls { addr: SocketAddr, why: io::Error },
    #[error("'{0}' is not a valid TLS server name")]
    ServerName(String),
    #[error("worker thread {thread} failed: {why}")]
    Worker { thread: usize, why: io::Error },
    #[error("worker thread {0} panicked")]
    Panic(usize),
    #[error("-c {connections} needs about {needed} open files but this process may open {limit}; raise the limit (ulimit -n {needed}, or LimitNOFILE= for a service) or lower -c")]
    OpenFiles {
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
    #[error("request() on thread {thread} returned bytes that are not whole HTTP requests: {why}")]
    BadRequest { thread: usize, why: RequestError },
    #[error("the request built from the URL, -H and a script's wrk.method, wrk.path, wrk.headers and wrk.body is refused: {0}; fix those fields")]
    BadStaticRequest(RequestError),
}

/// What a finished run hands back.
pub struct Outcome {
    pub stats: RunStats,
    /// The address the connections went to.
    pub addr: SocketAddr,
    /// Wall-clock time of the run's start (for logs and time series).
    pub started_at: std::time::SystemTime,
    /// The run was stopped before its duration was up.
    pub interrupted: bool,
    /// The script's main state, for `done()` once the report is out.
    pub script: Option<MainScript>,
    /// What stopped the run early, if it was an error (a script's): the
    /// statistics still cover what ran.
    pub failure: Option<EngineError>,
}

/// Runs the load test described by `cfg`.
pub fn run(cfg: &Config, stop: &Arc<Stop>) -> Result<Outcome, EngineError> {
    run_with_progress(cfg, stop, None)
}

/// Called about once a second while the run is on, with the totals so far
/// and the time since the start.
pub type OnTick<'a> = &'a mut dyn FnMut(progress::Totals, Duration);

/// [`run`], calling `on_tick` while it waits for the workers.
pub fn run_with_progress(
    cfg: &Config,
    stop: &Arc<Stop>,
    mut on_tick: Option<OnTick>,
) -> Result<Outcome, EngineError> {
    let board = on_tick
        .is_some()
        .then(|| Arc::new(progress::Board::new(cfg.threads)));
    // Each worker holds a sender; when all have exited the channel closes.
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let connections = cfg.connections();
    if let Ok(Some((needed, limit))) = limits::open_files_short(connections, cfg.threads) {
        return Err(EngineError::OpenFiles {
            connections,
            needed,
            limit,
        });
    }
    // Scripts first: a broken script is reported without touching the network.
    let first = cfg.target.addrs[0];
    let (main_script, scripts) = load_scripts(cfg, first)?;
    let peers = peers(cfg)?;
    check_local_ports(cfg, &peers)?;
    let addr = peers[0].addr;
    let default_request: Box<[u8]> = crate::http::request::format(
        "GET",
        &cfg.target.path,
        &cfg.headers,
        None,
        &cfg.target.authority,
    )
    .into_boxed_slice();
    let default_heads = static_heads(&default_request)?;
    let endpoints = cfg
        .replay
        .as_ref()
        .filter(|r| r.by_endpoint)
        .map_or(0, |r| r.set.endpoints().len());

    let (ready_tx, ready_rx) = mpsc::channel();
    let mut starts = Vec::with_capacity(cfg.threads);
    let mut handles = Vec::with_capacity(cfg.threads);
    let mut scripts = scripts.into_iter();
    for j in 0..cfg.threads {
        let mut script = scripts.next();
        let (request, static_heads) = match script.as_mut() {
            // A script without request() still shapes the one static request.
            Some(s) if s.is_static() => {
                let bytes = s.static_request()?.into_boxed_slice();
                let heads = static_heads(&bytes)?;
                (bytes, heads)
            }
            Some(_) => (Box::default(), Box::default()),
            None => (default_request.clone(), default_heads.clone()),
        };
        let mut peers = peers.clone();
        // setup() may have moved this thread to another address.
        if let Some(moved) = script.as_ref().map(ThreadScript::addr) {
            if moved != first {
                peers[0].addr = moved;
            }
        }
        let setup = WorkerSetup {
            index: j,
            connections: cfg.conns_per_thread[j],
            peers,
            request,
            static_heads,
            script,
            replay: cfg
                .replay
                .as_ref()
                .map(|r| Cursor::new(r.set.clone(), r.order, r.seed, j, cfg.threads)),
            endpoints,
            timeout: nanos(cfg.timeout),
            max_head: cfg.max_head,
            cpu: cfg.affinity.as_ref().map(|cpus| cpus[j % cpus.len()]),
            connect_wait: nanos(cfg.timeout),
            interval: cfg.outputs.interval,
            progress: board.clone(),
        };
        let (start_tx, start_rx) = mpsc::channel::<Option<(Plan, Window)>>();
        starts.push(start_tx);
        let ready = ready_tx.clone();
        let stop = stop.clone();
        let done = done_tx.clone();
        let handle = std::thread::Builder::new()
            .name(format!("metron-worker-{j}"))
            .spawn(
                move || -> io::Result<Option<(ThreadStats, Option<EngineError>)>> {
                    let worker = match Worker::new(setup, stop.clone()) {
                        Ok(w) => w,
                        Err(e) => {
                            let _ = ready.send(Err(e));
                            return Ok(None);
                        }
                    };
                    let _done = done;
                    stop.register(worker.waker());
                    let _ = ready.send(Ok(()));
                    match start_rx.recv() {
                        Ok(Some((plan, window))) => worker.run(plan, window).map(Some),
                        _ => Ok(None),
                    }
                },
            )
            .map_err(|why| EngineError::Worker { thread: j, why })?;
        handles.push(handle);
    }
    drop(ready_tx);
    drop(done_tx);

    // Start every thread on one clock only once all of them are connected.
    let mut failed = None;
    for _ in 0..cfg.threads {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failed = failed.or(Some(e)),
            Err(_) => failed = failed.or(Some(EngineError::Panic(0))),
        }
    }
    let t0 = clock::now();
    let started_at = std::time::SystemTime::now();
    let window = Window {
        measure_from: t0 + nanos(cfg.warmup),
        end: t0 + nanos(cfg.duration),
    };
    for (j, start) in starts.iter().enumerate() {
        let plan = cfg.load.plan(t0, j, cfg.threads);
        let _ = start.send(failed.is_none().then_some((plan, window)));
    }

    if let (Some(tick), Some(board)) = (on_tick.as_mut(), board.as_ref()) {
        while let Err(mpsc::RecvTimeoutError::Timeout) =
            done_rx.recv_timeout(Duration::from_secs(1))
        {
            tick(board.totals(), Duration::from_nanos(clock::now() - t0));
        }
    }
    let mut threads = Vec::with_capacity(cfg.threads);
    let mut failure = None;
    for (j, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Ok(Some((stats, error)))) => {
                threads.push(stats);
                failure = failure.or(error);
            }
            Ok(Ok(None)) => {}
            Ok(Err(why)) => failed = failed.or(Some(EngineError::Worker { thread: j, why })),
            Err(_) => failed = failed.or(Some(EngineError::Panic(j))),
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let stopped_at = stop
        .stopped_at()
        .map_or(window.end, |at| at.min(window.end));
    let measured = Duration::from_nanos(stopped_at.saturating_sub(window.measure_from));
    let mut stats = RunStats::merge(threads, measured);
    if endpoints > 0 {
        if let Some(r) = &cfg.replay {
            stats.name_endpoints(r.set.endpoints());
        }
    }
    Ok(Outcome {
        stats,
        addr,
        started_at,
        interrupted: stopped_at < window.end,
        script: main_script,
        failure,
    })
}

/// Loads the script into the main state and one state per thread (each
/// after `setup()` and `init()`), all before any worker starts.
fn load_scripts(
    cfg: &Config,
    addr: SocketAddr,
) -> Result<(Option<MainScript>, Vec<ThreadScript>), EngineError> {
    let Some(path) = &cfg.script else {
        return Ok((None, Vec::new()));
    };
    let t = &cfg.target;
    let target = ScriptTarget {
        scheme: match t.scheme {
            Scheme::Http => "http".into(),
            Scheme::Https => "https".into(),
        },
        host: t.host.clone(),
        port: t.port,
        path: t.path.clone(),
        authority: t.authority.clone(),
        url: cfg.url.clone(),
        headers: cfg.headers.clone(),
    };
    let mut main = MainScript::load(path, target)?;
    let threads = (0..cfg.threads)
        .map(|j| main.create_thread(j, addr, &cfg.script_args))
        .collect::<Result<_, _>>()?;
    Ok((Some(main), threads))
}

/// Where the connections go: the URL's host, or every host of the
/// requests file, each checked by a pre-flight connection.
fn peers(cfg: &Config) -> Result<Vec<Peer>, EngineError> {
    let targets = match &cfg.replay {
        Some(r) => r.set.hosts(),
        None => std::slice::from_ref(&cfg.target),
    };
    targets
        .iter()
        .map(|target| {
            let tls = tls_setup(target, cfg.insecure)?;
            let addr = preflight(target, tls.as_ref(), cfg.timeout)?;
            Ok(Peer { addr, tls })
        })
        .collect()
}

/// Refuses a run that would open more connections to one address than
/// there are local ports, instead of letting the surplus fail one by one.
fn check_local_ports(cfg: &Config, peers: &[Peer]) -> Result<(), EngineError> {
    let Some((lo, hi)) = limits::local_port_range() else {
        return Ok(());
    };
    let hosts = peers.len();
    for (h, peer) in peers.iter().enumerate() {
        // Connection c of a thread goes to peer c % hosts.
        let to_one: usize = cfg
            .conns_per_thread
            .iter()
            .map(|&n| (n + hosts - 1 - h) / hosts)
            .sum();
        if let Some(available) = limits::ports_short(to_one, (lo, hi)) {
            return Err(EngineError::LocalPorts {
                connections: cfg.connections(),
                to_one,
                addr: peer.addr,
                available,
                lo,
                hi,
            });
        }
    }
    Ok(())
}

fn tls_setup(target: &Target, insecure: bool) -> Result<Option<TlsSetup>, EngineError> {
    if target.scheme != Scheme::Https {
        return Ok(None);
    }
    let name = ServerName::try_from(target.host.clone())
        .map_err(|_| EngineError::ServerName(target.host.clone()))?;
    Ok(Some(TlsSetup {
        config: client_config(insecure),
        name,
    }))
}

/// Whether each request of a static batch is a HEAD request. The batch is
/// split here, once, before anything is sent, so that a broken one is an
/// error naming the fields that made it.
fn static_heads(bytes: &[u8]) -> Result<Box<[bool]>, EngineError> {
    let requests = split_requests(bytes).map_err(EngineError::BadStaticRequest)?;
    Ok(requests.iter().map(|r| r.head).collect())
}

/// Finds the first address that accepts a connection (and a TLS handshake),
/// so that an unreachable server or an untrusted certificate is one clear
/// error before the run instead of a screen of counted failures.
fn preflight(
    target: &Target,
    tls: Option<&TlsSetup>,
    timeout: Duration,
) -> Result<SocketAddr, EngineError> {
    let mut last = None;
    for &addr in &target.addrs {
        match std::net::TcpStream::connect_timeout(&addr, timeout) {
            Ok(sock) => {
                if let Some(t) = tls {
                    handshake(sock, t, timeout).map_err(|why| {
                        if is_certificate_error(&why) {
                            EngineError::Certificate {
                                host: target.host.clone(),
                                why,
                            }
                        } else {
                            EngineError::Tls { addr, why }
                        }
                    })?;
                }
                return Ok(addr);
            }
            Err(why) => last = Some(EngineError::Connect { addr, why }),
        }
    }
    Err(last.expect("a target always has at least one address"))
}

fn handshake(mut sock: std::net::TcpStream, tls: &TlsSetup, timeout: Duration) -> io::Result<()> {
    sock.set_read_timeout(Some(timeout))?;
    sock.set_write_timeout(Some(timeout))?;
    let mut conn = rustls::ClientConnection::new(tls.config.clone(), tls.name.clone())
        .map_err(io::Error::other)?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)?;
    }
    conn.send_close_notify();
    let _ = conn.complete_io(&mut sock);
    Ok(())
}
