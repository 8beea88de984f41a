//! libpfm4 (github.com/wcohen/libpfm4, MIT): the AMD core tables and the Intel ones Intel
//! perfmon lacks (Core Duo) in `lib/events/*.h`, read as C initialisers. Facts carry over (names, codes, unit masks, defaults, which unit masks may
//! be combined); description sentences do not.

use std::collections::BTreeMap;
use std::path::Path;

use crate::GenError;
use crate::cparse::{Fields, flags, integer};
use crate::model::{GenEvent, GenModel, GenUnitMask, Provenance, Signature};
use crate::revisions::Revisions;

/// One libpfm4 table we generate.
pub struct Table {
    /// The header under lib/events.
    pub file: &'static str,
    /// Its entry array.
    pub array: &'static str,
    /// The model id (libpfm4's PMU name).
    pub id: &'static str,
    /// Our one-line description.
    pub description: &'static str,
    /// The AMD family.
    pub family: u32,
    /// The models it matches (empty: any of the family).
    pub models: &'static [u32],
    /// The source under `lib/` defining libpfm4's revision PMUs of this table
    /// (`pfmlib_amd64_fam10h.c`): the model keeps the events and unit masks libpfm4's PMU `id`
    /// has, by the revision flags ([`Revisions`]). None: every entry, the later of two of the
    /// same name winning.
    pub revisions: Option<&'static str>,
    /// General counters.
    pub counters: u32,
}

const fn table(
    file: &'static str,
    array: &'static str,
    id: &'static str,
    description: &'static str,
    family: u32,
    counters: u32,
) -> Table {
    Table {
        file,
        array,
        id,
        description,
        family,
        models: &[],
        revisions: None,
        counters,
    }
}

/// The source defining libpfm4's family-10h revision PMUs.
const FAM10H_REVISIONS: &str = "pfmlib_amd64_fam10h.c";

/// The libpfm4 tables we generate, in match order (first match wins).
pub const MODELS: &[Table] = &[
    Table {
        models: &[4, 5, 6],
        revisions: Some(FAM10H_REVISIONS),
        ..table(
            "amd64_events_fam10h.h",
            "amd64_fam10h_pe",
            "amd64_fam10h_shanghai",
            "AMD family 10h revision C (Shanghai, Deneb)",
            0x10,
            4,
        )
    },
    Table {
        models: &[8, 9],
        revisions: Some(FAM10H_REVISIONS),
        ..table(
            "amd64_events_fam10h.h",
            "amd64_fam10h_pe",
            "amd64_fam10h_istanbul",
            "AMD family 10h revision D (Istanbul, Magny-Cours)",
            0x10,
            4,
        )
    },
    Table {
        revisions: Some(FAM10H_REVISIONS),
        ..table(
            "amd64_events_fam10h.h",
            "amd64_fam10h_pe",
            "amd64_fam10h_barcelona",
            "AMD family 10h revision B (Barcelona) and other family 10h",
            0x10,
            4,
        )
    },
    table(
        "amd64_events_fam11h.h",
        "amd64_fam11h_pe",
        "amd64_fam11h_turion",
        "AMD family 11h (Turion X2 Ultra)",
        0x11,
        4,
    ),
    table(
        "amd64_events_fam12h.h",
        "amd64_fam12h_pe",
        "amd64_fam12h_llano",
        "AMD family 12h (Llano)",
        0x12,
        4,
    ),
    table(
        "amd64_events_fam14h.h",
        "amd64_fam14h_pe",
        "amd64_fam14h_bobcat",
        "AMD family 14h (Bobcat)",
        0x14,
        4,
    ),
    table(
        "amd64_events_fam15h.h",
        "amd64_fam15h_pe",
        "amd64_fam15h_interlagos",
        "AMD family 15h (Bulldozer to Excavator)",
        0x15,
        6,
    ),
    table(
        "amd64_events_fam16h.h",
        "amd64_fam16h_pe",
        "amd64_fam16h",
        "AMD family 16h (Jaguar, Puma)",
        0x16,
        4,
    ),
    table(
        "amd64_events_fam1ah_zen5.h",
        "amd64_fam1ah_zen5_pe",
        "amd64_fam1ah_zen5",
        "AMD family 1Ah Zen 5",
        0x1a,
        6,
    ),
];

/// libpfm4's Zen 1 to Zen 4 tables. Each shares its family with another (Zen and Zen 2 are
/// family 0x17, Zen 3 and Zen 4 family 0x19) and splits it by model ranges, which the
/// hand-written overlay states (`match`, over the generated family-wide rule).
pub const ZEN_MODELS: &[Table] = &[
    table(
        "amd64_events_fam17h_zen1.h",
        "amd64_fam17h_zen1_pe",
        "amd64_fam17h_zen1",
        "AMD family 17h Zen and Zen+",
        0x17,
        6,
    ),
    table(
        "amd64_events_fam17h_zen2.h",
        "amd64_fam17h_zen2_pe",
        "amd64_fam17h_zen2",
        "AMD family 17h Zen 2",
        0x17,
        6,
    ),
    table(
        "amd64_events_fam19h_zen3.h",
        "amd64_fam19h_zen3_pe",
        "amd64_fam19h_zen3",
        "AMD family 19h Zen 3",
        0x19,
        6,
    ),
    table(
        "amd64_events_fam19h_zen4.h",
        "amd64_fam19h_zen4_pe",
        "amd64_fam19h_zen4",
        "AMD family 19h Zen 4",
        0x19,
        6,
    ),
];

/// libpfm4's K7 table (Athlon, Duron: AMD family 6).
pub const K7_MODEL: Table = table(
    "amd64_events_k7.h",
    "amd64_k7_pe",
    "amd64_k7",
    "AMD K7 (Athlon, Duron)",
    6,
    4,
);

/// Every model of [`ZEN_MODELS`] from the libpfm4 snapshot at `root`.
///
/// # Errors
/// As [`models`].
pub fn zen_models(root: &Path, commit: &str) -> Result<Vec<GenModel>, GenError> {
    ZEN_MODELS.iter().map(|t| model(root, commit, t)).collect()
}

/// The model of [`K7_MODEL`] from the libpfm4 snapshot at `root`.
///
/// # Errors
/// As [`models`].
pub fn k7_model(root: &Path, commit: &str) -> Result<GenModel, GenError> {
    model(root, commit, &K7_MODEL)
}

/// The source line written into each generated file's header.
pub const SOURCE: &str = "libpfm4 (https://github.com/wcohen/libpfm4, MIT)";

const DEFAULT: &str = "AMD64_FL_DFL";
const NO_COMBINE: &str = "AMD64_FL_NCOMBO";

/// Every AMD model of [`MODELS`] from the libpfm4 snapshot at `root`.
///
/// # Errors
/// A missing or malformed header, an event naming a missing unit-mask array, or a code out
/// of range.
pub fn models(root: &Path, commit: &str) -> Result<Vec<GenModel>, GenError> {
    MODELS.iter().map(|t| model(root, commit, t)).collect()
}

/// The model of table `t` from the libpfm4 snapshot at `root`.
///
/// # Errors
/// As [`models`].
pub fn model(root: &Path, commit: &str, t: &Table) -> Result<GenModel, GenError> {
    let table = crate::cparse::read_table(root, t.file, "amd64_entry_t", "amd64_umask_t", t.array)?;
    let Some(source) = t.revisions else {
        return model_on(&table, commit, t, None);
    };
    let revisions = Revisions::read(root)?;
    let pmus = revisions.pmus(root, source)?;
    let pmu = pmus
        .iter()
        .find(|p| p.name == t.id)
        .ok_or_else(|| GenError::Data(format!("lib/{source}: no revision PMU `{}`", t.id)))?;
    model_on(&table, commit, t, Some((&revisions, pmu.number)))
}

/// The revision a model keeps the events and unit masks of: libpfm4's revision scheme and the
/// revision's number (None: every entry).
pub type Revision<'a> = Option<(&'a Revisions, u32)>;

fn keeps(revision: Revision<'_>, flags: &[String]) -> bool {
    revision.is_none_or(|(revisions, number)| revisions.keeps(flags, number))
}

/// The model of table `t` from its header's entries `table`, as revision `revision` has them.
///
/// # Errors
/// As [`models`].
pub fn model_on(
    table: &crate::cparse::Table,
    commit: &str,
    t: &Table,
    revision: Revision<'_>,
) -> Result<GenModel, GenError> {
    {
        let (file, id, description, family, counters) =
            (t.file, t.id, t.description, t.family, t.counters);
        let (entries, umask_arrays) = (&table.entries, &table.umasks);
        let mut model = GenModel {
            id: id.to_string(),
            description: format!("{description} core PMU"),
            encoder: "amd64",
            signatures: if t.models.is_empty() {
                vec![Signature {
                    vendor: "amd",
                    family,
                    model: None,
                    last_model: None,
                    steppings: Vec::new(),
                }]
            } else {
                t.models
                    .iter()
                    .map(|&m| Signature {
                        vendor: "amd",
                        family,
                        model: Some(m),
                        last_model: None,
                        steppings: Vec::new(),
                    })
                    .collect()
            },
            general_counters: counters,
            counter_width: 48,
            source: Provenance {
                source: SOURCE.to_string(),
                commit: commit.to_string(),
                file: format!("lib/events/{file}"),
            },
            ..GenModel::default()
        };
        let mut left: BTreeMap<String, usize> = BTreeMap::new();
        for entry in entries
            .iter()
            .filter(|e| keeps(revision, &flags(e, "flags")))
        {
            match event(entry, umask_arrays, revision) {
                // An event listed twice changed with the CPU revision: the later one wins.
                Ok(e) => match model.events.iter_mut().find(|x| x.name == e.name) {
                    Some(earlier) => *earlier = e,
                    None => model.events.push(e),
                },
                Err(why) => *left.entry(why.map_err(|w| table.error(w))?).or_default() += 1,
            }
        }
        model.events.sort_by(|a, b| a.name.cmp(&b.name));
        model.left_out = left.into_iter().collect();
        Ok(model)
    }
}

/// One libpfm4 event; `Err(Ok(reason))` leaves it out, `Err(Err(why))` is malformed data.
fn event(
    entry: &Fields,
    umask_arrays: &BTreeMap<String, Vec<Fields>>,
    revision: Revision<'_>,
) -> Result<GenEvent, Result<String, String>> {
    let name = entry
        .get("name")
        .ok_or_else(|| Err("an event without .name".to_string()))?;
    let code = entry
        .get("code")
        .and_then(|c| integer(c))
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c <= 0xfff)
        .ok_or_else(|| Err(format!("`{name}`: no 12-bit .code")))?;
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(Ok("events with names the schema cannot hold".to_string()));
    }
    let mut event = GenEvent {
        name: name.clone(),
        code,
        ..GenEvent::default()
    };
    let Some(array) = entry.get("umasks") else {
        return Ok(event);
    };
    let masks = umask_arrays
        .get(array)
        .ok_or_else(|| Err(format!("`{name}`: no unit-mask array `{array}`")))?;
    let mut groups: BTreeMap<u8, usize> = BTreeMap::new();
    let mut all_exclusive = true;
    for mask in masks {
        let uname = mask
            .get("uname")
            .ok_or_else(|| Err(format!("`{name}`: a unit mask without .uname")))?;
        let ucode = mask
            .get("ucode")
            .and_then(|c| integer(c))
            .ok_or_else(|| Err(format!("`{name}:{uname}`: no .ucode")))?;
        let ucode = u8::try_from(ucode)
            .map_err(|_| Ok("events with a unit mask above 8 bits".to_string()))?;
        let uflags = flags(mask, "uflags");
        if !keeps(revision, &uflags) {
            continue;
        }
        if uflags.iter().any(|f| f == "AMD64_FL_OMIT") {
            // A unit mask libpfm4 leaves out of the encoding (a pseudo mask such as the
            // HyperTransport SUBLINK_MASK): the event keeps its others.
            continue;
        }
        if uname.len() < 2 || !uname.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Ok("events with names the schema cannot hold".to_string()));
        }
        let group = mask.get("grpid").and_then(|g| integer(g)).unwrap_or(0);
        let group =
            u8::try_from(group).map_err(|_| Err(format!("`{name}:{uname}`: group {group}")))?;
        *groups.entry(group).or_default() += 1;
        all_exclusive &= uflags.iter().any(|f| f == NO_COMBINE);
        let mask = GenUnitMask {
            name: uname.clone(),
            code: ucode,
            default: uflags.iter().any(|f| f == DEFAULT),
            group,
            ..GenUnitMask::default()
        };
        // A name listed twice is a value that changed with the CPU revision (family 10h
        // `ALL` is 0x3 until revision B, 0x7 from C): the later revision's, listed last, wins.
        match event.umasks.iter_mut().find(|m| m.name == *uname) {
            Some(earlier) => *earlier = mask,
            None => event.umasks.push(mask),
        }
    }
    // libpfm4 combines one unit mask per group and several within a group unless they are
    // marked NCOMBO; the schema has one flag for the whole event.
    if groups.len() == 1 && all_exclusive && event.umasks.len() > 1 {
        event.flags.push("exclusive");
        // An exclusive event takes one default: libpfm4's first.
        let mut seen = false;
        for m in &mut event.umasks {
            if m.default && seen {
                m.default = false;
            }
            seen |= m.default;
        }
    }
    event.umasks.sort_by(|a, b| a.name.cmp(&b.name));
    if event.umasks.windows(2).any(|w| w[0].name == w[1].name) {
        return Err(Err(format!("`{name}`: a unit mask given twice")));
    }
    Ok(event)
}

/// One libpfm4 Intel table we generate (cores perfmon does not cover).
pub struct IntelTable {
    /// The header under lib/events.
    pub file: &'static str,
    /// Its entry array.
    pub array: &'static str,
    /// The model id (libpfm4's PMU name).
    pub id: &'static str,
    /// Our one-line description.
    pub description: &'static str,
    /// Family-6 models it matches.
    pub models: &'static [u32],
    /// General counters and their width.
    pub counters: (u32, u32),
    /// Fixed counters and their width (`.cntmsk` bits 32 and up).
    pub fixed: (u32, u32),
}

/// The libpfm4 Intel tables we generate.
pub const INTEL_MODELS: &[IntelTable] = &[
    IntelTable {
        file: "intel_coreduo_events.h",
        array: "intel_coreduo_pe",
        id: "coreduo",
        description: "Intel Core Duo and Core Solo (Yonah)",
        models: &[0x0e],
        counters: (2, 40),
        fixed: (0, 0),
    },
    IntelTable {
        file: "intel_core_events.h",
        array: "intel_core_pe",
        id: "core",
        description: "Intel Core 2 (Merom, Penryn, Dunnington)",
        models: &[0x0f, 0x16, 0x17, 0x1d],
        counters: (2, 40),
        fixed: (3, 40),
    },
];

/// libpfm4's P6-family tables: Pentium Pro, II, III (libpfm4's `p6` PMU, here `piii`: `p6` is
/// the hand-written table of OpenBSD's P6 names) and M. Each matches the models libpfm4 gives
/// it and is shipped before `p6`, so detection picks it.
pub const P6_FAMILY_MODELS: &[IntelTable] = &[
    IntelTable {
        file: "intel_ppro_events.h",
        array: "intel_ppro_pe",
        id: "ppro",
        description: "Intel Pentium Pro",
        models: &[0x01],
        counters: (2, 40),
        fixed: (0, 0),
    },
    IntelTable {
        file: "intel_pii_events.h",
        array: "intel_pii_pe",
        id: "pii",
        description: "Intel Pentium II",
        models: &[0x03, 0x05, 0x06],
        counters: (2, 40),
        fixed: (0, 0),
    },
    IntelTable {
        file: "intel_p6_events.h",
        array: "intel_p6_pe",
        id: "piii",
        description: "Intel Pentium III",
        models: &[0x07, 0x08, 0x0a, 0x0b],
        counters: (2, 40),
        fixed: (0, 0),
    },
    IntelTable {
        file: "intel_pm_events.h",
        array: "intel_pm_pe",
        id: "pm",
        description: "Intel Pentium M",
        models: &[0x09, 0x0d],
        counters: (2, 40),
        fixed: (0, 0),
    },
];

/// Every model of [`P6_FAMILY_MODELS`] from the libpfm4 snapshot at `root`.
///
/// # Errors
/// As [`models`].
pub fn p6_family_models(root: &Path, commit: &str) -> Result<Vec<GenModel>, GenError> {
    P6_FAMILY_MODELS
        .iter()
        .map(|t| {
            let mut model = intel_model(root, commit, t)?;
            // Not architectural performance monitoring: the P6 event select.
            model.encoder = "p6";
            for mask in model.events.iter_mut().flat_map(|e| e.umasks.iter_mut()) {
                mask.name = cache_state_name(&mask.name);
            }
            for event in &mut model.events {
                event.umasks.sort_by(|a, b| a.name.cmp(&b.name));
            }
            Ok(model)
        })
        .collect()
}

/// libpfm4 names the P6 family's cache-state unit masks `M`, `E`, `S`, `I`, which event strings
/// would read as modifiers (`e` is edge, `i` invert); they take the names libpfm4 gives the same
/// bits on Core Duo: `M_STATE`, `E_STATE`, `S_STATE`, `I_STATE`.
fn cache_state_name(name: &str) -> String {
    match name {
        "M" | "E" | "S" | "I" => format!("{name}_STATE"),
        other => other.to_string(),
    }
}

/// The model of libpfm4 Intel table `t` from the snapshot at `root`: `.code` holds the event
/// (bits 7:0) and a unit mask always set (15:8), `.ucode` a unit mask in bits 15:8, `.cntmsk`
/// the counters.
///
/// # Errors
/// As [`models`].
pub fn intel_model(root: &Path, commit: &str, t: &IntelTable) -> Result<GenModel, GenError> {
    let table = crate::cparse::read_table(
        root,
        t.file,
        "intel_x86_entry_t",
        "intel_x86_umask_t",
        t.array,
    )?;
    let (entries, umask_arrays) = (&table.entries, &table.umasks);
    let mut model = GenModel {
        id: t.id.to_string(),
        description: format!("{} core PMU", t.description),
        encoder: "intel-arch",
        signatures: t
            .models
            .iter()
            .map(|&m| Signature {
                vendor: "intel",
                family: 6,
                model: Some(m),
                last_model: None,
                steppings: Vec::new(),
            })
            .collect(),
        general_counters: t.counters.0,
        counter_width: t.counters.1,
        fixed_counters: t.fixed.0,
        fixed_width: t.fixed.1,
        // libpfm4's own Intel tables are the cores before Haswell: no TSX.
        tsx: Some(false),
        source: Provenance {
            source: SOURCE.to_string(),
            commit: commit.to_string(),
            file: format!("lib/events/{}", t.file),
        },
        ..GenModel::default()
    };
    let mut left: BTreeMap<String, usize> = BTreeMap::new();
    for entry in entries {
        match intel_event(entry, umask_arrays, t.counters.0, t.fixed.0) {
            Ok(e) => match model.events.iter_mut().find(|x| x.name == e.name) {
                Some(earlier) => *earlier = e,
                None => model.events.push(e),
            },
            Err(why) => *left.entry(why.map_err(|w| table.error(w))?).or_default() += 1,
        }
    }
    model.events.sort_by(|a, b| a.name.cmp(&b.name));
    model.left_out = left.into_iter().collect();
    Ok(model)
}

fn intel_event(
    entry: &Fields,
    umask_arrays: &BTreeMap<String, Vec<Fields>>,
    general: u32,
    fixed_counters: u32,
) -> Result<GenEvent, Result<String, String>> {
    let name = entry
        .get("name")
        .ok_or_else(|| Err("an event without .name".to_string()))?;
    if fixed_counters == 0 && flags(entry, "flags").iter().any(|f| f == "INTEL_X86_FIXED") {
        return Err(Ok(
            "fixed-counter events of a PMU without fixed counters".to_string()
        ));
    }
    let code = entry
        .get("code")
        .and_then(|c| integer(c))
        .filter(|c| *c <= 0xffff)
        .ok_or_else(|| Ok("events with code terms the generator does not read".to_string()))?;
    let cntmsk = entry.get("cntmsk").and_then(|c| integer(c)).unwrap_or(0);
    let counters: Vec<u32> = (0..general).filter(|i| cntmsk >> i & 1 == 1).collect();
    // Bits 32 and up: the fixed counter that counts exactly this event.
    let fixed = (0..fixed_counters).find(|i| cntmsk >> (32 + i) & 1 == 1);
    if counters.is_empty() && fixed.is_none() {
        return Err(Ok("events on no counter this PMU has".to_string()));
    }
    let mut event = GenEvent {
        name: name.clone(),
        code: (code & 0xff) as u16,
        umask: Some((code >> 8) as u8).filter(|u| *u != 0),
        counters: (counters.len() as u32 != general).then_some(counters),
        fixed,
        ..GenEvent::default()
    };
    let Some(array) = entry.get("umasks") else {
        return Ok(event);
    };
    let masks = umask_arrays
        .get(array)
        .ok_or_else(|| Err(format!("`{name}`: no unit-mask array `{array}`")))?;
    for mask in masks {
        let uname = mask
            .get("uname")
            .ok_or_else(|| Err(format!("`{name}`: a unit mask without .uname")))?;
        // `.ucode = 0xc000 | INTEL_X86_MOD_EDGE`: the unit mask and the filters it implies.
        let (mut ucode, mut edge, mut inv) = (0u64, false, false);
        for term in mask
            .get("ucode")
            .ok_or_else(|| Err(format!("`{name}:{uname}`: no .ucode")))?
            .split('|')
            .map(str::trim)
        {
            match term {
                "INTEL_X86_MOD_EDGE" => edge = true,
                "INTEL_X86_MOD_INV" => inv = true,
                t => {
                    ucode |= integer(t).ok_or_else(|| {
                        Ok("events with unit-mask terms the generator does not read".to_string())
                    })?
                }
            }
        }
        if ucode & 0xff != 0 || ucode > 0xffff {
            return Err(Ok("events with a unit mask beyond bits 15:8".to_string()));
        }
        let uflags = flags(mask, "uflags");
        let group = mask.get("grpid").and_then(|g| integer(g)).unwrap_or(0);
        event.umasks.push(GenUnitMask {
            name: uname.clone(),
            code: (ucode >> 8) as u8,
            default: uflags.iter().any(|f| f == "INTEL_X86_DFL"),
            edge: edge || mask.get("modhw").is_some_and(|m| m.contains("ATTR_E")),
            inv,
            group: u8::try_from(group).map_err(|_| Err(format!("`{name}:{uname}`: group")))?,
            ..GenUnitMask::default()
        });
    }
    event.umasks.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(event)
}
