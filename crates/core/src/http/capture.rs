//! What a script's `response()` sees of a response: its fields and body,
//! kept by whichever session read it.

use std::ops::Range;

/// The fields and body of one response, kept for a script's `response()`:
/// arenas instead of an allocation per field, so capture costs a few
/// copies and no allocation once warmed up.
#[derive(Debug, Default)]
pub struct Captured {
    names: String,
    values: Vec<u8>,
    fields: Vec<(Range<usize>, Range<usize>)>,
    body: Vec<u8>,
}

/// Default cap on a captured body, so that capture cannot be used by a peer
/// to grow memory without bound.
pub const DEFAULT_MAX_CAPTURE: usize = 16 * 1024 * 1024;

/// A captured body buffer larger than this is released when the next
/// response starts, so one huge response does not pin its memory.
const RETAINED_BODY: usize = 64 * 1024;

impl Captured {
    /// Adds a field (names as received; HTTP/2's are lowercase).
    pub fn push_field(&mut self, name: &str, value: &[u8]) {
        let n = self.names.len()..self.names.len() + name.len();
        let v = self.values.len()..self.values.len() + value.len();
        self.names.push_str(name);
        self.values.extend_from_slice(value);
        self.fields.push((n, v));
    }

    /// Adds decoded body bytes; false (adding nothing) when the body would
    /// grow past `max`.
    pub fn push_body(&mut self, bytes: &[u8], max: usize) -> bool {
        if self.body.len() + bytes.len() > max {
            return false;
        }
        self.body.extend_from_slice(bytes);
        true
    }

    /// Forgets the fields (a response's interim heads are not kept).
    pub fn clear_fields(&mut self) {
        self.names.clear();
        self.values.clear();
        self.fields.clear();
    }

    /// Empties it for the next response.
    pub fn clear(&mut self) {
        self.clear_fields();
        if self.body.capacity() > RETAINED_BODY {
            self.body = Vec::new();
        }
        self.body.clear();
    }

    /// The fields, in the order received.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.fields.iter().map(move |(n, v)| {
            (
                self.names.get(n.clone()).unwrap_or_default(),
                self.values.get(v.clone()).unwrap_or_default(),
            )
        })
    }

    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body buffer, for a decoder that writes into it directly.
    pub(crate) fn body_mut(&mut self) -> &mut Vec<u8> {
        &mut self.body
    }

    /// Moves the contents into `other`, leaving this one empty (with
    /// `other`'s buffers, so neither allocates again).
    pub fn move_into(&mut self, other: &mut Captured) {
        std::mem::swap(self, other);
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_fields_and_body_come_back_in_order() {
        let mut c = Captured::default();
        c.push_field("content-type", b"text/plain");
        c.push_field("x", b"");
        assert!(c.push_body(b"hello", 8));
        assert!(!c.push_body(b"world", 8));
        let fields: Vec<_> = c.fields().collect();
        assert_eq!(
            fields,
            [("content-type", &b"text/plain"[..]), ("x", &b""[..])]
        );
        assert_eq!(c.body(), b"hello");
        let mut other = Captured::default();
        c.move_into(&mut other);
        assert_eq!((c.fields().count(), other.body()), (0, &b"hello"[..]));
    }
}
