//! The machine-readable result: one JSON document per run (`--json`).
//!
//! It carries everything the text and HTML reports show — configuration,
//! counters, accounting, percentiles, time series — plus the full
//! histograms (HdrHistogram V2, deflated, base64), so that `metron report`
//! can re-render any report from a saved document. The `schema` field is
//! bumped whenever a field changes meaning or goes away; new fields may be
//! added within a schema version.
//!
//! A figure that was not measured (a percentile of an interval in which
//! nothing completed, the send lag of a run that sent nothing) is `null`,
//! never 0. Documents of earlier versions wrote 0 there; since every
//! latency is recorded as at least 1 µs, a 0 can only mean "not measured",
//! and reading turns it into `None` ([`unmeasured`]).

use serde::{Deserialize, Deserializer, Serialize};

use crate::http::{Protocol, Spoken};
use crate::schedule::{Arrival, Load};
use crate::stats::{Counters, Errors, EventKind, StatusCodes, StopCause};
use crate::verdict::SloReport;

/// Version of the document layout; see the README for the fields.
pub const SCHEMA: u32 = 1;

/// Percentiles every latency summary lists.
pub const PERCENTILES: [f64; 10] = [
    50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 99.999, 99.9999, 100.0,
];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Document {
    pub schema: u32,
    pub metron_version: String,
    pub config: RunConfig,
    /// The protocol the server spoke: `HTTP/1.1`, `HTTP/2` or `HTTP/3`
    /// (each in turn when the hosts of a requests file differ). Absent
    /// from older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Spoken>,
    /// Length of the measured window, in seconds.
    pub window_s: f64,
    /// When the measured window began, in milliseconds since the Unix
    /// epoch: the origin of `series` and of each thread's series, for
    /// epoch-stamped time series. Absent from documents of older versions.
    #[serde(default)]
    pub window_start_ms: Option<u64>,
    /// The run was stopped early (Ctrl-C, `thread:stop()`, a script error).
    pub interrupted: bool,
    /// Why and when it was stopped, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interruption: Option<Interrupted>,
    pub counters: Counters,
    /// What the rates are computed over, in seconds: `window_s`, or one
    /// interval when the window is shorter. Absent from older documents.
    #[serde(default)]
    pub rate_window_s: Option<f64>,
    pub requests_per_sec: f64,
    pub bytes_per_sec: f64,
    /// CPU time (user + system) of all worker threads, in seconds.
    pub cpu_s: f64,
    pub latency: LatencySummaries,
    pub series: Series,
    pub threads: Vec<ThreadSummary>,
    pub histograms: EncodedHistograms,
    /// Per endpoint of a requests file (absent without one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<Endpoint>,
    /// Per phase of a rate profile (absent without one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseSummary>,
    /// A flow's visits (absent unless the script defines `flow(visit)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visits: Option<VisitsSummary>,
    /// `--sse`: the events of streamed responses (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<EventsSummary>,
    /// `--llm`: the answers in tokens (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmSummary>,
    /// The verdict of `--slo` (absent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<SloReport>,
    /// With `--start-at`: seconds from that instant to the moment the run
    /// began (a fraction of a millisecond when on time; an instance that
    /// came late counts the requests due before then as never sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_offset_s: Option<f64>,
    /// A document that `metron merge` made: the documents it added, one
    /// row each (absent from a single run's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<Instance>,
}

/// One of the documents a merged document adds up, as the per-instance
/// table shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// The file it was read from.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardConfig>,
    /// Requests per second asked of it, and achieved.
    pub rate: Option<f64>,
    pub requests_per_sec: f64,
    pub completed: u64,
    /// Lost requests and error statuses.
    pub errors: u64,
    pub never_sent: u64,
    /// p99 of its send lag, in microseconds; `null` when it sent nothing.
    #[serde(default, deserialize_with = "unmeasured")]
    pub send_lag_p99_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_offset_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_start_ms: Option<u64>,
    pub window_s: f64,
}

/// `--shard I/N`: this instance sent requests k with k mod N = I.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardConfig {
    pub index: u64,
    pub count: u64,
}

/// One phase of a rate profile: the requests intended in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    /// As the profile wrote it (`1k-5k:60s`).
    pub label: String,
    /// Where the phase starts and how long it lasts within the measured
    /// window, in seconds from the window's start.
    pub start_s: f64,
    pub length_s: f64,
    /// Requests intended in it, completed (error statuses included), and
    /// lost or answered with an error status.
    pub due: u64,
    pub completed: u64,
    pub errors: u64,
    /// Corrected latency with the unfinished requests' lower bounds, µs.
    pub latency: Summary,
    /// Corrected latency of completed requests and the unfinished ones'
    /// lower bounds, encoded as the run's histograms.
    pub histogram: String,
    pub unfinished: String,
}

impl Document {
    /// What one of its events is called: a server-sent "event", or a
    /// streamed call's "message".
    pub fn event_noun(&self) -> &'static str {
        self.events.as_ref().map_or("event", |e| e.kind.nouns().0)
    }

    /// The conservative distribution (completed requests and unfinished
    /// ones at their lower bounds), when any request went unfinished.
    pub fn with_unfinished(&self) -> Option<&Summary> {
        let corrected = self.latency.corrected.count;
        self.latency
            .with_unfinished
            .as_ref()
            .filter(|w| w.count > corrected)
    }
}

/// How an interrupted run ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interrupted {
    /// `interrupt` (Ctrl-C), `terminate` (SIGTERM), `error` (a script's)
    /// or `script-stop` (every thread called `thread:stop()`).
    pub cause: StopCause,
    /// Seconds from the start (warm-up included) to the stop.
    pub after_s: f64,
}

/// The run's configuration, as the engine used it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub url: String,
    pub threads: usize,
    pub connections: usize,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub timeout_s: f64,
    /// Requests per second asked for (of this instance: its part of `-R`
    /// under `--shard`); `null` in throughput mode.
    pub rate: Option<f64>,
    pub script: Option<String>,
    pub headers: Vec<String>,
    /// `--requests`: the file replayed, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<RequestsConfig>,
    /// `--llm`: what every request asked (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmConfig>,
    /// The protocols offered, in order of preference (`HTTP/1.1`,
    /// `HTTP/2`, `HTTP/3`); the document's `protocol` says which was
    /// spoken. Empty in documents of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offered: Vec<Protocol>,
    /// Streams in flight per connection at most (`-m`), when HTTP/2 or
    /// HTTP/3 was offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_streams: Option<u32>,
    /// How requests were spread in rate mode: `constant` or `poisson`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<Arrival>,
    /// The seed of Poisson arrivals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_seed: Option<u64>,
    /// `--rate-profile`: its phases (`rate` is then their mean).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_profile: Vec<ProfilePhase>,
    /// `--shard`: which part of the schedule this instance sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardConfig>,
    /// `--start-at`, in Unix seconds: the schedule's zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_s: Option<f64>,
    /// `--grpc`: the method every request called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<String>,
    /// `--0rtt`: HTTP/3 connections that resume a session send early data.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zero_rtt: bool,
    /// A `ws://` or `wss://` URL: the conversation each connection had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws: Option<WsConfig>,
}

/// A WebSocket run's conversation, as configured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WsConfig {
    /// `--ws`: `echo` (each message answered by one) or `push`.
    pub shape: String,
    /// `--ws-binary`: messages went as binary frames.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    /// `--ws-deflate`: permessage-deflate was offered.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deflate: bool,
    /// `--ws-match`: the field (a dotted path) answers were matched by.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub matching: Option<String>,
    /// `--ws-ping`: seconds between pings on each connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ping_s: Option<f64>,
}

impl WsConfig {
    /// Whether its server pushed (`--ws push`).
    pub fn pushes(&self) -> bool {
        self.shape == "push"
    }

    /// The flags that set it, as given (`--ws-deflate --ws-ping 5s`), or
    /// "none of --ws-binary, --ws-deflate, --ws-match and --ws-ping".
    pub fn flags(&self) -> String {
        let mut out = Vec::new();
        if self.binary {
            out.push("--ws-binary".to_string());
        }
        if self.deflate {
            out.push("--ws-deflate".to_string());
        }
        if let Some(field) = &self.matching {
            out.push(format!("--ws-match {field}"));
        }
        if let Some(s) = self.ping_s {
            out.push(format!("--ws-ping {s}s"));
        }
        if out.is_empty() {
            return "none of --ws-binary, --ws-deflate, --ws-match and --ws-ping".to_string();
        }
        out.join(" ")
    }
}

/// One phase of `--rate-profile` as configured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfilePhase {
    pub label: String,
    /// From the run's start (warm-up included), in seconds.
    pub start_s: f64,
    pub length_s: f64,
    /// Requests per second at its start and at its end.
    pub from: f64,
    pub to: f64,
}

impl RunConfig {
    /// How the run was paced, from the `rate` the document records.
    pub fn load(&self) -> Load {
        Load::from_rate(self.rate)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestsConfig {
    pub file: String,
    /// Requests in the file.
    pub count: usize,
    /// Distinct hosts they go to.
    pub hosts: usize,
    /// `sequential` or `random`.
    pub order: String,
    pub seed: u64,
    /// How the text report put it ("in file order", ...).
    pub described: String,
}

/// `--llm` as the document records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LlmConfig {
    /// `chat completions` or `completions`.
    pub api: String,
    /// The path every request went to.
    pub path: String,
    /// Where the prompts came from (a file, or `--prompt-words`).
    pub prompts: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    pub ignore_eos: bool,
    /// `stream_options.include_usage` was asked for.
    pub usage: bool,
    /// How the banner put what every body asked.
    pub described: String,
}

/// One endpoint's figures (with `--by-endpoint`, or when a requests file
/// has several endpoints).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    /// The request's `name`, or its method and path.
    pub name: String,
    /// Responses received, error statuses included.
    pub completed: u64,
    /// Error statuses and requests lost to read, write and timeout errors.
    pub errors: u64,
    /// Corrected latency, in microseconds.
    pub latency: Summary,
    /// The corrected latency histogram, encoded as the others.
    pub histogram: String,
    /// Uncorrected latency (send → response), in microseconds, and its
    /// histogram. Absent from older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected_histogram: Option<String>,
    /// Lost requests at their ages when given up (lower bounds), once one
    /// was lost. Absent from older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished_histogram: Option<String>,
    /// Responses by status code. Absent from older documents.
    #[serde(default, skip_serializing_if = "StatusCodes::is_empty")]
    pub status_codes: StatusCodes,
}

/// A flow's visits (`flow(visit)`): their ledger and durations. Its
/// ledger holds: `due = completed + failed + in_flight + never_started`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VisitsSummary {
    /// Measured visits the schedule asked for (started + never started).
    pub due: u64,
    pub started: u64,
    pub completed: u64,
    /// Failed visits in all, and by the reason `visit:fail` gave.
    pub failed: u64,
    pub failed_by: std::collections::BTreeMap<String, u64>,
    /// Started and still running when the run stopped.
    pub in_flight: u64,
    /// Due, but no step of theirs ever started.
    pub never_started: u64,
    /// Completed visits: scheduled start → end, in microseconds.
    pub duration: Summary,
    /// The durations with every unfinished visit counted at its age at
    /// the end, a lower bound.
    pub duration_with_unfinished: Summary,
    /// The two histograms, encoded as the others.
    pub duration_histogram: String,
    pub unfinished_histogram: String,
}

/// Latency summaries, all in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencySummaries {
    /// Intended send time → response (send → response in throughput mode).
    pub corrected: Summary,
    /// First byte written → response.
    pub uncorrected: Summary,
    /// Intended send time → first byte written.
    pub send_lag: Summary,
    /// The corrected latency with every unfinished request (timed out, in
    /// flight at the end, never sent) counted at its age when it was given
    /// up, a lower bound: the conservative distribution. The same as
    /// `corrected` when every request completed. Absent from older
    /// documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_unfinished: Option<Summary>,
    /// Time to first byte: to the first byte of the response head, from
    /// the intended send time (`corrected`) and from the send
    /// (`uncorrected`). Absent from older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb: Option<FirstByte>,
    /// TCP connect times of every connection the run opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<Summary>,
    /// TLS handshake times of every connection the run opened over TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake: Option<Summary>,
}

/// `--sse`: the events of streamed responses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventsSummary {
    /// What the bodies were read as: `sse`, or a streamed call's
    /// messages (`grpc`).
    pub kind: EventKind,
    /// Mean events per completed response; `null` when none completed.
    pub per_response: Option<f64>,
    /// Events in all, of completed responses and of those still
    /// streaming at the end.
    pub count: u64,
    /// Completed responses, and the events they carried.
    pub responses: u64,
    pub completed_events: u64,
    /// Completed responses that carried no event (not event streams, or
    /// streams that ended before their first). Absent from older
    /// documents, which read as 0.
    #[serde(default)]
    pub without_events: u64,
    /// First events that came before their stream was due (a WebSocket
    /// server pushing before a subscription's turn), counted as 0.
    #[serde(default)]
    pub before_due: u64,
    /// Lower bounds among `first` and `gap`: responses still streaming at
    /// the end (their open gap) or without an event yet (their first).
    pub open: u64,
    /// Intended send time → first event of a response (µs).
    pub first: Summary,
    /// Between consecutive events of a response (µs).
    pub gap: Summary,
    /// The two histograms, encoded as the others.
    pub first_histogram: String,
    pub gap_histogram: String,
}

/// `--llm`: the answers of a model server in tokens. Times in µs, from
/// the intended send time unless named uncorrected; token counts per
/// request in `input_tokens` and `output_tokens`, in the same shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LlmSummary {
    /// Where output tokens were counted from: `usage` (the server's
    /// count), `chunks` (one per chunk carrying text) or `mixed`.
    pub token_source: String,
    /// Completed responses read as completion streams, and of them: those
    /// the server's usage counted, those without a token, those whose
    /// stream reported an error, those without `[DONE]`.
    pub responses: u64,
    /// Answers with a status other than 2xx, and requests lost before
    /// their answer ended (absent in older documents: 0).
    #[serde(default)]
    pub error_status: u64,
    #[serde(default)]
    pub lost: u64,
    pub with_usage: u64,
    pub without_tokens: u64,
    pub stream_errors: u64,
    pub without_done: u64,
    /// Events whose data was not a JSON chunk.
    pub unreadable: u64,
    /// Streams still without a token at the end: lower bounds in `ttft`.
    pub open: u64,
    pub input_tokens_total: u64,
    pub output_tokens_total: u64,
    /// Output tokens per second over the measured window.
    pub output_tokens_per_s: f64,
    pub ttft: Summary,
    pub ttft_uncorrected: Summary,
    pub tpot: Summary,
    pub itl: Summary,
    pub input_tokens: Summary,
    pub output_tokens: Summary,
    /// `--goodput`: the requests that met every bound (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<GoodputSummary>,
    /// The six histograms, encoded as the others, so that `report` and
    /// `merge` stay exact.
    pub histograms: LlmHistograms,
}

/// `--goodput`'s bounds and what met them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoodputSummary {
    pub bounds: crate::stats::llm::Goodput,
    pub good: u64,
    /// Of the responses.
    pub fraction: Option<f64>,
    pub per_s: f64,
}

/// [`LlmSummary`]'s histograms, encoded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LlmHistograms {
    pub ttft: String,
    pub ttft_uncorrected: String,
    pub tpot: String,
    pub itl: String,
    pub input_tokens: String,
    pub output_tokens: String,
}

/// Time to first byte, both ways, in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FirstByte {
    pub corrected: Summary,
    pub uncorrected: Summary,
}

/// A distribution's figures; with `count` 0 every one of them is `null`
/// (and the spectrum empty): nothing was measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "SavedSummary")]
pub struct Summary {
    pub count: u64,
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub mean: Option<f64>,
    pub stdev: Option<f64>,
    /// `[percentile, value]` for each of [`PERCENTILES`].
    pub percentiles: Vec<(f64, Option<u64>)>,
    /// The full spectrum (5 ticks per half distance): `[percentile,
    /// value, cumulative count]`.
    pub spectrum: Vec<(f64, u64, u64)>,
}

impl Summary {
    /// The value listed at percentile `p`, when the summary lists it and
    /// has values at all.
    pub fn at(&self, p: f64) -> Option<u64> {
        self.percentiles
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .and_then(|&(_, v)| v)
    }
}

/// A summary as a document holds it, of this version (`null` for what was
/// not measured) or an earlier one (zeros), read into a [`Summary`].
#[derive(Deserialize)]
struct SavedSummary {
    count: u64,
    min: Option<u64>,
    max: Option<u64>,
    mean: Option<f64>,
    stdev: Option<f64>,
    percentiles: Vec<(f64, Option<u64>)>,
    spectrum: Vec<(f64, u64, u64)>,
}

impl From<SavedSummary> for Summary {
    fn from(s: SavedSummary) -> Summary {
        // An empty distribution has no figures, whatever zeros an older
        // document wrote for them.
        let measured = s.count > 0;
        let keep = |v: Option<u64>| v.filter(|_| measured);
        Summary {
            count: s.count,
            min: keep(s.min),
            max: keep(s.max),
            mean: s.mean.filter(|_| measured),
            stdev: s.stdev.filter(|_| measured),
            percentiles: s
                .percentiles
                .into_iter()
                .map(|(p, v)| (p, keep(v)))
                .collect(),
            spectrum: s.spectrum,
        }
    }
}

/// Reads a figure that may not have been measured: `null`, or the 0 that
/// documents of earlier versions wrote for it (a measured latency is at
/// least 1 µs), is `None`.
pub fn unmeasured<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.filter(|&v| v > 0))
}

/// Per-interval figures over the measured window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Length of each interval, in seconds.
    pub interval_s: f64,
    pub points: Vec<Point>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Start of the interval, in seconds from the window's start.
    pub t: f64,
    pub completed: u64,
    /// Requests lost (read, write, timeout) and error statuses.
    pub errors: u64,
    /// Corrected latency percentiles of the requests completed in the
    /// interval, in microseconds (`null` when none completed).
    #[serde(default, deserialize_with = "unmeasured")]
    pub p50: Option<u64>,
    #[serde(default, deserialize_with = "unmeasured")]
    pub p90: Option<u64>,
    #[serde(default, deserialize_with = "unmeasured")]
    pub p99: Option<u64>,
    #[serde(default, deserialize_with = "unmeasured")]
    pub p999: Option<u64>,
    #[serde(default, deserialize_with = "unmeasured")]
    pub p9999: Option<u64>,
    #[serde(default, deserialize_with = "unmeasured")]
    pub max: Option<u64>,
    /// Requests given up in the interval (timed out; in the last interval
    /// also those in flight or never sent at the end).
    #[serde(default)]
    pub unfinished: u64,
    /// p99 of the interval's conservative distribution (completed and
    /// unfinished requests); `null` when there were neither.
    #[serde(default, deserialize_with = "unmeasured")]
    pub p99_with_unfinished: Option<u64>,
    /// The interval's corrected latency, and its unfinished requests'
    /// lower bounds, encoded as the run's histograms: what lets `metron
    /// merge` add several instances' intervals exactly. Absent from
    /// older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished_histogram: Option<String>,
    /// The interval's length in seconds: `interval_s`, or less for the
    /// window's last, cut short. Absent from older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length_s: Option<f64>,
    /// Requests the schedule intended in the interval (rate mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intended: Option<u64>,
    /// `errors` by kind, and the failed connects of the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kinds: Option<Errors>,
    /// p99 of the uncorrected latency, and of the send lag (rate mode);
    /// absent when nothing completed, or nothing was sent, in the interval.
    #[serde(
        default,
        deserialize_with = "unmeasured",
        skip_serializing_if = "Option::is_none"
    )]
    pub uncorrected_p99: Option<u64>,
    #[serde(
        default,
        deserialize_with = "unmeasured",
        skip_serializing_if = "Option::is_none"
    )]
    pub send_lag_p99: Option<u64>,
    /// p99 of the time to first byte from the intended send time; absent
    /// when nothing completed in the interval.
    #[serde(
        default,
        deserialize_with = "unmeasured",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttfb_p99: Option<u64>,
    /// `--sse`: p99 of the first events and of the gaps between events
    /// that came in the interval; absent when none came.
    #[serde(
        default,
        deserialize_with = "unmeasured",
        skip_serializing_if = "Option::is_none"
    )]
    pub first_event_p99: Option<u64>,
    #[serde(
        default,
        deserialize_with = "unmeasured",
        skip_serializing_if = "Option::is_none"
    )]
    pub event_gap_p99: Option<u64>,
    /// `--llm`: p99 of the time per output token of the answers that
    /// ended in the interval (absent when none of two tokens or more
    /// did), and their output tokens (absent from other runs). The first
    /// events are the first tokens: `first_event_p99` is TTFT's p99.
    #[serde(
        default,
        deserialize_with = "unmeasured",
        skip_serializing_if = "Option::is_none"
    )]
    pub tpot_p99: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
}

/// One endpoint's (a flow step's) part of an interval, as the outputs
/// written during the run show it: `--csv`'s rows and the dashboard's
/// points. The document's series keeps the run's totals alone (its
/// `endpoints` keep each one's totals over the window).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EndpointPoint {
    pub name: String,
    /// Answers received in the interval, error statuses included.
    pub completed: u64,
    /// Requests lost or answered with an error status in the interval.
    pub errors: u64,
    /// Corrected latency percentiles of the interval's answers, in µs
    /// (`null` when none came).
    pub p50: Option<u64>,
    pub p90: Option<u64>,
    pub p99: Option<u64>,
    pub p999: Option<u64>,
    pub max: Option<u64>,
}

impl Point {
    /// An interval starting at `t` in which nothing happened.
    pub fn empty(t: f64) -> Point {
        Point {
            t,
            completed: 0,
            errors: 0,
            p50: None,
            p90: None,
            p99: None,
            p999: None,
            p9999: None,
            max: None,
            unfinished: 0,
            p99_with_unfinished: None,
            histogram: None,
            unfinished_histogram: None,
            length_s: None,
            intended: None,
            error_kinds: None,
            uncorrected_p99: None,
            ttfb_p99: None,
            first_event_p99: None,
            event_gap_p99: None,
            tpot_p99: None,
            output_tokens: None,
            send_lag_p99: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadSummary {
    pub completed: u64,
    pub cpu_s: f64,
    /// Completions per `series_step_s`.
    pub series_step_s: f64,
    pub series: Vec<u64>,
}

/// The run's histograms, each HdrHistogram V2 deflate-compressed and
/// base64-encoded (the encoding HdrHistogram's interval logs use).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EncodedHistograms {
    pub corrected: String,
    pub uncorrected: String,
    pub send_lag: String,
    pub req_per_sec: String,
    /// The unfinished requests' lower bounds alone (add `corrected` for
    /// the conservative distribution). Absent from older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<String>,
    /// Time to first byte (corrected, uncorrected), connect and TLS
    /// handshake, in the order of their names. Absent from older
    /// documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb_uncorrected: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake: Option<String>,
}

mod build {
    //! Building a document from a run, and statistics back from a document.

    use std::io;
    use std::time::Duration;

    use hdrhistogram::Histogram;

    use super::*;
    use crate::http::Spoken;
    use crate::report::spectrum;
    use crate::stats::codec::{self, encode};
    use crate::stats::VisitStats;
    use crate::stats::{
        new_histogram, summary, EndpointStats, EventStats, Interruption, IntervalStats, LlmStats,
        PhaseStats, RunStats, Timings, HIST_SIGFIG,
    };

    impl Point {
        /// The point of one interval of a run; `intended` from the
        /// schedule; `tokens` says the run counts tokens (`--llm`).
        pub fn of(iv: &IntervalStats, intended: Option<u64>, tokens: bool) -> Point {
            let at = summary::percentile;
            Point {
                t: iv.start().as_secs_f64(),
                completed: iv.completed,
                errors: iv.errors,
                p50: at(&iv.latency, 50.0),
                p90: at(&iv.latency, 90.0),
                p99: at(&iv.latency, 99.0),
                p999: at(&iv.latency, 99.9),
                p9999: at(&iv.latency, 99.99),
                max: summary::maximum(&iv.latency),
                unfinished: iv.unfinished.len(),
                p99_with_unfinished: at(&iv.with_unfinished(), 99.0),
                histogram: Some(encode(&iv.latency)),
                unfinished_histogram: Some(encode(&iv.unfinished)),
                length_s: Some(iv.length.as_secs_f64()),
                intended,
                error_kinds: Some(iv.kinds),
                uncorrected_p99: at(&iv.uncorrected, 99.0),
                ttfb_p99: at(&iv.ttfb, 99.0),
                first_event_p99: at(&iv.first_event, 99.0),
                event_gap_p99: at(&iv.event_gap, 99.0),
                tpot_p99: at(&iv.tpot, 99.0),
                output_tokens: tokens.then_some(iv.output_tokens),
                send_lag_p99: at(&iv.send_lag, 99.0),
            }
        }
    }

    impl EndpointPoint {
        /// The parts of the endpoints named in `names` (by index) that saw
        /// anything in the interval, in the order of their names.
        pub fn all(iv: &IntervalStats, names: &[String]) -> Vec<EndpointPoint> {
            names
                .iter()
                .zip(&iv.endpoints)
                .filter_map(|(name, e)| {
                    let e = e.as_ref().filter(|e| !e.is_empty())?;
                    Some(EndpointPoint::of(name, &e.latency, e.errors))
                })
                .collect()
        }

        /// Endpoint `name` with the corrected latency of its answers and
        /// its errors, over an interval or any longer time.
        pub fn of(name: &str, latency: &Histogram<u64>, errors: u64) -> EndpointPoint {
            let at = summary::percentile;
            EndpointPoint {
                name: name.to_string(),
                completed: latency.len(),
                errors,
                p50: at(latency, 50.0),
                p90: at(latency, 90.0),
                p99: at(latency, 99.0),
                p999: at(latency, 99.9),
                max: summary::maximum(latency),
            }
        }
    }

    impl EventsSummary {
        pub fn of(e: &EventStats) -> EventsSummary {
            EventsSummary {
                kind: e.kind,
                per_response: e.per_response(),
                count: e.count,
                responses: e.responses,
                completed_events: e.completed_events,
                without_events: e.without_events,
                before_due: e.before_due,
                open: e.open,
                first: summarize(&e.first),
                gap: summarize(&e.gap),
                first_histogram: encode(&e.first),
                gap_histogram: encode(&e.gap),
            }
        }

        /// The statistics back.
        pub fn stats(&self) -> io::Result<EventStats> {
            Ok(EventStats {
                kind: self.kind,
                first: decode(&self.first_histogram)?,
                gap: decode(&self.gap_histogram)?,
                count: self.count,
                completed_events: self.completed_events,
                responses: self.responses,
                without_events: self.without_events,
                open: self.open,
                before_due: self.before_due,
            })
        }
    }

    impl LlmSummary {
        /// `l`, over a measured window of `window`.
        pub fn of(l: &LlmStats, window: Duration) -> LlmSummary {
            let per_s = |n: u64| {
                let s = window.as_secs_f64();
                if s > 0.0 {
                    n as f64 / s
                } else {
                    0.0
                }
            };
            LlmSummary {
                token_source: l.token_source().to_string(),
                responses: l.responses,
                error_status: l.error_status,
                lost: l.lost,
                with_usage: l.with_usage,
                without_tokens: l.without_tokens,
                stream_errors: l.stream_errors,
                without_done: l.without_done,
                unreadable: l.unreadable,
                open: l.open,
                input_tokens_total: l.input_total,
                output_tokens_total: l.output_total,
                output_tokens_per_s: per_s(l.output_total),
                ttft: summarize(&l.ttft),
                ttft_uncorrected: summarize(&l.ttft_uncorrected),
                tpot: summarize(&l.tpot),
                itl: summarize(&l.itl),
                input_tokens: summarize(&l.input_tokens),
                output_tokens: summarize(&l.output_tokens),
                goodput: l.goodput.map(|bounds| GoodputSummary {
                    bounds,
                    good: l.good,
                    fraction: l.good_fraction(),
                    per_s: per_s(l.good),
                }),
                histograms: LlmHistograms {
                    ttft: encode(&l.ttft),
                    ttft_uncorrected: encode(&l.ttft_uncorrected),
                    tpot: encode(&l.tpot),
                    itl: encode(&l.itl),
                    input_tokens: encode(&l.input_tokens),
                    output_tokens: encode(&l.output_tokens),
                },
            }
        }

        /// The statistics back.
        pub fn stats(&self) -> io::Result<LlmStats> {
            let h = &self.histograms;
            Ok(LlmStats {
                ttft: decode(&h.ttft)?,
                ttft_uncorrected: decode(&h.ttft_uncorrected)?,
                tpot: decode(&h.tpot)?,
                itl: decode(&h.itl)?,
                input_tokens: decode(&h.input_tokens)?,
                output_tokens: decode(&h.output_tokens)?,
                responses: self.responses,
                error_status: self.error_status,
                lost: self.lost,
                with_usage: self.with_usage,
                without_tokens: self.without_tokens,
                stream_errors: self.stream_errors,
                without_done: self.without_done,
                unreadable: self.unreadable,
                input_total: self.input_tokens_total,
                output_total: self.output_tokens_total,
                good: self.goodput.as_ref().map_or(0, |g| g.good),
                goodput: self.goodput.as_ref().map(|g| g.bounds),
                open: self.open,
            })
        }
    }

    impl Endpoint {
        pub fn of(e: &EndpointStats) -> Endpoint {
            let empty = new_histogram();
            let h = e.latency.as_ref().unwrap_or(&empty);
            Endpoint {
                name: e.name.clone(),
                completed: e.completed,
                errors: e.errors,
                latency: summarize(h),
                histogram: encode(h),
                uncorrected: e.uncorrected.as_ref().map(summarize),
                uncorrected_histogram: e.uncorrected.as_ref().map(encode),
                unfinished_histogram: e.unfinished.as_ref().map(encode),
                status_codes: e.status_codes,
            }
        }

        /// The statistics back.
        pub fn stats(&self) -> io::Result<EndpointStats> {
            Ok(EndpointStats {
                name: self.name.clone(),
                completed: self.completed,
                errors: self.errors,
                latency: Some(decode(&self.histogram)?),
                uncorrected: self
                    .uncorrected_histogram
                    .as_deref()
                    .map(decode)
                    .transpose()?,
                unfinished: self
                    .unfinished_histogram
                    .as_deref()
                    .map(decode)
                    .transpose()?,
                status_codes: self.status_codes,
            })
        }
    }

    impl VisitsSummary {
        pub fn of(v: &VisitStats) -> VisitsSummary {
            let mut both = v.duration.clone();
            crate::stats::add_histogram(&mut both, &v.unfinished);
            VisitsSummary {
                due: v.due(),
                started: v.started,
                completed: v.completed,
                failed: v.failed_total(),
                failed_by: v.failed.clone(),
                in_flight: v.in_flight,
                never_started: v.never_started,
                duration: summarize(&v.duration),
                duration_with_unfinished: summarize(&both),
                duration_histogram: encode(&v.duration),
                unfinished_histogram: encode(&v.unfinished),
            }
        }

        /// The statistics back.
        pub fn stats(&self) -> io::Result<VisitStats> {
            Ok(VisitStats {
                started: self.started,
                completed: self.completed,
                failed: self.failed_by.clone(),
                in_flight: self.in_flight,
                never_started: self.never_started,
                duration: decode(&self.duration_histogram)?,
                unfinished: decode(&self.unfinished_histogram)?,
            })
        }
    }

    impl LatencySummaries {
        /// These summaries with the phases of `t`.
        pub fn with_timings(self, t: &Timings) -> LatencySummaries {
            LatencySummaries {
                ttfb: Some(FirstByte {
                    corrected: summarize(&t.ttfb),
                    uncorrected: summarize(&t.ttfb_uncorrected),
                }),
                connect: Some(summarize(&t.connect)),
                tls_handshake: Some(summarize(&t.tls_handshake)),
                ..self
            }
        }
    }

    impl EncodedHistograms {
        /// These histograms with the phases of `t`.
        pub fn with_timings(self, t: &Timings) -> EncodedHistograms {
            let [ttfb, ttfb_uncorrected, connect, tls_handshake] =
                t.histograms().map(|h| Some(encode(h)));
            EncodedHistograms {
                ttfb,
                ttfb_uncorrected,
                connect,
                tls_handshake,
                ..self
            }
        }

        /// The phase histograms saved; empty ones for a document older
        /// than them.
        pub fn timings(&self) -> io::Result<Timings> {
            let mut t = Timings::default();
            let saved = [
                &self.ttfb,
                &self.ttfb_uncorrected,
                &self.connect,
                &self.tls_handshake,
            ];
            for (into, text) in t.histograms_mut().into_iter().zip(saved) {
                if let Some(text) = text {
                    *into = decode(text)?;
                }
            }
            Ok(t)
        }
    }

    impl Document {
        /// Everything the run measured, with the description of the run
        /// that drove it (built by the caller, which knows its settings):
        /// `window_start` the wall-clock time the measured window began,
        /// `protocol` what the server spoke.
        pub fn new(
            config: RunConfig,
            protocol: &Spoken,
            s: &RunStats,
            window_start: std::time::SystemTime,
        ) -> Document {
            Document {
                schema: SCHEMA,
                metron_version: env!("CARGO_PKG_VERSION").to_string(),
                config,
                protocol: Some(protocol.clone()),
                window_s: s.window.as_secs_f64(),
                window_start_ms: window_start
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()
                    .map(|d| d.as_millis() as u64),
                interrupted: s.interruption.is_some(),
                interruption: s.interruption.map(|i| Interrupted {
                    cause: i.cause,
                    after_s: i.after.as_secs_f64(),
                }),
                counters: s.counters,
                rate_window_s: Some(s.rate_window.as_secs_f64()),
                requests_per_sec: s.requests_per_sec(),
                bytes_per_sec: s.bytes_per_sec(),
                cpu_s: s.cpu().as_secs_f64(),
                latency: LatencySummaries {
                    corrected: summarize(&s.latency),
                    uncorrected: summarize(&s.uncorrected),
                    send_lag: summarize(&s.send_lag),
                    with_unfinished: Some(summarize(&s.with_unfinished())),
                    ttfb: None,
                    connect: None,
                    tls_handshake: None,
                }
                .with_timings(&s.timings),
                series: series(s),
                threads: s
                    .threads
                    .iter()
                    .map(|t| ThreadSummary {
                        completed: t.counters.completed,
                        cpu_s: t.cpu.as_secs_f64(),
                        series_step_s: t.series.step().as_secs_f64(),
                        series: t.series.counts().to_vec(),
                    })
                    .collect(),
                histograms: EncodedHistograms {
                    corrected: encode(&s.latency),
                    uncorrected: encode(&s.uncorrected),
                    send_lag: encode(&s.send_lag),
                    req_per_sec: encode(&s.req_per_sec),
                    unfinished: Some(encode(&s.unfinished)),
                    ttfb: None,
                    ttfb_uncorrected: None,
                    connect: None,
                    tls_handshake: None,
                }
                .with_timings(&s.timings),
                endpoints: s.endpoints.iter().map(Endpoint::of).collect(),
                visits: s.visits.as_ref().map(VisitsSummary::of),
                phases: s
                    .phases
                    .iter()
                    .map(|p| PhaseSummary {
                        label: p.label.clone(),
                        start_s: p.start.as_secs_f64(),
                        length_s: p.length.as_secs_f64(),
                        due: p.due,
                        completed: p.completed,
                        errors: p.errors,
                        latency: summarize(&p.with_unfinished()),
                        histogram: encode(&p.latency),
                        unfinished: encode(&p.unfinished),
                    })
                    .collect(),
                events: s.events.as_ref().map(EventsSummary::of),
                llm: s.llm.as_ref().map(|l| LlmSummary::of(l, s.rate_window)),
                slo: None,
                start_offset_s: None,
                instances: Vec::new(),
            }
        }

        /// The run's statistics back from a saved document, for re-rendering
        /// its reports. Per-thread series come back; per-thread histograms
        /// were not saved.
        pub fn stats(&self) -> io::Result<RunStats> {
            let h = &self.histograms;
            let mut stats = RunStats::merge(Vec::new(), Duration::from_secs_f64(self.window_s));
            stats.latency = decode(&h.corrected)?;
            stats.uncorrected = decode(&h.uncorrected)?;
            stats.send_lag = decode(&h.send_lag)?;
            stats.req_per_sec = decode(&h.req_per_sec)?;
            if let Some(u) = &h.unfinished {
                stats.unfinished = decode(u)?;
            }
            stats.timings = h.timings()?;
            stats.events = self.events.as_ref().map(EventsSummary::stats).transpose()?;
            stats.llm = self.llm.as_ref().map(LlmSummary::stats).transpose()?;
            stats.counters = self.counters;
            if let Some(w) = self.rate_window_s {
                stats.rate_window = Duration::from_secs_f64(w);
            }
            stats.interruption = self.interruption.as_ref().map(|i| Interruption {
                cause: i.cause,
                after: Duration::from_secs_f64(i.after_s),
            });
            stats.endpoints = self
                .endpoints
                .iter()
                .map(Endpoint::stats)
                .collect::<io::Result<_>>()?;
            stats.visits = self.visits.as_ref().map(VisitsSummary::stats).transpose()?;
            stats.phases = self
                .phases
                .iter()
                .map(|p| {
                    Ok(PhaseStats {
                        label: p.label.clone(),
                        start: Duration::from_secs_f64(p.start_s),
                        length: Duration::from_secs_f64(p.length_s),
                        due: p.due,
                        completed: p.completed,
                        errors: p.errors,
                        latency: decode(&p.histogram)?,
                        unfinished: decode(&p.unfinished)?,
                    })
                })
                .collect::<io::Result<_>>()?;
            Ok(stats)
        }
    }

    pub fn summarize(h: &Histogram<u64>) -> Summary {
        let measured = !h.is_empty();
        Summary {
            count: h.len(),
            min: measured.then(|| h.min()),
            max: summary::maximum(h),
            mean: measured.then(|| summary::mean(h)),
            stdev: measured.then(|| summary::stdev(h)),
            percentiles: PERCENTILES
                .iter()
                .map(|&p| (p, summary::percentile(h, p)))
                .collect(),
            spectrum: spectrum::steps(h, spectrum::TICKS_PER_HALF_DISTANCE)
                .iter()
                .map(|s| (s.percentile, s.value, s.total_count))
                .collect(),
        }
    }

    fn series(s: &RunStats) -> Series {
        let points = s
            .history
            .points(s.window)
            .map(|iv| Point::of(&iv, None, s.llm.is_some()))
            .collect();
        Series {
            interval_s: s.history.interval().as_secs_f64(),
            points,
        }
    }

    /// A histogram from the document, in metron's standard shape.
    pub fn decode(text: &str) -> io::Result<Histogram<u64>> {
        let bad = |why: String| io::Error::new(io::ErrorKind::InvalidData, why);
        let h =
            codec::decode(text).map_err(|e| bad(format!("a histogram does not decode: {e}")))?;
        let mut out = new_histogram();
        out.add(&h)
            .map_err(|e| bad(format!("a histogram is out of range: {e:?}")))?;
        debug_assert_eq!(out.sigfig(), HIST_SIGFIG);
        Ok(out)
    }
}

pub use crate::stats::codec::encode;
pub use build::{decode, summarize};

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::stats::{histogram_of, new_histogram, IntervalStats};

    /// An interval in which nothing completed has no percentiles: `null`,
    /// not a latency of 0 µs.
    #[test]
    fn an_interval_without_completions_writes_null() {
        let iv = IntervalStats::empty(3, Duration::from_secs(1));
        let point = Point::of(&iv, Some(100), false);
        let json = serde_json::to_value(&point).unwrap();
        for field in [
            "p50",
            "p90",
            "p99",
            "p999",
            "p9999",
            "max",
            "p99_with_unfinished",
        ] {
            assert!(json[field].is_null(), "{field}: {json}");
        }
        // Absent rather than 0: nothing was measured.
        assert!(json.get("uncorrected_p99").is_none(), "{json}");
        assert!(json.get("send_lag_p99").is_none(), "{json}");
        let back: Point = serde_json::from_value(json).unwrap();
        assert_eq!(back, point);
    }

    /// A distribution of nothing (the send lag of a run that sent
    /// nothing) has `null` figures; one of values has numbers.
    #[test]
    fn an_empty_summary_writes_null() {
        let json = serde_json::to_value(summarize(&new_histogram())).unwrap();
        assert_eq!(json["count"], 0);
        for field in ["min", "max", "mean", "stdev"] {
            assert!(json[field].is_null(), "{field}: {json}");
        }
        assert!(json["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .all(|pair| pair[1].is_null()));
        let full = summarize(&histogram_of(&[(700, 3)]));
        assert_eq!((full.min, full.max), (Some(700), Some(700)));
        assert_eq!(full.at(99.0), Some(700));
        assert_eq!(full.stdev, Some(0.0));
    }

    /// Documents of earlier versions wrote 0 for what was not measured:
    /// they read back as not measured, so `metron report` and `merge` of a
    /// saved document print dashes too.
    #[test]
    fn zeros_of_older_documents_read_as_unmeasured() {
        let summary: Summary = serde_json::from_str(
            r#"{"count": 0, "min": 0, "max": 0, "mean": 0.0, "stdev": 0.0,
                "percentiles": [[50.0, 0], [99.0, 0]], "spectrum": []}"#,
        )
        .unwrap();
        assert_eq!(
            summary,
            summarize(&new_histogram()).clone_with(&[50.0, 99.0])
        );
        let point: Point = serde_json::from_str(
            r#"{"t": 1.0, "completed": 0, "errors": 0, "p50": 0, "p90": 0, "p99": 0,
                "p999": 0, "p9999": 0, "max": 0, "uncorrected_p99": 0}"#,
        )
        .unwrap();
        assert_eq!(point, Point::empty(1.0));
        // A measured figure keeps its value, whatever the version.
        let point: Point = serde_json::from_str(
            r#"{"t": 0.0, "completed": 5, "errors": 0, "p50": 900, "p90": 950,
                "p99": 990, "p999": 990, "p9999": 990, "max": 990}"#,
        )
        .unwrap();
        assert_eq!((point.p50, point.max), (Some(900), Some(990)));
    }

    impl Summary {
        /// The same summary listing only the percentiles `ps`.
        fn clone_with(&self, ps: &[f64]) -> Summary {
            let mut s = self.clone();
            s.percentiles.retain(|(p, _)| ps.contains(p));
            s
        }
    }
}
