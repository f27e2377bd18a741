//! What an installed metron brings besides the binary: shell completions
//! (`metron completions SHELL`) and man pages (`metron man DIR`, hidden
//! from the help: packaging/deb.sh runs it). Both are written from the
//! very commands [`crate::parse`] parses with, so they list the flags,
//! value choices and help that `--help` does.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory, ValueHint};
use clap_complete::Shell;
use clap_mangen::roff::{roman, Roff};
use clap_mangen::Man;

use crate::demo::DemoArgs;
use crate::serve_args::ServeArgs;
use metron_core::cli::choice::choice;
use metron_core::cli::{self, BenchArgs, MergeArgs, ReportArgs, Versioned};

/// `metron completions`' one line.
pub const COMPLETIONS_ABOUT: &str =
    "Print a completion script for SHELL (bash, zsh or fish) on standard output.";

/// `metron man`'s one line.
pub const MAN_ABOUT: &str = "Write metron's man pages (metron.1 and one per subcommand) into DIR.";

/// The shells `metron completions` writes for, and where each reads it.
pub const SHELLS: [(Shell, &str, &str); 3] = [
    (
        Shell::Bash,
        "bash",
        "source it, or save it as bash-completion's completions/metron",
    ),
    (
        Shell::Zsh,
        "zsh",
        "save it as _metron in a directory of $fpath",
    ),
    (
        Shell::Fish,
        "fish",
        "save it as metron.fish in fish's completions directory",
    ),
];

/// `metron completions SHELL`.
#[derive(Args, Debug, Clone)]
pub struct CompletionsArgs {
    /// The shell the script is for
    #[arg(value_name = "SHELL", value_parser = choice(&SHELLS))]
    pub shell: Shell,
}

/// `metron man DIR`.
#[derive(Args, Debug, Clone)]
pub struct ManArgs {
    /// The directory to write the pages into (made if missing)
    #[arg(value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub dir: PathBuf,
}

/// Each subcommand's name and command, built as [`crate::parse`] builds
/// it to parse.
fn subcommands() -> Vec<(&'static str, clap::Command)> {
    vec![
        (
            "serve",
            cli::command::<Versioned<ServeArgs>>("metron serve", crate::serve_args::ABOUT),
        ),
        (
            "demo",
            cli::command::<Versioned<DemoArgs>>("metron demo", crate::demo::ABOUT),
        ),
        ("sweep", cli::sweep_command()),
        (
            "report",
            cli::command::<Versioned<ReportArgs>>("metron report", cli::REPORT_ABOUT),
        ),
        (
            "merge",
            cli::command::<Versioned<MergeArgs>>("metron merge", cli::MERGE_ABOUT),
        ),
        (
            "completions",
            cli::command::<Versioned<CompletionsArgs>>("metron completions", COMPLETIONS_ABOUT),
        ),
    ]
}

/// Every command in one tree, for the completion scripts: a load test's
/// flags at the root (a bare URL is the default command), each
/// subcommand below it.
pub fn command_tree() -> clap::Command {
    BenchArgs::command()
        .subcommand_negates_reqs(true)
        // `metron help` is not a command (`--help` is): none to complete.
        .disable_help_subcommand(true)
        .subcommands(subcommands().into_iter().map(|(name, cmd)| cmd.name(name)))
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> Vec<u8> {
    let mut script = Vec::new();
    // Into memory: the generator cannot report a failed write (a closed
    // pipe), and the caller's writer can.
    clap_complete::generate(shell, &mut command_tree(), "metron", &mut script);
    match shell {
        Shell::Fish => fish_shells(fish_values_after_a_flag(script)),
        Shell::Zsh => zsh_command_or_url(script),
        Shell::Bash => bash_files_as_operands(script, &["merge", "report"]),
        _ => script,
    }
}

/// The generated zsh script takes the first word for the URL, and looks
/// for a subcommand only in the word after it (`metron URL serve`), so
/// neither `metron se<TAB>` nor any subcommand's flags ever completed.
/// The first word is either, and only a subcommand's name is looked up.
fn zsh_command_or_url(script: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&script);
    let Some(root) = text.find(":url -- ") else {
        return script;
    };
    let (head, rest) = text.split_at(text[..root].rfind('\n').map_or(0, |i| i + 1));
    // The root's positional operands (the URL, the script's arguments)
    // and its subcommand spec, up to where its state is read.
    let Some(end) = rest.find("&& ret=0") else {
        return script;
    };
    let (specs, tail) = rest.split_at(end);
    let kept: String = specs
        .lines()
        .filter(|l| !l.starts_with("':url -- ") && !l.starts_with("'::script_args -- "))
        .map(|l| {
            if l == "\":: :_metron_commands\" \\" {
                "\": : _alternative 'commands\\:command\\:_metron_commands' 'urls\\:URL\\:_urls'\" \\\n"
                    .to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    // The subcommand was the third operand (after URL and arguments); it
    // is now the first, in the root's state block only.
    let block_end = tail.find("\n}\n").unwrap_or(tail.len());
    let (block, after) = tail.split_at(block_end);
    let block = block.replace("$line[3]", "$line[1]");
    format!("{head}{kept}{block}{after}").into_bytes()
}

/// The generated bash script offers only flags for a subcommand's first
/// word, and never files after it: `metron merge <TAB>` inserted `-`.
/// For `commands`, whose operands are files, it offers files (flags
/// still after `-`).
fn bash_files_as_operands(script: Vec<u8>, commands: &[&str]) -> Vec<u8> {
    let mut text = String::from_utf8_lossy(&script).into_owned();
    for name in commands {
        let start_at = format!("        metron__subcmd__{name})\n");
        let Some(start) = text.find(&start_at) else {
            continue;
        };
        let end = text[start..]
            .find("\n            ;;\n")
            .map_or(text.len(), |i| start + i);
        let block = text[start..end]
            .replacen(
                "if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then",
                "if [[ ${cur} == -* ]] ; then",
                1,
            )
            .replacen(
                "            esac\n            COMPREPLY=( $(compgen -W \"${opts}\" -- \"${cur}\") )\n",
                "            esac\n            COMPREPLY=( $(compgen -f -- \"${cur}\") )\n            compopt -o filenames 2>/dev/null\n",
                1,
            );
        text.replace_range(start..end, &block);
    }
    text.into_bytes()
}

/// The generated fish script completes no operand: `metron completions
/// <TAB>` offered file names. It offers the shells.
fn fish_shells(script: Vec<u8>) -> Vec<u8> {
    let mut text = String::from_utf8_lossy(&script).into_owned();
    let names: Vec<&str> = SHELLS.iter().map(|(_, name, _)| *name).collect();
    text.push_str(&format!(
        "complete -c metron -n \"__fish_metron_using_subcommand completions\" -f -a \"{}\"\n",
        names.join(" ")
    ));
    text.into_bytes()
}

/// The generated fish script decides whether the line is still at the top
/// command by parsing it with `argparse`, which fails while a flag waits
/// for its value (`metron --arrival <TAB>`): the values of the top
/// command's flags were then never offered, only file names. A line that
/// does not parse yet is taken as still at the top command: argparse stops
/// at a subcommand's name (`-s`), so a subcommand's flags are unaffected.
fn fish_values_after_a_flag(script: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&script);
    text.replacen(
        "function __fish_metron_needs_command\n    # Figure out if the current invocation already has a command.\n    set -l cmd (commandline -opc)\n    set -e cmd[1]\n    argparse -s (__fish_metron_global_optspecs) -- $cmd 2>/dev/null\n    or return\n",
        "function __fish_metron_needs_command\n    # Figure out if the current invocation already has a command.\n    set -l cmd (commandline -opc)\n    set -e cmd[1]\n    argparse -s (__fish_metron_global_optspecs) -- $cmd 2>/dev/null\n    or return 0\n",
        1,
    )
    .into_bytes()
}

/// `metron completions SHELL`: the script on `out`.
pub fn print_completions(args: &CompletionsArgs, out: &mut dyn Write) -> io::Result<()> {
    out.write_all(&completions(args.shell))?;
    out.flush()
}

/// The examples of metron(1), as the README gives them.
const EXAMPLES: &str = "\
metron -t2 -c100 -d30s -R2000 -L http://127.0.0.1:8080/index.html   # rate mode, wrk2 style
metron -t2 -c100 -d30s http://127.0.0.1:8080/                       # throughput mode, wrk style
metron -t4 -c1k -d2m -R10k -H \"Authorization: Bearer $TOKEN\" https://example.test/api
metron --http2 -t2 -c4 -R20k -d30s -L https://example.test/          # h2 by ALPN, rate mode
metron -t2 -c50 -R2k -d1m --slo \"p99<10ms,p99.9<50ms,errors<0.1%,rate>=99%\" http://127.0.0.1:8080/
metron sweep --slo \"p99<50ms,errors<0.1%\" --from 500 --to 50k -t2 -c200 http://127.0.0.1:8080/
metron merge shard-0.json shard-1.json shard-2.json --json merged.json --html merged.html
metron serve --capacity 4k      # at most 4000 requests/s; past that, latency grows
metron demo -d 20s -R 5k --stall-for 3s";

/// metron(1)'s exit statuses, as the README lists them.
const EXIT_STATUS: [(&str, &str); 8] = [
    (
        "0",
        "The run completed (even if the server answered with errors); with --slo, the objective was met; a sweep found a rate that met it.",
    ),
    (
        "1",
        "A command line that parses but asks for what cannot be done, a host the pre-flight could not reach, a report that could not be written, or a script error.",
    ),
    (
        "2",
        "A command line that does not parse: an unknown flag, a value of the wrong kind, flags that exclude each other, a malformed --slo.",
    ),
    (
        "3",
        "The --slo objective was not met (a sweep: not even --from met it).",
    ),
    (
        "4",
        "The verdict is inconclusive: the generator, not the server, was the limit, or the objective measured nothing.",
    ),
    (
        "5",
        "No request completed, and errors were counted (connect, read, write, timeout).",
    ),
    ("130", "Ctrl-C (SIGINT), after the report for what ran."),
    ("143", "SIGTERM, after the report for what ran."),
];

/// Every man page: its file name and its text.
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    let subs = subcommands();
    let names: Vec<String> = subs.iter().map(|(n, _)| format!("metron-{n}")).collect();
    let mut pages = vec![page(
        "metron",
        BenchArgs::command(),
        true,
        &names.iter().map(String::as_str).collect::<Vec<_>>(),
    )];
    for (name, (_, cmd)) in names.iter().zip(subs) {
        pages.push(page(name, cmd, false, &["metron"]));
    }
    pages
}

/// One page, `name`(1), of `cmd`: clap's sections (name, synopsis,
/// description, options), the help's closing notes, and for the main
/// page (`main`) the examples and exit statuses; then the other pages
/// (`see_also`) and the version.
fn page(name: &str, cmd: clap::Command, main: bool, see_also: &[&str]) -> (String, Vec<u8>) {
    let notes = cmd.get_after_help().map(|h| h.to_string());
    // The notes and the version in sections of their own, below.
    let cmd = cmd
        .display_name(name.to_string())
        .after_help(None::<&str>)
        .version(None::<&str>);
    let man = Man::new(cmd)
        .title(name.to_uppercase())
        .date(cli::COMMIT_DATE)
        .source(format!("metron {}", env!("CARGO_PKG_VERSION")))
        .manual("User Commands");
    let mut roff = Roff::new();
    if let Some(notes) = notes {
        preformatted(&mut roff, "NOTES", &notes);
    }
    if main {
        preformatted(&mut roff, "EXAMPLES", EXAMPLES);
        roff.control("SH", ["EXIT STATUS"]);
        for (status, meaning) in EXIT_STATUS {
            roff.control("TP", [])
                .text([roman(status)])
                .text([roman(meaning)]);
        }
    }
    roff.control("SH", ["SEE ALSO"]);
    let refs: Vec<String> = see_also.iter().map(|p| format!("{p}(1)")).collect();
    roff.text([roman(refs.join(", "))]);
    preformatted(&mut roff, "VERSION", cli::VERSION);
    let mut text = Vec::new();
    // Into memory, which cannot fail.
    let _ = man.render(&mut text);
    text.extend_from_slice(roff.to_roff().as_bytes());
    (format!("{name}.1"), text)
}

/// A section whose lines stay as written (no filling).
fn preformatted(roff: &mut Roff, heading: &str, text: &str) {
    roff.control("SH", [heading]).control("nf", []);
    for line in text.lines() {
        roff.text([roman(line)]);
    }
    roff.control("fi", []);
}

/// `metron man DIR`: every page into `dir`, made if missing; each path
/// written is named on `out`.
pub fn write_man_pages(args: &ManArgs, out: &mut dyn Write) -> io::Result<()> {
    let dir = &args.dir;
    std::fs::create_dir_all(dir).map_err(|e| about(dir, "cannot make the directory", e))?;
    for (file, text) in man_pages() {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|e| about(&path, "cannot write", e))?;
        writeln!(out, "{}", path.display())?;
    }
    Ok(())
}

/// `e`, naming what was being done to `path`, its kind kept.
fn about(path: &Path, doing: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{doing} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree the completions are written from has every subcommand
    /// that [`crate::parse`] reads, each under the word it is read by.
    #[test]
    fn the_tree_holds_every_subcommand_parse_reads() {
        let tree = command_tree();
        for (name, _) in subcommands() {
            assert!(tree.find_subcommand(name).is_some(), "{name}");
            let e = crate::parse(["metron", name, "--version"]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::DisplayVersion, "{name}");
        }
        // `--help` is, `help` is no command.
        assert!(tree.find_subcommand("help").is_none());
        // The hidden one is neither completed nor given a page.
        assert!(tree.find_subcommand("man").is_none());
        assert!(man_pages().iter().all(|(file, _)| file != "metron-man.1"));
    }

    /// zsh: the first word is a subcommand or the URL, and the state
    /// block finds the subcommand there (generated, it looked for it
    /// after a URL and the script's arguments).
    #[test]
    fn zsh_looks_for_the_subcommand_in_the_first_word() {
        let script = String::from_utf8(completions(Shell::Zsh)).unwrap();
        let root = &script[..script.find("(serve)").unwrap()];
        assert!(root.contains("_alternative 'commands\\:command\\:_metron_commands' 'urls"));
        assert!(!root.contains("':url -- "), "{root}");
        assert!(!script.contains("$line[3]"));
        assert!(root.contains("case $line[1] in"));
        // A subcommand keeps its own operands.
        assert!(script.contains("':url -- "));
    }
}
