//! `--for-each-cgroup ... --bpf-counters` (perf's `-b`): every cgroup's events counted by
//! one BPF program at each context switch instead of one perf event per event, CPU and
//! cgroup (the backend's cgroup counter in its BPF mode), then printed as `--for-each-cgroup` prints.

use counterhal_hal::BackendExt;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use counterhal::Target as Attach;
use counterhal::{Error, Reading};
use counterhal_hal::{Backend, EventRequest};
use counterhal_hal::{BoxedCgroupCounter, CgroupCounterOptions, CgroupModeChoice};

use super::attached::{Counting, run_and_read};
use super::results::{Counts, EventResult, OnInterval, Place, Plan, Run, not_opened_here};
use crate::error::CliError;
use crate::stat::plan::planned::EventPlan;

/// The counter, and which of its cgroups and events each planned event reads.
struct ByCgroup {
    counter: BoxedCgroupCounter,
    /// Per planned event: its cgroup's directory and its column in the counter, if counted.
    columns: Vec<Option<(Arc<Path>, usize)>>,
    /// Read once the counting stopped: later reads give these counts.
    stopped: bool,
}

impl ByCgroup {
    fn reading(&self, at: usize, cpu: Option<usize>) -> Result<Reading, Error> {
        let Some((path, column)) = &self.columns[at] else {
            return Err(not_opened_here());
        };
        let counts = self.counter.counts(path).ok_or_else(not_opened_here)?;
        Ok(match cpu {
            None => counts.total[*column],
            Some(cpu) => counts.per_cpu[cpu][*column],
        })
    }
}

impl Counting for ByCgroup {
    fn enable(&mut self) -> Result<(), Error> {
        Ok(())
    }
    fn disable(&mut self) -> Result<(), Error> {
        self.counter.read()?;
        self.stopped = true;
        Ok(())
    }
    fn read(&mut self, n: usize, per_place: bool) -> Result<Vec<Counts>, Error> {
        if !self.stopped {
            self.counter.read()?;
        }
        let row = |cpu: Option<usize>| (0..n).map(|at| self.reading(at, cpu)).collect();
        if !per_place {
            return Ok(vec![Counts {
                place: None,
                readings: row(None),
            }]);
        }
        Ok(self
            .counter
            .cpus()
            .iter()
            .enumerate()
            .map(|(at, &cpu)| Counts {
                place: Some(Place::Cpu(cpu)),
                readings: row(Some(at)),
            })
            .collect())
    }
}

/// Counts `events`, each in its cgroup, on `attach`'s CPUs in the BPF mode while
/// `command` runs, as [`run_and_read`] counts.
///
/// # Errors
/// Exit 1 where the BPF mode cannot count here (the backend cannot count per cgroup, no CAP_BPF and
/// CAP_PERFMON, a kernel before 5.10, a cgroup outside the cgroup2 mount), naming why; else
/// as [`run_and_read`].
pub fn run<B: Backend>(
    backend: &B,
    events: &EventPlan,
    attach: &Attach,
    command: &[OsString],
    plan: Plan,
    on_interval: OnInterval<'_>,
) -> Result<Run, CliError> {
    let Some(per_cgroup) = backend.cgroups() else {
        return Err(CliError::failed(Error::unsupported(format!(
            "--bpf-counters: the {} backend cannot count per cgroup",
            backend.label()
        ))));
    };
    // The counter's events: each name once, in the order first planned.
    let mut names: Vec<&str> = Vec::new();
    let mut requests: Vec<EventRequest> = Vec::new();
    let mut columns = Vec::with_capacity(events.events.len());
    for planned in &events.events {
        let (Some(event), Some((_, path))) = (planned.what.ready(), &planned.cgroup) else {
            columns.push(None);
            continue;
        };
        let [term] = event.terms.as_slice() else {
            return Err(CliError::failed(Error::unsupported(format!(
                "--bpf-counters: `{}` counts as several events combined; name them one by one",
                event.name
            ))));
        };
        let column = match names.iter().position(|n| *n == event.name) {
            Some(column) => column,
            None => {
                names.push(&event.name);
                requests.push(term.request.clone());
                names.len() - 1
            }
        };
        columns.push(Some((Arc::clone(path), column)));
    }
    let cpus: Vec<u32> = match attach {
        Attach::Cpus(list) => list.iter().collect(),
        _ => counterhal::online_cpus(plan.system).iter().collect(),
    };
    let options = CgroupCounterOptions::new(
        CgroupModeChoice::Bpf,
        counterhal::cgroups::unified_root(plan.system).ok(),
    );
    let bpf = |e: Error| CliError::failed(e.context("--bpf-counters"));
    let mut counter = per_cgroup
        .open_cgroup_counter(&requests, &cpus, options)
        .map_err(bpf)?;
    for (path, _) in columns.iter().flatten() {
        counter.follow(path).map_err(bpf)?;
    }
    let results = events
        .what()
        .map(|p| EventResult::planned(p, &backend.label()))
        .collect();
    let counting = ByCgroup {
        counter,
        columns,
        stopped: false,
    };
    run_and_read(counting, command, &[], results, plan, on_interval)
}
