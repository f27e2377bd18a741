//! The lines before the results: what is run, against what, how the
//! requests are spread and which part of the schedule this instance sends.

use super::*;

/// The two lines the original prints before the run starts; callers that
/// print them early then use [`write_results`] at the end. `protocol`, when
/// given, follows the connections in brackets (HTTP/2 runs).
pub fn write_banner(
    out: &mut impl Write,
    url: &str,
    duration: Duration,
    threads: usize,
    connections: usize,
    protocol: Option<&str>,
) -> io::Result<()> {
    writeln!(
        out,
        "Running {} test @ {url}",
        format_run_duration(duration)
    )?;
    write_connections_line(out, threads, connections, protocol)
}

/// The banner's second line, which `metron sweep` prints under its own
/// first: threads, connections, and the protocol when not HTTP/1.1.
pub fn write_connections_line(
    out: &mut dyn Write,
    threads: usize,
    connections: usize,
    protocol: Option<&str>,
) -> io::Result<()> {
    write!(out, "  {threads} threads and {connections} connections")?;
    match protocol {
        Some(p) => writeln!(out, " ({p})"),
        None => writeln!(out),
    }
}

/// Under the banner, when every request is a call: of which method, and
/// whether its replies stream.
pub fn write_call_line(out: &mut dyn Write, method: &str, streaming: bool) -> io::Result<()> {
    let shape = if streaming {
        "server streaming: each message timed"
    } else {
        "unary"
    };
    writeln!(out, "  gRPC calls of {method} ({shape})")
}

/// Under the banner, when connections may grow on demand: how far.
pub fn write_growth_line(out: &mut dyn Write, max: usize, from_open_files: bool) -> io::Result<()> {
    let why = if from_open_files {
        " (as many as the open-files limit allows)"
    } else {
        ""
    };
    writeln!(out, "  more connections open on demand, up to {max}{why}")
}

/// A phase's start or length: `0s`, `30s`, `2.5s`.
pub(super) fn short_secs(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    format!("{}s", s.trim_end_matches('0').trim_end_matches('.'))
}

/// The line after the banner that says how requests are spread, when it
/// is not wrk2's constant `-R`: the profile's phases and the seed of
/// random arrivals (so a run can be repeated).
pub fn write_arrival_line(
    out: &mut impl Write,
    profile: Option<&str>,
    spacing: Option<Spacing>,
) -> io::Result<()> {
    let poisson = spacing.and_then(Spacing::seed);
    let spread = match poisson {
        Some(seed) => format!("Poisson arrivals (--seed {seed})"),
        None => "constant arrivals".to_string(),
    };
    match profile {
        Some(p) => writeln!(out, "  rate profile {p}, {spread}"),
        None if poisson.is_some() => writeln!(out, "  {spread}"),
        None => Ok(()),
    }
}

/// `--shard` and `--start-at`, under the banner: which part of the
/// schedule (of `what`: requests, or a flow's visits) this instance
/// sends, and the instant the schedule starts.
pub fn write_distributed_lines(
    out: &mut impl Write,
    shard: crate::schedule::Shard,
    rate: Option<f64>,
    start_at: Option<std::time::SystemTime>,
    what: &str,
) -> io::Result<()> {
    if let (false, Some(rate)) = (shard.is_whole(), rate) {
        let n = shard.count();
        writeln!(
            out,
            "  shard {} of {n}: {what} {}, {}+{n}, ... of the schedule, {} of {} {what}/sec",
            shard.index(),
            shard.index(),
            shard.index(),
            format_rate(rate),
            format_rate(rate * n as f64)
        )?;
    }
    if let Some(at) = start_at {
        writeln!(
            out,
            "  schedule starts at {} (--start-at)",
            crate::units::format_wall(at)
        )?;
    }
    Ok(())
}

/// A run that began after its `--start-at`: by how much, and the requests
/// it passed over (only when it missed any: a start on time is quiet).
pub fn write_late_start(
    out: &mut impl Write,
    late: Duration,
    missed: u64,
    measured: u64,
) -> io::Result<()> {
    if missed == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "  Started {} after --start-at: passed over the {missed} requests due before then \
         ({measured} in the measured window, counted as never sent)",
        format_time_us(late.as_secs_f64() * 1e6)
    )
}

/// The line after the banner that says what `--requests` replays:
/// requests, or over WebSocket (`messages`) messages.
pub fn write_replay_line(
    out: &mut impl Write,
    file: &str,
    (entries, messages): (usize, bool),
    hosts: usize,
    order: &str,
) -> io::Result<()> {
    let s = |n: usize| if n == 1 { "" } else { "s" };
    let what = if messages { "message" } else { "request" };
    writeln!(
        out,
        "  replaying {entries} {what}{} from {file} to {hosts} host{}, {order}",
        s(entries),
        s(hosts)
    )
}

/// `--llm`: the API, where the prompts come from, and what every body
/// asks besides its prompt.
pub fn write_llm_line(
    out: &mut impl Write,
    api: &str,
    path: &str,
    prompts: usize,
    source: &str,
    order: &str,
    asks: &str,
) -> io::Result<()> {
    let s = if prompts == 1 { "" } else { "s" };
    writeln!(
        out,
        "  LLM {api} to {path}: {prompts} prompt{s} from {source}, {order}; {asks}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A requests file replays requests, or over WebSocket messages.
    #[test]
    fn the_replay_line_names_what_the_file_holds() {
        let line = |entries, hosts| {
            let mut out = Vec::new();
            write_replay_line(&mut out, "f.jsonl", entries, hosts, "in order").unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            line((5, false), 2),
            "  replaying 5 requests from f.jsonl to 2 hosts, in order\n"
        );
        assert_eq!(
            line((1, true), 1),
            "  replaying 1 message from f.jsonl to 1 host, in order\n"
        );
    }
}
