//! The uncore events of the kernel's x86 perf JSON (`tools/perf/pmu-events/arch/x86/DIR/*.json`,
//! the entries with a `Unit`): each event's name, the PMU perf sends it to and the terms perf
//! builds for it, both exactly as perf's own generator writes them (`jevents.py`'s
//! `unit_to_pmu` and the event string of `JsonEvent.__init__`, Linux 6.12), with the scale and
//! unit of its `ScaleUnit` and its `Deprecated` flag. One table per directory, written to
//! `events/data/generated/uncore/DIR.toml`; the build maps the directory to its CPU model
//! (`events/src/model_aliases.rs`' `PERF_DIRECTORIES`). Facts only: no description is copied.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::GenError;
use crate::metrics::KERNEL_SOURCE;
use crate::write::GENERATED_MARK;

/// The units of hybrid core PMUs (Linux 7.2's Arrow Lake adds its low-power E-cores'
/// `cpu_lowpower`): their events are core events, in the core tables.
const CORE_UNITS: &[&str] = &["cpu_core", "cpu_atom", "cpu_lowpower"];

/// One uncore event as perf's generator writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct UncoreEvent {
    /// `EventName`, as the JSON spells it.
    pub name: String,
    /// The terms perf builds from the entry (`event=0x5,umask=0xcf`).
    pub terms: String,
    /// The scale and unit of `ScaleUnit` (`64Bytes`: 64 and `Bytes`), where it has one.
    pub scale_unit: Option<(f64, String)>,
    /// `Deprecated` is set.
    pub deprecated: bool,
}

/// One PMU's events in a table: perf's PMU name, the JSON `Unit` it comes from, its events
/// sorted by name (ASCII case ignored).
#[derive(Clone, Debug, PartialEq)]
pub struct UncorePmu {
    /// perf's PMU name (`uncore_imc`, `amd_l3`).
    pub name: String,
    /// The JSON `Unit` (`iMC`, `L3PMC`).
    pub unit: String,
    /// Its events.
    pub events: Vec<UncoreEvent>,
}

/// One directory's uncore events.
#[derive(Clone, Debug, PartialEq)]
pub struct UncoreTable {
    /// The directory under `arch/x86` (`sapphirerapids`).
    pub directory: String,
    /// The kernel version and package the JSON comes from.
    pub commit: String,
    /// Its PMUs, sorted by name.
    pub pmus: Vec<UncorePmu>,
    /// Header lines on what another source changed (`uncore_perf.rs`).
    pub notes: Vec<String>,
}

/// perf's PMU name for a JSON `Unit` (jevents.py's `unit_to_pmu`, Linux 6.12): its table,
/// else `uncore_` and the unit in lower case.
pub fn unit_to_pmu(unit: &str) -> String {
    const TABLE: &[(&str, &str)] = &[
        ("CBO", "uncore_cbox"),
        ("QPI LL", "uncore_qpi"),
        ("SBO", "uncore_sbox"),
        ("iMPH-U", "uncore_arb"),
        ("CPU-M-CF", "cpum_cf"),
        ("CPU-M-SF", "cpum_sf"),
        ("PAI-CRYPTO", "pai_crypto"),
        ("PAI-EXT", "pai_ext"),
        ("UPI LL", "uncore_upi"),
        ("hisi_sicl,cpa", "hisi_sicl,cpa"),
        ("hisi_sccl,ddrc", "hisi_sccl,ddrc"),
        ("hisi_sccl,hha", "hisi_sccl,hha"),
        ("hisi_sccl,l3c", "hisi_sccl,l3c"),
        ("imx8_ddr", "imx8_ddr"),
        ("imx9_ddr", "imx9_ddr"),
        ("L3PMC", "amd_l3"),
        ("DFPMC", "amd_df"),
        ("UMCPMC", "amd_umc"),
        ("cpu_core", "cpu_core"),
        ("cpu_atom", "cpu_atom"),
        ("ali_drw", "ali_drw"),
        ("arm_cmn", "arm_cmn"),
    ];
    TABLE.iter().find(|(u, _)| *u == unit).map_or_else(
        || format!("uncore_{}", unit.to_lowercase()),
        |(_, p)| p.to_string(),
    )
}

/// A number as C's `%#llx` prints it, as jevents.py's `llx` writes it: below 10 in decimal,
/// else in hexadecimal with `0x`.
fn llx(value: u64) -> String {
    if value < 10 {
        value.to_string()
    } else {
        format!("{value:#x}")
    }
}

/// A field's text (the JSON has strings; a number is taken as its decimal text).
fn field(entry: &Value, key: &str) -> Option<String> {
    match entry.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A value as jevents.py reads one: `0x` and hexadecimal, else decimal (`None`: Python would
/// have raised).
fn value(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// A code as Python's `int(text, 0)` reads it: `0x`, `0o`, `0b` or decimal.
fn int0(text: &str) -> Option<u64> {
    let text = text.trim();
    let lower = text.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else if let Some(octal) = lower.strip_prefix("0o") {
        u64::from_str_radix(octal, 8).ok()
    } else if let Some(binary) = lower.strip_prefix("0b") {
        u64::from_str_radix(binary, 2).ok()
    } else {
        text.parse().ok()
    }
}

/// The terms perf builds for an entry (jevents.py's `JsonEvent.__init__`): `event=` (or
/// `config=`, `eventid=`), then each non-zero field of its list in order, then `Filter`, then
/// the MSR's term.
///
/// # Errors
/// A value jevents.py could not read either, or a field it would refuse.
pub fn terms(entry: &Value) -> Result<String, String> {
    let bad = |key: &str, text: &str| format!("`{key}` `{text}` is not a number perf reads");
    let mut out = if let Some(config) = field(entry, "ConfigCode") {
        format!(
            "config={}",
            llx(int0(&config).ok_or_else(|| bad("ConfigCode", &config))?)
        )
    } else if let Some(id) = field(entry, "EventidCode") {
        format!(
            "eventid={}",
            llx(int0(&id).ok_or_else(|| bad("EventidCode", &id))?)
        )
    } else {
        let mut code = match field(entry, "EventCode") {
            Some(text) => {
                let first = text.split(',').next().unwrap_or_default();
                int0(first).ok_or_else(|| bad("EventCode", &text))?
            }
            None => 0,
        };
        if let Some(ext) = field(entry, "ExtSel") {
            code |= ext.parse::<u64>().map_err(|_| bad("ExtSel", &ext))? << 8;
        }
        format!("event={}", llx(code))
    };
    const FIELDS: &[(&str, &str)] = &[
        ("AnyThread", "any="),
        ("PortMask", "ch_mask="),
        ("CounterMask", "cmask="),
        ("EdgeDetect", "edge="),
        ("FCMask", "fc_mask="),
        ("Invert", "inv="),
        ("SampleAfterValue", "period="),
        ("UMask", "umask="),
        ("NodeType", "type="),
        ("RdWrMask", "rdwrmask="),
        ("EnAllCores", "enallcores="),
        ("EnAllSlices", "enallslices="),
        ("SliceId", "sliceid="),
        ("ThreadMask", "threadmask="),
    ];
    for (key, term) in FIELDS {
        if let Some(text) = field(entry, key) {
            let number = value(&text).ok_or_else(|| bad(key, &text))?;
            if number != 0 {
                let written = match text.starts_with("0x") {
                    true => llx(number),
                    false => number.to_string(),
                };
                _ = write!(out, ",{term}{written}");
            }
        }
    }
    if let Some(filter) = field(entry, "Filter").filter(|f| !f.is_empty()) {
        _ = write!(out, ",{filter}");
    }
    if let Some(msr) = field(entry, "MSRIndex").filter(|m| !m.is_empty()) {
        let first = msr.split(',').next().unwrap_or_default();
        let term = match int0(first) {
            Some(0x3f6) => "ldlat=",
            Some(0x1a6 | 0x1a7) => "offcore_rsp=",
            Some(0x3f7) => "frontend=",
            _ => return Err(format!("`MSRIndex` `{msr}` is none perf knows")),
        };
        _ = write!(
            out,
            ",{term}{}",
            field(entry, "MSRValue").unwrap_or_default()
        );
    }
    if entry.get("ArchStdEvent").is_some() {
        return Err("an `ArchStdEvent` entry (x86 has none)".to_string());
    }
    Ok(out)
}

/// The uncore events of one directory (`root/DIR/*.json`), by PMU.
///
/// # Errors
/// A file that cannot be read or is not perf's layout, or an entry perf's generator would
/// refuse.
pub fn table(root: &Path, directory: &str, commit: &str) -> Result<UncoreTable, GenError> {
    let dir = root.join(directory);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| GenError::io(&dir, &e))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json") && name != "metricgroups.json")
        .collect();
    files.sort();
    let mut pmus: BTreeMap<String, UncorePmu> = BTreeMap::new();
    for file in &files {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
        let json: Value = serde_json::from_str(&text)
            .map_err(|e| GenError::Data(format!("{}: {e}", path.display())))?;
        let Some(entries) = json.as_array() else {
            continue;
        };
        for entry in entries {
            let (Some(unit), Some(name)) = (field(entry, "Unit"), field(entry, "EventName")) else {
                continue;
            };
            if CORE_UNITS.contains(&unit.as_str()) {
                continue;
            }
            let where_ = || format!("{directory}/{file}: {name}");
            let terms =
                terms(entry).map_err(|why| GenError::Data(format!("{}: {why}", where_())))?;
            let scale_unit = match field(entry, "ScaleUnit") {
                Some(text) => Some(
                    crate::metrics::scale_unit(&text)
                        .map_err(|why| GenError::Data(format!("{}: {why}", where_())))?,
                ),
                None => None,
            };
            let deprecated = field(entry, "Deprecated").is_some_and(|d| d == "1");
            let pmu_name = unit_to_pmu(&unit);
            let pmu = pmus.entry(pmu_name.clone()).or_insert_with(|| UncorePmu {
                name: pmu_name,
                unit: unit.clone(),
                events: Vec::new(),
            });
            if pmu.unit != unit {
                return Err(GenError::Data(format!(
                    "{}: units `{}` and `{unit}` both give PMU `{}`",
                    where_(),
                    pmu.unit,
                    pmu.name
                )));
            }
            if pmu
                .events
                .iter()
                .any(|e| e.name.eq_ignore_ascii_case(&name))
            {
                return Err(GenError::Data(format!("{}: given twice", where_())));
            }
            pmu.events.push(UncoreEvent {
                name,
                terms,
                scale_unit,
                deprecated,
            });
        }
    }
    let mut pmus: Vec<UncorePmu> = pmus.into_values().collect();
    for pmu in &mut pmus {
        sort_events(&mut pmu.events);
    }
    Ok(UncoreTable {
        directory: directory.to_string(),
        commit: commit.to_string(),
        pmus,
        notes: Vec::new(),
    })
}

/// Every directory of `root` (`tools/perf/pmu-events/arch/x86`) with uncore events, sorted.
///
/// # Errors
/// As [`table`].
pub fn tables(root: &Path, commit: &str) -> Result<Vec<UncoreTable>, GenError> {
    let mut directories: Vec<String> = std::fs::read_dir(root)
        .map_err(|e| GenError::io(root, &e))?
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    directories.sort();
    let mut out = Vec::new();
    for directory in directories {
        let table = table(root, &directory, commit)?;
        if !table.pmus.is_empty() {
            out.push(table);
        }
    }
    Ok(out)
}

/// The events of `older` (an older release's tables) that no PMU of the same directory's table
/// in `tables` has by name (ASCII case ignored), added to their PMU (itself added where the
/// table lacks it) as the older release gives them, so that a name its perf knew keeps
/// resolving; each table that gained some gets a header line naming them, `release` the
/// older release's words. A directory only `older` has is kept whole.
pub fn keep_older(tables: &mut Vec<UncoreTable>, older: &[UncoreTable], release: &str) {
    for old in older {
        let Some(table) = tables.iter_mut().find(|t| t.directory == old.directory) else {
            let mut kept = old.clone();
            kept.notes.push(format!(
                "{release}: the whole table, which the newer JSON no longer has"
            ));
            tables.push(kept);
            continue;
        };
        let mut added = Vec::new();
        let mut filter1 = Vec::new();
        for old_pmu in &old.pmus {
            for event in &old_pmu.events {
                let same_pmu = table.pmus.iter_mut().find(|p| p.name == old_pmu.name);
                if let Some(ours) = same_pmu
                    .and_then(|p| p.events.iter_mut().find(|e| e.name == event.name))
                    .filter(|e| lost_filter1(&e.terms, &event.terms))
                {
                    ours.terms = event.terms.clone();
                    filter1.push(event.name.clone());
                }
                let known = table.pmus.iter().any(|p| {
                    p.events
                        .iter()
                        .any(|e| e.name.eq_ignore_ascii_case(&event.name))
                });
                if known {
                    continue;
                }
                let index = match table.pmus.iter().position(|p| p.name == old_pmu.name) {
                    Some(index) => index,
                    None => {
                        table.pmus.push(UncorePmu {
                            name: old_pmu.name.clone(),
                            unit: old_pmu.unit.clone(),
                            events: Vec::new(),
                        });
                        table.pmus.len() - 1
                    }
                };
                table.pmus[index].events.push(event.clone());
                added.push(event.name.clone());
            }
        }
        if !filter1.is_empty() {
            table.notes.push(format!(
                "{release}: {} events take its `config1`, which this JSON wrote without the \
                 shift of Intel's `Filter1` value into config1's upper half (FILTER1): {}",
                filter1.len(),
                filter1.join(", ")
            ));
        }
        if added.is_empty() {
            continue;
        }
        table.pmus.sort_by(|a, b| a.name.cmp(&b.name));
        for pmu in &mut table.pmus {
            sort_events(&mut pmu.events);
        }
        added.sort_by_key(|n| n.to_ascii_lowercase());
        table.notes.push(format!(
            "{release}: {} events its JSON has that this JSON no longer has (on no PMU), \
             kept with its terms: {}",
            added.len(),
            added.join(", ")
        ));
    }
    tables.sort_by(|a, b| a.directory.cmp(&b.directory));
}

/// Whether `newer` is `older` but for a `config1` value that is `older`'s shifted down 32 bits:
/// Linux 7.2's JSON wrote Intel perfmon's `Filter1` value of Skylake-SP's and Cascade Lake's
/// CHA (`FILTER_VALUE` 0x40233: opcode and locality filters) as `config1=0x40233`, where the
/// kernel writes config1's upper half to FILTER1 (`hswep_cbox_enable_event`,
/// arch/x86/events/intel/uncore_snbep.c) and Linux 6.12's JSON has `config1=0x4023300000000`.
fn lost_filter1(newer: &str, older: &str) -> bool {
    let config1 = |terms: &str| {
        let mut rest = Vec::new();
        let mut value = None;
        for term in terms.split(',') {
            match term.strip_prefix("config1=") {
                Some(text) => value = int0(text),
                None => rest.push(term.to_string()),
            }
        }
        (rest, value)
    };
    match (config1(newer), config1(older)) {
        ((new_rest, Some(new)), (old_rest, Some(old))) => {
            new_rest == old_rest && new != 0 && new < 1 << 32 && old == new << 32
        }
        _ => false,
    }
}

/// Events sorted by name, ASCII case ignored, then as spelled.
fn sort_events(events: &mut [UncoreEvent]) {
    events.sort_by(|a, b| {
        (a.name
            .to_ascii_lowercase()
            .cmp(&b.name.to_ascii_lowercase()))
        .then_with(|| a.name.cmp(&b.name))
    });
}

/// A TOML basic string.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => _ = write!(out, "\\u{:04x}", c as u32),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The table as its file: the header, the directory, then each PMU with its events, one a
/// line (the layout `events/src/uncore/file.rs` reads).
pub fn table_toml(table: &UncoreTable) -> String {
    let events: usize = table.pmus.iter().map(|p| p.events.len()).sum();
    let mut out = format!(
        "# {GENERATED_MARK} (counterhal-gen uncore)\n\
         # source: {KERNEL_SOURCE}\n\
         # commit: {}\n\
         # file: tools/perf/pmu-events/arch/x86/{}/*.json (the entries with a `Unit`)\n\
         # {events} events on {} PMUs: each PMU's name and each event's terms as perf's \
         tools/perf/pmu-events/jevents.py writes them\n\
         {}\n\
         directory = {}\n",
        table.commit,
        table.directory,
        table.pmus.len(),
        table
            .notes
            .iter()
            .map(|n| format!("# {n}\n"))
            .collect::<String>(),
        quoted(&table.directory),
    );
    for pmu in &table.pmus {
        _ = write!(
            out,
            "\n[[pmu]]\nname = {}\nunit = {}\nevents = [\n",
            quoted(&pmu.name),
            quoted(&pmu.unit)
        );
        for event in &pmu.events {
            _ = write!(
                out,
                "  {{ name = {}, terms = {}",
                quoted(&event.name),
                quoted(&event.terms)
            );
            if let Some((scale, unit)) = &event.scale_unit {
                _ = write!(out, ", scale = {scale:?}, unit = {}", quoted(unit));
            }
            if event.deprecated {
                out.push_str(", deprecated = true");
            }
            out.push_str(" },\n");
        }
        out.push_str("]\n");
    }
    out
}

/// Writes every table to `out/DIR.toml`; returns the paths written.
///
/// # Errors
/// The directory or a file cannot be written.
pub fn write_tables(tables: &[UncoreTable], out: &Path) -> Result<Vec<String>, GenError> {
    std::fs::create_dir_all(out).map_err(|e| GenError::io(out, &e))?;
    let mut written = Vec::new();
    for table in tables {
        let path = out.join(format!("{}.toml", table.directory));
        std::fs::write(&path, table_toml(table)).map_err(|e| GenError::io(&path, &e))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn units_map_to_perfs_pmu_names() {
        assert_eq!(unit_to_pmu("iMC"), "uncore_imc");
        assert_eq!(unit_to_pmu("CHA"), "uncore_cha");
        assert_eq!(unit_to_pmu("UPI LL"), "uncore_upi");
        assert_eq!(unit_to_pmu("UPI"), "uncore_upi");
        assert_eq!(unit_to_pmu("L3PMC"), "amd_l3");
        assert_eq!(unit_to_pmu("DFPMC"), "amd_df");
        assert_eq!(unit_to_pmu("UMCPMC"), "amd_umc");
        assert_eq!(
            unit_to_pmu("imc_free_running_0"),
            "uncore_imc_free_running_0"
        );
    }

    /// Oracle: Linux 6.12's and 7.2's perf JSON (skylakex/uncore-cache.json,
    /// uncore-interconnect.json): 7.2 dropped `UPI_DATA_BANDWIDTH_TX` and wrote the TOR filter
    /// without its shift into FILTER1; a name 6.12 knew stays, with 6.12's terms.
    #[test]
    fn older_names_and_filter1_are_kept() {
        let event = |name: &str, terms: &str| UncoreEvent {
            name: name.into(),
            terms: terms.into(),
            scale_unit: None,
            deprecated: false,
        };
        let table = |events: Vec<UncoreEvent>| UncoreTable {
            directory: "skylakex".into(),
            commit: "c".into(),
            notes: Vec::new(),
            pmus: vec![UncorePmu {
                name: "uncore_cha".into(),
                unit: "CHA".into(),
                events,
            }],
        };
        let old = table(vec![
            event(
                "UNC_CHA_TOR_INSERTS.IA_HIT_CRD",
                "event=0x35,umask=0x11,config1=0x4023300000000",
            ),
            event("UNC_CHA_CLOCKTICKS", "event=0"),
            event("UPI_DATA_BANDWIDTH_TX", "event=2,umask=0xf"),
        ]);
        let mut new = vec![table(vec![
            event(
                "UNC_CHA_TOR_INSERTS.IA_HIT_CRD",
                "event=0x35,umask=0x11,config1=0x40233",
            ),
            event("UNC_CHA_CLOCKTICKS", "event=1"),
        ])];
        keep_older(&mut new, &[old], "6.12");
        let events = &new[0].pmus[0].events;
        assert_eq!(events.len(), 3);
        assert_eq!(events[0].terms, "event=1");
        assert_eq!(
            events[1].terms,
            "event=0x35,umask=0x11,config1=0x4023300000000"
        );
        assert_eq!(events[2].name, "UPI_DATA_BANDWIDTH_TX");
        assert_eq!(new[0].notes.len(), 2);
        assert!(!lost_filter1("event=1,config1=0x5", "event=1,config1=0x6"));
    }

    #[test]
    fn terms_are_jevents_event_string() {
        let entry = json!({"EventCode": "0x04", "UMask": "0x03", "Unit": "iMC"});
        assert_eq!(terms(&entry).unwrap(), "event=4,umask=3");
        let entry = json!({"EventCode": "0x35", "UMask": "0xC816FE01", "PortMask": "0x000",
            "FCMask": "0x07", "EdgeDetect": "1", "Filter": "config1=0x40e33", "Unit": "CHA"});
        assert_eq!(
            terms(&entry).unwrap(),
            "event=0x35,edge=1,fc_mask=7,umask=0xc816fe01,config1=0x40e33"
        );
        assert_eq!(terms(&json!({"Unit": "PCU"})).unwrap(), "event=0");
        assert_eq!(
            terms(&json!({"EventCode": "0xB7, 0xBB", "ExtSel": "1"})).unwrap(),
            "event=0x1b7"
        );
        assert!(terms(&json!({"EventCode": "0x1", "UMask": "0XFF"})).is_err());
    }
}
