//! The shipped uncore tables (`data/generated/uncore/DIR.toml`) as rows: each file read and
//! checked by the library's own reader (`src/uncore/file.rs`), its directory mapped to its CPU
//! model by `src/model_aliases.rs`' `PERF_DIRECTORIES`, and written as rows (read by
//! `src/uncore/compiled.rs`) of ten bytes:
//!
//! - `UNCORE_ROWS`: every event once however many models have it (Sapphire Rapids' and
//!   Emerald Rapids' are mostly the same rows): its name as two indices, the part before its
//!   first `.` into `UNCORE_BASES` and the part from the `.` on into `UNCORE_SUFFIXES` (a few
//!   thousand of each make up every name), its event code, the rest of its terms as an index
//!   into `UNCORE_TERMS` (a few hundred distinct), its PMU as a byte into `UNCORE_PMUS`, and a
//!   byte holding its scale and unit (an index into `UNCORE_SCALES`, 0 for none) and its
//!   deprecated flag (`0x80`);
//! - `UNCORE_RUNS`: each model's events, sorted by name (ASCII case ignored) and PMU, as runs of
//!   consecutive rows (a model whose events another model already wrote is a few runs);
//! - `UNCORE_TABLES`: one per model, sorted by model id, a range of `UNCORE_RUNS`.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Rows, Tables, Values, short, toml_stems};
use crate::table::Models;

/// A string of part `models`.
type Str = crate::table::Str<Models>;
use crate::uncore::compiled::{DEPRECATED, NO_CODE, Row, UncoreTable};
use crate::uncore::file::{self as uncore_file, split_code, split_name};

/// A [`Row`]'s fields, in its order: what sorts the rows of equal names and PMUs.
type RowFields = (u16, u16, u16, u16, u8, u8);

/// Writes the tables of `data/generated/uncore`; a table that does not read or check, or
/// whose directory is no model's, stops the writer, naming the file.
pub(crate) fn write(data: &Path, tables: &mut Tables<Models>) {
    let files = read_tables(data);
    let mut bases: Values<Str> = Values::default();
    let mut suffixes: Values<Str> = Values::default();
    let mut terms: Values<Str> = Values::default();
    let mut pmus: Values<Str> = Values::default();
    let mut scales: Vec<(u64, Str)> = vec![(f64::NAN.to_bits(), Str::new(0))];
    let mut rows: Rows<Row> = Rows::default();
    let (mut runs, mut table_rows) = (Vec::new(), Vec::new());
    for (model, table) in &files {
        // Each event's name (lowered), PMU and row, sorted by the first two.
        let mut events: Vec<(String, &str, RowFields)> = Vec::new();
        for pmu in &table.pmus {
            let pmu_index = pmus.add(tables.string(&pmu.name));
            let pmu_byte = u8::try_from(pmu_index).expect("fewer than 256 uncore PMUs");
            for event in &pmu.events {
                let (base, suffix) = split_name(&event.name);
                let (code, rest) = split_code(&event.terms);
                assert!(code != Some(NO_CODE), "{}: event code 0xffff", event.name);
                let mut scale = match (event.scale, &event.unit) {
                    (Some(scale), Some(unit)) => {
                        let row = (scale.to_bits(), tables.string(unit));
                        let at = scales.iter().position(|s| *s == row).unwrap_or_else(|| {
                            scales.push(row);
                            scales.len() - 1
                        });
                        u8::try_from(at)
                            .ok()
                            .filter(|&a| a < DEPRECATED)
                            .expect("fewer than 128 scales")
                    }
                    _ => 0,
                };
                if event.deprecated {
                    scale |= DEPRECATED;
                }
                let row = (
                    short(bases.add(tables.string(base)), "the uncore names' bases"),
                    short(
                        suffixes.add(tables.string(suffix)),
                        "the uncore names' suffixes",
                    ),
                    code.unwrap_or(NO_CODE),
                    short(terms.add(tables.string(rest)), "the uncore terms"),
                    pmu_byte,
                    scale,
                );
                events.push((event.name.to_ascii_lowercase(), &pmu.name, row));
            }
        }
        events.sort();
        let first_run = runs.len();
        let mut run: Option<(usize, usize)> = None;
        for (_, _, (base, suffix, code, rest, pmu, scale)) in events {
            let row = Row {
                base,
                suffix,
                code,
                rest,
                pmu,
                scale,
            };
            let at = rows.add(&row);
            run = match run {
                Some((start, length)) if start + length == at => Some((start, length + 1)),
                Some((start, length)) => {
                    runs.push((short(start, "an uncore row"), short(length, "a run")));
                    Some((at, 1))
                }
                None => Some((at, 1)),
            };
        }
        if let Some((start, length)) = run {
            runs.push((short(start, "an uncore row"), short(length, "a run")));
        }
        table_rows.push(UncoreTable {
            model: tables.string(model),
            runs: (
                short(first_run, "the uncore runs"),
                short(runs.len() - first_run, "a model's uncore runs"),
            ),
        });
    }
    let scales: Vec<(f64, Str)> = (scales.into_iter())
        .map(|(bits, unit)| (f64::from_bits(bits), unit))
        .collect();
    tables.section("UNCORE_PMUS", &pmus.values);
    tables.section("UNCORE_BASES", &bases.values);
    tables.section("UNCORE_SUFFIXES", &suffixes.values);
    tables.section("UNCORE_TERMS", &terms.values);
    tables.section("UNCORE_SCALES", &scales);
    tables.rows("UNCORE_ROWS", rows);
    tables.section("UNCORE_RUNS", &runs);
    tables.section("UNCORE_TABLES", &table_rows);
}

/// The tables of `data/generated/uncore`, by model id (sorted); a table that does not read or
/// check, or whose directory is no model's, stops the writer naming the file.
fn read_tables(data: &Path) -> BTreeMap<&'static str, uncore_file::UncoreFile> {
    let dir = data.join("generated/uncore");
    let files: Vec<String> = (toml_stems(&dir).into_iter())
        .map(|stem| format!("{stem}.toml"))
        .collect();
    // Each kept model's table, by model id (sorted).
    let mut tables: BTreeMap<&'static str, uncore_file::UncoreFile> = BTreeMap::new();
    for file in &files {
        let path = dir.join(file);
        let name = format!("events/data/generated/uncore/{file}");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let table = uncore_file::read(&name, &text).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            file.strip_suffix(".toml") == Some(table.directory.as_str()),
            "{name}: says directory `{}`",
            table.directory
        );
        let model = crate::model_aliases::PERF_DIRECTORIES
            .iter()
            .find(|(d, _)| *d == table.directory)
            .map(|&(_, id)| id)
            .unwrap_or_else(|| {
                panic!(
                    "{name}: directory `{}` is no model's (model_aliases.rs)",
                    table.directory
                )
            });
        tables.insert(model, table);
    }
    tables
}
