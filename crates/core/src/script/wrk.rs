//! The `wrk` table every Lua state gets: the target (`scheme`, `host`,
//! `port`, `path`), the default request (`method`, `headers`, `body`), the
//! state's `thread`, and the functions `format`, `request`, `lookup`,
//! `connect` and `time_us`.
//!
//! Scripts change the default request by assigning to the table, so
//! `wrk.format` reads `method`, `path`, `headers` and `body` from it when it
//! is called, not when the state was made. The bytes themselves come from
//! [`crate::http::h1::request::format`], which adds `Host` (the target's
//! authority) and `Content-Length` unless the headers carry them; unlike
//! wrk, the caller's headers table is left as it was.
//!
//! A Lua table has no order, yet the request bytes should not change from
//! run to run: fields named on the command line (`-H`) go first, in the
//! order given, then the others sorted by name.

use std::io::Write as _;
use std::sync::Arc;

use mlua::{Lua, Table, Value};

use super::net;
use super::thread::ThreadRef;
use super::ScriptTarget;
use crate::http::h1::request;

/// Registry key of the `wrk` table, so that our functions find it even if
/// the script rebinds the global name.
const WRK_KEY: &str = "metron.wrk";

/// What `wrk.format` needs besides the table: the target's authority and
/// the command line's field order.
#[derive(Debug)]
struct Formatter {
    authority: String,
    /// `-H` names in the order given.
    order: Vec<String>,
}

/// Builds the `wrk` table in `lua` and makes it the global `wrk`.
pub(crate) fn install(
    lua: &Lua,
    target: &ScriptTarget,
    thread: Option<ThreadRef>,
) -> mlua::Result<()> {
    let wrk = lua.create_table()?;
    wrk.set("scheme", target.scheme.as_str())?;
    wrk.set("host", target.host.as_str())?;
    // As in wrk: the port as written in the URL, a string, or nil when the
    // URL names none (scripts write `wrk.port or "http"`).
    wrk.set("port", written_port(&target.url))?;
    wrk.set("method", target.method.as_str())?;
    wrk.set("path", target.path.as_str())?;
    if let Some(body) = &target.body {
        wrk.set("body", lua.create_string(body)?)?;
    }
    wrk.set("headers", headers_table(lua, &target.headers)?)?;
    if let Some(thread) = thread {
        wrk.set("thread", lua.create_userdata(thread)?)?;
    }
    add_functions(lua, &wrk, target)?;
    lua.set_named_registry_value(WRK_KEY, &wrk)?;
    lua.globals().set("wrk", wrk)
}

/// The port a URL spells out, if any: what follows the last `:` of its
/// authority, outside an IPv6 literal's brackets.
fn written_port(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_end = authority.rfind(']').unwrap_or(0);
    let (_, port) = authority[host_end..].rsplit_once(':')?;
    (!port.is_empty()).then_some(port)
}

/// This state's `wrk` table, wherever the script keeps the global name.
pub(crate) fn table(lua: &Lua) -> mlua::Result<Table> {
    lua.named_registry_value(WRK_KEY)
}

fn headers_table(lua: &Lua, headers: &[(String, String)]) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, headers.len())?;
    for (name, value) in headers {
        table.set(name.as_str(), value.as_str())?;
    }
    Ok(table)
}

fn add_functions(lua: &Lua, wrk: &Table, target: &ScriptTarget) -> mlua::Result<()> {
    let formatter = Arc::new(Formatter {
        authority: target.authority.clone(),
        order: target.headers.iter().map(|(n, _)| n.clone()).collect(),
    });
    let for_format = formatter.clone();
    wrk.set(
        "format",
        lua.create_function(move |lua, args: FormatArgs| for_format.format(lua, args))?,
    )?;
    wrk.set(
        "request",
        lua.create_function(move |lua, ()| formatter.format(lua, FormatArgs::default()))?,
    )?;
    wrk.set("lookup", lua.create_function(lookup)?)?;
    wrk.set("connect", lua.create_function(connect)?)?;
    wrk.set("time_us", lua.create_function(|_, ()| Ok(net::time_us()))?)?;
    Ok(())
}

/// `wrk.format`'s arguments; `nil` falls back to the `wrk` table.
#[derive(Default)]
struct FormatArgs {
    method: Option<mlua::String>,
    path: Option<mlua::String>,
    headers: Option<Table>,
    body: Option<mlua::String>,
}

impl mlua::FromLuaMulti for FormatArgs {
    fn from_lua_multi(values: mlua::MultiValue, lua: &Lua) -> mlua::Result<Self> {
        let (method, path, headers, body) = mlua::FromLuaMulti::from_lua_multi(values, lua)?;
        Ok(FormatArgs {
            method,
            path,
            headers,
            body,
        })
    }
}

impl Formatter {
    fn format(&self, lua: &Lua, args: FormatArgs) -> mlua::Result<mlua::String> {
        let wrk = table(lua)?;
        let method = text_or_field(args.method, &wrk, "method")?;
        let path = text_or_field(args.path, &wrk, "path")?;
        let headers = match args.headers {
            Some(table) => table,
            None => wrk
                .get::<Option<Table>>("headers")?
                .unwrap_or(lua.create_table()?),
        };
        let headers = self.header_list(lua, &headers)?;
        let body = match args.body {
            Some(body) => Some(body),
            None => wrk.get::<Option<mlua::String>>("body")?,
        };
        let body = body.as_ref().map(|b| b.as_bytes());
        let bytes = request::format(&method, &path, &headers, body.as_deref(), &self.authority);
        lua.create_string(bytes)
    }

    /// The headers table as ordered name/value pairs (see the module doc).
    fn header_list(&self, lua: &Lua, table: &Table) -> mlua::Result<Vec<(String, String)>> {
        let mut list = Vec::new();
        for pair in table.pairs::<Value, Value>() {
            let (name, value) = pair?;
            let name = header_text(lua, name, || "a header name".to_owned())?;
            let value = header_text(lua, value, || format!("the value of header {name}"))?;
            list.push((name, value));
        }
        list.sort_by(|a, b| (self.rank(&a.0), &a.0).cmp(&(self.rank(&b.0), &b.0)));
        Ok(list)
    }

    fn rank(&self, name: &str) -> usize {
        self.order
            .iter()
            .position(|given| given.eq_ignore_ascii_case(name))
            .unwrap_or(usize::MAX)
    }
}

/// A string argument, or else the `wrk` table's field of that name.
fn text_or_field(arg: Option<mlua::String>, wrk: &Table, field: &str) -> mlua::Result<String> {
    let value = match arg {
        Some(s) => Some(s),
        None => wrk.get::<Option<mlua::String>>(field)?,
    };
    let value = value
        .ok_or_else(|| mlua::Error::runtime(format!("wrk.{field} is nil: expected a string")))?;
    let text = value
        .to_str()
        .map_err(|_| mlua::Error::runtime(format!("the request {field} is not valid UTF-8")))?;
    Ok(text.to_owned())
}

/// A header name or value as text: strings, and numbers written the way
/// Lua writes them.
/// `what` names the value for the error message, built only on failure.
fn header_text(lua: &Lua, value: Value, what: impl Fn() -> String) -> mlua::Result<String> {
    let type_name = value.type_name();
    let text = match value {
        Value::String(_) | Value::Integer(_) | Value::Number(_) => lua.coerce_string(value)?,
        _ => None,
    };
    let bad = |expected: &str| {
        mlua::Error::runtime(format!("{} is {type_name}: expected {expected}", what()))
    };
    let text = text.ok_or_else(|| bad("a string or a number"))?;
    let text = text.to_str().map_err(|_| bad("valid UTF-8"))?;
    Ok(text.to_owned())
}

/// `wrk.lookup(host, service)`: address strings, or nil after printing
/// why to stderr (wrk's behaviour, which scripts test for).
fn lookup(lua: &Lua, (host, service): (String, String)) -> mlua::Result<Value> {
    match net::lookup(&host, &service) {
        Ok(addrs) => {
            let list = addrs.iter().map(|a| a.to_string());
            Ok(Value::Table(lua.create_sequence_from(list)?))
        }
        Err(reason) => {
            let _ = writeln!(
                std::io::stderr(),
                "unable to resolve {host}:{service}: {reason}"
            );
            Ok(Value::Nil)
        }
    }
}

/// `wrk.connect(addr)`: true if a TCP connection opens within a second.
fn connect(_: &Lua, addr: String) -> mlua::Result<bool> {
    let addr = addr.parse().map_err(|_| {
        mlua::Error::runtime(format!(
            "wrk.connect: invalid address \"{addr}\": expected ip:port as wrk.lookup returns"
        ))
    })?;
    Ok(net::can_connect(&addr))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn target() -> ScriptTarget {
        ScriptTarget {
            scheme: "http".into(),
            host: "example.test".into(),
            port: 8080,
            method: "GET".into(),
            path: "/start".into(),
            body: None,
            authority: "example.test:8080".into(),
            url: "http://example.test:8080/start".into(),
            headers: vec![("X-B".into(), "2".into()), ("X-A".into(), "1".into())],
            print_to_stderr: false,
        }
    }

    fn state() -> Lua {
        let lua = Lua::new();
        install(&lua, &target(), None).unwrap();
        lua
    }

    fn eval_bytes(lua: &Lua, code: &str) -> Vec<u8> {
        let s: mlua::String = lua.load(code).eval().unwrap();
        s.as_bytes().to_vec()
    }

    #[test]
    fn table_describes_the_target() {
        let lua = state();
        let ok: bool = lua
            .load(
                r#"return wrk.scheme == "http" and wrk.host == "example.test"
                   and wrk.port == "8080" and wrk.path == "/start" and wrk.method == "GET"
                   and wrk.body == nil and wrk.thread == nil and wrk.headers["X-A"] == "1""#,
            )
            .eval()
            .unwrap();
        assert!(ok);
    }

    #[test]
    fn request_uses_the_table_and_keeps_command_line_order() {
        let lua = state();
        let bytes = eval_bytes(
            &lua,
            r#"wrk.headers["Accept"] = "*/*" return wrk.request()"#,
        );
        assert_eq!(
            bytes,
            b"GET /start HTTP/1.1\r\nHost: example.test:8080\r\nX-B: 2\r\nX-A: 1\r\n\
              Accept: */*\r\n\r\n"
        );
    }

    #[test]
    fn format_arguments_override_the_table() {
        let lua = state();
        let bytes = eval_bytes(
            &lua,
            r#"return wrk.format("POST", "/p", { ["Z"] = 1, ["Y"] = "y" }, "abc")"#,
        );
        assert_eq!(
            bytes,
            b"POST /p HTTP/1.1\r\nHost: example.test:8080\r\nY: y\r\nZ: 1\r\n\
              Content-Length: 3\r\n\r\nabc"
        );
    }

    #[test]
    fn format_leaves_the_headers_table_alone() {
        let lua = state();
        let count: i64 = lua
            .load("local h = {} wrk.format(nil, nil, h, 'x') local n = 0 for _ in pairs(h) do n = n + 1 end return n")
            .eval()
            .unwrap();
        assert_eq!(count, 0);
    }

    #[test]
    fn bad_header_values_are_errors() {
        let lua = state();
        let error = lua
            .load(r#"return wrk.format(nil, nil, { X = {} })"#)
            .eval::<mlua::String>()
            .unwrap_err();
        let message = super::super::error::one_line(&error);
        assert!(
            message.contains("the value of header X is table: expected a string or a number"),
            "{message}"
        );
    }

    #[test]
    fn lookup_returns_address_strings() {
        let lua = state();
        let first: String = lua
            .load(r#"return wrk.lookup("127.0.0.1", "80")[1]"#)
            .eval()
            .unwrap();
        assert_eq!(first, "127.0.0.1:80");
        let missing: Value = lua
            .load(r#"return wrk.lookup("host.invalid", "80")"#)
            .eval()
            .unwrap();
        assert_eq!(missing, Value::Nil);
    }

    #[test]
    fn connect_reports_reachability() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let lua = state();
        lua.globals().set("addr", addr.to_string()).unwrap();
        assert!(lua.load("return wrk.connect(addr)").eval::<bool>().unwrap());
        assert!(lua
            .load(r#"return wrk.connect("nope")"#)
            .eval::<bool>()
            .is_err());
    }

    #[test]
    fn time_us_is_an_integer_that_grows() {
        let lua = state();
        let ok: bool = lua
            .load("local a = wrk.time_us() local b = wrk.time_us() return b >= a and a > 0 and a % 1 == 0")
            .eval()
            .unwrap();
        assert!(ok);
    }

    #[test]
    fn the_port_is_the_string_the_url_spells_out() {
        assert_eq!(written_port("http://127.0.0.1:8080/a"), Some("8080"));
        assert_eq!(written_port("https://h:443"), Some("443"));
        assert_eq!(written_port("http://[::1]:9000/x:y"), Some("9000"));
        assert_eq!(written_port("http://[::1]/x"), None);
        assert_eq!(written_port("http://example.test/a:b?c=d:e"), None);
    }
}
