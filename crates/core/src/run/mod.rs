//! A command of the load generator from its checked flags to its exit
//! status: a load test ([`bench()`]) with its banner, live outputs, text
//! report, result files and the script's `done()`; `metron report` and
//! `metron merge` over saved documents and logs.
//!
//! # Layout
//! - this file: the load test, start to end.
//! - `live`: what shows while the workers run, as the engine's watcher;
//!   `progress`: the progress line; `banner`: the lines before the run,
//!   once the pre-flight has seen the servers.
//! - [`sink`]: every output besides the text report, one file each, fed
//!   the run's intervals and its result.
//! - [`mod@describe`]: the run in plain values for the reports and
//!   verdicts; `intended`: the requests the schedule intended per interval.
//! - `saved`: `metron report`, and reading saved documents; `merge`:
//!   `metron merge`.
//! - `error`: every way a command ends early, and its exit status.
//!
//! `metron sweep` sits above this module and runs whole load tests
//! through it; nothing here knows of the sweep but its error.

mod banner;
pub mod describe;
mod error;
mod intended;
mod live;
mod merge;
mod progress;
mod saved;
pub mod sink;

use std::io::{self, Write};
use std::sync::Arc;

use crate::cli::config::Config;
use crate::cli::BenchArgs;
use crate::engine::{EngineError, Outcome, Stop};
use crate::report::{series, text, TextReport};
use crate::script::{stdout, MainScript};
use crate::signals;
use crate::stats::{Counters, StopCause};
use crate::verdict::SloReport;

pub use describe::{describe, run_facts};
pub use error::Error;
pub use merge::merge;
pub use saved::rerender;

/// Runs a load test as the command line describes it, with Ctrl-C ending
/// it early, and prints the wrk2-layout report.
pub fn bench(args: &BenchArgs, out: &mut dyn Write) -> Result<Outcome, Error> {
    let cfg = Config::from_args(args)?;
    let stop = Stop::new();
    let _signals = signals::stop_on_interrupt(stop.clone())?;
    let outcome = bench_config(&cfg, &stop, out)?;
    // The report is out; the exit status tells a script that nothing in
    // it is a measurement of the server's responses.
    match nothing_completed(&outcome.stats.counters) {
        Some(errors) => Err(Error::NothingCompleted(errors)),
        None => Ok(outcome),
    }
}

/// Runs a load test from a ready configuration (what tests and `demo` use):
/// the engine's three stages, then the reports, then the script's `done()`.
pub fn bench_config(cfg: &Config, stop: &Arc<Stop>, out: &mut dyn Write) -> Result<Outcome, Error> {
    // A script's output and ours share stdout: one stream, in call order.
    stdout::line_buffered();
    let mut out = stdout::AfterScripts(out);
    // With `--json -` stdout carries the document and nothing else.
    let mut stderr = io::stderr();
    let text: &mut dyn Write = if cfg.outputs.sinks.json_on_stdout() {
        &mut stderr
    } else {
        &mut out
    };
    let mut sinks = sink::open(cfg)?;
    let (mut outcome, script) = live::run(cfg, stop, text, &mut sinks)?;
    describe::name_phases(&mut outcome.stats, &cfg.run);
    let slo = cfg
        .slo
        .as_ref()
        .map(|slo| slo.judge(&run_facts(&cfg.run, &outcome, cfg.lag_allowance)));
    // The report goes to the dashboard too, so it is written once into
    // memory.
    let report = write_report(cfg, &outcome, slo.as_ref())?;
    text.write_all(report.as_bytes())?;
    write_extras(text, cfg, &outcome)?;
    text.flush()?;
    let end = sink::Ended::new(cfg, &outcome, slo.as_ref(), &report, &mut out);
    sink::finish(&mut sinks, end)?;
    // A script error ends the run early; what ran is reported above.
    let failure = outcome.failure.take();
    if failure.is_none() {
        call_done(script, &outcome)?;
    }
    for s in &sinks {
        s.linger(stop);
    }
    match failure {
        Some(e) => Err(e.into()),
        None => ending(outcome, slo),
    }
}

/// The report after the run: its results, a late start, the verdict.
fn write_report(cfg: &Config, outcome: &Outcome, slo: Option<&SloReport>) -> Result<String, Error> {
    let run = &cfg.run;
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
fn write_extras(out: &mut dyn Write, cfg: &Config, outcome: &Outcome) -> io::Result<()> {
    let (o, run) = (&cfg.outputs, &outcome.stats);
    if o.timeseries {
        series::write_timeseries(out, run, o.timeseries_interval)?;
    }
    if o.histogram {
        series::write_histogram(out, &run.latency)?;
    }
    Ok(())
}

/// The script's `done()`, once every report is out, when it has one.
fn call_done(script: Option<MainScript>, outcome: &Outcome) -> Result<(), Error> {
    if let Some(script) = script.filter(|s| s.has_done()) {
        let duration_us = outcome.stats.window.as_micros() as u64;
        script
            .done(&outcome.stats, duration_us)
            .map_err(EngineError::from)?;
    }
    Ok(())
}

/// How the run ends: a signal's stop is reported by the exit status,
/// after everything else, and so is a verdict that is not a pass; a
/// script's `thread:stop()` in every thread is its own choice.
fn ending(outcome: Outcome, slo: Option<SloReport>) -> Result<Outcome, Error> {
    if let Some(i) = outcome.stats.interruption {
        if matches!(i.cause, StopCause::Interrupt | StopCause::Terminate) {
            return Err(Error::Interrupted {
                cause: i.cause,
                after: i.after,
            });
        }
    }
    match Error::unless_met(slo) {
        Some(failed) => Err(failed),
        None => Ok(outcome),
    }
}

/// The errors, in brief, of a run in which requests failed or connections
/// could not be opened and no response came back at all.
fn nothing_completed(c: &Counters) -> Option<String> {
    let e = &c.errors;
    if c.completed > 0 || !e.any_socket() {
        return None;
    }
    let named = [
        ("connect", e.connect),
        ("read", e.read),
        ("write", e.write),
        ("timeout", e.timeout),
    ];
    let errors: Vec<String> = named
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("{what} errors {n}"))
        .collect();
    Some(errors.join(", "))
}
