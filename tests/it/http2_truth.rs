//! The load generator over HTTP/2 against ground truth, as over HTTP/1.1:
//! the corrected percentiles of a run through a server stall are what
//! arithmetic says, every due request is accounted for with several
//! threads and connections, and the wrk-style Lua scripts the HTTP/1.1
//! tests run (tests/lua.rs, tests/dropin.rs) give the same outcomes with
//! `--http2`, each request of a batch on a stream of its own.

use std::time::Duration;

use crate::common::*;
use metron::serve::{Http2, ServeConfig, Server, StallPlan};

/// The built-in target over h2c, with `cfg`'s other settings.
fn h2(cfg: ServeConfig) -> Server {
    server(ServeConfig {
        http2: Some(Http2::default()),
        ..cfg
    })
}

/// An h2c target that keeps what it receives.
fn recording() -> Server {
    h2(ServeConfig {
        record: 100_000,
        ..ServeConfig::default()
    })
}

fn script(name: &str) -> String {
    format!("{}/tests/scripts/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `args` with `--http2` in front: the HTTP/1.1 tests' command lines.
fn h2_args<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut argv = vec!["--http2"];
    argv.extend_from_slice(args);
    argv
}

/// [`bench`] over HTTP/2.
fn bench_h2(args: &[&str]) -> (metron::engine::Outcome, String) {
    bench(&h2_args(args))
}

/// The metron binary over HTTP/2.
fn metron_h2(args: &[&str]) -> std::process::Output {
    metron(&h2_args(args))
}

// ---------------------------------------------------------------------
// Coordinated omission: the ground truth of a stall, over HTTP/2.
// ---------------------------------------------------------------------

/// A stall of S seconds at rate R, as tests/rate.rs computes it over
/// HTTP/1.1: the S·R requests due during it wait, on average, S/2, spread
/// uniformly over [0, S]. With N requests in all, the fraction f = S·R/N of
/// them form that tail, so the corrected quantile q (above 1 - f) is
/// S·(1 - (1 - q)/f). Over HTTP/2 the requests due during the stall go out
/// on the connections' free streams (4 × 100 of them) and then wait for
/// one; either way their latency runs from when they were due.
#[test]
fn corrected_percentiles_match_a_stall_of_known_length() {
    let _g = serial();
    let stall = Duration::from_millis(1000);
    let rate = 2000.0;
    let srv = h2(ServeConfig {
        stall: Some(StallPlan::once(Duration::from_millis(1200), stall).unwrap()),
        ..ServeConfig::default()
    });
    let u = url(&srv, "/");
    let (o, _) = bench_h2(&["-t1", "-c4", "-m100", "-R2000", "-d4s", &u]);
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
    let n = o.stats.latency.len() as f64;
    let f = stall.as_secs_f64() * rate / n;
    let s_us = stall.as_micros() as f64;
    for q in [0.90, 0.99, 0.999] {
        let want = s_us * (1.0 - (1.0 - q) / f);
        let got = o.stats.latency.value_at_quantile(q) as f64;
        // The stall's edges are blurred by a few milliseconds of scheduling
        // on either side; 5% of S covers that with room.
        assert!(
            (got - want).abs() <= 0.05 * s_us,
            "p{}: got {got:.0} us, want {want:.0} us ({c:?})",
            q * 100.0
        );
    }
    // Uncorrected latency sees the stall only in the requests that were on
    // the wire during it. No stream frees up until the stall ends, and the
    // -c × -m = 400 streams fill within its first 0.2 s, so about 400
    // requests wait most of S once sent (over HTTP/1.1 that is -c requests,
    // and tests/rate.rs compares p99s; 400 are 5% of this run, so here the
    // counts are compared). Corrected latency sees every request due during
    // the stall: about 90% of S·R = 2000 of them are above S/10.
    let tenth = (s_us / 10.0) as u64;
    let above = |h: &hdrhistogram::Histogram<u64>| h.len() - h.count_between(0, tenth);
    let (uncorrected, corrected) = (above(&o.stats.uncorrected), above(&o.stats.latency));
    assert!(
        (300..=440).contains(&uncorrected),
        "{uncorrected} uncorrected latencies above S/10, {corrected} corrected"
    );
    assert!(
        corrected as f64 >= 0.85 * stall.as_secs_f64() * rate,
        "{corrected} corrected latencies above S/10"
    );
    // No more connections than -c (and the pre-flight's).
    let st = srv.stats();
    assert!(
        st.h2_connections() <= 5,
        "{} connections",
        st.h2_connections()
    );
}

// ---------------------------------------------------------------------
// Accounting: every due request in one bucket, with no errors.
// ---------------------------------------------------------------------

/// What the server answered is what the client completed, give or take the
/// responses still on their way when the run ended. Nothing is sent after
/// the window: the closed loop does not refill the streams whose responses
/// came in the last batch of events.
fn assert_server_agrees(srv: &Server, o: &metron::engine::Outcome) {
    let c = &o.stats.counters;
    let answered = srv.stats().responses_total();
    assert!(
        (c.completed..=c.completed + c.in_flight).contains(&answered),
        "the server answered {answered}: {c:?}"
    );
}

/// Over HTTP/2, no request lost, no connection refused, no bad status, and
/// nothing HTTP/2 alone counts (no reset, GOAWAY, connection error or
/// request sent again).
fn assert_clean(o: &metron::engine::Outcome) {
    assert_balanced(o);
    assert_eq!(o.protocol.to_string(), "HTTP/2");
    let c = &o.stats.counters;
    assert!(!c.errors.any_socket(), "{c:?}");
    assert_eq!((c.errors.status, c.reconnects), (0, 0), "{c:?}");
    assert!(!c.http2.any(), "{:?}", c.http2);
    assert!(c.completed > 0, "{c:?}");
}

#[test]
fn the_closed_loop_accounts_for_every_request() {
    let _g = serial();
    let srv = h2(ServeConfig {
        body_size: 100,
        ..ServeConfig::default()
    });
    let u = url(&srv, "/");
    let (o, _) = bench_h2(&["-t2", "-c6", "-m10", "-d2s", &u]);
    assert_clean(&o);
    let c = &o.stats.counters;
    // Nothing waits for a connection in the closed loop.
    assert_eq!(c.never_sent, 0, "{c:?}");
    assert!(c.in_flight <= 6 * 10, "{c:?}");
    assert!(o.stats.threads.iter().all(|t| t.counters.completed > 0));
    assert_server_agrees(&srv, &o);
    let st = srv.stats();
    assert!(st.h2_max_streams_per_connection() <= 10);
    assert!(st.h2_connections() <= 7, "{}", st.h2_connections());
}

#[test]
fn rate_mode_accounts_for_every_request() {
    let _g = serial();
    let srv = h2(ServeConfig {
        body_size: 100,
        delay: Duration::from_millis(5),
        ..ServeConfig::default()
    });
    let u = url(&srv, "/");
    let (o, _) = bench_h2(&["-t2", "-c6", "-m8", "-R2000", "-d2s", &u]);
    assert_clean(&o);
    let c = &o.stats.counters;
    assert_eq!(c.due, 4000, "{c:?}");
    // At most what the last 5 ms held is still on its way at the end.
    assert!(c.completed + 100 >= c.due, "{c:?}");
    assert!(o.stats.threads.iter().all(|t| t.counters.completed > 0));
    assert_server_agrees(&srv, &o);
}

/// The JSON document names the protocol and HTTP/2's counts, and follows
/// its published schema (docs/result.schema.json).
#[test]
fn the_json_document_names_the_protocol_and_its_counts() {
    let _g = serial();
    let srv = h2(ServeConfig::default());
    let o = metron_h2(&[
        "-t1",
        "-c2",
        "-R100",
        "-d1s",
        "--json",
        "-",
        &url(&srv, "/"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON document");
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../docs/result.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema itself is valid");
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(doc["protocol"], "HTTP/2");
    assert_eq!(doc["config"]["max_streams"], 100);
    assert_eq!(doc["counters"]["completed"], 100);
    assert_eq!(
        doc["counters"]["http2"],
        serde_json::json!({"resets": {}, "goaway": {}, "connection_errors": 0, "retried": 0})
    );
}

// ---------------------------------------------------------------------
// The Lua scripts of tests/lua.rs and tests/dropin.rs, over HTTP/2.
//
// One script is left out by nature: multiple_endpoints.lua moves its
// thread between servers by asking each connection to close after one
// request (`Connection: close`). HTTP/2 forbids that field (RFC 9113
// section 8.2.2; the request conversion drops it), and a connection's
// streams all go to the server it was opened to, so the thread never
// moves.
// ---------------------------------------------------------------------

#[test]
fn a_static_script_sets_headers_once_and_costs_no_call_per_request() {
    let _g = serial();
    let srv = recording();
    let (u, s) = (url(&srv, "/"), script("auth.lua"));
    let (o, _) = bench_h2(&["-t2", "-c2", "-R200", "-d1s", "-s", &s, &u, "--", "s3cret"]);
    assert_balanced(&o);
    assert_eq!(o.stats.counters.completed, 200);
    let got = srv.stats().recorded();
    assert_eq!(got.len(), 200);
    assert!(got.iter().all(|r| r.version == 2));
    assert!(got
        .iter()
        .all(|r| r.header("authorization") == Some(&b"Bearer s3cret"[..])));
    let calls: Vec<u64> = o.stats.threads.iter().map(|t| t.script_calls).collect();
    assert_eq!(calls, vec![1, 1]);
}

#[test]
fn request_hook_makes_a_new_path_per_request() {
    let _g = serial();
    let srv = recording();
    let (u, s) = (url(&srv, "/"), script("counter.lua"));
    let (o, _) = bench_h2(&["-t1", "-c2", "-R100", "-d1s", "-s", &s, &u]);
    assert_eq!(o.stats.counters.completed, 100);
    let mut paths: Vec<String> = srv.stats().recorded().into_iter().map(|r| r.path).collect();
    paths.sort_by_key(|p| p[6..].parse::<u32>().unwrap());
    let want: Vec<String> = (0..100).map(|i| format!("/item/{i}")).collect();
    assert_eq!(paths, want);
    assert_eq!(o.stats.threads[0].script_calls, 100);
}

#[test]
fn post_bodies_carry_their_length() {
    let _g = serial();
    let srv = recording();
    let (u, s) = (url(&srv, "/submit"), script("post.lua"));
    let (o, _) = bench_h2(&["-t1", "-c1", "-R50", "-d1s", "-s", &s, &u]);
    assert_eq!(o.stats.counters.completed, 50);
    let got = srv.stats().recorded();
    assert_eq!(got.len(), 50);
    for r in got {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/submit"));
        assert_eq!(r.body, br#"{"name":"metron","n":1}"#);
        assert_eq!(r.header("content-length"), Some(&b"23"[..]));
        assert_eq!(r.header("content-type"), Some(&b"application/json"[..]));
    }
}

#[test]
fn head_requests_expect_no_body() {
    let _g = serial();
    let srv = h2(ServeConfig {
        body_size: 500,
        record: 1000,
        ..ServeConfig::default()
    });
    let (u, s) = (url(&srv, "/"), script("head.lua"));
    let (o, _) = bench_h2(&["-t1", "-c2", "-R100", "-d1s", "-s", &s, &u]);
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!(
        (c.completed, c.errors.lost_requests(), c.reconnects),
        (100, 0, 0),
        "{c:?}"
    );
    assert!(srv.stats().recorded().iter().all(|r| r.method == "HEAD"));
}

/// Three requests in one `request()` return become three streams, each
/// matched to its own response (the third a HEAD, whose response has no
/// body); in rate mode each batch takes three slots of the schedule.
#[test]
fn three_requests_in_one_batch_are_three_streams() {
    let _g = serial();
    let srv = h2(ServeConfig {
        body_size: 100,
        record: 100_000,
        ..ServeConfig::default()
    });
    let (u, s) = (url(&srv, "/"), script("pipeline.lua"));
    let (o, _) = bench_h2(&["-t1", "-c2", "-R300", "-d1s", "-s", &s, &u]);
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!(
        (c.due, c.completed, c.errors.lost_requests()),
        (300, 300, 0),
        "{c:?}"
    );
    let st = srv.stats();
    let count = |p: &str| st.recorded().iter().filter(|r| r.path == p).count();
    assert_eq!(
        (count("/first"), count("/second"), count("/third")),
        (100, 100, 100)
    );
    assert_eq!(st.h2_streams(), 300);
}

/// In the closed loop batches of three fill the connection's streams; a
/// request of a batch that finds no stream free waits for one, as over
/// HTTP/1.1 the next batch waits for all three answers.
#[test]
fn in_the_closed_loop_a_batch_waits_for_its_streams() {
    let _g = serial();
    let srv = h2(ServeConfig {
        body_size: 100,
        ..ServeConfig::default()
    });
    let (u, s) = (url(&srv, "/"), script("pipeline.lua"));
    let (o, _) = bench_h2(&["-t1", "-c1", "-d1s", "-s", &s, &u]);
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert!(c.completed > 300, "{c:?}");
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
}

/// `delay()` rests a stream before its next request. With one stream a
/// connection (-m1) that is HTTP/1.1's outcome exactly: one connection,
/// 10-20 ms before each request, 50 to 100 in a second. With four streams
/// each rests on its own, so four times as many (README, HTTP/2: "`delay()`
/// rests a stream, not the connection").
#[test]
fn delay_spaces_out_a_streams_requests() {
    let _g = serial();
    let srv = h2(ServeConfig::default());
    let (u, s) = (url(&srv, "/"), script("random_delay.lua"));
    for (m, least, most) in [("-m1", 45, 100), ("-m4", 4 * 45, 4 * 100)] {
        let (o, _) = bench_h2(&["-t1", "-c1", m, "-d1s", "-s", &s, &u]);
        assert_balanced(&o);
        let c = &o.stats.counters;
        assert!(
            (least..=most).contains(&c.completed),
            "{m}: {} requests",
            c.completed
        );
        assert_eq!(c.errors.lost_requests(), 0, "{m}: {c:?}");
    }
}

/// `thread:stop()` after the tenth response ends the thread. With one
/// stream the outcome is HTTP/1.1's exactly. With the default 100 streams,
/// 100 or more requests were on the wire when it stopped: those not
/// answered by then are in flight at the end, and answers that came in the
/// same read as the tenth are counted, as they are for pipelined HTTP/1.1
/// responses.
#[test]
fn thread_stop_ends_that_thread_after_ten_responses() {
    let _g = serial();
    let srv = h2(ServeConfig::default());
    let (u, s) = (url(&srv, "/"), script("stop.lua"));
    let (o, _) = bench_h2(&["-t1", "-c1", "-m1", "-d5s", "-s", &s, &u]);
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!((c.completed, c.in_flight), (10, 0), "{c:?}");
    assert_eq!(c.at_end.stopped_threads, 1, "{c:?}");

    let start = std::time::Instant::now();
    let (o, _) = bench_h2(&["-t1", "-c1", "-d5s", "-s", &s, &u]);
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "the thread ran on"
    );
    assert_balanced(&o);
    let c = &o.stats.counters;
    // 100 requests went out at the start, and one more for each of the
    // first nine responses read before the tenth stopped the thread.
    assert!((100..=109).contains(&c.due), "{c:?}");
    assert!((10..=c.due).contains(&c.completed), "{c:?}");
    assert_eq!(c.completed + c.in_flight, c.due, "{c:?}");
    assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
    assert_eq!(c.at_end.stopped_threads, 1, "{c:?}");
}

#[test]
fn setup_passes_values_in_and_done_reads_them_out() {
    let _g = serial();
    let srv = h2(ServeConfig::default());
    let o = metron_h2(&[
        "-t2",
        "-c2",
        "-R100",
        "-d1s",
        "-s",
        &script("setup.lua"),
        &url(&srv, "/"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("thread ")).collect();
    assert_eq!(lines.len(), 2, "{out}");
    for (i, line) in lines.iter().enumerate() {
        let id = i + 1;
        assert!(
            line.starts_with(&format!(
                "thread {id} (t{id}, 30) made 50 requests and got 50 responses"
            )),
            "{out}"
        );
    }
    assert!(out.find("Requests/sec").unwrap() < out.find("thread 1").unwrap());
}

#[test]
fn done_prints_a_custom_report() {
    let _g = serial();
    let srv = h2(ServeConfig::default());
    let o = metron_h2(&[
        "-t1",
        "-c2",
        "-R100",
        "-d1s",
        "-s",
        &script("report.lua"),
        &url(&srv, "/"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("custom report\nrequests 100\nerrors 0\np50 "),
        "{out}"
    );
    assert!(out.contains("min<=max true\nsamples 1\n"), "{out}");
}

#[test]
fn done_reads_every_threads_string_globals() {
    let _g = serial();
    let srv = h2(ServeConfig::default());
    let o = metron_h2(&[
        "-t2",
        "-c2",
        "-d1s",
        "-R100",
        "-s",
        &script("thread_report.lua"),
        &url(&srv, "/"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("worker-")).collect();
    assert_eq!(lines.len(), 2, "{out}");
    let answered: u64 = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let rest = l
                .strip_prefix(&format!("worker-{} answered ", i + 1))
                .unwrap_or_else(|| panic!("{out}"));
            rest.parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(answered, 100, "{out}");
}

#[test]
fn scripts_resolve_and_probe_addresses() {
    let _g = serial();
    let srv = h2(ServeConfig::default());
    let addr = srv.addr();
    let o = metron_h2(&[
        "-t2",
        "-c2",
        "-R10",
        "-d1s",
        "-s",
        &script("addresses.lua"),
        &url(&srv, "/"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("lookup {addr} connect true\n")),
        "{out}"
    );
    assert_eq!(
        out.matches(&format!("thread addr {addr}\n")).count(),
        2,
        "{out}"
    );
}

/// `request()` is called as each request falls due, as over HTTP/1.1.
/// `response()` gets HTTP/2's field names, which are lowercase (RFC 9113
/// section 8.2.1): the script's `headers["Content-Length"]` finds nothing,
/// where `headers["content-length"]` would.
#[test]
fn in_rate_mode_request_is_called_when_each_request_is_due() {
    let _g = serial();
    let srv = h2(ServeConfig {
        body_size: 3,
        ..ServeConfig::default()
    });
    let o = metron_h2(&[
        "-t1",
        "-c4",
        "-R100",
        "-d2s",
        "-s",
        &script("paced.lua"),
        &url(&srv, "/"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let gap: u64 = out
        .lines()
        .find_map(|l| {
            l.strip_prefix("calls 200 mean gap ")?
                .strip_suffix(" us")?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no gap line in {out}"));
    assert!(
        (9_900..=10_100).contains(&gap),
        "mean gap {gap} us at 100/s"
    );
    assert!(out.contains("last response 200 nil \"xxx\"\n"), "{out}");
}

/// Response fields reach `response()` with lowercase names, and the body
/// whole.
#[test]
fn response_sees_lowercase_field_names_and_the_body() {
    let _g = serial();
    let srv = h2(ServeConfig {
        body_size: 5,
        ..ServeConfig::default()
    });
    let dir = TempDir::new("h2-lua");
    let file = dir.file(
        "fields.lua",
        r#"
seen = {}
function response(status, headers, body)
  for name, value in pairs(headers) do
    seen[#seen + 1] = name .. "=" .. value
  end
  table.sort(seen)
  last = status .. " " .. #body .. " " .. table.concat(seen, ",")
  seen = {}
end
local thread
function setup(t) thread = t end
function done() io.write("last ", thread:get("last"), "\n") end
"#,
    );
    let o = metron_h2(&["-t1", "-c1", "-R20", "-d1s", "-s", &file, &url(&srv, "/")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("last 200 5 content-length=5,content-type=text/plain\n"),
        "{out}"
    );
}

#[test]
fn cjson_decodes_arguments_and_encodes_results() {
    let _g = serial();
    let srv = recording();
    let (u, s) = (url(&srv, "/"), script("json.lua"));
    let o = metron_h2(&[
        "-t1",
        "-c1",
        "-R30",
        "-d1s",
        "-s",
        &s,
        &u,
        "--",
        r#"["/a","/b","/c"]"#,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(r#"{"ok":true,"requests":30}"#)
            || stdout(&o).contains(r#"{"requests":30,"ok":true}"#),
        "{}",
        stdout(&o)
    );
    let st = srv.stats();
    let count = |p: &str| st.recorded().iter().filter(|r| r.path == p).count();
    assert_eq!((count("/a"), count("/b"), count("/c")), (10, 10, 10));
}

/// Bodies built per request by lua-cjson arrive whole, each on its stream.
#[test]
fn a_lua_cjson_script_posts_the_bodies_it_builds() {
    let _g = serial();
    let srv = recording();
    let (u, s) = (url(&srv, "/"), script("cjson.lua"));
    let paths = r#"{"paths":["/a","/b"]}"#;
    let o = metron_h2(&["-t1", "-c1", "-R20", "-d1s", "-s", &s, &u, "--", paths]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("cjson: {"), "{}", stdout(&o));
    let got = srv.stats().recorded();
    assert_eq!(got.len(), 20);
    for r in got {
        let n: u32 =
            std::str::from_utf8(&r.body[1..r.body.iter().position(|&b| b == b',').unwrap()])
                .unwrap()
                .parse()
                .unwrap();
        let path = if n % 2 == 1 { "/a" } else { "/b" };
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", path));
        assert!(r.body.ends_with(br#","a\/b"]"#), "{:?}", r.body);
        let length = r.body.len().to_string();
        assert_eq!(r.header("content-length"), Some(length.as_bytes()));
    }
}

#[test]
fn a_runtime_error_in_a_hook_stops_the_run_after_reporting() {
    let _g = serial();
    let srv = h2(ServeConfig::default());
    let o = metron_h2(&[
        "-t2",
        "-c2",
        "-R100",
        "-d5s",
        "-s",
        &script("response_error.lua"),
        &url(&srv, "/"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("in response()") && err.contains("response_error.lua:3:"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(stdout(&o).contains("Requests/sec:"), "{}", stdout(&o));
}

/// A script whose wrk table makes a broken request is refused before
/// anything is sent, over HTTP/2 as over HTTP/1.1.
#[test]
fn a_broken_static_request_names_the_fields_to_fix() {
    let _g = serial();
    let srv = h2(ServeConfig::default());
    let err = one_line_error(&metron_h2(&[
        "-t1",
        "-c1",
        "-d1s",
        "-s",
        &script("bad_header.lua"),
        &url(&srv, "/"),
    ]));
    assert!(
        err.contains("wrk.headers") && err.contains("is not an HTTP request"),
        "{err}"
    );
    assert_eq!(srv.stats().requests(), 0, "nothing was sent");
}
