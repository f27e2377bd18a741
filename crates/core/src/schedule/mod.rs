//! The load: whether requests follow a schedule, and if so when each one
//! *should* go out.
//!
//! [`Load::Closed`] is wrk's closed loop: no schedule. [`Load::Open`] is
//! the open model of rate mode: one global sequence of intended times for
//! the whole run, given by an [`Arrivals`] process and independent of how
//! fast the server answers. The threads split it into lanes: with T
//! threads, thread j owns requests j, j+T, j+2T, … of the run (its
//! [`Share`]), so the threads interleave and the whole run follows the
//! process exactly, for any rate and any T (R < T included).
//!
//! An arrival process only says when request k is due. [`Process`] is the
//! one the command line builds: a rate over time ([`Profile`]: `-R`, or
//! holds and ramps) and how requests are spread under it ([`Spacing`]:
//! evenly, or as a Poisson process from a seed). Nothing else in the
//! engine or the reports looks inside one. Lanes are the same whatever
//! the process, so one sequence is equally split over several instances
//! ([`Shard`], `--shard I/N`): lane j of an instance's T threads is lane
//! I + N·j of N·T of the whole run.

mod constant;
mod poisson;
mod process;
mod profile;
mod shard;

use std::fmt;
use std::sync::Arc;

use crate::clock::Nanos;

pub use constant::{ConstantRate, MAX_RATE};
pub use process::{Arrival, Process, Spacing};
pub use profile::{Phase, Profile};
pub use shard::Shard;

/// When each request of a run is due.
pub trait Arrivals: fmt::Debug + Send + Sync {
    /// A reader of the intended times, for one lane (one thread): it may
    /// keep what it last computed, so that reading forward is cheap.
    fn cursor(&self) -> Box<dyn Cursor>;

    /// Requests per second over the run on average: what `-R` asked for,
    /// the figure the reports and the JSON document quote.
    fn rate(&self) -> f64;

    /// The rate over time, when the process follows one (for the reports'
    /// phases and their intended-rate chart).
    fn profile(&self) -> Option<&Profile> {
        None
    }

    /// Which part of the whole run's schedule this is (`--shard`).
    fn shard(&self) -> Shard {
        Shard::WHOLE
    }

    /// How requests are spread under the rate: evenly, unless the
    /// process draws them at random.
    fn spacing(&self) -> Spacing {
        Spacing::Even
    }
}

/// Reads the intended times of an [`Arrivals`] process.
///
/// Times are nanoseconds after the run's start and never decrease in `k`,
/// which is what lets a thread count the requests due in any window with
/// a bounded search instead of walking the schedule.
pub trait Cursor: fmt::Debug + Send {
    /// The intended time of request `k` of the whole run (k = 0, 1, …).
    /// Never less than that of `k - 1`; a time past the end of time is
    /// `Nanos::MAX`, never a wrapped one.
    fn time_of(&mut self, k: u64) -> Nanos;

    /// How many requests are due before `t`: the smallest `k` whose time is
    /// at or after `t`. A process with a closed form may answer directly;
    /// the default searches in at most 128 calls of [`Cursor::time_of`].
    fn index_before(&mut self, t: Nanos) -> u64 {
        first_at_or_after(|k| self.time_of(k), 0, t)
    }

    /// A fresh reader of the same process.
    fn fork(&self) -> Box<dyn Cursor>;
}

/// How the requests of a run are paced.
#[derive(Clone, Debug)]
pub enum Load {
    /// Throughput mode: every connection sends its next request as soon as
    /// the previous response is complete (wrk's closed loop).
    Closed,
    /// Rate mode: requests are due at the times of an arrival process,
    /// whatever the server does.
    Open(Arc<dyn Arrivals>),
}

impl Load {
    /// `-R rate`: a constant total rate in requests per second.
    pub fn constant(rate: f64) -> Load {
        Load::Open(Arc::new(ConstantRate::new(rate)))
    }

    /// The load a rate describes: constant at `rate`, or the closed loop
    /// without one (the `-R` flag, the JSON document's `rate` field).
    pub fn from_rate(rate: Option<f64>) -> Load {
        rate.map_or(Load::Closed, Load::constant)
    }

    /// Whether requests follow a schedule (so that latency is corrected,
    /// send lag means something and requests can be due but never sent).
    pub fn is_open(&self) -> bool {
        matches!(self, Load::Open(_))
    }

    /// The rate this instance is asked for, in requests per second (the
    /// mean, under a profile; its part of `-R` under `--shard`); `None` in
    /// the closed loop.
    pub fn rate(&self) -> Option<f64> {
        match self {
            Load::Open(arrivals) => Some(arrivals.rate()),
            Load::Closed => None,
        }
    }

    /// The whole run's rate over time, when a profile gives one (under
    /// `--shard`, this instance sends [`Load::shard`]'s part of it).
    pub fn profile(&self) -> Option<&Profile> {
        match self {
            Load::Open(arrivals) => arrivals.profile(),
            Load::Closed => None,
        }
    }

    /// How requests are spread (`--arrival`, with its seed); `None` in
    /// the closed loop.
    pub fn spacing(&self) -> Option<Spacing> {
        match self {
            Load::Open(arrivals) => Some(arrivals.spacing()),
            Load::Closed => None,
        }
    }

    /// This instance's part of the load: of the whole schedule, the
    /// requests `shard` owns (the closed loop has no schedule to split).
    pub fn split(self, shard: Shard) -> Load {
        match self {
            Load::Open(whole) if !shard.is_whole() => {
                assert!(whole.shard().is_whole(), "a schedule is split once");
                Load::Open(Arc::new(shard::Sharded { whole, shard }))
            }
            load => load,
        }
    }

    /// Which part of the whole schedule this instance sends.
    pub fn shard(&self) -> Shard {
        match self {
            Load::Open(arrivals) => arrivals.shard(),
            Load::Closed => Shard::WHOLE,
        }
    }

    /// How lane `lane` of `lanes` sends in a run that starts at `t0`.
    pub fn plan(&self, t0: Nanos, lane: usize, lanes: usize) -> Plan {
        match self {
            Load::Open(arrivals) => Plan::Paced(Share::new(arrivals.as_ref(), t0, lane, lanes)),
            Load::Closed => Plan::Closed,
        }
    }

    /// Requests of this instance intended in `[from, end)` (ns from the
    /// run's start); none in the closed loop.
    pub fn intended_in(&self, from: Nanos, end: Nanos) -> u64 {
        self.counter().map_or(0, |mut s| s.count_in(from, end))
    }

    /// This instance's whole schedule from a start at 0, for counting
    /// requests intended in one window after another (its cursor moves
    /// forward, so counting later windows costs little); none in the
    /// closed loop.
    pub fn counter(&self) -> Option<Share> {
        match self {
            Load::Open(arrivals) => Some(Share::new(arrivals.as_ref(), 0, 0, 1)),
            Load::Closed => None,
        }
    }
}

/// How a worker decides when to send.
#[derive(Clone, Debug)]
pub enum Plan {
    /// Throughput mode: every connection sends its next request as soon as
    /// the previous response is complete (wrk's closed loop).
    Closed,
    /// Rate mode: requests are due at the times of this thread's share of
    /// the schedule.
    Paced(Share),
}

impl Plan {
    /// The run began late, at `t`: the times before it are passed over
    /// (see [`Share::skip_until`]).
    pub fn skip_until(&mut self, t: Nanos) {
        if let Plan::Paced(share) = self {
            share.skip_until(t);
        }
    }
}

/// One lane's requests of the global schedule, consumed in order: lane j
/// of T owns requests j, j+T, j+2T, … of the run.
#[derive(Debug)]
pub struct Share {
    times: Box<dyn Cursor>,
    t0: Nanos,
    lane: u64,
    lanes: u64,
    /// How many of this lane's times were consumed.
    taken: u64,
    /// Times before this were passed over unsent (a late start).
    missed_until: Nanos,
    /// The next intended time (absolute), computed once per advance.
    next: Nanos,
}

impl Clone for Share {
    fn clone(&self) -> Self {
        Share {
            times: self.times.fork(),
            ..*self
        }
    }
}

impl Share {
    /// Lane `lane` of `lanes` of `arrivals`, for a run starting at `t0`.
    pub fn new(arrivals: &dyn Arrivals, t0: Nanos, lane: usize, lanes: usize) -> Share {
        assert!(lanes > 0 && lane < lanes);
        let mut share = Share {
            times: arrivals.cursor(),
            t0,
            lane: lane as u64,
            lanes: lanes as u64,
            taken: 0,
            missed_until: 0,
            next: 0,
        };
        share.next = share.at(0);
        share
    }

    /// This lane's time number `m`, absolute and saturating.
    fn at(&mut self, m: u64) -> Nanos {
        let k = self.lane.saturating_add(m.saturating_mul(self.lanes));
        self.t0.saturating_add(self.times.time_of(k))
    }

    /// The next intended send time.
    #[inline]
    pub fn peek(&self) -> Nanos {
        self.next
    }

    /// Moves past the time `peek` returned.
    #[inline]
    pub fn advance(&mut self) {
        self.taken += 1;
        self.next = self.at(self.taken);
    }

    /// How many intended times were consumed so far.
    pub fn consumed(&self) -> u64 {
        self.taken
    }

    /// Passes over the times before `t` without sending them: they stay
    /// pending, so that [`Share::count_pending`] counts them at the end
    /// (due, never sent). For a run that starts after its zero.
    pub fn skip_until(&mut self, t: Nanos) {
        self.taken = self.taken.max(self.owned_before(t));
        self.next = self.at(self.taken);
        self.missed_until = self.missed_until.max(t);
    }

    /// Counts the intended times not sent in `[from, end)`: those passed
    /// over by [`Share::skip_until`], and those from the next one on;
    /// none is consumed. Bounded for any arrival process: a few counts
    /// of the run's requests due before a time.
    pub fn count_pending(&mut self, from: Nanos, end: Nanos) -> u64 {
        let missed = self.count_missed(from, end);
        let first = self.taken.max(self.owned_before(from));
        missed + self.owned_before(end).saturating_sub(first)
    }

    /// Of this lane's times in `[from, end)`, those passed over by
    /// [`Share::skip_until`].
    pub fn count_missed(&mut self, from: Nanos, end: Nanos) -> u64 {
        self.count_in(from, end.min(self.missed_until))
    }

    /// Number of this lane's intended times in `[from, end)`.
    pub fn count_in(&mut self, from: Nanos, end: Nanos) -> u64 {
        if from >= end {
            return 0;
        }
        self.owned_before(end)
            .saturating_sub(self.owned_before(from))
    }

    /// This lane's first time at or after `t` (taken or not).
    pub fn first_from(&mut self, t: Nanos) -> Nanos {
        let m = self.owned_before(t);
        self.at(m)
    }

    /// How many of this lane's times lie before `t`: of the run's first
    /// `n` requests (those due before `t`), the ones whose index is
    /// `lane` modulo `lanes`.
    fn owned_before(&mut self, t: Nanos) -> u64 {
        let n = self.times.index_before(t.saturating_sub(self.t0));
        shard::owned_of(n, self.lane, self.lanes)
    }
}

/// The smallest `k` at or after `lo` with `time(k) >= t`, for a `time`
/// that never decreases: a search that doubles its reach, then halves the
/// gap, so at most 128 probes whatever the process. An index of
/// `u64::MAX` stands for "never": past every request of any run.
pub(crate) fn first_at_or_after(mut time: impl FnMut(u64) -> Nanos, lo: u64, t: Nanos) -> u64 {
    if time(lo) >= t {
        return lo;
    }
    // Invariant: time(below) < t <= time(above).
    let (mut below, mut reach) = (lo, 1u64);
    let mut above = loop {
        let probe = below.saturating_add(reach);
        if probe == u64::MAX || time(probe) >= t {
            break probe;
        }
        below = probe;
        reach = reach.saturating_mul(2);
    };
    while above - below > 1 {
        let mid = below + (above - below) / 2;
        if time(mid) >= t {
            above = mid;
        } else {
            below = mid;
        }
    }
    above
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Thread `thread` of `threads` sharing a constant total `rate`
    /// (req/s) that starts at `t0`.
    fn constant(t0: Nanos, rate: f64, thread: usize, threads: usize) -> Share {
        Share::new(&ConstantRate::new(rate), t0, thread, threads)
    }

    fn times(mut a: Share, n: usize) -> Vec<Nanos> {
        (0..n)
            .map(|_| {
                let t = a.peek();
                a.advance();
                t
            })
            .collect()
    }

    /// The share's times from its next one up to `end` that are at or
    /// after `from`, counted one by one.
    fn walk_count(share: &Share, from: Nanos, end: Nanos) -> u64 {
        let mut walk = share.clone();
        let mut n = 0;
        while walk.peek() < end {
            n += u64::from(walk.peek() >= from);
            walk.advance();
        }
        n
    }

    #[test]
    fn threads_interleave_into_one_uniform_schedule() {
        let rate = 1000.0;
        let mut all: Vec<Nanos> = (0..3)
            .flat_map(|j| times(constant(0, rate, j, 3), 100))
            .collect();
        all.sort_unstable();
        for (i, t) in all.iter().enumerate() {
            assert_eq!(*t, i as u64 * 1_000_000, "request {i}");
        }
    }

    #[test]
    fn rate_below_thread_count_still_interleaves() {
        // 0.5 req/s over 4 threads: one request every 2 s overall.
        let mut all: Vec<Nanos> = (0..4)
            .flat_map(|j| times(constant(10, 0.5, j, 4), 3))
            .collect();
        all.sort_unstable();
        let expect: Vec<Nanos> = (0..12).map(|i| 10 + i * 2_000_000_000).collect();
        assert_eq!(all, expect);
    }

    #[test]
    fn counts_times_in_a_window() {
        let mut a = constant(0, 100.0, 1, 2); // 10 ms, 30 ms, 50 ms, ...
        assert_eq!(a.count_in(0, 1_000_000_000), 50);
        assert_eq!(a.count_in(20_000_000, 60_000_000), 2);
        let mut b = a.clone();
        b.advance();
        assert_eq!(b.count_pending(0, 60_000_000), 2);
    }

    /// Counting by walking every time took seconds at -R 1G and never
    /// ended where the times stopped advancing: a run stuck at its end.
    #[test]
    fn counts_are_exact_at_the_extremes_of_rate() {
        let day = 24 * 3600 * 1_000_000_000u64;
        let year = 365 * day;
        // The highest rate over a day: 8.6e13 times, counted at once.
        let mut a = constant(5, MAX_RATE, 0, 1);
        assert_eq!(a.count_in(5, 5 + day), day);
        // Over a year the times' indices pass 2^53, where f64 places
        // them to a few nanoseconds: the count is off by as little.
        let n = a.count_in(5, 5 + year);
        assert!(n.abs_diff(year) < 8, "{n}");
        // Two threads share it: each has every other nanosecond.
        let mut b = constant(0, MAX_RATE, 1, 2);
        assert_eq!(b.count_in(0, 1_000_001), 500_000);
        // A rate so low that only thread 0's first time is in the run; the
        // others' lie past the end of time and saturate there.
        let slow: Vec<u64> = (0..3)
            .map(|j| constant(7, 1e-30, j, 3).count_in(0, year))
            .collect();
        assert_eq!(slow, [1, 0, 0]);
        assert_eq!(constant(7, 1e-30, 2, 3).peek(), Nanos::MAX);
    }

    #[test]
    fn counting_agrees_with_walking() {
        for (rate, threads) in [(3.0, 1), (1000.0, 3), (7.5e6, 2), (0.7, 4)] {
            for j in 0..threads {
                let mut a = constant(11, rate, j, threads);
                for _ in 0..5 {
                    a.advance();
                }
                let (from, end) = (400_000_000, 2_300_000_000);
                let n = walk_count(&a, from, end);
                assert_eq!(a.count_pending(from, end), n, "{rate}/s, thread {j}");
            }
        }
    }

    /// A process that is not a constant rate: bursts of four requests at
    /// the same instant, one burst a millisecond. Times that repeat are
    /// counted exactly, lanes split the bursts, and counting uses only the
    /// trait's default search.
    #[derive(Debug)]
    struct Bursts;

    impl Arrivals for Bursts {
        fn cursor(&self) -> Box<dyn Cursor> {
            Box::new(Bursts)
        }
        fn rate(&self) -> f64 {
            4000.0
        }
    }

    impl Cursor for Bursts {
        fn time_of(&mut self, k: u64) -> Nanos {
            (k / 4).saturating_mul(1_000_000)
        }
        fn fork(&self) -> Box<dyn Cursor> {
            Box::new(Bursts)
        }
    }

    #[test]
    fn any_non_decreasing_process_is_counted_exactly() {
        let bursts: Arc<dyn Arrivals> = Arc::new(Bursts);
        let mut c = bursts.cursor();
        assert_eq!(c.index_before(0), 0);
        assert_eq!(c.index_before(1), 4);
        assert_eq!(c.index_before(1_000_000), 4);
        assert_eq!(c.index_before(1_000_001), 8);
        // The first time that saturates is the first past the end of time.
        let last_burst = Nanos::MAX / 1_000_000;
        assert_eq!(c.index_before(Nanos::MAX), (last_burst + 1) * 4);
        for lanes in 1..=5 {
            for lane in 0..lanes {
                let mut share = Share::new(bursts.as_ref(), 3, lane, lanes);
                let (from, end) = (2_000_003, 9_500_000);
                let n = walk_count(&share, from, end);
                assert_eq!(share.count_in(from, end), n, "lane {lane} of {lanes}");
            }
        }
    }

    #[test]
    fn the_load_says_what_it_is() {
        assert!(!Load::Closed.is_open());
        assert_eq!(Load::from_rate(None).rate(), None);
        let open = Load::from_rate(Some(2500.0));
        assert!(open.is_open());
        assert_eq!(open.rate(), Some(2500.0));
        assert!(matches!(Load::Closed.plan(0, 0, 1), Plan::Closed));
        assert!(matches!(open.plan(0, 1, 2), Plan::Paced(_)));
    }
}
