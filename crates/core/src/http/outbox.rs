//! The bytes a session has to send: appended by the session, taken by the
//! connection as the socket accepts them, and counted over the
//! connection's life, so that a session can tell which of its requests a
//! failed write cut off, and which never left.

use std::collections::VecDeque;

use super::session::{Event, Failure};

/// Bytes queued to send, from `written` on, and bytes sent before them.
#[derive(Debug, Default)]
pub struct Outbox {
    buf: Vec<u8>,
    written: usize,
    sent: u64,
}

impl Outbox {
    pub fn with_capacity(n: usize) -> Outbox {
        Outbox {
            buf: Vec::with_capacity(n),
            ..Outbox::default()
        }
    }

    /// Where the session appends what it has to send.
    #[inline]
    pub fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// What is still to send.
    #[inline]
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.written..]
    }

    /// `n` bytes of [`Outbox::pending`] went out.
    #[inline]
    pub fn advance(&mut self, n: usize) {
        self.sent += n as u64;
        self.written += n;
        if self.written >= self.buf.len() {
            self.buf.clear();
            self.written = 0;
        }
    }

    /// Bytes sent over the connection's life.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Where what is queued now ends, counted as [`Outbox::sent`] counts.
    pub fn end(&self) -> u64 {
        self.sent + (self.buf.len() - self.written) as u64
    }

    /// Drops what was not sent: the connection can take no more.
    pub fn discard(&mut self) {
        self.buf.clear();
        self.written = 0;
    }
}

/// After a failed write that left `sent` bytes in all: the requests of
/// `in_flight` (oldest first; `span` says where each one's bytes begin and
/// end) none of whose bytes left come out as [`Event::Unprocessed`], the
/// one cut off part way as lost ([`Failure::Write`]), in the order of the
/// requests; those that left whole stay in flight.
pub(crate) fn after_write_error<P, T>(
    in_flight: &mut VecDeque<P>,
    sent: u64,
    span: impl Fn(&P) -> (u64, u64),
    tag: impl Fn(P) -> T,
    events: &mut VecDeque<Event<T>>,
) {
    let mut unsent = Vec::new();
    while in_flight.back().is_some_and(|p| span(p).0 >= sent) {
        unsent.extend(in_flight.pop_back().map(&tag));
    }
    if in_flight.back().is_some_and(|p| span(p).1 > sent) {
        if let Some(cut) = in_flight.pop_back() {
            events.push_back(Event::Lost {
                tag: tag(cut),
                why: Failure::Write,
            });
        }
    }
    events.extend(
        unsent
            .into_iter()
            .rev()
            .map(|tag| Event::Unprocessed { tag }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_counted_as_they_leave() {
        let mut o = Outbox::default();
        o.buf().extend_from_slice(b"hello");
        o.advance(2);
        assert_eq!((o.pending(), o.sent(), o.end()), (&b"llo"[..], 2, 5));
        o.buf().extend_from_slice(b"!");
        o.advance(4);
        assert_eq!((o.pending(), o.sent(), o.end()), (&b""[..], 6, 6));
        o.buf().extend_from_slice(b"x");
        o.discard();
        assert_eq!((o.pending(), o.sent(), o.end()), (&b""[..], 6, 6));
    }
}
