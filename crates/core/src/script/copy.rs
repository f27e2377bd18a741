//! Copying a value from one Lua state into another, for `thread:get` and
//! `thread:set`.
//!
//! Lua states share nothing, so a value crossing over is rebuilt in the
//! destination: nil, booleans, numbers (an integer stays an integer),
//! strings byte for byte, and tables of those, keys and values copied as
//! they are. Functions, userdata and coroutines belong to their state and
//! cannot cross; asking for one is an error that names its type. A table
//! that contains itself, or nests deeper than [`MAX_DEPTH`], is an error
//! too, rather than a hang or a stack overflow. Metatables stay behind.

use std::ffi::c_void;

use mlua::{Lua, Table, Value};

/// Deeper than any data a script passes between threads in practice, and
/// shallow enough that the recursion cannot exhaust the stack.
pub const MAX_DEPTH: usize = 32;

/// Rebuilds `value` (from any state) inside `to`.
pub(crate) fn copy_value(value: &Value, to: &Lua) -> mlua::Result<Value> {
    let mut path = Vec::new();
    copy_at(value, to, &mut path)
}

/// `path` holds the tables being copied, outermost first: a table met again
/// on its own path is a cycle, and the path's length is the depth.
fn copy_at(value: &Value, to: &Lua, path: &mut Vec<*const c_void>) -> mlua::Result<Value> {
    Ok(match value {
        Value::Nil => Value::Nil,
        Value::Boolean(b) => Value::Boolean(*b),
        Value::Integer(i) => Value::Integer(*i),
        Value::Number(n) => Value::Number(*n),
        Value::String(s) => Value::String(to.create_string(&*s.as_bytes())?),
        Value::Table(table) => Value::Table(copy_table(table, to, path)?),
        other => {
            return Err(mlua::Error::runtime(format!(
                "cannot copy a {} between Lua states: only nil, booleans, numbers, \
                 strings and tables of those can be copied",
                other.type_name()
            )))
        }
    })
}

fn copy_table(table: &Table, to: &Lua, path: &mut Vec<*const c_void>) -> mlua::Result<Table> {
    let id = table.to_pointer();
    if path.contains(&id) {
        return Err(mlua::Error::runtime(
            "cannot copy a table that contains itself between Lua states",
        ));
    }
    if path.len() >= MAX_DEPTH {
        return Err(mlua::Error::runtime(format!(
            "cannot copy tables nested deeper than {MAX_DEPTH} levels between Lua states"
        )));
    }
    path.push(id);
    let copied = copy_entries(table, to, path);
    path.pop();
    copied
}

fn copy_entries(table: &Table, to: &Lua, path: &mut Vec<*const c_void>) -> mlua::Result<Table> {
    let out = to.create_table()?;
    for pair in table.pairs::<Value, Value>() {
        let (key, value) = pair?;
        out.raw_set(copy_at(&key, to, path)?, copy_at(&value, to, path)?)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy_eval(code: &str) -> (Lua, mlua::Result<Value>) {
        let (from, to) = (Lua::new(), Lua::new());
        let value: Value = from.load(code).eval().unwrap();
        let copied = copy_value(&value, &to);
        (to, copied)
    }

    #[test]
    fn scalars_and_binary_strings_cross_unchanged() {
        let (_to, v) = copy_eval("return 42");
        assert_eq!(v.unwrap(), Value::Integer(42));
        let (_to, v) = copy_eval("return 1.5");
        assert_eq!(v.unwrap(), Value::Number(1.5));
        let (_to, v) = copy_eval("return true");
        assert_eq!(v.unwrap(), Value::Boolean(true));
        let (_to, v) = copy_eval(r#"return "a\0b\255""#);
        let Value::String(s) = v.unwrap() else {
            panic!("not a string")
        };
        assert_eq!(&*s.as_bytes(), b"a\0b\xff");
    }

    #[test]
    fn nested_tables_keep_keys_and_values() {
        let (to, v) =
            copy_eval(r#"return { "x", "y", name = "n", [10] = { deep = { 1, 2 } }, [true] = 0 }"#);
        to.globals().set("t", v.unwrap()).unwrap();
        let check: bool = to
            .load(
                r#"return t[1] == "x" and t[2] == "y" and t.name == "n"
                   and t[10].deep[2] == 2 and t[true] == 0"#,
            )
            .eval()
            .unwrap();
        assert!(check);
    }

    #[test]
    fn shared_subtables_are_not_cycles() {
        let (_to, v) = copy_eval("local s = { 1 } return { a = s, b = s }");
        assert!(v.is_ok());
    }

    #[test]
    fn cycles_are_errors() {
        let (_to, v) = copy_eval("local t = {} t.self = t return t");
        let message = v.unwrap_err().to_string();
        assert!(message.contains("contains itself"), "{message}");
    }

    #[test]
    fn depth_is_limited() {
        let (_to, v) = copy_eval("local t = {} for i = 1, 40 do t = { t } end return t");
        let message = v.unwrap_err().to_string();
        assert!(message.contains("nested deeper than 32"), "{message}");
    }

    #[test]
    fn functions_cannot_cross() {
        let (_to, v) = copy_eval("return { f = print }");
        let message = v.unwrap_err().to_string();
        assert!(message.contains("cannot copy a function"), "{message}");
    }
}
