//! What a worker's pool learns of a server's connection limit, per host.
//!
//! A server past its limit does one of two things to a new connection: it
//! closes (or resets) it before answering anything on it (nginx past
//! `worker_connections`), or it leaves it in its listen backlog, open but
//! never read, while the connections it did accept go on answering (h2o's
//! `max-connections`), its handshake unanswered over TLS. Either way a
//! pool that grows on demand would grow without end, each new connection
//! adding only requests that wait and fail. So the pool watches for both:
//! once new connections are turned away or passed over, a few in a row,
//! while others answer, the number of connections answering then is taken
//! as the server's limit (its *ceiling*), the pool grows no further than
//! that, and connections beyond it are not reopened.
//!
//! Nothing here reads a clock or a socket: the worker hands in what it
//! saw, with `now`.

use crate::clock::Nanos;

/// How old a connection's first request must be, at least, before the
/// connection counts as passed over: well above a scheduler's hiccup.
const PASSED_OVER_AFTER: Nanos = 250_000_000;

/// Connections turned away in a row, with no new connection answering
/// between them, that show a limit: a server resetting a request that
/// happened to be a new connection's first (its faults, a restart) does
/// not turn away the next new connection too.
const TURNED_AWAY_IN_A_ROW: u32 = 3;

/// One host's connections as the pool has seen them answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capacity {
    /// Connections open now that have answered at least once.
    answering: usize,
    /// The most that answered at once.
    peak: usize,
    /// The server's limit, once found: the connections answering when
    /// one beyond them was turned away or passed over.
    ceiling: Option<usize>,
    /// The slowest response seen, from its send.
    slowest: Nanos,
    /// The latest send of a request that was answered.
    latest_answered: Nanos,
    /// Connections turned away or passed over since a new connection
    /// last answered.
    turned_away: u32,
}

impl Capacity {
    /// A response to a request sent at `sent` completed `now`; `first`:
    /// the first on its connection.
    #[inline]
    pub fn answered(&mut self, sent: Nanos, now: Nanos, first: bool) {
        self.slowest = self.slowest.max(now.saturating_sub(sent));
        self.latest_answered = self.latest_answered.max(sent);
        if first {
            self.answering += 1;
            self.peak = self.peak.max(self.answering);
            self.turned_away = 0;
        }
    }

    /// A connection closed; `had_answered`: it had answered at least once.
    pub fn closed(&mut self, had_answered: bool) {
        if had_answered {
            self.answering = self.answering.saturating_sub(1);
        }
    }

    /// A connection was closed or reset before answering anything, or was
    /// passed over. When that happens to [`TURNED_AWAY_IN_A_ROW`] new
    /// connections with none answering between, while older ones answer,
    /// the server's limit is about the number answering: a server that
    /// merely leaves a request unanswered now and then (or resets one)
    /// does that to the first request of a new connection too, but
    /// seldom to three in a row. A server that answers no connection at
    /// all has no limit to find.
    pub fn turned_away(&mut self) {
        self.turned_away += 1;
        if self.turned_away >= TURNED_AWAY_IN_A_ROW {
            self.found();
        }
    }

    /// Whether a connection that has answered nothing, whose oldest
    /// request went out at `oldest_sent`, is being passed over at `now`:
    /// requests sent after it were answered on other connections, and it
    /// has waited well beyond the slowest response seen (twice it, and at
    /// least [`PASSED_OVER_AFTER`]), so it is not merely slow.
    pub fn passed_over(&self, oldest_sent: Nanos, now: Nanos) -> bool {
        let waited = now.saturating_sub(oldest_sent);
        self.answering > 0
            && self.latest_answered > oldest_sent
            && waited > PASSED_OVER_AFTER.max(2 * self.slowest)
    }

    /// A connection beyond the ones answering was refused service: the
    /// limit is the number answering (or the most found before).
    fn found(&mut self) {
        if self.answering > 0 {
            self.ceiling = Some(self.ceiling.unwrap_or(0).max(self.answering));
        }
    }

    /// The server's limit, once found.
    pub fn ceiling(&self) -> Option<usize> {
        self.ceiling
    }

    /// Whether the pool may have `open` connections to the host: any
    /// number until its limit is found, then no more than the limit.
    pub fn allows(&self, open: usize) -> bool {
        self.ceiling.is_none_or(|c| open <= c)
    }

    /// The most connections that answered at once.
    pub fn peak(&self) -> usize {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    /// `n` connections that have each answered once, 50 ms per response.
    fn answering(n: usize) -> Capacity {
        let mut c = Capacity::default();
        for k in 0..n as u64 {
            c.answered(k * MS, k * MS + 50 * MS, true);
        }
        c
    }

    #[test]
    fn connections_turned_away_in_a_row_set_the_limit_at_those_answering() {
        let mut c = answering(8);
        assert!(c.allows(100));
        c.answered(10 * MS, 60 * MS, false); // not a new connection
        c.turned_away();
        c.turned_away();
        assert_eq!(c.ceiling(), None);
        c.turned_away();
        assert_eq!(c.ceiling(), Some(8));
        assert!(c.allows(8) && !c.allows(9));
        // One closes; the limit found stays what it was.
        c.closed(true);
        c.turned_away();
        assert_eq!((c.ceiling(), c.peak()), (Some(8), 8));
    }

    /// A new connection that answers between two turned away (a server
    /// resetting whatever request comes fifth) shows no limit.
    #[test]
    fn a_new_connection_answering_between_shows_no_limit() {
        let mut c = answering(4);
        for _ in 0..10 {
            c.turned_away();
            c.turned_away();
            c.closed(true);
            c.answered(100 * MS, 150 * MS, true);
        }
        assert_eq!(c.ceiling(), None);
    }

    #[test]
    fn a_server_that_answers_no_one_has_no_limit_to_find() {
        let mut c = Capacity::default();
        for _ in 0..5 {
            c.turned_away();
        }
        assert_eq!(c.ceiling(), None);
        assert!(c.allows(1000));
    }

    #[test]
    fn passed_over_needs_later_answers_and_a_wait_past_the_slowest() {
        let c = answering(4); // latest answered was sent at 3 ms
                              // Sent at 1 ms, before a request that was answered: waiting 300 ms
                              // is past 250 ms and twice the slowest (50 ms).
        assert!(c.passed_over(MS, 301 * MS));
        assert!(!c.passed_over(MS, 200 * MS));
        // Sent after every request answered: merely waiting its turn.
        assert!(!c.passed_over(4 * MS, 900 * MS));
        // A server whose responses take up to 1 s is given 2 s.
        let mut slow = answering(4);
        slow.answered(0, 1_000 * MS, false);
        assert!(!slow.passed_over(MS, 1_500 * MS));
        assert!(slow.passed_over(MS, 2_100 * MS));
    }
}
