//! What every connection of one server shares, whatever protocol it
//! speaks: the config and counters ([`Shared`]), the byte stream it is
//! served over ([`Stream`]: plain TCP or TLS), which responses the fault
//! plan spoils, the queue of `--capacity` and when a response is due, and
//! the ways a connection waits and ends (a polite close that lingers, a
//! reset), and the key `/login` tokens are signed with.
//!
//! The HTTP/1.1 loop (`conn`) and the HTTP/2 one (`h2conn`) both build on
//! this module, so a fault plan, a stall or a close means the same on both.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::{sleep, sleep_until, timeout, Sleep};

use super::capacity::Queue;
use super::config::ServeConfig;
use super::fault::{Fault, Per};
use super::reply::Canned;
use super::route::{default_body, Defaults};
use super::stats::ServerStats;
use super::token::Tokens;

/// How long a closing connection keeps reading what the client still sends.
pub(crate) const LINGER: Duration = Duration::from_millis(500);
/// The error code of an `--h2-reset` RST_STREAM unless `--h2-reset-code`
/// says otherwise (README, `metron serve`): INTERNAL_ERROR.
const H2_RESET_CODE: u32 = 0x2;
/// How much a closing connection reads before giving up on a clean close.
const LINGER_BYTES: usize = 1 << 20;
/// Reads while lingering ask for this much room.
const LINGER_ROOM: usize = 8 * 1024;

/// What every connection of one server reads.
#[derive(Debug)]
pub(crate) struct Shared {
    pub cfg: ServeConfig,
    pub started_at: Instant,
    pub stats: Arc<ServerStats>,
    pub canned: Option<Canned>,
    pub defaults: Defaults,
    /// Set with `--tls`: every connection is TLS.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// What `/login` hands out and `/private` checks, on any connection.
    pub tokens: Tokens,
    /// Responses (or connections) the fault plan has counted so far.
    fault_count: AtomicU64,
    /// HTTP/2 streams `--h2-reset` has counted so far.
    reset_count: AtomicU64,
    /// HTTP/3 request streams `--h3-reset` has counted so far.
    h3_reset_count: AtomicU64,
    /// The one queue every request joins with `--capacity`.
    queue: Option<Queue>,
    /// Turns `true` when the server shuts down: WebSocket connections
    /// (`ws`) then close with 1001 (going away).
    going_away: watch::Sender<bool>,
    /// WebSocket connections open (upgraded, not yet ended), which a
    /// shutdown waits for.
    ws_open: AtomicU64,
}

impl Shared {
    pub(crate) fn new(
        cfg: ServeConfig,
        started_at: Instant,
        stats: Arc<ServerStats>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> Shared {
        let mut defaults = Defaults {
            body_size: cfg.body_size,
            chunked: cfg.chunked,
            canned: false,
            sse: cfg.sse,
        };
        let canned = Canned::build(default_body(cfg.body_size, defaults));
        defaults.canned = canned.is_some();
        let queue = cfg.capacity.map(|capacity| Queue::new(capacity, cfg.stall));
        Shared {
            cfg,
            started_at,
            stats,
            canned,
            defaults,
            tls,
            tokens: Tokens::default(),
            fault_count: AtomicU64::new(0),
            reset_count: AtomicU64::new(0),
            h3_reset_count: AtomicU64::new(0),
            queue,
            going_away: watch::Sender::new(false),
            ws_open: AtomicU64::new(0),
        }
    }

    /// Tells every WebSocket connection, open or opening, that the server
    /// is going away.
    pub(crate) fn go_away(&self) {
        self.going_away.send_replace(true);
    }

    /// What says the server is going away, for a WebSocket connection to
    /// wait on.
    pub(crate) fn going_away(&self) -> watch::Receiver<bool> {
        self.going_away.subscribe()
    }

    /// WebSocket connections open now.
    pub(crate) fn ws_open(&self) -> u64 {
        self.ws_open.load(Relaxed)
    }

    /// Counts a WebSocket connection open until the guard is dropped,
    /// however its task ends.
    pub(crate) fn ws_opened(&self) -> WsOpen<'_> {
        self.ws_open.fetch_add(1, Relaxed);
        WsOpen(self)
    }

    /// Counts one more response (or connection) for the fault plan and says
    /// whether the plan picks it.
    fn fault_picks(&self, per: Per) -> bool {
        let Some(plan) = self.cfg.fault.filter(|plan| plan.per == per) else {
            return false;
        };
        plan.picks(self.fault_count.fetch_add(1, Relaxed) + 1)
    }

    /// Counts a newly accepted connection for the fault plan: whether every
    /// response on it is to be faulty (`--fault-per connection`).
    pub(crate) fn connection_faulty(&self) -> bool {
        self.fault_picks(Per::Connection)
    }

    /// The fault the plan puts in place of the next response, if any, on a
    /// connection the plan did (`faulty`) or did not pick.
    pub(crate) fn fault_due(&self, faulty: bool) -> Option<Fault> {
        let plan = self.cfg.fault?;
        let picked = match plan.per {
            Per::Connection => faulty,
            Per::Response => self.fault_picks(Per::Response),
        };
        picked.then_some(plan.fault)
    }

    /// A new connection takes its place among `--max-connections`, and
    /// counts as open; `false` when they are all taken.
    pub(crate) fn take_place(&self) -> bool {
        self.stats
            .open_below(self.cfg.max_connections.unwrap_or(u64::MAX))
    }

    /// Whether `--close-every` ends the connection with its `answered`th
    /// response.
    pub(crate) fn close_due(&self, answered: u64) -> bool {
        let every = self.cfg.close_every;
        every.is_some_and(|n| n > 0 && answered % n == 0)
    }

    /// Counts one more stream of HTTP `version` (2 or 3) for
    /// `--h2-reset` or `--h3-reset`, and says with which error code it is
    /// reset instead of answered, if it is.
    pub(crate) fn reset_due(&self, version: u8) -> Option<u64> {
        let (pick, code, count) = match version {
            3 => {
                let h3 = self.cfg.http3?;
                (h3.reset?, h3.reset_code(), &self.h3_reset_count)
            }
            _ => {
                let h2 = self.cfg.http2?;
                let code = h2.reset_code.unwrap_or(H2_RESET_CODE);
                (h2.reset?, u64::from(code), &self.reset_count)
            }
        };
        pick.picks(count.fetch_add(1, Relaxed) + 1).then_some(code)
    }

    /// With `--capacity`, puts a request read at `read` at the back of the
    /// server's queue; returns when its service completes, as an offset
    /// from the server's start.
    pub(crate) fn book(&self, read: Instant) -> Option<Duration> {
        let queue = self.queue.as_ref()?;
        Some(queue.book(read.saturating_duration_since(self.started_at)))
    }

    /// [`Shared::book`] for a request read just now; without `--capacity`
    /// no clock is read.
    pub(crate) fn book_now(&self) -> Option<Duration> {
        let queue = self.queue.as_ref()?;
        Some(queue.book(self.started_at.elapsed()))
    }

    /// When the response to a request that arrived at `arrival` is due, as
    /// an origin and an offset from it (for [`sleep_past`]): `--delay` plus
    /// `extra` after its arrival, or with `--capacity` after its service
    /// completes at `served`. `None` when it need not wait at all.
    pub(crate) fn response_due(
        &self,
        arrival: Instant,
        served: Option<Duration>,
        extra: Duration,
    ) -> Option<(Instant, Duration)> {
        let delay = self.cfg.delay.saturating_add(extra);
        match served {
            Some(done) => Some((self.started_at, done.saturating_add(delay))),
            None if delay.is_zero() => None,
            None => Some((arrival, delay)),
        }
    }

    /// When the stall under way (if any) ends, as a timer; `None` outside
    /// a stall.
    pub(crate) fn stall_timer(&self) -> Option<Sleep> {
        let plan = self.cfg.stall?;
        let origin = self.started_at;
        let end = plan.stall_end(origin.elapsed())?;
        Some(sleep_past(origin, end))
    }

    /// Returns once no stall is on: at once outside a stall, else when the
    /// one under way ends.
    pub(crate) async fn wait_out_stall(&self) {
        if let Some(stall) = self.stall_timer() {
            stall.await;
        }
    }
}

/// A connection's byte stream: plain TCP, or TLS over it.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// The TCP socket underneath, for socket options.
    fn tcp(&self) -> &TcpStream;
}

impl Stream for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Stream for tokio_rustls::server::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

/// Keeps the open-connection gauge right however the task ends (it may be
/// dropped mid-await at shutdown).
pub(crate) struct OpenGuard(pub Arc<ServerStats>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.connection_closed();
    }
}

/// Counts a WebSocket connection open while it lives (see
/// [`Shared::ws_opened`]).
pub(crate) struct WsOpen<'a>(&'a Shared);

impl Drop for WsOpen<'_> {
    fn drop(&mut self) {
        self.0.ws_open.fetch_sub(1, Relaxed);
    }
}

/// A timer that fires `offset` after `origin`. Offsets come from flags and
/// paths (`/delay/1e12`), so one past the clock's range waits "forever"
/// instead of overflowing.
pub(crate) fn sleep_past(origin: Instant, offset: Duration) -> Sleep {
    match origin.checked_add(offset) {
        Some(due) => sleep_until(due.into()),
        None => sleep(Duration::MAX),
    }
}

/// Closes politely: the FIN tells the client the response is complete,
/// and reading on for a moment keeps requests it already sent from turning
/// the close into a reset that could destroy that response. `buf` is any
/// scratch buffer; its contents are discarded.
pub(crate) async fn linger<S: Stream>(stream: &mut S, buf: &mut Vec<u8>) {
    if stream.shutdown().await.is_err() {
        return;
    }
    let mut discarded = 0;
    let drain = async {
        while discarded < LINGER_BYTES {
            buf.clear();
            buf.reserve(LINGER_ROOM);
            match stream.read_buf(buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => discarded += n,
            }
        }
    };
    let _ = timeout(LINGER, drain).await;
}

/// Makes the coming close a reset: `SO_LINGER` 0 makes the close send RST
/// and drop anything unsent.
pub(crate) fn reset<S: Stream>(stream: &S) {
    let _ = stream.tcp().set_zero_linger();
}
