//! What the main thread learns while the run is on: each worker publishes
//! its running totals a few times a second (from its periodic sweep, never
//! per request), for the progress line, and with `--thread-timeseries` its
//! completions in every interval that has closed since it last published,
//! and when whole intervals are wanted as they close (the interval log
//! written as the run goes), its part of each. The main thread reads them
//! while it waits for the run to end.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use crate::clock::{self, Nanos};
use crate::stats::interval::{self, EncodedInterval};
use crate::stats::{IntervalStats, Row, ThreadStats};

/// How often a worker publishes.
pub const PUBLISH_EVERY: Nanos = 250_000_000;

/// One slot of running totals per worker thread.
pub struct Board {
    slots: Vec<Slot>,
    /// Interval length of the per-thread rows, when they are wanted.
    rows_every: Option<Duration>,
    /// Interval length of the statistics, when whole intervals are wanted
    /// as they close.
    intervals_every: Option<Duration>,
    /// Whole intervals handed to the main thread so far.
    merged: Mutex<u64>,
    /// The measured window (start, end) once the run has started; until
    /// then no interval has closed.
    from: AtomicU64,
    end: AtomicU64,
}

#[derive(Default)]
struct Slot {
    completed: AtomicU64,
    errors: AtomicU64,
    p99_us: AtomicU64,
    in_flight: AtomicU64,
    waiting: AtomicU64,
    /// Taken by the worker a few times a second and by the main thread as
    /// often, never per request.
    rows: Mutex<Rows>,
    /// The thread's parts of the intervals that have closed, not yet
    /// merged by the main thread.
    intervals: Mutex<Parts>,
}

/// A thread's parts of closed intervals.
#[derive(Default)]
struct Parts {
    /// Every interval below this one has closed in this thread.
    below: u64,
    waiting: Vec<EncodedInterval>,
}

/// A thread's closed intervals: how many it has published, and the counts
/// the main thread has not taken yet.
#[derive(Default)]
struct Rows {
    closed: usize,
    waiting: Vec<u64>,
}

/// The sum over all threads at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    pub completed: u64,
    pub errors: u64,
    /// The highest of the threads' 99th percentiles so far: an upper bound
    /// of the run's, and close to it when threads share the load evenly.
    pub p99_us: u64,
    /// Requests sent and not answered yet.
    pub in_flight: u64,
    /// Requests of the measured window due and not sent yet (waiting for
    /// a connection or a stream): never sent, if the run ended now.
    pub waiting: u64,
}

impl Board {
    /// A board for `threads` workers; with `rows_every`, they also publish
    /// their completions per interval of that length.
    pub fn new(threads: usize, rows_every: Option<Duration>) -> Board {
        Board {
            slots: (0..threads).map(|_| Slot::default()).collect(),
            rows_every,
            intervals_every: None,
            merged: Mutex::new(0),
            from: AtomicU64::new(0),
            end: AtomicU64::new(0),
        }
    }

    /// Workers also publish their parts of the intervals of `every` (the
    /// statistics' interval) as those close.
    pub fn with_intervals(mut self, every: Option<Duration>) -> Board {
        self.intervals_every = every;
        self
    }

    /// The interval below which every interval has closed at `now`, when
    /// workers are to publish their parts (see [`Board::publish_intervals`]).
    pub fn intervals_below(&self, now: Nanos) -> Option<u64> {
        let step = self.intervals_every?;
        Some(self.closed(now, step) as u64)
    }

    /// Called by worker `thread`: its parts of the intervals below `below`
    /// that closed since it last published.
    pub fn publish_intervals(&self, thread: usize, parts: Vec<EncodedInterval>, below: u64) {
        let Some(slot) = self.slots.get(thread) else {
            return;
        };
        let mut p = lock(&slot.intervals);
        p.waiting.extend(parts);
        p.below = p.below.max(below);
    }

    /// The whole intervals that every thread has closed since the last
    /// call, each merged over the threads and given to `each` in turn,
    /// oldest first (one decoded interval at a time, however many closed).
    /// The window's last interval is never among them: it closes with the
    /// run (see [`Board::closed`]), and [`interval::merged`] gives it then.
    pub fn take_intervals(&self, each: &mut dyn FnMut(&IntervalStats)) {
        let Some(step) = self.intervals_every else {
            return;
        };
        let mut merged = lock(&self.merged);
        let mut parts: Vec<_> = self.slots.iter().map(|s| lock(&s.intervals)).collect();
        let below = parts.iter().map(|p| p.below).min().unwrap_or(0);
        let mut out = None::<IntervalStats>;
        let mut mine = Vec::new();
        for index in *merged..below {
            mine.clear();
            for p in parts.iter_mut() {
                let n = p.waiting.partition_point(|e| e.index <= index);
                mine.extend(p.waiting.drain(..n));
            }
            let out = out.get_or_insert_with(|| IntervalStats::empty(index, step));
            interval::merge_one(out, index, step, mine.iter());
            each(out);
        }
        *merged = (*merged).max(below);
    }

    /// Once the workers have exited: thread `thread`'s parts of intervals
    /// that not every thread had published, oldest first, to be merged
    /// with the rest of the thread's intervals.
    pub fn take_parts(&self, thread: usize) -> Vec<EncodedInterval> {
        self.slots
            .get(thread)
            .map(|s| std::mem::take(&mut lock(&s.intervals).waiting))
            .unwrap_or_default()
    }

    /// How many whole intervals [`Board::take_intervals`] has handed out.
    pub fn intervals_taken(&self) -> u64 {
        *lock(&self.merged)
    }

    /// The measured window, set before the workers start.
    pub fn start(&self, measure_from: Nanos, end: Nanos) {
        self.from.store(measure_from, Relaxed);
        self.end.store(end, Relaxed);
    }

    /// Called by worker `thread` itself, from its loop.
    pub fn publish(&self, thread: usize, stats: &ThreadStats) {
        self.publish_at(thread, stats, clock::now());
    }

    fn publish_at(&self, thread: usize, stats: &ThreadStats, now: Nanos) {
        let Some(slot) = self.slots.get(thread) else {
            return;
        };
        let c = &stats.counters;
        slot.completed.store(c.completed, Relaxed);
        slot.errors
            .store(c.errors.lost_requests() + c.errors.status, Relaxed);
        slot.p99_us
            .store(stats.latency.value_at_quantile(0.99), Relaxed);
        if let Some(step) = self.rows_every {
            let closed = self.closed(now, step);
            let mut rows = lock(&slot.rows);
            for i in rows.closed..closed {
                rows.waiting.push(stats.completions_in(i, step));
            }
            rows.closed = rows.closed.max(closed);
        }
    }

    /// Called by worker `thread`: its requests on the wire and those due
    /// and waiting to be sent.
    pub fn publish_outstanding(&self, thread: usize, in_flight: u64, waiting: u64) {
        if let Some(slot) = self.slots.get(thread) {
            slot.in_flight.store(in_flight, Relaxed);
            slot.waiting.store(waiting, Relaxed);
        }
    }

    /// How many intervals of `step` can no longer change at `now`. `now`
    /// is read on the worker's own thread, and the worker files each
    /// completion at a clock reading taken later, clamped into the window
    /// (see the worker's `Window::offset`): so every later completion falls
    /// at or after `now`'s place in the window, never in an interval that
    /// ended before it.
    fn closed(&self, now: Nanos, step: Duration) -> usize {
        let (from, end) = (self.from.load(Relaxed), self.end.load(Relaxed));
        if end <= from || now <= from {
            return 0;
        }
        let at = now.min(end - 1) - from;
        (u128::from(at) / step.as_nanos().max(1)) as usize
    }

    pub fn totals(&self) -> Totals {
        self.slots.iter().fold(Totals::default(), |t, s| Totals {
            completed: t.completed + s.completed.load(Relaxed),
            errors: t.errors + s.errors.load(Relaxed),
            p99_us: t.p99_us.max(s.p99_us.load(Relaxed)),
            in_flight: t.in_flight + s.in_flight.load(Relaxed),
            waiting: t.waiting + s.waiting.load(Relaxed),
        })
    }

    /// The rows published since the last call, by interval, then thread.
    pub fn take_rows(&self) -> Vec<Row> {
        let mut out = Vec::new();
        for (thread, slot) in self.slots.iter().enumerate() {
            let mut rows = lock(&slot.rows);
            let first = rows.closed - rows.waiting.len();
            out.extend(rows.waiting.drain(..).enumerate().map(|(k, n)| Row {
                thread,
                interval: first + k,
                completed: n,
            }));
        }
        out.sort_by_key(|r| (r.interval, r.thread));
        out
    }

    /// Once the run is over: the rows not yet taken and every interval not
    /// yet published (the last, cut short by the run's end, included), from
    /// the threads' final statistics. With what was taken before, each
    /// thread's rows then add up to its completed requests.
    pub fn finish(&self, threads: &[ThreadStats], window: Duration) -> Vec<Row> {
        let Some(step) = self.rows_every else {
            return Vec::new();
        };
        let mut out = self.take_rows();
        for (thread, (slot, stats)) in self.slots.iter().zip(threads).enumerate() {
            let mut rows = lock(&slot.rows);
            let last = stats.intervals_spanned(step, window).max(rows.closed);
            out.extend((rows.closed..last).map(|i| Row {
                thread,
                interval: i,
                completed: stats.completions_in(i, step),
            }));
            rows.closed = last;
        }
        out.sort_by_key(|r| (r.interval, r.thread));
        out
    }
}

/// A poisoned lock only means a thread panicked while holding it; what it
/// guards is still whole (each update is a push, then a store).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SERIES_STEP;

    #[test]
    fn totals_add_threads_and_bound_the_percentile() {
        let board = Board::new(2, None);
        let mut a = ThreadStats::default();
        a.counters.completed = 10;
        a.latency.record(100).unwrap();
        let mut b = ThreadStats::default();
        b.counters.completed = 5;
        b.counters.errors.timeout = 1;
        b.latency.record(900).unwrap();
        board.publish(0, &a);
        board.publish(1, &b);
        board.publish(7, &b); // no such thread: ignored
        board.publish_outstanding(0, 3, 5);
        board.publish_outstanding(1, 2, 0);
        board.publish_outstanding(7, 100, 100);
        let t = board.totals();
        assert_eq!((t.completed, t.errors), (15, 1));
        assert_eq!((t.in_flight, t.waiting), (5, 5));
        assert!((899..=901).contains(&t.p99_us), "{t:?}");
        assert!(board.take_rows().is_empty());
    }

    /// A thread with `per_step` completions in each of `steps` 10 ms steps.
    fn busy(steps: usize, per_step: u32) -> ThreadStats {
        let mut s = ThreadStats {
            series: crate::stats::Completions::of_steps(&vec![per_step; steps]),
            ..ThreadStats::default()
        };
        s.counters.completed = steps as u64 * u64::from(per_step);
        s
    }

    /// Whole intervals come out once every thread has closed them, each
    /// once, merged over the threads.
    #[test]
    fn intervals_come_out_when_every_thread_has_closed_them() {
        use crate::stats::interval::IntervalRecorder;
        let step = Duration::from_millis(100);
        let board = Board::new(2, None).with_intervals(Some(step));
        let ms = 1_000_000;
        let mut threads = [IntervalRecorder::new(step), IntervalRecorder::new(step)];
        for (t, r) in threads.iter_mut().enumerate() {
            for at in [10, 120, 230] {
                let iv = r.at(at * ms);
                iv.completed += 1 + t as u64;
                iv.latency.record(at).unwrap();
            }
        }
        // Thread 0 has closed [0, 300 ms), thread 1 only [0, 100 ms).
        board.publish_intervals(0, threads[0].take_closed(300 * ms, 3), 3);
        board.publish_intervals(1, threads[1].take_closed(150 * ms, 1), 1);
        let first = taken(&board);
        assert_eq!(first.len(), 1);
        assert_eq!((first[0].index, first[0].completed), (0, 3));
        assert_eq!(first[0].latency.len(), 2);
        assert!(taken(&board).is_empty());
        board.publish_intervals(1, threads[1].take_closed(300 * ms, 3), 3);
        let rest = taken(&board);
        let got: Vec<(u64, u64)> = rest.iter().map(|i| (i.index, i.completed)).collect();
        assert_eq!(got, [(1, 3), (2, 3)]);
        assert_eq!(board.intervals_taken(), 3);
    }

    fn taken(board: &Board) -> Vec<IntervalStats> {
        let mut out = Vec::new();
        board.take_intervals(&mut |iv| out.push(iv.clone()));
        out
    }

    #[test]
    fn closed_intervals_are_those_wholly_before_now_within_the_window() {
        let step = Duration::from_millis(250);
        let board = Board::new(1, Some(step));
        assert_eq!(board.closed(5_000_000_000, step), 0, "not started");
        let from = 1_000_000_000;
        board.start(from, from + 1_000_000_000);
        assert_eq!(board.closed(from - 1, step), 0);
        assert_eq!(board.closed(from + 249_999_999, step), 0);
        assert_eq!(board.closed(from + 250_000_000, step), 1);
        assert_eq!(board.closed(from + 999_999_999, step), 3);
        // Past the end the last interval stays open: completions read
        // then are filed in the window's last moment.
        assert_eq!(board.closed(from + 5_000_000_000, step), 3);
    }

    #[test]
    fn rows_come_once_each_and_add_up_to_the_completed_requests() {
        let step = Duration::from_millis(250);
        let per = (step.as_nanos() / SERIES_STEP.as_nanos()) as usize;
        let board = Board::new(2, Some(step));
        // Two and a half intervals into the window: two have closed.
        let (from, now) = (1_000_000_000, 1_625_000_000);
        board.start(from, from + 10_000_000_000);
        board.publish_at(0, &busy(2 * per + 3, 2), now);
        board.publish_at(1, &busy(2 * per + 3, 1), now);
        let rows = board.take_rows();
        let want = |thread, interval, completed| Row {
            thread,
            interval,
            completed,
        };
        assert_eq!(
            rows,
            vec![
                want(0, 0, 50),
                want(1, 0, 25),
                want(0, 1, 50),
                want(1, 1, 25),
            ]
        );
        assert!(board.take_rows().is_empty(), "taken once");
        // The run ends 0.7 s into the window: the rest, the cut-short
        // third interval included.
        let (a, b) = (busy(70, 2), busy(70, 1));
        let rest = board.finish(&[a.clone(), b.clone()], Duration::from_millis(700));
        assert_eq!(
            rest,
            vec![want(0, 2, 40), want(1, 2, 20)],
            "only what was not printed"
        );
        let sum = |t: usize| -> u64 {
            let all = rows.iter().chain(&rest);
            all.filter(|r| r.thread == t).map(|r| r.completed).sum()
        };
        assert_eq!(sum(0), a.counters.completed);
        assert_eq!(sum(1), b.counters.completed);
    }
}
