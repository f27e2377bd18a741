//! Server-sent events (`--sse-events`): the bytes of one event, and when
//! each is due.
//!
//! A stream is N events `--sse-every` apart, the first going out with the
//! head. Event i's due time is the stream's start plus (i - 1) gaps, not the
//! previous event's write plus one gap, so a late wake-up (a busy machine, a
//! stall) delays one event instead of every event after it. The framing
//! around an event (a chunk, a DATA frame) is the protocol's business.

use std::io::Write as _;
use std::time::Duration;

/// The bytes of every event but its number, which it holds twice:
/// `id: ` and `\n`, then `data: event ` and `\n\n`.
const FIXED_LEN: u64 = 19;

/// Appends event `i` (1-based): `id: {i}\ndata: event {i}\n\n`.
pub(crate) fn write_event(out: &mut Vec<u8>, i: u64) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "id: {i}\ndata: event {i}\n\n");
}

/// The length of event `i`.
pub(crate) fn event_len(i: u64) -> u64 {
    let digits = i.checked_ilog10().map_or(1, |d| u64::from(d) + 1);
    FIXED_LEN + 2 * digits
}

/// The length of events 1 to `count` together, without any framing.
pub(crate) fn stream_len(count: u64) -> u64 {
    let mut len = FIXED_LEN.saturating_mul(count);
    // Numbers with the same count of digits, one range at a time.
    let (mut from, mut digits) = (1u64, 1u64);
    while from <= count {
        let to = from.saturating_mul(10).saturating_sub(1).min(count);
        len = len.saturating_add((to - from + 1).saturating_mul(2 * digits));
        match from.checked_mul(10) {
            Some(next) => from = next,
            None => break,
        }
        digits += 1;
    }
    len
}

/// When event `i` (1-based) is due, as an offset from the stream's start
/// (for `sleep_past`, which waits forever past the clock's range).
pub(crate) fn due(every: Duration, i: u64) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    // Past u128 nanoseconds is past the range of a Duration too.
    let nanos = every
        .as_nanos()
        .saturating_mul(u128::from(i.saturating_sub(1)));
    match u64::try_from(nanos / NANOS_PER_SEC) {
        Ok(secs) => Duration::new(secs, (nanos % NANOS_PER_SEC) as u32),
        Err(_) => Duration::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(i: u64) -> String {
        let mut out = Vec::new();
        write_event(&mut out, i);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn events_are_numbered_twice() {
        assert_eq!(event(1), "id: 1\ndata: event 1\n\n");
        assert_eq!(event(42), "id: 42\ndata: event 42\n\n");
    }

    #[test]
    fn events_are_due_a_gap_apart_from_the_first() {
        let every = Duration::from_millis(50);
        assert_eq!(due(every, 1), Duration::ZERO);
        assert_eq!(due(every, 3), Duration::from_millis(100));
        let far = Duration::from_secs(50 * (u64::MAX / 1000));
        assert!(due(every, u64::MAX) >= far, "{:?}", due(every, u64::MAX));
        assert_eq!(due(Duration::MAX, 3), Duration::MAX, "no overflow");
        assert_eq!(due(Duration::MAX, u64::MAX), Duration::MAX);
    }

    #[test]
    fn the_stream_length_adds_up_its_events() {
        let mut sum = 0;
        for count in 1..=1200 {
            let len = event(count).len() as u64;
            assert_eq!(event_len(count), len, "event {count}");
            sum += len;
            assert_eq!(stream_len(count), sum, "{count} events");
        }
        assert_eq!(stream_len(0), 0);
        assert!(stream_len(u64::MAX) > 0, "no overflow");
    }
}
