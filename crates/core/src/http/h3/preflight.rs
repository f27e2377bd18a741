//! The pre-flight of an HTTP/3 host: one QUIC handshake offering `h3`,
//! driven with a blocking UDP socket, so that a port where nothing serves
//! QUIC, a firewall that drops UDP, a server without HTTP/3 or a
//! certificate refused is one error naming the fix before the run.
//!
//! The session does the protocol (sans-I/O, as in the run); this file
//! only moves its datagrams and names what its refusal means.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Http3, QuicOptions, Refusal};
use crate::clock;
use crate::http::probe::Named;
use crate::http::session::Session;
use crate::http::sse::EventReading;

/// The largest datagram read: QUIC's packets fit well within it.
const DATAGRAM: usize = 64 * 1024;

/// Why the handshake with one address did not complete.
pub enum Failed {
    /// The host answered "port unreachable": nothing listens on UDP there.
    PortClosed,
    /// The session gave up, for this reason.
    Refused(Refusal),
    /// The handshake did not complete before the deadline: nothing came
    /// back, datagrams that were not QUIC came (`heard`, not `quic`), or
    /// the server's QUIC came and stopped.
    Silent { heard: bool, quic: bool },
    /// The socket itself failed.
    Socket(io::Error),
}

impl Failed {
    /// What this failure of the handshake with `addr`, given `timeout`,
    /// tells the user.
    pub fn named(self, addr: SocketAddr, timeout: Duration) -> Named {
        let said = match self {
            Failed::PortClosed => format!(
                "nothing listens on UDP port {} at {} (it answered \"port unreachable\"), so no HTTP/3 is served there; check the URL's port, or drop --http3",
                addr.port(),
                addr.ip()
            ),
            Failed::Silent { heard: false, .. } | Failed::Refused(Refusal::Silent) => format!(
                "no QUIC answer from {addr} within {timeout:?} (--timeout): nothing serves HTTP/3 on that UDP port, or UDP is blocked on the way; check the port and any firewall, or drop --http3"
            ),
            Failed::Silent { heard: true, quic: false } => format!(
                "{addr} answered on UDP port {}, but not in QUIC (none of its datagrams was a QUIC packet for this connection): something other than an HTTP/3 server listens there; check the URL's port, or drop --http3",
                addr.port()
            ),
            Failed::Silent { heard: true, quic: true } => format!(
                "the QUIC handshake with {addr} did not complete within {timeout:?} (--timeout), though the server answered; raise --timeout for a slow or lossy path"
            ),
            Failed::Refused(Refusal::Version) => format!(
                "the server at {addr} speaks no QUIC version metron does (QUIC version 1, RFC 9000); drop --http3"
            ),
            Failed::Refused(Refusal::NoH3) => format!(
                "the server at {addr} answers QUIC but refused h3 by ALPN: it does not serve HTTP/3 there; check the URL's port, or drop --http3"
            ),
            Failed::Refused(Refusal::Other(why)) => format!(
                "the QUIC handshake with {addr} failed: {why}; check that the server serves HTTP/3 on that port, or drop --http3"
            ),
            Failed::Socket(why) => return Named::Socket(why),
            Failed::Refused(Refusal::Certificate(why)) => return Named::Certificate(why),
            Failed::Refused(Refusal::Alert { alert }) => return Named::Alert { alert },
            Failed::Refused(Refusal::ClientCertificate { alert }) => {
                return Named::ClientCertificate { alert }
            }
        };
        Named::Said(said)
    }
}

/// One QUIC handshake with `addr` with `tls` (which offers `h3` alone)
/// and the server's name, within `timeout`; closed at once when the
/// server has confirmed it (so that a client certificate it refuses is
/// refused here, not in the run). Returns the streams the server grants
/// at once.
pub fn handshake(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    server_name: String,
    authority: &str,
    timeout: Duration,
) -> Result<Option<u32>, Failed> {
    let local: SocketAddr = match addr {
        SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        SocketAddr::V6(_) => ([0u16; 8], 0).into(),
    };
    let sock = match UdpSocket::bind(local).and_then(|s| s.connect(addr).map(|()| s)) {
        Ok(sock) => sock,
        Err(e) => return Err(Failed::Socket(e)),
    };
    let opts = QuicOptions {
        tls,
        server_name,
        authority: authority.to_string(),
        max_streams: 1,
        max_field_section: 64 * 1024,
        capture: false,
        reading: EventReading::Off,
    };
    let mut session: Http3<()> = match Http3::new(&opts, addr, clock::now()) {
        Ok(s) => s,
        Err(why) => return Err(Failed::Refused(Refusal::Other(why))),
    };
    let deadline = Instant::now() + timeout;
    let mut heard = false;
    let mut buf = vec![0u8; DATAGRAM];
    loop {
        send_all(&sock, &mut session).map_err(sent_error)?;
        if let Some(refusal) = session.refusal() {
            return Err(Failed::Refused(refusal));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        // A server that never confirms (none should) is taken as it is
        // once the deadline comes.
        if session.is_ready() && (session.confirmed() || left.is_zero()) {
            let limit = session.info().server_limit;
            session.close(clock::now());
            let _ = send_all(&sock, &mut session);
            return Ok(limit);
        }
        if left.is_zero() {
            return Err(Failed::Silent {
                heard,
                quic: session.heard_quic(),
            });
        }
        let now = clock::now();
        let until_timer = session
            .poll_timeout()
            .map_or(left, |t| Duration::from_nanos(t.saturating_sub(now)));
        let wait = until_timer.min(left).max(Duration::from_millis(1));
        sock.set_read_timeout(Some(wait)).map_err(Failed::Socket)?;
        match sock.recv(&mut buf) {
            Ok(n) => {
                heard = true;
                session.handle(&buf[..n], clock::now());
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                session.handle_timeout(clock::now());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(sent_error(e)),
        }
    }
}

/// Every datagram the session has ready, sent one by one.
fn send_all(sock: &UdpSocket, session: &mut Http3<()>) -> io::Result<()> {
    loop {
        let (datagrams, segment) = session.transmit_segmented(clock::now());
        if datagrams.is_empty() {
            return Ok(());
        }
        let n = datagrams.len();
        for datagram in datagrams.chunks(segment.unwrap_or(n)) {
            sock.send(datagram)?;
        }
        session.transmitted(n);
    }
}

/// A connected UDP socket reports the host's "port unreachable" as a
/// refused connection on the next call.
fn sent_error(e: io::Error) -> Failed {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => Failed::PortClosed,
        _ => Failed::Socket(e),
    }
}
