//! `--grpc` against grpcio, Python's gRPC, a stack nobody on this project
//! wrote (tests/grpc_server.py serving tests/grpc/greet.proto over h2c):
//! the server's count of calls against metron's ledger, statuses the
//! server chose counted by name, the corrected percentiles through a stop
//! of the server's process, a server-streaming method's messages timed as
//! events, the schema from a compiled descriptor set and from imports,
//! calls from a requests file, the one-line errors for what cannot be
//! called, and a script's view of the raw reply.
//!
//! metron runs as its binary with `--json`, and the tests read the
//! document: the fields the report publishes are what is checked. Every
//! check is of ground truth (what the server counted, what the stop's
//! arithmetic says), never of speed. Assertions on the exact wording of
//! text are marked `wording:`; the rest are counts and times.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::MutexGuard;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::Value;

use crate::common::document::{assert_ledger, counter, histogram, lost, run};
use crate::common::files::schema_errors;
use crate::common::grpcio::{self, Grpcio, PROTO, PROTO_DIR};
use crate::common::*;

const SAY_HELLO: &str = "greet.Greeter/SayHello";

/// The arguments of a call of `method` of the test schema: `--grpc`, the
/// method, the schema, then `rest`.
fn call<'a>(method: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    [&["--grpc", method, "--proto", PROTO][..], rest].concat()
}

/// The arguments of a SayHello run: `--grpc`, the schema, `data`, and the
/// load `flags`, then the URL.
fn say_hello<'a>(srv_url: &'a str, data: &'a str, flags: &[&'a str]) -> Vec<&'a str> {
    call(
        SAY_HELLO,
        &[&["--data", data][..], flags, &[srv_url]].concat(),
    )
}

/// A test's turn at the machine ([`serial`]) and grpcio started for it,
/// with its URL; none where grpcio cannot be started (the test skips, as
/// [`Grpcio::start`] says).
fn grpcio_turn() -> Option<(MutexGuard<'static, ()>, Grpcio, String)> {
    let turn = serial();
    let srv = Grpcio::start()?;
    let url = srv.url();
    Some((turn, srv, url))
}

/// The run's ledger balances with nothing lost: its completed calls and
/// those still in flight at the end.
fn whole(doc: &Value, text: &str) -> (u64, u64) {
    assert_ledger(doc);
    assert_eq!(lost(doc), 0, "{text}");
    (counter(doc, "completed"), counter(doc, "in_flight"))
}

/// Every call completed was answered OK.
fn all_ok(doc: &Value, completed: u64) {
    assert_eq!(
        statuses(doc),
        BTreeMap::from([("OK".to_string(), completed)])
    );
}

/// The server received each call metron completed, and no more than those
/// and the ones still in flight at the end.
fn assert_received(received: u64, completed: u64, in_flight: u64) {
    assert!(
        (completed..=completed + in_flight).contains(&received),
        "the server received {received}; metron completed {completed}, {in_flight} in flight"
    );
}

/// `counters.grpc`: calls answered, by status name.
fn statuses(doc: &Value) -> BTreeMap<String, u64> {
    let grpc = doc["counters"]["grpc"]
        .as_object()
        .unwrap_or_else(|| panic!("no counters.grpc object: {}", doc["counters"]));
    grpc.iter()
        .map(|(k, v)| (k.clone(), v.as_u64().expect("a count")))
        .collect()
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Every SayHello call metron completed reached the server, and the
/// server received no more than those and the ones still in flight at the
/// end; each was answered OK, and the document still follows its
/// published schema.
#[test]
fn the_servers_count_of_calls_is_metrons() {
    let Some((_g, srv, url)) = grpcio_turn() else {
        return;
    };
    let (doc, text) = run(&say_hello(
        &url,
        r#"{"name": "x"}"#,
        &["-t1", "-c2", "-R300", "-d3s"],
    ));
    let counts = srv.stop();
    assert_ledger(&doc);
    let (completed, in_flight) = (counter(&doc, "completed"), counter(&doc, "in_flight"));
    assert_eq!(counter(&doc, "due"), 900, "{text}");
    assert_eq!(lost(&doc), 0, "{text}");
    assert_eq!(counter(&doc, "never_sent"), 0, "{text}");
    assert_eq!(counter(&doc, "errors.status"), 0, "{text}");
    assert!(completed >= 850, "{text}");
    let received = counts.calls("SayHello");
    assert_received(received, completed, in_flight);
    assert_eq!(counts.names.get("x"), Some(&received), "{counts:?}");
    all_ok(&doc, completed);
    // Every answer came over HTTP/2 with status 200: gRPC's own status is
    // in the trailers.
    assert_eq!(
        doc["counters"]["status_codes"]["200"].as_u64(),
        Some(completed)
    );
    assert!(schema_errors(&doc).is_empty(), "{:?}", schema_errors(&doc));
}

/// `fail_every: 10`: the server aborts every tenth call it receives with
/// UNAVAILABLE (a trailers-only response, the status in the head). metron
/// counts those by name as the server counted its failures, the rest OK,
/// each failure as a status error, and the text report names both.
#[test]
fn statuses_the_server_chose_are_counted_by_name() {
    let Some((_g, srv, url)) = grpcio_turn() else {
        return;
    };
    let (doc, text) = run(&say_hello(
        &url,
        r#"{"name": "x", "fail_every": 10}"#,
        &["-t1", "-c2", "-R300", "-d3s"],
    ));
    let counts = srv.stop();
    let (completed, in_flight) = whole(&doc, &text);
    let got = statuses(&doc);
    let ok = got.get("OK").copied().unwrap_or(0);
    let unavailable = got.get("UNAVAILABLE").copied().unwrap_or(0);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(ok + unavailable, completed, "{got:?}");
    // The server counted a failure when it received the call; the calls
    // in flight at the end may hold one more that metron never saw.
    let failed = counts.failed;
    assert!(
        (unavailable..=unavailable + in_flight).contains(&failed),
        "the server failed {failed}; metron saw {unavailable} UNAVAILABLE, {in_flight} in flight"
    );
    assert_eq!(failed, counts.calls("SayHello") / 10, "{counts:?}");
    assert!(unavailable >= 80, "{got:?}");
    assert_eq!(counter(&doc, "errors.status"), unavailable, "{text}");
    // wording: the text report's line of statuses, `gRPC status: OK n,
    // UNAVAILABLE m`.
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("gRPC status:"))
        .unwrap_or_else(|| panic!("no gRPC status line:\n{text}"));
    assert!(line.contains(&format!("OK {ok}")), "{line}");
    assert!(
        line.contains(&format!("UNAVAILABLE {unavailable}")),
        "{line}"
    );
}

/// `--grpc-check`: replies that hold the value pass; one that does not
/// is an error though its status is OK, and the failed calls still count
/// by their status alone.
#[test]
fn a_reply_that_does_not_hold_the_check_is_an_error() {
    let Some((_g, srv, url)) = grpcio_turn() else {
        return;
    };
    let load = ["-t1", "-c2", "-R200", "-d1s"];
    let data = r#"{"name": "x", "fail_every": 10}"#;
    let mut flags = load.to_vec();
    flags.extend(["--grpc-check", "message=hello x"]);
    let (doc, text) = run(&say_hello(&url, data, &flags));
    let ok = statuses(&doc)["OK"];
    assert!(ok > 0, "{text}");
    assert_eq!(counter(&doc, "failed_checks"), 0, "{text}");
    assert_eq!(
        counter(&doc, "errors.status"),
        statuses(&doc)["UNAVAILABLE"],
        "{text}"
    );
    let mut flags = load.to_vec();
    flags.extend(["--grpc-check", "message=hello y"]);
    let (doc, text) = run(&say_hello(&url, data, &flags));
    srv.stop();
    let ok = statuses(&doc)["OK"];
    assert_eq!(counter(&doc, "failed_checks"), ok, "{text}");
    assert_eq!(
        counter(&doc, "errors.status"),
        counter(&doc, "completed"),
        "{text}"
    );
    // wording: the text report names the failed checks, and the failed
    // calls by cause (it said "gRPC status not OK" of them all).
    assert!(
        text.contains(&format!("Failed checks: {ok} of {ok} OK replies")),
        "{text}"
    );
    let unavailable = statuses(&doc)["UNAVAILABLE"];
    assert!(
        text.contains(&format!(
            "Failed calls: {} ({unavailable} with a gRPC status not OK, {ok} OK replies that \
             failed --grpc-check)",
            ok + unavailable
        )),
        "{text}"
    );
}

/// Over TLS: h2 by ALPN, the server's certificate verified against the
/// authority `--cacert` names, and refused without it (the system's store
/// does not know a test's authority), one line naming the fix.
#[test]
fn calls_go_over_tls_to_a_verified_server() {
    let _g = serial();
    let pki = crate::common::tls::Pki::new();
    let Some(srv) = Grpcio::start_tls(&pki.server_cert, &pki.server_key) else {
        return;
    };
    let url = srv.https_url();
    let (doc, text) = run(&say_hello(
        &url,
        r#"{"name": "tls"}"#,
        &["-t1", "-c2", "-R100", "-d1s", "--cacert", &pki.ca],
    ));
    assert_eq!(doc["protocol"], "HTTP/2", "{text}");
    assert_eq!(statuses(&doc)["OK"], counter(&doc, "completed"), "{text}");
    assert!(counter(&doc, "completed") >= 95, "{text}");
    let refused = metron(&say_hello(&url, "{}", &["-t1", "-c1", "-d1s"]));
    let err = stderr(&refused);
    let counts = srv.stop();
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // wording: the refusal names the certificate and the flag that fixes it.
    assert!(
        err.contains("certificate") && err.contains("--cacert"),
        "{err}"
    );
    assert_eq!(
        counts.names.get("tls"),
        Some(&counts.calls("SayHello")),
        "{counts:?}"
    );
}

/// grpcio's process stopped for a second at 400 calls/s on two
/// connections of 5 streams each: the calls due meanwhile wait, from when they were due,
/// for the rest of the stop and for grpcio to work through them after it.
///
/// The stop's arithmetic alone (the S·R calls due in it spread uniformly
/// over [0, S], as tests/it/http3.rs and tests/it/rate.rs check against
/// the built-in target) does not hold to 5% of S here: grpcio works
/// through the backlog at some 2500 calls/s, not in the order the calls
/// came (its thread pool, and the two connections' streams read one
/// connection after the other), which put p99 up to 63 ms above the
/// arithmetic in runs measured while this test was written. So the
/// server's own account is the floor, as for Caddy in tests/it/http3.rs:
/// each call carries its place in the schedule as its name (a requests
/// file of one line per call, sent in file order: call N is due N/R
/// after the start), and grpcio notes when it finished each, so no answer
/// can reach metron sooner. metron's p99 and p99.9 stand on that floor
/// (its millisecond start may put the floor up to 1 ms high) and above it
/// by no more than delivering the answer takes (under 1 ms measured; 2%
/// of S allowed). The stop is in the floor too: its calls waited at
/// least 90% of it.
#[test]
fn a_stopped_server_shows_in_the_corrected_percentiles() {
    let _g = serial();
    let Some(srv) = Grpcio::start_timed() else {
        return;
    };
    let rate = 400.0;
    let calls = 2000;
    let dir = TempDir::new("grpc-stop");
    let lines: String = (0..calls)
        .map(|n| format!("{{\"data\": {{\"name\": \"{n}\"}}}}\n"))
        .collect();
    let file = dir.file("schedule.jsonl", &lines);
    let url = srv.url();
    let ((doc, text), stop) = std::thread::scope(|s| {
        let pause = s.spawn(|| {
            std::thread::sleep(Duration::from_millis(1500));
            srv.pause(Duration::from_secs(1))
        });
        let load = ["-t1", "-c2", "-m5", "-R400", "-d5s", "--timeout", "5s"];
        let run = run(&call(
            SAY_HELLO,
            &[&["--requests", &file][..], &load, &[&url]].concat(),
        ));
        (run, pause.join().unwrap())
    });
    let counts = srv.stop();
    assert_ledger(&doc);
    assert_eq!(counter(&doc, "due"), calls, "{text}");
    assert_eq!(lost(&doc), 0, "{text}");
    assert_eq!(counter(&doc, "errors.status"), 0, "{text}");
    let (silence, _) = counts.longest_silence();
    assert!(
        silence >= stop.mul_f64(0.9),
        "the server's longest silence {silence:?}, stopped {stop:?}"
    );
    let start = doc["window_start_ms"].as_u64().expect("window_start_ms") as f64 / 1000.0;
    let mut truth = Histogram::<u64>::new(3).unwrap();
    for (finished, name) in &counts.finished {
        let n: f64 = name.parse().expect("a call's place in the schedule");
        let due = start + n / rate;
        truth
            .record(((finished - due) * 1e6).max(1.0) as u64)
            .unwrap();
    }
    assert_eq!(truth.len(), counts.calls("SayHello"));
    let s_us = stop.as_micros() as f64;
    assert!(truth.value_at_quantile(0.999) as f64 >= 0.9 * s_us);
    let latency = histogram(&doc["histograms"]["corrected"]);
    let uncorrected = histogram(&doc["histograms"]["uncorrected"]);
    for q in [0.99, 0.999] {
        let floor = truth.value_at_quantile(q) as f64;
        let got = latency.value_at_quantile(q) as f64;
        assert!(
            got >= floor - 2000.0 && got <= floor + 0.02 * s_us,
            "p{}: {got:.0} us, grpcio's account says {floor:.0} us (stopped {stop:?})\n{text}",
            q * 100.0
        );
        // 10 streams hold 0.5% of the calls: above p99, below p99.9. The
        // rest waited for a stream, which uncorrected latency leaves out.
        if q == 0.99 {
            let sent = uncorrected.value_at_quantile(q) as f64;
            assert!(sent < 0.5 * floor, "uncorrected p99: {sent:.0} us\n{text}");
        }
    }
}

/// Countdown streams 5 replies 50 ms apart, the first at once: each
/// completed call counted its 5 messages as events, the gaps are the
/// server's 50 ms, the first message comes with the call's answer (as
/// soon as a unary call's would), and the call ends after 4 gaps.
/// metron read no more messages than the server sent.
#[test]
fn a_server_stream_is_timed_message_by_message() {
    let Some((_g, srv, url)) = grpcio_turn() else {
        return;
    };
    let data = r#"{"count": 5, "interval_ms": 50}"#;
    let load = ["-t1", "-c2", "-R40", "-d3s"];
    let (doc, text) = run(&call(
        "greet.Greeter/Countdown",
        &[&["--data", data][..], &load, &[&url]].concat(),
    ));
    let counts = srv.stop();
    let (completed, in_flight) = whole(&doc, &text);
    assert!(completed >= 100, "{text}");
    all_ok(&doc, completed);
    let received = counts.calls("Countdown");
    assert_received(received, completed, in_flight);
    // The messages are the document's events, as --sse's are, and it
    // still follows its published schema.
    assert!(schema_errors(&doc).is_empty(), "{:?}", schema_errors(&doc));
    let e = &doc["events"];
    assert_eq!(e["responses"].as_u64(), Some(completed), "{e}");
    assert_eq!(e["completed_events"].as_u64(), Some(5 * completed), "{e}");
    assert_eq!(e["per_response"].as_f64(), Some(5.0), "{e}");
    let count = e["count"].as_u64().expect("events.count");
    assert!(
        (5 * completed..=counts.messages_sent).contains(&count),
        "{count} events; the server sent {}",
        counts.messages_sent
    );
    let gap = histogram(&e["gap_histogram"]);
    let first = histogram(&e["first_histogram"]);
    let latency = histogram(&doc["histograms"]["corrected"]);
    let gap_p50 = ms(gap.value_at_quantile(0.5));
    assert!(
        (gap_p50 - 50.0).abs() <= 3.0,
        "gap p50 {gap_p50} ms\n{text}"
    );
    // The first message is sent at once: its time is the call's floor, a
    // few milliseconds, far below the four gaps that follow it.
    let first_p50 = ms(first.value_at_quantile(0.5));
    assert!(
        first_p50 <= 15.0,
        "first message p50 {first_p50} ms\n{text}"
    );
    let latency_p50 = ms(latency.value_at_quantile(0.5));
    assert!(
        (latency_p50 - first_p50 - 200.0).abs() <= 10.0,
        "call p50 {latency_p50} ms, first message p50 {first_p50} ms\n{text}"
    );
}

/// The schema compiled by protoc into a FileDescriptorSet (`--protoset`)
/// calls SayHello as the `.proto` does: every call completed OK, and the
/// server counted both runs' calls.
#[test]
fn a_compiled_descriptor_set_calls_as_the_proto_does() {
    let _g = serial();
    let dir = TempDir::new("grpc-protoset");
    let Some(set) = grpcio::protoset(dir.path()) else {
        return;
    };
    let Some(srv) = Grpcio::start() else {
        return;
    };
    let url = srv.url();
    let set = set.display().to_string();
    let load = ["-t1", "-c2", "-R200", "-d1s"];
    let mut completed = 0;
    let mut in_flight = 0;
    for schema in [["--proto", PROTO], ["--protoset", set.as_str()]] {
        let mut args = vec!["--grpc", SAY_HELLO, "--data", r#"{"name": "x"}"#];
        args.extend_from_slice(&schema);
        args.extend_from_slice(&load);
        args.push(&url);
        let (doc, text) = run(&args);
        assert_ledger(&doc);
        assert_eq!(lost(&doc), 0, "{schema:?}\n{text}");
        let c = counter(&doc, "completed");
        assert!(c >= 190, "{schema:?}\n{text}");
        assert_eq!(
            statuses(&doc),
            BTreeMap::from([("OK".to_string(), c)]),
            "{schema:?}"
        );
        completed += c;
        in_flight += counter(&doc, "in_flight");
    }
    let received = srv.stop().calls("SayHello");
    assert_received(received, completed, in_flight);
}

/// A schema whose service imports its messages from another file, found
/// under `--import-path`.
#[test]
fn imports_are_found_under_the_import_path() {
    let Some((_g, srv, url)) = grpcio_turn() else {
        return;
    };
    let dir = TempDir::new("grpc-imports");
    let messages = dir.path().join("messages");
    std::fs::create_dir_all(&messages).unwrap();
    std::fs::write(
        messages.join("hello.proto"),
        "syntax = \"proto3\";\npackage greet;\n\
         message HelloRequest { string name = 1; int32 fail_every = 2; }\n\
         message HelloReply { string message = 1; int64 seq = 2; }\n",
    )
    .unwrap();
    let service = dir.file(
        "service.proto",
        "syntax = \"proto3\";\npackage greet;\nimport \"hello.proto\";\n\
         service Greeter { rpc SayHello(HelloRequest) returns (HelloReply); }\n",
    );
    let messages = messages.display().to_string();
    let (doc, text) = run(&[
        "--grpc",
        SAY_HELLO,
        "--proto",
        &service,
        "--import-path",
        &messages,
        "--data",
        r#"{"name": "x"}"#,
        "-t1",
        "-c1",
        "-R100",
        "-d1s",
        &url,
    ]);
    let completed = counter(&doc, "completed");
    assert!(completed >= 95, "{text}");
    all_ok(&doc, completed);
    assert!(srv.stop().calls("SayHello") >= completed);
}

/// `--requests` in JSON Lines, a message per line under `data` (one line
/// named, both with metadata): calls go out in file order, cycling, so the
/// server got each name half the time and each line's metadata with it.
#[test]
fn a_requests_file_sends_each_lines_message_and_metadata() {
    let Some((_g, srv, url)) = grpcio_turn() else {
        return;
    };
    let dir = TempDir::new("grpc-requests");
    let file = dir.file(
        "calls.jsonl",
        concat!(
            r#"{"name": "ann", "data": {"name": "ann"}, "metadata": {"x-who": "a"}}"#,
            "\n",
            r#"{"data": {"name": "bo", "fail_every": 0}, "metadata": {"x-who": "b"}}"#,
            "\n",
        ),
    );
    let load = ["-t1", "-c2", "-R200", "-d2s"];
    let (doc, text) = run(&call(
        SAY_HELLO,
        &[&["--requests", &file][..], &load, &[&url]].concat(),
    ));
    let counts = srv.stop();
    let (completed, in_flight) = whole(&doc, &text);
    assert!(completed >= 390, "{text}");
    all_ok(&doc, completed);
    let name = |n: &str| counts.names.get(n).copied().unwrap_or(0);
    let (ann, bo) = (name("ann"), name("bo"));
    assert_eq!(counts.names.len(), 2, "{counts:?}");
    assert!(
        (completed..=completed + in_flight).contains(&(ann + bo)),
        "{counts:?}; metron completed {completed}, {in_flight} in flight"
    );
    assert!(ann.abs_diff(bo) <= 1, "{counts:?}");
    assert_eq!(counts.metadata.get("x-who=a"), Some(&ann), "{counts:?}");
    assert_eq!(counts.metadata.get("x-who=b"), Some(&bo), "{counts:?}");
}

/// What cannot be called is refused before any load, on one line that
/// names the problem, with a non-zero exit and no panic: a method the
/// service lacks, a client-streaming method, `--data` that is not JSON,
/// a field the message lacks, a `.proto` file that is not there.
#[test]
fn what_cannot_be_called_is_refused_on_one_line() {
    let Some(srv) = Grpcio::start() else {
        return;
    };
    let url = srv.url();
    let missing = std::env::temp_dir()
        .join(format!("metron-grpc-{}-absent.proto", std::process::id()))
        .display()
        .to_string();
    let hello = r#"{"name": "x"}"#;
    // (method, proto, data, words the line must hold). wording: each line
    // names what was given (the method, the flag, the field, the file);
    // the rest of its words are free.
    let cases: [(&str, &str, &str, &[&str]); 5] = [
        ("greet.Greeter/Nope", PROTO, hello, &["--grpc", "Nope"]),
        (
            "greet.Greeter/Collect",
            PROTO,
            hello,
            &["--grpc", "Collect", "stream"],
        ),
        (SAY_HELLO, PROTO, r#"{"name": "#, &["--data"]),
        (SAY_HELLO, PROTO, r#"{"nom": "x"}"#, &["nom"]),
        (SAY_HELLO, &missing, hello, &["--proto", "absent.proto"]),
    ];
    for (method, proto, data, words) in cases {
        let args = [
            "--grpc", method, "--proto", proto, "--data", data, "-t1", "-c1", "-R10", "-d1s", &url,
        ];
        let out = metron(&args);
        let err = stderr(&out);
        let code = out.status.code();
        assert!(
            code.is_some_and(|c| c != 0 && c != 101),
            "{args:?}: exit {code:?}, {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // The flags themselves were understood: the refusal is the call's.
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "one line: {args:?}: {err}"
        );
        for word in words {
            assert!(err.contains(word), "{args:?}: no {word:?} in {err}");
        }
    }
    // Nothing was called.
    let counts = srv.stop();
    assert_eq!(counts.calls.values().sum::<u64>(), 0, "{counts:?}");
}

/// A wrk script's `response(status, headers, body)` gets the reply as it
/// came: the 5-byte prefix (not compressed, the message's length) and
/// the encoded HelloReply, whose message holds the name sent.
#[test]
fn a_script_sees_the_raw_reply() {
    let Some((_g, srv, url)) = grpcio_turn() else {
        return;
    };
    let dir = TempDir::new("grpc-lua");
    let file = dir.file(
        "reply.lua",
        r#"
seen, framed, named, other = 0, 0, 0, ""
function response(status, headers, body)
  seen = seen + 1
  if status ~= 200 then other = other .. " status " .. status end
  if #body > 5 and body:byte(1) == 0 then
    local n = ((body:byte(2) * 256 + body:byte(3)) * 256 + body:byte(4)) * 256 + body:byte(5)
    if n + 5 == #body then framed = framed + 1 end
  end
  if body:find("hello lua", 1, true) then named = named + 1 end
end
local thread
function setup(t) thread = t end
function done()
  io.write("replies ", thread:get("seen"), " framed ", thread:get("framed"),
           " named ", thread:get("named"), thread:get("other"), "\n")
end
"#,
    );
    let (doc, text) = run(&say_hello(
        &url,
        r#"{"name": "lua"}"#,
        &["-t1", "-c1", "-R50", "-d1s", "-s", &file],
    ));
    srv.stop();
    let completed = counter(&doc, "completed");
    assert!(completed >= 45, "{text}");
    assert!(
        text.contains(&format!(
            "replies {completed} framed {completed} named {completed}\n"
        )),
        "{text}"
    );
}

/// The schema's directory holds the file `--proto` names (a check of the
/// tests' own set-up, so that a moved file fails here first).
#[test]
fn the_test_schema_is_where_the_tests_look() {
    assert!(Path::new(PROTO).is_file(), "{PROTO}");
    assert!(Path::new(PROTO_DIR).join("greet.proto").is_file());
}
