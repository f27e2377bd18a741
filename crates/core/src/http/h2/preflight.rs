//! What an HTTP/2 server says before any request, for the engine's
//! pre-flight: sent the client preface, a server that speaks HTTP/2 opens
//! with its SETTINGS, and those say how many streams it allows. No I/O
//! here: the engine reads, this reads the bytes.

use super::frame::{self, Head, HEADER_LEN, SETTINGS};

/// The client preface and an empty SETTINGS frame: what the pre-flight
/// writes.
pub const HELLO: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// What the first bytes of a server's answer to [`HELLO`] say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// More bytes are needed to tell.
    Incomplete,
    /// Its SETTINGS: it speaks HTTP/2, and allows this many concurrent
    /// streams (`None`: it set no limit).
    Settings { max_streams: Option<u32> },
    /// It answered in HTTP/1.
    Http1,
    /// Its first bytes are not an HTTP/2 SETTINGS frame.
    Other,
}

/// Why a host is no place to load over HTTP/2, as the pre-flight found.
#[derive(Clone, Copy, Debug)]
pub enum Unfit<'a> {
    /// Asked with prior knowledge (h2c), it did not answer the preface
    /// with SETTINGS, for this reason.
    PriorKnowledge(&'a str),
    /// It chose h2 by ALPN but did not go on to speak it, for this reason.
    AfterAlpn(&'a str),
    /// Its SETTINGS allow no stream at all.
    NoStreams,
    /// Asked for HTTP/1.1, it spoke HTTP/2 first: it speaks only that.
    Only,
}

impl Unfit<'_> {
    /// What it tells the user of the server at `addr`, ending with `fix`.
    pub fn words(self, addr: std::net::SocketAddr, fix: &str) -> String {
        match self {
            Unfit::PriorKnowledge(why) => format!(
                "the server at {addr} does not speak HTTP/2 with prior knowledge (h2c): {why}; {fix}"
            ),
            Unfit::AfterAlpn(why) => {
                format!("the server at {addr} chose h2 by ALPN, but {why}; {fix}")
            }
            Unfit::NoStreams => format!(
                "the server at {addr} allows no HTTP/2 streams (its SETTINGS_MAX_CONCURRENT_STREAMS is 0), so no request could be sent; {fix}"
            ),
            Unfit::Only => format!("the server at {addr} speaks HTTP/2 only: {fix}"),
        }
    }
}

/// Reads the start of a server's answer.
pub fn answer(bytes: &[u8]) -> Answer {
    if bytes.starts_with(b"HTTP/") {
        return Answer::Http1;
    }
    if b"HTTP/".starts_with(bytes) && !bytes.is_empty() {
        return Answer::Incomplete;
    }
    let Some(head) = Head::parse(bytes) else {
        return Answer::Incomplete;
    };
    if head.kind != SETTINGS || head.stream != 0 || head.has(frame::ACK) || head.len % 6 != 0 {
        return Answer::Other;
    }
    match bytes.get(HEADER_LEN..HEADER_LEN + head.len) {
        Some(payload) => Answer::Settings {
            max_streams: frame::max_concurrent_streams(payload),
        },
        None => Answer::Incomplete,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_settings_give_its_stream_limit() {
        let mut settings = Vec::new();
        frame::put_settings(
            &mut settings,
            &[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 0)],
        );
        assert_eq!(answer(&settings[..12]), Answer::Incomplete);
        assert_eq!(
            answer(&settings),
            Answer::Settings {
                max_streams: Some(0)
            }
        );
        assert_eq!(answer(&HELLO[24..]), Answer::Settings { max_streams: None });
    }

    #[test]
    fn other_answers_are_told_apart() {
        assert_eq!(answer(b"HTTP/1.1 400 Bad Request\r\n"), Answer::Http1);
        assert_eq!(answer(b"HTT"), Answer::Incomplete);
        assert_eq!(answer(b""), Answer::Incomplete);
        assert_eq!(
            answer(b"\x00\x00\x08\x07\x00\x00\x00\x00\x00"),
            Answer::Other
        );
        assert_eq!(answer(b"SSH-2.0-OpenSSH_9.2p1 Debian\r\n"), Answer::Other);
    }
}
