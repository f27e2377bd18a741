//! `--requests FILE`: replaying a mixed file against the built-in target
//! and checking what it received (paths, bodies, headers), the per-endpoint
//! report and outputs, several hosts, the seeded random order, and the
//! errors for broken files.

use crate::common::files::*;
use crate::common::*;
use metron::engine::Outcome;
use metron::serve::Server;

/// `file` replayed against `srv` with `flags`: the run and its report.
fn replay(srv: &Server, file: &str, flags: &[&str]) -> (Outcome, String) {
    bench_replay(flags, file, &url(srv, "/"))
}

const MIXED: &str = r#"[
  {"method": "POST", "path": "/submit", "headers": {"Content-Type": "application/octet-stream", "Authorization": "Bearer stale"}, "body_file": "blob.bin"},
  {"path": "/items?id=1", "name": "items"},
  {"path": "/items?id=2", "name": "items"},
  {"path": "/status/404"},
  {"method": "PUT", "path": "/put", "body": "text body"}
]"#;

#[test]
fn a_mixed_file_is_replayed_in_order_with_bodies_and_headers() {
    let _g = serial();
    let d = dir("mixed");
    let blob: Vec<u8> = (0..=255u8).collect();
    write(&d, "blob.bin", &blob);
    let file = write(&d, "r.json", MIXED.as_bytes());
    let srv = recording();
    let flags = [
        "-t1",
        "-c2",
        "-d1s",
        "-R250",
        "-H",
        "Authorization: Bearer fresh",
    ];
    let (o, text) = replay(&srv, &file, &flags);
    assert_balanced(&o);
    let c = &o.stats.counters;
    assert_eq!(c.due, 250, "{c:?}");
    assert_eq!(c.completed, 250, "{c:?}");
    // File order, cycling: every request 50 times.
    for path in ["/submit", "/status/404", "/put"] {
        assert_eq!(srv.stats().path_count(path), 50, "{path}");
    }
    assert_eq!(c.errors.status, 50);
    let recorded = srv.stats().recorded();
    for query in ["/items?id=1", "/items?id=2"] {
        assert_eq!(
            recorded.iter().filter(|r| r.path == query).count(),
            50,
            "{query}"
        );
    }
    let post = recorded
        .iter()
        .find(|r| r.path == "/submit")
        .expect("a POST arrived");
    assert_eq!(post.method, "POST");
    assert_eq!(post.body, blob);
    assert_eq!(post.header("authorization"), Some(&b"Bearer fresh"[..]));
    assert_eq!(
        post.header("content-type"),
        Some(&b"application/octet-stream"[..])
    );
    let put = recorded
        .iter()
        .find(|r| r.path == "/put")
        .expect("a PUT arrived");
    assert_eq!(
        (put.method.as_str(), &put.body[..]),
        ("PUT", &b"text body"[..])
    );
    assert!(recorded
        .iter()
        .all(|r| r.header("authorization") == Some(b"Bearer fresh")));

    assert!(text.contains("replaying 5 requests from"), "{text}");
    // Four endpoints: the two item requests share their name.
    let e = &o.stats.endpoints;
    let names: Vec<&str> = e.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["POST /submit", "items", "GET /status/404", "PUT /put"]
    );
    let counts: Vec<(u64, u64)> = e.iter().map(|e| (e.completed, e.errors)).collect();
    assert_eq!(counts, [(50, 0), (100, 0), (50, 50), (50, 0)]);
    for e in e {
        assert_eq!(e.latency.as_ref().map_or(0, |h| h.len()), e.completed);
    }
    assert!(text.contains("Endpoints (corrected latency)"), "{text}");
    let row = text
        .lines()
        .find(|l| l.ends_with("  items"))
        .expect("an items row");
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&fields[..2], ["100", "0"], "{row}");
}

#[test]
fn the_closed_loop_replays_too() {
    let _g = serial();
    let d = dir("closed");
    let file = write(&d, "r.jsonl", b"{\"path\": \"/a\"}\n{\"path\": \"/b\"}\n");
    let srv = recording();
    let (o, text) = replay(&srv, &file, &["-t2", "-c4", "-d500ms"]);
    assert_balanced(&o);
    let (a, b) = (srv.stats().path_count("/a"), srv.stats().path_count("/b"));
    assert!(a > 10 && b > 10, "a {a}, b {b}");
    // Each connection alternates, so the two differ by at most one per
    // connection.
    assert!(a.abs_diff(b) <= 4, "a {a}, b {b}");
    assert!(text.contains("GET /a") && text.contains("GET /b"), "{text}");
}

#[test]
fn each_host_gets_its_own_connections_and_requests() {
    let _g = serial();
    let d = dir("hosts");
    let (one, two) = (recording(), recording());
    let targets = format!(
        "# two hosts\n{}\nPOST {}\nX-Kind: two\n@body.txt\n\n{}\n",
        url(&one, "/one"),
        url(&two, "/two"),
        url(&one, "/again")
    );
    write(&d, "body.txt", b"from a file");
    let file = write(&d, "targets.txt", targets.as_bytes());
    let (o, text) = bench_replay(&["-t1", "-c2", "-d1s", "-R", "300"], &file, &url(&one, "/"));
    assert_balanced(&o);
    assert_eq!(o.stats.counters.completed, 300);
    assert_eq!(one.stats().path_count("/one"), 100);
    assert_eq!(one.stats().path_count("/again"), 100);
    assert_eq!(two.stats().path_count("/two"), 100);
    // One connection each, plus the pre-flight check of each host.
    assert_eq!(
        (one.stats().connections(), two.stats().connections()),
        (2, 2)
    );
    let r = two.stats().recorded();
    assert!(r
        .iter()
        .all(|r| r.method == "POST" && r.body == b"from a file"));
    assert!(r.iter().all(|r| r.header("x-kind") == Some(b"two")));
    let host = format!("{}", two.addr());
    assert!(r.iter().all(|r| r.header("host") == Some(host.as_bytes())));
    assert!(text.contains("to 2 hosts"), "{text}");
    assert!(text.contains(&format!("POST {host}/two")), "{text}");
}

#[test]
fn a_slow_host_does_not_hold_back_the_others() {
    let _g = serial();
    let d = dir("slow");
    let (slow, fast) = (recording(), recording());
    let targets = format!("{}\n{}\n", url(&slow, "/delay/300"), url(&fast, "/"));
    let file = write(&d, "t.txt", targets.as_bytes());
    // One connection per host: requests to the slow one pile up behind it.
    let (o, _) = bench_replay(&["-t1", "-c2", "-d1s", "-R", "40"], &file, &url(&fast, "/"));
    assert_balanced(&o);
    let e = &o.stats.endpoints;
    let p99 = |i: usize| {
        e[i].latency
            .as_ref()
            .map_or(0, |h| h.value_at_quantile(0.99))
    };
    assert!(p99(0) >= 300_000, "the slow host's p99 {}", p99(0));
    // Were its requests stuck behind the slow host's, they would wait for
    // hundreds of milliseconds too.
    assert!(p99(1) < 150_000, "the fast host's p99 {}", p99(1));
    assert_eq!(e[1].completed, 20);
    assert!(o.stats.counters.queued > 0);
}

#[test]
fn random_order_repeats_with_its_seed() {
    let _g = serial();
    let d = dir("random");
    let lines: String = (0..8).map(|i| format!("/r{i}\n")).collect();
    let file = write(&d, "t.txt", lines.as_bytes());
    let order = |seed: &str| {
        let srv = recording();
        let order = ["--requests-order", "random", "--seed", seed];
        let (o, text) = replay(
            &srv,
            &file,
            &[&["-t1", "-c1", "-d300ms", "-R100"][..], &order].concat(),
        );
        assert_balanced(&o);
        assert!(
            text.contains(&format!("in random order (--seed {seed})")),
            "{text}"
        );
        let paths: Vec<String> = srv.stats().recorded().into_iter().map(|r| r.path).collect();
        paths
    };
    let (a, b, c) = (order("42"), order("42"), order("43"));
    assert_eq!(a.len(), 30);
    assert_eq!(a, b);
    assert_ne!(a, c);
    let distinct: std::collections::HashSet<&String> = a.iter().collect();
    assert!(distinct.len() > 4, "{a:?}");
}

#[test]
fn json_and_interval_log_carry_the_endpoints() {
    let _g = serial();
    let d = dir("outputs");
    let file = write(&d, "t.txt", b"/a\n/b\n/status/500\n");
    let (json, hlog) = (d.join("r.json"), d.join("r.hlog"));
    let srv = recording();
    let outputs = [
        "--json",
        json.to_str().unwrap(),
        "--hlog",
        hlog.to_str().unwrap(),
    ];
    let (o, text) = replay(
        &srv,
        &file,
        &[&["-t1", "-c2", "-d1s", "-R90", "-U"][..], &outputs].concat(),
    );
    assert_balanced(&o);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../docs/result.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema itself is valid");
    let problems: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(problems.is_empty(), "{problems:?}");
    let endpoints = doc["endpoints"]
        .as_array()
        .expect("endpoints in the document");
    let names: Vec<&str> = endpoints
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["GET /a", "GET /b", "GET /status/500"]);
    assert_eq!(endpoints[2]["errors"], 30);
    assert_eq!(endpoints[0]["latency"]["count"], 30);
    assert_eq!(doc["config"]["requests"]["count"], 3);
    // The saved document re-renders to the same report, table included.
    let again = metron(&["report", json.to_str().unwrap()]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stdout(&again), text);

    let log = std::fs::read_to_string(&hlog).unwrap();
    for tag in [
        "Tag=endpoint:GET_/a,",
        "Tag=endpoint:GET_/b,",
        "Tag=endpoint:GET_/status/500,",
    ] {
        assert!(log.contains(tag), "{tag} in\n{log}");
    }
}

#[test]
fn broken_files_are_one_line_errors_naming_file_and_line() {
    let d = dir("broken");
    write(&d, "ok.bin", b"x");
    let cases: [(&str, &[u8], &str); 7] = [
        ("empty.json", b"", "empty.json: no requests in it"),
        (
            "syntax.json",
            b"[\n{\"path\": \"/a\"},\n{\"path\" \"/b\"}\n]",
            "syntax.json:3: not valid JSON",
        ),
        (
            "field.jsonl",
            b"{\"path\": \"/a\"}\n{\"path\": \"/b\", \"body\": 7}\n",
            "field.jsonl:2: field \"body\" must be a string",
        ),
        (
            "unknown.json",
            b"[{\"path\": \"/a\", \"header\": {}}]",
            "unknown.json:1: unknown field \"header\"",
        ),
        (
            "method.txt",
            b"/a\nG@T /b\n",
            "method.txt:2: method: \"G@T\" has '@'",
        ),
        (
            "body.json",
            b"[{\"path\": \"/a\", \"body_file\": \"missing.bin\"}]",
            "body.json:1: body_file",
        ),
        (
            "scheme.txt",
            b"ftp://h/a\n",
            "scheme.txt:1: expected a request line",
        ),
    ];
    for (name, text, want) in cases {
        let file = write(&d, name, text);
        let out = metron(&["-d1s", "--requests", &file, "http://127.0.0.1:9/"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(want), "{name}: got {err:?}, want {want:?}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{name}: one line: {err:?}"
        );
        assert!(stdout(&out).is_empty(), "{name}: nothing is run");
    }
    let missing = d.join("nope.json");
    let out = metron(&[
        "--requests",
        missing.to_str().unwrap(),
        "http://127.0.0.1:9/",
    ]);
    assert!(
        stderr(&out).contains("cannot read --requests"),
        "{}",
        stderr(&out)
    );
}

/// A file of thousands of distinct paths replays without per-endpoint
/// statistics; asking for them is one line saying how to group requests.
#[test]
fn too_many_endpoints_are_refused_only_when_asked_for() {
    let _g = serial();
    let d = dir("many");
    let paths: String = (0..500).map(|i| format!("/user/{i}\n")).collect();
    let file = write(&d, "users.txt", paths.as_bytes());
    let srv = recording();
    let u = url(&srv, "/");
    let (o, text) = bench_replay(&["-t1", "-c2", "-R200", "-d1s"], &file, &u);
    assert_balanced(&o);
    // Every request fell due; a loaded machine may end the run with the
    // last one still in flight (the ledger above holds it).
    let c = &o.stats.counters;
    assert_eq!(c.due, 200, "{c:?}");
    assert!(c.completed >= 195, "{c:?}");
    assert!(o.stats.endpoints.is_empty());
    assert!(!text.contains("Endpoints"), "{text}");

    let err = one_line_error(&metron(&["-d1s", "--by-endpoint", "--requests", &file, &u]));
    assert!(
        err.contains("more than 100 distinct endpoints") && err.contains("\"name\""),
        "{err}"
    );
}

/// A file over the size limit is refused before it is read (a sparse
/// file: no disk is spent on it).
#[test]
fn a_huge_file_is_refused_with_its_limit() {
    let d = dir("huge");
    let path = d.join("huge.jsonl");
    std::fs::File::create(&path)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    let out = metron(&["--requests", path.to_str().unwrap(), "http://127.0.0.1:9/"]);
    let _ = std::fs::remove_file(&path);
    let err = one_line_error(&out);
    assert!(
        err.contains("huge.jsonl holds more than the 256 MiB limit"),
        "{err}"
    );
}

#[test]
fn flags_that_need_a_requests_file_say_so() {
    // `--seed` alone is refused too, but it also seeds Poisson arrivals,
    // so its message names both uses (tests/cli.rs).
    for flags in [&["--by-endpoint"][..], &["--requests-order", "random"]] {
        let mut args = flags.to_vec();
        args.push("http://127.0.0.1:9/");
        let out = metron(&args);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains("needs --requests FILE"),
            "{flags:?}: {}",
            stderr(&out)
        );
    }
}
