//! Long runs: what a run has measured is on disk as it goes, and stays
//! there when the run is killed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use metron::report::hlog::{read_log, LogEntry};
use metron::serve::ServeConfig;

mod common;
use common::{bench, python_reading, python_ready, serial, server, url, TempDir};

/// The untagged (corrected latency) entries of an interval log.
fn corrected(log: &Path) -> Vec<LogEntry> {
    read_log(log)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.tag.is_none())
        .collect()
}

/// `--hlog` is written as the run goes: intervals appear in the file while
/// the run is on, and when the run is killed with SIGKILL (nothing of it
/// runs afterwards) every interval that had closed is there, readable by
/// metron and by Python's HdrHistogram, in order and without gaps.
#[test]
fn the_interval_log_is_written_as_the_run_goes_and_survives_sigkill() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let dir = TempDir::new("longrun-kill");
    let log = std::path::PathBuf::from(dir.file("run.hlog", ""));
    let target = url(&srv, "/");
    let mut child = Command::new(env!("CARGO_BIN_EXE_metron"))
        .args([
            "-t2",
            "-c4",
            "-R1000",
            "-d60s",
            "--interval",
            "200ms",
            "--hlog",
        ])
        .arg(&log)
        .arg(&target)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary runs");
    // Intervals close every 200 ms and reach the file within about a
    // second; wait for at least eight, for at most 30 s.
    let start = Instant::now();
    let mut seen = 0;
    while seen < 8 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
        seen = corrected(&log).len();
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        seen >= 8,
        "{seen} intervals in the log after 30 s of the run"
    );

    let entries = corrected(&log);
    assert!(entries.len() >= seen, "{} < {seen}", entries.len());
    let first = entries[0].start;
    for (k, e) in entries.iter().enumerate() {
        assert_eq!(e.length, Duration::from_millis(200), "{k}");
        assert_eq!(
            e.start - first,
            Duration::from_millis(200) * k as u32,
            "{k}"
        );
    }
    // Paced at 1000/s, a whole 200 ms interval holds about 200 responses;
    // nothing of the run is left out of an interval that closed.
    let total: u64 = entries.iter().map(|e| e.histogram.len()).sum();
    let n = entries.len() as u64;
    assert!(
        total >= 150 * (n - 1) && total <= 250 * n,
        "{total} responses in {n} intervals of 200 ms at 1000/s"
    );
    assert!(total <= srv.stats().responses_total());

    if python_ready() {
        let seen = python_reading(&log);
        assert_eq!(seen["total_count"].as_u64(), Some(total), "{seen}");
    }
}

/// A run that ends as it should writes the same log as before: every
/// interval of the window, the last cut short, summing to the report.
#[test]
fn a_streamed_log_adds_up_to_the_report() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let dir = TempDir::new("longrun-whole");
    let log = std::path::PathBuf::from(dir.file("run.hlog", ""));
    let (o, _) = bench(&[
        "-t2",
        "-c4",
        "-R400",
        "-d1700ms",
        "--interval",
        "250ms",
        "--hlog",
        log.to_str().unwrap(),
        &url(&srv, "/"),
    ]);
    let entries = corrected(&log);
    let lengths: Vec<u128> = entries.iter().map(|e| e.length.as_millis()).collect();
    assert_eq!(lengths, [250, 250, 250, 250, 250, 250, 200]);
    let total: u64 = entries.iter().map(|e| e.histogram.len()).sum();
    assert_eq!(total, o.stats.counters.completed);
}
