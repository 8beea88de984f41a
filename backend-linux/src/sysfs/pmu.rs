//! One PMU's directory under `bus/event_source/devices`: its `type`, its other name (`alias`),
//! the CPUs it counts on (`cpumask`, `cpus`), its `caps/`, `format/` fields and `events/`
//! aliases.

use std::fs;
use std::path::{Path, PathBuf};

use counterhal_hal::{CpuList, Error, Result};

use super::alias::{self, Alias};
use super::format::FormatField;

/// A PMU's directory.
#[derive(Clone, Debug)]
pub struct Pmu {
    /// Its name (`cpu`, `msr`, `cpu_core`).
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Its `type` number.
    pub type_: u32,
}

impl Pmu {
    /// Opens `devices/<name>` and reads its type.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidEvent`] when there is no such PMU (the message lists
    /// the PMUs present).
    pub fn open(devices: &Path, name: &str) -> Result<Pmu> {
        match Pmu::named(devices, name) {
            Some(pmu) => Ok(pmu),
            None => {
                let present = list_pmus(devices).join(", ");
                let message = format!(
                    "no PMU `{name}` in {} (present: {present})",
                    devices.display()
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

    /// The PMU `devices/<name>`, or the one whose `alias` file says `name` (an uncore PMU's
    /// other name, `uncore_type_0_2` for `uncore_cha_2`, which perf takes alike); `None` when
    /// there is neither.
    pub fn named(devices: &Path, name: &str) -> Option<Pmu> {
        if name.is_empty() || name.contains(['.', '/']) {
            return None;
        }
        let at = |dir: &str| {
            let path = devices.join(dir);
            let type_ = fs::read_to_string(path.join("type")).ok()?;
            Some(Pmu {
                name: dir.to_string(),
                type_: type_.trim().parse().ok()?,
                dir: path,
            })
        };
        at(name).or_else(|| {
            list_pmus(devices)
                .iter()
                .filter_map(|dir| at(dir))
                .find(|pmu| pmu.alias_name().as_deref() == Some(name))
        })
    }

    /// Its other name, from its `alias` file (`uncore_type_0_2`), if it has one.
    pub fn alias_name(&self) -> Option<String> {
        fs::read_to_string(self.dir.join("alias"))
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    }

    /// The CPUs perf opens it on system-wide: its `cpumask` (an uncore PMU's one CPU per
    /// package, die or cache), else its `cpus` (a hybrid core PMU's), as perf's
    /// `pmu_cpumask` reads them; `None` for a PMU with neither (or an unreadable list).
    pub fn cpus(&self) -> Option<CpuList> {
        ["cpumask", "cpus"].iter().find_map(|file| {
            let text = fs::read_to_string(self.dir.join(file)).ok()?;
            text.trim().parse().ok()
        })
    }

    /// Its `caps/` files (`max_precise`, `pmu_name`, `branches`), name and contents, sorted.
    pub fn caps(&self) -> Vec<(String, String)> {
        let mut caps: Vec<(String, String)> = self
            .names_in("caps")
            .into_iter()
            .filter_map(|name| {
                let text = fs::read_to_string(self.dir.join("caps").join(&name)).ok()?;
                Some((name, text.trim().to_string()))
            })
            .collect();
        caps.sort();
        caps
    }

    /// The `format/<field>` file parsed, if it exists.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] for a malformed file.
    pub fn format(&self, field: &str) -> Result<Option<FormatField>> {
        if !is_plain_name(field) {
            return Ok(None);
        }
        match fs::read_to_string(self.dir.join("format").join(field)) {
            Ok(text) => FormatField::parse(&text).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// The `events/<alias>` file and its companions, if it exists; the name is matched in any
    /// case, as perf matches it (`CAS_COUNT_READ`).
    pub fn alias(&self, alias: &str) -> Option<Alias> {
        if !is_plain_name(alias) {
            return None;
        }
        let events = self.dir.join("events");
        Alias::read(&events, alias).or_else(|| {
            let name = self
                .alias_names()
                .into_iter()
                .find(|name| name.eq_ignore_ascii_case(alias))?;
            Alias::read(&events, &name)
        })
    }

    fn names_in(&self, sub: &str) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.dir.join(sub))
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| alias::is_alias_file(n))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The format field names.
    pub fn format_names(&self) -> Vec<String> {
        self.names_in("format")
    }

    /// The alias names (without `.scale`/`.unit` companions).
    pub fn alias_names(&self) -> Vec<String> {
        self.names_in("events")
    }
}

fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !name.starts_with('.')
}

/// The PMU names under `devices`, sorted.
pub fn list_pmus(devices: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(devices)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}
