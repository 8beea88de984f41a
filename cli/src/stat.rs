//! `counterhal stat`: run a command (or attach) and count events, like `perf stat`.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use counterhal::hal::{EventSet, Group, OpenOptions, Reading, ResolvedEvent, Scope};
use counterhal::{AnyBackend, Backend, Context, Error, ErrorKind, Registration, Target};
use serde_json::json;

use super::format::{seconds, thousands};
use super::{CliError, DatabaseArgs, parse_backend};

/// Extra help for `counterhal stat`.
pub const HELP: &str = "\
Examples:
  counterhal stat -- ls
  counterhal stat -e page-faults,context-switches -e task-clock -- true
  counterhal stat -e syscalls:sys_enter_getpid -x, -- ./bench
  counterhal stat -a -e cpu-clock -- sleep 1
Events not supported here are printed as <not supported>, with the reason below the table.";

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

const USAGE: &str = "counterhal stat [-e EV[,EV...]]... [--backend B] [--cpu MODEL] \
[--events FILE] [-p PID | -a | -C CPU] [-r N] [-x SEP | --json] -- CMD [ARGS]";

/// Arguments of `counterhal stat`.
#[derive(Args, Debug)]
pub struct StatArgs {
    /// Events to count, comma-separated or repeated (default: perf stat's set).
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EV[,EV...]",
        value_delimiter = ','
    )]
    event_names: Vec<String>,
    /// The backend (linux, pctr, msr); default: the first that works here.
    #[arg(long, value_parser = parse_backend)]
    backend: Option<&'static Registration>,
    #[command(flatten)]
    database: DatabaseArgs,
    /// Count an existing process (and not its future children) while CMD runs.
    #[arg(short = 'p', long = "pid", conflicts_with_all = ["all_cpus", "cpu_list"])]
    pid: Option<u32>,
    /// Count every CPU (system wide) while CMD runs.
    #[arg(short = 'a', long = "all-cpus", conflicts_with = "cpu_list")]
    all_cpus: bool,
    /// Count these CPUs (system wide) while CMD runs, e.g. 0 or 0,2-3.
    #[arg(short = 'C', long = "cpu-list", value_name = "CPU")]
    cpu_list: Option<String>,
    /// Run the command N times and print the mean (with the spread).
    #[arg(short = 'r', long = "repeat", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// CSV output with this separator: value,unit,event,time_running,percent_running.
    #[arg(
        short = 'x',
        long = "field-separator",
        value_name = "SEP",
        conflicts_with = "json"
    )]
    separator: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Write the results to FILE instead of standard error (where perf writes them too, so
    /// that the command's own output stays clean).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    /// The command to run, after `--`.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<OsString>,
}

/// One event's outcome in one run.
pub struct EventResult {
    name: String,
    backend: String,
    outcome: Result<Reading, Error>,
}

/// One run of the command.
pub struct Run {
    events: Vec<EventResult>,
    /// The command's exit status as this command passes it on.
    exit_code: u8,
    exit_description: String,
    elapsed_ns: u64,
    user_ns: Option<u64>,
    sys_ns: Option<u64>,
    /// What the reader must know about whose activity was counted.
    note: Option<String>,
}

fn targets(args: &StatArgs) -> Result<Option<Vec<Target>>, CliError> {
    if let Some(pid) = args.pid {
        return process_threads(pid).map(Some);
    }
    if args.all_cpus {
        return Ok(Some(online_cpus()));
    }
    if let Some(list) = &args.cpu_list {
        return parse_cpu_list(list)
            .map(Some)
            .map_err(|e| CliError::usage(e, USAGE));
    }
    Ok(None)
}

/// Every thread of process `pid` (`/proc/PID/task`), as perf's `-p` counts them; the process
/// alone where the OS has no such directory.
fn process_threads(pid: u32) -> Result<Vec<Target>, CliError> {
    if pid == 0 {
        return Err(CliError::usage(
            Error::invalid_input("process id 0 is not a process")
                .with_hint("give the id of a running process, e.g. -p $(pidof NAME)"),
            USAGE,
        ));
    }
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Ok(vec![Target::Process {
            pid,
            inherit: false,
        }]);
    };
    let mut threads: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    threads.sort_unstable();
    Ok(threads
        .into_iter()
        .map(|tid| Target::Process {
            pid: tid,
            inherit: false,
        })
        .collect())
}

/// Every online CPU (`/sys/devices/system/cpu/online`; not this process's affinity, which may
/// be narrower), or CPUs 0..N by the parallelism the OS reports where that file is absent.
fn online_cpus() -> Vec<Target> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|text| parse_cpu_list(text.trim()).ok())
        .unwrap_or_else(|| {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
            (0..cpus).map(Target::Cpu).collect()
        })
}

fn parse_cpu_list(list: &str) -> Result<Vec<Target>, Error> {
    let bad = || {
        Error::invalid_input(format!("bad CPU list `{list}`"))
            .with_hint("write CPUs as numbers and ranges, e.g. 0 or 0,2-3")
    };
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            ),
            None => {
                let cpu: u32 = part.trim().parse().map_err(|_| bad())?;
                (cpu, cpu)
            }
        };
        if first > last {
            return Err(bad());
        }
        cpus.extend((first..=last).map(Target::Cpu));
    }
    // A CPU named twice is counted once.
    let mut seen = std::collections::BTreeSet::new();
    cpus.retain(|target| match target {
        Target::Cpu(cpu) => seen.insert(*cpu),
        _ => true,
    });
    Ok(cpus)
}

fn choose_backend(args: &StatArgs, context: &Context) -> Result<AnyBackend, CliError> {
    match args.backend {
        Some(registration) => counterhal::probe(registration, context).map_err(CliError::failed),
        None => {
            let mut reasons = Vec::new();
            for probe in counterhal::probe_all(context) {
                match probe.result {
                    Ok(backend) => return Ok(backend),
                    Err(e) => reasons.push(format!("{}: {e}", probe.registration.name)),
                }
            }
            Err(CliError::failed(Error::unsupported(format!(
                "no usable counter backend here: {}",
                reasons.join("; ")
            ))))
        }
    }
}

/// An event as planned: resolved, or known to be unusable here (reported as not supported).
pub enum Planned {
    /// Resolved; still may fail to open.
    Ready(ResolvedEvent),
    /// The name is valid but this CPU or backend cannot count it.
    Unsupported {
        /// The name as given.
        name: String,
        /// Why not.
        error: Error,
    },
}

/// Resolves every name; unknown names are errors (exit 2), names that are valid but not
/// countable here are planned as unsupported.
fn resolve_all<B: Backend>(backend: &B, names: &[String]) -> Result<Vec<Planned>, CliError> {
    names
        .iter()
        .map(|name| match backend.resolve(name) {
            Ok(event) => Ok(Planned::Ready(event)),
            Err(e) if e.kind() == ErrorKind::InvalidEvent => Err(CliError::usage(
                e,
                "-e EVENT: see `counterhal list` for the events available here",
            )),
            Err(error) => Ok(Planned::Unsupported {
                name: name.clone(),
                error,
            }),
        })
        .collect()
}

/// Counts the events on `targets` while `command` runs (the generic path: every backend).
fn run_generic<B: Backend>(
    backend: &B,
    events: &[Planned],
    targets: &[Target],
    command: &[OsString],
) -> Result<Run, CliError> {
    // Each opened set: the indices (into `events`) of what it counts, one set per target.
    type Opened<G> = (Vec<usize>, Vec<EventSet<G>>);
    let open_on_every_target =
        |resolved: Vec<ResolvedEvent>| -> Result<Vec<EventSet<B::Group>>, Error> {
            let options = OpenOptions::ungrouped();
            targets
                .iter()
                .map(|target| EventSet::open(backend, resolved.clone(), target, &options))
                .collect()
        };
    let mut results: Vec<EventResult> = events
        .iter()
        .map(|planned| match planned {
            Planned::Unsupported { name, error } => EventResult {
                name: name.clone(),
                backend: backend.label(),
                outcome: Err(error.clone()),
            },
            Planned::Ready(event) => EventResult {
                name: event.name.clone(),
                backend: backend.label(),
                outcome: Ok(Reading::default()),
            },
        })
        .collect();
    let ready: Vec<usize> = events
        .iter()
        .enumerate()
        .filter_map(|(i, p)| matches!(p, Planned::Ready(_)).then_some(i))
        .collect();
    let resolved = |indices: &[usize]| -> Vec<ResolvedEvent> {
        indices
            .iter()
            .filter_map(|&i| match &events[i] {
                Planned::Ready(event) => Some(event.clone()),
                Planned::Unsupported { .. } => None,
            })
            .collect()
    };
    // All events at once first: a backend with constrained counters (P6's counter 1 counts
    // only while counter 0 holds the enable bit) must place them together. Where that fails,
    // each on its own, so that one event the machine lacks does not hide the others.
    let mut sets: Vec<Opened<B::Group>> = Vec::new();
    match open_on_every_target(resolved(&ready)) {
        Ok(opened) if !ready.is_empty() => sets.push((ready.clone(), opened)),
        _ => {
            for &index in &ready {
                match open_on_every_target(resolved(&[index])) {
                    Ok(opened) => sets.push((vec![index], opened)),
                    // A target that does not exist is the user's to fix, not an event the
                    // machine lacks.
                    Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::InvalidInput) => {
                        return Err(CliError::usage(e, USAGE));
                    }
                    Err(e) => results[index].outcome = Err(e),
                }
            }
        }
    }
    let start = Instant::now();
    for (_, per_target) in &mut sets {
        for set in per_target.iter_mut() {
            set.enable().map_err(CliError::failed)?;
        }
    }
    let children_before = children_cpu_time();
    let status = std::process::Command::new(&command[0])
        .args(&command[1..])
        .status();
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    let children_after = children_cpu_time();
    for (indices, per_target) in &mut sets {
        let mut totals = vec![Reading::default(); indices.len()];
        for set in per_target.iter_mut() {
            set.disable().map_err(CliError::failed)?;
            let readings = set.read_to_vec().map_err(CliError::failed)?;
            for (total, reading) in totals.iter_mut().zip(readings) {
                total.value = total.value.saturating_add(reading.value);
                total.time_enabled = total.time_enabled.saturating_add(reading.time_enabled);
                total.time_running = total.time_running.saturating_add(reading.time_running);
            }
        }
        for (&index, total) in indices.iter().zip(totals) {
            results[index].outcome = Ok(total);
        }
    }
    let (exit_code, exit_description) = match status {
        Ok(status) => describe_status(status.code(), signal_of(&status)),
        Err(e) => {
            return Err(CliError {
                error: Error::new(
                    ErrorKind::NotFound,
                    format!("cannot run {:?}: {e}", command[0]),
                ),
                usage: None,
                exit_code: 127,
            });
        }
    };
    let (user_ns, sys_ns) = match (children_before, children_after) {
        (Some(before), Some(after)) => (
            Some(after.0.saturating_sub(before.0)),
            Some(after.1.saturating_sub(before.1)),
        ),
        _ => (None, None),
    };
    Ok(Run {
        events: results,
        exit_code,
        exit_description,
        elapsed_ns,
        user_ns,
        sys_ns,
        note: None,
    })
}

/// The user and system CPU time of this process's waited-for children, in nanoseconds.
#[cfg(unix)]
fn children_cpu_time() -> Option<(u64, u64)> {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).ok()?;
    let nanos = |t: nix::sys::time::TimeVal| {
        (t.tv_sec() as u64).saturating_mul(1_000_000_000) + (t.tv_usec() as u64) * 1_000
    };
    Some((nanos(usage.user_time()), nanos(usage.system_time())))
}

#[cfg(not(unix))]
fn children_cpu_time() -> Option<(u64, u64)> {
    None
}

#[cfg(unix)]
fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}

#[cfg(not(unix))]
fn signal_of(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// The exit code passed on, and words for it.
pub fn describe_status(code: Option<i32>, signal: Option<i32>) -> (u8, String) {
    match (code, signal) {
        (Some(code), _) => ((code & 0xff) as u8, format!("exited with status {code}")),
        (None, Some(signal)) => (
            (128 + signal).clamp(0, 255) as u8,
            format!("was killed by signal {signal}"),
        ),
        (None, None) => (1, "ended with an unknown status".into()),
    }
}

/// The Linux backend, when it is the one counting (it runs commands as `perf stat` does).
#[cfg(target_os = "linux")]
type Linux = counterhal::linux::LinuxBackend;
/// No Linux backend on this OS.
#[cfg(not(target_os = "linux"))]
type Linux = std::convert::Infallible;

fn measure<B: Backend>(
    args: &StatArgs,
    backend: &B,
    linux: Option<&Linux>,
    events: &[Planned],
) -> Result<Run, CliError> {
    let targets = targets(args)?;
    if let (Some(linux), None) = (linux, &targets) {
        return linux_command::run(args, linux, events);
    }
    let capabilities = backend.capabilities();
    let (targets, note) = match targets {
        Some(targets) => (targets, None),
        // A backend that counts per CPU, not per process, cannot follow CMD: count every CPU
        // where it can, and say whose activity the numbers are.
        None if capabilities.scope == Scope::SystemWidePerCpu && capabilities.targets.cpu => (
            online_cpus(),
            Some(format!(
                "{} counts per CPU, not per process: these are every CPU's counts while the \
                 command ran, including other programs",
                backend.label()
            )),
        ),
        None if capabilities.scope == Scope::SystemWidePerCpu => (
            vec![Target::ThisThread],
            Some(format!(
                "{} counts per CPU, not per process: these are the counts of the CPU this \
                 command started on, including other programs, and miss the command's time on \
                 other CPUs",
                backend.label()
            )),
        ),
        None => (vec![Target::ThisThread], None),
    };
    let mut run = run_generic(backend, events, &targets, &args.command)?;
    run.note = note;
    Ok(run)
}

#[cfg(target_os = "linux")]
mod linux_command {
    //! The Linux path for a command, as `perf stat -- cmd` does it: the child is created,
    //! the counters are opened on it with enable-on-exec and inherit, then it executes.
    use super::*;
    use counterhal::hal::EventRequest;

    pub fn run(args: &StatArgs, backend: &Linux, events: &[Planned]) -> Result<Run, CliError> {
        // Every native term of every ready event, each opened on its own so that one event
        // the machine lacks does not keep the others from counting (perf's behaviour).
        let requests: Vec<EventRequest> = events
            .iter()
            .filter_map(|planned| match planned {
                Planned::Ready(event) => Some(event.terms.iter().map(|t| t.request.clone())),
                Planned::Unsupported { .. } => None,
            })
            .flatten()
            .collect();
        let options = OpenOptions::ungrouped();
        let run = backend
            .run_command(&requests, &args.command, &options)
            .map_err(|e| {
                let code = if e.kind() == ErrorKind::NotFound {
                    127
                } else {
                    1
                };
                CliError {
                    error: e,
                    usage: None,
                    exit_code: code,
                }
            })?;
        let mut outcomes = run.events.into_iter();
        let mut results = Vec::with_capacity(events.len());
        for planned in events {
            let (name, outcome) = match planned {
                Planned::Unsupported { name, error } => (name.clone(), Err(error.clone())),
                Planned::Ready(event) => {
                    let terms: Vec<_> = outcomes.by_ref().take(event.terms.len()).collect();
                    let readings: Result<Vec<Reading>, Error> =
                        terms.into_iter().map(|t| t.reading).collect();
                    (event.name.clone(), readings.map(|r| event.combine(&r)))
                }
            };
            results.push(EventResult {
                name,
                backend: "linux".into(),
                outcome,
            });
        }
        let (exit_code, exit_description) =
            describe_status(run.exit.status.code(), signal_of(&run.exit.status));
        Ok(Run {
            events: results,
            exit_code,
            exit_description,
            elapsed_ns: run.exit.elapsed.as_nanos() as u64,
            user_ns: Some(run.exit.user_time.as_nanos() as u64),
            sys_ns: Some(run.exit.system_time.as_nanos() as u64),
            note: None,
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod linux_command {
    use super::*;

    pub fn run(_args: &StatArgs, linux: &Linux, _events: &[Planned]) -> Result<Run, CliError> {
        match *linux {}
    }
}

/// Runs `counterhal stat`.
pub fn run(args: StatArgs) -> Result<ExitCode, CliError> {
    if args.command.is_empty() {
        return Err(CliError::usage(
            Error::invalid_input("no command to measure").with_hint(
                "give the command after `--`, e.g. `counterhal stat -- ls`; with -p or -a, \
                 `-- sleep 1` bounds the measurement",
            ),
            USAGE,
        ));
    }
    if args.separator.as_deref() == Some("") {
        return Err(CliError::usage(
            Error::invalid_input("an empty field separator for -x")
                .with_hint("give one, e.g. -x, or -x ';'"),
            USAGE,
        ));
    }
    // Check the output file before the command runs, so a bad path loses nothing.
    if let Some(path) = &args.output {
        std::fs::File::create(path).map_err(|e| {
            CliError::usage(
                Error::invalid_input(format!("cannot write {}: {e}", path.display())),
                USAGE,
            )
        })?;
    }
    let context = args.database.context()?;
    // The Linux backend is probed once and used directly (it runs commands itself); any other
    // backend is used through the portable facade.
    #[cfg(target_os = "linux")]
    if args
        .backend
        .is_none_or(|registration| registration.name == "linux")
    {
        match counterhal::linux::probe(context.database.clone(), context.model.clone()) {
            Ok(linux) => return stat_with(&args, &linux, Some(&linux)),
            Err(e) if args.backend.is_some() => return Err(CliError::failed(e)),
            Err(_) => {}
        }
    }
    let backend = choose_backend(&args, &context)?;
    stat_with(&args, &backend, None)
}

fn stat_with<B: Backend>(
    args: &StatArgs,
    backend: &B,
    linux: Option<&Linux>,
) -> Result<ExitCode, CliError> {
    let names: Vec<String> = if args.event_names.is_empty() {
        DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect()
    } else {
        args.event_names
            .iter()
            .map(|e| e.trim().to_string())
            .collect()
    };
    if names.iter().any(String::is_empty) {
        return Err(CliError::usage(
            Error::invalid_input("an empty event name in -e")
                .with_hint("name events separated by commas, e.g. -e page-faults,task-clock"),
            USAGE,
        ));
    }
    let events = resolve_all(backend, &names)?;
    let mut runs = Vec::new();
    for _ in 0..args.repeat {
        runs.push(measure(args, backend, linux, &events)?);
    }
    let summary = summarize(&runs);
    let mean = mean_run(&runs);
    let last = &mean;
    let mut out = String::new();
    if args.json {
        print_json(&mut out, args, &summary, last);
    } else if let Some(separator) = &args.separator {
        print_csv(&mut out, separator, &summary);
    } else {
        print_table(&mut out, args, &summary, last, runs.len());
    }
    match &args.output {
        Some(path) => std::fs::write(path, &out).map_err(|e| {
            CliError::input(Error::invalid_input(format!(
                "cannot write {}: {e}",
                path.display()
            )))
        })?,
        None => eprint!("{out}"),
    }
    Ok(ExitCode::from(last.exit_code))
}

/// One event over every run: mean of the readings, and the spread of the values.
struct Summary {
    name: String,
    backend: String,
    reading: Result<Reading, String>,
    stddev_percent: Option<f64>,
}

fn summarize(runs: &[Run]) -> Vec<Summary> {
    let first = &runs[0];
    (0..first.events.len())
        .map(|i| {
            let outcomes: Vec<&Result<Reading, Error>> =
                runs.iter().map(|r| &r.events[i].outcome).collect();
            let reading = match outcomes.iter().find_map(|o| o.as_ref().err()) {
                Some(e) => Err(e.to_string()),
                None => {
                    let n = outcomes.len() as u128;
                    let sum = |f: fn(&Reading) -> u64| -> u64 {
                        let total: u128 = outcomes
                            .iter()
                            .map(|o| u128::from(f(o.as_ref().unwrap())))
                            .sum();
                        (total / n) as u64
                    };
                    Ok(Reading::new(
                        sum(|r| r.value),
                        sum(|r| r.time_enabled),
                        sum(|r| r.time_running),
                    ))
                }
            };
            let stddev_percent = match (&reading, runs.len()) {
                (Ok(mean), n) if n > 1 && mean.value > 0 => {
                    let values: Vec<f64> = outcomes
                        .iter()
                        .map(|o| o.as_ref().unwrap().value as f64)
                        .collect();
                    let mean_value = values.iter().sum::<f64>() / values.len() as f64;
                    let variance = values.iter().map(|v| (v - mean_value).powi(2)).sum::<f64>()
                        / (values.len() as f64 - 1.0);
                    Some(100.0 * (variance / values.len() as f64).sqrt() / mean_value)
                }
                _ => None,
            };
            Summary {
                name: first.events[i].name.clone(),
                backend: first.events[i].backend.clone(),
                reading,
                stddev_percent,
            }
        })
        .collect()
}

fn is_clock(name: &str) -> bool {
    let base = name.split(':').next().unwrap_or(name);
    base.eq_ignore_ascii_case("task-clock") || base.eq_ignore_ascii_case("cpu-clock")
}

/// What an event measures, for the derived ratios: perf's names, their aliases and modifiers,
/// and the PAPI presets that mean the same.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Measures {
    Instructions,
    Cycles,
    Branches,
    BranchMisses,
    CacheReferences,
    CacheMisses,
}

fn measures(name: &str) -> Option<Measures> {
    use counterhal::hal::{GeneralizedEvent, HardwareEvent, Preset};
    let base = name.split(':').next().unwrap_or(name);
    match GeneralizedEvent::from_name(base)? {
        GeneralizedEvent::Hardware(HardwareEvent::Instructions)
        | GeneralizedEvent::Preset(Preset::TotIns) => Some(Measures::Instructions),
        GeneralizedEvent::Hardware(HardwareEvent::Cycles)
        | GeneralizedEvent::Preset(Preset::TotCyc) => Some(Measures::Cycles),
        GeneralizedEvent::Hardware(HardwareEvent::Branches)
        | GeneralizedEvent::Preset(Preset::BrIns) => Some(Measures::Branches),
        GeneralizedEvent::Hardware(HardwareEvent::BranchMisses)
        | GeneralizedEvent::Preset(Preset::BrMsp) => Some(Measures::BranchMisses),
        GeneralizedEvent::Hardware(HardwareEvent::CacheReferences) => {
            Some(Measures::CacheReferences)
        }
        GeneralizedEvent::Hardware(HardwareEvent::CacheMisses) => Some(Measures::CacheMisses),
        _ => None,
    }
}

/// The estimate of the first event in the table that measures `what`.
fn find_value(summary: &[Summary], what: Measures) -> Option<u64> {
    summary
        .iter()
        .find(|s| measures(&s.name) == Some(what))
        .and_then(|s| s.reading.as_ref().ok())
        .and_then(|r| r.scaled())
}

fn ratio_note(summary: &[Summary], entry: &Summary) -> String {
    let Some(value) = entry.reading.as_ref().ok().and_then(|r| r.scaled()) else {
        return String::new();
    };
    let (base, what, words) = match measures(&entry.name) {
        Some(Measures::Instructions) => (Measures::Cycles, "insn per cycle", false),
        Some(Measures::BranchMisses) => (Measures::Branches, "of all branches", true),
        Some(Measures::CacheMisses) => (Measures::CacheReferences, "of all cache refs", true),
        _ => return String::new(),
    };
    match find_value(summary, base) {
        Some(total) if total > 0 && words => {
            format!("#  {:.2}% {what}", 100.0 * value as f64 / total as f64)
        }
        Some(total) if total > 0 => format!("#  {:.2}  {what}", value as f64 / total as f64),
        _ => String::new(),
    }
}

/// The runs' mean elapsed, user and system times, with the last run's exit status and note.
fn mean_run(runs: &[Run]) -> Run {
    let n = runs.len().max(1) as u64;
    let last = runs.last().expect("at least one run");
    let mean = |f: fn(&Run) -> Option<u64>| -> Option<u64> {
        runs.iter()
            .map(f)
            .sum::<Option<u64>>()
            .map(|total| total / n)
    };
    Run {
        events: Vec::new(),
        exit_code: last.exit_code,
        exit_description: last.exit_description.clone(),
        elapsed_ns: mean(|r| Some(r.elapsed_ns)).unwrap_or(0),
        user_ns: mean(|r| r.user_ns),
        sys_ns: mean(|r| r.sys_ns),
        note: last.note.clone(),
    }
}

fn print_table(out: &mut String, args: &StatArgs, summary: &[Summary], last: &Run, runs: usize) {
    let command: Vec<String> = args
        .command
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    out.push('\n');
    // What was counted: the command, or (with -p, -a, -C) the process or CPUs while it ran.
    let what = if let Some(pid) = args.pid {
        format!("process id '{pid}'")
    } else if args.all_cpus {
        "'system wide'".to_string()
    } else if let Some(list) = &args.cpu_list {
        format!("CPUs '{list}'")
    } else {
        format!("'{}'", command.join(" "))
    };
    if runs > 1 {
        _ = writeln!(out, " Performance counter stats for {what} ({runs} runs):");
    } else {
        _ = writeln!(out, " Performance counter stats for {what}:");
    }
    out.push('\n');
    let mut reasons: Vec<(String, String)> = Vec::new();
    for entry in summary {
        match &entry.reading {
            Err(reason) => {
                _ = writeln!(out, "{:>18}      {}", "<not supported>", entry.name);
                reasons.push((entry.name.clone(), reason.clone()));
            }
            Ok(reading) => match reading.scaled() {
                None => _ = writeln!(out, "{:>18}      {}", "<not counted>", entry.name),
                Some(value) => {
                    let shown = if is_clock(&entry.name) {
                        format!("{:.2} msec", value as f64 / 1e6)
                    } else {
                        thousands(value)
                    };
                    let mut line = format!(
                        "{shown:>18}      {:<32} {}",
                        entry.name,
                        ratio_note(summary, entry)
                    );
                    if let Some(spread) = entry.stddev_percent {
                        line.push_str(&format!(" ( +- {spread:.2}% )"));
                    }
                    if reading.is_multiplexed() {
                        let percent = 100.0 * reading.fraction_running().unwrap_or(0.0);
                        line.push_str(&format!("  ({percent:.2}%)"));
                    }
                    _ = writeln!(out, "{}", line.trim_end());
                }
            },
        }
    }
    out.push('\n');
    if let Some(note) = &last.note {
        _ = writeln!(out, " Note: {note}.");
        out.push('\n');
    }
    _ = writeln!(out, "{:>18} seconds time elapsed", seconds(last.elapsed_ns));
    if let (Some(user), Some(sys)) = (last.user_ns, last.sys_ns) {
        out.push('\n');
        _ = writeln!(out, "{:>18} seconds user", seconds(user));
        _ = writeln!(out, "{:>18} seconds sys", seconds(sys));
    }
    out.push('\n');
    if last.exit_code != 0 {
        _ = writeln!(out, " The command {}.", last.exit_description);
        out.push('\n');
    }
    if !reasons.is_empty() {
        _ = writeln!(out, " Not supported here:");
        let mut seen: Vec<&str> = Vec::new();
        for (name, reason) in &reasons {
            // Say each distinct reason once (messages start with the event's name).
            let reason = reason.strip_prefix(&format!("{name}: ")).unwrap_or(reason);
            if seen.contains(&reason) {
                _ = writeln!(out, "   {name}: as above");
            } else {
                _ = writeln!(out, "   {name}: {reason}");
                seen.push(reason);
            }
        }
        out.push('\n');
    }
}

/// One line per event: value, unit, name, time running (ns), percent running, and with -r the
/// spread (stddev of the mean, %).
fn print_csv(out: &mut String, separator: &str, summary: &[Summary]) {
    for entry in summary {
        let (value, unit, running, percent) = match &entry.reading {
            Err(_) => ("<not supported>".to_string(), "", 0, 0.0),
            Ok(reading) => match reading.scaled() {
                None => ("<not counted>".to_string(), "", reading.time_running, 0.0),
                Some(value) => {
                    let unit = if is_clock(&entry.name) { "ns" } else { "" };
                    let percent = 100.0 * reading.fraction_running().unwrap_or(0.0);
                    (value.to_string(), unit, reading.time_running, percent)
                }
            },
        };
        // With -r, perf's CSV puts the spread (stddev of the mean, in %) between the value and
        // the unit... after the name here, as a sixth field, so the first five stay fixed.
        let spread = entry
            .stddev_percent
            .map_or(String::new(), |spread| format!("{separator}{spread:.2}"));
        _ = writeln!(
            out,
            "{value}{separator}{unit}{separator}{}{separator}{running}{separator}{percent:.2}{spread}",
            entry.name
        );
    }
}

fn print_json(out: &mut String, args: &StatArgs, summary: &[Summary], last: &Run) {
    let command: Vec<String> = args
        .command
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let events: Vec<serde_json::Value> = summary
        .iter()
        .map(|entry| match &entry.reading {
            Ok(reading) => json!({
                "name": entry.name,
                "backend": entry.backend,
                "value": reading.value,
                "time_enabled": reading.time_enabled,
                "time_running": reading.time_running,
                "scaled": reading.scaled(),
                "supported": true,
                "reason": null,
                "stddev_percent": entry.stddev_percent,
            }),
            Err(reason) => json!({
                "name": entry.name,
                "backend": entry.backend,
                "value": null,
                "time_enabled": null,
                "time_running": null,
                "scaled": null,
                "supported": false,
                "reason": reason,
            }),
        })
        .collect();
    let object = json!({
        "command": command,
        "exit_status": last.exit_code,
        "elapsed_ns": last.elapsed_ns,
        "runs": args.repeat,
        "note": last.note,
        "events": events,
    });
    _ = writeln!(out, "{object}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        let cpus = parse_cpu_list("0,2-3").unwrap();
        assert_eq!(cpus, vec![Target::Cpu(0), Target::Cpu(2), Target::Cpu(3)]);
        for bad in ["", "a", "3-1", "1-", "0,,1"] {
            let e = parse_cpu_list(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}");
            assert!(e.hint().unwrap().contains("0,2-3"));
        }
    }

    #[test]
    fn statuses() {
        assert_eq!(describe_status(Some(3), None).0, 3);
        assert_eq!(describe_status(None, Some(9)).0, 137);
        assert_eq!(describe_status(Some(0), None).1, "exited with status 0");
    }
}
