//! `--llm`'s lines: time to first token, time per output token and
//! inter-token latency as a table, then the tokens and the goodput.

use super::*;
use crate::stats::LlmStats;

/// The section, after the totals.
pub(super) fn write_llm(out: &mut impl Write, l: &LlmStats, stats: &RunStats) -> io::Result<()> {
    writeln!(out, "  LLM serving ({})", token_source(l))?;
    let heads: String = ["p50", "p90", "p99", "p99.9", "max"]
        .map(|h| format!("{h:>10}"))
        .concat();
    writeln!(out, "  {:<22}{heads}", "Tokens (HdrHistogram)")?;
    let rows = [
        ("TTFT", &l.ttft),
        ("  uncorrected", &l.ttft_uncorrected),
        ("TPOT", &l.tpot),
        ("ITL", &l.itl),
    ];
    for (name, h) in rows {
        let values = if h.is_empty() {
            format!("{NONE:>10}").repeat(5)
        } else {
            PHASE_PERCENTILES
                .map(|p| summary::value_at_percentile(h, p))
                .into_iter()
                .chain([summary::max(h)])
                .map(|us| print_units(&format_time_us(us as f64), 10))
                .collect::<String>()
        };
        writeln!(out, "    {name:<20}{values}")?;
    }
    let window = stats.rate_window.as_secs_f64();
    writeln!(out, "  Tokens: {}", tokens(l, window))?;
    writeln!(out, "  Answers: {}", answers(l))?;
    if let Some(g) = goodput(l, window) {
        writeln!(out, "  Goodput: {g}")?;
    }
    Ok(())
}

/// Where the output tokens were counted from, in words.
pub(crate) fn token_source(l: &LlmStats) -> &'static str {
    match l.token_source() {
        "usage" => "output tokens as the server's usage counts them",
        "chunks" => "output tokens counted one per chunk: the server gave no usage",
        _ => "output tokens from the server's usage where it gave it, else one per chunk",
    }
}

/// The tokens in and out, per request and per second over `window_s`.
pub(crate) fn tokens(l: &LlmStats, window_s: f64) -> String {
    let mean = |total: u64, n: u64| match n {
        0 => NONE.to_string(),
        n => format!("{:.1}", total as f64 / n as f64),
    };
    let input = match l.input_tokens.len() {
        0 => "input not counted (no usage)".to_string(),
        n => format!(
            "{} in ({} per request)",
            l.input_total,
            mean(l.input_total, n)
        ),
    };
    format!(
        "{input}, {} out ({} per request, {:.1}/s)",
        l.output_total,
        mean(l.output_total, l.responses),
        per_second(l.output_total, window_s),
    )
}

fn per_second(n: u64, window_s: f64) -> f64 {
    if window_s > 0.0 {
        n as f64 / window_s
    } else {
        0.0
    }
}

/// The streams read, and what was odd about them.
pub(crate) fn answers(l: &LlmStats) -> String {
    let counted = [
        (l.error_status, "answers with an error status"),
        (l.lost, "requests lost before their answer ended"),
        (l.without_tokens, "without a token"),
        (l.stream_errors, "with an error in the stream"),
        (l.without_done, "without [DONE]"),
        (l.unreadable, "chunks that were not JSON"),
        (
            l.open,
            "still waiting for a first token at the end (TTFT lower bounds)",
        ),
    ];
    let odd: Vec<String> = counted
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    let odd = match odd.is_empty() {
        true => String::new(),
        false => format!("; {}", odd.join(", ")),
    };
    format!("{} streams read{odd}", l.responses)
}

/// `--goodput`: the requests that met every bound, of those that ended,
/// and per second over `window_s`.
pub(crate) fn goodput(l: &LlmStats, window_s: f64) -> Option<String> {
    let (g, share) = (l.goodput?, l.good_fraction()?);
    Some(format!(
        "{} of {} requests ({:.2}%) met {}, {:.2}/s",
        l.good,
        l.ended(),
        share * 100.0,
        goodput_terms(&g),
        per_second(l.good, window_s),
    ))
}

/// `--goodput`'s bounds as typed.
pub(crate) fn goodput_terms(g: &crate::stats::llm::Goodput) -> String {
    [("ttft", g.ttft_us), ("tpot", g.tpot_us), ("e2e", g.e2e_us)]
        .into_iter()
        .filter_map(|(n, b)| b.map(|us| format!("{n}<{}", format_time_us(us as f64).trim())))
        .collect::<Vec<_>>()
        .join(",")
}
