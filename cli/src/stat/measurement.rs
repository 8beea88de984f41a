//! The measurement behind `counterhal stat`: the backend, the events planned on it, counters
//! opened on the targets, the command run, the counters read, as many times as `-r` asks.
//!
//! There are two paths, and both start the command the same way: forked and held before
//! `exec` ([`WaitingChild`]), with `SIGPIPE` at its default, and while it runs the signals
//! that end a command are the command's ([`ForwardSignals`]: Ctrl-C reaches it from the
//! terminal, `kill` or `timeout` sent to this process are passed on), so the counts are read
//! and printed however it ends. Where the backend can follow one process from its exec (Linux),
//! the counters are opened on the held child to start at its exec and follow what it creates
//! ([`CountedCommand`]), as `perf stat -- cmd` does. Every other case (a per-CPU backend, or
//! `-p`, `-a`, `-C`) opens counters on each target of an [`Attach`] ([`MultiSet`]), enables
//! them just before the release, and adds up what each target read.

use std::ffi::OsString;

use counterhal::process::{
    ChildExit, ForwardSignals, WaitingChild, belongs_to_another_user, command_for, exit_code_for,
};

use counterhal::hal::{
    Countable, Group, OpenOptions, Reading, ResolvedEvent, Scope, countable_form,
};
use counterhal::{
    AnyBackend, Attach, Backend, Context, CountedCommand, Error, ErrorKind, MultiSet, Registration,
    Target,
};

use super::arguments::USAGE;
use super::targets::Targets;
use crate::error::CliError;

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

impl Planned {
    /// The resolved event, when it is ready to open.
    fn ready(&self) -> Option<&ResolvedEvent> {
        match self {
            Planned::Ready(event) => Some(event),
            Planned::Unsupported { .. } => None,
        }
    }

    /// The event's result before anything is counted: a zero reading, or why it cannot count.
    fn result(&self, backend: &str) -> EventResult {
        let (name, outcome) = match self {
            Planned::Ready(event) => (event.name.clone(), Ok(Reading::default())),
            Planned::Unsupported { name, error } => (name.clone(), Err(error.clone())),
        };
        EventResult {
            name,
            backend: backend.to_string(),
            outcome,
        }
    }
}

/// One event's outcome in one run.
pub struct EventResult {
    /// The event's name as given.
    pub name: String,
    /// The label of the backend that counted it.
    pub backend: String,
    /// Its reading (summed over the targets), or why it could not be counted.
    pub outcome: Result<Reading, Error>,
}

/// One run of the command.
pub struct Run {
    /// One result per planned event, in the order given.
    pub events: Vec<EventResult>,
    /// How the command ended and what it cost.
    pub end: CommandEnd,
}

/// How the command ended, what it cost, and whose activity was counted: for one run, or as
/// the runs' mean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandEnd {
    /// The command's exit status as this command passes it on.
    pub exit_code: u8,
    /// The command's end in words (`exited with status 3`).
    pub exit_description: String,
    /// Wall time, in nanoseconds.
    pub elapsed_ns: u64,
    /// The command's user CPU time, in nanoseconds, where the OS tells.
    pub user_ns: Option<u64>,
    /// The command's system CPU time, in nanoseconds, where the OS tells.
    pub sys_ns: Option<u64>,
    /// What the reader must know about whose activity was counted.
    pub note: Option<String>,
}

impl CommandEnd {
    /// The end of a command as the OS reported it.
    fn of(exit: &ChildExit) -> Self {
        let nanos = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        CommandEnd {
            exit_code: exit.exit_code(),
            exit_description: exit.describe(),
            elapsed_ns: nanos(exit.elapsed),
            user_ns: Some(nanos(exit.user_time)),
            sys_ns: Some(nanos(exit.system_time)),
            note: None,
        }
    }
}

/// The backend registered as `registration`, or the first that works here.
///
/// # Errors
/// The named backend's probe error, or (none named) every backend's reason it is unusable;
/// a failure (exit 1).
pub fn choose_backend(
    registration: Option<&'static Registration>,
    context: &Context,
) -> Result<AnyBackend, CliError> {
    if let Some(registration) = registration {
        return counterhal::probe(registration, context).map_err(CliError::failed);
    }
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

/// Resolves every name; unknown names are errors (exit 2), names that are valid but not
/// countable here are planned as unsupported.
///
/// # Errors
/// [`ErrorKind::InvalidEvent`] for a name no database or backend knows, as bad input.
pub fn plan<B: Backend>(backend: &B, names: &[String]) -> Result<Vec<Planned>, CliError> {
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

/// perf's fallback where the OS refuses counting the kernel (Linux at `perf_event_paranoid`
/// 2 for an unprivileged user): each ready event with no modifier that is refused for that
/// reason but can count user space only is replaced by its `:u` form. Returns the note that
/// says so once under the results, naming the events and the reason.
pub fn fall_back_to_user_space<B: Backend>(backend: &B, events: &mut [Planned]) -> Option<String> {
    let mut fell_back = Vec::new();
    let mut reason = None;
    for planned in events.iter_mut() {
        let Planned::Ready(event) = planned else {
            continue;
        };
        match countable_form(backend, event, &Target::ThisThread) {
            Ok(Countable {
                event: user,
                kernel_refused: Some(refused),
            }) => {
                fell_back.push(user.name.clone());
                reason.get_or_insert(refused);
                *planned = Planned::Ready(user);
            }
            // Refused for another cause too (no such PMU here): that one is the real blocker.
            Err(error)
                if error.kind() != ErrorKind::PermissionDenied
                    && event.user_space_only().is_some() =>
            {
                let name = event.name.clone();
                *planned = Planned::Unsupported { name, error };
            }
            _ => {}
        }
    }
    let reason = reason?;
    // The hint's first clause names the setting (`kernel.perf_event_paranoid is 2`).
    let hint = reason.hint().unwrap_or(reason.message());
    let why = hint.split(';').next().unwrap_or(hint);
    let verb = if fell_back.len() == 1 {
        "counts"
    } else {
        "count"
    };
    Some(format!(
        "counting the kernel is not permitted here ({why}), so {} {verb} user space only, as \
         perf stat does",
        fell_back.join(", ")
    ))
}

/// Counts `events` on `targets` while `command` runs, `repeat` times.
///
/// # Errors
/// A target that does not exist (exit 2), a command that is not found (127) or cannot be
/// executed (126), a counter that cannot be enabled, disabled or read (1).
pub fn measure_repeatedly<B: Backend>(
    backend: &B,
    events: &[Planned],
    targets: &Targets,
    command: &[OsString],
    repeat: u32,
) -> Result<Vec<Run>, CliError> {
    (0..repeat)
        .map(|_| measure(backend, events, targets, command))
        .collect()
}

/// One run: the command counted from its exec where the backend can follow one process,
/// else counters on the places asked for (or, for the command, the CPUs it may run on).
fn measure<B: Backend>(
    backend: &B,
    events: &[Planned],
    targets: &Targets,
    command: &[OsString],
) -> Result<Run, CliError> {
    let capabilities = backend.capabilities();
    let (attach, note) = match targets {
        Targets::Attach(attach) => (attach.clone(), None),
        Targets::Command if capabilities.supports(&Target::Exec { pid: 0 }) => {
            return run_counted_command(backend, events, command);
        }
        // A backend that counts per CPU, not per process, cannot follow CMD: count every CPU
        // where it can, and say whose activity the numbers are.
        Targets::Command
            if capabilities.scope == Scope::SystemWidePerCpu && capabilities.targets.cpu =>
        {
            (
                Attach::AllCpus,
                Some(format!(
                    "{} counts per CPU, not per process: these are every CPU's counts while \
                     the command ran, including other programs",
                    backend.label()
                )),
            )
        }
        Targets::Command if capabilities.scope == Scope::SystemWidePerCpu => (
            Attach::ThisThread,
            Some(format!(
                "{} counts per CPU, not per process: these are the counts of the CPU this \
                 command started on, including other programs, and miss the command's time on \
                 other CPUs",
                backend.label()
            )),
        ),
        Targets::Command => (Attach::ThisThread, None),
    };
    let mut run = run_on_targets(backend, events, &attach, command)?;
    run.end.note = note;
    Ok(run)
}

/// Each opened set: the indices (into the planned events) of what it counts, on every target.
type Opened<G> = (Vec<usize>, MultiSet<G>);

/// Counts the events on `attach` while `command` runs (every backend).
fn run_on_targets<B: Backend>(
    backend: &B,
    events: &[Planned],
    attach: &Attach,
    command: &[OsString],
) -> Result<Run, CliError> {
    let label = backend.label();
    let mut results: Vec<EventResult> = events.iter().map(|p| p.result(&label)).collect();
    let sets = open_sets(backend, events, attach, &mut results)?;
    let end = run_and_read(sets, command, &mut results)?;
    Ok(Run {
        events: results,
        end,
    })
}

/// Opens the ready events on every target: all at once first, since a backend with
/// constrained counters (P6's counter 1 counts only while counter 0 holds the enable bit) must
/// place them together; where that fails, each on its own, so that one event the machine lacks
/// does not hide the others (its result then says why). A thread of a process that exited
/// meanwhile is skipped.
fn open_sets<B: Backend>(
    backend: &B,
    events: &[Planned],
    attach: &Attach,
    results: &mut [EventResult],
) -> Result<Vec<Opened<B::Group>>, CliError> {
    let open_on_every_target = |indices: &[usize]| {
        let resolved: Vec<ResolvedEvent> = indices
            .iter()
            .filter_map(|&i| events[i].ready().cloned())
            .collect();
        MultiSet::open(backend, &resolved, attach, &OpenOptions::ungrouped())
    };
    let ready: Vec<usize> = events
        .iter()
        .enumerate()
        .filter_map(|(i, planned)| planned.ready().map(|_| i))
        .collect();
    let mut sets = Vec::new();
    match open_on_every_target(&ready) {
        Ok(opened) if !ready.is_empty() => sets.push((ready, opened)),
        _ => {
            for index in ready {
                match open_on_every_target(&[index]) {
                    Ok(opened) => sets.push((vec![index], opened)),
                    // A target that does not exist is the user's to fix, not an event the
                    // machine lacks.
                    Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::InvalidInput) => {
                        return Err(CliError::usage(e, USAGE));
                    }
                    // Out of file descriptors: no event is at fault, and counting fewer than
                    // asked without saying so would mislead (perf stops too).
                    Err(e) if e.kind() == ErrorKind::LimitReached => {
                        return Err(CliError::failed(e));
                    }
                    // Another user's process refuses every event: the target, not the event,
                    // is at fault.
                    Err(e)
                        if e.kind() == ErrorKind::PermissionDenied
                            && matches!(attach, Attach::Process(pid)
                                if belongs_to_another_user(*pid)) =>
                    {
                        return Err(CliError::failed(e));
                    }
                    Err(e) => results[index].outcome = Err(e),
                }
            }
        }
    }
    Ok(sets)
}

/// Holds the command before `exec`, enables every set, lets it run, and once it has ended
/// disables and reads every set, putting each event's sum over the targets in its result.
fn run_and_read<G: Group>(
    mut sets: Vec<Opened<G>>,
    command: &[OsString],
    results: &mut [EventResult],
) -> Result<CommandEnd, CliError> {
    let mut child = WaitingChild::spawn(command).map_err(not_run)?;
    for (_, set) in &mut sets {
        set.enable().map_err(CliError::failed)?;
    }
    let forwarding = ForwardSignals::to(child.pid());
    let ran = child.release().and_then(|()| child.wait());
    drop(forwarding);
    for (indices, set) in &mut sets {
        set.disable().map_err(CliError::failed)?;
        let totals = set.read_to_vec().map_err(CliError::failed)?;
        for (&index, total) in indices.iter().zip(totals) {
            results[index].outcome = Ok(total);
        }
    }
    Ok(CommandEnd::of(&ran.map_err(not_run)?))
}

/// A command that could not be run: 127 when it was not found, 126 when it could not be
/// executed, as a shell says.
fn not_run(error: Error) -> CliError {
    CliError {
        exit_code: exit_code_for(&error),
        error,
        usage: None,
    }
}

/// The command counted from its exec, as `perf stat -- cmd` does it: the child is created,
/// the counters are opened on it to start at its exec and follow what it creates, then it
/// executes. Each event is opened on its own, so one the machine lacks does not keep the
/// others from counting (perf's behaviour).
fn run_counted_command<B: Backend>(
    backend: &B,
    events: &[Planned],
    command: &[OsString],
) -> Result<Run, CliError> {
    let ready: Vec<ResolvedEvent> = events.iter().filter_map(Planned::ready).cloned().collect();
    let command = command_for(command).map_err(not_run)?;
    let mut counted = CountedCommand::new(backend, &ready, command, &OpenOptions::ungrouped())
        .map_err(|e| match e.kind() {
            ErrorKind::LimitReached => CliError::failed(e),
            _ => not_run(e),
        })?;
    // From here until the child is reaped, the signals that end a command are the command's,
    // not ours (passed on when sent to us alone), so the counts survive them: perf stat does
    // the same for Ctrl-C.
    let forwarding = ForwardSignals::to(counted.pid());
    let count = counted.start().and_then(|()| counted.wait());
    drop(forwarding);
    let count = count.map_err(not_run)?;
    let label = backend.label();
    let mut readings = count.readings.into_iter();
    let results = events
        .iter()
        .map(|planned| {
            let mut result = planned.result(&label);
            if planned.ready().is_some() {
                result.outcome = readings
                    .next()
                    .unwrap_or_else(|| Err(Error::new(ErrorKind::Other, "not read")));
            }
            result
        })
        .collect();
    Ok(Run {
        events: results,
        end: CommandEnd::of(&count.exit),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_not_found_exits_127_and_one_not_executable_126() {
        let missing = not_run(Error::new(ErrorKind::NotFound, "no such program"));
        assert_eq!(missing.exit_code, 127);
        let denied = not_run(Error::new(ErrorKind::PermissionDenied, "not executable"));
        assert_eq!(denied.exit_code, 126);
    }

    #[test]
    fn a_planned_event_starts_at_zero_or_with_its_reason() {
        let unsupported = Planned::Unsupported {
            name: "cycles".into(),
            error: Error::unsupported("no PMU"),
        };
        let result = unsupported.result("linux");
        assert_eq!(result.name, "cycles");
        assert_eq!(result.backend, "linux");
        assert_eq!(result.outcome.unwrap_err().message(), "no PMU");
    }
}
