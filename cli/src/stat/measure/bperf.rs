//! `-b`/`--bpf-counters` alone (perf's bperf): each event counted through a leader shared
//! with other sessions, perf's and counterhal's, found in the attr map pinned at
//! `/sys/fs/bpf/perf_attr_map` (or `--bpf-attr-map`), this session's follower adding up the
//! counts of its command, processes, threads or CPUs (the backend's shared counters,
//! [`SharedCapability`]: the Linux backend's).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use counterhal::Target as Attach;
use counterhal::{Error, ErrorKind, Reading};
use counterhal_hal::{
    Backend, BackendExt, BoxedSharedCounter, EventRequest, SharedCapability, SharedScope,
};

use super::attached::{Counting, run_and_read};
use super::results::{Counts, EventResult, OnInterval, Place, Plan, Run, not_opened_here};
use crate::error::CliError;
use crate::stat::plan::planned::EventPlan;
use crate::stat::plan::planned::Planned;
use crate::stat::plan::targets::Targets;

/// The planned events' counters, opened once the scope is known (for a command, once its
/// process exists).
struct Shared<'b> {
    /// The backend's shared counters.
    capability: &'b dyn SharedCapability,
    /// Per planned event: its request, where it counts through BPF.
    requests: Vec<Option<EventRequest>>,
    /// Per planned event: its counter, or why it has none.
    counters: Vec<Option<Result<BoxedSharedCounter, Error>>>,
    scope: Option<SharedScope>,
    /// Whether the command's processes are counted with what they start (not `-i`).
    inherit: bool,
    cpus: Vec<u32>,
    attr_map: Option<&'static Path>,
    /// The times the kernel had skipped the counters' programs when they opened.
    skipped_at_open: u64,
}

impl Shared<'_> {
    fn open(&mut self, scope: SharedScope) -> Result<(), Error> {
        for (request, counter) in self.requests.iter().zip(&mut self.counters) {
            let Some(request) = request else {
                continue;
            };
            let opened = self.capability.open_shared_counter(
                request,
                scope.clone(),
                &self.cpus,
                self.attr_map,
            );
            match opened {
                Ok(c) => *counter = Some(Ok(c)),
                // The event itself cannot be opened here: `<not supported>`, as without -b.
                Err(e)
                    if e.kind() != ErrorKind::PermissionDenied
                        && e.message().starts_with("opening ") =>
                {
                    *counter = Some(Err(e))
                }
                Err(e) => return Err(e.context(format!("-b/--bpf-counters, {}", request.name))),
            }
        }
        self.scope = Some(scope);
        self.skipped_at_open = self.skipped();
        Ok(())
    }

    /// The times the kernel has skipped the counters' programs since each was loaded
    /// (`recursion_misses`), each program once (two events' counters may share a leader).
    fn skipped(&self) -> u64 {
        let programs: BTreeMap<u32, u64> = self
            .counters
            .iter()
            .flatten()
            .flatten()
            .flat_map(|c| c.programs_skipped())
            .map(|p| (p.id, p.skipped))
            .collect();
        programs.values().fold(0, |sum, &n| sum.wrapping_add(n))
    }
}

/// The warning `stat -b` prints where the kernel skipped its programs `skipped` times while
/// it counted (none where it did not).
fn skipped_warning(skipped: u64) -> Option<String> {
    (skipped > 0).then(|| {
        format!(
            "counterhal: warning: the kernel skipped -b's BPF programs {skipped} times while \
             counting (another BPF program was running on that CPU: recursion_misses in \
             bpftool prog show); the counts miss what ran then"
        )
    })
}

/// Lent to the run, so that the programs' skips are read once it ends.
impl Counting for &mut Shared<'_> {
    fn started(&mut self, pid: u32) -> Result<(), Error> {
        if self.scope.is_none() {
            let inherit = self.inherit;
            self.open(SharedScope::Processes {
                pids: vec![pid],
                inherit,
            })?;
        }
        Ok(())
    }
    fn enable(&mut self) -> Result<(), Error> {
        self.counters
            .iter()
            .flatten()
            .flatten()
            .try_for_each(|c| c.enable())
    }
    fn disable(&mut self) -> Result<(), Error> {
        self.counters
            .iter()
            .flatten()
            .flatten()
            .try_for_each(|c| c.disable())
    }
    fn read(&mut self, n: usize, per_place: bool) -> Result<Vec<Counts>, Error> {
        let mut each: Vec<Result<Vec<Reading>, Error>> = Vec::with_capacity(n);
        for counter in &self.counters {
            each.push(match counter {
                None => Err(not_opened_here()),
                Some(Err(e)) => Err(e.clone()),
                Some(Ok(c)) => Ok(c.read()?),
            });
        }
        let per_cpu = matches!(
            self.scope,
            Some(SharedScope::AllCpus | SharedScope::Cpus(_))
        );
        if per_place && per_cpu {
            let cpus = match &self.scope {
                Some(SharedScope::Cpus(list)) => list.clone(),
                _ => self.cpus.clone(),
            };
            return Ok(cpus
                .iter()
                .enumerate()
                .map(|(at, &cpu)| Counts {
                    place: Some(Place::Cpu(cpu)),
                    readings: each
                        .iter()
                        .map(|r| {
                            r.clone()
                                .map(|rows| rows.get(at).copied().unwrap_or_default())
                        })
                        .collect(),
                })
                .collect());
        }
        let sum = |rows: Vec<Reading>| {
            rows.iter().fold(Reading::default(), |mut s, r| {
                s.value = s.value.wrapping_add(r.value);
                s.time_enabled = s.time_enabled.wrapping_add(r.time_enabled);
                s.time_running = s.time_running.wrapping_add(r.time_running);
                s
            })
        };
        Ok(vec![Counts {
            place: None,
            readings: each.into_iter().map(|r| r.map(sum)).collect(),
        }])
    }
}

/// Counts `events` on `targets` through shared leaders while `command` runs, as
/// [`run_and_read`] counts.
///
/// # Errors
/// Exit 1 where the backend cannot share counters, an event is a group member or counts as several
/// events, or BPF cannot count here (no privilege, no BPF file system at the attr map's
/// directory, a map there that is not perf 7.2's), naming why; else as [`run_and_read`].
pub fn run<B: Backend>(
    backend: &B,
    events: &EventPlan,
    targets: &Targets,
    command: &[OsString],
    plan: Plan,
    on_interval: OnInterval<'_>,
) -> Result<Run, CliError> {
    let attr_map = plan.shared.flatten();
    let groups = &events.groups;
    let events: Vec<&Planned> = events.what().collect();
    let Some(capability) = backend.shared() else {
        return Err(CliError::failed(Error::unsupported(format!(
            "-b/--bpf-counters: the {} backend cannot share counters through BPF",
            backend.label()
        ))));
    };
    // bperf_check_target: "bpf managed perf events do not yet support groups".
    if let Some(group) = groups.iter().find(|g| g.members.len() > 1) {
        let names: Vec<String> = group
            .members
            .iter()
            .map(|&i| EventResult::planned(events[i], "").name)
            .collect();
        return Err(CliError::failed(
            Error::unsupported(format!(
                "-b/--bpf-counters counts each event alone, not the group {{{}}} (perf's bperf \
                 refuses groups too)",
                names.join(",")
            ))
            .with_hint("name the events without braces"),
        ));
    }
    let mut requests = Vec::with_capacity(events.len());
    for planned in &events {
        let Some(event) = planned.ready() else {
            requests.push(None);
            continue;
        };
        let [term] = event.terms.as_slice() else {
            return Err(CliError::failed(Error::unsupported(format!(
                "-b/--bpf-counters: `{}` counts as several events combined; name them one by one",
                event.name
            ))));
        };
        requests.push(Some(term.request.clone()));
    }
    let online: Vec<u32> = counterhal::online_cpus(plan.system).iter().collect();
    let mut shared = Shared {
        capability,
        counters: requests.iter().map(|_| None).collect(),
        requests,
        scope: None,
        inherit: !matches!(targets, Targets::CommandAlone),
        cpus: online.clone(),
        attr_map,
        skipped_at_open: 0,
    };
    let scope = match targets {
        Targets::Command | Targets::CommandAlone => None,
        Targets::Attach(Attach::AllCpus) => Some(SharedScope::AllCpus),
        Targets::Attach(Attach::Cpus(list)) => Some(SharedScope::Cpus(list.iter().collect())),
        Targets::Attach(Attach::Process(pid)) => Some(SharedScope::Processes {
            pids: vec![*pid],
            inherit: true,
        }),
        Targets::Attach(Attach::Processes(pids)) => Some(SharedScope::Processes {
            pids: pids.clone(),
            inherit: true,
        }),
        Targets::Attach(Attach::Thread(tid)) => Some(SharedScope::Threads(vec![*tid])),
        Targets::Attach(Attach::Threads(tids)) => Some(SharedScope::Threads(tids.clone())),
        Targets::Attach(other) => {
            return Err(CliError::failed(Error::unsupported(format!(
                "-b/--bpf-counters: perf's bperf counts a command, processes, threads or CPUs, \
                 not {other:?}"
            ))));
        }
    };
    if let Some(scope) = scope {
        shared.open(scope).map_err(CliError::failed)?;
    }
    let results = events
        .iter()
        .map(|p| EventResult::planned(p, &backend.label()))
        .collect();
    let watched = match targets {
        Targets::Attach(Attach::Process(id) | Attach::Thread(id)) if plan.timer => vec![*id],
        Targets::Attach(Attach::Processes(ids) | Attach::Threads(ids)) if plan.timer => ids.clone(),
        _ => Vec::new(),
    };
    let run = run_and_read(&mut shared, command, &watched, results, plan, on_interval)?;
    if let Some(warning) = skipped_warning(shared.skipped().wrapping_sub(shared.skipped_at_open)) {
        eprintln!("{warning}");
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The warning is printed where the kernel skipped a program, never where it did not.
    ///
    /// Oracle: the kernel's `recursion_misses` (include/uapi/linux/bpf.h, `struct
    /// bpf_prog_info`, Linux 5.12), 0 for a program never skipped.
    #[test]
    fn the_warning_says_the_skips_where_there_are_some() {
        assert_eq!(skipped_warning(0), None);
        let warning = skipped_warning(3).unwrap();
        assert!(
            warning.contains("skipped -b's BPF programs 3 times"),
            "{warning}"
        );
    }
}
