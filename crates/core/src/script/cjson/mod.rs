//! `require "cjson"` and `require "cjson.safe"`: lua-cjson 2.1's module
//! for the scripts, written in Rust over mlua values.
//!
//! # Surface
//! Each module table is an instance with its own settings (see
//! `config.rs`): `encode` (`encode.rs`), `decode` (`decode.rs`), `new()`
//! (a fresh instance of the same kind, default settings), `null`,
//! `empty_array`, `array_mt`, `empty_array_mt`, `_NAME` (`"cjson"`, for
//! both kinds, as in the original) and `_VERSION` (`"2.1.0"`).
//! `require` returns one shared instance per module name; `cjson` and
//! `cjson.safe` do not share settings.
//!
//! # Errors
//! `cjson` raises; `cjson.safe`'s `encode` and `decode` return
//! `nil, message` instead. Wrong arguments (a missing value, a bad setting)
//! raise in both. Raised errors are Lua strings prefixed with the calling
//! script line, as the original's are, so `pcall` gets the same text:
//! the Rust functions report failures as values and small Lua wrappers
//! raise them.
//!
//! # Limits
//! Nesting deeper than [`NESTING_LIMIT`] is refused whatever the depth
//! settings say, as the original does when the Lua stack runs out.

mod config;
mod decode;
mod encode;
mod number;

use std::sync::{Arc, Mutex, MutexGuard};

use mlua::{Function, IntoLuaMulti, LightUserData, Lua, MultiValue, Table, Value};

use config::{Args, Config, SETTINGS};

const NAME: &str = "cjson";
const VERSION: &str = "2.1.0";

/// The deepest nesting encoded or decoded, whatever the settings say. Each
/// open table holds up to two of mlua's reference slots, of which a state
/// has about 8000; past them mlua panics. lua-cjson on LuaJIT runs out of
/// Lua stack near this depth too.
pub(super) const NESTING_LIMIT: i64 = 2500;

/// Whether conversion failures raise errors or come back as `nil, message`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Raise,
    Safe,
}

/// Makes both module names loadable with `require` in `lua`.
pub(crate) fn register(lua: &Lua) -> mlua::Result<()> {
    // Kept before the script runs, so that a script replacing the global
    // does not change how tables are walked.
    let next: Function = lua.globals().raw_get("next")?;
    lua.set_named_registry_value(NEXT, next)?;
    let package: Table = lua.globals().get("package")?;
    let preload: Table = package.get("preload")?;
    preload.set(
        "cjson",
        lua.create_function(|lua, _: MultiValue| module(lua, Mode::Raise))?,
    )?;
    preload.set(
        "cjson.safe",
        lua.create_function(|lua, _: MultiValue| module(lua, Mode::Safe))?,
    )?;
    Ok(())
}

/// One instance: its settings and its kept output buffer.
#[derive(Default)]
struct Instance {
    config: Mutex<Config>,
    buffer: Mutex<Vec<u8>>,
}

impl Instance {
    /// The settings now; a copy, so no lock is held while converting.
    fn config(&self) -> Config {
        *lock(&self.config)
    }
}

/// The guarded value, also after a panic elsewhere (a plain value cannot
/// be left half-changed by one).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An error from mlua, as the text a failed conversion reports.
fn lua_error(e: mlua::Error) -> String {
    e.to_string()
}

/// Why a call failed.
enum Failure {
    /// Wrong arguments: raised by both kinds of module.
    Usage(String),
    /// The value or text could not be converted: `cjson.safe` returns it.
    Conversion(String),
}

/// A new module table of kind `mode` with default settings.
fn module(lua: &Lua, mode: Mode) -> mlua::Result<Table> {
    let instance = Arc::new(Instance::default());
    let wrappers = Wrappers::get(lua)?;
    let m = lua.create_table()?;

    type Convert = fn(&Lua, &Instance, &Value) -> Result<Value, Failure>;
    let conversions: [(&'static str, Convert); 2] = [("encode", encode), ("decode", decode)];
    for (name, convert) in conversions {
        let it = Arc::clone(&instance);
        let core = lua.create_function(move |lua, args: MultiValue| {
            let result = one_argument(name, &args).and_then(|value| convert(lua, &it, value));
            reply(lua, result.map(|v| vec![v]))
        })?;
        m.set(name, wrappers.conversion(mode, core)?)?;
    }

    for &(name, arity, apply) in SETTINGS {
        let it = Arc::clone(&instance);
        let setting = lua.create_function(move |lua, args: MultiValue| {
            let args: Vec<Value> = args.into_iter().collect();
            let mut config = lock(&it.config);
            let result = Args::new(name, &args, arity).and_then(|a| apply(&mut config, &a, lua));
            reply(lua, result.map_err(Failure::Usage))
        })?;
        m.set(name, wrappers.setting(arity, setting)?)?;
    }

    m.set(
        "new",
        lua.create_function(move |lua, _: MultiValue| module(lua, mode))?,
    )?;
    m.set("null", Value::NULL)?;
    m.set("empty_array", empty_array())?;
    m.set("array_mt", array_mt(lua)?)?;
    m.set("empty_array_mt", empty_array_mt(lua)?)?;
    m.set("_NAME", NAME)?;
    m.set("_VERSION", VERSION)?;
    Ok(m)
}

/// The single argument `encode` and `decode` take.
fn one_argument<'a>(name: &str, args: &'a MultiValue) -> Result<&'a Value, Failure> {
    match args.len() {
        1 => Ok(&args[0]),
        _ => Err(Failure::Usage(format!(
            "bad argument #1 to '{name}' (expected 1 argument)"
        ))),
    }
}

fn encode(lua: &Lua, instance: &Instance, value: &Value) -> Result<Value, Failure> {
    let config = instance.config();
    let mut out = std::mem::take(&mut *lock(&instance.buffer));
    out.clear();
    let result = encode::encode(lua, &config, value, &mut out).map(|()| lua.create_string(&out));
    // `encode_keep_buffer`: keep the grown buffer for the next call.
    if config.keep_buffer {
        *lock(&instance.buffer) = out;
    }
    match result {
        Ok(Ok(text)) => Ok(Value::String(text)),
        Ok(Err(e)) => Err(Failure::Conversion(e.to_string())),
        Err(why) => Err(Failure::Conversion(why)),
    }
}

fn decode(lua: &Lua, instance: &Instance, value: &Value) -> Result<Value, Failure> {
    let config = instance.config();
    let result = match value {
        Value::String(s) => decode::decode(lua, &config, &s.as_bytes()),
        // Lua turns a number argument into its text.
        Value::Integer(n) => decode::decode(lua, &config, &number_text(*n as f64)),
        Value::Number(n) => decode::decode(lua, &config, &number_text(*n)),
        other => {
            let found = config::type_name(other);
            Err(format!(
                "bad argument #1 to 'decode' (string expected, got {found})"
            ))
        }
    };
    result.map_err(Failure::Conversion)
}

/// A number as Lua turns it into text (`%.14g`).
fn number_text(n: f64) -> Vec<u8> {
    let mut out = Vec::new();
    if n.is_finite() {
        number::format_g(n, 14, &mut out);
    } else {
        let text = if n.is_nan() {
            "nan"
        } else if n > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        out.extend_from_slice(text.as_bytes());
    }
    out
}

/// The values a Rust function returns to its Lua wrapper: `true` and the
/// results, `false` and a message to raise, or `nil` and a message that
/// `cjson.safe` returns and `cjson` raises.
fn reply(lua: &Lua, result: Result<Vec<Value>, Failure>) -> mlua::Result<MultiValue> {
    match result {
        Ok(values) => {
            let mut reply = MultiValue::with_capacity(values.len() + 1);
            reply.push_back(Value::Boolean(true));
            reply.extend(values);
            Ok(reply)
        }
        Err(Failure::Usage(message)) => (false, message).into_lua_multi(lua),
        Err(Failure::Conversion(message)) => (Value::Nil, message).into_lua_multi(lua),
    }
}

/// Lua functions that turn a Rust function's reply (see [`reply`]) into
/// results or a raised error. `error(message, 2)` names the script line
/// that called, as errors raised by C functions do.
const WRAPPERS: &str = r#"
local error = error
local function raising(core)
  return function(...)
    local ok, value = core(...)
    if not ok then error(value, 2) end
    return value
  end
end
local function safe(core)
  return function(...)
    local ok, value = core(...)
    if ok then return value end
    if ok == false then error(value, 2) end
    return nil, value
  end
end
local function raising3(core)
  return function(...)
    local ok, a, b, c = core(...)
    if not ok then error(a, 2) end
    return a, b, c
  end
end
return raising, safe, raising3
"#;

/// The wrapper factories, made once per Lua state.
struct Wrappers {
    raising: Function,
    safe: Function,
    raising3: Function,
}

impl Wrappers {
    const KEY: &'static str = "metron.cjson.wrappers";

    fn get(lua: &Lua) -> mlua::Result<Wrappers> {
        let made: Option<Table> = lua.named_registry_value(Self::KEY)?;
        let table = match made {
            Some(t) => t,
            None => {
                let (raising, safe, raising3): (Function, Function, Function) =
                    lua.load(WRAPPERS).set_name("=cjson").eval()?;
                let t = lua.create_sequence_from([raising, safe, raising3])?;
                lua.set_named_registry_value(Self::KEY, &t)?;
                t
            }
        };
        Ok(Wrappers {
            raising: table.raw_get(1)?,
            safe: table.raw_get(2)?,
            raising3: table.raw_get(3)?,
        })
    }

    /// `encode` or `decode` for a module of kind `mode`.
    fn conversion(&self, mode: Mode, core: Function) -> mlua::Result<Function> {
        match mode {
            Mode::Raise => self.raising.call(core),
            Mode::Safe => self.safe.call(core),
        }
    }

    /// A setting function returning `arity` values.
    fn setting(&self, arity: usize, core: Function) -> mlua::Result<Function> {
        match arity {
            3 => self.raising3.call(core),
            _ => self.raising.call(core),
        }
    }
}

const NEXT: &str = "metron.cjson.next";

/// Lua's own `next`, as it was when the module was registered.
fn next_function(lua: &Lua) -> mlua::Result<Function> {
    match lua.named_registry_value::<Option<Function>>(NEXT)? {
        Some(next) => Ok(next),
        None => lua.globals().raw_get("next"),
    }
}

/// `cjson.empty_array`: a light userdata that encodes as `[]`. Its address
/// is that of a static, so every state and instance shares it.
fn empty_array() -> Value {
    static MARK: u8 = 0;
    Value::LightUserData(LightUserData(std::ptr::addr_of!(MARK) as *mut _))
}

fn is_empty_array(value: &Value) -> bool {
    matches!((value, empty_array()), (Value::LightUserData(a), Value::LightUserData(b)) if *a == b)
}

/// `cjson.array_mt`: a table with it is an array of its raw length.
/// One table per state, shared by all instances.
fn array_mt(lua: &Lua) -> mlua::Result<Table> {
    shared_table(lua, "metron.cjson.array_mt")
}

/// `cjson.empty_array_mt`: an empty table with it is `[]`.
fn empty_array_mt(lua: &Lua) -> mlua::Result<Table> {
    shared_table(lua, "metron.cjson.empty_array_mt")
}

/// The empty table kept in the registry under `key`, made on first use.
fn shared_table(lua: &Lua, key: &str) -> mlua::Result<Table> {
    if let Some(t) = lua.named_registry_value::<Option<Table>>(key)? {
        return Ok(t);
    }
    let t = lua.create_table()?;
    lua.set_named_registry_value(key, &t)?;
    Ok(t)
}

#[cfg(test)]
mod tests;
