//! What a run through a server stall must show, as arithmetic says: the
//! checks that tell corrected latency from uncorrected over each
//! protocol (tests/it/rate.rs).

use std::time::Duration;

use hdrhistogram::Histogram;
use metron::engine::Outcome;

/// Over HTTP/1.1 uncorrected latency sees only the few requests that were
/// in flight when the stall began: its p99 is far below the corrected one.
pub fn uncorrected_sees_the_requests_in_flight(o: &Outcome) {
    let u99 = o.stats.uncorrected.value_at_quantile(0.99) as f64;
    let c99 = o.stats.latency.value_at_quantile(0.99) as f64;
    assert!(
        u99 * 10.0 < c99,
        "uncorrected p99 {u99} us vs corrected {c99} us"
    );
}

/// Over HTTP/2 uncorrected latency sees the stall only in the requests
/// that were on the wire during it. No stream frees up until the stall
/// ends, and the -c × -m = 400 streams fill within its first 0.2 s, so
/// about 400 requests wait most of S once sent (5% of this run, so counts
/// are compared rather than p99s). Corrected latency sees every request
/// due during the stall: about 90% of S·R = 2000 of them are above S/10.
pub fn uncorrected_sees_the_streams_in_flight(o: &Outcome, stall: Duration, rate: f64) {
    let tenth = (stall.as_micros() / 10) as u64;
    let above = |h: &Histogram<u64>| h.len() - h.count_between(0, tenth);
    let (uncorrected, corrected) = (above(&o.stats.uncorrected), above(&o.stats.latency));
    assert!(
        (300..=440).contains(&uncorrected),
        "{uncorrected} uncorrected latencies above S/10, {corrected} corrected"
    );
    assert!(
        corrected as f64 >= 0.85 * stall.as_secs_f64() * rate,
        "{corrected} corrected latencies above S/10"
    );
}
