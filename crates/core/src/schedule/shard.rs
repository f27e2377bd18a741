//! `--shard I/N`: one instance's part of a schedule that N instances share.
//!
//! Every instance computes the same global sequence of intended times
//! (the same rate, profile and Poisson seed) and keeps requests
//! k ≡ I (mod N) of it. Together the N instances send exactly what one
//! instance would at the full rate, paced as one stream, because the
//! interleaving is by index and not by time. Within an instance its
//! threads split its share the same way, so thread j of T in shard I of N
//! owns the run's requests I + N·j, I + N·(j + T), …: lane I + N·j of N·T.

use std::sync::Arc;

use super::{Arrivals, Cursor, Profile, Spacing};
use crate::clock::Nanos;

/// Which part of the global schedule this instance sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    index: u64,
    count: u64,
}

impl Shard {
    /// The whole schedule: one instance.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count` (0-based), if that is one.
    pub fn new(index: u64, count: u64) -> Option<Shard> {
        (count > 0 && index < count).then_some(Shard { index, count })
    }

    pub fn index(&self) -> u64 {
        self.index
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// Lane `j` of this instance's `lanes` as a lane of the whole run:
    /// `(I + N·j, N·lanes)`. Whatever follows the schedule's order (a
    /// requests file replayed in order, say) uses it to stay in step.
    pub fn lane(&self, j: usize, lanes: usize) -> (usize, usize) {
        let (index, count) = (self.index as usize, self.count as usize);
        (index + count * j, count * lanes)
    }

    /// How many of the first `n` requests of the whole run are this
    /// shard's: those whose index is `index` modulo `count`.
    pub fn owned_of(&self, n: u64) -> u64 {
        owned_of(n, self.index, self.count)
    }
}

/// Of the indices `0..n`, how many are `lane` modulo `lanes`.
pub(crate) fn owned_of(n: u64, lane: u64, lanes: u64) -> u64 {
    match n.checked_sub(lane) {
        Some(0) | None => 0,
        Some(beyond) => (beyond - 1) / lanes + 1,
    }
}

/// The requests of `whole` that one shard sends, as an arrival process of
/// its own: its request k is request I + N·k of the whole run.
#[derive(Debug)]
pub(super) struct Sharded {
    pub(super) whole: Arc<dyn Arrivals>,
    pub(super) shard: Shard,
}

impl Arrivals for Sharded {
    fn cursor(&self) -> Box<dyn Cursor> {
        Box::new(ShardCursor {
            whole: self.whole.cursor(),
            shard: self.shard,
        })
    }

    /// This instance's part of the rate: what it should achieve.
    fn rate(&self) -> f64 {
        self.whole.rate() / self.shard.count as f64
    }

    /// The whole run's profile, as the user wrote it (the reports label
    /// phases with it); [`Arrivals::shard`] says which part is sent here.
    fn profile(&self) -> Option<&Profile> {
        self.whole.profile()
    }

    fn spacing(&self) -> Spacing {
        self.whole.spacing()
    }

    fn shard(&self) -> Shard {
        self.shard
    }
}

#[derive(Debug)]
struct ShardCursor {
    whole: Box<dyn Cursor>,
    shard: Shard,
}

impl Cursor for ShardCursor {
    fn time_of(&mut self, k: u64) -> Nanos {
        let global = k
            .checked_mul(self.shard.count)
            .and_then(|x| x.checked_add(self.shard.index));
        global.map_or(Nanos::MAX, |g| self.whole.time_of(g))
    }

    fn index_before(&mut self, t: Nanos) -> u64 {
        let n = self.whole.index_before(t);
        self.shard.owned_of(n)
    }

    fn fork(&self) -> Box<dyn Cursor> {
        Box::new(ShardCursor {
            whole: self.whole.fork(),
            shard: self.shard,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ConstantRate, Load, Process, Spacing};
    use super::*;

    const S: Nanos = 1_000_000_000;

    fn times(load: &Load, lane: usize, lanes: usize, end: Nanos) -> Vec<Nanos> {
        let super::super::Plan::Paced(mut share) = load.plan(0, lane, lanes) else {
            panic!("open")
        };
        let mut out = Vec::new();
        while share.peek() < end {
            out.push(share.peek());
            share.advance();
        }
        out
    }

    /// Every shard's threads together, over all shards, give back the
    /// whole schedule exactly: nothing twice, nothing missing.
    fn union_is_whole(whole: Load, shards: u64, threads: usize) {
        let end = 2 * S;
        let expect = times(&whole, 0, 1, end);
        let mut union = Vec::new();
        for i in 0..shards {
            let part = whole.clone().split(Shard::new(i, shards).unwrap());
            let mut mine = Vec::new();
            for j in 0..threads {
                mine.extend(times(&part, j, threads, end));
            }
            assert_eq!(mine.len() as u64, part.intended_in(0, end), "shard {i}");
            union.extend(mine);
        }
        union.sort_unstable();
        assert_eq!(union, expect);
    }

    #[test]
    fn shards_add_up_to_the_whole_schedule() {
        union_is_whole(Load::constant(997.0), 3, 2);
        union_is_whole(Load::constant(5.0), 4, 3);
        let poisson = Process::new(
            Profile::constant(800.0),
            Spacing::Poisson { seed: 7 },
            2 * S,
        );
        union_is_whole(Load::Open(Arc::new(poisson)), 3, 2);
        let ramp = Profile::new(vec![super::super::Phase {
            label: "100-900:2s".into(),
            length: 2 * S,
            from: 100.0,
            to: 900.0,
        }]);
        union_is_whole(
            Load::Open(Arc::new(Process::new(ramp, Spacing::Even, 2 * S))),
            5,
            1,
        );
    }

    #[test]
    fn a_shard_sends_its_part_of_the_rate() {
        let part = Load::constant(3000.0).split(Shard::new(2, 3).unwrap());
        assert_eq!(part.rate(), Some(1000.0));
        assert_eq!(part.shard(), Shard::new(2, 3).unwrap());
        // Requests 2, 5, 8, …: the first at 2/3000 s.
        assert_eq!(times(&part, 0, 1, S)[0], 666_667);
        let mut whole = ConstantRate::new(3000.0);
        assert_eq!(times(&part, 0, 1, S)[1], whole.time_of(5));
    }

    #[test]
    fn lanes_of_a_shard_are_lanes_of_the_run() {
        let s = Shard::new(1, 3).unwrap();
        assert_eq!(s.lane(0, 2), (1, 6));
        assert_eq!(s.lane(1, 2), (4, 6));
        assert_eq!(Shard::WHOLE.lane(1, 2), (1, 2));
        assert!(Shard::new(3, 3).is_none() && Shard::new(0, 0).is_none());
        assert_eq!(
            (0..10).filter(|k| k % 3 == 1).count() as u64,
            s.owned_of(10)
        );
    }
}
