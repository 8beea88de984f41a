//! Counting per cgroup, a capability a backend may have ([`BackendExt::cgroups`]): the
//! [`CgroupCounter`] it opens, the [`CgroupMode`] it counts in and what each followed cgroup
//! counted ([`CgroupCounts`]).
//!
//! Two modes count the same thing, each event while the tasks of a cgroup (or of any cgroup
//! below it) run, on each CPU, with its time enabled and running: a BPF program summing per
//! cgroup at every context switch (perf's `--bpf-counters --for-each-cgroup`), or one perf
//! event per event, CPU and followed cgroup (`perf stat -G`). Each backend's README says how
//! it counts them.
//!
//! [`BackendExt::cgroups`]: crate::BackendExt::cgroups

use std::path::{Path, PathBuf};

use crate::encoding::EventRequest;
use crate::error::{Error, Result};
use crate::reading::Reading;

/// Which mode to count in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CgroupModeChoice {
    /// BPF where it works here, else perf events (saying why).
    #[default]
    Auto,
    /// BPF, or an error saying why it cannot.
    Bpf,
    /// Perf events per cgroup.
    PerfEvents,
}

/// The mode a [`CgroupCounter`] counts in.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CgroupMode {
    /// Events x CPUs perf events, sums per cgroup kept by a BPF program.
    Bpf,
    /// One perf event per event, CPU and cgroup.
    PerfEvents {
        /// Why BPF was not taken (`None`: perf events were asked for).
        why_not_bpf: Option<String>,
    },
}

impl CgroupMode {
    /// The mode's short name: `bpf` or `perf-events` (a metric's label, a line at start).
    pub fn name(&self) -> &'static str {
        match self {
            CgroupMode::Bpf => "bpf",
            CgroupMode::PerfEvents { .. } => "perf-events",
        }
    }
}

impl std::fmt::Display for CgroupMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CgroupMode::Bpf => f.write_str(
                "bpf (each event once per CPU, summed per cgroup by a BPF program at every \
                 context switch)",
            ),
            CgroupMode::PerfEvents { why_not_bpf: None } => {
                f.write_str("perf-events (one perf event per event, CPU and cgroup)")
            }
            CgroupMode::PerfEvents {
                why_not_bpf: Some(why),
            } => write!(
                f,
                "perf-events (one perf event per event, CPU and cgroup; not bpf: {why})"
            ),
        }
    }
}

/// How a [`CgroupCounter`] is opened.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CgroupCounterOptions {
    /// The mode asked for.
    pub mode: CgroupModeChoice,
    /// The cgroup v2 mount the followed cgroups lie under (the BPF mode counts cgroup v2
    /// only); `None`: no BPF mode.
    pub unified_root: Option<PathBuf>,
    /// The most cgroups the BPF mode follows at once (1024 unless set): each takes 24 bytes
    /// per event per possible CPU in the program's map, all allocated when the counter
    /// opens. Following one more is refused
    /// ([`ErrorKind::LimitReached`](crate::error::ErrorKind::LimitReached)).
    pub capacity: u32,
    /// The events counted as one group each (indices into the events, the leader first):
    /// scheduled onto the PMU together, so that they share their times enabled and running,
    /// as perf's `{a,b}` (on each CPU, and in the BPF mode the CPU's counters the program
    /// reads). Every event in no group counts alone, time-shared with its own times (the
    /// default: none).
    pub groups: Vec<Vec<usize>>,
}

impl Default for CgroupCounterOptions {
    fn default() -> Self {
        CgroupCounterOptions {
            mode: CgroupModeChoice::Auto,
            unified_root: None,
            capacity: 1024,
            groups: Vec::new(),
        }
    }
}

impl CgroupCounterOptions {
    /// Options for `mode`, the cgroup v2 mount at `unified_root`.
    pub fn new(mode: CgroupModeChoice, unified_root: Option<PathBuf>) -> Self {
        CgroupCounterOptions {
            mode,
            unified_root,
            ..Default::default()
        }
    }
}

/// The counts of one followed cgroup at the last [`CgroupCounter::read`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CgroupCounts {
    /// The cgroup's directory.
    pub path: PathBuf,
    /// Each event's counts summed over the CPUs (each CPU's value, time enabled and time
    /// running added: scale the sum as one reading).
    pub total: Vec<Reading>,
    /// Each CPU's (in the order of [`CgroupCounter::cpus`]) counts of each event.
    pub per_cpu: Vec<Vec<Reading>>,
    /// The events not counted on some of the cgroup's CPUs, which did not open for it there
    /// (in the perf-event mode: no counter left for them, as a hardware breakpoint finds no
    /// free debug register); each reads as never run there (value, time enabled and time
    /// running 0). Set when the cgroup is followed; empty in the BPF mode.
    pub left_out: Vec<EventLeftOut>,
}

/// An event a followed cgroup is not counted for on some of its CPUs, and why
/// ([`CgroupCounts::left_out`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventLeftOut {
    /// The event: its index in [`CgroupCounter::event_names`].
    pub event: usize,
    /// The CPUs it is not counted on: indices into [`CgroupCounter::cpus`].
    pub cpus: Vec<usize>,
    /// Why it did not open, on the first of them.
    pub error: Error,
}

impl EventLeftOut {
    /// `event`, not counted on the CPUs `cpus` for `error`.
    pub fn new(event: usize, cpus: Vec<usize>, error: Error) -> Self {
        EventLeftOut { event, cpus, error }
    }
}

impl CgroupCounts {
    /// Zero counts of `events` events on `cpus` CPUs for the cgroup at `path`.
    pub fn zero(path: PathBuf, events: usize, cpus: usize) -> Self {
        let zeroes = vec![Reading::default(); events];
        CgroupCounts {
            path,
            total: zeroes.clone(),
            per_cpu: vec![zeroes; cpus],
            left_out: Vec::new(),
        }
    }
}

/// Events counted per cgroup, on a list of CPUs, in the [`CgroupMode`] chosen at open:
/// [`follow`](CgroupCounter::follow) the cgroups to read, [`read`](CgroupCounter::read)
/// them all, then take each one's [`counts`](CgroupCounter::counts).
pub trait CgroupCounter {
    /// The mode counting, and where it is perf events, why not BPF.
    fn mode(&self) -> &CgroupMode;

    /// The CPUs counted, the order of [`CgroupCounts::per_cpu`].
    fn cpus(&self) -> &[u32];

    /// The events' names, the order of every reading.
    fn event_names(&self) -> Vec<&str>;

    /// Starts reading `cgroup` (its directory); its counts start now. Where `cgroup` is
    /// followed and its directory now holds another cgroup (removed and made again under the
    /// same path), the new one is followed in its place, its counts from zero.
    ///
    /// # Errors
    /// [`ErrorKind::NotFound`](crate::error::ErrorKind::NotFound) for a directory that does not
    /// exist; [`ErrorKind::InvalidInput`](crate::error::ErrorKind::InvalidInput) in the BPF mode
    /// for one outside the cgroup v2 mount or deeper than it counts
    /// ([`CgroupCounter::deepest_level`]);
    /// [`ErrorKind::LimitReached`](crate::error::ErrorKind::LimitReached) in the BPF mode where
    /// [`CgroupCounterOptions::capacity`] cgroups are followed; in the perf-event mode, as
    /// [`Backend::open`](crate::Backend::open) on a
    /// [`BackendTarget::Cgroup`](crate::target::BackendTarget::Cgroup), where none of the events
    /// opens for the cgroup or the cgroup itself is refused. An event that alone does not open for
    /// it ([`ErrorKind::NoCounterAvailable`](crate::error::ErrorKind::NoCounterAvailable), or
    /// [`ErrorKind::InvalidEvent`](crate::error::ErrorKind::InvalidEvent): the kernel refusing it
    /// there) is no error: it is left out on the CPUs where it does not
    /// ([`CgroupCounts::left_out`]) and the others count. A group that does not open so counts its
    /// events alone for that cgroup, as perf's weak groups (`{a,b}:W`) do.
    fn follow(&mut self, cgroup: &Path) -> Result<()>;

    /// Stops reading `cgroup` and lets its counters go (the BPF mode forgets its sums).
    fn unfollow(&mut self, cgroup: &Path);

    /// The cgroups followed, in the order of [`all_counts`](CgroupCounter::all_counts).
    fn followed(&self) -> Box<dyn Iterator<Item = &Path> + '_>;

    /// Reads every followed cgroup. A cgroup whose directory now holds another cgroup is
    /// followed again ([`CgroupCounter::follow`]): it reads zeroes.
    ///
    /// # Errors
    /// The first counter that cannot be read, or cgroup that cannot be followed again,
    /// naming its cgroup; the followed cgroups read before it hold their new counts.
    fn read(&mut self) -> Result<()>;

    /// `cgroup`'s counts at the last [`read`](CgroupCounter::read); `None` for a cgroup not
    /// followed.
    fn counts(&self, cgroup: &Path) -> Option<&CgroupCounts> {
        self.all_counts().iter().find(|c| c.path == cgroup)
    }

    /// Every followed cgroup's counts at the last [`read`](CgroupCounter::read).
    fn all_counts(&self) -> &[CgroupCounts];

    /// The deepest level below the cgroup v2 mount whose cgroups the BPF mode follows (the
    /// tasks of deeper ones count in their followed ancestors); `None` in the perf-event
    /// mode, which follows a cgroup at any depth.
    fn deepest_level(&self) -> Option<usize>;

    /// Where the BPF mode counts a task that moves between cgroups while it runs (a command
    /// writing its own pid into `cgroup.procs`) wrong, why; `None` where it settles such a
    /// move and in the perf-event mode, which counts it right.
    fn moves_unsettled(&self) -> Option<&str>;

    /// In the BPF mode, the context switches its program missed since the counter opened (the
    /// kernel skipped it there: its `recursion_misses`): the counts of the time each spans
    /// went to the next task's cgroups. `None` in the perf-event mode, which misses none, and
    /// where the kernel does not count skips (before Linux 5.12).
    fn switches_missed(&self) -> Option<u64>;

    /// In the BPF mode, has the counter follow each new child of `parent` from its first
    /// context switch, before anyone calls [`follow`](CgroupCounter::follow) for it (a
    /// runtime places a task in a cgroup it has just made, and the task runs at once), and
    /// where `levels` is more than 1, each such child adopt its own new children in turn,
    /// with one level fewer (`u8::MAX`: any number of levels; slurmstepd places a task three
    /// levels below the job's cgroup it has just made): `Ok(true)`.
    /// `Ok(false)` where it does not: the perf-event mode (a cgroup is counted from its
    /// follow), a parent that users other than root may make children in, or children
    /// deeper than the mode counts. A child adopted that is not to be followed is let go by
    /// [`refuse`](CgroupCounter::refuse); after each look at the tree,
    /// [`forget_unseen`](CgroupCounter::forget_unseen) lets go those no look saw.
    ///
    /// # Errors
    /// [`ErrorKind::NotFound`](crate::error::ErrorKind::NotFound) where `parent` cannot be read;
    /// [`ErrorKind::LimitReached`](crate::error::ErrorKind::LimitReached) where as many parents
    /// adopt as the counter's capacity.
    fn adopt_children(&mut self, _parent: &Path, _levels: u8) -> Result<bool> {
        Ok(false)
    }

    /// Stops `parent` adopting its new children ([`adopt_children`](
    /// CgroupCounter::adopt_children)).
    fn leave_children(&mut self, _parent: &Path) {}

    /// Called after each look at the tree that followed, refused and adopted each cgroup it
    /// found: lets go what was adopted that neither this call nor the one before found
    /// followed or adopting (a cgroup made and removed between two looks).
    fn forget_unseen(&mut self) {}

    /// Lets go a child an adopting parent's cgroup was followed as, which is not to be
    /// followed, and keeps it from being adopted again.
    fn refuse(&mut self, _cgroup: &Path) {}

    /// In the BPF mode, each program the kernel runs for it and the times the kernel skipped
    /// that program because another BPF program was running on its CPU (`recursion_misses`
    /// of `struct bpf_prog_info`, Linux 5.12): each a context switch, move or removal the
    /// counts miss. Empty in the perf-event mode and where the kernel does not count them.
    fn programs_skipped(&self) -> Vec<ProgramSkips> {
        Vec::new()
    }
}

/// A BPF program a counter loaded, and the times the kernel skipped it
/// ([`CgroupCounter::programs_skipped`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramSkips {
    /// The program's name, as the kernel shows it (`bpftool prog show`).
    pub name: &'static str,
    /// The program's id (`bpftool prog show id N`).
    pub id: u32,
    /// The times the kernel skipped it since it was loaded (its `recursion_misses`).
    pub skipped: u64,
}

/// A cgroup counter of any backend, boxed (what [`CgroupCapability::open_cgroup_counter`]
/// opens).
pub type BoxedCgroupCounter = Box<dyn CgroupCounter + Send>;

/// Counting per cgroup: what a backend that can hands out from
/// [`BackendExt::cgroups`](crate::BackendExt::cgroups).
pub trait CgroupCapability {
    /// Counts `events` on `cpus` per cgroup, in the mode `options` ask for.
    ///
    /// # Errors
    /// As [`Backend::open`](crate::Backend::open) for the events; under
    /// [`CgroupModeChoice::Bpf`], why the BPF mode cannot count here:
    /// [`ErrorKind::PermissionDenied`](crate::error::ErrorKind::PermissionDenied) without the
    /// privileges, [`ErrorKind::Unsupported`](crate::error::ErrorKind::Unsupported) for a kernel
    /// without it.
    fn open_cgroup_counter(
        &self,
        events: &[EventRequest],
        cpus: &[u32],
        options: CgroupCounterOptions,
    ) -> Result<BoxedCgroupCounter>;
}
