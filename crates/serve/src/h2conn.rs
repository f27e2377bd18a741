//! One HTTP/2 connection: the handshake with the server's settings, the
//! loop that accepts streams (each served by `h2stream` and `exchange` in
//! a task of its own), and how the connection ends.
//!
//! The HTTP/2 library owns the framing, HPACK and flow control; it reads
//! and writes through a `h2wire::Wire`, which keeps stalls and counts
//! bytes. This task is the only one that holds the connection, so it also
//! carries out what streams ask of it (a [`ConnEvent`]):
//!
//! - a graceful GOAWAY (`--close-every`, `/close`, and `--h2-goaway-after`
//!   once the Nth stream is accepted): the streams already open finish,
//!   then the connection closes politely;
//! - a fault that ends the connection: what was answered goes out first,
//!   then the connection closes with no GOAWAY, or is reset, or gets raw
//!   garbage, or a GOAWAY with PROTOCOL_ERROR.
//!
//! Bytes that are not HTTP/2 (an HTTP/1.1 request on an h2c port, say) fail
//! the handshake: the library answers with a GOAWAY where it can, and the
//! connection closes.

use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;

use bytes::Bytes;
use h2::server::{self, Connection};
use h2::Reason;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use super::config::Http2;
use super::exchange::{ConnEvent, Ending, Link};
use super::fault_bytes::GARBAGE;
use super::h2stream;
use super::h2wire::{Wire, WireState};
use super::shared::{linger, reset, Shared, Stream};

/// Serves HTTP/2 on one connection until either side ends it.
pub(crate) async fn serve<S: Stream>(stream: S, shared: Arc<Shared>) {
    // Counted on arrival, as HTTP/1.1 counts them, handshake or not.
    let faulty = shared.connection_faulty();
    let (wire, returned, state) = Wire::new(stream, Arc::clone(&shared));
    let settings = shared.cfg.http2.unwrap_or_default();
    let Ok(mut conn) = builder(settings).handshake::<_, Bytes>(wire).await else {
        return;
    };
    shared.stats.h2_connection();
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let link = Arc::new(Link::new(2, Arc::clone(&shared), faulty, events_tx));
    let mut streams = JoinSet::new();
    let mut going_away = false;
    let ending = loop {
        tokio::select! {
            // A fault that ends the connection comes before new streams.
            biased;
            Some(event) = events.recv() => match event {
                ConnEvent::GoAway => go_away(&mut conn, &mut going_away, &shared),
                ConnEvent::End(ending) => break Some(ending),
            },
            accepted = conn.accept() => match accepted {
                Some(Ok((request, respond))) => {
                    // Reap finished streams, so the set holds only live ones.
                    while streams.try_join_next().is_some() {}
                    let id = u32::from(respond.stream_id());
                    streams.spawn(h2stream::serve(Arc::clone(&link), request, respond));
                    if state.cutoff().is_some_and(|last| id >= last) {
                        go_away(&mut conn, &mut going_away, &shared);
                    }
                }
                // The client closed, or broke the protocol (the library has
                // told it so), or a graceful GOAWAY has run its course.
                Some(Err(_)) | None => break None,
            },
        }
    };
    match ending {
        None => {
            // The library has closed its side already; the socket is back.
            drop(conn);
            drop(streams);
            if let (true, Ok(mut io)) = (going_away, returned.await) {
                linger(&mut io, &mut Vec::new()).await;
            }
        }
        Some(ending) => end(conn, streams, returned, &state, &shared, ending).await,
    }
}

/// The library's server, with the settings `--h2-*` asked for.
fn builder(settings: Http2) -> server::Builder {
    let mut builder = server::Builder::new();
    if let Some(n) = settings.max_streams {
        builder.max_concurrent_streams(n);
    }
    if let Some(window) = settings.window {
        builder.initial_window_size(window);
        builder.initial_connection_window_size(window);
    }
    builder
}

/// Starts a graceful shutdown, once: a GOAWAY (then, a round trip later,
/// another naming the last stream processed), the open streams finish,
/// and the connection closes.
fn go_away<S: Stream>(
    conn: &mut Connection<Wire<S>, Bytes>,
    going_away: &mut bool,
    shared: &Shared,
) {
    if !*going_away {
        *going_away = true;
        conn.graceful_shutdown();
        shared.stats.h2_goaway();
    }
}

/// Ends the connection as a fault asked: what was answered goes out first,
/// then the socket is taken back from the library and closed, reset, or
/// spoiled.
async fn end<S: Stream>(
    mut conn: Connection<Wire<S>, Bytes>,
    streams: JoinSet<()>,
    returned: oneshot::Receiver<S>,
    state: &WireState,
    shared: &Shared,
    ending: Ending,
) {
    let_out(&mut conn, state).await;
    if ending == Ending::ProtocolError {
        conn.abrupt_shutdown(Reason::PROTOCOL_ERROR);
        shared.stats.h2_goaway();
        let _ = poll_fn(|cx| conn.poll_closed(cx)).await;
    }
    // The connection goes before the streams: a stream dropped while the
    // connection lives would be reset, which is not what the fault says.
    drop(conn);
    drop(streams);
    let Ok(mut io) = returned.await else {
        return;
    };
    let mut scratch = Vec::new();
    match ending {
        Ending::Reset => reset(&io),
        Ending::Close | Ending::ProtocolError => linger(&mut io, &mut scratch).await,
        Ending::Garbage => {
            if let Some(stall) = shared.stall_timer() {
                stall.await;
            }
            if io.write_all(GARBAGE).await.is_ok() && io.flush().await.is_ok() {
                linger(&mut io, &mut scratch).await;
            }
        }
    }
}

/// Drives the connection until everything it can send has been written,
/// or the client is gone. Streams opened meanwhile are dropped unanswered:
/// the connection is ending.
async fn let_out<S: Stream>(conn: &mut Connection<Wire<S>, Bytes>, state: &WireState) {
    poll_fn(|cx| loop {
        match conn.poll_accept(cx) {
            Poll::Ready(Some(Ok(_))) => continue,
            Poll::Ready(_) => return Poll::Ready(()),
            // The library flushes before it waits to read; a write still
            // waiting means the socket (or a stall) holds it up.
            Poll::Pending if state.backlogged() => return Poll::Pending,
            Poll::Pending => return Poll::Ready(()),
        }
    })
    .await;
}
