//! One accepted connection, from the accept to the protocol that serves
//! it: the TLS handshake with `--tls`, then HTTP/1.1 (`conn`) or HTTP/2
//! (`h2conn`).
//!
//! With `--http2` a cleartext connection speaks HTTP/2 from its first byte
//! (prior knowledge, h2c); over TLS, ALPN offers `h2` and `http/1.1` and
//! the client's pick decides, so an HTTP/1.1 client is still served.
//! Without `--http2` every connection is HTTP/1.1, as before.

use std::sync::Arc;

use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use super::conn;
use super::h2conn;
use super::shared::{OpenGuard, Shared, Stream};
use super::tls::ALPN_H2;

/// Serves one accepted connection until either side ends it.
pub(crate) async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let _open = OpenGuard(Arc::clone(&shared.stats));
    match shared.tls.clone() {
        None => speak(stream, shared, false).await,
        // A client that rejects the certificate ends the handshake, and
        // with it the connection.
        Some(tls) => {
            if let Ok(stream) = TlsAcceptor::from(tls).accept(stream).await {
                let h2 = stream.get_ref().1.alpn_protocol() == Some(ALPN_H2);
                speak(stream, shared, h2).await;
            }
        }
    }
}

/// Serves `stream` in HTTP/2 if it was negotiated or is spoken from the
/// start (cleartext `--http2`), else in HTTP/1.1.
async fn speak<S: Stream>(stream: S, shared: Arc<Shared>, negotiated_h2: bool) {
    let prior_knowledge = shared.tls.is_none() && shared.cfg.http2.is_some();
    if negotiated_h2 || prior_knowledge {
        h2conn::serve(stream, shared).await;
    } else {
        conn::serve(stream, shared).await;
    }
}
