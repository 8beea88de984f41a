//! The CPUs: which are online, possible, isolated (`devices/system/cpu/online`, `possible`,
//! `isolated` under sysfs, Documentation/ABI/testing/sysfs-devices-system-cpu), which procfs
//! lists, whether SMT is active, each CPU's MIDR (arm64) and NUMA node.

use std::path::PathBuf;

use crate::roots::System;

/// The most CPUs a list names: more than any kernel's `NR_CPUS` (8,192), so that a hostile
/// tree's `0-4294967295` is no list rather than 16 GiB of numbers.
const MOST_CPUS: usize = 1 << 16;

/// The CPUs of a kernel CPU list (`0-3,8,10-11`: ranges and single CPUs, comma-separated,
/// perhaps empty), in ascending order without repeats; `None` where it is no such list or
/// names more than 65,536 CPUs.
pub fn parse_cpu_list(list: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (first.parse::<u32>().ok()?, last.parse::<u32>().ok()?),
            None => {
                let cpu = part.parse::<u32>().ok()?;
                (cpu, cpu)
            }
        };
        if first > last || cpus.len() + (last - first) as usize >= MOST_CPUS {
            return None;
        }
        cpus.extend(first..=last);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

impl System {
    /// A CPU list of `devices/system/cpu` under sysfs (`online`), parsed.
    fn cpu_list(&self, file: &str) -> Option<Vec<u32>> {
        parse_cpu_list(&self.sys_text(format!("devices/system/cpu/{file}"))?)
    }

    /// The CPUs online (`devices/system/cpu/online`), where it can be read.
    pub fn online_cpus(&self) -> Option<Vec<u32>> {
        self.cpu_list("online")
    }

    /// Where [`System::online_cpus`] reads the CPUs online (`devices/system/cpu/online` under
    /// sysfs), to name it.
    pub fn online_cpus_path(&self) -> PathBuf {
        self.sysfs().join("devices/system/cpu/online")
    }

    /// The CPUs possible, online or not (`devices/system/cpu/possible`: what per-CPU BPF maps
    /// hold a slot for), where it can be read.
    pub fn possible_cpus(&self) -> Option<Vec<u32>> {
        self.cpu_list("possible")
    }

    /// The CPUs isolated from the scheduler's balancing (`devices/system/cpu/isolated`, the
    /// `isolcpus=` boot option's), where it can be read (often none).
    pub fn isolated_cpus(&self) -> Option<Vec<u32>> {
        self.cpu_list("isolated")
    }

    /// Whether CPU `cpu` has a directory (`devices/system/cpu/cpuN` under sysfs).
    pub fn has_cpu(&self, cpu: u32) -> bool {
        let dir = self.sysfs().join(format!("devices/system/cpu/cpu{cpu}"));
        self.sys_tree().is_dir(&dir).unwrap_or(false)
    }

    /// Whether SMT is active (`devices/system/cpu/smt/active`, Linux 4.19), where it can be
    /// read.
    pub fn smt_active(&self) -> Option<bool> {
        Some(self.sys_text("devices/system/cpu/smt/active")? == "1")
    }

    /// CPU `cpu`'s Main ID Register (arm64: `cpuN/regs/identification/midr_el1`, in hex),
    /// where it can be read.
    pub fn midr(&self, cpu: u32) -> Option<u64> {
        let text = self.sys_text(format!(
            "devices/system/cpu/cpu{cpu}/regs/identification/midr_el1"
        ))?;
        u64::from_str_radix(text.strip_prefix("0x")?, 16).ok()
    }

    /// The CPUs online by procfs: the `cpuN` lines of `stat` under procfs (proc_stat(5): one a
    /// CPU online), in their order; empty where it cannot be read.
    pub fn stat_cpus(&self) -> Vec<u32> {
        let Some(text) = self.proc_text("stat") else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|line| line.strip_prefix("cpu")?.split(' ').next()?.parse().ok())
            .collect()
    }

    /// Whether NUMA node `node` has a directory (`devices/system/node/nodeN` under sysfs).
    pub fn has_node(&self, node: u32) -> bool {
        let dir = self.sysfs().join(format!("devices/system/node/node{node}"));
        self.sys_tree().is_dir(&dir).unwrap_or(false)
    }

    /// The NUMA node CPU `cpu` is on (its `nodeN` link, drivers/base/node.c), where it has
    /// one; the nodes looked for are those below `nodes`.
    pub fn cpu_node(&self, cpu: u32, nodes: u32) -> Option<u32> {
        let dir = self.sysfs().join(format!("devices/system/cpu/cpu{cpu}"));
        let tree = self.sys_tree();
        (0..nodes).find(|node| tree.exists(&dir.join(format!("node{node}"))))
    }

    /// The NUMA nodes, by the `nodeN` directories of `devices/system/node` under sysfs, in
    /// ascending order; none where there is no such directory.
    pub fn numa_nodes(&self) -> Vec<u32> {
        let dir = self.sysfs().join("devices/system/node");
        let mut nodes: Vec<u32> = self
            .sys_tree()
            .subdirectories(&dir)
            .iter()
            .filter_map(|name| name.strip_prefix("node")?.parse().ok())
            .collect();
        nodes.sort_unstable();
        nodes
    }

    /// The CPUs of NUMA node `node` (`devices/system/node/nodeN/cpulist`), where it can be
    /// read.
    pub fn node_cpus(&self, node: u32) -> Option<Vec<u32>> {
        parse_cpu_list(&self.sys_text(format!("devices/system/node/node{node}/cpulist"))?)
    }

    /// The memory of NUMA node `node` in KiB (`MemTotal` of `devices/system/node/nodeN/meminfo`),
    /// where it can be read.
    pub fn node_memory_kib(&self, node: u32) -> Option<u64> {
        let text = self.sys_text(format!("devices/system/node/node{node}/meminfo"))?;
        text.lines()
            .find_map(|l| l.split_once("MemTotal:").map(|(_, v)| v.to_string()))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::tree;

    /// Oracle: the kernel's CPU list format (`cpumap_print_list_to_buf`, lib/bitmap-str.c:
    /// ranges and single CPUs, comma-separated, an empty mask an empty line).
    #[test]
    fn cpu_lists_parse_as_the_kernel_prints_them() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("5,3-4"), Some(vec![3, 4, 5]));
        assert_eq!(parse_cpu_list("\n"), Some(vec![]));
        assert_eq!(parse_cpu_list("a-b"), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("0-4294967295"), None);
    }

    /// A sysfs tree of the test's own: the CPU lists, SMT, the MIDR and the NUMA nodes come
    /// from under the root named.
    #[test]
    fn cpus_come_from_the_tree_named() {
        let root = tree(
            "cpus-tree",
            &[
                ("devices/system/cpu/online", "0-2,4\n"),
                ("devices/system/cpu/possible", "0-7\n"),
                ("devices/system/cpu/isolated", "\n"),
                ("devices/system/cpu/smt/active", "0\n"),
                (
                    "devices/system/cpu/cpu1/regs/identification/midr_el1",
                    "0x00000000410fd0c0\n",
                ),
                ("devices/system/cpu/cpu1/node1/cpulist", "1\n"),
                ("devices/system/node/node0/cpulist", "0\n"),
                (
                    "devices/system/node/node1/meminfo",
                    "Node 1 MemTotal:       1048576 kB\n",
                ),
            ],
        );
        let system = System::host().with_sysfs(&root);
        assert_eq!(system.online_cpus(), Some(vec![0, 1, 2, 4]));
        assert_eq!(
            system.online_cpus_path(),
            root.join("devices/system/cpu/online")
        );
        assert_eq!(system.possible_cpus().map(|c| c.len()), Some(8));
        assert_eq!(system.isolated_cpus(), Some(vec![]));
        assert_eq!(system.smt_active(), Some(false));
        assert_eq!(system.midr(1), Some(0x410f_d0c0));
        assert_eq!(system.midr(0), None);
        assert!(system.has_cpu(1) && !system.has_cpu(0));
        assert_eq!(system.numa_nodes(), [0, 1]);
        assert!(system.has_node(1) && !system.has_node(2));
        assert_eq!(system.cpu_node(1, 2), Some(1));
        assert_eq!(system.cpu_node(0, 2), None);
        assert_eq!(system.node_cpus(0), Some(vec![0]));
        assert_eq!(system.node_memory_kib(1), Some(1_048_576));
        let none = System::host().with_sysfs(root.join("none"));
        assert_eq!(none.online_cpus(), None);
        assert!(none.numa_nodes().is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Oracle: the kernel's `/sys/devices/system/cpu/online` (its cpumask of the online
    /// CPUs, Documentation/ABI/testing/sysfs-devices-system-cpu), the same CPUs procfs's
    /// `stat` lists one a line, all of them possible; and proc_stat(5)'s layout in a tree of
    /// the test's own.
    #[cfg(target_os = "linux")]
    #[test]
    fn stat_lists_the_online_cpus() {
        let root = tree(
            "cpus-stat",
            &[(
                "stat",
                "cpu  1 2 3\ncpu0 1 2 3\ncpu2 4 5 6\nintr 7\nctxt 8\n",
            )],
        );
        assert_eq!(System::host().with_procfs(&root).stat_cpus(), [0, 2]);
        assert_eq!(
            System::host().with_procfs(root.join("none")).stat_cpus(),
            []
        );
        std::fs::remove_dir_all(&root).unwrap();
        let host = System::host();
        let online = host
            .online_cpus()
            .expect("Linux lists its online CPUs in sysfs");
        assert_eq!(host.stat_cpus(), online);
        let possible = host.possible_cpus().expect("and its possible ones");
        assert!(online.iter().all(|cpu| possible.contains(cpu)));
        assert!(online.iter().all(|&cpu| host.has_cpu(cpu)));
    }
}
