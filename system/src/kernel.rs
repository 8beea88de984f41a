//! The kernel's own facts: its release and host name, the perf sysctls
//! (`kernel.perf_event_paranoid`, `kernel.perf_event_max_sample_rate`,
//! `kernel.perf_user_access`), what this process may do, the CPUs as `/proc/cpuinfo` describes
//! them, its BTF and its build configuration.

use std::path::PathBuf;

use crate::permissions::PerfPermissions;
use crate::roots::System;
use crate::rule::{self, Refused, Tree};

/// `/proc/cpuinfo`: one block of `key\t: value` lines per CPU (proc_cpuinfo(5)), as the
/// kernel decodes each CPU's signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuInfo {
    text: String,
}

impl CpuInfo {
    /// The file's `text`.
    pub fn parse(text: impl Into<String>) -> CpuInfo {
        CpuInfo { text: text.into() }
    }

    /// The text whole.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl System {
    /// `kernel.perf_event_paranoid` (`sys/kernel/perf_event_paranoid` under procfs), where
    /// it can be read.
    pub fn perf_event_paranoid(&self) -> Option<i32> {
        self.proc_text("sys/kernel/perf_event_paranoid")?
            .trim()
            .parse()
            .ok()
    }

    /// The calling process's effective capabilities (`CapEff` of `self/status` under
    /// procfs, proc(5)), where they can be read.
    pub fn effective_capabilities(&self) -> Option<u64> {
        self.process_status("self")?.effective_capabilities()
    }

    /// What `perf_event_open` lets this process do here now: the paranoid level and its
    /// capabilities, read at this call.
    pub fn perf_permissions(&self) -> PerfPermissions {
        PerfPermissions::new(
            self.perf_event_paranoid(),
            self.effective_capabilities().unwrap_or(0),
        )
    }

    /// `kernel.perf_event_max_sample_rate`: the most samples a second the kernel takes of
    /// one event, where it can be read.
    pub fn perf_event_max_sample_rate(&self) -> Option<u64> {
        self.proc_text("sys/kernel/perf_event_max_sample_rate")?
            .trim()
            .parse()
            .ok()
    }

    /// `kernel.perf_user_access` (arm64, Linux 5.17): 1 where user space may read the
    /// counters (`rdpmc`'s Arm twin), where it can be read.
    pub fn perf_user_access(&self) -> Option<u32> {
        self.proc_text("sys/kernel/perf_user_access")?
            .trim()
            .parse()
            .ok()
    }

    /// The kernel's release (`sys/kernel/osrelease` under procfs, `uname -r`), where it can
    /// be read.
    pub fn os_release(&self) -> Option<String> {
        Some(self.proc_text("sys/kernel/osrelease")?.trim().to_string())
    }

    /// The host name (`sys/kernel/hostname` under procfs, `uname -n`), where it can be read.
    pub fn hostname(&self) -> Option<String> {
        Some(self.proc_text("sys/kernel/hostname")?.trim().to_string())
    }

    /// The CPUs as `cpuinfo` under procfs describes them, where it can be read.
    pub fn cpuinfo(&self) -> Option<CpuInfo> {
        self.proc_text("cpuinfo").map(CpuInfo::parse)
    }

    /// Whether the running kernel was built with `option` (`CONFIG_CGROUP_PERF`), where its
    /// configuration (`/boot/config-RELEASE`, as distributions install it) tells; `None`
    /// where it does not.
    pub fn kernel_built_with(&self, option: &str) -> Option<bool> {
        let release = self.os_release()?;
        if release.contains('/') || release.starts_with('.') {
            return None;
        }
        let boot = PathBuf::from("/boot");
        let config = Tree::new(&boot, "boot")
            .read(&boot.join(format!("config-{release}")), rule::TABLE)
            .ok()??;
        let set = format!("{option}=y");
        Some(config.lines().any(|line| line == set))
    }

    /// The kernel's BTF (`kernel/btf/vmlinux` under sysfs: the types of its own code, which a
    /// BPF program's relocations are checked against); `None` where the kernel exports none.
    ///
    /// # Errors
    /// [`Refused`] where the file breaks the reading rule.
    pub fn kernel_btf(&self) -> Result<Option<Vec<u8>>, Refused> {
        self.sys_tree()
            .read_bytes(&self.kernel_btf_path(), rule::BLOB)
    }

    /// Where [`System::kernel_btf`] reads the kernel's BTF (`kernel/btf/vmlinux` under sysfs),
    /// to name it.
    pub fn kernel_btf_path(&self) -> PathBuf {
        self.sysfs().join("kernel/btf/vmlinux")
    }

    /// Whether the firmware describes the ACPI table `signature` (`NFIT`: persistent memory),
    /// by its file in `firmware/acpi/tables` under sysfs.
    pub fn has_acpi_table(&self, signature: &str) -> bool {
        let path = self.sysfs().join("firmware/acpi/tables").join(signature);
        !signature.contains('/') && self.sys_tree().exists(&path)
    }

    /// Where the BPF file system pins the object `name` (`fs/bpf/NAME` under sysfs), to hand
    /// to `bpf(BPF_OBJ_GET)`: a place, not a file this crate reads.
    pub fn bpf_pin(&self, name: &str) -> PathBuf {
        self.sysfs().join("fs/bpf").join(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::tree;

    /// Oracle: a procfs tree of the test's own, laid out as proc(5) has it: the facts come
    /// from under the root named, not from this machine's /proc.
    #[test]
    fn facts_come_from_the_root_named() {
        let fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        let root = tree(
            "kernel-root",
            &[
                ("sys/kernel/perf_event_paranoid", "-1\n"),
                ("sys/kernel/perf_event_max_sample_rate", "100000\n"),
                ("sys/kernel/osrelease", "7.2.0-test\n"),
                ("sys/kernel/hostname", "lab\n"),
                ("self/status", "Name:\tx\nCapEff:\t0000004000000000\n"),
                ("thread-self/stat", &format!("1 (a) {}\n", fields.join(" "))),
                (
                    "cpuinfo",
                    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: X @ 2.00GHz\n\n\
                     processor\t: 1\nvendor_id\t: GenuineIntel\n",
                ),
            ],
        );
        let system = System::host().with_procfs(&root);
        assert_eq!(system.perf_event_paranoid(), Some(-1));
        assert_eq!(system.effective_capabilities(), Some(1 << 38));
        assert!(system.perf_permissions().perfmon_capable());
        assert_eq!(system.thread_self_stat().map(|s| s.processor), Some(39));
        assert_eq!(system.perf_event_max_sample_rate(), Some(100_000));
        assert_eq!(system.os_release().as_deref(), Some("7.2.0-test"));
        assert_eq!(system.hostname().as_deref(), Some("lab"));
        assert_eq!(system.perf_user_access(), None);
        let cpuinfo = system.cpuinfo().unwrap();
        assert!(cpuinfo.text().contains("model name\t: X @ 2.00GHz\n"));
        // No `/boot/config-7.2.0-test` here.
        assert_eq!(system.kernel_built_with("CONFIG_PERF_EVENTS"), None);
        let empty = System::host().with_procfs(root.join("none"));
        assert_eq!(empty.perf_event_paranoid(), None);
        assert_eq!(empty.thread_self_stat(), None);
        assert_eq!(empty.cpuinfo(), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Oracle: this machine's kernel, as `uname -r` names its release and
    /// `/proc/sys/kernel/perf_event_paranoid` (a sysctl every kernel with perf events has)
    /// holds a level from -1 up.
    #[cfg(target_os = "linux")]
    #[test]
    fn this_kernel_tells_its_release_and_level() {
        let host = System::host();
        let uname = std::process::Command::new("uname").arg("-r").output().ok();
        if let Some(uname) = uname.filter(|o| o.status.success()) {
            let release = String::from_utf8_lossy(&uname.stdout).trim().to_string();
            assert_eq!(host.os_release(), Some(release));
        }
        if let Some(level) = host.perf_event_paranoid() {
            assert!(level >= -1, "{level}");
        }
        assert_eq!(
            host.bpf_pin("perf_attr_map"),
            std::path::Path::new("/sys/fs/bpf/perf_attr_map")
        );
        assert_eq!(
            host.kernel_btf_path(),
            std::path::Path::new("/sys/kernel/btf/vmlinux")
        );
    }
}
