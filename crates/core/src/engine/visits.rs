//! A worker's visits in time (a script's `flow(visit)`): when each visit
//! started, and when its next step or the end of its rest falls due. The
//! script keeps what a visit does; this keeps when.
//!
//! Every step is due at its intended time: the first at the visit's
//! scheduled start, each later one at the end of the step before it plus
//! the rests between. A step waiting for a free connection keeps that
//! time, so the wait counts in its latency, as a request's does. In the
//! closed loop (`-c` visits back to back) each lane starts its next visit
//! as the last one ends.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::clock::Nanos;

/// A request's visit, as its in-flight tag carries it: the key and the
/// generation of the visit it belongs to (a key is reused once its visit
/// ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VisitTag {
    pub key: u32,
    generation: u32,
}

/// What falls due for a visit at its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Due {
    /// Its step goes out (the request waits in the script).
    Step,
    /// Its rest is over: the flow goes on.
    Wake,
}

#[derive(Clone, Copy, Debug)]
struct Visit {
    generation: u32,
    /// The scheduled start.
    start: Nanos,
    /// Live: started, not ended.
    live: bool,
}

pub(super) struct Visits {
    by_key: Vec<Visit>,
    free: Vec<u32>,
    /// (at, key, generation, step?): steps and ends of rests, earliest
    /// first; an entry of a visit that ended since is skipped.
    due: BinaryHeap<Reverse<(Nanos, u32, u32, bool)>>,
    /// The closed loop's lanes: when each may start its next visit.
    free_lanes: Option<BinaryHeap<Reverse<Nanos>>>,
    /// This worker's place among all workers of the run, shards included:
    /// visit ids are `lane + lanes·n`, unique across the run.
    lane: u64,
    lanes: u64,
    started: u64,
    /// `--visit-timeout`, and each visit's deadline: (at, key, generation).
    timeout: Option<Nanos>,
    deadlines: BinaryHeap<Reverse<(Nanos, u32, u32)>>,
    /// What fell due up to here, with no slot free, has been counted
    /// for the pool's growth.
    counted_until: Nanos,
}

impl Visits {
    pub fn new((lane, lanes): (usize, usize), timeout: Option<Nanos>) -> Visits {
        Visits {
            by_key: Vec::new(),
            free: Vec::new(),
            due: BinaryHeap::new(),
            free_lanes: None,
            lane: lane as u64,
            lanes: lanes.max(1) as u64,
            started: 0,
            timeout,
            deadlines: BinaryHeap::new(),
            counted_until: 0,
        }
    }

    /// The closed loop: `n` visits at a time, the first ones at `at`.
    pub fn lanes(&mut self, n: usize, at: Nanos) {
        self.free_lanes = Some((0..n).map(|_| Reverse(at)).collect());
    }

    /// A new visit scheduled at `start`: its key and id.
    pub fn start(&mut self, start: Nanos) -> (u32, u64) {
        let id = self.lane + self.lanes * self.started;
        self.started += 1;
        let key = match self.free.pop() {
            Some(key) => key,
            None => {
                self.by_key.push(Visit {
                    generation: 0,
                    start,
                    live: false,
                });
                (self.by_key.len() - 1) as u32
            }
        };
        let v = &mut self.by_key[key as usize];
        v.generation = v.generation.wrapping_add(1);
        v.start = start;
        v.live = true;
        if let Some(t) = self.timeout {
            let generation = v.generation;
            self.deadlines
                .push(Reverse((start.saturating_add(t), key, generation)));
        }
        (key, id)
    }

    pub fn tag(&self, key: u32) -> VisitTag {
        VisitTag {
            key,
            generation: self.by_key[key as usize].generation,
        }
    }

    /// The visit `tag` names is still the one running under its key.
    pub fn holds(&self, tag: VisitTag) -> bool {
        self.by_key
            .get(tag.key as usize)
            .is_some_and(|v| v.live && v.generation == tag.generation)
    }

    pub fn start_of(&self, key: u32) -> Nanos {
        self.by_key[key as usize].start
    }

    /// Visit `key`'s next step, or the end of its rest, falls due at `at`.
    pub fn push(&mut self, key: u32, at: Nanos, due: Due) {
        let generation = self.by_key[key as usize].generation;
        self.due
            .push(Reverse((at, key, generation, due == Due::Step)));
    }

    /// Visit `key` ended at `at`: its lane, in the closed loop, starts the
    /// next one then.
    pub fn end(&mut self, key: u32, at: Nanos) {
        self.retire(key, at, true);
    }

    fn retire(&mut self, key: u32, at: Nanos, reuse: bool) {
        let v = &mut self.by_key[key as usize];
        if v.live {
            v.live = false;
            if reuse {
                self.free.push(key);
            }
            if let Some(lanes) = &mut self.free_lanes {
                lanes.push(Reverse(at));
            }
        }
    }

    /// The earliest thing due: a step, a rest's end, or (closed loop) a
    /// lane's next start.
    pub fn next(&mut self) -> Option<Nanos> {
        self.drop_stale();
        let due = self.due.peek().map(|Reverse((at, ..))| *at);
        let lane = self.next_lane();
        match (due, lane) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A closed-loop lane free to start a visit, when.
    pub fn next_lane(&self) -> Option<Nanos> {
        self.free_lanes.as_ref()?.peek().map(|Reverse(at)| *at)
    }

    /// Takes a lane whose start has come by `now` (before `end`).
    pub fn take_lane(&mut self, now: Nanos, end: Nanos) -> Option<Nanos> {
        let lanes = self.free_lanes.as_mut()?;
        let &Reverse(at) = lanes.peek()?;
        (at <= now && at < end).then(|| {
            lanes.pop();
            at
        })
    }

    /// Takes the earliest step or rest's end due by `now`, if it comes no
    /// later than `before`: `(at, key, what)`.
    pub fn take(&mut self, now: Nanos, before: Nanos) -> Option<(Nanos, u32, Due)> {
        self.drop_stale();
        let &Reverse((at, key, _, step)) = self.due.peek()?;
        if at > now || at > before {
            return None;
        }
        self.due.pop();
        Some((at, key, if step { Due::Step } else { Due::Wake }))
    }

    /// Steps and rests' ends of live visits due by `now`, waiting while no
    /// slot is free: what the pool may grow for. They count as seen, so
    /// that [`Visits::next_uncounted`] looks past them.
    pub fn waiting(&mut self, now: Nanos) -> usize {
        self.counted_until = self.counted_until.max(now);
        let live = |key: u32, generation: u32| {
            let v = &self.by_key[key as usize];
            v.live && v.generation == generation
        };
        self.due
            .iter()
            .filter(|Reverse((at, key, generation, _))| *at <= now && live(*key, *generation))
            .count()
    }

    /// When the next step or rest's end not yet counted falls due.
    pub fn next_uncounted(&self) -> Option<Nanos> {
        self.due
            .iter()
            .map(|Reverse((at, ..))| *at)
            .filter(|&at| at > self.counted_until)
            .min()
    }

    /// `--visit-timeout`, when given.
    pub fn timeout(&self) -> Option<Nanos> {
        self.timeout
    }

    /// A visit scheduled at `start` is already past its deadline at `now`
    /// (`--visit-timeout`): it fails without sending anything.
    pub fn late_to_start(&self, start: Nanos, now: Nanos) -> bool {
        self.timeout.is_some_and(|t| start.saturating_add(t) <= now)
    }

    /// A visit past its deadline by `now` (`--visit-timeout`), ended here:
    /// its key and scheduled start.
    pub fn expire(&mut self, now: Nanos) -> Option<(u32, Nanos)> {
        while let Some(&Reverse((at, key, generation))) = self.deadlines.peek() {
            if at > now {
                return None;
            }
            self.deadlines.pop();
            let v = self.by_key[key as usize];
            if v.live && v.generation == generation {
                // Its step may still wait for a slot under this key: the
                // key is not given to another visit.
                self.retire(key, now, false);
                return Some((key, v.start));
            }
        }
        None
    }

    fn drop_stale(&mut self) {
        while let Some(&Reverse((_, key, generation, _))) = self.due.peek() {
            let v = &self.by_key[key as usize];
            if v.live && v.generation == generation {
                return;
            }
            self.due.pop();
        }
    }

    /// At the end: every visit still running (its start), and every step
    /// still due to go out (its intended time).
    pub fn at_end(&self, running: &mut impl FnMut(Nanos), unsent: &mut impl FnMut(Nanos)) {
        for v in self.by_key.iter().filter(|v| v.live) {
            running(v.start);
        }
        for &Reverse((at, key, generation, step)) in &self.due {
            let v = &self.by_key[key as usize];
            if step && v.live && v.generation == generation {
                unsent(at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_across_lanes_and_keys_are_reused() {
        let mut a = Visits::new((1, 3), None);
        let (k0, id0) = a.start(10);
        let (k1, id1) = a.start(20);
        assert_eq!((id0, id1), (1, 4));
        let old = a.tag(k0);
        a.end(k0, 30);
        assert!(!a.holds(old));
        let (k2, id2) = a.start(40);
        assert_eq!((k2, id2), (k0, 7));
        assert!(!a.holds(old) && a.holds(a.tag(k2)) && k1 != k2);
    }

    #[test]
    fn steps_and_rests_come_in_time_order_and_ended_visits_drop_out() {
        let mut v = Visits::new((0, 1), None);
        let (a, _) = v.start(0);
        let (b, _) = v.start(0);
        v.push(a, 50, Due::Wake);
        v.push(b, 20, Due::Step);
        assert_eq!(v.next(), Some(20));
        assert_eq!(v.take(10, u64::MAX), None);
        assert_eq!(v.take(100, u64::MAX), Some((20, b, Due::Step)));
        v.end(a, 60);
        assert_eq!(v.take(100, u64::MAX), None);
        assert_eq!(v.next(), None);
    }

    /// While no slot is free, what fell due waits (ended visits' entries
    /// do not), and the next wake for growth looks past what was counted.
    #[test]
    fn steps_due_with_no_slot_free_are_counted_once_for_growth() {
        let mut v = Visits::new((0, 1), None);
        let keys: Vec<u32> = (0..3).map(|_| v.start(0).0).collect();
        v.push(keys[0], 10, Due::Step);
        v.push(keys[1], 20, Due::Wake);
        v.push(keys[2], 30, Due::Step);
        assert_eq!(v.next_uncounted(), Some(10));
        assert_eq!(v.waiting(20), 2);
        assert_eq!(v.next_uncounted(), Some(30));
        v.end(keys[2], 25);
        assert_eq!(v.waiting(40), 2);
        assert_eq!(v.next_uncounted(), None);
    }

    #[test]
    fn closed_loop_lanes_start_again_as_visits_end() {
        let mut v = Visits::new((0, 1), None);
        v.lanes(2, 5);
        assert_eq!(v.take_lane(5, 100), Some(5));
        assert_eq!(v.take_lane(5, 100), Some(5));
        assert_eq!(v.take_lane(5, 100), None);
        let (k, _) = v.start(5);
        v.end(k, 70);
        assert_eq!(v.next_lane(), Some(70));
        assert_eq!(v.take_lane(80, 70), None, "not at or past the end");
    }

    #[test]
    fn visits_past_their_deadline_end() {
        let mut v = Visits::new((0, 1), Some(100));
        let (a, _) = v.start(0);
        let (b, _) = v.start(50);
        v.end(a, 20);
        assert_eq!(v.expire(120), None, "a ended in time; b has until 150");
        assert_eq!(v.expire(150), Some((b, 50)));
        assert!(!v.holds(v.tag(b)));
        assert_eq!(v.expire(1_000), None);
        assert_eq!(v.start(200).0, a, "a's key is free again, b's is not");
        assert_ne!(v.start(200).0, b);
    }
}
