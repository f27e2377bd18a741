//! The byte stream under an HTTP/2 connection, as the HTTP/2 library sees
//! it: the connection's [`Stream`] with the server's own rules around it.
//!
//! - **Stalls.** No byte is written during a stall (`--stall-*`): every
//!   write, flush and close waits for it to end, whatever stream or
//!   connection frame it carries, as a stopped process would.
//! - **Bytes received** are counted as they are read.
//! - **The socket comes back.** When the library drops the connection,
//!   the stream is handed back, so a fault can still write raw bytes on
//!   it, reset it or close it politely.
//! - **Backlog.** Whether a write is waiting (socket full, or a stall), so
//!   a fault that ends the connection can first let out what was answered.
//! - **The GOAWAY gate** (`--h2-goaway-after N`): once the client has opened
//!   N streams, every later frame of a stream above the Nth is dropped
//!   before the library reads it. The library names the last stream it
//!   read as the last one processed in its GOAWAY, so the GOAWAY says
//!   exactly the Nth, and later streams go unprocessed however many the
//!   client had already sent. The gate reads only each frame's 9-byte
//!   header (RFC 9113 section 4.1) to find where frames start and which
//!   stream they belong to; their payloads pass through untouched. Two
//!   things follow from hiding frames: a dropped header block leaves the
//!   client's HPACK encoder one block ahead of the library's decoder, and
//!   dropped DATA never has its connection window given back. Neither
//!   matters once the GOAWAY has arrived, since the client then opens no
//!   stream; only trailers sent on a stream still open would fail to decode.

use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;
use tokio::time::Sleep;

use super::shared::{Shared, Stream};

/// What the connection's task learns from its wire.
#[derive(Debug, Default)]
pub(crate) struct WireState {
    /// A write is waiting for the socket or for a stall to end.
    backlogged: AtomicBool,
    /// The id of the stream after which the gate shut (0: still open).
    cutoff: AtomicU32,
}

impl WireState {
    pub(crate) fn backlogged(&self) -> bool {
        self.backlogged.load(Relaxed)
    }

    /// The last stream the gate let through, once it has shut.
    pub(crate) fn cutoff(&self) -> Option<u32> {
        match self.cutoff.load(Relaxed) {
            0 => None,
            id => Some(id),
        }
    }
}

/// A [`Stream`] as the HTTP/2 library reads and writes it.
pub(crate) struct Wire<S> {
    /// Always present until dropped, when it goes back through `back`.
    io: Option<S>,
    back: Option<oneshot::Sender<S>>,
    shared: Arc<Shared>,
    state: Arc<WireState>,
    /// The end of the stall under way, while one is.
    stall: Option<Pin<Box<Sleep>>>,
    gate: Option<Gate>,
}

impl<S: Stream> Wire<S> {
    /// Wraps `io`; the receiver gets it back once the wire is dropped.
    pub(crate) fn new(
        io: S,
        shared: Arc<Shared>,
    ) -> (Wire<S>, oneshot::Receiver<S>, Arc<WireState>) {
        let (back, returned) = oneshot::channel();
        let state = Arc::new(WireState::default());
        let gate = shared
            .cfg
            .http2
            .and_then(|h2| h2.goaway_after)
            .map(Gate::new);
        let wire = Wire {
            io: Some(io),
            back: Some(back),
            shared,
            state: Arc::clone(&state),
            stall: None,
            gate,
        };
        (wire, returned, state)
    }

    fn io(&mut self) -> io::Result<Pin<&mut S>> {
        match self.io.as_mut() {
            Some(io) => Ok(Pin::new(io)),
            None => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    /// Ready once no stall is on; while one is, the waker is woken at its
    /// end.
    fn poll_unstalled(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            if let Some(end) = self.stall.as_mut() {
                ready!(end.as_mut().poll(cx));
                self.stall = None;
            }
            match self.shared.stall_timer() {
                Some(end) => self.stall = Some(Box::pin(end)),
                None => return Poll::Ready(()),
            }
        }
    }

    /// Runs a write-side operation once no stall is on, noting whether it
    /// had to wait.
    fn write_side<T>(
        &mut self,
        cx: &mut Context<'_>,
        op: impl FnOnce(Pin<&mut S>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let result = match self.poll_unstalled(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => match self.io() {
                Ok(io) => op(io, cx),
                Err(e) => Poll::Ready(Err(e)),
            },
        };
        self.state.backlogged.store(result.is_pending(), Relaxed);
        result
    }
}

impl<S> Drop for Wire<S> {
    fn drop(&mut self) {
        if let (Some(io), Some(back)) = (self.io.take(), self.back.take()) {
            // Nobody waiting for it: the stream just closes.
            let _ = back.send(io);
        }
    }
}

impl<S: Stream> AsyncRead for Wire<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = match this.gate.take() {
            None => this.io()?.poll_read(cx, buf),
            Some(mut gate) => {
                let result = gate.poll_read(this.io()?, cx, buf);
                if let Some(id) = gate.cutoff {
                    this.state.cutoff.store(id, Relaxed);
                }
                this.gate = Some(gate);
                result
            }
        };
        this.shared.stats.received(buf.filled().len() - before);
        result
    }
}

impl<S: Stream> AsyncWrite for Wire<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .write_side(cx, |io, cx| io.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .write_side(cx, |io, cx| io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.as_ref().is_some_and(|io| io.is_write_vectored())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().write_side(cx, |io, cx| io.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().write_side(cx, |io, cx| io.poll_shutdown(cx))
    }
}

/// The client connection preface (RFC 9113 section 3.4) comes before the
/// first frame.
const PREFACE_LEN: usize = 24;
/// Every frame starts with a header of this many bytes.
const FRAME_HEADER_LEN: usize = 9;
/// The frame type that opens a stream.
const HEADERS: u8 = 0x1;
/// Bytes read from the socket at a time while the gate filters them.
const GATE_READ: usize = 16 * 1024;

/// Lets frames through until the client has opened `after` streams, then
/// drops every frame of a later stream (see the module doc).
#[derive(Debug)]
struct Gate {
    after: u64,
    opened: u64,
    /// The highest stream id the client has opened.
    highest: u32,
    /// The Nth stream's id, once it is known.
    cutoff: Option<u32>,
    at: At,
    /// Room for one read from the socket.
    raw: Vec<u8>,
    /// Bytes that passed the gate, and how many of them the reader has.
    passed: Vec<u8>,
    handed: usize,
}

/// Where the gate stands in the byte stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// In the client preface; so many bytes of it left.
    Preface(usize),
    /// In a frame header; so many of its bytes held.
    Header([u8; FRAME_HEADER_LEN], usize),
    /// In a payload; so many bytes left, and whether they pass.
    Payload(usize, bool),
}

impl Gate {
    fn new(after: u64) -> Gate {
        Gate {
            after,
            opened: 0,
            highest: 0,
            cutoff: None,
            at: At::Preface(PREFACE_LEN),
            raw: vec![0; GATE_READ],
            passed: Vec::new(),
            handed: 0,
        }
    }

    fn poll_read<S: AsyncRead>(
        &mut self,
        mut io: Pin<&mut S>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // A read that passes nothing (a dropped frame) must not look like
        // the end of the stream, so read on until something passes.
        while self.handed == self.passed.len() {
            self.passed.clear();
            self.handed = 0;
            let mut raw = ReadBuf::new(&mut self.raw);
            ready!(io.as_mut().poll_read(cx, &mut raw))?;
            let n = raw.filled().len();
            if n == 0 {
                return Poll::Ready(Ok(()));
            }
            let raw = std::mem::take(&mut self.raw);
            self.feed(&raw[..n]);
            self.raw = raw;
        }
        let ready = &self.passed[self.handed..];
        let n = ready.len().min(buf.remaining());
        buf.put_slice(&ready[..n]);
        self.handed += n;
        Poll::Ready(Ok(()))
    }

    /// Moves what passes of `input` into `passed`.
    fn feed(&mut self, mut input: &[u8]) {
        while !input.is_empty() {
            let used = match &mut self.at {
                At::Preface(left) => {
                    let n = (*left).min(input.len());
                    self.passed.extend_from_slice(&input[..n]);
                    *left -= n;
                    if *left == 0 {
                        self.at = At::Header([0; FRAME_HEADER_LEN], 0);
                    }
                    n
                }
                At::Header(header, held) => {
                    let n = (FRAME_HEADER_LEN - *held).min(input.len());
                    header[*held..*held + n].copy_from_slice(&input[..n]);
                    *held += n;
                    if *held == FRAME_HEADER_LEN {
                        let header = *header;
                        self.frame(&header);
                    }
                    n
                }
                At::Payload(left, pass) => {
                    let n = (*left).min(input.len());
                    if *pass {
                        self.passed.extend_from_slice(&input[..n]);
                    }
                    *left -= n;
                    if *left == 0 {
                        self.at = At::Header([0; FRAME_HEADER_LEN], 0);
                    }
                    n
                }
            };
            input = &input[used..];
        }
    }

    /// Judges a complete frame header: passes it on or not, and sets up
    /// its payload.
    fn frame(&mut self, header: &[u8; FRAME_HEADER_LEN]) {
        let len =
            usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
        let id = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
        let pass = self.passes(header[3], id);
        if pass {
            self.passed.extend_from_slice(header);
        }
        self.at = match len {
            0 => At::Header([0; FRAME_HEADER_LEN], 0),
            len => At::Payload(len, pass),
        };
    }

    /// Whether a frame of type `kind` on stream `id` passes, counting the
    /// streams the client opens until the Nth.
    fn passes(&mut self, kind: u8, id: u32) -> bool {
        if let Some(cutoff) = self.cutoff {
            return id <= cutoff;
        }
        // Clients open odd-numbered streams, each above the last.
        if kind == HEADERS && id % 2 == 1 && id > self.highest {
            self.highest = id;
            self.opened += 1;
            if self.opened >= self.after {
                self.cutoff = Some(id);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    fn frame(kind: u8, id: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut out = len.to_be_bytes()[1..].to_vec();
        out.extend_from_slice(&[kind, 0]);
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// Feeds `wire` through a gate shutting after `after` streams, in
    /// pieces of `step` bytes.
    fn through(after: u64, wire: &[u8], step: usize) -> (Vec<u8>, Option<u32>) {
        let mut gate = Gate::new(after);
        for piece in wire.chunks(step) {
            gate.feed(piece);
        }
        (gate.passed, gate.cutoff)
    }

    #[test]
    fn frames_of_later_streams_are_dropped_in_any_split() {
        let settings = frame(0x4, 0, &[0, 3, 0, 0, 0, 9]);
        let (h1, d1) = (frame(HEADERS, 1, b"abc"), frame(0x0, 1, b"body"));
        let (h3, d3) = (frame(HEADERS, 3, b"de"), frame(0x0, 3, b""));
        let h5 = frame(HEADERS, 5, b"fgh");
        let (d5, ping) = (frame(0x0, 5, b"late"), frame(0x6, 0, &[7; 8]));
        let wire = [PREFACE, &settings, &h1, &h3, &d1, &h5, &d3, &d5, &ping].concat();
        let want = [PREFACE, &settings, &h1, &h3, &d1, &d3, &ping].concat();
        for step in 1..wire.len() {
            let (passed, cutoff) = through(2, &wire, step);
            assert_eq!(passed, want, "step {step}");
            assert_eq!(cutoff, Some(3));
        }
        let (passed, cutoff) = through(3, &wire, 7);
        assert_eq!((passed, cutoff), (wire.clone(), Some(5)));
        let (passed, cutoff) = through(4, &wire, 7);
        assert_eq!((passed, cutoff), (wire, None));
    }

    #[test]
    fn trailers_do_not_count_as_new_streams() {
        let wire = [
            PREFACE,
            &frame(HEADERS, 1, b"head"),
            &frame(HEADERS, 1, b"trailers"),
            &frame(HEADERS, 3, b"head"),
        ]
        .concat();
        assert_eq!(through(2, &wire, 5), (wire.clone(), Some(3)));
    }
}
