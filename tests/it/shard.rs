//! One schedule over several instances (`--shard`, `--start-at`) and the
//! exact merge of their documents (`metron merge`), judged where it
//! counts: at the server, which sees one even stream at the total rate,
//! and in the merged figures, which equal those of the added histograms.
//!
//! Three metron processes run as a Kubernetes Indexed Job runs its pods:
//! the same command line, `--shard auto/3`, each told its index by
//! `JOB_COMPLETION_INDEX`. When the test may create network namespaces
//! (root), each instance runs in a namespace of its own with its own
//! address, and the target in another, as separate hosts would be;
//! otherwise they share the loopback interface, and the test says so.

use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::files::{read_json, schema_errors};
use crate::common::shard::*;
use crate::common::*;
use metron::serve::{ServeConfig, Server};
use serde_json::Value;

/// Total requests per second over the three instances.
const RATE: f64 = 900.0;

#[test]
fn three_shards_send_one_even_stream_and_merge_exactly() {
    let _serial = serial();
    let cfg = ServeConfig {
        record: 100_000,
        ..ServeConfig::default()
    };
    let hosts = match Hosts::create() {
        Ok(h) => Some(h),
        Err(why) => {
            eprintln!(
                "note: no network namespaces here ({why}); the three instances share 127.0.0.1"
            );
            None
        }
    };
    let target = match &hosts {
        Some(h) => h.serve(ServeConfig {
            listen: format!("{SUBNET}.1:0").parse().unwrap(),
            ..cfg
        }),
        None => server(cfg),
    };
    let url = format!("http://{}/", target.addr());
    let dir = scratch("even");
    let start_at = SystemTime::now() + Duration::from_secs(2);
    let start_at = start_at.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let start_at = format!("{start_at:.3}");
    let rate = RATE.to_string();
    let children: Vec<_> = (0..INSTANCES)
        .map(|i| {
            let json = dir.join(format!("shard-{i}.json"));
            let mut args: Vec<String> = Vec::new();
            if let Some(h) = &hosts {
                args.extend(words(&format!("netns exec {}", h.instances[i])));
            }
            args.push(env!("CARGO_BIN_EXE_metron").into());
            args.extend(words(&format!(
                "-t 1 -c 3 -d 3s -R {rate} --shard auto/{INSTANCES} --start-at {start_at}"
            )));
            // Which instance sent a request, as the server sees it.
            args.extend(["-H".into(), format!("X-Instance: {i}")]);
            args.extend(["--json".into(), json.display().to_string(), url.clone()]);
            let (program, rest) = match &hosts {
                Some(_) => ("ip", &args[..]),
                None => (args[0].as_str(), &args[1..]),
            };
            Command::new(program)
                .args(rest)
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .env_remove("SLURM_ARRAY_TASK_ID")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("metron starts")
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = wait_bounded(child, Duration::from_secs(60));
        assert!(out.status.success(), "instance {i}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.contains(&format!("shard {i} of 3: requests {i}, {i}+3, ...")),
            "{text}"
        );
    }
    let docs: Vec<Value> = (0..INSTANCES)
        .map(|i| read_json(&dir.join(format!("shard-{i}.json"))))
        .collect();
    for (i, d) in docs.iter().enumerate() {
        assert_eq!(d["config"]["shard"]["index"], i as u64);
        assert_eq!(d["config"]["shard"]["count"], INSTANCES as u64);
        assert_eq!(d["config"]["rate"].as_f64(), Some(RATE / INSTANCES as f64));
        let offset = d["start_offset_s"].as_f64().expect("a start offset");
        assert!(
            (0.0..0.5).contains(&offset),
            "instance {i} began {offset}s late"
        );
        assert_eq!(d["counters"]["missed_at_start"], 0);
    }

    // At the server: every request the instances sent arrived, and they
    // form one stream at the total rate, evenly spaced and interleaved
    // 0, 1, 2, 0, 1, 2, … (each instance's part of the one schedule).
    let sent: u64 = docs
        .iter()
        .map(|d| {
            let c = &d["counters"];
            c["due"].as_u64().unwrap() - c["never_sent"].as_u64().unwrap()
        })
        .sum();
    let recorded = target.stats().recorded();
    assert_eq!(recorded.len() as u64, sent, "the server saw what was sent");
    let mut arrivals: Vec<(Instant, u8)> = recorded
        .iter()
        .map(|r| {
            let who = r.header("X-Instance").expect("tagged")[0] - b'0';
            (r.received, who)
        })
        .collect();
    arrivals.sort();
    let mut gaps: Vec<f64> = arrivals
        .windows(2)
        .map(|w| (w[1].0 - w[0].0).as_secs_f64())
        .collect();
    gaps.sort_by(f64::total_cmp);
    let interval = 1.0 / RATE;
    let median = gaps[gaps.len() / 2];
    assert!(
        (median - interval).abs() < 0.15 * interval,
        "the median gap at the server is {median}s, not 1/R = {interval}s"
    );
    // Three schedules of their own would bunch up: whatever their phases,
    // the gaps would repeat a pattern of three unequal spacings.
    let (p10, p90) = (gaps[gaps.len() / 10], gaps[gaps.len() * 9 / 10]);
    assert!(
        p10 > 0.6 * interval && p90 < 1.4 * interval,
        "gaps at the server from {p10}s (p10) to {p90}s (p90): not one even stream of {interval}s"
    );
    let in_turn = arrivals
        .windows(2)
        .filter(|w| w[1].1 == (w[0].1 + 1) % INSTANCES as u8)
        .count();
    assert!(
        in_turn * 10 >= arrivals.len() * 9,
        "only {in_turn} of {} consecutive requests came from the next instance in turn",
        arrivals.len()
    );

    // Merged: counts add up, the rate is the total, the percentiles are
    // those of the added histograms, and each instance has its row.
    let merged_path = dir.join("merged.json");
    let files: Vec<String> = (0..INSTANCES)
        .map(|i| dir.join(format!("shard-{i}.json")).display().to_string())
        .collect();
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    let merged_arg = merged_path.display().to_string();
    let html_arg = dir.join("merged.html").display().to_string();
    args.extend(["--json", &merged_arg, "--html", &html_arg]);
    let out = metron(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).is_empty(),
        "no warning for true shards: {}",
        stderr(&out)
    );
    let text = stdout(&out);
    assert!(text.contains("Merged from 3 instances"), "{text}");
    let merged: Value = read_json(&merged_path);
    for field in ["due", "completed", "never_sent", "bytes"] {
        let sum: u64 = docs
            .iter()
            .map(|d| d["counters"][field].as_u64().unwrap())
            .sum();
        assert_eq!(merged["counters"][field].as_u64(), Some(sum), "{field}");
    }
    let c = &merged["counters"];
    let accounted = c["completed"].as_u64().unwrap()
        + c["in_flight"].as_u64().unwrap()
        + c["never_sent"].as_u64().unwrap()
        + ["read", "write", "timeout"]
            .iter()
            .map(|k| c["errors"][k].as_u64().unwrap())
            .sum::<u64>();
    assert_eq!(c["due"].as_u64(), Some(accounted), "the ledger balances");
    assert_eq!(merged["config"]["rate"].as_f64(), Some(RATE));
    let rps = merged["requests_per_sec"].as_f64().unwrap();
    assert!((rps - RATE).abs() < 0.02 * RATE, "merged rate {rps}");
    let mut added = histogram(&docs[0]);
    for d in &docs[1..] {
        added.add(histogram(d)).unwrap();
    }
    assert_eq!(histogram(&merged), added, "the merged histogram is the sum");
    for pair in merged["latency"]["corrected"]["percentiles"]
        .as_array()
        .unwrap()
    {
        let (p, v) = (pair[0].as_f64().unwrap(), pair[1].as_u64().unwrap());
        assert_eq!(
            v,
            metron::stats::summary::value_at_percentile(&added, p),
            "p{p}"
        );
    }
    assert_eq!(merged["instances"].as_array().map(Vec::len), Some(3));
    for doc in docs.iter().chain([&merged]) {
        let errors = schema_errors(doc);
        assert!(errors.is_empty(), "{errors:#?}");
    }
    let page = fs::read_to_string(dir.join("merged.html")).unwrap();
    assert!(page.contains("<h2>Instances</h2>"));
    drop(hosts);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_late_instance_counts_what_it_missed() {
    let _serial = serial();
    let target = server(ServeConfig::default());
    let dir = scratch("late");
    let json = dir.join("late.json");
    // The schedule began a second ago: this instance is late by that much.
    let start_at = SystemTime::now() - Duration::from_secs(1);
    let start_at = start_at.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let start_at = format!("{start_at:.3}");
    let flags = ["-d", "3s", "-R", "200", "--start-at", &start_at];
    let out = instance_run(&target, &flags, &json);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let doc: Value = read_json(&json);
    let offset = doc["start_offset_s"].as_f64().unwrap();
    assert!((1.0..2.0).contains(&offset), "{offset}");
    let missed = doc["counters"]["missed_at_start"].as_u64().unwrap();
    // About a second at 200/s, passed over and counted as never sent.
    assert!((180..=260).contains(&missed), "{missed}");
    let c = &doc["counters"];
    let never_sent = c["never_sent"].as_u64().unwrap();
    assert!(never_sent >= missed);
    // They are not server latency: the distribution with the unfinished
    // holds the completed and the other unfinished requests, not them.
    let unfinished =
        c["errors"]["timeout"].as_u64().unwrap() + c["in_flight"].as_u64().unwrap() + never_sent
            - missed;
    let with = doc["latency"]["with_unfinished"]["count"]
        .as_u64()
        .unwrap_or(0);
    let completed = c["completed"].as_u64().unwrap();
    assert!(with == 0 || with == completed + unfinished, "{with} {c}");
    let max_ms = doc["latency"]["with_unfinished"]["max"]
        .as_u64()
        .unwrap_or(0) as f64
        / 1000.0;
    assert!(
        max_ms < 500.0,
        "a late start entered the latency: max {max_ms} ms"
    );
    assert!(text.contains("after --start-at: passed over the"), "{text}");
    assert!(text.contains("had been due before the run began"), "{text}");
    let _ = fs::remove_dir_all(&dir);
}

/// `metron merge --slo` judges the merged run as a run's `--slo` does:
/// met, not met (exit 3), and inconclusive (exit 4) when the generator of
/// an instance was the limit, here one that began a second late and
/// passed over what fell due meanwhile.
#[test]
fn a_merged_run_is_judged_against_an_slo() {
    let _serial = serial();
    let target = server(ServeConfig::default());
    let dir = scratch("slo");
    let (a, b, late) = (
        dir.join("a.json"),
        dir.join("b.json"),
        dir.join("late.json"),
    );
    for (json, shard) in [(&a, "0/2"), (&b, "1/2")] {
        let out = instance_run(&target, &["-R", "200", "-d", "1s", "--shard", shard], json);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let start_at = SystemTime::now() - Duration::from_secs(1);
    let start_at = start_at.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let start_at = format!("{start_at:.3}");
    let flags = [
        "-R",
        "200",
        "-d",
        "2s",
        "--shard",
        "1/2",
        "--start-at",
        &start_at,
    ];
    let out = instance_run(&target, &flags, &late);
    assert!(out.status.success(), "{}", stderr(&out));
    let (a, b, late) = (
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        late.to_str().unwrap(),
    );
    // Regression: the instances' table came after the verdict. The
    // verdict is the last line, as a run's is.
    let met = metron(&["merge", "--slo", "p99<10s", a, b]);
    assert_eq!(met.status.code(), Some(0), "{}", stderr(&met));
    assert!(stdout(&met).ends_with("\nSLO: met\n"), "{}", stdout(&met));
    assert!(stdout(&met).contains("Merged from 2 instances:"));
    let not_met = metron(&["merge", "--slo", "p50<1us", a, b]);
    assert_eq!(not_met.status.code(), Some(3), "{}", stderr(&not_met));
    assert!(stdout(&not_met).ends_with("\nSLO: not met (p50<1us)\n"));
    let judged = metron(&["merge", "--slo", "p99<10s", a, late]);
    assert_eq!(judged.status.code(), Some(4), "{}", stdout(&judged));
    assert!(
        stderr(&judged).contains(&format!("in {late}, ")),
        "{}",
        stderr(&judged)
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn shard_and_start_mistakes_are_one_line_errors() {
    let cases: [(&[&str], &str); 5] = [
        (&["-R", "10", "--shard", "3/3"], "use 0 to 2"),
        (&["-R", "10", "--shard", "auto/3"], "JOB_COMPLETION_INDEX"),
        (&["--shard", "1/3"], "add -R"),
        (
            &["-R", "10", "--arrival", "poisson", "--shard", "0/2"],
            "needs --seed N",
        ),
        (
            &["-R", "10", "-d", "5s", "--start-at", "1000000000"],
            "longer ago than the whole 5s run",
        ),
    ];
    for (flags, want) in cases {
        let mut args = flags.to_vec();
        args.push("http://127.0.0.1:9/");
        let child = Command::new(env!("CARGO_BIN_EXE_metron"))
            .args(&args)
            .env_remove("JOB_COMPLETION_INDEX")
            .env_remove("SLURM_ARRAY_TASK_ID")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_bounded(child, Duration::from_secs(20));
        let err = stderr(&out);
        assert!(matches!(out.status.code(), Some(1 | 2)), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn merging_documents_that_differ_warns_and_a_cut_one_is_refused() {
    let _serial = serial();
    let a = server(ServeConfig::default());
    let b = server(ServeConfig::default());
    let dir = scratch("differ");
    let run = |name: &str, rate: &str, target: &Server| {
        let path = dir.join(name);
        let out = instance_run(target, &["-d", "1s", "-R", rate], &path);
        assert!(out.status.success(), "{}", stderr(&out));
        path.display().to_string()
    };
    let (one, two) = (run("one.json", "100", &a), run("two.json", "200", &b));
    let out = metron(&["merge", &one, &two]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("the merged figures mix two targets"), "{err}");
    assert!(err.contains("-R 200 in total but"), "{err}");
    let full = fs::read_to_string(&one).unwrap();
    let cut = dir.join("cut.json");
    fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let out = metron(&["merge", &one, cut.to_str().unwrap()]);
    let err = one_line_error(&out);
    assert!(err.contains("cut.json: the document is cut short"), "{err}");
    let _ = fs::remove_dir_all(&dir);
}
