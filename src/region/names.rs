//! The region names a thread has used, found by hash: a begin or an end compares a bounded
//! number of names however many the thread knows (80,000 distinct names once took 40 s
//! when each lookup compared every name), and a known name is found without allocating.

use std::borrow::Borrow;
use std::cell::Cell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

thread_local! {
    /// How many region names this thread has compared while looking one up: the measure the
    /// tests bound (no destructor, so it lives as long as the thread).
    // Const already: clippy's missing_const_for_thread_local misreads thread_local!'s expansion
    // on targets that keep thread locals in emulated TLS (OpenBSD), and the allow says so.
    #[allow(clippy::missing_const_for_thread_local)]
    static NAMES_COMPARED: Cell<u64> = const { Cell::new(0) };
}

/// How many region names the calling thread has compared so far.
#[cfg_attr(not(test), allow(dead_code))]
pub(super) fn names_compared() -> u64 {
    NAMES_COMPARED.with(Cell::get)
}

/// Counts one comparison of region names; its result.
fn compared(equal: bool) -> bool {
    NAMES_COMPARED.with(|count| count.set(count.get() + 1));
    equal
}

/// A region name's text, owned ([`NameKey`]) or borrowed (`&str`), so the table keyed by
/// owned names is searched with a borrowed one.
trait NameText {
    fn text(&self) -> &str;
}

impl NameText for &str {
    fn text(&self) -> &str {
        self
    }
}

/// A region name as the table owns it.
struct NameKey(Box<str>);

impl NameText for NameKey {
    fn text(&self) -> &str {
        &self.0
    }
}

impl Hash for dyn NameText + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.text().hash(state);
    }
}

impl PartialEq for dyn NameText + '_ {
    fn eq(&self, other: &Self) -> bool {
        compared(self.text() == other.text())
    }
}

impl Eq for dyn NameText + '_ {}

impl Hash for NameKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.text().hash(state);
    }
}

impl PartialEq for NameKey {
    fn eq(&self, other: &Self) -> bool {
        compared(self.0 == other.0)
    }
}

impl Eq for NameKey {}

impl<'a> Borrow<dyn NameText + 'a> for NameKey {
    fn borrow(&self) -> &(dyn NameText + 'a) {
        self
    }
}

/// The names a thread has used, each with its index (an open region names one by index)
/// and whether it was ended at least once (for the thread count).
#[derive(Default)]
pub(super) struct Names {
    index: HashMap<NameKey, usize>,
    ended: Vec<bool>,
}

impl Names {
    /// The index of `name`, if this thread has used it.
    pub(super) fn find(&self, name: &str) -> Option<usize> {
        self.index.get(&name as &dyn NameText).copied()
    }

    /// The index of `name`, added on first use.
    pub(super) fn index_of(&mut self, name: &str) -> usize {
        if let Some(index) = self.find(name) {
            return index;
        }
        let index = self.ended.len();
        self.index.insert(NameKey(name.into()), index);
        self.ended.push(false);
        index
    }

    /// Marks name `index` ended; whether it was its first end on this thread.
    pub(super) fn first_end(&mut self, index: usize) -> bool {
        !std::mem::replace(&mut self.ended[index], true)
    }
}
