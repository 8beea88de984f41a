//! `counterhal completions SHELL`: the shell's completion script for the command, written from
//! the same clap definitions as its parser (clap_complete), so it offers every subcommand and
//! option the command takes.

use std::process::ExitCode;

use clap::ValueEnum;
use clap_complete::Shell;

use crate::args::spec::Spec;
use crate::args::{Table, Words};
use crate::error::CliError;

/// Arguments of `counterhal completions`.
#[derive(Debug, Default)]
pub struct CompletionsArgs {
    /// The shell.
    shell: Option<Shell>,
}

impl Table for CompletionsArgs {
    const NAME: &'static str = "completions";
    const USAGE: &'static str = "counterhal completions bash|zsh|fish|elvish|powershell";
    const OPTIONS: &'static [Spec<CompletionsArgs>] = &[];
    const WORDS: Words = Words::OneOf(
        "SHELL",
        "The shell: bash, zsh, fish, elvish or powershell. Load it with, for bash, `source \
        <(counterhal completions bash)` (or write it to \
        /usr/share/bash-completion/completions/counterhal); for zsh, write it as `_counterhal` \
        in a directory of `$fpath`; for fish, to ~/.config/fish/completions/counterhal.fish",
        &["bash", "elvish", "fish", "powershell", "zsh"],
    );

    fn word(&mut self, word: std::ffi::OsString) -> Result<(), String> {
        let right = "a shell: bash, zsh, fish, elvish or powershell";
        if self.shell.is_some() {
            return Err(format!(
                "one shell is named, not `{}`",
                word.to_string_lossy()
            ));
        }
        let name = word.to_str().ok_or(right)?;
        self.shell =
            Some(Shell::from_str(name, false).map_err(|_| format!("`{name}` is not {right}"))?);
        Ok(())
    }

    fn check(&self, _: &dyn Fn(&str) -> bool) -> Result<(), (String, String)> {
        match self.shell {
            Some(_) => Ok(()),
            None => Err((
                "completions needs the shell".to_string(),
                "e.g. counterhal completions bash".to_string(),
            )),
        }
    }
}

/// Writes the completion script for the shell asked for on standard output, from `command`,
/// clap's description of the whole command (its every subcommand and option).
///
/// # Errors
/// Standard output cannot be written (exit 1).
pub fn run(args: CompletionsArgs, mut command: clap::Command) -> Result<ExitCode, CliError> {
    let mut script = Vec::new();
    let shell = args.shell.unwrap_or(Shell::Bash);
    clap_complete::generate(shell, &mut command, "counterhal", &mut script);
    crate::output::emit(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}
