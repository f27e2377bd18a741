//! `--llm`: a model server's answers in tokens.
//!
//! Each completed completion stream gives an [`Answer`]: when its first
//! token chunk came, the gaps between its token chunks, and the server's
//! own token counts (`usage`). From it, as every figure of metron is:
//!
//! - **TTFT**, time to first token: from the request's intended send
//!   time to its first token chunk (and, uncorrected, from its send). A
//!   request still without a token at the end (in flight, or never sent)
//!   enters at its age then, a lower bound.
//! - **TPOT**, time per output token: (end − first token) / (output
//!   tokens − 1), one figure per request of two tokens or more.
//! - **ITL**, inter-token latency: each gap between token chunks, divided
//!   over the tokens a chunk carried. A server's usage gives the answer's
//!   tokens but not each chunk's, so when usage counts more tokens than
//!   there were chunks, every gap is divided by the mean tokens per chunk.
//! - **Tokens**: output tokens from the server's `usage` when it gave it,
//!   else one per token chunk (the report says which); input tokens only
//!   from `usage`.
//! - **Goodput**: the requests that completed with a 2xx status, no
//!   error in their stream and no chunk that was not JSON, produced a
//!   token, and met every bound of `--goodput`.

use hdrhistogram::Histogram;

use super::{add_histogram, new_histogram, record_clamped};
use crate::clock::Nanos;
pub use crate::http::tokens::Answer;

/// `--goodput`'s bounds, in µs: a request is good when it met each given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Goodput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_us: Option<u64>,
}

/// What an answer that ended adds to its interval: its output tokens, and
/// its time per output token (µs) when it had two tokens or more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ended {
    pub output: u64,
    pub tpot: Option<u64>,
}

/// A thread's (or, added up, the run's) token statistics. Times in µs.
#[derive(Clone, Debug)]
pub struct LlmStats {
    /// Intended send time → first token.
    pub ttft: Histogram<u64>,
    /// Send → first token.
    pub ttft_uncorrected: Histogram<u64>,
    /// Per request: (end − first token) / (output tokens − 1).
    pub tpot: Histogram<u64>,
    /// Every gap between tokens, divided over the tokens of its chunk.
    pub itl: Histogram<u64>,
    /// Per request: input and output tokens (counts, not times).
    pub input_tokens: Histogram<u64>,
    pub output_tokens: Histogram<u64>,
    /// Completed responses with a 2xx status, read as completion streams.
    pub responses: u64,
    /// Completed responses with another status: no stream to read.
    pub error_status: u64,
    /// Requests lost (reset, closed, timed out) before their answer
    /// ended: never good, whatever tokens came before.
    pub lost: u64,
    /// Of them: those whose output tokens the server's usage counted.
    pub with_usage: u64,
    /// Those that carried no token, and those whose stream reported an
    /// error.
    pub without_tokens: u64,
    pub stream_errors: u64,
    /// Those that ended without the `[DONE]` marker.
    pub without_done: u64,
    /// Events that were not JSON chunks.
    pub unreadable: u64,
    /// Input and output tokens in all.
    pub input_total: u64,
    pub output_total: u64,
    /// Requests that met `goodput`'s every bound.
    pub good: u64,
    pub goodput: Option<Goodput>,
    /// Lower bounds in `ttft`: requests still without a token at the end,
    /// in flight or never sent.
    pub open: u64,
}

impl Default for LlmStats {
    fn default() -> Self {
        LlmStats {
            ttft: new_histogram(),
            ttft_uncorrected: new_histogram(),
            tpot: new_histogram(),
            itl: new_histogram(),
            input_tokens: count_histogram(),
            output_tokens: count_histogram(),
            responses: 0,
            error_status: 0,
            lost: 0,
            with_usage: 0,
            without_tokens: 0,
            stream_errors: 0,
            without_done: 0,
            unreadable: 0,
            input_total: 0,
            output_total: 0,
            good: 0,
            goodput: None,
            open: 0,
        }
    }
}

/// A histogram of counts: 0 is a count like any other.
pub fn count_histogram() -> Histogram<u64> {
    let mut h = Histogram::new(super::HIST_SIGFIG).expect("valid precision");
    h.auto(true);
    h
}

fn us(ns: u64) -> u64 {
    ns / 1_000
}

impl LlmStats {
    /// Statistics of a run judged by `goodput`.
    pub fn new(goodput: Option<Goodput>) -> LlmStats {
        LlmStats {
            goodput,
            ..LlmStats::default()
        }
    }

    /// `a` is the stream of a response with `status`, intended at
    /// `intended` and complete at `end`; what it adds to the interval it
    /// ended in comes back.
    pub fn answered(&mut self, a: &Answer, status: u16, intended: Nanos, end: Nanos) -> Ended {
        if !(200..300).contains(&status) {
            self.error_status += 1;
            return Ended::default();
        }
        self.responses += 1;
        self.with_usage += u64::from(a.completion_tokens.is_some());
        self.without_done += u64::from(!a.done);
        self.stream_errors += u64::from(a.error);
        self.unreadable += a.unreadable;
        let output = a.output_tokens();
        // Counts are recorded as they are; only an absurd one could fail.
        let _ = self.output_tokens.record(output);
        self.output_total += output;
        if let Some(input) = a.prompt_tokens {
            let _ = self.input_tokens.record(input);
            self.input_total += input;
        }
        let Some(first) = a.first else {
            self.without_tokens += 1;
            return Ended { output, tpot: None };
        };
        let ttft = us(first.saturating_sub(intended));
        let tpot = (output >= 2).then(|| us(end.saturating_sub(first)) / (output - 1));
        if let Some(t) = tpot {
            record_clamped(&mut self.tpot, t);
        }
        // Each gap over the tokens its chunk carried: one per chunk unless
        // the server counted more tokens than it sent chunks.
        let per_chunk = if a.chunks > 0 && output > a.chunks {
            output as f64 / a.chunks as f64
        } else {
            1.0
        };
        for &gap in &a.gaps {
            record_clamped(&mut self.itl, (us(gap) as f64 / per_chunk).round() as u64);
        }
        // A chunk that was not JSON may have carried tokens nobody read.
        let ok = !a.error && a.unreadable == 0 && output > 0;
        if let (true, Some(g)) = (ok, self.goodput) {
            let e2e = us(end.saturating_sub(intended));
            let within = |bound: Option<u64>, value: Option<u64>| {
                bound.is_none_or(|b| value.is_some_and(|v| v <= b))
            };
            // A request of one token has no TPOT: a TPOT bound holds of it.
            let tpot_met = g.tpot_us.is_none_or(|b| tpot.is_none_or(|t| t <= b));
            if within(g.ttft_us, Some(ttft)) && tpot_met && within(g.e2e_us, Some(e2e)) {
                self.good += 1;
            }
        }
        Ended { output, tpot }
    }

    /// The first token of a request intended at `intended` and sent at
    /// `sent` came `now`: timed as it comes, whatever becomes of the rest
    /// of the answer.
    pub fn first_token(&mut self, intended: Nanos, sent: Nanos, now: Nanos) {
        record_clamped(&mut self.ttft, us(now.saturating_sub(intended)));
        record_clamped(&mut self.ttft_uncorrected, us(now.saturating_sub(sent)));
    }

    /// A stream still without a token when the run ended at `end`: its
    /// first token is at least that late.
    pub fn waiting_at_end(&mut self, intended: Nanos, end: Nanos) {
        self.open += 1;
        record_clamped(&mut self.ttft, us(end.saturating_sub(intended)));
    }

    /// Requests never sent by the run's end, at their `ages` then: their
    /// first tokens are at least that late.
    pub fn waiting_ages(&mut self, ages: &Histogram<u64>) {
        self.open += ages.len();
        add_histogram(&mut self.ttft, ages);
    }

    pub fn add(&mut self, other: &LlmStats) {
        for (into, from) in [
            (&mut self.ttft, &other.ttft),
            (&mut self.ttft_uncorrected, &other.ttft_uncorrected),
            (&mut self.tpot, &other.tpot),
            (&mut self.itl, &other.itl),
            (&mut self.input_tokens, &other.input_tokens),
            (&mut self.output_tokens, &other.output_tokens),
        ] {
            add_histogram(into, from);
        }
        self.responses += other.responses;
        self.error_status += other.error_status;
        self.lost += other.lost;
        self.with_usage += other.with_usage;
        self.without_tokens += other.without_tokens;
        self.stream_errors += other.stream_errors;
        self.without_done += other.without_done;
        self.unreadable += other.unreadable;
        self.input_total += other.input_total;
        self.output_total += other.output_total;
        self.good += other.good;
        self.open += other.open;
        self.goodput = self.goodput.or(other.goodput);
    }

    /// Where the output tokens were counted from: `usage` (the server's
    /// count for every response), `chunks` (one per token chunk: the
    /// server gave no usage), or `mixed`.
    pub fn token_source(&self) -> &'static str {
        match self.with_usage {
            n if n == self.responses => "usage",
            0 => "chunks",
            _ => "mixed",
        }
    }

    /// Requests that ended: answered (whatever the status) or lost.
    pub fn ended(&self) -> u64 {
        self.responses + self.error_status + self.lost
    }

    /// Of the requests that ended, the fraction that was good; `None`
    /// without `--goodput` or such requests.
    pub fn good_fraction(&self) -> Option<f64> {
        self.goodput?;
        let ended = self.ended();
        (ended > 0).then(|| self.good as f64 / ended as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn answer(first: u64, gaps: &[u64], usage: Option<u64>) -> Answer {
        Answer {
            chunks: gaps.len() as u64 + 1,
            first: Some(first),
            gaps: gaps.to_vec(),
            prompt_tokens: usage.map(|_| 7),
            completion_tokens: usage,
            done: true,
            ..Answer::default()
        }
    }

    #[test]
    fn ttft_runs_from_the_intended_time_and_tpot_over_the_tokens_after_the_first() {
        let mut s = LlmStats::new(None);
        // Intended at 0, sent at 40 ms, first token at 100 ms, 5 tokens,
        // the last at 140 ms, complete at 140 ms.
        let a = answer(100 * MS, &[10 * MS; 4], None);
        s.first_token(0, 40 * MS, 100 * MS);
        s.answered(&a, 200, 0, 140 * MS);
        assert_eq!(s.ttft.max(), s.ttft.highest_equivalent(100_000));
        assert_eq!(
            s.ttft_uncorrected.max(),
            s.ttft_uncorrected.highest_equivalent(60_000)
        );
        assert_eq!(s.tpot.max(), s.tpot.highest_equivalent(10_000));
        assert_eq!((s.itl.len(), s.output_total, s.input_total), (4, 5, 0));
        assert_eq!(s.token_source(), "chunks");
    }

    #[test]
    fn gaps_are_divided_over_the_tokens_usage_counts() {
        let mut s = LlmStats::new(None);
        // Two chunks, 20 ms apart, but the server counted 4 tokens.
        s.answered(&answer(0, &[20 * MS], Some(4)), 200, 0, 20 * MS);
        assert_eq!(s.itl.max(), s.itl.highest_equivalent(10_000));
        assert_eq!(
            (s.output_total, s.input_total, s.token_source()),
            (4, 7, "usage")
        );
    }

    #[test]
    fn goodput_counts_requests_that_met_every_bound() {
        let bounds = Goodput {
            ttft_us: Some(100_000),
            tpot_us: Some(10_000),
            e2e_us: None,
        };
        let mut s = LlmStats::new(Some(bounds));
        let fast = answer(50 * MS, &[5 * MS; 3], None);
        let slow_first = answer(150 * MS, &[5 * MS; 3], None);
        let slow_tokens = answer(50 * MS, &[30 * MS; 3], None);
        s.answered(&fast, 200, 0, 65 * MS);
        s.answered(&slow_first, 200, 0, 165 * MS);
        s.answered(&slow_tokens, 200, 0, 140 * MS);
        s.lost += 1;
        s.answered(&fast, 500, 0, 65 * MS);
        assert_eq!(
            (s.good, s.responses, s.error_status, s.ended()),
            (1, 3, 1, 5)
        );
        assert_eq!(s.good_fraction(), Some(0.2));
    }

    #[test]
    fn a_stream_without_tokens_has_no_ttft_but_counts() {
        let mut s = LlmStats::new(None);
        s.answered(&Answer::default(), 200, 0, MS);
        assert_eq!((s.without_tokens, s.without_done, s.ttft.len()), (1, 1, 0));
        s.waiting_at_end(0, 3 * MS);
        assert_eq!((s.open, s.ttft.len()), (1, 1));
    }
}
