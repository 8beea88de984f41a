//! Where a tool counts, as it asks: a thread, a whole process, every CPU or a list of CPUs.
//! One such place may stand for several of a backend's targets (a process's threads, the
//! CPUs of a list); [`MultiSet`] counts the same events on each and reads them per target or
//! summed.

use counterhal_hal::BackendExt;
use std::path::Path;

use counterhal_system::System;
use std::sync::Arc;

use counterhal_hal::{
    Backend, BackendTarget, CpuList, Error, ErrorKind, EventSet, Group, OpenOptions, Reading,
    ResolvedEvent, Result, check_buffer, sum_readings,
};

/// The CPUs online on `system` (this machine's: [`Context::system`](crate::Context::system)):
/// its `devices/system/cpu/online` where the OS has it (not this process's affinity, which may
/// be narrower), else on Linux the CPUs its `/proc/stat` lists, and on other OSes CPUs `0..N`
/// by the parallelism the OS reports.
pub fn online_cpus(system: &System) -> CpuList {
    system
        .online_cpus()
        .filter(|cpus| !cpus.is_empty())
        .map(CpuList::from_cpus)
        .unwrap_or_else(|| other_online_cpus(system))
}

/// The CPUs online by procfs's count, where sysfs has no list: Linux's `/proc/stat` (std's
/// `available_parallelism`, which reads the cgroups' quotas too, would build 12 KB into every
/// program for a case that a machine with procfs and no sysfs is).
#[cfg(target_os = "linux")]
fn other_online_cpus(system: &System) -> CpuList {
    let cpus = system.stat_cpus();
    match cpus.is_empty() {
        true => CpuList::range(0, 0),
        false => CpuList::from_cpus(cpus),
    }
}

/// CPUs `0..N` by the parallelism the OS reports, off Linux.
#[cfg(not(target_os = "linux"))]
fn other_online_cpus(_: &System) -> CpuList {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    CpuList::range(0, u32::try_from(cpus).unwrap_or(u32::MAX).saturating_sub(1))
}

/// Where to count: what [`Chosen::open_named`](crate::Chosen::open_named) and
/// [`EventSetBuilder`](crate::EventSetBuilder) open on.
///
/// A name means one thing: a *process* is every thread it has (and every thread and process
/// it creates from now on), summed, as `perf stat -p PID` counts it; a *thread* is one
/// thread, as `perf stat -t TID` counts it. A target of several threads or CPUs is read as
/// one sum per event (each thread's or CPU's reading scaled on its own first);
/// [`advanced::MultiSet`](MultiSet) reads them one by one.
///
/// ```no_run
/// use counterhal::prelude::*;
/// use counterhal::OpenOptions;
///
/// let backend = open_default()?;
/// let pid = std::process::id();
/// let mut set = backend.open_named(&["task-clock"], &Target::process(pid),
///                                  &OpenOptions::default())?;
/// set.enable()?;
/// // ... every thread of the process runs ...
/// set.disable()?;
/// println!("{} ns on all threads", set.read_to_vec()?[0].value);
/// # Ok::<(), counterhal::Error>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The calling thread.
    ThisThread,
    /// The calling thread, counted only while it runs on one CPU (libpfm4's and PAPI's `cpu=N`
    /// qualifier on a thread's events).
    ThisThreadOnCpu(u32),
    /// One thread of any process, by its thread id.
    Thread(u32),
    /// These threads of any processes, by their thread ids (perf's `-t TID,TID`), each on
    /// its own.
    Threads(Vec<u32>),
    /// A process: every thread it has, each with what it creates from now on (threads and
    /// child processes). A thread that ends is dropped from the counting, never an error
    /// ([`MultiSet`] says how).
    Process(u32),
    /// Several processes (perf's `-p PID,PID`), each as [`Target::Process`] counts one.
    Processes(Vec<u32>),
    /// Every online CPU (system-wide).
    AllCpus,
    /// These CPUs (system-wide).
    Cpus(CpuList),
    /// What runs on these CPUs (every online CPU: `None`) while tasks of one control group
    /// run there, the group named by its directory ([`cgroups::find`](crate::cgroups::find)
    /// finds it by name, as `perf stat -G` does).
    Cgroup {
        /// The control group's directory.
        path: Arc<Path>,
        /// The CPUs; `None` for every online CPU.
        cpus: Option<CpuList>,
    },
}

impl Target {
    /// The calling thread ([`Target::ThisThread`]).
    pub const fn this_thread() -> Target {
        Target::ThisThread
    }

    /// One thread of any process, by its thread id ([`Target::Thread`]): that thread alone,
    /// none of the threads it creates. A process's main thread has the process's id.
    pub const fn thread(tid: u32) -> Target {
        Target::Thread(tid)
    }

    /// A whole process ([`Target::Process`]): every thread it has when the counters open,
    /// each with the threads and processes it creates from then on, summed.
    pub const fn process(pid: u32) -> Target {
        Target::Process(pid)
    }

    /// Everything that runs on one CPU (system-wide), as [`Target::Cpus`] of one.
    pub fn cpu(cpu: u32) -> Target {
        Target::Cpus(CpuList::range(cpu, cpu))
    }

    /// Everything that runs on every online CPU ([`Target::AllCpus`]).
    pub const fn all_cpus() -> Target {
        Target::AllCpus
    }

    /// What runs on `cpus` (every online CPU: `None`) while tasks of the control group whose
    /// directory is `path` run there ([`Target::Cgroup`]).
    pub fn cgroup(path: impl AsRef<Path>, cpus: Option<CpuList>) -> Target {
        Target::Cgroup {
            path: Arc::from(path.as_ref()),
            cpus,
        }
    }

    /// The backend targets this stands for now, a thread's with what it creates where
    /// `inherit` ([`OpenOptions::inherit`](counterhal_hal::OpenOptions::inherit); CPUs and
    /// processes are counted as they are either way).
    pub(crate) fn targets_inheriting(
        &self,
        inherit: bool,
        system: &System,
    ) -> Result<Vec<BackendTarget>> {
        if !inherit {
            return self.targets(system);
        }
        Ok(match self {
            Target::ThisThread => {
                vec![BackendTarget::process_and_children(this_thread_id(system)?)]
            }
            Target::Thread(tid) => vec![BackendTarget::process_and_children(*tid)],
            Target::Threads(tids) => tids
                .iter()
                .map(|&tid| BackendTarget::process_and_children(tid))
                .collect(),
            _ => self.targets(system)?,
        })
    }

    /// The backend targets this stands for now on `system`: a process's threads are read from
    /// its `/proc/PID/task` (the process alone, with what it creates, where the OS has no such
    /// directory); a list of CPUs is checked against the CPUs online first
    /// ([`CpuList::check_within`]), so that `0-4294967295` is refused before it becomes
    /// four billion targets.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for a list of CPUs that is empty or names CPUs not online.
    pub(crate) fn targets(&self, system: &System) -> Result<Vec<BackendTarget>> {
        if let Target::Cpus(cpus)
        | Target::Cgroup {
            cpus: Some(cpus), ..
        } = self
        {
            cpus.check_within(&online_cpus(system))?;
        }
        Ok(match self {
            Target::ThisThread => vec![BackendTarget::ThisThread],
            Target::ThisThreadOnCpu(cpu) => vec![BackendTarget::ThisThreadOnCpu(*cpu)],
            Target::Thread(tid) => vec![BackendTarget::process(*tid)],
            Target::Threads(tids) => tids
                .iter()
                .map(|&tid| BackendTarget::process(tid))
                .collect(),
            Target::Process(pid) => process_targets(system, *pid),
            Target::Processes(pids) => pids
                .iter()
                .flat_map(|&pid| process_targets(system, pid))
                .collect(),
            Target::AllCpus => online_cpus(system).iter().map(BackendTarget::Cpu).collect(),
            Target::Cpus(cpus) => cpus.iter().map(BackendTarget::Cpu).collect(),
            Target::Cgroup { path, cpus } => cpus
                .clone()
                .unwrap_or_else(|| online_cpus(system))
                .iter()
                .map(|cpu| BackendTarget::Cgroup {
                    path: Arc::clone(path),
                    cpu,
                })
                .collect(),
        })
    }

    /// Whether `target` may be gone by the time its counters open without that being an
    /// error: a thread of a process other than its main thread (threads come and go).
    pub(crate) fn may_vanish(&self, target: &BackendTarget) -> bool {
        match (self, target) {
            (Target::Process(pid), BackendTarget::Process { pid: tid, .. }) => tid != pid,
            (Target::Processes(pids), BackendTarget::Process { pid: tid, .. }) => {
                !pids.contains(tid)
            }
            _ => false,
        }
    }
}

/// The calling thread's id, from `/proc/thread-self` (Linux: a link to `PID/task/TID`).
///
/// # Errors
/// [`ErrorKind::Unsupported`] where the OS has no such link.
fn this_thread_id(system: &System) -> Result<u32> {
    system.thread_self_id().ok_or_else(|| {
        Error::unsupported("this OS does not say which thread calls (no /proc/thread-self)")
            .with_hint("count this thread without inherit, or a process (Target::process)")
    })
}

/// Process `pid`'s threads, each with what it creates; the process as one target where
/// `/proc/PID/task` is missing.
fn process_targets(system: &System, pid: u32) -> Vec<BackendTarget> {
    system
        .threads(pid)
        .map(|threads| {
            threads
                .into_iter()
                .map(BackendTarget::process_and_children)
                .collect()
        })
        .unwrap_or_else(|| vec![BackendTarget::process_and_children(pid)])
}

/// Whether thread `tid` has ended (or is ending): `/proc/TID` is gone or shows a zombie.
/// A thread whose counters just failed may still be on its way out, so this looks for up to
/// 100 ms before saying it lives.
fn thread_gone(system: &System, tid: u32) -> bool {
    for _ in 0..100 {
        // No state: its stat is gone (or procfs does not tell).
        if matches!(system.process_state(tid), None | Some('Z' | 'X' | 'x')) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    false
}

/// What one row of [`MultiSet::read_each`] counts, in [`Target`]'s words: a thread is a
/// thread (a process's rows are its threads), a CPU a CPU.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    /// The calling thread.
    ThisThread,
    /// One thread, by its id (with the threads and processes it created since, where they
    /// are followed: a process's threads, or a set opened with inherit).
    Thread(u32),
    /// One CPU (for a control group, the CPU it is counted on).
    Cpu(u32),
    /// A command counted from its `exec`, by its process id.
    Command(u32),
}

impl From<&BackendTarget> for Place {
    fn from(target: &BackendTarget) -> Place {
        match *target {
            BackendTarget::Process { pid, .. } => Place::Thread(pid),
            BackendTarget::Cpu(cpu) | BackendTarget::Cgroup { cpu, .. } => Place::Cpu(cpu),
            BackendTarget::Exec { pid } | BackendTarget::ExecAlone { pid } => Place::Command(pid),
            _ => Place::ThisThread,
        }
    }
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::ThisThread => f.write_str("this thread"),
            Place::Thread(tid) => write!(f, "thread {tid}"),
            Place::Cpu(cpu) => write!(f, "CPU {cpu}"),
            Place::Command(pid) => write!(f, "command (process {pid})"),
        }
    }
}

/// The same events counted on several targets: read per target, or summed over them (each
/// target's reading scaled on its own first, as [`sum_readings`] does).
///
/// It is a [`Group`] whose readings are the sums, one per event.
///
/// With [`Target::Process`], the threads the process has at [`open`](MultiSet::open) are its
/// targets, each counted with what it creates afterwards (new threads and processes, folded
/// into their creator's counts as they end, as `perf stat -p` counts). A thread that ends is
/// dropped from the set, never an error for the set: its counts as last read stay in the
/// sums until the next [`reset`](Group::reset), so a sum never goes down while the set counts.
#[derive(Debug)]
pub struct MultiSet<G> {
    attach: Target,
    /// The system whose `/proc` tells whether a thread counted has ended.
    system: System,
    sets: Vec<(BackendTarget, EventSet<G>)>,
    events: Vec<ResolvedEvent>,
    /// One row of `events.len()` (at least 1) readings per target counted: the live targets'
    /// rows first, in `sets` order, then the rows of the threads that ended (their last
    /// readings).
    each: Vec<Reading>,
    /// One event's readings over the rows, to be summed.
    column: Vec<Reading>,
    /// Whether a read is its one target's set's read and nothing more: one target, which
    /// cannot end (no thread of a process counted), with every event. Then no row is kept for
    /// after its end.
    alone: bool,
    /// Per set of `sets`, the events it holds where it holds only some (with
    /// [`Target::AllCpus`], an uncore or energy event opens on its PMU's cpumask CPUs alone:
    /// [`BackendExt::system_wide_cpus`]); `None`: every event. An event a set does not hold reads
    /// as never counted on its target.
    columns: Vec<Option<Vec<usize>>>,
    /// Where a set of only some events reads before its readings go to their columns.
    scratch: Vec<Reading>,
}

impl<G: Group> MultiSet<G> {
    /// Opens `events` on every target `attach` stands for, together on each (as one group
    /// when `options` say so; a process's threads each as independent counters, see below).
    ///
    /// A thread's group that also counts the threads it creates does not stay whole on
    /// Linux: the kernel swaps the counters' context between a thread and the threads it
    /// creates, so a member then cannot join its leader ("cannot join this group") and a group
    /// read fails (ECHILD) while a created thread's copy is torn down. So with
    /// [`Target::Process`] each event of each thread is opened on its own, as `perf stat -p`
    /// opens them.
    ///
    /// # Errors
    /// The first target's error, as [`Backend::open`] gives it (a thread of the process that
    /// ended while opening is skipped, not an error); [`ErrorKind::NotFound`] when no target
    /// is left; [`ErrorKind::InvalidInput`] for a list of CPUs that is empty or names CPUs
    /// not online.
    pub fn open<B>(
        backend: &B,
        events: &[ResolvedEvent],
        attach: &Target,
        options: &OpenOptions,
        system: &System,
    ) -> Result<Self>
    where
        B: Backend<Group = G> + ?Sized,
    {
        let targets = attach.targets(system)?;
        Self::from_targets(backend, events, attach, &targets, options, system)
    }

    /// [`open`](MultiSet::open) on `targets`, the places `attach` stands for as the caller
    /// refines them (a thread with what it creates: [`BackendTarget::process_and_children`]).
    ///
    /// # Errors
    /// As [`open`](MultiSet::open).
    pub fn from_targets<B>(
        backend: &B,
        events: &[ResolvedEvent],
        attach: &Target,
        targets: &[BackendTarget],
        options: &OpenOptions,
        system: &System,
    ) -> Result<Self>
    where
        B: Backend<Group = G> + ?Sized,
    {
        let mut options = *options;
        options.grouped &= !matches!(attach, Target::Process(_) | Target::Processes(_));
        let placed = placed_events(backend, events, attach);
        let (mut sets, mut columns) = (Vec::new(), Vec::new());
        for target in targets.iter().cloned() {
            let held = held_here(&placed, &target);
            let opened = match &held {
                Some(held) if held.is_empty() => continue,
                Some(held) => {
                    let subset = held.iter().map(|&i| events[i].clone()).collect();
                    counterhal_hal::open_set(backend, subset, &target, &options)
                }
                None => counterhal_hal::open_set(backend, events.to_vec(), &target, &options),
            };
            match opened {
                Ok(set) => {
                    sets.push((target, set));
                    columns.push(held);
                }
                // A member that cannot join a leader whose thread ended meanwhile fails with
                // some other error: the thread's end is the cause.
                Err(e) if vanished(system, attach, &target, &e) => {}
                Err(e) => return Err(e),
            }
        }
        if sets.is_empty() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("nothing to count: {attach:?} stands for no thread or CPU now"),
            ));
        }
        let rows = events.len().max(1) * sets.len();
        let whole = columns.iter().all(Option::is_none);
        let alone = whole && matches!(&sets[..], [(target, _)] if !attach.may_vanish(target));
        Ok(Self {
            attach: attach.clone(),
            system: system.clone(),
            column: vec![Reading::default(); sets.len()],
            each: vec![Reading::default(); rows],
            sets,
            events: events.to_vec(),
            alone,
            columns,
            scratch: vec![Reading::default(); events.len()],
        })
    }

    /// The places counted, in order (a thread that ended is no longer one).
    pub fn places(&self) -> impl Iterator<Item = Place> + '_ {
        self.sets.iter().map(|(target, _)| Place::from(target))
    }

    /// The events, in order.
    pub fn events(&self) -> &[ResolvedEvent] {
        &self.events
    }

    /// Each target's readings (one per event), in target order: per CPU with
    /// [`Target::AllCpus`], per thread with [`Target::Process`] (the threads still running).
    ///
    /// # Errors
    /// As [`Group::read`].
    pub fn read_each(&mut self) -> Result<Vec<(Place, Vec<Reading>)>> {
        let n = self.events.len();
        self.read_rows()?;
        Ok(self
            .sets
            .iter()
            .zip(self.each.chunks_exact(n.max(1)))
            .map(|((target, _), row)| (Place::from(target), row[..n].to_vec()))
            .collect())
    }

    /// Applies `op` to every target's set; a thread that ended is dropped instead (see
    /// [`MultiSet`]).
    fn each_set(&mut self, mut op: impl FnMut(&mut EventSet<G>) -> Result<()>) -> Result<()> {
        let mut at = 0;
        while at < self.sets.len() {
            match op(&mut self.sets[at].1) {
                Ok(()) => at += 1,
                Err(e) if vanished(&self.system, &self.attach, &self.sets[at].0, &e) => {
                    self.retire(at)
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Reads every live target into its row; a thread that ended is dropped, its row (as
    /// last read) kept.
    fn read_rows(&mut self) -> Result<()> {
        let n = self.events.len();
        let width = n.max(1);
        let mut at = 0;
        while at < self.sets.len() {
            let row = &mut self.each[at * width..at * width + n];
            let read = match &self.columns[at] {
                None => self.sets[at].1.read(row),
                Some(held) => {
                    let scratch = &mut self.scratch[..held.len()];
                    self.sets[at].1.read(scratch).map(|()| {
                        row.fill(Reading::default());
                        for (&i, reading) in held.iter().zip(scratch.iter()) {
                            row[i] = *reading;
                        }
                    })
                }
            };
            match read {
                Ok(()) => at += 1,
                Err(e) if vanished(&self.system, &self.attach, &self.sets[at].0, &e) => {
                    self.retire(at)
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// [`Group::read`] of any but a lone target: each row read, and each event summed over
    /// the rows into `readings` (checked to hold one per event).
    #[inline(never)]
    fn read_rows_summed(&mut self, readings: &mut [Reading]) -> Result<()> {
        let n = self.events.len();
        // One target and no other ever that may end (a process's one thread): its set reads
        // straight into the caller's memory, its row kept for a sum after its end.
        if let ([(target, set)], [_], [None]) =
            (&mut self.sets[..], &self.column[..], &self.columns[..])
        {
            match set.read(&mut readings[..n]) {
                Ok(()) => {
                    self.each[..n].copy_from_slice(&readings[..n]);
                    return Ok(());
                }
                Err(e) if vanished(&self.system, &self.attach, target, &e) => self.retire(0),
                Err(e) => return Err(e),
            }
        }
        // Row t of `each` holds target t's readings, read into memory kept for it; each
        // event's column (over live and ended targets) is then summed through `column`, so a
        // read allocates nothing.
        self.read_rows()?;
        for (i, out) in readings.iter_mut().take(n).enumerate() {
            for (slot, row) in self.column.iter_mut().zip(self.each.chunks_exact(n.max(1))) {
                *slot = row[i];
            }
            *out = sum_readings(&self.column);
        }
        Ok(())
    }

    /// Drops the set at `at` (its thread ended); its row moves behind every live row.
    fn retire(&mut self, at: usize) {
        self.alone = false;
        let width = self.events.len().max(1);
        self.sets.remove(at);
        self.columns.remove(at);
        self.each[at * width..].rotate_left(width);
    }
}

/// Each event's CPUs over every CPU ([`Target::AllCpus`]), where its backend names them for
/// one of its terms ([`BackendExt::system_wide_cpus`]: an uncore or energy PMU's cpumask, so that
/// it is counted once per package, as `perf stat -a` counts it); `None` for an event that
/// opens on every CPU, and for every event of any other target (CPUs the caller named count
/// what the caller asked, as `perf stat -C`).
fn placed_events<B>(backend: &B, events: &[ResolvedEvent], attach: &Target) -> Vec<Option<Vec<u32>>>
where
    B: Backend + ?Sized,
{
    events
        .iter()
        .map(|event| match attach {
            Target::AllCpus => event
                .terms
                .iter()
                .find_map(|term| backend.system_wide_cpus(&term.request)),
            _ => None,
        })
        .collect()
}

/// The events (by index) a set on `target` holds, where that is not every event: those placed
/// on its CPU or not placed.
fn held_here(placed: &[Option<Vec<u32>>], target: &BackendTarget) -> Option<Vec<usize>> {
    let BackendTarget::Cpu(cpu) = target else {
        return None;
    };
    let held: Vec<usize> = (0..placed.len())
        .filter(|&i| placed[i].as_ref().is_none_or(|cpus| cpus.contains(cpu)))
        .collect();
    (held.len() < placed.len()).then_some(held)
}

/// Whether `error` on `target` means only that a thread of `attach`'s process has ended.
fn vanished(system: &System, attach: &Target, target: &BackendTarget, error: &Error) -> bool {
    let BackendTarget::Process { pid: tid, .. } = target else {
        return false;
    };
    attach.may_vanish(target) && (error.kind() == ErrorKind::NotFound || thread_gone(system, *tid))
}

impl<G: Group> Group for MultiSet<G> {
    fn len(&self) -> usize {
        self.events.len()
    }

    fn enable(&mut self) -> Result<()> {
        self.each_set(|set| set.enable())
    }

    fn disable(&mut self) -> Result<()> {
        self.each_set(|set| set.disable())
    }

    /// Zeroes every target's counts and their times enabled and running (each target's
    /// [`EventSet`] starts a new window), and forgets the threads that ended.
    fn reset(&mut self) -> Result<()> {
        self.each_set(|set| set.reset())?;
        let rows = self.sets.len();
        self.each.truncate(rows * self.events.len().max(1));
        self.each.fill(Reading::default());
        self.column.truncate(rows);
        Ok(())
    }

    #[inline]
    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        let n = self.events.len();
        check_buffer("the readings", n, readings.len())?;
        // One target that cannot end (the C API's sets on a thread or a CPU): its set's read,
        // straight into the caller's memory.
        if self.alone
            && let [(_, set)] = &mut self.sets[..]
        {
            return set.read(&mut readings[..n]);
        }
        self.read_rows_summed(readings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_without_a_task_directory_is_counted_alone() {
        // No process has id u32::MAX (pid_max is at most 2^22).
        assert_eq!(
            Target::Process(u32::MAX).targets(&System::host()).unwrap(),
            [BackendTarget::process_and_children(u32::MAX)]
        );
        assert!(
            !online_cpus(&System::host()).is_empty(),
            "this machine runs on some CPU"
        );
    }

    #[test]
    fn threads_are_each_a_target_without_their_children() {
        assert_eq!(
            Target::Threads(vec![7, 9])
                .targets(&System::host())
                .unwrap(),
            [BackendTarget::process(7), BackendTarget::process(9)]
        );
        assert_ne!(
            BackendTarget::process(7),
            BackendTarget::process_and_children(7)
        );
    }

    use counterhal_hal::{Accepts, Capabilities, DeviceKind, Domain, Encoding, EventRequest};
    use counterhal_hal::{Family, PerfAttr, Scope};
    use std::sync::atomic::{AtomicBool, Ordering};

    /// No thread has this id: Linux's pid_max is at most 2^22.
    const ENDED: u32 = 1 << 30;

    /// A backend whose every event counts 10 per read, and whose counters of thread
    /// [`ENDED`] fail once `ended` is set, as a thread's counters fail once it has ended.
    struct Threads {
        capabilities: Capabilities,
        ended: Arc<AtomicBool>,
    }

    /// Counts 10 a read; its reset zeroes the count but not the times (one a read), as
    /// perf's does.
    struct Counter {
        thread_ended: Option<Arc<AtomicBool>>,
        reads: u64,
        since_reset: u64,
    }

    impl Group for Counter {
        fn len(&self) -> usize {
            1
        }
        fn enable(&mut self) -> Result<()> {
            self.fails()
        }
        fn disable(&mut self) -> Result<()> {
            self.fails()
        }
        fn reset(&mut self) -> Result<()> {
            self.since_reset = 0;
            self.fails()
        }
        fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
            self.fails()?;
            self.reads += 1;
            self.since_reset += 1;
            readings[0] = Reading {
                value: 10 * self.since_reset,
                time_enabled: self.reads,
                time_running: self.reads,
            };
            Ok(())
        }
    }

    impl Counter {
        fn fails(&self) -> Result<()> {
            match &self.thread_ended {
                Some(ended) if ended.load(Ordering::Relaxed) => {
                    Err(Error::new(ErrorKind::Other, "no child (ECHILD)"))
                }
                _ => Ok(()),
            }
        }
    }

    impl Backend for Threads {
        type Group = Counter;
        fn name(&self) -> &'static str {
            "threads"
        }
        fn capabilities(&self) -> &Capabilities {
            &self.capabilities
        }
        fn extensions(&self) -> counterhal_hal::Extensions<'_> {
            counterhal_hal::Extensions::none()
        }
        fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
            Err(Error::invalid_event(event))
        }
        fn open(
            &self,
            _: &[EventRequest],
            target: &BackendTarget,
            _: &OpenOptions,
        ) -> Result<Counter> {
            let ended = matches!(target, BackendTarget::Process { pid: ENDED, .. });
            Ok(Counter {
                thread_ended: ended.then(|| Arc::clone(&self.ended)),
                reads: 0,
                since_reset: 0,
            })
        }
    }

    /// The fake backend of threads and one event on it.
    fn fixture() -> (Threads, ResolvedEvent) {
        let accepts = Accepts::new(&[Family::Perf], Domain::ALL, Domain::ALL);
        let backend = Threads {
            capabilities: {
                let mut model = Capabilities::new(accepts, Scope::PerProcess);
                model.set_device(DeviceKind::Model);
                model
            },
            ended: Arc::default(),
        };
        let event = ResolvedEvent::single(EventRequest::new(
            "page-faults",
            Encoding::Perf(PerfAttr::new(1, 2)),
        ));
        (backend, event)
    }

    /// A thread whose counters fail because it ended is dropped from the set; its counts as
    /// last read stay in the sums (which never go down) until a reset; the process's own
    /// thread failing is an error.
    #[test]
    fn a_thread_that_ends_is_dropped_and_its_counts_kept() {
        let (backend, event) = fixture();
        let pid = std::process::id();
        let attach = Target::Process(pid);
        let targets = [
            BackendTarget::process_and_children(pid),
            BackendTarget::process_and_children(ENDED),
        ];
        let mut set = MultiSet::from_targets(
            &backend,
            &[event],
            &attach,
            &targets,
            &OpenOptions::default(),
            &System::host(),
        )
        .unwrap();
        let mut sum = [Reading::default()];
        set.enable().unwrap();
        set.read(&mut sum).unwrap();
        assert_eq!(sum[0].value, 20, "10 on each thread");
        backend.ended.store(true, Ordering::Relaxed);
        set.read(&mut sum).unwrap();
        assert_eq!(
            sum[0].value, 30,
            "20 on the main thread, the ended one's last 10"
        );
        assert_eq!(set.places().count(), 1);
        assert_eq!(set.read_each().unwrap().len(), 1);
        set.disable().unwrap();
        set.reset().unwrap();
        set.read(&mut sum).unwrap();
        // 10 a read on the main thread alone, the reset's own read of the times included.
        assert_eq!(sum[0].value, 20, "a reset forgets the thread that ended");
    }

    /// The one-target read (straight into the caller's memory) keeps the target's last reading
    /// when its thread ends, as the summed read does.
    #[test]
    fn a_lone_thread_that_ends_keeps_its_last_reading() {
        let (backend, event) = fixture();
        let attach = Target::Process(std::process::id());
        let targets = [BackendTarget::process_and_children(ENDED)];
        let mut set = MultiSet::from_targets(
            &backend,
            &[event],
            &attach,
            &targets,
            &OpenOptions::default(),
            &System::host(),
        )
        .unwrap();
        let mut one = [Reading::default()];
        assert!(!set.alone, "a thread that may end keeps its row");
        set.enable().unwrap();
        set.read(&mut one).unwrap();
        set.read(&mut one).unwrap();
        assert_eq!(one[0].value, 20, "two reads of the live thread");
        backend.ended.store(true, Ordering::Relaxed);
        one[0] = Reading::default();
        set.read(&mut one).unwrap();
        assert_eq!(one[0].value, 20, "the ended thread's last reading");
        assert_eq!(set.places().count(), 0);
    }

    /// A reset starts a new window: the count and both times read from zero, where the
    /// backend's reset (perf's) zeroes the count alone.
    #[test]
    fn a_reset_starts_the_times_from_zero() {
        let (backend, event) = fixture();
        let mut set = MultiSet::open(
            &backend,
            &[event],
            &Target::ThisThread,
            &OpenOptions::default(),
            &System::host(),
        )
        .unwrap();
        let mut one = [Reading::default()];
        set.enable().unwrap();
        for _ in 0..5 {
            set.read(&mut one).unwrap();
        }
        assert_eq!(one[0].time_enabled, 5);
        assert!(
            set.alone,
            "one thread that cannot end: its set's read alone"
        );
        set.reset().unwrap();
        set.read(&mut one).unwrap();
        // The reset reads the times once (this counter counts 10 a read, that read too).
        assert_eq!(
            (one[0].value, one[0].time_enabled, one[0].time_running),
            (20, 1, 1),
            "one read since the reset's"
        );
    }

    #[test]
    fn only_a_process_s_other_threads_may_vanish() {
        let attach = Target::Process(10);
        assert!(attach.may_vanish(&BackendTarget::process_and_children(11)));
        assert!(!attach.may_vanish(&BackendTarget::process_and_children(10)));
        assert!(!Target::AllCpus.may_vanish(&BackendTarget::Cpu(0)));
    }
}
