//! `--sse` against aiohttp, a streaming server nobody on this project
//! wrote (tests/sse_server.py starts it with a known timetable): the first
//! event and the gaps as the timetable has them, a pause mid-stream at its
//! true length in the gaps' tail, the phases in order, and a stream cut by
//! the run's end reported as lower bounds.

use std::process::Command;

use crate::common::servers::{self, Process};
use crate::common::*;
use metron::engine::Outcome;

/// aiohttp's SSE endpoint on a port of its own; `None` where python3 or
/// aiohttp is missing (a failure under CI, which installs them).
struct Aiohttp {
    _process: Process,
    port: u16,
}

impl Aiohttp {
    fn start() -> Option<Aiohttp> {
        let probe = Command::new("python3")
            .args(["-c", "import aiohttp"])
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            let why = "python3 cannot import aiohttp: python3 -m pip install aiohttp";
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("note: the aiohttp check skipped: {why}");
            return None;
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sse_server.py");
        let (process, [port]) = servers::start(
            servers::fresh_dir("aiohttp"),
            |_, [port]| {
                let mut c = Command::new("python3");
                c.arg(script).arg(port.to_string());
                c
            },
            |_| "aiohttp did not start".to_string(),
        );
        Some(Aiohttp {
            _process: process,
            port,
        })
    }

    fn url(&self, query: &str) -> String {
        format!("http://127.0.0.1:{}/stream?{query}", self.port)
    }
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The events of a run, which must have been read.
fn events(o: &Outcome) -> &metron::stats::EventStats {
    o.stats.events.as_ref().expect("--sse keeps events")
}

/// 10 events: the first 50 ms after the request, then one every 20 ms.
/// At a rate the server keeps up with, the first event's p50 is 50 ms and
/// the gaps' p50 20 ms, to within 2 ms; every completed response carried
/// all ten; the first byte (the head, sent at once) comes before the
/// first event, and the first event before the response's end.
#[test]
fn the_timetable_comes_back_from_the_figures() {
    let _g = serial();
    let Some(srv) = Aiohttp::start() else {
        return;
    };
    let url = srv.url("n=10&first=50&gap=20");
    let (o, text) = bench(&["-t1", "-c20", "-R40", "-d4s", "--sse", &url]);
    let e = events(&o);
    let c = &o.stats.counters;
    assert_eq!(c.errors.lost_requests(), 0, "{text}");
    assert!(e.responses >= 100, "{text}");
    assert_eq!(e.completed_events, 10 * e.responses, "{text}");
    let first = ms(e.first.value_at_quantile(0.5));
    let gap = ms(e.gap.value_at_quantile(0.5));
    assert!(
        (first - 50.0).abs() <= 2.0,
        "first event p50 {first} ms\n{text}"
    );
    assert!((gap - 20.0).abs() <= 2.0, "gap p50 {gap} ms\n{text}");
    let ttfb = ms(o.stats.timings.ttfb.value_at_quantile(0.5));
    let latency = ms(o.stats.latency.value_at_quantile(0.5));
    assert!(
        ttfb < first && first < latency,
        "ttfb {ttfb}, first {first}, latency {latency}"
    );
    // Ten events over 50 + 9 × 20 ms.
    assert!(
        (latency - 230.0).abs() <= 10.0,
        "latency p50 {latency} ms\n{text}"
    );
}

/// After its fifth event each response pauses 300 ms more: one gap in
/// nine is 320 ms, so the gaps' p99 and max show the pause at its length
/// while their p50 stays 20 ms. Responses still streaming at the end add
/// their open gaps as lower bounds, and the report says how many.
#[test]
fn a_pause_mid_stream_shows_at_its_length_and_the_end_leaves_lower_bounds() {
    let _g = serial();
    let Some(srv) = Aiohttp::start() else {
        return;
    };
    let url = srv.url("n=10&first=10&gap=20&pause_after=5&pause=300");
    let (o, text) = bench(&["-t1", "-c40", "-R40", "-d4s", "--sse", &url]);
    let e = events(&o);
    assert!(e.responses >= 100, "{text}");
    let (p50, p99, max) = (
        ms(e.gap.value_at_quantile(0.5)),
        ms(e.gap.value_at_quantile(0.99)),
        ms(e.gap.max()),
    );
    assert!((p50 - 20.0).abs() <= 2.0, "gap p50 {p50} ms\n{text}");
    assert!((p99 - 320.0).abs() <= 10.0, "gap p99 {p99} ms\n{text}");
    assert!((315.0..=400.0).contains(&max), "gap max {max} ms\n{text}");
    // About R × 0.5 s of streams are open at the end: each is a lower bound.
    assert!(e.open > 0, "{text}");
    assert!(text.contains("open at the end, as lower bounds"), "{text}");
}
