//! A hash map for the event tables' name lookups, with a hasher cheaper than the standard
//! library's SipHash: the multiply-rotate hash of rustc's own `FxHasher` (Firefox's), one
//! multiplication per word. Its keys are event names from the database and the caller; a
//! SipHash's resistance to chosen collisions buys nothing there (the tables are fixed once
//! loaded, and a user's own file can only slow its own loading), and `list` looks names up
//! tens of thousands of times.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A [`HashMap`] with [`FastHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A [`HashSet`] with [`FastHasher`].
// The loader's alone (the `events-file` feature).
#[cfg_attr(not(feature = "events-file"), allow(dead_code))]
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

/// The Fx hash: `hash = (hash.rotl(5) ^ word) * K` for the input's length, then each 8-byte
/// word of it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FastHasher {
    hash: u64,
}

/// The multiplier of rustc's `FxHasher` (from Firefox's hash).
const K: u64 = 0x517c_c1b7_2722_0a95;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        // The length first: a last word padded with zeros would otherwise hash `A` as `A\0`.
        self.add(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names that differ only in their last bytes, or by a length the padding hides, land on
    /// different hashes and are all found (a `str` hashes its bytes then a 0xff byte).
    #[test]
    fn names_that_share_prefixes_are_kept_apart() {
        let names = [
            "INST_RETIRED.ANY",
            "INST_RETIRED.ANY_P",
            "INST_RETIRED.ANY\0",
            "A",
            "A\0",
            "",
            "12345678",
            "123456789",
        ];
        let mut map: FastMap<String, usize> = FastMap::default();
        for (i, name) in names.iter().enumerate() {
            map.insert(name.to_string(), i);
        }
        assert_eq!(map.len(), names.len());
        for (i, name) in names.iter().enumerate() {
            assert_eq!(map.get(*name), Some(&i), "{name:?}");
        }
        let hash = |text: &str| {
            let mut hasher = FastHasher::default();
            std::hash::Hash::hash(text, &mut hasher);
            hasher.finish()
        };
        assert_ne!(hash("A"), hash("A\0"));
        assert_ne!(hash("12345678"), hash("123456789"));
    }
}
