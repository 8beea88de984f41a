//! `counterhal stat`'s command line, read once and checked: what the user asked for, which
//! the plan, the measurement and the report take from here and never read again.
//!
//! Its rooms: [`stat_args`] ([`StatArgs`], what the line gives, with the checks that need more
//! than one option, and the event lists' syntax) and [`switches`] (perf's other switches);
//! [`options`] (the table of every option: its names, its value, what it sets and what
//! `--help` says of it, and the rules between options), read by [`parser`], stat's one parser,
//! and described to clap by [`described`] for `--help`, `docs/cli.md`, the manual page and
//! the completions; [`control`] (`--control`'s value) and [`record`] (`stat record` and `stat
//! report` on the line).

pub mod control;
pub mod described;
pub mod options;
pub mod parser;
pub mod record;
pub mod stat_args;
pub mod switches;

use std::ffi::OsString;

pub use self::described::HELP;
pub use self::parser::Parsed;
pub use self::stat_args::{Format, StatArgs, USAGE};
use crate::error::CliError;

/// `stat`'s command line, `argv` whole (`counterhal stat ...`), read by [`parser`]; `stat
/// record`'s read again without its word, as perf reads stat's options on both sides of it.
///
/// # Errors
/// As [`parser::parse`]: bad input (exit 2) with the usage line.
pub fn read(argv: &[OsString]) -> Result<Parsed, CliError> {
    let read = |argv: &[OsString]| parser::parse(argv.iter().skip(2).cloned());
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
    match parser::parse(words.iter().map(OsString::from)).map_err(|e| e.error.to_string())? {
        Parsed::Args(args) => Ok(*args),
        Parsed::Help(_) => panic!("{words:?} asks for help"),
    }
}
