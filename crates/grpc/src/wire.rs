//! gRPC's messages on the wire: the five-byte length prefix each one
//! carries, the deadline's header value, and counting messages in a
//! body as it arrives.

/// The five bytes before every message on the wire: a compressed flag
/// (never set here) and the message's length, big-endian.
pub const PREFIX_LEN: usize = 5;

/// The length a message's prefix gives it.
pub fn message_len(prefix: &[u8; PREFIX_LEN]) -> usize {
    u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize
}

/// `message` framed as gRPC sends it (uncompressed).
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(PREFIX_LEN + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// The `grpc-timeout` value for a deadline of `millis` milliseconds: at
/// most eight digits, as the protocol allows, in the finest unit that
/// holds it.
pub fn timeout_value(millis: u128) -> String {
    const MAX: u128 = 99_999_999;
    if millis <= MAX {
        format!("{millis}m")
    } else if millis / 1000 <= MAX {
        format!("{}S", millis / 1000)
    } else {
        format!("{}M", (millis / 60_000).min(MAX))
    }
}

/// Counts whole messages in a response body as its bytes arrive: the
/// five-byte prefixes are read, the messages between them skipped.
#[derive(Clone, Debug, Default)]
pub struct Messages {
    /// Bytes of the current prefix seen so far, while in a prefix.
    prefix: [u8; PREFIX_LEN],
    in_prefix: usize,
    /// Bytes of the current message still to come.
    left: u64,
    count: u64,
}

impl Messages {
    /// Reads `bytes`; calls `each` once per message they complete.
    pub fn read(&mut self, mut bytes: &[u8], mut each: impl FnMut()) {
        while !bytes.is_empty() {
            if self.left > 0 {
                let take = (self.left.min(bytes.len() as u64)) as usize;
                self.left -= take as u64;
                bytes = &bytes[take..];
                if self.left == 0 {
                    self.count += 1;
                    each();
                }
                continue;
            }
            let take = (PREFIX_LEN - self.in_prefix).min(bytes.len());
            self.prefix[self.in_prefix..self.in_prefix + take].copy_from_slice(&bytes[..take]);
            self.in_prefix += take;
            bytes = &bytes[take..];
            if self.in_prefix == PREFIX_LEN {
                self.in_prefix = 0;
                let len = message_len(&self.prefix);
                if len == 0 {
                    self.count += 1;
                    each();
                } else {
                    self.left = len as u64;
                }
            }
        }
    }

    /// Whole messages read so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Part of a message (or of its prefix) came and the rest did not.
    pub fn is_cut(&self) -> bool {
        self.left > 0 || self.in_prefix > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_puts_the_length_big_endian_after_a_zero_flag() {
        assert_eq!(frame(b"abc"), [0, 0, 0, 0, 3, b'a', b'b', b'c']);
        assert_eq!(frame(b""), [0, 0, 0, 0, 0]);
    }

    #[test]
    fn timeouts_fit_eight_digits() {
        assert_eq!(timeout_value(2000), "2000m");
        assert_eq!(timeout_value(99_999_999), "99999999m");
        assert_eq!(timeout_value(100_000_000), "100000S");
        assert_eq!(timeout_value(u128::MAX), "99999999M");
    }

    #[test]
    fn messages_are_counted_across_any_cut() {
        let mut body = frame(b"hello");
        body.extend(frame(b""));
        body.extend(frame(&[7; 300]));
        for cut in 1..body.len() {
            let mut m = Messages::default();
            let mut seen = 0;
            m.read(&body[..cut], || seen += 1);
            m.read(&body[cut..], || seen += 1);
            assert_eq!((seen, m.count(), m.is_cut()), (3, 3, false), "cut at {cut}");
        }
        let mut m = Messages::default();
        m.read(&body[..7], || {});
        assert!(m.is_cut());
        assert_eq!(m.count(), 0);
    }
}
