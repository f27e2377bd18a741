//! `require("cjson")` and `require("cjson.safe")`: the JSON module wrk
//! scripts expect, backed by serde_json through mlua's serde support.
//!
//! Both modules have `encode(value)`, `decode(text)`, `null` (the value
//! JSON null decodes to, and encodes from) and `array_mt` (a metatable that
//! makes a table encode as an array even when empty; decoded arrays carry
//! it). `cjson` raises a Lua error on failure; `cjson.safe` returns
//! `nil, message` instead, as the original module does.

use mlua::{IntoLuaMulti, Lua, LuaSerdeExt, MultiValue, Table, Value};

/// Whether failures raise errors or come back as `nil, message`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Raise,
    Safe,
}

/// Makes both module names loadable with `require` in `lua`.
pub(crate) fn register(lua: &Lua) -> mlua::Result<()> {
    let package: Table = lua.globals().get("package")?;
    let preload: Table = package.get("preload")?;
    preload.set(
        "cjson",
        lua.create_function(|lua, ()| module(lua, Mode::Raise))?,
    )?;
    preload.set(
        "cjson.safe",
        lua.create_function(|lua, ()| module(lua, Mode::Safe))?,
    )?;
    Ok(())
}

fn module(lua: &Lua, mode: Mode) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "encode",
        lua.create_function(move |lua, value: Value| finish(lua, mode, encode(lua, &value)))?,
    )?;
    m.set(
        "decode",
        lua.create_function(move |lua, text: mlua::String| {
            finish(lua, mode, decode(lua, &text.as_bytes()))
        })?,
    )?;
    m.set("null", lua.null())?;
    m.set("array_mt", lua.array_metatable())?;
    Ok(m)
}

fn encode(lua: &Lua, value: &Value) -> Result<Value, String> {
    let text = serde_json::to_string(value).map_err(|e| format!("cjson.encode: {e}"))?;
    lua.create_string(text)
        .map(Value::String)
        .map_err(|e| e.to_string())
}

fn decode(lua: &Lua, text: &[u8]) -> Result<Value, String> {
    let json: serde_json::Value =
        serde_json::from_slice(text).map_err(|e| format!("cjson.decode: {e}"))?;
    lua.to_value(&json)
        .map_err(|e| format!("cjson.decode: {e}"))
}

/// Raises or returns the failure, per `mode`.
fn finish(lua: &Lua, mode: Mode, result: Result<Value, String>) -> mlua::Result<MultiValue> {
    match (result, mode) {
        (Ok(value), _) => value.into_lua_multi(lua),
        (Err(message), Mode::Raise) => Err(mlua::Error::runtime(message)),
        (Err(message), Mode::Safe) => (Value::Nil, message).into_lua_multi(lua),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> Lua {
        let lua = Lua::new();
        register(&lua).unwrap();
        lua
    }

    #[test]
    fn roundtrips_nested_values() {
        let lua = state();
        let ok: bool = lua
            .load(
                r#"local cjson = require("cjson")
                   local v = cjson.decode('{"a":[1,2,{"b":"c"}],"n":null,"f":1.5,"t":true}')
                   assert(v.a[3].b == "c" and v.n == cjson.null and v.f == 1.5 and v.t)
                   local again = cjson.decode(cjson.encode(v))
                   return again.a[2] == 2 and again.n == cjson.null and #again.a == 3"#,
            )
            .eval()
            .unwrap();
        assert!(ok);
    }

    #[test]
    fn encodes_integers_arrays_and_maps() {
        let lua = state();
        let text: String = lua
            .load(r#"return require("cjson").encode({ 1, 2, 3 })"#)
            .eval()
            .unwrap();
        assert_eq!(text, "[1,2,3]");
        let text: String = lua
            .load(r#"return require("cjson").encode({ k = "v" })"#)
            .eval()
            .unwrap();
        assert_eq!(text, r#"{"k":"v"}"#);
        let text: String = lua
            .load(r#"local c = require("cjson") return c.encode(setmetatable({}, c.array_mt))"#)
            .eval()
            .unwrap();
        assert_eq!(text, "[]");
    }

    #[test]
    fn decode_errors_raise_in_cjson() {
        let lua = state();
        let error = lua
            .load(r#"return require("cjson").decode("{oops")"#)
            .exec()
            .unwrap_err();
        let message = super::super::error::one_line(&error);
        assert!(
            message.contains("cjson.decode: key must be a string"),
            "{message}"
        );
    }

    #[test]
    fn encode_errors_raise_in_cjson() {
        let lua = state();
        let error = lua
            .load(r#"return require("cjson").encode({ f = print })"#)
            .exec()
            .unwrap_err();
        assert!(error.to_string().contains("cjson.encode"), "{error}");
    }

    #[test]
    fn safe_module_returns_nil_and_message() {
        let lua = state();
        let (value, message): (Value, String) = lua
            .load(r#"return require("cjson.safe").decode("[1,")"#)
            .eval()
            .unwrap();
        assert_eq!(value, Value::Nil);
        assert!(message.starts_with("cjson.decode: "), "{message}");
    }
}
