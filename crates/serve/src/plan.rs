//! The stall schedule: when the server stops writing, and for how long.
//!
//! A stall imitates a stopped process (a GC pause, a SIGSTOP, a saturated
//! host): the server writes no response byte until the stall ends, then
//! answers everything that piled up, in order. Load generators are judged by
//! how they report such pauses, so the windows must be exact and known in
//! advance: they are fixed offsets from the server's start, computed here
//! with plain arithmetic and no state, so every connection agrees on them.

use std::time::Duration;

/// When stalls happen, as offsets from the server's start.
///
/// One stall covers `[at, at + length)`; a periodic plan repeats it every
/// `every`: `[at + k·every, at + k·every + length)` for k = 0, 1, 2, …
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StallPlan {
    at: Duration,
    length: Duration,
    every: Option<Duration>,
}

impl StallPlan {
    /// A single stall over `[at, at + length)`.
    pub fn once(at: Duration, length: Duration) -> Result<StallPlan, String> {
        check_length(length)?;
        Ok(StallPlan {
            at,
            length,
            every: None,
        })
    }

    /// Stalls of `length` every `every`, the first at `at` (default: `every`,
    /// so that a run first sees the server healthy for one whole period).
    pub fn periodic(
        every: Duration,
        length: Duration,
        at: Option<Duration>,
    ) -> Result<StallPlan, String> {
        check_length(length)?;
        if length >= every {
            // Overlapping windows would be one endless stall.
            return Err(format!(
                "--stall-for ({length:?}) must be shorter than --stall-every ({every:?})"
            ));
        }
        Ok(StallPlan {
            at: at.unwrap_or(every),
            length,
            every: Some(every),
        })
    }

    /// The plan the three `--stall-*` flags describe, if any.
    pub fn from_flags(
        at: Option<Duration>,
        length: Option<Duration>,
        every: Option<Duration>,
    ) -> Result<Option<StallPlan>, String> {
        match (at, length, every) {
            (None, None, None) => Ok(None),
            (_, None, _) => Err("--stall-at and --stall-every need --stall-for \
                 (how long each stall lasts)"
                .to_string()),
            (None, Some(_), None) => Err("--stall-for needs --stall-at or --stall-every \
                 (when the stall happens)"
                .to_string()),
            (Some(at), Some(length), None) => StallPlan::once(at, length).map(Some),
            (at, Some(length), Some(every)) => StallPlan::periodic(every, length, at).map(Some),
        }
    }

    /// Offset of the first stall's start.
    pub fn at(&self) -> Duration {
        self.at
    }

    /// How long each stall lasts.
    pub fn length(&self) -> Duration {
        self.length
    }

    /// The period, for a repeating plan.
    pub fn every(&self) -> Option<Duration> {
        self.every
    }

    /// If `since_start` falls inside a stall, the offset at which it ends.
    pub fn stall_end(&self, since_start: Duration) -> Option<Duration> {
        let into = since_start.checked_sub(self.at)?;
        let phase = match self.every {
            None => into,
            // Nanosecond arithmetic in u128 cannot overflow for any Duration.
            Some(every) => nanos(into.as_nanos() % every.as_nanos()),
        };
        (phase < self.length).then(|| since_start.saturating_add(self.length - phase))
    }

    /// The offset of the first stall that starts at or after `since_start`,
    /// if there is one (and it is not past the range of a Duration).
    pub fn next_start(&self, since_start: Duration) -> Option<Duration> {
        let into = since_start.saturating_sub(self.at);
        if into.is_zero() {
            return Some(self.at);
        }
        let every = self.every?.as_nanos();
        // Whole periods from the first start, rounded up.
        let periods = into.as_nanos().div_ceil(every);
        let offset = periods.checked_mul(every)?;
        self.at.checked_add(checked_nanos(offset)?)
    }
}

fn check_length(length: Duration) -> Result<(), String> {
    if length.is_zero() {
        return Err("--stall-for must be longer than zero".to_string());
    }
    Ok(())
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// A Duration from a nanosecond count no larger than some Duration's.
fn nanos(n: u128) -> Duration {
    Duration::new((n / NANOS_PER_SEC) as u64, (n % NANOS_PER_SEC) as u32)
}

/// A Duration from a nanosecond count, if one can hold it.
fn checked_nanos(n: u128) -> Option<Duration> {
    let secs = u64::try_from(n / NANOS_PER_SEC).ok()?;
    Some(Duration::new(secs, (n % NANOS_PER_SEC) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_single_stall_covers_a_half_open_window() {
        let plan = StallPlan::once(ms(300), ms(500)).unwrap();
        assert_eq!(plan.stall_end(ms(0)), None);
        assert_eq!(plan.stall_end(ms(299)), None);
        assert_eq!(plan.stall_end(ms(300)), Some(ms(800)));
        assert_eq!(plan.stall_end(ms(400)), Some(ms(800)));
        assert_eq!(plan.stall_end(ms(799)), Some(ms(800)));
        assert_eq!(plan.stall_end(ms(800)), None);
        assert_eq!(plan.stall_end(ms(10_000)), None);
    }

    #[test]
    fn periodic_stalls_repeat_from_their_first_start() {
        let plan = StallPlan::periodic(ms(1000), ms(200), Some(ms(500))).unwrap();
        assert_eq!(plan.stall_end(ms(499)), None);
        assert_eq!(plan.stall_end(ms(500)), Some(ms(700)));
        assert_eq!(plan.stall_end(ms(700)), None);
        assert_eq!(plan.stall_end(ms(1499)), None);
        assert_eq!(plan.stall_end(ms(1600)), Some(ms(1700)));
        assert_eq!(plan.stall_end(ms(100_550)), Some(ms(100_700)));
    }

    #[test]
    fn periodic_stalls_start_one_period_in_by_default() {
        let plan = StallPlan::periodic(ms(1000), ms(100), None).unwrap();
        assert_eq!(plan.at(), ms(1000));
        assert_eq!(plan.stall_end(ms(50)), None);
        assert_eq!(plan.stall_end(ms(1050)), Some(ms(1100)));
    }

    #[test]
    fn flags_combine_or_explain_why_not() {
        assert_eq!(StallPlan::from_flags(None, None, None), Ok(None));
        let once = StallPlan::from_flags(Some(ms(3)), Some(ms(2)), None).unwrap();
        assert_eq!(once, Some(StallPlan::once(ms(3), ms(2)).unwrap()));
        let every = StallPlan::from_flags(None, Some(ms(2)), Some(ms(10))).unwrap();
        assert_eq!(every.unwrap().at(), ms(10));

        let alone = StallPlan::from_flags(None, Some(ms(2)), None).unwrap_err();
        assert!(alone.contains("--stall-for needs"), "{alone}");
        let no_length = StallPlan::from_flags(Some(ms(2)), None, None).unwrap_err();
        assert!(no_length.contains("need --stall-for"), "{no_length}");
        let too_long = StallPlan::from_flags(None, Some(ms(10)), Some(ms(10))).unwrap_err();
        assert!(
            too_long.contains("shorter than --stall-every"),
            "{too_long}"
        );
        let zero = StallPlan::from_flags(Some(ms(1)), Some(ms(0)), None).unwrap_err();
        assert!(zero.contains("longer than zero"), "{zero}");
    }

    #[test]
    fn the_next_stall_start_is_at_or_after_the_offset() {
        let once = StallPlan::once(ms(300), ms(500)).unwrap();
        assert_eq!(once.next_start(ms(0)), Some(ms(300)));
        assert_eq!(once.next_start(ms(300)), Some(ms(300)));
        assert_eq!(once.next_start(ms(301)), None);
        let periodic = StallPlan::periodic(ms(1000), ms(200), Some(ms(500))).unwrap();
        assert_eq!(periodic.next_start(ms(0)), Some(ms(500)));
        assert_eq!(periodic.next_start(ms(500)), Some(ms(500)));
        assert_eq!(periodic.next_start(ms(501)), Some(ms(1500)));
        assert_eq!(periodic.next_start(ms(1500)), Some(ms(1500)));
        assert_eq!(periodic.next_start(ms(100_700)), Some(ms(101_500)));
        let far = StallPlan::periodic(Duration::MAX, ms(1), Some(ms(5))).unwrap();
        assert_eq!(far.next_start(ms(6)), None, "past the range");
    }

    #[test]
    fn extreme_offsets_do_not_overflow() {
        let plan = StallPlan::periodic(Duration::MAX, ms(1), Some(ms(0))).unwrap();
        assert_eq!(plan.stall_end(Duration::from_secs(u64::MAX / 2)), None);
        let plan = StallPlan::periodic(ms(3), ms(1), Some(ms(0))).unwrap();
        let far = Duration::from_secs(u64::MAX / 4);
        if let Some(end) = plan.stall_end(far) {
            assert!(end > far);
        }
    }
}
