//! The one parser of the command line, for every subcommand: each subcommand's arguments are a
//! [`Table`] of options ([`spec`]), read by [`parser`] (every option alone and in clusters,
//! attached values, the words that are no option), and described to clap by [`described`],
//! which writes `--help`, `docs/cli.md`, the manual pages and the completions from the same
//! table. clap never reads the words: building its parser cost `stat` half of its start-up
//! instructions (1.16 M with it, 0.65 M without, for `stat -e page-faults,context-switches --
//! true`), so the command reads them by the tables, as ripgrep 14 reads its flags.

pub mod described;
pub mod parser;
pub mod spec;

use std::ffi::OsString;

pub use parser::{Parsed, parse};
pub use spec::{Action, Spec};

/// `words` (what follows the subcommand's name) read by `T`'s table, for a test that needs a
/// subcommand's arguments as the command line gives them; a panic names the words where they
/// are not read as arguments (help asked for, bad input). Its tests are the exporter's, so
/// it is built with the `serve` feature.
#[cfg(all(test, feature = "serve"))]
pub fn read_for_test<T: Table>(words: &[&str]) -> Box<T> {
    match parse::<T>(words.iter().map(OsString::from)) {
        Ok(Parsed::Args(args)) => args,
        Ok(Parsed::Help(flag)) => panic!("{} {words:?}: help ({flag})", T::NAME),
        Err(error) => panic!("{} {words:?}: {}", T::NAME, error.error),
    }
}

/// What a subcommand takes besides its options.
#[derive(Clone, Copy)]
pub enum Words {
    /// Nothing.
    None,
    /// At most one word, anywhere among the options.
    One(&'static str, &'static str),
    /// One word, one of these, anywhere among the options (its table's check refuses none).
    OneOf(&'static str, &'static str, &'static [&'static str]),
    /// Any number of words, anywhere among the options (`--` ends the options).
    Some(&'static str, &'static str),
    /// A command: from `--` or the first word that is no option, every word after it (as perf
    /// stops reading options there).
    Command(&'static str, &'static str),
}

/// A subcommand's arguments as its table describes them.
pub trait Table: Default + Sized + 'static {
    /// The subcommand's name (`stat`).
    const NAME: &'static str;
    /// Its usage line, printed under bad input.
    const USAGE: &'static str;
    /// Its options, in the order `--help` lists them.
    const OPTIONS: &'static [Spec<Self>];
    /// Options that exclude each other: each with those it cannot be given with.
    const CONFLICTS: &'static [(&'static str, &'static [&'static str])] = &[];
    /// Options that need another: the option, what it needs, an example.
    const REQUIRES: &'static [(&'static str, &'static str, &'static str)] = &[];
    /// What it takes besides its options: the name and help of its words.
    const WORDS: Words = Words::None;

    /// Takes `word`, one that is no option (as [`Table::WORDS`] says), or says what would be
    /// right.
    ///
    /// # Errors
    /// A word it does not take: what a right one would be.
    fn word(&mut self, word: OsString) -> Result<(), String> {
        Err(format!(
            "{} takes no word but its options (not `{}`)",
            Self::NAME,
            word.to_string_lossy()
        ))
    }

    /// Checks what no option alone can, with `given` saying which options were given: the
    /// message and what would be right.
    ///
    /// # Errors
    /// The arguments together are not what the subcommand takes.
    fn check(&self, given: &dyn Fn(&str) -> bool) -> Result<(), (String, String)> {
        let _ = given;
        Ok(())
    }
}
