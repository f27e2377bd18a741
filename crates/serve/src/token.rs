//! Login tokens: what `/login` hands out and `/private` asks for, so that
//! a load test can chain requests (log in, take the token, use it).
//!
//! A token is `t<n>.<sig>`: `n` counts the logins of this server and `sig`
//! is 16 hex digits of a keyed hash (SipHash, through the standard
//! library's [`RandomState`]) of `n`, under a key drawn when the server
//! starts. Any task on any thread checks a token by hashing its `n` again,
//! so no map of issued tokens is shared, locked or grown, and a token from
//! another run (or another server) does not pass. Tokens never expire. The
//! hash keeps a client from guessing a token, which is all a test target
//! needs; it is no defence against an attacker.
//!
//! A request presents a token as `Authorization: Bearer <t>` or as a
//! `metron_token=<t>` cookie; [`Key::admits`] finds and checks it in the
//! header fields without allocating, and only for `/private`.

use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The cookie that carries a token.
pub(crate) const COOKIE_NAME: &str = "metron_token";
/// Hex digits of a token's signature: a whole `u64`, always this many.
const SIG_DIGITS: usize = 16;
/// Longest token: `t`, a `u64` in decimal, `.` and the signature.
const MAX_LEN: usize = 1 + 20 + 1 + SIG_DIGITS;

/// A token as sent, signed or forged: `t<n>.<sig>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Token {
    n: u64,
    sig: u64,
}

impl Token {
    /// Reads a token, with nothing before or after it.
    pub(crate) fn parse(text: &[u8]) -> Option<Token> {
        let rest = text.strip_prefix(b"t")?;
        let dot = rest.iter().position(|&b| b == b'.')?;
        let (n, sig) = (&rest[..dot], &rest[dot + 1..]);
        if n.is_empty() || sig.len() != SIG_DIGITS {
            return None;
        }
        let n = n.iter().try_fold(0u64, |acc, &b| {
            let digit = char::from(b).to_digit(10)?;
            acc.checked_mul(10)?.checked_add(u64::from(digit))
        })?;
        let sig = sig.iter().try_fold(0u64, |acc, &b| {
            let digit = char::from(b).to_digit(16)?;
            Some(acc << 4 | u64::from(digit))
        })?;
        Some(Token { n, sig })
    }

    /// The token's text, kept on the stack: the head of an HTTP/1.1
    /// response is written from it without an allocation.
    pub(crate) fn text(&self) -> Text {
        let mut text = Text {
            bytes: [0; MAX_LEN],
            len: 0,
        };
        // The longest token fits, so writing cannot fail.
        let _ = fmt::Write::write_fmt(&mut text, format_args!("{self}"));
        text
    }

    /// The `/login` body: `{"token":"<t>"}`.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"token\":\"");
        out.extend_from_slice(self.text().as_bytes());
        out.extend_from_slice(b"\"}");
    }

    /// Length of the [`Token::write_json`] body.
    pub(crate) fn json_len(&self) -> u64 {
        (self.text().len + 12) as u64
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}.{:0width$x}", self.n, self.sig, width = SIG_DIGITS)
    }
}

/// A token's text in a buffer of its own (see [`Token::text`]).
#[derive(Clone, Copy)]
pub(crate) struct Text {
    bytes: [u8; MAX_LEN],
    len: usize,
}

impl Text {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII is ever written.
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

impl fmt::Write for Text {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let room = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The token of an `Authorization: Bearer <t>` value; other schemes
/// carry none.
fn bearer(value: &[u8]) -> Option<Token> {
    let value = value.trim_ascii();
    let at = value.iter().position(|&b| b == b' ' || b == b'\t')?;
    let (scheme, rest) = value.split_at(at);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    Token::parse(rest.trim_ascii())
}

/// The tokens of a `Cookie` value's `metron_token` cookies.
fn cookies(value: &[u8]) -> impl Iterator<Item = Token> + '_ {
    value.split(|&b| b == b';').filter_map(|pair| {
        let eq = pair.iter().position(|&b| b == b'=')?;
        let (name, value) = (&pair[..eq], &pair[eq + 1..]);
        if name.trim_ascii() != COOKIE_NAME.as_bytes() {
            return None;
        }
        // A cookie value may be quoted.
        let value = value.trim_ascii();
        let unquoted = value
            .strip_prefix(b"\"")
            .and_then(|v| v.strip_suffix(b"\""));
        Token::parse(unquoted.unwrap_or(value))
    })
}

/// The key tokens are signed with. A connection keeps a copy, so that a
/// request's head is checked while it is at hand, before its bytes go.
#[derive(Clone, Debug, Default)]
pub(crate) struct Key(RandomState);

impl Key {
    fn sign(&self, n: u64) -> u64 {
        self.0.hash_one(n)
    }

    /// Whether this key signed `token`.
    pub(crate) fn signed(&self, token: Token) -> bool {
        token.sig == self.sign(token.n)
    }

    /// Whether a request with these header `fields` (name and value)
    /// holds a token this key signed, in `Authorization: Bearer <t>` or
    /// in a `metron_token` cookie. Every field is looked at, so a stale
    /// cookie beside a fresh one still passes, and HTTP/2 and HTTP/3
    /// clients may split `Cookie` into several fields. Nothing is
    /// allocated.
    pub(crate) fn admits<'a>(&self, fields: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> bool {
        fields.into_iter().any(|(name, value)| {
            if name.eq_ignore_ascii_case("authorization") {
                bearer(value).is_some_and(|t| self.signed(t))
            } else if name.eq_ignore_ascii_case("cookie") {
                cookies(value).any(|t| self.signed(t))
            } else {
                false
            }
        })
    }
}

/// What a request's token comes to, for the routes that care.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Pass {
    /// No token this server signed: the request is not logged in.
    #[default]
    Anonymous,
    /// A token this server signed.
    Valid,
    /// `/login`: the token minted for its answer.
    Minted(Token),
}

/// The server's side of tokens: the key they are signed with and the
/// count of logins, shared by every connection.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
    key: Key,
    minted: AtomicU64,
}

impl Tokens {
    pub(crate) fn key(&self) -> &Key {
        &self.key
    }

    /// A new token, never handed out before by this server.
    pub(crate) fn mint(&self) -> Token {
        let n = self.minted.fetch_add(1, Relaxed) + 1;
        Token {
            n,
            sig: self.key.sign(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `/private` with these header fields passes with `tokens`.
    fn private(tokens: &Tokens, fields: &[(&str, &str)]) -> Pass {
        let fields = fields.iter().map(|(n, v)| (*n, v.as_bytes()));
        if tokens.key().admits(fields) {
            Pass::Valid
        } else {
            Pass::Anonymous
        }
    }

    #[test]
    fn tokens_read_back_as_written() {
        let tokens = Tokens::default();
        let first = tokens.mint();
        assert_eq!(first.n, 1);
        let text = first.to_string();
        assert_eq!(first.text().as_str(), text);
        assert!(text.starts_with("t1.") && text.len() == 3 + SIG_DIGITS);
        assert_eq!(Token::parse(text.as_bytes()), Some(first));
        let mut json = Vec::new();
        first.write_json(&mut json);
        assert_eq!(json, format!("{{\"token\":\"{text}\"}}").into_bytes());
        assert_eq!(json.len() as u64, first.json_len());
        let longest = Token {
            n: u64::MAX,
            sig: u64::MAX,
        };
        assert_eq!(longest.text().as_bytes().len(), MAX_LEN);
        assert_eq!(Token::parse(longest.text().as_bytes()), Some(longest));
    }

    #[test]
    fn only_signed_tokens_pass() {
        let tokens = Tokens::default();
        let token = tokens.mint();
        assert!(tokens.key().signed(token));
        let forged = Token {
            sig: token.sig ^ 1,
            ..token
        };
        assert!(!tokens.key().signed(forged));
        let next = Token {
            n: token.n + 1,
            ..token
        };
        assert!(!tokens.key().signed(next), "a signature is for its own n");
        let other = Tokens::default();
        assert!(!other.key().signed(token), "another key, another sig");
    }

    #[test]
    fn malformed_tokens_are_not_tokens() {
        for text in [
            "",
            "t",
            "t.0123456789abcdef",
            "1.0123456789abcdef",
            "t1.0123456789abcde",
            "t1.0123456789abcdef0",
            "t1.0123456789abcdeg",
            "t1x.0123456789abcdef",
            "t+1.0123456789abcdef",
            "t99999999999999999999.0123456789abcdef",
            " t1.0123456789abcdef",
        ] {
            assert_eq!(Token::parse(text.as_bytes()), None, "{text:?}");
        }
    }

    #[test]
    fn tokens_are_found_in_bearer_headers_and_cookies() {
        let tokens = Tokens::default();
        let token = tokens.mint().to_string();
        let pass = |fields: &[(&str, &str)]| private(&tokens, fields);
        assert_eq!(
            pass(&[("Authorization", &format!("Bearer {token}"))]),
            Pass::Valid
        );
        let spaced = format!("  bearer\t{token} ");
        assert_eq!(pass(&[("authorization", &spaced)]), Pass::Valid);
        let stale = format!("a=b; {COOKIE_NAME}=t9.0000000000000000; {COOKIE_NAME}={token}");
        assert_eq!(pass(&[("Cookie", &stale)]), Pass::Valid);
        let quoted = format!("{COOKIE_NAME}=\"{token}\"");
        assert_eq!(pass(&[("cookie", &quoted)]), Pass::Valid);
        let split = [
            ("cookie", "a=b"),
            ("cookie", &format!("{COOKIE_NAME}={token}")),
        ];
        assert_eq!(pass(&split), Pass::Valid);
        let forged = format!("Bearer {}", &token[..token.len() - 1]);
        let cookie = format!("{COOKIE_NAME}={token}");
        let both = [("authorization", forged.as_str()), ("cookie", &cookie)];
        assert_eq!(pass(&both), Pass::Valid, "one good token is enough");
        assert_eq!(pass(&[("authorization", &forged)]), Pass::Anonymous);
        assert_eq!(
            pass(&[("authorization", &format!("Basic {token}"))]),
            Pass::Anonymous
        );
        let other = format!("x{COOKIE_NAME}={token}; {COOKIE_NAME}x={token}");
        assert_eq!(pass(&[("cookie", &other)]), Pass::Anonymous);
        assert_eq!(pass(&[("x-token", &token)]), Pass::Anonymous);
        assert_eq!(pass(&[]), Pass::Anonymous);
    }
}
