//! Truth at the edges of a run: requests that never completed count in the
//! percentiles at their lower bounds, runs that end early say so, and the
//! never-sent and lost-requests warnings name what the connections saw.

use std::time::Duration;

use crate::common::files::*;
use crate::common::nginx::{Nginx, Options, BIG_HEAD};
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
        ws: None,
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

/// A JSON document's counters: the ledger balances, and the read errors
/// add up to their causes.
fn json_counters(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("the JSON document is written");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let c = doc["counters"].clone();
    let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("no {k} in {c}"));
    let e = |k: &str| c["errors"][k].as_u64().unwrap();
    let lost = e("read") + e("write") + e("timeout");
    assert_eq!(
        n("due"),
        n("completed") + lost + n("in_flight") + n("never_sent"),
        "{c}"
    );
    let causes = c["read_causes"].as_object().expect("read_causes");
    let by_cause: u64 = causes.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(by_cause, e("read"), "{c}");
    c
}

/// nginx past its `worker_connections` closes the connections beyond them
/// as it accepts them (and, to make room, idle ones it had answered on):
/// requests written to a connection it turned away are lost, counted as
/// closed before answering, and the warning says to lower -c. nginx
/// logged as answered exactly what metron completed (and at most what
/// was in flight at the end). The issue's -c8000 against 4096, scaled
/// down to 512 against 128 to stay quick.
#[test]
fn a_server_past_its_connection_limit_is_named_in_the_lost_warning() {
    let _g = serial();
    let Some(ngx) = Nginx::start(Options {
        worker_connections: Some(128),
        ..Options::default()
    }) else {
        return;
    };
    let u = ngx.h1_url("/");
    let json = std::env::temp_dir().join(format!("metron-limit-{}.json", std::process::id()));
    let j = json.to_str().unwrap();
    let run = metron(&["-t1", "-c512", "-R2000", "-d2s", "--json", j, &u]);
    let text = stdout(&run);
    assert!(run.status.success(), "{text}\n{}", stderr(&run));
    let c = json_counters(&json);
    let _ = std::fs::remove_file(&json);
    let unanswered = c["read_causes"]["closed_unanswered"].as_u64().unwrap();
    assert!(unanswered > 0, "{c}\n{text}");
    let read_line = text
        .lines()
        .find(|l| l.starts_with("  Read errors: "))
        .unwrap_or_else(|| panic!("no read errors line:\n{text}"));
    assert!(
        read_line.contains(&format!("closed before answering {unanswered}")),
        "{read_line}"
    );
    let lost = ["read", "write", "timeout"]
        .iter()
        .map(|k| c["errors"][k].as_u64().unwrap())
        .sum::<u64>();
    let warning = text
        .lines()
        .find(|l| l.contains(" due requests were lost: "))
        .unwrap_or_else(|| panic!("no lost-requests warning:\n{text}"));
    assert!(
        warning.starts_with(&format!("  Warning: {lost} of {} due", c["due"])),
        "{warning}"
    );
    assert!(
        warning.contains(&format!("closed before answering {unanswered}: "))
            && warning.contains("lower -c"),
        "{warning}"
    );
    assert!(
        warning.contains(&format!(
            "; connections were reopened {} times (",
            c["reconnects"]
        )) && warning.contains("turned away unanswered"),
        "{warning}"
    );
    // The pool of 512 met a limit: the report says about how many nginx
    // took.
    let accepted = c["connections"]["server_accepted"].as_u64().unwrap();
    assert!((64..=128).contains(&accepted), "{c}\n{text}");
    assert!(
        text.contains(&format!(
            "the server accepted about {accepted} of the 512 connections"
        )),
        "{text}"
    );
    // What nginx answered is what metron completed, give or take the
    // requests on the wire when the run ended.
    let (completed, in_flight) = (
        c["completed"].as_u64().unwrap(),
        c["in_flight"].as_u64().unwrap(),
    );
    let log = ngx.access_log();
    let answered = log.iter().filter(|l| l.status == 200).count() as u64;
    assert!(
        answered >= completed && log.len() as u64 <= completed + in_flight,
        "nginx logged {} requests, {answered} answered; metron completed {completed}, \
         {in_flight} in flight at the end",
        log.len()
    );
}

/// A head above `--max-head` from nginx (a header of [`BIG_HEAD`] bytes)
/// over HTTP/1.1, h2c and h2 over TLS: every request is lost to `head too
/// large` (nginx answered each one: its log has them), and the warning
/// says to raise --max-head; with the default limit the same run
/// completes everything.
#[test]
fn a_head_above_max_head_is_named_with_its_fix_over_every_protocol() {
    let _g = serial();
    let Some(ngx) = Nginx::start(Options {
        big_head: true,
        ..Options::default()
    }) else {
        return;
    };
    let ca = ngx.cacert();
    let runs: [(&str, String, Vec<&str>); 3] = [
        ("HTTP/1.1", ngx.h1_url("/big-head"), vec![]),
        ("h2c", ngx.h2c_url("/big-head"), vec!["--http2"]),
        (
            "h2",
            ngx.tls_url("/big-head"),
            vec!["--http2", "--cacert", &ca],
        ),
    ];
    let run = ["-t1", "-c2", "-R50", "-d1s"];
    for (what, u, flags) in &runs {
        let before = ngx.access_log().len();
        let (o, text) = bench(&[&flags[..], &run, &["--max-head", "1k", u]].concat());
        assert_balanced(&o);
        let c = &o.stats.counters;
        let r = &c.read_causes;
        assert_eq!(c.completed, 0, "{what}: {c:?}\n{text}");
        assert!(r.head_too_large > 0, "{what}: {c:?}");
        assert_eq!(r.head_too_large, c.errors.lost_requests(), "{what}: {c:?}");
        assert!(
            text.contains(&format!(
                "  Read errors: head too large {}\n",
                r.head_too_large
            )),
            "{what}: {text}"
        );
        assert!(
            text.contains(&format!(
                "requests were lost: head too large {}: raise --max-head",
                r.head_too_large
            )),
            "{what}: {text}"
        );
        assert!(
            !text.contains("raise -c") && !text.contains("lower -c"),
            "{what}: {text}"
        );
        // nginx sent every one of those heads whole.
        let log = ngx.access_log();
        let new = &log[before..];
        assert!(
            new.len() as u64 >= r.head_too_large
                && new.len() as u64 <= r.head_too_large + c.in_flight,
            "{what}: nginx logged {}, {c:?}",
            new.len()
        );

        let (o, text) = bench(&[&flags[..], &run, &[u.as_str()]].concat());
        let c = &o.stats.counters;
        assert_balanced(&o);
        assert_eq!(c.errors.lost_requests(), 0, "{what}: {c:?}\n{text}");
        assert_eq!(c.completed + c.in_flight, c.due, "{what}: {c:?}\n{text}");
        assert!(c.completed > 0, "{what}: {c:?}");
        // HTTP/2 sends the header Huffman-coded: 5 bits an `a`.
        assert!(
            c.bytes >= c.completed * BIG_HEAD as u64 / 2,
            "{what}: {c:?}"
        );
        assert!(!text.contains("were lost"), "{what}: {text}");
    }
}
