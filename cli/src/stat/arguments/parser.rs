//! The one parser of `counterhal stat`'s command line: the words after `stat` read by the
//! table of [`options`](super::options) (every option alone and in clusters, attached values,
//! then the command from `--` or the first word that is no option, as perf reads them), and
//! the rules between options checked, each breach named with what would be right. clap is not
//! asked: building its parser for stat's options took half of the instructions of `counterhal
//! stat -e page-faults,context-switches -- true` (1.16 M instructions with it, 0.65 M without).

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use counterhal::Error;

use super::options::{Action, CONFLICTS, OPTIONS, REQUIRES};
use super::stat_args::{StatArgs, USAGE};
use crate::error::CliError;

/// What a `stat` command line asks for.
pub enum Parsed {
    /// The arguments, checked against every rule here.
    Args(Box<StatArgs>),
    /// `-h` (short) or `--help` (long): clap's help for stat is printed.
    Help(&'static str),
}

/// Bad input: the message and what would be right, with stat's usage line.
fn refuse(message: String, hint: String) -> CliError {
    CliError::usage(Error::invalid_input(message).with_hint(hint), USAGE)
}

/// The option of this long name or alias.
fn by_long(name: &str) -> Option<usize> {
    OPTIONS
        .iter()
        .position(|o| o.long == name || o.alias == Some(name))
}

/// The options whose long names are nearest `name` (for an unknown one's hint).
fn nearest(name: &str) -> Option<&'static str> {
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
    OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.long).chain(o.alias))
        .map(|long| (distance(name, long), long))
        .filter(|&(d, long)| d <= 2 || long.starts_with(name) && name.len() >= 3)
        .min()
        .map(|(_, long)| long)
}

/// Whether `word` is a value, not an option: `-` alone, anything not starting with `-`, or
/// for `-D` a negative number.
fn is_value(word: &str, negative: bool) -> bool {
    !word.starts_with('-') || word == "-" || (negative && word[1..].parse::<u64>().is_ok())
}

/// `words` (what follows `stat` on the command line) read as `counterhal stat`'s options,
/// then the command: from `--` or the first word that is no option (as perf stops there).
///
/// # Errors
/// Bad input (exit 2) with the usage line: an unknown option, a missing or bad value, an
/// option given twice, two options that exclude each other, one without what it needs.
pub fn parse(words: impl IntoIterator<Item = OsString>) -> Result<Parsed, CliError> {
    let mut words = words.into_iter().peekable();
    let mut args = defaults();
    let mut given = [false; OPTIONS.len()];
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        let bytes = word.as_bytes();
        if bytes.len() < 2 || bytes[0] != b'-' {
            // The command's first word: it and every word after it are the command's.
            args.command.push(word);
            break;
        }
        let Some(text) = word.to_str() else {
            return Err(refuse(
                format!("the option `{}` is not UTF-8", word.to_string_lossy()),
                "write options and their attached values as text".to_string(),
            ));
        };
        if text == "-h" || text == "--help" {
            return Ok(Parsed::Help(if text == "-h" { "-h" } else { "--help" }));
        }
        // The options this word gives, each with its value when attached (`--long=VALUE`,
        // `-sVALUE`, `-s=VALUE`): a long option, or a cluster of short ones (`-ai`, `-dd`,
        // `-x,`).
        let mut options: Vec<(usize, Option<&str>)> = Vec::new();
        if let Some(long) = text.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let Some(index) = by_long(name) else {
                let hint = match nearest(name) {
                    Some(near) => {
                        format!("did you mean --{near}? `counterhal stat --help` lists the options")
                    }
                    None => "`counterhal stat --help` lists the options".to_string(),
                };
                return Err(refuse(format!("unknown option `--{name}` for stat"), hint));
            };
            options.push((index, value));
        } else {
            let mut rest = &text[1..];
            while let Some(short) = rest.chars().next() {
                rest = &rest[short.len_utf8()..];
                let Some(index) = OPTIONS.iter().position(|o| o.short == Some(short)) else {
                    return Err(refuse(
                        format!("unknown option `-{short}` for stat (in `{text}`)"),
                        "`counterhal stat --help` lists the options".to_string(),
                    ));
                };
                if !OPTIONS[index].takes_value() {
                    options.push((index, None));
                } else {
                    let value = rest.strip_prefix('=').unwrap_or(rest);
                    options.push((index, (!rest.is_empty()).then_some(value)));
                    break;
                }
            }
        }
        for (index, attached) in options {
            let option = &OPTIONS[index];
            if given[index] && !option.repeats {
                return Err(refuse(
                    format!("{} is given twice", option.name()),
                    "give it once".to_string(),
                ));
            }
            given[index] = true;
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
                    refuse(
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
                Action::Flag(set) | Action::Count(set) if attached.is_none() => set(&mut args),
                Action::Flag(_) | Action::Count(_) => {
                    return Err(refuse(
                        format!("{} takes no value", option.name()),
                        format!("give it alone: --{}", option.long),
                    ));
                }
                Action::Path(set) => set(&mut args, PathBuf::from(value(false)?)),
                Action::Text(set) => {
                    let value = value(option.long == "delay")?;
                    let text = value.to_str().ok_or_else(|| {
                        refuse(
                            format!("{}'s value is not UTF-8", option.name()),
                            "give it as text".to_string(),
                        )
                    })?;
                    set(&mut args, text).map_err(|right| {
                        refuse(
                            format!("`{text}` is not a value of {}", option.name()),
                            format!("give {right}"),
                        )
                    })?;
                }
                Action::Optional(set, true) => set(&mut args, attached),
                Action::Optional(set, false) => match attached {
                    Some(value) => set(&mut args, Some(value)),
                    None => {
                        let next = words.peek().and_then(|w| w.to_str()).map(str::to_string);
                        match next {
                            Some(next) if is_value(&next, false) => {
                                set(&mut args, Some(&next));
                                words.next();
                            }
                            _ => set(&mut args, None),
                        }
                    }
                },
            }
        }
    }
    args.command.extend(words);
    check_rules(&given)?;
    Ok(Parsed::Args(Box::new(args)))
}

/// The arguments before any word is read: the table's defaults (`-r`'s 1).
fn defaults() -> StatArgs {
    let mut args = StatArgs::default();
    for option in OPTIONS.iter().filter(|option| option.default.is_some()) {
        if let (Action::Text(set), Some(value)) = (option.action, option.default) {
            // Each default is a value its option takes (`-r`'s "1").
            let _ = set(&mut args, value);
        }
    }
    args
}

/// Refuses options given together that exclude each other, and options given without what
/// they need.
fn check_rules(given: &[bool; OPTIONS.len()]) -> Result<(), CliError> {
    // The options given (a few), so that each rule costs a comparison or two.
    let given: Vec<&str> = OPTIONS
        .iter()
        .zip(given)
        .filter_map(|(option, &given)| given.then_some(option.long))
        .collect();
    let is_given = |long: &str| given.contains(&long);
    let name =
        |long: &str| by_long(long).map_or_else(|| format!("--{long}"), |i| OPTIONS[i].name());
    for (one, others) in CONFLICTS {
        if !is_given(one) {
            continue;
        }
        if let Some(other) = others.iter().find(|other| is_given(other)) {
            return Err(refuse(
                format!("{} cannot be used with {}", name(one), name(other)),
                "give one of them".to_string(),
            ));
        }
    }
    for (option, needs, example) in REQUIRES {
        if is_given(option) && !is_given(needs) {
            return Err(refuse(
                format!("{} needs {}", name(option), name(needs)),
                format!("e.g. {example}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "parser_tests.rs"]
mod tests;
