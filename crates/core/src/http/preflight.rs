//! A host's pre-flight in its protocol's terms. The engine reaches the
//! host (a TCP connection, TLS over it, or nothing for a protocol that
//! brings its own transport, as QUIC does) and hands over what it has;
//! here each protocol says what a server must say before the run, and
//! words what it found with the fix. The engine explains only what its
//! transport saw (a refused connection, a certificate, a timeout), so it
//! names no protocol.
//!
//! - HTTP/1.1: a server never speaks first, so one that sends HTTP/2
//!   SETTINGS unasked, or that closes a TLS connection at once and
//!   chooses h2 when offered it alone, speaks HTTP/2 only
//!   ([`super::h2::greeting`] says why listening is the way to tell).
//! - HTTP/2: sent the client preface, it must answer with SETTINGS, which
//!   say how many streams it allows.
//! - HTTP/3: one QUIC handshake offering h3 ([`super::h3::preflight`]).
//! - WebSocket: one upgrade, taken with `101` and the right accept
//!   ([`super::ws::preflight`]).

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use super::h2::greeting::{self, first_words_wait, Heard};
use super::h2::preflight::{Answer, Unfit};
use super::h3;
use super::offer::Protocols;
use super::version::Protocol;
use super::ws::preflight as ws;

pub use super::probe::{Line, Named};

/// What the pre-flight found of a host fit to load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub protocol: Protocol,
    /// The streams the server allows at once on a connection, if it said
    /// (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS, HTTP/3's stream credit).
    pub server_limit: Option<u32>,
}

/// Why a host reached over TCP is no place to load.
#[derive(Debug)]
pub enum Stop {
    /// What it said, or did not, in the protocol's words with the fix.
    Unserved(String),
    /// The TLS connection under the protocol failed: the transport's to
    /// explain (a client certificate refused after a TLS 1.3 handshake).
    Tls(io::Error),
    /// The handshake chose a protocol TLS over TCP cannot carry.
    Handshake(String),
}

/// One host's pre-flight, once the engine has reached it.
pub struct Ask<'a> {
    pub addr: SocketAddr,
    pub protocols: &'a Protocols,
    pub timeout: Duration,
    /// A round trip to the host: how long the connection (or the
    /// handshake) took.
    pub rtt: Duration,
    /// A WebSocket run: what its upgrade says.
    pub upgrade: Option<Upgrade<'a>>,
}

/// What a WebSocket run's pre-flight upgrade says to a host.
#[derive(Clone, Copy)]
pub struct Upgrade<'a> {
    pub conversation: &'a ws::Conversation,
    pub authority: &'a str,
    pub max_head: usize,
}

impl Ask<'_> {
    /// A plain-text host: the first protocol offered, spoken with prior
    /// knowledge; the error says why the host is no place to load, with
    /// the fix.
    pub fn plain(&self, sock: &mut TcpStream) -> Result<Found, String> {
        match self.protocols.offer.first() {
            Some(&Protocol::WebSocket) => self.upgraded(sock).map_err(|stop| match stop {
                Stop::Unserved(why) | Stop::Handshake(why) => why,
                Stop::Tls(e) => e.to_string(),
            }),
            Some(&Protocol::Http2) => {
                let fix = self.protocols.no_prior_knowledge();
                let unfit = |why: String| Unfit::PriorKnowledge(&why).words(self.addr, &fix);
                let heard = greeting::hello(sock, self.timeout).map_err(|e| {
                    unfit(match e.kind() {
                        io::ErrorKind::ConnectionReset => "it reset the connection".to_string(),
                        _ => e.to_string(),
                    })
                })?;
                let limit = self.settings(heard).map_err(unfit)?;
                self.found(Protocol::Http2, limit)
            }
            _ => {
                let wait = first_words_wait(self.rtt, self.timeout);
                if let Ok(Heard::Said(Answer::Settings { .. })) = greeting::listen(sock, wait) {
                    return Err(self.http2_only());
                }
                self.found(Protocol::Http1, None)
            }
        }
    }

    /// A TLS host whose handshake chose `chosen` by ALPN, over `line`.
    /// `chooses` asks the host again, on a connection of its own, offering
    /// one protocol alone, and says whether it chose it.
    pub fn secure(
        &self,
        chosen: Protocol,
        line: &mut impl Line,
        chooses: impl Fn(Protocol) -> bool,
    ) -> Result<Found, Stop> {
        match chosen {
            Protocol::Http2 => {
                let fix = self.protocols.http1_instead("");
                let unfit =
                    |why: String| Stop::Unserved(Unfit::AfterAlpn(&why).words(self.addr, &fix));
                let heard = match greeting::hello(line, self.timeout) {
                    Ok(heard) => heard,
                    Err(why) if is_tls(&why) => return Err(Stop::Tls(why)),
                    Err(why) => return Err(unfit(closed_words(&why))),
                };
                let limit = self.settings(heard).map_err(unfit)?;
                self.found(Protocol::Http2, limit).map_err(Stop::Unserved)
            }
            // A WebSocket run offers http/1.1, and upgrades from it.
            Protocol::Http1 | Protocol::WebSocket if self.upgrade.is_some() => self.upgraded(line),
            Protocol::Http1 | Protocol::WebSocket => {
                let heard = match greeting::listen(line, first_words_wait(self.rtt, self.timeout)) {
                    Ok(heard) => heard,
                    Err(why) if is_tls(&why) => return Err(Stop::Tls(why)),
                    // Reset or gone: as good as closed.
                    Err(_) => Heard::Closed,
                };
                let h2_only = match heard {
                    Heard::Said(Answer::Settings { .. }) => true,
                    // Some servers close at once when ALPN chose nothing
                    // they speak: ask again, offering h2 alone.
                    Heard::Closed => chooses(Protocol::Http2),
                    _ => false,
                };
                if h2_only {
                    return Err(Stop::Unserved(self.http2_only()));
                }
                self.found(Protocol::Http1, None).map_err(Stop::Unserved)
            }
            // Never offered over TCP: HTTP/3 runs over QUIC (`datagrams`).
            Protocol::Http3 => Err(Stop::Handshake(
                "it chose h3 by ALPN over TCP, which carries no HTTP/3".to_string(),
            )),
        }
    }

    /// A TLS handshake the server refused for want of a protocol it
    /// speaks: the words, when it speaks only one that was not offered.
    pub fn refused_alpn(&self, chooses: impl Fn(Protocol) -> bool) -> Option<String> {
        if self.protocols.offers_http2() || !chooses(Protocol::Http2) {
            return None;
        }
        Some(self.http2_only())
    }

    /// A WebSocket host: the upgrade taken over `line`.
    fn upgraded(&self, line: &mut impl Line) -> Result<Found, Stop> {
        let Some(u) = self.upgrade else {
            let why = "a WebSocket run needs a ws:// or wss:// URL".to_string();
            return Err(Stop::Unserved(why));
        };
        ws::upgrade(line, u.conversation, u.authority, u.max_head, self.timeout).map_err(
            |not| match not {
                ws::NotTaken::Said(why) => Stop::Unserved(format!(
                    "the server at {} did not take the WebSocket upgrade: {why}",
                    self.addr
                )),
                ws::NotTaken::Tls(e) => Stop::Tls(e),
            },
        )?;
        self.found(Protocol::WebSocket, None)
            .map_err(Stop::Unserved)
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
                "it sent no answer to the HTTP/2 preface within {:?} (--timeout: raise it for a slow server)",
                self.timeout
            )),
        }
    }

    /// A host found fit, unless it allows no stream at all: then no
    /// request could ever be sent to it.
    fn found(&self, protocol: Protocol, server_limit: Option<u32>) -> Result<Found, String> {
        if server_limit == Some(0) {
            let fix = self.protocols.http1_instead("raise its limit");
            return Err(Unfit::NoStreams.words(self.addr, &fix));
        }
        Ok(Found {
            protocol,
            server_limit,
        })
    }

    /// An HTTP/2-only server, asked for HTTP/1.1: the flag that fixes it.
    fn http2_only(&self) -> String {
        let fix = self.protocols.http2_instead();
        Unfit::Only.words(self.addr, &fix)
    }
}

/// The pre-flight of a protocol that brings its own transport (QUIC):
/// one handshake with `addr` offering it alone with `tls`, for
/// `server_name`, within `timeout`.
pub fn datagrams(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    server_name: String,
    authority: &str,
    timeout: Duration,
) -> Result<Found, Named> {
    match h3::preflight::handshake(addr, tls, server_name, authority, timeout) {
        Ok(server_limit) => Ok(Found {
            protocol: Protocol::Http3,
            server_limit,
        }),
        Err(failed) => Err(failed.named(addr, timeout)),
    }
}

/// Whether an error came from TLS (which the transport explains).
fn is_tls(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>())
}

/// What a connection that failed under the protocol, not under TLS, did.
fn closed_words(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => "the server closed the connection".to_string(),
        io::ErrorKind::ConnectionReset => "the server reset the connection".to_string(),
        _ => e.to_string(),
    }
}
