//! The measurement behind `counterhal stat`: the backend, the events planned on it, counters
//! opened on the targets, the command run, the counters read, as many times as `-r` asks.
//!
//! There are two paths, and both start the command the same way: forked and held before
//! `exec` ([`WaitingChild`]), with `SIGPIPE` at its default, and while it runs the signals
//! that end a command are the command's ([`ForwardSignals`]: Ctrl-C reaches it from the
//! terminal, `kill` or `timeout` sent to this process are passed on), so the counts are read
//! and printed however it ends. Where the backend can follow one process from its exec (Linux),
//! the counters are opened on the held child to start at its exec and follow what it creates
//! ([`counted`](super::counted)), as `perf stat -- cmd` does. Every other case (a per-CPU
//! backend, or `-p`, `-a`, `-C`) opens counters on each target of an [`Attach`]
//! ([`attached`](super::attached)), enables them just before the release, and adds up what
//! each target read (or keeps each target's, with `-A` and `--per-thread`).

use counterhal_hal::BackendExt;
use std::ffi::OsString;

use counterhal::Target as Attach;
use counterhal::advanced::AnyBackend;
use counterhal::advanced::Follow;
use counterhal::{Context, Error, ErrorKind, Registration};
use counterhal_hal::Backend;
use counterhal_hal::{
    BackendTarget, Countable, Reading, ResolvedEvent, Scope, countable_form, user_space_note,
};

use super::attached::run_on_targets;
use super::counted::run_counted_command;
use super::plan::{EventPlan, PlannedEvent};
use super::results::{OnInterval, Plan, Planned, Run, Snapshot};
use super::targets::Targets;
use super::tool::Tool;
use crate::error::CliError;

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

/// What is said under an event refused as bad input.
pub const EVENT_USAGE: &str = "-e EVENT: see `counterhal list` for the events available here";

/// Resolves every name (perf's tool events, `duration_time`, `user_time` and `system_time`,
/// are planned as such), or takes the event its PMU box already resolved to
/// ([`Boxes::to_plan`](super::boxes::Boxes::to_plan), resolved once); unknown names are
/// errors (exit 2), names that are valid but not countable here are planned as unsupported.
///
/// # Errors
/// [`ErrorKind::InvalidEvent`] for a name no database or backend knows, as bad input.
pub fn plan<'a, B: Backend>(
    backend: &B,
    events: impl IntoIterator<Item = (&'a str, Option<&'a ResolvedEvent>)>,
) -> Result<Vec<Planned>, CliError> {
    events
        .into_iter()
        .map(|(name, resolved)| {
            if let Some(event) = resolved {
                return Ok(Planned::Ready(event.clone()));
            }
            if let Some(tool) = Tool::named(name) {
                return Ok(Planned::Tool(tool));
            }
            match backend.resolve(name) {
                Ok(event) => Ok(Planned::Ready(event)),
                Err(e) if e.kind() == ErrorKind::InvalidEvent => {
                    Err(CliError::usage(e, EVENT_USAGE))
                }
                Err(error) => Ok(Planned::Unsupported {
                    name: name.to_string(),
                    error,
                }),
            }
        })
        .collect()
}

/// Gives each planned event named as the first of a pair of `shown_as` the second name (a
/// metric table's raw event, `r100001ea0`, its name there), as perf prints a table's events.
pub fn rename(events: &mut [Planned], shown_as: &[(String, String)]) {
    for planned in events.iter_mut() {
        let name = match planned {
            Planned::Ready(event) => &mut event.name,
            Planned::Unsupported { name, .. } => name,
            Planned::Tool(_) => continue,
        };
        if let Some((_, shown)) = shown_as.iter().find(|(raw, _)| raw == name) {
            *name = shown.clone();
        }
    }
}

/// perf's fallback where the OS refuses counting the kernel (Linux at `perf_event_paranoid`
/// 2 for an unprivileged user): each ready event with no modifier that is refused for that
/// reason but can count user space only is replaced by its `:u` form. Returns the note that
/// says so once under the results, naming the events and the reason.
///
/// Where this process may count the kernel (a software clock counting it opens), no event is
/// refused for that reason and nothing is tried per event: each event opens once, when it is
/// counted (as perf opens each once and falls back only when an open is refused).
pub fn fall_back_to_user_space<B: Backend>(
    backend: &B,
    events: &mut [PlannedEvent],
) -> Option<String> {
    if kernel_counting_permitted(backend) {
        return None;
    }
    let mut fell_back = Vec::new();
    let mut reason = None;
    for planned in events.iter_mut().map(|event| &mut event.what) {
        let Planned::Ready(event) = planned else {
            continue;
        };
        match countable_form(backend, event, &BackendTarget::ThisThread) {
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
    Some(user_space_note(&fell_back, &reason))
}

/// Whether this process may count the kernel here: `task-clock`, counting it, opens on this
/// thread (one open). `false` where the backend has no such clock or refuses it.
fn kernel_counting_permitted<B: Backend>(backend: &B) -> bool {
    backend.resolve("task-clock").is_ok_and(|clock| {
        matches!(
            countable_form(backend, &clock, &BackendTarget::ThisThread),
            Ok(Countable {
                kernel_refused: None,
                ..
            })
        )
    })
}

/// Counts `events` (each in its cgroup, if any; system-wide, each on its PMU's CPUs, if it
/// has its own; each group together, or each member alone where the group is weak and does
/// not open) on `targets` while `command` runs, once; each interval's snapshot (`-I`) goes to
/// `on_interval` as it is read, with its tool events filled in.
///
/// # Errors
/// A target that does not exist (exit 2), a command that is not found (127) or cannot be
/// executed (126), a counter that cannot be enabled, disabled or read (1).
pub fn measure_once<B: Backend + 'static>(
    backend: &B,
    events: &EventPlan,
    targets: &Targets,
    command: &[OsString],
    plan: Plan,
    on_interval: OnInterval<'_>,
) -> Result<Run, CliError> {
    let mut with_tools = |mut snapshot: Snapshot| {
        fill_tools_of_interval(&mut snapshot, events.what());
        on_interval(snapshot);
    };
    let mut run = measure(backend, events, targets, command, plan, &mut with_tools)?;
    if plan.timer {
        // The timer ended as asked (Ctrl-C or the timeout): nothing failed, and its CPU
        // times are no one's.
        run.end.exit_code = 0;
        run.end.exit_description = "ended".to_string();
        run.end.user_ns = None;
        run.end.sys_ns = None;
    }
    fill_tools(&mut run, events.what());
    Ok(run)
}

/// One run: the command counted from its exec where the backend can follow one process,
/// else counters on the places asked for (or, for the command, the CPUs it may run on).
fn measure<B: Backend + 'static>(
    backend: &B,
    events: &EventPlan,
    targets: &Targets,
    command: &[OsString],
    plan: Plan,
    on_interval: OnInterval<'_>,
) -> Result<Run, CliError> {
    let capabilities = backend.capabilities();
    #[cfg(target_os = "linux")]
    if plan.shared.is_some() {
        return super::bperf::run(backend, events, targets, command, plan, on_interval);
    }
    #[cfg(not(target_os = "linux"))]
    if plan.shared.is_some() {
        return Err(CliError::failed(Error::unsupported(format!(
            "-b/--bpf-counters: counters shared through BPF take Linux, not {}",
            backend.label()
        ))));
    }
    let (attach, note) = match targets {
        Targets::Attach(attach) => (attach.clone(), None),
        Targets::Command if capabilities.supports(&BackendTarget::Exec { pid: 0 }) => {
            // The command's `{a,b}` groups are counted as groups, the other events each alone.
            return run_counted_command(
                backend,
                events,
                command,
                plan.pace,
                Follow::Children,
                on_interval,
            );
        }
        // -i: the command's own process, without what it creates (perf stat -i -- cmd).
        Targets::CommandAlone if capabilities.supports(&BackendTarget::ExecAlone { pid: 0 }) => {
            return run_counted_command(
                backend,
                events,
                command,
                plan.pace,
                Follow::CommandOnly,
                on_interval,
            );
        }
        Targets::CommandAlone => {
            return Err(CliError::usage(
                Error::unsupported(format!(
                    "-i/--no-inherit with a command: {} cannot count one process without \
                     the processes it creates",
                    backend.label()
                ))
                .with_hint("count with the linux backend, or drop -i"),
                super::arguments::USAGE,
            ));
        }
        // A backend that counts per CPU, not per process, cannot follow CMD: count every CPU
        // where it can, and say whose activity the numbers are.
        Targets::Command
            if capabilities.scope() == Scope::SystemWidePerCpu && capabilities.targets().cpu =>
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
        Targets::Command if capabilities.scope() == Scope::SystemWidePerCpu => (
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
    let mut run = if plan.bpf_cgroups {
        super::bpf_cgroups::run(backend, events, &attach, command, plan, on_interval)?
    } else {
        run_on_targets(backend, events, &attach, command, plan, on_interval)?
    };
    run.end.note = note;
    Ok(run)
}

/// A reading of `ns` nanoseconds, running all along (0 reads as `<not counted>`, as perf
/// prints a tool event that measured nothing).
fn reading(ns: u64) -> Reading {
    Reading::new(ns, ns, ns)
}

/// Fills in the tool events of one interval's snapshot (each event of `events` planned as
/// one): `duration_time` is the time so far; the CPU times are not counted per interval (perf
/// prints them `<not counted>` there too).
pub fn fill_tools_of_interval<'a>(
    snapshot: &mut Snapshot,
    events: impl IntoIterator<Item = &'a Planned>,
) {
    let at = snapshot.at_ns;
    for (i, planned) in events.into_iter().enumerate() {
        let Planned::Tool(tool) = *planned else {
            continue;
        };
        for counts in &mut snapshot.counts {
            if let Some(slot) = counts.readings.get_mut(i) {
                *slot = match tool {
                    Tool::Duration => Ok(reading(at)),
                    // Known once the command ends, not per interval.
                    _ => Ok(Reading::default()),
                };
            }
        }
    }
}

/// Fills in the tool events of `run` (each event of `events` planned as one): their values
/// for the whole run; the CPU times are not counted per CPU or thread (perf prints them
/// `<not counted>` there too) and are not supported without a command.
pub fn fill_tools<'a>(run: &mut Run, events: impl IntoIterator<Item = &'a Planned>) {
    let end = &run.end;
    let whole = |tool: Tool| -> Result<Reading, Error> {
        let ns = match tool {
            Tool::Duration => Some(end.elapsed_ns),
            Tool::User => end.user_ns,
            Tool::System => end.sys_ns,
        };
        ns.map(reading).ok_or_else(|| {
            Error::unsupported(format!(
                "{}: no command was run to take its CPU time",
                tool.name()
            ))
        })
    };
    for (i, planned) in events.into_iter().enumerate() {
        let Planned::Tool(tool) = *planned else {
            continue;
        };
        if let Some(result) = run.events.get_mut(i) {
            result.outcome = whole(tool);
        }
        for counts in &mut run.places {
            if let Some(slot) = counts.readings.get_mut(i) {
                *slot = Ok(Reading::default());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::results::{CommandEnd, Counts, EventResult};
    use super::*;

    fn run(user_ns: Option<u64>) -> Run {
        let result = |name: &str| EventResult {
            name: name.to_string(),
            backend: "test".to_string(),
            outcome: Ok(Reading::default()),
            cgroup: None,
            scale: None,
        };
        Run {
            events: vec![
                result("page-faults"),
                result("duration_time"),
                result("user_time"),
                result("system_time"),
            ],
            end: CommandEnd {
                exit_code: 0,
                exit_description: String::new(),
                elapsed_ns: 5_000,
                user_ns,
                sys_ns: user_ns.map(|_| 0),
                note: None,
            },
            places: Vec::new(),
        }
    }

    fn snapshot() -> Snapshot {
        Snapshot {
            at_ns: 2_000,
            counts: vec![Counts {
                place: None,
                readings: vec![Ok(Reading::new(7, 1, 1)); 4],
            }],
        }
    }

    fn planned() -> Vec<Planned> {
        let counted = Planned::Unsupported {
            name: "page-faults".into(),
            error: Error::unsupported("kept"),
        };
        vec![
            counted,
            Planned::Tool(Tool::Duration),
            Planned::Tool(Tool::User),
            Planned::Tool(Tool::System),
        ]
    }

    #[test]
    fn the_end_fills_the_tool_events_and_leaves_the_others() {
        let mut with_command = run(Some(3_000));
        fill_tools(&mut with_command, &planned());
        let value = |r: &Result<Reading, Error>| r.as_ref().ok().and_then(Reading::scaled);
        let values: Vec<Option<u64>> = with_command
            .events
            .iter()
            .map(|e| value(&e.outcome))
            .collect();
        // page-faults untouched (a zero reading never ran), system time 0 is `<not counted>`.
        assert_eq!(values, [None, Some(5_000), Some(3_000), None]);
        let mut interval = snapshot();
        fill_tools_of_interval(&mut interval, &planned());
        let interval = &interval.counts[0].readings;
        assert_eq!(
            value(&interval[0]),
            Some(7),
            "counted events are the counters'"
        );
        assert_eq!(value(&interval[1]), Some(2_000), "the duration so far");
        assert_eq!((value(&interval[2]), value(&interval[3])), (None, None));
        assert!(interval[2].is_ok(), "not counted, as perf prints it");

        let mut timer = run(None);
        fill_tools(&mut timer, &planned());
        assert_eq!(value(&timer.events[1].outcome), Some(5_000));
        let why = timer.events[2].outcome.as_ref().unwrap_err();
        assert!(why.message().contains("no command"), "{why}");
    }
}
