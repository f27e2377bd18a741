//! Routes: what a request's path asks for, and the reply that gives it.
//!
//! Tests pick the server's behaviour per request through the path, so one
//! server covers every case. Only the first segment (and for some routes
//! the second) matters; the rest of the path and the query are ignored, so
//! a load generator may vary them freely. Unknown paths get the default
//! response, which is what a benchmark hits. With `--sse` the
//! successful default response is an event stream instead. With `--llm`
//! the paths under `/v1/` are the stand-in model's (`llm`), answered
//! before these routes are asked; every other path is routed here.
//!
//! `/login` and `/private` let a test chain requests: the first hands out
//! a token, the second wants one back (`token`). Whether a request holds
//! one is settled before [`reply_for`], which stays a pure function of
//! what it is told ([`Ask::pass`]).

use std::time::Duration;

use super::config::Sse;
use super::fault::Fault;
use super::reply::{Body, Connection, Reply, Response};
use super::token::{Key, Pass, Tokens};

/// What a request's path selects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Route {
    Default,
    /// `/status/N`: the default response with status N.
    Status(u16),
    /// `/chunked`: a chunked body with a trailer.
    Chunked,
    /// `/eof`: a body delimited by closing the connection.
    Eof,
    /// `/close`: the default response, then close.
    Close,
    /// `/delay/MS`: the default response after MS more milliseconds.
    Delay(Duration),
    /// `/bytes/N`: the default response with an N-byte body.
    Bytes(u64),
    /// `/fault/NAME`: the fault NAME in place of the default response.
    Fault(Fault),
    /// `/login`: a new token, as JSON and as a cookie.
    Login,
    /// `/private/...`: the default response for a request with a token
    /// this server signed, else a 401.
    Private,
    /// A known route with an unusable parameter (`/status/abc`): a bad
    /// request, answered with 400.
    Invalid,
}

impl Route {
    /// What a request for this route is owed: a new token for `/login`,
    /// for `/private` whether `admitted` (asked of the key) says it holds
    /// a signed token, and for any other route nothing, no header read.
    pub(crate) fn pass(self, tokens: &Tokens, admitted: impl FnOnce(&Key) -> bool) -> Pass {
        match self {
            Route::Login => Pass::Minted(tokens.mint()),
            Route::Private if admitted(tokens.key()) => Pass::Valid,
            _ => Pass::Anonymous,
        }
    }

    pub(crate) fn parse(target: &str) -> Route {
        let mut segments = path_of(target).trim_start_matches('/').split('/');
        let first = segments.next().unwrap_or("");
        let second = segments.next().unwrap_or("");
        let parsed = match first {
            "status" => parse_status(second).map(Route::Status),
            "chunked" => Some(Route::Chunked),
            "eof" => Some(Route::Eof),
            "close" => Some(Route::Close),
            "delay" => parse_millis(second).map(Route::Delay),
            "bytes" => digits(second).map(Route::Bytes),
            "fault" => Fault::from_name(second).map(Route::Fault),
            "login" => Some(Route::Login),
            "private" => Some(Route::Private),
            _ => Some(Route::Default),
        };
        parsed.unwrap_or(Route::Invalid)
    }

    /// Extra delay this route adds before its response.
    pub(crate) fn delay(&self) -> Duration {
        match self {
            Route::Delay(d) => *d,
            _ => Duration::ZERO,
        }
    }
}

/// The path of a request-target, without query or fragment; absolute-form
/// targets (`http://host/p`, sent to proxies) lose their scheme and host.
pub(crate) fn path_of(target: &str) -> &str {
    let path = match target.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => target,
    };
    let end = path.find(['?', '#']).unwrap_or(path.len());
    &path[..end]
}

/// A final status; 1xx codes are interim and cannot end an exchange.
fn parse_status(s: &str) -> Option<u16> {
    let code = u16::try_from(digits(s)?).ok()?;
    (200..=999).contains(&code).then_some(code)
}

/// Milliseconds, possibly fractional (`2.5`).
pub(crate) fn parse_millis(s: &str) -> Option<Duration> {
    let ms: f64 = s.parse().ok()?;
    if !ms.is_finite() || ms < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(ms / 1000.0).ok()
}

/// A plain decimal number: no sign, no spaces, no suffix.
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// How a request was framed and what its client said about the connection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ask {
    pub route: Route,
    pub head_only: bool,
    /// The request was HTTP/1.0: no chunked responses, explicit keep-alive.
    pub http10: bool,
    /// The connection ends after this response, whoever asked for it.
    pub close: bool,
    /// The server's fault plan picked this response.
    pub fault: Option<Fault>,
    /// The token `/login` hands out, or whether `/private` was given one.
    pub pass: Pass,
}

impl Ask {
    /// Whether the connection ends after this response: the client or the
    /// server's `--close-every` asked for it, or the route is `/close`.
    pub(crate) fn closes(&self) -> bool {
        self.close || matches!(self.route, Route::Close)
    }
}

/// The server-wide shape of the default response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Defaults {
    pub body_size: u64,
    pub chunked: bool,
    /// The canned default response exists (its body was small enough).
    pub canned: bool,
    /// Successful default responses are this event stream instead.
    pub sse: Option<Sse>,
}

/// The reply to a request, given the server's defaults.
pub(crate) fn reply_for(ask: Ask, defaults: Defaults) -> Reply {
    let size = defaults.body_size;
    let (status, body) = match ask.route {
        Route::Default | Route::Delay(_) | Route::Close | Route::Fault(_) => {
            (200, default_body(size, defaults))
        }
        Route::Bytes(n) => (200, default_body(n, defaults)),
        Route::Status(code @ (204 | 304)) => (code, Body::Empty),
        Route::Status(code) => (code, default_body(size, defaults)),
        Route::Chunked => (200, chunked(size, true)),
        Route::Eof => (200, Body::UntilClose(size)),
        Route::Login => match ask.pass {
            Pass::Minted(token) => (200, Body::Token(token)),
            // Callers mint a token for every login; without one there is
            // nothing to hand out.
            Pass::Anonymous | Pass::Valid => return Reply::BadRequest,
        },
        Route::Private if ask.pass == Pass::Valid => (200, default_body(size, defaults)),
        Route::Private => (401, Body::Denied),
        Route::Invalid => return Reply::BadRequest,
    };
    let close = ask.closes();
    let fault = match ask.route {
        Route::Fault(fault) => Some(fault),
        _ => ask.fault,
    };
    if let Some(fault) = fault {
        let base = compose(ask, status, body, close);
        return Reply::Fault { fault, base };
    }
    let body = match events(ask.route, status, defaults) {
        Some(sse) => Body::Events { sse, chunked: true },
        None => body,
    };
    let cannable = defaults.canned && !ask.http10 && status == 200;
    if cannable && body == default_body(size, defaults) {
        let head_only = ask.head_only;
        return Reply::Canned { head_only, close };
    }
    Reply::Send(compose(ask, status, body, close))
}

/// The event stream that takes the place of a successful response's
/// default body (`--sse`). Routes that name their own body
/// (`/bytes/N`, `/chunked`, `/eof`) keep it: a test asked for that body.
fn events(route: Route, status: u16, defaults: Defaults) -> Option<Sse> {
    let default = matches!(
        route,
        Route::Default | Route::Delay(_) | Route::Close | Route::Status(_) | Route::Private
    );
    defaults.sse.filter(|_| default && status == 200)
}

fn compose(ask: Ask, status: u16, body: Body, close: bool) -> Response {
    // HTTP/1.0 has no chunked coding: such bodies end with the connection.
    let body = match body {
        Body::Chunked { len, .. } if ask.http10 => Body::UntilClose(len),
        Body::Events { sse, .. } if ask.http10 => Body::Events {
            sse,
            chunked: false,
        },
        other => other,
    };
    Response {
        status,
        body,
        connection: connection(close, body.until_close(), ask.http10),
        head_only: ask.head_only,
    }
}

/// What a response's `Connection` header says: `close` if the connection
/// ends after it (asked to, or its body ends `until_close`), else
/// `keep-alive` to an `http10` client, which would close otherwise.
pub(crate) fn connection(close: bool, until_close: bool, http10: bool) -> Connection {
    match (close || until_close, http10) {
        (true, _) => Connection::Close,
        (false, true) => Connection::KeepAlive,
        (false, false) => Connection::Omit,
    }
}

/// The default response's body framing, for a body of `len` bytes.
pub(crate) fn default_body(len: u64, defaults: Defaults) -> Body {
    if defaults.chunked {
        chunked(len, false)
    } else {
        Body::Length(len)
    }
}

fn chunked(len: u64, trailer: bool) -> Body {
    Body::Chunked { len, trailer }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_login_mints_and_only_private_looks() {
        let tokens = Tokens::default();
        let mut looked = false;
        assert_eq!(
            Route::Default.pass(&tokens, |_| {
                looked = true;
                true
            }),
            Pass::Anonymous
        );
        assert!(!looked, "no header is read for other routes");
        let Pass::Minted(token) = Route::Login.pass(&tokens, |_| false) else {
            panic!()
        };
        assert!(tokens.key().signed(token));
        assert_ne!(tokens.mint(), token, "each login gets a token of its own");
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn paths_select_routes() {
        assert_eq!(Route::parse("/"), Route::Default);
        assert_eq!(Route::parse("/index.html?q=1"), Route::Default);
        assert_eq!(Route::parse("*"), Route::Default);
        assert_eq!(Route::parse("/status/503"), Route::Status(503));
        assert_eq!(Route::parse("/status/204/more?x"), Route::Status(204));
        assert_eq!(Route::parse("/chunked"), Route::Chunked);
        assert_eq!(Route::parse("/chunked/x?y"), Route::Chunked);
        assert_eq!(Route::parse("/chunkedx"), Route::Default);
        assert_eq!(Route::parse("/eof"), Route::Eof);
        assert_eq!(Route::parse("/close?n=1"), Route::Close);
        assert_eq!(Route::parse("/delay/250"), Route::Delay(ms(250)));
        assert_eq!(
            Route::parse("/delay/0.5"),
            Route::Delay(Duration::from_micros(500))
        );
        assert_eq!(Route::parse("/bytes/1024"), Route::Bytes(1024));
        assert_eq!(Route::parse("http://h:1/bytes/7?z"), Route::Bytes(7));
        assert_eq!(Route::parse("/fault/reset"), Route::Fault(Fault::Reset));
        assert_eq!(
            Route::parse("/fault/trickle/x?y"),
            Route::Fault(Fault::Trickle)
        );
        assert_eq!(Route::parse("/login?u=1"), Route::Login);
        assert_eq!(Route::parse("/private"), Route::Private);
        assert_eq!(Route::parse("/private/a/b?c"), Route::Private);
        assert_eq!(Route::parse("/privately"), Route::Default);
    }

    #[test]
    fn unusable_parameters_are_invalid() {
        for target in [
            "/status",
            "/status/abc",
            "/status/100",
            "/status/1000",
            "/status/+200",
            "/delay/-1",
            "/delay/NaN",
            "/delay/inf",
            "/delay/1e300",
            "/bytes/",
            "/bytes/-1",
            "/bytes/99999999999999999999",
            "/fault",
            "/fault/",
            "/fault/nope",
            "/fault/reset:0.5",
        ] {
            assert_eq!(Route::parse(target), Route::Invalid, "{target}");
        }
    }

    #[test]
    fn paths_drop_query_and_authority() {
        assert_eq!(path_of("/a/b?c=d#e"), "/a/b");
        assert_eq!(path_of("http://host:80"), "/");
        assert_eq!(path_of("https://host/x?y"), "/x");
        assert_eq!(path_of(""), "");
    }

    fn ask(route: Route) -> Ask {
        Ask {
            route,
            head_only: false,
            http10: false,
            close: false,
            fault: None,
            pass: Pass::Anonymous,
        }
    }

    const PLAIN: Defaults = Defaults {
        body_size: 4,
        chunked: false,
        canned: true,
        sse: None,
    };

    #[test]
    fn the_default_response_is_canned() {
        let canned = Reply::Canned {
            head_only: false,
            close: false,
        };
        assert_eq!(reply_for(ask(Route::Default), PLAIN), canned);
        assert_eq!(reply_for(ask(Route::Delay(ms(1))), PLAIN), canned);
        assert_eq!(reply_for(ask(Route::Bytes(4)), PLAIN), canned);
        let closing = reply_for(ask(Route::Close), PLAIN);
        assert!(matches!(closing, Reply::Canned { close: true, .. }));
        let streamed = Defaults {
            canned: false,
            ..PLAIN
        };
        assert!(matches!(
            reply_for(ask(Route::Default), streamed),
            Reply::Send(_)
        ));
    }

    #[test]
    fn routes_shape_the_response() {
        let Reply::Send(r) = reply_for(ask(Route::Status(204)), PLAIN) else {
            panic!()
        };
        assert_eq!((r.status, r.body), (204, Body::Empty));
        let Reply::Send(r) = reply_for(ask(Route::Status(500)), PLAIN) else {
            panic!()
        };
        assert_eq!((r.status, r.body), (500, Body::Length(4)));
        let Reply::Send(r) = reply_for(ask(Route::Eof), PLAIN) else {
            panic!()
        };
        assert_eq!(
            (r.body, r.connection),
            (Body::UntilClose(4), Connection::Close)
        );
        let Reply::Send(r) = reply_for(ask(Route::Chunked), PLAIN) else {
            panic!()
        };
        assert_eq!(
            r.body,
            Body::Chunked {
                len: 4,
                trailer: true
            }
        );
        assert_eq!(reply_for(ask(Route::Invalid), PLAIN), Reply::BadRequest);
    }

    #[test]
    fn login_hands_out_its_token_and_private_wants_one() {
        let token = crate::token::Tokens::default().mint();
        let login = Ask {
            pass: Pass::Minted(token),
            ..ask(Route::Login)
        };
        let Reply::Send(r) = reply_for(login, PLAIN) else {
            panic!()
        };
        assert_eq!((r.status, r.body), (200, Body::Token(token)));
        assert_eq!(reply_for(ask(Route::Login), PLAIN), Reply::BadRequest);
        let valid = Ask {
            pass: Pass::Valid,
            ..ask(Route::Private)
        };
        assert_eq!(
            reply_for(valid, PLAIN),
            reply_for(ask(Route::Default), PLAIN)
        );
        let Reply::Send(r) = reply_for(ask(Route::Private), PLAIN) else {
            panic!()
        };
        assert_eq!((r.status, r.body), (401, Body::Denied));
        let sse = Sse {
            events: 1,
            first: ms(1),
            gap: ms(1),
        };
        let streaming = Defaults {
            sse: Some(sse),
            ..PLAIN
        };
        let Reply::Send(r) = reply_for(valid, streaming) else {
            panic!()
        };
        assert_eq!(r.body, Body::Events { sse, chunked: true });
        assert_eq!(
            reply_for(ask(Route::Private), streaming),
            reply_for(ask(Route::Private), PLAIN)
        );
    }

    #[test]
    fn faults_replace_the_response_they_spoil() {
        let base = Response {
            status: 200,
            body: Body::Length(4),
            connection: Connection::Omit,
            head_only: false,
        };
        let routed = reply_for(ask(Route::Fault(Fault::Garbage)), PLAIN);
        let garbage = Reply::Fault {
            fault: Fault::Garbage,
            base,
        };
        assert_eq!(routed, garbage);
        assert!(routed.closes());
        let planned = Ask {
            fault: Some(Fault::Trickle),
            ..ask(Route::Status(503))
        };
        let trickle = Reply::Fault {
            fault: Fault::Trickle,
            base: Response {
                status: 503,
                ..base
            },
        };
        assert_eq!(reply_for(planned, PLAIN), trickle);
        assert!(
            !trickle.closes(),
            "a trickled response keeps the connection"
        );
        let bad = Ask {
            fault: Some(Fault::Reset),
            ..ask(Route::Invalid)
        };
        assert_eq!(reply_for(bad, PLAIN), Reply::BadRequest);
    }

    #[test]
    fn http10_gets_explicit_keep_alive_and_no_chunks() {
        let old = Ask {
            http10: true,
            ..ask(Route::Default)
        };
        let Reply::Send(r) = reply_for(old, PLAIN) else {
            panic!()
        };
        assert_eq!(
            (r.body, r.connection),
            (Body::Length(4), Connection::KeepAlive)
        );
        let old_chunked = Ask {
            route: Route::Chunked,
            ..old
        };
        let Reply::Send(r) = reply_for(old_chunked, PLAIN) else {
            panic!()
        };
        assert_eq!(
            (r.body, r.connection),
            (Body::UntilClose(4), Connection::Close)
        );
    }

    #[test]
    fn events_replace_only_the_successful_default_body() {
        let sse = Sse {
            events: 3,
            first: ms(20),
            gap: ms(50),
        };
        let streaming = Defaults {
            sse: Some(sse),
            ..PLAIN
        };
        let stream = Body::Events { sse, chunked: true };
        for route in [
            Route::Default,
            Route::Delay(ms(1)),
            Route::Close,
            Route::Status(200),
        ] {
            let Reply::Send(r) = reply_for(ask(route), streaming) else {
                panic!("{route:?}")
            };
            assert_eq!((r.status, r.body), (200, stream), "{route:?}");
        }
        for route in [
            Route::Status(503),
            Route::Bytes(4),
            Route::Chunked,
            Route::Eof,
        ] {
            let reply = reply_for(ask(route), streaming);
            let plain = reply_for(ask(route), PLAIN);
            assert_eq!(reply, plain, "{route:?}");
        }
        let faulty = Ask {
            fault: Some(Fault::Trickle),
            ..ask(Route::Default)
        };
        assert_eq!(reply_for(faulty, streaming), reply_for(faulty, PLAIN));
        let old = Ask {
            http10: true,
            ..ask(Route::Default)
        };
        let Reply::Send(r) = reply_for(old, streaming) else {
            panic!()
        };
        let unchunked = Body::Events {
            sse,
            chunked: false,
        };
        assert_eq!((r.body, r.connection), (unchunked, Connection::Close));
    }
}
