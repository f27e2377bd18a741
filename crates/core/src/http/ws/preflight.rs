//! The WebSocket pre-flight: one upgrade before the run, over the line the
//! engine reached the host by (TCP, or TLS over it), so that a server that
//! refuses the handshake is one line naming what it said, not a run of
//! counted failures. A taken upgrade is closed at once with `1000 normal`.

use std::io;
use std::time::{Duration, Instant};

use super::frame::{self, Opcode};
use super::handshake::{self, read_answer};
use crate::http::probe::Line;

/// What every WebSocket connection to a host says in its upgrade, and how
/// its messages go: the same for the pre-flight and every connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conversation {
    /// The URL's path and query.
    pub path: String,
    /// The run's fields (`-H`): Origin, Authorization,
    /// Sec-WebSocket-Protocol, ...
    pub fields: Vec<(String, String)>,
    /// Messages go as binary frames (`--ws-binary`), not text.
    pub binary: bool,
    /// What the server does with them (`--ws`).
    pub shape: Shape,
    /// Send a ping this often on every open connection (`--ws-ping`).
    pub ping: Option<std::time::Duration>,
    /// Offer permessage-deflate (`--ws-deflate`).
    pub deflate: bool,
    /// Echo: match each answer to the message whose field this is (a
    /// JSON pointer, from `--ws-match`'s dotted path) holds the same
    /// value, not to the oldest.
    pub matching: Option<String>,
}

/// The two shapes of a WebSocket conversation (`--ws`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shape {
    /// Each message the client sends is answered by one from the server,
    /// in order: a message is timed as a request is.
    #[default]
    Echo,
    /// The server sends, after the upgrade (and the client's one optional
    /// subscribe message): each connection's subscription is a stream
    /// whose messages are timed as server-sent events are, and which ends
    /// with the server's close.
    Push,
}

impl Shape {
    /// `--ws`'s choices: each shape, its word and its help.
    pub const CHOICES: [(Shape, &'static str, &'static str); 2] = [
        (
            Shape::Echo,
            "echo",
            "each message is answered by one, in order; timed as a request",
        ),
        (
            Shape::Push,
            "push",
            "the server sends after the upgrade; its messages are timed as events",
        ),
    ];
}

impl Shape {
    /// Its word, as `--ws` takes it.
    pub fn word(self) -> &'static str {
        Shape::CHOICES
            .iter()
            .find(|c| c.0 == self)
            .map_or("echo", |c| c.1)
    }
}

/// The JSON pointer of `--ws-match`'s dotted path (`id`, `params.id`).
pub fn pointer(path: &str) -> String {
    path.split('.').fold(String::new(), |p, key| {
        p + "/" + &key.replace('~', "~0").replace('/', "~1")
    })
}

/// The dotted path a [`pointer`] was made of.
pub fn dotted(pointer: &str) -> String {
    let keys: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
        .collect();
    keys.join(".")
}

/// The value of the field at `pointer` in `message`, when it is a JSON
/// document that has one.
pub fn field_of(message: &[u8], pointer: &str) -> Option<serde_json::Value> {
    let doc: serde_json::Value = serde_json::from_slice(message).ok()?;
    doc.pointer(pointer).cloned()
}

/// Whether an answer's field value is a message's: equal JSON, numbers
/// by their value (`1`, `1.0` and `1e0` alike).
pub fn same_value(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a, b) {
        (serde_json::Value::Number(x), serde_json::Value::Number(y)) => {
            match (x.as_i128(), y.as_i128()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        _ => a == b,
    }
}

impl Conversation {
    /// The subprotocols offered with `-H Sec-WebSocket-Protocol` (every
    /// such field, as one list).
    pub fn offered(&self) -> Option<String> {
        let lists: Vec<&str> = self
            .fields
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("sec-websocket-protocol"))
            .map(|(_, v)| v.as_str())
            .collect();
        (!lists.is_empty()).then(|| lists.join(","))
    }
}

/// Why an upgrade was not taken.
#[derive(Debug)]
pub enum NotTaken {
    /// What the server did instead, with the fix.
    Said(String),
    /// The TLS connection under it failed (a client certificate refused
    /// after a TLS 1.3 handshake): the transport's to explain.
    Tls(io::Error),
}

impl From<String> for NotTaken {
    fn from(why: String) -> NotTaken {
        NotTaken::Said(why)
    }
}

/// Sends the upgrade to `authority` over `line` and reads the answer
/// within `timeout`; the error says what the server did instead, with the
/// fix.
pub fn upgrade(
    line: &mut impl Line,
    conversation: &Conversation,
    authority: &str,
    max_head: usize,
    timeout: Duration,
) -> Result<(), NotTaken> {
    let tls = |e: &io::Error| e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>());
    let key = handshake::new_key();
    let request = handshake::request(
        &conversation.path,
        authority,
        &conversation.fields,
        &key,
        conversation.deflate,
    );
    match line.write_all(&request).and_then(|()| line.flush()) {
        Err(e) if tls(&e) => return Err(NotTaken::Tls(e)),
        Err(e) => return Err(words(&e).into()),
        Ok(()) => {}
    }
    let deadline = Instant::now() + timeout;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    // Bounded: every pass reads at least one byte, or returns.
    loop {
        let offered = conversation.offered();
        match read_answer(
            &answer,
            &key,
            offered.as_deref(),
            conversation.deflate,
            max_head,
        ) {
            Ok(Some(_)) => break,
            Ok(None) => {}
            Err(refusal) => return Err(refusal.to_string().into()),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(silent(timeout).into());
        }
        line.set_read_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        match line.read(&mut chunk) {
            Ok(0) if answer.is_empty() => {
                return Err(
                    format!("it closed the connection without an answer: {NOT_WEBSOCKET}").into(),
                )
            }
            Ok(0) => return Err(handshake::Refusal::Malformed.to_string().into()),
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(silent(timeout).into())
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                return Err("stopped (Ctrl-C) before it answered".to_string().into())
            }
            Err(e) if tls(&e) => return Err(NotTaken::Tls(e)),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset && answer.is_empty() => {
                return Err(format!("{}: {NOT_WEBSOCKET}", words(&e)).into())
            }
            Err(e) => return Err(words(&e).into()),
        }
    }
    // Leave as a client should; the server's answer is not waited for.
    let mut close = Vec::new();
    let mask = fastrand::u32(..).to_ne_bytes();
    frame::encode(
        &mut close,
        true,
        Opcode::Close,
        &1000u16.to_be_bytes(),
        mask,
    );
    let _ = line.write_all(&close).and_then(|()| line.flush());
    Ok(())
}

fn silent(timeout: Duration) -> String {
    format!("it sent no answer within {timeout:?} (--timeout: raise it for a slow server)")
}

/// What a server that ended the upgrade before any answer may be.
const NOT_WEBSOCKET: &str =
    "is the URL's port a WebSocket server's? (one that speaks TLS wants wss://)";

fn words(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionReset => "it reset the connection".to_string(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::UnexpectedEof => {
            "it closed the connection".to_string()
        }
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// A one-connection server that reads the upgrade and answers with
    /// what `answer` makes of its key.
    fn serve(answer: impl FnOnce(&str) -> Vec<u8> + Send + 'static) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut sock, _) = listener.accept().unwrap();
            let mut head = Vec::new();
            let mut b = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && sock.read(&mut b).unwrap_or(0) == 1 {
                head.push(b[0]);
            }
            let text = String::from_utf8_lossy(&head).to_string();
            let key = text
                .lines()
                .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
                .unwrap_or_default()
                .to_string();
            let _ = sock.write_all(&answer(&key));
            std::thread::sleep(Duration::from_millis(200));
        });
        addr
    }

    fn try_upgrade(addr: std::net::SocketAddr, timeout: Duration) -> Result<(), String> {
        let mut sock = TcpStream::connect(addr).unwrap();
        let conversation = Conversation {
            path: "/echo".into(),
            ..Conversation::default()
        };
        upgrade(&mut sock, &conversation, "127.0.0.1", 8192, timeout).map_err(|not| match not {
            NotTaken::Said(why) => why,
            NotTaken::Tls(e) => panic!("no TLS here: {e}"),
        })
    }

    #[test]
    fn a_taken_upgrade_passes_and_a_refused_one_is_named() {
        let taken = serve(|key| {
            format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n", handshake::accept_for(key)).into_bytes()
        });
        assert_eq!(try_upgrade(taken, Duration::from_secs(5)), Ok(()));
        let refused = serve(|_| b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".to_vec());
        let why = try_upgrade(refused, Duration::from_secs(5)).unwrap_err();
        assert!(why.contains("403 Forbidden") && why.contains("-H"), "{why}");
        let closed = serve(|_| Vec::new());
        let why = try_upgrade(closed, Duration::from_secs(5)).unwrap_err();
        assert!(why.contains("closed the connection"), "{why}");
    }

    #[test]
    fn a_silent_server_is_named_after_the_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let why = try_upgrade(addr, Duration::from_millis(100)).unwrap_err();
        assert!(
            why.contains("no answer") && why.contains("--timeout"),
            "{why}"
        );
        drop(listener);
    }
}
