//! `/metrics`: the run's totals so far in Prometheus' text exposition
//! format (version 0.0.4), for a Prometheus that scrapes a long run.
//!
//! Latencies are histograms in seconds over the whole window so far (the
//! intervals every thread has closed): cumulative bucket counts, which a
//! Prometheus adds across instances (`sum by (le)`) before it takes a
//! quantile, as it cannot add quantiles. The buckets grow by 2^(1/3)
//! (26%) from 50 us to 52 s, so `histogram_quantile` lands in the bucket
//! of metron's own percentile or the next.

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::{EndpointTotals, State, Totals};
use crate::report::json::EndpointPoint;
use crate::stats::summary;

/// Bucket bounds in microseconds: 50 us times 2^(k/3), to two significant
/// digits, up to 60 s (52 s); above that is the `+Inf` bucket's.
fn bounds() -> &'static [u64] {
    static BOUNDS: std::sync::OnceLock<Vec<u64>> = std::sync::OnceLock::new();
    BOUNDS.get_or_init(|| {
        (0..)
            .map(|k| two_digits(50.0 * 2f64.powf(f64::from(k) / 3.0)))
            .take_while(|&us| us <= 60_000_000)
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
    let mut out = String::new();
    let mut counter = |name: &str, help: &str, samples: &[(&str, f64)]| {
        counter_of(&mut out, name, help, samples);
    };
    counter(
        "metron_requests_completed_total",
        "Responses received in the measured window so far, error statuses included.",
        &[("", t.completed as f64)],
    );
    counter(
        "metron_requests_errors_total",
        "Requests lost or answered with a status of 400 or more, by kind; connect counts failed connects.",
        &[
            ("{kind=\"status\"}", t.kinds.status as f64),
            ("{kind=\"read\"}", t.kinds.read as f64),
            ("{kind=\"write\"}", t.kinds.write as f64),
            ("{kind=\"timeout\"}", t.kinds.timeout as f64),
            ("{kind=\"connect\"}", t.kinds.connect as f64),
        ],
    );
    if let Some(n) = t.intended {
        counter(
            "metron_requests_intended_total",
            "Requests the schedule intended so far.",
            &[("", n as f64)],
        );
    }
    counter(
        "metron_window_seconds_total",
        "Seconds of the measured window the figures cover.",
        &[("", t.seconds)],
    );
    histogram_of(
        &mut out,
        "metron_latency_seconds",
        "Corrected latency: from the intended send time to the response's end.",
        &t.latency,
    );
    histogram_of(
        &mut out,
        "metron_uncorrected_latency_seconds",
        "Uncorrected latency: from the first byte written to the response's end.",
        &t.uncorrected,
    );
    histogram_of(
        &mut out,
        "metron_send_lag_seconds",
        "Send lag: from the intended send time to the first byte written.",
        &t.send_lag,
    );
    if let Some(l) = &t.llm {
        counter_of(
            &mut out,
            "metron_llm_output_tokens_total",
            "--llm: output tokens of the answers that ended in the measured window so far.",
            &[("", l.output as f64)],
        );
        histogram_of(
            &mut out,
            "metron_llm_ttft_seconds",
            "--llm: time to first token, from the intended send time.",
            &l.ttft,
        );
        histogram_of(
            &mut out,
            "metron_llm_tpot_seconds",
            "--llm: time per output token after the first, one per answer of two tokens or more.",
            &l.tpot,
        );
    }
    if !t.endpoints.is_empty() {
        endpoints(&mut out, &t.endpoints);
    }
    let _ = writeln!(
        out,
        "# HELP metron_requests_in_flight Requests sent and not answered yet.\n\
         # TYPE metron_requests_in_flight gauge\nmetron_requests_in_flight {}\n\
         # HELP metron_requests_waiting Requests due and not sent yet (never sent, if the run ended now).\n\
         # TYPE metron_requests_waiting gauge\nmetron_requests_waiting {}",
        state.in_flight, state.waiting
    );
    let _ = writeln!(
        out,
        "# HELP metron_run_over Whether the run has ended (the final report is on the page).\n\
         # TYPE metron_run_over gauge\nmetron_run_over {}",
        u8::from(state.report.is_some())
    );
    out
}

/// A counter's HELP and TYPE lines and its samples, each `(labels, value)`
/// with its labels in braces, or none.
fn counter_of(out: &mut String, name: &str, help: &str, samples: &[(&str, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} counter");
    for (labels, v) in samples {
        let _ = writeln!(out, "{name}{labels} {v}");
    }
}

fn histogram_of(out: &mut String, name: &str, help: &str, h: &Histogram<u64>) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} histogram");
    histogram_samples(out, name, "", h);
}

/// A histogram's samples, `labels` (`key="value",` each) before `le`: a
/// cumulative count per bucket, the sum and the count.
fn histogram_samples(out: &mut String, name: &str, labels: &str, h: &Histogram<u64>) {
    let mut recorded = h.iter_recorded().peekable();
    let mut below = 0u64;
    for &bound in bounds() {
        // A recorded value counts at the low end of the range it stands
        // for: one recorded at exactly a bound is in that bound's bucket.
        while let Some(v) =
            recorded.next_if(|v| h.lowest_equivalent(v.value_iterated_to()) <= bound)
        {
            below += v.count_at_value();
        }
        let le = bound as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{{labels}le=\"{le}\"}} {below}");
    }
    let _ = writeln!(out, "{name}_bucket{{{labels}le=\"+Inf\"}} {}", h.len());
    let sum = summary::mean(h) * h.len() as f64 / 1e6;
    let bare = labels.trim_end_matches(',');
    let braces = if bare.is_empty() {
        String::new()
    } else {
        format!("{{{bare}}}")
    };
    let _ = writeln!(out, "{name}_sum{braces} {sum}");
    let _ = writeln!(out, "{name}_count{braces} {}", h.len());
}

/// Each endpoint's (a flow step's) counts and corrected latency, under an
/// `endpoint` label.
fn endpoints(out: &mut String, all: &[EndpointTotals]) {
    let label = |e: &EndpointTotals| format!("endpoint=\"{}\"", label_value(&e.name));
    let labels: Vec<String> = all.iter().map(|e| format!("{{{}}}", label(e))).collect();
    let each = |f: fn(&EndpointTotals) -> u64| -> Vec<(&str, f64)> {
        labels
            .iter()
            .zip(all)
            .map(|(l, e)| (l.as_str(), f(e) as f64))
            .collect()
    };
    counter_of(
        out,
        "metron_endpoint_requests_completed_total",
        "Responses received per endpoint (a flow's step), error statuses included.",
        &each(|e| e.latency.len()),
    );
    counter_of(
        out,
        "metron_endpoint_requests_errors_total",
        "Requests lost or answered with a status of 400 or more, per endpoint.",
        &each(|e| e.errors),
    );
    let name = "metron_endpoint_latency_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} Corrected latency per endpoint: from the intended send time to the response's end.\n\
         # TYPE {name} histogram"
    );
    for e in all {
        histogram_samples(out, name, &format!("{},", label(e)), &e.latency);
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
    use crate::stats::{new_histogram, Errors};
    use std::collections::VecDeque;

    #[test]
    fn every_sample_line_is_a_name_optional_labels_and_a_number() {
        let mut latency = new_histogram();
        latency.record_n(1500, 99).unwrap();
        latency.record(250_000).unwrap();
        let state = State {
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
                latency,
                uncorrected: new_histogram(),
                send_lag: new_histogram(),
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
        };
        let text = render(&state);
        assert!(
            text.contains("metron_requests_completed_total 100\n"),
            "{text}"
        );
        assert!(text.contains("metron_requests_errors_total{kind=\"status\"} 2\n"));
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

    #[test]
    fn buckets_grow_by_a_quarter_from_50_us_to_52_s() {
        let b = bounds();
        assert_eq!(&b[..8], [50, 63, 79, 100, 130, 160, 200, 250]);
        assert_eq!(*b.last().unwrap(), 52_000_000);
        assert!(b
            .windows(2)
            .all(|w| w[1] > w[0] && w[1] * 100 <= w[0] * 135));
    }
}
