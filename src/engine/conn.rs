//! One connection's state: where it is in its life (connecting, idle,
//! busy, down), the requests it has in flight, and its response parser.
//!
//! The worker drives the transitions (it owns the statistics and the idle
//! queue); this file owns the data and the small steps that only touch one
//! connection.

use std::collections::VecDeque;
use std::net::SocketAddr;

use crate::clock::Nanos;
use crate::http::response::ResponseParser;
use crate::stats::Stamp;

use super::transport::{TlsSetup, Transport};

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// TCP connect under way.
    Connecting,
    /// TCP up, TLS handshake under way.
    Handshaking,
    /// Ready for a request (it sits in the worker's idle queue).
    Idle,
    /// A request is being written or awaited.
    Busy,
    /// Waiting out the script's `delay()` until `retry_at`.
    Resting,
    /// Closed; reopened at `retry_at`.
    Down,
}

/// A request that has been written (or is being written).
#[derive(Clone, Copy, Debug)]
pub struct InFlight {
    /// Its times and whether it is measured, for the statistics.
    pub stamp: Stamp,
    /// A HEAD request: its response has no body.
    pub head: bool,
}

pub struct Conn {
    pub state: State,
    /// The peer it connects to (an index into the worker's peers).
    pub host: usize,
    /// The request of the requests file being written.
    pub current: u32,
    pub transport: Option<Transport>,
    /// Requests written and not yet answered, oldest first (more than one
    /// when pipelining).
    pub in_flight: VecDeque<InFlight>,
    /// Bytes of the current request batch written so far.
    pub written: usize,
    /// The current batch, when a script's `request()` builds each one
    /// (static requests are shared by the worker instead).
    pub out: Vec<u8>,
    pub parser: ResponseParser,
    /// Responses completed on the current socket.
    pub served: u64,
    /// Consecutive attempts that ended before any response.
    pub failures: u32,
    /// When a `Down` connection is reopened.
    pub retry_at: Nanos,
    /// When the current socket was opened.
    pub opened_at: Nanos,
    /// When the connection last became idle.
    pub idle_since: Nanos,
}

/// Longest wait between two attempts to reopen a failing connection.
const MAX_BACKOFF: Nanos = 1_000_000_000;

impl Conn {
    pub fn new(max_head: usize, capture: bool, host: usize) -> Conn {
        let mut parser = ResponseParser::new(max_head);
        parser.set_capture(capture);
        Conn {
            state: State::Down,
            host,
            current: 0,
            transport: None,
            in_flight: VecDeque::with_capacity(16),
            written: 0,
            out: Vec::new(),
            parser,
            served: 0,
            failures: 0,
            retry_at: 0,
            opened_at: 0,
            idle_since: 0,
        }
    }

    /// Opens a new socket (the caller registers it).
    pub fn open(
        &mut self,
        addr: SocketAddr,
        tls: Option<&TlsSetup>,
        now: Nanos,
    ) -> std::io::Result<()> {
        self.opened_at = now;
        self.transport = Some(Transport::connect(addr, tls)?);
        self.state = State::Connecting;
        self.served = 0;
        self.written = 0;
        Ok(())
    }

    /// Drops the socket and everything in flight on it (the caller counts
    /// what was lost first). An attempt that served nothing backs off
    /// exponentially, so a server that refuses or hangs up at once is not
    /// hammered in a busy loop.
    pub fn close(&mut self, now: Nanos) {
        self.transport = None;
        self.in_flight.clear();
        self.written = 0;
        self.state = State::Down;
        if self.served == 0 {
            self.failures = self.failures.saturating_add(1);
            let backoff = 1_000_000u64 << self.failures.min(10);
            self.retry_at = now + backoff.min(MAX_BACKOFF);
        } else {
            self.failures = 0;
            self.retry_at = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_attempts_back_off_up_to_a_second() {
        let mut c = Conn::new(1024, false, 0);
        c.close(0);
        assert_eq!(c.retry_at, 2_000_000);
        c.close(0);
        assert_eq!(c.retry_at, 4_000_000);
        for _ in 0..20 {
            c.close(0);
        }
        assert_eq!(c.retry_at, MAX_BACKOFF);
    }

    #[test]
    fn a_connection_that_served_reopens_at_once() {
        let mut c = Conn::new(1024, false, 0);
        c.close(0);
        c.served = 3;
        c.close(50);
        assert_eq!((c.retry_at, c.failures), (50, 0));
    }
}
