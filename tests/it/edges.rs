//! Truth at the edges of a run: requests that never completed count in the
//! percentiles at their lower bounds, runs that end early say so, and the
//! never-sent warning names what the counters show.

use std::time::Duration;

use crate::common::files::*;
use crate::common::*;
use metron::serve::{ServeConfig, StallPlan};
use metron::stats::StopCause;

/// A script that stops its thread at the first response.
const STOP_ON_RESPONSE: &str = "function response(status, headers, body) wrk.thread:stop() end\n";

/// A server that stops answering for the last S of a D-second run at R/s:
/// the S·R requests due in that time never complete, and each one's
/// latency is at least the run's end minus its intended time. Their ages
/// are uniform over [0, S], so with N due in all (f = S·R/N of them
/// unfinished) the conservative quantile q above 1 - f is at least
/// S·(1 - (1 - q)/f). The completed requests' figures do not move.
#[test]
fn a_stall_at_the_end_raises_the_conservative_percentiles() {
    let _g = serial();
    let (d, s, rate) = (3.0, 1.0, 1000.0);
    // The stall starts 2 s after the server does, so at most 2 s into the
    // run (which starts a little later): it lasts at least the last second.
    let srv = server(ServeConfig {
        stall: Some(StallPlan::once(Duration::from_secs(2), Duration::from_secs(60)).unwrap()),
        ..ServeConfig::default()
    });
    let u = url(&srv, "/");
    let (o, text) = bench(&["-t2", "-c10", "-R1000", "-d3s", "-L", &u]);
    assert_balanced(&o);
    let st = &o.stats;
    let c = st.counters;
    // Every unfinished request has its lower bound, and nothing else does.
    assert_eq!(st.unfinished.len(), c.unfinished(), "{c:?}");
    assert_eq!(c.errors.timeout, 0, "{c:?}");
    assert!(c.unfinished() as f64 >= s * rate * 0.98, "{c:?}");
    let all = st.with_unfinished();
    assert_eq!(all.len(), st.latency.len() + c.unfinished());
    let f = s * rate / (d * rate);
    for q in [0.9, 0.99, 0.999] {
        let bound_us = s * 1e6 * (1.0 - (1.0 - q) / f);
        let got = all.value_at_quantile(q) as f64;
        // 2% for the timer and clock on a loaded machine.
        assert!(
            got >= bound_us * 0.98,
            "p{}: {got:.0} us with unfinished requests, at least {bound_us:.0} us expected",
            q * 100.0
        );
    }
    // The completed requests were answered before the stall: fast.
    assert!(
        st.latency.value_at_quantile(0.99) < 200_000,
        "completed p99 {} us",
        st.latency.value_at_quantile(0.99)
    );
    let title = format!(
        "  Latency Distribution including {} unfinished requests (lower bounds)\n",
        c.unfinished()
    );
    assert!(text.contains(&title), "{text}");
    // It follows the completed requests' spectrum, which keeps its layout.
    let spectrum = text.find("Detailed Percentile spectrum").unwrap();
    assert!(text.find(&title).unwrap() > spectrum, "{text}");
    assert!(
        text.contains("never sent: at the end 10 connections still waited for responses"),
        "{text}"
    );
}

/// A server that never answers: no latency of 0.00us anywhere; the report
/// gives the unfinished requests' ages instead, in one line without -L.
#[test]
fn a_server_that_never_answers_reports_ages_not_zero() {
    let _g = serial();
    let srv = silent();
    let u = url(&srv, "/");
    let (o, text) = bench(&["-t1", "-c4", "-R100", "-d1s", "--timeout", "10s", &u]);
    assert_balanced(&o);
    assert_eq!(o.stats.counters.completed, 0);
    assert!(!text.contains(" 0.00us"), "{text}");
    assert!(
        text.contains("    Latency        -         -        -         - \n"),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.contains("unfinished requests (lower bounds): p50 "))
        .unwrap_or_else(|| panic!("no line with the unfinished requests: {text}"));
    // 100 requests over one second, none answered: the median is ~0.5 s old.
    let all = o.stats.with_unfinished();
    let p50 = all.value_at_quantile(0.5);
    assert!((450_000..=560_000).contains(&p50), "p50 {p50} us: {line}");
}

/// Requests given up at their timeout count at their age then.
#[test]
fn timeouts_count_at_their_age_when_given_up() {
    let _g = serial();
    let srv = silent();
    let u = url(&srv, "/");
    let (o, _) = bench(&["-t1", "-c2", "-d2s", "--timeout", "300ms", &u]);
    assert_balanced(&o);
    let c = o.stats.counters;
    assert!(c.errors.timeout >= 2, "{c:?}");
    assert_eq!(o.stats.unfinished.len(), c.unfinished());
    // Every timed-out request was at least 300 ms old when given up.
    let sent_at_least = o.stats.unfinished.min();
    assert!(
        c.in_flight > 0 || sent_at_least >= 300_000,
        "youngest lower bound {sent_at_least} us, {c:?}"
    );
}

/// A script that stops every thread ends the run early, and the report
/// says so; rates are over the time that ran, never less than an interval.
#[test]
fn a_run_stopped_by_its_script_says_so() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let u = url(&srv, "/");
    let script = lua_file("stop", STOP_ON_RESPONSE);
    let s = script.to_str().unwrap();
    let (o, text) = bench(&["-t1", "-c1", "-d10s", "-s", s, &u]);
    let i = o.stats.interruption.expect("the run was cut short");
    assert_eq!(i.cause, StopCause::ScriptStop);
    assert!(i.after < Duration::from_secs(2), "{i:?}");
    assert!(
        text.contains("  Interrupted after ")
            && text.contains(" of 10s (thread:stop() in every thread)"),
        "{text}"
    );
    // One request (or a few) in well under a second: not thousands a second.
    assert_eq!(o.stats.rate_window, Duration::from_secs(1));
    assert!(o.stats.requests_per_sec() < 10.0, "{text}");
    assert!(
        text.contains("Note: rates are per second over 1.00s, one interval"),
        "{text}"
    );
    let _ = std::fs::remove_file(script);
}

/// The never-sent warning names what held the requests back: here the
/// script's delay() keeps the only connection resting.
#[test]
fn the_never_sent_warning_names_a_delay() {
    let _g = serial();
    let srv = server(ServeConfig::default());
    let u = url(&srv, "/");
    let script = lua_file("delay", "function delay() return 5000 end\n");
    let s = script.to_str().unwrap();
    let (o, text) = bench(&["-t1", "-c1", "-R100", "-d1s", "-s", s, &u]);
    assert_balanced(&o);
    assert!(o.stats.counters.never_sent > 0);
    assert!(
        text.contains("connection rested in the script's delay()"),
        "{text}"
    );
    assert!(!text.contains("still waited for responses"), "{text}");
    let _ = std::fs::remove_file(script);
}

/// Connections that cannot be opened are named as the cause, not busy ones.
#[test]
fn the_never_sent_warning_names_failed_connects() {
    let _g = serial();
    // The server accepts the pre-flight connect, then goes away.
    let srv = server(ServeConfig::default());
    let u = url(&srv, "/");
    let cfg = {
        use clap::Parser;
        let args =
            metron::cli::BenchArgs::try_parse_from(["metron", "-t1", "-c2", "-R50", "-d1s", &u])
                .unwrap();
        metron::cli::config::Config::from_args(&args).unwrap()
    };
    let stop = metron::engine::Stop::new();
    let prepared = metron::engine::prepare(&cfg.run, &stop, None).unwrap();
    drop(srv);
    let o = prepared.start().collect(None).unwrap();
    let c = o.stats.counters;
    // Connections made before the server went may have carried a request
    // or two; after that, nothing could be sent.
    assert!(c.never_sent > 0, "{c:?}");
    let view = metron::report::TextReport {
        url: &u,
        duration: Duration::from_secs(1),
        threads: 1,
        connections: 2,
        load: cfg.run.load.clone(),
        latency: false,
        u_latency: false,
        protocol: None,
        profile_phases: 0,
        stats: &o.stats,
        lag_allowance: None,
    };
    let warnings = metron::report::text::warnings(&view).join("\n");
    assert!(
        warnings.contains("down (connect refused ")
            && warnings.contains(": is the server listening?)"),
        "{warnings}\n{c:?}"
    );
    assert!(
        !warnings.contains("still waited for responses"),
        "{warnings}"
    );
}

/// `metron report` prints a saved run's report again byte for byte (with
/// both latency blocks, as it always prints them), its unfinished requests
/// and its early end included.
#[test]
fn a_saved_report_keeps_its_edges() {
    let _g = serial();
    let silent = silent();
    let fine = server(ServeConfig::default());
    let dir = std::env::temp_dir();
    let script = lua_file("saved", STOP_ON_RESPONSE);
    let s = script.to_str().unwrap();
    let silent_url = url(&silent, "/");
    let fine_url = url(&fine, "/");
    let runs: [&[&str]; 2] = [
        &["-t1", "-c2", "-R50", "-d1s", "-L", "-U", &silent_url],
        &["-t1", "-c1", "-d5s", "-L", "-U", "-s", s, &fine_url],
    ];
    for (i, args) in runs.into_iter().enumerate() {
        let json = dir.join(format!("metron-edges-{}-{i}.json", std::process::id()));
        let j = json.to_str().unwrap();
        let mut argv = vec!["--json", j];
        argv.extend_from_slice(args);
        let run = metron(&argv);
        assert!(run.status.success(), "{}", stderr(&run));
        let again = metron(&["report", j]);
        assert!(again.status.success(), "{}", stderr(&again));
        assert_eq!(stdout(&again), stdout(&run));
        let _ = std::fs::remove_file(json);
    }
    let _ = std::fs::remove_file(script);
}
