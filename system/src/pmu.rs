//! The PMUs the kernel registered (`bus/event_source/devices` under sysfs,
//! Documentation/ABI/testing/sysfs-bus-event_source-devices*): each PMU's `type`, its other
//! name (`alias`), the CPUs it counts on (`cpumask`, or a hybrid core PMU's `cpus`), its
//! `caps/`, its `format/` fields and its `events/` aliases with their companions (`.scale`,
//! `.unit`, `.snapshot`, `.per-pkg`), every file read by the crate's rule: the tree may be
//! any machine's (`--sysfs DIR`).

use std::path::{Path, PathBuf};

use crate::cpus::parse_cpu_list;
use crate::roots::{PMU_DEVICES, System};
use crate::rule::{PAGE, Refused, Tree};

/// A PMU directory and the sysfs tree it is read in: `DIR/bus/event_source/devices` is read
/// in `DIR` (whose own links, `devices/msr -> ../../../devices/msr`, stay inside it), a bare
/// copy of a PMU directory in itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuDevices {
    devices: PathBuf,
    tree: Tree,
}

impl PmuDevices {
    /// The PMU directory `devices`, read in the sysfs tree above it (see [`PmuDevices`]).
    pub fn at(devices: &Path) -> PmuDevices {
        let root = match devices.ends_with(PMU_DEVICES) {
            true => devices.ancestors().nth(3).unwrap_or(devices),
            false => devices,
        };
        PmuDevices {
            devices: devices.to_path_buf(),
            tree: Tree::new(root, "sysfs"),
        }
    }

    /// The directory, to name it.
    pub fn path(&self) -> &Path {
        &self.devices
    }

    /// The root of the tree it is read in, resolved; `None` where it does not exist.
    pub fn tree_root(&self) -> Option<&Path> {
        self.tree.root()
    }

    /// The PMUs' directory names, sorted (none where the directory leads out of its tree).
    pub fn names(&self) -> Vec<String> {
        self.tree.names(&self.devices)
    }

    /// Whether it has a directory `name` inside its tree (`cpu_atom`, whether or not its `type`
    /// reads); `false` for a name that is no plain directory name.
    pub fn has(&self, name: &str) -> bool {
        is_plain_name(name) && matches!(self.tree.is_dir(&self.devices.join(name)), Ok(true))
    }

    /// The PMU of directory `name` (`cpu`, `uncore_imc_0`), where it has a `type` that reads
    /// as a number; `None` where it has none (or `name` is no plain directory name).
    ///
    /// # Errors
    /// [`Refused`] where its `type` file breaks the reading rule.
    pub fn device(&self, name: &str) -> Result<Option<PmuDevice>, Refused> {
        if !is_plain_name(name) {
            return Ok(None);
        }
        let dir = self.devices.join(name);
        let Some(type_) = self.tree.read(&dir.join("type"), PAGE)? else {
            return Ok(None);
        };
        Ok(type_.trim().parse().ok().map(|type_| PmuDevice {
            name: name.to_string(),
            type_,
            dir,
            tree: self.tree.clone(),
        }))
    }
}

/// One PMU's directory, its files read by the crate's rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuDevice {
    name: String,
    type_: u32,
    dir: PathBuf,
    tree: Tree,
}

/// One of a PMU's event aliases (`events/NAME`) as the kernel wrote it, with its companion
/// files: the text of each, trimmed, for the reader to judge (a perf backend checks the
/// terms parse and the scale is a number).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PmuAlias {
    /// Its name, as the file is named (`cas_count_read`).
    pub name: String,
    /// Its terms (`event=0x05,umask=0xcf`).
    pub terms: String,
    /// `NAME.scale` (`2.3283064365386962890625e-10`), where the file exists.
    pub scale: Option<String>,
    /// `NAME.unit` (`Joules`, `MiB`), where the file exists and is not empty.
    pub unit: Option<String>,
    /// Whether `NAME.snapshot` holds 1 (the count is a reading, not a sum).
    pub snapshot: bool,
    /// Whether `NAME.per-pkg` holds 1 (one count per package).
    pub per_pkg: bool,
}

impl PmuDevice {
    /// Its name (`cpu`, `msr`, `cpu_core`), its directory's.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its `type`, the number `perf_event_attr.type` names it by.
    pub fn type_(&self) -> u32 {
        self.type_
    }

    /// Its directory, to name it.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The text of its file `file` (`alias`, `caps/slots`, `format/event`), trimmed; `None`
    /// where it has none.
    ///
    /// # Errors
    /// [`Refused`] where the file breaks the reading rule.
    fn file(&self, file: &str) -> Result<Option<String>, Refused> {
        self.tree.attribute(&self.dir.join(file))
    }

    /// Its `caps/slots`: the topdown slots a core issues each cycle (Intel's core PMU since
    /// Ice Lake, `0x00000005` hexadecimal or decimal as the kernel writes it); `None` where it
    /// has none or it is no number.
    ///
    /// # Errors
    /// [`Refused`] where the file breaks the reading rule.
    pub fn slots(&self) -> Result<Option<u64>, Refused> {
        Ok(self
            .file("caps/slots")?
            .and_then(|text| match text.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => text.parse().ok(),
            }))
    }

    /// Its `rdpmc` (an x86 core PMU's): whether user space may read the counters, 0 never,
    /// 1 while an event is mapped, 2 always (Documentation/ABI/testing/sysfs-bus-event_source-devices-rdpmc);
    /// `None` where it has none or it is no number.
    ///
    /// # Errors
    /// [`Refused`] where the file breaks the reading rule.
    pub fn rdpmc(&self) -> Result<Option<u32>, Refused> {
        Ok(self.file("rdpmc")?.and_then(|text| text.parse().ok()))
    }

    /// Its `cpumask`: the CPUs an uncore PMU's events open on (one a package, die or cache);
    /// `None` where it has none (or a list that does not parse).
    ///
    /// # Errors
    /// [`Refused`] where the file breaks the reading rule.
    pub fn cpumask(&self) -> Result<Option<Vec<u32>>, Refused> {
        Ok(self.file("cpumask")?.and_then(|text| parse_cpu_list(&text)))
    }

    /// Its `cpus`: the CPUs of a core PMU of a hybrid or Arm system (`cpu_core`,
    /// `armv8_pmuv3_0`); `None` where it has none (or a list that does not parse).
    ///
    /// # Errors
    /// [`Refused`] where the file breaks the reading rule.
    pub fn core_cpus(&self) -> Result<Option<Vec<u32>>, Refused> {
        Ok(self.file("cpus")?.and_then(|text| parse_cpu_list(&text)))
    }

    /// Whether it lists the CPUs it counts on in a `cpus` file, as a core PMU of a hybrid
    /// machine (`cpu_core`, `cpu_atom`) or of an Arm one does: perf's test of a core PMU
    /// beside the name `cpu` (`is_pmu_core`), whether or not the list parses.
    pub fn lists_core_cpus(&self) -> bool {
        self.tree.is_file(&self.dir.join("cpus"))
    }

    /// Whether it has a `cpumask` file, as an uncore PMU has (its one CPU per package, die or
    /// cache), whether or not the list parses.
    pub fn has_cpumask(&self) -> bool {
        self.tree.is_file(&self.dir.join("cpumask"))
    }

    /// Whether its format has the field `field` (`format/thresh`, `format/rdpmc`); `false`
    /// for a name that is no plain file name.
    pub fn has_format(&self, field: &str) -> bool {
        is_plain_name(field) && self.tree.is_file(&self.dir.join("format").join(field))
    }

    /// Whether it has the event alias `name` (`events/slots`, named as the file is); `false`
    /// for a companion (`slots.scale`) and for a name that is no plain file name.
    pub fn has_alias(&self, name: &str) -> bool {
        is_plain_name(name)
            && !name.contains('.')
            && self.tree.is_file(&self.dir.join("events").join(name))
    }

    /// Its other name, from its `alias` file (`uncore_type_0_2`), where it has one.
    pub fn alias_name(&self) -> Option<String> {
        self.file("alias").ok().flatten().filter(|t| !t.is_empty())
    }

    /// The CPUs perf opens it on system-wide: its `cpumask` (an uncore PMU's one CPU per
    /// package, die or cache), else its `cpus` (a hybrid core PMU's), as perf's
    /// `pmu_cpumask` reads them; `None` for a PMU with neither (or a list that does not
    /// parse).
    ///
    /// # Errors
    /// [`Refused`] where either file breaks the reading rule.
    pub fn cpus(&self) -> Result<Option<Vec<u32>>, Refused> {
        match self.cpumask()? {
            Some(list) => Ok(Some(list)),
            None => self.core_cpus(),
        }
    }

    /// Its `caps/` files (`max_precise`, `pmu_name`, `branches`), name and contents, sorted
    /// (a file that breaks the reading rule left out).
    pub fn caps(&self) -> Vec<(String, String)> {
        self.names_in("caps")
            .into_iter()
            .filter_map(|name| {
                let text = self.file(&format!("caps/{name}")).ok()??;
                Some((name, text))
            })
            .collect()
    }

    /// The names of its `format/` fields, sorted.
    pub fn format_names(&self) -> Vec<String> {
        self.names_in("format")
    }

    /// The text of its `format/<field>` file (`config:0-7,32-35`), where it has one.
    ///
    /// # Errors
    /// [`Refused`] where the file breaks the reading rule.
    pub fn format(&self, field: &str) -> Result<Option<String>, Refused> {
        match is_plain_name(field) {
            true => self.file(&format!("format/{field}")),
            false => Ok(None),
        }
    }

    /// The names of its event aliases (`events/`, without the `.scale`, `.unit`,
    /// `.snapshot` and `.per-pkg` companions), sorted.
    pub fn alias_names(&self) -> Vec<String> {
        self.names_in("events")
    }

    /// Its event alias `name` (`events/<name>`) and its companions, where it has one (the
    /// name as the file is named; see [`PmuDevice::alias_names`]).
    ///
    /// # Errors
    /// [`Refused`] where a file of it breaks the reading rule.
    pub fn alias(&self, name: &str) -> Result<Option<PmuAlias>, Refused> {
        if !is_plain_name(name) {
            return Ok(None);
        }
        let file = |suffix: &str| self.file(&format!("events/{name}{suffix}"));
        let Some(terms) = file("")? else {
            return Ok(None);
        };
        let flag =
            |suffix: &str| -> Result<bool, Refused> { Ok(file(suffix)?.is_some_and(|t| t == "1")) };
        Ok(Some(PmuAlias {
            terms,
            scale: file(".scale")?,
            unit: file(".unit")?.filter(|u| !u.is_empty()),
            snapshot: flag(".snapshot")?,
            per_pkg: flag(".per-pkg")?,
            name: name.to_string(),
        }))
    }

    /// The file names in its directory `sub` that are no companions (no `.`), sorted.
    fn names_in(&self, sub: &str) -> Vec<String> {
        self.tree
            .names(&self.dir.join(sub))
            .into_iter()
            .filter(|name| !name.contains('.') && !name.is_empty())
            .collect()
    }
}

/// Whether `name` is a plain file name of a PMU's directory: letters, digits, `_`, `-` and
/// `.`, not starting with `.` (never `..` or a path).
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !name.starts_with('.')
}

impl System {
    /// The PMUs of the sysfs root `root` (`--sysfs DIR`), where its PMU directory is a
    /// directory inside `root`; `None` where `root` holds none.
    ///
    /// # Errors
    /// [`Refused`] where it leads out of `root` (a link to another tree: that tree is the root
    /// to name).
    pub fn pmus_under(root: &Path) -> Result<Option<PmuDevices>, Refused> {
        let devices = root.join(PMU_DEVICES);
        match Tree::new(root, "sysfs").is_dir(&devices)? {
            true => Ok(Some(PmuDevices::at(&devices))),
            false => Ok(None),
        }
    }

    /// The PMUs of this system: its PMU directory (`bus/event_source/devices` under the sysfs
    /// root, one directory per PMU the kernel registered,
    /// Documentation/ABI/testing/sysfs-bus-event_source-devices; or the one named by
    /// [`System::with_pmu_devices`]) and the tree it is read in.
    pub fn pmus(&self) -> PmuDevices {
        match &self.pmu_devices {
            Some(devices) => PmuDevices::at(devices),
            None => PmuDevices {
                devices: self.sysfs.join(PMU_DEVICES),
                tree: self.sys_tree(),
            },
        }
    }

    /// The PMU of directory `name` ([`PmuDevices::device`]), where this system has it and
    /// its `type` can be read.
    pub fn pmu(&self, name: &str) -> Option<PmuDevice> {
        self.pmus().device(name).ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs tree of the test's own whose `bus/event_source/devices` holds `files`.
    fn devices(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let under: Vec<(String, &str)> = files
            .iter()
            .map(|(file, text)| (format!("{PMU_DEVICES}/{file}"), *text))
            .collect();
        let files: Vec<(&str, &str)> = under.iter().map(|(f, t)| (f.as_str(), *t)).collect();
        crate::testing::tree(&format!("pmu-{name}"), &files)
    }

    /// A tree laid out as the kernel lays out a PMU (Sapphire Rapids' `uncore_imc_0`, the
    /// `msr` and `power` PMUs, drivers/perf and arch/x86/events): each fact comes from its
    /// file, under the root named.
    #[test]
    fn a_pmu_is_read_from_its_files() {
        let root = devices(
            "files",
            &[
                ("uncore_imc_0/type", "12\n"),
                ("uncore_imc_0/alias", "uncore_type_6_0\n"),
                ("uncore_imc_0/cpumask", "0,56\n"),
                ("uncore_imc_0/format/event", "config:0-7\n"),
                ("uncore_imc_0/format/umask", "config:8-15\n"),
                (
                    "uncore_imc_0/events/cas_count_read",
                    "event=0x05,umask=0xcf\n",
                ),
                ("uncore_imc_0/events/cas_count_read.scale", "64\n"),
                ("uncore_imc_0/events/cas_count_read.unit", "B\n"),
                ("msr/type", "8\n"),
                ("msr/events/therm", "event=0x07\n"),
                ("msr/events/therm.snapshot", "1\n"),
                ("cpu_core/type", "4\n"),
                ("cpu_core/cpus", "0-7\n"),
                ("cpu_core/caps/pmu_name", "alderlake_hybrid\n"),
                ("cpu_core/caps/max_precise", "3\n"),
                ("cpu_core/caps/slots", "0x00000008\n"),
                ("cpu_core/rdpmc", "2\n"),
                ("uncore_imc_0/caps/slots", "junk\n"),
                ("notype/format/event", "config:0-7\n"),
            ],
        );
        let system = System::host().with_sysfs(&root);
        let pmus = system.pmus();
        assert_eq!(pmus.names(), ["cpu_core", "msr", "notype", "uncore_imc_0"]);
        let imc = system.pmu("uncore_imc_0").unwrap();
        assert_eq!((imc.name(), imc.type_()), ("uncore_imc_0", 12));
        assert_eq!(imc.alias_name().as_deref(), Some("uncore_type_6_0"));
        assert_eq!(imc.cpus(), Ok(Some(vec![0, 56])));
        assert_eq!(imc.format_names(), ["event", "umask"]);
        assert_eq!(imc.format("umask"), Ok(Some("config:8-15".to_string())));
        assert_eq!(imc.format("../type"), Ok(None));
        assert_eq!(imc.alias_names(), ["cas_count_read"]);
        let cas = imc.alias("cas_count_read").unwrap().unwrap();
        assert_eq!(cas.terms, "event=0x05,umask=0xcf");
        assert_eq!(
            (cas.scale.as_deref(), cas.unit.as_deref()),
            (Some("64"), Some("B"))
        );
        assert!(!cas.snapshot && !cas.per_pkg);
        let therm = system.pmu("msr").unwrap().alias("therm").unwrap().unwrap();
        assert!(therm.snapshot && therm.scale.is_none());
        let core = system.pmu("cpu_core").unwrap();
        assert_eq!(core.cpus(), Ok(Some((0..8).collect())));
        assert_eq!(core.core_cpus(), core.cpus());
        assert_eq!((core.cpumask(), imc.core_cpus()), (Ok(None), Ok(None)));
        assert_eq!(imc.cpumask(), imc.cpus());
        assert!(core.lists_core_cpus() && !core.has_cpumask());
        assert!(imc.has_cpumask() && !imc.lists_core_cpus());
        assert!(imc.has_format("umask") && !imc.has_format("thresh"));
        assert!(!imc.has_format("../type") && !core.has_format("pmu_name"));
        assert!(imc.has_alias("cas_count_read") && !imc.has_alias("cas_count_read.scale"));
        assert!(!imc.has_alias("../type") && !imc.has_alias("cas_count_write"));
        // caps/slots as perf 6.12's arm64 `perf_pmu__cpu_slots_per_cycle` reads it
        // (filename__read_ull), written `0x%08x` by the arm_pmuv3 driver.
        assert_eq!(core.slots(), Ok(Some(8)));
        assert_eq!((core.rdpmc(), imc.rdpmc()), (Ok(Some(2)), Ok(None)));
        assert_eq!(imc.slots(), Ok(None), "no number");
        assert_eq!(
            core.caps(),
            [
                ("max_precise".to_string(), "3".to_string()),
                ("pmu_name".to_string(), "alderlake_hybrid".to_string()),
                ("slots".to_string(), "0x00000008".to_string())
            ]
        );
        assert_eq!(system.pmu("msr").unwrap().cpus(), Ok(None));
        assert!(system.pmu("notype").is_none());
        assert!(pmus.has("notype") && pmus.has("msr"));
        assert!(!pmus.has("absent") && !pmus.has("msr/type") && !pmus.has(".."));
        assert!(system.pmu("..").is_none());
        assert_eq!(
            System::pmus_under(&root).map(|pmus| pmus.map(|p| p.names())),
            Ok(Some(pmus.names()))
        );
        assert_eq!(System::pmus_under(&root.join("none")), Ok(None));
        // The same PMUs through a PMU directory named alone, and a bare copy of one.
        let named = System::host().with_pmu_devices(root.join(PMU_DEVICES));
        assert_eq!(named.pmus().names(), pmus.names());
        let bare = PmuDevices::at(&root.join(PMU_DEVICES).join("msr"));
        assert_eq!(bare.names(), ["events", "type"]);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A PMU directory that links out of its tree is refused, and so is a PMU file that does;
    /// a PMU linked inside the tree (as the kernel links each into `devices/`) is read.
    /// Oracle: the kernel's layout (`bus/event_source/devices/msr -> ../../../devices/msr`).
    #[cfg(unix)]
    #[test]
    fn links_are_followed_only_inside_the_tree() {
        let root = devices("links", &[]);
        std::fs::create_dir_all(root.join("devices/msr")).unwrap();
        std::fs::write(root.join("devices/msr/type"), "8\n").unwrap();
        let outside = std::env::temp_dir().join(format!(
            "counterhal-system-pmu-outside-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(outside.join("cpu")).unwrap();
        std::fs::write(outside.join("cpu/type"), "4\n").unwrap();
        std::fs::write(outside.join("secret"), "secret\n").unwrap();
        let devices = root.join(PMU_DEVICES);
        std::fs::create_dir_all(&devices).unwrap();
        std::os::unix::fs::symlink("../../../devices/msr", devices.join("msr")).unwrap();
        std::os::unix::fs::symlink(outside.join("cpu"), devices.join("cpu")).unwrap();
        std::fs::create_dir_all(devices.join("power")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), devices.join("power/type")).unwrap();
        let system = System::host().with_sysfs(&root);
        assert_eq!(system.pmu("msr").map(|p| p.type_()), Some(8));
        assert!(system.pmus().device("cpu").is_err());
        let refused = system.pmus().device("power").unwrap_err();
        assert!(refused.to_string().contains("leads out of the sysfs tree"));
        let linked = std::env::temp_dir().join(format!(
            "counterhal-system-pmu-linked-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(linked.join("bus/event_source")).unwrap();
        std::os::unix::fs::symlink(&outside, linked.join(PMU_DEVICES)).unwrap();
        assert!(System::pmus_under(&linked).is_err());
        for dir in [root, outside, linked] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
