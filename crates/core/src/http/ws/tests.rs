//! The session on exact bytes: what it writes, and what it makes of what
//! a server sends.

use bytes::Bytes;

use super::frame::{apply_mask, encode, parse, Opcode};
use super::handshake::{accept_for, Refusal};
use super::*;

fn options() -> WsOptions {
    WsOptions {
        conversation: Arc::new(Conversation {
            path: "/echo".into(),
            ..Conversation::default()
        }),
        authority: "127.0.0.1:9".into(),
        max_message: 1 << 20,
        max_head: 8192,
        max_in_flight: 100,
        capture: false,
        keep_data: false,
    }
}

fn message(body: &str) -> Request {
    let wire = format!(
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    Request::new(Bytes::from(wire), false)
}

/// Takes what the session wants to write.
fn written(s: &mut WebSocket<u32>) -> Vec<u8> {
    let out = s.transmit(0).to_vec();
    s.transmitted(out.len());
    out
}

/// The client's frames in `bytes`, unmasked: (opcode, payload).
fn frames(mut bytes: &[u8]) -> Vec<(Opcode, Vec<u8>)> {
    let mut all = Vec::new();
    while !bytes.is_empty() {
        assert!(bytes[1] & 0x80 != 0, "a client masks every frame");
        let mut copy = bytes.to_vec();
        copy[1] &= 0x7F;
        let at = match copy[1] {
            126 => 4,
            127 => 10,
            _ => 2,
        };
        let mask: [u8; 4] = copy[at..at + 4].try_into().unwrap();
        copy.drain(at..at + 4);
        let (f, used) = parse(&copy, 1 << 24).unwrap().unwrap();
        let mut payload = f.payload.to_vec();
        apply_mask(&mut payload, mask);
        all.push((f.opcode, payload));
        bytes = &bytes[used + 4..];
    }
    all
}

/// A server's unmasked frame.
fn from_server(fin: bool, opcode: Opcode, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&mut out, fin, opcode, payload, [0; 4]);
    out[1] &= 0x7F;
    out.drain(out.len() - payload.len() - 4..out.len() - payload.len());
    out
}

/// A session past its upgrade.
fn open() -> WebSocket<u32> {
    open_with(options())
}

/// A session of `opts` past its upgrade (at 2).
fn open_with(opts: WsOptions) -> WebSocket<u32> {
    open_answering(opts, "").0
}

/// A session of `opts` past its upgrade (at 2), the server's `101`
/// carrying `extra` fields; and the upgrade it sent.
fn open_answering(opts: WsOptions, extra: &str) -> (WebSocket<u32>, String) {
    let mut s = WebSocket::new(opts);
    let upgrade = String::from_utf8(written(&mut s)).unwrap();
    let path = s.opts.conversation.path.clone();
    assert!(
        upgrade.starts_with(&format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:9\r\n")),
        "{upgrade}"
    );
    assert!(!s.is_ready() && s.free_streams() == 0);
    let key = upgrade
        .lines()
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        .unwrap();
    let answer = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n{extra}\r\n",
        accept_for(key)
    );
    let (a, b) = answer.as_bytes().split_at(20);
    s.handle(a, 1);
    assert!(!s.is_ready());
    s.handle(b, 2);
    assert!(s.is_ready() && s.free_streams() == s.opts.max_in_flight);
    (s, upgrade)
}

/// A push session's options (`--ws push`): one subscription a connection.
fn push_options() -> WsOptions {
    WsOptions {
        conversation: Arc::new(Conversation {
            path: "/push".into(),
            shape: Shape::Push,
            ..Conversation::default()
        }),
        max_in_flight: 1,
        ..options()
    }
}

/// A push session (`--ws push`), keeping each message's data, its
/// subscription `7` opened at 10 without a message of its own.
fn subscribed() -> WebSocket<u32> {
    let mut s = open_with(WsOptions {
        keep_data: true,
        ..push_options()
    });
    s.open(&message(""), 7, 10).unwrap();
    assert!(written(&mut s).is_empty(), "no subscribe message was given");
    s
}

#[test]
fn what_a_push_sends_before_its_subscription_opens_is_held_for_it() {
    let mut s = open_with(push_options());
    // A message in one read, then another, half of a third and its close
    // in the next, the rest of the third in a third read, and the end,
    // all before it opens: each is timed by the read that brought its
    // last byte.
    s.handle(&from_server(true, Opcode::Text, b"first"), 3);
    let mut early = from_server(true, Opcode::Text, b"early");
    let third = from_server(true, Opcode::Text, b"third");
    early.extend_from_slice(&third[..4]);
    s.handle(&early, 4);
    let mut rest = third[4..].to_vec();
    rest.extend(from_server(true, Opcode::Close, &1011u16.to_be_bytes()));
    s.handle(&rest, 5);
    s.handle_eof(6);
    assert!(s.poll_event().is_none() && !s.is_finished() && s.free_streams() == 1);
    // Were the run to end now, the three would be counted, as unasked.
    assert_eq!(s.info().messages.map(|m| m.unasked), Some(3));
    s.open(&message(""), 7, 10).unwrap();
    assert_eq!(
        s.poll_timeout(),
        Some(5),
        "what it read is handed out at once"
    );
    for (at, previous) in [(3, None), (4, Some(3)), (5, Some(4))] {
        let event = s.poll_event();
        assert!(
            matches!(event, Some(Event::Message { tag: 7, at: a, previous: p, .. }) if a == at && p == previous),
            "{event:?}"
        );
    }
    assert_eq!(
        s.poll_event(),
        Some(Event::Failed {
            why: Failure::Closed
        })
    );
    assert_eq!(s.info().close_code, Some(1011));
    assert_eq!(s.info().messages.map(|m| m.unasked), Some(0));
}

#[test]
fn a_subscriptions_messages_are_its_events_and_a_normal_close_completes_it() {
    let mut s = subscribed();
    s.handle(&from_server(true, Opcode::Text, b"one"), 20);
    s.handle(&from_server(true, Opcode::Binary, b"two"), 30);
    let message = |at, previous, data: &'static [u8], binary| Event::Message {
        tag: 7,
        at,
        previous,
        data: Some(Bytes::from_static(data)),
        binary,
    };
    assert_eq!(s.poll_event(), Some(message(20, None, b"one", false)));
    assert_eq!(s.poll_event(), Some(message(30, Some(20), b"two", true)));
    let mut last = None;
    s.for_each_in_flight(&mut |_, at| last = at);
    assert_eq!(last, Some(30));
    s.handle(
        &from_server(true, Opcode::Close, &1000u16.to_be_bytes()),
        40,
    );
    assert_eq!(
        s.poll_event(),
        Some(Event::Response {
            tag: 7,
            status: MESSAGE_STATUS,
            bytes: 10,
            first_byte: 20,
            events: 2,
            tokens: None,
            grpc_status: None,
        })
    );
    assert_eq!(frames(&written(&mut s)), [(Opcode::Close, vec![3, 232])]);
    assert_eq!(s.retirement(), Some(Retirement::Asked));
    let info = s.info();
    assert_eq!(info.close_code, Some(1000));
}

#[test]
fn a_subscription_the_server_closes_otherwise_is_lost() {
    let mut s = subscribed();
    s.handle(&from_server(true, Opcode::Text, b"one"), 20);
    assert!(matches!(s.poll_event(), Some(Event::Message { .. })));
    s.handle(
        &from_server(true, Opcode::Close, &1011u16.to_be_bytes()),
        40,
    );
    assert_eq!(
        s.poll_event(),
        Some(Event::Failed {
            why: Failure::Closed
        })
    );
    assert_eq!(s.in_flight(), 1, "the engine drains it as lost");
    assert_eq!(s.info().close_code, Some(1011));
}

#[test]
fn pings_go_on_their_period_while_open() {
    const MS: Nanos = 1_000_000;
    let mut s = open_with(WsOptions {
        conversation: Arc::new(Conversation {
            path: "/echo".into(),
            ping: Some(std::time::Duration::from_millis(100)),
            ..Conversation::default()
        }),
        ..options()
    });
    assert_eq!(s.poll_timeout(), Some(2 + 100 * MS));
    s.handle_timeout(50 * MS);
    assert!(written(&mut s).is_empty(), "not due yet");
    s.handle_timeout(2 + 130 * MS);
    assert_eq!(
        frames(&written(&mut s)),
        [(Opcode::Ping, b"metron".to_vec())]
    );
    // Late: the next is a period from when this one went.
    assert_eq!(s.poll_timeout(), Some(2 + 230 * MS));
    // A pong answers nothing.
    s.open(&message("m"), 1, 3 * MS).unwrap();
    s.handle(&from_server(true, Opcode::Pong, b"metron"), 140 * MS);
    assert!(s.poll_event().is_none());
    assert_eq!(s.info().messages.map(|m| m.pings), Some(1));
    s.leave(150 * MS);
    assert_eq!(s.poll_timeout(), None, "no ping once closing");
}

fn response(e: Option<Event<u32>>) -> (u32, u16, u64, Nanos) {
    match e {
        Some(Event::Response {
            tag,
            status,
            bytes,
            first_byte,
            ..
        }) => (tag, status, bytes, first_byte),
        other => panic!("a response, not {other:?}"),
    }
}

#[test]
fn each_answer_answers_the_oldest_message() {
    let mut s = open();
    s.open(&message("one"), 1, 10).unwrap();
    s.open(&message("two"), 2, 11).unwrap();
    assert_eq!(s.free_streams(), 98);
    let sent = frames(&written(&mut s));
    assert_eq!(
        sent,
        [
            (Opcode::Text, b"one".to_vec()),
            (Opcode::Text, b"two".to_vec())
        ]
    );
    // The first answer in two fragments, over two reads.
    let mut answer = from_server(false, Opcode::Text, b"o");
    answer.extend(from_server(true, Opcode::Continuation, b"ne"));
    s.handle(&answer[..4], 20);
    assert!(s.poll_event().is_none());
    s.handle(&answer[4..], 21);
    assert_eq!(response(s.poll_event()), (1, MESSAGE_STATUS, 7, 20));
    s.handle(&from_server(true, Opcode::Text, b"two"), 30);
    assert_eq!(response(s.poll_event()), (2, MESSAGE_STATUS, 5, 30));
    assert!(s.has_heard() && s.in_flight() == 0 && s.retirement().is_none());
}

/// A message no message awaits is counted as unasked, and handed on
/// whole when a script reads messages, since its `message()` sees every
/// message received.
#[test]
fn an_unasked_message_goes_to_the_script_that_reads_messages() {
    for capture in [false, true] {
        let mut s = open_with(WsOptions {
            capture,
            ..options()
        });
        s.handle(&from_server(true, Opcode::Binary, b"hello"), 5);
        let event = s.poll_event();
        if capture {
            assert_eq!(
                event,
                Some(Event::Unasked {
                    data: Bytes::from_static(b"hello"),
                    binary: true
                })
            );
        } else {
            assert_eq!(event, None);
        }
        assert_eq!(s.info().messages.map(|m| m.unasked), Some(1));
        // The answer to a message sent after it is still that message's.
        s.open(&message("one"), 1, 10).unwrap();
        s.handle(&from_server(true, Opcode::Text, b"one"), 20);
        assert_eq!(response(s.poll_event()).0, 1);
    }
}

#[test]
fn binary_messages_and_a_servers_ping_between_fragments() {
    let mut s = WebSocket::new(WsOptions {
        conversation: Arc::new(Conversation {
            path: "/echo".into(),
            binary: true,
            ..Conversation::default()
        }),
        ..options()
    });
    written(&mut s);
    (s.stage, s.upgraded) = (Stage::Open, true);
    s.open(&message("\u{1}\u{2}"), 7, 0).unwrap();
    assert_eq!(frames(&written(&mut s)), [(Opcode::Binary, vec![1, 2])]);
    let mut bytes = from_server(false, Opcode::Binary, &[1]);
    bytes.extend(from_server(true, Opcode::Ping, b"are you there"));
    bytes.extend(from_server(true, Opcode::Continuation, &[2]));
    s.handle(&bytes, 5);
    assert_eq!(response(s.poll_event()).0, 7);
    assert_eq!(
        frames(&written(&mut s)),
        [(Opcode::Pong, b"are you there".to_vec())]
    );
}

#[test]
fn a_servers_close_is_answered_named_and_ends_what_is_in_flight() {
    let mut s = open();
    s.open(&message("a"), 1, 0).unwrap();
    written(&mut s);
    let mut close = 1001u16.to_be_bytes().to_vec();
    close.extend(b"restarting");
    s.handle(&from_server(true, Opcode::Close, &close), 9);
    assert_eq!(
        s.close(),
        Some(&Close {
            code: Some(1001),
            reason: "restarting".into()
        })
    );
    assert_eq!(
        s.poll_event(),
        Some(Event::Failed {
            why: Failure::Closed
        })
    );
    assert_eq!(s.retirement(), Some(Retirement::Asked));
    assert!(!s.is_finished(), "its own close is still to write");
    assert_eq!(
        frames(&written(&mut s)),
        [(Opcode::Close, 1001u16.to_be_bytes().to_vec())]
    );
    assert!(s.is_finished());
    let mut gone = Vec::new();
    s.drain(&mut gone);
    assert_eq!(gone, [1]);
    assert_eq!(s.open(&message("b"), 2, 10), Err((OpenError::Retired, 2)));
}

#[test]
fn a_server_that_breaks_the_protocol_is_told_why() {
    let cases: [(Vec<u8>, u16); 4] = [
        (from_server(true, Opcode::Text, &[0xFF, 0xFE]), 1007),
        (from_server(true, Opcode::Continuation, b"x"), 1002),
        (vec![0x81, 0x85, 1, 2, 3, 4, 0, 0, 0, 0, 0], 1002),
        (vec![0x82, 127, 0, 0, 0, 0, 0x10, 0, 0, 0], 1009),
    ];
    for (bytes, code) in cases {
        let mut s = open();
        s.open(&message("a"), 1, 0).unwrap();
        written(&mut s);
        s.handle(&bytes, 1);
        assert_eq!(
            s.poll_event(),
            Some(Event::Failed {
                why: Failure::Malformed
            }),
            "{code}"
        );
        assert_eq!(
            frames(&written(&mut s)),
            [(Opcode::Close, code.to_be_bytes().to_vec())]
        );
        assert!(s.is_finished());
    }
}

#[test]
fn a_refused_upgrade_keeps_what_the_server_said() {
    let mut s: WebSocket<u32> = WebSocket::new(options());
    written(&mut s);
    s.handle(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", 3);
    assert_eq!(s.refusal(), Some(&Refusal::Status(403, "Forbidden".into())));
    assert!(s.is_finished() && !s.is_ready() && s.free_streams() == 0);
    // A server that closes before answering the upgrade at all.
    let mut s: WebSocket<u32> = WebSocket::new(options());
    written(&mut s);
    s.handle_eof(4);
    assert!(s.is_finished() && s.refusal().is_none() && !s.has_heard());
}

#[test]
fn a_failed_write_sends_back_what_never_left() {
    let mut s = open();
    for tag in 1..=3 {
        s.open(&message("abcdef"), tag, 0).unwrap();
    }
    // The first frame (12 bytes) left whole, the second in part.
    let n = s.transmit(0).len();
    assert_eq!(n, 36);
    s.transmitted(15);
    s.handle_write_error(1);
    assert_eq!(
        s.poll_event(),
        Some(Event::Lost {
            tag: 2,
            why: Failure::Write
        })
    );
    assert_eq!(s.poll_event(), Some(Event::Unprocessed { tag: 3 }));
    assert_eq!(s.in_flight(), 1);
    assert_eq!(s.free_streams(), 0);
    assert!(s.transmit(2).is_empty());
}

#[test]
fn an_expired_message_gives_up_the_connection_and_leaving_says_goodbye() {
    let mut s = open();
    s.open(&message("a"), 1, 0).unwrap();
    s.open(&message("b"), 2, 0).unwrap();
    written(&mut s);
    let mut gone = Vec::new();
    s.expire(&mut |t| *t == 1, &mut gone, 5);
    assert_eq!(gone, [1, 2]);
    // The server is told, in the connection's last words.
    assert!(s.has_last_words() && !s.is_finished());
    assert_eq!(
        frames(&written(&mut s)),
        [(Opcode::Close, 1001u16.to_be_bytes().to_vec())]
    );
    assert!(s.is_finished());
    let mut s = open();
    s.leave(9);
    assert_eq!(
        frames(&written(&mut s)),
        [(Opcode::Close, 1000u16.to_be_bytes().to_vec())]
    );
    assert_eq!(s.free_streams(), 0);
}

/// The session against Python's `websockets`, a server written elsewhere
/// (tests/ws/echo_server.py), over a real socket.
mod against_websockets {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;
    use std::process::{Child, Command, Stdio};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use super::*;

    struct Server {
        child: Child,
        port: u16,
        log: mpsc::Receiver<String>,
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// The server, or `None` (outside CI) when Python lacks `websockets`.
    fn server() -> Option<Server> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/ws/echo_server.py");
        let has = Command::new("python3")
            .args(["-c", "import websockets.asyncio.server"])
            .status()
            .is_ok_and(|s| s.success());
        if !has {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI needs Python's websockets: python3 -m pip install websockets"
            );
            eprintln!("skipped: python3 -m pip install websockets to run it");
            return None;
        }
        let mut child = Command::new("python3")
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let (tx, log) = mpsc::channel();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let port = line.trim().parse().expect("the server prints its port");
        Some(Server { child, port, log })
    }

    /// Moves bytes both ways until `done` holds (5 s at most), collecting
    /// each event and, for responses, the answer captured with it.
    fn drive(
        s: &mut WebSocket<u32>,
        sock: &mut TcpStream,
        done: impl Fn(&WebSocket<u32>, usize) -> bool,
    ) -> Vec<(Event<u32>, Vec<u8>)> {
        let start = Instant::now();
        let mut seen = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        sock.set_nonblocking(true).unwrap();
        let idle = |e: &std::io::Error| e.kind() == std::io::ErrorKind::WouldBlock;
        while !done(s, seen.len()) && start.elapsed() < Duration::from_secs(5) {
            let mut moved = false;
            let out = s.transmit(0).to_vec();
            if !out.is_empty() {
                match sock.write(&out) {
                    Ok(n) => {
                        s.transmitted(n);
                        moved = n > 0;
                    }
                    Err(e) if idle(&e) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            match sock.read(&mut buf) {
                Ok(0) => s.handle_eof(1),
                Ok(n) => {
                    s.handle(&buf[..n], 1);
                    moved = true;
                }
                Err(e) if idle(&e) => {}
                Err(e) => panic!("{e}"),
            }
            while let Some(e) = s.poll_event() {
                let body = s.captured().body().to_vec();
                seen.push((e, body));
            }
            if !moved {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        seen
    }

    /// The server's next line about a connection that ended (5 s at most).
    fn logged(server: &Server) -> String {
        server
            .log
            .recv_timeout(Duration::from_secs(5))
            .expect("the server logs each connection as it ends")
    }

    fn connect(server: &Server, path: &str) -> (WebSocket<u32>, TcpStream) {
        let sock = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        let s = WebSocket::new(WsOptions {
            conversation: Arc::new(Conversation {
                path: path.into(),
                ..Conversation::default()
            }),
            authority: format!("127.0.0.1:{}", server.port),
            capture: true,
            ..options()
        });
        (s, sock)
    }

    #[test]
    fn every_message_comes_back_in_order_and_a_close_is_named() {
        let Some(server) = server() else { return };
        let (mut s, mut sock) = connect(&server, "/echo");
        drive(&mut s, &mut sock, |s, _| s.is_ready());
        assert!(s.is_ready(), "the upgrade was taken");
        // 7-bit, 16-bit and 64-bit lengths.
        let sizes = [0, 5, 125, 126, 200, 65535, 65536, 70000];
        let sent: Vec<String> = (0..24)
            .map(|i| format!("{i:02}{}", "é".repeat(sizes[i % sizes.len()] / 2)))
            .collect();
        for (i, text) in sent.iter().enumerate() {
            s.open(&message(text), i as u32, 0).unwrap();
        }
        let seen = drive(&mut s, &mut sock, |_, n| n == sent.len());
        assert_eq!(seen.len(), sent.len());
        for (i, (event, body)) in seen.into_iter().enumerate() {
            assert_eq!(response(Some(event)).0, i as u32);
            assert!(
                body == sent[i].as_bytes(),
                "message {i}: {} bytes back",
                body.len()
            );
        }
        s.leave(2);
        drive(&mut s, &mut sock, |s, _| s.is_finished());
        assert!(s.is_finished(), "the server answered the close");
        // The engine closes a finished session's socket; the server waits
        // for that before it calls the connection ended.
        drop(sock);
        assert_eq!(logged(&server), "received 24 sent 24 close 1000 deflate no");

        let (mut s, mut sock) = connect(&server, "/close");
        drive(&mut s, &mut sock, |s, _| s.is_ready());
        for tag in 0..4 {
            s.open(&message("m"), tag, 0).unwrap();
        }
        let seen = drive(&mut s, &mut sock, |s, _| s.is_finished());
        let events: Vec<_> = seen.into_iter().map(|(e, _)| e).collect();
        assert_eq!(events.len(), 4, "{events:?}");
        assert_eq!(
            events[3],
            Event::Failed {
                why: Failure::Closed
            }
        );
        assert_eq!(s.close().and_then(|c| c.code), Some(1001));
        assert_eq!(s.close().map(|c| c.reason.as_str()), Some("bye"));
        let mut gone = Vec::new();
        s.drain(&mut gone);
        assert_eq!(gone, [3]);
        drop(sock);
        assert_eq!(logged(&server), "received 3 sent 3 close 1001 deflate no");

        let (mut s, mut sock) = connect(&server, "/forbidden");
        drive(&mut s, &mut sock, |s, _| s.is_finished());
        assert_eq!(s.refusal(), Some(&Refusal::Status(403, "Forbidden".into())));
    }
}

#[test]
fn a_script_reads_each_answer_before_the_close_behind_them() {
    let mut s = WebSocket::new(WsOptions {
        capture: true,
        ..options()
    });
    written(&mut s);
    (s.stage, s.upgraded) = (Stage::Open, true);
    for tag in 1..=3 {
        s.open(&message("x"), tag, 0).unwrap();
    }
    written(&mut s);
    let mut bytes = from_server(true, Opcode::Text, b"first");
    bytes.extend(from_server(true, Opcode::Text, b"second"));
    s.handle(&bytes, 4);
    s.handle_eof(5);
    let mut seen = Vec::new();
    while let Some(e) = s.poll_event() {
        seen.push((e, s.captured().body().to_vec()));
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(
        (response(Some(seen[0].0.clone())).0, &seen[0].1[..]),
        (1, &b"first"[..])
    );
    assert_eq!(
        (response(Some(seen[1].0.clone())).0, &seen[1].1[..]),
        (2, &b"second"[..])
    );
    assert_eq!(
        seen[2].0,
        Event::Failed {
            why: Failure::Closed
        }
    );
    assert!(s.is_finished());
}

/// A session offering permessage-deflate (`--ws-deflate`), taken with
/// `extra` fields in the server's `101`.
fn offering_deflate(extra: &str) -> WebSocket<u32> {
    let mut opts = options();
    opts.capture = true;
    opts.conversation = Arc::new(Conversation {
        path: "/echo".into(),
        deflate: true,
        ..Conversation::default()
    });
    let (s, upgrade) = open_answering(opts, extra);
    assert!(
        upgrade.contains("\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"),
        "{upgrade}"
    );
    s
}

/// Agreed: a message goes compressed (RSV1) and a compressed answer is
/// read inflated (RFC 7692's own "Hello"); declined: both go plain, and
/// the session says which it was.
#[test]
fn deflate_compresses_what_goes_and_inflates_what_comes() {
    let mut s = offering_deflate("Sec-WebSocket-Extensions: permessage-deflate\r\n");
    s.open(&message("Hello"), 7, 3).unwrap();
    let mut out = written(&mut s);
    assert_eq!(out[0], 0xC1, "FIN, RSV1 and text");
    out[0] &= !0x40;
    let [(Opcode::Text, payload)] = &frames(&out)[..] else {
        panic!("one text frame: {out:?}");
    };
    let mut reader = deflate::Codec::new(deflate::Agreed::default());
    assert_eq!(reader.decompress(payload, 100), Ok(b"Hello".to_vec()));
    let mut answer = from_server(
        true,
        Opcode::Text,
        &[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00],
    );
    answer[0] |= 0x40;
    s.handle(&answer, 4);
    assert_eq!(response(s.poll_event()).0, 7);
    assert_eq!(s.captured().body(), b"Hello");
    assert_eq!(s.info().messages.and_then(|m| m.deflate), Some(true));

    let mut s = offering_deflate("");
    s.open(&message("Hello"), 8, 3).unwrap();
    let out = written(&mut s);
    assert_eq!(frames(&out), [(Opcode::Text, b"Hello".to_vec())]);
    assert_eq!(s.info().messages.and_then(|m| m.deflate), Some(false));
    assert_eq!(open().info().messages.and_then(|m| m.deflate), None);
}

/// RSV1 anywhere but a message's first frame, and a payload that is not
/// DEFLATE, each fail the connection with the code RFC 6455 gives them.
#[test]
fn deflate_faults_are_protocol_errors() {
    for (frame, code) in [
        // A compressed message's continuation marked compressed too.
        (
            [
                from_server(false, Opcode::Text, &[0xf2, 0x48]),
                from_server(true, Opcode::Continuation, &[0xcd]),
            ],
            1002u16,
        ),
        // A compressed ping.
        ([from_server(true, Opcode::Ping, b""), Vec::new()], 1002),
        // Not DEFLATE.
        (
            [from_server(true, Opcode::Text, &[0xff; 8]), Vec::new()],
            1007,
        ),
    ] {
        let mut s = offering_deflate("Sec-WebSocket-Extensions: permessage-deflate\r\n");
        s.open(&message("m"), 1, 3).unwrap();
        written(&mut s);
        for mut f in frame.into_iter().filter(|f| !f.is_empty()) {
            f[0] |= 0x40;
            s.handle(&f, 4);
        }
        assert!(matches!(
            s.poll_event(),
            Some(Event::Failed {
                why: Failure::Malformed
            })
        ));
        let sent = frames(&written(&mut s));
        assert_eq!(
            sent.last(),
            Some(&(Opcode::Close, code.to_be_bytes().to_vec())),
            "{code}"
        );
    }
}

/// A script's message larger than metron's own bound on messages (and
/// most servers') is refused before it goes, not cut off by a 1009.
#[test]
fn a_message_past_the_bound_is_refused_before_it_goes() {
    let mut s = open_with(WsOptions {
        max_message: 4,
        ..options()
    });
    let Err((OpenError::Rejected { why, .. }, 1)) = s.open(&message("hello"), 1, 3) else {
        panic!("a message past the bound was sent");
    };
    assert_eq!(why, "a message of 5 bytes, more than a message may (0 MiB)");
    assert!(written(&mut s).is_empty());
    s.open(&message("four"), 2, 4).unwrap();
}

/// A script's text message that is not UTF-8 would be closed with 1007
/// by any server: it is refused before it goes, naming --ws-binary.
#[test]
fn a_text_message_that_is_not_utf8_is_refused_before_it_goes() {
    let mut s = open_with(options());
    let wire = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n\xff\xfe";
    let request = Request::new(Bytes::from_static(wire), false);
    let Err((OpenError::Rejected { why, fix, .. }, 1)) = s.open(&request, 1, 3) else {
        panic!("a text message that is not UTF-8 was sent");
    };
    assert_eq!(
        why,
        "a text message must be UTF-8, and this one is not: 2 bytes, not text"
    );
    assert_eq!(
        fix.as_deref(),
        Some("add --ws-binary to send binary messages")
    );
    assert!(written(&mut s).is_empty());
    // Control characters are shown escaped, on one line.
    assert_eq!(preview(b"a\nb\x07"), "'a\\nb\\x07'");
}

/// `--ws-match` with values that repeat (one `--data` for every
/// message): a message given up at `--timeout` still waits for its late
/// answer, which a later message with the same value must not take; and
/// when a second one is given up while the first's answer has not come,
/// late answers can no longer be told apart, so the connection closes.
#[test]
fn a_late_answer_is_the_given_up_messages_not_a_later_ones() {
    let mut opts = options();
    opts.conversation = Arc::new(Conversation {
        path: "/echo".into(),
        matching: Some(pointer("id")),
        ..Conversation::default()
    });
    let mut s = open_with(opts);
    let same = r#"{"id": 1}"#;
    s.open(&message(same), 1, 3).unwrap();
    let mut gone = Vec::new();
    s.expire(&mut |t| *t == 1, &mut gone, 4);
    assert_eq!(gone, [1]);
    assert!(s.free_streams() > 0, "the connection goes on");
    s.open(&message(same), 2, 5).unwrap();
    written(&mut s);
    // The first's late answer, then the second's.
    s.handle(&from_server(true, Opcode::Text, same.as_bytes()), 6);
    assert_eq!(
        s.poll_event(),
        None,
        "a late answer answers nothing awaited"
    );
    s.handle(&from_server(true, Opcode::Text, same.as_bytes()), 7);
    assert_eq!(response(s.poll_event()).0, 2);
    assert_eq!(s.info().messages.map(|m| m.unasked), Some(1));
    // Given up, and again before its late answer came: closed.
    s.open(&message(same), 3, 8).unwrap();
    s.expire(&mut |t| *t == 3, &mut gone, 9);
    assert!(s.free_streams() > 0, "the connection goes on");
    s.open(&message(same), 4, 10).unwrap();
    gone.clear();
    s.expire(&mut |t| *t == 4, &mut gone, 11);
    assert_eq!(gone, [4]);
    assert_eq!(s.free_streams(), 0, "closed as by order");
    let close = (Opcode::Close, 1001u16.to_be_bytes().to_vec());
    assert_eq!(frames(&written(&mut s)).last(), Some(&close));
}

/// `--ws-match`: an answer answers the message whose field holds its
/// value, whatever the order; a message with no such message awaiting is
/// unasked; and a timeout gives up only the message it struck.
#[test]
fn answers_matched_by_a_field_find_their_message() {
    assert_eq!(pointer("id"), "/id");
    assert_eq!(pointer("params.a/b"), "/params/a~1b");
    assert_eq!(dotted(&pointer("params.a/b~c")), "params.a/b~c");
    let v = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
    assert!(same_value(&v("1"), &v("1.0")) && same_value(&v("1e0"), &v("1")));
    assert!(!same_value(&v("1"), &v("\"1\"")) && !same_value(&v("2"), &v("1")));
    let mut opts = options();
    opts.conversation = Arc::new(Conversation {
        path: "/echo".into(),
        matching: Some(pointer("req.id")),
        ..Conversation::default()
    });
    let mut s = open_with(opts);
    for tag in 1..=3 {
        let body = format!(r#"{{"req": {{"id": {tag}}}}}"#);
        s.open(&message(&body), tag, 3).unwrap();
    }
    written(&mut s);
    for answer in [
        r#"{"req": {"id": 2}}"#,
        r#"{"note": "hi"}"#,
        "plain",
        r#"{"req": {"id": 9}}"#,
    ] {
        s.handle(&from_server(true, Opcode::Text, answer.as_bytes()), 4);
    }
    assert_eq!(response(s.poll_event()).0, 2);
    assert_eq!(s.poll_event(), None);
    assert_eq!(s.info().messages.map(|m| m.unasked), Some(3));
    let mut gone = Vec::new();
    s.expire(&mut |t| *t == 3, &mut gone, 5);
    assert_eq!(gone, [3]);
    assert!(s.free_streams() > 0, "the connection goes on");
    s.handle(
        &from_server(true, Opcode::Text, br#"{"req": {"id": 1}}"#),
        6,
    );
    assert_eq!(response(s.poll_event()).0, 1);
    // A message without the field could be matched to no answer: it is
    // refused, naming the field and the flag, and nothing is written.
    let Err((OpenError::Rejected { why, fix, .. }, 4)) = s.open(&message("{\"req\": 4}"), 4, 7)
    else {
        panic!("a message without the field was sent");
    };
    assert_eq!(fix.as_deref(), Some("drop --ws-match req.id"));
    assert!(
        why.contains("without the field req.id") && why.ends_with("'{\"req\": 4}'"),
        "{why}"
    );
    assert!(written(&mut s).is_empty());
}
