//! The shards of one run as a real Prometheus sees them: three metron
//! processes (`--shard I/3 --start-at`, each with `--dashboard`) scraped
//! every second by Debian's `prometheus`, whose HTTP API then answers
//! every query of deploy/grafana/metron.json, and whose
//! `histogram_quantile` over the added histograms lands in the bucket of
//! `metron merge`'s exact p99 of the shards' documents, or the next.
//!
//! Without prometheus installed the check skips with a note, except under
//! CI, which installs it (.ci/run).

use std::fs;
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::common::dashboard::{corrected_percentile_s, get, samples};
use crate::common::files::read_json;
use crate::common::grafana;
use crate::common::process::serve_on;
use crate::common::prometheus::{free_ports, ready, value_of, Prometheus};
use crate::common::{metron, serial, stderr, stdout, TempDir};

/// Total requests per second of the three shards, and the run's length.
const RATE: u32 = 300;
const SECONDS: u32 = 12;
const SHARDS: usize = 3;

/// Processes the test started, ended when it ends, passed or not.
struct Started(Vec<Child>);

impl Drop for Started {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn prometheus_adds_the_shards_up_to_the_merge_and_answers_every_panel() {
    if !ready() {
        return;
    }
    let _g = serial();
    let began = Instant::now();
    let dir = TempDir::new("prometheus");
    let ports = free_ports(SHARDS + 2);
    let (target_port, prom_port, shard_ports) = (ports[0], ports[1], &ports[2..]);
    let mut started = Started(Vec::new());

    // The target: `metron serve`, as a user would start it.
    let (serve, url) = serve_on(&format!("127.0.0.1:{target_port}"), &[]);
    started.0.push(serve);

    let targets: Vec<String> = shard_ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    let prom = Prometheus::start(dir.path(), prom_port, &targets);
    // Prometheus takes up new targets some seconds after it starts: the
    // run begins once it tries all three (each has an `up` series, 0 while
    // nothing listens), so that it sees each from its first request.
    prom.wait_for_targets(SHARDS);

    // The shards: one schedule from a common start two seconds ahead,
    // each page kept up after the run long enough to be scraped.
    let start_at = (now() + 2.5).floor();
    let end_at = start_at + f64::from(SECONDS);
    for (i, addr) in targets.iter().enumerate() {
        let log = fs::File::create(dir.path().join(format!("shard-{i}.log"))).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_metron"))
            .args(["-t1", "-c2", "-d", &format!("{SECONDS}s")])
            .args(["-R", &RATE.to_string()])
            .args(["--shard", &format!("{i}/{SHARDS}")])
            .args(["--start-at", &start_at.to_string()])
            .arg(format!("--dashboard={addr}"))
            .args(["--dashboard-linger", "40s"])
            .arg("--json")
            .arg(dir.path().join(format!("shard-{i}.json")))
            .arg(&url)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("metron starts");
        started.0.push(child);
    }
    let logs = || {
        (0..SHARDS)
            .map(|i| {
                fs::read_to_string(dir.path().join(format!("shard-{i}.log"))).unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("\n---\n")
    };

    // Before the run: every shard's /metrics parses, each series labelled
    // with its shard.
    for (i, addr) in targets.iter().enumerate() {
        let listening = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).is_err() {
            assert!(
                Instant::now() < listening,
                "shard {i}'s dashboard is not up:\n{}",
                logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let (_, text) = get(addr, "/metrics");
        let all = samples(&text);
        assert!(!all.is_empty(), "{text}");
        let want = format!("{i}/{SHARDS}");
        for s in &all {
            assert_eq!(s.label("shard"), Some(want.as_str()), "{s:?}");
        }
    }

    // Wait for the run's end as Prometheus saw it: every shard scraped
    // with its run over, so its last scrape has the final figures.
    let deadline = Instant::now() + Duration::from_secs(u64::from(SECONDS) + 25);
    loop {
        let over = prom.scalar("sum(metron_run_over)", now());
        if over == Some(SHARDS as f64) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus never saw the {SHARDS} runs end (metron_run_over summed to {over:?}):\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let at = now();

    // The shards' documents, and their merge.
    let files: Vec<String> = (0..SHARDS)
        .map(|i| {
            dir.path()
                .join(format!("shard-{i}.json"))
                .display()
                .to_string()
        })
        .collect();
    let docs: Vec<Value> = files
        .iter()
        .map(|f| read_json(std::path::Path::new(f)))
        .collect();
    let merged_path = dir.path().join("merged.json").display().to_string();
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--json", &merged_path]);
    let out = metron(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Merged from 3 instances"));
    let merged: Value = read_json(std::path::Path::new(&merged_path));
    let counters = &merged["counters"];
    let count = |c: &Value, k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} in {c}"));
    let completed = count(counters, "completed");
    assert!(completed > u64::from(RATE * SECONDS) * 9 / 10, "{counters}");

    // Counts: Prometheus' sums are the merge's, exactly; each shard's
    // series are its own document's.
    let sum = |expr: &str| {
        prom.scalar(expr, at)
            .unwrap_or_else(|| panic!("{expr}: no data"))
    };
    assert_eq!(
        sum("sum(metron_requests_completed_total)"),
        completed as f64
    );
    assert_eq!(sum("sum(metron_latency_seconds_count)"), completed as f64);
    // Every answer by its status code, as the merge counts them.
    assert_eq!(
        sum("sum(metron_responses_total{code=\"200\"})"),
        counters["status_codes"]["200"].as_u64().unwrap() as f64
    );
    assert_eq!(sum("sum(metron_responses_total)"), completed as f64);
    assert_eq!(sum("sum(metron_ttfb_seconds_count)"), completed as f64);
    assert_eq!(
        sum("sum(metron_requests_intended_total)"),
        count(counters, "due") as f64
    );
    for (i, d) in docs.iter().enumerate() {
        assert_eq!(
            sum(&format!(
                "metron_requests_completed_total{{shard=\"{i}/{SHARDS}\"}}"
            )),
            count(&d["counters"], "completed") as f64,
            "shard {i}"
        );
    }
    let unlabelled = prom.query("{__name__=~\"metron_.+\",shard=\"\"}", at);
    assert!(
        unlabelled.is_empty(),
        "series without a shard: {unlabelled:?}"
    );
    let shards = prom.api(
        "/api/v1/label/shard/values",
        &[("match[]", "metron_requests_completed_total")],
    );
    assert_eq!(shards, serde_json::json!(["0/3", "1/3", "2/3"]));

    // The merged p99 as Prometheus estimates it from the added buckets,
    // against the merge's exact one: the same bucket, or the next.
    let buckets: Vec<(f64, f64)> = {
        let mut b: Vec<(f64, f64)> = prom
            .query("sum by (le) (metron_latency_seconds_bucket)", at)
            .iter()
            .map(|s| {
                let le = s["metric"]["le"].as_str().unwrap();
                (le.parse::<f64>().unwrap_or(f64::INFINITY), value_of(s))
            })
            .collect();
        b.sort_by(|x, y| x.0.total_cmp(&y.0));
        b
    };
    assert!(buckets.len() > 50, "{buckets:?}");
    assert_eq!(buckets.last(), Some(&(f64::INFINITY, completed as f64)));
    let bucket_of = |x: f64| buckets.iter().position(|(le, _)| x <= *le).unwrap() as i64;
    let p99 = corrected_percentile_s(&merged, 99.0);
    let last = sum("histogram_quantile(0.99, sum by (le) (metron_latency_seconds_bucket))");
    // The same from the run's increase, as a graph over the run takes it:
    // the range begins before the run, where every shard counted 0.
    let range = format!("{}s", (at - start_at).ceil() as u64 + 5);
    for s in prom.query(&format!("metron_latency_seconds_count[{range}]"), at) {
        assert_eq!(
            s["values"][0][1], "0",
            "Prometheus first scraped shard {} mid-run: {}",
            s["metric"]["shard"], s["values"]
        );
    }
    let increase = sum(&format!(
        "histogram_quantile(0.99, sum by (le) (increase(metron_latency_seconds_bucket[{range}])))"
    ));
    eprintln!(
        "prometheus: p99 {last:.6} s from the last buckets, {increase:.6} s from increase[{range}]; \
         metron merge p99 {p99:.6} s; completed {completed} (Prometheus' sum alike), due {}",
        count(counters, "due")
    );
    for (how, estimate) in [("last buckets", last), ("increase", increase)] {
        assert!(
            (bucket_of(estimate) - bucket_of(p99)).abs() <= 1,
            "histogram_quantile ({how}) {estimate} s against the merge's p99 {p99} s: {buckets:?}"
        );
    }

    // Every query of the Grafana dashboard evaluates, and has data: the
    // graphs over the run, the stats at its end, each as Grafana sends it
    // with every shard chosen and a time range from just before the run.
    let d = grafana::dashboard();
    let queries = grafana::queries(&d);
    assert!(queries.len() >= 10, "{queries:?}");
    let range = |at: f64| format!("{}s", (at - start_at).ceil() as u64 + 5);
    let expr_at = |q: &grafana::Query, at: f64| {
        grafana::substitute(
            &q.expr,
            &[
                ("shard", ".*"),
                ("__rate_interval", "5s"),
                ("__range", &range(at)),
            ],
        )
    };
    for q in &queries {
        let expr = expr_at(q, at);
        let result = if q.instant {
            prom.query(&expr, at)
        } else {
            prom.query_range(&expr, start_at, end_at, 1.0)
        };
        let numbers: Vec<f64> = result
            .iter()
            .flat_map(|s| {
                let points = match s["values"].as_array() {
                    Some(v) => v.clone(),
                    None => vec![s["value"].clone()],
                };
                points
                    .into_iter()
                    .filter_map(|p| p[1].as_str().and_then(|v| v.parse::<f64>().ok()))
            })
            .filter(|v| v.is_finite())
            .collect();
        assert!(
            !numbers.is_empty(),
            "{} ({}): {expr} has no data: {result:?}",
            q.panel,
            q.ref_id
        );
    }
    // The variable's query lists the shards, as the label API did.
    let shard_var = grafana::variables(&d)
        .into_iter()
        .find(|v| v["name"] == "shard")
        .expect("a shard variable");
    assert_eq!(
        shard_var["definition"].as_str(),
        Some("label_values(metron_requests_completed_total, shard)")
    );

    // The ledger and the whole run's p99 as the dashboard's stats show
    // them: the merge's, while the shards linger and after they are gone.
    let stat = |panel: &str, legend: &str, at: f64| -> f64 {
        let q = queries
            .iter()
            .find(|q| q.panel.starts_with(panel) && q.legend == legend)
            .unwrap_or_else(|| panic!("no {legend:?} in the panel {panel:?}"));
        prom.scalar(&expr_at(q, at), at)
            .unwrap_or_else(|| panic!("{panel} {legend}: no data at {at}"))
    };
    let errors = &counters["errors"];
    let ledger = [
        ("due", count(counters, "due")),
        ("completed", completed),
        (
            "lost",
            ["read", "write", "timeout"]
                .iter()
                .map(|k| count(errors, k))
                .sum(),
        ),
        ("never sent", count(counters, "never_sent")),
        ("in flight", count(counters, "in_flight")),
    ];
    let shown = |at: f64| -> Vec<(&str, u64)> {
        ledger
            .iter()
            .map(|(legend, _)| (*legend, stat("Ledger", legend, at) as u64))
            .collect()
    };
    let live = shown(at);
    eprintln!("prometheus: the ledger shown {live:?}, merged {ledger:?}");
    assert_eq!(live, ledger);
    let whole = "Corrected latency over the whole run";
    let shown_p99 = stat(whole, "p99", at);
    assert!(
        (bucket_of(shown_p99) - bucket_of(p99)).abs() <= 1,
        "{shown_p99} against {p99}"
    );

    drop(started);
    let gone = Instant::now() + Duration::from_secs(15);
    while prom.scalar("sum(up)", now()) != Some(0.0) {
        assert!(Instant::now() < gone, "Prometheus still scrapes the shards");
        std::thread::sleep(Duration::from_millis(250));
    }
    let later = now();
    assert!(
        prom.query("metron_requests_completed_total", later)
            .is_empty(),
        "the shards' series are stale once they are gone"
    );
    assert_eq!(shown(later), ledger, "after the shards ended");
    assert_eq!(stat(whole, "p99", later), shown_p99);
    eprintln!("prometheus: the check took {:?}", began.elapsed());
}
