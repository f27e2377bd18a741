//! The one place a worker records: a request fell due ([`Recorder::due`]),
//! went on the wire ([`Recorder::left`]), came back
//! ([`Recorder::completed`]) or was lost ([`Recorder::lost`]).
//!
//! Each call files the event in every structure that shows it (the run's
//! totals, the open interval, the endpoint's figures), so the worker writes
//! one call per event. Whether a request belongs to the measured window is
//! decided here, once, when it falls due; the decision travels with the
//! request as its [`Stamp`] and is honoured when it ends.

use std::time::Duration;

use crate::clock::{to_us, Nanos};

use super::interval::EncodedInterval;
use super::{add_histogram, AtEnd, ConnectCause, Phases, ReadCause, ThreadStats, Wait};

/// How a worker's run is bounded in time, known once all threads are ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// First intended time that is measured (start + warm-up).
    pub measure_from: Nanos,
    /// End of the run.
    pub end: Nanos,
}

impl Window {
    /// Everything measured: the window before the run's start is known.
    pub const ALL: Window = Window {
        measure_from: 0,
        end: u64::MAX,
    };

    /// Whether a request intended at `intended` belongs to the window.
    #[inline]
    pub fn measures(&self, intended: Nanos) -> bool {
        intended >= self.measure_from && intended < self.end
    }

    /// Whether `t` is past the warm-up (connect errors are counted from
    /// then on, whenever they happen).
    #[inline]
    pub fn past_warmup(&self, t: Nanos) -> bool {
        t >= self.measure_from
    }

    /// Where `now` falls in the measured window, in nanoseconds from its
    /// start, for the per-interval figures. A response read in the same
    /// wake-up as the window's end is filed in its last moment, so every
    /// figure stays inside the window that the totals cover.
    #[inline]
    pub fn offset(&self, now: Nanos) -> u64 {
        let last = self.end.saturating_sub(1).max(self.measure_from);
        now.clamp(self.measure_from, last) - self.measure_from
    }
}

/// Why a request ended without a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// Reset, end of stream mid-response, bytes that are not HTTP, ...
    Read(ReadCause),
    Write,
    /// Outstanding longer than `--timeout`.
    Timeout,
}

/// What the statistics know of a request from the moment it falls due:
/// given by [`Recorder::due`], made [`Stamp::leaving`] when a session takes
/// it onto the wire, handed back when the request ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// When the schedule wanted it sent (its send when that came first;
    /// in the closed loop, the moment it leaves).
    intended: Nanos,
    /// When its first byte was written, once it left.
    sent: Nanos,
    /// It went on the wire (a session took it).
    left: bool,
    /// Rate mode: it has an intended time of its own.
    paced: bool,
    /// It belongs to the measured window.
    measured: bool,
    /// Its endpoint, when it has one (a requests file).
    endpoint: Option<u16>,
}

impl Stamp {
    pub fn measured(&self) -> bool {
        self.measured
    }

    /// When its first byte was written (the stamp of a request that left).
    pub fn sent(&self) -> Nanos {
        self.sent
    }

    /// It went on the wire.
    pub fn has_left(&self) -> bool {
        self.left
    }

    /// The stamp of the request as a session takes it `now`. A request
    /// goes on the wire once: one the server never processed and that goes
    /// out again keeps its first send, so the server's refusal counts in
    /// its uncorrected latency and its send lag stays what it was. Until
    /// it first leaves, its wait (for a stream the server had not granted,
    /// a connection not yet open) is send lag.
    pub fn leaving(self, now: Nanos) -> Stamp {
        if self.left {
            return self;
        }
        let intended = if self.paced { self.intended } else { now };
        Stamp {
            intended,
            sent: now,
            left: true,
            ..self
        }
    }
}

/// One thread's statistics while the run is on.
#[derive(Debug)]
pub struct Recorder {
    stats: ThreadStats,
    window: Window,
    /// The run has begun: its window is known, so times have a place in
    /// its intervals.
    begun: bool,
    /// Rate mode: requests have intended times, so send lag is kept.
    paced: bool,
    /// A rate profile's phases, when its figures are broken out by them.
    phases: Phases,
}

/// What a completed request's response was, as [`Recorder::completed`]
/// records it.
#[derive(Clone, Copy, Debug)]
pub struct Reply {
    /// Its HTTP status.
    pub status: u16,
    /// The status of the call it answered (gRPC's), when requests are calls.
    pub rpc: Option<u8>,
    /// Whether it held what `--grpc-check` asks, when it was checked.
    pub checked: Option<bool>,
    /// Head and body as on the wire.
    pub bytes: u64,
    /// When the first byte of its head came.
    pub first_byte: Nanos,
}

impl Recorder {
    /// Intervals of `interval`, statistics for `endpoints` endpoints,
    /// completions counted as [`ThreadStats::new`] says.
    pub fn new(interval: Duration, endpoints: usize, counts_every: Option<Duration>) -> Recorder {
        Recorder {
            stats: ThreadStats::new(interval, endpoints, counts_every),
            window: Window::ALL,
            begun: false,
            paced: false,
            phases: Phases::default(),
        }
    }

    /// The run starts: its window, and whether it is paced. The
    /// connections opened before now count in the window's first interval.
    pub fn begin(&mut self, window: Window, paced: bool) {
        self.window = window;
        self.begun = true;
        self.paced = paced;
        let timings = &self.stats.timings;
        let first = self.stats.intervals.at(0);
        super::add_histogram(&mut first.connect, &timings.connect);
        super::add_histogram(&mut first.tls_handshake, &timings.tls_handshake);
    }

    /// Breaks the figures out by these phases of the run.
    pub fn by_phase(&mut self, phases: Phases) {
        self.stats.phases = vec![Default::default(); phases.len()];
        self.phases = phases;
    }

    /// The figures of the phase a request intended at `intended` is in.
    #[inline]
    fn phase(&mut self, intended: Nanos) -> Option<&mut super::PhaseStats> {
        if self.phases.is_empty() {
            return None;
        }
        let i = self.phases.of(intended);
        self.stats.phases.get_mut(i)
    }

    pub fn window(&self) -> Window {
        self.window
    }

    /// The totals so far (for the progress line).
    pub fn stats(&self) -> &ThreadStats {
        &self.stats
    }

    /// A request intended at `slot` falls due `now`, and is counted due.
    /// It is sent once a session takes it ([`Recorder::left`]). One going
    /// ahead of its slot (pipelined behind an earlier one) is measured from
    /// its send: there is no delay to correct for.
    #[inline]
    pub fn due(&mut self, slot: Nanos, now: Nanos, endpoint: Option<u16>) -> Stamp {
        // In the closed loop a request is due when it goes out: its
        // corrected figures are its uncorrected ones, exactly.
        let intended = if self.paced { slot.min(now) } else { now };
        let stamp = Stamp {
            intended,
            sent: now,
            left: false,
            paced: self.paced,
            measured: self.window.measures(slot),
            endpoint,
        };
        if stamp.measured {
            if let Some(p) = self.phase(stamp.intended) {
                p.due += 1;
            }
            self.stats.counters.due += 1;
        }
        stamp
    }

    /// A session took `stamp`'s request `now` (`stamp` as it was before,
    /// see [`Stamp::leaving`]): the first time, its send lag is recorded;
    /// every time, the interval counts a send.
    #[inline]
    pub fn left(&mut self, stamp: Stamp, now: Nanos) {
        if !stamp.measured {
            return;
        }
        let s = &mut self.stats;
        let iv = s.intervals.at(self.window.offset(now));
        iv.sent += 1;
        if self.paced && !stamp.left {
            let lag = to_us(now.saturating_sub(stamp.intended));
            super::record_clamped(&mut iv.send_lag, lag);
            ThreadStats::record(&mut s.send_lag, &mut s.counters.saturated, lag);
        }
    }

    /// A request that falls due `now` and leaves at once: [`Recorder::due`]
    /// and [`Recorder::left`] together, as the tests write them.
    #[cfg(test)]
    pub fn sent(&mut self, slot: Nanos, now: Nanos, endpoint: Option<u16>) -> Stamp {
        let stamp = self.due(slot, now, endpoint);
        self.left(stamp, now);
        stamp.leaving(now)
    }

    /// `stamp`'s request, which a session had taken (written but not
    /// processed, or not taken by the connection after all), waits from
    /// `now` to go out again.
    pub fn waits_again(&mut self, stamp: Stamp, now: Nanos) {
        if stamp.measured && stamp.left {
            self.stats.intervals.at(self.window.offset(now)).returned += 1;
        }
    }

    /// The response to `stamp`'s request began at `first_byte` and ended
    /// `now` with `status`, after `bytes` bytes (head and body).
    #[inline]
    pub fn completed(&mut self, stamp: Stamp, reply: Reply, now: Nanos) {
        let Reply {
            status,
            rpc,
            checked,
            bytes,
            first_byte,
        } = reply;
        let took = to_us(now - stamp.sent);
        let fastest = &mut self.stats.fastest_us;
        *fastest = Some(fastest.map_or(took, |f| f.min(took)));
        if !stamp.measured {
            return;
        }
        let s = &mut self.stats;
        let c = &mut s.counters;
        let corrected = to_us(now - stamp.intended);
        let uncorrected = to_us(now - stamp.sent);
        ThreadStats::record(&mut s.latency, &mut c.saturated, corrected);
        let first_byte = first_byte.clamp(stamp.sent, now);
        let ttfb = to_us(first_byte - stamp.intended);
        if self.paced {
            ThreadStats::record(&mut s.uncorrected, &mut c.saturated, uncorrected);
            s.timings.first_byte(ttfb, to_us(first_byte - stamp.sent));
        } else {
            // The same values twice: copied once at the end instead
            // (`finish`), two histogram records fewer per response.
            c.saturated += u64::from(uncorrected > super::HIST_HIGH_US);
            super::record_clamped(&mut s.timings.ttfb, ttfb);
        }
        c.completed += 1;
        c.bytes += bytes;
        // A call that failed is an error whatever its HTTP status (which
        // is 200 for most of them).
        let failed_check = checked == Some(false);
        let error =
            status > 399 || rpc.is_some_and(|code| code != metron_grpc::status::OK) || failed_check;
        c.failed_checks += u64::from(failed_check);
        c.errors.status += u64::from(error);
        c.status_codes.count(status);
        if let Some(code) = rpc {
            c.grpc.count(code);
        }
        let offset = self.window.offset(now);
        let iv = s.intervals.at(offset);
        super::record_clamped(&mut iv.latency, corrected);
        super::record_clamped(&mut iv.uncorrected, uncorrected);
        super::record_clamped(&mut iv.ttfb, ttfb);
        iv.completed += 1;
        iv.errors += u64::from(error);
        iv.kinds.status += u64::from(error);
        iv.status_codes.count(status);
        s.count_completion(offset);
        let answered = super::Answered {
            corrected,
            uncorrected,
            status,
        };
        self.endpoint(stamp, Some(answered), error, offset);
        if let Some(p) = self.phase(stamp.intended) {
            p.completed += 1;
            p.errors += u64::from(error);
            super::record_clamped(&mut p.latency, corrected);
        }
    }

    /// `stamp`'s request ended `now` without a response.
    pub fn lost(&mut self, stamp: Stamp, why: Loss, now: Nanos) {
        if !stamp.measured {
            return;
        }
        let offset = self.window.offset(now);
        let iv = self.stats.intervals.at(offset);
        iv.errors += 1;
        match why {
            Loss::Read(_) => iv.kinds.read += 1,
            Loss::Write => iv.kinds.write += 1,
            Loss::Timeout => iv.kinds.timeout += 1,
        }
        if let Some(p) = self.phase(stamp.intended) {
            p.errors += 1;
        }
        if let Some(l) = self.stats.llm.as_mut() {
            l.lost += 1;
        }
        let c = &mut self.stats.counters;
        let e = &mut c.errors;
        match why {
            Loss::Read(cause) => {
                e.read += 1;
                c.read_causes.count(cause);
            }
            Loss::Write => e.write += 1,
            Loss::Timeout => {
                e.timeout += 1;
                self.unfinished(stamp.intended, now);
            }
        }
        self.endpoint(stamp, None, true, offset);
        self.endpoint_unfinished(stamp, now);
    }

    /// Files the lower bound of an unfinished request intended at
    /// `intended` and given up `at`: its age then.
    fn unfinished(&mut self, intended: Nanos, at: Nanos) {
        let age = to_us(at.saturating_sub(intended));
        if let Some(p) = self.phase(intended) {
            super::record_clamped(&mut p.unfinished, age);
        }
        let s = &mut self.stats;
        ThreadStats::record(&mut s.unfinished, &mut s.counters.saturated, age);
        let iv = s.intervals.at(self.window.offset(at));
        super::record_clamped(&mut iv.unfinished, age);
    }

    /// A measured request of an endpoint (a flow's step) was lost, or was
    /// still on the wire at the end, `now`: its age then is a lower bound
    /// of its latency.
    fn endpoint_unfinished(&mut self, stamp: Stamp, now: Nanos) {
        let kept = !self.stats.endpoints.is_empty() || self.stats.visits.is_some();
        if let Some(e) = stamp.endpoint.filter(|_| kept) {
            let age = to_us(now.saturating_sub(stamp.intended));
            self.stats.record_endpoint_unfinished(usize::from(e), age);
        }
    }

    /// A measured request of an endpoint (a flow's step) ended: answered
    /// (`Some`), or lost.
    fn endpoint(
        &mut self,
        stamp: Stamp,
        answered: Option<super::Answered>,
        error: bool,
        offset: u64,
    ) {
        let kept = !self.stats.endpoints.is_empty() || self.stats.visits.is_some();
        let Some(e) = stamp.endpoint.filter(|_| kept) else {
            return;
        };
        let e = usize::from(e);
        self.stats.record_endpoint(e, answered, error);
        self.stats
            .intervals
            .at(offset)
            .record_endpoint(e, answered.map(|a| a.corrected), error);
    }

    /// The run's requests are the steps of a flow's visits: visits are
    /// counted, and each step's figures kept under its index.
    pub fn by_visits(&mut self) {
        self.stats.visits.get_or_insert_with(Default::default);
    }

    /// A visit scheduled at `start` began (its flow ran to its first
    /// pause).
    pub fn visit_started(&mut self, start: Nanos) {
        if let Some(v) = self.visits_at(start) {
            v.started += 1;
        }
    }

    /// A visit scheduled at `start` ended at `end`: completed, or failed
    /// for `reason`.
    pub fn visit_ended(&mut self, start: Nanos, end: Nanos, failed: Option<&str>) {
        if let Some(v) = self.visits_at(start) {
            match failed {
                None => v.complete(to_us(end.saturating_sub(start))),
                Some(reason) => v.fail(reason),
            }
        }
    }

    /// A visit scheduled at `start` was still running at `end`.
    pub fn visit_in_flight_at_end(&mut self, start: Nanos, end: Nanos) {
        if let Some(v) = self.visits_at(start) {
            v.in_flight += 1;
            v.unfinished_at(to_us(end.saturating_sub(start)));
        }
    }

    /// The schedule's visits in the window that never started by `end`,
    /// `count(a, b)` counting those scheduled in `[a, b)`: filed at their
    /// ages, a bucket of the window at a time (see `never_taken`).
    pub fn visits_never_started(&mut self, end: Nanos, count: impl FnMut(Nanos, Nanos) -> u64) {
        let from = self.window.measure_from;
        let Some(v) = self.stats.visits.as_mut() else {
            return;
        };
        let (n, _) = super::unfinished::record_ages(&mut v.unfinished, from, end, 0, count);
        v.never_started += n;
    }

    fn visits_at(&mut self, start: Nanos) -> Option<&mut super::VisitStats> {
        let measured = self.window.measures(start);
        self.stats.visits.as_mut().filter(|_| measured)
    }

    /// A request due at `due` waited for a free connection.
    pub fn queued(&mut self, due: Nanos) {
        self.stats.counters.queued += u64::from(self.window.measures(due));
    }

    /// A request due at `due` found no free slot, for `why`, and begins to
    /// wait for one.
    pub fn waits(&mut self, due: Nanos, why: Wait) {
        self.waits_n(due, why, 1);
    }

    /// `n` requests due from `due` on found no free slot, for `why`.
    pub fn waits_n(&mut self, due: Nanos, why: Wait, n: u64) {
        if self.window.measures(due) {
            self.stats.counters.waits.count_n(why, n);
        }
    }

    /// A connection opened `now`: its TCP connect took `connect` and its
    /// TLS handshake `tls`, when it has one. Every connection counts, those
    /// opened before the measured window too (in its first interval, those
    /// before the run began as [`Recorder::begin`] puts them there).
    pub fn connected(&mut self, now: Nanos, connect: Nanos, tls: Option<Nanos>) {
        let (connect, tls) = (to_us(connect), tls.map(to_us));
        self.stats.timings.connection(connect, tls);
        if !self.begun {
            return;
        }
        let iv = self.stats.intervals.at(self.window.offset(now));
        super::record_clamped(&mut iv.connect, connect);
        if let Some(tls) = tls {
            super::record_clamped(&mut iv.tls_handshake, tls);
        }
    }

    /// An attempt to connect failed `now`, for `cause`.
    pub fn connect_failed(&mut self, now: Nanos, cause: ConnectCause) {
        if self.window.past_warmup(now) {
            self.stats.counters.errors.connect += 1;
            self.stats.counters.connect_causes.count(cause);
            self.stats
                .intervals
                .at(self.window.offset(now))
                .kinds
                .connect += 1;
        }
    }

    /// The connections of this thread: `initial` at the start, `peak` at
    /// most, `on_demand` of them opened for requests that waited; and, when
    /// the pool found the server's connection limit, the most that the
    /// server answered on at once.
    pub fn connections(
        &mut self,
        initial: usize,
        peak: usize,
        on_demand: u64,
        accepted: Option<usize>,
    ) {
        self.stats.counters.connections = super::Pool {
            initial: initial as u64,
            peak: peak as u64,
            opened_on_demand: on_demand,
            server_accepted: accepted.map(|n| n as u64),
        };
    }

    /// `stamp`'s request, just counted as timed out, was on a connection
    /// the server never answered while it answered others.
    pub fn timed_out_unanswered(&mut self, stamp: Stamp) {
        if stamp.measured {
            self.stats.counters.timeout_unanswered += 1;
        }
    }

    /// A QUIC connection's packets, as it closes or the run ends.
    pub fn packets(&mut self, p: crate::http::Packets) {
        let q = &mut self.stats.counters.quic;
        q.packets_sent += p.sent;
        q.packets_lost += p.lost;
        q.zero_rtt += u64::from(p.zero_rtt);
        q.zero_rtt_offered += u64::from(p.zero_rtt_offered);
    }

    /// The server closed a WebSocket connection with `code` (1005: it gave
    /// none).
    pub fn ws_closed(&mut self, code: u16) {
        self.stats.counters.ws_closes.count(code);
    }

    /// The server refused a WebSocket upgrade with `status` (0: with an
    /// answer that is no valid upgrade's).
    pub fn ws_refused(&mut self, status: u16) {
        self.stats.counters.ws_refused.count(status);
    }

    /// A WebSocket connection's messages beyond requests and answers, as
    /// it closes or the run ends.
    pub fn ws_messages(&mut self, m: crate::http::Messages) {
        self.stats.counters.ws_unasked += m.unasked;
        self.stats.counters.ws_pings += m.pings;
        match m.deflate {
            Some(true) => self.stats.counters.ws_deflate_agreed += 1,
            Some(false) => self.stats.counters.ws_deflate_declined += 1,
            None => {}
        }
    }

    /// A connection that had opened ended for `why`, and another takes its
    /// place.
    pub fn reopened(&mut self, why: super::Reopen) {
        let c = &mut self.stats.counters;
        c.reconnects += 1;
        c.reopens.count(why);
    }

    /// At the run's `end`: `stamp`'s request is still unanswered.
    pub fn in_flight_at_end(&mut self, stamp: Stamp, end: Nanos) {
        if stamp.measured {
            self.stats.counters.in_flight += 1;
            self.unfinished(stamp.intended, end);
            self.endpoint_unfinished(stamp, end);
        }
    }

    /// `--sse`: response bodies are read as event streams, and their
    /// events timed.
    pub fn read_events(&mut self, kind: super::EventKind) {
        self.stats.events = Some(super::EventStats {
            kind,
            ..Default::default()
        });
    }

    /// An event of `stamp`'s response came `now`; `previous` is when the
    /// one before it came (`None`: it is the first).
    pub fn message(&mut self, stamp: Stamp, previous: Option<Nanos>, now: Nanos) {
        let Some(e) = self.stats.events.as_mut().filter(|_| stamp.measured) else {
            return;
        };
        e.count += 1;
        let iv = self.stats.intervals.at(self.window.offset(now));
        if let (None, Some(l)) = (previous, self.stats.llm.as_mut()) {
            l.first_token(stamp.intended, stamp.sent(), now);
        }
        if previous.is_none() && now < stamp.intended {
            e.before_due += 1;
        }
        let (total, interval, us) = match previous {
            None => (
                &mut e.first,
                &mut iv.first_event,
                to_us(now.saturating_sub(stamp.intended)),
            ),
            Some(at) => (&mut e.gap, &mut iv.event_gap, to_us(now.saturating_sub(at))),
        };
        super::record_clamped(total, us);
        super::record_clamped(interval, us);
    }

    /// `--llm`: response bodies are read as completion streams, judged by
    /// `goodput`.
    pub fn read_tokens(&mut self, goodput: super::llm::Goodput) {
        let bounded = goodput != super::llm::Goodput::default();
        self.stats.llm = Some(super::LlmStats::new(bounded.then_some(goodput)));
    }

    /// `stamp`'s response completed `now` with `status`, its stream
    /// having said `answer`.
    pub fn tokens_completed(
        &mut self,
        stamp: Stamp,
        answer: &super::llm::Answer,
        status: u16,
        now: Nanos,
    ) {
        let Some(l) = self.stats.llm.as_mut().filter(|_| stamp.measured) else {
            return;
        };
        let ended = l.answered(answer, status, stamp.intended, now);
        let iv = self.stats.intervals.at(self.window.offset(now));
        iv.output_tokens += ended.output;
        if let Some(t) = ended.tpot {
            super::record_clamped(&mut iv.tpot, t);
        }
    }

    /// `stamp`'s response completed with `events` events.
    pub fn events_completed(&mut self, stamp: Stamp, events: u64) {
        if let Some(e) = self.stats.events.as_mut().filter(|_| stamp.measured) {
            e.responses += 1;
            e.completed_events += events;
            e.without_events += u64::from(events == 0);
        }
    }

    /// At the run's `end`, `stamp`'s response was still streaming (its
    /// last event came at `last`) or had no event yet: its open gap, or
    /// its first event, enters as a lower bound.
    pub fn streaming_at_end(&mut self, stamp: Stamp, last: Option<Nanos>, end: Nanos) {
        let Some(e) = self.stats.events.as_mut().filter(|_| stamp.measured) else {
            return;
        };
        e.open += 1;
        let (h, from) = match last {
            Some(at) => (&mut e.gap, at),
            None => (&mut e.first, stamp.intended),
        };
        super::record_clamped(h, to_us(end.saturating_sub(from)));
        if last.is_none() {
            self.no_token_by(stamp.intended, end);
        }
    }

    /// At the run's `end`: `stamp`'s request, written once and never
    /// processed by the server, was waiting to be sent again. It was
    /// counted as due when first sent; now it is never sent.
    pub fn unsent_at_end(&mut self, stamp: Stamp, end: Nanos) {
        if stamp.measured {
            self.stats.counters.never_sent += 1;
            self.unfinished(stamp.intended, end);
            self.no_token_by(stamp.intended, end);
        }
    }

    /// `--llm`: the request intended at `intended` had no first token by
    /// the run's `end`, which its TTFT is at least.
    fn no_token_by(&mut self, intended: Nanos, end: Nanos) {
        if let Some(l) = self.stats.llm.as_mut() {
            l.waiting_at_end(intended, end);
        }
    }

    /// HTTP/2: the server reset `stamp`'s stream with error `code`: the
    /// request is lost, as a read error.
    pub fn reset(&mut self, stamp: Stamp, code: u32, now: Nanos) {
        if stamp.measured {
            self.stats.counters.http2.resets.count(code);
        }
        self.lost(stamp, Loss::Read(ReadCause::Reset), now);
    }

    /// HTTP/2: a GOAWAY with error `code` came `now`.
    pub fn goaway(&mut self, code: u32, now: Nanos) {
        if self.window.past_warmup(now) {
            self.stats.counters.http2.goaway.count(code);
        }
    }

    /// HTTP/2: a connection broke the protocol `now`.
    pub fn connection_error(&mut self, now: Nanos) {
        if self.window.past_warmup(now) {
            self.stats.counters.http2.connection_errors += 1;
        }
    }

    /// HTTP/2: `stamp`'s request was never processed and goes out again.
    pub fn retried(&mut self, stamp: Stamp) {
        if stamp.measured {
            self.stats.counters.http2.retried += 1;
        }
    }

    /// At the run's `end`: a request due at `due` was never sent.
    pub fn never_sent(&mut self, due: Nanos, end: Nanos) {
        if self.window.measures(due) {
            if let Some(p) = self.phase(due) {
                p.due += 1;
            }
            let c = &mut self.stats.counters;
            c.never_sent += 1;
            c.due += 1;
            self.unfinished(due, end);
            self.no_token_by(due, end);
        }
    }

    /// At the run's `end`: the requests of the schedule that were never
    /// taken, known only by number (`count(a, b)` counts those intended in
    /// `[a, b)`), are due and never sent; their ages are filed bucket by
    /// bucket ([`super::unfinished::record_ages`]).
    pub fn never_taken(&mut self, end: Nanos, mut count: impl FnMut(Nanos, Nanos) -> u64) {
        let from = self.window.measure_from;
        let mut ages = super::new_histogram();
        let (mut n, mut saturated) = (0, 0);
        if self.phases.is_empty() {
            (n, saturated) = super::unfinished::record_ages(&mut ages, from, end, 0, count);
        } else {
            // Phase by phase, each walk starting at its newest age.
            for i in 0..self.phases.len() {
                let (lo, hi) = self.phases.span(i);
                let (lo, hi) = (lo.max(from), hi.min(end));
                if lo >= hi {
                    continue;
                }
                let min_age = to_us(end - hi);
                let within = |a: Nanos, b: Nanos| {
                    let (a, b) = (a.max(lo), b.min(hi));
                    if a < b {
                        count(a, b)
                    } else {
                        0
                    }
                };
                let mut fresh = super::new_histogram();
                let (pn, ps) = super::unfinished::record_ages(&mut fresh, lo, end, min_age, within);
                let p = &mut self.stats.phases[i];
                p.due += pn;
                add_histogram(&mut p.unfinished, &fresh);
                add_histogram(&mut ages, &fresh);
                n += pn;
                saturated += ps;
            }
        }
        if n == 0 {
            return;
        }
        let s = &mut self.stats;
        s.counters.never_sent += n;
        s.counters.due += n;
        s.counters.saturated += saturated;
        add_histogram(&mut s.unfinished, &ages);
        if let Some(l) = s.llm.as_mut() {
            l.waiting_ages(&ages);
        }
        let iv = s.intervals.at(self.window.offset(end));
        add_histogram(&mut iv.unfinished, &ages);
    }

    /// At the end: the requests the run passed over because it began late
    /// (`count(a, b)` counts them in `[a, b)`). They are due and never
    /// sent, but their ages are the lateness of this instance's start, not
    /// anything the server did: they stay out of every latency
    /// distribution, the conservative one included.
    pub fn missed_at_start(&mut self, end: Nanos, mut count: impl FnMut(Nanos, Nanos) -> u64) {
        let from = self.window.measure_from;
        if from >= end {
            return;
        }
        let n = count(from, end);
        if n == 0 {
            return;
        }
        for i in 0..self.phases.len() {
            let (lo, hi) = self.phases.span(i);
            let (lo, hi) = (lo.max(from), hi.min(end));
            if lo < hi {
                self.stats.phases[i].due += count(lo, hi);
            }
        }
        let c = &mut self.stats.counters;
        c.missed_at_start += n;
        c.never_sent += n;
        c.due += n;
    }

    /// At the end: where this thread's connections stood.
    pub fn at_end(&mut self, at_end: AtEnd) {
        self.stats.counters.at_end = at_end;
    }

    /// Intervals closed since the last call, below interval `below`, for
    /// the main thread to write while the run goes on (once per publish,
    /// never per request).
    pub fn take_closed_intervals(&mut self, now: Nanos, below: u64) -> Vec<EncodedInterval> {
        let offset = self.window.offset(now);
        self.stats.intervals.take_closed(offset, below)
    }

    /// The run is over: closes the last interval.
    pub fn finish(mut self, cpu: Duration, script_calls: u64) -> ThreadStats {
        if !self.paced {
            // See `completed`: in the closed loop they were not recorded
            // twice.
            self.stats.uncorrected.clone_from(&self.stats.latency);
            let t = &mut self.stats.timings;
            t.ttfb_uncorrected.clone_from(&t.ttfb);
        }
        self.stats.intervals.finish();
        self.stats.cpu = cpu;
        self.stats.script_calls = script_calls;
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response without a call's status.
    fn reply(status: u16, bytes: u64, first_byte: Nanos) -> Reply {
        Reply {
            status,
            rpc: None,
            checked: None,
            bytes,
            first_byte,
        }
    }
    use crate::stats::HIST_HIGH_US;

    const MS: Nanos = 1_000_000;
    const SEC: Nanos = 1_000_000_000;

    fn recorder(endpoints: usize) -> Recorder {
        let mut r = Recorder::new(Duration::from_secs(1), endpoints, None);
        r.begin(
            Window {
                measure_from: SEC,
                end: 3 * SEC,
            },
            true,
        );
        r
    }

    #[test]
    fn the_window_decides_at_the_send_and_the_stamp_carries_it() {
        let mut r = recorder(0);
        let early = r.sent(SEC - 1, SEC, None);
        let inside = r.sent(SEC, SEC + 2 * MS, None);
        let late = r.sent(3 * SEC, 3 * SEC, None);
        assert_eq!(
            (early.measured(), inside.measured(), late.measured()),
            (false, true, false)
        );
        // Only the measured one is due, and its lag is kept.
        assert_eq!(r.stats().counters.due, 1);
        assert_eq!(r.stats().send_lag.len(), 1);
        let lag = &r.stats().send_lag;
        assert!(lag.equivalent(lag.max(), 2_000));
        r.completed(early, reply(200, 10, 2 * SEC), 2 * SEC);
        r.lost(late, Loss::Read(ReadCause::Closed), 3 * SEC);
        r.completed(inside, reply(503, 10, SEC + 3 * MS), SEC + 5 * MS);
        let s = r.finish(Duration::ZERO, 0);
        // Its head began 3 ms after its intended time, 1 ms after its send.
        let t = &s.timings;
        assert_eq!((t.ttfb.len(), t.ttfb_uncorrected.len()), (1, 1));
        assert!(t.ttfb.equivalent(t.ttfb.max(), 3_000));
        assert!(t
            .ttfb_uncorrected
            .equivalent(t.ttfb_uncorrected.max(), 1_000));
        let c = s.counters;
        assert_eq!((c.completed, c.errors.status, c.bytes), (1, 1, 10));
        assert_eq!(c.status_codes.to_string(), "503 1");
        assert_eq!(c.errors.read, 0);
        assert_eq!(s.latency.len(), 1);
        assert!(s.latency.equivalent(s.latency.max(), 5_000));
        assert!(s.uncorrected.equivalent(s.uncorrected.max(), 3_000));
    }

    #[test]
    fn a_pipelined_request_sent_before_its_slot_is_measured_from_its_send() {
        let mut r = recorder(0);
        let ahead = r.sent(2 * SEC, SEC + MS, None);
        assert_eq!(ahead.sent(), SEC + MS);
        r.completed(ahead, reply(200, 0, SEC + 2 * MS), SEC + 2 * MS);
        let s = r.stats();
        assert!(s.latency.equivalent(s.latency.max(), 1_000));
        assert_eq!(s.send_lag.max(), 1); // no lag, clamped up to the floor
    }

    #[test]
    fn unpaced_runs_keep_no_send_lag() {
        let mut r = Recorder::new(Duration::from_secs(1), 0, None);
        r.begin(Window::ALL, false);
        r.sent(5, 5, None);
        assert_eq!((r.stats().counters.due, r.stats().send_lag.len()), (1, 0));
    }

    #[test]
    fn losses_are_counted_by_reason_in_totals_intervals_and_endpoints() {
        let mut r = recorder(2);
        let a = r.sent(SEC, SEC, Some(1));
        let b = r.sent(SEC, SEC, Some(1));
        let c = r.sent(SEC, SEC, None);
        r.lost(a, Loss::Timeout, 2 * SEC);
        r.lost(b, Loss::Write, 2 * SEC);
        r.completed(c, reply(200, 1, 2 * SEC), 2 * SEC);
        let s = r.finish(Duration::ZERO, 0);
        let e = s.counters.errors;
        assert_eq!((e.timeout, e.write, e.read), (1, 1, 0));
        assert_eq!((s.endpoints[1].errors, s.endpoints[1].completed), (2, 0));
        assert_eq!(s.endpoints[0].errors, 0);
        let errors: u64 = s.intervals.closed().iter().map(|i| i.errors).sum();
        assert_eq!(errors, 2);
    }

    /// A request that waits to go on the wire (no stream the server has
    /// granted) is sent when a session takes it: the wait is send lag, and
    /// corrected = send lag + uncorrected. One the server never processed
    /// and that goes out again keeps its first send and its lag.
    #[test]
    fn a_request_is_sent_when_it_leaves_and_keeps_its_first_send() {
        let mut r = recorder(0);
        let due = r.due(SEC, SEC, None);
        assert_eq!((r.stats().counters.due, r.stats().send_lag.len()), (1, 0));
        // It left 300 ms later, was refused at 310 ms and left again at
        // 320 ms: only the first leaving is its send.
        let left = due.leaving(SEC + 300 * MS);
        r.left(due, SEC + 300 * MS);
        r.waits_again(left, SEC + 310 * MS);
        assert_eq!(left.leaving(SEC + 320 * MS), left);
        r.left(left, SEC + 320 * MS);
        r.completed(left, reply(200, 0, SEC + 340 * MS), SEC + 350 * MS);
        let s = r.finish(Duration::ZERO, 0);
        assert_eq!(s.send_lag.len(), 1);
        assert!(s.send_lag.equivalent(s.send_lag.max(), 300_000));
        assert!(s.uncorrected.equivalent(s.uncorrected.max(), 50_000));
        assert!(s.latency.equivalent(s.latency.max(), 350_000));
        // Two sends in the interval, one return.
        let iv = &s.intervals.closed()[0];
        assert_eq!((iv.sent, iv.returned), (2, 1));
    }

    /// In the closed loop a request is intended when it leaves, whenever
    /// it fell due.
    #[test]
    fn in_the_closed_loop_a_request_is_intended_as_it_leaves() {
        let mut r = Recorder::new(Duration::from_secs(1), 0, None);
        r.begin(Window::ALL, false);
        let due = r.due(5, 5, None);
        let left = due.leaving(9);
        r.left(due, 9);
        r.completed(left, reply(200, 0, 10), 12);
        let s = r.finish(Duration::ZERO, 0);
        assert_eq!(s.latency.max(), s.uncorrected.max());
    }

    #[test]
    fn latencies_past_the_range_are_recorded_at_its_top_and_counted() {
        let mut r = recorder(0);
        let a = r.sent(SEC, SEC, None);
        let huge = SEC + (HIST_HIGH_US + 5) * 1_000;
        r.completed(a, reply(200, 0, huge), huge);
        let s = r.stats();
        // Both the corrected and the uncorrected figure saturate.
        assert_eq!(s.counters.saturated, 2);
        assert!(s.latency.equivalent(s.latency.max(), HIST_HIGH_US));
    }

    /// Sends, returns to wait and sends again are filed in the interval of
    /// when they happened, measured requests only: what the dashboard's
    /// requests in flight at each interval's end are made of.
    #[test]
    fn sends_and_returns_are_filed_by_interval() {
        let mut r = recorder(0);
        let warm = r.sent(SEC - 1, SEC - 1, None);
        let a = r.sent(SEC, SEC, None);
        r.waits_again(a, SEC + MS);
        r.waits_again(warm, SEC + MS);
        r.left(a, 2 * SEC + MS);
        r.left(warm, 2 * SEC + MS);
        let s = r.finish(Duration::ZERO, 0);
        let by_interval: Vec<(u64, u64, u64)> = s
            .intervals
            .closed()
            .iter()
            .map(|i| (i.index, i.sent, i.returned))
            .collect();
        assert_eq!(by_interval, [(0, 1, 1), (1, 1, 0)]);
    }

    #[test]
    fn books_balance_with_never_sent_and_in_flight_requests() {
        let mut r = recorder(0);
        let a = r.sent(SEC, SEC, None);
        let b = r.sent(SEC, SEC, None);
        r.completed(a, reply(200, 0, SEC + MS), SEC + MS);
        r.in_flight_at_end(b, 2 * SEC);
        r.never_sent(2 * SEC, 2 * SEC);
        r.never_sent(SEC - 1, 2 * SEC); // before the window: not due
                                        // Three more, at 1.5 s, 1.6 s and 1.7 s.
        r.never_taken(2 * SEC, |a, b| {
            [15, 16, 17]
                .iter()
                .filter(|&&t| (a..b).contains(&(t * SEC / 10)))
                .count() as u64
        });
        r.queued(SEC);
        r.queued(0);
        let s = r.finish(Duration::ZERO, 0);
        let c = s.counters;
        assert_eq!((c.due, c.never_sent, c.in_flight, c.queued), (6, 4, 1, 1));
        assert!(c.balanced());
        assert_eq!(c.unfinished(), 5);
        assert_eq!(s.unfinished.len(), 5);
    }

    /// `--llm`: a request without a first token at the end, whether its
    /// stream had begun, it was on the wire, or it was never sent, has a
    /// TTFT of at least its age then.
    #[test]
    fn every_request_without_a_token_at_the_end_bounds_ttft() {
        let mut r = recorder(0);
        r.read_events(crate::stats::EventKind::Sse);
        r.read_tokens(crate::stats::llm::Goodput::default());
        let waiting = r.sent(SEC, SEC, None);
        r.streaming_at_end(waiting, None, 2 * SEC);
        r.never_sent(SEC + 500 * MS, 2 * SEC);
        r.never_taken(2 * SEC, |a, b| {
            u64::from(a <= SEC + 900 * MS && SEC + 900 * MS < b)
        });
        let s = r.finish(Duration::ZERO, 0);
        let l = s.llm.expect("reading tokens");
        assert_eq!((l.open, l.ttft.len()), (3, 3));
        assert!(l.ttft.equivalent(l.ttft.min(), 100_000), "{}", l.ttft.min());
        assert!(
            l.ttft.equivalent(l.ttft.max(), 1_000_000),
            "{}",
            l.ttft.max()
        );
    }

    /// Every request that did not complete is filed at its age when it was
    /// given up: a lower bound of its latency.
    #[test]
    fn unfinished_requests_are_filed_at_their_ages() {
        let mut r = recorder(0);
        let timed_out = r.sent(SEC, SEC + MS, None);
        let read = r.sent(SEC, SEC, None);
        let open = r.sent(SEC + 500 * MS, SEC + 500 * MS, None);
        r.lost(timed_out, Loss::Timeout, SEC + 300 * MS);
        r.lost(read, Loss::Read(ReadCause::Closed), SEC + 300 * MS);
        r.in_flight_at_end(open, 2 * SEC);
        r.never_sent(SEC + 900 * MS, 2 * SEC);
        let s = r.finish(Duration::ZERO, 0);
        let ages: Vec<u64> = s
            .unfinished
            .iter_recorded()
            .map(|v| v.value_iterated_to())
            .collect();
        let within = |got: u64, us: u64| s.unfinished.equivalent(got, us);
        // 100 ms, 300 ms and 500 ms; the read error is not unfinished.
        assert_eq!(ages.len(), 3, "{ages:?}");
        assert!(within(ages[0], 100_000) && within(ages[1], 300_000) && within(ages[2], 500_000));
        assert_eq!(s.counters.unfinished(), 3);
        assert_eq!(s.latency.len(), 0);
        // The timeout in the interval it was given up in; the rest in the
        // interval of the end.
        let recorders = [&s.intervals];
        let per_interval: Vec<u64> =
            crate::stats::interval::merged(&recorders, 2 * Duration::from_secs(1))
                .map(|i| i.unfinished.len())
                .collect();
        assert_eq!(per_interval, [1, 2]);
    }

    /// A flow's step on the wire at the end is filed in its step at its
    /// age then, as a lost one is at its age when given up: the step's
    /// terms see a stall that outlasts the run.
    #[test]
    fn a_steps_unfinished_requests_are_filed_in_the_step() {
        let mut r = recorder(0);
        r.by_visits();
        let lost = r.sent(SEC, SEC, Some(0));
        let open = r.sent(SEC + 500 * MS, SEC + 500 * MS, Some(2));
        r.lost(lost, Loss::Timeout, SEC + 300 * MS);
        r.in_flight_at_end(open, 2 * SEC);
        let s = r.finish(Duration::ZERO, 0);
        let ages = |e: usize| {
            let h = s.endpoints[e].unfinished.as_ref().expect("filed");
            (h.len(), h.max() / 1000)
        };
        assert_eq!(s.endpoints.len(), 3, "the list grows to the step");
        assert_eq!(ages(0), (1, 300));
        assert_eq!(ages(2), (1, 500));
        assert!(s.endpoints[1].unfinished.is_none());
    }

    #[test]
    fn connect_errors_count_from_the_warmup_on() {
        let mut r = recorder(0);
        r.connect_failed(SEC - 1, ConnectCause::Refused);
        r.connect_failed(SEC, ConnectCause::Refused);
        r.connect_failed(4 * SEC, ConnectCause::Refused);
        assert_eq!(r.stats().counters.errors.connect, 2);
    }

    /// Connections opened before the run began (when its window was not
    /// known) count in its first interval, and leave the intervals where
    /// they were: the answers after them still land by their own times.
    #[test]
    fn connects_before_the_run_count_in_its_first_interval() {
        let mut r = Recorder::new(Duration::from_secs(1), 0, None);
        r.connected(50 * SEC, 300_000, Some(900_000));
        r.begin(
            Window {
                measure_from: 60 * SEC,
                end: 63 * SEC,
            },
            true,
        );
        let stamp = r.sent(60 * SEC, 60 * SEC, None);
        r.completed(stamp, reply(200, 10, 60 * SEC + MS), 60 * SEC + MS);
        r.connected(61 * SEC + 1, 200_000, None);
        let stats = r.finish(Duration::ZERO, 0);
        assert_eq!(stats.timings.connect.len(), 2);
        let intervals: Vec<crate::stats::IntervalStats> =
            crate::stats::interval::merged(&[&stats.intervals], 3 * Duration::from_secs(1))
                .collect();
        assert_eq!(intervals.len(), 3);
        let counts: Vec<(u64, u64, u64)> = intervals
            .iter()
            .map(|iv| (iv.completed, iv.connect.len(), iv.tls_handshake.len()))
            .collect();
        assert_eq!(counts, [(1, 1, 1), (0, 1, 0), (0, 0, 0)]);
        assert_eq!(intervals[0].status_codes.get(200), 1);
    }

    #[test]
    fn offsets_stay_inside_the_window() {
        let w = Window {
            measure_from: SEC,
            end: 3 * SEC,
        };
        assert_eq!(w.offset(0), 0);
        assert_eq!(w.offset(SEC + 5), 5);
        assert_eq!(w.offset(5 * SEC), 2 * SEC - 1);
    }
}
