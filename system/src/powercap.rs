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

impl RaplZone {
    /// Its directory, to name it.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its name (`name`: `package-0`, `core`, `dram`), where it can be read.
    pub fn name(&self) -> Option<String> {
        self.file("name").ok().flatten()
    }

    /// The text of its file `file` (`energy_uj`, `constraint_0_power_limit_uw`), trimmed;
    /// `None` where it has none or it cannot be read (`energy_uj` is root's alone since
    /// Linux 5.10).
    ///
    /// # Errors
    /// [`Refused`] where the file breaks the reading rule.
    pub fn file(&self, file: &str) -> Result<Option<String>, Refused> {
        self.tree.attribute(&self.dir.join(file))
    }

    /// Whether it has a file `file`, readable or not.
    pub fn has_file(&self, file: &str) -> bool {
        self.tree.exists(&self.dir.join(file))
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
        assert_eq!(package.file("energy_uj"), Ok(Some("12345".to_string())));
        assert!(package.has_file("energy_uj") && !package.has_file("enabled"));
        assert_eq!(package.file("enabled"), Ok(None));
        let dram = system.rapl_zone(0, Some(1)).unwrap();
        assert_eq!(dram.name().as_deref(), Some("dram"));
        assert!(system.rapl_zone(1, None).is_none());
        assert!(system.rapl_zone(0, Some(2)).is_none());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
