//! One HTTP/2 stream as the HTTP/2 library carries it: what `exchange`
//! (the request and its response, shared with HTTP/3) asks of a stream,
//! in HEADERS, DATA and RST_STREAM frames.
//!
//! DATA goes out in pieces the client's flow-control window allows. The
//! wire (`h2wire`) holds every frame back during a stall, so nothing here
//! waits for one.

use std::future::poll_fn;
use std::sync::Arc;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream, SendStream};
use http::header::HeaderMap;
use http::Request;

use super::body::Sink;
use super::exchange::{self, Exchange, Gone, Link};

/// A stream's two halves: the request body coming in, and the response
/// going out (its body's half once the head is sent).
struct H2Stream {
    body: RecvStream,
    respond: SendResponse<Bytes>,
    send: Option<SendStream<Bytes>>,
}

/// Serves one stream until it is answered, reset, or its connection ends.
pub(crate) async fn serve(
    link: Arc<Link>,
    request: Request<RecvStream>,
    respond: SendResponse<Bytes>,
) {
    let (parts, body) = request.into_parts();
    let stream = H2Stream {
        body,
        respond,
        send: None,
    };
    exchange::serve(link, parts, stream).await;
}

impl Exchange for H2Stream {
    /// Gives the window back as it goes (`--h2-window` limits what is in
    /// flight, not what is read).
    async fn read_body(&mut self, mut keep: Option<&mut (dyn Sink + Send)>) -> Result<(), Gone> {
        while let Some(data) = self.body.data().await {
            let data = data.map_err(|_| Gone)?;
            let _ = self.body.flow_control().release_capacity(data.len());
            if let Some(keep) = keep.as_deref_mut() {
                keep.take(&data);
            }
        }
        Ok(())
    }

    async fn head(&mut self, head: http::Response<()>, end: bool) -> Result<(), Gone> {
        let send = self.respond.send_response(head, end).map_err(|_| Gone)?;
        if !end {
            self.send = Some(send);
        }
        Ok(())
    }

    /// Sends `bytes` in as few DATA frames as the client's window allows
    /// (one, unless it is nearly shut).
    async fn data(&mut self, mut bytes: Bytes, end: bool) -> Result<(), Gone> {
        let stream = self.send.as_mut().ok_or(Gone)?;
        if bytes.is_empty() {
            return stream.send_data(bytes, end).map_err(|_| Gone);
        }
        while !bytes.is_empty() {
            let n = room(stream, bytes.len()).await?.min(bytes.len());
            let frame = bytes.split_to(n);
            stream
                .send_data(frame, end && bytes.is_empty())
                .map_err(|_| Gone)?;
        }
        Ok(())
    }

    async fn trailers(&mut self, trailers: HeaderMap) -> Result<(), Gone> {
        let stream = self.send.as_mut().ok_or(Gone)?;
        stream.send_trailers(trailers).map_err(|_| Gone)
    }

    fn reset(&mut self, code: u64) {
        // HTTP/2's codes are 32 bits; the flags hold them to that.
        let reason = Reason::from(u32::try_from(code).unwrap_or(u32::MAX));
        match self.send.as_mut() {
            Some(stream) => stream.send_reset(reason),
            None => self.respond.send_reset(reason),
        }
    }

    async fn hold(&mut self) -> Gone {
        let _ = poll_fn(|cx| self.respond.poll_reset(cx)).await;
        Gone
    }
}

/// Waits until the stream may send some of `want` bytes; returns how many.
async fn room(stream: &mut SendStream<Bytes>, want: usize) -> Result<usize, Gone> {
    stream.reserve_capacity(want);
    loop {
        let room = stream.capacity();
        if room > 0 {
            return Ok(room);
        }
        match poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return Err(Gone),
        }
    }
}
