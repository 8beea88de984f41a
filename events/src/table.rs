//! The one format of the shipped tables: the files of `data/tables/`, written by
//! `counterhal-gen tables` from the files under `data/` (the models' TOML files
//! `data/shipped.list` names, the metrics, libpfm4's tables, the uncore events, libpapi's
//! tables under `data/papi/`), and read here in place. Nothing is parsed at start-up and
//! nothing of it is Rust source: the library includes the bytes, and a row is read from them
//! when it is asked for.
//!
//! Each [`Part`] is two files of its own, its rows and its strings, included by the code that
//! reads it alone: a build without a part's feature holds none of its bytes, and a program that never
//! reads a part (libpapi reads no metric) leaves it to the linker to drop.
//!
//! The layout of a file, every number little-endian:
//!
//! - a header of 16 bytes: [`MAGIC`], then the number of sections (`u32`), then 4 zero bytes;
//! - one directory entry of 32 bytes per section: its name (20 bytes, NUL-padded), the offset
//!   of its rows from the start of the file, their length in bytes and the size of one row
//!   (`u32` each);
//! - the sections' rows.
//!
//! Beside each part's `NAME.tables`, its `NAME.strings` is its pool: every string of its rows
//! once, a string found inside a longer one taking no byte of its own, as UTF-8 text (the
//! library includes it as a `&str`, which the compiler checks). A row names a string as a
//! [`Str`]: its offset and length in the pool, packed in 32 bits.
//!
//! A row is a fixed number of bytes, its fields end to end with no padding, in the order its
//! type declares them ([`row!`](crate::table::row!)): a table is read by index, a range of it by
//! `(start, length)`, a sorted one by binary search. The tables are lists of rows that other
//! rows name by index (the models' events, their unit masks, the metrics' formula nodes), each
//! row once however many rows name it.
//!
//! Where a section is missing or its row size is not its type's, the table reads as empty: a
//! test writes the tables again from `data/` and compares them with the shipped file, and
//! another reads every row (`events/tests`).

use std::marker::PhantomData;

/// One file of the shipped tables: its name in `data/tables/` and its bytes (none where this
/// build's features leave it out).
pub(crate) trait Part:
    Copy + Default + Eq + std::hash::Hash + std::fmt::Debug + 'static
{
    /// Its file's name, without `.tables`.
    const NAME: &'static str;
    /// Its file's bytes.
    fn bytes() -> &'static [u8];
    /// Its pool of strings (`NAME.strings`).
    fn pool() -> &'static str;
}

/// Section `$name` of part `$part` as a [`Table`], found in the part's directory at its first
/// use and then kept (a lookup by name compares every section's name: the tables' readers ask
/// for a section per row they read).
macro_rules! table {
    ($part:ty, $row:ty, $name:literal) => {{
        static ROWS: std::sync::OnceLock<&'static [u8]> = std::sync::OnceLock::new();
        $crate::table::Table::<$row>::kept::<$part>(&ROWS, $name)
    }};
    ($part:ty, $name:literal) => {{
        static ROWS: std::sync::OnceLock<&'static [u8]> = std::sync::OnceLock::new();
        $crate::table::Table::kept::<$part>(&ROWS, $name)
    }};
}
pub(crate) use table;

macro_rules! parts {
    ($($(#[$meta:meta])* $part:ident $name:literal $static:ident if $cfg:meta;)*) => {$(
        #[cfg($cfg)]
        static $static: &[u8] = include_bytes!(concat!("../data/tables/", $name, ".tables"));
        #[cfg(not($cfg))]
        static $static: &[u8] = &[];

        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub(crate) struct $part;

        impl Part for $part {
            const NAME: &'static str = $name;
            fn bytes() -> &'static [u8] {
                $static
            }
            fn pool() -> &'static str {
                #[cfg($cfg)]
                const POOL: &str = include_str!(concat!("../data/tables/", $name, ".strings"));
                #[cfg(not($cfg))]
                const POOL: &str = "";
                POOL
            }
        }
    )*};
}

parts! {
    /// The models' index, in every build: each model's header (id, aliases, encoder, match
    /// rules: what finds and detects a model, and names one this build leaves out with the
    /// feature that brings it back; `src/database.rs`).
    Catalog "catalog" CATALOG if all();
    /// The CPU models: their index (what finds and detects a model) and bodies, and the files
    /// they were loaded from (`src/compiled.rs`, `src/database.rs`), with libpfm4's x86 core
    /// tables (`src/libpfm4/table.rs`) and the x86 models' uncore events
    /// (`src/uncore/compiled.rs`), which share most of their strings.
    Models "models" MODELS if any(feature = "x86-models", feature = "arm-models");
    /// The models' metrics (`src/metrics/compiled.rs`).
    Metrics "metrics" METRICS if feature = "metrics";
    /// libpapi's tables, in every build (a program that reads none leaves them to the linker
    /// to drop): PAPI 7.0's presets, libpfm4's `perf::` events and its uncore PMU families
    /// (`src/papi.rs`).
    Papi "papi" PAPI if all();
}

/// Every part: its name, tables and strings (for the tests and `counterhal-gen tables`).
pub(crate) fn parts() -> [(&'static str, &'static [u8], &'static str); 4] {
    [
        (Catalog::NAME, Catalog::bytes(), Catalog::pool()),
        (Models::NAME, Models::bytes(), Models::pool()),
        (Metrics::NAME, Metrics::bytes(), Metrics::pool()),
        (Papi::NAME, Papi::bytes(), Papi::pool()),
    ]
}

/// The first 8 bytes of the file: its name and the format's version.
pub(crate) const MAGIC: [u8; 8] = *b"chtbl\0\0\x01";
/// Bytes of the header before the directory.
pub(crate) const HEADER: usize = 16;
/// Bytes of one directory entry.
pub(crate) const ENTRY: usize = 32;
/// Bytes of a section's name in its directory entry.
pub(crate) const NAME: usize = 20;
/// How many low bits of a [`Str`] hold its length; the offset is above them.
pub(crate) const LENGTH_BITS: u32 = 10;

/// Rows as they are written: their bytes, and where in them a [`Str`] lies (written as its
/// string's id in the pool, `table_writer::Pool`, replaced by the packed `Str` once the pool is laid
/// out).
#[cfg(feature = "table-writer")]
#[derive(Default)]
pub(crate) struct Out {
    pub(crate) bytes: Vec<u8>,
    pub(crate) strings: Vec<usize>,
}

#[cfg(feature = "table-writer")]
impl Out {
    /// Writes string `s` (an id of the pool, until it is laid out).
    pub(crate) fn string<P: Part>(&mut self, s: Str<P>) {
        self.strings.push(self.bytes.len());
        self.bytes.extend_from_slice(&s.0.to_le_bytes());
    }

    pub(crate) fn append(&mut self, other: &Out) {
        let base = self.bytes.len();
        self.strings
            .extend(other.strings.iter().map(|at| at + base));
        self.bytes.extend_from_slice(&other.bytes);
    }
}

/// A field of a row: a fixed number of bytes, read and written little-endian.
pub(crate) trait Field: Sized {
    /// Its size in bytes.
    const SIZE: usize;
    /// Reads it from the bytes at the reader's place (zero bytes past the end).
    fn read(reader: &mut Reader<'_>) -> Self;
    /// Writes it (the writer's side: `counterhal-gen tables`).
    #[cfg(feature = "table-writer")]
    fn write(&self, out: &mut Out);
}

/// The bytes of one row, read field after field.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    /// The next `N` bytes (zeros where the row ends before them, which a row of the right
    /// size never does).
    pub(crate) fn take<const N: usize>(&mut self) -> [u8; N] {
        match self.bytes.split_first_chunk::<N>() {
            Some((head, rest)) => {
                self.bytes = rest;
                *head
            }
            None => {
                let mut out = [0; N];
                let have = self.bytes.len().min(N);
                out[..have].copy_from_slice(&self.bytes[..have]);
                self.bytes = &[];
                out
            }
        }
    }
}

macro_rules! integer_fields {
    ($($t:ty),*) => {$(
        impl Field for $t {
            const SIZE: usize = size_of::<$t>();
            fn read(reader: &mut Reader<'_>) -> Self {
                <$t>::from_le_bytes(reader.take())
            }
            #[cfg(feature = "table-writer")]
            fn write(&self, out: &mut Out) {
                out.bytes.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
integer_fields!(u8, u16, u32, u64, f64);

/// Bytes as they are: one read of a row's small fields together.
impl<const N: usize> Field for [u8; N] {
    const SIZE: usize = N;
    fn read(reader: &mut Reader<'_>) -> Self {
        reader.take()
    }
    #[cfg(feature = "table-writer")]
    fn write(&self, out: &mut Out) {
        out.bytes.extend_from_slice(self);
    }
}

impl Field for bool {
    const SIZE: usize = 1;
    fn read(reader: &mut Reader<'_>) -> Self {
        u8::read(reader) != 0
    }
    #[cfg(feature = "table-writer")]
    fn write(&self, out: &mut Out) {
        u8::from(*self).write(out);
    }
}

macro_rules! tuple_fields {
    ($(($($t:ident $i:tt),*))*) => {$(
        impl<$($t: Field),*> Field for ($($t,)*) {
            const SIZE: usize = 0 $(+ $t::SIZE)*;
            fn read(reader: &mut Reader<'_>) -> Self {
                ($($t::read(reader),)*)
            }
            #[cfg(feature = "table-writer")]
            fn write(&self, out: &mut Out) {
                $(self.$i.write(out);)*
            }
        }
    )*};
}
tuple_fields!((A 0, B 1) (A 0, B 1, C 2) (A 0, B 1, C 2, D 3));

/// A row type: a struct whose fields are [`Field`]s, read and written in the order declared.
macro_rules! row {
    ($(#[$meta:meta])* struct $name:ident {
        $($(#[$field_meta:meta])* $field:ident: $ty:ty),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name {
            $($(#[$field_meta])* pub(crate) $field: $ty,)*
        }

        impl $crate::table::Field for $name {
            const SIZE: usize = 0 $(+ <$ty as $crate::table::Field>::SIZE)*;
            fn read(reader: &mut $crate::table::Reader<'_>) -> Self {
                $name { $($field: $crate::table::Field::read(reader),)* }
            }
            #[cfg(feature = "table-writer")]
            fn write(&self, out: &mut $crate::table::Out) {
                $($crate::table::Field::write(&self.$field, out);)*
            }
        }
    };
}
pub(crate) use row;

/// A string of part `P`'s pool: its offset and length, packed (the length in the low
/// [`LENGTH_BITS`]). `Str::new(0)` is the empty string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct Str<P>(pub(crate) u32, PhantomData<P>);

impl<P: Part> Field for Str<P> {
    const SIZE: usize = 4;
    fn read(reader: &mut Reader<'_>) -> Self {
        Str::new(u32::read(reader))
    }
    #[cfg(feature = "table-writer")]
    fn write(&self, out: &mut Out) {
        out.string(*self);
    }
}

/// A string that may be missing: `u32::MAX` for none.
impl<P: Part> Field for Option<Str<P>> {
    const SIZE: usize = 4;
    fn read(reader: &mut Reader<'_>) -> Self {
        let packed = u32::read(reader);
        (packed != u32::MAX).then_some(Str::new(packed))
    }
    #[cfg(feature = "table-writer")]
    fn write(&self, out: &mut Out) {
        match self {
            Some(s) => out.string(*s),
            None => u32::MAX.write(out),
        }
    }
}

impl<P: Part> Str<P> {
    /// The string packed as `packed`.
    pub(crate) const fn new(packed: u32) -> Str<P> {
        Str(packed, PhantomData)
    }

    /// Its text.
    pub(crate) fn text(self) -> &'static str {
        let offset = (self.0 >> LENGTH_BITS) as usize;
        P::pool()
            .get(offset..offset + self.len())
            .unwrap_or_default()
    }

    /// Its length in bytes, read from the `Str` alone.
    pub(crate) fn len(self) -> usize {
        (self.0 & ((1 << LENGTH_BITS) - 1)) as usize
    }

    /// Whether its text is `other` but for ASCII case: a string of another length is told
    /// apart without reading the pool (lookups by name compare every row's name).
    pub(crate) fn eq_ignore_ascii_case(self, other: &str) -> bool {
        self.len() == other.len() && self.text().eq_ignore_ascii_case(other)
    }
}

/// The `u32` at byte `at` of `bytes` (0 past their end).
fn word(bytes: &[u8], at: usize) -> usize {
    let mut reader = Reader {
        bytes: bytes.get(at..).unwrap_or_default(),
    };
    u32::read(&mut reader) as usize
}

/// Directory entry `index` of `file`: its name, offset, length and row size.
#[inline(never)]
fn entry(file: &'static [u8], index: usize) -> Option<(&'static [u8], &'static [u8], usize)> {
    let count = word(file, 8);
    if index >= count || file.get(..8) != Some(&MAGIC[..]) {
        return None;
    }
    let at = HEADER + index * ENTRY;
    let name = file.get(at..at + NAME)?;
    let name = name.split(|&b| b == 0).next().unwrap_or_default();
    let (offset, length) = (word(file, at + NAME), word(file, at + NAME + 4));
    let rows = file.get(offset..offset.checked_add(length)?)?;
    Some((name, rows, word(file, at + NAME + 8)))
}

/// The rows of section `name` of `file`, if its rows are `size` bytes each (none otherwise).
#[inline(never)]
fn section(file: &'static [u8], name: &str, size: usize) -> &'static [u8] {
    let named = |index: usize| {
        let at = HEADER + index * ENTRY;
        file.get(at..at + NAME).is_some_and(|entry| {
            entry.starts_with(name.as_bytes()) && entry.get(name.len()).is_none_or(|&b| b == 0)
        })
    };
    (0..word(file, 8))
        .find(|&index| named(index))
        .and_then(|index| entry(file, index))
        .filter(|&(_, rows, row)| row == size && rows.len() % size == 0)
        .map_or(&[], |(_, rows, _)| rows)
}

/// The rows of section `name` of `file` ([`section`]), kept in `rows`: one function for every
/// table's first read, where one for each row type and part would be compiled.
#[inline(never)]
fn keep(
    rows: &'static std::sync::OnceLock<&'static [u8]>,
    file: &'static [u8],
    name: &str,
    size: usize,
) -> &'static [u8] {
    rows.get_or_init(|| section(file, name, size))
}

/// A table of rows of type `T`, read in place.
pub(crate) struct Table<T> {
    rows: &'static [u8],
    row: PhantomData<fn() -> T>,
}

impl<T> Clone for Table<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Table<T> {}

impl<T: Field> Table<T> {
    /// Section `name` of part `P` (empty where it is missing or its rows are not `T`'s
    /// size), found at the first call and kept in `rows` ([`table!`](crate::table::table!)).
    pub(crate) fn kept<P: Part>(
        rows: &'static std::sync::OnceLock<&'static [u8]>,
        name: &str,
    ) -> Table<T> {
        Table {
            rows: match rows.get() {
                Some(kept) => kept,
                None => keep(rows, P::bytes(), name, T::SIZE),
            },
            row: PhantomData,
        }
    }

    /// No rows.
    pub(crate) fn empty() -> Table<T> {
        Table {
            rows: &[],
            row: PhantomData,
        }
    }

    /// How many rows it has.
    pub(crate) fn len(self) -> usize {
        self.rows.len() / T::SIZE
    }

    /// Row `index`.
    pub(crate) fn get(self, index: usize) -> Option<T> {
        let at = index.checked_mul(T::SIZE)?;
        let bytes = self.rows.get(at..at + T::SIZE)?;
        Some(T::read(&mut Reader { bytes }))
    }

    /// Every row, in order.
    pub(crate) fn iter(self) -> impl ExactSizeIterator<Item = T> + Clone {
        self.rows
            .chunks_exact(T::SIZE)
            .map(|bytes| T::read(&mut Reader { bytes }))
    }

    /// Rows `start..start + length` (none where that passes the end).
    pub(crate) fn range(self, (start, length): (u16, u16)) -> Table<T> {
        let (start, end) = (
            usize::from(start) * T::SIZE,
            (usize::from(start) + usize::from(length)) * T::SIZE,
        );
        Table {
            rows: self.rows.get(start..end).unwrap_or_default(),
            row: PhantomData,
        }
    }

    /// Binary search of a table sorted by `key`, as [`slice::binary_search_by_key`].
    pub(crate) fn binary_search_by_key<K: Ord>(
        self,
        key: &K,
        f: impl Fn(&T) -> K,
    ) -> Result<usize, usize> {
        self.binary_search_by(|row| f(row).cmp(key))
    }

    /// Binary search of a table sorted as `compare` orders its rows against the one sought,
    /// as [`slice::binary_search_by`].
    pub(crate) fn binary_search_by(
        self,
        compare: impl Fn(&T) -> std::cmp::Ordering,
    ) -> Result<usize, usize> {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            let Some(row) = self.get(middle) else {
                return Err(low);
            };
            match compare(&row) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Ok(middle),
            }
        }
        Err(low)
    }
}

/// Every section of `file`: name, row size and number of rows (for the tests).
#[cfg(test)]
fn sections(file: &'static [u8]) -> Vec<(String, usize, usize)> {
    (0..word(file, 8))
        .filter_map(|i| entry(file, i))
        .map(|(name, rows, size)| {
            (
                String::from_utf8_lossy(name).into_owned(),
                size,
                rows.len() / size.max(1),
            )
        })
        .collect()
}

/// The shipped tables' files as this build holds them, by name (`models.tables`,
/// `models.strings`, ...): what `counterhal-gen tables` compares a new writing with.
#[doc(hidden)]
pub fn shipped_tables() -> Vec<(String, &'static [u8])> {
    parts()
        .into_iter()
        .flat_map(|(name, tables, strings)| {
            [
                (format!("{name}.tables"), tables),
                (format!("{name}.strings"), strings.as_bytes()),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_file_has_its_strings_and_every_section_whole() {
        for (part, file, strings) in parts() {
            let sections = sections(file);
            assert!(!sections.is_empty(), "{part}");
            for (name, size, _) in &sections {
                assert!(*size > 0, "{part}: section `{name}` has rows of no bytes");
            }
            assert!(!strings.is_empty(), "{part}");
        }
    }

    #[test]
    fn a_row_reads_back_as_written_little_endian() {
        row! {
            /// A row of each field type.
            struct Sample { a: u8, b: u16, c: (u32, u64), d: bool, e: Option<Str<Models>> }
        }
        let bytes = [
            1, 2, 1, 3, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff,
        ];
        assert_eq!(Sample::SIZE, bytes.len());
        let row = Sample::read(&mut Reader { bytes: &bytes });
        assert_eq!(
            (row.a, row.b, row.c, row.d, row.e),
            (1, 0x102, (3, 4), true, None)
        );
        // A row cut short reads its missing bytes as zeros, not past its end.
        let row = Sample::read(&mut Reader { bytes: &bytes[..3] });
        assert_eq!((row.b, row.c), (0x102, (0, 0)));
    }
}
