//! The arguments of `counterhal stat`: the command line as clap parses it, and the checks clap
//! cannot make (a command to run, a field separator, event names).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use counterhal::{Error, Registration};

use crate::error::CliError;
use crate::options::{DatabaseArgs, parse_backend};

/// Extra help for `counterhal stat`.
pub const HELP: &str = "\
Examples:
  counterhal stat -- ls
  counterhal stat -e page-faults,context-switches -e task-clock -- true
  counterhal stat -e syscalls:sys_enter_getpid -x, -- ./bench
  counterhal stat -a -e cpu-clock -- sleep 1
Events not supported here are printed as <not supported>, with the reason below the table.";

/// The usage line printed under an error in the arguments.
pub const USAGE: &str = "counterhal stat [-e EV[,EV...]]... [--backend B] [--cpu-model MODEL] \
[--events FILE] [-p PID | -a | -C CPU] [-r N] [-x SEP | --json] -- CMD [ARGS]";

/// The events counted when `-e` is not given: perf stat's set.
const DEFAULT_EVENTS: [&str; 8] = [
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
    "cycles",
    "instructions",
    "branches",
    "branch-misses",
];

/// Arguments of `counterhal stat`.
#[derive(Args, Debug)]
pub struct StatArgs {
    /// Events to count, comma-separated or repeated (default: perf stat's set); a comma
    /// inside a PMU event's `/.../` or a group's `{...}` separates nothing.
    #[arg(short = 'e', long = "event", value_name = "EV[,EV...]")]
    pub(super) event_names: Vec<String>,
    /// The backend (linux, pctr, msr); default: the first that works here.
    #[arg(long, value_parser = parse_backend)]
    pub(super) backend: Option<&'static Registration>,
    #[command(flatten)]
    pub(super) database: DatabaseArgs,
    /// Count an existing process (and not its future children) while CMD runs.
    #[arg(short = 'p', long = "pid", conflicts_with_all = ["all_cpus", "cpu_list"])]
    pub(super) pid: Option<u32>,
    /// Count every CPU (system wide) while CMD runs.
    #[arg(short = 'a', long = "all-cpus", conflicts_with = "cpu_list")]
    pub(super) all_cpus: bool,
    /// Count these CPUs (system wide) while CMD runs, e.g. 0 or 0,2-3.
    #[arg(short = 'C', long = "cpu-list", value_name = "CPU")]
    pub(super) cpu_list: Option<String>,
    /// Run the command N times and print the mean (with the spread).
    #[arg(short = 'r', long = "repeat", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(super) repeat: u32,
    /// CSV output with this separator: value,unit,event,time_running,percent_running.
    #[arg(
        short = 'x',
        long = "field-separator",
        value_name = "SEP",
        conflicts_with = "json"
    )]
    pub(super) separator: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    pub(super) json: bool,
    /// Write the results to FILE instead of standard error (where perf writes them too, so
    /// that the command's own output stays clean).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(super) output: Option<PathBuf>,
    /// The command to run, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub(super) command: Vec<OsString>,
}

/// How the results are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format<'a> {
    /// perf's table (the default).
    Table,
    /// One line per event, fields separated by `separator` (`-x`).
    Csv {
        /// What stands between fields.
        separator: &'a str,
    },
    /// One JSON object (`--json`).
    Json,
}

impl StatArgs {
    /// Checks what clap cannot: that there is a command to run, that `-x` names a separator,
    /// that no event name is empty.
    ///
    /// # Errors
    /// Bad input (exit 2) with the usage line.
    pub fn check(&self) -> Result<(), CliError> {
        if self.command.is_empty() {
            return Err(CliError::usage(
                Error::invalid_input("no command to measure").with_hint(
                    "give the command after `--`, e.g. `counterhal stat -- ls`; with -p or -a, \
                     `-- sleep 1` bounds the measurement",
                ),
                USAGE,
            ));
        }
        if self.separator.as_deref() == Some("") {
            return Err(CliError::usage(
                Error::invalid_input("an empty field separator for -x")
                    .with_hint("give one, e.g. -x, or -x ';'"),
                USAGE,
            ));
        }
        if self.event_names().iter().any(String::is_empty) {
            return Err(CliError::usage(
                Error::invalid_input("an empty event name in -e")
                    .with_hint("name events separated by commas, e.g. -e page-faults,task-clock"),
                USAGE,
            ));
        }
        Ok(())
    }

    /// The events to count: the names given with `-e`, split at their commas and trimmed, or
    /// perf stat's default set.
    pub fn event_names(&self) -> Vec<String> {
        if self.event_names.is_empty() {
            DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect()
        } else {
            self.event_names
                .iter()
                .flat_map(|list| split_event_list(list))
                .map(|e| e.trim().to_string())
                .collect()
        }
    }

    /// How the results are written: `--json`, `-x SEP` or the table.
    pub fn format(&self) -> Format<'_> {
        match (&self.separator, self.json) {
            (_, true) => Format::Json,
            (Some(separator), false) => Format::Csv { separator },
            (None, false) => Format::Table,
        }
    }

    /// The command's words as text (invalid UTF-8 replaced), for the reader.
    pub fn command_words(&self) -> Vec<String> {
        self.command
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect()
    }
}

/// The events of one `-e` list: split at commas, but not inside a PMU event's `/.../` (whose
/// terms are comma-separated: `cpu/event=0x3c,umask=0x1/`) or a group's `{...}`.
pub fn split_event_list(list: &str) -> Vec<&str> {
    let mut events = Vec::new();
    let mut start = 0;
    let mut in_pmu_terms = false;
    let mut group_depth = 0u32;
    for (at, c) in list.char_indices() {
        match c {
            '/' => in_pmu_terms = !in_pmu_terms,
            '{' if !in_pmu_terms => group_depth += 1,
            '}' if !in_pmu_terms => group_depth = group_depth.saturating_sub(1),
            ',' if !in_pmu_terms && group_depth == 0 => {
                events.push(&list[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    events.push(&list[start..]);
    events
}

/// Parses `counterhal stat` arguments (without the subcommand's name), for the stat rooms'
/// tests.
#[cfg(test)]
pub fn parse(words: &[&str]) -> Result<StatArgs, clap::Error> {
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        args: StatArgs,
    }
    let words = std::iter::once("stat").chain(words.iter().copied());
    Command::try_parse_from(words).map(|command| command.args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> StatArgs {
        parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"))
    }

    fn check_error(words: &[&str]) -> String {
        let error = args(words).check().expect_err("a bad argument");
        assert_eq!(error.exit_code, 2, "{words:?}");
        assert_eq!(error.usage, Some(USAGE), "{words:?}");
        error.error.to_string()
    }

    #[test]
    fn a_command_is_required() {
        assert!(check_error(&["-e", "page-faults"]).contains("no command to measure"));
        assert!(args(&["--", "true"]).check().is_ok());
    }

    #[test]
    fn empty_separators_and_event_names_are_refused() {
        assert!(check_error(&["-x", "", "--", "true"]).contains("field separator"));
        for events in [",page-faults", "page-faults,", " "] {
            let message = check_error(&["-e", events, "--", "true"]);
            assert!(message.contains("empty event name"), "{events}: {message}");
        }
    }

    #[test]
    fn event_names_are_trimmed_and_default_to_perfs_set() {
        let given = args(&[
            "-e",
            "page-faults, task-clock",
            "-e",
            "cycles",
            "--",
            "true",
        ]);
        assert_eq!(given.event_names(), ["page-faults", "task-clock", "cycles"]);
        let default = args(&["--", "true"]).event_names();
        assert_eq!(default.len(), DEFAULT_EVENTS.len());
        assert_eq!(default[0], "task-clock");
    }

    #[test]
    fn commas_inside_pmu_terms_and_groups_separate_nothing() {
        let given = args(&[
            "-e",
            "cpu/event=0x3c,umask=0x1/u,page-faults",
            "-e",
            "{cycles,instructions}:u,msr/tsc/",
            "--",
            "true",
        ]);
        assert_eq!(
            given.event_names(),
            [
                "cpu/event=0x3c,umask=0x1/u",
                "page-faults",
                "{cycles,instructions}:u",
                "msr/tsc/"
            ]
        );
        assert_eq!(split_event_list("a,,b"), ["a", "", "b"]);
        assert_eq!(split_event_list("cpu/a=1,b=2"), ["cpu/a=1,b=2"]);
    }

    #[test]
    fn the_format_follows_the_options() {
        assert_eq!(args(&["--", "true"]).format(), Format::Table);
        assert_eq!(
            args(&["-x", ";", "--", "true"]).format(),
            Format::Csv { separator: ";" }
        );
        assert_eq!(args(&["--json", "--", "true"]).format(), Format::Json);
        assert!(parse(&["--json", "-x,", "--", "true"]).is_err());
    }

    #[test]
    fn clap_refuses_what_cannot_go_together() {
        assert!(parse(&["-r", "0", "--", "true"]).is_err());
        assert!(parse(&["-p", "1", "-a", "--", "true"]).is_err());
        assert!(parse(&["-a", "-C", "0", "--", "true"]).is_err());
        assert!(parse(&["--backend", "nosuch", "--", "true"]).is_err());
        let ok = args(&["-r", "3", "-C", "0,2-3", "--", "sh", "-c", "exit 3"]);
        assert_eq!(ok.repeat, 3);
        assert_eq!(ok.cpu_list.as_deref(), Some("0,2-3"));
        assert_eq!(ok.command_words(), ["sh", "-c", "exit 3"]);
    }
}
