//! HdrHistogram interval logs: writing `--hlog FILE` and merging logs with
//! `metron merge`.
//!
//! An interval log holds one histogram per interval of the run, so that a
//! run can be plotted over time, or runs made on several machines added up
//! without losing percentile precision (averaging percentiles would). The
//! format is the one the HdrHistogram libraries read and write: a header of
//! `#` lines, a legend, then one line per histogram with its start, length,
//! maximum and the histogram itself, V2-encoded, deflated and in base64.
//! Each interval gets five lines: corrected latency of completed requests
//! untagged (what every reader sums by default), then `Tag=uncorrected`,
//! `Tag=send-lag`, `Tag=with-unfinished`: the corrected latency with the
//! lower bounds of the requests given up in the interval included
//! (docs/MEASUREMENT.md, §6), the conservative distribution, and
//! `Tag=ttfb`: the time to first byte from the intended send time; with
//! `--sse`, in the intervals that had events, `Tag=first-event` and
//! `Tag=event-gap` too (with `--llm`, the first token from the intended
//! send time, TTFT, and the gaps between token chunks), and with `--llm`,
//! in the intervals in which answers of two tokens or more ended,
//! `Tag=tpot`: their time per output token. With
//! per-endpoint statistics, one more per endpoint, tagged `endpoint:` and
//! its label (spaces and commas, which tags may not hold, written as `_`
//! and `;`).
//!
//! The header is written here rather than by the hdrhistogram crate's
//! `IntervalLogWriterBuilder`: that builder writes no format version and no
//! legend, and its `#[MaxValueDivisor]` comment would have to follow the
//! legend. The C reader needs the version line and takes no comment after
//! the legend, so this module writes the whole log, line by line in the
//! same form as the crate's writer (a test holds the two to the same
//! bytes). Reading uses the crate's parser and deserializer.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{
    IntervalLogHistogram, IntervalLogIterator, LogEntry as LogLine, LogIteratorError,
};
use hdrhistogram::Histogram;

use super::text::write_latencies;
use crate::stats::codec;
use crate::stats::{add_histogram, new_histogram, Counters, IntervalStats, RunStats, HIST_HIGH_US};

/// Tag of the uncorrected latency histograms.
pub const TAG_UNCORRECTED: &str = "uncorrected";
/// Tag of the send lag histograms.
pub const TAG_SEND_LAG: &str = "send-lag";
/// Tag of the corrected latency with unfinished requests' lower bounds.
pub const TAG_WITH_UNFINISHED: &str = "with-unfinished";
/// Tag of the time to first byte, from the intended send time.
pub const TAG_TTFB: &str = "ttfb";
/// Tags of `--sse`'s first events and gaps between events, in the
/// intervals that had any.
pub const TAG_FIRST_EVENT: &str = "first-event";
pub const TAG_EVENT_GAP: &str = "event-gap";
/// Tag of `--llm`'s time per output token, in the intervals that had any.
pub const TAG_TPOT: &str = "tpot";
/// Prefix of the tags of per-endpoint corrected latency.
pub const TAG_ENDPOINT: &str = "endpoint:";
/// The newest version of the log format; the C reader rejects a log that
/// does not state one.
const FORMAT_VERSION: &str = "1.3";
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";
/// Values are microseconds and the max column is read as milliseconds.
const US_PER_MS: u64 = 1000;
/// The C reader reads header lines into 128 bytes; longer comment lines
/// are split so that none of it spills into what it takes for data.
const COMMENT_WIDTH: usize = 120;
/// Readers take interval timestamps for offsets from StartTime, when no
/// BaseTime says so, only if they are over a year before it.
const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// Why a log could not be read or merged; each message is one line that
/// names the file, and the line when there is one.
#[derive(Debug, thiserror::Error)]
pub enum HlogError {
    #[error("no interval logs to merge")]
    NoLogs,
    #[error("cannot read {file}: {source}")]
    Read { file: String, source: io::Error },
    #[error("{file}: empty file, not an interval log")]
    Empty { file: String },
    #[error("{file}: no interval histograms in it, not an interval log")]
    NoIntervals { file: String },
    #[error("{file}:{line}: not an interval log line")]
    Syntax { file: String, line: usize },
    #[error("{file}:{line}: unreadable histogram: {reason}")]
    Histogram {
        file: String,
        line: usize,
        reason: String,
    },
}

/// One histogram line of a log.
#[derive(Clone, Debug)]
pub struct LogEntry {
    pub tag: Option<String>,
    /// Since the Unix epoch, so that logs from several machines line up.
    pub start: Duration,
    pub length: Duration,
    pub histogram: Histogram<u64>,
}

/// Writes a whole interval log: the header, then three lines per interval
/// (and one per endpoint of `endpoints`, the labels by index). Every
/// interval is written, empty ones too, so that the timeline has no holes.
/// `comment` (the command line, say) becomes the first `#` lines.
pub fn write_log(
    out: &mut dyn Write,
    start: SystemTime,
    comment: &str,
    intervals: impl Iterator<Item = IntervalStats>,
    endpoints: &[String],
) -> io::Result<()> {
    let mut log = LogWriter::start(out, start, comment, endpoints)?;
    for interval in intervals {
        log.interval(&interval)?;
    }
    log.out.flush()
}

/// An interval log written as intervals come: the header first, then each
/// interval's lines (see [`write_log`]).
pub struct LogWriter<W: Write> {
    out: W,
    tags: Vec<String>,
    empty: Histogram<u64>,
}

impl<W: Write> LogWriter<W> {
    /// Writes the header; `start` is the measured window's start.
    pub fn start(
        mut out: W,
        start: SystemTime,
        comment: &str,
        endpoints: &[String],
    ) -> io::Result<LogWriter<W>> {
        // A clock set before 1970 cannot be written as seconds since it.
        let since_epoch = start.duration_since(UNIX_EPOCH).unwrap_or_default();
        write_header(&mut out, since_epoch, comment)?;
        Ok(LogWriter {
            out,
            tags: endpoints.iter().map(|e| endpoint_tag(e)).collect(),
            empty: new_histogram(),
        })
    }

    /// The endpoints (by index) whose lines follow each interval's from
    /// now on: a flow's steps grow in number as its visits take them.
    pub fn endpoints(&mut self, endpoints: &[String]) {
        if endpoints.len() != self.tags.len() {
            self.tags = endpoints.iter().map(|e| endpoint_tag(e)).collect();
        }
    }

    /// Writes one interval's lines.
    pub fn interval(&mut self, interval: &IntervalStats) -> io::Result<()> {
        write_interval(&mut self.out, interval)?;
        for (e, tag) in self.tags.iter().enumerate() {
            let h = interval
                .endpoints
                .get(e)
                .and_then(Option::as_ref)
                .map(|e| &e.latency);
            let line = interval_line(
                Some(tag),
                interval.start(),
                interval.length,
                h.unwrap_or(&self.empty),
            )?;
            self.out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The tag of an endpoint's lines: tags end at a comma and readers split
/// on whitespace, so neither may appear in one.
pub fn endpoint_tag(label: &str) -> String {
    let clean: String = label
        .chars()
        .map(|c| match c {
            ',' => ';',
            c if c.is_whitespace() => '_',
            c => c,
        })
        .collect();
    format!("{TAG_ENDPOINT}{clean}")
}

fn write_header(out: &mut dyn Write, since_epoch: Duration, comment: &str) -> io::Result<()> {
    for line in comment
        .lines()
        .flat_map(|l| split_at_width(l, COMMENT_WIDTH))
    {
        writeln!(out, "#{line}")?;
    }
    writeln!(out, "#[Histogram log format version {FORMAT_VERSION}]")?;
    let secs = seconds(since_epoch);
    let date = human_date(since_epoch.as_secs());
    writeln!(out, "#[StartTime: {secs} (seconds since epoch), {date}]")?;
    // Without a BaseTime, readers guess whether timestamps are offsets;
    // stating it makes them offsets from the start for every reader.
    writeln!(out, "#[BaseTime: {secs} (seconds since epoch)]")?;
    // The crate's writer states its divisor so; readers take it as a comment.
    writeln!(out, "#[MaxValueDivisor: {US_PER_MS}.000]")?;
    writeln!(out, "{LEGEND}")
}

fn write_interval(out: &mut dyn Write, interval: &IntervalStats) -> io::Result<()> {
    let with_unfinished = interval.with_unfinished();
    let lines = [
        (None, &interval.latency),
        (Some(TAG_UNCORRECTED), &interval.uncorrected),
        (Some(TAG_SEND_LAG), &interval.send_lag),
        (Some(TAG_WITH_UNFINISHED), &with_unfinished),
        (Some(TAG_TTFB), &interval.ttfb),
        (Some(TAG_FIRST_EVENT), &interval.first_event),
        (Some(TAG_EVENT_GAP), &interval.event_gap),
        (Some(TAG_TPOT), &interval.tpot),
    ];
    for (tag, histogram) in lines {
        // The events' and tokens' lines come only where there were events
        // (`--sse`, `--llm`) or answers of several tokens (`--llm`).
        if histogram.is_empty() && matches!(tag, Some(TAG_FIRST_EVENT | TAG_EVENT_GAP | TAG_TPOT)) {
            continue;
        }
        let line = interval_line(tag, interval.start(), interval.length, histogram)?;
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// `[Tag=t,]start,length,max,histogram` and a newline: start and length in
/// seconds, the max in milliseconds.
fn interval_line(
    tag: Option<&str>,
    start: Duration,
    length: Duration,
    histogram: &Histogram<u64>,
) -> io::Result<String> {
    let tag = tag.map(|t| format!("Tag={t},")).unwrap_or_default();
    Ok(format!(
        "{tag}{},{},{},{}\n",
        seconds(start),
        seconds(length),
        millis(histogram.max()),
        codec::encode(histogram)
    ))
}

/// Pieces of `line` at most `width` bytes long, cut between characters.
fn split_at_width(line: &str, width: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = line;
    while rest.len() > width {
        let mut cut = width;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        pieces.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    pieces.push(rest);
    pieces
}

/// Seconds with three decimals, rounded to the millisecond. Computed in
/// integers so that timestamps carry no floating-point noise.
fn seconds(d: Duration) -> String {
    let ms = (d.as_nanos() + 500_000) / 1_000_000;
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// Microseconds as milliseconds with three decimals, exactly.
fn millis(us: u64) -> String {
    format!("{}.{:03}", us / US_PER_MS, us % US_PER_MS)
}

/// `Tue Nov 14 22:13:20 UTC 2023`, the date form other writers put after
/// the StartTime; in UTC so that the log reads the same everywhere.
fn human_date(epoch_secs: u64) -> String {
    // 1970-01-01 was a Thursday.
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (days, secs) = (epoch_secs / 86_400, epoch_secs % 86_400);
    let weekday = WEEKDAYS[(days % 7) as usize];
    let (year, month, day) = civil_date(days);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let month = MONTHS[month];
    format!("{weekday} {month} {day:02} {h:02}:{m:02}:{s:02} UTC {year}")
}

/// Year, month (0-based) and day of month of a day counted from 1970-01-01.
fn civil_date(mut days: u64) -> (u64, usize, u64) {
    // Every 400 years hold the same number of days, leap days included.
    const DAYS_PER_400_YEARS: u64 = 146_097;
    let mut year = 1970 + 400 * (days / DAYS_PER_400_YEARS);
    days %= DAYS_PER_400_YEARS;
    while days >= days_in_year(year) {
        days -= days_in_year(year);
        year += 1;
    }
    let mut month = 0;
    while days >= days_in_month(year, month) {
        days -= days_in_month(year, month);
        month += 1;
    }
    (year, month, days + 1)
}

fn is_leap(year: u64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_year(year: u64) -> u64 {
    if is_leap(year) {
        366
    } else {
        365
    }
}

fn days_in_month(year: u64, month: usize) -> u64 {
    const DAYS: [u64; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    DAYS[month] + u64::from(month == 1 && is_leap(year))
}

/// Every histogram line of the log at `path`, in file order.
pub fn read_log(path: &Path) -> Result<Vec<LogEntry>, HlogError> {
    let file = path.display().to_string();
    let text = fs::read(path).map_err(|source| HlogError::Read {
        file: file.clone(),
        source,
    })?;
    parse_log(text, &file)
}

/// The entries of a whole log's text; `file` names it in errors.
fn parse_log(text: Vec<u8>, file: &str) -> Result<Vec<LogEntry>, HlogError> {
    if text.iter().all(u8::is_ascii_whitespace) {
        return Err(HlogError::Empty { file: file.into() });
    }
    let entries = parse_lines(&normalized(text), file)?;
    if entries.is_empty() {
        return Err(HlogError::NoIntervals { file: file.into() });
    }
    Ok(entries)
}

/// `text` with what the crate's parser refuses but other readers take:
/// blank lines become empty comments (so line numbers stay right), and the
/// last line gets its newline back, so that a log cut short by a killed
/// run or saved by an editor that drops it still reads.
fn normalized(text: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 1);
    for line in text.split_inclusive(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            out.extend_from_slice(b"#\n");
        } else {
            out.extend_from_slice(line);
            if line.last() != Some(&b'\n') {
                out.push(b'\n');
            }
        }
    }
    out
}

fn parse_lines(text: &[u8], file: &str) -> Result<Vec<LogEntry>, HlogError> {
    let mut clock = Clock::default();
    let mut entries = Vec::new();
    for line in IntervalLogIterator::new(text) {
        match line.map_err(|e| syntax_error(text, file, e))? {
            LogLine::StartTime(t) => clock.start = Some(t),
            LogLine::BaseTime(t) => clock.base = Some(t),
            LogLine::Interval(h) => {
                let line = line_number(text, offset_in(text, h.encoded_histogram()));
                let entry = decode_entry(&h, &clock);
                entries.push(entry.map_err(|reason| HlogError::Histogram {
                    file: file.into(),
                    line,
                    reason,
                })?);
            }
        }
    }
    Ok(entries)
}

fn syntax_error(text: &[u8], file: &str, e: LogIteratorError) -> HlogError {
    let LogIteratorError::ParseError { offset } = e;
    HlogError::Syntax {
        file: file.into(),
        line: line_number(text, offset),
    }
}

/// Where `part`, a slice of `text` the parser handed back, starts in it:
/// the parser gives no positions for the lines it accepts.
fn offset_in(text: &[u8], part: &str) -> usize {
    let offset = (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    offset.min(text.len())
}

fn line_number(text: &[u8], offset: usize) -> usize {
    text[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The StartTime and BaseTime seen so far: what interval timestamps count
/// from.
#[derive(Default)]
struct Clock {
    start: Option<Duration>,
    base: Option<Duration>,
}

impl Clock {
    /// The interval timestamp `t` as time since the epoch, read the way the
    /// reference readers do when a log lacks a BaseTime.
    fn absolute(&self, t: Duration) -> Duration {
        match (self.base, self.start) {
            (Some(base), _) => base.saturating_add(t),
            (None, Some(start)) if t.saturating_add(YEAR) < start => start.saturating_add(t),
            _ => t,
        }
    }
}

fn decode_entry(line: &IntervalLogHistogram, clock: &Clock) -> Result<LogEntry, String> {
    let histogram = codec::decode(line.encoded_histogram())?;
    Ok(LogEntry {
        tag: line.tag().map(|t| t.as_str().to_owned()),
        start: clock.absolute(line.start_timestamp()),
        length: line.duration(),
        histogram,
    })
}

/// Adds up the logs at `paths` as if one run had recorded them all:
/// untagged histograms into the corrected latency, `uncorrected`,
/// `send-lag` and `with-unfinished` into theirs; other tags are left out. The window runs from
/// the earliest interval start to the latest interval end.
pub fn merge(paths: &[PathBuf]) -> Result<RunStats, HlogError> {
    if paths.is_empty() {
        return Err(HlogError::NoLogs);
    }
    let mut sum = Sum::new();
    for path in paths {
        for entry in read_log(path)? {
            sum.add(&entry);
        }
    }
    Ok(sum.into_run_stats())
}

/// The running totals of [`merge`].
struct Sum {
    latency: Histogram<u64>,
    uncorrected: Histogram<u64>,
    send_lag: Histogram<u64>,
    with_unfinished: Histogram<u64>,
    ttfb: Histogram<u64>,
    saturated: u64,
    first: Option<Duration>,
    last: Duration,
}

impl Sum {
    fn new() -> Sum {
        Sum {
            latency: new_histogram(),
            uncorrected: new_histogram(),
            send_lag: new_histogram(),
            with_unfinished: new_histogram(),
            ttfb: new_histogram(),
            saturated: 0,
            first: None,
            last: Duration::ZERO,
        }
    }

    fn add(&mut self, entry: &LogEntry) {
        let start = entry.start;
        self.first = Some(self.first.map_or(start, |first| first.min(start)));
        self.last = self.last.max(start.saturating_add(entry.length));
        let into = match entry.tag.as_deref() {
            None => &mut self.latency,
            Some(TAG_UNCORRECTED) => &mut self.uncorrected,
            Some(TAG_SEND_LAG) => &mut self.send_lag,
            Some(TAG_WITH_UNFINISHED) => &mut self.with_unfinished,
            Some(TAG_TTFB) => &mut self.ttfb,
            Some(_) => return,
        };
        add_clamped(into, &entry.histogram, &mut self.saturated);
    }

    fn into_run_stats(self) -> RunStats {
        let completed = self.latency.len();
        let counters = Counters {
            due: completed,
            completed,
            saturated: self.saturated,
            ..Counters::default()
        };
        let window = self.last.saturating_sub(self.first.unwrap_or_default());
        // The lower bounds are what the conservative distribution holds
        // beyond the completed requests' (none, in logs of older versions).
        let mut unfinished = self.with_unfinished;
        if unfinished.subtract(&self.latency).is_err() {
            unfinished = new_histogram();
        }
        let mut stats = RunStats::merge(Vec::new(), window);
        stats.latency = self.latency;
        stats.uncorrected = self.uncorrected;
        stats.send_lag = self.send_lag;
        stats.unfinished = unfinished;
        stats.timings.ttfb = self.ttfb;
        stats.counters = counters;
        stats
    }
}

/// Adds `from` into `into`. A log written by another tool may hold values
/// beyond metron's range: those are recorded at its top and counted as
/// saturated, as a run does with them, rather than refusing the log.
fn add_clamped(into: &mut Histogram<u64>, from: &Histogram<u64>, saturated: &mut u64) {
    // Histograms grow as values come, so the range is metron's to check.
    if from.max() <= HIST_HIGH_US {
        add_histogram(into, from);
        return;
    }
    for v in from.iter_recorded() {
        let (value, count) = (v.value_iterated_to(), v.count_at_value());
        if value > HIST_HIGH_US {
            *saturated += count;
        }
        // In range once clamped, so this cannot fail.
        let _ = into.record_n(value.min(HIST_HIGH_US), count);
    }
}

/// The report of `metron merge`: which logs, then what they hold.
pub fn write_merged(out: &mut dyn Write, paths: &[PathBuf], stats: &RunStats) -> io::Result<()> {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let noun = if paths.len() == 1 { "log" } else { "logs" };
    let mut text = Vec::new();
    writeln!(
        text,
        "Merged {} interval {noun}: {}",
        paths.len(),
        names.join(", ")
    )?;
    write_latencies(&mut text, stats)?;
    out.write_all(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    use hdrhistogram::serialization::V2DeflateSerializer;

    /// 2023-11-14 22:13:20.250 UTC.
    fn start_time() -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_700_000_000_250)
    }

    fn record(h: &mut Histogram<u64>, values: &[(u64, u64)]) {
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
    }

    /// Three one-second intervals whose values differ per interval and
    /// per histogram; the middle one has no send lag at all.
    fn intervals() -> Vec<IntervalStats> {
        (0..3)
            .map(|i| {
                let mut s = IntervalStats::empty(i, Duration::from_secs(1));
                record(
                    &mut s.latency,
                    &[(500 + i, 40), (2_000 * (i + 1), 9), (12_500, 1)],
                );
                record(&mut s.uncorrected, &[(300 + i, 45), (900, 5)]);
                record(&mut s.ttfb, &[(200 + i, 48), (1_500, 2)]);
                if i != 1 {
                    record(&mut s.send_lag, &[(20, 10), (150 * (i + 1), 2)]);
                }
                // The last interval gave up on three requests.
                if i == 2 {
                    record(&mut s.unfinished, &[(400_000, 3)]);
                }
                s.completed = 50;
                s
            })
            .collect()
    }

    fn log_bytes(comment: &str, intervals: Vec<IntervalStats>) -> Vec<u8> {
        let mut out = Vec::new();
        write_log(&mut out, start_time(), comment, intervals.into_iter(), &[]).unwrap();
        out
    }

    fn log_text() -> String {
        String::from_utf8(log_bytes(
            "metron -t2 -c10 -R100 http://127.0.0.1/",
            intervals(),
        ))
        .unwrap()
    }

    fn assert_same(a: &Histogram<u64>, b: &Histogram<u64>) {
        assert_eq!(a.len(), b.len());
        assert_eq!((a.min(), a.max()), (b.min(), b.max()));
        for q in [0.0, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(a.value_at_quantile(q), b.value_at_quantile(q), "q {q}");
        }
    }

    /// A unique path in the temporary directory, removed by the caller.
    fn temp_path(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("metron-hlog-{}-{name}", std::process::id()))
    }

    #[test]
    fn a_log_reads_back_as_written() {
        let entries = parse_log(log_text().into_bytes(), "t.hlog").unwrap();
        let base = Duration::from_millis(1_700_000_000_250);
        assert_eq!(entries.len(), 15);
        for (interval, lines) in intervals().iter().zip(entries.chunks(5)) {
            let tags: Vec<Option<&str>> = lines.iter().map(|e| e.tag.as_deref()).collect();
            assert_eq!(
                tags,
                [
                    None,
                    Some(TAG_UNCORRECTED),
                    Some(TAG_SEND_LAG),
                    Some(TAG_WITH_UNFINISHED),
                    Some(TAG_TTFB)
                ]
            );
            for e in lines {
                assert_eq!(e.start, base + interval.start());
                assert_eq!(e.length, interval.length);
            }
            assert_same(&lines[0].histogram, &interval.latency);
            assert_same(&lines[1].histogram, &interval.uncorrected);
            assert_same(&lines[2].histogram, &interval.send_lag);
            assert_same(&lines[3].histogram, &interval.with_unfinished());
            assert_same(&lines[4].histogram, &interval.ttfb);
        }
        // Merged, the lower bounds come back apart from the latency.
        let path = temp_path("unfinished.hlog");
        std::fs::write(&path, log_text()).unwrap();
        let merged = merge(std::slice::from_ref(&path)).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!((merged.latency.len(), merged.unfinished.len()), (150, 3));
        assert_eq!(merged.timings.ttfb.len(), 150);
    }

    #[test]
    fn the_header_comes_first_and_the_timeline_is_continuous() {
        let text = log_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "#metron -t2 -c10 -R100 http://127.0.0.1/");
        assert_eq!(lines[1], "#[Histogram log format version 1.3]");
        assert_eq!(
            lines[2],
            "#[StartTime: 1700000000.250 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]"
        );
        assert_eq!(
            lines[3],
            "#[BaseTime: 1700000000.250 (seconds since epoch)]"
        );
        assert_eq!(lines[4], "#[MaxValueDivisor: 1000.000]");
        assert_eq!(lines[5], LEGEND);
        let data = &lines[6..];
        assert_eq!(data.len(), 15);
        for (i, five) in data.chunks(5).enumerate() {
            let at = format!("{i}.000,1.000,");
            assert!(five[0].starts_with(&at), "{}", five[0]);
            assert!(five[1].starts_with(&format!("Tag=uncorrected,{at}")));
            assert!(five[2].starts_with(&format!("Tag=send-lag,{at}")));
            assert!(five[3].starts_with(&format!("Tag=with-unfinished,{at}")));
            assert!(five[4].starts_with(&format!("Tag=ttfb,{at}")));
        }
        // 12 500 µs is stored as the top of its bucket, 12 503 µs.
        assert!(
            data[0].starts_with("0.000,1.000,12.503,HISTF"),
            "{}",
            data[0]
        );
        // The interval without send lag still has its line.
        assert!(data[7].starts_with("Tag=send-lag,1.000,1.000,0.000,"));
    }

    #[test]
    fn interval_lines_match_the_crate_writer() {
        let interval = &intervals()[2];
        let mut crate_log = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        {
            let mut writer = IntervalLogWriterBuilder::new()
                .with_max_value_divisor(1000.0)
                .begin_log_with(&mut crate_log, &mut serializer)
                .unwrap();
            let tag = Tag::new(TAG_UNCORRECTED);
            let (start, length) = (interval.start(), interval.length);
            writer
                .write_histogram(&interval.latency, start, length, None)
                .unwrap();
            writer
                .write_histogram(&interval.uncorrected, start, length, tag)
                .unwrap();
        }
        let crate_log = String::from_utf8(crate_log).unwrap();
        let ours = log_text();
        let mut ours = ours.lines().skip_while(|l| !l.starts_with("2.000,"));
        let mut theirs = crate_log.lines();
        assert_eq!(theirs.next(), Some("#[MaxValueDivisor: 1000.000]"));
        assert_eq!(ours.next(), theirs.next());
        assert_eq!(ours.next(), theirs.next());
    }

    #[test]
    fn long_comments_are_split_and_every_line_is_a_comment() {
        let long = format!("metron {}\nsecond line", "é".repeat(100));
        let text = String::from_utf8(log_bytes(&long, Vec::new())).unwrap();
        let comments: Vec<&str> = text.lines().take_while(|l| !l.starts_with("#[")).collect();
        assert_eq!(comments.len(), 3, "{text}");
        assert!(comments
            .iter()
            .all(|l| l.starts_with('#') && l.len() <= 121));
        assert_eq!(
            comments[..2].concat().replace('#', ""),
            long.lines().next().unwrap()
        );
        assert_eq!(comments[2], "#second line");
    }

    #[test]
    fn dates_are_utc_and_know_leap_years() {
        assert_eq!(human_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(human_date(951_782_400), "Tue Feb 29 00:00:00 UTC 2000");
        assert_eq!(human_date(1_709_208_000), "Thu Feb 29 12:00:00 UTC 2024");
        assert_eq!(seconds(Duration::from_micros(1_999_500)), "2.000");
        assert_eq!(millis(12_503), "12.503");
    }

    fn encoded(values: &[(u64, u64)]) -> String {
        let mut h = new_histogram();
        record(&mut h, values);
        codec::encode(&h)
    }

    #[test]
    fn timestamps_follow_the_reference_readers() {
        let h = encoded(&[(100, 1)]);
        let start = |text: String| parse_log(text.into_bytes(), "t").unwrap()[0].start;
        let st = "#[StartTime: 1700000000.000 (seconds since epoch)]\n";
        // StartTime alone: small timestamps are offsets from it...
        let offset = start(format!("{st}2.500,1.000,0.100,{h}\n"));
        assert_eq!(offset, Duration::from_millis(1_700_000_002_500));
        // ...and large ones are absolute, as they are with no header.
        let absolute = start(format!("{st}1700000009.000,1.000,0.100,{h}\n"));
        assert_eq!(absolute, Duration::from_secs(1_700_000_009));
        assert_eq!(
            start(format!("5.000,1.000,0.1,{h}")),
            Duration::from_secs(5)
        );
    }

    fn write_file(name: &str, contents: &[u8]) -> PathBuf {
        let path = temp_path(name);
        fs::write(&path, contents).unwrap();
        path
    }

    fn error_for(name: &str, contents: &[u8]) -> String {
        let path = write_file(name, contents);
        let message = read_log(&path).unwrap_err().to_string();
        fs::remove_file(&path).unwrap();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(!message.contains('\n'), "{message}");
        message
    }

    #[test]
    fn bad_files_give_one_line_naming_the_file() {
        let missing = temp_path("missing.hlog");
        let message = read_log(&missing).unwrap_err().to_string();
        assert!(message.starts_with(&format!("cannot read {}: ", missing.display())));
        assert!(!message.contains('\n'));
        assert!(error_for("empty.hlog", b"").ends_with(": empty file, not an interval log"));
        let garbage = error_for("garbage.hlog", b"#ok\n\x00\x01binary junk\nmore\n");
        assert!(
            garbage.ends_with(":2: not an interval log line"),
            "{garbage}"
        );
        let comments = error_for("comments.hlog", b"#only\n#comments\n");
        assert!(comments.contains("no interval histograms"), "{comments}");
        let base64 = error_for("base64.hlog", b"#x\n\n1.000,1.000,0.1,@@@@\n");
        assert!(
            base64.contains(":3: unreadable histogram: bad base64"),
            "{base64}"
        );
        let cookie = error_for("cookie.hlog", b"1.000,1.000,0.1,AAAAAAAA\n");
        assert!(cookie.contains(":1: unreadable histogram: "), "{cookie}");
    }

    #[test]
    fn merged_logs_add_up_to_one_histogram_of_every_value() {
        let a = intervals();
        let mut b = intervals();
        for s in &mut b {
            record(&mut s.latency, &[(80_000, 3)]);
        }
        let a_path = write_file("merge-a.hlog", &log_bytes("a", a.clone()));
        let later = start_time() + Duration::from_secs(10);
        let mut b_log = Vec::new();
        write_log(&mut b_log, later, "b", b.clone().into_iter(), &[]).unwrap();
        let b_path = write_file("merge-b.hlog", &b_log);
        let paths = vec![a_path.clone(), b_path.clone()];
        let stats = merge(&paths).unwrap();

        let mut all = new_histogram();
        let mut uncorrected = new_histogram();
        for s in a.iter().chain(&b) {
            all.add(&s.latency).unwrap();
            uncorrected.add(&s.uncorrected).unwrap();
        }
        assert_same(&stats.latency, &all);
        assert_same(&stats.uncorrected, &uncorrected);
        assert_eq!(stats.latency.len(), 300 + 9);
        assert_eq!(stats.send_lag.len(), 4 * 12);
        assert_eq!(stats.counters.completed, stats.latency.len());
        assert_eq!(stats.counters.due, stats.counters.completed);
        // From a's first interval to the end of b's last, 10 s later.
        assert_eq!(stats.window, Duration::from_secs(13));
        assert!(stats.threads.is_empty() && stats.req_per_sec.is_empty());

        let mut report = Vec::new();
        write_merged(&mut report, &paths, &stats).unwrap();
        let report = String::from_utf8(report).unwrap();
        let names = format!("{}, {}", a_path.display(), b_path.display());
        assert!(report.starts_with(&format!("Merged 2 interval logs: {names}\n  Thread Stats")));
        // Corrected, with the unfinished requests (the logs' last
        // intervals gave up on some), uncorrected.
        assert_eq!(report.matches("Latency Distribution").count(), 3);
        assert!(report.contains("  309 requests in 13.00s\n"), "{report}");
        assert!(report.contains("  Send lag: p50 "), "{report}");
        // Logs carry no bytes, errors or per-thread rates: nothing is
        // printed for them rather than zeros.
        for absent in ["Req/Sec", " read", "Transfer/sec", "Socket errors", "Note:"] {
            assert!(!report.contains(absent), "{absent} in {report}");
        }
        fs::remove_file(a_path).unwrap();
        fs::remove_file(b_path).unwrap();
    }

    #[test]
    fn merge_names_the_bad_file_and_needs_one() {
        assert!(matches!(merge(&[]), Err(HlogError::NoLogs)));
        let good = write_file("good.hlog", &log_bytes("", intervals()));
        let bad = write_file("bad.hlog", b"");
        let message = merge(&[good.clone(), bad.clone()]).unwrap_err().to_string();
        assert_eq!(
            message,
            format!("{}: empty file, not an interval log", bad.display())
        );
        fs::remove_file(good).unwrap();
        fs::remove_file(bad).unwrap();
    }

    #[test]
    fn values_beyond_the_range_saturate_instead_of_failing() {
        let mut wide = Histogram::<u64>::new_with_bounds(1, HIST_HIGH_US * 10, 3).unwrap();
        record(&mut wide, &[(100, 2), (HIST_HIGH_US * 5, 3)]);
        let line = format!("0.000,1.000,1.0,{}\n", codec::encode(&wide));
        let mut sum = Sum::new();
        for entry in parse_log(line.into_bytes(), "wide").unwrap() {
            sum.add(&entry);
        }
        let stats = sum.into_run_stats();
        assert_eq!(stats.latency.len(), 5);
        assert_eq!(stats.counters.saturated, 3);
        assert!(stats.latency.equivalent(stats.latency.max(), HIST_HIGH_US));
    }
}
