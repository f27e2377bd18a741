//! The run in plain values, so that the reports need no configuration:
//! its description in the JSON document (and the pages and dashboard
//! drawn from it), the banner's words for a profile and a replay, the
//! phases' labels and places, and what a verdict needs besides the
//! statistics.

use std::time::Duration;

use crate::engine::{Outcome, Replay, Setup};
use crate::http::Spoken;
use crate::replay::Order;
use crate::report::json::{
    Document, LlmConfig, ProfilePhase, RequestsConfig, RunConfig, ShardConfig, WsConfig,
};
use crate::schedule::{Load, Profile, Spacing};
use crate::stats::RunStats;
use crate::units::format_run_duration;
use crate::verdict::RunFacts;

/// The run as the JSON document (and the HTML report drawn from it)
/// describes it.
pub fn describe(run: &Setup) -> RunConfig {
    RunConfig {
        url: run.url.clone(),
        threads: run.threads,
        connections: run.connections(),
        duration_s: run.duration.as_secs_f64(),
        warmup_s: run.warmup.as_secs_f64(),
        timeout_s: run.timeout.as_secs_f64(),
        rate: run.load.rate(),
        script: run.script.as_ref().map(|p| p.display().to_string()),
        headers: run
            .headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect(),
        requests: run.replay.as_ref().map(requests),
        llm: run.llm.as_ref().map(|l| LlmConfig {
            api: l.api.name().to_string(),
            path: l.path.clone(),
            prompts: l.source.clone(),
            model: l.options.model.clone(),
            max_tokens: l.options.max_tokens,
            ignore_eos: l.options.ignore_eos,
            usage: l.options.usage,
            described: llm_asks(l),
        }),
        offered: run.protocols.offer.clone(),
        max_streams: run
            .protocols
            .offers_streams()
            .then_some(run.protocols.max_streams),
        grpc: run.calls.as_ref().map(|c| c.method.clone()),
        zero_rtt: run.protocols.zero_rtt,
        arrival: run.load.spacing().map(Spacing::arrival),
        arrival_seed: run.load.spacing().and_then(Spacing::seed),
        rate_profile: run
            .load
            .profile()
            .filter(|p| !p.is_constant())
            .map(profile_phases)
            .unwrap_or_default(),
        shard: Some(run.load.shard())
            .filter(|s| !s.is_whole())
            .map(|s| ShardConfig {
                index: s.index(),
                count: s.count(),
            }),
        start_at_s: run.start_at.map(|at| {
            at.duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64())
        }),
        ws: ws_config(run),
    }
}

/// A WebSocket run's conversation, as the document records it.
pub fn ws_config(run: &Setup) -> Option<WsConfig> {
    run.websocket.as_deref().map(|c| WsConfig {
        shape: c.shape.word().to_string(),
        binary: c.binary,
        deflate: c.deflate,
        matching: c.matching.as_deref().map(crate::http::ws::dotted),
        ping_s: c.ping.map(|p| p.as_secs_f64()),
    })
}

/// `--requests` as the document records it.
fn requests(r: &Replay) -> RequestsConfig {
    RequestsConfig {
        file: r.file.display().to_string(),
        count: r.set.len(),
        hosts: r.set.hosts().len(),
        order: format!("{:?}", r.order).to_lowercase(),
        seed: r.seed,
        described: replay_order(r),
    }
}

/// A rate profile's phases as the document records them.
fn profile_phases(p: &Profile) -> Vec<ProfilePhase> {
    p.phases()
        .iter()
        .zip(p.starts())
        .map(|(ph, &start)| ProfilePhase {
            label: ph.label.clone(),
            start_s: start as f64 / 1e9,
            length_s: ph.length as f64 / 1e9,
            from: ph.from,
            to: ph.to,
        })
        .collect()
}

/// What a verdict needs to know of a run besides its statistics.
pub fn run_facts<'a>(
    run: &'a Setup,
    outcome: &'a Outcome,
    lag_allowance: Option<Duration>,
) -> RunFacts<'a> {
    RunFacts {
        stats: &outcome.stats,
        load: &run.load,
        threads: run.threads,
        // Connections opened on demand count: the pool could carry that much.
        connections: run.max_connections(),
        pool_flag: if run.growth.is_some() {
            "--max-connections"
        } else {
            "-c"
        },
        per_connection: if outcome.protocol.multiplexes() {
            run.protocols.max_streams
        } else {
            1
        },
        fastest_us: outcome.stats.fastest_us,
        lag_allowance,
    }
}

/// What a verdict needs to know of a saved run, from its document and
/// the statistics read back from it.
pub fn document_facts<'a>(doc: &'a Document, stats: &'a RunStats, load: &'a Load) -> RunFacts<'a> {
    let multiplexes = doc.protocol.as_ref().is_some_and(Spoken::multiplexes);
    RunFacts {
        stats,
        load,
        threads: doc.config.threads,
        connections: doc.config.connections,
        pool_flag: "-c",
        per_connection: match (multiplexes, doc.config.max_streams) {
            (true, Some(m)) => m,
            _ => 1,
        },
        fastest_us: (!stats.uncorrected.is_empty()).then(|| stats.uncorrected.min()),
        // Not kept in the document: the default allowance.
        lag_allowance: None,
    }
}

/// A rate profile in the banner's words: its phases, or how many there
/// are when a file gives more than a line holds.
pub fn describe_profile(p: &Profile) -> String {
    let phases = p.phases();
    let length = format_run_duration(Duration::from_nanos(p.length().unwrap_or(0)));
    if phases.len() <= 6 {
        let labels: Vec<&str> = phases.iter().map(|ph| ph.label.as_str()).collect();
        format!("{} ({length})", labels.join(","))
    } else {
        format!("of {} phases over {length}", phases.len())
    }
}

/// Gives the phases of a rate profile their labels and their place in the
/// measured window (from its start), once the window's length is known.
pub fn name_phases(stats: &mut RunStats, run: &Setup) {
    let Some(profile) = run.load.profile() else {
        return;
    };
    let (from, to) = (run.warmup, run.warmup + stats.window);
    for ((p, phase), &start) in stats
        .phases
        .iter_mut()
        .zip(profile.phases())
        .zip(profile.starts())
    {
        let start = Duration::from_nanos(start);
        let end = start.saturating_add(Duration::from_nanos(phase.length));
        let (lo, hi) = (start.clamp(from, to), end.clamp(from, to));
        p.label.clone_from(&phase.label);
        p.start = lo - from;
        p.length = hi - lo;
    }
}

/// How the requests file is replayed, as the banner and the JSON document
/// say it.
/// What `--llm` asks of every request besides its prompt.
pub fn llm_asks(l: &crate::llm::Llm) -> String {
    let o = &l.options;
    let mut asks = vec!["streamed".to_string()];
    if let Some(m) = &o.model {
        asks.push(format!("model {m}"));
    }
    asks.push(match o.max_tokens {
        Some(n) => format!("max_tokens {n}"),
        None => "max_tokens as the prompts or the server say".to_string(),
    });
    if o.ignore_eos {
        asks.push("ignore_eos".into());
    }
    asks.push(match o.usage {
        true => "usage asked".into(),
        false => "no usage asked (--no-usage)".into(),
    });
    asks.join(", ")
}

pub fn replay_order(r: &Replay) -> String {
    match r.order {
        Order::Sequential => "in file order".to_string(),
        Order::Random => format!("in random order (--seed {})", r.seed),
    }
}
