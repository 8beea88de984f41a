//! One step on one node, as slurmstepd runs it: its tasks, the counters opened on each from
//! its exec, their counts added up as the tasks end.

use std::path::PathBuf;
use std::time::Instant;

use counterhal::{AnyGroup, Chosen, Reading};
use counterhal_hal::{BackendTarget, EventSet, Group, OpenOptions, ResolvedEvent};

use crate::report::{Output, say};
use crate::sys::{self, Handle, Item};

/// What `--counters` asked for: the events, or perf stat's default ones.
#[derive(Clone, Debug)]
pub struct Request {
    /// The events as given (`-e`'s list), or None for perf stat's default events.
    events: Option<String>,
}

impl Request {
    /// The request of `--counters` with `events` (None or empty: the default events).
    pub fn new(events: Option<&str>) -> Request {
        Request {
            events: events.filter(|e| !e.trim().is_empty()).map(str::to_string),
        }
    }
}

/// One task of the step, as `slurm_spank_task_post_fork` sees it.
pub struct Task {
    /// Its local id (S_TASK_ID).
    pub id: u32,
    /// Its process (S_TASK_PID), held before its exec.
    pub pid: u32,
}

impl Task {
    /// The task of this callback, or None outside a task.
    pub fn of(spank: Handle) -> Option<Task> {
        Some(Task {
            id: sys::number(spank, Item::TaskId)?,
            pid: sys::number(spank, Item::TaskPid)?,
        })
    }
}

/// The events a step counts, opened on the backend counterhal's command would choose.
struct Counting {
    backend: Chosen,
    events: Vec<ResolvedEvent>,
    /// Each task's sets, one per event (None: that event did not open on it).
    tasks: Vec<(u32, Vec<Option<EventSet<AnyGroup>>>)>,
    /// Each event's counts added over the tasks that ended; None where none counted it.
    sums: Vec<Option<Reading>>,
    /// The names asked for that are metrics (`stat -M`'s), printed beside the events.
    metrics: Vec<String>,
    /// Whether an event that could not be opened is still to be said (the events asked
    /// for, once each; perf stat's default events are left to the report's `<not
    /// supported>`).
    to_say: Vec<bool>,
}

/// The step on this node.
pub struct Step {
    job: u32,
    step: u32,
    uid: u32,
    local_tasks: u32,
    command_line: Vec<String>,
    started: Instant,
    ended: u32,
    counting: Option<Counting>,
    /// The v1 perf_event cgroups made for the tasks, each below the ones before it.
    cgroups: Vec<PathBuf>,
    /// This node's facts (its mounts, its name, a metric's events), read through one
    /// `System` made when the step begins.
    system: counterhal_system::System,
    /// Where srun takes the node's counts to sum the step's: its address
    /// (`SLURM_SRUN_COMM_HOST`) and the step's [`crate::gather::VARIABLE`]; None where srun
    /// takes none (a batch step, srun without the plugin).
    srun: Option<(String, String)>,
    /// The node's name: its host's, short, as slurmd takes it where slurm.conf names it
    /// alone (`SLURMD_NODENAME` is set in each task's environment at its exec, after the
    /// callbacks that could read it).
    node: String,
}

impl Step {
    /// The step of slurmstepd's `spank` handle, counted as `request` asks (None: not
    /// counted); an event that cannot be resolved is said, and the step is not counted.
    pub fn new(spank: Handle, request: Option<Request>) -> Step {
        let system = counterhal_system::System::host();
        let counting = request.and_then(|request| Counting::new(request, &system));
        Step {
            job: sys::number(spank, Item::JobId).unwrap_or(0),
            step: sys::number(spank, Item::JobStepId).unwrap_or(0),
            uid: sys::number(spank, Item::JobUid).unwrap_or(0),
            local_tasks: sys::number(spank, Item::LocalTaskCount).unwrap_or(1),
            command_line: sys::argv(spank),
            started: Instant::now(),
            ended: 0,
            counting,
            cgroups: Vec::new(),
            srun: sys::getenv(spank, "SLURM_SRUN_COMM_HOST")
                .zip(sys::getenv(spank, crate::gather::VARIABLE)),
            node: crate::report::node_name(&system),
            system,
        }
    }

    /// Opens the step's events on `task`, held before its exec, from its exec on and
    /// following every process and thread it creates.
    pub fn count(&mut self, task: &Task) {
        let Some(counting) = self.counting.as_mut() else {
            return;
        };
        let mut options = OpenOptions::default();
        options.grouped = false;
        let target = BackendTarget::Exec { pid: task.pid };
        let sets = counting
            .events
            .iter()
            .enumerate()
            .map(|(i, event)| {
                match counterhal_hal::open_set(
                    &counting.backend,
                    vec![event.clone()],
                    &target,
                    &options,
                ) {
                    Ok(set) => Some(set),
                    Err(e) => {
                        if counting.to_say[i] {
                            counting.to_say[i] = false;
                            say(&format!("{} is not counted: {e}", event.name));
                        }
                        None
                    }
                }
            })
            .collect();
        counting.tasks.push((task.id, sets));
    }

    /// Reads task `id`'s final counts (it was reaped: its counters hold what it and what it
    /// created counted) into the node's; whether every task of the node has ended.
    pub fn task_ended(&mut self, id: u32) -> bool {
        self.ended += 1;
        if let Some(counting) = self.counting.as_mut()
            && let Some(at) = counting.tasks.iter().position(|(task, _)| *task == id)
        {
            let (_, sets) = counting.tasks.swap_remove(at);
            for (sum, set) in counting.sums.iter_mut().zip(sets) {
                let mut reading = [Reading::default()];
                if let Some(mut set) = set
                    && set.read(&mut reading).is_ok()
                {
                    let total = sum.get_or_insert_with(Reading::default);
                    total.value += reading[0].value;
                    total.time_enabled += reading[0].time_enabled;
                    total.time_running += reading[0].time_running;
                }
            }
        }
        self.ended >= self.local_tasks
    }

    /// Prints the node's counts on the job's standard error with `counterhal`, as its `stat
    /// report` prints them in `output`'s form, and sends them to srun, which prints the
    /// step's sum.
    pub fn report(&mut self, counterhal: &str, output: &Output) {
        let Some(counting) = self.counting.take() else {
            return;
        };
        let elapsed_ns = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let node = self.node.clone();
        let title = format!(
            "{} (job {} step {} on {node}, {} task{})",
            self.command_line.join(" "),
            self.job,
            crate::report::step_name(self.step),
            self.local_tasks,
            if self.local_tasks == 1 { "" } else { "s" }
        );
        let recording =
            crate::report::recording(title, &counting.events, &counting.sums, elapsed_ns);
        if let Err(why) = crate::report::print(counterhal, output, &recording, &counting.metrics) {
            say(&format!("the counts could not be printed: {why}"));
        }
        if let Some((host, value)) = &self.srun {
            let step = (self.job, self.step, node.as_str(), self.local_tasks);
            if let Err(why) = crate::gather::send(host, value, step, &recording, &counting.metrics)
            {
                say(&format!(
                    "the step's sum will lack {node}'s counts: they could not be sent to \
                     srun ({why})"
                ));
            }
        }
        drop(counting.backend);
    }

    /// Places `task` in a cgroup of its own in the v1 perf_event hierarchy, where one is
    /// mounted.
    pub fn place(&mut self, task: &Task) {
        match crate::cgroup_v1::place(
            &self.system,
            self.uid,
            self.job,
            self.step,
            (task.id, task.pid),
            &mut self.cgroups,
        ) {
            Ok(()) => {}
            Err(why) => say(&format!(
                "task {} is not in a perf_event cgroup of its own: {why}",
                task.id
            )),
        }
    }

    /// Removes the v1 cgroups made for the step's tasks (the step's processes are gone).
    pub fn remove_cgroups(self) {
        crate::cgroup_v1::remove(&self.cgroups);
    }
}

impl Counting {
    /// The backend and the events of `request`, or None where they cannot be had (said).
    fn new(request: Request, system: &counterhal_system::System) -> Option<Counting> {
        let backend = match counterhal::open_default() {
            Ok(backend) => backend,
            Err(e) => {
                say(&format!("no counters here ({e}); the step runs uncounted"));
                return None;
            }
        };
        let names: Vec<String> = match &request.events {
            Some(list) => counterhal::split_event_list(list)
                .into_iter()
                .map(str::to_string)
                .collect(),
            None => counterhal_events::perf::STAT_DEFAULT_EVENTS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };
        let mut events: Vec<ResolvedEvent> = Vec::new();
        let mut metrics = Vec::new();
        for name in &names {
            let resolved = match backend.resolve(name) {
                Ok(event) => Ok(vec![event]),
                // perf stat's default events that this machine lacks are left out.
                Err(_) if request.events.is_none() => Ok(Vec::new()),
                // A metric's events (`stat -M`'s names), where the name is one.
                Err(e) => {
                    let read = metric_events(&backend, name, system).ok_or(e);
                    if read.is_ok() {
                        metrics.push(name.clone());
                    }
                    read
                }
            };
            match resolved {
                Ok(resolved) => events.extend(
                    resolved
                        .into_iter()
                        .filter(|new| events.iter().all(|had| had.name != new.name))
                        .collect::<Vec<_>>(),
                ),
                Err(e) => {
                    say(&format!("--counters: {e}; the step runs uncounted"));
                    return None;
                }
            }
        }
        let n = events.len();
        Some(Counting {
            backend,
            events,
            tasks: Vec::new(),
            sums: vec![None; n],
            metrics,
            to_say: vec![request.events.is_some(); n],
        })
    }
}

/// The events the metric (or metric group) `name` reads on `backend`'s CPU model, as `stat -M`
/// plans them, resolved; None where `name` is no metric or one of its events does not
/// resolve.
fn metric_events(
    backend: &Chosen,
    name: &str,
    system: &counterhal_system::System,
) -> Option<Vec<ResolvedEvent>> {
    use counterhal::metrics;
    let chosen = metrics::chosen(&[name.to_string()], backend.cpu_model()).ok()?;
    if chosen.is_empty() {
        return None;
    }
    let needed = metrics::events_needed(&system.clone().into(), &chosen);
    needed
        .iter()
        .map(|event| backend.resolve(event).ok())
        .collect()
}
