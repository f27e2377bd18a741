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
//! while others answer, the number of connections the server had then
//! taken is its limit (its *ceiling*), the pool grows no further than
//! that, and connections beyond it are not reopened.
//!
//! A connection shows it was taken when its TLS or QUIC handshake
//! completes (the server's own code answered it) or, over plain TCP,
//! when a response comes on it: counting only connections that have
//! answered would put a server's limit at the few a slow rate keeps busy.
//! A server that takes more than the ceiling later raises it: the
//! connections turned away were a burst it could not keep up with (a
//! flood of handshakes, its UDP buffer full), not its limit.
//!
//! Nothing here reads a clock or a socket: the worker hands in what it
//! saw, with `now`.

use crate::clock::Nanos;

/// How old a connection's first request must be, at least, before the
/// connection counts as passed over: well above a scheduler's hiccup.
const PASSED_OVER_AFTER: Nanos = 250_000_000;

/// Connections turned away in a row, with no connection opened after them
/// answering, that show a limit: a server resetting a request that
/// happened to be a new connection's first (its faults, a restart) does
/// not turn away the next new connection too.
const TURNED_AWAY_IN_A_ROW: usize = 3;

/// One host's connections as the pool has seen them answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capacity {
    /// Connections open now that the server has shown it took.
    taken: usize,
    /// The most it had taken at once.
    peak: usize,
    /// The server's limit, once found: the connections it had taken when
    /// one beyond them was turned away or passed over (or more, taken
    /// since).
    ceiling: Option<usize>,
    /// The slowest response seen, from its send.
    slowest: Nanos,
    /// The slowest opening (TLS or QUIC handshake) of a connection taken.
    slowest_opening: Nanos,
    /// The latest send of a request that was answered.
    latest_answered: Nanos,
    /// When the newest connection to answer began opening.
    newest_answering: Nanos,
    /// When the newest connections turned away or passed over began
    /// opening, newest first; only those opened after every connection
    /// that answered count.
    turned_away: [Option<Nanos>; TURNED_AWAY_IN_A_ROW],
}

impl Capacity {
    /// A response to a request sent at `sent` completed `now`; `first`:
    /// when its connection began opening, if it is the first on it.
    #[inline]
    pub fn answered(&mut self, sent: Nanos, now: Nanos, first: Option<Nanos>) {
        self.slowest = self.slowest.max(now.saturating_sub(sent));
        self.latest_answered = self.latest_answered.max(sent);
        if let Some(opened) = first {
            self.newest_answering = self.newest_answering.max(opened);
        }
    }

    /// A connection showed the server took it, its handshake done in
    /// `opening` (none over plain TCP, where its first response shows it).
    /// Taking more than the limit found raises the limit.
    pub fn taken(&mut self, opening: Option<Nanos>) {
        self.taken += 1;
        self.peak = self.peak.max(self.taken);
        self.slowest_opening = self.slowest_opening.max(opening.unwrap_or(0));
        if let Some(c) = self.ceiling.as_mut() {
            *c = (*c).max(self.taken);
        }
    }

    /// A connection closed; `was_taken`: the server had shown it took it.
    pub fn closed(&mut self, was_taken: bool) {
        if was_taken {
            self.taken = self.taken.saturating_sub(1);
        }
    }

    /// A connection that began opening at `opened` was closed or reset
    /// before answering anything, or was passed over. When that happens
    /// to [`TURNED_AWAY_IN_A_ROW`] connections with none opened after
    /// them answering, while older ones answer, the server's limit is
    /// about the number answering: a server that merely leaves a request
    /// unanswered now and then (or resets one) does that to the first
    /// request of a new connection too, but the connections opened after
    /// it answer, however many of them opened at once. A server that
    /// answers no connection at all has no limit to find. `was_taken`:
    /// the one turned away had been taken (its handshake done), so it is
    /// not among those the server keeps. The same connection seen twice
    /// (passed over, then closed) counts once.
    pub fn turned_away(&mut self, opened: Nanos, was_taken: bool) {
        if opened < self.newest_answering || self.turned_away.contains(&Some(opened)) {
            return;
        }
        let newest = &mut self.turned_away;
        if let Some(k) = newest.iter().position(|t| t.is_none_or(|t| t < opened)) {
            newest[k..].rotate_right(1);
            newest[k] = Some(opened);
        }
        let newest_answering = self.newest_answering;
        let in_a_row = newest
            .iter()
            .flatten()
            .filter(|&&t| t >= newest_answering)
            .count();
        if in_a_row >= TURNED_AWAY_IN_A_ROW {
            self.found(self.taken - usize::from(was_taken && self.taken > 0));
        }
    }

    /// Whether a connection that has answered nothing, whose oldest
    /// request went out at `oldest_sent`, is being passed over at `now`:
    /// requests sent after it were answered on other connections, and it
    /// has waited well beyond the slowest response seen (twice it, and at
    /// least [`PASSED_OVER_AFTER`]), so it is not merely slow.
    pub fn passed_over(&self, oldest_sent: Nanos, now: Nanos) -> bool {
        self.waited_past(oldest_sent, now, self.slowest)
    }

    /// Whether a connection still opening since `since` is being passed
    /// over at `now`: as [`Capacity::passed_over`], with the slowest
    /// handshake of a connection taken as the measure. A server
    /// answering a flood of handshakes one by one, or a handshake whose
    /// first packet was lost and goes again after a second, is slow, not
    /// full.
    pub fn passed_over_opening(&self, since: Nanos, now: Nanos) -> bool {
        self.waited_past(since, now, self.slowest_opening.max(self.slowest))
    }

    fn waited_past(&self, since: Nanos, now: Nanos, slowest: Nanos) -> bool {
        let waited = now.saturating_sub(since);
        self.taken > 0
            && self.latest_answered > since
            && waited > PASSED_OVER_AFTER.max(2 * slowest)
    }

    /// A connection beyond the `taken` ones was refused service: the limit
    /// is their number (or the most found before).
    fn found(&mut self, taken: usize) {
        if taken > 0 {
            self.ceiling = Some(self.ceiling.unwrap_or(0).max(taken));
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

    /// The most connections the server had taken at once.
    pub fn peak(&self) -> usize {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    /// `n` connections, opened at 0, 1, … ms, that have each answered
    /// once, 50 ms per response.
    fn answering(n: usize) -> Capacity {
        let mut c = Capacity::default();
        for k in 0..n as u64 {
            c.answered(k * MS, k * MS + 50 * MS, Some(k * MS));
            c.taken(None);
        }
        c
    }

    #[test]
    fn connections_turned_away_in_a_row_set_the_limit_at_those_answering() {
        let mut c = answering(8);
        assert!(c.allows(100));
        c.answered(10 * MS, 60 * MS, None); // not a new connection
        c.turned_away(100 * MS, false);
        c.turned_away(101 * MS, false);
        c.turned_away(101 * MS, false); // the same one, seen again
        assert_eq!(c.ceiling(), None);
        c.turned_away(102 * MS, false);
        assert_eq!(c.ceiling(), Some(8));
        assert!(c.allows(8) && !c.allows(9));
        // One closes; the limit found stays what it was.
        c.closed(true);
        c.turned_away(103 * MS, false);
        assert_eq!((c.ceiling(), c.peak()), (Some(8), 8));
    }

    /// A new connection that answers between two turned away (a server
    /// resetting whatever request comes fifth) shows no limit.
    #[test]
    fn a_new_connection_answering_between_shows_no_limit() {
        let mut c = answering(4);
        for k in 1..=10 {
            let at = k * 100 * MS;
            c.turned_away(at, false);
            c.turned_away(at + MS, false);
            c.closed(true);
            c.answered(at + 2 * MS, at + 50 * MS, Some(at + 2 * MS));
            c.taken(None);
        }
        assert_eq!(c.ceiling(), None);
    }

    /// Many connections open at once, and a few of them happen to meet a
    /// server that leaves a request unanswered now and then: their
    /// requests are seen passed over long after the others, opened later,
    /// answered. That is no limit, in whatever order it is seen.
    #[test]
    fn unanswered_ones_among_many_opened_at_once_show_no_limit() {
        let mut c = answering(4);
        for k in 10..60 {
            if k % 20 != 0 && k % 7 != 0 {
                c.answered(k * MS, k * MS + 20 * MS, Some(k * MS));
                c.taken(Some(MS));
            }
        }
        for k in (10..60).filter(|k| k % 20 == 0 || k % 7 == 0) {
            c.turned_away(k * MS, true);
        }
        assert_eq!(c.ceiling(), None);
        // The last three opened meet it: nothing opened after them
        // answered, so they are turned away in a row.
        for k in 60..63 {
            c.turned_away(k * MS, false);
        }
        assert!(c.ceiling().is_some());
    }

    #[test]
    fn a_server_that_answers_no_one_has_no_limit_to_find() {
        let mut c = Capacity::default();
        for k in 0..5 {
            c.turned_away(k * MS, false);
        }
        assert_eq!(c.ceiling(), None);
        assert!(c.allows(1000));
    }

    #[test]
    fn passed_over_needs_later_answers_and_a_wait_past_the_slowest() {
        // The latest answered was sent at 3 ms. Sent at 1 ms, before it:
        // waiting 300 ms is past 250 ms and twice the slowest (50 ms).
        let c = answering(4);
        assert!(c.passed_over(MS, 301 * MS));
        assert!(!c.passed_over(MS, 200 * MS));
        // Sent after every request answered: merely waiting its turn.
        assert!(!c.passed_over(4 * MS, 900 * MS));
        // A server whose responses take up to 1 s is given 2 s.
        let mut slow = answering(4);
        slow.answered(0, 1_000 * MS, None);
        assert!(!slow.passed_over(MS, 1_500 * MS));
        assert!(slow.passed_over(MS, 2_100 * MS));
    }

    /// A slow rate keeps two connections answering while the server's
    /// handshakes showed it took ten: three turned away then put the
    /// limit at the ten, not the two; one turned away after its own
    /// handshake is not among them; taking more later raises it.
    #[test]
    fn the_limit_counts_connections_taken_not_only_those_answering() {
        let mut c = answering(2);
        for _ in 0..8 {
            c.taken(Some(5 * MS));
        }
        c.taken(Some(5 * MS)); // the eleventh, closed unanswered
        c.turned_away(10 * MS, true);
        c.closed(true);
        c.turned_away(11 * MS, false);
        c.turned_away(12 * MS, false);
        assert_eq!(c.ceiling(), Some(10));
        c.taken(Some(900 * MS));
        c.taken(Some(900 * MS));
        assert_eq!((c.ceiling(), c.peak()), (Some(12), 12));
    }

    /// A connection still opening is passed over only after twice the
    /// slowest handshake of those taken: a flood of handshakes the server
    /// works through one by one is slow, not full.
    #[test]
    fn an_opening_is_passed_over_only_past_the_slowest_handshake() {
        let mut c = answering(4);
        assert!(c.passed_over_opening(MS, 301 * MS));
        c.taken(Some(800 * MS));
        assert!(!c.passed_over_opening(MS, 1_500 * MS));
        assert!(c.passed_over_opening(MS, 1_602 * MS));
        // A request waiting is measured against responses only.
        assert!(c.passed_over(MS, 301 * MS));
    }
}
