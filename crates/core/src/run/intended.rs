//! The requests the schedule intended in each interval, for the outputs
//! that set them beside what completed (the document's series, the CSV
//! rows, the dashboard).

use std::time::Duration;

use crate::clock;
use crate::engine::Setup;
use crate::schedule::Share;

/// Counts the requests the schedule intended in intervals of the measured
/// window, one after another.
pub struct Intended {
    counter: Option<Share>,
    warmup: Duration,
}

impl Intended {
    pub fn new(run: &Setup) -> Intended {
        Intended {
            counter: run.load.counter(),
            warmup: run.warmup,
        }
    }

    /// Whether the run has a schedule (rate mode), so counts to give.
    pub fn is_paced(&self) -> bool {
        self.counter.is_some()
    }

    /// Requests intended in `[start, start + length)` of the window; none
    /// in the closed loop.
    pub fn count(&mut self, start: Duration, length: Duration) -> Option<u64> {
        let counter = self.counter.as_mut()?;
        let from = self.warmup + start;
        Some(counter.count_in(clock::nanos(from), clock::nanos(from + length)))
    }
}
