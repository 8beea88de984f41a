//! libpfm4's own tables, in libpfm4's own structure, for a resolver that follows its grammar
//! exactly: one file per x86 core PMU (`events/data/generated/libpfm4/PMU.toml`) with every
//! event the PMU has (after libpfm4's per-model and per-revision filters), its code, counter
//! mask, unit-mask groups, modifiers (`modmsk`), required modifiers and flags, and each unit
//! mask with its code, group, flags, hard-wired modifiers and equivalence. The values are
//! libpfm4's C expressions evaluated with the snapshot's own macros
//! (`lib/pfmlib_intel_x86_priv.h`, `lib/pfmlib_amd64_priv.h`, `lib/pfmlib_priv.h`,
//! `include/perfmon/pfmlib.h`); the PMU's own flags come from its `pfmlib_pmu_t` in
//! `lib/pfmlib_*.c`. Descriptions are not copied.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::GenError;
use crate::cexpr::Macros;
use crate::cparse::{Fields, strip_comments};
use crate::grammar_errata::PmuErrata;
use crate::revisions::Revisions;
use keep::keep;

mod keep;

/// The snapshot's headers whose macros the tables' expressions use.
const MACRO_FILES: [&str; 4] = [
    "include/perfmon/pfmlib.h",
    "lib/pfmlib_priv.h",
    "lib/pfmlib_intel_x86_priv.h",
    "lib/pfmlib_amd64_priv.h",
];

/// The Intel core PMUs (libpfm4's name) and the source under `lib/` defining each.
pub const INTEL_PMUS: &[(&str, &str)] = &[
    ("core", "pfmlib_intel_core.c"),
    ("atom", "pfmlib_intel_atom.c"),
    ("nhm", "pfmlib_intel_nhm.c"),
    ("nhm_ex", "pfmlib_intel_nhm.c"),
    ("wsm", "pfmlib_intel_wsm.c"),
    ("wsm_dp", "pfmlib_intel_wsm.c"),
    ("snb", "pfmlib_intel_snb.c"),
    ("snb_ep", "pfmlib_intel_snb.c"),
    ("ivb", "pfmlib_intel_ivb.c"),
    ("ivb_ep", "pfmlib_intel_ivb.c"),
    ("hsw", "pfmlib_intel_hsw.c"),
    ("hsw_ep", "pfmlib_intel_hsw.c"),
    ("bdw", "pfmlib_intel_bdw.c"),
    ("bdw_ep", "pfmlib_intel_bdw.c"),
    ("skl", "pfmlib_intel_skl.c"),
    ("skx", "pfmlib_intel_skl.c"),
    ("clx", "pfmlib_intel_skl.c"),
    ("slm", "pfmlib_intel_slm.c"),
    ("glm", "pfmlib_intel_glm.c"),
    ("knl", "pfmlib_intel_knl.c"),
    ("knm", "pfmlib_intel_knl.c"),
    ("tmt", "pfmlib_intel_tmt.c"),
    ("icl", "pfmlib_intel_icl.c"),
    ("icx", "pfmlib_intel_icl.c"),
    ("spr", "pfmlib_intel_spr.c"),
    ("emr", "pfmlib_intel_spr.c"),
    ("gnr", "pfmlib_intel_gnr.c"),
    ("adl_glc", "pfmlib_intel_adl.c"),
    ("adl_grt", "pfmlib_intel_adl.c"),
];

/// The AMD core PMUs (libpfm4's name) and the source under `lib/` defining each.
pub const AMD_PMUS: &[(&str, &str)] = &[
    ("amd64_k7", "pfmlib_amd64_k7.c"),
    ("amd64_k8_revb", "pfmlib_amd64_k8.c"),
    ("amd64_k8_revc", "pfmlib_amd64_k8.c"),
    ("amd64_k8_revd", "pfmlib_amd64_k8.c"),
    ("amd64_k8_reve", "pfmlib_amd64_k8.c"),
    ("amd64_k8_revf", "pfmlib_amd64_k8.c"),
    ("amd64_k8_revg", "pfmlib_amd64_k8.c"),
    ("amd64_fam10h_barcelona", "pfmlib_amd64_fam10h.c"),
    ("amd64_fam10h_shanghai", "pfmlib_amd64_fam10h.c"),
    ("amd64_fam10h_istanbul", "pfmlib_amd64_fam10h.c"),
    ("amd64_fam11h_turion", "pfmlib_amd64_fam11h.c"),
    ("amd64_fam12h_llano", "pfmlib_amd64_fam12h.c"),
    ("amd64_fam14h_bobcat", "pfmlib_amd64_fam14h.c"),
    ("amd64_fam15h_interlagos", "pfmlib_amd64_fam15h.c"),
    ("amd64_fam16h", "pfmlib_amd64_fam16h.c"),
    ("amd64_fam17h_zen1", "pfmlib_amd64_fam17h.c"),
    ("amd64_fam17h_zen2", "pfmlib_amd64_fam17h.c"),
    ("amd64_fam19h_zen3", "pfmlib_amd64_fam19h.c"),
    ("amd64_fam19h_zen4", "pfmlib_amd64_fam19h.c"),
    ("amd64_fam1ah_zen5", "pfmlib_amd64_fam1ah.c"),
];

/// The flags of Intel's unit masks and events (`INTEL_X86_*`), by name.
const INTEL_FLAGS: [&str; 22] = [
    "NCOMBO",
    "FALLBACK_GEN",
    "PEBS",
    "DFL",
    "GRP_EXCL",
    "NHM_OFFCORE",
    "EXCL_GRP_GT",
    "FIXED",
    "NO_AUTOENCODE",
    "CODE_OVERRIDE",
    "LDLAT",
    "GRP_DFL_NONE",
    "FRONTEND",
    "FETHR",
    "EXCL_GRP_BUT_0",
    "GRP_REQ",
    "FILT_UMASK",
    "FORCE_FILT0",
    "SPEC",
    "DEPRECATED",
    "CODE_DUP",
    "NO_MODS",
];

/// The flags of AMD's unit masks and events (`AMD64_FL_*`) the encoder reads.
const AMD_FLAGS: [&str; 5] = ["NCOMBO", "IBSFE", "IBSOP", "DFL", "OMIT"];

/// Intel's modifiers in libpfm4's bit order (`intel_x86_mods`).
pub const INTEL_MODIFIERS: [&str; 10] = [
    "k", "u", "e", "i", "c", "t", "ldlat", "intx", "intxcp", "fe_thres",
];

/// AMD's modifiers in libpfm4's bit order (`amd64_mods`).
pub const AMD_MODIFIERS: [&str; 7] = ["k", "u", "e", "i", "c", "h", "g"];

/// One unit mask.
pub struct PfmUmask {
    name: String,
    equiv: Option<String>,
    code: u64,
    flags: u64,
    grpid: u64,
    modhw: u64,
    modmsk_req: u64,
    cntmsk: u64,
}

/// One event.
pub struct PfmEvent {
    name: String,
    equiv: Option<String>,
    code: u64,
    cntmsk: u64,
    flags: u64,
    modmsk: u64,
    modmsk_req: u64,
    ngrp: u64,
    umasks: Vec<PfmUmask>,
}

/// One libpfm4 core PMU's table.
pub struct PfmPmu {
    /// libpfm4's PMU name.
    pub name: String,
    intel: bool,
    raw_umask: bool,
    ecmask: bool,
    files: Vec<String>,
    events: Vec<PfmEvent>,
    /// The header line saying what an older snapshot's table added, if it added anything.
    kept: Option<String>,
}

/// What one snapshot's sources give every PMU.
struct Snapshot {
    root: PathBuf,
    macros: Macros,
}

impl Snapshot {
    fn read(&self, relative: &str) -> Result<String, GenError> {
        let path = self.root.join(relative);
        std::fs::read_to_string(&path)
            .map(|t| strip_comments(&t))
            .map_err(|e| GenError::io(&path, &e))
    }

    fn eval(&self, fields: &Fields, key: &str, context: &str) -> Result<u64, GenError> {
        match fields.get(key) {
            None => Ok(0),
            Some(text) => self
                .macros
                .eval(text)
                .map_err(|why| GenError::Data(format!("{context}: `.{key}`: {why}"))),
        }
    }
}

/// Every PMU of [`INTEL_PMUS`] and [`AMD_PMUS`] from the libpfm4 snapshot at `root`.
///
/// # Errors
/// A missing or malformed source, an expression that does not evaluate, a flag this
/// generator does not know.
pub fn pmus(root: &Path) -> Result<Vec<PfmPmu>, GenError> {
    pmus_of(root, false)
}

/// The PMUs of [`INTEL_PMUS`] and [`AMD_PMUS`] in the snapshot at `root`; with `defined_only`,
/// those whose `pfmlib_pmu_t` the snapshot lacks are left out (an older snapshot, before
/// libpfm4 added them), else that is an error.
fn pmus_of(root: &Path, defined_only: bool) -> Result<Vec<PfmPmu>, GenError> {
    let mut macros = Macros::default();
    let mut snapshot = Snapshot {
        root: root.to_path_buf(),
        macros: Macros::default(),
    };
    for file in MACRO_FILES {
        macros.add(&snapshot.read(file)?);
    }
    snapshot.macros = macros;
    let revisions = Revisions::read(root)?;
    let mut out = Vec::new();
    let all = INTEL_PMUS
        .iter()
        .map(|&(n, s)| (n, s, true))
        .chain(AMD_PMUS.iter().map(|&(n, s)| (n, s, false)));
    for (name, source, intel) in all {
        if defined_only && pmu_fields(&snapshot, &revisions, name, source).is_err() {
            continue;
        }
        out.push(pmu(&snapshot, &revisions, name, source, intel)?);
    }
    Ok(out)
}

/// The `pfmlib_pmu_t` of `name` in `source`: its fields, or for a PMU a `DEFINE_*_REV` macro
/// makes, its revision's number.
fn pmu_fields(
    snapshot: &Snapshot,
    revisions: &Revisions,
    name: &str,
    source: &str,
) -> Result<(Fields, Option<u32>), GenError> {
    let text = snapshot.read(&format!("lib/{source}"))?;
    let bad = |why: String| GenError::Data(format!("lib/{source}: {why}"));
    if let Some(found) = crate::cparse::structs(&text, "pfmlib_pmu_t")
        .map_err(bad)?
        .into_iter()
        .find(|f| f.get("name").is_some_and(|n| n == name))
    {
        return Ok((found, None));
    }
    // A revision PMU: the macro's body is the struct, its `.pe` the family's table.
    let number = revisions
        .pmus(&snapshot.root, source)?
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| p.number)
        .ok_or_else(|| bad(format!("no PMU `{name}`")))?;
    let body = text
        .find("pfmlib_pmu_t ")
        .map(|at| &text[at..])
        .ok_or_else(|| bad("no pfmlib_pmu_t".to_string()))?;
    let unescaped = body.replace("\\\n", "\n");
    let mut fields = crate::cparse::structs(&unescaped, "pfmlib_pmu_t")
        .map_err(bad)?
        .into_iter()
        .next()
        .ok_or_else(|| bad(format!("no PMU `{name}`")))?;
    fields.insert("name".to_string(), name.to_string());
    Ok((fields, Some(number)))
}

fn pmu(
    snapshot: &Snapshot,
    revisions: &Revisions,
    name: &str,
    source: &str,
    intel: bool,
) -> Result<PfmPmu, GenError> {
    let (fields, revision) = pmu_fields(snapshot, revisions, name, source)?;
    let context = format!("lib/{source}: PMU {name}");
    let array = fields
        .get("pe")
        .cloned()
        .ok_or_else(|| GenError::Data(format!("{context}: no `.pe`")))?;
    let flags = snapshot.eval(&fields, "flags", &context)?;
    let raw = snapshot.macros.eval("PFMLIB_PMU_FL_RAW_UMASK").unwrap_or(0);
    let ecmask = snapshot.macros.eval("INTEL_X86_PMU_FL_ECMASK").unwrap_or(0);
    let pmu_constant = fields.get("pmu").cloned().unwrap_or_default();
    let (header, table) = find_array(snapshot, &array, intel)?;
    let mut events = Vec::new();
    for entry in &table.entries {
        let event_name = entry.get("name").cloned().unwrap_or_default();
        let context = format!("lib/events/{header}: {event_name}");
        if intel && entry.get("model").is_some_and(|m| *m != pmu_constant) {
            continue;
        }
        let flag_text = entry.get("flags").cloned().unwrap_or_default();
        if !intel && !keeps(revisions, &flag_text, revision) {
            continue;
        }
        let mut umasks = Vec::new();
        if let Some(array) = entry.get("umasks") {
            let list = table
                .umasks
                .get(array)
                .ok_or_else(|| GenError::Data(format!("{context}: no unit masks `{array}`")))?;
            let count = match entry.get("numasks").map(String::as_str) {
                Some(n) if n.starts_with("LIBPFM_ARRAY_SIZE") => list.len(),
                Some(n) => usize::try_from(snapshot.macros.eval(n).map_err(GenError::Data)?)
                    .unwrap_or(usize::MAX),
                None => list.len(),
            };
            for u in list.iter().take(count) {
                let uname = u.get("uname").cloned().unwrap_or_default();
                let context = format!("{context}:{uname}");
                if intel && u.get("umodel").is_some_and(|m| *m != pmu_constant) {
                    continue;
                }
                let uflag_text = u.get("uflags").cloned().unwrap_or_default();
                if !intel && !keeps(revisions, &uflag_text, revision) {
                    continue;
                }
                umasks.push(PfmUmask {
                    name: uname,
                    equiv: u.get("uequiv").cloned(),
                    code: snapshot.eval(u, "ucode", &context)?,
                    flags: snapshot.eval(&without_revisions(u, "uflags"), "uflags", &context)?,
                    grpid: snapshot.eval(u, "grpid", &context)?,
                    modhw: snapshot.eval(u, "modhw", &context)?,
                    modmsk_req: snapshot.eval(u, "umodmsk_req", &context)?,
                    cntmsk: snapshot.eval(u, "ucntmsk", &context)?,
                });
            }
        }
        events.push(PfmEvent {
            name: event_name,
            equiv: entry.get("equiv").cloned(),
            code: snapshot.eval(entry, "code", &context)?,
            cntmsk: snapshot.eval(entry, "cntmsk", &context)?,
            flags: snapshot.eval(&without_revisions(entry, "flags"), "flags", &context)?,
            modmsk: snapshot.eval(entry, "modmsk", &context)?,
            modmsk_req: snapshot.eval(entry, "modmsk_req", &context)?,
            ngrp: snapshot.eval(entry, "ngrp", &context)?,
            umasks,
        });
    }
    Ok(PfmPmu {
        name: name.to_string(),
        intel,
        raw_umask: flags & raw != 0,
        ecmask: intel && flags & ecmask != 0,
        files: vec![format!("lib/{source}"), format!("lib/events/{header}")],
        events,
        kept: None,
    })
}

/// Whether an AMD entry with `.flags` (or `.uflags`) `text` exists on revision `revision`
/// (None: a PMU without revisions keeps every entry).
fn keeps(revisions: &Revisions, text: &str, revision: Option<u32>) -> bool {
    let Some(number) = revision else {
        return true;
    };
    let names: Vec<String> = text.split('|').map(|s| s.trim().to_string()).collect();
    revisions.keeps(&names, number)
}

/// `fields` without the AMD revision flags of its `key` (`AMD64_FL_TILL_K8_REV_C`), which
/// filtered the entries already.
fn without_revisions(fields: &Fields, key: &str) -> Fields {
    let mut out = fields.clone();
    if let Some(text) = fields.get(key) {
        let kept: Vec<&str> = text
            .split('|')
            .map(str::trim)
            .filter(|f| !f.contains("_REV"))
            .collect();
        out.insert(
            key.to_string(),
            if kept.is_empty() {
                "0".to_string()
            } else {
                kept.join("|")
            },
        );
    }
    out
}

/// The header under `lib/events` holding the entry array `array`, and its table.
fn find_array(
    snapshot: &Snapshot,
    array: &str,
    intel: bool,
) -> Result<(String, crate::cparse::Table), GenError> {
    let dir = snapshot.root.join("lib/events");
    let mut headers: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| GenError::io(&dir, &e))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| {
            n.ends_with(".h")
                && n.starts_with(if intel { "intel_" } else { "amd64_" })
                && !n.contains("_unc_")
        })
        .collect();
    headers.sort();
    let (entry_type, umask_type) = if intel {
        ("intel_x86_entry_t", "intel_x86_umask_t")
    } else {
        ("amd64_entry_t", "amd64_umask_t")
    };
    for header in headers {
        let text = snapshot.read(&format!("lib/events/{header}"))?;
        if !text.contains(&format!("{entry_type} {array}[")) {
            continue;
        }
        let table =
            crate::cparse::read_table(&snapshot.root, &header, entry_type, umask_type, array)?;
        return Ok((header, table));
    }
    Err(GenError::Data(format!(
        "no header under lib/events defines `{array}`"
    )))
}

fn flag_names(
    value: u64,
    names: &[&str],
    macros: &Macros,
    prefix: &str,
) -> Result<Vec<String>, String> {
    let mut rest = value;
    let mut out = Vec::new();
    for name in names {
        // A flag an older snapshot does not define (`INTEL_X86_NO_MODS`) is set nowhere.
        let Ok(bit) = macros.eval(&format!("{prefix}{name}")) else {
            continue;
        };
        if bit != 0 && value & bit == bit {
            out.push((*name).to_string());
            rest &= !bit;
        }
    }
    Ok(out).and_then(|out| {
        // AMD's revision bits (15:8 from, 23:16 till) were applied when filtering.
        let rest = if prefix == "AMD64_FL_" {
            rest & !0x00ff_ff00
        } else {
            rest
        };
        if rest == 0 {
            Ok(out)
        } else {
            Err(format!(
                "flags {value:#x}: bits {rest:#x} have no known name"
            ))
        }
    })
}

fn modifier_names(mask: u64, names: &[&str]) -> Result<Vec<&'static str>, String> {
    let all: &[&'static str] = if names.len() == INTEL_MODIFIERS.len() {
        &INTEL_MODIFIERS
    } else {
        &AMD_MODIFIERS
    };
    if mask >> all.len() != 0 {
        return Err(format!("modifier mask {mask:#x} has unknown bits"));
    }
    Ok((0..all.len())
        .filter(|b| mask & (1 << b) != 0)
        .map(|b| all[b])
        .collect())
}

fn list(items: &[impl AsRef<str>]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| format!("\"{}\"", s.as_ref()))
        .collect();
    format!("[{}]", quoted.join(", "))
}

/// The TOML text of `pmu`, headed by the source and `commit`, with `errata` (the PMU's file
/// of `gen/errata/libpfm4/`, if it has one) applied.
///
/// # Errors
/// A flag or modifier bit without a name; an erratum that does not apply.
pub fn pmu_toml(
    pmu: &PfmPmu,
    commit: &str,
    root: &Path,
    mut errata: Option<&mut PmuErrata>,
) -> Result<String, GenError> {
    let mut macros = Macros::default();
    for file in MACRO_FILES {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
        macros.add(&strip_comments(&text));
    }
    let (flag_list, prefix, mods): (&[&str], &str, &[&str]) = if pmu.intel {
        (&INTEL_FLAGS, "INTEL_X86_", &INTEL_MODIFIERS)
    } else {
        (&AMD_FLAGS, "AMD64_FL_", &AMD_MODIFIERS)
    };
    let context = |what: &str, why: String| GenError::Data(format!("{} {what}: {why}", pmu.name));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# generated: do not edit (counterhal-gen libpfm4-grammar)"
    );
    let _ = writeln!(out, "# source: {}", crate::libpfm4::SOURCE);
    let _ = writeln!(out, "# commit: {commit}");
    let _ = writeln!(out, "# files: {}", pmu.files.join(", "));
    if let Some(kept) = &pmu.kept {
        let _ = writeln!(out, "# kept: {kept}");
    }
    if let Some(errata) = errata.as_deref() {
        let _ = writeln!(out, "# errata: {}, {}", errata.len(), errata.file);
    }
    let _ = writeln!(out, "pmu = \"{}\"", pmu.name);
    let _ = writeln!(
        out,
        "kind = \"{}\"",
        if pmu.intel { "intel" } else { "amd64" }
    );
    let mut pmu_flags = Vec::new();
    if pmu.raw_umask {
        pmu_flags.push("RAW_UMASK");
    }
    if pmu.ecmask {
        pmu_flags.push("ECMASK");
    }
    let _ = writeln!(out, "flags = {}", list(&pmu_flags));
    for e in &pmu.events {
        let _ = writeln!(out, "\n[[event]]\nname = \"{}\"", e.name);
        if let Some(equiv) = &e.equiv {
            let _ = writeln!(out, "equiv = \"{equiv}\"");
        }
        let _ = writeln!(out, "code = {:#x}", e.code);
        if e.cntmsk != 0 {
            let _ = writeln!(out, "cntmsk = {:#x}", e.cntmsk);
        }
        if e.ngrp != 0 {
            let _ = writeln!(out, "ngrp = {}", e.ngrp);
        }
        let modmsk = modifier_names(e.modmsk, mods).map_err(|w| context(&e.name, w))?;
        let _ = writeln!(out, "modmsk = {}", list(&modmsk));
        if e.modmsk_req != 0 {
            let req = modifier_names(e.modmsk_req, mods).map_err(|w| context(&e.name, w))?;
            let _ = writeln!(out, "modmsk_req = {}", list(&req));
        }
        let flags =
            flag_names(e.flags, flag_list, &macros, prefix).map_err(|w| context(&e.name, w))?;
        if !flags.is_empty() {
            let _ = writeln!(out, "flags = {}", list(&flags));
        }
        if e.umasks.is_empty() {
            continue;
        }
        let _ = writeln!(out, "umasks = [");
        for u in &e.umasks {
            let what = format!("{}:{}", e.name, u.name);
            let mut line = format!("  {{ name = \"{}\", code = {:#x}", u.name, u.code);
            if let Some(equiv) = &u.equiv {
                let _ = write!(line, ", equiv = \"{equiv}\"");
            }
            if u.grpid != 0 {
                let _ = write!(line, ", grpid = {:#x}", u.grpid);
            }
            let mut flags =
                flag_names(u.flags, flag_list, &macros, prefix).map_err(|w| context(&what, w))?;
            if let Some(errata) = errata.as_deref_mut() {
                flags = errata
                    .flags(&e.name, &u.name, flags)
                    .map_err(GenError::Data)?;
            }
            if !flags.is_empty() {
                let _ = write!(line, ", flags = {}", list(&flags));
            }
            if u.modhw != 0 {
                let hw = modifier_names(u.modhw, mods).map_err(|w| context(&what, w))?;
                let _ = write!(line, ", modhw = {}", list(&hw));
            }
            if u.modmsk_req != 0 {
                let req = modifier_names(u.modmsk_req, mods).map_err(|w| context(&what, w))?;
                let _ = write!(line, ", modmsk_req = {}", list(&req));
            }
            if u.cntmsk != 0 {
                let _ = write!(line, ", cntmsk = {:#x}", u.cntmsk);
            }
            let _ = writeln!(out, "{line} }},");
        }
        let _ = writeln!(out, "]");
    }
    if let Some(errata) = errata {
        errata.check_applied().map_err(GenError::Data)?;
    }
    Ok(out)
}

/// Writes every PMU of the libpfm4 snapshot at `root` to `out/PMU.toml`, with the errata of
/// `errata_dir` (`gen/errata/libpfm4/`) applied, and with what the older snapshots `older`
/// (each a top directory and its commit, in order) have and it lacks kept (see `grammar::keep`);
/// returns the paths.
///
/// # Errors
/// As [`pmus`] and [`pmu_toml`]; a file that cannot be written; an errata file naming no PMU
/// of the snapshot.
pub fn write_pmus(
    root: &Path,
    commit: &str,
    out: &Path,
    errata_dir: &Path,
    older: &[(PathBuf, String)],
) -> Result<Vec<String>, GenError> {
    std::fs::create_dir_all(out).map_err(|e| GenError::io(out, &e))?;
    let mut errata = crate::grammar_errata::read(errata_dir)?;
    let mut written = Vec::new();
    let mut names = BTreeMap::new();
    let mut all = pmus(root)?;
    for (older_root, older_commit) in older {
        let mut macros = Macros::default();
        for file in MACRO_FILES {
            let path = older_root.join(file);
            let text = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
            macros.add(&strip_comments(&text));
        }
        for old in pmus_of(older_root, true)? {
            let Some(pmu) = all.iter_mut().find(|p| p.name == old.name) else {
                continue;
            };
            let dfl = macros
                .eval(if pmu.intel {
                    "INTEL_X86_DFL"
                } else {
                    "AMD64_FL_DFL"
                })
                .map_err(GenError::Data)?;
            let kept = keep(pmu, old, dfl);
            if kept.events + kept.umasks + kept.defaults > 0 {
                let line = format!(
                    "{} events, {} unit masks, {} defaults of libpfm4 {older_commit} it lacks",
                    kept.events, kept.umasks, kept.defaults
                );
                pmu.kept = Some(match pmu.kept.take() {
                    Some(before) => format!("{before}; {line}"),
                    None => line,
                });
            }
        }
    }
    for pmu in all {
        let path = out.join(format!("{}.toml", pmu.name));
        let text = pmu_toml(&pmu, commit, root, errata.get_mut(&pmu.name))?;
        std::fs::write(&path, text).map_err(|e| GenError::io(&path, &e))?;
        names.insert(pmu.name.clone(), path.display().to_string());
    }
    if let Some(pmu) = errata.keys().find(|p| !names.contains_key(*p)) {
        return Err(GenError::Data(format!(
            "gen/errata/libpfm4/{pmu}.toml names no PMU of the snapshot"
        )));
    }
    written.extend(names.into_values());
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn macros() -> Macros {
        let mut m = Macros::default();
        m.add(
            "#define INTEL_X86_NCOMBO 0x1\n#define INTEL_X86_DFL 0x8\n#define INTEL_X86_PEBS 0x4\n#define AMD64_FL_DFL 0x8\n",
        );
        m
    }

    #[test]
    fn flags_are_named_and_unknown_bits_refused() {
        let m = macros();
        assert_eq!(
            flag_names(0x9, &["NCOMBO", "DFL"], &m, "INTEL_X86_"),
            Ok(vec!["NCOMBO".to_string(), "DFL".to_string()])
        );
        assert!(flag_names(0x100, &["NCOMBO", "DFL"], &m, "INTEL_X86_").is_err());
        // AMD's revision bits filtered the entries already.
        assert_eq!(
            flag_names(0x0003_0008, &["DFL"], &m, "AMD64_FL_"),
            Ok(vec!["DFL".to_string()])
        );
    }

    #[test]
    fn modifier_masks_are_named_in_libpfm4s_order() {
        assert_eq!(
            modifier_names(0b11_1111, &INTEL_MODIFIERS),
            Ok(vec!["k", "u", "e", "i", "c", "t"])
        );
        assert_eq!(
            modifier_names(0b110_0000, &AMD_MODIFIERS),
            Ok(vec!["h", "g"])
        );
        assert!(modifier_names(1 << 12, &INTEL_MODIFIERS).is_err());
    }

    fn umask(name: &str, flags: u64) -> PfmUmask {
        PfmUmask {
            name: name.to_string(),
            equiv: None,
            code: 0,
            flags,
            grpid: 0,
            modhw: 0,
            modmsk_req: 0,
            cntmsk: 0,
        }
    }

    fn event(name: &str, umasks: Vec<PfmUmask>) -> PfmEvent {
        PfmEvent {
            name: name.to_string(),
            equiv: None,
            code: 0,
            cntmsk: 0,
            flags: 0,
            modmsk: 0,
            modmsk_req: 0,
            ngrp: 1,
            umasks,
        }
    }

    fn table(events: Vec<PfmEvent>) -> PfmPmu {
        PfmPmu {
            name: "spr".to_string(),
            intel: true,
            raw_umask: false,
            ecmask: false,
            files: Vec::new(),
            events,
            kept: None,
        }
    }

    /// What libpfm4 4.13's Sapphire Rapids table has and the head's lacks (AMX_OPS_RETIRED,
    /// ICACHE_DATA's default STALLS) is kept; what the head has is the head's.
    #[test]
    fn an_older_snapshots_names_are_kept() {
        const DFL: u64 = 0x8;
        const NCOMBO: u64 = 0x1;
        let mut head = table(vec![
            event(
                "ICACHE_DATA",
                vec![umask("STALLS", NCOMBO), umask("STALL_PERIODS", NCOMBO)],
            ),
            event(
                "BR_INST_RETIRED",
                vec![umask("ALL_BRANCHES", DFL), umask("COND", 0)],
            ),
        ]);
        // Zen 5's L2_PREFETCH_MISS_L3: 0x165 before libpfm4 gave it its own code, 0x72.
        let mut moved = event("L2_PREFETCH_MISS_L3", vec![umask("LOCAL_CCX", 0)]);
        moved.code = 0x165;
        let mut corrected = event("L2_PREFETCH_MISS_L3", vec![umask("L2_HW_PF", 0)]);
        corrected.code = 0x72;
        head.events.push(corrected);
        let older = table(vec![
            event("AMX_OPS_RETIRED", vec![umask("BF16", NCOMBO)]),
            event("ICACHE_DATA", vec![umask("STALLS", DFL)]),
            event(
                "BR_INST_RETIRED",
                vec![umask("COND", DFL), umask("OLD", DFL)],
            ),
            moved,
        ]);
        let kept = keep(&mut head, older, DFL);
        assert_eq!((kept.events, kept.umasks, kept.defaults), (1, 1, 1));
        let names: Vec<&str> = head.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ICACHE_DATA",
                "BR_INST_RETIRED",
                "L2_PREFETCH_MISS_L3",
                "AMX_OPS_RETIRED"
            ]
        );
        // An event whose code changed keeps none of the older unit masks.
        assert_eq!(head.events[2].umasks.len(), 1);
        // The head's flags stay, with the older default added where the head has none.
        assert_eq!(head.events[0].umasks[0].flags, NCOMBO | DFL);
        // Where the head has a default, the older one neither moves it nor adds another.
        let br = &head.events[1].umasks;
        assert_eq!(
            br.iter()
                .map(|u| (u.name.as_str(), u.flags))
                .collect::<Vec<_>>(),
            [("ALL_BRANCHES", DFL), ("COND", 0), ("OLD", 0)]
        );
    }

    #[test]
    fn revision_flags_are_left_out_of_amd_flags() {
        let mut fields = Fields::new();
        fields.insert(
            "uflags".to_string(),
            "AMD64_FL_DFL | AMD64_FL_TILL_K8_REV_C".to_string(),
        );
        assert_eq!(
            without_revisions(&fields, "uflags")["uflags"],
            "AMD64_FL_DFL"
        );
        fields.insert("uflags".to_string(), "AMD64_FL_K8_REV_D".to_string());
        assert_eq!(without_revisions(&fields, "uflags")["uflags"], "0");
    }
}
