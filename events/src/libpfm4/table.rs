//! libpfm4's x86 core tables as generated (`data/generated/libpfm4/PMU.toml`, by
//! `counterhal-gen libpfm4-grammar` from the libpfm4 snapshot each file names), compiled in:
//! the build reads and checks each file with the one reader of them (`file.rs`) and writes
//! static records (`build/libpfm4.rs`), which [`Pmu`], [`Event`] and [`Umask`] are. Nothing
//! here parses, allocates or runs at start-up.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

pub(crate) use super::file::{AMD_MODIFIERS, INTEL_MODIFIERS, flag};
use crate::pool::Str;

/// libpfm4's other names of a PMU's table: `amd64_fam17h` is its deprecated name of Zen 1.
const OTHER_NAMES: [(&str, &str); 1] = [("amd64_fam17h", "amd64_fam17h_zen1")];

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
    /// Its events: `EVENT_LISTS[start..start + length]`, indices of `EVENTS`.
    events: (u16, u16),
}

/// One event; its code is an index of `VALUES`, its attributes of `EVENT_ATTRS`, its
/// equivalence of `EQUIVS`.
#[derive(Debug)]
pub(crate) struct Event {
    name: Str,
    code: u16,
    attrs: u16,
    equiv: u16,
    /// Its unit masks: `UMASKS[start..start + length]`.
    umasks: (u16, u16),
}

/// What many events share: counters (an index of `VALUES`), modifiers, flags and groups.
#[derive(Debug)]
struct EventAttrs {
    cntmsk: u16,
    modmsk: u16,
    modmsk_req: u16,
    flags: u16,
    ngrp: u8,
}

/// One unit mask; its code is an index of `VALUES`, its attributes of `UMASK_ATTRS`, its
/// equivalence of `EQUIVS`.
#[derive(Debug)]
pub(crate) struct Umask {
    name: Str,
    code: u16,
    attrs: u16,
    flags: u16,
    equiv: u16,
}

/// What many unit masks share: counters (an index of `VALUES`), group and modifiers.
#[derive(Debug)]
struct UmaskAttrs {
    cntmsk: u16,
    grpid: u16,
    modhw: u16,
    modmsk_req: u16,
}

include!(concat!(env!("OUT_DIR"), "/libpfm4.rs"));

/// Equivalence `index` of `EQUIVS`; 0, the empty string, is none (no file gives an empty one).
fn equiv(index: u16) -> Option<&'static str> {
    let text = EQUIVS.get(usize::from(index)).map(|s| s.text());
    text.filter(|e| !e.is_empty())
}

/// Value `index` of `VALUES` (the build wrote every index the records name).
fn value(index: u16) -> u64 {
    VALUES.get(usize::from(index)).copied().unwrap_or_default()
}

fn range<T>(items: &'static [T], (start, length): (u16, u16)) -> &'static [T] {
    let start = usize::from(start);
    items
        .get(start..start + usize::from(length))
        .unwrap_or_default()
}

// What stands in for a row an index misses (none does: the build writes every row the
// records name).
const NO_EVENT: Event = Event {
    name: Str(0),
    code: 0,
    attrs: 0,
    equiv: 0,
    umasks: (0, 0),
};
const NO_EVENT_ATTRS: EventAttrs = EventAttrs {
    cntmsk: 0,
    modmsk: 0,
    modmsk_req: 0,
    flags: 0,
    ngrp: 0,
};
const NO_UMASK_ATTRS: UmaskAttrs = UmaskAttrs {
    cntmsk: 0,
    grpid: 0,
    modhw: 0,
    modmsk_req: 0,
};

impl Pmu {
    /// libpfm4's PMU name.
    pub fn name(&self) -> &'static str {
        self.name.text()
    }

    /// The events, in libpfm4's order.
    pub fn events(&self) -> impl ExactSizeIterator<Item = &'static Event> + Clone {
        range(&EVENT_LISTS, self.events)
            .iter()
            .map(|&i| EVENTS.get(usize::from(i)).unwrap_or(&NO_EVENT))
    }
}

impl Event {
    /// The event's name.
    pub fn name(&self) -> &'static str {
        self.name.text()
    }

    /// Whether its name is `name` but for ASCII case.
    pub fn is_named(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }

    /// The event and attributes it stands for (`.equiv`), if any.
    pub fn equiv(&self) -> Option<&'static str> {
        equiv(self.equiv)
    }

    /// Its unit masks, in libpfm4's order.
    pub fn umasks(&self) -> &'static [Umask] {
        range(&UMASKS, self.umasks)
    }

    /// The event code (Intel: with a unit mask in bits 8-15; AMD: bits 8-11 go to 32-35).
    pub fn code(&self) -> u64 {
        value(self.code)
    }

    fn attrs(&self) -> &'static EventAttrs {
        EVENT_ATTRS
            .get(usize::from(self.attrs))
            .unwrap_or(&NO_EVENT_ATTRS)
    }

    /// The counters it counts on (bits 0-31 general, 32 on fixed), 0 for any.
    pub fn cntmsk(&self) -> u64 {
        value(self.attrs().cntmsk)
    }

    /// How many unit-mask groups it has (at most 31: the build checks).
    pub fn ngrp(&self) -> u32 {
        u32::from(self.attrs().ngrp)
    }

    /// The modifiers it takes, as bits of their indices in [`INTEL_MODIFIERS`] or
    /// [`AMD_MODIFIERS`].
    pub fn modmsk(&self) -> u32 {
        u32::from(self.attrs().modmsk)
    }

    /// The modifiers it requires, as [`Event::modmsk`].
    pub fn modmsk_req(&self) -> u32 {
        u32::from(self.attrs().modmsk_req)
    }

    /// Its [`flag`]s.
    pub fn flags(&self) -> u32 {
        u32::from(self.attrs().flags)
    }

    /// Whether it has [`flag`] `flag`.
    pub fn has(&self, flag: u32) -> bool {
        self.flags() & flag != 0
    }
}

impl Umask {
    /// The unit mask's name.
    pub fn name(&self) -> &'static str {
        self.name.text()
    }

    /// The attributes it stands for (`.uequiv`), if any.
    pub fn equiv(&self) -> Option<&'static str> {
        equiv(self.equiv)
    }

    /// Its code (Intel: shifted left by 8, with the second register's bits above).
    pub fn code(&self) -> u64 {
        value(self.code)
    }

    fn attrs(&self) -> &'static UmaskAttrs {
        UMASK_ATTRS
            .get(usize::from(self.attrs))
            .unwrap_or(&NO_UMASK_ATTRS)
    }

    /// The counters it counts on, 0 for the event's.
    pub fn cntmsk(&self) -> u64 {
        value(self.attrs().cntmsk)
    }

    /// Its group (bits 0-7) and, with `GRP_REQ`, the group it requires (bits 8-15).
    pub fn grpid(&self) -> u32 {
        u32::from(self.attrs().grpid)
    }

    /// The modifiers it hard-wires, as [`Event::modmsk`].
    pub fn modhw(&self) -> u32 {
        u32::from(self.attrs().modhw)
    }

    /// The modifiers it requires, as [`Event::modmsk`].
    pub fn modmsk_req(&self) -> u32 {
        u32::from(self.attrs().modmsk_req)
    }

    /// Its [`flag`]s.
    pub fn flags(&self) -> u32 {
        u32::from(self.flags)
    }

    /// Whether it has [`flag`] `flag`.
    pub fn has(&self, flag: u32) -> bool {
        self.flags() & flag != 0
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
