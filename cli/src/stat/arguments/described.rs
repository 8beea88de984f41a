//! clap's description of `counterhal stat`, made from the table of [`options`](super::options)
//! alone: what `--help` prints, and what `docs/cli.md`, the manual page and the completions are
//! written from. clap never reads stat's words ([`parser`](super::parser) does); it describes
//! them, so what `--help` says of an option is what the parser takes.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, Args, Command, value_parser};

use super::options::{Action, COMMAND, OPTIONS, Spec};
use crate::options::{DatabaseArgs, SysfsArgs};

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

/// `command` with stat's options and its command's words, as the table describes them.
pub fn describe(command: Command) -> Command {
    let shared: Vec<Arg> = SysfsArgs::augment_args(DatabaseArgs::augment_args(Command::new("")))
        .get_arguments()
        .cloned()
        .collect();
    let options = OPTIONS.iter().enumerate().map(|(order, option)| {
        let arg = match option.help {
            Some(help) => described(option).help(help),
            // The words the other subcommands print for it.
            None => shared
                .iter()
                .find(|arg| arg.get_long() == Some(option.long))
                .cloned()
                .unwrap_or_else(|| described(option)),
        };
        arg.display_order(order)
    });
    command.args(options).arg(
        Arg::new("command")
            .value_name("CMD")
            .help(COMMAND)
            .value_parser(value_parser!(OsString))
            .action(ArgAction::Append)
            .num_args(1..)
            .trailing_var_arg(true),
    )
}

/// An option as clap describes it: its names, its value and how often it is given.
fn described(option: &Spec) -> Arg {
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
        Action::Optional(_, equals) => {
            let arg = value(arg).num_args(0..=1);
            match equals {
                true => arg.require_equals(true).default_missing_value(""),
                false => arg,
            }
        }
    }
}
