//! Amounts as people type them and as the reports print them, in one
//! leaf that the command line, the reports and the verdicts all use.
//!
//! - `parse`: the numbers people type: counts with SI suffixes (`1k`),
//!   rates (`2.5k`), byte sizes (`64k`) and durations (`250ms`, `2m`).
//! - `format`: times, counts and byte sizes in the original's exact
//!   digits, and the column padding of its tables, computed in its 80-bit
//!   arithmetic (`extended`).

mod extended;
mod format;
mod parse;

pub use format::{
    format_binary, format_metric, format_rate, format_run_duration, format_time_us, format_wall,
    print_units,
};
pub use parse::{parse_bytes, parse_duration, parse_si_f64, parse_si_u64};
