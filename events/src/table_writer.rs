//! The writer of the shipped tables (`counterhal-gen tables`, with this crate's `table-writer`
//! feature): the files under `data/` read by the library's own readers (the loader for the
//! models' TOML files, `metrics::file`, `libpfm4::file`, `uncore::file`), each checked as a
//! user's file is, and written as the rows [`super`] reads, in one file. What a reader refuses
//! stops the writer with the reader's message, naming the file.
//!
//! - `models.rs`: the models' headers (`INDEX`, what finds and detects a model) and bodies
//!   (events, unit masks, mappings, refused presets, event aliases);
//! - `metrics.rs`: the metrics, their formulas as shared nodes;
//! - `libpfm4.rs`: libpfm4's x86 core tables;
//! - `uncore.rs`: the x86 models' uncore events;
//! - `papi.rs`: libpapi's tables (PAPI's presets, libpfm4's `perf::` events and uncore PMU
//!   families), in a part of their own;
//! - `pool.rs`: the one pool of strings all of them name.

use std::collections::HashMap;
use std::hash::Hash;
use std::path::Path;

use crate::table::{
    Catalog, ENTRY, Field, HEADER, MAGIC, Metrics, Models, NAME, Out, Papi, Part, Str,
};

mod libpfm4;
mod metrics;
mod models;
mod papi;
mod pool;
mod uncore;

pub(crate) use pool::Pool;

/// `row` written alone.
fn encode<T: Field>(row: &T) -> Out {
    let mut out = Out::default();
    row.write(&mut out);
    debug_assert_eq!(out.bytes.len(), T::SIZE);
    out
}

/// A table whose rows are each written once: a row equal to one written before is that row.
pub(crate) struct Rows<T> {
    out: Out,
    count: usize,
    at: HashMap<Vec<u8>, usize>,
    row: std::marker::PhantomData<T>,
}

impl<T> Default for Rows<T> {
    fn default() -> Self {
        Rows {
            out: Out::default(),
            count: 0,
            at: HashMap::new(),
            row: std::marker::PhantomData,
        }
    }
}

impl<T: Field> Rows<T> {
    /// The index of `row`, added if it is new.
    pub(crate) fn add(&mut self, row: &T) -> usize {
        self.add_keyed(row, &[])
    }

    /// The index of `row` told apart from equal rows by `key` too (a row whose table beside
    /// it holds more of what makes it itself), added if it is new.
    pub(crate) fn add_keyed(&mut self, row: &T, key: &[u8]) -> usize {
        let encoded = encode(row);
        let mut full = encoded.bytes.clone();
        full.extend_from_slice(key);
        if let Some(&at) = self.at.get(&full) {
            return at;
        }
        self.out.append(&encoded);
        self.at.insert(full, self.count);
        self.count += 1;
        self.count - 1
    }

    /// How many rows it has.
    pub(crate) fn len(&self) -> usize {
        self.count
    }
}

/// Lists written once each, end to end: a list is a range of `items`.
pub(crate) struct Lists<T> {
    pub(crate) items: Vec<T>,
    at: HashMap<Vec<T>, usize>,
}

impl<T> Default for Lists<T> {
    fn default() -> Self {
        Lists {
            items: Vec::new(),
            at: HashMap::new(),
        }
    }
}

impl<T: Clone + Eq + Hash> Lists<T> {
    /// `list` as `(start, length)` in `items`, added if no list so far was the same.
    pub(crate) fn add(&mut self, list: Vec<T>) -> (u16, u16) {
        let length = short(list.len(), "a list's length");
        let start = match self.at.get(&list) {
            Some(&start) => start,
            None => {
                let start = self.items.len();
                self.items.extend(list.iter().cloned());
                self.at.insert(list, start);
                start
            }
        };
        (short(start, "a list's start"), length)
    }
}

/// Values written once each, by their index.
pub(crate) struct Values<T> {
    pub(crate) values: Vec<T>,
    at: HashMap<T, usize>,
}

impl<T> Default for Values<T> {
    fn default() -> Self {
        Values {
            values: Vec::new(),
            at: HashMap::new(),
        }
    }
}

impl<T: Copy + Eq + Hash> Values<T> {
    /// The index of `value`, added if it is new.
    pub(crate) fn add(&mut self, value: T) -> usize {
        *self.at.entry(value).or_insert_with(|| {
            self.values.push(value);
            self.values.len() - 1
        })
    }
}

/// The names of the `.toml` files in directory `dir`, sorted, without the extension.
pub(crate) fn toml_stems(dir: &Path) -> Vec<String> {
    let mut stems: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|file| file.strip_suffix(".toml").map(str::to_string))
        .collect();
    stems.sort();
    stems
}

/// `n` as the `u16` of a row, which the shipped data keeps below 65,536 (the writer stops,
/// naming `what`, past it: widen the row's field).
pub(crate) fn short(n: usize, what: &str) -> u16 {
    u16::try_from(n).unwrap_or_else(|_| panic!("{what} is {n}: past the u16 of its row"))
}

/// Part `P`'s sections as they are written, and the pool their strings are in.
pub(crate) struct Tables<P> {
    pool: Pool,
    sections: Vec<(&'static str, usize, Out)>,
    part: std::marker::PhantomData<P>,
}

impl<P> Default for Tables<P> {
    fn default() -> Self {
        Tables {
            pool: Pool::default(),
            sections: Vec::new(),
            part: std::marker::PhantomData,
        }
    }
}

impl<P: Part> Tables<P> {
    /// String `s`, as an id of the pool until it is laid out.
    pub(crate) fn string(&mut self, s: &str) -> Str<P> {
        Str::new(self.pool.string(s))
    }

    /// Adds section `name` of rows `rows`.
    pub(crate) fn section<T: Field>(&mut self, name: &'static str, rows: &[T]) {
        let mut out = Out::default();
        for row in rows {
            out.append(&encode(row));
        }
        self.add(name, T::SIZE, out);
    }

    /// Adds section `name` of the rows of `rows`.
    pub(crate) fn rows<T: Field>(&mut self, name: &'static str, rows: Rows<T>) {
        self.add(name, T::SIZE, rows.out);
    }

    fn add(&mut self, name: &'static str, size: usize, out: Out) {
        assert!(
            name.len() < NAME && !self.sections.iter().any(|s| s.0 == name),
            "section `{name}`: a name of at most {} bytes, once",
            NAME - 1
        );
        self.sections.push((name, size, out));
    }

    /// The part's two files: `NAME.tables` (header, directory and every section, strings
    /// resolved) and `NAME.strings` (the pool).
    pub(crate) fn finish(self) -> [(String, Vec<u8>); 2] {
        let laid = self.pool.lay_out();
        let mut sections = Vec::new();
        for (name, size, mut out) in self.sections {
            for &at in &out.strings {
                let id = u32::from_le_bytes(out.bytes[at..at + 4].try_into().expect("4 bytes"));
                let packed = laid.packed[id as usize];
                out.bytes[at..at + 4].copy_from_slice(&packed.to_le_bytes());
            }
            sections.push((name, size, out.bytes));
        }
        let word = |n: usize| u32::try_from(n).expect("tables below 4 GiB").to_le_bytes();
        let mut file = Vec::new();
        file.extend_from_slice(&MAGIC);
        file.extend_from_slice(&word(sections.len()));
        file.extend_from_slice(&[0; 4]);
        let mut offset = HEADER + ENTRY * sections.len();
        for (name, size, bytes) in &sections {
            let mut entry = [0u8; ENTRY];
            entry[..name.len()].copy_from_slice(name.as_bytes());
            entry[NAME..NAME + 4].copy_from_slice(&word(offset));
            entry[NAME + 4..NAME + 8].copy_from_slice(&word(bytes.len()));
            entry[NAME + 8..NAME + 12].copy_from_slice(&word(*size));
            file.extend_from_slice(&entry);
            offset += bytes.len();
        }
        for (_, _, bytes) in sections {
            file.extend_from_slice(&bytes);
        }
        [
            (format!("{}.tables", P::NAME), file),
            (format!("{}.strings", P::NAME), laid.text.into_bytes()),
        ]
    }
}

/// The shipped tables written afresh from the files under `data` (this crate's `data/`): each
/// part's two files by name, what `counterhal-gen tables` writes to `data/tables/`.
///
/// # Panics
/// Where a file does not read or check, naming the file and what is wrong (the readers'
/// messages), as the library would refuse it.
pub fn write_shipped_tables(data: &Path) -> Vec<(String, Vec<u8>)> {
    let mut tables = Tables::<Models>::default();
    let files = models::files(data);
    let loaded = models::load(&files);
    let names: Vec<Str<Models>> = files.iter().map(|(name, _)| tables.string(name)).collect();
    tables.section("FILES", &names);
    let mut catalog = Tables::<Catalog>::default();
    models::index(&loaded, &mut catalog);
    models::write(&loaded, &mut tables);
    let mut metrics = Tables::<Metrics>::default();
    metrics::write(data, &mut metrics);
    libpfm4::write(data, &mut tables);
    uncore::write(data, &mut tables);
    let mut papi = Tables::<Papi>::default();
    papi::write(data, &mut papi);
    [
        catalog.finish(),
        tables.finish(),
        metrics.finish(),
        papi.finish(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
