//! `counterhal completions SHELL`: the shell's completion script for the command, written from
//! the same clap definitions as its parser (clap_complete), so it offers every subcommand and
//! option the command takes.

use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::Cli;
use crate::error::CliError;

/// Arguments of `counterhal completions`.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell. Load it with, for bash,
    /// `source <(counterhal completions bash)` (or write it to
    /// /usr/share/bash-completion/completions/counterhal); for zsh, write it as `_counterhal`
    /// in a directory of `$fpath`; for fish, to ~/.config/fish/completions/counterhal.fish
    #[arg(value_name = "SHELL")]
    shell: Shell,
}

/// Writes the completion script for the shell asked for on standard output.
///
/// # Errors
/// Standard output cannot be written (exit 1).
pub fn run(args: CompletionsArgs) -> Result<ExitCode, CliError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "counterhal", &mut script);
    crate::output::emit(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}
