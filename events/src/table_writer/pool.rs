//! The one pool of strings the shipped tables share (section `pool`): the tables name every
//! string as a [`Str`](crate::table::Str), its offset and length in the pool packed in 32 bits.
//!
//! Each part of the tables has a pool of its own. The rows are written before the pool is laid
//! out: [`Pool::string`] gives the string's id,
//! which `Tables::finish` (in `write.rs`) replaces with its packed `Str` once every
//! string is known. The pool is laid out longest string first, and a string found anywhere in
//! the text laid so far (`ANY` in `BUS_TRANS_IO:ANY`) takes no byte of its own.

use std::collections::HashMap;

use crate::table::LENGTH_BITS;

/// The strings the rows name, each once, in the order first named.
#[derive(Default)]
pub(crate) struct Pool {
    ids: HashMap<String, usize>,
    strings: Vec<String>,
}

impl Pool {
    /// `s` as its id, resolved when the pool is laid out.
    pub(crate) fn string(&mut self, s: &str) -> u32 {
        let id = match self.ids.get(s) {
            Some(&id) => id,
            None => {
                self.strings.push(s.to_string());
                self.ids.insert(s.to_string(), self.strings.len() - 1);
                self.strings.len() - 1
            }
        };
        u32::try_from(id).expect("fewer than 4 billion strings")
    }

    /// The pool laid out: its text, and each string's packed `Str`.
    pub(crate) fn lay_out(self) -> Laid {
        let mut order: Vec<usize> = (0..self.strings.len()).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (&self.strings[a], &self.strings[b]);
            b.len().cmp(&a.len()).then_with(|| a.cmp(b))
        });
        let mut text = Text::default();
        let mut packed = vec![0; self.strings.len()];
        for id in order {
            let s = &self.strings[id];
            let offset = text.find(s.as_bytes()).unwrap_or_else(|| text.push(s));
            let length = u32::try_from(s.len()).expect("a string below 4 GiB");
            assert!(
                length < 1 << LENGTH_BITS,
                "a shipped string of {length} bytes: `Str` holds {LENGTH_BITS} bits of length \
                 (widen LENGTH_BITS in events/src/table.rs): {s:?}"
            );
            assert!(
                offset < 1 << (32 - LENGTH_BITS),
                "the pool of shipped strings passed {} bytes: `Str` holds {} bits of offset",
                1u32 << (32 - LENGTH_BITS),
                32 - LENGTH_BITS
            );
            packed[id] = offset << LENGTH_BITS | length;
        }
        Laid {
            text: String::from_utf8(text.bytes).expect("whole strings laid end to end"),
            packed,
        }
    }
}

/// The pool's text as it is laid, with where each window of up to four bytes first starts,
/// and every start of each four-byte window: a string is looked up by its first four bytes.
#[derive(Default)]
struct Text {
    bytes: Vec<u8>,
    short: HashMap<Vec<u8>, u32>,
    starts: HashMap<[u8; 4], Vec<u32>>,
}

impl Text {
    /// Where `s` first lies in the text, if it does.
    fn find(&self, s: &[u8]) -> Option<u32> {
        if s.len() < 4 {
            return if s.is_empty() {
                Some(0)
            } else {
                self.short.get(s).copied()
            };
        }
        let key = [s[0], s[1], s[2], s[3]];
        self.starts.get(&key)?.iter().copied().find(|&at| {
            self.bytes
                .get(at as usize..at as usize + s.len())
                .is_some_and(|window| window == s)
        })
    }

    /// Appends `s`, returning its offset.
    fn push(&mut self, s: &str) -> u32 {
        let offset = u32::try_from(self.bytes.len()).expect("a pool below 4 GiB");
        // The windows that end in the new bytes (a string may straddle two laid ones).
        let first = self.bytes.len().saturating_sub(3);
        self.bytes.extend_from_slice(s.as_bytes());
        for start in first..self.bytes.len() {
            for length in 1..=3 {
                if let Some(window) = self.bytes.get(start..start + length) {
                    let at = u32::try_from(start).expect("a pool below 4 GiB");
                    self.short.entry(window.to_vec()).or_insert(at);
                }
            }
            if let Some(window) = self.bytes.get(start..start + 4) {
                let at = u32::try_from(start).expect("a pool below 4 GiB");
                let key = [window[0], window[1], window[2], window[3]];
                self.starts.entry(key).or_default().push(at);
            }
        }
        offset
    }
}

/// The laid-out pool: its text, and each string's packed `Str` by id.
pub(crate) struct Laid {
    pub(crate) text: String,
    pub(crate) packed: Vec<u32>,
}
