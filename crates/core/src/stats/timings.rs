//! The phases of a request and of a connection, beside the whole-response
//! latency: time to first byte (corrected and not), TCP connect and TLS
//! handshake.
//!
//! Time to first byte is measured as latency is: the corrected figure from
//! the request's intended send time, the uncorrected one from its first
//! byte written, both to the first byte of the response head. Connect and
//! handshake times belong to connections, not requests: every connection
//! the run opened is in them (those opened before the measured window
//! too), and a request that waited for a connection carries that wait in
//! its corrected figures already.
//!
//! With `--sse`, [`EventStats`] times each response's events: the first
//! from the intended send time, then every gap between two.

use hdrhistogram::Histogram;

use super::{add_histogram, new_histogram, record_clamped};

/// One thread's (or, added up, the run's) phase histograms, in µs.
#[derive(Clone, Debug)]
pub struct Timings {
    /// Intended send time → first byte of the response head.
    pub ttfb: Histogram<u64>,
    /// First byte written → first byte of the response head.
    pub ttfb_uncorrected: Histogram<u64>,
    /// Start of the connect → TCP connection established.
    pub connect: Histogram<u64>,
    /// TCP connection established → TLS handshake finished (TLS only).
    pub tls_handshake: Histogram<u64>,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            ttfb: new_histogram(),
            ttfb_uncorrected: new_histogram(),
            connect: new_histogram(),
            tls_handshake: new_histogram(),
        }
    }
}

impl Timings {
    /// A measured response began `corrected` µs after its intended send
    /// time and `uncorrected` µs after its send.
    #[inline]
    pub fn first_byte(&mut self, corrected: u64, uncorrected: u64) {
        record_clamped(&mut self.ttfb, corrected);
        record_clamped(&mut self.ttfb_uncorrected, uncorrected);
    }

    /// A connection opened: its TCP connect took `connect` µs and its TLS
    /// handshake, when it has one, `tls`.
    pub fn connection(&mut self, connect: u64, tls: Option<u64>) {
        record_clamped(&mut self.connect, connect);
        if let Some(tls) = tls {
            record_clamped(&mut self.tls_handshake, tls);
        }
    }

    pub fn add(&mut self, other: &Timings) {
        for (into, from) in self.histograms_mut().into_iter().zip(other.histograms()) {
            add_histogram(into, from);
        }
    }

    /// Every histogram: time to first byte (corrected, uncorrected),
    /// connect, TLS handshake.
    pub fn histograms(&self) -> [&Histogram<u64>; 4] {
        [
            &self.ttfb,
            &self.ttfb_uncorrected,
            &self.connect,
            &self.tls_handshake,
        ]
    }

    /// Every histogram, mutable, in the order of [`Timings::histograms`].
    pub fn histograms_mut(&mut self) -> [&mut Histogram<u64>; 4] {
        [
            &mut self.ttfb,
            &mut self.ttfb_uncorrected,
            &mut self.connect,
            &mut self.tls_handshake,
        ]
    }
}

/// `--sse`: the events of streamed responses, in µs.
#[derive(Clone, Debug)]
pub struct EventStats {
    /// What the events were: server-sent events, or a streamed call's
    /// messages.
    pub kind: EventKind,
    /// Intended send time → the response's first event.
    pub first: Histogram<u64>,
    /// Between consecutive events of one response. A response still
    /// streaming as the run ends adds its open gap (from its last event
    /// to the end) as a lower bound, as unfinished requests do.
    pub gap: Histogram<u64>,
    /// Events in all, and those of completed responses.
    pub count: u64,
    pub completed_events: u64,
    /// Completed responses, for the mean per response.
    pub responses: u64,
    /// Completed responses that carried no event: not event streams (a
    /// page where an SSE endpoint was meant), or streams that ended before
    /// their first event. They have no first event to time, so a
    /// first-event figure says nothing of them.
    pub without_events: u64,
    /// Lower bounds among the figures: open gaps, and first events of
    /// responses that had none when the run ended.
    pub open: u64,
    /// First events that came before their stream was due: a WebSocket
    /// server pushing from the upgrade on, before a subscription's turn
    /// under `-R`. Their first-event time counts as 0.
    pub before_due: u64,
}

impl Default for EventStats {
    fn default() -> Self {
        EventStats {
            kind: EventKind::Sse,
            first: new_histogram(),
            gap: new_histogram(),
            count: 0,
            completed_events: 0,
            responses: 0,
            without_events: 0,
            open: 0,
            before_due: 0,
        }
    }
}

/// What a response's events are, named in the JSON document's
/// `events.kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EventKind {
    /// Server-sent events (`--sse`).
    #[serde(rename = "sse")]
    Sse,
    /// The messages of a server-streaming gRPC call.
    #[serde(rename = "grpc")]
    Messages,
    /// The messages a WebSocket server pushes on a subscription
    /// (`--ws push`), one subscription per connection.
    #[serde(rename = "websocket")]
    WebSocket,
}

impl EventKind {
    /// What one event is called in a report, and what it belongs to:
    /// ("event", "response") or ("message", "call").
    pub fn nouns(self) -> (&'static str, &'static str) {
        match self {
            EventKind::Sse => ("event", "response"),
            EventKind::Messages => ("message", "call"),
            EventKind::WebSocket => ("message", "subscription"),
        }
    }

    /// What they are called at the start of a report's line.
    pub fn title(self) -> &'static str {
        match self {
            EventKind::Sse => "Events",
            EventKind::Messages | EventKind::WebSocket => "Messages",
        }
    }
}

impl EventStats {
    /// Nothing at all was read: no event, no response, nothing open.
    fn is_empty(&self) -> bool {
        self.count == 0 && self.responses == 0 && self.open == 0
    }

    /// Adds `other`'s figures; its kind is taken unless it is empty and
    /// this is not (a run without a single event still knows what it read).
    pub fn add(&mut self, other: &EventStats) {
        if !other.is_empty() || self.is_empty() {
            self.kind = other.kind;
        }
        add_histogram(&mut self.first, &other.first);
        add_histogram(&mut self.gap, &other.gap);
        self.count += other.count;
        self.completed_events += other.completed_events;
        self.responses += other.responses;
        self.without_events += other.without_events;
        self.open += other.open;
        self.before_due += other.before_due;
    }

    /// Whether any response (completed or still streaming) carried an
    /// event: without one, the first-event histogram holds only the lower
    /// bounds of requests still waiting at the end, and the gaps nothing,
    /// so neither measured an event.
    pub fn measured(&self) -> bool {
        self.count > 0
    }

    /// Mean events per completed response, when any completed.
    pub fn per_response(&self) -> Option<f64> {
        (self.responses > 0).then(|| self.completed_events as f64 / self.responses as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_add_up_histogram_by_histogram() {
        let mut a = Timings::default();
        a.first_byte(900, 400);
        a.connection(120, Some(800));
        let mut b = Timings::default();
        b.first_byte(1_000, 500);
        b.connection(130, None);
        a.add(&b);
        assert_eq!(a.ttfb.len(), 2);
        assert_eq!(a.ttfb_uncorrected.max(), 500);
        assert_eq!(a.connect.len(), 2);
        assert_eq!(
            a.tls_handshake.len(),
            1,
            "a plain connection has no handshake"
        );
        assert!(a.tls_handshake.equivalent(800, a.tls_handshake.max()));
    }
}
