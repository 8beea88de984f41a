//! The declared differences between a CPU model's own spelling and libpfm4's grammar.
//! Oracle: libpfm4's own tables (generated from libpfm4 4.13, the version the differential
//! fuzz test `libpfm_fuzz.rs` checks them against) and the model's source (Intel's tables,
//! perf's names).
//!
//! A name written in the model's source's spelling (Intel's `EVENT.UMASK`, an event of
//! Intel's table without unit masks, perf's lower-case names on AMD) keeps the source's
//! meaning, also where libpfm4 reads the same string otherwise; each such name must be listed
//! in `tests/data/libpfm-declared.toml` (so that `list` and `encode` saying so is a decision,
//! not an accident), and each listed name must still differ.

use std::collections::{BTreeMap, BTreeSet};

use counterhal_events::Database;
use serde::Deserialize;

#[derive(Deserialize)]
struct Declared {
    #[serde(default)]
    differs: Vec<DeclaredNames>,
}

#[derive(Deserialize)]
struct DeclaredNames {
    pmu: String,
    names: Vec<String>,
}

/// Every name of `model` in its own spelling: `EVENT.UMASK`, `EVENT` without unit masks, and
/// the dotted aliases (perf's names on AMD).
fn own_names(db: &Database, model: &str) -> Vec<String> {
    let cpu = db.model(model).expect("model");
    let mut names = Vec::new();
    for event in cpu.events() {
        if event.unit_masks().is_empty() {
            names.push(event.name.clone());
        }
        for mask in event.unit_masks() {
            names.push(format!("{}.{}", event.name, mask.name));
        }
    }
    if model.starts_with("amd64") {
        for (alias, _) in cpu.event_aliases() {
            if alias.contains(':') {
                names.push(alias.replacen(':', ".", 1));
            }
        }
    }
    names
}

#[test]
fn every_difference_of_spelling_is_declared_and_still_applies() {
    let declared: Declared =
        toml::from_str(include_str!("data/libpfm-declared.toml")).expect("declared parses");
    let listed: BTreeMap<String, BTreeSet<String>> = declared
        .differs
        .into_iter()
        .map(|d| (d.pmu, d.names.into_iter().collect()))
        .collect();
    let db = Database::shipped().expect("the shipped database loads");
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut notes = 0;
    for pmu in Database::libpfm4_pmus() {
        let Some(model) = db.model(pmu).map(|m| m.id.clone()) else {
            continue;
        };
        for name in own_names(&db, &model) {
            if db.libpfm4_difference(&model, &name).is_some() {
                found
                    .entry(pmu.to_string())
                    .or_default()
                    .insert(name.to_ascii_uppercase());
                notes += 1;
            }
        }
    }
    let mut missing = Vec::new();
    let mut stale = Vec::new();
    for (pmu, names) in &found {
        for name in names {
            if !listed.get(pmu).is_some_and(|l| l.contains(name)) {
                missing.push(format!("{pmu} {name}"));
            }
        }
    }
    for (pmu, names) in &listed {
        for name in names {
            if !found.get(pmu).is_some_and(|f| f.contains(name)) {
                stale.push(format!("{pmu} {name}"));
            }
        }
    }
    println!("{notes} names keep their source's meaning where libpfm4 reads them otherwise");
    if !missing.is_empty() || !stale.is_empty() {
        let mut toml = String::new();
        for (pmu, names) in &found {
            toml.push_str(&format!("\n[[differs]]\npmu = \"{pmu}\"\nnames = [\n"));
            for name in names {
                toml.push_str(&format!("  \"{name}\",\n"));
            }
            toml.push_str("]\n");
        }
        panic!(
            "{} names differ from libpfm4 and are not declared: {}\n{} declared names no longer differ: {}\nthe list as it is now:\n{toml}",
            missing.len(),
            missing.join(", "),
            stale.len(),
            stale.join(", ")
        );
    }
}
