//! `counterhal serve`: the Prometheus exporter, a crate of its own (`counterhal-serve`) that
//! the command links by its default feature `serve`, given the event database and CPU model
//! the command's options name. Without the feature, `serve` says that this build has no
//! exporter.

use std::process::ExitCode;

use crate::error::CliError;

#[cfg(feature = "serve")]
use crate::args::Table;
#[cfg(feature = "serve")]
use crate::args::spec::{Spec, flag, many, path, push, text};
#[cfg(feature = "serve")]
use crate::options::{DatabaseArgs, Databased, cpu_model, descriptions, events_file};
#[cfg(feature = "serve")]
use counterhal_serve::options;

/// `counterhal serve`'s options: the exporter's and the event database's.
#[cfg(feature = "serve")]
#[derive(Debug, Default)]
pub struct ServeCommand {
    /// What the exporter is asked to do.
    pub serve: counterhal_serve::Config,
    /// `--cpu-model`, `--events`, `--descriptions`.
    pub database: DatabaseArgs,
    /// Whether `--kubelet-log-labels` was given (its values then replace the default).
    labels_given: bool,
}

#[cfg(feature = "serve")]
impl Databased for ServeCommand {
    fn database(&mut self) -> &mut DatabaseArgs {
        &mut self.database
    }
}

#[cfg(feature = "serve")]
impl Table for ServeCommand {
    const NAME: &'static str = "serve";
    const USAGE: &'static str = counterhal_serve::USAGE;
    const OPTIONS: &'static [Spec<ServeCommand>] = &[
        text(None, "listen", "ADDR:PORT", |a: &mut ServeCommand, v| {
            a.serve.listen = options::listen(v)?;
            Ok(())
        })
        .default(options::DEFAULT_LISTEN)
        .says(
            "The address and port to serve on, in \
            node_exporter's --web.listen-address forms: ADDR:PORT, [IPv6]:PORT, HOST:PORT \
            (resolved at start) or :PORT (every address); loopback by default; port 0 takes \
            a free one, and the address served is printed on standard error",
        ),
        text(
            Some('e'),
            "event",
            "EV[,EV...]",
            |a: &mut ServeCommand, v| push(&mut a.serve.events, v),
        )
        .repeated()
        .says(
            "Events to count, as stat takes them (default: perf stat's set, as stat's: \
            task-clock, context-switches, cpu-migrations, page-faults, cycles, instructions, \
            branches, branch-misses; those that do not open here are reported, not counted)",
        ),
        text(
            Some('M'),
            "metrics",
            "METRIC[,METRIC]",
            |a: &mut ServeCommand, v| {
                v.split(',')
                    .try_for_each(|metric| push(&mut a.serve.metrics, metric))
            },
        )
        .repeated()
        .says(
            "Count the events these metrics (or metric groups) read, as stat -M names them \
            (with --rules: print the metrics as Prometheus recording rules instead of \
            serving)",
        ),
        flag(None, "rules", |a: &mut ServeCommand| a.serve.rules = true).says(
            "Print the -M metrics as Prometheus recording rules over the exported counters \
            (YAML for a rules file; `promtool check rules` reads it) and exit",
        ),
        text(
            None,
            "rules-window",
            "DURATION",
            |a: &mut ServeCommand, v| {
                a.serve.rules_window = options::promql_duration(v)?;
                Ok(())
            },
        )
        .default("1m")
        .says(
            "The window of the rules' rate(), a PromQL duration from 1ms to \
            292y171d23h47m16s854ms (units y w d h m s ms, largest first: 5m, 1h30m)",
        ),
        many("cgroups", "PATTERN", |a: &mut ServeCommand, v| {
            push(&mut a.serve.cgroups, v)
        })
        .says(
            "Count the events in each cgroup (v2) whose path below the cgroup mount matches: \
            perf's --for-each-cgroup list (names, or, where it holds one of {}[]()|*+?^$, \
            regular expressions as Prometheus writes them, extended (RE2's syntax: \
            `^a/(b|c)$`), matched anywhere in the path; an empty item is the root). Cgroups \
            are found again at each scrape; how many match is said at start and exported",
        ),
        text(None, "cgroup-depth", "N", |a: &mut ServeCommand, v| {
            a.serve.cgroup_depth = Some(options::within(v, 1, 1000)?);
            Ok(())
        })
        .says(
            "Follow cgroups at most N levels below the mount (a cgroup counts its \
            descendants' tasks too, so a pod's cgroup counts its containers): with \
            --cgroups, those it matches no deeper than N; alone, every cgroup 1 to N levels \
            down. --max-cgroups bounds both",
        ),
        text(None, "max-cgroups", "N", |a: &mut ServeCommand, v| {
            a.serve.max_cgroups = options::within(v, 0, 4096)?;
            Ok(())
        })
        .default("64")
        .says(
            "The most cgroups followed at once; matching cgroups past it are left out and \
            counted by counterhal_cgroups_dropped_total",
        ),
        text(
            None,
            "departed-for",
            "DURATION",
            |a: &mut ServeCommand, v| {
                a.serve.departed_for = options::departed_for(v)?;
                Ok(())
            },
        )
        .default("10m")
        .says(
            "How long a removed cgroup's last counts stay exported after a scrape first reads \
            them, a Prometheus duration (30s, 10m, 1h): long enough for the other Prometheus \
            of an HA pair, restarted or rolled out meanwhile, to read them when it is back",
        ),
        text(None, "departed-max", "N", |a: &mut ServeCommand, v| {
            a.serve.departed_max = options::within(v, 0, usize::MAX)?;
            Ok(())
        })
        .default("1024")
        .says(
            "The most removed cgroups whose last counts are kept for a scrape; past it the \
            oldest are let go, counted by counterhal_cgroups_departed_evicted_total where no \
            scrape had read them (each holds one reading per event, about 100 bytes and its \
            labels)",
        ),
        path(None, "records", "DIR", |a: &mut ServeCommand, v| {
            a.serve.records = Some(v);
        })
        .says(
            "Keep a record of each followed cgroup's whole counts when it is removed (a Slurm \
            job, a pod, a container that ended): one JSON line in DIR/journal (made where it \
            is not there; /var/lib/counterhal/records is where `counterhal jobs` looks), \
            served by /records and printed by `counterhal jobs`; off where not given",
        ),
        text(None, "records-size", "BYTES", |a: &mut ServeCommand, v| {
            a.serve.records_size = options::bytes(v)?;
            Ok(())
        })
        .default("8M")
        .says(
            "The most bytes a journal file holds, with K, M or G (4K to 1T): past it the \
            journal is rotated (journal to journal.1, journal.1 to journal.2...)",
        ),
        text(None, "records-files", "N", |a: &mut ServeCommand, v| {
            a.serve.records_files = options::within(v, 1, 1000)?;
            Ok(())
        })
        .default("4")
        .says(
            "The journal's files kept, the current one included; the oldest past them is \
            dropped, so the journal holds at most N times --records-size",
        ),
        text(None, "cgroup-mode", "MODE", |a: &mut ServeCommand, v| {
            a.serve.cgroup_mode = options::cgroup_mode(v)?;
            Ok(())
        })
        .default("auto")
        .one_of(&options::CGROUP_MODES)
        .says(
            "How the cgroups are counted: bpf (each event once per CPU, summed per cgroup by \
            a BPF program at every context switch: no descriptor per cgroup; needs Linux \
            5.10, cgroup v2, CAP_BPF and CAP_PERFMON or root), perf-events (one perf event \
            per event, CPU and cgroup), or auto (bpf where it works, else perf-events, \
            saying why at start)",
        ),
        text(
            None,
            "kubelet-cgroup-root",
            "PATH",
            |a: &mut ServeCommand, v| {
                a.serve.kubelet_cgroup_root = options::kubelet_root(v)?;
                Ok(())
            },
        )
        .default("/")
        .says(
            "The kubelet's --cgroup-root (cgroupRoot in its configuration file), as it takes \
            it: pods' cgroups get their pod_uid, container_id and qos_class labels only \
            below its kubepods (/kubepods/... or /kubepods.slice/... at the top of the mount \
            by default; /kubelet/kubepods/... or /kubelet.slice/kubelet-kubepods.slice/... \
            for kind's /kubelet)",
        ),
        path(None, "kubelet-logs", "DIR", |a: &mut ServeCommand, v| {
            a.serve.kubelet_logs = Some(v)
        })
        .says(
            "The directory of the kubelet's log directories, /var/log on a node: pods' \
            cgroups get their namespace and pod labels, and containers' their container \
            label, from the names the kubelet gives its pods/NAMESPACE_POD_UID directories \
            and containers/POD_NAMESPACE_CONTAINER-ID.log links there (no file in them is \
            read), read again as pods come; off unless given",
        ),
        text(
            None,
            "kubelet-log-labels",
            "LABEL[,LABEL]",
            |a: &mut ServeCommand, v| {
                // The values given take the place of the default (every name).
                if !a.labels_given {
                    a.serve.kubelet_log_labels.clear();
                    a.labels_given = true;
                }
                a.serve.kubelet_log_labels.extend(options::name_labels(v)?);
                Ok(())
            },
        )
        .repeated()
        .default("namespace,pod,container")
        .one_of(&options::NAME_LABELS)
        .says(
            "Which of the names --kubelet-logs reads label a pod's series: namespace, pod, \
            container",
        ),
        text(
            None,
            "slurm-cgroup-slice",
            "SLICE",
            |a: &mut ServeCommand, v| {
                a.serve.slurm_cgroup_slice = options::slurm_slice(v)?;
                Ok(())
            },
        )
        .default("system.slice")
        .says(
            "Slurm's CgroupSlice (cgroup.conf), as it takes it: the cgroups of jobs, steps \
            and tasks get their slurm_job_id (or slurm_sluid), slurm_step and slurm_task \
            labels only in slurmstepd's scope there \
            (SLICE/slurmstepd.scope/job_ID/step_STEP/user/task_N, or SLUID/... from Slurm \
            26.05, or SLICE/NODE_slurmstepd.scope/...)",
        ),
        text(None, "cpus", "LIST", |a: &mut ServeCommand, v| {
            a.serve.cpus = Some(options::cpu_list(v)?);
            Ok(())
        })
        .says(
            "Count only these CPUs (of those online), system-wide and per cgroup: a list as \
            /sys/devices/system/cpu/online writes one (0-3,8); every CPU online by default",
        ),
        flag(None, "per-cpu", |a: &mut ServeCommand| {
            a.serve.per_cpu = true
        })
        .says(
            "A cgroup's series per CPU (a cpu label), as the system-wide series are, instead \
            of one series per event and cgroup summed over the CPUs (value, enabled and \
            running each)",
        ),
        flag(None, "per-socket", |a: &mut ServeCommand| {
            a.serve.per_socket = true
        })
        .says(
            "The system-wide series summed per socket (a socket label, no cpu label) instead \
            of one per CPU, as perf stat -a --per-socket aggregates (value, enabled and \
            running each)",
        ),
        flag(None, "per-die", |a: &mut ServeCommand| {
            a.serve.per_die = true
        })
        .says(
            "The system-wide series summed per die (socket and die labels, no cpu label) \
            instead of one per CPU, as perf stat -a --per-die aggregates",
        ),
        text(None, "times", "WHICH", |a: &mut ServeCommand, v| {
            a.serve.times = options::times(v)?;
            Ok(())
        })
        .default("multiplexed")
        .one_of(&options::TIMES)
        .says(
            "For which events the times enabled and running are exported: multiplexed (those \
            the kernel may multiplex: hardware and uncore events; software events, \
            tracepoints, msr and energy events always run while enabled, their two times \
            equal) or always (every event)",
        ),
        text(None, "max-connections", "N", |a: &mut ServeCommand, v| {
            a.serve.max_connections = options::within(v, 1, 1024)?;
            Ok(())
        })
        .default("16")
        .says(
            "The most client connections open at once; past it, the one that has waited \
            longest for its request is closed for the new one",
        ),
        text(
            None,
            "header-timeout",
            "SECONDS",
            |a: &mut ServeCommand, v| {
                a.serve.header_timeout = options::seconds(v)?;
                Ok(())
            },
        )
        .default("5")
        .says("Seconds a client has to send its whole request head (then 408 and closed)"),
        text(
            None,
            "write-timeout",
            "SECONDS",
            |a: &mut ServeCommand, v| {
                a.serve.write_timeout = options::seconds(v)?;
                Ok(())
            },
        )
        .default("10")
        .says("Seconds a client has to take the whole answer (then the connection is closed)"),
        path(
            None,
            "web.config.file",
            "FILE",
            |a: &mut ServeCommand, v| a.serve.web_config = Some(v),
        )
        .says(
            "TLS, basic authentication, response headers and a rate limit from a YAML file in \
            the format of Prometheus' exporter-toolkit (the file node_exporter's \
            --web.config.file reads); read again when it changes. docs/serve.md says what it \
            takes",
        ),
        cpu_model(),
        events_file(),
        descriptions(),
    ];
    const CONFLICTS: &'static [(&'static str, &'static [&'static str])] =
        &[("per-socket", &["per-die"])];
    const REQUIRES: &'static [(&'static str, &'static str, &'static str)] = &[
        ("rules", "metrics", "--rules -M IPC"),
        (
            "records-size",
            "records",
            "--records /var/lib/counterhal/records --records-size 8M",
        ),
        (
            "records-files",
            "records",
            "--records /var/lib/counterhal/records --records-files 4",
        ),
        (
            "kubelet-log-labels",
            "kubelet-logs",
            "--kubelet-logs /var/log --kubelet-log-labels pod",
        ),
    ];
}

/// Text after `serve --help`.
#[cfg(feature = "serve")]
pub const HELP: &str = counterhal_serve::HELP;

/// Runs `counterhal serve`: prints the recording rules (`--rules`), or serves until
/// `SIGTERM` or `SIGINT`.
///
/// # Errors
/// As [`counterhal_serve::run`] and [`counterhal_serve::rules`], and a bad events file or CPU
/// model (exit 2).
#[cfg(feature = "serve")]
pub fn run(args: ServeCommand) -> Result<ExitCode, CliError> {
    let context = args.database.context()?;
    let failed = |failure: counterhal_serve::Failure| CliError {
        exit_code: failure.exit_code(),
        error: failure.error,
        usage: failure.usage,
    };
    if args.serve.rules {
        let rules = counterhal_serve::rules(&args.serve, &context).map_err(failed)?;
        crate::output::emit(&rules)?;
        return Ok(ExitCode::SUCCESS);
    }
    counterhal_serve::run(args.serve, context).map_err(failed)
}

/// `counterhal serve`'s arguments in a build without the exporter: whatever they are, the
/// answer is that there is none.
#[cfg(not(feature = "serve"))]
#[derive(Debug, Default)]
pub struct ServeCommand;

/// Whatever its words, `serve` in a build without the exporter takes them, only to say there
/// is none.
#[cfg(not(feature = "serve"))]
impl crate::args::Table for ServeCommand {
    const NAME: &'static str = "serve";
    const USAGE: &'static str = "counterhal serve (this build has no exporter)";
    const OPTIONS: &'static [crate::args::Spec<ServeCommand>] = &[];
    const WORDS: crate::args::Words =
        crate::args::Words::Command("ARGS", "The exporter's arguments, taken only to be refused");

    fn word(&mut self, _: std::ffi::OsString) -> Result<(), String> {
        Ok(())
    }
}

/// Text after `serve --help`.
#[cfg(not(feature = "serve"))]
pub const HELP: &str = "This build of counterhal has no exporter: it was built without the \
`serve` feature (a default feature of counterhal-cli).";

/// Says that this build has no exporter (exit 1).
///
/// # Errors
/// Always: [`counterhal::ErrorKind::Unsupported`].
#[cfg(not(feature = "serve"))]
pub fn run(_args: ServeCommand) -> Result<ExitCode, CliError> {
    Err(CliError::failed(
        counterhal::Error::unsupported(
            "this build of counterhal has no exporter: `serve` was built without its feature",
        )
        .with_hint("build the command with its default features (`--features serve`)"),
    ))
}
