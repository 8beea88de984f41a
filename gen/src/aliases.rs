//! Other spellings of generated events. Where libpfm4 names one of a model's encodings
//! otherwise than the model's own table does (Intel perfmon's `IDQ_UOPS_NOT_DELIVERED.
//! CYCLES_LE_1_UOP_DELIV.CORE` is libpfm4's `IDQ_UOPS_NOT_DELIVERED:CYCLES_LE_1_UOPS_DELIV_CORE`),
//! the model gets an alias from libpfm4's spelling to its own, found by equal encodings: event
//! select, unit mask, counter mask, edge and invert. Names and codes are facts; nothing else
//! of libpfm4's tables carries over.

use std::collections::BTreeMap;
use std::path::Path;

use crate::GenError;
use crate::cparse::{Fields, integer};
use crate::intel_tables::{AliasTable, for_each_intel_model};
use crate::model::{GenModel, GenUnitMask, Provenance};

/// The values of libpfm4's Intel constants that `.code` and `.ucode` use.
fn constant(name: &str) -> Option<u64> {
    Some(match name {
        "INTEL_X86_EDGE_BIT" => 18,
        "INTEL_X86_ANY_BIT" => 21,
        "INTEL_X86_INV_BIT" => 23,
        "INTEL_X86_CMASK_BIT" => 24,
        "INTEL_X86_MOD_EDGE" => 1 << 18,
        "INTEL_X86_MOD_ANY" => 1 << 21,
        "INTEL_X86_MOD_INV" => 1 << 23,
        _ => return None,
    })
}

/// A C constant expression of integers and libpfm4's Intel constants joined by `|`, `<<` and
/// `+`, with parentheses; `None` for anything else.
pub fn expression(text: &str) -> Option<u64> {
    let tokens = tokens(text)?;
    let mut at = 0;
    let value = or(&tokens, &mut at)?;
    (at == tokens.len()).then_some(value)
}

fn tokens(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '<' {
            chars.next();
            (chars.next()? == '<').then_some(())?;
            out.push("<<".to_string());
        } else if matches!(c, '|' | '+' | '(' | ')') {
            chars.next();
            out.push(c.to_string());
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let mut word = String::new();
            while let Some(&c) = chars
                .peek()
                .filter(|c| c.is_ascii_alphanumeric() || **c == '_')
            {
                word.push(c);
                chars.next();
            }
            out.push(word);
        } else {
            return None;
        }
    }
    Some(out)
}

fn or(tokens: &[String], at: &mut usize) -> Option<u64> {
    let mut value = shift(tokens, at)?;
    while tokens.get(*at).is_some_and(|t| t == "|") {
        *at += 1;
        value |= shift(tokens, at)?;
    }
    Some(value)
}

fn shift(tokens: &[String], at: &mut usize) -> Option<u64> {
    let mut value = sum(tokens, at)?;
    while tokens.get(*at).is_some_and(|t| t == "<<") {
        *at += 1;
        let by = sum(tokens, at)?;
        value = value.checked_shl(u32::try_from(by).ok()?)?;
    }
    Some(value)
}

fn sum(tokens: &[String], at: &mut usize) -> Option<u64> {
    let mut value = atom(tokens, at)?;
    while tokens.get(*at).is_some_and(|t| t == "+") {
        *at += 1;
        value = value.checked_add(atom(tokens, at)?)?;
    }
    Some(value)
}

fn atom(tokens: &[String], at: &mut usize) -> Option<u64> {
    let token = tokens.get(*at)?;
    *at += 1;
    if token == "(" {
        let value = or(tokens, at)?;
        (tokens.get(*at)? == ")").then_some(())?;
        *at += 1;
        return Some(value);
    }
    integer(token).or_else(|| constant(token))
}

/// The EVTSEL bits an encoding sets that identify it: event select 7:0, unit mask 15:8, edge
/// 18, AnyThread 21, invert 23, counter mask 31:24 (no privilege or enable bits).
pub type Bits = u64;

/// Each libpfm4 spelling (`EVENT:UNIT_MASK`, or `EVENT` for an event without unit masks) of
/// table `t` with the bits it encodes; unit masks that need more than the EVTSEL (offcore
/// response, load latency) or belong to another model are left out.
///
/// # Errors
/// A missing or malformed header.
pub fn libpfm4_spellings(
    table: &crate::cparse::Table,
    t: &AliasTable,
) -> Result<Vec<(String, Bits)>, GenError> {
    let (entries, umask_arrays) = (&table.entries, &table.umasks);
    let mut out = Vec::new();
    for entry in entries {
        let (Some(name), Some(code)) = (
            entry.get("name"),
            entry.get("code").and_then(|c| expression(c)),
        ) else {
            continue;
        };
        if code > 0xffff {
            continue;
        }
        let masks: &[Fields] = match entry.get("umasks") {
            Some(array) => umask_arrays
                .get(array)
                .ok_or_else(|| table.error(format!("`{name}`: no unit-mask array `{array}`")))?,
            None => &[],
        };
        if masks.is_empty() {
            out.push((name.clone(), code));
            continue;
        }
        let masks: Vec<&Fields> = masks
            .iter()
            .filter(|m| m.get("umodel").is_none_or(|u| u.trim() == t.pmu))
            .collect();
        let ucode_of = |uname: &str| {
            masks
                .iter()
                .find(|m| m.get("uname").is_some_and(|n| n == uname))
                .and_then(|m| m.get("ucode"))
                .and_then(|c| expression(c))
        };
        // The unit masks of this model: name, group, code, flags. One whose `.ucode` disagrees
        // with the equivalent libpfm4 gives for it (`.uequiv = "DEMAND_RFO:c=1"`) is left
        // out: which of the two libpfm4 means is unknown.
        let masks: Vec<(&String, u64, u64, &str)> = masks
            .iter()
            .filter_map(|m| {
                let group = m.get("grpid").and_then(|g| integer(g)).unwrap_or(0);
                let ucode = m.get("ucode").and_then(|c| expression(c))?;
                if let Some(equivalent) = m.get("uequiv").and_then(|e| equivalent(e, ucode_of))
                    && equivalent & !0xff != ucode & !0xff
                {
                    return None;
                }
                let flags = m.get("uflags").map_or("", String::as_str);
                Some((m.get("uname")?, group, ucode, flags))
            })
            .collect();
        for &(uname, group, ucode, flags) in &masks {
            if ucode > 0xffff_ffff {
                continue;
            }
            // libpfm4 adds the defaults of the other groups (the core-select group's SELF
            // where a cache-state mask is named).
            let defaults = masks
                .iter()
                .filter(|(_, g, _, f)| *g != group && f.contains("INTEL_X86_DFL"))
                .fold(0, |bits, (_, _, c, _)| bits | (c & 0xff00));
            let overrides = flags.contains("INTEL_X86_CODE_OVERRIDE");
            let event = if overrides { ucode & 0xff } else { code & 0xff };
            let bits = event | (code & 0xff00) | (ucode & !0xff) | defaults;
            out.push((format!("{name}:{uname}"), bits));
        }
    }
    Ok(out)
}

/// The `.ucode` a unit mask's `.uequiv` (`ALL:i=1:c=1:t=1`: another unit mask of the event
/// with modifiers) stands for, given the unit masks' codes; `None` when it names no unit mask
/// or a modifier this does not read.
fn equivalent(uequiv: &str, ucode_of: impl Fn(&str) -> Option<u64>) -> Option<u64> {
    let mut parts = uequiv.trim().trim_matches('"').split(':');
    let mut bits = ucode_of(parts.next()?)?;
    for part in parts {
        let (key, value) = part.split_once('=').unwrap_or((part, "1"));
        let value = integer(value)?;
        match key {
            "c" => bits = (bits & !(0xff << 24)) | (value & 0xff) << 24,
            "i" => bits = (bits & !(1 << 23)) | (value & 1) << 23,
            "e" => bits = (bits & !(1 << 18)) | (value & 1) << 18,
            "t" => bits = (bits & !(1 << 21)) | (value & 1) << 21,
            _ => return None,
        }
    }
    Some(bits)
}

/// The bits of each of `model`'s encodings, as the database encodes the name alone, with its
/// name for it (`EVENT.UNIT_MASK`, or `EVENT`): the first name in order where two encode the
/// same.
pub fn encodings(model: &GenModel) -> BTreeMap<Bits, String> {
    let mut out = BTreeMap::new();
    // A unit mask whose own bits make the encoding is preferred to one that gets there with
    // another group's defaults.
    let mut with_defaults = Vec::new();
    // AMD's event bits 11:8 sit in EVTSEL bits 35:32.
    let code_bits = |code: u16| u64::from(code & 0xff) | u64::from(code >> 8) << 32;
    for event in &model.events {
        let base = code_bits(event.code) | u64::from(event.umask.unwrap_or(0)) << 8;
        if event.umasks.is_empty() && event.extra.is_none() {
            out.entry(base).or_insert_with(|| event.name.clone());
        }
        for mask in &event.umasks {
            // An encoding that also programs an extra MSR is not what an EVTSEL alone says.
            if mask.extra.or(event.extra).is_some() {
                continue;
            }
            // As the database encodes a unit mask named alone: with the defaults of the other
            // groups.
            let defaults = event
                .umasks
                .iter()
                .filter(|m| m.group != mask.group && m.default)
                .fold(0u8, |bits, m| bits | m.code);
            let code = code_bits(mask.event.unwrap_or(event.code));
            let bits = code
                | u64::from(mask.code | defaults) << 8
                | u64::from(mask.edge) << 18
                | u64::from(mask.any) << 21
                | u64::from(mask.inv) << 23
                | u64::from(mask.cmask) << 24
                | u64::from(mask.umask_ext) << 40;
            let name = format!("{}.{}", event.name, mask.name);
            if defaults & !mask.code == 0 {
                out.entry(bits).or_insert(name);
            } else {
                with_defaults.push((bits, name));
            }
        }
    }
    for (bits, name) in with_defaults {
        out.entry(bits).or_insert(name);
    }
    out
}

/// Whether `model` already knows `spelling` (`EVENT:UNIT_MASK` or `EVENT`) by name, as the
/// database resolves it (case-insensitive, `.` and `:` alike).
pub fn known(model: &GenModel, spelling: &str) -> bool {
    let spelling = spelling.replace(':', ".");
    // Any `.` may end the event's name (Intel's unit-mask names hold dots of their own).
    let splits = spelling
        .match_indices('.')
        .map(|(at, _)| (&spelling[..at], Some(&spelling[at + 1..])));
    std::iter::once((spelling.as_str(), None))
        .chain(splits)
        .any(|(event, mask)| known_as(model, event, mask))
}

/// Whether `model` has event `event` (with unit mask `mask`, or without unit masks).
fn known_as(model: &GenModel, event: &str, mask: Option<&str>) -> bool {
    model.events.iter().any(|e| {
        e.name.eq_ignore_ascii_case(event)
            && match mask {
                None => e.umasks.is_empty(),
                Some(m) => e.umasks.iter().any(|u| u.name.eq_ignore_ascii_case(m)),
            }
    })
}

/// Adds to `model` an alias for each spelling (libpfm4's, perf's) it does not know by name
/// whose bits one of its encodings has; records where the spellings came from.
pub fn add_aliases(model: &mut GenModel, spellings: &[(String, Bits)], source: Provenance) {
    let ours = encodings(model);
    let mut aliases: BTreeMap<String, String> = model.aliases.drain(..).collect();
    for (spelling, bits) in spellings {
        if known(model, spelling) {
            continue;
        }
        let target = ours
            .get(bits)
            .cloned()
            .or_else(|| combination(model, *bits));
        if let Some(name) = target {
            aliases.entry(spelling.to_ascii_uppercase()).or_insert(name);
        }
    }
    model.aliases = aliases.into_iter().collect();
    model.alias_sources.push(source);
}

/// Several unit masks of one of `model`'s events that together encode `bits` (event select
/// and unit mask, no filters), as `EVENT:MASK:MASK`: perf names such combinations
/// (`all_data_cache_accesses` is Zen's LS_DISPATCH with unit mask 0x07). The masks come from
/// one group of an event that allows combining them, as the database ORs them (with the
/// other groups' defaults); `None` where no combination gives exactly `bits`.
fn combination(model: &GenModel, bits: Bits) -> Option<String> {
    if bits & !(0xf_0000_ffff) != 0 {
        return None;
    }
    let code = u16::try_from(bits & 0xff | (bits >> 32 & 0xf) << 8).ok()?;
    let umask = u8::try_from(bits >> 8 & 0xff).ok()?;
    let event = model
        .events
        .iter()
        .find(|e| e.code == code && e.umask.is_none() && !e.flags.contains(&"exclusive"))?;
    let plain = |m: &&GenUnitMask| {
        m.cmask == 0 && !m.edge && !m.inv && m.event.is_none() && m.counters.is_none()
    };
    let mut groups: Vec<u8> = event.umasks.iter().map(|m| m.group).collect();
    groups.sort_unstable();
    groups.dedup();
    for group in groups {
        let defaults = event
            .umasks
            .iter()
            .filter(|m| m.group != group && m.default)
            .fold(0u8, |bits, m| bits | m.code);
        let mut candidates: Vec<&GenUnitMask> = event
            .umasks
            .iter()
            .filter(plain)
            .filter(|m| m.group == group && m.code != 0 && m.code & !umask == 0)
            .collect();
        // The widest masks first, so that `ALL` is named rather than its parts.
        candidates.sort_by_key(|m| (std::cmp::Reverse(m.code.count_ones()), m.name.clone()));
        let (mut covered, mut chosen) = (0u8, Vec::new());
        for mask in candidates {
            if mask.code & !covered != 0 {
                covered |= mask.code;
                chosen.push(mask.name.as_str());
            }
        }
        if chosen.len() >= 2 && covered | defaults == umask {
            return Some(format!("{}:{}", event.name, chosen.join(":")));
        }
    }
    None
}

/// The kernel's perf JSON directory (under tools/perf/pmu-events/arch/x86) for each AMD model
/// whose perf names become aliases.
pub const PERF_AMD_DIRS: &[(&str, &str)] = &[
    ("amdzen1", "amd64_fam17h_zen1"),
    ("amdzen2", "amd64_fam17h_zen2"),
    ("amdzen3", "amd64_fam19h_zen3"),
    ("amdzen4", "amd64_fam19h_zen4"),
    ("amdzen5", "amd64_fam1ah_zen5"),
];

/// One core event of a perf JSON directory: perf's name, the EVTSEL bits it encodes, and the
/// extra register and value it programs (`MSRIndex`, `MSRValue`: the offcore response), if one.
struct PerfEntry {
    name: String,
    bits: Bits,
    extra: Option<(u32, u64)>,
}

/// The core events of a perf JSON directory; uncore (`Unit`) entries and metrics are left out.
fn perf_entries(dir: &Path) -> Result<Vec<PerfEntry>, GenError> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| GenError::io(dir, &e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        // metricgroups.json describes the metric groups (an object, no events).
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && p.file_name().is_some_and(|n| n != "metricgroups.json")
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| GenError::Data(format!("{}: {e}", path.display())))?;
        let entries = json
            .as_array()
            .ok_or_else(|| GenError::Data(format!("{}: not a list of events", path.display())))?;
        for entry in entries {
            let field = |key: &str| entry.get(key).and_then(serde_json::Value::as_str);
            let (Some(name), Some(code)) = (field("EventName"), field("EventCode")) else {
                continue;
            };
            if field("Unit").is_some() {
                continue;
            }
            let number = |text: &str| {
                u64::from_str_radix(
                    text.trim()
                        .trim_start_matches("0x")
                        .trim_start_matches("0X"),
                    16,
                )
                .ok()
            };
            let (Some(code), Some(umask)) = (number(code), field("UMask").map_or(Some(0), number))
            else {
                continue;
            };
            if code > 0xfff || umask > 0xff {
                continue;
            }
            // One register with its value; a list of two (an event per response register)
            // names no one encoding.
            let extra = match (field("MSRIndex").and_then(number), field("MSRValue")) {
                (Some(msr), Some(value)) if msr != 0 => number(value)
                    .zip(u32::try_from(msr).ok())
                    .map(|(value, msr)| (msr, value)),
                _ => None,
            };
            out.push(PerfEntry {
                name: name.to_string(),
                bits: (code & 0xff) | (code >> 8) << 32 | umask << 8,
                extra,
            });
        }
    }
    Ok(out)
}

/// Each core event name of a perf JSON directory (`ls_mab_alloc.load_store_allocations`) with
/// the bits it encodes; uncore (`Unit`) entries and metrics are left out.
///
/// # Errors
/// A directory or file that cannot be read, or JSON that is not a list of events.
pub fn perf_spellings(dir: &Path) -> Result<Vec<(String, Bits)>, GenError> {
    Ok(perf_entries(dir)?
        .into_iter()
        .map(|e| (e.name, e.bits))
        .collect())
}

/// Adds perf's names of offcore-response events that a model does not know by name, each an
/// alias of the model's unit mask with the same event code, unit mask, register and value:
/// perf's JSON for Nehalem and Westmere (`nehalemep`, `westmereex`, ...) names
/// `OFFCORE_RESPONSE.ANY_DATA.LOCAL_DRAM` what Intel's table names
/// `OFFCORE_RESPONSE_0.ANY_DATA.LOCAL_DRAM` (0xb7/0x01, register 0x1a6 = 0x4011). Each model
/// of `models` with a directory in [`crate::perf_tables::MODELS`] is read from `root`, the
/// kernel's x86 perf JSON (of kernel `version`); a model gets the source line only where it
/// gets an alias.
///
/// # Errors
/// A directory that cannot be read, or JSON that is not a list of events.
pub fn add_perf_offcore_aliases(
    models: &mut [GenModel],
    root: &Path,
    version: &str,
) -> Result<(), GenError> {
    for model in models.iter_mut() {
        let Some((_, dir, _)) = crate::perf_tables::MODELS
            .iter()
            .find(|(id, _, _)| *id == model.id)
        else {
            continue;
        };
        let path = root.join(dir);
        if !path.is_dir() {
            continue;
        }
        let mut aliases: BTreeMap<String, String> = model.aliases.iter().cloned().collect();
        let mut added = 0;
        for entry in perf_entries(&path)? {
            let Some(extra) = entry.extra else {
                continue;
            };
            if known(model, &entry.name) {
                continue;
            }
            let (code, umask) = (entry.bits & 0xf_0000_00ff, entry.bits >> 8 & 0xff);
            let target = model.events.iter().find_map(|event| {
                let event_bits = u64::from(event.code & 0xff) | u64::from(event.code >> 8) << 32;
                event.umasks.iter().find_map(|mask| {
                    let mask_code = u64::from(mask.event.unwrap_or(event.code) & 0xff);
                    (((event_bits & !0xff) | mask_code) == code
                        && u64::from(mask.code) == umask
                        && mask.extra == Some(extra))
                    .then(|| format!("{}.{}", event.name, mask.name))
                })
            });
            if let Some(name) = target {
                let key = entry.name.to_ascii_uppercase();
                if let std::collections::btree_map::Entry::Vacant(slot) = aliases.entry(key) {
                    slot.insert(name);
                    added += 1;
                }
            }
        }
        if added > 0 {
            model.aliases = aliases.into_iter().collect();
            model.alias_sources.push(Provenance {
                source: PERF_SOURCE.to_string(),
                commit: version.to_string(),
                file: format!("tools/perf/pmu-events/arch/x86/{dir}"),
            });
        }
    }
    Ok(())
}

/// Adds perf's names as aliases to each AMD model of `models` that [`PERF_AMD_DIRS`] lists,
/// from the kernel's x86 perf JSON directory `root` (of kernel `version`).
///
/// # Errors
/// As [`perf_spellings`].
pub fn add_perf_aliases(
    models: &mut [GenModel],
    root: &Path,
    version: &str,
) -> Result<(), GenError> {
    for (dir, id) in PERF_AMD_DIRS {
        let Some(model) = models.iter_mut().find(|m| m.id == *id) else {
            continue;
        };
        let spellings = perf_spellings(&root.join(dir))?;
        let source = Provenance {
            source: PERF_SOURCE.to_string(),
            commit: version.to_string(),
            file: format!("tools/perf/pmu-events/arch/x86/{dir}"),
        };
        add_aliases(model, &spellings, source);
    }
    Ok(())
}

/// The source line of perf's names.
pub const PERF_SOURCE: &str =
    "Linux perf JSON (tools/perf/pmu-events, GPL-2.0: names and codes only)";

/// Adds libpfm4's spellings as aliases to each model of `models` that [`INTEL_TABLES`](crate::intel_tables::INTEL_TABLES) lists,
/// from the libpfm4 snapshot at `root` (commit `commit`).
///
/// # Errors
/// A missing or malformed libpfm4 header.
pub fn add_libpfm4_aliases(
    models: &mut [GenModel],
    root: &Path,
    commit: &str,
) -> Result<(), GenError> {
    for_each_intel_model(models, root, |model, t, table| {
        let spellings = libpfm4_spellings(table, t)?;
        add_aliases(model, &spellings, t.provenance(commit));
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(name: &str, code: u8, group: u8, default: bool) -> GenUnitMask {
        GenUnitMask {
            name: name.to_string(),
            code,
            group,
            default,
            ..GenUnitMask::default()
        }
    }

    /// perf's Nehalem-EP JSON (Linux 7.2, tools/perf/pmu-events/arch/x86/nehalemep) names
    /// `OFFCORE_RESPONSE.ANY_DATA.LOCAL_DRAM` (0xB7/0x1, MSR 0x1A6 = 0x4011) what Intel's
    /// table names `OFFCORE_RESPONSE_0.ANY_DATA.LOCAL_DRAM`: it becomes an alias; a value no
    /// unit mask has, a name the model knows and a pair of registers do not.
    #[test]
    fn perfs_offcore_names_alias_the_mask_of_the_same_register_value() {
        let dir = std::env::temp_dir().join(format!("counterhal-gen-ocr-{}", std::process::id()));
        let json = dir.join("nehalemep");
        std::fs::create_dir_all(&json).unwrap();
        let entry = |name: &str, msr: &str, value: &str| {
            format!(
                r#"{{"EventCode": "0xB7", "UMask": "0x1", "EventName": "{name}",
                    "MSRIndex": "{msr}", "MSRValue": "{value}"}}"#
            )
        };
        let entries = [
            entry("OFFCORE_RESPONSE.ANY_DATA.LOCAL_DRAM", "0x1A6", "0x4011"),
            entry("OFFCORE_RESPONSE.ANY_DATA.NOWHERE", "0x1A6", "0x8011"),
            entry("OFFCORE_RESPONSE_0.ANY_DATA.LOCAL_DRAM", "0x1A6", "0x4011"),
            entry("OFFCORE_RESPONSE.PAIR", "0x1a6,0x1a7", "0x4011"),
        ];
        std::fs::write(json.join("cache.json"), format!("[{}]", entries.join(","))).unwrap();
        std::fs::write(json.join("metricgroups.json"), "{}").unwrap();
        let mut model = GenModel {
            id: "nhm".to_string(),
            events: vec![crate::model::GenEvent {
                name: "OFFCORE_RESPONSE_0".to_string(),
                code: 0xb7,
                umasks: vec![GenUnitMask {
                    extra: Some((0x1a6, 0x4011)),
                    ..mask("ANY_DATA.LOCAL_DRAM", 0x01, 0, false)
                }],
                ..crate::model::GenEvent::default()
            }],
            ..GenModel::default()
        };
        let read = add_perf_offcore_aliases(std::slice::from_mut(&mut model), &dir, "7.2");
        std::fs::remove_dir_all(&dir).unwrap();
        read.unwrap();
        assert_eq!(
            model.aliases,
            [(
                "OFFCORE_RESPONSE.ANY_DATA.LOCAL_DRAM".to_string(),
                "OFFCORE_RESPONSE_0.ANY_DATA.LOCAL_DRAM".to_string()
            )]
        );
        assert_eq!(model.alias_sources.len(), 1);
    }

    #[test]
    fn combinations_of_unit_masks_spell_perfs_wider_names() {
        let event = |name: &str, flags: Vec<&'static str>, umasks| crate::model::GenEvent {
            name: name.to_string(),
            code: 0x129,
            flags,
            umasks,
            ..crate::model::GenEvent::default()
        };
        let mut model = GenModel {
            events: vec![event(
                "LS_DISPATCH",
                vec![],
                vec![
                    mask("LD", 0x01, 0, false),
                    mask("ST", 0x02, 0, false),
                    mask("LD_ST", 0x04, 0, false),
                    mask("ALL_BUT_LD", 0x06, 0, false),
                ],
            )],
            ..GenModel::default()
        };
        // AMD event bits 11:8 in 35:32; the widest mask first, then what it leaves.
        let bits = |umask: u64| 0x29 | 1 << 32 | umask << 8;
        assert_eq!(
            combination(&model, bits(0x07)).as_deref(),
            Some("LS_DISPATCH:ALL_BUT_LD:LD")
        );
        assert_eq!(combination(&model, bits(0x08)), None, "no such bit");
        assert_eq!(
            combination(&model, bits(0x02)),
            None,
            "one mask is no combination"
        );
        assert_eq!(combination(&model, bits(0x07) | 1 << 24), None, "filters");
        // Another group's default is part of the encoding the database makes.
        model.events[0]
            .umasks
            .push(mask("CORE_SELF", 0x40, 1, true));
        assert_eq!(combination(&model, bits(0x07)), None);
        assert_eq!(
            combination(&model, bits(0x47)).as_deref(),
            Some("LS_DISPATCH:ALL_BUT_LD:LD")
        );
        // An exclusive event takes one mask at a time.
        model.events[0].flags = vec!["exclusive"];
        assert_eq!(combination(&model, bits(0x47)), None);
    }

    #[test]
    fn expressions_of_libpfm4s_tables_evaluate() {
        assert_eq!(expression("0x3c"), Some(0x3c));
        assert_eq!(
            expression("0x100 | INTEL_X86_MOD_INV | (1 << INTEL_X86_CMASK_BIT)"),
            Some(0x0180_0100)
        );
        assert_eq!(expression("0x1ULL << (0 + 8)"), Some(0x100));
        assert_eq!(expression("(0x1 << 24 | 0x2) << 8"), Some(0x1_0000_0200));
        assert_eq!(expression("0x100 | SOMETHING_ELSE"), None);
        let codes = |name: &str| (name == "ALL").then_some(0x100);
        assert_eq!(equivalent("ALL:i=1:c=1:t=1", codes), Some(0x01a0_0100));
        assert_eq!(equivalent("\"ALL:c=2:e\"", codes), Some(0x0204_0100));
        assert_eq!(equivalent("OTHER:c=1", codes), None);
        assert_eq!(equivalent("ALL:ldlat=3", codes), None);
        assert_eq!(expression("(0x1"), None);
        assert_eq!(expression("0x1 - 1"), None);
    }
}
