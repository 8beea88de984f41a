//! Counting: resolving the names, opening them on the targets, running the command, reading.

use std::ffi::OsString;
use std::time::Instant;

use counterhal::hal::{EventSet, Group, OpenOptions, Reading, ResolvedEvent, Scope};
use counterhal::{AnyBackend, Backend, Context, Error, ErrorKind, Target};

use super::args::{StatArgs, USAGE};
use super::targets::{online_cpus, targets};
use crate::common::CliError;

/// One event's outcome in one run.
pub struct EventResult {
    pub(super) name: String,
    pub(super) backend: String,
    pub(super) outcome: Result<Reading, Error>,
}

/// One run of the command.
pub struct Run {
    pub(super) events: Vec<EventResult>,
    /// The command's exit status as this command passes it on.
    pub(super) exit_code: u8,
    pub(super) exit_description: String,
    pub(super) elapsed_ns: u64,
    pub(super) user_ns: Option<u64>,
    pub(super) sys_ns: Option<u64>,
    /// What the reader must know about whose activity was counted.
    pub(super) note: Option<String>,
}

pub(super) fn choose_backend(args: &StatArgs, context: &Context) -> Result<AnyBackend, CliError> {
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
pub(super) fn resolve_all<B: Backend>(
    backend: &B,
    names: &[String],
) -> Result<Vec<Planned>, CliError> {
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
pub(super) fn describe_status(code: Option<i32>, signal: Option<i32>) -> (u8, String) {
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
pub(super) type Linux = counterhal::linux::LinuxBackend;
/// No Linux backend on this OS.
#[cfg(not(target_os = "linux"))]
pub(super) type Linux = std::convert::Infallible;

pub(super) fn measure<B: Backend>(
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
            online_cpus().iter().map(Target::cpu).collect(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        assert_eq!(describe_status(Some(3), None).0, 3);
        assert_eq!(describe_status(Some(256 + 7), None).0, 7);
        assert_eq!(describe_status(None, Some(9)).0, 137);
        assert_eq!(describe_status(Some(0), None).1, "exited with status 0");
        assert_eq!(describe_status(None, None).0, 1);
    }
}
