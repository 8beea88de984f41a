//! Where a CPU sits: its socket and die, as sysfs gives them (`topology/physical_package_id`
//! and `topology/die_id` of its directory: drivers/base/topology.c,
//! Documentation/admin-guide/cputopology.rst).

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
}

impl System {
    /// CPU `cpu`'s socket and die, from its `topology` directory under the sysfs root;
    /// each `None` where it cannot be read (an offline CPU, an older kernel, another tree).
    pub fn cpu_topology(&self, cpu: u32) -> CpuTopology {
        let topology = self.cpu(cpu).join("topology");
        CpuTopology {
            socket: id(&topology.join("physical_package_id")),
            die: id(&topology.join("die_id")),
        }
    }
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
}
