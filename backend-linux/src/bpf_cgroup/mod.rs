//! Counting per cgroup at a cost that does not grow with the cgroups: [`CgroupCounter`].
//!
//! Two modes count the same thing, each event while the tasks of a cgroup (or of any cgroup
//! below it) run, on each CPU, with its time enabled and running:
//!
//! - **BPF** ([`CgroupMode::Bpf`], perf's `perf stat --bpf-counters --for-each-cgroup`): each
//!   event opened once per CPU, whatever the number of cgroups; a BPF program run at every
//!   context switch adds each CPU's counts since the previous switch to the followed cgroups
//!   among the switched-out task's cgroup and its ancestors ([`program`]), so a followed
//!   cgroup counts its descendants, one created and removed between two reads included. A
//!   cgroup is counted from when it is followed; one that nobody follows takes no room.
//!   Needs Linux 5.10, cgroup v2 (its program reads the task's cgroup2 cgroup, wherever the
//!   perf_event controller is bound), and CAP_BPF with CAP_PERFMON (or root).
//! - **perf events** ([`CgroupMode::PerfEvents`], `perf stat -G`): one perf event per event,
//!   CPU and followed cgroup (`PERF_FLAG_PID_CGROUP`), opened when the cgroup is followed.
//!   What can count for a cgroup does: a group that does not open for it is opened event by
//!   event, as perf's weak groups are, and an event that does not open alone (no counter
//!   left: every debug register taken, for a hardware breakpoint) is left out on that CPU,
//!   said in [`CgroupCounts::left_out`].
//!
//! [`CgroupModeChoice::Auto`] takes BPF where the kernel and this process's privileges allow
//! it, and perf events elsewhere, saying why ([`CgroupMode::PerfEvents::why_not_bpf`]).
//!
//! A followed cgroup is the cgroup its directory held when it was followed (its id, the
//! directory's inode number): one removed and made again under the same path is a new
//! cgroup, followed in its place when [`CgroupCounter::follow`] is called again or at the
//! next [`CgroupCounter::read`] (the BPF mode counts removals with a program at the
//! tracepoint `cgroup:cgroup_rmdir` and looks at the directories after one; the perf-event
//! mode looks at those whose counts stood still, as a removed cgroup's do).

mod adopt;
mod bperf_attr;
mod bperf_programs;
mod bpf_mode;
mod btf;
mod insn;
mod program;
mod sets;
pub mod shared;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use counterhal_hal::{
    Backend, BackendTarget, BoxedCgroupCounter, CgroupCapability, CgroupCounter,
    CgroupCounterOptions, CgroupCounts, CgroupMode, CgroupModeChoice, Error, EventLeftOut,
    EventRequest, Group, OpenOptions, ProgramSkips, Reading, Result,
};

use crate::backend::LinuxBackend;
use crate::group::LinuxGroup;
use bpf_mode::{BpfCounting, add};
pub use program::{MAX_EVENTS, MAX_LEVELS};
use sets::{Members, Sets};

/// What the counter keeps of one followed cgroup beside its counts.
struct Kept {
    /// The cgroup's id: its directory's inode number when it was followed.
    id: u64,
    /// Its level below the cgroup v2 mount (the BPF mode's; 0 in the perf-event mode).
    level: usize,
    /// `total` at the read before: where it stands still, the directory is looked at again.
    last_total: Vec<Reading>,
    /// The perf-event mode's sets opened: each CPU's, each with its events.
    opened: Vec<Vec<(Members, LinuxGroup)>>,
}

/// What [`LinuxCgroupCounter::start`] opened for a cgroup: each CPU's sets, and the events
/// left out on some CPUs.
type Started = (Vec<Vec<(Members, LinuxGroup)>>, Vec<EventLeftOut>);

enum Counting {
    Bpf(Box<BpfCounting>),
    PerfEvents,
}

/// Events counted per cgroup, on a list of CPUs, in the [`CgroupMode`] chosen at open:
/// [`follow`](CgroupCounter::follow) the cgroups to read, [`read`](CgroupCounter::read)
/// them all, then take each one's [`counts`](CgroupCounter::counts).
pub struct LinuxCgroupCounter {
    backend: LinuxBackend,
    events: Vec<EventRequest>,
    cpus: Vec<u32>,
    options: CgroupCounterOptions,
    /// The events' sets on each CPU: the groups asked for, then the lone events.
    sets: Sets,
    /// Room for one set's readings.
    scratch: Vec<Reading>,
    mode: CgroupMode,
    counting: Counting,
    followed: Vec<CgroupCounts>,
    /// Beside each of `followed`, what is kept of it.
    kept: Vec<Kept>,
    /// The BPF mode's count of cgroups removed at the last read.
    removals: Option<u64>,
    /// In the BPF mode, the parents whose new children its program follows itself, and the
    /// children of theirs refused (directory and id).
    adopting: Vec<Adopting>,
    refused: Vec<(PathBuf, u64)>,
    /// The ids the program put in the maps of followed and of adopting cgroups that the
    /// last [`forget_unseen`](LinuxCgroupCounter::forget_unseen) found strangers.
    unseen: (HashSet<u64>, HashSet<u64>),
}

/// A parent whose new children the BPF program follows itself.
struct Adopting {
    path: PathBuf,
    id: u64,
    level: usize,
    /// The levels below it its program adopts (each adopted child adopts one fewer;
    /// `u8::MAX`: every level).
    levels: u8,
}

impl LinuxCgroupCounter {
    /// Counts `events` on `cpus` per cgroup, in the mode `options` ask for.
    ///
    /// # Errors
    /// As [`Backend::open`] for the events (the BPF mode opens them on each CPU at once;
    /// the perf-event mode when a cgroup is followed); under
    /// [`CgroupModeChoice::Bpf`], why the BPF mode cannot count here:
    /// [`ErrorKind::PermissionDenied`](counterhal_hal::ErrorKind::PermissionDenied) without
    /// CAP_BPF and CAP_PERFMON, [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported)
    /// for a kernel without it (with the verifier's log where it refused the program).
    pub fn open(
        backend: &LinuxBackend,
        events: &[EventRequest],
        cpus: &[u32],
        options: CgroupCounterOptions,
    ) -> Result<LinuxCgroupCounter> {
        if events.is_empty() {
            return Err(Error::invalid_input("no events to count per cgroup")
                .with_hint("pass at least one event"));
        }
        let sets = Sets::new(events.len(), &options.groups)?;
        let bpf = |root: &Option<PathBuf>| match root {
            Some(_) => BpfCounting::open(backend, events, &sets, cpus, options.capacity),
            None => Err(Error::unsupported("no cgroup v2 mount was given")
                .with_hint("the BPF mode counts the cgroups of a cgroup2 file system")),
        };
        let (counting, mode) = match options.mode {
            CgroupModeChoice::PerfEvents => (
                Counting::PerfEvents,
                CgroupMode::PerfEvents { why_not_bpf: None },
            ),
            CgroupModeChoice::Bpf => (
                Counting::Bpf(Box::new(bpf(&options.unified_root)?)),
                CgroupMode::Bpf,
            ),
            // Auto, and any choice added later: BPF where it works.
            _ => match bpf(&options.unified_root) {
                Ok(counting) => (Counting::Bpf(Box::new(counting)), CgroupMode::Bpf),
                Err(why) => (
                    Counting::PerfEvents,
                    CgroupMode::PerfEvents {
                        why_not_bpf: Some(why.to_string()),
                    },
                ),
            },
        };
        Ok(LinuxCgroupCounter {
            backend: backend.clone(),
            events: events.to_vec(),
            cpus: cpus.to_vec(),
            options,
            sets,
            scratch: vec![Reading::default(); events.len()],
            mode,
            counting,
            followed: Vec::new(),
            kept: Vec::new(),
            removals: None,
            adopting: Vec::new(),
            refused: Vec::new(),
            unseen: Default::default(),
        })
    }

    /// The mode counting, and where it is perf events, why not BPF.
    pub fn mode(&self) -> &CgroupMode {
        &self.mode
    }

    /// The CPUs counted, the order of [`CgroupCounts::per_cpu`].
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// The events' names, the order of every reading.
    pub fn event_names(&self) -> impl Iterator<Item = &str> {
        self.events.iter().map(|e| e.name.as_str())
    }

    /// Starts reading `cgroup` (its directory); its counts start now. Where `cgroup` is
    /// followed and its directory now holds another cgroup (removed and made again under the
    /// same path), the new one is followed in its place, its counts from zero.
    ///
    /// # Errors
    /// [`ErrorKind::NotFound`](counterhal_hal::ErrorKind::NotFound) for a directory that does
    /// not exist; [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) in
    /// the BPF mode for one outside the cgroup v2 mount or deeper than it counts
    /// ([`CgroupCounter::deepest_level`]);
    /// [`ErrorKind::LimitReached`](counterhal_hal::ErrorKind::LimitReached) in the BPF mode
    /// where [`CgroupCounterOptions::capacity`] cgroups are followed; in the perf-event mode,
    /// as [`Backend::open`] on a [`BackendTarget::Cgroup`] where the cgroup is refused or no
    /// event opens for it. An event that alone does not open for it is left out where it does
    /// not ([`CgroupCounts::left_out`]), and the others count.
    pub fn follow(&mut self, cgroup: &Path) -> Result<()> {
        let id = cgroup_id(self.backend.system(), cgroup)?;
        let at = self.followed.iter().position(|c| c.path == cgroup);
        match at {
            Some(at) if self.kept[at].id == id => Ok(()),
            Some(at) => self.replace(at, id),
            None => {
                let level = self.check_level(cgroup)?;
                // The map has room past its capacity for the cgroups its program adopts:
                // the followed are held to the capacity here.
                let full = self.kept.len() >= self.options.capacity.max(1) as usize;
                if matches!(self.counting, Counting::Bpf(_)) && full {
                    return Err(Error::new(
                        counterhal_hal::ErrorKind::LimitReached,
                        format!(
                            "the BPF map of cgroups holds its {} cgroups: {} cannot be followed",
                            self.options.capacity,
                            cgroup.display()
                        ),
                    )
                    .with_hint(
                        "follow fewer cgroups, or open the counter with a larger capacity",
                    ));
                }
                let (opened, left_out) = self.start(cgroup, id)?;
                let zeroes = vec![Reading::default(); self.events.len()];
                let mut counts =
                    CgroupCounts::zero(cgroup.to_path_buf(), self.events.len(), self.cpus.len());
                counts.left_out = left_out;
                self.followed.push(counts);
                self.kept.push(Kept {
                    id,
                    level,
                    last_total: zeroes,
                    opened,
                });
                self.visit_levels();
                Ok(())
            }
        }
    }

    /// Starts counting cgroup `id` at `cgroup`: in the BPF mode, its place in the program's
    /// map; in the perf-event mode, its sets on each CPU, and the events left out where they
    /// do not open for it ([`Sets::open`]: a group that does not open counts its events
    /// alone), returned.
    ///
    /// # Errors
    /// As [`Sets::open`]; in the perf-event mode, the first event's error where no event
    /// opens on any CPU (nothing would count).
    fn start(&mut self, cgroup: &Path, id: u64) -> Result<Started> {
        if let Counting::Bpf(bpf) = &mut self.counting {
            bpf.insert(id)?;
            return Ok((Vec::new(), Vec::new()));
        }
        let mut opened = Vec::with_capacity(self.cpus.len());
        let mut left_out: Vec<EventLeftOut> = Vec::new();
        for (at, &cpu) in self.cpus.iter().enumerate() {
            let target = BackendTarget::Cgroup {
                path: cgroup.into(),
                cpu,
            };
            let on_cpu = self.sets.open(|events, grouped| {
                let mut options = OpenOptions::default();
                options.grouped = grouped;
                let requests: Vec<EventRequest> =
                    events.iter().map(|&e| self.events[e].clone()).collect();
                let mut group = self.backend.open(&requests, &target, &options)?;
                group.enable()?;
                Ok(group)
            })?;
            for (event, error) in on_cpu.left_out {
                match left_out.iter_mut().find(|l| l.event == event) {
                    Some(known) => known.cpus.push(at),
                    None => left_out.push(EventLeftOut::new(event, vec![at], error)),
                }
            }
            opened.push(on_cpu.opened);
        }
        if opened.iter().all(Vec::is_empty)
            && let Some(first) = left_out.first()
        {
            return Err(first.error.clone());
        }
        left_out.sort_by_key(|l| l.event);
        Ok((opened, left_out))
    }

    /// Follows cgroup `id`, the directory of the `at`th followed cgroup now, in its place,
    /// counting from zero. Where it cannot, the old one stays (counting nothing more), and a
    /// later read tries again.
    fn replace(&mut self, at: usize, id: u64) -> Result<()> {
        let old = self.kept[at].id;
        let shared = self
            .kept
            .iter()
            .enumerate()
            .any(|(i, c)| i != at && c.id == old);
        if let Counting::Bpf(bpf) = &mut self.counting
            && !shared
        {
            // The old one first: a full map has room for the new one.
            bpf.remove(old);
        }
        let path = self.followed[at].path.clone();
        let (opened, left_out) = self.start(&path, id)?;
        let (counts, kept) = (&mut self.followed[at], &mut self.kept[at]);
        kept.id = id;
        kept.opened = opened;
        counts.left_out = left_out;
        for reading in counts
            .total
            .iter_mut()
            .chain(counts.per_cpu.iter_mut().flatten())
            .chain(kept.last_total.iter_mut())
        {
            *reading = Reading::default();
        }
        Ok(())
    }

    /// Refuses a cgroup the BPF mode would not see: outside the cgroup v2 mount, or deeper
    /// than it counts; its level below the mount (0 in the perf-event mode).
    fn check_level(&self, cgroup: &Path) -> Result<usize> {
        let Some(deepest) = self.deepest_level() else {
            return Ok(0);
        };
        let root = self
            .options
            .unified_root
            .as_deref()
            .unwrap_or(Path::new("/"));
        let Ok(below) = cgroup.strip_prefix(root) else {
            return Err(Error::invalid_input(format!(
                "{} is not under the cgroup v2 mount {}",
                cgroup.display(),
                root.display()
            ))
            .with_hint("the BPF mode counts cgroup v2 cgroups: name one under that mount"));
        };
        let level = below.components().count();
        if level > deepest {
            return Err(Error::invalid_input(format!(
                "{} is {level} levels deep; the BPF mode counts {deepest} levels below the root",
                cgroup.display(),
            ))
            .with_hint("follow one of its ancestors, or count in the perf-event mode"));
        }
        Ok(level)
    }

    /// The deepest level below the cgroup v2 mount whose cgroups the BPF mode follows (the
    /// tasks of deeper ones count in their followed ancestors); `None` in the perf-event
    /// mode, which follows a cgroup at any depth.
    pub fn deepest_level(&self) -> Option<usize> {
        match self.counting {
            Counting::Bpf(_) => Some(MAX_LEVELS - 1),
            Counting::PerfEvents => None,
        }
    }

    /// The BPF program visits the levels down to the deepest one followed, and to the
    /// deepest cgroups an adopting parent's children adopt (all of them, where one adopts
    /// every level below it).
    fn visit_levels(&self) {
        if let Counting::Bpf(bpf) = &self.counting {
            let followed = self.kept.iter().map(|c| c.level + 1);
            let adopted = self.adopting.iter().map(|a| match a.levels {
                u8::MAX => MAX_LEVELS,
                levels => a.level + 1 + usize::from(levels.max(1)),
            });
            bpf.visit_levels(followed.chain(adopted).max().unwrap_or(0));
        }
    }

    /// Where the BPF mode counts a task that moves between cgroups while it runs (a command
    /// writing its own pid into `cgroup.procs`: `cgexec`, a script) wrong, why: its new
    /// cgroup is then given its CPU's counts since the CPU's last context switch, as perf's
    /// `--bpf-counters` gives them. `None` where the BPF mode settles such a move (a program
    /// at the kernel's `cgroup_migrate`) and in the perf-event mode, which counts it right.
    pub fn moves_unsettled(&self) -> Option<&str> {
        match &self.counting {
            Counting::Bpf(bpf) => bpf.unsettled(),
            Counting::PerfEvents => None,
        }
    }

    /// In the BPF mode, the context switches its program missed since the counter opened (the
    /// kernel skipped it: its `recursion_misses`, see the `program` module), whose counts went
    /// to the next task's cgroups. `None` in the perf-event mode, which misses none, and where
    /// the kernel does not count skips (before Linux 5.12).
    pub fn switches_missed(&self) -> Option<u64> {
        match &self.counting {
            Counting::Bpf(bpf) => bpf.switches_missed(),
            Counting::PerfEvents => None,
        }
    }

    /// Stops reading `cgroup` and lets its counters go (the BPF mode forgets its sums).
    pub fn unfollow(&mut self, cgroup: &Path) {
        let Some(at) = self.followed.iter().position(|c| c.path == cgroup) else {
            return;
        };
        self.followed.remove(at);
        let gone = self.kept.remove(at);
        if let Counting::Bpf(bpf) = &mut self.counting
            && !self.kept.iter().any(|c| c.id == gone.id)
        {
            bpf.remove(gone.id);
        }
        self.visit_levels();
    }

    /// The cgroups followed.
    pub fn followed(&self) -> impl Iterator<Item = &Path> {
        self.followed.iter().map(|c| c.path.as_path())
    }

    /// Reads every followed cgroup (the BPF mode first brings each CPU's sums up to now). A
    /// cgroup whose directory now holds another cgroup is followed again
    /// ([`CgroupCounter::follow`]): it reads zeroes. The directories looked at are those of
    /// the cgroups whose counts stood still since the read before (a removed cgroup's stand
    /// still), or in the BPF mode, all of them where a cgroup was removed anywhere since the
    /// read before, and none where none was.
    ///
    /// # Errors
    /// The first counter that cannot be read, or cgroup that cannot be followed again,
    /// naming its cgroup; the followed cgroups read before it hold their new counts.
    pub fn read(&mut self) -> Result<()> {
        let removals = match &self.counting {
            Counting::Bpf(bpf) => {
                bpf.refresh()?;
                bpf.removals()
            }
            Counting::PerfEvents => None,
        };
        // Removals counted: look where one happened since the read before.
        let removed = removals.map(|now| Some(now) != self.removals);
        let mut gone = false;
        for at in 0..self.followed.len() {
            let (counts, kept) = (&mut self.followed[at], &mut self.kept[at]);
            let shown = counts.path.display();
            match &mut self.counting {
                Counting::Bpf(bpf) => bpf
                    .read(kept.id, &mut counts.per_cpu, &mut counts.total)
                    .map_err(|e| e.context(format!("cgroup {shown}")))?,
                Counting::PerfEvents => {
                    counts
                        .total
                        .iter_mut()
                        .for_each(|r| *r = Reading::default());
                    for (opened, row) in kept.opened.iter_mut().zip(&mut counts.per_cpu) {
                        self.sets
                            .read(opened, row, &mut self.scratch)
                            .map_err(|e| e.context(format!("cgroup {shown}")))?;
                        add(&mut counts.total, row);
                    }
                }
            }
            let standing = counts.total == kept.last_total;
            kept.last_total.copy_from_slice(&counts.total);
            if !removed.unwrap_or(standing) {
                continue;
            }
            match cgroup_id(self.backend.system(), &counts.path) {
                Ok(id) if id != kept.id => {
                    let shown = counts.path.display().to_string();
                    self.replace(at, id)
                        .map_err(|e| e.context(format!("cgroup {shown}, made again")))?;
                }
                Err(_) => gone = true,
                Ok(_) => {}
            }
        }
        // A directory gone is looked at again at every read, until it is back or let go.
        self.removals = removals.filter(|_| !gone);
        Ok(())
    }

    /// Every followed cgroup's counts at the last [`read`](CgroupCounter::read).
    pub fn all_counts(&self) -> &[CgroupCounts] {
        &self.followed
    }
}

impl CgroupCounter for LinuxCgroupCounter {
    fn mode(&self) -> &CgroupMode {
        LinuxCgroupCounter::mode(self)
    }
    fn cpus(&self) -> &[u32] {
        LinuxCgroupCounter::cpus(self)
    }
    fn event_names(&self) -> Vec<&str> {
        LinuxCgroupCounter::event_names(self).collect()
    }
    fn follow(&mut self, cgroup: &Path) -> Result<()> {
        LinuxCgroupCounter::follow(self, cgroup)
    }
    fn unfollow(&mut self, cgroup: &Path) {
        LinuxCgroupCounter::unfollow(self, cgroup);
    }
    fn followed(&self) -> Box<dyn Iterator<Item = &Path> + '_> {
        Box::new(LinuxCgroupCounter::followed(self))
    }
    fn read(&mut self) -> Result<()> {
        LinuxCgroupCounter::read(self)
    }
    fn all_counts(&self) -> &[CgroupCounts] {
        LinuxCgroupCounter::all_counts(self)
    }
    fn deepest_level(&self) -> Option<usize> {
        LinuxCgroupCounter::deepest_level(self)
    }
    fn moves_unsettled(&self) -> Option<&str> {
        LinuxCgroupCounter::moves_unsettled(self)
    }
    fn switches_missed(&self) -> Option<u64> {
        LinuxCgroupCounter::switches_missed(self)
    }
    fn adopt_children(&mut self, parent: &Path, levels: u8) -> Result<bool> {
        LinuxCgroupCounter::adopt_children(self, parent, levels)
    }
    fn forget_unseen(&mut self) {
        LinuxCgroupCounter::forget_unseen(self);
    }
    fn leave_children(&mut self, parent: &Path) {
        LinuxCgroupCounter::leave_children(self, parent);
    }
    fn refuse(&mut self, cgroup: &Path) {
        LinuxCgroupCounter::refuse(self, cgroup);
    }
    fn programs_skipped(&self) -> Vec<ProgramSkips> {
        match &self.counting {
            Counting::Bpf(bpf) => bpf.recursion_misses(),
            Counting::PerfEvents => Vec::new(),
        }
    }
}

/// The Linux backend counts per cgroup in either mode.
impl CgroupCapability for LinuxBackend {
    fn open_cgroup_counter(
        &self,
        events: &[EventRequest],
        cpus: &[u32],
        options: CgroupCounterOptions,
    ) -> Result<BoxedCgroupCounter> {
        Ok(Box::new(LinuxCgroupCounter::open(
            self, events, cpus, options,
        )?))
    }
}

/// The id of the cgroup at `cgroup`: its directory's inode number (the kernel's cgroup id,
/// `cgroup_id()`, which `bpf_get_current_ancestor_cgroup_id` returns).
///
/// # Errors
/// [`ErrorKind::NotFound`](counterhal_hal::ErrorKind::NotFound) where it cannot be read.
fn cgroup_id(system: &counterhal_system::System, cgroup: &Path) -> Result<u64> {
    system.cgroup_id(cgroup).map_err(|e| {
        Error::new(
            counterhal_hal::ErrorKind::NotFound,
            format!("no cgroup {}: {e}", cgroup.display()),
        )
        .with_errno(e.raw_os_error().unwrap_or(0))
        .with_hint("name the directory of a cgroup that exists")
    })
}

/// Held by each BPF test of this crate: one at a time. The kernel skips a BPF program on a
/// CPU where another one or a user-space map call holds `bpf_prog_active`
/// (kernel/events/core.c `bpf_overflow_handler`), so two tests side by side lose each other's
/// switches.
#[cfg(test)]
fn bpf_alone() -> std::sync::MutexGuard<'static, ()> {
    static BPF: std::sync::Mutex<()> = std::sync::Mutex::new(());
    BPF.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::insn::{Asm, R0, R1, R2, R10, op};
    use super::program;
    use crate::sys::bpf as sys_bpf;
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;

    /// Compiles a C program against the system's `linux/bpf.h` and compares the numbers the
    /// encoder, the program and the system calls use with the header's.
    ///
    /// Oracle: the kernel's UAPI header, `linux/bpf.h` (and `linux/bpf_common.h`).
    #[test]
    fn numbers_match_the_system_header() {
        let _alone = super::bpf_alone();
        if !std::path::Path::new("/usr/include/linux/bpf.h").exists() {
            skip!(
                Need::Tools,
                "/usr/include/linux/bpf.h is not installed (apt-get install linux-libc-dev)"
            );
        }
        let ours: Vec<(&str, i64)> = vec![
            ("BPF_MAP_CREATE", sys_bpf::BPF_MAP_CREATE.into()),
            ("BPF_MAP_LOOKUP_ELEM", sys_bpf::BPF_MAP_LOOKUP_ELEM.into()),
            ("BPF_MAP_UPDATE_ELEM", sys_bpf::BPF_MAP_UPDATE_ELEM.into()),
            ("BPF_MAP_DELETE_ELEM", sys_bpf::BPF_MAP_DELETE_ELEM.into()),
            ("BPF_PROG_LOAD", sys_bpf::BPF_PROG_LOAD.into()),
            ("BPF_PROG_TEST_RUN", sys_bpf::BPF_PROG_TEST_RUN.into()),
            (
                "BPF_RAW_TRACEPOINT_OPEN",
                sys_bpf::BPF_RAW_TRACEPOINT_OPEN.into(),
            ),
            ("BPF_MAP_TYPE_ARRAY", sys_bpf::MAP_ARRAY.into()),
            (
                "BPF_MAP_TYPE_PERF_EVENT_ARRAY",
                sys_bpf::MAP_PERF_EVENT_ARRAY.into(),
            ),
            ("BPF_MAP_TYPE_PERCPU_HASH", sys_bpf::MAP_PERCPU_HASH.into()),
            (
                "BPF_MAP_TYPE_PERCPU_ARRAY",
                sys_bpf::MAP_PERCPU_ARRAY.into(),
            ),
            ("BPF_PROG_TYPE_TRACING", sys_bpf::PROG_TRACING.into()),
            ("BPF_TRACE_FENTRY", sys_bpf::TRACE_FENTRY.into()),
            ("BPF_TRACE_RAW_TP", sys_bpf::TRACE_RAW_TP.into()),
            (
                "BPF_PROG_TYPE_RAW_TRACEPOINT",
                sys_bpf::PROG_RAW_TRACEPOINT.into(),
            ),
            ("BPF_NOEXIST", sys_bpf::BPF_NOEXIST as i64),
            (
                "BPF_F_TEST_RUN_ON_CPU",
                sys_bpf::BPF_F_TEST_RUN_ON_CPU.into(),
            ),
            ("BPF_PSEUDO_MAP_FD", op::PSEUDO_MAP_FD.into()),
            ("BPF_PSEUDO_MAP_VALUE", op::PSEUDO_MAP_VALUE.into()),
            ("BPF_ATOMIC", op::ATOMIC.into()),
            ("BPF_XCHG", op::XCHG.into()),
            ("BPF_ADD", op::ADD.into()),
            ("BTF_MAGIC", 0xeb9f),
            ("BTF_KIND_FUNC", super::btf::KIND_FUNC.into()),
            ("BTF_KIND_TYPEDEF", super::btf::KIND_TYPEDEF.into()),
            ("BTF_KIND_FUNC_PROTO", 13),
            ("BTF_KIND_ENUM64", 19),
            ("sizeof(struct btf_type)", 12),
            ("sizeof(struct btf_member)", 12),
            ("sizeof(struct btf_param)", 8),
            ("sizeof(struct btf_array)", 12),
            (
                "sizeof(struct bpf_perf_event_value)",
                program::READING_BYTES as i64,
            ),
            ("offsetof(union bpf_attr, map_name)", 28),
            ("offsetof(union bpf_attr, flags)", 24),
            ("offsetof(union bpf_attr, prog_name)", 48),
            ("offsetof(union bpf_attr, expected_attach_type)", 68),
            ("offsetof(union bpf_attr, attach_btf_id)", 108),
            ("offsetof(union bpf_attr, raw_tracepoint.prog_fd)", 8),
            ("offsetof(union bpf_attr, test.flags)", 64),
            ("offsetof(union bpf_attr, test.cpu)", 68),
            (
                "offsetof(struct bpf_prog_info, id)",
                sys_bpf::PROG_INFO_ID as i64,
            ),
            (
                "offsetof(struct bpf_prog_info, recursion_misses)",
                sys_bpf::PROG_INFO_RECURSION_MISSES as i64,
            ),
            (
                "BPF_LD | BPF_DW | BPF_IMM",
                (op::LD | op::DW | op::IMM).into(),
            ),
            (
                "BPF_LDX | BPF_MEM | BPF_DW",
                (op::LDX | op::MEM | op::DW).into(),
            ),
            (
                "BPF_STX | BPF_MEM | BPF_DW",
                (op::STX | op::MEM | op::DW).into(),
            ),
            (
                "BPF_STX | BPF_MEM | BPF_W",
                (op::STX | op::MEM | op::W).into(),
            ),
            (
                "BPF_ALU64 | BPF_MOV | BPF_K",
                (op::ALU64 | op::MOV | op::K).into(),
            ),
            (
                "BPF_ALU64 | BPF_MOV | BPF_X",
                (op::ALU64 | op::MOV | op::X).into(),
            ),
            (
                "BPF_ALU64 | BPF_ADD | BPF_K",
                (op::ALU64 | op::ADD | op::K).into(),
            ),
            (
                "BPF_ALU64 | BPF_ADD | BPF_X",
                (op::ALU64 | op::ADD | op::X).into(),
            ),
            (
                "BPF_ALU64 | BPF_SUB | BPF_X",
                (op::ALU64 | op::SUB | op::X).into(),
            ),
            ("BPF_JMP | BPF_JA", (op::JMP | op::JA).into()),
            (
                "BPF_JMP | BPF_JEQ | BPF_K",
                (op::JMP | op::JEQ | op::K).into(),
            ),
            (
                "BPF_JMP | BPF_JNE | BPF_K",
                (op::JMP | op::JNE | op::K).into(),
            ),
            (
                "BPF_JMP | BPF_JGE | BPF_K",
                (op::JMP | op::JGE | op::K).into(),
            ),
            (
                "BPF_JMP | BPF_JGE | BPF_X",
                (op::JMP | op::JGE | op::X).into(),
            ),
            (
                "BPF_LDX | BPF_MEM | BPF_W",
                (op::LDX | op::MEM | op::W).into(),
            ),
            (
                "BPF_STX | BPF_ATOMIC | BPF_DW",
                (op::STX | op::ATOMIC | op::DW).into(),
            ),
            ("BPF_JMP | BPF_CALL", (op::JMP | op::CALL).into()),
            ("BPF_JMP | BPF_EXIT", (op::JMP | op::EXIT).into()),
        ];
        let helpers = program::HELPERS;
        let mut c = String::from(
            "#include <stdio.h>\n#include <stddef.h>\n#include <linux/bpf.h>\n\
             #include <linux/btf.h>\n\
             int main(void) {\n",
        );
        for (name, _) in &ours {
            c += &format!("printf(\"%lld\\n\", (long long)({name}));\n");
        }
        for (name, _) in helpers {
            c += &format!("printf(\"%lld\\n\", (long long)(BPF_FUNC_{name}));\n");
        }
        c += "return 0; }\n";
        let dir = std::env::temp_dir().join(format!("counterhal-bpf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (source, binary) = (dir.join("bpf.c"), dir.join("bpf"));
        std::fs::write(&source, c).unwrap();
        let compiled = match std::process::Command::new("cc")
            .arg("-o")
            .arg(&binary)
            .arg(&source)
            .output()
        {
            Ok(out) => out,
            Err(e) => skip!(Need::Tools, "no C compiler (`cc`): {e}"),
        };
        assert!(
            compiled.status.success(),
            "{}",
            String::from_utf8_lossy(&compiled.stderr)
        );
        let output = std::process::Command::new(&binary).output().unwrap();
        std::fs::remove_dir_all(&dir).ok();
        let seen: Vec<i64> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        let expected = ours
            .iter()
            .map(|(name, value)| (name.to_string(), *value))
            .chain(
                helpers
                    .iter()
                    .map(|(name, value)| (format!("BPF_FUNC_{name}"), i64::from(*value))),
            );
        for ((name, value), header) in expected.zip(&seen) {
            assert_eq!(value, *header, "{name}: ours {value}, linux/bpf.h {header}");
        }
        assert_eq!(seen.len(), ours.len() + helpers.len());
    }

    /// A program the verifier refuses (it reads the frame before writing it, then returns
    /// `r0` without setting it) comes back as an error carrying the verifier's log, of the
    /// kind of a program this kernel cannot take (not of a privilege: the verifier refuses
    /// with EACCES).
    ///
    /// Oracle: the kernel's verifier (kernel/bpf/verifier.c: "invalid read from stack" where
    /// the program may not read uninitialized stack, which a program loaded with CAP_BPF and
    /// CAP_PERFMON may; then "R0 !read_ok" where `exit` finds `r0` unset).
    #[test]
    fn a_refused_program_is_an_error_with_the_verifiers_log() {
        let _alone = super::bpf_alone();
        let mut asm = Asm::default();
        asm.load64(R1, R10, -8);
        asm.exit();
        match super::bpf_mode::load(sys_bpf::PROG_RAW_TRACEPOINT, &asm.finish(), "ch_refused") {
            Ok(_) => panic!("the verifier took a program that reads an unwritten stack slot"),
            Err(e) if e.kind() == counterhal_hal::ErrorKind::PermissionDenied => {
                skip!(Need::Privilege, "loading BPF programs takes CAP_BPF: {e}")
            }
            Err(e) => {
                let text = e.to_string();
                assert_eq!(e.kind(), counterhal_hal::ErrorKind::Unsupported, "{text}");
                assert!(text.contains("the verifier said:"), "{text}");
                assert!(
                    text.contains("invalid read from stack") || text.contains("R0 !read_ok"),
                    "{text}"
                );
            }
        }
    }

    /// The largest program, [`MAX_EVENTS`](super::MAX_EVENTS) events at
    /// [`MAX_LEVELS`](super::MAX_LEVELS) levels, passes the verifier as each program type it
    /// is loaded as, with plain and atomic access: its instructions, and the time each load
    /// took, are printed.
    ///
    /// Oracle: the kernel's verifier, which checks every helper's availability for the
    /// program type, every memory access and every path (the loop over the levels walked to
    /// its bound).
    #[test]
    fn the_largest_program_passes_the_verifier() {
        let _alone = super::bpf_alone();
        use super::bpf_mode::{create, load, load_for};
        use super::program::Run;
        use std::os::fd::AsFd;
        let events = super::MAX_EVENTS as u32;
        let reading = program::READING_BYTES as u32;
        let maps = [
            create(
                sys_bpf::MAP_PERF_EVENT_ARRAY,
                4,
                4,
                (events + 1) * 4,
                "ch_t_events",
            ),
            create(
                sys_bpf::MAP_PERCPU_ARRAY,
                4,
                reading,
                events + 1,
                "ch_t_previous",
            ),
            create(
                sys_bpf::MAP_PERCPU_HASH,
                8,
                reading * events,
                16,
                "ch_t_cgroups",
            ),
            create(sys_bpf::MAP_ARRAY, 4, 4, 1, "ch_t_levels"),
            create(sys_bpf::MAP_HASH, 8, 1, 16, "ch_t_adopting"),
            create(sys_bpf::MAP_HASH, 8, 1, 16, "ch_t_refused"),
            create(sys_bpf::MAP_ARRAY, 4, reading * events, 1, "ch_t_zeros"),
        ];
        let maps = match maps {
            [Ok(a), Ok(b), Ok(c), Ok(d), Ok(e), Ok(f), Ok(g)] => [a, b, c, d, e, f, g],
            [Err(e), ..] if e.kind() == counterhal_hal::ErrorKind::PermissionDenied => {
                skip!(Need::Privilege, "BPF maps take CAP_BPF: {e}")
            }
            other => panic!("{:?}", other.map(|m| m.err())),
        };
        let maps = program::Maps {
            events: maps[0].as_fd(),
            previous: maps[1].as_fd(),
            cgroups: maps[2].as_fd(),
            levels: maps[3].as_fd(),
            adopting: maps[4].as_fd(),
            refused: maps[5].as_fd(),
            zeros: maps[6].as_fd(),
        };
        for (prog_type, run) in [
            (sys_bpf::PROG_RAW_TRACEPOINT, Run::Switch),
            (sys_bpf::PROG_RAW_TRACEPOINT, Run::Read),
        ] {
            let plain = program::counting(maps, super::MAX_EVENTS, 4, run);
            let started = std::time::Instant::now();
            if let Err(e) = load(prog_type, &plain, "ch_t_largest") {
                panic!("{} instructions, type {prog_type}: {e}", plain.len());
            }
            eprintln!(
                "{} instructions, type {prog_type}: verified in {:?}",
                plain.len(),
                started.elapsed()
            );
        }
        let atomic = program::counting(maps, super::MAX_EVENTS, 4, Run::Move);
        let Ok(vmlinux) = super::btf::read_vmlinux(&counterhal_system::System::host()) else {
            skip!(
                Need::System,
                "no kernel BTF at {}",
                super::btf::vmlinux(&counterhal_system::System::host()).display()
            );
        };
        // A tracing program, as the settle program is: at a tracepoint (its arguments typed
        // by BTF), then at cgroup_migrate's entry where this kernel takes it.
        let at_tracepoint = sys_bpf::AttachTo {
            attach_type: sys_bpf::TRACE_RAW_TP,
            btf_id: super::btf::type_id(
                &vmlinux,
                super::btf::KIND_TYPEDEF,
                "btf_trace_cgroup_attach_task",
            )
            .unwrap(),
        };
        let at_entry = sys_bpf::AttachTo {
            attach_type: sys_bpf::TRACE_FENTRY,
            btf_id: super::btf::function_id(&vmlinux, "htab_map_delete_elem").unwrap(),
        };
        let started = std::time::Instant::now();
        if let Err(e) = load_for(
            sys_bpf::PROG_TRACING,
            at_tracepoint,
            None,
            None,
            &atomic,
            "ch_t_settle",
        ) {
            panic!("{} instructions, a tracing program: {e}", atomic.len());
        }
        eprintln!(
            "{} instructions, a tracing program: verified in {:?}",
            atomic.len(),
            started.elapsed()
        );
        if let Err(e) = load_for(
            sys_bpf::PROG_TRACING,
            at_entry,
            None,
            None,
            &atomic,
            "ch_t_settle",
        ) {
            skip!(
                Need::System,
                "this kernel takes no tracing program at cgroup_migrate's entry: {e}"
            );
        }
    }

    /// `bpftool prog show id ID`'s `recursion_misses` (printed only where nonzero: 0 then), or
    /// `None` where bpftool cannot show the program.
    pub(super) fn bpftool_recursion_misses(id: u32) -> Option<u64> {
        let out = std::process::Command::new("bpftool")
            .args(["prog", "show", "id", &id.to_string()])
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut words = text.split_whitespace();
        match words.find(|w| *w == "recursion_misses") {
            Some(_) => words.next()?.parse().ok(),
            None => Some(0),
        }
    }

    /// A program the kernel skips because it is already running on its CPU: at the entry of
    /// `htab_map_delete_elem`, deleting from a hash map itself (the kernel's own selftest,
    /// tools/testing/selftests/bpf/progs/recursion.c), so each delete from user space runs
    /// it once and skips its nested run once. The program's id and `recursion_misses` as
    /// [`sys_bpf::prog_info`] reads them are bpftool's, and grow by one a delete.
    ///
    /// Oracle: Debian's bpftool (7.1), `bpftool prog show id N`, which reads the same
    /// `struct bpf_prog_info` through libbpf's own layout of it.
    #[test]
    fn a_programs_recursion_misses_are_what_bpftool_reports() {
        use super::bperf_programs::MAP_DELETE_ELEM;
        use super::bpf_mode::{create, load_for};
        use std::os::fd::AsFd;
        let _alone = super::bpf_alone();
        if std::process::Command::new("bpftool")
            .arg("version")
            .output()
            .is_err()
        {
            skip!(Need::Tools, "bpftool is not installed (Debian's bpftool)");
        }
        let Ok(vmlinux) = super::btf::read_vmlinux(&counterhal_system::System::host()) else {
            skip!(
                Need::System,
                "no kernel BTF at {}",
                super::btf::vmlinux(&counterhal_system::System::host()).display()
            );
        };
        let Ok(btf_id) = super::btf::function_id(&vmlinux, "htab_map_delete_elem") else {
            skip!(Need::System, "no htab_map_delete_elem in this kernel's BTF");
        };
        let map = match create(sys_bpf::MAP_HASH, 4, 8, 1, "ch_t_recurse") {
            Ok(map) => map,
            Err(e) => skip!(Need::Privilege, "cannot make a BPF map here: {e}"),
        };
        let mut asm = Asm::default();
        asm.mov_imm(R1, 0);
        asm.store32(R10, -4, R1);
        asm.load_map(R1, map.as_fd());
        asm.mov(R2, R10);
        asm.add_imm(R2, -4);
        asm.call(MAP_DELETE_ELEM);
        asm.mov_imm(R0, 0);
        asm.exit();
        let at_entry = sys_bpf::AttachTo {
            attach_type: sys_bpf::TRACE_FENTRY,
            btf_id,
        };
        let insns = asm.finish();
        let program = match load_for(
            sys_bpf::PROG_TRACING,
            at_entry,
            None,
            None,
            &insns,
            "ch_t_recurse",
        ) {
            Ok(program) => program,
            Err(e) => skip!(
                Need::System,
                "this kernel loads no program at htab_map_delete_elem's entry (BPF \
                 trampolines: Linux 5.5 on x86-64, 6.0 on arm64, with BTF): {e}"
            ),
        };
        let Ok(_link) = sys_bpf::attach_raw(program.as_fd(), None) else {
            skip!(
                Need::System,
                "no BPF trampoline at htab_map_delete_elem here"
            );
        };
        let before = sys_bpf::prog_info(program.as_fd()).unwrap();
        let Some(misses_before) = before.recursion_misses else {
            skip!(
                Need::System,
                "a kernel before 5.12 counts no recursion_misses"
            );
        };
        const DELETES: u64 = 3;
        for _ in 0..DELETES {
            // ENOENT: the map is empty; the program ran all the same.
            sys_bpf::map_delete(map.as_fd(), &0u32.to_ne_bytes()).ok();
        }
        let after = sys_bpf::prog_info(program.as_fd()).unwrap();
        let misses = after.recursion_misses.unwrap();
        let shown = bpftool_recursion_misses(after.id)
            .unwrap_or_else(|| panic!("bpftool cannot show program {}", after.id));
        eprintln!(
            "program {}: recursion_misses {misses_before} then {misses}, bpftool {shown}",
            after.id
        );
        assert_eq!(after.id, before.id);
        assert!(
            misses >= misses_before + DELETES,
            "{misses_before} then {misses}"
        );
        // Another process's delete from a hash map between the two reads adds one more.
        let again = sys_bpf::prog_info(program.as_fd())
            .unwrap()
            .recursion_misses
            .unwrap();
        assert!(
            misses <= shown && shown <= again,
            "ours {misses} then {again}, bpftool {shown} between"
        );
    }
}
