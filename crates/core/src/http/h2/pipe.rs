//! The in-memory byte pipe the HTTP/2 library reads from and writes to,
//! so that the session stays free of I/O: the connection puts received
//! bytes in, and takes the bytes to send out.
//!
//! The library is written against tokio's I/O traits; this file is the one
//! place in the load generator that names tokio, and it takes nothing but
//! those traits from it: no runtime, no reactor (docs/ARCHITECTURE.md).
//! Reads that find nothing return `Pending` without keeping the waker: the
//! session polls again after every `receive`, so nothing waits on a wake.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// One end of a connection's bytes; clones share the same buffers (the
/// library owns one clone, the session keeps another).
#[derive(Clone, Debug, Default)]
pub(crate) struct Pipe(Arc<Mutex<Buffers>>);

#[derive(Debug, Default)]
struct Buffers {
    /// Received bytes not yet read by the library, from `read` on.
    input: Vec<u8>,
    read: usize,
    /// The peer closed its side: reads return end of stream once `input`
    /// is drained.
    eof: bool,
    /// Bytes the library wrote, to be sent.
    output: Vec<u8>,
}

impl Pipe {
    fn lock(&self) -> MutexGuard<'_, Buffers> {
        // Nothing panics while holding the lock, and the buffers stay
        // consistent if something did: a poisoned lock is still usable.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes received from the peer.
    pub(crate) fn push_input(&self, bytes: &[u8]) {
        let mut b = self.lock();
        if b.read == b.input.len() {
            b.input.clear();
            b.read = 0;
        }
        b.input.extend_from_slice(bytes);
    }

    /// The peer closed its side of the connection.
    pub(crate) fn close_input(&self) {
        self.lock().eof = true;
    }

    /// Appends everything written so far to `out`.
    pub(crate) fn take_output(&self, out: &mut Vec<u8>) {
        let mut b = self.lock();
        if out.is_empty() {
            std::mem::swap(out, &mut b.output);
        } else {
            out.append(&mut b.output);
        }
    }
}

impl AsyncRead for Pipe {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut b = self.lock();
        let Buffers {
            input, read, eof, ..
        } = &mut *b;
        let waiting = &input[*read..];
        if waiting.is_empty() {
            // An empty read is the end of the stream.
            return if *eof {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            };
        }
        let n = waiting.len().min(buf.remaining());
        buf.put_slice(&waiting[..n]);
        *read += n;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Pipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.lock().output.extend_from_slice(bytes);
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
