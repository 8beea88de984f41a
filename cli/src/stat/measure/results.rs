//! What one run of `counterhal stat` yields, shared by the paths that count: the events as
//! planned, each event's result, how the command ended, and (with `-A`, `--per-thread`) the
//! counts per place; the snapshot taken at each interval of `-I`, handed on as it is taken
//! (never kept here); and what ends a command early.

use counterhal::Error;
use counterhal_hal::{Reading, ResolvedEvent};
use counterhal_process::{ChildExit, exit_code_for};
use std::path::Path;

use super::pacing::Pace;
use crate::error::CliError;
use crate::stat::plan::boxes::Scale;
use crate::stat::plan::planned::Planned;

/// One event's outcome in one run.
pub struct EventResult {
    /// The event's name as given.
    pub name: String,
    /// The label of the backend that counted it.
    pub backend: String,
    /// Its reading (summed over the targets), or why it could not be counted.
    pub outcome: Result<Reading, Error>,
    /// With `-G` or `--for-each-cgroup`, the cgroup it counted in (empty: none).
    pub cgroup: Option<String>,
    /// How its count is shown, where its PMU's alias says (`.scale`, `.unit`).
    pub scale: Option<Scale>,
}

impl EventResult {
    /// The result of `planned` before anything is counted: a zero reading, or why it cannot
    /// count; `backend` is the counting backend's label.
    pub fn planned(planned: &Planned, backend: &str) -> EventResult {
        let (name, outcome) = match planned {
            Planned::Ready(event) => (shown_name(event), Ok(Reading::default())),
            Planned::Unsupported { name, error } => (name.clone(), Err(error.clone())),
            Planned::Tool(tool) => (tool.name().to_string(), Ok(Reading::default())),
        };
        EventResult {
            name,
            backend: backend.to_string(),
            outcome,
            cgroup: None,
            scale: None,
        }
    }
}

/// The name perf shows for `event`: as given, but a tracepoint without its modifiers
/// (`syscalls:sys_enter_getpid:u` is shown `syscalls:sys_enter_getpid`: perf names a
/// tracepoint's evsel `system:event` and applies modifiers to its attr alone).
fn shown_name(event: &ResolvedEvent) -> String {
    let tracepoint = matches!(
        event.terms.as_slice(),
        [term] if matches!(&term.request.encoding,
            counterhal_hal::Encoding::Perf(attr) if attr.type_ == counterhal_events::perf::TYPE_TRACEPOINT)
    );
    match event.name.splitn(3, ':').collect::<Vec<_>>()[..] {
        [system, name, _modifiers] if tracepoint => format!("{system}:{name}"),
        _ => event.name.clone(),
    }
}

/// Why an event has no reading in one place: it was not opened there (an uncore event
/// counts on the CPUs of its PMU's cpumask alone). Such a place prints no line for it, as in
/// perf.
pub const NOT_OPENED_HERE: &str = "not opened in this place";

/// The reading of an event in a place where it was not opened ([`NOT_OPENED_HERE`]).
pub fn not_opened_here() -> Error {
    Error::new(counterhal::ErrorKind::Other, NOT_OPENED_HERE)
}

/// Whether `reading` is that of an event in a place where it was not opened.
pub fn is_absent(reading: &Result<Reading, Error>) -> bool {
    matches!(reading, Err(e) if e.message() == NOT_OPENED_HERE)
}

/// One run of the command.
pub struct Run {
    /// One result per planned event, in the order given.
    pub events: Vec<EventResult>,
    /// How the command ended and what it cost.
    pub end: CommandEnd,
    /// With `-A` or `--per-thread`, the final counts of each CPU or thread.
    pub places: Vec<Counts>,
}

/// Where `-I`'s snapshots go as they are taken: the counts so far at each interval's end
/// (cumulative: an interval is the difference from the one before), the last one at the
/// command's end. A run keeps none of them.
pub type OnInterval<'a> = &'a mut dyn FnMut(Snapshot);

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
    /// CPUs added up by socket, die, core or node (`--per-socket`...).
    Aggregate {
        /// perf's JSON key: `socket`, `die`, `core`, `node`.
        key: &'static str,
        /// perf's label: `S0`, `S0-D0`, `S0-D0-C1`, `N0`.
        label: String,
        /// How many CPUs were added up, event by event (an uncore event counts on fewer
        /// CPUs than a core event: perf's count is the event's).
        cpus: Vec<u32>,
    },
}

impl Place {
    /// perf's label for it: `CPU0`, or the thread's `name-tid`.
    pub fn label(&self) -> String {
        match self {
            Place::Cpu(cpu) => format!("CPU{cpu}"),
            Place::Thread { tid, name } => format!("{name}-{tid}"),
            Place::Aggregate { label, .. } => label.clone(),
        }
    }

    /// perf's JSON key and value for it: `"cpu" : "0"` or `"thread" : "name-tid"`.
    pub fn json_field(&self) -> (&'static str, String) {
        match self {
            Place::Cpu(cpu) => ("cpu", cpu.to_string()),
            Place::Thread { .. } => ("thread", self.label()),
            Place::Aggregate { key, label, .. } => (key, label.clone()),
        }
    }

    /// How many CPUs were added up here for event `event` (`--per-core`...; perf prints the
    /// number after the label); `None` where CPUs were not added up.
    pub fn cpus_added(&self, event: usize) -> Option<u32> {
        match self {
            Place::Aggregate { cpus, .. } => Some(cpus.get(event).copied().unwrap_or(0)),
            _ => None,
        }
    }

    /// Whether CPUs were added up here (`--per-core`...).
    pub fn is_aggregate(&self) -> bool {
        matches!(self, Place::Aggregate { .. })
    }

    /// The place one row of a set read per place counts.
    pub fn counted(system: &counterhal_system::System, place: &counterhal::Place) -> Option<Place> {
        match *place {
            counterhal::Place::Cpu(cpu) => Some(Place::Cpu(cpu)),
            counterhal::Place::Thread(tid) | counterhal::Place::Command(tid) => {
                Some(Place::Thread {
                    tid,
                    name: thread_name(system, tid),
                })
            }
            _ => None,
        }
    }
}

/// A thread's name from `/proc/TID/comm`, or `?` where the OS does not tell (perf's
/// `comm-tid` label uses it).
fn thread_name(system: &counterhal_system::System, tid: u32) -> String {
    system.thread_name(tid).unwrap_or_else(|| "?".to_string())
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

/// How to count besides what: per place or summed, when to read and stop, and the system
/// whose facts the count reads.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// The system the command reads (its threads, processes and CPUs), made where the
    /// command started.
    pub system: &'static counterhal::system::System,
    /// Keep each CPU's or thread's counts (`-A`, `--per-thread`).
    pub per_place: bool,
    /// When to read and when to stop the command.
    pub pace: Pace,
    /// Whether the command is the timer that stands for none (`-a` alone): how it ends is no
    /// exit status to pass on.
    pub timer: bool,
    /// Whether each cgroup's events are counted by a BPF program (`--bpf-counters`).
    pub bpf_cgroups: bool,
    /// `-b` alone: the events counted through leaders shared between sessions, with the attr
    /// map's path where one was given.
    pub shared: Option<Option<&'static Path>>,
}

/// Nanoseconds in a duration, saturating.
pub fn nanos(d: std::time::Duration) -> u64 {
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
    /// A command this command stopped because its time was up: that is no failure to pass
    /// on (perf exits 0 too).
    pub fn stopped_if(self, stopped: bool) -> Self {
        if !stopped {
            return self;
        }
        CommandEnd {
            exit_code: 0,
            exit_description: "was stopped when its time was up".to_string(),
            ..self
        }
    }

    /// The end of a command as the OS reported it.
    pub fn of(exit: &ChildExit) -> Self {
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

/// How long a command whose time is up (`--timeout`, `--interval-count`) has to end after
/// `SIGTERM` before it is killed (perf sends `SIGTERM` alone and waits).
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// A command that could not be run: 127 when it was not found, 126 when it could not be
/// executed, as a shell says.
pub fn not_run(error: Error) -> CliError {
    CliError {
        exit_code: exit_code_for(&error),
        error,
        usage: None,
    }
}

#[cfg(test)]
mod tests {
    use counterhal::ErrorKind;

    use super::*;

    #[test]
    fn a_program_not_found_exits_127_and_one_not_executable_126() {
        let missing = not_run(Error::new(ErrorKind::NotFound, "no such program"));
        assert_eq!(missing.exit_code, 127);
        let denied = not_run(Error::new(ErrorKind::PermissionDenied, "not executable"));
        assert_eq!(denied.exit_code, 126);
    }

    #[test]
    fn a_command_stopped_on_time_is_no_failure() {
        let killed = CommandEnd {
            exit_code: 137,
            exit_description: "was killed by signal 9".to_string(),
            elapsed_ns: 5,
            user_ns: None,
            sys_ns: None,
            note: None,
        };
        assert_eq!(killed.clone().stopped_if(false).exit_code, 137);
        let stopped = killed.stopped_if(true);
        assert_eq!(stopped.exit_code, 0);
        assert_eq!(stopped.elapsed_ns, 5);
    }

    #[test]
    fn a_planned_event_starts_at_zero_or_with_its_reason() {
        let unsupported = Planned::Unsupported {
            name: "cycles".into(),
            error: Error::unsupported("no PMU"),
        };
        let result = EventResult::planned(&unsupported, "linux");
        assert_eq!(result.name, "cycles");
        assert_eq!(result.backend, "linux");
        assert_eq!(result.outcome.unwrap_err().message(), "no PMU");
    }
}
