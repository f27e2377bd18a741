//! Human-readable amounts in the original's exact digits: times, counts,
//! byte sizes, and the column padding of the `Thread Stats` table.
//!
//! The rule: an amount is divided by its table's scale while it is at
//! least 0.85 of the scale and the table still has a unit *after* the one
//! it would move to, then printed with two decimals and the unit. The last
//! unit of every table is therefore never used (3600 s prints as `60m`, not
//! `1h`); parsers of the original expect exactly that. The arithmetic is
//! done in the original's 80-bit precision (see [`super::extended`]), so
//! values on a rounding tie print the same digits too.

use std::time::Duration;

use super::extended::Extended;

/// A family of units: the base, the factor between neighbours, and the
/// larger units in order.
struct Table {
    base: &'static str,
    scale: u64,
    larger: &'static [&'static str],
}

const MICROS: Table = Table {
    base: "us",
    scale: 1000,
    larger: &["ms", "s"],
};
const SECONDS: Table = Table {
    base: "s",
    scale: 60,
    larger: &["m", "h"],
};
const METRIC: Table = Table {
    base: "",
    scale: 1000,
    larger: &["k", "M", "G", "T", "P"],
};
const BINARY: Table = Table {
    base: "",
    scale: 1024,
    larger: &["K", "M", "G", "T", "P"],
};

/// Microseconds in a second: from here on, times switch to the seconds
/// table (so that one minute and up print in minutes).
const MICROS_PER_SECOND: u64 = 1_000_000;

/// A time given in microseconds: `500.00us`, `6.60ms`, `1.40s`, `0.92m`.
pub fn format_time_us(us: f64) -> String {
    format_finite(us, |x| {
        let second = Extended::from_u64(MICROS_PER_SECOND);
        if x.at_least(second) {
            scaled(x.div(MICROS_PER_SECOND), &SECONDS, 2)
        } else {
            scaled(x, &MICROS, 2)
        }
    })
}

/// A count with metric prefixes: `100.00`, `1.04k`, `2.50M`.
pub fn format_metric(n: f64) -> String {
    format_finite(n, |x| scaled(x, &METRIC, 2))
}

/// A rate in metron's own columns and sentences (phases, sweep steps,
/// merged instances, shards): plain below 1000, then `k`, `M`, ...
/// (`825.00`, `900.00`, `1.20k`). wrk's `Req/Sec` row keeps
/// [`format_metric`], whose 0.85 rule prints 900 as `0.90k`; in a column
/// of rates that reads as if 900 were smaller than the `825.00` above it.
pub fn format_rate(n: f64) -> String {
    format_finite(n, |x| climb(x, &METRIC, 2, 1.0))
}

/// A size with binary prefixes, without the `B` that callers append:
/// `512.00`, `676.18K`, `19.81M`.
pub fn format_binary(n: f64) -> String {
    format_finite(n, |x| scaled(x, &BINARY, 2))
}

/// A whole-unit duration for the `Running` line: `30s`, `2m`, `60m`.
/// Exact halves round to even, as the original's `printf` does (`150s`
/// is `2.5m` and prints `2m`).
fn format_duration_s(secs: f64) -> String {
    format_finite(secs, |x| scaled(x, &SECONDS, 0))
}

/// The duration of the `Running` line. A whole number of seconds (all the
/// original accepts) prints as it does; a fraction, which only metron
/// accepts, prints exactly, so that `-d 250ms` does not read `0s`.
pub fn format_run_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        return format_duration_s(d.as_secs_f64());
    }
    let (amount, unit) = if d < Duration::from_secs(1) {
        (d.as_secs_f64() * 1e3, "ms")
    } else {
        (d.as_secs_f64(), "s")
    };
    // Three decimals at most (microseconds below a second), no trailing
    // zeros: 250ms, 1.5s, 2.125s.
    let text = format!("{amount:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

/// The column text the original's table printer makes of `value`: it is
/// right-aligned (and cut, if longer) in `width` columns less a margin of
/// two, one of which is given back for each unit letter among the last two
/// characters; the margin follows as spaces. Numbers and units thus line
/// up on their last digit whatever the unit's length.
pub fn print_units(value: &str, width: usize) -> String {
    let tail: Vec<char> = value.chars().rev().take(2).collect();
    let letters = tail.iter().filter(|c| c.is_ascii_alphabetic()).count();
    let pad = 2 - letters;
    let field = width.saturating_sub(pad);
    format!("{value:>field$.field$}{:pad$}", "")
}

/// Applies `format` to finite amounts; infinities and NaN print the way
/// `printf` prints them (the report never passes them, but a stray one
/// must not panic).
fn format_finite(x: f64, format: impl FnOnce(Extended) -> String) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    format(Extended::from_f64(x))
}

/// Climbs `table` while the amount is at least 0.85 of the scale and a
/// further unit remains, then prints it with `decimals` decimals.
fn scaled(amount: Extended, table: &Table, decimals: u32) -> String {
    climb(amount, table, decimals, 0.85)
}

/// Climbs `table` while the amount is at least `at` of the scale and a
/// further unit remains, then prints it with `decimals` decimals.
fn climb(mut amount: Extended, table: &Table, decimals: u32, at: f64) -> String {
    // Computed in f64 like the original, where it is a `double` product:
    // 1024 × 0.85 is 870.39999999999997726…, not 870.4.
    let threshold = Extended::from_f64(table.scale as f64 * at);
    let mut unit = table.base;
    let climbable = table.larger.len().saturating_sub(1);
    for next in &table.larger[..climbable] {
        if !amount.at_least(threshold) {
            break;
        }
        amount = amount.div(table.scale);
        unit = next;
    }
    format!("{}{unit}", amount.to_fixed(decimals))
}

/// A wall-clock instant in RFC 3339, UTC, to the millisecond
/// (`2026-11-24T12:00:00.000Z`).
pub fn format_wall(t: std::time::SystemTime) -> String {
    let at = time::OffsetDateTime::from(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_below_850us_stay_in_microseconds() {
        assert_eq!(format_time_us(0.0), "0.00us");
        assert_eq!(format_time_us(500.0), "500.00us");
        assert_eq!(format_time_us(849.99), "849.99us");
    }

    #[test]
    fn times_switch_to_ms_at_850us() {
        assert_eq!(format_time_us(850.0), "0.85ms");
        assert_eq!(format_time_us(6602.0), "6.60ms");
        assert_eq!(format_time_us(999_999.0), "1000.00ms");
    }

    #[test]
    fn times_from_one_second_use_the_seconds_table() {
        assert_eq!(format_time_us(1_000_000.0), "1.00s");
        assert_eq!(format_time_us(1_400_000.0), "1.40s");
        assert_eq!(format_time_us(50_999_999.0), "51.00s");
        assert_eq!(format_time_us(55_000_000.0), "0.92m");
    }

    #[test]
    fn the_last_unit_of_a_table_is_never_reached() {
        // Hours would need a third step; the loop stops at minutes.
        assert_eq!(format_time_us(7_200_000_000.0), "120.00m");
        assert_eq!(format_metric(1e18), "1000000.00T");
        assert_eq!(format_binary(2f64.powi(50)), "1024.00T");
    }

    #[test]
    fn metric_counts() {
        assert_eq!(format_metric(100.0), "100.00");
        assert_eq!(format_metric(849.0), "849.00");
        assert_eq!(format_metric(850.0), "0.85k");
        assert_eq!(format_metric(1040.0), "1.04k");
        assert_eq!(format_metric(2_500_000.0), "2.50M");
    }

    #[test]
    fn rates_move_up_a_unit_only_at_a_whole_one() {
        // wrk's rule would print 900 as 0.90k under an 825.00.
        assert_eq!(format_rate(825.0), "825.00");
        assert_eq!(format_rate(900.0), "900.00");
        assert_eq!(format_rate(999.0), "999.00");
        assert_eq!(format_rate(1000.0), "1.00k");
        assert_eq!(format_rate(1200.0), "1.20k");
        assert_eq!(format_rate(950_000.0), "950.00k");
        assert_eq!(format_rate(2_500_000.0), "2.50M");
    }

    #[test]
    fn binary_sizes_switch_at_870_4() {
        assert_eq!(format_binary(870.0), "870.00");
        assert_eq!(format_binary(870.4), "0.85K");
        assert_eq!(format_binary(692_408.0), "676.18K");
        assert_eq!(format_binary(20_771_635.0), "19.81M");
    }

    #[test]
    fn durations_print_whole_units() {
        assert_eq!(format_duration_s(30.0), "30s");
        assert_eq!(format_duration_s(50.0), "50s");
        assert_eq!(format_duration_s(90.0), "2m");
        assert_eq!(format_duration_s(150.0), "2m");
        assert_eq!(format_duration_s(3600.0), "60m");
    }

    #[test]
    fn run_durations_with_fractions_print_exactly() {
        let ms = Duration::from_millis;
        assert_eq!(format_run_duration(Duration::from_secs(30)), "30s");
        assert_eq!(format_run_duration(Duration::from_secs(150)), "2m");
        assert_eq!(format_run_duration(ms(250)), "250ms");
        assert_eq!(format_run_duration(ms(1500)), "1.5s");
        assert_eq!(format_run_duration(ms(2125)), "2.125s");
        assert_eq!(format_run_duration(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(format_run_duration(ms(90_500)), "90.5s");
    }

    #[test]
    fn ties_print_the_digits_of_80_bit_arithmetic() {
        // f64 division would print 0.85ms and 0.91ms for these two.
        assert_eq!(format_time_us(855.0), "0.86ms");
        assert_eq!(format_time_us(905.0), "0.90ms");
        assert_eq!(format_metric(855.0), "0.86k");
    }

    #[test]
    fn non_finite_amounts_print_like_printf() {
        assert_eq!(format_time_us(f64::NAN), "nan");
        assert_eq!(format_metric(f64::INFINITY), "inf");
    }

    #[test]
    fn print_units_pads_by_trailing_letters() {
        assert_eq!(print_units("6.60ms", 8), "  6.60ms");
        assert_eq!(print_units("1.40s", 8), "  1.40s ");
        assert_eq!(print_units("1.04k", 10), "    1.04k ");
        assert_eq!(print_units("100.00", 9), " 100.00  ");
        assert_eq!(print_units("12.50ms", 9), "  12.50ms");
    }

    #[test]
    fn print_units_cuts_what_does_not_fit() {
        assert_eq!(print_units("123456.00", 8), "123456  ");
        assert_eq!(print_units("1000.00ms", 8), "1000.00m");
    }
}
