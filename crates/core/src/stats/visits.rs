//! Visits of a flow (`flow(visit)`): their own ledger and durations, beside
//! the requests' (each step is also a request, counted as requests are).
//!
//! A visit is measured when its scheduled start lies in the measured
//! window. Its ledger holds as the requests' does:
//! `due = completed + failed + in flight + never started`, where `due` is
//! every measured visit the schedule asked for (in the closed loop, every
//! one started: nothing is scheduled ahead).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::{add_histogram, new_histogram, record_clamped};

/// At most this many failure reasons are reported apart, the most
/// frequent; the rest are "other".
pub const MAX_REASONS: usize = 64;

/// A thread tells apart this many reasons before it counts new ones as
/// "other": enough that the run's most frequent are whole whatever order
/// they came in, few enough to bound its memory.
const KEPT_REASONS: usize = 16 * MAX_REASONS;

/// The reason of failures folded together.
const OTHER: &str = "other";

/// One thread's (or, merged, the run's) visits.
#[derive(Clone, Debug)]
pub struct VisitStats {
    pub started: u64,
    /// The flow returned.
    pub completed: u64,
    /// `visit:fail(reason)`, by reason.
    pub failed: BTreeMap<String, u64>,
    /// Started, not ended when the run stopped (waiting for an answer, a
    /// connection, or resting).
    pub in_flight: u64,
    /// Scheduled in the window, never started: no connection took their
    /// first step before the run ended.
    pub never_started: u64,
    /// Completed visits: scheduled start → end of the last step (or of a
    /// closing rest), µs.
    pub duration: Histogram<u64>,
    /// Lower bounds of the unfinished visits' durations: their ages when
    /// the run stopped (in flight or never started), µs.
    pub unfinished: Histogram<u64>,
}

impl Default for VisitStats {
    fn default() -> Self {
        VisitStats {
            started: 0,
            completed: 0,
            failed: BTreeMap::new(),
            in_flight: 0,
            never_started: 0,
            duration: new_histogram(),
            unfinished: new_histogram(),
        }
    }
}

impl VisitStats {
    /// Every measured visit the schedule asked for.
    pub fn due(&self) -> u64 {
        self.started + self.never_started
    }

    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// Started visits are completed, failed or in flight, each once.
    pub fn balanced(&self) -> bool {
        self.started == self.completed + self.failed_total() + self.in_flight
    }

    pub fn complete(&mut self, us: u64) {
        self.completed += 1;
        record_clamped(&mut self.duration, us);
    }

    pub fn fail(&mut self, reason: &str) {
        let reason = if self.failed.len() >= KEPT_REASONS && !self.failed.contains_key(reason) {
            OTHER
        } else {
            reason
        };
        match self.failed.get_mut(reason) {
            Some(n) => *n += 1,
            None => {
                self.failed.insert(reason.to_owned(), 1);
            }
        }
    }

    /// A visit unfinished at the end, `age_us` old.
    pub fn unfinished_at(&mut self, age_us: u64) {
        record_clamped(&mut self.unfinished, age_us);
    }

    /// Keeps the [`MAX_REASONS`] most frequent reasons (ties by name) and
    /// counts the rest as "other": once the threads' (or the shards')
    /// visits are added up, before they are reported.
    pub fn fold_reasons(&mut self) {
        let named = self.failed.len() - usize::from(self.failed.contains_key(OTHER));
        if named <= MAX_REASONS {
            return;
        }
        let before = self.failed.get(OTHER).copied().unwrap_or(0);
        let mut by_count: Vec<(String, u64)> = std::mem::take(&mut self.failed)
            .into_iter()
            .filter(|(r, _)| r != OTHER)
            .collect();
        by_count.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let other: u64 = by_count[MAX_REASONS..].iter().map(|(_, n)| n).sum();
        by_count.truncate(MAX_REASONS);
        self.failed = by_count.into_iter().collect();
        self.failed.insert(OTHER.to_owned(), before + other);
    }

    pub fn add(&mut self, other: &VisitStats) {
        self.started += other.started;
        self.completed += other.completed;
        for (reason, n) in &other.failed {
            *self.failed.entry(reason.clone()).or_default() += n;
        }
        self.in_flight += other.in_flight;
        self.never_started += other.never_started;
        add_histogram(&mut self.duration, &other.duration);
        add_histogram(&mut self.unfinished, &other.unfinished);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_balances_and_merges() {
        let mut a = VisitStats {
            started: 3,
            in_flight: 1,
            never_started: 2,
            ..Default::default()
        };
        a.complete(1_000);
        a.fail("login 401");
        assert!(a.balanced());
        let mut b = a.clone();
        b.fail("login 401");
        b.started += 1;
        b.add(&a);
        assert_eq!(
            (b.started, b.completed, b.failed_total(), b.due()),
            (7, 2, 3, 11)
        );
        assert_eq!(b.failed["login 401"], 3);
        assert!(b.balanced());
    }

    /// The most frequent reasons are reported whole, whichever thread met
    /// them and in whatever order; the rest are "other".
    #[test]
    fn the_most_frequent_reasons_are_kept_and_the_rest_are_other() {
        let mut a = VisitStats::default();
        let mut b = VisitStats::default();
        // Rare reasons first, on both threads; the common one after them.
        for i in 0..100 {
            a.fail(&format!("rare {i}"));
            b.fail(&format!("rare {}", 100 + i));
        }
        for _ in 0..50 {
            a.fail("common");
            b.fail("common");
        }
        b.fail("rare 0");
        let mut run = VisitStats::default();
        run.add(&a);
        run.add(&b);
        run.fold_reasons();
        assert_eq!(run.failed.len(), MAX_REASONS + 1);
        assert_eq!(run.failed["common"], 100);
        assert_eq!(run.failed["rare 0"], 2);
        assert_eq!(run.failed["other"], 200 - (MAX_REASONS as u64 - 2) - 1);
        assert_eq!(run.failed_total(), 301);
        // A thread bounds what it keeps apart.
        let mut v = VisitStats::default();
        for i in 0..KEPT_REASONS + 5 {
            v.fail(&format!("r{i}"));
        }
        assert_eq!(v.failed.len(), KEPT_REASONS + 1);
        assert_eq!(v.failed["other"], 5);
    }
}
