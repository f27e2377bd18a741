pub mod units { pub fn format_time_us(n: f64) -> String { format!("{n}") } }
pub struct RunInfo;
impl RunInfo { pub fn from_config(_c: &crate::cli::config::Config) -> RunInfo { RunInfo } }
pub fn write_header(_o: &mut dyn std::io::Write, _r: &RunInfo) -> std::io::Result<()> { Ok(()) }
pub fn write_results(_o: &mut dyn std::io::Write, _r: &RunInfo, _s: &crate::stats::RunStats) -> std::io::Result<()> { Ok(()) }
