//! `metron serve --llm` end to end: a real server on a loopback port, a
//! small HTTP/1.1 client (plain and over TLS) that notes when each chunk
//! of a streamed answer arrives, and the HTTP/2 library's own client,
//! which notes each DATA frame. (HTTP/3 runs its check in its own file.)
//!
//! Each test starts its own server on an OS-chosen port. Every wait is
//! bounded ([`common::LIMIT`]); timing tests assert lower bounds only, on
//! when tokens may arrive, since a busy machine may be late but never
//! early. The counts a client reads in `usage` and the tokens it receives
//! are reconciled with the server's own counts.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use metron_serve::{Fault, FaultPlan, Http2, Llm, ServeConfig, Server, StallPlan};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

#[allow(dead_code)]
mod common;
use common::{bounded, request_at};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A server whose stand-in model takes `ttft` to its first token, then
/// `tpot` per token.
fn llm(ttft: Duration, tpot: Duration) -> ServeConfig {
    ServeConfig {
        llm: Some(Llm {
            ttft,
            tpot,
            max_tokens: 16,
        }),
        ..ServeConfig::default()
    }
}

fn serve(cfg: ServeConfig) -> Server {
    Server::start(cfg).expect("server starts")
}

/// A streamed chat request for `tokens` tokens with a usage chunk; its
/// prompt is [`PROMPT_WORDS`] words.
fn chat_stream(tokens: u64) -> String {
    format!(
        r#"{{"model":"tiny","max_tokens":{tokens},"stream":true,"stream_options":{{"include_usage":true}},
            "messages":[{{"role":"system","content":"answer briefly"}},
                        {{"role":"user","content":[{{"type":"text","text":"why is the sky"}}]}}]}}"#
    )
}
const PROMPT_WORDS: u64 = 6;

/// A response as a client read it: its head, and its body in the pieces
/// it came in (chunks, DATA frames), each with when it was read.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    pieces: Vec<(Vec<u8>, Instant)>,
}

impl Answer {
    fn body(&self) -> Vec<u8> {
        self.pieces.iter().flat_map(|(p, _)| p.clone()).collect()
    }

    fn json(&self) -> Value {
        let body = self.body();
        serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&body)))
    }

    /// The events of a stream, each its data and when it arrived; every
    /// piece must hold exactly one event.
    fn events(&self) -> Vec<(String, Instant)> {
        self.pieces
            .iter()
            .map(|(piece, at)| {
                let text = std::str::from_utf8(piece).unwrap();
                let data = text.strip_prefix("data: ").expect("one event per piece");
                let data = data.strip_suffix("\n\n").expect("one whole event");
                assert!(!data.contains("\n\n"), "one event per piece: {text:?}");
                (data.to_string(), *at)
            })
            .collect()
    }
}

/// Checks a streamed chat completion of `tokens` tokens sent at `sent`
/// by a server whose first token takes `ttft`, then `tpot` each: one
/// chunk per token, each one word, the role with the first and
/// `finish_reason` with the last, then the usage chunk, then `[DONE]`.
/// Returns the tokens counted, as a client counts them.
fn check_chat_stream(
    answer: &Answer,
    tokens: u64,
    sent: Instant,
    ttft: Duration,
    tpot: Duration,
) -> u64 {
    assert_eq!(answer.status, 200);
    assert_eq!(answer.headers["content-type"], "text/event-stream");
    let events = answer.events();
    let n = tokens as usize;
    assert_eq!(events.len(), n + 2, "tokens, usage, [DONE]");
    assert_eq!(events[n + 1].0, "[DONE]");
    let chunks: Vec<Value> = events[..=n]
        .iter()
        .map(|(data, _)| serde_json::from_str(data).unwrap())
        .collect();
    let mut counted = 0;
    for (i, chunk) in chunks[..n].iter().enumerate() {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "tiny", "the model is echoed");
        let choice = &chunk["choices"][0];
        let content = choice["delta"]["content"].as_str().unwrap();
        assert_eq!(
            content.split_whitespace().count(),
            1,
            "one token: {content:?}"
        );
        counted += content.split_whitespace().count() as u64;
        assert_eq!(choice["delta"].get("role").is_some(), i == 0, "{i}");
        let last = i + 1 == n;
        let finish = if last { "length".into() } else { Value::Null };
        assert_eq!(choice["finish_reason"], finish, "{i}");
        // Due from the request's arrival, which is after it was sent.
        let not_before = ttft + tpot * i as u32;
        let arrived = events[i].1 - sent;
        assert!(arrived >= not_before, "token {}: {arrived:?}", i + 1);
    }
    let usage = &chunks[n];
    assert_eq!(usage["choices"], Value::Array(Vec::new()));
    assert_eq!(usage["usage"]["prompt_tokens"], PROMPT_WORDS);
    assert_eq!(usage["usage"]["completion_tokens"], tokens);
    assert_eq!(usage["usage"]["total_tokens"], PROMPT_WORDS + tokens);
    counted
}

/// An HTTP/1.1 client on `stream`, which it keeps alive, reading chunked
/// bodies a chunk at a time.
struct Http1<S> {
    stream: S,
    buf: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Http1<S> {
    fn new(stream: S) -> Http1<S> {
        Http1 {
            stream,
            buf: Vec::new(),
        }
    }

    /// Sends a POST of `body` (JSON) to `path` and reads the answer.
    async fn post(&mut self, path: &str, body: &str) -> Answer {
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.send(&request).await
    }

    /// Sends `request` whole and reads the answer.
    async fn send(&mut self, request: &str) -> Answer {
        self.stream.write_all(request.as_bytes()).await.unwrap();
        bounded(self.read_answer()).await
    }

    /// Reads more bytes into the buffer; `false` at the end of the stream.
    async fn more(&mut self) -> bool {
        self.stream.read_buf(&mut self.buf).await.unwrap() > 0
    }

    /// The next `n` bytes.
    async fn take(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            assert!(self.more().await, "closed early: {:?}", self.buf);
        }
        self.buf.drain(..n).collect()
    }

    /// The next line, without its CRLF.
    async fn line(&mut self) -> String {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = self.take(end + 2).await;
                return String::from_utf8(line[..end].to_vec()).unwrap();
            }
            assert!(self.more().await, "closed mid-line: {:?}", self.buf);
        }
    }

    async fn read_answer(&mut self) -> Answer {
        let status_line = self.line().await;
        let code = status_line.split(' ').nth(1).expect("a status code");
        let status = StatusCode::from_bytes(code.as_bytes()).unwrap();
        let mut headers = HeaderMap::new();
        loop {
            let line = self.line().await;
            let Some((name, value)) = line.split_once(": ") else {
                break;
            };
            let name = HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()).unwrap();
            headers.append(name, HeaderValue::from_str(value).unwrap());
        }
        let pieces = if headers.contains_key("transfer-encoding") {
            self.chunks().await
        } else if let Some(len) = headers.get("content-length") {
            let len = len.to_str().unwrap().parse().unwrap();
            vec![(self.take(len).await, Instant::now())]
        } else {
            self.events_until_closed().await
        };
        Answer {
            status,
            headers,
            pieces,
        }
    }

    /// A chunked body, one piece per chunk.
    async fn chunks(&mut self) -> Vec<(Vec<u8>, Instant)> {
        let mut pieces = Vec::new();
        loop {
            let size = usize::from_str_radix(&self.line().await, 16).expect("hex size");
            let data = self.take(size + 2).await;
            assert!(data.ends_with(b"\r\n"));
            if size == 0 {
                return pieces;
            }
            pieces.push((data[..size].to_vec(), Instant::now()));
        }
    }

    /// A body that ends with the connection, cut into its events.
    async fn events_until_closed(&mut self) -> Vec<(Vec<u8>, Instant)> {
        while self.more().await {}
        let at = Instant::now();
        let body = std::mem::take(&mut self.buf);
        let text = String::from_utf8(body).unwrap();
        let events = text.split_inclusive("\n\n");
        events.map(|e| (e.as_bytes().to_vec(), at)).collect()
    }
}

async fn http1(server: &Server) -> Http1<TcpStream> {
    Http1::new(TcpStream::connect(server.addr()).await.unwrap())
}

#[tokio::test]
async fn a_streamed_chat_completion_over_http1_is_one_chunk_per_token() {
    let (ttft, tpot) = (ms(150), ms(20));
    let server = serve(llm(ttft, tpot));
    let mut client = http1(&server).await;
    let sent = Instant::now();
    let answer = client.post("/v1/chat/completions", &chat_stream(5)).await;
    assert_eq!(answer.headers["transfer-encoding"], "chunked");
    let counted = check_chat_stream(&answer, 5, sent, ttft, tpot);
    let stats = server.stats();
    assert_eq!(counted, stats.completion_tokens(), "reconciled");
    assert_eq!(stats.completion_tokens(), 5);
    assert_eq!(stats.prompt_tokens(), PROMPT_WORDS);
    assert_eq!(stats.completions(), 1);
    assert_eq!(stats.responses(200), 1);
    assert_eq!(stats.sse_events(), 0, "not --sse's events");
}

#[tokio::test]
async fn the_completions_route_streams_text_without_usage_unless_asked() {
    let server = serve(llm(ms(20), ms(5)));
    let mut client = http1(&server).await;
    let body = r#"{"prompt":["one two","three"],"max_tokens":3,"stream":true}"#;
    let answer = client.post("/v1/completions", body).await;
    let events = answer.events();
    assert_eq!(
        events.len(),
        4,
        "three tokens and [DONE]: {:?}",
        answer.body()
    );
    assert_eq!(events[3].0, "[DONE]");
    let texts: Vec<String> = events[..3]
        .iter()
        .map(|(data, _)| {
            let chunk: Value = serde_json::from_str(data).unwrap();
            assert_eq!(chunk["object"], "text_completion");
            assert_eq!(chunk["model"], "metron-llm", "the default model");
            chunk["choices"][0]["text"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(texts, [" w1", " w2", " w3"]);
    let stats = server.stats();
    assert_eq!(stats.prompt_tokens(), 3);
    assert_eq!(stats.completion_tokens(), 3);
}

#[tokio::test]
async fn an_unstreamed_answer_comes_whole_when_its_last_token_is_due() {
    let (ttft, tpot) = (ms(100), ms(25));
    let server = serve(llm(ttft, tpot));
    let mut client = http1(&server).await;
    let sent = Instant::now();
    let body =
        r#"{"messages":[{"role":"user","content":"hello there"}],"max_completion_tokens":5}"#;
    let answer = client.post("/v1/chat/completions", body).await;
    assert!(sent.elapsed() >= ttft + tpot * 4, "{:?}", sent.elapsed());
    assert_eq!(answer.status, 200);
    assert_eq!(answer.headers["content-type"], "application/json");
    let v = answer.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["content"], " w1 w2 w3 w4 w5");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["usage"]["prompt_tokens"], 2);
    assert_eq!(v["usage"]["completion_tokens"], 5);
    assert_eq!(v["usage"]["total_tokens"], 7);
    let answer = client.post("/v1/completions", r#"{"prompt":"a"}"#).await;
    let v = answer.json();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["usage"]["completion_tokens"], 16, "--llm-max-tokens");
    let stats = server.stats();
    assert_eq!((stats.completions(), stats.completion_tokens()), (2, 21));
    assert_eq!(stats.prompt_tokens(), 3);
}

#[tokio::test]
async fn bad_requests_are_400s_in_the_apis_form_and_the_connection_lives_on() {
    let server = serve(llm(ms(1), ms(1)));
    let mut client = http1(&server).await;
    for (path, body, status) in [
        ("/v1/chat/completions", "{not json", 400),
        ("/v1/chat/completions", r#"{"prompt":"no messages"}"#, 400),
        ("/v1/completions", r#"{"messages":[]}"#, 400),
        (
            "/v1/completions",
            r#"{"prompt":"a","max_tokens":2000000}"#,
            400,
        ),
        ("/v1/embeddings", r#"{"input":"a"}"#, 404),
        ("/v1/models", "{}", 405),
    ] {
        let answer = client.post(path, body).await;
        assert_eq!(answer.status, status, "{path} {body}");
        assert_eq!(answer.headers["content-type"], "application/json");
        let v = answer.json();
        assert_eq!(v["error"]["type"], "invalid_request_error", "{body}");
        assert!(v["error"]["message"].as_str().unwrap().len() > 10);
    }
    let models = client.send("GET /v1/models HTTP/1.1\r\n\r\n").await;
    let want =
        r#"{"object":"list","data":[{"id":"metron-llm","object":"model","owned_by":"metron"}]}"#;
    assert_eq!(String::from_utf8(models.body()).unwrap(), want);
    let wrong = client.send("GET /v1/completions HTTP/1.1\r\n\r\n").await;
    assert_eq!(wrong.status, 405);
    assert_eq!(wrong.headers["allow"], "POST");
    // Paths outside /v1/ are served as without --llm.
    let plain = client.send("GET /status/503 HTTP/1.1\r\n\r\n").await;
    assert_eq!(plain.status, 503);
    assert_eq!(plain.headers["content-type"], "text/plain");
    let stats = server.stats();
    assert_eq!(stats.completions(), 0);
    assert_eq!(stats.responses(400), 4);
    assert_eq!(stats.bad_requests(), 0, "well-framed requests");
}

#[tokio::test]
async fn delay_holds_the_head_and_the_tokens_count_from_then() {
    let server = serve(ServeConfig {
        delay: ms(100),
        ..llm(ms(100), ms(10))
    });
    let mut client = http1(&server).await;
    let sent = Instant::now();
    let answer = client.post("/v1/chat/completions", &chat_stream(2)).await;
    let events = answer.events();
    assert!(events[0].1 - sent >= ms(200), "{:?}", events[0].1 - sent);
    check_chat_stream(&answer, 2, sent, ms(200), ms(10));
}

#[tokio::test]
async fn tokens_due_during_a_stall_wait_for_its_end() {
    // Tokens due about 100, 200, 300 and 400 ms after the start; the
    // stall covers the last three, which go out once it ends at 500 ms.
    let server = serve(ServeConfig {
        stall: Some(StallPlan::once(ms(150), ms(350)).unwrap()),
        ..llm(ms(100), ms(100))
    });
    let start = server.started_at();
    let mut client = http1(&server).await;
    let answer = client.post("/v1/chat/completions", &chat_stream(4)).await;
    let events = answer.events();
    assert_eq!(events.len(), 6);
    for (i, (_, at)) in events.iter().enumerate().skip(1) {
        let since_start = *at - start;
        assert!(since_start >= ms(495), "event {} at {since_start:?}", i + 1);
    }
    assert_eq!(server.stats().completion_tokens(), 4);
}

#[tokio::test]
async fn a_fault_spoils_a_call_as_any_response() {
    let server = serve(ServeConfig {
        fault: Some(FaultPlan::every(Fault::CloseBeforeHead, 1)),
        ..llm(ms(1), ms(1))
    });
    let mut client = http1(&server).await;
    client
        .stream
        .write_all(b"POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
        .await
        .unwrap();
    let mut rest = Vec::new();
    bounded(client.stream.read_to_end(&mut rest)).await.unwrap();
    assert!(rest.is_empty(), "{rest:?}");
    let stats = server.stats();
    assert_eq!((stats.faults(), stats.completions()), (1, 0));
}

#[tokio::test]
async fn http10_gets_a_stream_that_ends_with_the_connection() {
    let server = serve(llm(ms(5), ms(1)));
    let mut client = http1(&server).await;
    let body = r#"{"prompt":"x","max_tokens":2,"stream":true}"#;
    let request = format!(
        "POST /v1/completions HTTP/1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let answer = client.send(&request).await;
    assert_eq!(answer.headers["connection"], "close");
    assert!(answer.headers.get("transfer-encoding").is_none());
    let events = answer.events();
    assert_eq!(events.len(), 3);
    assert_eq!(events[2].0, "[DONE]");
    assert_eq!(server.stats().completion_tokens(), 2);
}

#[tokio::test]
async fn tls_carries_the_stream_too() {
    let cert = common::cert("llm");
    let server = common::start_with(&cert, llm(ms(30), ms(5)));
    let tls = common::tls_connect(&server, &cert.roots, &[b"http/1.1"]).await;
    let mut client = Http1::new(tls);
    let sent = Instant::now();
    let answer = client.post("/v1/chat/completions", &chat_stream(4)).await;
    let counted = check_chat_stream(&answer, 4, sent, ms(30), ms(5));
    assert_eq!(counted, server.stats().completion_tokens());
}

/// An HTTP/2 (h2c) client's request: `body` POSTed to `path`, the answer
/// read a DATA frame at a time.
async fn h2_post(server: &Server, path: &str, body: &str) -> Answer {
    let tcp = TcpStream::connect(server.addr()).await.unwrap();
    let (client, conn) = bounded(h2::client::handshake(tcp)).await.unwrap();
    tokio::spawn(conn);
    bounded(async move {
        let mut client = client.ready().await.unwrap();
        let req = request_at("http://127.0.0.1", Method::POST, path);
        let (response, mut send) = client.send_request(req, false).unwrap();
        send.send_data(Bytes::copy_from_slice(body.as_bytes()), true)
            .unwrap();
        let (parts, mut recv) = response.await.unwrap().into_parts();
        let mut pieces = Vec::new();
        while let Some(data) = recv.data().await {
            let data = data.unwrap();
            let _ = recv.flow_control().release_capacity(data.len());
            pieces.push((data.to_vec(), Instant::now()));
        }
        Answer {
            status: parts.status,
            headers: parts.headers,
            pieces,
        }
    })
    .await
}

fn h2c(cfg: ServeConfig) -> Server {
    serve(ServeConfig {
        http2: Some(Http2::default()),
        ..cfg
    })
}

#[tokio::test]
async fn a_streamed_chat_completion_over_http2_is_one_frame_per_token() {
    let (ttft, tpot) = (ms(150), ms(20));
    let server = h2c(llm(ttft, tpot));
    let sent = Instant::now();
    let answer = h2_post(&server, "/v1/chat/completions", &chat_stream(5)).await;
    let counted = check_chat_stream(&answer, 5, sent, ttft, tpot);
    let stats = server.stats();
    assert_eq!(counted, stats.completion_tokens(), "reconciled");
    assert_eq!(
        (stats.completions(), stats.prompt_tokens()),
        (1, PROMPT_WORDS)
    );
    assert_eq!(stats.h2_streams(), 1);
}

#[tokio::test]
async fn http2_answers_whole_completions_and_bad_json() {
    let server = h2c(llm(ms(50), ms(10)));
    let sent = Instant::now();
    let answer = h2_post(
        &server,
        "/v1/completions",
        r#"{"prompt":"a b","max_tokens":3}"#,
    )
    .await;
    assert!(sent.elapsed() >= ms(70), "{:?}", sent.elapsed());
    assert_eq!(answer.status, 200);
    assert_eq!(answer.headers["content-type"], "application/json");
    let v = answer.json();
    assert_eq!(v["choices"][0]["text"], " w1 w2 w3");
    assert_eq!(v["usage"]["total_tokens"], 5);
    let bad = h2_post(&server, "/v1/chat/completions", "not json").await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"]["type"], "invalid_request_error");
    let stats = server.stats();
    assert_eq!((stats.completions(), stats.completion_tokens()), (1, 3));
    assert_eq!(stats.responses(400), 1);
}
