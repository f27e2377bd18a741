//! `--sse`: response bodies read as server-sent events, against nginx
//! sending a file of events at a limited rate (one every 100 ms), over
//! HTTP/1.1 and HTTP/2: every event counted, the gaps the rate makes, and
//! the figures in the report and the JSON document.

use std::path::Path;
use std::time::Duration;

use crate::common::files::{read_json, schema_errors};
use crate::common::nginx::*;
use crate::common::*;
use metron::serve::{ServeConfig, Sse, StallPlan};

/// nginx sends 100-byte events at 1000 bytes/s: 100 ms apart. Each
/// completed response carried exactly [`EVENTS`]; every gap of a whole
/// response is near 100 ms; the responses still streaming at the end add
/// their events so far and open gaps as lower bounds.
#[test]
fn every_event_is_counted_and_its_gap_is_the_servers() {
    let _g = serial();
    let Some(ngx) = nginx_with_events() else {
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
        let hlog = dir.file("run.hlog", "");
        let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
        args.extend([
            "-t1", "-c2", "-d3s", "--sse", "-L", "--json", &json, "--hlog", &hlog, url,
        ]);
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
        // The first event comes within the first of the 100 ms steps
        // (over HTTP/1.1 nginx counts the head against the rate too, over
        // HTTP/2 it does not, so there it comes at once).
        let first_p50 = ms(&e["first"]["percentiles"][0][1]);
        assert!(
            first_p50 <= Duration::from_millis(400),
            "{url}: first event p50 {first_p50:?}\n{out}"
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
        // Interval by interval too: the log's tags and the series' p99s.
        let log = std::fs::read_to_string(&hlog).unwrap();
        for tag in ["Tag=first-event,", "Tag=event-gap,"] {
            assert!(
                log.lines().any(|l| l.starts_with(tag)),
                "{url}: no {tag}\n{log}"
            );
        }
        let points = doc["series"]["points"].as_array().unwrap();
        assert!(points.iter().any(|p| p["event_gap_p99"].as_u64().is_some()));
    }
}

/// nginx with its `/events` file of server-sent events.
fn nginx_with_events() -> Option<Nginx> {
    Nginx::start(Options {
        events: true,
        ..Options::default()
    })
}

/// A run without `--sse` reads bodies as bytes: no events anywhere.
#[test]
fn without_sse_nothing_is_read_as_events() {
    let _g = serial();
    let Some(ngx) = nginx_with_events() else {
        return;
    };
    let (o, text) = bench(&["-t1", "-c1", "-d1500ms", &ngx.h2c_url("/events"), "--http2"]);
    assert!(o.stats.events.is_none(), "{text}");
    assert!(!text.contains("Events:"), "{text}");
}

per_protocol! {
    /// `metron serve` streams 5 events 20 ms apart (the last `data:
    /// [DONE]`), the first with the head, and stalls once for S = 1 s at
    /// rate R. The first event of every request due during the stall
    /// waits for its end: timed from
    /// the intended send time, the first events follow the arithmetic
    /// of a stall (as latency does in tests/it/rate.rs), while the gaps
    /// stay the server's 20 ms. Every completed response counted its 5
    /// events, and metron read no more events than the server wrote.
    fn the_first_event_is_timed_from_when_the_request_was_due(proto) {
        let _g = serial();
        let stall = Duration::from_millis(1000);
        let srv = proto.server(ServeConfig {
            sse: Some(Sse {
                events: 5,
                first: Duration::ZERO,
                gap: Duration::from_millis(20),
            }),
            stall: Some(StallPlan::once(Duration::from_millis(1200), stall).unwrap()),
            ..ServeConfig::default()
        });
        let rate = 500.0;
        let args: &[&str] = match proto {
            // A response takes 80 ms: one connection per request waiting
            // out the stall, so that none waits for a connection after it.
            Proto::Http1 => &["-t1", "-c100", "--max-connections", "1000", "-R500", "-d4s", "--sse"],
            Proto::Http2 | Proto::Http3 => &["-t1", "-c4", "-m100", "-R500", "-d4s", "--sse"],
        };
        let (o, text) = proto.bench(&[args, &[&proto.url(&srv, "/")]].concat());
        let c = &o.stats.counters;
        assert_eq!(c.errors.lost_requests(), 0, "{c:?}\n{text}");
        let e = o.stats.events.as_ref().expect("--sse keeps events");
        assert_eq!(e.responses, c.completed);
        assert_eq!(e.completed_events, 5 * c.completed, "{text}");
        assert!(e.count <= srv.stats().sse_events(), "{text}");
        let n = e.first.len() as f64;
        let f = stall.as_secs_f64() * rate / n;
        let s_us = stall.as_micros() as f64;
        for q in [0.90, 0.99] {
            let want = s_us * (1.0 - (1.0 - q) / f);
            let got = e.first.value_at_quantile(q) as f64;
            assert!(
                (got - want).abs() <= 0.05 * s_us,
                "first event p{}: got {got:.0} us, want {want:.0} us\n{text}",
                q * 100.0
            );
        }
        let gap = Duration::from_micros(e.gap.value_at_quantile(0.5));
        assert!(
            (Duration::from_millis(15)..=Duration::from_millis(30)).contains(&gap),
            "gap p50 {gap:?}\n{text}"
        );
    }
}

/// A script's `event(data)` gets each event's data in order; an error in
/// it is named as one.
#[test]
fn a_scripts_event_hook_gets_each_events_data() {
    let _g = serial();
    let srv = server(ServeConfig {
        sse: Some(Sse {
            events: 5,
            first: Duration::ZERO,
            gap: Duration::from_millis(10),
        }),
        ..ServeConfig::default()
    });
    let o = metron(&[
        "-t1",
        "-c1",
        "-d2s",
        "--sse",
        "-s",
        &script("sse_event.lua"),
        &url(&srv, "/"),
    ]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("in event()") && err.contains("third event: event 3"),
        "{err}"
    );
}
