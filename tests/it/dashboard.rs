//! `--dashboard`: the live page in a real browser, the event stream and the
//! JSON endpoint against the run's own counts, `/metrics` as Prometheus
//! text, and the flag's errors.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use metron::serve::ServeConfig;

use crate::common::dashboard::*;
use crate::common::{chromium_ready, serial, server, stderr, stdout, url, wait_bounded, TempDir};

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
    // Each point has what was outstanding at its end: at the last, the
    // end of the run, that is the report's own count.
    let last = points.last().unwrap();
    assert_eq!(
        last["in_flight"], counters["in_flight"],
        "{last} {counters}"
    );
    assert_eq!(last["waiting"], counters["never_sent"], "{last} {counters}");
    let kept = series["points"].as_array().unwrap();
    assert_eq!(kept.len(), 12);
    assert_eq!(sum(kept, "completed"), completed);
    assert_eq!(series["totals"]["completed"].as_u64(), Some(completed));
    assert_eq!(series["totals"]["intended"].as_u64(), Some(due));
    assert_eq!(series["config"]["rate"].as_f64(), Some(1000.0));
    assert_eq!(series["config"]["offered"], serde_json::json!(["HTTP/1.1"]));
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
    // After the run the gauges are the report's.
    assert_eq!(
        value("metron_requests_in_flight"),
        counters["in_flight"].as_f64()
    );
    assert_eq!(
        value("metron_requests_waiting"),
        counters["never_sent"].as_f64()
    );
    // Prometheus' histogram_quantile over the buckets lands in the bucket
    // of the report's own p99, or the next one.
    let buckets: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|(n, v)| {
            let le = n.strip_prefix("metron_latency_seconds_bucket{le=\"")?;
            let le = le.strip_suffix("\"}")?;
            Some((le.parse::<f64>().unwrap_or(f64::INFINITY), *v))
        })
        .collect();
    assert!(buckets.len() > 50, "{buckets:?}");
    assert_eq!(buckets.last(), Some(&(f64::INFINITY, completed as f64)));
    assert!(buckets
        .windows(2)
        .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    let estimate = histogram_quantile(0.99, &buckets);
    let p99 = corrected_percentile_s(&doc, 99.0);
    let bucket_of = |x: f64| buckets.iter().position(|(le, _)| x <= *le).unwrap();
    let (theirs, ours) = (bucket_of(estimate) as i64, bucket_of(p99) as i64);
    assert!(
        (theirs - ours).abs() <= 1,
        "histogram_quantile {estimate} s against p99 {p99} s: {buckets:?}"
    );
}

/// Prometheus' `histogram_quantile`: the bucket where the rank falls,
/// interpolated linearly from the bound below it.
fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
    let total = buckets.last().unwrap().1;
    let rank = q * total;
    let i = buckets.iter().position(|(_, n)| *n >= rank).unwrap();
    let (lower, below) = if i == 0 { (0.0, 0.0) } else { buckets[i - 1] };
    let (upper, count) = buckets[i];
    if upper.is_infinite() {
        return lower;
    }
    lower + (upper - lower) * (rank - below) / (count - below)
}

/// A flow's steps live: each point of the event stream carries every
/// step's answers, errors and percentiles in the interval, the totals and
/// `/metrics` each step's whole window, and the CSV a row per step and
/// interval; all of them add up to the report's figures for each step.
#[test]
fn a_flows_steps_have_their_figures_in_every_live_output() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let flow = crate::common::files::lua_file(
        "dashboard_steps.lua",
        r#"function flow(visit)
             http.get("/", { name = "home" })
             if visit.id % 4 == 0 then
               http.get("/status/503", { name = "busy" })
             end
           end"#,
    );
    let flow = flow.display().to_string();
    let dir = TempDir::new("dashboard-steps");
    let doc = dir.file("run.json", "");
    let csv = dir.file("run.csv", "");
    let target = url(&srv, "/");
    let (mut child, addr, _err) = start(&[
        "-t2",
        "-c4",
        "-R200",
        "-d2s",
        "--interval",
        "250ms",
        "-s",
        &flow,
        "--dashboard",
        "--dashboard-linger",
        "30s",
        "--json",
        &doc,
        "--csv",
        &csv,
        &target,
    ]);
    let (_, body) = get(&addr, "/events");
    let points: Vec<serde_json::Value> = body
        .split("\n\n")
        .filter(|e| e.lines().any(|l| l == "event: point"))
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(json)
        .collect();
    assert!(
        points.iter().all(|p| p["visits"] == true),
        "intended counts visits"
    );
    let (_, series) = get(&addr, "/series.json");
    let series = json(&series);
    let (_, metrics) = get(&addr, "/metrics");
    let _ = child.kill();
    let _ = child.wait();

    let doc = json(&std::fs::read_to_string(&doc).unwrap());
    let steps = doc["endpoints"].as_array().expect("steps in the document");
    let names: Vec<&str> = steps.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["home", "busy"], "{doc}");
    let rows = crate::common::files::csv_rows(std::path::Path::new(&csv));
    let whole: Vec<&serde_json::Value> = rows.iter().filter(|r| r["endpoint"].is_null()).collect();
    assert_eq!(whole.len(), 8, "2 s in 250 ms intervals: {rows:?}");
    let completed: u64 = whole.iter().map(|r| r["completed"].as_u64().unwrap()).sum();
    assert_eq!(Some(completed), doc["counters"]["completed"].as_u64());
    let samples = prometheus(&metrics);
    let value = |name: &str| samples.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    for step in steps {
        let name = step["name"].as_str().unwrap();
        let (done, errors) = (
            step["completed"].as_u64().unwrap(),
            step["errors"].as_u64().unwrap(),
        );
        assert!(done > 0, "{step}");
        if name == "busy" {
            assert_eq!(errors, done, "every busy answer is a 503: {step}");
        } else {
            assert_eq!(errors, 0, "{step}");
        }
        let in_points = |key: &str| -> u64 {
            points
                .iter()
                .flat_map(|p| p["endpoints"].as_array().into_iter().flatten())
                .filter(|e| e["name"] == name)
                .map(|e| e[key].as_u64().unwrap())
                .sum()
        };
        assert_eq!(
            (in_points("completed"), in_points("errors")),
            (done, errors),
            "{name}"
        );
        let total = series["totals"]["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name} in the totals: {series}"));
        assert_eq!(
            (total["completed"].as_u64(), total["errors"].as_u64()),
            (Some(done), Some(errors))
        );
        let p99 = step["latency"]["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|pv| pv[0].as_f64() == Some(99.0))
            .map(|pv| pv[1].clone());
        assert_eq!(Some(&total["p99"]), p99.as_ref(), "{name}");
        assert_eq!(total["max"], step["latency"]["max"], "{name}");
        let label = format!("{{endpoint=\"{name}\"}}");
        assert_eq!(
            value(&format!("metron_endpoint_requests_completed_total{label}")),
            Some(done as f64)
        );
        assert_eq!(
            value(&format!("metron_endpoint_requests_errors_total{label}")),
            Some(errors as f64)
        );
        assert_eq!(
            value(&format!("metron_endpoint_latency_seconds_count{label}")),
            Some(done as f64)
        );
        let mine: Vec<&serde_json::Value> = rows.iter().filter(|r| r["endpoint"] == name).collect();
        let sum = |key: &str| -> u64 { mine.iter().map(|r| r[key].as_u64().unwrap()).sum() };
        assert_eq!(
            (sum("completed"), sum("errors")),
            (done, errors),
            "{name}: {mine:?}"
        );
        for r in &mine {
            assert!(
                r["intended"].is_null() && r["send_lag_p99_us"].is_null(),
                "{r}"
            );
            let answered = r["completed"].as_u64().unwrap() > 0;
            assert_eq!(r["p99_us"].is_u64(), answered, "{r}");
        }
    }
}

/// Series names can come from a script (a flow's steps, a requests
/// file's names): the page sets them as text, so a name that looks like
/// markup (`<img src=x onerror=...>`) shows as typed and runs nothing.
#[test]
fn the_page_puts_names_in_as_text_never_as_markup() {
    let sets_markup: Vec<&str> = PAGE
        .lines()
        .filter(|l| l.contains("innerHTML") && l.contains("name"))
        .collect();
    assert!(sets_markup.is_empty(), "{sets_markup:#?}");
    assert!(page_function("draw").contains("createTextNode(s.name)"));
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
        // Long enough that a browser slow to start on a busy machine
        // still joins while the run goes on (8 s was not, once, with the
        // whole suite running beside it).
        "-d15s",
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
            "--virtual-time-budget=17000",
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
        page.contains("requests in 15.00s"),
        "the final report is shown: {page}"
    );
    // The configuration says what the connections speak.
    assert!(
        page.contains("<td>protocol</td><td>HTTP/1.1</td>"),
        "{page}"
    );
    // The charts were drawn: the latency chart holds lines.
    assert!(page.contains("<polyline"), "{page}");
}

/// With no terminal on stdin or stdout (a CI job) nobody can press
/// Ctrl-C: without --dashboard-linger the process ends with the run, and
/// says so, rather than keep the page up for ever.
#[test]
fn without_a_terminal_the_dashboard_ends_with_the_run() {
    let srv = server(ServeConfig::default());
    let child = Command::new(env!("CARGO_BIN_EXE_metron"))
        .args([
            "-t1",
            "-c2",
            "-R100",
            "-d1s",
            "--dashboard",
            &url(&srv, "/"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Far more than the run; a dashboard kept up would be killed here.
    let o = wait_bounded(child, Duration::from_secs(30));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("Dashboard: closed with the run"), "{err}");
    assert!(!err.contains("until Ctrl-C"), "{err}");
    assert!(stdout(&o).contains("requests in"));
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

/// The charts' axes tick at round values (0, 50, 100, 150 ms), not at
/// fifths of the maximum (56.68 ms, 113.36 ms), and their labels drop the
/// zeros a round value does not need.
#[test]
fn the_page_ticks_its_axes_at_round_values() {
    if !node_ready() {
        return;
    }
    let script = format!(
        "{}{}{}",
        page_function("niceTicks"),
        page_function("trimZeros"),
        r#"
console.log(JSON.stringify([
  niceTicks(141700 * 1.04, 4),
  niceTicks(9.5, 4),
  niceTicks(0, 4),
  niceTicks(0.3, 4),
  ["50.00ms", "2.50ms", "100us", "1.20k", "0"].map(trimZeros),
]));
"#
    );
    let out = node(&script);
    assert_eq!(
        out.trim(),
        "[[0,50000,100000,150000],[0,2.5,5,7.5,10],[0,0.25,0.5,0.75,1],\
         [0,0.1,0.2,0.3],[\"50ms\",\"2.5ms\",\"100us\",\"1.2k\",\"0\"]]"
    );
}
