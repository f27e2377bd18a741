//! The HTTP/3 session against a QUIC server in memory: quinn-proto's own
//! server side, datagrams handed across by hand, answering every request
//! stream with `200` and counting them. It shows 0-RTT end to end: a first
//! connection that waits for its handshake and brings back tickets, a
//! second that sends at once and is accepted, and a third to a server that
//! resumes the session but refuses its early data, whose requests come
//! back unprocessed and, sent again, are each answered once. And it shows
//! an acknowledgement held for a request to carry it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{
    Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, ServerConfig,
    StreamId,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::*;
use crate::clock;
use crate::http::session::{Event, Request, Session};

const SERVER: &str = "127.0.0.1:4433";
const CLIENT: &str = "127.0.0.1:50000";

/// A HEADERS frame holding `:status: 200` alone: QPACK's prefix (no
/// dynamic table) and static entry 25.
const OK_HEAD: [u8; 5] = [0x01, 0x03, 0x00, 0x00, 0xc0 | 25];

/// One QUIC server endpoint, with its connections and what it answered.
struct Server {
    endpoint: Endpoint,
    conns: HashMap<ConnectionHandle, Connection>,
    /// Request streams of each connection, not yet answered.
    open: Vec<(ConnectionHandle, StreamId)>,
    answered: u64,
}

impl Server {
    fn new(config: rustls::ServerConfig) -> Server {
        let crypto = QuicServerConfig::try_from(config).unwrap();
        let config = ServerConfig::with_crypto(Arc::new(crypto));
        Server {
            endpoint: Endpoint::new(
                Arc::new(EndpointConfig::default()),
                Some(Arc::new(config)),
                false,
                None,
            ),
            conns: HashMap::new(),
            open: Vec::new(),
            answered: 0,
        }
    }

    fn handle(&mut self, datagram: &[u8]) {
        let now = Instant::now();
        let from: SocketAddr = CLIENT.parse().unwrap();
        let mut buf = Vec::new();
        match self
            .endpoint
            .handle(now, from, None, None, BytesMut::from(datagram), &mut buf)
        {
            Some(DatagramEvent::NewConnection(incoming)) => {
                let (h, conn) = self.endpoint.accept(incoming, now, &mut buf, None).unwrap();
                self.conns.insert(h, conn);
            }
            Some(DatagramEvent::ConnectionEvent(h, event)) => {
                if let Some(c) = self.conns.get_mut(&h) {
                    c.handle_event(event);
                }
            }
            _ => {}
        }
        self.work();
    }

    /// Everything the connections have to do: endpoint events, new
    /// streams, requests read whole and answered.
    fn work(&mut self) {
        let now = Instant::now();
        for (&h, conn) in &mut self.conns {
            if conn.poll_timeout().is_some_and(|t| t <= now) {
                conn.handle_timeout(now);
            }
            while let Some(e) = conn.poll_endpoint_events() {
                if let Some(back) = self.endpoint.handle_event(h, e) {
                    conn.handle_event(back);
                }
            }
            while conn.poll().is_some() {}
            while let Some(id) = conn.streams().accept(Dir::Bi) {
                self.open.push((h, id));
            }
            // The client's control stream: read and dropped.
            while let Some(id) = conn.streams().accept(Dir::Uni) {
                drop(conn.recv_stream(id).read(true).map(|mut c| {
                    while let Ok(Some(_)) = c.next(usize::MAX) {}
                    let _ = c.finalize();
                }));
            }
        }
        let mut still = Vec::new();
        for (h, id) in std::mem::take(&mut self.open) {
            let conn = self.conns.get_mut(&h).unwrap();
            let mut ended = false;
            if let Ok(mut chunks) = conn.recv_stream(id).read(true) {
                loop {
                    match chunks.next(usize::MAX) {
                        Ok(Some(_)) => {}
                        Ok(None) => {
                            ended = true;
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let _ = chunks.finalize();
            }
            if ended {
                let mut send = conn.send_stream(id);
                send.write(&OK_HEAD).unwrap();
                send.finish().unwrap();
                self.answered += 1;
            } else {
                still.push((h, id));
            }
        }
        self.open = still;
    }

    fn transmit(&mut self) -> Vec<Vec<u8>> {
        let now = Instant::now();
        let mut out = Vec::new();
        for conn in self.conns.values_mut() {
            loop {
                let mut buf = Vec::new();
                match conn.poll_transmit(now, 1, &mut buf) {
                    Some(t) => out.push(buf[..t.size].to_vec()),
                    None => break,
                }
            }
        }
        out
    }
}

/// One self-signed certificate, trusted by the client.
struct Identity {
    cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
}

fn identity() -> Identity {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    Identity {
        cert: made.cert.der().clone(),
        key: PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()),
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server's TLS: `early` sets whether it takes 0-RTT; `store` is where
/// it keeps its sessions, so that two servers may resume each other's.
fn server_tls(
    id: &Identity,
    early: bool,
    store: Arc<dyn rustls::server::StoresServerSessions>,
) -> rustls::ServerConfig {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![id.cert.clone()],
            PrivateKeyDer::Pkcs8(id.key.clone_key()),
        )
        .unwrap();
    config.alpn_protocols = vec![b"h3".to_vec()];
    config.max_early_data_size = if early { u32::MAX } else { 0 };
    config.session_storage = store;
    config
}

fn client_opts(id: &Identity) -> QuicOptions {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(id.cert.clone()).unwrap();
    let mut tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    // As `--0rtt` sets it.
    tls.enable_early_data = true;
    QuicOptions {
        tls: Arc::new(tls),
        server_name: "localhost".into(),
        authority: "localhost".into(),
        max_streams: 10,
        max_field_section: 64 * 1024,
        capture: false,
        reading: EventReading::Off,
    }
}

/// `GET /`, as every test here sends it.
fn get() -> Request {
    Request::new(
        bytes::Bytes::from_static(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"),
        false,
    )
}

/// What came of the requests of a connection.
#[derive(Default)]
struct Outcomes {
    answered: Vec<u32>,
    unprocessed: Vec<u32>,
}

/// What the engine does, in miniature: moves datagrams both ways, wakes
/// both sides at their deadlines, and sends again each request the
/// session hands back unprocessed, until `done` or two seconds pass.
fn run(
    client: &mut Http3<u32>,
    server: &mut Server,
    request: &Request,
    done: impl Fn(&Http3<u32>, &Outcomes) -> bool,
) -> Outcomes {
    let mut out = Outcomes::default();
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut again: Vec<u32> = Vec::new();
    while !done(client, &out) && Instant::now() < deadline {
        let now = clock::now();
        flush_to(client, server, now);
        server.work();
        for d in server.transmit() {
            client.handle(&d, clock::now());
        }
        if client.poll_timeout().is_some_and(|t| t <= clock::now()) {
            client.handle_timeout(clock::now());
        }
        while let Some(event) = client.poll_event() {
            match event {
                Event::Response { tag, status, .. } => {
                    assert_eq!(status, 200);
                    out.answered.push(tag);
                }
                Event::Unprocessed { tag } => {
                    out.unprocessed.push(tag);
                    again.push(tag);
                }
                other => panic!("{other:?}"),
            }
        }
        while client.free_streams() > 0 && !again.is_empty() {
            client.open(request, again.remove(0), now).unwrap();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    out.answered.sort_unstable();
    out
}

/// Runs until `n` responses came, then a moment more: the tickets the
/// server sent after the handshake reach the client.
fn answers(client: &mut Http3<u32>, server: &mut Server, request: &Request, n: usize) -> Outcomes {
    let out = run(client, server, request, |_, o| o.answered.len() >= n);
    let until = Instant::now() + Duration::from_millis(100);
    let more = run(client, server, request, |_, _| Instant::now() >= until);
    assert!(more.answered.is_empty() && more.unprocessed.is_empty());
    out
}

#[test]
fn zero_rtt_is_sent_at_once_and_sent_again_when_refused() {
    let id = identity();
    let opts = client_opts(&id);
    let remote: SocketAddr = SERVER.parse().unwrap();
    let store = rustls::server::ServerSessionMemoryCache::new(64);
    let mut taking = Server::new(server_tls(&id, true, store.clone()));
    let request = get();

    // The first connection has no ticket: it waits for its handshake.
    let mut first: Http3<u32> = Http3::new(&opts, remote, clock::now()).unwrap();
    assert!(!first.is_ready() && first.free_streams() == 0);
    run(&mut first, &mut taking, &request, |c, _| c.is_ready());
    first.open(&request, 1, clock::now()).unwrap();
    let out = answers(&mut first, &mut taking, &request, 1);
    assert_eq!(out.answered, [1]);
    let f = first.facts();
    assert!(!f.zero_rtt_offered && !f.zero_rtt, "{f:?}");

    // The second resumes with early data: ready at once, its requests go
    // out before the server has said a word, and are taken.
    let mut second: Http3<u32> = Http3::new(&opts, remote, clock::now()).unwrap();
    assert!(second.is_ready(), "no 0-RTT on a resumed session");
    // Its connect time still runs to the handshake's end.
    assert!(!second.info().handshake_complete);
    for tag in 10..13 {
        second.open(&request, tag, clock::now()).unwrap();
    }
    let out = answers(&mut second, &mut taking, &request, 3);
    assert_eq!((out.answered, out.unprocessed), (vec![10, 11, 12], vec![]));
    assert!(second.info().handshake_complete);
    let f = second.facts();
    assert!(f.zero_rtt_offered && f.zero_rtt, "{f:?}");
    let p = second.info().packets.unwrap();
    assert!(p.zero_rtt_offered && p.zero_rtt, "{p:?}");
    assert_eq!(taking.answered, 4);

    // The third goes to a server that resumes the session (the same
    // store) but takes no early data: it processed none of the requests,
    // which come back unprocessed, oldest first, and are each answered
    // once when sent again on the connection now open.
    let mut refusing = Server::new(server_tls(&id, false, store));
    let mut third: Http3<u32> = Http3::new(&opts, remote, clock::now()).unwrap();
    assert!(third.is_ready());
    for tag in 20..23 {
        third.open(&request, tag, clock::now()).unwrap();
    }
    let out = answers(&mut third, &mut refusing, &request, 3);
    assert_eq!(out.unprocessed, [20, 21, 22]);
    assert_eq!(out.answered, [20, 21, 22]);
    assert_eq!(refusing.answered, 3, "a request processed twice, or lost");
    assert_eq!(third.in_flight(), 0);
    let f = third.facts();
    assert!(f.zero_rtt_offered && !f.zero_rtt, "{f:?}");
    // The control stream opened again: the session goes on.
    third.open(&request, 30, clock::now()).unwrap();
    let out = answers(&mut third, &mut refusing, &request, 1);
    assert_eq!(out.answered, [30]);
    assert_eq!(refusing.answered, 4);
}

/// Sends what the client has to the server; the datagrams that went.
fn flush_to(client: &mut Http3<u32>, server: &mut Server, now: Nanos) -> usize {
    let mut sent = 0;
    loop {
        let (batch, segment) = client.transmit_segmented(now);
        if batch.is_empty() {
            return sent;
        }
        let n = batch.len();
        let datagrams: Vec<Vec<u8>> = batch
            .chunks(segment.unwrap_or(n))
            .map(<[u8]>::to_vec)
            .collect();
        client.transmitted(n);
        for d in &datagrams {
            server.handle(d);
            sent += 1;
        }
    }
}

/// What the server sends once it has answered what it holds.
fn server_reply(server: &mut Server) -> Vec<Vec<u8>> {
    let until = Instant::now() + Duration::from_secs(1);
    loop {
        server.work();
        let out = server.transmit();
        if !out.is_empty() || Instant::now() > until {
            return out;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Two responses in two packets: QUIC wants to acknowledge them at once.
/// That acknowledgement waits up to ACK_HOLD for a request to carry it;
/// when none comes, it goes alone at the hold's end. A request opened
/// meanwhile goes at once, and carries it.
#[test]
fn an_acknowledgement_waits_briefly_for_a_request_to_carry_it() {
    let id = identity();
    let opts = client_opts(&id);
    let remote: SocketAddr = SERVER.parse().unwrap();
    let store = rustls::server::ServerSessionMemoryCache::new(64);
    let mut server = Server::new(server_tls(&id, true, store));
    let request = get();
    let mut client: Http3<u32> = Http3::new(&opts, remote, clock::now()).unwrap();
    run(&mut client, &mut server, &request, |c, _| c.is_ready());
    client.open(&request, 1, clock::now()).unwrap();
    answers(&mut client, &mut server, &request, 1);

    // Each request answered apart, the answers held back from the client.
    let mut replies = Vec::new();
    for tag in [2, 3] {
        client.open(&request, tag, clock::now()).unwrap();
        assert!(flush_to(&mut client, &mut server, clock::now()) > 0);
        replies.extend(server_reply(&mut server));
    }
    let now = clock::now();
    for d in &replies {
        client.handle(d, now);
    }
    assert_eq!(flush_to(&mut client, &mut server, now), 0, "not held");
    let due = client.poll_timeout().expect("the hold's end is a deadline");
    assert!(due <= now + ACK_HOLD, "{} ns", due - now);
    client.handle_timeout(due);
    assert!(flush_to(&mut client, &mut server, due) > 0, "never sent");

    // Again, and a request comes first: everything leaves with it.
    let mut replies = Vec::new();
    for tag in [4, 5] {
        client.open(&request, tag, clock::now()).unwrap();
        flush_to(&mut client, &mut server, clock::now());
        replies.extend(server_reply(&mut server));
    }
    let now = clock::now();
    for d in &replies {
        client.handle(d, now);
    }
    assert_eq!(flush_to(&mut client, &mut server, now), 0, "not held");
    client.open(&request, 6, now).unwrap();
    assert!(
        flush_to(&mut client, &mut server, now) > 0,
        "the request waited"
    );
    let out = answers(&mut client, &mut server, &request, 5);
    assert_eq!(out.answered, [2, 3, 4, 5, 6]);
}
