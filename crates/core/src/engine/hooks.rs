//! What a worker runs on the requests it sends and the answers it gets,
//! beside measuring them: the script's hooks (`response()`, `event()`,
//! `delay()`, its `thread:stop()` and `wrk.thread.addr`), and the call
//! layer of `--grpc`: a call's status made of what the session read, and
//! `--grpc-check`. Each hook is optional, and one that is absent costs
//! nothing per request.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::clock::{self, Nanos};
use crate::http::{Captured, EventReading};
use crate::script::{ScriptError, ThreadScript};

/// A worker's script state, call layer and reply check.
pub(super) struct Hooks {
    script: Option<ThreadScript>,
    /// Requests are gRPC calls (`--grpc`), over whichever session.
    calls: bool,
    /// `--grpc-check`: replies are kept and checked.
    check: Option<Arc<metron_grpc::Check>>,
}

impl Hooks {
    pub fn new(
        script: Option<ThreadScript>,
        calls: bool,
        check: Option<Arc<metron_grpc::Check>>,
    ) -> Hooks {
        Hooks {
            script,
            calls,
            check,
        }
    }

    /// The script, whose `request()` builds requests.
    pub fn script(&mut self) -> Option<&mut ThreadScript> {
        self.script.as_mut()
    }

    pub fn script_ref(&self) -> Option<&ThreadScript> {
        self.script.as_ref()
    }

    /// Responses are kept whole for a hook: the script's `response()`
    /// (or, over WebSocket, its `message()`), or the reply check.
    pub fn capture(&self) -> bool {
        self.script
            .as_ref()
            .is_some_and(|s| s.has_response() || s.has_message())
            || self.check.is_some()
    }

    /// How event streams are read: their data is kept only for the
    /// script's `event()`; gRPC's streamed messages (`messages`) count as
    /// events; `--llm`'s completion streams (`tokens`) are tallied.
    /// `sse` also stands for WebSocket's pushes, whose data a script's
    /// `message()` reads as well.
    pub fn reading(&self, sse: bool, tokens: bool, messages: bool) -> EventReading {
        let event_hook = self.script.as_ref().is_some_and(|s| s.has_event());
        let message_hook = self.script.as_ref().is_some_and(|s| s.has_message());
        match sse {
            _ if messages => EventReading::Messages,
            _ if tokens && event_hook => EventReading::TokensData,
            _ if tokens => EventReading::Tokens,
            false => EventReading::Off,
            true if event_hook || message_hook => EventReading::Data,
            true => EventReading::Times,
        }
    }

    /// The run begins (`true`) or ends: the script's `wrk.thread` is live
    /// only in between.
    pub fn live(&mut self, on: bool) {
        if let Some(script) = self.script.as_mut() {
            if on {
                script.activate();
            } else {
                script.deactivate();
            }
        }
    }

    /// The script called `thread:stop()`.
    pub fn stop_requested(&self) -> bool {
        self.script
            .as_ref()
            .is_some_and(ThreadScript::stop_requested)
    }

    /// Where this thread's next connection goes: `peer`, unless the
    /// script moved the thread (`wrk.thread.addr = ...`, at any time, as
    /// in wrk).
    pub fn addr(&self, peer: SocketAddr) -> SocketAddr {
        self.script.as_ref().map_or(peer, ThreadScript::addr)
    }

    /// Runs the script's `response()` on a response just recorded, if it
    /// has one.
    pub fn response(&mut self, status: u16, captured: &Captured) -> Result<(), ScriptError> {
        match self.script.as_mut().filter(|s| s.has_response()) {
            Some(script) => script.response(status, &mut captured.fields(), captured.body()),
            None => Ok(()),
        }
    }

    /// Runs the script's `event()` on an event's data, when it has one.
    pub fn event(&mut self, data: Option<&[u8]>) -> Result<(), ScriptError> {
        match (self.script.as_mut(), data) {
            (Some(script), Some(data)) => script.event(data),
            _ => Ok(()),
        }
    }

    /// Runs the script's `message(data, binary)` on a WebSocket message
    /// received (an answer, or a push), or else its `event(data)` on a
    /// push.
    pub fn message(&mut self, data: &[u8], binary: bool, pushed: bool) -> Result<(), ScriptError> {
        match self.script.as_mut() {
            Some(s) if s.has_message() => s.message(data, binary),
            Some(s) if pushed => s.event(data),
            _ => Ok(()),
        }
    }

    /// When a stream that came free may take its next request, if the
    /// script's `delay()` asks it to wait.
    pub fn delay(&mut self) -> Result<Option<Nanos>, ScriptError> {
        let Some(script) = self.script.as_mut().filter(|s| s.has_delay()) else {
            return Ok(None);
        };
        let ms = script.delay_ms()?;
        Ok((ms > 0.0).then(|| clock::now() + (ms * 1e6) as Nanos))
    }

    /// The status of the call a response answered, when requests are
    /// calls: the `grpc-status` a 200's head or trailers carried; for a
    /// 200 without one, or any other HTTP status (a proxy's answer, whose
    /// `grpc-status` is not the service's), what the HTTP status stands
    /// for by gRPC's mapping, as gRPC's own clients decide.
    pub fn call_status(&self, status: u16, grpc_status: Option<u8>) -> Option<u8> {
        self.calls.then(|| match grpc_status {
            Some(code) if status == 200 => code,
            _ => metron_grpc::status::of_http(status),
        })
    }

    /// Whether a reply holds what `--grpc-check` asks, when there is a
    /// check and the call succeeded (`rpc`: its status; a failed call is
    /// an error already, and has no message to check).
    pub fn check(&self, rpc: Option<u8>, captured: Option<&Captured>) -> Option<bool> {
        let check = self.check.as_ref()?;
        if rpc != Some(metron_grpc::status::OK) {
            return None;
        }
        Some(check.holds(captured?.body()))
    }

    /// Calls into the script, for its cost per request.
    pub fn calls(&self) -> u64 {
        self.script.as_ref().map_or(0, ThreadScript::calls)
    }
}

#[cfg(test)]
mod tests {
    use super::Hooks;

    /// A call's status is the one its server sent with a 200, else what
    /// its HTTP status stands for; a run that makes no calls has none, whatever
    /// the server sends.
    #[test]
    fn the_call_layer_makes_a_status_of_what_the_session_read() {
        let calls = Hooks::new(None, true, None);
        assert_eq!(calls.call_status(200, Some(0)), Some(0));
        assert_eq!(calls.call_status(200, Some(14)), Some(14));
        assert_eq!(calls.call_status(200, None), Some(13), "INTERNAL");
        assert_eq!(calls.call_status(503, None), Some(14), "UNAVAILABLE");
        assert_eq!(calls.call_status(500, Some(0)), Some(2), "UNKNOWN, not OK");
        let plain = Hooks::new(None, false, None);
        assert_eq!(plain.call_status(200, Some(14)), None);
    }
}
