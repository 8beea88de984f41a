//! The one pool of strings the compiled-in tables share (the models', the metrics' and
//! libpfm4's): every string once, laid out by the build (`build/pool.rs`), a string found
//! inside a longer one taking no byte of its own. A row names a string as a [`Str`].

include!(concat!(env!("OUT_DIR"), "/pool.rs"));

/// A string of the pool: its offset and length, packed (the length in the low
/// `LENGTH_BITS`). `Str(0)` is the empty string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Str(pub(crate) u32);

impl Str {
    /// Its text.
    pub(crate) fn text(self) -> &'static str {
        let offset = (self.0 >> LENGTH_BITS) as usize;
        POOL.get(offset..offset + self.len()).unwrap_or_default()
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
