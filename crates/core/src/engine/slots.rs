//! What a due request waits for: a slot. With HTTP/1.1 a slot is an idle
//! connection (one batch at a time on it); an HTTP/2 session would offer
//! one per free stream, several on one connection, with no change here.
//!
//! With `--requests`, each connection is bound to one peer (host), so
//! slots are kept per peer. A due request whose peer has no free slot
//! while other peers do waits in its peer's queue, so that one slow host
//! does not hold back the others; when no slot at all is free, due
//! requests simply stay on the schedule (the worker stops taking them).
//! Free slots are handed out oldest first, so that every connection is
//! used.

use std::collections::VecDeque;

use crate::clock::Nanos;

/// A place for one request (or one pipelined batch) to go: for HTTP/1.1,
/// the idle connection `conn` of the worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub conn: usize,
}

/// A request that fell due: its intended time, and which request of the
/// requests file it is (0 without one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    pub at: Nanos,
    pub request: u32,
}

/// A due request placed on a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assigned {
    pub slot: Slot,
    pub due: Due,
    /// The slot came free only after the request fell due: the request
    /// waited for it (and its latency, counted from `due.at`, shows that).
    pub waited: bool,
}

/// A worker's free slots and the due requests waiting for one, per peer.
#[derive(Debug)]
pub struct Slots {
    /// Free slots of each peer, oldest first, with when each came free.
    free: Vec<VecDeque<(Slot, Nanos)>>,
    /// Free slots over all peers.
    free_count: usize,
    /// Due requests of each peer waiting for one of its slots, oldest
    /// first, while other peers had free ones.
    waiting: Vec<VecDeque<Due>>,
}

impl Slots {
    /// Room for `slots` slots spread over `peers` peers.
    pub fn new(peers: usize, slots: usize) -> Slots {
        Slots {
            free: vec![VecDeque::with_capacity(slots.div_ceil(peers.max(1))); peers],
            free_count: 0,
            waiting: vec![VecDeque::new(); peers],
        }
    }

    /// Whether any peer has a free slot (else due requests stay on the
    /// schedule).
    pub fn any_free(&self) -> bool {
        self.free_count > 0
    }

    /// A request of `peer` fell due: the free slot it goes on, or `None`
    /// when the peer has none and the request waits for one.
    pub fn assign(&mut self, peer: usize, due: Due) -> Option<Assigned> {
        let Some((slot, since)) = self.free[peer].pop_front() else {
            self.waiting[peer].push_back(due);
            return None;
        };
        self.free_count -= 1;
        Some(Assigned {
            slot,
            due,
            waited: since > due.at,
        })
    }

    /// `slot` of `peer` is free from `now` on: it takes the oldest request
    /// waiting for the peer, if there is one, else it is kept free.
    pub fn release(&mut self, peer: usize, slot: Slot, now: Nanos) -> Option<Assigned> {
        match self.waiting[peer].pop_front() {
            Some(due) => Some(Assigned {
                slot,
                due,
                waited: true,
            }),
            None => {
                self.free[peer].push_back((slot, now));
                self.free_count += 1;
                None
            }
        }
    }

    /// Takes the oldest free slot of `peer`, if it has one, for a request
    /// that does not come from the schedule (HTTP/2's requests sent again).
    pub fn take(&mut self, peer: usize) -> Option<Slot> {
        let (slot, _) = self.free[peer].pop_front()?;
        self.free_count -= 1;
        Some(slot)
    }

    /// `slot` of `peer` is gone (its connection closed) and must not be
    /// handed out, if it was free.
    pub fn remove(&mut self, peer: usize, slot: Slot) {
        let queue = &mut self.free[peer];
        let before = queue.len();
        queue.retain(|&(s, _)| s != slot);
        self.free_count -= before - queue.len();
    }

    /// Every slot free now was free before the schedule began (they are
    /// offered again as the run starts): a request due at the start that
    /// takes one did not wait for it.
    pub fn free_before_start(&mut self) {
        for (_, since) in self.free.iter_mut().flatten() {
            *since = 0;
        }
    }

    /// Takes every free slot, oldest first per peer (when the schedule
    /// starts, each takes its first request).
    pub fn take_free(&mut self) -> Vec<Slot> {
        self.free_count = 0;
        self.free
            .iter_mut()
            .flat_map(|q| q.drain(..).map(|(slot, _)| slot))
            .collect()
    }

    /// Requests of `peer` waiting for a slot.
    pub fn waiting_for(&self, peer: usize) -> usize {
        self.waiting[peer].len()
    }

    /// Requests still waiting for a slot (never sent, at the end).
    pub fn waiting(&self) -> impl Iterator<Item = &Due> {
        self.waiting.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(conn: usize) -> Slot {
        Slot { conn }
    }

    fn due(at: Nanos, request: u32) -> Due {
        Due { at, request }
    }

    #[test]
    fn free_slots_are_handed_out_oldest_first() {
        let mut s = Slots::new(1, 3);
        assert!(!s.any_free());
        for c in [2, 0, 1] {
            assert_eq!(s.release(0, slot(c), 10), None);
        }
        assert!(s.any_free());
        let order: Vec<usize> = (0..3)
            .map(|k| s.assign(0, due(20, k)).unwrap().slot.conn)
            .collect();
        assert_eq!(order, [2, 0, 1]);
        assert!(!s.any_free());
    }

    #[test]
    fn slots_offered_as_the_run_starts_were_free_before_it() {
        let mut s = Slots::new(1, 2);
        assert_eq!(s.release(0, slot(0), 500), None);
        s.free_before_start();
        let a = s.assign(0, due(100, 0)).unwrap();
        assert!(!a.waited, "{a:?}");
        assert_eq!(s.take(0), None);
        assert_eq!(s.release(0, slot(1), 700), None);
        assert_eq!(s.take(0), Some(slot(1)));
        assert!(!s.any_free());
    }

    #[test]
    fn a_request_waited_when_its_slot_came_free_after_it_fell_due() {
        let mut s = Slots::new(1, 2);
        assert_eq!(s.release(0, slot(0), 100), None);
        let on_time = s.assign(0, due(150, 0)).unwrap();
        assert!(!on_time.waited);
        assert_eq!(s.release(0, slot(1), 300), None);
        let late = s.assign(0, due(200, 1)).unwrap();
        assert_eq!(
            late,
            Assigned {
                slot: slot(1),
                due: due(200, 1),
                waited: true
            }
        );
    }

    #[test]
    fn a_peer_without_a_free_slot_queues_its_requests_while_others_go() {
        let mut s = Slots::new(2, 2);
        assert_eq!(s.release(1, slot(1), 0), None);
        // Peer 0 has nothing free: its requests wait, in order.
        assert_eq!(s.assign(0, due(10, 7)), None);
        assert_eq!(s.assign(0, due(11, 8)), None);
        // Peer 1 still goes.
        assert_eq!(s.assign(1, due(12, 9)).unwrap().slot, slot(1));
        let waiting: Vec<Due> = s.waiting().copied().collect();
        assert_eq!(waiting, [due(10, 7), due(11, 8)]);
        // A slot of peer 0 coming free takes the oldest waiting request at
        // once, and stays taken.
        let a = s.release(0, slot(0), 50).unwrap();
        assert_eq!((a.slot, a.due, a.waited), (slot(0), due(10, 7), true));
        assert!(!s.any_free());
        assert_eq!(s.waiting().count(), 1);
    }

    #[test]
    fn a_closed_connection_gives_up_its_free_slot() {
        let mut s = Slots::new(2, 3);
        assert_eq!(s.release(0, slot(0), 0), None);
        assert_eq!(s.release(0, slot(2), 0), None);
        assert_eq!(s.release(1, slot(1), 0), None);
        s.remove(0, slot(0));
        // Removing a slot that is not free changes nothing.
        s.remove(1, slot(2));
        assert_eq!(s.take_free(), [slot(2), slot(1)]);
        assert!(!s.any_free());
        assert_eq!(s.assign(0, due(1, 0)), None);
    }
}
