//! Dynamic PMUs from `/sys/bus/event_source/devices`: their `type`, their `format/` fields
//! (`config:0-7,32-35`) and their `events/` aliases (`event=0x3c,umask=0x01`), and the
//! `pmu/term=value,alias/` event syntax built on them.

use std::fs;
use std::path::{Path, PathBuf};

use counterhal_events::parse_term_list;
use counterhal_hal::{CpuList, Domain, Error, PerfAttr, Result};

/// Where the kernel lists its PMUs.
pub const DEFAULT_DEVICES: &str = "/sys/bus/event_source/devices";

/// Which attr word a format field lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigWord {
    /// `config`.
    Config,
    /// `config1`.
    Config1,
    /// `config2`.
    Config2,
    /// `config3`.
    Config3,
}

impl ConfigWord {
    fn from_name(name: &str) -> Option<ConfigWord> {
        match name {
            "config" => Some(ConfigWord::Config),
            "config1" => Some(ConfigWord::Config1),
            "config2" => Some(ConfigWord::Config2),
            "config3" => Some(ConfigWord::Config3),
            _ => None,
        }
    }

    fn slot(self, encoding: &mut PerfAttr) -> &mut u64 {
        match self {
            ConfigWord::Config => &mut encoding.config,
            ConfigWord::Config1 => &mut encoding.config1,
            ConfigWord::Config2 => &mut encoding.config2,
            ConfigWord::Config3 => &mut encoding.config3,
        }
    }
}

/// One `format/<name>` file: which bits of which word a field occupies, lowest value bit first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatField {
    /// The attr word.
    pub word: ConfigWord,
    /// Inclusive bit ranges, in the order the value's bits fill them.
    pub ranges: Vec<(u32, u32)>,
}

impl FormatField {
    /// Parses `config:0-7,32-35` or `config1:21`.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] naming what is malformed.
    pub fn parse(text: &str) -> Result<FormatField> {
        let text = text.trim();
        let bad = |why: &str| {
            Error::invalid_input(format!("malformed PMU format `{text}`: {why}"))
                .with_hint("expected e.g. `config:0-7,32-35`")
        };
        let (word, bits) = text.split_once(':').ok_or_else(|| bad("no `:`"))?;
        let word = ConfigWord::from_name(word).ok_or_else(|| bad("unknown word"))?;
        let mut ranges = Vec::new();
        for part in bits.split(',') {
            let (low, high) = match part.split_once('-') {
                Some((l, h)) => (l, h),
                None => (part, part),
            };
            let low: u32 = low.trim().parse().map_err(|_| bad("bad bit number"))?;
            let high: u32 = high.trim().parse().map_err(|_| bad("bad bit number"))?;
            if low > high || high > 63 {
                return Err(bad("bit range out of 0..=63"));
            }
            ranges.push((low, high));
        }
        Ok(FormatField { word, ranges })
    }

    /// How many value bits the field holds.
    pub fn width(&self) -> u32 {
        self.ranges.iter().map(|(l, h)| h - l + 1).sum()
    }

    /// Places `value` into the field's bits of `encoding`.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidEvent`] when `value` needs more bits than the field.
    pub fn apply(&self, name: &str, value: u64, encoding: &mut PerfAttr) -> Result<()> {
        let width = self.width();
        if width < 64 && value >> width != 0 {
            return Err(Error::invalid_event(format!(
                "value {value:#x} does not fit field `{name}` ({width} bits)"
            ))
            .with_hint(format!(
                "the largest value for `{name}` is {:#x}",
                (1u64 << width) - 1
            )));
        }
        let slot = self.word.slot(encoding);
        let mut rest = value;
        for (low, high) in &self.ranges {
            let bits = high - low + 1;
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            *slot = (*slot & !(mask << low)) | ((rest & mask) << low);
            rest = if bits == 64 { 0 } else { rest >> bits };
        }
        Ok(())
    }
}

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
        let dir = devices.join(name);
        let type_ = fs::read_to_string(dir.join("type"))
            .ok()
            .and_then(|t| t.trim().parse().ok());
        match type_ {
            Some(type_) if !name.contains(['.', '/']) => Ok(Pmu {
                name: name.to_string(),
                dir,
                type_,
            }),
            _ => {
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

    /// The `events/<alias>` file's terms, if it exists.
    pub fn alias(&self, alias: &str) -> Option<String> {
        if !is_plain_name(alias) {
            return None;
        }
        fs::read_to_string(self.dir.join("events").join(alias))
            .ok()
            .map(|t| t.trim().to_string())
    }

    fn names_in(&self, sub: &str) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.dir.join(sub))
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.contains('.'))
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

/// Every PMU's event aliases under `devices`, as `pmu/alias/` with the PMU and its terms
/// (`msr/tsc/`, "msr PMU: event=0x00"), PMU by PMU, sorted.
pub fn aliases(devices: &Path) -> Vec<(String, String)> {
    let mut events = Vec::new();
    for name in list_pmus(devices) {
        let Ok(pmu) = Pmu::open(devices, &name) else {
            continue;
        };
        for alias in pmu.alias_names() {
            let terms = pmu.alias(&alias).unwrap_or_default();
            events.push((format!("{name}/{alias}/"), format!("{name} PMU: {terms}")));
        }
    }
    events
}

/// The core (CPU) PMUs, found by what they are, as perf's `is_pmu_core` finds them: `cpu`, or
/// any PMU with a `cpus` file (the CPUs it counts on). That is `cpu` on most x86 machines,
/// `cpu_core` and `cpu_atom` on hybrid Intel chips, `armv8_pmuv3` or one PMU per core type
/// (`armv8_cortex_a53`, `armv8_cortex_a72`) on Arm; uncore PMUs have a `cpumask` instead.
pub fn core_pmus(devices: &Path) -> Vec<Pmu> {
    list_pmus(devices)
        .into_iter()
        .filter(|name| name == "cpu" || devices.join(name).join("cpus").is_file())
        .filter_map(|name| Pmu::open(devices, &name).ok())
        .collect()
}

/// The core PMUs of a hybrid CPU among `cores` (as [`core_pmus`] lists them): more than one,
/// Intel's `cpu_core` and `cpu_atom` or a big.LITTLE Arm system's one per core type; else
/// empty.
pub fn hybrid_of(cores: Vec<Pmu>) -> Vec<Pmu> {
    let pmus: Vec<Pmu> = cores.into_iter().filter(|p| p.name != "cpu").collect();
    if pmus.len() > 1 { pmus } else { Vec::new() }
}

/// Applies perf's event modifier letters after the closing `/` (`u`, `k`, `h`, `G`, `H`).
///
/// # Errors
/// [`counterhal_hal::ErrorKind::InvalidEvent`] for an unknown letter.
pub fn apply_modifiers(event: &str, modifiers: &str, encoding: &mut PerfAttr) -> Result<()> {
    if modifiers.is_empty() {
        return Ok(());
    }
    let mut levels = Domain::NONE;
    let mut contexts = Domain::NONE;
    for letter in modifiers.chars() {
        match letter {
            'u' => levels |= Domain::USER,
            'k' => levels |= Domain::KERNEL,
            'h' => levels |= Domain::HYPERVISOR,
            'G' => contexts |= Domain::GUEST,
            'H' => contexts |= Domain::HOST,
            _ => {
                return Err(Error::invalid_event(format!(
                    "{event}: unknown modifier `{letter}`"
                ))
                .with_hint("modifiers are u (user), k (kernel), h (hypervisor), G (guest), H (host)"));
            }
        }
    }
    let mut domain = encoding.domain;
    if !levels.is_empty() {
        domain = domain.with_levels(levels);
    }
    if !contexts.is_empty() {
        domain = domain
            .difference(Domain::GUEST | Domain::HOST)
            .intersection(Domain::ALL)
            | contexts;
    }
    encoding.domain = domain;
    Ok(())
}

/// Parses `pmu/term[=value],.../[modifiers]` against the PMU's sysfs files.
///
/// A bare term is an `events/` alias, or a format field set to 1. `config`, `config1`,
/// `config2` and `config3` may be given directly.
///
/// # Errors
/// [`counterhal_hal::ErrorKind::InvalidEvent`] for an unknown PMU, term or alias, a value too
/// wide for its field, a term given twice, or a malformed string.
pub fn parse_pmu_event(devices: &Path, event: &str) -> Result<PerfAttr> {
    let malformed = || {
        Error::invalid_event(format!("malformed PMU event `{event}`"))
            .with_hint("write pmu/term=value,.../ e.g. cpu/event=0xc0,umask=0x0/ or msr/tsc/")
    };
    let (pmu_name, rest) = event.split_once('/').ok_or_else(malformed)?;
    let (terms, modifiers) = rest.rsplit_once('/').ok_or_else(malformed)?;
    if pmu_name.is_empty() || terms.contains('/') {
        return Err(malformed());
    }
    let pmu = Pmu::open(devices, pmu_name)?;
    let mut encoding = PerfAttr::new(pmu.type_, 0);
    encoding.pmu = Some(pmu.name.clone());
    let mut seen: Vec<String> = Vec::new();
    apply_terms(&pmu, event, terms, &mut encoding, &mut seen, true)?;
    apply_modifiers(event, modifiers, &mut encoding)?;
    Ok(encoding)
}

fn apply_terms(
    pmu: &Pmu,
    event: &str,
    terms: &str,
    encoding: &mut PerfAttr,
    seen: &mut Vec<String>,
    allow_alias: bool,
) -> Result<()> {
    let parsed = parse_term_list(terms).map_err(|e| {
        Error::from(e)
            .context(event)
            .with_hint("values are decimal or 0x-prefixed hexadecimal")
    })?;
    for (name, value) in parsed {
        let name = name.as_str();
        if seen.iter().any(|s| s == name) {
            return Err(Error::invalid_event(format!(
                "{event}: `{name}` given twice"
            )));
        }
        if value.is_none()
            && allow_alias
            && let Some(alias) = pmu.alias(name)
        {
            seen.push(name.to_string());
            apply_terms(pmu, event, &alias, encoding, seen, false)?;
            continue;
        }
        seen.push(name.to_string());
        let value = value.unwrap_or(1);
        if let Some(word) = ConfigWord::from_name(name) {
            *word.slot(encoding) = value;
            continue;
        }
        match pmu.format(name)? {
            Some(field) => field.apply(name, value, encoding)?,
            None => {
                let formats = pmu.format_names().join(", ");
                let aliases = pmu.alias_names().join(", ");
                return Err(Error::invalid_event(format!(
                    "{event}: PMU `{}` has no term `{name}`",
                    pmu.name
                ))
                .with_hint(format!("format fields: [{formats}]; events: [{aliases}]")));
            }
        }
    }
    Ok(())
}

/// Whether `cpu` is online, from `/sys/devices/system/cpu/online`; `None` when unreadable.
pub fn cpu_online(cpu: u32) -> Option<bool> {
    let list = fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    list.parse::<CpuList>().ok().map(|list| list.contains(cpu))
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_hal::ErrorKind;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name)
    }

    #[test]
    fn format_fields() {
        let f = FormatField::parse("config:0-7,32-35\n").unwrap();
        assert_eq!(f.word, ConfigWord::Config);
        assert_eq!(f.ranges, vec![(0, 7), (32, 35)]);
        assert_eq!(f.width(), 12);
        let mut e = PerfAttr::new(4, 0);
        f.apply("event", 0x1c0, &mut e).unwrap();
        assert_eq!(e.config, 0xc0 | (0x1 << 32));
        let err = f.apply("event", 0x1000, &mut e).unwrap_err();
        assert!(err.to_string().contains("12 bits"), "{err}");

        let single = FormatField::parse("config1:21").unwrap();
        let mut e = PerfAttr::new(4, 0);
        single.apply("edge", 1, &mut e).unwrap();
        assert_eq!(e.config1, 1 << 21);
        // The kernel's umask where the PMU has UMASK2: perf's `umask=0x320` is unit mask
        // 0x20 with second byte 0x03.
        let umask2 = FormatField::parse("config:8-15,40-47").unwrap();
        let mut e = PerfAttr::new(4, 0);
        umask2.apply("umask", 0x320, &mut e).unwrap();
        assert_eq!(e.config, 0x0300_0000_2000);
        let full = FormatField::parse("config:0-63").unwrap();
        full.apply("event", u64::MAX, &mut e).unwrap();
        assert_eq!(e.config, u64::MAX);

        for bad in ["config", "conf:1", "config:9-3", "config:0-64", "config:x"] {
            assert!(FormatField::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pmu_events_from_a_fixture_tree() {
        let devices = fixture("sysfs-hybrid");
        let e = parse_pmu_event(&devices, "cpu_core/event=0xc0,umask=0x1/").unwrap();
        assert_eq!((e.type_, e.config), (4, 0x1c0));
        assert_eq!(e.pmu.as_deref(), Some("cpu_core"));
        let e = parse_pmu_event(&devices, "cpu_core/topdown-retiring/").unwrap();
        assert_eq!(e.config, 0x8000);
        let e = parse_pmu_event(&devices, "cpu_core/inst-retired,cmask=2,edge/u").unwrap();
        assert_eq!(e.config, 0xc0 | (2 << 24) | (1 << 18));
        assert_eq!(e.domain, Domain::DEFAULT.with_levels(Domain::USER));
        let e = parse_pmu_event(&devices, "cpu_atom/config=0x1234,config1=5/").unwrap();
        assert_eq!((e.type_, e.config, e.config1), (10, 0x1234, 5));

        let cases = [
            ("nosuch/event=1/", "no PMU `nosuch`"),
            ("cpu_core/bogus=1/", "no term `bogus`"),
            ("cpu_core/event=0x1ff/", "does not fit"),
            ("cpu_core/event=1,event=2/", "given twice"),
            ("cpu_core/event=zz/", "not a number"),
            ("cpu_core/event=1/q", "unknown modifier"),
            ("cpu_core/event=1", "malformed"),
            ("cpu/cycles/", "no PMU `cpu`"),
        ];
        for (event, expected) in cases {
            let error = parse_pmu_event(&devices, event).unwrap_err();
            assert!(error.to_string().contains(expected), "{event}: {error}");
        }
        let error = parse_pmu_event(&devices, "cpu/cycles/").unwrap_err();
        assert!(error.hint().unwrap().contains("no hardware counters"));
        // A core PMU this machine lacks is unsupported here, as a raw code is; a name no PMU
        // has is a bad event name.
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        let error = parse_pmu_event(&devices, "nosuch/event=1/").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidEvent);
    }

    #[test]
    fn hybrid_detection() {
        let devices = fixture("sysfs-hybrid");
        let names: Vec<String> = hybrid_of(core_pmus(&devices))
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(names, ["cpu_atom", "cpu_core"]);
        // This machine: hybrid exactly when sysfs shows two or more PMUs with a `cpus` mask
        // (cpu_core + cpu_atom on Alder Lake and later, one per core type on big.LITTLE Arm),
        // and then those are the ones.
        let devices = Path::new(DEFAULT_DEVICES);
        let real: Vec<String> = hybrid_of(core_pmus(devices))
            .into_iter()
            .map(|p| p.name)
            .collect();
        let shown: Vec<String> = fs::read_dir(devices)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .filter(|e| e.path().join("cpus").is_file())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name != "cpu")
                    .collect()
            })
            .unwrap_or_default();
        if shown.len() >= 2 {
            let mut shown = shown;
            shown.sort();
            assert_eq!(real, shown);
        } else {
            assert!(real.is_empty(), "sysfs shows {shown:?}, detected {real:?}");
        }
    }

    #[test]
    fn arm_core_pmus_are_found_by_their_cpus_file() {
        // One PMUv3 for every CPU (a Neoverse server, QEMU's virt machine): a core PMU, not
        // hybrid.
        let devices = fixture("sysfs-arm");
        let core: Vec<(String, u32)> = core_pmus(&devices)
            .into_iter()
            .map(|p| (p.name, p.type_))
            .collect();
        assert_eq!(core, [("armv8_pmuv3".to_string(), 8)]);
        assert!(hybrid_of(core_pmus(&devices)).is_empty());
        // big.LITTLE: one per core type, each its own type; the uncore CMN (a `cpumask`, no
        // `cpus`) is not a core PMU.
        let devices = fixture("sysfs-arm-biglittle");
        let hybrid: Vec<(String, u32)> = hybrid_of(core_pmus(&devices))
            .into_iter()
            .map(|p| (p.name, p.type_))
            .collect();
        assert_eq!(
            hybrid,
            [
                ("armv8_cortex_a53".to_string(), 8),
                ("armv8_cortex_a72".to_string(), 9)
            ]
        );
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_online(0), Some(true));
        assert_eq!(cpu_online(100_000), Some(false));
    }

    #[test]
    fn modifiers() {
        let mut e = PerfAttr::new(1, 0);
        apply_modifiers("x", "k", &mut e).unwrap();
        assert_eq!(e.domain, Domain::DEFAULT.with_levels(Domain::KERNEL));
        apply_modifiers("x", "uG", &mut e).unwrap();
        assert!(e.domain.contains(Domain::USER | Domain::GUEST));
        assert!(!e.domain.intersects(Domain::KERNEL | Domain::HOST));
    }
}
