//! The command counted from its `exec` ([`CountedCommand`]), where the backend can follow one
//! process (Linux): read at each interval while it runs, stopped when its time is up.

use counterhal_hal::BackendExt;
use std::ffi::OsString;

use counterhal::advanced::{CountedCommand, Follow};
use counterhal::{Error, ErrorKind};
use counterhal_hal::Backend;
use counterhal_hal::{OpenOptions, Reading, ResolvedEvent};
use counterhal_process::ForwardSignals;

use super::pacing::{Pace, Step};
use super::results::{
    CommandEnd, Counts, EventResult, GRACE, OnInterval, Run, Snapshot, nanos, not_run,
};
use super::windows::Windows;
use crate::error::CliError;
use crate::stat::plan::planned::EventPlan;
use crate::stat::plan::planned::Planned;

/// The command counted from its exec, as `perf stat -- cmd` does it: the child is created,
/// the counters are opened on it to start at its exec and follow what it creates, then it
/// executes. Each group of `events` (`{a,b}`) is opened as one set, counted whole or
/// not at all (a `weak` one, where it does not open as one, each member on its own), and
/// every other event on its own, so one the machine lacks does not keep the others from
/// counting (perf's behaviour). With [`Follow::CommandOnly`] (`-i`) the
/// counters count the command's own process alone. Each interval's snapshot goes to
/// `on_interval` as it is read, counting only while the events are on (`-D`, `--control`).
pub fn run_counted_command<B: Backend>(
    backend: &B,
    events: &EventPlan,
    command: &[OsString],
    pace: Pace,
    follow: Follow,
    on_interval: OnInterval<'_>,
) -> Result<Run, CliError> {
    let ready: Vec<ResolvedEvent> = events.what().filter_map(Planned::ready).cloned().collect();
    // Where each planned event is among those opened (events not resolved are not opened).
    let mut place = Vec::with_capacity(events.events.len());
    let mut next = 0;
    for planned in events.what() {
        place.push(planned.ready().map(|_| next));
        next += usize::from(planned.ready().is_some());
    }
    let mut opened_groups: Vec<(Vec<usize>, bool)> = events
        .groups
        .iter()
        .map(|group| {
            let members: Vec<usize> = group
                .members
                .iter()
                .filter_map(|&i| place.get(i).copied().flatten())
                .collect();
            (members, group.weak)
        })
        .filter(|(group, _)| !group.is_empty())
        .collect();
    let launch = |groups: &[(Vec<usize>, bool)]| {
        let groups: Vec<Vec<usize>> = groups.iter().map(|(group, _)| group.clone()).collect();
        let options = OpenOptions::ungrouped();
        CountedCommand::launch(backend, &ready, command, &options, &groups, follow).map_err(|e| {
            match e.kind() {
                ErrorKind::LimitReached => CliError::failed(e),
                _ => not_run(e),
            }
        })
    };
    let mut counted = launch(&opened_groups)?;
    // A weak group that did not open as one is split into its events, each opened alone
    // (perf's evlist__reset_weak_group); the held command has not run yet, so it is launched
    // again with the group split.
    let opened = counted.read();
    let failed = |(group, weak): &(Vec<usize>, bool)| {
        *weak && group.len() > 1 && group.iter().all(|&i| opened[i].is_err())
    };
    if opened_groups.iter().any(failed) {
        let (split, kept): (Vec<_>, Vec<_>) = opened_groups.into_iter().partition(failed);
        drop((counted, split));
        opened_groups = kept;
        counted = launch(&opened_groups)?;
    }
    refuse_if_denied(&counted.read(), &ready)?;
    // From here until the child is reaped, the signals that end a command are the command's,
    // not ours (passed on when sent to us alone), so the counts survive them: perf stat does
    // the same for Ctrl-C.
    let forwarding = ForwardSignals::to(counted.pid());
    let started = std::time::Instant::now();
    let mut intervals = 0;
    let mut stopped = false;
    let label = backend.label();
    let place_all = |readings: Vec<Result<Reading, Error>>| {
        let mut readings = readings.into_iter();
        events
            .what()
            .map(|planned| {
                let mut result = EventResult::planned(planned, &label);
                if planned.ready().is_some() {
                    result.outcome = readings
                        .next()
                        .unwrap_or_else(|| Err(Error::new(ErrorKind::Other, "not read")));
                }
                result
            })
            .collect::<Vec<EventResult>>()
    };
    let names = events
        .what()
        .map(|p| EventResult::planned(p, &label).name)
        .collect();
    let mut windows = Windows::new(names, pace.starts_on());
    let read_now = |counted: &mut CountedCommand<_>| {
        let readings = place_all(counted.read())
            .into_iter()
            .map(|r| r.outcome)
            .collect();
        vec![Counts {
            place: None,
            readings,
        }]
    };
    let count = counted.start().and_then(|()| {
        pace.run(started, |step| match step {
            // An error here is seen again by the wait below.
            Step::Look => !matches!(counted.try_wait(), Ok(None)),
            Step::Read(at) => {
                let mut counts = read_now(&mut counted);
                windows.apply(&mut counts);
                intervals += 1;
                on_interval(Snapshot {
                    at_ns: nanos(at),
                    counts,
                });
                false
            }
            Step::Switch { on, event } => {
                windows.switch(on, event.as_deref(), &read_now(&mut counted))
            }
            Step::List => {
                windows.list();
                false
            }
            Step::Stop => {
                // Still running to be stopped: perf's SIGTERM, then SIGKILL after the grace.
                stopped = matches!(counted.try_wait(), Ok(None)) && counted.stop(GRACE).is_ok();
                false
            }
        });
        counted.wait()
    });
    drop(forwarding);
    let at_end = nanos(pace.since_enabled(started.elapsed()));
    let count = count.map_err(not_run)?;
    let results = place_all(count.readings);
    if pace.wants_last_interval(intervals) {
        let mut counts = vec![Counts {
            place: None,
            readings: results.iter().map(|r| r.outcome.clone()).collect(),
        }];
        windows.apply(&mut counts);
        on_interval(Snapshot {
            at_ns: at_end,
            counts,
        });
    }
    // As perf's, `-D`'s elapsed time (and duration_time) starts when the events are enabled.
    let mut end = CommandEnd::of(&count.exit).stopped_if(stopped);
    end.elapsed_ns = nanos(pace.since_enabled(count.exit.elapsed));
    let mut run = Run {
        events: results,
        end,
        places: Vec::new(),
    };
    windows.apply_to_run(&mut run);
    Ok(run)
}

/// Stops before the command runs (exit 1, naming the event and the cause) where an event of
/// `ready` was refused for lack of privilege (`readings`, read before the start, hold each
/// open's error), as perf stops (stat_handle_error skips only an event the machine lacks):
/// counting the rest and exiting 0 would hide that the user asked for what they may not count.
fn refuse_if_denied(
    readings: &[Result<Reading, Error>],
    ready: &[ResolvedEvent],
) -> Result<(), CliError> {
    let denied = readings
        .iter()
        .zip(ready)
        .find_map(|(reading, event)| match reading {
            Err(e) if e.kind() == ErrorKind::PermissionDenied => Some(named(e, &event.name)),
            _ => None,
        });
    denied.map_or(Ok(()), |e| Err(CliError::failed(e)))
}

/// `e` with the event `name` before its message, unless the message names it already (with
/// or without the modifiers: `task-clock:u`'s error may start `task-clock:`).
pub(super) fn named(e: &Error, name: &str) -> Error {
    let bare = name.split(':').next().unwrap_or(name);
    if e.message().starts_with(&format!("{bare}:")) {
        e.clone()
    } else {
        e.clone().context(name)
    }
}
