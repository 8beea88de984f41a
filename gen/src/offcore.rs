//! libpfm4's offcore-response events (`OFFCORE_RESPONSE_0`, `OFFCORE_RESPONSE_1`, `OCR`), whose
//! unit masks are bits of the offcore-response register rather than of the event select: a
//! request, supplier or snoop bit each (`OFFCORE_RESPONSE_0:DMND_DATA_RD:L3_MISS_LOCAL`) on
//! Nehalem to Skylake, Silvermont, Goldmont and Knights Landing, or one whole register value
//! each on Ice Lake and later. Each becomes a register-bit unit mask (`extra_bits`) with its
//! group, default and libpfm4's combination flags; an event a model already has under the same
//! name (Intel's `OCR`, Nehalem's `OFFCORE_RESPONSE_0`) gets libpfm4's unit masks beside its
//! own. Names, codes, bits, groups and flags are facts; nothing else carries over.

use std::collections::BTreeMap;
use std::path::Path;

use crate::GenError;
use crate::aliases::expression;
use crate::cparse::{Fields, flags, integer};
use crate::intel_tables::{AliasTable, for_each_intel_model};
use crate::model::{Combine, GenEvent, GenModel, GenUnitMask};

/// The offcore-response register an event select programs (event code, unit mask), as Intel's
/// tables pair them: `EventCode 0xB7,0xBB` (Sapphire Rapids `0x2A,0x2B`) with `MSRIndex
/// 0x1a6,0x1a7`, and on Atom cores event 0xB7 with `UMask 0x01,0x02`.
pub fn offcore_register(code: u8, umask: u8) -> Option<u32> {
    match (code, umask) {
        (0xb7 | 0x2a, 0x01) => Some(0x1a6),
        (0xbb | 0x2b, 0x01) | (0xb7, 0x02) => Some(0x1a7),
        _ => None,
    }
}

/// libpfm4's unit-mask flags a register-bit mask may carry; any other leaves its event out.
const KNOWN_FLAGS: [&str; 6] = [
    "INTEL_X86_NCOMBO",
    "INTEL_X86_DFL",
    "INTEL_X86_EXCL_GRP_GT",
    "INTEL_X86_EXCL_GRP_BUT_0",
    "INTEL_X86_GRP_DFL_NONE",
    "INTEL_X86_PEBS",
];

/// Why a libpfm4 offcore-response event is left out (counted in the model's header).
const CLASH: &str =
    "libpfm4 offcore-response events whose name the model's table gives another encoding";
const UNREAD: &str = "libpfm4 offcore-response events with fields the generator does not read";

fn valid_name(name: &str) -> bool {
    name.len() > 1
        && !name.eq_ignore_ascii_case("uk")
        && !name.eq_ignore_ascii_case("ku")
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One libpfm4 offcore-response event of table `t`'s PMU: its name, event code, unit-mask byte,
/// register and register-bit masks, sorted by name; `None` where it is no offcore-response
/// event, `Some(Err(()))` where it is one the generator cannot read.
fn offcore_event(
    entry: &Fields,
    umask_arrays: &BTreeMap<String, Vec<Fields>>,
    t: &AliasTable,
    general: u32,
) -> Option<Result<(GenEvent, u32), ()>> {
    let event_flags = flags(entry, "flags");
    if !event_flags.iter().any(|f| f == "INTEL_X86_NHM_OFFCORE") {
        return None;
    }
    if entry.get("model").is_some_and(|m| m.trim() != t.pmu) {
        return None;
    }
    Some(read_event(entry, umask_arrays, t, general, &event_flags).ok_or(()))
}

fn read_event(
    entry: &Fields,
    umask_arrays: &BTreeMap<String, Vec<Fields>>,
    t: &AliasTable,
    general: u32,
    event_flags: &[String],
) -> Option<(GenEvent, u32)> {
    let name = entry.get("name").filter(|n| valid_name(n))?;
    if event_flags
        .iter()
        .any(|f| !matches!(f.as_str(), "INTEL_X86_NHM_OFFCORE" | "INTEL_X86_SPEC"))
    {
        return None;
    }
    let code = entry.get("code").and_then(|c| expression(c))?;
    let (event_code, umask) = (
        u8::try_from(code & 0xff).ok()?,
        u8::try_from(code >> 8).ok()?,
    );
    let register = offcore_register(event_code, umask)?;
    let cntmsk = entry
        .get("cntmsk")
        .and_then(|c| integer(c))
        .unwrap_or((1 << general) - 1);
    let counters: Vec<u32> = (0..general).filter(|i| cntmsk >> i & 1 == 1).collect();
    if counters.is_empty() {
        return None;
    }
    let masks = umask_arrays.get(entry.get("umasks")?)?;
    let masks: Vec<&Fields> = masks
        .iter()
        .filter(|m| m.get("umodel").is_none_or(|u| u.trim() == t.pmu))
        .collect();
    let mut umasks: Vec<GenUnitMask> = Vec::new();
    for &mask in &masks {
        let uname = mask.get("uname").filter(|n| valid_name(n))?;
        let ucode = mask.get("ucode").and_then(|c| expression(c))?;
        let uflags = flags(mask, "uflags");
        if ucode & 0xff != 0 || uflags.iter().any(|f| !KNOWN_FLAGS.contains(&f.as_str())) {
            return None;
        }
        let group = mask.get("grpid").map_or(Some(0), |g| integer(g))?;
        let has = |flag: &str| uflags.iter().any(|f| f == flag);
        if umasks.iter().any(|m| m.name.eq_ignore_ascii_case(uname)) {
            // libpfm4 matches the first of two unit masks of one name.
            continue;
        }
        let same_as = match mask.get("uequiv") {
            None => Vec::new(),
            // libpfm4 cannot encode a unit mask whose equivalent it cannot find.
            Some(equiv) => match equivalents(&masks, equiv, 0) {
                Some(names) => names,
                None => continue,
            },
        };
        umasks.push(GenUnitMask {
            same_as,
            name: uname.clone(),
            code: umask,
            default: has("INTEL_X86_DFL"),
            group: u8::try_from(group).ok()?,
            extra_bits: Some(ucode >> 8),
            combine: Combine {
                alone_in_group: has("INTEL_X86_NCOMBO"),
                excludes_later_groups: has("INTEL_X86_EXCL_GRP_GT"),
                excludes_other_groups: has("INTEL_X86_EXCL_GRP_BUT_0"),
                group_may_be_empty: has("INTEL_X86_GRP_DFL_NONE"),
            },
            ..GenUnitMask::default()
        });
    }
    // libpfm4 counts the groups in `.ngrp`; every one must have unit masks here.
    let groups = entry.get("ngrp").and_then(|g| integer(g)).unwrap_or(1);
    if umasks.is_empty() || (0..groups).any(|g| !umasks.iter().any(|m| u64::from(m.group) == g)) {
        return None;
    }
    umasks.sort_by(|a, b| a.name.cmp(&b.name));
    let event = GenEvent {
        name: name.clone(),
        code: u16::from(event_code),
        counters: (counters.len() as u32 != general).then_some(counters),
        extra: Some((register, 0)),
        umasks,
        ..GenEvent::default()
    };
    Some((event, register))
}

/// The unit masks libpfm4 parses `equiv` (`.uequiv`, `A:B`) as, each replaced by its own
/// equivalents in turn: the first unit mask of each name, in order, without repeats; `None`
/// where a name is missing, a part gives a value (`c=1`) or equivalents nest too deep.
fn equivalents(masks: &[&Fields], equiv: &str, depth: u32) -> Option<Vec<String>> {
    if depth > 8 {
        return None;
    }
    let mut out: Vec<String> = Vec::new();
    for part in equiv.trim().trim_matches('"').split(':') {
        let mask = masks
            .iter()
            .find(|m| m.get("uname").is_some_and(|n| n.eq_ignore_ascii_case(part)))?;
        let names = match mask.get("uequiv") {
            Some(inner) => equivalents(masks, inner, depth + 1)?,
            None => vec![mask.get("uname")?.clone()],
        };
        for name in names {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    Some(out)
}

/// Adds `event` (libpfm4's) to `model`: as a new event, or its unit masks beside those of the
/// model's event of the same name where that one is an offcore-response event of the same
/// select and register whose unit masks each bring their own register value. `false` where the
/// name is taken otherwise.
fn add_event(model: &mut GenModel, event: GenEvent, register: u32) -> bool {
    let umask = event.umasks[0].code;
    let Some(ours) = model
        .events
        .iter_mut()
        .find(|e| e.name.eq_ignore_ascii_case(&event.name))
    else {
        let at = model.events.partition_point(|e| e.name < event.name);
        model.events.insert(at, event);
        return true;
    };
    let compatible = ours.code == event.code
        && ours.umask.is_none()
        && ours.extra.is_none()
        && !ours.umasks.is_empty()
        && ours.umasks.iter().all(|m| {
            m.code == umask && m.event.is_none() && m.extra.is_some_and(|(r, _)| r == register)
        });
    if !compatible {
        return false;
    }
    ours.extra = Some((register, 0));
    for mask in event.umasks {
        if !ours
            .umasks
            .iter()
            .any(|m| m.name.eq_ignore_ascii_case(&mask.name))
        {
            ours.umasks.push(mask);
        }
    }
    ours.umasks.sort_by(|a, b| a.name.cmp(&b.name));
    true
}

/// Notes in `model`'s header that unit masks with an extra register value came from table `t`.
pub fn record_source(model: &mut GenModel, commit: &str, t: &AliasTable) {
    let source = t.provenance(commit);
    if !model.extra_mask_sources.contains(&source) {
        model.extra_mask_sources.push(source);
    }
}

/// `entry` as libpfm4 encodes it: an event with `.equiv` naming another event of the table
/// (Sapphire Rapids' `OFFCORE_RESPONSE_1` is `.equiv = "OCR"`) is parsed as that event, so
/// its event code (and with it its offcore register) is the other event's.
fn as_equivalent(entry: &Fields, entries: &[Fields]) -> Fields {
    let mut entry = entry.clone();
    let equiv = entry
        .get("equiv")
        .map(|e| e.trim().trim_matches('"').to_string());
    let target = equiv.and_then(|name| {
        entries
            .iter()
            .find(|e| e.get("name").is_some_and(|n| *n == name))
    });
    if let Some(code) = target.and_then(|t| t.get("code")) {
        entry.insert("code".to_string(), code.clone());
    }
    entry
}

/// Adds libpfm4's offcore-response events to each model of [`INTEL_TABLES`](crate::intel_tables::INTEL_TABLES) in `models`.
///
/// # Errors
/// A missing or malformed header.
pub fn add_libpfm4_offcore(
    models: &mut [GenModel],
    root: &Path,
    commit: &str,
) -> Result<(), GenError> {
    for_each_intel_model(models, root, |model, t, table| {
        let (entries, umask_arrays) = (&table.entries, &table.umasks);
        let mut left: BTreeMap<&str, usize> = BTreeMap::new();
        let mut added = false;
        for entry in entries {
            let entry = &as_equivalent(entry, entries);
            match offcore_event(entry, umask_arrays, t, model.general_counters) {
                None => {}
                Some(Err(())) => *left.entry(UNREAD).or_default() += 1,
                Some(Ok((event, register))) => {
                    if add_event(model, event, register) {
                        added = true;
                    } else {
                        *left.entry(CLASH).or_default() += 1;
                    }
                }
            }
        }
        model
            .left_out
            .extend(left.into_iter().map(|(why, n)| (why.to_string(), n)));
        model.left_out.sort();
        if added {
            record_source(model, commit, t);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cparse::{arrays, strip_comments};

    const TABLE: &str = r#"
static const intel_x86_umask_t t_offcore[]={
  { .uname = "DMND_DATA_RD", .ucode = 1ULL << (0 + 8), .grpid = 0 },
  { .uname = "DMND_RFO", .ucode = 1ULL << (1 + 8), .grpid = 0 },
  { .uname = "ANY_DMND", .ucode = 0x300, .uequiv = "DMND_DATA_RD:DMND_RFO", .grpid = 0 },
  { .uname = "ANY_REQUEST", .ucode = 0x8fff00, .uflags = INTEL_X86_NCOMBO | INTEL_X86_DFL, .grpid = 0 },
  { .uname = "ANY_RESPONSE", .ucode = 1ULL << (16 + 8),
    .uflags = INTEL_X86_NCOMBO | INTEL_X86_DFL | INTEL_X86_EXCL_GRP_GT, .grpid = 1 },
  { .uname = "REMOTE", .ucode = 0xffULL << (23 + 8), .grpid = 1, .umodel = PFM_PMU_INTEL_X_EP },
};
static const intel_x86_entry_t t_pe[]={
{ .name = "OFFCORE_RESPONSE_1", .code = 0x1bb, .cntmsk = 0xf, .flags = INTEL_X86_NHM_OFFCORE,
  .ngrp = 2, .umasks = t_offcore },
{ .name = "INST_RETIRED", .code = 0xc0, .cntmsk = 0xf },
};
"#;

    fn read(pmu: &'static str) -> Vec<(GenEvent, u32)> {
        let text = strip_comments(TABLE);
        let umasks = arrays(&text, "intel_x86_umask_t").unwrap();
        let entries = arrays(&text, "intel_x86_entry_t").unwrap();
        let t = AliasTable {
            id: "x",
            file: "t.h",
            array: "t_pe",
            pmu,
        };
        entries["t_pe"]
            .iter()
            .filter_map(|e| offcore_event(e, &umasks, &t, 4))
            .map(|e| e.expect("readable"))
            .collect()
    }

    #[test]
    fn an_event_equivalent_to_another_takes_its_code_as_libpfm4_parses_it() {
        let entry = |name: &str, code: &str, equiv: Option<&str>| {
            let mut fields = Fields::new();
            fields.insert("name".to_string(), name.to_string());
            fields.insert("code".to_string(), code.to_string());
            if let Some(equiv) = equiv {
                fields.insert("equiv".to_string(), equiv.to_string());
            }
            fields
        };
        let entries = [
            entry("OCR", "0x012a", None),
            entry("OFFCORE_RESPONSE_1", "0x012b", Some("\"OCR\"")),
            entry("LONELY", "0x01bb", Some("\"MISSING\"")),
        ];
        let code = |e: &Fields| as_equivalent(e, &entries)["code"].clone();
        assert_eq!(code(&entries[1]), "0x012a");
        assert_eq!(code(&entries[0]), "0x012a");
        assert_eq!(
            code(&entries[2]),
            "0x01bb",
            "an unknown equivalent changes nothing"
        );
    }

    #[test]
    fn registers_pair_with_event_selects_as_intel_gives_them() {
        assert_eq!(offcore_register(0xb7, 0x01), Some(0x1a6));
        assert_eq!(offcore_register(0xbb, 0x01), Some(0x1a7));
        assert_eq!(offcore_register(0x2a, 0x01), Some(0x1a6));
        assert_eq!(offcore_register(0x2b, 0x01), Some(0x1a7));
        assert_eq!(offcore_register(0xb7, 0x02), Some(0x1a7));
        assert_eq!(offcore_register(0xc0, 0x01), None);
    }

    #[test]
    fn unit_masks_become_register_bits_with_groups_flags_and_equivalents() {
        let events = read("PFM_PMU_INTEL_X");
        assert_eq!(events.len(), 1);
        let (event, register) = &events[0];
        assert_eq!(
            (event.name.as_str(), event.code, *register),
            ("OFFCORE_RESPONSE_1", 0xbb, 0x1a7)
        );
        assert_eq!(event.extra, Some((0x1a7, 0)));
        let names: Vec<&str> = event.umasks.iter().map(|m| m.name.as_str()).collect();
        // REMOTE belongs to another model.
        assert_eq!(
            names,
            [
                "ANY_DMND",
                "ANY_REQUEST",
                "ANY_RESPONSE",
                "DMND_DATA_RD",
                "DMND_RFO"
            ]
        );
        let response = &event.umasks[2];
        assert_eq!(
            (
                response.code,
                response.extra_bits,
                response.group,
                response.default
            ),
            (0x01, Some(0x1_0000), 1, true)
        );
        assert!(response.combine.alone_in_group && response.combine.excludes_later_groups);
        assert_eq!(event.umasks[0].same_as, ["DMND_DATA_RD", "DMND_RFO"]);
        let on_ep = read("PFM_PMU_INTEL_X_EP");
        assert!(on_ep[0].0.umasks.iter().any(|m| m.name == "REMOTE"));
    }

    #[test]
    fn an_event_of_the_same_name_takes_the_unit_masks_only_if_it_is_offcore_alike() {
        let (event, register) = read("PFM_PMU_INTEL_X").remove(0);
        let intel = GenEvent {
            name: "OFFCORE_RESPONSE_1".to_string(),
            code: 0xbb,
            umasks: vec![GenUnitMask {
                name: "DEMAND_DATA_RD.ANY_RESPONSE".to_string(),
                code: 0x01,
                extra: Some((0x1a7, 0x1_0001)),
                ..GenUnitMask::default()
            }],
            ..GenEvent::default()
        };
        let mut model = GenModel {
            events: vec![intel.clone()],
            ..GenModel::default()
        };
        assert!(add_event(&mut model, event.clone(), register));
        assert_eq!(model.events.len(), 1);
        assert_eq!(model.events[0].umasks.len(), 6);
        assert_eq!(model.events[0].extra, Some((0x1a7, 0)));
        // An event of that name programming another register keeps its own.
        let mut other = intel;
        other.umasks[0].extra = Some((0x1a6, 0x1_0001));
        let mut model = GenModel {
            events: vec![other],
            ..GenModel::default()
        };
        assert!(!add_event(&mut model, event, register));
        assert_eq!(model.events[0].umasks.len(), 1);
    }
}
