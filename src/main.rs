//! The `counterhal` command: stat, list, encode, info, check.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
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
