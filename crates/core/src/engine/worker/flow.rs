//! The worker's side of a flow (`flow(visit)`): visits start on the
//! schedule (or, in the closed loop, as their lane frees), their steps go
//! out on free slots at their intended times, and every answer (or loss)
//! resumes its visit. [`Visits`](super::super::visits::Visits) keeps the
//! times; the script keeps what each visit does.

use crate::clock::Nanos;
use crate::script::{Next, ScriptError};
use crate::stats::{Loss, ReadCause};

use super::super::conn::InFlight;
use super::super::visits::{Due, VisitTag};
use super::Worker;

/// Visits resumed in one look without a step going out: a flow that only
/// rests for 0 s cannot keep the worker from its sockets.
const RESUMES_PER_LOOK: usize = 64;

/// Rests taken up at the end, at most (see `rests_end_before`).
const RESUMES_AT_END: usize = 1 << 20;

impl Worker {
    /// Runs visits (paced: every step has an intended time) rather than
    /// requests.
    pub(super) fn paced(&self) -> bool {
        self.schedule.paced() || self.visits.is_some()
    }

    /// The next request due by `now` (before `end`) and its intended time:
    /// the schedule's, or, in a flow, a visit's next step. Visits that
    /// start or wake meanwhile run to their next pause.
    pub(super) fn take_next(&mut self, now: Nanos, end: Nanos) -> Option<(Nanos, u32)> {
        if self.visits.is_none() {
            let at = self.schedule.take_due(now, end)?;
            return Some((at, self.source.next_scheduled()));
        }
        // A visit past its deadline ends before its next step can go.
        self.expire_visits(now);
        for _ in 0..RESUMES_PER_LOOK {
            if self.halted() {
                return None;
            }
            let visits = self.visits.as_mut()?;
            // A new visit starts when its time comes before the next step.
            let start = self.schedule.next().or(visits.next_lane());
            let step = start.map_or(Nanos::MAX, |s| s.saturating_sub(1));
            let (at, key, next) = match visits.take(now, step) {
                Some((at, key, Due::Step)) => return Some((at, key)),
                Some((at, key, Due::Wake)) => {
                    let next = self.script_mut().visit_wake(key);
                    (at, key, next)
                }
                None => {
                    let at = match self.schedule.take_due(now, end) {
                        Some(at) => at,
                        None => visits.take_lane(now, end)?,
                    };
                    let (key, id) = visits.start(at);
                    self.stats.visit_started(at);
                    if visits.late_to_start(at, now) {
                        // Its deadline passed while it waited for a
                        // connection: it fails, sending nothing.
                        visits.end(key, now);
                        self.stats.visit_ended(at, now, Some("timeout"));
                        continue;
                    }
                    let next = self.script_mut().visit_start(key, id);
                    (at, key, next)
                }
            };
            if let Some(step) = self.visit_goes_on(key, at, next, true) {
                return Some(step);
            }
        }
        None
    }

    /// Acts on what visit `key` did at `at`: a step (returned at once when
    /// `now`, else due at `at`), a rest, or its end.
    fn visit_goes_on(
        &mut self,
        key: u32,
        at: Nanos,
        next: Result<Next, ScriptError>,
        now: bool,
    ) -> Option<(Nanos, u32)> {
        let visits = self.visits.as_mut()?;
        let start = visits.start_of(key);
        match next {
            Ok(Next::Step) if now => return Some((at, key)),
            Ok(Next::Step) => visits.push(key, at, Due::Step),
            Ok(Next::Think(s)) => {
                let rest = (s * 1e9) as Nanos;
                visits.push(key, at.saturating_add(rest), Due::Wake)
            }
            Ok(Next::Done) => {
                visits.end(key, at);
                self.stats.visit_ended(start, at, None);
            }
            Ok(Next::Failed(reason)) => {
                visits.end(key, at);
                self.stats.visit_ended(start, at, Some(&reason));
            }
            Err(e) => {
                // The run stops on it; the visit still balances its ledger.
                visits.end(key, at);
                self.stats.visit_ended(start, at, Some("script error"));
                self.fail(e.into());
            }
        }
        None
    }

    /// The visit of request `key`, as its in-flight tag carries it.
    pub(super) fn visit_tag(&self, key: u32) -> Option<VisitTag> {
        self.visits.as_ref().map(|v| v.tag(key))
    }

    /// A step of `tag`'s visit was answered `now` on connection `i`: the
    /// visit goes on from the answer.
    pub(super) fn visit_answered(
        &mut self,
        i: usize,
        tag: Option<VisitTag>,
        status: u16,
        now: Nanos,
    ) {
        let Some(tag) = tag.filter(|t| self.visits.as_ref().is_some_and(|v| v.holds(*t))) else {
            return;
        };
        let script = self.hooks.script().expect("a flow has a script");
        let next = match self.pool[i].conn.session().map(|s| s.captured()) {
            Some(c) => script.visit_answer(tag.key, status, None, &mut c.fields(), c.body()),
            None => script.visit_answer(tag.key, status, None, &mut std::iter::empty(), &[]),
        };
        self.visit_goes_on(tag.key, now, next, false);
    }

    /// A step of a visit was lost `now` (`why`): the visit goes on with
    /// status 0 and the cause in `error`, and decides for itself.
    pub(super) fn visit_lost(&mut self, tag: &InFlight, why: Loss, now: Nanos) {
        let Some(visit) = tag
            .visit
            .filter(|t| self.visits.as_ref().is_some_and(|v| v.holds(*t)))
        else {
            return;
        };
        let error = match why {
            Loss::Timeout => "timeout",
            Loss::Write => "write",
            Loss::Read(ReadCause::Reset) => "reset",
            Loss::Read(_) => "read",
        };
        let next =
            self.script_mut()
                .visit_answer(visit.key, 0, Some(error), &mut std::iter::empty(), &[]);
        self.visit_goes_on(visit.key, now, next, false);
    }

    /// No slot is free: the visits' steps (and rests' ends, which lead to
    /// steps) due by `now` wait, and the pool grows for them where it may,
    /// as it does for the schedule's requests.
    pub(super) fn steps_wait(&mut self, now: Nanos) {
        if !self.pool.may_grow() {
            return;
        }
        let Some(visits) = self.visits.as_mut() else {
            return;
        };
        let waiting = visits.waiting(now);
        if waiting > 0 {
            let peer = self.source.peer_of(self.source.upcoming());
            self.grow(peer, waiting);
        }
    }

    /// The earliest intended time of anything due: the schedule's next,
    /// or a visit's step, rest's end or lane's start.
    pub(super) fn next_due(&mut self) -> Option<Nanos> {
        let scheduled = self.schedule.next();
        match self.visits.as_mut().and_then(|v| v.next()) {
            Some(v) => Some(scheduled.map_or(v, |s| s.min(v))),
            None => scheduled,
        }
    }

    /// At the end (`stop_at`): visits still running are counted in flight,
    /// steps still due to go out never sent, and the schedule's visits
    /// that never started as such (not as requests: a visit that never
    /// started sent nothing).
    pub(super) fn visits_at_end(&mut self, stop_at: Nanos) {
        self.rests_end_before(stop_at);
        self.expire_waiting_starts(stop_at);
        let Some(visits) = self.visits.as_ref() else {
            return;
        };
        let stats = &mut self.stats;
        let (mut running, mut unsent) = (Vec::new(), Vec::new());
        visits.at_end(&mut |start| running.push(start), &mut |at| unsent.push(at));
        for start in running {
            stats.visit_in_flight_at_end(start, stop_at);
        }
        for at in unsent {
            stats.never_sent(at, stop_at);
        }
        let schedule = &mut self.schedule;
        self.stats
            .visits_never_started(stop_at, |a, b| schedule.count_pending(a, b));
    }

    /// At the end: rests that ended before `stop_at` while no connection
    /// was free are taken up, so that the step each led to counts as due
    /// (and never sent) at its intended time, and a visit that had nothing
    /// left to send ends when it would have. Bounded, for a flow resting
    /// 0 s in a loop.
    fn rests_end_before(&mut self, stop_at: Nanos) {
        let mut steps = Vec::new();
        for _ in 0..RESUMES_AT_END {
            let Some(visits) = self.visits.as_mut() else {
                return;
            };
            match visits.take(stop_at.saturating_sub(1), Nanos::MAX) {
                Some((at, key, Due::Step)) => steps.push((at, key)),
                Some((at, key, Due::Wake)) => {
                    let next = self.script_mut().visit_wake(key);
                    self.visit_goes_on(key, at, next, false);
                }
                None => break,
            }
        }
        if let Some(visits) = self.visits.as_mut() {
            for (at, key) in steps {
                visits.push(key, at, Due::Step);
            }
        }
    }

    /// Visits past `--visit-timeout` by `now` end, failed "timeout": their
    /// coroutines go, and an answer still coming is counted as a request
    /// only.
    pub(super) fn expire_visits(&mut self, now: Nanos) {
        while let Some((key, start)) = self.visits.as_mut().and_then(|v| v.expire(now)) {
            self.script_mut().visit_end(key);
            self.stats.visit_ended(start, now, Some("timeout"));
        }
    }

    /// Visits of the schedule whose `--visit-timeout` passed by `now`
    /// while no connection was free to take their first step (a busy
    /// pool, a server gone): each fails "timeout", sending nothing, as one
    /// found late when a connection frees does.
    pub(super) fn expire_waiting_starts(&mut self, now: Nanos) {
        let Some(timeout) = self.visits.as_ref().and_then(|v| v.timeout()) else {
            return;
        };
        let end = self.stats.window().end;
        // Due at or before `now - timeout`: past their deadline by `now`.
        while let Some(at) = self.schedule.take_due(now.saturating_sub(timeout), end) {
            self.stats.visit_started(at);
            self.stats.visit_ended(at, now, Some("timeout"));
        }
    }

    fn script_mut(&mut self) -> &mut crate::script::ThreadScript {
        self.hooks.script().expect("a flow has a script")
    }
}
