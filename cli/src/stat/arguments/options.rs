//! The table of `counterhal stat`'s options, the one place each is described: its short and
//! long names, perf's other long name, the value it takes, whether it may be given more than
//! once, its default, what it sets in [`StatArgs`], and what `--help` says of it; then the
//! rules between options ([`CONFLICTS`], [`REQUIRES`]): `StatArgs`' [`Table`], which the one
//! parser ([`crate::args`]) reads the command line by, and describes to clap for `--help`,
//! `docs/cli.md`, the manual page and the completions.

use counterhal::split_event_list;

use super::stat_args::USAGE;
use super::stat_args::{StatArgs, group_members};
use crate::args::spec::{Action, Spec, count, flag, number, path, push, spec, text};
use crate::args::{Table, Words};
use crate::options::{
    Databased, Sysfsed, cpu_model, descriptions, events_file, parse_backend, sysfs,
};

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
pub(super) const OPTIONS: [Spec<StatArgs>; 69] = [
    text(Some('e'), "event", "EV[,EV...]", |a: &mut StatArgs, v| {
        push(&mut a.event_names, v)
    })
    .repeated()
    .says(
        "Events to count, comma-separated or repeated (default: perf stat's set); a comma \
        inside a PMU event's `/.../` or a group's `{...}` separates nothing",
    ),
    text(None, "backend", "BACKEND", |a: &mut StatArgs, v| {
        a.backend = Some(parse_backend(v).map_err(|_| "a backend `counterhal info` lists")?);
        Ok(())
    })
    .says("The backend (a name `counterhal info` lists); default: the first that works here"),
    flag(None, "model", |a: &mut StatArgs| a.model = true).says(
        "Count on the backend's device model, where it has one, instead of its device, fed a \
        steady synthetic workload while CMD runs (per 10 ns of the model's clock: 4 \
        instructions, 1 branch, 2 cycles): what the backend would print here, its \
        multiplexing included. The counts are the model's, not this machine's, and the output \
        says so",
    ),
    cpu_model(),
    events_file(),
    descriptions(),
    sysfs(),
    text(Some('p'), "pid", "PID[,PID]", |a: &mut StatArgs, v| {
        a.pid = Some(v.to_string());
        Ok(())
    })
    .says(
        "Count existing processes (every thread, and what it creates from now on), one or a \
        comma-separated list, while CMD runs, or without CMD until Ctrl-C or --timeout",
    ),
    flag(Some('a'), "all-cpus", |a: &mut StatArgs| a.all_cpus = true).says(
        "Count every CPU (system wide) while CMD runs, or without CMD until Ctrl-C or \
        --timeout; with -C, the CPUs of -C (as perf's -a -C)",
    ),
    text(Some('C'), "cpu-list", "CPUS", |a: &mut StatArgs, v| {
        a.cpu_list = Some(v.to_string());
        Ok(())
    })
    .alias("cpu")
    .says(
        "Count these CPUs (system wide) while CMD runs, e.g. 0 or 0,2-3 (`--cpu` as in perf; \
        `--cpu-model` names the CPU model)",
    ),
    text(Some('r'), "repeat", "N", |a: &mut StatArgs, v| {
        let right = "a whole number of runs, at least 1, e.g. -r 3";
        a.repeat = number::<u32>(v, right).and_then(|n| {
            if n >= 1 {
                Ok(n)
            } else {
                Err(right.to_string())
            }
        })?;
        Ok(())
    })
    .default("1")
    .says("Run the command N times and print the mean (with the spread)"),
    text(
        Some('M'),
        "metrics",
        "METRIC[,METRIC]",
        |a: &mut StatArgs, v| push(&mut a.metrics, v),
    )
    .repeated()
    .says(
        "Metrics or metric groups to compute, comma-separated: the CPU model's from the event \
        database (`counterhal list --metrics`) and the portable ones (IPC, CPI, \
        CPUs_utilized, branch_miss_rate, cache_miss_rate, TopdownL1...); their events are \
        added",
    ),
    flag(Some('A'), "no-aggr", |a: &mut StatArgs| {
        a.no_aggregate = true
    })
    .alias("no-aggregate")
    .says("Print per CPU, not added up (with -a or -C; perf's --no-aggr)"),
    flag(None, "per-thread", |a: &mut StatArgs| a.per_thread = true)
        .says("Print per thread of the process (with -p) or of the threads (with -t)"),
    text(Some('I'), "interval-print", "MS", |a: &mut StatArgs, v| {
        a.interval_ms = Some(number(v, "milliseconds, a whole number, e.g. -I 100")?);
        Ok(())
    })
    .says("Print the counts of every interval of MS milliseconds (at least 10) while counting"),
    text(None, "interval-count", "N", |a: &mut StatArgs, v| {
        let right = "a whole number of intervals, at least 1, e.g. --interval-count 5";
        a.interval_count = Some(number::<u32>(v, right).and_then(|n| {
            if n >= 1 {
                Ok(n)
            } else {
                Err(right.to_string())
            }
        })?);
        Ok(())
    })
    .says("Stop after N intervals (with -I)"),
    text(None, "timeout", "MS", |a: &mut StatArgs, v| {
        a.timeout_ms = Some(number(
            v,
            "milliseconds, a whole number, e.g. --timeout 500",
        )?);
        Ok(())
    })
    .says("Stop counting (and the command) after MS milliseconds (at least 10)"),
    path(None, "plot", "FILE.svg", |a: &mut StatArgs, v| {
        a.plot = Some(v)
    })
    .says("With -I: draw each event's rate over time to this SVG file"),
    text(
        Some('x'),
        "field-separator",
        "SEP",
        |a: &mut StatArgs, v| {
            a.separator = Some(v.to_string());
            Ok(())
        },
    )
    .says(
        "perf's CSV with this separator: value, unit, event, [spread,] time running, percent \
        running, metric value, metric unit (with -I the time first, with -A the CPU)",
    ),
    flag(Some('j'), "json-output", |a: &mut StatArgs| {
        a.json_lines = true
    })
    .says("perf's JSON: one object per event (and per interval, CPU or thread) per line"),
    flag(None, "json", |a: &mut StatArgs| a.json = true)
        .says("One JSON document for the whole run: the command, its times, every event's reading"),
    Spec {
        short: Some('o'),
        ..path(None, "output", "FILE", |a: &mut StatArgs, v| {
            a.output = Some(v)
        })
    }
    .says(
        "Write the results to FILE instead of standard error (where perf writes them too, so \
        that the command's own output stays clean)",
    ),
    flag(Some('n'), "null", |a: &mut StatArgs| a.more.null = true)
        .says("Null run: count no events, print only the times (perf's -n)"),
    text(Some('D'), "delay", "MS", |a: &mut StatArgs, v| {
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
    text(None, "control", "SPEC", |a: &mut StatArgs, v| {
        a.more.control = Some(v.to_string());
        Ok(())
    })
    .says(
        "Take perf's commands (enable, disable, enable NAME, disable NAME, snapshot, stop, \
        ping) from SPEC, fd:CTL[,ACK] (descriptors) or fifo:CTL[,ACK] (fifos), each \
        acknowledged (`ack`) on ACK",
    ),
    flag(Some('q'), "quiet", |a: &mut StatArgs| a.more.quiet = true)
        .says("Print no results (the command's status is still passed on)"),
    flag(Some('B'), "big-num", |a: &mut StatArgs| {
        a.more.big_num = true
    })
    .says("Group digits in the table (the default; refused with -x, as perf refuses it)"),
    flag(None, "no-big-num", |a: &mut StatArgs| {
        a.more.no_big_num = true
    })
    .says("Do not group digits in the table"),
    flag(None, "append", |a: &mut StatArgs| a.more.append = true)
        .says("With -o: add the results to the end of FILE instead of replacing it"),
    text(None, "log-fd", "FD", |a: &mut StatArgs, v| {
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
    flag(None, "all-user", |a: &mut StatArgs| a.more.all_user = true)
        .says("Count every event in user space only (`:u` added to each event without a modifier)"),
    flag(None, "all-kernel", |a: &mut StatArgs| {
        a.more.all_kernel = true
    })
    .says("Count every event in the kernel only (`:k` added to each event without a modifier)"),
    text(Some('t'), "tid", "TID[,TID]", |a: &mut StatArgs, v| {
        a.more.tid = Some(v.to_string());
        Ok(())
    })
    .says(
        "Count existing threads (by their thread ids) while CMD runs, or without CMD until \
        Ctrl-C or --timeout",
    ),
    flag(Some('i'), "no-inherit", |a: &mut StatArgs| {
        a.more.no_inherit = true
    })
    .says(
        "Count the command's own process, not the processes and threads it creates; with -p \
        the process's threads, not the children they create from now on (with -a or -C it \
        changes nothing: CPUs count whatever runs on them)",
    ),
    text(
        Some('G'),
        "cgroup",
        "NAME[,NAME...]",
        |a: &mut StatArgs, v| {
            let before = events_so_far(a);
            a.more.events_before_cgroups.push(Some(before));
            push(&mut a.more.cgroups, v)
        },
    )
    .repeated()
    .says(
        "With -a or -C: count the events given before it only while tasks of these cgroups \
        run, the n-th name for the n-th event (one name: every event; an empty name: none), \
        each a path under the perf_event (or cgroup2) mount",
    ),
    text(
        None,
        "for-each-cgroup",
        "NAME[,NAME...]",
        |a: &mut StatArgs, v| push(&mut a.more.for_each_cgroup, v),
    )
    .repeated()
    .says(
        "With -a or -C: count every event once per cgroup, only while that cgroup's tasks run \
        (a list with any of {}[]()|*+?^$: basic regular expressions matched against every \
        cgroup's path, as perf matches them)",
    ),
    text(None, "filter", "FILTER", |a: &mut StatArgs, v| {
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
    flag(Some('g'), "group", |a: &mut StatArgs| a.more.group = true)
        .says("Count every event in one group (all together or not at all), as `{a,b,...}` would"),
    count(Some('d'), "detailed", |a: &mut StatArgs| {
        a.more.detailed = a.more.detailed.saturating_add(1)
    })
    .says(
        "Add perf's detailed events to the default set (L1 data cache and last level cache; \
        -dd also L1 instruction cache and TLBs; -ddd also L1 data prefetches)",
    ),
    // --scale and --no-scale override each other: the last one given counts.
    flag(None, "no-scale", |a: &mut StatArgs| {
        (a.more.no_scale, a.more.scale) = (true, false)
    })
    .repeated()
    .says("Print raw counts, not scaled for the time an event was multiplexed out"),
    flag(None, "scale", |a: &mut StatArgs| {
        (a.more.scale, a.more.no_scale) = (true, false)
    })
    .repeated()
    .says("Scale counts for multiplexing (the default)"),
    flag(Some('v'), "verbose", |a: &mut StatArgs| {
        a.more.verbose = true
    })
    .says(
        "Say which backend counts each event, and why an event cannot be counted, before the \
        results",
    ),
    flag(Some('S'), "sync", |a: &mut StatArgs| a.more.sync = true)
        .says("Call sync before each run (so that dirty pages written back do not land in it)"),
    text(None, "pre", "CMD", |a: &mut StatArgs, v| {
        a.more.pre = Some(v.to_string());
        Ok(())
    })
    .says("Run this shell command before each run (not counted)"),
    text(None, "post", "CMD", |a: &mut StatArgs, v| {
        a.more.post = Some(v.to_string());
        Ok(())
    })
    .says("Run this shell command after each run (not counted)"),
    flag(None, "per-socket", |a: &mut StatArgs| {
        a.more.per_socket = true
    })
    .says("With -a or -C: add up the CPUs of each socket"),
    flag(None, "per-die", |a: &mut StatArgs| a.more.per_die = true)
        .says("With -a or -C: add up the CPUs of each die"),
    flag(None, "per-core", |a: &mut StatArgs| a.more.per_core = true)
        .says("With -a or -C: add up the CPUs (hardware threads) of each core"),
    flag(None, "per-node", |a: &mut StatArgs| a.more.per_node = true)
        .says("With -a or -C: add up the CPUs of each NUMA node"),
    spec(
        None,
        "per-cache",
        "LEVEL",
        Action::Optional(
            |a: &mut StatArgs, v| a.more.per_cache = Some(v.unwrap_or_default().to_string()),
            true,
        ),
    )
    .says(
        "With -a or -C: add up the CPUs that share each cache of a level: the last level \
        (without a value), or L1 to L4 (`--per-cache=L2`)",
    ),
    flag(None, "per-cluster", |a: &mut StatArgs| {
        a.more.per_cluster = true
    })
    .says("With -a or -C: add up the CPUs of each cluster (`topology/cluster_id`)"),
    flag(None, "summary", |a: &mut StatArgs| a.more.summary = true).says(
        "With -I: after the intervals, the whole run as without -I (in -x each line starts \
        with `summary`)",
    ),
    flag(None, "no-csv-summary", |a: &mut StatArgs| {
        a.more.no_csv_summary = true
    })
    .says("With --summary and -x: no `summary` field before the whole run's lines"),
    flag(None, "interval-clear", |a: &mut StatArgs| {
        a.more.interval_clear = true
    })
    .says("With -I in the table: clear the screen before each interval"),
    flag(None, "table", |a: &mut StatArgs| a.more.table = true).says(
        "With -r in the table: each run's elapsed time, its distance from the mean and a bar",
    ),
    flag(None, "metric-only", |a: &mut StatArgs| {
        a.more.metric_only = true
    })
    .says("Print the metrics alone, one column each (the metric column's and -M's), no counts"),
    flag(None, "topdown", |a: &mut StatArgs| a.more.topdown = true).says(
        "Count and print the CPU model's top-down metrics of level 1 (metric group TopdownL1; \
        --td-level picks another), alone, as with --metric-only",
    ),
    text(None, "td-level", "N", |a: &mut StatArgs, v| {
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
    flag(None, "percore-show-thread", |a: &mut StatArgs| {
        a.more.percore_show_thread = true
    })
    .says(
        "Accepted: with no `percore` event term here (perf's), it changes nothing, as perf's \
        does not without one",
    ),
    flag(None, "metric-no-group", |a: &mut StatArgs| {
        a.more.metric_no_group = true
    })
    .says("Accepted: no metric's events are grouped here (each is opened on its own)"),
    flag(None, "metric-no-merge", |a: &mut StatArgs| {
        a.more.metric_no_merge = true
    })
    .says("Accepted: every metric's events are counted once, shared between metrics, already"),
    flag(None, "no-merge", |a: &mut StatArgs| a.more.no_merge = true).says(
        "One line per PMU a PMU event names (each `uncore_imc_N` of `uncore_imc/EV/`, named \
        `uncore_imc_N/EV/`), where by default one line adds them up",
    ),
    text(None, "cputype", "TYPE", |a: &mut StatArgs, v| {
        a.more.cputype = Some(v.to_string());
        Ok(())
    })
    .says(
        "On a hybrid CPU: count each event on this kind of core alone (`atom`, `core`, or the \
        PMU's name, `cpu_atom`)",
    ),
    flag(None, "hybrid-merge", |a: &mut StatArgs| {
        a.more.hybrid_merge = true
    })
    .says(
        "Accepted: an event counted on a hybrid CPU's core and atom PMUs prints as one line, \
        their counts added up, already",
    ),
    flag(Some('b'), "bpf-counters", |a: &mut StatArgs| {
        a.more.refused.bpf_counters = true
    })
    .says(
        "Counts each event through a BPF program shared with other sessions (perf's and \
        counterhal's) by the attr map pinned at /sys/fs/bpf/perf_attr_map; with \
        --for-each-cgroup: each cgroup's events summed by a BPF program at every cgroup \
        switch (needs CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN, or root)",
    ),
    path(None, "bpf-attr-map", "PATH", |a: &mut StatArgs, v| {
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
            |a: &mut StatArgs, v| a.more.refused.iostat = Some(v.map(str::to_string)),
            false,
        ),
    )
    .hidden()
    .says("Not implemented: Intel's uncore I/O stack PMUs"),
    flag(None, "smi-cost", |a: &mut StatArgs| {
        a.more.refused.smi_cost = true
    })
    .hidden()
    .says("Not implemented: the SMI count and cost"),
    flag(Some('T'), "transaction", |a: &mut StatArgs| {
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

impl Databased for StatArgs {
    fn database(&mut self) -> &mut crate::options::DatabaseArgs {
        &mut self.database
    }
}

impl Sysfsed for StatArgs {
    fn sysfs(&mut self) -> &mut crate::options::SysfsArgs {
        &mut self.sysfs
    }
}

impl Table for StatArgs {
    const NAME: &'static str = "stat";
    const USAGE: &'static str = USAGE;
    const OPTIONS: &'static [Spec<StatArgs>] = &OPTIONS;
    const CONFLICTS: &'static [(&'static str, &'static [&'static str])] = CONFLICTS;
    const REQUIRES: &'static [(&'static str, &'static str, &'static str)] = REQUIRES;
    const WORDS: Words = Words::Command("CMD", COMMAND);

    fn word(&mut self, word: std::ffi::OsString) -> Result<(), String> {
        self.command.push(word);
        Ok(())
    }
}
