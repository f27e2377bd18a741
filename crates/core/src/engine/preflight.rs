//! The pre-flight: each server is reached once before the run, with a TLS
//! handshake for https hosts, so that an unreachable server, an untrusted
//! certificate, a missing client certificate or a protocol the server
//! does not speak is one clear error naming the fix, instead of a screen
//! of counted failures.
//!
//! An HTTP/2 host is sent the client preface and read for its SETTINGS
//! (over TLS too, once ALPN chose h2): they prove it speaks HTTP/2, and
//! say how many streams it allows. An HTTP/1.1 host is listened to briefly
//! for an HTTP/2-only server that speaks first (see `greeting`); over TLS
//! one that closes at once, or refuses every protocol offered, is asked
//! once more offering h2 alone.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::{AlertDescription, CertificateError, ClientConnection, StreamOwned};

use super::greeting::{self, first_words_wait, Heard};
use super::setup::{Protocol, Protocols, Setup, TlsOptions, Trust};
use super::share::Peer;
use super::transport::{
    self, client_config, is_certificate_error, noting_certificate_requests, offering_only,
    rustls_error, ClientTls, TlsSetup,
};
use super::trust::webpki_fault;
use super::{tls_words, EngineError};
use crate::http::h2::preflight::{Answer, Unfit};
use crate::http::h3::{self, preflight::Named};
use crate::target::{Scheme, Target};

/// What a server that cannot speak HTTP/2 is told of `--grpc`'s calls,
/// which have no other protocol to go over.
const GRPC_NEEDS_H2: &str =
    "gRPC runs over HTTP/2 only: check that the URL names a gRPC server's host and port";

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
            let reached = preflight(target, check, &run.protocols, run.timeout)?;
            // Every connection to the host speaks what it chose.
            let tls = tls.map(|t| TlsSetup {
                config: for_connections(&t.config, reached.protocol, run.protocols.zero_rtt),
                ..t
            });
            Ok(Peer {
                addr: reached.addr,
                tls,
                protocol: reached.protocol,
                authority: target.authority.clone(),
                server_limit: reached.server_limit,
            })
        })
        .collect()
}

/// The TLS configuration of every connection to a host that chose
/// `protocol`: offering it alone, and with `--0rtt` over HTTP/3 sending
/// early data whenever a ticket allows it. The tickets come from earlier
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
    if zero_rtt && protocol == Protocol::Http3 {
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

/// What the pre-flight found of a host.
struct Reached {
    addr: SocketAddr,
    protocol: Protocol,
    /// HTTP/2: the server's SETTINGS_MAX_CONCURRENT_STREAMS, if it set one.
    server_limit: Option<u32>,
}

/// Finds the first address that accepts a connection (and a TLS handshake),
/// and checks there that the server speaks what the run will send.
fn preflight(
    target: &Target,
    tls: Option<TlsCheck>,
    protocols: &Protocols,
    timeout: Duration,
) -> Result<Reached, EngineError> {
    if protocols.offer.first() == Some(&Protocol::Http3) {
        return quic_preflight(target, tls, timeout);
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
                };
                return match &tls {
                    Some(check) => probe.secure(sock, target, check),
                    None => probe.plain(sock),
                };
            }
            Err(why) => last = Some(EngineError::Connect { addr, why }),
        }
    }
    Err(last.expect("a target always has at least one address"))
}

/// An HTTP/3 host: the first address whose QUIC handshake offering h3
/// completes. A certificate refused over QUIC is explained as over TCP
/// when the host also answers TLS there (its words name the fix).
fn quic_preflight(
    target: &Target,
    tls: Option<TlsCheck>,
    timeout: Duration,
) -> Result<Reached, EngineError> {
    let Some(check) = tls else {
        return Err(EngineError::Tls {
            addr: target.addrs[0],
            why: "HTTP/3 needs TLS".to_string(),
        });
    };
    let identity = check.opts.identity.as_ref();
    let cert_path = identity.map(|id| id.cert.display().to_string());
    let cert = cert_path.as_deref();
    let mut last = None;
    let config = offering_only(&check.setup.config, Protocol::Http3);
    let name = check.setup.name.to_str().into_owned();
    for &addr in &target.addrs {
        let shook = h3::preflight::handshake(
            addr,
            config.clone(),
            name.clone(),
            &target.authority,
            timeout,
        );
        let failed = match shook {
            Ok(server_limit) => {
                return Ok(Reached {
                    addr,
                    protocol: Protocol::Http3,
                    server_limit,
                })
            }
            Err(failed) => failed.named(addr, timeout),
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
/// offering HTTP/2 and HTTP/1.1 so that the server gets as far as its
/// certificate; `None` when the host does not answer TLS over TCP.
fn certificate_over_tcp(
    addr: SocketAddr,
    target: &Target,
    check: &TlsCheck,
    timeout: Duration,
) -> Option<EngineError> {
    let sock = TcpStream::connect_timeout(&addr, timeout).ok()?;
    let mut config = (*check.setup.config).clone();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let setup = TlsSetup {
        config: Arc::new(config),
        name: check.setup.name.clone(),
    };
    let tcp_check = TlsCheck {
        setup: &setup,
        ..*check
    };
    let protocols = Protocols {
        offer: vec![Protocol::Http2, Protocol::Http1],
        ..Protocols::default()
    };
    let probe = Probe {
        addr,
        protocols: &protocols,
        timeout,
        rtt: Duration::ZERO,
    };
    match probe.secure(sock, target, &tcp_check) {
        Err(e @ EngineError::Certificate { .. }) => Some(e),
        _ => None,
    }
}

/// One host's pre-flight, over the connection it opened.
struct Probe<'a> {
    addr: SocketAddr,
    protocols: &'a Protocols,
    timeout: Duration,
    /// How long the TCP connect took: a round trip.
    rtt: Duration,
}

impl Probe<'_> {
    /// A plain-text host: h2c with prior knowledge must answer the
    /// preface with SETTINGS; an HTTP/1.1 one must not speak HTTP/2 first.
    fn plain(&self, mut sock: TcpStream) -> Result<Reached, EngineError> {
        let addr = self.addr;
        let fix = match self.protocols.calls {
            true => format!("{GRPC_NEEDS_H2} (an https:// URL for one that takes TLS)"),
            false => {
                "drop --http2 for HTTP/1.1, or use an https:// URL to negotiate HTTP/2 by ALPN"
                    .to_string()
            }
        };
        let not_h2c = |why: String| EngineError::Unserved {
            addr,
            why: Unfit::PriorKnowledge(&why).words(addr, &fix),
        };
        sock.set_write_timeout(Some(self.timeout))
            .map_err(|why| EngineError::Connect { addr, why })?;
        match self.protocols.offer.first().copied() {
            Some(Protocol::Http2) => {
                let heard = greeting::hello(&mut sock, self.timeout).map_err(|e| {
                    not_h2c(match e.kind() {
                        io::ErrorKind::ConnectionReset => "it reset the connection".to_string(),
                        _ => e.to_string(),
                    })
                })?;
                let limit = self.settings(heard).map_err(not_h2c)?;
                self.reached(Protocol::Http2, limit)
            }
            _ => {
                let wait = first_words_wait(self.rtt, self.timeout);
                if self.speaks_http2_first(&mut sock, wait) {
                    return Err(self.http2_only());
                }
                self.reached(Protocol::Http1, None)
            }
        }
    }

    /// An https host: the handshake, then, by the protocol ALPN chose, its
    /// SETTINGS or a moment's listening, then close_notify (and, if it
    /// asked for a client certificate, its verdict on the one given).
    fn secure(
        &self,
        sock: TcpStream,
        target: &Target,
        check: &TlsCheck,
    ) -> Result<Reached, EngineError> {
        let began = Instant::now();
        let mut tls = match handshake(sock, check.setup, self.timeout) {
            Ok(tls) => tls,
            Err(refused) => return Err(self.refused(target, check, refused)),
        };
        let rtt = self.rtt.max(began.elapsed() / 2);
        let reached = match self.negotiated(tls.chosen)? {
            Protocol::Http2 => self.h2_over_tls(&mut tls, target, check)?,
            Protocol::Http1 => self.h1_over_tls(&mut tls, target, check, rtt)?,
            // Never offered over TCP: HTTP/3 runs over QUIC (`quic_probe`).
            Protocol::Http3 => {
                let why = "it chose h3 by ALPN over TCP, which carries no HTTP/3".to_string();
                return Err(EngineError::Tls {
                    addr: self.addr,
                    why,
                });
            }
        };
        let asked = tls.asked();
        tls.close(self.timeout).map_err(|why| {
            let refused = Refused { why, asked };
            self.explain(target, check, refused)
        })?;
        Ok(reached)
    }

    /// h2 chosen by ALPN: the server must answer the preface with SETTINGS.
    fn h2_over_tls(
        &self,
        tls: &mut Handshaken,
        target: &Target,
        check: &TlsCheck,
    ) -> Result<Reached, EngineError> {
        let not_h2 = |why: String| EngineError::Unserved {
            addr: self.addr,
            why: Unfit::AfterAlpn(&why).words(self.addr, &self.http1_instead("")),
        };
        let heard = match greeting::hello(&mut tls.stream, self.timeout) {
            Ok(heard) => heard,
            Err(why) if rustls_error(&why).is_some() => {
                return Err(self.after_handshake(target, check, tls, why))
            }
            Err(why) => return Err(not_h2(tls_words::handshake(&why))),
        };
        let limit = self.settings(heard).map_err(not_h2)?;
        self.reached(Protocol::Http2, limit)
    }

    /// HTTP/1.1 over TLS: a server that sends HTTP/2 SETTINGS unasked, or
    /// closes at once and chooses h2 when offered it alone, speaks HTTP/2
    /// only.
    fn h1_over_tls(
        &self,
        tls: &mut Handshaken,
        target: &Target,
        check: &TlsCheck,
        rtt: Duration,
    ) -> Result<Reached, EngineError> {
        let wait = first_words_wait(rtt, self.timeout);
        let heard = match greeting::listen(&mut tls.stream, wait) {
            Ok(heard) => heard,
            Err(why) if rustls_error(&why).is_some() => {
                return Err(self.after_handshake(target, check, tls, why))
            }
            // Reset or gone: as good as closed.
            Err(_) => Heard::Closed,
        };
        let h2_only = match heard {
            Heard::Said(Answer::Settings { .. }) => true,
            // Some servers close at once when ALPN chose nothing they
            // speak: ask again, offering h2 alone.
            Heard::Closed => self.chooses_h2(check.setup),
            _ => false,
        };
        if h2_only {
            return Err(self.http2_only());
        }
        self.reached(Protocol::Http1, None)
    }

    /// The server's SETTINGS in answer to the preface, or what came
    /// instead, in words.
    fn settings(&self, heard: Heard) -> Result<Option<u32>, String> {
        match heard {
            Heard::Said(Answer::Settings { max_streams }) => Ok(max_streams),
            Heard::Said(Answer::Http1) => Err("it answered in HTTP/1".to_string()),
            Heard::Said(_) => Err("its first bytes are not an HTTP/2 SETTINGS frame".to_string()),
            Heard::Closed => Err("it closed the connection at the HTTP/2 preface".to_string()),
            Heard::Silent => Err(format!(
                "it sent no answer to the HTTP/2 preface within {:?}",
                self.timeout
            )),
        }
    }

    /// A host found fit, unless it allows no stream at all: then no
    /// request could ever be sent to it.
    fn reached(
        &self,
        protocol: Protocol,
        server_limit: Option<u32>,
    ) -> Result<Reached, EngineError> {
        if server_limit == Some(0) {
            let fix = self.http1_instead("raise its limit");
            return Err(EngineError::Unserved {
                addr: self.addr,
                why: Unfit::NoStreams.words(self.addr, &fix),
            });
        }
        Ok(Reached {
            addr: self.addr,
            protocol,
            server_limit,
        })
    }

    /// Whether a plain-text server sent HTTP/2 SETTINGS unasked.
    fn speaks_http2_first(&self, sock: &mut TcpStream, wait: Duration) -> bool {
        matches!(
            greeting::listen(sock, wait),
            Ok(Heard::Said(Answer::Settings { .. }))
        )
    }

    /// Whether the server chooses h2 when offered it alone, on a
    /// connection of its own (closed at once).
    fn chooses_h2(&self, setup: &TlsSetup) -> bool {
        let Ok(mut sock) = TcpStream::connect_timeout(&self.addr, self.timeout) else {
            return false;
        };
        let config = offering_only(&setup.config, Protocol::Http2);
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
        chosen == Some(Protocol::Http2)
    }

    /// The protocol a TLS host chose by ALPN. A server that chose nothing
    /// speaks HTTP/1.1, which is fine only when it was offered.
    fn negotiated(&self, chosen: Option<Protocol>) -> Result<Protocol, EngineError> {
        match chosen {
            Some(p) => Ok(p),
            None if self.protocols.offer.contains(&Protocol::Http1) => Ok(Protocol::Http1),
            None => Err(self.not_chosen(" (it chose none)")),
        }
    }

    /// A server that took none of the protocols offered by ALPN.
    fn not_chosen(&self, how: &str) -> EngineError {
        let offer = &self.protocols.offer;
        let advice = match (offer.as_slice(), &self.protocols.asked_by) {
            // gRPC offers h2 alone, and nothing else would carry it.
            _ if self.protocols.calls => {
                format!("it does not speak HTTP/2 over TLS, and {GRPC_NEEDS_H2}")
            }
            ([Protocol::Http2], flag) => format!(
                "it may not speak HTTP/2 over TLS: drop {}, or offer both with --alpn h2,http/1.1",
                flag.as_deref().unwrap_or("--http2")
            ),
            ([Protocol::Http1], Some(flag)) => format!(
                "it may not speak HTTP/1.1 over TLS: drop {flag}, or offer both with --alpn h2,http/1.1"
            ),
            ([Protocol::Http1], None) => {
                "it may not speak HTTP/1.1 over TLS: offer both with --alpn h2,http/1.1, or check the URL's port".to_string()
            }
            _ => "it speaks neither HTTP/2 nor HTTP/1.1 over TLS: check the URL's port".to_string(),
        };
        EngineError::Alpn {
            addr: self.addr,
            offered: offer.iter().map(|p| p.alpn()).collect::<Vec<_>>().join(","),
            chose: how.to_string(),
            advice,
        }
    }

    /// An HTTP/2-only server, asked for HTTP/1.1: the flag that fixes it.
    fn http2_only(&self) -> EngineError {
        let fix = match &self.protocols.asked_by {
            Some(flag) => format!("use --http2 instead of {flag}"),
            None => "add --http2".to_string(),
        };
        EngineError::Unserved {
            addr: self.addr,
            why: Unfit::Only.words(self.addr, &fix),
        }
    }

    /// The fix of a server that takes HTTP/2 but cannot be loaded over it:
    /// `first` (when there is one) or dropping the flag that asked for it,
    /// to load it over HTTP/1.1; gRPC calls have no HTTP/1.1 to fall back
    /// to, so for them only `first`, or the words that say so.
    fn http1_instead(&self, first: &str) -> String {
        let drop = || {
            let flag = self.protocols.asked_by.as_deref().unwrap_or("--http2");
            format!("drop {flag} to load it over HTTP/1.1")
        };
        match (self.protocols.calls, first) {
            (true, "") => GRPC_NEEDS_H2.to_string(),
            (true, first) => format!("{first} (gRPC runs over HTTP/2 only)"),
            (false, "") => drop(),
            (false, first) => format!("{first}, or {}", drop()),
        }
    }

    /// A failed handshake: an HTTP/2-only server that refused every
    /// protocol offered is named as such; anything else is explained.
    fn refused(&self, target: &Target, check: &TlsCheck, refused: Refused) -> EngineError {
        let no_protocol = matches!(
            rustls_error(&refused.why),
            Some(rustls::Error::AlertReceived(
                AlertDescription::NoApplicationProtocol
            ))
        );
        if no_protocol && !self.protocols.offers_http2() && self.chooses_h2(check.setup) {
            return self.http2_only();
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
            return EngineError::Tls { addr, why };
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
