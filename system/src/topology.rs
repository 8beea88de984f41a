//! Where a CPU sits: its socket, die, cluster and core, as sysfs gives them
//! (`topology/physical_package_id`, `topology/die_id`, `topology/cluster_id` and
//! `topology/core_id` of its directory: drivers/base/topology.c,
//! Documentation/admin-guide/cputopology.rst), the CPUs that share each with it
//! (`thread_siblings_list`, `core_cpus_list`, `die_cpus_list`, `package_cpus_list`), and the
//! caches it uses (`cache/indexN/`: drivers/base/cacheinfo.c,
//! Documentation/ABI/testing/sysfs-devices-system-cpu).

use std::path::PathBuf;

use crate::cpus::parse_cpu_list;
use crate::roots::System;

/// A CPU's place in the machine: the package (socket), the die within it, the cluster and
/// the core.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CpuTopology {
    /// The physical package (socket) it is on: `topology/physical_package_id`; `None`
    /// where absent or `-1` (an architecture that has no such number).
    pub socket: Option<u32>,
    /// The die within the package: `topology/die_id` (Linux 5.2; only on architectures
    /// that number dies, x86 among them); `None` where absent or `-1`.
    pub die: Option<u32>,
    /// The cluster (CPUs that share a cache or bus below the die): `topology/cluster_id`
    /// (Linux 5.16); `None` where absent or `-1`. x86 kernels without cluster data print
    /// 65535, which is taken as it is.
    pub cluster: Option<u32>,
    /// The core within the package: `topology/core_id`; `None` where absent or `-1`.
    pub core: Option<u32>,
}

/// The CPUs that share a part of the machine with one CPU, each list where sysfs gives it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CpuSiblings {
    /// The hardware threads of its core: `topology/thread_siblings_list`.
    pub threads: Option<Vec<u32>>,
    /// The CPUs of its core: `topology/core_cpus_list` (Linux 5.4; the same CPUs as
    /// `thread_siblings_list`, which older kernels alone have).
    pub core: Option<Vec<u32>>,
    /// The CPUs of its die: `topology/die_cpus_list` (Linux 5.4).
    pub die: Option<Vec<u32>>,
    /// The CPUs of its package: `topology/core_siblings_list`.
    pub package: Option<Vec<u32>>,
}

/// One cache a CPU uses: a `cache/indexN` directory of its own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CpuCache {
    /// Its level: `level` (1 for L1 data and L1 instruction, 2, 3...); `None` where it
    /// cannot be read.
    pub level: Option<u32>,
    /// The lowest CPU of `shared_cpu_list`, the CPUs that share it (perf's id of the cache
    /// instance); `None` where the file cannot be read or names no CPU.
    pub first_shared_cpu: Option<u32>,
    /// What it holds: `type` (`Data`, `Instruction`, `Unified`); `None` where absent.
    pub kind: Option<String>,
    /// Its size in KiB: `size` (`32K`); `None` where absent.
    pub size_kib: Option<u32>,
    /// Its line size in bytes: `coherency_line_size`; `None` where absent.
    pub line_size: Option<u32>,
    /// Its ways: `ways_of_associativity`; `None` where absent.
    pub ways: Option<u32>,
    /// Its sets: `number_of_sets`; `None` where absent.
    pub sets: Option<u32>,
    /// Its lines a tag covers: `physical_line_partition`; `None` where absent.
    pub partitions: Option<u32>,
    /// `write_policy` (`WriteBack`), where given.
    pub write_policy: Option<String>,
    /// `allocation_policy` (`ReadWriteAllocate`), where given.
    pub allocation_policy: Option<String>,
}

impl CpuCache {
    /// A cache of `level` whose lowest sharing CPU is `first_shared_cpu` (as read, or a
    /// test's), nothing else known of it.
    pub fn new(level: Option<u32>, first_shared_cpu: Option<u32>) -> CpuCache {
        CpuCache {
            level,
            first_shared_cpu,
            ..CpuCache::default()
        }
    }
}

/// The most `cache/indexN` directories read for one CPU (a bound on a hostile tree; kernels
/// have 4 or 5).
const MOST_CACHES: u32 = 32;

impl System {
    /// The directory of CPU `cpu` under the sysfs root, relative to it.
    fn cpu_dir(cpu: u32) -> PathBuf {
        PathBuf::from(format!("devices/system/cpu/cpu{cpu}"))
    }

    /// The number in the file `file` of CPU `cpu`'s directory; `None` where it is
    /// unreadable, `-1` or no number.
    fn cpu_number(&self, cpu: u32, file: &str) -> Option<u32> {
        self.sys_text(System::cpu_dir(cpu).join(file))?.parse().ok()
    }

    /// CPU `cpu`'s socket, die, cluster and core, from its `topology` directory under the
    /// sysfs root; each `None` where it cannot be read (an offline CPU, an older kernel,
    /// another tree).
    pub fn cpu_topology(&self, cpu: u32) -> CpuTopology {
        CpuTopology {
            socket: self.cpu_number(cpu, "topology/physical_package_id"),
            die: self.cpu_number(cpu, "topology/die_id"),
            cluster: self.cpu_number(cpu, "topology/cluster_id"),
            core: self.cpu_number(cpu, "topology/core_id"),
        }
    }

    /// The CPUs that share CPU `cpu`'s core, die and package, from its `topology`
    /// directory; each `None` where it cannot be read.
    pub fn cpu_siblings(&self, cpu: u32) -> CpuSiblings {
        let list = |file: &str| {
            parse_cpu_list(&self.sys_text(System::cpu_dir(cpu).join("topology").join(file))?)
        };
        CpuSiblings {
            threads: list("thread_siblings_list"),
            core: list("core_cpus_list"),
            die: list("die_cpus_list"),
            package: list("core_siblings_list"),
        }
    }

    /// The caches CPU `cpu` uses, `cache/index0` on, up to the first index missing (none
    /// where the CPU has no `cache` directory), in index order.
    pub fn cpu_caches(&self, cpu: u32) -> Vec<CpuCache> {
        let tree = self.sys_tree();
        let caches = System::cpu_dir(cpu).join("cache");
        (0..MOST_CACHES)
            .map(|index| caches.join(format!("index{index}")))
            .take_while(|dir| tree.is_dir(&self.sysfs().join(dir)).unwrap_or(false))
            .map(|dir| {
                let text = |file: &str| self.sys_text(dir.join(file)).filter(|t| !t.is_empty());
                // `size` is `32K`: its digits.
                let number = |file: &str| {
                    let text = text(file)?;
                    let end = text
                        .find(|c: char| !c.is_ascii_digit())
                        .unwrap_or(text.len());
                    text[..end].parse().ok()
                };
                CpuCache {
                    level: number("level"),
                    first_shared_cpu: text("shared_cpu_list").and_then(|list| first_cpu(&list)),
                    kind: text("type"),
                    size_kib: number("size"),
                    line_size: number("coherency_line_size"),
                    ways: number("ways_of_associativity"),
                    sets: number("number_of_sets"),
                    partitions: number("physical_line_partition"),
                    write_policy: text("write_policy"),
                    allocation_policy: text("allocation_policy"),
                }
            })
            .collect()
    }
}

/// The lowest CPU of a CPU list (`0-3,8,10-11`: ranges and single CPUs, comma-separated);
/// `None` where it names none or is no such list.
fn first_cpu(list: &str) -> Option<u32> {
    list.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| item.split('-').next().and_then(|n| n.parse::<u32>().ok()))
        .collect::<Option<Vec<u32>>>()?
        .into_iter()
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs tree of two packages of two dies each, a CPU without `die_id` (a kernel
    /// before 5.2) and one whose package is `-1`: each fact from under the root named.
    ///
    /// Oracle: Linux 7.2's drivers/base/topology.c (`cpuX/topology/physical_package_id` and
    /// `die_id` printed with `%d`, `die_id` only where the architecture defines
    /// `TOPOLOGY_DIE_SYSFS`) and Documentation/admin-guide/cputopology.rst (an architecture
    /// that does not number them gives `-1`).
    #[test]
    fn sockets_and_dies_come_from_the_tree_named() {
        let root = std::env::temp_dir().join(format!("counterhal-topology-{}", std::process::id()));
        let system = System::host().with_sysfs(&root);
        let write = |cpu: u32, file: &str, text: &str| {
            let dir = root.join(System::cpu_dir(cpu)).join("topology");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(file), text).unwrap();
        };
        for cpu in 0..4 {
            write(cpu, "physical_package_id", &format!("{}\n", cpu / 2));
            write(cpu, "die_id", &format!("{}\n", cpu % 2));
        }
        write(4, "physical_package_id", "1\n");
        write(5, "physical_package_id", "-1\n");
        write(5, "die_id", "-1\n");
        let of = |cpu| {
            let t = system.cpu_topology(cpu);
            (t.socket, t.die)
        };
        assert_eq!(of(0), (Some(0), Some(0)));
        assert_eq!(of(1), (Some(0), Some(1)));
        assert_eq!(of(3), (Some(1), Some(1)));
        assert_eq!(of(4), (Some(1), None));
        assert_eq!(of(5), (None, None));
        assert_eq!(of(6), (None, None));
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A tree of clusters and caches as an arm64 server's and an x86 VM's: clusters from
    /// `cluster_id` (65535 as x86 prints it where it has none, `-1` none), caches index by
    /// index up to the first missing, each by its level and the lowest CPU sharing it.
    ///
    /// Oracle: Linux 7.2's drivers/base/topology.c (`cluster_id` printed with `%d`) and
    /// drivers/base/cacheinfo.c (`level` with `%u`, `shared_cpu_list` as a CPU list), and
    /// this VM's /sys (cluster_id 65535; index3 level 3 shared by `0-1`); the lowest CPU of
    /// the list is perf 7.2's cache id (`cpu__get_cache_id_from_map`, builtin-stat.c).
    #[test]
    fn clusters_and_caches_come_from_the_tree_named() {
        let root = std::env::temp_dir().join(format!("counterhal-caches-{}", std::process::id()));
        let system = System::host().with_sysfs(&root);
        let write = |cpu: u32, file: &str, text: &str| {
            let path = root.join(System::cpu_dir(cpu)).join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(0, "topology/cluster_id", "65535\n");
        write(0, "topology/core_id", "3\n");
        write(0, "topology/thread_siblings_list", "0,8\n");
        write(0, "topology/core_cpus_list", "0,8\n");
        write(0, "topology/die_cpus_list", "0-15\n");
        write(0, "topology/core_siblings_list", "0-15\n");
        write(2, "cache/index0/type", "Data\n");
        write(2, "cache/index0/size", "48K\n");
        write(2, "cache/index0/coherency_line_size", "64\n");
        write(2, "cache/index0/ways_of_associativity", "12\n");
        write(1, "topology/cluster_id", "-1\n");
        write(2, "topology/cluster_id", "4\n");
        for (index, level, list) in [
            (0, "1", "2"),
            (1, "1", "2"),
            (2, "2", "2-3"),
            (3, "3", "8-15,0-7"),
        ] {
            write(
                2,
                &format!("cache/index{index}/level"),
                &format!("{level}\n"),
            );
            write(
                2,
                &format!("cache/index{index}/shared_cpu_list"),
                &format!("{list}\n"),
            );
        }
        // index5 is not read: index4 is missing.
        write(2, "cache/index5/level", "4\n");
        write(3, "cache/index0/level", "x\n");
        write(3, "cache/index0/shared_cpu_list", "\n");
        assert_eq!(system.cpu_topology(0).cluster, Some(65535));
        assert_eq!(system.cpu_topology(0).core, Some(3));
        assert_eq!(system.cpu_topology(1).core, None);
        let siblings = system.cpu_siblings(0);
        assert_eq!(siblings.threads, Some(vec![0, 8]));
        assert_eq!(siblings.core, Some(vec![0, 8]));
        assert_eq!(siblings.die.map(|d| d.len()), Some(16));
        assert_eq!(siblings.package.map(|p| p.len()), Some(16));
        assert_eq!(system.cpu_siblings(1), CpuSiblings::default());
        let l1d = &system.cpu_caches(2)[0];
        assert_eq!(
            (
                l1d.kind.as_deref(),
                l1d.size_kib,
                l1d.line_size,
                l1d.ways,
                l1d.sets
            ),
            (Some("Data"), Some(48), Some(64), Some(12), None)
        );
        assert_eq!(system.cpu_topology(1).cluster, None);
        assert_eq!(system.cpu_topology(2).cluster, Some(4));
        let caches: Vec<(Option<u32>, Option<u32>)> = system
            .cpu_caches(2)
            .iter()
            .map(|c| (c.level, c.first_shared_cpu))
            .collect();
        assert_eq!(
            caches,
            [
                (Some(1), Some(2)),
                (Some(1), Some(2)),
                (Some(2), Some(2)),
                (Some(3), Some(0))
            ]
        );
        let unreadable = system.cpu_caches(3);
        assert_eq!(
            (unreadable[0].level, unreadable[0].first_shared_cpu),
            (None, None)
        );
        assert!(system.cpu_caches(4).is_empty());
        assert_eq!(first_cpu("5,3-4"), Some(3));
        assert_eq!(first_cpu("a-b"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
