//! `--sse`: response bodies read as server-sent events, against nginx
//! sending a file of events at a limited rate (one every 100 ms), over
//! HTTP/1.1 and HTTP/2: every event counted, the gaps the rate makes, and
//! the figures in the report and the JSON document.

use std::path::Path;
use std::time::Duration;

use crate::common::files::{read_json, schema_errors};
use crate::common::nginx::*;
use crate::common::*;

/// nginx sends 100-byte events at 1000 bytes/s: 100 ms apart. Each
/// completed response carried exactly [`EVENTS`]; every gap of a whole
/// response is near 100 ms; the responses still streaming at the end add
/// their events so far and open gaps as lower bounds.
#[test]
fn every_event_is_counted_and_its_gap_is_the_servers() {
    let _g = serial();
    let Some(ngx) = Nginx::start(Options {
        events: true,
        ..Options::default()
    }) else {
        return;
    };
    let runs = [
        (
            ngx.tls_h1_url("/events"),
            vec!["--cacert".to_string(), ngx.cacert()],
        ),
        (ngx.h2c_url("/events"), vec!["--http2".to_string()]),
    ];
    for (url, flags) in &runs {
        let dir = TempDir::new("events");
        let json = dir.file("run.json", "");
        let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
        args.extend(["-t1", "-c2", "-d3s", "--sse", "-L", "--json", &json, url]);
        let o = metron(&args);
        let out = stdout(&o);
        assert!(o.status.success(), "{url}: {out}{}", stderr(&o));
        let doc: serde_json::Value = read_json(Path::new(&json));
        assert!(schema_errors(&doc).is_empty(), "{:?}", schema_errors(&doc));
        let e = &doc["events"];
        let completed = doc["counters"]["completed"].as_u64().unwrap();
        assert!(completed >= 2, "{url}: {out}");
        assert_eq!(e["kind"], "sse");
        assert_eq!(e["responses"].as_u64(), Some(completed), "{e}");
        assert_eq!(
            e["completed_events"].as_u64(),
            Some(completed * EVENTS as u64),
            "{url}: {e}"
        );
        assert_eq!(e["per_response"].as_f64(), Some(EVENTS as f64));
        assert!(e["count"].as_u64().unwrap() >= completed * EVENTS as u64);
        let ms = |v: &serde_json::Value| Duration::from_micros(v.as_u64().unwrap());
        let gap_p50 = ms(&e["gap"]["percentiles"][0][1]);
        assert!(
            (Duration::from_millis(70)..=Duration::from_millis(140)).contains(&gap_p50),
            "{url}: gap p50 {gap_p50:?}\n{out}"
        );
        // The first event comes with or after the response's first byte
        // (over HTTP/1.1 nginx counts the head against the rate too, over
        // HTTP/2 it does not), and within the first of the 100 ms steps.
        let first_p50 = ms(&e["first"]["percentiles"][0][1]);
        let ttfb_p50 = ms(&doc["latency"]["ttfb"]["corrected"]["percentiles"][0][1]);
        assert!(
            ttfb_p50 <= first_p50 && first_p50 <= Duration::from_millis(400),
            "{url}: first byte p50 {ttfb_p50:?}, first event p50 {first_p50:?}\n{out}"
        );
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with("Events: "))
            .unwrap_or_else(|| panic!("no Events line:\n{out}"));
        assert!(
            line.contains("10.0 per response; first event p50 "),
            "{line}"
        );
        assert!(out.contains("Event gap"), "{out}");
    }
}

/// A run without `--sse` reads bodies as bytes: no events anywhere.
#[test]
fn without_sse_nothing_is_read_as_events() {
    let _g = serial();
    let Some(ngx) = Nginx::start(Options {
        events: true,
        ..Options::default()
    }) else {
        return;
    };
    let (o, text) = bench(&["-t1", "-c1", "-d1500ms", &ngx.h2c_url("/events"), "--http2"]);
    assert!(o.stats.events.is_none(), "{text}");
    assert!(!text.contains("Events:"), "{text}");
}
