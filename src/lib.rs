//! metron: an HTTP benchmarking tool with wrk's command line and Lua API,
//! wrk2's constant-rate latency model, and microsecond pacing.
//!
//! # Layout
//! - [`cli`]: flags as typed (wrk, wrk2 and metron's own) and the validated
//!   [`cli::config::Config`] derived from them.
//! - [`schedule`]: intended send times (the open model of rate mode).
//! - [`engine`]: worker threads, each with its own event loop, connections,
//!   timer and statistics.
//! - [`http`]: request bytes, the incremental response parser, body framing.
//! - [`script`]: wrk's Lua API on LuaJIT: hooks, the `wrk` table, `thread`
//!   objects, statistics for `done()`.
//! - [`stats`]: histograms and counters per thread, merged after the run.
//! - [`report`]: the wrk2-layout text report.
//! - [`serve`]: the built-in target server used by `demo` and the tests.
//! - [`demo`]: a ten-second show of what coordinated omission hides.
//! - [`clock`]: the monotonic nanosecond clock every timestamp comes from.
//!
//! The binary is a thin shell over [`run`]; tests call the library.

pub mod cli;
pub mod clock;
pub mod demo;
pub mod engine;
pub mod http;
pub mod report;
pub mod schedule;
pub mod script;
pub mod serve;
mod signals;
pub mod stats;

use std::io::{self, Write};
use std::sync::Arc;

use cli::config::{Config, ConfigError};
use cli::{BenchArgs, Command};
use engine::{EngineError, Outcome, Stop};

/// Everything that can end a command early.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Serve(#[from] serve::ServeError),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Runs one command, writing its report to `out`.
pub fn run(cmd: Command, out: &mut dyn Write) -> Result<(), Error> {
    match cmd {
        Command::Bench(args) => bench(&args, out).map(|_| ()),
        Command::Serve(args) => Ok(serve::run(args)?),
        Command::Demo(args) => demo::run(&args, out),
    }
}

/// Runs a load test as the command line describes it, with Ctrl-C ending
/// it early, and prints the wrk2-layout report.
pub fn bench(args: &BenchArgs, out: &mut dyn Write) -> Result<Outcome, Error> {
    let cfg = Config::from_args(args)?;
    let stop = Stop::new();
    let _signals = signals::stop_on_interrupt(stop.clone())?;
    bench_config(&cfg, &stop, out)
}

/// Runs a load test from a ready configuration (what tests and `demo` use).
pub fn bench_config(
    cfg: &Config,
    stop: &Arc<Stop>,
    mut out: &mut dyn Write,
) -> Result<Outcome, Error> {
    let connections = cfg.connections();
    report::text::write_banner(&mut out, &cfg.url, cfg.duration, cfg.threads, connections)?;
    out.flush()?;
    let outcome = engine::run(cfg, stop)?;
    let text = report::TextReport {
        url: &cfg.url,
        duration: cfg.duration,
        threads: cfg.threads,
        connections,
        rate: cfg.rate,
        latency: cfg.latency,
        u_latency: cfg.u_latency,
        stats: &outcome.stats,
    };
    report::text::write_results(&mut out, &text)?;
    out.flush()?;
    // A script error ends the run early; what ran is reported above.
    if let Some(e) = outcome.failure {
        return Err(e.into());
    }
    if let Some(script) = outcome.script.as_ref().filter(|s| s.has_done()) {
        let duration_us = outcome.stats.window.as_micros() as u64;
        script
            .done(&outcome.stats, duration_us)
            .map_err(EngineError::from)?;
    }
    Ok(outcome)
}
