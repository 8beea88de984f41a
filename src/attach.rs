//! Where a tool counts, as it asks: a thread, a whole process, every CPU or a list of CPUs.
//! One such place may stand for several of a backend's [`Target`]s (a process's threads, the
//! CPUs of a list); [`MultiSet`] counts the same events on each and reads them per target or
//! summed.

use std::path::Path;
use std::sync::Arc;

use counterhal_hal::{
    Backend, CpuList, Error, ErrorKind, EventSet, Group, OpenOptions, Reading, ResolvedEvent,
    Result, Target, check_buffer, sum_readings,
};

/// Where the CPUs this machine has online are listed (Linux).
const ONLINE: &str = "/sys/devices/system/cpu/online";

/// The CPUs online here: `/sys/devices/system/cpu/online` where the OS has it (not this
/// process's affinity, which may be narrower), else CPUs `0..N` by the parallelism the OS
/// reports.
pub fn online_cpus() -> CpuList {
    std::fs::read_to_string(ONLINE)
        .ok()
        .and_then(|text| text.parse::<CpuList>().ok())
        .filter(|cpus| !cpus.is_empty())
        .unwrap_or_else(|| {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            CpuList::range(0, u32::try_from(cpus).unwrap_or(u32::MAX).saturating_sub(1))
        })
}

/// Where to count.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attach {
    /// The calling thread.
    ThisThread,
    /// One thread of any process, by its thread id.
    Thread(u32),
    /// These threads of any processes, by their thread ids (perf's `-t TID,TID`), each on
    /// its own.
    Threads(Vec<u32>),
    /// A process: every thread it has, each with what it creates from now on (threads and
    /// child processes). A thread that exits while the counters are being opened is skipped.
    Process(u32),
    /// Every online CPU (system-wide).
    AllCpus,
    /// These CPUs (system-wide).
    Cpus(CpuList),
    /// What runs on these CPUs (every online CPU: `None`) while tasks of one control group
    /// run there, the group named by its directory ([`find_cgroup`](crate::find_cgroup)
    /// finds it by name, as `perf stat -G` does).
    Cgroup {
        /// The control group's directory.
        path: Arc<Path>,
        /// The CPUs; `None` for every online CPU.
        cpus: Option<CpuList>,
    },
}

impl Attach {
    /// What runs on `cpus` (every online CPU: `None`) while tasks of the control group whose
    /// directory is `path` run there ([`Attach::Cgroup`]).
    pub fn cgroup(path: impl AsRef<Path>, cpus: Option<CpuList>) -> Attach {
        Attach::Cgroup {
            path: Arc::from(path.as_ref()),
            cpus,
        }
    }

    /// The backend targets this stands for now: a process's threads are read from
    /// `/proc/PID/task` (the process alone, with what it creates, where the OS has no such
    /// directory).
    pub fn targets(&self) -> Vec<Target> {
        match self {
            Attach::ThisThread => vec![Target::ThisThread],
            Attach::Thread(tid) => vec![Target::process(*tid)],
            Attach::Threads(tids) => tids.iter().map(|&tid| Target::process(tid)).collect(),
            Attach::Process(pid) => process_threads(*pid)
                .map(|threads| {
                    threads
                        .into_iter()
                        .map(Target::process_and_children)
                        .collect()
                })
                .unwrap_or_else(|| vec![Target::process_and_children(*pid)]),
            Attach::AllCpus => online_cpus().iter().map(Target::Cpu).collect(),
            Attach::Cpus(cpus) => cpus.iter().map(Target::Cpu).collect(),
            Attach::Cgroup { path, cpus } => cpus
                .clone()
                .unwrap_or_else(online_cpus)
                .iter()
                .map(|cpu| Target::Cgroup {
                    path: Arc::clone(path),
                    cpu,
                })
                .collect(),
        }
    }

    /// Whether `target` may be gone by the time its counters open without that being an
    /// error: a thread of a process other than its main thread (threads come and go).
    pub fn may_vanish(&self, target: &Target) -> bool {
        match (self, target) {
            (Attach::Process(pid), Target::Process { pid: tid, .. }) => tid != pid,
            _ => false,
        }
    }
}

/// The thread ids of process `pid`, lowest first; `None` where `/proc/PID/task` is missing.
fn process_threads(pid: u32) -> Option<Vec<u32>> {
    let entries = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut threads: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    threads.sort_unstable();
    Some(threads)
}

/// The same events counted on several targets: read per target, or summed over them (each
/// target's reading scaled on its own first, as [`sum_readings`] does).
///
/// It is a [`Group`] whose readings are the sums, one per event.
#[derive(Debug)]
pub struct MultiSet<G> {
    sets: Vec<(Target, EventSet<G>)>,
    events: Vec<ResolvedEvent>,
    /// Every target's readings, one row of `events.len()` per target.
    each: Vec<Reading>,
    /// One event's readings over the targets, to be summed.
    column: Vec<Reading>,
}

impl<G: Group> MultiSet<G> {
    /// Opens `events` on every target `attach` stands for, together on each (as one group
    /// when `options` say so).
    ///
    /// # Errors
    /// The first target's error, as [`Backend::open`] gives it (a thread that vanished while
    /// opening is skipped, not an error); [`ErrorKind::NotFound`] when no target is left.
    pub fn open<B>(
        backend: &B,
        events: &[ResolvedEvent],
        attach: &Attach,
        options: &OpenOptions,
    ) -> Result<Self>
    where
        B: Backend<Group = G> + ?Sized,
    {
        let mut sets = Vec::new();
        for target in attach.targets() {
            match EventSet::open(backend, events.to_vec(), &target, options) {
                Ok(set) => sets.push((target, set)),
                Err(e) if e.kind() == ErrorKind::NotFound && attach.may_vanish(&target) => {}
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
        Ok(Self {
            column: vec![Reading::default(); sets.len()],
            each: vec![Reading::default(); rows],
            sets,
            events: events.to_vec(),
        })
    }

    /// The targets counted, in order.
    pub fn targets(&self) -> impl Iterator<Item = &Target> {
        self.sets.iter().map(|(target, _)| target)
    }

    /// The events, in order.
    pub fn events(&self) -> &[ResolvedEvent] {
        &self.events
    }

    /// Each target's readings (one per event), in target order: per CPU with
    /// [`Attach::AllCpus`], per thread with [`Attach::Process`].
    ///
    /// # Errors
    /// As [`Group::read`].
    pub fn read_each(&mut self) -> Result<Vec<(Target, Vec<Reading>)>> {
        self.sets
            .iter_mut()
            .map(|(target, set)| Ok((target.clone(), set.read_to_vec()?)))
            .collect()
    }
}

impl<G: Group> Group for MultiSet<G> {
    fn len(&self) -> usize {
        self.events.len()
    }

    fn enable(&mut self) -> Result<()> {
        self.sets.iter_mut().try_for_each(|(_, set)| set.enable())
    }

    fn disable(&mut self) -> Result<()> {
        self.sets.iter_mut().try_for_each(|(_, set)| set.disable())
    }

    fn reset(&mut self) -> Result<()> {
        self.sets.iter_mut().try_for_each(|(_, set)| set.reset())
    }

    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        let n = self.events.len();
        check_buffer("the readings", n, readings.len())?;
        // Row t of `each` holds target t's readings, read into memory kept for it; each
        // event's column is then summed through `column`, so a read allocates nothing.
        for ((_, set), row) in self
            .sets
            .iter_mut()
            .zip(self.each.chunks_exact_mut(n.max(1)))
        {
            set.read(&mut row[..n])?;
        }
        for (i, out) in readings.iter_mut().take(n).enumerate() {
            for (slot, row) in self.column.iter_mut().zip(self.each.chunks_exact(n.max(1))) {
                *slot = row[i];
            }
            *out = sum_readings(&self.column);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_without_a_task_directory_is_counted_alone() {
        // No process has id u32::MAX (pid_max is at most 2^22).
        assert_eq!(
            Attach::Process(u32::MAX).targets(),
            [Target::process_and_children(u32::MAX)]
        );
        assert!(!online_cpus().is_empty(), "this machine runs on some CPU");
    }

    #[test]
    fn threads_are_each_a_target_without_their_children() {
        assert_eq!(
            Attach::Threads(vec![7, 9]).targets(),
            [Target::process(7), Target::process(9)]
        );
        assert_ne!(Target::process(7), Target::process_and_children(7));
    }

    #[test]
    fn only_a_process_s_other_threads_may_vanish() {
        let attach = Attach::Process(10);
        assert!(attach.may_vanish(&Target::process_and_children(11)));
        assert!(!attach.may_vanish(&Target::process_and_children(10)));
        assert!(!Attach::AllCpus.may_vanish(&Target::Cpu(0)));
    }
}
