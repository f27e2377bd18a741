//! The results: the original's layout line for line (latency, the
//! threads' figures, totals), then metron's own lines (send lag, phases,
//! protocols' counts, the accounting of every due request).

use super::*;

/// Per phase of a rate profile: the rate intended and achieved, errors,
/// and the corrected latency (unfinished requests at their lower bounds)
/// of the requests intended in it. A profile of more phases than are
/// broken out (`profile_phases`) gets a line that says so instead.
pub(super) fn write_phases(
    out: &mut impl Write,
    phases: &[PhaseStats],
    profile_phases: usize,
    counted: Counted,
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
    let many = counted.many();
    writeln!(
        out,
        "  Phases ({many} by intended time; latency including unfinished {many})"
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

/// A merged document's instances, a row each, so that one bad node shows:
/// what it was asked for and achieved, its send lag, errors, and how late
/// it started after `--start-at`. Each column is as wide as its widest
/// cell, so that long instance names (file paths) keep the rows aligned.
pub fn write_instances(
    out: &mut impl Write,
    instances: &[crate::report::json::Instance],
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
    write_thread_stats(out, stats, None)?;
    write_distribution(out, &stats.latency, "Recorded Latency")?;
    write_with_unfinished(out, stats, Counted::Requests)?;
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

/// One line per endpoint of a requests file: what it got (`counted`:
/// requests, or WebSocket messages or subscriptions) and how fast.
pub(super) fn write_endpoints(
    out: &mut impl Write,
    endpoints: &[EndpointStats],
    counted: Counted,
) -> io::Result<()> {
    if endpoints.is_empty() {
        return Ok(());
    }
    writeln!(out, "  Endpoints (corrected latency)")?;
    let title = counted.title();
    let w = title.len().max(10);
    writeln!(
        out,
        "  {title:>w$} {:>8} {:>9} {:>9} {:>9}  Endpoint",
        "Errors", "50%", "99%", "99.9%"
    )?;
    let empty = crate::stats::new_histogram();
    for e in endpoints {
        // Requests in flight and none completed: no latency, not 0.00us.
        let h = e.latency.as_ref().unwrap_or(&empty);
        let at = |p| time_or_none(summary::percentile(h, p));
        writeln!(
            out,
            "  {:>w$} {:>8} {:>9} {:>9} {:>9}  {}",
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

/// The Thread Stats table: latency, and the threads' rates of what they
/// counted when those were sampled (`rates`).
pub(super) fn write_thread_stats(
    out: &mut impl Write,
    stats: &RunStats,
    rates: Option<Counted>,
) -> io::Result<()> {
    writeln!(
        out,
        "  Thread Stats{:>6}{:>11}{:>8}{:>12}",
        "Avg", "Stdev", "Max", "+/- Stdev"
    )?;
    write_stats_row(out, "Latency", &stats.latency, format_time_us)?;
    if let Some(counted) = rates {
        let name = match counted {
            Counted::Requests => "Req/Sec",
            Counted::Messages => "Msg/Sec",
            Counted::Subscriptions => "Sub/Sec",
        };
        write_stats_row(out, name, &stats.req_per_sec, format_metric)?;
    }
    Ok(())
}

pub(super) fn write_stats_row(
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
pub(super) fn write_distribution(
    out: &mut impl Write,
    h: &Histogram<u64>,
    title: &str,
) -> io::Result<()> {
    writeln!(out, "  Latency Distribution (HdrHistogram - {title})")?;
    write_percentiles(out, h)?;
    writeln!(out, "\n  Detailed Percentile spectrum:")?;
    write_spectrum(out, h)?;
    writeln!(out, "{RULE}")
}

/// The percentile lines of a distribution (dashes when it is empty).
pub(super) fn write_percentiles(out: &mut impl Write, h: &Histogram<u64>) -> io::Result<()> {
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

/// With `-L`, under the latency distribution: time to first byte (from
/// the intended send time, and from the send), connect and TLS handshake,
/// each a row when it was measured at all.
pub(super) fn write_timings(
    out: &mut impl Write,
    t: &Timings,
    events: Option<&EventStats>,
) -> io::Result<()> {
    let (first, gap) = match events.map(|e| e.kind) {
        Some(EventKind::Messages | EventKind::WebSocket) => ("First message", "Message gap"),
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
pub(super) fn write_with_unfinished(
    out: &mut impl Write,
    stats: &RunStats,
    counted: Counted,
) -> io::Result<()> {
    let n = stats.unfinished.len();
    if n == 0 {
        return Ok(());
    }
    writeln!(out, "  {}", with_unfinished_title(n, counted))?;
    write_percentiles(out, &stats.with_unfinished())?;
    writeln!(out, "{RULE}")
}

pub(super) fn with_unfinished_title(n: u64, counted: Counted) -> String {
    format!("Latency Distribution {}", including_unfinished(n, counted))
}

pub(super) fn including_unfinished(n: u64, counted: Counted) -> String {
    format!(
        "including {n} unfinished {}{} (lower bounds)",
        counted.one(),
        plural(n)
    )
}

pub(super) fn write_totals(
    out: &mut impl Write,
    stats: &RunStats,
    counted: Counted,
) -> io::Result<()> {
    let c = &stats.counters;
    let window = format_time_us(stats.window.as_micros() as f64);
    let bytes = format_binary(c.bytes as f64);
    let many = counted.many();
    writeln!(out, "  {} {many} in {window}, {bytes}B read", c.completed)?;
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
    writeln!(
        out,
        "{}/sec: {:9.2}",
        counted.title(),
        stats.requests_per_sec()
    )?;
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
pub(super) fn failed_call_causes(c: &Counters) -> String {
    let checks = c.failed_checks;
    let status = c.errors.status.saturating_sub(checks);
    match (status, checks) {
        (_, 0) => "gRPC status not OK".to_string(),
        (0, _) => "OK replies that failed --grpc-check".to_string(),
        (s, n) => format!("{s} with a gRPC status not OK, {n} OK replies that failed --grpc-check"),
    }
}

pub(super) fn write_own_lines(out: &mut impl Write, r: &TextReport) -> io::Result<()> {
    let stats = r.stats;
    let counted = r.counted();
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
        writeln!(out, "  {}", with_unfinished_line(stats, counted))?;
    }
    // A flow's steps have intended times in the closed loop too.
    let paced = r.load.is_open() || stats.visits.is_some();
    if paced {
        writeln!(out, "  {}", send_lag_line(&stats.send_lag))?;
    }
    if let Some(protocol) = r.protocol {
        writeln!(out, "  Protocol: {protocol}")?;
    }
    let (agreed, declined) = (
        stats.counters.ws_deflate_agreed,
        stats.counters.ws_deflate_declined,
    );
    if agreed + declined > 0 {
        writeln!(
            out,
            "  Compressed (permessage-deflate): {agreed} of {} connections opened",
            agreed + declined
        )?;
    }
    let c = &stats.counters;
    let messages = r.protocol.as_ref().is_some_and(|p| p.messages());
    if c.status_codes.total() > 0 && !messages {
        writeln!(out, "  Status codes: {}", c.status_codes)?;
    }
    if c.ws_refused.total() > 0 {
        writeln!(
            out,
            "  Upgrades refused by the server: {} (reopened; their messages were not sent)",
            c.ws_refused
        )?;
    }
    if c.ws_closes.total() > 0 {
        writeln!(out, "  Closes by the server: {}", c.ws_closes)?;
    }
    if c.ws_pings > 0 {
        writeln!(out, "  Pings sent: {}", c.ws_pings)?;
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
    if let Some(events) = stats.events.as_ref().filter(|_| stats.llm.is_none()) {
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
    if let Some(line) = turned_away_line(&stats.counters, counted) {
        writeln!(out, "  {line}")?;
    }
    if stats.counters.http2.any() {
        // The streams' line is named for the protocol that had them.
        let name = r.protocol.and_then(Spoken::streams_of).unwrap_or("HTTP/2");
        writeln!(out, "  {}", http2_line(name, &stats.counters.http2))?;
    }
    if stats.counters.quic.any() {
        writeln!(out, "  {}", quic_line(&stats.counters.quic))?;
    }
    if let Some(line) = accounting_line(&stats.counters, counted) {
        writeln!(out, "  {line}")?;
    }
    if !r.load.is_open() && stats.visits.is_some() {
        writeln!(
            out,
            "  Note: -c visits run back to back (closed loop), each step timed from the end of \
             the one before (plus its rests); -R starts visits on a schedule instead"
        )?;
    } else if !paced {
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
pub(super) fn with_unfinished_line(stats: &RunStats, counted: Counted) -> String {
    let h = stats.with_unfinished();
    let at = |p| format_time_us(summary::value_at_percentile(&h, p) as f64);
    let max = format_time_us(summary::max(&h) as f64);
    format!(
        "Latency {}: p50 {}, p99 {}, p99.9 {}, max {max}",
        including_unfinished(stats.unfinished.len(), counted),
        at(50.0),
        at(99.0),
        at(99.9)
    )
}

/// wrk's `read N` by what the connections saw: `Read errors: reset 3,
/// closed early 2`.
pub(super) fn read_causes_line(c: &Counters) -> Option<String> {
    (c.errors.read > 0).then(|| format!("Read errors: {}", c.read_causes))
}

/// Connections the server turned away when no request was lost, which
/// the lost requests' warning would otherwise name: reopened, they cost
/// the generator time and the server a connection each.
pub(super) fn turned_away_line(c: &Counters, counted: Counted) -> Option<String> {
    // Refused upgrades were answered: they have their own line.
    let n = c.reopens.turned_away.saturating_sub(c.ws_refused.total());
    if n == 0 || c.errors.lost_requests() > 0 {
        return None;
    }
    let why = hint("closed before answering", counted).unwrap_or_default();
    Some(format!(
        "Connections turned away: {n}, closed or reset before anything was answered on them \
         and reopened (no {} lost): {why}",
        counted.one()
    ))
}

/// Streams' resets and GOAWAYs by error code (HTTP/2's, or HTTP/3's under
/// `name`), connection errors, and the requests sent again because the
/// server never processed them.
pub(super) fn http2_line(name: &str, h: &Http2Counts) -> String {
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
pub(super) fn quic_line(q: &QuicCounts) -> String {
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
pub(super) fn events_line(e: &EventStats) -> String {
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
pub(super) fn send_lag_line(lag: &Histogram<u64>) -> String {
    let at = |p| time_or_none(summary::percentile(lag, p));
    let max = time_or_none(summary::maximum(lag));
    format!("Send lag: p50 {}, p99 {}, max {max}", at(50.0), at(99.0))
}

/// Where every due request ended up, when any did not simply complete.
/// Books that do not balance are always shown, and said to be wrong: that
/// is a fault of metron's, never of the server.
pub(super) fn accounting_line(c: &Counters, counted: Counted) -> Option<String> {
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
            "Accounting: {} due, but {parts} make {sum}: metron lost track of {} {} (a bug in metron)",
            c.due,
            c.due.abs_diff(sum),
            counted.many()
        )
    })
}
