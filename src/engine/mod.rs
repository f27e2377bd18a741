//! The load-generating engine: worker threads, each with its own event
//! loop, connections and statistics, started together on one schedule and
//! merged when they finish.
//!
//! Layout: [`worker`] runs one thread's loop and handlers; [`slots`] is
//! what a due request waits for; [`conn`] is a connection's life and its
//! protocol session; [`transport`] hides plain TCP vs TLS; [`timer`] gives
//! the loop microsecond wake-ups.

pub mod conn;
pub mod limits;
pub mod progress;
pub mod slots;
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

use crate::cli::config::{Config, Scheme, Target, TlsOptions, Trust};
use crate::clock::{self, nanos, Nanos};
use crate::http::request::{Batch, Parts, RequestError};
use crate::replay::Cursor;
use crate::schedule::{Arrivals, Plan};
use crate::script::{MainScript, ScriptError, ScriptTarget, ThreadScript};
use crate::stats::{RunStats, ThreadStats};

use transport::{
    client_config, is_certificate_error, noting_certificate_requests, rustls_error, ClientTls,
    TlsSetup,
};
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
    #[error("the TLS certificate of {host} was rejected: {why}; {hint}")]
    Certificate {
        host: String,
        why: io::Error,
        hint: String,
    },
    #[error(
        "the server at {addr} requires a client certificate ({why}); pass --cert FILE --key FILE"
    )]
    ClientCertRequired { addr: SocketAddr, why: io::Error },
    #[error("the server at {addr} refused the client certificate of --cert {cert} ({why}); use a certificate issued by an authority the server trusts")]
    ClientCertRefused {
        addr: SocketAddr,
        cert: String,
        why: io::Error,
    },
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
    run_watched(cfg, stop, None)
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
    fn rows(&mut self, rows: &[progress::Row]);
}

/// How often the main thread looks at the board when rows are wanted: as
/// often as the workers publish.
const ROWS_POLL: Duration = Duration::from_nanos(progress::PUBLISH_EVERY);
const TICK_EVERY: Duration = Duration::from_secs(1);

/// [`run`], telling `watch` how it goes while it waits for the workers.
pub fn run_watched(
    cfg: &Config,
    stop: &Arc<Stop>,
    mut watch: Option<&mut dyn Watch>,
) -> Result<Outcome, EngineError> {
    let rows_every = watch.as_ref().and_then(|w| w.rows_every());
    let board = watch
        .is_some()
        .then(|| Arc::new(progress::Board::new(cfg.threads, rows_every)));
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
    let default_request = Parts {
        method: "GET",
        path: &cfg.target.path,
        headers: &cfg.headers,
        body: None,
    };
    let default_request = Batch::encode(&default_request, &cfg.target.authority)
        .map_err(EngineError::BadStaticRequest)?;
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
        let request = match script.as_mut() {
            // A script without request() still shapes the one static request.
            Some(s) if s.is_static() => {
                Batch::parse(s.static_request()?).map_err(EngineError::BadStaticRequest)?
            }
            Some(_) => Batch::default(),
            None => default_request.clone(),
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
    if let Some(board) = &board {
        board.start(window.measure_from, window.end);
    }
    for (j, start) in starts.iter().enumerate() {
        let plan = match cfg.rate {
            Some(rate) => Plan::Paced(Arrivals::constant(t0, rate, j, cfg.threads)),
            None => Plan::Closed,
        };
        let _ = start.send(failed.is_none().then_some((plan, window)));
    }

    if let (Some(watch), Some(board)) = (watch.as_deref_mut(), board.as_ref()) {
        follow(watch, board, &done_rx, t0);
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
    if let (Some(watch), Some(board)) = (watch, board.as_ref()) {
        let rest = board.finish(&threads, measured);
        if !rest.is_empty() {
            watch.rows(&rest);
        }
    }
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

/// Tells `watch` what the workers publish until they have all exited.
fn follow(watch: &mut dyn Watch, board: &progress::Board, done: &mpsc::Receiver<()>, t0: Nanos) {
    let poll = match watch.rows_every() {
        Some(_) => ROWS_POLL,
        None => TICK_EVERY,
    };
    let mut next_tick = t0 + nanos(TICK_EVERY);
    while let Err(mpsc::RecvTimeoutError::Timeout) = done.recv_timeout(poll) {
        let rows = board.take_rows();
        if !rows.is_empty() {
            watch.rows(&rows);
        }
        let now = clock::now();
        if watch.ticks() && now >= next_tick {
            watch.tick(board.totals(), Duration::from_nanos(now - t0));
            // On the second, as far as the polls allow.
            next_tick = (next_tick + nanos(TICK_EVERY)).max(now);
        }
    }
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
        print_to_stderr: cfg.outputs.json_on_stdout(),
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
    // One configuration for every https host: the same trust for all.
    let client = targets
        .iter()
        .any(|t| t.scheme == Scheme::Https)
        .then(|| client_config(&cfg.tls));
    targets
        .iter()
        .map(|target| {
            let tls = tls_setup(target, client.as_ref())?;
            let check = tls
                .as_ref()
                .zip(client.as_ref())
                .map(|(setup, client)| TlsCheck {
                    setup,
                    opts: &cfg.tls,
                    fallback: client.fallback.as_deref(),
                });
            let addr = preflight(target, check, cfg.timeout)?;
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

/// What an https host's connections open with: the run's configuration
/// and the host's name.
fn tls_setup(target: &Target, client: Option<&ClientTls>) -> Result<Option<TlsSetup>, EngineError> {
    let Some(client) = client.filter(|_| target.scheme == Scheme::Https) else {
        return Ok(None);
    };
    let name = ServerName::try_from(target.host.clone())
        .map_err(|_| EngineError::ServerName(target.host.clone()))?;
    Ok(Some(TlsSetup {
        config: client.config.clone(),
        name,
    }))
}

/// Finds the first address that accepts a connection (and a TLS handshake),
/// so that an unreachable server or an untrusted certificate is one clear
/// error before the run instead of a screen of counted failures.
fn preflight(
    target: &Target,
    tls: Option<TlsCheck>,
    timeout: Duration,
) -> Result<SocketAddr, EngineError> {
    let mut last = None;
    for &addr in &target.addrs {
        match std::net::TcpStream::connect_timeout(&addr, timeout) {
            Ok(sock) => {
                if let Some(check) = &tls {
                    handshake(sock, check.setup, timeout)
                        .map_err(|refused| check.explain(target, addr, refused))?;
                }
                return Ok(addr);
            }
            Err(why) => last = Some(EngineError::Connect { addr, why }),
        }
    }
    Err(last.expect("a target always has at least one address"))
}

/// What the pre-flight needs to say why a handshake failed.
struct TlsCheck<'a> {
    setup: &'a TlsSetup,
    opts: &'a TlsOptions,
    /// Why the system's store was not used, if the built-in roots were.
    fallback: Option<&'a str>,
}

/// A failed pre-flight handshake.
struct Refused {
    why: io::Error,
    /// The server asked for a client certificate.
    asked: bool,
}

impl TlsCheck<'_> {
    /// Names the fix: trust for a refused server certificate, `--cert` for
    /// a server that wants a client certificate, the scheme otherwise.
    fn explain(&self, target: &Target, addr: SocketAddr, refused: Refused) -> EngineError {
        let why = refused.why;
        if is_certificate_error(&why) {
            let hint = self.certificate_hint(&why);
            let host = target.host.clone();
            return EngineError::Certificate { host, why, hint };
        }
        let (alert, required) = match rustls_error(&why) {
            Some(rustls::Error::AlertReceived(a)) => {
                (true, *a == rustls::AlertDescription::CertificateRequired)
            }
            _ => (false, false),
        };
        if !(required || (refused.asked && alert)) {
            return EngineError::Tls { addr, why };
        }
        match &self.opts.identity {
            None => EngineError::ClientCertRequired { addr, why },
            Some(id) => EngineError::ClientCertRefused {
                addr,
                cert: id.cert.display().to_string(),
                why,
            },
        }
    }

    fn certificate_hint(&self, why: &io::Error) -> String {
        let unknown = matches!(
            rustls_error(why),
            Some(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer
            ))
        );
        let pass = "pass its authority with --cacert FILE, or -k to skip verification";
        match (&self.opts.trust, self.fallback) {
            _ if !unknown => "pass -k/--insecure to skip verification".to_string(),
            (Trust::Authorities { file, .. }, _) => format!(
                "--cacert {} does not hold the authority that issued it; {pass}",
                file.display()
            ),
            (_, Some(store)) => format!(
                "the system's trust store gave no certificate ({store}), so only metron's built-in roots were tried; {pass}"
            ),
            _ => format!("it is issued by an authority the system does not trust; {pass}"),
        }
    }
}

fn handshake(sock: std::net::TcpStream, tls: &TlsSetup, timeout: Duration) -> Result<(), Refused> {
    let (config, asked) = noting_certificate_requests(&tls.config);
    let conn = rustls::ClientConnection::new(config, tls.name.clone()).map_err(io::Error::other);
    conn.and_then(|conn| handshake_io(sock, conn, timeout, &asked))
        .map_err(|why| Refused {
            why,
            asked: asked.load(Ordering::Relaxed),
        })
}

fn handshake_io(
    mut sock: std::net::TcpStream,
    mut conn: rustls::ClientConnection,
    timeout: Duration,
    asked: &AtomicBool,
) -> io::Result<()> {
    sock.set_read_timeout(Some(timeout))?;
    sock.set_write_timeout(Some(timeout))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)?;
    }
    conn.send_close_notify();
    let _ = conn.complete_io(&mut sock);
    if asked.load(Ordering::Relaxed) {
        await_verdict(&mut conn, &mut sock, timeout)?;
    }
    Ok(())
}

/// In TLS 1.3 the client's side of the handshake is over before the
/// server has checked the client's certificate: a refusal comes after, as
/// an alert. Reads until the server answers the close_notify, closes, or
/// stays silent for the timeout; only an alert counts as a refusal.
fn await_verdict(
    conn: &mut rustls::ClientConnection,
    sock: &mut std::net::TcpStream,
    timeout: Duration,
) -> io::Result<()> {
    let deadline = std::time::Instant::now() + timeout;
    // Session tickets and the server's close_notify: a few records.
    for _ in 0..64 {
        if std::time::Instant::now() >= deadline {
            break;
        }
        match conn.read_tls(sock) {
            Ok(0) => break,
            Ok(_) => {
                let state = conn.process_new_packets().map_err(transport::tls_error)?;
                if state.peer_has_closed() {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    Ok(())
}
