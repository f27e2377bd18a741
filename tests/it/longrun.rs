//! Long runs: what a run has measured is on disk as it goes, and stays
//! there when the run is killed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use metron::serve::ServeConfig;

use crate::common::files::{corrected, csv_rows};
use crate::common::process::rss_kib;
use crate::common::python::{python_reading, python_ready};
use crate::common::{bench, serial, server, url, TempDir};

/// `--hlog` and `--csv` are written as the run goes: intervals appear in
/// the files while the run is on, and when the run is killed with SIGKILL
/// (nothing of it runs afterwards) every interval that had closed is
/// there, readable by metron and by Python's HdrHistogram and csv module,
/// in order and without gaps.
#[test]
fn the_interval_log_and_csv_are_written_as_the_run_goes_and_survive_sigkill() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let dir = TempDir::new("longrun-kill");
    let log = std::path::PathBuf::from(dir.file("run.hlog", ""));
    let csv = std::path::PathBuf::from(dir.file("run.csv", ""));
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
        .arg("--csv")
        .arg(&csv)
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

    // The CSV has a row for each interval the log has (give or take the
    // one closed between the two writes when the kill came).
    let rows = csv_rows(&csv);
    assert!(rows.len().abs_diff(entries.len()) <= 1, "{rows:?}");
    for (k, r) in rows.iter().enumerate() {
        assert_eq!(
            r["start_s"].as_f64(),
            Some((200 * k) as f64 / 1000.0),
            "{r}"
        );
        assert_eq!(r["intended"].as_u64(), Some(200), "{r}");
    }
}

/// A run that ends as it should: its interval log holds every interval of
/// the window, the last cut short, and its CSV rows add up to the report,
/// with the requests the schedule intended per interval; `metron report
/// FILE.json --csv` writes the same rows from the saved document.
#[test]
fn the_log_and_the_csv_of_a_whole_run_add_up_to_its_report() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let dir = TempDir::new("longrun-csv");
    let csv = dir.file("run.csv", "");
    let json = dir.file("run.json", "");
    let log = dir.file("run.hlog", "");
    let (o, _) = bench(&[
        "-t2",
        "-c4",
        "-R400",
        "-d1700ms",
        "--interval",
        "250ms",
        "--csv",
        &csv,
        "--json",
        &json,
        "--hlog",
        &log,
        &url(&srv, "/"),
    ]);
    let entries = corrected(Path::new(&log));
    let lengths: Vec<u128> = entries.iter().map(|e| e.length.as_millis()).collect();
    assert_eq!(lengths, [250, 250, 250, 250, 250, 250, 200]);
    let total: u64 = entries.iter().map(|e| e.histogram.len()).sum();
    assert_eq!(total, o.stats.counters.completed);

    let rows = csv_rows(Path::new(&csv));
    assert_eq!(rows.len(), 7, "{rows:?}");
    let sum = |col: &str| -> u64 { rows.iter().map(|r| r[col].as_u64().unwrap()).sum() };
    let c = &o.stats.counters;
    assert_eq!(sum("completed"), c.completed);
    assert_eq!(sum("intended"), c.due);
    assert_eq!(sum("errors"), c.errors.lost_requests() + c.errors.status);
    assert_eq!(sum("errors_timeout"), c.errors.timeout);
    assert_eq!(sum("errors_connect"), c.errors.connect);
    assert_eq!(rows[6]["end_s"].as_f64(), Some(1.7));
    for r in &rows {
        assert!(
            r["p99_us"].as_u64().unwrap() >= r["p50_us"].as_u64().unwrap(),
            "{r}"
        );
        assert!(r["send_lag_p99_us"].as_u64().is_some(), "{r}");
    }

    let again = dir.file("again.csv", "");
    let out = crate::common::metron(&["report", &json, "--csv", &again]);
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&again).unwrap(),
        std::fs::read_to_string(&csv).unwrap()
    );
}

/// A file that cannot be written is refused before the run, in one line
/// that names the flag and the directory.
#[test]
fn a_csv_in_a_missing_directory_is_refused_before_the_run() {
    let out = crate::common::metron(&[
        "-d1s",
        "--csv",
        "/no/such/dir/run.csv",
        "http://127.0.0.1:1/",
    ]);
    let err = crate::common::one_line_error(&out);
    assert!(err.contains("--csv"), "{err}");
    assert!(err.contains("there is no directory /no/such/dir"), "{err}");
}

/// Memory stays flat however long the run: with 10 ms intervals, a
/// two-minute run closes 12 000 of them (as many as 3⅓ hours at 1 s), and
/// resident memory does not grow between its 30th second (once the
/// reports' series has filled its points) and its end. The JSON document
/// then holds a bounded series whose points still add up to the totals,
/// and the interval log every interval at its own length.
#[test]
fn memory_stays_flat_over_thousands_of_intervals() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let dir = TempDir::new("longrun-flat");
    let json = dir.file("run.json", "");
    let log = dir.file("run.hlog", "");
    let mut child = Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(["-t2", "-c4", "-R2000", "-d120s", "--interval", "10ms"])
        .args(["--json", &json, "--hlog", &log, &url(&srv, "/")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary runs");
    let start = Instant::now();
    let mut samples = Vec::new();
    for at in [30, 60, 90, 115] {
        let wait = Duration::from_secs(at).saturating_sub(start.elapsed());
        std::thread::sleep(wait);
        if let Some(kib) = rss_kib(child.id()) {
            samples.push(kib);
        }
    }
    let status = child.wait().expect("the run ends");
    assert!(status.success(), "{status:?}");
    assert_eq!(samples.len(), 4, "{samples:?}");
    let (lo, hi) = (samples.iter().min().unwrap(), samples.iter().max().unwrap());
    // Holding every interval would add about 2 KB per interval across the
    // two threads and the main thread: some 17 MB between the first and
    // the last sample. The allocator's arenas may still grow by a megabyte
    // or so after the first (seen: 12.6 MB, 13.2, 14.0, 14.0).
    assert!(
        hi - lo <= 4096,
        "resident memory grew from {lo} KiB to {hi} KiB: {samples:?}"
    );

    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let points = doc["series"]["points"].as_array().unwrap();
    assert!(
        (1000..=2048).contains(&points.len()),
        "{} points",
        points.len()
    );
    let interval = doc["series"]["interval_s"].as_f64().unwrap();
    assert!((interval - 0.08).abs() < 1e-9, "{interval}");
    let sum: u64 = points
        .iter()
        .map(|p| p["completed"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, doc["counters"]["completed"].as_u64().unwrap());
    for t in doc["threads"].as_array().unwrap() {
        let series = t["series"].as_array().unwrap();
        let total: u64 = series.iter().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(total, t["completed"].as_u64().unwrap());
    }
    // Counted by line: decoding twelve thousand intervals' histograms
    // would take this test's own memory into gigabytes.
    let text = std::fs::read_to_string(&log).unwrap();
    let untagged = text
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .count();
    assert!(untagged >= 11_990, "{untagged} intervals");
}
