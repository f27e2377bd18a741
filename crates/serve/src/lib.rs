//! `metron serve`: the built-in target server that `metron demo` and the
//! test suite point load at.
//!
//! HTTP/1.1 is written by hand on tokio rather than through an HTTP library
//! because this server must later inject byte-level faults: close mid-head,
//! send garbage, trickle bytes, reset the connection. A library that owns
//! the wire cannot do that, and owning it also keeps the bytes fixed: no
//! `Date` header, so tests can compare every byte of a response.
//!
//! HTTP/2 (`--http2`) is the other way round: its framing, HPACK and flow
//! control come from a library (`h2`), and the server keeps its say over
//! the byte stream underneath (stalls, raw fault bytes) through a wrapper.
//! Routes, replies, faults and stalls are the same for both protocols.
//!
//! HTTP/3 (`--http3`) takes the same way as HTTP/2, its QUIC and HTTP/3
//! from libraries, on UDP beside the TCP listener at the same port number;
//! what a stream does is written once for both (`exchange`).
//!
//! This file holds the public face: [`Server`] (start, address, stats,
//! shutdown) and [`run`] for `metron serve`, which hands it a
//! [`ServeConfig`] built from its flags; this module never sees the command
//! line. The rest is split by concept: `config` (what to serve), `plan`
//! (stall schedule), `capacity` (the one queue of `--capacity`), `fault`
//! (injected failures), `fault_bytes` (their bytes), `tls` (HTTPS:
//! certificates, client certificates), `stats` (what was received),
//! `request` and `body` (parsing), `route` and `reply` (what to answer and
//! its bytes), `token` (what `/login` hands out and `/private` checks),
//! `sse` (event streams: what each is made of, when each event is due,
//! and the events of `--sse`), `llm` (the stand-in model server of
//! `--llm`: its routes, what a request asks, its answers), `shared` (what
//! every connection shares), `session` (one accepted connection: TLS,
//! then which protocol), `conn` (the HTTP/1.1 loop), `upgrade` (what a
//! request for a `--ws` endpoint asks, and the `101` or 400 it gets),
//! `ws` (an upgraded WebSocket connection), and `exchange` (one
//! request on a stream of HTTP/2 or HTTP/3), for HTTP/2 `h2conn` (the
//! connection), `h2stream` (one stream) and `h2wire` (the byte stream
//! under the library), and for HTTP/3 `quic` (the UDP socket and QUIC's
//! settings), `h3conn` (the connection) and `h3stream` (one stream).

mod body;
mod capacity;
mod config;
mod conn;
mod exchange;
mod fault;
mod fault_bytes;
mod h2conn;
mod h2stream;
mod h2wire;
mod h3conn;
mod h3stream;
mod llm;
mod plan;
mod quic;
mod reply;
mod request;
mod route;
mod session;
mod shared;
mod sse;
mod stats;
#[cfg(test)]
mod tests;
mod tls;
mod token;
mod upgrade;
mod ws;

use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub use capacity::Capacity;
pub use config::{
    parse_h3_code, BadCert, Beyond, Http2, Http3, Llm, ServeConfig, Sse, H3_CODES, H3_MAX_STREAMS,
    H3_REQUEST_REJECTED, LLM_MAX_TOKENS, LLM_TPOT, LLM_TTFT, MAX_H2_WINDOW, MAX_LLM_TOKENS,
    MAX_THREADS, SSE_FIRST, SSE_GAP, TRICKLE_INTERVAL,
};
pub use fault::{
    parse_fault, parse_probability, Fault, FaultPlan, FaultSpec, Per, Pick, Probability,
};
pub use plan::StallPlan;
pub use stats::{RecordedRequest, ServerStats};
pub use upgrade::PUSH_EVENTS;

use shared::Shared;

/// Name of every thread the server runs on.
const THREAD_NAME: &str = "metron-serve";
/// Pending connections the kernel may queue; a load generator opening a
/// thousand connections at once should not see SYNs dropped.
const BACKLOG: libc::c_int = 4096;

/// A running server. Dropping it shuts it down, as [`Server::shutdown`] does.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    tls: bool,
    started_at: Instant,
    stats: Arc<ServerStats>,
    /// What the connections share: a shutdown tells WebSocket ones the
    /// server is going away through it.
    shared: Arc<Shared>,
    /// Dropping this tells the runtime thread to stop.
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds, starts the server on its own tokio runtime (threads named
    /// `metron-serve`) and returns once it is accepting connections.
    pub fn start(cfg: ServeConfig) -> io::Result<Server> {
        let invalid = |msg| io::Error::new(io::ErrorKind::InvalidInput, msg);
        cfg.check().map_err(invalid)?;
        let tls = tls::server_config(&cfg).map_err(invalid)?;
        Server::launch(cfg, tls)
    }

    /// Binds and starts serving, with the TLS configuration already built.
    fn launch(cfg: ServeConfig, tls: Option<Arc<rustls::ServerConfig>>) -> io::Result<Server> {
        let invalid = |msg| io::Error::new(io::ErrorKind::InvalidInput, msg);
        // HTTP/3's QUIC settings, with the TLS they run on (the config's
        // check has made sure there is some).
        let quic = match (cfg.http3, &tls) {
            (Some(http3), Some(tls)) => Some(quic::server_config(tls, http3).map_err(invalid)?),
            (Some(_), None) => return Err(invalid("--http3 needs TLS".to_string())),
            (None, _) => None,
        };
        let (listener, udp) = quic::bind(cfg.listen, quic.is_some())?;
        widen_backlog(&listener);
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let started_at = Instant::now();
        let stats = Arc::new(ServerStats::new(cfg.record));
        let secure = tls.is_some();
        let shared = Arc::new(Shared::new(cfg, started_at, Arc::clone(&stats), tls));
        let kept = Arc::clone(&shared);
        let h3 = udp.zip(quic);
        let (stop, stopped) = oneshot::channel();
        let (ready_tx, ready) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(THREAD_NAME.to_string())
            .spawn(move || host(listener, h3, shared, stopped, ready_tx))?;
        // The thread says whether the runtime came up; a vanished thread
        // can only mean it panicked.
        let up = ready
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("server thread died")));
        if let Err(e) = up {
            let _ = thread.join();
            return Err(e);
        }
        Ok(Server {
            addr,
            tls: secure,
            started_at,
            stats,
            shared: kept,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on, with the OS-chosen port filled in; with
    /// `--http3`, on UDP at the same address too.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, or `https://ADDR` with TLS.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// When it started: the origin of the stall schedule.
    pub fn started_at(&self) -> Instant {
        self.started_at
    }

    pub fn stats(&self) -> Arc<ServerStats> {
        Arc::clone(&self.stats)
    }

    /// Stops accepting, closes every connection and joins every thread.
    /// Open WebSocket connections (`--ws`) are closed first with 1001
    /// (going away), each given a second for the client's close.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.go_away();
        // The close handshakes, then the lingering close after them; a
        // connection that cannot even write its close is cut off then.
        let until = Instant::now() + ws::GOING_AWAY_WAIT + shared::LINGER;
        while self.shared.ws_open() > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Body of the server's own thread: owns the runtime, so the runtime is
/// dropped here, outside any async context, whoever called `shutdown`.
fn host(
    listener: std::net::TcpListener,
    h3: Option<(std::net::UdpSocket, quinn::ServerConfig)>,
    shared: Arc<Shared>,
    stopped: oneshot::Receiver<()>,
    ready: mpsc::Sender<io::Result<()>>,
) {
    let runtime = match start_accepting(listener, h3, shared) {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    // Returns when the sender is used or dropped, i.e. on shutdown.
    let _ = runtime.block_on(stopped);
    // Dropping the runtime cancels every task, which drops the listener
    // and every connection's socket, then joins the worker threads.
    drop(runtime);
}

fn start_accepting(
    listener: std::net::TcpListener,
    h3: Option<(std::net::UdpSocket, quinn::ServerConfig)>,
    shared: Arc<Shared>,
) -> io::Result<tokio::runtime::Runtime> {
    let runtime = runtime(shared.cfg.threads)?;
    let (listener, endpoint) = {
        let _context = runtime.enter();
        let endpoint = match h3 {
            Some((socket, config)) => Some(quic::endpoint(socket, config)?),
            None => None,
        };
        (TcpListener::from_std(listener)?, endpoint)
    };
    if let Some(endpoint) = endpoint {
        runtime.spawn(quic::accept(endpoint, Arc::clone(&shared)));
    }
    runtime.spawn(accept(listener, shared));
    Ok(runtime)
}

/// Serves a connection that has its place among `--max-connections`.
fn serve_tcp(stream: tokio::net::TcpStream, shared: &Arc<Shared>) {
    // Responses are written whole; waiting to coalesce them with later
    // bytes would only add latency.
    let _ = stream.set_nodelay(true);
    tokio::spawn(session::serve(stream, Arc::clone(shared)));
}

/// A connection beyond the limit, left unread until a place frees.
async fn hold(stream: tokio::net::TcpStream, shared: Arc<Shared>) {
    let until = Instant::now() + HOLD_AT_MOST;
    while Instant::now() < until {
        tokio::time::sleep(HOLD_TICK).await;
        if shared.take_place() {
            return serve_tcp(stream, &shared);
        }
    }
}

fn runtime(threads: usize) -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(THREAD_NAME)
        .enable_io()
        .enable_time()
        .build()
}

/// How often a connection held beyond the limit looks for a free place,
/// and how long it is held at most before it is closed unanswered.
const HOLD_TICK: Duration = Duration::from_millis(10);
const HOLD_AT_MOST: Duration = Duration::from_secs(600);

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) if shared.take_place() => serve_tcp(stream, &shared),
            // Past its connection limit the server closes at once, as
            // nginx does past its worker_connections, or leaves the
            // connection waiting unread, as a listen backlog does.
            Ok((stream, _)) => {
                shared.stats.connection_turned_away();
                if shared.cfg.beyond_limit == Beyond::Hold {
                    tokio::spawn(hold(stream, Arc::clone(&shared)));
                }
            }
            // Out of file descriptors and the like: retrying at once would
            // spin, and the condition usually clears as connections close.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Raises the listen backlog above the standard library's default. Linux
/// applies a second `listen` on a listening socket as a new backlog; where
/// that fails the default stands, which only matters under a connect storm.
fn widen_backlog(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    // SAFETY: `listen` only reads the descriptor, which `listener` keeps
    // open for the duration of the call.
    unsafe {
        libc::listen(listener.as_raw_fd(), BACKLOG);
    }
}

/// Why `metron serve` could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Config(String),
    #[error("cannot serve on {listen}: {why}")]
    Listen { listen: SocketAddr, why: io::Error },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// `metron serve`: starts the server, prints where it listens, and serves
/// until SIGINT or SIGTERM, then shuts down (WebSocket connections close
/// with 1001, going away) and returns. With `--llm` it
/// prints its token counts last ([`llm_counts`]), and with `--ws` its
/// WebSocket counts ([`ws_counts`]), so a test that stops it can
/// reconcile them with its client's.
pub fn run(cfg: ServeConfig) -> Result<(), ServeError> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let listen = cfg.listen;
    let http3 = cfg.http3.is_some();
    let llm = cfg.llm.is_some();
    let ws = cfg.ws;
    // Certificate files are read here, so a bad one is its own one-line
    // error rather than a failure to listen.
    let tls = tls::server_config(&cfg).map_err(ServeError::Config)?;
    // Signals are hooked before the address is printed, so a supervisor
    // that signals as soon as it reads the line cannot kill the process.
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    let server = Server::launch(cfg, tls).map_err(|why| ServeError::Listen { listen, why })?;
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "metron serve listening on {}", server.url())?;
    // A line of its own, so the first still reads as it always has.
    if http3 {
        writeln!(stdout, "metron serve: HTTP/3 on UDP {}", server.addr())?;
    }
    stdout.flush()?;
    drop(stdout);
    signals.forever().next();
    let stats = server.stats();
    server.shutdown();
    let mut stdout = io::stdout().lock();
    if llm {
        writeln!(stdout, "{}", llm_counts(&stats))?;
    }
    if ws {
        writeln!(stdout, "{}", ws_counts(&stats))?;
    }
    stdout.flush()?;
    Ok(())
}

/// The line `metron serve --ws` ends with: upgrades taken and refused,
/// messages each way (those sent written whole to the socket), and
/// closes each way by code and name, in the words of metron's own report
/// (`Closes by the server: 1011 internal error 5`).
pub fn ws_counts(stats: &ServerStats) -> String {
    let closes = |counts: Vec<(u16, u64)>| {
        if counts.is_empty() {
            return "none".to_string();
        }
        let named = counts
            .iter()
            .map(|(code, n)| format!("{code} {} {n}", metron_ws::close_name(*code)));
        named.collect::<Vec<_>>().join(", ")
    };
    format!(
        "metron serve: {} WebSocket upgrades taken, {} refused, {} messages received, {} messages sent; closes sent: {}; closes received: {}",
        stats.ws_upgrades(),
        stats.ws_refused(),
        stats.ws_messages_received(),
        stats.ws_messages_sent(),
        closes(stats.ws_closes_sent()),
        closes(stats.ws_closes_received())
    )
}

/// The line `metron serve --llm` ends with: what it answered, in the
/// terms of the API's `usage`.
pub fn llm_counts(stats: &ServerStats) -> String {
    format!(
        "metron serve: {} completions answered, {} completion tokens sent, {} prompt tokens read",
        stats.completions(),
        stats.completion_tokens(),
        stats.prompt_tokens()
    )
}
