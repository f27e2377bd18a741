//! One HTTP/1.1 connection: read requests, answer them in order, write the
//! bytes. (HTTP/2 is `h2conn`'s; `session` picks which one serves.)
//!
//! The loop reads whatever arrived, answers every complete request in it
//! (pipelined ones included) into one output buffer, and writes that buffer
//! with as few syscalls as possible: one per batch on the default route.
//! Both buffers live as long as the connection and are reused, so a
//! keep-alive benchmark allocates nothing per request.
//!
//! Time enters in two places. A response is not written before its due time
//! (arrival plus `--delay` plus any `/delay/MS`), and no byte is written
//! during a stall: every write waits for the stall to end first. With
//! `--capacity` every request read joins the server's one queue at once,
//! pipelined ones together and in order, and its due time counts from the
//! end of its service instead of its arrival. As without it, the next
//! requests are read once those read before are answered.
//!
//! An event stream (`--sse`, or a streamed `--llm` completion) is written
//! a piece at a time: the head at once, then each event when it is due
//! (`--sse-first` after the head went out, then `--sse-gap` apart; a
//! completion's tokens `--llm-ttft` after the request's arrival, then
//! `--llm-tpot` apart), every write flushed so the client sees the gaps;
//! the connection reads no further meanwhile, as during a delay. Events
//! go through the same stall-aware writes as every other byte, so an
//! event due during a stall waits for its end. A completion answered
//! whole goes out when its last token would have.
//!
//! A fault replaces a response: its bytes (if any) go out after everything
//! answered before it, and then it decides how the connection ends, by a
//! close, a reset, or by holding it open and silent. The same loop serves
//! plain TCP and TLS (`--tls`), through [`Stream`].

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::sleep;

use super::fault::{After, Fault};
use super::fault_bytes::FaultBytes;
use super::llm::{self, Answer, Call};
use super::reply::{
    write_events_head, write_json_head, Body, Connection, Encoder, Reply, Response, BAD_REQUEST,
    CONTINUE, HEAD_TOO_LARGE,
};
use super::request::{Event, Head, Reader};
use super::route::{connection, reply_for, Ask};
use super::shared::{linger, reset, sleep_past, Shared, Stream};
use super::sse::{self, Feed};
use super::upgrade::{Plan, Upgrade};
use super::ws;

/// Output is written once this much has piled up, even mid-batch.
const FLUSH_AT: usize = 64 * 1024;
/// Reads ask for at least this much room.
const READ_ROOM: usize = 8 * 1024;
/// A trickled response is encoded this much at a time.
const TRICKLE_PIECE: usize = 4096;

/// Serves HTTP/1.1 on one connection until either side ends it.
pub(crate) async fn serve<S: Stream>(stream: S, shared: Arc<Shared>) {
    let mut conn = Conn::new(stream, shared);
    match conn.run().await {
        Ok(Ending::ServerCloses) => linger(&mut conn.stream, &mut conn.input).await,
        Ok(Ending::Reset) => reset(&conn.stream),
        Ok(Ending::Hold) => conn.hold().await,
        Ok(Ending::WebSocket(plan)) => {
            let input = std::mem::take(&mut conn.input);
            ws::serve(&mut conn.stream, input, &conn.shared, plan).await;
        }
        // An I/O error means the client went away: nothing to tell anyone.
        Ok(Ending::ClientClosed) | Err(_) => {}
    }
}

/// How a connection ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    ClientClosed,
    /// Close politely (see [`Conn::linger`]).
    ServerCloses,
    /// Close with a reset (`--fault reset`).
    Reset,
    /// Stay open and silent until the client leaves (`--fault never-answer`).
    Hold,
    /// The `101` went out: WebSocket (`ws`) has the connection now.
    WebSocket(Plan),
}

struct Conn<S> {
    stream: S,
    shared: Arc<Shared>,
    input: Vec<u8>,
    out: Vec<u8>,
    reader: Reader,
    /// Responses so far, for `--close-every`.
    answered: u64,
    /// The fault plan picked this connection (`--fault-per connection`).
    faulty: bool,
    /// With `--capacity`: what one read amounted to, each request with
    /// the end of its service. Kept to be reused.
    batch: Vec<(Event, Option<Duration>)>,
}

impl<S: Stream> Conn<S> {
    fn new(stream: S, shared: Arc<Shared>) -> Conn<S> {
        let faulty = shared.connection_faulty();
        let llm = shared.cfg.llm.is_some();
        let reader = Reader::new(shared.tokens.key().clone())
            .with_llm(llm)
            .with_ws(shared.cfg.ws, shared.cfg.sse);
        Conn {
            stream,
            shared,
            input: Vec::with_capacity(READ_ROOM),
            out: Vec::with_capacity(READ_ROOM),
            reader,
            answered: 0,
            faulty,
            batch: Vec::new(),
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
            let ending = self.answer_buffered(Instant::now()).await?;
            self.flush().await?;
            if let Some(ending) = ending {
                return Ok(ending);
            }
        }
    }

    /// Answers every complete request in the input buffer; returns how the
    /// connection ends, if one of the answers ends it.
    async fn answer_buffered(&mut self, arrival: Instant) -> io::Result<Option<Ending>> {
        if self.shared.cfg.capacity.is_some() {
            return self.answer_queued(arrival).await;
        }
        let mut pos = 0;
        let ending = loop {
            let (used, event) = self.reader.step(&self.input[pos..], &self.shared.stats);
            pos += used;
            match event {
                Event::NeedMore => break None,
                Event::Continue => self.out.extend_from_slice(CONTINUE),
                Event::Request(head) => {
                    if let Some(ending) = self.answer(head, arrival, None).await? {
                        break Some(ending);
                    }
                }
                Event::Bad | Event::TooLarge => {
                    self.shared.stats.bad_request();
                    break self
                        .send(event.bad_reply(), arrival, None, Duration::ZERO)
                        .await?;
                }
            }
        };
        self.input.drain(..pos);
        Ok(ending)
    }

    /// [`Self::answer_buffered`] with `--capacity`: first every complete
    /// request in the input buffer joins the queue, in order, since they
    /// all arrived with this read; then each is answered once its service
    /// is over. A bad request is served too, with its 400.
    async fn answer_queued(&mut self, arrival: Instant) -> io::Result<Option<Ending>> {
        let mut batch = std::mem::take(&mut self.batch);
        let mut pos = 0;
        loop {
            let (used, event) = self.reader.step(&self.input[pos..], &self.shared.stats);
            pos += used;
            let served = match event {
                Event::NeedMore => break,
                Event::Continue => None,
                // An upgrade is no response: it takes no place in the
                // queue, and its messages are answered by `ws`.
                Event::Request(ref head) if head.ws.is_some() => None,
                Event::Request(_) | Event::Bad | Event::TooLarge => self.shared.book(arrival),
            };
            let bad = matches!(event, Event::Bad | Event::TooLarge);
            let upgrade = matches!(&event, Event::Request(head) if head.ws.is_some());
            batch.push((event, served));
            // Nothing after bytes that are not HTTP is read, nor after an
            // upgrade: what follows it is WebSocket's (`ws`).
            if bad || upgrade {
                break;
            }
        }
        self.input.drain(..pos);
        let mut ending = None;
        for (event, served) in batch.drain(..) {
            ending = match event {
                Event::NeedMore => None,
                Event::Continue => {
                    self.out.extend_from_slice(CONTINUE);
                    None
                }
                Event::Request(head) => self.answer(head, arrival, served).await?,
                Event::Bad | Event::TooLarge => {
                    self.shared.stats.bad_request();
                    let reply = event.bad_reply();
                    self.send(reply, arrival, served, Duration::ZERO).await?
                }
            };
            // What was read after the request that ends the connection
            // goes unanswered, as it would without --capacity.
            if ending.is_some() {
                break;
            }
        }
        self.batch = batch;
        Ok(ending)
    }

    /// Answers one request, which with `--capacity` is `served` at that
    /// offset from the server's start; returns how the connection ends, if
    /// it does.
    async fn answer(
        &mut self,
        mut head: Head,
        arrival: Instant,
        served: Option<Duration>,
    ) -> io::Result<Option<Ending>> {
        self.shared.stats.request_done(head.capture.take());
        self.answered += 1;
        // An upgrade is no response: the fault plan, --close-every and
        // --delay are for the messages that follow (`ws`).
        if let Some(upgrade) = head.ws.take() {
            return self.answer_upgrade(*upgrade).await;
        }
        let ask = Ask {
            route: head.route,
            head_only: head.head_only,
            http10: head.http10,
            close: !head.keep_alive || self.shared.close_due(self.answered),
            fault: self.shared.fault_due(self.faulty),
            pass: head.route.pass(&self.shared.tokens, |_| head.authorized),
        };
        // A fault spoils a call as it spoils any response.
        if let Some(call) = head.llm.take().filter(|_| ask.fault.is_none()) {
            return self.answer_llm(*call, ask, arrival, served).await;
        }
        let reply = reply_for(ask, self.shared.defaults);
        self.send(reply, arrival, served, head.route.delay()).await
    }

    /// Writes the answer to a request for a WebSocket endpoint: the `101`,
    /// after which `ws` has the connection, or a 400 naming why not,
    /// which closes it.
    async fn answer_upgrade(&mut self, upgrade: Upgrade) -> io::Result<Option<Ending>> {
        upgrade.write(&mut self.out);
        Ok(Some(match upgrade {
            Upgrade::Accept { plan, .. } => {
                self.shared.stats.ws_upgraded();
                self.shared.stats.responded(101);
                Ending::WebSocket(plan)
            }
            Upgrade::Refuse { .. } => {
                self.shared.stats.ws_upgrade_refused();
                self.shared.stats.responded(400);
                Ending::ServerCloses
            }
        }))
    }

    /// Counts, delays and writes `reply`; returns how the connection ends,
    /// if it does.
    async fn send(
        &mut self,
        reply: Reply,
        arrival: Instant,
        served: Option<Duration>,
        extra: Duration,
    ) -> io::Result<Option<Ending>> {
        match reply {
            Reply::Fault { .. } => self.shared.stats.fault_injected(),
            _ => self.shared.stats.responded(reply.status()),
        }
        self.delay(arrival, served, extra).await?;
        self.emit(reply).await
    }

    /// Holds the next response back until `--delay` plus `extra` after its
    /// request arrived, or with `--capacity` after its service is over
    /// (`served`); what is already queued goes out first, since it was due
    /// earlier. No clock is read when there is nothing to wait for.
    async fn delay(
        &mut self,
        arrival: Instant,
        served: Option<Duration>,
        extra: Duration,
    ) -> io::Result<()> {
        let Some((origin, due)) = self.shared.response_due(arrival, served, extra) else {
            return Ok(());
        };
        if origin.elapsed() < due {
            self.flush().await?;
            sleep_past(origin, due).await;
        }
        Ok(())
    }

    /// Writes `reply` (or the fault in its place); returns how the
    /// connection ends, if it does.
    async fn emit(&mut self, reply: Reply) -> io::Result<Option<Ending>> {
        match reply {
            Reply::Canned { head_only, close } => {
                if let Some(canned) = &self.shared.canned {
                    self.out.extend_from_slice(canned.get(head_only, close));
                }
                if self.out.len() >= FLUSH_AT {
                    self.flush().await?;
                }
            }
            Reply::Send(
                response @ Response {
                    body: Body::Events { sse, chunked },
                    ..
                },
            ) => {
                response.write_head(&mut self.out);
                if response.head_only {
                    self.flush().await?;
                } else {
                    // Timed from when the head went out.
                    self.stream_feed(&sse, chunked, None).await?;
                }
            }
            Reply::Send(response) => {
                let mut encoder = Encoder::new(response);
                while !encoder.fill(&mut self.out, FLUSH_AT) {
                    self.flush().await?;
                }
            }
            Reply::BadRequest => self.out.extend_from_slice(BAD_REQUEST),
            Reply::HeadTooLarge => self.out.extend_from_slice(HEAD_TOO_LARGE),
            Reply::Fault { fault, base } => return self.inject(fault, base).await,
        }
        Ok(reply.closes().then_some(Ending::ServerCloses))
    }

    /// Writes an event stream whose head is in the output buffer: the head
    /// at once (with whatever was answered before it), then each event of
    /// `feed` once it is due, timed from `origin` (an instant and an
    /// offset from it) or, without one, from when the head went out, so a
    /// late write does not delay the rest.
    async fn stream_feed(
        &mut self,
        feed: &impl Feed,
        chunked: bool,
        origin: Option<(Instant, Duration)>,
    ) -> io::Result<()> {
        // Time to first byte is the head's; a stall holds it back as it
        // would a plain response.
        self.flush().await?;
        let (start, lead) = origin.unwrap_or_else(|| (Instant::now(), Duration::ZERO));
        // Events in the output buffer from this one on, counted as they
        // go out.
        let mut unwritten = 1;
        for i in 1..=feed.events() {
            let due = lead.saturating_add(feed.due(i));
            // Events already due (on a busy machine) go out together; the
            // others each in a write of their own.
            if start.elapsed() < due || self.out.len() >= FLUSH_AT {
                self.flush_feed(feed, &mut unwritten, i).await?;
                sleep_past(start, due).await;
            }
            sse::frame(&mut self.out, feed, i, chunked);
        }
        sse::end(&mut self.out, chunked);
        // The last event goes out now, not with whatever is answered next.
        let past = feed.events().saturating_add(1);
        self.flush_feed(feed, &mut unwritten, past).await
    }

    /// Flushes the output buffer, which holds the events of `feed` from
    /// `unwritten` up to (not including) `next` at its end, counting them
    /// as written once no stall holds them back (and before the client can
    /// see them, so its count never runs ahead).
    async fn flush_feed(
        &mut self,
        feed: &impl Feed,
        unwritten: &mut u64,
        next: u64,
    ) -> io::Result<()> {
        if *unwritten < next {
            self.wait_out_stall().await;
            feed.count(&self.shared.stats, *unwritten..next);
            *unwritten = next;
        }
        self.flush().await
    }

    /// Answers a call to the stand-in model (`--llm`), which with
    /// `--capacity` is `served` at that offset from the server's start;
    /// returns how the connection ends, if it does. The head waits for
    /// `--delay` (or the queue), as any response does; a completion's
    /// tokens are timed from then.
    async fn answer_llm(
        &mut self,
        call: Call,
        ask: Ask,
        arrival: Instant,
        served: Option<Duration>,
    ) -> io::Result<Option<Ending>> {
        let llm = self.shared.cfg.llm.unwrap_or_default();
        let answer = llm::answer(llm, &call, &self.shared.stats);
        self.shared.stats.responded(answer.status());
        let origin = self
            .shared
            .response_due(arrival, served, Duration::ZERO)
            .unwrap_or((arrival, Duration::ZERO));
        self.delay(arrival, served, Duration::ZERO).await?;
        let streamed = matches!(answer, Answer::Stream(_));
        // HTTP/1.0 has no chunks: a stream ends with the connection.
        let chunked = !ask.http10;
        let connection = connection(ask.closes(), streamed && !chunked, ask.http10);
        match answer {
            Answer::Json(json) => {
                if let Some(whole) = json.whole {
                    let (start, lead) = origin;
                    let due = lead.saturating_add(whole.due);
                    if start.elapsed() < due {
                        self.flush().await?;
                        sleep_past(start, due).await;
                    }
                    self.wait_out_stall().await;
                    self.shared.stats.completion_tokens_written(whole.tokens);
                }
                let (len, allow) = (json.text.len(), json.allow);
                write_json_head(&mut self.out, json.status, len, allow, connection);
                if !call.head_only() {
                    self.out.extend_from_slice(json.text.as_bytes());
                }
                self.flush().await?;
            }
            Answer::Stream(completion) => {
                write_events_head(&mut self.out, 200, chunked, connection);
                self.stream_feed(&completion, chunked, Some(origin)).await?;
            }
        }
        Ok((connection == Connection::Close).then_some(Ending::ServerCloses))
    }

    /// Writes what `fault` writes in place of `base`, after everything
    /// answered before it; returns how the connection ends.
    async fn inject(&mut self, fault: Fault, base: Response) -> io::Result<Option<Ending>> {
        self.flush().await?;
        let mut bytes = FaultBytes::new(fault, base);
        if fault == Fault::Trickle {
            self.trickle(bytes).await?;
        } else {
            while !bytes.fill(&mut self.out, FLUSH_AT) {
                self.flush().await?;
            }
            self.flush().await?;
        }
        Ok(match fault.after(base.closes()) {
            After::KeepOpen => None,
            After::Close => Some(Ending::ServerCloses),
            After::Reset => Some(Ending::Reset),
            After::Hold => Some(Ending::Hold),
        })
    }

    /// Writes `bytes` one at a time with `--trickle-interval` between them.
    async fn trickle(&mut self, mut bytes: FaultBytes) -> io::Result<()> {
        let interval = self.shared.cfg.trickle_interval;
        let mut piece = std::mem::take(&mut self.out);
        let mut first = true;
        loop {
            let done = bytes.fill(&mut piece, TRICKLE_PIECE);
            for &byte in &piece {
                if !first {
                    sleep(interval).await;
                }
                first = false;
                self.wait_out_stall().await;
                self.stream.write_all(&[byte]).await?;
                self.stream.flush().await?;
            }
            piece.clear();
            if done {
                self.out = piece;
                return Ok(());
            }
        }
    }

    /// Writes the output buffer, never while a stall is on.
    async fn flush(&mut self) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
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
        // TLS may hold the last record back until asked.
        self.stream.flush().await
    }

    async fn wait_out_stall(&self) {
        self.shared.wait_out_stall().await;
    }

    /// Never answers again: reads and drops whatever the client sends until
    /// it closes. The task sleeps on the socket meanwhile; no timer wakes it.
    async fn hold(&mut self) {
        loop {
            self.input.clear();
            match self.stream.read_buf(&mut self.input).await {
                Ok(0) | Err(_) => return,
                Ok(n) => self.shared.stats.received(n),
            }
        }
    }
}
