//! The AMD cores only the Linux kernel's perf JSON describes (libpfm4 has no table for them):
//! one model per directory of [`JSON_MODELS`] under `tools/perf/pmu-events/arch/x86`, its core
//! events as perf names them (`ls_dispatch.ld_dispatch`: the event `LS_DISPATCH`, its unit
//! mask `LD_DISPATCH`), with perf's event code and unit mask. Facts only: names and codes.
//!
//! perf's names are whole encodings, which perf never combines: an event's unit masks are taken
//! one at a time (`exclusive`). Their codes are not always bit fields: Zen 6's
//! `fp_ret_sse_avx_ops` unit masks 0x20-0xa0 number a FLOP type in bits 7:5, where ORing two
//! would name a third.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::GenError;
use crate::model::{GenEvent, GenModel, GenUnitMask, Provenance, Signature};

/// One AMD core whose table is perf's JSON.
pub struct JsonTable {
    /// perf's directory (the third column of `mapfile.csv`).
    pub dir: &'static str,
    /// The model id.
    pub id: &'static str,
    /// Our one-line description.
    pub description: &'static str,
    /// The AMD family; the hand-written overlay states the models (perf's mapfile row).
    pub family: u32,
    /// General counters: the kernel's `AMD64_NUM_COUNTERS_CORE` (PerfMonV2 CPUs report theirs
    /// in CPUID 0x80000022, which the kernel reads at boot).
    pub counters: u32,
}

/// The cores generated from perf's JSON, in match order.
pub const JSON_MODELS: &[JsonTable] = &[JsonTable {
    dir: "amdzen6",
    id: "amd64_fam1ah_zen6",
    description: "AMD family 1Ah Zen 6",
    family: 0x1a,
    counters: 6,
}];

/// One core event as perf names it: its name, event code and unit mask (if any).
pub type PerfEvent = (String, u16, Option<u8>);

/// The source line of the generated files.
pub const SOURCE: &str =
    "Linux kernel perf JSON (tools/perf/pmu-events/arch/x86, GPL-2.0; facts only: names and codes)";

/// A hex field of a JSON entry (`"0x1a0"`).
fn hex(text: &str, what: &str) -> Result<u64, GenError> {
    let digits = text
        .trim()
        .trim_start_matches("0x")
        .trim_start_matches("0X");
    u64::from_str_radix(digits, 16)
        .map_err(|_| GenError::Data(format!("{what}: `{text}` is not a hex number")))
}

/// The core events of one perf directory: (perf's name, event code, unit mask), in file and
/// entry order, and the files that held them. Uncore (`Unit`) entries and metrics are left
/// out; an entry with an encoding field other than `EventCode` and `UMask` is an error (the
/// schema of these tables holds no other).
///
/// # Errors
/// A file that cannot be read or parsed, or an entry as above.
pub fn core_events(dir: &Path) -> Result<(Vec<PerfEvent>, Vec<String>), GenError> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| GenError::io(dir, &e))?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    let mut used = Vec::new();
    for file in files {
        let path = dir.join(&file);
        let text = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
        let json: Value = serde_json::from_str(&text)
            .map_err(|e| GenError::Data(format!("{}: {e}", path.display())))?;
        let entries = json
            .as_array()
            .ok_or_else(|| GenError::Data(format!("{}: not a list of events", path.display())))?;
        let before = out.len();
        for entry in entries {
            let Some(object) = entry.as_object() else {
                continue;
            };
            let field = |key: &str| object.get(key).and_then(Value::as_str);
            let Some(name) = field("EventName") else {
                continue;
            };
            if object.contains_key("Unit") || object.contains_key("MetricName") {
                continue;
            }
            let what = format!("{file}: {name}");
            if let Some(key) = object.keys().find(|k| {
                !matches!(
                    k.as_str(),
                    "EventName" | "EventCode" | "UMask" | "BriefDescription" | "PublicDescription"
                ) && !k.starts_with("BriefDescript")
            }) {
                return Err(GenError::Data(format!(
                    "{what}: field `{key}` is not one this table holds"
                )));
            }
            let code = hex(
                field("EventCode")
                    .ok_or_else(|| GenError::Data(format!("{what}: no EventCode")))?,
                &what,
            )?;
            let code = u16::try_from(code)
                .ok()
                .filter(|c| *c <= 0xfff)
                .ok_or_else(|| GenError::Data(format!("{what}: event code {code:#x} > 0xfff")))?;
            let umask = field("UMask")
                .map(|text| {
                    hex(text, &what).and_then(|v| {
                        u8::try_from(v)
                            .map_err(|_| GenError::Data(format!("{what}: unit mask {v:#x} > 0xff")))
                    })
                })
                .transpose()?;
            out.push((name.to_string(), code, umask));
        }
        if out.len() > before {
            used.push(file);
        }
    }
    Ok((out, used))
}

/// The events of perf's `names`: each name before its first `.` an event, what follows it a
/// unit mask (with its own event code where it differs from the event's, the first one's);
/// a name without a `.` an event with its unit mask always set. Sorted by name.
///
/// # Errors
/// A name both alone and before a `.`, or given twice.
pub fn events(names: &[PerfEvent]) -> Result<Vec<GenEvent>, GenError> {
    let mut by_event: BTreeMap<String, GenEvent> = BTreeMap::new();
    let mut alone = std::collections::BTreeSet::new();
    for (name, code, umask) in names {
        let upper = name.to_ascii_uppercase();
        let (event_name, mask_name) = match upper.split_once('.') {
            Some((event, mask)) => (event.to_string(), Some(mask.to_string())),
            None => (upper.clone(), None),
        };
        let clash = || GenError::Data(format!("`{name}`: given twice, or alone and with a `.`"));
        let event = by_event
            .entry(event_name.clone())
            .or_insert_with(|| GenEvent {
                name: event_name,
                code: *code,
                ..GenEvent::default()
            });
        match mask_name {
            None => {
                if !event.umasks.is_empty() || !alone.insert(event.name.clone()) {
                    return Err(clash());
                }
                event.umask = Some(umask.unwrap_or(0)).filter(|u| *u != 0);
            }
            Some(mask) => {
                if alone.contains(&event.name) || event.umasks.iter().any(|m| m.name == mask) {
                    return Err(clash());
                }
                event.umasks.push(GenUnitMask {
                    name: mask,
                    code: umask.unwrap_or(0),
                    event: (*code != event.code).then_some(*code),
                    ..GenUnitMask::default()
                });
            }
        }
    }
    let mut out: Vec<GenEvent> = by_event.into_values().collect();
    for event in &mut out {
        event.umasks.sort_by(|a, b| a.name.cmp(&b.name));
        if !event.umasks.is_empty() {
            event.flags.push("exclusive");
        }
    }
    Ok(out)
}

/// Every core of [`JSON_MODELS`] whose directory the kernel tree's `x86` directory
/// (`tools/perf/pmu-events/arch/x86`, of kernel `version`) holds.
///
/// # Errors
/// As [`core_events`] and [`events`].
pub fn models(x86: &Path, version: &str) -> Result<Vec<GenModel>, GenError> {
    let mut out = Vec::new();
    for t in JSON_MODELS {
        let dir = x86.join(t.dir);
        if !dir.is_dir() {
            continue;
        }
        let (names, files) = core_events(&dir)?;
        out.push(GenModel {
            id: t.id.to_string(),
            description: format!("{} core PMU", t.description),
            encoder: "amd64",
            signatures: vec![Signature {
                vendor: "amd",
                family: t.family,
                model: None,
                last_model: None,
                steppings: Vec::new(),
            }],
            general_counters: t.counters,
            counter_width: 48,
            source: Provenance {
                source: SOURCE.to_string(),
                commit: version.to_string(),
                file: format!(
                    "tools/perf/pmu-events/arch/x86/{}/{{{}}} ({} core events)",
                    t.dir,
                    files.join(","),
                    names.len()
                ),
            },
            events: events(&names)?,
            ..GenModel::default()
        });
    }
    Ok(out)
}

/// Adds perf's names of the AMD models [`crate::aliases::PERF_AMD_DIRS`] lists that neither
/// the model's own (libpfm4's) table nor an alias spells, from the kernel tree's x86 perf JSON
/// `root` (of kernel `version`), after [`crate::aliases::add_perf_aliases`]: each becomes a unit
/// mask with perf's unit mask, named as perf names it after its `.`, of the table's event of
/// perf's event code (one with unit masks, none always set, no extra register), where the
/// event has no unit mask of that name and the defaults of its other groups are bits of perf's
/// unit mask (so that the mask named alone encodes exactly perf's); and perf's name an alias of
/// it where it is not the mask's own name. Zen 5's `fp_ret_sse_avx_ops.bfloat16_flops` (0x03,
/// unit mask 0x20) becomes `RETIRED_SSE_AVX_FLOPS.BFLOAT16_FLOPS`, whose libpfm4 masks give the
/// FLOP type with the operation group's default `ANY` (0x2f). The tree's alias source line
/// counts them.
///
/// # Errors
/// As [`crate::aliases::perf_spellings`].
pub fn add_perf_unit_masks(
    models: &mut [GenModel],
    root: &Path,
    version: &str,
) -> Result<(), GenError> {
    for (dir, id) in crate::aliases::PERF_AMD_DIRS {
        let Some(model) = models.iter_mut().find(|m| m.id == *id) else {
            continue;
        };
        let mut added = 0;
        for (spelling, bits) in crate::aliases::perf_spellings(&root.join(dir))? {
            let upper = spelling.to_ascii_uppercase();
            let aliased = model.aliases.iter().any(|(alias, _)| *alias == upper);
            if aliased || crate::aliases::known(model, &upper) || bits & !0xf_0000_ffff != 0 {
                continue;
            }
            let Some((_, mask)) = upper.split_once('.') else {
                continue;
            };
            let code = u16::try_from(bits & 0xff | (bits >> 32 & 0xf) << 8).unwrap_or(u16::MAX);
            let umask = u8::try_from(bits >> 8 & 0xff).unwrap_or(0);
            let Some(event) = model.events.iter_mut().find(|e| {
                e.code == code && e.umask.is_none() && e.extra.is_none() && !e.umasks.is_empty()
            }) else {
                continue;
            };
            let defaults = event
                .umasks
                .iter()
                .filter(|m| m.group != 0 && m.default)
                .fold(0u8, |all, m| all | m.code);
            if defaults & !umask != 0 || event.umasks.iter().any(|m| m.name == mask) {
                continue;
            }
            event.umasks.push(GenUnitMask {
                name: mask.to_string(),
                code: umask,
                ..GenUnitMask::default()
            });
            event.umasks.sort_by(|a, b| a.name.cmp(&b.name));
            let target = format!("{}.{mask}", event.name);
            if target != upper {
                model.aliases.push((upper, target));
            }
            added += 1;
        }
        model.aliases.sort();
        count_added(
            model,
            version,
            added,
            "unit masks of perf's encodings, which this table's masks do not give",
        );
    }
    Ok(())
}

/// Adds the core events of perf's JSON whose event code the model's table has no event of,
/// for the AMD models [`crate::aliases::PERF_AMD_DIRS`] lists, from the kernel tree's x86 perf
/// JSON `root` (of kernel `version`), after [`add_perf_unit_masks`]: libpfm4's Zen 2 table has
/// no event 0x46, which perf names `ls_tablewalker.dside` and five more. Each becomes an event
/// as the JSON-only models' are ([`events`]), named as perf names it; a name the model knows or
/// aliases is skipped, and so is an event whose name the table already holds. The tree's alias
/// source line counts them.
///
/// # Errors
/// As [`crate::aliases::perf_spellings`] and [`events`].
pub fn add_perf_events(
    models: &mut [GenModel],
    root: &Path,
    version: &str,
) -> Result<(), GenError> {
    for (dir, id) in crate::aliases::PERF_AMD_DIRS {
        let Some(model) = models.iter_mut().find(|m| m.id == *id) else {
            continue;
        };
        let codes: std::collections::BTreeSet<u16> = model
            .events
            .iter()
            .flat_map(|e| std::iter::once(e.code).chain(e.umasks.iter().filter_map(|m| m.event)))
            .collect();
        let perf = crate::aliases::perf_spellings(&root.join(dir))?;
        let missing: Vec<PerfEvent> = perf
            .into_iter()
            .map(|(name, bits)| {
                let code = (bits & 0xff | (bits >> 32 & 0xf) << 8) as u16;
                (name, code, Some((bits >> 8 & 0xff) as u8))
            })
            .filter(|(name, code, _)| {
                let upper = name.to_ascii_uppercase();
                !codes.contains(code)
                    && !model.aliases.iter().any(|(alias, _)| *alias == upper)
                    && !crate::aliases::known(model, &upper)
            })
            .collect();
        let mut added = 0;
        for event in events(&missing)? {
            if model.events.iter().any(|e| e.name == event.name) {
                continue;
            }
            added += event.umasks.len().max(1);
            model.events.push(event);
        }
        model.events.sort_by(|a, b| a.name.cmp(&b.name));
        count_added(
            model,
            version,
            added,
            "names of events this table does not have",
        );
    }
    Ok(())
}

/// Counts `added` (what, `what`) on the source line of perf's tree of kernel `version` in
/// `model`'s header; nothing where none was added.
fn count_added(model: &mut GenModel, version: &str, added: usize, what: &str) {
    if added > 0
        && let Some(source) = model
            .alias_sources
            .iter_mut()
            .rev()
            .find(|s| s.commit == version)
    {
        source.file.push_str(&format!(" ({added} {what}, added)"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str, code: u16, umask: Option<u8>) -> PerfEvent {
        (text.to_string(), code, umask)
    }

    /// perf's Zen 2 JSON (Linux 7.2, tools/perf/pmu-events/arch/x86/amdzen2) names
    /// `ls_tablewalker.dside` (0x46, unit mask 0x03), an event code libpfm4's Zen 2 table has
    /// no event of: it is added; a name of an event code the table has is not.
    #[test]
    fn perfs_events_of_codes_the_table_lacks_are_added() {
        let root = std::env::temp_dir().join(format!("counterhal-gen-zen2-{}", std::process::id()));
        let dir = root.join("amdzen2");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("memory.json"),
            r#"[{"EventName": "ls_tablewalker.dside", "EventCode": "0x46", "UMask": "0x03"},
                {"EventName": "ls_tablewalker.iside", "EventCode": "0x46", "UMask": "0x0c"},
                {"EventName": "ls_dispatch.other", "EventCode": "0x29", "UMask": "0x08"}]"#,
        )
        .unwrap();
        let mut model = GenModel {
            id: "amd64_fam17h_zen2".to_string(),
            events: vec![GenEvent {
                name: "LS_DISPATCH".to_string(),
                code: 0x29,
                umask: Some(0x01),
                ..GenEvent::default()
            }],
            alias_sources: vec![Provenance {
                commit: "7.2".to_string(),
                ..Provenance::default()
            }],
            ..GenModel::default()
        };
        let added = add_perf_events(std::slice::from_mut(&mut model), &root, "7.2");
        std::fs::remove_dir_all(&root).unwrap();
        added.unwrap();
        let names: Vec<&str> = model.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["LS_DISPATCH", "LS_TABLEWALKER"]);
        let walker = &model.events[1];
        assert_eq!(walker.code, 0x46);
        let masks: Vec<(&str, u8)> = walker
            .umasks
            .iter()
            .map(|m| (m.name.as_str(), m.code))
            .collect();
        assert_eq!(masks, [("DSIDE", 0x03), ("ISIDE", 0x0c)]);
        assert!(model.alias_sources[0].file.contains("2 names of events"));
    }

    #[test]
    fn perf_names_become_events_and_unit_masks() {
        let events = events(&[
            name("ls_dispatch.ld_dispatch", 0x29, Some(0x01)),
            name("ls_dispatch.store_dispatch", 0x29, Some(0x02)),
            name("ls_dispatch.all", 0x29, Some(0x03)),
            name("bp_fe_redir.resync", 0x9f, Some(0x01)),
            name("bp_fe_redir.all", 0x9f, None),
            name("ex_ret_instr", 0xc0, None),
        ])
        .unwrap();
        let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["BP_FE_REDIR", "EX_RET_INSTR", "LS_DISPATCH"]);
        // One unit mask at a time, as perf names them.
        assert_eq!(events[2].flags, ["exclusive"]);
        assert_eq!(events[2].umasks[0].name, "ALL");
        assert_eq!(events[0].flags, ["exclusive"]);
        assert_eq!(events[0].umasks[0].code, 0);
        assert!(events[1].umasks.is_empty() && events[1].umask.is_none());
        // A name both alone and with unit masks is refused.
        assert!(
            super::events(&[name("a", 1, None), name("a.b", 1, Some(1))]).is_err(),
            "alone and dotted"
        );
    }

    #[test]
    fn perf_encodings_no_mask_gives_become_unit_masks() {
        let root = std::env::temp_dir().join(format!("counterhal-amd-json-{}", std::process::id()));
        std::fs::create_dir_all(root.join("amdzen5")).unwrap();
        std::fs::write(
            root.join("amdzen5/core.json"),
            r#"[{"EventName": "flops_ret.bf16", "EventCode": "0x03", "UMask": "0x20"},
                {"EventName": "flops_ret.any", "EventCode": "0x03", "UMask": "0x0f"},
                {"EventName": "other.thing", "EventCode": "0x77", "UMask": "0x01"}]"#,
        )
        .unwrap();
        let mask = |name: &str, code: u8, group: u8, default: bool| GenUnitMask {
            name: name.to_string(),
            code,
            group,
            default,
            ..GenUnitMask::default()
        };
        let mut models = vec![GenModel {
            id: "amd64_fam1ah_zen5".to_string(),
            events: vec![GenEvent {
                name: "FLOPS".to_string(),
                code: 0x03,
                umasks: vec![
                    mask("ANY", 0x0f, 0, true),
                    mask("BF16_TYPE", 0x20, 1, false),
                ],
                ..GenEvent::default()
            }],
            ..GenModel::default()
        }];
        crate::aliases::add_perf_aliases(&mut models, &root, "test").unwrap();
        add_perf_unit_masks(&mut models, &root, "test").unwrap();
        _ = std::fs::remove_dir_all(&root);
        let model = &models[0];
        // `BF16_TYPE` named alone takes group 0's default (0x2f): perf's 0x20 is a mask of its own.
        let added = model.events[0]
            .umasks
            .iter()
            .find(|m| m.name == "BF16")
            .unwrap();
        assert_eq!((added.code, added.group), (0x20, 0));
        let aliases: Vec<(&str, &str)> = model
            .aliases
            .iter()
            .map(|(a, t)| (a.as_str(), t.as_str()))
            .collect();
        assert_eq!(
            aliases,
            [
                ("FLOPS_RET.ANY", "FLOPS.ANY"),
                ("FLOPS_RET.BF16", "FLOPS.BF16")
            ]
        );
        assert!(model.alias_sources[0].file.contains("1 unit masks"));
    }
}
