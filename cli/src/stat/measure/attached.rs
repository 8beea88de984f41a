//! Counting on the targets of an [`Attach`] ([`MultiSet`]): a process's threads, CPUs, or
//! (for a backend that counts per CPU) the CPUs the command runs on, while the command (or the
//! timer standing for one) runs; read summed or per target, at each interval and at the end.

use counterhal_hal::BackendExt;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use counterhal::Target as Attach;
use counterhal::advanced::MultiSet;
use counterhal::{Error, ErrorKind};
use counterhal_hal::Backend;
use counterhal_hal::{CpuList, Group, OpenOptions, Reading, ResolvedEvent};
use counterhal_process::{ForwardSignals, WaitingChild};
use counterhal_system::System;

use super::pacing::Step;
use super::results::{
    CommandEnd, Counts, EventResult, GRACE, OnInterval, Place, Plan, Run, Snapshot, nanos,
    not_opened_here, not_run,
};
use super::windows::Windows;
use crate::error::CliError;
use crate::stat::arguments::USAGE;
use crate::stat::plan::planned::EventPlan;

/// Each opened set: the indices (into the planned events) of what it counts, on every target.
type Opened<G> = (Vec<usize>, MultiSet<G>);

/// Counts the events of `events` on `attach` while `command` runs (every backend). Events
/// with a cgroup are counted on the same CPUs, only while that cgroup's tasks run. Counting
/// every CPU (`-a`), an event with CPUs of its own (its PMU's cpumask) is counted on those,
/// as perf counts an uncore event on one CPU per package. Each interval's snapshot goes to
/// `on_interval` as it is read. Each group is opened as one group, or, where it is weak and
/// does not open as one, as its members alone.
pub fn run_on_targets<B: Backend>(
    backend: &B,
    events: &EventPlan,
    attach: &Attach,
    command: &[OsString],
    plan: Plan,
    on_interval: OnInterval<'_>,
) -> Result<Run, CliError> {
    let label = backend.label();
    let mut results: Vec<EventResult> = events
        .what()
        .map(|p| EventResult::planned(p, &label))
        .collect();
    let class_of = |i: usize| (events.cgroup_dir(i), events.cpus(i));
    // Each cgroup's events (and those of none) apart, and in each the events of each PMU's
    // CPUs, in the order first met.
    let mut classes: Vec<(Option<Arc<Path>>, Option<CpuList>)> = Vec::new();
    for i in 0..events.events.len() {
        let class = class_of(i);
        if !classes.contains(&class) {
            classes.push(class);
        }
    }
    let mut sets = Vec::new();
    for class in classes {
        let in_class: Vec<bool> = (0..events.events.len())
            .map(|i| class_of(i) == class)
            .collect();
        let (class, cpus) = class;
        let class_groups: Vec<(Vec<usize>, bool)> = events
            .groups
            .iter()
            .map(|group| {
                let members = group
                    .members
                    .iter()
                    .copied()
                    .filter(|&i| in_class[i])
                    .collect();
                (members, group.weak)
            })
            .filter(|(group, _): &(Vec<usize>, bool)| !group.is_empty())
            .collect();
        let class_attach = match &class {
            None => attach.clone(),
            Some(path) => {
                let in_it = in_cgroup(attach, path)?;
                check_cgroup(backend, &in_it, plan.system)?;
                in_it
            }
        };
        sets.extend(open_sets(
            backend,
            plan.system,
            events,
            &in_class,
            &on_pmu_cpus(class_attach, cpus),
            &class_groups,
            &mut results,
        )?);
    }
    // Without a command, perf stat -p (-t) ends when the processes (threads) it counts have ended
    // (is_target_alive in builtin-stat.c); the timer standing for the command is stopped then.
    let watched = match attach {
        Attach::Process(id) | Attach::Thread(id) if plan.timer => vec![*id],
        Attach::Processes(ids) | Attach::Threads(ids) if plan.timer => ids.clone(),
        _ => Vec::new(),
    };
    // The events that opened nowhere, each with its reason, shown in each place it was meant
    // for (counting every CPU, an event with CPUs of its own was meant for those alone).
    let every_cpu = matches!(attach, Attach::AllCpus | Attach::Cgroup { cpus: None, .. });
    let unopened: Vec<Unopened> = results
        .iter()
        .enumerate()
        .filter_map(|(index, result)| {
            let reason = result.outcome.clone().err()?;
            let only_on = every_cpu.then(|| events.cpus(index));
            Some((index, reason, only_on.flatten()))
        })
        .collect();
    // Per CPU (-A), every CPU counted has its lines, an event's that opened nowhere too
    // (perf prints `CPU0,<not supported>,...` where no event counts).
    let cpus = match plan.per_place {
        true => counterhal::advanced::backend_targets(attach, plan.system)
            .unwrap_or_default()
            .iter()
            .filter_map(|t| t.cpu_counted())
            .collect(),
        false => Vec::new(),
    };
    let counters = Counters {
        sets,
        unopened,
        cpus,
        system: plan.system,
    };
    run_and_read(counters, command, &watched, results, plan, on_interval)
}

/// What [`run_and_read`] counts with: started before the command runs, stopped after, read
/// summed (one [`Counts`]) or per place, each of `n` planned events.
pub(super) trait Counting {
    /// The command's process exists (held before its `exec`): counting that follows it by
    /// its id sets up here.
    fn started(&mut self, _pid: u32) -> Result<(), Error> {
        Ok(())
    }
    /// Starts counting.
    fn enable(&mut self) -> Result<(), Error>;
    /// Stops counting: reads after it give the same counts.
    fn disable(&mut self) -> Result<(), Error>;
    /// The counts so far, summed or per place.
    fn read(&mut self, n: usize, per_place: bool) -> Result<Vec<Counts>, Error>;
}

impl<G: Group> Counting for Counters<G> {
    fn enable(&mut self) -> Result<(), Error> {
        self.sets.iter_mut().try_for_each(|(_, set)| set.enable())
    }
    fn disable(&mut self) -> Result<(), Error> {
        self.sets.iter_mut().try_for_each(|(_, set)| set.disable())
    }
    fn read(&mut self, n: usize, per_place: bool) -> Result<Vec<Counts>, Error> {
        read_sets(self, n, per_place)
    }
}

/// An event that opened nowhere: its index, why, and the CPUs it was meant for (`None`:
/// every place).
type Unopened = (usize, Error, Option<CpuList>);

/// What is read: the sets opened, the events that opened nowhere, and the CPUs counted one
/// by one (`-A`; empty otherwise).
struct Counters<G> {
    sets: Vec<Opened<G>>,
    unopened: Vec<Unopened>,
    cpus: Vec<u32>,
    /// The system whose `/proc` names the threads counted.
    system: &'static System,
}

/// `attach` narrowed to a PMU's CPUs (its cpumask) where it counts every online CPU, as perf
/// opens an event of a PMU with a cpumask on those CPUs alone; CPUs named (`-C`) stay as named,
/// as in perf.
fn on_pmu_cpus(attach: Attach, cpus: Option<CpuList>) -> Attach {
    match (attach, cpus) {
        (Attach::AllCpus, Some(cpus)) => Attach::Cpus(cpus),
        (Attach::Cgroup { path, cpus: None }, Some(cpus)) => Attach::Cgroup {
            path,
            cpus: Some(cpus),
        },
        (attach, _) => attach,
    }
}

/// Whether process (or thread) `pid` has ended: no `/proc/PID`, or a zombie waiting for its
/// parent.
fn has_ended(system: &System, pid: u32) -> bool {
    let state = system.process_state(pid);
    matches!(state, Some('Z' | 'X') | None)
}

/// Stops the measurement (exit 1, with the reason) where the backend or the kernel cannot
/// count in the cgroup of `attach` at all (a software clock on its first CPU is refused), so
/// that this is said once, not as every event's `<not supported>`.
fn check_cgroup<B: Backend>(backend: &B, attach: &Attach, system: &System) -> Result<(), CliError> {
    let Some(target) = counterhal::advanced::backend_targets(attach, system)
        .unwrap_or_default()
        .into_iter()
        .next()
    else {
        return Ok(());
    };
    if !backend.capabilities().supports(&target) {
        return Err(CliError::failed(
            Error::unsupported(format!("{} cannot count by cgroup", backend.label()))
                .with_hint("count with the linux backend"),
        ));
    }
    let Ok(clock) = backend.resolve("task-clock") else {
        return Ok(());
    };
    counterhal_hal::open_set(backend, vec![clock], &target, &OpenOptions::ungrouped())
        .map(drop)
        .map_err(CliError::failed)
}

/// The CPUs of `attach` (`-a`, `-C`) counted only while the tasks of cgroup `path` run.
fn in_cgroup(attach: &Attach, path: &Arc<Path>) -> Result<Attach, CliError> {
    let cpus = match attach {
        Attach::AllCpus => None,
        Attach::Cpus(cpus) => Some(cpus.clone()),
        other => {
            return Err(CliError::usage(
                Error::invalid_input(format!(
                    "a cgroup is counted on CPUs (-a or -C), not on {other:?}"
                )),
                USAGE,
            ));
        }
    };
    Ok(Attach::Cgroup {
        path: Arc::clone(path),
        cpus,
    })
}

/// Opens the ready events on every target: each group (`{a,b}`) as one group of the backend,
/// counted together or not at all (a weak one, `{a,b}:W`, that does not open as one: each
/// member with the others); the others all at once first, since a backend with
/// constrained counters (P6's counter 1 counts only while counter 0 holds the enable bit) must
/// place them together; where that fails, each on its own, so that one event the machine lacks
/// does not hide the others (its result then says why). A thread of a process that exited
/// meanwhile is skipped. Only the events `in_class` are opened.
fn open_sets<B: Backend>(
    backend: &B,
    system: &System,
    events: &EventPlan,
    in_class: &[bool],
    attach: &Attach,
    groups: &[(Vec<usize>, bool)],
    results: &mut [EventResult],
) -> Result<Vec<Opened<B::Group>>, CliError> {
    let open_on_every_target = |indices: &[usize], options: &OpenOptions| {
        let resolved: Vec<ResolvedEvent> = indices
            .iter()
            .filter_map(|&i| events.events[i].what.ready().cloned())
            .collect();
        MultiSet::open(backend, &resolved, attach, options, system)
    };
    let is_ready = |i: &usize| in_class[*i] && events.events[*i].what.ready().is_some();
    let mut sets = Vec::new();
    // A weak group's members where it did not open as a group, each opened on its own below
    // (perf's evlist__reset_weak_group).
    let mut split = Vec::new();
    for (group, weak) in groups {
        let members: Vec<usize> = group.iter().copied().filter(is_ready).collect();
        if members.is_empty() {
            continue;
        }
        match open_on_every_target(&members, &OpenOptions::grouped()) {
            Ok(opened) => sets.push((members, opened)),
            Err(_) if *weak && members.len() > 1 => split.extend(members),
            Err(e) => {
                stop_for(system, &e, &results[members[0]].name, attach)?;
                for &index in &members {
                    results[index].outcome = Err(e.clone());
                }
            }
        }
    }
    let ready: Vec<usize> = (0..events.events.len())
        .filter(is_ready)
        .filter(|i| split.contains(i) || !groups.iter().any(|(group, _)| group.contains(i)))
        .collect();
    match open_on_every_target(&ready, &OpenOptions::ungrouped()) {
        Ok(opened) if !ready.is_empty() => sets.push((ready, opened)),
        _ => {
            for index in ready {
                match open_on_every_target(&[index], &OpenOptions::ungrouped()) {
                    Ok(opened) => sets.push((vec![index], opened)),
                    Err(e) => {
                        stop_for(system, &e, &results[index].name, attach)?;
                        results[index].outcome = Err(e);
                    }
                }
            }
        }
    }
    Ok(sets)
}

/// The errors that stop the measurement rather than mark one event as not counted; `name` is
/// the event (or group) whose open on `attach` failed, named where the error does not name it.
fn stop_for(system: &System, e: &Error, name: &str, attach: &Attach) -> Result<(), CliError> {
    let another_users = |pid| system.belongs_to_another_user(pid);
    match e.kind() {
        // A target that does not exist is the user's to fix, not an event the machine lacks.
        ErrorKind::NotFound | ErrorKind::InvalidInput => Err(CliError::usage(e.clone(), USAGE)),
        // Out of file descriptors: no event is at fault, and counting fewer than asked
        // without saying so would mislead (perf stops too).
        ErrorKind::LimitReached => Err(CliError::failed(e.clone())),
        // Another user's process refuses every event: the target, not the event, is at fault.
        ErrorKind::PermissionDenied
            if match attach {
                Attach::Process(pid) => another_users(*pid),
                Attach::Processes(pids) => pids.iter().any(|pid| another_users(*pid)),
                _ => false,
            } =>
        {
            Err(CliError::failed(e.clone()))
        }
        // Refused for lack of privilege (whole CPUs above perf_event_paranoid 0, the kernel
        // above 1): the cause is the user's to fix, and printing `<not supported>` with exit 0
        // would count nothing without failing. perf stops too (stat_handle_error skips only
        // an event the machine lacks).
        ErrorKind::PermissionDenied => Err(CliError::failed(super::counted::named(e, name))),
        _ => Ok(()),
    }
}

/// Holds the command before `exec`, enables every set, lets it run (reading at each interval
/// and stopping it when its time is up), and once it has ended disables and reads every set,
/// putting each event's sum over the targets in its result (and, per place, each target's).
pub(super) fn run_and_read(
    mut sets: impl Counting,
    command: &[OsString],
    watched: &[u32],
    mut results: Vec<EventResult>,
    plan: Plan,
    on_interval: OnInterval<'_>,
) -> Result<Run, CliError> {
    let mut child = WaitingChild::spawn(command).map_err(not_run)?;
    sets.started(child.pid()).map_err(CliError::failed)?;
    sets.enable().map_err(CliError::failed)?;
    let forwarding = ForwardSignals::to(child.pid());
    let started = std::time::Instant::now();
    let released = child.release();
    let mut intervals = 0;
    let mut stopped = false;
    let mut failed = None;
    let names = results.iter().map(|r| r.name.clone()).collect();
    let mut windows = Windows::new(names, plan.pace.starts_on());
    // Whether the command has ended; the timer is stopped once every watched process has.
    let look = |child: &mut WaitingChild, stopped: &mut bool| {
        let ended = !matches!(child.try_wait(), Ok(None));
        if !ended
            && !*stopped
            && !watched.is_empty()
            && watched.iter().all(|&p| has_ended(plan.system, p))
        {
            *stopped = child.terminate(GRACE).is_ok();
        }
        ended
    };
    if released.is_ok() && plan.pace.is_idle() && !watched.is_empty() {
        while !look(&mut child, &mut stopped) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    if released.is_ok() {
        plan.pace.run(started, |step| {
            match step {
                // An error here is seen again by the wait below.
                Step::Look => return look(&mut child, &mut stopped),
                Step::Read(at) => match sets.read(results.len(), plan.per_place) {
                    Ok(mut counts) => {
                        windows.apply(&mut counts);
                        intervals += 1;
                        on_interval(Snapshot {
                            at_ns: nanos(at),
                            counts,
                        });
                    }
                    Err(e) => _ = failed.get_or_insert(e),
                },
                Step::Switch { on, event } => {
                    let whole = sets.read(results.len(), false);
                    let apart = sets.read(results.len(), plan.per_place);
                    match whole.and_then(|mut whole| {
                        if plan.per_place {
                            whole.extend(apart?);
                        }
                        Ok(whole)
                    }) {
                        Ok(counts) => return windows.switch(on, event.as_deref(), &counts),
                        Err(e) => _ = failed.get_or_insert(e),
                    }
                }
                Step::List => windows.list(),
                // Still running to be stopped: perf's SIGTERM, then SIGKILL after the grace.
                Step::Stop => {
                    stopped =
                        matches!(child.try_wait(), Ok(None)) && child.terminate(GRACE).is_ok();
                }
            }
            false
        });
    }
    let ran = released.and_then(|()| child.wait());
    drop(forwarding);
    let at_end = nanos(plan.pace.since_enabled(started.elapsed()));
    if let Some(e) = failed {
        return Err(CliError::failed(e));
    }
    sets.disable().map_err(CliError::failed)?;
    let end = CommandEnd::of(&ran.map_err(not_run)?).stopped_if(stopped);
    let mut last = sets
        .read(results.len(), plan.per_place)
        .map_err(CliError::failed)?;
    let totals = sets.read(results.len(), false).map_err(CliError::failed)?;
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
    if plan.pace.wants_last_interval(intervals) {
        if !plan.per_place {
            last = totals;
        }
        windows.apply(&mut last);
        on_interval(Snapshot {
            at_ns: at_end,
            counts: last,
        });
    }
    let mut run = Run {
        events: results,
        end,
        places,
    };
    windows.apply_to_run(&mut run);
    Ok(run)
}

/// Reads every set: one [`Counts`] summed over the targets, or one per target (`per_place`).
/// Events no set holds read as not counted (their results keep the reason); per place, an
/// event that opened nowhere reads as its reason in each place it was meant for, and as not
/// opened in the others.
fn read_sets<G: Group>(
    counters: &mut Counters<G>,
    n: usize,
    per_place: bool,
) -> Result<Vec<Counts>, Error> {
    let mut counts = read_opened(&mut counters.sets, n, per_place, counters.system)?;
    if per_place {
        // A CPU no set counts on (no event opened there) still has its lines.
        for &cpu in &counters.cpus {
            let place = Some(Place::Cpu(cpu));
            if !counts.iter().any(|c| c.place == place) {
                counts.push(Counts {
                    place,
                    readings: (0..n).map(|_| Err(not_opened_here())).collect(),
                });
            }
        }
        for (index, reason, only_on) in &counters.unopened {
            for place in &mut counts {
                let meant = match (&place.place, only_on) {
                    (Some(Place::Cpu(cpu)), Some(cpus)) => cpus.contains(*cpu),
                    _ => true,
                };
                if meant {
                    place.readings[*index] = Err(reason.clone());
                }
            }
        }
    }
    Ok(counts)
}

/// Reads every opened set, as [`read_sets`] does.
fn read_opened<G: Group>(
    sets: &mut [Opened<G>],
    n: usize,
    per_place: bool,
    system: &System,
) -> Result<Vec<Counts>, Error> {
    let unread =
        || -> Vec<Result<Reading, Error>> { (0..n).map(|_| Err(not_opened_here())).collect() };
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
            let place = Place::counted(system, &target);
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
