//! wrk-style Lua scripts against the built-in target: what the target
//! received, what the scripts printed, and how script errors end a run.

use crate::common::*;
use metron::serve::ServeConfig;

#[test]
fn a_static_script_sets_headers_once_and_costs_no_call_per_request() {
    let _g = serial();
    let srv = recording();
    let (u, s) = (url(&srv, "/"), script("auth.lua"));
    let (o, _) = bench(&["-t2", "-c2", "-R200", "-d1s", "-s", &s, &u, "--", "s3cret"]);
    assert_balanced(&o);
    assert_eq!(o.stats.counters.completed, 200);
    let got = srv.stats().recorded();
    assert_eq!(got.len(), 200);
    assert!(got
        .iter()
        .all(|r| r.header("authorization") == Some(&b"Bearer s3cret"[..])));
    // One Lua call per thread (building the request), none per request.
    let calls: Vec<u64> = o.stats.threads.iter().map(|t| t.script_calls).collect();
    assert_eq!(calls, vec![1, 1]);
}

#[test]
fn request_hook_makes_a_new_path_per_request() {
    let _g = serial();
    let srv = recording();
    let (u, s) = (url(&srv, "/"), script("counter.lua"));
    let (o, _) = bench(&["-t1", "-c2", "-R100", "-d1s", "-s", &s, &u]);
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
    let (o, _) = bench(&["-t1", "-c1", "-R50", "-d1s", "-s", &s, &u]);
    assert_eq!(o.stats.counters.completed, 50);
    for r in srv.stats().recorded() {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/submit"));
        assert_eq!(r.body, br#"{"name":"metron","n":1}"#);
        assert_eq!(r.header("content-length"), Some(&b"23"[..]));
        assert_eq!(r.header("content-type"), Some(&b"application/json"[..]));
    }
}

#[test]
fn head_requests_expect_no_body() {
    let _g = serial();
    let srv = server(ServeConfig {
        body_size: 500,
        record: 1000,
        ..ServeConfig::default()
    });
    let (u, s) = (url(&srv, "/"), script("head.lua"));
    let (o, _) = bench(&["-t1", "-c2", "-R100", "-d1s", "-s", &s, &u]);
    assert_balanced(&o);
    let c = o.stats.counters;
    assert_eq!(
        (c.completed, c.errors.lost_requests(), c.reconnects),
        (100, 0, 0),
        "{c:?}"
    );
    assert!(srv.stats().recorded().iter().all(|r| r.method == "HEAD"));
}

#[test]
fn three_pipelined_requests_are_each_matched_to_a_response() {
    let _g = serial();
    let srv = server(ServeConfig {
        body_size: 100,
        record: 100_000,
        ..ServeConfig::default()
    });
    let (u, s) = (url(&srv, "/"), script("pipeline.lua"));
    // Rate mode: each batch of three takes three slots of the schedule.
    let (o, _) = bench(&["-t1", "-c2", "-R300", "-d1s", "-s", &s, &u]);
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
    // Closed loop: the next batch goes out when all three are answered.
    let (o, _) = bench(&["-t1", "-c1", "-d1s", "-s", &s, &u]);
    assert_balanced(&o);
    assert!(o.stats.counters.completed > 300, "{:?}", o.stats.counters);
}

#[test]
fn delay_spaces_out_a_connections_requests() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let (u, s) = (url(&srv, "/"), script("random_delay.lua"));
    // One connection, 10-20 ms before each request: 50 to 100 in a second.
    let (o, _) = bench(&["-t1", "-c1", "-d1s", "-s", &s, &u]);
    let n = o.stats.counters.completed;
    assert!((45..=100).contains(&n), "{n} requests");
}

#[test]
fn thread_stop_ends_that_thread_after_ten_responses() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let (u, s) = (url(&srv, "/"), script("stop.lua"));
    let (o, _) = bench(&["-t1", "-c1", "-d5s", "-s", &s, &u]);
    assert_balanced(&o);
    let c = o.stats.counters;
    assert_eq!((c.completed, c.in_flight), (10, 0), "{c:?}");
}

#[test]
fn setup_passes_values_in_and_done_reads_them_out() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let o = metron(&[
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
    // done() output comes after the report.
    assert!(out.find("Requests/sec").unwrap() < out.find("thread 1").unwrap());
}

#[test]
fn done_prints_a_custom_report() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let o = metron(&[
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
fn scripts_resolve_and_probe_addresses() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let addr = srv.addr();
    let o = metron(&[
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

#[test]
fn in_rate_mode_request_is_called_when_each_request_is_due() {
    let _g = serial();
    let srv = server(ServeConfig {
        body_size: 3,
        ..ServeConfig::default()
    });
    let o = metron(&[
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
    assert!(out.contains("last response 200 3 \"xxx\"\n"), "{out}");
}

#[test]
fn cjson_decodes_arguments_and_encodes_results() {
    let _g = serial();
    let srv = recording();
    let (u, s) = (url(&srv, "/"), script("json.lua"));
    let o = metron(&[
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

#[test]
fn a_runtime_error_in_a_hook_stops_the_run_after_reporting() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let o = metron(&[
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

#[test]
fn a_missing_script_is_a_clear_error() {
    let o = metron(&["-s", "/no/such/script.lua", "http://127.0.0.1:1/"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/no/such/script.lua"), "{}", stderr(&o));
}

/// A script whose wrk table makes a broken request (a line break in a
/// header value) is refused before anything is sent, with the fields to
/// fix; it used to stop a worker thread with a bare parse error.
#[test]
fn a_broken_static_request_names_the_fields_to_fix() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let script = format!(
        "{}/tests/scripts/bad_header.lua",
        env!("CARGO_MANIFEST_DIR")
    );
    let err = one_line_error(&metron(&[
        "-t1",
        "-c1",
        "-d1s",
        "-s",
        &script,
        &url(&srv, "/"),
    ]));
    assert!(
        err.contains("wrk.headers") && err.contains("is not an HTTP request"),
        "{err}"
    );
    assert_eq!(srv.stats().requests(), 0, "nothing was sent");
}

/// Runs the binary with its standard output written to a file (the case
/// where the C library buffers a script's output), and returns what the
/// file holds and what went to standard error.
fn run_to_file(name: &str, args: &[&str]) -> (String, String) {
    let dir = std::env::temp_dir().join(format!("metron-lua-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let file = std::fs::File::create(&path).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(args)
        .stdout(file)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let o = wait_bounded(child, std::time::Duration::from_secs(60));
    assert!(o.status.success(), "{}", stderr(&o));
    (std::fs::read_to_string(&path).unwrap(), stderr(&o))
}

/// Asserts that `parts` occur in `text` in this order.
fn assert_in_order(text: &str, parts: &[&str]) {
    let mut from = 0;
    for part in parts {
        match text[from..].find(part) {
            Some(at) => from += at + part.len(),
            None => panic!("{part:?} missing or out of order in:\n{text}"),
        }
    }
}

/// What metron and `print_order.lua` print with `-t2 -R100 -d1s`, in the
/// order it was written.
const PRINT_ORDER: [&str; 8] = [
    "Running 1s test @ ",
    "setup\t1\n",
    "init\t1\n",
    "setup\t2\n",
    "init\t2\n",
    "(no newline)  Thread Stats",
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

/// `%.4g` for 0.1 <= x < 1000, as lua-cjson prints at precision 4.
fn g4(x: f64) -> String {
    let whole_digits = if x < 1.0 {
        0
    } else {
        x.log10().floor() as usize + 1
    };
    let text = format!("{:.*}", 4 - whole_digits, x);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_owned()
}

#[test]
fn a_lua_cjson_script_gets_instances_settings_and_the_safe_module() {
    let _g = serial();
    let srv = recording();
    let (u, s) = (url(&srv, "/"), script("cjson.lua"));
    let paths = r#"{"paths":["/a","/b"]}"#;
    let o = metron(&["-t1", "-c1", "-R20", "-d1s", "-s", &s, &u, "--", paths]);
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
    // precision 4, with `/` escaped.
    let mut got: Vec<(String, String)> = srv
        .stats()
        .recorded()
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
