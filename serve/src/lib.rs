//! `counterhal serve`: a Prometheus exporter. Every event named with `-e` (or the portable
//! default set) is counted on every online CPU, system-wide, and in each control group that
//! `--cgroups` matches; `/metrics` serves the counts (with their times enabled and running
//! where the kernel may multiplex them), in Prometheus' text format 0.0.4 or OpenMetrics 1.0
//! as the scraper's `Accept` header asks.
//!
//! Two parts, apart: [`http`], the transport, TLS, authentication and HTTP (it knows no
//! counter, cgroup or label), and the domain, what is counted and labelled, whose handler,
//! [`scrape`] (`/metrics` rendered under the counters' lock, and `/`), is the one thing the
//! server is given. The domain's rooms: [`events`] (what each name is: its family, unit, PMU
//! and CPUs), [`counting`] (the sets per CPU and cgroup, read without allocating),
//! [`per_cgroup`] (the cgroups' counter, BPF or perf events), [`hierarchy`] (the cgroup
//! hierarchy each mode follows, v1's perf_event or v2, and what it cannot see), [`discovery`]
//! (the cgroups and CPUs followed) with `follower` (a thread following them as they come and go), [`labels`]
//! (where a cgroup's labels come from: its path, the kubelet's and slurmstepd's layouts, the
//! kubelet's log directories), [`text_format`] (the two text formats, the one writer of
//! families), [`mod@rules`] (the metrics as recording rules), [`budget`] (the descriptors the
//! counters may hold), [`health`] (the exporter's own counters), [`machine`] (the host's
//! facts the formulas read), [`process`] (its process's figures, the `process_*` families),
//! [`records`] (a departed cgroup's whole counts, kept in a journal on disk),
//! [`log`] (its log on standard error, in logfmt), [`signals`] (`SIGHUP` reloads, `SIGTERM`
//! drains) and [`sys`] (their system calls). The scrape is written by collectors, each of
//! these rooms writing its own families (the counting's in `counting::families`), called in
//! turn by [`scrape`].
//!
//! The crate's face is the command's entry: [`Config`] (with [`options`], the readers of its
//! values), [`run`], [`rules()`] and
//! [`Failure`] (and [`CgroupModeArg`], [`TimesArg`] and [`NameLabelArg`], `--cgroup-mode`'s,
//! `--times`'s and `--kubelet-log-labels`' values); `counterhal serve` flattens
//! its database options beside [`Config`] and hands [`run`] the [`Context`] they make.
//! Beside it, [`http`] is public, for its tests and for another handler or transport.
#![deny(unsafe_code)]
// The rooms above are private modules, named for the crate's readers (its documentation is
// built with `--document-private-items`).
#![allow(rustdoc::private_intra_doc_links)]

mod budget;
mod counting;
mod discovery;
mod events;
#[cfg(target_os = "linux")]
mod follower;
mod health;
pub mod hierarchy;
pub mod http;
mod labels;
mod log;
mod machine;
pub mod options;
mod per_cgroup;
mod process;
pub mod records;
mod rules;
mod scrape;
mod signals;
#[allow(unsafe_code)] // the exporter's system calls (see its `# Safety` note)
mod sys;
mod text_format;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use counterhal::{Context, Error};
pub use events::TimesArg;
pub use labels::kubelet_logs::NameLabelArg;
pub use per_cgroup::CgroupModeArg;

/// The port `--listen` takes by default: outside Prometheus' exporter range 9100-9999 (every
/// port of it allocated to an exporter since 2023, per Prometheus' "Default port
/// allocations" wiki page) and not among the wiki's exporters outside it, nor in
/// /etc/services.
pub const DEFAULT_PORT: u16 = 19110;

/// The usage line of `serve`'s errors.
pub const USAGE: &str = "counterhal serve [--listen ADDR:PORT] [-e EV[,EV...]] [-M METRIC[,METRIC]] \
[--rules [--rules-window DURATION]] [--cgroups PATTERN...] [--cgroup-depth N] [--max-cgroups N] \
[--departed-for DURATION] [--departed-max N] \
[--records DIR [--records-size BYTES] [--records-files N]] [--cgroup-mode auto|bpf|perf-events] [--kubelet-cgroup-root PATH] \
[--kubelet-logs DIR [--kubelet-log-labels LABEL[,LABEL]]] \
[--slurm-cgroup-slice SLICE] [--cpus LIST] [--per-cpu] [--per-socket|--per-die] \
[--times multiplexed|always] \
[--max-connections N] [--header-timeout SECONDS] [--write-timeout SECONDS] \
[--web.config.file FILE]";

/// Text after `serve --help`.
pub const HELP: &str = "\
Endpoints (GET and HEAD only; none changes anything):
  /metrics  the counts, text format 0.0.4 or OpenMetrics 1.0 by the Accept header
  /         a page naming the events counted and those that did not open
  /records  with --records, the departed cgroups' records a query selects
            (slurm_job, slurm_step, pod, container, last), JSON lines

Metrics: counterhal_event_total (counts), counterhal_event_seconds_total (clocks),
counterhal_event_joules_total (energy), each with event, pmu and cpu (with socket and die)
labels (summed per socket or die with --per-socket or --per-die), and per cgroup a cgroup
label (with pod_uid, container_id and qos_class where the cgroup is a Kubernetes pod's, and
with --kubelet-logs its namespace, pod and container names; slurm_job_id or slurm_sluid,
slurm_step and slurm_task where it is a Slurm job's), summed
over the CPUs
unless --per-cpu; counterhal_event_enabled_seconds_total and
counterhal_event_running_seconds_total beside those of events that may be multiplexed,
once a group: a PMU's such events count as one group, its times labelled group=LEADER as
its counts are (rate(value) * ignoring(event) rate(enabled) / ignoring(event) rate(running)
scales a multiplexed count; --times always exports them for software, tracepoint, msr and
energy events too).
docs/serve.md has them all, and the bounds on clients.";

/// What `counterhal serve` is asked to do: the command's parser fills it from the command
/// line (its options' words are the command's, `cli/src/serve.rs`); [`Config::default`] is
/// what each option is where it is not given.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--listen`.
    pub listen: http::listen::Listen,
    /// `-e, --event`.
    pub events: Vec<String>,
    /// `-M, --metrics`, one metric a value.
    pub metrics: Vec<String>,
    /// `--rules`.
    pub rules: bool,
    /// `--rules-window`.
    pub rules_window: String,
    /// `--cgroups`.
    pub cgroups: Vec<String>,
    /// `--cgroup-depth`.
    pub cgroup_depth: Option<u32>,
    /// `--max-cgroups`.
    pub max_cgroups: u32,
    /// `--departed-for`.
    pub departed_for: Duration,
    /// `--departed-max`.
    pub departed_max: usize,
    /// `--cgroup-mode`.
    pub cgroup_mode: CgroupModeArg,
    /// `--kubelet-cgroup-root`.
    pub kubelet_cgroup_root: String,
    /// `--kubelet-logs`.
    pub kubelet_logs: Option<std::path::PathBuf>,
    /// `--kubelet-log-labels`.
    pub kubelet_log_labels: Vec<NameLabelArg>,
    /// `--slurm-cgroup-slice`.
    pub slurm_cgroup_slice: String,
    /// `--cpus`.
    pub cpus: Option<counterhal::CpuList>,
    /// `--per-cpu`.
    pub per_cpu: bool,
    /// `--per-socket`.
    pub per_socket: bool,
    /// `--per-die`.
    pub per_die: bool,
    /// `--times`.
    pub times: TimesArg,
    /// `--max-connections`.
    pub max_connections: u32,
    /// `--header-timeout`.
    pub header_timeout: Duration,
    /// `--write-timeout`.
    pub write_timeout: Duration,
    /// `--web.config.file`.
    pub web_config: Option<std::path::PathBuf>,
    /// `--records`: the journal's directory (`None`: no records kept).
    pub records: Option<std::path::PathBuf>,
    /// `--records-size`.
    pub records_size: u64,
    /// `--records-files`.
    pub records_files: u32,
}

/// Why `serve` stopped before serving: the error, and for bad arguments the usage line that
/// fixes them.
#[derive(Debug)]
pub struct Failure {
    /// What went wrong.
    pub error: Error,
    /// The usage line, for bad arguments (exit 2); `None` for a failure of the exporter
    /// itself (exit 1).
    pub usage: Option<&'static str>,
}

impl Failure {
    /// A failure of the exporter itself (exit 1).
    fn failed(error: Error) -> Failure {
        Failure { error, usage: None }
    }

    /// Bad arguments (exit 2), with `serve`'s usage line.
    fn usage(error: Error, usage: &'static str) -> Failure {
        Failure {
            error,
            usage: Some(usage),
        }
    }

    /// The exit status the command ends with: 2 for bad arguments, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        if self.usage.is_some() { 2 } else { 1 }
    }
}

impl Config {
    /// The event names: `-e`'s lists split as stat splits them, or the default set where
    /// neither `-e` nor `-M` names any.
    fn event_names(&self) -> Vec<String> {
        if self.events.is_empty() && self.metrics.is_empty() {
            // perf stat's set, as `stat` counts it: those that do not open here are reported
            // by `counterhal_event_open_failed`.
            let defaults = counterhal_events::perf::STAT_DEFAULT_EVENTS;
            return defaults.iter().map(|s| s.to_string()).collect();
        }
        self.events
            .iter()
            .flat_map(|list| counterhal::split_event_list(list))
            .map(|name| name.trim().to_string())
            .filter(|name| !name.is_empty())
            .collect()
    }
}

/// The first backend of this OS that works, with the database and model of `context`.
///
/// # Errors
/// None works here (exit 1), with each one's reason.
fn choose(context: counterhal::Context) -> Result<counterhal::Chosen, Failure> {
    counterhal::Setup::new()
        .context(context)
        .open()
        .map_err(Failure::failed)
}

/// The counter of the cgroups `watch` follows (none where it follows none, or no event
/// counts per cgroup), in `--cgroup-mode`'s mode (Auto the perf-event mode where
/// `hierarchies` has the perf_event controller on cgroup v1), on the CPUs online, and
/// `watch` on the mount that mode counts in (the cgroup v2 mount in the BPF mode). The BPF
/// mode's map holds the cgroups followed, `--max-cgroups` of them.
///
/// # Errors
/// `--cgroup-mode bpf` where BPF cannot count here, with why and what would allow it; an
/// event the counter does not take (exit 1).
fn cgroup_counter(
    args: &Config,
    (backend, plan): (&counterhal::Chosen, &events::Plan),
    mut watch: discovery::Watch,
    hierarchies: &hierarchy::Hierarchies,
) -> Result<(Option<per_cgroup::Cgroups>, discovery::Watch), Failure> {
    if !watch.follows() {
        return Ok((None, watch));
    }
    let counted = counting::counted(
        &counterhal::online_cpus(backend.context().system()),
        args.cpus.as_ref(),
    );
    let cpus: Vec<u32> = counted.iter().collect();
    let not_bpf = match args.cgroup_mode {
        CgroupModeArg::Auto => hierarchies.perf_events_first(),
        _ => None,
    };
    let mode = match not_bpf {
        Some(_) => CgroupModeArg::PerfEvents,
        None => args.cgroup_mode,
    };
    let cgroups = per_cgroup::Cgroups::open(
        backend,
        &plan.exported,
        &cpus,
        (mode, args.max_cgroups),
        not_bpf,
    )
    .map_err(Failure::failed)?;
    if let Some(root) = cgroups.as_ref().and_then(per_cgroup::Cgroups::root) {
        watch.root_at(root.to_path_buf());
    }
    Ok((cgroups, watch))
}

/// Says on standard error the mode `cgroups` are counted in, and what that mode cannot see
/// of `hierarchies` (`system`'s), once each.
fn say_mode(
    cgroups: &per_cgroup::Cgroups,
    hierarchies: &hierarchy::Hierarchies,
    system: &counterhal_system::System,
) {
    let said = format!("cgroups counted in the mode {}", cgroups.mode_said());
    let mode: &[(&str, &dyn std::fmt::Display)] = &[("mode", &cgroups.mode_name())];
    match cgroups.moves_settled() {
        Some(false) => log::warn(&said, mode),
        _ => log::info(&said, mode),
    };
    let bpf = cgroups.mode_name() == "bpf";
    for unseen in hierarchies.unseen(system, bpf) {
        log::warn("cgroups not counted", &[("reason", &unseen)]);
    }
}

/// `--kubelet-logs`: the kubelet's log directories, read once now, with how many pods and
/// containers they name said in the log (and why a directory cannot be read).
fn kubelet_logs(args: &Config) -> Option<labels::kubelet_logs::KubeletLogs> {
    let dir = args.kubelet_logs.as_ref()?;
    let logs = labels::kubelet_logs::KubeletLogs::open(dir, &args.kubelet_log_labels);
    let (pods, containers) = logs.found();
    let fields: [(&str, &dyn std::fmt::Display); 3] = [
        ("dir", &dir.display()),
        ("pods", &pods),
        ("containers", &containers),
    ];
    log::info("read the kubelet's log directories", &fields);
    Some(logs)
}

/// Says in the log how the cgroups are counted (a warning where a task's moves are not
/// followed at once, and what the mode cannot see of `hierarchies`) and where their records
/// are kept.
fn said_how_counted(exporter: &counting::Exporter, hierarchies: &hierarchy::Hierarchies) {
    if let Some(cgroups) = &exporter.cgroups {
        say_mode(cgroups, hierarchies, &exporter.system);
    }
    if let Some(journal) = &exporter.records {
        let dir: &[(&str, &dyn std::fmt::Display)] = &[("dir", &journal.dir.display())];
        log::info("records of departed cgroups kept", dir);
    }
}

/// `--records`: the journal the departed cgroups' records go to, their metrics `metrics`
/// (the portable ones where `-M` names none); `None` where not given.
///
/// # Errors
/// The directory cannot be made or its journal appended to (exit 1).
fn journal(
    args: &Config,
    metrics: &[&'static counterhal::metrics::MetricDef],
    system: &counterhal_system::System,
) -> Result<Option<records::journal::Journal>, Failure> {
    let Some(dir) = &args.records else {
        return Ok(None);
    };
    let metrics = match metrics.is_empty() {
        true => counterhal::metrics::portable().iter().collect(),
        false => metrics.to_vec(),
    };
    let bounds = records::journal::Bounds {
        file_bytes: args.records_size,
        files: args.records_files,
    };
    let machine = counterhal::metrics::Machine::new(system.clone());
    let journal = records::journal::Journal::open(dir, bounds, metrics, machine)
        .map_err(|e| Failure::failed(Error::invalid_input(e)))?;
    Ok(Some(journal))
}

/// `--rules`: the `-M` metrics of `context`'s model as Prometheus recording rules over the
/// exported counters (a YAML rules file), for the command to print.
///
/// # Errors
/// A metric or group unknown on the model (exit 2, with the usage line).
pub fn rules(args: &Config, context: &Context) -> Result<String, Failure> {
    let model = context.model();
    let metrics =
        counterhal::metrics::chosen(&args.metrics, model).map_err(|e| Failure::usage(e, USAGE))?;
    Ok(rules::rules(&metrics, &args.rules_window, model))
}

/// Serves `args`'s events and metrics, resolved in `context` (the event database and CPU
/// model), until `SIGTERM` or `SIGINT` (then drains and exits 0; `SIGHUP` reads the web
/// configuration again). `--rules` is [`rules()`]'s: this serves whatever it says.
///
/// # Errors
/// Bad arguments or events that do not resolve (exit 2, with the usage line); no event that
/// opens here, or an address that cannot be listened on (exit 1).
pub fn run(args: Config, context: Context) -> Result<ExitCode, Failure> {
    // Before any thread starts: the signals are taken by the one thread that waits for them.
    signals::block();
    let metrics = counterhal::metrics::chosen(&args.metrics, context.model())
        .map_err(|e| Failure::usage(e, USAGE))?;
    let web = args
        .web_config
        .as_deref()
        .map(http::web::WebConfigFile::open)
        .transpose()
        .map_err(|e| Failure::usage(Error::invalid_input(e), USAGE))?;
    let backend = choose(context)?;
    // The system the command started with, carried in its context to every reader here.
    let system = backend.context().system().clone();
    let mut names = args.event_names();
    for event in counterhal::metrics::events_needed(&system.clone().into(), &metrics) {
        if !names.contains(&event) {
            names.push(event);
        }
    }
    if names.is_empty() {
        let error = Error::invalid_input("-e names no event");
        return Err(Failure::usage(error, USAGE));
    }
    let online = counterhal::online_cpus(&system);
    if counting::counted(&online, args.cpus.as_ref()).is_empty() {
        let only = args
            .cpus
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let error = Error::invalid_input(format!(
            "--cpus {only} names no CPU online here (online: {online})"
        ));
        return Err(Failure::usage(error, USAGE));
    }
    let depth = args.cgroup_depth.map(|n| n as usize);
    let watch = discovery::Watch::new(&system, &args.cgroups, depth, args.max_cgroups as usize)
        .map_err(|e| Failure::usage(e, USAGE))?;
    let plan = events::plan(&system, &backend, &names).map_err(|e| Failure::usage(e, USAGE))?;
    if plan.exported.is_empty() {
        let reasons: Vec<String> = plan
            .refused
            .iter()
            .map(|r| format!("{}: {}", r.name, r.message))
            .collect();
        let error = Error::new(
            counterhal::ErrorKind::NotFound,
            format!("no event opens here ({})", reasons.join("; ")),
        );
        return Err(Failure::failed(
            match events::privilege_hint(&system, &plan.refused) {
                Some(hint) => error.with_hint(hint),
                None => error,
            },
        ));
    }
    let health = Arc::new(health::Health::new(backend.name(), &system));
    let limit = sys::raise_open_files().unwrap_or(1024);
    // Before the budget's baseline: the BPF mode's counters are held whatever the cgroups.
    let hierarchies = hierarchy::Hierarchies::of(&system);
    let (cgroups, watch) = cgroup_counter(&args, (&backend, &plan), watch, &hierarchies)?;
    let budget = budget::Budget::new(&system, limit, args.max_connections as usize);
    let records = journal(&args, &metrics, &system)?;
    let mut exporter = counting::Exporter::new(system, backend, plan, watch, budget, cgroups);
    exporter.per_cpu = args.per_cpu;
    exporter.departed_for = args.departed_for;
    exporter.departed_most = args.departed_max;
    exporter.aggregate = match (args.per_socket, args.per_die) {
        (true, _) => counting::Aggregate::Socket,
        (_, true) => counting::Aggregate::Die,
        _ => counting::Aggregate::Cpu,
    };
    exporter.times = args.times;
    exporter.records = records;
    exporter.cpus = args.cpus.clone();
    exporter.kubelet = labels::kubernetes::Kubelet::new(&args.kubelet_cgroup_root)
        .map_err(|e| Failure::usage(Error::invalid_input(e), USAGE))?;
    exporter.slurm = labels::slurm::Slurmstepd::new(&args.slurm_cgroup_slice)
        .map_err(|e| Failure::usage(Error::invalid_input(e), USAGE))?;
    let listener = args.listen.bind().map_err(|e| {
        Failure::failed(Error::invalid_input(format!(
            "cannot listen on {}: {e}",
            args.listen
        )))
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::failed(Error::invalid_input(format!("no local address: {e}"))))?;
    let scheme = match web.as_ref().map(http::web::WebConfigFile::current) {
        Some(config) if config.tls.is_some() => "https",
        _ => "http",
    };
    let url = format!("{scheme}://{bound}/metrics");
    log::info("serving", &[("url", &url)]);
    // After the address (the first line said), how the cgroups are counted, what does not
    // open.
    said_how_counted(&exporter, &hierarchies);
    // After the address (the log's first line), as what it reads is said.
    exporter.kubelet_logs = kubelet_logs(&args);
    exporter.follow(&health);
    if let Some(said) = exporter.watch.said(&health) {
        let (matched, followed) = health.cgroups_now();
        log::info(&said, &[("matched", &matched), ("followed", &followed)]);
    }
    let all: Vec<usize> = (0..exporter.events.len()).collect();
    for group in events::groups_among(&exporter.events, &all) {
        let names: Vec<&str> = group
            .iter()
            .map(|&i| exporter.events[i].name.as_str())
            .collect();
        let names = format!("{{{}}}", names.join(","));
        let pmu = &exporter.events[group[0]].pmu;
        let fields: [(&str, &dyn std::fmt::Display); 2] = [("group", &names), ("pmu", pmu)];
        log::info("counted as one group, its times exported once", &fields);
    }
    for why in &exporter.ungrouped {
        log::warn(why, &[]);
    }
    for refused in &exporter.refused {
        let fields: [(&str, &dyn std::fmt::Display); 3] = [
            ("event", &refused.name),
            ("kind", &refused.kind),
            ("reason", &refused.message),
        ];
        log::warn("not counted here", &fields);
    }
    let limits = http::table::Limits::new(
        args.max_connections as usize,
        args.header_timeout,
        args.write_timeout,
    );
    let exporter = Arc::new(std::sync::Mutex::new(exporter));
    #[cfg(target_os = "linux")]
    follower::start(Arc::clone(&exporter), Arc::clone(&health));
    let scrape = scrape::Scrape::new(exporter, Arc::clone(&health), args.records.clone());
    let layer = http::layer::Layer::new(scrape, web);
    let server = http::transport::Server::new(listener, limits, layer, Arc::clone(&health.http));
    signals::take(server.shared());
    server.serve();
    Ok(ExitCode::SUCCESS)
}
