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
use super::pacing::{Pace, Step};
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
    /// With `-A` or `--per-thread`, the final counts of each CPU or thread.
    pub places: Vec<Counts>,
    /// With `-I`, the counts so far at each interval's end (cumulative: an interval is the
    /// difference from the one before), the last one at the command's end.
    pub snapshots: Vec<Snapshot>,
}

/// Where counts were counted, when they are not added up (`-A`, `--per-thread`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// One CPU.
    Cpu(u32),
    /// One thread of the process: its id and its name (`comm`).
    Thread {
        /// The thread's id.
        tid: u32,
        /// Its name, as the OS shows it.
        name: String,
    },
}

impl Place {
    /// perf's label for it: `CPU0`, or the thread's `name-tid`.
    pub fn label(&self) -> String {
        match self {
            Place::Cpu(cpu) => format!("CPU{cpu}"),
            Place::Thread { tid, name } => format!("{name}-{tid}"),
        }
    }

    /// perf's JSON key and value for it: `"cpu" : "0"` or `"thread" : "name-tid"`.
    pub fn json_field(&self) -> (&'static str, String) {
        match self {
            Place::Cpu(cpu) => ("cpu", cpu.to_string()),
            Place::Thread { .. } => ("thread", self.label()),
        }
    }

    /// The place a backend target stands for.
    fn of(target: &Target) -> Option<Place> {
        match *target {
            Target::Cpu(cpu) => Some(Place::Cpu(cpu)),
            Target::Process { pid, .. } => Some(Place::Thread {
                tid: pid,
                name: thread_name(pid),
            }),
            _ => None,
        }
    }
}

/// A thread's name from `/proc/TID/comm`, or `?` where the OS does not tell (perf's
/// `comm-tid` label uses it).
fn thread_name(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .map(|name| name.trim_end().to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// One event result per planned event, counted in one place (`None`: everywhere, added up).
#[derive(Clone, Debug)]
pub struct Counts {
    /// Where (none: the sum over every target).
    pub place: Option<Place>,
    /// One per planned event: its reading, or why it was not counted.
    pub readings: Vec<Result<Reading, Error>>,
}

/// The counts so far at one moment of a run (`-I`).
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// How long after the start, in nanoseconds.
    pub at_ns: u64,
    /// The counts, summed (one entry) or per place.
    pub counts: Vec<Counts>,
}

/// How to count besides what: per place or summed, and when to read and stop.
#[derive(Clone, Copy, Debug, Default)]
pub struct Plan {
    /// Keep each CPU's or thread's counts (`-A`, `--per-thread`).
    pub per_place: bool,
    /// When to read and when to stop the command.
    pub pace: Pace,
    /// Whether the command is the timer that stands for none (`-a` alone): how it ends is no
    /// exit status to pass on.
    pub timer: bool,
}

/// Nanoseconds in a duration, saturating.
fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
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
    plan: Plan,
) -> Result<Vec<Run>, CliError> {
    (0..repeat)
        .map(|_| {
            let mut run = measure(backend, events, targets, command, plan)?;
            if plan.timer {
                // The timer ended as asked (Ctrl-C or the timeout): nothing failed, and its
                // CPU times are no one's.
                run.end.exit_code = 0;
                run.end.exit_description = "ended".to_string();
                run.end.user_ns = None;
                run.end.sys_ns = None;
            }
            Ok(run)
        })
        .collect()
}

/// One run: the command counted from its exec where the backend can follow one process,
/// else counters on the places asked for (or, for the command, the CPUs it may run on).
fn measure<B: Backend>(
    backend: &B,
    events: &[Planned],
    targets: &Targets,
    command: &[OsString],
    plan: Plan,
) -> Result<Run, CliError> {
    let capabilities = backend.capabilities();
    let (attach, note) = match targets {
        Targets::Attach(attach) => (attach.clone(), None),
        Targets::Command if capabilities.supports(&Target::Exec { pid: 0 }) => {
            return run_counted_command(backend, events, command, plan.pace);
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
    let mut run = run_on_targets(backend, events, &attach, command, plan)?;
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
    plan: Plan,
) -> Result<Run, CliError> {
    let label = backend.label();
    let mut results: Vec<EventResult> = events.iter().map(|p| p.result(&label)).collect();
    let sets = open_sets(backend, events, attach, &mut results)?;
    run_and_read(sets, command, results, plan)
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

/// Holds the command before `exec`, enables every set, lets it run (reading at each interval
/// and stopping it when its time is up), and once it has ended disables and reads every set,
/// putting each event's sum over the targets in its result (and, per place, each target's).
fn run_and_read<G: Group>(
    mut sets: Vec<Opened<G>>,
    command: &[OsString],
    mut results: Vec<EventResult>,
    plan: Plan,
) -> Result<Run, CliError> {
    let mut child = WaitingChild::spawn(command).map_err(not_run)?;
    for (_, set) in &mut sets {
        set.enable().map_err(CliError::failed)?;
    }
    let forwarding = ForwardSignals::to(child.pid());
    let started = std::time::Instant::now();
    let released = child.release();
    let mut snapshots = Vec::new();
    let mut failed = None;
    if released.is_ok() {
        let pid = child.pid();
        plan.pace.run(pid, started, |step| match step {
            Step::Read(at) => match read_sets(&mut sets, results.len(), plan.per_place) {
                Ok(counts) => snapshots.push(Snapshot {
                    at_ns: nanos(at),
                    counts,
                }),
                Err(e) => _ = failed.get_or_insert(e),
            },
            Step::Stop => stop(child.child()),
        });
    }
    let ran = released.and_then(|()| child.wait());
    drop(forwarding);
    let at_end = nanos(started.elapsed());
    if let Some(e) = failed {
        return Err(CliError::failed(e));
    }
    for (_, set) in &mut sets {
        set.disable().map_err(CliError::failed)?;
    }
    let end = CommandEnd::of(&ran.map_err(not_run)?);
    let mut last = read_sets(&mut sets, results.len(), plan.per_place).map_err(CliError::failed)?;
    let totals = read_sets(&mut sets, results.len(), false).map_err(CliError::failed)?;
    for (result, total) in results.iter_mut().zip(&totals[0].readings) {
        if result.outcome.is_ok() {
            result.outcome = total.clone();
        }
    }
    let places = if plan.per_place {
        last.clone()
    } else {
        Vec::new()
    };
    if plan.pace.interval.is_some() {
        if !plan.per_place {
            last = totals;
        }
        snapshots.push(Snapshot {
            at_ns: at_end,
            counts: last,
        });
    }
    Ok(Run {
        events: results,
        end,
        places,
        snapshots,
    })
}

/// Reads every set: one [`Counts`] summed over the targets, or one per target (`per_place`).
/// Events no set holds read as not counted (their results keep the reason).
fn read_sets<G: Group>(
    sets: &mut [Opened<G>],
    n: usize,
    per_place: bool,
) -> Result<Vec<Counts>, Error> {
    let unread = || -> Vec<Result<Reading, Error>> {
        (0..n)
            .map(|_| Err(Error::new(ErrorKind::Other, "not opened")))
            .collect()
    };
    if !per_place {
        let mut readings = unread();
        for (indices, set) in sets.iter_mut() {
            for (&index, total) in indices.iter().zip(set.read_to_vec()?) {
                readings[index] = Ok(total);
            }
        }
        return Ok(vec![Counts {
            place: None,
            readings,
        }]);
    }
    let mut places: Vec<Counts> = Vec::new();
    for (indices, set) in sets.iter_mut() {
        for (target, readings) in set.read_each()? {
            let place = Place::of(&target);
            let at = match places.iter().position(|c| c.place == place) {
                Some(at) => at,
                None => {
                    places.push(Counts {
                        place,
                        readings: unread(),
                    });
                    places.len() - 1
                }
            };
            for (&index, reading) in indices.iter().zip(readings) {
                places[at].readings[index] = Ok(reading);
            }
        }
    }
    Ok(places)
}

/// Stops the command whose time is up (`--timeout`, `--interval-count`).
fn stop(child: Option<&mut std::process::Child>) {
    if let Some(child) = child {
        // Already ended: nothing to stop.
        _ = child.kill();
    }
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
    pace: Pace,
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
    let started = std::time::Instant::now();
    let mut snapshots = Vec::new();
    let label = backend.label();
    let place_all = |readings: Vec<Result<Reading, Error>>| {
        let mut readings = readings.into_iter();
        events
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
            .collect::<Vec<EventResult>>()
    };
    let count = counted.start().and_then(|()| {
        let pid = counted.pid();
        pace.run(pid, started, |step| match step {
            Step::Read(at) => {
                let readings = place_all(counted.read())
                    .into_iter()
                    .map(|r| r.outcome)
                    .collect();
                snapshots.push(Snapshot {
                    at_ns: nanos(at),
                    counts: vec![Counts {
                        place: None,
                        readings,
                    }],
                });
            }
            Step::Stop => stop(counted.child()),
        });
        counted.wait()
    });
    drop(forwarding);
    let at_end = nanos(started.elapsed());
    let count = count.map_err(not_run)?;
    let results = place_all(count.readings);
    if pace.interval.is_some() {
        snapshots.push(Snapshot {
            at_ns: at_end,
            counts: vec![Counts {
                place: None,
                readings: results.iter().map(|r| r.outcome.clone()).collect(),
            }],
        });
    }
    Ok(Run {
        events: results,
        end: CommandEnd::of(&count.exit),
        places: Vec::new(),
        snapshots,
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
