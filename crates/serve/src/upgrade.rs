//! What a request for a WebSocket endpoint (`--ws`) asks: the endpoint,
//! its knobs from the query, and whether the head is an upgrade RFC 6455
//! lets a server take (section 4.2.1). The answer is one of two heads: the
//! `101` with its accept key, or a `400` whose body names what was wrong,
//! in one line.
//!
//! The endpoints and their query parameters:
//!
//! - `/ws/echo` (and any path under it): each message back, same opcode.
//!   `delay=MS` holds every echo back that long after its message came,
//!   on top of `--delay`.
//! - `/ws/push`: messages on the timetable `--sse` gives event streams,
//!   in its words: `events=N` messages (`event 1` to `event N`), the
//!   first `first=MS` after the upgrade, then one every `gap=MS`; then a
//!   close with 1000. Unset, they are `--sse`, `--sse-first` and
//!   `--sse-gap` (or their defaults, with [`PUSH_EVENTS`] messages).
//! - On both, `close=CODE` makes the server close with CODE after
//!   `after=N` messages sent (on `/ws/echo` 0 unless given: at once; on
//!   `/ws/push`, all of them).
//!
//! Milliseconds may be fractional, as `/delay/MS`'s are, and both they
//! and counts go up to `u64::MAX`. A parameter an endpoint does not take,
//! one given twice, or a value it cannot use, refuses the upgrade: a test
//! that asked for something gets it or hears why not.

use std::time::Duration;

use super::config::{Sse, SSE_FIRST, SSE_GAP};
use super::route::{parse_millis, path_of};

/// Messages a `/ws/push` sends when neither `events=N` nor `--sse` says.
pub const PUSH_EVENTS: u64 = 10;
/// The only version of the protocol there is (RFC 6455 section 4.1).
const VERSION: &str = "13";

/// Which endpoint a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Echo,
    Push,
}

impl Endpoint {
    /// The endpoint `target` names, if it names one.
    pub(crate) fn of(target: &str) -> Option<Endpoint> {
        let path = path_of(target);
        let under = |base: &str| {
            path.strip_prefix(base)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        if under("/ws/echo") {
            Some(Endpoint::Echo)
        } else if under("/ws/push") {
            Some(Endpoint::Push)
        } else {
            None
        }
    }

    fn path(self) -> &'static str {
        match self {
            Endpoint::Echo => "/ws/echo",
            Endpoint::Push => "/ws/push",
        }
    }

    /// The query parameters it takes, as its refusals list them.
    fn takes(self) -> &'static str {
        match self {
            Endpoint::Echo => "delay, close, after",
            Endpoint::Push => "events, first, gap, close, after",
        }
    }
}

/// What an upgraded connection does: small and `Copy`, so that it travels
/// in how the HTTP/1.1 loop ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub endpoint: Endpoint,
    /// Each echo waits this long after its message came (`delay=MS`), on
    /// top of `--delay`.
    pub delay: Duration,
    /// `/ws/push`'s messages and when each is due, from the upgrade.
    pub push: Sse,
    /// The server closes with this code once it has sent this many
    /// messages (`close=CODE`, `after=N`). A push without `close=` closes
    /// with 1000 after its last message.
    pub close: Option<(u16, u64)>,
}

/// A request for a WebSocket endpoint, answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Upgrade {
    /// Take it: the `101`'s `Sec-WebSocket-Accept`, and what to do then.
    Accept { accept: String, plan: Plan },
    /// Refuse it with a 400 whose body is this one line; `version` adds
    /// the `Sec-WebSocket-Version: 13` a client with another needs.
    Refuse { why: String, version: bool },
}

impl Upgrade {
    /// The answer to a request for `target` whose head is `method`,
    /// `http10` and `fields`, or `None` if `target` is no WebSocket
    /// endpoint. `sse`: the server's `--sse` timetable, the push's
    /// defaults.
    pub(crate) fn of<'a>(
        method: &str,
        http10: bool,
        target: &str,
        fields: impl Iterator<Item = (&'a str, &'a [u8])>,
        sse: Option<Sse>,
    ) -> Option<Upgrade> {
        let endpoint = Endpoint::of(target)?;
        let refuse = |why: String| Upgrade::Refuse {
            why,
            version: false,
        };
        if method != "GET" {
            return Some(refuse(format!(
                "a WebSocket upgrade is a GET, not {method}"
            )));
        }
        if http10 {
            return Some(refuse(
                "a WebSocket upgrade needs HTTP/1.1, not HTTP/1.0".into(),
            ));
        }
        let fields = Fields::of(fields);
        // HTTP/1.1 requires exactly one Host (RFC 9112 section 3.2).
        match fields.hosts {
            0 => {
                return Some(refuse(
                    "the request has no Host field, which HTTP/1.1 requires".into(),
                ))
            }
            1 => {}
            _ => return Some(refuse("the request has more than one Host field".into())),
        }
        if !fields.upgrade {
            return Some(refuse(format!(
                "{} serves WebSocket only: the request has no Upgrade: websocket",
                endpoint.path()
            )));
        }
        if !fields.connection {
            return Some(refuse(
                "the request has Upgrade: websocket but no Connection: Upgrade".into(),
            ));
        }
        match fields.version.as_deref() {
            Some(VERSION) => {}
            Some(other) => {
                return Some(Upgrade::Refuse {
                    why: format!("Sec-WebSocket-Version is {other}; this server speaks 13"),
                    version: true,
                })
            }
            None => {
                return Some(Upgrade::Refuse {
                    why: "the request has no Sec-WebSocket-Version (13)".into(),
                    version: true,
                })
            }
        }
        let key = match fields.keys.as_slice() {
            [key] if metron_ws::key_is_valid(key) => key,
            [] => return Some(refuse("the request has no Sec-WebSocket-Key".into())),
            [_] => return Some(refuse("Sec-WebSocket-Key is not 16 bytes in base64".into())),
            _ => {
                return Some(refuse(
                    "the request has more than one Sec-WebSocket-Key".into(),
                ))
            }
        };
        Some(match plan(endpoint, target, sse) {
            Ok(plan) => Upgrade::Accept {
                accept: metron_ws::accept_for(key),
                plan,
            },
            Err(why) => refuse(why),
        })
    }

    /// The answer's bytes: the `101`, or the `400` (which closes).
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        match self {
            Upgrade::Accept { accept, .. } => out.extend_from_slice(
                format!(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                )
                .as_bytes(),
            ),
            Upgrade::Refuse { why, version } => {
                let body = format!("{why}\n");
                let version = if *version {
                    "Sec-WebSocket-Version: 13\r\n"
                } else {
                    ""
                };
                out.extend_from_slice(
                    format!(
                        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{version}Connection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
            }
        }
    }
}

/// The fields of an upgrade request that matter.
#[derive(Debug, Default)]
struct Fields {
    /// `Upgrade` names `websocket`.
    upgrade: bool,
    /// `Connection` names `Upgrade`.
    connection: bool,
    version: Option<String>,
    /// Every `Sec-WebSocket-Key`: there must be one.
    keys: Vec<String>,
    /// How many `Host` fields: there must be one.
    hosts: usize,
}

impl Fields {
    fn of<'a>(fields: impl Iterator<Item = (&'a str, &'a [u8])>) -> Fields {
        let has = |value: &[u8], token: &[u8]| {
            value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
        };
        let text = |value: &[u8]| String::from_utf8_lossy(value.trim_ascii()).into_owned();
        let mut seen = Fields::default();
        for (name, value) in fields {
            if name.eq_ignore_ascii_case("upgrade") {
                seen.upgrade |= has(value, b"websocket");
            } else if name.eq_ignore_ascii_case("connection") {
                seen.connection |= has(value, b"upgrade");
            } else if name.eq_ignore_ascii_case("sec-websocket-version") {
                seen.version = Some(text(value));
            } else if name.eq_ignore_ascii_case("sec-websocket-key") {
                seen.keys.push(text(value));
            } else if name.eq_ignore_ascii_case("host") {
                seen.hosts += 1;
            }
        }
        seen
    }
}

/// The plan a query asks of `endpoint`, or why it cannot be followed.
fn plan(endpoint: Endpoint, target: &str, sse: Option<Sse>) -> Result<Plan, String> {
    let query = target.split_once('?').map_or("", |(_, q)| q);
    let query = query.split('#').next().unwrap_or("");
    let mut plan = Plan {
        endpoint,
        delay: Duration::ZERO,
        push: sse.unwrap_or(Sse {
            events: PUSH_EVENTS,
            first: SSE_FIRST,
            gap: SSE_GAP,
        }),
        close: None,
    };
    let (mut code, mut after) = (None, None);
    // Each name read so far, with its value: one given twice is refused
    // rather than one of the two silently winning.
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if let Some((_, first)) = seen.iter().find(|(seen, _)| *seen == name) {
            return Err(format!(
                "{name}= is given twice ({name}={first}, {name}={value}): give it once"
            ));
        }
        seen.push((name, value));
        let millis = || millis(name, value);
        let count = || count(name, value);
        match (endpoint, name) {
            (Endpoint::Echo, "delay") => plan.delay = millis()?,
            (Endpoint::Push, "events") => plan.push.events = count()?,
            (Endpoint::Push, "first") => plan.push.first = millis()?,
            (Endpoint::Push, "gap") => plan.push.gap = millis()?,
            (_, "close") => code = Some(close_code(value)?),
            (_, "after") => after = Some(count()?),
            _ => {
                return Err(format!(
                    "{} takes no {name}=; it takes {}",
                    endpoint.path(),
                    endpoint.takes()
                ))
            }
        }
    }
    if plan.push.events == 0 {
        return Err("events=0 pushes nothing: ask for at least 1".into());
    }
    plan.close = match (code, after) {
        (Some(code), Some(after)) => Some((code, after)),
        (Some(code), None) if endpoint == Endpoint::Push => Some((code, plan.push.events)),
        (Some(code), None) => Some((code, 0)),
        (None, Some(_)) => {
            return Err("after=N needs close=CODE, the code to close with".into());
        }
        (None, None) => None,
    };
    Ok(plan)
}

/// `value` as the milliseconds of `name=`: fractional ones too, at most
/// `u64::MAX` of them.
fn millis(name: &str, value: &str) -> Result<Duration, String> {
    let too_many = value
        .parse::<f64>()
        .is_ok_and(|ms| ms.is_finite() && ms > u64::MAX as f64);
    if too_many {
        return Err(format!(
            "{name}={value} is more milliseconds than 64 bits hold: pick at most {}",
            u64::MAX
        ));
    }
    parse_millis(value).ok_or_else(|| format!("{name}={value} is not a number of milliseconds"))
}

/// `value` as the count of `name=`: plain digits, at most `u64::MAX`.
fn count(name: &str, value: &str) -> Result<u64, String> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{name}={value} is not a count"));
    }
    value.parse::<u64>().map_err(|_| {
        format!(
            "{name}={value} is more than 64 bits hold: pick at most {}",
            u64::MAX
        )
    })
}

/// A code the server may close with (`close=CODE`).
fn close_code(value: &str) -> Result<u16, String> {
    match value.parse::<u16>() {
        Ok(code) if metron_ws::sendable(code) => Ok(code),
        _ => Err(format!(
            "close={value} is no code a close frame may carry: pick 1000-1003, 1007-1014 or 3000-4999"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    fn fields(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static [u8])> {
        let mut all = vec![
            ("Host", "x".as_bytes()),
            ("Upgrade", "websocket".as_bytes()),
            ("Connection", "keep-alive, Upgrade".as_bytes()),
            ("Sec-WebSocket-Key", KEY.as_bytes()),
            ("Sec-WebSocket-Version", "13".as_bytes()),
        ];
        for (name, value) in extra {
            all.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            if !value.is_empty() {
                all.push((name, value.as_bytes()));
            }
        }
        all
    }

    fn answer(target: &str, extra: &[(&'static str, &'static str)]) -> Option<Upgrade> {
        let f = fields(extra);
        Upgrade::of("GET", false, target, f.into_iter(), None)
    }

    fn refusal(target: &str, extra: &[(&'static str, &'static str)]) -> String {
        match answer(target, extra) {
            Some(Upgrade::Refuse { why, .. }) => why,
            other => panic!("{target} {extra:?}: {other:?}"),
        }
    }

    #[test]
    fn only_the_endpoints_paths_are_upgrades() {
        assert_eq!(Endpoint::of("/ws/echo"), Some(Endpoint::Echo));
        assert_eq!(Endpoint::of("/ws/echo/room/1?x"), Some(Endpoint::Echo));
        assert_eq!(Endpoint::of("/ws/push?events=3"), Some(Endpoint::Push));
        assert_eq!(Endpoint::of("/ws/echoes"), None);
        assert_eq!(Endpoint::of("/ws"), None);
        assert_eq!(Endpoint::of("/"), None);
        assert_eq!(answer("/status/200", &[]), None);
    }

    /// RFC 6455 section 1.3's key gets its accept, in a 101 that says
    /// nothing more.
    #[test]
    fn a_good_upgrade_is_taken() {
        let Some(upgrade @ Upgrade::Accept { .. }) = answer("/ws/echo", &[]) else {
            panic!()
        };
        let mut out = Vec::new();
        upgrade.write(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        );
        assert!(matches!(
            answer("/ws/echo", &[("Upgrade", "WebSocket")]),
            Some(Upgrade::Accept { .. })
        ));
    }

    #[test]
    fn a_bad_upgrade_is_refused_naming_why() {
        let f = fields(&[]);
        let post = Upgrade::of("POST", false, "/ws/echo", f.clone().into_iter(), None);
        let old = Upgrade::of("GET", true, "/ws/echo", f.into_iter(), None);
        let cases = [
            (post, "a WebSocket upgrade is a GET, not POST"),
            (old, "a WebSocket upgrade needs HTTP/1.1, not HTTP/1.0"),
        ];
        for (upgrade, want) in cases {
            let Some(Upgrade::Refuse { why, .. }) = upgrade else {
                panic!()
            };
            assert_eq!(why, want);
        }
        assert_eq!(
            refusal("/ws/echo", &[("Host", "")]),
            "the request has no Host field, which HTTP/1.1 requires"
        );
        let mut hosts = fields(&[]);
        hosts.push(("host", "y".as_bytes()));
        let twice = Upgrade::of("GET", false, "/ws/echo", hosts.into_iter(), None);
        assert!(
            matches!(twice, Some(Upgrade::Refuse { why, .. }) if why == "the request has more than one Host field")
        );
        assert_eq!(
            refusal("/ws/push", &[("Upgrade", "")]),
            "/ws/push serves WebSocket only: the request has no Upgrade: websocket"
        );
        assert_eq!(
            refusal("/ws/echo", &[("Upgrade", "h2c")]),
            "/ws/echo serves WebSocket only: the request has no Upgrade: websocket"
        );
        assert_eq!(
            refusal("/ws/echo", &[("Connection", "keep-alive")]),
            "the request has Upgrade: websocket but no Connection: Upgrade"
        );
        assert_eq!(
            refusal("/ws/echo", &[("Sec-WebSocket-Key", "")]),
            "the request has no Sec-WebSocket-Key"
        );
        assert_eq!(
            refusal("/ws/echo", &[("Sec-WebSocket-Key", "c2hvcnQ=")]),
            "Sec-WebSocket-Key is not 16 bytes in base64"
        );
        assert_eq!(
            refusal("/ws/echo", &[("Sec-WebSocket-Version", "8")]),
            "Sec-WebSocket-Version is 8; this server speaks 13"
        );
        let Some(old_version) = answer("/ws/echo", &[("Sec-WebSocket-Version", "8")]) else {
            panic!()
        };
        let mut out = Vec::new();
        old_version.write(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
        assert!(text.contains("\r\nSec-WebSocket-Version: 13\r\n"), "{text}");
        assert!(text.contains("\r\nConnection: close\r\n"), "{text}");
        assert!(
            text.ends_with("\r\n\r\nSec-WebSocket-Version is 8; this server speaks 13\n"),
            "{text}"
        );
        let mut two = fields(&[]);
        two.push(("sec-websocket-key", KEY.as_bytes()));
        let twice = Upgrade::of("GET", false, "/ws/echo", two.into_iter(), None);
        assert!(
            matches!(twice, Some(Upgrade::Refuse { why, .. }) if why.contains("more than one"))
        );
    }

    #[test]
    fn queries_set_the_knobs_and_bad_ones_are_refused() {
        let plan = |target: &str| match answer(target, &[]) {
            Some(Upgrade::Accept { plan, .. }) => plan,
            other => panic!("{target}: {other:?}"),
        };
        let ms = Duration::from_millis;
        let echo = plan("/ws/echo?delay=2.5&close=1011&after=3");
        assert_eq!(echo.delay, Duration::from_micros(2500));
        assert_eq!(echo.close, Some((1011, 3)));
        assert_eq!(plan("/ws/echo?close=4000").close, Some((4000, 0)));
        assert_eq!(plan("/ws/echo").close, None);
        let longest = plan("/ws/echo?delay=18446744073709551615").delay;
        assert!(
            longest >= Duration::from_secs(u64::MAX / 1000),
            "{longest:?}"
        );
        let push = plan("/ws/push?events=3&first=20&gap=50");
        assert_eq!(
            push.push,
            Sse {
                events: 3,
                first: ms(20),
                gap: ms(50)
            }
        );
        assert_eq!(push.close, None);
        assert_eq!(plan("/ws/push?events=5&close=1001").close, Some((1001, 5)));
        let defaults = plan("/ws/push").push;
        assert_eq!(
            (defaults.events, defaults.first, defaults.gap),
            (PUSH_EVENTS, SSE_FIRST, SSE_GAP)
        );
        let sse = Sse {
            events: 4,
            first: ms(1),
            gap: ms(2),
        };
        let f = fields(&[]);
        let Some(Upgrade::Accept {
            plan: from_flags, ..
        }) = Upgrade::of("GET", false, "/ws/push", f.into_iter(), Some(sse))
        else {
            panic!()
        };
        assert_eq!(from_flags.push, sse, "--sse's timetable is the default");
        for (target, want) in [
            (
                "/ws/echo?events=3",
                "/ws/echo takes no events=; it takes delay, close, after",
            ),
            (
                "/ws/push?delay=3",
                "/ws/push takes no delay=; it takes events, first, gap, close, after",
            ),
            ("/ws/echo?delay=soon", "delay=soon is not a number of milliseconds"),
            ("/ws/push?gap=-1", "gap=-1 is not a number of milliseconds"),
            ("/ws/push?events=+3", "events=+3 is not a count"),
            ("/ws/push?events=0", "events=0 pushes nothing: ask for at least 1"),
            (
                "/ws/echo?close=1005",
                "close=1005 is no code a close frame may carry: pick 1000-1003, 1007-1014 or 3000-4999",
            ),
            (
                "/ws/echo?after=2",
                "after=N needs close=CODE, the code to close with",
            ),
            (
                "/ws/push?events=3&events=5",
                "events= is given twice (events=3, events=5): give it once",
            ),
            (
                "/ws/echo?delay=1&close=1000&delay=1",
                "delay= is given twice (delay=1, delay=1): give it once",
            ),
            (
                "/ws/echo?delay=99999999999999999999",
                "delay=99999999999999999999 is more milliseconds than 64 bits hold: pick at most 18446744073709551615",
            ),
            (
                "/ws/push?first=99999999999999999999",
                "first=99999999999999999999 is more milliseconds than 64 bits hold: pick at most 18446744073709551615",
            ),
            (
                "/ws/push?gap=1e300",
                "gap=1e300 is more milliseconds than 64 bits hold: pick at most 18446744073709551615",
            ),
            (
                "/ws/push?events=99999999999999999999",
                "events=99999999999999999999 is more than 64 bits hold: pick at most 18446744073709551615",
            ),
            ("/ws/push?events=", "events= is not a count"),
        ] {
            assert_eq!(refusal(target, &[]), want, "{target}");
            assert!(!want.contains('\n'));
        }
    }
}
