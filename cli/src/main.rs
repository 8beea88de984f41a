//! The `counterhal` command: stat, list, encode, info, check, serve, script, record.
#![deny(unsafe_code)]

mod args;
mod check;
mod completions;
mod encode;
mod error;
mod format;
mod info;
mod jobs;
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

use std::ffi::OsString;

use clap::CommandFactory;

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
  jobs     0 when a record was printed; 1 when none is selected or the output
           cannot be written; 2 when the records cannot be read
  completions, version
           0; 2 for a shell it does not know, or bad arguments";

/// What `counterhal --help` says of the command.
const ABOUT: &str = "Hardware performance counters on Linux (perf_event_open), OpenBSD (/dev/pctr), \
FreeBSD (hwpmc) and raw x86 MSRs, with one event database and one conformance suite";

/// The command line, read by the one parser ([`args`]).
#[derive(Debug)]
pub struct Cli {
    command: Command,
}

/// The subcommand asked for, with its arguments.
#[derive(Debug)]
enum Command {
    Stat(Box<stat::StatArgs>),
    List(Box<list::ListArgs>),
    Encode(Box<encode::EncodeArgs>),
    Info(Box<info::InfoArgs>),
    Check(Box<check::CheckArgs>),
    Serve(Box<serve::ServeCommand>),
    Completions(Box<completions::CompletionsArgs>),
    Version(Box<version::VersionArgs>),
    Script(Box<script::ScriptArgs>),
    Jobs(Box<jobs::JobsArgs>),
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
const SCRIPT: &str = "Print a recording's stat records as `perf script` prints them";
const JOBS: &str =
    "Print the records serve kept of ended jobs, pods and containers as stat prints a run";

/// How a subcommand is described to clap (its table's options and words, its one-line help).
type Describe = fn(clap::Command) -> clap::Command;
/// How a subcommand's words are read (by its table).
type Read = fn(&[OsString]) -> Result<Command, Unread>;

/// A subcommand's words read by its table `T`, into the command `into` makes.
fn read<T: args::Table>(argv: &[OsString], into: fn(Box<T>) -> Command) -> Result<Command, Unread> {
    match args::parse::<T>(argv.iter().skip(2).cloned()) {
        Ok(args::Parsed::Args(parsed)) => Ok(into(parsed)),
        Ok(args::Parsed::Help(flag)) => Err(Unread::Help(T::NAME, flag)),
        Err(error) => Err(Unread::Bad(error)),
    }
}

/// The subcommands: name, one-line help, how it is described (its table's options, its
/// one-line help set again after them) and how its words are read. Each subcommand is
/// described only when its help is asked for (or the reference, the manual pages and the
/// completions are written).
const SUBCOMMANDS: [(&str, &str, Describe, Read); 10] = [
    (
        "stat",
        STAT,
        |c| {
            args::described::describe::<stat::StatArgs>(c)
                .about(STAT)
                .after_help(stat::HELP)
        },
        |argv| match stat::arguments::read(argv) {
            Ok(args::Parsed::Args(stat)) => Ok(Command::Stat(stat)),
            Ok(args::Parsed::Help(flag)) => Err(Unread::Help("stat", flag)),
            Err(error) => Err(Unread::Bad(error)),
        },
    ),
    (
        "list",
        LIST,
        |c| args::described::describe::<list::ListArgs>(c).about(LIST),
        |argv| read(argv, Command::List),
    ),
    (
        "encode",
        ENCODE,
        |c| args::described::describe::<encode::EncodeArgs>(c).about(ENCODE),
        |argv| read(argv, Command::Encode),
    ),
    (
        "info",
        INFO,
        |c| args::described::describe::<info::InfoArgs>(c).about(INFO),
        |argv| read(argv, Command::Info),
    ),
    (
        "check",
        CHECK,
        |c| args::described::describe::<check::CheckArgs>(c).about(CHECK),
        |argv| read(argv, Command::Check),
    ),
    (
        "serve",
        SERVE,
        |c| {
            args::described::describe::<serve::ServeCommand>(c)
                .about(SERVE)
                .after_help(serve::HELP)
        },
        |argv| {
            // Without the exporter, whatever the words: run says there is none.
            if cfg!(not(feature = "serve")) {
                return Ok(Command::Serve(Box::default()));
            }
            read(argv, Command::Serve)
        },
    ),
    (
        "completions",
        COMPLETIONS,
        |c| args::described::describe::<completions::CompletionsArgs>(c).about(COMPLETIONS),
        |argv| read(argv, Command::Completions),
    ),
    (
        "version",
        VERSION,
        |c| args::described::describe::<version::VersionArgs>(c).about(VERSION),
        |argv| read(argv, Command::Version),
    ),
    (
        "script",
        SCRIPT,
        |c| args::described::describe::<script::ScriptArgs>(c).about(SCRIPT),
        |argv| read(argv, Command::Script),
    ),
    (
        "jobs",
        JOBS,
        |c| args::described::describe::<jobs::JobsArgs>(c).about(JOBS),
        |argv| read(argv, Command::Jobs),
    ),
];

/// The command as clap describes it: what `--help`, the reference, the manual pages and the
/// completions are written from. clap reads no word of the command line.
impl clap::CommandFactory for Cli {
    fn command() -> clap::Command {
        let command = clap::Command::new("counterhal")
            .version(env!("CARGO_PKG_VERSION"))
            .about(ABOUT)
            .after_help(EXIT_CODES)
            .max_term_width(100)
            .subcommand_required(true);
        SUBCOMMANDS
            .iter()
            .fold(command, |command, &(name, about, describe, _)| {
                command.subcommand(clap::Command::new(name).about(about).defer(describe))
            })
    }

    fn command_for_update() -> clap::Command {
        Cli::command()
    }
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Stat(args) => stat::run(*args),
        Command::List(args) => list::run(*args),
        Command::Encode(args) => encode::run(*args),
        Command::Info(args) => info::run(*args),
        Command::Check(args) => check::run(*args),
        Command::Serve(args) => serve::run(*args),
        Command::Completions(args) => completions::run(*args, Cli::command()),
        Command::Version(args) => version::run(*args),
        Command::Script(args) => script::run(*args),
        Command::Jobs(args) => jobs::run(*args),
    }
}

/// Why a command line was not read: help asked for (a subcommand's, or the command's), the
/// version, bad words (the parser's error), or no subcommand or an unknown one (clap's
/// message, rendered from its description).
#[derive(Debug)]
enum Unread {
    Help(&'static str, &'static str),
    Printed(String),
    Bad(CliError),
    Clap(clap::Error),
}

/// The command line: the subcommand's words read by its table ([`args`]).
fn parse(argv: Vec<OsString>) -> Result<Cli, Unread> {
    let first = argv.get(1).and_then(|word| word.to_str());
    if let Some(&(_, _, _, read)) = SUBCOMMANDS.iter().find(|(name, ..)| Some(*name) == first) {
        return read(&argv).map(|command| Cli { command });
    }
    // No subcommand, an unknown one, `--help` or `--version`: clap's answer, from its
    // description of the command alone.
    let error = match first {
        Some("-h" | "--help" | "help") => {
            return Err(Unread::Printed(Cli::command().render_help().to_string()));
        }
        Some("-V" | "--version") => {
            return Err(Unread::Printed(Cli::command().render_version()));
        }
        Some(other) => Cli::command().error(
            clap::error::ErrorKind::InvalidSubcommand,
            format!("unrecognized subcommand '{other}'"),
        ),
        None => Cli::command().error(
            clap::error::ErrorKind::MissingSubcommand,
            "a subcommand is required",
        ),
    };
    Err(Unread::Clap(error))
}

fn main() -> ExitCode {
    // The image's file capabilities (permitted, not effective) count from here on; a refusal
    // leaves the sets as they were, and an open they would have allowed says why it failed.
    #[cfg(target_os = "linux")]
    let _ = sys::raise_permitted_capabilities();
    let args = match parse(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(Unread::Help(name, flag)) => return help(name, flag),
        Err(Unread::Printed(text)) => return printed(&text),
        Err(Unread::Clap(error)) => return usage_error(error),
        Err(Unread::Bad(error)) => return report(error),
    };
    match run(args) {
        Ok(code) => code,
        Err(error) => report(error),
    }
}

/// Prints the subcommand `name`'s help as clap writes it from the subcommand's description,
/// on standard output: `--help`'s long form where an argument has more to say than `-h`'s
/// line, as clap chooses.
fn help(name: &str, flag: &str) -> ExitCode {
    let mut command = Cli::command();
    command.build();
    let Some(subcommand) = command.find_subcommand_mut(name) else {
        return ExitCode::FAILURE;
    };
    let long = flag == "--help"
        && (subcommand.get_long_about().is_some()
            || subcommand
                .get_arguments()
                .any(|arg| arg.get_long_help().is_some()));
    let text = match long {
        true => subcommand.render_long_help(),
        false => subcommand.render_help(),
    };
    printed(&text.to_string())
}

/// Prints `text` (help, the version) on standard output: exit 0, or 1 where it cannot be
/// written.
fn printed(text: &str) -> ExitCode {
    match output::emit(text) {
        Ok(()) => ExitCode::SUCCESS,
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

    /// Every subcommand described to clap is one the parser reads, and its name is the
    /// name its table gives in messages.
    #[test]
    fn each_subcommand_is_read_by_its_table() {
        for (name, _, _, read) in super::SUBCOMMANDS {
            let argv = ["counterhal", name, "--help"].map(std::ffi::OsString::from);
            match read(&argv) {
                Err(super::Unread::Help(named, "--help")) => assert_eq!(named, name),
                // Without the exporter, `serve` takes any words.
                Ok(super::Command::Serve(_)) if cfg!(not(feature = "serve")) => {}
                other => panic!("{name} --help: {other:?}"),
            }
        }
    }

    /// Oracle: Cargo's features (this build without `serve`, as `cargo test -p
    /// counterhal-cli --no-default-features` builds it): whatever the arguments, `serve`
    /// answers that there is no exporter, by the feature's name, and exits 1.
    #[cfg(not(feature = "serve"))]
    #[test]
    fn without_its_feature_serve_says_this_build_has_no_exporter() {
        for words in [&["serve"][..], &["serve", "--listen", ":0", "-e", "cycles"]] {
            let argv = std::iter::once("counterhal").chain(words.iter().copied());
            let Ok(super::Cli {
                command: super::Command::Serve(args),
            }) = super::parse(argv.map(std::ffi::OsString::from).collect())
            else {
                panic!("{words:?}: any arguments are taken");
            };
            let failure = super::serve::run(*args).unwrap_err();
            assert_eq!(failure.exit_code, 1, "{words:?}");
            assert_eq!(failure.error.kind(), counterhal::ErrorKind::Unsupported);
            let said = failure.error.to_string();
            assert!(
                said.contains("no exporter") && said.contains("feature"),
                "{said}"
            );
        }
    }
}
