//! Where Intel's tables and libpfm4 give one name different values, and the verdict on each.
//!
//! Oracle: the installed libpfm4 4.13 (`pfm_get_os_event_encoding` through a C program linked
//! with `-lpfm`, every inactive PMU enabled). For every libpfm4 core PMU that resolves as one
//! of the models generated from Intel perfmon, every name libpfm4 and the model both define
//! is compared: libpfm4's `EVENT:UMASK` (or `EVENT`) against the model's own `EVENT.UMASK` (or
//! `EVENT`), and libpfm4's names grafted onto the model as aliases against the Intel name
//! each stands for. The values compared are the event-select fields (event code, unit mask,
//! counter mask, invert, edge, AnyThread, second unit-mask byte) and, where libpfm4 gives one,
//! the second register's value.
//!
//! `tests/data/disagreements.toml` lists each case with its verdict and evidence: `intel`
//! (Intel's value is right and is kept), `libpfm4` (Intel's table is wrong: an erratum in
//! `gen/errata/MODEL.toml` replaces Intel's value, so the Intel name now resolves to
//! libpfm4's encoding), `both-valid` (two valid encodings; Intel's is kept for Intel's name)
//! or `neither` (both values are wrong: an erratum writes the value the evidence gives). Every
//! difference found must be listed as `intel`, `both-valid` or `neither`, with the values
//! found; every `libpfm4` case must now resolve equal; the erratum of every `libpfm4` and
//! `neither` case is written in the model's errata file and records Intel's value as the case
//! does (for `neither`, ours is the erratum's value); every case must still apply. Needs a C
//! compiler and libpfm4 (Debian `libpfm4-dev`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};

use counterhal_conformance::skip::Need;
use counterhal_events::{CpuModel, Database};
use counterhal_hal::{Encoding, Evtsel};
use serde::Deserialize;

use crate::common;

/// Lists the PMUs (`P name type`), or, given a PMU name, encodes each of its events' unit
/// masks and each event without unit masks: `C event umask code second` (`second` the second
/// register value where libpfm4 gives one).
const PROGRAM: &str = r#"
#include <perfmon/pfmlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void encode_as(const char *pmu, const char *event, const char *umask) {
    char text[1024];
    pfm_pmu_encode_arg_t arg;
    if (umask)
        snprintf(text, sizeof text, "%s::%s:%s", pmu, event, umask);
    else
        snprintf(text, sizeof text, "%s::%s", pmu, event);
    memset(&arg, 0, sizeof arg);
    arg.size = sizeof arg;
    if (pfm_get_os_event_encoding(text, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg) != PFM_SUCCESS)
        return;
    printf("C\t%s\t%s\t%llx\t", event, umask ? umask : "", (unsigned long long)arg.codes[0]);
    if (arg.count > 1)
        printf("%llx", (unsigned long long)arg.codes[1]);
    printf("\n");
    free(arg.codes);
}
int main(int argc, char **argv) {
    int p, i, a, umasks;
    if (pfm_initialize() != PFM_SUCCESS) { printf("INIT-FAILED\n"); return 1; }
    for (p = 0; p < PFM_PMU_MAX; p++) {
        pfm_pmu_info_t pmu;
        memset(&pmu, 0, sizeof pmu);
        pmu.size = sizeof pmu;
        if (pfm_get_pmu_info(p, &pmu) != PFM_SUCCESS) continue;
        if (argc < 2) { printf("P\t%s\t%d\n", pmu.name, pmu.type); continue; }
        if (strcmp(pmu.name, argv[1])) continue;
        for (i = pmu.first_event; i != -1; i = pfm_get_event_next(i)) {
            pfm_event_info_t event;
            memset(&event, 0, sizeof event);
            event.size = sizeof event;
            if (pfm_get_event_info(i, PFM_OS_NONE, &event) != PFM_SUCCESS) continue;
            umasks = 0;
            for (a = 0; a < event.nattrs; a++) {
                pfm_event_attr_info_t attr;
                memset(&attr, 0, sizeof attr);
                attr.size = sizeof attr;
                if (pfm_get_event_attr_info(i, a, PFM_OS_NONE, &attr) != PFM_SUCCESS) continue;
                if (attr.type != PFM_ATTR_UMASK) continue;
                umasks++;
                encode_as(pmu.name, event.name, attr.name);
            }
            if (!umasks)
                encode_as(pmu.name, event.name, NULL);
        }
    }
    return 0;
}
"#;

/// The helper's output lines, with `pmu` forced (or every PMU listed, for `None`).
fn run_helper(binary: &Path, pmu: Option<&str>) -> Result<Vec<String>, String> {
    let mut command = Command::new(binary);
    command
        .env("LIBPFM_ENCODE_INACTIVE", "1")
        .stdin(Stdio::null());
    if let Some(pmu) = pmu {
        command.env("LIBPFM_FORCE_PMU", pmu).arg(pmu);
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot run the libpfm4 helper: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if text.starts_with("INIT-FAILED") || !output.status.success() {
        return Err(format!("pfm_initialize failed (PMU {pmu:?})"));
    }
    Ok(text.lines().map(str::to_string).collect())
}

/// An encoding's fields, written the way the data file writes them:
/// `event=0xc2 umask=0x10 cmask=1 inv edge any umask2=0x1 extra=0x3f7:0x11`.
fn describe(value: u64, extra: Option<(u32, u64)>) -> String {
    let mut text = format!(
        "event={:#04x} umask={:#04x}",
        value & 0xff,
        (value >> 8) & 0xff
    );
    let cmask = (value & Evtsel::CMASK) >> 24;
    if cmask != 0 {
        text.push_str(&format!(" cmask={cmask}"));
    }
    for (bit, name) in [
        (Evtsel::INV, "inv"),
        (Evtsel::EDGE, "edge"),
        (Evtsel::ANY, "any"),
    ] {
        if value & bit != 0 {
            text.push(' ');
            text.push_str(name);
        }
    }
    let umask2 = (value & Evtsel::UMASK2) >> 40;
    if umask2 != 0 {
        text.push_str(&format!(" umask2={umask2:#x}"));
    }
    if let Some((msr, value)) = extra {
        text.push_str(&format!(" extra={msr:#x}:{value:#x}"));
    }
    text
}

/// The bits compared: the event-select fields, not the privilege, enable or interrupt bits.
const COMPARED: u64 = Evtsel::EVENT_SELECT_BITS | Evtsel::UMASK2;

/// `tests/data/disagreements.toml`.
#[derive(Deserialize)]
struct Cases {
    case: Vec<Case>,
}

/// One name Intel's table and libpfm4 give different values, on some models.
#[derive(Deserialize)]
struct Case {
    /// The models (their libpfm4 PMU's values alike).
    models: Vec<String>,
    /// Intel's name (`EVENT.UMASK`).
    intel_name: String,
    /// libpfm4's name (`EVENT:UMASK`), where it is spelled otherwise (an alias).
    #[serde(default)]
    libpfm4_name: Option<String>,
    /// Intel's value, as [`describe`] writes it.
    intel: String,
    /// libpfm4 4.13's value.
    libpfm4: String,
    /// `intel`, `libpfm4` or `both-valid`.
    verdict: String,
    /// Why, from sources a reviewer can check.
    evidence: String,
}

/// `gen/errata/MODEL.toml`: the generator's corrections of Intel's tables.
#[derive(Deserialize)]
struct Errata {
    #[serde(default)]
    erratum: Vec<Erratum>,
}

/// One correction: the Intel name, what Intel's table has, what is written instead.
#[derive(Deserialize)]
struct Erratum {
    name: String,
    was: Fields,
    now: Fields,
}

/// The fields of an erratum's value.
#[derive(Deserialize)]
struct Fields {
    event: u16,
    umask: u8,
    #[serde(default)]
    cmask: u8,
    #[serde(default)]
    inv: bool,
    #[serde(default)]
    edge: bool,
    #[serde(default)]
    any: bool,
}

impl Fields {
    fn describe(&self) -> String {
        let mut value = u64::from(self.event) | (u64::from(self.umask) << 8);
        value |= u64::from(self.cmask) << 24;
        for (set, bit) in [
            (self.inv, Evtsel::INV),
            (self.edge, Evtsel::EDGE),
            (self.any, Evtsel::ANY),
        ] {
            if set {
                value |= bit;
            }
        }
        describe(value, None)
    }
}

/// The models generated from Intel perfmon: their file's header names it as the source.
fn perfmon_models() -> BTreeSet<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/generated");
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("data/generated lists") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a generated file reads");
        if text
            .lines()
            .take(4)
            .any(|l| l.starts_with("# source: Intel perfmon"))
        {
            let stem = path.file_stem().expect("a file name").to_string_lossy();
            out.insert(stem.into_owned());
        }
    }
    out
}

/// Our encoding of `text` on `model`: the compared event-select bits and the extra register.
fn ours(database: &Database, model: &str, text: &str) -> Option<(u64, Option<(u32, u64)>)> {
    let resolved = database
        .resolve_exact(Some(model), text, &common::X86)
        .ok()?;
    match &resolved.terms[0].request.encoding {
        Encoding::Evtsel(e) => Some((
            e.register_value() & COMPARED,
            e.extra.map(|x| (x.address(), x.value)),
        )),
        _ => None,
    }
}

/// The Intel name a libpfm4 name stands for on `model`, if the model defines it: its own
/// `EVENT.UMASK` (or `EVENT`), from Intel's table, or the target of an alias.
fn intel_name(model: &CpuModel, event: &str, umask: &str) -> Option<String> {
    let key = if umask.is_empty() {
        event.to_ascii_uppercase()
    } else {
        format!("{event}:{umask}").to_ascii_uppercase()
    };
    if let Some((_, target)) = model.event_aliases().into_iter().find(|(k, _)| *k == key) {
        return Some(target);
    }
    let own = model.event(event)?;
    if umask.is_empty() {
        return own
            .unit_masks()
            .is_empty()
            .then(|| own.name.to_ascii_uppercase());
    }
    let mask = own.unit_mask(umask)?;
    Some(format!("{}.{}", own.name, mask.name).to_ascii_uppercase())
}

/// One difference found: (model, Intel name) -> (libpfm4 name, ours, libpfm4's).
type Found = BTreeMap<(String, String), (String, String, String)>;

/// Every name the Intel perfmon models and libpfm4 both define with different values, and the
/// libpfm4 value of every name both define (for the cases that must now be equal).
fn differences(binary: &Path, database: &Database) -> (Found, BTreeMap<(String, String), String>) {
    let perfmon = perfmon_models();
    let pmus = run_helper(binary, None).expect("the libpfm4 helper lists PMUs");
    let mut found = Found::new();
    let mut equal = BTreeMap::new();
    for line in &pmus {
        let ["P", pmu, "1"] = line.split('\t').collect::<Vec<_>>()[..] else {
            continue;
        };
        let Some(model) = database.model(pmu).filter(|m| perfmon.contains(&m.id)) else {
            continue;
        };
        for line in run_helper(binary, Some(pmu)).expect("the libpfm4 helper runs") {
            let ["C", event, umask, code, second] = line.split('\t').collect::<Vec<_>>()[..] else {
                continue;
            };
            let Some(name) = intel_name(model, event, umask) else {
                continue;
            };
            let theirs = u64::from_str_radix(code, 16).expect("a hexadecimal code") & COMPARED;
            let their_extra = (!second.is_empty())
                .then(|| u64::from_str_radix(second, 16).expect("a hexadecimal second code"));
            let Some((value, extra)) = ours(database, &model.id, &name) else {
                continue;
            };
            let libpfm4_name = if umask.is_empty() {
                event.to_string()
            } else {
                format!("{event}:{umask}")
            };
            let their_text = describe(theirs, their_extra.map(|v| (extra.map_or(0, |e| e.0), v)));
            let key = (model.id.clone(), name);
            if value == theirs && (their_extra.is_none() || extra.map(|e| e.1) == their_extra) {
                equal.insert(key, their_text);
                continue;
            }
            let our_extra = extra.filter(|_| their_extra.is_some());
            found.insert(key, (libpfm4_name, describe(value, our_extra), their_text));
        }
    }
    (found, equal)
}

/// Every disagreement between Intel's tables and libpfm4 4.13 is listed with a verdict, and
/// every listed case still applies. Oracle: the installed libpfm4 4.13.
#[test]
fn every_disagreement_has_a_verdict_that_still_applies() {
    let cases: Cases =
        toml::from_str(include_str!("data/disagreements.toml")).expect("disagreements.toml parses");
    let binary = match common::libpfm::build(PROGRAM, "disagreements") {
        Ok(binary) => binary,
        Err(why) => counterhal_conformance::skip!(
            Need::Tools,
            "disagreements not checked (libpfm4-dev and a C compiler build the helper): {why}"
        ),
    };
    let database = Database::shipped().expect("shipped database loads");
    let (found, equal) = differences(&binary, &database);
    let mut problems = Vec::new();
    let mut listed = BTreeSet::new();
    for case in &cases.case {
        assert!(
            matches!(
                case.verdict.as_str(),
                "intel" | "libpfm4" | "both-valid" | "neither"
            ),
            "{}: verdict `{}` (intel, libpfm4, both-valid or neither)",
            case.intel_name,
            case.verdict
        );
        assert!(case.evidence.len() > 20, "{}: no evidence", case.intel_name);
        for model in &case.models {
            let key = (model.clone(), case.intel_name.clone());
            assert!(listed.insert(key.clone()), "{key:?} listed twice");
            let at = format!("{model} {}", case.intel_name);
            if case.verdict == "libpfm4" {
                // Fixed by an erratum: ours now equals libpfm4's, and the erratum records
                // Intel's value.
                match (found.get(&key), equal.get(&key)) {
                    (None, Some(theirs)) if *theirs == case.libpfm4 => {}
                    (None, Some(theirs)) => problems.push(format!(
                        "{at}: libpfm4 now gives {theirs}, the case says {}",
                        case.libpfm4
                    )),
                    (Some((_, ours, theirs)), _) => problems.push(format!(
                        "{at}: verdict libpfm4, but ours is {ours} and libpfm4's {theirs}"
                    )),
                    (None, None) => problems.push(format!("{at}: no longer defined by both")),
                }
                let errata = errata(model);
                match errata.iter().find(|e| e.name == case.intel_name) {
                    Some(e) if e.was.describe() == case.intel => {}
                    Some(e) => problems.push(format!(
                        "{at}: the erratum records Intel's value {}, the case {}",
                        e.was.describe(),
                        case.intel
                    )),
                    None => problems.push(format!("{at}: verdict libpfm4 but no erratum")),
                }
                continue;
            }
            // Ours: Intel's value, or for `neither` the erratum's.
            let expected = if case.verdict == "neither" {
                let errata = errata(model);
                match errata.iter().find(|e| e.name == case.intel_name) {
                    Some(e) if e.was.describe() == case.intel => e.now.describe(),
                    Some(e) => {
                        problems.push(format!(
                            "{at}: the erratum records Intel's value {}, the case {}",
                            e.was.describe(),
                            case.intel
                        ));
                        continue;
                    }
                    None => {
                        problems.push(format!("{at}: verdict neither but no erratum"));
                        continue;
                    }
                }
            } else {
                case.intel.clone()
            };
            match found.get(&key) {
                Some((name, ours, theirs))
                    if *ours == expected
                        && *theirs == case.libpfm4
                        && case.libpfm4_name.as_ref().is_none_or(|n| n == name) => {}
                Some((name, ours, theirs)) => problems.push(format!(
                    "{at} (libpfm4 {name}): found ours {ours}, libpfm4 {theirs}; the case says {expected} and {}",
                    case.libpfm4
                )),
                None => problems.push(format!("{at}: no longer differs")),
            }
        }
    }
    for ((model, name), (libpfm4_name, ours, theirs)) in &found {
        if !listed.contains(&(model.clone(), name.clone())) {
            problems.push(format!(
                "unlisted: {model} {name} (libpfm4 {libpfm4_name}): ours {ours}, libpfm4 {theirs}"
            ));
        }
    }
    let count = |v: &str| -> usize {
        cases
            .case
            .iter()
            .filter(|c| c.verdict == v)
            .map(|c| c.models.len())
            .sum()
    };
    println!(
        "{} names both define and compared equal, {} differ; {} cases listed, by model: {} intel, {} libpfm4, {} both-valid, {} neither",
        equal.len(),
        found.len(),
        cases.case.len(),
        count("intel"),
        count("libpfm4"),
        count("both-valid"),
        count("neither")
    );
    assert!(
        equal.len() > 7_000,
        "only {} names compared equal",
        equal.len()
    );
    assert!(
        problems.is_empty(),
        "{} problems with tests/data/disagreements.toml:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The errata of `model` (none when it has no file).
fn errata(model: &str) -> Vec<Erratum> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../gen/errata/{model}.toml"));
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let errata: Errata = toml::from_str(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
            errata.erratum
        }
        Err(_) => Vec::new(),
    }
}
