//! Plain TCP and TLS behind one small interface, so that a connection's
//! state machine never asks which one it has.
//!
//! TLS is rustls driven by hand over a non-blocking mio socket: records are
//! read with `read_tls` until the socket would block, and plaintext writes
//! are buffered by rustls and pushed with `write_tls` (see [`Transport::flush`]).
//!
//! Datagrams (QUIC's) go through [`Udp`] in batches, with what the kernel
//! offers for them: GSO to send several in one call, `recvmmsg` and GRO to
//! read several.
//!
//! [`client_config`] builds the one rustls configuration a run uses, from
//! the trust and client certificate the command line chose.

use std::io::{self, IoSliceMut, Read, Write};
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
use super::trust;
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
    /// A connected UDP socket, for a session that does its own TLS
    /// (QUIC).
    Datagrams(Box<Udp>),
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
        // Turns on GRO and the ancillary data the batched calls read, and
        // finds whether the kernel has GSO.
        let state = quinn_udp::UdpSocketState::new((&sock).into())?;
        Ok(Transport::Datagrams(Box::new(Udp {
            sock,
            state,
            remote: addr,
        })))
    }

    /// The socket, to register with the poller.
    pub fn socket(&mut self) -> &mut dyn Source {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(t) => &mut t.sock,
            Transport::Datagrams(u) => &mut u.sock,
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
            // GRO may have joined several datagrams into one read: only
            // `read_datagrams` says where they part.
            Transport::Datagrams(_) => Err(io::ErrorKind::Unsupported.into()),
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
            Transport::Datagrams(u) => u.send(buf, None),
        }
    }

    /// Writes `buf`; over datagrams, as datagrams of `segment` bytes each
    /// when it is given (the last may be shorter). Returns the bytes of
    /// the datagrams that went out.
    pub fn write_segmented(&mut self, buf: &[u8], segment: Option<usize>) -> io::Result<usize> {
        match self {
            Transport::Datagrams(u) => u.send(buf, segment),
            _ => self.write(buf),
        }
    }

    /// Over datagrams: reads what is waiting into `inbox` in one call.
    /// Returns how many reads it took in (see [`Inbox::is_full`]).
    pub fn read_datagrams(&mut self, inbox: &mut Inbox) -> io::Result<usize> {
        match self {
            Transport::Datagrams(u) => u.recv(inbox),
            _ => Err(io::ErrorKind::Unsupported.into()),
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

/// A connected UDP socket and what its kernel offers for batches.
pub struct Udp {
    sock: UdpSocket,
    state: quinn_udp::UdpSocketState,
    remote: SocketAddr,
}

impl Udp {
    /// Sends `buf` as one datagram, or as datagrams of `segment` bytes: in
    /// one call with GSO, else in one `sendmmsg`, else one call each. A
    /// send that would block part way returns what went out; the rest is
    /// the caller's to send again.
    fn send(&self, buf: &[u8], segment: Option<usize>) -> io::Result<usize> {
        let Some(size) = segment.filter(|&s| s > 0 && s < buf.len()) else {
            return self.send_one(buf, None).map(|()| buf.len());
        };
        if self.state.max_gso_segments() > 1 {
            match self.send_one(buf, Some(size)) {
                Ok(()) => return Ok(buf.len()),
                // The kernel or the device refused GSO (the state now says
                // so): this batch and every later one go without it.
                Err(_) if self.state.max_gso_segments() == 1 => {}
                Err(e) => return Err(e),
            }
        }
        match self.send_many(buf, size) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(e),
            // No sendmmsg, or a datagram the path refused: one by one,
            // where each is dealt with on its own.
            Err(_) => {}
        }
        let mut sent = 0;
        for datagram in buf.chunks(size) {
            match self.send_one(datagram, None) {
                Ok(()) => sent += datagram.len(),
                Err(e) if sent == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(sent)
    }

    /// Datagrams of `size` bytes (the last may be shorter), up to 16, in
    /// one `sendmmsg` on the connected socket: the bytes of those that
    /// went out.
    fn send_many(&self, buf: &[u8], size: usize) -> io::Result<usize> {
        const MAX: usize = 16;
        // SAFETY: all-zero iovecs and mmsghdrs are valid (null pointers,
        // zero lengths); those used are filled in below.
        let mut iovs: [libc::iovec; MAX] = unsafe { std::mem::zeroed() };
        let mut msgs: [libc::mmsghdr; MAX] = unsafe { std::mem::zeroed() };
        let mut n = 0;
        for (i, datagram) in buf.chunks(size).take(MAX).enumerate() {
            iovs[i] = libc::iovec {
                iov_base: datagram.as_ptr() as *mut libc::c_void,
                iov_len: datagram.len(),
            };
            n = i + 1;
        }
        for (i, msg) in msgs[..n].iter_mut().enumerate() {
            // The socket is connected: no address.
            msg.msg_hdr.msg_iov = iovs[i..].as_mut_ptr();
            msg.msg_hdr.msg_iovlen = 1;
        }
        loop {
            // SAFETY: `msgs[..n]` point at `iovs[..n]`, which point into
            // `buf`; all outlive the call, and the kernel only reads them
            // (and writes each msg_len).
            let r = unsafe {
                libc::sendmmsg(
                    std::os::fd::AsRawFd::as_raw_fd(&self.sock),
                    msgs.as_mut_ptr(),
                    n as libc::c_uint,
                    0,
                )
            };
            if r >= 0 {
                return Ok(msgs[..r as usize].iter().map(|m| m.msg_len as usize).sum());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    fn send_one(&self, contents: &[u8], segment_size: Option<usize>) -> io::Result<()> {
        let transmit = quinn_udp::Transmit {
            destination: self.remote,
            ecn: None,
            contents,
            segment_size,
            src_ip: None,
        };
        match self.state.try_send((&self.sock).into(), &transmit) {
            // Larger than the path takes: a lost packet to QUIC (an MTU
            // probe, most often), not a broken socket.
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => Ok(()),
            other => other,
        }
    }

    fn recv(&self, inbox: &mut Inbox) -> io::Result<usize> {
        let mut slots = inbox.buf.chunks_exact_mut(Inbox::SLOT);
        let mut bufs: [IoSliceMut; Inbox::SLOTS] =
            std::array::from_fn(|_| IoSliceMut::new(slots.next().unwrap_or_default()));
        inbox.count = 0;
        inbox.count = self
            .state
            .recv((&self.sock).into(), &mut bufs, &mut inbox.metas)?;
        Ok(inbox.count)
    }
}

/// Where a worker's datagram connections read: room for one `recvmmsg` of
/// [`Inbox::SLOTS`] reads, each as large as GRO may make one (64 KiB).
/// One per worker, made when its first datagram connection opens.
pub struct Inbox {
    buf: Box<[u8]>,
    metas: [quinn_udp::RecvMeta; Inbox::SLOTS],
    count: usize,
}

impl Inbox {
    const SLOTS: usize = 8;
    const SLOT: usize = 64 * 1024;

    pub fn new() -> Inbox {
        Inbox {
            buf: vec![0; Inbox::SLOTS * Inbox::SLOT].into_boxed_slice(),
            metas: [quinn_udp::RecvMeta::default(); Inbox::SLOTS],
            count: 0,
        }
    }

    /// The datagrams of the last read, in order: each read's bytes, cut
    /// where GRO joined them.
    pub fn datagrams(&self) -> impl Iterator<Item = &[u8]> {
        self.metas[..self.count]
            .iter()
            .zip(self.buf.chunks_exact(Inbox::SLOT))
            .flat_map(|(m, slot)| slot[..m.len].chunks(m.stride.max(1)))
    }

    /// The last read filled every slot: more may be waiting.
    pub fn is_full(&self) -> bool {
        self.count == Inbox::SLOTS
    }
}

impl Default for Inbox {
    fn default() -> Inbox {
        Inbox::new()
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
/// what was wrong with the system's store (for the error when a
/// certificate is refused).
pub struct ClientTls {
    pub config: Arc<rustls::ClientConfig>,
    /// Set when the system's store was used and did not read cleanly:
    /// what was wrong, and what was trusted instead (see
    /// [`trust::system_store`]).
    pub store_trouble: Option<String>,
}

/// Builds the client configuration: the trust of `opts` (the system's
/// store, `--cacert`'s authorities, or none with `-k`), its client
/// certificate, if any, and the protocols to offer by ALPN.
pub fn client_config(opts: &TlsOptions, offer: &[Protocol]) -> ClientTls {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports the default protocol versions");
    let mut store_trouble = None;
    let builder = match &opts.trust {
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(trust::any(provider)),
        Trust::Authorities { roots, certs, .. } => builder
            .dangerous()
            .with_custom_certificate_verifier(trust::listed(
                roots.clone(),
                certs.clone(),
                provider,
            )),
        Trust::System => {
            let store = trust::system_store();
            store_trouble = store.trouble;
            builder.with_root_certificates(store.roots)
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
        store_trouble,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A datagram transport connected to a plain UDP socket on loopback,
    /// and that socket, connected back.
    fn pair() -> (Transport, std::net::UdpSocket) {
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let t = Transport::datagrams(peer.local_addr().unwrap()).unwrap();
        let Transport::Datagrams(u) = &t else {
            unreachable!("datagrams() makes a datagram transport")
        };
        peer.connect(u.sock.local_addr().unwrap()).unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        (t, peer)
    }

    /// Datagrams of these sizes, each its own: byte k of datagram d is
    /// d + k.
    fn batch(sizes: &[usize]) -> Vec<Vec<u8>> {
        sizes
            .iter()
            .enumerate()
            .map(|(d, &n)| (0..n).map(|k| (d + k) as u8).collect())
            .collect()
    }

    /// `peer` receives `sent`, datagram by datagram.
    fn arrive(peer: &std::net::UdpSocket, sent: &[Vec<u8>]) {
        let mut buf = [0u8; 4096];
        for want in sent {
            let got = peer.recv(&mut buf).unwrap();
            assert_eq!(&buf[..got], &want[..]);
        }
    }

    /// Where the kernel has no GSO: the same datagrams in one sendmmsg.
    #[test]
    fn without_gso_a_batch_goes_in_one_sendmmsg() {
        let (t, peer) = pair();
        let Transport::Datagrams(u) = &t else {
            unreachable!("datagrams() makes a datagram transport")
        };
        let sent = batch(&[900, 900, 900, 17]);
        assert_eq!(u.send_many(&sent.concat(), 900).unwrap(), 2717);
        arrive(&peer, &sent);
    }

    #[test]
    fn a_segmented_write_arrives_as_its_datagrams() {
        let (mut t, peer) = pair();
        let sent = batch(&[1000, 1000, 1000, 1000, 300]);
        let n = t.write_segmented(&sent.concat(), Some(1000)).unwrap();
        assert_eq!(n, 4300);
        arrive(&peer, &sent);
    }

    /// The peer sends a run of datagrams in one GSO call, which GRO hands
    /// over joined where the kernel has it (one read of 14,900 bytes cut
    /// every 1,200, here): the inbox gives them back one by one, in
    /// order, as sent, with the plain ones that follow.
    #[test]
    fn datagrams_read_in_batches_come_back_as_sent() {
        let (mut t, peer) = pair();
        let state = quinn_udp::UdpSocketState::new((&peer).into()).unwrap();
        let mut sent = batch(&[1200; 12]);
        sent.push(batch(&[0, 500])[1].clone());
        let to = peer.peer_addr().unwrap();
        let run = sent.concat();
        let gso = state.max_gso_segments() > 1;
        let chunks: Vec<&[u8]> = if gso {
            vec![&run[..]]
        } else {
            sent.iter().map(Vec::as_slice).collect()
        };
        for contents in chunks {
            let transmit = quinn_udp::Transmit {
                destination: to,
                ecn: None,
                contents,
                segment_size: gso.then_some(1200),
                src_ip: None,
            };
            state.try_send((&peer).into(), &transmit).unwrap();
        }
        for extra in batch(&[7, 9]) {
            peer.send(&extra).unwrap();
            sent.push(extra);
        }
        let mut inbox = Inbox::new();
        let mut got: Vec<Vec<u8>> = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(2);
        while got.len() < sent.len() && Instant::now() < deadline {
            match t.read_datagrams(&mut inbox) {
                Ok(_) => got.extend(inbox.datagrams().map(<[u8]>::to_vec)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(got, sent);
    }
}
