//! MSR addresses and EVTSEL bits, as the Intel SDM (vol. 3, "Performance Monitoring") and the
//! AMD PPR define them. Pinned by tests against the reference notes.

/// IA32_TIME_STAMP_COUNTER: the TSC (read-only for this crate).
pub const TSC: u32 = 0x10;

/// IA32_PMC0; general-purpose counter `i` is at `IA32_PMC0 + i`. A write loads bits 31:0,
/// sign-extended to the counter width.
pub const IA32_PMC0: u32 = 0xC1;
/// IA32_PERFEVTSEL0; the event select of counter `i` is at `IA32_PERFEVTSEL0 + i`.
pub const IA32_PERFEVTSEL0: u32 = 0x186;
/// IA32_PERF_CTL (P-state request). Not a PMU register: named so tests can show it is refused.
pub const IA32_PERF_CTL: u32 = 0x199;
/// IA32_MISC_ENABLE. Not a PMU register: named so tests can show it is refused.
pub const IA32_MISC_ENABLE: u32 = 0x1A0;

/// The MSRs an Intel event may program besides its event select (architectural perfmon
/// version 2 and later), with their names and the bits they hold: offcore response 0 and 1
/// (64 bits), the load-latency threshold (16 bits) and the frontend selection (24 bits).
pub const EXTRA_MSRS: [(u32, &str, u32); 4] = [
    (0x1A6, "MSR_OFFCORE_RSP_0", 64),
    (0x1A7, "MSR_OFFCORE_RSP_1", 64),
    (0x3F6, "MSR_PEBS_LD_LAT_THRESHOLD", 16),
    (0x3F7, "MSR_PEBS_FRONTEND", 24),
];

/// The position of `msr` in [`EXTRA_MSRS`], if it is one.
pub fn extra_index(msr: u32) -> Option<usize> {
    EXTRA_MSRS.iter().position(|(m, _, _)| *m == msr)
}
/// IA32_FIXED_CTR0; fixed counter `i` is at `IA32_FIXED_CTR0 + i`.
pub const IA32_FIXED_CTR0: u32 = 0x309;
/// IA32_PERF_CAPABILITIES (exists when CPUID.1:ECX.PDCM\[15\] is set); bit 13 = full-width
/// counter writes through IA32_A_PMCx.
pub const IA32_PERF_CAPABILITIES: u32 = 0x345;
/// IA32_FIXED_CTR_CTRL: 4 bits per fixed counter (OS = bit 0, USR = bit 1, ANY = bit 2,
/// PMI = bit 3).
pub const IA32_FIXED_CTR_CTRL: u32 = 0x38D;
/// IA32_PERF_GLOBAL_STATUS (v2+): overflow bits, GP `i` = bit `i`, fixed `i` = bit `32 + i`.
pub const IA32_PERF_GLOBAL_STATUS: u32 = 0x38E;
/// IA32_PERF_GLOBAL_CTRL (v2+): enable bits, laid out as GLOBAL_STATUS.
pub const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;
/// IA32_PERF_GLOBAL_OVF_CTRL (v2+; "STATUS_RESET" from v4): writing a 1 clears that overflow.
pub const IA32_PERF_GLOBAL_OVF_CTRL: u32 = 0x390;
/// IA32_A_PMC0: full-width write alias of IA32_PMC0 (when PERF_CAPABILITIES bit 13 is set).
pub const IA32_A_PMC0: u32 = 0x4C1;
/// IA32_PERF_CAPABILITIES bit: full-width writes through IA32_A_PMCx.
pub const PERF_CAP_FW_WRITE: u64 = 1 << 13;

/// AMD legacy PerfEvtSel0 (K7 and later); `i` in 0..4 at `+ i`.
pub const AMD_PERF_EVT_SEL0: u32 = 0xC001_0000;
/// AMD legacy PerfCtr0; `i` in 0..4 at `+ i`.
pub const AMD_PERF_CTR0: u32 = 0xC001_0004;
/// AMD HWCR. Not a PMU register: named so tests can show it is refused.
pub const AMD_HWCR: u32 = 0xC001_0015;
/// AMD extended core PerfEvtSel0 (CPUID 0x80000001 ECX\[23\]); counter `i` at `+ 2 i`.
pub const AMD_PERF_CTL_EXT0: u32 = 0xC001_0200;
/// AMD extended core PerfCtr0; counter `i` at `+ 2 i`.
pub const AMD_PERF_CTR_EXT0: u32 = 0xC001_0201;
/// AMD PerfMonV2 PerfCntrGlobalStatus (read-only), counter `i` = bit `i`.
pub const AMD_GLOBAL_STATUS: u32 = 0xC000_0300;
/// AMD PerfMonV2 PerfCntrGlobalCtl, counter `i` = bit `i`.
pub const AMD_GLOBAL_CTL: u32 = 0xC000_0301;
/// AMD PerfMonV2 PerfCntrGlobalStatusClr: writing a 1 clears that overflow.
pub const AMD_GLOBAL_STATUS_CLR: u32 = 0xC000_0302;

/// Event select bits (PERFEVTSEL / PerfEvtSel) beyond those [`Evtsel`](counterhal_hal::Evtsel)
/// names (`Evtsel::USR`, `OS`, `EDGE`, `PC`, `INT`, `ANY`, `EN`, `INV`, `CMASK`,
/// `EVENT_HIGH`, `GUEST_ONLY`, `HOST_ONLY`), which are used from there.
pub mod evtsel {
    /// Event code bits 7:0.
    pub const EVENT: u64 = 0xFF;
    /// Unit mask bits 15:8.
    pub const UMASK: u64 = 0xFF << 8;
    /// Intel IN_TX (TSX).
    pub const IN_TX: u64 = 1 << 32;
    /// Intel IN_TX_CP (TSX).
    pub const IN_TX_CP: u64 = 1 << 33;

    /// The full event code: bits 7:0, plus bits 11:8 from bits 35:32 when `amd`.
    pub const fn event_code(value: u64, amd: bool) -> u16 {
        let low = (value & EVENT) as u16;
        if amd {
            low | ((((value & counterhal_hal::Evtsel::EVENT_HIGH) >> 32) as u16) << 8)
        } else {
            low
        }
    }

    /// The unit mask.
    pub const fn umask(value: u64) -> u8 {
        ((value & UMASK) >> 8) as u8
    }
}

/// The fixed-counter control field bits (4 per counter in IA32_FIXED_CTR_CTRL).
pub mod fixed_ctrl {
    /// Count in ring 0.
    pub const OS: u64 = 1 << 0;
    /// Count in rings above 0.
    pub const USR: u64 = 1 << 1;
    /// AnyThread.
    pub const ANY: u64 = 1 << 2;
    /// PMI on overflow.
    pub const PMI: u64 = 1 << 3;
    /// The 4-bit field of fixed counter `index`.
    pub const fn field(index: u32) -> u64 {
        0xF << (4 * index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The addresses as the reference note lists them.
    #[test]
    fn addresses_match_the_reference() {
        assert_eq!(IA32_PMC0 + 7, 0xC8);
        assert_eq!(IA32_PERFEVTSEL0 + 7, 0x18D);
        assert_eq!([IA32_FIXED_CTR0, IA32_FIXED_CTR0 + 3], [0x309, 0x30C]);
        assert_eq!(
            [
                IA32_FIXED_CTR_CTRL,
                IA32_PERF_GLOBAL_STATUS,
                IA32_PERF_GLOBAL_CTRL
            ],
            [0x38D, 0x38E, 0x38F]
        );
        assert_eq!(IA32_PERF_GLOBAL_OVF_CTRL, 0x390);
        assert_eq!(IA32_A_PMC0, 0x4C1);
        assert_eq!(AMD_PERF_EVT_SEL0 + 3, 0xC001_0003);
        assert_eq!(AMD_PERF_CTR0 + 3, 0xC001_0007);
        assert_eq!(AMD_PERF_CTL_EXT0 + 2 * 5, 0xC001_020A);
        assert_eq!(AMD_PERF_CTR_EXT0 + 2 * 5, 0xC001_020B);
        assert_eq!(
            [AMD_GLOBAL_STATUS, AMD_GLOBAL_CTL, AMD_GLOBAL_STATUS_CLR],
            [0xC000_0300, 0xC000_0301, 0xC000_0302]
        );
    }

    #[test]
    fn event_codes() {
        assert_eq!(evtsel::event_code(0x1_0053_01C1, true), 0x1C1);
        assert_eq!(evtsel::event_code(0x1_0053_01C1, false), 0xC1);
        assert_eq!(evtsel::umask(0x0053_4F2E), 0x4F);
        assert_eq!(fixed_ctrl::field(2), 0xF00);
    }
}
