//! The commit `metron --version` names: `git rev-parse --short HEAD` when
//! the source is a git checkout and git is installed, "unknown" otherwise
//! (a source archive, a machine without git), and that commit's date.
//! Never fails the build.

use std::path::Path;
use std::process::Command;

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let commit = git(&dir, &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=METRON_COMMIT={commit}");
    // The man pages' date: the commit's, so that two builds of one commit
    // write the same pages.
    let date =
        git(&dir, &["log", "-1", "--format=%cs", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=METRON_COMMIT_DATE={date}");
    // Run again when HEAD moves: a commit, a checkout, a reset. Each of
    // these paths is asked of git, which knows where a worktree keeps them.
    for file in ["HEAD", "logs/HEAD"] {
        if let Some(path) = git(&dir, &["rev-parse", "--git-path", file]) {
            let path = Path::new(&dir).join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// One line of git's output, or `None` when git is missing or fails.
fn git(dir: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let line = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}
