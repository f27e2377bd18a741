//! One QUIC connection from quinn-proto, driven by hand: an endpoint of its
//! own (one UDP socket per connection, as h2load's HTTP/3 client has),
//! datagrams in and out, its deadlines, and the engine's clock (`Nanos`)
//! mapped onto the `Instant`s quinn-proto counts in.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{
    ClientConfig, Connection, ConnectionError, ConnectionHandle, DatagramEvent, Endpoint,
    EndpointConfig, TransportConfig, TransportErrorCode, VarInt,
};

use crate::clock::Nanos;
use crate::http::session::Failure;

use super::frame::{varint, H3_NO_ERROR};

/// What every HTTP/3 session of a host opens with.
#[derive(Clone, Debug)]
pub struct QuicOptions {
    /// TLS 1.3 offering `h3` by ALPN, with the run's trust and identity.
    /// Its `enable_early_data` (set by `--0rtt`) lets a connection that
    /// resumes a session send 0-RTT: the session then opens at once.
    pub tls: Arc<rustls::ClientConfig>,
    /// The name the certificate must carry (SNI).
    pub server_name: String,
    /// `:authority` of a request that names no Host.
    pub authority: String,
    /// Requests in flight per connection at most (`-m`).
    pub max_streams: u32,
    /// The largest response head accepted (`--max-head`).
    pub max_field_section: u64,
    /// Keep each response's fields and body for a script.
    pub capture: bool,
    /// `--sse`: read each response body as an event stream.
    pub reading: crate::http::sse::EventReading,
}

/// What QUIC says of a connection, for the reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuicFacts {
    /// From the first Initial packet to the handshake's end.
    pub handshake: Option<Duration>,
    /// The server accepted early (0-RTT) data.
    pub zero_rtt: bool,
    /// Early data was sent: the connection resumed a session whose ticket
    /// allows it, with `--0rtt`.
    pub zero_rtt_offered: bool,
    pub lost_packets: u64,
    pub sent_packets: u64,
}

pub(super) struct Quic {
    endpoint: Endpoint,
    conn: Connection,
    handle: ConnectionHandle,
    remote: SocketAddr,
    epoch: Instant,
    epoch_nanos: Nanos,
    /// The datagrams to send next, `pending` bytes long (0: none), each
    /// `segment` bytes but the last when there are several.
    datagram: Vec<u8>,
    pending: usize,
    segment: Option<usize>,
    started: Nanos,
    connected: Option<Nanos>,
    /// A datagram from the server was a QUIC packet of this connection.
    heard: bool,
}

/// Bidirectional streams the server may open: none (HTTP/3 servers open
/// none). Unidirectional: its control stream, QPACK's two, and room.
const PEER_UNI_STREAMS: u32 = 8;

/// Datagrams asked of QUIC at once, to leave in one system call where the
/// kernel has GSO (the bound quinn itself uses).
const BATCH: usize = 10;

impl Quic {
    pub(super) fn connect(
        opts: &QuicOptions,
        remote: SocketAddr,
        now: Nanos,
    ) -> Result<Quic, String> {
        let crypto = QuicClientConfig::try_from(opts.tls.clone())
            .map_err(|e| format!("TLS cannot carry QUIC: {e}"))?;
        let mut transport = TransportConfig::default();
        transport
            .max_concurrent_bidi_streams(VarInt::from_u32(0))
            .max_concurrent_uni_streams(VarInt::from_u32(PEER_UNI_STREAMS))
            // Large windows, as over HTTP/2: flow control never holds a
            // fast server back.
            .stream_receive_window(VarInt::from_u32(16 << 20))
            .receive_window(VarInt::from_u32(64 << 20));
        let mut config = ClientConfig::new(Arc::new(crypto));
        config.transport_config(Arc::new(transport));
        let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, false, None);
        let epoch = Instant::now();
        let (handle, conn) = endpoint
            .connect(epoch, config, remote, &opts.server_name)
            .map_err(|e| format!("QUIC cannot start: {e}"))?;
        Ok(Quic {
            endpoint,
            conn,
            handle,
            remote,
            epoch,
            epoch_nanos: now,
            datagram: Vec::with_capacity(1500),
            pending: 0,
            segment: None,
            started: now,
            connected: None,
            heard: false,
        })
    }

    fn instant(&self, now: Nanos) -> Instant {
        self.epoch + Duration::from_nanos(now.saturating_sub(self.epoch_nanos))
    }

    fn nanos(&self, t: Instant) -> Nanos {
        self.epoch_nanos + t.saturating_duration_since(self.epoch).as_nanos() as Nanos
    }

    pub(super) fn conn(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// A datagram from the server.
    pub(super) fn handle(&mut self, datagram: &[u8], now: Nanos) {
        let at = self.instant(now);
        let data = BytesMut::from(datagram);
        let mut scratch = Vec::new();
        if let Some(DatagramEvent::ConnectionEvent(handle, event)) =
            self.endpoint
                .handle(at, self.remote, None, None, data, &mut scratch)
        {
            if handle == self.handle {
                self.heard = true;
                self.conn.handle_event(event);
            }
        }
        self.endpoint_events();
    }

    /// What the connection tells the endpoint, and back (new connection
    /// ids, retirement).
    fn endpoint_events(&mut self) {
        while let Some(event) = self.conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(self.handle, event) {
                self.conn.handle_event(back);
            }
        }
    }

    /// The next application event.
    pub(super) fn poll(&mut self, now: Nanos) -> Option<quinn_proto::Event> {
        self.endpoint_events();
        let event = self.conn.poll()?;
        if let quinn_proto::Event::Connected = event {
            self.connected.get_or_insert(now);
        }
        Some(event)
    }

    /// The next datagrams to send (empty: none now), and their size when
    /// there are several (the last may be shorter).
    pub(super) fn transmit(&mut self, now: Nanos) -> (&[u8], Option<usize>) {
        if self.pending == 0 {
            let at = self.instant(now);
            self.datagram.clear();
            if let Some(t) = self.conn.poll_transmit(at, BATCH, &mut self.datagram) {
                self.pending = t.size;
                self.segment = t.segment_size;
            }
        }
        (&self.datagram[..self.pending], self.segment)
    }

    /// Datagrams were prepared and not all sent yet.
    pub(super) fn has_pending(&self) -> bool {
        self.pending > 0
    }

    /// Prepares the next datagram and says QUIC's deadline after it.
    pub(super) fn poll_timeout_after_transmit(&mut self, now: Nanos) -> Option<Nanos> {
        let _ = self.transmit(now);
        self.poll_timeout()
    }

    /// The first `n` bytes [`Quic::transmit`] gave went out (whole
    /// datagrams); the rest go next.
    pub(super) fn transmitted(&mut self, n: usize) {
        if n >= self.pending {
            self.pending = 0;
        } else {
            self.datagram.drain(..n);
            self.pending -= n;
        }
    }

    pub(super) fn poll_timeout(&mut self) -> Option<Nanos> {
        self.conn.poll_timeout().map(|t| self.nanos(t))
    }

    pub(super) fn handle_timeout(&mut self, now: Nanos) {
        let at = self.instant(now);
        self.conn.handle_timeout(at);
        self.endpoint_events();
    }

    /// Closes the connection with an HTTP/3 error code.
    pub(super) fn close(&mut self, now: Nanos, code: u64) {
        let at = self.instant(now);
        let code = VarInt::from_u64(code).unwrap_or(VarInt::from_u32(0x101));
        self.conn.close(at, code, bytes::Bytes::new());
    }

    /// The request streams the server grants at once: its transport
    /// parameter initial_max_streams_bidi, once its first flight came.
    /// (quinn-proto keeps its peer's parameters to itself but writes them
    /// out in their wire form, which is read back here.)
    pub(super) fn peer_bidi_streams(&self) -> Option<u32> {
        let params = self.conn.crypto_session().transport_parameters().ok()??;
        let mut wire = Vec::new();
        params.write(&mut wire);
        let count = transport_parameter(&wire, INITIAL_MAX_STREAMS_BIDI)?;
        Some(u32::try_from(count).unwrap_or(u32::MAX))
    }

    /// QUIC's estimate of the round trip.
    pub(super) fn rtt(&self) -> Nanos {
        self.conn.rtt().as_nanos() as Nanos
    }

    /// The server's HANDSHAKE_DONE came: the handshake is confirmed.
    pub(super) fn confirmed(&self) -> bool {
        self.conn.stats().frame_rx.handshake_done > 0
    }

    /// Some datagram from the server was a QUIC packet of this
    /// connection (not merely something on its port).
    pub(super) fn heard(&self) -> bool {
        self.heard
    }

    pub(super) fn is_drained(&self) -> bool {
        self.conn.is_drained()
    }

    pub(super) fn facts(&self) -> QuicFacts {
        let stats = self.conn.stats();
        QuicFacts {
            handshake: self
                .connected
                .map(|at| Duration::from_nanos(at.saturating_sub(self.started))),
            zero_rtt: self.conn.accepted_0rtt(),
            zero_rtt_offered: self.conn.has_0rtt(),
            lost_packets: stats.path.lost_packets,
            sent_packets: stats.path.sent_packets,
        }
    }
}

/// The transport parameter that says how many bidirectional streams the
/// peer lets this side open at first (RFC 9000 §18.2).
const INITIAL_MAX_STREAMS_BIDI: u64 = 0x08;

/// The value of parameter `id` in transport parameters in their wire form
/// (each an id, a length and a value, all variable-length integers but the
/// value's bytes), when it is there and is an integer.
fn transport_parameter(mut wire: &[u8], id: u64) -> Option<u64> {
    while !wire.is_empty() {
        let (this, used) = varint(wire)?;
        let (len, more) = varint(&wire[used..])?;
        let start = used + more;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        let value = wire.get(start..end)?;
        if this == id {
            return varint(value).map(|(v, _)| v);
        }
        wire = &wire[end..];
    }
    None
}

/// What a lost connection costs the requests on it.
pub(super) fn failure(reason: &ConnectionError) -> Failure {
    match reason {
        ConnectionError::TimedOut => Failure::Timeout,
        ConnectionError::Reset => Failure::Reset(None),
        // The server closed the whole connection, its streams with it: a
        // close, gracefully (H3_NO_ERROR) or with an error (a reset of the
        // connection, as a TCP reset is), and no stream's own reset.
        ConnectionError::ApplicationClosed(close)
            if close.error_code.into_inner() == H3_NO_ERROR =>
        {
            Failure::Closed
        }
        ConnectionError::ApplicationClosed(_) => Failure::Reset(None),
        // A TLS alert, either side's (a certificate refused, a client
        // certificate missing): TLS failed, as it would over TCP.
        ConnectionError::ConnectionClosed(close)
            if CRYPTO_ERRORS.contains(&u64::from(close.error_code)) =>
        {
            Failure::Tls
        }
        // The server would take no connection now (past its limit, or
        // shutting down): it closed the connection as it opened.
        ConnectionError::ConnectionClosed(close)
            if close.error_code == TransportErrorCode::CONNECTION_REFUSED =>
        {
            Failure::Reset(None)
        }
        ConnectionError::TransportError(e) if CRYPTO_ERRORS.contains(&u64::from(e.code)) => {
            Failure::Tls
        }
        ConnectionError::ConnectionClosed(_) | ConnectionError::TransportError(_) => {
            Failure::Protocol
        }
        ConnectionError::VersionMismatch => Failure::Protocol,
        ConnectionError::LocallyClosed | ConnectionError::CidsExhausted => Failure::Closed,
    }
}

/// Why a QUIC handshake did not open a connection, as the pre-flight names
/// it to the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No datagram came back before the deadline.
    Silent,
    /// The server speaks no QUIC version this client does.
    Version,
    /// TLS: the server took none of the protocols offered (h3).
    NoH3,
    /// TLS: the server's certificate was refused here, for this reason.
    Certificate(String),
    /// TLS: the server wanted a client certificate, or refused ours, with
    /// this alert.
    ClientCertificate { alert: u8 },
    /// TLS: the server ended the handshake with this alert, for a reason
    /// of its own (internal_error, handshake_failure, ...).
    Alert { alert: u8 },
    /// Anything else, in QUIC's words.
    Other(String),
}

/// TLS alerts travel as QUIC's CRYPTO_ERROR codes 0x100 + alert (RFC 9001
/// §4.8).
const CRYPTO_ERRORS: std::ops::RangeInclusive<u64> = 0x100..=0x1ff;
const NO_APPLICATION_PROTOCOL: u64 = 0x100 + 120;
/// The alerts a server ends a handshake with over the client's
/// certificate (none given, or one it does not trust): bad_certificate to
/// unknown_ca (42 to 48, but illegal_parameter, 47), access_denied (49)
/// and certificate_required (116).
fn about_client_certificate(code: u64) -> bool {
    matches!(code.checked_sub(0x100), Some(42..=46 | 48 | 49 | 116))
}

/// What a connection lost during its handshake says of the server.
pub(super) fn refusal(reason: &ConnectionError) -> Refusal {
    match reason {
        ConnectionError::VersionMismatch => Refusal::Version,
        ConnectionError::TimedOut => Refusal::Silent,
        // Our side ended it: a certificate refused here, or h3 not chosen.
        ConnectionError::TransportError(e) => {
            let code = u64::from(e.code);
            match code {
                NO_APPLICATION_PROTOCOL => Refusal::NoH3,
                c if CRYPTO_ERRORS.contains(&c) && e.reason.contains("certificate") => {
                    Refusal::Certificate(e.reason.clone())
                }
                _ => Refusal::Other(e.to_string()),
            }
        }
        // The server ended it: the alert it sent.
        ConnectionError::ConnectionClosed(close) => {
            let code = u64::from(close.error_code);
            let said = String::from_utf8_lossy(&close.reason).into_owned();
            match code {
                NO_APPLICATION_PROTOCOL => Refusal::NoH3,
                c if about_client_certificate(c) => Refusal::ClientCertificate {
                    alert: (c - 0x100) as u8,
                },
                c if CRYPTO_ERRORS.contains(&c) => Refusal::Alert {
                    alert: (c - 0x100) as u8,
                },
                _ if said.is_empty() => Refusal::Other(close.to_string()),
                _ => Refusal::Other(said),
            }
        }
        other => Refusal::Other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::h3::frame::put_varint;

    #[test]
    fn a_transport_parameter_is_found_among_others_of_any_length() {
        let mut wire = Vec::new();
        // max_idle_timeout (0x01) = 30000, a GREASE parameter of 3 raw
        // bytes, then initial_max_streams_bidi = 5.
        for (id, value) in [(0x01u64, 30_000u64), (0x08, 5)] {
            put_varint(&mut wire, id);
            let mut v = Vec::new();
            put_varint(&mut v, value);
            put_varint(&mut wire, v.len() as u64);
            wire.extend_from_slice(&v);
            if id == 0x01 {
                put_varint(&mut wire, 0x1b_2a);
                put_varint(&mut wire, 3);
                wire.extend_from_slice(&[0xff, 0xff, 0xff]);
            }
        }
        assert_eq!(
            transport_parameter(&wire, INITIAL_MAX_STREAMS_BIDI),
            Some(5)
        );
        assert_eq!(transport_parameter(&wire, 0x01), Some(30_000));
        assert_eq!(transport_parameter(&wire, 0x09), None);
        // Cut short: nothing is read past the end.
        assert_eq!(
            transport_parameter(&wire[..wire.len() - 1], INITIAL_MAX_STREAMS_BIDI),
            None
        );
    }

    /// A server closing the connection loses its requests to a close
    /// (gracefully) or a reset (with an error), never to streams' resets
    /// by that code.
    #[test]
    fn a_connection_closed_by_the_server_is_no_streams_reset() {
        let closed = |code: u64| {
            ConnectionError::ApplicationClosed(quinn_proto::ApplicationClose {
                error_code: VarInt::from_u64(code).unwrap(),
                reason: bytes::Bytes::new(),
            })
        };
        assert_eq!(failure(&closed(H3_NO_ERROR)), Failure::Closed);
        assert_eq!(failure(&closed(0x102)), Failure::Reset(None));
    }

    /// A TLS alert the server ended the handshake with is named by its
    /// number, apart from those about the client's certificate.
    #[test]
    fn a_servers_alert_is_kept_by_its_number() {
        let closed = |alert: u8| {
            refusal(&ConnectionError::ConnectionClosed(
                quinn_proto::ConnectionClose {
                    error_code: TransportErrorCode::crypto(alert),
                    frame_type: None,
                    reason: bytes::Bytes::new(),
                },
            ))
        };
        assert_eq!(closed(80), Refusal::Alert { alert: 80 });
        assert_eq!(closed(116), Refusal::ClientCertificate { alert: 116 });
        assert_eq!(closed(120), Refusal::NoH3);
    }
}
