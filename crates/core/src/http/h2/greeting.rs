//! What a server says first, as the pre-flight hears it over a connected
//! stream (plain TCP, or TLS over it): its HTTP/2 SETTINGS in answer to
//! the client preface ([`hello`]), or unasked, as soon as the connection
//! opens ([`listen`]). The bytes are read by [`super::preflight`]; this
//! owns the reading and the waiting.
//!
//! Why listen at all: an HTTP/1.1 request to a server that speaks HTTP/2
//! only fails on every connection, and the run would count nothing but
//! errors. Sending it one request to find out would put a request in its
//! log, and sending the HTTP/2 preface would put a bad request in an
//! HTTP/1.1 server's. But an HTTP/2 server may send its SETTINGS without
//! waiting for the client's preface, and some do as soon as they accept
//! (nghttpd measured: within 0.2 ms on loopback), while an HTTP/1.1 server
//! never speaks first. So the pre-flight of an HTTP/1.1 host listens
//! briefly ([`first_words_wait`]) and names the problem when SETTINGS
//! come. A server that waits for the preface is not caught this way.

use std::io;
use std::time::{Duration, Instant};

use super::preflight::{answer, Answer, HELLO};
use crate::http::probe::Line;

/// What came from the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heard {
    /// Its first bytes, and what they are (never `Incomplete`).
    Said(Answer),
    /// It closed the connection before they said what they are.
    Closed,
    /// Not enough to tell before the wait ended.
    Silent,
}

/// Sends the client preface and an empty SETTINGS, and reads what the
/// server answers within `timeout`.
pub fn hello(stream: &mut impl Line, timeout: Duration) -> io::Result<Heard> {
    stream.write_all(HELLO)?;
    stream.flush()?;
    listen(stream, timeout)
}

/// Reads until the server's first bytes say what they are, it closes, or
/// `wait` has passed.
pub fn listen(stream: &mut impl Line, wait: Duration) -> io::Result<Heard> {
    // A server's first frame is its SETTINGS: a few settings of 6 bytes.
    // One that sends more than this before the frame ends is no server
    // that a pre-flight can read.
    const MOST: usize = 16 << 10;
    let deadline = Instant::now() + wait;
    let mut got = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(Heard::Silent);
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(Heard::Closed),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(Heard::Silent)
            }
            // TLS: the server closed TCP without close_notify.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Heard::Closed),
            Err(e) => return Err(e),
        }
        match answer(&got) {
            Answer::Incomplete if got.len() < MOST => {}
            Answer::Incomplete => return Ok(Heard::Said(Answer::Other)),
            said => return Ok(Heard::Said(said)),
        }
    }
}

/// The least an HTTP/1.1 host's pre-flight listens for a server that
/// speaks first: a busy machine may schedule the server late.
const LISTEN_FLOOR: Duration = Duration::from_millis(25);
/// The most it listens, however far the server.
const LISTEN_CEILING: Duration = Duration::from_millis(250);

/// How long to listen for a server that speaks first. Its SETTINGS reach
/// the client about one round trip after the client's side of the
/// connection (or handshake) completes, `rtt` being what that took; twice
/// that, and [`LISTEN_FLOOR`] more, within [`LISTEN_CEILING`] and the
/// run's `--timeout`.
pub fn first_words_wait(rtt: Duration, timeout: Duration) -> Duration {
    (rtt * 2 + LISTEN_FLOOR).min(LISTEN_CEILING).min(timeout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// A loopback connection whose server side writes `first` at once,
    /// then waits for the client to go.
    fn server_saying(first: &'static [u8]) -> TcpStream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(first).unwrap();
            let _ = s.read(&mut [0u8; 64]);
        });
        TcpStream::connect(addr).unwrap()
    }

    #[test]
    fn a_server_that_speaks_first_is_heard() {
        // SETTINGS with MAX_CONCURRENT_STREAMS 100, as nghttpd sends it.
        let settings = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64";
        let mut s = server_saying(settings);
        let heard = listen(&mut s, Duration::from_secs(2)).unwrap();
        assert_eq!(
            heard,
            Heard::Said(Answer::Settings {
                max_streams: Some(100)
            })
        );
    }

    #[test]
    fn a_silent_server_costs_only_the_wait() {
        let mut s = server_saying(b"");
        let began = Instant::now();
        assert_eq!(
            listen(&mut s, Duration::from_millis(30)).unwrap(),
            Heard::Silent
        );
        assert!(began.elapsed() < Duration::from_millis(500));
    }

    #[test]
    fn the_wait_grows_with_the_round_trip_within_bounds() {
        let t = Duration::from_secs(2);
        assert_eq!(first_words_wait(Duration::ZERO, t), LISTEN_FLOOR);
        assert_eq!(
            first_words_wait(Duration::from_millis(10), t),
            Duration::from_millis(45)
        );
        assert_eq!(first_words_wait(Duration::from_secs(1), t), LISTEN_CEILING);
        let short = Duration::from_millis(5);
        assert_eq!(first_words_wait(Duration::ZERO, short), short);
    }
}
