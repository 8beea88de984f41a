//! Descriptions of native events and unit masks, read at run time from a source on the user's
//! system: the shipped data holds facts only (codes, masks, counters), no prose.
//!
//! A source is a directory of perf's JSON event files:
//!
//! - the kernel's x86 tree, `tools/perf/pmu-events/arch/x86` of a Linux source tree (Debian's
//!   `linux-source` package unpacked), with its `mapfile.csv` and one directory per CPU
//!   (`skylake`, `amdzen4`): the model's directory is found by perf's name for it
//!   ([`crate::model_aliases`]), or for one core type's table of a hybrid chip, by its
//!   chip's (`meteorlake` for `mtl_cmt`); the tree's parent `arch` (or `pmu-events`) works too;
//! - one model's directory of it (`.../x86/skylake`), or any directory of such JSON files;
//! - an Intel perfmon tree (`github.com/intel/perfmon`), whose `mapfile.csv` names each CPU's
//!   core event file (`/SKL/events/skylake_core.json`, `{"Events": [...]}`): those of the
//!   signatures that detect the model (of its core type on a hybrid chip) are read.
//!
//! Each event's `EventName` (`INST_RETIRED.ANY_P`, or a perf spelling the model keeps as an
//! alias: `ls_dispatch.ld_dispatch`) names an event or a unit mask of the model; its
//! `BriefDescription` (else `PublicDescription`) becomes that one's description where the
//! data has none. Events of another PMU (`Unit`: uncore boxes, the other core type of a hybrid
//! chip) are left out.
//!
//! Nothing reads a source unless asked: `--descriptions DIR` or [`DESCRIPTIONS_ENV`].

use std::path::{Path, PathBuf};

use counterhal_hal::{Error, Result};

use crate::database::Database;
use crate::model::{CpuModel, alias_key};
use crate::model_aliases::{PERF_DIRECTORIES, aliases_of};
use crate::parse::{ParsedEvent, parse_event};

/// The environment variable naming a description source (a directory, as
/// [`Database::with_descriptions`] reads it).
pub const DESCRIPTIONS_ENV: &str = "COUNTERHAL_DESCRIPTIONS";

/// The largest description file read (the kernel's largest x86 file is under 1 MiB).
#[cfg(feature = "descriptions")]
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// What [`Database::with_descriptions`] read: the files and how many events and unit masks
/// were given a description.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DescriptionsRead {
    /// The JSON files read, in order.
    pub files: Vec<PathBuf>,
    /// Events and unit masks given a description.
    pub described: usize,
}

impl Database {
    /// This database with the descriptions `dir` gives model `model`'s native events and unit
    /// masks (those the data leaves without one), and what was read. Only that model is
    /// changed (and parsed in full).
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] for an unknown model, a `dir` that is no
    /// directory or holds no description files for the model (the message names what was
    /// looked for), an unreadable file, or a file that is not perf's JSON (file, line and
    /// column).
    pub fn with_descriptions(
        mut self,
        model: &str,
        dir: &Path,
    ) -> Result<(Database, DescriptionsRead)> {
        if !cfg!(feature = "descriptions") {
            return Err(left_out());
        }
        let bad = |what: String| {
            Error::invalid_input(format!("descriptions {}: {what}", dir.display())).with_hint(
                "give the kernel's tools/perf/pmu-events/arch/x86 directory (from the kernel's \
                 source, unpacked), one model's directory of it, or a perfmon tree",
            )
        };
        let Some(found) = self.model(model) else {
            return Err(Error::invalid_input(
                crate::database::unknown_model_message(model),
            ));
        };
        let id = found.id.clone();
        let unit = found.hybrid.map(|h| format!("cpu_{}", h.type_name()));
        if !dir.is_dir() {
            return Err(bad("not a directory".to_string()));
        }
        let files = files_for(&self, dir, &id).map_err(bad)?;
        if files.is_empty() {
            let names = aliases_of(&id)
                .first()
                .map(|d| format!("x86/{d}/*.json or "))
                .unwrap_or_default();
            return Err(bad(format!(
                "no description files for CPU model `{id}` (looked for {names}perfmon's mapfile.csv rows, or *.json in the directory)"
            )));
        }
        let mut entries = Vec::new();
        for file in &files {
            read_file(file, unit.as_deref(), &mut entries)?;
        }
        let described = match self.model_mut(&id)? {
            Some(model) => apply(model, &entries),
            None => 0,
        };
        Ok((self, DescriptionsRead { files, described }))
    }
}

impl Database {
    /// The description of the event or unit mask `name` names on model `model` (as typed:
    /// `EVENT`, `EVENT.MASK`, `EVENT:MASK`, an alias; modifiers after it ignored), where it has
    /// one: the shipped data has none, [`Database::with_descriptions`] adds them.
    pub fn description(&self, model: &str, name: &str) -> Option<&str> {
        let model = self.model(model)?;
        let ParsedEvent::Named(spec) = parse_event(name).ok()? else {
            return None;
        };
        let typed = match spec.unit_masks.first() {
            Some(mask) if !spec.dotted => format!("{}.{mask}", spec.name),
            _ => spec.name.clone(),
        };
        let (event, mask) = place(model, &typed).or_else(|| place(model, &spec.name))?;
        let event = &model.events[event];
        let text = match mask {
            Some(mask) => &event.unit_masks[mask].description,
            None => &event.description,
        };
        (!text.is_empty()).then_some(text.as_str())
    }
}

/// The JSON files of `dir` that describe model `id`.
fn files_for(
    database: &Database,
    dir: &Path,
    id: &str,
) -> std::result::Result<Vec<PathBuf>, String> {
    // The kernel's tree, from x86 or from a directory above it.
    for tree in [
        dir.to_path_buf(),
        dir.join("x86"),
        dir.join("arch/x86"),
        dir.join("pmu-events/arch/x86"),
    ] {
        if tree.join("mapfile.csv").is_file() {
            for name in kernel_directories(database, id) {
                if tree.join(name).is_dir() {
                    return json_files(&tree.join(name));
                }
            }
        }
    }
    // perfmon's tree: its mapfile names each CPU's core file.
    if let Ok(mapfile) = std::fs::read_to_string(dir.join("mapfile.csv")) {
        let files = perfmon_files(database, dir, id, &mapfile);
        if !files.is_empty() {
            return Ok(files);
        }
    }
    json_files(dir)
}

/// The kernel's directories for model `id`: perf's names for it, then, for one core type's
/// table of a hybrid chip, those of the other core type's table of the same chip (the same
/// match rules: `meteorlake` holds both, each event marked with its `Unit`).
fn kernel_directories(database: &Database, id: &str) -> Vec<&'static str> {
    let mut names = aliases_of(id);
    let Some(model) = database.model(id).filter(|m| m.hybrid.is_some()) else {
        return names;
    };
    for &(dir, other) in PERF_DIRECTORIES {
        let sibling = database.model(other).filter(|o| {
            o.id != model.id && o.hybrid.is_some() && o.match_rules() == model.match_rules()
        });
        if sibling.is_some() && !names.contains(&dir) {
            names.push(dir);
        }
    }
    names
}

/// The core PMU's event files perfmon's `mapfile` (`Family-model,Version,Filename,EventType,
/// Core Type,...`; types `core`, `hybridcore`, `offcore`, `fp_arith_inst`) names for the CPUs
/// whose signatures detect model `id` (on a hybrid chip, those of its core type).
fn perfmon_files(database: &Database, dir: &Path, id: &str, mapfile: &str) -> Vec<PathBuf> {
    let Some(model) = database.model(id) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for line in mapfile.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [signature, _, file, kind, rest @ ..] = fields.as_slice() else {
            continue;
        };
        // The core PMU's files: its events, a hybrid core type's, offcore and FP ones.
        let core_files = ["core", "hybridcore", "offcore", "fp_arith_inst"];
        if !core_files.contains(kind) || !file.starts_with('/') {
            continue;
        }
        let core_type = rest
            .first()
            .and_then(|t| u8::from_str_radix(t.trim_start_matches("0x"), 16).ok());
        if let (Some(hybrid), Some(core_type)) = (model.hybrid, core_type)
            && hybrid.core_type != core_type
        {
            continue;
        }
        // `GenuineIntel-6-55-[01234]`: a stepping class, each of its steppings tried.
        let signatures: Vec<String> = match signature.split_once('[') {
            Some((head, class)) => class
                .trim_end_matches(']')
                .chars()
                .map(|c| format!("{head}{c}"))
                .collect(),
            None => vec![signature.to_string()],
        };
        let detects = signatures.iter().any(|s| {
            crate::cpu::CpuIdentity::from_signature(s).is_some_and(|cpu| match model.hybrid {
                // Each core type's table of a hybrid chip is one of its candidates.
                Some(_) => database.candidates(&cpu).any(|m| m.id == model.id),
                None => database.detect(&cpu).is_some_and(|m| m.id == model.id),
            })
        });
        let path = dir.join(file.trim_start_matches('/'));
        if detects && path.is_file() && !files.contains(&path) {
            files.push(path);
        }
    }
    files
}

/// The `*.json` files directly in `dir`, sorted; metric files (`*metrics*.json`) left out.
fn json_files(dir: &Path) -> std::result::Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot be read: {e}"))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.contains("metric"))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// What a build without the `descriptions` feature (the reader of perf's JSON) says when
/// asked to read descriptions.
fn left_out() -> Error {
    Error::unsupported(
        "reading descriptions is left out of this build: it needs the `descriptions` feature \
         (of counterhal, or of counterhal-events)",
    )
}

/// A build without the `descriptions` feature reads no file.
#[cfg(not(feature = "descriptions"))]
fn read_file(_: &Path, _: Option<&str>, _: &mut Vec<(String, String)>) -> Result<()> {
    Err(left_out())
}

/// The `(EventName, description)` pairs of one file, events of another `Unit` than `unit`
/// (the model's core PMU on a hybrid chip; none otherwise) left out.
#[cfg(feature = "descriptions")]
fn read_file(path: &Path, unit: Option<&str>, out: &mut Vec<(String, String)>) -> Result<()> {
    let bad =
        |what: String| Error::invalid_input(format!("descriptions {}: {what}", path.display()));
    let size = std::fs::metadata(path)
        .map_err(|e| bad(format!("cannot be read: {e}")))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(bad(format!("{size} bytes, more than any description file")));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot be read: {e}")))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    // The kernel's files are an array of events; perfmon's an object with `Events`.
    let Some(events) = value.get("Events").unwrap_or(&value).as_array() else {
        return Err(bad(
            "no array of events (perf's JSON event file)".to_string()
        ));
    };
    for event in events {
        let (Some(name), Some(description)) = (
            event.get("EventName").and_then(serde_json::Value::as_str),
            event
                .get("BriefDescription")
                .or_else(|| event.get("PublicDescription"))
                .and_then(serde_json::Value::as_str),
        ) else {
            continue;
        };
        let event_unit = event.get("Unit").and_then(serde_json::Value::as_str);
        if event_unit.is_some_and(|u| Some(u) != unit) {
            continue;
        }
        out.push((name.to_string(), description.trim().to_string()));
    }
    Ok(())
}

/// Gives `model`'s events and unit masks the descriptions `entries` name them with, where they
/// have none; returns how many were given one.
fn apply(model: &mut CpuModel, entries: &[(String, String)]) -> usize {
    let mut described = 0;
    for (name, description) in entries {
        let Some((event, mask)) = place(model, name) else {
            continue;
        };
        let event = &mut model.events[event];
        let slot = match mask {
            Some(mask) => &mut event.unit_masks[mask].description,
            None => &mut event.description,
        };
        if slot.is_empty() && !description.is_empty() {
            slot.clone_from(description);
            described += 1;
        }
    }
    described
}

/// The event (index) and unit mask (index) `name` names on `model`: `EVENT`, `EVENT.MASK`, or
/// an alias of the model standing for one of them.
fn place(model: &CpuModel, name: &str) -> Option<(usize, Option<usize>)> {
    let find = |event: &str, mask: Option<&str>| -> Option<(usize, Option<usize>)> {
        let index = model
            .events
            .iter()
            .position(|e| e.name.eq_ignore_ascii_case(event))?;
        match mask {
            None => Some((index, None)),
            Some(mask) => {
                let masks = &model.events[index].unit_masks;
                let at = masks
                    .iter()
                    .position(|u| u.name.eq_ignore_ascii_case(mask))?;
                Some((index, Some(at)))
            }
        }
    };
    if let Some(found) = find(name, None) {
        return Some(found);
    }
    if let Some((event, mask)) = name.split_once('.')
        && let Some(found) = find(event, Some(mask))
    {
        return Some(found);
    }
    // An alias stands for one event string: the event and at most one unit mask.
    let target = model.event_aliases.get(&alias_key(name))?;
    match target.unit_masks.as_slice() {
        [] => find(&target.name, None).or_else(|| {
            let (event, mask) = target.name.split_once('.')?;
            find(event, Some(mask))
        }),
        [mask] => find(&target.name, Some(mask)),
        _ => None,
    }
}

#[cfg(all(test, feature = "descriptions"))]
mod tests {
    use super::*;

    /// perfmon's layout (the shape of github.com/intel/perfmon: its mapfile's columns and
    /// rows, `{"Header": ..., "Events": [...]}` files): the core files of the signatures that
    /// detect the model are read, a hybrid chip's by core type, uncore files left out.
    #[test]
    fn perfmon_trees_are_read_through_their_mapfile() {
        let dir = std::env::temp_dir().join(format!("counterhal-perfmon-{}", std::process::id()));
        for sub in ["SKL/events", "ADL/events"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        std::fs::write(
            dir.join("mapfile.csv"),
            "Family-model,Version,Filename,EventType,Core Type,Native Model ID,Core Role Name\n\
             GenuineIntel-6-4E,V59,/SKL/events/skylake_core.json,core,,,\n\
             GenuineIntel-6-4E,V59,/SKL/events/skylake_uncore.json,uncore,,,\n\
             GenuineIntel-6-97,V1.40,/ADL/events/alderlake_gracemont_core.json,hybridcore,0x20,0x000001,Atom\n\
             GenuineIntel-6-97,V1.40,/ADL/events/alderlake_goldencove_core.json,hybridcore,0x40,0x000001,Core\n",
        )
        .unwrap();
        let file = |name: &str, brief: &str| {
            format!(
                "{{\"Header\": {{\"Version\": \"1\"}}, \"Events\": [{{\"EventName\": \"{name}\", \"BriefDescription\": \"{brief}\"}}]}}"
            )
        };
        for (path, name, brief) in [
            (
                "SKL/events/skylake_core.json",
                "INST_RETIRED.ANY_P",
                "core text",
            ),
            (
                "SKL/events/skylake_uncore.json",
                "INST_RETIRED.ANY_P",
                "uncore text",
            ),
            (
                "ADL/events/alderlake_goldencove_core.json",
                "INST_RETIRED.ANY_P",
                "P-core text",
            ),
            (
                "ADL/events/alderlake_gracemont_core.json",
                "INST_RETIRED.ANY_P",
                "E-core text",
            ),
        ] {
            std::fs::write(dir.join(path), file(name, brief)).unwrap();
        }
        let db = Database::shipped().unwrap();
        for (model, expected) in [
            ("skl", "core text"),
            ("adl_glc", "P-core text"),
            ("adl_grt", "E-core text"),
        ] {
            let (described, read) = db.clone().with_descriptions(model, &dir).unwrap();
            assert_eq!(read.files.len(), 1, "{model}: {:?}", read.files);
            assert_eq!(
                described.description(model, "INST_RETIRED.ANY_P"),
                Some(expected),
                "{model}"
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
