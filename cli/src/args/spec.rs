//! An option as a subcommand's table describes it: its names, the value it takes, how often
//! it may be given, its default, what it sets in the subcommand's arguments and what `--help`
//! says of it; and the builders the tables are written with.

use std::path::PathBuf;

/// What an option does with what follows it, in the arguments `T` it sets.
pub enum Action<T> {
    /// No value: sets its field.
    Flag(fn(&mut T)),
    /// No value, counted: each time it is given adds one (`-d`, `-dd`).
    Count(fn(&mut T)),
    /// One value, text: parsed into its field, or what a right value would be.
    Text(fn(&mut T, &str) -> Result<(), String>),
    /// One value, a path (any bytes).
    Path(fn(&mut T, PathBuf)),
    /// A value only when written `--long=VALUE` (`require_equals`) or, without it, the next
    /// word when it is no option.
    Optional(fn(&mut T, Option<&str>), bool),
    /// One value or more: each word that follows, up to the next option.
    // serve's `--cgroups` alone takes several words (a build without serve has none).
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    Many(fn(&mut T, &str) -> Result<(), String>),
}

impl<T> Clone for Action<T> {
    fn clone(&self) -> Action<T> {
        *self
    }
}

impl<T> Copy for Action<T> {}

/// One option: its short and long names, another long name, the value it takes (as `--help`
/// names it), whether it may be given more than once, its default, the values it takes where
/// they are a few words, whether `--help` hides it, what it does and what `--help` says of
/// it.
pub struct Spec<T> {
    /// `-e`.
    pub short: Option<char>,
    /// `--event`.
    pub long: &'static str,
    /// Another long name (perf's `--cpu` for `--cpu-list`).
    pub alias: Option<&'static str>,
    /// What `--help` calls its value (`EV[,EV...]`); empty for a switch.
    pub value_name: &'static str,
    /// Whether it may be given more than once.
    pub repeats: bool,
    /// The value taken when the option is not given (`-r`'s 1), set before the words are read.
    pub default: Option<&'static str>,
    /// The words it takes, where they are a few (`auto`, `bpf`, `perf-events`): what `--help`
    /// and the completions offer.
    pub values: &'static [&'static str],
    /// Left out of `--help` (perf's options refused here, `--iostat`...).
    pub hidden: bool,
    /// What it does with what follows it.
    pub action: Action<T>,
    /// What `--help` says.
    pub help: &'static str,
}

/// An option of these names and value that does `action`; the rest as the builders below
/// say (given once, no default, shown, no words of its own).
pub const fn spec<T>(
    short: Option<char>,
    long: &'static str,
    value_name: &'static str,
    action: Action<T>,
) -> Spec<T> {
    Spec {
        short,
        long,
        alias: None,
        value_name,
        repeats: false,
        default: None,
        values: &[],
        hidden: false,
        action,
        help: "",
    }
}

/// A switch that sets its field.
pub const fn flag<T>(short: Option<char>, long: &'static str, set: fn(&mut T)) -> Spec<T> {
    spec(short, long, "", Action::Flag(set))
}

/// A switch counted each time it is given.
pub const fn count<T>(short: Option<char>, long: &'static str, add: fn(&mut T)) -> Spec<T> {
    spec(short, long, "", Action::Count(add)).repeated()
}

/// An option with a value, text.
pub const fn text<T>(
    short: Option<char>,
    long: &'static str,
    value_name: &'static str,
    set: fn(&mut T, &str) -> Result<(), String>,
) -> Spec<T> {
    spec(short, long, value_name, Action::Text(set))
}

/// An option with a value, a path.
pub const fn path<T>(
    short: Option<char>,
    long: &'static str,
    value_name: &'static str,
    set: fn(&mut T, PathBuf),
) -> Spec<T> {
    spec(short, long, value_name, Action::Path(set))
}

/// An option with one value or more, each word up to the next option.
#[cfg_attr(not(feature = "serve"), expect(dead_code))]
pub const fn many<T>(
    long: &'static str,
    value_name: &'static str,
    add: fn(&mut T, &str) -> Result<(), String>,
) -> Spec<T> {
    spec(None, long, value_name, Action::Many(add)).repeated()
}

impl<T> Spec<T> {
    /// Given more than once (a list, or a count).
    pub const fn repeated(self) -> Spec<T> {
        Spec {
            repeats: true,
            ..self
        }
    }

    /// With another long name.
    pub const fn alias(self, alias: &'static str) -> Spec<T> {
        Spec {
            alias: Some(alias),
            ..self
        }
    }

    /// Taking `value` when not given.
    pub const fn default(self, value: &'static str) -> Spec<T> {
        Spec {
            default: Some(value),
            ..self
        }
    }

    /// Taking one of `values` (or, repeated or comma-separated, several).
    #[cfg_attr(not(feature = "serve"), expect(dead_code))]
    pub const fn one_of(self, values: &'static [&'static str]) -> Spec<T> {
        Spec { values, ..self }
    }

    /// Left out of `--help`.
    pub const fn hidden(self) -> Spec<T> {
        Spec {
            hidden: true,
            ..self
        }
    }

    /// What `--help` says of it.
    pub const fn says(self, help: &'static str) -> Spec<T> {
        Spec { help, ..self }
    }

    /// How messages name it: `-r/--repeat` or `--timeout`.
    pub fn name(&self) -> String {
        match self.short {
            Some(short) => format!("-{short}/--{}", self.long),
            None => format!("--{}", self.long),
        }
    }

    /// Whether it takes a value (always, or when attached).
    pub fn takes_value(&self) -> bool {
        !matches!(self.action, Action::Flag(_) | Action::Count(_))
    }
}

/// A whole number, as Rust's `parse` reads it, or `right` (what a right value would be).
pub fn number<N: std::str::FromStr>(value: &str, right: &'static str) -> Result<N, String> {
    value.parse().map_err(|_| right.to_string())
}

/// A list option's values: every value given, in order.
pub fn push(list: &mut Vec<String>, value: &str) -> Result<(), String> {
    list.push(value.to_string());
    Ok(())
}
