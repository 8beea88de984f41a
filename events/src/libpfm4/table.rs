//! libpfm4's x86 core tables as generated (`data/generated/libpfm4/PMU.toml`, by
//! `counterhal-gen libpfm4-grammar` from the libpfm4 snapshot each file names), as rows of the
//! shipped tables: `counterhal-gen tables` reads and checks each file with the one reader of
//! them (`file.rs`) and writes the rows (`table_writer/libpfm4.rs`), which [`Pmu`], [`Event`]
//! and [`Umask`] are. Nothing here parses, allocates or runs at start-up.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::table::{Models, Table};

/// A string of this module's part of the shipped tables.
type Str = crate::table::Str<Models>;

/// Unit-mask and event flags (libpfm4's `INTEL_X86_*` and `AMD64_FL_*`, by name), as bits of
/// an event's and a unit mask's `flags`.
pub(crate) mod flag {
    /// `NCOMBO`: the unit mask combines with no other of its group.
    pub const NCOMBO: u32 = 1 << 0;
    /// `DFL`: the unit mask is its group's default.
    pub const DFL: u32 = 1 << 1;
    /// `GRP_EXCL`: the event takes unit masks of one group only.
    pub const GRP_EXCL: u32 = 1 << 2;
    /// `NHM_OFFCORE`: an offcore-response event (its unit masks go to the second register).
    pub const NHM_OFFCORE: u32 = 1 << 3;
    /// `EXCL_GRP_GT`: the unit mask excludes the groups after its own.
    pub const EXCL_GRP_GT: u32 = 1 << 4;
    /// `CODE_OVERRIDE`: the unit mask's low byte replaces the event code.
    pub const CODE_OVERRIDE: u32 = 1 << 5;
    /// `LDLAT`: a load-latency unit mask (the threshold goes to the second register).
    pub const LDLAT: u32 = 1 << 6;
    /// `GRP_DFL_NONE`: the unit mask's group may stay empty (no default is added).
    pub const GRP_DFL_NONE: u32 = 1 << 7;
    /// `FRONTEND`: a precise frontend event (its unit masks go to the second register).
    pub const FRONTEND: u32 = 1 << 8;
    /// `FETHR`: the unit mask takes the frontend threshold (`fe_thres`).
    pub const FETHR: u32 = 1 << 9;
    /// `EXCL_GRP_BUT_0`: the unit mask excludes every group but group 0 and its own.
    pub const EXCL_GRP_BUT_0: u32 = 1 << 10;
    /// `GRP_REQ`: the unit mask needs one of the group its grpid's second byte names.
    pub const GRP_REQ: u32 = 1 << 11;
    /// `OMIT` (AMD): the unit mask may be left out of its group's defaults.
    pub const OMIT: u32 = 1 << 12;
    /// `IBSFE` (AMD): the event enables instruction-fetch sampling, not a counter.
    pub const IBSFE: u32 = 1 << 13;
    /// `IBSOP` (AMD): the event enables operation sampling, not a counter.
    pub const IBSOP: u32 = 1 << 14;
    /// Flags that change nothing the encoder does (PEBS, speculation, table checks).
    // The file reader's alone (the tables' writer and the tests).
    #[cfg_attr(not(any(test, feature = "table-writer")), allow(dead_code))]
    pub const OTHER: u32 = 1 << 15;
}

/// Intel's modifiers in libpfm4's order (`intel_x86_mods`): the index is the attribute's.
pub(crate) const INTEL_MODIFIERS: [&str; 10] = [
    "k", "u", "e", "i", "c", "t", "ldlat", "intx", "intxcp", "fe_thres",
];
/// AMD's modifiers in libpfm4's order (`amd64_mods`).
pub(crate) const AMD_MODIFIERS: [&str; 7] = ["k", "u", "e", "i", "c", "h", "g"];

/// libpfm4's other names of a PMU's table: `amd64_fam17h` is its deprecated name of Zen 1.
const OTHER_NAMES: [(&str, &str); 1] = [("amd64_fam17h", "amd64_fam17h_zen1")];

crate::table::row! {
    /// One libpfm4 PMU's table.
    struct Pmu {
        name: Str,
        /// An Intel table (`pfm_intel_x86_encode_gen`); else AMD's (`pfm_amd64_get_encoding`).
        intel: bool,
        /// It takes a raw unit mask (`:0x..`, `PFMLIB_PMU_FL_RAW_UMASK`).
        raw_umask: bool,
        /// Edge needs a counter mask (`INTEL_X86_PMU_FL_ECMASK`).
        ecmask: bool,
        /// Its events: `EVENT_LISTS[start..start + length]`, indices of `EVENTS`.
        events: (u16, u16),
    }
}

crate::table::row! {
    /// One event; its code is an index of `VALUES`, its attributes of `EVENT_ATTRS`, its
    /// equivalence of `EQUIVS`.
    struct Event {
        name: Str,
        code: u16,
        attrs: u16,
        equiv: u16,
        /// Its unit masks: `UMASKS[start..start + length]`.
        umasks: (u16, u16),
    }
}

crate::table::row! {
    /// What many events share: counters (an index of `VALUES`), modifiers, flags and groups.
    struct EventAttrs {
        cntmsk: u16,
        modmsk: u16,
        modmsk_req: u16,
        flags: u16,
        ngrp: u8,
    }
}

crate::table::row! {
    /// One unit mask; its code is an index of `VALUES`, its attributes of `UMASK_ATTRS`, its
    /// equivalence of `EQUIVS`.
    struct Umask {
        name: Str,
        code: u16,
        attrs: u16,
        flags: u16,
        equiv: u16,
    }
}

crate::table::row! {
    /// What many unit masks share: counters (an index of `VALUES`), group and modifiers.
    struct UmaskAttrs {
        cntmsk: u16,
        grpid: u16,
        modhw: u16,
        modmsk_req: u16,
    }
}

/// libpfm4's x86 core PMUs whose tables are shipped, sorted (none in a build without the
/// `x86-models` feature: they route event strings to x86 models only).
fn pmus() -> Table<Pmu> {
    if cfg!(feature = "x86-models") {
        crate::table::table!(Models, "LIBPFM4_PMUS")
    } else {
        Table::empty()
    }
}

/// Equivalence `index` of `EQUIVS`; 0, the empty string, is none (no file gives an empty one).
fn equiv(index: u16) -> Option<&'static str> {
    let text = crate::table::table!(Models, Str, "LIBPFM4_EQUIVS")
        .get(usize::from(index))
        .map(|s| s.text());
    text.filter(|e| !e.is_empty())
}

/// Value `index` of `VALUES` (the build wrote every index the records name).
fn value(index: u16) -> u64 {
    crate::table::table!(Models, u64, "LIBPFM4_VALUES")
        .get(usize::from(index))
        .unwrap_or_default()
}

// What stands in for a row an index misses (none does: the build writes every row the
// records name).
const NO_EVENT: Event = Event {
    name: Str::new(0),
    code: 0,
    attrs: 0,
    equiv: 0,
    umasks: (0, 0),
};
const NO_UMASK: Umask = Umask {
    name: Str::new(0),
    code: 0,
    attrs: 0,
    flags: 0,
    equiv: 0,
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
    pub fn events(&self) -> impl ExactSizeIterator<Item = Event> + Clone {
        let events = crate::table::table!(Models, Event, "LIBPFM4_EVENTS");
        crate::table::table!(Models, u16, "LIBPFM4_EVENT_LISTS")
            .range(self.events)
            .iter()
            .map(move |i| events.get(usize::from(i)).unwrap_or(NO_EVENT))
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
    pub fn umasks(&self) -> Table<Umask> {
        crate::table::table!(Models, Umask, "LIBPFM4_UMASKS").range(self.umasks)
    }

    /// Unit mask `index` of [`Event::umasks`] (every index the resolver gives is one).
    pub fn umask(&self, index: usize) -> Umask {
        self.umasks().get(index).unwrap_or(NO_UMASK)
    }

    /// The event code (Intel: with a unit mask in bits 8-15; AMD: bits 8-11 go to 32-35).
    pub fn code(&self) -> u64 {
        value(self.code)
    }

    fn attrs(&self) -> EventAttrs {
        crate::table::table!(Models, "LIBPFM4_EVENT_ATTRS")
            .get(usize::from(self.attrs))
            .unwrap_or(NO_EVENT_ATTRS)
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

    fn attrs(&self) -> UmaskAttrs {
        crate::table::table!(Models, "LIBPFM4_UMASK_ATTRS")
            .get(usize::from(self.attrs))
            .unwrap_or(NO_UMASK_ATTRS)
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

/// Which tables [`pmu`] has given, by index in [`pmus`] (for the test that a program naming
/// no libpfm4 event looks none up; more than there are tables).
static USED: [AtomicBool; 64] = [const { AtomicBool::new(false) }; 64];

/// `known` against `name` in lower case (libpfm4's names are), without making the lower-case
/// copy (a listing asks for each of a model's unit masks).
fn compare_lowered(known: &str, name: &str) -> Ordering {
    known
        .bytes()
        .cmp(name.bytes().map(|b| b.to_ascii_lowercase()))
}

/// The libpfm4 PMU named `name` (case-insensitive, as libpfm4 compares PMU names), or None
/// when libpfm4 has no x86 core PMU of that name.
pub(crate) fn pmu(name: &str) -> Option<Pmu> {
    let name = OTHER_NAMES
        .iter()
        .find(|(other, _)| compare_lowered(other, name).is_eq())
        .map_or(name, |(_, table)| table);
    let pmus = pmus();
    let index = pmus
        .binary_search_by(|pmu| compare_lowered(pmu.name(), name))
        .ok()?;
    if let Some(used) = USED.get(index)
        && !used.load(Relaxed)
    {
        used.store(true, Relaxed);
    }
    pmus.get(index)
}

/// The names of libpfm4's PMUs whose tables are shipped, sorted.
pub(crate) fn pmu_names() -> impl Iterator<Item = &'static str> {
    pmus().iter().map(|pmu| pmu.name())
}

/// How many tables [`pmu`] has given in this process.
pub(crate) fn used() -> usize {
    USED.iter().filter(|used| used.load(Relaxed)).count()
}
