//! `--dashboard`: the live page in a real browser, the event stream and the
//! JSON endpoint against the run's own counts, `/metrics` as Prometheus
//! text, and the flag's errors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use metron::serve::ServeConfig;

use crate::common::{chromium_ready, serial, server, url, TempDir};

/// A run with `--dashboard` on a free port, its address read from what it
/// prints before the run starts; the rest of its stderr keeps coming on
/// the channel.
fn start(args: &[&str]) -> (Child, String, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the dashboard's address is printed first");
    let addr = line
        .strip_prefix("Dashboard: http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_string();
    (child, addr, rx)
}

/// One GET, the whole response's body (the server closes after it).
fn get(addr: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head");
    (head.to_string(), body.to_string())
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The event stream, read from the start of the run to its end, and the
/// JSON endpoint after it both add up to the report's counts; `/metrics`
/// parses as Prometheus text with the same totals; other paths and
/// methods are refused.
#[test]
fn the_event_stream_and_json_endpoint_add_up_to_the_run() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let dir = TempDir::new("dashboard-sums");
    let doc = dir.file("run.json", "");
    let target = url(&srv, "/");
    let (mut child, addr, _err) = start(&[
        "-t2",
        "-c4",
        "-R1000",
        "-d3s",
        "--interval",
        "250ms",
        "--dashboard",
        "--dashboard-linger",
        "30s",
        "--json",
        &doc,
        &target,
    ]);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let (head, body) = get(&addr, "/events");
    assert!(head.contains("text/event-stream"), "{head}");
    let mut points = Vec::new();
    let mut report = None;
    let mut caught_up = None;
    for event in body.split("\n\n") {
        let kind = event.lines().find_map(|l| l.strip_prefix("event: "));
        let data = event.lines().find_map(|l| l.strip_prefix("data: "));
        match (kind, data) {
            (Some("point"), Some(d)) => points.push(json(d)),
            (Some("caught-up"), Some(d)) => caught_up = Some(d.parse::<usize>().unwrap()),
            (Some("report"), Some(d)) => report = Some(json(d).as_str().unwrap().to_string()),
            _ => {}
        }
    }
    let report = report.expect("the stream ends with the report");
    assert!(report.contains("requests in"), "{report}");
    // Connected as the run began: most intervals came live.
    let live = points.len() - caught_up.expect("a caught-up event");
    assert!(live >= 3, "{live} intervals came after connecting");
    let indices: Vec<u64> = points.iter().map(|p| p["i"].as_u64().unwrap()).collect();
    assert_eq!(indices, (0..points.len() as u64).collect::<Vec<_>>());
    assert_eq!(points.len(), 12, "3 s in 250 ms intervals");
    for p in &points {
        assert!(p["in_flight"].is_u64() && p["waiting"].is_u64(), "{p}");
    }

    let (_, series) = get(&addr, "/series.json");
    let series = json(&series);
    let (_, metrics) = get(&addr, "/metrics");
    let (head, _) = get(&addr, "/nothing");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(s, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").unwrap();
    let mut refused = String::new();
    s.read_to_string(&mut refused).unwrap();
    assert!(refused.starts_with("HTTP/1.1 405"), "{refused}");
    let _ = child.kill();
    let _ = child.wait();

    let doc = json(&std::fs::read_to_string(&doc).unwrap());
    let counters = &doc["counters"];
    let completed = counters["completed"].as_u64().unwrap();
    let due = counters["due"].as_u64().unwrap();
    let sum = |ps: &[serde_json::Value], key: &str| -> u64 {
        ps.iter().map(|p| p[key].as_u64().unwrap_or(0)).sum()
    };
    assert_eq!(sum(&points, "completed"), completed);
    assert_eq!(sum(&points, "intended"), due);
    let kept = series["points"].as_array().unwrap();
    assert_eq!(kept.len(), 12);
    assert_eq!(sum(kept, "completed"), completed);
    assert_eq!(series["totals"]["completed"].as_u64(), Some(completed));
    assert_eq!(series["totals"]["intended"].as_u64(), Some(due));
    assert_eq!(series["config"]["rate"].as_f64(), Some(1000.0));
    assert_eq!(series["report"].as_str(), Some(report.as_str()));

    let samples = prometheus(&metrics);
    let value = |name: &str| samples.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    assert_eq!(
        value("metron_requests_completed_total"),
        Some(completed as f64)
    );
    assert_eq!(value("metron_requests_intended_total"), Some(due as f64));
    assert_eq!(
        value("metron_latency_seconds_count"),
        Some(completed as f64)
    );
    assert_eq!(value("metron_run_over"), Some(1.0));
    assert!(value("metron_requests_in_flight").is_some());
    assert!(value("metron_requests_waiting").is_some());
    let p99 = value("metron_latency_seconds{quantile=\"0.99\"}").unwrap();
    assert!(p99 > 0.0 && p99 < 1.0, "{p99}");
}

/// Parses Prometheus' text format (0.0.4) strictly enough to catch what a
/// scraper refuses: every sample's family has HELP and TYPE lines before
/// it, families are contiguous, names and labels are well formed, values
/// are numbers, and a summary's samples are its quantiles, sum and count.
/// Returns the samples as (name with labels, value).
fn prometheus(text: &str) -> Vec<(String, f64)> {
    let name_ok = |n: &str| {
        let mut cs = n.chars();
        cs.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut types = std::collections::HashMap::new();
    let mut helped = std::collections::HashSet::new();
    let mut done = std::collections::HashSet::new();
    let mut current = String::new();
    let mut samples = Vec::new();
    assert!(text.ends_with('\n'), "the text ends with a newline");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            let (kind, name, tail) = (words.next(), words.next(), words.next());
            let name = name.unwrap_or_else(|| panic!("{line}"));
            assert!(name_ok(name), "{line}");
            match kind {
                Some("HELP") => assert!(helped.insert(name.to_string()), "two HELP: {line}"),
                Some("TYPE") => {
                    let t = tail.unwrap_or_default();
                    assert!(
                        ["counter", "gauge", "summary", "histogram", "untyped"].contains(&t),
                        "{line}"
                    );
                    assert!(
                        types.insert(name.to_string(), t.to_string()).is_none(),
                        "{line}"
                    );
                    if !current.is_empty() {
                        done.insert(std::mem::take(&mut current));
                    }
                    current = name.to_string();
                }
                _ => panic!("unknown comment: {line}"),
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        let v: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {line}"));
        let name = series.split('{').next().unwrap();
        assert!(name_ok(name), "{line}");
        if let Some(labels) = series.strip_prefix(name).filter(|l| !l.is_empty()) {
            let inner = labels
                .strip_prefix('{')
                .and_then(|l| l.strip_suffix('}'))
                .unwrap_or_else(|| panic!("{line}"));
            for pair in inner.split(',') {
                let (k, v) = pair.split_once('=').unwrap_or_else(|| panic!("{line}"));
                assert!(name_ok(k), "{line}");
                assert!(
                    v.len() >= 2 && v.starts_with('"') && v.ends_with('"'),
                    "{line}"
                );
            }
        }
        let family = [
            name,
            name.trim_end_matches("_sum"),
            name.trim_end_matches("_count"),
        ]
        .into_iter()
        .find(|f| types.contains_key(*f))
        .unwrap_or_else(|| panic!("no TYPE before {line}"));
        assert_eq!(family, current, "families are contiguous: {line}");
        assert!(!done.contains(family));
        assert!(helped.contains(family), "no HELP for {line}");
        if types[family] == "summary" && name == family {
            assert!(series.contains("quantile=\""), "{line}");
        }
        samples.push((series.to_string(), v));
    }
    samples
}

/// The page in headless Chromium, opened as the run starts: it receives at
/// least three intervals live, then shows the final report.
#[test]
fn the_page_in_a_browser_follows_the_run_then_shows_the_report() {
    if !chromium_ready() {
        return;
    }
    let _g = serial();
    let srv = server(ServeConfig::default());
    let dir = TempDir::new("dashboard-browser");
    let profile = dir.file("profile-marker", "");
    let profile = std::path::Path::new(&profile).with_file_name("profile");
    let (mut child, addr, _err) = start(&[
        "-t1",
        "-c4",
        "-R500",
        "-d4s",
        "--interval",
        "500ms",
        "--dashboard=127.0.0.1:0",
        "--dashboard-linger",
        "60s",
        &url(&srv, "/"),
    ]);
    let started = Instant::now();
    // Virtual time: the browser waits on the event stream (network time
    // does not count against the budget) and then for the page's work.
    let dom = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("http://{addr}/"))
        .output()
        .expect("chromium runs");
    let _ = child.kill();
    let _ = child.wait();
    let page = String::from_utf8_lossy(&dom.stdout);
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "the browser returned before the run could end"
    );
    let live: usize = page
        .split("data-live=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no live updates in the page: {page}"));
    assert!(live >= 3, "{live} live updates");
    assert!(page.contains("run over"), "{page}");
    assert!(
        page.contains("requests in 4.00s"),
        "the final report is shown: {page}"
    );
    // The charts were drawn: the latency chart holds lines.
    assert!(page.contains("<polyline"), "{page}");
}

/// Bad addresses and a linger without a dashboard are one-line errors.
#[test]
fn bad_dashboard_flags_are_refused_in_one_line() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_metron"))
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["--dashboard=192.0.2.1:80", "-d1s", "http://127.0.0.1:1/"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--dashboard=192.0.2.1:80: cannot listen there"),
        "{err}"
    );
    let o = run(&["--dashboard-linger", "5s", "http://127.0.0.1:1/"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--dashboard-linger only sets"), "{err}");
}
