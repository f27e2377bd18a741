//! The text report: the original's layout line for line, so that scripts
//! which parse its output keep working, followed by metron's own lines.
//!
//! Everything up to `Transfer/sec` is laid out as the original prints it
//! (docs/REPORT-LAYOUT.md). metron's additions — send lag, the
//! accounting of every due request, the closed-loop note and warnings —
//! come after it, where those parsers no longer look.

use std::io::{self, Write};
use std::time::Duration;

use hdrhistogram::Histogram;

use super::spectrum::write_spectrum;
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
}

/// Title of the uncorrected latency distribution (`-U`).
const UNCORRECTED: &str =
    "Uncorrected Latency (measured without taking delayed starts into account)";

/// Writes the whole report: the banner, the results and metron's lines.
pub fn write_text(out: &mut impl Write, r: &TextReport) -> io::Result<()> {
    write_banner(out, r.url, r.duration, r.threads, r.connections, None)?;
    write_results(out, r)
}

/// The two lines the original prints before the run starts; callers that
/// print them early then use [`write_results`] at the end. `protocol`, when
/// given, follows the connections in brackets (HTTP/2 runs).
pub fn write_banner(
    out: &mut impl Write,
    url: &str,
    duration: Duration,
    threads: usize,
    connections: usize,
    protocol: Option<&str>,
) -> io::Result<()> {
    writeln!(
        out,
        "Running {} test @ {url}",
        format_run_duration(duration)
    )?;
    write_connections_line(out, threads, connections, protocol)
}

/// The banner's second line, which `metron sweep` prints under its own
/// first: threads, connections, and the protocol when not HTTP/1.1.
pub fn write_connections_line(
    out: &mut dyn Write,
    threads: usize,
    connections: usize,
    protocol: Option<&str>,
) -> io::Result<()> {
    write!(out, "  {threads} threads and {connections} connections")?;
    match protocol {
        Some(p) => writeln!(out, " ({p})"),
        None => writeln!(out),
    }
}

/// Under the banner, when every request is a call: of which method, and
/// whether its replies stream.
pub fn write_call_line(out: &mut dyn Write, method: &str, streaming: bool) -> io::Result<()> {
    let shape = if streaming {
        "server streaming: each message timed"
    } else {
        "unary"
    };
    writeln!(out, "  gRPC calls of {method} ({shape})")
}

/// Under the banner, when connections may grow on demand: how far.
pub fn write_growth_line(out: &mut dyn Write, max: usize, from_open_files: bool) -> io::Result<()> {
    let why = if from_open_files {
        " (as many as the open-files limit allows)"
    } else {
        ""
    };
    writeln!(out, "  more connections open on demand, up to {max}{why}")
}

/// Everything after the banner.
pub fn write_results(out: &mut impl Write, r: &TextReport) -> io::Result<()> {
    let stats = r.stats;
    write_thread_stats(out, stats, true)?;
    if r.latency {
        write_distribution(out, &stats.latency, "Recorded Latency")?;
        write_with_unfinished(out, stats)?;
        write_timings(out, &stats.timings, stats.events.as_ref())?;
    }
    if r.u_latency {
        writeln!(out)?;
        write_distribution(out, &stats.uncorrected, UNCORRECTED)?;
    }
    write_totals(out, stats)?;
    write_endpoints(out, &stats.endpoints)?;
    write_phases(out, &stats.phases, r.profile_phases)?;
    write_own_lines(out, r)
}

/// Per phase of a rate profile: the rate intended and achieved, errors,
/// and the corrected latency (unfinished requests at their lower bounds)
/// of the requests intended in it. A profile of more phases than are
/// broken out (`profile_phases`) gets a line that says so instead.
fn write_phases(
    out: &mut impl Write,
    phases: &[PhaseStats],
    profile_phases: usize,
) -> io::Result<()> {
    if phases.is_empty() {
        if profile_phases > MAX_PHASES {
            writeln!(
                out,
                "  Phases: no table for a profile of {profile_phases} phases (at most \
                 {MAX_PHASES}, each keeps two histograms per thread); --json, --csv or --hlog \
                 show the run interval by interval"
            )?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "  Phases (requests by intended time; latency including unfinished requests)"
    )?;
    writeln!(
        out,
        "  {:>8} {:>8} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9}  Phase",
        "Start", "Length", "Intended", "Achieved", "Errors", "50%", "99%", "99.9%"
    )?;
    for p in phases {
        let h = p.with_unfinished();
        let at = |q| time_or_none(summary::percentile(&h, q));
        let secs = p.length.as_secs_f64();
        let rate = |n: u64| match secs > 0.0 {
            true => format_rate(n as f64 / secs),
            false => NONE.to_string(),
        };
        writeln!(
            out,
            "  {:>8} {:>8} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9}  {}",
            short_secs(p.start),
            short_secs(p.length),
            rate(p.due),
            rate(p.completed),
            p.errors,
            at(50.0),
            at(99.0),
            at(99.9),
            p.label
        )?;
    }
    Ok(())
}

/// A phase's start or length: `0s`, `30s`, `2.5s`.
fn short_secs(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    format!("{}s", s.trim_end_matches('0').trim_end_matches('.'))
}

/// The line after the banner that says how requests are spread, when it
/// is not wrk2's constant `-R`: the profile's phases and the seed of
/// random arrivals (so a run can be repeated).
pub fn write_arrival_line(
    out: &mut impl Write,
    profile: Option<&str>,
    spacing: Option<Spacing>,
) -> io::Result<()> {
    let poisson = spacing.and_then(Spacing::seed);
    let spread = match poisson {
        Some(seed) => format!("Poisson arrivals (--seed {seed})"),
        None => "constant arrivals".to_string(),
    };
    match profile {
        Some(p) => writeln!(out, "  rate profile {p}, {spread}"),
        None if poisson.is_some() => writeln!(out, "  {spread}"),
        None => Ok(()),
    }
}

/// `--shard` and `--start-at`, under the banner: which part of the
/// schedule this instance sends, and the instant the schedule starts.
pub fn write_distributed_lines(
    out: &mut impl Write,
    shard: crate::schedule::Shard,
    rate: Option<f64>,
    start_at: Option<std::time::SystemTime>,
) -> io::Result<()> {
    if let (false, Some(rate)) = (shard.is_whole(), rate) {
        let n = shard.count();
        writeln!(
            out,
            "  shard {} of {n}: requests {}, {}+{n}, ... of the schedule, {} of {} requests/sec",
            shard.index(),
            shard.index(),
            shard.index(),
            format_rate(rate),
            format_rate(rate * n as f64)
        )?;
    }
    if let Some(at) = start_at {
        writeln!(
            out,
            "  schedule starts at {} (--start-at)",
            crate::units::format_wall(at)
        )?;
    }
    Ok(())
}

/// A run that began after its `--start-at`: by how much, and the requests
/// it passed over (only when it missed any: a start on time is quiet).
pub fn write_late_start(
    out: &mut impl Write,
    late: Duration,
    missed: u64,
    measured: u64,
) -> io::Result<()> {
    if missed == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "  Started {} after --start-at: passed over the {missed} requests due before then \
         ({measured} in the measured window, counted as never sent)",
        format_time_us(late.as_secs_f64() * 1e6)
    )
}

/// A merged document's instances, a row each, so that one bad node shows:
/// what it was asked for and achieved, its send lag, errors, and how late
/// it started after `--start-at`. Each column is as wide as its widest
/// cell, so that long instance names (file paths) keep the rows aligned.
pub fn write_instances(
    out: &mut impl Write,
    instances: &[super::json::Instance],
) -> io::Result<()> {
    if instances.is_empty() {
        return Ok(());
    }
    writeln!(out, "  Merged from {} instances:", instances.len())?;
    let head = [
        "instance",
        "shard",
        "rate",
        "achieved",
        "send lag p99",
        "errors",
        "never sent",
        "start offset",
    ]
    .map(str::to_string);
    let rows: Vec<[String; 8]> = instances
        .iter()
        .map(|i| {
            [
                i.name.clone(),
                i.shard
                    .map_or(NONE.to_string(), |s| format!("{}/{}", s.index, s.count)),
                i.rate.map_or(NONE.to_string(), format_rate),
                format_rate(i.requests_per_sec),
                time_or_none(i.send_lag_p99_us),
                i.errors.to_string(),
                i.never_sent.to_string(),
                i.start_offset_s
                    .map_or(NONE.to_string(), |s| format_time_us(s * 1e6)),
            ]
        })
        .collect();
    let mut widths = head.each_ref().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&head).chain(&rows) {
        // The name to the left, figures to the right, as in every table.
        let mut line = format!("    {:<w$}", row[0], w = widths[0]);
        for (cell, w) in row.iter().zip(widths).skip(1) {
            line.push_str(&format!(" {cell:>w$}"));
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// `--slo`: a row per term with its measured value, then the verdict as
/// the report's last line.
pub fn write_slo(out: &mut impl Write, slo: &SloReport) -> io::Result<()> {
    for row in &slo.rows {
        let value = match (row.value, row.unit.as_str()) {
            (None, _) => NONE.to_string(),
            (Some(v), "us") => format_time_us(v),
            (Some(v), _) => format!("{:.2}%", v * 100.0),
        };
        let met = match (row.met, row.value) {
            (true, _) => "met",
            (false, None) => "not measured",
            (false, Some(_)) => "NOT MET",
        };
        writeln!(out, "  SLO {}: {value}, {met}", row.term)?;
    }
    writeln!(out, "SLO: {}", slo.sentence())
}

/// The report of latencies alone, for figures that come without a run
/// (interval logs added up by `metron merge`): the Latency row, both
/// distributions, the count and rate over the window, and the send lag when
/// there is any. Logs hold no bytes, errors or per-thread rates, so none
/// are printed, rather than printed as zeros.
pub fn write_latencies(out: &mut impl Write, stats: &RunStats) -> io::Result<()> {
    write_thread_stats(out, stats, false)?;
    write_distribution(out, &stats.latency, "Recorded Latency")?;
    write_with_unfinished(out, stats)?;
    writeln!(out)?;
    write_distribution(out, &stats.uncorrected, UNCORRECTED)?;
    let window = format_time_us(stats.window.as_micros() as f64);
    writeln!(out, "  {} requests in {window}", stats.counters.completed)?;
    writeln!(out, "Requests/sec: {:9.2}", stats.requests_per_sec())?;
    if !stats.send_lag.is_empty() {
        writeln!(out, "  {}", send_lag_line(&stats.send_lag))?;
    }
    if stats.counters.saturated > 0 {
        writeln!(
            out,
            "  {} latencies above the histograms' range (24 h) were counted at its top",
            stats.counters.saturated
        )?;
    }
    Ok(())
}

/// One line per endpoint of a requests file: what it got and how fast.
fn write_endpoints(out: &mut impl Write, endpoints: &[EndpointStats]) -> io::Result<()> {
    if endpoints.is_empty() {
        return Ok(());
    }
    writeln!(out, "  Endpoints (corrected latency)")?;
    writeln!(
        out,
        "  {:>10} {:>8} {:>9} {:>9} {:>9}  Endpoint",
        "Requests", "Errors", "50%", "99%", "99.9%"
    )?;
    let empty = crate::stats::new_histogram();
    for e in endpoints {
        // Requests in flight and none completed: no latency, not 0.00us.
        let h = e.latency.as_ref().unwrap_or(&empty);
        let at = |p| time_or_none(summary::percentile(h, p));
        writeln!(
            out,
            "  {:>10} {:>8} {:>9} {:>9} {:>9}  {}",
            e.completed,
            e.errors,
            at(50.0),
            at(99.0),
            at(99.9),
            e.name
        )?;
    }
    Ok(())
}

/// The line after the banner that says what `--requests` replays.
pub fn write_replay_line(
    out: &mut impl Write,
    file: &str,
    requests: usize,
    hosts: usize,
    order: &str,
) -> io::Result<()> {
    let s = |n: usize| if n == 1 { "" } else { "s" };
    writeln!(
        out,
        "  replaying {requests} request{} from {file} to {hosts} host{}, {order}",
        s(requests),
        s(hosts)
    )
}

/// The Thread Stats table: latency, and the threads' request rates when
/// they were sampled (`rates`).
fn write_thread_stats(out: &mut impl Write, stats: &RunStats, rates: bool) -> io::Result<()> {
    writeln!(
        out,
        "  Thread Stats{:>6}{:>11}{:>8}{:>12}",
        "Avg", "Stdev", "Max", "+/- Stdev"
    )?;
    write_stats_row(out, "Latency", &stats.latency, format_time_us)?;
    if rates {
        write_stats_row(out, "Req/Sec", &stats.req_per_sec, format_metric)?;
    }
    Ok(())
}

fn write_stats_row(
    out: &mut impl Write,
    name: &str,
    h: &Histogram<u64>,
    format: fn(f64) -> String,
) -> io::Result<()> {
    // Nothing recorded has no mean: a dash, not a latency of 0.00us.
    if h.is_empty() {
        let dashes = [8, 10, 9].map(|width| print_units(NONE, width)).concat();
        return writeln!(out, "    {name:<10}{dashes}{NONE:>8} ");
    }
    let (mean, stdev) = (summary::mean(h), summary::stdev(h));
    let max = summary::max(h) as f64;
    let within = summary::within_stdev(h, mean, stdev);
    let columns =
        [(mean, 8), (stdev, 10), (max, 9)].map(|(v, width)| print_units(&format(v), width));
    writeln!(out, "    {name:<10}{}{within:8.2}%", columns.concat())
}

/// The percentile lines and the spectrum of one latency histogram.
fn write_distribution(out: &mut impl Write, h: &Histogram<u64>, title: &str) -> io::Result<()> {
    writeln!(out, "  Latency Distribution (HdrHistogram - {title})")?;
    write_percentiles(out, h)?;
    writeln!(out, "\n  Detailed Percentile spectrum:")?;
    write_spectrum(out, h)?;
    writeln!(out, "{RULE}")
}

/// The percentile lines of a distribution (dashes when it is empty).
fn write_percentiles(out: &mut impl Write, h: &Histogram<u64>) -> io::Result<()> {
    for p in PERCENTILES {
        let value = if h.is_empty() {
            NONE.to_string()
        } else {
            format_time_us(summary::value_at_percentile(h, p) as f64)
        };
        writeln!(out, "{p:7.3}%{}", print_units(&value, 10))?;
    }
    Ok(())
}

/// The percentiles of the phases table.
const PHASE_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// With `-L`, under the latency distribution: time to first byte (from
/// the intended send time, and from the send), connect and TLS handshake,
/// each a row when it was measured at all.
fn write_timings(out: &mut impl Write, t: &Timings, events: Option<&EventStats>) -> io::Result<()> {
    let (first, gap) = match events.map(|e| e.kind) {
        Some(EventKind::Messages) => ("First message", "Message gap"),
        _ => ("First event", "Event gap"),
    };
    // No event at all: the lower bounds of requests still waiting are no
    // first events, and get no row.
    let events = events.filter(|e| e.measured());
    let rows: Vec<(&str, &Histogram<u64>)> = [
        ("Time to first byte", Some(&t.ttfb)),
        ("  uncorrected", Some(&t.ttfb_uncorrected)),
        (first, events.map(|e| &e.first)),
        (gap, events.map(|e| &e.gap)),
        ("Connect", Some(&t.connect)),
        ("TLS handshake", Some(&t.tls_handshake)),
    ]
    .into_iter()
    .filter_map(|(name, h)| h.filter(|h| !h.is_empty()).map(|h| (name, h)))
    .collect();
    if rows.is_empty() {
        return Ok(());
    }
    let heads: String = ["p50", "p90", "p99", "p99.9", "max"]
        .map(|h| format!("{h:>10}"))
        .concat();
    writeln!(out, "  {:<22}{heads}", "Phases (HdrHistogram)")?;
    for (name, h) in rows {
        let values = PHASE_PERCENTILES
            .map(|p| summary::value_at_percentile(h, p))
            .into_iter()
            .chain([summary::max(h)])
            .map(|us| print_units(&format_time_us(us as f64), 10))
            .collect::<String>();
        writeln!(out, "    {name:<20}{values}")?;
    }
    writeln!(out, "{RULE}")
}

/// When requests went unfinished: the same percentiles with their lower
/// bounds included (docs/MEASUREMENT.md, §6). The spectrum above stays
/// that of completed requests, as the original prints it.
fn write_with_unfinished(out: &mut impl Write, stats: &RunStats) -> io::Result<()> {
    let n = stats.unfinished.len();
    if n == 0 {
        return Ok(());
    }
    writeln!(out, "  {}", with_unfinished_title(n))?;
    write_percentiles(out, &stats.with_unfinished())?;
    writeln!(out, "{RULE}")
}

fn with_unfinished_title(n: u64) -> String {
    format!("Latency Distribution {}", including_unfinished(n))
}

fn including_unfinished(n: u64) -> String {
    format!(
        "including {n} unfinished request{} (lower bounds)",
        plural(n)
    )
}

fn write_totals(out: &mut impl Write, stats: &RunStats) -> io::Result<()> {
    let c = &stats.counters;
    let window = format_time_us(stats.window.as_micros() as f64);
    let bytes = format_binary(c.bytes as f64);
    writeln!(out, "  {} requests in {window}, {bytes}B read", c.completed)?;
    let e = &c.errors;
    if e.any_socket() {
        let (connect, read, write, timeout) = (e.connect, e.read, e.write, e.timeout);
        writeln!(
            out,
            "  Socket errors: connect {connect}, read {read}, write {write}, timeout {timeout}"
        )?;
    }
    if e.status > 0 && c.grpc.total() > 0 {
        // Calls fail by their own status, over HTTP 200 as a rule.
        writeln!(
            out,
            "  Failed calls: {} ({})",
            e.status,
            failed_call_causes(c)
        )?;
    } else if e.status > 0 {
        writeln!(out, "  Non-2xx or 3xx responses: {}", e.status)?;
    }
    writeln!(out, "Requests/sec: {:9.2}", stats.requests_per_sec())?;
    writeln!(
        out,
        "Transfer/sec: {:>10}B",
        format_binary(stats.bytes_per_sec())
    )
}

/// Why calls failed: their status, or (`--grpc-check`) an OK reply that
/// did not hold the check, each with its count when both did. Replies that
/// failed the check alone are not said to have a status other than OK,
/// which the `gRPC status` line below would contradict.
fn failed_call_causes(c: &Counters) -> String {
    let checks = c.failed_checks;
    let status = c.errors.status.saturating_sub(checks);
    match (status, checks) {
        (_, 0) => "gRPC status not OK".to_string(),
        (0, _) => "OK replies that failed --grpc-check".to_string(),
        (s, n) => format!("{s} with a gRPC status not OK, {n} OK replies that failed --grpc-check"),
    }
}

fn write_own_lines(out: &mut impl Write, r: &TextReport) -> io::Result<()> {
    let stats = r.stats;
    if let Some(i) = &stats.interruption {
        writeln!(
            out,
            "  Interrupted after {} of {} ({}): the figures cover the time that ran",
            format_time_us(i.after.as_micros() as f64),
            format_run_duration(r.duration),
            i.cause.describe()
        )?;
    }
    if stats.rate_window > stats.window {
        writeln!(
            out,
            "  Note: rates are per second over {}, one interval, not over the {} measured",
            format_time_us(stats.rate_window.as_micros() as f64),
            format_time_us(stats.window.as_micros() as f64)
        )?;
    }
    // With -L the whole block was printed above.
    if !r.latency && !stats.unfinished.is_empty() {
        writeln!(out, "  {}", with_unfinished_line(stats))?;
    }
    if r.load.is_open() {
        writeln!(out, "  {}", send_lag_line(&stats.send_lag))?;
    }
    if let Some(protocol) = r.protocol {
        writeln!(out, "  Protocol: {protocol}")?;
    }
    let c = &stats.counters;
    if c.status_codes.total() > 0 {
        writeln!(out, "  Status codes: {}", c.status_codes)?;
    }
    if c.grpc.total() > 0 {
        writeln!(out, "  gRPC status: {}", c.grpc)?;
    }
    if c.failed_checks > 0 {
        writeln!(
            out,
            "  Failed checks: {} of {} OK replies did not hold --grpc-check (counted as errors)",
            c.failed_checks,
            c.grpc.get("OK")
        )?;
    }
    if let Some(line) = read_causes_line(c) {
        writeln!(out, "  {line}")?;
    }
    if let Some(events) = &stats.events {
        writeln!(out, "  {}", events_line(events))?;
    }
    let pool = &stats.counters.connections;
    if pool.opened_on_demand > 0 || pool.server_accepted.is_some() {
        let accepted = match pool.server_accepted {
            Some(n) => format!("; the server accepted about {n}"),
            None => String::new(),
        };
        writeln!(
            out,
            "  Connections: {} at start, peak {} ({} opened on demand{accepted})",
            pool.initial, pool.peak, pool.opened_on_demand
        )?;
    }
    if stats.counters.http2.any() {
        // The streams' line is named for the protocol that had them.
        let name = r.protocol.and_then(Spoken::streams_of).unwrap_or("HTTP/2");
        writeln!(out, "  {}", http2_line(name, &stats.counters.http2))?;
    }
    if stats.counters.quic.any() {
        writeln!(out, "  {}", quic_line(&stats.counters.quic))?;
    }
    if let Some(line) = accounting_line(&stats.counters) {
        writeln!(out, "  {line}")?;
    }
    if !r.load.is_open() {
        writeln!(
            out,
            "  Note: latency is measured from send to response (closed loop); \
             -R gives latency corrected for coordinated omission"
        )?;
    }
    for warning in warnings(r) {
        writeln!(out, "  Warning: {warning}")?;
    }
    Ok(())
}

/// The conservative distribution in one line, for reports without -L.
fn with_unfinished_line(stats: &RunStats) -> String {
    let h = stats.with_unfinished();
    let at = |p| format_time_us(summary::value_at_percentile(&h, p) as f64);
    let max = format_time_us(summary::max(&h) as f64);
    format!(
        "Latency {}: p50 {}, p99 {}, p99.9 {}, max {max}",
        including_unfinished(stats.unfinished.len()),
        at(50.0),
        at(99.0),
        at(99.9)
    )
}

/// wrk's `read N` by what the connections saw: `Read errors: reset 3,
/// closed early 2`.
fn read_causes_line(c: &Counters) -> Option<String> {
    (c.errors.read > 0).then(|| format!("Read errors: {}", c.read_causes))
}

/// Streams' resets and GOAWAYs by error code (HTTP/2's, or HTTP/3's under
/// `name`), connection errors, and the requests sent again because the
/// server never processed them.
fn http2_line(name: &str, h: &Http2Counts) -> String {
    let by_code = |c: &ByCode| match c.total() {
        0 => String::new(),
        _ => format!(" ({c})"),
    };
    format!(
        "{name}: {} streams reset{}, {} GOAWAY{}, {} connection errors, \
         {} requests sent again (never processed)",
        h.resets.total(),
        by_code(&h.resets),
        h.goaway.total(),
        by_code(&h.goaway),
        h.connection_errors,
        h.retried
    )
}

/// QUIC's packets: sent, declared lost (and sent again), and 0-RTT: of
/// the connections that sent it (`--0rtt`), those whose server took it.
fn quic_line(q: &QuicCounts) -> String {
    let share = q.packets_lost as f64 * 100.0 / q.packets_sent.max(1) as f64;
    let zero_rtt = match (q.zero_rtt_offered, q.zero_rtt) {
        (0, 0) => String::new(),
        // A report saved before the offers were counted.
        (0, n) => format!(", {n} connections with 0-RTT"),
        (offered, n) => format!(", {n} of {offered} connections with 0-RTT accepted"),
    };
    format!(
        "QUIC: {} packets sent, {} lost and sent again ({share:.2}%){zero_rtt}",
        q.packets_sent, q.packets_lost
    )
}

/// `--sse`: events per completed response, the first event's and the
/// gaps' percentiles (dashes for what was not measured); a streamed
/// call's messages likewise.
fn events_line(e: &EventStats) -> String {
    let (event, whole) = e.kind.nouns();
    // With no event at all, the figures are only the lower bounds of
    // requests still unanswered at the end: not events, so dashes, as the
    // verdict takes them to be unmeasured.
    let at = |h, p| match e.measured() {
        true => time_or_none(summary::percentile(h, p)),
        false => NONE.to_string(),
    };
    let per = e
        .per_response()
        .map_or_else(|| NONE.to_string(), |n| format!("{n:.1}"));
    let open = if e.open > 0 {
        format!(" ({} open at the end, as lower bounds)", e.open)
    } else {
        String::new()
    };
    format!(
        "{}: {per} per {whole}; first {event} p50 {}, p99 {}; gap p50 {}, p99 {}, p99.9 {}, max {}{open}",
        e.kind.title(),
        at(&e.first, 50.0),
        at(&e.first, 99.0),
        at(&e.gap, 50.0),
        at(&e.gap, 99.0),
        at(&e.gap, 99.9),
        match e.measured() {
            true => time_or_none(summary::maximum(&e.gap)),
            false => NONE.to_string(),
        },
    )
}

/// How late requests left against their schedule (dashes when none was
/// sent: a stream limit of 0, a stop before `--start-at`, a script that
/// failed at once).
fn send_lag_line(lag: &Histogram<u64>) -> String {
    let at = |p| time_or_none(summary::percentile(lag, p));
    let max = time_or_none(summary::maximum(lag));
    format!("Send lag: p50 {}, p99 {}, max {max}", at(50.0), at(99.0))
}

/// Where every due request ended up, when any did not simply complete.
/// Books that do not balance are always shown, and said to be wrong: that
/// is a fault of metron's, never of the server.
fn accounting_line(c: &Counters) -> Option<String> {
    let e = &c.errors;
    let lost = e.lost_requests();
    if lost + c.in_flight + c.never_sent == 0 && c.balanced() {
        return None;
    }
    let parts = format!(
        "{} completed + {lost} lost (read {}, write {}, timeout {}) + {} in flight + {} never sent",
        c.completed, e.read, e.write, e.timeout, c.in_flight, c.never_sent
    );
    Some(if c.balanced() {
        format!("Accounting: {} due = {parts}", c.due)
    } else {
        let sum = c.accounted();
        format!(
            "Accounting: {} due, but {parts} make {sum}: metron lost track of {} requests (a bug in metron)",
            c.due,
            c.due.abs_diff(sum)
        )
    })
}

/// What went wrong, each with its figures and the likely fix: requests
/// lost (in either mode), and, in rate mode, signs that the generator did
/// not keep to its schedule (throughput mode has none to keep).
pub fn warnings(r: &TextReport) -> Vec<String> {
    let lost = lost_warning(&r.stats.counters);
    let limit = connection_limit_warning(&r.stats.counters);
    let events = r.stats.events.as_ref().and_then(no_events_warning);
    let Some(rate) = r.load.rate() else {
        return [limit, lost, events].into_iter().flatten().collect();
    };
    [
        limit,
        never_sent_warning(r.stats, rate),
        lost,
        send_lag_warning(r, rate),
        events,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The server's connection limit, when the pool ran into it: connections
/// beyond those it accepted were turned away or left unanswered, and the
/// pool stopped growing there.
fn connection_limit_warning(c: &Counters) -> Option<String> {
    let accepted = c.connections.server_accepted?;
    let mut beyond = Vec::new();
    let pool = &c.connections;
    if pool.opened_on_demand == 0 && accepted >= pool.initial {
        // Every connection -c asked for was answering: no limit in the way.
        return None;
    }
    if c.reopens.turned_away > 0 || c.read_causes.closed_unanswered > 0 {
        let lost = c.read_causes.closed_unanswered;
        beyond.push(format!(
            "closed unanswered ({lost} request{} lost)",
            plural(lost)
        ));
    }
    if c.timeout_unanswered > 0 {
        let n = c.timeout_unanswered;
        beyond.push(format!(
            "left unanswered ({n} request{} timed out)",
            plural(n)
        ));
    }
    let (timed_out, reset) = (c.connect_causes.timeout, c.connect_causes.reset);
    if timed_out > 0 {
        beyond.push(format!(
            "left unopened ({timed_out} connect{} timed out)",
            plural(timed_out)
        ));
    }
    if reset > 0 {
        beyond.push(format!(
            "reset as they opened ({reset} connect error{})",
            plural(reset)
        ));
    }
    let how = match beyond.is_empty() {
        true => String::new(),
        false => format!(": connections beyond those were {}", beyond.join(" or ")),
    };
    Some(if pool.opened_on_demand > 0 {
        format!(
            "the server accepted about {accepted} connections{how}, and the pool grew no \
             further; cap it there with --max-connections {accepted}, or raise the server's \
             connection limit"
        )
    } else {
        format!(
            "the server accepted about {accepted} of the {} connections{how}; lower -c to \
             {accepted}, or raise the server's connection limit",
            pool.initial
        )
    })
}

/// `--sse`: completed responses that carried no event. They are not in
/// the first-event figures (there is no first event to time), so a run
/// against a page that is not an event stream would otherwise show only
/// the lower bounds of the requests still waiting at the end. A streamed
/// call may end without a message and still be right, so only
/// server-sent events are warned of.
fn no_events_warning(e: &EventStats) -> Option<String> {
    if e.kind != EventKind::Sse || e.without_events == 0 {
        return None;
    }
    Some(format!(
        "{} of {} completed responses carried no event: they were not event streams \
         (text/event-stream), or ended before their first event, and the first-event figures \
         leave them out; check that the URL serves server-sent events, or drop --sse",
        e.without_events, e.responses
    ))
}

/// Requests due and never sent, with what kept them back: a start after
/// `--start-at`, and the state of the connections as the run ended.
fn never_sent_warning(stats: &RunStats, rate: f64) -> Option<String> {
    let c = &stats.counters;
    if c.never_sent == 0 {
        return None;
    }
    let mut causes = Vec::new();
    if c.missed_at_start > 0 {
        causes.push(format!(
            "{} had been due before the run began, late, after --start-at",
            c.missed_at_start
        ));
    }
    if c.never_sent > c.missed_at_start {
        causes.push(format!("at the end {}", end_causes(c, rate).join("; ")));
    }
    Some(format!(
        "{} of {} due requests were never sent: {}",
        c.never_sent,
        c.due,
        causes.join("; ")
    ))
}

/// What kept due requests back as the run ended: the connections'
/// state and threads stopped by their script.
fn end_causes(c: &Counters, rate: f64) -> Vec<String> {
    let a = &c.at_end;
    let mut causes = Vec::new();
    if a.busy > 0 {
        let low = match c.connections.server_accepted {
            Some(_) => "the server's connection limit",
            None if c.connections.opened_on_demand > 0 => "--max-connections",
            None => "-c",
        };
        causes.push(format!(
            "{} connection{} still waited for responses (the server stopped answering, or \
             {low} is too low for -R {rate})",
            a.busy,
            plural(a.busy)
        ));
    }
    if a.down > 0 {
        causes.push(format!(
            "{} connection{} {} down ({})",
            a.down,
            plural(a.down),
            if a.down == 1 { "was" } else { "were" },
            down_causes(a)
        ));
    }
    if a.draining > 0 {
        causes.push(format!(
            "{} connection{} retired by the server (GOAWAY) still finished {} streams, \
             replaced by new ones",
            a.draining,
            plural(a.draining),
            if a.draining == 1 { "its" } else { "their" }
        ));
    }
    if a.held > 0 {
        causes.push(format!(
            "{} connection{} had no stream the server would grant (its stream credit was used \
             up: it had not closed the streams of earlier requests)",
            a.held,
            plural(a.held)
        ));
    }
    if a.resting > 0 {
        causes.push(format!(
            "{} connection{} rested in the script's delay() (raise -c, or shorten the delay)",
            a.resting,
            plural(a.resting)
        ));
    }
    if a.stopped_threads > 0 {
        causes.push(format!(
            "{} thread{} had been stopped by {} script (thread:stop())",
            a.stopped_threads,
            plural(a.stopped_threads),
            if a.stopped_threads == 1 {
                "its"
            } else {
                "their"
            }
        ));
    }
    if causes.is_empty() {
        causes.push(
            "connections were free, but the generator had not sent them by the end (it fell \
             behind its schedule)"
                .to_string(),
        );
    }
    causes
}

/// What to check for each cause the connections met, by the name the
/// report gives it (a failed connect's with `connect ` before it, lost
/// writes and timeouts as `write` and `timeout`): the one table behind
/// every warning that names causes. Hints speak of connections and
/// requests alike, since the warnings count either.
fn hint(said: &str) -> Option<&'static str> {
    Some(match said {
        "connect refused" => "is the server listening?",
        "connect timed out" => "the server did not accept in time: its backlog, or --timeout",
        "connect reset" => "the server reset connections as they opened",
        "connect TLS handshake" => "the TLS handshake failed",
        "connect no local socket" => "this machine ran out of ports or files: fewer -c",
        "closed before answering" => {
            "the server closed new connections unanswered, as one does past its connection \
             limit (lower -c, or raise the limit) or when it fails every request"
        }
        "reset" => {
            "the server reset the request's stream or its connection (its error log may say \
             why)"
        }
        "port closed" => {
            "the server's host said nothing listens on its port any more: the server stopped \
             or restarted under open connections"
        }
        "closed early" => {
            "the server closed connections it had answered on, mid-response or with a \
             request unanswered (its keep-alive or connection limits, or a restart)"
        }
        "head too large" => "raise --max-head",
        "malformed" => "the server's answers are not valid HTTP",
        "HTTP/2 frames" => "the server speaks HTTP/2 only: add --http2",
        "TLS" => "TLS failed on open connections",
        "write" => "the server stopped reading or closed connections as requests were written",
        "timeout" => "no response within --timeout: a stalled server, or raise --timeout",
        "timeout unanswered" => {
            "on connections the server never answered while it answered others: it had not \
             taken them (its listen backlog, past its connection limit)"
        }
        _ => return None,
    })
}

/// The causes with a count, each as `said n: hint`, joined by `; `.
fn with_hints(named: impl IntoIterator<Item = (String, u64)>) -> String {
    let named: Vec<String> = named
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(said, n)| match hint(&said) {
            Some(h) => format!("{said} {n}: {h}"),
            None => format!("{said} {n}"),
        })
        .collect();
    named.join("; ")
}

/// Why the connections down at the end were down, each cause with what
/// to check: how their last connect failed, or what ended them open.
fn down_causes(a: &AtEnd) -> String {
    let connect = a.down_connect.named();
    let read = a.down_read.named();
    let named = connect
        .iter()
        .map(|(what, n)| (format!("connect {what}"), *n))
        .chain(read.iter().map(|(what, n)| (what.to_string(), *n)));
    match with_hints(named) {
        named if named.is_empty() => "opening when the run ended".to_string(),
        named => named,
    }
}

/// Requests that ended without a response, by what their connections
/// saw, each cause with its fix. Any loss warns, however few: each is a
/// request the server did not answer, and the accounting line alone
/// would leave the reader to guess why. How often connections were
/// reopened follows, when they were: a server that turns connections
/// away makes metron reopen them over and over.
fn lost_warning(c: &Counters) -> Option<String> {
    let e = &c.errors;
    let lost = e.lost_requests();
    if lost == 0 {
        return None;
    }
    let read = c.read_causes.named();
    let broken_out: u64 = read.iter().map(|(_, n)| n).sum();
    // Documents from before read errors were broken out have none.
    let unnamed = e.read.saturating_sub(broken_out);
    let unanswered = c.timeout_unanswered.min(e.timeout);
    let named = read.iter().map(|(what, n)| (what.to_string(), *n)).chain([
        ("read".to_string(), unnamed),
        ("write".to_string(), e.write),
        ("timeout".to_string(), e.timeout - unanswered),
        ("timeout unanswered".to_string(), unanswered),
    ]);
    let reopened = match c.reconnects {
        0 => String::new(),
        n => format!("; connections were reopened {n} times{}", reopen_causes(c)),
    };
    Some(format!(
        "{lost} of {} due requests were lost: {}{reopened}",
        c.due,
        with_hints(named)
    ))
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Requests that left late. Two causes look alike in the send lag and need
/// opposite fixes, so the warning tells them apart: requests that waited
/// for a busy connection (a slow server, or too few connections), or a
/// generator that could not keep up although connections were free.
fn send_lag_warning(r: &TextReport, rate: f64) -> Option<String> {
    let p99 = summary::value_at_percentile(&r.stats.send_lag, 99.0) as f64;
    let allowed = lag_allowance_us(r.threads, rate, r.lag_allowance);
    if p99 <= allowed {
        return None;
    }
    let c = &r.stats.counters;
    let why = match r.lag_allowance {
        Some(_) => "--lag-allowance",
        None => "one schedule interval, at least 1ms",
    };
    let lag = format!(
        "send lag p99 is {}, above the {} allowed ({why})",
        format_time_us(p99),
        format_time_us(allowed)
    );
    // The lag is that of the requests sent; more than 1% of them queued:
    // the queue explains the tail. (Requests never sent have no lag, and a
    // server gone silent leaves most of them unsent.)
    let sent = c.due.saturating_sub(c.never_sent);
    // Over HTTP/2 a request waits for a free stream, not a connection.
    let (busy, one) = match r.protocol {
        Some(p) if p.multiplexes() => ("every stream of the", "a stream"),
        _ => ("all", "one"),
    };
    // Opening a connection (socket, connect, registration, and its close)
    // costs the generator several times what a request on an open one
    // does: when reopens outnumber the requests sent, they took most of
    // its time, and more threads would only reopen faster.
    if c.queued * 100 <= sent && c.reconnects > sent {
        return Some(format!(
            "{lag}: connections were free, but the generator's time went on reopening \
             connections the server closed ({} times for {sent} requests sent), so it sent \
             late; keep the server from closing them ({}) rather than add threads",
            c.reconnects,
            if c.errors.lost_requests() > 0 {
                "see the lost requests' causes"
            } else {
                "its connection and keep-alive limits"
            }
        ));
    }
    if c.queued * 100 <= sent {
        return Some(format!(
            "{lag}: connections were free, so the generator itself sent late and the server \
             did not see a steady -R {rate}; add threads with -t or give metron more CPU"
        ));
    }
    let waited = format!(
        "{lag}: {} of the {sent} requests sent ({:.1}%)",
        c.queued,
        c.queued as f64 * 100.0 / sent.max(1) as f64
    );
    let w = &c.waits;
    Some(if w.down > w.busy + w.server_limit {
        format!(
            "{waited} waited while connections were down or opening ({}); their latency \
             rightly includes that wait",
            down_line(c)
        )
    } else if w.server_limit > w.busy {
        // What the server's limit is called in the protocol spoken.
        let limit = match r.protocol.and_then(Spoken::multiplexing) {
            Some(Protocol::Http3) => {
                "the stream credit it grants, which comes back only once it has \
                 closed a stream"
            }
            Some(Protocol::Http2) => "its SETTINGS_MAX_CONCURRENT_STREAMS, below -m",
            _ => "its stream limit, below -m",
        };
        format!(
            "{waited} found every stream busy that the server allows ({limit}) and waited for \
             one; their latency rightly includes that wait. {}",
            pool_needs(r, rate)
        )
    } else {
        format!(
            "{waited} found {busy} {} connections busy and waited for {one}; their latency \
             rightly includes that wait. {}",
            pool_size(r),
            pool_needs(r, rate)
        )
    })
}

/// The connections the pool had at most, or, when the server turned
/// those beyond its limit away, the ones it accepted: the rest carried
/// nothing.
fn pool_size(r: &TextReport) -> u64 {
    let pool = &r.stats.counters.connections;
    let peak = if pool.peak > 0 {
        pool.peak
    } else {
        r.connections as u64
    };
    pool.server_accepted.map_or(peak, |a| a.min(peak))
}

/// What the rate needs, by Little's law from what the run saw: a pool
/// busy all along that carried `achieved` requests a second on `n`
/// connections needs `n * rate / achieved` for the rate asked (the time
/// per response, and so the streams each connection carries, as seen).
fn pool_needs(r: &TextReport, rate: f64) -> String {
    let achieved = r.stats.requests_per_sec();
    let n = pool_size(r) as f64;
    let per_response = format_time_us(r.stats.uncorrected.mean());
    let needed = (n * rate / achieved.max(f64::MIN_POSITIVE)).ceil();
    if !needed.is_finite() || needed <= n {
        return "If the server was not expected to be slow, raise -c".to_string();
    }
    let pool = &r.stats.counters.connections;
    let at = format!(
        "At {} requests/s and {per_response} per response, about {needed:.0} connections are \
         busy at once",
        format_rate(rate)
    );
    if let Some(accepted) = pool.server_accepted {
        return format!(
            "{at}, but the server accepted only about {accepted}: raise its connection limit, \
             or offer less"
        );
    }
    if pool.opened_on_demand > 0 {
        return format!("{at}: raise --max-connections to {needed:.0}");
    }
    format!("{at}: raise -c to {needed:.0}, or pass --max-connections to open them as needed")
}

/// The failed connects and how the connections went down, in brief.
fn down_line(c: &Counters) -> String {
    let connect = match c.connect_causes.to_string() {
        named if named.is_empty() => format!("{} connect errors", c.errors.connect),
        named => format!("{} connect errors: {named}", c.errors.connect),
    };
    // Connections the server closed were down while they reopened, too.
    match c.reconnects {
        0 => connect,
        n => format!("{connect}; {n} reopened{}", reopen_causes(c)),
    }
}

/// What ended the connections that were reopened, when the document
/// says: ` (reset 26, closed 2)`.
fn reopen_causes(c: &Counters) -> String {
    match c.reopens.to_string() {
        named if named.is_empty() => String::new(),
        named => format!(" ({named})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Protocol;
    use crate::stats::{AtEnd, Errors, ReadCauses, ThreadStats};

    const GOLDEN: &str = include_str!("testdata/golden.txt");

    fn render(r: &TextReport) -> String {
        let mut out = Vec::new();
        write_text(&mut out, r).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn report(stats: &RunStats, rate: Option<f64>) -> TextReport<'_> {
        TextReport {
            url: "http://127.0.0.1:8080/",
            duration: Duration::from_secs(1),
            threads: 2,
            connections: 10,
            load: Load::from_rate(rate),
            latency: true,
            u_latency: true,
            protocol: None,
            profile_phases: 0,
            stats,
            lag_allowance: None,
        }
    }

    fn record(h: &mut Histogram<u64>, values: &[(u64, u64)]) {
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
    }

    /// A thread completing `per_sample` requests in each 100 ms sample of
    /// a one-second window.
    fn thread_completing_per_sample(per_sample: u64) -> ThreadStats {
        let mut t = ThreadStats::default();
        for sample in 0..10 {
            for i in 0..per_sample {
                t.count_completion((sample * 100 + i) * 1_000_000);
            }
        }
        t
    }

    /// Figures chosen to be checked by hand, not for realism: latencies
    /// of 500 µs ×4, 1 ms ×3, 2.5 ms ×2 and 12.5 ms ×1 (uncorrected:
    /// 300 µs ×5, 700 µs ×5), one thread at 50 req/s and one at 100.
    fn golden_stats() -> RunStats {
        let mut a = thread_completing_per_sample(5);
        let mut b = thread_completing_per_sample(10);
        record(&mut a.latency, &[(500, 4), (1000, 3)]);
        record(&mut b.latency, &[(2500, 2), (12500, 1)]);
        record(&mut a.uncorrected, &[(300, 5)]);
        record(&mut b.uncorrected, &[(700, 5)]);
        record(&mut a.send_lag, &[(50, 8)]);
        record(&mut b.send_lag, &[(120, 2)]);
        a.counters = Counters {
            due: 160,
            completed: 150,
            bytes: 20_771_635,
            errors: Errors {
                connect: 1,
                read: 2,
                write: 0,
                status: 4,
                timeout: 3,
            },
            in_flight: 4,
            never_sent: 1,
            at_end: AtEnd {
                busy: 4,
                ..AtEnd::default()
            },
            read_causes: ReadCauses {
                reset: 2,
                ..ReadCauses::default()
            },
            ..Counters::default()
        };
        for _ in 0..146 {
            a.counters.status_codes.count(200);
        }
        for _ in 0..4 {
            a.counters.status_codes.count(503);
        }
        // The 3 timeouts at 2 s, the 4 in flight and the 1 never sent at
        // 150 ms and 20 ms.
        record(
            &mut a.unfinished,
            &[(2_000_000, 3), (150_000, 4), (20_000, 1)],
        );
        RunStats::merge(vec![a, b], Duration::from_secs(1))
    }

    #[test]
    fn golden_report() {
        let stats = golden_stats();
        assert!(stats.counters.balanced());
        assert_eq!(render(&report(&stats, Some(200.0))), GOLDEN);
    }

    #[test]
    fn golden_lines_follow_the_rules() {
        let lines: Vec<&str> = GOLDEN.lines().collect();
        // Mean 2250.2 µs, stdev 3494.65 µs, max 12 496 µs, 9 of 10 within.
        assert!(lines.contains(&"    Latency     2.25ms    3.49ms  12.50ms   90.00%"));
        // Samples 50 ×10 and 100 ×10: plain numbers keep a 2-space margin.
        assert!(lines.contains(&"    Req/Sec    75.00     25.00   100.00    100.00%"));
        assert!(lines.contains(&" 90.000%    2.50ms"));
        assert!(lines.contains(&"      12.503     1.000000           10          inf"));
        assert!(lines.contains(&"  150 requests in 1.00s, 19.81MB read"));
        assert!(lines.contains(&"Transfer/sec:     19.81MB"));
    }

    #[test]
    fn an_empty_run_prints_no_nan() {
        let stats = RunStats::merge(vec![ThreadStats::default()], Duration::ZERO);
        let text = render(&report(&stats, None));
        assert!(!text.to_lowercase().contains("nan"), "{text}");
        assert!(!text.contains("inf"), "{text}");
        // Nothing was measured: dashes, not a latency of 0.00us.
        assert!(
            text.contains("    Latency        -         -        -         - \n"),
            "{text}"
        );
        assert!(text.contains("  0 requests in 0.00us, 0.00B read\n"));
        assert!(text.contains("Requests/sec:      0.00\n"));
    }

    #[test]
    fn error_lines_appear_only_when_non_zero() {
        let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
        let text = render(&report(&stats, None));
        assert!(!text.contains("Socket errors"));
        assert!(!text.contains("Non-2xx"));
        assert!(!text.contains("Accounting"));
        stats.counters.errors.timeout = 2;
        stats.counters.due = 2;
        let text = render(&report(&stats, None));
        assert!(text.contains("  Socket errors: connect 0, read 0, write 0, timeout 2\n"));
        assert!(!text.contains("Non-2xx"));
        stats.counters.errors = Errors {
            status: 3,
            ..Errors::default()
        };
        let text = render(&report(&stats, None));
        assert!(!text.contains("Socket errors"));
        assert!(text.contains("  Non-2xx or 3xx responses: 3\n"));
    }

    #[test]
    fn responses_by_status_and_read_errors_by_cause() {
        let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
        let text = render(&report(&stats, None));
        assert!(!text.contains("Status codes") && !text.contains("Read errors"));
        let c = &mut stats.counters;
        for code in [200, 503, 200] {
            c.status_codes.count(code);
        }
        c.errors.read = 3;
        c.read_causes.reset = 2;
        c.read_causes.head_too_large = 1;
        let text = render(&report(&stats, None));
        assert!(text.contains("  Status codes: 200 2, 503 1\n"), "{text}");
        assert!(
            text.contains("  Read errors: reset 2, head too large 1\n"),
            "{text}"
        );
    }

    #[test]
    fn http2_runs_name_the_protocol_and_break_out_its_events() {
        let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
        let text = render(&report(&stats, None));
        assert!(!text.contains("Protocol:"));
        assert!(!text.contains("HTTP/2:"));
        stats.counters.http2.resets.count(7);
        stats.counters.http2.resets.count(7);
        stats.counters.http2.resets.count(8);
        stats.counters.http2.goaway.count(0);
        stats.counters.http2.retried = 4;
        let mut r = report(&stats, None);
        let spoken = Spoken::of([Protocol::Http2]);
        r.protocol = Some(&spoken);
        let text = render(&r);
        assert!(text.contains("  Protocol: HTTP/2\n"), "{text}");
        assert!(
            text.contains(
                "  HTTP/2: 3 streams reset (REFUSED_STREAM 2, CANCEL 1), 1 GOAWAY (NO_ERROR 1), \
                 0 connection errors, 4 requests sent again (never processed)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_quic_line_counts_0rtt_of_the_connections_that_sent_it() {
        let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
        assert!(!render(&report(&stats, None)).contains("QUIC:"));
        stats.counters.quic.packets_sent = 400;
        stats.counters.quic.packets_lost = 4;
        let line = "  QUIC: 400 packets sent, 4 lost and sent again (1.00%)";
        let text = render(&report(&stats, None));
        assert!(text.contains(&format!("{line}\n")), "{text}");
        // With --0rtt: of those that sent early, those the server took.
        stats.counters.quic.zero_rtt_offered = 7;
        stats.counters.quic.zero_rtt = 5;
        let text = render(&report(&stats, None));
        let want = format!("{line}, 5 of 7 connections with 0-RTT accepted\n");
        assert!(text.contains(&want), "{text}");
        stats.counters.quic.zero_rtt = 0;
        let text = render(&report(&stats, None));
        let want = format!("{line}, 0 of 7 connections with 0-RTT accepted\n");
        assert!(text.contains(&want), "{text}");
    }

    /// Regression: replies that failed `--grpc-check` were reported as
    /// `Failed calls: 400 (gRPC status not OK)` above `gRPC status: OK
    /// 400`. The line names each cause, with its count when both are there.
    #[test]
    fn failed_calls_name_their_cause() {
        let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
        let c = &mut stats.counters;
        c.completed = 400;
        for _ in 0..400 {
            c.grpc.count(metron_grpc::status::OK);
        }
        c.errors.status = 400;
        c.failed_checks = 400;
        let text = render(&report(&stats, None));
        assert!(
            text.contains("  Failed calls: 400 (OK replies that failed --grpc-check)\n"),
            "{text}"
        );
        let c = &mut stats.counters;
        for _ in 0..10 {
            c.grpc.count(14);
        }
        c.errors.status = 410;
        let text = render(&report(&stats, None));
        assert!(
            text.contains(
                "  Failed calls: 410 (10 with a gRPC status not OK, 400 OK replies that failed \
                 --grpc-check)\n"
            ),
            "{text}"
        );
        let c = &mut stats.counters;
        c.failed_checks = 0;
        c.errors.status = 10;
        let text = render(&report(&stats, None));
        assert!(
            text.contains("  Failed calls: 10 (gRPC status not OK)\n"),
            "{text}"
        );
    }

    /// `--sse` against responses that are not event streams: they are
    /// named in a warning, in both modes; a streamed call without a
    /// message is not warned of.
    #[test]
    fn responses_without_events_are_named() {
        let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
        stats.events = Some(EventStats {
            responses: 400,
            without_events: 396,
            ..EventStats::default()
        });
        let want =
            "  Warning: 396 of 400 completed responses carried no event: they were not event \
                    streams (text/event-stream), or ended before their first event, and the \
                    first-event figures leave them out; check that the URL serves server-sent \
                    events, or drop --sse\n";
        for rate in [None, Some(100.0)] {
            let text = render(&report(&stats, rate));
            assert!(text.contains(want), "{rate:?}: {text}");
        }
        // The lower bounds of the requests still waiting are no first
        // events: dashes, until some event came.
        let e = stats.events.as_mut().unwrap();
        e.open = 4;
        record(&mut e.first, &[(20_000, 4)]);
        let text = render(&report(&stats, None));
        assert!(
            text.contains("  Events: 0.0 per response; first event p50 -, p99 -; gap p50 -"),
            "{text}"
        );
        stats.events.as_mut().unwrap().count = 1;
        let text = render(&report(&stats, None));
        assert!(text.contains("first event p50 20.00ms"), "{text}");
        stats.events.as_mut().unwrap().kind = EventKind::Messages;
        assert!(!render(&report(&stats, None)).contains("carried no"));
        stats.events = Some(EventStats {
            responses: 400,
            ..EventStats::default()
        });
        assert!(!render(&report(&stats, None)).contains("Warning"));
    }

    #[test]
    fn a_connect_error_alone_shows_socket_errors_but_no_accounting() {
        let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
        stats.counters.errors.connect = 1;
        let text = render(&report(&stats, None));
        assert!(text.contains("  Socket errors: connect 1, read 0, write 0, timeout 0\n"));
        assert!(!text.contains("Accounting"));
    }

    #[test]
    fn books_that_do_not_balance_are_shown_and_called_wrong() {
        let mut stats = RunStats::merge(vec![ThreadStats::default()], Duration::from_secs(1));
        stats.counters.due = 3000;
        stats.counters.completed = 2000;
        let text = render(&report(&stats, None));
        assert!(
            text.contains(
                "  Accounting: 3000 due, but 2000 completed + 0 lost (read 0, write 0, timeout 0) \
                 + 0 in flight + 0 never sent make 2000: metron lost track of 1000 requests"
            ),
            "{text}"
        );
    }

    #[test]
    fn throughput_mode_says_latency_is_closed_loop() {
        let stats = golden_stats();
        let text = render(&report(&stats, None));
        assert!(text.contains("(closed loop)"));
        assert!(!text.contains("Send lag"));
        // No schedule to keep, so no never-sent or send-lag warning; lost
        // requests are lost in either mode.
        let found = warnings(&report(&stats, None));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("5 of 160 due requests were lost: reset 2"));
    }

    #[test]
    fn latency_blocks_follow_the_flags() {
        let stats = golden_stats();
        let mut r = report(&stats, None);
        r.latency = false;
        r.u_latency = false;
        let text = render(&r);
        assert!(!text.contains("Latency Distribution"));
        assert!(!text.contains(RULE));
        // The unfinished requests are summed up in one line instead.
        assert!(text.contains(
            "  Latency including 8 unfinished requests (lower bounds): p50 2.50ms, p99 2.00s, \
             p99.9 2.00s, max 2.00s\n"
        ));
        r.latency = true;
        let text = render(&r);
        // The corrected block, then the same with the unfinished requests.
        assert_eq!(text.matches("Latency Distribution").count(), 2);
        assert!(!text.contains("Latency including"));
        assert!(!text.contains("Uncorrected"));
    }

    fn lagging(p99_us: u64, never_sent: u64) -> RunStats {
        let mut t = ThreadStats::default();
        // The 99th of 100 values is the first of the two slow ones.
        record(&mut t.send_lag, &[(10, 98), (p99_us, 2)]);
        t.counters.due = 100;
        t.counters.completed = 100 - never_sent;
        t.counters.never_sent = never_sent;
        RunStats::merge(vec![t], Duration::from_secs(1))
    }

    #[test]
    fn warnings_stay_silent_for_a_run_on_schedule() {
        // 2 threads at 1000 req/s: one send per 2 ms per thread.
        let stats = lagging(1999, 0);
        assert!(warnings(&report(&stats, Some(1000.0))).is_empty());
    }

    #[test]
    fn send_lag_beyond_an_interval_warns() {
        let stats = lagging(2100, 0);
        let found = warnings(&report(&stats, Some(1000.0)));
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("send lag p99 is 2.10ms, above the 2.00ms allowed"),
            "{}",
            found[0]
        );
        assert!(
            found[0].contains("generator itself sent late"),
            "{}",
            found[0]
        );
        assert!(found[0].contains("-t"));
    }

    #[test]
    fn the_lag_allowance_sets_what_the_warning_allows() {
        let stats = lagging(2100, 0);
        let mut r = report(&stats, Some(1000.0));
        r.lag_allowance = Some(Duration::from_millis(3));
        assert!(warnings(&r).is_empty());
        r.lag_allowance = Some(Duration::from_millis(1));
        let found = warnings(&r);
        assert!(
            found[0].contains("above the 1.00ms allowed"),
            "{}",
            found[0]
        );
    }

    #[test]
    fn send_lag_from_busy_connections_blames_the_queue() {
        let mut stats = lagging(5000, 0);
        stats.counters.queued = 40;
        let found = warnings(&report(&stats, Some(1000.0)));
        assert_eq!(found.len(), 1);
        assert!(
            found[0].contains("40 of the 100 requests sent (40.0%) found all"),
            "{}",
            found[0]
        );
        assert!(found[0].contains("raise -c"), "{}", found[0]);
    }

    /// Regression: against a server gone silent, most due requests are
    /// never sent, and the few that were sent queued. Measured against
    /// every due request the queue looked negligible, and the warning
    /// blamed the generator's CPU.
    #[test]
    fn a_silent_server_is_blamed_on_the_queue_not_the_generator() {
        let mut t = ThreadStats::default();
        record(&mut t.send_lag, &[(10, 1), (2_000_000, 3)]);
        t.counters.due = 1500;
        t.counters.in_flight = 4;
        t.counters.never_sent = 1496;
        t.counters.queued = 3;
        let stats = RunStats::merge(vec![t], Duration::from_secs(3));
        let found = warnings(&report(&stats, Some(500.0)));
        let lag = found.iter().find(|w| w.starts_with("send lag")).unwrap();
        assert!(lag.contains("3 of the 4 requests sent (75.0%)"), "{lag}");
        assert!(!lag.contains("generator itself"), "{lag}");
    }

    #[test]
    fn send_lag_below_a_millisecond_never_warns() {
        // At 100k req/s the interval is 20 µs, but 1 ms is the floor.
        assert!(warnings(&report(&lagging(999, 0), Some(100_000.0))).is_empty());
        assert_eq!(
            warnings(&report(&lagging(1100, 0), Some(100_000.0))).len(),
            1
        );
    }

    #[test]
    fn requests_never_sent_warn() {
        let stats = lagging(10, 3);
        let found = warnings(&report(&stats, Some(1000.0)));
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("3 of 100 due requests were never sent"),
            "{}",
            found[0]
        );
        let text = render(&report(&stats, Some(1000.0)));
        assert!(text.contains("\n  Warning: 3 of 100 due requests were never sent"));
    }

    /// A run against a server that turns connections beyond its limit
    /// away: 37 requests lost on new connections, 1 reset on one that had
    /// answered, many reopens.
    fn turned_away() -> RunStats {
        let mut stats = lagging(10, 0);
        let c = &mut stats.counters;
        c.completed = 62;
        c.errors.read = 38;
        c.read_causes.closed_unanswered = 37;
        c.read_causes.reset = 1;
        c.reconnects = 900;
        stats
    }

    #[test]
    fn requests_lost_warn_with_each_cause_and_its_fix() {
        let stats = turned_away();
        assert!(stats.counters.balanced());
        let found = warnings(&report(&stats, Some(1000.0)));
        assert_eq!(found.len(), 1, "{found:?}");
        let w = &found[0];
        assert!(
            w.starts_with("38 of 100 due requests were lost: closed before answering 37: "),
            "{w}"
        );
        assert!(w.contains("(lower -c, or raise the limit)"), "{w}");
        assert!(w.contains("; reset 1: the server reset the request's stream or its connection"));
        assert!(w.ends_with("; connections were reopened 900 times"), "{w}");
        // Causes that did not occur are not named.
        assert!(!w.contains("closed early") && !w.contains("timeout"), "{w}");
        let text = render(&report(&stats, Some(1000.0)));
        assert!(text.contains("\n  Read errors: closed before answering 37, reset 1\n"));
        assert!(text.contains("\n  Warning: 38 of 100 due requests were lost: "));
    }

    #[test]
    fn a_single_lost_request_warns_in_either_mode() {
        let mut stats = lagging(10, 0);
        stats.counters.due = 1_000_000;
        stats.counters.completed = 999_999;
        stats.counters.errors.timeout = 1;
        for rate in [Some(1000.0), None] {
            let found = warnings(&report(&stats, rate));
            assert_eq!(
                found,
                [
                    "1 of 1000000 due requests were lost: timeout 1: no response within \
                  --timeout: a stalled server, or raise --timeout"
                ]
            );
        }
    }

    /// A document from before read errors were broken out by cause.
    #[test]
    fn read_errors_without_causes_are_still_counted() {
        let mut stats = lagging(10, 0);
        stats.counters.completed = 95;
        stats.counters.errors.read = 3;
        stats.counters.errors.write = 2;
        let found = warnings(&report(&stats, None));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("5 of 100 due requests were lost: read 3; write 2: "),
            "{}",
            found[0]
        );
    }

    #[test]
    fn send_lag_from_reopening_connections_blames_the_server_s_closes() {
        let mut stats = turned_away();
        record(&mut stats.send_lag, &[(5000, 10)]);
        let found = warnings(&report(&stats, Some(1000.0)));
        let lag = found.iter().find(|w| w.starts_with("send lag")).unwrap();
        assert!(
            lag.contains(
                "connections were free, but the generator's time went on reopening connections \
                 the server closed (900 times for 100 requests sent)"
            ),
            "{lag}"
        );
        assert!(lag.contains("see the lost requests' causes"), "{lag}");
        assert!(!lag.contains("add threads with -t"), "{lag}");
        // As many reopens as requests: the requests still took the time.
        stats.counters.reconnects = 100;
        let found = warnings(&report(&stats, Some(1000.0)));
        let lag = found.iter().find(|w| w.starts_with("send lag")).unwrap();
        assert!(lag.contains("add threads with -t"), "{lag}");
    }

    /// A connection down at the end after a reset of its own is not said
    /// to have been reset as it opened (a failed connect's hint).
    #[test]
    fn connections_down_at_the_end_get_the_hint_of_their_own_cause() {
        let mut a = AtEnd::default();
        a.down_read.reset = 1;
        a.down_read.closed_unanswered = 2;
        a.down_connect.reset = 3;
        assert_eq!(
            down_causes(&a),
            "connect reset 3: the server reset connections as they opened; \
             closed before answering 2: the server closed new connections unanswered, as one \
             does past its connection limit (lower -c, or raise the limit) or when it fails \
             every request; reset 1: the server reset the request's stream or its connection \
             (its error log may say why)"
        );
    }

    /// Nothing was sent (a stream limit of 0, Ctrl-C before `--start-at`,
    /// a script that failed in its first `request()`): the send lag was
    /// not measured, so it prints dashes, not `0.00us`.
    #[test]
    fn a_run_that_sent_nothing_has_no_send_lag() {
        let mut t = ThreadStats::default();
        t.counters.due = 50;
        t.counters.never_sent = 50;
        let stats = RunStats::merge(vec![t], Duration::from_secs(1));
        let text = render(&report(&stats, Some(50.0)));
        assert!(
            text.contains("\n  Send lag: p50 -, p99 -, max -\n"),
            "{text}"
        );
        assert!(!text.contains(" 0.00us"), "{text}");
    }

    /// An endpoint with requests in flight and none completed has no
    /// latency to show.
    #[test]
    fn an_endpoint_with_nothing_completed_prints_dashes() {
        let mut stats = golden_stats();
        stats.endpoints = vec![
            EndpointStats {
                name: "GET /slow".to_string(),
                completed: 0,
                errors: 0,
                latency: None,
            },
            EndpointStats {
                name: "GET /empty".to_string(),
                completed: 0,
                errors: 0,
                latency: Some(crate::stats::new_histogram()),
            },
        ];
        let text = render(&report(&stats, Some(200.0)));
        for name in ["GET /slow", "GET /empty"] {
            let row = format!(
                "  {:>10} {:>8} {:>9} {:>9} {:>9}  {name}\n",
                0, 0, "-", "-", "-"
            );
            assert!(text.contains(&row), "{text}");
        }
    }

    /// A profile of more phases than are broken out says why its table is
    /// missing, rather than dropping it without a word.
    #[test]
    fn a_profile_of_too_many_phases_says_its_table_is_left_out() {
        let stats = golden_stats();
        let mut r = report(&stats, Some(100.0));
        r.profile_phases = MAX_PHASES + 1;
        let text = render(&r);
        assert!(
            text.contains(&format!(
                "  Phases: no table for a profile of {} phases (at most {MAX_PHASES}, ",
                MAX_PHASES + 1
            )),
            "{text}"
        );
        // A profile the table covers (its phases were filled in) or one
        // of a single phase says nothing of the kind.
        r.profile_phases = MAX_PHASES;
        assert!(!render(&r).contains("Phases:"));
    }

    /// A phase table's rates follow one rule: 900 is not `0.90k` under an
    /// `825.00`.
    #[test]
    fn phase_rates_move_to_k_at_a_whole_thousand() {
        let mut stats = golden_stats();
        stats.phases = [("825:1s", 825), ("900:1s", 900), ("1200:1s", 1200)]
            .iter()
            .enumerate()
            .map(|(i, &(label, n))| PhaseStats {
                label: label.to_string(),
                start: Duration::from_secs(i as u64),
                length: Duration::from_secs(1),
                due: n,
                completed: n,
                ..PhaseStats::default()
            })
            .collect();
        let text = render(&report(&stats, Some(975.0)));
        assert!(text.contains("   825.00    825.00 "), "{text}");
        assert!(text.contains("   900.00    900.00 "), "{text}");
        assert!(text.contains("     1.20k     1.20k "), "{text}");
        assert!(!text.contains("0.90k"), "{text}");
    }

    fn instance(name: &str, lag: Option<u64>) -> crate::report::json::Instance {
        crate::report::json::Instance {
            name: name.to_string(),
            shard: Some(crate::report::json::ShardConfig { index: 0, count: 2 }),
            rate: Some(900.0),
            requests_per_sec: 899.5,
            completed: 8995,
            errors: 0,
            never_sent: 0,
            send_lag_p99_us: lag,
            start_offset_s: None,
            window_start_ms: None,
            window_s: 10.0,
        }
    }

    /// Long instance names (paths) widen their column instead of pushing
    /// their rows out of line; an instance that sent nothing has no lag.
    #[test]
    fn the_instance_table_fits_its_widest_name() {
        let long = "results/run-2026-11-24/node-with-a-long-hostname-07.json";
        let rows = [instance("a.json", Some(120)), instance(long, None)];
        let mut out = Vec::new();
        write_instances(&mut out, &rows).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(lines.len(), 3, "{text}");
        // Every line is as long, and each column ends where the header's does.
        assert!(lines.iter().all(|l| l.len() == lines[0].len()), "{text}");
        let end_of = |l: &str, what: &str| l.find(what).unwrap() + what.len();
        for l in &lines[1..] {
            assert_eq!(end_of(l, " 0/2 "), end_of(lines[0], "shard") + 1, "{text}");
        }
        assert!(lines[1].contains(" 900.00 "), "{text}");
        assert!(lines[1].contains(" 899.50 "), "{text}");
        assert!(lines[1].contains(" 120.00us "), "{text}");
        assert!(lines[2].starts_with(&format!("    {long} ")), "{text}");
        assert!(lines[2].contains(" - "), "{text}");
    }

    /// An objective judged on a run that measured nothing shows no value,
    /// rather than a latency of 0.00us beside its verdict.
    #[test]
    fn an_slo_term_without_a_value_prints_a_dash() {
        let slo = SloReport {
            spec: "p99<10ms".into(),
            verdict: crate::verdict::Verdict::Inconclusive,
            reason: Some("nothing was measured".into()),
            exit_status: 4,
            rows: vec![crate::verdict::SloRow {
                term: "p99<10ms".into(),
                value: None,
                unit: "us".into(),
                met: false,
            }],
        };
        let mut out = Vec::new();
        write_slo(&mut out, &slo).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("  SLO p99<10ms: -, not measured\n"),
            "{text}"
        );
    }
}
