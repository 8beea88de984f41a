//! The shipped uncore tables (`data/generated/uncore/DIR.toml`) in their compiled-in form:
//! each file read and checked by the library's own reader (`src/uncore/file.rs`, included by
//! build.rs), its directory mapped to its CPU model by `src/model_aliases.rs`'
//! `PERF_DIRECTORIES`, and written as static Rust data (`OUT_DIR/uncore.rs`, read by
//! `src/uncore/compiled.rs`) in records of ten bytes:
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
//! - `UNCORE_TABLES`: one per model, in `SHIPPED_UNCORE_MODELS`' order (sorted), a range of
//!   `UNCORE_RUNS`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::pool::Pool;
use crate::rows::{Rows, Values, short};
use crate::uncore_file::{self, split_code, split_name};

/// The flag of a row's scale byte that marks it deprecated.
const DEPRECATED: u8 = 0x80;

/// The code of a row whose terms do not start with a 16-bit `event=`.
const NO_CODE: u16 = u16::MAX;

/// Writes `OUT_DIR/uncore.rs` from the tables in `data/generated/uncore` whose model `wanted`
/// keeps; a table that does not read or check, or whose directory is no model's, fails the
/// build naming the file.
pub(crate) fn write(data: &Path, pool: &mut Pool, wanted: impl Fn(&str) -> bool) -> String {
    let tables = read_tables(data, wanted);
    let mut bases: Values<u32> = Values::default();
    let mut suffixes: Values<u32> = Values::default();
    let mut terms: Values<u32> = Values::default();
    let mut pmus: Values<u32> = Values::default();
    let mut scales: Vec<String> = vec!["(f64::NAN, Str(0))".to_string()];
    let mut rows = Rows::default();
    let (mut runs, mut table_rows) = (Vec::new(), Vec::new());
    // Strings by their pool id: `Values` keeps the placeholders' numbers.
    let id = |pool: &mut Pool, s: &str| -> u32 {
        let placeholder = pool.string(s);
        placeholder
            .trim_start_matches("Str(@")
            .trim_end_matches(')')
            .parse()
            .expect("the pool's placeholder")
    };
    for (model, table) in &tables {
        let mut events: Vec<(String, &str, String)> = Vec::new();
        for pmu in &table.pmus {
            let pmu_index = pmus.add(id(pool, &pmu.name));
            let pmu_byte = u8::try_from(pmu_index).expect("fewer than 256 uncore PMUs");
            for event in &pmu.events {
                let (base, suffix) = split_name(&event.name);
                let (code, rest) = split_code(&event.terms);
                assert!(code != Some(NO_CODE), "{}: event code 0xffff", event.name);
                let mut scale = match (event.scale, &event.unit) {
                    (Some(scale), Some(unit)) => {
                        let row = format!(
                            "(f64::from_bits({:#x}), {})",
                            scale.to_bits(),
                            pool.string(unit)
                        );
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
                let row = format!(
                    "Row {{ base: {}, suffix: {}, code: {}, rest: {}, pmu: {pmu_byte}, scale: {scale} }}",
                    short(bases.add(id(pool, base)), "the uncore names' bases"),
                    short(suffixes.add(id(pool, suffix)), "the uncore names' suffixes"),
                    code.unwrap_or(NO_CODE),
                    short(terms.add(id(pool, rest)), "the uncore terms"),
                );
                events.push((event.name.to_ascii_lowercase(), &pmu.name, row));
            }
        }
        events.sort();
        let first_run = runs.len();
        let mut run: Option<(usize, usize)> = None;
        for (_, _, row) in events {
            let at = rows.add(row);
            run = match run {
                Some((start, length)) if start + length == at => Some((start, length + 1)),
                Some((start, length)) => {
                    runs.push(format!(
                        "({}, {})",
                        short(start, "an uncore row"),
                        short(length, "a run")
                    ));
                    Some((at, 1))
                }
                None => Some((at, 1)),
            };
        }
        if let Some((start, length)) = run {
            runs.push(format!(
                "({}, {})",
                short(start, "an uncore row"),
                short(length, "a run")
            ));
        }
        table_rows.push(format!(
            "({}, {}, {})",
            pool.string(model),
            short(first_run, "the uncore runs"),
            short(runs.len() - first_run, "a model's uncore runs"),
        ));
    }
    let mut out = String::from(
        "// Generated by events/build.rs (build/uncore.rs) from events/data/generated/uncore.\n\n",
    );
    let models: Vec<&str> = tables.keys().copied().collect();
    writeln!(
        out,
        "/// The models with shipped uncore events, sorted.\n\
         pub const SHIPPED_UNCORE_MODELS: &[&str] = &{models:?};\n"
    )
    .unwrap();
    let strs = |values: &Values<u32>| -> Vec<String> {
        values
            .values
            .iter()
            .map(|id| format!("Str(@{id})"))
            .collect()
    };
    let list = |out: &mut String, name: &str, kind: &str, items: &[String]| {
        writeln!(out, "static {name}: [{kind}; {}] = [", items.len()).unwrap();
        for item in items {
            writeln!(out, "    {item},").unwrap();
        }
        out.push_str("];\n\n");
    };
    list(&mut out, "UNCORE_PMUS", "Str", &strs(&pmus));
    list(&mut out, "UNCORE_BASES", "Str", &strs(&bases));
    list(&mut out, "UNCORE_SUFFIXES", "Str", &strs(&suffixes));
    list(&mut out, "UNCORE_TERMS", "Str", &strs(&terms));
    list(&mut out, "UNCORE_SCALES", "(f64, Str)", &scales);
    list(&mut out, "UNCORE_ROWS", "Row", &rows.rows);
    list(&mut out, "UNCORE_RUNS", "(u16, u16)", &runs);
    list(&mut out, "UNCORE_TABLES", "(Str, u16, u16)", &table_rows);
    out
}

/// The tables of `data/generated/uncore` whose model `wanted` keeps, by model id (sorted);
/// a table that does not read or check, or whose directory is no model's, fails the build
/// naming the file.
fn read_tables(
    data: &Path,
    wanted: impl Fn(&str) -> bool,
) -> BTreeMap<&'static str, uncore_file::UncoreFile> {
    let dir = data.join("generated/uncore");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|file| file.ends_with(".toml"))
        .collect();
    files.sort();
    // Each kept model's table, by model id (sorted).
    let mut tables: BTreeMap<&'static str, uncore_file::UncoreFile> = BTreeMap::new();
    for file in &files {
        let path = dir.join(file);
        println!("cargo:rerun-if-changed={}", path.display());
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
        if wanted(model) {
            tables.insert(model, table);
        }
    }
    tables
}
