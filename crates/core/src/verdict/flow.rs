//! The terms of an objective on a flow's visits and steps:
//! `visit_p99<5s`, `step.NAME.p99<200ms`, `visits_failed<1%`.

use std::borrow::Cow;

use hdrhistogram::Histogram;

use super::Term;
use crate::stats::{summary, RunStats};

/// `step.NAME.POINT`: the step's name and the point (`p99`, `p99.9`,
/// `max`); `None` for a term of another kind.
pub(super) fn step_term<'a>(
    name: &'a str,
    text: &str,
) -> Result<Option<(String, &'a str)>, String> {
    let Some(rest) = name.strip_prefix("step.") else {
        return Ok(None);
    };
    // The point is `max` or `pNN` (`p99.9` has a dot of its own); a name
    // may hold dots too (`api.v1`).
    let split = match rest.strip_suffix(".max") {
        Some(step) => Some((step, "max")),
        None => rest
            .rmatch_indices(".p")
            .find(|&(i, _)| rest[i + 2..].parse::<f64>().is_ok())
            .map(|(i, _)| (&rest[..i], &rest[i + 1..])),
    };
    match split.or_else(|| rest.rsplit_once('.')) {
        Some((step, point)) if !step.is_empty() => Ok(Some((step.to_string(), point))),
        _ => Err(format!(
            "{text:?}: a step's term names the step and a percentile: step.NAME.p99<200ms, \
             NAME as the flow named it (opts.name)"
        )),
    }
}

/// The visits' durations, unfinished ones at their lower bounds (empty
/// without a flow).
pub(super) fn visits(stats: &RunStats) -> Cow<'_, Histogram<u64>> {
    match &stats.visits {
        Some(v) => {
            let mut h = v.duration.clone();
            crate::stats::add_histogram(&mut h, &v.unfinished);
            Cow::Owned(h)
        }
        None => Cow::Owned(crate::stats::new_histogram()),
    }
}

/// The time at percentile `p` of the step `t` names, if it ran.
pub(super) fn step_time(stats: &RunStats, t: &Term, p: f64) -> Option<f64> {
    let name = t.step.as_deref()?;
    let e = stats.endpoints.iter().find(|e| e.name == name)?;
    // Lost steps count at their ages when given up, and those on the wire
    // at the end at their ages then, as unfinished requests do in the
    // run's terms: a step that timed out, or stalled at the end, cannot
    // pass.
    let mut h = e
        .latency
        .clone()
        .unwrap_or_else(crate::stats::new_histogram);
    if let Some(u) = &e.unfinished {
        crate::stats::add_histogram(&mut h, u);
    }
    if h.is_empty() {
        return None;
    }
    let v = if p >= 100.0 {
        summary::maximum(&h)
    } else {
        summary::percentile(&h, p)
    };
    v.map(|v| v as f64)
}

/// Failed visits over due ones.
pub(super) fn failed_share(stats: &RunStats) -> Option<f64> {
    let v = stats.visits.as_ref()?;
    (v.due() > 0).then(|| v.failed_total() as f64 / v.due() as f64)
}

/// Visits started over due ones (a flow's `rate>=` term).
pub(super) fn started_share(stats: &RunStats) -> Option<f64> {
    let v = stats.visits.as_ref()?;
    (v.due() > 0).then(|| v.started as f64 / v.due() as f64)
}

/// Why a visit term has no value.
pub(super) fn unmeasured(stats: &RunStats) -> String {
    match &stats.visits {
        None => "the run had no visits: visit and step terms judge a script's flow(visit)".into(),
        Some(_) => "no visit ended or was under way".into(),
    }
}

/// Why a step's term has no value: the steps that did run, by name.
pub(super) fn no_step(stats: &RunStats, t: &Term) -> String {
    if stats.visits.is_none() {
        return unmeasured(stats);
    }
    let names: Vec<&str> = stats.endpoints.iter().map(|e| e.name.as_str()).collect();
    format!(
        "no step named {:?} was answered (the steps: {})",
        t.step.as_deref().unwrap_or_default(),
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    )
}
