#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

mod permissions;
mod powercap;
mod process;
mod stat;
mod topology;

pub use permissions::{PerfAccess, PerfPermissions};
pub use process::ProcessStatus;
pub use stat::{StatFields, ThreadStat};
pub use topology::{CpuCache, CpuTopology};

/// The PMU directory under a sysfs root.
pub const PMU_DEVICES: &str = "bus/event_source/devices";

/// Where a Linux system's facts are read: a procfs root and a sysfs root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct System {
    procfs: PathBuf,
    sysfs: PathBuf,
    /// The PMU directory, where it is not the sysfs root's (`--sysfs DIR`: another tree's
    /// PMUs, this machine's CPUs).
    pmu_devices: Option<PathBuf>,
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

    /// The procfs root.
    pub fn procfs(&self) -> &Path {
        &self.procfs
    }

    /// The sysfs root.
    pub fn sysfs(&self) -> &Path {
        &self.sysfs
    }

    /// The file `relative` under the procfs root (`sys/kernel/osrelease`, `self/status`).
    pub fn proc_file(&self, relative: impl AsRef<Path>) -> PathBuf {
        self.procfs.join(relative)
    }

    /// The file `relative` under the sysfs root (`devices/system/cpu/online`).
    pub fn sys_file(&self, relative: impl AsRef<Path>) -> PathBuf {
        self.sysfs.join(relative)
    }

    /// The directory of process or thread `pid` under procfs (`self`, `thread-self`, `4242`).
    pub fn process(&self, pid: impl std::fmt::Display) -> PathBuf {
        self.procfs.join(pid.to_string())
    }

    /// The PMU directory: `bus/event_source/devices` under the sysfs root, one directory per
    /// PMU the kernel registered (Documentation/ABI/testing/sysfs-bus-event_source-devices),
    /// or the one named by [`System::with_pmu_devices`].
    pub fn pmu_devices(&self) -> PathBuf {
        match &self.pmu_devices {
            Some(devices) => devices.clone(),
            None => self.sysfs.join(PMU_DEVICES),
        }
    }

    /// The directory of the CPUs (`devices/system/cpu` under the sysfs root).
    pub fn cpus(&self) -> PathBuf {
        self.sysfs.join("devices/system/cpu")
    }

    /// The directory of CPU `cpu` (`devices/system/cpu/cpuN` under the sysfs root).
    pub fn cpu(&self, cpu: u32) -> PathBuf {
        self.cpus().join(format!("cpu{cpu}"))
    }

    /// The text of `path`, trimmed; `None` where it cannot be read.
    pub fn read_trimmed(path: &Path) -> Option<String> {
        std::fs::read_to_string(path)
            .ok()
            .map(|text| text.trim().to_string())
    }

    /// `kernel.perf_event_paranoid` (`sys/kernel/perf_event_paranoid` under procfs), where
    /// it can be read.
    pub fn perf_event_paranoid(&self) -> Option<i32> {
        // This machine's path written whole: a backend asks at every open that fails (`info`
        // 88 times), and joining it costs as much as the read.
        const HOST: &str = "/proc/sys/kernel/perf_event_paranoid";
        let text = match self.procfs == Path::new("/proc") {
            true => std::fs::read_to_string(HOST),
            false => std::fs::read_to_string(self.proc_file("sys/kernel/perf_event_paranoid")),
        };
        text.ok()?.trim().parse().ok()
    }

    /// The calling process's effective capabilities (`CapEff` of `self/status` under
    /// procfs, proc(5)), where they can be read.
    pub fn effective_capabilities(&self) -> Option<u64> {
        let status = std::fs::read_to_string(self.proc_file("self/status")).ok()?;
        let line = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
        u64::from_str_radix(line.trim(), 16).ok()
    }

    /// What `perf_event_open` lets this process do here now: the paranoid level and its
    /// capabilities, read at this call.
    pub fn perf_permissions(&self) -> PerfPermissions {
        PerfPermissions::new(
            self.perf_event_paranoid(),
            self.effective_capabilities().unwrap_or(0),
        )
    }

    /// The CPUs online by procfs: the `cpuN` lines of `stat` under procfs (proc_stat(5): one a
    /// CPU online), in their order; empty where it cannot be read.
    pub fn stat_cpus(&self) -> Vec<u32> {
        let Ok(text) = std::fs::read_to_string(self.proc_file("stat")) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|line| line.strip_prefix("cpu")?.split(' ').next()?.parse().ok())
            .collect()
    }

    /// The calling thread's stat line (`thread-self/stat` under procfs), parsed; `None`
    /// where the system has none or it does not parse.
    pub fn thread_self_stat(&self) -> Option<ThreadStat> {
        ThreadStat::parse(&std::fs::read_to_string(self.proc_file("thread-self/stat")).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: node_exporter's `--path.procfs` and `--path.sysfs` (every path under its root)
    /// and the kernel's sysfs ABI (Documentation/ABI/testing/sysfs-bus-event_source-devices).
    #[test]
    fn paths_lie_under_their_roots() {
        let host = System::host();
        assert_eq!(host, System::default());
        assert_eq!(
            host.pmu_devices(),
            Path::new("/sys/bus/event_source/devices")
        );
        assert_eq!(host.cpu(3), Path::new("/sys/devices/system/cpu/cpu3"));
        let tree = System::host()
            .with_sysfs("/tmp/t/sys")
            .with_procfs("/tmp/t/proc");
        assert_eq!(
            tree.pmu_devices(),
            Path::new("/tmp/t/sys/bus/event_source/devices")
        );
        let pmus = System::host().with_pmu_devices("/tmp/p");
        assert_eq!(pmus.pmu_devices(), Path::new("/tmp/p"));
        assert_eq!(pmus.cpu(0), Path::new("/sys/devices/system/cpu/cpu0"));
        assert_eq!(
            tree.proc_file("sys/kernel/perf_event_paranoid"),
            Path::new("/tmp/t/proc/sys/kernel/perf_event_paranoid")
        );
    }

    /// Oracle: a procfs tree of the test's own, laid out as proc(5) has it: the facts come
    /// from under the root named, not from this machine's /proc.
    #[test]
    fn facts_come_from_the_root_named() {
        let root = std::env::temp_dir().join(format!("counterhal-system-{}", std::process::id()));
        std::fs::create_dir_all(root.join("sys/kernel")).unwrap();
        std::fs::create_dir_all(root.join("self")).unwrap();
        std::fs::create_dir_all(root.join("thread-self")).unwrap();
        std::fs::write(root.join("sys/kernel/perf_event_paranoid"), "-1\n").unwrap();
        std::fs::write(
            root.join("self/status"),
            "Name:\tx\nCapEff:\t0000004000000000\n",
        )
        .unwrap();
        let fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        std::fs::write(
            root.join("thread-self/stat"),
            format!("1 (a) {}\n", fields.join(" ")),
        )
        .unwrap();
        let system = System::host().with_procfs(&root);
        assert_eq!(system.perf_event_paranoid(), Some(-1));
        assert_eq!(system.effective_capabilities(), Some(1 << 38));
        assert!(system.perf_permissions().perfmon_capable());
        assert_eq!(system.thread_self_stat().map(|s| s.processor), Some(39));
        let empty = System::host().with_procfs(root.join("none"));
        assert_eq!(empty.perf_event_paranoid(), None);
        assert_eq!(empty.thread_self_stat(), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Oracle: the kernel's `/sys/devices/system/cpu/online` (its cpumask of the online
    /// CPUs, Documentation/ABI/testing/sysfs-devices-system-cpu), the same CPUs procfs's
    /// `stat` lists one a line; and proc_stat(5)'s layout in a tree of the test's own.
    #[cfg(target_os = "linux")]
    #[test]
    fn stat_lists_the_online_cpus() {
        let root = std::env::temp_dir().join(format!("counterhal-stat-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            root.join("stat"),
            "cpu  1 2 3\ncpu0 1 2 3\ncpu2 4 5 6\nintr 7\nctxt 8\n",
        )
        .unwrap();
        assert_eq!(System::host().with_procfs(&root).stat_cpus(), [0, 2]);
        assert_eq!(
            System::host().with_procfs(root.join("none")).stat_cpus(),
            []
        );
        std::fs::remove_dir_all(&root).unwrap();
        let online = System::read_trimmed(&System::host().cpus().join("online"))
            .expect("Linux lists its online CPUs in sysfs");
        let expected: Vec<u32> = online
            .split(',')
            .flat_map(|part| {
                let (first, last) = part.split_once('-').unwrap_or((part, part));
                first.parse::<u32>().unwrap()..=last.parse::<u32>().unwrap()
            })
            .collect();
        assert_eq!(System::host().stat_cpus(), expected);
    }
}
