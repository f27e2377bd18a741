//! What the server received and sent, for tests and for the `demo` report.
//!
//! Counters are relaxed atomics bumped on the request path: cheap, and
//! always on. Everything that needs a lock or an allocation (per-path counts,
//! recorded requests) is inspection, kept only when the config's `record` is
//! above zero, so a benchmark target pays nothing for it. Counts are bumped
//! before the response is written, so a client that has read a response
//! always finds it counted.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Status codes are three digits; one counter for each possible value.
const STATUS_SLOTS: usize = 1000;

/// One request as it arrived, kept for inspection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedRequest {
    pub method: String,
    /// The request-target as sent, query included.
    pub path: String,
    /// HTTP version: 0 for HTTP/1.0, 1 for HTTP/1.1, 2 for HTTP/2, 3 for
    /// HTTP/3.
    pub version: u8,
    /// Header names and values in arrival order, names as sent (HTTP/2
    /// and HTTP/3 send them in lower case, and their pseudo-headers are
    /// not kept).
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body after any chunked framing is removed.
    pub body: Vec<u8>,
    /// When its head had arrived (what a test of pacing judges the
    /// client's schedule by, on the server's side).
    pub received: std::time::Instant,
}

impl RecordedRequest {
    /// The first value of header `name`, compared case-insensitively.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        let found = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name));
        found.map(|(_, value)| value.as_slice())
    }
}

/// What inspection keeps of one request while its body arrives.
#[derive(Debug)]
pub(crate) struct Capture {
    /// The path without its query: the key of the per-path counts.
    pub path_key: String,
    /// Present while the server still has room for recorded requests
    /// (boxed: a request head carries this, and stays small when not
    /// inspecting).
    pub record: Option<Box<RecordedRequest>>,
}

/// What the connections of one protocol with streams (HTTP/2, HTTP/3)
/// did, as [`ServerStats`]'s `h2_*` and `h3_*` methods tell.
#[derive(Debug, Default)]
struct StreamCounters {
    connections: AtomicU64,
    streams: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    max_on_one_connection: AtomicU64,
    resets: AtomicU64,
    goaways: AtomicU64,
}

/// What the stand-in model (`--llm`) answered, as [`ServerStats`]'s
/// `completions`, `prompt_tokens` and `completion_tokens` tell.
#[derive(Debug, Default)]
struct LlmCounters {
    completions: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
}

/// What the WebSocket endpoints (`--ws`) did, as [`ServerStats`]'s
/// `ws_*` methods tell. Closes are few, one or two per connection, so
/// their counts by code take a lock.
#[derive(Debug, Default)]
struct WsCounters {
    upgrades: AtomicU64,
    refused: AtomicU64,
    received: AtomicU64,
    sent: AtomicU64,
    closes_sent: Mutex<BTreeMap<u16, u64>>,
    closes_received: Mutex<BTreeMap<u16, u64>>,
}

/// Counters shared by every connection of one server.
#[derive(Debug)]
pub struct ServerStats {
    requests: AtomicU64,
    connections: AtomicU64,
    open: AtomicU64,
    turned_away: AtomicU64,
    bytes_received: AtomicU64,
    bad_requests: AtomicU64,
    faults: AtomicU64,
    sse_events: AtomicU64,
    llm: LlmCounters,
    ws: WsCounters,
    statuses: Box<[AtomicU64]>,
    h2: StreamCounters,
    h3: StreamCounters,
    record_limit: usize,
    /// Claimed recording slots; checked before touching the lock.
    record_claimed: AtomicUsize,
    recorded: Mutex<Vec<RecordedRequest>>,
    paths: Mutex<HashMap<String, u64>>,
}

impl ServerStats {
    pub(crate) fn new(record_limit: usize) -> ServerStats {
        ServerStats {
            requests: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            open: AtomicU64::new(0),
            turned_away: AtomicU64::new(0),
            bytes_received: AtomicU64::new(0),
            bad_requests: AtomicU64::new(0),
            faults: AtomicU64::new(0),
            sse_events: AtomicU64::new(0),
            llm: LlmCounters::default(),
            ws: WsCounters::default(),
            h2: StreamCounters::default(),
            h3: StreamCounters::default(),
            statuses: (0..STATUS_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            record_limit,
            record_claimed: AtomicUsize::new(0),
            recorded: Mutex::new(Vec::new()),
            paths: Mutex::new(HashMap::new()),
        }
    }

    /// Complete requests received, bad routes (`/status/abc`) included;
    /// bytes that did not parse as a request count in [`Self::bad_requests`].
    pub fn requests(&self) -> u64 {
        self.requests.load(Relaxed)
    }

    /// Connections accepted since start, QUIC ones (`--http3`) included.
    pub fn connections(&self) -> u64 {
        self.connections.load(Relaxed)
    }

    /// Connections accepted and not yet closed by the server.
    pub fn open_connections(&self) -> u64 {
        self.open.load(Relaxed)
    }

    /// Connections closed (or QUIC handshakes refused) at once because
    /// `--max-connections` were open.
    pub fn turned_away(&self) -> u64 {
        self.turned_away.load(Relaxed)
    }

    /// Bytes read from all connections, heads and bodies alike; over
    /// HTTP/3, request bodies only (QUIC's packets are read by its library).
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received.load(Relaxed)
    }

    /// Requests answered with 400 because they could not be parsed.
    pub fn bad_requests(&self) -> u64 {
        self.bad_requests.load(Relaxed)
    }

    /// Faults injected in place of a response (counted before any of
    /// their bytes is written; not counted in [`Self::responses`]).
    pub fn faults(&self) -> u64 {
        self.faults.load(Relaxed)
    }

    /// Server-sent events written (`--sse`), over all responses and both
    /// protocols; each is counted just before it is written, once no stall
    /// holds it back.
    pub fn sse_events(&self) -> u64 {
        self.sse_events.load(Relaxed)
    }

    /// WebSocket upgrades taken (`--ws`): each a `101` written.
    pub fn ws_upgrades(&self) -> u64 {
        self.ws.upgrades.load(Relaxed)
    }

    /// Requests for a WebSocket endpoint refused with a 400.
    pub fn ws_refused(&self) -> u64 {
        self.ws.refused.load(Relaxed)
    }

    /// Whole WebSocket messages read (fragments reassembled; control
    /// frames are not messages).
    pub fn ws_messages_received(&self) -> u64 {
        self.ws.received.load(Relaxed)
    }

    /// WebSocket messages sent (echoes and pushes), each counted once its
    /// last byte is written to the socket; one still queued, or cut off
    /// by a client that left, is not.
    pub fn ws_messages_sent(&self) -> u64 {
        self.ws.sent.load(Relaxed)
    }

    /// Close frames the server sent, by code (ascending).
    pub fn ws_closes_sent(&self) -> Vec<(u16, u64)> {
        lock(&self.ws.closes_sent)
            .iter()
            .map(|(c, n)| (*c, *n))
            .collect()
    }

    /// Close frames clients sent, by code (ascending; 1005 for a close
    /// without one).
    pub fn ws_closes_received(&self) -> Vec<(u16, u64)> {
        let counts = lock(&self.ws.closes_received);
        counts.iter().map(|(c, n)| (*c, *n)).collect()
    }

    /// Completion requests (`--llm`) answered, streamed or whole: counted
    /// as each answer begins, before any byte of it is written. Refused
    /// requests (a 400) and the model list are not completions.
    pub fn completions(&self) -> u64 {
        self.llm.completions.load(Relaxed)
    }

    /// Prompt tokens of the [`Self::completions`] answered: the words of
    /// their prompts or messages, as their `usage` says.
    pub fn prompt_tokens(&self) -> u64 {
        self.llm.prompt_tokens.load(Relaxed)
    }

    /// Completion tokens written (`--llm`), over all answers and
    /// protocols: a streamed token just before its chunk is written, once
    /// no stall holds it back; a whole answer's tokens just before it is.
    /// A client that read every answer to its end counts as many.
    pub fn completion_tokens(&self) -> u64 {
        self.llm.completion_tokens.load(Relaxed)
    }

    /// Responses sent (or being sent) with `status`.
    pub fn responses(&self, status: u16) -> u64 {
        let slot = self.statuses.get(usize::from(status));
        slot.map_or(0, |n| n.load(Relaxed))
    }

    /// Responses sent with any status.
    pub fn responses_total(&self) -> u64 {
        self.statuses.iter().map(|n| n.load(Relaxed)).sum()
    }

    /// Connections served in HTTP/2 (h2c, or `h2` chosen by ALPN).
    pub fn h2_connections(&self) -> u64 {
        self.h2.connections.load(Relaxed)
    }

    /// HTTP/2 streams accepted: requests, whether answered, reset or held.
    pub fn h2_streams(&self) -> u64 {
        self.h2.streams.load(Relaxed)
    }

    /// HTTP/2 streams in flight now: accepted, and neither answered in full
    /// (the last frame handed to the connection) nor reset. A stream the
    /// client resets counts until its task notices, a moment after the
    /// connection has read the reset.
    pub fn h2_streams_in_flight(&self) -> u64 {
        self.h2.in_flight.load(Relaxed)
    }

    /// The most HTTP/2 streams in flight at once, on all connections.
    pub fn h2_max_streams_in_flight(&self) -> u64 {
        self.h2.max_in_flight.load(Relaxed)
    }

    /// The most HTTP/2 streams in flight at once on any one connection.
    pub fn h2_max_streams_per_connection(&self) -> u64 {
        self.h2.max_on_one_connection.load(Relaxed)
    }

    /// RST_STREAM frames the server chose to send (`--h2-reset`); not
    /// counted in [`Self::faults`].
    pub fn h2_resets(&self) -> u64 {
        self.h2.resets.load(Relaxed)
    }

    /// GOAWAY frames the server chose to send: `--h2-goaway-after`,
    /// `--close-every`, `/close`, and the `bad-status-line` fault's.
    pub fn h2_goaways(&self) -> u64 {
        self.h2.goaways.load(Relaxed)
    }

    /// Connections served in HTTP/3 (`--http3`): QUIC handshake and
    /// HTTP/3 settings done.
    pub fn h3_connections(&self) -> u64 {
        self.h3.connections.load(Relaxed)
    }

    /// HTTP/3 request streams taken up: answered, reset or held; not those
    /// refused after a GOAWAY.
    pub fn h3_streams(&self) -> u64 {
        self.h3.streams.load(Relaxed)
    }

    /// HTTP/3 request streams in flight now, as for HTTP/2.
    pub fn h3_streams_in_flight(&self) -> u64 {
        self.h3.in_flight.load(Relaxed)
    }

    /// The most HTTP/3 streams in flight at once on any one connection.
    pub fn h3_max_streams_per_connection(&self) -> u64 {
        self.h3.max_on_one_connection.load(Relaxed)
    }

    /// Request streams the server chose to reset (`--h3-reset`); not
    /// counted in [`Self::faults`].
    pub fn h3_resets(&self) -> u64 {
        self.h3.resets.load(Relaxed)
    }

    /// GOAWAY frames the server chose to send: `--h3-goaway-after`,
    /// `--close-every` and `/close`.
    pub fn h3_goaways(&self) -> u64 {
        self.h3.goaways.load(Relaxed)
    }

    /// Requests for `path` (query excluded). Counted only while inspection
    /// is on (`record > 0`); otherwise always 0.
    pub fn path_count(&self, path: &str) -> u64 {
        lock(&self.paths).get(path).copied().unwrap_or(0)
    }

    /// Every counted path with its count, sorted by path.
    pub fn path_counts(&self) -> Vec<(String, u64)> {
        let mut all: Vec<_> = lock(&self.paths)
            .iter()
            .map(|(p, n)| (p.clone(), *n))
            .collect();
        all.sort();
        all
    }

    /// The first `record` complete requests, in the order they completed.
    pub fn recorded(&self) -> Vec<RecordedRequest> {
        lock(&self.recorded).clone()
    }

    /// Whether requests are inspected at all (per-path counts, recording).
    pub(crate) fn inspecting(&self) -> bool {
        self.record_limit > 0
    }

    /// Whether a request whose head just arrived may still be recorded.
    pub(crate) fn wants_record(&self) -> bool {
        self.record_claimed.load(Relaxed) < self.record_limit
    }

    /// Counts a connection opened if fewer than `max` are open.
    pub(crate) fn open_below(&self, max: u64) -> bool {
        let taken = self
            .open
            .fetch_update(Relaxed, Relaxed, |open| (open < max).then_some(open + 1));
        if taken.is_ok() {
            self.connections.fetch_add(1, Relaxed);
        }
        taken.is_ok()
    }

    pub(crate) fn connection_closed(&self) {
        self.open.fetch_sub(1, Relaxed);
    }

    pub(crate) fn connection_turned_away(&self) {
        self.turned_away.fetch_add(1, Relaxed);
    }

    pub(crate) fn h2_connection(&self) {
        self.h2.connections.fetch_add(1, Relaxed);
    }

    pub(crate) fn h3_connection(&self) {
        self.h3.connections.fetch_add(1, Relaxed);
    }

    /// Counts a stream just accepted on a connection of `version` (2 or
    /// 3) that now has `on_connection` streams in flight.
    pub(crate) fn stream_opened(&self, version: u8, on_connection: u64) {
        let counters = self.streams_of(version);
        counters.streams.fetch_add(1, Relaxed);
        let now = counters.in_flight.fetch_add(1, Relaxed) + 1;
        counters.max_in_flight.fetch_max(now, Relaxed);
        counters
            .max_on_one_connection
            .fetch_max(on_connection, Relaxed);
    }

    pub(crate) fn stream_closed(&self, version: u8) {
        self.streams_of(version).in_flight.fetch_sub(1, Relaxed);
    }

    pub(crate) fn stream_reset(&self, version: u8) {
        self.streams_of(version).resets.fetch_add(1, Relaxed);
    }

    pub(crate) fn goaway(&self, version: u8) {
        self.streams_of(version).goaways.fetch_add(1, Relaxed);
    }

    pub(crate) fn h2_goaway(&self) {
        self.goaway(2);
    }

    /// The counters of HTTP/3 for 3, of HTTP/2 for anything else.
    fn streams_of(&self, version: u8) -> &StreamCounters {
        match version {
            3 => &self.h3,
            _ => &self.h2,
        }
    }

    pub(crate) fn received(&self, bytes: usize) {
        self.bytes_received.fetch_add(bytes as u64, Relaxed);
    }

    pub(crate) fn bad_request(&self) {
        self.bad_requests.fetch_add(1, Relaxed);
    }

    pub(crate) fn fault_injected(&self) {
        self.faults.fetch_add(1, Relaxed);
    }

    pub(crate) fn sse_events_written(&self, n: u64) {
        self.sse_events.fetch_add(n, Relaxed);
    }

    /// Counts a completion about to be answered, with its prompt tokens;
    /// returns its number (from 1), which names it.
    pub(crate) fn completion_started(&self, prompt_tokens: u64) -> u64 {
        self.llm.prompt_tokens.fetch_add(prompt_tokens, Relaxed);
        self.llm.completions.fetch_add(1, Relaxed) + 1
    }

    pub(crate) fn ws_upgraded(&self) {
        self.ws.upgrades.fetch_add(1, Relaxed);
    }

    pub(crate) fn ws_upgrade_refused(&self) {
        self.ws.refused.fetch_add(1, Relaxed);
    }

    pub(crate) fn ws_message_received(&self) {
        self.ws.received.fetch_add(1, Relaxed);
    }

    pub(crate) fn ws_messages_written(&self, n: u64) {
        self.ws.sent.fetch_add(n, Relaxed);
    }

    pub(crate) fn ws_close_sent(&self, code: u16) {
        *lock(&self.ws.closes_sent).entry(code).or_insert(0) += 1;
    }

    pub(crate) fn ws_close_received(&self, code: u16) {
        *lock(&self.ws.closes_received).entry(code).or_insert(0) += 1;
    }

    pub(crate) fn completion_tokens_written(&self, n: u64) {
        self.llm.completion_tokens.fetch_add(n, Relaxed);
    }

    pub(crate) fn responded(&self, status: u16) {
        if let Some(n) = self.statuses.get(usize::from(status)) {
            n.fetch_add(1, Relaxed);
        }
    }

    /// Counts one complete request and keeps what inspection captured.
    pub(crate) fn request_done(&self, capture: Option<Capture>) {
        self.requests.fetch_add(1, Relaxed);
        let Some(capture) = capture else { return };
        *lock(&self.paths).entry(capture.path_key).or_insert(0) += 1;
        if let Some(request) = capture.record {
            self.keep(*request);
        }
    }

    fn keep(&self, request: RecordedRequest) {
        // Several connections may have started recording when one slot was
        // left; the first to finish gets it.
        if self.record_claimed.fetch_add(1, Relaxed) < self.record_limit {
            lock(&self.recorded).push(request);
        }
    }
}

/// Locks, shrugging off poisoning: counters stay meaningful even if some
/// thread panicked while holding the lock.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: &str) -> RecordedRequest {
        RecordedRequest {
            method: "GET".into(),
            path: path.into(),
            version: 1,
            headers: vec![("Host".into(), b"x".to_vec())],
            body: Vec::new(),
            received: std::time::Instant::now(),
        }
    }

    fn capture(path: &str, stats: &ServerStats) -> Capture {
        Capture {
            path_key: path.into(),
            record: stats.wants_record().then(|| Box::new(request(path))),
        }
    }

    #[test]
    fn keeps_only_the_first_requests() {
        let stats = ServerStats::new(2);
        for path in ["/a", "/b", "/a"] {
            stats.request_done(Some(capture(path, &stats)));
        }
        assert_eq!(stats.requests(), 3);
        let paths: Vec<_> = stats.recorded().into_iter().map(|r| r.path).collect();
        assert_eq!(paths, ["/a", "/b"]);
        assert!(!stats.wants_record());
        assert_eq!(stats.path_count("/a"), 2);
        assert_eq!(stats.path_count("/c"), 0);
        assert_eq!(stats.path_counts(), [("/a".into(), 2), ("/b".into(), 1)]);
    }

    #[test]
    fn counts_without_inspection() {
        let stats = ServerStats::new(0);
        assert!(!stats.inspecting() && !stats.wants_record());
        stats.request_done(None);
        stats.responded(200);
        stats.responded(503);
        stats.responded(200);
        assert_eq!(stats.requests(), 1);
        assert_eq!(stats.responses(200), 2);
        assert_eq!(stats.responses(503), 1);
        assert_eq!(stats.responses(404), 0);
        assert_eq!(stats.responses(u16::MAX), 0);
        assert_eq!(stats.responses_total(), 3);
        assert_eq!(stats.path_count("/"), 0);
    }

    #[test]
    fn streams_in_flight_keep_their_highs() {
        let stats = ServerStats::new(0);
        stats.stream_opened(2, 1);
        stats.stream_opened(2, 2);
        stats.stream_opened(2, 1);
        stats.stream_opened(3, 1);
        assert_eq!(stats.h2_streams_in_flight(), 3);
        stats.stream_closed(2);
        stats.stream_closed(2);
        stats.stream_opened(2, 1);
        assert_eq!(stats.h3_streams(), 1);
        assert_eq!(stats.h3_streams_in_flight(), 1);
        assert_eq!(stats.h2_streams(), 4);
        assert_eq!(stats.h2_streams_in_flight(), 2);
        assert_eq!(stats.h2_max_streams_in_flight(), 3);
        assert_eq!(stats.h2_max_streams_per_connection(), 2);
    }

    #[test]
    fn headers_are_found_case_insensitively() {
        let req = request("/");
        assert_eq!(req.header("host"), Some(&b"x"[..]));
        assert_eq!(req.header("accept"), None);
    }
}
