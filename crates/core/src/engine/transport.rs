//! Plain TCP and TLS behind one small interface, so that a connection's
//! state machine never asks which one it has.
//!
//! TLS is rustls driven by hand over a non-blocking mio socket: records are
//! read with `read_tls` until the socket would block, and plaintext writes
//! are buffered by rustls and pushed with `write_tls` (see [`Transport::flush`]).
//!
//! [`client_config`] builds the one rustls configuration a run uses, from
//! the trust and client certificate the command line chose.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mio::event::Source;
use mio::net::{TcpStream, UdpSocket};
use rustls::client::ResolvesClientCert;
use rustls::pki_types::ServerName;
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::ClientConnection;

use super::setup::{Protocol, TlsOptions, Trust};
use crate::stats::ConnectCause;

/// What a worker needs to open TLS connections.
#[derive(Clone)]
pub struct TlsSetup {
    pub config: Arc<rustls::ClientConfig>,
    pub name: ServerName<'static>,
}

pub enum Transport {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
    /// A connected UDP socket: one datagram per read and write, for a
    /// session that does its own TLS (QUIC).
    Datagrams(UdpSocket),
}

pub struct TlsStream {
    sock: TcpStream,
    tls: ClientConnection,
}

impl Transport {
    /// Starts a non-blocking connect; completion is signalled by writability.
    pub fn connect(addr: SocketAddr, tls: Option<&TlsSetup>) -> io::Result<Transport> {
        let sock = TcpStream::connect(addr)?;
        Ok(match tls {
            None => Transport::Plain(sock),
            Some(t) => {
                let tls = ClientConnection::new(t.config.clone(), t.name.clone())
                    .map_err(io::Error::other)?;
                Transport::Tls(Box::new(TlsStream { sock, tls }))
            }
        })
    }

    /// A UDP socket connected to `addr`, for a protocol over datagrams.
    pub fn datagrams(addr: SocketAddr) -> io::Result<Transport> {
        let local: SocketAddr = if addr.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            ([0u16; 8], 0).into()
        };
        let sock = UdpSocket::bind(local)?;
        sock.connect(addr)?;
        Ok(Transport::Datagrams(sock))
    }

    /// The socket, to register with the poller.
    pub fn socket(&mut self) -> &mut dyn Source {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(t) => &mut t.sock,
            Transport::Datagrams(s) => s,
        }
    }

    fn tcp(&mut self) -> Option<&mut TcpStream> {
        match self {
            Transport::Plain(s) => Some(s),
            Transport::Tls(t) => Some(&mut t.sock),
            Transport::Datagrams(_) => None,
        }
    }

    /// After the first writable event: `Ok` when the TCP connect succeeded.
    /// Also switches off Nagle, since requests are written whole.
    pub fn finish_connect(&mut self) -> io::Result<()> {
        let Some(sock) = self.tcp() else {
            return Ok(());
        };
        if let Some(e) = sock.take_error()? {
            return Err(e);
        }
        sock.peer_addr()?;
        sock.set_nodelay(true)?;
        self.flush()
    }

    /// Plain TCP: a short read means the socket buffer is empty (TLS may
    /// hold decrypted records back, so it cannot say the same).
    pub fn is_plain(&self) -> bool {
        matches!(self, Transport::Plain(_))
    }

    /// True while a TLS handshake is still under way.
    pub fn handshaking(&self) -> bool {
        match self {
            Transport::Tls(t) => t.tls.is_handshaking(),
            _ => false,
        }
    }

    /// Reads plaintext. `Ok(0)` is the end of the stream.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(t) => t.read(buf),
            Transport::Datagrams(s) => s.recv(buf),
        }
    }

    /// Writes plaintext; TLS accepts it all into rustls and pushes what the
    /// socket takes.
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(buf),
            Transport::Tls(t) => {
                let n = t.tls.writer().write(buf)?;
                t.flush()?;
                Ok(n)
            }
            Transport::Datagrams(s) => s.send(buf),
        }
    }

    /// Pushes buffered TLS records (handshake or data) to the socket.
    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            Transport::Tls(t) => t.flush(),
            _ => Ok(()),
        }
    }
}

impl TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.tls.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // A peer that closes TCP without close_notify ends the stream too.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            let n = self.tls.read_tls(&mut self.sock)?;
            self.tls.process_new_packets().map_err(tls_error)?;
            self.flush()?;
            if n == 0 {
                // EOF: the reader now reports the end (or close_notify) itself.
                continue;
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.sock) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// A connect that has not finished yet: a readiness event came early (or
/// was meant for the socket its token named before).
pub fn still_connecting(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::NotConnected
    ) || matches!(e.raw_os_error(), Some(libc::EINPROGRESS | libc::EALREADY))
}

/// What a failed connect (or TLS handshake) met, for the report.
pub fn connect_cause(e: &io::Error) -> ConnectCause {
    if rustls_error(e).is_some() {
        return ConnectCause::Tls;
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ConnectCause::Refused,
        io::ErrorKind::TimedOut => ConnectCause::Timeout,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof => ConnectCause::Reset,
        io::ErrorKind::AddrNotAvailable | io::ErrorKind::AddrInUse => ConnectCause::Local,
        _ if matches!(
            e.raw_os_error(),
            Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
        ) =>
        {
            ConnectCause::Local
        }
        _ => ConnectCause::Other,
    }
}

/// Wraps a rustls error so that callers can tell certificate trouble apart.
pub fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// The rustls error inside `e`, if TLS made it.
pub fn rustls_error(e: &io::Error) -> Option<&rustls::Error> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
}

/// True when `e` came from certificate verification.
pub fn is_certificate_error(e: &io::Error) -> bool {
    rustls_error(e).is_some_and(|t| {
        matches!(
            t,
            rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
        )
    })
}

/// The client configuration that every https host of a run shares, and
/// where its trust came from (for the error when a certificate is refused).
pub struct ClientTls {
    pub config: Arc<rustls::ClientConfig>,
    /// Set when the operating system's store gave no usable certificate
    /// and the compiled-in roots stand in for it: why it gave none.
    pub fallback: Option<String>,
}

/// Builds the client configuration: the trust of `opts` (the system's
/// store, `--cacert`'s authorities, or none with `-k`), its client
/// certificate, if any, and the protocols to offer by ALPN.
pub fn client_config(opts: &TlsOptions, offer: &[Protocol]) -> ClientTls {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports the default protocol versions");
    let mut fallback = None;
    let builder = match &opts.trust {
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider))),
        Trust::Authorities { roots, .. } => builder.with_root_certificates(roots.clone()),
        Trust::System => {
            let (roots, why) = system_roots();
            fallback = why;
            builder.with_root_certificates(roots)
        }
    };
    let mut config = match &opts.identity {
        Some(id) => {
            builder.with_client_cert_resolver(Arc::new(SingleCertAndKey::from(id.key.clone())))
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = offer.iter().map(|p| p.alpn().as_bytes().to_vec()).collect();
    ClientTls {
        config: Arc::new(config),
        fallback,
    }
}

/// The operating system's trust store (or the files `SSL_CERT_FILE` and
/// `SSL_CERT_DIR` name, when set). A store that yields no usable
/// certificate (a minimal container without a CA bundle, say) is replaced
/// by the compiled-in roots, so public servers still verify; the reason
/// is returned for the error that a refused certificate then gets.
fn system_roots() -> (rustls::RootCertStore, Option<String>) {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _unusable) = roots.add_parsable_certificates(found.certs);
    if added > 0 {
        return (roots, None);
    }
    let why = match found.errors.first() {
        Some(e) => e.to_string(),
        None => "it holds no certificates".to_string(),
    };
    let built_in = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    (built_in, Some(why))
}

/// A copy of `config` that offers only `protocol` by ALPN: once a host has
/// chosen, every connection to it speaks the same.
pub fn offering_only(
    config: &Arc<rustls::ClientConfig>,
    protocol: Protocol,
) -> Arc<rustls::ClientConfig> {
    let mut only = (**config).clone();
    only.alpn_protocols = vec![protocol.alpn().as_bytes().to_vec()];
    Arc::new(only)
}

/// A copy of `config` that notes whether a server asked for a client
/// certificate, so that a handshake the server then fails can be told
/// apart from other failures (see the pre-flight in the engine).
pub fn noting_certificate_requests(
    config: &Arc<rustls::ClientConfig>,
) -> (Arc<rustls::ClientConfig>, Arc<AtomicBool>) {
    let asked = Arc::new(AtomicBool::new(false));
    let mut noting = (**config).clone();
    noting.client_auth_cert_resolver = Arc::new(NoteRequests {
        inner: config.client_auth_cert_resolver.clone(),
        asked: asked.clone(),
    });
    (Arc::new(noting), asked)
}

#[derive(Debug)]
struct NoteRequests {
    inner: Arc<dyn ResolvesClientCert>,
    asked: Arc<AtomicBool>,
}

impl ResolvesClientCert for NoteRequests {
    fn resolve(
        &self,
        root_hint_subjects: &[&[u8]],
        sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.asked.store(true, Ordering::Relaxed);
        self.inner.resolve(root_hint_subjects, sigschemes)
    }

    fn has_certs(&self) -> bool {
        self.inner.has_certs()
    }
}

/// `-k`: accepts any certificate but still checks handshake signatures, so
/// the connection is a real TLS connection, just not an authenticated one.
#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
