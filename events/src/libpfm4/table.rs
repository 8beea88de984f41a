//! libpfm4's x86 core tables as generated (`data/generated/libpfm4/PMU.toml`, by
//! `counterhal-gen libpfm4-grammar` from the libpfm4 snapshot each file names), parsed the
//! first time a string names their PMU: nothing here runs at start-up.

use std::sync::OnceLock;

use serde::Deserialize;

macro_rules! pmu_files {
    ($($name:literal),* $(,)?) => {
        /// Every libpfm4 PMU table shipped: libpfm4's PMU name and the file's text.
        pub(crate) const PMU_FILES: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../../data/generated/libpfm4/", $name, ".toml"))),)*
        ];
    };
}

pmu_files!(
    "amd64_fam10h_barcelona",
    "amd64_fam10h_istanbul",
    "amd64_fam10h_shanghai",
    "amd64_fam11h_turion",
    "amd64_fam12h_llano",
    "amd64_fam14h_bobcat",
    "amd64_fam15h_interlagos",
    "amd64_fam16h",
    "amd64_fam17h_zen1",
    "amd64_fam17h_zen2",
    "amd64_fam19h_zen3",
    "amd64_fam19h_zen4",
    "amd64_k7",
    "amd64_k8_revb",
    "amd64_k8_revc",
    "amd64_k8_revd",
    "amd64_k8_reve",
    "amd64_k8_revf",
    "amd64_k8_revg",
    "atom",
    "bdw",
    "bdw_ep",
    "clx",
    "core",
    "glm",
    "hsw",
    "hsw_ep",
    "icl",
    "icx",
    "ivb",
    "ivb_ep",
    "knl",
    "knm",
    "nhm",
    "nhm_ex",
    "skl",
    "skx",
    "slm",
    "snb",
    "snb_ep",
    "spr",
    "tmt",
    "wsm",
    "wsm_dp",
);

/// libpfm4's other names of a PMU's table: `amd64_fam17h` is its deprecated name of Zen 1.
const OTHER_NAMES: [(&str, &str); 1] = [("amd64_fam17h", "amd64_fam17h_zen1")];

/// Unit-mask and event flags (libpfm4's `INTEL_X86_*` and `AMD64_FL_*`, by name).
pub(crate) mod flag {
    pub const NCOMBO: u32 = 1 << 0;
    pub const DFL: u32 = 1 << 1;
    pub const GRP_EXCL: u32 = 1 << 2;
    pub const NHM_OFFCORE: u32 = 1 << 3;
    pub const EXCL_GRP_GT: u32 = 1 << 4;
    pub const CODE_OVERRIDE: u32 = 1 << 5;
    pub const LDLAT: u32 = 1 << 6;
    pub const GRP_DFL_NONE: u32 = 1 << 7;
    pub const FRONTEND: u32 = 1 << 8;
    pub const FETHR: u32 = 1 << 9;
    pub const EXCL_GRP_BUT_0: u32 = 1 << 10;
    pub const GRP_REQ: u32 = 1 << 11;
    pub const OMIT: u32 = 1 << 12;
    pub const IBSFE: u32 = 1 << 13;
    pub const IBSOP: u32 = 1 << 14;
    /// Flags that change nothing the encoder does (PEBS, speculation, table checks).
    pub const OTHER: u32 = 1 << 31;
}

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
                | "FORCE_FILT0" => flag::OTHER,
                other => return Err(format!("unknown flag `{other}`")),
            })
    })
}

/// Intel's modifiers in libpfm4's order (`intel_x86_mods`): the index is the attribute's.
pub(crate) const INTEL_MODIFIERS: [&str; 10] = [
    "k", "u", "e", "i", "c", "t", "ldlat", "intx", "intxcp", "fe_thres",
];
/// AMD's modifiers in libpfm4's order (`amd64_mods`).
pub(crate) const AMD_MODIFIERS: [&str; 7] = ["k", "u", "e", "i", "c", "h", "g"];

/// Whether modifier `index` of a PMU's kind takes a number (else it is a boolean).
pub(crate) fn integer_modifier(intel: bool, index: u8) -> bool {
    let names: &[&str] = if intel {
        &INTEL_MODIFIERS
    } else {
        &AMD_MODIFIERS
    };
    matches!(
        names.get(usize::from(index)).copied(),
        Some("c" | "ldlat" | "fe_thres")
    )
}

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PmuFile {
    pmu: String,
    kind: String,
    flags: Vec<String>,
    #[serde(default)]
    event: Vec<EventFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventFile {
    name: String,
    equiv: Option<String>,
    code: u64,
    #[serde(default)]
    cntmsk: u64,
    #[serde(default)]
    ngrp: u32,
    modmsk: Vec<String>,
    #[serde(default)]
    modmsk_req: Vec<String>,
    #[serde(default)]
    flags: Vec<String>,
    #[serde(default)]
    umasks: Vec<UmaskFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UmaskFile {
    name: String,
    code: u64,
    equiv: Option<String>,
    #[serde(default)]
    grpid: u32,
    #[serde(default)]
    flags: Vec<String>,
    #[serde(default)]
    modhw: Vec<String>,
    #[serde(default)]
    modmsk_req: Vec<String>,
    #[serde(default)]
    cntmsk: u64,
}

/// One libpfm4 PMU's table.
#[derive(Debug)]
pub(crate) struct Pmu {
    /// libpfm4's PMU name.
    pub name: String,
    /// An Intel table (`pfm_intel_x86_encode_gen`); else AMD's (`pfm_amd64_get_encoding`).
    pub intel: bool,
    /// It takes a raw unit mask (`:0x..`, `PFMLIB_PMU_FL_RAW_UMASK`).
    pub raw_umask: bool,
    /// Edge needs a counter mask (`INTEL_X86_PMU_FL_ECMASK`).
    pub ecmask: bool,
    /// The events, in libpfm4's order.
    pub events: Vec<Event>,
}

/// One event.
#[derive(Debug)]
pub(crate) struct Event {
    pub name: String,
    pub equiv: Option<String>,
    pub code: u64,
    pub cntmsk: u64,
    pub ngrp: u32,
    pub modmsk: u32,
    pub modmsk_req: u32,
    pub flags: u32,
    pub umasks: Vec<Umask>,
}

/// One unit mask.
#[derive(Debug)]
pub(crate) struct Umask {
    pub name: String,
    pub equiv: Option<String>,
    pub code: u64,
    pub grpid: u32,
    pub flags: u32,
    pub modhw: u32,
    pub modmsk_req: u32,
    pub cntmsk: u64,
}

impl Umask {
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}

impl Event {
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}

include!(concat!(env!("OUT_DIR"), "/libpfm4_trees.rs"));

/// The pre-parsed form of table `name`, if it has one.
fn tree_of(name: &str) -> Option<crate::tree::Tree> {
    crate::tree::find(LIBPFM4_TREES, name)
}

/// Parses one generated file, from its pre-parsed form where that reads (it gives what the TOML
/// parser gives: a test checks every table), else from its text.
pub(crate) fn parse(name: &str, text: &str) -> Result<Pmu, String> {
    let file = match tree_of(name).and_then(|tree| crate::tree::from_tree::<PmuFile>(tree).ok()) {
        Some(file) => file,
        None => toml::from_str(text).map_err(|e| e.to_string())?,
    };
    build(file)
}

/// Parses one generated file from its text alone (the TOML parser: the tests' oracle).
#[cfg(test)]
pub(crate) fn parse_text(text: &str) -> Result<Pmu, String> {
    build(toml::from_str(text).map_err(|e| e.to_string())?)
}

/// Whether table `name`'s pre-parsed form reads.
#[cfg(test)]
pub(crate) fn tree_reads(name: &str) -> bool {
    tree_of(name).is_some_and(|tree| crate::tree::from_tree::<PmuFile>(tree).is_ok())
}

/// The table a generated file describes.
fn build(file: PmuFile) -> Result<Pmu, String> {
    let intel = match file.kind.as_str() {
        "intel" => true,
        "amd64" => false,
        other => return Err(format!("unknown kind `{other}`")),
    };
    let mut events = Vec::with_capacity(file.event.len());
    for e in file.event {
        let mut umasks = Vec::with_capacity(e.umasks.len());
        for u in e.umasks {
            umasks.push(Umask {
                flags: flag_bits(&u.flags)?,
                modhw: modifier_bits(intel, &u.modhw)?,
                modmsk_req: modifier_bits(intel, &u.modmsk_req)?,
                name: u.name,
                equiv: u.equiv,
                code: u.code,
                grpid: u.grpid,
                cntmsk: u.cntmsk,
            });
        }
        events.push(Event {
            flags: flag_bits(&e.flags)?,
            modmsk: modifier_bits(intel, &e.modmsk)?,
            modmsk_req: modifier_bits(intel, &e.modmsk_req)?,
            name: e.name,
            equiv: e.equiv,
            code: e.code,
            cntmsk: e.cntmsk,
            ngrp: e.ngrp,
            umasks,
        });
    }
    Ok(Pmu {
        name: file.pmu,
        intel,
        raw_umask: file.flags.iter().any(|f| f == "RAW_UMASK"),
        ecmask: file.flags.iter().any(|f| f == "ECMASK"),
        events,
    })
}

/// The parsed table of each shipped file, in [`PMU_FILES`]'s order, parsed on first use.
pub(crate) static PARSED: [OnceLock<Result<Pmu, String>>; PMU_FILES.len()] =
    [const { OnceLock::new() }; PMU_FILES.len()];

/// The libpfm4 PMU named `name` (case-insensitive, as libpfm4 compares PMU names), or None
/// when libpfm4 has no x86 core PMU of that name.
///
/// # Panics
/// Never for the shipped files: the crate's tests parse each of them.
pub(crate) fn pmu(name: &str) -> Option<&'static Pmu> {
    // `known == name.to_ascii_lowercase()`, without making the lower-case copy (a listing
    // asks for each of a model's unit masks).
    let is_lower_of = |known: &str, name: &str| {
        known.len() == name.len()
            && known
                .bytes()
                .zip(name.bytes())
                .all(|(k, n)| k == n.to_ascii_lowercase())
    };
    let (name, lowered) = match OTHER_NAMES
        .iter()
        .find(|(other, _)| is_lower_of(other, name))
    {
        Some((_, table)) => (*table, true),
        None => (name, false),
    };
    let index = PMU_FILES.iter().position(|(file, _)| {
        if lowered {
            *file == name
        } else {
            is_lower_of(file, name)
        }
    })?;
    PARSED[index]
        .get_or_init(|| parse(PMU_FILES[index].0, PMU_FILES[index].1))
        .as_ref()
        .ok()
}

/// Every shipped table's name and parse result (for tests).
#[cfg(test)]
pub(crate) fn all() -> impl Iterator<Item = (&'static str, Result<Pmu, String>)> {
    PMU_FILES
        .iter()
        .map(|&(name, text)| (name, parse(name, text)))
}
