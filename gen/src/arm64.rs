//! The Arm cores of the Linux kernel's perf JSON (`tools/perf/pmu-events/arch/arm64`): one
//! model per core directory `mapfile.csv` names with type `core`, its events as perf's
//! `jevents.py` builds them (an `ArchStdEvent` takes the event number of the architecture's
//! standard event of that name, from the JSON files at the top of the tree), matched by MIDR
//! as perf's arm64 `strcmp_cpuid_str` matches them, joined by the common events of the kernel's
//! `arm_pmuv3` driver the core's files do not list, which perf shows on every PMUv3 core from
//! sysfs where the core implements them. Facts only: names and event numbers.
//!
//! libpfm4's tables for the same cores (`lib/events/arm_*_events.h`) give other spellings:
//! each libpfm4 name the kernel's table lacks becomes an alias of the kernel's event of the
//! same number, where exactly one has it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::GenError;
use crate::cparse;
use crate::model::{GenEvent, GenModel, Provenance, Signature};

/// The source line of every generated Arm file.
pub const KERNEL_SOURCE: &str = "Linux kernel perf JSON (tools/perf/pmu-events/arch/arm64, GPL-2.0; facts only: names and event numbers)";

/// The libpfm4 source line.
const LIBPFM4_SOURCE: &str = "libpfm4 (https://github.com/wcohen/libpfm4, MIT)";

/// One libpfm4 PMU's table: its PMU name, its header under `lib/events`, its array.
pub type Libpfm4Table = (&'static str, &'static str, &'static str);

/// The standard events (lower-case name -> name and number) and the standard metric names.
pub type Standard = (BTreeMap<String, (String, u16)>, BTreeSet<String>);

/// libpfm4's table for a kernel core directory: (directory, [(PMU name, header, array)]).
pub const LIBPFM4_TABLES: &[(&str, &[Libpfm4Table])] = &[
    (
        "arm/cortex-a53",
        &[("arm_ac53", "arm_cortex_a53_events.h", "arm_cortex_a53_pe")],
    ),
    (
        "arm/cortex-a55",
        &[("arm_ac55", "arm_cortex_a55_events.h", "arm_cortex_a55_pe")],
    ),
    (
        "arm/cortex-a57-a72",
        &[
            ("arm_ac57", "arm_cortex_a57_events.h", "arm_cortex_a57_pe"),
            ("arm_ac72", "arm_cortex_a57_events.h", "arm_cortex_a57_pe"),
        ],
    ),
    (
        "arm/cortex-a76",
        &[("arm_ac76", "arm_cortex_a76_events.h", "arm_cortex_a76_pe")],
    ),
    (
        "arm/neoverse-n1",
        &[("arm_n1", "arm_neoverse_n1_events.h", "arm_n1_pe")],
    ),
    (
        "arm/neoverse-v1",
        &[("arm_v1", "arm_neoverse_v1_events.h", "arm_v1_pe")],
    ),
    (
        "arm/neoverse-n2-v2",
        &[
            ("arm_n2", "arm_neoverse_n2_events.h", "arm_n2_pe"),
            ("arm_v2", "arm_neoverse_v2_events.h", "arm_v2_pe"),
        ],
    ),
    (
        "arm/neoverse-n3",
        &[("arm_n3", "arm_neoverse_n3_events.h", "arm_n3_pe")],
    ),
    (
        "arm/neoverse-v3",
        &[("arm_v3", "arm_neoverse_v3_events.h", "arm_neoverse_v3_pe")],
    ),
    (
        "cavium/thunderx2",
        &[(
            "arm_thunderx2",
            "arm_cavium_tx2_events.h",
            "arm_thunderx2_pe",
        )],
    ),
    (
        "fujitsu/a64fx",
        &[("arm_a64fx", "arm_fujitsu_a64fx_events.h", "arm_a64fx_pe")],
    ),
    (
        "hisilicon/hip08",
        &[(
            "arm_kunpeng",
            "arm_hisilicon_kunpeng_events.h",
            "arm_kunpeng_pe",
        )],
    ),
    (
        "ampere/emag",
        &[("arm_xgene", "arm_xgene_events.h", "arm_xgene_pe")],
    ),
];

/// One line of `mapfile.csv` of type `core`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapEntry {
    /// The MIDR (variant and revision the lowest that matches).
    pub midr: u64,
    /// The core directory, relative to the arm64 tree (`arm/neoverse-n1`).
    pub dir: String,
}

/// The core entries of `mapfile.csv`, in file order.
///
/// # Errors
/// A line that is not `MIDR,Version,Path,Type` with a hex MIDR.
pub fn mapfile(text: &str) -> Result<Vec<MapEntry>, GenError> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let bad = || GenError::Data(format!("mapfile.csv:{}: `{line}`", number + 1));
        let [midr, _version, dir, kind] = fields[..] else {
            return Err(bad());
        };
        if kind != "core" {
            continue;
        }
        let midr = cparse::integer(midr).ok_or_else(bad)?;
        out.push(MapEntry {
            midr,
            dir: dir.to_string(),
        });
    }
    Ok(out)
}

/// The implementer names the event database's match rules use (the kernel's `cputype.h`).
fn implementer_name(code: u64) -> Option<&'static str> {
    Some(match code {
        0x41 => "arm",
        0x42 => "broadcom",
        0x43 => "cavium",
        0x46 => "fujitsu",
        0x48 => "hisilicon",
        0x4e => "nvidia",
        0x50 => "apm",
        0x51 => "qualcomm",
        0x61 => "apple",
        0x6d => "microsoft",
        0xc0 => "ampere",
        _ => return None,
    })
}

/// The match rule of a mapfile MIDR: implementer, architecture (as the family), part number;
/// perf matches any variant and revision at or above the entry's, which for the entries of
/// variant 0 and revision 0 (all of them, as the mapfile's own comment asks) is any.
///
/// # Errors
/// An implementer the database does not name, or a MIDR with a variant or revision.
pub fn signature(midr: u64) -> Result<Signature, GenError> {
    let implementer = (midr >> 24) & 0xff;
    let vendor = implementer_name(implementer).ok_or_else(|| {
        GenError::Data(format!(
            "MIDR {midr:#x}: implementer {implementer:#x} has no name"
        ))
    })?;
    if midr & 0x00f0_000f != 0 || midr >> 32 != 0 {
        return Err(GenError::Data(format!(
            "MIDR {midr:#x}: a mapfile entry with a variant or revision (perf matches those and later ones) is not supported"
        )));
    }
    Ok(Signature {
        vendor,
        family: ((midr >> 16) & 0xf) as u32,
        model: Some(((midr >> 4) & 0xfff) as u32),
        last_model: None,
        steppings: Vec::new(),
    })
}

fn read_json(path: &Path) -> Result<Vec<Value>, GenError> {
    let text = std::fs::read_to_string(path).map_err(|e| GenError::io(path, &e))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| GenError::Data(format!("{}: {e}", path.display())))?;
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(GenError::Data(format!(
            "{}: not an array of events",
            path.display()
        ))),
    }
}

fn json_files(dir: &Path) -> Result<Vec<String>, GenError> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| GenError::io(dir, &e))? {
        let entry = entry.map_err(|e| GenError::io(dir, &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") && entry.path().is_file() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

fn hex_code(text: &str, what: &str) -> Result<u16, GenError> {
    cparse::integer(text)
        .and_then(|v| u16::try_from(v).ok())
        .ok_or_else(|| {
            GenError::Data(format!(
                "{what}: event code `{text}` is not a 16-bit number"
            ))
        })
}

/// The architecture's standard events (the JSON files at the top of the arm64 tree): the
/// lower-case name -> (name, number); and the standard metric names (which an `ArchStdEvent`
/// of a `metrics.json` may name instead).
///
/// # Errors
/// A file that cannot be read or holds an event without a 16-bit number.
pub fn standard_events(arch: &Path) -> Result<Standard, GenError> {
    let mut events = BTreeMap::new();
    let mut metrics = BTreeSet::new();
    for file in json_files(arch)? {
        for item in read_json(&arch.join(&file))? {
            if let Some(name) = item.get("EventName").and_then(Value::as_str) {
                let code = item
                    .get("EventCode")
                    .and_then(Value::as_str)
                    .ok_or_else(|| GenError::Data(format!("{file}: `{name}` has no EventCode")))?;
                let code = hex_code(code, &file)?;
                events.insert(name.to_ascii_lowercase(), (name.to_string(), code));
            }
            if let Some(name) = item.get("MetricName").and_then(Value::as_str) {
                metrics.insert(name.to_ascii_lowercase());
            }
        }
    }
    Ok((events, metrics))
}

/// The driver's event files: the common events the kernel's `arm_pmuv3` driver lists in sysfs
/// (`ARMV8_EVENT_ATTR(name, MACRO)` in `drivers/perf/arm_pmuv3.c`, each number a `#define` of
/// `include/linux/perf/arm_pmuv3.h`), which perf shows on every PMUv3 core whose PMCEID
/// registers say it implements them: upper-case name -> number.
///
/// # Errors
/// A file that cannot be read, or an attribute naming a macro the header does not define.
pub fn driver_events(top: &Path) -> Result<BTreeMap<String, u16>, GenError> {
    let read = |relative: &str| {
        let path = top.join(relative);
        std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))
    };
    let header = read("include/linux/perf/arm_pmuv3.h")?;
    let mut numbers = BTreeMap::new();
    for line in header.lines() {
        let mut words = line.split_whitespace();
        if let (Some("#define"), Some(name), Some(value)) =
            (words.next(), words.next(), words.next())
            && name.starts_with("ARMV8_")
            && name.contains("PERFCTR_")
            && let Some(number) = cparse::integer(value).and_then(|v| u16::try_from(v).ok())
        {
            numbers.insert(name.to_string(), number);
        }
    }
    let driver = read("drivers/perf/arm_pmuv3.c")?;
    let mut out = BTreeMap::new();
    for line in driver.lines() {
        let line = line.trim();
        let Some(args) = line
            .strip_prefix("ARMV8_EVENT_ATTR(")
            .and_then(|rest| rest.strip_suffix("),"))
        else {
            continue;
        };
        let Some((name, config)) = args.split_once(',') else {
            continue;
        };
        let number = numbers.get(config.trim()).ok_or_else(|| {
            GenError::Data(format!(
                "drivers/perf/arm_pmuv3.c: `{name}` is `{}`, which arm_pmuv3.h does not define",
                config.trim()
            ))
        })?;
        out.insert(name.trim().to_ascii_uppercase(), *number);
    }
    if out.is_empty() {
        return Err(GenError::Data(
            "drivers/perf/arm_pmuv3.c: no ARMV8_EVENT_ATTR".to_string(),
        ));
    }
    Ok(out)
}

/// perf's generalized events and the common events the `arm_pmuv3` driver counts them with on
/// every PMUv3 core (`armv8_pmuv3_perf_map` and `armv8_pmuv3_perf_cache_map` in
/// `drivers/perf/arm_pmuv3.c`, which the driver tries before a core's own maps): perf's name
/// (`instructions`, `L1-dcache-load-misses`) -> the driver's event name (`INST_RETIRED`).
///
/// # Errors
/// The driver cannot be read, a map is missing, or names a macro with no event attribute.
pub fn driver_generalized(top: &Path) -> Result<BTreeMap<String, String>, GenError> {
    let path = top.join("drivers/perf/arm_pmuv3.c");
    let driver = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
    let bad = |why: String| GenError::Data(format!("drivers/perf/arm_pmuv3.c: {why}"));
    // Each event macro's attribute name (`ARMV8_PMUV3_PERFCTR_INST_RETIRED` -> `INST_RETIRED`).
    let mut names = BTreeMap::new();
    for line in driver.lines() {
        if let Some((name, config)) = line
            .trim()
            .strip_prefix("ARMV8_EVENT_ATTR(")
            .and_then(|rest| rest.strip_suffix("),"))
            .and_then(|args| args.split_once(','))
        {
            names.insert(config.trim().to_string(), name.trim().to_ascii_uppercase());
        }
    }
    let block = |start: &str| -> Result<Vec<(String, String)>, GenError> {
        let at = driver
            .find(start)
            .ok_or_else(|| bad(format!("no `{start}`")))?;
        let body = &driver[at..];
        let open = body
            .find("= {")
            .ok_or_else(|| bad(format!("`{start}` has no body")))?;
        let body = &body[open + 3..];
        let body = &body[..body
            .find("};")
            .ok_or_else(|| bad(format!("`{start}` has no end")))?];
        let mut out = Vec::new();
        for line in body.lines() {
            let Some((index, value)) = line.trim().split_once('=') else {
                continue;
            };
            let value = value.trim().trim_end_matches(',').trim();
            let name = names
                .get(value)
                .ok_or_else(|| bad(format!("`{value}` has no event attribute")))?;
            out.push((index.trim().to_string(), name.clone()));
        }
        Ok(out)
    };
    let hardware = [
        ("PERF_COUNT_HW_CPU_CYCLES", "cycles"),
        ("PERF_COUNT_HW_INSTRUCTIONS", "instructions"),
        ("PERF_COUNT_HW_CACHE_REFERENCES", "cache-references"),
        ("PERF_COUNT_HW_CACHE_MISSES", "cache-misses"),
        ("PERF_COUNT_HW_BRANCH_INSTRUCTIONS", "branches"),
        ("PERF_COUNT_HW_BRANCH_MISSES", "branch-misses"),
        ("PERF_COUNT_HW_BUS_CYCLES", "bus-cycles"),
        (
            "PERF_COUNT_HW_STALLED_CYCLES_FRONTEND",
            "stalled-cycles-frontend",
        ),
        (
            "PERF_COUNT_HW_STALLED_CYCLES_BACKEND",
            "stalled-cycles-backend",
        ),
        ("PERF_COUNT_HW_REF_CPU_CYCLES", "ref-cycles"),
    ];
    let mut out = BTreeMap::new();
    for (index, name) in block("armv8_pmuv3_perf_map[")? {
        let index = index.trim_start_matches('[').trim_end_matches(']');
        let (_, perf) = hardware
            .iter()
            .find(|(macro_name, _)| *macro_name == index)
            .ok_or_else(|| bad(format!("unknown hardware event `{index}`")))?;
        out.insert((*perf).to_string(), name);
    }
    let levels = [
        ("L1D", "L1-dcache"),
        ("L1I", "L1-icache"),
        ("LL", "LLC"),
        ("DTLB", "dTLB"),
        ("ITLB", "iTLB"),
        ("BPU", "branch"),
        ("NODE", "node"),
    ];
    let ops = [
        ("OP_READ", "RESULT_ACCESS", "loads"),
        ("OP_READ", "RESULT_MISS", "load-misses"),
        ("OP_WRITE", "RESULT_ACCESS", "stores"),
        ("OP_WRITE", "RESULT_MISS", "store-misses"),
        ("OP_PREFETCH", "RESULT_ACCESS", "prefetches"),
        ("OP_PREFETCH", "RESULT_MISS", "prefetch-misses"),
    ];
    for (index, name) in block("armv8_pmuv3_perf_cache_map[")? {
        // `[C(L1D)][C(OP_READ)][C(RESULT_ACCESS)]`
        let parts: Vec<&str> = index
            .split(['[', ']', '(', ')'])
            .filter(|p| !p.is_empty() && *p != "C")
            .collect();
        let [level, op, result] = parts[..] else {
            return Err(bad(format!("cache index `{index}`")));
        };
        let level = levels.iter().find(|(l, _)| *l == level).map(|(_, n)| *n);
        let op = ops
            .iter()
            .find(|(o, r, _)| *o == op && *r == result)
            .map(|(_, _, n)| *n);
        let (Some(level), Some(op)) = (level, op) else {
            return Err(bad(format!("cache index `{index}`")));
        };
        out.insert(format!("{level}-{op}"), name);
    }
    Ok(out)
}

/// The core events of one core directory as perf's tables hold them: name -> number, and the
/// files they came from. Entries with a `Unit` (an uncore PMU) and metrics are not core
/// events.
///
/// # Errors
/// An `ArchStdEvent` naming no standard event, a name given twice with two numbers, an event
/// without a number.
pub fn core_events(
    arch: &Path,
    dir: &str,
    standard: &BTreeMap<String, (String, u16)>,
    metrics: &BTreeSet<String>,
) -> Result<(BTreeMap<String, u16>, Vec<String>), GenError> {
    let path = arch.join(dir);
    let mut events: BTreeMap<String, u16> = BTreeMap::new();
    let mut files = Vec::new();
    for file in json_files(&path)? {
        let what = format!("{dir}/{file}");
        let mut used = false;
        for item in read_json(&path.join(&file))? {
            if item.get("MetricName").is_some() || item.get("Unit").is_some() {
                continue;
            }
            let own_name = item.get("EventName").and_then(Value::as_str);
            let (name, code) = match item.get("ArchStdEvent").and_then(Value::as_str) {
                Some(std) => match standard.get(&std.to_ascii_lowercase()) {
                    Some((std_name, code)) => (own_name.unwrap_or(std_name).to_string(), *code),
                    None if metrics.contains(&std.to_ascii_lowercase()) => continue,
                    None => {
                        return Err(GenError::Data(format!(
                            "{what}: ArchStdEvent `{std}` is no standard event"
                        )));
                    }
                },
                None => {
                    let name = own_name.ok_or_else(|| {
                        GenError::Data(format!("{what}: an entry without EventName"))
                    })?;
                    let code = item
                        .get("EventCode")
                        .and_then(Value::as_str)
                        .ok_or_else(|| {
                            GenError::Data(format!("{what}: `{name}` has no EventCode"))
                        })?;
                    (name.to_string(), hex_code(code, &what)?)
                }
            };
            if let Some(old) = events.insert(name.clone(), code)
                && old != code
            {
                return Err(GenError::Data(format!(
                    "{what}: `{name}` is given as {old:#x} and {code:#x}"
                )));
            }
            used = true;
        }
        if used {
            files.push(file);
        }
    }
    Ok((events, files))
}

/// The kernel version a top `Makefile`'s text gives (VERSION, PATCHLEVEL, SUBLEVEL); `None`
/// when one is missing.
pub fn kernel_version(makefile: &str) -> Option<String> {
    let field = |key: &str| {
        makefile.lines().find_map(|line| {
            let (k, v) = line.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    Some(format!(
        "{}.{}.{}",
        field("VERSION")?,
        field("PATCHLEVEL")?,
        field("SUBLEVEL")?
    ))
}

/// The model id of a core directory: its last component (`neoverse-n1`, perf's name).
pub fn model_id(dir: &str) -> &str {
    dir.rsplit('/').next().unwrap_or(dir)
}

/// Every Arm core model of the kernel's arm64 tree `arch` (`tools/perf/pmu-events/arch/arm64`)
/// of kernel `version`, with the driver's `common` events ([`driver_events`]), in
/// `mapfile.csv`'s order.
///
/// # Errors
/// Unreadable or malformed files (see [`mapfile`], [`core_events`], [`signature`]).
pub fn models(
    arch: &Path,
    common: &BTreeMap<String, u16>,
    version: &str,
) -> Result<Vec<GenModel>, GenError> {
    let map_path = arch.join("mapfile.csv");
    let map = std::fs::read_to_string(&map_path).map_err(|e| GenError::io(&map_path, &e))?;
    let entries = mapfile(&map)?;
    let (standard, metrics) = standard_events(arch)?;
    let mut dirs: Vec<&str> = Vec::new();
    for entry in &entries {
        if !dirs.contains(&entry.dir.as_str()) {
            dirs.push(&entry.dir);
        }
    }
    let mut ids = BTreeSet::new();
    let mut out = Vec::new();
    for dir in dirs {
        let id = model_id(dir);
        if !ids.insert(id) {
            return Err(GenError::Data(format!(
                "two core directories are named `{id}`"
            )));
        }
        let (mut events, files) = core_events(arch, dir, &standard, &metrics)?;
        // The driver's common events the core's files do not list: perf shows them on every
        // PMUv3 core from sysfs, where the core's PMCEID registers say it implements them.
        let own: BTreeSet<String> = events.keys().map(|n| n.to_ascii_uppercase()).collect();
        let mut common_added = 0;
        for (name, code) in common {
            if !own.contains(&name.to_ascii_uppercase()) {
                events.insert(name.clone(), *code);
                common_added += 1;
            }
        }
        let mut signatures = entries
            .iter()
            .filter(|e| e.dir == dir)
            .map(|e| signature(e.midr))
            .collect::<Result<Vec<_>, _>>()?;
        signatures.dedup();
        let events = events
            .into_iter()
            .map(|(name, code)| GenEvent {
                name,
                code,
                ..GenEvent::default()
            })
            .collect();
        out.push(GenModel {
            id: id.to_string(),
            description: format!("Arm PMUv3 core events of {dir} (perf's table)"),
            encoder: "armv8",
            signatures,
            // PMUv3 has up to 31 event counters (PMCR_EL0.N, which the kernel reads) of 32
            // bits, 64 with the chained `long` form.
            general_counters: 31,
            counter_width: 32,
            source: Provenance {
                source: KERNEL_SOURCE.to_string(),
                commit: format!("Linux {version}"),
                file: format!(
                    "tools/perf/pmu-events/arch/arm64/{dir}/{{{}}}, common-and-microarch.json, recommended.json, mapfile.csv; drivers/perf/arm_pmuv3.c and include/linux/perf/arm_pmuv3.h ({common_added} of the driver's common events the core's files do not list)",
                    files.join(",")
                ),
            },
            events,
            ..GenModel::default()
        });
    }
    Ok(out)
}

/// The TOML of an Arm model: its table ([`crate::write::model_toml`]) and perf's generalized
/// events as the driver counts them (those whose event the model has), from
/// [`driver_generalized`].
pub fn model_file(model: &GenModel, generalized: &BTreeMap<String, String>) -> String {
    let mut out = crate::write::model_toml(model);
    let mapped: Vec<(&String, &String)> = generalized
        .iter()
        .filter(|(_, event)| model.events.iter().any(|e| &e.name == *event))
        .collect();
    if !mapped.is_empty() {
        out.push_str(
            "\n# perf's generalized events as the arm_pmuv3 driver counts them on every PMUv3 core\n# (armv8_pmuv3_perf_map, armv8_pmuv3_perf_cache_map)\n[cpu.generalized]\n",
        );
        for (perf, event) in mapped {
            out.push_str(&format!("\"{perf}\" = \"{event}\"\n"));
        }
    }
    out
}

/// Writes each model to `out/ID.toml` with [`model_file`]; returns the paths written.
///
/// # Errors
/// The directory or a file cannot be written.
pub fn write_models(
    models: &[GenModel],
    generalized: &BTreeMap<String, String>,
    out: &Path,
) -> Result<Vec<String>, GenError> {
    std::fs::create_dir_all(out).map_err(|e| GenError::io(out, &e))?;
    let mut written = Vec::new();
    for model in models {
        let path = out.join(format!("{}.toml", model.id));
        std::fs::write(&path, model_file(model, generalized))
            .map_err(|e| GenError::io(&path, &e))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// One libpfm4 Arm table: name -> number, in the header's order.
///
/// # Errors
/// The header cannot be read, has no such array, or an entry without a number.
pub fn libpfm4_table(root: &Path, file: &str, array: &str) -> Result<Vec<(String, u16)>, GenError> {
    let table = cparse::read_table(root, file, "arm_entry_t", "arm_entry_t_umask", array)?;
    table
        .entries
        .iter()
        .map(|fields| {
            let name = fields
                .get("name")
                .ok_or_else(|| table.error("an entry without .name".to_string()))?;
            let code = fields
                .get("code")
                .and_then(|c| cparse::integer(c))
                .and_then(|c| u16::try_from(c).ok())
                .ok_or_else(|| table.error(format!("`{name}`: no 16-bit .code")))?;
            Ok((name.clone(), code))
        })
        .collect()
}

/// Adds libpfm4's PMU names as model aliases and libpfm4's event names the kernel's table
/// lacks as event aliases (to the kernel's one event of the same number), for every core
/// [`LIBPFM4_TABLES`] lists.
///
/// # Errors
/// A libpfm4 header that cannot be read (see [`libpfm4_table`]).
pub fn add_libpfm4_aliases(
    models: &mut [GenModel],
    root: &Path,
    commit: &str,
) -> Result<(), GenError> {
    for model in models.iter_mut() {
        let Some((_, tables)) = LIBPFM4_TABLES
            .iter()
            .find(|(dir, _)| model_id(dir) == model.id)
        else {
            continue;
        };
        let mut by_code: BTreeMap<u16, Vec<&str>> = BTreeMap::new();
        for e in &model.events {
            by_code.entry(e.code).or_default().push(&e.name);
        }
        let own: BTreeSet<String> = model
            .events
            .iter()
            .map(|e| e.name.to_ascii_uppercase())
            .collect();
        let mut aliases: BTreeMap<String, String> = BTreeMap::new();
        let mut files = BTreeSet::new();
        for &(pmu, file, array) in *tables {
            model.model_aliases.push(pmu.to_string());
            files.insert(file);
            for (name, code) in libpfm4_table(root, file, array)? {
                let key = name.to_ascii_uppercase();
                if own.contains(&key) {
                    continue;
                }
                if let Some([target]) = by_code.get(&code).map(Vec::as_slice) {
                    aliases.insert(key, (*target).to_string());
                }
            }
        }
        model.aliases = aliases.into_iter().collect();
        model.alias_sources = files
            .into_iter()
            .map(|file| Provenance {
                source: LIBPFM4_SOURCE.to_string(),
                commit: commit.to_string(),
                file: format!("lib/events/{file}"),
            })
            .collect();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapfile_lines_and_signatures() {
        let text = "# comment\n0x00000000410fd0c0,v1,arm/neoverse-n1,core\n0x1,v1,x/y,uncore\n";
        let entries = mapfile(text).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].dir, "arm/neoverse-n1");
        let s = signature(entries[0].midr).unwrap();
        assert_eq!((s.vendor, s.family, s.model), ("arm", 0xf, Some(0xd0c)));
        assert!(signature(0x414f_d0c1).is_err());
        assert!(signature(0x990f_d0c0).is_err());
        assert!(mapfile("0x1,v1\n").is_err());
        assert_eq!(model_id("arm/neoverse-n1"), "neoverse-n1");
        assert_eq!(
            kernel_version("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 117\n").as_deref(),
            Some("6.12.117")
        );
    }
}
