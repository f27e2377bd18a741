//! `decode`: JSON text to a Lua value, as lua-cjson 2.1 reads it.
//!
//! - `null` is `cjson.null`; arrays and objects are plain tables (arrays
//!   get `array_mt` when `decode_array_with_array_mt` is on); a repeated
//!   key keeps its last value.
//! - Strings pass their bytes through; escapes, `\uXXXX` and surrogate
//!   pairs included, become UTF-8. The text ends at its first NUL byte, as
//!   it does for the original's C string.
//! - With `decode_invalid_numbers` on (the default), numbers are whatever
//!   C's `strtod` reads: `+1`, `0x10`, `012`, `NaN`, `Infinity`; off, only
//!   JSON's own forms.
//! - Errors say what was expected, what was found (a token name such as
//!   `T_END`, or what is wrong with it) and at which character (from 1).

use mlua::{Lua, Table, Value};

use super::config::Config;
use super::number::{starts_with_ci, strtod};
use super::{array_mt, lua_error, NESTING_LIMIT};

/// The Lua value `text` holds, or lua-cjson's message for why it holds none.
pub(super) fn decode(lua: &Lua, config: &Config, text: &[u8]) -> Result<Value, String> {
    if text.len() >= 2 && (text[0] == 0 || text[1] == 0) {
        return Err("JSON parser does not support UTF-16 or UTF-32".into());
    }
    // The original reads a C string: the first NUL ends the text.
    let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    let mut parser = Parser {
        lua,
        config,
        data: &text[..end],
        pos: 0,
        max_depth: config.decode_max_depth.min(NESTING_LIMIT),
        array_mt: match config.array_mt_on_decode {
            true => Some(array_mt(lua).map_err(lua_error)?),
            false => None,
        },
        scratch: Vec::new(),
    };
    let value = parser.run()?;
    let token = parser.next_token();
    match token.kind {
        Kind::End => Ok(value),
        _ => Err(parse_error("the end", &token)),
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    /// The text is in the parser's scratch buffer.
    Str,
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    /// What is wrong with the text here.
    Error(&'static str),
}

#[derive(Clone, Copy, Debug)]
struct Token {
    kind: Kind,
    /// Offset in the text, from 0.
    index: usize,
}

/// What a found token is called in messages.
fn describe(kind: Kind) -> &'static str {
    match kind {
        Kind::ObjBegin => "T_OBJ_BEGIN",
        Kind::ObjEnd => "T_OBJ_END",
        Kind::ArrBegin => "T_ARR_BEGIN",
        Kind::ArrEnd => "T_ARR_END",
        Kind::Str => "T_STRING",
        Kind::Number(_) => "T_NUMBER",
        Kind::Boolean(_) => "T_BOOLEAN",
        Kind::Null => "T_NULL",
        Kind::Colon => "T_COLON",
        Kind::Comma => "T_COMMA",
        Kind::End => "T_END",
        Kind::Error(why) => why,
    }
}

fn parse_error(expected: &str, token: &Token) -> String {
    let found = describe(token.kind);
    format!(
        "Expected {expected} but found {found} at character {}",
        token.index + 1
    )
}

struct Parser<'a> {
    lua: &'a Lua,
    config: &'a Config,
    data: &'a [u8],
    pos: usize,
    /// The setting, capped where lua-cjson would run out of Lua stack.
    max_depth: i64,
    array_mt: Option<Table>,
    /// The current string token's bytes.
    scratch: Vec<u8>,
}

impl Parser<'_> {
    /// The byte at `i`; 0 past the end, as after a C string.
    fn byte(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn rest(&self) -> &[u8] {
        &self.data[self.pos.min(self.data.len())..]
    }

    fn error_here(&self, why: &'static str) -> Token {
        Token {
            kind: Kind::Error(why),
            index: self.pos,
        }
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.byte(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let index = self.pos;
        let single = match self.byte(self.pos) {
            0 => {
                return Token {
                    kind: Kind::End,
                    index,
                }
            }
            b'{' => Some(Kind::ObjBegin),
            b'}' => Some(Kind::ObjEnd),
            b'[' => Some(Kind::ArrBegin),
            b']' => Some(Kind::ArrEnd),
            b',' => Some(Kind::Comma),
            b':' => Some(Kind::Colon),
            _ => None,
        };
        if let Some(kind) = single {
            self.pos += 1;
            return Token { kind, index };
        }
        match self.byte(self.pos) {
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => {
                if !self.config.decode_invalid && self.invalid_number() {
                    return self.error_here("invalid number");
                }
                self.number()
            }
            _ => self.word(index),
        }
    }

    /// `true`, `false`, `null`, or (when allowed) a number JSON has not.
    fn word(&mut self, index: usize) -> Token {
        let rest = self.rest();
        let known = [
            (&b"true"[..], Kind::Boolean(true)),
            (b"false", Kind::Boolean(false)),
            (b"null", Kind::Null),
        ];
        for (word, kind) in known {
            if rest.starts_with(word) {
                self.pos += word.len();
                return Token { kind, index };
            }
        }
        if self.config.decode_invalid && self.invalid_number() {
            return self.number();
        }
        self.error_here("invalid token")
    }

    /// Whether the number here is one JSON does not allow: a leading `+`,
    /// `0x`, a leading zero, `inf` or `nan`. Others may still be malformed;
    /// reading them finds out.
    fn invalid_number(&self) -> bool {
        let rest = self.rest();
        let mut p = 0;
        match rest.first() {
            Some(b'+') => return true,
            Some(b'-') => p = 1,
            _ => {}
        }
        let rest = &rest[p.min(rest.len())..];
        match rest.first().copied().unwrap_or(0) {
            b'0' => matches!(rest.get(1), Some(b'x' | b'X' | b'0'..=b'9')),
            c if c <= b'9' => false,
            _ => starts_with_ci(rest, b"inf") || starts_with_ci(rest, b"nan"),
        }
    }

    fn number(&mut self) -> Token {
        match strtod(self.rest()) {
            Some((n, len)) => {
                let index = self.pos;
                self.pos += len;
                Token {
                    kind: Kind::Number(n),
                    index,
                }
            }
            None => self.error_here("invalid number"),
        }
    }

    fn string(&mut self) -> Token {
        let index = self.pos;
        self.pos += 1;
        self.scratch.clear();
        loop {
            let c = self.byte(self.pos);
            match c {
                b'"' => break,
                0 => return self.error_here("unexpected end of string"),
                b'\\' => {
                    let unescaped = match self.byte(self.pos + 1) {
                        c @ (b'"' | b'\\' | b'/') => c,
                        b'b' => b'\x08',
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => b'\x0c',
                        b'r' => b'\r',
                        b'u' => match self.unicode_escape() {
                            Some(()) => continue,
                            None => return self.error_here("invalid unicode escape code"),
                        },
                        _ => return self.error_here("invalid escape code"),
                    };
                    self.scratch.push(unescaped);
                    self.pos += 2;
                }
                _ => {
                    self.scratch.push(c);
                    self.pos += 1;
                }
            }
        }
        self.pos += 1;
        Token {
            kind: Kind::Str,
            index,
        }
    }

    /// Four hex digits at `i` as a number.
    fn hex4(&self, i: usize) -> Option<u32> {
        (i..i + 4).try_fold(0, |n, j| {
            Some(n * 16 + (self.byte(j) as char).to_digit(16)?)
        })
    }

    /// `\uXXXX` (or a surrogate pair of them) at the position, as UTF-8.
    fn unicode_escape(&mut self) -> Option<()> {
        let mut code = self.hex4(self.pos + 2)?;
        let mut len = 6;
        if code & 0xf800 == 0xd800 {
            // A high surrogate must come first, and a low one right after.
            let second = self.pos + 6;
            let is_escape = self.byte(second) == b'\\' && self.byte(second + 1) == b'u';
            if code & 0x400 != 0 || !is_escape {
                return None;
            }
            let low = self.hex4(second + 2)?;
            if low & 0xfc00 != 0xdc00 {
                return None;
            }
            code = (((code & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
            len = 12;
        }
        let c = char::from_u32(code)?;
        let mut buf = [0; 4];
        self.scratch
            .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        self.pos += len;
        Some(())
    }

    /// Reads one value, containers and all. Containers being read nest on
    /// a stack rather than on Rust's call stack, which a worker thread has
    /// little of.
    fn run(&mut self) -> Result<Value, String> {
        let mut open: Vec<Open> = Vec::new();
        let mut token = self.next_token();
        loop {
            // `token` starts a value.
            let mut value = match token.kind {
                Kind::Str => {
                    Value::String(self.lua.create_string(&self.scratch).map_err(lua_error)?)
                }
                Kind::Number(n) => Value::Number(n),
                Kind::Boolean(b) => Value::Boolean(b),
                Kind::Null => Value::NULL,
                Kind::ObjBegin => {
                    let table = self.descend(open.len())?;
                    let first = self.next_token();
                    if first.kind == Kind::ObjEnd {
                        Value::Table(table)
                    } else {
                        let key = self.key(first)?;
                        open.push(Open::Object { table, key });
                        token = self.next_token();
                        continue;
                    }
                }
                Kind::ArrBegin => {
                    let table = self.descend(open.len())?;
                    if let Some(mt) = &self.array_mt {
                        table.set_metatable(Some(mt.clone()));
                    }
                    token = self.next_token();
                    if token.kind == Kind::ArrEnd {
                        Value::Table(table)
                    } else {
                        open.push(Open::Array { table, next: 1 });
                        continue;
                    }
                }
                _ => return Err(parse_error("value", &token)),
            };
            // A whole value: store it in its container, and close those
            // whose end follows.
            loop {
                let Some(container) = open.last_mut() else {
                    return Ok(value);
                };
                let (end, expected) = match container {
                    Open::Array { table, next } => {
                        table.raw_set(*next, value).map_err(lua_error)?;
                        *next += 1;
                        (Kind::ArrEnd, "comma or array end")
                    }
                    Open::Object { table, key } => {
                        table.raw_set(&*key, value).map_err(lua_error)?;
                        (Kind::ObjEnd, "comma or object end")
                    }
                };
                let after = self.next_token();
                if after.kind == end {
                    value = match open.pop() {
                        Some(Open::Array { table, .. } | Open::Object { table, .. }) => {
                            Value::Table(table)
                        }
                        None => unreachable!("a container was open"),
                    };
                    continue;
                }
                if after.kind != Kind::Comma {
                    return Err(parse_error(expected, &after));
                }
                token = self.next_token();
                if let Some(Open::Object { key, .. }) = open.last_mut() {
                    *key = self.key(token)?;
                    token = self.next_token();
                }
                break;
            }
        }
    }

    /// An object key at `token`, and the colon after it.
    fn key(&mut self, token: Token) -> Result<mlua::String, String> {
        if token.kind != Kind::Str {
            return Err(parse_error("object key string", &token));
        }
        let key = self.lua.create_string(&self.scratch).map_err(lua_error)?;
        let colon = self.next_token();
        if colon.kind != Kind::Colon {
            return Err(parse_error("colon", &colon));
        }
        Ok(key)
    }

    /// A new table for a container opened inside `depth` others.
    fn descend(&mut self, depth: usize) -> Result<Table, String> {
        let depth = depth as i64 + 1;
        if depth > self.max_depth {
            return Err(format!(
                "Found too many nested data structures ({depth}) at character {}",
                self.pos
            ));
        }
        self.lua.create_table().map_err(lua_error)
    }
}

/// A container being read.
enum Open {
    /// An array; its next element goes at `next`.
    Array { table: Table, next: i64 },
    /// An object; its next value goes under `key`.
    Object { table: Table, key: mlua::String },
}
