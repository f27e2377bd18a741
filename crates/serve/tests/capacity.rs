//! `metron serve --capacity RPS` end to end: a real server on a loopback
//! port, blocking std clients for HTTP/1.1 and the HTTP/2 library's client.
//!
//! The server's queue completes requests at least 1/RPS apart, so the
//! tests assert lower bounds on time, which are exact: a server may be
//! late but never early. They assert no upper bound, since a busy machine
//! may be late. Every wait is bounded ([`LIMIT`]).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use http::Request;
use metron_serve::{Capacity, Http2, ServeConfig, Server, StallPlan};

/// The longest any one step of a test may take.
const LIMIT: Duration = Duration::from_secs(10);
const GET: &str = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
const OK: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n";

fn capacity(rps: f64) -> ServeConfig {
    ServeConfig {
        capacity: Some(Capacity::new(rps).unwrap()),
        ..ServeConfig::default()
    }
}

fn serve(cfg: ServeConfig) -> Server {
    Server::start(cfg).expect("server starts")
}

fn connect(server: &Server) -> TcpStream {
    let stream = TcpStream::connect(server.addr()).expect("connects");
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    stream
}

/// Reads one empty 200, exactly.
fn expect_ok(stream: &mut TcpStream) {
    let mut got = [0; OK.len()];
    stream.read_exact(&mut got).expect("a response");
    assert_eq!(String::from_utf8_lossy(&got), OK);
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn http1_connections_together_get_at_most_rps() {
    const CONNS: usize = 4;
    const EACH: usize = 50;
    let server = serve(ServeConfig {
        threads: 2,
        ..capacity(1000.0)
    });
    let answered: Arc<Vec<AtomicUsize>> =
        Arc::new((0..CONNS).map(|_| AtomicUsize::new(0)).collect());
    let go = Arc::new(Barrier::new(CONNS + 1));
    let clients: Vec<_> = (0..CONNS)
        .map(|me| {
            let mut stream = connect(&server);
            let (answered, go) = (Arc::clone(&answered), Arc::clone(&go));
            std::thread::spawn(move || {
                go.wait();
                let first = Instant::now();
                let mut times = Vec::with_capacity(EACH);
                for _ in 0..EACH {
                    stream.write_all(GET.as_bytes()).expect("request written");
                    expect_ok(&mut stream);
                    times.push(Instant::now());
                    answered[me].fetch_add(1, SeqCst);
                }
                // How far the others had got when this one was done.
                let others: Vec<usize> = (0..CONNS)
                    .filter(|&c| c != me)
                    .map(|c| answered[c].load(SeqCst))
                    .collect();
                (first, times, others)
            })
        })
        .collect();
    go.wait();
    let results: Vec<_> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let times: Vec<Instant> = results.iter().flat_map(|(_, t, _)| t.clone()).collect();
    let first = *times.iter().min().unwrap();
    let last = *times.iter().max().unwrap();
    // 200 requests at 1000/s: the last cannot be answered before 200 ms
    // after the first was sent, and 199 more took about 199 ms after the
    // first answer (the slack is for a first answer read late).
    let sent = results.iter().map(|(f, _, _)| *f).min().unwrap();
    assert!(last - sent >= ms(200), "{:?}", last - sent);
    assert!(last - first >= ms(150), "{:?}", last - first);
    // FIFO over all connections: a connection's next request waits behind
    // the others' outstanding ones, so none runs far ahead. The first to
    // finish its 50 left every other with most of theirs answered (10 of
    // 50 leaves room for a client thread that was not scheduled for long).
    let (_, _, others) = results
        .iter()
        .min_by_key(|(_, t, _)| *t.last().unwrap())
        .unwrap();
    assert!(others.iter().all(|&n| n >= 10), "{others:?}");
    let stats = server.stats();
    assert_eq!(stats.requests(), (CONNS * EACH) as u64);
    assert_eq!(stats.responses(200), (CONNS * EACH) as u64);
}

#[test]
fn a_request_waits_behind_those_read_before_it_on_other_connections() {
    // 10 ms a request.
    let server = serve(capacity(100.0));
    let mut early = connect(&server);
    let mut late = connect(&server);
    let start = Instant::now();
    // Twenty pipelined requests in one write join the queue together.
    early.write_all(GET.repeat(20).as_bytes()).unwrap();
    expect_ok(&mut early);
    // The first answer means all twenty are queued; this one goes after
    // them, so it completes no sooner than 21 service times in.
    late.write_all(GET.as_bytes()).unwrap();
    expect_ok(&mut late);
    let took = start.elapsed();
    assert!(took >= ms(210), "{took:?}");
    for _ in 1..20 {
        expect_ok(&mut early);
    }
    assert_eq!(server.stats().requests(), 21);
}

#[test]
fn a_delay_is_added_after_the_service() {
    let server = serve(ServeConfig {
        delay: ms(30),
        ..capacity(100.0)
    });
    let mut client = connect(&server);
    let start = Instant::now();
    client.write_all(GET.repeat(3).as_bytes()).unwrap();
    for _ in 0..3 {
        expect_ok(&mut client);
    }
    // Three services of 10 ms, then the last one's delay.
    let took = start.elapsed();
    assert!(took >= ms(60), "{took:?}");
    // A /delay/MS route too.
    let start = Instant::now();
    client.write_all(b"GET /delay/40 HTTP/1.1\r\n\r\n").unwrap();
    expect_ok(&mut client);
    let took = start.elapsed();
    assert!(took >= ms(10 + 30 + 40), "{took:?}");
}

#[test]
fn no_service_happens_during_a_stall() {
    // Stalled for the first 100 ms; 10 ms a request.
    let server = serve(ServeConfig {
        stall: Some(StallPlan::once(Duration::ZERO, ms(100)).unwrap()),
        ..capacity(100.0)
    });
    let mut client = connect(&server);
    client.write_all(GET.repeat(5).as_bytes()).unwrap();
    for _ in 0..5 {
        expect_ok(&mut client);
    }
    // What piled up during the stall is served at RPS after it, not all
    // at once when it ends.
    let since_start = server.started_at().elapsed();
    assert!(since_start >= ms(150), "{since_start:?}");
}

/// The HTTP/2 client side: connections driven by tasks of their own.
mod h2c {
    use super::*;
    use tokio::net::TcpStream;

    pub async fn connect(server: &Server) -> SendRequest<Bytes> {
        let tcp = TcpStream::connect(server.addr()).await.expect("connects");
        let handshake = h2::client::handshake(tcp);
        let (client, conn) = bounded(handshake).await.expect("handshake");
        tokio::spawn(conn);
        client
    }

    pub async fn bounded<F: std::future::Future>(fut: F) -> F::Output {
        tokio::time::timeout(LIMIT, fut)
            .await
            .expect("finished in time")
    }

    /// GETs `/` on a stream of its own; returns the status.
    pub async fn get(client: &SendRequest<Bytes>) -> u16 {
        let request = Request::get("http://127.0.0.1/").body(()).unwrap();
        bounded(async {
            let mut client = client.clone().ready().await?;
            let (response, _) = client.send_request(request, true)?;
            let response = response.await?;
            let status = response.status().as_u16();
            let mut body = response.into_body();
            while let Some(data) = body.data().await {
                data?;
            }
            Ok::<_, h2::Error>(status)
        })
        .await
        .expect("answered")
    }
}

fn h2_capacity(rps: f64) -> ServeConfig {
    ServeConfig {
        http2: Some(Http2::default()),
        ..capacity(rps)
    }
}

#[tokio::test]
async fn http2_streams_of_every_connection_share_the_queue() {
    let server = serve(ServeConfig {
        threads: 2,
        ..h2_capacity(1000.0)
    });
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(h2c::connect(&server).await);
    }
    let start = Instant::now();
    let mut streams = Vec::new();
    for client in &clients {
        for _ in 0..50 {
            let client = client.clone();
            streams.push(tokio::spawn(async move { h2c::get(&client).await }));
        }
    }
    for stream in streams {
        assert_eq!(h2c::bounded(stream).await.unwrap(), 200);
    }
    // 200 streams at 1000/s.
    let took = start.elapsed();
    assert!(took >= ms(200), "{took:?}");
    assert_eq!(server.stats().responses(200), 200);
}

#[tokio::test]
async fn a_stream_waits_behind_streams_read_before_it() {
    // One server thread, 10 ms a request.
    let server = serve(h2_capacity(100.0));
    let early = h2c::connect(&server).await;
    let late = h2c::connect(&server).await;
    let start = Instant::now();
    let mut queued = Vec::new();
    for _ in 0..20 {
        let early = early.clone();
        queued.push(tokio::spawn(async move { h2c::get(&early).await }));
    }
    // Once all twenty are read they are queued (each joins the queue as
    // soon as it is read, on the one server thread).
    let stats = server.stats();
    while stats.requests() < 20 {
        assert!(start.elapsed() < LIMIT, "still waiting for 20 requests");
        tokio::time::sleep(ms(1)).await;
    }
    assert_eq!(h2c::get(&late).await, 200);
    let took = start.elapsed();
    assert!(took >= ms(210), "{took:?}");
    for stream in queued {
        assert_eq!(h2c::bounded(stream).await.unwrap(), 200);
    }
}
