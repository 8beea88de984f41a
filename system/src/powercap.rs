//! The powercap class under sysfs (Documentation/ABI/testing/sysfs-class-powercap): the
//! energy counters and power limits of the RAPL zones.

use std::path::PathBuf;

use crate::System;

impl System {
    /// The powercap class (`class/powercap` under the sysfs root): one directory (a link) per
    /// zone.
    pub fn powercap(&self) -> PathBuf {
        self.sysfs.join("class/powercap")
    }

    /// The RAPL zone of package `socket` (`intel-rapl:S` in the powercap class, as the
    /// kernel's intel_rapl driver names it on Intel and AMD), or with `subzone` one of its
    /// subzones (`intel-rapl:S:C`: cores, uncore, DRAM).
    pub fn rapl_zone(&self, socket: u32, subzone: Option<u32>) -> PathBuf {
        self.powercap().join(match subzone {
            Some(sub) => format!("intel-rapl:{socket}:{sub}"),
            None => format!("intel-rapl:{socket}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: the kernel's sysfs-class-powercap ABI (`/sys/class/powercap/intel-rapl:0`,
    /// `intel-rapl:0:1`), laid out in a tree of the test's own: the zones are found under
    /// the root named.
    #[test]
    fn zones_lie_in_the_powercap_class() {
        let root = std::env::temp_dir().join(format!("counterhal-powercap-{}", std::process::id()));
        let zone = root.join("class/powercap/intel-rapl:0:1");
        std::fs::create_dir_all(&zone).unwrap();
        std::fs::create_dir_all(root.join("class/powercap/intel-rapl:0")).unwrap();
        std::fs::write(zone.join("name"), "dram\n").unwrap();
        let system = System::host().with_sysfs(&root);
        assert_eq!(system.powercap(), root.join("class/powercap"));
        assert!(system.rapl_zone(0, None).is_dir());
        assert_eq!(
            std::fs::read_to_string(system.rapl_zone(0, Some(1)).join("name")).unwrap(),
            "dram\n"
        );
        assert!(!system.rapl_zone(1, None).exists());
        assert_eq!(
            System::host().rapl_zone(2, Some(0)),
            std::path::Path::new("/sys/class/powercap/intel-rapl:2:0")
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
