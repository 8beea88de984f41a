//! `stat record` and `stat report` on the command line, as perf reads them
//! (tools/perf/builtin-stat.c, `cmd_stat`): a first word that is no option and begins `record`
//! or `report` names the subcommand; `record`'s options are stat's, read on both sides of the
//! word; `report` takes `-i FILE` alone. What `stat record` cannot keep is refused here.

use std::ffi::{OsStr, OsString};

use counterhal::Error;

use super::stat_args::StatArgs;
use crate::error::CliError;
use crate::stat::recording::default_input;

/// The usage line of `stat record`.
pub const RECORD_USAGE: &str =
    "counterhal stat record [-o FILE | -o -] [STAT OPTIONS] [--] CMD [ARGS]";
/// The usage line of `stat report`.
pub const REPORT_USAGE: &str =
    "counterhal stat [-x SEP | -j | --json] [-M METRICS] report [-i FILE | -i -]";

/// perf's `stat` subcommands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subcommand {
    /// `stat record`: count, and write the counts as stat records.
    Record,
    /// `stat report`: print stat records.
    Report,
}

impl Subcommand {
    /// The subcommand `word` names, as perf recognises it in the command's first word: more
    /// than two letters that begin `record` or `report` (`rec`, `repo`). A program of such a
    /// name is run as `./report`.
    pub fn of(word: &OsStr) -> Option<Subcommand> {
        let word = word.to_str().filter(|w| w.len() > 2)?;
        if "record".starts_with(word) {
            Some(Subcommand::Record)
        } else if "report".starts_with(word) {
            Some(Subcommand::Report)
        } else {
            None
        }
    }
}

impl StatArgs {
    /// For `stat record`, the command line read again: `argv` without the word `record` (and
    /// a `--` just before it), as perf reads stat's options on both sides of it; `None` for
    /// any other line.
    pub fn record_line(&self, argv: &[OsString]) -> Option<Vec<OsString>> {
        let word = self.command.first()?;
        let at = argv.len().checked_sub(self.command.len())?;
        if Subcommand::of(word) != Some(Subcommand::Record)
            || self.record.is_some()
            || argv.get(at) != Some(word)
        {
            return None;
        }
        let from = match at > 0 && argv[at - 1] == "--" {
            true => at - 1,
            false => at,
        };
        Some(
            argv[..from]
                .iter()
                .chain(&argv[at + 1..])
                .cloned()
                .collect(),
        )
    }

    /// Makes these arguments `stat record`'s, `argv` its command line as given.
    pub fn set_record(&mut self, argv: Vec<OsString>) {
        self.record = Some(argv);
    }
}

/// Refuses what `stat record` does not keep: `-r`'s runs (perf refuses them too), `-I`'s
/// intervals and counts per CPU or thread (the records hold the run's counts summed).
///
/// # Errors
/// Bad input (exit 2) naming the option.
pub fn check(args: &StatArgs) -> Result<(), CliError> {
    let refused = if args.repeat > 1 {
        Some("-r: stat record records one run (perf refuses -r too)")
    } else if args.interval().is_some() {
        Some("-I: stat record keeps the run's counts, not its intervals")
    } else if args.per_place() {
        Some(
            "-A, --per-thread and --per-core: stat record keeps the counts summed over CPUs and threads",
        )
    } else {
        None
    };
    match refused {
        Some(message) => Err(CliError::usage(
            Error::invalid_input(message)
                .with_hint("record without it; docs/command.md says what stat record keeps"),
            RECORD_USAGE,
        )),
        None => Ok(()),
    }
}

/// The input `stat report`'s words name: `-i FILE`, `--input FILE`, `--input=FILE`, `-iFILE`;
/// without one, standard input where it is a pipe, else `perf.data` (perf's rule).
pub fn input_of(words: &[OsString]) -> Result<String, CliError> {
    let refuse = |word: &str| {
        CliError::usage(
            Error::invalid_input(format!("stat report takes -i FILE alone, not `{word}`"))
                .with_hint("e.g. counterhal stat report -i perf.data; put -x, -j, --json or -M before `report`"),
            REPORT_USAGE,
        )
    };
    let mut input = None;
    let mut words = words.iter().map(|w| w.to_string_lossy().into_owned());
    while let Some(word) = words.next() {
        let value = match word.as_str() {
            "-i" | "--input" => words.next(),
            _ => word
                .strip_prefix("--input=")
                .or_else(|| word.strip_prefix("-i"))
                .filter(|v| !v.is_empty())
                .map(str::to_string),
        };
        match value {
            Some(value) if input.is_none() => input = Some(value),
            _ => return Err(refuse(&word)),
        }
    }
    Ok(input.unwrap_or_else(default_input))
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
