//! What the command line of `counterhal stat` gives, read by `parser` into [`StatArgs`]: each
//! option's value as given, the event lists as written (split at their commas, a group's
//! modifiers given to its members), and the checks that need more than one option (a command
//! to run, a field separator, event names). What to count is the plan's to decide; how to
//! print, the report's.

use std::ffi::OsString;
use std::path::PathBuf;

use counterhal::{Error, Registration, split_event_list};

use super::switches::Switches;
use crate::error::CliError;
use crate::options::{DatabaseArgs, SysfsArgs};

/// The usage line printed under an error in the arguments.
pub const USAGE: &str = "counterhal stat [-e EV[,EV...]]... [--backend B [--model]] [--cpu-model MODEL] \
[--events FILE] [-p PID[,PID] [--per-thread] | -a | -C CPUS] [-G CG[,CG...] | --for-each-cgroup CG[,CG...]] \
[-i] [-A] [-r N] [-I MS [--interval-count N]] \
[--timeout MS] [-M METRICS] [--plot FILE.svg] [-x SEP | -j | --json] [-o FILE] \
[[--] CMD [ARGS]]";

/// The shortest interval and timeout, in milliseconds (perf's floor for both).
const SHORTEST_MS: u64 = 10;

/// The arguments of `counterhal stat`, as `parser` reads them by the table of `options`,
/// which also says what `--help` tells of each. `Default` is each field's type's default; the
/// parser starts from the table's defaults (`-r`'s 1).
#[derive(Debug, Default)]
pub struct StatArgs {
    /// `-e`: the event lists, as given.
    pub(crate) event_names: Vec<String>,
    /// `--backend`: the backend named.
    pub(crate) backend: Option<&'static Registration>,
    /// `--model`: count on the backend's device model.
    pub(crate) model: bool,
    /// `--cpu-model`, `--events`, `--descriptions`: the event database and CPU model.
    pub(crate) database: DatabaseArgs,
    /// `--sysfs`: the sysfs tree the PMUs are read from.
    pub(crate) sysfs: SysfsArgs,
    /// `-p`: the processes to count, as given.
    pub(crate) pid: Option<String>,
    /// `-a`: every CPU.
    pub(crate) all_cpus: bool,
    /// `-C`: the CPUs to count, as given.
    pub(crate) cpu_list: Option<String>,
    /// `-r`: how many runs.
    pub(crate) repeat: u32,
    /// `-M`: the metric lists, as given.
    pub(crate) metrics: Vec<String>,
    /// `-A`: per CPU.
    pub(crate) no_aggregate: bool,
    /// `--per-thread`: per thread.
    pub(crate) per_thread: bool,
    /// `-I`: the interval, in milliseconds.
    pub(crate) interval_ms: Option<u64>,
    /// `--interval-count`: how many intervals.
    pub(crate) interval_count: Option<u32>,
    /// `--timeout`: when to stop, in milliseconds.
    pub(crate) timeout_ms: Option<u64>,
    /// `--plot`: the SVG file to draw to.
    pub(crate) plot: Option<PathBuf>,
    /// `-x`: the field separator.
    pub(crate) separator: Option<String>,
    /// `-j`: perf's JSON lines.
    pub(crate) json_lines: bool,
    /// `--json`: one JSON document.
    pub(crate) json: bool,
    /// `-o`: the file the results (or `stat record`'s records) go to.
    pub(crate) output: Option<PathBuf>,
    /// perf stat's other switches.
    pub(crate) more: Switches,
    /// The command to run, and its arguments.
    pub(crate) command: Vec<OsString>,
    /// `stat record`'s command line as given: the counts go to `-o` as perf's stat records.
    pub(crate) record: Option<Vec<OsString>>,
}

/// How the results are written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// perf's table (the default).
    Table,
    /// One line per event, fields separated by `separator` (`-x`).
    Csv {
        /// What stands between fields.
        separator: String,
    },
    /// perf's JSON lines (`-j`).
    JsonLines,
    /// One JSON document (`--json`).
    Json,
}

impl StatArgs {
    /// No command and no target (`-p`, `-t`, `-a`, `-C`) counts every CPU, as perf's
    /// `setup_system_wide` makes `-a` the target when `target__none` and nothing forks
    /// (builtin-stat.c); `--model` still needs a command.
    pub fn default_to_system_wide(&mut self) {
        let targeted = self.pid.is_some()
            || self.more.tid.is_some()
            || self.all_cpus
            || self.cpu_list.is_some();
        if self.command.is_empty() && !targeted && !self.model {
            self.all_cpus = true;
        }
    }

    /// Checks what the parser does not: that there is a command to run (or a target: see
    /// [`default_to_system_wide`](Self::default_to_system_wide)), that `-x` names a separator,
    /// that no event name is empty.
    ///
    /// # Errors
    /// Bad input (exit 2) with the usage line.
    pub fn check(&self) -> Result<(), CliError> {
        self.more.check().map_err(|e| CliError::usage(e, USAGE))?;
        let attached = self.pid.is_some()
            || self.more.tid.is_some()
            || self.all_cpus
            || self.cpu_list.is_some();
        if self.command.is_empty() && !attached {
            return Err(CliError::usage(
                Error::invalid_input("no command to measure").with_hint(
                    "give the command after `--`, e.g. `counterhal stat -- ls`; -p, -a or -C \
                     alone count until Ctrl-C or --timeout",
                ),
                USAGE,
            ));
        }
        let refuse = |message: &str, hint: &str| {
            Err(CliError::usage(
                Error::invalid_input(message.to_string()).with_hint(hint.to_string()),
                USAGE,
            ))
        };
        for (option, value) in [("-I", self.interval_ms), ("--timeout", self.timeout_ms)] {
            if value.is_some_and(|ms| ms < SHORTEST_MS) {
                return refuse(
                    &format!("{option} takes at least {SHORTEST_MS} milliseconds"),
                    &format!("e.g. {option} 100"),
                );
            }
        }
        if self.no_aggregate && !(self.all_cpus || self.cpu_list.is_some()) {
            return refuse(
                "-A (per CPU) needs CPUs to count: -a or -C",
                "e.g. counterhal stat -a -A -- sleep 1",
            );
        }
        if let Some(by) = self.more.aggregation()
            && !(self.all_cpus || self.cpu_list.is_some())
        {
            return refuse(
                &format!("--per-{} needs CPUs to count: -a or -C", by.key()),
                "e.g. counterhal stat -a --per-core -- sleep 1",
            );
        }
        let cgroups = !self.more.cgroups.is_empty() || !self.more.for_each_cgroup.is_empty();
        if cgroups && !(self.all_cpus || self.cpu_list.is_some()) {
            return refuse(
                "-G/--cgroup and --for-each-cgroup count CPU-wide while a cgroup's tasks run: \
                 they need -a or -C (as perf's do)",
                "e.g. counterhal stat -a -e task-clock -G NAME -- sleep 1",
            );
        }
        if !self.more.cgroups.is_empty() && self.event_names.is_empty() {
            return refuse(
                "-G applies to the events given before it with -e, and there are none \
                 (events must be defined before cgroups, perf's rule)",
                "e.g. counterhal stat -a -e task-clock,page-faults -G NAME -- sleep 1",
            );
        }
        if self.per_thread && self.pid.is_none() && self.more.tid.is_none() {
            return refuse(
                "--per-thread needs a process or threads: -p PID or -t TID[,TID]",
                "e.g. counterhal stat -p $(pidof NAME) --per-thread",
            );
        }
        let split = self.interval_ms.is_some() || self.per_place();
        if self.repeat > 1 && split {
            return refuse(
                "-r cannot be combined with -I, -A, --per-thread or --per-core (socket, die, node)",
                "repeat the whole measurement, or split one run",
            );
        }
        if self.separator.as_deref() == Some("") {
            return Err(CliError::usage(
                Error::invalid_input("an empty field separator for -x")
                    .with_hint("give one, e.g. -x, or -x ';'"),
                USAGE,
            ));
        }
        if self
            .given_events()
            .0
            .iter()
            .any(|name| name.is_empty() || name.starts_with(':'))
        {
            return Err(CliError::usage(
                Error::invalid_input("an empty event name in -e")
                    .with_hint("name events separated by commas, e.g. -e page-faults,task-clock"),
                USAGE,
            ));
        }
        Ok(())
    }

    /// The events `-e` names, as written: its lists split at their commas and trimmed, each
    /// group `{a,b}:u` in its members with the group's modifiers (`a:u`, `b:u`); and the groups
    /// among them, the indices of each `{...}`'s members.
    pub fn given_events(&self) -> (Vec<String>, Vec<Vec<usize>>) {
        let mut names = Vec::new();
        let mut groups = Vec::new();
        for item in self
            .event_names
            .iter()
            .flat_map(|list| split_event_list(list))
        {
            match group_members(item.trim()) {
                Some(members) => {
                    groups.push((names.len()..names.len() + members.len()).collect());
                    names.extend(members);
                }
                None => names.push(item.trim().to_string()),
            }
        }
        (names, groups)
    }

    /// For each event of [`given_events`](Self::given_events), whether it is a member of a
    /// weak group (`{a,b}:W`).
    pub fn weak_given(&self) -> Vec<bool> {
        self.event_names
            .iter()
            .flat_map(|list| split_event_list(list))
            .flat_map(|item| {
                let item = item.trim();
                let members = group_members(item).map_or(1, |members| members.len());
                std::iter::repeat_n(is_weak_group(item), members)
            })
            .collect()
    }

    /// How the results are written: `--json`, `-j`, `-x SEP` or the table.
    pub fn format(&self) -> Format {
        match (&self.separator, self.json, self.json_lines) {
            (_, true, _) => Format::Json,
            (_, false, true) => Format::JsonLines,
            (Some(separator), false, false) => Format::Csv {
                separator: separator.clone(),
            },
            (None, false, false) => Format::Table,
        }
    }

    /// Whether each CPU's or thread's counts are kept apart (`-A`, `--per-thread`, and
    /// `--per-core` and its kind, which add them up afterwards).
    pub fn per_place(&self) -> bool {
        self.no_aggregate || self.per_thread || self.more.aggregation().is_some()
    }

    /// `-I` as a duration.
    pub fn interval(&self) -> Option<std::time::Duration> {
        self.interval_ms.map(std::time::Duration::from_millis)
    }

    /// `--timeout` as a duration.
    pub fn timeout(&self) -> Option<std::time::Duration> {
        self.timeout_ms.map(std::time::Duration::from_millis)
    }

    /// The command's words as text (invalid UTF-8 replaced), for the reader.
    pub fn command_words(&self) -> Vec<String> {
        self.command
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect()
    }
}

/// The members of a group `{a,b}:MODS` as perf reads them, each with the group's modifiers
/// (`a:MODS`; a PMU event's `cpu/.../` takes them directly) but `W`, the group's own;
/// `None` for a name that is not a group. An empty member stays empty (refused by the check).
pub fn group_members(item: &str) -> Option<Vec<String>> {
    let inner = item.strip_prefix('{')?;
    let close = inner.rfind('}')?;
    let modifiers = inner[close + 1..].trim_start_matches(':').replace('W', "");
    let modifiers = modifiers.as_str();
    let members = split_event_list(&inner[..close])
        .into_iter()
        .map(|member| {
            let member = member.trim();
            match (modifiers, member.ends_with('/')) {
                ("", _) => member.to_string(),
                (_, true) => format!("{member}{modifiers}"),
                (_, false) => format!("{member}:{modifiers}"),
            }
        })
        .collect();
    Some(members)
}

/// Whether `item` is a weak group, `{a,b}:W` (perf's `W` modifier): counted as a group where
/// it opens as one, else each member on its own, as perf's `evlist__reset_weak_group` splits it.
pub fn is_weak_group(item: &str) -> bool {
    item.strip_prefix('{')
        .and_then(|inner| inner.rfind('}').map(|close| &inner[close + 1..]))
        .is_some_and(|modifiers| modifiers.contains('W'))
}

#[cfg(test)]
#[path = "stat_args_tests.rs"]
mod tests;
