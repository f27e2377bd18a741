//! What a run measured: per-thread histograms and counters, and their merge.
//!
//! A worker records into its own [`ThreadStats`] through a [`Recorder`],
//! without locks or allocation; after the workers join,
//! [`RunStats::merge`] adds them up. Every figure here covers the same
//! measured window (docs/MEASUREMENT.md, §4): a request belongs to the
//! window when its intended send time does.

pub mod codec;
pub mod history;
pub mod http2;
pub mod interval;
pub mod llm;
pub mod phase;
pub mod recorder;
pub mod series;
pub mod status;
pub mod summary;
pub mod timings;
pub mod unfinished;
pub mod visits;

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;

pub use history::History;
pub use http2::{ByCode, Http2Counts};
use interval::IntervalRecorder;
pub use phase::{PhaseStats, Phases};
pub use recorder::{Loss, Recorder, Reply, Stamp, Window};
// (ReadCause, ConnectCause and their counts are defined below.)
pub use llm::LlmStats;
pub use series::{Completions, RateSamples, Row};
pub use status::{CallStatuses, CloseCodes, Refusals, StatusCodes};
pub use timings::{EventKind, EventStats, Timings};
pub use visits::VisitStats;

/// Lowest trackable value of every latency histogram, in microseconds.
pub const HIST_LOW_US: u64 = 1;
/// Highest trackable value: 24 hours in microseconds (wrk2's limit).
pub const HIST_HIGH_US: u64 = 24 * 60 * 60 * 1_000_000;
/// Significant decimal digits kept by every histogram.
pub const HIST_SIGFIG: u8 = 3;
/// Granularity of the per-thread completion time series.
pub const SERIES_STEP: Duration = Duration::from_millis(10);
/// wrk samples each thread's request rate every 100 ms for `Req/Sec`.
pub const RATE_SAMPLE: Duration = Duration::from_millis(100);

/// A latency histogram with metron's precision. Its counts grow with the
/// largest value recorded (values are clamped to [`HIST_HIGH_US`] on the
/// way in, see [`record_clamped`]), so a histogram of millisecond
/// latencies holds about 40 KB where the whole range would take 229 KB;
/// a run keeps several per thread and per interval. Buckets sit at the
/// same values whatever the size, so sizes mix freely in additions.
pub fn new_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(HIST_LOW_US, 2, HIST_SIGFIG)
        .expect("constant histogram bounds are valid");
    h.auto(true);
    h
}

/// Adds `from` into `into`, one of metron's histograms: it grows to take
/// any addend, so adding cannot fail.
#[inline]
pub fn add_histogram(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    let _ = into.add(from);
}

/// Records `value_us` into one of metron's histograms, clamped into
/// [`HIST_LOW_US`, `HIST_HIGH_US`]; true when it was above the range (the
/// caller counts it once, however many histograms it goes into). The one
/// place values meet the range: hdrhistogram's own saturating record
/// would keep 0 as 0 and values inside the last bucket above the range
/// as they are, which would change the figures the reports print.
#[inline]
pub fn record_clamped(hist: &mut Histogram<u64>, value_us: u64) -> bool {
    // In range by construction, so this cannot fail.
    let _ = hist.record(value_us.clamp(HIST_LOW_US, HIST_HIGH_US));
    value_us > HIST_HIGH_US
}

/// `latency` and `unfinished` added up; `latency` itself when nothing went
/// unfinished (the usual case), so that reports which ask for every
/// interval's conservative distribution copy no histogram for it.
fn conservative<'a>(
    latency: &'a Histogram<u64>,
    unfinished: &Histogram<u64>,
) -> Cow<'a, Histogram<u64>> {
    if unfinished.is_empty() {
        return Cow::Borrowed(latency);
    }
    let mut h = latency.clone();
    add_histogram(&mut h, unfinished);
    Cow::Owned(h)
}

/// A histogram holding `count` of each `value`: fixed data for tests.
#[cfg(test)]
pub fn histogram_of(values: &[(u64, u64)]) -> Histogram<u64> {
    let mut h = new_histogram();
    for &(v, n) in values {
        h.record_n(v, n).expect("test values are in range");
    }
    h
}

/// Why a run ended before its duration was up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopCause {
    /// Ctrl-C (SIGINT).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// An error stopped every worker (a script's error).
    Error,
    /// Every thread's script called `thread:stop()`.
    ScriptStop,
}

impl StopCause {
    /// How the report names it.
    pub fn describe(self) -> &'static str {
        match self {
            StopCause::Interrupt => "Ctrl-C",
            StopCause::Terminate => "SIGTERM",
            StopCause::Error => "an error",
            StopCause::ScriptStop => "thread:stop() in every thread",
        }
    }
}

/// A run that ended before its duration was up: why, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interruption {
    pub cause: StopCause,
    /// Time from the run's start (warm-up included) to the stop.
    pub after: Duration,
}

/// Socket and HTTP errors, counted the way wrk counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Errors {
    /// Failed connection attempts (not requests: see [`Counters`]).
    pub connect: u64,
    /// Requests lost to a read failure: reset, EOF mid-response, bad bytes.
    pub read: u64,
    /// Requests lost to a write failure.
    pub write: u64,
    /// Responses with a status above 399 (these are also completed).
    pub status: u64,
    /// Requests outstanding longer than `--timeout`.
    pub timeout: u64,
}

impl Errors {
    pub fn add(&mut self, other: &Errors) {
        self.connect += other.connect;
        self.read += other.read;
        self.write += other.write;
        self.status += other.status;
        self.timeout += other.timeout;
    }

    /// Requests that ended without a response (read, write, timeout).
    pub fn lost_requests(&self) -> u64 {
        self.read + self.write + self.timeout
    }

    pub fn any_socket(&self) -> bool {
        self.connect + self.read + self.write + self.timeout > 0
    }
}

/// Read errors by what the connection saw; they add up to
/// [`Errors::read`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReadCauses {
    /// The server reset the connection (or, over HTTP/2, the stream).
    pub reset: u64,
    /// The server closed the connection before the response ended, on a
    /// connection that had answered before.
    pub closed: u64,
    /// The server closed or reset a connection before answering anything
    /// on it: what a server past its connection limit does to those
    /// beyond it, so it is told apart from a close mid-conversation.
    /// Absent in documents of older versions, which counted these under
    /// `closed` and `reset`.
    #[serde(default)]
    pub closed_unanswered: u64,
    /// A response head larger than `--max-head`.
    pub head_too_large: u64,
    /// A body larger than a script may read whole. Absent in documents
    /// of older versions.
    #[serde(default)]
    pub body_too_large: u64,
    /// Bytes that are not a valid response.
    pub malformed: u64,
    /// HTTP/2 frames in answer to an HTTP/1.1 request.
    pub http2_only: u64,
    /// TLS failed on an open connection.
    pub tls: u64,
    /// Over UDP (HTTP/3): the host answered that nothing listens on the
    /// server's port any more (it stopped or restarted under open
    /// connections). Absent in documents of older versions.
    #[serde(default)]
    pub port_closed: u64,
}

impl ReadCauses {
    pub fn add(&mut self, o: &ReadCauses) {
        self.reset += o.reset;
        self.closed += o.closed;
        self.closed_unanswered += o.closed_unanswered;
        self.head_too_large += o.head_too_large;
        self.body_too_large += o.body_too_large;
        self.malformed += o.malformed;
        self.http2_only += o.http2_only;
        self.tls += o.tls;
        self.port_closed += o.port_closed;
    }

    pub fn count(&mut self, cause: ReadCause) {
        *match cause {
            ReadCause::Reset => &mut self.reset,
            ReadCause::Closed => &mut self.closed,
            ReadCause::ClosedUnanswered => &mut self.closed_unanswered,
            ReadCause::HeadTooLarge => &mut self.head_too_large,
            ReadCause::BodyTooLarge => &mut self.body_too_large,
            ReadCause::Malformed => &mut self.malformed,
            ReadCause::OtherProtocol => &mut self.http2_only,
            ReadCause::Tls => &mut self.tls,
            ReadCause::PortClosed => &mut self.port_closed,
        } += 1;
    }

    /// Each cause with its count, as the reports name them.
    pub fn named(&self) -> [(&'static str, u64); 9] {
        [
            ("closed before answering", self.closed_unanswered),
            ("reset", self.reset),
            ("port closed", self.port_closed),
            ("closed early", self.closed),
            ("head too large", self.head_too_large),
            ("body too large", self.body_too_large),
            ("malformed", self.malformed),
            ("HTTP/2 frames", self.http2_only),
            ("TLS", self.tls),
        ]
    }
}

/// The causes that occurred, with their counts: `reset 2, closed early 1`.
fn write_named(f: &mut fmt::Formatter<'_>, named: &[(&str, u64)]) -> fmt::Result {
    let mut first = true;
    for (what, n) in named.iter().filter(|(_, n)| *n > 0) {
        if !first {
            f.write_str(", ")?;
        }
        first = false;
        write!(f, "{what} {n}")?;
    }
    Ok(())
}

impl fmt::Display for ReadCauses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_named(f, &self.named())
    }
}

impl fmt::Display for ConnectCauses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_named(f, &self.named())
    }
}

/// Why a read error happened (see [`ReadCauses`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadCause {
    Reset,
    Closed,
    ClosedUnanswered,
    HeadTooLarge,
    BodyTooLarge,
    Malformed,
    /// The server answered in another protocol (counted as `http2_only`:
    /// HTTP/1.1's requests answered in HTTP/2 are the one case).
    OtherProtocol,
    Tls,
    PortClosed,
}

/// Failed connection attempts by what they met; they add up to
/// [`Errors::connect`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConnectCauses {
    /// Nothing listened (ECONNREFUSED).
    pub refused: u64,
    /// The connect or TLS handshake took longer than `--timeout`.
    pub timeout: u64,
    /// The server reset or closed the connection while it opened.
    pub reset: u64,
    /// The TLS handshake failed.
    pub tls: u64,
    /// No socket could be made (too many open files, no local port, ...).
    pub local: u64,
    /// Anything else (unreachable, ...).
    pub other: u64,
}

impl ConnectCauses {
    pub fn add(&mut self, o: &ConnectCauses) {
        self.refused += o.refused;
        self.timeout += o.timeout;
        self.reset += o.reset;
        self.tls += o.tls;
        self.local += o.local;
        self.other += o.other;
    }

    pub fn count(&mut self, cause: ConnectCause) {
        *match cause {
            ConnectCause::Refused => &mut self.refused,
            ConnectCause::Timeout => &mut self.timeout,
            ConnectCause::Reset => &mut self.reset,
            ConnectCause::Tls => &mut self.tls,
            ConnectCause::Local => &mut self.local,
            ConnectCause::Other => &mut self.other,
        } += 1;
    }

    /// Each cause with its count, as the reports name them.
    pub fn named(&self) -> [(&'static str, u64); 6] {
        [
            ("refused", self.refused),
            ("timed out", self.timeout),
            ("reset", self.reset),
            ("TLS handshake", self.tls),
            ("no local socket", self.local),
            ("other", self.other),
        ]
    }
}

/// Why a connection attempt failed (see [`ConnectCauses`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectCause {
    Refused,
    Timeout,
    Reset,
    Tls,
    Local,
    Other,
}

/// Where every due request ended up, plus byte and connection counts.
///
/// The identity `due = completed + errors.lost_requests() + in_flight +
/// never_sent` holds for every run; [`Counters::balanced`] checks it.
/// `completed` includes responses counted in `errors.status`, as wrk's
/// request count does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    /// Requests whose intended send time fell in the measured window.
    pub due: u64,
    /// Requests whose response arrived in full.
    pub completed: u64,
    /// Response bytes (head and body) of completed requests.
    pub bytes: u64,
    pub errors: Errors,
    /// Requests written but not answered when the run ended.
    pub in_flight: u64,
    /// Requests due but still queued (not written) when the run ended.
    pub never_sent: u64,
    /// Connections reopened (or replaced) after one that had opened
    /// ended: closed, reset, retired by the server, or broken; `reopens`
    /// says by what.
    pub reconnects: u64,
    /// Requests that found every connection busy when they fell due and
    /// waited for one (rate mode). Their latency includes the wait.
    pub queued: u64,
    /// Latencies above the histogram's range, recorded at its maximum.
    pub saturated: u64,
    /// Of the requests never sent, those due before the run began: it
    /// started after its `--start-at` and passed them over.
    #[serde(default)]
    pub missed_at_start: u64,
    /// Where the connections stood when the run ended: what kept requests
    /// from being sent, when some never were.
    #[serde(default)]
    pub at_end: AtEnd,
    /// HTTP/2's resets, GOAWAYs, connection errors and requests sent again
    /// (all zero over HTTP/1.1).
    #[serde(default)]
    pub http2: Http2Counts,
    /// `errors.read` by cause.
    #[serde(default)]
    pub read_causes: ReadCauses,
    /// `errors.connect` by cause.
    #[serde(default)]
    pub connect_causes: ConnectCauses,
    /// Why requests waited for a slot, as each began to wait.
    #[serde(default)]
    pub waits: Waits,
    /// The connections at the start, at most, and opened on demand.
    #[serde(default)]
    pub connections: Pool,
    /// Completed responses by status code.
    #[serde(default)]
    pub status_codes: StatusCodes,
    /// QUIC's packets (HTTP/3; all zero otherwise).
    #[serde(default)]
    pub quic: QuicCounts,
    /// Completed calls by status (`--grpc`; empty otherwise).
    #[serde(default)]
    pub grpc: CallStatuses,
    /// Successful calls whose reply did not hold what `--grpc-check`
    /// asks (also in `errors.status`).
    #[serde(default)]
    pub failed_checks: u64,
    /// `reconnects` by what ended the connection before (absent from
    /// documents of older versions).
    #[serde(default)]
    pub reopens: Reopens,
    /// WebSocket closes the server sent, by code (empty otherwise).
    #[serde(default)]
    pub ws_closes: CloseCodes,
    /// WebSocket upgrades the server refused during the run, by the
    /// status it answered (`"429"`), or `"invalid"` for an answer that is
    /// no valid upgrade's.
    #[serde(default)]
    pub ws_refused: Refusals,
    /// WebSocket echo: messages that came with no message awaiting an
    /// answer. They are not timed.
    #[serde(default)]
    pub ws_unasked: u64,
    /// WebSocket pings sent (`--ws-ping`).
    #[serde(default)]
    pub ws_pings: u64,
    /// `--ws-deflate`: upgraded connections whose server agreed to
    /// permessage-deflate, and those whose server did not.
    #[serde(default)]
    pub ws_deflate_agreed: u64,
    #[serde(default)]
    pub ws_deflate_declined: u64,
    /// Of `errors.timeout`, requests on connections the server never
    /// answered while it answered others: connections it had not taken
    /// (left in its listen backlog, past its connection limit).
    #[serde(default)]
    pub timeout_unanswered: u64,
}

/// Connections reopened or replaced, by what ended the one before; they
/// add up to [`Counters::reconnects`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reopens {
    /// The server closed it after answering on it (an end of stream, or
    /// QUIC's close without an error).
    pub closed: u64,
    /// The server reset it, or closed it with an error code, after
    /// answering on it.
    pub reset: u64,
    /// The server closed or reset it before answering anything on it, as
    /// a server past its connection limit does.
    pub turned_away: u64,
    /// The server said it would take no new request on it (HTTP/2's and
    /// HTTP/3's GOAWAY, HTTP/1.1's `Connection: close`): replaced at once,
    /// it finished what was in flight on the side.
    pub retired: u64,
    /// HTTP/3: it had nothing in flight and the server granted it no
    /// stream (it kept the streams of cancelled requests open), so it was
    /// replaced.
    pub starved: u64,
    /// A request on it outlived `--timeout`, and its protocol cannot give
    /// up one request alone (HTTP/1.1), or QUIC's idle timeout ended it.
    pub timeout: u64,
    /// It broke: bytes that are not the protocol, TLS failing on it.
    pub failed: u64,
}

/// What ended a connection before it was reopened (see [`Reopens`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reopen {
    Closed,
    Reset,
    TurnedAway,
    Retired,
    Starved,
    Timeout,
    Failed,
}

impl Reopens {
    pub fn add(&mut self, o: &Reopens) {
        self.closed += o.closed;
        self.reset += o.reset;
        self.turned_away += o.turned_away;
        self.retired += o.retired;
        self.starved += o.starved;
        self.timeout += o.timeout;
        self.failed += o.failed;
    }

    pub fn count(&mut self, why: Reopen) {
        *match why {
            Reopen::Closed => &mut self.closed,
            Reopen::Reset => &mut self.reset,
            Reopen::TurnedAway => &mut self.turned_away,
            Reopen::Retired => &mut self.retired,
            Reopen::Starved => &mut self.starved,
            Reopen::Timeout => &mut self.timeout,
            Reopen::Failed => &mut self.failed,
        } += 1;
    }

    /// Each cause with its count, as the reports name them.
    pub fn named(&self) -> [(&'static str, u64); 7] {
        [
            ("retired by the server", self.retired),
            ("closed", self.closed),
            ("reset", self.reset),
            ("turned away unanswered", self.turned_away),
            ("granted no stream", self.starved),
            ("timed out", self.timeout),
            ("broken", self.failed),
        ]
    }
}

impl fmt::Display for Reopens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_named(f, &self.named())
    }
}

/// What QUIC's loss detection counted over the connections of a run
/// (HTTP/3): packets sent and declared lost (each then sent again, in
/// another packet), connections that sent 0-RTT data (`--0rtt`) and those
/// whose server accepted it. Counted over each connection's whole life,
/// warm-up included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QuicCounts {
    pub packets_sent: u64,
    pub packets_lost: u64,
    /// Connections whose 0-RTT data the server accepted.
    pub zero_rtt: u64,
    /// Connections that sent 0-RTT data, accepted or not (absent from
    /// reports saved before `--0rtt` existed).
    #[serde(default)]
    pub zero_rtt_offered: u64,
}

impl QuicCounts {
    pub fn add(&mut self, o: &QuicCounts) {
        self.packets_sent += o.packets_sent;
        self.packets_lost += o.packets_lost;
        self.zero_rtt += o.zero_rtt;
        self.zero_rtt_offered += o.zero_rtt_offered;
    }

    pub fn any(&self) -> bool {
        self.packets_sent > 0
    }
}

/// The connections (and threads) as the run ended, counted once per
/// connection: busy with requests the server had not answered, resting in
/// the script's `delay()`, or down (a connect that failed or had not
/// finished). Idle connections are not counted. `stopped_threads` counts
/// threads whose script called `thread:stop()` before the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AtEnd {
    pub busy: u64,
    pub resting: u64,
    pub down: u64,
    pub stopped_threads: u64,
    /// Connections the server had retired (its GOAWAY, say), still
    /// finishing what was in flight on them; replaced, and not among the
    /// others.
    #[serde(default)]
    pub draining: u64,
    /// Of `down`, why each last failed to connect.
    #[serde(default)]
    pub down_connect: ConnectCauses,
    /// Of `down`, why each open connection last ended, by read error.
    #[serde(default)]
    pub down_read: ReadCauses,
    /// Open, nothing in flight, and no stream the server would grant
    /// (HTTP/3's stream credit used up).
    #[serde(default)]
    pub held: u64,
}

impl AtEnd {
    pub fn add(&mut self, other: &AtEnd) {
        self.busy += other.busy;
        self.resting += other.resting;
        self.down += other.down;
        self.stopped_threads += other.stopped_threads;
        self.draining += other.draining;
        self.down_connect.add(&other.down_connect);
        self.down_read.add(&other.down_read);
        self.held += other.held;
    }
}

/// The connections over the run: how many opened at the start, the most
/// open at once (summed over threads: connections opened on demand stay
/// open, so each thread's most is its last), and how many opened on
/// demand (`--max-connections`, `-c auto`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pool {
    pub initial: u64,
    pub peak: u64,
    pub opened_on_demand: u64,
    /// When the pool found the server's connection limit (connections
    /// beyond some turned away, or left unanswered while others answered):
    /// about how many the server accepted, the most that answered at once
    /// (each thread's, added up). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_accepted: Option<u64>,
}

impl Pool {
    pub fn add(&mut self, o: &Pool) {
        self.initial += o.initial;
        self.peak += o.peak;
        self.opened_on_demand += o.opened_on_demand;
        self.server_accepted = match (self.server_accepted, o.server_accepted) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
    }
}

/// Why due requests found no free slot and waited for one (rate mode),
/// counted as each began to wait: every connection of its host open and
/// all of their streams busy, some of them down or opening, or all open
/// but held by the server's stream limit (below `-m`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Waits {
    pub busy: u64,
    pub down: u64,
    pub server_limit: u64,
}

impl Waits {
    pub fn add(&mut self, o: &Waits) {
        self.busy += o.busy;
        self.down += o.down;
        self.server_limit += o.server_limit;
    }

    pub fn count_n(&mut self, why: Wait, n: u64) {
        *match why {
            Wait::Busy => &mut self.busy,
            Wait::Down => &mut self.down,
            Wait::ServerLimit => &mut self.server_limit,
        } += n;
    }
}

/// Why one due request waited (see [`Waits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    Busy,
    Down,
    ServerLimit,
}

impl Counters {
    pub fn add(&mut self, other: &Counters) {
        self.due += other.due;
        self.completed += other.completed;
        self.bytes += other.bytes;
        self.errors.add(&other.errors);
        self.in_flight += other.in_flight;
        self.never_sent += other.never_sent;
        self.reconnects += other.reconnects;
        self.queued += other.queued;
        self.saturated += other.saturated;
        self.missed_at_start += other.missed_at_start;
        self.at_end.add(&other.at_end);
        self.http2.add(&other.http2);
        self.read_causes.add(&other.read_causes);
        self.connect_causes.add(&other.connect_causes);
        self.waits.add(&other.waits);
        self.connections.add(&other.connections);
        self.status_codes.add(&other.status_codes);
        self.quic.add(&other.quic);
        self.grpc.add(&other.grpc);
        self.failed_checks += other.failed_checks;
        self.reopens.add(&other.reopens);
        self.ws_closes.add(&other.ws_closes);
        self.ws_refused.add(&other.ws_refused);
        self.ws_unasked += other.ws_unasked;
        self.ws_pings += other.ws_pings;
        self.ws_deflate_agreed += other.ws_deflate_agreed;
        self.ws_deflate_declined += other.ws_deflate_declined;
        self.timeout_unanswered += other.timeout_unanswered;
    }

    /// Requests that never got a response and whose latency is therefore
    /// known only from below: timed out, in flight at the end, never sent
    /// (docs/MEASUREMENT.md, §6). Read and write errors are not among
    /// them: those requests ended, with an error instead of a response.
    pub fn unfinished(&self) -> u64 {
        self.errors.timeout + self.in_flight + self.never_sent
    }

    /// True when every due request is accounted for exactly once.
    pub fn balanced(&self) -> bool {
        self.due == self.accounted()
    }

    /// The requests placed in a bucket: completed, lost, in flight at the
    /// end, never sent. Equal to `due` when the books balance.
    pub fn accounted(&self) -> u64 {
        self.completed + self.errors.lost_requests() + self.in_flight + self.never_sent
    }
}

/// Everything one worker thread measured.
#[derive(Clone, Debug)]
pub struct ThreadStats {
    /// Corrected latency: intended send time → last response byte (µs).
    pub latency: Histogram<u64>,
    /// Uncorrected latency: first byte written → last response byte (µs).
    pub uncorrected: Histogram<u64>,
    /// Send lag: intended send time → first byte written (µs).
    pub send_lag: Histogram<u64>,
    /// Lower bounds of the corrected latency of unfinished requests: each
    /// one's age when it was given up ([`Counters::unfinished`]).
    pub unfinished: Histogram<u64>,
    pub counters: Counters,
    /// Completions over time, counted from the window's start.
    pub series: Completions,
    /// Request rates per 100 ms (`Req/Sec`).
    pub rates: RateSamples,
    /// CPU time (user + system) the thread used.
    pub cpu: Duration,
    /// Calls into the thread's Lua script (hooks and the one static build).
    pub script_calls: u64,
    /// The fastest response of the whole run, warm-up included (µs,
    /// uncorrected): what the server can do when nothing queues, which
    /// tells a slow server from too few connections (`verdict`).
    pub fastest_us: Option<u64>,
    /// The same measurements, interval by interval.
    pub intervals: IntervalRecorder,
    /// Per endpoint of a requests file, when asked for (else empty).
    pub endpoints: Vec<EndpointStats>,
    /// Per phase of a rate profile (else empty).
    pub phases: Vec<PhaseStats>,
    /// Time to first byte, connect and TLS handshake.
    pub timings: Timings,
    /// `--sse`: the events of streamed responses (else `None`).
    pub events: Option<EventStats>,
    /// A flow's visits (else `None`).
    pub visits: Option<VisitStats>,
    /// `--llm`: the answers in tokens (else `None`).
    pub llm: Option<LlmStats>,
}

/// One endpoint's share of a thread's (or, merged, the run's) requests;
/// in a flow, one step's.
#[derive(Clone, Debug, Default)]
pub struct EndpointStats {
    /// Its label: the request's name, or method and path.
    pub name: String,
    /// Responses received, error statuses included.
    pub completed: u64,
    /// Responses with a status above 399, and requests lost to read,
    /// write and timeout errors.
    pub errors: u64,
    /// Corrected latency; allocated on the first response, since most of
    /// a long list of endpoints may see none on a given thread.
    pub latency: Option<Histogram<u64>>,
    /// Uncorrected latency (send → response), likewise.
    pub uncorrected: Option<Histogram<u64>>,
    /// Lost requests at their ages when given up, and those on the wire
    /// at the end at their ages then (lower bounds of their corrected
    /// latency), once there was one.
    pub unfinished: Option<Histogram<u64>>,
    pub status_codes: StatusCodes,
}

/// A response of an endpoint, as [`ThreadStats::record_endpoint`] takes
/// it: corrected and uncorrected latency (µs) and status.
#[derive(Clone, Copy, Debug)]
pub struct Answered {
    pub corrected: u64,
    pub uncorrected: u64,
    pub status: u16,
}

impl EndpointStats {
    pub fn add(&mut self, other: &EndpointStats) {
        self.completed += other.completed;
        self.errors += other.errors;
        for (mine, theirs) in [
            (&mut self.latency, &other.latency),
            (&mut self.uncorrected, &other.uncorrected),
            (&mut self.unfinished, &other.unfinished),
        ] {
            if let Some(h) = theirs {
                add_histogram(mine.get_or_insert_with(new_histogram), h);
            }
        }
        self.status_codes.add(&other.status_codes);
    }
}

impl Default for ThreadStats {
    fn default() -> Self {
        ThreadStats {
            latency: new_histogram(),
            uncorrected: new_histogram(),
            send_lag: new_histogram(),
            unfinished: new_histogram(),
            counters: Counters::default(),
            series: Completions::default(),
            rates: RateSamples::default(),
            cpu: Duration::ZERO,
            script_calls: 0,
            intervals: IntervalRecorder::default(),
            endpoints: Vec::new(),
            phases: Vec::new(),
            fastest_us: None,
            timings: Timings::default(),
            events: None,
            llm: None,
            visits: None,
        }
    }
}

impl ThreadStats {
    /// Statistics with intervals of `interval` and `endpoints` endpoints;
    /// completions counted at exactly `counts_every` when an output needs
    /// that step (see [`Completions::new`]).
    pub fn new(
        interval: Duration,
        endpoints: usize,
        counts_every: Option<Duration>,
    ) -> ThreadStats {
        ThreadStats {
            intervals: IntervalRecorder::new(interval),
            series: Completions::new(counts_every),
            endpoints: vec![EndpointStats::default(); endpoints],
            ..ThreadStats::default()
        }
    }

    /// A measured request of endpoint `e` was lost, or was on the wire at
    /// the end, `age_us` after its intended time.
    pub fn record_endpoint_unfinished(&mut self, e: usize, age_us: u64) {
        if let Some(stats) = self.endpoint_mut(e) {
            record_clamped(stats.unfinished.get_or_insert_with(new_histogram), age_us);
        }
    }

    pub fn record_endpoint(&mut self, e: usize, answered: Option<Answered>, error: bool) {
        let Some(stats) = self.endpoint_mut(e) else {
            return;
        };
        stats.errors += u64::from(error);
        if let Some(a) = answered {
            stats.completed += 1;
            record_clamped(stats.latency.get_or_insert_with(new_histogram), a.corrected);
            record_clamped(
                stats.uncorrected.get_or_insert_with(new_histogram),
                a.uncorrected,
            );
            stats.status_codes.count(a.status);
        }
    }

    /// Endpoint `e`'s statistics. A flow's steps are named as the visits
    /// take them: their list grows.
    fn endpoint_mut(&mut self, e: usize) -> Option<&mut EndpointStats> {
        if self.visits.is_some() && self.endpoints.len() <= e {
            self.endpoints.resize(e + 1, EndpointStats::default());
        }
        self.endpoints.get_mut(e)
    }

    /// Records a value, clamping it into the histogram's range and counting
    /// clamped values so that nothing is silently dropped.
    #[inline]
    pub fn record(hist: &mut Histogram<u64>, saturated: &mut u64, value_us: u64) {
        *saturated += u64::from(record_clamped(hist, value_us));
    }

    /// Counts one completion at `offset_ns` from the window's start.
    #[inline]
    pub fn count_completion(&mut self, offset_ns: u64) {
        self.series.count(offset_ns);
        self.rates.count(offset_ns);
    }

    /// Completions in the `i`-th interval of length `step` from the
    /// window's start (see [`Completions::completions_in`]).
    pub fn completions_in(&self, i: usize, step: Duration) -> u64 {
        self.series.completions_in(i, step)
    }

    /// How many intervals of length `step` the series spans (see
    /// [`Completions::intervals_spanned`]).
    pub fn intervals_spanned(&self, step: Duration, window: Duration) -> usize {
        self.series.intervals_spanned(step, window)
    }
}

/// One interval of the measured window, all threads merged: what the
/// interval log, the JSON time series and the progress line are made of.
#[derive(Clone, Debug)]
pub struct IntervalStats {
    /// Position of the interval: it starts at `index` interval lengths
    /// from the window's start.
    pub index: u64,
    start: Duration,
    /// The time the interval covers: the interval length, less for a last
    /// interval that the window's end cuts short.
    pub length: Duration,
    /// Requests completed in the interval.
    pub completed: u64,
    /// Requests lost (read, write, timeout) and error statuses counted in
    /// the interval.
    pub errors: u64,
    /// The same by kind, and failed connects (which are not requests).
    pub kinds: Errors,
    /// Measured requests written in the interval (a request the server
    /// never processed counts again when it goes out again), and those
    /// that came back to wait to be written again. With the requests that
    /// ended (completed and lost), they give what was in flight at each
    /// interval's end, exactly, however the run went.
    pub sent: u64,
    pub returned: u64,
    /// Latencies recorded in the interval (µs), by completion time; send
    /// lag by send time.
    pub latency: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    pub send_lag: Histogram<u64>,
    /// Lower bounds of unfinished requests, by the time they were given
    /// up (the run's end, for those in flight or never sent).
    pub unfinished: Histogram<u64>,
    /// Time to first byte from the intended send time (µs), by completion
    /// time.
    pub ttfb: Histogram<u64>,
    /// `--sse`: first events (from the intended send time) and gaps
    /// between events, by the time each event came (µs).
    pub first_event: Histogram<u64>,
    pub event_gap: Histogram<u64>,
    /// `--llm`: time per output token of the answers that ended in the
    /// interval (µs), and their output tokens. The first events are the
    /// first tokens.
    pub tpot: Histogram<u64>,
    pub output_tokens: u64,
    /// Responses by status code, by completion time.
    pub status_codes: StatusCodes,
    /// TCP connects and TLS handshakes of the connections that opened in
    /// the interval (µs); those opened before the window count in its
    /// first interval.
    pub connect: Histogram<u64>,
    pub tls_handshake: Histogram<u64>,
    /// Each endpoint's (a flow step's) part, by index, when endpoints are
    /// kept.
    pub endpoints: Vec<Option<IntervalEndpoint>>,
}

/// One endpoint's (a flow step's) part of an interval.
#[derive(Clone, Debug)]
pub struct IntervalEndpoint {
    /// Corrected latency of its answers (µs), by completion time.
    pub latency: Histogram<u64>,
    /// Its requests lost, or answered with an error status, in the
    /// interval.
    pub errors: u64,
}

impl IntervalEndpoint {
    fn new() -> IntervalEndpoint {
        IntervalEndpoint {
            latency: new_histogram(),
            errors: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.latency.is_empty() && self.errors == 0
    }
}

impl IntervalStats {
    pub fn empty(index: u64, length: Duration) -> IntervalStats {
        IntervalStats {
            index,
            start: length * index as u32,
            length,
            completed: 0,
            errors: 0,
            kinds: Errors::default(),
            sent: 0,
            returned: 0,
            latency: new_histogram(),
            uncorrected: new_histogram(),
            send_lag: new_histogram(),
            unfinished: new_histogram(),
            ttfb: new_histogram(),
            first_event: new_histogram(),
            event_gap: new_histogram(),
            tpot: new_histogram(),
            output_tokens: 0,
            status_codes: StatusCodes::default(),
            connect: new_histogram(),
            tls_handshake: new_histogram(),
            endpoints: Vec::new(),
        }
    }

    /// Empties the interval and makes it interval `index` of `length`,
    /// keeping its histograms' memory.
    pub fn reuse(&mut self, index: u64, length: Duration) {
        self.index = index;
        self.start = length * index as u32;
        self.length = length;
        self.completed = 0;
        self.errors = 0;
        self.kinds = Errors::default();
        self.sent = 0;
        self.returned = 0;
        self.latency.reset();
        self.uncorrected.reset();
        self.send_lag.reset();
        self.unfinished.reset();
        self.ttfb.reset();
        self.first_event.reset();
        self.event_gap.reset();
        self.tpot.reset();
        self.output_tokens = 0;
        self.status_codes = StatusCodes::default();
        self.connect.reset();
        self.tls_handshake.reset();
        for e in self.endpoints.iter_mut().flatten() {
            e.latency.reset();
            e.errors = 0;
        }
    }

    /// Corrected latency with the unfinished requests' lower bounds
    /// included: the interval's conservative distribution.
    pub fn with_unfinished(&self) -> Cow<'_, Histogram<u64>> {
        conservative(&self.latency, &self.unfinished)
    }

    /// A request of endpoint `e` ended in the interval: answered after
    /// `corrected` µs, or lost (`None`); `error` when lost or answered
    /// with an error status.
    pub fn record_endpoint(&mut self, e: usize, corrected: Option<u64>, error: bool) {
        let into = self.endpoint(e);
        into.errors += u64::from(error);
        if let Some(us) = corrected {
            record_clamped(&mut into.latency, us);
        }
    }

    /// Endpoint `e`'s part, made when first used.
    pub(crate) fn endpoint(&mut self, e: usize) -> &mut IntervalEndpoint {
        if self.endpoints.len() <= e {
            self.endpoints.resize(e + 1, None);
        }
        self.endpoints[e].get_or_insert_with(IntervalEndpoint::new)
    }

    /// When the interval starts, from the window's start.
    pub fn start(&self) -> Duration {
        self.start
    }
}

/// The whole run: the threads' statistics merged, plus what the report
/// needs to know about the window.
#[derive(Clone, Debug)]
pub struct RunStats {
    pub latency: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    pub send_lag: Histogram<u64>,
    /// Lower bounds of the unfinished requests' corrected latency.
    pub unfinished: Histogram<u64>,
    /// Per-thread request rates sampled every 100 ms (wrk's `Req/Sec`),
    /// in requests per second.
    pub req_per_sec: Histogram<u64>,
    pub counters: Counters,
    /// Length of the measured window (after warm-up, up to the stop).
    pub window: Duration,
    /// What rates are computed over: the window, or one interval when the
    /// window is shorter (a run stopped at once), so that a handful of
    /// requests never make a rate of thousands a second. See
    /// [`RunStats::floor_rates_at`].
    pub rate_window: Duration,
    /// Why and when the run ended early; `None` when it ran its duration.
    pub interruption: Option<Interruption>,
    /// The threads as they were, for per-thread outputs.
    pub threads: Vec<ThreadStats>,
    /// Per endpoint, merged over threads (empty unless asked for).
    pub endpoints: Vec<EndpointStats>,
    /// Per phase of a rate profile, merged over threads (else empty).
    pub phases: Vec<PhaseStats>,
    /// Time to first byte, connect and TLS handshake, merged.
    pub timings: Timings,
    /// `--sse`: the events of streamed responses, merged (else `None`).
    pub events: Option<EventStats>,
    /// A flow's visits, merged (else `None`).
    pub visits: Option<VisitStats>,
    /// `--llm`: the answers in tokens, merged (else `None`).
    pub llm: Option<LlmStats>,
    /// The fastest response of any thread, warm-up included (µs).
    pub fastest_us: Option<u64>,
    /// The window's intervals, merged over the threads, as the reports
    /// draw them over time (filled in by the engine, which takes them as
    /// they close).
    pub history: History,
}

impl RunStats {
    pub fn merge(threads: Vec<ThreadStats>, window: Duration) -> RunStats {
        let mut latency = new_histogram();
        let mut uncorrected = new_histogram();
        let mut send_lag = new_histogram();
        let mut unfinished = new_histogram();
        let mut req_per_sec = Histogram::new(HIST_SIGFIG).expect("valid precision");
        let mut counters = Counters::default();
        let mut endpoints: Vec<EndpointStats> = Vec::new();
        let mut phases: Vec<PhaseStats> = Vec::new();
        let mut timings = Timings::default();
        let mut events: Option<EventStats> = None;
        let mut visits: Option<VisitStats> = None;
        let mut llm: Option<LlmStats> = None;
        for t in &threads {
            timings.add(&t.timings);
            if let Some(l) = &t.llm {
                llm.get_or_insert_with(Default::default).add(l);
            }
            if let Some(v) = &t.visits {
                visits.get_or_insert_with(Default::default).add(v);
            }
            if let Some(e) = &t.events {
                events.get_or_insert_with(Default::default).add(e);
            }
            if phases.len() < t.phases.len() {
                phases.resize_with(t.phases.len(), PhaseStats::default);
            }
            for (into, p) in phases.iter_mut().zip(&t.phases) {
                into.add(p);
            }
            if endpoints.len() < t.endpoints.len() {
                endpoints.resize(t.endpoints.len(), EndpointStats::default());
            }
            for (into, e) in endpoints.iter_mut().zip(&t.endpoints) {
                into.add(e);
            }
            add_histogram(&mut latency, &t.latency);
            add_histogram(&mut uncorrected, &t.uncorrected);
            add_histogram(&mut send_lag, &t.send_lag);
            add_histogram(&mut unfinished, &t.unfinished);
            // Auto-resizing on both sides, so adding cannot fail.
            let _ = req_per_sec.add(t.rates.samples(window));
            counters.add(&t.counters);
        }
        if let Some(v) = visits.as_mut() {
            v.fold_reasons();
        }
        RunStats {
            latency,
            uncorrected,
            send_lag,
            unfinished,
            req_per_sec,
            counters,
            window,
            rate_window: window,
            interruption: None,
            fastest_us: threads.iter().filter_map(|t| t.fastest_us).min(),
            threads,
            endpoints,
            phases,
            timings,
            events,
            visits,
            llm,
            history: History::new(Duration::from_secs(1)),
        }
    }

    /// Rates are never computed over less than `floor` (one interval, or
    /// the whole planned window when that is shorter): the measured window
    /// of a run stopped early may be a fraction of a millisecond.
    pub fn floor_rates_at(&mut self, floor: Duration) {
        self.rate_window = self.window.max(floor);
    }

    /// Corrected latency with the unfinished requests' lower bounds
    /// included: the conservative distribution (docs/MEASUREMENT.md, §6).
    pub fn with_unfinished(&self) -> Cow<'_, Histogram<u64>> {
        conservative(&self.latency, &self.unfinished)
    }

    /// Gives the endpoints their labels, by index.
    pub fn name_endpoints(&mut self, names: &[String]) {
        for (e, name) in self.endpoints.iter_mut().zip(names) {
            e.name.clone_from(name);
        }
    }

    /// A flow's visits started per second, over the same window as
    /// [`RunStats::requests_per_sec`].
    pub fn visits_per_sec(&self) -> Option<f64> {
        let v = self.visits.as_ref()?;
        Some(per_sec(v.started, self.rate_window))
    }

    /// Completed requests per second over the measured window (or its
    /// floor, [`RunStats::rate_window`]).
    pub fn requests_per_sec(&self) -> f64 {
        per_sec(self.counters.completed, self.rate_window)
    }

    /// Response bytes per second over the measured window (or its floor).
    pub fn bytes_per_sec(&self) -> f64 {
        per_sec(self.counters.bytes, self.rate_window)
    }

    /// Every interval of the window, merged over the threads (see
    /// [`interval::merged`]).
    pub fn intervals(&self) -> Vec<&IntervalRecorder> {
        self.threads.iter().map(|t| &t.intervals).collect()
    }

    /// CPU time of all workers together.
    pub fn cpu(&self) -> Duration {
        self.threads.iter().map(|t| t.cpu).sum()
    }
}

fn per_sec(n: u64, window: Duration) -> f64 {
    let secs = window.as_secs_f64();
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `metron report` and `metron merge` read saved documents: one from
    /// before connections turned away were told apart still reads.
    #[test]
    fn read_causes_of_older_documents_read_without_the_unanswered_count() {
        let old = r#"{"reset": 2, "closed": 3, "head_too_large": 0, "malformed": 0,
                      "http2_only": 0, "tls": 0}"#;
        let c: ReadCauses = serde_json::from_str(old).unwrap();
        assert_eq!((c.reset, c.closed, c.closed_unanswered), (2, 3, 0));
        let mut sum = c;
        sum.add(&ReadCauses {
            closed_unanswered: 4,
            ..ReadCauses::default()
        });
        assert_eq!(
            sum.to_string(),
            "closed before answering 4, reset 2, closed early 3"
        );
    }

    /// A document saved before `--0rtt` counted the connections that sent
    /// early data reads with none sent; today's reads back as written.
    #[test]
    fn quic_counts_of_older_documents_read_without_the_0rtt_offered() {
        let old = r#"{"packets_sent": 9, "packets_lost": 1, "zero_rtt": 0}"#;
        let q: QuicCounts = serde_json::from_str(old).unwrap();
        assert_eq!((q.packets_sent, q.zero_rtt_offered), (9, 0));
        let now = QuicCounts {
            zero_rtt: 2,
            zero_rtt_offered: 3,
            ..q
        };
        let back: QuicCounts = serde_json::from_str(&serde_json::to_string(&now).unwrap()).unwrap();
        assert_eq!(back, now);
        let mut sum = now;
        sum.add(&now);
        assert_eq!((sum.zero_rtt, sum.zero_rtt_offered), (4, 6));
    }

    #[test]
    fn a_histogram_takes_room_for_the_values_it_holds_and_grows_to_the_whole_range() {
        let full = Histogram::<u64>::new_with_bounds(HIST_LOW_US, HIST_HIGH_US, HIST_SIGFIG)
            .unwrap()
            .distinct_values();
        let mut h = new_histogram();
        record_clamped(&mut h, 10_000);
        // Up to 10 ms: 4 of the 27 buckets, 5,120 counts of the 28,672.
        assert_eq!(h.distinct_values(), 5 * 1024);
        assert!(record_clamped(&mut h, HIST_HIGH_US * 3));
        assert_eq!(h.distinct_values(), full);
        assert!(h.equivalent(h.max(), HIST_HIGH_US));
        // Sizes mix in additions, both ways, and the values stay put.
        let mut small = new_histogram();
        record_clamped(&mut small, 3);
        add_histogram(&mut small, &h);
        add_histogram(&mut h, &small);
        assert_eq!((small.len(), h.len()), (3, 5));
        assert_eq!(small.value_at_quantile(0.0), 3);
        assert_eq!(h.value_at_quantile(0.5), h.highest_equivalent(10_000));
    }

    #[test]
    fn counters_balance_when_every_request_is_placed() {
        let c = Counters {
            due: 10,
            completed: 5,
            errors: Errors {
                read: 1,
                write: 1,
                timeout: 1,
                status: 2,
                connect: 7,
            },
            in_flight: 1,
            never_sent: 1,
            ..Counters::default()
        };
        assert!(c.balanced());
        assert!(!Counters { due: 11, ..c }.balanced());
    }

    #[test]
    fn out_of_range_values_are_clamped_and_counted() {
        let mut h = new_histogram();
        let mut sat = 0;
        ThreadStats::record(&mut h, &mut sat, 0);
        ThreadStats::record(&mut h, &mut sat, HIST_HIGH_US * 2);
        assert_eq!(h.len(), 2);
        assert_eq!(sat, 1);
    }

    #[test]
    fn merge_adds_threads() {
        let mut a = ThreadStats::default();
        let mut b = ThreadStats::default();
        a.latency.record(100).unwrap();
        b.latency.record(300).unwrap();
        a.counters.completed = 1;
        b.counters.completed = 1;
        let run = RunStats::merge(vec![a, b], Duration::from_secs(1));
        assert_eq!(run.latency.len(), 2);
        assert_eq!(run.counters.completed, 2);
        assert_eq!(run.requests_per_sec(), 2.0);
    }
}
