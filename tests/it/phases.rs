//! The phases of requests and connections against nginx: time to first
//! byte apart from the whole response, TCP connect and TLS handshake once
//! per connection, in every output that shows them.

use std::time::Duration;

use crate::common::files::{read_json, schema_errors};
use crate::common::judged::assert_status;
use crate::common::nginx::*;
use crate::common::*;

/// `/big` sends its head at once and its 100 KB body at 50 KB/s: each
/// response takes about two seconds while its first byte comes within
/// milliseconds. Two connections over TLS: two connects, two handshakes.
#[test]
fn the_first_byte_comes_long_before_a_slow_body_ends() {
    let _g = serial();
    let Some(ngx) = Nginx::start(Options {
        big: true,
        ..Options::default()
    }) else {
        return;
    };
    let cacert = ngx.cacert();
    let url = ngx.tls_h1_url("/big");
    let (o, text) = bench(&[
        "-t1",
        "-c2",
        "-d3s",
        "--timeout",
        "5s",
        "--cacert",
        &cacert,
        &url,
    ]);
    let s = &o.stats;
    assert!(s.counters.completed >= 2, "{text}");
    let t = &s.timings;
    assert_eq!(t.ttfb.len(), s.counters.completed);
    let latency_p50 = Duration::from_micros(s.latency.value_at_quantile(0.5));
    let ttfb_max = Duration::from_micros(t.ttfb.max());
    assert!(latency_p50 >= Duration::from_millis(1500), "{text}");
    assert!(
        ttfb_max <= Duration::from_millis(200),
        "first byte after {ttfb_max:?}\n{text}"
    );
    assert_eq!((t.connect.len(), t.tls_handshake.len()), (2, 2), "{text}");
}

/// The phases reach the text report (`-L`), the JSON document and the
/// interval log; a plain connection has no TLS row, and an SLO bounds
/// the first byte.
#[test]
fn phases_are_reported_everywhere() {
    let _g = serial();
    let Some(ngx) = Nginx::start(Options::default()) else {
        return;
    };
    let dir = TempDir::new("phases");
    let json = dir.file("run.json", "");
    let hlog = dir.file("run.hlog", "");
    let cacert = ngx.cacert();
    let tls = ngx.tls_h1_url("/");
    let o = metron(&[
        "-t1",
        "-c3",
        "-R200",
        "-d1s",
        "-L",
        "--cacert",
        &cacert,
        "--json",
        &json,
        "--hlog",
        &hlog,
        "--slo",
        "ttfb_p99<1s,tls_max<2s",
        &tls,
    ]);
    assert_status(&o, 0);
    let out = stdout(&o);
    for row in [
        "Time to first byte",
        "uncorrected",
        "Connect",
        "TLS handshake",
    ] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(row)),
            "no {row} row:\n{out}"
        );
    }
    let doc: serde_json::Value = read_json(std::path::Path::new(&json));
    assert!(schema_errors(&doc).is_empty(), "{:?}", schema_errors(&doc));
    let completed = doc["counters"]["completed"].as_u64().unwrap();
    let l = &doc["latency"];
    assert_eq!(l["ttfb"]["corrected"]["count"].as_u64(), Some(completed));
    assert_eq!(l["ttfb"]["uncorrected"]["count"].as_u64(), Some(completed));
    assert_eq!(l["connect"]["count"].as_u64(), Some(3), "{l}");
    assert_eq!(l["tls_handshake"]["count"].as_u64(), Some(3), "{l}");
    let ttfb_max = l["ttfb"]["corrected"]["max"].as_u64().unwrap();
    let latency_max = l["corrected"]["max"].as_u64().unwrap();
    assert!(ttfb_max <= latency_max, "{l}");
    assert_eq!(doc["slo"]["verdict"], "met", "{}", doc["slo"]);
    let log = std::fs::read_to_string(&hlog).unwrap();
    assert!(log.lines().any(|l| l.starts_with("Tag=ttfb,")), "{log}");

    // Plain HTTP/1.1: connects, no handshakes, and no TLS row.
    let (o, text) = bench(&["-t1", "-c2", "-d1s", "-L", "--http2", &ngx.h2c_url("/")]);
    assert_eq!(o.stats.timings.connect.len(), 2, "{text}");
    assert!(o.stats.timings.tls_handshake.is_empty(), "{text}");
    assert!(!text.contains("TLS handshake"), "{text}");
}
