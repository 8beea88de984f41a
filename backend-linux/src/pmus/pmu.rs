//! One PMU's directory under `bus/event_source/devices`: its `type`, its other name (`alias`),
//! the CPUs it counts on (`cpumask`, `cpus`), its `caps/`, `format/` fields and `events/`
//! aliases.

use std::path::PathBuf;

use counterhal_hal::{CpuList, Error, Result};
use counterhal_system::{PmuDevice, PmuDevices};

use super::alias::Alias;
use super::format::FormatField;
use super::refused::refused;

/// A PMU's directory.
#[derive(Clone, Debug)]
pub struct Pmu {
    /// Its name (`cpu`, `msr`, `cpu_core`).
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Its `type` number.
    pub type_: u32,
    /// Its files, read by the system's rule (`counterhal_system::Refused`).
    device: PmuDevice,
}

impl Pmu {
    /// Opens the PMU `<name>` of `devices` and reads its type.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidEvent`] when there is no such PMU (the message lists
    /// the PMUs present).
    /// [`counterhal_hal::ErrorKind::InvalidInput`] when its `type` file breaks the tree's rules
    /// (it leads out of the tree, is no regular file, or is too long).
    pub fn open(devices: &PmuDevices, name: &str) -> Result<Pmu> {
        match Pmu::find(devices, name)? {
            Some(pmu) => Ok(pmu),
            None => {
                let present = list_pmus(devices).join(", ");
                let also = uncore_name(name)
                    .map(|uncore| format!(" or `{uncore}`"))
                    .unwrap_or_default();
                let message = format!(
                    "no PMU `{name}`{also} in {} (present: {present})",
                    devices.path().display()
                );
                // The core PMU's names are real PMUs this machine lacks: the same cause as a
                // raw code on a machine without hardware counters, so the same kind. Any other
                // name is a misspelling until shown otherwise.
                if name == "cpu" || name.starts_with("cpu_") {
                    Err(Error::unsupported(message).with_hint(
                        "this machine exposes no hardware counters (a VM or container without \
                         a virtual PMU)",
                    ))
                } else {
                    Err(Error::invalid_event(message)
                        .with_hint("`ls /sys/bus/event_source/devices` lists the PMUs here"))
                }
            }
        }
    }

    /// The PMU `<name>` of `devices`, or the one whose `alias` file says `name` (an uncore PMU's
    /// other name, `uncore_type_0_2` for `uncore_cha_2`, which perf takes alike), or either
    /// of those for `uncore_<name>` ([`uncore_name`]); `None` when there is none.
    pub fn named(devices: &PmuDevices, name: &str) -> Option<Pmu> {
        Pmu::find(devices, name).ok().flatten()
    }

    /// As [`Pmu::named`], with the refusal of a `type` file that breaks the tree's rules.
    fn find(devices: &PmuDevices, name: &str) -> Result<Option<Pmu>> {
        if name.is_empty() || name.contains(['.', '/']) {
            return Ok(None);
        }
        for name in [Some(name.to_string()), uncore_name(name)]
            .into_iter()
            .flatten()
        {
            if let Some(pmu) = Pmu::at(devices, &name)? {
                return Ok(Some(pmu));
            }
            if let Some(pmu) = devices
                .names()
                .iter()
                .filter_map(|dir| Pmu::at(devices, dir).ok().flatten())
                .find(|pmu| pmu.alias_name().as_deref() == Some(name.as_str()))
            {
                return Ok(Some(pmu));
            }
        }
        Ok(None)
    }

    /// The PMU of directory `<dir>` of `pmus`, where it has a `type` that reads as a number.
    fn at(pmus: &PmuDevices, dir: &str) -> Result<Option<Pmu>> {
        Ok(pmus.device(dir).map_err(refused)?.map(Pmu::of))
    }

    /// The PMU of the system's `device`.
    pub(crate) fn of(device: PmuDevice) -> Pmu {
        Pmu {
            name: device.name().to_string(),
            type_: device.type_(),
            dir: device.dir().to_path_buf(),
            device,
        }
    }

    /// Its files, as the system reads them.
    #[cfg(test)]
    pub(crate) fn device(&self) -> &PmuDevice {
        &self.device
    }

    /// Its `cpus` (a hybrid or Arm core PMU's CPUs), through the tree's rules; `None` where it
    /// has none.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] for a file that leads out of the tree, is
    /// no regular file or is too long.
    pub(crate) fn core_cpus(&self) -> Result<Option<Vec<u32>>> {
        self.device.core_cpus().map_err(refused)
    }

    /// Whether it lists its CPUs in a `cpus` file (a hybrid or Arm core PMU).
    pub(crate) fn lists_core_cpus(&self) -> bool {
        self.device.lists_core_cpus()
    }

    /// Whether it has the event alias `name` (`events/slots`), named as the file is.
    pub(crate) fn has_alias(&self, name: &str) -> bool {
        self.device.has_alias(name)
    }

    /// Its other name, from its `alias` file (`uncore_type_0_2`), if it has one.
    pub fn alias_name(&self) -> Option<String> {
        self.device.alias_name()
    }

    /// The CPUs perf opens it on system-wide: its `cpumask` (an uncore PMU's one CPU per
    /// package, die or cache), else its `cpus` (a hybrid core PMU's), as perf's
    /// `pmu_cpumask` reads them; `None` for a PMU with neither (or a list that does not
    /// parse).
    ///
    /// # Errors
    /// As [`Pmu::core_cpus`].
    pub fn cpus(&self) -> Result<Option<CpuList>> {
        let cpus = self.device.cpus().map_err(refused)?;
        Ok(cpus.map(CpuList::from_cpus))
    }

    /// Its `caps/` files (`max_precise`, `pmu_name`, `branches`), name and contents, sorted
    /// (a file that breaks the tree's rules left out).
    pub fn caps(&self) -> Vec<(String, String)> {
        self.device.caps()
    }

    /// The `format/<field>` file parsed, if it exists.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] for a malformed file, or one that breaks
    /// the tree's rules.
    pub fn format(&self, field: &str) -> Result<Option<FormatField>> {
        match self.device.format(field).map_err(refused)? {
            Some(text) => FormatField::parse(&text)
                .map(Some)
                .map_err(|e| e.context(self.dir.join("format").join(field).display())),
            None => Ok(None),
        }
    }

    /// The `events/<alias>` file and its companions, if it exists; the name is matched in any
    /// case, as perf matches it (`CAS_COUNT_READ`).
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] for an alias whose files break the tree's
    /// rules or hold what no kernel writes there ([`Alias`]).
    pub fn alias(&self, alias: &str) -> Result<Option<Alias>> {
        if let Some(found) = Alias::read(&self.device, alias)? {
            return Ok(Some(found));
        }
        match self
            .alias_names()
            .into_iter()
            .find(|name| name.eq_ignore_ascii_case(alias))
        {
            Some(name) => Alias::read(&self.device, &name),
            None => Ok(None),
        }
    }

    /// The format field names.
    pub fn format_names(&self) -> Vec<String> {
        self.device.format_names()
    }

    /// The alias names (without `.scale`/`.unit` companions).
    pub fn alias_names(&self) -> Vec<String> {
        self.device.alias_names()
    }
}

/// Whether PMU `pmu` of `devices` is one (its `type` reads) of which `holds` is true.
pub(crate) fn pmu_is(devices: &PmuDevices, pmu: &str, holds: fn(&PmuDevice) -> bool) -> bool {
    devices
        .device(pmu)
        .ok()
        .flatten()
        .is_some_and(|device| holds(&device))
}

/// The PMU names of `devices`, sorted (none where its directory leads out of its tree).
pub fn list_pmus(devices: &PmuDevices) -> Vec<String> {
    devices.names()
}

/// The name perf also tries for a PMU named `name`: `uncore_<name>`, for a name that is no
/// core PMU's and lacks the prefix. perf ignores the `uncore_` prefix when it matches a PMU
/// (tools/perf/util/pmu.c of Linux 7.2, `perf_pmu__wildcard_match`), so the metric tables
/// name Haswell-EP's `uncore_cbox_0` as `cbox_0` and Sapphire Rapids' `uncore_cha_0` as
/// `cha_0`.
fn uncore_name(name: &str) -> Option<String> {
    let core = name == "cpu" || name.starts_with("cpu_") || name.starts_with("armv");
    (!core && !name.starts_with("uncore_")).then(|| format!("uncore_{name}"))
}
