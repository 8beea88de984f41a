//! Encoded events: what a backend programs into the hardware or the kernel.
//!
//! The codes are open numbers, never closed enums: a value this crate has no name for still
//! round-trips. The event database (`counterhal-events`) produces these from event names; a
//! backend may also produce them itself for names only it knows (tracepoints, dynamic PMUs).

use std::fmt;

use crate::Domain;

/// The set of counters an event may be placed on (bit `i` = counter `i`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CounterSet(u32);

impl CounterSet {
    /// No counter.
    pub const NONE: CounterSet = CounterSet(0);

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
    /// Lists the counters, e.g. `0,1,3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list: Vec<String> = self.iter().map(|i| i.to_string()).collect();
        f.write_str(&list.join(","))
    }
}

/// A Linux `perf_event_attr`'s event-selecting fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PerfEncoding {
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
    /// What is counted; the backend sets each `exclude_*` bit for a domain not in this set.
    pub domain: Domain,
    /// The PMU the event belongs to, when it matters for labelling (`cpu_core`, `msr`, ...).
    pub pmu: Option<String>,
}

impl PerfEncoding {
    /// An encoding with the given type and config, every other field zero, and
    /// [`Domain::ALL`]: no modifier, so the event counts whatever its PMU counts by default (as
    /// perf programs an event without modifiers; some PMUs, such as `msr`, refuse any exclude
    /// bit).
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
        }
    }
}

/// An OpenBSD `/dev/pctr` function word, exactly as passed to `PCIOCSn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PctrEncoding {
    /// The 32-bit function (P5: event | K | U | C; P6 and AMD: the PERFEVTSEL low word).
    pub function: u32,
    /// The counters it may be placed on.
    pub counters: CounterSet,
}

/// A raw x86 event select value, exactly as written to a PERFEVTSEL / PerfEvtSel MSR, or a
/// fixed counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MsrEncoding {
    /// The EVTSEL value (enable bit set; AMD event bits 35:32 included). For a fixed counter
    /// only its USR (bit 16) and OS (bit 17) bits are meaningful.
    pub evtsel: u64,
    /// The general-purpose counters it may be placed on.
    pub counters: CounterSet,
    /// The fixed counter it maps to, when it can use one (Intel).
    pub fixed: Option<u32>,
}

/// An encoded event, in the form one backend programs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// For Linux `perf_event_open`.
    Perf(PerfEncoding),
    /// For OpenBSD `/dev/pctr`.
    Pctr(PctrEncoding),
    /// For raw x86 MSRs.
    Msr(MsrEncoding),
}

impl Encoding {
    /// The kind of backend that programs this encoding.
    pub fn backend(&self) -> BackendKind {
        match self {
            Encoding::Perf(_) => BackendKind::Linux,
            Encoding::Pctr(_) => BackendKind::Pctr,
            Encoding::Msr(_) => BackendKind::Msr,
        }
    }
}

/// The kinds of backend counterhal has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendKind {
    /// Linux `perf_event_open`.
    Linux,
    /// OpenBSD `/dev/pctr`.
    Pctr,
    /// Raw x86 model-specific registers.
    Msr,
}

impl BackendKind {
    /// Every kind, in order of preference.
    pub const ALL: [BackendKind; 3] = [BackendKind::Linux, BackendKind::Pctr, BackendKind::Msr];

    /// The name used on the command line and in reports: `linux`, `pctr`, `msr`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Linux => "linux",
            BackendKind::Pctr => "pctr",
            BackendKind::Msr => "msr",
        }
    }

    /// The kind with this name.
    pub fn from_name(name: &str) -> Option<BackendKind> {
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One event to open: its name (as the user wrote it, for labels and messages) and its
/// encoding for the backend that will open it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventRequest {
    /// The name, for labels and error messages.
    pub name: String,
    /// How the backend programs it.
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
    }

    #[test]
    fn backend_names_round_trip() {
        for kind in BackendKind::ALL {
            assert_eq!(BackendKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(BackendKind::from_name("LINUX"), Some(BackendKind::Linux));
        assert_eq!(BackendKind::from_name("windows"), None);
    }
}
