//! The machine-readable result: one JSON document per run (`--json`).
//!
//! It carries everything the text and HTML reports show — configuration,
//! counters, accounting, percentiles, time series — plus the full
//! histograms (HdrHistogram V2, deflated, base64), so that `metron report`
//! can re-render any report from a saved document. The `schema` field is
//! bumped whenever a field changes meaning or goes away; new fields may be
//! added within a schema version.

use serde::{Deserialize, Serialize};

use crate::stats::Counters;

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
    /// Length of the measured window, in seconds.
    pub window_s: f64,
    /// The run was stopped early (Ctrl-C, `thread:stop()`, a script error).
    pub interrupted: bool,
    pub counters: Counters,
    pub requests_per_sec: f64,
    pub bytes_per_sec: f64,
    /// CPU time (user + system) of all worker threads, in seconds.
    pub cpu_s: f64,
    pub latency: LatencySummaries,
    pub series: Series,
    pub threads: Vec<ThreadSummary>,
    pub histograms: EncodedHistograms,
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
    /// Requests per second asked for; `null` in throughput mode.
    pub rate: Option<f64>,
    pub script: Option<String>,
    pub headers: Vec<String>,
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
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: u64,
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub stdev: f64,
    /// `[percentile, value]` for each of [`PERCENTILES`].
    pub percentiles: Vec<(f64, u64)>,
    /// The full spectrum (5 ticks per half distance): `[percentile,
    /// value, cumulative count]`.
    pub spectrum: Vec<(f64, u64, u64)>,
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
    /// interval, in microseconds (0 when none completed).
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadSummary {
    pub completed: u64,
    pub cpu_s: f64,
    /// Completions per `series_step_s`.
    pub series_step_s: f64,
    pub series: Vec<u32>,
}

/// The run's histograms, each HdrHistogram V2 deflate-compressed and
/// base64-encoded (the encoding HdrHistogram's interval logs use).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EncodedHistograms {
    pub corrected: String,
    pub uncorrected: String,
    pub send_lag: String,
    pub req_per_sec: String,
}

impl Document {
    /// Whether any request did not simply complete.
    pub fn has_losses(&self) -> bool {
        let c = &self.counters;
        c.errors.lost_requests() + c.in_flight + c.never_sent > 0
    }
}
