//! Intel perfmon (github.com/intel/perfmon): `mapfile.csv` says which core file each CPU
//! signature uses; each `*_core.json` lists that core's events. Facts carry over (names,
//! codes, unit masks, counters, filters); description sentences do not. Where Intel's table is
//! wrong, an erratum of `gen/errata/MODEL.toml` corrects the entry before it is converted
//! ([`crate::errata`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::model::{GenEvent, GenModel, GenUnitMask, Provenance, Signature};
use crate::{GenError, Left};

/// The perfmon core files we generate, their model ids (libpfm4's PMU names where libpfm4 has
/// the CPU, short names after Intel's otherwise) and our one-line description.
pub const MODELS: &[(&str, &str, &str)] = &[
    (
        "NehalemEP_core.json",
        "nhm",
        "Intel Nehalem (client and EP)",
    ),
    ("NehalemEX_core.json", "nhm_ex", "Intel Nehalem EX"),
    (
        "WestmereEP-SP_core.json",
        "wsm",
        "Intel Westmere (client and EP-SP)",
    ),
    ("WestmereEP-DP_core.json", "wsm_dp", "Intel Westmere EP-DP"),
    ("WestmereEX_core.json", "wsm_ex", "Intel Westmere EX"),
    ("sandybridge_core.json", "snb", "Intel Sandy Bridge"),
    (
        "Jaketown_core.json",
        "snb_ep",
        "Intel Sandy Bridge EP (Jaketown)",
    ),
    ("ivybridge_core.json", "ivb", "Intel Ivy Bridge"),
    (
        "ivytown_core.json",
        "ivb_ep",
        "Intel Ivy Bridge EP (Ivytown)",
    ),
    ("haswell_core.json", "hsw", "Intel Haswell"),
    ("haswellx_core.json", "hsw_ep", "Intel Haswell EP"),
    ("broadwell_core.json", "bdw", "Intel Broadwell"),
    ("broadwellx_core.json", "bdw_ep", "Intel Broadwell EP"),
    ("broadwellde_core.json", "bdw_de", "Intel Broadwell DE"),
    (
        "skylake_core.json",
        "skl",
        "Intel Skylake, Kaby Lake, Coffee Lake, Comet Lake",
    ),
    ("skylakex_core.json", "skx", "Intel Skylake-X / Skylake-SP"),
    ("cascadelakex_core.json", "clx", "Intel Cascade Lake"),
    ("icelake_core.json", "icl", "Intel Ice Lake (client)"),
    ("icelakex_core.json", "icx", "Intel Ice Lake SP"),
    ("tigerlake_core.json", "tgl", "Intel Tiger Lake"),
    ("rocketlake_core.json", "rkl", "Intel Rocket Lake"),
    ("sapphirerapids_core.json", "spr", "Intel Sapphire Rapids"),
    ("emeraldrapids_core.json", "emr", "Intel Emerald Rapids"),
    ("graniterapids_core.json", "gnr", "Intel Granite Rapids"),
    (
        "knightslanding_core.json",
        "knl",
        "Intel Knights Landing and Knights Mill",
    ),
    (
        "bonnell_core.json",
        "atom",
        "Intel Atom (Bonnell, Saltwell)",
    ),
    (
        "Silvermont_core.json",
        "slm",
        "Intel Silvermont and Airmont",
    ),
    ("goldmont_core.json", "glm", "Intel Goldmont"),
    ("goldmontplus_core.json", "glp", "Intel Goldmont Plus"),
    ("snowridgex_core.json", "tmt", "Intel Tremont (Snow Ridge)"),
    (
        "elkhartlake_core.json",
        "ehl",
        "Intel Elkhart Lake (Tremont)",
    ),
    (
        "grandridge_core.json",
        "grr",
        "Intel Grand Ridge (Crestmont)",
    ),
    (
        "sierraforest_core.json",
        "srf",
        "Intel Sierra Forest (Crestmont)",
    ),
    (
        "clearwaterforest_core.json",
        "cwf",
        "Intel Clearwater Forest (Darkmont)",
    ),
    (
        "alderlake_goldencove_core.json",
        "adl_glc",
        "Intel Alder Lake and Raptor Lake, P-core (Golden Cove)",
    ),
    (
        "alderlake_gracemont_core.json",
        "adl_grt",
        "Intel Alder Lake and Raptor Lake, E-core (Gracemont); Alder Lake-N",
    ),
    (
        "meteorlake_redwoodcove_core.json",
        "mtl_rwc",
        "Intel Meteor Lake, P-core (Redwood Cove)",
    ),
    (
        "meteorlake_crestmont_core.json",
        "mtl_cmt",
        "Intel Meteor Lake, E-core (Crestmont)",
    ),
    (
        "lunarlake_lioncove_core.json",
        "lnl_lnc",
        "Intel Lunar Lake, P-core (Lion Cove)",
    ),
    (
        "lunarlake_skymont_core.json",
        "lnl_skt",
        "Intel Lunar Lake, E-core (Skymont)",
    ),
    (
        "arrowlake_lioncove_core.json",
        "arl_lnc",
        "Intel Arrow Lake, P-core (Lion Cove)",
    ),
    (
        "arrowlake_skymont_core.json",
        "arl_skt",
        "Intel Arrow Lake, E-core (Skymont)",
    ),
    (
        "arrowlake_crestmont_core.json",
        "arl_cmt",
        "Intel Arrow Lake, low-power E-core (Crestmont)",
    ),
    (
        "pantherlake_cougarcove_core.json",
        "ptl_cgc",
        "Intel Panther Lake, P-core (Cougar Cove)",
    ),
    (
        "pantherlake_darkmont_core.json",
        "ptl_dkt",
        "Intel Panther Lake, E-core (Darkmont)",
    ),
    (
        "novalake_coyotecove_core.json",
        "nvl_cyc",
        "Intel Nova Lake, P-core (Coyote Cove)",
    ),
    (
        "novalake_arcticwolf_core.json",
        "nvl_arw",
        "Intel Nova Lake, E-core (Arctic Wolf)",
    ),
];

/// The source line written into each generated file's header.
pub const SOURCE: &str = "Intel perfmon (https://github.com/intel/perfmon, BSD-3-Clause)";

/// One core file and the signatures (with the hybrid core type, if any) that use it.
struct CoreFile {
    path: String,
    signatures: Vec<(Signature, Option<u8>)>,
}

/// Reads `mapfile.csv` under `root`: the core files in file order, with their signatures.
fn core_files(root: &Path) -> Result<Vec<CoreFile>, GenError> {
    let path = root.join("mapfile.csv");
    let text = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
    let mut files: Vec<CoreFile> = Vec::new();
    for (number, line) in text.lines().enumerate().skip(1) {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let at = || format!("{}:{}", path.display(), number + 1);
        if fields.len() < 4 {
            return Err(GenError::Data(format!("{}: fewer than 4 fields", at())));
        }
        if !matches!(fields[3], "core" | "hybridcore") {
            continue;
        }
        let signature =
            signature(fields[0]).map_err(|why| GenError::Data(format!("{}: {why}", at())))?;
        let core_type = match fields.get(4).copied().unwrap_or("") {
            "" => None,
            t => Some(
                u8::from_str_radix(t.trim_start_matches("0x"), 16)
                    .map_err(|_| GenError::Data(format!("{}: core type `{t}`", at())))?,
            ),
        };
        let file = fields[2].trim_start_matches('/').to_string();
        match files.iter_mut().find(|f| f.path == file) {
            Some(f) => f.signatures.push((signature, core_type)),
            None => files.push(CoreFile {
                path: file,
                signatures: vec![(signature, core_type)],
            }),
        }
    }
    Ok(files)
}

/// `GenuineIntel-6-55-[01234]` as a signature (family decimal, model and stepping hex).
fn signature(text: &str) -> Result<Signature, String> {
    let parts: Vec<&str> = text.split('-').collect();
    let vendor = match parts.first() {
        Some(&"GenuineIntel") => "intel",
        Some(&"AuthenticAMD") => "amd",
        _ => return Err(format!("signature `{text}`: unknown vendor")),
    };
    let number = |t: &str, radix| {
        u32::from_str_radix(t, radix)
            .map_err(|_| format!("signature `{text}`: `{t}` is not a number"))
    };
    let (Some(family), Some(model)) = (parts.get(1), parts.get(2)) else {
        return Err(format!("signature `{text}`: no family and model"));
    };
    let mut steppings = Vec::new();
    if let Some(s) = parts.get(3) {
        let class = s.trim_start_matches('[').trim_end_matches(']');
        for c in class.chars() {
            steppings.push(number(&c.to_string(), 16)?);
        }
    }
    if parts.len() > 4 {
        return Err(format!("signature `{text}`: too many parts"));
    }
    Ok(Signature {
        vendor,
        family: number(family, 10)?,
        model: Some(number(model, 16)?),
        last_model: None,
        steppings,
    })
}

/// Every model of the perfmon snapshot at `root`, in mapfile order, each with its own events.
///
/// # Errors
/// A missing or malformed mapfile or core file, or a core file without a model id.
pub fn models(root: &Path, commit: &str) -> Result<Vec<GenModel>, GenError> {
    let errata = crate::errata::read(&crate::errata::default_dir())?;
    let mut out = Vec::new();
    for file in core_files(root)? {
        let name = file.path.rsplit('/').next().unwrap_or(&file.path);
        let Some((_, id, description)) = MODELS.iter().find(|(f, _, _)| *f == name) else {
            return Err(GenError::Data(format!(
                "perfmon core file `{}` has no model id; add it to perfmon::MODELS",
                file.path
            )));
        };
        let path = root.join(&file.path);
        let text = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
        let json: Value = serde_json::from_str(&text)
            .map_err(|e| GenError::Data(format!("{}: {e}", path.display())))?;
        let mut entries = json
            .get("Events")
            .and_then(Value::as_array)
            .ok_or_else(|| GenError::Data(format!("{}: no `Events` array", path.display())))?
            .clone();
        // Corrections of Intel's table, each with its evidence (`gen/errata/MODEL.toml`).
        let applied = match errata.get(*id) {
            Some(list) => Some((
                format!("gen/errata/{id}.toml"),
                crate::errata::apply(&mut entries, list, &file.path)?,
            )),
            None => None,
        };
        let mut signatures: Vec<Signature> =
            file.signatures.iter().map(|(s, _)| s.clone()).collect();
        signatures.sort();
        signatures.dedup();
        let mut model = GenModel {
            id: (*id).to_string(),
            description: format!("{description} core PMU"),
            encoder: "intel-arch",
            signatures,
            counter_width: 48,
            fixed_width: 48,
            source: Provenance {
                source: SOURCE.to_string(),
                commit: commit.to_string(),
                file: file.path.clone(),
            },
            errata: applied,
            ..GenModel::default()
        };
        convert(&mut model, &entries)?;
        out.push(model);
    }
    Ok(out)
}

/// One perfmon entry's facts.
struct Entry {
    base: String,
    mask: Option<String>,
    code: u16,
    umask: u8,
    umask_ext: u8,
    counters: Vec<u32>,
    fixed: Option<u32>,
    cmask: u8,
    edge: bool,
    inv: bool,
    extra: Option<(u32, u64)>,
    precise: bool,
    deprecated: bool,
    any: bool,
}

/// The extra MSRs the schema holds: offcore response 0 and 1, load latency, frontend.
const EXTRA_MSRS: [u64; 4] = [0x1a6, 0x1a7, 0x3f6, 0x3f7];

/// `MSRIndex` as a list of addresses (empty: none), or `None` when it is no list of numbers.
fn msr_indices(text: &str) -> Option<Vec<u64>> {
    let list: Option<Vec<u64>> = text.split(',').map(hex).collect();
    Some(list?.into_iter().filter(|m| *m != 0).collect())
}

fn field<'v>(entry: &'v Value, key: &str) -> &'v str {
    entry.get(key).and_then(Value::as_str).unwrap_or("0").trim()
}

fn hex(text: &str) -> Option<u64> {
    let t = text.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u64::from_str_radix(t, 16).ok()
}

fn flag(entry: &Value, key: &str) -> bool {
    !matches!(field(entry, key), "0" | "" | "null")
}

/// The facts of `entry`, or why it is left out.
fn entry(entry: &Value) -> Result<Entry, Left> {
    let name = field(entry, "EventName");
    let msrs = msr_indices(field(entry, "MSRIndex")).ok_or(Left::Malformed)?;
    let extra = match msrs.first() {
        None => None,
        // Offcore events list both response MSRs (and then both event codes): either pair
        // counts the same; the first is written, and the backend moves to the second when
        // the first is taken.
        Some(&msr) if EXTRA_MSRS.contains(&msr) && msrs.iter().all(|m| EXTRA_MSRS.contains(m)) => {
            let value = hex(field(entry, "MSRValue")).ok_or(Left::Malformed)?;
            Some((u32::try_from(msr).map_err(|_| Left::Malformed)?, value))
        }
        Some(_) => return Err(Left::MsrValue),
    };
    // The second unit-mask byte (EVTSEL bits 47:40): a byte on the cores that have it.
    let umask_ext =
        u8::try_from(hex(field(entry, "UMaskExt")).unwrap_or(0)).map_err(|_| Left::UmaskExt)?;
    let codes: Vec<&str> = field(entry, "EventCode").split(',').collect();
    let code = match codes.as_slice() {
        [one] => hex(one),
        // Two codes go with the two offcore response MSRs: the first with the first.
        [first, _] if msrs.len() == 2 => hex(first),
        _ => None,
    };
    let code = code.ok_or(Left::TwoCodes)?;
    let code = u16::try_from(code)
        .ok()
        .filter(|c| *c <= 0xff)
        .ok_or(Left::Malformed)?;
    // Some offcore events list two unit masks of one code, one per response MSR (Goldmont,
    // Knights Landing): the first goes with the first MSR.
    let umask = match field(entry, "UMask")
        .split(',')
        .collect::<Vec<_>>()
        .as_slice()
    {
        [one] => hex(one),
        [first, _] if !msrs.is_empty() => hex(first),
        _ => None,
    };
    let umask = umask
        .and_then(|u| u8::try_from(u).ok())
        .ok_or(Left::Malformed)?;
    let (base, mask) = match name.split_once('.') {
        Some((b, m)) => (b, Some(m)),
        None => (name, None),
    };
    let valid = |t: &str, dot: bool| {
        !t.is_empty()
            && !t.starts_with('.')
            && !t.ends_with('.')
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || (dot && c == '.'))
    };
    if !valid(base, false) || mask.is_some_and(|m| !valid(m, true)) {
        // Deprecated offcore events spelled in libpfm4's syntax
        // (`OFFCORE_RESPONSE:request=...`) repeat current `OCR.*` events.
        if flag(entry, "Deprecated") {
            return Err(Left::Deprecated);
        }
        return Err(Left::Malformed);
    }
    let counter = field(entry, "Counter");
    let (counters, fixed) = match counter.strip_prefix("Fixed counter ") {
        Some(n) => (
            Vec::new(),
            Some(n.trim().parse().map_err(|_| Left::Malformed)?),
        ),
        None => {
            let list: Result<Vec<u32>, _> = counter.split(',').map(|c| c.trim().parse()).collect();
            (list.map_err(|_| Left::Malformed)?, None)
        }
    };
    let number = |key| {
        let t = field(entry, key);
        t.parse::<u8>()
            .ok()
            .or_else(|| hex(t).and_then(|v| u8::try_from(v).ok()))
    };
    Ok(Entry {
        base: base.to_ascii_uppercase(),
        mask: mask.map(str::to_ascii_uppercase),
        code,
        umask,
        counters,
        fixed,
        cmask: number("CounterMask").ok_or(Left::Malformed)?,
        edge: flag(entry, "EdgeDetect"),
        inv: flag(entry, "Invert"),
        extra,
        precise: flag(entry, "PEBS") || flag(entry, "Precise"),
        deprecated: flag(entry, "Deprecated"),
        any: flag(entry, "AnyThread"),
        umask_ext,
    })
}

/// The most common value (ties: the smallest).
fn most_common<T: Ord + Clone>(values: impl Iterator<Item = T>) -> Option<T> {
    let mut counts: BTreeMap<T, usize> = BTreeMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    let best = counts.values().copied().max()?;
    counts.into_iter().find(|(_, n)| *n == best).map(|(v, _)| v)
}

/// Fills `model`'s events and PMU from perfmon entries.
fn convert(model: &mut GenModel, entries: &[Value]) -> Result<(), GenError> {
    let mut left: BTreeMap<String, usize> = BTreeMap::new();
    let mut groups: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    for e in entries {
        match entry(e) {
            Ok(e) => groups.entry(e.base.clone()).or_default().push(e),
            Err(why) => *left.entry(why.text().to_string()).or_default() += 1,
        }
    }
    // Older tables (Bonnell, Nehalem, Westmere, Silvermont) number the fixed counters from 1
    // (INST_RETIRED.ANY on "Fixed counter 1"); the PMU numbers them from 0.
    let fixed_indices = || groups.values().flatten().filter_map(|e| e.fixed);
    if fixed_indices().min() == Some(1) {
        for e in groups.values_mut().flatten() {
            e.fixed = e.fixed.map(|f| f - 1);
        }
    }
    let mut general = 0;
    let mut fixed_counters = 0;
    for (base, mut group) in groups {
        group.sort_by(|a, b| a.mask.cmp(&b.mask));
        // A deprecated name that is also current (a renamed event kept under its old name
        // with the same spelling) gives way to the current one.
        let before = group.len();
        let current: Vec<Option<String>> = group
            .iter()
            .filter(|e| !e.deprecated)
            .map(|e| e.mask.clone())
            .collect();
        group.retain(|e| !e.deprecated || !current.contains(&e.mask));
        if group.len() < before {
            *left.entry(Left::Deprecated.text().to_string()).or_default() += before - group.len();
        }
        let names: Vec<_> = group.iter().map(|e| e.mask.clone()).collect();
        if names.windows(2).any(|w| w[0] == w[1]) || (group.len() > 1 && names.contains(&None)) {
            *left.entry(Left::Ambiguous.text().to_string()).or_default() += group.len();
            continue;
        }
        for e in &group {
            general = general.max(e.counters.iter().map(|c| c + 1).max().unwrap_or(0));
            fixed_counters = fixed_counters.max(e.fixed.map_or(0, |f| f + 1));
        }
        let programmable = || {
            group
                .iter()
                .filter(|e| e.fixed.is_none() || !e.counters.is_empty())
        };
        let code = most_common(programmable().map(|e| e.code))
            .or_else(|| most_common(group.iter().map(|e| e.code)))
            .unwrap_or(0);
        let counters = most_common(programmable().map(|e| e.counters.clone())).unwrap_or_default();
        let mut event = GenEvent {
            name: base,
            code,
            counters: Some(counters.clone()),
            // A group of fixed-counter entries only: the event itself is on a fixed counter.
            fixed: if counters.is_empty() {
                group.iter().find_map(|e| e.fixed)
            } else {
                None
            },
            ..GenEvent::default()
        };
        if group.len() == 1 && group[0].mask.is_none() {
            let e = &group[0];
            event.code = e.code;
            event.umask = Some(e.umask);
            event.counters = Some(e.counters.clone());
            event.fixed = e.fixed;
            event.extra = e.extra;
            if e.precise {
                event.flags.push("precise");
            }
            if e.deprecated {
                event.flags.push("deprecated");
            }
            if e.any {
                event.flags.push("any_thread");
            }
            if e.cmask != 0 || e.edge || e.inv {
                *left.entry(Left::Malformed.text().to_string()).or_default() += 1;
                continue;
            }
            // An event without a unit-mask name has no unit mask to carry the second byte.
            if e.umask_ext != 0 {
                *left.entry(Left::UmaskExt.text().to_string()).or_default() += 1;
                continue;
            }
        } else {
            event.flags.push("exclusive");
            for e in group {
                event.umasks.push(GenUnitMask {
                    name: e.mask.unwrap_or_default(),
                    code: e.umask,
                    cmask: e.cmask,
                    edge: e.edge,
                    inv: e.inv,
                    fixed: e.fixed,
                    event: (e.code != code).then_some(e.code),
                    counters: (e.counters != counters).then_some(e.counters),
                    default: false,
                    group: 0,
                    extra: e.extra,
                    precise: e.precise,
                    deprecated: e.deprecated,
                    any: e.any,
                    umask_ext: e.umask_ext,
                    ..GenUnitMask::default()
                });
            }
        }
        model.events.push(event);
    }
    model.general_counters = general;
    model.fixed_counters = fixed_counters;
    // Intel lists the transactional-memory events (RTM_RETIRED) exactly for the cores with
    // TSX; the IN_TX and IN_TXCP bits come with it.
    model.tsx = Some(model.events.iter().any(|e| e.name == "RTM_RETIRED"));
    fixed_twins(model);
    // An event whose counters are all of the PMU's says nothing: leave the key out.
    let all: Vec<u32> = (0..general).collect();
    for event in &mut model.events {
        if event.counters.as_ref() == Some(&all) {
            event.counters = None;
        }
    }
    model.left_out = left.into_iter().collect();
    if model.events.is_empty() {
        return Err(GenError::Data(format!("{}: no events", model.source.file)));
    }
    Ok(())
}

/// The fixed counter that counts what an unfiltered general-counter event `code`/`umask`
/// counts: fixed counter 0 counts instructions retired (0xc0/0x00) and fixed counter 1 core
/// cycles (0x3c/0x00), by the architecture (Intel SDM vol. 3B, "Fixed-Function Performance
/// Counters"). Fixed counter 2's reference cycles run at the TSC rate, unlike 0x3c/0x01.
fn fixed_twin(code: u16, umask: u8) -> Option<u32> {
    match (code, umask) {
        (0xc0, 0x00) => Some(0),
        (0x3c, 0x00) => Some(1),
        _ => None,
    }
}

/// Lets Intel's general-counter twins of the first two fixed counters' events
/// (`INST_RETIRED.ANY_P`, `CPU_CLK_UNHALTED.THREAD_P`) count on that fixed counter too, as
/// libpfm4 does: a backend then spares a general counter.
fn fixed_twins(model: &mut GenModel) {
    let fixed = model.fixed_counters;
    let twin = |code: u16, umask: u8| fixed_twin(code, umask).filter(|&f| f < fixed);
    for event in &mut model.events {
        if let (Some(umask), None, None) = (event.umask, event.fixed, event.extra)
            && !event.flags.contains(&"any_thread")
        {
            event.fixed = twin(event.code, umask);
        }
        for m in &mut event.umasks {
            let plain = m.cmask == 0 && !m.edge && !m.inv && !m.any && m.umask_ext == 0;
            if plain && m.fixed.is_none() && m.extra.is_none() {
                m.fixed = twin(m.event.unwrap_or(event.code), m.code);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_read_as_perf_writes_them() {
        let s = signature("GenuineIntel-6-55-[56789ABCDEF]").unwrap();
        assert_eq!((s.family, s.model), (6, Some(0x55)));
        assert_eq!(s.steppings, (5..=15).collect::<Vec<_>>());
        let s = signature("GenuineIntel-18-1").unwrap();
        assert_eq!((s.family, s.model, s.steppings.len()), (18, Some(1), 0));
        assert!(signature("CyrixInstead-6-1").is_err());
        assert!(signature("GenuineIntel-6").is_err());
        assert!(signature("GenuineIntel-x-1").is_err());
    }

    fn event(name: &str, code: &str, umask: &str, counter: &str) -> Value {
        serde_json::json!({
            "EventName": name, "EventCode": code, "UMask": umask, "Counter": counter,
            "MSRIndex": "0", "CounterMask": "0", "Invert": "0", "EdgeDetect": "0",
        })
    }

    #[test]
    fn fixed_counters_numbered_from_one_are_renumbered_from_zero() {
        let mut model = GenModel::default();
        let entries = [
            event("INST_RETIRED.ANY", "0x0", "0x0", "Fixed counter 1"),
            event("INST_RETIRED.ANY_P", "0xC0", "0x1", "0,1,2,3"),
            event("CPU_CLK_UNHALTED.THREAD", "0x0", "0x0", "Fixed counter 2"),
            event("CPU_CLK_UNHALTED.THREAD_P", "0x3C", "0x0", "0,1,2,3"),
            event("CPU_CLK_UNHALTED.REF", "0x0", "0x0", "Fixed counter 3"),
        ];
        convert(&mut model, &entries).unwrap();
        assert_eq!(model.fixed_counters, 3);
        let fixed = |event: &str, mask: &str| {
            let e = model.events.iter().find(|e| e.name == event).unwrap();
            e.umasks.iter().find(|u| u.name == mask).unwrap().fixed
        };
        assert_eq!(fixed("INST_RETIRED", "ANY"), Some(0));
        assert_eq!(fixed("CPU_CLK_UNHALTED", "THREAD"), Some(1));
        assert_eq!(fixed("CPU_CLK_UNHALTED", "REF"), Some(2));
        // A table that starts at 0 keeps its numbers.
        let mut model = GenModel::default();
        convert(
            &mut model,
            &[event("INST_RETIRED.ANY", "0x0", "0x1", "Fixed counter 0")],
        )
        .unwrap();
        assert_eq!(model.fixed_counters, 1);
    }

    #[test]
    fn most_common_breaks_ties_by_the_smallest() {
        assert_eq!(most_common([3, 1, 3, 1, 2].into_iter()), Some(1));
        assert_eq!(most_common([0xc0, 0x00, 0xc0].into_iter()), Some(0xc0));
        assert_eq!(most_common(std::iter::empty::<u8>()), None);
    }
}

#[cfg(test)]
mod extra_tests {
    use super::*;

    #[test]
    fn offcore_entries_keep_the_first_code_msr_and_value() {
        let e = serde_json::json!({
            "EventName": "OCR.ALL_READS.PMM_HIT_LOCAL_PMM.ANY_SNOOP", "EventCode": "0xB7, 0xBB",
            "UMask": "0x01", "Counter": "0,1,2,3", "MSRIndex": "0x1a6,0x1a7",
            "MSRValue": "0x3F804007F7", "CounterMask": "0", "Invert": "0", "EdgeDetect": "0",
            "AnyThread": "0", "PEBS": "0", "Deprecated": "0",
        });
        let entry = entry(&e).map_err(Left::text).unwrap();
        assert_eq!((entry.code, entry.umask), (0xb7, 0x01));
        assert_eq!(entry.extra, Some((0x1a6, 0x3f_8040_07f7)));
        assert_eq!(
            entry.mask.as_deref(),
            Some("ALL_READS.PMM_HIT_LOCAL_PMM.ANY_SNOOP")
        );
    }

    fn with(fields: &[(&str, &str)]) -> Value {
        let mut e = serde_json::json!({
            "EventName": "OFFCORE_RESPONSE.ANY_READ.L2_MISS", "EventCode": "0xB7",
            "UMask": "0x01", "Counter": "0,1,2,3", "MSRIndex": "0", "MSRValue": "0",
            "CounterMask": "0", "Invert": "0", "EdgeDetect": "0", "AnyThread": "0",
            "PEBS": "0", "Deprecated": "0",
        });
        for (k, v) in fields {
            e[*k] = Value::String((*v).to_string());
        }
        e
    }

    #[test]
    fn unit_mask_pairs_load_latency_frontend_and_other_msrs() {
        // Goldmont and Knights Landing: one code, a unit mask per response MSR.
        let pair = with(&[
            ("UMask", "0x01,0x02"),
            ("MSRIndex", "0x1a6,0x1a7"),
            ("MSRValue", "0x36000032b7 "),
        ]);
        let e = entry(&pair).map_err(Left::text).unwrap();
        assert_eq!((e.code, e.umask), (0xb7, 0x01));
        assert_eq!(e.extra, Some((0x1a6, 0x36_0000_32b7)));
        let ldlat = with(&[("MSRIndex", "0x3F6"), ("MSRValue", "0x80"), ("PEBS", "2")]);
        let e = entry(&ldlat).map_err(Left::text).unwrap();
        assert_eq!(e.extra, Some((0x3f6, 0x80)));
        assert!(e.precise);
        let fe = with(&[
            ("MSRIndex", "0x3F7"),
            ("MSRValue", "0x11"),
            ("AnyThread", "1"),
        ]);
        let e = entry(&fe).map_err(Left::text).unwrap();
        assert_eq!(e.extra, Some((0x3f7, 0x11)));
        assert!(e.any);
        // Two codes without two response MSRs, and MSRs the schema does not hold, stay out.
        let two = with(&[("EventCode", "0xB7,0xBB")]);
        assert!(matches!(entry(&two), Err(Left::TwoCodes)));
        let snoop = with(&[("MSRIndex", "0x3E0,0x3E1"), ("MSRValue", "0x1")]);
        assert!(matches!(entry(&snoop), Err(Left::MsrValue)));
        // A deprecated name in libpfm4's colon spelling counts as deprecated, a current one
        // as a name the schema cannot hold.
        let name = "OFFCORE_RESPONSE:request=X:response=Y";
        let colon = with(&[("EventName", name), ("Deprecated", "1")]);
        assert!(matches!(entry(&colon), Err(Left::Deprecated)));
        let colon = with(&[("EventName", name)]);
        assert!(matches!(entry(&colon), Err(Left::Malformed)));
    }
}
