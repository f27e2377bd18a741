//! A command of the load generator from its checked flags to its exit
//! status: a load test ([`bench()`]) with its banner, live outputs, text
//! report, result files and the script's `done()`; `metron report` and
//! `metron merge` over saved documents and logs.
//!
//! # Layout
//! - this file: the load test, start to end.
//! - `live`: what shows while the workers run, as the engine's watcher;
//!   `progress`: the progress line; `printed`: the text around the run,
//!   the banner once the pre-flight has seen the servers and the report
//!   once the workers are done.
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

pub mod describe;
mod error;
mod intended;
mod live;
mod merge;
mod printed;
mod progress;
mod saved;
pub mod sink;

use std::io::{self, Write};
use std::sync::Arc;

use crate::cli::config::Config;
use crate::cli::BenchArgs;
use crate::engine::{EngineError, Outcome, Stop};
use crate::report::Counted;
use crate::script::stdout;
use crate::signals;
use crate::stats::Counters;

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
        Some(errors) => Err(Error::NothingCompleted {
            what: Counted::of_websocket(cfg.run.websocket.as_deref()).one(),
            errors,
        }),
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
    let report = printed::write_report(cfg, &outcome, slo.as_ref())?;
    text.write_all(report.as_bytes())?;
    printed::write_extras(text, cfg, &outcome)?;
    text.flush()?;
    let end = sink::Ended::new(cfg, &outcome, slo.as_ref(), &report, &mut out);
    sink::finish(&mut sinks, end)?;
    // A script error ends the run early; what ran is reported above.
    let failure = outcome.failure.take();
    if let (None, Some(script)) = (&failure, script) {
        let window_us = outcome.stats.window.as_micros() as u64;
        stop.closing(true);
        let done = script.done(&outcome.stats, window_us);
        stop.closing(false);
        done.map_err(EngineError::from)?;
    }
    for s in &sinks {
        s.linger(stop);
    }
    match failure {
        Some(e) => Err(e.into()),
        None => error::ending(outcome, slo),
    }
}

/// The errors, in brief, of a run in which requests failed or connections
/// could not be opened and no response came back at all.
fn nothing_completed(c: &Counters) -> Option<String> {
    let e = &c.errors;
    let refused = c.ws_refused.total();
    if c.completed > 0 || (!e.any_socket() && refused == 0) {
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
        .chain((refused > 0).then(|| format!("upgrades refused {refused}")))
        .collect();
    Some(errors.join(", "))
}
