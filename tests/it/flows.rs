//! Flows (`flow(visit)`): visits of dependent steps arriving on the
//! schedule, each step timed from when it should have gone, against
//! ground truth; their own ledger; and the closed loop's lanes.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use crate::common::files::{self, lua_file};
use crate::common::httpbin::{Httpbin, Logged};
use crate::common::judged::{assert_status, sweep_document};
use crate::common::relay::Relay;
use crate::common::*;
use metron::report::sweep::rate_in;
use metron::serve::{ServeConfig, StallPlan};

/// The visits' ledger holds, and the steps' requests are all the run's.
fn assert_visits_balanced(o: &metron::engine::Outcome) {
    assert_balanced(o);
    let v = o.stats.visits.as_ref().expect("a flow counts visits");
    assert!(v.balanced(), "visits: {v:?}");
    let steps: u64 = o.stats.endpoints.iter().map(|e| e.completed).sum();
    assert_eq!(
        steps, o.stats.counters.completed,
        "every response is a step's"
    );
}

per_protocol! {
    /// Visits of two steps with a rest of T = 0.2 s between them, at rate
    /// R, through a stall of S = 1 s. The first steps due during the stall
    /// wait for it, spread uniformly over [0, S], as plain requests do:
    /// with N of them in all, f = S·R/N form that tail, and its corrected
    /// quantile q is S·(1 - (1 - q)/f). A second step is due at the end of
    /// the first plus T: those of the visits that began in the T before
    /// the stall fall in it (f = T·R/N of them, waiting S - T to S, so q
    /// is S - T·(1 - q)/f), while the visits the stall held at their first
    /// step rest after it, and their second steps are not delayed. Over
    /// HTTP/1.1 the uncorrected figures, from the send, hide the stall.
    fn a_stall_shows_in_every_step_it_delays(proto) {
        let _g = serial();
        let stall = Duration::from_millis(1000);
        let srv = proto.server(ServeConfig {
            stall: Some(StallPlan::once(Duration::from_millis(1200), stall).unwrap()),
            ..ServeConfig::default()
        });
        let u = proto.url(&srv, "/");
        let flow = script("flow_two_steps.lua");
        let (rate, args): (f64, &[&str]) = match proto {
            Proto::Http1 => (500.0, &["-t2", "-c20", "-R500", "-d4s"]),
            Proto::Http2 | Proto::Http3 => (500.0, &["-t1", "-c4", "-m100", "-R500", "-d4s"]),
        };
        let (o, text) = proto.bench(&[args, &["-s", &flow, &u]].concat());
        assert_visits_balanced(&o);
        let c = &o.stats.counters;
        assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
        let s_us = stall.as_micros() as f64;
        let think = 0.2;
        for step in ["catalogue", "item"] {
            let e = o.stats.endpoints.iter().find(|e| e.name == step).expect(step);
            let h = e.latency.as_ref().expect("answered");
            let n = h.len() as f64;
            let (tail_s, quantiles): (f64, &[f64]) = match step {
                "catalogue" => (stall.as_secs_f64(), &[0.90, 0.99, 0.999]),
                _ => (think, &[0.99, 0.999]),
            };
            let f = tail_s * rate / n;
            for &q in quantiles {
                let want = s_us - tail_s * 1e6 * (1.0 - q) / f;
                let got = h.value_at_quantile(q) as f64;
                assert!(
                    (got - want).abs() <= 0.05 * s_us,
                    "{step} p{}: got {got:.0} us, want {want:.0} us\n{text}",
                    q * 100.0
                );
            }
            // Over streams every step due in the stall went out on one of
            // the 400 free streams and saw it from its send as well; over
            // HTTP/1.1 only those in flight on the 20 connections did.
            if proto == Proto::Http1 {
                let unc = e.uncorrected.as_ref().expect("answered").value_at_quantile(0.99);
                let cor = h.value_at_quantile(0.99);
                assert!(unc * 2 < cor, "{step}: uncorrected p99 {unc} us, corrected {cor} us");
            }
        }
        let v = o.stats.visits.as_ref().unwrap();
        assert_eq!(v.due(), 2000, "{v:?}");
        // Every visit due in the stall started once it ended; one due in
        // the run's last milliseconds may meet the generator late (its
        // send lag) and rightly count as never started.
        assert!(v.never_started <= 2, "{v:?}");
        // Those resting or on their second step at the end: about 0.2 s
        // of visits.
        assert!(v.in_flight <= 150, "{v:?}");
        assert!(text.contains("Steps (corrected latency"), "{text}");
        assert!(text.contains("Visits: 2000 due, "), "{text}");
    }
}

/// A stall that lasts past the end: the visits due after every connection
/// filled up never start. They are counted as visits never started (not
/// as requests never sent: they sent nothing), and both ledgers hold.
#[test]
fn visits_a_stall_keeps_from_starting_are_counted_never_started() {
    let _g = serial();
    let srv = server(ServeConfig {
        stall: Some(StallPlan::once(Duration::from_millis(1000), Duration::from_secs(5)).unwrap()),
        ..ServeConfig::default()
    });
    let flow = script("flow_two_steps.lua");
    let (o, text) = bench_at(
        &["-t1", "-c5", "-R200", "-d2s", "-s", &flow],
        &url(&srv, "/"),
    );
    assert_visits_balanced(&o);
    let v = o.stats.visits.as_ref().unwrap();
    assert_eq!(v.due(), 400, "{v:?}");
    // About a second of stall at 200/s (the stall is timed from the
    // server's start, a little before the run's), less the five visits
    // that took the connections.
    assert!((180..=215).contains(&v.never_started), "{v:?}\n{text}");
    let c = &o.stats.counters;
    // Never sent: only second steps, of the visits resting (0.2 s) as the
    // connections filled, whose rests ended in the stall.
    assert!(c.never_sent <= 45, "steps of started visits only: {c:?}");
    // Their ages are lower bounds of the visits' durations.
    assert_eq!(v.unfinished.len(), v.never_started + v.in_flight);
    assert!(text.contains("never started"), "{text}");
}

/// The closed loop: `-c` lanes, each running one visit after another, a
/// visit starting as the one before ends. No more visits run at once
/// than there are connections, and a rest holds none.
#[test]
fn the_closed_loop_runs_c_visits_back_to_back() {
    let _g = serial();
    let srv = server(ServeConfig {
        record: 100_000,
        ..ServeConfig::default()
    });
    let flow = lua_file(
        "flow_lanes.lua",
        r#"function flow(visit)
             http.get("/v/" .. visit.id, { name = "visit" })
             think(0.1)
           end"#,
    );
    let flow = flow.display().to_string();
    let (o, _) = bench_at(&["-t2", "-c4", "-d2s", "-s", &flow], &url(&srv, "/"));
    assert_visits_balanced(&o);
    let v = o.stats.visits.as_ref().unwrap();
    // Each lane: a request, then 0.1 s of rest: at most 20 in 2 s.
    assert!(v.started <= 4 * 21, "{v:?}");
    assert!(v.started >= 40, "{v:?}");
    assert_eq!(v.never_started, 0);
    // Visit ids are unique across threads.
    let paths: Vec<String> = srv.stats().recorded().into_iter().map(|r| r.path).collect();
    let unique: HashSet<&String> = paths.iter().collect();
    assert_eq!(unique.len(), paths.len(), "{paths:?}");
}

/// A step's answer comes back to the flow: status, headers and body; a
/// cookie the server set goes with the visit's later steps and no other
/// visit's; `visit:fail` ends a visit, counted by its reason. The interval
/// log breaks the steps out.
#[test]
fn a_flow_reads_its_answers_and_keeps_a_jar_per_visit() {
    let _g = serial();
    let srv = server(ServeConfig {
        record: 100_000,
        ..ServeConfig::default()
    });
    let flow = lua_file(
        "flow_answers.lua",
        r#"function flow(visit)
             local r = http.get("/status/201", { name = "first" })
             if r.status ~= 201 or type(r.body) ~= "string" or type(r.headers) ~= "table" then
               return visit:fail("odd answer " .. tostring(r.status))
             end
             visit:set("n", visit.id)
             http.get("/second", { name = "second", headers = { ["X-Visit"] = tostring(visit:get("n")) } })
             if visit.id % 2 == 1 then return visit:fail("odd visit") end
           end"#,
    );
    let flow = flow.display().to_string();
    let dir = files::TempDir::new("flow-answers");
    let hlog = dir.file("run.hlog", "");
    let html = dir.file("run.html", "");
    let (o, text) = bench_at(
        &[
            "-t1", "-c2", "-R100", "-d1s", "-s", &flow, "--hlog", &hlog, "--html", &html,
        ],
        &url(&srv, "/"),
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("constant rate: 100 visits/s (open loop)"),
        "{page}"
    );
    assert_visits_balanced(&o);
    // The interval log has each step's lines, from the first interval a
    // visit took it in.
    let log = metron::report::hlog::read_log(std::path::Path::new(&hlog)).unwrap();
    for e in &o.stats.endpoints {
        let tag = format!("endpoint:{}", e.name);
        let logged: u64 = log
            .iter()
            .filter(|l| l.tag.as_deref() == Some(tag.as_str()))
            .map(|l| l.histogram.len())
            .sum();
        assert_eq!(logged, e.completed, "{tag}");
    }
    let v = o.stats.visits.as_ref().unwrap();
    assert_eq!(v.failed.get("odd answer 201"), None, "{v:?}");
    let odd = v.failed.get("odd visit").copied().unwrap_or(0);
    assert!((45..=50).contains(&odd), "{v:?}\n{text}");
    let seconds: Vec<_> = srv
        .stats()
        .recorded()
        .into_iter()
        .filter(|r| r.path == "/second")
        .collect();
    assert!(seconds.len() >= 95, "{}", seconds.len());
    for r in &seconds {
        assert!(r.header("x-visit").is_some(), "{r:?}");
    }
    assert!(text.contains("odd visit: "), "{text}");
}

/// A real application nobody here wrote: httpbin under gunicorn
/// (tests/scripts/flow_httpbin.lua). Each visit sets a cookie and reads it
/// back, takes a token from one answer and authenticates with it, then
/// waits on /delay. Gunicorn's access log holds the ledger's requests step
/// by step (those on the wire at the end at most once), each visit's
/// requests in order, every later one with its own visit's cookie and,
/// once it has one, its own token, which no other visit sent.
#[test]
fn httpbins_log_holds_every_step_of_every_visit() {
    let _g = serial();
    let Some(hb) = Httpbin::start() else {
        return;
    };
    let flow = script("flow_httpbin.lua");
    let (o, text) = bench(&["-t2", "-c8", "-R20", "-d4s", "-s", &flow, &hb.url("/")]);
    assert_visits_balanced(&o);
    let v = o.stats.visits.as_ref().unwrap();
    assert!(v.failed.is_empty(), "{v:?}\n{text}");
    assert_eq!((v.due(), v.never_started), (80, 0), "{v:?}");
    assert_eq!(o.stats.counters.errors.lost_requests(), 0, "{text}");
    let steps = [
        ("set-cookie", "/cookies/set", 302),
        ("cookies", "/cookies", 200),
        ("token", "/uuid", 200),
        ("bearer", "/bearer", 200),
        ("delay", "/delay/0.1", 200),
    ];
    let log = hb.access_log();
    let route = |l: &Logged| l.path.split('?').next().unwrap_or_default().to_string();
    // Whose request each is: its first step names the visit in its query,
    // the later ones by the cookie it set.
    let mut visits: BTreeMap<String, Vec<&Logged>> = BTreeMap::new();
    for l in &log {
        let id = match l.path.strip_prefix("/cookies/set?visit=") {
            Some(id) => {
                assert_eq!(
                    l.cookie, None,
                    "a visit's first request has no cookie: {l:?}"
                );
                id
            }
            None => l
                .cookie
                .as_deref()
                .and_then(|c| c.strip_prefix("visit="))
                .unwrap_or_else(|| panic!("a later step without its visit's cookie: {l:?}")),
        };
        visits.entry(id.to_string()).or_default().push(l);
    }
    let mut tokens = HashSet::new();
    let mut whole = 0;
    for (id, lines) in &mut visits {
        // Gunicorn's threads write a line once they have answered, so a
        // step may be logged before the one it waited for: the lines go
        // back into the flow's order.
        lines.sort_by_key(|l| steps.iter().position(|s| s.1 == route(l)));
        let routes: Vec<String> = lines.iter().map(|l| route(l)).collect();
        let want: Vec<String> = steps[..routes.len().min(5)]
            .iter()
            .map(|s| s.1.to_string())
            .collect();
        assert_eq!(routes, want, "visit {id}: each step once, none skipped");
        let (before, after) = lines.split_at(lines.len().min(3));
        assert!(
            before.iter().all(|l| l.authorization.is_none()),
            "{id}: {lines:?}"
        );
        if let Some(first) = after.first() {
            let token = first
                .authorization
                .clone()
                .expect("a token from the answer");
            assert!(
                after
                    .iter()
                    .all(|l| l.authorization.as_ref() == Some(&token)),
                "{lines:?}"
            );
            assert!(
                tokens.insert(token),
                "visit {id} sent another visit's token: {lines:?}"
            );
        }
        whole += u64::from(lines.len() == steps.len());
    }
    for (name, path, status) in steps {
        let e = o
            .stats
            .endpoints
            .iter()
            .find(|e| e.name == name)
            .expect(name);
        let logged: Vec<_> = log.iter().filter(|l| route(l) == path).collect();
        let on_the_wire = e.unfinished.as_ref().map_or(0, |h| h.len());
        assert!(
            (e.completed..=e.completed + on_the_wire).contains(&(logged.len() as u64)),
            "{name}: httpbin logged {}, metron completed {} with {on_the_wire} on the wire\n{text}",
            logged.len(),
            e.completed
        );
        assert_eq!(e.status_codes.get(status), e.completed, "{name}\n{text}");
        assert!(
            logged.iter().all(|l| l.status == status),
            "{name}: {logged:?}"
        );
    }
    assert!(
        (v.completed..=v.completed + v.in_flight).contains(&whole),
        "{whole} whole visits logged\n{v:?}"
    );
    assert!(
        (v.started - v.in_flight..=v.started).contains(&(visits.len() as u64)),
        "{} visits logged\n{v:?}",
        visits.len()
    );
}

/// A script's mistakes with flows are one line each, naming the fix, and
/// the run does not start.
#[test]
fn flow_mistakes_are_one_line() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let u = url(&srv, "/");
    let cases = [
        (
            "function init(args) http.get('/x') end function flow(v) end",
            "works only inside flow(visit)",
        ),
        (
            "function request() return wrk.format() end function flow(v) end",
            "drop request()",
        ),
    ];
    for (code, says) in cases {
        let path = lua_file("flow_mistake.lua", code);
        let path = path.display().to_string();
        let out = metron(&["-t1", "-c1", "-d1s", "-R10", "-s", &path, &u]);
        let line = one_line_error(&out);
        assert!(line.contains(says), "{line}");
    }
    // A flow's steps are HTTP requests: a WebSocket URL is refused before
    // anything is sent.
    let path = lua_file("flow_ws.lua", "function flow(v) http.get('/') end");
    let ws = u.replacen("http://", "ws://", 1);
    let out = metron(&["-t1", "-c1", "-d1s", "-s", &path.display().to_string(), &ws]);
    let line = one_line_error(&out);
    assert!(
        line.contains("give the flow an http:// or https:// URL"),
        "{line}"
    );
}

/// Two shards of one schedule of visits (`--shard i/2`), each a JSON
/// document that the schema accepts, merge exactly: the visits' ledgers
/// add, and each step's histogram is the sum of the shards', matched by
/// name whatever order each shard met the steps in.
#[test]
fn shards_of_visits_merge_exactly() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let flow = script("flow_login.lua");
    let dir = files::TempDir::new("flow-shards");
    let mut docs = Vec::new();
    for i in 0..2 {
        let path = dir.path().join(format!("s{i}.json"));
        let p = path.display().to_string();
        let shard = format!("{i}/2");
        let args = [
            "-t1", "-c10", "-R100", "-d2s", "--shard", &shard, "--json", &p, "-s", &flow,
        ];
        let (o, text) = bench_at(&args, &url(&srv, "/"));
        assert_visits_balanced(&o);
        let line = format!(
            "shard {i} of 2: visits {i}, {i}+2, ... of the schedule, 50.00 of 100.00 visits/sec"
        );
        assert!(text.contains(&line), "{text}");
        let doc: serde_json::Value = files::read_json(&path);
        assert_eq!(files::schema_errors(&doc), Vec::<String>::new());
        docs.push((p, o));
    }
    let merged_path = dir.path().join("merged.json");
    let m = merged_path.display().to_string();
    let out = metron(&["merge", &docs[0].0, &docs[1].0, "--json", &m]);
    assert!(out.status.success(), "{}", stderr(&out));
    let merged: metron::report::json::Document = files::read_json(&merged_path);
    let v = merged.visits.as_ref().expect("visits merged");
    let (a, b) = (
        docs[0].1.stats.visits.as_ref().unwrap(),
        docs[1].1.stats.visits.as_ref().unwrap(),
    );
    assert_eq!(v.started, a.started + b.started);
    assert_eq!(v.completed, a.completed + b.completed);
    assert_eq!(v.in_flight, a.in_flight + b.in_flight);
    assert_eq!(v.due, 200, "the shards share one schedule of 100 visits/s");
    assert_eq!(
        v.due,
        v.completed + v.failed + v.in_flight + v.never_started
    );
    // The token from /login opened /private/items (as a bearer token) and
    // the item (as the cookie the visit's jar kept): no visit failed.
    assert_eq!(v.failed, 0, "{:?}", v.failed_by);
    for step in ["login", "items", "item"] {
        let sum: u64 = docs
            .iter()
            .flat_map(|(_, o)| o.stats.endpoints.iter())
            .filter(|e| e.name == step)
            .map(|e| e.completed)
            .sum();
        let e = merged
            .endpoints
            .iter()
            .find(|e| e.name == step)
            .expect(step);
        assert_eq!(e.completed, sum, "{step}");
        assert_eq!(e.latency.count, sum, "{step}");
    }
    let merged_doc: serde_json::Value = files::read_json(&merged_path);
    assert_eq!(files::schema_errors(&merged_doc), Vec::<String>::new());
    // A shard of plain requests is not one of visits: refused by name.
    let plain = dir.path().join("plain.json").display().to_string();
    let args = [
        "-t1", "-c2", "-R50", "-d1s", "--shard", "1/2", "--json", &plain,
    ];
    bench_at(&args, &url(&srv, "/"));
    let out = metron(&["merge", &docs[0].0, &plain]);
    let line = one_line_error(&out);
    assert!(
        line.contains("is of a flow run, counted in visits, and ")
            && line.contains("merge only runs of one kind"),
        "{line}"
    );
}

/// `--visit-timeout` ends a visit that runs too long as failed
/// "timeout", and the ledgers still hold; `--slo` judges steps and
/// visits by name, and a step that never ran makes the verdict
/// inconclusive, naming the steps that did.
#[test]
fn visits_time_out_and_slo_terms_judge_steps_and_visits() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let flow = lua_file(
        "flow_timeout.lua",
        r#"function flow(visit)
             http.get("/", { name = "first" })
             if visit.id % 2 == 0 then think(60) end
             http.get("/delay/1", { name = "second" })
           end"#,
    );
    let flow = flow.display().to_string();
    let u = url(&srv, "/");
    let args = [
        "-t1",
        "-c4",
        "-R100",
        "-d2s",
        "--visit-timeout",
        "300ms",
        "-s",
        &flow,
    ];
    let slo = "step.second.p99<100ms,visit_p99<10s,visits_failed<60%";
    let (o, text) = bench_at(&[&args[..], &["--slo", slo]].concat(), &u);
    assert_visits_balanced(&o);
    let v = o.stats.visits.as_ref().unwrap();
    let timed_out = v.failed.get("timeout").copied().unwrap_or(0);
    // Every even visit rests past its bound; those started in the last
    // 0.3 s are still in flight at the end.
    assert!((60..=100).contains(&timed_out), "{v:?}\n{text}");
    assert!(v.completed >= 80, "{v:?}");
    assert!(text.contains("SLO step.second.p99<100ms: "), "{text}");
    assert!(text.contains("SLO: met"), "{text}");
    let third = [&args[..], &["--slo", "step.third.p99<1s", &u]].concat();
    let Err(e) = try_bench(&third) else {
        panic!("a step that never ran cannot pass")
    };
    let e = e.to_string();
    assert!(
        e.contains("no step named \"third\" was answered (the steps: first, second)"),
        "{e}"
    );
}

/// `metron sweep` over a flow: its rates are visits per second, in the
/// banner, in each row (achieved: visits started per second) and in the
/// conclusion; each step keeps its visits' ledger; and the document
/// passes its schema.
#[test]
fn a_sweep_of_visits_speaks_of_visits() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let dir = files::TempDir::new("sweep-visits");
    let json = dir.file("sweep.json", "");
    let html = dir.file("sweep.html", "");
    let flow = script("flow_two_steps.lua");
    let u = url(&srv, "/");
    let args = [
        "sweep",
        "--slo",
        "visit_p99<2s,step.item.p99<100ms",
        "--from",
        "20",
        "--to",
        "40",
        "--step-duration",
        "2s",
        "--warmup",
        "500ms",
        "--cooldown",
        "200ms",
        "-t1",
        "-c8",
        "-s",
        &flow,
        "--json",
        &json,
        "--html",
        &html,
        &u,
    ];
    let o = metron_within(&args, Duration::from_secs(60));
    assert_status(&o, 0);
    let out = stdout(&o);
    let (from, to) = (rate_in(20.0, "visits"), rate_in(40.0, "visits"));
    assert!(
        out.contains(&format!(" from {from} to {to}: SLO ")),
        "{out}"
    );
    let top = format!("highest rate meeting the SLO: {to} (the top of the sweep, --to)");
    assert!(out.contains(&top), "{out}");
    assert!(!out.contains("requests/s"), "{out}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("offered rate (visits/s)"), "{page}");
    assert!(!page.contains("requests/s"), "{page}");
    let doc = sweep_document(std::path::Path::new(&json));
    assert_eq!(doc.steps.len(), 2, "{out}");
    for step in &doc.steps {
        let v = step.visits.as_ref().expect("a flow's step counts visits");
        assert_eq!((v.failed, v.never_started), (0, 0), "{v:?}");
        assert!(v.completed * 10 >= v.due * 8, "{v:?}");
        assert_eq!(v.completed + v.in_flight, v.due, "the step's ledger: {v:?}");
        assert!(
            (step.achieved - step.rate).abs() <= 0.1 * step.rate,
            "{out}"
        );
    }
}

/// Steps falling due together while every connection is busy grow the
/// pool together (`--max-connections`), as the schedule's requests do,
/// not one connection after another: over a path of 25 ms each way,
/// where a QUIC handshake takes a round trip and more, 20 steps due
/// within 20 ms on one stream per connection (`-m1`) wait for about one
/// handshake, not for twenty in a row.
#[test]
fn steps_waiting_for_a_connection_grow_the_pool_at_once() {
    let _g = serial();
    let srv = Proto::Http3.server(ServeConfig::default());
    let relay = Relay::start(srv.addr(), Duration::from_millis(25), u64::MAX);
    let flow = lua_file(
        "flow_late_steps.lua",
        r#"function flow(visit)
             think(1.0)
             http.get("/delay/300", { name = "late" })
           end"#,
    );
    let flow = flow.display().to_string();
    let u = format!("https://127.0.0.1:{}/", relay.port);
    let args = [
        "--http3",
        "-k",
        "-t1",
        "-c1",
        "-m1",
        "--max-connections",
        "40",
    ];
    let more = ["--rate-profile", "1000:20ms,0:3s", "-s", &flow, &u];
    let (o, text) = bench(&[&args[..], &more[..]].concat());
    assert_visits_balanced(&o);
    let e = o
        .stats
        .endpoints
        .iter()
        .find(|e| e.name == "late")
        .expect("late");
    assert_eq!(e.completed, 20, "{text}");
    let p99 = e.latency.as_ref().unwrap().value_at_quantile(0.99);
    assert!(
        p99 < 700_000,
        "p99 {p99} us: the steps waited for connections one by one\n{text}"
    );
}

/// A rest that ended while every connection was busy still brings its
/// step into the books at the end: due, and never sent, at its intended
/// time. And a visit whose `--visit-timeout` passed while it waited for a
/// connection fails `timeout` without sending anything, whether or not a
/// connection came free before the end.
#[test]
fn steps_and_visits_kept_waiting_are_in_the_books() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let flow = lua_file(
        "flow_kept_waiting.lua",
        r#"function flow(visit)
             http.get("/", { name = "first" })
             think(1.0)
             http.get("/delay/300", { name = "slow" })
           end"#,
    );
    let flow = flow.display().to_string();
    let u = url(&srv, "/");
    let args = [
        "-t1",
        "-c2",
        "--rate-profile",
        "1000:20ms,0:1.2s",
        "-s",
        &flow,
        &u,
    ];
    let (o, text) = bench(&args);
    assert_visits_balanced(&o);
    let c = &o.stats.counters;
    // 20 visits: 20 first steps answered, 20 slow steps due at about 1 s,
    // 2 of them on the wire at the end and the other 18 never sent.
    assert_eq!((c.due, c.completed), (40, 20), "{text}");
    assert_eq!((c.in_flight, c.never_sent), (2, 18), "{text}");

    let waiting = lua_file(
        "flow_past_deadline.lua",
        r#"function flow(visit)
             http.get("/delay/300", { name = "slow" })
           end"#,
    );
    let waiting = waiting.display().to_string();
    let args = [
        "-t1",
        "-c1",
        "-R20",
        "-d2s",
        "--visit-timeout",
        "200ms",
        "-s",
        &waiting,
        &u,
    ];
    let (o, text) = bench(&args);
    assert_visits_balanced(&o);
    let v = o.stats.visits.as_ref().unwrap();
    assert_eq!(v.completed, 0, "{text}");
    assert!(
        v.failed.get("timeout").copied().unwrap_or(0) > 30,
        "{v:?}\n{text}"
    );
    // Of the 40 due, only those due in the last 200 ms were not yet past
    // their deadline at the end: the others failed waiting, not one of
    // them counted as never started.
    assert!(v.never_started <= 5, "{v:?}\n{text}");
    // Nothing left after its visit's deadline.
    let lag = o.stats.send_lag.max();
    assert!(
        lag < 200_000,
        "a step sent {lag} us after its visit was due\n{text}"
    );
}
