//! Shell completions of `authtime` and `authtimed` for bash, zsh and fish,
//! from the clap definitions (clap_complete's static scripts).
//!
//! File names follow where packages install them: `NAME.bash` (installed as
//! `/usr/share/bash-completion/completions/NAME`), `_NAME` (zsh's
//! `vendor-completions`), `NAME.fish` (fish's `vendor_completions.d`).

use clap::{Command, CommandFactory};
use clap_complete::Shell;

use crate::GeneratedFile;

/// The completion files of both commands.
#[must_use]
pub fn all_completions() -> Vec<GeneratedFile> {
    let mut files = completions_of("authtime", authtime::cli::Cli::command());
    files.extend(completions_of(
        "authtimed",
        authtimed::args::Args::command(),
    ));
    files
}

fn completions_of(name: &str, cmd: Command) -> Vec<GeneratedFile> {
    [
        (Shell::Bash, format!("{name}.bash")),
        (Shell::Zsh, format!("_{name}")),
        (Shell::Fish, format!("{name}.fish")),
    ]
    .into_iter()
    .map(|(shell, file)| {
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut cmd.clone(), name, &mut script);
        GeneratedFile::new("completions", file, script)
    })
    .collect()
}
