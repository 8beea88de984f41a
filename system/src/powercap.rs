//! The powercap class under sysfs (Documentation/ABI/testing/sysfs-class-powercap): the
//! energy counters and power limits of the RAPL zones.

use std::path::{Path, PathBuf};

use crate::roots::System;
use crate::rule::{Refused, Tree};

/// One RAPL zone of the powercap class (`class/powercap/intel-rapl:S[:C]`), its files read by
/// the crate's rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaplZone {
    dir: PathBuf,
    tree: Tree,
}

/// One file of a RAPL zone (Documentation/ABI/testing/sysfs-class-powercap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RaplAttribute {
    /// Its name (`name`: `package-0`, `core`, `dram`).
    Name,
    /// Whether it is enabled (`enabled`: 0 or 1).
    Enabled,
    /// Its energy counter in microjoules (`energy_uj`, root's alone since Linux 5.10).
    Energy,
    /// The value its energy counter wraps at (`max_energy_range_uj`).
    MaxEnergyRange,
    /// A power limit's most power (`constraint_N_max_power_uw`; 0 the long term, 1 the short).
    MaxPower(u8),
    /// A power limit (`constraint_N_power_limit_uw`).
    PowerLimit(u8),
    /// A power limit's time window (`constraint_N_time_window_us`).
    TimeWindow(u8),
}

impl RaplAttribute {
    /// Its file's name (`energy_uj`, `constraint_0_power_limit_uw`).
    fn file_name(self) -> String {
        match self {
            RaplAttribute::Name => "name".to_string(),
            RaplAttribute::Enabled => "enabled".to_string(),
            RaplAttribute::Energy => "energy_uj".to_string(),
            RaplAttribute::MaxEnergyRange => "max_energy_range_uj".to_string(),
            RaplAttribute::MaxPower(n) => format!("constraint_{n}_max_power_uw"),
            RaplAttribute::PowerLimit(n) => format!("constraint_{n}_power_limit_uw"),
            RaplAttribute::TimeWindow(n) => format!("constraint_{n}_time_window_us"),
        }
    }
}

impl RaplZone {
    /// Its directory, to name it.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its name (`name`: `package-0`, `core`, `dram`), where it can be read.
    pub fn name(&self) -> Option<String> {
        self.attribute(RaplAttribute::Name).ok().flatten()
    }

    /// The text of its file `attribute`, trimmed; `None` where it has none or it cannot be
    /// read (`energy_uj` is root's alone since Linux 5.10).
    ///
    /// # Errors
    /// [`Refused`] where the file breaks the reading rule.
    pub fn attribute(&self, attribute: RaplAttribute) -> Result<Option<String>, Refused> {
        self.tree.attribute(&self.dir.join(attribute.file_name()))
    }

    /// Whether it has the file `attribute`, readable or not.
    pub fn has(&self, attribute: RaplAttribute) -> bool {
        self.tree.exists(&self.dir.join(attribute.file_name()))
    }
}

impl System {
    /// The RAPL zone of package `socket` (`intel-rapl:S` in the powercap class, as the
    /// kernel's intel_rapl driver names it on Intel and AMD), or with `subzone` one of its
    /// subzones (`intel-rapl:S:C`: cores, uncore, DRAM); `None` where there is none.
    pub fn rapl_zone(&self, socket: u32, subzone: Option<u32>) -> Option<RaplZone> {
        let name = match subzone {
            Some(sub) => format!("intel-rapl:{socket}:{sub}"),
            None => format!("intel-rapl:{socket}"),
        };
        let tree = self.sys_tree();
        let dir = self.sysfs.join("class/powercap").join(name);
        tree.is_dir(&dir)
            .unwrap_or(false)
            .then_some(RaplZone { dir, tree })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: the kernel's sysfs-class-powercap ABI (`/sys/class/powercap/intel-rapl:0`,
    /// `intel-rapl:0:1`, each a link into `devices/virtual/powercap`), laid out in a tree of
    /// the test's own: the zones are found under the root named, their files read there.
    #[cfg(unix)]
    #[test]
    fn zones_lie_in_the_powercap_class() {
        let root = std::env::temp_dir().join(format!("counterhal-powercap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let real = root.join("devices/virtual/powercap/intel-rapl/intel-rapl:0");
        std::fs::create_dir_all(real.join("intel-rapl:0:1")).unwrap();
        std::fs::create_dir_all(root.join("class/powercap")).unwrap();
        std::os::unix::fs::symlink(&real, root.join("class/powercap/intel-rapl:0")).unwrap();
        std::os::unix::fs::symlink(
            real.join("intel-rapl:0:1"),
            root.join("class/powercap/intel-rapl:0:1"),
        )
        .unwrap();
        std::fs::write(real.join("name"), "package-0\n").unwrap();
        std::fs::write(real.join("energy_uj"), "12345\n").unwrap();
        std::fs::write(real.join("intel-rapl:0:1/name"), "dram\n").unwrap();
        let system = System::host().with_sysfs(&root);
        let package = system.rapl_zone(0, None).unwrap();
        assert_eq!(package.name().as_deref(), Some("package-0"));
        let energy = package.attribute(RaplAttribute::Energy);
        assert_eq!(energy, Ok(Some("12345".to_string())));
        assert!(package.has(RaplAttribute::Energy) && !package.has(RaplAttribute::Enabled));
        assert_eq!(package.attribute(RaplAttribute::Enabled), Ok(None));
        assert_eq!(
            RaplAttribute::PowerLimit(1).file_name(),
            "constraint_1_power_limit_uw"
        );
        let dram = system.rapl_zone(0, Some(1)).unwrap();
        assert_eq!(dram.name().as_deref(), Some("dram"));
        assert!(system.rapl_zone(1, None).is_none());
        assert!(system.rapl_zone(0, Some(2)).is_none());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
