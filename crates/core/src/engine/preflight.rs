//! The pre-flight: each server is reached once before the run, with a TLS
//! handshake for https hosts, so that an unreachable server, an untrusted
//! certificate or a missing client certificate is one clear error naming
//! the fix, instead of a screen of counted failures.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustls::pki_types::ServerName;

use super::setup::{Protocol, Setup, TlsOptions, Trust};
use super::transport::{
    self, client_config, is_certificate_error, noting_certificate_requests, offering_only,
    rustls_error, ClientTls, TlsSetup,
};
use super::worker::Peer;
use super::EngineError;
use crate::target::{Scheme, Target};

/// Where the connections go: the URL's host, or every host of the
/// requests file, each checked by a pre-flight connection.
pub(super) fn peers(run: &Setup) -> Result<Vec<Peer>, EngineError> {
    let targets = match &run.replay {
        Some(r) => r.set.hosts(),
        None => std::slice::from_ref(&run.target),
    };
    // One configuration for every https host: the same trust for all.
    let client = targets
        .iter()
        .any(|t| t.scheme == Scheme::Https)
        .then(|| client_config(&run.tls, &run.protocols.offer));
    targets
        .iter()
        .map(|target| {
            let tls = tls_setup(target, client.as_ref())?;
            let check = tls
                .as_ref()
                .zip(client.as_ref())
                .map(|(setup, client)| TlsCheck {
                    setup,
                    opts: &run.tls,
                    store_trouble: client.store_trouble.as_deref(),
                });
            let offer = &run.protocols.offer;
            let (addr, protocol) = preflight(target, check, offer, run.timeout)?;
            // Every connection to the host speaks what it chose.
            let tls = tls.map(|t| TlsSetup {
                config: offering_only(&t.config, protocol),
                ..t
            });
            Ok(Peer {
                addr,
                tls,
                protocol,
                authority: target.authority.clone(),
                server_limit: None,
            })
        })
        .collect()
}

/// What an https host's connections open with: the run's configuration
/// and the host's name.
fn tls_setup(target: &Target, client: Option<&ClientTls>) -> Result<Option<TlsSetup>, EngineError> {
    let Some(client) = client.filter(|_| target.scheme == Scheme::Https) else {
        return Ok(None);
    };
    let name = ServerName::try_from(target.host.clone())
        .map_err(|_| EngineError::ServerName(target.host.clone()))?;
    Ok(Some(TlsSetup {
        config: client.config.clone(),
        name,
    }))
}

/// Finds the first address that accepts a connection (and a TLS handshake),
/// so that an unreachable server or an untrusted certificate is one clear
/// error before the run instead of a screen of counted failures.
fn preflight(
    target: &Target,
    tls: Option<TlsCheck>,
    offer: &[Protocol],
    timeout: Duration,
) -> Result<(SocketAddr, Protocol), EngineError> {
    let mut last = None;
    for &addr in &target.addrs {
        match std::net::TcpStream::connect_timeout(&addr, timeout) {
            Ok(sock) => {
                let protocol = match &tls {
                    Some(check) => {
                        let chosen = handshake(sock, check.setup, timeout)
                            .map_err(|refused| check.explain(target, addr, offer, refused))?;
                        negotiated(addr, offer, chosen)?
                    }
                    None => {
                        let first = offer.first().copied().unwrap_or(Protocol::Http1);
                        if first == Protocol::Http2 {
                            h2c(sock, timeout).map_err(|why| EngineError::NotH2c { addr, why })?;
                        }
                        first
                    }
                };
                return Ok((addr, protocol));
            }
            Err(why) => last = Some(EngineError::Connect { addr, why }),
        }
    }
    Err(last.expect("a target always has at least one address"))
}

/// The protocol a TLS host chose by ALPN. A server that chose nothing
/// speaks HTTP/1.1, which is fine only when it was offered.
fn negotiated(
    addr: SocketAddr,
    offer: &[Protocol],
    chosen: Option<Protocol>,
) -> Result<Protocol, EngineError> {
    match chosen {
        Some(p) => Ok(p),
        None if offer.contains(&Protocol::Http1) => Ok(Protocol::Http1),
        None => Err(not_chosen(addr, offer, " (it chose none)")),
    }
}

/// A server that took none of the protocols offered by ALPN.
fn not_chosen(addr: SocketAddr, offer: &[Protocol], how: &str) -> EngineError {
    EngineError::Alpn {
        addr,
        offered: offer.iter().map(|p| p.alpn()).collect::<Vec<_>>().join(","),
        chose: how.to_string(),
    }
}

/// The client connection preface of HTTP/2 and an empty SETTINGS frame.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
/// The type of a SETTINGS frame, which a server's preface opens with.
const SETTINGS: u8 = 0x4;

/// Checks that a plain-text server speaks HTTP/2 with prior knowledge:
/// sent the preface, it must answer with SETTINGS. Says what came instead.
fn h2c(mut sock: std::net::TcpStream, timeout: Duration) -> Result<(), String> {
    use std::io::{Read, Write};
    let io = |e: io::Error| e.to_string();
    sock.set_read_timeout(Some(timeout)).map_err(io)?;
    sock.set_write_timeout(Some(timeout)).map_err(io)?;
    sock.write_all(H2_PREFACE).map_err(io)?;
    let mut head = [0u8; 9];
    let mut got = 0;
    while got < head.len() {
        match sock.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(format!(
                    "it sent no answer to the HTTP/2 preface within {timeout:?}"
                ))
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let head = &head[..got];
    match head {
        [] => Err("it closed the connection at the HTTP/2 preface".to_string()),
        h if h.starts_with(b"HTTP/") => Err("it answered in HTTP/1".to_string()),
        [_, _, _, kind, ..] if *kind == SETTINGS => Ok(()),
        _ => Err("its first bytes are not an HTTP/2 SETTINGS frame".to_string()),
    }
}

struct TlsCheck<'a> {
    setup: &'a TlsSetup,
    opts: &'a TlsOptions,
    /// What was wrong with the system's store, if it was used.
    store_trouble: Option<&'a str>,
}

/// A failed pre-flight handshake.
struct Refused {
    why: io::Error,
    /// The server asked for a client certificate.
    asked: bool,
}

impl TlsCheck<'_> {
    /// Names the fix: trust for a refused server certificate, `--cert` for
    /// a server that wants a client certificate, the protocols for one
    /// that takes none of those offered, the scheme otherwise.
    fn explain(
        &self,
        target: &Target,
        addr: SocketAddr,
        offer: &[Protocol],
        refused: Refused,
    ) -> EngineError {
        let why = refused.why;
        if is_certificate_error(&why) {
            let hint = self.certificate_hint(&why);
            let host = target.host.clone();
            return EngineError::Certificate { host, why, hint };
        }
        let (alert, required) = match rustls_error(&why) {
            // Servers that check ALPN end the handshake with this alert
            // when they speak none of the protocols offered.
            Some(rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)) => {
                return not_chosen(
                    addr,
                    offer,
                    " (it refused the handshake: no_application_protocol)",
                )
            }
            Some(rustls::Error::AlertReceived(a)) => {
                (true, *a == rustls::AlertDescription::CertificateRequired)
            }
            _ => (false, false),
        };
        if !(required || (refused.asked && alert)) {
            return EngineError::Tls { addr, why };
        }
        match &self.opts.identity {
            None => EngineError::ClientCertRequired { addr, why },
            Some(id) => EngineError::ClientCertRefused {
                addr,
                cert: id.cert.display().to_string(),
                why,
            },
        }
    }

    fn certificate_hint(&self, why: &io::Error) -> String {
        let unknown = matches!(
            rustls_error(why),
            Some(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer
            ))
        );
        let pass = "pass its authority with --cacert FILE, or -k to skip verification";
        match (&self.opts.trust, self.store_trouble) {
            _ if !unknown => "pass -k/--insecure to skip verification".to_string(),
            (Trust::Authorities { file, .. }, _) => format!(
                "--cacert {} does not hold the authority that issued it; {pass}",
                file.display()
            ),
            (_, Some(trouble)) => format!("{trouble}; {pass}"),
            _ => format!("it is issued by an authority the system does not trust; {pass}"),
        }
    }
}

fn handshake(
    sock: std::net::TcpStream,
    tls: &TlsSetup,
    timeout: Duration,
) -> Result<Option<Protocol>, Refused> {
    let (config, asked) = noting_certificate_requests(&tls.config);
    let conn = rustls::ClientConnection::new(config, tls.name.clone()).map_err(io::Error::other);
    conn.and_then(|conn| handshake_io(sock, conn, timeout, &asked))
        .map_err(|why| Refused {
            why,
            asked: asked.load(Ordering::Relaxed),
        })
}

fn handshake_io(
    mut sock: std::net::TcpStream,
    mut conn: rustls::ClientConnection,
    timeout: Duration,
    asked: &AtomicBool,
) -> io::Result<Option<Protocol>> {
    sock.set_read_timeout(Some(timeout))?;
    sock.set_write_timeout(Some(timeout))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)?;
    }
    let chosen = conn.alpn_protocol().and_then(Protocol::from_alpn);
    conn.send_close_notify();
    let _ = conn.complete_io(&mut sock);
    if asked.load(Ordering::Relaxed) {
        await_verdict(&mut conn, &mut sock, timeout)?;
    }
    Ok(chosen)
}

/// In TLS 1.3 the client's side of the handshake is over before the
/// server has checked the client's certificate: a refusal comes after, as
/// an alert. Reads until the server answers the close_notify, closes, or
/// stays silent for the timeout; only an alert counts as a refusal.
fn await_verdict(
    conn: &mut rustls::ClientConnection,
    sock: &mut std::net::TcpStream,
    timeout: Duration,
) -> io::Result<()> {
    let deadline = std::time::Instant::now() + timeout;
    // Session tickets and the server's close_notify: a few records.
    for _ in 0..64 {
        if std::time::Instant::now() >= deadline {
            break;
        }
        match conn.read_tls(sock) {
            Ok(0) => break,
            Ok(_) => {
                let state = conn.process_new_packets().map_err(transport::tls_error)?;
                if state.peer_has_closed() {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    Ok(())
}
