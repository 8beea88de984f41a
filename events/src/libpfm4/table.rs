//! libpfm4's x86 core tables as generated (`data/generated/libpfm4/PMU.toml`, by
//! `counterhal-gen libpfm4-grammar` from the libpfm4 snapshot each file names), compiled in:
//! the build reads and checks each file with the one reader of them (`file.rs`) and writes
//! static records (`build/libpfm4.rs`), which [`Pmu`], [`Event`] and [`Umask`] are. Nothing
//! here parses, allocates or runs at start-up.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

pub(crate) use super::file::{AMD_MODIFIERS, INTEL_MODIFIERS, flag};

/// libpfm4's other names of a PMU's table: `amd64_fam17h` is its deprecated name of Zen 1.
const OTHER_NAMES: [(&str, &str); 1] = [("amd64_fam17h", "amd64_fam17h_zen1")];

/// A string of the pool: its offset and length in bytes. Length 0 is a missing equivalence
/// (no file gives an empty one).
#[derive(Clone, Copy, Debug)]
struct Str(u32, u32);

/// One libpfm4 PMU's table.
#[derive(Debug)]
pub(crate) struct Pmu {
    name: Str,
    /// An Intel table (`pfm_intel_x86_encode_gen`); else AMD's (`pfm_amd64_get_encoding`).
    pub intel: bool,
    /// It takes a raw unit mask (`:0x..`, `PFMLIB_PMU_FL_RAW_UMASK`).
    pub raw_umask: bool,
    /// Edge needs a counter mask (`INTEL_X86_PMU_FL_ECMASK`).
    pub ecmask: bool,
    /// Its events: `EVENTS[start..start + length]`.
    events: (u32, u32),
}

/// One event.
#[derive(Debug)]
pub(crate) struct Event {
    name: Str,
    equiv: Str,
    /// The event code (Intel: with a unit mask in bits 8-15; AMD: bits 8-11 go to 32-35).
    pub code: u64,
    /// The counters it counts on (bits 0-31 general, 32 on fixed), 0 for any.
    pub cntmsk: u64,
    /// How many unit-mask groups it has (at most 31: the build checks).
    pub ngrp: u32,
    /// The modifiers it takes, as bits of their indices in [`INTEL_MODIFIERS`] or
    /// [`AMD_MODIFIERS`].
    pub modmsk: u32,
    /// The modifiers it requires, as `modmsk`.
    pub modmsk_req: u32,
    /// Its [`flag`]s.
    pub flags: u32,
    /// Its unit masks: `UMASKS[start..start + length]`.
    umasks: (u32, u32),
}

/// One unit mask.
#[derive(Debug)]
pub(crate) struct Umask {
    name: Str,
    equiv: Str,
    /// Its code (Intel: shifted left by 8, with the second register's bits above).
    pub code: u64,
    /// Its group (bits 0-7) and, with `GRP_REQ`, the group it requires (bits 8-15).
    pub grpid: u32,
    /// Its [`flag`]s.
    pub flags: u32,
    /// The modifiers it hard-wires, as [`Event::modmsk`].
    pub modhw: u32,
    /// The modifiers it requires, as [`Event::modmsk`].
    pub modmsk_req: u32,
    /// The counters it counts on, 0 for the event's.
    pub cntmsk: u64,
}

include!(concat!(env!("OUT_DIR"), "/libpfm4.rs"));

fn text(s: Str) -> &'static str {
    POOL.get(s.0 as usize..s.0 as usize + s.1 as usize)
        .unwrap_or_default()
}

fn equiv(s: Str) -> Option<&'static str> {
    Some(text(s)).filter(|e| !e.is_empty())
}

fn range<T>(items: &'static [T], (start, length): (u32, u32)) -> &'static [T] {
    items
        .get(start as usize..start as usize + length as usize)
        .unwrap_or_default()
}

impl Pmu {
    /// libpfm4's PMU name.
    pub fn name(&self) -> &'static str {
        text(self.name)
    }

    /// The events, in libpfm4's order.
    pub fn events(&self) -> &'static [Event] {
        range(&EVENTS, self.events)
    }
}

impl Event {
    /// The event's name.
    pub fn name(&self) -> &'static str {
        text(self.name)
    }

    /// The event and attributes it stands for (`.equiv`), if any.
    pub fn equiv(&self) -> Option<&'static str> {
        equiv(self.equiv)
    }

    /// Its unit masks, in libpfm4's order.
    pub fn umasks(&self) -> &'static [Umask] {
        range(&UMASKS, self.umasks)
    }

    /// Whether it has [`flag`] `flag`.
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}

impl Umask {
    /// The unit mask's name.
    pub fn name(&self) -> &'static str {
        text(self.name)
    }

    /// The attributes it stands for (`.uequiv`), if any.
    pub fn equiv(&self) -> Option<&'static str> {
        equiv(self.equiv)
    }

    /// Whether it has [`flag`] `flag`.
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}

/// Whether modifier `index` of a PMU's kind takes a number (else it is a boolean).
pub(crate) fn integer_modifier(intel: bool, index: u8) -> bool {
    let names: &[&str] = if intel {
        &INTEL_MODIFIERS
    } else {
        &AMD_MODIFIERS
    };
    matches!(
        names.get(usize::from(index)).copied(),
        Some("c" | "ldlat" | "fe_thres")
    )
}

/// Which tables [`pmu`] has given, by index in [`PMU_NAMES`] (for the test that a program
/// naming no libpfm4 event looks none up).
static USED: [AtomicBool; PMU_NAMES.len()] = [const { AtomicBool::new(false) }; PMU_NAMES.len()];

/// `known` against `name` in lower case (libpfm4's names are), without making the lower-case
/// copy (a listing asks for each of a model's unit masks).
fn compare_lowered(known: &str, name: &str) -> Ordering {
    known
        .bytes()
        .cmp(name.bytes().map(|b| b.to_ascii_lowercase()))
}

/// The libpfm4 PMU named `name` (case-insensitive, as libpfm4 compares PMU names), or None
/// when libpfm4 has no x86 core PMU of that name.
pub(crate) fn pmu(name: &str) -> Option<&'static Pmu> {
    let name = OTHER_NAMES
        .iter()
        .find(|(other, _)| compare_lowered(other, name).is_eq())
        .map_or(name, |(_, table)| table);
    let index = PMU_NAMES
        .binary_search_by(|known| compare_lowered(known, name))
        .ok()?;
    if let Some(used) = USED.get(index)
        && !used.load(Relaxed)
    {
        used.store(true, Relaxed);
    }
    PMUS.get(index)
}

/// How many tables [`pmu`] has given in this process.
pub(crate) fn used() -> usize {
    USED.iter().filter(|used| used.load(Relaxed)).count()
}
