//! The dashboard's HTTP/1.1 server: blocking, a thread per connection
//! (a page and its event stream are two), one request per connection.
//! GET and HEAD are answered (HEAD with the head GET would have, as
//! health checks and link checkers send it); nothing else.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{metrics, Shared, KEEPALIVE};

/// Connections served at once; more are answered 503 and closed.
const MAX_CONNECTIONS: usize = 64;
/// The longest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request: a browser or a
/// Prometheus sends it at once, and a connection that sends nothing holds
/// one of the places a scrape needs.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

const PAGE: &str = include_str!("page.html");

pub(super) fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // A client gone before it was accepted, or no file descriptor
            // to spare: wait a moment rather than spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        if open.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::AcqRel);
            let _ = respond(
                &stream,
                "503 Service Unavailable",
                "text/plain",
                b"busy\n",
                false,
            );
            continue;
        }
        let (shared, open) = (shared.clone(), open.clone());
        let spawned = std::thread::Builder::new()
            .name("metron-dashboard-conn".into())
            .spawn(move || {
                let _ = handle(stream, &shared);
                open.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn handle(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let Some((method, path)) = request_line(&stream)? else {
        return respond(
            &stream,
            "400 Bad Request",
            "text/plain",
            b"bad request\n",
            false,
        );
    };
    let head = match method.as_str() {
        "GET" => false,
        "HEAD" => true,
        _ => {
            return respond(
                &stream,
                "405 Method Not Allowed",
                "text/plain",
                b"the dashboard only shows the run: GET or HEAD\n",
                false,
            )
        }
    };
    let ok = |kind: &str, body: &[u8]| respond(&stream, "200 OK", kind, body, head);
    // Query strings change nothing here.
    let path = path.split('?').next().unwrap_or("/");
    match path {
        "/" | "/index.html" => ok("text/html; charset=utf-8", &page(shared)),
        "/series.json" => ok("application/json", series_json(shared).as_bytes()),
        "/metrics" => ok(
            "text/plain; version=0.0.4; charset=utf-8",
            metrics::render(&shared.lock()).as_bytes(),
        ),
        "/events" if head => events_head(&stream),
        "/events" => events(stream, shared),
        _ => respond(&stream, "404 Not Found", "text/plain", b"not found\n", head),
    }
}

/// The request's method and path, after reading its whole head.
fn request_line(stream: &TcpStream) -> io::Result<Option<(String, String)>> {
    let mut reader = BufReader::new(io::Read::take(stream, MAX_HEAD as u64));
    let mut first = String::new();
    reader.read_line(&mut first)?;
    // The rest of the head: headers are not needed.
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
    }
    let mut words = first.split_whitespace();
    Ok(match (words.next(), words.next(), words.next()) {
        (Some(m), Some(p), Some(v)) if v.starts_with("HTTP/1.") && p.starts_with('/') => {
            Some((m.to_string(), p.to_string()))
        }
        _ => None,
    })
}

/// The response, or with `head_only` its head alone (a HEAD request's):
/// the Content-Length is the body's all the same.
fn respond(
    mut stream: &TcpStream,
    status: &str,
    kind: &str,
    body: &[u8],
    head_only: bool,
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(body)?;
    }
    stream.flush()
}

/// The page, with the run's description in it.
fn page(shared: &Shared) -> Vec<u8> {
    let config = shared.lock().config.clone();
    // In a script element, "</" could end it early.
    PAGE.replace("/*CONFIG*/null", &config.replace("</", "<\\/"))
        .into_bytes()
}

/// `/series.json`: the description, the intervals kept, the totals and
/// the report once there is one.
fn series_json(shared: &Shared) -> String {
    let state = shared.lock();
    let first = state.seq - state.points.len() as u64;
    let points: Vec<&str> = state.points.iter().map(String::as_str).collect();
    let totals = metrics::totals_json(&state.totals);
    let report = serde_json::to_string(&state.report).unwrap_or_else(|_| "null".into());
    format!(
        "{{\"config\":{},\"first\":{first},\"points\":[{}],\"totals\":{totals},\"report\":{report}}}\n",
        state.config,
        points.join(",")
    )
}

const EVENTS_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
Cache-Control: no-store\r\nConnection: close\r\n\r\n";

/// HEAD `/events`: the stream's head, without waiting for any event.
fn events_head(mut stream: &TcpStream) -> io::Result<()> {
    stream.write_all(EVENTS_HEAD)?;
    stream.flush()
}

/// `/events`: every interval kept, a `caught-up` event, then each new one
/// as it comes, then the report, after which the stream ends.
fn events(mut stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.write_all(EVENTS_HEAD)?;
    stream.write_all(b"retry: 1000\n\n")?;
    let mut sent = 0u64;
    let mut caught_up = false;
    loop {
        let (batch, report) = {
            let mut state = shared.lock();
            // The first pass sends what there is at once.
            while caught_up && state.seq == sent && state.report.is_none() {
                let (s, timeout) = shared
                    .changed
                    .wait_timeout(state, KEEPALIVE)
                    .unwrap_or_else(|e| e.into_inner());
                state = s;
                if timeout.timed_out() {
                    break;
                }
            }
            let first = state.seq - state.points.len() as u64;
            let from = (sent.max(first) - first) as usize;
            let batch: Vec<String> = state.points.range(from..).cloned().collect();
            sent = state.seq;
            (batch, state.report.clone())
        };
        let mut out = String::new();
        for p in &batch {
            out.push_str("event: point\ndata: ");
            out.push_str(p);
            out.push_str("\n\n");
        }
        if !caught_up {
            out.push_str(&format!("event: caught-up\ndata: {sent}\n\n"));
            caught_up = true;
        }
        if let Some(report) = &report {
            let json = serde_json::to_string(report).unwrap_or_default();
            out.push_str("event: report\ndata: ");
            out.push_str(&json);
            out.push_str("\n\n");
        }
        if out.is_empty() {
            out.push_str(": waiting\n\n");
        }
        stream.write_all(out.as_bytes())?;
        stream.flush()?;
        if report.is_some() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::super::Dashboard;
    use super::*;

    /// One request, the whole response (the server closes after it).
    fn ask(d: &Dashboard, method: &str, path: &str) -> String {
        let mut s = TcpStream::connect(d.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    }

    /// HEAD gets GET's head, with its Content-Length, and no body; on the
    /// event stream it does not wait for the run.
    #[test]
    fn head_is_answered_with_the_head_alone() {
        let d = Dashboard::start(
            "127.0.0.1:0",
            "{}".into(),
            false,
            crate::schedule::Shard::WHOLE,
        )
        .unwrap();
        for path in ["/", "/series.json", "/metrics", "/nothing"] {
            let get = ask(&d, "GET", path);
            let head = ask(&d, "HEAD", path);
            let (get_head, body) = get.split_once("\r\n\r\n").unwrap();
            assert_eq!(head, format!("{get_head}\r\n\r\n"), "{path}");
            assert!(
                head.contains(&format!("Content-Length: {}\r\n", body.len())),
                "{path}: {head}"
            );
        }
        assert!(ask(&d, "HEAD", "/").starts_with("HTTP/1.1 200 OK\r\n"));
        let events = ask(&d, "HEAD", "/events");
        assert!(events.starts_with("HTTP/1.1 200 OK\r\n"), "{events}");
        assert!(events.contains("text/event-stream") && events.ends_with("\r\n\r\n"));
        assert!(ask(&d, "POST", "/").starts_with("HTTP/1.1 405"));
    }
}
