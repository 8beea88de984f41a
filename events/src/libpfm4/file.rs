//! A libpfm4 table file (`data/generated/libpfm4/PMU.toml`) as TOML gives it, and what makes
//! it a valid table: the one reader of those files. `counterhal-gen tables` reads the shipped
//! tables through it (`table_writer/libpfm4.rs`), and the library's tests read the files
//! through it to check the shipped rows.

use serde::Deserialize;

use super::table::{AMD_MODIFIERS, INTEL_MODIFIERS, flag};

/// The most unit-mask groups an event may have: the encoders build the mask of its groups as
/// `(1 << ngrp) - 1` in 32 bits.
const MAX_GROUPS: u32 = 31;

/// A table file: libpfm4's PMU name, its kind (`intel` or `amd64`), its PMU flags and its
/// events in libpfm4's order.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PmuFile {
    pub(crate) pmu: String,
    pub(crate) kind: String,
    pub(crate) flags: Vec<String>,
    #[serde(default)]
    pub(crate) event: Vec<EventFile>,
}

/// One `[[event]]` of a file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventFile {
    pub(crate) name: String,
    pub(crate) equiv: Option<String>,
    pub(crate) code: u64,
    #[serde(default)]
    pub(crate) cntmsk: u64,
    #[serde(default)]
    pub(crate) ngrp: u32,
    pub(crate) modmsk: Vec<String>,
    #[serde(default)]
    pub(crate) modmsk_req: Vec<String>,
    #[serde(default)]
    pub(crate) flags: Vec<String>,
    #[serde(default)]
    pub(crate) umasks: Vec<UmaskFile>,
}

/// One unit mask of an event.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UmaskFile {
    pub(crate) name: String,
    pub(crate) code: u64,
    pub(crate) equiv: Option<String>,
    #[serde(default)]
    pub(crate) grpid: u32,
    #[serde(default)]
    pub(crate) flags: Vec<String>,
    #[serde(default)]
    pub(crate) modhw: Vec<String>,
    #[serde(default)]
    pub(crate) modmsk_req: Vec<String>,
    #[serde(default)]
    pub(crate) cntmsk: u64,
}

/// A checked table: what a file says, its flags and modifiers as bits.
#[derive(Debug)]
pub(crate) struct PmuEntry {
    /// libpfm4's PMU name.
    pub(crate) name: String,
    /// An Intel table (`pfm_intel_x86_encode_gen`); else AMD's (`pfm_amd64_get_encoding`).
    pub(crate) intel: bool,
    /// It takes a raw unit mask (`:0x..`, `PFMLIB_PMU_FL_RAW_UMASK`).
    pub(crate) raw_umask: bool,
    /// Edge needs a counter mask (`INTEL_X86_PMU_FL_ECMASK`).
    pub(crate) ecmask: bool,
    /// The events, in libpfm4's order.
    pub(crate) events: Vec<EventEntry>,
}

/// A checked event: its modifiers as bits of [`INTEL_MODIFIERS`] or [`AMD_MODIFIERS`] (by the
/// table's kind), its flags as [`flag`] bits.
#[derive(Debug)]
pub(crate) struct EventEntry {
    /// The event's name.
    pub(crate) name: String,
    /// The event and attributes it stands for (`.equiv`), never empty.
    pub(crate) equiv: Option<String>,
    /// The event code (Intel: with a unit mask in bits 8-15; AMD: bits 8-11 go to 32-35).
    pub(crate) code: u64,
    /// The counters it counts on (bits 0-31 general, 32 on fixed), 0 for any.
    pub(crate) cntmsk: u64,
    /// How many unit-mask groups it has (at most 31).
    pub(crate) ngrp: u32,
    /// The modifiers it takes.
    pub(crate) modmsk: u32,
    /// The modifiers it requires.
    pub(crate) modmsk_req: u32,
    /// Its flags.
    pub(crate) flags: u32,
    /// Its unit masks, in libpfm4's order.
    pub(crate) umasks: Vec<UmaskEntry>,
}

/// A checked unit mask, its modifiers and flags as bits as [`EventEntry`]'s.
#[derive(Debug)]
pub(crate) struct UmaskEntry {
    /// The unit mask's name.
    pub(crate) name: String,
    /// The attributes it stands for (`.uequiv`), never empty.
    pub(crate) equiv: Option<String>,
    /// Its code (Intel: shifted left by 8, with the second register's bits above).
    pub(crate) code: u64,
    /// Its group (bits 0-7) and, with `GRP_REQ`, the group it requires (bits 8-15).
    pub(crate) grpid: u32,
    /// Its flags.
    pub(crate) flags: u32,
    /// The modifiers it hard-wires.
    pub(crate) modhw: u32,
    /// The modifiers it requires.
    pub(crate) modmsk_req: u32,
    /// The counters it counts on, 0 for the event's.
    pub(crate) cntmsk: u64,
}

/// Reads file `name` (its `text`) and checks it: a known kind, known flags and modifiers, no
/// empty `equiv`, at most 31 unit-mask groups per event. The error names the file, and the
/// event and unit mask where one is wrong.
pub(crate) fn read(name: &str, text: &str) -> Result<PmuEntry, String> {
    let file: PmuFile = toml::from_str(text).map_err(|e| format!("{name}: {}", e.message()))?;
    check(file).map_err(|why| format!("{name}: {why}"))
}

/// The table `file` describes, or what is wrong with it.
fn check(file: PmuFile) -> Result<PmuEntry, String> {
    let intel = match file.kind.as_str() {
        "intel" => true,
        "amd64" => false,
        other => return Err(format!("unknown kind `{other}`")),
    };
    let mut events = Vec::with_capacity(file.event.len());
    for e in file.event {
        let at = |why: String| format!("event `{}`: {why}", e.name);
        if e.ngrp > MAX_GROUPS {
            return Err(at(format!(
                "{} unit-mask groups, above {MAX_GROUPS}",
                e.ngrp
            )));
        }
        let mut umasks = Vec::with_capacity(e.umasks.len());
        for u in e.umasks {
            let at_umask = |why: String| at(format!("unit mask `{}`: {why}", u.name));
            umasks.push(UmaskEntry {
                flags: flag_bits(&u.flags).map_err(at_umask)?,
                modhw: modifier_bits(intel, &u.modhw).map_err(at_umask)?,
                modmsk_req: modifier_bits(intel, &u.modmsk_req).map_err(at_umask)?,
                equiv: not_empty(u.equiv).map_err(at_umask)?,
                name: u.name,
                code: u.code,
                grpid: u.grpid,
                cntmsk: u.cntmsk,
            });
        }
        events.push(EventEntry {
            flags: flag_bits(&e.flags).map_err(at)?,
            modmsk: modifier_bits(intel, &e.modmsk).map_err(at)?,
            modmsk_req: modifier_bits(intel, &e.modmsk_req).map_err(at)?,
            equiv: not_empty(e.equiv).map_err(at)?,
            name: e.name,
            code: e.code,
            cntmsk: e.cntmsk,
            ngrp: e.ngrp,
            umasks,
        });
    }
    Ok(PmuEntry {
        name: file.pmu,
        intel,
        raw_umask: file.flags.iter().any(|f| f == "RAW_UMASK"),
        ecmask: file.flags.iter().any(|f| f == "ECMASK"),
        events,
    })
}

/// `equiv` unless it is empty (an equivalence names at least an event or an attribute).
fn not_empty(equiv: Option<String>) -> Result<Option<String>, String> {
    match equiv {
        Some(e) if e.is_empty() => Err("an empty `equiv`".to_string()),
        equiv => Ok(equiv),
    }
}

/// The [`flag`] bits of flags `names`.
fn flag_bits(names: &[String]) -> Result<u32, String> {
    names.iter().try_fold(0, |bits, name| {
        Ok(bits
            | match name.as_str() {
                "NCOMBO" => flag::NCOMBO,
                "DFL" => flag::DFL,
                "GRP_EXCL" => flag::GRP_EXCL,
                "NHM_OFFCORE" => flag::NHM_OFFCORE,
                "EXCL_GRP_GT" => flag::EXCL_GRP_GT,
                "CODE_OVERRIDE" => flag::CODE_OVERRIDE,
                "LDLAT" => flag::LDLAT,
                "GRP_DFL_NONE" => flag::GRP_DFL_NONE,
                "FRONTEND" => flag::FRONTEND,
                "FETHR" => flag::FETHR,
                "EXCL_GRP_BUT_0" => flag::EXCL_GRP_BUT_0,
                "GRP_REQ" => flag::GRP_REQ,
                "OMIT" => flag::OMIT,
                "IBSFE" => flag::IBSFE,
                "IBSOP" => flag::IBSOP,
                "PEBS" | "SPEC" | "FIXED" | "FALLBACK_GEN" | "NO_AUTOENCODE" | "FILT_UMASK"
                | "FORCE_FILT0" | "DEPRECATED" | "CODE_DUP" | "NO_MODS" => flag::OTHER,
                other => return Err(format!("unknown flag `{other}`")),
            })
    })
}

/// Modifiers `names` as bits of their indices in the kind's list of modifiers.
fn modifier_bits(intel: bool, names: &[String]) -> Result<u32, String> {
    let all: &[&str] = if intel {
        &INTEL_MODIFIERS
    } else {
        &AMD_MODIFIERS
    };
    names.iter().try_fold(0, |bits, name| {
        let i = all
            .iter()
            .position(|m| m == name)
            .ok_or_else(|| format!("unknown modifier `{name}`"))?;
        Ok(bits | 1 << i)
    })
}
