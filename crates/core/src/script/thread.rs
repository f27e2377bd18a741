//! The `thread` object scripts see: `thread.addr`, `thread:get(name)`,
//! `thread:set(name, value)` and `thread:stop()`, and the handle that lets
//! the main state reach a worker's Lua state.
//!
//! A worker's state lives in a [`StateSlot`]. Before the run, `setup()` in
//! the main state reads and writes that state's globals through the slot;
//! during the run the worker takes the state out of the slot (its lock for
//! the whole run, so no request pays for locking); after the run it puts it
//! back, so `done()` can read what the worker counted. A `thread` object
//! that finds the slot empty reports that the worker is running instead of
//! waiting for it.
//!
//! Two kinds of `thread` object exist. The one the main state gets reaches
//! the worker's state through the slot. The one in the worker's own state
//! (`wrk.thread`) acts on the state it is called from, so it holds no slot:
//! a state that held its own slot would keep itself alive forever.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mlua::{Lua, UserData, UserDataFields, UserDataMethods, Value};

use super::copy::copy_value;

/// A worker's Lua state, or `None` while the worker holds it for its run.
pub(crate) type StateSlot = Arc<Mutex<Option<Lua>>>;

/// What a worker and the scripts share about one thread.
#[derive(Debug)]
pub(crate) struct ThreadInfo {
    pub(crate) index: usize,
    addr: Mutex<SocketAddr>,
    /// Set by `thread:stop()`; the engine polls it. Written by the worker's
    /// own state, read by the worker, so it is never contended.
    stop: AtomicBool,
}

impl ThreadInfo {
    pub(crate) fn addr(&self) -> SocketAddr {
        *lock(&self.addr)
    }

    fn set_addr(&self, addr: SocketAddr) {
        *lock(&self.addr) = addr;
    }

    pub(crate) fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// One thread as the module keeps it: shared facts and its state's slot.
#[derive(Clone, Debug)]
pub(crate) struct ThreadHandle {
    pub(crate) info: Arc<ThreadInfo>,
    pub(crate) slot: StateSlot,
}

impl ThreadHandle {
    pub(crate) fn new(index: usize, addr: SocketAddr) -> ThreadHandle {
        ThreadHandle {
            info: Arc::new(ThreadInfo {
                index,
                addr: Mutex::new(addr),
                stop: AtomicBool::new(false),
            }),
            slot: Arc::new(Mutex::new(None)),
        }
    }
}

/// Locks a mutex whose data stays valid even if a holder panicked (every
/// value behind these mutexes is replaced whole, never half-updated).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The `thread` userdata.
#[derive(Clone, Debug)]
pub(crate) struct ThreadRef {
    info: Arc<ThreadInfo>,
    /// `None`: this object lives in the thread's own state.
    remote: Option<StateSlot>,
}

impl ThreadRef {
    /// The object handed to `setup()` in the main state.
    pub(crate) fn remote(handle: &ThreadHandle) -> ThreadRef {
        ThreadRef {
            info: handle.info.clone(),
            remote: Some(handle.slot.clone()),
        }
    }

    /// `wrk.thread` inside the thread's own state.
    pub(crate) fn own(handle: &ThreadHandle) -> ThreadRef {
        ThreadRef {
            info: handle.info.clone(),
            remote: None,
        }
    }

    fn get(&self, caller: &Lua, name: &str) -> mlua::Result<Value> {
        match &self.remote {
            None => caller.globals().get(name),
            Some(slot) => self.with_state(slot, |state| {
                let value: Value = state.globals().get(name)?;
                copy_value(&value, caller)
            }),
        }
    }

    fn set(&self, caller: &Lua, name: &str, value: Value) -> mlua::Result<()> {
        match &self.remote {
            None => caller.globals().set(name, value),
            Some(slot) => self.with_state(slot, |state| {
                state.globals().set(name, copy_value(&value, state)?)
            }),
        }
    }

    fn with_state<R>(
        &self,
        slot: &StateSlot,
        f: impl FnOnce(&Lua) -> mlua::Result<R>,
    ) -> mlua::Result<R> {
        match &*lock(slot) {
            Some(state) => f(state),
            None => Err(mlua::Error::runtime(format!(
                "thread {} is running: its globals can be read and written \
                 before and after the run, not during it",
                self.info.index + 1
            ))),
        }
    }
}

/// Parses a `thread.addr` assignment.
fn parse_addr(value: &Value) -> mlua::Result<SocketAddr> {
    let text = match value {
        Value::String(s) => s.to_string_lossy(),
        other => {
            return Err(mlua::Error::runtime(format!(
                "thread.addr must be a string such as \"127.0.0.1:8080\" or \"[::1]:8080\", \
                 got {}",
                other.type_name()
            )))
        }
    };
    text.parse().map_err(|_| {
        mlua::Error::runtime(format!(
            "invalid thread.addr \"{text}\": expected ip:port such as \"127.0.0.1:8080\" \
             or \"[::1]:8080\""
        ))
    })
}

impl UserData for ThreadRef {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("addr", |_, this| Ok(this.info.addr().to_string()));
        fields.add_field_method_set("addr", |_, this, value: Value| {
            this.info.set_addr(parse_addr(&value)?);
            Ok(())
        });
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("get", |lua, this, name: String| this.get(lua, &name));
        methods.add_method("set", |lua, this, (name, value): (String, Value)| {
            this.set(lua, &name, value)
        });
        methods.add_method("stop", |_, this, ()| {
            this.info.stop.store(true, Ordering::Relaxed);
            Ok(())
        });
        methods.add_meta_method(mlua::MetaMethod::ToString, |_, this, ()| {
            Ok(format!(
                "thread {} ({})",
                this.info.index + 1,
                this.info.addr()
            ))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle() -> ThreadHandle {
        ThreadHandle::new(0, "127.0.0.1:80".parse().unwrap())
    }

    /// A main state with `t` bound to a remote `thread` for `handle`.
    fn main_with(handle: &ThreadHandle) -> Lua {
        let main = Lua::new();
        let t = main.create_userdata(ThreadRef::remote(handle)).unwrap();
        main.globals().set("t", t).unwrap();
        main
    }

    #[test]
    fn addr_reads_and_writes() {
        let h = handle();
        let main = main_with(&h);
        let before: String = main.load("return t.addr").eval().unwrap();
        assert_eq!(before, "127.0.0.1:80");
        main.load(r#"t.addr = "[::1]:8080""#).exec().unwrap();
        assert_eq!(h.info.addr(), "[::1]:8080".parse().unwrap());
    }

    #[test]
    fn bad_addr_is_a_clear_error() {
        let main = main_with(&handle());
        let error = main.load(r#"t.addr = "nowhere""#).exec().unwrap_err();
        let message = super::super::error::one_line(&error);
        assert!(
            message.contains(r#"invalid thread.addr "nowhere": expected ip:port"#),
            "{message}"
        );
        let error = main.load("t.addr = 5").exec().unwrap_err();
        assert!(error.to_string().contains("got integer"), "{error}");
    }

    #[test]
    fn get_and_set_reach_the_worker_state() {
        let h = handle();
        let worker = Lua::new();
        worker.load("counter = 7").exec().unwrap();
        *lock(&h.slot) = Some(worker.clone());
        let main = main_with(&h);
        main.load(r#"t:set("id", { n = 1 }) seen = t:get("counter")"#)
            .exec()
            .unwrap();
        let id: i64 = worker.load("return id.n").eval().unwrap();
        assert_eq!(id, 1);
        assert_eq!(main.globals().get::<i64>("seen").unwrap(), 7);
    }

    #[test]
    fn get_while_the_worker_runs_is_an_error() {
        let h = handle();
        let main = main_with(&h);
        let error = main.load(r#"t:get("x")"#).exec().unwrap_err();
        assert!(error.to_string().contains("thread 1 is running"), "{error}");
    }

    #[test]
    fn own_thread_object_uses_the_calling_state() {
        let h = handle();
        let own = Lua::new();
        let t = own.create_userdata(ThreadRef::own(&h)).unwrap();
        own.globals().set("t", t).unwrap();
        let v: i64 = own
            .load(r#"t:set("x", 3) return t:get("x")"#)
            .eval()
            .unwrap();
        assert_eq!(v, 3);
    }

    #[test]
    fn stop_sets_the_flag() {
        let h = handle();
        let main = main_with(&h);
        assert!(!h.info.stop_requested());
        main.load("t:stop()").exec().unwrap();
        assert!(h.info.stop_requested());
    }

    #[test]
    fn unknown_fields_cannot_be_set() {
        let main = main_with(&handle());
        assert!(main.load("t.other = 1").exec().is_err());
    }
}
