//! `--llm`'s block: time to first token, time per output token and
//! inter-token latency by percentile, then the tokens, the answers and
//! the goodput, in the words of the text report.

use std::fmt::Write;

use super::blocks::grid;
use super::fmt::escape;
use super::tables::phase_row;
use crate::report::json::Document;
use crate::report::text::llm::{answers, goodput, token_source, tokens};

/// The section, when the run read its answers in tokens.
pub fn section(page: &mut String, doc: &Document) {
    let Some(l) = &doc.llm else {
        return;
    };
    // The document's histograms give the counts the sentences need; a
    // document whose histograms do not decode still shows its table.
    let stats = l.stats().ok();
    let source = stats.as_ref().map_or("", token_source);
    let _ = writeln!(page, "<section>\n<h2>LLM serving</h2>");
    if !source.is_empty() {
        let _ = writeln!(page, "<p>{}.</p>", escape(&capitalized(source)));
    }
    page.push_str(
        "<p>TTFT runs from each request's intended send time to its first token (uncorrected: \
         from its send); TPOT is each answer's (end − first token) / (output tokens − 1); ITL \
         each gap between tokens.</p>\n",
    );
    let rows: Vec<Vec<String>> = [
        ("TTFT", &l.ttft),
        ("TTFT, uncorrected", &l.ttft_uncorrected),
        ("TPOT", &l.tpot),
        ("ITL", &l.itl),
    ]
    .into_iter()
    .map(|(name, s)| phase_row(name, s))
    .collect();
    grid(
        page,
        "numbers",
        &["", "p50", "p90", "p99", "p99.9", "max"],
        &rows,
    );
    if let Some(s) = &stats {
        let window = doc.rate_window_s.unwrap_or(doc.window_s);
        let mut lines = vec![
            format!("Tokens: {}", tokens(s, window)),
            format!("Answers: {}", answers(s)),
        ];
        lines.extend(goodput(s, window).map(|g| format!("Goodput: {g}")));
        for line in lines {
            let _ = writeln!(page, "<p>{}.</p>", escape(&line));
        }
    }
    page.push_str("</section>\n");
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
