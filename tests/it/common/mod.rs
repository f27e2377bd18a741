//! Shared helpers for the end-to-end tests: a built-in target on
//! 127.0.0.1:0, runs of metron through its library, and a lock that keeps
//! the timing-sensitive runs of one test binary from overlapping on a
//! small machine.

pub mod caddy;
pub mod dashboard;
pub mod deploy;
pub mod document;
pub mod faults;
pub mod files;
pub mod grafana;
pub mod grpcio;
pub mod h2;
pub mod httpbin;
pub mod judged;
pub mod matrix;
pub mod modules;
pub mod nginx;
pub mod process;
pub mod prometheus;
pub mod proto;
pub mod python;
pub mod relay;
pub mod scripts;
pub mod servers;
pub mod shard;
pub mod slurm;
pub mod tls;
pub mod truth;
pub mod websockets;

pub use files::TempDir;
pub(crate) use proto::{per_protocol, Proto};

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use clap::Parser;
use metron::cli::config::Config;
use metron::cli::BenchArgs;
use metron::engine::{Outcome, Stop};
use metron::serve::{Fault, FaultPlan, ServeConfig, Server, StallPlan};

static SERIAL: Mutex<()> = Mutex::new(());

/// Runs one load test at a time within a test binary.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn server(cfg: ServeConfig) -> Server {
    Server::start(cfg).expect("the built-in target starts")
}

/// A target that keeps what it receives.
pub fn recording() -> Server {
    server(ServeConfig {
        record: 100_000,
        ..ServeConfig::default()
    })
}

/// A target that stalls once, for 300 ms at 1.2 s: a run through it has a
/// tail of latencies to report.
pub fn stalling() -> Server {
    server(ServeConfig {
        stall: Some(
            StallPlan::once(Duration::from_millis(1200), Duration::from_millis(300)).unwrap(),
        ),
        ..ServeConfig::default()
    })
}

/// A server that reads every request and never answers one.
pub fn silent() -> Server {
    server(ServeConfig {
        fault: Some(FaultPlan::every(Fault::NeverAnswer, 1)),
        ..ServeConfig::default()
    })
}

/// The path of a script in tests/scripts.
pub fn script(name: &str) -> String {
    format!("{}/tests/scripts/{name}", env!("CARGO_MANIFEST_DIR"))
}

pub fn url(server: &Server, path: &str) -> String {
    format!("http://{}{}", server.addr(), path)
}

/// Runs metron with wrk-style arguments; returns the outcome and the text
/// report it printed.
pub fn bench(args: &[&str]) -> (Outcome, String) {
    try_bench(args).unwrap_or_else(|e| panic!("metron {args:?} failed: {e}"))
}

/// [`bench`] with `url` after `args`, where wrk's command line puts it.
pub fn bench_at(args: &[&str], url: &str) -> (Outcome, String) {
    let mut argv = args.to_vec();
    argv.push(url);
    bench(&argv)
}

/// [`bench`] replaying the requests file `file` (`--requests`), with
/// `flags`, to `url`.
pub fn bench_replay(flags: &[&str], file: &str, url: &str) -> (Outcome, String) {
    bench(&[flags, &["--requests", file, url]].concat())
}

pub fn try_bench(args: &[&str]) -> Result<(Outcome, String), metron::Error> {
    let mut argv = vec!["metron"];
    argv.extend_from_slice(args);
    let parsed = BenchArgs::try_parse_from(&argv).expect("test arguments parse");
    let cfg = Config::from_args(&parsed)?;
    let mut out = Vec::new();
    let outcome = metron::bench_config(&cfg, &Stop::new(), &mut out)?;
    Ok((
        outcome,
        String::from_utf8(out).expect("the report is UTF-8"),
    ))
}

/// A rate-mode run of 200 requests over a second on two connections
/// (and `extra` flags) against a target built from `cfg`, asking for
/// `path`; its books must balance. Returns the run, its report and the
/// requests the target received.
pub fn run_path(cfg: ServeConfig, path: &str, extra: &[&str]) -> (Outcome, String, u64) {
    let srv = server(cfg);
    let u = url(&srv, path);
    let args = [&["-t1", "-c2", "-R200", "-d1s"][..], extra].concat();
    let (o, text) = bench_at(&args, &u);
    assert_balanced(&o);
    (o, text, srv.stats().requests())
}

/// The accounting identity every run must satisfy.
pub fn assert_balanced(o: &Outcome) {
    let c = &o.stats.counters;
    assert!(c.balanced(), "accounting does not add up: {c:?}");
}

/// A server's own count of the requests it received (or answered), read
/// after the run, against metron's: every completed request, and at most
/// those still in flight at the end besides (a run does not wait for them:
/// each may not have reached the server, or been answered, by then).
pub fn assert_server_counted(o: &Outcome, counted: u64) {
    let c = &o.stats.counters;
    assert!(
        (c.completed..=c.completed + c.in_flight).contains(&counted),
        "the server counted {counted}; metron completed {}, {} in flight: {c:?}",
        c.completed,
        c.in_flight
    );
}

/// The latencies are a server's own `floor_ms` and what it took beyond
/// that: counted from the intended time, the median adds nothing to the
/// median from the send but the generator's own lateness (the send lag),
/// and a millisecond for the two being medians of different sets. A
/// request that waited for a connection or a stream would add that wait.
pub fn assert_nothing_waited(o: &Outcome, floor_ms: f64, what: &str, text: &str) {
    let q = |h: &hdrhistogram::Histogram<u64>| h.value_at_quantile(0.5) as f64 / 1000.0;
    let s = &o.stats;
    let (p50, sent, lag) = (q(&s.latency), q(&s.uncorrected), q(&s.send_lag));
    assert!(
        p50 >= floor_ms,
        "{what}: p50 {p50} ms under {floor_ms} ms\n{text}"
    );
    assert!(
        p50 <= sent + lag + 1.0,
        "{what}: p50 {p50} ms from the intended time, {sent} ms from the send, \
         send lag p50 {lag} ms\n{text}"
    );
}

/// CPU the worker threads used, as a share of the run's wall time.
pub fn cpu_share(o: &Outcome) -> f64 {
    o.stats.cpu().as_secs_f64() / o.stats.window.as_secs_f64()
}

/// Runs the metron binary to completion, within a minute.
pub fn metron(args: &[&str]) -> Output {
    metron_within(args, Duration::from_secs(60))
}

/// Runs the metron binary to completion; one still running after `limit`
/// is killed and fails the test, rather than hanging the suite.
pub fn metron_within(args: &[&str], limit: Duration) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    wait_bounded(child, limit)
}

/// Waits at most `limit` for `child` to exit, reading its piped output
/// meanwhile (a full pipe would otherwise stall it); past the limit it is
/// killed and the test fails.
pub fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    }
    let (out, err) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("metron did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// The error of a run that must fail with exit status 1 and one line on
/// stderr; returns that line.
pub fn one_line_error(o: &Output) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    err
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Whether headless Chromium is there: a failure under CI, a note
/// elsewhere. Returns whether the browser check can go on.
pub fn chromium_ready() -> bool {
    if Command::new("chromium").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must have chromium (see .ci/run)"
    );
    eprintln!("chromium is not installed; browser check skipped");
    false
}
