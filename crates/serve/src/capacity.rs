//! `--capacity RPS`: a server that can answer at most RPS requests per
//! second, for load generators (and `metron sweep`) to find that limit.
//!
//! The model is one FIFO queue in front of one worker with a fixed service
//! time of 1/RPS, shared by every connection, every server thread and both
//! protocols. Below RPS a request waits only its own service time; above
//! it the queue, and with it latency, grows without bound. That is a
//! ground truth a capacity search can be checked against, so it is kept
//! exact and simple: a virtual clock, [`Queue`], holding when the worker
//! is next free. A request read at `now` completes at
//! `max(now, next_free) + 1/RPS`, which becomes the new `next_free`, and
//! its response is held until then. Completions are therefore at least
//! one service time apart, in the order the requests were read.
//!
//! A stall stops the worker too: no service progresses during one, so
//! what piled up is answered at RPS after it ends, not all at once.
//! Everything else (`--delay`, `/delay/MS`, faults) happens to a request
//! after its service: a delay lengthens its latency but not the queue.
//!
//! Times are offsets from the server's start, in nanoseconds in one
//! atomic, so bookings from any thread need no lock. A response waits on
//! the runtime's timer, whose resolution is 1 ms: it never leaves before
//! its service is over, but may leave up to about a millisecond after, and
//! responses due within the same millisecond leave together. So the rate
//! holds exactly over any window of a few milliseconds (and over any
//! number of responses: the last of N read at once leaves no sooner than
//! N/RPS later), not within a single millisecond.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use super::plan::StallPlan;

/// Requests per second a server answers at most (`--capacity`): always a
/// finite number above zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Capacity(f64);

// Never NaN: `new` refuses it.
impl Eq for Capacity {}

impl Capacity {
    pub fn new(rps: f64) -> Result<Capacity, String> {
        if rps.is_finite() && rps > 0.0 {
            Ok(Capacity(rps))
        } else {
            Err(format!(
                "--capacity must be a number of requests per second above 0 \
                 (e.g. 1000 or 4k), not {rps}"
            ))
        }
    }

    /// Requests per second.
    pub fn rps(self) -> f64 {
        self.0
    }

    /// How long one request occupies the server: 1/RPS, rounded up to
    /// the nanosecond so that the server is never faster than RPS (and at
    /// least 1 ns; at most about 584 years).
    pub fn service_time(self) -> Duration {
        let nanos = (1e9 / self.0).ceil();
        // `as` saturates: a vanishing rate gives the longest service.
        Duration::from_nanos((nanos as u64).max(1))
    }
}

/// The server's one queue: when its worker is next free.
#[derive(Debug)]
pub(crate) struct Queue {
    service: Duration,
    stall: Option<StallPlan>,
    /// Offset from the server's start at which the last booked request
    /// completes, in nanoseconds.
    next_free: AtomicU64,
}

impl Queue {
    /// An idle queue serving at `capacity`, whose worker stops during the
    /// stalls of `stall`.
    pub(crate) fn new(capacity: Capacity, stall: Option<StallPlan>) -> Queue {
        Queue {
            service: capacity.service_time(),
            stall,
            next_free: AtomicU64::new(0),
        }
    }

    /// Puts a request read at `now` (an offset from the server's start) at
    /// the back of the queue; returns the offset at which its service
    /// completes.
    pub(crate) fn book(&self, now: Duration) -> Duration {
        let now = saturating_nanos(now);
        let mut done = 0;
        // The closure returns Some, so the update always succeeds; it may
        // run again if another booking came in between.
        let _ = self.next_free.fetch_update(Relaxed, Relaxed, |free| {
            let start = Duration::from_nanos(now.max(free));
            done = saturating_nanos(finish(start, self.service, self.stall.as_ref()));
            Some(done)
        });
        Duration::from_nanos(done)
    }
}

/// When `work` of service that may begin at `start` completes, none of it
/// being done during a stall of `stall`.
fn finish(start: Duration, work: Duration, stall: Option<&StallPlan>) -> Duration {
    let Some(plan) = stall else {
        return start.saturating_add(work);
    };
    let mut at = plan.stall_end(start).unwrap_or(start);
    let mut left = work;
    // Each turn either finishes or passes one stall and then every whole
    // period the work spans, so a periodic plan is done by the third turn.
    for _ in 0..4 {
        let Some(next) = plan.next_start(at) else {
            break;
        };
        let gap = next.saturating_sub(at);
        if left <= gap {
            break;
        }
        left -= gap;
        at = next.saturating_add(plan.length());
        if let Some(every) = plan.every() {
            // Each whole period lends `every - length` of work; keep the
            // last (partial or whole) one for the next turn.
            let busy = (every - plan.length()).as_nanos();
            let periods = (left.as_nanos() - 1) / busy;
            let skipped = periods.saturating_mul(every.as_nanos());
            at = at.saturating_add(capped(skipped));
            left -= capped(periods * busy);
        }
    }
    at.saturating_add(left)
}

/// Nanoseconds of `d`, at most `u64::MAX` (about 584 years).
fn saturating_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A Duration of `n` nanoseconds, at most `u64::MAX` of them.
fn capped(n: u128) -> Duration {
    Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn queue(rps: f64) -> Queue {
        Queue::new(Capacity::new(rps).unwrap(), None)
    }

    #[test]
    fn only_rates_above_zero_are_capacities() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = Capacity::new(bad).unwrap_err();
            assert!(err.starts_with("--capacity must be"), "{err}");
        }
        assert_eq!(Capacity::new(4000.0).unwrap().rps(), 4000.0);
    }

    #[test]
    fn the_service_time_is_never_shorter_than_one_over_rps() {
        let service = |rps: f64| Capacity::new(rps).unwrap().service_time();
        assert_eq!(service(1000.0), ms(1));
        assert_eq!(service(4000.0), Duration::from_micros(250));
        assert_eq!(service(0.5), Duration::from_secs(2));
        // 1/3 s rounds up, so three take a hair over a second.
        assert_eq!(service(3.0), Duration::from_nanos(333_333_334));
        assert_eq!(service(1e12), Duration::from_nanos(1));
        assert_eq!(service(1e-30), Duration::from_nanos(u64::MAX));
    }

    #[test]
    fn an_idle_server_takes_one_service_time() {
        let q = queue(1000.0);
        assert_eq!(q.book(ms(5)), ms(6));
        // Idle again by 10 ms: the gap is not saved up for later.
        assert_eq!(q.book(ms(10)), ms(11));
        assert_eq!(q.book(ms(100)), ms(101));
    }

    #[test]
    fn requests_read_together_complete_one_service_time_apart_in_order() {
        let q = queue(1000.0);
        let done: Vec<_> = (0..5).map(|_| q.book(ms(10))).collect();
        assert_eq!(done, [ms(11), ms(12), ms(13), ms(14), ms(15)]);
        // A later arrival waits behind all of them.
        assert_eq!(q.book(ms(12)), ms(16));
        // One read a little earlier, but booked after, is still behind.
        assert_eq!(q.book(ms(9)), ms(17));
    }

    #[test]
    fn above_capacity_the_wait_grows_without_bound() {
        // Arrivals at 2000/s against 1000/s: each waits 0.5 ms longer.
        let q = queue(1000.0);
        let waits: Vec<_> = (0..1000u64)
            .map(|i| {
                let now = Duration::from_micros(500 * i);
                q.book(now) - now
            })
            .collect();
        assert_eq!(waits[0], ms(1));
        assert!(waits.windows(2).all(|w| w[1] > w[0]));
        assert_eq!(waits[999], ms(1) + Duration::from_micros(500 * 999));
    }

    #[test]
    fn below_capacity_the_wait_stays_flat() {
        let q = queue(1000.0);
        for i in 0..1000u64 {
            let now = Duration::from_micros(1500 * i);
            assert_eq!(q.book(now) - now, ms(1), "request {i}");
        }
    }

    #[test]
    fn no_window_sees_more_than_its_share() {
        // Bursts, idle gaps and a steady overload: any window of W holds at
        // most W/service + 1 completions.
        let q = queue(1000.0);
        let mut done = Vec::new();
        for i in 0..3000u64 {
            let now = match i {
                0..=499 => ms(0),
                500..=999 => ms(2000),
                _ => Duration::from_micros(3000 * 1000 + 300 * i),
            };
            done.push(q.book(now));
        }
        assert!(done.windows(2).all(|w| w[1] - w[0] >= ms(1)));
        for window in [ms(1), ms(5), ms(100)] {
            let most = (window.as_nanos() / ms(1).as_nanos()) as usize + 1;
            for (i, start) in done.iter().enumerate() {
                let within = done[i..].iter().take_while(|d| **d < *start + window);
                assert!(within.count() <= most, "{window:?} from {start:?}");
            }
        }
    }

    #[test]
    fn bookings_from_many_threads_never_share_a_slot() {
        let q = std::sync::Arc::new(queue(1000.0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let q = std::sync::Arc::clone(&q);
                std::thread::spawn(move || (0..250).map(|_| q.book(ms(0))).collect::<Vec<_>>())
            })
            .collect();
        let mut done: Vec<_> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        done.sort();
        let want: Vec<_> = (1..=1000).map(ms).collect();
        assert_eq!(done, want);
    }

    #[test]
    fn no_service_happens_during_a_stall() {
        let stall = StallPlan::once(ms(100), ms(50)).unwrap();
        let q = Queue::new(Capacity::new(100.0).unwrap(), Some(stall));
        // Read during the stall: served after it ends.
        assert_eq!(q.book(ms(120)), ms(160));
        assert_eq!(q.book(ms(120)), ms(170));
        // Work that would run into a stall is paused by it.
        let q = Queue::new(Capacity::new(100.0).unwrap(), Some(stall));
        assert_eq!(q.book(ms(95)), ms(155));
        // Work that ends just as the stall begins is done then.
        let q = Queue::new(Capacity::new(100.0).unwrap(), Some(stall));
        assert_eq!(q.book(ms(90)), ms(100));
        // After a single stall, nothing stops the worker.
        assert_eq!(q.book(ms(200)), ms(210));
    }

    #[test]
    fn long_work_skips_every_periodic_stall_it_spans() {
        // A stall of 20 ms every 100 ms (the first at 100 ms), and 1 s of
        // work from 0: 100 ms before the first stall, then 80 ms a period
        // for 11.25 periods.
        let plan = StallPlan::periodic(ms(100), ms(20), None).unwrap();
        assert_eq!(finish(ms(0), ms(1000), Some(&plan)), ms(1240));
        // Exactly whole periods end as the next stall begins.
        assert_eq!(finish(ms(20), ms(800), Some(&plan)), ms(1000));
        // Step by step gives the same.
        let mut at = ms(0);
        for _ in 0..100 {
            at = finish(at, ms(10), Some(&plan));
        }
        assert_eq!(at, ms(1240));
        // Huge offsets saturate instead of overflowing.
        let far = finish(
            Duration::from_secs(u64::MAX / 2),
            Duration::MAX,
            Some(&plan),
        );
        assert!(far >= Duration::from_secs(u64::MAX / 2));
    }
}
