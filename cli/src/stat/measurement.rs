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

use std::ffi::OsString;

use counterhal::hal::{Countable, Scope, countable_form};
use counterhal::{AnyBackend, Attach, Backend, Context, Error, ErrorKind, Registration, Target};

use super::attached::run_on_targets;
use super::counted::run_counted_command;
use super::results::{Plan, Planned, Run};
use super::targets::Targets;
use super::tool::{self, Tool};
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

/// Resolves every name (perf's tool events, `duration_time`, `user_time` and `system_time`,
/// are planned as such); unknown names are errors (exit 2), names that are valid but not
/// countable here are planned as unsupported.
///
/// # Errors
/// [`ErrorKind::InvalidEvent`] for a name no database or backend knows, as bad input.
pub fn plan<B: Backend>(backend: &B, names: &[String]) -> Result<Vec<Planned>, CliError> {
    names
        .iter()
        .map(|name| {
            if let Some(tool) = Tool::named(name) {
                return Ok(Planned::Tool(tool));
            }
            match backend.resolve(name) {
                Ok(event) => Ok(Planned::Ready(event)),
                Err(e) if e.kind() == ErrorKind::InvalidEvent => Err(CliError::usage(
                    e,
                    "-e EVENT: see `counterhal list` for the events available here",
                )),
                Err(error) => Ok(Planned::Unsupported {
                    name: name.clone(),
                    error,
                }),
            }
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
    groups: &[Vec<usize>],
    command: &[OsString],
    repeat: u32,
    plan: Plan,
) -> Result<Vec<Run>, CliError> {
    (0..repeat)
        .map(|_| {
            let mut run = measure(backend, events, targets, groups, command, plan)?;
            if plan.timer {
                // The timer ended as asked (Ctrl-C or the timeout): nothing failed, and its
                // CPU times are no one's.
                run.end.exit_code = 0;
                run.end.exit_description = "ended".to_string();
                run.end.user_ns = None;
                run.end.sys_ns = None;
            }
            tool::fill(&mut run, events);
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
    groups: &[Vec<usize>],
    command: &[OsString],
    plan: Plan,
) -> Result<Run, CliError> {
    let capabilities = backend.capabilities();
    let (attach, note) = match targets {
        Targets::Attach(attach) => (attach.clone(), None),
        Targets::Command if capabilities.supports(&Target::Exec { pid: 0 }) => {
            // The command's `{a,b}` groups are counted as groups, the other events each alone.
            return run_counted_command(backend, events, command, plan.pace, groups);
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
    let mut run = run_on_targets(backend, events, &attach, groups, command, plan)?;
    run.end.note = note;
    Ok(run)
}
