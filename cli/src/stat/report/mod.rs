//! The measurement reported: the runs made into the lines printed ([`gather`]: PMU boxes
//! merged, CPUs added up by [`topology`], counts unscaled by [`verbose`], which also says what
//! is counted where), their numbers ([`summary`]: means, spreads, sections; the metric column,
//! [`metrics`], in perf 7.2's words by [`default_metrics`] and colours by [`thresholds`]),
//! printed in the layout asked for ([`printing`]: perf's table, with [`separated`]'s `-x` and
//! `-j` lines, [`metric_only`]'s columns and [`document`]'s `--json`), `-I`'s intervals as
//! they end ([`intervals`]) and `--plot`'s rates ([`plot`]), to where [`outputs`] opened; and
//! `stat record`'s and `stat report`'s perf stat records ([`recorded`]).
//!
//! Every printer takes one [`Report`], made once from the parsed arguments (the layout, its
//! separator, metric-only, digit grouping, colour, the heading's words, the `-M` metrics...),
//! so that no printer reads the command line (ripgrep's "high" arguments).

pub mod default_metrics;
pub mod document;
pub mod gather;
pub mod intervals;
pub mod metric_only;
pub mod metrics;
pub mod outputs;
pub mod plot;
pub mod printing;
pub mod recorded;
pub mod separated;
pub mod summary;
pub mod thresholds;
pub mod topology;
pub mod verbose;

use std::io::IsTerminal;

use counterhal::metrics::MetricDef;
use counterhal_system::System;

use self::topology::{cpus_heading, label_width};
use crate::stat::arguments::switches::Aggregation;
use crate::stat::arguments::{Format, StatArgs};
use crate::stat::plan::cgroups;

/// How a run's results are printed.
#[derive(Clone, Debug)]
pub struct Report {
    /// The layout: the table, `-x SEP`, `-j` or `--json`.
    pub format: Format,
    /// `--metric-only`: the metrics alone, one column each.
    pub metric_only: bool,
    /// The table groups a count's digits (perf's `--big-num`, on unless `--no-big-num`).
    pub big_numbers: bool,
    /// The table colours a metric value that crosses its threshold ([`colour`]).
    pub colour: bool,
    /// `--interval-clear`: each interval on a cleared screen.
    pub interval_clear: bool,
    /// `--no-csv-summary`: `--summary`'s `-x` lines without `summary` first.
    pub no_csv_summary: bool,
    /// `--table`: each run's elapsed time above the mean's.
    pub runs_table: bool,
    /// What was counted, in the table's heading (`'true'`, `'system wide'`, `process id '42'`).
    pub counted: String,
    /// A command counted alone (no `-p`, `-t`, `-a`, `-C`): its user and system times shown
    /// (perf's `target__none`).
    pub alone: bool,
    /// Each place's counts kept apart (`-A`, `--per-thread`, `--per-core`...).
    pub per_place: bool,
    /// The command's words, for `--json`.
    pub command: Vec<String>,
    /// The place's column of `-I`'s heading, after the time (empty: none).
    pub place_heading: String,
    /// The words of the metric beside an event in the table.
    pub words: MetricWords,
    /// The `-M` metrics, printed under the events.
    pub metrics: Vec<&'static MetricDef>,
    /// perf's cgroup column (`-G`, `--for-each-cgroup`).
    pub cgroups: bool,
    /// What CPUs are added up by (`--per-socket`...), if they are.
    pub aggregation: Option<Aggregation>,
    /// `--no-scale`: counts as read, not scaled for multiplexing.
    pub unscaled: bool,
    /// `--quiet`: no results printed.
    pub quiet: bool,
    /// `-I`: the intervals printed as they end, the whole run's end after them.
    pub intervals: bool,
    /// `--summary`: after the intervals, the whole run as without `-I`.
    pub summary: bool,
    /// The system whose facts the places read (this machine's, with `--sysfs`'s PMUs).
    pub system: System,
    /// The machine the metrics' formulas read: the system, and the CPUs counted where `-a`
    /// or `-C` counts them.
    pub machine: counterhal::metrics::Machine,
}

/// The words of the metric beside an event in the table (`-x` and `-j` keep perf 6.1's
/// always: docs/command.md, "perf 6.1's and perf 7.2's layouts").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricWords {
    /// perf 6.1's (`0.733 CPUs utilized`, `1.701 K/sec`): beside events given with `-e` or
    /// read by `-M`, and in `stat report`.
    Perf61,
    /// perf 7.2's default metrics (`0.7 CPUs  CPUs_utilized`, `1096.8 cs/sec  cs_per_second`):
    /// beside perf's default events, counted without `-e` and `-M`.
    Perf72Defaults,
}

impl Report {
    /// The report `args` ask for, with the `-M` metrics `metrics`.
    pub fn of(args: &StatArgs, metrics: &[&'static MetricDef]) -> Report {
        let alone = args.pid.is_none() && args.more.tid.is_none() && !args.all_cpus;
        Report {
            format: args.format(),
            metric_only: args.more.metric_only,
            big_numbers: args.more.big_numbers(),
            colour: colour(args),
            interval_clear: args.more.interval_clear,
            no_csv_summary: args.more.no_csv_summary,
            runs_table: args.more.table,
            counted: counted(args),
            alone: alone && args.cpu_list.is_none(),
            per_place: args.per_place(),
            command: args.command_words(),
            place_heading: place_heading(args),
            words: match args.event_names.is_empty() && metrics.is_empty() {
                true => MetricWords::Perf72Defaults,
                false => MetricWords::Perf61,
            },
            metrics: metrics.to_vec(),
            cgroups: cgroups::in_use(args),
            aggregation: args.more.aggregation(),
            unscaled: args.more.no_scale,
            quiet: args.more.quiet,
            intervals: args.interval().is_some(),
            summary: args.more.summary,
            system: args.sysfs.system(),
            machine: crate::stat::plan::targets::metrics_facts(args),
        }
    }

    /// A recording's report (`stat report`): perf 7.2's `perf stat report` prints no metric
    /// beside any event, so the table's are perf 6.1's words; `metrics`, those `-M` named
    /// before `report`.
    pub fn recording(args: &StatArgs, metrics: &[&'static MetricDef]) -> Report {
        Report {
            words: MetricWords::Perf61,
            ..Report::of(args, metrics)
        }
    }
}

/// Whether the table colours values: perf's own choice where no perfconfig sets `color.ui`
/// (tools/perf/util/color.c: whether what it writes to is a terminal): the table's stream
/// (standard error; never a file of `-o` or `--log-fd`), or, for `--metric-only`, standard
/// output (perf asks about descriptor 1 there, wherever the table goes).
fn colour(args: &StatArgs) -> bool {
    if args.more.metric_only {
        std::io::stdout().is_terminal()
    } else {
        args.output.is_none() && args.more.log_fd().is_none() && std::io::stderr().is_terminal()
    }
}

/// What was counted, for the table's heading: the command, or (with -p, -a, -C) the process
/// or CPUs while it ran.
fn counted(args: &StatArgs) -> String {
    if let Some(pid) = &args.pid {
        format!("process id '{pid}'")
    } else if let Some(tid) = &args.more.tid {
        format!("thread id '{tid}'")
    } else if args.all_cpus {
        "'system wide'".to_string()
    } else if let Some(list) = &args.cpu_list {
        format!("CPUs '{list}'")
    } else if args.command.is_empty() {
        "'system wide'".to_string()
    } else {
        format!("'{}'", args.command_words().join(" "))
    }
}

/// The place's column of `-I`'s table heading: perf's, after the time.
fn place_heading(args: &StatArgs) -> String {
    match args.more.aggregation() {
        Some(by) => format!(
            " {:<w$}{}",
            by.key(),
            cpus_heading(by.key()),
            w = label_width(by.key())
        ),
        None if args.no_aggregate => " CPU   ".to_string(),
        None if args.per_thread => " thread           ".to_string(),
        None => String::new(),
    }
}
