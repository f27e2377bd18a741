//! Every output parsed back and checked against the run's own counters:
//! the JSON document, its re-rendered reports, the HTML page in a real
//! browser, the time series, the raw histogram and the progress line.

use std::process::Command;
use std::time::Duration;

use crate::common::files::*;
use crate::common::*;
use metron::report::json::Document;
use metron::serve::ServeConfig;

#[test]
fn the_json_document_matches_the_run() {
    let _g = serial();
    let srv = stalling();
    let path = tmp("run.json");
    let (u, p) = (url(&srv, "/"), path.to_str().unwrap().to_string());
    let (o, _) = bench(&["-t2", "-c8", "-R500", "-d3s", "--json", &p, &u]);
    let doc: Document = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let c = o.stats.counters;
    assert_eq!(doc.schema, 1);
    assert_eq!(doc.counters, c);
    assert_eq!(doc.config.rate, Some(500.0));
    // The window began within the last minute, as a Unix time in ms.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let start = doc.window_start_ms.expect("the window's start");
    assert!(
        start < now_ms && now_ms - start < 60_000,
        "{start} {now_ms}"
    );
    assert_eq!((doc.config.threads, doc.config.connections), (2, 8));
    assert_eq!(doc.latency.corrected.count, c.completed);
    assert_eq!(doc.latency.send_lag.count, c.due - c.never_sent);
    // The per-second series covers the window and adds up to the totals.
    assert_eq!(doc.series.points.len(), 3);
    assert_eq!(
        doc.series.points.iter().map(|p| p.completed).sum::<u64>(),
        c.completed
    );
    assert_eq!(
        doc.series.points.iter().map(|p| p.errors).sum::<u64>(),
        c.errors.lost_requests() + c.errors.status
    );
    // The stall in the second second shows in that second's tail.
    let p99: Vec<u64> = doc
        .series
        .points
        .iter()
        .map(|p| p.p99.unwrap_or(0))
        .collect();
    assert!(p99[1] > 100_000 && p99[0] < 50_000, "{p99:?}");
    let threads: u64 = doc
        .threads
        .iter()
        .map(|t| t.series.iter().sum::<u64>())
        .sum();
    assert_eq!(threads, c.completed);
    let p = |s: &metron::report::json::Summary, q: f64| {
        s.percentiles
            .iter()
            .find(|(x, _)| *x == q)
            .unwrap()
            .1
            .unwrap()
    };
    assert_eq!(
        p(&doc.latency.corrected, 99.0),
        metron::stats::summary::value_at_percentile(&o.stats.latency, 99.0)
    );
    assert_eq!(
        doc.latency.corrected.spectrum.last().unwrap().2,
        c.completed
    );
    // The histograms survive the round trip.
    let back = doc.stats().unwrap();
    assert_eq!(back.latency, o.stats.latency);
    assert_eq!(back.uncorrected, o.stats.uncorrected);
}

/// `metron report` re-renders the text report from the document, byte for
/// byte what the run printed.
#[test]
fn metron_report_reproduces_the_text_report() {
    let _g = serial();
    let srv = stalling();
    let path = tmp("again.json");
    let p = path.to_str().unwrap();
    let run = metron(&[
        "-t2",
        "-c8",
        "-R500",
        "-d2s",
        "-L",
        "-U",
        "--json",
        p,
        &url(&srv, "/"),
    ]);
    assert!(run.status.success());
    let again = metron(&["report", p]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&run.stdout)
    );
}

#[test]
fn json_on_stdout_leaves_the_text_report_on_stderr() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let o = Proto::Http1.json_on_stdout(&srv);
    assert!(o.status.success());
    let doc: Document = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    assert_eq!(doc.counters.completed, 100);
    assert!(String::from_utf8_lossy(&o.stderr).contains("Requests/sec:"));
}

#[test]
fn broken_documents_are_one_line_errors() {
    let bad = tmp("bad.json");
    std::fs::write(&bad, "{\"schema\": 99}").unwrap();
    let o = metron(&["report", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("schema 99") && err.trim_end().lines().count() == 1,
        "{err}"
    );
    std::fs::write(&bad, "not json").unwrap();
    let err =
        String::from_utf8_lossy(&metron(&["report", bad.to_str().unwrap()]).stderr).into_owned();
    assert!(err.contains("not JSON"), "{err}");
    let err = String::from_utf8_lossy(&metron(&["report", "/no/such.json"]).stderr).into_owned();
    assert!(err.contains("cannot read /no/such.json"), "{err}");
    // An interval log given where a document belongs points to merge.
    let log = tmp("given.hlog");
    std::fs::write(&log, "#[Histogram log format version 1.3]\n").unwrap();
    let l = log.to_str().unwrap();
    let err = String::from_utf8_lossy(&metron(&["report", l]).stderr).into_owned();
    assert!(
        err.contains(&format!("metron merge {l} prints its report")),
        "{err}"
    );
}

#[test]
fn an_unwritable_output_is_a_clear_error_after_the_report() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    // A missing directory is refused before the run (tests/cli.rs); a path
    // that names a directory passes that check and fails only at write
    // time, after the run: the report is still printed.
    let dir = tmp("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let o = metron(&["-t1", "-c1", "-R10", "-d1s", "--json", d, &url(&srv, "/")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("Requests/sec:"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("cannot write --json {d}")), "{err}");
}

/// The HTML page opens in headless Chromium without errors (CI installs
/// Chromium; elsewhere the check is skipped when it is missing).
#[test]
fn the_html_report_renders_in_a_browser() {
    let _g = serial();
    let srv = stalling();
    let html = tmp("run.html");
    let h = html.to_str().unwrap();
    let (o, _) = bench(&["-t2", "-c8", "-R500", "-d2s", "--html", h, &url(&srv, "/")]);
    assert_balanced(&o);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(
        page.contains(&srv.addr().to_string()),
        "the page names the target"
    );
    if !chromium_ready() {
        return;
    }
    let shot = tmp("run.png");
    let check = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/check_html.sh"))
        .args([h, shot.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

/// The wrk fork's three raw outputs, in its forms: thread rows during the
/// run, before the report; the series and the histogram after it. Each
/// adds up to the requests completed.
#[test]
fn timeseries_and_histogram_add_up_to_the_completed_requests() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let path = tmp("series.json");
    let (u, p) = (url(&srv, "/"), path.to_str().unwrap().to_string());
    let o = metron(&[
        "-t2",
        "-c4",
        "-R400",
        "-d1s",
        "--timeseries",
        "--thread-timeseries",
        "--histogram",
        "--json",
        &p,
        &u,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Document = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let out = stdout(&o);
    let after = |header: &str| -> &str {
        let at = out
            .find(header)
            .unwrap_or_else(|| panic!("no {header:?} in {out}"));
        &out[at + header.len()..]
    };
    // Thread rows: right-aligned under the header, all before the report.
    let rows: Vec<&str> = after("\nTHREAD  |  EPOCH  |  REQUESTS\n")
        .lines()
        .take_while(|l| !l.starts_with("  Thread Stats"))
        .collect();
    assert!(after("  Thread Stats").contains("Request counts time series"));
    let rows: Vec<[u64; 3]> = rows
        .iter()
        .map(|l| {
            let f: Vec<u64> = l.split_whitespace().map(|f| f.parse().unwrap()).collect();
            assert_eq!(*l, format!("{:>6}{:>10}{:>13}", f[0], f[1], f[2]));
            [f[0], f[1], f[2]]
        })
        .collect();
    assert_eq!(rows.len(), 8, "4 intervals of 2 threads: {out}");
    for (j, t) in doc.threads.iter().enumerate() {
        let mine = rows.iter().filter(|r| r[0] == j as u64);
        let intervals: Vec<u64> = mine.clone().map(|r| r[1]).collect();
        assert_eq!(intervals, [0, 1, 2, 3]);
        assert_eq!(mine.map(|r| r[2]).sum::<u64>(), t.completed);
    }
    let completed = doc.counters.completed;
    assert_eq!(completed, 400);
    // Bare counts after their headers.
    let bare =
        |text: &str| -> Vec<u64> { text.lines().map_while(|l| l.parse::<u64>().ok()).collect() };
    let total = bare(after("Request counts time series (interval = 250ms) \n"));
    assert_eq!(total.len(), 4);
    assert_eq!(total.iter().sum::<u64>(), completed);
    let hist = after("Latency histogram (bin width = 1us)\n");
    let counts = bare(hist);
    assert_eq!(
        counts.len(),
        hist.lines().count(),
        "the histogram ends the output"
    );
    assert_eq!(counts.iter().sum::<u64>(), completed);
    assert_ne!(counts.last(), Some(&0), "up to the last non-empty bin");
}

/// On a terminal a progress line shows on stderr; --quiet, or a pipe,
/// keeps it away.
#[test]
fn progress_shows_on_a_terminal_only() {
    let _g = serial();
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("no 'script' command to provide a terminal; skipped");
        return;
    }
    let srv = server(ServeConfig::default());
    let bin = env!("CARGO_BIN_EXE_metron");
    let cmd = format!("{bin} -t1 -c2 -R100 -d3s {}", url(&srv, "/"));
    let tty = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&tty.stdout);
    assert!(
        shown.contains(" req/s  p99 ") && shown.contains("/ 3s]"),
        "{shown}"
    );
    let quiet = Command::new("script")
        .args(["-qec", &format!("{cmd} --quiet"), "/dev/null"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&quiet.stdout).contains(" req/s  p99 "));
    let piped = metron(&["-t1", "-c2", "-R100", "-d1s", &url(&srv, "/")]);
    assert!(String::from_utf8_lossy(&piped.stderr).is_empty());
}

/// The interval log holds every measured request under each tag, one
/// interval per second, and `metron merge` adds logs up.
#[test]
fn the_interval_log_holds_every_request_and_merges() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let (a, b) = (tmp("a.hlog"), tmp("b.hlog"));
    let (pa, pb) = (a.to_str().unwrap(), b.to_str().unwrap());
    let (oa, _) = bench(&["-t2", "-c4", "-R500", "-d2s", "--hlog", pa, &url(&srv, "/")]);
    let (ob, _) = bench(&["-t1", "-c2", "-R300", "-d1s", "--hlog", pb, &url(&srv, "/")]);
    let entries = metron::report::hlog::read_log(&a).unwrap();
    let count = |tag: Option<&str>| -> u64 {
        entries
            .iter()
            .filter(|e| e.tag.as_deref() == tag)
            .map(|e| e.histogram.len())
            .sum()
    };
    let c = oa.stats.counters;
    assert_eq!(count(None), c.completed);
    assert_eq!(count(Some("uncorrected")), c.completed);
    assert_eq!(count(Some("send-lag")), c.due - c.never_sent);
    assert_eq!(
        entries.iter().filter(|e| e.tag.is_none()).count(),
        2,
        "one interval a second"
    );
    let merged = metron(&["merge", pa, pb]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    let out = stdout(&merged);
    let total = c.completed + ob.stats.counters.completed;
    assert!(
        out.contains(&format!("Total count    = {total:>12}]")),
        "{out}"
    );
    let bad = metron(&["merge", "/no/such.hlog"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("/no/such.hlog"), "{}", stderr(&bad));
}

/// A run that is not a whole number of intervals: its last interval ends
/// where the run does, so `merge` measures the run's own window.
#[test]
fn the_interval_log_ends_with_the_run() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let log = tmp("short.hlog");
    let p = log.to_str().unwrap();
    let (o, _) = bench(&[
        "-t1",
        "-c2",
        "-R200",
        "-d1500ms",
        "--hlog",
        p,
        &url(&srv, "/"),
    ]);
    let entries = metron::report::hlog::read_log(&log).unwrap();
    let lengths: Vec<Duration> = entries
        .iter()
        .filter(|e| e.tag.is_none())
        .map(|e| e.length)
        .collect();
    assert_eq!(
        lengths,
        [Duration::from_secs(1), Duration::from_millis(500)]
    );
    let merged = metron(&["merge", p]);
    let out = stdout(&merged);
    let completed = o.stats.counters.completed;
    assert!(
        out.contains(&format!("  {completed} requests in 1.50s")),
        "{out}"
    );
}

/// The document a run writes validates against the published JSON Schema
/// (docs/result.schema.json), and the schema rejects a broken document.
#[test]
fn the_json_document_follows_its_published_schema() {
    let _g = serial();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../docs/result.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema itself is valid");
    let srv = stalling();
    let o = metron(&[
        "-t2",
        "-c4",
        "-R300",
        "-d2s",
        "--json",
        "-",
        &url(&srv, "/"),
    ]);
    assert!(o.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let mut broken = doc.clone();
    broken["counters"]["due"] = serde_json::json!(-1);
    broken.as_object_mut().unwrap().remove("series");
    assert_eq!(validator.iter_errors(&broken).count(), 2);
}

/// A run that sent nothing (its script fails in the first `request()`)
/// measured no latency: the report prints dashes, the document `null`, the
/// CSV empty cells, never a latency of 0; the document still follows its
/// schema, and `metron report` prints it the same way again.
#[test]
fn a_run_that_sent_nothing_prints_no_latency_as_zero() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let dir = TempDir::new("sent-nothing");
    let script = dir.file(
        "fails.lua",
        "request = function()\n  error(\"no request today\")\nend\n",
    );
    let json = dir.file("run.json", "");
    let csv = dir.file("run.csv", "");
    let o = metron(&[
        "-t1",
        "-c1",
        "-R100",
        "-d1s",
        "-s",
        &script,
        "--json",
        &json,
        "--csv",
        &csv,
        &url(&srv, "/"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("  Send lag: p50 -, p99 -, max -\n"), "{out}");
    // (The window, "150.00us", may end in the same digits.)
    assert!(!out.contains(" 0.00us"), "{out}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors = schema_errors(&doc);
    assert!(errors.is_empty(), "{errors:#?}");
    let lag = &doc["latency"]["send_lag"];
    assert_eq!(lag["count"], 0);
    assert!(lag["max"].is_null() && lag["mean"].is_null(), "{lag}");
    assert!(lag["percentiles"][4][1].is_null(), "{lag}");
    for p in doc["series"]["points"].as_array().unwrap() {
        assert!(p["p99"].is_null() && p["max"].is_null(), "{p}");
    }
    let rows = std::fs::read_to_string(&csv).unwrap();
    for row in rows.lines().skip(1) {
        let cells: Vec<&str> = row.split(',').collect();
        assert!(cells[11..16].iter().all(|c| c.is_empty()), "{row}");
    }
    let again = metron(&["report", &json]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("  Send lag: p50 -, p99 -, max -\n"),
        "{}",
        stdout(&again)
    );
}
