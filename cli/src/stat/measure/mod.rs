//! The plan measured: counters opened on the targets, the command run (or the timer that
//! stands for one), the counters read, as many times as `-r` asks, each run between its
//! `--pre` and `--post` commands ([`hooks`]).
//!
//! There are two paths, and both start the command the same way: forked and held before
//! `exec` ([`WaitingChild`](counterhal_process::WaitingChild)), with `SIGPIPE` at its default,
//! and while it runs the signals that end a command are the command's ([`ForwardSignals`]:
//! Ctrl-C reaches it from the terminal, `kill` or `timeout` sent to this process are passed
//! on), so the counts are read and printed however it ends. Where the backend can follow one
//! process from its exec (Linux), the counters are opened on the held child to start at its
//! exec and follow what it creates ([`counted`]), as `perf stat -- cmd` does. Every other case
//! (a per-CPU backend, or `-p`, `-a`, `-C`) opens counters on each target of an [`Attach`]
//! ([`attached`]), enables them just before the release, and adds up what each target read
//! (or keeps each target's, with `-A` and `--per-thread`); `-b` counts through BPF
//! ([`bperf`], [`bpf_cgroups`]). When to read, to switch events on and off and to stop is
//! [`pacing`]'s (with [`control`]'s commands and [`windows`]' switches); what a run yields,
//! [`results`]; `--model`'s steady work, [`model`].

pub mod attached;
#[cfg(target_os = "linux")]
pub mod bperf;
#[cfg(target_os = "linux")]
pub mod bpf_cgroups;
#[cfg(not(target_os = "linux"))]
pub mod bpf_cgroups {
    //! `--bpf-counters` outside Linux: refused (BPF and cgroups are Linux's).

    use std::ffi::OsString;

    use counterhal::Error;
    use counterhal::Target as Attach;
    use counterhal_hal::{Backend, BackendExt};

    use crate::error::CliError;
    use crate::stat::measure::results::{OnInterval, Plan, Run};
    use crate::stat::plan::planned::EventPlan;

    /// Refuses: counting per cgroup with BPF is Linux's.
    pub fn run<B: Backend + 'static>(
        backend: &B,
        _: &EventPlan,
        _: &Attach,
        _: &[OsString],
        _: Plan,
        _: OnInterval<'_>,
    ) -> Result<Run, CliError> {
        Err(CliError::failed(Error::unsupported(format!(
            "--bpf-counters: counting per cgroup with BPF takes Linux, not {}",
            backend.label()
        ))))
    }
}
pub mod control;
pub mod counted;
pub mod hooks;
pub mod model;
pub mod pacing;
pub mod results;
pub mod windows;

use std::ffi::OsString;

use counterhal::Error;
use counterhal::Target as Attach;
use counterhal::advanced::Follow;
use counterhal_hal::{Backend, BackendExt, BackendTarget, Reading, Scope};
use counterhal_process::ForwardSignals;

use self::attached::run_on_targets;
use self::control::Listener;
use self::counted::run_counted_command;
use self::pacing::Pace;
use self::results::{OnInterval, Plan, Run, Snapshot};
use crate::error::CliError;
use crate::stat::arguments::control::ControlSpec;
use crate::stat::arguments::{StatArgs, USAGE};
use crate::stat::plan::planned::{EventPlan, Planned};
use crate::stat::plan::targets::Targets;
use crate::stat::plan::tool::Tool;

/// Counts `-r`'s runs of `events` on `targets`, each between its `--pre` and `--post`
/// commands, each interval's snapshot (`-I`) handed to `on_interval` as it is read; the runs
/// counted and the signal that ended the measurement, if one did.
///
/// # Errors
/// A bad `--control` (exit 2); as [`measure_once`]; a hook that could not run or failed
/// (exit 1).
pub fn runs<B: Backend + 'static>(
    args: &StatArgs,
    targets: &Targets,
    backend: &B,
    events: &EventPlan,
    on_interval: OnInterval<'_>,
) -> Result<(Vec<Run>, Option<i32>), CliError> {
    let timer = args.command.is_empty();
    let command = if timer {
        pacing::timer(args.timeout())
    } else {
        args.command.clone()
    };
    let system = args.sysfs.system();
    let control = args
        .more
        .control()
        .map(|text| ControlSpec::parse(text).and_then(|spec| Listener::open(&spec, &system)))
        .transpose()
        .map_err(|e| CliError::usage(e, USAGE))?;
    let plan = Plan {
        // Kept for the command's life: a plan is copied into every run.
        system: Box::leak(Box::new(system)),
        per_place: args.per_place(),
        pace: Pace {
            interval: args.interval(),
            count: args.interval_count,
            timeout: args.timeout(),
            delay: args.more.delay(),
            disabled: args.more.starts_disabled(),
            control,
        },
        timer,
        bpf_cgroups: args.more.bpf_counters(),
        // Kept for the command's life: a plan is copied into every run.
        shared: args
            .more
            .shared_counters()
            .map(|path| path.map(|p| &*Box::leak(p.to_path_buf().into_boxed_path()))),
    };
    // Each run between its --pre and --post commands (and after -S's sync).
    let mut runs = Vec::new();
    for _ in 0..args.repeat {
        if let Some(signal) = hook(args, true)? {
            return Ok((runs, Some(signal)));
        }
        runs.push(measure_once(
            backend,
            events,
            targets,
            &command,
            plan,
            on_interval,
        )?);
        if ForwardSignals::received().is_some() {
            // The run it ended is the last, and its command's status is passed on.
            break;
        }
        if let Some(signal) = hook(args, false)? {
            return Ok((runs, Some(signal)));
        }
    }
    Ok((runs, None))
}

/// Runs the `--pre` (`before`) or `--post` command of a run, unless a signal has ended the
/// measurement; the signal, if one has (before or while it ran).
///
/// # Errors
/// A hook that could not run or failed (exit 1), when no signal ended it.
fn hook(args: &StatArgs, before: bool) -> Result<Option<i32>, CliError> {
    if let Some(signal) = ForwardSignals::received() {
        return Ok(Some(signal));
    }
    let ran = hooks::run(&args.more, before);
    match ForwardSignals::received() {
        Some(signal) => Ok(Some(signal)),
        None => ran.map(|()| None),
    }
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
        return bperf::run(backend, events, targets, command, plan, on_interval);
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
                USAGE,
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
        bpf_cgroups::run(backend, events, &attach, command, plan, on_interval)?
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
    use super::results::{CommandEnd, Counts, EventResult};
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
