//! The main Lua state: it makes each worker's state, runs `setup(thread)`
//! for it, and runs `done(summary, latency, requests)` after the run.
//!
//! The `thread` objects `setup()` receives keep their worker's state
//! reachable, so `done()` can `thread:get` what each worker counted once
//! the workers have handed their states back.

use std::net::SocketAddr;
use std::path::Path;

use std::sync::Arc;

use mlua::{Lua, Table};

use super::error::{ScriptError, Stage};
use super::flow::StepNames;
use super::stats::{summary, StatsObject};
use super::thread::{lock, ThreadHandle, ThreadRef};
use super::thread_script::ThreadScript;
use super::{hook, ScriptTarget, Source};
use crate::stats::RunStats;

/// The script as loaded in the main state.
#[derive(Debug)]
pub struct MainScript {
    lua: Lua,
    source: Source,
    target: ScriptTarget,
    /// The step names of every thread's visits.
    steps: Arc<StepNames>,
}

impl MainScript {
    /// Reads the script and runs it in a new main state.
    pub fn load(path: &Path, target: ScriptTarget) -> Result<MainScript, ScriptError> {
        let source = Source::read(path)?;
        let lua = source.new_state(&target, None, 0)?;
        Ok(MainScript {
            lua,
            source,
            target,
            steps: Arc::default(),
        })
    }

    /// The names of the steps the threads' visits took, by index.
    pub fn steps(&self) -> &Arc<StepNames> {
        &self.steps
    }

    /// Whether the script runs visits (`flow(visit)`).
    pub fn has_flow(&self) -> bool {
        hook(&self.lua, "flow").is_some()
    }

    /// The script's path as given, as messages name it.
    pub fn file(&self) -> &str {
        &self.source.file
    }

    /// Creates thread `index`'s state, runs `setup(thread)` then
    /// `init(args)`. `addr` is the thread's initial address (`thread.addr`).
    pub fn create_thread(
        &mut self,
        index: usize,
        addr: SocketAddr,
        args: &[String],
    ) -> Result<ThreadScript, ScriptError> {
        let handle = ThreadHandle::new(index, addr);
        let lua = self.source.new_state(
            &self.target,
            Some(ThreadRef::own(&handle)),
            index as u64 + 1,
        )?;
        *lock(&handle.slot) = Some(lua.clone());
        self.setup(&handle)?;
        self.init(&lua, args)?;
        let file = self.source.file.clone();
        ThreadScript::new(lua, handle, file, Arc::clone(&self.steps))
    }

    fn setup(&self, handle: &ThreadHandle) -> Result<(), ScriptError> {
        let Some(setup) = hook(&self.lua, "setup") else {
            return Ok(());
        };
        let thread = self.lua.create_userdata(ThreadRef::remote(handle));
        thread
            .and_then(|thread| setup.call::<()>(thread))
            .map_err(|e| self.error(Stage::Setup, &e))
    }

    /// Runs `init(args)` in a worker's state, which is still on this thread.
    fn init(&self, lua: &Lua, args: &[String]) -> Result<(), ScriptError> {
        let Some(init) = hook(lua, "init") else {
            return Ok(());
        };
        init_args(lua, &self.target.url, args)
            .and_then(|args| init.call::<()>(args))
            .map_err(|e| self.error(Stage::Init, &e))
    }

    pub fn has_done(&self) -> bool {
        hook(&self.lua, "done").is_some()
    }

    /// Runs `done(summary, latency, requests)` in the main state; the
    /// workers' states must have been handed back (`deactivate`).
    pub fn done(&self, stats: &RunStats, duration_us: u64) -> Result<(), ScriptError> {
        let Some(done) = hook(&self.lua, "done") else {
            return Ok(());
        };
        let lua = &self.lua;
        let call = || {
            let latency = lua.create_userdata(StatsObject::new(stats.latency.clone()))?;
            let requests = lua.create_userdata(StatsObject::new(stats.req_per_sec.clone()))?;
            done.call::<()>((summary(lua, stats, duration_us)?, latency, requests))
        };
        call().map_err(|e| self.error(Stage::Done, &e))
    }

    fn error(&self, stage: Stage, error: &mlua::Error) -> ScriptError {
        ScriptError::lua(stage, &self.source.file, error)
    }
}

/// `args[0]` is the URL; the script's own arguments follow from 1.
fn init_args(lua: &Lua, url: &str, args: &[String]) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(args.len(), 1)?;
    table.raw_set(0, url)?;
    for (i, arg) in args.iter().enumerate() {
        table.raw_set(i + 1, arg.as_str())?;
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{script_file, target};
    use super::*;
    use mlua::Value;
    use std::time::Duration;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn main(name: &str, code: &str) -> MainScript {
        MainScript::load(&script_file(name, code), target()).unwrap()
    }

    fn run_stats() -> RunStats {
        let mut thread = crate::stats::ThreadStats::default();
        for v in [100, 200, 300] {
            thread.latency.record(v).unwrap();
        }
        thread.counters.completed = 3;
        thread.counters.bytes = 300;
        RunStats::merge(vec![thread], Duration::from_secs(1))
    }

    #[test]
    fn order_is_load_then_setup_then_init() {
        let mut m = main(
            "order.lua",
            r#"
            log = {}
            function setup(thread) table.insert(log, "setup") thread:set("from_setup", #log) end
            function init(args) seen = from_setup; url = args[0]; first = args[1]; n = #args end
            "#,
        );
        let args = vec!["a".to_owned(), "b".to_owned()];
        let t = m.create_thread(0, addr(80), &args).unwrap();
        let g = t.lua().globals();
        assert_eq!(g.get::<i64>("seen").unwrap(), 1);
        assert_eq!(g.get::<String>("url").unwrap(), "http://127.0.0.1:8080/");
        assert_eq!(g.get::<String>("first").unwrap(), "a");
        assert_eq!(g.get::<i64>("n").unwrap(), 2);
    }

    #[test]
    fn setup_can_change_the_address() {
        let mut m = main(
            "addr.lua",
            r#"function setup(thread) before = thread.addr; thread.addr = "[::1]:9000" end"#,
        );
        let t = m.create_thread(0, addr(80), &[]).unwrap();
        assert_eq!(t.addr(), "[::1]:9000".parse().unwrap());
        assert_eq!(
            m.lua.globals().get::<String>("before").unwrap(),
            "127.0.0.1:80"
        );
    }

    #[test]
    fn bad_address_in_setup_is_one_line_with_the_line() {
        let mut m = main(
            "badaddr.lua",
            "function setup(thread)\n  thread.addr = \"nowhere\"\nend\n",
        );
        let error = m.create_thread(0, addr(80), &[]).unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("script error in setup() (")
                && text.contains("badaddr.lua:2: invalid thread.addr \"nowhere\""),
            "{text}"
        );
    }

    /// The `setup.lua` pattern: ids handed out in setup(), counters kept by
    /// each worker, reported by done() through thread:get after the run.
    #[test]
    fn done_reads_worker_globals_after_the_run() {
        let mut m = main(
            "setup.lua",
            r#"
            local counter = 1
            local threads = {}
            function setup(thread)
              thread:set("id", counter)
              table.insert(threads, thread)
              counter = counter + 1
            end
            function init(args) requests = 0 end
            function request()
              requests = requests + 1
              return wrk.format(nil, "/" .. id)
            end
            function done(summary, latency, requests)
              report = {}
              for _, thread in ipairs(threads) do
                report[thread:get("id")] = thread:get("requests")
              end
              total = summary.requests
            end
            "#,
        );
        let mut threads: Vec<_> = (0..2)
            .map(|i| m.create_thread(i, addr(80), &[]).unwrap())
            .collect();
        let mut out = Vec::new();
        for (n, t) in threads.iter_mut().enumerate() {
            t.activate();
            for _ in 0..=n + 2 {
                t.request(&mut out).unwrap();
            }
            t.deactivate();
        }
        assert!(m.has_done());
        m.done(&run_stats(), 1_000_000).unwrap();
        let report: Table = m.lua.globals().get("report").unwrap();
        assert_eq!(report.get::<i64>(1).unwrap(), 3);
        assert_eq!(report.get::<i64>(2).unwrap(), 4);
        assert_eq!(m.lua.globals().get::<i64>("total").unwrap(), 3);
    }

    #[test]
    fn tables_cross_states_with_keys_and_values_intact() {
        let mut m = main(
            "tables.lua",
            r#"
            function setup(thread)
              thread:set("config", { "first", "second", name = "n", [10] = "ten",
                                     nested = { list = { 1, 2.5, true }, ["k"] = "v" } })
              mirror = thread
            end
            function init(args)
              ok_in_thread = config[1] == "first" and config[2] == "second"
                and config.name == "n" and config[10] == "ten"
                and config.nested.list[2] == 2.5 and config.nested.list[3] == true
                and config.nested.k == "v"
              back = { [3] = "three", key = { deeper = 7 } }
            end
            function done()
              local b = mirror:get("back")
              ok_in_main = b[3] == "three" and b.key.deeper == 7
            end
            "#,
        );
        let t = m.create_thread(0, addr(80), &[]).unwrap();
        assert!(t.lua().globals().get::<bool>("ok_in_thread").unwrap());
        m.done(&run_stats(), 1).unwrap();
        assert!(m.lua.globals().get::<bool>("ok_in_main").unwrap());
    }

    #[test]
    fn cyclic_tables_are_an_error_not_a_hang() {
        let mut m = main(
            "cycle.lua",
            "function setup(thread)\n  local t = {} t.t = t\n  thread:set(\"t\", t)\nend\n",
        );
        let text = m.create_thread(0, addr(80), &[]).unwrap_err().to_string();
        assert!(
            text.contains("cycle.lua:3: cannot copy a table that contains itself"),
            "{text}"
        );
    }

    #[test]
    fn worker_states_see_their_own_thread() {
        let mut m = main(
            "own.lua",
            r#"function init() own_addr = wrk.thread.addr; wrk.thread:set("x", 5) end"#,
        );
        let t = m.create_thread(0, addr(81), &[]).unwrap();
        let g = t.lua().globals();
        assert_eq!(g.get::<String>("own_addr").unwrap(), "127.0.0.1:81");
        assert_eq!(g.get::<i64>("x").unwrap(), 5);
        let main_wrk: Table = m.lua.globals().get("wrk").unwrap();
        assert!(main_wrk.get::<Value>("thread").unwrap().is_nil());
    }

    #[test]
    fn done_gets_statistics_objects() {
        let m = main(
            "report.lua",
            r#"
            function done(summary, latency, requests)
              result = string.format("%d %d %d %d %d", summary.duration, latency.min,
                latency.max, latency:percentile(50), #latency)
              local v, c = latency(1)
              first = v .. "x" .. c
            end
            "#,
        );
        m.done(&run_stats(), 2_500_000).unwrap();
        let g = m.lua.globals();
        assert_eq!(g.get::<String>("result").unwrap(), "2500000 100 300 200 3");
        assert_eq!(g.get::<String>("first").unwrap(), "100x1");
    }

    #[test]
    fn errors_in_done_name_done_and_the_line() {
        let m = main(
            "bad_done.lua",
            "function done(s, l, r)\n  error(\"no report\")\nend\n",
        );
        let text = m.done(&run_stats(), 1).unwrap_err().to_string();
        assert!(
            text.starts_with("script error in done() (")
                && text.ends_with("bad_done.lua:2: no report"),
            "{text}"
        );
    }

    #[test]
    fn without_done_nothing_runs() {
        let m = main("none.lua", "");
        assert!(!m.has_done());
        m.done(&run_stats(), 1).unwrap();
    }

    #[test]
    fn get_during_the_run_is_an_error_not_a_wait() {
        let mut m = main(
            "during.lua",
            "function setup(t) threads = threads or {} table.insert(threads, t) end",
        );
        let mut t = m.create_thread(0, addr(80), &[]).unwrap();
        t.activate();
        let error = m.lua.load("return threads[1]:get('x')").exec().unwrap_err();
        assert!(error.to_string().contains("thread 1 is running"), "{error}");
        t.deactivate();
        m.lua.load("return threads[1]:get('x')").exec().unwrap();
    }
}
