//! The machine's topology as PAPI 7.0 reads it from sysfs (its `linux-common.c`, the way
//! lscpu reads it, and sysdetect's `linux_cpu_utils.c`): CPUs, threads per core, cores per
//! socket, sockets, NUMA nodes, each node's memory and each CPU's node.

use std::path::Path;

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

/// The number of bits set in a sysfs CPU mask (`00000003` or `ff,ffffffff`).
fn mask_bits(text: &str) -> i32 {
    text.chars()
        .filter_map(|c| c.to_digit(16))
        .map(|d| d.count_ones() as i32)
        .sum()
}

/// The text of the file `path` of the sysfs tree `tree` (`/sys`, or `COUNTERHAL_SYSFS`), read
/// as the backend reads a PMU tree, which may be hostile: links followed only inside the
/// tree, regular files only (never a FIFO or a device), at most a page; `None` where it does
/// not exist, cannot be read, or is refused so.
pub fn sysfs_text(tree: &Path, path: &Path) -> Option<String> {
    facade::advanced::read_tree_file(tree, path).ok().flatten()
}

/// Reads the topology under `system` (`/sys/devices/system`, or `DIR/devices/system`, read in
/// the tree `DIR` as [`sysfs_text`] reads).
pub fn read(system: &Path) -> Topology {
    let tree = system.ancestors().nth(2).unwrap_or(system);
    let count = |kind: &str| {
        (0..)
            .take_while(|n| system.join(format!("{kind}/{kind}{n}")).exists())
            .count() as i32
    };
    let cpus = count("cpu");
    let nodes = count("node");
    let siblings = |name: &str| {
        sysfs_text(tree, &system.join("cpu/cpu0/topology").join(name)).map(|t| mask_bits(&t))
    };
    let threads = siblings("thread_siblings").unwrap_or(0);
    let cores = match siblings("core_siblings") {
        Some(bits) if threads > 0 => bits / threads,
        _ => 0,
    };
    let sockets = if threads > 0 && cores > 0 {
        cpus / cores / threads
    } else {
        0
    };
    let node_memory_kib = (0..nodes)
        .map(|n| {
            let path = system.join(format!("node/node{n}/meminfo"));
            let text = sysfs_text(tree, &path).unwrap_or_default();
            text.lines()
                .find_map(|l| l.split_once("MemTotal:").map(|(_, v)| v.to_string()))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        })
        .collect();
    let cpu_node = (0..cpus)
        .map(|c| {
            (0..nodes.max(1))
                .find(|n| system.join(format!("cpu/cpu{c}/node{n}")).exists())
                .unwrap_or(0)
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

/// This machine's topology, from its sysfs's `devices/system`.
pub fn this_machine() -> Topology {
    read(&counterhal_system::System::host().sys_file("devices/system"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: PAPI 7.0's `path_sibling` (linux-common.c), which counts the bits of each hex
    /// digit of a sysfs mask, commas skipped.
    #[test]
    fn masks_count_their_bits() {
        assert_eq!(mask_bits("00000003\n"), 2);
        assert_eq!(mask_bits("ff,ffffffff"), 40);
        assert_eq!(mask_bits("00000000,00000001"), 1);
    }

    /// Oracle: lscpu's and PAPI 7.0's arithmetic on a fake sysfs tree of 4 CPUs, 2 threads a
    /// core, one node of 1 GB.
    #[test]
    fn a_fake_tree_reads_as_papi_reads_it() {
        let root = std::env::temp_dir().join(format!("papi-topology-{}", std::process::id()));
        for cpu in 0..4 {
            let dir = root.join(format!("cpu/cpu{cpu}"));
            std::fs::create_dir_all(dir.join("topology")).unwrap();
            std::fs::create_dir_all(dir.join("node0")).unwrap();
            std::fs::write(dir.join("topology/thread_siblings"), "3\n").unwrap();
            std::fs::write(dir.join("topology/core_siblings"), "f\n").unwrap();
        }
        std::fs::create_dir_all(root.join("node/node0")).unwrap();
        std::fs::write(
            root.join("node/node0/meminfo"),
            "Node 0 MemTotal:       1048576 kB\nNode 0 MemFree: 1 kB\n",
        )
        .unwrap();
        let t = read(&root);
        assert_eq!(
            (t.cpus, t.threads, t.cores, t.sockets, t.nodes),
            (4, 2, 2, 1, 1)
        );
        assert_eq!(t.node_memory_kib, vec![1_048_576]);
        assert_eq!(t.cpu_node, vec![0, 0, 0, 0]);
        let _ = std::fs::remove_dir_all(root);
    }
}
