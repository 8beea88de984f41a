//! The one parser of `counterhal stat`'s command line: every option in [`OPTIONS`] (its
//! names, whether it takes a value, what it sets), the rules between them in [`CONFLICTS`]
//! and [`REQUIRES`], and the messages for what breaks them. clap's description of
//! [`StatArgs`] is kept for `--help`, the manual and the completions alone; a test holds it
//! to this table (names, aliases, values). Building clap's parser for stat's options took
//! half of the instructions of `counterhal stat -e page-faults,context-switches -- true`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use counterhal::{Error, split_event_list};

use super::arguments::{StatArgs, USAGE, group_members};
use crate::error::CliError;
use crate::options::parse_backend;

/// What an option does with what follows it.
#[derive(Clone, Copy)]
pub(super) enum Action {
    /// No value: sets its field (a count adds one each time).
    Flag(fn(&mut StatArgs)),
    /// One value, text: parsed into its field, or what a right value would be.
    Text(fn(&mut StatArgs, &str) -> Result<(), &'static str>),
    /// One value, a path (any bytes).
    Path(fn(&mut StatArgs, PathBuf)),
    /// A value only when written `--long=VALUE` (`require_equals`) or, without it, the next
    /// word when it is no option.
    Optional(fn(&mut StatArgs, Option<&str>), bool),
}

/// One option: its short and long names, perf's other long name, the value it takes (as
/// `--help` names it), whether it may be given more than once, and what it does.
pub(super) struct Spec {
    pub(super) short: Option<char>,
    pub(super) long: &'static str,
    pub(super) alias: Option<&'static str>,
    pub(super) value_name: &'static str,
    pub(super) repeats: bool,
    pub(super) action: Action,
}

const fn flag(short: Option<char>, long: &'static str, set: fn(&mut StatArgs)) -> Spec {
    Spec {
        short,
        long,
        alias: None,
        value_name: "",
        repeats: false,
        action: Action::Flag(set),
    }
}

const fn text(
    short: Option<char>,
    long: &'static str,
    value_name: &'static str,
    set: fn(&mut StatArgs, &str) -> Result<(), &'static str>,
) -> Spec {
    Spec {
        short,
        long,
        alias: None,
        value_name,
        repeats: false,
        action: Action::Text(set),
    }
}

const fn path(
    long: &'static str,
    value_name: &'static str,
    set: fn(&mut StatArgs, PathBuf),
) -> Spec {
    Spec {
        short: None,
        long,
        alias: None,
        value_name,
        repeats: false,
        action: Action::Path(set),
    }
}

impl Spec {
    const fn repeated(self) -> Spec {
        Spec {
            repeats: true,
            ..self
        }
    }

    const fn alias(self, alias: &'static str) -> Spec {
        Spec {
            alias: Some(alias),
            ..self
        }
    }

    /// How messages name it: `-r/--repeat` or `--timeout`.
    fn name(&self) -> String {
        match self.short {
            Some(short) => format!("-{short}/--{}", self.long),
            None => format!("--{}", self.long),
        }
    }
}

/// A whole number, as Rust's `parse` reads it.
fn number<T: std::str::FromStr>(value: &str, right: &'static str) -> Result<T, &'static str> {
    value.parse().map_err(|_| right)
}

/// A list option's values: every value given, in order.
fn push(list: &mut Vec<String>, value: &str) -> Result<(), &'static str> {
    list.push(value.to_string());
    Ok(())
}

/// How many events the `-e` values given so far name (a `-G` or `--filter` applies to them).
fn events_so_far(args: &StatArgs) -> usize {
    args.event_names
        .iter()
        .flat_map(|list| split_event_list(list))
        .map(|item| group_members(item.trim()).map_or(1, |members| members.len()))
        .sum()
}

/// Every option of `counterhal stat`.
pub(super) const OPTIONS: [Spec; 69] = [
    text(Some('e'), "event", "EV[,EV...]", |a, v| {
        push(&mut a.event_names, v)
    })
    .repeated(),
    text(None, "backend", "BACKEND", |a, v| {
        a.backend = Some(parse_backend(v).map_err(|_| "a backend `counterhal info` lists")?);
        Ok(())
    }),
    flag(None, "model", |a| a.model = true),
    text(None, "cpu-model", "MODEL", |a, v| {
        a.database.cpu = Some(v.to_string());
        Ok(())
    }),
    path("events", "FILE", |a, v| a.database.events_file = Some(v)),
    path("descriptions", "DIR", |a, v| {
        a.database.descriptions = Some(v)
    }),
    path("sysfs", "DIR", |a, v| a.sysfs.sysfs = Some(v)),
    text(Some('p'), "pid", "PID[,PID]", |a, v| {
        a.pid = Some(v.to_string());
        Ok(())
    }),
    flag(Some('a'), "all-cpus", |a| a.all_cpus = true),
    text(Some('C'), "cpu-list", "CPUS", |a, v| {
        a.cpu_list = Some(v.to_string());
        Ok(())
    })
    .alias("cpu"),
    text(Some('r'), "repeat", "N", |a, v| {
        let right = "a whole number of runs, at least 1, e.g. -r 3";
        a.repeat = number::<u32>(v, right).and_then(|n| if n >= 1 { Ok(n) } else { Err(right) })?;
        Ok(())
    }),
    text(Some('M'), "metrics", "METRIC[,METRIC]", |a, v| {
        push(&mut a.metrics, v)
    })
    .repeated(),
    flag(Some('A'), "no-aggr", |a| a.no_aggregate = true).alias("no-aggregate"),
    flag(None, "per-thread", |a| a.per_thread = true),
    text(Some('I'), "interval-print", "MS", |a, v| {
        a.interval_ms = Some(number(v, "milliseconds, a whole number, e.g. -I 100")?);
        Ok(())
    }),
    text(None, "interval-count", "N", |a, v| {
        let right = "a whole number of intervals, at least 1, e.g. --interval-count 5";
        a.interval_count =
            Some(number::<u32>(v, right).and_then(|n| if n >= 1 { Ok(n) } else { Err(right) })?);
        Ok(())
    }),
    text(None, "timeout", "MS", |a, v| {
        a.timeout_ms = Some(number(
            v,
            "milliseconds, a whole number, e.g. --timeout 500",
        )?);
        Ok(())
    }),
    path("plot", "FILE.svg", |a, v| a.plot = Some(v)),
    text(Some('x'), "field-separator", "SEP", |a, v| {
        a.separator = Some(v.to_string());
        Ok(())
    }),
    flag(Some('j'), "json-output", |a| a.json_lines = true),
    flag(None, "json", |a| a.json = true),
    Spec {
        short: Some('o'),
        ..path("output", "FILE", |a, v| a.output = Some(v))
    },
    flag(Some('n'), "null", |a| a.more.null = true),
    text(Some('D'), "delay", "MS", |a, v| {
        a.more.delay_ms = Some(number(
            v,
            "milliseconds, a whole number (-1: disabled until --control's enable), e.g. -D 100",
        )?);
        Ok(())
    }),
    text(None, "control", "SPEC", |a, v| {
        a.more.control = Some(v.to_string());
        Ok(())
    }),
    flag(Some('q'), "quiet", |a| a.more.quiet = true),
    flag(Some('B'), "big-num", |a| a.more.big_num = true),
    flag(None, "no-big-num", |a| a.more.no_big_num = true),
    flag(None, "append", |a| a.more.append = true),
    text(None, "log-fd", "FD", |a, v| {
        a.more.log_fd = Some(number(
            v,
            "an open file descriptor's number, e.g. --log-fd 3",
        )?);
        Ok(())
    }),
    flag(None, "all-user", |a| a.more.all_user = true),
    flag(None, "all-kernel", |a| a.more.all_kernel = true),
    text(Some('t'), "tid", "TID[,TID]", |a, v| {
        a.more.tid = Some(v.to_string());
        Ok(())
    }),
    flag(Some('i'), "no-inherit", |a| a.more.no_inherit = true),
    text(Some('G'), "cgroup", "NAME[,NAME...]", |a, v| {
        let before = events_so_far(a);
        a.more.events_before_cgroups.push(Some(before));
        push(&mut a.more.cgroups, v)
    })
    .repeated(),
    text(None, "for-each-cgroup", "NAME[,NAME...]", |a, v| {
        push(&mut a.more.for_each_cgroup, v)
    })
    .repeated(),
    text(None, "filter", "FILTER", |a, v| {
        let before = events_so_far(a);
        a.more.events_before_filters.push(before);
        push(&mut a.more.filters, v)
    })
    .repeated(),
    flag(Some('g'), "group", |a| a.more.group = true),
    flag(Some('d'), "detailed", |a| {
        a.more.detailed = a.more.detailed.saturating_add(1)
    })
    .repeated(),
    // --scale and --no-scale override each other: the last one given counts.
    flag(None, "no-scale", |a| {
        (a.more.no_scale, a.more.scale) = (true, false)
    })
    .repeated(),
    flag(None, "scale", |a| {
        (a.more.scale, a.more.no_scale) = (true, false)
    })
    .repeated(),
    flag(Some('v'), "verbose", |a| a.more.verbose = true),
    flag(Some('S'), "sync", |a| a.more.sync = true),
    text(None, "pre", "CMD", |a, v| {
        a.more.pre = Some(v.to_string());
        Ok(())
    }),
    text(None, "post", "CMD", |a, v| {
        a.more.post = Some(v.to_string());
        Ok(())
    }),
    flag(None, "per-socket", |a| a.more.per_socket = true),
    flag(None, "per-die", |a| a.more.per_die = true),
    flag(None, "per-core", |a| a.more.per_core = true),
    flag(None, "per-node", |a| a.more.per_node = true),
    Spec {
        short: None,
        long: "per-cache",
        alias: None,
        value_name: "LEVEL",
        repeats: false,
        action: Action::Optional(
            |a, v| a.more.per_cache = Some(v.unwrap_or_default().to_string()),
            true,
        ),
    },
    flag(None, "per-cluster", |a| a.more.per_cluster = true),
    flag(None, "summary", |a| a.more.summary = true),
    flag(None, "no-csv-summary", |a| a.more.no_csv_summary = true),
    flag(None, "interval-clear", |a| a.more.interval_clear = true),
    flag(None, "table", |a| a.more.table = true),
    flag(None, "metric-only", |a| a.more.metric_only = true),
    flag(None, "topdown", |a| a.more.topdown = true),
    text(None, "td-level", "N", |a, v| {
        a.more.td_level = Some(number(
            v,
            "a whole number, the top-down level, e.g. --td-level 2",
        )?);
        Ok(())
    }),
    flag(None, "percore-show-thread", |a| {
        a.more.percore_show_thread = true
    }),
    flag(None, "metric-no-group", |a| a.more.metric_no_group = true),
    flag(None, "metric-no-merge", |a| a.more.metric_no_merge = true),
    flag(None, "no-merge", |a| a.more.no_merge = true),
    text(None, "cputype", "TYPE", |a, v| {
        a.more.cputype = Some(v.to_string());
        Ok(())
    }),
    flag(None, "hybrid-merge", |a| a.more.hybrid_merge = true),
    flag(Some('b'), "bpf-counters", |a| {
        a.more.refused.bpf_counters = true
    }),
    path("bpf-attr-map", "PATH", |a, v| {
        a.more.refused.bpf_attr_map = Some(v)
    }),
    Spec {
        short: None,
        long: "iostat",
        alias: None,
        value_name: "ARG",
        repeats: false,
        action: Action::Optional(
            |a, v| a.more.refused.iostat = Some(v.map(str::to_string)),
            false,
        ),
    },
    flag(None, "smi-cost", |a| a.more.refused.smi_cost = true),
    flag(Some('T'), "transaction", |a| {
        a.more.refused.transaction = true
    }),
];

/// Options that cannot be given together: each with the options it excludes.
pub(super) const CONFLICTS: &[(&str, &[&str])] = &[
    ("model", &["pid", "all-cpus", "cpu-list"]),
    ("pid", &["all-cpus", "cpu-list", "tid"]),
    ("tid", &["all-cpus", "cpu-list"]),
    ("field-separator", &["json", "json-output", "big-num"]),
    ("json-output", &["json"]),
    ("null", &["metrics", "event", "detailed"]),
    ("big-num", &["no-big-num"]),
    ("log-fd", &["output"]),
    ("all-user", &["all-kernel"]),
    ("cgroup", &["for-each-cgroup"]),
    (
        "per-socket",
        &[
            "no-aggr",
            "per-thread",
            "per-die",
            "per-core",
            "per-node",
            "per-cache",
            "per-cluster",
        ],
    ),
    (
        "per-die",
        &[
            "no-aggr",
            "per-thread",
            "per-core",
            "per-node",
            "per-cache",
            "per-cluster",
        ],
    ),
    (
        "per-core",
        &[
            "no-aggr",
            "per-thread",
            "per-node",
            "per-cache",
            "per-cluster",
        ],
    ),
    (
        "per-node",
        &["no-aggr", "per-thread", "per-cache", "per-cluster"],
    ),
    ("per-cache", &["no-aggr", "per-thread", "per-cluster"]),
    ("per-cluster", &["no-aggr", "per-thread"]),
];

/// Options that need another: each with the one it needs, and an example.
pub(super) const REQUIRES: &[(&str, &str, &str)] = &[
    ("model", "backend", "--backend pctr --model"),
    (
        "interval-count",
        "interval-print",
        "-I 100 --interval-count 5",
    ),
    ("plot", "interval-print", "-I 100 --plot rates.svg"),
    ("append", "output", "-o FILE --append"),
    ("summary", "interval-print", "-I 100 --summary"),
    (
        "no-csv-summary",
        "summary",
        "-I 100 --summary --no-csv-summary",
    ),
    (
        "interval-clear",
        "interval-print",
        "-I 100 --interval-clear",
    ),
    (
        "bpf-attr-map",
        "bpf-counters",
        "-b --bpf-attr-map /sys/fs/bpf/perf_attr_map",
    ),
];

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
    let mut args = StatArgs {
        repeat: 1,
        ..StatArgs::default()
    };
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
                if let Action::Flag(_) = OPTIONS[index].action {
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
                Action::Flag(set) if attached.is_none() => set(&mut args),
                Action::Flag(_) => {
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
