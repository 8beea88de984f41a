//! perf stat's switches beyond the core arguments (the `arguments` room): what is
//! printed and where (`-n`, `--quiet`, `-B`, `--no-big-num`, `--append`, `--log-fd`,
//! `--no-scale`, `-v`), what is counted (`--all-user`, `--all-kernel`, `-t`, `-g`, `-d`), what
//! runs around each run (`-S`, `--pre`, `--post`), the options accepted because they change
//! nothing here, and perf's options that cannot work here, refused with the reason.

use clap::Args;
use counterhal::Error;
use counterhal_process::{ForwardSignals, WaitingChild};

use super::topology::Aggregation;
use crate::error::CliError;

/// The events `-d` adds to the default set, level by level (`-d`, `-dd`, `-ddd`), as perf
/// adds them.
const DETAILED: [&[&str]; 3] = [
    &[
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "LLC-loads",
        "LLC-load-misses",
    ],
    &[
        "L1-icache-loads",
        "L1-icache-load-misses",
        "dTLB-loads",
        "dTLB-load-misses",
        "iTLB-loads",
        "iTLB-load-misses",
    ],
    &["L1-dcache-prefetches", "L1-dcache-prefetch-misses"],
];

/// perf stat's switches beyond the core arguments.
#[derive(Args, Debug, Default)]
pub struct Switches {
    /// Null run: count no events, print only the times (perf's -n).
    #[arg(short = 'n', long = "null")]
    pub(super) null: bool,
    /// Count only from MS milliseconds after the command starts (-1: start with the events
    /// disabled, until --control's `enable`).
    #[arg(short = 'D', long = "delay", value_name = "MS")]
    pub(super) delay_ms: Option<i64>,
    /// Take perf's commands (enable, disable, enable NAME, disable NAME, snapshot, stop, ping)
    /// from SPEC, fd:CTL[,ACK] (descriptors) or fifo:CTL[,ACK] (fifos), each acknowledged
    /// (`ack`) on ACK.
    #[arg(long = "control", value_name = "SPEC")]
    pub(super) control: Option<String>,
    /// Print no results (the command's status is still passed on).
    #[arg(short = 'q', long = "quiet")]
    pub(super) quiet: bool,
    /// Group digits in the table (the default; refused with -x, as perf refuses it).
    #[arg(short = 'B', long = "big-num")]
    pub(super) big_num: bool,
    /// Do not group digits in the table.
    #[arg(long = "no-big-num")]
    pub(super) no_big_num: bool,
    /// With -o: add the results to the end of FILE instead of replacing it.
    #[arg(long = "append")]
    pub(super) append: bool,
    /// Write the results to this open file descriptor (added to what it holds) instead of
    /// standard error.
    #[arg(long = "log-fd", value_name = "FD")]
    pub(super) log_fd: Option<u32>,
    /// Count every event in user space only (`:u` added to each event without a modifier).
    #[arg(long = "all-user")]
    pub(super) all_user: bool,
    /// Count every event in the kernel only (`:k` added to each event without a modifier).
    #[arg(long = "all-kernel")]
    pub(super) all_kernel: bool,
    /// Count existing threads (by their thread ids) while CMD runs, or without CMD until
    /// Ctrl-C or --timeout.
    #[arg(short = 't', long = "tid", value_name = "TID[,TID]")]
    pub(super) tid: Option<String>,
    /// Count the command's own process, not the processes and threads it creates; with -p
    /// the process's threads, not the children they create from now on (with -a or -C it
    /// changes nothing: CPUs count whatever runs on them).
    #[arg(short = 'i', long = "no-inherit")]
    pub(super) no_inherit: bool,
    /// With -a or -C: count the events given before it only while tasks of these cgroups
    /// run, the n-th name for the n-th event (one name: every event; an empty name: none),
    /// each a path under the perf_event (or cgroup2) mount.
    #[arg(short = 'G', long = "cgroup", value_name = "NAME[,NAME...]")]
    pub(super) cgroups: Vec<String>,
    /// With -a or -C: count every event once per cgroup, only while that cgroup's tasks run
    /// (a list with any of {}[]()|*+?^$: basic regular expressions matched against every
    /// cgroup's path, as perf matches them).
    #[arg(long = "for-each-cgroup", value_name = "NAME[,NAME...]")]
    pub(super) for_each_cgroup: Vec<String>,
    /// For each `-G` value, how many `-e` values came before it on the command line (`None`:
    /// not known, taken as all of them); filled in from the parser's positions.
    #[arg(skip)]
    pub events_before_cgroups: Vec<Option<usize>>,
    /// Count only the hits of the tracepoint given just before it that FILTER accepts, in the
    /// kernel's event-filter syntax (`fd == 1`, `comm ~ "sh*" && count > 64`); the fields
    /// are in /sys/kernel/tracing/events/SUBSYSTEM/EVENT/format.
    #[arg(long = "filter", value_name = "FILTER")]
    pub(super) filters: Vec<String>,
    /// For each `--filter`, how many events the `-e` values before it name.
    #[arg(skip)]
    pub events_before_filters: Vec<usize>,
    /// Count every event in one group (all together or not at all), as `{a,b,...}` would.
    #[arg(short = 'g', long = "group")]
    pub(super) group: bool,
    /// Add perf's detailed events to the default set (L1 data cache and last level cache;
    /// -dd also L1 instruction cache and TLBs; -ddd also L1 data prefetches).
    #[arg(short = 'd', long = "detailed", action = clap::ArgAction::Count)]
    pub(super) detailed: u8,
    /// Print raw counts, not scaled for the time an event was multiplexed out.
    #[arg(long = "no-scale")]
    pub(super) no_scale: bool,
    /// Scale counts for multiplexing (the default).
    #[arg(long = "scale")]
    pub(super) scale: bool,
    /// Say which backend counts each event, and why an event cannot be counted, before the
    /// results.
    #[arg(short = 'v', long = "verbose")]
    pub(super) verbose: bool,
    /// Call sync before each run (so that dirty pages written back do not land in it).
    #[arg(short = 'S', long = "sync")]
    pub(super) sync: bool,
    /// Run this shell command before each run (not counted).
    #[arg(long = "pre", value_name = "CMD")]
    pub(super) pre: Option<String>,
    /// Run this shell command after each run (not counted).
    #[arg(long = "post", value_name = "CMD")]
    pub(super) post: Option<String>,
    /// With -a or -C: add up the CPUs of each socket.
    #[arg(long = "per-socket")]
    pub(super) per_socket: bool,
    /// With -a or -C: add up the CPUs of each die.
    #[arg(long = "per-die")]
    pub(super) per_die: bool,
    /// With -a or -C: add up the CPUs (hardware threads) of each core.
    #[arg(long = "per-core")]
    pub(super) per_core: bool,
    /// With -a or -C: add up the CPUs of each NUMA node.
    #[arg(long = "per-node")]
    pub(super) per_node: bool,
    /// With -a or -C: add up the CPUs that share each cache of a level: the last level
    /// (without a value), or L1 to L4 (`--per-cache=L2`).
    #[arg(
        long = "per-cache",
        value_name = "LEVEL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub(super) per_cache: Option<String>,
    /// With -a or -C: add up the CPUs of each cluster (`topology/cluster_id`).
    #[arg(long = "per-cluster")]
    pub(super) per_cluster: bool,
    /// With -I: after the intervals, the whole run as without -I (in -x each line starts
    /// with `summary`).
    #[arg(long = "summary")]
    pub(super) summary: bool,
    /// With --summary and -x: no `summary` field before the whole run's lines.
    #[arg(long = "no-csv-summary")]
    pub(super) no_csv_summary: bool,
    /// With -I in the table: clear the screen before each interval.
    #[arg(long = "interval-clear")]
    pub(super) interval_clear: bool,
    /// With -r in the table: each run's elapsed time, its distance from the mean and a bar.
    #[arg(long = "table")]
    pub(super) table: bool,
    /// Print the metrics alone, one column each (the metric column's and -M's), no counts.
    #[arg(long = "metric-only")]
    pub(super) metric_only: bool,
    /// Count and print the CPU model's top-down metrics of level 1 (metric group
    /// TopdownL1; --td-level picks another), alone, as with --metric-only.
    #[arg(long = "topdown")]
    pub(super) topdown: bool,
    /// With --topdown: the level, 1 up to the deepest TopdownLN group of the CPU model (0: 1).
    #[arg(long = "td-level", value_name = "N")]
    pub(super) td_level: Option<u32>,
    /// Accepted: with no `percore` event term here (perf's), it changes nothing, as perf's
    /// does not without one.
    #[arg(long = "percore-show-thread")]
    pub(super) percore_show_thread: bool,
    /// Accepted: no metric's events are grouped here (each is opened on its own).
    #[arg(long = "metric-no-group")]
    pub(super) metric_no_group: bool,
    /// Accepted: every metric's events are counted once, shared between metrics, already.
    #[arg(long = "metric-no-merge")]
    pub(super) metric_no_merge: bool,
    /// One line per PMU a PMU event names (each `uncore_imc_N` of `uncore_imc/EV/`, named
    /// `uncore_imc_N/EV/`), where by default one line adds them up.
    #[arg(long = "no-merge")]
    pub(super) no_merge: bool,
    /// On a hybrid CPU: count each event on this kind of core alone (`atom`, `core`, or
    /// the PMU's name, `cpu_atom`).
    #[arg(long = "cputype", value_name = "TYPE")]
    pub(super) cputype: Option<String>,
    /// Accepted: an event counted on a hybrid CPU's core and atom PMUs prints as one line,
    /// their counts added up, already.
    #[arg(long = "hybrid-merge")]
    pub(super) hybrid_merge: bool,
    /// perf options that cannot work on this machine or need BPF: refused, saying why.
    #[command(flatten)]
    pub(super) refused: Refused,
}

/// perf's options counterhal does not implement: each is recognised and refused with what it
/// would need, on every machine (none depends on this machine lacking something); and
/// `-b`/`--bpf-counters` with `--bpf-attr-map`, which it takes.
#[derive(Args, Debug, Default)]
pub struct Refused {
    /// Counts each event through a BPF program shared with other sessions (perf's and
    /// counterhal's) by the attr map pinned at /sys/fs/bpf/perf_attr_map; with
    /// --for-each-cgroup: each cgroup's events summed by a BPF program at every cgroup
    /// switch (needs CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN, or root).
    #[arg(short = 'b', long = "bpf-counters")]
    pub(super) bpf_counters: bool,
    /// With -b: the attr map's path in a BPF file system (perf's default:
    /// /sys/fs/bpf/perf_attr_map).
    #[arg(long = "bpf-attr-map", value_name = "PATH")]
    pub(super) bpf_attr_map: Option<std::path::PathBuf>,
    /// Not implemented: Intel's uncore I/O stack PMUs.
    #[arg(long = "iostat", hide = true, num_args = 0..=1, value_name = "ARG")]
    pub(super) iostat: Option<Option<String>>,
    /// Not implemented: the SMI count and cost.
    #[arg(long = "smi-cost", hide = true)]
    pub(super) smi_cost: bool,
    /// Not implemented: the transaction events.
    #[arg(short = 'T', long = "transaction", hide = true)]
    pub(super) transaction: bool,
}

impl Refused {
    /// The first refused option given, and why it cannot work here.
    fn reason(&self) -> Option<(&'static str, &'static str)> {
        let checks: [(bool, &'static str, &'static str); 3] = [
            (
                self.iostat.is_some(),
                "--iostat",
                "counterhal does not implement it: it reads Intel's uncore I/O stack PMUs \
                 (Xeon), which the event database does not describe",
            ),
            (
                self.smi_cost,
                "--smi-cost",
                "counterhal does not implement it: it counts SMIs (msr/smi/) with the cpu \
                 PMU's freeze_on_smi set; count `msr/smi/` with -e where the msr PMU has it",
            ),
            (
                self.transaction,
                "-T/--transaction",
                "counterhal does not implement it: it opens the cpu PMU's TSX transaction \
                 events (cycles-t, tx-start, el-start, cycles-ct; Intel Haswell or later); \
                 name them with -e, or use the intx and intxcp modifiers",
            ),
        ];
        checks
            .into_iter()
            .find(|(given, _, _)| *given)
            .map(|(_, option, why)| (option, why))
    }
}

impl Switches {
    /// Whether `--for-each-cgroup`'s cgroups are counted by a BPF program (`-b`).
    pub fn bpf_counters(&self) -> bool {
        self.refused.bpf_counters && !self.for_each_cgroup.is_empty()
    }

    /// `-b` alone: the events counted through leaders shared between sessions, with the attr
    /// map's path where one was given (`--bpf-attr-map`).
    pub fn shared_counters(&self) -> Option<Option<&std::path::Path>> {
        (self.refused.bpf_counters && self.for_each_cgroup.is_empty())
            .then_some(self.refused.bpf_attr_map.as_deref())
    }

    /// Refuses the options that cannot work here, naming the reason.
    ///
    /// # Errors
    /// The option and why it cannot be taken (bad input: the caller adds the usage line).
    pub fn check(&self) -> Result<(), Error> {
        if let Some(level) = &self.per_cache {
            cache_level(level)?;
        }
        if let Some((option, why)) = self.refused.reason() {
            return Err(Error::unsupported(format!("{option}: {why}"))
                .with_hint("see docs/command.md for perf's options counterhal takes"));
        }
        Ok(())
    }

    /// What CPUs are added up by (`--per-socket`, `--per-die`, `--per-core`, `--per-node`).
    pub fn aggregation(&self) -> Option<Aggregation> {
        [
            (self.per_socket, Aggregation::Socket),
            (self.per_die, Aggregation::Die),
            (self.per_core, Aggregation::Core),
            (self.per_node, Aggregation::Node),
            (self.per_cluster, Aggregation::Cluster),
        ]
        .into_iter()
        .find_map(|(given, by)| given.then_some(by))
        .or_else(|| {
            let level = self.per_cache.as_deref()?;
            Some(Aggregation::Cache(cache_level(level).ok()?))
        })
    }

    /// `--topdown`'s level (`--td-level`, 0 where not given), or `None` without `--topdown`.
    pub fn topdown_level(&self) -> Option<u32> {
        self.topdown.then(|| self.td_level.unwrap_or(0))
    }

    /// `--cputype`'s PMU, as given.
    pub fn cputype(&self) -> Option<&str> {
        self.cputype.as_deref()
    }

    /// `--control`'s descriptors or fifos, as given.
    pub fn control(&self) -> Option<&str> {
        self.control.as_deref()
    }

    /// Whether the events start disabled until `--control` enables them (`-D -1`; perf
    /// takes any negative delay so).
    pub fn starts_disabled(&self) -> bool {
        self.delay_ms.is_some_and(|ms| ms < 0)
    }

    /// `-D` as a duration (0: none).
    pub fn delay(&self) -> Option<std::time::Duration> {
        let ms = u64::try_from(self.delay_ms?).ok()?;
        (ms > 0).then(|| std::time::Duration::from_millis(ms))
    }

    /// Whether the table groups digits (perf's default; `--no-big-num` turns it off).
    pub fn big_numbers(&self) -> bool {
        !self.no_big_num
    }

    /// Adds `-d`'s events to the default set `names` (perf adds them after its own).
    pub fn add_detailed(&self, names: &mut Vec<String>) {
        for level in DETAILED.iter().take(usize::from(self.detailed)) {
            names.extend(level.iter().map(|name| name.to_string()));
        }
    }

    /// `names` with `--all-user`'s `:u` or `--all-kernel`'s `:k` added to each event given
    /// without a modifier (a PMU event `pmu/.../` takes it directly); perf's tool events and
    /// events that have modifiers are left as they are.
    pub fn with_privilege_level(&self, names: Vec<String>) -> Vec<String> {
        let modifier = match (self.all_user, self.all_kernel) {
            (true, _) => "u",
            (_, true) => "k",
            _ => return names,
        };
        names
            .into_iter()
            .map(|name| {
                if super::tool::is_tool(&name) || name.contains(':') {
                    // A tool event, an event with its own modifiers, or a tracepoint.
                    name
                } else if name.ends_with('/') {
                    format!("{name}{modifier}")
                } else {
                    format!("{name}:{modifier}")
                }
            })
            .collect()
    }

    /// Runs `--pre` (`before`) or `--post`, and `-S`'s sync before a run, through the shell;
    /// a hook that fails stops the measurement, as perf stops.
    ///
    /// # Errors
    /// A hook that cannot be run or exits with a failure (exit 1), naming it.
    pub fn run_hook(&self, before: bool) -> Result<(), CliError> {
        if before && self.sync {
            run_shell("sync", "-S (sync)")?;
        }
        let (hook, option) = if before {
            (&self.pre, "--pre")
        } else {
            (&self.post, "--post")
        };
        match hook {
            Some(command) => run_shell(command, option),
            None => Ok(()),
        }
    }

    /// The descriptor `--log-fd` sends the results to.
    pub fn log_fd(&self) -> Option<u32> {
        self.log_fd
    }
}

/// The most cache levels `--per-cache` takes (perf's `MAX_CACHE_LVL`).
const CACHE_LEVELS: u32 = 4;

/// `--per-cache`'s level: `None` (the last level) for no value, else `L1` to `L4` (or
/// `l1`...), as perf's `parse_cache_level` (builtin-stat.c) takes it.
fn cache_level(value: &str) -> Result<Option<u32>, Error> {
    if value.is_empty() {
        return Ok(None);
    }
    let form = || {
        Error::invalid_input(format!(
            "--per-cache={value}: Cache level must be of form L[1-{CACHE_LEVELS}], or \
             l[1-{CACHE_LEVELS}]"
        ))
        .with_hint("e.g. --per-cache=L2, or --per-cache for the last level")
    };
    let mut chars = value.chars();
    let (Some('L' | 'l'), Some(digit), None) = (chars.next(), chars.next(), chars.next()) else {
        return Err(form());
    };
    match digit.to_digit(10) {
        Some(level @ 1..=CACHE_LEVELS) => Ok(Some(level)),
        Some(level) if level > CACHE_LEVELS => Err(Error::invalid_input(format!(
            "--per-cache={value}: perf only supports max cache level of {CACHE_LEVELS}"
        ))),
        _ => Err(form()),
    }
}

/// Runs `command` with `sh -c`, its output the user's, started as the measured command is
/// (`SIGPIPE` at its default); the signals that end a command, sent to this process alone,
/// are passed on to it while it runs.
fn run_shell(command: &str, option: &str) -> Result<(), CliError> {
    let could_not = |e: &dyn std::fmt::Display| {
        CliError::failed(Error::new(
            counterhal::ErrorKind::Other,
            format!("{option} `{command}` could not be run: {e}"),
        ))
    };
    let argv = ["sh", "-c", command].map(std::ffi::OsString::from);
    let mut child = WaitingChild::spawn(&argv).map_err(|e| could_not(&e))?;
    let forwarding = ForwardSignals::to(child.pid());
    let ended = child.release().and_then(|()| child.wait());
    drop(forwarding);
    let status = ended.map_err(|e| could_not(&e))?;
    if status.exit_code() == 0 {
        return Ok(());
    }
    Err(CliError::failed(
        Error::new(
            counterhal::ErrorKind::Other,
            format!("{option} `{command}` failed: it {}", status.describe()),
        )
        .with_hint("the measurement stops where a --pre or --post command fails, as perf's does"),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::arguments::parse;

    fn names(words: &[&str], given: &[&str]) -> Vec<String> {
        let args = parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"));
        args.more
            .with_privilege_level(given.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn all_user_and_all_kernel_add_a_modifier_where_there_is_none() {
        let given = [
            "page-faults",
            "cycles:k",
            "cpu/event=0x3c/",
            "sched:sched_switch",
            "duration_time",
        ];
        assert_eq!(
            names(&["--all-user", "--", "true"], &given),
            [
                "page-faults:u",
                "cycles:k",
                "cpu/event=0x3c/u",
                "sched:sched_switch",
                "duration_time"
            ]
        );
        assert_eq!(
            names(&["--all-kernel", "--", "true"], &["page-faults"]),
            ["page-faults:k"]
        );
        assert_eq!(names(&["--", "true"], &["page-faults"]), ["page-faults"]);
        assert!(parse(&["--all-user", "--all-kernel", "--", "true"]).is_err());
    }

    #[test]
    fn detailed_levels_add_perfs_events() {
        let args = parse(&["-dd", "--", "true"]).unwrap();
        let mut names = Vec::new();
        args.more.add_detailed(&mut names);
        assert_eq!(names.len(), 10);
        assert_eq!(names[0], "L1-dcache-loads");
        assert_eq!(names[9], "iTLB-load-misses");
    }

    #[test]
    fn options_not_implemented_are_refused_saying_what_they_need() {
        for (words, expect) in [
            (&["--iostat", "--", "true"][..], "uncore"),
            (&["--smi-cost", "--", "true"], "msr/smi/"),
            (&["-T", "--", "true"], "TSX"),
        ] {
            let args = parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"));
            let error = args.more.check().expect_err("refused");
            let text = error.to_string();
            assert!(text.contains(expect), "{words:?}: {text}");
            // True on every machine: the reason is what counterhal lacks, not this machine.
            assert!(text.contains("does not implement"), "{words:?}: {text}");
            assert!(!text.contains("this machine"), "{words:?}: {text}");
        }
        assert!(
            parse(&["-B", "-x,", "--", "true"]).is_err(),
            "perf refuses it"
        );
        assert!(parse(&["--append", "--", "true"]).is_err(), "needs -o");
        assert!(parse(&["-n", "-e", "page-faults", "--", "true"]).is_err());
    }

    #[test]
    fn hooks_run_and_a_failing_one_stops() {
        let args = parse(&["--pre", "true", "--post", "exit 3", "--", "true"]).unwrap();
        assert!(args.more.run_hook(true).is_ok());
        let error = args.more.run_hook(false).expect_err("exit 3");
        assert!(
            error.error.to_string().contains("--post"),
            "{}",
            error.error
        );
    }
}
