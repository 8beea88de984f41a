//! Descriptions read at run time from the kernel's perf JSON: the oracle is the JSON itself
//! (Debian's linux-source-6.12, tools/perf/pmu-events/arch/x86), read with serde_json. Skips,
//! saying why, where the tarball is absent.

use std::path::{Path, PathBuf};

use counterhal_conformance::fixtures;
use counterhal_conformance::skip::Need;
use counterhal_events::Database;
use counterhal_hal::ErrorKind;

/// The kernel's x86 perf JSON (`tools/perf/pmu-events/arch/x86`, every directory and the
/// mapfile), extracted once per machine.
fn x86_tree() -> Result<PathBuf, String> {
    Ok(fixtures::kernel_source()?.join("tools/perf/pmu-events/arch/x86"))
}

/// The `(EventName, BriefDescription)` of every core event in `dir`'s JSON files, as
/// serde_json reads them (uncore and other units left out).
fn oracle(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".json") || name.contains("metric") {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for event in value.as_array().unwrap() {
            if event.get("Unit").is_some() {
                continue;
            }
            if let (Some(name), Some(brief)) = (
                event["EventName"].as_str(),
                event["BriefDescription"].as_str(),
            ) {
                out.push((name.to_string(), brief.trim().to_string()));
            }
        }
    }
    out
}

/// Oracle: the kernel's skylake and amdzen4 JSON. Every event name of the JSON that names a
/// unit mask of our model (`EVENT.MASK`; on Zen 4 through perf's names kept as aliases) gets
/// the JSON's BriefDescription, from the x86 tree and from the model's own directory alike;
/// the shipped data has none.
#[test]
fn unit_masks_get_the_kernels_brief_descriptions() {
    let x86 = match x86_tree() {
        Ok(x86) => x86,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "{why}"),
    };
    let shipped = Database::shipped().unwrap();
    let skl = shipped.model("skl").unwrap();
    assert!(
        skl.events()
            .iter()
            .flat_map(|e| e.unit_masks())
            .all(|m| m.description.is_empty()),
        "the shipped data holds no descriptions"
    );
    for source in [x86.clone(), x86.join("skylake")] {
        let (db, read) = shipped.clone().with_descriptions("skl", &source).unwrap();
        assert!(read.files.len() >= 8, "{:?}", read.files);
        let model = db.model("skl").unwrap();
        let mut checked = 0;
        for (name, brief) in oracle(&x86.join("skylake")) {
            let Some((event, mask)) = name.split_once('.') else {
                continue;
            };
            let Some(mask) = model.event(event).and_then(|e| e.unit_mask(mask)) else {
                continue;
            };
            assert_eq!(mask.description, brief, "{name}");
            checked += 1;
        }
        assert!(checked > 150, "{checked} unit masks checked");
        assert!(read.described >= checked, "{read:?}");
        let any = model
            .event("INST_RETIRED")
            .unwrap()
            .unit_mask("ANY_P")
            .unwrap();
        assert_eq!(
            any.description,
            "Number of instructions retired. General Counter - architectural event"
        );
    }
    // The shipped database is untouched.
    assert!(
        shipped.model("skl").unwrap().events()[0].unit_masks()[0]
            .description
            .is_empty()
    );
    // Zen 4: perf's lower-case names are aliases of libpfm4's.
    let (db, read) = shipped.with_descriptions("zen4", &x86).unwrap();
    let zen4 = db.model("amd64_fam19h_zen4").unwrap();
    let described = zen4
        .events()
        .iter()
        .flat_map(|e| {
            std::iter::once(&e.description).chain(e.unit_masks().iter().map(|m| &m.description))
        })
        .filter(|d| !d.is_empty())
        .count();
    assert_eq!(described, read.described);
    assert!(described > 100, "{described} described on zen4");
    // A unit mask found by perf's name, by libpfm4's and with modifiers.
    let ld = db.description("zen4", "ls_dispatch.ld_dispatch").unwrap();
    assert_eq!(
        db.description("amd64_fam19h_zen4", "LS_DISPATCH:LD_DISPATCH:u"),
        Some(ld)
    );
    let briefs_by_name = oracle(&x86.join("amdzen4"));
    let theirs = briefs_by_name
        .iter()
        .find(|(n, _)| n == "ls_dispatch.ld_dispatch")
        .unwrap();
    assert_eq!(ld, theirs.1);
    assert_eq!(db.description("zen4", "cycles"), None);
    let briefs: Vec<String> = oracle(&x86.join("amdzen4"))
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    for event in zen4.events() {
        for text in std::iter::once(&event.description)
            .chain(event.unit_masks().iter().map(|m| &m.description))
        {
            assert!(
                text.is_empty() || briefs.contains(text),
                "{}: {text}",
                event.name
            );
        }
    }
}

/// Oracle: every directory of the kernel's x86 tree, read with serde_json. Each model perf
/// names is given descriptions from the tree (every file parsed by our reader), and each unit
/// mask a core event's name (`EVENT.MASK`, no `Unit`) names gets that event's
/// BriefDescription.
#[test]
fn every_kernel_directory_reads_as_serde_json_reads_it() {
    let x86 = match x86_tree() {
        Ok(x86) => x86,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "{why}"),
    };
    let shipped = Database::shipped().unwrap();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for &(dir, id) in counterhal_events::model_aliases::PERF_DIRECTORIES {
        // The directories Linux 7.2 added, which this tree (6.12) lacks.
        if ["amdzen6", "arrowlake", "clearwaterforest", "pantherlake"].contains(&dir) {
            continue;
        }
        let (db, read) = match shipped.clone().with_descriptions(id, &x86) {
            Ok(described) => described,
            Err(e) => {
                wrong.push(format!("{dir}: {e}"));
                continue;
            }
        };
        if read.described == 0 {
            wrong.push(format!("{dir} ({id}): nothing described"));
        }
        let model = db.model(id).unwrap();
        let mut seen = std::collections::HashSet::new();
        for (name, brief) in oracle(&x86.join(dir)) {
            let Some((event, mask)) = name.split_once('.') else {
                continue;
            };
            let Some(mask) = model.event(event).and_then(|e| e.unit_mask(mask)) else {
                continue;
            };
            // The first file to name it gives it its description.
            if seen.insert(name.to_ascii_uppercase()) && mask.description != brief {
                wrong.push(format!(
                    "{dir} {name}: {:?}, JSON {brief:?}",
                    mask.description
                ));
            }
            checked += 1;
        }
    }
    assert!(checked > 3000, "{checked} unit masks checked");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Oracle: the kernel's meteorlake JSON, whose events carry their core's `Unit`. Each core
/// type's table of the chip gets its own core's descriptions: `mtl_rwc` (perf's
/// `meteorlake`) those marked `cpu_core`, `mtl_cmt` (no directory of its own) those marked
/// `cpu_atom`.
#[test]
fn a_hybrid_chips_tables_get_their_own_cores_descriptions() {
    let x86 = match x86_tree() {
        Ok(x86) => x86,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "{why}"),
    };
    let shipped = Database::shipped().unwrap();
    for (id, unit) in [("mtl_rwc", "cpu_core"), ("mtl_cmt", "cpu_atom")] {
        let (db, _) = shipped.clone().with_descriptions(id, &x86).unwrap();
        let model = db.model(id).unwrap();
        let mut checked = 0;
        for entry in std::fs::read_dir(x86.join("meteorlake")).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            for event in value.as_array().into_iter().flatten() {
                let (Some(name), Some(brief)) = (
                    event["EventName"].as_str(),
                    event["BriefDescription"].as_str(),
                ) else {
                    continue;
                };
                if event["Unit"] != unit {
                    continue;
                }
                let Some((event, mask)) = name.split_once('.') else {
                    continue;
                };
                if let Some(mask) = model.event(event).and_then(|e| e.unit_mask(mask)) {
                    assert_eq!(mask.description, brief.trim(), "{id} {name}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 50, "{id}: {checked} checked");
    }
}

/// A bad source is a clear error naming it, never a panic: a missing directory, one with no
/// files for the model, a file that is no JSON.
#[test]
fn bad_sources_are_clear_errors() {
    let db = Database::shipped().unwrap();
    let missing = Path::new("/nonexistent/counterhal-descriptions");
    let error = db.clone().with_descriptions("skl", missing).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    assert!(error.to_string().contains("not a directory"), "{error}");
    let scratch = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-bad-desc-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let error = db.clone().with_descriptions("skl", &scratch).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("no description files for CPU model `skl`"),
        "{error}"
    );
    assert!(error.to_string().contains("x86/skylake/*.json"), "{error}");
    std::fs::write(
        scratch.join("bad.json"),
        "[{\"EventName\": \"A\",\n  oops}]",
    )
    .unwrap();
    let error = db.clone().with_descriptions("skl", &scratch).unwrap_err();
    assert!(
        error.to_string().contains("bad.json: not JSON: ")
            && error.to_string().contains("line 2 column 3"),
        "{error}"
    );
    std::fs::write(scratch.join("bad.json"), "{\"not\": \"events\"}").unwrap();
    let error = db.clone().with_descriptions("skl", &scratch).unwrap_err();
    assert!(error.to_string().contains("no array of events"), "{error}");
    let error = db.with_descriptions("p7", &scratch).unwrap_err();
    assert!(
        error.to_string().contains("unknown CPU model `p7`"),
        "{error}"
    );
    std::fs::remove_dir_all(scratch).unwrap();
}
