//! Where the backend reads the system's PMUs and tracepoints: `/sys`, or another sysfs root.

use std::path::{Path, PathBuf};

use crate::{sysfs, tracefs};

/// Where the backend looks for PMUs and tracefs (changed only by tests with fixture trees).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemPaths {
    /// The PMU directory (`/sys/bus/event_source/devices`).
    pub pmu_devices: PathBuf,
    /// tracefs mount points, tried in order.
    pub tracefs: Vec<PathBuf>,
}

impl Default for SystemPaths {
    fn default() -> Self {
        SystemPaths {
            pmu_devices: PathBuf::from(sysfs::DEFAULT_DEVICES),
            tracefs: tracefs::DEFAULT_ROOTS.iter().map(PathBuf::from).collect(),
        }
    }
}

impl SystemPaths {
    /// The paths under a sysfs root other than `/sys` (another machine's tree, copied or
    /// mounted elsewhere): its `bus/event_source/devices`, and tracefs at its `kernel/tracing`
    /// (or `kernel/debug/tracing`).
    pub fn under(root: &Path) -> SystemPaths {
        SystemPaths {
            pmu_devices: root.join("bus/event_source/devices"),
            tracefs: ["kernel/tracing", "kernel/debug/tracing"]
                .iter()
                .map(|dir| root.join(dir))
                .collect(),
        }
    }
}
