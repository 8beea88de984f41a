//! The machine's topology as PAPI 7.0 reads it from sysfs (its `linux-common.c`, the way
//! lscpu reads it, and sysdetect's `linux_cpu_utils.c`): CPUs, threads per core, cores per
//! socket, sockets, NUMA nodes, each node's memory and each CPU's node.

use counterhal_system::System;

/// The topology under a sysfs `devices/system` folder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    /// CPUs (`cpu/cpuN` folders, counted from 0 until one is missing).
    pub cpus: i32,
    /// Threads per core (the bits of cpu0's `topology/thread_siblings`).
    pub threads: i32,
    /// Cores per socket (the bits of cpu0's `topology/core_siblings` over `threads`).
    pub cores: i32,
    /// Sockets (CPUs over cores over threads).
    pub sockets: i32,
    /// NUMA nodes (`node/nodeN` folders, counted from 0 until one is missing).
    pub nodes: i32,
    /// Each node's memory in KB (`node/nodeN/meminfo`'s `MemTotal`).
    pub node_memory_kib: Vec<u64>,
    /// Each CPU's node (the `nodeN` link in `cpu/cpuM`; 0 where there is none).
    pub cpu_node: Vec<i32>,
}

/// Reads the topology of `system` (its sysfs's `devices/system`: `/sys`, or `DIR` of
/// `COUNTERHAL_SYSFS`, read by the system's rule for a tree that may be hostile: links
/// followed only inside the tree, regular files of at most a page, never a FIFO or a device).
/// The threads and cores are counted in CPU 0's lists (`thread_siblings_list`,
/// `core_siblings_list`), the bits of the masks PAPI counts (`thread_siblings`,
/// `core_siblings`: the kernel prints each mask both ways, drivers/base/topology.c).
pub fn read(system: &System) -> Topology {
    let count = |has: &dyn Fn(u32) -> bool| (0..).take_while(|&n| has(n)).count() as i32;
    let cpus = count(&|n| system.has_cpu(n));
    let nodes = count(&|n| system.has_node(n));
    let siblings = system.cpu_siblings(0);
    let bits = |list: Option<Vec<u32>>| list.map(|cpus| cpus.len() as i32);
    let threads = bits(siblings.threads).unwrap_or(0);
    let cores = match bits(siblings.package) {
        Some(bits) if threads > 0 => bits / threads,
        _ => 0,
    };
    let sockets = if threads > 0 && cores > 0 {
        cpus / cores / threads
    } else {
        0
    };
    let node_memory_kib = (0..nodes)
        .map(|n| system.node_memory_kib(n as u32).unwrap_or(0))
        .collect();
    let cpu_node = (0..cpus)
        .map(|c| {
            let node = system.cpu_node(c as u32, nodes.max(1) as u32);
            node.map_or(0, |n| n as i32)
        })
        .collect();
    Topology {
        cpus,
        threads,
        cores,
        sockets,
        nodes,
        node_memory_kib,
        cpu_node,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: lscpu's and PAPI 7.0's arithmetic on a fake sysfs tree of 4 CPUs, 2 threads a
    /// core, one node of 1 GB (the masks `3` and `f` as the kernel lists them, `0-1` and
    /// `0-3`: PAPI's `path_sibling` counts the masks' bits).
    #[test]
    fn a_fake_tree_reads_as_papi_reads_it() {
        let root = counterhal_conformance::fixtures::Scratch::new("papi-topology");
        let system = root.join("devices/system");
        for cpu in 0..4 {
            let dir = system.join(format!("cpu/cpu{cpu}"));
            std::fs::create_dir_all(dir.join("topology")).unwrap();
            std::fs::create_dir_all(dir.join("node0")).unwrap();
            std::fs::write(dir.join("topology/thread_siblings_list"), "0-1\n").unwrap();
            std::fs::write(dir.join("topology/core_siblings_list"), "0-3\n").unwrap();
        }
        std::fs::create_dir_all(system.join("node/node0")).unwrap();
        std::fs::write(
            system.join("node/node0/meminfo"),
            "Node 0 MemTotal:       1048576 kB\nNode 0 MemFree: 1 kB\n",
        )
        .unwrap();
        let t = read(&System::host().with_sysfs(root.path()));
        assert_eq!(
            (t.cpus, t.threads, t.cores, t.sockets, t.nodes),
            (4, 2, 2, 1, 1)
        );
        assert_eq!(t.node_memory_kib, vec![1_048_576]);
        assert_eq!(t.cpu_node, vec![0, 0, 0, 0]);
    }
}
