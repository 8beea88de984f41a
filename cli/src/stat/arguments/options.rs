//! The table of `counterhal stat`'s options, the one place each is described: its short and
//! long names, perf's other long name, the value it takes, whether it may be given more than
//! once, its default, what it sets in [`StatArgs`], and what `--help` says of it; then the
//! rules between options ([`CONFLICTS`], [`REQUIRES`]). `parser` reads the command line by it;
//! `described` makes clap's description of it, which writes `--help`, `docs/cli.md`, the
//! manual page and the completions.

use std::path::PathBuf;

use counterhal::split_event_list;

use super::stat_args::{StatArgs, group_members};
use crate::options::parse_backend;

/// What an option does with what follows it.
#[derive(Clone, Copy)]
pub(super) enum Action {
    /// No value: sets its field.
    Flag(fn(&mut StatArgs)),
    /// No value, counted: each time it is given adds one (`-d`, `-dd`).
    Count(fn(&mut StatArgs)),
    /// One value, text: parsed into its field, or what a right value would be.
    Text(fn(&mut StatArgs, &str) -> Result<(), &'static str>),
    /// One value, a path (any bytes).
    Path(fn(&mut StatArgs, PathBuf)),
    /// A value only when written `--long=VALUE` (`require_equals`) or, without it, the next
    /// word when it is no option.
    Optional(fn(&mut StatArgs, Option<&str>), bool),
}

/// One option: its short and long names, perf's other long name, the value it takes (as
/// `--help` names it), whether it may be given more than once, its default, whether `--help`
/// hides it, what it does and what `--help` says of it.
pub(super) struct Spec {
    /// `-e`.
    pub(super) short: Option<char>,
    /// `--event`.
    pub(super) long: &'static str,
    /// perf's other long name (`--cpu` for `--cpu-list`).
    pub(super) alias: Option<&'static str>,
    /// What `--help` calls its value (`EV[,EV...]`); empty for a switch.
    pub(super) value_name: &'static str,
    /// Whether it may be given more than once.
    pub(super) repeats: bool,
    /// The value taken when the option is not given (`-r`'s 1), set before the words are read.
    pub(super) default: Option<&'static str>,
    /// Left out of `--help` (perf's options refused here, `--iostat`...).
    pub(super) hidden: bool,
    /// What it does with what follows it.
    pub(super) action: Action,
    /// What `--help` says; `None` for an option the command's other subcommands take too
    /// (`--cpu-model`, `--events`, `--descriptions`, `--sysfs`), whose words are theirs
    /// ([`crate::options`]).
    pub(super) help: Option<&'static str>,
}

/// An option of these names and value that does `action`; the rest as the builders below
/// say (given once, no default, shown, no words of its own).
const fn spec(
    short: Option<char>,
    long: &'static str,
    value_name: &'static str,
    action: Action,
) -> Spec {
    Spec {
        short,
        long,
        alias: None,
        value_name,
        repeats: false,
        default: None,
        hidden: false,
        action,
        help: None,
    }
}

/// A switch that sets its field.
const fn flag(short: Option<char>, long: &'static str, set: fn(&mut StatArgs)) -> Spec {
    spec(short, long, "", Action::Flag(set))
}

/// A switch counted each time it is given.
const fn count(short: Option<char>, long: &'static str, add: fn(&mut StatArgs)) -> Spec {
    spec(short, long, "", Action::Count(add)).repeated()
}

/// An option with a value, text.
const fn text(
    short: Option<char>,
    long: &'static str,
    value_name: &'static str,
    set: fn(&mut StatArgs, &str) -> Result<(), &'static str>,
) -> Spec {
    spec(short, long, value_name, Action::Text(set))
}

/// An option with a value, a path, and no short name.
const fn path(
    long: &'static str,
    value_name: &'static str,
    set: fn(&mut StatArgs, PathBuf),
) -> Spec {
    spec(None, long, value_name, Action::Path(set))
}

impl Spec {
    /// Given more than once (a list, or a count).
    const fn repeated(self) -> Spec {
        Spec {
            repeats: true,
            ..self
        }
    }

    /// With perf's other long name.
    const fn alias(self, alias: &'static str) -> Spec {
        Spec {
            alias: Some(alias),
            ..self
        }
    }

    /// Taking `value` when not given.
    const fn default(self, value: &'static str) -> Spec {
        Spec {
            default: Some(value),
            ..self
        }
    }

    /// Left out of `--help`.
    const fn hidden(self) -> Spec {
        Spec {
            hidden: true,
            ..self
        }
    }

    /// What `--help` says of it.
    const fn says(self, help: &'static str) -> Spec {
        Spec {
            help: Some(help),
            ..self
        }
    }

    /// How messages name it: `-r/--repeat` or `--timeout`.
    pub(super) fn name(&self) -> String {
        match self.short {
            Some(short) => format!("-{short}/--{}", self.long),
            None => format!("--{}", self.long),
        }
    }

    /// Whether it takes a value (always, or when attached).
    pub(super) fn takes_value(&self) -> bool {
        !matches!(self.action, Action::Flag(_) | Action::Count(_))
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

/// What `--help` says of the command's words.
pub(super) const COMMAND: &str = "The command to run: after `--`, or from the first word that is not an \
    option (as perf stops reading options there: `stat -e page-faults ls -d /` runs `ls -d /`). \
    A first word `record` is perf's `stat record` (the counts written to `-o`, perf.data by \
    default, `-` for a pipe, as perf's stat records), `report` its `stat report -i FILE`";

/// Every option of `counterhal stat`, in the order `--help` lists them.
pub(super) const OPTIONS: [Spec; 69] = [
    text(Some('e'), "event", "EV[,EV...]", |a, v| {
        push(&mut a.event_names, v)
    })
    .repeated()
    .says(
        "Events to count, comma-separated or repeated (default: perf stat's set); a comma \
        inside a PMU event's `/.../` or a group's `{...}` separates nothing",
    ),
    text(None, "backend", "BACKEND", |a, v| {
        a.backend = Some(parse_backend(v).map_err(|_| "a backend `counterhal info` lists")?);
        Ok(())
    })
    .says("The backend (a name `counterhal info` lists); default: the first that works here"),
    flag(None, "model", |a| a.model = true).says(
        "Count on the backend's device model, where it has one, instead of its device, fed a \
        steady synthetic workload while CMD runs (per 10 ns of the model's clock: 4 \
        instructions, 1 branch, 2 cycles): what the backend would print here, its \
        multiplexing included. The counts are the model's, not this machine's, and the output \
        says so",
    ),
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
    })
    .says(
        "Count existing processes (every thread, and what it creates from now on), one or a \
        comma-separated list, while CMD runs, or without CMD until Ctrl-C or --timeout",
    ),
    flag(Some('a'), "all-cpus", |a| a.all_cpus = true).says(
        "Count every CPU (system wide) while CMD runs, or without CMD until Ctrl-C or \
        --timeout; with -C, the CPUs of -C (as perf's -a -C)",
    ),
    text(Some('C'), "cpu-list", "CPUS", |a, v| {
        a.cpu_list = Some(v.to_string());
        Ok(())
    })
    .alias("cpu")
    .says(
        "Count these CPUs (system wide) while CMD runs, e.g. 0 or 0,2-3 (`--cpu` as in perf; \
        `--cpu-model` names the CPU model)",
    ),
    text(Some('r'), "repeat", "N", |a, v| {
        let right = "a whole number of runs, at least 1, e.g. -r 3";
        a.repeat = number::<u32>(v, right).and_then(|n| if n >= 1 { Ok(n) } else { Err(right) })?;
        Ok(())
    })
    .default("1")
    .says("Run the command N times and print the mean (with the spread)"),
    text(Some('M'), "metrics", "METRIC[,METRIC]", |a, v| {
        push(&mut a.metrics, v)
    })
    .repeated()
    .says(
        "Metrics or metric groups to compute, comma-separated: the CPU model's from the event \
        database (`counterhal list --metrics`) and the portable ones (IPC, CPI, \
        CPUs_utilized, branch_miss_rate, cache_miss_rate, TopdownL1...); their events are \
        added",
    ),
    flag(Some('A'), "no-aggr", |a| a.no_aggregate = true)
        .alias("no-aggregate")
        .says("Print per CPU, not added up (with -a or -C; perf's --no-aggr)"),
    flag(None, "per-thread", |a| a.per_thread = true)
        .says("Print per thread of the process (with -p) or of the threads (with -t)"),
    text(Some('I'), "interval-print", "MS", |a, v| {
        a.interval_ms = Some(number(v, "milliseconds, a whole number, e.g. -I 100")?);
        Ok(())
    })
    .says("Print the counts of every interval of MS milliseconds (at least 10) while counting"),
    text(None, "interval-count", "N", |a, v| {
        let right = "a whole number of intervals, at least 1, e.g. --interval-count 5";
        a.interval_count =
            Some(number::<u32>(v, right).and_then(|n| if n >= 1 { Ok(n) } else { Err(right) })?);
        Ok(())
    })
    .says("Stop after N intervals (with -I)"),
    text(None, "timeout", "MS", |a, v| {
        a.timeout_ms = Some(number(
            v,
            "milliseconds, a whole number, e.g. --timeout 500",
        )?);
        Ok(())
    })
    .says("Stop counting (and the command) after MS milliseconds (at least 10)"),
    path("plot", "FILE.svg", |a, v| a.plot = Some(v))
        .says("With -I: draw each event's rate over time to this SVG file"),
    text(Some('x'), "field-separator", "SEP", |a, v| {
        a.separator = Some(v.to_string());
        Ok(())
    })
    .says(
        "perf's CSV with this separator: value, unit, event, [spread,] time running, percent \
        running, metric value, metric unit (with -I the time first, with -A the CPU)",
    ),
    flag(Some('j'), "json-output", |a| a.json_lines = true)
        .says("perf's JSON: one object per event (and per interval, CPU or thread) per line"),
    flag(None, "json", |a| a.json = true)
        .says("One JSON document for the whole run: the command, its times, every event's reading"),
    Spec {
        short: Some('o'),
        ..path("output", "FILE", |a, v| a.output = Some(v))
    }
    .says(
        "Write the results to FILE instead of standard error (where perf writes them too, so \
        that the command's own output stays clean)",
    ),
    flag(Some('n'), "null", |a| a.more.null = true)
        .says("Null run: count no events, print only the times (perf's -n)"),
    text(Some('D'), "delay", "MS", |a, v| {
        a.more.delay_ms = Some(number(
            v,
            "milliseconds, a whole number (-1: disabled until --control's enable), e.g. -D 100",
        )?);
        Ok(())
    })
    .says(
        "Count only from MS milliseconds after the command starts (-1: start with the events \
        disabled, until --control's `enable`)",
    ),
    text(None, "control", "SPEC", |a, v| {
        a.more.control = Some(v.to_string());
        Ok(())
    })
    .says(
        "Take perf's commands (enable, disable, enable NAME, disable NAME, snapshot, stop, \
        ping) from SPEC, fd:CTL[,ACK] (descriptors) or fifo:CTL[,ACK] (fifos), each \
        acknowledged (`ack`) on ACK",
    ),
    flag(Some('q'), "quiet", |a| a.more.quiet = true)
        .says("Print no results (the command's status is still passed on)"),
    flag(Some('B'), "big-num", |a| a.more.big_num = true)
        .says("Group digits in the table (the default; refused with -x, as perf refuses it)"),
    flag(None, "no-big-num", |a| a.more.no_big_num = true).says("Do not group digits in the table"),
    flag(None, "append", |a| a.more.append = true)
        .says("With -o: add the results to the end of FILE instead of replacing it"),
    text(None, "log-fd", "FD", |a, v| {
        a.more.log_fd = Some(number(
            v,
            "an open file descriptor's number, e.g. --log-fd 3",
        )?);
        Ok(())
    })
    .says(
        "Write the results to this open file descriptor (added to what it holds) instead of \
        standard error",
    ),
    flag(None, "all-user", |a| a.more.all_user = true)
        .says("Count every event in user space only (`:u` added to each event without a modifier)"),
    flag(None, "all-kernel", |a| a.more.all_kernel = true)
        .says("Count every event in the kernel only (`:k` added to each event without a modifier)"),
    text(Some('t'), "tid", "TID[,TID]", |a, v| {
        a.more.tid = Some(v.to_string());
        Ok(())
    })
    .says(
        "Count existing threads (by their thread ids) while CMD runs, or without CMD until \
        Ctrl-C or --timeout",
    ),
    flag(Some('i'), "no-inherit", |a| a.more.no_inherit = true).says(
        "Count the command's own process, not the processes and threads it creates; with -p \
        the process's threads, not the children they create from now on (with -a or -C it \
        changes nothing: CPUs count whatever runs on them)",
    ),
    text(Some('G'), "cgroup", "NAME[,NAME...]", |a, v| {
        let before = events_so_far(a);
        a.more.events_before_cgroups.push(Some(before));
        push(&mut a.more.cgroups, v)
    })
    .repeated()
    .says(
        "With -a or -C: count the events given before it only while tasks of these cgroups \
        run, the n-th name for the n-th event (one name: every event; an empty name: none), \
        each a path under the perf_event (or cgroup2) mount",
    ),
    text(None, "for-each-cgroup", "NAME[,NAME...]", |a, v| {
        push(&mut a.more.for_each_cgroup, v)
    })
    .repeated()
    .says(
        "With -a or -C: count every event once per cgroup, only while that cgroup's tasks run \
        (a list with any of {}[]()|*+?^$: basic regular expressions matched against every \
        cgroup's path, as perf matches them)",
    ),
    text(None, "filter", "FILTER", |a, v| {
        let before = events_so_far(a);
        a.more.events_before_filters.push(before);
        push(&mut a.more.filters, v)
    })
    .repeated()
    .says(
        "Count only the hits of the tracepoint given just before it that FILTER accepts, in \
        the kernel's event-filter syntax (`fd == 1`, `comm ~ \"sh*\" && count > 64`); the \
        fields are in /sys/kernel/tracing/events/SUBSYSTEM/EVENT/format",
    ),
    flag(Some('g'), "group", |a| a.more.group = true)
        .says("Count every event in one group (all together or not at all), as `{a,b,...}` would"),
    count(Some('d'), "detailed", |a| {
        a.more.detailed = a.more.detailed.saturating_add(1)
    })
    .says(
        "Add perf's detailed events to the default set (L1 data cache and last level cache; \
        -dd also L1 instruction cache and TLBs; -ddd also L1 data prefetches)",
    ),
    // --scale and --no-scale override each other: the last one given counts.
    flag(None, "no-scale", |a| {
        (a.more.no_scale, a.more.scale) = (true, false)
    })
    .repeated()
    .says("Print raw counts, not scaled for the time an event was multiplexed out"),
    flag(None, "scale", |a| {
        (a.more.scale, a.more.no_scale) = (true, false)
    })
    .repeated()
    .says("Scale counts for multiplexing (the default)"),
    flag(Some('v'), "verbose", |a| a.more.verbose = true).says(
        "Say which backend counts each event, and why an event cannot be counted, before the \
        results",
    ),
    flag(Some('S'), "sync", |a| a.more.sync = true)
        .says("Call sync before each run (so that dirty pages written back do not land in it)"),
    text(None, "pre", "CMD", |a, v| {
        a.more.pre = Some(v.to_string());
        Ok(())
    })
    .says("Run this shell command before each run (not counted)"),
    text(None, "post", "CMD", |a, v| {
        a.more.post = Some(v.to_string());
        Ok(())
    })
    .says("Run this shell command after each run (not counted)"),
    flag(None, "per-socket", |a| a.more.per_socket = true)
        .says("With -a or -C: add up the CPUs of each socket"),
    flag(None, "per-die", |a| a.more.per_die = true)
        .says("With -a or -C: add up the CPUs of each die"),
    flag(None, "per-core", |a| a.more.per_core = true)
        .says("With -a or -C: add up the CPUs (hardware threads) of each core"),
    flag(None, "per-node", |a| a.more.per_node = true)
        .says("With -a or -C: add up the CPUs of each NUMA node"),
    spec(
        None,
        "per-cache",
        "LEVEL",
        Action::Optional(
            |a, v| a.more.per_cache = Some(v.unwrap_or_default().to_string()),
            true,
        ),
    )
    .says(
        "With -a or -C: add up the CPUs that share each cache of a level: the last level \
        (without a value), or L1 to L4 (`--per-cache=L2`)",
    ),
    flag(None, "per-cluster", |a| a.more.per_cluster = true)
        .says("With -a or -C: add up the CPUs of each cluster (`topology/cluster_id`)"),
    flag(None, "summary", |a| a.more.summary = true).says(
        "With -I: after the intervals, the whole run as without -I (in -x each line starts \
        with `summary`)",
    ),
    flag(None, "no-csv-summary", |a| a.more.no_csv_summary = true)
        .says("With --summary and -x: no `summary` field before the whole run's lines"),
    flag(None, "interval-clear", |a| a.more.interval_clear = true)
        .says("With -I in the table: clear the screen before each interval"),
    flag(None, "table", |a| a.more.table = true).says(
        "With -r in the table: each run's elapsed time, its distance from the mean and a bar",
    ),
    flag(None, "metric-only", |a| a.more.metric_only = true)
        .says("Print the metrics alone, one column each (the metric column's and -M's), no counts"),
    flag(None, "topdown", |a| a.more.topdown = true).says(
        "Count and print the CPU model's top-down metrics of level 1 (metric group TopdownL1; \
        --td-level picks another), alone, as with --metric-only",
    ),
    text(None, "td-level", "N", |a, v| {
        a.more.td_level = Some(number(
            v,
            "a whole number, the top-down level, e.g. --td-level 2",
        )?);
        Ok(())
    })
    .says(
        "With --topdown: the level, 1 up to the deepest TopdownLN group of the CPU model (0: \
        1)",
    ),
    flag(None, "percore-show-thread", |a| {
        a.more.percore_show_thread = true
    })
    .says(
        "Accepted: with no `percore` event term here (perf's), it changes nothing, as perf's \
        does not without one",
    ),
    flag(None, "metric-no-group", |a| a.more.metric_no_group = true)
        .says("Accepted: no metric's events are grouped here (each is opened on its own)"),
    flag(None, "metric-no-merge", |a| a.more.metric_no_merge = true)
        .says("Accepted: every metric's events are counted once, shared between metrics, already"),
    flag(None, "no-merge", |a| a.more.no_merge = true).says(
        "One line per PMU a PMU event names (each `uncore_imc_N` of `uncore_imc/EV/`, named \
        `uncore_imc_N/EV/`), where by default one line adds them up",
    ),
    text(None, "cputype", "TYPE", |a, v| {
        a.more.cputype = Some(v.to_string());
        Ok(())
    })
    .says(
        "On a hybrid CPU: count each event on this kind of core alone (`atom`, `core`, or the \
        PMU's name, `cpu_atom`)",
    ),
    flag(None, "hybrid-merge", |a| a.more.hybrid_merge = true).says(
        "Accepted: an event counted on a hybrid CPU's core and atom PMUs prints as one line, \
        their counts added up, already",
    ),
    flag(Some('b'), "bpf-counters", |a| {
        a.more.refused.bpf_counters = true
    })
    .says(
        "Counts each event through a BPF program shared with other sessions (perf's and \
        counterhal's) by the attr map pinned at /sys/fs/bpf/perf_attr_map; with \
        --for-each-cgroup: each cgroup's events summed by a BPF program at every cgroup \
        switch (needs CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN, or root)",
    ),
    path("bpf-attr-map", "PATH", |a, v| {
        a.more.refused.bpf_attr_map = Some(v)
    })
    .says(
        "With -b: the attr map's path in a BPF file system (perf's default: \
        /sys/fs/bpf/perf_attr_map)",
    ),
    spec(
        None,
        "iostat",
        "ARG",
        Action::Optional(
            |a, v| a.more.refused.iostat = Some(v.map(str::to_string)),
            false,
        ),
    )
    .hidden()
    .says("Not implemented: Intel's uncore I/O stack PMUs"),
    flag(None, "smi-cost", |a| a.more.refused.smi_cost = true)
        .hidden()
        .says("Not implemented: the SMI count and cost"),
    flag(Some('T'), "transaction", |a| {
        a.more.refused.transaction = true
    })
    .hidden()
    .says("Not implemented: the transaction events"),
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
