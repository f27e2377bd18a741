//! The text around a run, as wrk prints it and with what metron adds.
//!
//! Before the run: the banner, what the requests file, the arrivals and
//! the shard are, and the header of the per-thread rows. They come once
//! the pre-flight has reached the servers, so that a run that cannot
//! start prints its error alone, and the banner tells the streams a
//! server's limit left. After it: the report, a late start, the verdict,
//! and the raw outputs of the wrk fork.

use std::io::{self, Write};

use super::describe;
use super::error::Error;
use crate::cli::config::Config;
use crate::engine::{Host, Outcome};
use crate::report::{series, text, TextReport};
use crate::verdict::SloReport;

/// The lines before the run: the banner, what the requests file, the
/// arrivals and the shard are, and the header of the per-thread rows.
/// `visits`: the schedule is of a flow's visits.
pub fn write_banner(
    mut text: &mut dyn Write,
    cfg: &Config,
    hosts: &[Host],
    visits: bool,
) -> Result<(), Error> {
    let run = &cfg.run;
    text::write_banner(
        &mut text,
        &run.url,
        run.duration,
        run.threads,
        run.connections(),
        run.protocols.banner(server_capped(hosts)).as_deref(),
    )?;
    if let Some(c) = &run.calls {
        text::write_call_line(&mut text, &c.method, c.streaming)?;
    }
    if let Some(g) = run.growth {
        text::write_growth_line(&mut text, g.max, g.from_open_files)?;
    }
    if let (Some(l), Some(r)) = (&run.llm, &run.replay) {
        let order = describe::replay_order(r).replace("file order", "order");
        text::write_llm_line(
            &mut text,
            l.api.name(),
            &l.path,
            r.set.len(),
            &l.source,
            &order,
            &describe::llm_asks(l),
        )?;
    } else if let Some(r) = &run.replay {
        let file = r.file.display().to_string();
        let entries = (r.set.len(), run.websocket.is_some());
        let order = describe::replay_order(r);
        text::write_replay_line(&mut text, &file, entries, r.set.hosts().len(), &order)?;
    }
    let profile = run.load.profile().filter(|p| !p.is_constant());
    text::write_arrival_line(
        &mut text,
        profile.map(describe::describe_profile).as_deref(),
        run.load.spacing(),
    )?;
    let what = if visits { "visits" } else { "requests" };
    let (shard, rate) = (run.load.shard(), run.load.rate());
    text::write_distributed_lines(&mut text, shard, rate, run.start_at, what)?;
    if cfg.outputs.thread_timeseries {
        series::write_thread_header(text)?;
    }
    Ok(())
}

/// The most streams a connection carries, when a server's limit lowered
/// `-m` for every host (then the banner says so).
fn server_capped(hosts: &[Host]) -> Option<u32> {
    let capped = hosts.iter().all(|h| h.server_limit.is_some());
    hosts
        .iter()
        .filter_map(|h| h.streams)
        .max()
        .filter(|_| capped)
}

/// The report after the run: its results, a late start, the verdict.
pub fn write_report(
    cfg: &Config,
    outcome: &Outcome,
    slo: Option<&SloReport>,
) -> Result<String, Error> {
    let run = &cfg.run;
    let ws = describe::ws_config(run);
    let view = TextReport {
        url: &run.url,
        duration: run.duration,
        threads: run.threads,
        connections: run.connections(),
        load: run.load.clone(),
        latency: cfg.latency,
        u_latency: cfg.u_latency,
        protocol: Some(&outcome.protocol),
        profile_phases: run.load.profile().map_or(0, |p| p.phases().len()),
        stats: &outcome.stats,
        lag_allowance: cfg.lag_allowance,
        ws: ws.as_ref(),
    };
    let mut report = Vec::new();
    text::write_results(&mut report, &view)?;
    if let Some(start) = outcome.start {
        let measured = outcome.stats.counters.missed_at_start;
        text::write_late_start(&mut report, start.late, start.missed, measured)?;
    }
    if let Some(slo) = slo {
        text::write_slo(&mut report, slo)?;
    }
    Ok(String::from_utf8_lossy(&report).into_owned())
}

/// The raw outputs of the wrk fork, after the report (its per-thread rows
/// were printed during the run).
pub fn write_extras(out: &mut dyn Write, cfg: &Config, outcome: &Outcome) -> io::Result<()> {
    let (o, run) = (&cfg.outputs, &outcome.stats);
    if o.timeseries {
        series::write_timeseries(out, run, o.timeseries_interval)?;
    }
    if o.histogram {
        series::write_histogram(out, &run.latency)?;
    }
    Ok(())
}
