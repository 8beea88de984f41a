//! perf stat's switches beyond the core arguments (`StatArgs`): what is printed and where
//! (`-n`, `--quiet`, `-B`, `--no-big-num`, `--append`, `--log-fd`, `--no-scale`, `-v`), what
//! is counted (`--all-user`, `--all-kernel`, `-t`, `-g`, `-d`), what runs around each run
//! (`-S`, `--pre`, `--post`), how CPUs are added up (`--per-socket`...),
//! the options accepted because they change nothing here, and perf's options that cannot work
//! here, refused with the reason. Each field holds the value of the option it names; what the
//! option means is its help, in `options`.

use counterhal::Error;

/// perf stat's switches beyond the core arguments.
#[derive(Debug, Default)]
pub struct Switches {
    /// `--null` (`-n`).
    pub(crate) null: bool,
    /// `--delay` (`-D`).
    pub(crate) delay_ms: Option<i64>,
    /// `--control`.
    pub(crate) control: Option<String>,
    /// `--quiet` (`-q`).
    pub(crate) quiet: bool,
    /// `--big-num` (`-B`).
    pub(crate) big_num: bool,
    /// `--no-big-num`.
    pub(crate) no_big_num: bool,
    /// `--append`.
    pub(crate) append: bool,
    /// `--log-fd`.
    pub(crate) log_fd: Option<u32>,
    /// `--all-user`.
    pub(crate) all_user: bool,
    /// `--all-kernel`.
    pub(crate) all_kernel: bool,
    /// `--tid` (`-t`).
    pub(crate) tid: Option<String>,
    /// `--no-inherit` (`-i`).
    pub(crate) no_inherit: bool,
    /// `--cgroup` (`-G`).
    pub(crate) cgroups: Vec<String>,
    /// `--for-each-cgroup`.
    pub(crate) for_each_cgroup: Vec<String>,
    /// For each `-G` value, how many `-e` values came before it on the command line (`None`:
    /// not known, taken as all of them); filled in from the parser's positions.
    pub events_before_cgroups: Vec<Option<usize>>,
    /// `--filter`.
    pub(crate) filters: Vec<String>,
    /// For each `--filter`, how many events the `-e` values before it name.
    pub events_before_filters: Vec<usize>,
    /// `--group` (`-g`).
    pub(crate) group: bool,
    /// `--detailed` (`-d`).
    pub(crate) detailed: u8,
    /// `--no-scale`.
    pub(crate) no_scale: bool,
    /// `--scale`.
    pub(crate) scale: bool,
    /// `--verbose` (`-v`).
    pub(crate) verbose: bool,
    /// `--sync` (`-S`).
    pub(crate) sync: bool,
    /// `--pre`.
    pub(crate) pre: Option<String>,
    /// `--post`.
    pub(crate) post: Option<String>,
    /// `--per-socket`.
    pub(crate) per_socket: bool,
    /// `--per-die`.
    pub(crate) per_die: bool,
    /// `--per-core`.
    pub(crate) per_core: bool,
    /// `--per-node`.
    pub(crate) per_node: bool,
    /// `--per-cache`.
    pub(crate) per_cache: Option<String>,
    /// `--per-cluster`.
    pub(crate) per_cluster: bool,
    /// `--summary`.
    pub(crate) summary: bool,
    /// `--no-csv-summary`.
    pub(crate) no_csv_summary: bool,
    /// `--interval-clear`.
    pub(crate) interval_clear: bool,
    /// `--table`.
    pub(crate) table: bool,
    /// `--metric-only`.
    pub(crate) metric_only: bool,
    /// `--topdown`.
    pub(crate) topdown: bool,
    /// `--td-level`.
    pub(crate) td_level: Option<u32>,
    /// `--percore-show-thread`.
    pub(crate) percore_show_thread: bool,
    /// `--metric-no-group`.
    pub(crate) metric_no_group: bool,
    /// `--metric-no-merge`.
    pub(crate) metric_no_merge: bool,
    /// `--no-merge`.
    pub(crate) no_merge: bool,
    /// `--cputype`.
    pub(crate) cputype: Option<String>,
    /// `--hybrid-merge`.
    pub(crate) hybrid_merge: bool,
    /// perf options that cannot work on this machine or need BPF: refused, saying why.
    pub(crate) refused: Refused,
}

/// perf's options counterhal does not implement: each is recognised and refused with what it
/// would need, on every machine (none depends on this machine lacking something); and
/// `-b`/`--bpf-counters` with `--bpf-attr-map`, which it takes.
#[derive(Debug, Default)]
pub struct Refused {
    /// `--bpf-counters` (`-b`).
    pub(crate) bpf_counters: bool,
    /// `--bpf-attr-map`.
    pub(crate) bpf_attr_map: Option<std::path::PathBuf>,
    /// `--iostat`.
    pub(crate) iostat: Option<Option<String>>,
    /// `--smi-cost`.
    pub(crate) smi_cost: bool,
    /// `--transaction` (`-T`).
    pub(crate) transaction: bool,
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

    /// The descriptor `--log-fd` sends the results to.
    pub fn log_fd(&self) -> Option<u32> {
        self.log_fd
    }
}

/// What CPUs are added up by (`--per-socket`, `--per-die`, `--per-core`, `--per-node`,
/// `--per-cluster`, `--per-cache`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    /// The socket (physical package).
    Socket,
    /// The die within the socket.
    Die,
    /// The core within the die.
    Core,
    /// The NUMA node.
    Node,
    /// The cluster within the die (`--per-cluster`).
    Cluster,
    /// The cache of a level (`None`: the last level) that CPUs share (`--per-cache`).
    Cache(Option<u32>),
}

impl Aggregation {
    /// perf's JSON key for the label: `socket`, `die`, `core`, `node`, `cluster`, `cache`.
    pub fn key(self) -> &'static str {
        match self {
            Aggregation::Socket => "socket",
            Aggregation::Die => "die",
            Aggregation::Core => "core",
            Aggregation::Node => "node",
            Aggregation::Cluster => "cluster",
            Aggregation::Cache(_) => "cache",
        }
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

#[cfg(test)]
#[path = "switches_tests.rs"]
mod tests;
