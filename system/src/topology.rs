//! Where a CPU sits: its socket, die and cluster, as sysfs gives them
//! (`topology/physical_package_id`, `topology/die_id` and `topology/cluster_id` of its
//! directory: drivers/base/topology.c, Documentation/admin-guide/cputopology.rst), and the
//! caches it uses (`cache/indexN/level` and `shared_cpu_list`: drivers/base/cacheinfo.c,
//! Documentation/ABI/testing/sysfs-devices-system-cpu).

use std::path::Path;

use crate::System;

/// A CPU's place in the machine: the package (socket) and the die within it.
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
}

/// One cache a CPU uses: a `cache/indexN` directory of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CpuCache {
    /// Its level: `level` (1 for L1 data and L1 instruction, 2, 3...); `None` where it
    /// cannot be read.
    pub level: Option<u32>,
    /// The lowest CPU of `shared_cpu_list`, the CPUs that share it (perf's id of the cache
    /// instance); `None` where the file cannot be read or names no CPU.
    pub first_shared_cpu: Option<u32>,
}

impl CpuCache {
    /// A cache of `level` whose lowest sharing CPU is `first_shared_cpu` (as read, or a
    /// test's).
    pub fn new(level: Option<u32>, first_shared_cpu: Option<u32>) -> CpuCache {
        CpuCache {
            level,
            first_shared_cpu,
        }
    }
}

/// The most `cache/indexN` directories read for one CPU (a bound on a hostile tree; kernels
/// have 4 or 5).
const MOST_CACHES: u32 = 32;

impl System {
    /// CPU `cpu`'s socket and die, from its `topology` directory under the sysfs root;
    /// each `None` where it cannot be read (an offline CPU, an older kernel, another tree).
    pub fn cpu_topology(&self, cpu: u32) -> CpuTopology {
        let topology = self.cpu(cpu).join("topology");
        CpuTopology {
            socket: id(&topology.join("physical_package_id")),
            die: id(&topology.join("die_id")),
            cluster: id(&topology.join("cluster_id")),
        }
    }

    /// The caches CPU `cpu` uses, `cache/index0` on, up to the first index missing (none
    /// where the CPU has no `cache` directory), in index order.
    pub fn cpu_caches(&self, cpu: u32) -> Vec<CpuCache> {
        let caches = self.cpu(cpu).join("cache");
        (0..MOST_CACHES)
            .map(|index| caches.join(format!("index{index}")))
            .take_while(|dir| dir.is_dir())
            .map(|dir| {
                CpuCache::new(
                    id(&dir.join("level")),
                    System::read_trimmed(&dir.join("shared_cpu_list"))
                        .and_then(|list| first_cpu(&list)),
                )
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

/// The number in a topology file; `None` where it is unreadable, `-1` or no number.
fn id(path: &Path) -> Option<u32> {
    System::read_trimmed(path)?.parse().ok()
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
            let dir = system.cpu(cpu).join("topology");
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
            let path = system.cpu(cpu).join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(0, "topology/cluster_id", "65535\n");
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
