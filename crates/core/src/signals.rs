//! Ctrl-C and SIGTERM end a run cleanly: the first one stops the workers
//! and the report covers what ran; a second one exits at once, as the
//! first does before any worker started (loading scripts, the pre-flight),
//! when nothing ran, and while the script's `done()` runs, when the
//! report is out.

use std::io;
use std::io::Write as _;
use std::sync::Arc;
use std::thread::JoinHandle;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};

use crate::engine::Stop;
use crate::stats::StopCause;

/// Stops listening when dropped.
pub struct Guard {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

pub fn stop_on_interrupt(stop: Arc<Stop>) -> io::Result<Guard> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let handle = signals.handle();
    let thread = std::thread::Builder::new()
        .name("metron-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                let name = if signal == SIGTERM {
                    "SIGTERM"
                } else {
                    "Ctrl-C"
                };
                if !stop.has_begun() {
                    let _ = writeln!(
                        std::io::stderr(),
                        "metron: stopped by {name} before the run began: nothing was measured"
                    );
                    std::process::exit(128 + signal);
                }
                if stop.is_closing() {
                    let _ = writeln!(
                        std::io::stderr(),
                        "metron: stopped by {name} in the script's done(); the report above \
                         covers the whole run"
                    );
                    std::process::exit(128 + signal);
                }
                if stop.is_stopped() {
                    std::process::exit(128 + signal);
                }
                let cause = if signal == SIGTERM {
                    StopCause::Terminate
                } else {
                    StopCause::Interrupt
                };
                stop.trigger(cause);
            }
        })?;
    Ok(Guard {
        handle,
        thread: Some(thread),
    })
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
