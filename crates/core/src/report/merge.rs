//! `metron merge` of JSON documents: several instances' runs (the shards
//! of one schedule, usually) added up into one document, exactly.
//!
//! Counters add; histograms add bucket by bucket, so the merged
//! percentiles are those of every request of every instance, never an
//! average of percentiles. The time series add interval by interval,
//! aligned on the wall clock, their percentiles again from added
//! histograms. Rates are taken over the common window: the schedule's
//! window, which instances started together by `--start-at` share. Each
//! instance keeps a row of its own ([`Instance`]), so one bad node shows.
//!
//! What cannot be added honestly (different targets, rates, durations,
//! windows that do not line up, a shard missing or sent twice) is not
//! refused, since the user may mean it, but each is named in a warning.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::json::{
    decode, encode, summarize, Document, Endpoint, EventsSummary, Instance, LatencySummaries,
    LlmSummary, PhaseSummary, Point, RunConfig, Series, VisitsSummary,
};
use crate::stats::{
    new_histogram, summary, EndpointStats, EventStats, LlmStats, Timings, VisitStats,
};

/// A merged document, and what the user should know about its parts.
pub struct Merged {
    pub doc: Document,
    pub warnings: Vec<String>,
}

/// Adds up `docs`, each named by the file it came from. The error is one
/// line naming the document at fault.
pub fn documents(docs: &[(String, Document)]) -> Result<Merged, String> {
    let Some((first_name, first)) = docs.first() else {
        return Err("nothing to merge".into());
    };
    let warnings = differences(docs);
    let hist = |name: &str, text: &str| {
        decode(text).map_err(|e| format!("{name}: {e}; the document is damaged"))
    };
    let mut total = Totals::default();
    let mut doc = first.clone();
    let (mut completed, mut bytes) = (0u64, 0u64);
    doc.counters = Default::default();
    doc.cpu_s = 0.0;
    doc.threads.clear();
    doc.interrupted = false;
    doc.interruption = None;
    doc.slo = None;
    doc.start_offset_s = None;
    doc.instances.clear();
    // By name: a flow's steps and a requests file's endpoints are named
    // alike in every document, whatever order each met them in.
    let mut endpoints: BTreeMap<String, EndpointStats> = BTreeMap::new();
    let mut visits: Option<VisitStats> = None;
    let mut phases: Vec<(PhaseSummary, Histogram<u64>, Histogram<u64>)> = Vec::new();
    let mut events: Option<EventStats> = None;
    let mut llm: Option<LlmStats> = None;
    for (name, d) in docs {
        if d.llm.is_some() != first.llm.is_some() {
            let (tokens, plain) = match d.llm.is_some() {
                true => (name, first_name),
                false => (first_name, name),
            };
            return Err(format!(
                "{tokens} is of an --llm run, counted in tokens, and {plain} is not; merge \
                 only runs of one kind"
            ));
        }
        if d.visits.is_some() != first.visits.is_some() {
            let (flow, plain) = match d.visits.is_some() {
                true => (name, first_name),
                false => (first_name, name),
            };
            return Err(format!(
                "{flow} is of a flow run, counted in visits, and {plain} is not; merge \
                 only runs of one kind"
            ));
        }
        if let Some(l) = &d.llm {
            let l = l
                .stats()
                .map_err(|e| format!("{name}: {e}; the document is damaged"))?;
            let first = llm.get_or_insert_with(|| LlmStats::new(l.goodput));
            if first.goodput != l.goodput {
                return Err(format!(
                    "{name} judged goodput by other --goodput bounds than the documents before it; \
                     merge only runs with the same bounds"
                ));
            }
            first.add(&l);
        }
        if let Some(e) = &d.events {
            let e = e
                .stats()
                .map_err(|e| format!("{name}: {e}; the document is damaged"))?;
            events.get_or_insert_with(Default::default).add(&e);
        }
        let h = &d.histograms;
        total.add(&Totals {
            corrected: hist(name, &h.corrected)?,
            uncorrected: hist(name, &h.uncorrected)?,
            send_lag: hist(name, &h.send_lag)?,
            req_per_sec: hist(name, &h.req_per_sec)?,
            unfinished: match &h.unfinished {
                Some(u) => hist(name, u)?,
                None => new_histogram(),
            },
            timings: h
                .timings()
                .map_err(|e| format!("{name}: {e}; the document is damaged"))?,
        });
        doc.counters.add(&d.counters);
        completed += d.counters.completed;
        bytes += d.counters.bytes;
        doc.cpu_s += d.cpu_s;
        doc.threads.extend(d.threads.iter().cloned());
        doc.interrupted |= d.interrupted;
        doc.interruption = doc.interruption.clone().or(d.interruption.clone());
        doc.window_s = doc.window_s.max(d.window_s);
        doc.window_start_ms = match (doc.window_start_ms, d.window_start_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let damaged = |e: std::io::Error| format!("{name}: {e}; the document is damaged");
        for e in &d.endpoints {
            let e = e.stats().map_err(damaged)?;
            let into = endpoints
                .entry(e.name.clone())
                .or_insert_with(|| EndpointStats {
                    name: e.name.clone(),
                    ..Default::default()
                });
            into.add(&e);
        }
        if let Some(v) = &d.visits {
            let v = v.stats().map_err(damaged)?;
            visits.get_or_insert_with(Default::default).add(&v);
        }
        for (i, p) in d.phases.iter().enumerate() {
            let (latency, unfinished) = (hist(name, &p.histogram)?, hist(name, &p.unfinished)?);
            match phases.get_mut(i) {
                Some((sum, l, u)) => {
                    sum.due += p.due;
                    sum.completed += p.completed;
                    sum.errors += p.errors;
                    add(l, &latency);
                    add(u, &unfinished);
                }
                None => phases.push((p.clone(), latency, unfinished)),
            }
        }
        doc.instances.push(instance(name, d));
    }
    let c = &mut doc.config;
    c.threads = docs.iter().map(|(_, d)| d.config.threads).sum();
    c.connections = docs.iter().map(|(_, d)| d.config.connections).sum();
    c.rate = docs.iter().map(|(_, d)| d.config.rate).sum::<Option<f64>>();
    c.shard = None;
    doc.rate_window_s = Some(
        docs.iter()
            .map(|(_, d)| d.rate_window_s.unwrap_or(d.window_s))
            .fold(0.0, f64::max),
    );
    let over = doc
        .rate_window_s
        .unwrap_or(doc.window_s)
        .max(f64::MIN_POSITIVE);
    doc.requests_per_sec = completed as f64 / over;
    doc.bytes_per_sec = bytes as f64 / over;
    let mut with_unfinished = total.corrected.clone();
    add(&mut with_unfinished, &total.unfinished);
    doc.latency = LatencySummaries {
        corrected: summarize(&total.corrected),
        uncorrected: summarize(&total.uncorrected),
        send_lag: summarize(&total.send_lag),
        with_unfinished: Some(summarize(&with_unfinished)),
        ttfb: None,
        connect: None,
        tls_handshake: None,
    }
    .with_timings(&total.timings);
    doc.histograms.corrected = encode(&total.corrected);
    doc.histograms.uncorrected = encode(&total.uncorrected);
    doc.histograms.send_lag = encode(&total.send_lag);
    doc.histograms.req_per_sec = encode(&total.req_per_sec);
    doc.histograms.unfinished = Some(encode(&total.unfinished));
    doc.histograms = doc.histograms.with_timings(&total.timings);
    doc.events = events.as_ref().map(EventsSummary::of);
    let window = std::time::Duration::from_secs_f64(over);
    doc.llm = llm.as_ref().map(|l| LlmSummary::of(l, window));
    doc.endpoints = endpoints.values().map(Endpoint::of).collect();
    if let Some(v) = visits.as_mut() {
        v.fold_reasons();
    }
    doc.visits = visits.as_ref().map(VisitsSummary::of);
    doc.phases = phases
        .into_iter()
        .map(|(mut p, latency, unfinished)| {
            let mut both = latency.clone();
            add(&mut both, &unfinished);
            p.latency = summarize(&both);
            p.histogram = encode(&latency);
            p.unfinished = encode(&unfinished);
            p
        })
        .collect();
    let mut warnings = warnings;
    doc.series = series(docs, &mut warnings).map_err(|e| format!("{first_name}: {e}"))?;
    Ok(Merged { doc, warnings })
}

/// The histograms every document carries, added.
struct Totals {
    corrected: Histogram<u64>,
    uncorrected: Histogram<u64>,
    send_lag: Histogram<u64>,
    req_per_sec: Histogram<u64>,
    unfinished: Histogram<u64>,
    timings: Timings,
}

impl Default for Totals {
    fn default() -> Totals {
        Totals {
            corrected: new_histogram(),
            uncorrected: new_histogram(),
            send_lag: new_histogram(),
            req_per_sec: new_histogram(),
            unfinished: new_histogram(),
            timings: Timings::default(),
        }
    }
}

impl Totals {
    fn add(&mut self, other: &Totals) {
        add(&mut self.corrected, &other.corrected);
        add(&mut self.uncorrected, &other.uncorrected);
        add(&mut self.send_lag, &other.send_lag);
        add(&mut self.req_per_sec, &other.req_per_sec);
        add(&mut self.unfinished, &other.unfinished);
        self.timings.add(&other.timings);
    }
}

/// Decoded histograms all have metron's bounds, so adding cannot fail.
fn add(to: &mut Histogram<u64>, from: &Histogram<u64>) {
    to.add(from).expect("histograms of the same bounds");
}

/// One document's row of the per-instance table.
fn instance(name: &str, d: &Document) -> Instance {
    let c = &d.counters;
    Instance {
        name: name.to_string(),
        shard: d.config.shard,
        rate: d.config.rate,
        requests_per_sec: d.requests_per_sec,
        completed: c.completed,
        errors: c.errors.lost_requests() + c.errors.status,
        never_sent: c.never_sent,
        send_lag_p99_us: d.latency.send_lag.at(99.0),
        start_offset_s: d.start_offset_s,
        window_start_ms: d.window_start_ms,
        window_s: d.window_s,
    }
}

/// What differs between the documents in ways that make their sum mean
/// something else than one run: each a sentence.
fn differences(docs: &[(String, Document)]) -> Vec<String> {
    let mut out = Vec::new();
    let (name0, d0) = &docs[0];
    let whole = |d: &Document| {
        d.config
            .rate
            .map(|r| r * d.config.shard.map_or(1, |s| s.count) as f64)
    };
    for (name, d) in &docs[1..] {
        let (a, b) = (&d0.config, &d.config);
        if a.url != b.url {
            out.push(format!(
                "{name} loaded {} but {name0} loaded {}: the merged figures mix two targets",
                b.url, a.url
            ));
        }
        if whole(d) != whole(d0) {
            let show =
                |r: Option<f64>| r.map_or("no rate (closed loop)".into(), |r| format!("-R {r}"));
            out.push(format!(
                "{name} was run at {} in total but {name0} at {}: they did not share one schedule",
                show(whole(d)),
                show(whole(d0))
            ));
        }
        if a.duration_s != b.duration_s || a.warmup_s != b.warmup_s {
            out.push(format!(
                "{name} ran for {}s (warm-up {}s) but {name0} for {}s (warm-up {}s)",
                b.duration_s, b.warmup_s, a.duration_s, a.warmup_s
            ));
        }
        let shape = |c: &RunConfig| c.ws.as_ref().map(|w| w.shape.clone());
        if shape(a) != shape(b) {
            let show = |s: Option<String>| s.map_or("HTTP".into(), |s| format!("a WebSocket {s}"));
            out.push(format!(
                "{name} was {} but {name0} {}: the merged figures mix answers and what was \
                 pushed",
                show(shape(b)),
                show(shape(a))
            ));
        } else if let (Some(x), Some(y)) = (&a.ws, &b.ws) {
            let (was, but) = (x.flags(), y.flags());
            if was != but {
                out.push(format!(
                    "{name}'s WebSocket {} ran with {but} but {name0}'s with {was}: the merged \
                     figures mix two conversations",
                    y.shape
                ));
            }
        }
        if let (Some(x), Some(y)) = (d0.window_start_ms, d.window_start_ms) {
            let apart = x.abs_diff(y);
            if apart > 1000 {
                out.push(format!(
                    "{name}'s window began {:.1}s apart from {name0}'s: without a common \
                     --start-at the instances did not run one schedule together, and the \
                     merged rates count them as if they had",
                    apart as f64 / 1000.0
                ));
            }
        }
    }
    let shards: Vec<_> = docs.iter().map(|(n, d)| (n, d.config.shard)).collect();
    if shards.iter().any(|(_, s)| s.is_some()) {
        let counts: Vec<u64> = shards
            .iter()
            .map(|(_, s)| s.map_or(1, |s| s.count))
            .collect();
        if counts.iter().any(|&n| n != counts[0]) {
            out.push("the documents split their schedules into different numbers of shards".into());
        } else {
            let n = counts[0];
            let mut seen = vec![Vec::new(); n as usize];
            for (name, s) in &shards {
                let i = s.map_or(0, |s| s.index) as usize;
                seen[i].push(name.as_str());
            }
            for (i, names) in seen.iter().enumerate() {
                match names.len() {
                    0 => out.push(format!(
                        "shard {i} of {n} is missing: the merged run sent part of the schedule"
                    )),
                    1 => {}
                    _ => out.push(format!(
                        "shard {i} of {n} is in {}: its requests are counted more than once",
                        names.join(" and ")
                    )),
                }
            }
        }
    } else if docs.len() > 1 && docs.iter().any(|(_, d)| d.config.rate.is_some()) {
        out.push(
            "none of the documents is a --shard: each instance ran a whole schedule of its own, \
             so together they were not paced as one"
                .into(),
        );
    }
    out
}

/// The time series, added interval by interval: each document's points
/// placed on the wall clock by its window's start.
fn series(docs: &[(String, Document)], warnings: &mut Vec<String>) -> Result<Series, String> {
    let interval_s = docs[0].1.series.interval_s;
    if docs.iter().any(|(_, d)| d.series.interval_s != interval_s) {
        warnings.push(
            "the documents' time series have different intervals (--interval): the merged \
             document has none"
                .into(),
        );
        return Ok(Series {
            interval_s,
            points: Vec::new(),
        });
    }
    let origin = docs.iter().filter_map(|(_, d)| d.window_start_ms).min();
    let step_ms = (interval_s * 1000.0).max(1.0);
    let mut slots: BTreeMap<u64, (Point, Histogram<u64>, Histogram<u64>)> = BTreeMap::new();
    let mut exact = true;
    for (name, d) in docs {
        let shift = match (origin, d.window_start_ms) {
            (Some(o), Some(s)) => ((s - o) as f64 / step_ms).round() as u64,
            _ => 0,
        };
        for (i, p) in d.series.points.iter().enumerate() {
            let slot = slots.entry(i as u64 + shift).or_insert_with(|| {
                let t = (i as u64 + shift) as f64 * interval_s;
                (Point::empty(t), new_histogram(), new_histogram())
            });
            let (sum, latency, unfinished) = slot;
            sum.completed += p.completed;
            sum.errors += p.errors;
            sum.unfinished += p.unfinished;
            // Counts add up; the uncorrected latency, send lag, events and
            // tokens' times carry no histograms per interval, so the merged
            // points leave them out.
            sum.length_s = match (sum.length_s, p.length_s) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            if let Some(k) = &p.error_kinds {
                sum.error_kinds.get_or_insert_with(Default::default).add(k);
            }
            if let Some(n) = p.intended {
                *sum.intended.get_or_insert(0) += n;
            }
            if let Some(n) = p.output_tokens {
                *sum.output_tokens.get_or_insert(0) += n;
            }
            match (&p.histogram, &p.unfinished_histogram) {
                (Some(l), Some(u)) => {
                    add(latency, &decode(l).map_err(|e| format!("{name}: {e}"))?);
                    add(unfinished, &decode(u).map_err(|e| format!("{name}: {e}"))?);
                }
                _ => {
                    exact = false;
                    // None (not measured) below every value.
                    sum.p50 = sum.p50.max(p.p50);
                    sum.p90 = sum.p90.max(p.p90);
                    sum.p99 = sum.p99.max(p.p99);
                    sum.p999 = sum.p999.max(p.p999);
                    sum.p9999 = sum.p9999.max(p.p9999);
                    sum.max = sum.max.max(p.max);
                    sum.p99_with_unfinished = sum.p99_with_unfinished.max(p.p99_with_unfinished);
                }
            }
        }
    }
    if !exact {
        warnings.push(
            "a document carries no histograms per interval (an older metron wrote it): the \
             merged time series shows the highest of the instances' percentiles"
                .into(),
        );
    }
    let points = slots
        .into_values()
        .map(|(mut p, latency, unfinished)| {
            if exact {
                let mut both = latency.clone();
                add(&mut both, &unfinished);
                let at = |q| summary::percentile(&latency, q);
                (p.p50, p.p90, p.p99, p.p999, p.p9999) =
                    (at(50.0), at(90.0), at(99.0), at(99.9), at(99.99));
                p.max = summary::maximum(&latency);
                p.p99_with_unfinished = summary::percentile(&both, 99.0);
                p.histogram = Some(encode(&latency));
                p.unfinished_histogram = Some(encode(&unfinished));
            }
            p
        })
        .collect();
    Ok(Series { interval_s, points })
}
