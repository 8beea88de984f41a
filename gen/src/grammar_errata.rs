//! Corrections of libpfm4's own tables: `gen/errata/libpfm4/PMU.toml`, hand-written, one
//! `[[erratum]]` per wrong unit mask, each naming the event and unit mask (libpfm4's
//! spelling), the flags libpfm4's table gives it (`was`, by name, without `INTEL_X86_`), the
//! flags written instead (`now`) and the evidence (sources a reviewer can check, at best a
//! later libpfm4 commit that makes the same correction). `libpfm4-grammar` applies them as it
//! writes the PMU's table and counts them in its header (`# errata: N, gen/errata/libpfm4/PMU.toml`).
//!
//! As with Intel's errata (`errata.rs`), an erratum never applies silently to data it was not
//! written for: one whose unit mask is missing, or whose `was` is not what the snapshot gives,
//! stops the generator, and so does a file naming no PMU of the snapshot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::GenError;
use crate::errata::toml_files;

/// The libpfm4 errata files of the repository: `gen/errata/libpfm4/`.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("errata/libpfm4")
}

/// One errata file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrataFile {
    #[serde(default)]
    erratum: Vec<Erratum>,
}

/// One correction of a unit mask's flags.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Erratum {
    /// libpfm4's event name.
    pub event: String,
    /// libpfm4's unit mask name.
    pub umask: String,
    /// The flags libpfm4's table gives the unit mask, in the generated table's order.
    pub was: Vec<String>,
    /// The flags written instead.
    pub now: Vec<String>,
    /// Why, from sources a reviewer can check.
    pub evidence: String,
}

/// The errata of one PMU, and which of them applied.
#[derive(Debug, Default)]
pub struct PmuErrata {
    /// The file, as the header names it (`gen/errata/libpfm4/spr.toml`).
    pub file: String,
    errata: Vec<Erratum>,
    applied: Vec<bool>,
}

impl PmuErrata {
    /// The flags to write for `event:umask`, whose table gives `flags`: an erratum's `now`
    /// where one names it.
    ///
    /// # Errors
    /// An erratum names the unit mask and `flags` are not its `was`.
    pub fn flags(
        &mut self,
        event: &str,
        umask: &str,
        flags: Vec<String>,
    ) -> Result<Vec<String>, String> {
        let Some(i) = self
            .errata
            .iter()
            .position(|e| e.event == event && e.umask == umask)
        else {
            return Ok(flags);
        };
        let erratum = &self.errata[i];
        if erratum.was != flags {
            return Err(format!(
                "{}: erratum {event}:{umask} was written for flags {:?}, the snapshot gives {flags:?}",
                self.file, erratum.was
            ));
        }
        self.applied[i] = true;
        Ok(erratum.now.clone())
    }

    /// How many errata there are.
    pub fn len(&self) -> usize {
        self.errata.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.errata.is_empty()
    }

    /// Every erratum applied.
    ///
    /// # Errors
    /// One names a unit mask the table does not have.
    pub fn check_applied(&self) -> Result<(), String> {
        match self.errata.iter().zip(&self.applied).find(|(_, a)| !**a) {
            Some((e, _)) => Err(format!(
                "{}: erratum {}:{} names a unit mask the snapshot's table does not have",
                self.file, e.event, e.umask
            )),
            None => Ok(()),
        }
    }
}

/// The errata of every PMU with a file under `dir`, by PMU name (none when `dir` does not
/// exist).
///
/// # Errors
/// A file that does not read or parse; an erratum without evidence, or one that changes
/// nothing.
pub fn read(dir: &Path) -> Result<BTreeMap<String, PmuErrata>, GenError> {
    let mut out = BTreeMap::new();
    for (path, file) in toml_files::<ErrataFile>(dir)? {
        let pmu = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for e in &file.erratum {
            let why = if e.evidence.trim().is_empty() {
                "gives no evidence"
            } else if e.was == e.now {
                "changes nothing (`was` equals `now`)"
            } else {
                continue;
            };
            return Err(GenError::Data(format!(
                "{}: erratum {}:{} {why}",
                path.display(),
                e.event,
                e.umask
            )));
        }
        let applied = vec![false; file.erratum.len()];
        out.insert(
            pmu.clone(),
            PmuErrata {
                file: format!("gen/errata/libpfm4/{pmu}.toml"),
                errata: file.erratum,
                applied,
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errata() -> PmuErrata {
        PmuErrata {
            file: "gen/errata/libpfm4/x.toml".to_string(),
            errata: vec![Erratum {
                event: "INST_RETIRED".to_string(),
                umask: "ANY".to_string(),
                was: vec!["NCOMBO".to_string()],
                now: vec!["NCOMBO".to_string(), "CODE_OVERRIDE".to_string()],
                evidence: "a later commit".to_string(),
            }],
            applied: vec![false],
        }
    }

    #[test]
    fn an_erratum_replaces_the_flags_it_was_written_for() {
        let mut e = errata();
        assert!(e.check_applied().is_err());
        let other = e.flags("INST_RETIRED", "ANY_P", vec![]).unwrap();
        assert!(other.is_empty());
        let flags = e
            .flags("INST_RETIRED", "ANY", vec!["NCOMBO".to_string()])
            .unwrap();
        assert_eq!(flags, ["NCOMBO", "CODE_OVERRIDE"]);
        e.check_applied().unwrap();
    }

    #[test]
    fn an_erratum_for_other_flags_stops_the_generator() {
        let mut e = errata();
        let error = e
            .flags("INST_RETIRED", "ANY", vec!["PEBS".to_string()])
            .unwrap_err();
        assert!(error.contains("was written for"), "{error}");
    }

    #[test]
    fn the_repositorys_files_read() {
        let all = read(&default_dir()).unwrap();
        assert!(all.values().all(|e| !e.is_empty()));
    }
}
