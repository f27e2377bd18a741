//! The pre-flight: each server is reached once before the run, with a TLS
//! handshake for https hosts, so that an unreachable server, an untrusted
//! certificate, a missing client certificate or a protocol the server
//! does not speak is one clear error naming the fix, instead of a screen
//! of counted failures.
//!
//! This file reaches the host and explains what its transport saw (the
//! connection, the TLS handshake, the certificates); what the server must
//! say in the protocol, and the words when it does not, are the
//! protocol's (`http::preflight`). A protocol that brings its own
//! transport (QUIC) does its own handshake there too; a certificate it
//! refuses is explained here, over TCP, when the host answers TLS there.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::{AlertDescription, CertificateError, ClientConnection, StreamOwned};

use super::setup::{Protocol, Protocols, Setup, TlsOptions, Trust};
use super::share::Peer;
use super::transport::{
    self, client_config, is_certificate_error, noting_certificate_requests, offering_only,
    rustls_error, ClientTls, TlsSetup,
};
use super::trust::webpki_fault;
use super::{tls_words, EngineError};
use crate::http::preflight::{self as protocol, Ask, Found, Named, Stop, Upgrade};
use crate::http::Carrier;
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
            let upgrade = run.websocket.as_deref().map(|conversation| Upgrade {
                conversation,
                authority: &target.authority,
                max_head: run.max_head,
            });
            let (addr, found) = preflight(target, check, &run.protocols, upgrade, run.timeout)?;
            // Every connection to the host speaks what it chose.
            let tls = tls.map(|t| TlsSetup {
                config: for_connections(&t.config, found.protocol, run.protocols.zero_rtt),
                ..t
            });
            Ok(Peer {
                addr,
                tls,
                protocol: found.protocol,
                authority: target.authority.clone(),
                server_limit: found.server_limit,
                websocket: run.websocket.clone(),
            })
        })
        .collect()
}

/// The TLS configuration of every connection to a host that chose
/// `protocol`: offering it alone, and with `--0rtt` (where the protocol
/// has early data) sending early data whenever a ticket allows it. The tickets come from earlier
/// connections to the host (the pre-flight's too, when one reached it
/// before it closed) through rustls's session store, which every copy of
/// the run's configuration shares. The pre-flight itself never sends
/// early: its configuration is the one before this.
fn for_connections(
    config: &Arc<rustls::ClientConfig>,
    protocol: Protocol,
    zero_rtt: bool,
) -> Arc<rustls::ClientConfig> {
    let mut only = offering_only(config, protocol);
    if zero_rtt && protocol.early_data() {
        Arc::make_mut(&mut only).enable_early_data = true;
    }
    only
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
/// and checks there that the server speaks what the run will send.
fn preflight(
    target: &Target,
    tls: Option<TlsCheck>,
    protocols: &Protocols,
    upgrade: Option<Upgrade>,
    timeout: Duration,
) -> Result<(SocketAddr, Found), EngineError> {
    if protocols.offer.first().map(|p| p.carrier()) == Some(Carrier::Datagrams) {
        return datagram_preflight(target, tls, protocols, timeout);
    }
    let mut last = None;
    for &addr in &target.addrs {
        let began = Instant::now();
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(sock) => {
                let probe = Probe {
                    addr,
                    protocols,
                    timeout,
                    rtt: began.elapsed(),
                    upgrade,
                };
                let found = match &tls {
                    Some(check) => probe.secure(sock, target, check),
                    None => probe.plain(sock),
                };
                return found.map(|found| (addr, found));
            }
            Err(why) => last = Some(EngineError::Connect { addr, why }),
        }
    }
    Err(last.expect("a target always has at least one address"))
}

/// A host whose protocol brings its own transport over datagrams (QUIC):
/// the first address whose handshake offering it completes. A
/// certificate refused there is explained as over TCP when the host also
/// answers TLS there (its words name the fix).
fn datagram_preflight(
    target: &Target,
    tls: Option<TlsCheck>,
    protocols: &Protocols,
    timeout: Duration,
) -> Result<(SocketAddr, Found), EngineError> {
    let Some(check) = tls else {
        return Err(EngineError::Tls {
            addr: target.addrs[0],
            why: protocols.needs_tls(),
            plain: target.plain_scheme(),
        });
    };
    let identity = check.opts.identity.as_ref();
    let cert_path = identity.map(|id| id.cert.display().to_string());
    let cert = cert_path.as_deref();
    let mut last = None;
    let config = offering_only(&check.setup.config, protocols.offer[0]);
    let name = check.setup.name.to_str().into_owned();
    for &addr in &target.addrs {
        let shook = protocol::datagrams(
            addr,
            config.clone(),
            name.clone(),
            &target.authority,
            timeout,
        );
        let failed = match shook {
            Ok(found) => return Ok((addr, found)),
            Err(failed) => failed,
        };
        let error = match failed {
            Named::Said(why) => EngineError::Unserved { addr, why },
            Named::Socket(why) => EngineError::Connect { addr, why },
            // TLS over TCP explains a certificate better, where the host
            // answers it.
            Named::Certificate(why) => {
                let over_tcp = certificate_over_tcp(addr, target, &check, timeout);
                return Err(over_tcp.unwrap_or_else(|| EngineError::Certificate {
                    host: target.host.clone(),
                    why,
                    hint: "pass its authority with --cacert FILE, or -k to skip verification"
                        .to_string(),
                }));
            }
            Named::Alert { alert } => EngineError::Unserved {
                addr,
                why: format!(
                    "the server at {addr} ended the handshake with the TLS alert {} (its error log says why): check its certificate and TLS settings for the name {}",
                    tls_words::alert(AlertDescription::from(alert)),
                    target.host
                ),
            },
            Named::ClientCertificate { alert } => {
                let why = format!(
                    "the server ended the handshake with the alert {}",
                    tls_words::alert(AlertDescription::from(alert))
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
        };
        last = Some(error);
    }
    Err(last.expect("a target always has at least one address"))
}

/// The certificate error a TLS handshake over TCP with `addr` gives,
/// offering every protocol TCP carries so that the server gets as far as
/// its certificate; `None` when the host does not answer TLS over TCP.
fn certificate_over_tcp(
    addr: SocketAddr,
    target: &Target,
    check: &TlsCheck,
    timeout: Duration,
) -> Option<EngineError> {
    let sock = TcpStream::connect_timeout(&addr, timeout).ok()?;
    let protocols = Protocols::over_tcp();
    let mut config = (*check.setup.config).clone();
    config.alpn_protocols = protocols
        .offer
        .iter()
        .map(|p| p.alpn().as_bytes().to_vec())
        .collect();
    let setup = TlsSetup {
        config: Arc::new(config),
        name: check.setup.name.clone(),
    };
    let tcp_check = TlsCheck {
        setup: &setup,
        ..*check
    };
    let probe = Probe {
        addr,
        protocols: &protocols,
        timeout,
        rtt: Duration::ZERO,
        upgrade: None,
    };
    match probe.secure(sock, target, &tcp_check) {
        Err(e @ EngineError::Certificate { .. }) => Some(e),
        _ => None,
    }
}

/// One host's pre-flight over TCP, over the connection it opened.
struct Probe<'a> {
    addr: SocketAddr,
    protocols: &'a Protocols,
    timeout: Duration,
    /// How long the TCP connect took: a round trip.
    rtt: Duration,
    /// A WebSocket run's upgrade.
    upgrade: Option<Upgrade<'a>>,
}

impl Probe<'_> {
    /// What the protocol is asked, given a round trip of `rtt`.
    fn ask(&self, rtt: Duration) -> Ask<'_> {
        Ask {
            addr: self.addr,
            protocols: self.protocols,
            timeout: self.timeout,
            rtt,
            upgrade: self.upgrade,
        }
    }

    /// A plain-text host: the protocol's own check, over TCP.
    fn plain(&self, mut sock: TcpStream) -> Result<Found, EngineError> {
        let addr = self.addr;
        sock.set_write_timeout(Some(self.timeout))
            .map_err(|why| EngineError::Connect { addr, why })?;
        self.ask(self.rtt)
            .plain(&mut sock)
            .map_err(|why| EngineError::Unserved { addr, why })
    }

    /// An https host: the handshake, then the protocol ALPN chose checks
    /// the server, then close_notify (and, if it asked for a client
    /// certificate, its verdict on the one given).
    fn secure(
        &self,
        sock: TcpStream,
        target: &Target,
        check: &TlsCheck,
    ) -> Result<Found, EngineError> {
        let began = Instant::now();
        let mut tls = match handshake(sock, check.setup, self.timeout) {
            Ok(tls) => tls,
            Err(refused) => return Err(self.refused(target, check, refused)),
        };
        let rtt = self.rtt.max(began.elapsed() / 2);
        let chosen = match tls.chosen.or_else(|| self.protocols.without_alpn()) {
            Some(chosen) => chosen,
            None => return Err(self.not_chosen(" (it chose none)")),
        };
        let checked = self
            .ask(rtt)
            .secure(chosen, &mut tls.stream, |p| self.chooses(check.setup, p));
        let found = match checked {
            Ok(found) => found,
            Err(Stop::Tls(why)) => return Err(self.after_handshake(target, check, &tls, why)),
            Err(Stop::Unserved(why)) => {
                return Err(EngineError::Unserved {
                    addr: self.addr,
                    why,
                })
            }
            Err(Stop::Handshake(why)) => {
                return Err(EngineError::Tls {
                    addr: self.addr,
                    why,
                    plain: target.plain_scheme(),
                })
            }
        };
        let asked = tls.asked();
        tls.close(self.timeout).map_err(|why| {
            let refused = Refused { why, asked };
            self.explain(target, check, refused)
        })?;
        Ok(found)
    }

    /// Whether the server chooses `protocol` when offered it alone, on a
    /// connection of its own (closed at once).
    fn chooses(&self, setup: &TlsSetup, protocol: Protocol) -> bool {
        let Ok(mut sock) = TcpStream::connect_timeout(&self.addr, self.timeout) else {
            return false;
        };
        let config = offering_only(&setup.config, protocol);
        let Ok(mut conn) = ClientConnection::new(config, setup.name.clone()) else {
            return false;
        };
        let _ = sock.set_read_timeout(Some(self.timeout));
        let _ = sock.set_write_timeout(Some(self.timeout));
        while conn.is_handshaking() {
            if conn.complete_io(&mut sock).is_err() {
                return false;
            }
        }
        let chosen = conn.alpn_protocol().and_then(Protocol::from_alpn);
        conn.send_close_notify();
        let _ = conn.complete_io(&mut sock);
        chosen == Some(protocol)
    }

    /// A server that took none of the protocols offered by ALPN.
    fn not_chosen(&self, how: &str) -> EngineError {
        EngineError::Alpn {
            addr: self.addr,
            offered: self.protocols.alpn_list(),
            chose: how.to_string(),
            advice: self.protocols.none_chosen(),
        }
    }

    /// A failed handshake: a server that refused every protocol offered
    /// but speaks one that was not is named by the protocol; anything else
    /// is explained.
    fn refused(&self, target: &Target, check: &TlsCheck, refused: Refused) -> EngineError {
        let no_protocol = matches!(
            rustls_error(&refused.why),
            Some(rustls::Error::AlertReceived(
                AlertDescription::NoApplicationProtocol
            ))
        );
        let speaks_other = || {
            self.ask(self.rtt)
                .refused_alpn(|p| self.chooses(check.setup, p))
        };
        if let Some(why) = no_protocol.then(speaks_other).flatten() {
            return EngineError::Unserved {
                addr: self.addr,
                why,
            };
        }
        self.explain(target, check, refused)
    }

    /// A TLS error after the handshake (a client certificate refused
    /// after a TLS 1.3 handshake), explained as a handshake's.
    fn after_handshake(
        &self,
        target: &Target,
        check: &TlsCheck,
        tls: &Handshaken,
        why: io::Error,
    ) -> EngineError {
        let asked = tls.asked();
        self.explain(target, check, Refused { why, asked })
    }

    /// Names the fix: trust for a refused server certificate, `--cert` for
    /// a server that wants a client certificate, the protocols for one
    /// that takes none of those offered, `--timeout` for one that did not
    /// answer in time, the scheme otherwise.
    fn explain(&self, target: &Target, check: &TlsCheck, refused: Refused) -> EngineError {
        let Refused { why, asked } = refused;
        let addr = self.addr;
        let timed_out = matches!(
            why.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        );
        if timed_out && rustls_error(&why).is_none() {
            return EngineError::TlsTimeout {
                addr,
                after: self.timeout,
            };
        }
        if is_certificate_error(&why) {
            let (why, hint) = check.certificate_refusal(&why);
            let host = target.host.clone();
            return EngineError::Certificate { host, why, hint };
        }
        let (alert, required) = match rustls_error(&why) {
            // Servers that check ALPN end the handshake with this alert
            // when they speak none of the protocols offered.
            Some(rustls::Error::AlertReceived(AlertDescription::NoApplicationProtocol)) => {
                return self.not_chosen(" (it refused the handshake: no_application_protocol)")
            }
            Some(rustls::Error::AlertReceived(a)) => {
                (true, *a == AlertDescription::CertificateRequired)
            }
            _ => (false, false),
        };
        let why = tls_words::handshake(&why);
        if !(required || (asked && alert)) {
            // An alert is TLS: the server speaks it, and refused this
            // handshake for a reason of its own.
            if alert {
                let host = target.host.clone();
                return EngineError::TlsRefused { addr, why, host };
            }
            let plain = target.plain_scheme();
            return EngineError::Tls { addr, why, plain };
        }
        match &check.opts.identity {
            None => EngineError::ClientCertRequired { addr, why },
            Some(id) => EngineError::ClientCertRefused {
                addr,
                cert: id.cert.display().to_string(),
                why,
            },
        }
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
    /// What was wrong with a refused server certificate, and the fix.
    fn certificate_refusal(&self, why: &io::Error) -> (String, String) {
        let words = tls_words::handshake(why);
        let skip = "or -k to skip verification";
        let pass = format!("pass its authority with --cacert FILE, {skip}");
        let Some(rustls::Error::InvalidCertificate(fault)) = rustls_error(why) else {
            return (words, "pass -k/--insecure to skip verification".to_string());
        };
        let cacert = match &self.opts.trust {
            Trust::Authorities { file, .. } => Some(file.display()),
            _ => None,
        };
        let hint = match fault {
            CertificateError::UnknownIssuer => match (cacert, self.store_trouble) {
                (Some(file), _) => {
                    format!("--cacert {file} does not hold the authority that issued it; {pass}")
                }
                (None, Some(trouble)) => format!("{trouble}; {pass}"),
                (None, None) => {
                    let words = "it is issued by an authority the system does not trust";
                    return (words.to_string(), pass);
                }
            },
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!("use a URL with a name it is for (with --resolve NAME:PORT:ADDR to reach this address by that name), {skip}")
            }
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. } => {
                format!("renew it (or check this machine's clock), {skip}")
            }
            _ if webpki_fault(fault) == Some(&webpki::Error::CaUsedAsEndEntity) => {
                match cacert {
                    Some(file) => format!("to trust it as it is, put it in --cacert FILE ({file} does not hold it), {skip}"),
                    None => format!("to trust it as it is, pass it with --cacert FILE, {skip}"),
                }
            }
            _ => "pass -k/--insecure to skip verification".to_string(),
        };
        (words, hint)
    }
}

/// A TLS connection whose handshake is done, for the reads that follow.
struct Handshaken {
    stream: StreamOwned<ClientConnection, TcpStream>,
    /// What ALPN chose.
    chosen: Option<Protocol>,
    /// Set when the server asked for a client certificate.
    asked: Arc<AtomicBool>,
}

impl Handshaken {
    fn asked(&self) -> bool {
        self.asked.load(Ordering::Relaxed)
    }

    /// Ends the connection with close_notify; a server that asked for a
    /// client certificate is first given the time to refuse it.
    fn close(mut self, timeout: Duration) -> io::Result<()> {
        let StreamOwned { conn, sock } = &mut self.stream;
        conn.send_close_notify();
        let _ = conn.complete_io(sock);
        if self.asked.load(Ordering::Relaxed) {
            await_verdict(conn, sock, timeout)?;
        }
        Ok(())
    }
}

fn handshake(
    mut sock: TcpStream,
    tls: &TlsSetup,
    timeout: Duration,
) -> Result<Handshaken, Refused> {
    let (config, asked) = noting_certificate_requests(&tls.config);
    let refused = |why: io::Error| Refused {
        why,
        asked: asked.load(Ordering::Relaxed),
    };
    let mut conn = ClientConnection::new(config, tls.name.clone())
        .map_err(|e| refused(io::Error::other(e)))?;
    sock.set_read_timeout(Some(timeout)).map_err(refused)?;
    sock.set_write_timeout(Some(timeout)).map_err(refused)?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).map_err(refused)?;
    }
    let chosen = conn.alpn_protocol().and_then(Protocol::from_alpn);
    Ok(Handshaken {
        stream: StreamOwned::new(conn, sock),
        chosen,
        asked,
    })
}

/// In TLS 1.3 the client's side of the handshake is over before the
/// server has checked the client's certificate: a refusal comes after, as
/// an alert. Reads until the server answers the close_notify, closes, or
/// stays silent for the timeout; only an alert counts as a refusal.
fn await_verdict(
    conn: &mut ClientConnection,
    sock: &mut TcpStream,
    timeout: Duration,
) -> io::Result<()> {
    let deadline = Instant::now() + timeout;
    // Session tickets and the server's close_notify: a few records.
    for _ in 0..64 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        sock.set_read_timeout(Some(left))?;
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
