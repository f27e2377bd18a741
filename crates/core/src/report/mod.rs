//! Turning a run's statistics into what people and scripts read.
//!
//! The text report reproduces the original's layout byte for byte, which
//! takes more than format strings: its numbers come from 80-bit
//! arithmetic (`crate::units`) and from the C HdrHistogram's rules for means,
//! percentiles and the percentile spectrum (`stats::summary`, [`spectrum`]).
//! Each of those lives in its own file so the text layout ([`text`]) reads
//! as the list of lines it prints.

pub mod csv;
pub mod hlog;
pub mod html;
pub mod json;
pub mod merge;
pub mod series;
pub mod spectrum;
pub mod sweep;
pub mod text;

pub use text::{write_text, TextReport};
