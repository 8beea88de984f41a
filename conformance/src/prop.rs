//! Property tests: a property checked on many generated inputs, the failing input shrunk to a
//! small one, and the seed that reproduces it, with no dependency beyond std.
//!
//! Every property runs [`cases`] inputs from a seed fixed per property, so `cargo test` is
//! the same on every run; `COUNTERHAL_PROP_CASES` (more inputs) and `COUNTERHAL_PROP_SEED`
//! (other inputs) turn the same tests into a fuzzer for longer runs (`scripts/fuzz`).
//!
//! ```
//! use counterhal_conformance::prop::{self, Gen};
//!
//! prop::check(
//!     "addition commutes",
//!     |g: &mut Gen| (g.u64(), g.u64()),
//!     prop::no_shrink,
//!     |&(a, b)| {
//!         (a.wrapping_add(b) == b.wrapping_add(a)).then_some(()).ok_or("differs".into())
//!     },
//! );
//! ```

use std::fmt::Debug;

/// How many inputs a property gets: `COUNTERHAL_PROP_CASES`, else 256.
pub fn cases() -> u64 {
    std::env::var("COUNTERHAL_PROP_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256)
}

/// A deterministic source of values (xorshift64*): the same seed, the same inputs.
#[derive(Clone, Debug)]
pub struct Gen {
    state: u64,
}

impl Gen {
    /// A generator starting from `seed` (0 is replaced, as xorshift needs a nonzero state).
    pub fn new(seed: u64) -> Self {
        Self { state: seed.max(1) }
    }

    /// Any `u64`.
    pub fn u64(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.u64() % n }
    }

    /// An index into something of length `len` (0 when it is empty).
    pub fn index(&mut self, len: usize) -> usize {
        usize::try_from(self.below(len as u64)).unwrap_or(0)
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// A value that favours the edges: 0, 1, the maximum and powers of two around them as
    /// often as anything else.
    pub fn edgy_u64(&mut self) -> u64 {
        match self.below(6) {
            0 => 0,
            1 => u64::MAX - self.below(3),
            2 => 1u64 << self.below(64),
            3 => (1u64 << self.below(64)).wrapping_sub(1),
            _ => self.u64(),
        }
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// A string of up to `max` pieces from `pieces`.
    pub fn string_of(&mut self, pieces: &[&str], max: usize) -> String {
        let n = self.index(max + 1);
        (0..n).map(|_| *self.pick(pieces)).collect()
    }
}

/// The seed a property starts from: `COUNTERHAL_PROP_SEED` mixed with the property's name
/// (so properties do not share inputs), else the name alone.
fn seed_for(name: &str) -> u64 {
    let base: u64 = std::env::var("COUNTERHAL_PROP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // FNV-1a over the name.
    name.bytes()
        .fold(0xcbf2_9ce4_8422_2325 ^ base, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// No smaller candidates: for inputs where shrinking would not help the reader.
pub fn no_shrink<T>(_: &T) -> Vec<T> {
    Vec::new()
}

/// Smaller strings than `text`: halves, then each character removed.
#[allow(clippy::ptr_arg)] // a property over `String` hands its shrinker a `&String`
pub fn shrink_string(text: &String) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut smaller = Vec::new();
    if chars.len() > 1 {
        let half = chars.len() / 2;
        smaller.push(chars[..half].iter().collect());
        smaller.push(chars[half..].iter().collect());
    }
    for skip in 0..chars.len() {
        let mut shorter = chars.clone();
        shorter.remove(skip);
        smaller.push(shorter.into_iter().collect());
    }
    smaller
}

/// Checks `property` on [`cases`] inputs from `generate`; on a failure, shrinks the input
/// through `shrink` (keeping any smaller candidate that still fails) and panics naming the
/// property, the smallest failing input, why it failed, and how to reproduce it.
///
/// # Panics
/// When the property fails for some input (including by panicking itself).
pub fn check<T: Debug>(
    name: &str,
    mut generate: impl FnMut(&mut Gen) -> T,
    shrink: impl Fn(&T) -> Vec<T>,
    property: impl Fn(&T) -> Result<(), String>,
) {
    let seed = seed_for(name);
    let mut source = Gen::new(seed);
    let run = |input: &T| -> Result<(), String> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| property(input)))
            .unwrap_or_else(|panic| Err(format!("panicked: {}", panic_text(&panic))))
    };
    for case in 0..cases() {
        let input = generate(&mut source);
        let Err(why) = run(&input) else {
            continue;
        };
        let (smallest, why) = shrunk(input, why, &shrink, &run);
        panic!(
            "property `{name}` fails for {smallest:?}: {why}\n(case {case} of seed {seed}; \
             rerun with COUNTERHAL_PROP_SEED set as this run had it)"
        );
    }
}

/// The smallest failing input reachable by shrinking, with why it fails (at most 1,000
/// steps, so a shrink function that never ends cannot hang the test).
fn shrunk<T>(
    mut input: T,
    mut why: String,
    shrink: &impl Fn(&T) -> Vec<T>,
    run: &impl Fn(&T) -> Result<(), String>,
) -> (T, String) {
    for _ in 0..1_000 {
        let smaller = shrink(&input)
            .into_iter()
            .find_map(|candidate| run(&candidate).err().map(|w| (candidate, w)));
        match smaller {
            Some((candidate, w)) => (input, why) = (candidate, w),
            None => break,
        }
    }
    (input, why)
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_property_is_shrunk_and_named() {
        let result = std::panic::catch_unwind(|| {
            check(
                "strings shorter than 3",
                |g| g.string_of(&["a", "b", "cd"], 8),
                shrink_string,
                |s| {
                    (s.len() < 3)
                        .then_some(())
                        .ok_or(format!("length {}", s.len()))
                },
            );
        });
        let message = panic_text(&result.unwrap_err());
        assert!(message.contains("strings shorter than 3"), "{message}");
        // Shrunk to a smallest failure: three characters.
        assert!(message.contains("length 3"), "{message}");
    }

    #[test]
    fn a_panicking_property_fails_with_its_message() {
        let result = std::panic::catch_unwind(|| {
            check(
                "never zero",
                |g| g.below(4),
                no_shrink,
                |&n| {
                    assert_ne!(n, 0, "zero");
                    Ok(())
                },
            );
        });
        let message = panic_text(&result.unwrap_err());
        assert!(
            message.contains("panicked") && message.contains("zero"),
            "{message}"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_inputs() {
        let mut a = Gen::new(seed_for("x"));
        let mut b = Gen::new(seed_for("x"));
        let mut c = Gen::new(seed_for("y"));
        let (xs, ys, zs): (Vec<u64>, Vec<u64>, Vec<u64>) =
            (0..8).map(|_| (a.u64(), b.u64(), c.u64())).fold(
                (vec![], vec![], vec![]),
                |(mut x, mut y, mut z), (p, q, r)| {
                    x.push(p);
                    y.push(q);
                    z.push(r);
                    (x, y, z)
                },
            );
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }
}
