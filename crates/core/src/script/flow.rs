//! Visits: the script's `flow(visit)` run once per visit, as a coroutine.
//!
//! The Lua half (`flow.lua`) defines `http.*`, `think` and the visit
//! object; each pauses the visit with `coroutine.yield`. This half starts
//! visits and resumes them, and reads what they yielded as a [`Next`]: a
//! request to send, a rest, or the visit's end. The engine keeps the time;
//! nothing here reads the clock.
//!
//! Step names are shared by every thread ([`StepNames`]), so a step has
//! the same index on all of them and its figures merge by index, as a
//! requests file's endpoints do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mlua::{Function, Lua, MultiValue, Table, Thread, ThreadStatus, Value};

use super::error::{ScriptError, Stage};

/// At most this many step names: a name made of a path with an id in it
/// would make one step per request.
pub const MAX_STEPS: usize = 256;

/// What a visit does next, as it yielded (or ended).
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// A request: its bytes wait in the visit ([`Flows::take_step`]).
    Step,
    /// A rest of this many seconds, holding no connection.
    Think(f64),
    /// `flow(visit)` returned.
    Done,
    /// `visit:fail(reason)`.
    Failed(String),
}

/// The step names every thread shares, by index.
#[derive(Debug, Default)]
pub struct StepNames(Mutex<Vec<String>>);

impl StepNames {
    /// The index of `name`, added if new; `None` past [`MAX_STEPS`].
    fn index(&self, name: &str) -> Option<u16> {
        let mut names = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = names.iter().position(|n| n == name) {
            return Some(i as u16);
        }
        if names.len() >= MAX_STEPS {
            return None;
        }
        names.push(name.to_owned());
        Some((names.len() - 1) as u16)
    }

    /// Every name, by index.
    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A visit under way: the request it is waiting to send. Its coroutine
/// is in [`Flows::threads`].
#[derive(Debug)]
struct Visit {
    step: Option<(Vec<u8>, u16)>,
}

/// A thread's visits, by the engine's key.
#[derive(Debug)]
pub(super) struct Flows {
    flow: Function,
    spawn: Function,
    visits: Vec<Option<Visit>>,
    /// The visits' coroutines, by key, in a Lua table rather than as a
    /// handle each: every handle Rust holds takes one of the few thousand
    /// slots of the state's reference stack, and a thread may hold tens of
    /// thousands of visits (long thinks at a high rate).
    threads: Table,
    names: Arc<StepNames>,
}

/// Installs the flow API (`http`, `think`) in a new state. `seed` makes
/// `think.uniform` and `think.exp` draw a sequence of this state's own.
pub(super) fn install(lua: &Lua, seed: u64) -> mlua::Result<()> {
    let state = AtomicU64::new(seed);
    let random = lua.create_function(move |_, ()| Ok(unit(&state)))?;
    let api: Table = lua
        .load(include_str!("flow.lua"))
        .set_name("=[metron]")
        .call(random)?;
    lua.set_named_registry_value(REGISTRY_KEY, api)
}

const REGISTRY_KEY: &str = "metron.flow";

/// A number in [0, 1) from SplitMix64.
fn unit(state: &AtomicU64) -> f64 {
    let mut z = state
        .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

impl Flows {
    /// The state's flows, when its script defines `flow(visit)`.
    pub fn detect(lua: &Lua, names: Arc<StepNames>) -> Option<Flows> {
        let flow = super::hook(lua, "flow")?;
        let api: Table = lua.named_registry_value(REGISTRY_KEY).ok()?;
        Some(Flows {
            flow,
            spawn: api.get("spawn").ok()?,
            visits: Vec::new(),
            threads: lua.create_table().ok()?,
            names,
        })
    }

    /// Starts visit `id` under `key` (the engine's, unused until it ends).
    pub fn start(&mut self, key: u32, id: u64) -> mlua::Result<Next> {
        let (thread, visit): (Thread, Table) = self.spawn.call((self.flow.clone(), id))?;
        let k = key as usize;
        if self.visits.len() <= k {
            self.visits.resize_with(k + 1, || None);
        }
        self.threads.raw_set(key, thread)?;
        self.visits[k] = Some(Visit { step: None });
        self.resume(key, Value::Table(visit), Value::Nil)
    }

    /// Resumes visit `key` with the answer to its step: the response table
    /// and the Set-Cookie values it carried.
    pub fn answer(&mut self, key: u32, response: Table, cookies: Table) -> mlua::Result<Next> {
        self.resume(key, Value::Table(response), Value::Table(cookies))
    }

    /// Resumes visit `key` after its rest.
    pub fn wake(&mut self, key: u32) -> mlua::Result<Next> {
        self.resume(key, Value::Nil, Value::Nil)
    }

    /// The bytes and step index of the request visit `key` yielded.
    pub fn take_step(&mut self, key: u32) -> Option<(Vec<u8>, u16)> {
        self.visit(key)?.step.take()
    }

    /// Forgets visit `key` (ended, or given up).
    pub fn end(&mut self, key: u32) {
        if let Some(v) = self.visits.get_mut(key as usize).filter(|v| v.is_some()) {
            *v = None;
            // Only a failed allocation fails here, and then the coroutine
            // stays until its key is used again.
            let _ = self.threads.raw_set(key, Value::Nil);
        }
    }

    fn visit(&mut self, key: u32) -> Option<&mut Visit> {
        self.visits.get_mut(key as usize)?.as_mut()
    }

    fn resume(&mut self, key: u32, a: Value, b: Value) -> mlua::Result<Next> {
        let names = Arc::clone(&self.names);
        if self.visit(key).is_none() {
            return Err(mlua::Error::runtime("a visit was resumed after it ended"));
        }
        let thread: Thread = self.threads.raw_get(key)?;
        let yielded: MultiValue = thread.resume((a, b))?;
        if thread.status() != ThreadStatus::Resumable {
            self.end(key);
            return Ok(Next::Done);
        }
        let mut values = yielded.into_iter();
        let kind = values.next().unwrap_or(Value::Nil);
        let next = match kind.as_str().as_deref() {
            Some("step") => {
                let bytes = match values.next() {
                    Some(Value::String(s)) => s.as_bytes().to_vec(),
                    _ => return Err(not_ours()),
                };
                let name = values
                    .next()
                    .and_then(|v| v.as_string_lossy())
                    .unwrap_or_default();
                let Some(step) = names.index(&name) else {
                    return Err(mlua::Error::runtime(format!(
                        "step \"{name}\" is one more than the {MAX_STEPS} step names kept: give steps whose paths carry ids a name (opts.name = \"item\")"
                    )));
                };
                if let Some(v) = self.visit(key) {
                    v.step = Some((bytes, step));
                }
                Next::Step
            }
            Some("think") => match values.next() {
                Some(Value::Number(s)) => Next::Think(s),
                Some(Value::Integer(s)) => Next::Think(s as f64),
                _ => return Err(not_ours()),
            },
            Some("fail") => {
                let reason = values
                    .next()
                    .and_then(|v| v.as_string_lossy())
                    .unwrap_or_default();
                self.end(key);
                Next::Failed(reason)
            }
            _ => return Err(not_ours()),
        };
        Ok(next)
    }
}

/// A yield that did not come from `http.*`, `think` or `visit:fail`.
fn not_ours() -> mlua::Error {
    mlua::Error::runtime(
        "flow(visit) paused with a bare coroutine.yield: only http.*, think() and visit:fail() may pause a visit",
    )
}

/// The error of a visit's flow, as one line.
pub(super) fn error(file: &str, e: &mlua::Error) -> ScriptError {
    ScriptError::lua(Stage::Flow, file, e)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{script_file, target};
    use super::super::{MainScript, ScriptTarget, ThreadScript};
    use super::*;
    use crate::http::h1::request::RequestMeta;

    fn thread(code: &str) -> ThreadScript {
        loaded(code, target()).1
    }

    /// The main state of `code` for `target`, and a thread's.
    fn loaded(code: &str, target: ScriptTarget) -> (MainScript, ThreadScript) {
        let mut main = MainScript::load(&script_file("flow.lua", code), target).unwrap();
        let t = main
            .create_thread(0, "127.0.0.1:8080".parse().unwrap(), &[])
            .unwrap();
        (main, t)
    }

    fn step(t: &mut ThreadScript, key: u32) -> (String, u16) {
        let (mut out, mut metas) = (Vec::new(), Vec::<RequestMeta>::new());
        let step = t.visit_request(key, &mut out, &mut metas).unwrap().unwrap();
        assert_eq!(metas.len(), 1);
        (String::from_utf8(out).unwrap(), step)
    }

    fn answer(
        t: &mut ThreadScript,
        key: u32,
        status: u16,
        fields: &[(&str, &[u8])],
        body: &[u8],
    ) -> Next {
        t.visit_answer(key, status, None, &mut fields.iter().copied(), body)
            .unwrap()
    }

    #[test]
    fn a_visit_runs_step_by_step_and_reads_its_answers() {
        let mut t = thread(
            r#"function flow(visit)
                 local r = http.post("/login", { body = "u=" .. visit.id, name = "login" })
                 visit:set("token", r.body)
                 think(1.5)
                 local r2 = http.get("/items?page=2", { headers = { Authorization = "Bearer " .. visit:get("token") } })
                 if r2.status ~= 200 then visit:fail("items " .. r2.status) end
               end"#,
        );
        assert!(t.has_flow() && t.has_response() && !t.is_static());
        assert_eq!(t.visit_start(3, 42).unwrap(), Next::Step);
        let (text, login) = step(&mut t, 3);
        assert!(
            text.starts_with("POST /login HTTP/1.1\r\n") && text.ends_with("\r\n\r\nu=42"),
            "{text}"
        );
        assert_eq!(answer(&mut t, 3, 200, &[], b"t1"), Next::Think(1.5));
        assert_eq!(t.visit_wake(3).unwrap(), Next::Step);
        let (text, items) = step(&mut t, 3);
        assert!(text.contains("Authorization: Bearer t1\r\n"), "{text}");
        assert!(text.starts_with("GET /items?page=2 "), "{text}");
        assert_ne!(
            login, items,
            "a step is named by its method and path, query left out"
        );
        assert_eq!(
            answer(&mut t, 3, 503, &[], b""),
            Next::Failed("items 503".into())
        );
        // The key is free again: a new visit under it starts afresh.
        assert_eq!(t.visit_start(3, 43).unwrap(), Next::Step);
        assert_eq!(step(&mut t, 3).1, login);
    }

    /// A thread may hold far more visits at once than a Lua state has
    /// reference slots (about 8,000): long thinks at a high rate.
    #[test]
    fn tens_of_thousands_of_visits_rest_at_once() {
        let mut t = thread("function flow(visit) think(30) http.get('/') end");
        for key in 0..20_000 {
            assert_eq!(t.visit_start(key, key.into()).unwrap(), Next::Think(30.0));
        }
        for key in (0..20_000).step_by(997) {
            assert_eq!(t.visit_wake(key).unwrap(), Next::Step);
            t.visit_end(key);
        }
    }

    #[test]
    fn each_visit_has_its_own_cookie_jar() {
        let mut t = thread(
            r#"function flow(visit)
                 http.get("/a")
                 http.get("/b")
               end"#,
        );
        t.visit_start(0, 0).unwrap();
        t.visit_start(1, 1).unwrap();
        step(&mut t, 0);
        step(&mut t, 1);
        let set: &[(&str, &[u8])] = &[
            ("set-cookie", b"session=abc; Path=/; HttpOnly"),
            ("Set-Cookie", b"theme=dark"),
        ];
        assert_eq!(answer(&mut t, 0, 200, set, b""), Next::Step);
        let (text, _) = step(&mut t, 0);
        assert!(
            text.contains("Cookie: session=abc; theme=dark\r\n"),
            "{text}"
        );
        assert_eq!(answer(&mut t, 1, 200, &[], b""), Next::Step);
        let (text, _) = step(&mut t, 1);
        assert!(!text.contains("Cookie"), "{text}");
        let gone: &[(&str, &[u8])] = &[("set-cookie", b"session=; Max-Age=0")];
        assert_eq!(answer(&mut t, 0, 200, gone, b""), Next::Done);
    }

    /// The jar keeps each cookie's path (given, or the directory of the
    /// step that got it) and sends it only under that path, after the
    /// command line's Cookie; an Expires in the past deletes it.
    #[test]
    fn the_jar_reads_paths_and_expiry_and_adds_to_the_command_lines_cookie() {
        let mut target = target();
        target.headers = vec![("Cookie".into(), "global=1".into())];
        let code = r#"function flow(visit)
                 http.get("/shop/login")
                 http.get("/shop/cart")
                 http.get("/other")
                 http.get("/shop/cart", { headers = { Cookie = "mine=2" } })
                 http.get("/shopping")
               end"#;
        let (_main, mut t) = loaded(code, target);
        t.visit_start(0, 0).unwrap();
        let (text, _) = step(&mut t, 0);
        assert!(text.contains("Cookie: global=1\r\n"), "{text}");
        let set: &[(&str, &[u8])] = &[
            ("set-cookie", b"cart=7"),
            ("set-cookie", b"who=u1; path=/shop; HttpOnly"),
            ("set-cookie", b"old=x"),
            (
                "set-cookie",
                b"gone=y; Expires=Wed, 21 Oct 2015 07:28:00 GMT",
            ),
            (
                "set-cookie",
                b"later=z; Expires=Fri, 01 Jan 2100 00:00:00 GMT",
            ),
        ];
        assert_eq!(answer(&mut t, 0, 200, set, b""), Next::Step);
        let (text, _) = step(&mut t, 0);
        assert!(
            text.contains("Cookie: global=1; cart=7; later=z; old=x; who=u1\r\n"),
            "{text}"
        );
        let expire: &[(&str, &[u8])] =
            &[("set-cookie", b"old=; Expires=Thu, 01 Jan 1970 00:00:00 GMT")];
        assert_eq!(answer(&mut t, 0, 200, expire, b""), Next::Step);
        let (text, _) = step(&mut t, 0);
        // Set at /shop/login without a path: theirs is /shop.
        assert!(text.contains("Cookie: global=1\r\n"), "/other: {text}");
        assert_eq!(answer(&mut t, 0, 200, &[], b""), Next::Step);
        let (text, _) = step(&mut t, 0);
        assert!(
            text.contains("Cookie: mine=2\r\n") && !text.contains("global"),
            "{text}"
        );
        assert_eq!(answer(&mut t, 0, 200, &[], b""), Next::Step);
        // /shopping is not under /shop.
        let (text, _) = step(&mut t, 0);
        assert!(text.contains("Cookie: global=1\r\n"), "{text}");
    }

    #[test]
    fn answers_headers_are_found_in_any_case_and_steps_replace_command_line_fields() {
        let mut target = target();
        target.headers = vec![("X-Global".into(), "g".into())];
        let code = r#"function flow(visit)
                 local r = http.get("/a")
                 if r.headers["Content-Type"] ~= "text/plain" then visit:fail("case") end
                 http.get("/b", { headers = { ["x-global"] = "mine" } })
               end"#;
        let (_main, mut t) = loaded(code, target);
        t.visit_start(0, 0).unwrap();
        assert!(step(&mut t, 0).0.contains("X-Global: g\r\n"));
        let fields: &[(&str, &[u8])] = &[("content-type", b"text/plain")];
        assert_eq!(answer(&mut t, 0, 200, fields, b""), Next::Step);
        let (text, _) = step(&mut t, 0);
        assert!(
            text.contains("x-global: mine\r\n") && !text.contains("X-Global"),
            "{text}"
        );
    }

    #[test]
    fn thinks_draw_from_their_distributions() {
        let mut t = thread(
            r#"function flow(visit)
                 think.uniform(1, 2)
                 think.exp(0.5)
                 think(0)
               end"#,
        );
        let mut exp_sum = 0.0;
        for key in 0..200 {
            let Next::Think(u) = t.visit_start(key, u64::from(key)).unwrap() else {
                panic!("a think first")
            };
            assert!((1.0..2.0).contains(&u), "{u}");
            let Next::Think(e) = t.visit_wake(key).unwrap() else {
                panic!("a second think")
            };
            assert!(e >= 0.0);
            exp_sum += e;
            assert_eq!(t.visit_wake(key).unwrap(), Next::Think(0.0));
            assert_eq!(t.visit_wake(key).unwrap(), Next::Done);
        }
        let mean = exp_sum / 200.0;
        assert!((0.35..0.65).contains(&mean), "{mean}");
    }

    #[test]
    fn a_lost_step_comes_back_with_its_cause() {
        let mut t = thread(
            r#"function flow(visit)
                 local r = http.get("/")
                 if r.status == 0 then visit:fail("lost " .. r.error) end
               end"#,
        );
        t.visit_start(0, 0).unwrap();
        let next = t
            .visit_answer(0, 0, Some("timeout"), &mut std::iter::empty(), b"")
            .unwrap();
        assert_eq!(next, Next::Failed("lost timeout".into()));
    }

    #[test]
    fn mistakes_name_the_scripts_line() {
        let cases = [
            ("function flow(v)\n  http.get(5)\nend", "flow.lua:2: http.get(path, opts): the path must be a string, got number"),
            ("function flow(v)\n  http.get('/', { body = {} })\nend", "flow.lua:2: http.get: opts.body must be a string"),
            ("function flow(v)\n  think('x')\nend", "flow.lua:2: think: the time must be a finite number"),
            ("function flow(v)\n  local co = coroutine.create(function() http.get('/') end)\n  local ok, e = coroutine.resume(co)\n  error(e, 0)\nend", "works only inside flow(visit)"),
            ("function flow(v)\n  coroutine.yield(1)\nend", "only http.*, think() and visit:fail() may pause a visit"),
            ("function flow(v)\n  http.get('/', { headers = { ['X-A'] = 'a\\r\\nX-B: 1' } })\nend", "flow.lua:2: http.get: the header X-A is not a valid field"),
            ("function flow(v)\n  http.get('/a b')\nend", "flow.lua:2: http.get: the path holds a space"),
            ("function flow(v)\n  think(1e12)\nend", "flow.lua:2: think: 1000000000000 s is longer than any run"),
            ("function flow(v)\n  local co = coroutine.create(function() think(1) end)\n  local ok, e = coroutine.resume(co)\n  error(e, 0)\nend", "flow.lua:2: think works only inside flow(visit)"),
            ("function flow(v)\n  local co = coroutine.create(function() think.exp(1) end)\n  local ok, e = coroutine.resume(co)\n  error(e, 0)\nend", "flow.lua:2: think.exp works only inside flow(visit)"),
            ("function flow(v)\n  http.get('/', { header = {} })\nend", "flow.lua:2: http.get: opts.header is not an option of a step; it takes headers, body and name"),
            ("function flow(v)\n  http.get('/', { name = 'a\\nb' })\nend", "flow.lua:2: http.get: opts.name must be 1 to 100 characters without control characters"),
            ("function flow(v)\n  http.get('/', { name = string.rep('x', 101) })\nend", "got 101"),
            ("function flow(v)\n  think('0.1')\nend", "got \"0.1\" (a string)"),
            ("function flow(v)\n  http.post('/', { body = 'x', headers = { ['content-length'] = 1 } })\nend", "flow.lua:2: http.post: opts.headers.content-length frames the body, which metron does from opts.body; drop it"),
            ("function flow(v)\n  v:fail({})\nend", "flow.lua:2: visit:fail(reason): the reason must be a string, got table"),
        ];
        for (code, says) in cases {
            let mut t = thread(code);
            let e = t.visit_start(0, 0).unwrap_err().to_string();
            assert!(e.starts_with("script error in flow() ("), "{e}");
            assert!(e.contains(says), "{code}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    /// A failure's reason is one short line, whatever the server said; a
    /// `flow` that is not a function is refused in one line.
    #[test]
    fn reasons_are_one_short_line_and_flow_must_be_a_function() {
        let mut t = thread("function flow(v) v:fail('bad\\r\\n' .. string.rep('x', 200)) end");
        let Ok(Next::Failed(reason)) = t.visit_start(0, 0) else {
            panic!("the visit fails");
        };
        assert_eq!(reason.len(), 100);
        assert!(reason.starts_with("bad  xx"), "{reason}");
        // Cut at a character, not inside one.
        let mut t = thread("function flow(v) v:fail(string.rep('é', 150)) end");
        let Ok(Next::Failed(reason)) = t.visit_start(0, 0) else {
            panic!("the visit fails");
        };
        assert_eq!(reason, "é".repeat(100));
        // A name counts characters; a long path's default name is cut.
        let code = "function flow(v) http.get('/', { name = string.rep('é', 100) }) http.get('/' .. string.rep('a', 70000)) end";
        let (main, mut t) = loaded(code, target());
        assert_eq!(t.visit_start(0, 0).unwrap(), Next::Step);
        assert_eq!(answer(&mut t, 0, 200, &[], b""), Next::Step);
        let names = main.steps().all();
        assert_eq!(names[1], format!("GET /{}", "a".repeat(95)), "{names:?}");
        let mut main = MainScript::load(&script_file("flow.lua", "flow = 42"), target()).unwrap();
        let Err(e) = main.create_thread(0, "127.0.0.1:8080".parse().unwrap(), &[]) else {
            panic!("refused");
        };
        let e = e.to_string();
        assert!(e.contains("flow is a number, not a function"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
