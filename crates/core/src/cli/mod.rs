//! The command line, as typed: which command it is ([`parse`]), and each
//! command's flags: a load test's (wrk's, wrk2's and metron's own) in
//! `bench.rs` with its outputs' in [`outputs`], a sweep's in [`sweep`],
//! and `report`'s and `merge`'s here.
//!
//! This layer only parses and checks the shape of each value;
//! [`config::Config`] derives what the engine needs (per-thread
//! connections, resolved addresses, request bytes) in one place. The
//! flags' parsing is tested at the bottom of this file.

mod bench;
pub mod choice;
pub mod config;
pub mod distributed;
pub mod outputs;
pub mod profile;
pub mod sweep;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{ArgAction, Args, CommandFactory, FromArgMatches, Parser, ValueHint};

pub use bench::{parse_cpu_list, Arrival, BenchArgs, Connections, CpuList};

/// What the user asked metron to do.
#[derive(Debug)]
pub enum Command {
    /// Load-test a URL (the default, as with wrk).
    Bench(Box<BenchArgs>),
    /// Re-render the reports of a saved JSON document.
    Report(ReportArgs),
    /// One report from several runs' JSON documents, or from several
    /// HdrHistogram interval logs.
    Merge(MergeArgs),
    /// The highest rate that meets an SLO.
    Sweep(Box<sweep::SweepArgs>),
}

/// `metron merge A.json B.json ...` or `metron merge A.hlog B.hlog ...`.
#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// JSON documents written by --json (the instances of one run, e.g. its --shard parts), or interval logs written by --hlog (or by any HdrHistogram tool)
    #[arg(value_name = "FILE", required = true, value_hint = ValueHint::FilePath)]
    pub files: Vec<PathBuf>,

    /// JSON documents only: write the merged document to FILE
    #[arg(long = "json", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub json: Option<PathBuf>,

    /// JSON documents only: write the merged HTML report to FILE
    #[arg(long = "html", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub html: Option<PathBuf>,

    /// JSON documents only: judge the merged run against an SLO, as a run's --slo does, with the same terms (inconclusive when any instance's generator was the limit)
    #[arg(long = "slo", value_parser = crate::verdict::parse_slo, value_name = "SPEC")]
    pub slo: Option<crate::verdict::Slo>,
}

/// What `-v` and `--version` print after the name: the version, the
/// commit the binary was built from ("unknown" when its source was not a
/// git checkout; see build.rs), and the protocols compiled in, which are
/// all of them in every build.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("METRON_COMMIT"),
    ")\nprotocols: HTTP/1.1, HTTP/2, HTTP/3 over QUIC, gRPC, WebSocket; TLS 1.2 and 1.3 (rustls)"
);

/// The date of the commit in [`VERSION`] (YYYY-MM-DD), or "unknown".
pub const COMMIT_DATE: &str = env!("METRON_COMMIT_DATE");

/// `-v, --version` for a subcommand, as the top level spells it (wrk's
/// `-v`); [`same_version`] makes it print the top level's line.
#[derive(Args, Debug, Clone)]
pub struct VersionFlag {
    /// Print the version and exit
    #[arg(short = 'v', long = "version", action = ArgAction::Version)]
    version: (),
}

/// A subcommand's flags `A` with [`VersionFlag`], for those whose flags
/// do not have it already.
#[derive(Args, Debug, Clone)]
pub struct Versioned<A: Args> {
    #[command(flatten)]
    pub args: A,
    #[command(flatten)]
    version: VersionFlag,
}

/// A subcommand's `--version` prints what `metron --version` prints
/// (`metron X.Y.Z`), not the subcommand's name; every other outcome of its
/// parse passes through.
pub fn same_version(e: clap::Error) -> clap::Error {
    if e.kind() != ErrorKind::DisplayVersion {
        return e;
    }
    match BenchArgs::command().try_get_matches_from(["metron", "--version"]) {
        Err(top) => top,
        Ok(_) => e,
    }
}

/// `metron report FILE.json [--html OUT] [--csv OUT]`.
#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// A document written by --json
    #[arg(value_name = "FILE.json", value_hint = ValueHint::FilePath)]
    pub file: PathBuf,

    /// Also write the HTML report to OUT
    #[arg(long = "html", value_name = "OUT", value_hint = ValueHint::FilePath)]
    pub html: Option<PathBuf>,

    /// Also write the time series as CSV to OUT, one row per interval
    #[arg(long = "csv", value_name = "OUT", value_hint = ValueHint::FilePath)]
    pub csv: Option<PathBuf>,
}

/// `metron report`'s one line, in its help and its man page.
pub const REPORT_ABOUT: &str = "Print the text report of a saved JSON result (and optionally write its HTML report or CSV rows).";

/// `metron merge`'s one line, in its help and its man page.
pub const MERGE_ABOUT: &str = "Merge the JSON documents (or HdrHistogram interval logs) of several instances into one exact report.";

/// Parses the whole command line (including the program name).
///
/// Subcommands are recognised by the first word so that a bare URL stays
/// the default, as in wrk.
pub fn parse<I, T>(args: I) -> Result<Command, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    match first_word(&args) {
        Some("report") => subcommand::<Versioned<ReportArgs>>(&args, "metron report", REPORT_ABOUT)
            .map(|c| Command::Report(c.args)),
        Some("merge") => subcommand::<Versioned<MergeArgs>>(&args, "metron merge", MERGE_ABOUT)
            .map(|c| Command::Merge(c.args)),
        _ if value_apart(&args).is_some() => Err(clap::Error::raw(
            ErrorKind::ValueValidation,
            value_apart(&args).unwrap_or_default(),
        )),
        Some("sweep") => parse_with::<sweep::SweepArgs>(sweep_command(), &args)
            .map(|a| Command::Sweep(Box::new(a))),
        _ => BenchArgs::try_parse_from(args).map(|a| Command::Bench(Box::new(a))),
    }
}

/// `metron sweep`'s command: a run's flags less those it refuses, which
/// its help does not list (giving one is still refused by name).
pub fn sweep_command() -> clap::Command {
    let refused = sweep::refused();
    let cmd = command::<sweep::SweepArgs>("metron sweep", sweep::ABOUT);
    let ids: Vec<clap::Id> = cmd
        .get_arguments()
        .filter(|a| a.get_long().is_some_and(|l| refused.contains(&l)))
        .map(|a| a.get_id().clone())
        .collect();
    ids.into_iter()
        .fold(cmd, |cmd, id| cmd.mut_arg(id, |a| a.hide(true)))
}

/// A flag that takes its value only after '=' (so that `--dashboard URL`
/// and `--llm URL` work), given its value as the next word: that word
/// would be taken for the URL, and the real URL for a script argument.
/// The error that says so: `--dashboard` before an address (`9090`,
/// `127.0.0.1:9090`, `[::1]:9090`, `localhost:9090`), `--llm` before an
/// API's name.
fn value_apart(args: &[OsString]) -> Option<String> {
    let words: Vec<&str> = args
        .iter()
        .skip(1)
        .map_while(|a| a.to_str())
        .take_while(|w| *w != "--")
        .collect();
    let apart = |flag: &str, what: &str, value: &str| {
        format!(
            "{flag} {value}: {what} follows '=', or {value} is read as the URL; write \
             {flag}={value}\n"
        )
    };
    words.windows(2).find_map(|w| match (w[0], w[1]) {
        ("--dashboard", v) if looks_like_address(v) => {
            Some(apart("--dashboard", "the dashboard's address", v))
        }
        ("--llm", v) if crate::llm::ApiChoice::CHOICES.iter().any(|c| c.1 == v) => {
            Some(apart("--llm", "the API", v))
        }
        _ => None,
    })
}

/// `PORT` or `HOST:PORT`: no scheme, no path, a port that is a number.
fn looks_like_address(word: &str) -> bool {
    if word.starts_with('-') || word.contains('/') {
        return false;
    }
    if word.parse::<u16>().is_ok() || word.parse::<std::net::SocketAddr>().is_ok() {
        return true;
    }
    let Some((host, port)) = word.rsplit_once(':') else {
        return false;
    };
    !host.is_empty()
        && port.parse::<u16>().is_ok()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

/// The word after the program's name, where subcommands are named.
pub fn first_word(args: &[OsString]) -> Option<&str> {
    args.get(1).and_then(|a| a.to_str())
}

/// A subcommand's flags `A`, from the words after the program's name, as
/// `metron NAME` (`name`) with its one-line `about`; its `--version`
/// prints the top level's line.
pub fn subcommand<A: Args + FromArgMatches>(
    args: &[OsString],
    name: &'static str,
    about: &'static str,
) -> Result<A, clap::Error> {
    parse_with::<A>(command::<A>(name, about), args)
}

/// The command of a subcommand's flags `A`, as `metron NAME` (`name`)
/// with its one-line `about`.
pub fn command<A: Args>(name: &'static str, about: &'static str) -> clap::Command {
    // After the flags: their doc comment would otherwise be the about.
    A::augment_args(clap::Command::new(name))
        .bin_name(name)
        .about(about)
        .long_about(None)
        .version(VERSION)
        .disable_version_flag(true)
}

/// A subcommand's flags `A` parsed by `cmd` from the words after the
/// program's name; its `--version` prints the top level's line.
fn parse_with<A: FromArgMatches>(cmd: clap::Command, args: &[OsString]) -> Result<A, clap::Error> {
    cmd.try_get_matches_from(args.iter().skip(1).cloned())
        .and_then(|m| A::from_arg_matches(&m))
        .map_err(same_version)
}

/// A command-line parse error as one line: clap's message with its
/// indented continuation folded in, the flag clap found closest to a
/// mistyped one (`--conections`: did you mean `--connections`?), then the
/// usage line when clap gives one. clap's other tips are left out: they
/// suggest `--`, which starts the script's arguments here.
pub fn error_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let text = e.to_string();
    let mut message = String::new();
    let mut usage = None;
    for paragraph in text.split("\n\n") {
        let folded = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(u) = folded.strip_prefix("Usage: ") {
            usage = Some(u.to_string());
        } else if let Some(m) = folded.strip_prefix("error: ") {
            message = m.to_string();
        }
    }
    if let Some(ContextValue::String(flag)) = e.get(ContextKind::InvalidArg) {
        if flag.starts_with("--http1") || flag.starts_with("--h1") {
            return format!(
                "{flag}: HTTP/1.1 is the default and needs no flag: drop {flag} \
                 (--alpn http/1.1 offers it alone to an https:// host)"
            );
        }
    }
    let suggested = match e.get(ContextKind::SuggestedArg) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(s)) => s.clone(),
        _ => Vec::new(),
    };
    if !suggested.is_empty() {
        let named: Vec<String> = suggested.iter().map(|s| format!("'{s}'")).collect();
        message = format!("{message} (did you mean {}?)", named.join(" or "));
    }
    match usage {
        Some(u) => format!("{message}; usage: {u} (--help lists every flag)"),
        None => format!("{message} (--help lists every flag)"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn bench(args: &[&str]) -> Result<BenchArgs, String> {
        let mut v = vec!["metron"];
        v.extend_from_slice(args);
        match parse(v).map_err(|e| e.to_string())? {
            Command::Bench(b) => Ok(*b),
            other => Err(format!("not a bench command: {other:?}")),
        }
    }

    /// HTTP/1.1 is the default: a flag asking for it is told so, rather
    /// than pointed at the nearest flag by spelling (`--http3`).
    #[test]
    fn a_flag_asking_for_http1_is_told_it_is_the_default() {
        for flag in ["--http1", "--http1.1", "--h1"] {
            let e = parse(["metron", flag, "http://h/"]).unwrap_err();
            let line = error_line(&e);
            assert!(
                line.starts_with(&format!("{flag}: HTTP/1.1 is the default")),
                "{line}"
            );
            assert!(!line.contains("--http3"), "{line}");
        }
    }

    /// `--dashboard` and `--llm` take their values after '=' only: given
    /// apart, the value would be read as the URL and the URL as a script
    /// argument. The error says how to write it, for runs and sweeps; a
    /// URL after the bare flag is no value given apart.
    #[test]
    fn a_value_given_apart_from_its_flag_is_told_to_follow_an_equals_sign() {
        for (words, want) in [
            (
                &["--llm", "completions", "http://h/"][..],
                "--llm completions: the API follows '='",
            ),
            (&["sweep", "--llm", "chat", "http://h/"], "write --llm=chat"),
            (
                &["--dashboard", "9090", "http://h/"],
                "write --dashboard=9090",
            ),
        ] {
            let e = parse([&["metron"][..], words].concat()).unwrap_err();
            let line = error_line(&e);
            assert!(line.contains(want), "{words:?}: {line}");
        }
        assert!(bench(&["--llm", "http://h/"]).is_ok());
        assert!(bench(&["--llm=chat", "http://h/"]).is_ok());
    }

    #[test]
    fn a_flag_given_twice_takes_its_last_value_and_lists_still_add_up() {
        let a = bench(&[
            "-d",
            "10s",
            "-H",
            "A: 1",
            "-d",
            "30s",
            "-H",
            "B: 2",
            "http://h/",
        ])
        .unwrap();
        assert_eq!(a.duration, Some(Duration::from_secs(30)));
        assert_eq!(a.headers.len(), 2);
    }

    /// Regression: a mistyped long flag got no suggestion. The flag clap
    /// finds closest is named, on the one line.
    #[test]
    fn a_mistyped_flag_is_matched_to_the_closest() {
        let e = parse(["metron", "--conections", "10", "http://h/"]).unwrap_err();
        let line = error_line(&e);
        assert!(
            line.starts_with(
                "unexpected argument '--conections' found (did you mean '--connections'?); usage: "
            ),
            "{line}"
        );
        assert!(!line.contains('\n'), "{line}");
        let e = parse(["metron", "sweep", "--form", "1k", "http://h/"]).unwrap_err();
        assert!(
            error_line(&e).contains("(did you mean '--from'?)"),
            "{}",
            error_line(&e)
        );
        // Nothing close: no suggestion.
        let e = parse(["metron", "--bogus", "http://h/"]).unwrap_err();
        assert!(
            !error_line(&e).contains("did you mean"),
            "{}",
            error_line(&e)
        );
    }

    /// Regression: the top-level help called `metron merge` a merge of
    /// interval logs alone, and `--slo`'s help named none of the phase
    /// terms the parser takes.
    #[test]
    fn the_help_says_what_merge_and_slo_take() {
        let help = BenchArgs::command().render_long_help().to_string();
        let merge: String = help
            .lines()
            .skip_while(|l| !l.contains("metron merge"))
            .take(3)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            merge.contains("--json documents") && merge.contains("--hlog interval logs"),
            "{merge}"
        );
        let slo = BenchArgs::command()
            .get_arguments()
            .find(|a| a.get_long() == Some("slo"))
            .and_then(|a| a.get_help())
            .map(ToString::to_string)
            .unwrap_or_default();
        for (prefix, _) in crate::verdict::Timed::PREFIXES {
            let term = format!("{prefix}p99<T");
            assert!(slo.contains(&term), "{term}: {slo}");
            crate::verdict::parse_slo(&term.replace('T', "1s")).unwrap();
        }
        for term in ["pNN<T", "max<T", "errors<PCT%", "rate>=PCT%"] {
            assert!(slo.contains(term), "{term}: {slo}");
        }
    }

    #[test]
    fn wrk_defaults() {
        let a = bench(&["http://127.0.0.1:8080/"]).unwrap();
        assert_eq!((a.connections, a.threads), (Connections::Fixed(10), 2));
        assert_eq!(a.duration, None);
        assert_eq!(a.timeout, None);
        assert_eq!(a.rate, None);
    }

    #[test]
    fn wrk2_command_line_parses() {
        let a = bench(&[
            "-t2",
            "-c",
            "1k",
            "-d",
            "2m",
            "-R",
            "2.5k",
            "-L",
            "-U",
            "-H",
            "X-A: 1",
            "-H",
            "X-B:2",
            "--timeout",
            "500ms",
            "-a",
            "0-1",
            "http://h/p",
        ])
        .unwrap();
        assert_eq!(a.connections, Connections::Fixed(1000));
        assert_eq!(a.duration, Some(Duration::from_secs(120)));
        assert_eq!(a.rate, Some(2500.0));
        assert!(a.latency && a.u_latency);
        assert_eq!(a.headers, vec!["X-A: 1", "X-B:2"]);
        assert_eq!(a.timeout, Some(Duration::from_millis(500)));
        assert_eq!(a.affinity, Some(CpuList(vec![0, 1])));
    }

    #[test]
    fn script_arguments_follow_the_double_dash() {
        let a = bench(&["-s", "x.lua", "http://h/", "--", "a", "-b"]).unwrap();
        assert_eq!(a.script, Some(PathBuf::from("x.lua")));
        assert_eq!(a.script_args, vec!["a", "-b"]);
    }

    /// wrk parses with getopt: the first plain word is the URL, later ones
    /// go to the script, and flags may come between them.
    #[test]
    fn script_arguments_follow_the_url_as_in_wrk() {
        let a = bench(&[
            "-t2",
            "-c10",
            "-d30s",
            "-L",
            "-s",
            "x.lua",
            "https://h",
            "requests.json",
            "TOKEN",
        ])
        .unwrap();
        assert_eq!(a.url, "https://h");
        assert_eq!(a.script_args, vec!["requests.json", "TOKEN"]);
        let a = bench(&[
            "-s",
            "m.lua",
            "http://a/x",
            "http://b/y",
            "-d1s",
            "http://c/z",
        ])
        .unwrap();
        assert_eq!(a.url, "http://a/x");
        assert_eq!(a.script_args, vec!["http://b/y", "http://c/z"]);
        assert_eq!(a.duration, Some(Duration::from_secs(1)));
        let a = bench(&["-s", "x.lua", "http://h/", "one", "--", "-two", "--three"]).unwrap();
        assert_eq!(a.script_args, vec!["one", "-two", "--three"]);
    }

    #[test]
    fn bad_numbers_are_rejected_with_the_value_named() {
        let e = bench(&["-c", "ten", "http://h/"]).unwrap_err();
        assert!(e.contains("'ten'"), "{e}");
        let e = bench(&["-d", "5x", "http://h/"]).unwrap_err();
        assert!(e.contains("'5x'"), "{e}");
    }

    #[test]
    fn a_header_that_is_not_utf8_is_named() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(b"X-Name: caf\xe9".to_vec());
        let args = [
            OsString::from("metron"),
            "-H".into(),
            bad,
            "http://h/".into(),
        ];
        let e = parse(args).unwrap_err();
        let line = error_line(&e);
        assert!(
            line.starts_with(
                "invalid value 'X-Name: caf\u{fffd}' for '--header <H>': it is not UTF-8 text;"
            ),
            "{line}"
        );
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0,1"), Ok(CpuList(vec![0, 1])));
        assert_eq!(parse_cpu_list("0-3,6"), Ok(CpuList(vec![0, 1, 2, 3, 6])));
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
    }

    /// The help lists what a sweep takes, and none of what it refuses.
    #[test]
    fn the_help_hides_every_refused_flag() {
        let help = sweep_command().render_help().to_string();
        // The flags each row of the help starts with.
        let rows: Vec<&str> = help
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with('-'))
            .map(|l| {
                l.split_whitespace()
                    .find(|w| w.starts_with("--"))
                    .unwrap_or(l)
            })
            .collect();
        for flag in sweep::refused() {
            let long = format!("--{flag}");
            assert!(!rows.contains(&long.as_str()), "{long} in {help}");
        }
        assert!(!help.contains("-R, "), "{help}");
        for shown in [
            "--from",
            "--json",
            "--html",
            "--slo",
            "--warmup",
            "--connections",
        ] {
            assert!(rows.contains(&shown), "{shown} not in {help}");
        }
        // Every name hidden is a flag of a run.
        let all: Vec<String> = sweep_command()
            .get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .collect();
        for flag in sweep::refused() {
            assert!(all.iter().any(|l| l == flag), "{flag}");
        }
    }

    /// `--dashboard ADDR` with a space would run against ADDR as the URL.
    #[test]
    fn a_dashboard_address_after_a_space_is_refused() {
        for addr in ["127.0.0.1:9090", "9090", "localhost:9090", "[::1]:9090"] {
            let e = parse(["metron", "-d1s", "--dashboard", addr, "http://h/"]).unwrap_err();
            let line = error_line(&e);
            assert!(
                line.starts_with(&format!("--dashboard {addr}: "))
                    && line.contains(&format!("write --dashboard={addr}")),
                "{line}"
            );
            assert_eq!(line.lines().count(), 1);
        }
        // A URL after it, the '=' form, and the same words for a script.
        for ok in [
            &["metron", "--dashboard", "http://h/"][..],
            &["metron", "--dashboard=127.0.0.1:9090", "http://h/"],
            &[
                "metron",
                "-s",
                "x.lua",
                "http://h/",
                "--",
                "--dashboard",
                "9090",
            ],
        ] {
            assert!(parse(ok).is_ok(), "{ok:?}");
        }
    }

    #[test]
    fn subcommands_are_found_by_their_first_word() {
        assert!(matches!(
            parse(["metron", "report", "run.json"]).unwrap(),
            Command::Report(_)
        ));
        assert!(matches!(
            parse(["metron", "merge", "a.hlog"]).unwrap(),
            Command::Merge(_)
        ));
    }
}
