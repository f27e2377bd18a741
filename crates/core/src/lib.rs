//! metron's load generator: wrk's command line and Lua API, wrk2's
//! constant-rate latency model, and microsecond pacing. It runs on its own
//! event loops and threads, with no async runtime: HTTP/2's library is
//! polled by hand, through tokio's I/O traits alone.
//! The built-in target server is the `metron-serve` crate, and the `metron`
//! binary dispatches `serve` and `demo` (docs/ARCHITECTURE.md).
//!
//! # Layout
//! - [`cli`]: flags as typed (wrk, wrk2 and metron's own) and the validated
//!   [`cli::config::Config`] derived from them.
//! - [`target`]: a URL parsed into the server under test, and resolved.
//! - [`schedule`]: the [`schedule::Load`]: the closed loop, or an arrival
//!   process giving each request's intended send time (the open model).
//! - [`engine`]: a run in three stages (prepare, start, collect) over worker
//!   threads, each with its own event loop, connections, poller (waiting
//!   for I/O and deadlines at once) and statistics.
//! - [`http`]: request bytes, the incremental response parser, body framing,
//!   and the HTTP/2 client session (`http::h2`).
//! - [`replay`]: `--requests FILE`: requests built once from a file, their
//!   hosts and endpoints.
//! - [`script`]: wrk's Lua API on LuaJIT: hooks, the `wrk` table, `thread`
//!   objects, statistics for `done()`.
//! - [`stats`]: histograms and counters per thread, merged after the run.
//! - [`report`]: the wrk2-layout text report, JSON, HTML, interval logs.
//! - [`verdict`]: judging a run against an SLO (`--slo`), and whether the
//!   generator kept its schedule.
//! - [`sweep`]: `metron sweep`, runs at rising rates to find the highest
//!   that meets an SLO.
//! - [`dashboard`]: `--dashboard`, a live page of the run served over HTTP
//!   from the intervals the main thread takes as they close.
//! - [`clock`]: the monotonic nanosecond clock every timestamp comes from.
//! - [`signals`]: Ctrl-C and SIGTERM end a run, which is still reported.
//!
//! PEM files of certificates and keys are read by the `metron-pem` crate,
//! which the target server shares.
//!
//! Modules import only modules below them (docs/ARCHITECTURE.md); the
//! reports take a plain description of the run built here, not the
//! configuration. The binary is a thin shell over [`run`]; tests call the
//! library.

pub mod cli;
pub mod clock;
pub mod dashboard;
pub mod engine;
pub mod http;
mod progress;
pub mod replay;
pub mod report;
pub mod schedule;
pub mod script;
pub mod signals;
pub mod stats;
pub mod sweep;
pub mod target;
pub mod units;
pub mod verdict;

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

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
    Io(#[from] io::Error),
    #[error("{0}")]
    Log(#[from] report::hlog::HlogError),
    #[error("cannot read {}: {why}", path.display())]
    Input { path: PathBuf, why: String },
    #[error("metron merge: {0}")]
    Merge(String),
    #[error("cannot write {flag} {}: {why}{}", path.display(), output_hint(why))]
    Output {
        flag: &'static str,
        path: PathBuf,
        why: io::Error,
    },
    #[error("--dashboard={addr}: cannot listen there: {why}; give HOST:PORT on this machine, e.g. --dashboard=127.0.0.1:9090, or a free port")]
    Dashboard { addr: String, why: io::Error },
    /// The run was judged against `--slo` and did not pass (its report,
    /// verdict included, is out).
    #[error("SLO {verdict}")]
    Slo { verdict: String, status: u8 },
    /// A sweep ended without a rate, or at the generator's limit; its
    /// table and conclusion are out.
    #[error("{0}")]
    Sweep(String, u8),
    /// A signal ended the run early; the report of what ran is out.
    #[error("stopped by {} after {}; the report covers what ran", cause.describe(), units::format_time_us(after.as_micros() as f64))]
    Interrupted {
        cause: stats::StopCause,
        after: Duration,
    },
}

impl Error {
    /// The process's exit status for this error: 128 plus the signal's
    /// number for a run a signal ended (130 for Ctrl-C, 143 for SIGTERM),
    /// as shells report a process the signal ended; 1 for the rest.
    pub fn exit_status(&self) -> u8 {
        match self {
            Error::Interrupted { cause, .. } => match cause {
                stats::StopCause::Interrupt => 130,
                stats::StopCause::Terminate => 143,
                _ => 1,
            },
            Error::Slo { status, .. } | Error::Sweep(_, status) => *status,
            _ => 1,
        }
    }
}

/// The fix to suggest for a result file that cannot be written.
fn output_hint(why: &io::Error) -> &'static str {
    match why.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => {
            "; check that the directory exists and is writable"
        }
        io::ErrorKind::StorageFull => "; free some space or write elsewhere",
        io::ErrorKind::IsADirectory => "; name a file, not a directory",
        _ => "",
    }
}

/// Runs one command, writing its report to `out`.
pub fn run(cmd: Command, out: &mut dyn Write) -> Result<(), Error> {
    match cmd {
        Command::Bench(args) => bench(&args, out).map(|_| ()),
        Command::Report(args) => rerender(&args, out),
        Command::Merge(args) => merge(&args, out),
        Command::Sweep(args) => sweep::run(&args, out),
    }
}

/// `metron report`: the text report (and optionally the HTML report) of a
/// saved JSON document.
pub fn rerender(args: &cli::ReportArgs, out: &mut dyn Write) -> Result<(), Error> {
    if let Some(sweep) = read_sweep(&args.file)? {
        if args.csv.is_some() {
            return Err(Error::Input {
                path: args.file.clone(),
                why: "a sweep's document has no time series for --csv (its steps are the table \
                      metron report prints); give a run's document"
                    .into(),
            });
        }
        return sweep::rerender(&sweep, args.html.as_deref(), out);
    }
    let doc = read_document(&args.file)?;
    write_document(&doc, &args.file, out)?;
    if let Some(path) = &args.html {
        write_file("--html", path, report::html::render(&doc).as_bytes())?;
    }
    if let Some(path) = &args.csv {
        let mut rows = Vec::new();
        report::csv::write_document(&mut rows, &doc)?;
        write_file("--csv", path, &rows)?;
    }
    Ok(())
}

/// The text report of a saved (or merged) document, as its run printed it
/// with `-L -U`; `path` names it in errors.
fn write_document(
    doc: &report::json::Document,
    path: &Path,
    mut out: &mut dyn Write,
) -> Result<(), Error> {
    let stats = doc.stats().map_err(|why| Error::Input {
        path: path.to_path_buf(),
        why: why.to_string(),
    })?;
    let c = &doc.config;
    let duration = Duration::from_secs_f64(c.duration_s);
    // The banner and the report name the protocol the server spoke when
    // the run offered HTTP/2, as the run's own report did.
    let protocol = doc
        .protocol
        .as_deref()
        .map(str::parse::<http::Spoken>)
        .transpose()
        .map_err(|why| Error::Input {
            path: path.to_path_buf(),
            why,
        })?
        .filter(|p| p.multiplexes() || c.max_streams.is_some());
    report::text::write_banner(
        &mut out,
        &c.url,
        duration,
        c.threads,
        c.connections,
        protocol.as_ref().map(ToString::to_string).as_deref(),
    )?;
    if let Some(r) = &c.requests {
        report::text::write_replay_line(&mut out, &r.file, r.count, r.hosts, &r.described)?;
    }
    let view = report::TextReport {
        url: &c.url,
        duration,
        threads: c.threads,
        connections: c.connections,
        load: c.load(),
        latency: true,
        u_latency: true,
        protocol: protocol.as_ref(),
        stats: &stats,
    };
    report::text::write_results(&mut out, &view)?;
    if let Some(slo) = &doc.slo {
        report::text::write_slo(&mut out, slo)?;
    }
    report::text::write_instances(&mut out, &doc.instances)?;
    Ok(())
}

/// A sweep's document (`metron sweep --json`), when the file is one.
fn read_sweep(path: &Path) -> Result<Option<report::sweep::SweepDocument>, Error> {
    let input = |why: String| Error::Input {
        path: path.to_path_buf(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| input(e.to_string()))?;
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Ok(None);
    };
    if value.get("kind").and_then(|k| k.as_str()) != Some("sweep") {
        return Ok(None);
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| input(format!("not a metron sweep: {e}")))
}

fn read_document(path: &Path) -> Result<report::json::Document, Error> {
    let input = |why: String| Error::Input {
        path: path.to_path_buf(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| input(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        input(if e.is_eof() {
            format!("the document is cut short ({e}); was its run stopped while writing it? run it again")
        } else {
            format!("not JSON: {e}")
        })
    })?;
    let schema = value.get("schema").and_then(|v| v.as_u64());
    if schema != Some(u64::from(report::json::SCHEMA)) {
        let found = schema.map_or("no schema field".to_string(), |s| format!("schema {s}"));
        return Err(input(format!(
            "{found}, but this metron reads schema {} documents written by --json",
            report::json::SCHEMA
        )));
    }
    serde_json::from_value(value).map_err(|e| input(format!("not a metron result: {e}")))
}

/// Runs a load test as the command line describes it, with Ctrl-C ending
/// it early, and prints the wrk2-layout report.
pub fn bench(args: &BenchArgs, out: &mut dyn Write) -> Result<Outcome, Error> {
    let cfg = Config::from_args(args)?;
    let stop = Stop::new();
    let _signals = signals::stop_on_interrupt(stop.clone())?;
    bench_config(&cfg, &stop, out)
}

/// Runs a load test from a ready configuration (what tests and `demo` use):
/// the engine's three stages, then the reports, then the script's `done()`.
pub fn bench_config(cfg: &Config, stop: &Arc<Stop>, out: &mut dyn Write) -> Result<Outcome, Error> {
    let o = &cfg.outputs;
    // A script's output and ours share stdout: one stream, in call order.
    script::stdout::line_buffered();
    let mut out = script::stdout::AfterScripts(out);
    let run = &cfg.run;
    // With `--json -` stdout carries the document and nothing else.
    let mut stderr = io::stderr();
    let text: &mut dyn Write = if o.json_on_stdout() {
        &mut stderr
    } else {
        &mut out
    };
    check_outputs(cfg)?;
    let dashboard = start_dashboard(cfg)?;
    let connections = run.connections();
    report::text::write_banner(
        &mut &mut *text,
        &run.url,
        run.duration,
        run.threads,
        connections,
        run.protocols.banner().as_deref(),
    )?;
    if let Some(r) = &run.replay {
        let file = r.file.display().to_string();
        let (requests, hosts) = (r.set.len(), r.set.hosts().len());
        let order = replay_order(r);
        report::text::write_replay_line(&mut &mut *text, &file, requests, hosts, &order)?;
    }
    let profile = run.load.profile().filter(|p| !p.is_constant());
    report::text::write_arrival_line(
        &mut &mut *text,
        profile.map(describe_profile).as_deref(),
        run.arrival_seed,
    )?;
    report::text::write_distributed_lines(
        &mut &mut *text,
        run.load.shard(),
        run.load.rate(),
        run.start_at,
    )?;
    if o.thread_timeseries {
        report::series::write_thread_header(text)?;
    }
    // Flushed before setup() and init() can print.
    text.flush()?;
    let (mut outcome, script) = run_live(cfg, stop, text, dashboard.as_ref())?;
    name_phases(&mut outcome.stats, run);
    let view = report::TextReport {
        url: &run.url,
        duration: run.duration,
        threads: run.threads,
        connections,
        load: run.load.clone(),
        latency: cfg.latency,
        u_latency: cfg.u_latency,
        protocol: run.protocols.offers_http2().then_some(&outcome.protocol),
        stats: &outcome.stats,
    };
    // The report goes to the dashboard too, so it is written once into
    // memory.
    let mut report = Vec::new();
    report::text::write_results(&mut report, &view)?;
    if let Some(start) = outcome.start {
        let measured = outcome.stats.counters.missed_at_start;
        report::text::write_late_start(&mut report, start.late, start.missed, measured)?;
    }
    let slo = cfg
        .slo
        .as_ref()
        .map(|slo| slo.judge(&run_facts(run, &outcome)));
    if let Some(slo) = &slo {
        report::text::write_slo(&mut report, slo)?;
    }
    text.write_all(&report)?;
    write_extras(text, cfg, &outcome)?;
    text.flush()?;
    write_files(&mut out, cfg, &outcome, slo.as_ref())?;
    // A script error ends the run early; what ran is reported above.
    let failure = outcome.failure.take();
    if let Some(script) = script.filter(|s| s.has_done() && failure.is_none()) {
        let duration_us = outcome.stats.window.as_micros() as u64;
        script
            .done(&outcome.stats, duration_us)
            .map_err(EngineError::from)?;
    }
    if let Some(d) = &dashboard {
        d.finish(String::from_utf8_lossy(&report).into_owned());
        linger(d, stop, o.dashboard_linger);
    }
    if let Some(e) = failure {
        return Err(e.into());
    }
    // A signal's stop is reported by the exit status, after everything
    // else; a script's `thread:stop()` in every thread is its own choice.
    match outcome.stats.interruption {
        Some(i)
            if matches!(
                i.cause,
                stats::StopCause::Interrupt | stats::StopCause::Terminate
            ) =>
        {
            Err(Error::Interrupted {
                cause: i.cause,
                after: i.after,
            })
        }
        _ => match slo.filter(|s| s.exit_status != 0) {
            Some(s) => Err(Error::Slo {
                verdict: match &s.reason {
                    Some(why) => format!("{}: {why}", s.verdict),
                    None => s.verdict.to_string(),
                },
                status: s.exit_status,
            }),
            None => Ok(outcome),
        },
    }
}

/// What a verdict needs to know of a run besides its statistics.
pub fn run_facts<'a>(run: &'a engine::Setup, outcome: &'a Outcome) -> verdict::RunFacts<'a> {
    verdict::RunFacts {
        stats: &outcome.stats,
        load: &run.load,
        threads: run.threads,
        connections: run.connections(),
        per_connection: if outcome.protocol.multiplexes() {
            run.protocols.max_streams
        } else {
            1
        },
        fastest_us: outcome.stats.fastest_us,
    }
}

/// A rate profile in the banner's words: its phases, or how many there
/// are when a file gives more than a line holds.
fn describe_profile(p: &schedule::Profile) -> String {
    let phases = p.phases();
    let length = units::format_run_duration(Duration::from_nanos(p.length().unwrap_or(0)));
    if phases.len() <= 6 {
        let labels: Vec<&str> = phases.iter().map(|ph| ph.label.as_str()).collect();
        format!("{} ({length})", labels.join(","))
    } else {
        format!("of {} phases over {length}", phases.len())
    }
}

/// Gives the phases of a rate profile their labels and their place in the
/// measured window (from its start), once the window's length is known.
fn name_phases(stats: &mut stats::RunStats, run: &engine::Setup) {
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
fn replay_order(r: &engine::Replay) -> String {
    match r.order {
        replay::Order::Sequential => "in file order".to_string(),
        replay::Order::Random => format!("in random order (--seed {})", r.seed),
    }
}

/// The run as the JSON document (and the HTML report drawn from it)
/// describes it: plain values, so the reports need no configuration.
pub fn describe(run: &engine::Setup) -> report::json::RunConfig {
    report::json::RunConfig {
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
        requests: run.replay.as_ref().map(|r| report::json::RequestsConfig {
            file: r.file.display().to_string(),
            count: r.set.len(),
            hosts: r.set.hosts().len(),
            order: format!("{:?}", r.order).to_lowercase(),
            seed: r.seed,
            described: replay_order(r),
        }),
        max_streams: run
            .protocols
            .offers_http2()
            .then_some(run.protocols.max_streams),
        arrival: run.load.is_open().then(|| {
            match run.arrival_seed {
                Some(_) => "poisson",
                None => "constant",
            }
            .to_string()
        }),
        arrival_seed: run.arrival_seed,
        rate_profile: run
            .load
            .profile()
            .filter(|p| !p.is_constant())
            .map(|p| {
                p.phases()
                    .iter()
                    .zip(p.starts())
                    .map(|(ph, &start)| report::json::ProfilePhase {
                        label: ph.label.clone(),
                        start_s: start as f64 / 1e9,
                        length_s: ph.length as f64 / 1e9,
                        from: ph.from,
                        to: ph.to,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        shard: Some(run.load.shard()).filter(|s| !s.is_whole()).map(|s| {
            report::json::ShardConfig {
                index: s.index(),
                count: s.count(),
            }
        }),
        start_at_s: run.start_at.map(|at| {
            at.duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64())
        }),
    }
}

/// `--dashboard`: listening before the run starts, its address printed.
fn start_dashboard(cfg: &Config) -> Result<Option<dashboard::Dashboard>, Error> {
    let Some(addr) = &cfg.outputs.dashboard else {
        return Ok(None);
    };
    let config = serde_json::to_string(&describe(&cfg.run)).map_err(io::Error::other)?;
    let d = dashboard::Dashboard::start(addr, config).map_err(|why| Error::Dashboard {
        addr: addr.clone(),
        why,
    })?;
    eprintln!("Dashboard: http://{}/", d.addr());
    if d.is_exposed() {
        eprintln!(
            "Warning: the dashboard listens on {}: anyone who can reach it can see this run \
             (--dashboard=127.0.0.1:PORT keeps it on this machine)",
            d.addr()
        );
    }
    Ok(Some(d))
}

/// Keeps the dashboard up after the run: for `linger`, or until Ctrl-C.
/// After a run that Ctrl-C ended, the next Ctrl-C exits at once.
fn linger(d: &dashboard::Dashboard, stop: &Stop, linger: Option<Duration>) {
    let how = match linger {
        Some(t) => format!("for {}", units::format_run_duration(t)),
        None => "until Ctrl-C".to_string(),
    };
    eprintln!("Dashboard: the report stays at http://{}/ {how}", d.addr());
    let until = linger.map(|t| std::time::Instant::now() + t);
    let stopped_before = stop.is_stopped();
    while until.map_or(true, |end| std::time::Instant::now() < end)
        && (stopped_before || !stop.is_stopped())
    {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the engine's three stages with what shows while it runs: the
/// progress line (on a terminal, without `--quiet`), the rows of
/// `--thread-timeseries`, the files written as the run goes and the
/// dashboard. The script's main state comes back for `done()`.
fn run_live(
    cfg: &Config,
    stop: &Arc<Stop>,
    text: &mut dyn Write,
    dashboard: Option<&dashboard::Dashboard>,
) -> Result<(Outcome, Option<script::MainScript>), Error> {
    let (o, run) = (&cfg.outputs, &cfg.run);
    let hlog = match &o.hlog {
        Some(path) => Some(HlogStream::create(path, cfg)?),
        None => None,
    };
    let csv = match &o.csv {
        Some(path) => Some(CsvStream::create(path, cfg)?),
        None => None,
    };
    let mut live = Live {
        line: (!o.quiet && io::stderr().is_terminal()).then(|| progress::Line::new(run.duration)),
        rows: o.thread_timeseries.then_some((o.timeseries_interval, text)),
        hlog,
        csv,
        dashboard: dashboard.map(|d| (d, Intended::new(run))),
        failed: None,
    };
    if let Some(at) = run.start_at {
        // Connect shortly before the start, not long before.
        let connect_at = at.checked_sub(engine::CONNECT_AHEAD).unwrap_or(at);
        engine::wait_for(connect_at, stop);
    }
    // Always watched: the main thread takes the intervals as they close,
    // which keeps a long run's memory flat.
    let mut prepared = engine::prepare(run, stop, Some(&live as &dyn engine::Watch))?;
    let script = prepared.script.take();
    let result = prepared
        .start()
        .collect(Some(&mut live as &mut dyn engine::Watch));
    if let Some(line) = live.line.as_mut() {
        line.clear();
    }
    let outcome = result?;
    match live.failed {
        Some(e) => Err(e),
        None => Ok((outcome, script)),
    }
}

/// An output file written as the run goes: its flag and path name it in
/// errors.
struct OutputFile {
    flag: &'static str,
    path: PathBuf,
}

impl OutputFile {
    fn create(flag: &'static str, path: &Path) -> Result<(OutputFile, std::fs::File), Error> {
        let named = OutputFile {
            flag,
            path: path.to_path_buf(),
        };
        let file = std::fs::File::create(path).map_err(|why| named.failed(why))?;
        Ok((named, file))
    }

    fn failed(&self, why: io::Error) -> Error {
        output_failed(self.flag, &self.path, why)
    }
}

/// `--csv`, written as the run goes: the header when the file is created,
/// then a row per interval as it closes, flushed.
struct CsvStream {
    file: OutputFile,
    out: io::BufWriter<std::fs::File>,
    /// The schedule, to count the requests intended in each interval.
    intended: Intended,
    interval_s: f64,
}

impl CsvStream {
    fn create(path: &Path, cfg: &Config) -> Result<CsvStream, Error> {
        let (file, f) = OutputFile::create("--csv", path)?;
        let mut out = io::BufWriter::new(f);
        report::csv::write_header(&mut out)
            .and_then(|()| out.flush())
            .map_err(|why| file.failed(why))?;
        Ok(CsvStream {
            file,
            out,
            intended: Intended::new(&cfg.run),
            interval_s: cfg.run.interval.as_secs_f64(),
        })
    }

    fn append(&mut self, intervals: &[stats::IntervalStats]) -> Result<(), Error> {
        let (out, intended, interval_s) = (&mut self.out, &mut self.intended, self.interval_s);
        intervals
            .iter()
            .try_for_each(|iv| {
                let point = report::json::Point::of(iv, intended.count(iv.start(), iv.length));
                report::csv::write_row(out, &point, interval_s)
            })
            .and_then(|()| out.flush())
            .map_err(|why| self.file.failed(why))
    }
}

/// Counts the requests the schedule intended in intervals of the measured
/// window, one after another.
struct Intended {
    counter: Option<schedule::Share>,
    warmup: Duration,
}

impl Intended {
    fn new(run: &engine::Setup) -> Intended {
        Intended {
            counter: run.load.counter(),
            warmup: run.warmup,
        }
    }

    /// Requests intended in `[start, start + length)` of the window; none
    /// in the closed loop.
    fn count(&mut self, start: Duration, length: Duration) -> Option<u64> {
        let counter = self.counter.as_mut()?;
        let from = self.warmup + start;
        Some(counter.count_in(clock::nanos(from), clock::nanos(from + length)))
    }
}

/// `--hlog`, written as the run goes: the file is created before the run,
/// the header written when the measured window starts, and each interval
/// appended and flushed as it closes, so that `tail -f` and the
/// HdrHistogram tools read a run in progress and a killed run leaves every
/// closed interval on disk.
struct HlogStream {
    file: OutputFile,
    comment: String,
    endpoints: Vec<String>,
    state: HlogState,
}

enum HlogState {
    Created(std::fs::File),
    Writing(report::hlog::LogWriter<io::BufWriter<std::fs::File>>),
    Done,
}

impl HlogStream {
    fn create(path: &Path, cfg: &Config) -> Result<HlogStream, Error> {
        let (file, f) = OutputFile::create("--hlog", path)?;
        let endpoints = cfg
            .run
            .replay
            .as_ref()
            .filter(|r| r.by_endpoint)
            .map(|r| r.set.endpoints().to_vec())
            .unwrap_or_default();
        Ok(HlogStream {
            file,
            comment: format!("metron {} {}", env!("CARGO_PKG_VERSION"), cfg.run.url),
            endpoints,
            state: HlogState::Created(f),
        })
    }

    /// Writes the header; interval times count from `at`.
    fn start(&mut self, at: std::time::SystemTime) -> Result<(), Error> {
        let HlogState::Created(file) = std::mem::replace(&mut self.state, HlogState::Done) else {
            return Ok(());
        };
        let out = io::BufWriter::new(file);
        let mut log = report::hlog::LogWriter::start(out, at, &self.comment, &self.endpoints)
            .map_err(|e| self.file.failed(e))?;
        log.flush().map_err(|e| self.file.failed(e))?;
        self.state = HlogState::Writing(log);
        Ok(())
    }

    /// Appends intervals and flushes them to the file.
    fn append(&mut self, intervals: &[stats::IntervalStats]) -> Result<(), Error> {
        let HlogState::Writing(log) = &mut self.state else {
            return Ok(());
        };
        intervals
            .iter()
            .try_for_each(|iv| log.interval(iv))
            .and_then(|()| log.flush())
            .map_err(|why| self.file.failed(why))
    }
}

/// What the main thread shows while the workers run.
struct Live<'a> {
    line: Option<progress::Line>,
    /// The interval of `--thread-timeseries`, and where its rows go.
    rows: Option<(std::time::Duration, &'a mut dyn Write)>,
    hlog: Option<HlogStream>,
    csv: Option<CsvStream>,
    /// `--dashboard`, and its count of the requests intended per interval.
    dashboard: Option<(&'a dashboard::Dashboard, Intended)>,
    /// The first failed write of a row or of the interval log, reported
    /// once the run is over.
    failed: Option<Error>,
}

impl engine::Watch for Live<'_> {
    fn ticks(&self) -> bool {
        self.line.is_some() || self.dashboard.is_some()
    }

    fn tick(&mut self, totals: engine::progress::Totals, at: std::time::Duration) {
        if let Some(line) = self.line.as_mut() {
            line.show(totals, at);
        }
        if let Some((d, _)) = &self.dashboard {
            d.outstanding(totals.in_flight, totals.waiting);
        }
    }

    fn rows_every(&self) -> Option<std::time::Duration> {
        self.rows.as_ref().map(|(every, _)| *every)
    }

    fn rows(&mut self, rows: &[stats::Row]) {
        let Some((_, out)) = self.rows.as_mut() else {
            return;
        };
        if self.failed.is_some() {
            return;
        }
        // Rows may go to the terminal the progress line is on.
        if let Some(line) = self.line.as_mut() {
            line.clear();
        }
        let written = report::series::write_thread_rows(*out, rows).and_then(|()| out.flush());
        self.failed = written.err().map(Error::from);
        if let Some(line) = self.line.as_mut() {
            line.restore();
        }
    }

    fn intervals_wanted(&self) -> bool {
        self.hlog.is_some() || self.csv.is_some() || self.dashboard.is_some()
    }

    fn window_starts(&mut self, at: std::time::SystemTime) {
        if let Some(hlog) = self.hlog.as_mut() {
            if let Err(e) = hlog.start(at) {
                self.failed.get_or_insert(e);
                self.hlog = None;
            }
        }
    }

    fn intervals(&mut self, intervals: &[stats::IntervalStats]) {
        if let Some(hlog) = self.hlog.as_mut() {
            if let Err(e) = hlog.append(intervals) {
                self.failed.get_or_insert(e);
                self.hlog = None;
            }
        }
        if let Some(csv) = self.csv.as_mut() {
            if let Err(e) = csv.append(intervals) {
                self.failed.get_or_insert(e);
                self.csv = None;
            }
        }
        if let Some((d, intended)) = self.dashboard.as_mut() {
            for iv in intervals {
                d.interval(iv, intended.count(iv.start(), iv.length));
            }
        }
    }
}

/// The raw outputs of the wrk fork, after the report (its per-thread rows
/// were printed during the run).
fn write_extras(out: &mut dyn Write, cfg: &Config, outcome: &Outcome) -> io::Result<()> {
    let (o, run) = (&cfg.outputs, &outcome.stats);
    if o.timeseries {
        report::series::write_timeseries(out, run, o.timeseries_interval)?;
    }
    if o.histogram {
        report::series::write_histogram(out, &run.latency)?;
    }
    Ok(())
}

/// The result files: JSON (or JSON on stdout), interval log, HTML.
fn write_files(
    stdout: &mut dyn Write,
    cfg: &Config,
    outcome: &Outcome,
    slo: Option<&verdict::SloReport>,
) -> Result<(), Error> {
    let o = &cfg.outputs;
    // The interval log was written as the run went (see `HlogStream`).
    if o.json.is_none() && o.html.is_none() {
        return Ok(());
    }
    let mut doc = report::json::Document::new(
        describe(&cfg.run),
        &outcome.protocol,
        &outcome.stats,
        outcome.started_at + cfg.run.warmup,
    );
    doc.slo = slo.cloned();
    doc.start_offset_s = outcome.start.map(|s| s.late.as_secs_f64());
    let mut intended = Intended::new(&cfg.run);
    let interval = outcome.stats.history.interval();
    for (i, p) in doc.series.points.iter_mut().enumerate() {
        let start = interval * i as u32;
        let length = p.length_s.map_or(interval, Duration::from_secs_f64);
        p.intended = intended.count(start, length);
    }
    if let Some(path) = &o.json {
        let json = serde_json::to_string_pretty(&doc).map_err(io::Error::other)? + "\n";
        if o.json_on_stdout() {
            stdout.write_all(json.as_bytes())?;
            stdout.flush()?;
        } else {
            write_file("--json", path, json.as_bytes())?;
        }
    }
    if let Some(path) = &o.html {
        write_file("--html", path, report::html::render(&doc).as_bytes())?;
    }
    Ok(())
}

/// `metron merge`: one report from several instances' JSON documents (the
/// `--shard` parts of one run, say), or from several interval logs.
pub fn merge(args: &cli::MergeArgs, out: &mut dyn Write) -> Result<(), Error> {
    let mut json = Vec::new();
    for path in &args.files {
        if is_json(path)? {
            json.push(path);
        }
    }
    if json.is_empty() {
        if args.json.is_some() || args.html.is_some() {
            return Err(Error::Merge(
                "--json and --html need JSON documents (written by --json); interval logs \
                 merge into the text report only"
                    .into(),
            ));
        }
        let stats = report::hlog::merge(&args.files)?;
        report::hlog::write_merged(out, &args.files, &stats)?;
        return Ok(());
    }
    if json.len() < args.files.len() {
        return Err(Error::Merge(
            "give JSON documents or interval logs, not both".into(),
        ));
    }
    let mut docs = Vec::with_capacity(json.len());
    for path in json {
        if read_sweep(path)?.is_some() {
            return Err(Error::Input {
                path: path.clone(),
                why: "a sweep's document: merge takes the documents of runs".into(),
            });
        }
        docs.push((path.display().to_string(), read_document(path)?));
    }
    let merged = report::merge::documents(&docs).map_err(Error::Merge)?;
    for w in &merged.warnings {
        eprintln!("metron merge: warning: {w}");
    }
    write_document(&merged.doc, Path::new("the merged document"), out)?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&merged.doc).map_err(io::Error::other)? + "\n";
        write_file("--json", path, json.as_bytes())?;
    }
    if let Some(path) = &args.html {
        write_file("--html", path, report::html::render(&merged.doc).as_bytes())?;
    }
    Ok(())
}

/// Whether a file holds JSON (a document) rather than an interval log:
/// its first character that is not white space opens an object.
fn is_json(path: &Path) -> Result<bool, Error> {
    let input = |e: io::Error| Error::Input {
        path: path.to_path_buf(),
        why: e.to_string(),
    };
    let mut head = [0u8; 256];
    let n =
        io::Read::read(&mut std::fs::File::open(path).map_err(input)?, &mut head).map_err(input)?;
    Ok(head[..n]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{'))
}

/// Fails before the run, not after it, when a result file could not be
/// written: its directory must exist and be writable.
fn check_outputs(cfg: &Config) -> Result<(), Error> {
    let o = &cfg.outputs;
    let files = [
        ("--json", &o.json),
        ("--html", &o.html),
        ("--hlog", &o.hlog),
        ("--csv", &o.csv),
    ];
    for (flag, path) in files {
        let Some(path) = path.as_deref().filter(|p| *p != Path::new("-")) else {
            continue;
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let fail = |why: io::Error| output_failed(flag, path, why);
        if !dir.is_dir() {
            let why = format!("there is no directory {}", dir.display());
            return Err(fail(io::Error::new(io::ErrorKind::NotFound, why)));
        }
        let c_dir = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| fail(io::Error::from(io::ErrorKind::InvalidInput)))?;
        // SAFETY: access() reads the NUL-terminated path and nothing else.
        if unsafe { libc::access(c_dir.as_ptr(), libc::W_OK) } != 0 {
            return Err(fail(io::Error::last_os_error()));
        }
    }
    Ok(())
}

pub(crate) fn write_file(flag: &'static str, path: &Path, bytes: &[u8]) -> Result<(), Error> {
    std::fs::write(path, bytes).map_err(|why| output_failed(flag, path, why))
}

/// Writing the output file of `flag` at `path` failed.
fn output_failed(flag: &'static str, path: &Path, why: io::Error) -> Error {
    Error::Output {
        flag,
        path: path.to_path_buf(),
        why,
    }
}
