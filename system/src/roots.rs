//! A [`System`]: the procfs and sysfs roots (and, where a test names them, the PMU
//! directory and tracefs) its facts are read under, and the reading rule's trees over them.
//! What it answers is each topic's file's (`impl System` blocks: CPUs, topology, PMUs,
//! mounts, processes, tracefs, ...).

use std::path::{Path, PathBuf};

use crate::rule::{self, Tree};

/// The PMU directory under a sysfs root.
pub const PMU_DEVICES: &str = "bus/event_source/devices";

/// A Linux system's facts, read under one procfs and one sysfs root (`/proc` and `/sys`, or
/// a tree of another machine's or a test's) by one rule: inside the root, regular files
/// only, bounded, never blocking (see [`Refused`](crate::rule::Refused)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct System {
    pub(crate) procfs: PathBuf,
    pub(crate) sysfs: PathBuf,
    /// The PMU directory, where it is not the sysfs root's (`--sysfs DIR`: another tree's
    /// PMUs, this machine's CPUs).
    pub(crate) pmu_devices: Option<PathBuf>,
    /// The tracefs root, where it is not one of the sysfs root's (`kernel/tracing`,
    /// `kernel/debug/tracing`).
    pub(crate) tracefs: Option<PathBuf>,
}

impl Default for System {
    fn default() -> Self {
        System::host()
    }
}

impl System {
    /// This machine's: procfs at `/proc`, sysfs at `/sys`.
    pub fn host() -> System {
        System {
            procfs: PathBuf::from("/proc"),
            sysfs: PathBuf::from("/sys"),
            pmu_devices: None,
            tracefs: None,
        }
    }

    /// This system with its sysfs at `sysfs` (another machine's tree, copied or mounted
    /// elsewhere, or a test's).
    pub fn with_sysfs(mut self, sysfs: impl Into<PathBuf>) -> System {
        self.sysfs = sysfs.into();
        self
    }

    /// This system with its PMUs read from the PMU directory `devices` (another machine's,
    /// a test's), the rest from its sysfs root.
    pub fn with_pmu_devices(mut self, devices: impl Into<PathBuf>) -> System {
        self.pmu_devices = Some(devices.into());
        self
    }

    /// This system with its procfs at `procfs` (a test's tree, a container's host's).
    pub fn with_procfs(mut self, procfs: impl Into<PathBuf>) -> System {
        self.procfs = procfs.into();
        self
    }

    /// This system with tracefs at `tracefs` (a test's tree), not under its sysfs root.
    pub fn with_tracefs(mut self, tracefs: impl Into<PathBuf>) -> System {
        self.tracefs = Some(tracefs.into());
        self
    }

    /// The procfs root, to name it (its files are read through the facts).
    pub fn procfs(&self) -> &Path {
        &self.procfs
    }

    /// The sysfs root, to name it (its files are read through the facts).
    pub fn sysfs(&self) -> &Path {
        &self.sysfs
    }

    /// This system with its PMUs read from the PMU directory of the sysfs root `root`
    /// (`--sysfs DIR`: another machine's tree, whose PMUs encode here), the rest (its CPUs,
    /// its tracefs) from its own roots.
    pub fn with_pmus_under(self, root: impl AsRef<Path>) -> System {
        self.with_pmu_devices(root.as_ref().join(PMU_DEVICES))
    }

    /// The sysfs tree.
    pub(crate) fn sys_tree(&self) -> Tree {
        Tree::new(&self.sysfs, "sysfs")
    }

    /// The procfs tree.
    pub(crate) fn proc_tree(&self) -> Tree {
        Tree::new(&self.procfs, "procfs")
    }

    /// The text of the sysfs attribute `relative` (`devices/system/cpu/online`), trimmed;
    /// `None` where it cannot be read or is refused.
    pub(crate) fn sys_text(&self, relative: impl AsRef<Path>) -> Option<String> {
        self.sys_tree().text(&self.sysfs.join(relative), rule::PAGE)
    }

    /// The text of the procfs file `relative` (`self/mountinfo`, `sys/kernel/osrelease`),
    /// whole; `None` where it cannot be read or is refused.
    pub(crate) fn proc_text(&self, relative: impl AsRef<Path>) -> Option<String> {
        self.proc_tree()
            .read(&self.procfs.join(relative), rule::TABLE)
            .ok()
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: node_exporter's `--path.procfs` and `--path.sysfs` (every path under its root)
    /// and the kernel's sysfs ABI (Documentation/ABI/testing/sysfs-bus-event_source-devices).
    #[test]
    fn roots_are_named_and_the_pmus_lie_under_them() {
        let host = System::host();
        assert_eq!(host, System::default());
        assert_eq!(
            host.pmus().path(),
            Path::new("/sys/bus/event_source/devices")
        );
        assert_eq!(
            (host.procfs(), host.sysfs()),
            (Path::new("/proc"), Path::new("/sys"))
        );
        let tree = System::host()
            .with_sysfs("/tmp/t/sys")
            .with_procfs("/tmp/t/proc");
        assert_eq!(
            tree.pmus().path(),
            Path::new("/tmp/t/sys/bus/event_source/devices")
        );
        assert_eq!(tree.procfs(), Path::new("/tmp/t/proc"));
        let pmus = System::host().with_pmu_devices("/tmp/p");
        assert_eq!(pmus.pmus().path(), Path::new("/tmp/p"));
        assert_eq!(pmus.sysfs(), Path::new("/sys"));
        // `--sysfs DIR`'s PMUs, this machine's CPUs: the PMU directory under DIR.
        let under = System::host().with_pmus_under("/tmp/t/sys");
        assert_eq!(
            under.pmus().path(),
            Path::new("/tmp/t/sys/bus/event_source/devices")
        );
        assert_eq!(under.sysfs(), Path::new("/sys"));
    }
}
