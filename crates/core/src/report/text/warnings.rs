//! The warnings after the results: each names the cause it saw in the
//! counts and the fix, in one line.

use super::*;

/// What went wrong, each with its figures and the likely fix: requests
/// lost (in either mode), and, in rate mode, signs that the generator did
/// not keep to its schedule (throughput mode has none to keep).
pub fn warnings(r: &TextReport) -> Vec<String> {
    let counted = r.counted();
    let lost = lost_warning(&r.stats.counters, counted);
    let limit = connection_limit_warning(&r.stats.counters, counted);
    let events = match &r.stats.llm {
        Some(l) => no_tokens_warning(l),
        None => r.stats.events.as_ref().and_then(no_events_warning),
    };
    let streams = r
        .stats
        .llm
        .as_ref()
        .and_then(broken_streams_warning)
        .or_else(|| unasked_warning(r));
    let visits = r.stats.visits.as_ref().and_then(|v| {
        let rate = r
            .load
            .rate()
            .map(|x| crate::verdict::request_rate(r.stats, x));
        never_started_warning(v, &r.stats.counters, rate, counted)
    });
    let deflate = deflate_warning(&r.stats.counters);
    let Some(rate) = r.load.rate() else {
        return [limit, lost, events, streams, visits, deflate]
            .into_iter()
            .flatten()
            .collect();
    };
    let rate = crate::verdict::request_rate(r.stats, rate);
    [
        limit,
        never_sent_warning(r.stats, rate, counted),
        lost,
        send_lag_warning(r, rate),
        events,
        r.stats.events.as_ref().and_then(before_due_warning),
        streams,
        visits,
        deflate,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A flow's visits that never started: no connection was free for their
/// first step before the run ended, for the cause the connections showed
/// at the end (down, or busy) when they showed one.
fn never_started_warning(
    v: &crate::stats::VisitStats,
    c: &Counters,
    rate: Option<f64>,
    counted: Counted,
) -> Option<String> {
    if v.never_started == 0 {
        return None;
    }
    let seen = rate
        .map(|r| end_causes(c, r, counted))
        .filter(|causes| !causes.is_empty());
    let why = match seen {
        Some(causes) => format!("at the end {}", causes.join("; ")),
        None => "a slow or stalled server, or too few connections; raise -c, or pass                  --max-connections to open more as needed"
            .to_string(),
    };
    Some(format!(
        "{} of {} due visits never started: no connection was free for their first step \
         before the run ended; {why}",
        v.never_started,
        v.due()
    ))
}

/// The server's connection limit, when the pool ran into it: connections
/// beyond those it accepted were turned away or left unanswered, and the
/// pool stopped growing there.
pub(super) fn connection_limit_warning(c: &Counters, counted: Counted) -> Option<String> {
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
            "closed unanswered ({lost} {}{} lost)",
            counted.one(),
            plural(lost)
        ));
    }
    if c.timeout_unanswered > 0 {
        let n = c.timeout_unanswered;
        beyond.push(format!(
            "left unanswered ({n} {}{} timed out)",
            counted.one(),
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
pub(super) fn no_events_warning(e: &EventStats) -> Option<String> {
    if e.kind == EventKind::WebSocket && e.count == 0 && e.responses == 0 {
        return Some(
            "no message came on any subscription: check that the URL is the server's push \
             endpoint, and that --data is the subscribe message it waits for, if it waits for \
             one"
            .to_string(),
        );
    }
    if e.kind == EventKind::WebSocket && e.without_events > 0 {
        return Some(format!(
            "{} of {} subscriptions the server closed normally carried no message: check \
             that the URL is the server's push endpoint (and --data its subscribe message), \
             or use --ws echo for a server that answers",
            e.without_events, e.responses
        ));
    }
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

/// `--ws push` under `-R`: subscriptions whose server pushed before their
/// turn, from the upgrade on. Their first messages came before they were
/// due, so their first-message time reads 0: the figure says nothing of
/// how soon the server sends once asked.
fn before_due_warning(e: &EventStats) -> Option<String> {
    let early = e.before_due;
    if e.kind != EventKind::WebSocket || early == 0 {
        return None;
    }
    Some(format!(
        "{early} subscriptions found the server's messages already there before they were due: \
         it pushes from the upgrade on, not when a subscription's turn comes (and its \
         subscribe message, if any, goes), so their first messages count as 0 ms; run without \
         -R (the closed loop) to time each from its upgrade"
    ))
}

/// WebSocket: messages that came with nothing awaiting them. They are
/// in no figure, so they are named, with what the shape makes of them.
fn unasked_warning(r: &TextReport) -> Option<String> {
    let unasked = r.stats.counters.ws_unasked;
    // A push's are those held for subscriptions the run ended before
    // they opened: its server sends unasked by design.
    if unasked == 0 || r.counted() == Counted::Subscriptions {
        return None;
    }
    let advice = match r.ws.and_then(|w| w.matching.as_deref()) {
        Some(field) => format!(
            "with --ws-match {field}, an answer answers only a message awaiting whose {field} \
             holds the same value (a number and a string differ: 7 is not \"7\")"
        ),
        None => "to tell answers by a field, use --ws-match, and for a server that only \
                 pushes, --ws push"
            .to_string(),
    };
    Some(format!(
        "{unasked} messages came that answer no message of metron's awaiting one, and no \
         figure has them: the server sends unasked (it pushes, greets or relays others' \
         messages), or answered after --timeout; {advice}"
    ))
}

/// `--ws-deflate`: connections whose server did not agree to
/// permessage-deflate sent and read their messages uncompressed.
fn deflate_warning(c: &Counters) -> Option<String> {
    let declined = c.ws_deflate_declined;
    if declined == 0 {
        return None;
    }
    Some(format!(
        "the server did not agree to permessage-deflate on {declined} of {} connections, and \
         their messages went uncompressed: enable compression on the server (or the proxy in \
         front of it), or drop --ws-deflate",
        declined + c.ws_deflate_agreed
    ))
}

/// `--llm`: answers that were not completion streams, or streams without
/// a token. The token figures leave them out, so they are named.
pub(super) fn no_tokens_warning(l: &crate::stats::LlmStats) -> Option<String> {
    if l.error_status > 0 {
        return Some(format!(
            "{} of {} answers had an error status, and the token figures leave them out; \
             the status codes line has them (a 404 or 405: check the URL's path, e.g. \
             /v1/chat/completions; a 400: check --model and the prompts)",
            l.error_status,
            l.error_status + l.responses
        ));
    }
    if l.without_tokens == 0 {
        return None;
    }
    Some(format!(
        "{} of {} streams carried no token: they were not completion streams, or ended \
         before their first token, and TTFT leaves them out; check that the URL serves an \
         OpenAI-compatible completions API",
        l.without_tokens, l.responses
    ))
}

/// `--llm`: streams that went wrong after their 2xx status, which the
/// status codes and the error counts do not show.
pub(super) fn broken_streams_warning(l: &crate::stats::LlmStats) -> Option<String> {
    let found = [
        (l.stream_errors, "reported an error in the stream"),
        (l.unreadable, "chunks were not JSON"),
        (l.without_done, "ended without [DONE]"),
    ];
    let said: Vec<String> = found
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    if said.is_empty() {
        return None;
    }
    Some(format!(
        "streams went wrong after their 2xx status: of {}, {}; the status codes and error \
         counts do not show these, and --goodput counts no stream with an error or an unreadable chunk as \
         good; the server's own log says why",
        l.responses,
        said.join(", ")
    ))
}

/// Requests due and never sent, with what kept them back: a start after
/// `--start-at`, and the state of the connections as the run ended.
pub(super) fn never_sent_warning(stats: &RunStats, rate: f64, counted: Counted) -> Option<String> {
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
        causes.push(format!(
            "at the end {}",
            end_causes(c, rate, counted).join("; ")
        ));
    }
    Some(format!(
        "{} of {} due {} were never sent: {}",
        c.never_sent,
        c.due,
        counted.many(),
        causes.join("; ")
    ))
}

/// What kept due requests back as the run ended: the connections'
/// state and threads stopped by their script.
pub(super) fn end_causes(c: &Counters, rate: f64, counted: Counted) -> Vec<String> {
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
             {low} is too low for {} {}/s)",
            a.busy,
            plural(a.busy),
            format_rate(rate),
            counted.many()
        ));
    }
    if a.down > 0 {
        causes.push(format!(
            "{} connection{} {} down ({})",
            a.down,
            plural(a.down),
            if a.down == 1 { "was" } else { "were" },
            down_causes(a, counted)
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
/// requests alike, since the warnings count either; over WebSocket
/// (`counted`) some causes have another likely source.
pub(super) fn hint(said: &str, counted: Counted) -> Option<&'static str> {
    Some(match said {
        "closed before answering" if counted.websocket() => {
            "the server closed new connections unanswered, as one does past its connection \
             limit (lower -c, or raise the limit) or when it fails every request; or a proxy \
             closed them idle: --ws-ping T keeps a quiet connection alive through a proxy's \
             idle timeout"
        }
        "reset" | "closed early" if counted.websocket() => {
            "the server (or a proxy in between) ended connections with a message \
             unanswered: a restart, its limits, or a proxy's idle timeout, which --ws-ping T \
             keeps a quiet connection clear of; closes that named a code are under Closes by \
             the server"
        }
        "timeout" if counted == Counted::Subscriptions => {
            "the subscription lasted longer than --timeout, which bounds each subscription: \
             raise --timeout to let subscriptions run longer"
        }
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
             request unanswered (its keep-alive or connection limits, or a restart; over \
             WebSocket, its closes are named under Closes by the server)"
        }
        "head too large" => "raise --max-head",
        "body too large" => {
            "a script reads each body whole, at most 16 MiB (its response(), a flow's steps): \
             ask for smaller answers, or run without the script's reading"
        }
        "malformed" if counted.websocket() => {
            "the server's frames (or its answer to the upgrade) are not valid WebSocket \
             (RFC 6455): is a WebSocket server, not a plain HTTP one, at that path?"
        }
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
pub(super) fn with_hints(
    named: impl IntoIterator<Item = (String, u64)>,
    counted: Counted,
) -> String {
    let named: Vec<String> = named
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(said, n)| match hint(&said, counted) {
            Some(h) => format!("{said} {n}: {h}"),
            None => format!("{said} {n}"),
        })
        .collect();
    named.join("; ")
}

/// Why the connections down at the end were down, each cause with what
/// to check: how their last connect failed, or what ended them open.
pub(super) fn down_causes(a: &AtEnd, counted: Counted) -> String {
    let connect = a.down_connect.named();
    let read = a.down_read.named();
    let named = connect
        .iter()
        .map(|(what, n)| (format!("connect {what}"), *n))
        .chain(read.iter().map(|(what, n)| (what.to_string(), *n)));
    match with_hints(named, counted) {
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
pub(super) fn lost_warning(c: &Counters, counted: Counted) -> Option<String> {
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
        "{lost} of {} due {} were lost: {}{reopened}",
        c.due,
        counted.many(),
        with_hints(named, counted)
    ))
}

/// Requests that left late. Two causes look alike in the send lag and need
/// opposite fixes, so the warning tells them apart: requests that waited
/// for a busy connection (a slow server, or too few connections), or a
/// generator that could not keep up although connections were free.
pub(super) fn send_lag_warning(r: &TextReport, rate: f64) -> Option<String> {
    let p99 = summary::value_at_percentile(&r.stats.send_lag, 99.0) as f64;
    let allowed = lag_allowance_us(r.threads, rate, r.lag_allowance);
    if p99 <= allowed {
        return None;
    }
    let c = &r.stats.counters;
    let requests = r.counted().many();
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
             connections the server closed ({} times for {sent} {requests} sent), so it sent \
             late; keep the server from closing them ({}) rather than add threads",
            c.reconnects,
            if c.errors.lost_requests() > 0 {
                format!("see the lost {requests}' causes")
            } else {
                "its connection and keep-alive limits".to_string()
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
        "{lag}: {} of the {sent} {requests} sent ({:.1}%)",
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
pub(super) fn pool_size(r: &TextReport) -> u64 {
    let pool = &r.stats.counters.connections;
    let peak = if pool.peak > 0 {
        pool.peak
    } else {
        r.connections as u64
    };
    pool.server_accepted.map_or(peak, |a| a.min(peak))
}

/// The share of the rate asked that a run achieving it counts as having
/// kept the pace.
const KEPT_PACE: f64 = 0.98;

/// What the rate needs, by Little's law from what the run saw: a pool
/// busy all along that carried `achieved` requests a second on `n`
/// connections needs `n * rate / achieved` for the rate asked (the time
/// per response, and so the streams each connection carries, as seen).
pub(super) fn pool_needs(r: &TextReport, rate: f64) -> String {
    let requests = r.counted().many();
    let achieved = r.stats.requests_per_sec();
    let n = pool_size(r) as f64;
    let per_response = format_time_us(r.stats.uncorrected.mean());
    let needed = (n * rate / achieved.max(f64::MIN_POSITIVE)).ceil();
    if achieved >= rate * KEPT_PACE {
        // The pool kept the pace on the whole, so it was busy only in
        // bursts, when responses slowed: the law above would name one
        // connection more than it has, which no steady state needed. The
        // same law gives the requests in flight on average (streams, where
        // a connection carries several).
        let in_flight = rate * r.stats.uncorrected.mean() / 1e6;
        return format!(
            "The pool kept the pace on the whole (at {} {requests}/s and {per_response} per \
             response, about {in_flight:.0} {requests} were in flight on average, on {n:.0} \
             connections): the waits came in bursts, when responses slowed; if the server was \
             not expected to stall, raise -c for headroom, or pass --max-connections to open \
             more as needed",
            format_rate(rate)
        );
    }
    if !needed.is_finite() || needed <= n {
        return "If the server was not expected to be slow, raise -c".to_string();
    }
    let pool = &r.stats.counters.connections;
    let at = format!(
        "At {} {requests}/s and {per_response} per response, about {needed:.0} connections are \
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
pub(super) fn down_line(c: &Counters) -> String {
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
pub(super) fn reopen_causes(c: &Counters) -> String {
    match c.reopens.to_string() {
        named if named.is_empty() => String::new(),
        named => format!(" ({named})"),
    }
}
