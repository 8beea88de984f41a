//! The `counterhal` command: stat, list, encode, info, check, serve.
#![deny(unsafe_code)]

mod check;
mod completions;
mod encode;
mod error;
mod format;
mod info;
mod list;
mod models;
mod options;
mod output;
mod reference;
mod report;
mod script;
mod serve;
mod stat;
#[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
mod sys;
mod version;

use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::error::CliError;

const EXIT_CODES: &str = "\
Exit status:
  stat     the measured command's own status (128+N when killed by signal N;
           127 when it was not found, 126 when it could not be executed);
           1 when counting failed; 2 for bad arguments
  list, info, check
           0 on success (check: 1 when a case failed, or when no case could run
           at all); 2 for bad arguments
  encode   0 when every event encoded; 2 on any error (message on stderr)
  serve    runs until killed; 1 when no event opens or the address cannot be
           listened on; 2 for bad arguments
  script   0 when the recording was read whole; 1 when the output cannot be
           written; 2 for a recording that cannot be read or is not one
  completions, version
           0; 2 for a shell it does not know, or bad arguments";

/// Hardware performance counters on Linux (perf_event_open), OpenBSD (/dev/pctr), FreeBSD
/// (hwpmc) and raw x86 MSRs, with one event database and one conformance suite.
#[derive(Parser, Debug)]
#[command(name = "counterhal", version, after_help = EXIT_CODES, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug)]
enum Command {
    Stat(Box<stat::StatArgs>),
    List(list::ListArgs),
    Encode(encode::EncodeArgs),
    Info(info::InfoArgs),
    Check(check::CheckArgs),
    Serve(Box<serve::ServeCommand>),
    Completions(completions::CompletionsArgs),
    Version(version::VersionArgs),
    Script(script::ScriptArgs),
}

const STAT: &str = "Run a command (or attach) and count events, like `perf stat`";
const LIST: &str = "List the events available here: generalized, presets, native, backend-specific";
const ENCODE: &str =
    "Print how each event is encoded for a backend (perf attr, pctr function, EVTSEL)";
const INFO: &str =
    "Print this machine's OS, CPU and backends, with the reason each unusable one is so";
const CHECK: &str = "Run the conformance suite on this machine's backends and write a report";
const SERVE: &str = "Serve every CPU's and cgroup's counts to Prometheus (/metrics), with their times enabled and running";
const COMPLETIONS: &str =
    "Print the completion script of a shell (bash, zsh, fish, elvish, powershell)";
const VERSION: &str =
    "Print the version and, with --build-options, what this build can do, as `perf version`";

/// How a subcommand's arguments are added to its command.
type AddArguments = fn(clap::Command) -> clap::Command;

/// The subcommands: name, one-line help, and how its arguments are added (its one-line help
/// set again after them, over the arguments struct's own). Each subcommand's arguments are
/// built only when it is the one run (or its help is asked for): building every
/// subcommand's arguments for each run cost `stat` a tenth of its start-up.
const SCRIPT: &str = "Print a recording's stat records as `perf script` prints them";

const SUBCOMMANDS: [(&str, &str, AddArguments); 9] = [
    ("stat", STAT, |c| {
        stat::arguments::described::describe(c)
            .about(STAT)
            .long_about(None)
            .after_help(stat::HELP)
    }),
    ("list", LIST, |c| {
        list::ListArgs::augment_args(c).about(LIST).long_about(None)
    }),
    ("encode", ENCODE, |c| {
        encode::EncodeArgs::augment_args(c)
            .about(ENCODE)
            .long_about(None)
    }),
    ("info", INFO, |c| {
        info::InfoArgs::augment_args(c).about(INFO).long_about(None)
    }),
    ("check", CHECK, |c| {
        check::CheckArgs::augment_args(c)
            .about(CHECK)
            .long_about(None)
    }),
    ("serve", SERVE, |c| {
        serve::ServeCommand::augment_args(c)
            .about(SERVE)
            .long_about(None)
            .after_help(serve::HELP)
    }),
    ("completions", COMPLETIONS, |c| {
        completions::CompletionsArgs::augment_args(c)
            .about(COMPLETIONS)
            .long_about(None)
    }),
    ("version", VERSION, |c| {
        version::VersionArgs::augment_args(c)
            .about(VERSION)
            .long_about(None)
    }),
    ("script", SCRIPT, |c| {
        script::ScriptArgs::augment_args(c)
            .about(SCRIPT)
            .long_about(None)
    }),
];

impl Subcommand for Command {
    fn augment_subcommands(command: clap::Command) -> clap::Command {
        SUBCOMMANDS
            .iter()
            .fold(command, |command, &(name, about, arguments)| {
                command.subcommand(clap::Command::new(name).about(about).defer(arguments))
            })
    }

    fn augment_subcommands_for_update(command: clap::Command) -> clap::Command {
        Command::augment_subcommands(command)
    }

    fn has_subcommand(name: &str) -> bool {
        SUBCOMMANDS.iter().any(|(known, _, _)| *known == name)
    }
}

impl FromArgMatches for Command {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Command::from_arg_matches_mut(&mut matches.clone())
    }

    fn from_arg_matches_mut(matches: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, mut sub)) = matches.remove_subcommand() else {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::MissingSubcommand,
                "a subcommand is required\n",
            ));
        };
        let sub = &mut sub;
        Ok(match name.as_str() {
            "stat" => {
                // clap describes stat's options (and answers `stat --help`); `parse` hands the
                // words to stat's own parser, the one that reads them.
                return Err(clap::Error::raw(
                    clap::error::ErrorKind::InvalidSubcommand,
                    "stat's options are read by stat's parser\n",
                ));
            }
            "list" => Command::List(list::ListArgs::from_arg_matches_mut(sub)?),
            "encode" => Command::Encode(encode::EncodeArgs::from_arg_matches_mut(sub)?),
            "info" => Command::Info(info::InfoArgs::from_arg_matches_mut(sub)?),
            "check" => Command::Check(check::CheckArgs::from_arg_matches_mut(sub)?),
            "serve" => Command::Serve(Box::new(serve::ServeCommand::from_arg_matches_mut(sub)?)),
            "completions" => {
                Command::Completions(completions::CompletionsArgs::from_arg_matches_mut(sub)?)
            }
            "version" => Command::Version(version::VersionArgs::from_arg_matches_mut(sub)?),
            "script" => Command::Script(script::ScriptArgs::from_arg_matches_mut(sub)?),
            other => {
                return Err(clap::Error::raw(
                    clap::error::ErrorKind::InvalidSubcommand,
                    format!("unknown subcommand `{other}`\n"),
                ));
            }
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Command::from_arg_matches(matches)?;
        Ok(())
    }
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Stat(args) => stat::run(*args),
        Command::List(args) => list::run(args),
        Command::Encode(args) => encode::run(args),
        Command::Info(args) => info::run(args),
        Command::Check(args) => check::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::Completions(args) => completions::run(args),
        Command::Version(args) => version::run(args),
        Command::Script(args) => script::run(args),
    }
}

/// Why a command line was not read: clap's error (or its help), or stat's parser's.
#[derive(Debug)]
enum Unread {
    Clap(clap::Error),
    Stat(CliError),
}

/// The command line: `stat`'s by its own parser ([`stat::arguments::read`]), any other by
/// clap.
fn parse(argv: Vec<std::ffi::OsString>) -> Result<Cli, Unread> {
    if argv.get(1).is_none_or(|word| word != "stat") {
        return Cli::try_parse_from(argv).map_err(Unread::Clap);
    }
    match stat::arguments::read(&argv) {
        Ok(stat::arguments::Parsed::Args(stat)) => Ok(Cli {
            command: Command::Stat(stat),
        }),
        // Help is clap's to write, from its description of stat's options.
        Ok(stat::arguments::Parsed::Help(flag)) => Err(Unread::Clap(
            match Cli::try_parse_from(["counterhal", "stat", flag]) {
                Err(help) => help,
                Ok(_) => unreachable!("clap answers {flag} with help"),
            },
        )),
        Err(error) => Err(Unread::Stat(error)),
    }
}

fn main() -> ExitCode {
    // The image's file capabilities (permitted, not effective) count from here on; a refusal
    // leaves the sets as they were, and an open they would have allowed says why it failed.
    #[cfg(target_os = "linux")]
    let _ = sys::raise_permitted_capabilities();
    let args = match parse(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(Unread::Clap(error)) => return usage_error(error),
        Err(Unread::Stat(error)) => return report(error),
    };
    match run(args) {
        Ok(code) => code,
        Err(error) => report(error),
    }
}

/// Prints a failure, with the usage line where the input was bad, and ends with its status.
fn report(error: CliError) -> ExitCode {
    let mut text = format!("counterhal: {}\n", error.error);
    if let Some(usage) = error.usage {
        text.push_str(&format!("usage: {usage}\n"));
    }
    // Where standard error cannot be written either, the exit status still says it.
    output::emit_to_stderr(&text);
    ExitCode::from(error.exit_code)
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
