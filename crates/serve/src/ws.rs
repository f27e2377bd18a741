//! An upgraded WebSocket connection (`--ws`): the HTTP/1.1 loop (`conn`)
//! has written the `101` and hands over the byte stream, with whatever
//! the client sent after its upgrade request.
//!
//! One loop serves both endpoints. It reads the client's frames, which
//! must be masked (an unmasked one is closed with 1002), reassembles
//! fragmented messages, answers a ping with a pong and a close with a
//! close that carries the same code. `/ws/echo` sends each message back
//! with its opcode once it is due: `--delay` plus `delay=MS` after it
//! came, in the order they came. `/ws/push` sends `event 1` to `event N`
//! on its timetable, each due at its offset from the upgrade (not from
//! the write before, so a late one delays no other), then closes with
//! 1000. While it waits the loop goes on reading, so pings and closes are
//! answered meanwhile. While echoes are held back, what is read is
//! acknowledged at once (`TCP_QUICKACK`): a delayed ACK would hold a
//! client's next messages back in its own stack (Nagle's algorithm), and
//! they would come, and go back, late and together.
//!
//! No byte goes out during a stall (`--stall-*`): every write waits for
//! the stall's end first, and the loop reads nothing meanwhile, as the
//! HTTP/1.1 loop does. A message is counted as sent once its last byte is
//! written to the socket: one the client left before getting is not.
//!
//! Once the server has sent its close (its own `close=CODE`, the push's
//! end, or a protocol error's code) it reads on only for the client's
//! close, at most [`CLOSE_WAIT`], then ends the connection, as section
//! 7.1.1 asks of a server. When the server shuts down it closes every
//! connection so with 1001 (going away), waiting [`GOING_AWAY_WAIT`].

use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

use metron_ws::{FrameError, Opcode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::shared::{linger, sleep_past, Shared, Stream};
use super::sse::Pace;
use super::upgrade::{Endpoint, Plan};

/// The most bytes of pushed messages put out at once (see `Endpoint::Push`).
const PUSH_BATCH: usize = 64 * 1024;

/// Longest message (all its fragments) read; a longer one is closed with
/// 1009.
const MAX_MESSAGE: usize = 16 << 20;
/// Messages read and not yet echoed: past this many the loop reads no
/// more until some are sent, so a slow echo (`delay=MS`) cannot make the
/// server buffer without bound.
const MAX_PENDING: usize = 4096;
/// How long a server that has sent its close waits for the client's.
pub(crate) const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// How long a server shutting down waits for the client's close after
/// its 1001.
pub(crate) const GOING_AWAY_WAIT: Duration = Duration::from_secs(1);
/// The code a server shutting down closes with (RFC 6455 section 7.4.1).
const GOING_AWAY: u16 = 1001;
/// Reads ask for at least this much room.
const READ_ROOM: usize = 16 * 1024;

/// Serves the upgraded `stream` as `plan` says until either side closes;
/// `input` holds what the client sent after its upgrade request.
pub(crate) async fn serve<S: Stream>(stream: &mut S, input: Vec<u8>, shared: &Shared, plan: Plan) {
    let _open = shared.ws_opened();
    let mut session = Session {
        stream,
        shared,
        plan,
        input,
        out: Vec::with_capacity(READ_ROOM),
        ends: Vec::new(),
        partial: None,
        pending: VecDeque::new(),
        sent: 0,
        start: Instant::now(),
        away: shared.going_away(),
    };
    match session.run().await {
        // The close handshake is over (or timed out): the server ends
        // the TCP connection first, as section 7.1.1 asks.
        Ok(End::Closed) => {
            let mut scratch = std::mem::take(&mut session.input);
            linger(session.stream, &mut scratch).await;
        }
        // The client went away, or an I/O error said so.
        Ok(End::Gone) | Err(_) => {}
    }
}

/// How a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Both closes went (or the client's never came in time).
    Closed,
    /// The connection ended without a close handshake.
    Gone,
}

/// What the frames read so far amount to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Heard {
    /// Nothing that ends the session.
    More,
    /// The client closed with this code (1005: with none); the server's
    /// close went back.
    Closed,
    /// The client broke the protocol: close with this code.
    Broken(u16),
}

/// What woke the loop.
enum Woke {
    Read(io::Result<usize>),
    Due,
    /// The server is shutting down.
    Away,
}

struct Session<'a, S> {
    stream: &'a mut S,
    shared: &'a Shared,
    plan: Plan,
    input: Vec<u8>,
    out: Vec<u8>,
    /// Where each message (not control frame) in `out` ends, in order:
    /// it counts as sent once the bytes up to there are written.
    ends: Vec<usize>,
    /// The fragments of the message being read, and its opcode.
    partial: Option<(Opcode, Vec<u8>)>,
    /// Whole messages read and not yet echoed: when each came, its
    /// opcode and payload.
    pending: VecDeque<(Instant, Opcode, Vec<u8>)>,
    /// Messages sent so far (echoes or pushes).
    sent: u64,
    /// The upgrade: the push's timetable counts from here.
    start: Instant,
    /// Turns `true` when the server shuts down.
    away: tokio::sync::watch::Receiver<bool>,
}

impl<S: Stream> Session<'_, S> {
    async fn run(&mut self) -> io::Result<End> {
        // `close=CODE` with `after=0`: at once.
        if let Some(code) = self.close_due() {
            return self.close(code, CLOSE_WAIT).await;
        }
        loop {
            match self.take_frames() {
                Heard::More => {}
                Heard::Closed => {
                    self.flush().await?;
                    return Ok(End::Closed);
                }
                Heard::Broken(code) => return self.close(code, CLOSE_WAIT).await,
            }
            if let Some(code) = self.send_due().await? {
                return self.close(code, CLOSE_WAIT).await;
            }
            // Pongs go out now, not with the next message.
            self.flush().await?;
            let due = self.next_due();
            let timed = due.is_some();
            let (origin, offset) = due.unwrap_or((self.start, Duration::MAX));
            let can_read = self.pending.len() < MAX_PENDING;
            if self.input.capacity() - self.input.len() < READ_ROOM / 2 {
                self.input.reserve(READ_ROOM);
            }
            // Both disabled cannot happen (a full queue has a message
            // due); were it to, the loop goes round and sends.
            let woke = tokio::select! {
                read = self.stream.read_buf(&mut self.input), if can_read => Woke::Read(read),
                () = sleep_past(origin, offset), if timed => Woke::Due,
                () = std::future::ready(()), if !can_read && !timed => Woke::Due,
                () = going_away(&mut self.away) => Woke::Away,
            };
            match woke {
                Woke::Read(read) => {
                    let n = read?;
                    if n == 0 {
                        return Ok(End::Gone);
                    }
                    self.shared.stats.received(n);
                    self.ack_now();
                }
                Woke::Due => {}
                // Echoes not yet due are not sent.
                Woke::Away => return self.close(GOING_AWAY, GOING_AWAY_WAIT).await,
            }
        }
    }

    /// Acknowledges what was just read at once while echoes are held back
    /// (`delay=MS`, `--delay`): no echo goes back soon to carry the ACK,
    /// and a client that sends its next message only once the last is
    /// acknowledged (Nagle's algorithm, on by default) would otherwise
    /// wait for the delayed ACK (40 ms on Linux), making that message and
    /// its echo late.
    fn ack_now(&self) {
        #[cfg(target_os = "linux")]
        if self.plan.endpoint == Endpoint::Echo && !self.echo_delay().is_zero() {
            // Only ever a matter of timing: nothing to do if it fails.
            let _ = self.stream.tcp().set_quickack(true);
        }
    }

    /// Acts on every whole frame in the input buffer.
    fn take_frames(&mut self) -> Heard {
        let mut at = 0;
        let heard = loop {
            let (fin, opcode, payload, used) =
                match metron_ws::parse_masked(&self.input[at..], MAX_MESSAGE) {
                    Ok(None) => break Heard::More,
                    Ok(Some((frame, used))) => {
                        let mut payload = frame.payload.to_vec();
                        if let Some(mask) = frame.mask {
                            metron_ws::apply_mask(&mut payload, mask);
                        }
                        (frame.fin, frame.opcode, payload, used)
                    }
                    Err(FrameError::TooLong { .. }) => break Heard::Broken(1009),
                    Err(_) => break Heard::Broken(1002),
                };
            at += used;
            match self.on_frame(fin, opcode, payload) {
                Heard::More => {}
                other => break other,
            }
        };
        self.input.drain(..at.min(self.input.len()));
        heard
    }

    /// Acts on one frame.
    fn on_frame(&mut self, fin: bool, opcode: Opcode, payload: Vec<u8>) -> Heard {
        match opcode {
            Opcode::Ping => self.control(Opcode::Pong, &payload),
            Opcode::Pong => {}
            Opcode::Close => {
                let Some((code, _)) = metron_ws::close_payload(&payload) else {
                    return Heard::Broken(1002);
                };
                let code = code.unwrap_or(NO_STATUS);
                self.shared.stats.ws_close_received(code);
                // The client's code goes back, as section 5.5.1 has it.
                let echoed = if code == NO_STATUS {
                    &[][..]
                } else {
                    &payload[..2]
                };
                self.control(Opcode::Close, echoed);
                self.shared.stats.ws_close_sent(code);
                return Heard::Closed;
            }
            Opcode::Text | Opcode::Binary | Opcode::Continuation => {
                let starts = opcode != Opcode::Continuation;
                match (&mut self.partial, starts) {
                    (None, true) => self.partial = Some((opcode, payload)),
                    (Some((_, sofar)), false) => {
                        if sofar.len() + payload.len() > MAX_MESSAGE {
                            return Heard::Broken(1009);
                        }
                        sofar.extend_from_slice(&payload);
                    }
                    // A continuation of nothing, or a new message inside one.
                    _ => return Heard::Broken(1002),
                }
                if fin {
                    let Some((kind, message)) = self.partial.take() else {
                        return Heard::Broken(1002);
                    };
                    if kind == Opcode::Text && std::str::from_utf8(&message).is_err() {
                        return Heard::Broken(1007);
                    }
                    self.shared.stats.ws_message_received();
                    // A push answers nothing: what the client says is
                    // counted and dropped.
                    if self.plan.endpoint == Endpoint::Echo {
                        self.pending.push_back((Instant::now(), kind, message));
                    }
                }
            }
        }
        Heard::More
    }

    /// Appends a control frame.
    fn control(&mut self, opcode: Opcode, payload: &[u8]) {
        metron_ws::encode_unmasked(&mut self.out, true, opcode, payload);
    }

    /// When the next message is due, as an origin and an offset from it
    /// (for `sleep_past`); `None` when none is waiting.
    fn next_due(&self) -> Option<(Instant, Duration)> {
        match self.plan.endpoint {
            Endpoint::Echo => {
                let (came, _, _) = self.pending.front()?;
                Some((*came, self.echo_delay()))
            }
            Endpoint::Push if self.sent < self.plan.push.events => {
                Some((self.start, self.pace().due(self.sent + 1)))
            }
            Endpoint::Push => None,
        }
    }

    fn pace(&self) -> Pace {
        Pace {
            first: self.plan.push.first,
            gap: self.plan.push.gap,
        }
    }

    fn echo_delay(&self) -> Duration {
        self.shared.cfg.delay.saturating_add(self.plan.delay)
    }

    /// Sends every message that is due, together; returns the code to
    /// close with if the last of them was the last to send.
    async fn send_due(&mut self) -> io::Result<Option<u16>> {
        let mut ready = 0;
        match self.plan.endpoint {
            Endpoint::Echo => {
                let delay = self.echo_delay();
                while let Some((came, _, _)) = self.pending.front() {
                    if !delay.is_zero() && came.elapsed() < delay {
                        break;
                    }
                    let Some((_, opcode, message)) = self.pending.pop_front() else {
                        break;
                    };
                    metron_ws::encode_unmasked(&mut self.out, true, opcode, &message);
                    self.ends.push(self.out.len());
                    ready += 1;
                    if self.close_due_after(self.sent + ready) {
                        break;
                    }
                }
            }
            Endpoint::Push => {
                let (events, pace) = (self.plan.push.events, self.pace());
                // A batch at most: a push with no gap has every message due
                // at once, and writing them out a batch at a time lets a
                // client that reads slowly (or left) hold it back.
                while self.sent + ready < events
                    && self.out.len() < PUSH_BATCH
                    && self.start.elapsed() >= pace.due(self.sent + ready + 1)
                {
                    let text = format!("event {}", self.sent + ready + 1);
                    metron_ws::encode_unmasked(&mut self.out, true, Opcode::Text, text.as_bytes());
                    self.ends.push(self.out.len());
                    ready += 1;
                    if self.close_due_after(self.sent + ready) {
                        break;
                    }
                }
            }
        }
        if ready == 0 {
            return Ok(None);
        }
        // Counted in the stats as their bytes are written (`flush`).
        self.sent += ready;
        self.flush().await?;
        Ok(self.close_due())
    }

    /// Whether the server closes once it has sent `sent` messages: with
    /// `close=CODE` after `after=N` of them; a push after its last one
    /// at the latest.
    fn close_due_after(&self, sent: u64) -> bool {
        let after = self.plan.close.map(|(_, after)| after);
        match self.plan.endpoint {
            Endpoint::Echo => after.is_some_and(|after| sent >= after),
            Endpoint::Push => {
                let events = self.plan.push.events;
                sent >= after.map_or(events, |after| after.min(events))
            }
        }
    }

    /// The code the server closes with now, if it closes now.
    fn close_due(&self) -> Option<u16> {
        if !self.close_due_after(self.sent) {
            return None;
        }
        Some(self.plan.close.map_or(1000, |(code, _)| code))
    }

    /// Sends the server's close with `code`, then waits (at most `wait`)
    /// for the client's, counting it; what else comes meanwhile is read
    /// and dropped.
    async fn close(&mut self, code: u16, wait: Duration) -> io::Result<End> {
        self.control(Opcode::Close, &code.to_be_bytes());
        self.shared.stats.ws_close_sent(code);
        self.flush().await?;
        let deadline = Instant::now() + wait;
        let mut at = 0;
        loop {
            loop {
                match metron_ws::parse_masked(&self.input[at..], MAX_MESSAGE) {
                    Ok(Some((frame, used))) => {
                        at += used;
                        if frame.opcode != Opcode::Close {
                            continue;
                        }
                        let mut payload = frame.payload.to_vec();
                        if let Some(mask) = frame.mask {
                            metron_ws::apply_mask(&mut payload, mask);
                        }
                        let code = metron_ws::close_payload(&payload)
                            .and_then(|(code, _)| code)
                            .unwrap_or(NO_STATUS);
                        self.shared.stats.ws_close_received(code);
                        return Ok(End::Closed);
                    }
                    Ok(None) => break,
                    // Nothing more the client says is read as frames.
                    Err(_) => return Ok(End::Closed),
                }
            }
            self.input.drain(..at);
            at = 0;
            if self.input.capacity() - self.input.len() < READ_ROOM / 2 {
                self.input.reserve(READ_ROOM);
            }
            let read =
                tokio::time::timeout_at(deadline.into(), self.stream.read_buf(&mut self.input));
            match read.await {
                Ok(Ok(0)) => return Ok(End::Gone),
                Ok(Ok(n)) => self.shared.stats.received(n),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Ok(End::Closed),
            }
        }
    }

    /// Writes what is in the output buffer, once no stall holds it back,
    /// counting each message as sent once its last byte is written.
    async fn flush(&mut self) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        self.shared.wait_out_stall().await;
        let (mut written, mut counted) = (0, 0);
        // Each round writes at least a byte or ends the loop.
        let result = loop {
            if written == self.out.len() {
                break self.stream.flush().await;
            }
            match self.stream.write(&self.out[written..]).await {
                Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => written += n,
                Err(e) => break Err(e),
            }
            let whole = self.ends[counted..]
                .iter()
                .take_while(|&&end| end <= written)
                .count();
            if whole > 0 {
                self.shared.stats.ws_messages_written(whole as u64);
                counted += whole;
            }
        };
        self.out.clear();
        self.ends.clear();
        result
    }
}

/// Returns once the server is shutting down (or has gone).
async fn going_away(away: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = away.wait_for(|away| *away).await;
}

/// The code that stands for a close without one (RFC 6455 section 7.4.1).
const NO_STATUS: u16 = 1005;
