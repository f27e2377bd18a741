//! One instance's settings, and the functions that read and change them.
//!
//! Each setting function sets when given arguments and always returns the
//! current values, with lua-cjson 2.1's defaults and argument forms:
//! booleans or `"on"`/`"off"` for switches (`"null"` too for
//! `encode_invalid_numbers`), integers in a range for numbers. A `nil`
//! argument leaves its setting as it is.

use mlua::{Lua, Value};

use super::number::format_g;

/// How `encode` treats NaN and the infinities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Invalid {
    /// An error (the default).
    Refuse,
    /// `NaN`, `Infinity`, `-Infinity`: not JSON, but what JavaScript and
    /// `decode` read.
    Allow,
    /// `null`.
    Null,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Config {
    pub sparse_convert: bool,
    pub sparse_ratio: i64,
    pub sparse_safe: i64,
    pub encode_max_depth: i64,
    pub decode_max_depth: i64,
    pub number_precision: u8,
    /// Reported only: whether the output buffer is kept between calls.
    pub keep_buffer: bool,
    pub encode_invalid: Invalid,
    pub decode_invalid: bool,
    pub empty_table_as_object: bool,
    pub array_mt_on_decode: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            number_precision: 14,
            keep_buffer: true,
            encode_invalid: Invalid::Refuse,
            decode_invalid: true,
            empty_table_as_object: true,
            array_mt_on_decode: false,
        }
    }
}

/// A setting function's arguments, checked against its name for messages.
pub(super) struct Args<'a> {
    name: &'static str,
    values: &'a [Value],
}

/// What a setting function does: reads its arguments into the config and
/// returns the current values.
pub(super) type Apply = fn(&mut Config, &Args, &Lua) -> Result<Vec<Value>, String>;

/// Every setting: its name, how many arguments it takes, what it does.
pub(super) const SETTINGS: &[(&str, usize, Apply)] = &[
    ("encode_sparse_array", 3, encode_sparse_array),
    ("encode_max_depth", 1, |c, a, _| {
        depth(&mut c.encode_max_depth, a)
    }),
    ("decode_max_depth", 1, |c, a, _| {
        depth(&mut c.decode_max_depth, a)
    }),
    ("encode_number_precision", 1, encode_number_precision),
    ("encode_keep_buffer", 1, |c, a, _| {
        switch(&mut c.keep_buffer, a)
    }),
    ("encode_invalid_numbers", 1, encode_invalid_numbers),
    ("decode_invalid_numbers", 1, |c, a, _| {
        switch(&mut c.decode_invalid, a)
    }),
    ("encode_empty_table_as_object", 1, |c, a, _| {
        switch(&mut c.empty_table_as_object, a)
    }),
    ("decode_array_with_array_mt", 1, |c, a, _| {
        switch(&mut c.array_mt_on_decode, a)
    }),
];

/// The largest depth or sparse-array number a setting takes (C's INT_MAX).
const INT_MAX: i64 = i32::MAX as i64;

impl<'a> Args<'a> {
    /// `values` for setting `name`, which takes at most `arity` of them.
    pub(super) fn new(
        name: &'static str,
        values: &'a [Value],
        arity: usize,
    ) -> Result<Self, String> {
        if values.len() > arity {
            return Err(bad_argument(name, arity + 1, "found too many arguments"));
        }
        Ok(Args { name, values })
    }

    /// Argument `i` (1-based), `None` when absent or nil.
    fn get(&self, i: usize) -> Option<&Value> {
        self.values.get(i - 1).filter(|v| !v.is_nil())
    }

    /// Argument `i` as an integer in `min..=max`, if given.
    fn integer(&self, i: usize, min: i64, max: i64) -> Result<Option<i64>, String> {
        let Some(value) = self.get(i) else {
            return Ok(None);
        };
        let number = match value {
            Value::Integer(n) => *n as f64,
            Value::Number(n) => *n,
            Value::String(s) => lua_number(&s.as_bytes())
                .ok_or_else(|| bad_argument(self.name, i, "number expected, got string"))?,
            other => {
                let why = format!("number expected, got {}", type_name(other));
                return Err(bad_argument(self.name, i, &why));
            }
        };
        // Lua truncates a fractional argument where an integer is wanted.
        let n = number.trunc();
        if !(min as f64..=max as f64).contains(&n) {
            let why = format!("expected integer between {min} and {max}");
            return Err(bad_argument(self.name, i, &why));
        }
        Ok(Some(n as i64))
    }

    /// Argument `i` as one of `options` (its index), if given; a boolean
    /// stands for the first two (`false` and `true`).
    fn option(&self, i: usize, options: &[&str]) -> Result<Option<usize>, String> {
        let text = match self.get(i) {
            None => return Ok(None),
            Some(Value::Boolean(b)) => return Ok(Some(usize::from(*b))),
            Some(Value::String(s)) => s.to_string_lossy(),
            Some(Value::Integer(n)) => n.to_string(),
            Some(Value::Number(n)) => {
                let mut out = Vec::new();
                format_g(*n, 14, &mut out);
                String::from_utf8_lossy(&out).into_owned()
            }
            Some(other) => {
                let why = format!("string expected, got {}", type_name(other));
                return Err(bad_argument(self.name, i, &why));
            }
        };
        match options.iter().position(|o| *o == text) {
            Some(index) => Ok(Some(index)),
            None => Err(bad_argument(
                self.name,
                i,
                &format!("invalid option '{text}'"),
            )),
        }
    }
}

/// Lua's "bad argument" message for argument `i` of `name`.
fn bad_argument(name: &str, i: usize, why: &str) -> String {
    format!("bad argument #{i} to '{name}' ({why})")
}

/// Lua's name for the type of `value`, as its messages use it.
pub(super) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        Value::LightUserData(_) | Value::UserData(_) | Value::Error(_) => "userdata",
        // The one other type LuaJIT has is the FFI's cdata.
        _ => "cdata",
    }
}

/// A string Lua would accept as a number: decimal or `0x` hexadecimal,
/// with surrounding whitespace.
fn lua_number(text: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(text).ok()?.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let hex = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"));
    let magnitude = match hex {
        Some(h) => u64::from_str_radix(h, 16).ok()? as f64,
        None => text.parse::<f64>().ok()?.abs(),
    };
    Some(if negative { -magnitude } else { magnitude })
}

const SWITCH: &[&str] = &["off", "on"];

/// A boolean setting.
fn switch(setting: &mut bool, args: &Args) -> Result<Vec<Value>, String> {
    if let Some(index) = args.option(1, SWITCH)? {
        *setting = index == 1;
    }
    Ok(vec![Value::Boolean(*setting)])
}

/// A nesting limit, 1 to INT_MAX.
fn depth(setting: &mut i64, args: &Args) -> Result<Vec<Value>, String> {
    if let Some(n) = args.integer(1, 1, INT_MAX)? {
        *setting = n;
    }
    Ok(vec![Value::Integer(*setting)])
}

fn encode_sparse_array(c: &mut Config, args: &Args, _: &Lua) -> Result<Vec<Value>, String> {
    let convert = args.option(1, SWITCH)?;
    let ratio = args.integer(2, 0, INT_MAX)?;
    let safe = args.integer(3, 0, INT_MAX)?;
    if let Some(index) = convert {
        c.sparse_convert = index == 1;
    }
    c.sparse_ratio = ratio.unwrap_or(c.sparse_ratio);
    c.sparse_safe = safe.unwrap_or(c.sparse_safe);
    Ok(vec![
        Value::Boolean(c.sparse_convert),
        Value::Integer(c.sparse_ratio),
        Value::Integer(c.sparse_safe),
    ])
}

fn encode_number_precision(c: &mut Config, args: &Args, _: &Lua) -> Result<Vec<Value>, String> {
    if let Some(n) = args.integer(1, 1, 14)? {
        c.number_precision = n as u8;
    }
    Ok(vec![Value::Integer(i64::from(c.number_precision))])
}

fn encode_invalid_numbers(c: &mut Config, args: &Args, lua: &Lua) -> Result<Vec<Value>, String> {
    const OPTIONS: &[&str] = &["off", "on", "null"];
    if let Some(index) = args.option(1, OPTIONS)? {
        c.encode_invalid = [Invalid::Refuse, Invalid::Allow, Invalid::Null][index];
    }
    Ok(vec![match c.encode_invalid {
        Invalid::Refuse => Value::Boolean(false),
        Invalid::Allow => Value::Boolean(true),
        Invalid::Null => Value::String(lua.create_string("null").map_err(|e| e.to_string())?),
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(
        config: &mut Config,
        name: &'static str,
        values: &[Value],
    ) -> Result<Vec<Value>, String> {
        let lua = Lua::new();
        let (_, arity, apply) = SETTINGS.iter().find(|s| s.0 == name).unwrap();
        let args = Args::new(name, values, *arity)?;
        apply(config, &args, &lua)
    }

    #[test]
    fn nil_arguments_leave_settings_alone() {
        let mut c = Config::default();
        let got = apply(
            &mut c,
            "encode_sparse_array",
            &[Value::Nil, Value::Integer(5)],
        )
        .unwrap();
        assert_eq!(
            got,
            vec![Value::Boolean(false), Value::Integer(5), Value::Integer(10)]
        );
        assert_eq!(c.sparse_ratio, 5);
    }

    #[test]
    fn a_bad_argument_changes_nothing() {
        let mut c = Config::default();
        let error = apply(
            &mut c,
            "encode_sparse_array",
            &[Value::Boolean(true), Value::Integer(-1)],
        )
        .unwrap_err();
        assert_eq!(
            error,
            "bad argument #2 to 'encode_sparse_array' (expected integer between 0 and 2147483647)"
        );
        assert_eq!(c, Config::default());
    }

    #[test]
    fn fractions_truncate_and_numeric_strings_count() {
        let mut c = Config::default();
        apply(&mut c, "encode_number_precision", &[Value::Number(3.9)]).unwrap();
        assert_eq!(c.number_precision, 3);
        let lua = Lua::new();
        let five = Value::String(lua.create_string(" 5 ").unwrap());
        apply(&mut c, "encode_max_depth", &[five]).unwrap();
        assert_eq!(c.encode_max_depth, 5);
    }

    #[test]
    fn options_name_the_bad_value() {
        let mut c = Config::default();
        let lua = Lua::new();
        let maybe = Value::String(lua.create_string("maybe").unwrap());
        assert_eq!(
            apply(&mut c, "encode_keep_buffer", &[maybe]).unwrap_err(),
            "bad argument #1 to 'encode_keep_buffer' (invalid option 'maybe')"
        );
        assert_eq!(
            apply(&mut c, "decode_invalid_numbers", &[Value::Integer(1)]).unwrap_err(),
            "bad argument #1 to 'decode_invalid_numbers' (invalid option '1')"
        );
        assert_eq!(
            apply(&mut c, "encode_max_depth", &[Value::Boolean(true)]).unwrap_err(),
            "bad argument #1 to 'encode_max_depth' (number expected, got boolean)"
        );
        assert_eq!(
            apply(
                &mut c,
                "encode_max_depth",
                &[Value::Integer(1), Value::Integer(2)]
            )
            .unwrap_err(),
            "bad argument #2 to 'encode_max_depth' (found too many arguments)"
        );
    }
}
