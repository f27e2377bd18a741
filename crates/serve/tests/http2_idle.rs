//! An HTTP/2 server left with awkward connections (a preface cut short, a
//! stream held open, a stall under way, bytes that are not HTTP/2) sleeps
//! rather than spins. Alone in its own test binary, so the CPU time the
//! process uses is the server's.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use metron_serve::{Fault, FaultPlan, Http2, ServeConfig, Server, StallPlan};

/// CPU time (user and system) this process has used so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

fn connect(server: &Server, wire: &[u8]) -> TcpStream {
    let mut tcp = TcpStream::connect(server.addr()).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.write_all(wire).unwrap();
    tcp
}

#[test]
fn awkward_connections_cost_no_cpu() {
    let stall = StallPlan::once(Duration::ZERO, Duration::from_secs(60)).unwrap();
    let stalled = Server::start(ServeConfig {
        http2: Some(Http2::default()),
        stall: Some(stall),
        ..ServeConfig::default()
    })
    .unwrap();
    let silent = Server::start(ServeConfig {
        http2: Some(Http2::default()),
        fault: Some(FaultPlan::every(Fault::NeverAnswer, 1)),
        threads: 2,
        ..ServeConfig::default()
    })
    .unwrap();
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    // An empty SETTINGS, then a GET for / on stream 1: HPACK's static
    // table has `:method: GET`, `:scheme: http`, `:path: /` (indexes 2, 6,
    // 4) and a literal authority (index 1, 1 byte `x`).
    const SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];
    const GET: &[u8] = &[
        0, 0, 6, 1, 5, 0, 0, 0, 1, 0x82, 0x86, 0x84, 0x41, 0x01, b'x',
    ];
    let request = [PREFACE, SETTINGS, GET].concat();

    let mut kept = vec![
        // Half a preface: the handshake waits for the rest.
        connect(&silent, &PREFACE[..10]),
        // A stream that is never answered.
        connect(&silent, &request),
        // A whole request to a stalled server.
        connect(&stalled, &request),
    ];
    // Turned away: the server closes these.
    for wire in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        b"\x00\x01\x02 garbage \xff\xfe",
    ] {
        let mut tcp = connect(&silent, wire);
        let mut rest = Vec::new();
        let _ = tcp.read_to_end(&mut rest);
    }
    let stats = silent.stats();
    for _ in 0..500 {
        if stats.h2_streams_in_flight() == 1 && stats.open_connections() == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(stats.h2_streams_in_flight(), 1, "the held stream");
    assert_eq!(
        stats.open_connections(),
        2,
        "the turned-away ones are closed"
    );
    // A stall holds every frame, SETTINGS included, and the connection
    // cannot go on without writing: the request waits for the stall's end.
    assert_eq!(stalled.stats().requests(), 0);

    let before = cpu_time();
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_time() - before;
    assert!(
        used < Duration::from_millis(200),
        "{used:?} of CPU in 1 s idle"
    );
    // Not a byte was written to the stalled connection's client.
    let stalled_tcp = &mut kept[2];
    stalled_tcp.set_nonblocking(true).unwrap();
    let mut buf = [0; 64];
    assert!(
        stalled_tcp.read(&mut buf).is_err(),
        "no byte during the stall"
    );
    kept.clear();
}
