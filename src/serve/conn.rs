//! One connection: read requests, answer them in order, write the bytes.
//!
//! The loop reads whatever arrived, answers every complete request in it
//! (pipelined ones included) into one output buffer, and writes that buffer
//! with as few syscalls as possible: one per batch on the default route.
//! Both buffers live as long as the connection and are reused, so a
//! keep-alive benchmark allocates nothing per request.
//!
//! Time enters in two places. A response is not written before its due time
//! (arrival plus `--delay` plus any `/delay/MS`), and no byte is written
//! during a stall: every write waits for the stall to end first.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep, sleep_until, timeout};

use super::config::ServeConfig;
use super::reply::{Canned, Encoder, Reply, BAD_REQUEST, CONTINUE};
use super::request::{Event, Head, Reader};
use super::route::{default_body, reply_for, Ask, Defaults};
use super::stats::ServerStats;

/// Output is written once this much has piled up, even mid-batch.
const FLUSH_AT: usize = 64 * 1024;
/// Reads ask for at least this much room.
const READ_ROOM: usize = 8 * 1024;
/// How long a closing connection keeps reading what the client still sends.
const LINGER: Duration = Duration::from_millis(500);
/// How much a closing connection reads before giving up on a clean close.
const LINGER_BYTES: usize = 1 << 20;

/// What every connection of one server reads.
#[derive(Debug)]
pub(crate) struct Shared {
    pub cfg: ServeConfig,
    pub started_at: Instant,
    pub stats: Arc<ServerStats>,
    pub canned: Option<Canned>,
    pub defaults: Defaults,
}

impl Shared {
    pub(crate) fn new(cfg: ServeConfig, started_at: Instant, stats: Arc<ServerStats>) -> Shared {
        let mut defaults = Defaults {
            body_size: cfg.body_size,
            chunked: cfg.chunked,
            canned: false,
        };
        let canned = Canned::build(default_body(cfg.body_size, defaults));
        defaults.canned = canned.is_some();
        Shared {
            cfg,
            started_at,
            stats,
            canned,
            defaults,
        }
    }
}

/// Serves one accepted connection until either side ends it.
pub(crate) async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let _open = OpenGuard(Arc::clone(&shared.stats));
    let mut conn = Conn::new(stream, shared);
    // An I/O error means the client went away: nothing to tell anyone.
    if let Ok(Ending::ServerCloses) = conn.run().await {
        conn.linger().await;
    }
}

/// Keeps the open-connection gauge right however the task ends (it may be
/// dropped mid-await at shutdown).
struct OpenGuard(Arc<ServerStats>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.connection_closed();
    }
}

enum Ending {
    ClientClosed,
    ServerCloses,
}

struct Conn {
    stream: TcpStream,
    shared: Arc<Shared>,
    input: Vec<u8>,
    out: Vec<u8>,
    reader: Reader,
    /// Responses so far, for `--close-every`.
    answered: u64,
}

impl Conn {
    fn new(stream: TcpStream, shared: Arc<Shared>) -> Conn {
        Conn {
            stream,
            shared,
            input: Vec::with_capacity(READ_ROOM),
            out: Vec::with_capacity(READ_ROOM),
            reader: Reader::default(),
            answered: 0,
        }
    }

    async fn run(&mut self) -> io::Result<Ending> {
        loop {
            if self.input.capacity() - self.input.len() < READ_ROOM / 2 {
                self.input.reserve(READ_ROOM);
            }
            let n = self.stream.read_buf(&mut self.input).await?;
            if n == 0 {
                return Ok(Ending::ClientClosed);
            }
            self.shared.stats.received(n);
            let more = self.answer_buffered(Instant::now()).await?;
            self.flush().await?;
            if !more {
                return Ok(Ending::ServerCloses);
            }
        }
    }

    /// Answers every complete request in the input buffer; returns whether
    /// the connection stays open.
    async fn answer_buffered(&mut self, arrival: Instant) -> io::Result<bool> {
        let mut pos = 0;
        let open = loop {
            let (used, event) = self.reader.step(&self.input[pos..], &self.shared.stats);
            pos += used;
            match event {
                Event::NeedMore => break true,
                Event::Continue => self.out.extend_from_slice(CONTINUE),
                Event::Request(head) => {
                    if !self.answer(head, arrival).await? {
                        break false;
                    }
                }
                Event::Bad => {
                    self.answer_bad(arrival).await?;
                    break false;
                }
            }
        };
        self.input.drain(..pos);
        Ok(open)
    }

    /// Answers one request; returns whether the connection stays open.
    async fn answer(&mut self, mut head: Head, arrival: Instant) -> io::Result<bool> {
        self.shared.stats.request_done(head.capture.take());
        self.answered += 1;
        let ask = Ask {
            route: head.route,
            head_only: head.head_only,
            http10: head.http10,
            close: !head.keep_alive || self.close_due(),
        };
        let reply = reply_for(ask, self.shared.defaults);
        self.send(reply, arrival, head.route.delay()).await
    }

    /// Answers bytes that are not a request.
    async fn answer_bad(&mut self, arrival: Instant) -> io::Result<()> {
        self.shared.stats.bad_request();
        self.send(Reply::BadRequest, arrival, Duration::ZERO)
            .await?;
        Ok(())
    }

    /// Counts, delays and writes `reply`; returns whether the connection
    /// stays open.
    async fn send(&mut self, reply: Reply, arrival: Instant, extra: Duration) -> io::Result<bool> {
        self.shared.stats.responded(reply.status());
        self.delay(arrival, extra).await?;
        self.emit(reply).await?;
        Ok(!reply.closes())
    }

    /// Whether `--close-every` ends the connection with this response.
    fn close_due(&self) -> bool {
        let every = self.shared.cfg.close_every;
        every.is_some_and(|n| n > 0 && self.answered % n == 0)
    }

    /// Holds the next response back until `--delay` plus `extra` after its
    /// request arrived; what is already queued goes out first, since it was
    /// due earlier. No clock is read when there is no delay.
    async fn delay(&mut self, arrival: Instant, extra: Duration) -> io::Result<()> {
        let delay = self.shared.cfg.delay.saturating_add(extra);
        if delay.is_zero() {
            return Ok(());
        }
        if arrival.elapsed() < delay {
            self.flush().await?;
            sleep_past(arrival, delay).await;
        }
        Ok(())
    }

    async fn emit(&mut self, reply: Reply) -> io::Result<()> {
        match reply {
            Reply::Canned { head_only, close } => {
                if let Some(canned) = &self.shared.canned {
                    self.out.extend_from_slice(canned.get(head_only, close));
                }
                if self.out.len() >= FLUSH_AT {
                    self.flush().await?;
                }
            }
            Reply::Send(response) => {
                let mut encoder = Encoder::new(response);
                while !encoder.fill(&mut self.out, FLUSH_AT) {
                    self.flush().await?;
                }
            }
            Reply::BadRequest => self.out.extend_from_slice(BAD_REQUEST),
        }
        Ok(())
    }

    /// Writes the output buffer, never while a stall is on.
    async fn flush(&mut self) -> io::Result<()> {
        if self.shared.cfg.stall.is_none() {
            self.stream.write_all(&self.out).await?;
        } else {
            // One syscall at a time, so a stall that starts mid-buffer
            // stops the writing too.
            let mut written = 0;
            while written < self.out.len() {
                self.wait_out_stall().await;
                match self.stream.write(&self.out[written..]).await? {
                    0 => return Err(io::ErrorKind::WriteZero.into()),
                    n => written += n,
                }
            }
        }
        self.out.clear();
        Ok(())
    }

    async fn wait_out_stall(&self) {
        let Some(plan) = self.shared.cfg.stall else {
            return;
        };
        let origin = self.shared.started_at;
        if let Some(end) = plan.stall_end(origin.elapsed()) {
            sleep_past(origin, end).await;
        }
    }

    /// Closes politely: the FIN tells the client the response is complete,
    /// and reading on for a moment keeps requests it already sent from
    /// turning the close into a reset that could destroy that response.
    async fn linger(&mut self) {
        if self.stream.shutdown().await.is_err() {
            return;
        }
        let mut discarded = 0;
        let drain = async {
            while discarded < LINGER_BYTES {
                self.input.clear();
                match self.stream.read_buf(&mut self.input).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => discarded += n,
                }
            }
        };
        let _ = timeout(LINGER, drain).await;
    }
}

/// Sleeps until `offset` after `origin`. Offsets come from flags and paths
/// (`/delay/1e12`), so one past the clock's range sleeps "forever" instead
/// of overflowing.
async fn sleep_past(origin: Instant, offset: Duration) {
    match origin.checked_add(offset) {
        Some(due) => sleep_until(due.into()).await,
        None => sleep(Duration::MAX).await,
    }
}
