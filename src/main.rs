//! The `counterhal` command: stat, list, encode, info, check.

mod cli;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(error) => return usage_error(error),
    };
    match cli::run(args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("counterhal: {}", error.error);
            if let Some(usage) = error.usage {
                eprintln!("usage: {usage}");
            }
            ExitCode::from(error.exit_code)
        }
    }
}

/// Prints clap's message, adding the subcommand's usage line when clap did not, and ends with
/// its status (0 for --help and --version, 2 for bad arguments).
fn usage_error(error: clap::Error) -> ExitCode {
    let code = error.exit_code();
    if code == 0 {
        // --help and --version: clap prints them to standard output.
        let _ = error.print();
        return ExitCode::SUCCESS;
    }
    let text = error.render().to_string();
    eprint!("{text}");
    if !text.contains("Usage:") {
        let mut command = cli::Cli::command();
        command.build();
        let sub = std::env::args().nth(1).unwrap_or_default();
        let usage = match command.find_subcommand_mut(&sub) {
            Some(subcommand) => subcommand.render_usage(),
            None => command.render_usage(),
        };
        eprintln!("{usage}");
    }
    ExitCode::from(u8::try_from(code).unwrap_or(2))
}
