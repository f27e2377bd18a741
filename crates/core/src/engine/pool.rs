//! A worker's connections: which places hold an active connection (counted
//! against `-c`), which drain on the side, which are free for the next;
//! how far the pool may grow on demand; what it learned of each server's
//! connection limit and stream limit; and why requests find no free
//! stream.
//!
//! Nothing here opens, reads or writes: the worker does that and tells the
//! pool what it saw. The pool answers the questions the worker asks of it
//! as a whole (may it grow, is this connection beyond the server's limit,
//! why do requests wait, how does the pool stand at the end).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::{Index, IndexMut};

use crate::clock::Nanos;
use crate::stats::{AtEnd, ConnectCause, Wait};

use super::capacity::Capacity;
use super::conn::{Conn, WentDown};

/// How long the reason requests wait for a slot is taken as still true.
const WAIT_CAUSE_FOR: Nanos = 1_000_000;

/// A connection's place in the pool, and what the worker keeps of its
/// free streams.
pub(super) struct Place {
    pub conn: Conn,
    pub role: Role,
    /// Free streams offered as slots in [`super::slots::Slots`].
    pub offered: u32,
    /// Free streams resting in the script's `delay()`.
    pub resting: u32,
    /// Bumped whenever the place forgets its rests (its connection closed
    /// or was replaced), so that wake-ups queued before are ignored.
    pub generation: u32,
    /// The session's deadline that an alarm in the worker's deadlines
    /// stands for: alarms set for any other time are stale.
    pub deadline: Option<Nanos>,
    /// Its connection has answered nothing while others answered requests
    /// sent after its own: the server has not taken it (its listen
    /// backlog, past its connection limit).
    pub passed_over: bool,
}

impl Place {
    /// Free streams neither offered as slots nor resting.
    pub fn unclaimed(&self) -> u32 {
        let claimed = self.offered + self.resting;
        self.conn.free_streams().saturating_sub(claimed)
    }

    /// Forgets the place's offered and resting streams: wake-ups queued
    /// for it before are ignored from now on.
    pub fn forget(&mut self) {
        self.offered = 0;
        self.resting = 0;
        self.generation = self.generation.wrapping_add(1);
        self.deadline = None;
    }

    fn is_active_to(&self, peer: usize) -> bool {
        self.role == Role::Active && self.conn.peer() == peer
    }
}

/// What a place holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// One of the connections `-c` asks for: reopened when it closes.
    Active,
    /// Retired by the server (its session said so) and replaced: it
    /// finishes what is in flight, takes nothing new, and is not reopened.
    Draining,
    /// Free for the next connection opened.
    Vacant,
}

/// The connections of one worker, by token.
pub(super) struct Pool {
    places: Vec<Place>,
    vacant: Vec<usize>,
    /// Places holding an active connection, at most `max_active`: more
    /// open on demand when requests wait.
    active: usize,
    /// Of them, per peer.
    active_of: Vec<usize>,
    /// Per peer, what the pool learned of the server's connection limit:
    /// it grows no further, and connections beyond it are not reopened.
    capacity: Vec<Capacity>,
    max_active: usize,
    initial: usize,
    peak: usize,
    opened_on_demand: u64,
    /// Per peer, the streams a connection to it takes at once, once one
    /// has said (for growing: how many waiting requests one more serves).
    streams_each: Vec<u32>,
    /// Per peer, why its requests last had to wait, and when that was
    /// found.
    waits_seen: Vec<(Nanos, Wait)>,
}

impl Pool {
    /// A pool for `peers` hosts that starts with `initial` connections and
    /// may grow to `max` (no further than `initial` when it is smaller).
    pub fn new(peers: usize, initial: usize, max: usize) -> Pool {
        Pool {
            places: Vec::with_capacity(initial),
            vacant: Vec::new(),
            active: 0,
            active_of: vec![0; peers],
            capacity: vec![Capacity::default(); peers],
            max_active: max.max(initial),
            initial,
            peak: initial,
            opened_on_demand: 0,
            streams_each: vec![1; peers],
            waits_seen: vec![(0, Wait::Busy); peers],
        }
    }

    pub fn len(&self) -> usize {
        self.places.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Place> {
        self.places.iter()
    }

    /// Whether the place of token `i` holds a connection.
    pub fn holds(&self, i: usize) -> bool {
        self.places.get(i).is_some_and(|p| p.role != Role::Vacant)
    }

    /// What the pool learned of `peer`'s connection limit.
    pub fn capacity(&mut self, peer: usize) -> &mut Capacity {
        &mut self.capacity[peer]
    }

    /// A place for a new active connection to `peer`: a vacant one, or a
    /// new one.
    pub fn add(&mut self, peer: usize) -> usize {
        self.active += 1;
        self.active_of[peer] += 1;
        let conn = Conn::new(peer);
        if let Some(i) = self.vacant.pop() {
            let place = &mut self.places[i];
            place.conn = conn;
            place.role = Role::Active;
            place.passed_over = false;
            place.deadline = None;
            return i;
        }
        self.places.push(Place {
            conn,
            role: Role::Active,
            offered: 0,
            resting: 0,
            generation: 0,
            deadline: None,
            passed_over: false,
        });
        self.places.len() - 1
    }

    /// Opens another place to `peer` for its waiting requests (`waiting`
    /// in its queue, and `due` more still on the schedule), when the pool
    /// may grow and the connections already opening would not take them
    /// all. It stays for the rest of the run.
    pub fn grow(&mut self, peer: usize, waiting: usize, due: usize) -> Option<usize> {
        if !self.may_grow() || !self.capacity[peer].allows(self.active_of[peer] + 1) {
            return None;
        }
        // Nothing listens (a connect was refused, and that connection has
        // not come up since): one more would only be refused too. Growth
        // resumes once the connections waiting to reopen open again.
        let refused = Some(WentDown::Connect(ConnectCause::Refused));
        if self
            .places
            .iter()
            .any(|p| p.is_active_to(peer) && p.conn.went_down() == refused)
        {
            return None;
        }
        let opening = self
            .places
            .iter()
            .filter(|p| p.is_active_to(peer) && !p.conn.is_ready())
            .count();
        let each = self.streams_each[peer].max(1) as usize;
        if waiting + due <= opening * each {
            return None;
        }
        let i = self.add(peer);
        self.opened_on_demand += 1;
        self.peak = self.peak.max(self.active);
        Some(i)
    }

    /// The pool holds fewer connections than it may grow to.
    pub fn may_grow(&self) -> bool {
        self.active < self.max_active
    }

    /// A connection to `peer` takes `streams` at once: the most seen is
    /// what one more connection serves.
    pub fn streams_seen(&mut self, peer: usize, streams: u32) {
        self.streams_each[peer] = self.streams_each[peer].max(streams);
    }

    /// The connection of place `i` was retired by its server: it drains on
    /// the side, no longer counted against `-c`.
    pub fn drain(&mut self, i: usize) {
        let place = &mut self.places[i];
        place.role = Role::Draining;
        self.active -= 1;
        self.active_of[place.conn.peer()] -= 1;
    }

    /// Place `i` is free for the next connection; an active one no longer
    /// counts against `-c` (the pool shrinks).
    pub fn vacate(&mut self, i: usize) {
        let place = &mut self.places[i];
        if place.role == Role::Active {
            self.active -= 1;
            self.active_of[place.conn.peer()] -= 1;
        }
        place.role = Role::Vacant;
        self.vacant.push(i);
    }

    /// The pool holds more connections to `peer` than the server's limit
    /// found, and more than the run's own share at the start: one that
    /// never got an answer is then not reopened.
    pub fn beyond_limit(&self, peer: usize) -> bool {
        let initial = self.initial.div_ceil(self.active_of.len().max(1));
        let open = self.active_of[peer];
        open > initial && !self.capacity[peer].allows(open)
    }

    /// Notes place `i` as passed over when its connection has answered
    /// nothing while others answer requests sent after it began waiting:
    /// the server has not taken it (its listen backlog, past its
    /// connection limit). Noted once; it counts as turned away, and the
    /// server's limit may be found.
    pub fn watch_unanswered(&mut self, i: usize, now: Nanos) {
        let place = &self.places[i];
        if place.passed_over || place.role != Role::Active {
            return;
        }
        // Waiting since its oldest request went out, or, still opening
        // (a handshake the server never answers, its listen backlog full),
        // since the attempt began.
        let conn = &place.conn;
        let peer = conn.peer();
        let capacity = &self.capacity[peer];
        let passed_over = match conn.opening_since() {
            Some(since) => capacity.passed_over_opening(since, now),
            None if conn.answered_nothing() => conn
                .oldest_sent()
                .is_some_and(|since| capacity.passed_over(since, now)),
            None => false,
        };
        if passed_over {
            let (opened, taken) = (conn.attempt_at(), conn.is_taken());
            self.places[i].passed_over = true;
            self.capacity[peer].turned_away(opened, taken);
        }
    }

    /// Some active connection is still opening (its connect, handshake or
    /// the session's own greeting), and none has failed for good.
    pub fn opening(&self) -> bool {
        self.places.iter().any(|p| {
            p.role == Role::Active
                && (p.conn.is_connecting()
                    || (p.conn.is_open()
                        && p.conn
                            .session()
                            .is_some_and(|s| !s.is_ready() && !s.is_retired())))
        })
    }

    /// Requests in flight on every connection.
    pub fn in_flight(&self) -> usize {
        self.places.iter().map(|p| p.conn.in_flight()).sum()
    }

    /// Why a request of `peer` finds no free slot: some of the peer's
    /// connections are down or opening, or all are open and the server's
    /// stream limit (below `-m`) holds them, or all are simply busy. Looked
    /// up at most once a millisecond: an overloaded run has many requests
    /// waiting, and thousands of connections to look at.
    pub fn wait_cause(&mut self, peer: usize, now: Nanos) -> Wait {
        let (at, why) = self.waits_seen[peer];
        if now.saturating_sub(at) < WAIT_CAUSE_FOR && at > 0 {
            return why;
        }
        let why = self.find_wait_cause(peer);
        self.waits_seen[peer] = (now, why);
        why
    }

    fn find_wait_cause(&self, peer: usize) -> Wait {
        let mut limited = false;
        for p in self.places.iter().filter(|p| p.is_active_to(peer)) {
            match p
                .conn
                .session()
                .filter(|s| p.conn.is_open() && s.is_ready())
            {
                None => return Wait::Down,
                Some(s) => limited |= s.held_by_server(),
            }
        }
        if limited {
            Wait::ServerLimit
        } else {
            Wait::Busy
        }
    }

    /// How the connections stand at the end: busy, resting, held by the
    /// server's stream limit, down (by why), draining.
    pub fn at_end(&self) -> AtEnd {
        let mut at_end = AtEnd::default();
        for place in self.places.iter().filter(|p| p.role != Role::Vacant) {
            let conn = &place.conn;
            if place.role == Role::Draining {
                at_end.draining += 1;
            } else if conn.in_flight() > 0 {
                at_end.busy += 1;
            } else if place.resting > 0 {
                at_end.resting += 1;
            } else if conn.is_open()
                && conn.free_streams() == 0
                && conn.session().is_some_and(|s| s.held_by_server())
            {
                at_end.held += 1;
            } else if !conn.is_open() {
                at_end.down += 1;
                match conn.went_down() {
                    Some(WentDown::Connect(c)) => at_end.down_connect.count(c),
                    Some(WentDown::Read(r)) => at_end.down_read.count(r),
                    None => {}
                }
            }
        }
        at_end
    }

    /// The pool's size: at the start, at its peak, the connections opened
    /// on demand, and, where a server's limit was found, the connections
    /// the servers accepted.
    pub fn sizes(&self) -> (usize, usize, u64, Option<usize>) {
        let limit_found = self.capacity.iter().any(|c| c.ceiling().is_some());
        let accepted = limit_found.then(|| self.capacity.iter().map(Capacity::peak).sum());
        (self.initial, self.peak, self.opened_on_demand, accepted)
    }
}

impl Index<usize> for Pool {
    type Output = Place;

    fn index(&self, i: usize) -> &Place {
        &self.places[i]
    }
}

impl IndexMut<usize> for Pool {
    fn index_mut(&mut self, i: usize) -> &mut Place {
        &mut self.places[i]
    }
}

/// Wake-ups of places at given times (a rest's end, a session's deadline),
/// earliest first. Each names its place's generation: one set before the
/// place forgot its rests (its connection closed or was replaced) is
/// ignored.
#[derive(Default)]
pub(super) struct Alarms(BinaryHeap<Reverse<(Nanos, usize, u32)>>);

impl Alarms {
    /// Wakes place `i` at `at`.
    pub fn set(&mut self, at: Nanos, i: usize, place: &Place) {
        self.0.push(Reverse((at, i, place.generation)));
    }

    /// The earliest alarm.
    pub fn next(&self) -> Option<Nanos> {
        self.0.peek().map(|Reverse((at, _, _))| *at)
    }

    /// The earliest session deadline that still stands: stale alarms on
    /// top (their place's session moved its deadline) go.
    pub fn next_standing(&mut self, pool: &Pool) -> Option<Nanos> {
        while let Some(&Reverse((at, i, generation))) = self.0.peek() {
            if Alarms::stands(pool, at, i, generation) {
                return Some(at);
            }
            self.0.pop();
        }
        None
    }

    /// The place of the next session deadline due by `now` that still
    /// stands.
    pub fn pop_standing(&mut self, now: Nanos, pool: &Pool) -> Option<usize> {
        self.pop(now, |at, i, generation| {
            Alarms::stands(pool, at, i, generation)
        })
    }

    fn stands(pool: &Pool, at: Nanos, i: usize, generation: u32) -> bool {
        let place = &pool[i];
        place.generation == generation && place.deadline == Some(at)
    }

    /// The place of the next alarm due by `now` that still stands.
    pub fn pop_due(&mut self, now: Nanos, pool: &Pool) -> Option<usize> {
        self.pop(now, |_, i, generation| pool[i].generation == generation)
    }

    /// The place of the next alarm due by `now` for which `stands` holds;
    /// those due for which it does not go.
    fn pop(&mut self, now: Nanos, stands: impl Fn(Nanos, usize, u32) -> bool) -> Option<usize> {
        while let Some(&Reverse((at, i, generation))) = self.0.peek() {
            if at > now {
                return None;
            }
            self.0.pop();
            if stands(at, i, generation) {
                return Some(i);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's deadline moves with every packet it sends: the alarms
    /// set for the times it left behind no longer stand, and neither the
    /// wait nor a wake-up is spent on them.
    #[test]
    fn only_the_alarm_for_a_sessions_current_deadline_stands() {
        let mut pool = Pool::new(1, 2, 2);
        let (a, b) = (pool.add(0), pool.add(0));
        let mut alarms = Alarms::default();
        for (i, at) in [(a, 5), (a, 9), (b, 7)] {
            pool[i].deadline = Some(at);
            alarms.set(at, i, &pool[i]);
        }
        assert_eq!(alarms.next_standing(&pool), Some(7));
        assert_eq!(alarms.pop_standing(6, &pool), None);
        assert_eq!(alarms.pop_standing(10, &pool), Some(b));
        // A connection that closes forgets its deadline with its rests.
        pool[a].forget();
        assert_eq!(alarms.pop_standing(10, &pool), None);
        assert_eq!(alarms.next_standing(&pool), None);
    }
}
