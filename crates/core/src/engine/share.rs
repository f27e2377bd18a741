//! What one worker thread is given before it starts: its share of the
//! connections, the servers they go to (and how a session to each opens),
//! the requests and the script state. [`super::prepare`] builds it;
//! [`super::worker`] runs on it.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use mio::{Interest, Registry, Token};

use crate::clock::Nanos;
use crate::http::{Batch, Carrier, EventReading, Protocol, SessionOptions};
use crate::replay::Cursor;
use crate::script::ThreadScript;

use super::conn::BoxedSession;
use super::transport::{TlsSetup, Transport};

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
    /// This thread's lane of the whole run, shards included: `(lane,
    /// lanes)` (see `Shard::lane`).
    pub lane: (usize, usize),
    pub timeout: Nanos,
    /// How long a flow's visit may run (`--visit-timeout`).
    pub visit_timeout: Option<Nanos>,
    pub max_head: usize,
    /// `--sse`: response bodies are read as event streams.
    pub sse: bool,
    /// A WebSocket run, of this shape (`--ws`): its pushes are events.
    pub websocket: Option<crate::http::ws::Shape>,
    /// `--llm`: response bodies are read as completion streams, judged
    /// by these bounds (`--goodput`).
    pub llm: Option<crate::stats::llm::Goodput>,
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

/// The servers a worker's connections go to, each with what its
/// sessions open with.
pub struct Peers(Vec<(Peer, SessionOptions)>);

impl Peers {
    pub fn new(peers: Vec<Peer>, shape: &SessionShape) -> Peers {
        Peers(
            peers
                .into_iter()
                .map(|p| {
                    let opts = p.session_options(shape);
                    (p, opts)
                })
                .collect(),
        )
    }

    /// Starts a connection to peer `p` at the address `to` makes of its
    /// own, registered under `token`, with its session.
    pub fn open(
        &self,
        p: usize,
        to: impl FnOnce(SocketAddr) -> SocketAddr,
        registry: &Registry,
        token: Token,
        now: Nanos,
    ) -> io::Result<(Transport, BoxedSession)> {
        let (peer, opts) = &self.0[p];
        let addr = to(peer.addr);
        let transport = peer.connect(addr, registry, token)?;
        let session = peer.protocol.session(opts, addr, now);
        Ok((transport, session.map_err(io::Error::other)?))
    }
}

/// What every session of a worker opens with, whatever its server.
pub struct SessionShape {
    pub max_head: usize,
    /// Responses are kept whole for a hook.
    pub capture: bool,
    pub reading: EventReading,
    pub max_streams: u32,
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
    /// WebSocket: what every connection's upgrade says.
    pub websocket: Option<Arc<crate::http::ws::Conversation>>,
}

impl Peer {
    /// What a session to this server opens with: the worker's `shape` of
    /// session, for this server.
    pub fn session_options(&self, shape: &SessionShape) -> SessionOptions {
        SessionOptions {
            max_head: shape.max_head,
            capture: shape.capture,
            reading: shape.reading,
            max_streams: shape.max_streams,
            scheme: self.scheme(),
            authority: self.authority.clone(),
            tls: self.tls.as_ref().map(|t| t.config.clone()),
            server_name: self
                .tls
                .as_ref()
                .map_or_else(String::new, |t| t.name.to_str().into_owned()),
            websocket: self.websocket.clone(),
        }
    }

    /// Starts a connect to `addr` (this server's, unless the script moved
    /// its thread) and registers its socket under `token`.
    fn connect(
        &self,
        addr: SocketAddr,
        registry: &Registry,
        token: Token,
    ) -> io::Result<Transport> {
        let mut transport = match self.protocol.carrier() {
            Carrier::Stream => Transport::connect(addr, self.tls.as_ref())?,
            // The session does its own TLS over datagrams.
            Carrier::Datagrams => Transport::datagrams(addr)?,
        };
        let interest = Interest::READABLE | Interest::WRITABLE;
        registry.register(transport.socket(), token, interest)?;
        Ok(transport)
    }

    fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
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
