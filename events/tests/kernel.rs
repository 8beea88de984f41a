//! Cross-check against the Linux kernel's perf JSON (tools/perf/pmu-events/arch/x86/), read
//! from Debian's `linux-source-6.12` tarball under /usr/src: every core event of the Intel
//! models both know, by Intel's name, and of the Zen models, by perf's name (an alias of
//! libpfm4's), must have the same event code and unit mask here, or differ where an erratum of
//! `gen/errata/MODEL.toml` corrects Intel's table, which the kernel's JSON copies (the kernel's
//! values must then be the ones the erratum says Intel's table has). Skips,
//! saying why, where the tarball is absent (.ci/run installs the package).

use std::path::{Path, PathBuf};

use counterhal_conformance::fixtures;
use counterhal_conformance::skip::Need;
use counterhal_events::Database;
use counterhal_hal::Encoding;

use crate::common;

/// The kernel's directory, its hybrid PMU (`Unit`) if any, and our model id.
const MODELS: &[(&str, Option<&str>, &str)] = &[
    ("nehalemep", None, "nhm"),
    ("nehalemex", None, "nhm_ex"),
    ("westmereep-sp", None, "wsm"),
    ("westmereep-dp", None, "wsm_dp"),
    ("westmereex", None, "wsm_ex"),
    ("sandybridge", None, "snb"),
    ("jaketown", None, "snb_ep"),
    ("ivybridge", None, "ivb"),
    ("ivytown", None, "ivb_ep"),
    ("haswell", None, "hsw"),
    ("haswellx", None, "hsw_ep"),
    ("broadwell", None, "bdw"),
    ("broadwellx", None, "bdw_ep"),
    ("broadwellde", None, "bdw_de"),
    ("skylake", None, "skl"),
    ("skylakex", None, "skx"),
    ("cascadelakex", None, "clx"),
    ("icelake", None, "icl"),
    ("icelakex", None, "icx"),
    ("tigerlake", None, "tgl"),
    ("rocketlake", None, "rkl"),
    ("sapphirerapids", None, "spr"),
    ("emeraldrapids", None, "emr"),
    ("graniterapids", None, "gnr"),
    ("knightslanding", None, "knl"),
    ("bonnell", None, "atom"),
    ("silvermont", None, "slm"),
    ("goldmont", None, "glm"),
    ("goldmontplus", None, "glp"),
    ("snowridgex", None, "tmt"),
    ("elkhartlake", None, "ehl"),
    ("grandridge", None, "grr"),
    ("sierraforest", None, "srf"),
    ("alderlaken", None, "adl_grt"),
    ("alderlake", Some("cpu_core"), "adl_glc"),
    ("alderlake", Some("cpu_atom"), "adl_grt"),
    ("meteorlake", Some("cpu_core"), "mtl_rwc"),
    ("meteorlake", Some("cpu_atom"), "mtl_cmt"),
    ("lunarlake", Some("cpu_core"), "lnl_lnc"),
    ("lunarlake", Some("cpu_atom"), "lnl_skt"),
    // AMD: perf's names are aliases of libpfm4's in the generated Zen tables.
    ("amdzen1", None, "amd64_fam17h_zen1"),
    ("amdzen2", None, "amd64_fam17h_zen2"),
    ("amdzen3", None, "amd64_fam19h_zen3"),
    ("amdzen4", None, "amd64_fam19h_zen4"),
    ("amdzen5", None, "amd64_fam1ah_zen5"),
];

/// Where ours differs from the kernel's 6.12 JSON, and why: (model, event, why).
const KNOWN: &[(&str, &str, &str)] = &[(
    "lnl_skt",
    "TOPDOWN_BAD_SPECULATION.ALL",
    "Intel's current table lists it as a fixed-counter pseudo-event (0x00/0x05); the 6.12 kernel as 0x73 on general counters",
)];

/// The kernel's x86 perf JSON (`tools/perf/pmu-events/arch/x86`), extracted once per machine.
fn extract() -> Result<PathBuf, String> {
    Ok(fixtures::kernel_source()?.join("tools/perf/pmu-events/arch/x86"))
}

/// Whether an erratum of `gen/errata/{model}.toml` corrects `name` from the values `code` and
/// `umask` (Intel's, which the kernel's JSON copies).
fn corrected_by_erratum(model: &str, name: &str, code: u64, umask: u64) -> bool {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../gen/errata/{model}.toml"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        return false;
    };
    let errata: toml::Table = toml::from_str(&text).expect("an errata file parses");
    let number = |v: Option<&toml::Value>| v.and_then(toml::Value::as_integer);
    errata
        .get("erratum")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .any(|e| {
            let was = e.get("was");
            e.get("name").and_then(toml::Value::as_str) == Some(name)
                && number(was.and_then(|w| w.get("event"))) == i64::try_from(code).ok()
                && number(was.and_then(|w| w.get("umask"))) == i64::try_from(umask).ok()
        })
}

fn field<'a>(event: &'a serde_json::Value, key: &str) -> &'a str {
    event.get(key).and_then(|v| v.as_str()).unwrap_or("")
}

fn hex(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(t.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
}

#[test]
fn codes_match_the_kernels_json() {
    let top = match extract() {
        Ok(found) => found,
        Err(why) => {
            counterhal_conformance::skip!(Need::Tools, "kernel JSON cross-check not run: {why}")
        }
    };
    let database = Database::shipped().unwrap();
    let (mut compared, mut absent) = (0, 0);
    let mut amd_compared = std::collections::BTreeMap::new();
    let mut amd_absent = std::collections::BTreeMap::new();
    let mut differ: Vec<(&str, String, String)> = Vec::new();
    for &(dir, unit, id) in MODELS {
        let files = std::fs::read_dir(top.join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                name.ends_with(".json") && !name.contains("metric") && !name.starts_with("uncore")
            });
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let events: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
            for event in &events {
                let name = field(event, "EventName");
                if name.is_empty()
                    || unit.is_some_and(|u| field(event, "Unit") != u)
                    // An uncore unit (AMD's L3PMC, DFPMC) in a core file.
                    || (unit.is_none() && !field(event, "Unit").is_empty())
                    || field(event, "Deprecated") == "1"
                    || !field(event, "MSRIndex").is_empty()
                    || field(event, "EventCode").contains(',')
                {
                    continue;
                }
                let (Some(code), Some(umask)) =
                    (hex(field(event, "EventCode")), hex(field(event, "UMask")))
                else {
                    continue;
                };
                let Ok(resolved) = database.resolve(Some(id), name, &common::X86) else {
                    absent += 1;
                    if dir.starts_with("amd") {
                        *amd_absent.entry(id).or_insert(0) += 1;
                    }
                    continue;
                };
                if dir.starts_with("amd") {
                    *amd_compared.entry(id).or_insert(0) += 1;
                }
                let Encoding::Evtsel(evtsel) = &resolved.terms[0].request.encoding else {
                    panic!("{id}: {name} is not an event select");
                };
                compared += 1;
                if (u64::from(evtsel.code), u64::from(evtsel.umask)) != (code, umask)
                    && !corrected_by_erratum(id, name, code, umask)
                {
                    differ.push((
                        id,
                        name.to_string(),
                        format!(
                            "{id} {name}: ours {:#x}/{:#x}, kernel {code:#x}/{umask:#x}",
                            evtsel.code, evtsel.umask
                        ),
                    ));
                }
            }
        }
    }
    println!(
        "kernel JSON cross-check: {compared} events compared over {} models, {} differ, {absent} not here (AnyThread, a second unit-mask byte, or newer or older names)",
        MODELS.len(),
        differ.len()
    );
    for (id, compared) in &amd_compared {
        let absent = amd_absent.get(id).copied().unwrap_or(0);
        println!("  {id}: {compared} of perf's names resolve, {absent} do not");
    }
    let unexplained: Vec<&str> = differ
        .iter()
        .filter(|(id, name, _)| !KNOWN.iter().any(|(m, e, _)| m == id && e == name))
        .map(|(_, _, line)| line.as_str())
        .collect();
    assert!(
        unexplained.is_empty(),
        "{} unexplained differences from the kernel's JSON:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
    for (model, event, _) in KNOWN {
        assert!(
            differ
                .iter()
                .any(|(id, name, _)| id == model && name == event),
            "KNOWN lists {model} {event}, which no longer differs"
        );
    }
    assert!(compared >= 8000, "only {compared} compared");
}
