//! Counting through leaders shared with other sessions, a capability a backend may have
//! ([`BackendExt::shared`](crate::BackendExt::shared)): perf's bperf (`perf stat
//! --bpf-counters`), where one leader per event counts on every CPU and each session's
//! follower adds up the counts of what it follows ([`SharedScope`]). Each backend's README
//! says how it shares them.

use std::path::Path;

use crate::cgroups::ProgramSkips;
use crate::encoding::EventRequest;
use crate::error::Result;
use crate::reading::Reading;

/// Whose counts a shared counter adds up: perf's `enum bperf_filter_type`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SharedScope {
    /// Every CPU (`BPERF_FILTER_GLOBAL`, `-a`): one sum per CPU.
    AllCpus,
    /// These CPUs (`BPERF_FILTER_CPU`, `-C`): one sum each.
    Cpus(Vec<u32>),
    /// These threads (`BPERF_FILTER_PID`, `-t`): one sum each.
    Threads(Vec<u32>),
    /// These processes, every thread (`BPERF_FILTER_TGID`, `-p`, a command), one sum each;
    /// with `inherit`, the processes they start are added to their sums.
    Processes {
        /// The process ids.
        pids: Vec<u32>,
        /// Whether the processes they start are counted with them.
        inherit: bool,
    },
}

/// One event counted through a leader shared with other sessions.
pub trait SharedCounter: std::fmt::Debug {
    /// Starts adding up (a counter opens disabled).
    ///
    /// # Errors
    /// Where the backend cannot reach its follower.
    fn enable(&self) -> Result<()>;

    /// Stops adding up; what was added stays.
    ///
    /// # Errors
    /// As [`enable`](SharedCounter::enable).
    fn disable(&self) -> Result<()>;

    /// The sums: one per CPU of [`SharedScope::AllCpus`] and [`SharedScope::Cpus`], one per
    /// thread or process otherwise, in the scope's order.
    ///
    /// # Errors
    /// Where the backend cannot read them.
    fn read(&self) -> Result<Vec<Reading>>;

    /// The runs of the counter's programs the kernel skipped since each was loaded.
    fn programs_skipped(&self) -> Vec<ProgramSkips>;
}

/// A shared counter of any backend, boxed (what
/// [`SharedCapability::open_shared_counter`] opens).
pub type BoxedSharedCounter = Box<dyn SharedCounter + Send>;

/// Counting through shared leaders: what a backend that can hands out from
/// [`BackendExt::shared`](crate::BackendExt::shared).
pub trait SharedCapability {
    /// Counts `request` for `scope` through the leader of its event in the map of leaders at
    /// `leaders` (`None`: the backend's default, perf's), starting one on `cpus` where none
    /// lives.
    ///
    /// # Errors
    /// [`ErrorKind::PermissionDenied`](crate::error::ErrorKind::PermissionDenied) without the
    /// privileges; [`ErrorKind::Unsupported`](crate::error::ErrorKind::Unsupported) where the map
    /// of leaders cannot be kept there or the kernel refuses the programs; as
    /// [`Backend::open`](crate::Backend::open) for the event (its message beginning
    /// `opening `).
    fn open_shared_counter(
        &self,
        request: &EventRequest,
        scope: SharedScope,
        cpus: &[u32],
        leaders: Option<&Path>,
    ) -> Result<BoxedSharedCounter>;
}
