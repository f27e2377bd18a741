//! One HTTP/3 connection: the QUIC handshake, HTTP/3's settings, the loop
//! that accepts request streams (each served by `h3stream` and `exchange`
//! in a task of its own), and how the connection ends.
//!
//! This task is the only one that holds the connection, so it carries out
//! what streams ask of it (a [`ConnEvent`]):
//!
//! - a graceful GOAWAY (`--close-every`, `/close`, and `--h3-goaway-after`
//!   once the Nth request stream is accepted): the GOAWAY names the stream
//!   after the last one accepted, so every request accepted so far is
//!   answered and every later one refused (reset with
//!   H3_REQUEST_REJECTED, which tells the client it may send it again);
//!   once the last is answered the client has a moment to close, then
//!   the server closes with H3_NO_ERROR;
//! - a fault that ends the connection, in QUIC's only way: a
//!   CONNECTION_CLOSE, whose code tells the faults apart (H3_NO_ERROR for
//!   the `close-*` faults, H3_INTERNAL_ERROR for `reset`, H3_FRAME_ERROR
//!   for `garbage`, H3_GENERAL_PROTOCOL_ERROR for `bad-status-line`).

use std::sync::Arc;

use bytes::Bytes;
use quinn::VarInt;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::{sleep, Instant};

use super::config::{H3_FRAME_ERROR, H3_GENERAL_PROTOCOL_ERROR, H3_INTERNAL_ERROR, H3_NO_ERROR};
use super::exchange::{ConnEvent, Ending, Link};
use super::h3stream::{self, Quic};
use super::shared::{OpenGuard, Shared, LINGER};

/// Serves HTTP/3 on one QUIC connection until either side ends it.
pub(crate) async fn serve(incoming: quinn::Incoming, shared: Arc<Shared>) {
    let _open = OpenGuard(Arc::clone(&shared.stats));
    // Counted on arrival, as the other protocols count them.
    let faulty = shared.connection_faulty();
    // A client that rejects the certificate ends the handshake, and with
    // it the connection.
    let Ok(quic) = incoming.await else {
        return;
    };
    let built = h3::server::builder()
        .build::<_, Bytes>(Quic::new(quic.clone()))
        .await;
    let Ok(mut conn) = built else {
        return;
    };
    shared.stats.h3_connection();
    let settings = shared.cfg.http3.unwrap_or_default();
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let link = Arc::new(Link::new(3, Arc::clone(&shared), faulty, events_tx));
    let mut streams = JoinSet::new();
    // Request streams accepted, and how many of them the GOAWAY let in.
    let mut accepted = 0;
    let mut cutoff: Option<u64> = None;
    // Armed once a graceful GOAWAY has run its course: the client's
    // moment to close first.
    let linger = sleep(LINGER);
    tokio::pin!(linger);
    let mut lingering = false;
    let ending = loop {
        while streams.try_join_next().is_some() {}
        if cutoff.is_some() && streams.is_empty() && !lingering {
            lingering = true;
            linger.as_mut().reset(Instant::now() + LINGER);
        }
        tokio::select! {
            // A fault that ends the connection comes before new streams.
            biased;
            Some(event) = events.recv() => match event {
                ConnEvent::GoAway => go_away(&mut conn, &mut cutoff, accepted, &shared).await,
                ConnEvent::End(ending) => break Some(ending),
            },
            // Wakes the loop to see whether the last stream is done.
            Some(_) = streams.join_next() => {}
            () = &mut linger, if lingering => break Some(Ending::Close),
            taken = conn.accept() => match taken {
                Ok(Some(resolver)) => {
                    accepted += 1;
                    if cutoff.is_some_and(|last| accepted > last) {
                        streams.spawn(h3stream::refuse(resolver));
                        continue;
                    }
                    streams.spawn(h3stream::serve(Arc::clone(&link), resolver));
                    if settings.goaway_after == Some(accepted) {
                        go_away(&mut conn, &mut cutoff, accepted, &shared).await;
                    }
                }
                // The client closed, or broke the protocol (the library has
                // told it so), or went away itself and was answered.
                Ok(None) | Err(_) => break None,
            },
        }
    };
    if let Some(ending) = ending {
        // CONNECTION_CLOSE is a frame like any other: not during a stall.
        shared.wait_out_stall().await;
        let code = match ending {
            Ending::Close => H3_NO_ERROR,
            Ending::Reset => H3_INTERNAL_ERROR,
            Ending::Garbage => H3_FRAME_ERROR,
            Ending::ProtocolError => H3_GENERAL_PROTOCOL_ERROR,
        };
        // Codes are the RFC's, all far below QUIC's limit.
        let code = VarInt::from_u64(code).unwrap_or(VarInt::MAX);
        quic.close(code, b"");
    }
    // The connection goes before the streams: an unfinished stream dropped
    // on a live connection would be reset, which is not what was asked.
    drop(conn);
    drop(streams);
}

/// Starts a graceful shutdown, once: a GOAWAY that lets in the `accepted`
/// request streams taken so far and no later one.
async fn go_away(
    conn: &mut h3::server::Connection<Quic, Bytes>,
    cutoff: &mut Option<u64>,
    accepted: u64,
    shared: &Shared,
) {
    if cutoff.is_some() {
        return;
    }
    *cutoff = Some(accepted);
    // The GOAWAY names the first stream not processed: the one after the
    // last accepted. The library would still accept that one stream, so
    // the loop refuses it by count.
    if conn.shutdown(1).await.is_ok() {
        shared.stats.goaway(3);
    }
}
