//! `counterhal stat`'s command line, read once and checked: what the user asked for, which
//! the plan, the measurement and the report take from here and never read again.
//!
//! Its rooms: [`stat_args`] ([`StatArgs`], what the line gives, with the checks that need more
//! than one option, and the event lists' syntax) and [`switches`] (perf's other switches);
//! [`options`] (the table of every option: its names, its value, what it sets and what
//! `--help` says of it, and the rules between options), read by the command's one parser
//! ([`crate::args`]) and described to clap for `--help`, `docs/cli.md`, the manual page and
//! the completions; [`control`] (`--control`'s value) and [`record`] (`stat record` and `stat
//! report` on the line).

pub mod control;
pub mod options;
pub mod record;
pub mod stat_args;
pub mod switches;

use std::ffi::OsString;

pub use self::stat_args::{Format, StatArgs, USAGE};
use crate::args::Parsed;
use crate::error::CliError;

/// `stat`'s command line, `argv` whole (`counterhal stat ...`), read by the one parser; `stat
/// record`'s read again without its word, as perf reads stat's options on both sides of it.
///
/// # Errors
/// As [`crate::args::parse`]: bad input (exit 2) with the usage line.
pub fn read(argv: &[OsString]) -> Result<Parsed<StatArgs>, CliError> {
    let read = |argv: &[OsString]| crate::args::parse::<StatArgs>(argv.iter().skip(2).cloned());
    let mut stat = match read(argv)? {
        Parsed::Args(stat) => stat,
        help => return Ok(help),
    };
    if let Some(line) = stat.record_line(argv) {
        stat = match read(&line)? {
            Parsed::Args(stat) => stat,
            help => return Ok(help),
        };
        stat.set_record(argv.to_vec());
    }
    Ok(Parsed::Args(stat))
}

/// Parses `counterhal stat` arguments (without the subcommand's name), for the tests of the
/// parts of `stat`.
#[cfg(test)]
pub fn parse(words: &[&str]) -> Result<StatArgs, String> {
    match crate::args::parse::<StatArgs>(words.iter().map(OsString::from))
        .map_err(|e| e.error.to_string())?
    {
        Parsed::Args(args) => Ok(*args),
        Parsed::Help(_) => panic!("{words:?} asks for help"),
    }
}

/// What `--help` prints after stat's options: examples, and where stat differs from perf.
pub const HELP: &str = "\
Examples:
  counterhal stat -- ls
  counterhal stat -e page-faults,context-switches -e task-clock -- true
  counterhal stat -e syscalls:sys_enter_getpid -x, -- ./bench
  counterhal stat -a -e cpu-clock -- sleep 1
  counterhal stat -a -A --timeout 500 -e cpu-clock,context-switches
  counterhal stat -a -e task-clock,context-switches -G user.slice -- sleep 1
  counterhal stat -a -e task-clock --for-each-cgroup system.slice,user.slice -- sleep 1
  counterhal stat -i -e page-faults -- sh -c 'ls; ls'     (the shell alone, not the ls)
  counterhal stat -I 100 -j -e page-faults,task-clock -- ./bench
  counterhal stat -p $(pidof NAME) --per-thread -x,     (until Ctrl-C)
  counterhal stat --backend pctr --model --cpu-model p6 -e instructions,branches,cycles -- sleep 1
  counterhal stat record -o run.data -e page-faults,task-clock -- ./bench   (perf's stat records)
  counterhal stat -x, report -i run.data     (perf's or counterhal's stat records, printed)
  counterhal stat record -o - -- true | perf stat report -i -
Events not supported here are printed as <not supported>, with the reason below the table.\n\
How counterhal differs from perf stat, on purpose or not yet: see docs/command.md (where stat differs from perf).";

#[cfg(test)]
#[path = "parser_tests.rs"]
mod parser_tests;
