//! What the build's writers of compiled-in tables share: rows written once each, lists of
//! them written once each, and the `u16` a record keeps an index or a length in.

use std::collections::HashMap;
use std::hash::Hash;

/// Rows written once each (a row is its Rust text), by their index.
#[derive(Default)]
pub(crate) struct Rows {
    pub(crate) rows: Vec<String>,
    at: HashMap<String, usize>,
}

impl Rows {
    /// The index of `row`, added if it is new.
    pub(crate) fn add(&mut self, row: String) -> usize {
        self.add_keyed(row.clone(), row)
    }

    /// The index of the row with key `key`, `row` added if the key is new (a row whose
    /// table beside it holds more of what makes it itself).
    pub(crate) fn add_keyed(&mut self, key: String, row: String) -> usize {
        if let Some(&at) = self.at.get(&key) {
            return at;
        }
        self.rows.push(row);
        self.at.insert(key, self.rows.len() - 1);
        self.rows.len() - 1
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

/// `n` as the `u16` of a compiled-in record, which the shipped data keeps below 65,536 (the
/// build fails, naming `what`, past it: widen the record's field).
pub(crate) fn short(n: usize, what: &str) -> u16 {
    u16::try_from(n)
        .unwrap_or_else(|_| panic!("{what} is {n}: past the u16 of its compiled-in record"))
}
