//! One PMU's directory under `bus/event_source/devices`: its `type`, its other name (`alias`),
//! the CPUs it counts on (`cpumask`, `cpus`), its `caps/`, `format/` fields and `events/`
//! aliases.

use std::path::{Path, PathBuf};

use counterhal_hal::{CpuList, Error, Result};

use super::alias::{self, Alias};
use super::format::FormatField;
use super::tree::Tree;

/// A PMU's directory.
#[derive(Clone, Debug)]
pub struct Pmu {
    /// Its name (`cpu`, `msr`, `cpu_core`).
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Its `type` number.
    pub type_: u32,
    /// The sysfs tree it is read from (every file of it through [`Tree`]'s rules).
    tree: Tree,
}

impl Pmu {
    /// Opens `devices/<name>` and reads its type.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidEvent`] when there is no such PMU (the message lists
    /// the PMUs present).
    /// [`counterhal_hal::ErrorKind::InvalidInput`] when its `type` file breaks the tree's rules
    /// (it leads out of the tree, is no regular file, or is too long).
    pub fn open(devices: &Path, name: &str) -> Result<Pmu> {
        match Pmu::find(devices, name)? {
            Some(pmu) => Ok(pmu),
            None => {
                let present = list_pmus(devices).join(", ");
                let also = uncore_name(name)
                    .map(|uncore| format!(" or `{uncore}`"))
                    .unwrap_or_default();
                let message = format!(
                    "no PMU `{name}`{also} in {} (present: {present})",
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
    /// other name, `uncore_type_0_2` for `uncore_cha_2`, which perf takes alike), or either
    /// of those for `uncore_<name>` ([`uncore_name`]); `None` when there is none.
    pub fn named(devices: &Path, name: &str) -> Option<Pmu> {
        Pmu::find(devices, name).ok().flatten()
    }

    /// As [`Pmu::named`], with the refusal of a `type` file that breaks the tree's rules.
    fn find(devices: &Path, name: &str) -> Result<Option<Pmu>> {
        if name.is_empty() || name.contains(['.', '/']) {
            return Ok(None);
        }
        let tree = Tree::of(devices);
        for name in [Some(name.to_string()), uncore_name(name)]
            .into_iter()
            .flatten()
        {
            if let Some(pmu) = Pmu::at(&tree, devices, &name)? {
                return Ok(Some(pmu));
            }
            if let Some(pmu) = list_pmus(devices)
                .iter()
                .filter_map(|dir| Pmu::at(&tree, devices, dir).ok().flatten())
                .find(|pmu| pmu.alias_name().as_deref() == Some(name.as_str()))
            {
                return Ok(Some(pmu));
            }
        }
        Ok(None)
    }

    /// The PMU of directory `devices/<dir>`, where it has a `type` that reads as a number.
    fn at(tree: &Tree, devices: &Path, dir: &str) -> Result<Option<Pmu>> {
        let path = devices.join(dir);
        let Some(type_) = tree.read(&path.join("type"))? else {
            return Ok(None);
        };
        Ok(type_.trim().parse().ok().map(|type_| Pmu {
            name: dir.to_string(),
            type_,
            dir: path,
            tree: tree.clone(),
        }))
    }

    /// The text of its file `file` (`cpus`, `caps/slots`), trimmed, through the tree's rules;
    /// `None` where it has none.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] for a file that leads out of the tree, is
    /// no regular file or is too long.
    pub(crate) fn read(&self, file: &str) -> Result<Option<String>> {
        Ok(self
            .tree
            .read(&self.dir.join(file))?
            .map(|text| text.trim().to_string()))
    }

    /// Whether it has a regular file `file` (`cpus`, `format/thresh`) inside the tree.
    pub(crate) fn has_file(&self, file: &str) -> bool {
        self.tree.is_file(&self.dir.join(file))
    }

    /// Its other name, from its `alias` file (`uncore_type_0_2`), if it has one.
    pub fn alias_name(&self) -> Option<String> {
        self.read("alias").ok().flatten().filter(|t| !t.is_empty())
    }

    /// The CPUs perf opens it on system-wide: its `cpumask` (an uncore PMU's one CPU per
    /// package, die or cache), else its `cpus` (a hybrid core PMU's), as perf's
    /// `pmu_cpumask` reads them; `None` for a PMU with neither (or a list that does not
    /// parse).
    ///
    /// # Errors
    /// As [`Pmu::read`].
    pub fn cpus(&self) -> Result<Option<CpuList>> {
        for file in ["cpumask", "cpus"] {
            if let Some(list) = self.read(file)?.and_then(|text| text.parse().ok()) {
                return Ok(Some(list));
            }
        }
        Ok(None)
    }

    /// Its `caps/` files (`max_precise`, `pmu_name`, `branches`), name and contents, sorted
    /// (a file that breaks the tree's rules left out).
    pub fn caps(&self) -> Vec<(String, String)> {
        self.names_in("caps")
            .into_iter()
            .filter_map(|name| {
                let text = self.read(&format!("caps/{name}")).ok()??;
                Some((name, text))
            })
            .collect()
    }

    /// The `format/<field>` file parsed, if it exists.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] for a malformed file, or one that breaks
    /// the tree's rules.
    pub fn format(&self, field: &str) -> Result<Option<FormatField>> {
        if !is_plain_name(field) {
            return Ok(None);
        }
        let file = format!("format/{field}");
        match self.read(&file)? {
            Some(text) => FormatField::parse(&text)
                .map(Some)
                .map_err(|e| e.context(self.dir.join(file).display())),
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
        if !is_plain_name(alias) {
            return Ok(None);
        }
        let events = self.dir.join("events");
        if let Some(found) = Alias::read(&self.tree, &events, alias)? {
            return Ok(Some(found));
        }
        match self
            .alias_names()
            .into_iter()
            .find(|name| name.eq_ignore_ascii_case(alias))
        {
            Some(name) => Alias::read(&self.tree, &events, &name),
            None => Ok(None),
        }
    }

    fn names_in(&self, sub: &str) -> Vec<String> {
        self.tree
            .names(&self.dir.join(sub))
            .into_iter()
            .filter(|n| alias::is_alias_file(n))
            .collect()
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

/// The PMU names under `devices`, sorted (none where `devices` leads out of its tree).
pub fn list_pmus(devices: &Path) -> Vec<String> {
    Tree::of(devices).names(devices)
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
