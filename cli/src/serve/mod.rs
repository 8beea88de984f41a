//! `counterhal serve`: a Prometheus exporter. Every event named with `-e` (or the portable
//! default set) is counted on every online CPU, system-wide, and in each control group that
//! `--cgroups` matches; `/metrics` serves the counts with their times enabled and running, in
//! Prometheus' text format 0.0.4 or OpenMetrics 1.0 as the scraper's `Accept` header asks.
//!
//! The rooms: [`events`] (what each name is: its family, unit, PMU and CPUs), [`counting`]
//! (the sets per CPU and cgroup, read without allocating), [`discovery`] (the cgroups and
//! CPUs followed between scrapes), [`exposition`] (the two text formats), [`health`] (the
//! exporter's own counters), [`process`] (its process's figures, the `process_*` families),
//! [`http`] (connections and their bounds), [`table`] (what the connections share),
//! [`request`] (one request: its head, its route, its answer), [`gzip`] (answers compressed
//! for the scrapers that ask) and
//! [`web`] (`--web.config.file`: TLS, users, headers and rate limit, in Prometheus'
//! exporter-toolkit's format), with [`users`] (its users' bcrypt hashes and the passwords
//! verified); [`listen`] (`--listen`'s forms), [`budget`] (the descriptors the counters may hold), [`signals`] (`SIGHUP`
//! reloads, `SIGTERM` drains) and [`sys`] (their system calls).

mod budget;
mod counting;
mod discovery;
mod events;
mod exposition;
mod gzip;
mod health;
mod http;
mod listen;
mod process;
mod request;
mod rules;
mod signals;
#[allow(unsafe_code)] // the exporter's system calls (see its `# Safety` note)
mod sys;
mod table;
mod users;
mod web;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use counterhal::Error;

use crate::error::CliError;
use crate::options::DatabaseArgs;

/// The port `--listen` takes by default: outside Prometheus' exporter range 9100-9999 (every
/// port of it allocated to an exporter since 2023, per Prometheus' "Default port
/// allocations" wiki page) and not among the wiki's exporters outside it, nor in
/// /etc/services.
pub const DEFAULT_PORT: u16 = 19110;

/// The events counted when `-e` is not given: software events every Linux counts, and the
/// CPU's cycles and instructions where a PMU takes them (those that do not open here are
/// reported by `counterhal_event_open_failed`).
pub const DEFAULT_EVENTS: [&str; 6] = [
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
    "cycles",
    "instructions",
];

/// The usage line of `serve`'s errors.
const USAGE: &str = "counterhal serve [--listen ADDR:PORT] [-e EV[,EV...]] [-M METRIC[,METRIC]] \
[--rules [--rules-window DURATION]] [--cgroups PATTERN...] [--max-cgroups N] \
[--max-connections N] [--header-timeout SECONDS] [--write-timeout SECONDS] \
[--web.config.file FILE]";

/// Text after `serve --help`.
pub const HELP: &str = "\
Endpoints (GET and HEAD only; none changes anything):
  /metrics  the counts, text format 0.0.4 or OpenMetrics 1.0 by the Accept header
  /         a page naming the events counted and those that did not open

Metrics: counterhal_event_total (counts), counterhal_event_seconds_total (clocks),
counterhal_event_joules_total (energy), each with event, pmu, cpu and (per cgroup) cgroup
labels; counterhal_event_enabled_seconds_total and counterhal_event_running_seconds_total
beside them (rate(value) * rate(enabled) / rate(running) scales a multiplexed count).
docs/serve.md has them all, and the bounds on clients.";

/// `counterhal serve`'s options.
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// The address and port to serve on, in node_exporter's --web.listen-address forms:
    /// ADDR:PORT, [IPv6]:PORT, HOST:PORT (resolved at start) or :PORT (every address);
    /// loopback by default; port 0 takes a free one, and the address served is printed on
    /// standard error.
    #[arg(long = "listen", value_name = "ADDR:PORT", default_value_t = listen::Listen::At(SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT))), value_parser = listen::parse)]
    pub listen: listen::Listen,
    /// Events to count, as stat takes them (default: task-clock, context-switches,
    /// cpu-migrations, page-faults, cycles, instructions; those that do not open here are
    /// reported, not counted).
    #[arg(short = 'e', long = "event", value_name = "EV[,EV...]")]
    pub events: Vec<String>,
    /// Count the events these metrics (or metric groups) read, as stat -M names them (with
    /// --rules: print the metrics as Prometheus recording rules instead of serving).
    #[arg(
        short = 'M',
        long = "metrics",
        value_name = "METRIC[,METRIC]",
        value_delimiter = ','
    )]
    pub metrics: Vec<String>,
    /// Print the -M metrics as Prometheus recording rules over the exported counters (YAML
    /// for a rules file; `promtool check rules` reads it) and exit.
    #[arg(long = "rules", requires = "metrics")]
    pub rules: bool,
    /// The window of the rules' rate(), a PromQL duration.
    #[arg(long = "rules-window", value_name = "DURATION", default_value = "1m", value_parser = promql_duration)]
    pub rules_window: String,
    /// Count the events in each cgroup (v2) whose path below the cgroup mount matches: perf's
    /// --for-each-cgroup list (names, or, where it holds one of {}[]()|*+?^$, regular
    /// expressions as Prometheus writes them, extended (RE2's syntax: `^a/(b|c)$`), matched
    /// anywhere in the path; an empty item is the root). Cgroups are found again at each
    /// scrape; how many match is said at start and exported.
    #[arg(long = "cgroups", value_name = "PATTERN", num_args = 1..)]
    pub cgroups: Vec<String>,
    /// The most cgroups followed at once; matching cgroups past it are left out and counted
    /// by counterhal_cgroups_dropped_total.
    #[arg(long = "max-cgroups", value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(0..=4096))]
    pub max_cgroups: u32,
    /// The most client connections open at once; past it, the one that has waited longest
    /// for its request is closed for the new one.
    #[arg(long = "max-connections", value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_connections: u32,
    /// Seconds a client has to send its whole request head (then 408 and closed).
    #[arg(long = "header-timeout", value_name = "SECONDS", default_value = "5", value_parser = seconds)]
    pub header_timeout: Duration,
    /// Seconds a client has to take the whole answer (then the connection is closed).
    #[arg(long = "write-timeout", value_name = "SECONDS", default_value = "10", value_parser = seconds)]
    pub write_timeout: Duration,
    /// TLS, basic authentication, response headers and a rate limit from a YAML file in the
    /// format of Prometheus' exporter-toolkit (the file node_exporter's --web.config.file
    /// reads); read again when it changes. docs/serve.md says what it takes.
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub database: DatabaseArgs,
}

/// A PromQL duration: digits and a unit (`30s`, `1m`, `1h`), one or more.
fn promql_duration(text: &str) -> Result<String, String> {
    web::duration(text).map(|_| text.to_string())
}

/// A duration in seconds between 0.01 and 300.
fn seconds(text: &str) -> Result<Duration, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(0.01..=300.0).contains(&value) {
        return Err(format!("{text} s is outside 0.01 to 300 seconds"));
    }
    Ok(Duration::from_secs_f64(value))
}

impl ServeArgs {
    /// The event names: `-e`'s lists split as stat splits them, or the default set where
    /// neither `-e` nor `-M` names any.
    fn event_names(&self) -> Vec<String> {
        if self.events.is_empty() && self.metrics.is_empty() {
            return DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect();
        }
        self.events
            .iter()
            .flat_map(|list| crate::stat::arguments::split_event_list(list))
            .map(|name| name.trim().to_string())
            .filter(|name| !name.is_empty())
            .collect()
    }
}

/// The first backend of this OS that works, with the database and model of `context`.
///
/// # Errors
/// None works here (exit 1), with each one's reason.
fn choose(context: counterhal::Context) -> Result<counterhal::Chosen, CliError> {
    let mut passed_over = Vec::new();
    for probe in counterhal::probe_all(&context) {
        match probe.result {
            Ok(backend) => {
                return Ok(counterhal::Chosen {
                    backend,
                    passed_over,
                    context,
                });
            }
            Err(e) => passed_over.push((probe.registration.name, e)),
        }
    }
    let reasons: Vec<String> = passed_over
        .iter()
        .map(|(name, e)| format!("{name}: {e}"))
        .collect();
    Err(CliError::failed(Error::unsupported(format!(
        "no usable counter backend here: {}",
        reasons.join("; ")
    ))))
}

/// Runs `counterhal serve` until `SIGTERM` or `SIGINT` (then drains and exits 0; `SIGHUP`
/// reads the web configuration again).
///
/// # Errors
/// Bad arguments or events that do not resolve (exit 2, with the usage line); no event that
/// opens here, or an address that cannot be listened on (exit 1).
pub fn run(args: ServeArgs) -> Result<ExitCode, CliError> {
    // Before any thread starts: the signals are taken by the one thread that waits for them.
    signals::block();
    let context = args.database.context()?;
    let metrics = crate::stat::named_metrics::chosen(&args.metrics, context.model.as_deref())
        .map_err(|e| CliError::usage(e, USAGE))?;
    if args.rules {
        let model = context.model.as_deref();
        crate::output::emit(&rules::rules(&metrics, &args.rules_window, model))?;
        return Ok(ExitCode::SUCCESS);
    }
    let web = args
        .web_config
        .as_deref()
        .map(web::WebConfigFile::open)
        .transpose()
        .map_err(|e| CliError::usage(Error::invalid_input(e), USAGE))?;
    let backend = choose(context)?;
    let mut names = args.event_names();
    for event in crate::stat::named_metrics::events_needed(&metrics) {
        if !names.contains(&event) {
            names.push(event);
        }
    }
    if names.is_empty() {
        let error = Error::invalid_input("-e names no event");
        return Err(CliError::usage(error, USAGE));
    }
    let watch = discovery::Watch::new(&args.cgroups, args.max_cgroups as usize)
        .map_err(|e| CliError::usage(e, USAGE))?;
    let plan = events::plan(&backend, &names).map_err(|e| CliError::usage(e, USAGE))?;
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
        return Err(CliError::failed(
            match events::privilege_hint(&plan.refused) {
                Some(hint) => error.with_hint(hint),
                None => error,
            },
        ));
    }
    let health = Arc::new(health::Health::new(backend.name()));
    let limit = sys::raise_open_files().unwrap_or(1024);
    let budget = budget::Budget::new(limit, args.max_connections as usize);
    let mut exporter = counting::Exporter::new(backend, plan, watch, budget);
    let listener = args.listen.bind().map_err(|e| {
        CliError::failed(Error::invalid_input(format!(
            "cannot listen on {}: {e}",
            args.listen
        )))
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| CliError::failed(Error::invalid_input(format!("no local address: {e}"))))?;
    let scheme = match web.as_ref().map(web::WebConfigFile::current) {
        Some(config) if config.tls.is_some() => "https",
        _ => "http",
    };
    crate::output::emit_to_stderr(&format!("counterhal: serving {scheme}://{bound}/metrics\n"));
    // After the address (the first line said), what does not open.
    exporter.follow(&health);
    if let Some(said) = exporter.watch.said(&health) {
        crate::output::emit_to_stderr(&said);
    }
    for refused in &exporter.refused {
        crate::output::emit_to_stderr(&format!(
            "counterhal: not counted here: {}: {}\n",
            refused.name, refused.message
        ));
    }
    let limits = table::Limits {
        max_connections: args.max_connections as usize,
        header_timeout: args.header_timeout,
        write_timeout: args.write_timeout,
    };
    http::serve(listener, limits, exporter, health, web);
    Ok(ExitCode::SUCCESS)
}
