//! Server-sent event streams: what every stream the server sends is
//! made of ([`Feed`]: how many events, when each is due, their bytes),
//! how an event is framed, and the events of `--sse` themselves.
//!
//! Two things stream events: `--sse`, whose N numbered events replace the
//! default body, and `--llm`, whose completions stream one token per
//! event (`llm`). The writers (`conn` for HTTP/1.1, `exchange` for
//! HTTP/2 and HTTP/3) take any [`Feed`], so both keep one discipline.
//! A stream's head goes out at once. Event i is due at its [`Pace`]'s
//! offset from the stream's origin: the first `first` after it, then one
//! every `gap`. Due times are offsets from the origin, not from the
//! previous event's write, so a late wake-up (a busy machine, a stall)
//! delays one event instead of every event after it. An `--sse` stream
//! counts from when its head went out; an `--llm` one from the request's
//! arrival. The last event of either is `data: [DONE]`, the end marker
//! chat-completion streaming APIs send, so a client written for those
//! reads the stream to its end. The framing around an event (a chunk, a
//! DATA frame) is the protocol's business.

use std::io::Write as _;
use std::ops::Range;
use std::time::Duration;

use super::config::Sse;
use super::stats::ServerStats;

/// The bytes of every `--sse` event but the last, except its number,
/// which it holds twice: `id: ` and `\n`, then `data: event ` and `\n\n`.
const FIXED_LEN: u64 = 19;
/// The last event of every stream.
pub(crate) const DONE: &[u8] = b"data: [DONE]\n\n";

/// The events of one stream: what a writer needs to send them, each when
/// it is due, and to count them as they go.
pub(crate) trait Feed {
    /// Events in the stream, the last one ending it.
    fn events(&self) -> u64;

    /// When event `i` (1-based) is due, as an offset from the stream's
    /// origin.
    fn due(&self, i: u64) -> Duration;

    /// Appends event `i`'s bytes.
    fn write(&self, out: &mut Vec<u8>, i: u64);

    /// Counts `events` as written, once no stall holds them back and
    /// before the client can see them, so its count never runs ahead.
    fn count(&self, stats: &ServerStats, events: Range<u64>);
}

/// When a stream's events are due: the first `first` after the stream's
/// origin, then one every `gap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pace {
    pub first: Duration,
    pub gap: Duration,
}

impl Pace {
    /// When event `i` (1-based) is due: `first`, then `gap` more for each
    /// event after the first (for `sleep_past`, which waits forever past
    /// the clock's range).
    pub(crate) fn due(self, i: u64) -> Duration {
        const NANOS_PER_SEC: u128 = 1_000_000_000;
        // Past u128 nanoseconds is past the range of a Duration too.
        let nanos = self
            .gap
            .as_nanos()
            .saturating_mul(u128::from(i.saturating_sub(1)))
            .saturating_add(self.first.as_nanos());
        match u64::try_from(nanos / NANOS_PER_SEC) {
            Ok(secs) => Duration::new(secs, (nanos % NANOS_PER_SEC) as u32),
            Err(_) => Duration::MAX,
        }
    }
}

/// `--sse`'s events: numbered, timed from the head.
impl Feed for Sse {
    fn events(&self) -> u64 {
        self.events
    }

    fn due(&self, i: u64) -> Duration {
        let pace = Pace {
            first: self.first,
            gap: self.gap,
        };
        pace.due(i)
    }

    /// `id: {i}\ndata: event {i}\n\n`, or for the last one
    /// `data: [DONE]\n\n`.
    fn write(&self, out: &mut Vec<u8>, i: u64) {
        if i >= self.events {
            out.extend_from_slice(DONE);
            return;
        }
        // Writing to a Vec cannot fail.
        let _ = write!(out, "id: {i}\ndata: event {i}\n\n");
    }

    fn count(&self, stats: &ServerStats, events: Range<u64>) {
        stats.sse_events_written(events.end.saturating_sub(events.start));
    }
}

/// Appends event `i` of `feed`, in a chunk of its own if the body is
/// `chunked` (else as it is: the stream ends with the connection).
pub(crate) fn frame(out: &mut Vec<u8>, feed: &impl Feed, i: u64, chunked: bool) {
    let at = out.len();
    feed.write(out, i);
    if !chunked {
        return;
    }
    // The size goes before the event, which is short: shifting it costs
    // less than writing it twice.
    let mut size = [0u8; 20];
    let room = size.len();
    let mut line = &mut size[..];
    let _ = write!(line, "{:x}\r\n", out.len() - at);
    let used = room - line.len();
    out.splice(at..at, size[..used].iter().copied());
    out.extend_from_slice(b"\r\n");
}

/// Appends the end of a stream's body: the last chunk if it is `chunked`
/// (else nothing: the connection's end ends it).
pub(crate) fn end(out: &mut Vec<u8>, chunked: bool) {
    if chunked {
        out.extend_from_slice(b"0\r\n\r\n");
    }
}

/// The length of a whole `--sse` stream of `events` events, without any
/// framing.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(i: u64, events: u64) -> String {
        let mut out = Vec::new();
        stream(events, Duration::ZERO, Duration::ZERO).write(&mut out, i);
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
        assert_eq!(sse.due(1), ms(30));
        assert_eq!(sse.due(3), ms(130));
        assert_eq!(stream(3, Duration::ZERO, ms(50)).due(1), Duration::ZERO);
        let far = Duration::from_secs(50 * (u64::MAX / 1000));
        assert!(sse.due(u64::MAX) >= far, "{:?}", sse.due(u64::MAX));
        let endless = stream(3, ms(1), Duration::MAX);
        assert_eq!(endless.due(3), Duration::MAX, "no overflow");
        assert_eq!(endless.due(u64::MAX), Duration::MAX);
        let late = stream(3, Duration::MAX, ms(1));
        assert_eq!(late.due(1), Duration::MAX);
        assert_eq!(late.due(2), Duration::MAX);
    }

    #[test]
    fn the_stream_length_adds_up_its_events() {
        for events in 1..=1200 {
            let whole: u64 = (1..=events).map(|i| event(i, events).len() as u64).sum();
            assert_eq!(stream_len(events), whole, "{events} events");
        }
        assert_eq!(stream_len(0), 0);
        assert!(stream_len(u64::MAX) > 0, "no overflow");
    }

    #[test]
    fn a_chunked_event_is_one_chunk_and_the_end_is_the_last_chunk() {
        let sse = stream(12, Duration::ZERO, Duration::ZERO);
        let mut out = b"head".to_vec();
        frame(&mut out, &sse, 11, true);
        assert_eq!(out, b"head17\r\nid: 11\ndata: event 11\n\n\r\n");
        let mut plain = Vec::new();
        frame(&mut plain, &sse, 12, false);
        end(&mut plain, false);
        assert_eq!(plain, DONE, "unchunked: the event alone");
        let mut last = Vec::new();
        end(&mut last, true);
        assert_eq!(last, b"0\r\n\r\n");
    }

    #[test]
    fn sse_events_count_as_sse_events() {
        let stats = ServerStats::new(0);
        let sse = stream(5, Duration::ZERO, Duration::ZERO);
        sse.count(&stats, 1..4);
        sse.count(&stats, 4..4);
        assert_eq!(stats.sse_events(), 3);
    }
}
