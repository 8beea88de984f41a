//! Encoded events, by hardware family: what a backend programs into the hardware or the kernel.
//!
//! An encoding says how one event is selected on one kind of hardware, not which backend will
//! program it: a Linux `perf_event_attr` ([`PerfAttr`]), an x86 event select register
//! ([`Evtsel`], used by perf's raw events, OpenBSD's pctr and raw MSR access alike) or the
//! Pentium's CESR field ([`P5Cesr`]). Each backend says which families it takes
//! ([`Accepts`]); the event database produces an encoding of one of them.
//!
//! The codes are open numbers, never closed enums: a value this crate has no name for still
//! round-trips.

use std::fmt;

use crate::domain::Domain;

mod perf_metrics;

/// The set of counters an event may be placed on (bit `i` = counter `i`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CounterSet(u32);

impl CounterSet {
    /// No counter.
    pub const NONE: CounterSet = CounterSet(0);

    /// Every counter (no constraint).
    pub const ALL: CounterSet = CounterSet(u32::MAX);

    /// The counters whose bits are set in `mask`.
    pub const fn from_mask(mask: u32) -> CounterSet {
        CounterSet(mask)
    }

    /// Counters `0..count`.
    pub const fn first(count: u32) -> CounterSet {
        if count >= 32 {
            CounterSet(u32::MAX)
        } else {
            CounterSet((1 << count) - 1)
        }
    }

    /// Only counter `index`.
    pub const fn only(index: u32) -> CounterSet {
        CounterSet(1 << index)
    }

    /// The bit mask.
    pub const fn mask(self) -> u32 {
        self.0
    }

    /// Whether counter `index` is in the set.
    pub const fn contains(self, index: u32) -> bool {
        index < 32 && self.0 & (1 << index) != 0
    }

    /// The counters in both sets.
    pub const fn intersection(self, other: CounterSet) -> CounterSet {
        CounterSet(self.0 & other.0)
    }

    /// How many counters are in the set.
    pub const fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The counters in the set, lowest first.
    pub fn iter(self) -> impl Iterator<Item = u32> {
        (0..32).filter(move |i| self.contains(*i))
    }
}

impl fmt::Debug for CounterSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CounterSet({self})")
    }
}

impl fmt::Display for CounterSet {
    /// Lists the counters, e.g. `0,1,3`; `any` for [`CounterSet::ALL`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == CounterSet::ALL {
            return f.write_str("any");
        }
        let list: Vec<String> = self.iter().map(|i| i.to_string()).collect();
        f.write_str(&list.join(","))
    }
}

/// The hardware families an event can be encoded for.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// A Linux `perf_event_attr`: any PMU the kernel knows, counted by the kernel.
    Perf,
    /// An x86 event select register (Intel PERFEVTSEL, AMD PerfEvtSel) or a fixed counter.
    Evtsel,
    /// The Intel Pentium (P5) CESR field of one counter.
    P5Cesr,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 3] = [Family::Perf, Family::Evtsel, Family::P5Cesr];

    /// A short name: `perf attr`, `x86 EVTSEL`, `P5 CESR`.
    pub const fn name(self) -> &'static str {
        match self {
            Family::Perf => "perf attr",
            Family::Evtsel => "x86 EVTSEL",
            Family::P5Cesr => "P5 CESR",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a backend takes, as data: the encoding families it programs (preferred first), the
/// domains it can filter, and what an event without modifiers counts on it.
///
/// The event database resolves names against this and nothing else: it never knows which
/// backend asked.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Accepts {
    /// The families the backend programs, most preferred first. A generalized event that has
    /// an encoding in an earlier family gets that one (`cycles` is perf's generic hardware
    /// event where [`Family::Perf`] comes first).
    pub families: &'static [Family],
    /// The domains the backend can filter: a modifier asking for one outside this set (`:h`
    /// where the hardware has no hypervisor bit) is refused as unsupported.
    pub domains: Domain,
    /// What an event without modifiers counts (perf: [`Domain::ALL`], the PMU's own default;
    /// x86 counters: user and kernel, [`Domain::DEFAULT`]).
    pub default_domain: Domain,
}

impl Accepts {
    /// The families, the filterable domains and the default domain.
    pub const fn new(families: &'static [Family], domains: Domain, default_domain: Domain) -> Self {
        Self {
            families,
            domains,
            default_domain,
        }
    }

    /// Whether `family` is one the backend programs.
    pub fn takes(&self, family: Family) -> bool {
        self.families.contains(&family)
    }

    /// The families as a list for messages: `perf attr, x86 EVTSEL`.
    pub fn families_text(&self) -> String {
        let names: Vec<&str> = self.families.iter().map(|f| f.name()).collect();
        names.join(", ")
    }
}

/// The six `exclude_*` bits of `perf_event_attr`, as [`PerfAttr::exclude_bits`] sets them.
/// `true` means the bit is set, i.e. that domain is *not* counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExcludeBits {
    /// `exclude_user`.
    pub user: bool,
    /// `exclude_kernel`.
    pub kernel: bool,
    /// `exclude_hv`.
    pub hv: bool,
    /// `exclude_idle`.
    pub idle: bool,
    /// `exclude_host`.
    pub host: bool,
    /// `exclude_guest`.
    pub guest: bool,
}

impl ExcludeBits {
    /// Whether any bit is set.
    pub fn any(&self) -> bool {
        self.names().next().is_some()
    }

    /// The header names of the bits that are set (`exclude_kernel`, ...), in header order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        [
            (self.user, "exclude_user"),
            (self.kernel, "exclude_kernel"),
            (self.hv, "exclude_hv"),
            (self.idle, "exclude_idle"),
            (self.host, "exclude_host"),
            (self.guest, "exclude_guest"),
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
    }
}

/// A Linux `perf_event_attr`'s event-selecting fields.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PerfAttr {
    /// `attr.type`: 0 hardware, 1 software, 2 tracepoint, 3 hw cache, 4 raw, 5 breakpoint, or a
    /// dynamic PMU's type from sysfs. For generic hardware events on a hybrid CPU the core PMU's
    /// type goes into `config` bits 63:32 instead.
    pub type_: u32,
    /// `attr.config`.
    pub config: u64,
    /// `attr.config1` (also `bp_addr` for breakpoints).
    pub config1: u64,
    /// `attr.config2` (also `bp_len` for breakpoints).
    pub config2: u64,
    /// `attr.config3`.
    pub config3: u64,
    /// `attr.bp_type` for breakpoints (1 R, 2 W, 3 RW, 4 X), else 0.
    pub bp_type: u32,
    /// What is counted; [`PerfAttr::exclude_bits`] turns it into the `exclude_*` bits.
    pub domain: Domain,
    /// The PMU the event belongs to, when it matters for labelling (`cpu_core`, `msr`, ...).
    pub pmu: Option<String>,
    /// A tracepoint's filter in the kernel's event-filter syntax (`fd == 1 && count > 64`),
    /// set with `PERF_EVENT_IOC_SET_FILTER` once the event is open (perf's `--filter`): only
    /// the hits it accepts are counted. Tracepoints only.
    pub filter: Option<String>,
}

impl PerfAttr {
    /// An attr with the given type and config, every other field zero, and [`Domain::ALL`]: no
    /// modifier, so the event counts whatever its PMU counts by default (as perf programs an
    /// event without modifiers; some PMUs, such as `msr`, refuse any exclude bit).
    pub fn new(type_: u32, config: u64) -> Self {
        Self {
            type_,
            config,
            config1: 0,
            config2: 0,
            config3: 0,
            bp_type: 0,
            domain: Domain::ALL,
            pmu: None,
            filter: None,
        }
    }

    /// The same attr with the tracepoint filter `filter` (see [`PerfAttr::filter`]).
    #[must_use]
    pub fn with_filter(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(filter.into());
        self
    }

    /// The same attr counting `domain`.
    #[must_use]
    pub fn with_domain(mut self, domain: Domain) -> Self {
        self.domain = domain;
        self
    }

    /// The same attr counting user space only, for an attr with no modifier ([`Domain::ALL`]):
    /// `exclude_kernel` and `exclude_hv` set, as `perf stat` falls back when
    /// `perf_event_paranoid` refuses counting the kernel. `None` for an attr whose domain was
    /// chosen (a modifier says what the user wants counted).
    pub fn user_space_only(&self) -> Option<PerfAttr> {
        (self.domain == Domain::ALL).then(|| {
            let domain = Domain::from_bits_truncate(
                Domain::ALL.bits() & !(Domain::KERNEL.bits() | Domain::HYPERVISOR.bits()),
            );
            self.clone().with_domain(domain)
        })
    }

    /// The exclude bits this attr programs. This is the one place the rule lives.
    ///
    /// - [`Domain::ALL`] (what an event without modifiers gets) sets **no** bit: the event
    ///   counts whatever its PMU counts by default, as `perf stat` programs an event without
    ///   modifiers (and PMUs such as `msr` refuse any exclude bit);
    /// - any other domain sets `exclude_X` exactly for each domain X it does not contain (so
    ///   `:u` sets `exclude_kernel` and `exclude_hv`, `:uk` sets `exclude_hv`, and `:H` sets
    ///   `exclude_guest`).
    pub fn exclude_bits(&self) -> ExcludeBits {
        let domain = self.domain;
        if domain == Domain::ALL {
            return ExcludeBits::default();
        }
        ExcludeBits {
            user: !domain.contains(Domain::USER),
            kernel: !domain.contains(Domain::KERNEL),
            hv: !domain.contains(Domain::HYPERVISOR),
            idle: !domain.contains(Domain::IDLE),
            host: !domain.contains(Domain::HOST),
            guest: !domain.contains(Domain::GUEST),
        }
    }
}

/// The value of one extra MSR an event needs besides its event select: the offcore response
/// matrix (Intel MSR 0x1A6/0x1A7), the load-latency threshold (0x3F6) or the frontend event
/// selection (0x3F7).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExtraMsr {
    /// The MSR's address.
    pub msr: u32,
    /// The value to write there.
    pub value: u64,
}

/// `msr 0x1a6=0x10001`: the register's address, then the value written there.
impl std::fmt::Display for ExtraMsr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "msr {:#x}={:#x}", self.msr, self.value)
    }
}

impl ExtraMsr {
    /// The offcore response MSR 0 (`MSR_OFFCORE_RSP_0`).
    pub const OFFCORE_RSP_0: u32 = 0x1A6;
    /// The offcore response MSR 1 (`MSR_OFFCORE_RSP_1`).
    pub const OFFCORE_RSP_1: u32 = 0x1A7;
    /// The load-latency threshold (`MSR_PEBS_LD_LAT_THRESHOLD`).
    pub const LOAD_LATENCY: u32 = 0x3F6;
    /// The frontend event selection (`MSR_PEBS_FRONTEND`).
    pub const FRONTEND: u32 = 0x3F7;

    /// `value` for the MSR at `msr`.
    pub const fn new(msr: u32, value: u64) -> Self {
        Self { msr, value }
    }

    /// The MSR's address (the `msr` field).
    pub const fn address(&self) -> u32 {
        self.msr
    }
}

/// An x86 event select (Intel IA32_PERFEVTSELx, AMD PerfEvtSelx) by its fields, with the
/// counters it may use: the encoding pctr, raw MSR access and perf's raw events share.
///
/// The privilege levels and contexts are a [`Domain`]; [`Evtsel::register_value`] turns it
/// into the USR and OS bits (and AMD's HostOnly and GuestOnly bits).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Evtsel {
    /// The event code: bits 7:0, and on AMD bits 11:8 (held in register bits 35:32).
    pub code: u16,
    /// The unit mask, bits 15:8.
    pub umask: u8,
    /// Edge detect (bit 18).
    pub edge: bool,
    /// AnyThread (bit 21, Intel perfmon v3 and v4).
    pub any_thread: bool,
    /// Invert the counter-mask comparison (bit 23).
    pub invert: bool,
    /// The counter mask (threshold), bits 31:24.
    pub cmask: u8,
    /// What is counted: user mode (USR), kernel mode (OS), and on AMD host or guest only.
    pub domain: Domain,
    /// The general-purpose counters it may use ([`CounterSet::NONE`]: a fixed counter only).
    pub counters: CounterSet,
    /// The fixed counter that counts exactly this event, when one does (Intel).
    pub fixed: Option<u32>,
    /// The extra MSR the event needs (offcore response, load latency, frontend), if any.
    pub extra: Option<ExtraMsr>,
    /// The second unit-mask byte, bits 47:40 (Intel perfmon's `UMaskExt`; UMASK2 of the
    /// architectural perfmon extension, CPUID leaf 0x23 EBX bit 0). Intel only: on AMD those
    /// bits are HostOnly and GuestOnly.
    pub umask2: u8,
    /// Count only inside a TSX transaction (IN_TX, bit 32; Intel with TSX only).
    pub in_tx: bool,
    /// Leave out the counts of aborted TSX transactions (IN_TXCP, bit 33; Intel with TSX
    /// only, and counter 2 only).
    pub in_tx_cp: bool,
}

impl Evtsel {
    /// Count in user mode (bit 16).
    pub const USR: u64 = 1 << 16;
    /// Count in kernel mode (bit 17).
    pub const OS: u64 = 1 << 17;
    /// Edge detect (bit 18).
    pub const EDGE: u64 = 1 << 18;
    /// Pin control (bit 19).
    pub const PC: u64 = 1 << 19;
    /// APIC interrupt on overflow (bit 20).
    pub const INT: u64 = 1 << 20;
    /// AnyThread (bit 21).
    pub const ANY: u64 = 1 << 21;
    /// Enable (bit 22).
    pub const EN: u64 = 1 << 22;
    /// Invert the counter mask (bit 23).
    pub const INV: u64 = 1 << 23;
    /// The counter mask, bits 31:24.
    pub const CMASK: u64 = 0xFF << 24;
    /// AMD event select bits 11:8, held in bits 35:32.
    pub const EVENT_HIGH: u64 = 0xF << 32;
    /// Intel IN_TX (bit 32): count only inside a TSX transaction.
    pub const IN_TX: u64 = 1 << 32;
    /// Intel IN_TXCP (bit 33): leave out the counts of aborted TSX transactions.
    pub const IN_TX_CP: u64 = 1 << 33;
    /// Intel's second unit-mask byte (UMASK2), bits 47:40.
    pub const UMASK2: u64 = 0xFF << 40;
    /// AMD GuestOnly (bit 40).
    pub const GUEST_ONLY: u64 = 1 << 40;
    /// AMD HostOnly (bit 41).
    pub const HOST_ONLY: u64 = 1 << 41;
    /// The bits [`Evtsel::event_select`] can set.
    pub const EVENT_SELECT_BITS: u64 =
        0xFF | (0xFF << 8) | Self::EDGE | Self::ANY | Self::INV | Self::CMASK | Self::EVENT_HIGH;

    /// Event `code` with unit mask `umask`, counting user and kernel mode on any counter, no
    /// filter, no fixed counter, no extra MSR.
    pub const fn new(code: u16, umask: u8) -> Self {
        Self {
            code,
            umask,
            edge: false,
            any_thread: false,
            invert: false,
            cmask: 0,
            domain: Domain::DEFAULT,
            counters: CounterSet::ALL,
            fixed: None,
            extra: None,
            umask2: 0,
            in_tx: false,
            in_tx_cp: false,
        }
    }

    /// The fields an event select value sets (event, unit mask, edge, AnyThread, invert,
    /// counter mask, AMD's high event bits); the domain comes from USR and OS (and AMD's
    /// HostOnly and GuestOnly), everything else as [`Evtsel::new`]. Bits no field carries
    /// (EN, INT, pin control, reserved bits) are dropped. Bits 32 and up are read as AMD's;
    /// Intel's IN_TX, IN_TXCP and second unit-mask byte are for the caller who knows the
    /// vendor to take out first.
    pub const fn from_event_select(value: u64) -> Self {
        let code = (value & 0xFF) as u16 | ((((value & Self::EVENT_HIGH) >> 32) as u16) << 8);
        let mut evtsel = Self::new(code, ((value >> 8) & 0xFF) as u8);
        evtsel.edge = value & Self::EDGE != 0;
        evtsel.any_thread = value & Self::ANY != 0;
        evtsel.invert = value & Self::INV != 0;
        evtsel.cmask = ((value >> 24) & 0xFF) as u8;
        let mut domain = Domain::CONTEXTS;
        if value & Self::HOST_ONLY != 0 && value & Self::GUEST_ONLY == 0 {
            domain = domain.difference(Domain::GUEST);
        }
        if value & Self::GUEST_ONLY != 0 && value & Self::HOST_ONLY == 0 {
            domain = domain.difference(Domain::HOST);
        }
        if value & Self::USR != 0 {
            domain = Domain::from_bits_truncate(domain.bits() | Domain::USER.bits());
        }
        if value & Self::OS != 0 {
            domain = Domain::from_bits_truncate(domain.bits() | Domain::KERNEL.bits());
        }
        evtsel.domain = domain;
        evtsel
    }

    /// The bits that select the event: event code (7:0 and 35:32), unit mask, edge, AnyThread,
    /// invert and counter mask, and Intel's IN_TX, IN_TXCP and second unit-mask byte; no USR,
    /// OS or EN. This is perf's raw `config` on x86.
    pub const fn event_select(&self) -> u64 {
        let code = self.code as u64;
        let mut bits = (code & 0xFF) | ((self.umask as u64) << 8) | ((self.cmask as u64) << 24);
        bits |= ((code >> 8) & 0xF) << 32;
        bits |= (self.umask2 as u64) << 40;
        if self.in_tx {
            bits |= Self::IN_TX;
        }
        if self.in_tx_cp {
            bits |= Self::IN_TX_CP;
        }
        if self.edge {
            bits |= Self::EDGE;
        }
        if self.any_thread {
            bits |= Self::ANY;
        }
        if self.invert {
            bits |= Self::INV;
        }
        bits
    }

    /// The whole register value that counts this event: [`Evtsel::event_select`], USR and OS
    /// from the domain, EN, and AMD's HostOnly or GuestOnly when the domain leaves the other
    /// context out. pctr's P6-and-later function word is its low 32 bits.
    pub const fn register_value(&self) -> u64 {
        let mut value = self.event_select() | Self::EN;
        if self.domain.contains(Domain::USER) {
            value |= Self::USR;
        }
        if self.domain.contains(Domain::KERNEL) {
            value |= Self::OS;
        }
        let host = self.domain.contains(Domain::HOST);
        let guest = self.domain.contains(Domain::GUEST);
        if host && !guest {
            value |= Self::HOST_ONLY;
        }
        if guest && !host {
            value |= Self::GUEST_ONLY;
        }
        value
    }
}

/// The Intel Pentium (P5) CESR field of one counter: a 6-bit event, the kernel (K) and user
/// (U) bits, and the cycle-count bit (C). The field sits at CESR bit 0 for counter 0 and bit
/// 16 for counter 1; OpenBSD's pctr takes it as the function word.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct P5Cesr {
    /// The event, bits 5:0.
    pub event: u8,
    /// Count cycles while the event is active instead of occurrences (C, bit 8).
    pub count_cycles: bool,
    /// What is counted: user mode (U) and kernel mode (K).
    pub domain: Domain,
    /// The counters it may use (some P5 events count on one counter only).
    pub counters: CounterSet,
}

impl P5Cesr {
    /// Count in kernel mode (`P5CTR_K`).
    pub const K: u32 = 0x40;
    /// Count in user mode (`P5CTR_U`).
    pub const U: u32 = 0x80;
    /// Count cycles instead of occurrences (`P5CTR_C`).
    pub const C: u32 = 0x100;
    /// The event bits.
    pub const EVENT_MASK: u32 = 0x3F;

    /// Event `event` (6 bits; higher bits are dropped), counting occurrences in user and
    /// kernel mode on either counter.
    pub const fn new(event: u8) -> Self {
        Self {
            event: event & 0x3F,
            count_cycles: false,
            domain: Domain::DEFAULT,
            counters: CounterSet::first(2),
        }
    }

    /// The 9-bit field: event, K, U and C.
    pub const fn field(&self) -> u32 {
        let mut field = self.event as u32 & Self::EVENT_MASK;
        if self.domain.contains(Domain::KERNEL) {
            field |= Self::K;
        }
        if self.domain.contains(Domain::USER) {
            field |= Self::U;
        }
        if self.count_cycles {
            field |= Self::C;
        }
        field
    }
}

/// An encoded event, in one hardware family.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// A Linux `perf_event_attr`.
    Perf(PerfAttr),
    /// An x86 event select and the counters it may use.
    Evtsel(Evtsel),
    /// A Pentium CESR field and the counters it may use.
    P5Cesr(P5Cesr),
}

impl Encoding {
    /// The family of this encoding.
    pub fn family(&self) -> Family {
        match self {
            Encoding::Perf(_) => Family::Perf,
            Encoding::Evtsel(_) => Family::Evtsel,
            Encoding::P5Cesr(_) => Family::P5Cesr,
        }
    }

    /// What the event counts.
    pub fn domain(&self) -> Domain {
        match self {
            Encoding::Perf(attr) => attr.domain,
            Encoding::Evtsel(evtsel) => evtsel.domain,
            Encoding::P5Cesr(cesr) => cesr.domain,
        }
    }
}

impl fmt::Display for Encoding {
    /// One line with every programmed field:
    /// - `perf type=4 config=0xc0 config1=0x0 config2=0x0 exclude=hv` (with
    ///   `bp_type=N` for breakpoints, `pmu=NAME` where one is named);
    /// - `evtsel=0x4300c0 counters=0,1,2,3` (the register value), with `fixed=N` where a fixed
    ///   counter counts it (`fixed=1 only` when nothing else can) and `msr 0x1a6=0x...` for an
    ///   extra MSR;
    /// - `p5 cesr=0xc0 counters=0,1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Encoding::Perf(attr) => {
                write!(
                    f,
                    "perf type={} config={:#x} config1={:#x} config2={:#x}",
                    attr.type_, attr.config, attr.config1, attr.config2
                )?;
                if attr.config3 != 0 {
                    write!(f, " config3={:#x}", attr.config3)?;
                }
                if attr.bp_type != 0 {
                    write!(f, " bp_type={}", attr.bp_type)?;
                }
                if let Some(pmu) = &attr.pmu {
                    write!(f, " pmu={pmu}")?;
                }
                let excluded: Vec<&str> = attr
                    .exclude_bits()
                    .names()
                    .map(|n| n.trim_start_matches("exclude_"))
                    .collect();
                if excluded.is_empty() {
                    f.write_str(" exclude=none")
                } else {
                    write!(f, " exclude={}", excluded.join(","))
                }
            }
            Encoding::Evtsel(evtsel) => {
                match evtsel.fixed {
                    Some(fixed) if evtsel.counters.is_empty() => write!(
                        f,
                        "evtsel={:#x} fixed={fixed} only",
                        evtsel.register_value()
                    )?,
                    Some(fixed) => write!(
                        f,
                        "evtsel={:#x} counters={} fixed={fixed}",
                        evtsel.register_value(),
                        evtsel.counters
                    )?,
                    None => write!(
                        f,
                        "evtsel={:#x} counters={}",
                        evtsel.register_value(),
                        evtsel.counters
                    )?,
                }
                if let Some(extra) = evtsel.extra {
                    write!(f, " {extra}")?;
                }
                Ok(())
            }
            Encoding::P5Cesr(cesr) => {
                write!(f, "p5 cesr={:#x} counters={}", cesr.field(), cesr.counters)
            }
        }
    }
}

/// One event to open: its name (as the user wrote it, for labels and messages) and its
/// encoding.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventRequest {
    /// The name, for labels and error messages.
    pub name: String,
    /// How it is selected.
    pub encoding: Encoding,
}

impl EventRequest {
    /// A request from a name and an encoding.
    pub fn new(name: impl Into<String>, encoding: Encoding) -> Self {
        Self {
            name: name.into(),
            encoding,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_sets() {
        assert_eq!(CounterSet::first(4).mask(), 0b1111);
        assert_eq!(CounterSet::first(32).mask(), u32::MAX);
        assert!(CounterSet::only(1).contains(1));
        assert!(!CounterSet::only(1).contains(0));
        assert!(!CounterSet::first(32).contains(40));
        assert_eq!(CounterSet::from_mask(0b1011).to_string(), "0,1,3");
        assert_eq!(CounterSet::from_mask(0b1011).len(), 3);
        assert_eq!(CounterSet::ALL.to_string(), "any");
        assert_eq!(
            CounterSet::ALL.intersection(CounterSet::first(2)),
            CounterSet::first(2)
        );
    }

    /// libpfm4's validate_x86 rows less its INT bit (20), which counting never sets:
    /// `core::INST_RETIRED:ANY_P` is 0x4300c0, `:u` 0x4100c0, `:c=1:i` 0x1c300c0; AMD's 12-bit
    /// codes put bits 11:8 at 35:32.
    #[test]
    fn evtsel_register_values() {
        let any_p = Evtsel::new(0xc0, 0);
        assert_eq!(any_p.register_value(), 0x43_00c0);
        assert_eq!(any_p.event_select(), 0xc0);
        let user = Evtsel {
            domain: Domain::DEFAULT.with_levels(Domain::USER),
            ..any_p
        };
        assert_eq!(user.register_value(), 0x41_00c0);
        let filtered = Evtsel {
            cmask: 1,
            invert: true,
            ..any_p
        };
        assert_eq!(filtered.register_value(), 0x1c3_00c0);
        let amd = Evtsel::new(0x1c1, 0x02);
        assert_eq!(amd.event_select(), 0x1_0000_02c1);
        assert_eq!(Evtsel::from_event_select(amd.register_value()), amd);
        let host_only = Evtsel {
            domain: Domain::DEFAULT.difference(Domain::GUEST),
            ..amd
        };
        assert_eq!(
            host_only.register_value() & (Evtsel::HOST_ONLY | Evtsel::GUEST_ONLY),
            Evtsel::HOST_ONLY
        );
        // Lion Cove's DTLB_LOAD_MISSES.STLB_HIT: unit mask 0x20, second byte 0x03 (perf's
        // `umask=0x320` on `config:8-15,40-47`).
        let stlb_hit = Evtsel {
            umask2: 0x03,
            ..Evtsel::new(0x12, 0x20)
        };
        assert_eq!(stlb_hit.event_select(), 0x0300_0000_2012);
        let in_tx = Evtsel {
            in_tx: true,
            in_tx_cp: true,
            ..any_p
        };
        assert_eq!(in_tx.register_value(), 0x3_0043_00c0);
    }

    #[test]
    fn p5_fields() {
        let mut data_read = P5Cesr::new(0);
        assert_eq!(data_read.field(), 0xc0);
        data_read.domain = Domain::DEFAULT.with_levels(Domain::USER);
        assert_eq!(data_read.field(), 0x80);
        let mut cycles = P5Cesr::new(0x16);
        cycles.count_cycles = true;
        assert_eq!(cycles.field(), 0x1d6);
        assert_eq!(P5Cesr::new(0xff).event, 0x3f);
    }

    #[test]
    fn exclude_bits_follow_the_one_rule() {
        let attr = |domain| PerfAttr::new(1, 0).with_domain(domain);
        assert!(!attr(Domain::ALL).exclude_bits().any(), "no modifier");
        assert_eq!(
            attr(Domain::DEFAULT)
                .exclude_bits()
                .names()
                .collect::<Vec<_>>(),
            ["exclude_hv"]
        );
        let user = attr(Domain::DEFAULT.with_levels(Domain::USER)).exclude_bits();
        assert_eq!(
            user.names().collect::<Vec<_>>(),
            ["exclude_kernel", "exclude_hv"]
        );
        let guest = attr(Domain::USER | Domain::KERNEL | Domain::GUEST).exclude_bits();
        assert!(guest.host && guest.idle && !guest.guest && !guest.user);
    }

    #[test]
    fn encodings_display_every_programmed_field() {
        let perf = Encoding::Perf(
            PerfAttr::new(4, 0x3c).with_domain(Domain::DEFAULT.with_levels(Domain::USER)),
        );
        assert_eq!(
            perf.to_string(),
            "perf type=4 config=0x3c config1=0x0 config2=0x0 exclude=kernel,hv"
        );
        let mut cycles = Evtsel::new(0x3c, 0);
        cycles.counters = CounterSet::first(4);
        cycles.fixed = Some(1);
        assert_eq!(
            Encoding::Evtsel(cycles).to_string(),
            "evtsel=0x43003c counters=0,1,2,3 fixed=1"
        );
        let mut offcore = Evtsel::new(0xb7, 0x01);
        offcore.counters = CounterSet::first(4);
        offcore.extra = Some(ExtraMsr::new(ExtraMsr::OFFCORE_RSP_0, 0x10001));
        assert_eq!(
            Encoding::Evtsel(offcore).to_string(),
            "evtsel=0x4301b7 counters=0,1,2,3 msr 0x1a6=0x10001"
        );
        assert_eq!(
            Encoding::P5Cesr(P5Cesr::new(0x16)).to_string(),
            "p5 cesr=0xd6 counters=0,1"
        );
        assert_eq!(perf.family(), Family::Perf);
    }

    #[test]
    fn accepts_lists_families() {
        let accepts = Accepts::new(
            &[Family::Evtsel, Family::P5Cesr],
            Domain::USER | Domain::KERNEL,
            Domain::DEFAULT,
        );
        assert!(accepts.takes(Family::P5Cesr) && !accepts.takes(Family::Perf));
        assert_eq!(accepts.families_text(), "x86 EVTSEL, P5 CESR");
    }
}
