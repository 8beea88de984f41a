//! Generalized events: perf's hardware, software and cache events, and PAPI-style presets, by
//! their canonical names (both ways).
//!
//! How each is encoded on a given CPU and backend is the event database's business; this module
//! is only the vocabulary.

use std::borrow::Cow;
use std::fmt;

macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal $(| $alias:literal)* ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant, )+ ];

            /// The canonical name.
            pub const fn name(self) -> &'static str {
                match self { $( $name::$variant => $text, )+ }
            }

            /// Its other names (perf's aliases: `cs` for `context-switches`), if any.
            pub const fn aliases(self) -> &'static [&'static str] {
                match self { $( $name::$variant => &[ $($alias),* ], )+ }
            }

            /// The value with this canonical name or alias (case-insensitive).
            pub fn from_name(name: &str) -> Option<$name> {
                $(
                    if name.eq_ignore_ascii_case($text) $(|| name.eq_ignore_ascii_case($alias))* {
                        return Some($name::$variant);
                    }
                )+
                None
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_enum! {
    /// perf's generalized hardware events.
    HardwareEvent {
        /// CPU cycles.
        Cycles = "cycles" | "cpu-cycles",
        /// Instructions retired.
        Instructions = "instructions",
        /// Cache accesses (usually last-level cache).
        CacheReferences = "cache-references",
        /// Cache misses (usually last-level cache).
        CacheMisses = "cache-misses",
        /// Branch instructions retired.
        Branches = "branches" | "branch-instructions",
        /// Mispredicted branches retired.
        BranchMisses = "branch-misses",
        /// Bus cycles.
        BusCycles = "bus-cycles",
        /// Cycles stalled in the front end.
        StalledCyclesFrontend = "stalled-cycles-frontend" | "idle-cycles-frontend",
        /// Cycles stalled in the back end.
        StalledCyclesBackend = "stalled-cycles-backend" | "idle-cycles-backend",
        /// Reference cycles (not affected by frequency scaling).
        RefCycles = "ref-cycles",
    }
}

named_enum! {
    /// perf's software events, counted by the kernel.
    SoftwareEvent {
        /// A per-CPU high-resolution timer, in nanoseconds.
        CpuClock = "cpu-clock",
        /// Time the task ran, in nanoseconds.
        TaskClock = "task-clock",
        /// Page faults.
        PageFaults = "page-faults" | "faults",
        /// Context switches.
        ContextSwitches = "context-switches" | "cs",
        /// Migrations to another CPU.
        CpuMigrations = "cpu-migrations" | "migrations",
        /// Minor page faults (no I/O).
        MinorFaults = "minor-faults",
        /// Major page faults (with I/O).
        MajorFaults = "major-faults",
        /// Unaligned accesses fixed up by the kernel.
        AlignmentFaults = "alignment-faults",
        /// Instructions emulated by the kernel.
        EmulationFaults = "emulation-faults",
        /// Counts nothing (a placeholder event).
        Dummy = "dummy",
        /// Output of BPF programs (`bpf_perf_event_output`); counts nothing by itself.
        BpfOutput = "bpf-output",
        /// Switches between tasks of different cgroups on a CPU.
        CgroupSwitches = "cgroup-switches",
    }
}

named_enum! {
    /// The cache (or cache-like unit) a cache event is about.
    CacheLevel {
        /// Level 1 data cache.
        L1Data = "L1-dcache",
        /// Level 1 instruction cache.
        L1Instruction = "L1-icache",
        /// Last-level cache.
        LastLevel = "LLC",
        /// Data TLB.
        DataTlb = "dTLB",
        /// Instruction TLB.
        InstructionTlb = "iTLB",
        /// Branch prediction unit.
        Branch = "branch",
        /// Local memory (NUMA node) accesses.
        Node = "node",
    }
}

named_enum! {
    /// The kind of access a cache event is about.
    CacheOp {
        /// Reads.
        Load = "load",
        /// Writes.
        Store = "store",
        /// Prefetches.
        Prefetch = "prefetch",
    }
}

named_enum! {
    /// Whether a cache event counts accesses or misses.
    CacheResult {
        /// Every access.
        Access = "access",
        /// Misses only.
        Miss = "miss",
    }
}

/// A perf cache event: a level, an operation and a result, named like `L1-dcache-load-misses`
/// (misses) or `L1-dcache-loads` (accesses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheEvent {
    /// Which cache.
    pub level: CacheLevel,
    /// Which operation.
    pub op: CacheOp,
    /// Accesses or misses.
    pub result: CacheResult,
}

impl CacheEvent {
    /// A cache event from its parts.
    pub const fn new(level: CacheLevel, op: CacheOp, result: CacheResult) -> Self {
        Self { level, op, result }
    }

    /// Every combination (7 levels x 3 operations x 2 results).
    pub fn all() -> impl Iterator<Item = CacheEvent> {
        CacheLevel::ALL.iter().flat_map(|&level| {
            CacheOp::ALL.iter().flat_map(move |&op| {
                CacheResult::ALL
                    .iter()
                    .map(move |&result| CacheEvent::new(level, op, result))
            })
        })
    }

    fn op_suffix(op: CacheOp, result: CacheResult) -> &'static str {
        match (op, result) {
            (CacheOp::Load, CacheResult::Access) => "loads",
            (CacheOp::Store, CacheResult::Access) => "stores",
            (CacheOp::Prefetch, CacheResult::Access) => "prefetches",
            (CacheOp::Load, CacheResult::Miss) => "load-misses",
            (CacheOp::Store, CacheResult::Miss) => "store-misses",
            (CacheOp::Prefetch, CacheResult::Miss) => "prefetch-misses",
        }
    }

    /// The canonical perf name, e.g. `L1-dcache-load-misses`, `dTLB-stores`.
    pub fn name(&self) -> String {
        format!(
            "{}-{}",
            self.level.name(),
            Self::op_suffix(self.op, self.result)
        )
    }

    /// The cache event with this name (case-insensitive).
    pub fn from_name(name: &str) -> Option<CacheEvent> {
        CacheLevel::ALL.iter().find_map(|&level| {
            let prefix = level.name();
            let rest = name.get(..prefix.len())?;
            if !rest.eq_ignore_ascii_case(prefix) {
                return None;
            }
            let suffix = name.get(prefix.len()..)?.strip_prefix('-')?;
            CacheOp::ALL.iter().find_map(|&op| {
                CacheResult::ALL.iter().find_map(|&result| {
                    Self::op_suffix(op, result)
                        .eq_ignore_ascii_case(suffix)
                        .then_some(CacheEvent::new(level, op, result))
                })
            })
        })
    }
}

impl fmt::Display for CacheEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

macro_rules! presets {
    ( $( $variant:ident = $text:literal : $desc:literal ),+ $(,)? ) => {
        /// PAPI 7.0's 108 preset events. Each CPU's entry in the event database says which native
        /// events (possibly a sum or difference of several) stand behind a preset.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Preset {
            $( #[doc = $desc] $variant, )+
        }

        impl Preset {
            /// Every preset, in declaration order.
            pub const ALL: &'static [Preset] = &[ $( Preset::$variant, )+ ];

            /// The PAPI name, e.g. `PAPI_TOT_INS`.
            pub const fn name(self) -> &'static str {
                match self { $( Preset::$variant => $text, )+ }
            }

            /// PAPI's one-line description.
            pub const fn description(self) -> &'static str {
                match self { $( Preset::$variant => $desc, )+ }
            }

            /// The preset with this name (case-insensitive).
            pub fn from_name(name: &str) -> Option<Preset> {
                // Every preset's name starts with `PAPI_` (a test checks): others stop here.
                if !name.get(..5).is_some_and(|head| head.eq_ignore_ascii_case("PAPI_")) {
                    return None;
                }
                Self::ALL.iter().copied().find(|p| p.name().eq_ignore_ascii_case(name))
            }
        }

        impl fmt::Display for Preset {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

presets! {
    TotIns = "PAPI_TOT_INS": "Instructions completed",
    TotCyc = "PAPI_TOT_CYC": "Total cycles",
    RefCyc = "PAPI_REF_CYC": "Reference clock cycles",
    BrIns = "PAPI_BR_INS": "Branch instructions",
    BrMsp = "PAPI_BR_MSP": "Conditional branch instructions mispredicted",
    BrCn = "PAPI_BR_CN": "Conditional branch instructions",
    BrTkn = "PAPI_BR_TKN": "Conditional branch instructions taken",
    BrNtk = "PAPI_BR_NTK": "Conditional branch instructions not taken",
    BrPrc = "PAPI_BR_PRC": "Conditional branch instructions correctly predicted",
    L1Dcm = "PAPI_L1_DCM": "Level 1 data cache misses",
    L1Icm = "PAPI_L1_ICM": "Level 1 instruction cache misses",
    L1Tcm = "PAPI_L1_TCM": "Level 1 cache misses",
    L1Dca = "PAPI_L1_DCA": "Level 1 data cache accesses",
    L2Dcm = "PAPI_L2_DCM": "Level 2 data cache misses",
    L2Icm = "PAPI_L2_ICM": "Level 2 instruction cache misses",
    L2Tcm = "PAPI_L2_TCM": "Level 2 cache misses",
    L2Dca = "PAPI_L2_DCA": "Level 2 data cache accesses",
    L2Tca = "PAPI_L2_TCA": "Level 2 total cache accesses",
    L3Tcm = "PAPI_L3_TCM": "Level 3 cache misses",
    L3Tca = "PAPI_L3_TCA": "Level 3 total cache accesses",
    TlbDm = "PAPI_TLB_DM": "Data translation lookaside buffer misses",
    TlbIm = "PAPI_TLB_IM": "Instruction translation lookaside buffer misses",
    FpOps = "PAPI_FP_OPS": "Floating point operations",
    FpIns = "PAPI_FP_INS": "Floating point instructions",
    LdIns = "PAPI_LD_INS": "Load instructions",
    SrIns = "PAPI_SR_INS": "Store instructions",
    LstIns = "PAPI_LST_INS": "Load/store instructions completed",
    StlIcy = "PAPI_STL_ICY": "Cycles with no instruction issue",
    ResStl = "PAPI_RES_STL": "Cycles stalled on any resource",
    // The rest of PAPI 7.0's 108 presets, in PAPI's order, with `papi_avail`'s descriptions.
    L3Dcm = "PAPI_L3_DCM": "Level 3 data cache misses",
    L3Icm = "PAPI_L3_ICM": "Level 3 instruction cache misses",
    CaSnp = "PAPI_CA_SNP": "Requests for a snoop",
    CaShr = "PAPI_CA_SHR": "Requests for exclusive access to shared cache line",
    CaCln = "PAPI_CA_CLN": "Requests for exclusive access to clean cache line",
    CaInv = "PAPI_CA_INV": "Requests for cache line invalidation",
    CaItv = "PAPI_CA_ITV": "Requests for cache line intervention",
    L3Ldm = "PAPI_L3_LDM": "Level 3 load misses",
    L3Stm = "PAPI_L3_STM": "Level 3 store misses",
    BruIdl = "PAPI_BRU_IDL": "Cycles branch units are idle",
    FxuIdl = "PAPI_FXU_IDL": "Cycles integer units are idle",
    FpuIdl = "PAPI_FPU_IDL": "Cycles floating point units are idle",
    LsuIdl = "PAPI_LSU_IDL": "Cycles load/store units are idle",
    TlbTl = "PAPI_TLB_TL": "Total translation lookaside buffer misses",
    L1Ldm = "PAPI_L1_LDM": "Level 1 load misses",
    L1Stm = "PAPI_L1_STM": "Level 1 store misses",
    L2Ldm = "PAPI_L2_LDM": "Level 2 load misses",
    L2Stm = "PAPI_L2_STM": "Level 2 store misses",
    BtacM = "PAPI_BTAC_M": "Branch target address cache misses",
    PrfDm = "PAPI_PRF_DM": "Data prefetch cache misses",
    L3Dch = "PAPI_L3_DCH": "Level 3 data cache hits",
    TlbSd = "PAPI_TLB_SD": "Translation lookaside buffer shootdowns",
    CsrFal = "PAPI_CSR_FAL": "Failed store conditional instructions",
    CsrSuc = "PAPI_CSR_SUC": "Successful store conditional instructions",
    CsrTot = "PAPI_CSR_TOT": "Total store conditional instructions",
    MemScy = "PAPI_MEM_SCY": "Cycles Stalled Waiting for memory accesses",
    MemRcy = "PAPI_MEM_RCY": "Cycles Stalled Waiting for memory Reads",
    MemWcy = "PAPI_MEM_WCY": "Cycles Stalled Waiting for memory writes",
    FulIcy = "PAPI_FUL_ICY": "Cycles with maximum instruction issue",
    StlCcy = "PAPI_STL_CCY": "Cycles with no instructions completed",
    FulCcy = "PAPI_FUL_CCY": "Cycles with maximum instructions completed",
    HwInt = "PAPI_HW_INT": "Hardware interrupts",
    BrUcn = "PAPI_BR_UCN": "Unconditional branch instructions",
    FmaIns = "PAPI_FMA_INS": "FMA instructions completed",
    TotIis = "PAPI_TOT_IIS": "Instructions issued",
    IntIns = "PAPI_INT_INS": "Integer instructions",
    VecIns = "PAPI_VEC_INS": "Vector/SIMD instructions (could include integer)",
    FpStal = "PAPI_FP_STAL": "Cycles the FP unit(s) are stalled",
    SycIns = "PAPI_SYC_INS": "Synchronization instructions completed",
    L1Dch = "PAPI_L1_DCH": "Level 1 data cache hits",
    L2Dch = "PAPI_L2_DCH": "Level 2 data cache hits",
    L3Dca = "PAPI_L3_DCA": "Level 3 data cache accesses",
    L1Dcr = "PAPI_L1_DCR": "Level 1 data cache reads",
    L2Dcr = "PAPI_L2_DCR": "Level 2 data cache reads",
    L3Dcr = "PAPI_L3_DCR": "Level 3 data cache reads",
    L1Dcw = "PAPI_L1_DCW": "Level 1 data cache writes",
    L2Dcw = "PAPI_L2_DCW": "Level 2 data cache writes",
    L3Dcw = "PAPI_L3_DCW": "Level 3 data cache writes",
    L1Ich = "PAPI_L1_ICH": "Level 1 instruction cache hits",
    L2Ich = "PAPI_L2_ICH": "Level 2 instruction cache hits",
    L3Ich = "PAPI_L3_ICH": "Level 3 instruction cache hits",
    L1Ica = "PAPI_L1_ICA": "Level 1 instruction cache accesses",
    L2Ica = "PAPI_L2_ICA": "Level 2 instruction cache accesses",
    L3Ica = "PAPI_L3_ICA": "Level 3 instruction cache accesses",
    L1Icr = "PAPI_L1_ICR": "Level 1 instruction cache reads",
    L2Icr = "PAPI_L2_ICR": "Level 2 instruction cache reads",
    L3Icr = "PAPI_L3_ICR": "Level 3 instruction cache reads",
    L1Icw = "PAPI_L1_ICW": "Level 1 instruction cache writes",
    L2Icw = "PAPI_L2_ICW": "Level 2 instruction cache writes",
    L3Icw = "PAPI_L3_ICW": "Level 3 instruction cache writes",
    L1Tch = "PAPI_L1_TCH": "Level 1 total cache hits",
    L2Tch = "PAPI_L2_TCH": "Level 2 total cache hits",
    L3Tch = "PAPI_L3_TCH": "Level 3 total cache hits",
    L1Tca = "PAPI_L1_TCA": "Level 1 total cache accesses",
    L1Tcr = "PAPI_L1_TCR": "Level 1 total cache reads",
    L2Tcr = "PAPI_L2_TCR": "Level 2 total cache reads",
    L3Tcr = "PAPI_L3_TCR": "Level 3 total cache reads",
    L1Tcw = "PAPI_L1_TCW": "Level 1 total cache writes",
    L2Tcw = "PAPI_L2_TCW": "Level 2 total cache writes",
    L3Tcw = "PAPI_L3_TCW": "Level 3 total cache writes",
    FmlIns = "PAPI_FML_INS": "Floating point multiply instructions",
    FadIns = "PAPI_FAD_INS": "Floating point add instructions",
    FdvIns = "PAPI_FDV_INS": "Floating point divide instructions",
    FsqIns = "PAPI_FSQ_INS": "Floating point square root instructions",
    FnvIns = "PAPI_FNV_INS": "Floating point inverse instructions",
    SpOps = "PAPI_SP_OPS": "Floating point operations; optimized to count scaled single precision vector operations",
    DpOps = "PAPI_DP_OPS": "Floating point operations; optimized to count scaled double precision vector operations",
    VecSp = "PAPI_VEC_SP": "Single precision vector/SIMD instructions",
    VecDp = "PAPI_VEC_DP": "Double precision vector/SIMD instructions",
}

impl Preset {
    /// The presets a PAPI-like tool asks for first: instructions, cycles, branches, the cache
    /// and TLB misses, floating point, loads and stores. The event database maps each on every
    /// CPU model that has the events behind it, and its tests say which models lack which.
    pub const CORE: [Preset; 20] = [
        Preset::TotIns,
        Preset::TotCyc,
        Preset::RefCyc,
        Preset::BrIns,
        Preset::BrMsp,
        Preset::BrCn,
        Preset::BrTkn,
        Preset::BrNtk,
        Preset::L1Dcm,
        Preset::L1Icm,
        Preset::L1Dca,
        Preset::L2Dcm,
        Preset::L2Tcm,
        Preset::L3Tcm,
        Preset::L3Tca,
        Preset::TlbDm,
        Preset::TlbIm,
        Preset::FpOps,
        Preset::LdIns,
        Preset::SrIns,
    ];
}

/// Any generalized event: what a user can name without knowing the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GeneralizedEvent {
    /// A perf hardware event (`cycles`).
    Hardware(HardwareEvent),
    /// A perf software event (`page-faults`).
    Software(SoftwareEvent),
    /// A perf cache event (`L1-dcache-load-misses`).
    Cache(CacheEvent),
    /// A PAPI-style preset (`PAPI_TOT_INS`).
    Preset(Preset),
}

impl GeneralizedEvent {
    /// The canonical name.
    pub fn name(&self) -> Cow<'static, str> {
        match self {
            GeneralizedEvent::Hardware(e) => Cow::Borrowed(e.name()),
            GeneralizedEvent::Software(e) => Cow::Borrowed(e.name()),
            GeneralizedEvent::Cache(e) => Cow::Owned(e.name()),
            GeneralizedEvent::Preset(e) => Cow::Borrowed(e.name()),
        }
    }

    /// The generalized event with this name or alias (case-insensitive).
    pub fn from_name(name: &str) -> Option<GeneralizedEvent> {
        HardwareEvent::from_name(name)
            .map(GeneralizedEvent::Hardware)
            .or_else(|| SoftwareEvent::from_name(name).map(GeneralizedEvent::Software))
            .or_else(|| CacheEvent::from_name(name).map(GeneralizedEvent::Cache))
            .or_else(|| Preset::from_name(name).map(GeneralizedEvent::Preset))
    }

    /// Every generalized event: hardware, software, cache, then presets.
    pub fn all() -> impl Iterator<Item = GeneralizedEvent> {
        HardwareEvent::ALL
            .iter()
            .map(|&e| GeneralizedEvent::Hardware(e))
            .chain(
                SoftwareEvent::ALL
                    .iter()
                    .map(|&e| GeneralizedEvent::Software(e)),
            )
            .chain(CacheEvent::all().map(GeneralizedEvent::Cache))
            .chain(Preset::ALL.iter().map(|&e| GeneralizedEvent::Preset(e)))
    }
}

impl fmt::Display for GeneralizedEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips() {
        let mut count = 0;
        for event in GeneralizedEvent::all() {
            let name = event.name();
            assert_eq!(GeneralizedEvent::from_name(&name), Some(event), "{name}");
            assert_eq!(
                GeneralizedEvent::from_name(&name.to_ascii_uppercase()),
                Some(event),
                "{name} upper-case"
            );
            count += 1;
        }
        assert_eq!(count, 10 + 12 + 42 + Preset::ALL.len());
    }

    #[test]
    fn names_are_unique() {
        let names: std::collections::HashSet<String> = GeneralizedEvent::all()
            .map(|e| e.name().to_ascii_lowercase())
            .collect();
        assert_eq!(names.len(), GeneralizedEvent::all().count());
    }

    #[test]
    fn perf_spellings() {
        let expected = [
            "cycles",
            "instructions",
            "cache-references",
            "cache-misses",
            "branches",
            "branch-misses",
            "bus-cycles",
            "stalled-cycles-frontend",
            "stalled-cycles-backend",
            "ref-cycles",
        ];
        let names: Vec<_> = HardwareEvent::ALL.iter().map(|e| e.name()).collect();
        assert_eq!(names, expected);
        assert_eq!(
            HardwareEvent::from_name("branch-instructions"),
            Some(HardwareEvent::Branches)
        );
        assert_eq!(
            HardwareEvent::from_name("cpu-cycles"),
            Some(HardwareEvent::Cycles)
        );
        assert_eq!(
            SoftwareEvent::from_name("cs"),
            Some(SoftwareEvent::ContextSwitches)
        );
        assert_eq!(
            CacheEvent::from_name("L1-dcache-load-misses"),
            Some(CacheEvent::new(
                CacheLevel::L1Data,
                CacheOp::Load,
                CacheResult::Miss
            ))
        );
        assert_eq!(
            CacheEvent::from_name("dTLB-prefetches"),
            Some(CacheEvent::new(
                CacheLevel::DataTlb,
                CacheOp::Prefetch,
                CacheResult::Access
            ))
        );
        assert_eq!(CacheEvent::from_name("L1-dcache-load-missez"), None);
        assert_eq!(CacheEvent::from_name("L1-dcache"), None);
        assert_eq!(CacheEvent::from_name("LL"), None);
    }

    /// Oracle: PAPI's `papiStdEventDefs.h`, whose every preset symbol is `PAPI_` and a
    /// suffix: the prefix `from_name` checks first holds for every preset, and every preset
    /// is found by its name in any case.
    #[test]
    fn every_preset_is_found_by_its_papi_name() {
        for &preset in Preset::ALL {
            assert!(preset.name().starts_with("PAPI_"), "{preset}");
            assert_eq!(Preset::from_name(preset.name()), Some(preset));
            assert_eq!(
                Preset::from_name(&preset.name().to_ascii_lowercase()),
                Some(preset)
            );
        }
        assert_eq!(Preset::from_name("PAPI"), None);
        assert_eq!(Preset::from_name("INST_RETIRED"), None);
    }

    #[test]
    fn core_presets_have_papi_names() {
        let names: Vec<&str> = Preset::CORE.iter().map(|p| p.name()).collect();
        assert_eq!(
            names,
            [
                "PAPI_TOT_INS",
                "PAPI_TOT_CYC",
                "PAPI_REF_CYC",
                "PAPI_BR_INS",
                "PAPI_BR_MSP",
                "PAPI_BR_CN",
                "PAPI_BR_TKN",
                "PAPI_BR_NTK",
                "PAPI_L1_DCM",
                "PAPI_L1_ICM",
                "PAPI_L1_DCA",
                "PAPI_L2_DCM",
                "PAPI_L2_TCM",
                "PAPI_L3_TCM",
                "PAPI_L3_TCA",
                "PAPI_TLB_DM",
                "PAPI_TLB_IM",
                "PAPI_FP_OPS",
                "PAPI_LD_INS",
                "PAPI_SR_INS",
            ]
        );
        for preset in Preset::CORE {
            assert_eq!(Preset::from_name(preset.name()), Some(preset));
            assert!(!preset.description().is_empty());
        }
        assert_eq!(Preset::from_name("papi_tot_ins"), Some(Preset::TotIns));
        assert_eq!(Preset::from_name("PAPI_NOPE"), None);
    }
}
