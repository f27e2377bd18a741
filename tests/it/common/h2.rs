//! HTTP/2 targets and checks: the built-in target with given HTTP/2
//! settings, runs bounded in time, hand-written servers that speak
//! HTTP/2 badly, and what a clean HTTP/2 run must show.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use metron::engine::Outcome;
use metron::serve::{Http2, ServeConfig, Server};

use super::{assert_balanced, server, try_bench};

/// How long a raw connection is held, at most.
pub const HOLD: Duration = Duration::from_secs(3);

/// The longest any one run of these tests may take, start to end.
pub const LIMIT: Duration = Duration::from_secs(30);

/// The built-in target over h2c with these HTTP/2 settings and `cfg`'s
/// others.
pub fn h2(http2: Http2, cfg: ServeConfig) -> Server {
    server(ServeConfig {
        http2: Some(http2),
        ..cfg
    })
}

/// [`bench`] over HTTP/2 with the URL last, within [`LIMIT`]: a run that
/// does not end by then fails the test rather than hang the suite.
pub fn bench_h2(args: &[&str], url: &str) -> (Outcome, String) {
    bench_within(&[&["--http2"][..], args, &[url]].concat())
}

/// [`bench`] with `args`, within [`LIMIT`]: a run that does not end by
/// then fails the test rather than hang the suite.
pub fn bench_within(args: &[&str]) -> (Outcome, String) {
    let argv: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let _ = tx.send(try_bench(&argv).map_err(|e| e.to_string()));
    });
    match rx.recv_timeout(LIMIT) {
        Ok(Ok(done)) => done,
        Ok(Err(e)) => panic!("metron {args:?} failed: {e}"),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("metron {args:?} ran past {LIMIT:?}")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("metron {args:?} panicked"),
    }
}

/// A server that allows 4 streams at once; each stream lives 20 ms on it,
/// so the client's streams overlap there.
pub fn four_streams() -> Server {
    h2(
        Http2 {
            max_streams: Some(4),
            ..Http2::default()
        },
        ServeConfig {
            delay: Duration::from_millis(20),
            ..ServeConfig::default()
        },
    )
}

/// Copies `from` to `to` after `lag`, until either side ends or [`LIMIT`]
/// passes; then shuts both down, so the other direction ends too.
pub fn pipe(mut from: TcpStream, mut to: TcpStream, lag: Duration) {
    let _ = from.set_nonblocking(false);
    let _ = from.set_read_timeout(Some(LIMIT));
    std::thread::sleep(lag);
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(n) if n > 0 && to.write_all(&buf[..n]).is_ok() => {}
            _ => break,
        }
    }
    let _ = from.shutdown(std::net::Shutdown::Both);
    let _ = to.shutdown(std::net::Shutdown::Both);
}

/// Waits for the client's first bytes, writes `reply`, then reads until
/// the client closes (or [`HOLD`] passes).
pub fn serve_raw(mut sock: TcpStream, reply: &[u8]) {
    let _ = sock.set_nonblocking(false);
    let _ = sock.set_read_timeout(Some(HOLD));
    let mut buf = [0u8; 4096];
    if !matches!(sock.read(&mut buf), Ok(n) if n > 0) {
        return;
    }
    if sock.write_all(reply).is_err() {
        return;
    }
    let until = Instant::now() + HOLD;
    while Instant::now() < until {
        match sock.read(&mut buf) {
            Ok(n) if n > 0 => {}
            _ => return,
        }
    }
}
/// What the server answered is what the client completed, give or take the
/// responses still on their way when the run ended. Nothing is sent after
/// the window: the closed loop does not refill the streams whose responses
/// came in the last batch of events.
pub fn assert_server_agrees(srv: &Server, o: &Outcome) {
    let c = &o.stats.counters;
    let answered = srv.stats().responses_total();
    assert!(
        (c.completed..=c.completed + c.in_flight).contains(&answered),
        "the server answered {answered}: {c:?}"
    );
}

/// Over HTTP/2, no request lost, no connection refused, no bad status, and
/// nothing HTTP/2 alone counts (no reset, GOAWAY, connection error or
/// request sent again).
pub fn assert_clean(o: &Outcome) {
    assert_balanced(o);
    assert_eq!(o.protocol.to_string(), "HTTP/2");
    let c = &o.stats.counters;
    assert!(!c.errors.any_socket(), "{c:?}");
    assert_eq!((c.errors.status, c.reconnects), (0, 0), "{c:?}");
    assert!(!c.http2.any(), "{:?}", c.http2);
    assert!(c.completed > 0, "{c:?}");
}

pub fn h2_server(delay_ms: u64) -> metron::serve::Server {
    server(ServeConfig {
        http2: Some(Http2::default()),
        delay: std::time::Duration::from_millis(delay_ms),
        ..ServeConfig::default()
    })
}

/// A TCP proxy on 127.0.0.1:0 in front of `upstream` that holds back the
/// server's first bytes on each connection for `lag`, as a network with
/// that round trip would; the client's bytes pass at once. It accepts
/// until dropped, or at most [`LIMIT`].
pub struct SlowProxy {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SlowProxy {
    pub fn start(upstream: SocketAddr, lag: Duration) -> SlowProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            while !stopped.load(Relaxed) && start.elapsed() < LIMIT {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(upstream) else {
                            continue;
                        };
                        let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                        std::thread::spawn(move || pipe(client, server, Duration::ZERO));
                        std::thread::spawn(move || pipe(s2, c2, lag));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        SlowProxy {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for SlowProxy {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A server on 127.0.0.1:0 that answers each connection's first bytes with
/// `reply`, then holds the connection until the client closes it (or a few
/// seconds pass). It accepts until dropped, or at most [`LIMIT`].
pub struct RawServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

/// Connections a raw server serves at most; later ones are closed at once.
pub const MAX_RAW_CONNECTIONS: u64 = 2000;

impl RawServer {
    pub fn start(reply: &[u8]) -> RawServer {
        let reply: Arc<[u8]> = reply.into();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let (stop2, accepted2) = (Arc::clone(&stop), Arc::clone(&accepted));
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            while !stop2.load(Relaxed) && start.elapsed() < LIMIT {
                match listener.accept() {
                    Ok((sock, _)) => {
                        if accepted2.fetch_add(1, Relaxed) < MAX_RAW_CONNECTIONS {
                            let reply = Arc::clone(&reply);
                            std::thread::spawn(move || serve_raw(sock, &reply));
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        RawServer {
            addr,
            stop,
            accepted,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn accepted(&self) -> u64 {
        self.accepted.load(Relaxed)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
