//! clap's description of a subcommand, made from its table alone: what `--help` prints, and
//! what `docs/cli.md`, the manual pages and the completions are written from. clap never
//! reads the words ([`parser`](super::parser) does); it describes them, so what `--help`
//! says of an option is what the parser takes.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, Command, value_parser};

use super::{Action, Spec, Table, Words};

/// `command` with `T`'s options and words, as its table describes them.
pub fn describe<T: Table>(command: Command) -> Command {
    let options = T::OPTIONS
        .iter()
        .enumerate()
        .map(|(order, option)| described(option).help(option.help).display_order(order));
    let command = command.args(options);
    let words = |name: &'static str, help: &'static str| {
        let id = match T::WORDS {
            Words::Command(..) => "command",
            _ => name,
        };
        Arg::new(id)
            .value_name(name)
            .help(help)
            .value_parser(value_parser!(OsString))
    };
    match T::WORDS {
        Words::None => command,
        Words::One(name, help) => command.arg(words(name, help).action(ArgAction::Set)),
        Words::OneOf(name, help, values) => command.arg(
            words(name, help)
                .action(ArgAction::Set)
                .required(true)
                .value_parser(values.to_vec()),
        ),
        Words::Some(name, help) => {
            command.arg(words(name, help).action(ArgAction::Append).num_args(0..))
        }
        Words::Command(name, help) => command.arg(
            words(name, help)
                .action(ArgAction::Append)
                .num_args(1..)
                .trailing_var_arg(true),
        ),
    }
}

/// An option as clap describes it: its names, its value and how often it is given.
fn described<T>(option: &Spec<T>) -> Arg {
    let mut arg = Arg::new(option.long).long(option.long);
    if let Some(short) = option.short {
        arg = arg.short(short);
    }
    if let Some(alias) = option.alias {
        arg = arg.visible_alias(alias);
    }
    if let Some(default) = option.default {
        arg = arg.default_value(default);
    }
    if !option.values.is_empty() {
        arg = arg.value_parser(option.values.to_vec());
    }
    let arg = arg.hide(option.hidden);
    let value = |arg: Arg| match option.repeats {
        true => arg.value_name(option.value_name).action(ArgAction::Append),
        false => arg.value_name(option.value_name).action(ArgAction::Set),
    };
    match option.action {
        Action::Flag(_) => arg.action(ArgAction::SetTrue),
        Action::Count(_) => arg.action(ArgAction::Count),
        Action::Text(_) => value(arg),
        Action::Path(_) => value(arg).value_parser(value_parser!(PathBuf)),
        Action::Many(_) => value(arg).num_args(1..),
        Action::Optional(_, equals) => {
            let arg = value(arg).num_args(0..=1);
            match equals {
                true => arg.require_equals(true).default_missing_value(""),
                false => arg,
            }
        }
    }
}
