//! Targets that fail on purpose (the built-in target's faults, over
//! plain TCP and TLS) and what a run against them must show: its books
//! balanced, its report whole, each fault counted where it belongs.

use std::sync::Arc;

use metron::engine::Outcome;
use metron::serve::{BadCert, Fault, FaultPlan, ServeConfig, ServerStats};
use metron::stats::Counters;

use super::{assert_balanced, serial, server, Proto};

/// The rate-mode run most tests make: 200 requests over one second on
/// four connections.
pub const RUN: [&str; 4] = ["-t1", "-c4", "-R200", "-d1s"];

/// A target whose responses `plan` breaks.
pub fn faulty(plan: FaultPlan) -> ServeConfig {
    ServeConfig {
        fault: Some(plan),
        body_size: 64,
        ..ServeConfig::default()
    }
}

/// Runs metron with `args` (and the server's URL) against a server built
/// from `cfg`; checks the books (every due request accounted for) and the
/// report, and hands back the run and the server's own counts.
pub fn run_and_check_ledger(
    cfg: ServeConfig,
    args: &[&str],
) -> (Outcome, String, Arc<ServerStats>) {
    run_and_check_ledger_over(Proto::Http1, cfg, args)
}

/// [`run_and_check_ledger`] in protocol `p`, within the time limit of
/// [`Proto::bench_within`].
pub fn run_and_check_ledger_over(
    p: Proto,
    cfg: ServeConfig,
    args: &[&str],
) -> (Outcome, String, Arc<ServerStats>) {
    let srv = p.server(cfg);
    let (o, text) = p.bench_within(args, &p.url(&srv, "/"));
    assert_balanced(&o);
    assert_report(&text, &o.stats.counters);
    (o, text, srv.stats())
}

/// The report is printed whole, with the socket errors the run counted.
pub fn assert_report(text: &str, c: &Counters) {
    assert!(text.contains("Latency"), "{text}");
    assert!(
        text.contains(&format!("  {} requests in ", c.completed)),
        "{text}"
    );
    if c.errors.any_socket() {
        let e = c.errors;
        let line = format!(
            "  Socket errors: connect {}, read {}, write {}, timeout {}\n",
            e.connect, e.read, e.write, e.timeout
        );
        assert!(text.contains(&line), "missing {line:?} in:\n{text}");
    }
    // wrk's read total, broken down by what the connections saw.
    if c.errors.read > 0 {
        let total: u64 = c.read_causes.named().iter().map(|(_, n)| n).sum();
        assert_eq!(total, c.errors.read, "{c:?}");
        let line = format!("  Read errors: {}\n", c.read_causes);
        assert!(text.contains(&line), "missing {line:?} in:\n{text}");
    }
    if c.completed > 0 {
        let line = format!("  Status codes: {}\n", c.status_codes);
        assert!(text.contains(&line), "missing {line:?} in:\n{text}");
        assert_eq!(c.status_codes.total(), c.completed, "{c:?}");
    }
}

/// A fault that breaks the response it replaces, on every fourth response:
/// each request it hits is one read error and nothing else, the other
/// requests complete, and nothing is left unaccounted.
pub fn breaks_the_stream(fault: Fault) {
    let _g = serial();
    let (o, _, server) = run_and_check_ledger(faulty(FaultPlan::every(fault, 4)), &RUN);
    let c = o.stats.counters;
    let faults = server.faults();
    assert!(c.errors.read > 0, "{fault}: {c:?}");
    // Every read error is a fault the server counted before writing; a
    // fault the client had not seen yet is still in flight at the end.
    assert!(c.errors.read <= faults, "{fault}: {faults} faults, {c:?}");
    assert!(
        faults <= c.errors.read + c.in_flight,
        "{fault}: {faults}, {c:?}"
    );
    let others = c.errors.connect + c.errors.write + c.errors.timeout + c.errors.status;
    assert_eq!(others, 0, "{fault}: {c:?}");
    // The three healthy responses in four complete.
    assert!(c.completed >= c.due / 2, "{fault}: {c:?}");
}

pub fn tls_server(cert: BadCert, fault: Option<FaultPlan>) -> (metron::serve::Server, String) {
    let srv = server(ServeConfig {
        tls: Some(cert),
        fault,
        ..ServeConfig::default()
    });
    let u = format!("{}/", srv.url());
    assert!(u.starts_with("https://127.0.0.1:"), "{u}");
    (srv, u)
}
