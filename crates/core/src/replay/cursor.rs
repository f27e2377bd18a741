//! Which request a thread sends next.
//!
//! With a schedule (an open load, whatever its arrival process) the
//! schedule's requests take the file's requests in turn: the thread whose
//! lane owns requests `j, j+T, j+2T, ...` of the run (see `schedule`)
//! takes requests `j, j+T, ...` of the file (modulo their number), so the
//! run as a whole replays the file in order, cycling. Under `--shard` the
//! lane is one of the whole run's, so N instances together replay it in
//! order too. In the closed loop there is no
//! global order to keep and a connection is bound to a host: each thread
//! cycles through each host's requests, all of them, from its own offset.
//! `random` picks uniformly instead, from a generator seeded per thread
//! from `--seed`, so a run repeats exactly.

use std::sync::Arc;

use super::RequestSet;

/// `--requests-order`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// The file's order, cycling.
    #[default]
    Sequential,
    /// Uniformly at random, seeded by `--seed`.
    Random,
}

impl Order {
    /// Each order as `--requests-order` names it, with its one-line help.
    pub const CHOICES: [(Order, &'static str, &'static str); 2] = [
        (Order::Sequential, "sequential", "The file's order, cycling"),
        (
            Order::Random,
            "random",
            "Uniformly at random, seeded by --seed",
        ),
    ];
}

/// One thread's position in the request list.
pub struct Cursor {
    set: Arc<RequestSet>,
    order: Order,
    rng: fastrand::Rng,
    /// Position of the next request in rate mode (sequential order).
    next: u64,
    step: u64,
    /// The request of the next slot, decided ahead so it can be peeked.
    upcoming: u32,
    /// Position in each host's list (closed loop, sequential order).
    host_next: Vec<u64>,
}

impl Cursor {
    /// The cursor of lane `lane` of `lanes` (a thread's, in the whole run).
    pub fn new(set: Arc<RequestSet>, order: Order, seed: u64, lane: usize, lanes: usize) -> Cursor {
        let hosts = set.hosts().len();
        // Distinct, well-mixed streams per thread from one seed.
        let rng =
            fastrand::Rng::with_seed(seed ^ (lane as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut c = Cursor {
            set,
            order,
            rng,
            next: lane as u64,
            step: lanes as u64,
            upcoming: 0,
            host_next: vec![lane as u64; hosts],
        };
        c.upcoming = c.draw();
        c
    }

    fn draw(&mut self) -> u32 {
        let n = self.set.len() as u64;
        match self.order {
            Order::Sequential => {
                let r = self.next % n;
                self.next += self.step;
                r as u32
            }
            Order::Random => self.rng.u32(..n as u32),
        }
    }

    /// The request of the next slot of the schedule.
    pub fn peek(&self) -> u32 {
        self.upcoming
    }

    /// The next slot's request is taken.
    pub fn advance(&mut self) {
        self.upcoming = self.draw();
    }

    /// The next request for a connection to host `h` (closed loop).
    pub fn next_for_host(&mut self, h: usize) -> u32 {
        let list = self.set.of_host(h);
        let n = list.len() as u64;
        let at = match self.order {
            Order::Sequential => {
                let at = self.host_next[h] % n;
                self.host_next[h] += 1;
                at
            }
            Order::Random => self.rng.u64(..n),
        };
        list[at as usize]
    }

    pub fn set(&self) -> &RequestSet {
        &self.set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::parse_target;

    fn set(lines: &str) -> Arc<RequestSet> {
        let path = std::env::temp_dir().join(format!(
            "metron-cursor-{}-{}.txt",
            std::process::id(),
            lines.len()
        ));
        std::fs::write(&path, lines).unwrap();
        let base = parse_target("http://127.0.0.1:8080/").unwrap();
        let set = RequestSet::load(&path, &base, &[], &[], None).unwrap();
        let _ = std::fs::remove_file(&path);
        Arc::new(set)
    }

    fn take(c: &mut Cursor, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| {
                let r = c.peek();
                c.advance();
                r
            })
            .collect()
    }

    #[test]
    fn threads_interleave_to_the_files_order() {
        let s = set("/0\n/1\n/2\n/3\n/4\n");
        let mut a = Cursor::new(s.clone(), Order::Sequential, 0, 0, 2);
        let mut b = Cursor::new(s, Order::Sequential, 0, 1, 2);
        assert_eq!(take(&mut a, 5), [0, 2, 4, 1, 3]);
        assert_eq!(take(&mut b, 5), [1, 3, 0, 2, 4]);
    }

    #[test]
    fn random_order_repeats_with_its_seed() {
        let s = set("/0\n/1\n/2\n/3\n/4\n/5\n/6\n/7\n");
        let run = |seed| take(&mut Cursor::new(s.clone(), Order::Random, seed, 0, 1), 64);
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let picks = run(7);
        assert!(
            (0..8).all(|r| picks.contains(&r)),
            "all requests drawn: {picks:?}"
        );
    }

    #[test]
    fn closed_loop_cycles_each_hosts_requests() {
        let s = set("http://127.0.0.1:1/a\nhttp://127.0.0.1:2/b\nhttp://127.0.0.1:1/c\n");
        let mut c = Cursor::new(s.clone(), Order::Sequential, 0, 0, 2);
        let got: Vec<u32> = (0..4).map(|_| c.next_for_host(0)).collect();
        assert_eq!(got, [0, 2, 0, 2]);
        assert_eq!(c.next_for_host(1), 1);
        // Another thread starts elsewhere, and still sees every request.
        let mut d = Cursor::new(s, Order::Sequential, 0, 1, 2);
        let got: Vec<u32> = (0..4).map(|_| d.next_for_host(0)).collect();
        assert_eq!(got, [2, 0, 2, 0]);
    }
}
