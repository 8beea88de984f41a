//! The arguments of `counterhal stat`: what `stat::parser` reads them into (described to clap
//! for `--help`), and the checks that need more than the options (a command to run, a field
//! separator, event names).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use counterhal::{Error, Registration, split_event_list};

use super::switches::Switches;
use crate::error::CliError;
use crate::options::{DatabaseArgs, SysfsArgs, parse_backend};

/// Extra help for `counterhal stat`.
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

/// The usage line printed under an error in the arguments.
pub const USAGE: &str = "counterhal stat [-e EV[,EV...]]... [--backend B [--model]] [--cpu-model MODEL] \
[--events FILE] [-p PID[,PID] [--per-thread] | -a | -C CPUS] [-G CG[,CG...] | --for-each-cgroup CG[,CG...]] \
[-i] [-A] [-r N] [-I MS [--interval-count N]] \
[--timeout MS] [-M METRICS] [--plot FILE.svg] [-x SEP | -j | --json] [-o FILE] \
[[--] CMD [ARGS]]";

/// The shortest interval and timeout, in milliseconds (perf's floor for both).
const SHORTEST_MS: u64 = 10;

/// The events counted when `-e` is not given: perf stat's set.
const DEFAULT_EVENTS: [&str; 8] = [
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
    "cycles",
    "instructions",
    "branches",
    "branch-misses",
];

/// Arguments of `counterhal stat`, as `stat::parser` reads them (clap's description of them
/// serves `--help`, the manual and the completions). `Default` is each field's type's
/// default, but `repeat`'s (1), which the parser sets.
#[derive(Args, Debug, Default)]
pub struct StatArgs {
    /// Events to count, comma-separated or repeated (default: perf stat's set); a comma
    /// inside a PMU event's `/.../` or a group's `{...}` separates nothing.
    #[arg(short = 'e', long = "event", value_name = "EV[,EV...]")]
    pub(super) event_names: Vec<String>,
    /// The backend (a name `counterhal info` lists); default: the first that works here.
    #[arg(long, value_parser = parse_backend)]
    pub(super) backend: Option<&'static Registration>,
    /// Count on the backend's device model, where it has one, instead of its device, fed a steady
    /// synthetic workload while CMD runs (per 10 ns of the model's clock: 4 instructions, 1
    /// branch, 2 cycles): what the backend would print here, its multiplexing included. The
    /// counts are the model's, not this machine's, and the output says so.
    #[arg(long = "model")]
    pub(super) model: bool,
    #[command(flatten)]
    pub(super) database: DatabaseArgs,
    #[command(flatten)]
    pub(super) sysfs: SysfsArgs,
    /// Count existing processes (every thread, and what it creates from now on), one or a
    /// comma-separated list, while CMD runs, or without CMD until Ctrl-C or --timeout.
    #[arg(short = 'p', long = "pid", value_name = "PID[,PID]")]
    pub(super) pid: Option<String>,
    /// Count every CPU (system wide) while CMD runs, or without CMD until Ctrl-C or
    /// --timeout; with -C, the CPUs of -C (as perf's -a -C).
    #[arg(short = 'a', long = "all-cpus")]
    pub(super) all_cpus: bool,
    /// Count these CPUs (system wide) while CMD runs, e.g. 0 or 0,2-3 (`--cpu` as in perf;
    /// `--cpu-model` names the CPU model).
    #[arg(
        short = 'C',
        long = "cpu-list",
        visible_alias = "cpu",
        value_name = "CPUS"
    )]
    pub(super) cpu_list: Option<String>,
    /// Run the command N times and print the mean (with the spread).
    #[arg(short = 'r', long = "repeat", value_name = "N", default_value_t = 1)]
    pub(super) repeat: u32,
    /// Metrics or metric groups to compute, comma-separated: the CPU model's from the event
    /// database (`counterhal list --metrics`) and the portable ones (IPC, CPI, CPUs_utilized,
    /// branch_miss_rate, cache_miss_rate, TopdownL1...); their events are added.
    #[arg(short = 'M', long = "metrics", value_name = "METRIC[,METRIC]")]
    pub(super) metrics: Vec<String>,
    /// Print per CPU, not added up (with -a or -C; perf's --no-aggr).
    #[arg(short = 'A', long = "no-aggr", visible_alias = "no-aggregate")]
    pub(super) no_aggregate: bool,
    /// Print per thread of the process (with -p) or of the threads (with -t).
    #[arg(long = "per-thread")]
    pub(super) per_thread: bool,
    /// Print the counts of every interval of MS milliseconds (at least 10) while counting.
    #[arg(short = 'I', long = "interval-print", value_name = "MS")]
    pub(super) interval_ms: Option<u64>,
    /// Stop after N intervals (with -I).
    #[arg(long = "interval-count", value_name = "N")]
    pub(super) interval_count: Option<u32>,
    /// Stop counting (and the command) after MS milliseconds (at least 10).
    #[arg(long = "timeout", value_name = "MS")]
    pub(super) timeout_ms: Option<u64>,
    /// With -I: draw each event's rate over time to this SVG file.
    #[arg(long = "plot", value_name = "FILE.svg")]
    pub(super) plot: Option<PathBuf>,
    /// perf's CSV with this separator: value, unit, event, [spread,] time running, percent
    /// running, metric value, metric unit (with -I the time first, with -A the CPU).
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub(super) separator: Option<String>,
    /// perf's JSON: one object per event (and per interval, CPU or thread) per line.
    #[arg(short = 'j', long = "json-output")]
    pub(super) json_lines: bool,
    /// One JSON document for the whole run: the command, its times, every event's reading.
    #[arg(long)]
    pub(super) json: bool,
    /// Write the results to FILE instead of standard error (where perf writes them too, so
    /// that the command's own output stays clean).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(super) output: Option<PathBuf>,
    /// perf stat's other switches.
    #[command(flatten)]
    pub(super) more: Switches,
    /// The command to run: after `--`, or from the first word that is not an option (as perf
    /// stops reading options there: `stat -e page-faults ls -d /` runs `ls -d /`). A first
    /// word `record` is perf's `stat record` (the counts written to `-o`, perf.data by
    /// default, `-` for a pipe, as perf's stat records), `report` its `stat report -i FILE`.
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    pub(super) command: Vec<OsString>,
    /// `stat record`'s command line as given: the counts go to `-o` as perf's stat records.
    #[arg(skip)]
    pub(super) record: Option<Vec<OsString>>,
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
            .event_names()
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

    /// The events to count: the names given with `-e`, split at their commas and trimmed,
    /// each group `{a,b}:u` in its members with the group's modifiers (`a:u`, `b:u`), or perf
    /// stat's default set.
    pub fn event_names(&self) -> Vec<String> {
        self.event_groups().0
    }

    /// The events to count (as [`event_names`](Self::event_names)) and the groups among them:
    /// the indices of each `{...}`'s members, counted together or not at all.
    pub fn event_groups(&self) -> (Vec<String>, Vec<Vec<usize>>) {
        if self.more.null {
            return (Vec::new(), Vec::new());
        }
        if self.event_names.is_empty() {
            let mut names: Vec<String> = DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect();
            // Counting CPUs, perf's clock is cpu-clock (perf 6.1's `add_default_attributes`;
            // perf 7.2's Default metrics: `cpu-clock if #target_cpu else task-clock`).
            if self.all_cpus || self.cpu_list.is_some() {
                names[0] = "cpu-clock".to_string();
            }
            self.more.add_detailed(&mut names);
            return (self.more.with_privilege_level(names), Vec::new());
        }
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
        if self.more.group && names.len() > 1 {
            // -g: every event in one group, as `{a,b,...}` around them all.
            groups = vec![(0..names.len()).collect()];
        }
        (self.more.with_privilege_level(names), groups)
    }

    /// For each event of [`event_groups`](Self::event_groups), whether it is a member of a
    /// weak group (`{a,b}:W`), split into its events where it does not open as a group.
    pub fn weak_events(&self) -> Vec<bool> {
        if self.more.null || self.event_names.is_empty() || self.more.group {
            return vec![false; self.event_names().len()];
        }
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

/// Parses `counterhal stat` arguments (without the subcommand's name), for the stat rooms'
/// tests.
#[cfg(test)]
pub fn parse(words: &[&str]) -> Result<StatArgs, String> {
    match super::parser::parse(words.iter().map(std::ffi::OsString::from))
        .map_err(|e| e.error.to_string())?
    {
        super::parser::Parsed::Args(args) => Ok(*args),
        super::parser::Parsed::Help(_) => panic!("{words:?} asks for help"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> StatArgs {
        parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"))
    }

    fn check_error(words: &[&str]) -> String {
        let error = args(words).check().expect_err("a bad argument");
        assert_eq!(error.exit_code, 2, "{words:?}");
        assert_eq!(error.usage, Some(USAGE), "{words:?}");
        error.error.to_string()
    }

    #[test]
    fn a_command_is_required_unless_attached() {
        assert!(check_error(&["-e", "page-faults"]).contains("no command to measure"));
        let mut system_wide = args(&["-e", "page-faults", "-A"]);
        system_wide.default_to_system_wide();
        assert!(system_wide.all_cpus && system_wide.check().is_ok());
        let mut with_command = args(&["-e", "page-faults", "--", "true"]);
        with_command.default_to_system_wide();
        assert!(!with_command.all_cpus);
        assert!(args(&["--", "true"]).check().is_ok());
        for attached in [&["-a"][..], &["-C", "0"], &["-p", "1"], &["--cpu", "0"]] {
            assert!(args(attached).check().is_ok(), "{attached:?}");
        }
    }

    #[test]
    fn splits_intervals_and_timeouts_are_checked() {
        assert!(check_error(&["-I", "5", "--", "true"]).contains("at least 10"));
        assert!(check_error(&["-a", "--timeout", "0"]).contains("--timeout takes"));
        assert!(check_error(&["-A", "--", "true"]).contains("-a or -C"));
        assert!(check_error(&["--per-thread", "-a"]).contains("-p PID"));
        assert!(check_error(&["-r", "2", "-I", "100", "--", "true"]).contains("-r cannot"));
        assert!(check_error(&["-r", "2", "-a", "-A", "--", "true"]).contains("-r cannot"));
        assert!(
            parse(&["--interval-count", "2", "--", "true"]).is_err(),
            "needs -I"
        );
        assert!(parse(&["-I", "100", "--interval-count", "0", "--", "true"]).is_err());
        assert!(parse(&["-I", "-1", "--", "true"]).is_err());
        let ok = args(&["-a", "--no-aggregate", "-I", "100", "--interval-count", "3"]);
        assert!(ok.check().is_ok());
        assert!(ok.per_place());
        assert_eq!(ok.interval(), Some(std::time::Duration::from_millis(100)));
        assert_eq!(ok.interval_count, Some(3));
        assert!(
            args(&["-p", "1", "--per-thread", "--timeout", "10"])
                .check()
                .is_ok()
        );
    }

    #[test]
    fn empty_separators_and_event_names_are_refused() {
        assert!(check_error(&["-x", "", "--", "true"]).contains("field separator"));
        for events in [",page-faults", "page-faults,", " "] {
            let message = check_error(&["-e", events, "--", "true"]);
            assert!(message.contains("empty event name"), "{events}: {message}");
        }
    }

    #[test]
    fn event_names_are_trimmed_and_default_to_perfs_set() {
        let given = args(&[
            "-e",
            "page-faults, task-clock",
            "-e",
            "cycles",
            "--",
            "true",
        ]);
        assert_eq!(given.event_names(), ["page-faults", "task-clock", "cycles"]);
        let default = args(&["--", "true"]).event_names();
        assert_eq!(default.len(), DEFAULT_EVENTS.len());
        assert_eq!(default[0], "task-clock");
    }

    #[test]
    fn commas_inside_pmu_terms_and_groups_separate_nothing() {
        let given = args(&[
            "-e",
            "cpu/event=0x3c,umask=0x1/u,page-faults",
            "-e",
            "{cycles,instructions}:u,msr/tsc/",
            "--",
            "true",
        ]);
        assert_eq!(
            given.event_names(),
            [
                "cpu/event=0x3c,umask=0x1/u",
                "page-faults",
                "cycles:u",
                "instructions:u",
                "msr/tsc/"
            ]
        );
        assert_eq!(split_event_list("a,,b"), ["a", "", "b"]);
        let (names, groups) = given.event_groups();
        assert_eq!(names[2..4], ["cycles:u", "instructions:u"]);
        assert_eq!(groups, [vec![2, 3]]);
        assert_eq!(split_event_list("cpu/a=1,b=2"), ["cpu/a=1,b=2"]);
    }

    #[test]
    fn groups_give_their_members_the_group_s_modifiers() {
        assert_eq!(group_members("page-faults"), None);
        assert_eq!(
            group_members("{a, b:k,cpu/event=1/}:u").unwrap(),
            ["a:u", "b:k:u", "cpu/event=1/u"]
        );
        assert_eq!(group_members("{a,b}").unwrap(), ["a", "b"]);
        assert_eq!(group_members("{a,b}:W").unwrap(), ["a", "b"]);
        assert_eq!(
            group_members("{a,cpu/event=1/}:uW").unwrap(),
            ["a:u", "cpu/event=1/u"]
        );
        assert!(is_weak_group("{a,b}:W") && is_weak_group("{a}:Wu"));
        assert!(!is_weak_group("{a,b}:u") && !is_weak_group("cpu/event=1/"));
        let weak = args(&["-e", "x,{a,b}:W,{c,d}", "--", "true"]).weak_events();
        assert_eq!(weak, [false, true, true, false, false]);
        assert_eq!(group_members("{}").unwrap(), [""]);
        assert!(check_error(&["-e", "{}", "--", "true"]).contains("empty event name"));
        assert!(check_error(&["-e", "{,a}:u", "--", "true"]).contains("empty event name"));
        let (names, groups) = args(&["-e", "x,{a,b},{c}", "--", "true"]).event_groups();
        assert_eq!(names, ["x", "a", "b", "c"]);
        assert_eq!(groups, [vec![1, 2], vec![3]]);
    }

    #[test]
    fn the_format_follows_the_options() {
        assert_eq!(args(&["--", "true"]).format(), Format::Table);
        assert_eq!(
            args(&["-x", ";", "--", "true"]).format(),
            Format::Csv {
                separator: ";".into()
            }
        );
        assert_eq!(args(&["--json", "--", "true"]).format(), Format::Json);
        assert_eq!(args(&["-j", "--", "true"]).format(), Format::JsonLines);
        assert!(parse(&["--json", "-x,", "--", "true"]).is_err());
        assert!(parse(&["-j", "-x,", "--", "true"]).is_err());
        assert!(parse(&["-j", "--json", "--", "true"]).is_err());
    }

    #[test]
    fn the_parser_refuses_what_cannot_go_together() {
        assert!(parse(&["-r", "0", "--", "true"]).is_err());
        assert!(parse(&["-p", "1", "-a", "--", "true"]).is_err());
        // perf takes -a with -C (its CPUs are counted).
        assert!(parse(&["-a", "-C", "0", "--", "true"]).is_ok());
        assert!(parse(&["--backend", "nosuch", "--", "true"]).is_err());
        let ok = args(&["-r", "3", "-C", "0,2-3", "--", "sh", "-c", "exit 3"]);
        assert_eq!(ok.repeat, 3);
        assert_eq!(ok.cpu_list.as_deref(), Some("0,2-3"));
        // perf's --cpu is the CPU list; the model is --cpu-model.
        let perfs = args(&["--cpu", "1", "--cpu-model", "skl", "--", "true"]);
        assert_eq!(perfs.cpu_list.as_deref(), Some("1"));
        assert!(parse(&["--cpu", "0", "-a", "--", "true"]).is_ok());
        assert_eq!(ok.command_words(), ["sh", "-c", "exit 3"]);
    }
}
