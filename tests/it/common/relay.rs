//! A UDP relay that stands between a QUIC client and its server and makes
//! the path lossy and slow: every datagram waits a fixed delay, and every
//! n-th one (each way) is dropped. The kernel here has no netem, so the
//! path's faults are made in user space, on loopback.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often each loop looks at the stop flag.
const TICK: Duration = Duration::from_millis(50);

/// A datagram on its way: when it is due, the socket it leaves by, and
/// where to.
struct Due {
    at: Instant,
    via: Arc<UdpSocket>,
    to: Option<SocketAddr>,
    bytes: Vec<u8>,
}

/// A running relay; stopped (every thread joined) on drop.
pub struct Relay {
    /// The port clients send to, on 127.0.0.1.
    pub port: u16,
    /// Datagrams dropped so far, both ways.
    pub dropped: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Relay {
    /// Relays to `server`, delaying each datagram by `delay` and dropping
    /// every `drop_every`-th one in each direction.
    pub fn start(server: SocketAddr, delay: Duration, drop_every: u64) -> Relay {
        let front = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        front.set_read_timeout(Some(TICK)).unwrap();
        let port = front.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel::<Due>();
        let sender = {
            let stop = stop.clone();
            std::thread::spawn(move || send_when_due(&rx, &stop))
        };
        let receiver = {
            let (stop, dropped) = (stop.clone(), dropped.clone());
            std::thread::spawn(move || {
                let mut backs: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
                let mut returns = Vec::new();
                let mut count = 0u64;
                let mut buf = vec![0u8; 65536];
                while !stop.load(Relaxed) {
                    let Ok((n, client)) = front.recv_from(&mut buf) else {
                        continue;
                    };
                    let back = backs.entry(client).or_insert_with(|| {
                        let back = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
                        back.connect(server).unwrap();
                        back.set_read_timeout(Some(TICK)).unwrap();
                        let (front, back2, tx) = (front.clone(), back.clone(), tx.clone());
                        let (stop, dropped) = (stop.clone(), dropped.clone());
                        returns.push(std::thread::spawn(move || {
                            relay_back(
                                &back2, &front, client, &tx, &stop, &dropped, delay, drop_every,
                            )
                        }));
                        back
                    });
                    count += 1;
                    let due = (count % drop_every != 0).then(|| Due {
                        at: Instant::now() + delay,
                        via: back.clone(),
                        to: None,
                        bytes: buf[..n].to_vec(),
                    });
                    if !pass(due, &tx, &dropped) {
                        break;
                    }
                }
                for r in returns {
                    let _ = r.join();
                }
            })
        };
        Relay {
            port,
            dropped,
            stop,
            threads: vec![receiver, sender],
        }
    }
}

/// From the server back to `client`, through the same delay and drops.
#[allow(clippy::too_many_arguments)]
fn relay_back(
    back: &Arc<UdpSocket>,
    front: &Arc<UdpSocket>,
    client: SocketAddr,
    tx: &mpsc::Sender<Due>,
    stop: &AtomicBool,
    dropped: &AtomicU64,
    delay: Duration,
    drop_every: u64,
) {
    let mut count = 0u64;
    let mut buf = vec![0u8; 65536];
    while !stop.load(Relaxed) {
        let Ok(n) = back.recv(&mut buf) else {
            continue;
        };
        count += 1;
        let due = (count % drop_every != 0).then(|| Due {
            at: Instant::now() + delay,
            via: front.clone(),
            to: Some(client),
            bytes: buf[..n].to_vec(),
        });
        if !pass(due, tx, dropped) {
            return;
        }
    }
}

/// Queues a datagram for its time, or counts it dropped (`None`). False
/// once the sender has stopped.
fn pass(due: Option<Due>, tx: &mpsc::Sender<Due>, dropped: &AtomicU64) -> bool {
    match due {
        Some(due) => tx.send(due).is_ok(),
        None => {
            dropped.fetch_add(1, Relaxed);
            true
        }
    }
}

/// Sends each datagram when it is due. The delay is the same for all, so
/// they come due in the order they came.
fn send_when_due(rx: &mpsc::Receiver<Due>, stop: &AtomicBool) {
    while !stop.load(Relaxed) {
        let Ok(due) = rx.recv_timeout(TICK) else {
            continue;
        };
        std::thread::sleep(due.at.saturating_duration_since(Instant::now()));
        let _ = match due.to {
            Some(to) => due.via.send_to(&due.bytes, to),
            None => due.via.send(&due.bytes),
        };
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
