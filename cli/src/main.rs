//! The `counterhal` command: stat, list, encode, info, check.
#![deny(unsafe_code)]

mod check;
mod encode;
mod error;
mod format;
mod info;
mod list;
mod models;
mod options;
mod output;
mod report;
mod stat;
#[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
mod sys;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::error::CliError;

const EXIT_CODES: &str = "\
Exit status:
  stat     the measured command's own status (128+N when killed by signal N;
           127 when it was not found, 126 when it could not be executed);
           1 when counting failed; 2 for bad arguments
  list, info, check
           0 on success (check: 1 when a case failed, or when no case could run
           at all); 2 for bad arguments
  encode   0 when every event encoded; 2 on any error (message on stderr)";

/// Hardware performance counters on Linux (perf_event_open), OpenBSD (/dev/pctr) and raw x86
/// MSRs, with one event database and one conformance suite.
#[derive(Parser, Debug)]
#[command(name = "counterhal", version, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a command (or attach) and count events, like `perf stat`.
    #[command(after_help = stat::HELP)]
    Stat(Box<stat::StatArgs>),
    /// List the events available here: generalized, presets, native, backend-specific.
    List(list::ListArgs),
    /// Print how each event is encoded for a backend (perf attr, pctr function, EVTSEL).
    Encode(encode::EncodeArgs),
    /// Print this machine's OS, CPU and backends, with the reason each unusable one is so.
    Info(info::InfoArgs),
    /// Run the conformance suite on this machine's backends and write a report.
    Check(check::CheckArgs),
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Stat(args) => stat::run(*args),
        Command::List(args) => list::run(args),
        Command::Encode(args) => encode::run(args),
        Command::Info(args) => info::run(args),
        Command::Check(args) => check::run(args),
    }
}

fn main() -> ExitCode {
    let matches = match Cli::command().try_get_matches() {
        Ok(matches) => matches,
        Err(error) => return usage_error(error),
    };
    let mut args = match Cli::from_arg_matches(&matches) {
        Ok(args) => args,
        Err(error) => return usage_error(error),
    };
    if let (Command::Stat(stat), Some(("stat", sub))) = (&mut args.command, matches.subcommand()) {
        stat.note_positions(sub);
    }
    match run(args) {
        Ok(code) => code,
        Err(error) => {
            let mut text = format!("counterhal: {}\n", error.error);
            if let Some(usage) = error.usage {
                text.push_str(&format!("usage: {usage}\n"));
            }
            // Where standard error cannot be written either, the exit status still says it.
            output::emit_to_stderr(&text);
            ExitCode::from(error.exit_code)
        }
    }
}

/// Prints clap's message, adding the subcommand's usage line when clap did not, and ends with
/// its status (0 for --help and --version, 2 for bad arguments).
fn usage_error(error: clap::Error) -> ExitCode {
    let code = error.exit_code();
    if code == 0 {
        // --help and --version: clap prints them to standard output, which may be full.
        return match error.print() {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => ExitCode::FAILURE,
            _ => ExitCode::SUCCESS,
        };
    }
    let mut text = error.render().to_string();
    if !text.contains("Usage:") {
        let mut command = Cli::command();
        command.build();
        let sub = std::env::args().nth(1).unwrap_or_default();
        let usage = match command.find_subcommand_mut(&sub) {
            Some(subcommand) => subcommand.render_usage(),
            None => command.render_usage(),
        };
        text.push_str(&format!("{usage}\n"));
    }
    output::emit_to_stderr(&text);
    ExitCode::from(u8::try_from(code).unwrap_or(2))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
