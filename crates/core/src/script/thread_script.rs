//! A worker's Lua state and the hooks the engine calls per request:
//! `request()`, `response(status, headers, body)` and `delay()`.
//!
//! The hooks are looked up once, after `init()` (which may define them),
//! and kept as functions. For the run the worker takes the state out of
//! its slot ([`ThreadScript::activate`]), so no call locks anything; before
//! activation each call holds the slot's lock for its duration, so the main
//! state never runs Lua in this state at the same time.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use mlua::{Function, Lua, Table, Value};

use super::error::{ScriptError, Stage};
use super::flow::{self, Flows, Next, StepNames};
use super::thread::{lock, ThreadHandle};
use super::{hook, wrk};
use crate::http::h1::request;

/// The hooks a state defines, found once.
#[derive(Debug)]
struct Hooks {
    request: Option<Function>,
    response: Option<Function>,
    event: Option<Function>,
    message: Option<Function>,
    delay: Option<Function>,
}

impl Hooks {
    fn detect(lua: &Lua) -> Hooks {
        Hooks {
            request: hook(lua, "request"),
            response: hook(lua, "response"),
            event: hook(lua, "event"),
            message: hook(lua, "message"),
            delay: hook(lua, "delay"),
        }
    }
}

/// One worker thread's script. `Send`, so it moves into the worker.
#[derive(Debug)]
pub struct ThreadScript {
    lua: Lua,
    handle: ThreadHandle,
    hooks: Hooks,
    file: String,
    /// The worker holds the state (taken out of its slot).
    active: bool,
    /// `wrk.request()`'s bytes, for a script without `request()`.
    static_bytes: Option<Vec<u8>>,
    calls: u64,
    /// The visits, when the script defines `flow(visit)`.
    flows: Option<Flows>,
}

impl ThreadScript {
    /// A worker's script, its hooks found. A script with both `flow()`
    /// and `request()` is refused: a visit builds its own requests.
    pub(crate) fn new(
        lua: Lua,
        handle: ThreadHandle,
        file: String,
        steps: Arc<StepNames>,
    ) -> Result<ThreadScript, ScriptError> {
        let hooks = Hooks::detect(&lua);
        // Other hooks set to a non-function are ignored, as wrk does; a
        // flow is new, and a value there can only be a slip.
        if let Ok(v) = lua.globals().get::<mlua::Value>("flow") {
            if !v.is_nil() && !v.is_function() {
                // Lua's own word: an integer is a number.
                let what = match v {
                    mlua::Value::Integer(_) => "number",
                    v => v.type_name(),
                };
                return Err(ScriptError::Lua {
                    stage: Stage::Init,
                    message: format!(
                        "flow is a {what}, not a function; define it as function flow(visit) ... end"
                    ),
                    file,
                });
            }
        }
        let flows = Flows::detect(&lua, steps);
        if let (Some(_), Some(request)) = (&flows, &hooks.request) {
            let line = request.info().line_defined.unwrap_or(0);
            return Err(ScriptError::Lua {
                stage: Stage::Init,
                message: format!(
                    "{file}:{line}: flow(visit) builds every request with http.*; drop request(), or drop flow() to run request() per request"
                ),
                file,
            });
        }
        Ok(ThreadScript {
            hooks,
            lua,
            handle,
            file,
            active: false,
            static_bytes: None,
            calls: 0,
            flows,
        })
    }

    /// The address to connect to, after `setup()` may have changed it.
    pub fn addr(&self) -> SocketAddr {
        self.handle.info.addr()
    }

    /// Without `request()` (or `flow()`), every request is the same bytes.
    pub fn is_static(&self) -> bool {
        self.hooks.request.is_none() && self.flows.is_none()
    }

    /// Only then does the engine need to capture heads and bodies.
    pub fn has_response(&self) -> bool {
        self.hooks.response.is_some() || self.flows.is_some()
    }

    /// The script runs visits: `flow(visit)`.
    pub fn has_flow(&self) -> bool {
        self.flows.is_some()
    }

    /// Starts visit `id` under the engine's `key`: runs its flow to its
    /// first pause.
    pub fn visit_start(&mut self, key: u32, id: u64) -> Result<Next, ScriptError> {
        self.visit_resume(|f| f.start(key, id))
    }

    /// Resumes visit `key` after its rest.
    pub fn visit_wake(&mut self, key: u32) -> Result<Next, ScriptError> {
        self.visit_resume(|f| f.wake(key))
    }

    /// Resumes visit `key` with its step's answer: `status` and, when the
    /// request was lost, `error` ("timeout", "read", ...) with status 0.
    pub fn visit_answer(
        &mut self,
        key: u32,
        status: u16,
        error: Option<&str>,
        headers: &mut dyn Iterator<Item = (&str, &[u8])>,
        body: &[u8],
    ) -> Result<Next, ScriptError> {
        let guard = guard_unless(self.active, &self.handle.slot);
        let built = answer_tables(&self.lua, status, error, headers, body);
        drop(guard);
        let (response, cookies) = built.map_err(|e| flow::error(&self.file, &e))?;
        self.visit_resume(|f| f.answer(key, response, cookies))
    }

    /// Puts the request visit `key` waits to send in `out`, noting in
    /// `requests` where it ends: returns its step's index (`None` when the
    /// visit has no step waiting).
    pub fn visit_request(
        &mut self,
        key: u32,
        out: &mut Vec<u8>,
        requests: &mut Vec<request::RequestMeta>,
    ) -> Result<Option<u16>, ScriptError> {
        let Some((bytes, step)) = self.flows.as_mut().and_then(|f| f.take_step(key)) else {
            return Ok(None);
        };
        *out = bytes;
        request::metas_into(out, requests).map_err(|why| ScriptError::Lua {
            stage: Stage::Flow,
            file: self.file.clone(),
            message: format!(
                "a step's request is not valid HTTP ({why}): check its path, headers and body"
            ),
        })?;
        Ok(Some(step))
    }

    /// Forgets visit `key`, which the engine gave up.
    pub fn visit_end(&mut self, key: u32) {
        if let Some(f) = self.flows.as_mut() {
            f.end(key);
        }
    }

    fn visit_resume(
        &mut self,
        resume: impl FnOnce(&mut Flows) -> mlua::Result<Next>,
    ) -> Result<Next, ScriptError> {
        let _guard = guard_unless(self.active, &self.handle.slot);
        self.calls += 1;
        let Some(flows) = self.flows.as_mut() else {
            return Ok(Next::Done);
        };
        resume(flows).map_err(|e| flow::error(&self.file, &e))
    }

    /// The script reads the events of streamed responses (`event(data)`).
    pub fn has_event(&self) -> bool {
        self.hooks.event.is_some()
    }

    /// The script reads WebSocket messages (`message(data, binary)`).
    pub fn has_message(&self) -> bool {
        self.hooks.message.is_some()
    }

    pub fn has_delay(&self) -> bool {
        self.hooks.delay.is_some()
    }

    /// Takes the state for the run: called once in the worker thread.
    pub fn activate(&mut self) {
        if !self.active {
            lock(&self.handle.slot).take();
            self.active = true;
        }
    }

    /// Hands the state back after the run, so `done()` can `thread:get`.
    pub fn deactivate(&mut self) {
        if self.active {
            *lock(&self.handle.slot) = Some(self.lua.clone());
            self.active = false;
        }
    }

    /// `thread:stop()` was called (from any state).
    pub fn stop_requested(&self) -> bool {
        self.handle.info.stop_requested()
    }

    /// Lua calls made for the engine so far: `request()`, `response()`,
    /// `delay()`, and the one `wrk.request()` of a static script.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The static request (`wrk.request()`), built on the first call only.
    pub fn static_request(&mut self) -> Result<Vec<u8>, ScriptError> {
        self.static_bytes().map(<[u8]>::to_vec)
    }

    /// Calls `request()` and puts its bytes in `out` (cleared first). A
    /// static script gets its static request, without a Lua call.
    pub fn request(&mut self, out: &mut Vec<u8>) -> Result<(), ScriptError> {
        let Some(request) = &self.hooks.request else {
            let bytes = self.static_bytes()?;
            out.clear();
            out.extend_from_slice(bytes);
            return Ok(());
        };
        let _guard = guard_unless(self.active, &self.handle.slot);
        self.calls += 1;
        let value = request
            .call::<Value>(())
            .map_err(|e| self.error(Stage::Request, &e))?;
        let Value::String(bytes) = value else {
            return Err(self.wrong_return(
                Stage::Request,
                Some(request),
                "a string of request bytes",
                &value,
            ));
        };
        out.clear();
        out.extend_from_slice(&bytes.as_bytes());
        Ok(())
    }

    /// Calls `request()` as [`request`](Self::request) does, and checks
    /// that its bytes are whole HTTP requests, noting in `requests` where
    /// each ends and which are HEAD requests (their responses have no
    /// body).
    pub fn request_batch(
        &mut self,
        out: &mut Vec<u8>,
        requests: &mut Vec<request::RequestMeta>,
    ) -> Result<(), ScriptError> {
        self.request(out)?;
        request::metas_into(out, requests).map_err(|why| ScriptError::NotHttp {
            file: self.file.clone(),
            location: self.location(self.hooks.request.as_ref()),
            why: why.to_string(),
        })
    }

    fn static_bytes(&mut self) -> Result<&[u8], ScriptError> {
        let bytes = match self.static_bytes.take() {
            Some(bytes) => bytes,
            None => self.build_static()?,
        };
        Ok(self.static_bytes.insert(bytes))
    }

    fn build_static(&mut self) -> Result<Vec<u8>, ScriptError> {
        let _guard = guard_unless(self.active, &self.handle.slot);
        self.calls += 1;
        let result = wrk::table(&self.lua)
            .and_then(|wrk| wrk.get::<Function>("request"))
            .and_then(|request| request.call::<Value>(()));
        match result.map_err(|e| self.error(Stage::StaticRequest, &e))? {
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            other => Err(self.wrong_return(
                Stage::StaticRequest,
                None,
                "a string of request bytes",
                &other,
            )),
        }
    }

    /// Calls `event(data)` with one event's data (`--sse`), if the script
    /// defines it.
    pub fn event(&mut self, data: &[u8]) -> Result<(), ScriptError> {
        let Some(event) = &self.hooks.event else {
            return Ok(());
        };
        let _guard = guard_unless(self.active, &self.handle.slot);
        self.calls += 1;
        self.lua
            .create_string(data)
            .and_then(|data| event.call::<()>(data))
            .map_err(|e| self.error(Stage::Event, &e))
    }

    /// Calls `message(data, binary)` with one WebSocket message received,
    /// if the script defines it.
    pub fn message(&mut self, data: &[u8], binary: bool) -> Result<(), ScriptError> {
        let Some(message) = &self.hooks.message else {
            return Ok(());
        };
        let _guard = guard_unless(self.active, &self.handle.slot);
        self.calls += 1;
        self.lua
            .create_string(data)
            .and_then(|data| message.call::<()>((data, binary)))
            .map_err(|e| self.error(Stage::Message, &e))
    }

    /// Calls `response(status, headers, body)`, if the script defines it.
    pub fn response(
        &mut self,
        status: u16,
        headers: &mut dyn Iterator<Item = (&str, &[u8])>,
        body: &[u8],
    ) -> Result<(), ScriptError> {
        let Some(response) = &self.hooks.response else {
            return Ok(());
        };
        let _guard = guard_unless(self.active, &self.handle.slot);
        self.calls += 1;
        call_response(&self.lua, response, status, headers, body)
            .map_err(|e| self.error(Stage::Response, &e))
    }

    /// Calls `delay()`: milliseconds to wait before the next request. A
    /// script without `delay()` waits 0.
    pub fn delay_ms(&mut self) -> Result<f64, ScriptError> {
        let Some(delay) = &self.hooks.delay else {
            return Ok(0.0);
        };
        let _guard = guard_unless(self.active, &self.handle.slot);
        self.calls += 1;
        let value = delay
            .call::<Value>(())
            .map_err(|e| self.error(Stage::Delay, &e))?;
        let ms = match value {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            other => {
                return Err(self.wrong_return(
                    Stage::Delay,
                    Some(delay),
                    "a number of milliseconds",
                    &other,
                ))
            }
        };
        // `!(ms > 0.0)` also catches NaN.
        Ok(if ms > 0.0 { ms } else { 0.0 })
    }

    fn error(&self, stage: Stage, error: &mlua::Error) -> ScriptError {
        ScriptError::lua(stage, &self.file, error)
    }

    fn wrong_return(
        &self,
        stage: Stage,
        hook: Option<&Function>,
        expected: &'static str,
        found: &Value,
    ) -> ScriptError {
        ScriptError::Return {
            stage,
            file: self.file.clone(),
            location: self.location(hook),
            expected,
            found: found.type_name(),
        }
    }

    /// Where `hook` is defined, `file:LINE`: the line a reader has to fix.
    fn location(&self, hook: Option<&Function>) -> String {
        match hook.and_then(|f| f.info().line_defined) {
            Some(line) => format!("{}:{line}", self.file),
            None => self.file.clone(),
        }
    }

    #[cfg(test)]
    pub(crate) fn lua(&self) -> &Lua {
        &self.lua
    }
}

impl Drop for ThreadScript {
    /// A worker that ends without handing its state back still lets
    /// `done()` read it.
    fn drop(&mut self) {
        self.deactivate();
    }
}

/// Before activation, the slot's lock keeps the main state out while this
/// state runs; after it, the worker owns the state and needs no lock.
fn guard_unless(active: bool, slot: &Mutex<Option<Lua>>) -> Option<MutexGuard<'_, Option<Lua>>> {
    (!active).then(|| lock(slot))
}

/// Builds `response()`'s arguments in Lua and calls it.
fn call_response(
    lua: &Lua,
    response: &Function,
    status: u16,
    headers: &mut dyn Iterator<Item = (&str, &[u8])>,
    body: &[u8],
) -> mlua::Result<()> {
    let headers = headers_table(lua, headers)?;
    let body = lua.create_string(body)?;
    response.call::<()>((status, headers, body))
}

/// A step's answer as the flow reads it, `{status, headers, body, error}`,
/// and every Set-Cookie value it carried, in order, for the visit's jar.
fn answer_tables(
    lua: &Lua,
    status: u16,
    error: Option<&str>,
    headers: &mut dyn Iterator<Item = (&str, &[u8])>,
    body: &[u8],
) -> mlua::Result<(Table, Table)> {
    let response = lua.create_table_with_capacity(0, 4)?;
    let fields = lua.create_table()?;
    let cookies = lua.create_table()?;
    for (name, value) in headers {
        let value = lua.create_string(value)?;
        if name.eq_ignore_ascii_case("set-cookie") {
            cookies.raw_push(value.clone())?;
        }
        // Lower case whatever the protocol; the flow finds any case.
        fields.raw_set(name.to_ascii_lowercase(), value)?;
    }
    response.raw_set("status", status)?;
    response.raw_set("headers", fields)?;
    response.raw_set("body", lua.create_string(body)?)?;
    if let Some(error) = error {
        response.raw_set("error", error)?;
    }
    Ok((response, cookies))
}

/// `response()`'s headers argument: name → value; a repeated name keeps
/// its last value.
fn headers_table(
    lua: &Lua,
    headers: &mut dyn Iterator<Item = (&str, &[u8])>,
) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, headers.size_hint().0)?;
    for (name, value) in headers {
        table.raw_set(name, lua.create_string(value)?)?;
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{script_file, target};
    use super::super::{MainScript, ScriptTarget};
    use super::*;
    use crate::http::h1::request::split_requests;

    fn thread_with(name: &str, code: &str, target: ScriptTarget) -> ThreadScript {
        let mut main = MainScript::load(&script_file(name, code), target).unwrap();
        let addr = "127.0.0.1:8080".parse().unwrap();
        main.create_thread(0, addr, &[]).unwrap()
    }

    fn thread(name: &str, code: &str) -> ThreadScript {
        thread_with(name, code, target())
    }

    fn request_text(t: &mut ThreadScript) -> String {
        let mut out = Vec::new();
        t.request(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn thread_scripts_can_move_to_workers() {
        fn assert_send<T: Send>() {}
        assert_send::<ThreadScript>();
    }

    #[test]
    fn hooks_are_detected() {
        let t = thread("none.lua", "");
        assert!(t.is_static() && !t.has_response() && !t.has_delay());
        let t = thread(
            "all.lua",
            "function request() return wrk.format() end function response() end \
             function delay() return 1 end",
        );
        assert!(!t.is_static() && t.has_response() && t.has_delay());
    }

    #[test]
    fn hooks_defined_in_init_count() {
        let t = thread("late.lua", "function init() function response() end end");
        assert!(t.has_response());
    }

    #[test]
    fn static_scripts_build_the_request_once() {
        let mut t = thread(
            "post.lua",
            r#"wrk.method = "POST"
               wrk.path = "/submit"
               wrk.body = "a=1&b=2"
               wrk.headers["Content-Type"] = "application/x-www-form-urlencoded""#,
        );
        assert!(t.is_static());
        t.activate();
        let expected: &[u8] = b"POST /submit HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\
              Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\na=1&b=2";
        for _ in 0..100 {
            assert_eq!(t.static_request().unwrap(), expected);
        }
        let mut out = Vec::new();
        for _ in 0..100 {
            t.request(&mut out).unwrap();
            assert_eq!(out, expected);
        }
        assert_eq!(t.calls(), 1);
    }

    #[test]
    fn an_overridden_wrk_request_must_return_a_string() {
        let mut t = thread("override.lua", "wrk.request = function() return {} end");
        let text = t.static_request().unwrap_err().to_string();
        assert!(
            text.starts_with("script error in wrk.request() (")
                && text.ends_with("expected a string of request bytes, got table"),
            "{text}"
        );
    }

    #[test]
    fn auth_header_comes_from_wrk_headers() {
        let mut t = thread(
            "auth.lua",
            r#"wrk.headers["Authorization"] = "Bearer secret""#,
        );
        assert_eq!(
            t.static_request().unwrap(),
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAuthorization: Bearer secret\r\n\r\n"
        );
    }

    #[test]
    fn command_line_headers_reach_the_static_request() {
        let mut target = target();
        target.headers = vec![("X-Trace".into(), "on".into())];
        let mut t = thread_with("h.lua", "", target);
        assert_eq!(
            t.static_request().unwrap(),
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Trace: on\r\n\r\n"
        );
    }

    #[test]
    fn counter_in_the_path() {
        let mut t = thread(
            "counter.lua",
            r#"local counter = 0
               function request()
                 counter = counter + 1
                 return wrk.format(nil, "/" .. counter)
               end"#,
        );
        t.activate();
        for n in 1..=3 {
            assert_eq!(
                request_text(&mut t),
                format!("GET /{n} HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
            );
        }
        assert_eq!(t.calls(), 3);
    }

    #[test]
    fn pipelined_requests_split_into_three() {
        let mut t = thread(
            "pipeline.lua",
            r#"function init(args)
                 local r = {}
                 r[1] = wrk.format(nil, "/?foo")
                 r[2] = wrk.format(nil, "/?bar")
                 r[3] = wrk.format(nil, "/?baz")
                 req = table.concat(r)
               end
               function request() return req end"#,
        );
        let mut out = Vec::new();
        t.request(&mut out).unwrap();
        assert_eq!(split_requests(&out).unwrap().len(), 3);
    }

    #[test]
    fn request_reuses_the_buffer() {
        let mut t = thread(
            "reuse.lua",
            r#"function request() return "GET / HTTP/1.1\r\n\r\n" end"#,
        );
        let mut out = b"old bytes that must go".to_vec();
        t.request(&mut out).unwrap();
        assert_eq!(out, b"GET / HTTP/1.1\r\n\r\n");
    }

    #[test]
    fn response_sees_status_headers_and_body() {
        let mut t = thread(
            "resp.lua",
            r#"function response(status, headers, body)
                 got = status .. " " .. headers["Content-Type"] .. " " .. #body
               end"#,
        );
        t.activate();
        let fields: [(&str, &[u8]); 1] = [("Content-Type", b"text/plain")];
        t.response(200, &mut fields.iter().copied(), b"a\0b")
            .unwrap();
        assert_eq!(
            t.lua().globals().get::<String>("got").unwrap(),
            "200 text/plain 3"
        );
        assert_eq!(t.calls(), 1);
    }

    #[test]
    fn stop_from_response_sets_the_flag() {
        let mut t = thread(
            "stop.lua",
            r#"local n = 0
               function response() n = n + 1 if n == 2 then wrk.thread:stop() end end"#,
        );
        t.activate();
        t.response(200, &mut std::iter::empty(), b"").unwrap();
        assert!(!t.stop_requested());
        t.response(200, &mut std::iter::empty(), b"").unwrap();
        assert!(t.stop_requested());
        assert_eq!(t.calls(), 2);
    }

    #[test]
    fn delay_returns_milliseconds() {
        let mut t = thread(
            "delay.lua",
            "local d = 10 function delay() d = d - 15 return d end",
        );
        assert_eq!(t.delay_ms().unwrap(), 0.0);
        let mut t = thread("delay2.lua", "function delay() return 2.5 end");
        assert_eq!(t.delay_ms().unwrap(), 2.5);
        let mut t = thread("nodelay.lua", "");
        assert_eq!(t.delay_ms().unwrap(), 0.0);
        assert_eq!(t.calls(), 0);
    }

    #[test]
    fn runtime_error_in_request_is_one_line() {
        let mut t = thread(
            "auth.lua",
            "local token\nfunction request()\n  return wrk.format(nil, \"/\" .. token)\nend\n",
        );
        let text = t.request(&mut Vec::new()).unwrap_err().to_string();
        assert!(
            text.starts_with("script error in request() (")
                && text.contains("auth.lua): ")
                && text.contains("auth.lua:3: attempt to concatenate"),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
    }

    #[test]
    fn request_must_return_a_string() {
        let mut t = thread("num.lua", "function request() return 42 end");
        let text = t.request(&mut Vec::new()).unwrap_err().to_string();
        assert!(
            text.starts_with("script error in request() (")
                && text.ends_with("num.lua:1: expected a string of request bytes, got integer"),
            "{text}"
        );
    }

    /// Bytes that are not HTTP stop the run with the script's file and the
    /// line of its `request()`, not with a worker's number.
    #[test]
    fn request_must_return_whole_http_requests() {
        let mut t = thread(
            "junk.lua",
            "\nfunction request()\n  return 'GET / HTTP/1.1\\r\\nBad Name: v\\r\\n\\r\\n'\nend\n",
        );
        let mut heads = Vec::new();
        let text = t
            .request_batch(&mut Vec::new(), &mut heads)
            .unwrap_err()
            .to_string();
        assert!(
            text.starts_with("script error in request() (")
                && text.contains("junk.lua:2: returned bytes that are not whole HTTP requests: request 1 is not an HTTP request")
                && text.ends_with("; return HTTP/1.x requests, as wrk.format() builds them from valid fields (over WebSocket, a message: wrk.format(nil, nil, nil, message))"),
            "{text}"
        );
        let mut t = thread(
            "head.lua",
            "function request() return wrk.format('HEAD') end",
        );
        let mut out = Vec::new();
        t.request_batch(&mut out, &mut heads).unwrap();
        assert_eq!(heads.iter().map(|m| m.head).collect::<Vec<_>>(), [true]);
    }

    #[test]
    fn delay_must_return_a_number() {
        let mut t = thread("dstr.lua", "function delay() return 'soon' end");
        let text = t.delay_ms().unwrap_err().to_string();
        assert!(
            text.ends_with("expected a number of milliseconds, got string"),
            "{text}"
        );
    }

    #[test]
    fn errors_in_response_name_response() {
        let mut t = thread(
            "r.lua",
            "function response(s, h, b)\n  return h.missing.x\nend",
        );
        let text = t
            .response(200, &mut std::iter::empty(), b"")
            .unwrap_err()
            .to_string();
        assert!(
            text.starts_with("script error in response() (") && text.contains("r.lua:2: "),
            "{text}"
        );
    }

    #[test]
    fn activation_hands_the_state_over_and_back() {
        let mut t = thread("slot.lua", "");
        assert!(lock(&t.handle.slot).is_some());
        t.activate();
        assert!(lock(&t.handle.slot).is_none());
        t.deactivate();
        assert!(lock(&t.handle.slot).is_some());
        t.activate();
        let slot = t.handle.slot.clone();
        drop(t);
        assert!(lock(&slot).is_some());
    }

    #[test]
    fn workers_run_on_their_own_threads() {
        let t = thread(
            "count.lua",
            "n = 0 function request() n = n + 1 return 'GET / HTTP/1.1\\r\\n\\r\\n' end",
        );
        let t = std::thread::spawn(move || {
            let mut t = t;
            t.activate();
            let mut out = Vec::new();
            for _ in 0..10 {
                t.request(&mut out).unwrap();
            }
            t.deactivate();
            t
        })
        .join()
        .unwrap();
        assert_eq!(t.lua().globals().get::<i64>("n").unwrap(), 10);
    }
}
