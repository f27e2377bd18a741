//! Close frames (RFC 6455 section 7.4): what one carries, which codes a
//! peer may send, and each code's name as reports print it.

/// A close frame's payload: the code (when there is one) and the reason.
/// `None`: a payload no close frame may carry (one byte, a code a peer
/// may not send, a reason that is not UTF-8).
pub fn close_payload(payload: &[u8]) -> Option<(Option<u16>, &str)> {
    match payload {
        [] => Some((None, "")),
        [_] => None,
        [hi, lo, reason @ ..] => {
            let code = u16::from_be_bytes([*hi, *lo]);
            let reason = std::str::from_utf8(reason).ok()?;
            sendable(code).then_some((Some(code), reason))
        }
    }
}

/// Whether a peer may put `code` in a close frame: the codes RFC 6455
/// defines for the wire, and the registered and private ranges. 1005,
/// 1006 and 1015 only stand for a close that carried no code.
pub fn sendable(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// A close code by its name in RFC 6455 and IANA's registry.
pub fn close_name(code: u16) -> &'static str {
    match code {
        1000 => "normal",
        1001 => "going away",
        1002 => "protocol error",
        1003 => "unsupported data",
        1005 => "no status",
        1006 => "abnormal",
        1007 => "invalid payload",
        1008 => "policy violation",
        1009 => "message too big",
        1010 => "mandatory extension",
        1011 => "internal error",
        1012 => "service restart",
        1013 => "try again later",
        1014 => "bad gateway",
        1015 => "TLS handshake",
        3000..=3999 => "registered",
        4000..=4999 => "private",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_payloads_and_names() {
        assert_eq!(close_payload(&[]), Some((None, "")));
        assert_eq!(close_payload(&[0x03]), None);
        assert_eq!(
            close_payload(&[0x03, 0xE8, b'b', b'y', b'e']),
            Some((Some(1000), "bye"))
        );
        assert_eq!(close_payload(&[0x03, 0xED]), None, "1005 is never sent");
        assert_eq!(
            close_payload(&[0x03, 0xE8, 0xFF]),
            None,
            "a reason in UTF-8"
        );
        assert_eq!(close_name(1011), "internal error");
        assert_eq!(close_name(4001), "private");
        assert!(sendable(1011) && sendable(4000) && !sendable(1006) && !sendable(999));
    }
}
