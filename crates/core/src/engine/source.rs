//! Where a worker's requests come from, and when they are due: the
//! schedule's intended times (none in a closed loop) and the source that
//! picks each request (one static batch, the script's `request()`, or the
//! requests file).

use std::io;
use std::rc::Rc;

use bytes::Bytes;

use crate::clock::Nanos;
use crate::http::Request;
use crate::http::{metas_into, Batch, RequestMeta};
use crate::replay::Cursor;
use crate::schedule::Plan;
use crate::script::ThreadScript;

use super::EngineError;

/// Where a worker's requests come from.
pub(super) enum Source {
    /// One batch, built before the run and shared by every send.
    Static(Vec<Rc<Request>>),
    /// The script's `request()` builds each batch: its last one, and where
    /// each of its requests ends (reused, never reallocated once grown).
    Script {
        bytes: Vec<u8>,
        metas: Vec<RequestMeta>,
    },
    /// The requests file; the cursor picks every request, each built once
    /// (on first use) for this thread.
    Replay {
        cursor: Cursor,
        built: Vec<Option<Rc<Request>>>,
    },
    /// The script's visits (`flow(visit)`): each request is a visit's
    /// step, picked by the visit's key; `step` is the last one's index.
    Flow {
        bytes: Vec<u8>,
        metas: Vec<RequestMeta>,
        step: Option<u16>,
    },
}

impl Source {
    /// The requests file's, the script's (unless its requests never
    /// change), or the one static batch.
    pub fn new(
        replay: Option<Cursor>,
        script: Option<&ThreadScript>,
        request: &Batch,
    ) -> io::Result<Source> {
        Ok(match (replay, script) {
            (Some(cursor), _) => {
                let built = vec![None; cursor.set().len()];
                Source::Replay { cursor, built }
            }
            (None, Some(script)) if script.has_flow() => Source::Flow {
                bytes: Vec::new(),
                metas: Vec::with_capacity(1),
                step: None,
            },
            (None, Some(script)) if !script.is_static() => Source::Script {
                bytes: Vec::new(),
                metas: Vec::with_capacity(4),
            },
            (None, _) => Source::Static(static_batch(request)?),
        })
    }

    /// The script builds each request, which may take a while.
    pub fn is_scripted(&self) -> bool {
        matches!(self, Source::Script { .. } | Source::Flow { .. })
    }

    /// Puts the next batch in `batch`: the static one, the requests file's
    /// `request` (built on first use), or what the script's `request()`
    /// returns.
    pub fn load(
        &mut self,
        request: u32,
        script: Option<&mut ThreadScript>,
        batch: &mut Vec<Rc<Request>>,
    ) -> Result<(), EngineError> {
        batch.clear();
        match self {
            Source::Static(requests) => batch.extend(requests.iter().cloned()),
            Source::Replay { cursor, built } => {
                let set = cursor.set();
                let r = built[request as usize].get_or_insert_with(|| {
                    Rc::new(Request::new(set.wire(request), set.get(request).head))
                });
                batch.push(Rc::clone(r));
            }
            Source::Script { bytes, metas } => {
                let script = script.expect("a script source has a script");
                script.request_batch(bytes, metas)?;
                let bytes = Bytes::copy_from_slice(bytes);
                let requests = Request::split(&bytes, metas);
                batch.extend(requests.into_iter().map(Rc::new));
            }
            Source::Flow { bytes, metas, step } => {
                let script = script.expect("a flow source has a script");
                *step = script.visit_request(request, bytes, metas)?;
                if step.is_some() {
                    let bytes = Bytes::copy_from_slice(bytes);
                    let requests = Request::split(&bytes, metas);
                    batch.extend(requests.into_iter().map(Rc::new));
                }
            }
        }
        Ok(())
    }

    /// The request of the schedule's next intended time (rate mode).
    pub fn next_scheduled(&mut self) -> u32 {
        match self {
            Source::Replay { cursor, .. } => {
                let request = cursor.peek();
                cursor.advance();
                request
            }
            _ => 0,
        }
    }

    /// The next request for a connection to `peer` (closed loop).
    pub fn next_for(&mut self, peer: usize) -> u32 {
        match self {
            Source::Replay { cursor, .. } => cursor.next_for_host(peer),
            _ => 0,
        }
    }

    /// The request of the schedule's next intended time, not taken.
    pub fn upcoming(&self) -> u32 {
        match self {
            Source::Replay { cursor, .. } => cursor.peek(),
            _ => 0,
        }
    }

    /// The peer a request goes to.
    pub fn peer_of(&self, request: u32) -> usize {
        match self {
            Source::Replay { cursor, .. } => cursor.set().get(request).host as usize,
            _ => 0,
        }
    }

    /// The endpoint a request is counted under, if any.
    pub fn endpoint(&self, request: u32) -> Option<u16> {
        match self {
            Source::Replay { cursor, .. } => Some(cursor.set().get(request).endpoint),
            Source::Flow { step, .. } => *step,
            _ => None,
        }
    }
}

/// The schedule as the worker sees it; the only code here that looks
/// inside a [`Plan`]. A closed loop has no intended times; rate mode takes
/// them from the plan's arrivals, in order.
pub(super) struct Schedule {
    plan: Plan,
    /// Requests intended before this were counted by why they waited.
    waits_counted: Nanos,
    /// The schedule's first time at or after `waits_counted` (taken or
    /// not), for that `waits_counted`: an event while requests wait then
    /// costs no look-up in the schedule.
    first_uncounted: (Nanos, Option<Nanos>),
}

impl Schedule {
    pub fn new(plan: Plan) -> Schedule {
        Schedule {
            plan,
            waits_counted: 0,
            first_uncounted: (0, None),
        }
    }

    /// Whether a request intended at `at` is not counted yet by why it
    /// waited.
    pub fn uncounted(&self, at: Nanos) -> bool {
        at >= self.waits_counted
    }

    /// The first intended time not taken and not yet counted as waiting.
    pub fn next_uncounted(&mut self) -> Option<Nanos> {
        let from = self.waits_counted;
        if self.first_uncounted.0 != from || self.first_uncounted.1.is_none() {
            self.first_uncounted = (from, self.first_from(from));
        }
        let first = self.first_uncounted.1?;
        self.next().map(|next| next.max(first))
    }

    /// Counts the requests intended in `[next, until)`, `next` being the
    /// next not taken, as waiting from now on: returns how many were not
    /// counted before. Those passed over at a late start lie before the
    /// first `next`, and the first call counts them (counting starts at
    /// 0).
    pub fn count_waiting(&mut self, next: Nanos, until: Nanos) -> u64 {
        let fresh = self.count_pending(self.waits_counted.max(next), until);
        self.waits_counted = until;
        fresh
    }

    pub fn paced(&self) -> bool {
        matches!(self.plan, Plan::Paced(_))
    }

    /// The first intended time at or after `t`, taken or not, in rate
    /// mode.
    pub fn first_from(&mut self, t: Nanos) -> Option<Nanos> {
        match &mut self.plan {
            Plan::Paced(arrivals) => Some(arrivals.first_from(t)),
            Plan::Closed => None,
        }
    }

    /// The next intended time, in rate mode.
    pub fn next(&self) -> Option<Nanos> {
        match &self.plan {
            Plan::Paced(arrivals) => Some(arrivals.peek()),
            Plan::Closed => None,
        }
    }

    /// Takes the next intended time if it has come by `now` and falls
    /// before `end`.
    pub fn take_due(&mut self, now: Nanos, end: Nanos) -> Option<Nanos> {
        let Plan::Paced(arrivals) = &mut self.plan else {
            return None;
        };
        let due = arrivals.peek();
        if due >= end || due > now {
            return None;
        }
        arrivals.advance();
        Some(due)
    }

    /// The intended time of a further request of a batch (`now` in a
    /// closed loop).
    pub fn take_slot(&mut self, now: Nanos) -> Nanos {
        match &mut self.plan {
            Plan::Paced(arrivals) => {
                let slot = arrivals.peek();
                arrivals.advance();
                slot
            }
            Plan::Closed => now,
        }
    }

    /// Counts the intended times in `[a, b)` passed over at a late start.
    pub fn count_missed(&mut self, a: Nanos, b: Nanos) -> u64 {
        match &mut self.plan {
            Plan::Paced(arrivals) => arrivals.count_missed(a, b),
            Plan::Closed => 0,
        }
    }

    /// Counts the intended times in `[a, b)` not taken yet: at the end,
    /// those are due and never sent (none in a closed loop).
    pub fn count_pending(&mut self, a: Nanos, b: Nanos) -> u64 {
        match &mut self.plan {
            Plan::Paced(arrivals) => arrivals.count_pending(a, b),
            Plan::Closed => 0,
        }
    }
}

/// The static request as requests shared by every send.
fn static_batch(batch: &Batch) -> io::Result<Vec<Rc<Request>>> {
    let mut metas = Vec::new();
    metas_into(batch.bytes(), &mut metas).map_err(io::Error::other)?;
    let bytes = Bytes::copy_from_slice(batch.bytes());
    Ok(Request::split(&bytes, &metas)
        .into_iter()
        .map(Rc::new)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Load;

    /// 1000 requests a second on one thread from t0 = 0: one every ms.
    fn paced() -> Schedule {
        Schedule::new(Load::constant(1000.0).plan(0, 0, 1))
    }

    const MS: Nanos = 1_000_000;

    #[test]
    fn a_request_is_taken_once_it_is_due_and_only_inside_the_run() {
        let mut s = paced();
        assert!(s.paced());
        assert_eq!(s.take_due(0, 10 * MS), Some(0));
        // The next one is due at 1 ms: not before, and not at the run's end.
        assert_eq!(s.take_due(MS - 1, 10 * MS), None);
        assert_eq!(s.take_due(MS, MS), None);
        assert_eq!(s.next(), Some(MS));
        assert_eq!(s.take_due(5 * MS, 10 * MS), Some(MS));
        // A batch's further requests take the next times, whenever sent.
        assert_eq!(s.take_slot(0), 2 * MS);
        // Times left in [from, stop): 3..=9 ms.
        assert_eq!(s.count_pending(0, 10 * MS), 7);
    }

    #[test]
    fn a_closed_loop_has_no_intended_times() {
        let mut s = Schedule::new(Plan::Closed);
        assert!(!s.paced());
        assert_eq!((s.next(), s.take_due(5, 10)), (None, None));
        assert_eq!(s.take_slot(42), 42);
        assert_eq!(s.count_pending(0, 10), 0);
    }

    #[test]
    fn a_static_batch_is_built_once_and_shared_by_every_send() {
        let batch =
            Batch::parse(b"GET /a HTTP/1.1\r\n\r\nHEAD /b HTTP/1.1\r\n\r\n".to_vec()).unwrap();
        let requests = static_batch(&batch).unwrap();
        let wires: Vec<(&[u8], bool)> = requests.iter().map(|r| (r.wire(), r.is_head())).collect();
        assert_eq!(
            wires,
            [
                (&b"GET /a HTTP/1.1\r\n\r\n"[..], false),
                (&b"HEAD /b HTTP/1.1\r\n\r\n"[..], true)
            ]
        );
        let mut source = Source::Static(requests);
        assert_eq!(
            (
                source.next_scheduled(),
                source.next_for(0),
                source.peer_of(0)
            ),
            (0, 0, 0)
        );
        assert_eq!(source.endpoint(0), None);
    }
}
