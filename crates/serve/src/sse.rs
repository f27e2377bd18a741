//! Server-sent events (`--sse`): the bytes of one event, and when each is
//! due.
//!
//! A stream is N events: the head goes out at once, the first event
//! `--sse-first` after it, then one every `--sse-gap`. Event i's due time
//! is the first event's due time plus (i - 1) gaps, not the previous
//! event's write plus one gap, so a late wake-up (a busy machine, a stall)
//! delays one event instead of every event after it. The last event is
//! `data: [DONE]`, the end marker chat-completion streaming APIs send,
//! so a client written for those reads the stream to its end. The framing
//! around an event (a chunk, a DATA frame) is the protocol's business.

use std::io::Write as _;
use std::time::Duration;

use super::config::Sse;

/// The bytes of every event but the last, except its number, which it
/// holds twice: `id: ` and `\n`, then `data: event ` and `\n\n`.
const FIXED_LEN: u64 = 19;
/// The last event of every stream.
const DONE: &[u8] = b"data: [DONE]\n\n";

/// Appends event `i` (1-based) of a stream of `events`:
/// `id: {i}\ndata: event {i}\n\n`, or for the last one `data: [DONE]\n\n`.
pub(crate) fn write_event(out: &mut Vec<u8>, i: u64, events: u64) {
    if i >= events {
        out.extend_from_slice(DONE);
        return;
    }
    // Writing to a Vec cannot fail.
    let _ = write!(out, "id: {i}\ndata: event {i}\n\n");
}

/// The length of event `i` of a stream of `events`.
pub(crate) fn event_len(i: u64, events: u64) -> u64 {
    if i >= events {
        return DONE.len() as u64;
    }
    let digits = i.checked_ilog10().map_or(1, |d| u64::from(d) + 1);
    FIXED_LEN + 2 * digits
}

/// The length of a whole stream of `events` events, without any framing.
pub(crate) fn stream_len(events: u64) -> u64 {
    if events == 0 {
        return 0;
    }
    let numbered = events - 1;
    let mut len = FIXED_LEN.saturating_mul(numbered);
    // Numbers with the same count of digits, one range at a time.
    let (mut from, mut digits) = (1u64, 1u64);
    while from <= numbered {
        let to = from.saturating_mul(10).saturating_sub(1).min(numbered);
        len = len.saturating_add((to - from + 1).saturating_mul(2 * digits));
        match from.checked_mul(10) {
            Some(next) => from = next,
            None => break,
        }
        digits += 1;
    }
    len.saturating_add(DONE.len() as u64)
}

/// When event `i` (1-based) is due, as an offset from when the head went
/// out: `first`, then `gap` more for each event after the first (for
/// `sleep_past`, which waits forever past the clock's range).
pub(crate) fn due(sse: Sse, i: u64) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    // Past u128 nanoseconds is past the range of a Duration too.
    let nanos = sse
        .gap
        .as_nanos()
        .saturating_mul(u128::from(i.saturating_sub(1)))
        .saturating_add(sse.first.as_nanos());
    match u64::try_from(nanos / NANOS_PER_SEC) {
        Ok(secs) => Duration::new(secs, (nanos % NANOS_PER_SEC) as u32),
        Err(_) => Duration::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(i: u64, events: u64) -> String {
        let mut out = Vec::new();
        write_event(&mut out, i, events);
        String::from_utf8(out).unwrap()
    }

    fn stream(events: u64, first: Duration, gap: Duration) -> Sse {
        Sse { events, first, gap }
    }

    #[test]
    fn events_are_numbered_twice_and_the_last_is_done() {
        assert_eq!(event(1, 3), "id: 1\ndata: event 1\n\n");
        assert_eq!(event(42, 50), "id: 42\ndata: event 42\n\n");
        assert_eq!(event(3, 3), "data: [DONE]\n\n");
        assert_eq!(event(1, 1), "data: [DONE]\n\n", "a stream of one");
    }

    #[test]
    fn events_are_due_a_gap_apart_from_the_first() {
        let ms = Duration::from_millis;
        let sse = stream(u64::MAX, ms(30), ms(50));
        assert_eq!(due(sse, 1), ms(30));
        assert_eq!(due(sse, 3), ms(130));
        assert_eq!(due(stream(3, Duration::ZERO, ms(50)), 1), Duration::ZERO);
        let far = Duration::from_secs(50 * (u64::MAX / 1000));
        assert!(due(sse, u64::MAX) >= far, "{:?}", due(sse, u64::MAX));
        let endless = stream(3, ms(1), Duration::MAX);
        assert_eq!(due(endless, 3), Duration::MAX, "no overflow");
        assert_eq!(due(endless, u64::MAX), Duration::MAX);
        let late = stream(3, Duration::MAX, ms(1));
        assert_eq!(due(late, 1), Duration::MAX);
        assert_eq!(due(late, 2), Duration::MAX);
    }

    #[test]
    fn the_stream_length_adds_up_its_events() {
        for events in 1..=1200 {
            let whole: u64 = (1..=events).map(|i| event(i, events).len() as u64).sum();
            assert_eq!(stream_len(events), whole, "{events} events");
            for i in [1, events / 2, events] {
                let len = event(i, events).len() as u64;
                assert_eq!(event_len(i, events), len, "event {i} of {events}");
            }
        }
        assert_eq!(stream_len(0), 0);
        assert!(stream_len(u64::MAX) > 0, "no overflow");
    }
}
