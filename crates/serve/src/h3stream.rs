//! One HTTP/3 request stream as the HTTP/3 library carries it: what
//! `exchange` (the request and its response, shared with HTTP/2) asks of
//! a stream, in HEADERS and DATA frames on a QUIC stream, or a reset.
//!
//! QUIC's packets are written by its library, out of the server's reach,
//! so a stall is kept here instead of on the wire: no frame of a response
//! goes to the library during one. The connection's own frames (QUIC
//! acknowledgements, HTTP/3 settings) are not held, which only means a
//! stalled HTTP/3 server stays reachable, as a stalled application behind
//! a working network stack does.

use std::future::pending;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use h3::error::Code;
use h3::server::{RequestResolver, RequestStream};
use http::header::HeaderMap;

use super::body::Sink;
use super::config::H3_REQUEST_REJECTED;
use super::exchange::{self, Exchange, Gone, Link};
use super::shared::Shared;

/// The HTTP/3 library's connection over QUIC's.
pub(crate) type Quic = h3_quinn::Connection;
/// A request stream that has not yet sent its head.
pub(crate) type Resolver = RequestResolver<Quic, Bytes>;

/// A request stream, reset when dropped unfinished: QUIC would otherwise
/// end it cleanly, passing a response cut short (its task ended with the
/// connection, say) off as complete.
struct H3Stream {
    stream: RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>,
    shared: Arc<Shared>,
    /// Finished or reset: nothing is left to end.
    ended: bool,
}

/// Serves one request stream until it is answered, reset, or its
/// connection ends.
pub(crate) async fn serve(link: Arc<Link>, resolver: Resolver) {
    let Ok((request, stream)) = resolver.resolve_request().await else {
        return;
    };
    let (parts, ()) = request.into_parts();
    let stream = H3Stream {
        stream,
        shared: Arc::clone(&link.shared),
        ended: false,
    };
    exchange::serve(link, parts, stream).await;
}

/// Refuses a request stream that came after the connection's GOAWAY: it
/// is reset with H3_REQUEST_REJECTED, unread and unprocessed.
pub(crate) async fn refuse(resolver: Resolver) {
    if let Ok((_, mut stream)) = resolver.resolve_request().await {
        let code = Code::from(H3_REQUEST_REJECTED);
        stream.stop_sending(code);
        stream.stop_stream(code);
    }
}

impl H3Stream {
    /// Ends the stream cleanly, once.
    async fn finish(&mut self) -> Result<(), Gone> {
        self.ended = true;
        self.stream.finish().await.map_err(|_| Gone)
    }
}

impl Exchange for H3Stream {
    async fn read_body(&mut self, mut keep: Option<&mut (dyn Sink + Send)>) -> Result<(), Gone> {
        while let Some(mut data) = self.stream.recv_data().await.map_err(|_| Gone)? {
            self.shared.stats.received(data.remaining());
            while data.has_remaining() {
                let chunk = data.chunk();
                if let Some(keep) = keep.as_deref_mut() {
                    keep.take(chunk);
                }
                let n = chunk.len();
                data.advance(n);
            }
        }
        Ok(())
    }

    async fn head(&mut self, head: http::Response<()>, end: bool) -> Result<(), Gone> {
        self.shared.wait_out_stall().await;
        self.stream.send_response(head).await.map_err(|_| Gone)?;
        if end {
            self.finish().await?;
        }
        Ok(())
    }

    async fn data(&mut self, bytes: Bytes, end: bool) -> Result<(), Gone> {
        self.shared.wait_out_stall().await;
        if !bytes.is_empty() {
            self.stream.send_data(bytes).await.map_err(|_| Gone)?;
        }
        if end {
            self.finish().await?;
        }
        Ok(())
    }

    async fn trailers(&mut self, trailers: HeaderMap) -> Result<(), Gone> {
        self.shared.wait_out_stall().await;
        self.stream
            .send_trailers(trailers)
            .await
            .map_err(|_| Gone)?;
        self.finish().await
    }

    fn reset(&mut self, code: u64) {
        self.ended = true;
        self.stream.stop_stream(Code::from(code));
    }

    /// The library tells a stream nothing of its client giving up on it,
    /// so a held stream lasts as long as its connection.
    async fn hold(&mut self) -> Gone {
        pending::<()>().await;
        Gone
    }
}

impl Drop for H3Stream {
    fn drop(&mut self) {
        if !self.ended {
            self.stream
                .stop_stream(Code::from(super::config::H3_INTERNAL_ERROR));
        }
    }
}
