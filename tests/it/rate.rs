//! Rate mode against ground truth: the schedule is kept, and the corrected
//! percentiles of a run through a server stall are what arithmetic says,
//! over HTTP/1.1 and HTTP/2 alike.

use std::time::Duration;

use crate::common::truth::{
    uncorrected_sees_the_requests_in_flight, uncorrected_sees_the_streams_in_flight,
};
use crate::common::*;
use metron::serve::{ServeConfig, StallPlan};

/// Achieved rate within 1% of -R, and every due request accounted for: all
/// but those due in the run's last 5 ms completed (a busy 2-core machine
/// sends a few ms late now and then, and what is due at the very end is
/// then rightly counted as never sent).
#[test]
fn achieved_rate_matches_the_requested_rate() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let cases: &[(&str, &str, &str, &str)] = &[
        ("1", "2", "500", "2s"),
        ("2", "8", "2000", "2s"),
        ("2", "4", "0.5", "4s"), // fractional: one request every 2 s
        ("4", "4", "3", "3s"),   // fewer requests per second than threads
    ];
    for &(t, c, r, d) in cases {
        let u = url(&srv, "/");
        let (o, _) = bench(&["-t", t, "-c", c, "-R", r, "-d", d, &u]);
        let rate: f64 = r.parse().unwrap();
        let secs = o.stats.window.as_secs_f64();
        let expected = (rate * secs).round() as u64;
        let counters = &o.stats.counters;
        assert_balanced(&o);
        assert_eq!(counters.due, expected, "-t{t} -c{c} -R{r} -d{d}: due");
        let late = 1 + (rate * 0.005) as u64;
        assert!(
            counters.completed + late >= expected,
            "-t{t} -c{c} -R{r}: {counters:?}"
        );
        let achieved = o.stats.requests_per_sec();
        assert!(
            (achieved - rate).abs() <= rate * 0.01 + 1.0 / secs,
            "-t{t} -c{c} -R{r}: achieved {achieved:.3} req/s"
        );
        assert_eq!(counters.errors.lost_requests(), 0);
    }
}

per_protocol! {
    /// A stall of S seconds at rate R: the S·R requests due during it wait,
    /// on average, S/2, spread uniformly over [0, S]. With N requests in
    /// all, the fraction f = S·R/N of them form that tail, so the corrected
    /// quantile q (above 1 - f) is S·(1 - (1 - q)/f). Over HTTP/2 and HTTP/3 the
    /// requests due during the stall go out on the connections' free
    /// streams (4 × 100 of them) and then wait for one; either way their
    /// latency runs from when they were due.
    fn corrected_percentiles_match_a_stall_of_known_length(proto) {
        let _g = serial();
        let stall = Duration::from_millis(1000);
        let srv = proto.server(ServeConfig {
            stall: Some(StallPlan::once(Duration::from_millis(1200), stall).unwrap()),
            ..ServeConfig::default()
        });
        let u = proto.url(&srv, "/");
        let (rate, args): (f64, &[&str]) = match proto {
            Proto::Http1 => (1000.0, &["-t2", "-c10", "-R1000", "-d4s"]),
            Proto::Http2 | Proto::Http3 => (2000.0, &["-t1", "-c4", "-m100", "-R2000", "-d4s"]),
        };
        let (o, _) = proto.bench(&[args, &[&u]].concat());
        assert_balanced(&o);
        let c = &o.stats.counters;
        assert_eq!(c.errors.lost_requests(), 0, "{c:?}");
        let n = o.stats.latency.len() as f64;
        let f = stall.as_secs_f64() * rate / n;
        let s_us = stall.as_micros() as f64;
        // The stall holds back whole responses, heads included: the time to
        // first byte from the intended send time follows the same
        // arithmetic as the latency.
        let ttfb = &o.stats.timings.ttfb;
        assert_eq!(ttfb.len(), o.stats.latency.len());
        for q in [0.90, 0.99, 0.999] {
            let want = s_us * (1.0 - (1.0 - q) / f);
            for (name, h) in [("latency", &o.stats.latency), ("ttfb", ttfb)] {
                let got = h.value_at_quantile(q) as f64;
                // The stall's edges are blurred by a few milliseconds of
                // scheduling on either side; 5% of S covers that with room.
                assert!(
                    (got - want).abs() <= 0.05 * s_us,
                    "{name} p{}: got {got:.0} us, want {want:.0} us ({c:?})",
                    q * 100.0
                );
            }
        }
        // From the send, the first byte hides the stall as uncorrected
        // latency does: over HTTP/1.1 only the requests in flight when it
        // began saw it.
        if proto == Proto::Http1 {
            let sent = o.stats.timings.ttfb_uncorrected.value_at_quantile(0.99);
            let due = ttfb.value_at_quantile(0.99);
            assert!(sent * 10 < due, "ttfb p99 {sent} us from the send, {due} us from due");
        }
        match proto {
            Proto::Http1 => uncorrected_sees_the_requests_in_flight(&o),
            Proto::Http2 | Proto::Http3 => {
                uncorrected_sees_the_streams_in_flight(&o, stall, rate);
                // No more connections than -c (and the pre-flight's).
                let st = srv.stats();
                let opened = st.h2_connections() + st.h3_connections();
                assert!(opened <= 5, "{opened} connections");
            }
        }
    }
}

/// --warmup removes the first part of the run from every figure.
#[test]
fn warmup_is_excluded_from_every_figure() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let u = url(&srv, "/");
    let (o, _) = bench(&["-t1", "-c2", "-R200", "-d3s", "--warmup", "1s", &u]);
    assert_balanced(&o);
    assert_eq!(o.stats.window, Duration::from_secs(2));
    assert_eq!(o.stats.counters.due, 400);
    let c = o.stats.counters;
    // Every figure covers the same two seconds: histograms and counts
    // agree, and the rate is the completions over that window. (A few
    // requests may still be in flight at the end on a loaded machine.)
    assert_eq!(o.stats.latency.len(), c.completed);
    assert_eq!(o.stats.requests_per_sec(), c.completed as f64 / 2.0);
    assert!(c.completed + c.in_flight + c.never_sent >= 398, "{c:?}");
    let series: u64 = o.stats.threads[0].series.counts().iter().sum();
    assert_eq!(series, c.completed);
}

/// Send lag shows the generator keeps its schedule at a modest rate.
#[test]
fn send_lag_is_recorded_for_every_request() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let u = url(&srv, "/");
    let (o, _) = bench(&["-t1", "-c4", "-R1000", "-d1s", &u]);
    assert_eq!(
        o.stats.send_lag.len(),
        o.stats.counters.due - o.stats.counters.never_sent
    );
}

/// Regression: at -R 1G counting the requests never sent walked each of
/// them, seconds after the run's end, and at rates whose times stopped
/// advancing (-R 1e30 then; now refused) or overflowed (-R 1e-11) it never
/// ended, deaf to Ctrl-C. Both ends of the range finish with the run.
#[test]
fn extreme_rates_end_with_the_run() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let u = url(&srv, "/");
    for (rate, due) in [("1G", "1000000000 due"), ("1e-11", "")] {
        let o = metron_within(
            &["-t2", "-c2", "-R", rate, "-d1s", &u],
            Duration::from_secs(20),
        );
        let out = stdout(&o);
        assert!(o.status.success(), "-R {rate}: {}", stderr(&o));
        assert!(
            out.contains("Requests/sec:") && out.contains(due),
            "-R {rate}: {out}"
        );
    }
}
