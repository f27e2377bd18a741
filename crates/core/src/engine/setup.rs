//! What the engine is asked to run: one load test's settings, as plain
//! data. The command line's configuration builds it; the engine reads
//! nothing else, so it never depends on how the settings were typed.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::sign::CertifiedKey;
use rustls::RootCertStore;
use std::time::Duration;

pub use crate::http::{Protocol, Protocols};
use crate::replay::{Order, RequestSet};
use crate::schedule::Load;
use crate::target::Target;

/// Everything one run needs, decided before it starts.
#[derive(Clone, Debug)]
pub struct Setup {
    pub url: String,
    pub target: Target,
    pub threads: usize,
    /// Connections of each thread at the start; they add up to `-c`
    /// exactly.
    pub conns_per_thread: Vec<usize>,
    /// How far the connections may grow on demand, if they may.
    pub growth: Option<Growth>,
    pub duration: Duration,
    pub warmup: Duration,
    pub timeout: Duration,
    /// `--visit-timeout`: how long a flow's visit may run.
    pub visit_timeout: Option<Duration>,
    /// The closed loop, or the arrival process of rate mode.
    pub load: Load,
    /// `--start-at`: the wall-clock instant that is the schedule's zero
    /// (otherwise the moment every worker is connected).
    pub start_at: Option<std::time::SystemTime>,
    /// Headers from `-H`, in order.
    pub headers: Vec<(String, String)>,
    /// CPU of each thread, when pinned.
    pub affinity: Option<Vec<usize>>,
    /// How https hosts are authenticated, and how metron authenticates itself.
    pub tls: TlsOptions,
    /// Which HTTP versions may be spoken, and how many streams at once.
    pub protocols: Protocols,
    pub max_head: usize,
    /// `--sse`: response bodies are read as event streams.
    pub sse: bool,
    /// `--llm`: every response is read as a completion stream.
    pub llm: Option<crate::llm::Llm>,
    /// `--grpc`: every request is a call of one method.
    pub calls: Option<Calls>,
    /// A `ws://` or `wss://` URL: every connection upgrades to WebSocket
    /// and each request is a message (its body).
    pub websocket: Option<Arc<crate::http::ws::Conversation>>,
    /// The message of every request unless a script or a requests file
    /// says otherwise (`--data`).
    pub message: Option<Vec<u8>>,
    pub script: Option<PathBuf>,
    pub script_args: Vec<String>,
    /// `--requests`: the requests to replay instead of GET URL.
    pub replay: Option<Replay>,
    /// Length of the recorded intervals (the JSON time series and the
    /// interval log).
    pub interval: Duration,
    /// The step at which the threads' completions must stay exact, when an
    /// output prints them per step (`--timeseries`, `--thread-timeseries`);
    /// otherwise they coarsen as a long run goes on.
    pub counts_every: Option<Duration>,
    /// Scripts print to stderr (stdout carries the JSON document).
    pub script_output_to_stderr: bool,
}

impl Setup {
    /// Connections at the start.
    pub fn connections(&self) -> usize {
        self.conns_per_thread.iter().sum()
    }

    /// The method, path and body of the request sent unless a script or
    /// a requests file says otherwise: GET the URL's path, or the call.
    pub fn request(&self) -> (&'static str, String, Option<&[u8]>) {
        match (&self.calls, &self.message) {
            (None, None) => ("GET", self.target.path.clone(), None),
            (None, Some(message)) => ("GET", self.target.path.clone(), Some(message)),
            (Some(c), _) => ("POST", format!("/{}", c.method), Some(&c.body)),
        }
    }

    /// The most connections the run may have open at once.
    pub fn max_connections(&self) -> usize {
        self.growth.map_or(self.connections(), |g| g.max)
    }
}

/// `--grpc`: the method every request calls, and how.
#[derive(Clone, Debug)]
pub struct Calls {
    /// `package.Service/Method`; the request's path is `/` and this.
    pub method: String,
    /// The framed request message (`--data`): the request's body.
    pub body: Vec<u8>,
    /// A server-streaming method: each message of a reply is timed as an
    /// event.
    pub streaming: bool,
    /// `--grpc-check`: what every successful reply must hold.
    pub check: Option<Arc<metron_grpc::Check>>,
}

/// Connections opened on demand (`--max-connections`, `-c auto`): when a
/// request falls due and no stream of any connection is free, another
/// connection opens, up to `max` over all threads, and stays open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Growth {
    pub max: usize,
    /// `max` is what the open-files limit allows (`-c auto`).
    pub from_open_files: bool,
}

/// A requests file, loaded, and how to replay it.
#[derive(Clone, Debug)]
pub struct Replay {
    pub file: PathBuf,
    pub set: Arc<RequestSet>,
    pub order: Order,
    pub seed: u64,
    /// Statistics per endpoint.
    pub by_endpoint: bool,
}

/// How HTTPS connections are authenticated, from `-k`, `--cacert`,
/// `--cert` and `--key`; every file is read and checked here, before the
/// run. The same options apply to every https host of the run.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    pub trust: Trust,
    /// What to present to a server that asks for a client certificate.
    pub identity: Option<Identity>,
}

/// Which server certificates are accepted.
#[derive(Clone, Debug, Default)]
pub enum Trust {
    /// Those issued by an authority of the operating system's store (the
    /// default; see the README's HTTPS section for an empty store).
    #[default]
    System,
    /// `--cacert FILE`: those issued by an authority in FILE, and no
    /// other; the file replaces the system's store, as it does for curl.
    /// A certificate that is itself in FILE is trusted too, though marked
    /// as an authority, as curl trusts it (see `engine::trust`).
    Authorities {
        file: PathBuf,
        roots: Arc<RootCertStore>,
        certs: Arc<[CertificateDer<'static>]>,
    },
    /// `-k`: any certificate.
    Insecure,
}

/// `--cert` and `--key`, known to belong together.
#[derive(Clone, Debug)]
pub struct Identity {
    pub cert: PathBuf,
    pub key: Arc<CertifiedKey>,
}

/// Spreads `total` over `parts` so the shares differ by at most one and add
/// up to `total` (wrk drops the remainder).
pub fn spread(total: usize, parts: usize) -> Vec<usize> {
    (0..parts)
        .map(|i| total / parts + usize::from(i < total % parts))
        .collect()
}
