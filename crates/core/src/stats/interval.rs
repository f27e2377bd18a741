//! Statistics per interval of the measured window (one second by default):
//! what the interval log, the JSON time series and the progress line show.
//!
//! A worker records into the open interval alongside its totals. When time
//! passes the interval's end, the interval is closed: its histograms are
//! V2-encoded (a few hundred bytes instead of tens of KB of counters) and the
//! next one opens, so a long run costs little memory. This happens at most
//! once per interval, never per request. After the run,
//! [`merged`] decodes and adds up the threads' intervals one index at a
//! time, so no more than one decoded interval is alive at once.

use std::time::Duration;

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use hdrhistogram::Histogram;

use super::{Errors, IntervalStats, StatusCodes};

/// A closed interval, with its histograms V2-encoded.
#[derive(Clone, Debug)]
pub struct EncodedInterval {
    pub index: u64,
    pub completed: u64,
    pub errors: u64,
    pub kinds: Errors,
    pub sent: u64,
    pub returned: u64,
    latency: Vec<u8>,
    uncorrected: Vec<u8>,
    send_lag: Vec<u8>,
    unfinished: Vec<u8>,
    ttfb: Vec<u8>,
    first_event: Vec<u8>,
    event_gap: Vec<u8>,
    tpot: Vec<u8>,
    output_tokens: u64,
    status_codes: StatusCodes,
    connect: Vec<u8>,
    tls_handshake: Vec<u8>,
    /// Endpoints with something in the interval, by index: the latency
    /// histogram and the errors.
    endpoints: Vec<(usize, Vec<u8>, u64)>,
}

/// One thread's intervals: the open one and those already closed.
#[derive(Clone, Debug)]
pub struct IntervalRecorder {
    length: Duration,
    length_ns: u64,
    /// End of the open interval, in nanoseconds from the window's start.
    open_until: u64,
    open: IntervalStats,
    closed: Vec<EncodedInterval>,
}

impl IntervalRecorder {
    pub fn new(length: Duration) -> IntervalRecorder {
        let length_ns = (length.as_nanos() as u64).max(1);
        IntervalRecorder {
            length,
            length_ns,
            open_until: length_ns,
            open: IntervalStats::empty(0, length),
            closed: Vec::new(),
        }
    }

    /// The interval that `offset_ns` (from the window's start) falls in,
    /// closing the open one first if time has moved past it.
    #[inline]
    pub fn at(&mut self, offset_ns: u64) -> &mut IntervalStats {
        if offset_ns >= self.open_until {
            self.roll(offset_ns / self.length_ns);
        }
        &mut self.open
    }

    /// Closed intervals, oldest first.
    pub fn closed(&self) -> &[EncodedInterval] {
        &self.closed
    }

    /// The closed intervals whose index is below `below`, oldest first,
    /// taken out of the recorder: those before `below` can no longer
    /// change, and whoever takes them keeps them, so that a thread holds
    /// only the intervals of the last moments however long the run.
    /// `offset_ns` is now, from the window's start: the open interval is
    /// closed first if time has moved past it.
    pub fn take_closed(&mut self, offset_ns: u64, below: u64) -> Vec<EncodedInterval> {
        self.at(offset_ns);
        let n = self.closed.partition_point(|i| i.index < below);
        self.closed.drain(..n).collect()
    }

    /// Takes back closed intervals handed out by
    /// [`IntervalRecorder::take_closed`] that no one merged: they are older
    /// than any still here.
    pub fn give_back(&mut self, parts: Vec<EncodedInterval>) {
        if !parts.is_empty() {
            self.closed.splice(0..0, parts);
        }
    }

    /// Closes the open interval (if it holds anything) and opens `index`.
    pub fn roll(&mut self, index: u64) {
        let o = &self.open;
        let any = o.completed + o.errors + o.kinds.connect + o.sent + o.returned;
        let held = o.latency.len() + o.send_lag.len() + o.unfinished.len() + o.connect.len();
        if any + held > 0 {
            let encoded = encode(&self.open);
            self.closed.push(encoded);
        }
        self.open.reuse(index, self.length);
        self.open_until = (index + 1).saturating_mul(self.length_ns);
    }

    /// Closes the open interval at the end of the run.
    pub fn finish(&mut self) {
        self.roll(self.open.index + 1);
    }

    /// The highest interval index that holds data.
    fn last_index(&self) -> Option<u64> {
        self.closed.last().map(|i| i.index)
    }
}

/// An interval's figures without its per-endpoint histograms, compressed
/// and without spare capacity: what the reports' series keep for the
/// whole run (see [`super::history`]), one point a second by default.
/// Deflate takes about a fifth off a latency histogram of a second at
/// 10,000 requests/s, and the doubling growth of a Vec left up to as much
/// again unused.
pub(super) fn encode_totals(interval: &IntervalStats) -> EncodedInterval {
    let mut serializer = V2DeflateSerializer::new();
    encode_histograms(interval, false, &mut |h, out| {
        // Serializing into a Vec cannot fail for one of metron's histograms.
        let _ = serializer.serialize(h, out);
        out.shrink_to_fit();
    })
}

/// A thread's closed interval, kept until the main thread takes it: plain
/// V2, cheaper to write on the thread that sends requests.
fn encode(interval: &IntervalStats) -> EncodedInterval {
    let mut serializer = V2Serializer::new();
    encode_histograms(interval, true, &mut |h, out| {
        let _ = serializer.serialize(h, out);
    })
}

fn encode_histograms(
    interval: &IntervalStats,
    endpoints: bool,
    serialize: &mut dyn FnMut(&Histogram<u64>, &mut Vec<u8>),
) -> EncodedInterval {
    let mut bytes = |h: &Histogram<u64>| {
        let mut out = Vec::new();
        serialize(h, &mut out);
        out
    };
    EncodedInterval {
        index: interval.index,
        completed: interval.completed,
        errors: interval.errors,
        kinds: interval.kinds,
        sent: interval.sent,
        returned: interval.returned,
        latency: bytes(&interval.latency),
        uncorrected: bytes(&interval.uncorrected),
        send_lag: bytes(&interval.send_lag),
        unfinished: bytes(&interval.unfinished),
        ttfb: bytes(&interval.ttfb),
        first_event: bytes(&interval.first_event),
        event_gap: bytes(&interval.event_gap),
        tpot: bytes(&interval.tpot),
        output_tokens: interval.output_tokens,
        status_codes: interval.status_codes,
        connect: bytes(&interval.connect),
        tls_handshake: bytes(&interval.tls_handshake),
        endpoints: interval
            .endpoints
            .iter()
            .filter(|_| endpoints)
            .enumerate()
            .filter_map(|(i, e)| {
                let e = e.as_ref().filter(|e| !e.is_empty())?;
                Some((i, bytes(&e.latency), e.errors))
            })
            .collect(),
    }
}

fn add_encoded(into: &mut Histogram<u64>, bytes: &[u8], de: &mut Deserializer) {
    if let Ok(h) = de.deserialize::<u64, _>(&mut &bytes[..]) {
        super::add_histogram(into, &h);
    }
}

/// Adds one thread's closed interval into `out`.
pub(super) fn add_into(out: &mut IntervalStats, e: &EncodedInterval, de: &mut Deserializer) {
    out.completed += e.completed;
    out.errors += e.errors;
    out.kinds.add(&e.kinds);
    out.sent += e.sent;
    out.returned += e.returned;
    add_encoded(&mut out.latency, &e.latency, de);
    add_encoded(&mut out.uncorrected, &e.uncorrected, de);
    add_encoded(&mut out.send_lag, &e.send_lag, de);
    add_encoded(&mut out.unfinished, &e.unfinished, de);
    add_encoded(&mut out.ttfb, &e.ttfb, de);
    add_encoded(&mut out.first_event, &e.first_event, de);
    add_encoded(&mut out.event_gap, &e.event_gap, de);
    add_encoded(&mut out.tpot, &e.tpot, de);
    out.output_tokens += e.output_tokens;
    out.status_codes.add(&e.status_codes);
    add_encoded(&mut out.connect, &e.connect, de);
    add_encoded(&mut out.tls_handshake, &e.tls_handshake, de);
    for (id, bytes, errors) in &e.endpoints {
        let into = out.endpoint(*id);
        into.errors += errors;
        add_encoded(&mut into.latency, bytes, de);
    }
}

/// Interval `index` (whole, `length` long) merged from the threads' parts
/// of it into `out`, whose memory is reused: what [`merged`] gives for any
/// interval but the window's last.
pub fn merge_one<'a>(
    out: &mut IntervalStats,
    index: u64,
    length: Duration,
    parts: impl Iterator<Item = &'a EncodedInterval>,
) {
    out.reuse(index, length);
    let mut de = Deserializer::new();
    for e in parts {
        debug_assert_eq!(e.index, index);
        add_into(out, e, &mut de);
    }
}

/// Every interval of the window, each merged over all `recorders`;
/// intervals without data come out empty, so the timeline is continuous.
/// The last one ends where the window does, and takes in anything
/// recorded after it (the responses read in the moment a run is stopped).
pub fn merged<'a>(
    recorders: &'a [&'a IntervalRecorder],
    window: Duration,
) -> impl Iterator<Item = IntervalStats> + 'a {
    merged_from(recorders, window, 0)
}

/// [`merged`] from interval `first` on: the intervals before it were
/// taken out of the recorders while the run went on
/// ([`IntervalRecorder::take_closed`]).
pub fn merged_from<'a>(
    recorders: &'a [&'a IntervalRecorder],
    window: Duration,
    first: u64,
) -> impl Iterator<Item = IntervalStats> + 'a {
    let length = recorders
        .first()
        .map_or(Duration::from_secs(1), |r| r.length);
    let by_window = window.as_nanos().div_ceil(length.as_nanos().max(1)) as u64;
    let any_data = recorders.iter().any(|r| r.last_index().is_some());
    let count = by_window.max(u64::from(any_data));
    let mut de = Deserializer::new();
    (first..count.max(first)).map(move |index| {
        let mut out = IntervalStats::empty(index, length);
        let last = index + 1 == count;
        for r in recorders {
            let from = r.closed.partition_point(|i| i.index < index);
            let to = if last {
                r.closed.len()
            } else {
                r.closed.partition_point(|i| i.index <= index)
            };
            for e in &r.closed[from..to] {
                add_into(&mut out, e, &mut de);
            }
        }
        out.length = length.min(window.saturating_sub(out.start));
        out
    })
}

impl Default for IntervalRecorder {
    fn default() -> Self {
        IntervalRecorder::new(Duration::from_secs(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn records_land_in_the_interval_of_their_time() {
        let mut r = IntervalRecorder::new(Duration::from_secs(1));
        r.at(10).latency.record(100).unwrap();
        r.at(SEC / 2).latency.record(200).unwrap();
        r.at(SEC + 1).latency.record(300).unwrap();
        // Nothing in the third second: the fourth follows directly.
        r.at(3 * SEC).latency.record(400).unwrap();
        r.finish();
        let indices: Vec<u64> = r.closed().iter().map(|i| i.index).collect();
        assert_eq!(indices, vec![0, 1, 3]);
    }

    #[test]
    fn merging_adds_threads_and_fills_gaps() {
        let mut a = IntervalRecorder::new(Duration::from_secs(1));
        let mut b = IntervalRecorder::new(Duration::from_secs(1));
        for (r, v) in [(&mut a, 100), (&mut b, 300)] {
            let i = r.at(5);
            i.latency.record(v).unwrap();
            i.completed += 1;
        }
        let i = b.at(2 * SEC + 5);
        i.errors += 2;
        a.finish();
        b.finish();
        let recs = [&a, &b];
        let all: Vec<IntervalStats> = merged(&recs, Duration::from_secs(4)).collect();
        assert_eq!(all.len(), 4);
        assert_eq!((all[0].completed, all[0].latency.len()), (2, 2));
        assert_eq!(all[0].latency.max(), 300);
        assert_eq!((all[1].completed, all[1].latency.len()), (0, 0));
        assert_eq!(all[2].errors, 2);
        assert_eq!(all[3].start(), Duration::from_secs(3));
    }

    /// Intervals taken out while the run goes on are gone from the
    /// recorder; those given back (no one merged them) count again.
    #[test]
    fn taken_intervals_leave_the_recorder_and_come_back_when_given_back() {
        let mut r = IntervalRecorder::new(Duration::from_secs(1));
        for at in [0, SEC, 2 * SEC] {
            r.at(at).completed += 1;
        }
        let taken = r.take_closed(2 * SEC + 1, 2);
        assert_eq!(taken.iter().map(|i| i.index).collect::<Vec<_>>(), [0, 1]);
        r.finish();
        let recs = [&r];
        let rest: Vec<u64> = merged_from(&recs, Duration::from_secs(3), 2)
            .map(|i| i.completed)
            .collect();
        assert_eq!(rest, [1]);
        let mut r = r.clone();
        r.give_back(taken);
        let recs = [&r];
        let all: Vec<u64> = merged(&recs, Duration::from_secs(3))
            .map(|i| i.completed)
            .collect();
        assert_eq!(all, [1, 1, 1]);
    }

    /// Regression: a response read just after the window's end opened an
    /// interval of its own, so a 2 s log held three intervals and `merge`
    /// measured a 3 s window.
    #[test]
    fn the_last_interval_ends_with_the_window_and_takes_in_stragglers() {
        let mut r = IntervalRecorder::new(Duration::from_secs(1));
        r.at(SEC / 2).completed += 1;
        r.at(2 * SEC + 400).completed += 1;
        r.at(3 * SEC + 1).completed += 1;
        r.finish();
        let recs = [&r];
        let all: Vec<IntervalStats> = merged(&recs, Duration::from_millis(2_500)).collect();
        let got: Vec<(u64, Duration, u64)> = all
            .iter()
            .map(|i| (i.index, i.length, i.completed))
            .collect();
        // [0, 1), [1, 2), [2, 2.5): the last cut short, with what came
        // after the window's end folded in.
        assert_eq!(
            got,
            [
                (0, Duration::from_secs(1), 1),
                (1, Duration::from_secs(1), 0),
                (2, Duration::from_millis(500), 2),
            ]
        );
        let late: Vec<IntervalStats> = merged(&recs, Duration::from_secs(2)).collect();
        assert_eq!(late.len(), 2);
        assert_eq!(
            (late[1].length, late[1].completed),
            (Duration::from_secs(1), 2)
        );
    }
}
