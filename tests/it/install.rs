//! What an installed metron brings besides the binary: completion scripts
//! that a real shell loads, man pages for every command, and the Debian
//! package that holds them.

use std::process::Command;

use crate::common::*;

const SHELLS: [&str; 3] = ["bash", "zsh", "fish"];

/// The pages `metron man DIR` writes, each with a flag of its command.
const PAGES: [(&str, &str); 7] = [
    ("metron.1", "--rate"),
    ("metron-serve.1", "--listen"),
    ("metron-sweep.1", "--from"),
    ("metron-merge.1", "--json"),
    ("metron-report.1", "--csv"),
    ("metron-demo.1", "--stall-for"),
    ("metron-completions.1", "SHELL"),
];

#[test]
fn each_shell_gets_a_script_naming_the_flags_and_their_choices() {
    for shell in SHELLS {
        let o = metron(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        if shell != "fish" {
            assert!(script.contains("--max-connections"), "{shell}");
        }
        // A run's flag, a sweep's (fish names them without their dashes:
        // `-l max-connections`), a choice of --arrival, a subcommand.
        for word in ["max-connections", "step-duration", "poisson", "completions"] {
            assert!(script.contains(word), "{shell}: no {word} in\n{script}");
        }
    }
}

#[test]
fn a_shell_metron_cannot_complete_for_is_one_line_naming_the_choices() {
    let o = metron(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    for shell in SHELLS {
        assert!(err.contains(shell), "{shell} not named: {err}");
    }
    assert!(stdout(&o).is_empty());
    let o = metron(&["completions"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Bash, with the script loaded as bash-completion loads it, completes
/// as a user at a prompt would see: a flag from its start, a value from
/// its choices, a file name where a file is expected.
#[test]
fn bash_completes_a_flag_a_choice_and_a_file() {
    let Ok(v) = Command::new("bash").arg("--version").output() else {
        eprintln!("note: no bash on this machine; the completion check skips");
        return;
    };
    assert!(v.status.success());
    let dir = TempDir::new("bash-completion");
    let script = stdout(&metron(&["completions", "bash"]));
    let script = dir.file("metron.bash", &script);
    dir.file("plan.lua", "");
    // The function the script registers for metron, called as bash calls
    // it: the command, the word being completed, the word before it.
    let complete = |line: &str| -> Vec<String> {
        let program = format!(
            r#"source '{script}'
            spec=$(complete -p metron) || exit 9
            fn=${{spec##*-F }}; fn=${{fn%% *}}
            COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}
            read -ra COMP_WORDS <<< "$COMP_LINE"
            [[ $COMP_LINE == *' ' ]] && COMP_WORDS+=('')
            COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
            prev=metron; (( COMP_CWORD > 0 )) && prev=${{COMP_WORDS[COMP_CWORD-1]}}
            "$fn" metron "${{COMP_WORDS[COMP_CWORD]}}" "$prev" 2>/dev/null
            printf '%s\n' "${{COMPREPLY[@]}}""#
        );
        let o = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &program])
            .current_dir(dir.path())
            .output()
            .expect("bash runs");
        assert!(o.status.success(), "{line}: {}", stderr(&o));
        stdout(&o).lines().map(|l| l.trim().to_string()).collect()
    };
    assert_eq!(complete("metron --max-con"), ["--max-connections"]);
    assert_eq!(complete("metron --arrival p"), ["poisson"]);
    assert_eq!(complete("metron --script pl"), ["plan.lua"]);
    assert!(
        complete("metron sweep --step").contains(&"--step-duration".to_string()),
        "a sweep's flags after sweep"
    );
    // The documents merge and report read are files; their flags after -.
    assert_eq!(complete("metron merge pl"), ["plan.lua"]);
    assert_eq!(complete("metron report pl"), ["plan.lua"]);
    assert!(complete("metron merge --ht").contains(&"--html".to_string()));
    // No `help` command is offered: metron has none (`--help` it has).
    assert!(complete("metron hel").iter().all(String::is_empty));
}

#[test]
fn every_command_has_a_man_page_with_its_flags() {
    let dir = TempDir::new("man");
    let out = dir.path().join("man1");
    let o = metron(&["man", &out.display().to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), PAGES.len(), "{}", stdout(&o));
    for (page, flag) in PAGES {
        let text = std::fs::read_to_string(out.join(page)).unwrap_or_default();
        // roff writes a minus as \-.
        let plain = text.replace("\\-", "-");
        let title = page.trim_end_matches(".1").to_uppercase();
        assert!(plain.contains(&format!(".TH {title} 1")), "{page}:\n{text}");
        for want in [flag, ".SH SYNOPSIS", ".SH OPTIONS", ".SH \"SEE ALSO\""] {
            assert!(plain.contains(want), "{page}: no {want} in\n{text}");
        }
    }
    let main = std::fs::read_to_string(out.join("metron.1")).unwrap();
    let main = main.replace("\\-", "-");
    assert!(main.contains(".SH \"EXIT STATUS\""));
    assert!(main.contains(".SH EXAMPLES"));
    for status in ["0", "1", "2", "3", "4", "5", "130", "143"] {
        assert!(
            main.contains(&format!(".TP\n{status}\n")),
            "exit status {status} missing"
        );
    }
    // The hidden command is not a page, nor in the help.
    assert!(!out.join("metron-man.1").exists());
}

#[test]
fn a_man_directory_that_cannot_be_made_is_one_line() {
    let dir = TempDir::new("man-bad");
    let file = dir.file("plain-file", "");
    let o = metron(&["man", &format!("{file}/man1")]);
    let err = one_line_error(&o);
    assert!(err.contains("cannot make the directory"), "{err}");
}

/// packaging/deb.sh, given the binary this suite built: the package holds
/// the binary, every page and every completion where Debian's shells and
/// man look, and depends on the C library alone.
#[test]
fn the_debian_package_holds_the_binary_pages_and_completions() {
    let missing: Vec<&str> = ["dpkg-deb", "dpkg-shlibdeps", "strip"]
        .into_iter()
        .filter(|tool| {
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .map_or(true, |o| !o.status.success())
        })
        .collect();
    if !missing.is_empty() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI builds the package: apt-get install dpkg-dev (missing {missing:?})"
        );
        eprintln!("note: no {missing:?} (apt-get install dpkg-dev); the package check skips");
        return;
    }
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_metron"));
    let target = bin
        .parent()
        .and_then(|p| p.parent())
        .expect("target/release/metron");
    let dir = TempDir::new("deb");
    let o = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/packaging/deb.sh"))
        .arg("--no-build")
        .env("CARGO_TARGET_DIR", target)
        .current_dir(dir.path())
        .output()
        .expect("deb.sh runs");
    assert!(o.status.success(), "{}", stderr(&o));
    let deb = stdout(&o).trim().to_string();
    assert!(deb.ends_with(".deb") && deb.contains("/metron_"), "{deb}");
    let field = |name: &str| {
        stdout(
            &Command::new("dpkg-deb")
                .args(["-f", &deb, name])
                .output()
                .unwrap(),
        )
    };
    let depends = field("Depends");
    for dep in depends.trim().split(", ") {
        assert!(
            dep.starts_with("libc6 ") || dep.starts_with("libgcc-s1 "),
            "{depends}"
        );
    }
    assert!(field("Version").starts_with(env!("CARGO_PKG_VERSION")));
    let listing = stdout(
        &Command::new("dpkg-deb")
            .args(["-c", &deb])
            .output()
            .unwrap(),
    );
    let mut want = vec![
        "./usr/bin/metron".to_string(),
        "./usr/share/bash-completion/completions/metron".into(),
        "./usr/share/zsh/vendor-completions/_metron".into(),
        "./usr/share/fish/vendor_completions.d/metron.fish".into(),
        "./usr/share/doc/metron/copyright".into(),
        "./usr/share/doc/metron/changelog.Debian.gz".into(),
    ];
    want.extend(
        PAGES
            .iter()
            .map(|(p, _)| format!("./usr/share/man/man1/{p}.gz")),
    );
    for path in want {
        assert!(
            listing.lines().any(|l| l.ends_with(&format!(" {path}"))),
            "{path} not in\n{listing}"
        );
    }
}

/// Fish offers a flag's values when the flag waits for one at the top
/// command (`metron --arrival <TAB>`), not file names.
#[test]
fn fish_offers_the_values_of_a_flag_waiting_for_one() {
    let o = metron(&["completions", "fish"]);
    let script = stdout(&o);
    assert!(
        script.contains("-- $cmd 2>/dev/null\n    or return 0\n"),
        "the top-command check takes a line that does not parse yet as the top command:\n{script}"
    );
    let has_fish = Command::new("fish")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_fish {
        eprintln!("note: no fish on this machine; the script's text was checked");
        return;
    }
    let dir = TempDir::new("fish");
    let file = dir.file("metron.fish", &script);
    let complete = |line: &str| {
        let o = Command::new("fish")
            .args(["--no-config", "-c"])
            .arg(format!("source {file}; complete -C '{line}'"))
            .output()
            .expect("fish runs");
        stdout(&o)
    };
    let values = complete("metron --arrival ");
    assert!(
        values.lines().any(|l| l.starts_with("poisson"))
            && values.lines().any(|l| l.starts_with("constant")),
        "{values}"
    );
    let flags = complete("metron --max-con");
    assert!(flags.contains("--max-connections"), "{flags}");
    let sweep = complete("metron sweep --arrival ");
    assert!(sweep.lines().any(|l| l.starts_with("poisson")), "{sweep}");
}
