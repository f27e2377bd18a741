//! The worker's clocks: sessions' deadlines, the sweep that gives up
//! requests past `--timeout` and reopens connections whose back-off is
//! over, and the running totals the progress line reads.

use crate::clock::Nanos;
use crate::http::Failure;
use crate::stats::{ConnectCause, Loss};

use super::super::conn::{Check, InFlight};
use super::super::pool::Role;
use super::{Worker, SWEEP_SLICE};

impl Worker {
    /// Notes when the session of connection `i` next needs its deadline,
    /// when that changed: the alarm set before no longer stands.
    pub(super) fn watch_deadline(&mut self, i: usize) {
        let place = &mut self.pool[i];
        let at = place.conn.session().and_then(|s| s.poll_timeout());
        if at != place.deadline {
            place.deadline = at;
            if let Some(at) = at {
                self.deadlines.set(at, i, place);
            }
        }
    }

    /// Sessions whose deadline passed handle it.
    pub(super) fn session_deadlines(&mut self, now: Nanos) {
        while let Some(i) = self.deadlines.pop_standing(now, &self.pool) {
            self.pool[i].deadline = None;
            let Some(session) = self.pool[i].conn.session_mut() else {
                continue;
            };
            // Its timer may have moved on since it was last watched.
            if session.poll_timeout().is_some_and(|t| t <= now) {
                session.handle_timeout(now);
                self.settle(i, None);
            } else {
                self.watch_deadline(i);
            }
        }
    }

    /// Expires requests outstanding longer than the timeout and reopens
    /// connections whose back-off has passed.
    pub(super) fn sweep(&mut self, now: Nanos) {
        self.next_sweep = now + self.sweep_every;
        if now >= self.next_publish {
            self.publish(now);
        }
        self.expire_visits(now);
        self.expire_waiting_starts(now);
        let paced = self.paced();
        for i in 0..self.pool.len() {
            // With thousands of connections a sweep takes milliseconds;
            // requests falling due meanwhile go out along the way.
            if paced && i % SWEEP_SLICE == SWEEP_SLICE - 1 {
                self.dispatch();
            }
            if self.pool[i].role == Role::Vacant {
                continue;
            }
            match self.pool[i].conn.on_timer(now, self.timeout) {
                Check::Nothing => self.pool.watch_unanswered(i, now),
                Check::Expired => self.expire(i, now),
                Check::ConnectTimedOut => self.connect_failed(i, ConnectCause::Timeout),
                Check::Reopen => self.open(i),
                Check::ReopenAt(at) => self.next_sweep = self.next_sweep.min(at),
            }
        }
    }

    /// Gives up the requests of connection `i` older than the timeout.
    /// Where the protocol can cancel one request, the connection and its
    /// other requests go on; otherwise it closes.
    fn expire(&mut self, i: usize, now: Nanos) {
        let timeout = self.timeout;
        let mut gone = std::mem::take(&mut self.drained);
        if let Some(s) = self.pool[i].conn.session_mut() {
            s.expire(
                &mut |t: &InFlight| now.saturating_sub(t.stamp.sent()) > timeout,
                &mut gone,
                now,
            );
        }
        // Passed over as the server's limit showed: one connection whose
        // first request the server left unanswered is no limit.
        let peer = self.pool[i].conn.peer();
        let passed_over = self.pool[i].passed_over && self.pool.capacity(peer).ceiling().is_some();
        for tag in gone.drain(..) {
            self.stats.lost(tag.stamp, Loss::Timeout, now);
            if passed_over {
                self.stats.timed_out_unanswered(tag.stamp);
            }
            if tag.visit.is_some() {
                self.visit_lost(&tag, Loss::Timeout, now);
            }
        }
        self.drained = gone;
        // A session that gave the connection up has finished, or has only
        // its last words (WebSocket's close) to say, which the settling
        // writes: either way it ends timed out.
        let ended = self.pool[i]
            .conn
            .session()
            .is_none_or(|s| s.is_finished() || s.has_last_words());
        self.settle(i, ended.then_some(Failure::Timeout));
    }

    /// Shares this thread's running totals with the progress line.
    pub(super) fn publish(&mut self, now: Nanos) {
        self.next_publish = now + super::super::progress::PUBLISH_EVERY;
        if let Some(board) = &self.progress {
            if let Some(below) = board.intervals_below(now) {
                let parts = self.stats.take_closed_intervals(now, below);
                board.publish_intervals(self.index, parts, below);
            }
            board.publish(self.index, self.stats.stats());
            let in_flight = self.pool.in_flight();
            let window = self.stats.window();
            let from = window.measure_from;
            let queued = self.slots.waiting().filter(|d| d.at >= from).count() as u64;
            let untaken = self.schedule.count_pending(from, now.min(window.end));
            board.publish_outstanding(self.index, in_flight as u64, queued + untaken);
        }
    }
}
