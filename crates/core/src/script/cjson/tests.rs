//! The module as scripts see it: a table of Lua snippets and what each
//! returns, checked against lua-cjson 2.1's documented behaviour.

use super::*;

fn state() -> Lua {
    let lua = Lua::new();
    register(&lua).unwrap();
    lua
}

/// Globals every case can use: both modules, `show(...)` (the values as
/// text, space-separated, `cjson.null` as `null`) and `err(f, ...)` (the
/// error `f(...)` raises, with its Lua type).
const PRELUDE: &str = r##"
cjson = require "cjson"
safe = require "cjson.safe"
local function one(v)
  if v == cjson.null then return "null" end
  return tostring(v)
end
function show(...)
  local out = {}
  for i = 1, select("#", ...) do out[i] = one((select(i, ...))) end
  return table.concat(out, " ")
end
function err(f, ...)
  local ok, e = pcall(f, ...)
  if ok then return "no error" end
  return type(e) .. ": " .. tostring(e)
end
function nest(depth)
  local t = {}
  local inner = t
  for _ = 2, depth do inner[1] = {}; inner = inner[1] end
  return t
end
"##;

/// Each case: Lua code run after the prelude (chunk name `t`), and the
/// string it must return.
const CASES: &[(&str, &str)] = &[
    // The module.
    (
        "return show(cjson._NAME, cjson._VERSION, safe._NAME, safe._VERSION)",
        "cjson 2.1.0 cjson 2.1.0",
    ),
    (
        "return show(require('cjson') == cjson, require('cjson.safe') == safe, cjson ~= safe)",
        "true true true",
    ),
    (
        "return show(type(cjson.new), type(safe.new), cjson.null == safe.null, \
         cjson.array_mt == safe.array_mt, type(cjson.empty_array), type(cjson.empty_array_mt))",
        "function function true true userdata table",
    ),
    // Defaults.
    ("return show(cjson.encode_sparse_array())", "false 2 10"),
    ("return show(cjson.encode_max_depth(), cjson.decode_max_depth())", "1000 1000"),
    ("return show(cjson.encode_number_precision())", "14"),
    ("return show(cjson.encode_keep_buffer())", "true"),
    ("return show(cjson.encode_invalid_numbers())", "false"),
    ("return show(cjson.decode_invalid_numbers())", "true"),
    ("return show(cjson.encode_empty_table_as_object())", "true"),
    ("return show(cjson.decode_array_with_array_mt())", "false"),
    // Setting, then reading back without arguments.
    (
        "local a, b, c = cjson.encode_sparse_array(true, 3, 5) \
         return show(a, b, c, cjson.encode_sparse_array())",
        "true 3 5 true 3 5",
    ),
    ("return show(cjson.encode_sparse_array('on'))", "true 2 10"),
    ("return show(cjson.encode_sparse_array(nil, nil, 4))", "false 2 4"),
    ("return show(cjson.encode_max_depth(5), cjson.encode_max_depth())", "5 5"),
    ("return show(cjson.decode_max_depth(7), cjson.decode_max_depth())", "7 7"),
    (
        "return show(cjson.encode_number_precision(3), cjson.encode_number_precision(), \
         cjson.encode({math.pi, 1/3, 1234.5, 7}))",
        "3 3 [3.14,0.333,1.23e+03,7]",
    ),
    (
        "return show(cjson.encode_keep_buffer(false), cjson.encode_keep_buffer(), \
         cjson.encode({1}), cjson.encode({2}), cjson.encode_keep_buffer('on'))",
        "false false [1] [2] true",
    ),
    (
        "return show(cjson.encode_invalid_numbers('null'), cjson.encode_invalid_numbers(), \
         cjson.encode({0/0, math.huge, -math.huge}))",
        "null null [null,null,null]",
    ),
    (
        "return show(cjson.encode_invalid_numbers(true), cjson.encode({0/0, math.huge, -math.huge}))",
        "true [NaN,Infinity,-Infinity]",
    ),
    (
        "cjson.encode_invalid_numbers('on') \
         return show(cjson.encode_invalid_numbers('off'), err(cjson.encode, {math.huge}))",
        "false string: Cannot serialise number: must not be NaN or Infinity",
    ),
    (
        "return err(cjson.encode, 0/0)",
        "string: Cannot serialise number: must not be NaN or Infinity",
    ),
    (
        "return err(cjson.encode, {[math.huge] = 1})",
        "string: Cannot serialise number: must not be NaN or Infinity",
    ),
    (
        "local t = cjson.decode('[NaN, Infinity, -Infinity, 0x10, +1, 012, inf, -0x1p4]') \
         return show(t[1] ~= t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8])",
        "true inf -inf 16 1 12 inf -16",
    ),
    (
        "return show(cjson.decode_invalid_numbers(false), cjson.decode_invalid_numbers(), \
         err(cjson.decode, '[0x10]'))",
        "false false string: Expected value but found invalid number at character 2",
    ),
    (
        "cjson.decode_invalid_numbers('off') return err(cjson.decode, 'NaN')",
        "string: Expected value but found invalid token at character 1",
    ),
    (
        "cjson.decode_invalid_numbers(false) return err(cjson.decode, '[1, +1]')",
        "string: Expected value but found invalid token at character 5",
    ),
    (
        "cjson.decode_invalid_numbers(false) return err(cjson.decode, '-Infinity')",
        "string: Expected value but found invalid number at character 1",
    ),
    (
        "cjson.decode_invalid_numbers(false) return err(cjson.decode, '[01]')",
        "string: Expected value but found invalid number at character 2",
    ),
    (
        "cjson.decode_invalid_numbers(false) return show(cjson.decode('[-0.5e1, 10]')[1])",
        "-5",
    ),
    (
        "return show(cjson.encode_empty_table_as_object(false), cjson.encode({}))",
        "false []",
    ),
    (
        "local t = cjson.decode('{\"a\":[]}') return show(getmetatable(t.a), cjson.encode(t))",
        "nil {\"a\":{}}",
    ),
    (
        "cjson.decode_array_with_array_mt(true) local t = cjson.decode('{\"a\":[]}') \
         return show(getmetatable(t.a) == cjson.array_mt, cjson.encode(t))",
        "true {\"a\":[]}",
    ),
    // Bad arguments raise, in both modules.
    (
        "return err(cjson.encode_max_depth, 0)",
        "string: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)",
    ),
    (
        "return err(cjson.encode_number_precision, 15)",
        "string: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)",
    ),
    (
        "return err(cjson.encode_invalid_numbers, 'maybe')",
        "string: bad argument #1 to 'encode_invalid_numbers' (invalid option 'maybe')",
    ),
    (
        "return err(safe.encode_keep_buffer, true, 1)",
        "string: bad argument #2 to 'encode_keep_buffer' (found too many arguments)",
    ),
    (
        "return err(cjson.encode)",
        "string: bad argument #1 to 'encode' (expected 1 argument)",
    ),
    (
        "return err(safe.decode, '1', '2')",
        "string: bad argument #1 to 'decode' (expected 1 argument)",
    ),
    (
        "return show(safe.decode({}))",
        "nil bad argument #1 to 'decode' (string expected, got table)",
    ),
    // Errors raised from a script line name it, as Lua's own do.
    (
        "local ok, e = pcall(function()\n  local v = cjson.decode('x')\n  return v\nend) return e",
        "t:2: Expected value but found invalid token at character 1",
    ),
    // Instances do not share settings.
    (
        "local c2 = cjson.new() c2.encode_max_depth(3) \
         return show(cjson.encode_max_depth(), c2.encode_max_depth(), safe.encode_max_depth(), \
         cjson.new().encode_max_depth(), c2._NAME)",
        "1000 3 1000 1000 cjson",
    ),
    (
        "cjson.encode_sparse_array(true) return show(safe.encode_sparse_array())",
        "false 2 10",
    ),
    (
        "safe.decode_max_depth(1) return show(cjson.decode('[[1]]')[1][1], safe.decode('[[1]]'))",
        "1 nil Found too many nested data structures (2) at character 2",
    ),
    (
        "local c2 = cjson.new() return err(c2.decode, '[')",
        "string: Expected value but found T_END at character 2",
    ),
    (
        "local s2 = safe.new() local v, e = s2.decode('[') local w, f = s2.encode(print) \
         return show(v, e, w, f, s2.encode_max_depth(), s2.new().decode(']'))",
        "nil Expected value but found T_END at character 2 \
         nil Cannot serialise function: type not supported 1000 \
         nil Expected value but found T_ARR_END at character 1",
    ),
    ("return show(safe.encode({1}), safe.decode('[1]')[1])", "[1] 1"),
    // Sparse arrays.
    (
        "return err(cjson.encode, {[1] = 1, [20] = 2})",
        "string: Cannot serialise table: excessively sparse array",
    ),
    ("return cjson.encode({[1] = 1, [5] = 5})", "[1,null,null,null,5]"),
    (
        "return cjson.encode({[10] = 1})",
        "[null,null,null,null,null,null,null,null,null,1]",
    ),
    (
        "return err(cjson.encode, {[11] = 1})",
        "string: Cannot serialise table: excessively sparse array",
    ),
    (
        "return cjson.encode({1, 2, 3, 4, 5, 6, [12] = 12})",
        "[1,2,3,4,5,6,null,null,null,null,null,12]",
    ),
    (
        "cjson.encode_sparse_array(true) return cjson.encode({[1000] = 'x'})",
        "{\"1000\":\"x\"}",
    ),
    (
        "cjson.encode_sparse_array(false, 0) return show(#cjson.encode({[100] = 1}))",
        "498",
    ),
    (
        "cjson.encode_sparse_array(false, 1, 0) return err(cjson.encode, {[1] = 1, [3] = 3})",
        "string: Cannot serialise table: excessively sparse array",
    ),
    // Encoding.
    ("return cjson.encode({a = 'x/y\"z'})", "{\"a\":\"x\\/y\\\"z\"}"),
    (
        "return cjson.encode({1, 2.5, -3, 1e20, 123456789012, 0.1})",
        "[1,2.5,-3,1e+20,123456789012,0.1]",
    ),
    (
        "local t = cjson.decode(cjson.encode({10, 20, x = 3})) return show(t['1'], t['2'], t.x)",
        "10 20 3",
    ),
    (
        "return show(cjson.encode(nil), cjson.encode(cjson.null), cjson.encode(true), \
         cjson.encode('s'), cjson.encode(cjson.empty_array))",
        "null null true \"s\" []",
    ),
    (
        "return show(cjson.encode(setmetatable({}, cjson.empty_array_mt)), \
         cjson.encode(setmetatable({a = 1}, cjson.empty_array_mt)), \
         cjson.encode(setmetatable({}, cjson.array_mt)), \
         cjson.encode(setmetatable({1, 2}, cjson.array_mt)))",
        "[] {\"a\":1} [] [1,2]",
    ),
    (
        "return err(cjson.encode, {[true] = 1})",
        "string: Cannot serialise boolean: table key must be a number or string",
    ),
    (
        "return err(cjson.encode, {f = print})",
        "string: Cannot serialise function: type not supported",
    ),
    (
        "return err(cjson.encode, coroutine.create(print))",
        "string: Cannot serialise thread: type not supported",
    ),
    // Nesting limits, both ways.
    (
        "cjson.encode_max_depth(2) return show(cjson.encode({{1}}), err(cjson.encode, {{{1}}}))",
        "[[1]] string: Cannot serialise, excessive nesting (3)",
    ),
    (
        "local a = {} a[1] = a return err(cjson.encode, a)",
        "string: Cannot serialise, excessive nesting (1001)",
    ),
    ("return show(#cjson.encode(nest(1000)))", "2000"),
    (
        "cjson.decode_max_depth(2) \
         return show(cjson.encode(cjson.decode('[[1]]')), err(cjson.decode, '[[[1]]]'))",
        "[[1]] string: Found too many nested data structures (3) at character 3",
    ),
    (
        "return err(cjson.decode, string.rep('[', 1100) .. string.rep(']', 1100))",
        "string: Found too many nested data structures (1001) at character 1001",
    ),
    (
        "return err(cjson.decode, '{\"a\":' .. string.rep('[', 1000))",
        "string: Found too many nested data structures (1001) at character 1005",
    ),
    (
        "cjson.encode_max_depth(100000) return err(cjson.encode, nest(5000))",
        "string: Cannot serialise, excessive nesting (2501)",
    ),
    (
        "cjson.decode_max_depth(100000) return err(cjson.decode, string.rep('[', 5000))",
        "string: Found too many nested data structures (2501) at character 2501",
    ),
    // Decoding errors.
    ("return err(cjson.decode, 'oops')", "string: Expected value but found invalid token at character 1"),
    (
        "return err(cjson.decode, '{oops')",
        "string: Expected object key string but found invalid token at character 2",
    ),
    (
        "return err(cjson.decode, '{\"a\" 1}')",
        "string: Expected colon but found T_NUMBER at character 6",
    ),
    (
        "return err(cjson.decode, '{\"a\":1,}')",
        "string: Expected object key string but found T_OBJ_END at character 8",
    ),
    (
        "return err(cjson.decode, '{\"a\":1 \"b\"}')",
        "string: Expected comma or object end but found T_STRING at character 8",
    ),
    (
        "return err(cjson.decode, '[1 2]')",
        "string: Expected comma or array end but found T_NUMBER at character 4",
    ),
    ("return err(cjson.decode, '[1,]')", "string: Expected value but found T_ARR_END at character 4"),
    ("return err(cjson.decode, '')", "string: Expected value but found T_END at character 1"),
    ("return err(cjson.decode, '  ')", "string: Expected value but found T_END at character 3"),
    (
        "return err(cjson.decode, '[1] x')",
        "string: Expected the end but found invalid token at character 5",
    ),
    (
        "return err(cjson.decode, '{} {}')",
        "string: Expected the end but found T_OBJ_BEGIN at character 4",
    ),
    (
        "return err(cjson.decode, [[\"a\\qb\"]])",
        "string: Expected value but found invalid escape code at character 3",
    ),
    (
        "return err(cjson.decode, [[ { \"bad unicode \\u0f6 escape\" } ]])",
        "string: Expected object key string but found invalid unicode escape code at character 17",
    ),
    (
        "return err(cjson.decode, [[\"\\uDC00\\uD800\"]])",
        "string: Expected value but found invalid unicode escape code at character 2",
    ),
    (
        "return err(cjson.decode, [[\"\\uDB00\"]])",
        "string: Expected value but found invalid unicode escape code at character 2",
    ),
    (
        "return err(cjson.decode, '\"abc')",
        "string: Expected value but found unexpected end of string at character 5",
    ),
    (
        "return err(cjson.decode, '\\0\"\\0\"')",
        "string: JSON parser does not support UTF-16 or UTF-32",
    ),
    (
        "return err(cjson.decode, 'Infrared')",
        "string: Expected the end but found invalid token at character 4",
    ),
    ("return err(cjson.decode, 'Noodle')", "string: Expected value but found invalid token at character 1"),
    ("return err(cjson.decode, '[ -+12 ]')", "string: Expected value but found invalid number at character 3"),
    ("return err(cjson.decode, '-v')", "string: Expected value but found invalid number at character 1"),
    (
        "return err(cjson.decode, '[ 0.4eg10 ]')",
        "string: Expected comma or array end but found invalid token at character 6",
    ),
    ("return err(cjson.decode, 'True')", "string: Expected value but found invalid token at character 1"),
    // Decoding values.
    (
        "return cjson.decode([[\"\\u00e9\\ud83d\\ude00\\/\\t\"]])",
        "\u{e9}\u{1f600}/\t",
    ),
    (
        "local t = cjson.decode('{\"a\":null,\"b\":[null],\"c\":false}') \
         return show(t.a == cjson.null, t.b[1] == cjson.null, #t.b, t.c)",
        "true true 1 false",
    ),
    ("return show(cjson.decode(5), cjson.decode('12\\0zz'))", "5 12"),
    ("return show(cjson.decode('{\"a\":1,\"a\":2}').a)", "2"),
    (
        "local t = cjson.decode(' [ 0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10 ] ') \
         return show(t[1], t[2], t[3], t[4], t[5], t[6])",
        "0 -5000 -1 0.0003 1023.2 0",
    ),
    ("return show(cjson.decode('{\"1\":\"one\"}')['1'])", "one"),
    // Round trips.
    (
        "local v = {a = {1, 2, {b = 'c'}}, s = 'q\"/\\\\\\n\\0', n = -1.5e-7, t = true, f = false, \
         z = cjson.null} \
         local w = cjson.decode(cjson.encode(v)) \
         return show(w.a[3].b, w.s == v.s, w.n, w.t, w.f, w.z, #w.a)",
        "c true -1.5e-07 true false null 3",
    ),
    (
        "local s = {} for i = 0, 255 do s[#s + 1] = string.char(i) end s = table.concat(s) \
         return show(cjson.decode(cjson.encode(s)) == s, cjson.decode(cjson.encode({s}))[1] == s)",
        "true true",
    ),
    (
        "cjson.encode_invalid_numbers(true) local t = cjson.decode(cjson.encode({-math.huge})) \
         return show(t[1])",
        "-inf",
    ),
];

#[test]
fn behaves_like_lua_cjson() {
    let mut failures = Vec::new();
    for (code, want) in CASES {
        let lua = state();
        lua.load(PRELUDE).exec().unwrap();
        let got = lua
            .load(*code)
            .set_name("=t")
            .eval::<String>()
            .unwrap_or_else(|e| format!("<error: {e}>"));
        if got != *want {
            failures.push(format!("{code}\n  want: {want}\n  got:  {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
        message.contains("Expected object key string but found invalid token at character 2"),
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
    assert!(
        error
            .to_string()
            .contains("Cannot serialise function: type not supported"),
        "{error}"
    );
}

#[test]
fn safe_module_returns_nil_and_message() {
    let lua = state();
    let (value, message): (Value, String) = lua
        .load(r#"return require("cjson.safe").decode("[1,")"#)
        .eval()
        .unwrap();
    assert_eq!(value, Value::Nil);
    assert_eq!(message, "Expected value but found T_END at character 4");
}

#[test]
fn deepest_nesting_fits_in_a_small_stack() {
    // Tables nest on the heap, not on the call stack: the deepest nesting
    // allowed, arrays and objects, takes far less than a worker thread's
    // 2 MiB, and stays within mlua's reference slots.
    let run = || {
        let lua = state();
        let code = format!(
            "local c = require 'cjson' c.encode_max_depth({n}) c.decode_max_depth({n}) \
             local a = c.decode(string.rep('[', {n}) .. string.rep(']', {n})) \
             local o = c.decode(string.rep('{{\"k\":', {n} - 1) .. '{{}}' .. string.rep('}}', {n} - 1)) \
             return #c.encode(a) .. ' ' .. #c.encode(o)",
            n = NESTING_LIMIT
        );
        lua.load(code).eval::<String>().unwrap()
    };
    let lengths = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
    let n = NESTING_LIMIT;
    assert_eq!(lengths, format!("{} {}", 2 * n, 2 + 6 * (n - 1)));
}
