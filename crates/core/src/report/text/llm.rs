//! `--llm`'s lines: time to first token, time per output token and
//! inter-token latency as a table, then the tokens and the goodput.

use super::*;
use crate::stats::LlmStats;

/// The section, after the totals.
pub(super) fn write_llm(out: &mut impl Write, l: &LlmStats, stats: &RunStats) -> io::Result<()> {
    let source = match l.token_source() {
        "usage" => "output tokens as the server's usage counts them",
        "chunks" => "output tokens counted one per chunk: the server gave no usage",
        _ => "output tokens from the server's usage where it gave it, else one per chunk",
    };
    writeln!(out, "  LLM serving ({source})")?;
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
    let mean = |total: u64, n: u64| match n {
        0 => NONE.to_string(),
        n => format!("{:.1}", total as f64 / n as f64),
    };
    let window = stats.rate_window.as_secs_f64();
    let per_sec = |n: u64| if window > 0.0 { n as f64 / window } else { 0.0 };
    let input = match l.input_tokens.len() {
        0 => "input not counted (no usage)".to_string(),
        n => format!(
            "{} in ({} per request)",
            l.input_total,
            mean(l.input_total, n)
        ),
    };
    writeln!(
        out,
        "  Tokens: {input}, {} out ({} per request, {:.1}/s)",
        l.output_total,
        mean(l.output_total, l.responses),
        per_sec(l.output_total),
    )?;
    let mut odd = Vec::new();
    if l.error_status > 0 {
        odd.push(format!("{} answers with an error status", l.error_status));
    }
    if l.lost > 0 {
        odd.push(format!(
            "{} requests lost before their answer ended",
            l.lost
        ));
    }
    if l.without_tokens > 0 {
        odd.push(format!("{} without a token", l.without_tokens));
    }
    if l.stream_errors > 0 {
        odd.push(format!("{} with an error in the stream", l.stream_errors));
    }
    if l.without_done > 0 {
        odd.push(format!("{} without [DONE]", l.without_done));
    }
    if l.unreadable > 0 {
        odd.push(format!("{} chunks that were not JSON", l.unreadable));
    }
    if l.open > 0 {
        odd.push(format!(
            "{} still waiting for a first token at the end (TTFT lower bounds)",
            l.open
        ));
    }
    let odd = match odd.is_empty() {
        true => String::new(),
        false => format!("; {}", odd.join(", ")),
    };
    writeln!(out, "  Answers: {} streams read{odd}", l.responses)?;
    if let (Some(g), Some(share)) = (l.goodput, l.good_fraction()) {
        writeln!(
            out,
            "  Goodput: {} of {} requests ({:.2}%) met {}, {:.2}/s",
            l.good,
            l.ended(),
            share * 100.0,
            goodput_terms(&g),
            per_sec(l.good),
        )?;
    }
    Ok(())
}

/// `--goodput`'s bounds as typed.
pub(crate) fn goodput_terms(g: &crate::stats::llm::Goodput) -> String {
    [("ttft", g.ttft_us), ("tpot", g.tpot_us), ("e2e", g.e2e_us)]
        .into_iter()
        .filter_map(|(n, b)| b.map(|us| format!("{n}<{}", format_time_us(us as f64).trim())))
        .collect::<Vec<_>>()
        .join(",")
}
