//! The parser of every subcommand's words, read by its table: every option alone and in
//! clusters (`-ai`, `-dd`, `-x,`), attached values (`--long=VALUE`, `-sVALUE`, `-s=VALUE`),
//! the words that are no option, and the rules between options, each breach named with what
//! would be right.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use counterhal::Error;

use super::{Action, Table, Words};
use crate::error::CliError;

/// What a command line asks for.
pub enum Parsed<T> {
    /// The arguments, checked against every rule of the table.
    Args(Box<T>),
    /// `-h` (short) or `--help` (long): clap's description of the table is printed.
    Help(&'static str),
}

/// Bad input: the message and what would be right, with the subcommand's usage line.
fn refuse<T: Table>(message: String, hint: String) -> CliError {
    CliError::usage(Error::invalid_input(message).with_hint(hint), T::USAGE)
}

/// The option of this long name or alias.
pub fn by_long<T: Table>(name: &str) -> Option<usize> {
    T::OPTIONS
        .iter()
        .position(|o| o.long == name || o.alias == Some(name))
}

/// The option whose long name is nearest `name` (for an unknown one's hint).
fn nearest<T: Table>(name: &str) -> Option<&'static str> {
    let distance = |a: &str, b: &str| -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut diagonal = row[0];
            row[0] = i + 1;
            for (j, &cb) in b.iter().enumerate() {
                let next = (diagonal + usize::from(ca != cb))
                    .min(row[j] + 1)
                    .min(row[j + 1] + 1);
                diagonal = row[j + 1];
                row[j + 1] = next;
            }
        }
        row[b.len()]
    };
    T::OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.long).chain(o.alias))
        .map(|long| (distance(name, long), long))
        .filter(|&(d, long)| d <= 2 || long.starts_with(name) && name.len() >= 3)
        .min()
        .map(|(_, long)| long)
}

/// Whether `word` is a value, not an option: `-` alone, anything not starting with `-`, or
/// where `negative`, a negative number.
fn is_value(word: &str, negative: bool) -> bool {
    !word.starts_with('-') || word == "-" || (negative && word[1..].parse::<u64>().is_ok())
}

/// `words` (what follows the subcommand's name on the command line) read as `T`'s options
/// and words.
///
/// # Errors
/// Bad input (exit 2) with the usage line: an unknown option, a missing or bad value, an
/// option given twice, two options that exclude each other, one without what it needs, a
/// word the subcommand does not take.
pub fn parse<T: Table>(words: impl IntoIterator<Item = OsString>) -> Result<Parsed<T>, CliError> {
    let mut words = words.into_iter().peekable();
    let mut args = T::default();
    let mut given = vec![false; T::OPTIONS.len()];
    let help = format!("`counterhal {} --help` lists the options", T::NAME);
    let word_of = |args: &mut T, word: OsString| {
        args.word(word)
            .map_err(|right| refuse::<T>(right, help.clone()))
    };
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        let bytes = word.as_bytes();
        if bytes.len() < 2 || bytes[0] != b'-' {
            word_of(&mut args, word)?;
            if matches!(T::WORDS, Words::Command(..)) {
                // The command's first word: every word after it is the command's.
                break;
            }
            continue;
        }
        let Some(text) = word.to_str() else {
            return Err(refuse::<T>(
                format!("the option `{}` is not UTF-8", word.to_string_lossy()),
                "write options and their attached values as text".to_string(),
            ));
        };
        if text == "-h" || text == "--help" {
            return Ok(Parsed::Help(if text == "-h" { "-h" } else { "--help" }));
        }
        let options = options_of::<T>(text)?;
        for (index, attached) in options {
            let option = &T::OPTIONS[index];
            if given[index] && !option.repeats {
                return Err(refuse::<T>(
                    format!("{} is given twice", option.name()),
                    "give it once".to_string(),
                ));
            }
            given[index] = true;
            take::<T>(&mut args, index, attached, &mut words)?;
        }
    }
    for word in words {
        word_of(&mut args, word)?;
    }
    set_defaults(&mut args, &given);
    check_rules(&args, &given)?;
    Ok(Parsed::Args(Box::new(args)))
}

/// The options the word `text` gives, each with its value when attached (`--long=VALUE`,
/// `-sVALUE`, `-s=VALUE`): a long option, or a cluster of short ones (`-ai`, `-dd`, `-x,`).
fn options_of<T: Table>(text: &str) -> Result<Vec<(usize, Option<&str>)>, CliError> {
    let mut options = Vec::new();
    if let Some(long) = text.strip_prefix("--") {
        let (name, value) = match long.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (long, None),
        };
        let Some(index) = by_long::<T>(name) else {
            let list = format!("`counterhal {} --help` lists the options", T::NAME);
            let hint = match nearest::<T>(name) {
                Some(near) => format!("did you mean --{near}? {list}"),
                None => list,
            };
            return Err(refuse::<T>(
                format!("unknown option `--{name}` for {}", T::NAME),
                hint,
            ));
        };
        options.push((index, value));
        return Ok(options);
    }
    let mut rest = &text[1..];
    while let Some(short) = rest.chars().next() {
        rest = &rest[short.len_utf8()..];
        let Some(index) = T::OPTIONS.iter().position(|o| o.short == Some(short)) else {
            return Err(refuse::<T>(
                format!("unknown option `-{short}` for {} (in `{text}`)", T::NAME),
                format!("`counterhal {} --help` lists the options", T::NAME),
            ));
        };
        if !T::OPTIONS[index].takes_value() {
            options.push((index, None));
        } else {
            let value = rest.strip_prefix('=').unwrap_or(rest);
            options.push((index, (!rest.is_empty()).then_some(value)));
            break;
        }
    }
    Ok(options)
}

/// Does what the `index`th option does, with its value `attached` or taken from `words`.
fn take<T: Table>(
    args: &mut T,
    index: usize,
    attached: Option<&str>,
    words: &mut std::iter::Peekable<impl Iterator<Item = OsString>>,
) -> Result<(), CliError> {
    let option = &T::OPTIONS[index];
    let as_text = |value: &std::ffi::OsStr| -> Result<String, CliError> {
        value.to_str().map(str::to_string).ok_or_else(|| {
            refuse::<T>(
                format!("{}'s value is not UTF-8", option.name()),
                "give it as text".to_string(),
            )
        })
    };
    let set_text = |args: &mut T,
                    set: fn(&mut T, &str) -> Result<(), String>,
                    text: &str|
     -> Result<(), CliError> {
        set(args, text).map_err(|right| {
            refuse::<T>(
                format!("`{text}` is not a value of {}", option.name()),
                format!("give {right}"),
            )
        })
    };
    // The value: attached, or the next word when it is no option.
    let mut value = |negative: bool| -> Result<OsString, CliError> {
        if let Some(value) = attached {
            return Ok(value.into());
        }
        let missing = || {
            let example = match option.short {
                Some(short) => format!("-{short} {}", option.value_name),
                None => format!("--{} {}", option.long, option.value_name),
            };
            refuse::<T>(
                format!("{} needs a value", option.name()),
                format!("e.g. {example}"),
            )
        };
        let next = words.next().ok_or_else(missing)?;
        match next.to_str() {
            Some(word) if !is_value(word, negative) => Err(missing()),
            _ => Ok(next),
        }
    };
    match option.action {
        Action::Flag(set) | Action::Count(set) if attached.is_none() => set(args),
        Action::Flag(_) | Action::Count(_) => {
            return Err(refuse::<T>(
                format!("{} takes no value", option.name()),
                format!("give it alone: --{}", option.long),
            ));
        }
        Action::Path(set) => set(args, PathBuf::from(value(false)?)),
        Action::Text(set) => {
            // perf's -D takes -1.
            let text = as_text(&value(option.long == "delay")?)?;
            set_text(args, set, &text)?;
        }
        Action::Many(add) => {
            let first = as_text(&value(false)?)?;
            set_text(args, add, &first)?;
            if attached.is_none() {
                while let Some(next) = words.peek().and_then(|w| w.to_str()) {
                    if !is_value(next, false) {
                        break;
                    }
                    let next = next.to_string();
                    words.next();
                    set_text(args, add, &next)?;
                }
            }
        }
        Action::Optional(set, true) => set(args, attached),
        Action::Optional(set, false) => match attached {
            Some(value) => set(args, Some(value)),
            None => {
                let next = words.peek().and_then(|w| w.to_str()).map(str::to_string);
                match next {
                    Some(next) if is_value(&next, false) => {
                        set(args, Some(&next));
                        words.next();
                    }
                    _ => set(args, None),
                }
            }
        },
    }
    Ok(())
}

/// The table's defaults (`-r`'s 1) of the options not `given`, as each would take them.
fn set_defaults<T: Table>(args: &mut T, given: &[bool]) {
    for (option, _) in T::OPTIONS.iter().zip(given).filter(|(_, given)| !**given) {
        let Some(value) = option.default else {
            continue;
        };
        // Each default is a value its option takes (`-r`'s "1").
        match option.action {
            Action::Text(set) | Action::Many(set) => {
                let _ = set(args, value);
            }
            Action::Path(set) => set(args, PathBuf::from(value)),
            _ => {}
        }
    }
}

/// Refuses options given together that exclude each other, options given without what they
/// need, and what the table's own check refuses.
fn check_rules<T: Table>(args: &T, given: &[bool]) -> Result<(), CliError> {
    // The options given (a few), so that each rule costs a comparison or two.
    let given: Vec<&str> = T::OPTIONS
        .iter()
        .zip(given)
        .filter_map(|(option, &given)| given.then_some(option.long))
        .collect();
    let is_given = |long: &str| given.contains(&long);
    let name = |long: &str| {
        by_long::<T>(long).map_or_else(|| format!("--{long}"), |i| T::OPTIONS[i].name())
    };
    for (one, others) in T::CONFLICTS {
        if !is_given(one) {
            continue;
        }
        if let Some(other) = others.iter().find(|other| is_given(other)) {
            return Err(refuse::<T>(
                format!("{} cannot be used with {}", name(one), name(other)),
                "give one of them".to_string(),
            ));
        }
    }
    for (option, needs, example) in T::REQUIRES {
        if is_given(option) && !is_given(needs) {
            return Err(refuse::<T>(
                format!("{} needs {}", name(option), name(needs)),
                format!("e.g. {example}"),
            ));
        }
    }
    args.check(&is_given)
        .map_err(|(message, right)| refuse::<T>(message, right))
}
