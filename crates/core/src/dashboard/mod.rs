//! `--dashboard`: a live page of the run, served while it goes and with
//! its final report after it.
//!
//! The dashboard reads only what the main thread already has: each
//! interval as every thread has closed it (the same merged intervals the
//! interval log writes) and, at the end, the text report. The workers
//! never see it. A small blocking HTTP/1.1 server on its own threads
//! answers four paths:
//! - `/`: one self-contained page (no external scripts, fonts or fetches
//!   beyond this server) that draws the intervals as they come;
//! - `/events`: Server-Sent Events, one `point` event per interval, then
//!   one `report` event with the final report;
//! - `/series.json`: the configuration, every interval kept and the totals;
//! - `/metrics`: running totals and percentiles in Prometheus' text format.
//!
//! A run that keeps figures per endpoint (a flow's steps, a requests file's
//! names) has them in each point (`endpoints`), in the totals, and in
//! `/metrics` under an `endpoint` label.
//!
//! One instance of a sharded run (`--shard I/N`) labels every series of
//! `/metrics` `shard="I/N"`, so that a Prometheus scraping all of them
//! tells them apart (`by (shard)`) and adds them up (`sum by (le)`).
//!
//! Nothing can be changed over HTTP. The most recent [`KEPT`] intervals
//! are kept for the page and the JSON endpoint, so memory stays flat over
//! a long run; the totals cover the whole window.

mod http;
mod metrics;

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::report::json::{EndpointPoint, Point};
use crate::schedule::Shard;
use crate::stats::{new_histogram, Errors, IntervalStats, StatusCodes};

/// Intervals kept for the page and `/series.json`: 2048 intervals, about
/// half an hour at the default 1 s, a few hundred bytes each.
pub const KEPT: usize = 2048;

/// The dashboard of one run: its address and what it shows.
pub struct Dashboard {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// The run counts tokens (`--llm`): each point says how many.
    tokens: bool,
}

/// What the server threads read and the main thread writes.
struct Shared {
    state: Mutex<State>,
    /// Signalled on every new interval and when the report comes.
    changed: Condvar,
}

struct State {
    /// The run's description, as the JSON document has it.
    config: String,
    /// The most recent intervals, as JSON objects, oldest first; the first
    /// is interval number `seq - points.len()`.
    points: VecDeque<String>,
    /// Intervals received so far.
    seq: u64,
    totals: Totals,
    /// The final text report, once the run is over.
    report: Option<String>,
    /// What the intervals so far moved, for each point's requests in
    /// flight and due but not sent at its end.
    flow: Flow,
    /// Requests in flight and due but not sent, at the last look (about
    /// once a second): `/metrics`' gauges, which say how things are now.
    in_flight: u64,
    waiting: u64,
    /// The run's requests are a flow's steps: what the schedule intends
    /// is visits.
    visits: bool,
    /// The labels every series of `/metrics` carries, written out
    /// (`shard="0/3"`), or empty.
    labels: String,
}

/// Running sums over the intervals so far: requests written (and written
/// again), come back to wait to be written again, ended, and intended.
/// At an interval's end, what was written and neither ended nor came back
/// is in flight, and what was intended and is not out is due but not sent:
/// exact for every interval, from the figures the intervals carry, where
/// a sample of the workers' totals now and then would repeat over the
/// intervals between samples and miss a short stall's peak.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Flow {
    sent: u64,
    returned: u64,
    ended: u64,
    /// `None` in the closed loop, where nothing is due at a set time.
    intended: Option<u64>,
}

impl Flow {
    fn add(&mut self, iv: &IntervalStats, intended: Option<u64>) {
        self.sent += iv.sent;
        self.returned += iv.returned;
        self.ended += iv.completed + iv.kinds.lost_requests();
        if let Some(n) = intended {
            *self.intended.get_or_insert(0) += n;
        }
    }

    /// Written and neither ended nor waiting to be written again.
    fn in_flight(&self) -> u64 {
        self.sent.saturating_sub(self.returned + self.ended)
    }

    /// Intended and not out (never written, or waiting to be written
    /// again). A request written ahead of its time (pipelined) is out
    /// before it is due: none is counted below zero.
    fn waiting(&self) -> Option<u64> {
        let out = self.sent.saturating_sub(self.returned);
        self.intended.map(|n| n.saturating_sub(out))
    }
}

/// The whole window so far, for `/metrics` and `/series.json`.
pub(crate) struct Totals {
    pub completed: u64,
    pub errors: u64,
    pub kinds: Errors,
    /// Requests the schedule intended so far (rate mode).
    pub intended: Option<u64>,
    /// Seconds of the window covered by the intervals so far.
    pub seconds: f64,
    pub latency: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    pub send_lag: Histogram<u64>,
    /// Responses by status code.
    pub status_codes: StatusCodes,
    /// Time to first byte (from the intended send time), TCP connect and
    /// TLS handshake; `--sse`'s first events (from the intended send time)
    /// and gaps between events.
    pub ttfb: Histogram<u64>,
    pub connect: Histogram<u64>,
    pub tls_handshake: Histogram<u64>,
    pub first_event: Histogram<u64>,
    pub event_gap: Histogram<u64>,
    /// Each endpoint's, in the order they first had anything.
    pub endpoints: Vec<EndpointTotals>,
    /// `--llm`: the answers in tokens (else `None`).
    pub llm: Option<TokenTotals>,
}

/// `--llm`'s whole window so far.
pub(crate) struct TokenTotals {
    /// Output tokens of the answers that ended.
    pub output: u64,
    /// Time to first token from the intended send time, and time per
    /// output token (µs).
    pub ttft: Histogram<u64>,
    pub tpot: Histogram<u64>,
}

/// One endpoint's (a flow step's) whole window so far.
pub(crate) struct EndpointTotals {
    pub name: String,
    pub errors: u64,
    /// Corrected latency of its answers: as many as it completed.
    pub latency: Histogram<u64>,
}

impl Totals {
    fn add(&mut self, iv: &IntervalStats, intended: Option<u64>, names: &[String]) {
        self.completed += iv.completed;
        self.errors += iv.errors;
        self.kinds.add(&iv.kinds);
        self.seconds += iv.length.as_secs_f64();
        if let Some(n) = intended {
            *self.intended.get_or_insert(0) += n;
        }
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.latency.add(&iv.latency);
        let _ = self.uncorrected.add(&iv.uncorrected);
        let _ = self.send_lag.add(&iv.send_lag);
        self.status_codes.add(&iv.status_codes);
        let _ = self.ttfb.add(&iv.ttfb);
        let _ = self.connect.add(&iv.connect);
        let _ = self.tls_handshake.add(&iv.tls_handshake);
        if let Some(t) = &mut self.llm {
            t.output += iv.output_tokens;
            let _ = t.ttft.add(&iv.first_event);
            let _ = t.tpot.add(&iv.tpot);
        } else {
            let _ = self.first_event.add(&iv.first_event);
            let _ = self.event_gap.add(&iv.event_gap);
        }
        for (name, e) in names.iter().zip(&iv.endpoints) {
            let Some(e) = e.as_ref().filter(|e| !e.is_empty()) else {
                continue;
            };
            let into = match self.endpoints.iter().position(|t| &t.name == name) {
                Some(i) => &mut self.endpoints[i],
                None => {
                    self.endpoints.push(EndpointTotals {
                        name: name.clone(),
                        errors: 0,
                        latency: new_histogram(),
                    });
                    self.endpoints.last_mut().expect("just pushed")
                }
            };
            into.errors += e.errors;
            let _ = into.latency.add(&e.latency);
        }
    }
}

impl Dashboard {
    /// Listens on `addr` (`HOST:PORT`, or a port alone for loopback) and
    /// starts serving; `config` is the run's description as JSON;
    /// `tokens` says the run counts tokens (`--llm`); `shard` is the part
    /// of the schedule this instance sends, which labels its series.
    pub fn start(addr: &str, config: String, tokens: bool, shard: Shard) -> io::Result<Dashboard> {
        let listener = TcpListener::bind(resolve(addr)?)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                config,
                points: VecDeque::new(),
                seq: 0,
                totals: Totals {
                    completed: 0,
                    errors: 0,
                    kinds: Errors::default(),
                    intended: None,
                    seconds: 0.0,
                    latency: new_histogram(),
                    uncorrected: new_histogram(),
                    send_lag: new_histogram(),
                    status_codes: StatusCodes::default(),
                    ttfb: new_histogram(),
                    connect: new_histogram(),
                    tls_handshake: new_histogram(),
                    first_event: new_histogram(),
                    event_gap: new_histogram(),
                    endpoints: Vec::new(),
                    llm: tokens.then(|| TokenTotals {
                        output: 0,
                        ttft: new_histogram(),
                        tpot: new_histogram(),
                    }),
                },
                report: None,
                flow: Flow::default(),
                in_flight: 0,
                waiting: 0,
                visits: false,
                labels: metrics::common_labels(shard),
            }),
            changed: Condvar::new(),
        });
        let server = shared.clone();
        std::thread::Builder::new()
            .name("metron-dashboard".into())
            .spawn(move || http::serve(listener, server))?;
        Ok(Dashboard {
            addr,
            shared,
            tokens,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether anyone beyond this machine may reach it.
    pub fn is_exposed(&self) -> bool {
        !self.addr.ip().is_loopback()
    }

    /// An interval every thread has closed, with the requests the schedule
    /// intended in it; `names` are the endpoints' by index.
    pub fn interval(&self, iv: &IntervalStats, intended: Option<u64>, names: &[String]) {
        let mut point = Point::of(iv, intended, self.tokens);
        // The page draws figures; the histograms stay in the files.
        point.histogram = None;
        point.unfinished_histogram = None;
        let mut state = self.shared.lock();
        let mut json = serde_json::to_value(&point).unwrap_or_default();
        state.flow.add(iv, intended);
        json["i"] = state.seq.into();
        json["in_flight"] = state.flow.in_flight().into();
        json["waiting"] = state.flow.waiting().into();
        if state.visits {
            json["visits"] = true.into();
        }
        let endpoints = EndpointPoint::all(iv, names);
        if !endpoints.is_empty() {
            json["endpoints"] = serde_json::to_value(endpoints).unwrap_or_default();
        }
        state.points.push_back(json.to_string());
        if state.points.len() > KEPT {
            state.points.pop_front();
        }
        state.seq += 1;
        state.totals.add(iv, intended, names);
        drop(state);
        self.shared.changed.notify_all();
    }

    /// The run has a schedule: `/metrics` counts what it intended from
    /// the start (0 through the warm-up and the first interval), not from
    /// the first interval's close, so that a rate of it is right from the
    /// first scrape.
    pub fn paced(&self) {
        self.shared.lock().totals.intended.get_or_insert(0);
    }

    /// The run's requests are a flow's steps: each point's `intended`
    /// counts visits, and says so (`visits`).
    pub fn visits(&self) {
        self.shared.lock().visits = true;
    }

    /// Requests in flight, and due but not sent yet, summed over the
    /// threads' latest figures: `/metrics`' gauges (the points carry their
    /// own, exact at each interval's end).
    pub fn outstanding(&self, in_flight: u64, waiting: u64) {
        let mut state = self.shared.lock();
        state.in_flight = in_flight;
        state.waiting = waiting;
    }

    /// The run is over: `report` is its text report, shown from now on.
    pub fn finish(&self, report: String) {
        self.shared.lock().report = Some(report);
        self.shared.changed.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicked server thread leaves the state whole (each update is
        // a push and some additions).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `HOST:PORT`, or a port alone (loopback).
fn resolve(addr: &str) -> io::Result<SocketAddr> {
    let full = if addr.parse::<u16>().is_ok() {
        format!("127.0.0.1:{addr}")
    } else {
        addr.to_string()
    };
    full.to_socket_addrs()?.next().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the name resolves to no address",
        )
    })
}

/// How often an idle event stream is sent a comment, so that proxies and
/// browsers keep it open.
const KEEPALIVE: Duration = Duration::from_secs(15);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_means_loopback() {
        assert_eq!(resolve("9090").unwrap(), "127.0.0.1:9090".parse().unwrap());
        assert_eq!(resolve("[::1]:0").unwrap(), "[::1]:0".parse().unwrap());
        assert!(resolve("nonsense").is_err());
    }

    #[test]
    fn a_run_in_tokens_counts_them_in_its_points_and_metrics() {
        let d = Dashboard::start("127.0.0.1:0", "{}".into(), true, Shard::WHOLE).unwrap();
        for i in 0..3 {
            let mut iv = IntervalStats::empty(i, Duration::from_secs(1));
            iv.output_tokens = 16 * i;
            iv.first_event.record(100_000).unwrap();
            iv.tpot.record(10_000).unwrap();
            d.interval(&iv, None, &[]);
        }
        let state = d.shared.lock();
        assert!(
            state.points[0].contains("\"output_tokens\":0"),
            "{}",
            state.points[0]
        );
        assert!(
            state.points[2].contains("\"tpot_p99\":"),
            "{}",
            state.points[2]
        );
        let text = metrics::render(&state);
        assert!(
            text.contains("\nmetron_llm_output_tokens_total 48\n"),
            "{text}"
        );
        assert!(
            text.contains("\nmetron_llm_ttft_seconds_count 3\n"),
            "{text}"
        );
        assert!(
            text.contains("\nmetron_llm_tpot_seconds_bucket{le=\"0.01\"} 3\n"),
            "{text}"
        );
    }

    #[test]
    fn totals_add_every_interval_and_points_stay_bounded() {
        let d = Dashboard::start("127.0.0.1:0", "{}".into(), false, Shard::WHOLE).unwrap();
        assert!(!d.is_exposed());
        let length = Duration::from_millis(10);
        for i in 0..(KEPT as u64 + 10) {
            let mut iv = IntervalStats::empty(i, length);
            iv.completed = 2;
            iv.latency.record_n(100, 2).unwrap();
            d.interval(&iv, Some(3), &[]);
        }
        let state = d.shared.lock();
        assert_eq!(state.points.len(), KEPT);
        assert!(state.points[0].contains("\"i\":10"), "{}", state.points[0]);
        assert_eq!(state.totals.completed, 2 * (KEPT as u64 + 10));
        assert_eq!(state.totals.intended, Some(3 * (KEPT as u64 + 10)));
        assert_eq!(state.totals.latency.len(), 2 * (KEPT as u64 + 10));
    }

    /// Three identical stalls: each point carries what was in flight and
    /// due at its own end, whatever the workers' totals said when last
    /// sampled.
    #[test]
    fn each_point_has_what_was_outstanding_at_its_end() {
        let d = Dashboard::start("127.0.0.1:0", "{}".into(), false, Shard::WHOLE).unwrap();
        let length = Duration::from_millis(100);
        // (intended, sent, returned, completed, lost): 100 a interval,
        // all answered, but three intervals in which nothing comes back
        // and half is not sent, each caught up in the next.
        let mut want = Vec::new();
        let mut i = 0;
        for _ in 0..3 {
            for (sent, returned, completed, lost, in_flight, waiting) in [
                (100, 0, 100, 0, 0, 0),
                (50, 0, 0, 0, 50, 50),
                (150, 2, 196, 2, 0, 2),
                (102, 0, 102, 0, 0, 0),
            ] {
                let mut iv = IntervalStats::empty(i, length);
                iv.sent = sent;
                iv.returned = returned;
                iv.completed = completed;
                iv.kinds.timeout = lost;
                iv.errors = lost;
                // A sample that a repeat would have copied everywhere.
                d.outstanding(2000, 20);
                d.interval(&iv, Some(100), &[]);
                want.push((in_flight, Some(waiting)));
                i += 1;
            }
        }
        let state = d.shared.lock();
        let got: Vec<(u64, Option<u64>)> = state
            .points
            .iter()
            .map(|p| {
                let v: serde_json::Value = serde_json::from_str(p).unwrap();
                (v["in_flight"].as_u64().unwrap(), v["waiting"].as_u64())
            })
            .collect();
        assert_eq!(got, want);
        // The closed loop: nothing is due at a set time.
        let mut flow = Flow::default();
        let mut iv = IntervalStats::empty(0, length);
        iv.sent = 10;
        iv.completed = 7;
        flow.add(&iv, None);
        assert_eq!((flow.in_flight(), flow.waiting()), (3, None));
    }
}
