//! Judging a run against a service-level objective (`--slo`), and telling
//! whether the generator itself kept the schedule, without which no
//! verdict can be a pass.
//!
//! Terms bound the corrected latency *including* the lower bounds of
//! unfinished requests (docs/MEASUREMENT.md, §6), so a server that stalls
//! as the run ends can only make a verdict worse; the share of due
//! requests lost or answered with an error status; and the share of the
//! intended requests that completed. The verdict is met, not met, or
//! inconclusive when the generator fell behind: then the server was not
//! offered the load, and neither a pass nor a fail would be about it. A
//! term that measured nothing (a first event, when no response carried
//! one) makes the verdict inconclusive too, unless another term failed.

mod flow;
mod limit;
mod report;

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::stats::{summary, EventKind, RunStats};
use crate::units::parse_duration;

pub use limit::{generator_limit, lag_allowance_us, request_rate, RunFacts};
pub use report::{SloReport, SloRow, Verdict};

/// An objective: terms that must all hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Slo {
    /// As typed, for the reports.
    pub spec: String,
    pub terms: Vec<Term>,
}

/// One bound of an objective.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    /// As typed (`p99<10ms`).
    pub text: String,
    pub measure: Measure,
    /// `<=`/`>=` rather than `<`/`>`.
    pub inclusive: bool,
    /// Microseconds for latency, a fraction (0.001 for 0.1%) for shares.
    pub bound: f64,
    /// The step a `step.NAME.…` term bounds.
    pub step: Option<String>,
}

/// What a term bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Measure {
    /// A time at this percentile (100 for `max`), from above: the
    /// corrected latency, or a phase.
    Time(Timed, f64),
    /// Lost requests and error statuses over due requests, from above.
    Errors,
    /// Completed requests over intended ones, from below.
    Rate,
    /// A flow's failed visits over its due ones, from above.
    VisitsFailed,
    /// `--llm --goodput`: the good requests over the answered ones, from
    /// below.
    Goodput,
}

/// The times a term may bound, by the prefix of its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timed {
    /// The corrected latency, unfinished requests at their lower bounds
    /// (`p99`, `max`).
    Latency,
    /// Time to first byte from the intended send time (`ttfb_p99`).
    FirstByte,
    /// TCP connect of each connection (`connect_p99`).
    Connect,
    /// TLS handshake of each connection (`tls_p99`).
    Tls,
    /// `--sse`: intended send time to a response's first event
    /// (`first_event_p99`).
    FirstEvent,
    /// `--sse`: between two events of a response (`gap_p99`).
    Gap,
    /// A flow's visits, scheduled start to end, unfinished ones at their
    /// lower bounds (`visit_p99`).
    Visit,
    /// A flow's step, the corrected latency of its requests
    /// (`step.NAME.p99`; the name is the term's).
    Step,
    /// `--llm`: time to first token, from the intended send time
    /// (`ttft_p99`), time per output token (`tpot_p99`), inter-token
    /// latency (`itl_p99`).
    Ttft,
    Tpot,
    Itl,
}

impl Timed {
    /// The prefixes of term names, each with what it bounds.
    pub const PREFIXES: [(&'static str, Timed); 9] = [
        ("ttft_", Timed::Ttft),
        ("tpot_", Timed::Tpot),
        ("itl_", Timed::Itl),
        ("ttfb_", Timed::FirstByte),
        ("connect_", Timed::Connect),
        ("tls_", Timed::Tls),
        ("first_event_", Timed::FirstEvent),
        ("gap_", Timed::Gap),
        ("visit_", Timed::Visit),
    ];

    /// The histogram of `stats` this measure reads. Events are read only
    /// when some response carried one: until then the first-event
    /// histogram holds nothing but the lower bounds of requests still
    /// unanswered at the end, which would pass a bound on first events
    /// for a server that never sent any.
    fn of<'a>(self, stats: &'a RunStats) -> std::borrow::Cow<'a, Histogram<u64>> {
        use std::borrow::Cow;
        match self {
            Timed::Latency => stats.with_unfinished(),
            Timed::FirstByte => Cow::Borrowed(&stats.timings.ttfb),
            Timed::Connect => Cow::Borrowed(&stats.timings.connect),
            Timed::Tls => Cow::Borrowed(&stats.timings.tls_handshake),
            Timed::FirstEvent | Timed::Gap => match &stats.events {
                Some(e) if e.measured() && self == Timed::FirstEvent => Cow::Borrowed(&e.first),
                Some(e) if e.measured() => Cow::Borrowed(&e.gap),
                _ => Cow::Owned(crate::stats::new_histogram()),
            },
            Timed::Visit | Timed::Step => flow::visits(stats),
            Timed::Ttft | Timed::Tpot | Timed::Itl => match &stats.llm {
                Some(l) if self == Timed::Ttft && l.ttft.len() > l.open => Cow::Borrowed(&l.ttft),
                Some(l) if self == Timed::Tpot => Cow::Borrowed(&l.tpot),
                Some(l) if self == Timed::Itl => Cow::Borrowed(&l.itl),
                _ => Cow::Owned(crate::stats::new_histogram()),
            },
        }
    }

    /// Whether only `--llm` measures it.
    pub fn is_token(self) -> bool {
        matches!(self, Timed::Ttft | Timed::Tpot | Timed::Itl)
    }

    /// Whether only a flow (`flow(visit)`) measures it.
    pub fn is_flow(self) -> bool {
        matches!(self, Timed::Visit | Timed::Step)
    }

    /// Whether this is an event's time (`first_event_`, `gap_`), which
    /// only `--sse` and server-streaming calls measure.
    pub fn is_event(self) -> bool {
        matches!(self, Timed::FirstEvent | Timed::Gap)
    }

    /// Why a term on this time has no value in `stats`, in words.
    fn unmeasured(self, stats: &RunStats) -> String {
        match (self, &stats.events) {
            (Timed::FirstEvent | Timed::Gap, Some(e)) if !e.measured() => {
                let none = match e.kind {
                    EventKind::Sse => "no response carried an event",
                    EventKind::Messages => "no call carried a message",
                    EventKind::WebSocket => "no subscription carried a message",
                };
                format!("{none} ({} completed without one)", e.without_events)
            }
            (Timed::FirstEvent | Timed::Gap, None) => "no events were read".to_string(),
            (Timed::Gap, Some(_)) => "no response carried two events".to_string(),
            (Timed::Tls, _) => "no connection made a TLS handshake".to_string(),
            (Timed::Connect, _) => "no connection was opened".to_string(),
            (Timed::Visit | Timed::Step, _) => flow::unmeasured(stats),
            (Timed::Ttft, _) => "no answer carried a token".to_string(),
            (Timed::Tpot, _) => "no answer carried two tokens".to_string(),
            (Timed::Itl, _) => "no answer carried two token chunks".to_string(),
            _ => "nothing was measured for it".to_string(),
        }
    }
}

/// Parses `--slo` (clap's value parser): `p99<10ms,p99.9<=50ms,max<1s,
/// errors<0.1%,rate>=99%`.
pub fn parse_slo(spec: &str) -> Result<Slo, String> {
    let terms = spec
        .split(',')
        .map(|t| parse_term(t.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Slo {
        spec: spec.to_string(),
        terms,
    })
}

fn parse_term(text: &str) -> Result<Term, String> {
    let forms = "terms are pNN<TIME (p99<10ms), max<TIME, the same of ttfb_, connect_, tls_, \
                 first_event_, gap_ or visit_ (ttfb_p99<200ms) and of a flow's step \
                 (step.login.p99<200ms), ttft_, tpot_ or itl_ (--llm), errors<PCT% (errors<0.1%), \
                 rate>=PCT% (rate>=99%), visits_failed<PCT% or goodput>=PCT% (--llm --goodput)";
    let Some(at) = text.find(['<', '>']) else {
        // Commas part the terms, so a step whose name holds one is cut.
        let cut = if text.starts_with("step.") {
            " (a comma ends a term: a step named in --slo cannot have one in its name)"
        } else {
            ""
        };
        return Err(format!("{text:?} has no bound{cut}; {forms}"));
    };
    let (name, rest) = (text[..at].trim(), &text[at..]);
    let (op, value) = match rest.strip_prefix("<=").or_else(|| rest.strip_prefix(">=")) {
        Some(v) => (&rest[..2], v.trim()),
        None => (&rest[..1], rest[1..].trim()),
    };
    let (upper, inclusive) = (op.starts_with('<'), op.len() == 2);
    let (timed, point, step) = match flow::step_term(name, text)? {
        Some((step, point)) => (Timed::Step, point, Some(step)),
        None => {
            let (timed, point) = Timed::PREFIXES
                .iter()
                .find_map(|&(prefix, timed)| name.strip_prefix(prefix).map(|rest| (timed, rest)))
                .unwrap_or((Timed::Latency, name));
            (timed, point, None)
        }
    };
    let measure = match point {
        "max" => Measure::Time(timed, 100.0),
        "errors" if timed == Timed::Latency => Measure::Errors,
        "rate" if timed == Timed::Latency => Measure::Rate,
        "visits_failed" if timed == Timed::Latency => Measure::VisitsFailed,
        "goodput" if timed == Timed::Latency => Measure::Goodput,
        _ => match point.strip_prefix('p').map(str::parse::<f64>) {
            Some(Ok(p)) if p > 0.0 && p <= 100.0 => Measure::Time(timed, p),
            Some(Ok(_)) => {
                return Err(format!("{text:?}: a percentile is above 0 and at most 100"))
            }
            _ => {
                return Err(format!(
                    "{text:?}: {name:?} is not something to bound; {forms}"
                ))
            }
        },
    };
    let bound = match measure {
        Measure::Time(..) => {
            if !upper {
                return Err(format!(
                    "{text:?}: latency is bounded from above; write {name}<{value}"
                ));
            }
            if !value.ends_with(|c: char| c.is_ascii_alphabetic()) {
                return Err(format!(
                    "{text:?}: a latency bound needs its unit, e.g. {name}<{value}ms"
                ));
            }
            let d: Duration = parse_duration(value).map_err(|e| format!("{text:?}: {e}"))?;
            d.as_secs_f64() * 1e6
        }
        Measure::Errors | Measure::Rate | Measure::VisitsFailed | Measure::Goodput => {
            let wants_upper = !matches!(measure, Measure::Rate | Measure::Goodput);
            if upper != wants_upper {
                let fixed = if wants_upper { "<" } else { ">=" };
                return Err(format!(
                    "{text:?}: {name} is bounded from {}; write {name}{fixed}{value}",
                    if wants_upper { "above" } else { "below" }
                ));
            }
            let pct = value.strip_suffix('%').ok_or_else(|| {
                format!("{text:?}: give the share in percent, e.g. {name}{op}{value}%")
            })?;
            let pct: f64 = pct
                .trim()
                .parse()
                .ok()
                .filter(|p: &f64| (0.0..=100.0).contains(p))
                .ok_or_else(|| format!("{text:?}: {value} is not a percentage from 0% to 100%"))?;
            pct / 100.0
        }
    };
    Ok(Term {
        text: text.to_string(),
        measure,
        inclusive,
        bound,
        step,
    })
}

impl Slo {
    /// Judges `run`: each term's measured value, then the verdict.
    pub fn judge(&self, run: &RunFacts) -> SloReport {
        let stats = run.stats;
        let latency = stats.with_unfinished();
        let c = &stats.counters;
        let time = |timed: Timed, p: f64| {
            let h = timed.of(stats);
            let v = if p >= 100.0 {
                summary::maximum(&h)
            } else {
                summary::percentile(&h, p)
            };
            v.map(|v| v as f64)
        };
        // Nothing due has no shares, nothing measured no percentiles: such
        // a term has no value (and the verdict is inconclusive below).
        let share = |n: u64| (c.due > 0).then(|| n as f64 / c.due as f64);
        let rows: Vec<SloRow> = self
            .terms
            .iter()
            .map(|t| {
                let (value, unit) = match t.measure {
                    Measure::Time(Timed::Step, p) => (flow::step_time(stats, t, p), "us"),
                    Measure::Time(timed, p) => (time(timed, p), "us"),
                    Measure::VisitsFailed => (flow::failed_share(stats), "share"),
                    Measure::Goodput => {
                        (stats.llm.as_ref().and_then(|l| l.good_fraction()), "share")
                    }
                    Measure::Errors => (share(c.errors.lost_requests() + c.errors.status), "share"),
                    // A flow's schedule is of visits: those it started.
                    Measure::Rate => match flow::started_share(stats) {
                        Some(v) => (Some(v), "share"),
                        None => (share(c.completed), "share"),
                    },
                };
                let met = value.is_some_and(|value| match (t.measure, t.inclusive) {
                    (Measure::Rate | Measure::Goodput, true) => value >= t.bound,
                    (Measure::Rate | Measure::Goodput, false) => value > t.bound,
                    (_, true) => value <= t.bound,
                    (_, false) => value < t.bound,
                });
                SloRow {
                    term: t.text.clone(),
                    value,
                    unit: unit.to_string(),
                    met,
                }
            })
            .collect();
        // A term that measured nothing is neither met nor failed: a bound
        // that was measured and broken fails the run whatever the rest,
        // but without one the run is inconclusive, never a pass.
        let unmeasured = self
            .terms
            .iter()
            .zip(&rows)
            .find_map(|(t, r)| match t.measure {
                Measure::Time(Timed::Step, _) if r.value.is_none() => Some(format!(
                    "{} was not measured: {}",
                    t.text,
                    flow::no_step(stats, t)
                )),
                Measure::Time(timed, _) if r.value.is_none() => Some(format!(
                    "{} was not measured: {}",
                    t.text,
                    timed.unmeasured(stats)
                )),
                Measure::Goodput if r.value.is_none() => {
                    Some(format!("{} was not measured: no answer was read", t.text))
                }
                Measure::VisitsFailed if r.value.is_none() => Some(format!(
                    "{} was not measured: {}",
                    t.text,
                    flow::unmeasured(stats)
                )),
                _ => None,
            });
        let failed = rows.iter().any(|r| r.value.is_some() && !r.met);
        let (verdict, reason) = if c.due == 0 || latency.is_empty() {
            (
                Verdict::Inconclusive,
                Some("nothing was measured: no request completed or was given up".into()),
            )
        } else if let Some(why) = generator_limit(run) {
            (Verdict::Inconclusive, Some(why))
        } else if failed {
            (Verdict::NotMet, None)
        } else if let Some(why) = unmeasured {
            (Verdict::Inconclusive, Some(why))
        } else {
            (Verdict::Met, None)
        };
        SloReport {
            spec: self.spec.clone(),
            verdict,
            reason,
            exit_status: verdict.exit_status(),
            rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_parse() {
        let slo = parse_slo("p99<10ms, p99.9<=50ms,max<1s,errors<0.1%,rate>=99%").unwrap();
        let t = &slo.terms;
        assert_eq!(t.len(), 5);
        assert_eq!(
            (t[0].measure, t[0].bound, t[0].inclusive),
            (Measure::Time(Timed::Latency, 99.0), 10_000.0, false)
        );
        assert_eq!(
            (t[1].measure, t[1].inclusive),
            (Measure::Time(Timed::Latency, 99.9), true)
        );
        assert_eq!(t[2].measure, Measure::Time(Timed::Latency, 100.0));
        assert_eq!((t[3].measure, t[3].bound), (Measure::Errors, 0.001));
        assert_eq!(
            (t[4].measure, t[4].bound, t[4].inclusive),
            (Measure::Rate, 0.99, true)
        );
    }

    #[test]
    fn flow_terms_parse() {
        let slo =
            parse_slo("step.login.p99<200ms,step.a.b.max<=1s,visit_p99.9<5s,visits_failed<1%,step.api.v1.p99.9<1s,step.x.p.p50<1s")
                .unwrap();
        let t = &slo.terms;
        assert_eq!(
            (t[0].measure, t[0].step.as_deref(), t[0].bound),
            (Measure::Time(Timed::Step, 99.0), Some("login"), 200_000.0)
        );
        assert_eq!(
            (t[1].measure, t[1].step.as_deref()),
            (Measure::Time(Timed::Step, 100.0), Some("a.b")),
            "the name runs to the point"
        );
        assert_eq!(t[2].measure, Measure::Time(Timed::Visit, 99.9));
        assert_eq!((t[3].measure, t[3].bound), (Measure::VisitsFailed, 0.01));
        assert_eq!(
            (t[4].measure, t[4].step.as_deref()),
            (Measure::Time(Timed::Step, 99.9), Some("api.v1"))
        );
        assert_eq!(
            (t[5].measure, t[5].step.as_deref()),
            (Measure::Time(Timed::Step, 50.0), Some("x.p"))
        );
        for (bad, says) in [
            ("step.p99<1s", "names the step and a percentile"),
            ("visits_failed>1%", "bounded from above"),
            ("step.x.p99>1s", "bounded from above"),
        ] {
            let e = parse_slo(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    /// Phases are bounded as latency is, each from its own histogram.
    #[test]
    fn phase_terms_read_their_own_histograms() {
        let all = parse_slo("first_event_p99<500ms,gap_p99.9<50ms").unwrap();
        let measures: Vec<Measure> = all.terms.iter().map(|t| t.measure).collect();
        assert_eq!(
            measures,
            [
                Measure::Time(Timed::FirstEvent, 99.0),
                Measure::Time(Timed::Gap, 99.9)
            ]
        );
        let slo = parse_slo("ttfb_p99<200ms,connect_max<=1ms,tls_p50<5ms,p99<1s").unwrap();
        let measures: Vec<Measure> = slo.terms.iter().map(|t| t.measure).collect();
        assert_eq!(
            measures,
            [
                Measure::Time(Timed::FirstByte, 99.0),
                Measure::Time(Timed::Connect, 100.0),
                Measure::Time(Timed::Tls, 50.0),
                Measure::Time(Timed::Latency, 99.0),
            ]
        );
        let mut stats =
            crate::stats::RunStats::merge(Vec::new(), std::time::Duration::from_secs(1));
        stats.counters.due = 10;
        stats.counters.completed = 10;
        crate::stats::record_clamped(&mut stats.latency, 300_000);
        stats.timings.first_byte(250_000, 1_000);
        stats.timings.connection(800, None);
        let load = crate::schedule::Load::Closed;
        let facts = RunFacts {
            stats: &stats,
            load: &load,
            threads: 1,
            connections: 1,
            pool_flag: "-c",
            per_connection: 1,
            fastest_us: None,
            lag_allowance: None,
        };
        let judged = slo.judge(&facts);
        let met: Vec<bool> = judged.rows.iter().map(|r| r.met).collect();
        // The first byte came too late; no TLS was measured, so its term
        // has no value and is not met.
        assert_eq!(met, [false, true, false, true], "{judged:?}");
        assert_eq!(judged.rows[2].value, None);
        assert_eq!(judged.verdict, Verdict::NotMet);
    }

    /// Regression: `--sse` against a server that sends no events met
    /// `first_event_p99<1s` on the lower bounds of the requests still
    /// unanswered at the end. With no event at all the term has no value
    /// and the verdict is inconclusive; a term that was measured and
    /// broken still fails the run.
    #[test]
    fn a_first_event_bound_without_any_event_is_not_measured() {
        let mut stats =
            crate::stats::RunStats::merge(Vec::new(), std::time::Duration::from_secs(1));
        stats.counters.due = 400;
        stats.counters.completed = 396;
        stats.counters.in_flight = 4;
        crate::stats::record_clamped(&mut stats.latency, 20_000);
        let mut events = crate::stats::EventStats {
            responses: 396,
            without_events: 396,
            open: 4,
            ..Default::default()
        };
        // What the requests in flight at the end leave: lower bounds only.
        for _ in 0..4 {
            crate::stats::record_clamped(&mut events.first, 20_000);
        }
        stats.events = Some(events);
        let load = crate::schedule::Load::Closed;
        let judge = |spec: &str, stats: &crate::stats::RunStats| {
            parse_slo(spec).unwrap().judge(&RunFacts {
                stats,
                load: &load,
                threads: 1,
                connections: 4,
                pool_flag: "-c",
                per_connection: 1,
                fastest_us: None,
                lag_allowance: None,
            })
        };
        let judged = judge("first_event_p99<1s", &stats);
        assert_eq!(judged.rows[0].value, None, "{judged:?}");
        assert!(!judged.rows[0].met);
        assert_eq!(judged.verdict, Verdict::Inconclusive);
        assert_eq!(
            judged.sentence(),
            "inconclusive: first_event_p99<1s was not measured: no response carried an event \
             (396 completed without one)"
        );
        let judged = judge("first_event_p99<1s,p99<1ms", &stats);
        assert_eq!(judged.verdict, Verdict::NotMet, "{judged:?}");
        // One event anywhere makes the figures measured.
        stats.events.as_mut().unwrap().count = 1;
        let judged = judge("first_event_p99<1s", &stats);
        assert_eq!(judged.rows[0].value, Some(20_000.0), "{judged:?}");
        assert_eq!(judged.verdict, Verdict::Met);
    }

    #[test]
    fn a_malformed_term_is_named() {
        for (spec, says) in [
            (
                "p99<5",
                "\"p99<5\": a latency bound needs its unit, e.g. p99<5ms",
            ),
            ("p99>5ms", "latency is bounded from above"),
            ("p101<5ms", "at most 100"),
            ("q99<5ms", "\"q99\" is not something to bound"),
            ("errors<0.1", "give the share in percent"),
            ("rate<99%", "rate is bounded from below"),
            ("rate>=120%", "not a percentage"),
            ("p99", "has no bound"),
            ("p99<5ms,", "\"\" has no bound"),
            (
                "step.x, y.p99<100ms",
                "\"step.x\" has no bound (a comma ends a term: a step named in --slo cannot have one",
            ),
            (
                "ttfb_errors<1%",
                "\"ttfb_errors\" is not something to bound",
            ),
            ("ttfb_p99>5ms", "latency is bounded from above"),
        ] {
            let e = parse_slo(spec).unwrap_err();
            assert!(e.contains(says), "{spec}: {e}");
        }
    }

    /// A run that measured nothing (nothing was sent) has no value for any
    /// term: not a latency of 0 that would read as met.
    #[test]
    fn terms_of_a_run_that_measured_nothing_have_no_value() {
        let mut stats =
            crate::stats::RunStats::merge(Vec::new(), std::time::Duration::from_secs(1));
        let load = crate::schedule::Load::constant(100.0);
        fn facts<'a>(
            stats: &'a crate::stats::RunStats,
            load: &'a crate::schedule::Load,
        ) -> RunFacts<'a> {
            RunFacts {
                stats,
                load,
                threads: 1,
                connections: 1,
                pool_flag: "-c",
                per_connection: 1,
                fastest_us: None,
                lag_allowance: None,
            }
        }
        let slo = parse_slo("p99<10ms,max<1s,errors<1%,rate>=99%").unwrap();
        let judged = slo.judge(&facts(&stats, &load));
        assert_eq!(judged.verdict, Verdict::Inconclusive);
        assert!(
            judged.rows.iter().all(|r| r.value.is_none() && !r.met),
            "{judged:?}"
        );
        // Due but never sent: the shares are measured, the latency is not.
        stats.counters.due = 100;
        stats.counters.never_sent = 100;
        let judged = slo.judge(&facts(&stats, &load));
        assert_eq!(judged.rows[0].value, None);
        assert_eq!(judged.rows[2].value, Some(0.0));
        assert_eq!(judged.rows[3].value, Some(0.0));
    }
}
