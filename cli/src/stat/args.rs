//! The arguments of `counterhal stat`, and the checks they get before anything runs.

use std::ffi::OsString;

use clap::Args;
use counterhal::{Error, Registration};

use crate::common::{CliError, DatabaseArgs, parse_backend};

/// perf stat's default events.
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

/// The usage line bad arguments print.
pub(super) const USAGE: &str = "counterhal stat [-e EV[,EV...]]... [--backend B] [--cpu MODEL] \
[--events FILE] [-p PID | -a | -C CPU] [-r N] [-x SEP | --json] -- CMD [ARGS]";

/// Arguments of `counterhal stat`.
#[derive(Args, Debug)]
pub struct StatArgs {
    /// Events to count, comma-separated or repeated (default: perf stat's set).
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EV[,EV...]",
        value_delimiter = ','
    )]
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
    pub(super) output: Option<std::path::PathBuf>,
    /// The command to run, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub(super) command: Vec<OsString>,
}

impl StatArgs {
    /// Refuses what cannot work before the command runs: no command, an empty `-x`, an
    /// output file that cannot be written (created now, so a bad path loses nothing).
    ///
    /// # Errors
    /// A usage error (exit 2) saying which.
    pub(super) fn check(&self) -> Result<(), CliError> {
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
        if let Some(path) = &self.output {
            std::fs::File::create(path).map_err(|e| {
                CliError::usage(
                    Error::invalid_input(format!("cannot write {}: {e}", path.display())),
                    USAGE,
                )
            })?;
        }
        Ok(())
    }

    /// The events to count: those given with `-e`, trimmed, or perf stat's defaults.
    ///
    /// # Errors
    /// A usage error for an empty name (`-e a,,b`).
    pub(super) fn events(&self) -> Result<Vec<String>, CliError> {
        let names: Vec<String> = if self.event_names.is_empty() {
            DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect()
        } else {
            self.event_names
                .iter()
                .map(|e| e.trim().to_string())
                .collect()
        };
        if names.iter().any(String::is_empty) {
            return Err(CliError::usage(
                Error::invalid_input("an empty event name in -e")
                    .with_hint("name events separated by commas, e.g. -e page-faults,task-clock"),
                USAGE,
            ));
        }
        Ok(names)
    }

    /// The command, as text.
    pub(super) fn command_words(&self) -> Vec<String> {
        self.command
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect()
    }

    /// What was counted, as the table's header names it: the command, or (with -p, -a, -C)
    /// the process or CPUs while it ran.
    pub(super) fn counted(&self) -> String {
        if let Some(pid) = self.pid {
            format!("process id '{pid}'")
        } else if self.all_cpus {
            "'system wide'".to_string()
        } else if let Some(list) = &self.cpu_list {
            format!("CPUs '{list}'")
        } else {
            format!("'{}'", self.command_words().join(" "))
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        stat: StatArgs,
    }

    /// `counterhal stat ARGS` parsed.
    pub(in crate::stat) fn parse(args: &[&str]) -> StatArgs {
        Command::try_parse_from(std::iter::once("stat").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .stat
    }

    #[test]
    fn events_default_to_perf_stats_set_and_refuse_empty_names() {
        assert_eq!(parse(&["--", "true"]).events().unwrap(), DEFAULT_EVENTS);
        let given = parse(&["-e", " page-faults ,task-clock", "-e", "cs", "--", "true"]);
        assert_eq!(given.events().unwrap(), ["page-faults", "task-clock", "cs"]);
        let empty = parse(&["-e", "a,,b", "--", "true"]).events().unwrap_err();
        assert_eq!(empty.exit_code, 2);
        assert!(empty.error.message().contains("empty event name"));
    }

    #[test]
    fn checks_before_anything_runs() {
        let none = parse(&[]).check().unwrap_err();
        assert!(
            none.error.message().contains("no command"),
            "{}",
            none.error
        );
        let separator = parse(&["-x", "", "--", "true"]).check().unwrap_err();
        assert!(separator.error.message().contains("separator"));
        let unwritable = parse(&["-o", "/nonexistent/dir/out", "--", "true"]).check();
        assert_eq!(unwritable.unwrap_err().exit_code, 2);
        assert!(parse(&["--", "true"]).check().is_ok());
    }

    #[test]
    fn the_header_names_what_was_counted() {
        assert_eq!(parse(&["--", "ls", "-l"]).counted(), "'ls -l'");
        assert_eq!(
            parse(&["-p", "42", "--", "sleep", "1"]).counted(),
            "process id '42'"
        );
        assert_eq!(parse(&["-a", "--", "true"]).counted(), "'system wide'");
        assert_eq!(parse(&["-C", "0-1", "--", "true"]).counted(), "CPUs '0-1'");
    }
}
