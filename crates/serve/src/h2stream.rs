//! One HTTP/2 stream: read the request, choose the reply as HTTP/1.1 does
//! (`route` and `reply`), and send it as frames: HEADERS, DATA in pieces
//! the client's flow-control window allows, trailers for `/chunked`.
//!
//! Each stream runs in its own task, so streams on one connection are
//! answered independently: a `/delay/MS` or `--delay` holds back only its
//! own stream. With `--capacity` each stream is one request in the
//! server's queue, joining it once its request is read in full. What the connection as a whole must do (a GOAWAY after
//! `--close-every` or `/close`, a fault that ends the connection) goes to
//! the connection's task (`h2conn`) as a [`ConnEvent`], since only it
//! holds the connection.
//!
//! Faults take their stream form (README, Faults): `short-body` and
//! `huge-head` are responses, `trickle` sends one body byte per DATA
//! frame, `never-answer` holds the stream open; the `close-*` faults,
//! `reset`, `garbage` and `bad-status-line` end the whole connection.
//! `--h2-reset` answers a share of streams with RST_STREAM instead.
//!
//! An event stream (`--sse`) is HEADERS at once, then one DATA frame per
//! event as each falls due, END_STREAM with the last. The wire holds every
//! frame back during a stall; the head and each event also wait out the
//! stall here, so that the events are timed from when the head could go
//! out and each is counted when it can.

use std::future::{pending, poll_fn};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream, SendStream};
use http::header::{
    HeaderMap, HeaderName, HeaderValue, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, TRAILER,
};
use http::{Method, Request};
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::sleep;

use super::config::Sse;
use super::fault::Fault;
use super::fault_bytes::{fault_body_len, HUGE_FIELDS, HUGE_PAD_LEN};
use super::reply::{chunk_size, Body, Reply, Response, BAD_REQUEST_BODY, FILL, TRAILER_NAME};
use super::request::capture_with;
use super::route::{default_body, reply_for, Ask, Defaults, Route};
use super::shared::{sleep_past, Shared};
use super::sse;
use super::stats::RecordedRequest;

/// Largest DATA frame sent: the smallest maximum frame size a client may
/// allow (RFC 9113 section 4.2).
const PIECE: usize = 16 * 1024;
/// The bytes every DATA frame of a generated body is cut from.
static FILLER: [u8; PIECE] = [FILL; PIECE];
/// [`TRAILER_NAME`] as HTTP/2 spells field names: in lower case.
const TRAILER_FIELD: &str = "x-body-bytes";
/// The error code of an `--h2-reset` RST_STREAM unless `--h2-reset-code`
/// says otherwise (README, `metron serve`).
pub(crate) const RESET_REASON: Reason = Reason::INTERNAL_ERROR;

/// What a stream asks of its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnEvent {
    /// Go away gracefully: GOAWAY, finish the streams already open, close.
    GoAway,
    /// A fault ends the connection this way.
    End(Ending),
}

/// How a fault ends an HTTP/2 connection. Each first lets out what was
/// already answered on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Close (FIN) with no GOAWAY: the `close-*` faults.
    Close,
    /// Reset the TCP connection: the `reset` fault.
    Reset,
    /// Raw bytes that are no HTTP/2 frames, then close: `garbage`.
    Garbage,
    /// GOAWAY with PROTOCOL_ERROR, then close: `bad-status-line`.
    ProtocolError,
}

/// What the streams of one connection share.
#[derive(Debug)]
pub(crate) struct Link {
    pub shared: Arc<Shared>,
    /// The fault plan picked this connection (`--fault-per connection`).
    faulty: bool,
    /// Requests read in full so far, for `--close-every`.
    answered: AtomicU64,
    in_flight: AtomicU64,
    events: UnboundedSender<ConnEvent>,
}

impl Link {
    /// The link of a connection the fault plan did (`faulty`) or did not
    /// pick, whose task hears `events`.
    pub(crate) fn new(
        shared: Arc<Shared>,
        faulty: bool,
        events: UnboundedSender<ConnEvent>,
    ) -> Link {
        Link {
            faulty,
            shared,
            answered: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            events,
        }
    }

    fn tell(&self, event: ConnEvent) {
        // The connection's task may be gone already; then so is the news.
        let _ = self.events.send(event);
    }
}

/// Counts a stream in flight from its accept until its task ends.
struct InFlight(Arc<Link>);

impl InFlight {
    fn new(link: &Arc<Link>) -> InFlight {
        let on_connection = link.in_flight.fetch_add(1, Relaxed) + 1;
        link.shared.stats.h2_stream_opened(on_connection);
        InFlight(Arc::clone(link))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
        self.0.shared.stats.h2_stream_closed();
    }
}

/// Serves one stream until it is answered, reset, or its connection ends.
pub(crate) async fn serve(
    link: Arc<Link>,
    request: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
) {
    let _in_flight = InFlight::new(&link);
    let arrival = Instant::now();
    let Some(ask) = read_request(&link, request).await else {
        return;
    };
    let shared = &link.shared;
    // Read in full: now it joins the queue of --capacity, if any.
    let served = shared.book_now();
    if shared.reset_due() {
        let code = shared.cfg.http2.and_then(|h2| h2.reset_code);
        let reason = code.map_or(RESET_REASON, Reason::from);
        // A refused stream was never processed: it is refused at once.
        if reason != Reason::REFUSED_STREAM {
            delay(shared, arrival, served, ask.route.delay()).await;
        }
        respond.send_reset(reason);
        shared.stats.h2_reset();
        return;
    }
    let defaults = Defaults {
        canned: false,
        ..shared.defaults
    };
    let reply = match reply_for(ask, defaults) {
        Reply::Fault { fault, .. } if !fault.has_http2_form() => Reply::BadRequest,
        reply => reply,
    };
    match reply {
        Reply::Fault { .. } => shared.stats.fault_injected(),
        _ => shared.stats.responded(reply.status()),
    }
    delay(shared, arrival, served, ask.route.delay()).await;
    let sent = match reply {
        Reply::Send(response) => send(shared, &mut respond, response, None).await,
        Reply::Canned { head_only, .. } => {
            let response = default_response(defaults, head_only);
            send(shared, &mut respond, response, None).await
        }
        Reply::BadRequest => bad_request(&mut respond),
        Reply::Fault { fault, base } => inject(&link, &mut respond, fault, base).await,
    };
    if sent.is_ok() && ask.closes() {
        link.tell(ConnEvent::GoAway);
    }
}

/// Reads the request in full (recording it while inspecting) and says
/// what it asks; `None` if the client gave up on it first.
async fn read_request(link: &Link, request: Request<RecvStream>) -> Option<Ask> {
    let (parts, mut body) = request.into_parts();
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let stats = &link.shared.stats;
    let mut capture = capture_with(stats, target, || RecordedRequest {
        method: parts.method.to_string(),
        path: target.to_string(),
        version: 2,
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| (name.to_string(), value.as_bytes().to_vec()))
            .collect(),
        body: Vec::new(),
        received: std::time::Instant::now(),
    });
    let keep = capture.as_mut().and_then(|c| c.record.as_mut());
    read_body(&mut body, keep.map(|r| &mut r.body)).await.ok()?;
    stats.request_done(capture);
    let answered = link.answered.fetch_add(1, Relaxed) + 1;
    Some(Ask {
        route: Route::parse(target),
        head_only: parts.method == Method::HEAD,
        http10: false,
        close: link.shared.close_due(answered),
        fault: link.shared.fault_due(link.faulty),
    })
}

/// Reads the request body to its end, giving its window back as it goes
/// (`--h2-window` limits what is in flight, not what is read).
async fn read_body(body: &mut RecvStream, mut keep: Option<&mut Vec<u8>>) -> Result<(), h2::Error> {
    while let Some(data) = body.data().await {
        let data = data?;
        let _ = body.flow_control().release_capacity(data.len());
        if let Some(keep) = keep.as_deref_mut() {
            keep.extend_from_slice(&data);
        }
    }
    Ok(())
}

/// Waits until `--delay` plus `extra` after the request arrived, or with
/// `--capacity` after its service is over (`served`).
async fn delay(shared: &Shared, arrival: Instant, served: Option<Duration>, extra: Duration) {
    if let Some((origin, due)) = shared.response_due(arrival, served, extra) {
        sleep_past(origin, due).await;
    }
}

/// The default response, which HTTP/1.1 keeps prebuilt.
fn default_response(defaults: Defaults, head_only: bool) -> Response {
    Response {
        status: 200,
        body: default_body(defaults.body_size, defaults),
        connection: super::reply::Connection::Omit,
        head_only,
    }
}

/// Sends `response`: its body whole, or (`trickle`) one byte per DATA
/// frame with that pause before each, or its events as they fall due.
async fn send(
    shared: &Shared,
    respond: &mut SendResponse<Bytes>,
    response: Response,
    trickle: Option<Duration>,
) -> Result<(), h2::Error> {
    // HTTP/2 has no chunked coding or close-delimited bodies: DATA frames
    // carry the body and END_STREAM ends it.
    let (len, length_header, trailer, piece) = match response.body {
        Body::Empty => (0, None, false, PIECE as u64),
        Body::Length(n) => (n, Some(n), false, PIECE as u64),
        Body::Chunked { len, trailer } => (len, None, trailer, chunk_size(len)),
        Body::UntilClose(n) => (n, None, false, PIECE as u64),
        Body::Events { sse, .. } => return send_events(shared, respond, response, sse).await,
    };
    let head = head(response.status, length_header, trailer)?;
    let bodiless = len == 0 && !trailer && trickle.is_none();
    if response.head_only || bodiless {
        respond.send_response(head, true)?;
        return Ok(());
    }
    let mut stream = respond.send_response(head, false)?;
    match trickle {
        Some(interval) => trickle_body(&mut stream, len, interval, !trailer).await?,
        None => send_fill(&mut stream, len, piece, !trailer).await?,
    }
    if trailer {
        let mut trailers = HeaderMap::new();
        trailers.insert(
            HeaderName::from_static(TRAILER_FIELD),
            HeaderValue::from(len),
        );
        stream.send_trailers(trailers)?;
    }
    Ok(())
}

/// Sends an event stream: HEADERS at once, then each event in a DATA frame
/// of its own once it is due, timed from the head (so a late frame does
/// not delay the rest), END_STREAM with the last.
async fn send_events(
    shared: &Shared,
    respond: &mut SendResponse<Bytes>,
    response: Response,
    sse: Sse,
) -> Result<(), h2::Error> {
    let mut head = head(response.status, None, false)?;
    let headers = head.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    // Keeps a proxy from holding the stream back.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if response.head_only || sse.events == 0 {
        respond.send_response(head, true)?;
        return Ok(());
    }
    // The wire would hold HEADERS back during a stall anyway; waiting here
    // times the events from when the head can go out, as HTTP/1.1 does.
    shared.wait_out_stall().await;
    let mut stream = respond.send_response(head, false)?;
    let start = Instant::now();
    for i in 1..=sse.events {
        sleep_past(start, sse::due(sse, i)).await;
        shared.wait_out_stall().await;
        shared.stats.sse_events_written(1);
        let mut event = Vec::new();
        sse::write_event(&mut event, i, sse.events);
        send_bytes(&mut stream, Bytes::from(event), i == sse.events).await?;
    }
    Ok(())
}

/// Sends `bytes` in as few DATA frames as the client's window allows
/// (one, unless it is nearly shut); `end` ends the stream with the last.
async fn send_bytes(
    stream: &mut SendStream<Bytes>,
    mut bytes: Bytes,
    end: bool,
) -> Result<(), h2::Error> {
    while !bytes.is_empty() {
        let n = room(stream, bytes.len()).await?.min(bytes.len());
        let frame = bytes.split_to(n);
        stream.send_data(frame, end && bytes.is_empty())?;
    }
    Ok(())
}

/// A response head: the status, `text/plain`, and the length or the
/// trailer it announces.
fn head(status: u16, length: Option<u64>, trailer: bool) -> Result<http::Response<()>, h2::Error> {
    let mut head = http::Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "text/plain");
    if let Some(n) = length {
        head = head.header(CONTENT_LENGTH, n);
    }
    if trailer {
        head = head.header(TRAILER, TRAILER_NAME);
    }
    // Statuses come from routes (200 to 999), which all build.
    head.body(())
        .map_err(|_| h2::Error::from(Reason::INTERNAL_ERROR))
}

/// Sends `len` body bytes in DATA frames of at most `piece` bytes, each
/// once the client's window has room for it; `end` ends the stream with
/// the last one.
async fn send_fill(
    stream: &mut SendStream<Bytes>,
    len: u64,
    piece: u64,
    end: bool,
) -> Result<(), h2::Error> {
    let piece = piece.clamp(1, PIECE as u64);
    let mut left = len;
    while left > 0 {
        let want = left.min(piece) as usize;
        let n = room(stream, want).await?.min(want);
        left -= n as u64;
        stream.send_data(Bytes::from_static(&FILLER[..n]), end && left == 0)?;
    }
    if len == 0 && end {
        stream.send_data(Bytes::new(), true)?;
    }
    Ok(())
}

/// Waits until the stream may send some of `want` bytes; returns how many.
async fn room(stream: &mut SendStream<Bytes>, want: usize) -> Result<usize, h2::Error> {
    stream.reserve_capacity(want);
    loop {
        let room = stream.capacity();
        if room > 0 {
            return Ok(room);
        }
        match poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(e),
            None => return Err(Reason::STREAM_CLOSED.into()),
        }
    }
}

/// Sends `len` body bytes one per DATA frame, `interval` before each (one
/// empty frame for an empty body, so that it too takes its time).
async fn trickle_body(
    stream: &mut SendStream<Bytes>,
    len: u64,
    interval: Duration,
    end: bool,
) -> Result<(), h2::Error> {
    for sent in 0..len.max(1) {
        sleep(interval).await;
        let last = sent + 1 >= len;
        send_fill(stream, (len - sent).min(1), 1, end && last).await?;
    }
    Ok(())
}

/// The 400 for a route with an unusable parameter. Unlike HTTP/1.1 the
/// connection stays open: the request was framed well, only its path is
/// wrong.
fn bad_request(respond: &mut SendResponse<Bytes>) -> Result<(), h2::Error> {
    let head = head(400, Some(BAD_REQUEST_BODY.len() as u64), false)?;
    let mut stream = respond.send_response(head, false)?;
    stream.send_data(Bytes::from_static(BAD_REQUEST_BODY), true)
}

/// Does what `fault` does on a stream in place of `base`. Faults that end
/// the connection never return: the connection's task ends this one.
async fn inject(
    link: &Link,
    respond: &mut SendResponse<Bytes>,
    fault: Fault,
    base: Response,
) -> Result<(), h2::Error> {
    let ending = match fault {
        Fault::CloseBeforeHead => Ending::Close,
        Fault::Reset => Ending::Reset,
        Fault::Garbage => Ending::Garbage,
        Fault::BadStatusLine => Ending::ProtocolError,
        Fault::CloseMidBody => {
            let len = fault_body_len(&base);
            let mut stream = respond.send_response(head(base.status, Some(len), false)?, false)?;
            send_fill(&mut stream, len / 2, PIECE as u64, false).await?;
            return end_connection(link, Ending::Close).await;
        }
        Fault::ShortBody => {
            let len = fault_body_len(&base);
            let mut stream = respond.send_response(head(base.status, Some(len), false)?, false)?;
            return send_fill(&mut stream, len - 1, PIECE as u64, true).await;
        }
        Fault::NeverAnswer => {
            // Until the client resets the stream, or the connection ends.
            let reason = poll_fn(|cx| respond.poll_reset(cx)).await?;
            return Err(reason.into());
        }
        Fault::HugeHead => {
            respond.send_response(huge_head(base.status)?, true)?;
            return Ok(());
        }
        Fault::Trickle => {
            let interval = link.shared.cfg.trickle_interval;
            return send(&link.shared, respond, base, Some(interval)).await;
        }
        Fault::CloseMidHead | Fault::BadChunk => return bad_request(respond),
    };
    end_connection(link, ending).await
}

/// Asks the connection's task to end the connection, and waits for it to:
/// the stream (whose handles the caller keeps) must stay open until then,
/// or the library would reset it first.
async fn end_connection(link: &Link, ending: Ending) -> Result<(), h2::Error> {
    link.tell(ConnEvent::End(ending));
    pending().await
}

/// A valid response whose header block is over 1 MiB: `huge-head`'s
/// padding fields, with an empty body.
fn huge_head(status: u16) -> Result<http::Response<()>, h2::Error> {
    static PAD: [u8; HUGE_PAD_LEN] = [b'p'; HUGE_PAD_LEN];
    let mut head = head(status, Some(0), false)?;
    let pad = HeaderValue::from_maybe_shared(Bytes::from_static(&PAD))
        .map_err(|_| h2::Error::from(Reason::INTERNAL_ERROR))?;
    let name = HeaderName::from_static("x-pad");
    for _ in 0..HUGE_FIELDS {
        head.headers_mut().append(name.clone(), pad.clone());
    }
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trailer_field_is_the_announced_one() {
        assert!(TRAILER_FIELD.eq_ignore_ascii_case(TRAILER_NAME));
        assert_eq!(TRAILER_FIELD, TRAILER_FIELD.to_ascii_lowercase());
    }

    #[test]
    fn heads_announce_length_and_trailer() {
        let plain = head(503, Some(7), false).unwrap();
        assert_eq!(plain.status(), 503);
        assert_eq!(plain.headers()[CONTENT_LENGTH], "7");
        assert_eq!(plain.headers()[CONTENT_TYPE], "text/plain");
        let chunked = head(200, None, true).unwrap();
        assert!(chunked.headers().get(CONTENT_LENGTH).is_none());
        assert_eq!(chunked.headers()[TRAILER], TRAILER_NAME);
        let huge = huge_head(200).unwrap();
        // The size a client limits: each field's name and value plus 32
        // (RFC 9113 section 6.5.2).
        let size: usize = huge
            .headers()
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len() + 32)
            .sum();
        assert!(size > 1 << 20, "{size}");
        assert_eq!(huge.headers().get_all("x-pad").iter().count(), HUGE_FIELDS);
    }
}
