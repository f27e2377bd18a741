//! What the engine is asked to run: one load test's settings, as plain
//! data. The command line's configuration builds it; the engine reads
//! nothing else, so it never depends on how the settings were typed.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::sign::CertifiedKey;
use rustls::RootCertStore;
use std::time::Duration;

use crate::replay::{Order, RequestSet};
use crate::schedule::Load;
use crate::target::Target;

/// Everything one run needs, decided before it starts.
#[derive(Clone, Debug)]
pub struct Setup {
    pub url: String,
    pub target: Target,
    pub threads: usize,
    /// Connections of each thread; they add up to `-c` exactly.
    pub conns_per_thread: Vec<usize>,
    pub duration: Duration,
    pub warmup: Duration,
    pub timeout: Duration,
    /// The closed loop, or the arrival process of rate mode.
    pub load: Load,
    /// Headers from `-H`, in order.
    pub headers: Vec<(String, String)>,
    /// CPU of each thread, when pinned.
    pub affinity: Option<Vec<usize>>,
    /// How https hosts are authenticated, and how metron authenticates itself.
    pub tls: TlsOptions,
    pub max_head: usize,
    pub script: Option<PathBuf>,
    pub script_args: Vec<String>,
    /// `--requests`: the requests to replay instead of GET URL.
    pub replay: Option<Replay>,
    /// Length of the recorded intervals (the JSON time series and the
    /// interval log).
    pub interval: Duration,
    /// Scripts print to stderr (stdout carries the JSON document).
    pub script_output_to_stderr: bool,
}

impl Setup {
    pub fn connections(&self) -> usize {
        self.conns_per_thread.iter().sum()
    }
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
    Authorities {
        file: PathBuf,
        roots: Arc<RootCertStore>,
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
