//! The live progress line on stderr (only when stderr is a terminal, and
//! not with `--quiet`): elapsed time, current rate, p99 so far, errors.

use std::io::Write;
use std::time::Duration;

use crate::engine::progress::Totals;
use crate::units::format_time_us;

pub struct Line {
    duration: Duration,
    last: Option<(Totals, Duration)>,
    /// The text last drawn, to draw again after other output.
    text: Option<String>,
    shown: bool,
}

impl Line {
    pub fn new(duration: Duration) -> Line {
        Line {
            duration,
            last: None,
            text: None,
            shown: false,
        }
    }

    /// Rewrites the line with the totals at `at` since the start.
    pub fn show(&mut self, now: Totals, at: Duration) {
        let rate = match self.last {
            Some((before, then)) if at > then => {
                (now.completed - before.completed.min(now.completed)) as f64
                    / (at - then).as_secs_f64()
            }
            _ => now.completed as f64 / at.as_secs_f64().max(1e-9),
        };
        self.last = Some((now, at));
        self.text = Some(render(now, at, self.duration, rate));
        self.shown = false;
        self.restore();
    }

    /// Removes the line before other output (rows during the run, the
    /// report after it).
    pub fn clear(&mut self) {
        if self.shown {
            draw("");
            self.shown = false;
        }
    }

    /// Draws the line again after [`Line::clear`].
    pub fn restore(&mut self) {
        if let (false, Some(text)) = (self.shown, &self.text) {
            draw(text);
            self.shown = true;
        }
    }
}

/// Replaces the terminal's current line with `text`.
fn draw(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K{text}");
    let _ = err.flush();
}

fn render(t: Totals, at: Duration, total: Duration, rate: f64) -> String {
    // Before the first response there is no tail to show, not one of 0us.
    let p99 = match t.completed {
        0 => "-".to_string(),
        _ => format_time_us(t.p99_us as f64),
    };
    format!(
        "  [{:>5.1}s / {:.0}s]  {:>9.1} req/s  p99 {p99:>9}  {} errors",
        at.as_secs_f64(),
        total.as_secs_f64(),
        rate,
        t.errors
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shows_time_rate_tail_and_errors() {
        let t = Totals {
            completed: 2000,
            errors: 3,
            p99_us: 1500,
            ..Totals::default()
        };
        let s = render(t, Duration::from_secs(2), Duration::from_secs(10), 1000.0);
        assert_eq!(
            s,
            "  [  2.0s / 10s]     1000.0 req/s  p99    1.50ms  3 errors"
        );
    }

    #[test]
    fn nothing_completed_yet_has_no_tail() {
        let s = render(
            Totals::default(),
            Duration::from_secs(1),
            Duration::from_secs(10),
            0.0,
        );
        assert_eq!(
            s,
            "  [  1.0s / 10s]        0.0 req/s  p99         -  0 errors"
        );
    }
}
