//! One request and its response on a stream of HTTP/2 or HTTP/3: read the
//! request, choose the reply as HTTP/1.1 does (`route` and `reply`), and
//! send it as a head, body pieces and trailers, whichever protocol's
//! library carries them.
//!
//! The two protocols differ in their libraries' calls, not in what a
//! stream does, so that is written once, here, against [`Exchange`]: the
//! few things a stream can be told to do (send a head, a piece of body,
//! trailers; reset; wait for the client to give up). `h2stream` and
//! `h3stream` implement it, and their connections (`h2conn`, `h3conn`)
//! carry out what a stream asks of the connection as a whole
//! ([`ConnEvent`]).
//!
//! Each stream runs in its own task, so streams on one connection are
//! answered independently: a `/delay/MS` or `--delay` holds back only its
//! own stream. With `--capacity` each stream is one request in the
//! server's queue, joining it once its request is read in full.
//!
//! Faults take their stream form (README, Faults): `short-body` and
//! `huge-head` are responses, `trickle` sends one body byte per DATA
//! frame, `never-answer` holds the stream open; the `close-*` faults,
//! `reset`, `garbage` and `bad-status-line` end the whole connection.
//! `--h2-reset` and `--h3-reset` answer a share of streams with a reset
//! instead.
//!
//! A gRPC call (a request whose content type is `application/grpc`) is
//! answered as a gRPC server answers one that succeeds: a head, one empty
//! reply message, and `grpc-status: 0` in trailers, after the same delays,
//! stalls and resets as any request; a fault route has no call form.
//!
//! `/login` and `/private` read the same header fields as over HTTP/1.1
//! (HTTP/2 and HTTP/3 clients may split `Cookie` into several), and their
//! set text goes out in one DATA frame.
//!
//! An event stream (`--sse`) is the head at once, then one DATA frame per
//! event as each falls due, the stream's end with the last. The head and
//! each event wait out a stall here, so that the events are timed from
//! when the head could go out and each is counted when it can.
//!
//! With `--llm` a request for a `/v1/` path is a call to the stand-in
//! model (`llm`), its body kept as it is read. A streamed completion is
//! an event stream like `--sse`'s, one token per DATA frame, its tokens
//! timed from the request's arrival; a JSON answer is a head and one DATA
//! frame, a completion's when its last token would have been due.

use std::future::{pending, Future};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{
    HeaderMap, HeaderName, HeaderValue, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, SET_COOKIE,
    TRAILER, WWW_AUTHENTICATE,
};
use http::Method;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::sleep;

use super::body::{Both, Sink};
use super::config::H3_REQUEST_REJECTED;
use super::fault::Fault;
use super::fault_bytes::{fault_body_len, HUGE_FIELDS, HUGE_PAD_LEN};
use super::llm::{self, Answer, Call, Json, Verb};
use super::reply::{
    chunk_size, Body, Reply, Response, BAD_REQUEST_BODY, DENIED_CHALLENGE, FILL, TRAILER_NAME,
};
use super::request::capture_with;
use super::route::{default_body, reply_for, Ask, Defaults, Route};
use super::shared::{sleep_past, Shared};
use super::sse::Feed;
use super::stats::RecordedRequest;
use super::token::COOKIE_NAME;

/// Largest DATA frame sent: the smallest maximum frame size an HTTP/2
/// client may allow (RFC 9113 section 4.2), and a size HTTP/3's frames,
/// which have no such limit, are comfortable with too.
pub(crate) const PIECE: usize = 16 * 1024;
/// The bytes every DATA frame of a generated body is cut from.
static FILLER: [u8; PIECE] = [FILL; PIECE];
/// [`TRAILER_NAME`] as HTTP/2 and HTTP/3 spell field names: in lower case.
const TRAILER_FIELD: &str = "x-body-bytes";
/// HTTP/2's REFUSED_STREAM: the stream was not processed.
const H2_REFUSED_STREAM: u64 = 0x7;

/// The stream cannot be written any more: the client reset it, or the
/// connection is gone. Nothing is left to do but end the stream's task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gone;

/// One request stream as its protocol's library carries it. A response is
/// a head, then (unless the head ended the stream) body pieces, the last
/// of them or trailers ending the stream.
pub(crate) trait Exchange: Send {
    /// Reads the request body to its end, handing it to `keep` if given.
    fn read_body(
        &mut self,
        keep: Option<&mut (dyn Sink + Send)>,
    ) -> impl Future<Output = Result<(), Gone>> + Send;

    /// Sends the response head; `end` ends the stream with it.
    fn head(
        &mut self,
        head: http::Response<()>,
        end: bool,
    ) -> impl Future<Output = Result<(), Gone>> + Send;

    /// Sends a piece of the body (as one DATA frame where the client's
    /// flow control allows); `end` ends the stream with it. An empty
    /// piece only ends the stream.
    fn data(&mut self, bytes: Bytes, end: bool) -> impl Future<Output = Result<(), Gone>> + Send;

    /// Sends trailers, which end the stream.
    fn trailers(&mut self, trailers: HeaderMap) -> impl Future<Output = Result<(), Gone>> + Send;

    /// Resets the stream with this protocol's error `code`.
    fn reset(&mut self, code: u64);

    /// Waits, the stream unanswered, until the client gives up on it (or
    /// forever: the connection's end ends the task).
    fn hold(&mut self) -> impl Future<Output = Gone> + Send;
}

/// What a stream asks of its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnEvent {
    /// Go away gracefully: GOAWAY, finish the streams already open, close.
    GoAway,
    /// A fault ends the connection this way.
    End(Ending),
}

/// How a fault ends a connection. Each protocol gives each its own form
/// (`h2conn`, `h3conn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Close with no GOAWAY: the `close-*` faults.
    Close,
    /// Reset the connection: the `reset` fault.
    Reset,
    /// Bytes that are not the protocol's: `garbage`.
    Garbage,
    /// A connection error: `bad-status-line`.
    ProtocolError,
}

/// What the streams of one connection share.
#[derive(Debug)]
pub(crate) struct Link {
    pub shared: Arc<Shared>,
    /// The HTTP version spoken: 2 or 3.
    version: u8,
    /// The fault plan picked this connection (`--fault-per connection`).
    faulty: bool,
    /// Requests read in full so far, for `--close-every`.
    answered: AtomicU64,
    in_flight: AtomicU64,
    events: UnboundedSender<ConnEvent>,
}

impl Link {
    /// The link of a connection speaking HTTP `version` (2 or 3) that the
    /// fault plan did (`faulty`) or did not pick, whose task hears
    /// `events`.
    pub(crate) fn new(
        version: u8,
        shared: Arc<Shared>,
        faulty: bool,
        events: UnboundedSender<ConnEvent>,
    ) -> Link {
        Link {
            shared,
            version,
            faulty,
            answered: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            events,
        }
    }

    pub(crate) fn tell(&self, event: ConnEvent) {
        // The connection's task may be gone already; then so is the news.
        let _ = self.events.send(event);
    }

    /// Whether a reset with `code` refuses the stream unprocessed, so that
    /// it goes out at once rather than when the response would have.
    fn refuses(&self, code: u64) -> bool {
        match self.version {
            3 => code == H3_REQUEST_REJECTED,
            _ => code == H2_REFUSED_STREAM,
        }
    }

    /// Whether `fault` has a stream form in this protocol.
    fn has_form(&self, fault: Fault) -> bool {
        match self.version {
            3 => fault.no_http3_form().is_none(),
            _ => fault.has_http2_form(),
        }
    }
}

/// Counts a stream in flight from its accept until its task ends.
struct InFlight(Arc<Link>);

impl InFlight {
    fn new(link: &Arc<Link>) -> InFlight {
        let on_connection = link.in_flight.fetch_add(1, Relaxed) + 1;
        link.shared.stats.stream_opened(link.version, on_connection);
        InFlight(Arc::clone(link))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
        self.0.shared.stats.stream_closed(self.0.version);
    }
}

/// Serves one stream whose request head is `parts` until it is answered,
/// reset, or its connection ends.
pub(crate) async fn serve<E: Exchange>(
    link: Arc<Link>,
    parts: http::request::Parts,
    mut stream: E,
) {
    let _in_flight = InFlight::new(&link);
    let arrival = Instant::now();
    let grpc = is_call(&parts);
    let Some((ask, llm_call)) = read_request(&link, &parts, &mut stream).await else {
        return;
    };
    let shared = &link.shared;
    // Read in full: now it joins the queue of --capacity, if any.
    let served = shared.book_now();
    if let Some(code) = shared.reset_due(link.version) {
        // A refused stream was never processed: it is refused at once.
        if !link.refuses(code) {
            delay(shared, arrival, served, ask.route.delay()).await;
        }
        stream.reset(code);
        shared.stats.stream_reset(link.version);
        return;
    }
    // A fault spoils a call as it spoils any response.
    if let Some(llm_call) = llm_call.filter(|_| ask.fault.is_none()) {
        let sent = answer_llm(shared, &mut stream, llm_call, arrival, served).await;
        if sent.is_ok() && ask.closes() {
            link.tell(ConnEvent::GoAway);
        }
        return;
    }
    let defaults = Defaults {
        canned: false,
        ..shared.defaults
    };
    let reply = match reply_for(ask, defaults) {
        Reply::Fault { fault, .. } if !link.has_form(fault) => Reply::BadRequest,
        reply => reply,
    };
    match reply {
        Reply::Fault { .. } => shared.stats.fault_injected(),
        _ => shared.stats.responded(reply.status()),
    }
    delay(shared, arrival, served, ask.route.delay()).await;
    let sent = match reply {
        Reply::Send(_) | Reply::Canned { .. } if grpc => answer_call(&mut stream).await,
        Reply::Send(response) => send(shared, &mut stream, response, None).await,
        Reply::Canned { head_only, .. } => {
            let response = default_response(defaults, head_only);
            send(shared, &mut stream, response, None).await
        }
        Reply::BadRequest | Reply::HeadTooLarge => bad_request(&mut stream).await,
        Reply::Fault { fault, base } => inject(&link, &mut stream, fault, base).await,
    };
    if sent.is_ok() && ask.closes() {
        link.tell(ConnEvent::GoAway);
    }
}

/// Whether the request is a gRPC call (`application/grpc`, with or without
/// a `+proto` or other suffix).
fn is_call(parts: &http::request::Parts) -> bool {
    parts
        .headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

/// Answers a gRPC call as it succeeds: a head, one empty reply message (a
/// message's 5-byte prefix: not compressed, length 0), and the OK status
/// in trailers. A stall holds each part back, as for any response.
async fn answer_call<E: Exchange>(stream: &mut E) -> Result<(), Gone> {
    let head = http::Response::builder()
        .status(200)
        .header(CONTENT_TYPE, "application/grpc")
        .body(())
        .map_err(|_| Gone)?;
    stream.head(head, false).await?;
    stream.data(Bytes::from_static(&[0; 5]), false).await?;
    let mut trailers = HeaderMap::new();
    trailers.insert(
        HeaderName::from_static("grpc-status"),
        HeaderValue::from_static("0"),
    );
    stream.trailers(trailers).await
}

/// Reads the request in full (recording it while inspecting, keeping it
/// for a call to `--llm`) and says what it asks, and with `--llm` the call
/// to a `/v1/` path it is; `None` if the client gave up on it first.
async fn read_request<E: Exchange>(
    link: &Link,
    parts: &http::request::Parts,
    stream: &mut E,
) -> Option<(Ask, Option<Call>)> {
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let stats = &link.shared.stats;
    let mut capture = capture_with(stats, target, || RecordedRequest {
        method: parts.method.to_string(),
        path: target.to_string(),
        version: link.version,
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| (name.to_string(), value.as_bytes().to_vec()))
            .collect(),
        body: Vec::new(),
        received: std::time::Instant::now(),
    });
    let mut llm_call = link
        .shared
        .cfg
        .llm
        .and_then(|_| Call::of(target, Verb::of(parts.method.as_str())));
    let record = capture.as_mut().and_then(|c| c.record.as_mut());
    let sink = llm_call.as_mut().and_then(Call::sink);
    let mut keep = Both(record.map(|r| &mut r.body), sink).wanted();
    let keep = keep.as_mut().map(|k| k as &mut (dyn Sink + Send));
    stream.read_body(keep).await.ok()?;
    stats.request_done(capture);
    let answered = link.answered.fetch_add(1, Relaxed) + 1;
    let route = Route::parse(target);
    let shared = &link.shared;
    let ask = Ask {
        route,
        head_only: parts.method == Method::HEAD,
        http10: false,
        close: shared.close_due(answered),
        fault: shared.fault_due(link.faulty),
        pass: route.pass(&shared.tokens, |key| {
            let fields = parts.headers.iter();
            key.admits(fields.map(|(name, value)| (name.as_str(), value.as_bytes())))
        }),
    };
    Some((ask, llm_call))
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
async fn send<E: Exchange>(
    shared: &Shared,
    stream: &mut E,
    response: Response,
    trickle: Option<Duration>,
) -> Result<(), Gone> {
    // Neither protocol has chunked coding or close-delimited bodies: DATA
    // frames carry the body and the stream's end ends it.
    let (len, length_header, trailer, piece) = match response.body {
        Body::Empty => (0, None, false, PIECE as u64),
        Body::Length(n) => (n, Some(n), false, PIECE as u64),
        Body::Chunked { len, trailer } => (len, None, trailer, chunk_size(len)),
        Body::UntilClose(n) => (n, None, false, PIECE as u64),
        Body::Events { sse, .. } => {
            let head = events_head(response.status)?;
            if response.head_only {
                return stream.head(head, true).await;
            }
            // Timed from when the head goes out.
            return send_feed(shared, stream, head, &sse, None).await;
        }
        Body::Token(_) | Body::Denied => return send_text(stream, response, trickle).await,
    };
    let head = head(response.status, length_header, trailer)?;
    let bodiless = len == 0 && !trailer && trickle.is_none();
    if response.head_only || bodiless {
        return stream.head(head, true).await;
    }
    stream.head(head, false).await?;
    match trickle {
        Some(interval) => trickle_body(stream, len, interval, !trailer).await?,
        None => send_fill(stream, len, piece, !trailer).await?,
    }
    if trailer {
        let mut trailers = HeaderMap::new();
        trailers.insert(
            HeaderName::from_static(TRAILER_FIELD),
            HeaderValue::from(len),
        );
        stream.trailers(trailers).await?;
    }
    Ok(())
}

/// The head of an event stream.
fn events_head(status: u16) -> Result<http::Response<()>, Gone> {
    let mut head = head(status, None, false)?;
    let headers = head.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    // Keeps a proxy from holding the stream back.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(head)
}

/// Sends an event stream: `head` at once, then each event of `feed` in a
/// DATA frame of its own once it is due, timed from `origin` (an instant
/// and an offset from it) or, without one, from when the head went out,
/// so a late frame does not delay the rest; the stream's end with the
/// last.
async fn send_feed<E: Exchange>(
    shared: &Shared,
    stream: &mut E,
    head: http::Response<()>,
    feed: &(impl Feed + Sync),
    origin: Option<(Instant, Duration)>,
) -> Result<(), Gone> {
    let events = feed.events();
    if events == 0 {
        return stream.head(head, true).await;
    }
    // A stall would hold the head back anyway; waiting here times the
    // events from when the head can go out, as HTTP/1.1 does.
    shared.wait_out_stall().await;
    stream.head(head, false).await?;
    let (start, lead) = origin.unwrap_or_else(|| (Instant::now(), Duration::ZERO));
    for i in 1..=events {
        sleep_past(start, lead.saturating_add(feed.due(i))).await;
        shared.wait_out_stall().await;
        feed.count(&shared.stats, i..i + 1);
        let mut event = Vec::new();
        feed.write(&mut event, i);
        stream.data(Bytes::from(event), i == events).await?;
    }
    Ok(())
}

/// Answers a call to the stand-in model (`--llm`) that arrived at
/// `arrival` (and with `--capacity` is `served` at that offset from the
/// server's start). The head waits for `--delay` (or the queue), as any
/// response does; a completion's tokens are timed from then.
async fn answer_llm<E: Exchange>(
    shared: &Shared,
    stream: &mut E,
    call: Call,
    arrival: Instant,
    served: Option<Duration>,
) -> Result<(), Gone> {
    let answer = llm::answer(shared.cfg.llm.unwrap_or_default(), &call, &shared.stats);
    shared.stats.responded(answer.status());
    let origin = shared
        .response_due(arrival, served, Duration::ZERO)
        .unwrap_or((arrival, Duration::ZERO));
    delay(shared, arrival, served, Duration::ZERO).await;
    match answer {
        Answer::Json(json) => send_json(shared, stream, json, call.head_only(), origin).await,
        Answer::Stream(completion) => {
            let head = events_head(200)?;
            send_feed(shared, stream, head, &completion, Some(origin)).await
        }
    }
}

/// Sends a JSON answer in one DATA frame (none for a HEAD request); a
/// completion's once it is due, timed from `origin`.
async fn send_json<E: Exchange>(
    shared: &Shared,
    stream: &mut E,
    json: Json,
    head_only: bool,
    (start, lead): (Instant, Duration),
) -> Result<(), Gone> {
    if let Some(whole) = json.whole {
        sleep_past(start, lead.saturating_add(whole.due)).await;
        shared.wait_out_stall().await;
        shared.stats.completion_tokens_written(whole.tokens);
    }
    let mut head = head(json.status, Some(json.text.len() as u64), false)?;
    let headers = head.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(methods) = json.allow {
        headers.insert(http::header::ALLOW, HeaderValue::from_static(methods));
    }
    if head_only {
        return stream.head(head, true).await;
    }
    stream.head(head, false).await?;
    stream.data(Bytes::from(json.text), true).await
}

/// Sends a response of set text (`/login`'s token, `/private`'s 401): the
/// head with the fields that go with the text, then the text in one DATA
/// frame or (`trickle`) one byte per frame with that pause before each.
async fn send_text<E: Exchange>(
    stream: &mut E,
    response: Response,
    trickle: Option<Duration>,
) -> Result<(), Gone> {
    let mut text = Vec::new();
    response.body.write_text(&mut text);
    let mut head = head(response.status, Some(text.len() as u64), false)?;
    let headers = head.headers_mut();
    if let Body::Token(token) = response.body {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let cookie = format!("{COOKIE_NAME}={token}; Path=/");
        let cookie = HeaderValue::try_from(cookie).map_err(|_| Gone)?;
        headers.insert(SET_COOKIE, cookie);
    } else {
        let challenge = HeaderValue::from_static(DENIED_CHALLENGE);
        headers.insert(WWW_AUTHENTICATE, challenge);
    }
    if response.head_only || text.is_empty() {
        return stream.head(head, true).await;
    }
    stream.head(head, false).await?;
    let text = Bytes::from(text);
    let Some(interval) = trickle else {
        return stream.data(text, true).await;
    };
    for at in 0..text.len() {
        sleep(interval).await;
        let last = at + 1 == text.len();
        stream.data(text.slice(at..at + 1), last).await?;
    }
    Ok(())
}

/// A response head: the status, `text/plain`, and the length or the
/// trailer it announces.
pub(crate) fn head(
    status: u16,
    length: Option<u64>,
    trailer: bool,
) -> Result<http::Response<()>, Gone> {
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
    head.body(()).map_err(|_| Gone)
}

/// Sends `len` body bytes in DATA frames of at most `piece` bytes; `end`
/// ends the stream with the last one.
async fn send_fill<E: Exchange>(
    stream: &mut E,
    len: u64,
    piece: u64,
    end: bool,
) -> Result<(), Gone> {
    let piece = piece.clamp(1, PIECE as u64);
    let mut left = len;
    while left > 0 {
        let n = left.min(piece) as usize;
        left -= n as u64;
        stream
            .data(Bytes::from_static(&FILLER[..n]), end && left == 0)
            .await?;
    }
    if len == 0 && end {
        stream.data(Bytes::new(), true).await?;
    }
    Ok(())
}

/// Sends `len` body bytes one per DATA frame, `interval` before each (one
/// empty frame for an empty body, so that it too takes its time).
async fn trickle_body<E: Exchange>(
    stream: &mut E,
    len: u64,
    interval: Duration,
    end: bool,
) -> Result<(), Gone> {
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
async fn bad_request<E: Exchange>(stream: &mut E) -> Result<(), Gone> {
    let head = head(400, Some(BAD_REQUEST_BODY.len() as u64), false)?;
    stream.head(head, false).await?;
    stream
        .data(Bytes::from_static(BAD_REQUEST_BODY), true)
        .await
}

/// Does what `fault` does on a stream in place of `base`. Faults that end
/// the connection never return: the connection's task ends this one.
async fn inject<E: Exchange>(
    link: &Link,
    stream: &mut E,
    fault: Fault,
    base: Response,
) -> Result<(), Gone> {
    let ending = match fault {
        Fault::CloseBeforeHead => Ending::Close,
        Fault::Reset => Ending::Reset,
        Fault::Garbage => Ending::Garbage,
        Fault::BadStatusLine => Ending::ProtocolError,
        Fault::CloseMidBody => {
            let len = fault_body_len(&base);
            stream
                .head(head(base.status, Some(len), false)?, false)
                .await?;
            send_fill(stream, len / 2, PIECE as u64, false).await?;
            return end_connection(link, Ending::Close).await;
        }
        Fault::ShortBody => {
            let len = fault_body_len(&base);
            stream
                .head(head(base.status, Some(len), false)?, false)
                .await?;
            return send_fill(stream, len - 1, PIECE as u64, true).await;
        }
        // Until the client resets the stream, or the connection ends.
        Fault::NeverAnswer => return Err(stream.hold().await),
        Fault::HugeHead => return stream.head(huge_head(base.status)?, true).await,
        Fault::Trickle => {
            let interval = link.shared.cfg.trickle_interval;
            return send(&link.shared, stream, base, Some(interval)).await;
        }
        Fault::CloseMidHead | Fault::BadChunk => return bad_request(stream).await,
    };
    end_connection(link, ending).await
}

/// Asks the connection's task to end the connection, and waits for it to:
/// the stream (whose handles the caller keeps) must stay open until then,
/// or the library would reset it first.
async fn end_connection(link: &Link, ending: Ending) -> Result<(), Gone> {
    link.tell(ConnEvent::End(ending));
    pending().await
}

/// A valid response whose header block is over 1 MiB: `huge-head`'s
/// padding fields, with an empty body.
fn huge_head(status: u16) -> Result<http::Response<()>, Gone> {
    static PAD: [u8; HUGE_PAD_LEN] = [b'p'; HUGE_PAD_LEN];
    let mut head = head(status, Some(0), false)?;
    let pad = HeaderValue::from_maybe_shared(Bytes::from_static(&PAD)).map_err(|_| Gone)?;
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
        // (RFC 9113 section 6.5.2; RFC 9114 section 4.2.2 counts alike).
        let size: usize = huge
            .headers()
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len() + 32)
            .sum();
        assert!(size > 1 << 20, "{size}");
        assert_eq!(huge.headers().get_all("x-pad").iter().count(), HUGE_FIELDS);
    }
}
