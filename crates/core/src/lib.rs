//! metron's load generator: wrk's command line and Lua API, wrk2's
//! constant-rate latency model, and microsecond pacing. It runs on its own
//! event loops and threads, with no async runtime: HTTP/1.1 and HTTP/2 are
//! sessions of its own that those loops drive.
//! The built-in target server is the `metron-serve` crate, and the `metron`
//! binary dispatches `serve` and `demo` (docs/ARCHITECTURE.md).
//!
//! # Layout
//! - [`cli`]: flags as typed (wrk, wrk2 and metron's own) and the validated
//!   [`cli::config::Config`] derived from them.
//! - [`sweep`]: `metron sweep`, runs at rising rates to find the highest
//!   that meets an SLO, each a whole run of [`mod@run`].
//! - [`mod@run`]: a command from its flags to its exit status: the load test
//!   (banner, live outputs, reports, the script's `done()`), and `metron
//!   report` and `metron merge` over saved documents; every output
//!   besides the text report is a sink there ([`run::sink`]).
//! - [`dashboard`]: `--dashboard`, a live page of the run served over HTTP
//!   from the intervals the main thread takes as they close.
//! - [`signals`]: Ctrl-C and SIGTERM end a run, which is still reported.
//! - [`report`]: the wrk2-layout text report, JSON, HTML, interval logs.
//! - [`verdict`]: judging a run against an SLO (`--slo`), and whether the
//!   generator kept its schedule.
//! - [`engine`]: a run in three stages (prepare, start, collect) over worker
//!   threads, each with its own event loop, connections, poller (waiting
//!   for I/O and deadlines at once) and statistics.
//! - [`script`]: wrk's Lua API on LuaJIT: hooks, the `wrk` table, `thread`
//!   objects, statistics for `done()`.
//! - [`llm`]: `--llm`: prompts built into streamed completion requests.
//! - [`replay`]: `--requests FILE`: requests built once from a file, their
//!   hosts and endpoints.
//! - [`http`]: the session seam and the protocol sessions (`http::h1`,
//!   with the request bytes, the incremental response parser and body
//!   framing; `http::h2`; `http::h3`), and each protocol's pre-flight.
//! - [`schedule`]: the [`schedule::Load`]: the closed loop, or an arrival
//!   process giving each request's intended send time (the open model).
//! - [`stats`]: histograms and counters per thread, merged after the run.
//! - [`target`]: a URL parsed into the server under test, and resolved.
//! - [`units`]: amounts as people type them and as the reports print them.
//! - [`clock`]: the monotonic nanosecond clock every timestamp comes from.
//!
//! PEM files of certificates and keys are read by the `metron-pem` crate,
//! which the target server shares.
//!
//! Each module imports only modules below it in this list
//! (docs/ARCHITECTURE.md); this file declares them and routes each command
//! to its module. The reports take a plain description of the run, not
//! the configuration. The binary is a thin shell over [`run()`]; tests
//! call the library.

pub mod cli;
pub mod clock;
pub mod dashboard;
pub mod engine;
pub mod http;
pub mod llm;
pub mod replay;
pub mod report;
pub mod run;
pub mod schedule;
pub mod script;
pub mod signals;
pub mod stats;
pub mod sweep;
pub mod target;
pub mod units;
pub mod verdict;

use std::io::Write;

use cli::Command;

pub use run::{bench, bench_config, Error};

/// Runs one command, writing its report to `out`.
pub fn run(cmd: Command, out: &mut dyn Write) -> Result<(), Error> {
    match cmd {
        Command::Bench(args) => run::bench(&args, out).map(|_| ()),
        Command::Report(args) => run::rerender(&args, out),
        Command::Merge(args) => run::merge(&args, out),
        Command::Sweep(args) => sweep::run(&args, out),
    }
}
