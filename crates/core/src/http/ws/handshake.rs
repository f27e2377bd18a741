//! The opening handshake (RFC 6455 section 4): an HTTP/1.1 GET asking to
//! upgrade, and the server's `101 Switching Protocols` checked field by
//! field, so that a refusal is named by what the server actually said.

use std::fmt;

use base64::Engine as _;

use super::deflate::{self, Agreed};

/// Fields the handshake writes itself; `-H` may not replace them.
const OWN_FIELDS: [&str; 6] = [
    "sec-websocket-extensions",
    "upgrade",
    "connection",
    "sec-websocket-key",
    "sec-websocket-version",
    "content-length",
];

/// A fresh `Sec-WebSocket-Key`: 16 random bytes in base64.
pub fn new_key() -> String {
    let bytes: [u8; 16] = std::array::from_fn(|_| fastrand::u8(..));
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The `Sec-WebSocket-Accept` a server must answer a key with: the
/// wire format's, shared with the target server.
pub use metron_ws::accept_for;

/// The upgrade request for `path` on `authority`, with the run's own
/// fields (`-H`: Origin, Authorization, Sec-WebSocket-Protocol, ...); a
/// Host among them replaces the authority. `deflate`: offer
/// permessage-deflate (`--ws-deflate`).
pub fn request(
    path: &str,
    authority: &str,
    fields: &[(String, String)],
    key: &str,
    deflate: bool,
) -> Vec<u8> {
    let mut out = format!("GET {path} HTTP/1.1\r\n");
    if !fields.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        out.push_str(&format!("Host: {authority}\r\n"));
    }
    for (name, value) in fields {
        if !OWN_FIELDS.contains(&name.to_ascii_lowercase().as_str()) {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    if deflate {
        out.push_str(&format!("Sec-WebSocket-Extensions: {}\r\n", deflate::OFFER));
    }
    out.push_str(&format!(
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ));
    out.into_bytes()
}

/// Why the server did not take the upgrade, worded to follow "the server
/// at ADDR did not take the WebSocket upgrade: ".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// It answered with another status (and this reason phrase).
    Status(u16, String),
    /// 101, but without `Upgrade: websocket` and `Connection: Upgrade`.
    NotUpgraded,
    /// `Sec-WebSocket-Accept` missing or not the one for our key.
    Accept,
    /// It named a subprotocol the client did not offer.
    Unoffered(&'static str, String),
    /// It named an extension though none was offered.
    Extension(String),
    /// Its answer to permessage-deflate is not one RFC 7692 allows (what
    /// in it).
    Deflate(String),
    /// The head was larger than the limit.
    TooLarge(usize),
    /// The bytes were not an HTTP/1.1 response head.
    Malformed,
    /// TLS records came back: the port speaks TLS.
    Tls,
    /// A 400 whose page says a plain request came to an HTTPS port.
    PlainToTls,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Status(101, _) => f.write_str("it switched protocols without saying to WebSocket"),
            Refusal::Status(code, reason) if reason.is_empty() => {
                write!(f, "it answered {code}: {}", hint(*code))
            }
            Refusal::Status(code, reason) => write!(
                f,
                "it answered {code} {reason}: {}",
                hint(*code)
            ),
            Refusal::NotUpgraded => f.write_str(
                "it answered 101 without Upgrade: websocket and Connection: Upgrade: a proxy in the way may need WebSocket enabled",
            ),
            Refusal::Accept => f.write_str(
                "its Sec-WebSocket-Accept does not match the key sent: something between client and server rewrote the handshake",
            ),
            Refusal::Unoffered(what, value) => write!(
                f,
                "it chose {what} \"{value}\", which was not offered: offer it with -H, or configure the server not to insist"
            ),
            Refusal::Extension(value) => write!(
                f,
                "it chose the extension \"{value}\", which was not offered: offer permessage-deflate with --ws-deflate, or configure the server not to insist"
            ),
            Refusal::Deflate(why) => write!(
                f,
                "its answer to permessage-deflate names {why}, which RFC 7692 does not allow: check the server's compression settings, or drop --ws-deflate"
            ),
            Refusal::TooLarge(max) => write!(
                f,
                "its answer has a head over {max} bytes: raise --max-head"
            ),
            Refusal::Malformed => f.write_str(
                "its answer is not an HTTP/1.1 response: is the URL's port a WebSocket server's?",
            ),
            Refusal::Tls => f.write_str(
                "it answered in TLS: the port wants TLS, so use wss://",
            ),
            Refusal::PlainToTls => f.write_str(
                "it answered 400, saying a plain request came to its HTTPS port: use wss://",
            ),
        }
    }
}

/// Whether `bytes` begin as a TLS record does (a content type from 20 to
/// 23, then a major version of 3): what a TLS server writes back, an
/// alert most often, to a request that came in plain.
pub fn speaks_tls(bytes: &[u8]) -> bool {
    matches!(bytes, [20..=23, 3, ..])
}

/// Whether the page of a 400 says what a TLS server's HTTP layer says to
/// a plain request (nginx: "The plain HTTP request was sent to HTTPS
/// port"): the part of the page that came with the head.
fn says_https_port(page: &[u8]) -> bool {
    page.windows(10)
        .any(|w| w.eq_ignore_ascii_case(b"https port"))
}

fn hint(code: u16) -> &'static str {
    match code {
        200..=299 => "the URL is an HTTP resource, not a WebSocket endpoint; check the path",
        301..=308 => "the endpoint moved; use the URL it names (Location)",
        400 => "the server refused the handshake; check -H fields such as Origin or Sec-WebSocket-Protocol",
        401 | 403 => "the server wants credentials or another Origin; add them with -H",
        404 => "no WebSocket endpoint at this path; check the URL",
        426 => "the server wants another WebSocket version",
        429 | 503 => "the server is turning connections away; lower -c or the rate",
        _ => "check the URL and the server's log",
    }
}

/// The server's `101`, taken: its head's length (frames may follow it)
/// and, when permessage-deflate was offered, whether it agreed and to what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taken {
    pub len: usize,
    pub deflate: Option<Agreed>,
}

/// Reads the server's answer at the front of `bytes`: `None` until its
/// head has come whole. `offered`: the subprotocols offered (`-H
/// Sec-WebSocket-Protocol`); `deflate`: permessage-deflate was offered.
pub fn read_answer(
    bytes: &[u8],
    key: &str,
    offered: Option<&str>,
    deflate: bool,
    max_head: usize,
) -> Result<Option<Taken>, Refusal> {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut head = httparse::Response::new(&mut fields);
    let len = match head.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if bytes.len() > max_head => {
            return Err(Refusal::TooLarge(max_head))
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(Refusal::TooLarge(max_head)),
        Err(_) if speaks_tls(bytes) => return Err(Refusal::Tls),
        Err(_) => return Err(Refusal::Malformed),
    };
    if len > max_head {
        return Err(Refusal::TooLarge(max_head));
    }
    let code = head.code.unwrap_or_default();
    if code == 400 && says_https_port(&bytes[len..]) {
        return Err(Refusal::PlainToTls);
    }
    if code != 101 {
        return Err(Refusal::Status(
            code,
            head.reason.unwrap_or_default().to_owned(),
        ));
    }
    let field = |name: &str| {
        head.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_owned())
    };
    let upgraded = field("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
        && field("connection").is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        });
    if !upgraded {
        return Err(Refusal::NotUpgraded);
    }
    if field("sec-websocket-accept").as_deref() != Some(accept_for(key).as_str()) {
        return Err(Refusal::Accept);
    }
    let agreed = match field("sec-websocket-extensions").filter(|v| !v.is_empty()) {
        None => None,
        Some(ext) if !deflate => return Err(Refusal::Extension(ext)),
        Some(ext) => Some(Agreed::from_answer(&ext).map_err(Refusal::Deflate)?),
    };
    if let Some(chosen) = field("sec-websocket-protocol") {
        let was_offered = offered.is_some_and(|list| list.split(',').any(|p| p.trim() == chosen));
        if !was_offered {
            return Err(Refusal::Unoffered("the subprotocol", chosen));
        }
    }
    Ok(Some(Taken {
        len,
        deflate: agreed,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    fn answer(extra: &str) -> String {
        format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n{extra}\r\n")
    }

    /// Section 1.3's example key and answer.
    #[test]
    fn the_rfcs_key_gets_its_accept() {
        assert_eq!(accept_for(KEY), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_eq!(new_key().len(), 24);
        assert_ne!(new_key(), new_key());
    }

    #[test]
    fn the_request_carries_the_runs_fields_but_not_over_its_own() {
        let fields = [
            ("Origin".to_owned(), "http://a.test".to_owned()),
            ("connection".to_owned(), "close".to_owned()),
        ];
        let text =
            String::from_utf8(request("/chat?x=1", "127.0.0.1:9", &fields, KEY, false)).unwrap();
        assert!(
            text.starts_with(
                "GET /chat?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nOrigin: http://a.test\r\n"
            ),
            "{text}"
        );
        assert!(text.ends_with("Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"), "{text}");
        assert!(!text.contains("close"), "{text}");
        let host = [("Host".to_owned(), "chat.test".to_owned())];
        let text = String::from_utf8(request("/", "127.0.0.1:9", &host, KEY, false)).unwrap();
        assert!(
            text.contains("Host: chat.test\r\n") && !text.contains("127.0.0.1"),
            "{text}"
        );
    }

    #[test]
    fn a_good_answer_in_pieces_and_with_frames_behind_it() {
        let whole = answer("") + "\u{81}\u{2}hi";
        let head = answer("").len();
        for cut in 0..head {
            assert_eq!(
                read_answer(&whole.as_bytes()[..cut], KEY, None, false, 4096),
                Ok(None)
            );
        }
        let taken = |len| Ok(Some(Taken { len, deflate: None }));
        assert_eq!(
            read_answer(whole.as_bytes(), KEY, None, false, 4096),
            taken(head)
        );
        let chosen = answer("Sec-WebSocket-Protocol: chat\r\n");
        assert_eq!(
            read_answer(chosen.as_bytes(), KEY, Some("superchat, chat"), false, 4096),
            taken(chosen.len())
        );
        // Offered and declined, or agreed with its parameters.
        assert_eq!(
            read_answer(whole.as_bytes(), KEY, None, true, 4096),
            taken(head)
        );
        let agreed =
            answer("Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=12\r\n");
        assert_eq!(
            read_answer(agreed.as_bytes(), KEY, None, true, 4096),
            Ok(Some(Taken {
                len: agreed.len(),
                deflate: Some(Agreed {
                    server_max_window_bits: Some(12),
                    ..Agreed::default()
                }),
            }))
        );
    }

    #[test]
    fn refusals_are_named_by_what_the_server_said() {
        let cases: [(String, Refusal); 10] = [
            (
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".into(),
                Refusal::Status(404, "Not Found".into()),
            ),
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"
                    .into(),
                Refusal::NotUpgraded,
            ),
            (answer("").replace("s3pP", "AAAA"), Refusal::Accept),
            (
                answer("Sec-WebSocket-Extensions: permessage-deflate\r\n"),
                Refusal::Extension("permessage-deflate".into()),
            ),
            (
                answer("Sec-WebSocket-Protocol: chat\r\n"),
                Refusal::Unoffered("the subprotocol", "chat".into()),
            ),
            (
                answer(
                    "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=9\r\n",
                ),
                Refusal::Deflate("client_max_window_bits without an offer of it".into()),
            ),
            ("\0\0\0\x04\0\0\0\0\0\r\n\r\n".into(), Refusal::Malformed),
            // A TLS alert (protocol version), as a TLS server answers a plain request.
            ("\x15\x03\x03\0\x02\x02\x46".into(), Refusal::Tls),
            (
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 56\r\n\r\n<h1>400</h1> The plain HTTP request was sent to HTTPS port"
                    .into(),
                Refusal::PlainToTls,
            ),
            (
                format!("HTTP/1.1 101 OK\r\nX: {}\r\n\r\n", "a".repeat(5000)),
                Refusal::TooLarge(4096),
            ),
        ];
        for (bytes, refusal) in cases {
            let deflate = matches!(refusal, Refusal::Deflate(_));
            assert_eq!(
                read_answer(bytes.as_bytes(), KEY, None, deflate, 4096),
                Err(refusal.clone())
            );
            let line = refusal.to_string();
            assert!(!line.contains('\n'), "{line}");
        }
        let line = Refusal::Status(403, "Forbidden".into()).to_string();
        assert!(
            line.contains("403 Forbidden") && line.contains("-H"),
            "{line}"
        );
        // A status line without a reason phrase (nginx's `return 426`).
        let line = Refusal::Status(426, String::new()).to_string();
        assert!(line.starts_with("it answered 426: "), "{line}");
    }
}
