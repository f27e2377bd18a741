//! The pre-flight of an HTTP/3 host: one QUIC handshake offering `h3`,
//! driven here with a blocking UDP socket, so that a port where nothing
//! serves QUIC, a firewall that drops UDP, a server without HTTP/3 or a
//! certificate refused is one error naming the fix before the run.
//!
//! The HTTP/3 session does the protocol (sans-I/O, as in the run); this
//! file only moves its datagrams and names what its refusal means.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use super::setup::Protocol;
use super::transport::TlsSetup;
use super::EngineError;
use crate::clock;
use crate::http::h3::{Http3, QuicOptions, Refusal};
use crate::http::{EventReading, Session};

/// The largest datagram read: QUIC's packets fit well within it.
const DATAGRAM: usize = 64 * 1024;

/// Why the handshake with one address did not complete, before it is
/// named.
pub(super) enum Failed {
    /// The host answered "port unreachable": nothing listens on UDP there.
    PortClosed,
    /// The session gave up, for this reason.
    Refused(Refusal),
    /// Nothing came back before the deadline.
    Silent { heard: bool },
    /// The socket itself failed.
    Socket(io::Error),
}

/// One QUIC handshake with `addr`, offering `h3` with `tls`'s trust and
/// name, within `timeout`; closed at once when the server has confirmed
/// it (so that a client certificate it refuses is refused here, not in
/// the run). Returns the streams the server grants at once.
pub(super) fn handshake(
    addr: SocketAddr,
    tls: &TlsSetup,
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
        tls: super::transport::offering_only(&tls.config, Protocol::Http3),
        server_name: tls.name.to_str().into_owned(),
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
            let limit = session.server_limit();
            session.close(clock::now());
            let _ = send_all(&sock, &mut session);
            return Ok(limit);
        }
        if left.is_zero() {
            return Err(Failed::Silent { heard });
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

/// What a failed handshake with `addr` tells the user, with the fix. A
/// certificate refused is named in QUIC's words here; the caller explains
/// it better where the host also answers TLS over TCP.
pub(super) fn error(
    addr: SocketAddr,
    host: &str,
    cert: Option<&str>,
    failed: Failed,
    timeout: Duration,
) -> EngineError {
    let after = timeout;
    match failed {
        Failed::PortClosed => EngineError::QuicPortClosed { addr },
        Failed::Silent { heard: false } | Failed::Refused(Refusal::Silent) => {
            EngineError::QuicSilent { addr, after }
        }
        Failed::Silent { heard: true } => EngineError::QuicHandshakeTimeout { addr, after },
        Failed::Socket(why) => EngineError::Connect { addr, why },
        Failed::Refused(Refusal::Version) => EngineError::QuicVersion { addr },
        Failed::Refused(Refusal::NoH3) => EngineError::NoH3 { addr },
        Failed::Refused(Refusal::Certificate(why)) => EngineError::Certificate {
            host: host.to_string(),
            why,
            hint: "pass its authority with --cacert FILE, or -k to skip verification".to_string(),
        },
        Failed::Refused(Refusal::ClientCertificate { alert }) => {
            let why = format!(
                "the server ended the handshake with the alert {}",
                super::tls_words::alert(rustls::AlertDescription::from(alert))
            );
            match cert {
                None => EngineError::ClientCertRequired { addr, why },
                Some(cert) => EngineError::ClientCertRefused {
                    addr,
                    cert: cert.to_string(),
                    why,
                },
            }
        }
        Failed::Refused(Refusal::Other(why)) => EngineError::QuicRefused { addr, why },
    }
}
