//! `encode`: a Lua value to JSON text, as lua-cjson 2.1 writes it.
//!
//! - A table whose keys are all positive integers is an array; any other
//!   table is an object; an empty one is `{}`. Metamethods are not used.
//! - Arrays with holes get `null` in them. One is *excessively sparse* when
//!   the sparse ratio is above 0, its largest index is above the safe
//!   limit, and that index is above ratio × its number of items; that is an
//!   error, or an object when conversion is on.
//! - A table with `array_mt` is an array of its raw length; an empty one
//!   with `empty_array_mt`, and `empty_array`, are `[]`.
//! - Object keys must be strings or numbers; numbers become strings.
//! - Numbers are `%.14g` (see `number.rs`); NaN and the infinities are an
//!   error, `NaN`/`Infinity`/`-Infinity`, or `null`, per the setting.
//! - Strings keep their bytes except `"`, `\`, `/`, control characters and
//!   DEL, which are escaped.

use mlua::{Function, Lua, Table, Value};

use super::config::{type_name, Config, Invalid};
use super::{array_mt, empty_array_mt, is_empty_array, lua_error, next_function, NESTING_LIMIT};

/// Appends the JSON text of `value` to `out`, or says why it has none.
pub(super) fn encode(
    lua: &Lua,
    config: &Config,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let encoder = Encoder {
        config,
        array_mt: array_mt(lua).map_err(lua_error)?,
        empty_array_mt: empty_array_mt(lua).map_err(lua_error)?,
        next: next_function(lua).map_err(lua_error)?,
        max_depth: config.encode_max_depth.min(NESTING_LIMIT),
    };
    encoder.run(value, out)
}

struct Encoder<'a> {
    config: &'a Config,
    array_mt: Table,
    empty_array_mt: Table,
    /// Lua's `next`, to walk objects one key at a time.
    next: Function,
    /// The setting, capped where lua-cjson would run out of Lua stack.
    max_depth: i64,
}

/// A table being written. Tables nest on a stack of these rather than on
/// Rust's call stack, which a worker thread has little of.
enum Open {
    /// An array of `len` elements, the next one at `next`.
    Array {
        table: Table,
        len: usize,
        next: usize,
    },
    /// An object, walked with `next` from the key last written.
    Object { table: Table, key: Value },
}

/// lua-cjson's message for a value it cannot write.
fn refuse(value: &Value, why: &str) -> String {
    format!("Cannot serialise {}: {why}", type_name(value))
}

impl Encoder<'_> {
    fn run(&self, value: &Value, out: &mut Vec<u8>) -> Result<(), String> {
        let mut open = Vec::new();
        let mut pending = self.value(value, &mut open, out)?;
        loop {
            let item = match pending.take() {
                Some(item) => item,
                None => match self.next_item(&mut open, out)? {
                    Some(item) => item,
                    None => return Ok(()),
                },
            };
            pending = self.value(&item, &mut open, out)?;
        }
    }

    /// The next value to write in the innermost open table, after writing
    /// what precedes it; closes tables that have no more. `None` when all
    /// are closed.
    fn next_item(&self, open: &mut Vec<Open>, out: &mut Vec<u8>) -> Result<Option<Value>, String> {
        while let Some(table) = open.last_mut() {
            match table {
                Open::Array { table, len, next } if *next <= *len => {
                    if *next > 1 {
                        out.push(b',');
                    }
                    let item = table.raw_get(*next).map_err(lua_error)?;
                    *next += 1;
                    return Ok(Some(item));
                }
                Open::Array { .. } => out.push(b']'),
                Open::Object { table, key } => {
                    let (k, item): (Value, Value) =
                        self.next.call((&*table, &*key)).map_err(lua_error)?;
                    if !k.is_nil() {
                        out.push(b',');
                        self.key(&k, out)?;
                        *key = k;
                        return Ok(Some(item));
                    }
                    out.push(b'}');
                }
            }
            open.pop();
        }
        Ok(None)
    }

    /// Writes `value`, or opens it when it is a table; see [`Self::open`]
    /// for what comes back.
    fn value(
        &self,
        value: &Value,
        open: &mut Vec<Open>,
        out: &mut Vec<u8>,
    ) -> Result<Option<Value>, String> {
        match value {
            Value::Table(t) => self.open(t, open, out),
            _ => self.scalar(value, out).map(|()| None),
        }
    }

    /// Writes a value that is not a table.
    fn scalar(&self, value: &Value, out: &mut Vec<u8>) -> Result<(), String> {
        match value {
            Value::String(s) => string(&s.as_bytes(), out),
            Value::Integer(n) => self.number(value, *n as f64, out)?,
            Value::Number(n) => self.number(value, *n, out)?,
            Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Nil => out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
            v if is_empty_array(v) => out.extend_from_slice(b"[]"),
            other => return Err(refuse(other, "type not supported")),
        }
        Ok(())
    }

    fn key(&self, key: &Value, out: &mut Vec<u8>) -> Result<(), String> {
        match key {
            Value::String(s) => string(&s.as_bytes(), out),
            Value::Integer(k) => self.quoted_number(key, *k as f64, out)?,
            Value::Number(k) => self.quoted_number(key, *k, out)?,
            other => return Err(refuse(other, "table key must be a number or string")),
        }
        out.push(b':');
        Ok(())
    }

    fn quoted_number(&self, key: &Value, k: f64, out: &mut Vec<u8>) -> Result<(), String> {
        out.push(b'"');
        self.number(key, k, out)?;
        out.push(b'"');
        Ok(())
    }

    fn number(&self, value: &Value, n: f64, out: &mut Vec<u8>) -> Result<(), String> {
        if n.is_finite() {
            super::number::format_g(n, self.config.number_precision, out);
            return Ok(());
        }
        let text: &[u8] = match (self.config.encode_invalid, n.is_nan(), n > 0.0) {
            (Invalid::Refuse, ..) => return Err(refuse(value, "must not be NaN or Infinity")),
            (Invalid::Null, ..) => b"null",
            (Invalid::Allow, true, _) => b"NaN",
            (Invalid::Allow, false, true) => b"Infinity",
            (Invalid::Allow, false, false) => b"-Infinity",
        };
        out.extend_from_slice(text);
        Ok(())
    }

    /// Starts writing table `t`, as an array or as an object by its
    /// metatable and keys, and leaves it open on `open` while it has more.
    /// An object's entries are written in one walk up to the first whose
    /// value is a table; that table comes back, to be written next, and
    /// the rest of the object is reached with `next` from its key.
    fn open(
        &self,
        t: &Table,
        open: &mut Vec<Open>,
        out: &mut Vec<u8>,
    ) -> Result<Option<Value>, String> {
        let depth = open.len() as i64 + 1;
        if depth > self.max_depth {
            return Err(format!("Cannot serialise, excessive nesting ({depth})"));
        }
        let metatable = t.metatable();
        let array = if metatable.as_ref() == Some(&self.array_mt) {
            Some(t.raw_len())
        } else {
            match self.array_length(t)? {
                Some(0) if metatable.as_ref() == Some(&self.empty_array_mt) => Some(0),
                Some(0) if self.config.empty_table_as_object => None,
                other => other,
            }
        };
        if let Some(len) = array {
            out.push(b'[');
            let table = t.clone();
            open.push(Open::Array {
                table,
                len,
                next: 1,
            });
            return Ok(None);
        }
        out.push(b'{');
        let mut first = true;
        let suspended = walk(t, |key, item| {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            self.key(&key, out)?;
            if let Value::Table(_) = item {
                return Ok(Some((key, item)));
            }
            self.scalar(&item, out).map(|()| None)
        })?;
        if let Some((key, item)) = suspended {
            let table = t.clone();
            open.push(Open::Object { table, key });
            return Ok(Some(item));
        }
        out.push(b'}');
        Ok(None)
    }

    /// The array length of `t`, or `None` when it is to be an object:
    /// a key that is not a positive integer, or excessive sparseness with
    /// conversion on.
    fn array_length(&self, t: &Table) -> Result<Option<usize>, String> {
        let (mut max, mut items) = (0f64, 0f64);
        let not_index = walk(t, |key, _| {
            let k = match key {
                Value::Integer(k) => k as f64,
                Value::Number(k) => k,
                _ => return Ok(Some(())),
            };
            if k < 1.0 || k.fract() != 0.0 {
                return Ok(Some(()));
            }
            max = max.max(k);
            items += 1.0;
            Ok(None)
        })?;
        if not_index.is_some() {
            return Ok(None);
        }
        let c = self.config;
        let ratio = c.sparse_ratio as f64;
        let excessive = c.sparse_ratio > 0 && max > items * ratio && max > c.sparse_safe as f64;
        // Past C's int the original's length overflows; with ratio 0,
        // millions of holes would fill memory with nulls. Both count as
        // excessively sparse here.
        let unwritable = max > i32::MAX as f64 || max - items > HOLES_LIMIT;
        if excessive || unwritable {
            if c.sparse_convert {
                return Ok(None);
            }
            return Err(refuse(&Value::Table(t.clone()), "excessively sparse array"));
        }
        Ok(Some(max as usize))
    }
}

/// Calls `f` on each key and value of `t` in `next` order, until it fails
/// or returns something; that comes back.
fn walk<T>(
    t: &Table,
    mut f: impl FnMut(Value, Value) -> Result<Option<T>, String>,
) -> Result<Option<T>, String> {
    let mut outcome = None;
    let walked = t.for_each::<Value, Value>(|key, value| match f(key, value) {
        Ok(None) => Ok(()),
        stop => {
            outcome = Some(stop);
            // Only ends the walk: `outcome` says why.
            Err(mlua::Error::RuntimeError(String::new()))
        }
    });
    match outcome {
        Some(stop) => stop,
        None => walked.map(|()| None).map_err(lua_error),
    }
}

/// The most `null`s padding one sparse array; see `array_length`.
const HOLES_LIMIT: f64 = 16_777_216.0;

/// Appends `s` as a JSON string.
fn string(s: &[u8], out: &mut Vec<u8>) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(c >> 4)]);
                out.push(HEX[usize::from(c & 0xf)]);
            }
            _ => out.push(c),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode_text(code: &str, config: &Config) -> Result<String, String> {
        let lua = Lua::new();
        let value: Value = lua.load(code).eval().unwrap();
        let mut out = Vec::new();
        encode(&lua, config, &value, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    fn enc(code: &str) -> String {
        encode_text(code, &Config::default()).unwrap()
    }

    #[test]
    fn escapes_like_the_original() {
        assert_eq!(
            enc(r#"return "a/b\"c\\d\n\t\r\b\f""#),
            r#""a\/b\"c\\d\n\t\r\b\f""#
        );
        assert_eq!(
            enc(r#"return "\0\1\31\127""#),
            r#""\u0000\u0001\u001f\u007f""#
        );
        let lua = Lua::new();
        let value: Value = lua.load(r#"return "\195\169\255""#).eval().unwrap();
        let mut out = Vec::new();
        encode(&lua, &Config::default(), &value, &mut out).unwrap();
        assert_eq!(out, b"\"\xc3\xa9\xff\"");
    }

    #[test]
    fn arrays_and_objects_by_their_keys() {
        assert_eq!(enc("return {1, 2, 3}"), "[1,2,3]");
        assert_eq!(enc("return {}"), "{}");
        assert_eq!(enc("return {[1.0] = 'a', [2] = 'b'}"), r#"["a","b"]"#);
        assert_eq!(enc("return {[1.5] = 'a'}"), r#"{"1.5":"a"}"#);
        assert_eq!(enc("return {[0] = 'a'}"), r#"{"0":"a"}"#);
        assert_eq!(enc("return {[-1] = 'a'}"), r#"{"-1":"a"}"#);
        assert_eq!(enc("return {['1'] = 'a'}"), r#"{"1":"a"}"#);
        assert_eq!(enc("return {[3] = 'x'}"), r#"[null,null,"x"]"#);
        assert_eq!(
            enc("return setmetatable({}, {__index = function() return 1 end})"),
            "{}"
        );
    }

    #[test]
    fn numbers_as_g14() {
        assert_eq!(
            enc("return {1, -2, 0.5, 1e15, 2^53, 1/3}"),
            "[1,-2,0.5,1e+15,9.007199254741e+15,0.33333333333333]"
        );
    }

    #[test]
    fn huge_indices_are_refused_unless_converted() {
        let mut c = Config {
            sparse_ratio: 0,
            ..Config::default()
        };
        let error = encode_text("return {[2^40] = 1}", &c).unwrap_err();
        assert_eq!(error, "Cannot serialise table: excessively sparse array");
        let error = encode_text("return {[2^30] = 1}", &c).unwrap_err();
        assert_eq!(error, "Cannot serialise table: excessively sparse array");
        c.sparse_convert = true;
        assert_eq!(
            encode_text("return {[2^40] = 1}", &c).unwrap(),
            r#"{"1099511627776":1}"#
        );
    }
}
