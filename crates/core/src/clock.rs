//! The one clock every timestamp comes from: `CLOCK_MONOTONIC` in
//! nanoseconds, as a plain `u64`.
//!
//! `std::time::Instant` reads the same clock but cannot be handed to the
//! kernel as a deadline; a raw nanosecond count can, and it is `Copy`,
//! ordered and cheap to subtract on the hot path.

use std::time::Duration;

/// Nanoseconds on the monotonic clock.
pub type Nanos = u64;

/// Reads the monotonic clock (a vDSO call, no syscall).
#[inline]
pub fn now() -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time (user + system) used so far by the calling thread.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as above; CLOCK_THREAD_CPUTIME_ID is always available on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Converts a nanosecond span to whole microseconds, the histograms' unit.
#[inline]
pub fn to_us(ns: Nanos) -> u64 {
    ns / 1_000
}

/// Nanoseconds of a `Duration`, saturating.
pub fn nanos(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_moves_forward() {
        let a = now();
        std::thread::sleep(Duration::from_millis(2));
        let b = now();
        assert!(
            b - a >= 2_000_000,
            "slept 2 ms but clock moved {} ns",
            b - a
        );
    }

    #[test]
    fn micros_truncate() {
        assert_eq!(to_us(1_999), 1);
        assert_eq!(nanos(Duration::from_micros(3)), 3_000);
    }
}
