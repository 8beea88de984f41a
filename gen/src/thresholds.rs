//! libpfm4's load-latency and frontend unit masks that Intel's tables spell otherwise
//! (`MEM_TRANS_RETIRED:LOAD_LATENCY`, `FRONTEND_RETIRED:IDQ_4_BUBBLES`): each becomes a unit
//! mask of the model's event of the same name with its own extra register value, the one
//! libpfm4 gives it when no threshold is named: load latency 3 cycles (libpfm4's
//! `INTEL_X86_LDLAT_DEFAULT`) in register 0x3f6, the frontend selection with a latency threshold
//! of 1 cycle (`INTEL_X86_FETHR_DEFAULT`) where the unit mask takes one, in register 0x3f7. The
//! `ldlat=` and `fe_thres=` modifiers replace those thresholds, as libpfm4's do. Names, codes and
//! values are facts; nothing else carries over.

use std::collections::BTreeMap;
use std::path::Path;

use crate::GenError;
use crate::aliases::expression;
use crate::cparse::Fields;
use crate::intel_tables::{AliasTable, for_each_intel_model};
use crate::model::{GenModel, GenUnitMask};

/// The load-latency threshold register and libpfm4's default threshold (cycles).
const LOAD_LATENCY: (u32, u64) = (0x3f6, 3);
/// The frontend register and libpfm4's default latency threshold (cycles, bits 19:8).
const FRONTEND: (u32, u64) = (0x3f7, 1);

fn has_flag(fields: &Fields, key: &str, flag: &str) -> bool {
    crate::cparse::flags(fields, key).iter().any(|f| f == flag)
}

/// The unit masks of one libpfm4 event of table `t`'s PMU that program the load-latency or
/// frontend register: (event name, event code, unit mask) each, with its register and value.
fn threshold_masks(
    entry: &Fields,
    umask_arrays: &BTreeMap<String, Vec<Fields>>,
    t: &AliasTable,
) -> Vec<(String, u16, GenUnitMask)> {
    let mut out = Vec::new();
    if entry.get("model").is_some_and(|m| m.trim() != t.pmu) {
        return out;
    }
    let (Some(name), Some(code), Some(masks)) = (
        entry.get("name"),
        entry.get("code").and_then(|c| expression(c)),
        entry.get("umasks").and_then(|u| umask_arrays.get(u)),
    ) else {
        return out;
    };
    if code > 0xffff {
        return out;
    }
    let frontend = has_flag(entry, "flags", "INTEL_X86_FRONTEND");
    for mask in masks
        .iter()
        .filter(|m| m.get("umodel").is_none_or(|u| u.trim() == t.pmu))
    {
        let (Some(uname), Some(ucode)) = (
            mask.get("uname"),
            mask.get("ucode").and_then(|c| expression(c)),
        ) else {
            continue;
        };
        let (umask, extra) = if frontend {
            // The unit mask's bits are the frontend register's; the select keeps the event's.
            let mut value = ucode >> 8;
            if has_flag(mask, "uflags", "INTEL_X86_FETHR") && value >> 8 & 0xfff == 0 {
                value |= FRONTEND.1 << 8;
            }
            (code >> 8, (FRONTEND.0, value))
        } else if has_flag(mask, "uflags", "INTEL_X86_LDLAT") {
            if ucode > 0xffff {
                continue;
            }
            ((code | ucode) >> 8, LOAD_LATENCY)
        } else {
            continue;
        };
        out.push((
            name.clone(),
            (code & 0xff) as u16,
            GenUnitMask {
                name: uname.clone(),
                code: (umask & 0xff) as u8,
                extra: Some(extra),
                ..GenUnitMask::default()
            },
        ));
    }
    out
}

/// Adds libpfm4's load-latency and frontend unit masks to the events of the same name and code
/// in each model of [`INTEL_TABLES`](crate::intel_tables::INTEL_TABLES) in `models`, where the event has no unit mask of that name.
///
/// # Errors
/// A missing or malformed header.
pub fn add_libpfm4_threshold_masks(
    models: &mut [GenModel],
    root: &Path,
    commit: &str,
) -> Result<(), GenError> {
    for_each_intel_model(models, root, |model, t, table| {
        let (entries, umask_arrays) = (&table.entries, &table.umasks);
        let mut added = false;
        for entry in entries {
            for (name, code, mask) in threshold_masks(entry, umask_arrays, t) {
                let valid = mask.name.len() > 1
                    && mask
                        .name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_');
                let Some(event) = model
                    .events
                    .iter_mut()
                    .find(|e| e.name == name && e.code == code && e.umask.is_none())
                else {
                    continue;
                };
                if !valid
                    || event.umasks.is_empty()
                    || event
                        .umasks
                        .iter()
                        .any(|m| m.name.eq_ignore_ascii_case(&mask.name))
                {
                    continue;
                }
                event.umasks.push(mask);
                event.umasks.sort_by(|a, b| a.name.cmp(&b.name));
                added = true;
            }
        }
        if added {
            crate::offcore::record_source(model, commit, t);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cparse::{arrays, strip_comments};

    const TABLE: &str = r#"
static const intel_x86_umask_t t_trans[]={
  { .uname = "LOAD_LATENCY", .ucode = 0x100, .uflags = INTEL_X86_NCOMBO | INTEL_X86_LDLAT },
  { .uname = "PRECISE_STORE", .ucode = 0x200 },
};
static const intel_x86_umask_t t_fe[]={
  { .uname = "DSB_MISS", .ucode = 0x11 << 8, .uflags = INTEL_X86_NCOMBO },
  { .uname = "IDQ_2_BUBBLES", .ucode = (2 << 20 | 0x6) << 8, .uflags = INTEL_X86_NCOMBO | INTEL_X86_FETHR },
  { .uname = "LATENCY_GE_8", .ucode = (1 << 20 | 8 << 8 | 0x6) << 8, .uflags = INTEL_X86_FETHR },
};
static const intel_x86_entry_t t_pe[]={
{ .name = "MEM_TRANS_RETIRED", .code = 0xcd, .umasks = t_trans },
{ .name = "FRONTEND_RETIRED", .code = 0x1c6, .flags = INTEL_X86_FRONTEND | INTEL_X86_PEBS, .umasks = t_fe },
};
"#;

    /// Event name, event code, unit-mask name, unit-mask byte, extra register.
    type Row = (String, u16, String, u8, Option<(u32, u64)>);

    #[test]
    fn load_latency_and_frontend_masks_get_libpfm4s_default_thresholds() {
        let text = strip_comments(TABLE);
        let umasks = arrays(&text, "intel_x86_umask_t").unwrap();
        let entries = arrays(&text, "intel_x86_entry_t").unwrap();
        let t = AliasTable {
            id: "x",
            file: "t.h",
            array: "t_pe",
            pmu: "PFM_PMU_INTEL_X",
        };
        let found: Vec<Row> = entries["t_pe"]
            .iter()
            .flat_map(|e| threshold_masks(e, &umasks, &t))
            .map(|(event, code, m)| (event, code, m.name, m.code, m.extra))
            .collect();
        let row = |e: &str, c, m: &str, u, x| (e.to_string(), c, m.to_string(), u, Some(x));
        assert_eq!(
            found,
            [
                row("MEM_TRANS_RETIRED", 0xcd, "LOAD_LATENCY", 0x01, (0x3f6, 3)),
                row("FRONTEND_RETIRED", 0xc6, "DSB_MISS", 0x01, (0x3f7, 0x11)),
                row(
                    "FRONTEND_RETIRED",
                    0xc6,
                    "IDQ_2_BUBBLES",
                    0x01,
                    (0x3f7, 0x20_0106)
                ),
                row(
                    "FRONTEND_RETIRED",
                    0xc6,
                    "LATENCY_GE_8",
                    0x01,
                    (0x3f7, 0x10_0806)
                ),
            ]
        );
    }
}
