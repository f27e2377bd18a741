//! `/metrics`: the run's totals so far in Prometheus' text exposition
//! format (version 0.0.4), for a Prometheus that scrapes a long run.
//!
//! Latencies are histograms in seconds over the whole window so far (the
//! intervals every thread has closed): cumulative bucket counts, which a
//! Prometheus adds across instances (`sum by (le)`) before it takes a
//! quantile, as it cannot add quantiles. The buckets grow by 2^(1/3)
//! (26%) from 50 us to 3400 s (57 minutes), so `histogram_quantile` lands in the bucket
//! of metron's own percentile or the next.
//!
//! An instance of a sharded run (`--shard I/N`) labels every sample
//! `shard="I/N"`, ahead of its other labels: `by (shard)` keeps the
//! instances apart whatever Prometheus calls them, and `sum by (le)`
//! adds them. A run of one instance has no such label.

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::{EndpointTotals, State, Totals};
use crate::report::json::EndpointPoint;
use crate::schedule::Shard;
use crate::stats::summary;

/// Bucket bounds in microseconds: 50 us times 2^(k/3), to two significant
/// digits, up to an hour (3400 s); above that is the `+Inf` bucket's. A
/// saturated server's corrected latency runs to minutes in a long run,
/// and a quantile in `+Inf` would read as the last bound.
fn bounds() -> &'static [u64] {
    static BOUNDS: std::sync::OnceLock<Vec<u64>> = std::sync::OnceLock::new();
    BOUNDS.get_or_init(|| {
        (0..)
            .map(|k| two_digits(50.0 * 2f64.powf(f64::from(k) / 3.0)))
            .take_while(|&us| us <= 3_600_000_000)
            .collect()
    })
}

/// `x` rounded to two significant digits.
fn two_digits(x: f64) -> u64 {
    let scale = 10f64.powi(x.log10().floor() as i32 - 1);
    ((x / scale).round() * scale).round() as u64
}

pub(super) fn render(state: &State) -> String {
    let t = &state.totals;
    let mut out = Exposition::new(&state.labels);
    out.counter(
        "metron_requests_completed_total",
        "Responses received in the measured window so far, error statuses included.",
        &[(None, t.completed as f64)],
    );
    out.counter(
        "metron_requests_errors_total",
        "Requests lost or answered with a status of 400 or more, by kind; connect counts failed connects.",
        &[
            (Some(("kind", "status")), t.kinds.status as f64),
            (Some(("kind", "read")), t.kinds.read as f64),
            (Some(("kind", "write")), t.kinds.write as f64),
            (Some(("kind", "timeout")), t.kinds.timeout as f64),
            (Some(("kind", "connect")), t.kinds.connect as f64),
        ],
    );
    if let Some(n) = t.intended {
        // A flow's schedule starts visits, not requests: its count is
        // named so, and stays out of the requests' ledger.
        let (name, help) = if state.visits {
            (
                "metron_visits_intended_total",
                "Visits the schedule intended so far (a flow: each visit is a sequence of requests).",
            )
        } else {
            (
                "metron_requests_intended_total",
                "Requests the schedule intended so far.",
            )
        };
        out.counter(name, help, &[(None, n as f64)]);
    }
    out.counter(
        "metron_window_seconds_total",
        "Seconds of the measured window the figures cover.",
        &[(None, t.seconds)],
    );
    out.histogram(
        "metron_latency_seconds",
        "Corrected latency: from the intended send time to the response's end.",
        &[(None, &t.latency)],
    );
    out.histogram(
        "metron_uncorrected_latency_seconds",
        "Uncorrected latency: from the first byte written to the response's end.",
        &[(None, &t.uncorrected)],
    );
    out.histogram(
        "metron_send_lag_seconds",
        "Send lag: from the intended send time to the first byte written.",
        &[(None, &t.send_lag)],
    );
    let codes = t.status_codes.named();
    out.counter(
        "metron_responses_total",
        "Responses received in the measured window so far, by status code (a gRPC call by its HTTP status); codes beyond the sixteen first seen count under other.",
        &codes
            .iter()
            .map(|(code, n)| (Some(("code", code.as_str())), *n as f64))
            .collect::<Vec<_>>(),
    );
    phases(&mut out, t);
    if let Some(l) = &t.llm {
        out.counter(
            "metron_llm_output_tokens_total",
            "--llm: output tokens of the answers that ended in the measured window so far.",
            &[(None, l.output as f64)],
        );
        out.histogram(
            "metron_llm_ttft_seconds",
            "--llm: time to first token, from the intended send time.",
            &[(None, &l.ttft)],
        );
        out.histogram(
            "metron_llm_tpot_seconds",
            "--llm: time per output token after the first, one per answer of two tokens or more.",
            &[(None, &l.tpot)],
        );
    }
    if !t.endpoints.is_empty() {
        endpoints(&mut out, &t.endpoints);
    }
    out.gauge(
        "metron_requests_in_flight",
        "Requests sent and not answered yet.",
        state.in_flight as f64,
    );
    if state.visits {
        out.gauge(
            "metron_visits_waiting",
            "Visits due and not started yet (never started, if the run ended now).",
            state.waiting as f64,
        );
    } else {
        out.gauge(
            "metron_requests_waiting",
            "Requests due and not sent yet (never sent, if the run ended now).",
            state.waiting as f64,
        );
    }
    out.gauge(
        "metron_run_over",
        "Whether the run has ended (the final report is on the page).",
        f64::from(u8::from(state.report.is_some())),
    );
    out.text
}

/// One label of a sample besides the common ones, as (name, value).
type Label<'a> = Option<(&'a str, &'a str)>;

/// The text being written, and the labels every sample carries (the
/// run's `shard`, if any) ahead of its own.
struct Exposition {
    text: String,
    common: String,
}

impl Exposition {
    /// `common` as `name="value"` pairs joined by commas (escaped), or empty.
    fn new(common: &str) -> Exposition {
        Exposition {
            text: String::new(),
            common: common.to_string(),
        }
    }

    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// One sample line: the common labels, then `labels`, in braces if
    /// there are any.
    fn sample(&mut self, name: &str, labels: &[Label], value: f64) {
        let mut all: Vec<String> = Vec::new();
        if !self.common.is_empty() {
            all.push(self.common.clone());
        }
        all.extend(
            labels
                .iter()
                .flatten()
                .map(|(k, v)| format!("{k}=\"{}\"", label_value(v))),
        );
        let _ = if all.is_empty() {
            writeln!(self.text, "{name} {value}")
        } else {
            writeln!(self.text, "{name}{{{}}} {value}", all.join(","))
        };
    }

    /// A counter's HELP and TYPE lines and its samples, each `(label,
    /// value)`.
    fn counter(&mut self, name: &str, help: &str, samples: &[(Label, f64)]) {
        self.family(name, "counter", help);
        for &(label, v) in samples {
            self.sample(name, &[label], v);
        }
    }

    fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, "gauge", help);
        self.sample(name, &[], value);
    }

    /// A histogram's HELP and TYPE lines, and the samples of each of
    /// `series`, `(label, histogram)`.
    fn histogram(&mut self, name: &str, help: &str, series: &[(Label, &Histogram<u64>)]) {
        self.family(name, "histogram", help);
        for &(label, h) in series {
            self.histogram_samples(name, label, h);
        }
    }

    /// A histogram's samples, `label` before `le`: a cumulative count per
    /// bucket, the sum and the count.
    fn histogram_samples(&mut self, name: &str, label: Label, h: &Histogram<u64>) {
        let bucket = format!("{name}_bucket");
        let mut recorded = h.iter_recorded().peekable();
        let mut below = 0u64;
        for &bound in bounds() {
            // A recorded value counts at the low end of the range it
            // stands for: one recorded at exactly a bound is in that
            // bound's bucket.
            while let Some(v) =
                recorded.next_if(|v| h.lowest_equivalent(v.value_iterated_to()) <= bound)
            {
                below += v.count_at_value();
            }
            let le = (bound as f64 / 1e6).to_string();
            self.sample(&bucket, &[label, Some(("le", le.as_str()))], below as f64);
        }
        self.sample(&bucket, &[label, Some(("le", "+Inf"))], h.len() as f64);
        let sum = summary::mean(h) * h.len() as f64 / 1e6;
        self.sample(&format!("{name}_sum"), &[label], sum);
        self.sample(&format!("{name}_count"), &[label], h.len() as f64);
    }
}

/// The phases of the requests that have them: time to first byte,
/// connect and TLS handshake (a run without TLS has no handshakes, so no
/// such series), and `--sse`'s events. A family appears once it has
/// something, as Prometheus takes a series that starts late.
fn phases(out: &mut Exposition, t: &Totals) {
    let families: [(&str, &str, &Histogram<u64>); 5] = [
        (
            "metron_ttfb_seconds",
            "Time to first byte: from the intended send time to the first byte of the response.",
            &t.ttfb,
        ),
        (
            "metron_connect_seconds",
            "TCP connect of each connection opened (a QUIC connection's whole handshake).",
            &t.connect,
        ),
        (
            "metron_tls_handshake_seconds",
            "TLS handshake of each connection opened over TLS, after its TCP connect.",
            &t.tls_handshake,
        ),
        (
            "metron_first_event_seconds",
            "--sse: a stream's first event, from the intended send time.",
            &t.first_event,
        ),
        (
            "metron_event_gap_seconds",
            "--sse: the time between one event of a stream and the next.",
            &t.event_gap,
        ),
    ];
    for (name, help, h) in families {
        if !h.is_empty() {
            out.histogram(name, help, &[(None, h)]);
        }
    }
}

/// Each endpoint's (a flow step's) counts and corrected latency, under an
/// `endpoint` label.
fn endpoints(out: &mut Exposition, all: &[EndpointTotals]) {
    let each = |f: fn(&EndpointTotals) -> u64| -> Vec<(Label, f64)> {
        all.iter()
            .map(|e| (Some(("endpoint", e.name.as_str())), f(e) as f64))
            .collect()
    };
    out.counter(
        "metron_endpoint_requests_completed_total",
        "Responses received per endpoint (a flow's step), error statuses included.",
        &each(|e| e.latency.len()),
    );
    out.counter(
        "metron_endpoint_requests_errors_total",
        "Requests lost or answered with a status of 400 or more, per endpoint.",
        &each(|e| e.errors),
    );
    let series: Vec<(Label, &Histogram<u64>)> = all
        .iter()
        .map(|e| (Some(("endpoint", e.name.as_str())), &e.latency))
        .collect();
    out.histogram(
        "metron_endpoint_latency_seconds",
        "Corrected latency per endpoint: from the intended send time to the response's end.",
        &series,
    );
}

/// The labels every series of a run carries: `shard="I/N"` for one
/// instance of a sharded run (`--shard`), none otherwise.
pub(super) fn common_labels(shard: Shard) -> String {
    if shard.is_whole() {
        String::new()
    } else {
        format!("shard=\"{}/{}\"", shard.index(), shard.count())
    }
}

/// A label's value as the exposition format escapes it: backslash, double
/// quote and line feed.
fn label_value(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The totals as `/series.json` gives them.
pub(super) fn totals_json(t: &Totals) -> String {
    let at =
        |h: &Histogram<u64>, p: f64| (!h.is_empty()).then(|| summary::value_at_percentile(h, p));
    serde_json::json!({
        "completed": t.completed,
        "errors": t.errors,
        "error_kinds": t.kinds,
        "intended": t.intended,
        "seconds": t.seconds,
        "p50": at(&t.latency, 50.0),
        "p99": at(&t.latency, 99.0),
        "p999": at(&t.latency, 99.9),
        "max": (!t.latency.is_empty()).then(|| summary::max(&t.latency)),
        "uncorrected_p99": at(&t.uncorrected, 99.0),
        "send_lag_p99": at(&t.send_lag, 99.0),
        "endpoints": t
            .endpoints
            .iter()
            .map(|e| EndpointPoint::of(&e.name, &e.latency, e.errors))
            .collect::<Vec<_>>(),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{new_histogram, Errors, StatusCodes};
    use std::collections::VecDeque;

    /// 99 answers at 1.5 ms and one at 250 ms, 2 error statuses, and one
    /// endpoint whose name needs escaping; `labels` as the dashboard keeps
    /// them.
    fn state(labels: String) -> State {
        let mut latency = new_histogram();
        latency.record_n(1500, 99).unwrap();
        latency.record(250_000).unwrap();
        let mut status_codes = StatusCodes::default();
        for code in [200; 98].into_iter().chain([503, 503]) {
            status_codes.count(code);
        }
        let mut connect = new_histogram();
        connect.record_n(120, 4).unwrap();
        State {
            config: "{}".into(),
            points: VecDeque::new(),
            seq: 3,
            totals: Totals {
                completed: 100,
                errors: 2,
                kinds: Errors {
                    status: 2,
                    ..Errors::default()
                },
                intended: Some(105),
                seconds: 3.0,
                latency: latency.clone(),
                uncorrected: new_histogram(),
                send_lag: new_histogram(),
                status_codes,
                ttfb: latency.clone(),
                connect,
                tls_handshake: new_histogram(),
                first_event: new_histogram(),
                event_gap: new_histogram(),
                llm: None,
                endpoints: vec![EndpointTotals {
                    name: "say \"hi\"\\".into(),
                    errors: 1,
                    latency: {
                        let mut h = new_histogram();
                        h.record_n(2000, 3).unwrap();
                        h
                    },
                }],
            },
            report: None,
            flow: Default::default(),
            in_flight: 4,
            waiting: 0,
            visits: false,
            labels,
        }
    }

    #[test]
    fn every_sample_line_is_a_name_optional_labels_and_a_number() {
        let state = state(common_labels(Shard::WHOLE));
        let text = render(&state);
        assert!(
            text.contains("metron_requests_completed_total 100\n"),
            "{text}"
        );
        assert!(text.contains("metron_requests_errors_total{kind=\"status\"} 2\n"));
        assert!(text.contains("\nmetron_responses_total{code=\"200\"} 98\n"));
        assert!(text.contains("\nmetron_responses_total{code=\"503\"} 2\n"));
        assert!(text.contains("\nmetron_ttfb_seconds_bucket{le=\"0.0016\"} 99\n"));
        assert!(text.contains("\nmetron_connect_seconds_count 4\n"));
        // No TLS and no events: no such families.
        assert!(!text.contains("metron_tls_handshake_seconds"));
        assert!(!text.contains("metron_event_gap_seconds"));
        assert!(text.contains("metron_requests_intended_total 105\n"));
        // 99 at 1.5 ms, one at 250 ms: cumulative counts by bucket.
        assert!(
            text.contains("\nmetron_latency_seconds_bucket{le=\"0.0013\"} 0\n"),
            "{text}"
        );
        assert!(text.contains("\nmetron_latency_seconds_bucket{le=\"0.0016\"} 99\n"));
        assert!(text.contains("\nmetron_latency_seconds_bucket{le=\"0.2\"} 99\n"));
        assert!(
            text.contains("\nmetron_latency_seconds_bucket{le=\"0.26\"} 100\n"),
            "{text}"
        );
        assert!(text.contains("\nmetron_latency_seconds_bucket{le=\"52\"} 100\n"));
        assert!(text.contains("\nmetron_latency_seconds_bucket{le=\"+Inf\"} 100\n"));
        assert!(text.contains("metron_latency_seconds_count 100\n"));
        assert!(text.contains("metron_uncorrected_latency_seconds_count 0\n"));
        assert!(text.contains("metron_run_over 0\n"));
        assert!(text.contains("metron_requests_in_flight 4\n"));
        assert!(
            text.contains(
                "metron_endpoint_requests_completed_total{endpoint=\"say \\\"hi\\\"\\\\\"} 3\n"
            ),
            "{text}"
        );
        assert!(text.contains(
            "metron_endpoint_latency_seconds_bucket{endpoint=\"say \\\"hi\\\"\\\\\",le=\"0.002\"} 3\n"
        ));
        assert!(text.contains(
            "metron_endpoint_latency_seconds_count{endpoint=\"say \\\"hi\\\"\\\\\"} 3\n"
        ));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
    }

    /// A shard's series all carry its `shard` label, first, so that
    /// `sum by (le)` adds the shards and `by (shard)` tells them apart;
    /// the rest of each line is as an unsharded run writes it.
    #[test]
    fn a_shards_every_series_carries_its_label_first() {
        let whole = render(&state(common_labels(Shard::WHOLE)));
        let text = render(&state(common_labels(Shard::new(1, 3).unwrap())));
        assert!(!whole.contains("shard="), "{whole}");
        let (mut lines, mut samples) = (whole.lines(), 0);
        for line in text.lines() {
            let bare = lines.next().unwrap();
            if line.starts_with('#') {
                assert_eq!(line, bare);
                continue;
            }
            samples += 1;
            let (name, rest) = line.split_once('{').unwrap_or_else(|| panic!("{line}"));
            let rest = rest
                .strip_prefix("shard=\"1/3\"")
                .unwrap_or_else(|| panic!("{line}"));
            // `name{shard="1/3"} v` stands for `name v`, and
            // `name{shard="1/3",a="b"} v` for `name{a="b"} v`.
            let want = match rest.strip_prefix(',') {
                Some(others) => format!("{name}{{{others}"),
                None => format!("{name}{}", rest.strip_prefix('}').unwrap()),
            };
            assert_eq!(want, bare);
        }
        assert!(lines.next().is_none());
        assert!(samples > 100, "{text}");
        assert!(text.contains("\nmetron_requests_completed_total{shard=\"1/3\"} 100\n"));
        assert!(text.contains("\nmetron_latency_seconds_bucket{shard=\"1/3\",le=\"0.0016\"} 99\n"));
        assert!(text.contains(
            "\nmetron_endpoint_latency_seconds_count{shard=\"1/3\",endpoint=\"say \\\"hi\\\"\\\\\"} 3\n"
        ));
    }

    #[test]
    fn buckets_grow_by_a_quarter_from_50_us_to_57_minutes() {
        let b = bounds();
        assert_eq!(&b[..8], [50, 63, 79, 100, 130, 160, 200, 250]);
        assert_eq!(*b.last().unwrap(), 3_400_000_000);
        assert_eq!(b.len(), 79);
        assert!(b
            .windows(2)
            .all(|w| w[1] > w[0] && w[1] * 100 <= w[0] * 135));
    }
}
