//! The text report: the original's layout line for line, so that scripts
//! which parse its output keep working, followed by metron's own lines.
//!
//! Everything up to `Transfer/sec` is laid out as the original prints it
//! (docs/REPORT-LAYOUT.md). metron's additions — send lag, the
//! accounting of every due request, the closed-loop note and warnings —
//! come after it, where those parsers no longer look.

mod banner;
mod flows;
pub(crate) mod llm;
mod results;
mod warnings;

pub use banner::*;
pub use results::*;
pub use warnings::*;

use std::io::{self, Write};
use std::time::Duration;

use hdrhistogram::Histogram;

use super::spectrum::write_spectrum;
use super::Counted;
use crate::http::{Protocol, Spoken};
use crate::schedule::{Load, Spacing};
use crate::stats::phase::MAX_PHASES;
use crate::stats::{
    summary, AtEnd, ByCode, Counters, EndpointStats, EventKind, EventStats, Http2Counts,
    PhaseStats, QuicCounts, RunStats, Timings,
};
use crate::units::{
    format_binary, format_metric, format_rate, format_run_duration, format_time_us, print_units,
};
use crate::verdict::{lag_allowance_us, SloReport};

/// The percentiles of the "Latency Distribution" block.
const PERCENTILES: [f64; 8] = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0];
/// Closes each latency block.
const RULE: &str = "----------------------------------------------------------";
/// What a figure that has no value prints as (no request to measure).
const NONE: &str = "-";

/// A latency that may not have been measured: its time, or [`NONE`].
fn time_or_none(us: Option<u64>) -> String {
    us.map_or_else(|| NONE.to_string(), |us| format_time_us(us as f64))
}

/// What the text report shows: the run's settings and its statistics.
pub struct TextReport<'a> {
    pub url: &'a str,
    /// As configured, for the `Running` line.
    pub duration: Duration,
    pub threads: usize,
    pub connections: usize,
    /// How requests were paced: the rate asked for with `-R`, or the
    /// closed loop of throughput mode.
    pub load: Load,
    /// `-L`: print the latency distribution and its spectrum.
    pub latency: bool,
    /// `-U`: also print them for the uncorrected latency.
    pub u_latency: bool,
    /// The protocols the hosts spoke, when another than HTTP/1.1 was
    /// offered (`--http2`, `--alpn`); `None` keeps wrk's report.
    pub protocol: Option<&'a Spoken>,
    /// Phases of the `--rate-profile` (0 without one): a profile of more
    /// than the statistics break out gets a line instead of its table.
    pub profile_phases: usize,
    pub stats: &'a RunStats,
    /// `--lag-allowance`, when given: the send lag p99 the warning allows.
    pub lag_allowance: Option<Duration>,
    /// A `ws://` or `wss://` URL: the conversation asked for, so that a
    /// warning's advice fits what was given.
    pub ws: Option<&'a crate::report::json::WsConfig>,
}

impl TextReport<'_> {
    /// What the run's requests were: messages or subscriptions over
    /// WebSocket.
    pub fn counted(&self) -> Counted {
        Counted::of(self.protocol, self.stats.events.as_ref().map(|e| e.kind))
    }
}

/// Title of the uncorrected latency distribution (`-U`).
const UNCORRECTED: &str =
    "Uncorrected Latency (measured without taking delayed starts into account)";

/// Writes the whole report: the banner, the results and metron's lines.
pub fn write_text(out: &mut impl Write, r: &TextReport) -> io::Result<()> {
    write_banner(out, r.url, r.duration, r.threads, r.connections, None)?;
    write_results(out, r)
}

/// Everything after the banner.
pub fn write_results(out: &mut impl Write, r: &TextReport) -> io::Result<()> {
    let stats = r.stats;
    let counted = r.counted();
    write_thread_stats(out, stats, Some(counted))?;
    if r.latency {
        write_distribution(out, &stats.latency, "Recorded Latency")?;
        write_with_unfinished(out, stats, counted)?;
        // Under --llm the events are the token chunks: their rows are TTFT
        // and ITL's, below.
        let events = stats.events.as_ref().filter(|_| stats.llm.is_none());
        write_timings(out, &stats.timings, events)?;
    }
    if r.u_latency {
        writeln!(out)?;
        write_distribution(out, &stats.uncorrected, UNCORRECTED)?;
    }
    write_totals(out, stats, counted)?;
    if let Some(l) = &stats.llm {
        llm::write_llm(out, l, stats)?;
    }
    match &stats.visits {
        Some(visits) => {
            flows::write_steps(out, &stats.endpoints)?;
            flows::write_visits(out, visits)?;
        }
        None => write_endpoints(out, &stats.endpoints, counted)?,
    }
    write_phases(out, &stats.phases, r.profile_phases, counted)?;
    write_own_lines(out, r)
}

/// The percentiles of the phases table.
const PHASE_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests;
