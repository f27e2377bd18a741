//! HTTP/3's transport (`--http3`): the UDP socket beside the TCP
//! listener, QUIC's settings, and the loop that takes each new QUIC
//! connection to `h3conn`.
//!
//! HTTP/3 answers on UDP at the TCP listener's port number, the way web
//! servers put it on their TLS port, so `https://ADDR/` reaches the server
//! over either. When the OS picks the TCP port (port 0), the same number
//! may be taken on UDP; then both are picked again, a bounded number of
//! times.
//!
//! QUIC always runs TLS 1.3: the server's own certificate (`--tls`,
//! `--tls-cert`) and client authorities (`--client-ca`) serve it too,
//! with ALPN offering `h3` alone.

use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;

use quinn::crypto::rustls::QuicServerConfig;
use quinn::{Endpoint, EndpointConfig, TokioRuntime, TransportConfig, VarInt};

use super::config::{Beyond, Http3};
use super::h3conn;
use super::shared::Shared;

/// The ALPN name of HTTP/3.
const ALPN_H3: &[u8] = b"h3";
/// Pairs of ports the OS picks before giving up on one free on both TCP
/// and UDP; each try fails only if another program holds that UDP port,
/// so a few are plenty.
const PORT_TRIES: usize = 16;

/// Binds the TCP listener at `listen` and, with `udp`, a UDP socket at
/// the same address and port number.
pub(crate) fn bind(listen: SocketAddr, udp: bool) -> io::Result<(TcpListener, Option<UdpSocket>)> {
    if !udp {
        return Ok((TcpListener::bind(listen)?, None));
    }
    // A port asked for is taken as it is; only the OS's pick is retried.
    let tries = if listen.port() == 0 { PORT_TRIES } else { 1 };
    let mut last = None;
    for _ in 0..tries {
        let tcp = TcpListener::bind(listen)?;
        match UdpSocket::bind(tcp.local_addr()?) {
            Ok(udp) => {
                enlarge_receive_buffer(&udp);
                return Ok((tcp, Some(udp)));
            }
            Err(e) => last = Some(e),
        }
    }
    let why = last.map_or_else(|| "no port".to_string(), |e| e.to_string());
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        format!("--http3 needs the same port free on UDP: {why}"),
    ))
}

/// The receive buffer the UDP socket asks for: the kernel grants at most
/// `net.core.rmem_max` of it (4 MiB on many distributions).
const RECEIVE_BUFFER: libc::c_int = 8 << 20;

/// Asks for a larger receive buffer than the default (208 KiB). One socket
/// takes every connection's datagrams, and while the endpoint's task is
/// busy writing (a stall's held responses all going out at once) the
/// clients' packets queue in it; past the buffer the kernel drops them
/// (`RcvbufErrors` in /proc/net/snmp), and each drop is a packet the
/// client declares lost and sends again, about 1 % of them in `metron demo
/// --http3` on loopback. A refusal leaves the default: the server still
/// serves.
fn enlarge_receive_buffer(udp: &UdpSocket) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket, and an int option of the size given.
    unsafe {
        libc::setsockopt(
            udp.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&RECEIVE_BUFFER as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// QUIC's server settings: the TLS configuration with ALPN `h3`, early
/// data accepted, and at most `max_streams` request streams open at once
/// per connection.
pub(crate) fn server_config(
    tls: &rustls::ServerConfig,
    http3: Http3,
) -> Result<quinn::ServerConfig, String> {
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![ALPN_H3.to_vec()];
    // 0-RTT: a client resuming a session (`metron --0rtt`) may send its
    // requests in its first flight. The tickets that allow it are issued
    // only with this set; QUIC takes no other value than 0 or u32::MAX
    // (RFC 9001 §4.6.1). rustls accepts early data only on tickets it
    // keeps itself (stateful resumption, its default), each used once,
    // which keeps a replayed first flight from being taken twice.
    tls.max_early_data_size = u32::MAX;
    let crypto = QuicServerConfig::try_from(tls).map_err(|e| format!("--http3: {e}"))?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = TransportConfig::default();
    transport.max_concurrent_bidi_streams(VarInt::from_u32(http3.max_streams));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// Starts QUIC on `socket`; must run inside the server's runtime, whose
/// tasks then drive it.
pub(crate) fn endpoint(socket: UdpSocket, config: quinn::ServerConfig) -> io::Result<Endpoint> {
    socket.set_nonblocking(true)?;
    Endpoint::new(
        EndpointConfig::default(),
        Some(config),
        socket,
        Arc::new(TokioRuntime),
    )
}

/// Serves every QUIC connection that arrives, each in a task of its own,
/// until the endpoint is dropped with the runtime.
pub(crate) async fn accept(endpoint: Endpoint, shared: Arc<Shared>) {
    while let Some(incoming) = endpoint.accept().await {
        if !shared.take_place() {
            shared.stats.connection_turned_away();
            match shared.cfg.beyond_limit {
                Beyond::Close => incoming.refuse(),
                Beyond::Hold => incoming.ignore(),
            }
            continue;
        }
        tokio::spawn(h3conn::serve(incoming, Arc::clone(&shared)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_gets_the_tcp_port_number() {
        let listen = SocketAddr::from(([127, 0, 0, 1], 0));
        let (tcp, udp) = bind(listen, true).unwrap();
        let udp = udp.unwrap();
        assert_eq!(tcp.local_addr().unwrap(), udp.local_addr().unwrap());
        // A port asked for and taken on UDP is an error, not another port.
        let taken = tcp.local_addr().unwrap();
        drop(tcp);
        let err = bind(taken, true).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("--http3 needs the same port free on UDP"));
        let (tcp, none) = bind(listen, false).unwrap();
        assert!(none.is_none() && tcp.local_addr().is_ok());
    }

    /// The receive buffer of a socket, as the kernel granted it.
    fn receive_buffer(udp: &UdpSocket) -> libc::c_int {
        use std::os::fd::AsRawFd;
        let mut size: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: a valid socket, and an int option with its size.
        let r = unsafe {
            libc::getsockopt(
                udp.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&mut size as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(r, 0, "{}", io::Error::last_os_error());
        size
    }

    /// Regression: with the default receive buffer the kernel dropped
    /// about 1 % of the client's packets in `metron demo --http3` on
    /// loopback (RcvbufErrors), which the client reported as QUIC loss.
    /// The server's socket has more than a default one.
    #[test]
    fn the_udp_socket_gets_more_than_the_default_receive_buffer() {
        let plain = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (_tcp, udp) = bind(SocketAddr::from(([127, 0, 0, 1], 0)), true).unwrap();
        let (default, ours) = (receive_buffer(&plain), receive_buffer(&udp.unwrap()));
        assert!(ours > default, "{ours} bytes, the default {default}");
    }
}
