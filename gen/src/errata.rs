//! Corrections of Intel perfmon's tables: `gen/errata/MODEL.toml`, hand-written, one
//! `[[erratum]]` per wrong entry, each naming the entry (`name`, Intel's spelling), the values
//! Intel's table has (`was`), the values written instead (`now`) and the evidence (`evidence`:
//! sources a reviewer can check). The generator applies them to the perfmon entries before it
//! converts them, so everything derived later (aliases, libpfm4's names) sees the corrected
//! values, and counts them in the model's header (`# errata: N, gen/errata/MODEL.toml`).
//!
//! An erratum whose entry is missing, or whose `was` no longer equals Intel's entry (the
//! snapshot changed), stops the generator: an erratum never applies silently to data it was
//! not written for. A file naming no generated model stops it too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::GenError;

/// The errata files of the repository: `gen/errata/`.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("errata")
}

/// One errata file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrataFile {
    #[serde(default)]
    erratum: Vec<Erratum>,
}

/// One correction.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Erratum {
    /// Intel's event name (`EVENT.UMASK`).
    pub name: String,
    /// What Intel's table has.
    pub was: Fields,
    /// What is written instead.
    pub now: Fields,
    /// Why, from sources a reviewer can check.
    pub evidence: String,
}

/// The event-select fields an erratum compares and sets.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Fields {
    /// The event code.
    pub event: u16,
    /// The unit mask.
    pub umask: u8,
    /// The counter mask.
    #[serde(default)]
    pub cmask: u8,
    /// Invert.
    #[serde(default)]
    pub inv: bool,
    /// Edge detect.
    #[serde(default)]
    pub edge: bool,
    /// AnyThread.
    #[serde(default)]
    pub any: bool,
}

/// Every `*.toml` file under `dir`, in the order of their names, each read as a `T` (none
/// when `dir` does not exist): the errata directories' files.
///
/// # Errors
/// A file that does not read or does not parse as a `T` (its path and the parser's message).
pub(crate) fn toml_files<T: serde::de::DeserializeOwned>(
    dir: &Path,
) -> Result<Vec<(PathBuf, T)>, GenError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
            let file = toml::from_str(&text)
                .map_err(|e| GenError::Data(format!("{}: {e}", path.display())))?;
            Ok((path, file))
        })
        .collect()
}

/// The errata of every model with a file under `dir`, by model id (none when `dir` does not
/// exist).
///
/// # Errors
/// A file that does not read or parse, or an erratum without evidence.
pub fn read(dir: &Path) -> Result<BTreeMap<String, Vec<Erratum>>, GenError> {
    let mut out = BTreeMap::new();
    for (path, file) in toml_files::<ErrataFile>(dir)? {
        for e in &file.erratum {
            if e.evidence.trim().is_empty() {
                return Err(GenError::Data(format!(
                    "{}: erratum {} gives no evidence",
                    path.display(),
                    e.name
                )));
            }
            if e.was == e.now {
                return Err(GenError::Data(format!(
                    "{}: erratum {} changes nothing (`was` equals `now`)",
                    path.display(),
                    e.name
                )));
            }
        }
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.insert(id, file.erratum);
    }
    Ok(out)
}

/// A perfmon field as a number (`"0xC2"`, `"16"`, absent: 0), if it is one.
fn number(entry: &Value, key: &str) -> Option<u64> {
    let text = entry.get(key).and_then(Value::as_str).unwrap_or("0").trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The fields of a perfmon entry, if they read as numbers.
fn fields_of(entry: &Value) -> Option<Fields> {
    Some(Fields {
        event: u16::try_from(number(entry, "EventCode")?).ok()?,
        umask: u8::try_from(number(entry, "UMask")?).ok()?,
        cmask: u8::try_from(number(entry, "CounterMask")?).ok()?,
        inv: number(entry, "Invert")? != 0,
        edge: number(entry, "EdgeDetect")? != 0,
        any: number(entry, "AnyThread")? != 0,
    })
}

/// Applies `errata` to the perfmon `entries` of the model `file` names; returns how many
/// applied (all of them).
///
/// # Errors
/// An erratum whose entry is missing, or whose `was` is not what Intel's entry has.
pub fn apply(entries: &mut [Value], errata: &[Erratum], file: &str) -> Result<usize, GenError> {
    for e in errata {
        let found = entries.iter_mut().find(|v| {
            v.get("EventName")
                .and_then(Value::as_str)
                .is_some_and(|n| n.trim().eq_ignore_ascii_case(&e.name))
        });
        let Some(entry) = found else {
            return Err(GenError::Data(format!(
                "{file}: erratum {} names no entry of Intel's table",
                e.name
            )));
        };
        let have = fields_of(entry);
        if have != Some(e.was) {
            return Err(GenError::Data(format!(
                "{file}: erratum {}: Intel's table has {have:?}, the erratum was written for {:?}",
                e.name, e.was
            )));
        }
        let n = e.now;
        let set = |v: &mut Value, key: &str, text: String| {
            if let Some(map) = v.as_object_mut() {
                map.insert(key.to_string(), Value::String(text));
            }
        };
        set(entry, "EventCode", format!("{:#04x}", n.event));
        set(entry, "UMask", format!("{:#04x}", n.umask));
        set(entry, "CounterMask", n.cmask.to_string());
        set(entry, "Invert", u8::from(n.inv).to_string());
        set(entry, "EdgeDetect", u8::from(n.edge).to_string());
        set(entry, "AnyThread", u8::from(n.any).to_string());
    }
    Ok(errata.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Value {
        serde_json::json!({
            "EventName": "UOPS_RETIRED.STALLS", "EventCode": "0xC2", "UMask": "0x10",
            "Counter": "0,1", "CounterMask": "0", "Invert": "0", "EdgeDetect": "0",
        })
    }

    fn erratum(was: Fields) -> Erratum {
        Erratum {
            name: "uops_retired.stalls".to_string(),
            was,
            now: Fields {
                cmask: 1,
                inv: true,
                edge: true,
                ..was
            },
            evidence: "a period needs edge, invert and a counter mask".to_string(),
        }
    }

    const WAS: Fields = Fields {
        event: 0xc2,
        umask: 0x10,
        cmask: 0,
        inv: false,
        edge: false,
        any: false,
    };

    #[test]
    fn an_erratum_replaces_the_values_it_was_written_for() {
        let mut entries = vec![entry()];
        assert_eq!(apply(&mut entries, &[erratum(WAS)], "f").unwrap(), 1);
        let now = fields_of(&entries[0]).unwrap();
        assert_eq!(
            (now.cmask, now.inv, now.edge, now.umask),
            (1, true, true, 0x10)
        );
    }

    #[test]
    fn a_stale_or_dangling_erratum_stops_the_generator() {
        let mut entries = vec![entry()];
        let stale = erratum(Fields { umask: 0x20, ..WAS });
        let error = apply(&mut entries, &[stale], "f").unwrap_err().to_string();
        assert!(error.contains("was written for"), "{error}");
        let mut other = erratum(WAS);
        other.name = "UOPS_RETIRED.NOPE".to_string();
        let error = apply(&mut entries, &[other], "f").unwrap_err().to_string();
        assert!(error.contains("names no entry"), "{error}");
        // Nothing changed.
        assert_eq!(fields_of(&entries[0]), Some(WAS));
    }

    #[test]
    fn the_repository_errata_parse_and_give_evidence() {
        let errata = read(&default_dir()).unwrap();
        for (id, list) in &errata {
            assert!(
                crate::perfmon::MODELS.iter().any(|(_, m, _)| m == id),
                "gen/errata/{id}.toml names no perfmon model"
            );
            assert!(!list.is_empty(), "gen/errata/{id}.toml has no erratum");
        }
    }
}
