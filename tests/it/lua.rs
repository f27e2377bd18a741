//! wrk-style Lua scripts against the built-in target: what the target
//! received, what the scripts printed, and how script errors end a run.
//! What a script does on the wire is tested over HTTP/1.1 and HTTP/2
//! alike, each request of a batch on a stream of its own over HTTP/2.

use crate::common::files::lua_file;
use crate::common::process::run_to_file;
use crate::common::scripts::*;
use crate::common::*;
use metron::serve::ServeConfig;

/// Every one of the `due` requests went, and all completed but maybe the
/// last one or two, still on their way back as the run ended (on a busy
/// machine): the requests completed and those sent.
fn all_but_the_last(o: &metron::engine::Outcome, due: u64) -> (usize, usize) {
    let c = &o.stats.counters;
    assert_eq!(c.completed + c.in_flight, due, "{c:?}");
    assert!(c.in_flight <= 2, "{c:?}");
    (c.completed as usize, due as usize)
}

per_protocol! {
    fn a_static_script_sets_headers_once_and_costs_no_call_per_request(proto) {
        let _g = serial();
        let srv = proto.recording();
        let (u, s) = (proto.url(&srv, "/"), script("auth.lua"));
        let (o, _) = proto.bench(&["-t2", "-c2", "-R200", "-d1s", "-s", &s, &u, "--", "s3cret"]);
        assert_balanced(&o);
        let (done, sent) = all_but_the_last(&o, 200);
        let got = srv.stats().recorded();
        assert!((done..=sent).contains(&got.len()), "{} received", got.len());
        assert!(got.iter().all(|r| r.version == proto.version()));
        assert!(got
            .iter()
            .all(|r| r.header("authorization") == Some(&b"Bearer s3cret"[..])));
        // One Lua call per thread (building the request), none per request.
        let calls: Vec<u64> = o.stats.threads.iter().map(|t| t.script_calls).collect();
        assert_eq!(calls, vec![1, 1]);
    }
}

per_protocol! {
    fn request_hook_makes_a_new_path_per_request(proto) {
        let _g = serial();
        let srv = proto.recording();
        let (u, s) = (proto.url(&srv, "/"), script("counter.lua"));
        let (o, _) = proto.bench(&["-t1", "-c2", "-R100", "-d1s", "-s", &s, &u]);
        let (done, sent) = all_but_the_last(&o, 100);
        let mut paths: Vec<String> = srv.stats().recorded().into_iter().map(|r| r.path).collect();
        assert!((done..=sent).contains(&paths.len()), "{} received", paths.len());
        paths.sort_by_key(|p| p[6..].parse::<u32>().unwrap());
        let want: Vec<String> = (0..paths.len()).map(|i| format!("/item/{i}")).collect();
        assert_eq!(paths, want);
        assert_eq!(o.stats.threads[0].script_calls, 100);
    }
}

per_protocol! {
    fn post_bodies_carry_their_length(proto) {
        let _g = serial();
        let srv = proto.recording();
        let (u, s) = (proto.url(&srv, "/submit"), script("post.lua"));
        let (o, _) = proto.bench(&["-t1", "-c1", "-R50", "-d1s", "-s", &s, &u]);
        let (done, sent) = all_but_the_last(&o, 50);
        let got = srv.stats().recorded();
        assert!((done..=sent).contains(&got.len()), "{} received", got.len());
        for r in got {
            assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/submit"));
            assert_eq!(r.body, br#"{"name":"metron","n":1}"#);
            assert_eq!(r.header("content-length"), Some(&b"23"[..]));
            assert_eq!(r.header("content-type"), Some(&b"application/json"[..]));
        }
    }
}

per_protocol! {
    fn head_requests_expect_no_body(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig {
            body_size: 500,
            record: 1000,
            ..ServeConfig::default()
        });
        let (u, s) = (proto.url(&srv, "/"), script("head.lua"));
        let (o, _) = proto.bench(&["-t1", "-c2", "-R100", "-d1s", "-s", &s, &u]);
        assert_balanced(&o);
        let c = o.stats.counters;
        assert_eq!(
            (c.completed, c.errors.lost_requests(), c.reconnects),
            (100, 0, 0),
            "{c:?}"
        );
        assert!(srv.stats().recorded().iter().all(|r| r.method == "HEAD"));
    }
}

per_protocol! {
    /// Three requests in one `request()` return are each matched to their
    /// own response (the third a HEAD, whose response has no body):
    /// pipelined over HTTP/1.1, three streams over HTTP/2. In rate mode
    /// each batch takes three slots of the schedule.
    fn three_requests_in_one_batch_are_each_matched_to_a_response(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig {
            body_size: 100,
            record: 100_000,
            ..ServeConfig::default()
        });
        let (u, s) = (proto.url(&srv, "/"), script("pipeline.lua"));
        let (o, _) = proto.bench(&["-t1", "-c2", "-R300", "-d1s", "-s", &s, &u]);
        assert_balanced(&o);
        let c = o.stats.counters;
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
        match proto {
            Proto::Http1 => {}
            Proto::Http2 => assert_eq!(st.h2_streams(), 300),
            Proto::Http3 => assert_eq!(st.h3_streams(), 300),
        }
    }
}

per_protocol! {
    /// In the closed loop the next batch goes out when all three are
    /// answered; over HTTP/2 batches of three fill the connection's
    /// streams, and a request of a batch that finds no stream free waits
    /// for one.
    fn in_the_closed_loop_a_batch_waits_for_its_answers(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig {
            body_size: 100,
            ..ServeConfig::default()
        });
        let (u, s) = (proto.url(&srv, "/"), script("pipeline.lua"));
        let (o, _) = proto.bench(&["-t1", "-c1", "-d1s", "-s", &s, &u]);
        assert_balanced(&o);
        let c = o.stats.counters;
        assert!(c.completed > 300, "{c:?}");
        assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
    }
}

per_protocol! {
    /// `delay()` rests a connection (over HTTP/2, a stream) before its next
    /// request: one connection, 10-20 ms before each request, 50 to 100 in
    /// a second. HTTP/2 with one stream a connection (-m1) is HTTP/1.1's
    /// case exactly; with four streams each rests on its own, so four
    /// times as many (README, HTTP/2: "`delay()` rests a stream, not the
    /// connection").
    fn delay_spaces_out_requests(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig::default());
        let (u, s) = (proto.url(&srv, "/"), script("random_delay.lua"));
        let cases: &[(&[&str], u64, u64)] = match proto {
            Proto::Http1 => &[(&[], 45, 100)],
            Proto::Http2 | Proto::Http3 => {
                &[(&["-m1"], 45, 100), (&["-m4"], 4 * 45, 4 * 100)]
            }
        };
        for &(m, least, most) in cases {
            let args = [m, &["-t1", "-c1", "-d1s", "-s", &s, &u]].concat();
            let (o, _) = proto.bench(&args);
            assert_balanced(&o);
            let c = &o.stats.counters;
            assert!(
                (least..=most).contains(&c.completed),
                "{m:?}: {} requests",
                c.completed
            );
            assert_eq!(c.errors.lost_requests(), 0, "{m:?}: {c:?}");
        }
    }
}

per_protocol! {
    /// `thread:stop()` after the tenth response ends the thread, with one
    /// request on the wire at a time (tests/it/http2_truth.rs has HTTP/2's
    /// many streams).
    fn thread_stop_ends_that_thread_after_ten_responses(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig::default());
        let (u, s) = (proto.url(&srv, "/"), script("stop.lua"));
        let args = [proto.one_stream(), &["-t1", "-c1", "-d5s", "-s", &s, &u]].concat();
        let (o, _) = proto.bench(&args);
        assert_balanced(&o);
        let c = o.stats.counters;
        assert_eq!((c.completed, c.in_flight), (10, 0), "{c:?}");
        assert_eq!(c.at_end.stopped_threads, 1, "{c:?}");
    }
}

per_protocol! {
    fn setup_passes_values_in_and_done_reads_them_out(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig::default());
        let o = proto.metron_script(&srv, "setup.lua", &["-t2", "-c2", "-R100", "-d1s"], &[]);
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
        // done() output comes after the report.
        assert!(out.find("Requests/sec").unwrap() < out.find("thread 1").unwrap());
    }
}

per_protocol! {
    fn done_prints_a_custom_report(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig::default());
        let o = proto.metron_script(&srv, "report.lua", &["-t1", "-c2", "-R100", "-d1s"], &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(
            out.contains("custom report\nrequests 100\nerrors 0\np50 "),
            "{out}"
        );
        assert!(out.contains("min<=max true\nsamples 1\n"), "{out}");
    }
}

per_protocol! {
    fn scripts_resolve_and_probe_addresses(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig::default());
        let addr = srv.addr();
        let o = proto.metron_script(&srv, "addresses.lua", &["-t2", "-c2", "-R10", "-d1s"], &[]);
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
}

per_protocol! {
    /// `request()` is called as each request falls due, whatever carries it.
    fn in_rate_mode_request_is_called_when_each_request_is_due(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig {
            body_size: 3,
            ..ServeConfig::default()
        });
        let o = proto.metron_script(&srv, "paced.lua", &["-t1", "-c4", "-R100", "-d2s"], &[]);
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
        // HTTP/2's and HTTP/3's field names are lowercase (RFC 9113
        // section 8.2.1, RFC 9114 section 4.2): the script's
        // `headers["Content-Length"]` finds nothing there.
        let length = match proto {
            Proto::Http1 => "3",
            Proto::Http2 | Proto::Http3 => "nil",
        };
        let last = format!("last response 200 {length} \"xxx\"\n");
        assert!(out.contains(&last), "{out}");
    }
}

per_protocol! {
    fn cjson_decodes_arguments_and_encodes_results(proto) {
        let _g = serial();
        let srv = proto.recording();
        let paths = r#"["/a","/b","/c"]"#;
        let flags = ["-t1", "-c1", "-R30", "-d1s"];
        let o = proto.metron_script(&srv, "json.lua", &flags, &["--", paths]);
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
}

#[test]
fn a_syntax_error_names_the_file_and_line_before_any_request() {
    let srv = recording();
    let o = metron(&[
        "-t1",
        "-c1",
        "-d1s",
        "-s",
        &script("syntax_error.lua"),
        &url(&srv, "/"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("syntax_error.lua:3:"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(srv.stats().requests(), 0);
}

per_protocol! {
    fn a_runtime_error_in_a_hook_stops_the_run_after_reporting(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig::default());
        let o = proto.metron_script(&srv, "response_error.lua", &["-t2", "-c2", "-R100", "-d5s"], &[]);
        assert_eq!(o.status.code(), Some(1));
        let err = stderr(&o);
        assert!(
            err.contains("in response()") && err.contains("response_error.lua:3:"),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(stdout(&o).contains("Requests/sec:"), "{}", stdout(&o));
    }
}

#[test]
fn an_error_in_done_still_leaves_the_report() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let o = metron(&[
        "-t1",
        "-c1",
        "-R10",
        "-d1s",
        "-s",
        &script("done_error.lua"),
        &url(&srv, "/"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("Requests/sec:"));
    let err = stderr(&o);
    assert!(
        err.contains("in done()") && err.contains("done_error.lua:2: broken report"),
        "{err}"
    );
}

/// Every way a script can fail names, on one line, the stage, the file
/// and the line to fix: loading, each hook, an error raised without a
/// position (`error(msg, 0)`, `error()`, `error({})`), and request bytes
/// that are not HTTP.
#[test]
fn every_script_error_names_the_stage_the_file_and_the_line() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let dir = std::env::temp_dir().join(format!("metron-lua-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "load.lua",
            "local t = nil\nlocal x = t.field\n",
            "while loading",
            ":2: attempt to index",
        ),
        (
            "load0.lua",
            "\nerror('no position', 0)\n",
            "while loading",
            ":2: no position",
        ),
        (
            "loadt.lua",
            "\n\nerror({})\n",
            "while loading",
            ":3: table: ",
        ),
        (
            "init.lua",
            "function init(args)\n  error()\nend\n",
            "in init()",
            ":2: nil",
        ),
        (
            "setup.lua",
            "function setup(t)\n\n  t.addr = 'x'\nend\n",
            "in setup()",
            ":3: invalid thread.addr",
        ),
        (
            "request.lua",
            "function request()\n  error('r')\nend\n",
            "in request()",
            ":2: r",
        ),
        (
            "request_type.lua",
            "\nfunction request()\n  return {}\nend\n",
            "in request()",
            ":2: expected a string",
        ),
        (
            "request_http.lua",
            "\nfunction request()\n  return 'hello'\nend\n",
            "in request()",
            ":2: returned bytes that are not whole HTTP requests",
        ),
        (
            "response.lua",
            "function response()\n  error('s', 0)\nend\n",
            "in response()",
            ":2: s",
        ),
        (
            "delay.lua",
            "function delay()\n  return nil + 1\nend\n",
            "in delay()",
            ":2: attempt to perform arithmetic",
        ),
        (
            "done.lua",
            "function done()\n\n  error('d')\nend\n",
            "in done()",
            ":3: d",
        ),
    ];
    for (name, code, stage, line) in cases {
        let file = dir.join(name);
        std::fs::write(&file, code).unwrap();
        let file = file.to_str().unwrap();
        let o = metron(&["-t1", "-c1", "-R20", "-d1s", "-s", file, &url(&srv, "/")]);
        let err = one_line_error(&o);
        let want = format!("script error {stage} ({file}): {file}{line}");
        assert!(err.contains(&want), "{name}: want '{want}' in '{err}'");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A script whose Lua never returns (LuaJIT's compiled loops check no
/// hook, so nothing can interrupt it) cannot hang the run: five seconds
/// after the run's end, or after a stop, metron gives up on that thread
/// with one line that says why, whether the loop is in request() or in a
/// flow. Both run at once, to keep the test short.
#[test]
fn a_script_that_never_returns_ends_the_run_with_an_error() {
    let srv = server(ServeConfig::default());
    let u = url(&srv, "/");
    let request = lua_file(
        "loop_request.lua",
        "local n = 0\nfunction request()\n  n = n + 1\n  if n == 20 then while true do end end\n  return wrk.format()\nend",
    );
    let flow = lua_file(
        "loop_flow.lua",
        "function flow(visit)\n  http.get('/', { name = 'home' })\n  if visit.id == 10 then while true do end end\nend",
    );
    let runs: Vec<(std::time::Instant, std::process::Child)> = [request, flow]
        .iter()
        .map(|script| {
            let child = std::process::Command::new(env!("CARGO_BIN_EXE_metron"))
                .args(["-t2", "-c2", "-R100", "-d1s", "-s"])
                .arg(script)
                .arg(&u)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("the binary runs");
            (std::time::Instant::now(), child)
        })
        .collect();
    for (started, child) in runs {
        let o = wait_bounded(child, std::time::Duration::from_secs(30));
        let took = started.elapsed();
        let err = one_line_error(&o);
        assert!(
            err.contains("still busy 5s after the run ended")
                && err.contains("a Lua loop that never ends"),
            "{err}"
        );
        assert!(took.as_secs_f64() < 15.0, "{took:?}");
    }
}

#[test]
fn a_missing_script_is_a_clear_error() {
    let o = metron(&["-s", "/no/such/script.lua", "http://127.0.0.1:1/"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/no/such/script.lua"), "{}", stderr(&o));
}

per_protocol! {
    /// A script whose wrk table makes a broken request (a line break in a
    /// header value) is refused before anything is sent, with the fields to
    /// fix; it used to stop a worker thread with a bare parse error.
    fn a_broken_static_request_names_the_fields_to_fix(proto) {
        let _g = serial();
        let srv = proto.server(ServeConfig::default());
        let err = one_line_error(&proto.metron_script(&srv, "bad_header.lua", &["-t1", "-c1", "-d1s"], &[]));
        assert!(
            err.contains("wrk.headers") && err.contains("is not an HTTP request"),
            "{err}"
        );
        assert_eq!(srv.stats().requests(), 0, "nothing was sent");
    }
}

/// What metron and `print_order.lua` print with `-t2 -R100 -d1s`, in the
/// order it was written.
const PRINT_ORDER: [&str; 8] = [
    // As in wrk, setup() and init() run before the banner is printed.
    "setup\t1\n",
    "init\t1\n",
    "setup\t2\n",
    "init\t2\n",
    "(no newline)Running 1s test @ ",
    "  Thread Stats",
    "Requests/sec:",
    "done\t100\nno newline at the end",
];

#[test]
fn what_scripts_print_keeps_its_place_in_a_redirected_stdout() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let (u, s) = (url(&srv, "/"), script("print_order.lua"));
    let args = ["-t2", "-c2", "-R100", "-d1s", "-s", &s, &u];
    let (out, _) = run_to_file("order.txt", &args);
    assert_in_order(&out, &PRINT_ORDER);
    assert!(out.ends_with("done\t100\nno newline at the end"), "{out}");
}

/// With `--json -` standard output is the document alone: the script's
/// output goes to standard error, in its place among the text report.
#[test]
fn with_json_on_stdout_scripts_print_to_stderr() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let (u, s) = (url(&srv, "/"), script("print_order.lua"));
    let args = ["-t2", "-c2", "-R100", "-d1s", "--json", "-", "-s", &s, &u];
    let (out, err) = run_to_file("order.json", &args);
    let doc: metron::report::json::Document =
        serde_json::from_str(&out).expect("stdout is one JSON document");
    assert_eq!(doc.counters.completed, 100);
    assert_in_order(&err, &PRINT_ORDER);
}

per_protocol! {
    /// Bodies built per request by lua-cjson arrive whole, each with its
    /// length, and the script sees the module's settings and its safe
    /// instance.
    fn a_lua_cjson_script_gets_instances_settings_and_the_safe_module(proto) {
        let _g = serial();
        let srv = proto.recording();
        let paths = r#"{"paths":["/a","/b"]}"#;
        let flags = ["-t1", "-c1", "-R20", "-d1s"];
        let o = proto.metron_script(&srv, "cjson.lua", &flags, &["--", paths]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix("cjson: "))
            .unwrap_or_else(|| panic!("no report line in {out}"));
        let report: serde_json::Value = serde_json::from_str(line).unwrap();
        let want = serde_json::json!({
            "requests": 20,
            "module": ["cjson", "2.1.0", "cjson"],
            "precision": [14, 4],
            "sparse": [false, 2, 10],
            "converted": "b",
            "padded": "[null,null,\"c\"]",
            "sparse_error": "Cannot serialise table: excessively sparse array",
            "safe_error": "Expected object key string but found invalid token at character 2",
            "depth_error": "Found too many nested data structures (1001) at character 1001",
            "nested": 1,
            "too_deep": "Found too many nested data structures (3) at character 3",
            "null": true,
            "nan": true,
        });
        assert_eq!(report, want);

        // Bodies were built in the worker's state by the second instance, at
        // precision 4, with `/` escaped, and posted with their length.
        let recorded = srv.stats().recorded();
        for r in &recorded {
            assert_eq!(r.method, "POST");
            let length = r.body.len().to_string();
            assert_eq!(r.header("content-length"), Some(length.as_bytes()));
        }
        let mut got: Vec<(String, String)> = recorded
            .into_iter()
            .map(|r| (r.path, String::from_utf8(r.body).unwrap()))
            .collect();
        got.sort_by_key(|(_, body)| body[1..body.find(',').unwrap()].parse::<u32>().unwrap());
        let want: Vec<(String, String)> = (1..=20)
            .map(|n| {
                let path = if n % 2 == 1 { "/a" } else { "/b" };
                let body = format!(r#"[{n},{},"a\/b"]"#, g4(f64::from(n) / 3.0));
                (path.to_owned(), body)
            })
            .collect();
        assert_eq!(got, want);
    }
}
