//! The events `stat` counts, planned before anything runs: each event with what it needs to
//! be counted (what it is, its cgroup, its PMU box's CPUs), and the groups among them. The
//! measurement takes this one value.

use std::path::Path;
use std::sync::Arc;

use counterhal::Error;
use counterhal_hal::{CpuList, ResolvedEvent};

use super::tool::Tool;

/// An event as planned: resolved, or known to be unusable here (reported as not supported).
#[derive(Clone)]
pub enum Planned {
    /// Resolved; still may fail to open.
    Ready(ResolvedEvent),
    /// The name is valid but this CPU or backend cannot count it.
    Unsupported {
        /// The name as given.
        name: String,
        /// Why not.
        error: Error,
    },
    /// One of perf's tool events (`duration_time`...), filled in once the command has ended.
    Tool(Tool),
}

impl Planned {
    /// The resolved event, when it is ready to open.
    pub fn ready(&self) -> Option<&ResolvedEvent> {
        match self {
            Planned::Ready(event) => Some(event),
            Planned::Unsupported { .. } | Planned::Tool(_) => None,
        }
    }
}

/// One event as the command line asks for it, before it is resolved: each of
/// `--for-each-cgroup`'s copies its own, and each box of a PMU event (its original's copy).
#[derive(Clone, Debug)]
pub struct RequestedEvent {
    /// Its name (a box's, as perf names a box's line).
    pub name: String,
    /// Its tracepoint filter (`--filter`).
    pub filter: Option<String>,
    /// Whether it leads a weak group (`{a,b}:W`).
    pub weak: bool,
    /// The name of the cgroup it counts in (`-G`, `--for-each-cgroup`).
    pub cgroup: Option<String>,
}

/// One event as planned.
pub struct PlannedEvent {
    /// What it counts: resolved, unsupported here, or one of perf's tool events.
    pub what: Planned,
    /// The cgroup it counts in (`-G`, `--for-each-cgroup`): its name as given and its
    /// directory.
    pub cgroup: Option<(String, Arc<Path>)>,
    /// The CPUs it counts on when counting every CPU (its PMU box's cpumask), if its own.
    pub cpus: Option<CpuList>,
}

/// A group of events (`{a,b}`, `-g`, perf-metrics events under slots): counted together or
/// not at all.
pub struct PlannedGroup {
    /// Its members, as indices into the plan's events.
    pub members: Vec<usize>,
    /// Weak (`{a,b}:W`): where it does not open as a group, each member is counted alone.
    pub weak: bool,
}

/// The events planned, in the order they are printed, and their groups.
pub struct EventPlan {
    /// The events.
    pub events: Vec<PlannedEvent>,
    /// The groups among them.
    pub groups: Vec<PlannedGroup>,
}

impl PlannedEvent {
    /// Its cgroup's name as given, empty without one (perf's cgroup column).
    pub fn cgroup_name(&self) -> &str {
        self.cgroup.as_ref().map_or("", |(name, _)| name)
    }
}

impl EventPlan {
    /// What each event counts, in order.
    pub fn what(&self) -> impl Iterator<Item = &Planned> {
        self.events.iter().map(|event| &event.what)
    }

    /// Event `index`'s cgroup directory, if it has one.
    pub fn cgroup_dir(&self, index: usize) -> Option<Arc<Path>> {
        let event = self.events.get(index)?;
        event.cgroup.as_ref().map(|(_, dir)| Arc::clone(dir))
    }

    /// Event `index`'s own CPUs, if it has them.
    pub fn cpus(&self, index: usize) -> Option<CpuList> {
        self.events.get(index)?.cpus.clone()
    }
}
