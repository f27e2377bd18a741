//! The one computation both ends of the opening handshake share (RFC 6455
//! section 4): the `Sec-WebSocket-Accept` a server answers a key with,
//! which the client checks; and what a well-formed key looks like.

use base64::Engine as _;

/// The GUID section 1.3 appends to the key before hashing it.
pub const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The `Sec-WebSocket-Accept` a server must answer `key` with.
pub fn accept_for(key: &str) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(key.as_bytes());
    ctx.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(ctx.finish())
}

/// Whether `key` is what section 4.1 asks a client to send: 16 bytes in
/// base64, so 24 characters.
pub fn key_is_valid(key: &str) -> bool {
    let engine = base64::engine::general_purpose::STANDARD;
    key.len() == 24 && engine.decode(key).is_ok_and(|bytes| bytes.len() == 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Section 1.3's example key and answer.
    #[test]
    fn the_rfcs_key_gets_its_accept() {
        const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
        assert_eq!(accept_for(KEY), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert!(key_is_valid(KEY));
    }

    #[test]
    fn a_key_is_sixteen_bytes_in_base64() {
        assert!(!key_is_valid(""));
        assert!(!key_is_valid("dGhlIHNhbXBsZSBub25jZQ"), "unpadded");
        assert!(!key_is_valid("dGhlIHNhbXBsZSBub25jZQ=!"));
        assert!(!key_is_valid("dGhlIHNhbXBsZSBub25jZWVl"), "18 bytes");
    }
}
