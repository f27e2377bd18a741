//! The load generator over HTTP/2 against ground truth, where HTTP/2
//! differs from HTTP/1.1: every due request is accounted for with several
//! threads, connections and streams and nothing HTTP/2 alone counts, the
//! JSON document names the protocol and its counts, a script's
//! `response()` sees lowercase field names, and a stopped thread leaves
//! its streams' requests in flight. What must hold over both protocols
//! alike (the stall's arithmetic, the wrk-style Lua scripts) is tested
//! once per protocol where HTTP/1.1 is (tests/it/rate.rs, tests/it/lua.rs,
//! tests/it/dropin.rs).
//!
//! One script is left out by nature: multiple_endpoints.lua moves its
//! thread between servers by asking each connection to close after one
//! request (`Connection: close`). HTTP/2 forbids that field (RFC 9113
//! section 8.2.2; the request conversion drops it), and a connection's
//! streams all go to the server it was opened to, so the thread never
//! moves.

use std::time::Duration;

use crate::common::files::schema_errors;
use crate::common::h2::{assert_clean, assert_server_agrees};
use crate::common::*;
use metron::serve::ServeConfig;

#[test]
fn the_closed_loop_accounts_for_every_request() {
    let _g = serial();
    let srv = Proto::Http2.server(ServeConfig {
        body_size: 100,
        ..ServeConfig::default()
    });
    let u = url(&srv, "/");
    let (o, _) = Proto::Http2.bench(&["-t2", "-c6", "-m10", "-d2s", &u]);
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
    let srv = Proto::Http2.server(ServeConfig {
        body_size: 100,
        delay: Duration::from_millis(5),
        ..ServeConfig::default()
    });
    let u = url(&srv, "/");
    let (o, _) = Proto::Http2.bench(&["-t2", "-c6", "-m8", "-R2000", "-d2s", &u]);
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
    let srv = Proto::Http2.server(ServeConfig::default());
    let o = Proto::Http2.json_on_stdout(&srv);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON document");
    let errors = schema_errors(&doc);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(doc["protocol"], "HTTP/2");
    assert_eq!(doc["config"]["max_streams"], 100);
    assert_eq!(doc["counters"]["completed"], 100);
    assert_eq!(
        doc["counters"]["http2"],
        serde_json::json!({"resets": {}, "goaway": {}, "connection_errors": 0, "retried": 0})
    );
}

/// `thread:stop()` after the tenth response, with the default 100 streams
/// (tests/it/lua.rs has one stream a connection, HTTP/1.1's case): 100 or
/// more requests were on the wire when it stopped. Those not answered by
/// then are in flight at the end, and answers that came in the same read
/// as the tenth are counted, as they are for pipelined HTTP/1.1
/// responses.
#[test]
fn thread_stop_with_every_stream_busy_leaves_the_rest_in_flight() {
    let _g = serial();
    let srv = Proto::Http2.server(ServeConfig::default());
    let (u, s) = (url(&srv, "/"), script("stop.lua"));
    let start = std::time::Instant::now();
    let (o, _) = Proto::Http2.bench(&["-t1", "-c1", "-d5s", "-s", &s, &u]);
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

/// Response fields reach `response()` with lowercase names, and the body
/// whole.
#[test]
fn response_sees_lowercase_field_names_and_the_body() {
    let _g = serial();
    let srv = Proto::Http2.server(ServeConfig {
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
    let o = Proto::Http2.metron(&["-t1", "-c1", "-R20", "-d1s", "-s", &file, &url(&srv, "/")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("last 200 5 content-length=5,content-type=text/plain\n"),
        "{out}"
    );
}
