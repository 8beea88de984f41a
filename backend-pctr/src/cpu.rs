//! The CPUs pctr drives, and the bits of a function word.

use std::fmt;

use crate::abi::Abi;

/// The bits of a function word, as `machine/pctr.h` names them.
pub mod function {
    /// P5: the event, bits 0-5.
    pub const P5_EVENT_MASK: u32 = 0x3f;
    /// P5: count in kernel mode (`P5CTR_K`).
    pub const P5_K: u32 = 0x40;
    /// P5: count in user mode (`P5CTR_U`).
    pub const P5_U: u32 = 0x80;
    /// P5: count cycles spent on the event instead of occurrences (`P5CTR_C`).
    pub const P5_C: u32 = 0x100;
    /// P5: the driver refuses functions at or above this value.
    pub const P5_LIMIT: u32 = 0x200;

    /// P6 and later: the event, bits 0-7.
    pub const EVENT_MASK: u32 = 0xff;
    /// P6 and later: the unit mask's shift (`PCTR_UM_SHIFT`).
    pub const UM_SHIFT: u32 = 8;
    /// P6 and later: unit mask, invalid cache lines (`PCTR_UM_I`).
    pub const UM_I: u32 = 0x100;
    /// P6 and later: unit mask, shared cache lines (`PCTR_UM_S`).
    pub const UM_S: u32 = 0x200;
    /// P6 and later: unit mask, exclusive cache lines (`PCTR_UM_E`).
    pub const UM_E: u32 = 0x400;
    /// P6 and later: unit mask, modified cache lines (`PCTR_UM_M`).
    pub const UM_M: u32 = 0x800;
    /// P6 and later: all four cache states (`PCTR_UM_MESI`).
    pub const UM_MESI: u32 = UM_M | UM_E | UM_S | UM_I;
    /// P6 and later: any initiator (`PCTR_UM_A`).
    pub const UM_A: u32 = 0x2000;
    /// P6 and later: count in user mode (`PCTR_U`).
    pub const U: u32 = 0x1_0000;
    /// P6 and later: count in kernel mode (`PCTR_K`).
    pub const K: u32 = 0x2_0000;
    /// P6 and later: edge detect (`PCTR_E`).
    pub const E: u32 = 0x4_0000;
    /// P6 and later: bits 19-21 (pin control, interrupt, AnyThread), which the driver refuses.
    pub const REFUSED: u32 = 0x38_0000;
    /// P6 and later: enable (`PCTR_EN`); on the P6 family counter 0's EN gates both counters.
    pub const EN: u32 = 0x40_0000;
    /// P6 and later: invert the counter mask (`PCTR_I`).
    pub const I: u32 = 0x80_0000;
    /// P6 and later: the counter mask's shift (`PCTR_CM_SHIFT`).
    pub const CM_SHIFT: u32 = 24;
}

/// A CPU family as pctr sees it: how many counters, how wide, which function layout, which ABI.
///
/// Also the CPU of a [`DriverModel`](crate::DriverModel) (see [`ModelCpu`](crate::ModelCpu)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuKind {
    /// Intel Pentium (P5, family 5 with a model above 0) under the i386 driver, any of its
    /// ABIs: 2 counters, 40-bit, 9-bit functions in the CESR layout, read with `rdmsr`.
    P5,
    /// Intel P6 family (Pentium Pro, II, III, and later family-6 CPUs driven the P6 way) under
    /// the legacy i386 driver (since `pctr.h` 1.5, 1996), or under the i386 driver of late 2007
    /// (`pctr.c` 1.23), which drove every Intel family-6-or-later CPU so through its 64-byte
    /// four-slot ABI: 2 counters, 40-bit; counter 0's EN bit enables both.
    P6,
    /// Intel with architectural performance monitoring under the current driver (and any
    /// Intel CPU the amd64 drivers drive: the one of September 2007 every one, the current
    /// one those whose CPUID stops below leaf 0xA): 2 counters (the driver uses only two),
    /// usually 48-bit, each enabled by its own EN bit.
    IntelArch,
    /// AMD family 6 and later under a four-slot driver: 4 counters (2 under i386 `pctr.c`
    /// 1.23, which takes `PCIOCS0` and `PCIOCS1` only), 48-bit.
    Amd,
    /// A CPU with a time stamp counter and no counters pctr drives (any ABI): reads give the
    /// TSC (and, on the legacy and 64-byte ABIs, the idle count) only; `PCIOCS0`/`PCIOCS1`
    /// fail with ENODEV.
    TscOnly,
}

impl CpuKind {
    /// Every kind.
    pub const ALL: [CpuKind; 5] = [
        CpuKind::P5,
        CpuKind::P6,
        CpuKind::IntelArch,
        CpuKind::Amd,
        CpuKind::TscOnly,
    ];

    /// The ABI a model of it speaks by default: legacy for the P5 and P6 (the drivers of
    /// their day), current for the others. The P5 and the TSC-only CPU exist under both ABIs
    /// (see [`supports_abi`](Self::supports_abi)).
    pub const fn abi(self) -> Abi {
        match self {
            CpuKind::P5 | CpuKind::P6 => Abi::Legacy,
            CpuKind::IntelArch | CpuKind::Amd | CpuKind::TscOnly => Abi::Current,
        }
    }

    /// Whether a driver of `abi` drives this kind as such: the P5 under every i386 one (the
    /// i386 driver kept its P5 path when it moved to four slots in 2007); the P6 family under
    /// the legacy one and the transitional i386 one of late 2007 (`pctr.c` 1.23 drove every
    /// Intel family-6-or-later CPU so); Intel architectural under the current one and the
    /// transitional amd64 one; AMD under every four-slot one; a CPU without counters under
    /// all.
    pub const fn supports_abi(self, abi: Abi) -> bool {
        match self {
            CpuKind::TscOnly => true,
            CpuKind::P5 => !matches!(abi, Abi::TransitionalAmd64),
            CpuKind::P6 => matches!(abi, Abi::Legacy | Abi::TransitionalI386),
            CpuKind::IntelArch => matches!(abi, Abi::Current | Abi::TransitionalAmd64),
            CpuKind::Amd => !matches!(abi, Abi::Legacy),
        }
    }

    /// The bits of counter `counter`'s function that `PCIOCRD` reads back as they were set,
    /// so that a read-back check compares only these:
    ///
    /// - P5: the 9-bit function (bits 0-8). The driver reads the CESR half of the counter and
    ///   preserves bit 9 and bits 10-15 of it when it sets, so those may read back set.
    /// - P6 family, counter 1: every bit but EN (bit 22). The SDM defines EN in PerfEvtSel0
    ///   only; in PerfEvtSel1 it is reserved and may read back 0.
    /// - every other counter: all 32 bits.
    pub const fn readback_mask(self, counter: u32) -> u32 {
        match self {
            CpuKind::P5 => function::P5_LIMIT - 1,
            CpuKind::P6 if counter > 0 => !function::EN,
            _ => u32::MAX,
        }
    }

    /// Whether the driver reads its counters with `rdmsr` (the P5) rather than `rdpmc`, so
    /// that the kernel's `rdpmc` mask does not apply.
    pub const fn read_with_rdmsr(self) -> bool {
        matches!(self, CpuKind::P5)
    }

    /// How many counters the driver programs on it.
    pub const fn counters(self) -> u32 {
        match self {
            CpuKind::P5 | CpuKind::P6 | CpuKind::IntelArch => 2,
            CpuKind::Amd => 4,
            CpuKind::TscOnly => 0,
        }
    }

    /// The usual hardware counter width in bits (Intel reports its own in CPUID leaf 0xA).
    pub const fn hardware_width(self) -> u32 {
        match self {
            CpuKind::P5 | CpuKind::P6 => 40,
            CpuKind::IntelArch | CpuKind::Amd => 48,
            CpuKind::TscOnly => 0,
        }
    }

    /// Whether functions use the P5 (CESR) layout rather than the PERFEVTSEL one.
    pub const fn p5_layout(self) -> bool {
        matches!(self, CpuKind::P5)
    }

    /// Whether counter 0's EN bit gates every counter (the P6 family).
    pub const fn en_gated_by_counter0(self) -> bool {
        matches!(self, CpuKind::P6)
    }

    /// Whether user mode may read the counters with `rdpmc` once the kernel allows it (P6 and
    /// later; the kernel sets CR4.PCE).
    pub const fn user_rdpmc(self) -> bool {
        matches!(self, CpuKind::P6 | CpuKind::IntelArch | CpuKind::Amd)
    }

    /// The event database's CPU model id for this kind when nothing more exact is known.
    pub const fn default_model_id(self) -> &'static str {
        match self {
            CpuKind::P5 => "p5",
            CpuKind::P6 => "p6",
            CpuKind::IntelArch | CpuKind::TscOnly => "intel-arch",
            CpuKind::Amd => "k8",
        }
    }

    /// The event code of "instructions" on it (P5: instructions executed; others:
    /// instructions retired).
    pub const fn instructions_event(self) -> Option<u16> {
        match self {
            CpuKind::P5 => Some(0x16),
            CpuKind::P6 | CpuKind::IntelArch | CpuKind::Amd => Some(0xc0),
            CpuKind::TscOnly => None,
        }
    }

    /// The event code of branch instructions (P5: branches, 0x12; P6 and Intel: 0xc4; AMD:
    /// 0xc2).
    pub const fn branches_event(self) -> Option<u16> {
        match self {
            CpuKind::P5 => Some(0x12),
            CpuKind::P6 | CpuKind::IntelArch => Some(0xc4),
            CpuKind::Amd => Some(0xc2),
            CpuKind::TscOnly => None,
        }
    }

    /// The event code of unhalted core cycles on it (the P5 has none).
    pub const fn cycles_event(self) -> Option<u16> {
        match self {
            CpuKind::P6 => Some(0x79),
            CpuKind::IntelArch => Some(0x3c),
            CpuKind::Amd => Some(0x76),
            CpuKind::P5 | CpuKind::TscOnly => None,
        }
    }

    /// A short lower-case name: `p5`, `p6`, `intel-arch`, `amd`, `tsc-only`.
    pub fn name(self) -> &'static str {
        match self {
            CpuKind::P5 => "p5",
            CpuKind::P6 => "p6",
            CpuKind::IntelArch => "intel-arch",
            CpuKind::Amd => "amd",
            CpuKind::TscOnly => "tsc-only",
        }
    }

    /// The kind with this [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<CpuKind> {
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }

    /// The mask of the function bits the driver refuses (`EINVAL`) on this CPU.
    pub const fn refused_bits(self) -> u32 {
        if self.p5_layout() {
            !(function::P5_LIMIT - 1)
        } else {
            function::REFUSED
        }
    }

    /// The user and kernel bits of a function word on this CPU.
    pub const fn domain_bits(self) -> (u32, u32) {
        if self.p5_layout() {
            (function::P5_U, function::P5_K)
        } else {
            (function::U, function::K)
        }
    }
}

impl fmt::Display for CpuKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The second level of the `machdep` sysctl that holds the TSC frequency (`CPU_TSCFREQ`, 16)
/// on an amd64 kernel; `None` on i386, where `machdep.16` is `CPU_XCRYPT` and no TSC frequency
/// is exported.
pub(crate) const fn tscfreq_sysctl(amd64: bool) -> Option<i32> {
    if amd64 { Some(16) } else { None }
}

/// How many bits of a counter the kernel keeps: i386's pctr returns 40 (its `rdpmc` keeps
/// only the low 8 bits of EDX), amd64's 56; the transitional amd64 driver read the counters
/// with `rdmsr`, unmasked (64). (The P5 is read with `rdmsr` too; see
/// [`CpuKind::read_with_rdmsr`].)
pub(crate) const fn kernel_mask_bits(abi: Abi, amd64: bool) -> u32 {
    match (abi, amd64) {
        (Abi::TransitionalAmd64, _) => 64,
        (Abi::Current, true) => 56,
        _ => 40,
    }
}

/// The width in bits that `PCIOCRD` values carry for `kind` with a `hardware_width`-bit
/// counter: the hardware width cut to the kernel's `rdpmc` mask, or the hardware width alone
/// where the driver reads with `rdmsr` (the P5).
pub const fn read_width(kind: CpuKind, hardware_width: u32, abi: Abi, amd64: bool) -> u32 {
    let kernel = kernel_mask_bits(abi, amd64);
    if kind.read_with_rdmsr() || hardware_width <= kernel {
        hardware_width
    } else {
        kernel
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_match_the_driver() {
        assert_eq!(CpuKind::P5.counters(), 2);
        assert_eq!(CpuKind::P6.counters(), 2);
        assert_eq!(CpuKind::IntelArch.counters(), 2);
        assert_eq!(CpuKind::Amd.counters(), 4);
        assert_eq!(CpuKind::P5.abi(), Abi::Legacy);
        assert_eq!(CpuKind::Amd.abi(), Abi::Current);
        assert!(CpuKind::P6.en_gated_by_counter0());
        assert!(!CpuKind::IntelArch.en_gated_by_counter0());
        assert!(!CpuKind::P5.user_rdpmc());
        for kind in CpuKind::ALL {
            assert_eq!(CpuKind::from_name(kind.name()), Some(kind));
        }
    }

    #[test]
    fn refused_bits() {
        assert_eq!(CpuKind::P5.refused_bits() & 0x1ff, 0);
        assert_ne!(CpuKind::P5.refused_bits() & 0x200, 0);
        assert_eq!(CpuKind::Amd.refused_bits(), 0x38_0000);
        assert_eq!(function::UM_MESI, 0xf00);
    }

    #[test]
    fn readback_compares_only_the_bits_each_counter_defines() {
        // P6: EN is reserved in PerfEvtSel1, defined in PerfEvtSel0.
        assert_eq!(CpuKind::P6.readback_mask(0) & function::EN, function::EN);
        assert_eq!(CpuKind::P6.readback_mask(1) & function::EN, 0);
        assert_eq!(CpuKind::P6.readback_mask(1) & 0xff, 0xff);
        // P5: bits 9-15 of the CESR half are the driver's to preserve.
        assert_eq!(CpuKind::P5.readback_mask(0), 0x1ff);
        assert_eq!(CpuKind::P5.readback_mask(1), 0x1ff);
        // Counters with their own EN compare every bit.
        assert_eq!(CpuKind::IntelArch.readback_mask(1), u32::MAX);
        assert_eq!(CpuKind::Amd.readback_mask(3), u32::MAX);
    }

    #[test]
    fn tsc_frequency_sysctl_only_on_amd64() {
        assert_eq!(tscfreq_sysctl(true), Some(16));
        // On i386 machdep.16 is CPU_XCRYPT: asking it for a frequency would read garbage.
        assert_eq!(tscfreq_sysctl(false), None);
    }

    #[test]
    fn masks() {
        assert_eq!(kernel_mask_bits(Abi::Current, true), 56);
        assert_eq!(kernel_mask_bits(Abi::Current, false), 40);
        assert_eq!(kernel_mask_bits(Abi::Legacy, false), 40);
        assert_eq!(kernel_mask_bits(Abi::TransitionalI386, false), 40);
        assert_eq!(kernel_mask_bits(Abi::TransitionalAmd64, true), 64);
        // i386 cuts a 48-bit counter to 40 bits; amd64 keeps all 48; the P5 is not cut.
        assert_eq!(read_width(CpuKind::IntelArch, 48, Abi::Current, false), 40);
        assert_eq!(read_width(CpuKind::IntelArch, 48, Abi::Current, true), 48);
        assert_eq!(read_width(CpuKind::P5, 40, Abi::Current, false), 40);
        assert_eq!(read_width(CpuKind::P6, 40, Abi::Legacy, false), 40);
    }

    #[test]
    fn abis_per_kind() {
        assert!(CpuKind::P5.supports_abi(Abi::Legacy));
        assert!(CpuKind::P5.supports_abi(Abi::Current));
        assert!(CpuKind::TscOnly.supports_abi(Abi::Legacy));
        // i386 pctr.c 1.23 (late 2007) drove the P6 family through its 64-byte four-slot ABI.
        assert!(CpuKind::P6.supports_abi(Abi::TransitionalI386));
        assert!(!CpuKind::P6.supports_abi(Abi::Current));
        assert!(!CpuKind::P6.supports_abi(Abi::TransitionalAmd64));
        assert!(CpuKind::IntelArch.supports_abi(Abi::TransitionalAmd64));
        assert!(!CpuKind::IntelArch.supports_abi(Abi::TransitionalI386));
        assert!(CpuKind::Amd.supports_abi(Abi::TransitionalI386));
        assert!(!CpuKind::P5.supports_abi(Abi::TransitionalAmd64));
        assert!(!CpuKind::Amd.supports_abi(Abi::Legacy));
        assert!(!CpuKind::IntelArch.supports_abi(Abi::Legacy));
        for kind in CpuKind::ALL {
            assert!(kind.supports_abi(kind.abi()), "{kind}");
        }
    }
}
