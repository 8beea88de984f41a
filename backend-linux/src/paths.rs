//! Where the backend reads the system's PMUs and tracepoints: `/sys`, or another sysfs root.

use std::path::{Path, PathBuf};

use counterhal_system::System;

/// Where the backend looks for PMUs and tracefs (changed only by tests with fixture trees),
/// and the system its facts are read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemPaths {
    /// The PMU directory (`/sys/bus/event_source/devices`).
    pub pmu_devices: PathBuf,
    /// tracefs mount points, tried in order.
    pub tracefs: Vec<PathBuf>,
    /// The system the facts (the paranoid level, the CPUs online) are read from.
    pub system: System,
}

impl Default for SystemPaths {
    fn default() -> Self {
        SystemPaths::of(&System::host())
    }
}

impl SystemPaths {
    /// The paths of `system`: its sysfs's `bus/event_source/devices`, and tracefs at its
    /// `kernel/tracing` (or `kernel/debug/tracing`).
    pub fn of(system: &System) -> SystemPaths {
        SystemPaths {
            pmu_devices: system.pmu_devices(),
            tracefs: system.tracefs_roots(),
            system: system.clone(),
        }
    }

    /// The paths under a sysfs root other than `/sys` (another machine's tree, copied or
    /// mounted elsewhere); the facts stay this system's.
    pub fn under(root: &Path) -> SystemPaths {
        SystemPaths::of(&System::host().with_sysfs(root))
    }
}
