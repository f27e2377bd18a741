//! Shared helpers for the end-to-end tests: a built-in target on
//! 127.0.0.1:0, runs of metron through its library, and a lock that keeps
//! the timing-sensitive runs of one test binary from overlapping on a
//! small machine.

pub mod judged;
pub mod modules;

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use clap::Parser;
use metron::cli::config::Config;
use metron::cli::BenchArgs;
use metron::engine::{Outcome, Stop};
use metron::serve::{ServeConfig, Server};

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

/// The accounting identity every run must satisfy.
pub fn assert_balanced(o: &Outcome) {
    let c = &o.stats.counters;
    assert!(c.balanced(), "accounting does not add up: {c:?}");
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

/// A fresh directory for one test's files, removed when dropped.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("metron-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn file(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// tests/hlog_check.py: reads an interval log with Python's HdrHistogram.
const HLOG_CHECK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/hlog_check.py");

/// Where python3 and the package are missing: a failure under CI, a note
/// elsewhere. Returns whether the check can go on.
pub fn python_ready() -> bool {
    let probe = Command::new("python3")
        .args(["-c", "import hdrh.log, hdrh.histogram"])
        .output();
    let why = match probe {
        Err(e) => format!("cannot run python3: {e}"),
        Ok(out) if !out.status.success() => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr.lines().last().unwrap_or("").to_owned();
            format!(
                "python3 cannot import the hdrhistogram package ({last}); pip install hdrhistogram"
            )
        }
        Ok(_) => return true,
    };
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("note: Python cross-check of the interval log skipped: {why}");
    false
}

pub fn python_reading(log: &std::path::Path) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(HLOG_CHECK)
        .arg(log)
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "hlog_check.py failed: {stderr}");
    serde_json::from_slice(&out.stdout).expect("hlog_check.py prints JSON")
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
