//! Chart axes: a domain, and ticks at round values labelled for reading
//! (`0`, `0.2`, `5`, `20k`, `1.5M`).
//!
//! Tick values are 1, 2, 2.5 or 5 × 10^k apart, so that labels stay short
//! and gridlines fall where a reader would interpolate anyway (0, 50, 100,
//! 150 ms, never 56.68 ms). The dashboard's page draws its axes by the
//! same rule (`niceTicks` in dashboard/page.html).

use super::fmt::trim;

/// How far above the highest value a zero-based axis reaches, at least.
const HEADROOM: f64 = 1.04;

/// One axis: its domain, where its ticks go and what they say.
pub struct Axis {
    pub min: f64,
    pub max: f64,
    pub ticks: Vec<(f64, String)>,
    pub title: String,
}

impl Axis {
    /// A linear axis from 0 to the first round value at or above `max`,
    /// with about `target` ticks at multiples of 1, 2, 2.5 or 5 × 10^k.
    pub fn from_zero(max: f64, target: usize, title: &str) -> Axis {
        // A little headroom over real data, so that a line at the maximum
        // does not run along the plot's top edge; none over the 0–1 stand-in
        // for no data.
        let max = if max.is_finite() && max > 0.0 {
            max * HEADROOM
        } else {
            1.0
        };
        let step = nice_step(max / target.max(1) as f64);
        let top = (max / step - 1e-9).ceil().max(1.0) * step;
        Axis {
            min: 0.0,
            max: top,
            ticks: ticks_to(top, step),
            title: title.to_string(),
        }
    }

    /// A linear axis over exactly `[0, end]` (time, where the domain is the
    /// run), ticked at round values that fit inside it.
    pub fn exact(end: f64, target: usize, title: &str) -> Axis {
        let end = if end.is_finite() && end > 0.0 {
            end
        } else {
            1.0
        };
        let step = nice_step(end / target.max(1) as f64);
        Axis {
            min: 0.0,
            max: end,
            ticks: ticks_to(end, step),
            title: title.to_string(),
        }
    }

    /// Where `v` falls along the axis, from 0 to 1 (clamped: points beyond
    /// the domain sit on its edge rather than outside the plot).
    pub fn fraction(&self, v: f64) -> f64 {
        let span = self.max - self.min;
        if !(span.is_finite() && span > 0.0 && v.is_finite()) {
            return 0.0;
        }
        ((v - self.min) / span).clamp(0.0, 1.0)
    }
}

/// The 1, 2, 2.5 or 5 × 10^k nearest above `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    let mantissa = raw / magnitude;
    let nice = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .find(|&m| m >= mantissa - 1e-9)
        .unwrap_or(10.0);
    nice * magnitude
}

/// Ticks at every multiple of `step` from 0 up to `end`, labelled with as
/// many decimals as the step needs and a `k`/`M` suffix for large values.
fn ticks_to(end: f64, step: f64) -> Vec<(f64, String)> {
    let (scale, suffix) = if end >= 1e7 {
        (1e6, "M")
    } else if end >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let decimals = decimals_of(step / scale);
    let count = (end / step + 1e-9).floor() as usize;
    (0..=count.min(100))
        .map(|i| {
            let v = i as f64 * step;
            let label = if i == 0 {
                "0".to_string()
            } else {
                format!("{}{suffix}", trim(v / scale, decimals))
            };
            (v, label)
        })
        .collect()
}

/// The decimals a multiple of `step` needs: 0 for 25, 1 for 2.5 and 0.5,
/// 2 for 0.25.
fn decimals_of(step: f64) -> usize {
    (0..6)
        .find(|&d| {
            let scaled = step * 10f64.powi(d as i32);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
        })
        .unwrap_or(6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(0.013), 0.02);
        assert_eq!(nice_step(2.2), 2.5);
        assert_eq!(nice_step(0.22), 0.25);
        assert_eq!(nice_step(f64::NAN), 1.0);
    }

    #[test]
    fn axis_from_zero_covers_the_maximum() {
        let a = Axis::from_zero(13.2, 5, "ms");
        assert_eq!(a.max, 15.0);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0", "5", "10", "15"]);
        let small = Axis::from_zero(0.42, 5, "ms");
        assert_eq!(small.ticks[1].1, "0.1");
        let big = Axis::from_zero(48_000.0, 5, "req/s");
        assert_eq!(big.ticks[1].1, "10k");
        assert_eq!(Axis::from_zero(0.0, 5, "x").max, 1.0);
    }

    /// Regression: latencies up to 130 ms drew ticks every 56.68 ms on the
    /// dashboard; here and there they fall on round values.
    #[test]
    fn ticks_read_at_a_glance() {
        let labels = |a: &Axis| a.ticks.iter().map(|t| t.1.clone()).collect::<Vec<_>>();
        assert_eq!(
            labels(&Axis::from_zero(130.0, 6, "ms")),
            ["0", "25", "50", "75", "100", "125", "150"]
        );
        assert_eq!(
            labels(&Axis::from_zero(1.3, 6, "ms")),
            ["0", "0.25", "0.5", "0.75", "1", "1.25", "1.5"]
        );
        assert_eq!(
            labels(&Axis::from_zero(13.0, 6, "ms")),
            ["0", "2.5", "5", "7.5", "10", "12.5", "15"]
        );
    }

    #[test]
    fn exact_axis_keeps_its_end() {
        let a = Axis::exact(17.0, 8, "s");
        assert_eq!(a.max, 17.0);
        assert_eq!(a.ticks.last().unwrap().0, 15.0);
    }
}
